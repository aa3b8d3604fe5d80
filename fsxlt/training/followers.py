"""Model selection on a dev set while a run trains: one :class:`Follower` per dev set.

A follower scores its dev set after every epoch (and, with ``select_start``, the
model before any step as epoch 0), keeps the best epoch's trainable weights, and
stops following once ``patience`` epochs have passed without a better score,
counted from epoch 1 or, with ``patience_from: first-improvement``, from the
first epoch that beats the first scored one. Ties keep the earlier epoch.

A run of one language has one follower and stops when it stops. A run that
trains several target languages at once (regime ``multi``, trained once for all
its languages) has one follower per language: the run trains on while any
follower follows, and each language's result is its follower's, exactly what a
run of that language alone would have selected (the weights of every epoch up
to its stop are the same in both). Memory: a follower holds one copy of the
trainable weights (its best epoch's), so L languages hold L copies.
"""

from __future__ import annotations

from typing import Any

from fsxlt.training.candidates import EpochKeeper
from fsxlt.training.loop import snapshot


class Follower:
    """One dev set's selection during a run (see the module docstring)."""

    def __init__(self, dev_set: Any, patience: int, first_improvement: bool,
                 keeper: EpochKeeper | None = None) -> None:
        self.dev_set, self.patience, self.keeper = dev_set, patience, keeper
        self.epochs: list[dict[str, Any]] = []
        self.best_score, self.best_epoch, self.best_dev = float("-inf"), 0, None
        self.best_state: dict[str, Any] | None = None
        self.first_score: float | None = None
        self.counting: int | None = None if first_improvement else 0
        self.stopped = False
        self.steps = 0   # optimizer steps trained up to the last epoch followed

    def start(self, model: Any, trainable: list[str], dev: dict[str, Any] | None) -> None:
        """Before any step: the start's weights are the best so far; ``dev`` (select_start)
        its dev scores, which compete as epoch 0."""
        self.best_state = snapshot(model, trainable)
        if dev is not None:
            self.best_dev = dev
            self.best_score = self.first_score = dev["score"]
            self.epochs.append({"epoch": 0, "train_loss": None, "dev_score": self.best_score})

    def after_epoch(self, model: Any, trainable: list[str], epoch: int, loss: float,
                    dev: dict[str, Any], steps: int) -> None:
        """Epoch ``epoch`` trained (``steps`` optimizer steps so far) and scored ``dev``."""
        if self.keeper is not None:
            self.keeper.after_epoch(model, trainable, epoch)
        self.steps = steps
        self.epochs.append({"epoch": epoch, "train_loss": loss, "dev_score": dev["score"]})
        self.first_score = dev["score"] if self.first_score is None else self.first_score
        if self.counting is None and dev["score"] > self.first_score:
            self.counting = epoch  # the first improvement: patience counts from here
        if dev["score"] > self.best_score:
            self.best_score, self.best_epoch, self.best_dev = dev["score"], epoch, dev
            self.best_state = snapshot(model, trainable)
        elif self.counting is not None and epoch - self.best_epoch >= self.patience:
            self.stopped = True

    def run_facts(self, lr: float) -> dict[str, Any]:
        """What the run record says of this follower's selection."""
        return {"lr": lr, "epochs": self.epochs, "best_epoch": self.best_epoch,
                "stopped_epoch": self.epochs[-1]["epoch"], "dev": self.best_dev}
