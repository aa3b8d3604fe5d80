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

**Decoding.** Two rules, named by :data:`QA_DECODING`; every record says which.

``max-context`` (the default) is BERT's, as ``run_squad.py`` of
google-research/bert writes it (``write_predictions``, lines 775-805; XTREME
scores XQuAD and MLQA with the same rule, through transformers' SQuAD
utilities): per window, the :data:`N_BEST` (20) best starts and the 20 best
ends among the window's tokens (question and special tokens included, padding
not) are paired; a pair is kept when both ends lie in the context, the end is
not before the start, the span has at most :data:`MAX_ANSWER_TOKENS` (30)
wordpieces, and the window is the start token's *max-context* window: of the
windows holding that token, the one where the smaller of its left and right
context is largest, plus 0.01 × the window's length (``_check_is_max_context``,
lines 513-545; the first such window on a tie). ``any-window`` is fsxlt 0.4's
rule: the 20 best starts and ends are taken among the context's tokens only,
and a start counts in every window that holds it.

Under both, a span's score is start logit + end logit, the answer of a
question is the best kept span over all its windows, its text cut from the
context by character offsets, without surrounding whitespace (the empty string
if no window keeps a span).
A piece that claims characters the next piece also claims (SentencePiece's
lone word-boundary piece ``▁`` before a character it has no joint piece for is
given that character's offsets by the fast tokenizer) ends where the next piece
begins, so an answer that ends on it does not take the next word's first
character. The pairing runs on the accelerator for a whole batch of windows
(:func:`best_spans`).
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
QA_DECODING = ("max-context", "any-window")  # BERT's and XTREME's; fsxlt 0.4's
DEFAULT_QA_DECODING = "max-context"


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


def check_qa_decoding(rule: str, what: str = "qa_decoding") -> str:
    """``rule`` if it names a QA decoding rule (:data:`QA_DECODING`); else one line naming
    ``what``."""
    if rule not in QA_DECODING:
        raise FsxltError(f"{what} must be one of {', '.join(QA_DECODING)}, got {rule!r}")
    return rule


def max_context_windows(starts: Sequence[int], lengths: Sequence[int], n_tokens: int,
                        ) -> list[int]:
    """For each of a context's ``n_tokens`` wordpieces, the window (index into ``starts``,
    ``lengths``) that gives it the most context: the largest min(left, right) + 0.01 ×
    the window's length, the first window on a tie (BERT's ``_check_is_max_context``)."""
    best = [0] * n_tokens
    best_score = [float("-inf")] * n_tokens
    for window, (start, length) in enumerate(zip(starts, lengths, strict=True)):
        end = start + length - 1
        for position in range(start, min(end, n_tokens - 1) + 1):
            score = min(position - start, end - position) + 0.01 * length
            if score > best_score[position]:
                best_score[position], best[position] = score, window
    return best


def trimmed_offsets(offsets: Sequence[tuple[int, int]]) -> list[tuple[int, int]]:
    """Context offsets with each piece ending no later than the next piece begins (a lone
    ``▁`` reported over the next word's first character becomes empty)."""
    out = [tuple(o) for o in offsets]
    for i in range(len(out) - 1):
        begin, end = out[i]
        if end > out[i + 1][0] >= begin:
            out[i] = (begin, out[i + 1][0])
    return out


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
                 trimmed_offsets(enc["offset_mapping"][i]) if with_offsets else None)
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
        starts = window_starts(len(ids), room, self.stride)
        owner = max_context_windows(starts, [min(room, len(ids) - s) for s in starts],
                                    len(ids))
        for number, start in enumerate(starts):
            piece_ids, piece_offsets = ids[start:start + room], offsets[start:start + room]
            span = answer_span(piece_offsets, first, last_char)
            labels = [0, 0] if span is None else [len(head) + span[0], len(head) + span[1]]
            types = (self.prefix_types + [self.question_type] * len(question)
                     + self.middle_types + [self.context_type] * len(piece_ids)
                     + self.suffix_types) if self.uses_token_types else None
            windows.append({"input_ids": head + piece_ids + self.suffix, "token_type_ids": types,
                            "labels": labels,
                            "offsets": [None] * len(head) + piece_offsets
                            + [None] * len(self.suffix),
                            "max_context": [False] * len(head)
                            + [owner[start + i] == number for i in range(len(piece_ids))]
                            + [False] * len(self.suffix)})
        return windows


def span_logits(logits: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
    """Start and end logits ``(B, L, 2)`` as ``(2B, L)`` rows (start of window 0, its end,
    start of window 1, ...), padding masked out: a cross-entropy over these rows against
    the (start, end) labels is BERT's span loss summed over both ends."""
    masked = logits.float().masked_fill(~attention_mask.bool()[..., None], -1e4)
    return masked.permute(0, 2, 1).reshape(-1, masked.shape[1])


def best_spans(rows: torch.Tensor, context_mask: torch.Tensor,
               max_context: torch.Tensor | None = None, n_best: int = N_BEST,
               max_tokens: int = MAX_ANSWER_TOKENS,
               ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Each window's best kept span (the module docstring's rules): (score, start, end),
    score ``-inf`` for a window that keeps none. ``rows`` are :func:`span_logits`;
    ``max_context`` (each token's flag, ``max-context``) or None (``any-window``)."""
    start, end = rows.float()[0::2], rows.float()[1::2]
    context = context_mask.bool()
    if max_context is None:  # any-window: the n-best among the context's tokens
        start = start.masked_fill(~context, float("-inf"))
        end = end.masked_fill(~context, float("-inf"))
        start_ok = end_ok = context
    else:  # max-context: the n-best among the window's tokens, then BERT's filters
        start_ok, end_ok = context & max_context.bool(), context
    k = min(n_best, start.shape[1])
    start_values, start_at = start.topk(k, dim=1)
    end_values, end_at = end.topk(k, dim=1)
    length = end_at[:, None, :] - start_at[:, :, None]
    scores = start_values[:, :, None] + end_values[:, None, :]
    kept = start_ok.gather(1, start_at)[:, :, None] & end_ok.gather(1, end_at)[:, None, :]
    scores = scores.masked_fill((length < 0) | (length >= max_tokens) | ~kept, float("-inf"))
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
        answers.append(encoded.contexts[example][first[0]:last[1]].strip())
    return answers
