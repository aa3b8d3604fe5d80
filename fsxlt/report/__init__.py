"""Reports from run records: tables, paired comparisons and plots. Never reruns a model.

    from fsxlt.report import write_report

    write_report("runs", "report", fmt="md")          # report.md + plots/*.png|pdf

- :mod:`~fsxlt.report.api`: the entry points (report, sources, strategies, compare).
- :mod:`~fsxlt.report.records`: RUNS_DIR -> tidy DataFrames (corrupt files named, not counted).
- :mod:`~fsxlt.report.tables`: mean ± std over buckets, gains, variants, drops.
- :mod:`~fsxlt.report.page`: the page: its notes, its tables in order, rendered.
- :mod:`~fsxlt.report.compare`: paired differences, bootstrap CI, Wilcoxon p, BH q.
- :mod:`~fsxlt.report.ranking`: several arms ranked, with ties where no test separates them.
- :mod:`~fsxlt.report.bootstrap`: percentile intervals, and where none can be computed.
- :mod:`~fsxlt.report.notes`: the one-line notes beside the tables (mixed cells, ...).
- :mod:`~fsxlt.report.plots`: distributions, score vs K, learning curves.
"""

from fsxlt.report.api import (
    SUFFIX,
    Warn,
    claim_report_dir,
    report_text,
    sources_text,
    strategies_report,
    strategies_text,
    write_compare,
    write_rank,
    write_report,
)
from fsxlt.report.compare import compare, render_compare
from fsxlt.report.notes import (
    foreign_metrics,
    learned_nothing_note,
    mixed_long_sentences,
    mixed_precisions,
    mixed_readings,
    mixed_tests,
    mixed_threads,
    mixed_versions,
    other_bucket_sets,
)
from fsxlt.report.page import render
from fsxlt.report.records import Records, load_records
from fsxlt.report.tables import EXPECTED_BUCKETS, FORMATS, aggregate

__all__ = ["EXPECTED_BUCKETS", "FORMATS", "Records", "SUFFIX", "Warn", "aggregate",
           "claim_report_dir", "compare", "foreign_metrics", "learned_nothing_note",
           "load_records", "mixed_long_sentences", "mixed_precisions", "mixed_readings",
           "mixed_tests", "mixed_threads", "mixed_versions", "other_bucket_sets", "render",
           "render_compare", "report_text", "sources_text", "strategies_report",
           "strategies_text", "write_compare", "write_rank", "write_report"]
