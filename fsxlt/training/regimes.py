"""Training regimes of adapting: the study's sequential one and source+target training.

``sequential`` (the default, the study's): the start is adapted on the bucket alone
(:mod:`fsxlt.training.adapt`). The other regimes train on the source language's
training data and the bucket together, from a source-trained checkpoint or from the
pretrained encoder, as the training regimes of Schmidt et al. (2022) do:

- ``joint``: one pool holds the source training set and the bucket repeated
  ``target_repeat`` times; it is shuffled with the run's seed and cut into batches of
  ``batch_size`` (a new shuffle when the pool runs out). Loss: the mean over the batch.
- ``joint-concat``: every step trains on ``batch_size`` source rows and the bucket's
  rows (the whole bucket, or ``target_batch_size`` of them) in one batch. Loss: the
  mean over the batch (the peer's ``micro`` reduction). fsxlt 0.2 and 0.3 called it
  ``joint-mixup``; records of that name are read as ``joint-concat``
  (:data:`LEGACY_NAMES`).
- ``joint-macro``: the batches of ``joint-concat``; loss: the mean of the source
  rows' mean loss and the bucket rows' mean loss (each language weighs half).
- ``mixup``: the batches of ``joint-concat``, mixed (:mod:`fsxlt.training.mixup`): the
  encoder's output vectors of source and bucket units (sentences; scored words for
  tagging) are paired at random, interpolated with λ ~ Beta(``alpha``, ``alpha``),
  their one-hot labels likewise, and the loss is the soft cross-entropy of the mixed
  vectors, averaged over pairs; unmixed units get no loss.
- ``multi``: the peer's multilingual training: the source rows and the buckets of
  several target languages (``languages``; the same K and bucket index in each) train
  one model; loss: the mean of each language's mean loss (the source's included, each
  weighing 1 / (1 + targets)). The languages are taken in sorted order with their own
  seeded streams, so the run of every language trains the same model; each run then
  selects its epoch and lr on its own language's dev set. With ``multi_epochs`` N (the
  peer's multi-stage recipe) the first N epochs train so and the later ones train the
  source and the run's own language only, as ``joint-macro`` does.

Steps and epochs: ``target_batch_size`` None takes the whole bucket in every step; N
takes the next N bucket rows of a seeded shuffle, cycling through the bucket (the last
slice of a pass may be shorter; a new shuffle starts the next pass). The bucket's pass
carries on from one epoch into the next, unless ``target_restart``: then every epoch
begins a new pass, as the peer's Lightning data loaders restart every epoch (this
differs when K exceeds ``target_batch_size`` and is no multiple of it). ``epoch`` ``steps``
makes an epoch ``steps_per_epoch`` optimizer steps; ``source-pass`` makes it one pass
over the source data (ceil(source rows / ``batch_size``) steps, reshuffled every
epoch), as the peer's epochs are. The target dev set is scored after every epoch and
early stopping and selection work as in sequential adapting. The source rows are
tokenized once per engine (``AdaptEngine.set_source``). "Mean" is over examples for
classification and over scored words for tagging, as in every fsxlt step.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, replace
from typing import Any

import torch

from fsxlt.errors import FsxltError
from fsxlt.study.runs import LEGACY_REGIMES, regime_label
from fsxlt.training.mixup import PairDrawer, Pairing, units_of

SEQUENTIAL = "sequential"
REGIMES = (SEQUENTIAL, "joint", "joint-concat", "joint-macro", "mixup", "multi")
# names of earlier versions, read from records (never accepted as a regime to run)
LEGACY_NAMES = LEGACY_REGIMES
INT_OPTIONS = ("batch_size", "steps_per_epoch", "target_repeat", "target_batch_size",
               "multi_epochs")
REGIME_OPTIONS = (*INT_OPTIONS, "epoch", "alpha", "languages", "target_restart")
EPOCHS = ("steps", "source-pass")
# which regimes an option is for (the others are refused when given)
OPTION_REGIMES = {"target_repeat": ("joint",), "alpha": ("mixup",), "languages": ("multi",),
                  "multi_epochs": ("multi",),
                  "target_batch_size": ("joint-concat", "joint-macro", "mixup", "multi"),
                  "target_restart": ("joint-concat", "joint-macro", "mixup", "multi")}


@dataclass(frozen=True)
class Regime:
    """A regime and its settings (module docstring); the defaults are the sequential one."""

    name: str = SEQUENTIAL
    batch_size: int = 32        # source rows per step (joint: rows of the pool per step)
    steps_per_epoch: int = 20   # optimizer steps between two dev evaluations (epoch: steps)
    target_repeat: int = 100    # joint: copies of the bucket in the pool
    target_batch_size: int | None = None  # bucket rows per step, cycling; None: all
    epoch: str = "steps"        # steps | source-pass
    alpha: float = 0.4          # mixup: λ ~ Beta(alpha, alpha)
    languages: tuple[str, ...] = ()  # multi: the target languages trained together
    multi_epochs: int | None = None  # multi-stage: multi for these epochs, then macro
    target_restart: bool = False  # every epoch a new pass over the bucket (the peer's)

    def __post_init__(self) -> None:
        if self.name not in REGIMES:
            raise FsxltError(_unknown(self.name))
        for key in INT_OPTIONS:
            value = getattr(self, key)
            if key in ("target_batch_size", "multi_epochs") and value is None:
                continue
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise FsxltError(f"regime {self.name}: {key} must be an integer >= 1, "
                                 f"got {value!r}")
        if self.epoch not in EPOCHS:
            raise FsxltError(f"regime {self.name}: epoch must be one of {', '.join(EPOCHS)}, "
                             f"got {self.epoch!r}")
        if not isinstance(self.target_restart, bool):
            raise FsxltError(f"regime {self.name}: target_restart must be true or false, "
                             f"got {self.target_restart!r}")
        alpha = self.alpha
        if isinstance(alpha, bool) or not isinstance(alpha, (int, float)) or not alpha > 0:
            raise FsxltError(f"regime {self.name}: alpha must be a number > 0, got {alpha!r}")
        languages = self.languages
        if isinstance(languages, str) or not all(isinstance(x, str) and x for x in languages):
            raise FsxltError(f"regime {self.name}: languages must be a list of language "
                             f"codes, got {languages!r}")
        object.__setattr__(self, "languages", tuple(sorted(set(languages))))

    @property
    def is_sequential(self) -> bool:
        return self.name == SEQUENTIAL

    @property
    def mixes(self) -> bool:
        return self.name == "mixup"

    def changes(self) -> dict[str, Any]:
        """What identifies a run's regime: nothing for the sequential one. Settings that
        0.3 did not have enter only when they are not their default (its hashes stay)."""
        if self.is_sequential:
            return {}
        out: dict[str, Any] = {"name": self.name, "batch_size": self.batch_size}
        if self.epoch == "steps":
            out["steps_per_epoch"] = self.steps_per_epoch
        else:
            out["epoch"] = self.epoch
        if self.name == "joint":
            out["target_repeat"] = self.target_repeat
        if self.target_batch_size is not None and self.name in OPTION_REGIMES[
                "target_batch_size"]:
            out["target_batch_size"] = self.target_batch_size
        if self.target_restart and self.name in OPTION_REGIMES["target_restart"]:
            out["target_restart"] = True
        if self.mixes:
            out["alpha"] = float(self.alpha)
        if self.name == "multi":
            out["languages"] = list(self.languages)
            if self.multi_epochs is not None:
                out["multi_epochs"] = self.multi_epochs
        return out

    def with_language(self, language: str) -> Regime:
        """A multi regime's settings with ``language`` among its languages (its own run's)."""
        if self.name != "multi" or language in self.languages:
            return self
        return replace(self, languages=(*self.languages, language))

    @property
    def label(self) -> str:
        """How arms name the regime: its name; multi's with its languages (multi-ar-de-zh),
        the multi-stage recipe with its multi epochs (multi3-ar-de-zh)."""
        return regime_label(self.name, self.languages, self.multi_epochs)

    def describe(self) -> dict[str, Any]:
        """The record's ``regime`` block (without the source data's facts)."""
        return self.changes() or {"name": SEQUENTIAL}


def _unknown(name: Any) -> str:
    if name in LEGACY_NAMES:
        return (f"regime {name!r} is now called {LEGACY_NAMES[name]!r} (source and bucket "
                "rows in one batch); mixup of representations is regime 'mixup'")
    return f"unknown regime {name!r}; valid: {', '.join(REGIMES)}"


def parse_regime(name: Any, options: dict[str, Any] | None = None,
                 where: str = "regime") -> Regime:
    """A :class:`Regime` from its name and options (a config's or the CLI's), checked."""
    if not isinstance(name, str) or name not in REGIMES:
        raise FsxltError(f"{where}: {_unknown(name)}")
    options = dict(options or {})
    unknown = sorted(set(options) - set(REGIME_OPTIONS))
    if unknown:
        raise FsxltError(f"{where}: unknown regime option(s) {', '.join(unknown)}; valid: "
                         f"{', '.join(REGIME_OPTIONS)}")
    given = {key: value for key, value in options.items() if value is not None}
    try:
        regime = Regime(name, **given)
    except FsxltError as err:
        raise FsxltError(f"{where}: {err}") from None
    if options and name == "multi" and not regime.languages:  # settings, not just a name
        raise FsxltError(f"{where}: {NO_LANGUAGES}")
    return regime


NO_LANGUAGES = ("regime multi: name the target languages trained together (languages: "
                "[de, zh, ...]; fsxlt adapt --multi-lang L)")


def inapplicable(regime: Regime, options: dict[str, Any]) -> list[str]:
    """The given ``options`` (not None) that ``regime`` does not use (to refuse them)."""
    return sorted(key for key, value in options.items() if value is not None
                  and key in OPTION_REGIMES and regime.name not in OPTION_REGIMES[key])


@dataclass
class _Stream:
    """Rows in a seeded shuffled order, taken in slices; reshuffled when they run out.

    ``take`` fills a slice across a reshuffle; ``take_in_pass`` stops at the end of a
    pass (a shorter slice), as a data loader's last batch of an epoch is.
    """

    rows: Sequence[Any]
    generator: torch.Generator
    order: list[int] | None = None
    at: int = 0

    def _refill(self) -> None:
        if self.order is None or self.at >= len(self.order):
            self.order = torch.randperm(len(self.rows), generator=self.generator).tolist()
            self.at = 0

    def take(self, n: int) -> list[Any]:
        out: list[Any] = []
        while len(out) < n:
            out.extend(self.take_in_pass(n - len(out)))
        return out

    def take_in_pass(self, n: int) -> list[Any]:
        self._refill()
        assert self.order is not None
        end = min(len(self.order), self.at + n)
        out = [self.rows[i] for i in self.order[self.at:end]]
        self.at = end
        return out

    def restart(self) -> None:
        """Begin a new pass (a new shuffle) at the next take."""
        self.order = None


# one step's training rows in groups, each with the weight of its mean loss
Step = list[tuple[list[Any], float]]


@dataclass
class MixStep:
    """A mixup step: the source rows and bucket rows, and how their units are paired."""

    source: list[Any]
    target: list[Any]
    pairing: Pairing


class JointMixer:
    """The steps of a source+target run: which source and bucket rows each step trains on.

    ``companions``: the other target languages' bucket rows (multi), by language;
    ``language`` the run's own.
    """

    def __init__(self, regime: Regime, source_rows: Sequence[Any], bucket_rows: Sequence[Any],
                 seed: int, units: Callable[[Sequence[Any]], int] = units_of, *,
                 companions: dict[str, Sequence[Any]] | None = None, language: str = ""):
        if regime.is_sequential:
            raise FsxltError("the sequential regime trains on the bucket alone")
        if not source_rows:
            raise FsxltError(f"regime {regime.name} needs source training data; none was given")
        self.regime = regime
        self.bucket = list(bucket_rows)
        self.n_source = len(source_rows)
        generator = torch.Generator().manual_seed(int(seed))
        pool = (list(source_rows) + self.bucket * regime.target_repeat
                if regime.name == "joint" else source_rows)
        self.stream = _Stream(pool, generator)
        targets = _targets(regime, self.bucket, companions or {}, language)
        # each language's own order: generators apart from the source's, so the source
        # order is the same with or without cycling (and as in 0.3 without it)
        self.targets = [(rows, _Stream(rows, torch.Generator().manual_seed(int(seed) + 1 + i)))
                        for i, rows in enumerate(targets)]
        self.pairs = PairDrawer(regime.alpha, int(seed) + 2, units) if regime.mixes else None
        self.epochs_done = 0
        self.own = (regime.with_language(language).languages.index(language)
                    if regime.name == "multi" and language else 0)

    @property
    def second_stage(self) -> bool:
        """Whether a multi-stage run is past its multi epochs (trains source + own target)."""
        stage = self.regime.multi_epochs if self.regime.name == "multi" else None
        return stage is not None and self.epochs_done >= stage

    @property
    def steps_per_epoch(self) -> int:
        if self.regime.epoch == "source-pass":
            return math.ceil(self.n_source / self.regime.batch_size)
        return self.regime.steps_per_epoch

    def epoch(self) -> Iterator[Step | MixStep]:
        """One epoch's steps, continuing where the previous epoch stopped (``steps``) or
        one new pass over the source data (``source-pass``)."""
        if self.regime.epoch == "source-pass":
            self.stream.restart()
        if self.regime.target_restart:
            for _rows, stream in self.targets:
                stream.restart()
        for _ in range(self.steps_per_epoch):
            yield self._step()
        self.epochs_done += 1

    def _source(self) -> list[Any]:
        size = self.regime.batch_size
        if self.regime.epoch == "source-pass" and self.regime.name != "joint":
            return self.stream.take_in_pass(size)
        return self.stream.take(size)

    def _take(self, rows: list[Any], stream: _Stream) -> list[Any]:
        size = self.regime.target_batch_size
        return rows if size is None else stream.take_in_pass(size)

    def _step(self) -> Step | MixStep:
        drawn = self._source()
        if self.regime.name == "joint":
            return [(drawn, 1.0)]
        if self.second_stage:  # multi-stage: the source and the run's own language
            own_rows, own_stream = self.targets[self.own]
            return [(drawn, 0.5), (self._take(own_rows, own_stream), 0.5)]
        targets = [self._take(rows, stream) for rows, stream in self.targets]
        if self.regime.name == "multi":
            weight = 1.0 / (1 + len(targets))
            return [(drawn, weight)] + [(rows, weight) for rows in targets]
        target = targets[0]
        if self.regime.name == "joint-concat":
            return [(drawn + target, 1.0)]
        if self.pairs is not None:
            return MixStep(drawn, target, self.pairs.draw(drawn, target))
        return [(drawn, 0.5), (target, 0.5)]  # joint-macro


def _targets(regime: Regime, bucket: list[Any], companions: dict[str, Sequence[Any]],
             language: str) -> list[list[Any]]:
    """The bucket rows a step takes from: the run's bucket, or for multi every language's
    bucket in sorted language order."""
    if regime.name != "multi":
        if companions:
            raise FsxltError(f"regime {regime.name} trains on one target language; other "
                             "languages' buckets are for regime multi")
        return [bucket]
    if not set(regime.languages) - {language}:
        raise FsxltError(NO_LANGUAGES)
    regime = regime.with_language(language)
    missing = sorted(set(regime.languages) - set(companions) - {language})
    extra = sorted(set(companions) - set(regime.languages))
    if missing or extra or len(regime.languages) < 2:
        raise FsxltError(f"regime multi trains {', '.join(regime.languages)} together; "
                         f"buckets given for {', '.join(sorted({language, *companions}))}")
    return [bucket if lang == language else list(companions[lang])
            for lang in regime.languages]


@dataclass(frozen=True)
class Epochs:
    """A run's epochs: ``make()`` gives the next epoch's steps, ``steps_per_epoch`` of them
    (what a learning-rate schedule's length is counted in)."""

    make: Callable[[], list[Any]]
    steps_per_epoch: int

    def __call__(self) -> list[Any]:
        return self.make()


def regime_record(regime: Regime, source: dict[str, Any] | None) -> dict[str, Any]:
    """The record's ``regime`` block: the settings and the source data the run read."""
    return {**regime.describe(), "source_train": source}


__all__ = ["REGIMES", "LEGACY_NAMES", "Epochs", "Regime", "JointMixer", "MixStep", "Step",
           "inapplicable", "parse_regime", "regime_record"]
