"""Fast batched prediction of a split, with the model selection's scores.

Prediction is built for a loop that evaluates a dev set after every epoch,
thousands of times: a split is tokenized once into an :class:`EvalSet`
whose batches are sorted by length, padded per batch (dynamic padding), cut
by a token budget (large batches of short inputs) and moved to the device
once. :func:`predict` then only runs forward passes, under
``torch.inference_mode`` and the run's precision (:mod:`fsxlt.models.precision`:
bf16 autocast on a GPU that runs it natively by default, fp32 on CPU).

Tagging evaluation scores **every word**: a sentence longer than
``max_seq_length`` wordpieces is split at word boundaries into consecutive
windows, each predicted separately, and the predictions are stitched back
together (training, in contrast, truncates). Words that the tokenizer maps
to no wordpiece at all are fed as the unknown token, so they are scored too.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch

from fsxlt.data import Example
from fsxlt.metrics.scores import check_rankable, compute_scores, entity_set
from fsxlt.models.encoding import EncodedSplit, Featurizer, collate
from fsxlt.models.model import FsxltModel
from fsxlt.models.precision import autocast_context
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


def require_scorable(task: TaskSpec, eval_set: EvalSet, what: str | None = None) -> None:
    """Refuse ``eval_set`` before any training if ``task``'s metric has no score for it.

    Only nDCG can lack one (:func:`check_rankable`); ``what`` names the set
    in the error (default: the set's own name).
    """
    if task.is_ranking:
        check_rankable(eval_set.encoded.groups or [], what or eval_set.name)


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


def _forward_all(model: FsxltModel, eval_set: EvalSet, precision: str,
                 grades: Sequence[float] | None = None) -> tuple[list[int], list[float] | None]:
    """One pass: the argmax id of every output, and with ``grades`` (ranking) each
    example's expected grade under the model's distribution."""
    slots = eval_set.output_slots()
    was_training = model.training
    model.eval()
    expected = None
    try:
        with torch.inference_mode(), autocast_context(eval_set.device, precision):
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


def predict_ids(model: FsxltModel, eval_set: EvalSet, *, precision: str = "auto") -> list[Any]:
    """Predicted label ids: one per example, or one list (every word) per sentence."""
    encoded = eval_set.encoded
    ids, _ = _forward_all(model, eval_set, precision)
    if encoded.kind != "tagging":
        return ids
    out, start = [], 0
    for count in encoded.word_counts:
        out.append(ids[start:start + count])
        start += count
    return out


def predict_labels(model: FsxltModel, eval_set: EvalSet, labels: Sequence[str], *,
                   precision: str = "auto") -> list[Any]:
    """Like :func:`predict_ids` but with label names (extractive QA: answer texts)."""
    if eval_set.encoded.kind == "extractive_qa":
        return predict_answers(model, eval_set, precision=precision)
    ids = predict_ids(model, eval_set, precision=precision)
    if eval_set.encoded.kind != "tagging":
        return [labels[i] for i in ids]
    return [[labels[i] for i in sentence] for sentence in ids]


def predict_answers(model: FsxltModel, eval_set: EvalSet, *, precision: str = "auto") -> list[str]:
    """Each question's answer text: the best span over its windows (:mod:`fsxlt.models.spans`)."""
    from fsxlt.models.spans import answers_of, best_spans

    was_training = model.training
    model.eval()
    n = len(eval_set.encoded.rows)
    scores, starts, ends = [0.0] * n, [0] * n, [0] * n
    try:
        with torch.inference_mode(), autocast_context(eval_set.device, precision):
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
                      precision: str = "auto") -> tuple[dict[str, Any], list[Any]]:
    """Predict ``eval_set`` once; the task's scores and the predicted labels.

    Ranking: the predicted labels are the most probable grades, the ones a
    prediction file holds and the reported nDCG ranks by.
    """
    if not task.is_ranking:  # extractive QA too: predict_labels gives its answer texts
        predicted = predict_labels(model, eval_set, task.labels, precision=precision)
        return compute_scores(task, eval_set.encoded.gold, predicted,
                              gold_entities=eval_set.gold_entities()), predicted
    require_scorable(task, eval_set)  # before any forward pass
    ids, relevance = _forward_all(model, eval_set, precision, [float(g) for g in task.labels])
    predicted = [task.labels[i] for i in ids]
    return compute_scores(task, eval_set.encoded.gold, predicted, relevance=relevance,
                          groups=eval_set.encoded.groups, what=eval_set.name), predicted


def score(model: FsxltModel, eval_set: EvalSet, task: TaskSpec, *, precision: str = "auto",
          ) -> dict[str, Any]:
    """Predict ``eval_set`` and compute the task's scores."""
    return score_and_predict(model, eval_set, task, precision=precision)[0]


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
                      device: torch.device | str = "cpu", *, precision: str = "auto",
                      ) -> dict[str, Any]:
    """Score ``model`` on a list of examples (one-off; loops should keep the EvalSet)."""
    eval_set = prepare_eval(featurizer, examples, device)
    return score(model, eval_set, featurizer.task, precision=precision)


def example_signals(model: FsxltModel, eval_set: EvalSet, *, precision: str = "auto",
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
        with torch.inference_mode(), autocast_context(eval_set.device, precision):
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
