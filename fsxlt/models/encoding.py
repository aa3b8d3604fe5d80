"""Examples to encoder inputs: wordpiece ids once per split, padded batches.

:class:`Featurizer` turns examples into :class:`Row` objects (an
:class:`EncodedSplit`) with a fast tokenizer, once per split; :func:`collate`
pads a list of rows into one batch. Tagging *evaluation* splits a sentence
longer than ``max_seq_length`` wordpieces at word boundaries into consecutive
windows, so that every word is predicted exactly once. Training rows treat
such a sentence as the protocol setting ``long_sentences`` says
(:data:`LONG_SENTENCES`): ``truncate``, the study's (its XTREME-derived code
cuts the wordpieces after ``max_seq_length`` less the special tokens; fsxlt
keeps the whole words that fit, as each word is scored on its last piece), or
``windows`` (every window one training row). Classification inputs are always
truncated (from the end). Extractive QA's windows come from
:class:`fsxlt.models.spans.QAFeaturizer`. This module reads no data files.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import torch

from fsxlt.data import CHID_BLANK, ChoiceExample, Example, TaggedSentence, TextExample
from fsxlt.errors import FsxltError
from fsxlt.models.spans import DEFAULT_QA_DECODING, QAFeaturizer, check_qa_decoding
from fsxlt.tasks import TaskSpec

# how training rows treat a tagging sentence longer than max_seq_length (the first: the study's)
LONG_SENTENCES = ("truncate", "windows")
DEFAULT_LONG_SENTENCES = LONG_SENTENCES[0]


def check_long_sentences(value: str, task: TaskSpec, where: str = "long_sentences") -> str:
    """``value`` as a ``long_sentences`` setting for ``task``, or a one-line error: one of
    :data:`LONG_SENTENCES`, ``windows`` for tagging only (others truncate; QA has its own)."""
    if value not in LONG_SENTENCES:
        raise FsxltError(f"{where} must be one of {', '.join(LONG_SENTENCES)}, got {value!r}")
    if value == "windows" and task.is_qa:
        raise FsxltError(f"{where} concerns the training rows of tagging tasks; {task.name} is "
                         "extractive QA, which always cuts a long paragraph into overlapping "
                         "windows of its own (docs/qa.md)")
    if value == "windows" and not task.is_tagging:
        raise FsxltError(f"{where} windows is for tagging tasks; {task.name} is "
                         f"{task.kind}, whose inputs are truncated")
    return value


def check_label_all_tokens(value: bool, task: TaskSpec, where: str = "label_all_tokens",
                           ) -> bool:
    """``value`` as a ``label_all_tokens`` setting for ``task``, or a one-line error: true
    only for tagging (every wordpiece of a word scored with its label)."""
    if value and not task.is_tagging:
        raise FsxltError(f"{where} labels every wordpiece of a word (tagging); {task.name} "
                         f"is {task.kind}")
    return bool(value)

# --------------------------------------------------------------------------- heads


@dataclass
class Row:
    """One encoder input: a (window of a) sentence or an example, with its labels.

    For tagging, ``positions`` are the sequence positions of the last
    wordpiece of each scored word, ``words`` the indices of those words in
    their sentence and ``labels`` their label ids (training rows of
    ``label_all_tokens``: every wordpiece of each word, each with the word's
    index and label). For classification, ``labels`` holds the one label id.
    """

    example: int
    input_ids: list[int]
    token_type_ids: list[int] | None
    labels: list[int]
    positions: list[int] = field(default_factory=list)
    words: list[int] = field(default_factory=list)
    choices: list[tuple[list[int], list[int] | None]] | None = None
    offsets: list[tuple[int, int] | None] | None = None  # QA: each token's context characters
    max_context: list[bool] | None = None  # QA: tokens whose max-context window this is

    @property
    def n_sequences(self) -> int:
        """Encoder inputs this row stands for (its candidates, for multiple choice)."""
        return len(self.choices) if self.choices is not None else 1


@dataclass
class EncodedSplit:
    """A tokenized list of examples, plus the gold labels as strings (for metrics)."""

    kind: str
    rows: list[Row]
    n_examples: int
    gold: list[Any]  # str per example, or list[str] per sentence
    word_counts: list[int]
    groups: list[str] | None = None  # ranking: each example's query (nDCG is per query)
    contexts: list[str] | None = None  # extractive QA: each question's context
    qa_decoding: str = DEFAULT_QA_DECODING  # extractive QA: how answers are decoded


class Featurizer:
    """Turns examples into wordpiece ids with a fast tokenizer, once per split.

    ``qa_decoding`` (extractive QA): the rule its splits' answers are decoded by
    (:data:`fsxlt.models.spans.QA_DECODING`). ``eval_long`` (tagging): how an evaluation
    split's sentence longer than ``max_seq_length`` is scored: ``whole`` (in windows,
    every word) or ``truncate`` (the words that fit; the others neither predicted nor in
    the gold the metric reads: the study's, reading ``eval_long``)."""

    def __init__(self, tokenizer: Any, task: TaskSpec, max_seq_length: int | None = None,
                 qa_decoding: str = DEFAULT_QA_DECODING, eval_long: str = "whole"):
        check_qa_decoding(qa_decoding)
        if eval_long not in ("whole", "truncate"):
            raise FsxltError(f"eval_long is whole or truncate, got {eval_long!r}")
        self.eval_long = eval_long
        if not getattr(tokenizer, "is_fast", False):
            raise FsxltError("fsxlt needs a fast (Rust) tokenizer to map words to wordpieces")
        if task.is_generation:
            raise FsxltError(f"task {task.name} generates text, which an encoder does not: "
                             "run it with fsxlt icl")
        self.tokenizer = tokenizer
        self.task = task
        self.qa_decoding = qa_decoding
        self.max_len = int(max_seq_length or task.training.max_seq_length)
        self.label_ids = {label: i for i, label in enumerate(task.labels)}
        self.pad_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else 0
        with_special = tokenizer("a")["input_ids"]
        plain = tokenizer("a", add_special_tokens=False)["input_ids"]
        start = next((i for i in range(len(with_special) - len(plain) + 1)
                      if with_special[i:i + len(plain)] == plain), None)
        if start is None or not plain:
            raise FsxltError("cannot locate the special tokens of this tokenizer")
        self.prefix = list(with_special[:start])
        self.suffix = list(with_special[start + len(plain):])
        self.budget = self.max_len - len(self.prefix) - len(self.suffix)
        if self.budget < 1:
            raise FsxltError(f"max_seq_length {self.max_len} leaves no room for wordpieces")
        self.uses_token_types = "token_type_ids" in tokenizer.model_input_names
        self._qa = QAFeaturizer(tokenizer, self.max_len, self.uses_token_types) \
            if task.is_qa else None

    def _label(self, label: str) -> int:
        if label not in self.label_ids:
            raise FsxltError(f"label {label!r} is not a label of task {self.task.name}")
        return self.label_ids[label]

    def encode(self, examples: Sequence[Example], *, windows: bool = False) -> EncodedSplit:
        """Tokenize ``examples``; ``windows=True`` keeps every word of long sentences."""
        if self.task.is_qa:
            return self._encode_qa(examples)
        if self.task.is_tagging:
            cut = windows and self.eval_long == "truncate"
            return self._encode_tagged(examples, windows and not cut, cut_gold=cut)
        if self.task.is_multiple_choice:
            return self._encode_choices(examples)
        return self._encode_text(examples)

    def training_rows(self, examples: Sequence[Example],
                      long_sentences: str = DEFAULT_LONG_SENTENCES,
                      label_all_tokens: bool = False) -> EncodedSplit:
        """``examples`` as training rows: a long tagging sentence truncated (the study's) or
        cut into windows, one row each, as ``long_sentences`` says; ``label_all_tokens``
        scores every wordpiece of a word with its label (tagging), not just the last."""
        windows = long_sentences == "windows"
        if check_label_all_tokens(label_all_tokens, self.task):
            return self._encode_tagged(examples, windows, all_pieces=True)
        return self.encode(examples, windows=windows)

    def _encode_qa(self, examples: Sequence[Example]) -> EncodedSplit:
        """Every window of every question (:mod:`fsxlt.models.spans`), one row each."""
        rows = [Row(example=i, **window) for i, window in self._qa.windows(examples)]
        return EncodedSplit("extractive_qa", rows, len(examples),
                            [(ex.answers, ex.language) for ex in examples], [1] * len(examples),
                            contexts=[ex.context for ex in examples],
                            qa_decoding=self.qa_decoding)

    def blank_window(self, text: str) -> str:
        """The part of a passage around its blank that fits the input (ChID's ``#idiom#``).

        Passages are longer than ``max_seq_length``; cutting from the end
        could drop the blank, the one place the candidates are about. Keeps
        about ``max_seq_length`` characters centred on the blank (a Chinese
        character is about one wordpiece); the tokenizer trims the rest.
        """
        at = text.find(CHID_BLANK)
        if at < 0 or len(text) <= self.max_len:
            return text
        half = self.max_len // 2
        start = max(0, min(at - half, len(text) - self.max_len))
        return text[start:start + self.max_len]

    def _encode_choices(self, examples: Sequence[Example]) -> EncodedSplit:
        """One row per example holding every (text, candidate) pair, candidates in order."""
        items = [ex for ex in examples if isinstance(ex, ChoiceExample)]
        if len(items) != len(examples):
            raise FsxltError(f"task {self.task.name} expects multiple-choice examples")
        n = self.task.n_choices
        for ex in items:
            if len(ex.choices) != n:
                raise FsxltError(f"{ex.id}: {len(ex.choices)} candidates, task {self.task.name} "
                                 f"has {n}")
        texts = [self.blank_window(ex.text) for ex in items for _ in range(n)]
        candidates = [choice for ex in items for choice in ex.choices]
        enc = self.tokenizer(texts, candidates, truncation="longest_first",
                             max_length=self.max_len) if items else {"input_ids": []}
        types = enc.get("token_type_ids") if self.uses_token_types else None
        rows = []
        for i, ex in enumerate(items):
            pairs = [(list(enc["input_ids"][i * n + c]),
                      list(types[i * n + c]) if types is not None else None) for c in range(n)]
            longest = max(pairs, key=lambda p: len(p[0]))
            rows.append(Row(example=i, input_ids=longest[0], token_type_ids=longest[1],
                            labels=[self._label(ex.label)], choices=pairs))
        return EncodedSplit("multiple_choice", rows, len(items), [ex.label for ex in items],
                            [1] * len(items))

    def _encode_text(self, examples: Sequence[Example]) -> EncodedSplit:
        texts = [ex for ex in examples if isinstance(ex, TextExample)]
        if len(texts) != len(examples):
            raise FsxltError(f"task {self.task.name} expects text examples, got tagged sentences")
        a = [ex.text_a for ex in texts]
        if self.task.input == "pair":
            b = [ex.text_b or "" for ex in texts]
            enc = self.tokenizer(a, b, truncation="longest_first", max_length=self.max_len)
        else:
            enc = self.tokenizer(a, truncation=True, max_length=self.max_len)
        types = enc.get("token_type_ids") if self.uses_token_types else None
        rows = [Row(example=i, input_ids=list(enc["input_ids"][i]),
                    token_type_ids=list(types[i]) if types is not None else None,
                    labels=[self._label(ex.label)])
                for i, ex in enumerate(texts)]
        groups = [ex.text_a for ex in texts] if self.task.is_ranking else None
        return EncodedSplit("classification", rows, len(texts), [ex.label for ex in texts],
                            [1] * len(texts), groups)

    def _encode_tagged(self, examples: Sequence[Example], windows: bool,
                       all_pieces: bool = False, cut_gold: bool = False) -> EncodedSplit:
        sentences = [ex for ex in examples if isinstance(ex, TaggedSentence)]
        if len(sentences) != len(examples):
            raise FsxltError(f"task {self.task.name} expects tagged sentences, got text examples")
        rows: list[Row] = []
        kept: list[int] = []  # the words each sentence's rows score (cut_gold: the gold's)
        unk = self.tokenizer.unk_token_id
        enc = self.tokenizer([list(s.tokens) for s in sentences], is_split_into_words=True,
                             add_special_tokens=False) if sentences else None
        for i, sentence in enumerate(sentences):
            ids = enc["input_ids"][i]
            pieces: list[list[int]] = [[] for _ in sentence.tokens]
            for piece, word in zip(ids, enc.word_ids(i), strict=True):
                if word is not None:
                    pieces[word].append(piece)
            for word_pieces in pieces:
                if not word_pieces:  # e.g. a zero-width space: still score the word
                    word_pieces.append(unk)
                del word_pieces[:-self.budget]  # absurdly long word: keep its last pieces
            labels = [self._label(tag) for tag in sentence.tags]
            spans = self._windows(pieces, windows)
            kept.append(spans[-1][1])
            for start, stop in spans:
                row_ids = list(self.prefix)
                positions, words = [], []
                for word in range(start, stop):
                    row_ids.extend(pieces[word])
                    scored = len(pieces[word]) if all_pieces else 1  # last piece, or all
                    positions.extend(range(len(row_ids) - scored, len(row_ids)))
                    words.extend([word] * scored)
                row_ids.extend(self.suffix)
                rows.append(Row(example=i, input_ids=row_ids,
                                token_type_ids=[0] * len(row_ids) if self.uses_token_types
                                else None,
                                labels=[labels[word] for word in words], positions=positions,
                                words=words))
        if cut_gold:  # the words past the cut are not scored: gold as long as the rows
            return EncodedSplit("tagging", rows, len(sentences),
                                [list(s.tags[:n]) for s, n in zip(sentences, kept, strict=True)],
                                kept)
        return EncodedSplit("tagging", rows, len(sentences), [list(s.tags) for s in sentences],
                            [len(s.tokens) for s in sentences])

    def _windows(self, pieces: list[list[int]], all_words: bool) -> list[tuple[int, int]]:
        """Consecutive word ranges of at most ``budget`` pieces (just the first if truncating)."""
        spans, start, used = [], 0, 0
        for word, word_pieces in enumerate(pieces):
            if used + len(word_pieces) > self.budget:
                spans.append((start, word))
                if not all_words:
                    return spans
                start, used = word, 0
            used += len(word_pieces)
        spans.append((start, len(pieces)))
        return spans if all_words else spans[:1]


def collate(rows: Sequence[Row], pad_id: int, device: torch.device | str = "cpu",
            ) -> dict[str, torch.Tensor]:
    """Pad ``rows`` to their longest member (dynamic padding) and build tensors.

    Multiple-choice rows are laid out as their candidates, example after
    example (``n_examples * n_choices`` sequences), with one label per example.
    """
    if rows[0].choices is not None:
        sequences = [pair for row in rows for pair in row.choices]
    else:
        sequences = [(row.input_ids, row.token_type_ids) for row in rows]
    length = max(len(ids) for ids, _types in sequences)
    n = len(sequences)
    input_ids = torch.full((n, length), pad_id, dtype=torch.long)
    mask = torch.zeros((n, length), dtype=torch.long)
    with_types = sequences[0][1] is not None
    types = torch.zeros((n, length), dtype=torch.long) if with_types else None
    for b, (ids, type_ids) in enumerate(sequences):
        input_ids[b, :len(ids)] = torch.tensor(ids, dtype=torch.long)
        mask[b, :len(ids)] = 1
        if types is not None:
            types[b, :len(ids)] = torch.tensor(type_ids, dtype=torch.long)
    word_index: list[int] = []
    labels: list[int] = []
    for b, row in enumerate(rows):
        word_index.extend(b * length + p for p in row.positions)
        labels.extend(row.labels)
    batch = {"input_ids": input_ids, "attention_mask": mask,
             "labels": torch.tensor(labels, dtype=torch.long)}
    if types is not None:
        batch["token_type_ids"] = types
    if rows[0].offsets is not None:  # QA: where the answer may be (the context's tokens)
        context = torch.zeros((n, length), dtype=torch.bool)
        owned = torch.zeros((n, length), dtype=torch.bool)
        for b, row in enumerate(rows):
            context[b, :len(row.offsets)] = torch.tensor([o is not None for o in row.offsets])
            owned[b, :len(row.offsets)] = torch.tensor(row.max_context or
                                                       [False] * len(row.offsets))
        batch["context_mask"], batch["max_context"] = context, owned
    if any(r.positions for r in rows):
        batch["word_index"] = torch.tensor(word_index, dtype=torch.long)
    return {k: v.to(device) for k, v in batch.items()}
