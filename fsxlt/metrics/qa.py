"""Extractive question answering metrics: token F1 and exact match.

Two definitions are implemented, each matching the official evaluator that a
benchmark's published numbers come from (re-implemented here, not copied):

- ``mlqa_f1`` (style ``"mlqa"``): MLQA's ``mlqa_evaluation_v1.py``
  (facebookresearch/MLQA), which XTREME also runs for MLQA. It is language
  aware and knows exactly seven answer languages: ``en es de ar hi vi zh``.
- ``squad_f1`` (style ``"squad"``): SQuAD v1.1's ``evaluate-v1.1.py``, which
  XTREME runs (as ``evaluate_squad.py``) for XQuAD and TyDi QA GoldP in every
  language. It ignores the language.

Normalisation of an answer string, in this order (both styles):

1. lowercase with :meth:`str.lower`;
2. delete every punctuation character. ``squad``: the 32 ASCII characters of
   :data:`string.punctuation`. ``mlqa``: those 32 plus every character whose
   Unicode category starts with ``P`` (Python's :mod:`unicodedata`), so
   ``« » ¿ ¡ ، ؟ । ， 。 “ ”`` go too, and so do the ASCII symbols
   ``$ + < = > ^ ` | ~``, while non-ASCII symbols (``€ ° © ×``) stay;
3. delete articles, replacing each by a space. Words are matched with a
   Unicode-aware ``\\b`` after step 2, so ``"the-end"`` becomes ``"theend"``
   and keeps its letters. ``squad``: ``a an the`` whatever the language.
   ``mlqa``, per language:

   - ``en``: a, an, the
   - ``es``: el, la, los, las, un, una, unos, unas
   - ``de``: der, die, das, den, dem, des, ein, eine, einen, einem, eines, einer
   - ``vi``: của, là, cái, chiếc, những (the script's list; it includes words
     that are not articles, and it matches precomposed (NFC) spellings only:
     no Unicode normalisation is applied, so decomposed text keeps them)
   - ``ar``: every occurrence of the two letters alif-lam ``ال`` anywhere in
     the text, not only as a word prefix (the script's pattern has a second
     alternative that can never match), so ``فالكتاب`` becomes the two tokens
     ``ف كتاب`` and ``جمال`` becomes ``جم``
   - ``hi``, ``zh``: none;
4. split into tokens and join them with single spaces. Every language but
   ``zh`` splits on whitespace (:meth:`str.split`). ``zh`` uses MLQA's "mixed
   segmentation": each character in U+4E00..U+9FA5 (the CJK Unified
   Ideographs the script's regex covers) or punctuation character becomes a
   token of its own, and the runs of other characters between them are split
   on whitespace. So ``"iPhone手机"`` gives ``iphone 手 机`` and ``"北京"``
   equals ``"北 京"``; ideographs outside that range (Extension A, U+9FA6 and
   later) stay glued to their neighbours.

Scores of one prediction against one gold answer:

- exact match: the two normalised strings are equal;
- F1: the normalised strings are split on whitespace, the overlap is the size
  of the multiset intersection of the two token lists, precision = overlap /
  prediction tokens, recall = overlap / gold tokens, F1 = 2PR / (P + R). With
  no overlap F1 is 0, which includes the case where both sides normalise to
  nothing: then exact match is 1 but F1 is 0, as the scripts have it.

A question with several gold answers gets the maximum of each score over
them (separately: the best F1 and the best exact match may come from
different golds). A set's score is the mean over its questions.

Whole-file scoring (:func:`score_prediction_file`) follows the evaluators:
every question of the dataset counts; a question without a prediction scores
0 for both metrics; prediction ids that are not in the dataset are ignored
(fsxlt counts them as ``unknown_ids``); the dataset's ``version`` is not
checked.

Units: the scripts print percentages (100 x the mean); fsxlt stores fractions
in [0, 1], like its other metrics.

Languages outside MLQA's seven: MLQA's script raises an exception ("Unknown
Language") for any other code, and so does the ``mlqa`` style here
(:class:`UnsupportedLanguageError`). Use the ``squad`` style for them, as
XTREME does for XQuAD and TyDi QA.
"""

from __future__ import annotations

import re
import string
import unicodedata
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from fsxlt.errors import FsxltError
from fsxlt.tasks import QA_METRICS  # the metric names a task YAML may use for QA

STYLES = ("mlqa", "squad")
MLQA_LANGUAGES = ("en", "es", "de", "ar", "hi", "vi", "zh")

_METRIC_STYLES = {"mlqa_f1": "mlqa", "squad_f1": "squad"}
_ASCII_PUNCTUATION = frozenset(string.punctuation)
_CJK_FIRST, _CJK_LAST = "\u4e00", "\u9fa5"


def _word_pattern(words: Sequence[str]) -> re.Pattern[str]:
    return re.compile(r"\b(?:" + "|".join(words) + r")\b")


_SQUAD_ARTICLES = _word_pattern(("a", "an", "the"))
_MLQA_ARTICLES: dict[str, re.Pattern[str] | None] = {
    "en": _SQUAD_ARTICLES,
    "es": _word_pattern(("el", "la", "los", "las", "un", "una", "unos", "unas")),
    "de": _word_pattern(
        ("der", "die", "das", "den", "dem", "des",
         "ein", "eine", "einen", "einem", "eines", "einer")
    ),
    "vi": _word_pattern(("của", "là", "cái", "chiếc", "những")),
    "ar": re.compile("ال"),
    "hi": None,
    "zh": None,
}


class UnsupportedLanguageError(FsxltError, ValueError):
    """The ``mlqa`` style was asked to normalise a language MLQA does not define."""


def metric_style(metric: str) -> str:
    """The normalisation style (``"mlqa"`` or ``"squad"``) of a QA metric name."""
    try:
        return _METRIC_STYLES[metric]
    except KeyError:
        raise ValueError(f"unknown QA metric {metric!r}; expected one of {QA_METRICS}") from None


def _check_style_and_language(language: str, style: str) -> None:
    if style not in STYLES:
        raise ValueError(f"unknown QA normalisation style {style!r}; expected one of {STYLES}")
    if style == "mlqa" and language not in _MLQA_ARTICLES:
        raise UnsupportedLanguageError(
            f"MLQA's evaluation defines languages {', '.join(MLQA_LANGUAGES)} only, "
            f"not {language!r}; score it with squad_f1 instead"
        )


def is_mlqa_punctuation(char: str) -> bool:
    """MLQA's punctuation: ASCII punctuation or any Unicode category ``P*`` character."""
    return char in _ASCII_PUNCTUATION or unicodedata.category(char).startswith("P")


def mixed_segmentation(text: str) -> list[str]:
    """MLQA's Chinese tokens: ideographs and punctuation alone, other runs split on spaces."""
    tokens: list[str] = []
    run: list[str] = []
    for char in text:
        if _CJK_FIRST <= char <= _CJK_LAST or is_mlqa_punctuation(char):
            tokens.extend("".join(run).split())
            run.clear()
            tokens.append(char)
        else:
            run.append(char)
    tokens.extend("".join(run).split())
    return tokens


def _normalize_squad(text: str) -> str:
    kept = "".join(char for char in text.lower() if char not in _ASCII_PUNCTUATION)
    return " ".join(_SQUAD_ARTICLES.sub(" ", kept).split())


def _normalize_mlqa(text: str, language: str) -> str:
    kept = "".join(char for char in text.lower() if not is_mlqa_punctuation(char))
    articles = _MLQA_ARTICLES[language]
    if articles is not None:
        kept = articles.sub(" ", kept)
    tokens = mixed_segmentation(kept) if language == "zh" else kept.split()
    return " ".join(token for token in tokens if token.strip())


def normalize_answer(text: str, language: str, style: str = "mlqa") -> str:
    """The normalised answer string that exact match compares (see the module doc)."""
    _check_style_and_language(language, style)
    if style == "squad":
        return _normalize_squad(text)
    return _normalize_mlqa(text, language)


def answer_tokens(text: str, language: str, style: str = "mlqa") -> list[str]:
    """The tokens F1 counts: the normalised answer split on whitespace."""
    return normalize_answer(text, language, style).split()


def exact_match(prediction: str, gold: str, language: str, style: str = "mlqa") -> bool:
    """Whether prediction and gold normalise to the same string."""
    return normalize_answer(prediction, language, style) == normalize_answer(gold, language, style)


def f1(prediction: str, gold: str, language: str, style: str = "mlqa") -> float:
    """Token-overlap F1 of one prediction against one gold answer (0 without overlap)."""
    predicted = answer_tokens(prediction, language, style)
    expected = answer_tokens(gold, language, style)
    overlap = sum((Counter(predicted) & Counter(expected)).values())
    if overlap == 0:
        return 0.0
    precision = overlap / len(predicted)
    recall = overlap / len(expected)
    return (2 * precision * recall) / (precision + recall)


def _check_golds(golds: Sequence[str]) -> None:
    if isinstance(golds, str):
        raise ValueError(f"gold answers must be a sequence of strings, not the string {golds!r}")
    if len(golds) == 0:
        raise ValueError("a question has no gold answers")


def best_over_golds(
    fn: Callable[[str, str, str, str], float],
    prediction: str,
    golds: Sequence[str],
    language: str,
    style: str = "mlqa",
) -> float:
    """The maximum of ``fn(prediction, gold, language, style)`` over a question's golds."""
    _check_golds(golds)
    return max(fn(prediction, gold, language, style) for gold in golds)


def _summed(items: Iterable[tuple[str, Sequence[str], str]], style: str,
            ) -> tuple[float, float]:
    """Summed best F1 and best exact match of (prediction, gold answers, language) triples."""
    total_f1 = total_em = 0.0
    for prediction, golds, language in items:
        total_f1 += best_over_golds(f1, prediction, golds, language, style)
        total_em += best_over_golds(exact_match, prediction, golds, language, style)
    return total_f1, total_em


def _check_aligned(golds: Sequence[Any], predicted: Sequence[str]) -> None:
    if len(golds) != len(predicted):
        raise ValueError(f"{len(golds)} questions but {len(predicted)} predictions")
    if len(golds) == 0:
        raise ValueError("no questions to score")


def qa_scores(
    golds: Sequence[Sequence[str]], predicted: Sequence[str], *, language: str, style: str
) -> dict[str, Any]:
    """Mean best F1 and exact match of aligned predictions, as fractions in [0, 1].

    ``golds[i]`` holds question i's gold answers, ``predicted[i]`` its
    prediction. Returns ``{"f1", "exact_match", "n"}``; the official scripts
    print the same means multiplied by 100.
    """
    _check_style_and_language(language, style)
    _check_aligned(golds, predicted)
    total_f1, total_em = _summed(((prediction, question_golds, language) for question_golds,
                                  prediction in zip(golds, predicted, strict=True)), style)
    n = len(golds)
    return {"f1": total_f1 / n, "exact_match": total_em / n, "n": n}


def _malformed(where: str, problem: str) -> FsxltError:
    return FsxltError(f"malformed QA dataset: {where} {problem}")


def _list_field(record: Any, key: str, where: str) -> list[Any]:
    if not isinstance(record, Mapping):
        raise _malformed(where, "is not an object")
    value = record.get(key)
    if not isinstance(value, list):
        raise _malformed(where, f"has no {key!r} list")
    return value


def _question_golds(qa: Any, where: str) -> tuple[str, list[str]]:
    if not isinstance(qa, Mapping):
        raise _malformed(where, "is not an object")
    qid = qa.get("id")
    if not isinstance(qid, str) or not qid:
        raise _malformed(where, "has no string 'id'")
    where = f"{where} (id {qid!r})"
    answers = _list_field(qa, "answers", where)
    if not answers:
        raise _malformed(where, "has no answers")
    texts = [a.get("text") if isinstance(a, Mapping) else None for a in answers]
    if not all(isinstance(text, str) for text in texts):
        raise _malformed(where, "has an answer without a string 'text'")
    return qid, texts


def dataset_questions(dataset: Any) -> list[tuple[str, list[str]]]:
    """``(id, gold answer texts)`` of every question of a SQuAD-format dataset object."""
    questions = []
    for a, article in enumerate(_list_field(dataset, "data", "the dataset")):
        for p, paragraph in enumerate(_list_field(article, "paragraphs", f"data[{a}]")):
            where = f"data[{a}].paragraphs[{p}]"
            for q, qa in enumerate(_list_field(paragraph, "qas", where)):
                questions.append(_question_golds(qa, f"{where}.qas[{q}]"))
    return questions


def score_prediction_file(
    dataset: Mapping[str, Any], predictions: Mapping[str, str], *, language: str, style: str
) -> dict[str, Any]:
    """Score a prediction file (id -> answer) against a SQuAD-format dataset as the scripts do.

    Every question counts; one without a prediction scores 0. Returns
    fractions ``{"f1", "exact_match"}`` and the counts ``n`` (questions),
    ``unanswered`` and ``unknown_ids`` (prediction ids not in the dataset).
    """
    _check_style_and_language(language, style)
    questions = dataset_questions(dataset)
    if not questions:
        raise FsxltError("malformed QA dataset: it has no questions")
    if not isinstance(predictions, Mapping):
        raise FsxltError("QA predictions must be an object mapping question ids to answers")
    wrong = next((qid for qid, _ in questions
                  if qid in predictions and not isinstance(predictions[qid], str)), None)
    if wrong is not None:
        raise FsxltError(f"QA prediction for question {wrong!r} is not a string")
    answered = [(predictions[qid], golds, language) for qid, golds in questions
                if qid in predictions]  # a question without a prediction scores 0
    total_f1, total_em = _summed(answered, style)
    unanswered = len(questions) - len(answered)
    known = {qid for qid, _ in questions}
    n = len(questions)
    return {
        "f1": total_f1 / n,
        "exact_match": total_em / n,
        "n": n,
        "unanswered": unanswered,
        "unknown_ids": sum(1 for qid in predictions if qid not in known),
    }


def task_scores(metric: str, gold: Sequence[tuple[Sequence[str], str]],
                predicted: Sequence[str]) -> dict[str, Any]:
    """A QA task's scores as :func:`fsxlt.metrics.scores.compute_scores` reports them: ``gold``
    holds each question's (gold answers, language), ``predicted`` its answer text; F1 is
    the ``score``, exact match beside it (fractions). Questions are normalised by their own
    language (MLQA's style), so a set mixing languages is scored as the scripts score
    each language's file."""
    _check_aligned(gold, predicted)
    total_f1, total_em = _summed(((prediction, golds, language) for (golds, language),
                                  prediction in zip(gold, predicted, strict=True)),
                                 metric_style(metric))
    n = len(gold)
    return {"metric": metric, "score": total_f1 / n, "f1": total_f1 / n,
            "exact_match": total_em / n, "n": n}
