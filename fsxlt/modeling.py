"""Encoders, heads and the freezing policy of every target-adapting method.

One model class, :class:`FsxltModel`, serves every task kind (docs/protocol.md#training):

- **classification**: the encoder's [CLS] hidden state goes through a pooler
  (linear + tanh; the encoder's own pretrained pooler when it has one, e.g.
  BERT and XLM-R, otherwise a freshly initialised one), dropout and a linear
  classifier. Pair inputs are fed as a segment pair.
- **multiple choice**: every (text, candidate) pair is one encoder input; its
  [CLS] state goes through the pooler, dropout and a linear layer with one
  output, and the scores of an example's candidates are its logits (a
  softmax over the candidates in the loss, argmax to predict).
- **tagging**: dropout and a linear classifier on the hidden state of each
  word's **last** wordpiece. Other pieces and special tokens never reach the
  loss or the metric because only the last-piece positions are gathered.
- **extractive QA**: a span head, one linear layer from every token's hidden
  state to a start and an end logit (no dropout, as BERT's SQuAD head); the
  windows of long contexts and span decoding live in :mod:`fsxlt.spans`.

The model is split at a clean seam: :meth:`FsxltModel.encode` runs the
encoder and returns *features* (the [CLS] hidden state before the pooler, or
one vector per scored word); :meth:`FsxltModel.head` maps features to logits
(pooler, dropout, classifier). The head-only adapting variants freeze the
whole encoder and run it in eval mode (no dropout), so its features are a
deterministic function of the input and can be cached.

The study's adapting methods (:data:`fsxlt.methods.METHODS`; all but ``full`` freeze
embeddings and all transformer layers; each is a class in :mod:`fsxlt.methods`,
where LoRA and plug-ins live too):

============== ============================================= ====================
method         trained parameters                            classifier at start
============== ============================================= ====================
full           everything                                    source-trained
fc             classifier                                    source-trained
fc-pooler      classifier, pooler                            source-trained
cos-pooler     cosine matrix W, pooler                       new random W, s=10
fc-reset-pooler classifier, pooler                           re-initialised
============== ============================================= ====================

Tagging and QA models have no pooler, so only ``full`` and ``fc`` (and LoRA) apply to them.

Featurisation (:class:`Featurizer`) turns examples into wordpiece ids once.
Tagging *evaluation* splits a sentence longer than ``max_seq_length``
wordpieces at word boundaries into consecutive windows, so that every word
is predicted exactly once. Training rows treat such a sentence as the
protocol setting ``long_sentences`` says (:data:`LONG_SENTENCES`): ``truncate``,
the study's (its XTREME-derived code cuts the wordpieces after
``max_seq_length`` less the special tokens; fsxlt keeps the whole words that
fit, as each word is scored on its last piece), or ``windows`` (every window
one training row). Classification inputs are always truncated (from the end).
This module reads no data files.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import nn
from torch.nn import functional as F

from fsxlt.data import CHID_BLANK, ChoiceExample, Example, TaggedSentence, TextExample
from fsxlt.errors import FsxltError
from fsxlt.spans import QAFeaturizer, span_logits
from fsxlt.tasks import TaskSpec

COS_SCALE = 10.0

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

class Pooler(nn.Module):
    """Linear + tanh on the [CLS] hidden state (same parameter names as BERT's pooler)."""

    def __init__(self, hidden_size: int):
        super().__init__()
        self.dense = nn.Linear(hidden_size, hidden_size)
        self.activation = nn.Tanh()

    def forward(self, cls_state: torch.Tensor) -> torch.Tensor:
        return self.activation(self.dense(cls_state))


class CosineClassifier(nn.Module):
    """Logits ``s * cos(x, w_c)`` for a matrix ``W`` of shape (hidden, classes)."""

    def __init__(self, hidden_size: int, num_labels: int, scale: float = COS_SCALE):
        super().__init__()
        self.weight = nn.Parameter(torch.empty(hidden_size, num_labels))
        self.scale = scale

    def forward(self, features: torch.Tensor) -> torch.Tensor:
        x = F.normalize(features, dim=-1, eps=1e-8)
        w = F.normalize(self.weight, dim=0, eps=1e-8)
        return self.scale * (x @ w)


def _normal_(tensor: torch.Tensor, std: float, generator: torch.Generator) -> None:
    with torch.no_grad():
        values = torch.randn(tensor.shape, generator=generator, dtype=torch.float32) * std
        tensor.copy_(values.to(tensor.device, tensor.dtype))


def _generator(seed: int) -> torch.Generator:
    gen = torch.Generator(device="cpu")
    gen.manual_seed(int(seed))
    return gen


class FsxltModel(nn.Module):
    """A Hugging Face encoder plus an FS-XLT head (see the module docstring).

    Parameter names start with ``encoder.``, ``pooler.`` or ``classifier.``;
    freezing policies are expressed in those prefixes.
    """

    def __init__(self, encoder: nn.Module, kind: str, num_labels: int, *, seed: int = 0):
        super().__init__()
        if kind not in ("classification", "tagging", "multiple_choice", "extractive_qa"):
            raise ValueError(f"unknown task kind {kind!r}")
        config = encoder.config
        self.kind = kind
        self.num_labels = num_labels
        # multiple choice: the classifier scores each (text, candidate) row with one
        # number; classify() lays the scores out as (examples, candidates) logits.
        # extractive QA: a start and an end logit per token
        self.n_outputs = {"multiple_choice": 1, "extractive_qa": 2}.get(kind, num_labels)
        self.hidden_size = int(config.hidden_size)
        self.init_std = float(getattr(config, "initializer_range", 0.02) or 0.02)
        native = getattr(encoder, "pooler", None)
        self.native_pooler = native is not None and isinstance(
            getattr(native, "dense", None), nn.Linear)
        self.pooler: Pooler | None = None
        if kind not in ("tagging", "extractive_qa"):
            self.pooler = Pooler(self.hidden_size)
            if self.native_pooler:
                self.pooler.load_state_dict(native.dense.state_dict(prefix="dense."))
            else:
                self.reset_pooler(seed)
        if native is not None:
            encoder.pooler = None  # we own the pooler; the encoder returns hidden states
        self.encoder = encoder
        dropout = getattr(config, "hidden_dropout_prob", None)
        if dropout is None:
            dropout = getattr(config, "dropout", 0.1)
        self.dropout = nn.Dropout(float(dropout))
        self.classifier: nn.Module = nn.Linear(self.hidden_size, self.n_outputs)
        self.reset_classifier(seed)
        self.head_kind = "linear"
        # A method may replace the head: ``output_head`` maps the hidden state at each
        # batch's scored positions (``word_index``) to logits (pet scores a mask there).
        self.output_head: nn.Module | None = None

    # ----------------------------------------------------------------- head set-up

    def reset_classifier(self, seed: int) -> None:
        """A fresh linear classifier: N(0, initializer_range) weights, zero bias."""
        classifier = nn.Linear(self.hidden_size, self.n_outputs)
        classifier.to(self._device_dtype()[0])
        _normal_(classifier.weight, self.init_std, _generator(seed))
        nn.init.zeros_(classifier.bias)
        self.classifier = classifier
        self.head_kind = "linear"

    def reset_pooler(self, seed: int) -> None:
        if self.pooler is None:
            return
        _normal_(self.pooler.dense.weight, self.init_std, _generator(seed + 7919))
        nn.init.zeros_(self.pooler.dense.bias)

    def use_cosine_head(self, seed: int) -> None:
        """Replace the classifier by a new random cosine head (scale 10)."""
        head = CosineClassifier(self.hidden_size, self.n_outputs)
        head.to(self._device_dtype()[0])
        _normal_(head.weight, 1.0 / math.sqrt(self.hidden_size), _generator(seed))
        self.classifier = head
        self.head_kind = "cos"

    def use_linear_head(self) -> None:
        """Make sure the classifier is linear (shape as in a saved state dict)."""
        if self.head_kind != "linear":
            self.reset_classifier(0)

    def _device_dtype(self) -> tuple[torch.device, torch.dtype]:
        param = next(self.encoder.parameters())
        return param.device, param.dtype

    # ----------------------------------------------------------------- freezing

    @property
    def encoder_trainable(self) -> bool:
        return any(p.requires_grad for p in self.encoder.parameters())

    def train(self, mode: bool = True) -> FsxltModel:
        super().train(mode)
        if mode and not self.encoder_trainable:
            self.encoder.eval()  # frozen encoder: deterministic features, no dropout
        return self

    def trainable_names(self) -> list[str]:
        return [n for n, p in self.named_parameters() if p.requires_grad]

    # ----------------------------------------------------------------- forward

    def encode(self, batch: dict[str, torch.Tensor], *, positions: bool = False,
               ) -> torch.Tensor:
        """Encoder forward: [CLS] state (classification) or one vector per scored word.

        ``positions`` gathers the states at the batch's ``word_index`` for a
        classification model too (what an ``output_head`` reads).
        """
        inputs = {"input_ids": batch["input_ids"], "attention_mask": batch["attention_mask"]}
        if "token_type_ids" in batch:
            inputs["token_type_ids"] = batch["token_type_ids"]
        grad = torch.is_grad_enabled() and self.encoder_trainable
        with torch.set_grad_enabled(grad):
            hidden = self.encoder(**inputs).last_hidden_state
        if self.kind == "extractive_qa":
            return hidden
        if self.kind != "tagging" and not positions:
            return hidden[:, 0]
        flat = hidden.reshape(-1, hidden.shape[-1])
        return flat.index_select(0, batch["word_index"])

    def pool(self, features: torch.Tensor) -> torch.Tensor:
        """The pooler on [CLS] states (classification); tagging features pass unchanged."""
        return self.pooler(features) if self.pooler is not None else features

    def classify(self, pooled: torch.Tensor) -> torch.Tensor:
        """Pooled features -> logits: dropout, classifier.

        Multiple choice: the rows of a batch are each example's candidates in
        order, so the one score per row is reshaped to (examples, candidates)
        and a softmax (in the loss) runs over an example's candidates.
        """
        if self.kind == "extractive_qa":
            return self.classifier(pooled)  # BERT's span head has no dropout
        logits = self.classifier(self.dropout(pooled))
        if self.kind == "multiple_choice":
            return logits.reshape(-1, self.num_labels)
        return logits

    def head(self, features: torch.Tensor) -> torch.Tensor:
        """Features -> logits: (pooler,) dropout, classifier."""
        return self.classify(self.pool(features))

    def forward(self, batch: dict[str, torch.Tensor]) -> torch.Tensor:
        """Logits for an input batch, or for a batch of cached features.

        A batch normally holds ``input_ids`` etc. A batch built by
        :mod:`fsxlt.training.features` holds ``features`` (what :meth:`encode`
        returned) or ``pooled`` (what :meth:`pool` returned) instead, and
        only the parts after that point run.
        """
        if self.kind == "extractive_qa":
            features = batch["features"] if "features" in batch else self.encode(batch)
            return span_logits(self.head(features), batch["attention_mask"])
        if "pooled" in batch:
            return self.classify(batch["pooled"])
        if "features" in batch:
            return self.head(batch["features"])
        if self.output_head is not None:
            return self.output_head(self.encode(batch, positions=True))
        return self.head(self.encode(batch))

    def represent(self, batch: dict[str, torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor]:
        """What the prediction reads, and the logits it makes of it.

        The pooled [CLS] state (tagging: each word's state) and the
        classifier's logits; with a method's own ``output_head`` (``pet``),
        the states at the scored positions (the mask) and that head's logits.
        """
        if self.output_head is not None:
            states = self.encode(batch, positions=True)
            return states, self.output_head(states)
        pooled = self.pool(self.encode(batch))
        return pooled, self.classify(pooled)

    # ----------------------------------------------------------------- state

    def head_state_dict(self) -> dict[str, torch.Tensor]:
        """Pooler and classifier weights (what a checkpoint stores beside the encoder)."""
        out, seen = {}, set()
        for name, tensor in self.state_dict().items():
            if name.startswith(("encoder.", "output_head.")) or name.endswith("decoder.weight"):
                continue  # the encoder's own (a tied decoder is its embedding matrix)
            key = (tensor.data_ptr(), tuple(tensor.shape))
            if key not in seen:  # a tensor shared by two names is saved once
                seen.add(key)
                out[name] = tensor
        return out

    def encoder_for_saving(self) -> nn.Module:
        """The encoder with its native pooler re-attached, for ``save_pretrained``."""
        if self.native_pooler and self.pooler is not None:
            self.encoder.pooler = self.pooler
        return self.encoder

    def detach_pooler(self) -> None:
        if getattr(self.encoder, "pooler", None) is not None:
            self.encoder.pooler = None


def build_model(encoder: nn.Module, task: TaskSpec, seed: int = 0) -> FsxltModel:
    """Wrap an encoder with a fresh head for ``task`` (seeded)."""
    return FsxltModel(encoder, task.kind, len(task.labels), seed=seed)


# --------------------------------------------------------------------------- featurisation

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


class Featurizer:
    """Turns examples into wordpiece ids with a fast tokenizer, once per split."""

    def __init__(self, tokenizer: Any, task: TaskSpec, max_seq_length: int | None = None):
        if not getattr(tokenizer, "is_fast", False):
            raise FsxltError("fsxlt needs a fast (Rust) tokenizer to map words to wordpieces")
        if task.is_generation:
            raise FsxltError(f"task {task.name} generates text, which an encoder does not: "
                             "run it with fsxlt icl")
        self.tokenizer = tokenizer
        self.task = task
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
            return self._encode_tagged(examples, windows)
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
        """Every window of every question (:mod:`fsxlt.spans`), one row each."""
        rows = [Row(example=i, **window) for i, window in self._qa.windows(examples)]
        return EncodedSplit("extractive_qa", rows, len(examples),
                            [(ex.answers, ex.language) for ex in examples], [1] * len(examples),
                            contexts=[ex.context for ex in examples])

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
                       all_pieces: bool = False) -> EncodedSplit:
        sentences = [ex for ex in examples if isinstance(ex, TaggedSentence)]
        if len(sentences) != len(examples):
            raise FsxltError(f"task {self.task.name} expects tagged sentences, got text examples")
        rows: list[Row] = []
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
            for start, stop in self._windows(pieces, windows):
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
        for b, row in enumerate(rows):
            context[b, :len(row.offsets)] = torch.tensor([o is not None for o in row.offsets])
        batch["context_mask"] = context
    if any(r.positions for r in rows):
        batch["word_index"] = torch.tensor(word_index, dtype=torch.long)
    return {k: v.to(device) for k, v in batch.items()}


def quiet_transformers() -> None:
    """Silence transformers' load reports and progress bars (the CLI prints its own)."""
    import transformers

    transformers.utils.logging.set_verbosity_error()
    transformers.utils.logging.disable_progress_bar()
