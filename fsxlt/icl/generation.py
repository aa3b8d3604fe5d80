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
each batch. A batch holds queries of one length only, so that no row is ever
padded: every token sits at the position it has in the full prompt and
attends to exactly the tokens it attends to there, and the cached path
generates what generating from each full prompt alone (the *naive* path,
kept for the benchmark and the tests) generates, token for token (up to a
floating-point near-tie between two tokens). What decides a generation
(budget, stop strings) is in :class:`DecodeSettings`, which records carry in
their identity.
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


@dataclass(frozen=True)
class DecodeSettings:
    """Greedy decoding: at most ``max_new_tokens`` tokens, cut at the first ``stop``."""

    max_new_tokens: int = 32
    stop: tuple[str, ...] = DEFAULT_STOP

    def check(self) -> None:
        if self.max_new_tokens < 1:
            raise FsxltError(f"the token budget must be at least 1, got {self.max_new_tokens}")
        if any(not text for text in self.stop):
            raise FsxltError("a stop string cannot be empty")

    def describe(self) -> dict[str, Any]:
        return {"decoding": "greedy", "max_new_tokens": self.max_new_tokens,
                "stop": list(self.stop)}


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


def _step(model: Any, ids: torch.Tensor, past: Any) -> tuple[torch.Tensor, Any]:
    """The next token of every row (greedy) and the cache after ``ids``."""
    name = _cache_arg(model)
    out = model(input_ids=ids, use_cache=True, logits_to_keep=1, **{name: past})
    return out.logits[:, -1].float().argmax(dim=-1), getattr(out, name)


@torch.no_grad()
def _cached_batch(model: Any, cache: Any, rows: Sequence[list[int]],
                  states: Sequence[_Continuation]) -> None:
    """Generate for rows of one length after a copy of the prefix cache."""
    device = next(model.parameters()).device
    past = None
    if cache is not None:
        past = copy.deepcopy(cache)  # generating appends to the cache; the prefix's stays
        past.batch_repeat_interleave(len(rows))
    token, past = _step(model, torch.tensor(rows, device=device), past)
    while True:
        for state, value in zip(states, token.tolist(), strict=True):
            state.add(int(value))
        if all(state.done for state in states):
            return
        token, past = _step(model, token[:, None], past)


@torch.no_grad()
def _naive(model: Any, ids: list[int], state: _Continuation) -> None:
    """Generate for one full prompt, recomputing it whole at every step (no cache)."""
    device = next(model.parameters()).device
    while not state.done:
        logits = model(input_ids=torch.tensor([ids + state.tokens], device=device),
                       use_cache=False).logits
        state.add(int(logits[0, -1].float().argmax()))


def generate(model: Any, tokenizer: Any, prefix: list[int], queries: Sequence[list[int]],
             settings: DecodeSettings, *, cached: bool = True, batch_size: int = 8,
             what: str = "generation") -> list[str]:
    """The greedy continuation of ``prefix + query`` for each query, cut at the first stop
    string (see the module docstring); ``prefix`` starts with the BOS token if the model
    has one. ``what`` names the run in errors."""
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
    by_length: dict[int, list[int]] = {}
    for i, query in enumerate(queries):
        by_length.setdefault(len(query), []).append(i)
    for length in sorted(by_length):
        members = by_length[length]
        for first in range(0, len(members), batch_size):
            chunk = members[first: first + batch_size]
            _cached_batch(model, cache, [lead + list(queries[i]) for i in chunk],
                          [states[i] for i in chunk])
    return [state.text() for state in states]
