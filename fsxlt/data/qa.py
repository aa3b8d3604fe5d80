"""Extractive question answering data: SQuAD v1.1 JSON files and their paragraphs.

SQuAD v1.1, XQuAD, MLQA and TyDiQA-GoldP (in XTREME's files) share one layout:
``{"data": [{"title": ..., "paragraphs": [{"context": ..., "qas": [{"id": ...,
"question": ..., "answers": [{"text": ..., "answer_start": ...}]}]}]}]}``.
:func:`read_squad_json` turns such a file into one :class:`~fsxlt.data.QAExample`
per question, in file order; its id is ``<file>:<question id>``.

An answer whose ``answer_start`` does not point at its text (a few such spans
exist in the wild; the hub's XQuAD rows, whose contexts its loader strips) is
moved to the occurrence of the text in the context nearest to the given offset
(:func:`relocated_start`, for local files and hub rows alike); an answer whose
text does not occur in the context at all is an error naming the file (or row)
and the question.

A paragraph is a context: questions on one paragraph share its text, so
:func:`paragraph_of` is the context itself and buckets, dev and test sets are
kept apart by it. XQuAD ships one file per language; its task cuts each file's
paragraphs into a test, a dev and a train part (:func:`holdout_part`). The
parts are chosen by the paragraphs' question ids, which XQuAD gives every
language alike, so they are the same paragraphs in every language: a model
trained on the train paragraphs (in English, or in any language) never saw a
test paragraph in any translation.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from fsxlt.data.examples import QAExample
from fsxlt.data.lines import open_lines
from fsxlt.errors import DataFormatError

HOLDOUT_PARTS = ("test", "dev", "train")


def _load(path: Path) -> Any:
    text = "\n".join(open_lines(path))
    try:
        return json.loads(text)
    except json.JSONDecodeError as err:
        raise DataFormatError(path, f"invalid JSON ({err.msg}, column {err.colno})",
                              err.lineno) from None


def _list(value: Any, what: str, path: Path) -> list[Any]:
    if not isinstance(value, list):
        raise DataFormatError(path, f"{what} must be a list (SQuAD v1.1 JSON)")
    return value


def relocated_start(context: str, text: str, start: Any) -> int | None:
    """Where ``text`` starts in ``context``: ``start`` if it points at it, else the
    occurrence nearest to ``start`` (the earlier of two as near); None if the text does
    not occur. Local files and hub rows go through it alike (the hub's XQuAD loader strips
    contexts and keeps the offsets, which then miss)."""
    if isinstance(start, int) and context[start:start + len(text)] == text:
        return start
    found, at = [], context.find(text)
    while at >= 0:
        found.append(at)
        at = context.find(text, at + 1)
    if not found:
        return None
    given = start if isinstance(start, int) else 0
    return min(found, key=lambda offset: (abs(offset - given), offset))


def _answer_start(context: str, text: str, start: Any, where: str, path: Path) -> int:
    """:func:`relocated_start`, or an error naming the file where the text does not
    occur (or there is none)."""
    if not isinstance(text, str) or not text:
        raise DataFormatError(path, f"{where}: an answer without text")
    found = relocated_start(context, text, start)
    if found is None:
        raise DataFormatError(path, f"{where}: answer {text!r} does not occur in its context")
    return found


def _question(qa: Any, context: str, title: str, path: Path, language: str,
              labelled: bool = True) -> QAExample:
    if not isinstance(qa, dict) or not qa.get("id") or not isinstance(qa.get("question"), str):
        raise DataFormatError(path, f"a question of paragraph {context[:40]!r} has no id or "
                              "question text")
    qid = str(qa["id"])
    answers = _list(qa.get("answers", [] if not labelled else None),
                    f"question {qid}: answers", path)
    if not answers and labelled:
        raise DataFormatError(path, f"question {qid}: no answer (extractive QA needs one)")
    texts, starts = [], []
    for answer in answers:
        if not isinstance(answer, dict):
            raise DataFormatError(path, f"question {qid}: an answer is not an object")
        texts.append(answer.get("text"))
        starts.append(_answer_start(context, answer.get("text"), answer.get("answer_start"),
                                    f"question {qid}", path))
    return QAExample(id=f"{path.name}:{qid}", question_id=qid, context=context,
                     question=qa["question"], answers=tuple(texts), starts=tuple(starts),
                     title=title, language=language)


def read_squad_json(path: str | Path, task: Any = None, *, language: str = "",
                    labelled: bool = True) -> list[QAExample]:
    """Every question of a SQuAD v1.1 JSON file, in file order (see the module docstring),
    each marked as in ``language`` (its context's and answers' language). ``labelled=False``
    reads a file to predict: a question may come without answers.

    A question id given twice is an error: prediction files are keyed by it.
    """
    path = Path(path)
    raw = _load(path)
    if not isinstance(raw, dict) or not isinstance(raw.get("data"), list):
        raise DataFormatError(path, "expected a SQuAD v1.1 JSON object with a 'data' list")
    examples: list[QAExample] = []
    seen: set[str] = set()
    for article in raw["data"]:
        if not isinstance(article, dict):
            raise DataFormatError(path, "an entry of 'data' is not an object")
        title = str(article.get("title") or "")
        for paragraph in _list(article.get("paragraphs"), "paragraphs", path):
            context = paragraph.get("context") if isinstance(paragraph, dict) else None
            if not isinstance(context, str) or not context:
                raise DataFormatError(path, f"a paragraph of {title!r} has no context")
            for qa in _list(paragraph.get("qas"), "qas", path):
                example = _question(qa, context, title, path, language, labelled)
                if example.question_id in seen:
                    raise DataFormatError(path, f"question id {example.question_id} occurs "
                                          "twice")
                seen.add(example.question_id)
                examples.append(example)
    return examples


def paragraph_of(example: QAExample) -> str:
    """The paragraph a question is asked on: its context (see the module docstring)."""
    return example.context


def paragraphs(examples: Sequence[QAExample]) -> dict[str, list[int]]:
    """Positions of each paragraph's questions, paragraphs in the order they first occur."""
    groups: dict[str, list[int]] = {}
    for i, example in enumerate(examples):
        groups.setdefault(paragraph_of(example), []).append(i)
    return groups


def _holdout_rank(question_ids: Sequence[str], seed: int) -> str:
    """A paragraph's place in the holdout order: a hash of the seed and its first question
    id (the same in every language of a parallel set)."""
    return hashlib.sha256(f"{seed}:{min(question_ids)}".encode()).hexdigest()


def holdout_part(examples: Sequence[QAExample], n_test: int, n_dev: int, seed: int,
                 part: str) -> list[QAExample]:
    """The questions of one part of a file's paragraphs, in file order: ``test`` (the
    first ``n_test`` paragraphs in the order of :func:`_holdout_rank`), ``dev`` (the next
    ``n_dev``) or ``train`` (the rest). The parts depend on the seed and the question ids
    only."""
    if part not in HOLDOUT_PARTS:
        raise ValueError(f"unknown holdout part {part!r}")
    groups = paragraphs(examples)
    ranked = sorted(groups, key=lambda p: _holdout_rank(
        [examples[i].question_id for i in groups[p]], seed))
    bounds = {"test": (0, n_test), "dev": (n_test, n_test + n_dev),
              "train": (n_test + n_dev, len(ranked))}[part]
    chosen = set(ranked[bounds[0]:bounds[1]])
    return [examples[i] for i in sorted(i for p in chosen for i in groups[p])]


def squad_json(examples: Sequence[QAExample], version: str = "1.1") -> dict[str, Any]:
    """``examples`` as a SQuAD v1.1 JSON object (questions grouped by title and paragraph,
    in the order they first occur): the gold file the benchmarks' evaluators read."""
    articles: dict[str, dict[str, list[dict[str, Any]]]] = {}
    for ex in examples:
        qas = articles.setdefault(ex.title, {}).setdefault(ex.context, [])
        qas.append({"id": ex.question_id, "question": ex.question,
                    "answers": [{"text": t, "answer_start": s}
                                for t, s in zip(ex.answers, ex.starts, strict=True)]})
    return {"version": version, "data": [
        {"title": title, "paragraphs": [{"context": c, "qas": q} for c, q in paras.items()]}
        for title, paras in articles.items()]}
