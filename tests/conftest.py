"""Shared test fixtures: small data files written on the fly (tests never read ../shared)."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

XNLI_LABELS = ["entailment", "neutral", "contradiction"]


@pytest.fixture(scope="session", autouse=True)
def _own_hash_cache(tmp_path_factory):
    """The tests keep fsxlt's cache of large files' hashes to themselves (not ~/.cache);
    set in the environment, so the commands they start as processes use it too."""
    import os

    previous = os.environ.get("FSXLT_CACHE_DIR")
    os.environ["FSXLT_CACHE_DIR"] = str(tmp_path_factory.mktemp("fsxlt-cache"))
    yield
    if previous is None:
        os.environ.pop("FSXLT_CACHE_DIR", None)
    else:
        os.environ["FSXLT_CACHE_DIR"] = previous
NER_TYPES = ["PER", "ORG", "LOC"]


def write_pair_tsv(path: Path, counts: dict[str, int], seed: int = 0) -> Path:
    """An XNLI-style TSV with ``counts[label]`` examples per label, shuffled."""
    rng = random.Random(seed)
    rows = [(label, i) for label, n in counts.items() for i in range(n)]
    rng.shuffle(rows)
    lines = [f"premise {label} {i} {rng.random():.6f}\thypothesis {i}\t{label}"
             for label, i in rows]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def random_ner_sentence(rng: random.Random, max_mentions: int = 3) -> tuple[list[str], list[str]]:
    tokens, tags = [], []
    for _ in range(rng.randint(0, max_mentions)):
        tokens += [f"w{rng.randint(0, 99)}" for _ in range(rng.randint(0, 3))]
        tags += ["O"] * (len(tokens) - len(tags))
        kind = rng.choice(NER_TYPES)
        length = rng.randint(1, 3)
        tokens += [f"E{rng.randint(0, 99)}" for _ in range(length)]
        tags += [f"B-{kind}"] + [f"I-{kind}"] * (length - 1)
    tokens += ["."]
    tags += ["O"]
    return tokens, tags


def write_conll(path: Path, sentences: list[tuple[list[str], list[str]]],
                prefix: str = "") -> Path:
    blocks = ["\n".join(f"{prefix}{tok}\t{tag}" for tok, tag in zip(toks, tags, strict=True))
              for toks, tags in sentences]
    path.write_text("\n\n".join(blocks) + "\n", encoding="utf-8")
    return path


def write_ner(path: Path, n_sentences: int, seed: int = 0, prefix: str = "") -> Path:
    rng = random.Random(seed)
    return write_conll(path, [random_ner_sentence(rng) for _ in range(n_sentences)], prefix)


@pytest.fixture
def xnli_dev(tmp_path: Path) -> Path:
    """A dev file big enough for 40 disjoint buckets of K=1 and K=2 (but not K=8)."""
    return write_pair_tsv(tmp_path / "dev-de.tsv",
                          {"entailment": 130, "neutral": 110, "contradiction": 95})


@pytest.fixture
def ner_train(tmp_path: Path) -> Path:
    return write_ner(tmp_path / "train-de.tsv", 400, seed=3, prefix="de:")
