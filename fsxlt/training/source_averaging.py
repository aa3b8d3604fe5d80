"""Candidate models of a source-training beside the selected checkpoint (checkpoint averaging).

Selecting a checkpoint on the English dev set is one choice among several;
averaging weights ("Free Lunch", Schmidt et al. 2023) is another. With
``average_last`` N, every lr run keeps its last N epochs' weights (CPU
copies, a bounded window), and after the grid these candidates are scored on
every dev set and every target test set:

- ``last@<lr>``: the run's last epoch;
- ``average-last-<N>@<lr>``: the element-wise mean of the run's last
  min(N, epochs) epochs' weights;
- ``average-lrs``: the mean over the grid of each run's last-epoch weights.

``keep`` says which candidate becomes the returned model (and so the saved
checkpoint): ``selected`` (the checkpoint the selection protocol picked),
``last`` (one lr only), ``average-last`` (one lr only) or ``average-lrs``.
Memory: the window (N copies of the model's weights) plus, for
``average-lrs``, one copy per learning rate of the grid, all on the CPU.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch

from fsxlt.errors import FsxltError
from fsxlt.modeling import FsxltModel
from fsxlt.training.candidates import check_average_last
from fsxlt.training.loop import average_states, restore, snapshot

KEEP_RULES = ("selected", "last", "average-last", "average-lrs")

# a scorer scores the model as it is now: ({dev lang: score}, {test lang: score}), 0-1 floats
Scorer = Callable[[], tuple[dict[str, float], dict[str, float]]]


@dataclass(frozen=True)
class Averaging:
    """How many last epochs each run averages, and which candidate is kept."""

    average_last: int | None = None
    keep: str = "selected"

    @property
    def active(self) -> bool:
        """Whether the run records candidates (any non-default choice)."""
        return self.average_last is not None or self.keep != "selected"

    def config(self) -> dict[str, Any]:
        """The entries of the config hash: only the choices that are not the defaults."""
        out: dict[str, Any] = {}
        if self.average_last is not None:
            out["average_last"] = self.average_last
        if self.keep != "selected":
            out["keep"] = self.keep
        return out


def check_averaging(average_last: int | None, keep: str, lrs: Sequence[float]) -> Averaging:
    """The averaging choices, checked against each other and the lr grid (before training)."""
    if keep not in KEEP_RULES:
        raise FsxltError(f"unknown keep rule {keep!r}; valid: {', '.join(KEEP_RULES)}")
    average_last = check_average_last(average_last)
    if keep in ("average-last", "average-lrs") and average_last is None:
        raise FsxltError(f"keep {keep} needs averaging: give average_last N (--average-last N)")
    grid = ", ".join(f"{lr:g}" for lr in lrs)
    if keep == "last" and len(lrs) > 1:
        raise FsxltError(f"keep last needs one learning rate, the grid has {len(lrs)} "
                         f"({grid}): give one lr")
    if keep == "average-last" and len(lrs) > 1:
        raise FsxltError(f"keep average-last needs one learning rate, the grid has {len(lrs)} "
                         f"({grid}): use average-lrs or one lr")
    return Averaging(average_last, keep)


@dataclass
class Candidate:
    """One candidate model: which weights it holds and its scores."""

    name: str
    rule: str
    lr: float | None
    epochs: list[int]
    dev: dict[str, float]
    test: dict[str, float]

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "rule": self.rule, "lr": self.lr, "epochs": self.epochs,
                "dev": self.dev, "test": self.test}


@dataclass
class CandidateCollector:
    """Keeps the weights the candidates need while the grid trains, and scores them."""

    averaging: Averaging
    scorer: Scorer
    window: deque = field(init=False)
    last_states: list[dict[str, torch.Tensor]] = field(default_factory=list)
    candidates: list[Candidate] = field(default_factory=list)
    kept_state: dict[str, torch.Tensor] | None = None

    def __post_init__(self) -> None:
        self.window = deque(maxlen=self.averaging.average_last or 1)

    def epoch_done(self, model: FsxltModel) -> None:
        """After every epoch: its weights join the window of the last N (when averaging)."""
        if self.averaging.average_last is not None:
            self.window.append(snapshot(model, device="cpu"))

    def run_done(self, model: FsxltModel, lr: float, epochs: int) -> None:
        """After an lr run (the model holds its last epoch): score ``last@lr`` and
        ``average-last-N@lr``; the model may hold the average afterwards."""
        if not self.averaging.active:
            return
        last = self.window[-1] if self.window else snapshot(model, device="cpu")
        self._add(f"last@{lr:g}", "last", lr, [epochs])
        self.last_states.append(last)
        if self.averaging.keep == "last":
            self.kept_state = last
        n = self.averaging.average_last
        if n is not None:
            held = list(range(epochs - len(self.window) + 1, epochs + 1))
            mean = average_states(list(self.window))
            restore(model, mean)
            self._add(f"average-last-{n}@{lr:g}", "average-last", lr, held)
            if self.averaging.keep == "average-last":
                self.kept_state = mean
        self.window.clear()

    def grid_done(self, model: FsxltModel, epochs: int) -> None:
        """After the grid: score ``average-lrs`` (the model holds it afterwards)."""
        if self.averaging.average_last is None:
            return
        mean = average_states(self.last_states)
        restore(model, mean)
        self._add("average-lrs", "average-lrs", None, [epochs])
        if self.averaging.keep == "average-lrs":
            self.kept_state = mean
        self.last_states = []  # no longer needed: free the copies

    def add_selected(self, protocol: str, lr: float, epoch: int) -> None:
        """The selected checkpoint (the model holds it now), first of the candidates."""
        self._add(protocol, protocol, lr, [epoch])
        self.candidates.insert(0, self.candidates.pop())

    def record(self) -> dict[str, Any]:
        return {"average_last": self.averaging.average_last,
                "models": [c.to_dict() for c in self.candidates]}

    def kept_name(self) -> str:
        """The name of the candidate that ``keep`` picks."""
        rule = self.averaging.keep
        if rule == "selected":
            return self.candidates[0].name
        return next(c.name for c in self.candidates if c.rule == rule)

    def _add(self, name: str, rule: str, lr: float | None, epochs: list[int]) -> None:
        dev, test = self.scorer()
        self.candidates.append(Candidate(name, rule, lr, epochs, dev, test))
