"""A sweep's runs of the causal LM: the ICL arms of a task on a cell's bucket set and at
K=0, and its LoRA arms (``lm_lora``) on the cell's bucket set.

An ICL run is an :class:`~fsxlt.icl.run.IclRun` built by :func:`fsxlt.icl.plan.icl_runs`
(the identity and record path ``fsxlt icl`` gives the same run), a LoRA run an
:class:`~fsxlt.icl.tuning_plan.LmRun` built by :func:`fsxlt.icl.tuning_plan.lm_plan`
(as ``fsxlt lm-adapt --bucket SET --data-dir DATA_DIR`` builds it). Each is wrapped
in an :class:`IclSweepRun` or :class:`LmSweepRun` that answers what a sweep asks of
any run (id, arm, group, writer), so resume, write-once, ``--dry-run``,
``--replace`` and the status counts treat it as they treat an adapting run. The
buckets are the cell's (:func:`fsxlt.sampling.set_files.set_files`, each
hash-checked against its manifest): the adapting arms' buckets, bucket for bucket.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from fsxlt.execution.config import TaskPlan
from fsxlt.execution.spec import Hashes, plan_precision, sweep_writer
from fsxlt.sampling.set_files import SetFiles
from fsxlt.sampling.store import bucket_name


@dataclass(frozen=True)
class CausalLmSweepRun:
    """One run of the causal LM in a sweep: the run (identity, record path, bucket and test
    files), its settings, its batch size and writer."""

    run: Any                  # fsxlt.icl.run.IclRun or fsxlt.icl.tuning_plan.LmRun
    settings: Any             # their IclSettings or LmSettings
    batch_size: int
    writer: str
    sweep_name: str = ""
    planned_buckets: tuple[int, ...] = ()  # the cell's bucket indexes the sweep runs

    @property
    def task(self) -> str:
        return self.run.task

    @property
    def language(self) -> str:
        return self.run.language

    @property
    def k(self) -> int:
        return self.run.k

    @property
    def index(self) -> int:
        return self.run.index

    @property
    def record_path(self) -> str:
        return self.run.record_path

    @property
    def identity(self) -> dict[str, Any]:
        return self.run.identity

    @property
    def config_hash(self) -> str:
        return self.run.config_hash

    @property
    def bucket_name(self) -> str:
        return self.run.name

    @property
    def bucket_path(self) -> str:
        return self.run.bucket_path

    @property
    def test_path(self) -> str:
        return self.run.test_path

    @property
    def arm(self) -> str:
        """The record's folder: the arm's name, with ``~strategy`` for a strategy's set."""
        return Path(self.run.record_path).parent.name

    @property
    def method(self) -> str:
        return self.settings.arm_name()

    @property
    def start(self) -> str:
        """No start: nothing has to be source-trained before an ICL run."""
        return ""

    @property
    def task_spec(self) -> Any:
        return self.run.task_spec

    @property
    def id(self) -> str:
        return f"{self.task}/{self.language}/k{self.k}/{self.arm}/{self.bucket_name}"


class IclSweepRun(CausalLmSweepRun):
    """One ICL run of a sweep (``fsxlt.icl.run.IclRun``, prompted as ``IclSettings`` say)."""

    @property
    def group_key(self) -> tuple[str, str, str, str]:
        """ICL runs of one (task, language, causal LM, test set) share a worker: the model
        loads once."""
        model = f"icl:{self.settings.model}:{self.settings.gguf_file or ''}"
        return (self.task, self.language, model, self.test_path)


class LmSweepRun(CausalLmSweepRun):
    """One LoRA run of a sweep (``fsxlt.icl.tuning_plan.LmRun``, trained as ``LmSettings``
    say)."""

    @property
    def group_key(self) -> tuple[str, str, str, str]:
        """LoRA runs of one (task, language, causal LM, arm) share a worker: the model loads
        once and gets the arm's adapters once (another arm's adapters are another wrap)."""
        model = f"lm:{self.settings.model}:{self.settings.gguf_file or ''}"
        return (self.task, self.language, model, self.arm.partition("~")[0])


def icl_cell_runs(plan: TaskPlan, lang: str, k: int, files: SetFiles, test: Path, out: Path,
                  hashes: Hashes, sweep: str) -> list[IclSweepRun]:
    """Every ICL arm of ``plan`` on the buckets of one cell (the adapting arms' buckets)."""
    from fsxlt.icl.plan import BucketRef

    refs = [BucketRef(k, index, name or bucket_name(index), path, hashes.bucket(path),
                      files.strategy) for index, name, path, _ in files.buckets]
    return _arm_runs(plan, lang, test, out, hashes, sweep, refs, files.reading)


def icl_zero_shot_runs(plan: TaskPlan, lang: str, test: Path, out: Path, hashes: Hashes,
                       sweep: str) -> list[IclSweepRun]:
    """One K=0 run (zero-shot prompting) per ICL arm of ``plan`` (unless ``zero_shot: false``)."""
    if plan.icl is None or not plan.icl.zero_shot:
        return []
    return _arm_runs(plan, lang, test, out, hashes, sweep, None)


def _arm_runs(plan: TaskPlan, lang: str, test: Path, out: Path, hashes: Hashes, sweep: str,
              refs: list[Any] | None, reading: Any = None) -> list[IclSweepRun]:
    from fsxlt.icl.plan import icl_runs

    if plan.icl is None:
        return []
    spec = plan.spec  # a task YAML's own icl prompts, not a built-in namesake's
    writer = sweep_writer(sweep)
    precision = plan_precision(plan)
    runs = []
    for arm in plan.icl.arms:
        settings = replace(arm.settings, precision=precision)
        runs += [IclSweepRun(run, settings, arm.batch_size, writer, sweep)
                 for run in icl_runs(spec, lang, settings, out, test, refs, digest=hashes.file,
                                     reading=reading)]
    return runs


def lm_cell_runs(plan: TaskPlan, lang: str, files: SetFiles, out: Path, hashes: Hashes,
                 sweep: str) -> list[LmSweepRun]:
    """Every LoRA arm of ``plan`` on the buckets of one cell: the runs ``fsxlt lm-adapt
    --bucket SET --data-dir DATA_DIR`` plans for the set, less the buckets the sweep leaves
    out (``n_buckets``)."""
    from fsxlt.icl.tuning_plan import lm_plan

    if plan.lm_lora is None or not files.buckets:
        return []
    wanted = {str(path) for _, _, path, _ in files.buckets}
    writer = sweep_writer(sweep)
    predict = Path(plan.predict.replace("{lang}", lang)) if plan.predict else None
    data_dir = Path(plan.data_dir) if plan.data_dir else None
    return [LmSweepRun(run, run.settings, arm.batch_size, writer, sweep)  # resolved settings
            for arm in plan.lm_lora.arms
            for run in lm_plan(plan.spec, lang, files.directory, out,
                               replace(arm.settings, precision=plan_precision(plan)),
                               data_dir=data_dir, predict=predict, digest=hashes.file)
            if run.bucket_path in wanted]
