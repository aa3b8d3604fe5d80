"""Prompt-based adapting (PET-style): cloze patterns, verbalizers, masked-LM scoring.

An example becomes a text with one mask by the task's pattern (``pet`` in
the task YAML), e.g. XNLI's ``{text_a} ? {mask} , {text_b}``. The encoder's
masked-LM head turns the hidden state at the mask into a score for every
vocabulary entry; a label's score is the score of its verbalizer word. A
word that the tokenizer splits into several pieces scores the mean of its
pieces' logits at the one mask (a single mask cannot hold several pieces;
the mean keeps every piece's evidence and needs no extra forward pass).

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

from fsxlt.data import Example, TextExample
from fsxlt.errors import FsxltError
from fsxlt.modeling import EncodedSplit, Featurizer, FsxltModel, Row
from fsxlt.tasks import PetSpec, TaskSpec

HEAD_PREFIX = "mlm_head."
_HEAD_NAMES = ("cls", "lm_head")  # BERT-style and RoBERTa/XLM-R-style heads
_MLM_ARCHITECTURE = re.compile(r"(MaskedLM|PreTraining|LMHeadModel)$")


def task_pet(task: TaskSpec) -> PetSpec:
    if task.pet is None:
        raise FsxltError(f"task {task.name} has no pet pattern and verbalizer (a 'pet' section "
                         "in its YAML)")
    return task.pet


def encoder_source(start: str | Path) -> str | None:
    """Where a start's masked-LM head comes from: a checkpoint's recorded encoder, else the
    start itself (an encoder name or directory); None when a checkpoint records none."""
    from fsxlt.training.checkpoint import CHECKPOINT_FILE, is_checkpoint

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

    from fsxlt.training.checkpoint import quiet_transformers

    quiet_transformers()
    try:
        config = AutoConfig.from_pretrained(source, local_files_only=True)
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

    from fsxlt.training.checkpoint import quiet_transformers

    quiet_transformers()
    try:
        mlm, info = AutoModelForMaskedLM.from_pretrained(source, output_loading_info=True)
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


class PetScorer(nn.Module):
    """Hidden states at the masks -> one logit per label (mean over its word's pieces)."""

    def __init__(self, head: nn.Module, pieces: Sequence[Sequence[int]]):
        super().__init__()
        self.head = head
        width = max(len(p) for p in pieces)
        ids = torch.zeros(len(pieces), width, dtype=torch.long)
        weight = torch.zeros(len(pieces), width)
        for label, word in enumerate(pieces):
            ids[label, :len(word)] = torch.tensor(list(word))
            weight[label, :len(word)] = 1.0 / len(word)
        self.register_buffer("ids", ids, persistent=False)
        self.register_buffer("weight", weight, persistent=False)

    def forward(self, states: torch.Tensor) -> torch.Tensor:
        vocab = self.head(states)                     # (n, vocabulary)
        picked = vocab[:, self.ids]                   # (n, labels, pieces)
        return (picked * self.weight.to(picked.dtype)).sum(-1)


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
        starts = [(rest.find(p), p) for p in ("{text_a}", "{text_b}", "{mask}") if p in rest]
        if not starts:
            parts.append(rest)
            break
        index, placeholder = min(starts)
        if index:
            parts.append(rest[:index])
        parts.append(placeholder)
        rest = rest[index + len(placeholder):]
    return parts


def encode_pattern(featurizer: Featurizer, pet: PetSpec, examples: Sequence[Example],
                   ) -> EncodedSplit:
    """Pattern-rendered inputs with the mask position as each row's scored position.

    The texts are cut (the longer one first) so that the pattern's literal
    words and the mask always fit in ``max_seq_length``.
    """
    tokenizer, task = featurizer.tokenizer, featurizer.task
    if tokenizer.mask_token_id is None:
        raise FsxltError("pet needs a tokenizer with a mask token")
    texts = [ex for ex in examples if isinstance(ex, TextExample)]
    if len(texts) != len(examples):
        raise FsxltError(f"pet works on text examples; task {task.name} has tagged sentences")
    parts = _split_pattern(pet.pattern)
    literal = {p: tokenizer(p.strip(), add_special_tokens=False)["input_ids"] if p.strip()
               else [] for p in parts if p not in ("{text_a}", "{text_b}", "{mask}")}
    fixed = sum(len(ids) for ids in literal.values()) + 1
    budget = featurizer.budget - fixed
    if budget < 2:
        raise FsxltError(f"max_seq_length {featurizer.max_len} leaves no room for the pet "
                         "pattern's texts")
    rows = []
    for i, ex in enumerate(texts):
        fields = {"{text_a}": _ids(tokenizer, ex.text_a), "{text_b}": _ids(tokenizer, ex.text_b)}
        _fit(fields, budget)
        ids = list(featurizer.prefix)
        position = -1
        for part in parts:
            if part == "{mask}":
                position = len(ids)
                ids.append(tokenizer.mask_token_id)
            else:
                ids.extend(fields.get(part, literal.get(part, [])))
        ids.extend(featurizer.suffix)
        rows.append(Row(example=i, input_ids=ids,
                        token_type_ids=[0] * len(ids) if featurizer.uses_token_types else None,
                        labels=[featurizer._label(ex.label)], positions=[position]))
    return EncodedSplit("classification", rows, len(texts), [ex.label for ex in texts],
                        [1] * len(texts))


def _ids(tokenizer: Any, text: str | None) -> list[int]:
    return list(tokenizer(text, add_special_tokens=False)["input_ids"]) if text else []


def _fit(fields: dict[str, list[int]], budget: int) -> None:
    """Cut the longer text from its end until both fit ``budget`` (in place)."""
    while sum(len(v) for v in fields.values()) > budget:
        longest = max(fields, key=lambda k: len(fields[k]))
        fields[longest].pop()


def checkpoint_eval_set(start: Any, task: TaskSpec, featurizer: Featurizer,
                        examples: Sequence[Example], device: Any) -> Any:
    """``examples`` ready to score with a loaded start, the way it was trained.

    A checkpoint source-trained with ``pet`` is scored through its pattern and
    masked-LM head, with the English verbalizer as in source-training (so
    ``fsxlt evaluate`` reproduces its zero-shot numbers); any other start
    through its classifier.
    """
    from fsxlt.evaluation import make_eval_set, prepare_eval
    from fsxlt.methods import get_method

    method = start.record.get("method")
    if not isinstance(method, dict) or method.get("name") != "pet":
        return prepare_eval(featurizer, examples, device)
    pet = get_method("pet", task.kind, method.get("options"))
    pet.bind(task, task.source_language, start.tokenizer,
             dict(start.info, mlm_head=start.extra.get("mlm_head")))
    pet.prepare(start.model, seed=0)
    start.model.to(device)
    return make_eval_set(pet.encode(featurizer, examples), featurizer.pad_id, device)
