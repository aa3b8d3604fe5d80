"""The optimizer of source-training and adapting: the study's Adam, or AdamW with a schedule.

The study trains with Adam (default betas and epsilon), no weight decay and a constant
learning rate; :class:`OptimizerSettings` of its defaults is that. The training-regime
peer study (Schmidt et al. 2022, "Don't Stop Fine-Tuning") trains with transformers
4.x's AdamW (``transformers-adamw``: :mod:`fsxlt.training.transformers_adamw`; ``adamw``
is torch's), weight decay 0.05 (its ``trident-xtreme/configs/optimizer/adamw.yaml``
lines 1-4), a linear warm-up over the first 10% of all training steps, kept fractional,
and a linear decay to 0 (:data:`PEER`).

Weight decay applies to every trainable parameter except biases and normalisation
weights (:func:`decays`): a parameter is not decayed when its name contains ``bias``
or the module holding it is a norm, i.e. that module's name, lowercased and without
underscores, contains ``layernorm`` or ends in ``norm`` (BERT's and XLM-R's
``LayerNorm.weight``, ``layer_norm``, ``final_layer_norm``, ``layernorm_embedding``,
``attn_norm`` of other encoders); linear and embedding weights, the head's weights and
LoRA's matrices are decayed. With ``weight_decay`` 0 there is one parameter group (the
study's optimizer, exactly).

``schedule``: ``constant`` (the learning rate stays; after ``warmup`` if given) or
``linear`` (``transformers.get_linear_schedule_with_warmup``: from 0 up to the lr over
``round(warmup x total)`` steps, then down to 0 at ``total``). ``fractional_warmup``
keeps ``warmup x total`` unrounded, as the peer's trident does (``trident/core/mixins/
optimizer.py`` lines 74-77: 25 steps, warm-up 2.5: step lrs 0, 0.4, 0.8 of the peak,
then the decay). The caller gives the
total: adapting, the steps of one epoch x ``max_epochs`` (a run that stops early never
reaches the end of the decay); source-training, the batches of one epoch x ``epochs``.
The schedule advances after every optimizer step, as the peer's (Lightning's
per-step interval) does, so a warm-up's first step takes lr 0.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from fsxlt.errors import FsxltError

if TYPE_CHECKING:
    import torch

OPTIMIZERS = ("adam", "adamw", "transformers-adamw")
SCHEDULES = ("constant", "linear")
OPTIMIZER_KEYS = ("name", "weight_decay", "warmup", "schedule", "fractional_warmup")


# how a setting is named in messages where no other name is given
NAMES = {"name": "optimizer", "weight_decay": "weight_decay", "warmup": "warmup",
         "schedule": "schedule", "fractional_warmup": "fractional_warmup"}
FLAGS = {"name": "--optimizer", "weight_decay": "--weight-decay", "warmup": "--warmup",
         "schedule": "--schedule", "fractional_warmup": "--fractional-warmup"}
# (the command-line flags of fsxlt adapt and source-train)


def _checked(key: str, value: Any, shown: str) -> Any:
    """One setting's value (numbers as floats), or a one-line error calling it ``shown``."""
    number = isinstance(value, (int, float)) and not isinstance(value, bool)
    if key == "name" and value not in OPTIMIZERS:
        raise FsxltError(f"{shown} must be one of {', '.join(OPTIMIZERS)}, got {value!r}")
    if key == "schedule" and value not in SCHEDULES:
        raise FsxltError(f"{shown} must be one of {', '.join(SCHEDULES)}, got {value!r}")
    if key == "weight_decay" and not (number and math.isfinite(value) and value >= 0):
        raise FsxltError(f"{shown} must be a number >= 0, got {value!r}")
    if key == "fractional_warmup" and not isinstance(value, bool):
        raise FsxltError(f"{shown} must be true or false, got {value!r}")
    if key == "warmup" and not (number and 0 <= value < 1):
        raise FsxltError(f"{shown} must be a fraction of the training steps in [0, 1), "
                         f"got {value!r}")
    return float(value) if key in ("weight_decay", "warmup") else value


@dataclass(frozen=True)
class OptimizerSettings:
    """Which optimizer and learning-rate schedule a run trains with (module docstring)."""

    name: str = "adam"
    weight_decay: float = 0.0
    warmup: float = 0.0  # a fraction of all training steps, in [0, 1)
    schedule: str = "constant"
    fractional_warmup: bool = False  # warmup x steps unrounded (the peer's)

    def __post_init__(self) -> None:
        for key in OPTIMIZER_KEYS:
            object.__setattr__(self, key, _checked(key, getattr(self, key), NAMES[key]))
        if self.fractional_warmup and not self.warmup:
            raise FsxltError(f"{NAMES['fractional_warmup']} needs {NAMES['warmup']} above 0: "
                             "without a warmup it changes nothing but the run's identity")

    @property
    def is_default(self) -> bool:
        return self == OptimizerSettings()

    @property
    def scheduled(self) -> bool:
        """Whether the learning rate changes during training."""
        return self.schedule != "constant" or self.warmup > 0

    def describe(self) -> dict[str, Any]:
        """The record's ``optimizer`` block (every setting; ``fractional_warmup`` where it
        is on, so that 0.4's identities stay)."""
        out: dict[str, Any] = {"name": self.name, "weight_decay": self.weight_decay,
                               "warmup": self.warmup, "schedule": self.schedule}
        if self.fractional_warmup:
            out["fractional_warmup"] = True
        return out

    def changes(self) -> dict[str, Any]:
        """What an identity adds: nothing for the study's Adam, else every setting."""
        return {} if self.is_default else self.describe()


DEFAULT = OptimizerSettings()
PEER = OptimizerSettings("transformers-adamw", 0.05, 0.1, "linear", True)  # Schmidt et al.


def settings_from(values: dict[str, Any], shown: Callable[[str], str]) -> OptimizerSettings:
    """Settings from ``values`` (None or missing: the default), each checked and named in
    an error as ``shown(key)`` says."""
    given = {key: _checked(key, value, shown(key)) for key, value in values.items()
             if value is not None}
    if given.get("fractional_warmup") and not given.get("warmup"):
        raise FsxltError(f"{shown('fractional_warmup')} needs {shown('warmup')} above 0: "
                         "without a warmup it changes nothing but the run's identity")
    return OptimizerSettings(**given)


def flag_settings(name: str | None = None, weight_decay: float | None = None,
                  warmup: float | None = None, schedule: str | None = None,
                  fractional_warmup: bool = False) -> OptimizerSettings:
    """The command line's ``--optimizer``/``--weight-decay``/``--warmup``/``--schedule``/
    ``--fractional-warmup``."""
    return settings_from({"name": name, "weight_decay": weight_decay, "warmup": warmup,
                          "schedule": schedule,
                          "fractional_warmup": fractional_warmup or None}, FLAGS.__getitem__)


def parse_optimizer(value: Any, where: str = "optimizer") -> OptimizerSettings:
    """Settings from a config's ``optimizer`` mapping (null: the study's), or a one-line
    error: not a mapping, unknown keys, or a value :class:`OptimizerSettings` refuses."""
    if value is None:
        return DEFAULT
    if not isinstance(value, dict):
        raise FsxltError(f"{where}: optimizer must be a mapping such as {{name: adamw, "
                         f"weight_decay: 0.05, warmup: 0.1, schedule: linear}}, got {value!r}")
    unknown = sorted(str(key) for key in set(value) - set(OPTIMIZER_KEYS))
    if unknown:
        raise FsxltError(f"{where}: unknown optimizer setting(s) {', '.join(unknown)}; valid: "
                         f"{', '.join(OPTIMIZER_KEYS)}")
    return settings_from(value, lambda key: f"{where}: optimizer.{key}")


def decays(name: str) -> bool:
    """Whether weight decay applies to the parameter ``name`` (module docstring)."""
    parts = name.split(".")
    module = parts[-2].lower().replace("_", "") if len(parts) > 1 else ""
    return "bias" not in name and "layernorm" not in module and not module.endswith("norm")


def parameter_groups(model: torch.nn.Module, weight_decay: float) -> list[dict[str, Any]]:
    """The trainable parameters in two groups, decayed and not (empty groups left out)."""
    named = [(name, p) for name, p in model.named_parameters() if p.requires_grad]
    groups = [{"params": [p for name, p in named if decays(name)],
               "weight_decay": weight_decay},
              {"params": [p for name, p in named if not decays(name)], "weight_decay": 0.0}]
    return [group for group in groups if group["params"]]


def build_optimizer(model: torch.nn.Module, lr: float, settings: OptimizerSettings,
                    total_steps: int | None = None) -> torch.optim.Optimizer:
    """The torch optimizer of ``settings`` over the trainable parameters; a schedule is
    stepped by the optimizer itself after every step (a step post-hook), so a training
    loop only calls ``step`` and ``zero_grad``. ``total_steps``: needed by a schedule."""
    import torch

    from fsxlt.training.transformers_adamw import TransformersAdamW

    kind = {"adamw": torch.optim.AdamW, "transformers-adamw": TransformersAdamW}.get(
        settings.name, torch.optim.Adam)
    if settings.weight_decay:
        optimizer = kind(parameter_groups(model, settings.weight_decay), lr=float(lr),
                         weight_decay=settings.weight_decay)
    else:  # one group: the study's optimizer exactly
        params = [p for p in model.parameters() if p.requires_grad]
        optimizer = kind(params, lr=float(lr), weight_decay=0.0)
    if settings.scheduled:
        scheduler = make_schedule(optimizer, settings, total_steps)
        optimizer.register_step_post_hook(lambda *_: scheduler.step())
    return optimizer


def make_schedule(optimizer: torch.optim.Optimizer, settings: OptimizerSettings,
                  total_steps: int | None) -> Any:
    """The learning-rate scheduler of ``settings`` over ``total_steps`` optimizer steps."""
    from transformers import get_constant_schedule_with_warmup, get_linear_schedule_with_warmup

    if total_steps is None or total_steps < 1:
        raise FsxltError(f"the {settings.schedule} schedule needs the number of training "
                         f"steps, got {total_steps!r}")
    warmup = settings.warmup * total_steps
    warmup = warmup if settings.fractional_warmup else round(warmup)
    if settings.schedule == "linear":
        return get_linear_schedule_with_warmup(optimizer, warmup, total_steps)
    return get_constant_schedule_with_warmup(optimizer, warmup)


__all__ = ["DEFAULT", "FLAGS", "OPTIMIZERS", "OPTIMIZER_KEYS", "PEER", "SCHEDULES",
           "OptimizerSettings", "build_optimizer", "decays", "flag_settings", "make_schedule",
           "parameter_groups", "parse_optimizer", "settings_from"]
