"""``fsxlt demo``: the whole pipeline on the synthetic benchmark (a thin layer over fsxlt.demo)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from fsxlt.cli.app import app


@app.command("demo")
def demo_cmd(
    out: Annotated[
        Path, typer.Option("--out", help="Directory for data, buckets, checkpoints, runs, report.")
    ] = Path("demo-out"),
    config: Annotated[
        str,
        typer.Option("--config", help="Demo config: 'demo' (default), 'quick', or a YAML path."),
    ] = "demo",
    workers: Annotated[
        int | None,
        typer.Option("--workers", min=0,
                     help="Sweep processes (default: the config's; 0: in-process)."),
    ] = None,
    encoder_cache: Annotated[
        Path | None,
        typer.Option("--encoder-cache", help="Where the tiny encoder is cached (OUT/encoders)."),
    ] = None,
) -> None:
    """Run FS-XLT end to end on the synthetic benchmark, offline, on a CPU.

    Generates the data, builds (or reuses) a tiny multilingual encoder, samples
    buckets, source-trains on English, adapts on every bucket of several target
    languages of different lexical overlap and word order, and writes the report
    (tables and plots). Runs again in the same --out reuse what is there; an
    interrupted demo resumes. Ends with a summary: zero-shot vs few-shot per
    language and where the report is.

    Example:

    \b
      fsxlt demo --out demo-out
      fsxlt demo --out demo-quick --config quick
    """
    from fsxlt.demo import run_demo, summary_text
    from fsxlt.fileio import check_output_dir

    check_output_dir(out, "demo directory")
    if encoder_cache is not None:
        check_output_dir(encoder_cache, "encoder cache")
    import sys

    # bars on a terminal; off one (a log file) the stage lines and the sweeps' plain
    # progress lines, never carriage-return bars
    summary = run_demo(out, config, encoder_cache=encoder_cache, workers=workers,
                       progress=sys.stderr.isatty())
    typer.echo(summary_text(summary), nl=False)
    if summary["n_failed"]:
        raise typer.Exit(1)
