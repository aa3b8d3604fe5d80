"""What a command does with each run's record path: skip it (done with these settings),
run it, or replace a finished record of other settings (only when asked); and whether a
K=0 record is written. The write-once rule of :mod:`fsxlt.study.runs`, applied to a list
of planned runs (a sweep's, ``fsxlt adapt``'s, ``fsxlt icl``'s, ``fsxlt lm-adapt``'s).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fsxlt.errors import FsxltError
from fsxlt.study.runs import (
    _foreign,
    _our_format,
    _state,
    differences,
    not_a_record,
    predictions_path,
    read_record,
    record_version,
    refusal,
)


@dataclass
class WritePlan:
    """What a command will do with each record path: run, skip (done) or replace."""

    done: list[Any] = field(default_factory=list)
    pending: list[tuple[Any, str]] = field(default_factory=list)  # (run, why)
    replaced: list[tuple[Any, str]] = field(default_factory=list)  # (run, what differs)
    versions: set[str] = field(default_factory=set)  # fsxlt versions of the done records
    cpu_threads: dict[int, int] = field(default_factory=dict)  # done CPU records per count


def plan_messages(writes: Any) -> list[tuple[str, bool]]:
    """What a writer says of its write plan (:func:`plan_writes`): each run found done
    (``False``: standard output) and each record it replaces (``True``: standard error)."""
    said = [(f"{run.id}: already done with these settings -> {run.record_path}", False)
            for run in writes.done]
    return said + [(f"replacing {run.record_path} ({what} differ)", True)
                   for run, what in writes.replaced]


def plan_writes(runs: Sequence[Any], *, replace: bool = False,
                need_predictions: bool = False) -> WritePlan:
    """Sort runs (anything with ``task``, ``record_path``, ``config_hash`` and ``identity``)
    by the write rule (a record scored with another metric than its task's now counts as
    other settings); a finished record of other settings refuses the lot in one line unless
    ``replace``. ``need_predictions``: a done run without its predictions file runs again.
    """

    result = WritePlan()
    clashes: list[tuple[Any, dict[str, Any] | None]] = []  # (run, what is there)
    metrics: dict[str, str] = {}
    for run in runs:  # once per task: a task YAML's spec is parsed, not looked up
        if run.task not in metrics:
            metrics[run.task] = _task_of(run).metric
    for run in runs:
        _check_place(run.record_path)
        record = read_record(run.record_path)  # each record read once
        state = _state(Path(run.record_path), record, run.config_hash, metrics[run.task])
        if state == "done" and need_predictions and not predictions_path(
                run.record_path).is_file():
            state = "no-predictions"
        if state == "done" and _lost_submission(run.record_path, record or {}):
            state = "no-submission"  # a deleted submission file: the run makes it again
        if state == "done":
            result.done.append(run)
            result.versions.add(record_version(record or {}))
            threads = (record or {}).get("torch_threads")
            if (record or {}).get("device") == "cpu" and isinstance(threads, int):
                result.cpu_threads[threads] = result.cpu_threads.get(threads, 0) + 1
        elif state in ("different", "foreign"):
            clashes.append((run, record))
        else:
            result.pending.append((run, state))
    if clashes and not replace:
        first, record = clashes[0]
        raise FsxltError(refusal(first.record_path, record, first.identity, len(clashes),
                                 metrics[first.task]))
    for run, record in clashes:
        what = ", ".join(differences(record, run.identity, metrics[run.task])) \
            if record is not None and _our_format(record) else "format"
        result.replaced.append((run, what))
        result.pending.append((run, "replace"))
    return result


def _lost_submission(path: str | Path, record: dict[str, Any]) -> bool:
    """Whether a finished record names a submission file that is not there (deleted)."""
    block = record.get("submission")
    return isinstance(block, dict) and isinstance(block.get("file"), str) \
        and not (Path(path).parent / block["file"]).is_file()


def _check_place(path: str | Path) -> None:
    """Refuse, before any training, a record path that is a folder, or lies below a file (a
    folder of the layout that is a file): named as the record or the folder, not as the
    temporary file a write would fail on."""
    if Path(path).is_dir():
        raise FsxltError(f"{path}: a folder where the run's record file belongs; move it away")
    for parent in Path(path).parents:
        if parent.exists():
            if not parent.is_dir():
                raise FsxltError(f"{parent}: a file where the runs directory needs a folder "
                                 f"(for {path}); move it away")
            return


def _task_of(run: Any) -> Any:
    """A run's task spec: its own (a task YAML's) where it has one, else by its name."""
    from fsxlt.tasks import get_task

    spec = getattr(run, "task_spec", None)
    return spec if spec is not None else get_task(run.task)


def check_zero_shot(path: str | Path, record: dict[str, Any], replace: bool = False
                    ) -> str | None:
    """Whether the K=0 record at ``path`` must be written: ``None`` (identical: leave it),
    ``""`` (missing, or an error record: write it) or, with ``replace``, what differs in
    the one it replaces. Anything else there (another finished K=0 record, another JSON
    value, bytes that are not JSON) is refused in one line unless ``replace``."""
    from fsxlt.fileio import dumps_json

    path = Path(path)
    _check_place(path)
    old = read_record(path)
    if not path.exists() or (old is not None and old.get("status") == "error"):
        return ""
    if old is not None and dumps_json(old) == dumps_json(record):
        return None
    if old is None or old.get("format") != record.get("format"):
        what = not_a_record(path) if old is None else _foreign(old)
        differ = "format"
    else:
        what = "a zero-shot record of " + (
            "another start" if old.get("start") != record.get("start") else "the same start")
        differ = ", ".join(sorted(key for key in set(old) | set(record)
                                  if old.get(key) != record.get(key)))
    if not replace:
        raise FsxltError(f"{path}: {what} is there ({differ} differ); pass --replace to "
                         "replace it, or write to another runs directory")
    return differ
