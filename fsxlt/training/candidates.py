"""The models an adapting run could have kept, scored beside the one it selected.

The study selects the epoch and the learning rate on the target dev set (the
oracle of a truly few-shot setting, where no target dev set exists). With
``average_last`` N, an adapting record also keeps, for every candidate below,
its target dev and test scores, so one sweep answers "which selection would I
have needed?" without rerunning (``fsxlt analyze selection RUNS``):

- ``target-dev``: the record's own selection (best epoch and lr on target dev);
- ``source-dev``: best epoch and lr on the source (English) dev set, when the
  engine has one (``AdaptEngine.set_source(dev=...)``; first best wins);
- ``last@LR``: the weights after the last epoch the run at LR trained;
- ``average-last-N@LR``: the mean of that run's last N epochs' weights (fewer when
  it trained fewer epochs);
- ``average-lrs``: the mean over the lr grid of each run's last-epoch weights
  (with two or more learning rates).

With early stopping the last epoch depends on the target dev set; a dev-free
comparison sets ``patience`` to ``max_epochs``, so every run trains to the end.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import torch

from fsxlt.errors import FsxltError
from fsxlt.modeling import FsxltModel
from fsxlt.training.loop import average_states, restore, snapshot

State = dict[str, torch.Tensor]
RULES = ("target-dev", "source-dev", "last", "average-last", "average-lrs")


def check_average_last(value: Any, where: str = "average_last") -> int | None:
    """``None`` (no candidates) or an integer >= 1, else a one-line error."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise FsxltError(f"{where} must be an integer >= 1 (the epochs to average), "
                         f"got {value!r}")
    return value


@dataclass
class RunKept:
    """What one learning rate's run kept for the candidates."""

    lr: float
    last_epoch: int
    last: State
    window: list[int]
    average: State
    source_best: tuple[float, int, State] | None  # (source dev score, epoch, weights)


class EpochKeeper:
    """Follows one run's epochs: the last N epochs' weights and the best on source dev."""

    def __init__(self, average_last: int, score_source: Callable[[], float] | None):
        self.window: deque[tuple[int, State]] = deque(maxlen=average_last)
        self.score_source = score_source
        self.source_best: tuple[float, int, State] | None = None

    def after_epoch(self, model: FsxltModel, trainable: Sequence[str], epoch: int) -> None:
        self.window.append((epoch, snapshot(model, trainable)))
        if self.score_source is None:
            return
        value = self.score_source()
        if self.source_best is None or value > self.source_best[0]:
            self.source_best = (value, epoch, self.window[-1][1])

    def finish(self, lr: float) -> RunKept:
        if not self.window:
            raise FsxltError("no epoch was trained; nothing to average")
        epochs = [epoch for epoch, _ in self.window]
        return RunKept(lr, epochs[-1], self.window[-1][1], epochs,
                       average_states([state for _, state in self.window]), self.source_best)


def candidate_models(kept: Sequence[RunKept], average_last: int,
                     ) -> list[tuple[dict[str, Any], State]]:
    """The candidates besides target-dev, each as (its record entry without scores, weights)."""
    out: list[tuple[dict[str, Any], State]] = []
    sourced = [(run, run.source_best) for run in kept if run.source_best is not None]
    if sourced:
        run, (value, epoch, state) = max(sourced, key=lambda pair: pair[1][0])
        out.append(({"name": "source-dev", "rule": "source-dev", "lr": run.lr,
                     "epochs": [epoch], "source_dev": value}, state))
    for run in kept:
        out.append(({"name": f"last@{run.lr:g}", "rule": "last", "lr": run.lr,
                     "epochs": [run.last_epoch]}, run.last))
        out.append(({"name": f"average-last-{average_last}@{run.lr:g}", "rule": "average-last",
                     "lr": run.lr, "epochs": run.window}, run.average))
    if len(kept) > 1:
        out.append(({"name": "average-lrs", "rule": "average-lrs", "lr": None,
                     "epochs": [run.last_epoch for run in kept]},
                    average_states([run.last for run in kept])))
    return out


def score_candidates(model: FsxltModel, selected: dict[str, Any], kept: Sequence[RunKept],
                     average_last: int,
                     evaluate: Callable[[], tuple[float, float | None]]) -> dict[str, Any]:
    """The record's ``candidates`` block: ``selected`` (target-dev, already scored) and every
    other candidate, loaded into ``model`` in turn and scored by ``evaluate`` (dev, test)."""
    models = [selected]
    for entry, state in candidate_models(kept, average_last):
        restore(model, state)
        dev, test = evaluate()
        models.append({**entry, "dev": dev, "test": test})
    return {"average_last": average_last, "models": models}
