"""``fsxlt sweep``: every adapt run of a study from one config, resumable, local or on Ray."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from fsxlt.cli.app import app
from fsxlt.cli.options import (
    Device,
    EvalMaxTokens,
    LogProject,
    LogTo,
    LogUri,
    MaxEpochs,
    MicroBatch,
    Patience,
    Replace,
    SelectStart,
    SweepPrecision,
)

if TYPE_CHECKING:
    from fsxlt.execution import SweepConfig


@app.command("sweep")
def sweep_cmd(
    config: Annotated[Path, typer.Argument(help="Sweep config YAML (see configs/sweeps/).")],
    out: Annotated[
        Path | None, typer.Option("--out", help="RUNS_DIR for the records (overrides 'out').")
    ] = None,
    buckets: Annotated[
        Path | None, typer.Option("--buckets", help="Bucket store root (overrides 'buckets').")
    ] = None,
    data_dir: Annotated[
        str | None, typer.Option("--data-dir", help="Target dev/test files; {task} expands.")
    ] = None,
    start: Annotated[
        str | None, typer.Option("--from", help="Source-trained checkpoint; {task} expands.")
    ] = None,
    tasks: Annotated[
        list[str] | None, typer.Option("--task", help="Only this task (repeatable).")
    ] = None,
    langs: Annotated[
        list[str] | None, typer.Option("--lang", help="Only this language (repeatable).")
    ] = None,
    ks: Annotated[list[int] | None, typer.Option("--k", help="Only this K (repeatable).")] = None,
    methods: Annotated[
        list[str] | None, typer.Option("--method", help="Only this method (repeatable).")
    ] = None,
    regimes: Annotated[
        list[str] | None, typer.Option("--regime", help="Only this training regime of the "
                                       "config's regimes (repeatable); its joint: settings "
                                       "stay, so the runs kept are the same runs.")
    ] = None,
    n_buckets: Annotated[
        int | None, typer.Option("--n-buckets", min=1, help="Buckets 0..N-1 of every set.")
    ] = None,
    lrs: Annotated[
        list[float] | None, typer.Option("--lr", help="Learning rate grid (repeatable).")
    ] = None,
    max_epochs: MaxEpochs = None,
    patience: Patience = None,
    select_start: SelectStart = False,
    executor: Annotated[str, typer.Option("--executor", help="local or ray.")] = "local",
    workers: Annotated[
        int, typer.Option("--workers", min=0, help="Local worker processes (0: in this process). "
                          "Runs of one (task, language, start) form a group that shares its "
                          "model load and tokenized data; with more workers than groups the "
                          "largest groups are split, so one language's sweep uses every "
                          "worker.")
    ] = 1,
    devices: Annotated[
        str | None,
        typer.Option("--devices", help="GPU ids for local workers, e.g. 0,1 (worker i: i-th)."),
    ] = None,
    device: Device = "auto",
    precision: SweepPrecision = None,
    eval_max_tokens: EvalMaxTokens = None,
    micro_batch: MicroBatch = None,
    threads: Annotated[
        int | None, typer.Option("--threads", help="Torch threads per local worker.")
    ] = None,
    address: Annotated[
        str | None, typer.Option("--address", help="Ray cluster to join (auto, ray://...).")
    ] = None,
    gpus_per_task: Annotated[
        float, typer.Option("--gpus-per-task", help="GPUs per Ray task (fractions allowed).")
    ] = 0.0,
    cpus_per_task: Annotated[
        float, typer.Option("--cpus-per-task", help="CPUs per Ray task.")
    ] = 1.0,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="The plan, running nothing: the runs that "
                           "would run, every missing input (starts with the command that "
                           "writes each, bucket sets, dev, test and source files), the "
                           "size and its cost in device-hours. Exit status 1 while an "
                           "input is missing.")
    ] = False,
    rates: Annotated[
        Path | None, typer.Option("--rates", help="With --dry-run: cost runs at the rates "
                                  "of a scripts/bench_gpu.py --json file (the device it "
                                  "ran on) where the study has no finished records of "
                                  "their task and method to measure its own.")
    ] = None,
    assume_epochs: Annotated[
        float | None, typer.Option("--assume-epochs", min=1, help="With --dry-run: epochs "
                                   "a learning rate runs on average before the early "
                                   "stop, where no finished record measured it "
                                   "(default: half the cap).")
    ] = None,
    save_predictions: Annotated[
        bool, typer.Option("--save-predictions", help=(
            "Also write every run's test predictions beside its record "
            "(<index>.predictions.jsonl); finished runs without them run again."))
    ] = False,
    replace: Replace = False,
    log_to: LogTo = None,
    log_uri: LogUri = None,
    log_project: LogProject = None,
) -> None:
    """Run every adapt run of a sweep config; runs with a finished, matching record are skipped.

    Expands tasks x languages x K x buckets x methods (and the icl: section's
    in-context learning arms, on the same buckets and at K=0), runs each (task,
    language, start or causal LM) group in one worker (data tokenized and weights
    loaded once), writes
    RUNS_DIR/<task>/<lang>/k<K>/<method>/<bucket>.json per run (an error record when
    a run fails; the sweep goes on) and RUNS_DIR/<task>/<lang>/k0/zero-shot.json.
    Start it again after a crash: only missing, corrupt or failed runs rerun. A
    finished record of other settings (changed config, another sweep, fsxlt adapt)
    is never replaced unless --replace: the sweep refuses before running anything.
    Exit status 1 if any run failed.

    Example:

    \b
      fsxlt sweep configs/sweeps/study.yaml --task xnli --workers 4 --devices 0,1,2,3
      fsxlt sweep regimes.yaml --lang ar --regime sequential
      fsxlt sweep configs/sweeps/study.yaml --executor ray --address auto --gpus-per-task 0.5
    """
    from fsxlt.errors import FsxltError
    from fsxlt.execution.config import load_config  # no torch: a bad config is refused fast

    if not dry_run and (rates is not None or assume_epochs is not None):
        raise FsxltError("--rates and --assume-epochs cost a plan: they go with --dry-run")
    bench = None
    if rates is not None:
        from fsxlt.execution.cost import read_bench

        bench = read_bench(rates)
    overrides = {"out": str(out) if out else None, "buckets": str(buckets) if buckets else None,
                 "data_dir": data_dir, "start": start, "n_buckets": n_buckets,
                 "lrs": list(lrs) if lrs else None, "max_epochs": max_epochs,
                 "patience": patience, "select_start": True if select_start else None,
                 "precision": precision, "eval_max_tokens": eval_max_tokens,
                 "micro_batch": micro_batch}
    cfg = load_config(config, overrides).restrict(tasks, langs, ks, methods, regimes)
    if dry_run:
        from fsxlt.execution.executors import resolve_precisions

        _list_runs(resolve_precisions(cfg, executor, device, gpus_per_task), save_predictions,
                   replace, bench, str(rates) if rates else None, assume_epochs, workers)
        return
    from fsxlt.execution import run_sweep
    from fsxlt.report.trackers import tracker_logger

    gpu_ids = [d.strip() for d in devices.split(",") if d.strip()] if devices else None
    say = lambda line: typer.echo(line, err=True)  # noqa: E731
    logger = tracker_logger(log_to, log_uri, log_project or cfg.name, say)
    result = run_sweep(cfg, executor=executor, workers=workers, devices=gpu_ids, device=device,
                       threads=threads, address=address, gpus_per_task=gpus_per_task,
                       cpus_per_task=cpus_per_task, save_predictions=save_predictions,
                       replace=replace, note=say,
                       on_record=logger.log if logger is not None else None)
    lost = f", {result.not_run} not run (start the sweep again)" if result.not_run else ""
    typer.echo(f"{len(result.completed)} runs completed, {len(result.failed)} failed, "
               f"{len(result.status.done)} already done{lost}; records in {cfg.out}")
    if result.failed or result.not_run:
        raise typer.Exit(1)


def _list_runs(cfg: SweepConfig, save_predictions: bool, replace: bool,
               bench: dict | None, rates: str | None, assume_epochs: float | None,
               workers: int = 1) -> None:
    """``--dry-run``: every run not done (id, why, record) on stdout; on stderr every
    missing input (starts with the command that writes each, bucket sets, dev, test and
    source files), the plan's size and cost, and a summary. Exit status 1 while an input is
    missing, 0 when the plan is complete."""
    from collections import Counter

    from fsxlt.execution import sweep_status
    from fsxlt.execution.executors import check_out
    from fsxlt.execution.gaps import Gaps, start_command

    check_out(cfg)  # what the sweep would refuse of its out, a dry run refuses too
    status = sweep_status(cfg, save_predictions, replace=True, dry_run=True)
    gaps = Gaps(collect=True, found=list(status.plan.gaps))
    sizes = _check_sets(status, gaps)
    for run, why in status.pending:
        why = why if why != "replace" or replace else "different (needs --replace)"
        typer.echo(f"{run.id}\t{why}\t{run.record_path}")
    for line in status.plan.notes:
        typer.echo(line, err=True)
    plans = {plan.task: plan for plan in cfg.tasks}
    for task, start in status.plan.missing_starts:
        n_runs = sum(1 for run in status.plan.runs if (run.task, run.start) == (task, start))
        typer.echo(f"start missing: {start} (task {task}), {n_runs} runs wait for it: "
                   f"{start_command(plans[task], start)}", err=True)
    for line in gaps.lines():
        typer.echo(f"missing: {line}", err=True)
    for line in _cost_lines(status, bench, rates, assume_epochs, workers, sizes):
        typer.echo(line, err=True)
    if cfg.stop_early is not None:
        rule = cfg.stop_early
        typer.echo(f"stop_early: cells may stop from {rule.min_buckets} buckets on, looked at "
                   f"every {rule.every} ("
                   + " or ".join(filter(None, [
                       f"interval within {rule.width:g} points" if rule.width else "",
                       f"{rule.compare[0]} against {rule.compare[1]} decided"
                       if rule.compare else ""]))
                   + "); the runs and cost above are the most it can take", err=True)
    why = Counter(w if w != "replace" or replace else "different" for _, w in status.pending)
    detail = ", ".join(f"{n} {w}" for w, n in sorted(why.items()))
    typer.echo(f"{len(status.plan.runs)} runs: {len(status.done)} done, "
               f"{len(status.pending)} to run ({detail or 'none'}) in "
               f"{len(status.groups())} groups; {len(status.plan.zero_shot)} zero-shot "
               "records", err=True)
    n_missing = len(status.plan.missing_starts) + len(gaps)
    if n_missing:
        typer.echo(f"plan incomplete: {n_missing} missing inputs (above); the runs of cells "
                   "without their inputs are not listed", err=True)
        raise typer.Exit(1)


def _check_sets(status: Any, gaps: Any) -> dict[tuple, int]:
    """What the sweep refuses of the dev and test sets it reads (unreadable, empty, a test
    set that is the dev set), each group's, into ``gaps``; each set's size, as it read it."""
    from fsxlt.execution.spec import RunSpec, check_eval_sets

    sizes: dict[tuple, int] = {}
    for group in status.groups():
        gaps.attempt(check_eval_sets, [run for run in group if isinstance(run, RunSpec)],
                     sizes)
    return sizes


def _cost_lines(status: Any, bench: dict | None, rates: str | None,
                assume_epochs: float | None, workers: int,
                sizes: dict[tuple, int]) -> list[str]:
    """The dry run's size and cost lines (:mod:`fsxlt.execution.cost`)."""
    import json

    from fsxlt.execution.cost import describe, plan_cost

    records = []  # finished records measure rates; so do those rerun only for predictions
    for run in status.done + [run for run, why in status.pending if why == "no-predictions"]:
        try:
            records.append(json.loads(Path(run.record_path).read_text(encoding="utf-8")))
        except (OSError, ValueError):
            continue  # counted done by content a moment ago; a rate needs no more

    def dev_size(run: Any) -> int:  # as _check_sets read it; a set it could not: read here
        key = ("dev", run.dev_path, run.dev_split, run.dev_limit)
        if key not in sizes:
            sizes[key] = len(run.read_eval("dev"))
        return sizes[key]

    cost = plan_cost([run for run, _ in status.pending], records, bench, assume_epochs,
                     dev_size, workers)
    return describe(cost, rates)
