"""Predictions for an unlabelled file, written in FewCLUE's submission format.

FewCLUE's leaderboard takes one file per task and split, named
``<task>_predict_<x>.json`` with ``x`` in ``0 1 2 3 4 all`` (the task part as
the benchmark spells it: ``ocnlif``, ``bustm``, ``chidf``, ...; the task
YAML's ``submission`` key), holding one JSON object per line: the example's
``id`` as the input file gives it and its ``label`` (ChID: ``answer``, the
candidate's position as a number).

``fsxlt adapt --predict FILE`` and a sweep's ``predict: FILE`` write such a
file for each run, from the model the run selected, into ``submission/``
beside the run records (``RUNS/<task>/zh/k32/full-nosource/submission/``):
the folder holds one arm's files, ready to be zipped.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from fsxlt.data import Example, read_examples, source_ids
from fsxlt.errors import FsxltError
from fsxlt.fileio import atomic_write_text
from fsxlt.tasks import TaskSpec

_LINE = re.compile(r":(\d+)$")


def submission_file(task: TaskSpec, bucket: dict[str, Any]) -> str:
    """The file name for a run on ``bucket`` (a record's bucket block): split 00 -> ``_0``."""
    name = bucket.get("name") or (f"{bucket['index']:02d}" if bucket.get("index") is not None
                                  else None)
    if name is None:
        raise FsxltError("a submission file names its split; adapt on a bucket of a set")
    split = name if not name.isdigit() else str(int(name))
    return f"{task.submission or task.name}_predict_{split}.json"


def read_unlabelled(path: str | Path, task: TaskSpec) -> tuple[list[Example], list[Any]]:
    """The examples of a file to predict (labels not read) and the id each line gives.

    The examples carry the task's first label as a stand-in, so that they
    encode like labelled ones; nothing reads it.
    """
    path = Path(path)
    examples = read_examples(path, task, labelled=False)
    ids = source_ids(path, task)
    placeholder = task.labels[0]
    lines = [int(_LINE.search(ex.id).group(1)) for ex in examples]
    return ([replace(ex, label=placeholder) for ex in examples],
            [ids.get(line) for line in lines])


def render_submission(task: TaskSpec, ids: Sequence[Any], labels: Sequence[str]) -> str:
    """One ``{"id": ..., "label": ...}`` line per example (multiple choice: ``answer``)."""
    if len(ids) != len(labels):
        raise ValueError(f"{len(ids)} ids but {len(labels)} predictions")
    rows = []
    for example_id, label in zip(ids, labels, strict=True):
        if task.is_multiple_choice:
            rows.append({"id": example_id, "answer": int(label)})
        else:
            rows.append({"id": example_id, "label": label})
    return "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows)


SUBMISSION_DIR = "submission"


def write_submission(directory: str | Path, task: TaskSpec, record: dict[str, Any],
                     ids: Sequence[Any]) -> Path:
    """Move a record's ``predict`` labels into its submission file under ``directory``
    (the folder of the run records): ``directory/submission/<task>_predict_<x>.json``."""
    path = Path(directory) / SUBMISSION_DIR / submission_file(task, record["bucket"])
    atomic_write_text(path, render_submission(task, ids, record.pop("predict")))
    record["submission"] = {"file": f"{SUBMISSION_DIR}/{path.name}", "n": len(ids)}
    return path
