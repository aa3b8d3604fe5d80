"""Training regimes of adapting: the study's sequential one and joint source+target training.

``sequential`` (the default, the study's): the start is adapted on the bucket alone
(:mod:`fsxlt.training.adapt`). The joint regimes train on the source language's
training data and the bucket together, from a source-trained checkpoint or from the
pretrained encoder, as the training regimes of Schmidt et al. (2022) do:

- ``joint``: one pool holds the source training set and the bucket repeated
  ``target_repeat`` times; it is shuffled with the run's seed and cut into batches of
  ``batch_size`` (a new shuffle when the pool runs out). Loss: the mean over the batch.
- ``joint-mixup``: every batch holds the next ``batch_size`` source examples (a seeded
  shuffle of the source set) and the whole bucket. Loss: the mean over the batch.
- ``joint-macro``: the batches of ``joint-mixup``; loss: the mean of the source
  examples' mean loss and the bucket's mean loss (each language weighs half).

An epoch is ``steps_per_epoch`` optimizer steps; the target dev set is scored after
every epoch and early stopping and selection work as in sequential adapting. The
source rows are tokenized once per engine (``AdaptEngine.set_source``). "Mean" is over
examples for classification and over scored words for tagging, as in every fsxlt step.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import torch

from fsxlt.errors import FsxltError

SEQUENTIAL = "sequential"
REGIMES = (SEQUENTIAL, "joint", "joint-mixup", "joint-macro")
REGIME_OPTIONS = ("batch_size", "steps_per_epoch", "target_repeat")


@dataclass(frozen=True)
class Regime:
    """A regime and its settings (module docstring); the defaults are the sequential one."""

    name: str = SEQUENTIAL
    batch_size: int = 32        # source examples per step (joint: examples per step)
    steps_per_epoch: int = 20   # optimizer steps between two dev evaluations
    target_repeat: int = 100    # joint: copies of the bucket in the pool

    def __post_init__(self) -> None:
        if self.name not in REGIMES:
            raise FsxltError(f"unknown regime {self.name!r}; valid: {', '.join(REGIMES)}")
        for key in REGIME_OPTIONS:
            value = getattr(self, key)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise FsxltError(f"regime {self.name}: {key} must be an integer >= 1, "
                                 f"got {value!r}")

    @property
    def is_sequential(self) -> bool:
        return self.name == SEQUENTIAL

    def changes(self) -> dict[str, Any]:
        """What identifies a run's regime: nothing for the sequential one."""
        if self.is_sequential:
            return {}
        out = {"name": self.name, "batch_size": self.batch_size,
               "steps_per_epoch": self.steps_per_epoch}
        if self.name == "joint":
            out["target_repeat"] = self.target_repeat
        return out

    def describe(self) -> dict[str, Any]:
        """The record's ``regime`` block (without the source data's facts)."""
        return self.changes() or {"name": SEQUENTIAL}


def parse_regime(name: Any, options: dict[str, Any] | None = None,
                 where: str = "regime") -> Regime:
    """A :class:`Regime` from its name and options (a config's or the CLI's), checked."""
    if not isinstance(name, str) or name not in REGIMES:
        raise FsxltError(f"{where}: unknown regime {name!r}; valid: {', '.join(REGIMES)}")
    options = dict(options or {})
    unknown = sorted(set(options) - set(REGIME_OPTIONS))
    if unknown:
        raise FsxltError(f"{where}: unknown regime option(s) {', '.join(unknown)}; valid: "
                         f"{', '.join(REGIME_OPTIONS)}")
    given = {key: value for key, value in options.items() if value is not None}
    try:
        return Regime(name, **given)
    except FsxltError as err:
        raise FsxltError(f"{where}: {err}") from None


@dataclass
class _Stream:
    """Rows in a seeded shuffled order, taken in slices; reshuffled when they run out."""

    rows: Sequence[Any]
    generator: torch.Generator
    order: list[int] | None = None
    at: int = 0

    def take(self, n: int) -> list[Any]:
        out: list[Any] = []
        while len(out) < n:
            if self.order is None or self.at >= len(self.order):
                self.order = torch.randperm(len(self.rows), generator=self.generator).tolist()
                self.at = 0
            end = min(len(self.order), self.at + n - len(out))
            out.extend(self.rows[i] for i in self.order[self.at:end])
            self.at = end
        return out


# one step's training rows in groups, each with the weight of its mean loss
Step = list[tuple[list[Any], float]]


class JointMixer:
    """The steps of a joint run: which source and bucket rows each step trains on."""

    def __init__(self, regime: Regime, source_rows: Sequence[Any], bucket_rows: Sequence[Any],
                 seed: int):
        if regime.is_sequential:
            raise FsxltError("the sequential regime trains on the bucket alone")
        if not source_rows:
            raise FsxltError(f"regime {regime.name} needs source training data; none was given")
        self.regime = regime
        self.bucket = list(bucket_rows)
        generator = torch.Generator().manual_seed(int(seed))
        pool = (list(source_rows) + self.bucket * regime.target_repeat
                if regime.name == "joint" else source_rows)
        self.stream = _Stream(pool, generator)

    def epoch(self) -> Iterator[Step]:
        """``steps_per_epoch`` steps, continuing where the previous epoch stopped."""
        for _ in range(self.regime.steps_per_epoch):
            yield self._step()

    def _step(self) -> Step:
        drawn = self.stream.take(self.regime.batch_size)
        if self.regime.name == "joint":
            return [(drawn, 1.0)]
        if self.regime.name == "joint-mixup":
            return [(drawn + self.bucket, 1.0)]
        return [(drawn, 0.5), (self.bucket, 0.5)]  # joint-macro


def regime_record(regime: Regime, source: dict[str, Any] | None) -> dict[str, Any]:
    """The record's ``regime`` block: the settings and the source data the run read."""
    return {**regime.describe(), "source_train": source}


__all__ = ["REGIMES", "Regime", "JointMixer", "Step", "parse_regime", "regime_record"]
