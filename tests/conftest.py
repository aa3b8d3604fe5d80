"""Shared test fixtures: small data files written on the fly (tests never read ../shared)."""

from __future__ import annotations

import atexit
import os
import random
import shutil
import tempfile
from pathlib import Path

import pytest

# The hub is unreachable here: ask only the local cache, at once, as a user offline would
# (huggingface_hub reads these when it is imported, so they are set before any test imports
# it). The cache is the tests' own: the hub names tests plan runs with (never load) are
# in it at commit HUB_COMMIT, a config.json each, laid out as huggingface_hub lays it out,
# so a name resolves to its commit as online (fsxlt.identity.hub_commit).
os.environ["HF_HUB_OFFLINE"] = "1"
HUB_COMMIT = "0" * 40
HUB_NAMES = ("bert-base-multilingual-cased", "xlm-roberta-base", "an-encoder", "some-encoder")
_HUB_CACHE = Path(tempfile.mkdtemp(prefix="fsxlt-tests-hub-"))
os.environ["HF_HUB_CACHE"] = str(_HUB_CACHE)
os.environ["HF_DATASETS_CACHE"] = str(_HUB_CACHE / "datasets")  # load_dataset's, not ~/.cache
atexit.register(shutil.rmtree, _HUB_CACHE, True)
for _repo in HUB_NAMES:
    _folder = _HUB_CACHE / ("models--" + _repo.replace("/", "--"))
    (_folder / "snapshots" / HUB_COMMIT).mkdir(parents=True)
    (_folder / "snapshots" / HUB_COMMIT / "config.json").write_text('{"model_type": "bert"}\n')
    (_folder / "refs").mkdir()
    (_folder / "refs" / "main").write_text(HUB_COMMIT)

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
