"""Issue 62, item 8: a hub model that cannot be reached is one whole line naming what to do
(``--model DIR``, ``HF_HUB_OFFLINE=1``), within seconds (a connection of ours, not the hub
client's half minute of retries); a model in the local cache still loads."""

from __future__ import annotations

import socket
import time

import pytest

from fsxlt import identity
from fsxlt.cli import run_app


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture
def no_hub(monkeypatch, tmp_path):
    monkeypatch.setenv("HF_ENDPOINT", f"http://127.0.0.1:{_closed_port()}")
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub-cache"))
    monkeypatch.setattr(identity, "_HUB_REACHABLE", {})
    monkeypatch.setattr(identity, "_COMMITS", {})
    import huggingface_hub.constants as constants

    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "hub-cache"))
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)  # the user's: hub not closed
    return tmp_path / "hub-cache"


def test_an_unreachable_hub_is_one_whole_line_in_seconds(no_hub, tmp_path, capsys):
    data = tmp_path / "test.tsv"
    data.write_text("a b\tc d\tentailment\n")
    began = time.monotonic()
    code = run_app(["evaluate", "org/no-such-model", "--task", "xnli", "--lang", "de",
                    "--file", str(data)])
    err = capsys.readouterr().err
    assert code == 2 and time.monotonic() - began < 20
    assert err.count("\n") == 1 and err.rstrip().endswith("to load it from the cache")
    assert "the hub does not answer (127.0.0.1:" in err and "--model DIR" in err
    assert "HF_HUB_OFFLINE=1" in err


def test_a_cached_model_resolves_without_the_hub(no_hub):
    snapshot = no_hub / "models--org--cached" / "snapshots" / ("a" * 40)
    snapshot.mkdir(parents=True)
    (snapshot / "config.json").write_text("{}")
    (no_hub / "models--org--cached" / "refs").mkdir()
    (no_hub / "models--org--cached" / "refs" / "main").write_text("a" * 40)
    assert identity.hub_commit("org/cached") == "a" * 40


def test_whole_words_never_cuts_a_word():
    text = "word " * 100
    cut = identity.whole_words(text, 42)
    assert cut.endswith(" ...") and all(w == "word" for w in cut[:-4].split())


def test_a_cached_model_loads_in_seconds_with_the_hub_closed(no_hub, tmp_path, capfd):
    """Issue 73, item 9: once fsxlt finds the hub closed, every load of the process (config,
    weights, tokenizer) goes to the cache: no retry lines, seconds not minutes (0.11: about
    200 s and 40 retry lines with HF_HUB_OFFLINE unset)."""
    import os
    import shutil

    from fsxlt.training.checkpoint import load_encoder
    from tests.train_fixtures import make_encoder_dir

    built = make_encoder_dir(tmp_path / "built")
    commit = "b" * 40
    snapshot = no_hub / "models--org--tiny" / "snapshots" / commit
    snapshot.mkdir(parents=True)
    for path in built.iterdir():
        if path.is_file():
            shutil.copy(path, snapshot / path.name)
    (no_hub / "models--org--tiny" / "refs").mkdir()
    (no_hub / "models--org--tiny" / "refs" / "main").write_text(commit)
    began = time.monotonic()
    encoder, tokenizer = load_encoder("org/tiny")
    took = time.monotonic() - began
    out = capfd.readouterr()
    assert took < 15, took
    assert "retry" not in (out.out + out.err).lower(), out.err[-2000:]
    assert tokenizer.is_fast and encoder.config.hidden_size == 32
    assert os.environ.get("HF_HUB_OFFLINE") == "1"  # closed for the process and its workers


def test_a_mistyped_model_folder_is_said_to_be_no_folder_either(no_hub, tmp_path,
                                                                   monkeypatch):
    """Issue 73, item 7: ``models/e5-smal`` is read as a hub id; the line says there is no
    such local folder either, and names the nearest folder there."""
    (tmp_path / "models" / "e5-small").mkdir(parents=True)
    monkeypatch.chdir(tmp_path)
    with pytest.raises(identity.FsxltError, match=r"models/e5-smal: the hub does not answer "
                       r"\(127\.0\.0\.1:\d+: .*\), and the model \(revision main\) is not in "
                       r"the local Hugging Face cache; there is no local folder models/e5-smal "
                       r"either \(did you mean 'e5-small'\?\); give a local model folder"):
        identity.hub_commit("models/e5-smal")
