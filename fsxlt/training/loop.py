"""Pieces shared by source-training and target-adapting: seeding, steps, snapshots."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

import torch
from torch.nn import functional as F

from fsxlt import __version__
from fsxlt.data import Example
from fsxlt.evaluation import autocast_context
from fsxlt.fileio import sha256_text
from fsxlt.modeling import FsxltModel


def seed_all(seed: int) -> None:
    """Seed torch's global generators (CPU and CUDA) for one run."""
    torch.manual_seed(int(seed))


def make_optimizer(model: FsxltModel, lr: float) -> torch.optim.Optimizer:
    """Adam, default betas and epsilon, no weight decay, constant learning rate."""
    params = [p for p in model.parameters() if p.requires_grad]
    return torch.optim.Adam(params, lr=float(lr), weight_decay=0.0)


def summed_cross_entropy(logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    return F.cross_entropy(logits.float(), labels, reduction="sum")


def train_step(model: FsxltModel, batches: Sequence[dict[str, torch.Tensor]],
               optimizer: torch.optim.Optimizer, *, amp: bool = True,
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
    loss_sum = 0.0
    for batch in batches:
        with autocast_context(batch["labels"].device, amp):
            logits = model(batch)
        loss = loss_fn(logits, batch["labels"]) / max(total, 1)
        loss.backward()
        loss_sum += float(loss.detach())
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)
    return loss_sum


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


def examples_digest(examples: Sequence[Example]) -> str:
    """Content hash of a list of examples (ids, texts and labels)."""
    return sha256_text("\n".join(json.dumps(e.to_dict(), sort_keys=True, ensure_ascii=False)
                                 for e in examples))


def versions() -> dict[str, str]:
    import transformers

    return {"fsxlt": __version__, "torch": torch.__version__,
            "transformers": transformers.__version__}


def config_hash(config: dict[str, Any]) -> str:
    return "sha256:" + sha256_text(json.dumps(config, sort_keys=True, ensure_ascii=False))[:16]


def data_info(examples: Sequence[Example] | None, source: str | None = None,
              ) -> dict[str, Any] | None:
    if examples is None:
        return None
    return {"source": source, "n": len(examples), "sha256": examples_digest(examples)}
