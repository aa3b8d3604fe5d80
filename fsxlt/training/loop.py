"""Pieces shared by source-training and target-adapting: seeding, steps, snapshots."""

from __future__ import annotations

import functools
import hashlib
import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import torch
from torch.nn import functional as F

from fsxlt import __version__
from fsxlt.data import Example
from fsxlt.errors import FsxltError
from fsxlt.fileio import sha256_text
from fsxlt.models.model import FsxltModel
from fsxlt.models.precision import autocast_context, loss_scaler
from fsxlt.training.optim import OptimizerSettings, build_optimizer


def seed_all(seed: int) -> None:
    """Seed torch's global generators (CPU and CUDA) for one run."""
    torch.manual_seed(int(seed))


def make_optimizer(model: FsxltModel, lr: float, settings: OptimizerSettings | None = None,
                   total_steps: int | None = None) -> torch.optim.Optimizer:
    """The study's optimizer (Adam, default betas and epsilon, no weight decay, constant
    learning rate), or what ``settings`` says (:mod:`fsxlt.training.optim`: AdamW, weight
    decay, a warm-up and linear decay over ``total_steps``, stepped by the optimizer)."""
    return build_optimizer(model, lr, settings or OptimizerSettings(), total_steps)


def summed_cross_entropy(logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    return F.cross_entropy(logits.float(), labels, reduction="sum")


def train_step(model: FsxltModel, batches: Sequence[dict[str, torch.Tensor]],
               optimizer: torch.optim.Optimizer, *, precision: str = "auto",
               loss_fn: Callable[[torch.Tensor, torch.Tensor], torch.Tensor] | None = None,
               ) -> float:
    """One optimizer step over ``batches`` (micro-batches of one logical batch).

    The loss is ``loss_fn`` (summed over a micro-batch; default cross-entropy)
    divided by the number of examples (classification) or scored words
    (tagging) of the whole logical batch, i.e. a mean over the bucket.
    """
    loss_fn = loss_fn or summed_cross_entropy
    model.train()
    total = sum(int(b["labels"].numel()) for b in batches)
    optimizer.zero_grad(set_to_none=True)
    loss_sum, scaler = 0.0, None
    for batch in batches:
        with autocast_context(batch["labels"].device, precision):
            logits = model(batch)
        loss = loss_fn(logits, batch["labels"]) / max(total, 1)
        scaler = _backward(loss, optimizer, precision, batch["labels"].device, scaler)
        loss_sum += float(loss.detach())
    optimizer_step(optimizer, scaler)
    return loss_sum


def weighted_step(model: FsxltModel,
                  groups: Sequence[tuple[Sequence[dict[str, torch.Tensor]], float]],
                  optimizer: torch.optim.Optimizer, *, precision: str = "auto",
                  loss_fn: Callable[[torch.Tensor, torch.Tensor], torch.Tensor] | None = None,
                  ) -> float:
    """One optimizer step over groups of micro-batches: the loss is the sum over groups of
    ``weight`` x the group's mean loss (over its examples or scored words).

    One group of weight 1 is :func:`train_step`'s loss; two groups of 0.5 average the
    mean losses of two languages (the joint-macro regime).
    """
    loss_fn = loss_fn or summed_cross_entropy
    model.train()
    optimizer.zero_grad(set_to_none=True)
    loss_sum, scaler = 0.0, None
    for batches, weight in groups:
        total = sum(int(b["labels"].numel()) for b in batches)
        for batch in batches:
            with autocast_context(batch["labels"].device, precision):
                logits = model(batch)
            loss = loss_fn(logits, batch["labels"]) * (float(weight) / max(total, 1))
            scaler = _backward(loss, optimizer, precision, batch["labels"].device, scaler)
            loss_sum += float(loss.detach())
    optimizer_step(optimizer, scaler)
    return loss_sum


def _backward(loss: torch.Tensor, optimizer: torch.optim.Optimizer, precision: str,
              device: torch.device, scaler: Any) -> Any:
    """``loss.backward()``, scaled by fp16's loss scaler (which it returns) where it runs."""
    scaler = scaler or loss_scaler(optimizer, precision, device)
    (scaler.scale(loss) if scaler is not None else loss).backward()
    return scaler


def optimizer_step(optimizer: torch.optim.Optimizer, scaler: Any = None) -> None:
    """The optimizer's step, through fp16's loss scaler where there is one (a step whose
    gradients overflowed is skipped and the scale lowered), then the gradients cleared."""
    if scaler is None:
        optimizer.step()
    else:
        scaler.step(optimizer)
        scaler.update()
    optimizer.zero_grad(set_to_none=True)


def snapshot(model: FsxltModel, names: Sequence[str] | None = None, *,
             device: torch.device | str | None = None) -> dict[str, torch.Tensor]:
    """Copies of parameters (all, or just ``names``), kept in memory."""
    wanted = None if names is None else set(names)
    out = {}
    for name, tensor in model.state_dict().items():
        if wanted is None or name in wanted:
            out[name] = tensor.detach().to(device or tensor.device, copy=True)
    return out


def restore(model: FsxltModel, state: dict[str, torch.Tensor],
            names: dict[str, str] | None = None) -> None:
    """Copy ``state`` (a full or partial state dict) into the model in place.

    ``names`` maps a name of ``state`` to the model's name for the same
    tensor where they differ (a method's kept change, e.g. LoRA's wrapper).
    """
    own = model.state_dict()
    names = names or {}
    with torch.no_grad():
        for name, tensor in state.items():
            own[names.get(name, name)].copy_(tensor)


def average_states(states: Sequence[dict[str, torch.Tensor]]) -> dict[str, torch.Tensor]:
    """The element-wise mean of state dicts with the same names (checkpoint averaging).

    Floating-point tensors are summed in float32 (16-bit ones) or float64
    (float32 and float64 ones), divided, and cast back to their own dtype, so
    the mean of identical states is that state exactly; integer and bool
    tensors (e.g. position ids) are taken from the last state unchanged. The
    result lives where the last state's tensors live.
    """
    if not states:
        raise FsxltError("cannot average zero states")
    names = list(states[-1])
    for i, state in enumerate(states):
        if set(state) != set(names):
            differ = sorted(set(state) ^ set(names))
            raise FsxltError(f"cannot average states with different weights (state {i}: "
                             f"{', '.join(differ[:3])}{' ...' if len(differ) > 3 else ''})")
    out = {}
    for name in names:
        last = states[-1][name]
        if not last.is_floating_point():
            out[name] = last.detach().clone()
            continue
        wide = torch.float64 if last.dtype in (torch.float32, torch.float64) else torch.float32
        total = torch.zeros(last.shape, dtype=wide, device=last.device)
        for state in states:
            if state[name].shape != last.shape:
                raise FsxltError(f"cannot average {name}: shapes {tuple(state[name].shape)} "
                                 f"and {tuple(last.shape)} differ")
            total += state[name].detach().to(last.device, wide)
        out[name] = (total / len(states)).to(last.dtype)
    return out


def examples_digest(examples: Sequence[Example]) -> str:
    """Content hash of a list of examples (ids, texts and labels)."""
    return sha256_text("\n".join(json.dumps(e.to_dict(), sort_keys=True, ensure_ascii=False)
                                 for e in examples))


def versions() -> dict[str, str]:
    """What ran: fsxlt's version and a content hash of its code (so two records of the
    same version but different code, e.g. a working tree between releases, differ),
    Python's, torch's and transformers' versions."""
    import platform

    import transformers

    return {"fsxlt": __version__, "fsxlt_code": code_digest(),
            "python": platform.python_version(), "torch": torch.__version__,
            "transformers": transformers.__version__}


@functools.cache
def code_digest() -> str:
    """A content hash of the fsxlt package's own files (``.py`` and ``.yaml``, by path)."""
    root = Path(__file__).resolve().parent.parent
    digest = hashlib.sha256()
    for path in sorted(p for p in root.rglob("*")
                       if p.suffix in (".py", ".yaml") and p.is_file()
                       and "__pycache__" not in p.parts):
        digest.update(path.relative_to(root).as_posix().encode() + b"\0")
        digest.update(path.read_bytes() + b"\0")
    return "sha256:" + digest.hexdigest()[:16]


def config_hash(config: dict[str, Any]) -> str:
    return "sha256:" + sha256_text(json.dumps(config, sort_keys=True, ensure_ascii=False))[:16]


def data_info(examples: Sequence[Example] | None, source: str | None = None,
              ) -> dict[str, Any] | None:
    if examples is None:
        return None
    return {"source": source, "n": len(examples), "sha256": examples_digest(examples)}
