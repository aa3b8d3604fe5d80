"""Extractive QA on an encoder: windows over long contexts, training rows, span decoding.

**Windows.** A question and its context are one encoder input
(``[CLS] question [SEP] context [SEP]`` in BERT's layout; each tokenizer's
own special tokens). The question keeps its first :data:`MAX_QUESTION_TOKENS`
wordpieces. A context longer than what is left of ``max_seq_length`` (384 for
the QA tasks) is cut into windows as BERT's and XTREME's SQuAD code cuts it:
a window starts every :data:`DOC_STRIDE` (128) context wordpieces, each as long
as fits, and the last one reaches the end of the context. Each distinct
context is tokenized once (its questions share it), with the fast
tokenizer's character offsets, so an answer is cut from the original text.

**Training rows.** One row per window; its labels are the positions of the
first answer's first and last wordpiece. A window that does not hold the
whole answer points both at position 0 (the first token, ``[CLS]``), as BERT
for SQuAD does.

**Decoding.** Per window, the :data:`N_BEST` (20) best starts and ends among
the context's wordpieces are paired; a pair is valid when the end is not
before the start and the span has at most :data:`MAX_ANSWER_TOKENS` (30)
wordpieces; its score is start logit + end logit. The answer of a question
is the best valid span over all its windows, its text cut from the context
by character offsets (the empty string if no window has a valid span).
Tokens outside the context (the question, special tokens, padding) are
never candidates: they are masked before the n-best is taken. The pairing
runs on the accelerator for a whole batch of windows (:func:`best_spans`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch

from fsxlt.data import Example, QAExample
from fsxlt.errors import FsxltError

DOC_STRIDE = 128
MAX_QUESTION_TOKENS = 64
MAX_ANSWER_TOKENS = 30
N_BEST = 20


def pair_template(tokenizer: Any) -> tuple[list[tuple[int, int]], list[tuple[int, int]],
                                          list[tuple[int, int]], int, int]:
    """How the tokenizer lays out a (question, context) pair: the (id, token type) of each
    special token before, between and after the two texts, and each text's token type."""
    first, second = tokenizer("a", add_special_tokens=False)["input_ids"], \
        tokenizer("b", add_special_tokens=False)["input_ids"]
    enc = tokenizer("a", "b")
    ids = list(enc["input_ids"])
    types = list(enc.get("token_type_ids") or [0] * len(ids))
    at_a = next((i for i in range(len(ids)) if ids[i:i + len(first)] == first), None)
    at_b = next((i for i in range((at_a or 0) + len(first), len(ids))
                 if ids[i:i + len(second)] == second), None)
    if at_a is None or at_b is None:
        raise FsxltError("cannot locate the special tokens of this tokenizer's text pairs")
    pieces = list(zip(ids, types, strict=True))
    return (pieces[:at_a], pieces[at_a + len(first):at_b], pieces[at_b + len(second):],
            types[at_a], types[at_b])


def window_starts(n_tokens: int, room: int, stride: int = DOC_STRIDE) -> list[int]:
    """Where each window of a context of ``n_tokens`` wordpieces starts, ``room`` wordpieces
    each: every ``stride`` pieces until a window reaches the end (at least one window)."""
    starts, start = [0], 0
    while start + room < n_tokens:
        start += min(room, stride)
        starts.append(start)
    return starts


def answer_span(offsets: Sequence[tuple[int, int]], first: int, last_char: int,
                ) -> tuple[int, int] | None:
    """The (first, last) wordpiece of the characters ``first``..``last_char`` (exclusive) among
    a window's context ``offsets``, or None if the window does not hold them all."""
    if not offsets or first < 0 or first < offsets[0][0] or last_char > offsets[-1][1]:
        return None
    start = next((i for i, (_a, b) in enumerate(offsets) if b > first), None)
    end = next((i for i in range(len(offsets) - 1, -1, -1) if offsets[i][0] < last_char), None)
    if start is None or end is None or end < start:
        return None
    return start, end


class QAFeaturizer:
    """(question, context) windows of QA examples for one tokenizer and ``max_seq_length``."""

    def __init__(self, tokenizer: Any, max_len: int, uses_token_types: bool,
                 stride: int = DOC_STRIDE):
        self.tokenizer = tokenizer
        self.max_len = max_len
        self.stride = stride
        self.uses_token_types = uses_token_types
        prefix, middle, suffix, self.question_type, self.context_type = \
            pair_template(tokenizer)
        self.prefix, self.prefix_types = [i for i, _ in prefix], [t for _, t in prefix]
        self.middle, self.middle_types = [i for i, _ in middle], [t for _, t in middle]
        self.suffix, self.suffix_types = [i for i, _ in suffix], [t for _, t in suffix]

    def windows(self, examples: Sequence[Example]) -> list[tuple[int, dict[str, Any]]]:
        """Every window of every question: (question's position, the window's
        ``input_ids``, ``token_type_ids``, ``labels`` and ``offsets``)."""
        items = [ex for ex in examples if isinstance(ex, QAExample)]
        if len(items) != len(examples):
            raise FsxltError("an extractive QA task expects questions with their contexts")
        questions = self._pieces([ex.question for ex in items], with_offsets=False)
        contexts = dict.fromkeys(ex.context for ex in items)
        context_pieces = dict(zip(contexts, self._pieces(list(contexts), with_offsets=True),
                                  strict=True))
        out: list[tuple[int, dict[str, Any]]] = []
        for i, ex in enumerate(items):
            question = questions[i][0][:MAX_QUESTION_TOKENS]
            ids, offsets = context_pieces[ex.context]
            out.extend((i, window) for window in self._windows(question, ids, offsets, ex))
        return out

    def _pieces(self, texts: list[str], with_offsets: bool) -> list[tuple[list[int], Any]]:
        if not texts:
            return []
        enc = self.tokenizer(texts, add_special_tokens=False, verbose=False,
                             return_offsets_mapping=with_offsets)
        return [(list(enc["input_ids"][i]),
                 [tuple(o) for o in enc["offset_mapping"][i]] if with_offsets else None)
                for i in range(len(texts))]

    def _windows(self, question: list[int], ids: list[int], offsets: list[tuple[int, int]],
                 example: QAExample) -> list[dict[str, Any]]:
        head = self.prefix + question + self.middle
        room = self.max_len - len(head) - len(self.suffix)
        if room < 1:
            raise FsxltError(f"max_seq_length {self.max_len} leaves no room for the context "
                             f"of question {example.question_id}")
        first, last_char = -1, -1  # a question to predict has no answer to point at
        if example.answers:
            first = example.starts[0]
            last_char = first + len(example.answers[0])
        windows = []
        for start in window_starts(len(ids), room, self.stride):
            piece_ids, piece_offsets = ids[start:start + room], offsets[start:start + room]
            span = answer_span(piece_offsets, first, last_char)
            labels = [0, 0] if span is None else [len(head) + span[0], len(head) + span[1]]
            types = (self.prefix_types + [self.question_type] * len(question)
                     + self.middle_types + [self.context_type] * len(piece_ids)
                     + self.suffix_types) if self.uses_token_types else None
            windows.append({"input_ids": head + piece_ids + self.suffix, "token_type_ids": types,
                            "labels": labels,
                            "offsets": [None] * len(head) + piece_offsets
                            + [None] * len(self.suffix)})
        return windows


def span_logits(logits: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
    """Start and end logits ``(B, L, 2)`` as ``(2B, L)`` rows (start of window 0, its end,
    start of window 1, ...), padding masked out: a cross-entropy over these rows against
    the (start, end) labels is BERT's span loss summed over both ends."""
    masked = logits.float().masked_fill(~attention_mask.bool()[..., None], -1e4)
    return masked.permute(0, 2, 1).reshape(-1, masked.shape[1])


def best_spans(rows: torch.Tensor, context_mask: torch.Tensor,
               n_best: int = N_BEST, max_tokens: int = MAX_ANSWER_TOKENS,
               ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Each window's best valid span (see the module docstring): (score, start, end), with
    score ``-inf`` for a window without a valid span. ``rows`` are :func:`span_logits`."""
    start, end = rows.float()[0::2], rows.float()[1::2]
    outside = ~context_mask.bool()
    start = start.masked_fill(outside, float("-inf"))
    end = end.masked_fill(outside, float("-inf"))
    k = min(n_best, start.shape[1])
    start_values, start_at = start.topk(k, dim=1)
    end_values, end_at = end.topk(k, dim=1)
    length = end_at[:, None, :] - start_at[:, :, None]
    scores = start_values[:, :, None] + end_values[:, None, :]
    scores = scores.masked_fill((length < 0) | (length >= max_tokens), float("-inf"))
    best = scores.flatten(1).argmax(dim=1)
    score = scores.flatten(1).gather(1, best[:, None])[:, 0]
    return score, start_at.gather(1, (best // k)[:, None])[:, 0], \
        end_at.gather(1, (best % k)[:, None])[:, 0]


def answers_of(encoded: Any, scores: Sequence[float], starts: Sequence[int],
               ends: Sequence[int]) -> list[str]:
    """Each question's answer text: its windows' best span (``scores``, ``starts``, ``ends``
    per row of ``encoded``), cut from the context by character offsets."""
    best: list[tuple[float, int]] = [(float("-inf"), -1)] * encoded.n_examples
    for index, row in enumerate(encoded.rows):
        if scores[index] > best[row.example][0]:
            best[row.example] = (scores[index], index)
    answers = []
    for example, (_score, index) in enumerate(best):
        if index < 0:
            answers.append("")
            continue
        offsets = encoded.rows[index].offsets
        first, last = offsets[starts[index]], offsets[ends[index]]
        answers.append(encoded.contexts[example][first[0]:last[1]])
    return answers
