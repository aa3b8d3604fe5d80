"""A sweep's ICL runs: the ICL arms of a task on a cell's bucket set, and at K=0.

Each is an :class:`~fsxlt.icl.run.IclRun` built by :func:`fsxlt.icl.run.icl_runs`
(the identity and record path ``fsxlt icl`` gives the same run), wrapped in an
:class:`IclSweepRun` that answers what a sweep asks of any run (id, arm,
group, writer), so resume, write-once, ``--dry-run``, ``--replace`` and the
status counts treat it as they treat an adapting run. The buckets are the
cell's (:func:`fsxlt.sampling.set_files.set_files`, each hash-checked against
its manifest): the adapting arms' buckets, bucket for bucket.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fsxlt.execution.config import TaskPlan
from fsxlt.execution.spec import Hashes, sweep_writer
from fsxlt.sampling.set_files import SetFiles
from fsxlt.sampling.store import bucket_name


@dataclass(frozen=True)
class IclSweepRun:
    """One ICL run of a sweep: the run (``fsxlt.icl.run.IclRun``: identity, record path,
    bucket and test files), how it prompts (``IclSettings``), its batch size and writer."""

    run: Any                  # fsxlt.icl.run.IclRun
    settings: Any             # fsxlt.icl.run.IclSettings
    batch_size: int
    writer: str
    sweep_name: str = ""

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

    @property
    def group_key(self) -> tuple[str, str, str, str]:
        """ICL runs of one (task, language, causal LM, test set) share a worker: the model
        loads once."""
        model = f"icl:{self.settings.model}:{self.settings.gguf_file or ''}"
        return (self.task, self.language, model, self.test_path)


def icl_cell_runs(plan: TaskPlan, lang: str, k: int, files: SetFiles, test: Path, out: Path,
                  hashes: Hashes, sweep: str) -> list[IclSweepRun]:
    """Every ICL arm of ``plan`` on the buckets of one cell (the adapting arms' buckets)."""
    from fsxlt.icl.run import BucketRef

    refs = [BucketRef(k, index, name or bucket_name(index), path, hashes.bucket(path),
                      files.strategy) for index, name, path, _ in files.buckets]
    return _arm_runs(plan, lang, test, out, hashes, sweep, refs)


def icl_zero_shot_runs(plan: TaskPlan, lang: str, test: Path, out: Path, hashes: Hashes,
                       sweep: str) -> list[IclSweepRun]:
    """One K=0 run (zero-shot prompting) per ICL arm of ``plan`` (unless ``zero_shot: false``)."""
    if plan.icl is None or not plan.icl.zero_shot:
        return []
    return _arm_runs(plan, lang, test, out, hashes, sweep, None)


def _arm_runs(plan: TaskPlan, lang: str, test: Path, out: Path, hashes: Hashes, sweep: str,
              refs: list[Any] | None) -> list[IclSweepRun]:
    from fsxlt.icl.run import icl_runs

    if plan.icl is None:
        return []
    spec = plan.spec  # a task YAML's own icl prompts, not a built-in namesake's
    writer = sweep_writer(sweep)
    return [IclSweepRun(run, arm.settings, arm.batch_size, writer, sweep)
            for arm in plan.icl.arms
            for run in icl_runs(spec, lang, arm.settings, out, test, refs, digest=hashes.file)]
