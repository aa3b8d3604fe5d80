"""Running a sweep: resume check, grouping, and the local and Ray executors.

:func:`run_sweep` expands a config, writes the zero-shot (K=0) records, drops
the runs whose record is already done (:func:`fsxlt.study.write_plan.plan_writes`),
groups the rest by (task, language, start) and hands the groups to an executor:

- ``local``: ``workers`` processes (spawn context) pulling groups from a queue;
  ``devices=["0", "1"]`` pins worker *i* to GPU ``devices[i % len(devices)]``
  (``CUDA_VISIBLE_DEVICES`` set before torch loads); each worker uses
  ``threads`` torch threads (default: CPU cores / workers). ``workers=0``
  runs everything in the calling process, with ``threads`` torch threads when
  given (restored afterwards).
- ``ray`` (:mod:`fsxlt.execution.ray_executor`): one Ray task per group,
  ``num_gpus=gpus_per_task`` (fractions allowed) and ``num_cpus=cpus_per_task``;
  joins ``address`` (``auto``, ``ray://host:10001``) or an already initialised
  Ray, else starts a local instance. Inputs travel through Ray's object store and
  records come back through it (no node needs the driver's disk); a node lost
  mid-group reruns the group's unfinished runs elsewhere.

Workers die with the sweep (``PR_SET_PDEATHSIG`` on Linux); a killed sweep
leaves only complete records behind (atomic writes), and the next start runs
exactly the missing ones.

Records follow the runs directory's write rule (:mod:`fsxlt.study.runs`): a
finished record with the run's identity is skipped, a missing, corrupt or
error record is (re)run, and a finished record of other settings, whoever
wrote it (an earlier version of this sweep, another sweep, ``fsxlt adapt``),
is never replaced unless ``replace`` is given: the sweep refuses before
running anything. ``out`` must be a runs directory apart from the bucket
store (:mod:`fsxlt.study.directories`). One command at a time per RUNS_DIR: the
sweep holds :func:`fsxlt.study.directories.writer_lock` while it runs.
"""

from __future__ import annotations

import os
import queue
import sys
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from fsxlt import __version__
from fsxlt.errors import FsxltError
from fsxlt.execution.config import SweepConfig
from fsxlt.execution.expansion import expand
from fsxlt.execution.heartbeat import watched
from fsxlt.execution.ray_executor import check_address, ray_module, run_ray
from fsxlt.execution.spec import Plan, RunSpec, check_eval_sets
from fsxlt.execution.worker import Outcome, die_with_parent, run_group
from fsxlt.fileio import atomic_write_json, check_output_dir

EXECUTORS = ("local", "ray")


@dataclass
class SweepStatus:
    """Where a sweep stands: the plan, what was already done and what is to run."""

    plan: Plan
    done: list[RunSpec] = field(default_factory=list)
    pending: list[tuple[RunSpec, str]] = field(default_factory=list)  # (run, why)
    replaced: list[tuple[RunSpec, str]] = field(default_factory=list)  # (run, what differs)
    versions: set[str] = field(default_factory=set)  # fsxlt versions of the done records
    cpu_threads: dict[int, int] = field(default_factory=dict)  # done CPU records per count

    def groups(self, workers: int = 1) -> list[list[RunSpec]]:
        """The pending runs by :attr:`RunSpec.group_key` (a worker's model load and
        tokenized data are shared in a group); with more ``workers`` than groups, the
        largest groups are split (:func:`split_groups`) so that every worker has work."""
        by_key: dict[tuple[str, str, str], list[RunSpec]] = {}
        for run, _ in self.pending:
            by_key.setdefault(run.group_key, []).append(run)
        return split_groups([by_key[key] for key in sorted(by_key)], workers)


def split_groups(groups: list[list[Any]], workers: int) -> list[list[Any]]:
    """Halve the largest group until there are ``workers`` groups or none can be split:
    one language's sweep runs on every local worker, each half loading the start and
    tokenizing its data once (a few seconds against minutes of training per run). A group
    of a multi regime trained once for all its languages is never split (its runs share
    that one training), nor is a group of one run."""
    groups = [list(group) for group in groups]
    while len(groups) < workers:
        splittable = [g for g in groups if len(g) > 1
                      and not any(getattr(run, "shared_languages", ()) for run in g)]
        if not splittable:
            break
        largest = max(splittable, key=len)
        at = groups.index(largest)
        half = (len(largest) + 1) // 2
        groups[at:at + 1] = [largest[:half], largest[half:]]
    return groups


@dataclass
class SweepResult:
    status: SweepStatus
    outcomes: list[Outcome] = field(default_factory=list)

    @property
    def failed(self) -> list[Outcome]:
        return [o for o in self.outcomes if not o.ok]

    @property
    def completed(self) -> list[Outcome]:
        return [o for o in self.outcomes if o.ok]

    @property
    def not_run(self) -> int:
        """Pending runs with no outcome (a worker died); the next start runs them."""
        return len(self.status.pending) - len(self.outcomes)


def sweep_status(config: SweepConfig, save_predictions: bool = False,
                 plan: Plan | None = None, replace: bool = False,
                 dry_run: bool = False) -> SweepStatus:
    """Expand the config (or take its ``plan``) and sort its runs into done and pending.

    Each pending run comes with the reason (:func:`fsxlt.study.runs.record_state`:
    ``missing``, ``corrupt``, ``error``; ``replace`` for a finished record of
    other settings, which is refused in one line unless ``replace``). With
    ``save_predictions`` a done run without its predictions file is pending
    again (``no-predictions``). ``dry_run``: a start that does not exist yet is
    named in ``plan.missing_starts`` instead of refused, and its runs are pending as
    ``no start``; every other missing input is in ``plan.gaps``
    (:func:`~fsxlt.execution.expansion.expand`).
    """
    from fsxlt.study.write_plan import plan_writes

    plan = plan if plan is not None else expand(config, dry_run)
    ready = [run for run in plan.runs if not plan.start_missing(run)]
    writes = plan_writes(ready, replace=replace, need_predictions=save_predictions)
    order = {id(run): index for index, run in enumerate(plan.runs)}
    pending = writes.pending + [(run, "no start") for run in plan.runs
                                if plan.start_missing(run)]
    pending.sort(key=lambda item: order[id(item[0])])
    return SweepStatus(plan, writes.done, pending, writes.replaced, writes.versions,
                       writes.cpu_threads)


def write_zero_shot(plan: Plan, replace: bool = False,
                    say: Callable[[str], None] | None = None,
                    on_record: Callable[[str], None] | None = None) -> None:
    """Copy each K=0 score from the checkpoint's record into RUNS_DIR (write-once: an
    identical record stays, another one is refused unless ``replace``, and each one
    replaced is named through ``say``, standard error by default). ``on_record`` receives
    each K=0 record's path, written now or before (a tracker sends each record once)."""
    from fsxlt.study.write_plan import check_zero_shot

    say = say or (lambda line: print(line, file=sys.stderr))
    wanted = [(zero, check_zero_shot(zero.record_path, zero.record, replace))
              for zero in plan.zero_shot]
    for zero, differ in wanted:
        if differ:
            say(f"replacing {zero.record_path} ({differ} differ)")
        if differ is not None:
            atomic_write_json(zero.record_path, zero.record)
        if on_record is not None:
            on_record(str(zero.record_path))


def check_threads(done: dict[int, int], threads: int | None, out: Any) -> None:
    """Refuse, in one line, a sweep that would add CPU records run with another torch
    thread count than its finished CPU records (``done``: records per count; ``threads``:
    the count its CPU runs will use, None: not known here, or not on a CPU). On a CPU the
    count changes a score's last digits and can turn a near-tie in model selection, and
    it is stated in every record, not in its identity, so a study keeps one count:
    ``--threads N`` continues with the records' own."""
    other = {count: n for count, n in done.items() if count != threads}
    if threads is None or not other:
        return
    counts = ", ".join(f"{n} with {count}" for count, n in sorted(other.items()))
    raise FsxltError(
        f"{out}: finished CPU records of this sweep ran with other torch thread counts "
        f"({counts}) than its runs now would ({threads}); CPU numerics depend on the count, "
        f"so a study keeps one: add --threads {max(other, key=other.get)} "
        "(docs/training.md#numerics-are-pinned)")


def _cpu_threads(executor: str, device: str, workers: int, threads: int | None,
                 groups: int) -> int | None:
    """The torch threads this sweep's CPU runs will use (local executor on the CPU), else
    None."""
    if executor != "local" or device not in ("cpu", "auto"):
        return None
    import torch

    if device == "auto" and torch.cuda.is_available():
        return None
    if workers <= 0:
        return threads or torch.get_num_threads()
    return threads or _default_threads(min(workers, max(groups, 1)))


def versions_note(versions: Iterable[str], what: str) -> str | None:
    """One line when records of ``versions`` (:func:`fsxlt.study.runs.record_version`)
    come from different fsxlt versions (or another version than this one), else None;
    numerics may change between versions."""
    found = sorted(set(versions))
    if not found or found == [__version__]:
        return None
    return (f"note: {what} written by fsxlt {', '.join(found)} (this is {__version__}); "
            "numerics may differ between versions")


# --------------------------------------------------------------------------- local

def _default_threads(workers: int) -> int:
    return max(1, (os.cpu_count() or 1) // max(1, workers))


@contextmanager
def torch_threads(threads: int | None) -> Iterator[None]:
    """``threads`` torch threads in this process while the block runs (None: as they are);
    CPU numerics depend on the count, so ``--threads`` holds with ``--workers 0`` too."""
    if threads is None:
        yield
        return
    import torch

    previous = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        yield
    finally:
        torch.set_num_threads(previous)


def _local_worker(slot: int, tasks: Any, results: Any, device: str, gpu: str | None,
                  threads: int, save_predictions: bool = False) -> None:
    if gpu is not None:
        os.environ["CUDA_VISIBLE_DEVICES"] = gpu
    orphaned = die_with_parent()
    import torch

    torch.set_num_threads(threads)
    try:
        while True:
            group = tasks.get()
            if group is None or orphaned():
                break
            run_group(group, device=device, on_result=results.put, should_stop=orphaned,
                      save_predictions=save_predictions)
    except KeyboardInterrupt:  # Ctrl-C reaches every worker: the sweep says it, once
        return
    results.put(("exit", slot))


def _run_local(groups: list[list[RunSpec]], on_result: Callable[[Outcome], None], *,
               workers: int, devices: Sequence[str] | None, device: str,
               threads: int | None, save_predictions: bool = False) -> None:
    if workers <= 0:
        with torch_threads(threads):
            for group in groups:
                run_group(group, device=device, on_result=on_result,
                          save_predictions=save_predictions)
        return
    import multiprocessing

    ctx = multiprocessing.get_context("spawn")
    tasks, results = ctx.Queue(), ctx.Queue()
    n = min(workers, len(groups))
    for group in groups:
        tasks.put(group)
    for _ in range(n):
        tasks.put(None)
    threads = threads or _default_threads(n)
    procs = []
    for slot in range(n):
        gpu = str(devices[slot % len(devices)]) if devices else None
        proc = ctx.Process(target=_local_worker, name=f"fsxlt-sweep-{slot}",
                           args=(slot, tasks, results, device, gpu, threads, save_predictions),
                           daemon=True)
        saved = os.environ.get("CUDA_VISIBLE_DEVICES")
        if gpu is not None:  # the child starts with it set, before anything loads CUDA
            os.environ["CUDA_VISIBLE_DEVICES"] = gpu
        try:
            proc.start()
        finally:
            if gpu is not None:
                if saved is None:
                    os.environ.pop("CUDA_VISIBLE_DEVICES", None)
                else:
                    os.environ["CUDA_VISIBLE_DEVICES"] = saved
        procs.append(proc)
    running = n
    try:
        while running:
            try:
                message = results.get(timeout=1.0)
            except queue.Empty:
                if not any(p.is_alive() for p in procs):
                    break  # every worker died without saying so (killed); records tell the rest
                continue
            if isinstance(message, tuple) and message[0] == "exit":
                running -= 1
            else:
                on_result(message)
    finally:
        for proc in procs:
            proc.join(timeout=5)
            if proc.is_alive():
                proc.terminate()


# --------------------------------------------------------------------------- the sweep

def check_out(config: SweepConfig) -> None:
    """What a sweep refuses of its ``out`` before it writes: an out that is, lies inside or
    holds its bucket store, that is no directory it can write, or a directory of the other
    kind; ``fsxlt sweep --dry-run`` refuses the same."""
    from fsxlt.study.directories import RUNS, check_apart, check_apart_from_models, check_claim

    for task in config.tasks:
        check_apart(config.out, task.buckets, config.source or "sweep config")
        check_apart_from_models(config.out, _models(task), "out")
    check_output_dir(config.out, "runs directory")
    check_claim(config.out, RUNS, "out")


def _models(task: Any) -> list[tuple[str, Any]]:
    """The model folders a task of a sweep reads, by config key: its start, the no-source
    encoder, each ICL arm's causal LM and sentence encoder, each LoRA arm's causal LM."""
    found: list[tuple[str, Any]] = [("start", task.start)]
    if task.no_source:
        found.append(("no_source_training.encoder", task.no_source.get("encoder")))
    for arm in (task.icl.arms if task.icl is not None else ()):
        found += [("icl model", arm.settings.model), ("icl encoder", arm.settings.encoder)]
    for arm in (task.lm_lora.arms if task.lm_lora is not None else ()):
        found.append(("lm_lora model", arm.settings.model))
    return found


def sweep_device(executor: str, device: str, gpus_per_task: float) -> str:
    """The device type the sweep's runs will run on: ``device`` as given, or for ``auto``
    a visible GPU (local) or the GPUs each Ray task asks for."""
    import torch

    if device != "auto":
        try:
            return torch.device(device).type
        except RuntimeError as err:
            raise FsxltError(f"invalid device {device!r}: {err}") from None
    if executor == "ray":
        return "cuda" if gpus_per_task > 0 else "cpu"
    return "cuda" if torch.cuda.is_available() else "cpu"


def resolve_precisions(config: SweepConfig, executor: str = "local", device: str = "auto",
                       gpus_per_task: float = 0.0) -> SweepConfig:
    """``config`` with every task's precision the one its runs use (records and
    identities name it), resolved for the device the runs will get
    (:func:`fsxlt.models.precision.resolve_precision`; a precision that device cannot run
    is refused here, in one line, before anything is written). ``auto`` for Ray tasks on
    GPUs that this machine cannot see is refused too: the driver cannot tell whether
    they run bf16, so the config or ``--precision`` must say."""
    import torch

    from fsxlt.models.precision import resolve_precision

    kind = sweep_device(executor, device, gpus_per_task)
    visible = kind != "cuda" or torch.cuda.is_available()

    def resolve(asked: str) -> str:
        if asked == "auto" and not visible:
            raise FsxltError("precision auto: this machine sees no GPU, so it cannot tell "
                             "whether the Ray workers' GPUs run bf16; say --precision bf16 "
                             "(A100, H100, L4 and newer) or fp32 (any GPU), or set "
                             "precision: in the sweep config")
        if not visible:  # bf16/fp16/fp32 asked for GPUs the workers have: checked there
            return asked
        return resolve_precision(asked, kind if device == "auto" else device)

    return config.with_precision(resolve)


def run_sweep(config: SweepConfig, *, executor: str = "local", workers: int = 1,
              devices: Sequence[str] | None = None, device: str = "auto",
              threads: int | None = None, address: str | None = None,
              gpus_per_task: float = 0.0, cpus_per_task: float = 1.0,
              progress: bool | None = None, save_predictions: bool = False,
              replace: bool = False, note: Callable[[str], None] | None = None,
              on_record: Callable[[str], None] | None = None) -> SweepResult:
    """Run every pending run of ``config``; return what happened.

    ``progress``: a bar on stderr with done / failed / remaining and an ETA
    (``None``: only when stderr is a terminal). ``save_predictions``: write
    every run's test predictions beside its record; finished runs that lack
    them run again. ``replace``: rerun runs whose finished record has other
    settings (else the sweep refuses them). ``note`` receives one-line notes
    (records replaced, finished records from other fsxlt versions). ``on_record``
    receives the path of each record finished in this sweep, once it is written (a
    tracker, :mod:`fsxlt.report.trackers`).
    """
    from fsxlt.study.directories import RUNS, claim, writer_lock
    from fsxlt.study.write_plan import check_zero_shot

    if executor not in EXECUTORS:
        raise FsxltError(f"unknown executor {executor!r}; valid: {', '.join(EXECUTORS)}")
    if gpus_per_task < 0 or cpus_per_task <= 0:
        raise FsxltError("--gpus-per-task must be >= 0 and --cpus-per-task > 0")
    if executor == "ray":
        ray_module()  # refused before anything is written, not after the K=0 records
        check_address(address)
    check_out(config)
    config = resolve_precisions(config, executor, device, gpus_per_task)
    plan = expand(config)  # every input checked before anything is written
    status = sweep_status(config, save_predictions, plan, replace)  # refusals: nothing written
    for zero in plan.zero_shot:
        check_zero_shot(zero.record_path, zero.record, replace)
    check_eval_sets([run for run, _ in status.pending if isinstance(run, RunSpec)])
    if status.pending:
        check_threads(status.cpu_threads, _cpu_threads(
            executor, device, workers, threads, len(status.groups(workers))), config.out)
    claim(config.out, RUNS, "out")
    say = note or (lambda line: print(line, file=sys.stderr))
    with writer_lock(config.out, RUNS):
        status = sweep_status(config, save_predictions, plan, replace)  # under the lock
        for run, what in status.replaced:
            say(f"replacing {run.record_path} ({what} differ)")
        mixed = versions_note(status.versions,
                              f"{len(status.done)} finished records of this sweep were")
        if mixed:
            say(mixed)
        for line in status.plan.notes:
            say(line)
        write_zero_shot(status.plan, replace, say, on_record)
        result = SweepResult(status)
        options = {"executor": executor, "workers": workers, "devices": devices,
                   "device": device, "threads": threads, "address": address,
                   "gpus_per_task": gpus_per_task, "cpus_per_task": cpus_per_task,
                   "progress": progress, "save_predictions": save_predictions,
                   "on_record": on_record}
        if config.stop_early is None:
            from fsxlt.execution.stopping import clear_stops

            _execute(status, result, say, config.out, **options)
            clear_stops(plan.runs)
        else:
            _execute_in_waves(config, status, result, say, replace=replace, **options)
    return result


def _execute_in_waves(config: SweepConfig, status: SweepStatus, result: SweepResult,
                      say: Callable[[str], None], *, replace: bool, **options: Any) -> None:
    """``stop_early``: the pending runs wave by wave (:func:`fsxlt.execution.stopping.wave`),
    each cell judged after each wave; stops once no open cell has runs left, or a wave
    ends with a run failed or not run (the prefix would have a hole; start it again).
    ``result.status.pending`` ends as the runs attempted, so what the rule spared is
    never counted as lost."""
    from dataclasses import replace as replaced

    from fsxlt.execution.stopping import cells, wave, write_stops

    rule, plan = config.stop_early, status.plan
    by_cell = cells(plan.runs)
    attempted: list[tuple[RunSpec, str]] = []
    first = status
    while True:
        chosen, decisions = wave(rule, status.pending, plan.runs)
        write_stops(rule, decisions, by_cell, say)
        if not chosen:
            break
        open_cells = sum(not d.stop for d in decisions.values())
        say(f"stop_early: {len(chosen)} runs in the next wave ({open_cells} cells open)")
        before = len(result.outcomes)
        _execute(replaced(status, pending=chosen), result, say, config.out, **options)
        attempted += chosen
        new = result.outcomes[before:]
        if len(new) < len(chosen) or any(not outcome.ok for outcome in new):
            break
        status = sweep_status(config, options["save_predictions"], plan, replace)
    if not chosen and status.pending:
        say(f"stop_early: {len(status.pending)} planned runs not needed (their cells "
            "stopped)")
    result.status = replaced(first, pending=attempted)


def _execute(status: SweepStatus, result: SweepResult, say: Callable[[str], None],
             out: Any, *, executor: str, workers: int,
             devices: Sequence[str] | None, device: str, threads: int | None,
             address: str | None, gpus_per_task: float, cpus_per_task: float,
             progress: bool | None, save_predictions: bool,
             on_record: Callable[[str], None] | None = None) -> None:
    """Hand the pending groups to the executor, with a progress bar; outcomes into ``result``."""
    groups = status.groups(workers if executor == "local" else 1)
    if not groups:
        return
    records = {run.id: run.record_path for run, _ in status.pending}
    from tqdm.auto import tqdm

    on_terminal = sys.stderr.isatty() if progress is None else progress
    bar = tqdm(total=len(status.pending), desc="sweep", unit="run", file=sys.stderr,
               disable=not on_terminal, dynamic_ncols=True)
    counts = {"done": 0, "failed": 0}

    def on_result(outcome: Outcome) -> None:
        result.outcomes.append(outcome)
        counts["done" if outcome.ok else "failed"] += 1
        if not outcome.ok:
            bar.write(f"failed {outcome.run_id}: {outcome.error}", file=sys.stderr)
        remaining = len(status.pending) - counts["done"] - counts["failed"]
        bar.set_postfix_str(f"done {counts['done']}, failed {counts['failed']}, "
                            f"remaining {remaining}", refresh=False)
        bar.update(1)
        if beat is not None:
            beat.update(outcome.ok)
        if outcome.ok and on_record is not None:
            on_record(records[outcome.run_id])

    def tell(line: str) -> None:
        with tqdm.external_write_mode(file=sys.stderr):
            say(line)

    with watched("sweep", len(status.pending), say=say, on_terminal=on_terminal) as beat:
        try:
            if executor == "local":
                _run_local(groups, on_result, workers=workers, devices=devices,
                           device=device, threads=threads, save_predictions=save_predictions)
            else:
                run_ray(groups, on_result, out=str(out), address=address,
                        gpus_per_task=gpus_per_task, cpus_per_task=cpus_per_task,
                        device=device, save_predictions=save_predictions, say=tell)
        finally:
            bar.close()
