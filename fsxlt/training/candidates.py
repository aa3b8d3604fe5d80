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

Source-training keeps the same kinds of candidates (:class:`CandidateCollector`):
with ``average_last`` N every lr run keeps its last N epochs' weights (CPU
copies), and after the grid ``last@LR``, ``average-last-N@LR`` and
``average-lrs`` are scored on every dev set and target test set beside the
checkpoint its selection protocol picked; ``keep`` says which becomes the
saved checkpoint: ``selected``, ``last`` (one lr), ``average-last`` (one lr)
or ``average-lrs``. Memory: N copies of the weights plus one per lr. Two more
keep rules save something beside the grid's selected checkpoint: ``oracle``
(:mod:`fsxlt.training.oracle`) and ``average-seeds``
(:mod:`fsxlt.training.seed_average`).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import torch

from fsxlt.errors import FsxltError
from fsxlt.models.model import FsxltModel
from fsxlt.training.loop import average_states, restore, snapshot

State = dict[str, torch.Tensor]
RULES = ("target-dev", "source-dev", "last", "average-last", "average-lrs")
AVERAGE_LRS = "average-lrs"


def last_name(lr: float) -> str:
    """The candidate of a run's last epoch: ``last@LR``."""
    return f"last@{lr:g}"


def average_name(average_last: int, lr: float) -> str:
    """The candidate of the mean of a run's last N epochs: ``average-last-N@LR``."""
    return f"average-last-{average_last}@{lr:g}"


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
        out.append(({"name": last_name(run.lr), "rule": "last", "lr": run.lr,
                     "epochs": [run.last_epoch]}, run.last))
        out.append(({"name": average_name(average_last, run.lr), "rule": "average-last",
                     "lr": run.lr, "epochs": run.window}, run.average))
    if len(kept) > 1:
        out.append(({"name": AVERAGE_LRS, "rule": AVERAGE_LRS, "lr": None,
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


# --------------------------------------------------------------------------- source-training

KEEP_RULES = ("selected", "last", "average-last", "average-lrs", "oracle", "average-seeds")
# the keep rules that save something beside the grid's candidates: ``oracle`` (one more
# checkpoint per target language, :mod:`fsxlt.training.oracle`) and ``average-seeds`` (the
# mean of one run per seed, :mod:`fsxlt.training.seed_average`); the grid itself keeps
# its selected checkpoint
BESIDE_THE_GRID = ("oracle", "average-seeds")

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
    if keep == "average-seeds" and average_last is not None:
        raise FsxltError("keep average-seeds averages each seed's selected or last weights; "
                         "it cannot go with average_last (--average-last)")
    if keep in BESIDE_THE_GRID:
        return Averaging(average_last, "selected")
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
        return asdict(self)


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
        self._add(last_name(lr), "last", lr, [epochs])
        self.last_states.append(last)
        if self.averaging.keep == "last":
            self.kept_state = last
        n = self.averaging.average_last
        if n is not None:
            held = list(range(epochs - len(self.window) + 1, epochs + 1))
            mean = average_states(list(self.window))
            restore(model, mean)
            self._add(average_name(n, lr), "average-last", lr, held)
            if self.averaging.keep == "average-last":
                self.kept_state = mean
        self.window.clear()

    def grid_done(self, model: FsxltModel, epochs: int) -> None:
        """After the grid: score ``average-lrs`` (the model holds it afterwards)."""
        if self.averaging.average_last is None:
            return
        mean = average_states(self.last_states)
        restore(model, mean)
        self._add(AVERAGE_LRS, AVERAGE_LRS, None, [epochs])
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
