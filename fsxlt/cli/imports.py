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
    arm: Annotated[str | None, typer.Option(
        "--arm", help="The arm's name (starts with lm-eval); default lm-eval-<model>, with "
        "the start of its files' hash for a local folder.")] = None,
    model: Annotated[Path | None, typer.Option(
        "--model", help="The model folder lm-eval ran, where it is now (default: the "
        "pretrained path in the results, where it exists here).")] = None,
) -> None:
    """Turn lm-eval's results on tasks of fsxlt buckets export --format lm-eval into run
    records, one per bucket, beside the other arms of the same buckets.

    Each sample is checked against content: its gold label and every option's prompt
    must be the ones fsxlt icl --preset lm-eval renders from the bucket's demonstrations
    and that test example, and lm-eval's acc, its per-sample acc and the arg-max of its
    per-sample log-likelihoods (run lm_eval with --log_samples) must agree. The arm is
    lm-eval-<model> (or --arm); the run's identity is the model by its files' hash (a
    hub id at the commit lm-eval recorded), the task config's hash, the bucket's hash,
    the test file's and lm-eval's version. Anything that does not match is one line,
    nothing written. fsxlt report and report --compare then show and pair the arm.

    Example:

    \b
      lm_eval --model hf --model_args pretrained=MODEL --include_path tasks \\
          --tasks fsxlt_xnli_de_k4 --log_samples --output_path results
      fsxlt import lm-eval results --runs runs --buckets buckets --arm lm-eval-mine
      fsxlt report runs --compare lm-eval-mine icl-lmeval
    """
    from fsxlt.icl.lm_eval_results import import_lm_eval

    done = import_lm_eval(results, runs, buckets, replace=replace, arm=arm, model=model)
    for one in done:
        typer.echo(f"{one.path}: {one.state} (test {one.record['metric']} "
                   f"{100 * one.record['test_score']:.2f})")
    counts = {state: sum(one.state == state for one in done)
              for state in ("new", "replaced", "already done")}
    typer.echo(f"{counts['new'] + counts['replaced']} lm-eval runs imported into {runs} "
               f"({counts['new']} new, {counts['replaced']} replaced), "
               f"{counts['already done']} already done")
