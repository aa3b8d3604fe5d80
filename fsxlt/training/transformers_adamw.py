"""The AdamW update rule of transformers 4.x (``transformers.optimization.AdamW``).

The training-regime peer (fdschmidt93/fsxlt) trains with this class
(``trident-xtreme/configs/optimizer/adamw.yaml`` line 1, transformers 4.17.0 in its
``environment.yaml``). Its step differs from ``torch.optim.AdamW`` in two places
(transformers 4.17.0, ``transformers/optimization.py`` lines 359-380):

- epsilon is added to ``sqrt(v)`` *before* the bias correction, and the correction
  goes into the step size: ``p -= lr * sqrt(1 - b2^t) / (1 - b1^t) * m / (sqrt(v) + eps)``
  (torch divides by ``sqrt(v / (1 - b2^t)) + eps``);
- weight decay comes *after* that update, on the updated weights:
  ``p -= lr * weight_decay * p`` (torch decays the weights before the update).

Written here from that definition, so that runs need neither transformers 4.x nor
its deprecated class. :class:`TransformersAdamW` defaults to betas 0.9, 0.999, bias
correction on, and eps 1e-8. That eps is the peer's, not the class's: transformers
4.17.0's ``AdamW.__init__`` defaults to eps 1e-6 (``optimization.py`` line 300), while
the peer's ``trident-xtreme/configs/optimizer/adamw.yaml`` sets ``eps: 1e-8``
explicitly, and the preset reproduces the peer's runs. Sparse gradients are refused, as
there.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from typing import Any

import torch

from fsxlt.errors import FsxltError


class TransformersAdamW(torch.optim.Optimizer):
    """AdamW as transformers 4.x's ``AdamW`` steps (module docstring)."""

    def __init__(self, params: Iterable[Any], lr: float = 1e-3,
                 betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0.0):
        if lr < 0 or eps < 0 or weight_decay < 0 or not all(0 <= b < 1 for b in betas):
            raise FsxltError(f"transformers-adamw: invalid settings lr={lr}, betas={betas}, "
                             f"eps={eps}, weight_decay={weight_decay}")
        super().__init__(params, {"lr": lr, "betas": betas, "eps": eps,
                                  "weight_decay": weight_decay})

    @torch.no_grad()
    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        for group in self.param_groups:
            beta1, beta2 = group["betas"]
            for param in group["params"]:
                if param.grad is None:
                    continue
                if param.grad.is_sparse:
                    raise FsxltError("transformers-adamw does not take sparse gradients")
                self._update(param, group, beta1, beta2)
        return loss

    def _update(self, param: torch.Tensor, group: dict[str, Any], beta1: float,
                beta2: float) -> None:
        state = self.state[param]
        if not state:
            state["step"] = 0
            state["exp_avg"] = torch.zeros_like(param)
            state["exp_avg_sq"] = torch.zeros_like(param)
        state["step"] += 1
        step, grad = state["step"], param.grad
        exp_avg, exp_avg_sq = state["exp_avg"], state["exp_avg_sq"]
        exp_avg.mul_(beta1).add_(grad, alpha=1.0 - beta1)
        exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1.0 - beta2)
        denominator = exp_avg_sq.sqrt().add_(group["eps"])
        step_size = group["lr"] * math.sqrt(1.0 - beta2 ** step) / (1.0 - beta1 ** step)
        param.addcdiv_(exp_avg, denominator, value=-step_size)
        if group["weight_decay"] > 0.0:
            param.add_(param, alpha=-group["lr"] * group["weight_decay"])
