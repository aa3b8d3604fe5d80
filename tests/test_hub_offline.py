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
