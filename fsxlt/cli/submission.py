"""``fsxlt submission``: one folder of a study's benchmark prediction files, as submitted."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from fsxlt.cli.app import app
from fsxlt.errors import FsxltError
from fsxlt.fileio import check_output_dir


@app.command("submission")
def submission_cmd(
    runs_dir: Annotated[Path, typer.Argument(help="RUNS_DIR written by fsxlt sweep / adapt "
                                             "with --predict (predict: in a sweep).")],
    out: Annotated[Path, typer.Option("--out", help="The folder to write (write-once).")],
    arm: Annotated[
        str | None,
        typer.Option("--arm", help="The arm whose runs to gather (full, full-nosource, "
                     "full@de, ...); needed when runs of several arms predicted."),
    ] = None,
    bucket: Annotated[
        str | None,
        typer.Option("--bucket", help="Only runs on this bucket (00, 03, all), or best-dev: "
                     "per task, language and K the run with the best dev score. Default: "
                     "every run (FewCLUE: all six splits of a task)."),
    ] = None,
    k: Annotated[int | None, typer.Option("-k", "--k", help="Only runs of this K.")] = None,
    task: Annotated[
        list[str] | None, typer.Option("--task", "-t", help="Only this task (repeatable).")
    ] = None,
    replace: Annotated[
        bool, typer.Option("--replace", help="Replace an existing folder that holds another "
                           "submission (else refused).")
    ] = False,
) -> None:
    """Gather the prediction files of a study's runs into one folder, as the benchmark takes it.

    XGLUE: <TASK>/<lang>.prediction for every task and language, the folder
    XGLUE's evaluator reads. FewCLUE: <task>_predict_<x>.json for the splits
    0-4 and all of every task, side by side as the leaderboard takes them.
    The files are the ones each run wrote under <arm>/submission/ of RUNS_DIR.

    Refused in one line: a file a record names that is missing, two runs that
    claim one file (pick with --bucket, --k or --task), a FewCLUE task
    without all six splits (unless --bucket), an --out inside a runs
    directory or bucket store. The folder appears at once, complete; an
    existing one with the same files is left unchanged, one with other files
    is replaced only with --replace.

    Example:

    \b
      fsxlt submission runs --out submission/xglue --arm full --k 1 --bucket best-dev
      fsxlt submission runs --out submission/fewclue --arm full-nosource
    """
    from fsxlt.study.submission import fewclue_lacking, write_submission_folder

    if k is not None and k < 0:
        raise FsxltError("-k must be >= 0")
    check_output_dir(out, "submission folder")
    state, files = write_submission_folder(runs_dir, out, arm=arm, bucket=bucket, k=k,
                                           tasks=tuple(task or ()), replace=replace)
    for name, claim in files.items():
        typer.echo(f"{name}  <-  {claim.record.relative_to(runs_dir).as_posix()}")
    arms = sorted({claim.arm for claim in files.values()})
    typer.echo(f"{state} {len(files)} files to {out} (arm {', '.join(arms)})")
    lacking = fewclue_lacking({claim.task for claim in files.values()})
    if lacking:
        typer.echo(f"note: FewCLUE's leaderboard takes nine tasks; this folder lacks "
                   f"{', '.join(lacking)}", err=True)

