"""One boundary for reading records and manifests (issue 31, mechanism 8).

A record or manifest edited by hand (no ``language``, bucket index ``"zero"``, a
manifest bucket without ``file``, ``"buckets": "oops"``) gave fsxlt 0.2.0 tracebacks
in ``report``, ``buckets check``, ``adapt`` and ``sweep``. Records are checked where
they are read (:func:`fsxlt.study.runs.record_problem`: unreadable, with the reason, never
counted) and manifests where they are read (:func:`fsxlt.sampling.store.read_manifest`:
one line naming the file and the field).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fsxlt.cli import run_app
from fsxlt.fileio import atomic_write_json
from fsxlt.report import load_records
from tests.sweep_fixtures import write_config
from tests.test_faults_like_with_like import record
from tests.train_fixtures import nli_data, write_bucket_set, write_pairs

NLI = ["entailment", "neutral", "contradiction"]
RECORD_EDITS = {
    "no language": (lambda r: r.pop("language"), "language is None, not text"),
    "no task": (lambda r: r.pop("task"), "task is None, not text"),
    "index zero": (lambda r: r["bucket"].update(index="zero"),
                   "bucket.index is 'zero', not a number"),
    "k as text": (lambda r: r.update(k="one"), "k is 'one', not a number"),
    "bad epoch": (lambda r: r.update(runs=[{"lr": 1e-5, "epochs": ["x"]}]),
                  "an epoch of its runs is 'x', not an epoch and a dev score"),
}


@pytest.mark.parametrize("edit", sorted(RECORD_EDITS))
def test_a_hand_edited_record_is_unreadable_not_a_traceback(tmp_path, capsys, edit):
    change, reason = RECORD_EDITS[edit]
    for index in range(3):
        rec = record("full", index, 0.5)
        if index == 1:
            change(rec)
        atomic_write_json(tmp_path / f"xnli/de/k1/full/{index:02d}.json", rec)
    records = load_records(tmp_path)
    assert records.unreadable == [("xnli/de/k1/full/01.json", reason)]
    assert len(records.scores) == 2
    assert run_app(["report", str(tmp_path), "--expected-buckets", "3"]) == 0
    err = capsys.readouterr().err
    assert "Traceback" not in err and f"01.json: unreadable run record, not counted: {reason}" \
        in err


MANIFEST_EDITS = {
    "bucket without file": (lambda m: m["buckets"][0].pop("file"),
                            "buckets[0].file is None, not a plain file name"),
    # every name a manifest gives a file or folder stays where it is put (issue 50, item 1)
    "bucket file outside": (lambda m: m["buckets"][0].update(file="../../elsewhere.json"),
                            "buckets[0].file is '../../elsewhere.json', not a plain file name"),
    "bucket file absolute": (lambda m: m["buckets"][1].update(file="/tmp/x.json"),
                             "buckets[1].file is '/tmp/x.json', not a plain file name"),
    "bucket name outside": (lambda m: m["buckets"][0].update(name="../x"),
                            "buckets[0].name is '../x', not a plain name"),
    "dev file outside": (lambda m: m["buckets"][0].update(dev={"file": "../d.jsonl", "n": 1}),
                         "buckets[0].dev is {'file': '../d.jsonl', 'n': 1}, not a file entry"),
    "test file outside": (lambda m: m.update(test={"file": "/etc/passwd"}),
                          "test is {'file': '/etc/passwd'}, not a file entry"),
    "remaining outside": (lambda m: m.update(dev_remaining={"file": ".."}),
                          "dev_remaining is {'file': '..'}, not a file entry"),
    "language outside": (lambda m: m.update(language="../../de"),
                         "language is '../../de', not a plain name"),
    "strategy outside": (lambda m: m.update(strategy={"name": "a/b"}),
                         "strategy is {'name': 'a/b'}, not a strategy with a plain name"),
    "buckets oops": (lambda m: m.update(buckets="oops"), "buckets is 'oops', not a list"),
    "index zero": (lambda m: m["buckets"][0].update(index="zero"),
                   "buckets[0].index is 'zero', not a whole number"),
    "labels null": (lambda m: m.update(labels=None), "labels is None, not a list of labels"),
    "k as text": (lambda m: m.update(k="four"), "k is 'four', not a whole number"),
}


@pytest.fixture
def edited_set(tmp_path, request) -> Path:
    data = nli_data(30, seed=1)
    directory = write_bucket_set(tmp_path / "store", "xnli", "de", 4,
                                 [data[:4], data[4:8]], NLI)
    write_pairs(tmp_path / "dev.tsv", data[8:20])
    write_pairs(tmp_path / "test.tsv", data[20:30])
    manifest = json.loads((directory / "manifest.json").read_text())
    MANIFEST_EDITS[request.param][0](manifest)
    (directory / "manifest.json").write_text(json.dumps(manifest))
    return directory


@pytest.mark.parametrize("edited_set", sorted(MANIFEST_EDITS), indirect=True)
@pytest.mark.parametrize("command", ["check", "adapt", "sweep"])
def test_a_hand_edited_manifest_is_one_line_naming_the_field(edited_set, tmp_path, capsys,
                                                              command, request):
    edit = request.node.callspec.params["edited_set"]
    store = tmp_path / "store"
    argv = {"check": ["buckets", "check", str(store)],
            "adapt": ["adapt", "--task", "xnli", "--lang", "de", "--bucket", str(edited_set),
                      "--from", "bert-base-multilingual-cased", "--dev",
                      str(tmp_path / "dev.tsv"), "--test", str(tmp_path / "test.tsv"),
                      "--out", str(tmp_path / "runs"), "--lr", "1e-3"],
            "sweep": ["sweep", str(write_config(tmp_path / "sweep.yaml", {
                "out": str(tmp_path / "runs"), "buckets": str(store), "methods": [],
                "no_source_training": {"encoder": "bert-base-multilingual-cased"},
                "lrs": [1e-3], "data_dir": str(tmp_path),
                "tasks": {"xnli": {"languages": ["de"], "k": [4]}}})), "--workers", "0"]
            }[command]
    status = run_app(argv)
    err = capsys.readouterr().err.strip().splitlines()
    assert status == 2 and len(err) == 1, err
    assert err[0].startswith(f"error: {edited_set / 'manifest.json'}")
    assert MANIFEST_EDITS[edit][1] in err[0]
    assert not (tmp_path / "runs").exists()
