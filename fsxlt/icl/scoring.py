"""Scoring a causal LM's options by log-likelihood: rank classification and multiple choice.

Each option (a label word, or a multiple-choice candidate) is scored by the
summed log-probability of its tokens after the prompt (optionally divided by
its number of tokens, or of its characters as lm-eval's ``acc_norm`` divides),
and the best-scoring option is the prediction. Label words that tokenize to
different numbers of tokens are reported (:func:`label_tokens`): summed
log-likelihoods favour the shorter word, whatever the input.
Contextual calibration (Zhao et al., 2021) divides each option's probability
by its probability after a content-free input (``N/A``) with the same prefix.

*The fast path.* A bucket's demonstrations are one prefix shared by every
test example: its key/value cache is computed once (all of it but its last
token) and copied over each batch of rows. An example's *stem* is the
prefix's last token, its query and the tokens its options begin with alike
(lm-eval's preset repeats the whole sentence pair in every option): the stem
scores every option's tokens up to and including its first own token, so one
row serves every single-token option. An option with more tokens of its own
adds a *suffix* row (the rest of its tokens) that continues the stem. Where
the model's layers allow (:mod:`fsxlt.icl.packed`), a stem and its suffixes
are one packed row under a tree-shaped attention mask, many examples per
forward pass; elsewhere the stem runs alone, keeping its cache, and its
suffixes in a batch over copies of that cache. The shared tokens are computed
once per example, not once per option, and the prefix once per bucket. Rows
are right-padded, so no real token ever attends to padding and the positions
of every scored token are those of the full prompt: the cached scores equal
scoring each full prompt on its own (the naive path, kept for the benchmark
and the tests) up to floating-point noise. Only the logits of the positions
scored are computed (``logits_to_keep``).
"""

from __future__ import annotations

import copy
import math
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import torch

from fsxlt.errors import FsxltError
from fsxlt.icl.packed import Packed, forward_inputs, layer_views, mask_kinds, pack
from fsxlt.tasks.prompts import PromptText

CONTENT_FREE = "N/A"


@dataclass(frozen=True)
class TokenizedPrompt:
    """A prompt's pieces as token ids (see :class:`~fsxlt.tasks.prompts.PromptText`)."""

    prefix: list[int]
    queries: list[list[int]]
    continuations: list[list[list[int]]]
    chars: list[list[int]] = field(default_factory=list)  # per option: option_chars


def option_chars(option: str) -> int:
    """An option's length in characters, not counting the whitespace that joins it to the
    prompt: a task YAML's option is a joining space and a stripped label word. A preset
    gives its own lengths instead (:attr:`fsxlt.tasks.prompts.PromptText.chars`: lm-eval's
    ``len(choice)``, which counts whitespace the choice itself starts with)."""
    return len(option.lstrip())


def tokenize_prompt(tokenizer: Any, text: PromptText, bucket: str, *,
                    check: bool = True) -> TokenizedPrompt:
    """Tokenize each piece on its own; the prefix starts with the model's BOS token (if it
    has one). An option that tokenizes to nothing is a one-line error (``check``: options
    are ranked; a generated output's gold is not an option)."""
    seen: dict[str, list[int]] = {}

    def ids(piece: str) -> list[int]:
        if piece not in seen:
            seen[piece] = list(tokenizer(piece, add_special_tokens=False)["input_ids"])
        return seen[piece]

    bos = [tokenizer.bos_token_id] if tokenizer.bos_token_id is not None else []
    continuations = []
    for options in text.continuations:
        tokenized = [ids(option) for option in options]
        if check:
            check_options(options, tokenized, getattr(tokenizer, "unk_token_id", None), bucket)
        continuations.append(tokenized)
    chars = text.chars if text.chars is not None else [
        [option_chars(option) for option in options] for options in text.continuations]
    return TokenizedPrompt(bos + ids(text.prefix), [ids(q) for q in text.queries],
                           continuations, [list(row) for row in chars])


def check_options(options: Sequence[str], tokenized: Sequence[list[int]], unk: int | None,
                  bucket: str) -> None:
    """Refuse, in one line naming the words, options the model cannot tell apart: one that
    tokenizes to nothing or holds the unknown token, or two that tokenize the same (``yes``
    and ``Yes`` under a lowercasing tokenizer); their scores would decide nothing."""
    for option, got in zip(options, tokenized, strict=True):
        if not got:
            raise FsxltError(f"{bucket}: the option {option.strip()!r} tokenizes to nothing "
                             "with this model's tokenizer")
        if unk is not None and unk in got:
            raise FsxltError(f"{bucket}: the option {option.strip()!r} tokenizes to the "
                             "unknown token with this model's tokenizer; pick label words "
                             "its vocabulary has")
    seen: dict[tuple[int, ...], int] = {}
    for index, (option, got) in enumerate(zip(options, tokenized, strict=True)):
        first = seen.setdefault(tuple(got), index)  # by position: equal strings clash too
        if first != index:
            other = options[first]
            same = "are the same text" if other == option else "tokenize the same"
            raise FsxltError(f"{bucket}: the options {other.strip()!r} and {option.strip()!r} "
                             f"{same} ({list(got)}) with this model's tokenizer, so no "
                             "score can tell their labels apart; give them other words")


def context_size(model: Any) -> int | None:
    """The longest input the model's positions allow (None when its config does not say)."""
    config = model.config.get_text_config() if hasattr(model.config, "get_text_config") \
        else model.config
    for key in ("max_position_embeddings", "n_positions", "n_ctx"):
        value = getattr(config, key, None)
        if isinstance(value, int) and value > 0:
            return value
    return None


# --------------------------------------------------------------------------- rows

@dataclass
class Row:
    """Token ids after the cached prefix (after its ``parent`` row too, a suffix's stem),
    and the (position, token) pairs scored in them (positions counted in this row)."""

    ids: list[int]
    wanted: list[tuple[int, int]]
    parent: int | None = None


Segment = tuple[int, list[tuple[int, int]]]  # (row, [(position, token), ...])


@dataclass(frozen=True)
class RowPlan:
    """The rows of a prompt and where each option's tokens are scored: per example, per
    option, the segments (a row and the spots in it) that hold its tokens."""

    cached: list[int]        # the prefix but its last token (the cache)
    rows: list[Row]
    options: list[list[list[Segment]]]


def common_start(sequences: Sequence[Sequence[int]]) -> list[int]:
    """The longest run of tokens every sequence starts with."""
    if not sequences:
        return []
    first = list(sequences[0])
    for other in sequences[1:]:
        n = 0
        while n < min(len(first), len(other)) and first[n] == other[n]:
            n += 1
        first = first[:n]
    return first


def _add_spots(row: Row, spots: list[tuple[int, int]]) -> None:
    row.wanted.extend(spot for spot in spots if spot not in row.wanted)


def _example_rows(lead: list[int], query: list[int], conts: list[list[int]],
                  rows: list[Row]) -> list[list[Segment]]:
    """Append an example's stem and suffix rows (see the module docstring); its options'
    segments."""
    shared = common_start([cont[:-1] for cont in conts])
    stem = len(rows)
    rows.append(Row(lead + query + shared, []))
    start = len(lead) + len(query) - 1  # the position that predicts an option's first token
    suffixes: dict[tuple[int, ...], int] = {}
    segments = []
    for cont in conts:
        own = len(shared) + 1  # tokens the stem scores
        head = [(start + t, token) for t, token in enumerate(cont[:own])]
        _add_spots(rows[stem], head)
        found: list[Segment] = [(stem, head)]
        if len(cont) > own:
            ids = tuple(cont[len(shared):-1])
            if ids not in suffixes:
                suffixes[ids] = len(rows)
                rows.append(Row(list(ids), [], stem))
            tail = list(enumerate(cont[own:]))
            _add_spots(rows[suffixes[ids]], tail)
            found.append((suffixes[ids], tail))
        segments.append(found)
    return segments


def plan_rows(prompt: TokenizedPrompt, bucket: str) -> RowPlan:
    """The rows that score every option of every example (see the module docstring)."""
    lead, cached = prompt.prefix[-1:], prompt.prefix[:-1]
    rows: list[Row] = []
    options = []
    for query, conts in zip(prompt.queries, prompt.continuations, strict=True):
        if not lead and not query:
            raise FsxltError(f"{bucket}: an empty prompt (no instruction, no shots, no query "
                             "text and no BOS token) gives the model nothing to predict from")
        options.append(_example_rows(lead, query, conts, rows))
    return RowPlan(cached, rows, options)


def row_length(plan: RowPlan, index: int) -> int:
    """The tokens of a row's full prompt: the prefix, its stem (for a suffix) and itself."""
    row = plan.rows[index]
    stem = len(plan.rows[row.parent].ids) if row.parent is not None else 0
    return len(plan.cached) + stem + len(row.ids)


def check_length(plan: RowPlan, model: Any, bucket: str) -> int:
    """The longest full prompt in tokens; longer than the model's context: one line."""
    longest = max(row_length(plan, i) for i in range(len(plan.rows)))
    limit = context_size(model)
    if limit is not None and longest > limit:
        raise FsxltError(f"{bucket}: a prompt of {longest} tokens is longer than the model's "
                         f"context of {limit} tokens (fewer shots, a shorter template, or a "
                         "model with a longer context)")
    return longest


# --------------------------------------------------------------------------- forward passes

def _pad_id(model: Any) -> int:
    pad = getattr(model.config, "pad_token_id", None)
    return int(pad) if isinstance(pad, int) else 0


@contextmanager
def _only_scored_logits(model: Any, rows: torch.Tensor,
                        positions: torch.Tensor) -> Iterator[list[bool]]:
    """While active, the model's output layer sees only the hidden states of the scored
    (row, position) spots, as one sequence: the logits of a spot are computed once and
    the vocabulary-sized matrix of every other position never is. Whatever the model does
    after its output layer (Gemma's logit soft-capping) still applies. Yields a list that
    says whether the output layer ran through the hook (a model whose forward bypasses it
    returns every position's logits)."""
    head = model.get_output_embeddings()
    fired: list[bool] = []

    def select(_module: Any, args: tuple) -> tuple:
        fired.append(True)
        return (args[0][rows, positions].unsqueeze(0), *args[1:])

    handle = head.register_forward_pre_hook(select) if head is not None else None
    try:
        yield fired
    finally:
        if handle is not None:
            handle.remove()


def _logprobs_at(model: Any, places: Sequence[tuple[int, int]],
                 **forward: Any) -> tuple[torch.Tensor, Any]:
    """The log-softmax at each (row, position) of ``places`` (a row per place, in order),
    the output layer run at those places only; and the forward's output."""
    device = next(model.parameters()).device
    row_index = torch.tensor([b for b, _ in places], device=device)
    position = torch.tensor([at for _, at in places], device=device)
    with _only_scored_logits(model, row_index, position) as fired:
        out = model(logits_to_keep=0, **forward)
    logits = out.logits if fired else out.logits[row_index, position].unsqueeze(0)
    return torch.log_softmax(logits[0].float(), dim=-1), out


def _spot_logprobs(model: Any, ids: torch.Tensor, rows: Sequence[Row], offset: int,
                   keep: bool = False, **forward: Any) -> tuple[list[dict], Any]:
    """Per row: {(position, token): log-probability}; ``offset``: tokens of ``ids`` before
    a row's position 0 (the prefix, when it is not cached). With ``keep``, also the
    forward's cache (else None)."""
    spots = sorted({(b, pos) for b, row in enumerate(rows) for pos, _ in row.wanted})
    where = {spot: i for i, spot in enumerate(spots)}
    logprobs, out = _logprobs_at(model, [(b, offset + pos) for b, pos in spots],
                                 input_ids=ids, **forward)
    found = [{(pos, tok): float(logprobs[where[(b, pos)], tok]) for pos, tok in row.wanted}
             for b, row in enumerate(rows)]
    return found, (getattr(out, _cache_arg(model)) if keep else None)


def _cache_arg(model: Any) -> str:
    """How the model's forward takes and returns its key/value cache: ``cache`` in
    transformers >= 5.2x (``past_key_values`` deprecated there), ``past_key_values`` before."""
    import inspect

    return "cache" if "cache" in inspect.signature(type(model).forward).parameters \
        else "past_key_values"


@torch.no_grad()
def _prefix_cache(model: Any, cached: list[int]) -> Any:
    """The key/value cache of the prefix (None for an empty one)."""
    if not cached:
        return None
    device = next(model.parameters()).device
    out = model(input_ids=torch.tensor([cached], device=device), use_cache=True,
                logits_to_keep=1)
    return getattr(out, _cache_arg(model))


def _copied(cache: Any, rows: int) -> Any:
    """A copy of ``cache`` for a batch of ``rows`` (a forward appends to its cache; the
    original stays as it was). None stays None."""
    if cache is None:
        return None
    past = copy.deepcopy(cache)
    past.batch_repeat_interleave(rows)
    return past


@torch.no_grad()
def _cached_batch(model: Any, cache: Any, rows: Sequence[Row], *,
                  keep: bool = False) -> tuple[list[dict], Any]:
    """Log-probabilities of a batch of rows after a copy of ``cache`` (None: nothing
    before them), expanded to the batch; and, with ``keep``, the cache after them."""
    device = next(model.parameters()).device
    width = max(len(row.ids) for row in rows)
    ids = torch.full((len(rows), width), _pad_id(model), dtype=torch.long, device=device)
    for b, row in enumerate(rows):
        ids[b, : len(row.ids)] = torch.tensor(row.ids, device=device)
    past, name = _copied(cache, len(rows)), _cache_arg(model)
    use_cache = keep or past is not None
    return _spot_logprobs(model, ids, rows, 0, keep, use_cache=use_cache, **{name: past})


@torch.no_grad()
def _naive_row(model: Any, before: list[int], row: Row) -> dict:
    """Log-probabilities of one row scored with its full prompt (``before`` it), no cache."""
    device = next(model.parameters()).device
    ids = torch.tensor([before + row.ids], device=device)
    return _spot_logprobs(model, ids, [row], len(before), use_cache=False)[0][0]


def _in_batches(model: Any, cache: Any, rows: list[Row], indices: list[int],
                batch_size: int, found: list[dict]) -> None:
    """Score ``rows[i]`` for every i of ``indices`` over ``cache``, shortest first."""
    order = sorted(indices, key=lambda i: len(rows[i].ids))
    for first in range(0, len(order), batch_size):
        chunk = order[first: first + batch_size]
        got, _ = _cached_batch(model, cache, [rows[i] for i in chunk])
        for i, spots in zip(chunk, got, strict=True):
            found[i] = spots


@torch.no_grad()
def _packed_batch(model: Any, cache: Any, batch: Sequence[Packed], cached: int,
                  kinds: dict, found: list[dict]) -> None:
    """Score a batch of packed rows (:mod:`fsxlt.icl.packed`) after a copy of ``cache``."""
    spots = [(b, at, row, pos, tok) for b, packed in enumerate(batch)
             for row, at, pos, tok in packed.spots]
    places = sorted({(b, at) for b, at, *_ in spots})
    where = {place: i for i, place in enumerate(places)}
    past = _copied(cache, len(batch))
    logprobs, _ = _logprobs_at(model, places, use_cache=past is not None,
                               **forward_inputs(model, batch, cached, kinds, _pad_id(model)),
                               **{_cache_arg(model): past})
    for b, at, row, pos, tok in spots:
        found[row][(pos, tok)] = float(logprobs[where[(b, at)], tok])


def row_logprobs(model: Any, plan: RowPlan, *, cached: bool = True, batch_size: int = 8,
                 packed: bool = True) -> list[dict]:
    """Every row's scored log-probabilities: the fast path (each example's stem and suffixes
    packed in one row where the model's layers allow, else a stem and then its suffixes),
    or each full prompt alone."""
    rows = plan.rows
    if not cached:
        return [_naive_row(model, plan.cached + (rows[row.parent].ids if row.parent is not None
                                                 else []), row) for row in rows]
    children: dict[int, list[int]] = {}
    for i, row in enumerate(rows):
        if row.parent is not None:
            children.setdefault(row.parent, []).append(i)
    cache = _prefix_cache(model, plan.cached)
    found: list[dict] = [{} for _ in rows]
    views = layer_views(model, cache) if packed else None
    kinds = mask_kinds(model, views) if views is not None else None
    if kinds is not None:
        packs = sorted((pack(rows, i, children.get(i, [])) for i, row in enumerate(rows)
                        if row.parent is None), key=lambda one: len(one.ids))
        for first in range(0, len(packs), batch_size):
            _packed_batch(model, cache, packs[first: first + batch_size], len(plan.cached),
                          kinds, found)
        return found
    alone = [i for i, row in enumerate(rows) if row.parent is None and i not in children]
    _in_batches(model, cache, rows, alone, batch_size, found)
    for stem, suffixes in children.items():
        got, stem_cache = _cached_batch(model, cache, [rows[stem]], keep=True)
        found[stem] = got[0]
        _in_batches(model, stem_cache, rows, suffixes, batch_size, found)
    return found


@dataclass(frozen=True)
class OptionScores:
    """Per example, per option: summed log-likelihood, number of tokens and of characters
    (:func:`option_chars`; None where not known)."""

    loglik: list[list[float]]
    n_tokens: list[list[int]]
    n_chars: list[list[int]] | None = None


def option_scores(model: Any, prompt: TokenizedPrompt, bucket: str, *, cached: bool = True,
                  batch_size: int = 8, packed: bool = True) -> OptionScores:
    """The log-likelihood of every option of every example after the prompt."""
    if batch_size < 1:
        raise FsxltError(f"the batch size must be at least 1, got {batch_size}")
    plan = plan_rows(prompt, bucket)
    check_length(plan, model, bucket)
    found = row_logprobs(model, plan, cached=cached, batch_size=batch_size, packed=packed)
    loglik = [[sum(found[row][w] for row, wanted in segments for w in wanted)
               for segments in example] for example in plan.options]
    n_tokens = [[sum(len(wanted) for _, wanted in segments) for segments in example]
                for example in plan.options]
    return OptionScores(loglik, n_tokens, [list(c) for c in prompt.chars] or None)


def label_tokens(continuations: Sequence[Sequence[list[int]]],
                 labels: Sequence[str]) -> dict[str, Any]:
    """How many tokens each label's option is scored over (``label_word_tokens``: the first
    example's; a label word has the same in every example) and whether the options of some
    example differ in number (``unequal_label_tokens``): summed log-likelihoods then
    favour the shorter option whatever the input. Empty for no examples."""
    counts = [[len(option) for option in options] for options in continuations]
    if not counts:
        return {}
    return {"label_word_tokens": dict(zip(labels, counts[0], strict=True)),
            "unequal_label_tokens": any(len(set(row)) > 1 for row in counts)}


def unequal_tokens_warning(where: str, block: dict[str, Any]) -> str | None:
    """The one-line warning of a run whose options differ in number of tokens (None when
    they do not; ``block``: :func:`label_tokens`'s)."""
    if not block.get("unequal_label_tokens"):
        return None
    counts = ", ".join(f"{label} {n}" for label, n in block["label_word_tokens"].items())
    return (f"warning: {where}: the label words tokenize to different numbers of tokens "
            f"({counts}); summed log-likelihoods favour the shorter ones whatever the input "
            "(words of one length avoid that; --normalize or --normalize-chars compare "
            "averages); the records say so")


# --------------------------------------------------------------------------- decisions

def _log_softmax(values: Sequence[float]) -> list[float]:
    top = max(values)
    total = top + math.log(sum(math.exp(v - top) for v in values))
    return [v - total for v in values]


def _lengths(scores: OptionScores, normalize: bool | str) -> list[list[int]]:
    """What ``normalize`` divides by: the tokens (True, ``token``) or the characters
    (``char``) of each option."""
    if normalize != "char":
        return scores.n_tokens
    if scores.n_chars is None:
        raise FsxltError("per-character normalisation needs the options' lengths in characters")
    return scores.n_chars


def decision_scores(scores: OptionScores, *, normalize: bool | str = False,
                    content_free: OptionScores | None = None) -> list[list[float]]:
    """What the prediction maximises, per example and option.

    ``normalize``: the log-likelihood per token (True or ``token``) or per character
    (``char``: lm-eval's ``acc_norm``, :func:`option_chars`). ``content_free``: contextual
    calibration, one row per example (the content-free input's scores after that
    example's prefix): ``log p(option | x) - log p(option | N/A)`` with both
    distributions renormalised over the options (so a division of probabilities,
    as Zhao et al.'s diagonal W).
    """
    def per_option(loglik: list[float], lengths: list[int]) -> list[float]:
        return [v / max(n, 1) for v, n in zip(loglik, lengths, strict=True)] if normalize \
            else loglik

    rows = [per_option(ll, n) for ll, n in zip(scores.loglik, _lengths(scores, normalize),
                                                strict=True)]
    if content_free is None:
        return rows
    bases = [_log_softmax(per_option(ll, n)) for ll, n in zip(
        content_free.loglik, _lengths(content_free, normalize), strict=True)]
    return [[p - b for p, b in zip(_log_softmax(row), base, strict=True)]
            for row, base in zip(rows, bases, strict=True)]


def predictions(decisions: Sequence[Sequence[float]], labels: Sequence[str]) -> list[str]:
    """The label of the best-scoring option of each example (the first on ties)."""
    return [labels[max(range(len(row)), key=row.__getitem__)] for row in decisions]
