"""The metrics of every task kind (docs/protocol.md#tasks), all fractions in [0, 1]:

- ``accuracy`` (classification): scikit-learn's accuracy.
- ``seqeval_f1`` (NER): entity-level micro F1 of seqeval (conlleval-style
  chunking of BIO tags); precision and recall are recorded too.
- ``seqeval_precision`` (XGLUE's POS): what XGLUE's official evaluator
  (``xglue_evaluate.py``) reports for POS, seqeval's micro precision over
  the tag sequences. seqeval reads a UPOS tag as a chunk tag (its first
  letter) and a type, so a run of equal tags is one "chunk": gold
  ``NOUN VERB ADJ`` against ``NOUN VERB VERB`` scores 1/2 (token accuracy
  2/3, seqeval F1 0.4). Token accuracy, seqeval recall and F1 are recorded
  beside it.
- ``token_accuracy`` (POS of the study, ``udpos``): correct words / all
  words, which equals micro F1 over words because every word gets exactly
  one tag. seqeval's F1 over the raw tags is recorded as ``seqeval_f1``
  too, for comparison only (it is not XGLUE's POS metric either).
- ``mlqa_f1`` and ``squad_f1`` (extractive QA): MLQA's and SQuAD v1.1's token
  F1 of the answer text, exact match beside it (:mod:`fsxlt.metrics.qa`); answers
  are decoded from the span head's logits over all windows of a context
  (:mod:`fsxlt.models.spans`).
- ``ndcg`` (ranking, XGLUE's WPR): what XGLUE's evaluator computes from the
  prediction file fsxlt writes. Each page's predicted grade (the most
  probable one, the grade the file holds) ranks a query's pages, and
  scikit-learn's ``ndcg_score`` (gold grades as the true relevance, no
  cut-off, tied predictions share their gain) is averaged over queries. A
  query is a run of consecutive lines with the same query text, as the
  evaluator reads the file: a query whose lines are split counts as one
  query per run. A query of one judged page is left out (any ranking of one
  page is perfect); a query whose pages are all graded 0 scores 0, as
  scikit-learn has it. A set with no query of two judged pages has no nDCG
  (XGLUE's evaluator gets NaN): an error naming the set, never a score; an
  adapt or source-training run refuses such a dev or test set before it
  trains (:func:`require_scorable`). ``fsxlt_expected_grade_ndcg`` is
  fsxlt's own second figure, not XGLUE's: the same nDCG with pages ranked
  by the expected grade (sum of grade x probability), which no prediction
  file holds.
- ``bleu`` (generation, XGLUE's QG and NTG): sacrebleu's corpus BLEU as XGLUE's
  evaluator computes it (:func:`fsxlt.metrics.text.xglue_bleu`); the score is
  BLEU / 100, ``bleu`` beside it on sacrebleu's 0-100 scale, with its signature.
"""


from __future__ import annotations

import functools
import operator
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from fsxlt.errors import FsxltError
from fsxlt.tasks import TaskSpec


def accuracy(gold: Sequence[str], predicted: Sequence[str]) -> float:
    from sklearn.metrics import accuracy_score

    return float(accuracy_score(list(gold), list(predicted))) if gold else 0.0


@functools.lru_cache(maxsize=64)
def _chunk_tables(labels: tuple[str, ...]) -> tuple[Any, Any, list[str]]:
    """seqeval's chunk decisions for every (previous label, label) pair, as lookup tables.

    Row/column ``len(labels)`` is seqeval's state before the first label
    (tag ``O``, type ``""``). Each cell is computed by seqeval's own
    ``end_of_chunk``/``start_of_chunk`` on the (tag, type) split seqeval
    uses in its default, prefix mode, so the tables encode exactly its rules.
    """
    import numpy as np
    from seqeval.metrics.sequence_labeling import end_of_chunk, start_of_chunk

    parsed = [(label[0], label[1:].split("-", maxsplit=1)[-1] or "_") for label in labels]
    parsed.append(("O", ""))
    size = len(parsed)
    ends = np.zeros((size, size), dtype=bool)
    starts = np.zeros((size, size), dtype=bool)
    for p, (prev_tag, prev_type) in enumerate(parsed):
        for c, (tag, type_) in enumerate(parsed):
            ends[p, c] = end_of_chunk(prev_tag, tag, prev_type, type_)
            starts[p, c] = start_of_chunk(prev_tag, tag, prev_type, type_)
    return ends, starts, [type_ for _, type_ in parsed]


def entity_set(tags: Sequence[Sequence[str]]) -> frozenset[tuple[str, int, int]]:
    """seqeval's chunks (default conlleval mode) of a list of tag sequences, as a set.

    Sentences are joined with an ``O`` after each, as seqeval's
    ``get_entities`` joins them, so ``(type, start, end)`` are offsets into
    that joined sequence. The scan is vectorised over lookup tables of
    seqeval's own decisions (:func:`_chunk_tables`); tests check it against
    ``get_entities`` on random tag sequences.
    """
    import numpy as np

    flat: list[str] = []
    for sentence in tags:
        flat.extend(sentence)
        flat.append("O")
    flat.append("O")  # get_entities scans one O past the end
    labels = tuple(sorted(set(flat)))
    ends, starts, types = _chunk_tables(labels)
    index = {label: i for i, label in enumerate(labels)}
    ids = np.fromiter((index[t] for t in flat), dtype=np.int64, count=len(flat))
    prev = np.concatenate(([len(labels)], ids[:-1]))
    end_at = np.flatnonzero(ends[prev, ids])
    start_at = np.flatnonzero(starts[prev, ids])
    if not len(end_at):
        return frozenset()
    last = np.searchsorted(start_at, end_at, side="left") - 1  # the latest start before
    begin = np.where(last >= 0, start_at[np.maximum(last, 0)] if len(start_at) else 0, 0)
    kinds = [types[i] for i in prev[end_at].tolist()]
    return frozenset(zip(kinds, begin.tolist(), (end_at - 1).tolist(), strict=True))


def seqeval_scores(gold: Sequence[Sequence[str]], predicted: Sequence[Sequence[str]], *,
                   gold_entities: frozenset[tuple[str, int, int]] | None = None,
                   ) -> dict[str, float]:
    """Entity-level micro precision, recall and F1 (seqeval, default conlleval mode).

    The same numbers as seqeval's ``precision_score``/``recall_score``/
    ``f1_score`` with ``zero_division=0`` (same chunks, same float
    operations), from one chunk extraction instead of three. Pass
    ``gold_entities`` (:func:`entity_set` of ``gold``) to skip the gold side:
    the dev set is scored after every epoch and its gold tags never change.
    """
    if len(gold) != len(predicted):
        raise ValueError(f"{len(gold)} gold sentences but {len(predicted)} predicted")
    true = entity_set(gold) if gold_entities is None else gold_entities
    pred = entity_set(predicted)
    hits = len(true & pred)
    precision = hits / len(pred) if pred else 0.0
    recall = hits / len(true) if true else 0.0
    denominator = precision + recall if precision + recall != 0.0 else 1.0
    return {"precision": precision, "recall": recall,
            "f1": 2.0 * precision * recall / denominator}


def token_accuracy(gold: Sequence[Sequence[str]], predicted: Sequence[Sequence[str]]) -> float:
    total = sum(len(s) for s in gold)
    correct = 0
    for gs, ps in zip(gold, predicted, strict=True):
        if len(gs) != len(ps):
            raise ValueError("a predicted sentence has another length than its gold one")
        correct += sum(map(operator.eq, gs, ps))
    return correct / total if total else 0.0


def query_runs(groups: Sequence[str]) -> list[list[int]]:
    """The queries of a ranking set as XGLUE's evaluator reads its file: each run of
    consecutive pages (positions) with the same query is one query, in file order.

    A query whose lines are split by other queries' lines is as many queries
    as it has runs.
    """
    runs: list[list[int]] = []
    for i, query in enumerate(groups):
        if runs and groups[i - 1] == query:
            runs[-1].append(i)
        else:
            runs.append([i])
    return runs


def check_rankable(groups: Sequence[str],
                   what: str = "the evaluation set") -> list[list[int]]:
    """Each query's pages (:func:`query_runs`); an error naming ``what`` if no query
    has two judged pages.

    nDCG leaves such queries out (one page is always ranked perfectly), so
    such a set has no score at all (XGLUE's evaluator gets NaN); scoring it
    as 0 would make model selection early-stop on a constant and report a
    test score that does not exist.
    """
    runs = query_runs(groups)
    if not any(len(idx) > 1 for idx in runs):
        raise FsxltError(f"{what}: no query has two judged pages, so nDCG has nothing to rank "
                         f"({len(runs)} single-page queries)")
    return runs


def ndcg_scores(gold: Sequence[str], ranking: Sequence[float], groups: Sequence[str],
                what: str = "the evaluation set") -> dict[str, float]:
    """Mean nDCG over queries (:func:`query_runs`): scikit-learn's ``ndcg_score`` per
    query, ``gold`` each page's grade and ``ranking`` the value it is ranked by.

    Raises :class:`~fsxlt.errors.FsxltError` naming ``what`` when no query
    has two judged pages (:func:`check_rankable`).
    """
    import numpy as np
    from sklearn.metrics import ndcg_score

    runs = check_rankable(groups, what)
    values = [float(ndcg_score(np.asarray([[float(gold[i]) for i in idx]]),
                               np.asarray([[float(ranking[i]) for i in idx]])))
              for idx in runs if len(idx) > 1]
    return {"ndcg": float(np.mean(values)), "n_queries": len(values),
            "single_page_queries": sum(len(idx) == 1 for idx in runs)}


def compute_scores(task: TaskSpec, gold: Sequence[Any], predicted: Sequence[Any], *,
                   gold_entities: frozenset[tuple[str, int, int]] | None = None,
                   relevance: Sequence[float] | None = None,
                   groups: Sequence[str] | None = None,
                   what: str = "the evaluation set") -> dict[str, Any]:
    """All scores of ``task``'s metric; ``score`` is the one model selection uses and
    runs report (see the module docstring for each metric).

    ``gold_entities``: :func:`entity_set` of ``gold``, precomputed (tagging only).
    ``groups``: each page's query (nDCG only; ``predicted`` are the grades the
    prediction file holds). ``relevance``: each page's expected grade, for
    fsxlt's own ``fsxlt_expected_grade_ndcg`` (nDCG only, optional).
    ``what``: the set's name in an error (nDCG of a set with nothing to rank).
    """
    scorer = METRIC_SCORERS.get(task.metric)
    if scorer is None:
        raise ValueError(f"unknown metric {task.metric!r}")
    return scorer(task.metric, gold, predicted,
                  ScoreInputs(gold_entities=gold_entities, relevance=relevance, groups=groups,
                              what=what))


@dataclass(frozen=True)
class ScoreInputs:
    """What a metric may read besides the gold and predicted labels (:func:`compute_scores`)."""

    gold_entities: frozenset[tuple[str, int, int]] | None = None
    relevance: Sequence[float] | None = None
    groups: Sequence[str] | None = None
    what: str = "the evaluation set"


def _accuracy_scores(metric: str, gold: Sequence[Any], predicted: Sequence[Any],
                     inputs: ScoreInputs) -> dict[str, Any]:
    acc = accuracy(gold, predicted)
    return {"metric": metric, "score": acc, "accuracy": acc, "n": len(gold)}


def _seqeval_metric_scores(metric: str, gold: Sequence[Any], predicted: Sequence[Any],
                           inputs: ScoreInputs) -> dict[str, Any]:
    """seqeval F1 or precision (``seqeval_<score>``) as the score, the others beside it."""
    s = seqeval_scores(gold, predicted, gold_entities=inputs.gold_entities)
    return {"metric": metric, "score": s[metric.removeprefix("seqeval_")],
            "seqeval_f1": s["f1"], "seqeval_precision": s["precision"],
            "precision": s["precision"], "recall": s["recall"],
            "token_accuracy": token_accuracy(gold, predicted), "n": len(gold),
            "n_words": sum(len(g) for g in gold)}


def _token_accuracy_scores(metric: str, gold: Sequence[Any], predicted: Sequence[Any],
                           inputs: ScoreInputs) -> dict[str, Any]:
    acc = token_accuracy(gold, predicted)
    return {"metric": metric, "score": acc, "token_accuracy": acc,
            "seqeval_f1": seqeval_scores(gold, predicted,
                                         gold_entities=inputs.gold_entities)["f1"],
            "n": len(gold),
            "n_words": sum(len(g) for g in gold)}


def _ndcg_scores(metric: str, gold: Sequence[Any], predicted: Sequence[Any],
                 inputs: ScoreInputs) -> dict[str, Any]:
    return _ranking_scores(gold, predicted, inputs.relevance, inputs.groups, inputs.what)


def _ranking_scores(gold: Sequence[Any], predicted: Sequence[Any],
                    relevance: Sequence[float] | None, groups: Sequence[str] | None,
                    what: str) -> dict[str, Any]:
    """nDCG of the predicted grades (the score), fsxlt's expected-grade nDCG beside it."""
    if groups is None:
        raise ValueError("nDCG needs each page's query")
    s = ndcg_scores(gold, [float(p) for p in predicted], groups, what)
    scores = {"metric": "ndcg", "score": s["ndcg"], **s,
              "accuracy": accuracy(gold, predicted), "n": len(gold)}
    if relevance is not None:
        scores["fsxlt_expected_grade_ndcg"] = ndcg_scores(gold, relevance, groups, what)["ndcg"]
    return scores


def _qa_task_scores(metric: str, gold: Sequence[Any], predicted: Sequence[Any],
                    inputs: ScoreInputs) -> dict[str, Any]:
    from fsxlt.metrics.qa import task_scores

    return task_scores(metric, gold, predicted)


def _bleu_scores(metric: str, gold: Sequence[Any], predicted: Sequence[Any],
                 inputs: ScoreInputs) -> dict[str, Any]:
    from fsxlt.metrics.text import xglue_bleu

    scores = xglue_bleu(predicted, gold)
    return {"metric": metric, "score": scores["bleu"] / 100, **scores}


# a task YAML's ``metric`` -> its scores (fsxlt.tasks.METRICS names the same metrics)
METRIC_SCORERS: dict[str, Callable[[str, Sequence[Any], Sequence[Any], ScoreInputs],
                                   dict[str, Any]]] = {
    "accuracy": _accuracy_scores,
    "seqeval_f1": _seqeval_metric_scores,
    "seqeval_precision": _seqeval_metric_scores,
    "token_accuracy": _token_accuracy_scores,
    "ndcg": _ndcg_scores,
    "mlqa_f1": _qa_task_scores,
    "squad_f1": _qa_task_scores,
    "bleu": _bleu_scores,
}
