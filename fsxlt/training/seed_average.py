"""Averaging source-training over seeds (the run averaging of Schmidt et al., 2023, "Free
Lunch: Robust Cross-Lingual Transfer via Model Checkpoint Averaging").

With ``keep="average-seeds"`` and ``seeds`` (two or more), source-training
runs the same configuration once per seed (the head's initialisation and the
batch order follow the seed), keeps a CPU copy of each seed's weights and
saves their uniform element-wise mean (:func:`fsxlt.training.loop.average_states`).
``seed_weights`` says which weights of a seed go in: ``selected`` (default:
the checkpoint its selection protocol picks over its lr grid and epochs) or
``last`` (its last epoch; one learning rate). Every seed's model and the mean
are scored on every dev set and target test set: the record's ``candidates``
(``seed-<S>`` each, then ``average-seeds``).

The record is the source-run record of the mean (``zero_shot``,
``english_dev``, ``source_dev`` scored on it) with every seed's checkpoints
and lr results (each marked with its ``seed``), ``oracle`` over all of them,
``selection`` the checkpoint the protocol picks over all seeds (``keep``
average-seeds), ``seeds`` and ``seed_average``: the seeds, which weights
(``weights``) and each seed's kept lr, epoch and config hash. The config
hash has the seeds in place of the seed, the keep rule and the weights.
Memory: one CPU copy of the weights per seed.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch

from fsxlt.errors import FsxltError

State = dict[str, torch.Tensor]
SEED_WEIGHTS = ("selected", "last")
AVERAGE_SEEDS = "average-seeds"


@dataclass(frozen=True)
class SeedPlan:
    """The seeds to train and which weights of each the mean takes."""

    seeds: list[int]
    weights: str = "selected"

    @property
    def member_keep(self) -> str:
        """The keep rule of each seed's training."""
        return "selected" if self.weights == "selected" else "last"

    def config(self) -> dict[str, Any]:
        """What the mean's config hash puts in place of the one seed's."""
        return {"seed": list(self.seeds), "keep": AVERAGE_SEEDS, "seed_weights": self.weights}


def check_seeds(seeds: Sequence[int] | None, seed: int | None, keep: str,
                weights: str | None, lrs: Sequence[float]) -> SeedPlan | None:
    """The seed plan of ``keep`` average-seeds (None for any other keep), checked before
    training; each bad choice is one line."""
    if keep != AVERAGE_SEEDS:
        if seeds:
            raise FsxltError("seeds (--seeds) train one model per seed for keep average-seeds "
                             "(--keep average-seeds); give that, or one seed (--seed)")
        if weights is not None:
            raise FsxltError("seed_weights (--seed-weights) says what keep average-seeds "
                             "averages; give --keep average-seeds and --seeds")
        return None
    if seed is not None:
        raise FsxltError("give one seed (--seed) or the seeds to average (--seeds), not both")
    values = list(seeds or [])
    if len(values) < 2:
        raise FsxltError(f"keep average-seeds needs two or more seeds (--seeds 1 --seeds 2), "
                         f"got {len(values)}")
    if any(isinstance(s, bool) or not isinstance(s, int) or s < 0 for s in values):
        raise FsxltError(f"seeds must be integers >= 0, got {values}")
    if len(set(values)) < len(values):
        raise FsxltError(f"seeds repeat: {values}; give each seed once")
    weights = "selected" if weights is None else weights
    if weights not in SEED_WEIGHTS:
        raise FsxltError(f"unknown seed_weights {weights!r}; valid: {', '.join(SEED_WEIGHTS)}")
    if weights == "last" and len(lrs) > 1:
        raise FsxltError(f"seed_weights last averages each seed's last epoch of one learning "
                         f"rate, the grid has {len(lrs)} ({', '.join(f'{lr:g}' for lr in lrs)})"
                         ": give one lr")
    return SeedPlan(values, weights)


@dataclass
class SeedMember:
    """One seed's training: the weights it gives the mean (CPU), its record and scores."""

    seed: int
    state: State
    record: dict[str, Any]
    wall_time_s: float = 0.0
    dev: dict[str, float] = field(default_factory=dict)
    test: dict[str, float] = field(default_factory=dict)

    def kept(self, weights: str) -> tuple[float, int]:
        """The (lr, epoch) of the weights it gives the mean."""
        if weights == "selected":
            return self.record["selection"]["lr"], self.record["selection"]["epoch"]
        return self.record["lrs"][0], self.record["epochs"]


def seed_average_record(record: dict[str, Any], members: Sequence[SeedMember], plan: SeedPlan,
                        mean_scores: tuple[dict[str, float], dict[str, float]],
                        oracle: Callable[[list[dict[str, Any]]], dict[str, Any]],
                        ) -> dict[str, Any]:
    """The mean's record from ``record`` (the last seed's, scored with the model holding
    the mean, and the mean's config hash): every seed's checkpoints, the selection over
    all of them, the seeds and the candidates. ``oracle`` makes the ``oracle`` block of
    a list of checkpoints."""
    checkpoints = [dict(c, seed=m.seed) for m in members for c in m.record["checkpoints"]]
    out = dict(record, seed=None, seeds=list(plan.seeds), checkpoints=checkpoints,
               lr_results=[dict(r, seed=m.seed) for m in members
                           for r in m.record["lr_results"]],
               oracle=oracle(checkpoints))
    out["selection"] = _selection(record["selection"], checkpoints)
    out["seed_average"] = {
        "seeds": list(plan.seeds), "weights": plan.weights,
        "members": [{"seed": m.seed, "lr": m.kept(plan.weights)[0],
                     "epoch": m.kept(plan.weights)[1],
                     "config_hash": m.record["config_hash"]} for m in members]}
    out["candidates"] = {"average_last": None, "models": _candidates(members, plan,
                                                                      mean_scores)}
    return out


def _selection(selection: dict[str, Any], checkpoints: list[dict[str, Any]]) -> dict[str, Any]:
    """The checkpoint the selection protocol picks over every seed's (first best wins), and
    that the checkpoint holds the mean instead."""
    top = max(checkpoints, key=lambda c: c["selection_score"])
    return {"protocol": selection["protocol"], "languages": selection["languages"],
            "lr": top["lr"], "epoch": top["epoch"], "seed": top["seed"],
            "dev_score": top["selection_score"], "keep": AVERAGE_SEEDS, "kept": AVERAGE_SEEDS}


def _candidates(members: Sequence[SeedMember], plan: SeedPlan,
                mean_scores: tuple[dict[str, float], dict[str, float]]) -> list[dict[str, Any]]:
    """Each seed's model (``seed-<S>``), then the mean (``average-seeds``), with scores."""
    rule = "last" if plan.weights == "last" else members[0].record["selection"]["protocol"]
    models = []
    for member in members:
        lr, epoch = member.kept(plan.weights)
        models.append({"name": f"seed-{member.seed}", "rule": rule, "lr": lr,
                       "epochs": [epoch], "seed": member.seed, "dev": member.dev,
                       "test": member.test})
    lrs = {model["lr"] for model in models}
    models.append({"name": AVERAGE_SEEDS, "rule": AVERAGE_SEEDS,
                   "lr": lrs.pop() if len(lrs) == 1 else None,
                   "epochs": [model["epochs"][0] for model in models],
                   "seeds": list(plan.seeds), "dev": mean_scores[0], "test": mean_scores[1]})
    return models
