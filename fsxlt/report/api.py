"""The report's entry points: a runs directory's report as text or as a folder (report,
cells, records, plots, the HTML page), the source × target and strategy tables, paired
comparisons of two arms; the report folder claimed first. ``fsxlt.report`` hands them on."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from fsxlt.errors import FsxltError
from fsxlt.fileio import atomic_write_text
from fsxlt.report.compare import (
    compare_html,
    compare_pairs,
    pairs,
    render_compare,
    test_set_note,
)
from fsxlt.report.notes import (
    foreign_metrics,
    learned_nothing_note,
    mixed_long_sentences,
    mixed_micro_batches,
    mixed_precisions,
    mixed_readings,
    mixed_tests,
    mixed_threads,
    mixed_versions,
    other_bucket_sets,
)
from fsxlt.report.page import render
from fsxlt.report.records import Records, load_records
from fsxlt.report.tables import FORMATS, aggregate

SUFFIX = {"md": "md", "latex": "tex", "csv": "csv"}

# what a report writes into its folder: report, cells, records, sources, strategies and
# compare tables, and the plots folder
REPORT_FILES = ("report.", "cells.", "records.", "sources.", "strategies.", "compare_",
                "rank_", "reproducibility.")


def claim_report_dir(out: str | Path, runs_dir: str | Path | None = None) -> Path:
    """Make ``out`` a report folder (:data:`fsxlt.study.directories.REPORT`), or refuse in
    one line before anything is written: a runs directory, a bucket store or a folder in
    or around one (the runs read, too), and a folder not yet a report folder that holds a
    file a report would write (``report.md``, ``records.csv``, ``plots/`` ...): fsxlt did
    not write it, and does not replace it."""
    from fsxlt.study.directories import REPORT, check_claim, claim

    out = Path(out)
    if runs_dir is not None:
        a, b = out.resolve(), Path(runs_dir).resolve()
        if a == b or b in a.parents or a in b.parents:
            raise FsxltError(f"{out}: --out is, lies inside or holds the runs directory "
                             f"{runs_dir}; a report folder must be a directory of its own")
    if check_claim(out, REPORT) is None and out.is_dir():
        theirs = sorted(p.name for p in out.iterdir()
                        if p.name.startswith(REPORT_FILES) or p.name == "plots")
        if theirs:
            raise FsxltError(f"{out}: holds {theirs[0]}, which no fsxlt report wrote there; "
                             "give --out a folder of its own (nothing was replaced)")
    return claim(out, REPORT)


def _check(fmt: str) -> None:
    if fmt not in FORMATS:
        raise FsxltError(f"unknown format {fmt!r}; valid: {', '.join(FORMATS)}")


Warn = Callable[[str], None]


def _load(runs_dir: str | Path, warn: Warn | None = None) -> Records:
    """The records, or a one-line error if none finished; ``warn`` hears each unreadable one."""
    records = load_records(runs_dir)
    if records.scores.empty:
        if records.unreadable:
            path, problem = records.unreadable[0]
            more = (f" and {len(records.unreadable) - 1} more" if len(records.unreadable) > 1
                    else "")
            raise FsxltError(f"{runs_dir}: no finished run records; unreadable: "
                             f"{path}: {problem}{more} (fsxlt sweep reruns them)")
        raise FsxltError(f"{runs_dir}: no finished run records found")
    for path, problem in records.unreadable if warn else ():
        warn(f"warning: {Path(runs_dir) / path}: unreadable run record, not counted: {problem}")
    for note in (mixed_versions(records), mixed_threads(records), mixed_tests(records),
                 foreign_metrics(records), other_bucket_sets(records),
                 mixed_long_sentences(records), mixed_precisions(records),
                 mixed_readings(records), mixed_micro_batches(records),
                 learned_nothing_note(records)):
        if note and warn:
            warn(note)
    return records


def _refuse_unreadable(records: Records, runs_dir: str | Path, arms: tuple[str, ...]) -> None:
    """A paired comparison with a record of either arm that could not be read (a NaN score,
    a truncated file) would pair fewer buckets than were run: refused, naming it."""
    for path, problem in records.unreadable:
        if any(part in arms for part in Path(path).parts[:-1]):
            raise FsxltError(f"{Path(runs_dir) / path}: {problem}; a comparison of "
                             f"{' and '.join(arms)} would leave its bucket out (fix or rerun "
                             "it first)")


def report_text(runs_dir: str | Path, fmt: str = "md", *, ddof: int = 1,
                expected: int | None = None, warn: Warn | None = None) -> str:
    _check(fmt)
    records = _load(runs_dir, warn)
    return render(aggregate(records, ddof=ddof, expected=expected), records, fmt, ddof=ddof,
                  expected=expected)


def write_report(runs_dir: str | Path, out: str | Path, fmt: str = "md", *, ddof: int = 1,
                 expected: int | None = None, plots: bool = True,
                 warn: Warn | None = None) -> list[Path]:
    """Write ``report.<md|tex|csv>``, ``cells.csv`` (one row per cell), ``records.csv`` (one
    row per finished record: the per-bucket scores), ``reproducibility.md`` (the checklist
    section alone) and (``plots``) ``plots/`` under ``out``."""
    from fsxlt.report.page import cells_csv, records_csv, render_html
    from fsxlt.report.plots import make_plots
    from fsxlt.report.reproducibility import reproducibility_lines

    _check(fmt)
    claim_report_dir(out, runs_dir)
    records = _load(runs_dir, warn)
    cells = aggregate(records, ddof=ddof, expected=expected)
    out = Path(out)
    drawn = make_plots(records, cells, out / "plots") if plots else []
    images = [path.relative_to(out).as_posix() for path in drawn if path.suffix == ".png"]
    page = render(cells, records, fmt, ddof=ddof, expected=expected, plots=images)
    written = [out / f"report.{SUFFIX[fmt]}"]
    atomic_write_text(written[0], page)
    if fmt == "md":  # the same page, self-contained: tables and plots inline
        written.append(out / "report.html")
        atomic_write_text(written[-1], render_html(cells, records, out, ddof=ddof,
                                                   expected=expected, plots=images))
    if fmt != "csv":
        written.append(out / "cells.csv")
        atomic_write_text(written[-1], cells_csv(cells))
    written.append(out / "records.csv")
    atomic_write_text(written[-1], records_csv(records.scores))
    reproducibility = reproducibility_lines(records)
    if reproducibility:  # the section alone, to paste into a paper's checklist
        written.append(out / "reproducibility.md")
        atomic_write_text(written[-1], "# Reproducibility\n\n" + "\n".join(reproducibility)
                          + "\n")
    return written + drawn


def sources_text(runs_dir: str | Path, fmt: str = "md", out: str | Path | None = None, *,
                 warn: Warn | None = None) -> str:
    """The source x target zero-shot tables from K=0 records and checkpoints under
    ``runs_dir``; also written to ``out/sources.<ext>``."""
    from fsxlt.report.page import render_sources

    _check(fmt)
    if out is not None:
        claim_report_dir(out, runs_dir)
    records = load_records(runs_dir)
    if records.zero_shot.empty:
        raise FsxltError(f"{runs_dir}: no zero-shot scores found (K=0 records of a sweep, "
                         "or fsxlt source-train checkpoints with --target)")
    for path, problem in records.unreadable if warn else ():
        warn(f"warning: {Path(runs_dir) / path}: unreadable record, not counted: {problem}")
    text = render_sources(records, fmt)
    if out is not None:
        atomic_write_text(Path(out) / f"sources.{SUFFIX[fmt]}", text)
    return text


def strategies_report(runs_dir: str | Path, fmt: str = "md", out: str | Path | None = None,
                      *, seed: int = 0, n_boot: int = 10_000, plots: bool = True,
                      warn: Warn | None = None) -> tuple[Any, str]:
    """Selection strategies against random buckets of the same pools: the judgement
    (:func:`fsxlt.report.strategies.judge`) and its text; with ``out`` also
    ``strategies.<ext>`` and the plots under ``out/plots``."""
    from fsxlt.report.strategies import judge, plot_strategies, render_strategies

    _check(fmt)
    if out is not None:
        claim_report_dir(out, runs_dir)
    if n_boot < 1:
        raise FsxltError("the bootstrap needs at least one resample")
    records = _load(runs_dir, warn)
    result = judge(records, runs_dir, seed=seed, n_boot=n_boot, warn=warn)
    text = render_strategies(result, fmt, seed=seed, n_boot=n_boot)
    if out is not None:
        atomic_write_text(Path(out) / f"strategies.{SUFFIX[fmt]}", text)
        if plots:
            plot_strategies(records, runs_dir, Path(out) / "plots")
    return result, text


def strategies_text(runs_dir: str | Path, fmt: str = "md", out: str | Path | None = None, *,
                    seed: int = 0, n_boot: int = 10_000, plots: bool = True,
                    warn: Warn | None = None) -> str:
    """The text of :func:`strategies_report` (what ``fsxlt report --strategies`` prints)."""
    return strategies_report(runs_dir, fmt, out, seed=seed, n_boot=n_boot, plots=plots,
                             warn=warn)[1]


def write_rank(runs_dir: str | Path, arms: list[str], out: str | Path | None = None,
               fmt: str = "md", *, seed: int = 0, n_boot: int = 10_000,
               warn: Warn | None = None) -> str:
    """Several arms ranked with ties (:mod:`fsxlt.report.ranking`) as text; also written to
    ``out/rank_<A>_<B>_....<ext>``."""
    from fsxlt.report.ranking import render_rank

    _check(fmt)
    if out is not None:
        claim_report_dir(out, runs_dir)
    if n_boot < 1:
        raise FsxltError("the bootstrap needs at least one resample")
    if len(arms) < 2 or len(set(arms)) != len(arms):
        raise FsxltError("--rank needs at least two different arms")
    records = _load(runs_dir, warn)
    _refuse_unreadable(records, runs_dir, tuple(arms))
    text, _ranked = render_rank(records, arms, fmt, seed=seed, n_boot=n_boot)
    if out is not None:
        atomic_write_text(Path(out) / f"rank_{'_'.join(arms)}.{SUFFIX[fmt]}", text)
    return text


def write_compare(runs_dir: str | Path, arm_a: str, arm_b: str, out: str | Path | None = None,
                  fmt: str = "md", *, seed: int = 0, n_boot: int = 10_000,
                  warn: Warn | None = None, plots: bool = True) -> str:
    """The paired comparison as text; also written to ``out/compare_<A>_vs_<B>.<ext>``
    (Markdown: with a plot of each compared cell's per-bucket differences under
    ``out/plots/``, and the same page self-contained as ``.html``)."""
    _check(fmt)
    if out is not None:
        claim_report_dir(out, runs_dir)
    if n_boot < 1:
        raise FsxltError("the bootstrap needs at least one resample")
    records = _load(runs_dir, warn)
    _refuse_unreadable(records, runs_dir, (arm_a, arm_b))
    paired = pairs(records, arm_a, arm_b)
    result = compare_pairs(paired, seed=seed, n_boot=n_boot)
    note = test_set_note(records, arm_a, arm_b)
    if note and warn:
        warn(note)
    for arm in (arm_a, arm_b):
        if arm in records.imported and warn:
            warn(f"note: {arm} is imported from {records.imported[arm]}; paired by bucket "
                 f"hash: {int(result['n'].sum())} buckets in {len(result)} cells")
    text = render_compare(result, arm_a, arm_b, fmt, seed=seed, n_boot=n_boot)
    if out is None:
        return text
    out = Path(out)
    stem = f"compare_{arm_a}_vs_{arm_b}"
    images = []
    if plots and fmt == "md":  # each compared cell's differences, bucket by bucket
        from fsxlt.report.plots import paired_difference_plots

        images = [path.relative_to(out).as_posix() for path in paired_difference_plots(
            paired, result, arm_a, arm_b, out / "plots") if path.suffix == ".png"]
        text += "\n### Per bucket\n\n" + "".join(
            f"![{Path(image).stem}]({image})\n\n" for image in images)
    atomic_write_text(out / f"{stem}.{SUFFIX[fmt]}", text)
    if fmt == "md":
        atomic_write_text(out / f"{stem}.html", compare_html(result, arm_a, arm_b, out, images,
                                                             seed=seed, n_boot=n_boot))
    return text
