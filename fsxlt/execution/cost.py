"""What the runs a sweep has still to run cost: their size, and device-hours from measured
rates, each assumption named.

A run trains once per learning rate for some epochs (the early stop ends most before the
cap); an epoch costs its training steps and a dev evaluation, which grows with the dev
set. So a run costs ``lrs x epochs x (per_epoch + per_example x dev examples) +
per_record`` (restoring the chosen weights, scoring the test set). :class:`Rate` holds
those seconds for one (task, method), measured one of two ways, the first found:

- **the study's own finished records** (:func:`record_rates`): each learning rate's
  clock and epochs and the record's own clock, on the device they ran on; the mean
  epochs they ran is measured too. A study costs itself better after its first runs.
- **a benchmark** (:func:`bench_rates`): the JSON ``scripts/bench_gpu.py --json`` writes
  on a device, an mBERT-shaped encoder on PAN-X- and XNLI-shaped data: its dev
  evaluation rate per wordpiece (a task's wordpieces per example: :data:`WORDPIECES`)
  and each epoch's and record's fixed seconds.

Where neither has a rate, the runs are counted, not costed, and the line says how to
get one. A run's epochs per learning rate are the records' mean where measured, else an
assumption (half the cap unless told). The groups' set-up (a worker's model load and
tokenization, once per task and language) is left out: minutes against hours.
"""

from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fsxlt.errors import FsxltError

# The study's dev sets as published: examples and mBERT wordpieces per example
# (docs/performance.md#gpu-estimate); a task not here is costed at its shape's measured mean.
WORDPIECES = {"xnli": 50, "pawsx": 60, "mldoc": 128, "marc": 90, "udpos": 30, "panx": 18}
STUDY_DEV_EXAMPLES = {"xnli": 2490, "pawsx": 2000, "mldoc": 1000, "marc": 5000,
                      "udpos": 1500, "panx": 10000}


@dataclass(frozen=True)
class Rate:
    """Seconds of one run's parts on one device, and where they come from."""

    per_epoch: float          # an epoch's training steps and weight reset, per learning rate
    per_example: float        # a dev example's evaluation, once an epoch
    per_record: float         # restoring the chosen weights and scoring the test set
    epochs: float | None      # mean epochs per learning rate measured (None: not measured)
    source: str               # where the rate comes from, in words
    device: str
    per_worker: bool = False  # a worker's seconds (records' clocks), not the device's

    def seconds(self, lrs: int, epochs: float, dev_examples: int, trains: bool) -> float:
        if not trains:
            return self.per_record
        return lrs * epochs * (self.per_epoch + self.per_example * dev_examples) \
            + self.per_record


def record_rates(records: list[dict[str, Any]]) -> dict[tuple[str, str], Rate]:
    """Rates per (task, method) from finished adapt records (their clocks and epochs)."""
    sums: dict[tuple[str, str], list[float]] = defaultdict(lambda: [0.0] * 6)
    devices: dict[tuple[str, str], set[str]] = defaultdict(set)
    for record in records:
        runs = record.get("runs") or []
        dev_n = ((record.get("data") or {}).get("dev") or {}).get("n")
        if record.get("status") != "ok" or not runs or not dev_n or record.get("k", 0) == 0:
            continue
        key = (str(record["task"]), str(record.get("method")))
        trials = sum(float(run.get("wall_time_s") or 0.0) for run in runs)
        epochs = sum(len(run.get("epochs") or []) for run in runs)
        if not epochs:
            continue
        total = sums[key]
        total[0] += trials                                       # the trials' seconds
        total[1] += epochs * int(dev_n)                          # dev examples evaluated
        total[2] += max(float(record.get("wall_time_s") or 0.0) - trials, 0.0)
        total[3] += 1                                            # records
        total[4] += epochs
        total[5] += len(runs)                                    # trials
        devices[key].add(str(record.get("device") or "?"))
    rates = {}
    for key, (trials, examples, fixed, n, epochs, n_trials) in sums.items():
        rates[key] = Rate(0.0, trials / examples, fixed / n, epochs / n_trials,
                          f"{int(n)} finished records of this study",
                          "/".join(sorted(devices[key])), per_worker=True)
    return rates


def bench_rates(found: dict[str, Any], task: str, tagging: bool) -> Rate | None:
    """A task's rate from a ``scripts/bench_gpu.py`` JSON: its dev evaluation rate per
    wordpiece (PAN-X's for tagging, XNLI's otherwise) times the task's wordpieces per
    example, and the fixed seconds of the sweep it timed, from its records' clocks."""
    shape = "panx" if tagging else "xnli"
    measured = (found.get("sweep") or {}).get(shape)
    evaluation = (found.get("evaluation") or {}).get(shape)
    if not measured or not evaluation or not measured.get("dev_evaluations"):
        return None
    rate = float(evaluation["wordpieces_per_s"])
    paid = {key: value / measured["workers"]
            for key, value in measured["worker_seconds"].items()}
    evaluating = measured["dev_wordpieces_evaluated"] / rate
    per_epoch = max(paid["epochs"] - evaluating, 0.0) / measured["dev_evaluations"]
    wordpieces = WORDPIECES.get(task) or (evaluation["dev_wordpieces"]
                                          / max(evaluation["dev_examples"], 1))
    return Rate(per_epoch, wordpieces / rate, paid["per_run"] / measured["runs"], None,
                f"the benchmark's {shape} figures", str(found.get("device") or "?"))


def read_bench(path: Path) -> dict[str, Any]:
    """A ``scripts/bench_gpu.py --json`` file, refused in one line unless it is one."""
    try:
        found = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as err:
        raise FsxltError(f"{path}: not a benchmark's figures ({err})") from None
    if not isinstance(found, dict) or not isinstance(found.get("sweep"), dict) \
            or not isinstance(found.get("evaluation"), dict):
        raise FsxltError(f"{path}: not a scripts/bench_gpu.py --json file (no sweep and "
                         "evaluation figures)")
    return found


@dataclass
class Cost:
    """A plan's pending runs, counted and costed."""

    runs: int = 0                       # adapting runs to run
    trials: int = 0                     # learning-rate trials of those that train
    max_epochs: set[int] = field(default_factory=set)
    other_runs: int = 0                 # ICL and LoRA runs: counted, not costed
    seconds: dict[str, float] = field(default_factory=dict)    # per task
    sources: dict[str, set[str]] = field(default_factory=dict)  # per task: its rates
    assumed: dict[str, str] = field(default_factory=dict)       # per task: epochs assumed
    uncosted: dict[str, int] = field(default_factory=dict)      # per task: runs without rate
    devices: set[str] = field(default_factory=set)


def plan_cost(pending: list[Any], records: list[dict[str, Any]],
              bench: dict[str, Any] | None, assume_epochs: float | None,
              dev_size: Any, workers: int = 1) -> Cost:
    """Count and cost the ``pending`` runs: with the rates of the study's finished
    ``records`` where a (task, method) has some, else the ``bench`` figures; their epochs
    per learning rate measured, else ``assume_epochs`` (None: half the run's cap).
    ``dev_size(run)`` is the number of dev examples a run evaluates each epoch. A record's
    clock is one worker's: the device's hours are the workers' over ``workers`` (the
    coming sweep's, assumed to share the device as the records' workers did); the
    benchmark's figures are the device's already."""
    from fsxlt.execution.spec import RunSpec

    measured = record_rates(records)
    benched: dict[str, Rate | None] = {}  # per task, from the bench's figures
    cost = Cost()
    for run in pending:
        if not isinstance(run, RunSpec):
            cost.other_runs += 1
            continue
        cost.runs += 1
        trains = run.k > 0
        if trains:
            cost.trials += len(run.lrs)
            cost.max_epochs.add(run.max_epochs)
        rate = measured.get((run.task, run.method))
        if rate is None and bench is not None:
            if run.task not in benched:
                benched[run.task] = bench_rates(bench, run.task, run.task_spec.is_tagging)
            rate = benched[run.task]
        if rate is None:
            cost.uncosted[run.task] = cost.uncosted.get(run.task, 0) + 1
            continue
        epochs = rate.epochs
        if epochs is None:
            epochs = assume_epochs if assume_epochs is not None else run.max_epochs / 2
            cost.assumed[run.task] = (f"{epochs:g} epochs a learning rate"
                                      + ("" if assume_epochs is not None else " (half the cap)"))
        seconds = rate.seconds(len(run.lrs), min(epochs, run.max_epochs),
                               dev_size(run) if trains else 0, trains)
        if rate.per_worker:
            seconds /= max(workers, 1)
        cost.seconds[run.task] = cost.seconds.get(run.task, 0.0) + seconds
        cost.sources.setdefault(run.task, set()).add(
            rate.source + (f", {rate.epochs:.1f} epochs a learning rate"
                           if rate.epochs is not None else "")
            + (f", their clocks over {workers} workers" if rate.per_worker and workers > 1
               else ""))
        cost.devices.add(rate.device)
    return cost


def hours(seconds: float) -> str:
    """Device-hours to the precision that means something at their size."""
    value = seconds / 3600
    return f"{value:,.0f}" if value >= 100 else f"{value:.1f}" if value >= 1 else f"{value:.2f}"


def describe(cost: Cost, rates_file: str | None) -> list[str]:
    """The lines a dry run prints of the cost."""
    caps = "/".join(str(c) for c in sorted(cost.max_epochs)) or "-"
    lines = [f"size: {cost.runs:,} adapting runs to run, {cost.trials:,} learning-rate "
             f"trials of at most {caps} epochs"
             + (f"; {cost.other_runs:,} ICL/LoRA runs, not costed" if cost.other_runs else "")]
    if cost.seconds:
        per_task = ", ".join(f"{task} {hours(seconds)}"
                             for task, seconds in sorted(cost.seconds.items()))
        lines.append(f"cost: about {hours(sum(cost.seconds.values()))} device-hours on "
                     f"{'/'.join(sorted(cost.devices))} ({per_task})")
        for task in sorted(cost.seconds):
            said = "; ".join(sorted(cost.sources[task]))
            if task in cost.assumed:
                said += f"; assumed {cost.assumed[task]}"
            lines.append(f"  {task}: rates from {said}")
    if cost.uncosted:
        tasks = ", ".join(f"{task} ({n:,} runs)" for task, n in sorted(cost.uncosted.items()))
        hint = ("its figures have no rate for them" if rates_file else
                "measure the device with scripts/bench_gpu.py --json FILE and pass --rates "
                "FILE, or run a few runs first (finished records give their rates)")
        lines.append(f"not costed: {tasks}: {hint}")
    return lines
