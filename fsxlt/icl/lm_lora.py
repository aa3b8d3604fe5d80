"""LoRA adapters (``peft``) on a causal LM, and the loss and steps that train them on prompts.

:class:`Adapters` wraps a loaded causal LM once (``get_peft_model``, its
adapters drawn with the run's seed) and keeps a copy of those fresh adapter
weights: :meth:`Adapters.reset` puts them back before every run (each
learning rate of each bucket), so every run starts from exactly the adapters
a fresh wrap with the seed gives, whatever ran before it. Only the adapters
train; the LM's own weights stay frozen. Training and scoring call the wrapped
LM itself (``get_base_model``: the transformers model with peft's adapter
layers inside), so the ICL arm's scoring and decoding run on it unchanged.

A training row is a whole prompt (prefix, query and the gold continuation) of
which only the last tokens are *scored*: the gold label word, candidate or
target (and, generating, what ends it). :func:`rows_nll` sums the negative
log-likelihood of the scored tokens, each after everything before it; the
prompt's own tokens carry no loss. :func:`train_step` takes one optimizer
step over a batch of rows, its loss the mean over the batch's rows of each
row's summed negative log-likelihood (the rows go through the model in chunks
of ``forward_batch``, their gradients added up). Only the scored positions'
logits are computed.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch

from fsxlt.errors import FsxltError
from fsxlt.icl.scoring import _only_scored_logits, context_size

DEFAULT_RANK = 8
DEFAULT_ALPHA = 16.0
DEFAULT_DROPOUT = 0.1


@dataclass(frozen=True)
class LoraSettings:
    """The adapters: rank, scaling alpha, dropout on their input, and the linear layers
    that get them (None: peft's default for the model type, e.g. q_proj and v_proj)."""

    rank: int = DEFAULT_RANK
    alpha: float = DEFAULT_ALPHA
    dropout: float = DEFAULT_DROPOUT
    target_modules: tuple[str, ...] | None = None

    def check(self) -> None:
        if self.rank < 1 or not self.alpha > 0 or not 0 <= self.dropout < 1:
            raise FsxltError(f"LoRA needs rank >= 1, alpha > 0 and 0 <= dropout < 1; got rank "
                             f"{self.rank}, alpha {self.alpha}, dropout {self.dropout}")
        if self.target_modules is not None and (not self.target_modules
                                                or not all(self.target_modules)):
            raise FsxltError("the LoRA target modules need at least one name, none empty")

    def describe(self) -> dict[str, Any]:
        return {"rank": self.rank, "alpha": self.alpha, "dropout": self.dropout,
                "target_modules": list(self.target_modules)
                if self.target_modules is not None else None}


class Adapters:
    """A causal LM wrapped with LoRA adapters once; each run resets them to the fresh wrap."""

    def __init__(self, model: Any, settings: LoraSettings, seed: int) -> None:
        from peft import LoraConfig, get_peft_model

        targets = list(settings.target_modules) if settings.target_modules else None
        config = LoraConfig(r=settings.rank, lora_alpha=settings.alpha,
                            lora_dropout=settings.dropout, target_modules=targets,
                            bias="none", task_type="CAUSAL_LM")
        torch.manual_seed(seed)  # the adapters' random initialisation
        try:
            with warnings.catch_warnings():  # peft probes deprecated transformers attributes
                warnings.simplefilter("ignore")
                wrapped = get_peft_model(model, config)
        except ValueError as err:  # a target module the model lacks, an unknown model type
            raise FsxltError(f"LoRA on {type(model).__name__}: {str(err).splitlines()[0]} "
                             "(--target-module names the layers that get adapters)") from None
        self.model = wrapped.get_base_model()
        self.names = [n for n, p in self.model.named_parameters() if p.requires_grad]
        if not self.names:
            raise FsxltError(f"LoRA on {type(model).__name__}: no adapter to train")
        self.target_modules = sorted(wrapped.peft_config["default"].target_modules)
        self.fresh = self.snapshot()

    @property
    def n_trainable(self) -> int:
        return sum(p.numel() for p in self.model.parameters() if p.requires_grad)

    def snapshot(self) -> dict[str, torch.Tensor]:
        """Copies of the adapter weights, kept in memory."""
        params = dict(self.model.named_parameters())
        return {name: params[name].detach().clone() for name in self.names}

    def restore(self, state: dict[str, torch.Tensor]) -> None:
        params = dict(self.model.named_parameters())
        with torch.no_grad():
            for name, tensor in state.items():
                params[name].copy_(tensor)

    def reset(self) -> None:
        """The adapters a fresh wrap with the seed draws (A random, B zeros)."""
        self.restore(self.fresh)


@dataclass(frozen=True)
class TrainRow:
    """One training prompt as token ids; its last ``scored`` tokens carry the loss."""

    ids: list[int]
    scored: int


def check_rows(rows: Sequence[TrainRow], model: Any, what: str) -> int:
    """The longest row in tokens; a row longer than the model's context, or with nothing
    before its first scored token: one line naming the bucket."""
    if not rows:
        raise FsxltError(f"{what}: no training examples")
    if any(row.scored < 1 or len(row.ids) - row.scored < 1 for row in rows):
        raise FsxltError(f"{what}: a training prompt without text before its answer (no "
                         "instruction, no query text and no BOS token)")
    longest = max(len(row.ids) for row in rows)
    limit = context_size(model)
    if limit is not None and longest > limit:
        raise FsxltError(f"{what}: a training prompt of {longest} tokens is longer than the "
                         f"model's context of {limit} tokens")
    return longest


def _pad_id(model: Any) -> int:
    pad = getattr(model.config, "pad_token_id", None)
    return int(pad) if isinstance(pad, int) else 0


def rows_nll(model: Any, rows: Sequence[TrainRow]) -> torch.Tensor:
    """The summed negative log-likelihood of every row's scored tokens (right-padded rows
    in one forward pass: no real token attends to padding)."""
    device = next(model.parameters()).device
    width = max(len(row.ids) for row in rows)
    ids = torch.full((len(rows), width), _pad_id(model), dtype=torch.long, device=device)
    spots: list[tuple[int, int, int]] = []  # (row, position predicting, token predicted)
    for b, row in enumerate(rows):
        ids[b, : len(row.ids)] = torch.tensor(row.ids, device=device)
        spots += [(b, t - 1, row.ids[t]) for t in range(len(row.ids) - row.scored,
                                                          len(row.ids))]
    where = torch.tensor([b for b, _, _ in spots], device=device)
    position = torch.tensor([p for _, p, _ in spots], device=device)
    wanted = torch.tensor([t for _, _, t in spots], device=device)
    with _only_scored_logits(model, where, position) as fired:
        logits = model(input_ids=ids, logits_to_keep=0, use_cache=False).logits
    if not fired:
        logits = logits[where, position].unsqueeze(0)
    logprobs = torch.log_softmax(logits[0].float(), dim=-1)
    return -logprobs[torch.arange(len(spots), device=device), wanted].sum()


@torch.no_grad()
def mean_token_nll(model: Any, rows: Sequence[TrainRow], batch: int = 8) -> float:
    """The negative log-likelihood per scored token over ``rows`` (teacher-forced)."""
    model.eval()
    total = sum(float(rows_nll(model, rows[first: first + batch]))
                for first in range(0, len(rows), batch))
    return total / sum(row.scored for row in rows)


def train_step(model: Any, rows: Sequence[TrainRow], optimizer: torch.optim.Optimizer, *,
               forward_batch: int = 8, precision: str = "fp32") -> float:
    """One optimizer step on ``rows``: the mean over the rows of each one's summed negative
    log-likelihood (its scored tokens), gradients added up over chunks of rows. The
    forward passes run under the caller's autocast; ``precision`` fp16 scales the loss
    (:func:`fsxlt.models.precision.loss_scaler`)."""
    from fsxlt.models.precision import loss_scaler
    from fsxlt.training.loop import optimizer_step

    model.train()
    optimizer.zero_grad(set_to_none=True)
    scaler = loss_scaler(optimizer, precision, next(model.parameters()).device)
    total = 0.0
    for first in range(0, len(rows), forward_batch):
        loss = rows_nll(model, rows[first: first + forward_batch]) / len(rows)
        (scaler.scale(loss) if scaler is not None else loss).backward()
        total += float(loss.detach())
    optimizer_step(optimizer, scaler)
    model.eval()
    return total
