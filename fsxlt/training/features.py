"""Encoder features computed once and reused by every head-only adapting run.

The head-only methods of docs/protocol.md#adapting-variants (fc, fc-pooler, cos-pooler,
fc-reset-pooler) freeze the embeddings and every transformer layer, and
:class:`~fsxlt.models.model.FsxltModel` runs a frozen encoder in eval mode (no
dropout). The encoder's output is then a fixed function of the input, the
same in every epoch of every run of an engine, because every run starts by
restoring the same starting weights. Recomputing it for the dev set after
every epoch is over 90% of a naive loop's work; this module computes it once
per split and *feature point* and keeps it, so that a run only trains and
evaluates the head.

Feature points (where the frozen part ends and the trained part begins):

``encoder``
    What :meth:`FsxltModel.encode` returns: the [CLS] hidden state *before*
    the pooler (classification) or the last-wordpiece state of every scored
    word (tagging). Used by fc-pooler, cos-pooler and fc-reset-pooler (they
    train the pooler) and by fc on tagging models (they have no pooler).
``pooled``
    The pooler's output. Used by fc on classification models, which trains
    only the classifier. It is derived from the cached ``encoder`` features
    with the pooler the run starts with, and keyed by a digest of that
    pooler's weights: with a fresh head (the no-source-training ablation on an
    encoder without a pretrained pooler) the pooler is re-drawn from the
    run's seed, so the pooled features can differ from run to run.

Numerics are those of the uncached path: the features come from the same
batches (same padding, same order) under the same autocast setting, and the
head sees them in the same micro-batches, so dropout in the head draws the
same masks from the same seeded generator. On CPU the results are
bit-identical; ``tests/test_feature_cache.py`` checks head weights, dev
curves and test scores against training through the frozen encoder.

How the cache is used: the engine registers its dev and test
:class:`~fsxlt.models.prediction.EvalSet` objects once. Before each run it calls
:meth:`FeatureCache.activate` with the run's feature point, which makes those
same objects serve feature batches (or their token batches again, for full
fine-tuning), so prediction and scoring code needs no change. Bucket batches
are converted per run by :meth:`FeatureCache.bucket_batches` (a bucket is
small; caching it would buy nothing).

Invariant the caller keeps: while a point is active the model's encoder
holds the engine's starting weights and is frozen. ``activate`` checks the
"frozen" half; the engine's reset before every run guarantees the other.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from contextlib import contextmanager
from dataclasses import dataclass

import torch

from fsxlt.errors import FsxltError
from fsxlt.methods import Method, get_method
from fsxlt.models.model import FsxltModel
from fsxlt.models.precision import autocast_context
from fsxlt.models.prediction import EvalSet

ENCODER = "encoder"
POOLED = "pooled"
Batch = dict[str, torch.Tensor]


def feature_point(model: FsxltModel, method: str | Method) -> str | None:
    """Where ``method``'s trained part begins: ``None`` (no caching), ``"encoder"``, ``"pooled"``.

    The method says (:meth:`~fsxlt.methods.Method.feature_point`); a point is
    only honoured when the method really left the encoder frozen, which
    :meth:`FeatureCache.activate` checks.
    """
    point = get_method(method, model.kind).feature_point(model)
    if point not in (None, ENCODER, POOLED):
        raise FsxltError(f"method {method}: unknown feature point {point!r}")
    if point == POOLED and model.pooler is None:
        return ENCODER
    return point


def pooler_digest(model: FsxltModel) -> str:
    """A content hash of the pooler's weights (the key of pooled features)."""
    digest = hashlib.blake2b(digest_size=16)
    if model.pooler is not None:
        for name, tensor in sorted(model.pooler.state_dict().items()):
            digest.update(name.encode())
            digest.update(tensor.detach().to("cpu", torch.float32).contiguous().numpy().tobytes())
    return digest.hexdigest()


@contextmanager
def _frozen_forward(model: FsxltModel, device: torch.device, precision: str):
    """Eval mode (no dropout), no autograd, and the same autocast as training/prediction."""
    was_training = model.training
    model.eval()
    try:
        with torch.no_grad(), autocast_context(device, precision):
            yield
    finally:
        model.train(was_training)


@dataclass
class _Split:
    """One registered split: its token batches and the feature batches made from them."""

    eval_set: EvalSet
    token_batches: list[Batch]
    encoder: list[Batch] | None = None
    pooled: list[Batch] | None = None
    pooled_key: str | None = None
    encoder_passes: int = 0  # how often the encoder ran over this split (1 at most)


class FeatureCache:
    """Per-split ``encoder``/``pooled`` features for one model's starting weights.

    ``enabled=False`` makes every method run through the encoder (the
    reference path; the benchmark and the tests compare the two).
    """

    def __init__(self, model: FsxltModel, device: torch.device, *, precision: str = "auto",
                 enabled: bool = True):
        self.model = model
        self.device = device
        self.precision = precision
        self.enabled = enabled
        self.splits: dict[str, _Split] = {}
        self.active: str | None = None

    def register(self, name: str, eval_set: EvalSet | None) -> None:
        """Make ``eval_set`` (the engine's dev or test set) switchable between points."""
        if eval_set is not None:
            self.splits[name] = _Split(eval_set, list(eval_set.batches))

    def point_for(self, method: str | Method) -> str | None:
        """The feature point this cache will use for ``method`` (``None``: no caching)."""
        return feature_point(self.model, method) if self.enabled else None

    def activate(self, point: str | None) -> None:
        """Let every registered split serve ``point``'s features (``None``: token batches)."""
        if point is not None and self.model.encoder_trainable:
            raise FsxltError("cached features need a frozen encoder")
        for split in self.splits.values():
            split.eval_set.batches = self._batches_for(split, point)
        self.active = point

    def bucket_batches(self, batches: Sequence[Batch], point: str | None) -> list[Batch]:
        """The bucket's micro-batches as feature batches (computed now, not kept)."""
        if point is None:
            return list(batches)
        encoded = self._encode(batches)
        return encoded if point == ENCODER else self._pool(encoded)

    # ----------------------------------------------------------------- internals

    def _batches_for(self, split: _Split, point: str | None) -> list[Batch]:
        if point is None:
            return split.token_batches
        if split.encoder is None:
            split.encoder = self._encode(split.token_batches)
            split.encoder_passes += 1
        if point == ENCODER:
            return split.encoder
        key = pooler_digest(self.model)
        if split.pooled is None or split.pooled_key != key:
            split.pooled, split.pooled_key = self._pool(split.encoder), key
        return split.pooled

    def _encode(self, batches: Sequence[Batch]) -> list[Batch]:
        out = []
        with _frozen_forward(self.model, self.device, self.precision):
            for batch in batches:
                kept = {k: batch[k] for k in ("attention_mask", "context_mask", "max_context")
                        if k in batch and self.model.kind == "extractive_qa"}  # span masks
                out.append({"features": self.model.encode(batch), "labels": batch["labels"],
                            **kept})
        return out

    def _pool(self, encoded: Sequence[Batch]) -> list[Batch]:
        out = []
        with _frozen_forward(self.model, self.device, self.precision):
            for batch in encoded:
                out.append({"pooled": self.model.pool(batch["features"]),
                            "labels": batch["labels"]})
        return out
