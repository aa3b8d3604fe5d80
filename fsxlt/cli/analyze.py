"""``fsxlt analyze``: the analyses of METHOD.md §6-§7, one subcommand each."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from fsxlt.cli.app import app
from fsxlt.data import load_split
from fsxlt.errors import FsxltError
from fsxlt.fileio import atomic_write_text
from fsxlt.tasks import get_task

# pandas, scipy and matplotlib are imported inside the commands (quick `fsxlt --help`).

analyze_app = typer.Typer(help="Analyses that explain FS-XLT results.", no_args_is_help=True)
app.add_typer(analyze_app, name="analyze")


def _english_examples(task: str, english: Path | None, data_dir: Path | None):
    spec = get_task(task)
    return load_split(spec, spec.source_language, "train", path=english,
                      data_dir=data_dir).examples


def _write_table(table, out: Path | None, name: str) -> None:
    """Print a DataFrame and, with ``out``, save it as CSV."""
    typer.echo(table.to_string(index=False, float_format=lambda x: f"{x:.3f}"))
    if out is not None:
        atomic_write_text(out / f"{name}.csv", table.to_csv(index=False))


@analyze_app.command("overlap")
def overlap_command(
    buckets: Annotated[Path, typer.Argument(help="Bucket store root (or one set).")],
    task: Annotated[str, typer.Option("--task", "-t", help="Task whose buckets to use.")],
    english: Annotated[Path | None, typer.Option(help="English training file.")] = None,
    data_dir: Annotated[Path | None, typer.Option(
        help="Directory holding train-en.tsv (the task's file pattern).")] = None,
    out: Annotated[Path | None, typer.Option(help="Also write overlap.csv here.")] = None,
) -> None:
    """Lexical overlap of each target language's buckets with the English training words.

    Example:

      fsxlt analyze overlap buckets/ --task panx --english data/panx/train-en.tsv
    """
    from fsxlt.analysis.typology import overlap_table

    table = overlap_table(buckets, _english_examples(task, english, data_dir), task=task)
    _write_table(table, out, "overlap")


@analyze_app.command("correlate")
def correlate_command(
    scores: Annotated[Path, typer.Argument(
        help="CSV with columns task, language, k, mean (k=0: zero-shot); optional overlap.")],
    buckets: Annotated[Path | None, typer.Option(
        help="Compute lexical overlap from this bucket store (needs --english).")] = None,
    english: Annotated[Path | None, typer.Option(help="English training file.")] = None,
    overlap_k: Annotated[int | None, typer.Option(
        help="K whose buckets define a language's overlap (default: the largest).")] = None,
    out: Annotated[Path | None, typer.Option(help="Write tables (CSV) and plots here.")] = None,
) -> None:
    """Correlate per-language gains with lexical overlap and shared WALS features.

    A language's gain is the mean over K of (K-shot mean minus zero-shot).
    Prints Spearman's rho and Pearson's r with p-values, and the mean gain
    of Latin-script versus other-script languages.

    Example:

      fsxlt analyze correlate published_scores.csv --buckets buckets/ --english train-en.tsv
    """
    import pandas as pd

    from fsxlt.analysis.plots import gain_scatter
    from fsxlt.analysis.typology import (
        correlation_table,
        language_gains,
        overlap_table,
        script_table,
    )

    if not scores.is_file():
        raise FsxltError(f"{scores}: file not found")
    frame = pd.read_csv(scores)
    gains = language_gains(frame)
    if "overlap" in frame.columns:
        per_lang = frame.dropna(subset=["overlap"]).groupby(["task", "language"])["overlap"]
        gains = gains.merge(per_lang.mean().reset_index(), on=["task", "language"], how="left")
    elif buckets is not None:
        if english is None:
            raise FsxltError("--buckets needs --english (the English training file)")
        tables = []
        for task in sorted(gains["task"].unique()):
            ov = overlap_table(buckets, _english_examples(task, english, None), task=task)
            k = overlap_k if overlap_k is not None else int(ov["k"].max())
            tables.append(ov.loc[ov["k"] == k, ["task", "language", "overlap"]])
        gains = gains.merge(pd.concat(tables), on=["task", "language"], how="left")
    correlations = correlation_table(gains)
    _write_table(gains, out, "gains")
    typer.echo("")
    _write_table(correlations, out, "correlations")
    typer.echo("")
    _write_table(script_table(gains), out, "script")
    if out is not None:
        for task, group in gains.groupby("task"):
            gain_scatter(group, "wals_shared", "WALS features shared with English (of 6)",
                         f"{task}: gain vs. common WALS features", out / f"{task}-gain-wals")
            if "overlap" in group and group["overlap"].notna().any():
                gain_scatter(group, "overlap", "lexical overlap with English",
                             f"{task}: gain vs. lexical overlap", out / f"{task}-gain-overlap")
        typer.echo(f"wrote tables and plots to {out}")
