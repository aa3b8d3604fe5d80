"""A GGUF model converted once (issue 54, item 1): the first load keeps the float weights
and tokenizer in a cache keyed by the GGUF file's sha256 and transformers' version; a
later load reads them and gives the same token ids, the same logits and, through ``fsxlt
icl``, the same records; the model's identity stays the GGUF file's content."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fsxlt.cli import run_app
from fsxlt.icl import gguf_cache
from fsxlt.icl.model import load_causal_lm, model_fingerprint
from fsxlt.training import strip_timings
from tests.icl_fixtures import make_gguf_dir
from tests.sweep_fixtures import build_study

TEXTS = ["the answer is yes", "a question? no, maybe", "Grüße aus Köln", "x = 42 ∑"]


@pytest.fixture
def cache(tmp_path, monkeypatch) -> Path:
    monkeypatch.setenv("FSXLT_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("FSXLT_GGUF_CACHE", raising=False)
    return tmp_path / "cache" / "gguf"


def outputs(lm) -> tuple[list, object]:
    import torch

    ids = [lm.tokenizer(text).input_ids for text in TEXTS]
    batch = torch.tensor([row[:3] for row in ids])
    with torch.no_grad():
        return ids, lm.model(batch).logits


def test_a_second_load_reads_the_converted_model_exactly(tmp_path, cache, monkeypatch):
    import torch

    folder = make_gguf_dir(tmp_path / "lm")
    first = load_causal_lm(str(folder), "tiny.gguf")
    entries = list(cache.iterdir())
    assert len(entries) == 1 and gguf_cache.ready(entries[0])
    marker = json.loads((entries[0] / gguf_cache.MARKER).read_text())
    assert entries[0].name.startswith(marker["gguf_sha256"])
    assert marker["gguf_file"] == "tiny.gguf"
    again = load_causal_lm(str(folder), "tiny.gguf")
    ids, logits = outputs(first)
    ids_again, logits_again = outputs(again)
    assert ids == ids_again and torch.equal(logits, logits_again)
    monkeypatch.setenv("FSXLT_GGUF_CACHE", "0")
    plain = load_causal_lm(str(folder), "tiny.gguf")
    assert outputs(plain)[0] == ids and torch.equal(outputs(plain)[1], logits)
    assert again.describe() == first.describe()  # the identity is the GGUF file's
    monkeypatch.delenv("FSXLT_GGUF_CACHE")
    make_gguf_dir(folder, seed=1)  # another file at the same place: another entry
    load_causal_lm(str(folder), "tiny.gguf")
    assert len(list(cache.iterdir())) == 2


def test_fsxlt_icl_writes_the_same_records_from_the_cache(tmp_path, cache, capsys):
    study = build_study(tmp_path / "study")
    folder = make_gguf_dir(tmp_path / "lm")
    bucket = study["buckets"] / "xnli" / "de" / "k1"
    records = []
    for out in ("runs-first", "runs-again"):
        assert run_app(["icl", "--task", "xnli", "--lang", "de", "--model", str(folder),
                        "--gguf-file", "tiny.gguf", "--bucket", str(bucket), "--data-dir",
                        str(study["data"]), "--out", str(tmp_path / out), "--test-limit", "6",
                        "--threads", "1", "--save-predictions"]) == 0
        found = sorted((tmp_path / out).glob("xnli/de/k1/*/*"))
        records.append({p.name: (strip_timings(json.loads(p.read_text()))
                                 if p.suffix == ".json" else p.read_text()) for p in found})
    assert records[0] == records[1] and len(records[0]) == 10
    first = records[0]["00.json"]
    assert first["model"]["start"]["fingerprint"] == model_fingerprint(str(folder), "tiny.gguf")
    assert len(list(cache.iterdir())) == 1


def _flip_byte(path: Path) -> None:
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0x01
    path.write_bytes(bytes(data))


def _edit_json(path: Path) -> None:
    raw = json.loads(path.read_text())
    raw["fsxlt_edited"] = True
    path.write_text(json.dumps(raw))


ALTERATIONS = {
    "weights": lambda entry: _flip_byte(entry / "model.safetensors"),
    "config": lambda entry: _edit_json(entry / "config.json"),
    "tokenizer": lambda entry: _edit_json(entry / "tokenizer_config.json"),
    "cut": lambda entry: (entry / "model.safetensors").write_bytes(
        (entry / "model.safetensors").read_bytes()[:1000]),
    "extra file": lambda entry: (entry / "added.json").write_text("{}"),
    "old marker": lambda entry: (entry / gguf_cache.MARKER).write_text(json.dumps({
        k: v for k, v in json.loads((entry / gguf_cache.MARKER).read_text()).items()
        if k != "files"})),
}


@pytest.mark.parametrize("alteration", [*ALTERATIONS, "another file's conversion"])
def test_an_altered_entry_is_converted_again_saying_so(tmp_path, cache, capsys, alteration):
    """Issue 61, item 5: the cache is checked by content before use: an entry altered in
    any of its files, cut, holding another GGUF file's conversion under this file's key,
    or written without hashes is converted again (one line naming the entry), giving the
    model a fresh conversion gives, and the entry is whole again."""
    import shutil

    import torch

    folder = make_gguf_dir(tmp_path / "lm")
    first = load_causal_lm(str(folder), "tiny.gguf")
    (entry,) = list(cache.iterdir())
    assert gguf_cache.problem(entry) is None
    if alteration == "another file's conversion":
        other = make_gguf_dir(tmp_path / "other", seed=1)
        load_causal_lm(str(other), "tiny.gguf")
        (theirs,) = [e for e in cache.iterdir() if e != entry]
        shutil.rmtree(entry)
        theirs.rename(entry)
    else:
        ALTERATIONS[alteration](entry)
    assert gguf_cache.problem(entry) is not None
    capsys.readouterr()
    again = load_causal_lm(str(folder), "tiny.gguf")
    err = [line for line in capsys.readouterr().err.splitlines() if "GGUF cache" in line]
    assert len(err) == 1 and str(entry) in err[0] and "converting tiny.gguf again" in err[0]
    ids, logits = outputs(first)
    assert outputs(again)[0] == ids and torch.equal(outputs(again)[1], logits)
    assert gguf_cache.problem(entry) is None
    capsys.readouterr()
    load_causal_lm(str(folder), "tiny.gguf")
    assert "GGUF cache" not in capsys.readouterr().err
