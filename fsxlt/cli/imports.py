"""``fsxlt import lm-eval``: other tools' results on fsxlt's buckets, as run records."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from fsxlt.cli.app import app

import_app = typer.Typer(help="Read other tools' results on fsxlt's buckets as run records.",
                         no_args_is_help=True)
app.add_typer(import_app, name="import")


@import_app.command("lm-eval")
def import_lm_eval_command(
    results: Annotated[Path, typer.Argument(
        help="lm-eval's --output_path (its results_*.json and samples_*.jsonl), or one "
        "results file.")],
    runs: Annotated[Path, typer.Option("--runs", help="Runs directory to write to.")],
    buckets: Annotated[Path, typer.Option(
        "--buckets", help="The bucket store the tasks were exported from.")
    ] = Path("buckets"),
    replace: Annotated[bool, typer.Option(
        "--replace", help="Replace finished records of other settings.")] = False,
) -> None:
    """Turn lm-eval's results on tasks of fsxlt buckets export --format lm-eval into run
    records, one per bucket, beside the other arms of the same buckets.

    The arm is lm-eval-<model>; each record's predictions are the arg-max of lm-eval's
    per-sample log-likelihoods (run lm_eval with --log_samples), scored with the task's
    metric; its identity is the model and revision, the task config's hash, the bucket's
    hash, the test file's and lm-eval's version. A bucket hash that matches no bucket of
    --buckets, results of a task fsxlt did not export or a missing per-sample file is one
    line, nothing written. fsxlt report and report --compare then show and pair the arm.

    Example:

      lm_eval --model hf --model_args pretrained=MODEL --include_path tasks \\
          --tasks fsxlt_xnli_de_k4 --log_samples --output_path results
      fsxlt import lm-eval results --runs runs --buckets buckets
      fsxlt report runs --compare lm-eval-MODEL icl-lmeval
    """
    from fsxlt.icl.lm_eval_results import import_lm_eval

    done = import_lm_eval(results, runs, buckets, replace=replace)
    for one in done:
        typer.echo(f"{one.path}: {one.state} (test {one.record['metric']} "
                   f"{100 * one.record['test_score']:.2f})")
    typer.echo(f"{len(done)} lm-eval runs imported into {runs}")
