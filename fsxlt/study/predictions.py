"""Per-example test predictions saved beside a run record, for the analyses.

``fsxlt adapt --save-predictions``, ``fsxlt sweep --save-predictions`` and
``fsxlt evaluate --save-predictions --out FILE.json`` write, next to their
JSON record ``X.json``, a file ``X.predictions.jsonl`` (atomically):

- line 1, the header: ``format`` (``fsxlt-predictions/1``), ``task``,
  ``language``, ``kind`` (the task's: classification, tagging, generation, ...),
  ``labels``, ``split``, ``n`` (examples), ``data`` (content hash of the examples)
  and ``model`` (what predicted: zero-shot checkpoint, adapt or icl run);
- then one line per example in the split's order: ``id``, ``gold`` and
  ``predicted`` (label names); for tagging ``gold`` and ``predicted`` are
  lists with one tag per word and ``tokens`` holds the words; for generation
  they are texts (the target and the generated text, as generated: newlines
  kept) and ``source`` holds the input text.

The zero-shot predictions that the gains and confusion analyses compare
against are found by name: ``RUNS/<task>/<lang>/k0/zero-shot-test.predictions.jsonl``,
what ``fsxlt evaluate CKPT --save-predictions --out RUNS/<task>/<lang>/k0/zero-shot-test.json``
writes.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fsxlt.data import Example, GenerationExample, QAExample, TaggedSentence
from fsxlt.errors import DataFormatError, FsxltError
from fsxlt.fileio import atomic_write_text, dumps_jsonl, read_json, text_lines
from fsxlt.study.runs import PREDICTIONS_SUFFIX as SUFFIX
from fsxlt.study.runs import ZERO_SHOT_STEM, predictions_path, record_path
from fsxlt.study.runs import zero_shot_predictions_path as zero_shot_path

PREDICTIONS_FORMAT = "fsxlt-predictions/1"


@dataclass
class Predictions:
    """A predictions file in memory: its header and one row per example."""

    header: dict[str, Any]
    rows: list[dict[str, Any]]
    path: Path | None = None

    @property
    def kind(self) -> str:
        return str(self.header["kind"])

    @property
    def labels(self) -> list[str]:
        return list(self.header["labels"])

    def gold(self) -> list[Any]:
        return [row["gold"] for row in self.rows]

    def predicted(self) -> list[Any]:
        return [row["predicted"] for row in self.rows]


def prediction_rows(examples: Sequence[Example], predicted: Sequence[Any]) -> list[dict]:
    """One row per example: id, gold, predicted (and the words, for tagging; the source
    text, for generation)."""
    if len(examples) != len(predicted):
        raise ValueError(f"{len(examples)} examples but {len(predicted)} predictions")
    rows = []
    for example, guess in zip(examples, predicted, strict=True):
        if isinstance(example, QAExample):
            rows.append({"id": example.id, "question_id": example.question_id,
                         "gold": list(example.answers), "predicted": guess})
        elif isinstance(example, GenerationExample):
            if not isinstance(guess, str):
                raise ValueError(f"{example.id}: a generated text must be a string")
            rows.append({"id": example.id, "source": example.source, "gold": example.target,
                         "predicted": guess})
        elif isinstance(example, TaggedSentence):
            rows.append({"id": example.id, "tokens": list(example.tokens),
                         "gold": list(example.tags), "predicted": list(guess)})
        else:
            rows.append({"id": example.id, "gold": example.label, "predicted": guess})
    return rows


def write_predictions(path: str | Path, examples: Sequence[Example], predicted: Sequence[Any],
                      *, task: Any, language: str, split: str, model: dict[str, Any],
                      data_sha256: str | None = None,
                      extras: Sequence[dict[str, Any]] | None = None) -> Path:
    """Atomically write a predictions file (header line, then one line per example);
    ``extras``: per example, more fields for its line (an ICL run's log-likelihoods)."""
    atomic_write_text(path, predictions_text(examples, predicted, task=task, language=language,
                                             split=split, model=model,
                                             data_sha256=data_sha256, extras=extras))
    return Path(path)


def predictions_text(examples: Sequence[Example], predicted: Sequence[Any], *, task: Any,
                     language: str, split: str, model: dict[str, Any],
                     data_sha256: str | None = None,
                     extras: Sequence[dict[str, Any]] | None = None) -> str:
    """A predictions file's text (:func:`write_predictions`)."""
    header = {"format": PREDICTIONS_FORMAT, "task": task.name, "language": language,
              "kind": task.kind, "labels": list(task.labels), "split": split,
              "n": len(examples), "data": data_sha256, "model": model}
    rows = prediction_rows(examples, predicted)
    if extras is not None:
        rows = [{**row, **extra} for row, extra in zip(rows, extras, strict=True)]
    return dumps_jsonl([header, *rows])


def read_predictions(path: str | Path, hint: str = "") -> Predictions:
    """Read a predictions file; a missing file is an error that says what to run (``hint``)."""
    path = Path(path)
    if not path.is_file():
        raise FsxltError(f"{path}: no predictions" + (f"; {hint}" if hint else ""))
    lines = text_lines(path.read_text(encoding="utf-8"))
    try:
        header = json.loads(lines[0]) if lines else None
        rows = [json.loads(line) for line in lines[1:] if line.strip()]
    except json.JSONDecodeError as err:
        raise DataFormatError(path, f"invalid JSON line: {err.msg}") from None
    if not isinstance(header, dict) or header.get("format") != PREDICTIONS_FORMAT:
        raise DataFormatError(path, f"not a predictions file ({PREDICTIONS_FORMAT})", 1)
    if len(rows) != header.get("n"):
        raise DataFormatError(path, f"header says {header.get('n')} examples, file has "
                                    f"{len(rows)} (truncated?)")
    return Predictions(header, rows, path)


def check_comparable(a: Predictions, b: Predictions) -> None:
    """Two predictions files must be on the same examples (same ids, words and gold)."""
    for key in ("task", "language", "split"):
        if a.header.get(key) != b.header.get(key):
            raise FsxltError(f"{a.path} and {b.path} differ in {key}: "
                             f"{a.header.get(key)} vs {b.header.get(key)}")
    same = len(a.rows) == len(b.rows) and all(
        (x["id"], x.get("tokens"), x["gold"]) == (y["id"], y.get("tokens"), y["gold"])
        for x, y in zip(a.rows, b.rows, strict=False))
    if not same:
        raise FsxltError(f"{a.path} and {b.path} were made on different test sets")


def predictions_start(predictions: Predictions) -> str | None:
    """The start (:func:`fsxlt.study.runs.start_fingerprint`) whose model made
    ``predictions``: an adapt run's header names it; zero-shot predictions name it in
    their header (fsxlt 0.10 on) or in the evaluation record beside them. None where
    neither says (an ICL run, a file without its record)."""
    model = predictions.header.get("model") or {}
    if model.get("start"):
        return str(model["start"])
    path = predictions.path
    if model.get("kind") != "zero-shot" or path is None or not path.name.endswith(SUFFIX):
        return None
    record = path.with_name(path.name[:-len(SUFFIX)] + ".json")
    if not record.is_file():
        return None
    found = read_json(record)
    identity = found.get("identity") if isinstance(found, dict) else None
    start = identity.get("start") if isinstance(identity, dict) else None
    return str(start) if start else None


def check_same_start(zero_shot: Predictions, adapted: dict[int, Predictions],
                     where: str | Path) -> None:
    """Gains over zero-shot mean gains over the zero-shot of the runs' own start: runs
    adapted from another start (an arm imported from another study, a no-source arm)
    are refused by name, in one line, where both starts are known."""
    zero = predictions_start(zero_shot)
    if zero is None:
        return
    for index, run in sorted(adapted.items()):
        start = predictions_start(run)
        if start is not None and start != zero:
            raise FsxltError(
                f"{where}: run {index:02d} was adapted from {start[:27]}, but the zero-shot "
                f"predictions {zero_shot.path} are of {zero[:27]}; pass --zero-shot with "
                "its start's (fsxlt evaluate START --save-predictions)")


def save_run_predictions(record_path: str | Path, record: dict[str, Any],
                         test: Sequence[Example], task: Any) -> Path:
    """Move an adapt record's ``test_predictions`` into the file beside the record.

    Removes the key from ``record`` (the caller then writes the record).
    """
    model = {"kind": "adapt", "record": Path(record_path).name, "method": record["method"],
             "k": record["k"], "bucket": record["bucket"].get("index"),
             "seed": record["seed"], "selected_lr": record["selected_lr"],
             "start": record["model"]["start"].get("id")}
    return write_predictions(
        predictions_path(record_path), test, record.pop("test_predictions"), task=task,
        language=record["language"], split="test", model=model,
        data_sha256=((record.get("data") or {}).get("test") or {}).get("sha256"))


# --------------------------------------------------------------------------- finding them

def _run_hint(task: str, language: str, k: int, method: str) -> str:
    return (f"run fsxlt adapt --task {task} --lang {language} --bucket <bucket set k{k}> "
            f"--method {method} --save-predictions (or fsxlt sweep --save-predictions) first")


def load_zero_shot(runs_dir: str | Path, task: str, language: str,
                   path: str | Path | None = None) -> Predictions:
    """A language's zero-shot test predictions (``path``, else the conventional place)."""
    from fsxlt.tasks import get_task

    get_task(task).check_language(language)
    where = Path(path) if path is not None else zero_shot_path(runs_dir, task, language)
    if not where.is_file():
        hint = (f"run fsxlt evaluate CKPT --task {task} --lang {language} --split test "
                f"--save-predictions --out {where.with_name(ZERO_SHOT_STEM + '.json')} first")
        raise FsxltError(f"no zero-shot predictions for {task}/{language} ({where}): {hint}")
    return read_predictions(where)


def load_adapted(runs_dir: str | Path, task: str, language: str, k: int, method: str = "full",
                 buckets: Sequence[int] | None = None) -> dict[int, Predictions]:
    """Saved test predictions of adapt runs, by bucket index (all, or ``buckets``)."""
    from fsxlt.tasks import get_task

    get_task(task).check_language(language)
    directory = record_path(runs_dir, task, language, k, method, "any").parent
    found = {int(p.name[:-len(SUFFIX)]): p for p in sorted(directory.glob(f"*{SUFFIX}"))
             if p.name[:-len(SUFFIX)].isdigit()}
    wanted = sorted(found) if buckets is None else list(buckets)
    missing = [b for b in wanted if b not in found]
    if not found or missing:
        what = ("no saved predictions" if not found
                else f"no saved predictions for bucket(s) {', '.join(map(str, missing))}")
        raise FsxltError(f"{directory}: {what}; {_run_hint(task, language, k, method)}")
    return {b: read_predictions(found[b]) for b in wanted}
