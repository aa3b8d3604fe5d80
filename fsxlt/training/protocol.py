"""The adapting protocol: the lr grid, epochs and patience, mini-batches, and the regime.

:class:`Protocol` holds what the study fixes and FewCLUE's fine-tuning baseline
changes (``batch_size``, ``patience_from``; :mod:`fsxlt.training.adapt`'s
docstring), how a bucket's long tagging sentences become training rows
(``long_sentences``: truncated, the study's, or cut into windows), the optimizer
(``optimizer``: :mod:`fsxlt.training.optim`) and which wordpieces a tagging loss
scores (``label_all_tokens``);
:func:`adapt_settings` fills a run's grid, seed, epochs and patience from the
task's defaults; :func:`check_regime` refuses a training
regime (:mod:`fsxlt.training.regimes`) that cannot run, before any training.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from fsxlt.errors import FsxltError
from fsxlt.models.encoding import DEFAULT_LONG_SENTENCES, LONG_SENTENCES
from fsxlt.tasks import TaskSpec
from fsxlt.training.mixup import MIXUP_KINDS
from fsxlt.training.optim import DEFAULT as DEFAULT_OPTIMIZER
from fsxlt.training.optim import OptimizerSettings
from fsxlt.training.regimes import Regime, parse_regime, regime_record

PATIENCE_FROM = ("start", "first-improvement")

# encoder inputs per training forward pass where none is set: a step's loss and gradient
# are summed over its micro-batches, but dropout masks and padding are drawn per
# micro-batch, so another size trains another model (a run's identity holds any other)
DEFAULT_MICRO_BATCH = 64


@dataclass(frozen=True)
class Protocol:
    """How adapting trains, beyond lr, epochs and patience (module docstring).

    ``batch_size``: None, the study's one step per epoch on the whole bucket;
    N, shuffled mini-batches of N examples, one Adam step each.
    ``patience_from``: ``start`` (the study's) or ``first-improvement``.
    ``long_sentences``: ``truncate`` (the study's) or ``windows`` (every window of a
    sentence longer than ``max_seq_length`` a training row; tagging), for the bucket
    and a joint regime's source rows alike.
    ``optimizer``: Adam, constant lr (the study's) or other :class:`OptimizerSettings`.
    ``label_all_tokens``: tagging training rows score every wordpiece of a word with the
    word's label (the peer's), not its last piece only (the study's); bucket and a joint
    regime's source rows alike; dev and test are still scored on last pieces.
    """

    batch_size: int | None = None
    patience_from: str = "start"
    long_sentences: str = DEFAULT_LONG_SENTENCES
    optimizer: OptimizerSettings = DEFAULT_OPTIMIZER
    label_all_tokens: bool = False

    def __post_init__(self) -> None:
        size = self.batch_size
        if size is not None and (isinstance(size, bool) or not isinstance(size, int)
                                 or size < 1):
            raise FsxltError(f"batch_size must be an integer >= 1 (or none: the whole "
                             f"bucket), got {size!r}")
        if self.patience_from not in PATIENCE_FROM:
            raise FsxltError(f"patience_from must be one of {', '.join(PATIENCE_FROM)}, "
                             f"got {self.patience_from!r}")
        if self.long_sentences not in LONG_SENTENCES:
            raise FsxltError(f"long_sentences must be one of {', '.join(LONG_SENTENCES)}, "
                             f"got {self.long_sentences!r}")
        if not isinstance(self.optimizer, OptimizerSettings):
            raise FsxltError(f"optimizer must be OptimizerSettings, got {self.optimizer!r}")
        if not isinstance(self.label_all_tokens, bool):
            raise FsxltError(f"label_all_tokens must be true or false, "
                             f"got {self.label_all_tokens!r}")

    @property
    def is_default(self) -> bool:
        return self == Protocol()

    def changes(self) -> dict[str, Any]:
        """The settings that differ from the study's protocol (what identities add)."""
        out: dict[str, Any] = {}
        if self.batch_size is not None:
            out["batch_size"] = self.batch_size
        if self.patience_from != "start":
            out["patience_from"] = self.patience_from
        if self.long_sentences != DEFAULT_LONG_SENTENCES:
            out["long_sentences"] = self.long_sentences
        if not self.optimizer.is_default:
            out["optimizer"] = self.optimizer.changes()
        if self.label_all_tokens:
            out["label_all_tokens"] = True
        return out

    def steps_per_epoch(self, n_examples: int) -> int:
        return 1 if self.batch_size is None else max(1, math.ceil(n_examples / self.batch_size))

    def record(self, n_rows: int) -> dict[str, Any]:
        """The record's ``protocol`` block: every setting, whether default or not."""
        return {"batch_size": self.batch_size, "steps_per_epoch": self.steps_per_epoch(n_rows),
                "patience_from": self.patience_from, "long_sentences": self.long_sentences,
                "optimizer": self.optimizer.describe(),
                "label_all_tokens": self.label_all_tokens}


def adapt_settings(task: TaskSpec, lrs: Sequence[float] | None, seed: int | None,
                    max_epochs: int | None, patience: int | None,
                    ) -> tuple[list[float], int, int, int]:
    """The lr grid, seed, epoch cap and patience of an adapt run: the task's defaults,
    overridden by what is given, checked."""
    grid = [float(x) for x in (lrs or task.training.lr_grid)]
    seed = task.training.seed if seed is None else int(seed)
    max_epochs = task.training.adapt_max_epochs if max_epochs is None else int(max_epochs)
    patience = task.training.adapt_patience if patience is None else int(patience)
    if max_epochs < 1 or patience < 1:
        raise FsxltError("max_epochs and patience must be at least 1")
    if any(not lr > 0 for lr in grid):
        raise FsxltError(f"learning rates must be > 0, got {grid}")
    return grid, seed, max_epochs, patience


def check_regime(regime: str | Regime, protocol: Protocol, has_source_train: bool,
                 task: TaskSpec | None = None, method: Any = None) -> Regime:
    """``regime`` as a :class:`Regime`, refused where it cannot run (before training):
    without source data, beside the mini-batch protocol, and mixup where it has no
    units to mix (multiple choice, QA) or where a method scores with its own head."""
    regime = regime if isinstance(regime, Regime) else parse_regime(regime)
    if regime.is_sequential:
        return regime
    if not has_source_train:
        raise FsxltError(f"regime {regime.name} trains on source data and the bucket "
                         "together; give the source training set (fsxlt adapt "
                         "--source-train FILE; sweeps: joint.source_train)")
    if protocol.batch_size is not None:
        raise FsxltError(f"regime {regime.name} makes its own batches; batch_size (the "
                         "mini-batch protocol) is for the sequential regime")
    if regime.mixes and task is not None and task.kind not in MIXUP_KINDS:
        raise FsxltError(f"regime mixup mixes sentence or word vectors; task {task.name} "
                         f"({task.kind.replace('_', ' ')}) has none to mix")
    if regime.mixes and method is not None and getattr(method, "scores_untrained", False):
        raise FsxltError(f"regime mixup trains the classifier on mixed vectors; method "
                         f"{method.name} scores with its own head")
    return regime


def regime_identity(regime: Regime, average_last: int | None, source_train: dict | None,
                    source_dev: dict | None, companions: dict[str, dict] | None = None,
                    ) -> dict[str, Any]:
    """What a joint regime or candidate keeping adds to a record's config hash (nothing for
    the study's runs, whose hashes stay what they were); ``source_*``: data_info dicts;
    ``companions``: the other languages' buckets of a multi run (bucket facts)."""
    out: dict[str, Any] = {}
    if not regime.is_sequential:
        out["regime"] = {**regime.changes(), "source_train": (source_train or {}).get("sha256")}
        if companions:
            out["regime"]["companions"] = {lang: info.get("sha256")
                                           for lang, info in sorted(companions.items())}
    if average_last is not None:
        out["average_last"] = average_last
        if source_dev is not None:
            out["source_dev"] = source_dev["sha256"]
    return out


def regime_facts(regime: Regime, average_last: int | None, source_train: dict | None,
                 source_dev: dict | None, companions: dict[str, dict] | None = None,
                 config: dict[str, Any] | None = None, bucket: dict[str, Any] | None = None,
                 ) -> dict[str, Any]:
    """The record's ``regime`` block (with a multi run's other buckets and the training it
    shares with them: :func:`multi_training`) and the source dev set its candidates used."""
    out: dict[str, Any] = {}
    if not regime.is_sequential:
        out["regime"] = regime_record(regime, source_train)
        if companions:
            out["regime"]["companions"] = dict(sorted(companions.items()))
        if regime.name == "multi" and config is not None and bucket is not None:
            out["regime"]["training"] = multi_training(config, bucket, companions or {})
    if average_last is not None and source_dev is not None:
        out["source_dev"] = source_dev
    return out


# what a multi run's languages differ in; the rest of its config is the training they share
LANGUAGE_KEYS = ("language", "dev", "test", "patience", "select_start", "average_last",
                 "source_dev")


def multi_training(config: dict[str, Any], bucket: dict[str, Any],
                   companions: dict[str, dict]) -> dict[str, Any]:
    """The training a multi run shares with its languages' runs: an id (the hash of its
    config less what differs by language, every language's bucket in it) that the record
    of each of its languages carries alike, however the runs were executed (trained once,
    or once per language: :mod:`fsxlt.training.shared`), and the languages."""
    from fsxlt.training.loop import config_hash

    buckets = {config["language"]: bucket.get("sha256"),
               **{lang: info.get("sha256") for lang, info in companions.items()}}
    shared = {key: value for key, value in config.items() if key not in LANGUAGE_KEYS}
    regime = dict(shared.get("regime") or {})
    regime.pop("companions", None)
    return {"id": config_hash({**shared, "regime": regime, "buckets": dict(sorted(
        buckets.items()))}), "languages": sorted(buckets)}
