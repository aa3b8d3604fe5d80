"""Prompt-based adapting (PET-style): cloze patterns, verbalizers, masked-LM scoring.

An example becomes a text with masks by the task's pattern (``pet`` in the
task YAML), e.g. XNLI's ``{text_a} ? {mask} , {text_b}``. ``{mask}`` becomes
as many mask tokens as the task's longest label word has pieces (one for
XNLI's and PAWS-X's words). The encoder's masked-LM head turns the hidden
state at each mask into log-probabilities over the vocabulary; a label
scores the sum of its word's pieces' log-probabilities, piece j at mask j,
as PET and FewCLUE's PET score words of several pieces. Label words of
different lengths share the masks: a shorter word is scored on its own
(first) masks only, the others stay masks in its input, so a task's label
words are best of one length (the FewCLUE patterns keep them so where the
labels allow). With one piece per word a label scores its word's logit less
the log-sum-exp at the mask, the same for every label: losses and
predictions are those of scoring the logits themselves.

A multiple-choice task (ChID) has no verbalizer: its pattern lists the
example's candidates (``{choices}``) and the blank in its passage becomes as
many masks as the longest candidate has pieces; each candidate scores the
summed log-probabilities of its pieces at the masks (see
:class:`PetChoiceScorer`). A task whose text marks two spans (CLUEWSC's
``[noun]`` and ``<pronoun>``) may name them in its pattern (``{span1}``,
``{span2}``).

The masked-LM head comes from the encoder the start was built on (the hub
name or directory recorded in the checkpoint), or, for a checkpoint that was
source-trained with ``pet``, from the checkpoint itself. Its output layer
stays tied to the encoder's input embeddings, as in pretraining, so it
follows the embeddings as they are fine-tuned. Before any model loads,
:func:`check_mlm_config` refuses an encoder whose config shows it has no
masked-LM head.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch
from torch import nn

from fsxlt.data import CHID_BLANK, WSC_MARKS, ChoiceExample, Example, TextExample
from fsxlt.errors import FsxltError
from fsxlt.models.encoding import EncodedSplit, Featurizer, Row
from fsxlt.models.model import FsxltModel
from fsxlt.study.runs import CHECKPOINT_FILE, is_checkpoint
from fsxlt.tasks import PET_PLACEHOLDERS, PetSpec, TaskSpec

HEAD_PREFIX = "mlm_head."
_HEAD_NAMES = ("cls", "lm_head")  # BERT-style and RoBERTa/XLM-R-style heads
_MLM_ARCHITECTURE = re.compile(r"(MaskedLM|PreTraining|LMHeadModel)$")
CHOICE_SEPARATOR = "、"  # between the candidates a multiple-choice pattern lists


def task_pet(task: TaskSpec) -> PetSpec:
    if task.pet is None:
        raise FsxltError(f"task {task.name} has no pet pattern and verbalizer (a 'pet' section "
                         "in its YAML)")
    return task.pet


def encoder_source(start: str | Path) -> str | None:
    """Where a start's masked-LM head comes from: a checkpoint's recorded encoder, else the
    start itself (an encoder name or directory); None when a checkpoint records none."""
    if not is_checkpoint(start):
        return str(start)
    try:
        meta = json.loads((Path(start) / CHECKPOINT_FILE).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError):
        return None  # loading the checkpoint reports what is wrong with it
    encoder = meta.get("encoder") if isinstance(meta, dict) else None
    return str(encoder) if encoder else None


def check_mlm_config(start: str | Path) -> None:
    """Refuse, from its config alone (no weights), a start whose encoder has no masked-LM head.

    The encoder's config (a local directory, or a hub model already cached;
    never a download) must be of a model type that transformers has a
    masked-LM class for, and its ``architectures``, when it lists any, must
    name one with the head (``...ForMaskedLM``, ``...ForPreTraining``,
    ``...LMHeadModel``); an encoder saved without its pretraining heads
    (``BertModel``) has none. A config that cannot be read is left to
    :func:`load_mlm_head`, which checks the weights themselves.
    """
    source = encoder_source(start)
    if source is None:
        return
    from transformers import AutoConfig
    from transformers.models.auto.modeling_auto import MODEL_FOR_MASKED_LM_MAPPING_NAMES

    from fsxlt.models.model import quiet_transformers

    quiet_transformers()
    try:
        from fsxlt.identity import hub_source

        name, revision = hub_source(source)
        config = AutoConfig.from_pretrained(name, local_files_only=True, **revision)
    except Exception:  # not local, not cached, unreadable: the loading says what is wrong
        return
    architectures = [str(name) for name in getattr(config, "architectures", None) or []]
    if config.model_type in MODEL_FOR_MASKED_LM_MAPPING_NAMES and (
            not architectures or any(_MLM_ARCHITECTURE.search(a) for a in architectures)):
        return
    raise FsxltError(f"pet needs an encoder pretrained with a masked-LM head; {source} has "
                     f"none (its config names {', '.join(architectures) or config.model_type})")


def load_mlm_head(source: str, model: FsxltModel) -> nn.Module:
    """The masked-LM head of the pretrained encoder ``source``, tied to ``model``'s embeddings."""
    from transformers import AutoModelForMaskedLM

    from fsxlt.models.model import quiet_transformers

    quiet_transformers()
    from fsxlt.identity import hub_source

    try:
        name, revision = hub_source(source)  # a hub name: at the commit it resolves to
        mlm, info = AutoModelForMaskedLM.from_pretrained(name, output_loading_info=True,
                                                         **revision)
    except Exception as err:  # no such model, hub unreachable, an architecture without MLM
        first = (str(err).strip().splitlines() or [err.__class__.__name__])[0]
        raise FsxltError(f"pet needs the masked-LM head of {source}: cannot load it "
                         f"({err.__class__.__name__}: {first[:200]})") from None
    head = next((getattr(mlm, name) for name in _HEAD_NAMES if hasattr(mlm, name)), None)
    missing = [key for key in info.get("missing_keys", [])
               if key.split(".")[0] in _HEAD_NAMES and not key.endswith("decoder.weight")]
    if head is None or missing:
        raise FsxltError(f"pet needs an encoder pretrained with a masked-LM head; {source} has "
                         f"none{' (missing ' + missing[0] + ')' if missing else ''}")
    decoder = mlm.get_output_embeddings()
    decoder.weight = model.encoder.get_input_embeddings().weight  # tied, as in pretraining
    return head


def word_scores(log_probs: torch.Tensor, ids: torch.Tensor, weight: torch.Tensor,
                ) -> torch.Tensor:
    """Summed log-probabilities of words at the masks: ``log_probs`` (rows, masks, vocab),
    ``ids`` and ``weight`` (rows, words, masks; weight 0 where a word has no piece) ->
    (rows, words)."""
    rows, masks = log_probs.shape[:2]
    row_index = torch.arange(rows, device=ids.device).view(rows, 1, 1)
    mask_index = torch.arange(masks, device=ids.device).view(1, 1, masks)
    picked = log_probs[row_index, mask_index, ids]
    return (picked * weight.to(picked.dtype)).sum(-1)


def mask_log_probs(head: nn.Module, states: torch.Tensor, n_masks: int) -> torch.Tensor:
    """States at every row's masks (rows * masks, hidden) -> (rows, masks, vocab) log-probs."""
    log_probs = torch.log_softmax(head(states).float(), dim=-1)
    return log_probs.view(-1, n_masks, log_probs.shape[-1])


class PetScorer(nn.Module):
    """Hidden states at a row's masks -> one logit per label: its word's pieces'
    log-probabilities summed, piece j at mask j (module docstring)."""

    def __init__(self, head: nn.Module, pieces: Sequence[Sequence[int]]):
        super().__init__()
        self.head = head
        self.n_masks = max(len(p) for p in pieces)
        ids = torch.zeros(len(pieces), self.n_masks, dtype=torch.long)
        weight = torch.zeros(len(pieces), self.n_masks)
        for label, word in enumerate(pieces):
            ids[label, :len(word)] = torch.tensor(list(word))
            weight[label, :len(word)] = 1.0
        self.register_buffer("ids", ids, persistent=False)
        self.register_buffer("weight", weight, persistent=False)

    def forward(self, states: torch.Tensor) -> torch.Tensor:
        log_probs = mask_log_probs(self.head, states, self.n_masks)
        rows = log_probs.shape[0]
        return word_scores(log_probs, self.ids.expand(rows, -1, -1),
                           self.weight.expand(rows, -1, -1))


class PetChoiceScorer(nn.Module):
    """Multiple choice: each candidate scores its pieces' log-probabilities at the masks.

    The candidates differ from example to example, so their piece ids come
    from the input itself: a row's scored positions
    (:func:`encode_choice_pattern`) are its masks, then each candidate's
    pieces where the pattern lists them, a shorter candidate's missing
    pieces pointing at a mask (weight 0). :meth:`attach` registers a forward
    pre-hook on the model that reads the batch's ids at those positions
    before the encoder runs.
    """

    def __init__(self, head: nn.Module, n_choices: int, mask_id: int):
        super().__init__()
        self.head = head
        self.n_choices = n_choices
        self.mask_id = mask_id
        self.scored_ids: torch.Tensor | None = None

    def attach(self, model: nn.Module) -> Any:
        """Read every batch's scored ids before ``model`` runs; returns the hook's handle."""
        return model.register_forward_pre_hook(self._read_batch)

    def _read_batch(self, _model: nn.Module, args: tuple[Any, ...]) -> None:
        batch = args[0] if args else {}
        if not isinstance(batch, dict) or "word_index" not in batch:
            self.scored_ids = None
            return
        ids = batch["input_ids"].reshape(-1)[batch["word_index"]]
        self.scored_ids = ids.view(batch["input_ids"].shape[0], 1 + self.n_choices, -1)

    def forward(self, states: torch.Tensor) -> torch.Tensor:
        if self.scored_ids is None:
            raise FsxltError("pet multiple choice scores batches of pattern rows only")
        rows, _, n_masks = self.scored_ids.shape
        at_masks = states.view(rows, 1 + self.n_choices, n_masks, -1)[:, 0]
        log_probs = mask_log_probs(self.head, at_masks.reshape(rows * n_masks, -1), n_masks)
        candidates = self.scored_ids[:, 1:]
        return word_scores(log_probs, candidates, candidates != self.mask_id)


def verbalizer_pieces(tokenizer: Any, words: Sequence[str]) -> list[list[int]]:
    """The wordpiece ids of each verbalizer word (as it reads after a space)."""
    out = []
    for word in words:
        ids = tokenizer(word, add_special_tokens=False)["input_ids"]
        if not ids:
            raise FsxltError(f"pet verbalizer word {word!r} is empty after tokenization")
        out.append(list(ids))
    return out


def _split_pattern(pattern: str) -> list[str]:
    """``"{text_a} ? {mask}"`` -> ``["{text_a}", " ? ", "{mask}"]`` (placeholders kept)."""
    parts, rest = [], pattern
    while rest:
        starts = [(rest.find(p), p) for p in PET_PLACEHOLDERS if p in rest]
        if not starts:
            parts.append(rest)
            break
        index, placeholder = min(starts)
        if index:
            parts.append(rest[:index])
        parts.append(placeholder)
        rest = rest[index + len(placeholder):]
    return parts


class _Pattern:
    """A pattern split into parts, its literal text tokenized once."""

    def __init__(self, featurizer: Featurizer, pet: PetSpec):
        tokenizer = featurizer.tokenizer
        if tokenizer.mask_token_id is None:
            raise FsxltError("pet needs a tokenizer with a mask token")
        self.featurizer = featurizer
        self.parts = _split_pattern(pet.pattern)
        self.literal = {p: _ids(tokenizer, p.strip()) for p in self.parts
                        if p not in PET_PLACEHOLDERS}
        self.fixed = sum(len(self.literal.get(p, [])) for p in self.parts)

    def budget(self, other: int) -> int:
        """Pieces left for the texts once the literal words and ``other`` pieces are in."""
        budget = self.featurizer.budget - self.fixed - other
        if budget < 2:
            raise FsxltError(f"max_seq_length {self.featurizer.max_len} leaves no room for the "
                             "pet pattern's texts")
        return budget

    def render(self, fields: dict[str, list[int]]) -> tuple[list[int], dict[str, int]]:
        """The row's ids ([CLS] pattern [SEP]) and where each placeholder's ids start."""
        ids = list(self.featurizer.prefix)
        starts = {}
        for part in self.parts:
            starts[part] = len(ids)
            ids.extend(fields.get(part, self.literal.get(part, [])))
        ids.extend(self.featurizer.suffix)
        return ids, starts

    def row(self, index: int, ids: list[int], label: str, positions: list[int]) -> Row:
        featurizer = self.featurizer
        return Row(example=index, input_ids=ids,
                   token_type_ids=[0] * len(ids) if featurizer.uses_token_types else None,
                   labels=[featurizer._label(label)], positions=positions)


def marked_span(example: TextExample, number: int) -> str:
    """The text of span ``number`` (1 or 2) that the reader marked in ``text_a`` (the first
    pair of its marks)."""
    left, right = WSC_MARKS[number - 1]
    begin = example.text_a.find(left)
    end = example.text_a.find(right, begin + 1) if begin >= 0 else -1
    if end < 0:
        raise FsxltError(f"{example.id}: the pet pattern names {{span{number}}} but the text "
                         f"marks no span {left}...{right}")
    return example.text_a[begin + len(left):end]


def encode_pattern(featurizer: Featurizer, pet: PetSpec, examples: Sequence[Example],
                   n_masks: int = 1) -> EncodedSplit:
    """Pattern-rendered inputs, ``{mask}`` as ``n_masks`` masks, the masks each row's
    scored positions.

    The texts are cut (the longer one first) so that the pattern's literal
    words and the masks always fit in ``max_seq_length``.
    """
    pattern, tokenizer = _Pattern(featurizer, pet), featurizer.tokenizer
    texts = [ex for ex in examples if isinstance(ex, TextExample)]
    if len(texts) != len(examples):
        raise FsxltError(f"pet works on text examples; task {featurizer.task.name} has "
                         "tagged sentences")
    budget = pattern.budget(n_masks)
    spans = [n for n in (1, 2) if f"{{span{n}}}" in pattern.parts]
    rows = []
    for i, ex in enumerate(texts):
        fields = {"{text_a}": _ids(tokenizer, ex.text_a), "{text_b}": _ids(tokenizer, ex.text_b)}
        fields.update({f"{{span{n}}}": _ids(tokenizer, marked_span(ex, n)) for n in spans})
        _fit(fields, budget)
        fields["{mask}"] = [tokenizer.mask_token_id] * n_masks
        ids, starts = pattern.render(fields)
        first = starts["{mask}"]
        rows.append(pattern.row(i, ids, ex.label, list(range(first, first + n_masks))))
    return EncodedSplit("classification", rows, len(texts), [ex.label for ex in texts],
                        [1] * len(texts))


def encode_choice_pattern(featurizer: Featurizer, pet: PetSpec, examples: Sequence[Example],
                          ) -> EncodedSplit:
    """Multiple choice: the passage's blank as masks, as many as the longest candidate of
    ``examples`` has pieces; scored positions: the masks, then every candidate's pieces
    (:class:`PetChoiceScorer`). The passage is cut around the blank, never the candidates."""
    pattern, tokenizer = _Pattern(featurizer, pet), featurizer.tokenizer
    items = [ex for ex in examples if isinstance(ex, ChoiceExample)]
    if len(items) != len(examples):
        raise FsxltError(f"task {featurizer.task.name} expects multiple-choice examples")
    pieces = [[_candidate_ids(tokenizer, ex, c) for c in ex.choices] for ex in items]
    n_masks = max((len(p) for cands in pieces for p in cands), default=1)
    separator = _ids(tokenizer, CHOICE_SEPARATOR)
    rows = []
    for i, (ex, candidates) in enumerate(zip(items, pieces, strict=True)):
        listed, offsets = _join(candidates, separator)
        before, _, after = featurizer.blank_window(ex.text).partition(CHID_BLANK)
        sides = {"before": _ids(tokenizer, before), "after": _ids(tokenizer, after)}
        _fit_around(sides, pattern.budget(n_masks + len(listed)))
        mask = [tokenizer.mask_token_id] * n_masks
        ids, starts = pattern.render({"{text_a}": sides["before"] + mask + sides["after"],
                                      "{choices}": listed})
        first = starts["{text_a}"] + len(sides["before"])
        positions = list(range(first, first + n_masks))
        for offset, cand in zip(offsets, candidates, strict=True):
            positions += [starts["{choices}"] + offset + j if j < len(cand) else first
                          for j in range(n_masks)]
        rows.append(pattern.row(i, ids, ex.label, positions))
    return EncodedSplit("multiple_choice", rows, len(items), [ex.label for ex in items],
                        [1] * len(items))


def _candidate_ids(tokenizer: Any, example: ChoiceExample, candidate: str) -> list[int]:
    ids = _ids(tokenizer, candidate)
    if not ids:
        raise FsxltError(f"{example.id}: candidate {candidate!r} is empty after tokenization")
    return ids


def _join(candidates: list[list[int]], separator: list[int]) -> tuple[list[int], list[int]]:
    """The candidates' ids one after another, ``separator`` between; and where each starts."""
    listed: list[int] = []
    offsets = []
    for index, ids in enumerate(candidates):
        if index:
            listed.extend(separator)
        offsets.append(len(listed))
        listed.extend(ids)
    return listed, offsets


def _ids(tokenizer: Any, text: str | None) -> list[int]:
    return list(tokenizer(text, add_special_tokens=False)["input_ids"]) if text else []


def _fit(fields: dict[str, list[int]], budget: int) -> None:
    """Cut the longer text from its end until both fit ``budget`` (in place)."""
    while sum(len(v) for v in fields.values()) > budget:
        longest = max(fields, key=lambda k: len(fields[k]))
        fields[longest].pop()


def _fit_around(sides: dict[str, list[int]], budget: int) -> None:
    """Cut the text before the blank from its start and after it from its end, the longer
    side first, until both fit ``budget`` (in place)."""
    while len(sides["before"]) + len(sides["after"]) > budget:
        if len(sides["before"]) >= len(sides["after"]):
            sides["before"].pop(0)
        else:
            sides["after"].pop()
