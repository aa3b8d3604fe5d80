"""Identity is content (issue 31, mechanism 1).

One fingerprint (:func:`fsxlt.identity.fingerprint`) identifies every model a
result depends on: a checkpoint (its weights too, not only its record and
head), a pretrained encoder directory, a causal LM (weights, GGUF file and
tokenizer) and the similarity order's encoder. fsxlt 0.2.0 identified a local
causal LM by its ``config.json`` and its weight files' names and sizes, and a
checkpoint by its record and head: two models with the same config and other
weights got one identity, and the second was "already done".
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from fsxlt import identity
from fsxlt.errors import FsxltError
from fsxlt.icl.model import model_fingerprint
from fsxlt.icl.run import IclSettings
from fsxlt.study.runs import start_fingerprint
from tests.conftest import HUB_COMMIT
from tests.train_fixtures import make_encoder_dir


def rewrite_weights(directory: Path, seed: int) -> None:
    """Other weights of the same size and config (the same tiny BERT, another seed)."""
    other = make_encoder_dir(directory.parent / f"other-{seed}", seed=seed)
    shutil.copyfile(other / "model.safetensors", directory / "model.safetensors")


@pytest.fixture
def encoder(tmp_path) -> Path:
    return make_encoder_dir(tmp_path / "enc", seed=0)


def test_same_files_elsewhere_are_one_model_and_other_weights_another(encoder, tmp_path):
    copy = tmp_path / "copy"
    shutil.copytree(encoder, copy)
    assert identity.fingerprint(copy) == identity.fingerprint(encoder)
    before = identity.fingerprint(encoder)
    size = (encoder / "model.safetensors").stat().st_size
    rewrite_weights(encoder, seed=1)
    assert (encoder / "model.safetensors").stat().st_size == size  # same size, config, names
    assert identity.fingerprint(encoder) != before
    # a hub name is the commit it resolves to (the tests' hub cache: tests/conftest.py)
    assert identity.fingerprint("xlm-roberta-base") == f"hub:xlm-roberta-base@{HUB_COMMIT}"
    assert identity.fingerprint(f"xlm-roberta-base@{HUB_COMMIT}") == \
        f"hub:xlm-roberta-base@{HUB_COMMIT}"
    with pytest.raises(FsxltError, match="some-org/some-model: HF_HUB_OFFLINE is set, and "
                       "the model .* is not in the local Hugging Face cache; give a local"):
        identity.fingerprint("some-org/some-model")  # offline, and not in the cache


def test_a_replaced_tokenizer_is_another_model(encoder):
    before = identity.fingerprint(encoder)
    vocab = encoder / "tokenizer.json"
    text = vocab.read_text()
    assert '"the"' in text
    vocab.write_text(text.replace('"the"', '"thx"'))
    assert identity.fingerprint(encoder) != before


def test_hashes_are_cached_by_path_size_and_mtime(encoder, monkeypatch):
    identity.fingerprint(encoder)
    opened = []
    real_open = open

    def counting_open(path, *args, **kwargs):
        opened.append(Path(path).name)
        return real_open(path, *args, **kwargs)

    monkeypatch.setattr("builtins.open", counting_open)
    identity.fingerprint(encoder)
    assert opened == []  # nothing read again
    weights = encoder / "model.safetensors"
    stat = weights.stat()
    os.utime(weights, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000))
    identity.fingerprint(encoder)
    assert opened == ["model.safetensors"]


def test_a_causal_lm_is_identified_by_its_weights(encoder, tmp_path):
    """0.2.0: config.json plus weight file names and sizes, so the second model of the same
    config was found "already done"."""
    copy = tmp_path / "lm2"
    shutil.copytree(encoder, copy)
    assert model_fingerprint(str(copy)) == model_fingerprint(str(encoder))
    rewrite_weights(copy, seed=2)
    assert model_fingerprint(str(copy)) != model_fingerprint(str(encoder))


def test_a_gguf_model_is_its_chosen_file_and_tokenizer(tmp_path):
    folder = tmp_path / "gguf"
    folder.mkdir()
    (folder / "a.gguf").write_bytes(b"GGUF" + b"\0" * 64)
    (folder / "b.gguf").write_bytes(b"GGUF" + b"\1" * 64)
    (folder / "tokenizer.json").write_text("{}")
    first = model_fingerprint(str(folder), "a.gguf")
    assert first != model_fingerprint(str(folder), "b.gguf")
    (folder / "b.gguf").write_bytes(b"GGUF" + b"\2" * 64)  # the other file: no matter
    assert model_fingerprint(str(folder), "a.gguf") == first
    (folder / "a.gguf").write_bytes(b"GGUF" + b"\3" * 64)  # same size, other content
    assert model_fingerprint(str(folder), "a.gguf") != first


def test_a_checkpoint_is_identified_by_its_weights_too(encoder, tmp_path):
    """0.2.0: a checkpoint's record and head only, so replacing its encoder weights in
    place kept its identity (and every adapt record of it counted as done)."""
    checkpoint = tmp_path / "ckpt"
    shutil.copytree(encoder, checkpoint)
    (checkpoint / "fsxlt_checkpoint.json").write_text('{"format": "fsxlt-checkpoint/1"}')
    (checkpoint / "fsxlt_head.safetensors").write_bytes(b"head")
    before = start_fingerprint(checkpoint)
    assert before.startswith("checkpoint:")
    rewrite_weights(checkpoint, seed=3)
    assert start_fingerprint(checkpoint) != before
    assert start_fingerprint(encoder).startswith("pretrained:sha256:")
    assert start_fingerprint("bert-base-multilingual-cased") == \
        f"pretrained:hub:bert-base-multilingual-cased@{HUB_COMMIT}"


def test_the_similarity_encoder_enters_the_identity_by_content(encoder, tmp_path):
    """0.2.0 identified ``--order similarity``'s encoder by its path only."""
    settings = IclSettings(model="m", order="similarity", encoder=str(encoder))
    before = settings.describe()["encoder_fingerprint"]
    rewrite_weights(encoder, seed=4)
    assert settings.describe()["encoder_fingerprint"] != before
    assert "encoder_fingerprint" not in IclSettings(model="m").describe()


def test_a_large_file_is_hashed_once_across_commands(tmp_path, monkeypatch):
    """A model's weights are read once, not at every command: their hash is kept in
    FSXLT_CACHE_DIR by path, size, mtime, inode and change time."""
    monkeypatch.setenv("FSXLT_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(identity, "_DISK", None)
    weights = tmp_path / "model" / "model.safetensors"
    weights.parent.mkdir()
    weights.write_bytes(os.urandom(2 << 20))
    first = identity.fingerprint(weights.parent)
    assert identity.cache_file().is_file()
    identity._CACHE.clear()  # a new command: nothing in memory,
    monkeypatch.setattr(identity, "_DISK", None)  # the cache file read again
    opened = []
    real_open = open
    monkeypatch.setattr("builtins.open", lambda p, *a, **k: opened.append(Path(p).name)
                        or real_open(p, *a, **k))
    assert identity.fingerprint(weights.parent) == first and opened == []
    weights.write_bytes(os.urandom(2 << 20))  # replaced in place: hashed again
    assert identity.fingerprint(weights.parent) != first
    assert opened == ["model.safetensors"]
