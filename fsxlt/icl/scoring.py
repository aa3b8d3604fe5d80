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
token) and copied over each batch of rows. A row is the prefix's last token,
an example's query and the first tokens of one of its options: one row serves
every single-token option of an example at once, and a multi-token option
needs a row of its own (the query then appears once per such option). Rows
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
    """Token ids after the cached prefix, and the (position, token) pairs scored in them."""

    ids: list[int]
    wanted: list[tuple[int, int]]


@dataclass(frozen=True)
class RowPlan:
    """The rows of a prompt and where each option's tokens are scored: per example, per
    option, ``(row, [(position, token), ...])``."""

    cached: list[int]        # the prefix but its last token (the cache)
    rows: list[Row]
    options: list[list[tuple[int, list[tuple[int, int]]]]]


def plan_rows(prompt: TokenizedPrompt, bucket: str) -> RowPlan:
    """The rows that score every option of every example (see the module docstring)."""
    lead, cached = prompt.prefix[-1:], prompt.prefix[:-1]
    rows: list[Row] = []
    options = []
    for query, conts in zip(prompt.queries, prompt.continuations, strict=True):
        if not lead and not query:
            raise FsxltError(f"{bucket}: an empty prompt (no instruction, no shots, no query "
                             "text and no BOS token) gives the model nothing to predict from")
        keys: dict[tuple[int, ...], int] = {}
        spots = []
        for cont in conts:
            ids = tuple(lead + query + cont[:-1])
            if ids not in keys:
                keys[ids] = len(rows)
                rows.append(Row(list(ids), []))
            start = len(lead) + len(query) - 1
            wanted = [(start + t, token) for t, token in enumerate(cont)]
            rows[keys[ids]].wanted.extend(w for w in wanted if w not in rows[keys[ids]].wanted)
            spots.append((keys[ids], wanted))
        options.append(spots)
    return RowPlan(cached, rows, options)


def check_length(plan: RowPlan, model: Any, bucket: str) -> int:
    """The longest full prompt in tokens; longer than the model's context: one line."""
    longest = len(plan.cached) + max(len(row.ids) for row in plan.rows)
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


def _spot_logprobs(model: Any, ids: torch.Tensor, rows: Sequence[Row], offset: int,
                   **forward: Any) -> list[dict]:
    """Per row: {(position, token): log-probability}; ``offset``: tokens of ``ids`` before
    a row's position 0 (the prefix, when it is not cached)."""
    spots = sorted({(b, pos) for b, row in enumerate(rows) for pos, _ in row.wanted})
    where = {spot: i for i, spot in enumerate(spots)}
    device = ids.device
    row_index = torch.tensor([b for b, _ in spots], device=device)
    position = torch.tensor([offset + pos for _, pos in spots], device=device)
    with _only_scored_logits(model, row_index, position) as fired:
        logits = model(input_ids=ids, logits_to_keep=0, **forward).logits
    if not fired:
        logits = logits[row_index, position].unsqueeze(0)
    logprobs = torch.log_softmax(logits[0].float(), dim=-1)
    return [{(pos, tok): float(logprobs[where[(b, pos)], tok]) for pos, tok in row.wanted}
            for b, row in enumerate(rows)]


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


@torch.no_grad()
def _cached_batch(model: Any, cache: Any, rows: Sequence[Row]) -> list[dict]:
    """Log-probabilities of a batch of rows after a copy of the prefix cache, expanded."""
    device = next(model.parameters()).device
    width = max(len(row.ids) for row in rows)
    ids = torch.full((len(rows), width), _pad_id(model), dtype=torch.long, device=device)
    for b, row in enumerate(rows):
        ids[b, : len(row.ids)] = torch.tensor(row.ids, device=device)
    past = None
    if cache is not None:
        past = copy.deepcopy(cache)  # a forward appends to its cache; the prefix's stays
        past.batch_repeat_interleave(len(rows))
    return _spot_logprobs(model, ids, rows, 0, use_cache=past is not None,
                          **{_cache_arg(model): past})


@torch.no_grad()
def _naive_row(model: Any, cached: list[int], row: Row) -> dict:
    """Log-probabilities of one row scored with its full prompt, no cache."""
    device = next(model.parameters()).device
    ids = torch.tensor([cached + row.ids], device=device)
    return _spot_logprobs(model, ids, [row], len(cached), use_cache=False)[0]


def row_logprobs(model: Any, plan: RowPlan, *, cached: bool = True,
                 batch_size: int = 8) -> list[dict]:
    """Every row's scored log-probabilities: the fast path, or each full prompt alone."""
    if not cached:
        return [_naive_row(model, plan.cached, row) for row in plan.rows]
    cache = _prefix_cache(model, plan.cached)
    order = sorted(range(len(plan.rows)), key=lambda i: len(plan.rows[i].ids))
    found: list[dict] = [{} for _ in plan.rows]
    for first in range(0, len(order), batch_size):
        chunk = order[first: first + batch_size]
        for i, got in zip(chunk, _cached_batch(model, cache, [plan.rows[i] for i in chunk]),
                          strict=True):
            found[i] = got
    return found


@dataclass(frozen=True)
class OptionScores:
    """Per example, per option: summed log-likelihood, number of tokens and of characters
    (:func:`option_chars`; None where not known)."""

    loglik: list[list[float]]
    n_tokens: list[list[int]]
    n_chars: list[list[int]] | None = None


def option_scores(model: Any, prompt: TokenizedPrompt, bucket: str, *, cached: bool = True,
                  batch_size: int = 8) -> OptionScores:
    """The log-likelihood of every option of every example after the prompt."""
    if batch_size < 1:
        raise FsxltError(f"the batch size must be at least 1, got {batch_size}")
    plan = plan_rows(prompt, bucket)
    check_length(plan, model, bucket)
    found = row_logprobs(model, plan, cached=cached, batch_size=batch_size)
    loglik = [[sum(found[row][w] for w in wanted) for row, wanted in spots]
              for spots in plan.options]
    n_tokens = [[len(wanted) for _, wanted in spots] for spots in plan.options]
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
