"""Metrics and fast batched prediction.

Metrics (METHOD.md §2), all reported as fractions in [0, 1]:

- ``accuracy`` (classification): scikit-learn's accuracy.
- ``seqeval_f1`` (NER): entity-level micro F1 of seqeval (conlleval-style
  chunking of BIO tags); precision and recall are recorded too.
- ``token_accuracy`` (POS): correct words / all words, which equals micro F1
  over words because every word gets exactly one tag. seqeval's F1 over the
  raw tags is recorded as ``seqeval_f1`` as well, for comparison with
  published numbers that were computed that way.

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

from collections.abc import Sequence
from contextlib import nullcontext
from dataclasses import dataclass
from typing import Any

import torch

from fsxlt.data import Example
from fsxlt.modeling import EncodedSplit, Featurizer, FsxltModel, collate
from fsxlt.tasks import TaskSpec

DEFAULT_EVAL_TOKENS = 32768
DEFAULT_EVAL_ROWS = 512


# --------------------------------------------------------------------------- metrics

def accuracy(gold: Sequence[str], predicted: Sequence[str]) -> float:
    from sklearn.metrics import accuracy_score

    return float(accuracy_score(list(gold), list(predicted))) if gold else 0.0


def entity_set(tags: Sequence[Sequence[str]]) -> frozenset[tuple[str, int, int]]:
    """seqeval's chunks (default conlleval mode) of a list of tag sequences, as a set.

    Sentences are joined with an ``O`` between them, as seqeval does, so
    ``(type, start, end)`` are offsets into that joined sequence.
    """
    import warnings

    from seqeval.metrics.sequence_labeling import get_entities

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # tags without B-/I- (POS) warn
        return frozenset(get_entities([list(s) for s in tags]))


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
    correct = sum(g == p for gs, ps in zip(gold, predicted, strict=True)
                  for g, p in zip(gs, ps, strict=True))
    return correct / total if total else 0.0


def compute_scores(task: TaskSpec, gold: Sequence[Any], predicted: Sequence[Any], *,
                   gold_entities: frozenset[tuple[str, int, int]] | None = None,
                   ) -> dict[str, Any]:
    """All scores of ``task``'s metric; ``score`` is the one model selection uses.

    ``gold_entities``: :func:`entity_set` of ``gold``, precomputed (tagging only).
    """
    metric = task.metric
    if metric == "accuracy":
        acc = accuracy(gold, predicted)
        return {"metric": metric, "score": acc, "accuracy": acc, "n": len(gold)}
    if metric == "seqeval_f1":
        s = seqeval_scores(gold, predicted, gold_entities=gold_entities)
        return {"metric": metric, "score": s["f1"], "seqeval_f1": s["f1"],
                "precision": s["precision"], "recall": s["recall"],
                "token_accuracy": token_accuracy(gold, predicted), "n": len(gold),
                "n_words": sum(len(g) for g in gold)}
    if metric == "token_accuracy":
        acc = token_accuracy(gold, predicted)
        return {"metric": metric, "score": acc, "token_accuracy": acc,
                "seqeval_f1": seqeval_scores(gold, predicted,
                                             gold_entities=gold_entities)["f1"],
                "n": len(gold),
                "n_words": sum(len(g) for g in gold)}
    raise ValueError(f"unknown metric {metric!r}")


# --------------------------------------------------------------------------- prediction

@dataclass
class EvalSet:
    """A split ready for repeated prediction: pre-collated, length-sorted batches."""

    encoded: EncodedSplit
    batches: list[dict[str, torch.Tensor]]
    batch_rows: list[list[int]]  # row indices (into encoded.rows) of each batch
    device: torch.device
    _gold_entities: frozenset[tuple[str, int, int]] | None = None

    @property
    def n_examples(self) -> int:
        return self.encoded.n_examples

    def gold_entities(self) -> frozenset[tuple[str, int, int]] | None:
        """The gold tags' seqeval chunks, extracted once (``None`` for classification)."""
        if self.encoded.kind != "tagging":
            return None
        if self._gold_entities is None:
            self._gold_entities = entity_set(self.encoded.gold)
        return self._gold_entities


def make_eval_set(encoded: EncodedSplit, pad_id: int, device: torch.device | str = "cpu", *,
                  max_tokens: int = DEFAULT_EVAL_TOKENS, max_rows: int = DEFAULT_EVAL_ROWS,
                  ) -> EvalSet:
    """Sort rows by length and cut them into padded batches of at most ``max_tokens``."""
    device = torch.device(device)
    order = sorted(range(len(encoded.rows)), key=lambda i: (len(encoded.rows[i].input_ids), i))
    batch_rows: list[list[int]] = []
    current: list[int] = []
    for index in order:
        length = len(encoded.rows[index].input_ids)
        if current and ((len(current) + 1) * length > max_tokens or len(current) >= max_rows):
            batch_rows.append(current)
            current = []
        current.append(index)
    if current:
        batch_rows.append(current)
    batches = [collate([encoded.rows[i] for i in rows], pad_id, device) for rows in batch_rows]
    return EvalSet(encoded, batches, batch_rows, device)


def autocast_context(device: torch.device, enabled: bool = True):
    """bf16 autocast on CUDA; nothing elsewhere (CPU runs stay exact and deterministic)."""
    if enabled and device.type == "cuda":
        return torch.autocast("cuda", dtype=torch.bfloat16)
    return nullcontext()


def predict_ids(model: FsxltModel, eval_set: EvalSet, *, amp: bool = True) -> list[Any]:
    """Predicted label ids: one per example, or one list (every word) per sentence."""
    encoded = eval_set.encoded
    was_training = model.training
    model.eval()
    out: list[Any]
    if encoded.kind == "classification":
        out = [None] * encoded.n_examples
    else:
        out = [[None] * n for n in encoded.word_counts]
    try:
        with torch.inference_mode(), autocast_context(eval_set.device, amp):
            for batch, rows in zip(eval_set.batches, eval_set.batch_rows, strict=True):
                predicted = model(batch).argmax(dim=-1).tolist()
                if encoded.kind == "classification":
                    for row_index, label in zip(rows, predicted, strict=True):
                        out[encoded.rows[row_index].example] = label
                    continue
                cursor = 0
                for row_index in rows:
                    row = encoded.rows[row_index]
                    sentence = out[row.example]
                    for word in row.words:
                        sentence[word] = predicted[cursor]
                        cursor += 1
    finally:
        model.train(was_training)
    return out


def predict_labels(model: FsxltModel, eval_set: EvalSet, labels: Sequence[str], *,
                   amp: bool = True) -> list[Any]:
    """Like :func:`predict_ids` but with label names."""
    ids = predict_ids(model, eval_set, amp=amp)
    if eval_set.encoded.kind == "classification":
        return [labels[i] for i in ids]
    return [[labels[i] for i in sentence] for sentence in ids]


def score(model: FsxltModel, eval_set: EvalSet, task: TaskSpec, *, amp: bool = True,
          ) -> dict[str, Any]:
    """Predict ``eval_set`` and compute the task's scores."""
    predicted = predict_labels(model, eval_set, task.labels, amp=amp)
    return compute_scores(task, eval_set.encoded.gold, predicted,
                          gold_entities=eval_set.gold_entities())


def prepare_eval(featurizer: Featurizer, examples: Sequence[Example],
                 device: torch.device | str = "cpu", **kwargs: Any) -> EvalSet:
    """Tokenize ``examples`` for evaluation (windows for tagging) and batch them."""
    encoded = featurizer.encode(examples, windows=True)
    return make_eval_set(encoded, featurizer.pad_id, device, **kwargs)


def evaluate_examples(model: FsxltModel, featurizer: Featurizer, examples: Sequence[Example],
                      device: torch.device | str = "cpu", *, amp: bool = True,
                      ) -> dict[str, Any]:
    """Score ``model`` on a list of examples (one-off; loops should keep the EvalSet)."""
    eval_set = prepare_eval(featurizer, examples, device)
    return score(model, eval_set, featurizer.task, amp=amp)


def evaluate_checkpoint(checkpoint: str, task: TaskSpec | str, examples: Sequence[Example], *,
                        device: str | torch.device | None = None, amp: bool = True,
                        max_seq_length: int | None = None) -> dict[str, Any]:
    """Load a checkpoint (or encoder with a fresh, seeded head) and score ``examples``."""
    from fsxlt.tasks import get_task
    from fsxlt.training.checkpoint import load_start, resolve_device

    task = get_task(task)
    device = resolve_device(device)
    start = load_start(checkpoint, task, seed=task.training.seed)
    model = start.model.to(device)
    featurizer = Featurizer(start.tokenizer, task, max_seq_length)
    return evaluate_examples(model, featurizer, examples, device, amp=amp)
