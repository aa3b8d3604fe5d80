"""``fsxlt report``: tables, plots and paired comparisons from RUNS_DIR (nothing is rerun)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from fsxlt.cli.app import app
from fsxlt.errors import FsxltError
from fsxlt.fileio import check_output_dir


def _warn(line: str) -> None:
    typer.echo(line, err=True)


@app.command("report")
def report_cmd(
    runs_dir: Annotated[Path, typer.Argument(help="RUNS_DIR written by fsxlt sweep / adapt.")],
    fmt: Annotated[str, typer.Option("--format", help="md, latex or csv.")] = "md",
    out: Annotated[
        Path | None,
        typer.Option("--out", help="Write report.<ext> (md: also report.html, self-contained), "
                     "cells.csv, records.csv (per bucket) and plots/ (PNG, PDF) here; with "
                     "--compare, the comparison, a per-bucket plot of each cell and its "
                     ".html."),
    ] = None,
    compare: Annotated[
        tuple[str, str] | None,
        typer.Option("--compare", help="METHOD_A METHOD_B: paired comparison over shared "
                     "buckets (a method, or METHOD-nosource for the ablation)."),
    ] = None,
    rank: Annotated[
        list[str] | None,
        typer.Option("--rank", help="ARM (two or more times): rank the arms per (task, "
                     "language, K), with ties where no paired test (BH-adjusted over every "
                     "pair and cell) separates them."),
    ] = None,
    ddof: Annotated[
        int, typer.Option("--ddof", help="std over buckets: 1 sample (default), 0 population.")
    ] = 1,
    expected: Annotated[
        int | None, typer.Option("--expected-buckets", help="Buckets per cell; others show "
                                 "(n=…). Default: each task's n_buckets (40; QA 10).")
    ] = None,
    seed: Annotated[int, typer.Option("--seed", help="Bootstrap seed.")] = 0,
    n_boot: Annotated[int, typer.Option("--bootstrap", help="Bootstrap resamples.")] = 10_000,
    no_plots: Annotated[bool, typer.Option("--no-plots", help="Tables only.")] = False,
    strategies: Annotated[
        bool, typer.Option("--strategies", help="Selection strategies against random buckets "
                           "of the same pools: difference of means with a bootstrap CI, "
                           "P(beats random) by Mann-Whitney U; plots with --out.")
    ] = False,
    sources: Annotated[
        bool, typer.Option("--sources", help="Only the source x target table of zero-shot "
                           "scores (from K=0 records and source-train checkpoints).")
    ] = False,
) -> None:
    """Per task and method: rows = languages, columns = K (K=0 zero-shot), mean ± std over buckets.

    Also the gain over zero-shot, the adapting variants side by side and the drop
    without source-training; with --out, plots as PNG and PDF. --compare A B gives,
    per (task, language, K), the mean paired difference over the buckets both ran,
    a bootstrap 95% CI (or why none), the Wilcoxon signed-rank p-value and its
    Benjamini-Hochberg q over the cells compared, and the two arms' spreads over
    those buckets (std ratio with the Pitman-Morgan interval and test) and the
    rank correlation of their per-bucket scores. --rank A --rank B --rank C ranks
    three or more arms per cell, tied where no paired test separates them.

    Runs adapted from a model source-trained on anything but English are arms of
    their own (full@de, full@en+de+es), never averaged with English's; so are runs
    of a joint training regime (full+joint, fsxlt adapt --regime). --sources
    gives the source x target table of zero-shot scores; RUNS_DIR may also hold
    source-train checkpoint directories. --strategies judges shot-selection
    strategies (fsxlt select) against random buckets of the same pools.

    Example:

    \b
      fsxlt report runs --format md --out report
      fsxlt report runs --compare full fc-pooler
      fsxlt report runs --compare full@de full
      fsxlt report runs --compare full+joint full
      fsxlt report runs --rank full --rank lora --rank fc-pooler
      fsxlt report ckpt --sources
      fsxlt report runs --strategies --out report
    """
    from fsxlt.report import (
        claim_report_dir,
        report_text,
        sources_text,
        strategies_text,
        write_compare,
        write_rank,
        write_report,
    )

    if ddof < 0 or (expected is not None and expected < 1):
        raise FsxltError("--ddof must be >= 0 and --expected-buckets >= 1")
    if rank and (compare or sources or strategies):
        raise FsxltError("--rank ranks arms on its own: leave out --compare, --sources and "
                         "--strategies")
    if rank is not None and (len(rank) < 2 or len(set(rank)) != len(rank)):
        raise FsxltError("--rank needs at least two different arms (--rank A --rank B ...)")
    if out is not None:
        check_output_dir(out, "report directory")
        claim_report_dir(out, runs_dir)
    if sources:
        typer.echo(sources_text(runs_dir, fmt, out, warn=_warn), nl=False)
        return
    if strategies:
        typer.echo(strategies_text(runs_dir, fmt, out, seed=seed, n_boot=n_boot,
                                   plots=not no_plots, warn=_warn), nl=False)
        return
    if rank:
        typer.echo(write_rank(runs_dir, list(rank), out, fmt, seed=seed, n_boot=n_boot,
                              warn=_warn), nl=False)
        return
    if compare:
        typer.echo(write_compare(runs_dir, compare[0], compare[1], out, fmt, seed=seed,
                                 n_boot=n_boot, warn=_warn, plots=not no_plots), nl=False)
        return
    if out is None:
        typer.echo(report_text(runs_dir, fmt, ddof=ddof, expected=expected, warn=_warn), nl=False)
        return
    written = write_report(runs_dir, out, fmt, ddof=ddof, expected=expected,
                           plots=not no_plots, warn=_warn)
    typer.echo(f"wrote {len(written)} files to {out}")
