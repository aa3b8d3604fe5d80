"""Metrics and fast batched prediction.

Metrics (docs/protocol.md#tasks), all reported as fractions in [0, 1]:

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
  F1 of the answer text, exact match beside it (:mod:`fsxlt.qa_metrics`); answers
  are decoded from the span head's logits over all windows of a context
  (:mod:`fsxlt.spans`).
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
  evaluator computes it (:func:`fsxlt.text_metrics.xglue_bleu`); the score is
  BLEU / 100, ``bleu`` beside it on sacrebleu's 0-100 scale, with its signature.

Prediction is built for a loop that evaluates a dev set after every epoch,
thousands of times: a split is tokenized once into an :class:`EvalSet`
whose batches are sorted by length, padded per batch (dynamic padding), cut
by a token budget (large batches of short inputs) and moved to the device
once. :func:`predict` then only runs forward passes, under
``torch.inference_mode`` and, on CUDA, bf16 autocast.

Tagging evaluation scores **every word**: a sentence longer than
``max_seq_length`` wordpieces is split at word boundaries into consecutive
windows, each predicted separately, and the predictions are stitched back
together (training, in contrast, truncates). Words that the tokenizer maps
to no wordpiece at all are fed as the unknown token, so they are scored too.
"""

from __future__ import annotations

import functools
import operator
from collections.abc import Callable, Sequence
from contextlib import nullcontext
from dataclasses import dataclass
from typing import Any

import torch

from fsxlt.data import Example
from fsxlt.encoding import EncodedSplit, Featurizer, collate
from fsxlt.errors import FsxltError
from fsxlt.modeling import FsxltModel
from fsxlt.tasks import TaskSpec

DEFAULT_EVAL_TOKENS = 32768
CPU_EVAL_TOKENS = 4096
DEFAULT_EVAL_ROWS = 512


def eval_token_budget(device: torch.device) -> int:
    """Wordpieces per evaluation batch: large on accelerators, cache-sized on CPU.

    A GPU is kept busy only by big batches; a CPU core is fastest on batches
    that fit its caches (measured with ``scripts/bench_adapt.py``: about 4,000
    wordpieces evaluate ~1.6x faster than 32,000 on a small encoder).
    """
    return CPU_EVAL_TOKENS if device.type == "cpu" else DEFAULT_EVAL_TOKENS


# --------------------------------------------------------------------------- metrics

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


def require_scorable(task: TaskSpec, eval_set: EvalSet, what: str | None = None) -> None:
    """Refuse ``eval_set`` before any training if ``task``'s metric has no score for it.

    Only nDCG can lack one (:func:`check_rankable`); ``what`` names the set
    in the error (default: the set's own name).
    """
    if task.is_ranking:
        check_rankable(eval_set.encoded.groups or [], what or eval_set.name)


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
    from fsxlt.qa_metrics import task_scores

    return task_scores(metric, gold, predicted)


def _bleu_scores(metric: str, gold: Sequence[Any], predicted: Sequence[Any],
                 inputs: ScoreInputs) -> dict[str, Any]:
    from fsxlt.text_metrics import xglue_bleu

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


# --------------------------------------------------------------------------- prediction

@dataclass
class EvalSet:
    """A split ready for repeated prediction: pre-collated, length-sorted batches."""

    encoded: EncodedSplit
    batches: list[dict[str, torch.Tensor]]
    batch_rows: list[list[int]]  # row indices (into encoded.rows) of each batch
    device: torch.device
    name: str = "the evaluation set"  # how errors name it (:func:`prepare_eval` sets it)
    _gold_entities: frozenset[tuple[str, int, int]] | None = None
    _slots: list[torch.Tensor] | None = None

    @property
    def n_examples(self) -> int:
        return self.encoded.n_examples

    @property
    def n_outputs(self) -> int:
        """Predictions per pass: one per example, or one per word of every sentence."""
        if self.encoded.kind != "tagging":
            return self.encoded.n_examples
        return sum(self.encoded.word_counts)

    def output_slots(self) -> list[torch.Tensor]:
        """Per batch, where each of its predictions goes in the flat output (built once).

        Classification: the example's index. Tagging: the word's offset in
        all sentences' words laid end to end (sentence order, word order), in
        the order the batch's rows and their scored positions come out.
        """
        if self._slots is None:
            rows = self.encoded.rows
            if self.encoded.kind != "tagging":
                where = [[rows[i].example for i in batch] for batch in self.batch_rows]
            else:
                offsets = [0]
                for count in self.encoded.word_counts:
                    offsets.append(offsets[-1] + count)
                where = [[offsets[rows[i].example] + w for i in batch for w in rows[i].words]
                         for batch in self.batch_rows]
            self._slots = [torch.tensor(w, dtype=torch.long, device=self.device)
                           for w in where]
        return self._slots

    def gold_entities(self) -> frozenset[tuple[str, int, int]] | None:
        """The gold tags' seqeval chunks, extracted once (``None`` for classification)."""
        if self.encoded.kind != "tagging":
            return None
        if self._gold_entities is None:
            self._gold_entities = entity_set(self.encoded.gold)
        return self._gold_entities


def make_eval_set(encoded: EncodedSplit, pad_id: int, device: torch.device | str = "cpu", *,
                  max_tokens: int = DEFAULT_EVAL_TOKENS, max_rows: int = DEFAULT_EVAL_ROWS,
                  name: str = "the evaluation set") -> EvalSet:
    """Sort rows by length and cut them into padded batches of at most ``max_tokens``."""
    device = torch.device(device)
    order = sorted(range(len(encoded.rows)), key=lambda i: (len(encoded.rows[i].input_ids), i))
    batch_rows: list[list[int]] = []
    current: list[int] = []
    for index in order:
        row = encoded.rows[index]
        length = len(row.input_ids) * row.n_sequences  # a multiple-choice row is c sequences
        if current and ((len(current) + 1) * length > max_tokens or len(current) >= max_rows):
            batch_rows.append(current)
            current = []
        current.append(index)
    if current:
        batch_rows.append(current)
    batches = [collate([encoded.rows[i] for i in rows], pad_id, device) for rows in batch_rows]
    return EvalSet(encoded, batches, batch_rows, device, name)


def autocast_context(device: torch.device, enabled: bool = True):
    """bf16 autocast on CUDA; nothing elsewhere (CPU runs stay exact and deterministic)."""
    if enabled and device.type == "cuda":
        return torch.autocast("cuda", dtype=torch.bfloat16)
    return nullcontext()


def _forward_all(model: FsxltModel, eval_set: EvalSet, amp: bool,
                 grades: Sequence[float] | None = None) -> tuple[list[int], list[float] | None]:
    """One pass: the argmax id of every output, and with ``grades`` (ranking) each
    example's expected grade under the model's distribution."""
    slots = eval_set.output_slots()
    was_training = model.training
    model.eval()
    expected = None
    try:
        with torch.inference_mode(), autocast_context(eval_set.device, amp):
            flat = torch.full((eval_set.n_outputs,), -1, dtype=torch.long,
                              device=eval_set.device)
            if grades is not None:
                values = torch.tensor(list(grades), dtype=torch.float32, device=eval_set.device)
                expected = torch.zeros(eval_set.n_outputs, device=eval_set.device)
            for batch, where in zip(eval_set.batches, slots, strict=True):
                logits = model(batch)
                flat[where] = logits.argmax(dim=-1)
                if expected is not None:
                    expected[where] = logits.float().softmax(dim=-1) @ values
            ids = flat.tolist()  # one device-to-host copy per pass
    finally:
        model.train(was_training)
    if ids and min(ids) < 0:
        raise RuntimeError("some example or word got no prediction (broken EvalSet)")
    return ids, expected.tolist() if expected is not None else None


def predict_ids(model: FsxltModel, eval_set: EvalSet, *, amp: bool = True) -> list[Any]:
    """Predicted label ids: one per example, or one list (every word) per sentence."""
    encoded = eval_set.encoded
    ids, _ = _forward_all(model, eval_set, amp)
    if encoded.kind != "tagging":
        return ids
    out, start = [], 0
    for count in encoded.word_counts:
        out.append(ids[start:start + count])
        start += count
    return out


def predict_labels(model: FsxltModel, eval_set: EvalSet, labels: Sequence[str], *,
                   amp: bool = True) -> list[Any]:
    """Like :func:`predict_ids` but with label names (extractive QA: answer texts)."""
    if eval_set.encoded.kind == "extractive_qa":
        return predict_answers(model, eval_set, amp=amp)
    ids = predict_ids(model, eval_set, amp=amp)
    if eval_set.encoded.kind != "tagging":
        return [labels[i] for i in ids]
    return [[labels[i] for i in sentence] for sentence in ids]


def predict_answers(model: FsxltModel, eval_set: EvalSet, *, amp: bool = True) -> list[str]:
    """Each question's answer text: the best span over its windows (:mod:`fsxlt.spans`)."""
    from fsxlt.spans import answers_of, best_spans

    was_training = model.training
    model.eval()
    n = len(eval_set.encoded.rows)
    scores, starts, ends = [0.0] * n, [0] * n, [0] * n
    try:
        with torch.inference_mode(), autocast_context(eval_set.device, amp):
            for batch, rows in zip(eval_set.batches, eval_set.batch_rows, strict=True):
                owned = batch["max_context"] if eval_set.encoded.qa_decoding == "max-context" \
                    else None  # any-window: every window's starts count
                best = [t.tolist() for t in best_spans(model(batch), batch["context_mask"], owned)]
                for slot, row in enumerate(rows):
                    scores[row], starts[row], ends[row] = (part[slot] for part in best)
    finally:
        model.train(was_training)
    return answers_of(eval_set.encoded, scores, starts, ends)


def score_and_predict(model: FsxltModel, eval_set: EvalSet, task: TaskSpec, *,
                      amp: bool = True) -> tuple[dict[str, Any], list[Any]]:
    """Predict ``eval_set`` once; the task's scores and the predicted labels.

    Ranking: the predicted labels are the most probable grades, the ones a
    prediction file holds and the reported nDCG ranks by.
    """
    if not task.is_ranking:  # extractive QA too: predict_labels gives its answer texts
        predicted = predict_labels(model, eval_set, task.labels, amp=amp)
        return compute_scores(task, eval_set.encoded.gold, predicted,
                              gold_entities=eval_set.gold_entities()), predicted
    require_scorable(task, eval_set)  # before any forward pass
    ids, relevance = _forward_all(model, eval_set, amp, [float(g) for g in task.labels])
    predicted = [task.labels[i] for i in ids]
    return compute_scores(task, eval_set.encoded.gold, predicted, relevance=relevance,
                          groups=eval_set.encoded.groups, what=eval_set.name), predicted


def score(model: FsxltModel, eval_set: EvalSet, task: TaskSpec, *, amp: bool = True,
          ) -> dict[str, Any]:
    """Predict ``eval_set`` and compute the task's scores."""
    return score_and_predict(model, eval_set, task, amp=amp)[0]


def describe_examples(examples: Sequence[Example]) -> str:
    """``the 120 examples of xglue.wpr.de.dev``: how an error names a list of examples
    (the files or hub splits their ids come from)."""
    sources = dict.fromkeys(ex.id.rpartition(":")[0] or ex.id for ex in examples)
    return f"the {len(examples)} examples of {', '.join(sources) or 'nothing'}"


def prepare_eval(featurizer: Featurizer, examples: Sequence[Example],
                 device: torch.device | str = "cpu", **kwargs: Any) -> EvalSet:
    """Tokenize ``examples`` for evaluation (windows for tagging) and batch them.

    The set is named after the files its examples come from
    (:func:`describe_examples`), for errors.
    """
    encoded = featurizer.encode(examples, windows=True)
    kwargs.setdefault("name", describe_examples(examples))
    return make_eval_set(encoded, featurizer.pad_id, device, **kwargs)


def evaluate_examples(model: FsxltModel, featurizer: Featurizer, examples: Sequence[Example],
                      device: torch.device | str = "cpu", *, amp: bool = True,
                      ) -> dict[str, Any]:
    """Score ``model`` on a list of examples (one-off; loops should keep the EvalSet)."""
    eval_set = prepare_eval(featurizer, examples, device)
    return score(model, eval_set, featurizer.task, amp=amp)


def example_signals(model: FsxltModel, eval_set: EvalSet, *, amp: bool = True,
                    ) -> tuple[Any, Any]:
    """What a model makes of each example, in one batched pass (for shot selection).

    Returns ``(embeddings, entropy)`` as NumPy arrays with one row per
    example: what the model's prediction reads (:meth:`FsxltModel.represent`:
    the pooled [CLS] state, or the state at the mask that a method's own
    output head scores; tagging: the mean of the sentence's word vectors),
    L2-normalised, and the entropy in nats of the predicted distribution
    (tagging: the mean over its words).
    """
    import numpy as np

    slots = eval_set.output_slots()
    was_training = model.training
    model.eval()
    features, entropy = None, None
    try:
        with torch.inference_mode(), autocast_context(eval_set.device, amp):
            for batch, where in zip(eval_set.batches, slots, strict=True):
                pooled, logits = model.represent(batch)
                log_p = logits.float().log_softmax(dim=-1)
                if features is None:
                    features = torch.zeros(eval_set.n_outputs, pooled.shape[-1],
                                           device=eval_set.device)
                    entropy = torch.zeros(eval_set.n_outputs, device=eval_set.device)
                features[where] = pooled.float()
                entropy[where] = -(log_p.exp() * log_p).sum(dim=-1)
    finally:
        model.train(was_training)
    if features is None:
        return np.zeros((0, 0)), np.zeros(0)
    vectors, values = features.cpu().numpy(), entropy.cpu().numpy()
    if eval_set.encoded.kind == "tagging":
        bounds = np.cumsum([0] + list(eval_set.encoded.word_counts))
        spans = list(zip(bounds[:-1], bounds[1:], strict=True))
        vectors = np.stack([vectors[a:b].mean(axis=0) for a, b in spans])
        values = np.array([values[a:b].mean() for a, b in spans])
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return vectors / np.maximum(norms, 1e-12), values
