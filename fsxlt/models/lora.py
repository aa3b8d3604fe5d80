"""LoRA adapters (the ``peft`` library) in an fsxlt model's encoder: wrap once, reset per run.

Wrapping an encoder with peft walks all its modules and builds new adapter
layers; unwrapping walks them again. The adapt engine runs many LoRA runs on
one model, so it keeps the wrapped encoder between runs of the same LoRA
settings (rank, alpha, dropout, target modules) and only puts the adapters
back into their starting state: :func:`reset_adapters` draws exactly the
numbers a fresh :func:`wrap` with the same seed draws, in the same order,
on the CPU generator (as peft builds the layers on the CPU), so a reset
adapter is bit-identical to a freshly wrapped one.

The base weights are the encoder's own tensors (peft keeps each targeted
linear layer as the adapter layer's ``base_layer``), only their names
change; :func:`start_names` maps the plain names to the wrapped ones so
that the engine restores the start's weights through the wrapper.
:mod:`fsxlt.methods` imports this module lazily: it needs torch and peft.
"""

from __future__ import annotations

import math
import warnings
from typing import Any

import torch
from torch import nn

from fsxlt.errors import FsxltError

ADAPTER = "default"  # peft's name for the one adapter get_peft_model adds
SETTINGS_ATTRIBUTE = "fsxlt_lora_settings"  # set on the wrapped encoder: what it was built with
WRAPPED_PREFIX = "encoder.base_model.model."


def lora_settings(config: dict[str, Any]) -> tuple[Any, ...]:
    """What the adapter layers' structure depends on (a LoRA method's options), hashable."""
    return (int(config["rank"]), float(config["alpha"]), float(config["dropout"]),
            tuple(config["target_modules"]))


def wrapped_settings(model: Any) -> tuple[Any, ...] | None:
    """The settings the model's encoder was wrapped with, or None: not wrapped by us."""
    return getattr(model.encoder, SETTINGS_ATTRIBUTE, None)


def wrap(model: Any, settings: tuple[Any, ...], seed: int) -> None:
    """Replace ``model.encoder`` by its peft wrapper, adapters drawn with ``seed``."""
    from peft import LoraConfig, get_peft_model

    rank, alpha, dropout, targets = settings
    config = LoraConfig(r=rank, lora_alpha=alpha, lora_dropout=dropout,
                        target_modules=list(targets), bias="none")
    torch.manual_seed(seed)  # the adapters' random initialisation
    try:
        with warnings.catch_warnings():  # peft probes deprecated transformers attributes
            warnings.simplefilter("ignore", FutureWarning)
            model.encoder = get_peft_model(model.encoder, config)
    except ValueError as err:  # e.g. a target module the encoder does not have
        raise FsxltError(f"method lora: {err}".splitlines()[0]) from None
    setattr(model.encoder, SETTINGS_ATTRIBUTE, settings)


def unwrap(model: Any) -> None:
    """Remove the adapter layers (``unload``, not merged): the plain encoder again."""
    if hasattr(model.encoder, "peft_config"):
        model.encoder = model.encoder.unload()


def adapter_layers(model: Any) -> list[Any]:
    """The encoder's LoRA layers, in module order (the order peft created them in)."""
    from peft.tuners.lora import LoraLayer

    return [module for module in model.encoder.modules()
            if isinstance(module, LoraLayer) and ADAPTER in module.lora_A]


def reset_adapters(model: Any, seed: int) -> None:
    """Put every adapter back to the weights a fresh :func:`wrap` with ``seed`` gives.

    peft creates, per targeted layer in module order, ``lora_A`` and
    ``lora_B`` as ``nn.Linear`` (each drawing its default initialisation)
    and then re-initialises them (``reset_lora_parameters``: A Kaiming-
    uniform, B zeros). The same calls, in the same order, on CPU copies of
    the same shapes draw the same numbers, which are then copied in place.
    """
    torch.manual_seed(seed)
    with torch.no_grad():
        for layer in adapter_layers(model):
            lora_a, lora_b = layer.lora_A[ADAPTER], layer.lora_B[ADAPTER]
            fresh_a = nn.Linear(lora_a.in_features, lora_a.out_features, bias=False)
            fresh_b = nn.Linear(lora_b.in_features, lora_b.out_features,
                                bias=lora_b.bias is not None)
            nn.init.kaiming_uniform_(fresh_a.weight, a=math.sqrt(5))  # reset_lora_parameters
            nn.init.zeros_(fresh_b.weight)
            if fresh_b.bias is not None:
                nn.init.zeros_(fresh_b.bias)
            lora_a.weight.copy_(fresh_a.weight)
            lora_b.weight.copy_(fresh_b.weight)
            if lora_b.bias is not None:
                lora_b.bias.copy_(fresh_b.bias)


def train_only_adapters(model: Any) -> None:
    """In the encoder, the adapters train and the base stays frozen (peft's bias="none")."""
    for pname, param in model.encoder.named_parameters():
        param.requires_grad_("lora_" in pname)


def start_names(model: Any) -> dict[str, str]:
    """Plain state-dict names of the wrapped model's base weights -> their wrapped names."""
    names: dict[str, str] = {}
    for name in model.state_dict():
        if not name.startswith(WRAPPED_PREFIX):
            continue
        if ".lora_" in name:
            continue
        plain = "encoder." + name[len(WRAPPED_PREFIX):].replace(".base_layer.", ".")
        names[plain] = name
    return names
