"""The numeric precision a model runs in: ``auto``, ``bf16``, ``fp16`` or ``fp32``.

The weights always stay float32 (checkpoints, snapshots and averages are float32);
a 16-bit precision runs the forward passes under ``torch.autocast`` with that
dtype, and every value that leaves a forward pass (logits into a loss, a score, a
prediction, a cached feature) is read as float32.

- ``fp32``: no autocast. CPU runs are exact and deterministic.
- ``bf16``: autocast to bfloat16. On CUDA only where the GPU runs it natively
  (compute capability 8.0 or newer: A100, H100, L4, RTX 30xx and later); on CPU
  too, where it is slower than fp32 on most machines and exists so that every
  autocast branch can be tested without a GPU.
- ``fp16``: autocast to float16 with a dynamic loss scaler in training
  (:func:`loss_scaler`: a step whose gradients overflow is skipped and the scale
  lowered, as ``torch.amp.GradScaler`` does). CUDA only.
- ``auto``: bf16 on a CUDA device with native bf16, fp32 everywhere else.

:func:`resolve_precision` turns a requested precision into the one used on a
device, refusing in one line what the device cannot run; records, checkpoints
and run identities name the resolved one.
"""

from __future__ import annotations

import weakref
from contextlib import nullcontext
from typing import TYPE_CHECKING, Any

from fsxlt.errors import FsxltError

if TYPE_CHECKING:
    import torch

PRECISIONS = ("auto", "bf16", "fp16", "fp32")
RESOLVED = ("bf16", "fp16", "fp32")
# the precision every fsxlt before 0.8 ran on CPU, and the one identities leave unnamed
DEFAULT_RESOLVED = "fp32"


def check_precision(precision: str, option: str = "--precision") -> str:
    """``precision`` if it is one of :data:`PRECISIONS`, else a one-line refusal."""
    if precision not in PRECISIONS:
        raise FsxltError(f"{option} {precision!r} is not a precision; valid: "
                         f"{', '.join(PRECISIONS)}")
    return precision


def native_bf16(device: torch.device | str) -> bool:
    """Whether ``device`` runs bf16 natively (CUDA compute capability 8.0 or newer)."""
    import torch

    device = torch.device(device)
    if device.type != "cuda" or not torch.cuda.is_available():
        return False
    return torch.cuda.get_device_capability(device)[0] >= 8


def device_name(device: torch.device | str) -> str:
    """The device's name as a user knows it: the GPU's model, or ``cpu``."""
    import torch

    device = torch.device(device)
    if device.type == "cuda" and torch.cuda.is_available():
        return torch.cuda.get_device_name(device)
    return device.type


def resolve_precision(requested: str, device: torch.device | str) -> str:
    """The precision ``requested`` runs in on ``device``: ``auto`` resolved, a precision
    the device cannot run refused in one line."""
    import torch

    check_precision(requested)
    device = torch.device(device)
    if requested == "auto":
        return "bf16" if native_bf16(device) else "fp32"
    if requested == "fp16" and device.type != "cuda":
        raise FsxltError(f"--precision fp16 runs on CUDA only, not on {device.type} "
                         "(use bf16 or fp32 there)")
    if requested == "bf16" and device.type not in ("cpu", "cuda"):
        raise FsxltError(f"--precision bf16 runs on CUDA and CPU, not on {device.type} "
                         "(use fp32 there)")
    if requested == "bf16" and device.type == "cuda" and not native_bf16(device):
        raise FsxltError(f"--precision bf16: {device_name(device)} has no native bf16 (it "
                         "needs compute capability 8.0 or newer); use fp16 or fp32")
    return requested


def concrete(precision: str, device: torch.device | str) -> str:
    """A precision as a forward pass reads it: ``auto`` resolved for ``device``; a
    resolved one as it is (the boundary that resolved it has checked it)."""
    if precision in RESOLVED:
        return precision
    return resolve_precision(precision, device)


def precision_identity(precision: str) -> dict[str, str]:
    """What a run's identity holds of its (resolved) precision: nothing for fp32, so that
    fp32 runs keep the identity they had before precisions were named (every CPU run of
    fsxlt < 0.8 was fp32), else ``{"precision": ...}``."""
    return {} if precision == DEFAULT_RESOLVED else {"precision": precision}


def autocast_context(device: torch.device | str, precision: str = DEFAULT_RESOLVED):
    """The autocast a forward pass on ``device`` runs under: none for fp32."""
    import torch

    device = torch.device(device)
    precision = concrete(precision, device)
    if precision == "fp32":
        return nullcontext()
    dtype = {"bf16": torch.bfloat16, "fp16": torch.float16}[precision]
    return torch.autocast(device.type, dtype=dtype)


_SCALERS: weakref.WeakKeyDictionary[Any, Any] = weakref.WeakKeyDictionary()


def loss_scaler(optimizer: torch.optim.Optimizer, precision: str,
                device: torch.device | str) -> Any:
    """fp16's dynamic loss scaler of ``optimizer`` (one per optimizer, made on its first
    step and kept as long as the optimizer lives); ``None`` for bf16 and fp32, whose
    gradients need no scaling."""
    if concrete(precision, device) != "fp16":
        return None
    import torch

    scaler = _SCALERS.get(optimizer)
    if scaler is None:
        scaler = torch.amp.GradScaler(torch.device(device).type)
        _SCALERS[optimizer] = scaler
    return scaler


def memory_facts(device: torch.device | str) -> str:
    """What a message about running out of memory says of ``device``: its name, its
    memory and the peak this process reached on it (CUDA), else the host's memory."""
    import torch

    device = torch.device(device)
    if device.type == "cuda" and torch.cuda.is_available():
        total = torch.cuda.get_device_properties(device).total_memory
        peak = torch.cuda.max_memory_allocated(device)
        return (f"{device_name(device)}, {total / 2**30:.1f} GiB, peak {peak / 2**30:.1f} GiB "
                "allocated by this worker")
    try:
        import os

        pages, size = os.sysconf("SC_PHYS_PAGES"), os.sysconf("SC_PAGE_SIZE")
        return f"{device.type}, {pages * size / 2**30:.1f} GiB of host memory"
    except (ValueError, OSError, AttributeError):
        return device.type


def free_memory(device: torch.device | str) -> None:
    """Give back what a failed run held: Python's garbage, then CUDA's cached blocks."""
    import gc

    import torch

    gc.collect()
    device = torch.device(device)
    if device.type == "cuda" and torch.cuda.is_available():
        torch.cuda.empty_cache()
