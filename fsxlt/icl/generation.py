"""Greedy generation by a causal LM after a shared prompt prefix: ICL by generation.

A generation task's prompt is the bucket's demonstrations (the *prefix*, one
per bucket) and, per test example, its *query* (the template up to
``{label}``); the model continues each query greedily (the most likely token
at every step, the lowest token id on ties) until it emits an end-of-sequence
token, the generated text holds a stop string (by default the end of the
template's line, ``"\\n"``), or the token budget is spent. The text returned is
what came before the first stop string, stripped.

*The fast path.* As in :mod:`fsxlt.icl.scoring`, the prefix's key/value cache
(all of it but its last token) is computed once per prompt and copied for
each batch, its keys and values repeated once per row. The queries after it
are sorted by length and cut into batches of ``batch_size``, batched in one of
two ways:

- *padded*: each row left-padded to its batch's longest; an explicit attention
  mask hides the padding from every later token and explicit position ids give
  each token the position it has in its own full prompt, so a padded row
  computes what it computes alone. Batches are full whatever the queries'
  lengths (on real sentences almost no two have one length).
- *one length*: a batch holds queries of one token length only, so nothing is
  padded and no mask is needed; on real sentences that is a batch of about one.

A model with sliding-window attention (Gemma 3: 512 tokens) counts its window
in cache slots, padding included, and its cache keeps only the window: a
padded row of a prompt longer than the window would see fewer real tokens
than it sees alone. So ``DecodeSettings.batching`` ``auto`` (the default) pads
a batch only where that cannot happen (no sliding window, or the batch's
prefix, longest query and token budget all fit in it), else batches by one
length; ``padded`` always pads (on such a model, past its window, not the
exact computation); ``one-length`` never does. Both paths generate what
generating from each full prompt alone (the *naive* path, kept for the
benchmark and the tests) generates, token for token, up to a floating-point
near-tie between two tokens: a padded batch runs its matrix products over
other shapes, so its logits may differ from the unpadded ones in the last bits
(``scripts/bench_generation.py`` compares the paths and reports any output
that differs). What decides a generation (budget, stop strings, batching) is
in :class:`DecodeSettings`, which records carry in their identity.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch

from fsxlt.errors import FsxltError
from fsxlt.icl.scoring import _cache_arg, _prefix_cache, context_size

DEFAULT_STOP = ("\n",)
BATCHING = ("auto", "padded", "one-length")  # how queries share a batch (module docstring)


@dataclass(frozen=True)
class DecodeSettings:
    """Greedy decoding: at most ``max_new_tokens`` tokens, cut at the first ``stop``, the
    queries batched as ``batching`` says."""

    max_new_tokens: int = 32
    stop: tuple[str, ...] = DEFAULT_STOP
    batching: str = BATCHING[0]   # auto: padded batches where exact, else one length

    def check(self) -> None:
        if self.max_new_tokens < 1:
            raise FsxltError(f"the token budget must be at least 1, got {self.max_new_tokens}")
        if any(not text for text in self.stop):
            raise FsxltError("a stop string cannot be empty")
        if self.batching not in BATCHING:
            raise FsxltError(f"generation batching is one of {', '.join(BATCHING)}, not "
                             f"{self.batching!r}")

    def describe(self) -> dict[str, Any]:
        return {"decoding": "greedy", "max_new_tokens": self.max_new_tokens,
                "stop": list(self.stop), "batching": self.batching}


def end_ids(model: Any, tokenizer: Any) -> set[int]:
    """The token ids that end a generation: the tokenizer's EOS and the model's generation
    config's (Gemma's end-of-turn among them)."""
    found: set[int] = set()
    for value in (getattr(tokenizer, "eos_token_id", None),
                  getattr(getattr(model, "generation_config", None), "eos_token_id", None)):
        if isinstance(value, int):
            found.add(value)
        elif isinstance(value, (list, tuple)):
            found.update(int(v) for v in value)
    return found


def cut(text: str, stop: Sequence[str]) -> str:
    """``text`` before its first stop string, stripped."""
    end = min((text.find(s) for s in stop if s in text), default=len(text))
    return text[:end].strip()


class _Continuation:
    """One query's generated tokens, and whether it has ended."""

    def __init__(self, tokenizer: Any, settings: DecodeSettings, ends: set[int]) -> None:
        self.tokenizer, self.settings, self.ends = tokenizer, settings, ends
        self.tokens: list[int] = []
        self.done = False

    def add(self, token: int) -> None:
        if self.done:
            return
        if token in self.ends:
            self.done = True
            return
        self.tokens.append(token)
        text = self.text_so_far()
        self.done = (any(s in text for s in self.settings.stop)
                     or len(self.tokens) >= self.settings.max_new_tokens)

    def text_so_far(self) -> str:
        return self.tokenizer.decode(self.tokens, skip_special_tokens=True)

    def text(self) -> str:
        return cut(self.text_so_far(), self.settings.stop)


def check_room(model: Any, prefix: Sequence[int], queries: Sequence[Sequence[int]],
               settings: DecodeSettings, what: str) -> int:
    """The longest prompt plus the budget, in tokens; over the model's context: one line."""
    longest = len(prefix) + max((len(q) for q in queries), default=0) + settings.max_new_tokens
    limit = context_size(model)
    if limit is not None and longest > limit:
        raise FsxltError(f"{what}: a prompt and its {settings.max_new_tokens}-token budget "
                         f"need {longest} tokens, more than the model's context of {limit} "
                         "(fewer shots, a smaller budget, or a model with a longer context)")
    return longest


def _step(model: Any, ids: torch.Tensor, past: Any, **extra: Any) -> tuple[torch.Tensor, Any]:
    """The next token of every row (greedy) and the cache after ``ids``."""
    name = _cache_arg(model)
    out = model(input_ids=ids, use_cache=True, logits_to_keep=1, **{name: past}, **extra)
    return out.logits[:, -1].float().argmax(dim=-1), getattr(out, name)


def _rows_cache(cache: Any, rows: int) -> Any:
    """A copy of the prefix cache with its keys and values repeated once per row (None for
    no prefix); generating appends to it, the prefix's own stays."""
    if cache is None:
        return None
    past = copy.deepcopy(cache)
    past.batch_repeat_interleave(rows)
    return past


def _feed(states: Sequence[_Continuation], token: torch.Tensor) -> bool:
    """Give each row its next token; True when every row has ended."""
    for state, value in zip(states, token.tolist(), strict=True):
        state.add(int(value))
    return all(state.done for state in states)


@torch.no_grad()
def _cached_batch(model: Any, cache: Any, rows: Sequence[list[int]],
                  states: Sequence[_Continuation]) -> None:
    """Generate for rows of one length after a copy of the prefix cache."""
    device = next(model.parameters()).device
    token, past = _step(model, torch.tensor(rows, device=device), _rows_cache(cache, len(rows)))
    while not _feed(states, token):
        token, past = _step(model, token[:, None], past)


@torch.no_grad()
def _padded_batch(model: Any, cache: Any, cached: int, rows: Sequence[list[int]],
                  states: Sequence[_Continuation], pad_id: int) -> None:
    """Generate for rows of any lengths after a copy of the prefix cache (``cached``
    tokens): rows left-padded, the padding masked, every token at its own position."""
    device = next(model.parameters()).device
    width = max(len(row) for row in rows)
    ids = torch.full((len(rows), width), pad_id, dtype=torch.long, device=device)
    real = torch.zeros((len(rows), width), dtype=torch.long, device=device)
    for b, row in enumerate(rows):
        ids[b, width - len(row):] = torch.tensor(row, device=device)
        real[b, width - len(row):] = 1
    mask = torch.cat([torch.ones((len(rows), cached), dtype=torch.long, device=device), real],
                     dim=1)
    positions = cached + (real.cumsum(dim=1) - 1).clamp(min=0)
    token, past = _step(model, ids, _rows_cache(cache, len(rows)), attention_mask=mask,
                        position_ids=positions)
    position = positions[:, -1:]
    one = torch.ones((len(rows), 1), dtype=torch.long, device=device)
    while not _feed(states, token):
        mask, position = torch.cat([mask, one], dim=1), position + 1
        token, past = _step(model, token[:, None], past, attention_mask=mask,
                            position_ids=position)


@torch.no_grad()
def _naive(model: Any, ids: list[int], state: _Continuation) -> None:
    """Generate for one full prompt, recomputing it whole at every step (no cache)."""
    device = next(model.parameters()).device
    while not state.done:
        logits = model(input_ids=torch.tensor([ids + state.tokens], device=device),
                       use_cache=False).logits
        state.add(int(logits[0, -1].float().argmax()))


def _batches(queries: Sequence[list[int]], batch_size: int, one_length: bool,
             ) -> list[list[int]]:
    """Query indices by batch: sorted by length (shortest first, then in order), cut into
    batches of ``batch_size``; ``one_length``: never two lengths in one batch."""
    order = sorted(range(len(queries)), key=lambda i: (len(queries[i]), i))
    batches: list[list[int]] = []
    for i in order:
        last = batches[-1] if batches else None
        if last is None or len(last) == batch_size or \
                one_length and len(queries[last[0]]) != len(queries[i]):
            batches.append([i])
        else:
            last.append(i)
    return batches


def _pad_id(tokenizer: Any) -> int:
    """The id padded rows carry (masked, so any id does): the tokenizer's pad, else EOS."""
    for value in (getattr(tokenizer, "pad_token_id", None),
                  getattr(tokenizer, "eos_token_id", None)):
        if isinstance(value, int):
            return value
    return 0


def generate(model: Any, tokenizer: Any, prefix: list[int], queries: Sequence[list[int]],
             settings: DecodeSettings, *, cached: bool = True, batch_size: int = 8,
             what: str = "generation") -> list[str]:
    """The greedy continuation of ``prefix + query`` for each query, cut at the first stop
    string (see the module docstring); ``prefix`` starts with the BOS token if the model
    has one. ``cached=False``: the naive path (no cache, one prompt at a time). ``what``
    names the run in errors."""
    settings.check()
    if batch_size < 1:
        raise FsxltError(f"the batch size must be at least 1, got {batch_size}")
    if not prefix and any(not q for q in queries):
        raise FsxltError(f"{what}: an empty prompt gives the model nothing to continue")
    check_room(model, prefix, queries, settings, what)
    ends = end_ids(model, tokenizer)
    states = [_Continuation(tokenizer, settings, ends) for _ in queries]
    if not cached:
        for query, state in zip(queries, states, strict=True):
            _naive(model, prefix + list(query), state)
        return [state.text() for state in states]
    lead, kept = prefix[-1:], prefix[:-1]
    cache = _prefix_cache(model, kept)
    for batch in _batches(queries, batch_size, _one_length(model, prefix, queries, settings)):
        rows = [lead + list(queries[i]) for i in batch]
        members = [states[i] for i in batch]
        if len({len(row) for row in rows}) == 1:
            _cached_batch(model, cache, rows, members)
        else:
            _padded_batch(model, cache, len(kept), rows, members, _pad_id(tokenizer))
    return [state.text() for state in states]


def _one_length(model: Any, prefix: Sequence[int], queries: Sequence[Sequence[int]],
                settings: DecodeSettings) -> bool:
    """Whether to batch by one length: asked for, or (``auto``) a sliding window that the
    longest prompt and its budget do not fit in (padding would push real tokens out)."""
    if settings.batching != "auto":
        return settings.batching == "one-length"
    window = sliding_window(model)
    longest = len(prefix) + max((len(q) for q in queries), default=0) + settings.max_new_tokens
    return window is not None and longest > window


def sliding_window(model: Any) -> int | None:
    """The model's sliding attention window in tokens, None when it attends to everything
    (no window, or no layer of its config uses it)."""
    config = model.config.get_text_config() if hasattr(model.config, "get_text_config") \
        else model.config
    window = getattr(config, "sliding_window", None)
    kinds = getattr(config, "layer_types", None)
    if not isinstance(window, int) or window <= 0 or \
            kinds is not None and "sliding_attention" not in kinds:
        return None
    return window
