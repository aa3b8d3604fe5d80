"""Test helpers for modeling/training/evaluation: a tiny BERT, a tiny tokenizer, toy data.

Nothing comes from the hub: the WordPiece vocabulary is a short list written
here, the encoder is a 2-layer, 32-dim ``BertModel`` built from a
``BertConfig`` with a fixed seed and saved with ``save_pretrained`` so that
the code under test loads it exactly as it would load mBERT.
"""

from __future__ import annotations

import random
from pathlib import Path

import torch

from fsxlt.data import TaggedSentence, TextExample
from fsxlt.sampling.store import BucketSet, read_bucket, write_sets

SPECIAL = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
PERSONS = ["john", "maria", "li", "ahmed"]
PLACES = ["paris", "berlin", "cairo", "lima"]
ORGS = ["acme", "google", "unesco"]
FILLER = ["the", "a", "went", "to", "met", "in", "with", "and", "saw", "works", "for",
          "today", "city", "big", "small", "cat", "dog", "happy", "sad", "not", "is", "."]
PIECES = ["un", "##believ", "##able", "##s", "##ing", "new", "##town"]
VOCAB = SPECIAL + PERSONS + PLACES + ORGS + FILLER + PIECES


# Parameters each head-only method trains (docs/protocol.md#adapting-variants), for classification.
HEAD_ONLY_TRAINABLE = {
    "fc": {"classifier.weight", "classifier.bias"},
    "fc-pooler": {"classifier.weight", "classifier.bias", "pooler.dense.weight",
                  "pooler.dense.bias"},
    "cos-pooler": {"classifier.weight", "pooler.dense.weight", "pooler.dense.bias"},
    "fc-reset-pooler": {"classifier.weight", "classifier.bias", "pooler.dense.weight",
                        "pooler.dense.bias"},
}


def write_vocab(directory: Path, extra: tuple[str, ...] = ()) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / "vocab.txt"
    path.write_text("\n".join(VOCAB + list(extra)) + "\n", encoding="utf-8")
    return path


def make_tokenizer(directory: Path, extra: tuple[str, ...] = ()):
    from transformers import BertTokenizer  # the fast (tokenizers) backend in transformers 5

    return BertTokenizer(vocab=str(write_vocab(directory, extra)), do_lower_case=True)


def _save_tiny_bert(directory: Path, model_class: type, seed: int,
                    extra: tuple[str, ...] = ()) -> Path:
    """A 2-layer, 32-dim BERT of ``model_class`` (seeded) and its tokenizer, saved;
    ``extra``: more vocabulary (e.g. the Chinese characters of FewCLUE fixtures)."""
    from transformers import BertConfig

    directory = Path(directory)
    tokenizer = make_tokenizer(directory / "_vocab", extra)
    config = BertConfig(vocab_size=len(VOCAB) + len(extra), hidden_size=32, num_hidden_layers=2,
                        num_attention_heads=2, intermediate_size=64,
                        max_position_embeddings=128, hidden_dropout_prob=0.1,
                        attention_probs_dropout_prob=0.1)
    torch.manual_seed(seed)
    model_class(config).save_pretrained(directory)
    tokenizer.save_pretrained(directory)
    return directory


def make_encoder_dir(directory: Path, seed: int = 0, extra: tuple[str, ...] = ()) -> Path:
    """Save a tiny random BERT + tokenizer under ``directory`` and return it."""
    from transformers import BertModel

    return _save_tiny_bert(directory, BertModel, seed, extra)


# --------------------------------------------------------------------------- toy data

def ner_sentence(rng: random.Random, index: int, source: str = "toy") -> TaggedSentence:
    tokens, tags = [], []
    for _ in range(rng.randint(3, 7)):
        roll = rng.random()
        if roll < 0.2:
            tokens.append(rng.choice(PERSONS))
            tags.append("B-PER")
        elif roll < 0.35:
            tokens.append(rng.choice(PLACES))
            tags.append("B-LOC")
        elif roll < 0.45:
            tokens.extend([rng.choice(ORGS), "unbelievable"])
            tags.extend(["B-ORG", "I-ORG"])
        else:
            tokens.append(rng.choice(FILLER))
            tags.append("O")
    return TaggedSentence(f"{source}:{index}", tuple(tokens), tuple(tags))


def ner_data(n: int, seed: int, source: str = "toy") -> list[TaggedSentence]:
    rng = random.Random(seed)
    return [ner_sentence(rng, i, source) for i in range(n)]


NLI_LABELS = ("entailment", "neutral", "contradiction")


def nli_data(n: int, seed: int, source: str = "toy") -> list[TextExample]:
    """Pairs whose label is readable from one cue word, so a model can learn it."""
    rng = random.Random(seed)
    cue = {"entailment": "happy", "neutral": "big", "contradiction": "not"}
    out = []
    for i in range(n):
        label = NLI_LABELS[i % 3]
        a = " ".join(rng.choice(FILLER[:12]) for _ in range(rng.randint(2, 5)))
        b = " ".join([rng.choice(PERSONS), cue[label], rng.choice(FILLER[:12])])
        out.append(TextExample(f"{source}:{i}", a, b, label))
    return out


def write_conll(path: Path, sentences: list[TaggedSentence]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    blocks = ["\n".join(f"{t}\t{g}" for t, g in zip(s.tokens, s.tags, strict=True))
              for s in sentences]
    path.write_text("\n\n".join(blocks) + "\n", encoding="utf-8")
    return path


def write_pairs(path: Path, examples: list[TextExample]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(f"{e.text_a}\t{e.text_b}\t{e.label}\n" for e in examples),
                    encoding="utf-8")
    return path


def write_bucket_set(root: Path, task: str, language: str, k: int,
                     buckets: list[list], labels: list[str],
                     dev_remaining: list | None = None) -> Path:
    """Write a bucket set through the store and return its directory."""
    bucket_set = BucketSet(task=task, language=language, k=k, sampler="test", seed=0,
                           split="dev" if dev_remaining is not None else "train",
                           source_file="toy", source_sha256=None, labels=labels,
                           buckets=buckets, dev_remaining=dev_remaining)
    return write_sets(root, [bucket_set])[0].path


def as_written_by_0_4(directory: Path, version: str = "0.4.0") -> Path:
    """Turn a set just written into the set fsxlt ``version`` (0.2 to 0.4) wrote from the
    same draw: its version in every bucket file's header (the first key, sorted), the
    manifest's ``fsxlt-buckets/1`` format, and each bucket's hash the sha256 of its file's
    bytes, the identity those releases gave it."""
    import json

    from fsxlt.fileio import dumps_json, sha256_text

    manifest = json.loads((directory / "manifest.json").read_text(encoding="utf-8"))
    for entry in manifest["buckets"]:
        path = directory / entry["file"]
        text = path.read_text(encoding="utf-8")
        if '"fsxlt_version"' not in text:  # written again: the old set was found there
            text = text.replace(
                '{\n "bucket": {\n', f'{{\n "bucket": {{\n  "fsxlt_version": "{version}",\n',
                1)
        path.write_text(text, encoding="utf-8")
        entry["sha256"] = sha256_text(text)
    manifest.update(format="fsxlt-buckets/1", fsxlt_version=version)
    (directory / "manifest.json").write_text(dumps_json(manifest), encoding="utf-8")
    return directory


def read_first_bucket(directory: Path):
    return read_bucket(Path(directory) / "00.json")


def make_xlmr_encoder_dir(directory: Path, seed: int = 0) -> Path:
    """Save a tiny random XLM-R (RoBERTa layout, one segment type) + Unigram tokenizer.

    The sentencepiece-style vocabulary holds ``▁word`` pieces for the toy
    words and a few continuation pieces, so multi-piece words occur too.
    """
    from transformers import XLMRobertaConfig, XLMRobertaModel, XLMRobertaTokenizer

    directory = Path(directory)
    specials = [("<s>", 0.0), ("<pad>", 0.0), ("</s>", 0.0), ("<unk>", 0.0), ("<mask>", 0.0)]
    words = PERSONS + PLACES + ORGS + FILLER
    pieces = [(f"▁{w}", -2.0) for w in words]
    pieces += [(p, -4.0) for p in ("▁un", "believ", "able", "s", "ing", "▁new", "town")]
    pieces += [(ch, -8.0) for ch in sorted({c for w in words for c in w} | {"▁"})
               if ch not in {p for p, _ in pieces}]
    tokenizer = XLMRobertaTokenizer(vocab=specials + pieces)
    config = XLMRobertaConfig(vocab_size=len(specials) + len(pieces), hidden_size=32,
                              num_hidden_layers=2, num_attention_heads=2,
                              intermediate_size=64, max_position_embeddings=130,
                              type_vocab_size=1, pad_token_id=1, bos_token_id=0,
                              eos_token_id=2)
    torch.manual_seed(seed)
    XLMRobertaModel(config).save_pretrained(directory)
    tokenizer.save_pretrained(directory)
    return directory


def make_mlm_encoder_dir(directory: Path, seed: int = 0, extra: tuple[str, ...] = ()) -> Path:
    """A tiny BERT saved *with* its masked-LM head (what pet needs), same vocabulary
    (``extra``: more of it, as for :func:`make_encoder_dir`)."""
    from transformers import BertForMaskedLM

    return _save_tiny_bert(directory, BertForMaskedLM, seed, extra)
