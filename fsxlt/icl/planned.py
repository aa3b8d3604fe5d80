"""What a planned run of a causal LM is, prompted (``fsxlt icl``: :class:`fsxlt.icl.run.IclRun`)
or LoRA-tuned (``fsxlt lm-adapt``: :class:`fsxlt.icl.tuning_plan.LmRun`).

Both are frozen dataclasses of their own fields (the bucket, the data files, the record's
path, the identity); :class:`CausalLmRun` gives them what they derive alike from those:
the task's spec (a task YAML's own, else the registry's), the identity's hash that
``fsxlt.study.write_plan.plan_writes`` compares with a record's, the run's id and its arm
(the folder its record is in).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from fsxlt.errors import FsxltError
from fsxlt.study.runs import identity_hash
from fsxlt.tasks import TaskSpec, get_task


def check_arm_name(arm: str | None, prefix: str, forbidden: str, what: str) -> None:
    """An arm name of the causal LM's runs: starting with ``prefix``, none of ``forbidden``
    (the characters that other arms' names or record paths use as separators)."""
    if arm is not None and (not arm.startswith(prefix) or any(c in arm for c in forbidden)):
        shown = ", ".join(forbidden.replace(" ", ""))
        raise FsxltError(f"{what} arm name starts with {prefix} and has no {shown} or space; "
                         f"got {arm!r}")


class CausalLmRun:
    """The derived facts of a planned causal-LM run (module docstring); a subclass is a
    dataclass with the fields named here."""

    task: str
    language: str
    k: int
    name: str
    record_path: str
    identity: dict[str, Any]
    spec: TaskSpec | None

    @property
    def task_spec(self) -> TaskSpec:
        return self.spec if self.spec is not None else get_task(self.task)

    @property
    def config_hash(self) -> str:
        return identity_hash(self.identity)

    @property
    def reading(self) -> Any:
        """How its dev and test files are read: its bucket set's reading, which its identity
        holds where it is not the default (:mod:`fsxlt.data.readings`)."""
        from fsxlt.data.readings import reading_of

        return reading_of(self.identity)

    @property
    def id(self) -> str:
        return f"{self.task}/{self.language}/k{self.k}/{self.name}"

    @property
    def arm(self) -> str:
        return Path(self.record_path).parent.name
