"""Mixup of source and target representations: the ``mixup`` regime's step.

As the peer study defines it (Schmidt et al., 2022, after Zhang et al., 2018), a step
holds a batch of source rows and a batch of bucket rows. Their *units* are what the
classifier scores: one per sentence (or sentence pair) for classification, one per
scored word for tagging. With ``n`` source and ``m`` target units, ``max(n, m)`` pairs
are drawn, each a source unit and a target unit chosen uniformly with replacement, and
each pair gets its own λ ~ Beta(α, α). The pair's encoder output vectors (the [CLS]
state, a word's state; :meth:`FsxltModel.encode`) are mixed as λ·source + (1-λ)·target,
its one-hot labels the same way, and the head (pooler, dropout, classifier) scores the
mixed vector. The loss is the soft cross-entropy −Σ_c y_c log softmax(logits)_c, averaged
over the pairs; no loss is taken on unmixed units.

Head-only methods train on cached features (:mod:`fsxlt.training.features`): there the
vectors mixed are the cached ones, the encoder's output, or the pooler's output where
the method's features end after it (fc on classification).

The pairing and the λs come from the run's own seeded generator (:class:`PairDrawer`),
so a run gives the same pairs every time; dropout draws from torch's generator, seeded
per run as in every step.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from torch.nn import functional as F

from fsxlt.models.model import FsxltModel
from fsxlt.models.precision import autocast_context, loss_scaler
from fsxlt.training.loop import optimizer_step

MIXUP_KINDS = ("classification", "tagging")


@dataclass(frozen=True)
class Pairing:
    """Which source unit meets which target unit, and with which weight λ (of the source)."""

    source: np.ndarray   # (pairs,) index into the step's source units
    target: np.ndarray   # (pairs,) index into the step's target units
    lam: np.ndarray      # (pairs,) λ of each pair


def units_of(rows: Sequence[Any]) -> int:
    """The scored units of training rows: their labels (one per sentence, one per word)."""
    return sum(len(row.labels) for row in rows)


class PairDrawer:
    """Draws the pairs of one run's mixup steps from a seeded generator."""

    def __init__(self, alpha: float, seed: int, units: Callable[[Sequence[Any]], int] = units_of):
        self.alpha = float(alpha)
        self.rng = np.random.default_rng(int(seed))
        self.units = units

    def draw(self, source_rows: Sequence[Any], target_rows: Sequence[Any]) -> Pairing:
        n, m = self.units(source_rows), self.units(target_rows)
        pairs = max(n, m)
        return Pairing(source=self.rng.integers(0, n, size=pairs),
                       target=self.rng.integers(0, m, size=pairs),
                       lam=self.rng.beta(self.alpha, self.alpha, size=pairs))


def soft_cross_entropy(logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """Mean over rows of −Σ_c target_c · log softmax(logits)_c."""
    return -(targets * F.log_softmax(logits.float(), dim=-1)).sum(dim=-1).mean()


def _vectors(model: FsxltModel, batches: Sequence[dict[str, torch.Tensor]], precision: str,
             ) -> tuple[torch.Tensor, torch.Tensor, bool]:
    """The units' vectors and labels over micro-batches; whether they are pooled already."""
    vectors, labels, pooled = [], [], False
    for batch in batches:
        if "pooled" in batch:
            vectors.append(batch["pooled"])
            pooled = True
        elif "features" in batch:
            vectors.append(batch["features"])
        else:
            with autocast_context(batch["labels"].device, precision):
                vectors.append(model.encode(batch))
        labels.append(batch["labels"])
    return torch.cat(vectors).float(), torch.cat(labels), pooled


def mixup_loss(model: FsxltModel, source: Sequence[dict[str, torch.Tensor]],
               target: Sequence[dict[str, torch.Tensor]], pairing: Pairing, *,
               precision: str = "auto") -> torch.Tensor:
    """The soft cross-entropy of the mixed pairs (module docstring)."""
    xs, ys, pooled = _vectors(model, source, precision)
    xt, yt, _ = _vectors(model, target, precision)
    device = xs.device
    lam = torch.as_tensor(pairing.lam, dtype=torch.float32, device=device).unsqueeze(-1)
    at_s = torch.as_tensor(pairing.source, dtype=torch.long, device=device)
    at_t = torch.as_tensor(pairing.target, dtype=torch.long, device=device)
    mixed = lam * xs[at_s] + (1 - lam) * xt[at_t]
    n_labels = model.n_outputs
    labels = (lam * F.one_hot(ys[at_s], n_labels).float()
              + (1 - lam) * F.one_hot(yt[at_t], n_labels).float())
    with autocast_context(device, precision):
        logits = model.classify(mixed) if pooled else model.head(mixed)
    return soft_cross_entropy(logits, labels)


def mixup_step(model: FsxltModel, source: Sequence[dict[str, torch.Tensor]],
               target: Sequence[dict[str, torch.Tensor]], pairing: Pairing,
               optimizer: Any, *, precision: str = "auto") -> float:
    """One optimizer step on the mixed pairs; returns the loss."""
    model.train()
    optimizer.zero_grad(set_to_none=True)
    loss = mixup_loss(model, source, target, pairing, precision=precision)
    scaler = loss_scaler(optimizer, precision, loss.device)
    (scaler.scale(loss) if scaler is not None else loss).backward()
    optimizer_step(optimizer, scaler)
    return float(loss.detach())


__all__ = ["MIXUP_KINDS", "Pairing", "PairDrawer", "mixup_loss", "mixup_step",
           "soft_cross_entropy", "units_of"]
