"""A bucket's identity is its content: the same draw has the same hash in every release,
and a store written by fsxlt 0.4 keeps the identities it gave its buckets.

``tests/fixtures/store-0.4`` was written by fsxlt 0.4.0 (commit 95bd9e7) with
``fsxlt sample --task xnli --lang de -k 2 --n-buckets 2 --seed 7 --data dev-de.tsv``
on the ``dev-de.tsv`` beside it; it is kept as that release wrote it.
"""

from __future__ import annotations

import json
import random
import shutil
from pathlib import Path

import pytest

from fsxlt.cli import run_app
from fsxlt.execution.spec import Hashes
from fsxlt.fileio import sha256_text
from fsxlt.sampling.check import check_set
from fsxlt.sampling.set_files import set_files
from fsxlt.sampling.store import (
    LEGACY_FORMAT,
    STORE_FORMAT,
    bucket_hash,
    read_bucket,
    read_manifest,
    read_set,
)

FIXTURE = Path(__file__).parent / "fixtures" / "store-0.4"
SAMPLE = ["sample", "--task", "xnli", "--lang", "de", "-k", "2", "--n-buckets", "2",
          "--seed", "7"]


def files_of(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file() and not p.name.startswith(".fsxlt")}


def sample_as(version: str, monkeypatch, data: Path, out: Path) -> None:
    monkeypatch.setattr("fsxlt.sampling.store.__version__", version)
    assert run_app([*SAMPLE, "--data", str(data), "--out", str(out)]) == 0


def test_another_release_draws_byte_identical_buckets_with_the_same_hashes(tmp_path,
                                                                          monkeypatch, capsys):
    data = FIXTURE / "dev-de.tsv"
    sample_as("0.5.0", monkeypatch, data, tmp_path / "a")
    sample_as("9.9.9", monkeypatch, data, tmp_path / "b")
    a, b = files_of(tmp_path / "a"), files_of(tmp_path / "b")
    manifest = "xnli/de/k2/manifest.json"
    assert {n: v for n, v in a.items() if n != manifest} == \
        {n: v for n, v in b.items() if n != manifest}
    old, new = (json.loads(x[manifest]) for x in (a, b))
    assert (old.pop("fsxlt_version"), new.pop("fsxlt_version")) == ("0.5.0", "9.9.9")
    assert old == new and new["format"] == STORE_FORMAT
    assert b"fsxlt_version" not in a["xnli/de/k2/00.json"]
    # drawing it again with the later release finds the set there: nothing is written and
    # the manifest still says which release wrote it
    capsys.readouterr()
    sample_as("9.9.9", monkeypatch, data, tmp_path / "a")
    assert "1 unchanged" in capsys.readouterr().out
    assert files_of(tmp_path / "a") == a


def _bucket_text(tmp_path: Path, monkeypatch) -> str:
    sample_as("0.5.0", monkeypatch, FIXTURE / "dev-de.tsv", tmp_path / "s")
    return (tmp_path / "s" / "xnli" / "de" / "k2" / "00.json").read_text(encoding="utf-8")


def test_the_hash_follows_content_and_not_layout(tmp_path, monkeypatch):
    text = _bucket_text(tmp_path, monkeypatch)
    raw = json.loads(text)
    base = bucket_hash(text)
    rng = random.Random(0)
    for _ in range(20):  # any layout, any key order: one hash
        keys = list(raw["bucket"])
        rng.shuffle(keys)
        shuffled = {"examples": raw["examples"], "bucket": {k: raw["bucket"][k] for k in keys}}
        layout = json.dumps(shuffled, indent=rng.choice([None, 1, 2, 4]),
                            ensure_ascii=rng.random() < 0.5)
        assert bucket_hash(layout) == base
    renamed = json.loads(text)
    renamed["bucket"]["source"]["file"] = "xnli.dev.de.tsv"  # the same file by another name
    assert bucket_hash(json.dumps(renamed)) == base

    def changed(edit) -> str:
        other = json.loads(text)
        edit(other)
        return bucket_hash(json.dumps(other))

    edits = [lambda r: r["examples"][0].update(text_a="another premise"),
             lambda r: r["examples"][0].update(label="neutral"),
             lambda r: r["examples"].pop(),
             lambda r: r["bucket"].update(seed=8),
             lambda r: r["bucket"].update(k=3),
             lambda r: r["bucket"].update(index=5),
             lambda r: r["bucket"].update(language="fr"),
             lambda r: r["bucket"].update(sampler="k-examples"),
             lambda r: r["bucket"]["ids"].reverse(),
             lambda r: r["bucket"]["source"].update(sha256="0" * 64)]
    hashes = {changed(edit) for edit in edits}
    assert base not in hashes and len(hashes) == len(edits)


def test_a_store_written_by_0_4_keeps_its_buckets_identities(tmp_path, capsys):
    root = tmp_path / "store"
    shutil.copytree(FIXTURE, root)
    directory = root / "buckets" / "xnli" / "de" / "k2"
    manifest = read_manifest(directory)
    assert manifest["format"] == LEGACY_FORMAT and manifest["fsxlt_version"] == "0.4.0"
    _, buckets, remaining = read_set(directory, verify=True)
    assert len(buckets) == 2 and remaining
    hashes = Hashes()
    for entry, bucket in zip(manifest["buckets"], buckets, strict=True):
        path = directory / entry["file"]
        given_then = sha256_text(path.read_text(encoding="utf-8"))  # 0.4's rule: the bytes
        assert entry["sha256"] == given_then == bucket.sha256 == read_bucket(path).sha256
        assert hashes.bucket(path) == given_then  # what a sweep or adapt run records
    assert [p.name for _i, _n, p, _d in set_files(directory).buckets] == ["00.json", "01.json"]
    assert check_set(directory, root / "dev-de.tsv").ok
    assert run_app(["buckets", "check", str(root / "buckets"), "--source",
                    str(root / "dev-de.tsv")]) == 0
    # drawing the same set again with this release finds it there and writes nothing
    before = files_of(root)
    capsys.readouterr()
    assert run_app([*SAMPLE, "--data", str(root / "dev-de.tsv"), "--out",
                    str(root / "buckets")]) == 0
    assert "1 unchanged" in capsys.readouterr().out
    assert files_of(root) == before


def test_a_0_4_bucket_edited_by_hand_is_still_refused(tmp_path):
    root = tmp_path / "store"
    shutil.copytree(FIXTURE, root)
    path = root / "buckets" / "xnli" / "de" / "k2" / "01.json"
    path.write_text(path.read_text(encoding="utf-8").replace("hypothesis", "Hypothesis", 1),
                    encoding="utf-8")
    with pytest.raises(Exception, match="differs from the hash in its manifest"):
        read_set(path.parent, verify=True)
    assert not check_set(path.parent).ok
