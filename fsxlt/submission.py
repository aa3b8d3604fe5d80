"""Predictions for a file to predict, written in its benchmark's submission format.

``fsxlt adapt --predict FILE`` and a sweep's ``predict: FILE`` predict the
file with the model each run selected and write the result into
``submission/`` beside the run records (one arm's files, ready to be zipped).
The task YAML's ``submission`` names the task as its benchmark spells it and
``submission_format`` picks the format:

``fewclue``
    One file per task and split, ``<task>_predict_<x>.json`` with ``x`` in
    ``0 1 2 3 4 all`` (``ocnlif``, ``bustm``, ``chidf``, ...): one JSON object
    per line, the example's ``id`` as the input file gives it and its
    ``label`` (ChID: ``answer``, the candidate's position as a number).
``xglue``
    ``<bucket>/<TASK>/<lang>.prediction``: one predicted label per line, the
    i-th line for the i-th example of the input (tagging: one tag per word
    line and a blank line between sentences, as the input has them).
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
from fsxlt.runs import SUBMISSION_DIR
from fsxlt.tasks import TaskSpec

_LINE = re.compile(r":(\d+)$")


def _bucket_name(bucket: dict[str, Any]) -> str:
    name = bucket.get("name") or (f"{bucket['index']:02d}" if bucket.get("index") is not None
                                  else None)
    if name is None:
        raise FsxltError("a submission file names its split; adapt on a bucket of a set")
    return name


def submission_file(task: TaskSpec, bucket: dict[str, Any], language: str = "") -> str:
    """The file (relative to ``submission/``) of a run on ``bucket`` (a record's block)."""
    name = _bucket_name(bucket)
    if task.submission_format == "xglue":
        return f"{name}/{task.submission or task.name}/{language}.prediction"
    split = name if not name.isdigit() else str(int(name))
    return f"{task.submission or task.name}_predict_{split}.json"


def read_unlabelled(path: str | Path, task: TaskSpec,
                    language: str | None = None) -> tuple[list[Example], list[Any]]:
    """The examples of a file to predict and the id each gives (FewCLUE; else line numbers).

    ``language`` picks its rows from a file that holds every language (XNLI).
    Labels are not read where the format allows files without them (their
    examples carry the task's first label as a stand-in that nothing reads).
    """
    if task.submission is None:
        raise FsxltError(f"task {task.name} has no submission format (the task YAML's "
                         "'submission' key)")
    path = Path(path)
    if task.is_tagging:  # XGLUE's tagging test files carry tags; they are not used
        examples = read_examples(path, task, language=language)
        return examples, [ex.id for ex in examples]
    examples = read_examples(path, task, labelled=False, language=language)
    placeholder = task.labels[0]
    examples = [replace(ex, label=placeholder) for ex in examples]
    if task.submission_format != "fewclue":
        return examples, [ex.id for ex in examples]
    ids = source_ids(path, task)
    lines = [int(_LINE.search(ex.id).group(1)) for ex in examples]
    return examples, [ids.get(line) for line in lines]


def render_submission(task: TaskSpec, ids: Sequence[Any], labels: Sequence[Any]) -> str:
    """The text of a submission file (see the module docstring)."""
    if len(ids) != len(labels):
        raise ValueError(f"{len(ids)} ids but {len(labels)} predictions")
    if task.submission_format == "xglue":
        if task.is_tagging:
            return "\n\n".join("\n".join(tags) for tags in labels) + "\n"
        return "".join(f"{label}\n" for label in labels)
    rows = []
    for example_id, label in zip(ids, labels, strict=True):
        if task.is_multiple_choice:
            rows.append({"id": example_id, "answer": int(label)})
        else:
            rows.append({"id": example_id, "label": label})
    return "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows)


def write_submission(directory: str | Path, task: TaskSpec, record: dict[str, Any],
                     ids: Sequence[Any]) -> Path:
    """Move a record's ``predict`` labels into its submission file under ``directory``
    (the folder of the run records): ``directory/submission/<file>``."""
    name = submission_file(task, record["bucket"], record.get("language", ""))
    path = Path(directory) / SUBMISSION_DIR / name
    atomic_write_text(path, render_submission(task, ids, record.pop("predict")))
    record["submission"] = {"file": f"{SUBMISSION_DIR}/{name}", "n": len(ids)}
    return path
