"""The report page: its notes (how to read it, missing buckets, zero-shot scores from
elsewhere, what was not counted), its tables in order (:func:`report_parts`) and the page
rendered as Markdown, LaTeX, CSV or HTML (:func:`render`, :func:`render_html`), with the
cells and records as CSV. The tables themselves are :mod:`fsxlt.report.tables`'."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from fsxlt.report.bootstrap import interval_text
from fsxlt.report.records import Records, reading_lines
from fsxlt.report.reproducibility import reproducibility_lines
from fsxlt.report.settings import settings_lines
from fsxlt.report.tables import (
    BOOTSTRAP,
    EXPECTED_BUCKETS,
    FIXED_SPLITS,
    UNEQUAL_TOKENS_MARK,
    Table,
    aggregate,
    build_tables,
    fmt,
    latex_escape,
    source_tables,
)
from fsxlt.study.runs import arm_source


def zero_shot_elsewhere(records: Records) -> list[str]:
    """A note for each (task, language) run from a source-trained checkpoint whose K=0
    score is not in the runs directory (``fsxlt adapt`` does not copy it; a sweep does):
    where it is, and how to have it in the report."""
    scores = records.scores
    if scores.empty or "start_path" not in scores:
        return []
    have = {(r.task, r.language) for r in records.zero_shot.itertuples(index=False)}
    lines = []
    for (task, language), group in scores[scores["start_path"] != ""].groupby(
            ["task", "language"], sort=True):
        if (task, language) in have:
            continue
        starts = ", ".join(f"{path}/fsxlt_checkpoint.json"
                           for path in sorted(set(group["start_path"])))
        lines.append(f"No K=0 score for {task}/{language}: the zero-shot score of the "
                     f"start is in its checkpoint ({starts}), outside this runs directory; "
                     "a sweep copies it into the runs directory "
                     f"({task}/{language}/k0/zero-shot.json), or report a folder that "
                     "holds the checkpoint too.")
    return lines


def notes(cells: pd.DataFrame, records: Records, ddof: int, expected: int | None) -> list[str]:
    counts = (str(expected) if expected is not None else "the bucket set's own (as its "
              "records say; for records that do not, the task's: "
              f"{EXPECTED_BUCKETS} for the study's tasks, 10 for extractive QA)")
    lines = [f"Scores in points (x100), here as in cells.csv and records.csv (test_points, "
             f"dev_points). std over buckets with ddof={ddof} "
             f"({'sample' if ddof == 1 else 'population' if ddof == 0 else 'custom'} "
             f"standard deviation); (n=…) marks a bucket count other than {counts} "
             f"({FIXED_SPLITS} for fixed splits such as FewCLUE's)."]
    lines += settings_lines(records.scores)
    lines += unequal_tokens_notes(cells) + reading_lines(records)
    missing = cells[(cells["k"] > 0) & (cells["missing"] != "")]
    if len(missing):
        lines.append("Missing buckets:")
        lines += [f"- {r.task}/{r.language}/k{r.k}/{r.arm}: {r.missing}"
                  for r in missing.itertuples(index=False)]
    lines += zero_shot_elsewhere(records)
    if records.stopped:
        lines.append("Cells a sweep stopped early (stop_early; each a prefix of its bucket "
                     "set, its interval anytime-valid):")
        lines += [f"- {task}/{lang}/k{k}/{arm}: {stop['buckets']} of {stop.get('planned', '?')} "
                  f"buckets: {stop['reason']}"
                  for (task, lang, k, arm), stop in sorted(records.stopped.items())]
    if records.learned_nothing:
        lines.append("Runs whose start learned nothing (its source dev score was 0, or it "
                     "predicted one label): their scores say nothing of the method:")
        lines += [f"- {where}: {'; '.join(warnings)}"
                  for where, warnings in sorted(records.learned_nothing.items())]
    if records.failed:
        lines.append(f"Error records (not counted): {len(records.failed)}")
        lines += [f"- {p}" for p in records.failed]
    if records.unreadable:
        lines.append(f"Unreadable records (not counted; fsxlt sweep reruns them): "
                     f"{len(records.unreadable)}")
        lines += [f"- {p}: {why}" for p, why in records.unreadable]
    if records.skipped:
        lines.append(f"Files that are not run records (not counted): {len(records.skipped)}")
        lines += [f"- {p}" for p in records.skipped]
    if records.duplicates:
        lines.append(f"Duplicate records (first kept): {len(records.duplicates)}")
        lines += [f"- {p}" for p in records.duplicates]
    return lines


def unequal_tokens_notes(cells: pd.DataFrame) -> list[str]:
    """The cells marked ``†``, named under one line that says why."""
    if "unequal_label_tokens" not in cells.columns:
        return []
    flagged = cells[cells["unequal_label_tokens"].astype(bool)]
    if flagged.empty:
        return []
    return [f"{UNEQUAL_TOKENS_MARK} In-context learning cells whose label words tokenize to "
            "different numbers of tokens under the model's tokenizer: summed "
            "log-likelihoods favour the shorter words whatever the input "
            "(icl.unequal_label_tokens):"] + [
        f"- {r.task}/{r.language}/k{r.k}/{r.arm}" for r in flagged.itertuples(index=False)]


def unsourced_arms(records: Records) -> frozenset[str]:
    """Arms whose runs start from no source-trained model although their name marks none
    (in-context learning: a causal LM prompted with the bucket); their titles name no
    source."""
    scores = records.scores
    if scores.empty:
        return frozenset()
    arms = set(scores.loc[~scores["source_training"].astype(bool), "arm"])
    return frozenset(arm for arm in arms if arm_source(arm) is not None)


def report_parts(cells: pd.DataFrame, records: Records, *, ddof: int = 1,
                 expected: int | None = None, plots: Sequence[str] = (),
                 ) -> tuple[list[str], list[Table], list[Table], list[Table]]:
    """What a report holds: its notes, its main tables (each arm's with its ``plots`` under
    it: the PNG files written beside the page, paths relative to it), every cell's table
    and every bucket's table."""
    several = records.zero_shot.groupby("task")["source"].nunique()
    tables = source_tables(records.zero_shot[records.zero_shot["task"].isin(
        several[several > 1].index)]) + build_tables(cells, expected, unsourced_arms(records))
    tables += exact_match_tables(records, ddof, expected)
    for table in tables:
        if table.key is not None:
            stem = f"{table.key[0]}_{table.key[1]}_"
            table.images = sorted(p for p in plots if p.rsplit("/", 1)[-1].startswith(stem)
                                  and p.rsplit("/", 1)[-1][len(stem):] in PLOT_KINDS)
    return (notes(cells, records, ddof, expected), tables, cell_tables(cells),
            bucket_tables(records))


def render(cells: pd.DataFrame, records: Records, fmt_name: str, *, ddof: int = 1,
           expected: int | None = None, plots: Sequence[str] = ()) -> str:
    """The whole report as one text in ``fmt_name`` (md, latex or csv); ``plots``: the
    PNG files written beside it, each shown under its arm's main table (Markdown)."""
    if fmt_name == "csv":
        return cells_csv(cells)
    lines, tables, every_cell, every_bucket = report_parts(
        cells, records, ddof=ddof, expected=expected, plots=plots)
    if fmt_name == "md":
        parts = ["# FS-XLT report", "", "\n".join(lines), ""]
        parts += [t.markdown() for t in tables]
        reproducibility = reproducibility_lines(records)
        if reproducibility:
            parts += ["## Reproducibility", "", "\n".join(reproducibility), ""]
        parts += ["## Every cell", ""] + [t.markdown() for t in every_cell]
        parts += ["## Every bucket", ""] + [t.markdown() for t in every_bucket]
        return "\n".join(parts)
    parts = ["% FS-XLT report (needs \\usepackage{booktabs})"]
    parts += [f"% {latex_escape(line)}" for line in lines]
    parts += [t.latex() for t in tables]
    return "\n".join(parts)


def render_html(cells: pd.DataFrame, records: Records, root: Any, *, ddof: int = 1,
                expected: int | None = None, plots: Sequence[str] = ()) -> str:
    """The report as one self-contained HTML page (:mod:`fsxlt.report.html`): the Markdown
    page's content, its plots inline (read from ``root``, the report folder)."""
    from fsxlt.report import html

    lines, tables, every_cell, every_bucket = report_parts(
        cells, records, ddof=ddof, expected=expected, plots=plots)
    sections = [html.notes(lines)] + [html.table(t, root) for t in tables]
    reproducibility = reproducibility_lines(records)
    if reproducibility:  # each arm a paragraph, its answers a list
        flat = [f"- {line[4:]}" if line.startswith("  - ")
                else line[2:].replace("**", "") if line.startswith("- ") else line
                for line in reproducibility]
        sections += ["<h2>Reproducibility</h2>", html.notes(flat)]
    sections += ["<h2>Every cell</h2>"] + [html.table(t) for t in every_cell]
    sections += ["<h2>Every bucket</h2>"] + [html.table(t) for t in every_bucket]
    return html.page("FS-XLT report", sections)


PLOT_KINDS = ("distribution.png", "vs_k.png", "curves.png")  # fsxlt.report.plots' files
FEW_BUCKETS = 5  # an interval over fewer buckets is marked: resampling 2-4 values says little
FEW_MARK = "*"


def interval_problem_of(row: Any) -> str:
    """A cell row's ``ci_problem`` ("" where it has none, or the row predates it)."""
    problem = getattr(row, "ci_problem", "")
    return problem if isinstance(problem, str) else ""


def cell_tables(cells: pd.DataFrame) -> list[Table]:
    """Per task, every cell: n, mean ± std, the 95% bootstrap interval of the mean over
    its buckets and the lowest and highest bucket (test, points)."""
    tables = []
    for task, part in cells.groupby("task", sort=True):
        rows = [[r.arm, r.language, str(r.k), str(r.n),
                 fmt(r.mean) + (f" ± {fmt(r.std)}" if r.n > 1 else ""),
                 interval_text(r.ci_low, r.ci_high, r.ci_problem)
                 + (FEW_MARK if r.n < FEW_BUCKETS and not interval_problem_of(r) else "")
                 if r.n > 1 else "–",
                 f"{fmt(r.min)}–{fmt(r.max)}" if r.k > 0 else "–"]
                for r in part.itertuples(index=False)]
        few = any(1 < r.n < FEW_BUCKETS and not interval_problem_of(r)
                  for r in part.itertuples(index=False))
        tables.append(Table(f"{task}: every cell (test, points; interval: percentile "
                            f"bootstrap of the mean, {BOOTSTRAP} resamples of the buckets"
                            + (f"; {FEW_MARK} over fewer than {FEW_BUCKETS} buckets, which "
                               "a bootstrap cannot say much of" if few else "") + ")",
                            ["arm", "language", "K", "n", "mean ± std", "95% CI",
                             "min–max"], rows))
    return tables


def bucket_tables(records: Records) -> list[Table]:
    """Per (task, language), every finished run: K, arm, bucket, the bucket's content hash,
    its test and dev scores (points), as ``records.csv`` holds them."""
    scores = records.scores
    tables = []
    for (task, lang), part in scores.groupby(["task", "language"], sort=True):
        part = part.sort_values(["k", "arm", "bucket"], kind="stable")
        rows = [[str(r.k), r.arm, f"{int(r.bucket):02d}", f"`{str(r.bucket_sha256)[:16]}`"
                 if r.bucket_sha256 else "–", fmt(100.0 * r.test_score),
                 fmt(100.0 * r.dev_score) if _is_number(r.dev_score) else "–"]
                for r in part.itertuples(index=False)]
        tables.append(Table(f"{task}/{lang}: every bucket's run (points)",
                            ["K", "arm", "bucket", "bucket sha256", "test", "dev"], rows))
    return tables


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) \
        and not np.isnan(value)


def exact_match_tables(records: Records, ddof: int, expected: int | None) -> list[Table]:
    """Extractive QA's second score: each arm's exact match (mean ± std over buckets, K=0
    the zero-shot one), beside the F1 tables; none for runs without one."""
    scores = records.scores.dropna(subset=["test_exact_match"])
    if scores.empty:
        return []
    zero = records.zero_shot.dropna(subset=["test_exact_match"])
    swapped = Records(scores=scores.assign(test_score=scores["test_exact_match"]),
                      curves=records.curves,
                      zero_shot=zero.assign(test_score=zero["test_exact_match"]))
    cells = aggregate(swapped, ddof=ddof, expected=expected)
    main = [t for t in build_tables(cells, expected, unsourced_arms(records))
            if t.title.endswith("mean ± std over buckets)")]
    for table in main:
        table.title = table.title.replace("(K=0: zero-shot; test,", "(K=0: zero-shot; test "
                                          "exact match,").replace("(test,", "(test exact match,")
    return main


def render_sources(records: Records, fmt_name: str) -> str:
    """Only the source x target zero-shot tables (``fsxlt report --sources``)."""
    if fmt_name == "csv":
        frame = records.zero_shot.assign(test_score=100.0 * records.zero_shot["test_score"])
        return cells_csv(frame)
    tables = source_tables(records.zero_shot)
    if fmt_name == "md":
        return "\n".join(["# Zero-shot scores by source", "", "Scores in points (x100).", ""]
                         + [t.markdown() for t in tables])
    return "\n".join(["% Zero-shot scores by source (needs \\usepackage{booktabs})"]
                     + [t.latex() for t in tables])


def cells_csv(cells: pd.DataFrame) -> str:
    return cells.to_csv(index=False, float_format="%.4f", lineterminator="\n")


# a finished record's row in records.csv: what it is, its scores (points, as in cells.csv
# and report.md) and what it ran on
RECORD_COLUMNS = ("task", "language", "k", "arm", "bucket", "test_points", "dev_points",
                  "best_epoch", "metric", "bucket_sha256", "fsxlt_version")


def records_csv(scores: pd.DataFrame) -> str:
    """One row per finished record (:data:`RECORD_COLUMNS`), sorted as the runs directory
    files them: the per-bucket scores a rerun is compared with, bucket by bucket, in points
    (x100) as every other file of the report."""
    frame = scores.assign(test_points=100.0 * scores["test_score"],
                          dev_points=100.0 * pd.to_numeric(scores["dev_score"],
                                                           errors="coerce"))
    frame = frame.reindex(columns=list(RECORD_COLUMNS))
    frame = frame.sort_values(["task", "language", "k", "arm", "bucket"], kind="stable")
    return frame.to_csv(index=False, float_format="%.6f", lineterminator="\n")
