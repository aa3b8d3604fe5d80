"""An example's stem and suffix rows as one packed row, many examples per forward pass.

*The rule.* :mod:`fsxlt.icl.scoring` plans, per example, a stem (the query and
the tokens its options start with alike) and a suffix row per option with
tokens of its own, which continues the stem. Here the stem and its suffixes
are laid end to end in one row, and an attention mask makes the row a tree:
a token attends to the cached prefix, to the stem's tokens before it and to
its own suffix's tokens before it, never to another suffix. Each token gets
its position in its full prompt (a suffix starts where the stem ends), so
rotary and learned position embeddings see what they see when the prompt is
scored alone; a sliding-window layer also drops the keys whose distance in
the full prompt reaches its window, the window counted in positions of the
full prompt, as the model counts it. Rows are right-padded; a padding token
attends only to itself and nothing attends to it.

*Its cost.* One forward pass per batch of examples, each shared token fed
and scored once: a stem no longer runs alone before its suffixes (two passes
per example), and the prefix's key/value cache is copied once per batch, not
once per example.

*Its exactness.* A masked key gets the dtype's lowest value before the
softmax, so its weight is exactly zero; what is left is the same sum over the
same keys as scoring each full prompt alone, in another order: equal up to
floating-point noise (tested against each prompt alone on Llama, GPT-2 and
Gemma 3 with a sliding window shorter than the prompts). It applies where
the cache is one of transformers' dynamic caches whose every layer is full
or sliding-window attention with the window its attention module declares;
:func:`layer_views` returns None otherwise and the caller runs the stem and
its suffixes as two passes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import torch


@dataclass
class Packed:
    """One packed row: its tokens, each token's position after the cached prefix and
    segment (0: the stem, j: the j-th suffix), and the plan rows it scores as
    ``(plan row, packed index, position in that row, token)``."""

    ids: list[int] = field(default_factory=list)
    positions: list[int] = field(default_factory=list)
    segments: list[int] = field(default_factory=list)
    spots: list[tuple[int, int, int, int]] = field(default_factory=list)


def pack(rows: Sequence[Any], stem: int, suffixes: Sequence[int]) -> Packed:
    """The packed row of plan row ``stem`` and its ``suffixes`` (plan rows whose parent
    is ``stem``)."""
    packed = Packed()
    for segment, index in enumerate([stem, *suffixes]):
        row, offset, start = rows[index], len(packed.ids), len(rows[stem].ids) if segment else 0
        packed.ids += row.ids
        packed.positions += [start + i for i in range(len(row.ids))]
        packed.segments += [segment] * len(row.ids)
        packed.spots += [(index, offset + pos, pos, token) for pos, token in row.wanted]
    return packed


@dataclass(frozen=True)
class LayerView:
    """What a layer's keys are before the packed tokens: ``kept`` entries of the cache
    (the prefix's last ones), and its sliding ``window`` (None: full attention)."""

    kept: int
    window: int | None


def _attention_windows(model: Any) -> list[int | None] | None:
    decoder = model.get_decoder() if hasattr(model, "get_decoder") else None
    layers = getattr(decoder, "layers", None) or getattr(decoder, "h", None)
    if layers is None:
        return None
    windows = []
    for layer in layers:
        attention = getattr(layer, "self_attn", None) or getattr(layer, "attn", None)
        window = getattr(attention, "sliding_window", None)
        windows.append(window if isinstance(window, int) and window > 0 else None)
    return windows


def layer_views(model: Any, cache: Any) -> list[LayerView] | None:
    """Each layer's view of the cached prefix, or None where this module does not know the
    layers well enough to mask them (see the module docstring)."""
    windows = _attention_windows(model)
    if windows is None:
        return None
    if cache is None:
        return [LayerView(0, window) for window in windows]
    layers = getattr(cache, "layers", None)
    if layers is None or len(layers) != len(windows):
        return None
    views = []
    for layer, window in zip(layers, windows, strict=True):
        keys = getattr(layer, "keys", None)
        sliding = getattr(layer, "sliding_window", None) if getattr(layer, "is_sliding",
                                                                    False) else None
        if not isinstance(keys, torch.Tensor) or sliding != window:
            return None
        views.append(LayerView(int(keys.shape[-2]), window))
    return views


def _tree_mask(segments: torch.Tensor, positions: torch.Tensor, cached: int,
               view: LayerView, dtype: torch.dtype) -> torch.Tensor:
    """The additive mask [batch, 1, width, kept + width] of one kind of layer, from each
    token's segment (-1: padding) and position after the cached prefix."""
    n, width = segments.shape
    real = segments >= 0
    query, key = segments[:, :, None], segments[:, None, :]
    order = torch.arange(width)
    tree = real[:, None, :] & (order[None, None, :] <= order[None, :, None]) & (
        (key == 0) | (key == query))
    tree |= ~real[:, :, None] & (order[None, None, :] == order[None, :, None])
    before = real[:, :, None].expand(n, width, view.kept).clone()
    if view.window is not None:  # distances in positions of the full prompt
        at = positions[:, :, None] + cached
        kept_at = torch.arange(cached - view.kept, cached)[None, None, :]
        before &= (at - kept_at) < view.window
        tree &= (positions[:, :, None] - positions[:, None, :]) < view.window
    allowed = torch.cat([before, tree], dim=-1)[:, None]
    mask = torch.zeros(allowed.shape, dtype=dtype)
    mask.masked_fill_(~allowed, torch.finfo(dtype).min)
    return mask


def mask_kinds(model: Any, views: list[LayerView]) -> dict[str, LayerView] | None:
    """One view for every layer (one mask), or one per layer type (a mask per type, where
    the config names the types); None when the layers' views fit neither."""
    if all(view == views[0] for view in views):
        return {"all": views[0]}
    types = getattr(model.config, "layer_types", None)
    if types is None or len(types) != len(views):
        return None
    kinds: dict[str, LayerView] = {}
    for kind, view in zip(types, views, strict=True):
        if kinds.setdefault(kind, view) != view:
            return None
    return kinds


def forward_inputs(model: Any, batch: Sequence[Packed], cached: int,
                   kinds: dict[str, LayerView], pad: int) -> dict[str, Any]:
    """input_ids (right-padded with ``pad``), position_ids and attention_mask
    (:func:`mask_kinds`'s) of a batch of packed rows after a prefix of ``cached`` tokens."""
    parameter = next(model.parameters())
    width = max(len(packed.ids) for packed in batch)
    ids = torch.full((len(batch), width), pad, dtype=torch.long)
    segments = torch.full((len(batch), width), -1, dtype=torch.long)
    positions = torch.arange(width).repeat(len(batch), 1)  # padding: anywhere, unseen
    for b, packed in enumerate(batch):
        n = len(packed.ids)
        ids[b, :n] = torch.tensor(packed.ids)
        segments[b, :n] = torch.tensor(packed.segments)
        positions[b, :n] = torch.tensor(packed.positions)
    kind_of_device = parameter.device.type
    dtype = torch.get_autocast_dtype(kind_of_device) if torch.is_autocast_enabled(
        kind_of_device) else parameter.dtype  # the dtype the attention scores are added in
    masks = {kind: _tree_mask(segments, positions, cached, view, dtype)
             .to(parameter.device) for kind, view in kinds.items()}
    return {"input_ids": ids.to(parameter.device),
            "position_ids": (positions + cached).to(parameter.device),
            "attention_mask": masks.get("all", masks)}
