"""End to end through the CLI: sample, import-published, check, and bad input."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from fsxlt.cli import run_app
from fsxlt.errors import FsxltError
from fsxlt.sampling.check import check_set
from fsxlt.sampling.store import read_set
from tests.conftest import write_conll, write_ner, write_pair_tsv


def files_of(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file()}


def fsxlt(*args: str) -> tuple[int, str, str]:
    """Run the installed console script in a subprocess (what a user sees)."""
    done = subprocess.run([sys.executable, "-m", "fsxlt", *args], capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(Path(__file__).parents[1])})
    return done.returncode, done.stdout, done.stderr


def test_sample_xnli_writes_disjoint_buckets_and_remaining_dev(tmp_path, xnli_dev, capsys):
    out = tmp_path / "buckets"
    assert run_app(["sample", "--task", "xnli", "--lang", "de", "-k", "1", "-k", "2",
                    "--data", str(xnli_dev), "--out", str(out)]) == 0
    manifest, buckets, remaining = read_set(out / "xnli" / "de" / "k2")
    assert manifest["n_buckets"] == 40 and manifest["split"] == "dev"
    assert manifest["source"]["file"] == "dev-de.tsv"
    assert all(len(b.examples) == 6 for b in buckets)
    assert len(remaining) == 335 - 240
    assert "95 dev examples remain" in capsys.readouterr().out
    assert check_set(out / "xnli" / "de" / "k2", xnli_dev).ok
    # one source file serves every K of a (task, language)
    assert run_app(["buckets", "check", str(out), "--source", str(xnli_dev)]) == 0


def test_same_seed_gives_identical_files_and_other_seed_differs(tmp_path, ner_train, xnli_dev):
    for name in ("a", "b", "c"):
        seed = "7" if name != "c" else "8"
        for task, data in (("panx", ner_train), ("xnli", xnli_dev)):
            assert run_app(["sample", "--task", task, "--lang", "de", "-k", "1", "-k", "2",
                            "--data", str(data), "--seed", seed, "--out",
                            str(tmp_path / name)]) == 0
    a, b, c = (files_of(tmp_path / n) for n in "abc")
    assert a == b
    assert a.keys() == c.keys()
    assert a["panx/de/k1/00.json"] != c["panx/de/k1/00.json"]
    assert a["xnli/de/k2/00.json"] != c["xnli/de/k2/00.json"]


def test_sampled_tagging_buckets_pass_the_check(tmp_path, ner_train):
    out = tmp_path / "b"
    assert run_app(["sample", "--task", "panx", "--lang", "de", "--data", str(ner_train),
                    "--out", str(out), "--n-buckets", "10"]) == 0
    for k in (1, 2, 4):
        report = check_set(out / "panx" / "de" / f"k{k}", ner_train)
        assert report.ok, report.violations
    assert run_app(["buckets", "check", str(out)]) == 0


def test_check_flags_tampering_overlap_and_a_changed_source(tmp_path, xnli_dev):
    out = tmp_path / "b"
    run_app(["sample", "-t", "xnli", "-l", "de", "-k", "1", "--data", str(xnli_dev),
             "--out", str(out)])
    set_dir = out / "xnli" / "de" / "k1"
    first = json.loads((set_dir / "00.json").read_text())
    second = json.loads((set_dir / "01.json").read_text())
    second["examples"][0] = first["examples"][1]  # bucket 1: its entailment -> 0's neutral
    second["bucket"]["ids"][0] = first["bucket"]["ids"][1]
    (set_dir / "01.json").write_text(json.dumps(second))
    kinds = {v.kind for v in check_set(set_dir).violations}
    assert {"integrity", "overlap", "count"} <= kinds
    changed = tmp_path / "dev-de.tsv"
    changed.write_text(xnli_dev.read_text() + "x\ty\tneutral\n")
    assert "source-hash" in {v.kind for v in check_set(set_dir, changed).violations}


def write_published(root: Path) -> None:
    """A miniature of the published layout, with the defects the real one has."""
    for i in range(3):
        bucket = root / "xnli" / "1-shots" / "german" / f"{i}-th"
        bucket.mkdir(parents=True)
        sampled = {lab: [{"uid": f"german-{i}{lab}-val", "text_a": f"a {i} {lab}",
                          "text_b": "b", "label": lab, "portion_identifier": -1}]
                   for lab in ("entailment", "neutral", "contradiction")}
        (bucket / "sampled.json").write_text(json.dumps(sampled))
    (root / "xnli" / "1-shots" / "german" / ".DS_Store").write_bytes(b"\0\1")
    ner = root / "panx" / "1-shots" / "de"
    minimal = [(["Ada"], ["B-PER"]), (["Bonn"], ["B-LOC"]), (["UN"], ["B-ORG"])]
    redundant = [(["Ada", "in", "Bonn"], ["B-PER", "O", "B-LOC"]), *minimal]
    missing = [(["Ada"], ["B-PER"]), (["Bonn"], ["B-LOC"])]
    for i, sentences in enumerate((minimal, redundant, missing)):
        (ner / f"{i}-th").mkdir(parents=True)
        write_conll(ner / f"{i}-th" / "train.tsv", sentences)
    # jv and my: the sampler ran out of sentences and left empty files
    jv = root / "panx" / "1-shots" / "jv"
    for i in range(3):
        (jv / f"{i}-th").mkdir(parents=True)
        write_conll(jv / f"{i}-th" / "train.tsv", minimal)
    (jv / "1-th" / "train.tsv").write_text("")
    (root / "panx" / "1-shots" / "my" / "0-th").mkdir(parents=True)
    (root / "panx" / "1-shots" / "my" / "0-th" / "train.tsv").write_text("")
    (root / "readme.md").write_text("published buckets")


def test_a_published_bucket_broken_otherwise_still_fails_the_import(tmp_path, capsys):
    """An empty file is the release's; a malformed one is named and sets exit 1."""
    src, out = tmp_path / "published", tmp_path / "store"
    write_published(src)
    (src / "xnli" / "1-shots" / "german" / "2-th" / "sampled.json").write_text("{oops")
    assert run_app(["buckets", "import-published", str(src), "--out", str(out)]) == 1
    captured = capsys.readouterr()
    assert "not imported: xnli/1-shots/german/2-th/sampled.json: line 1: invalid JSON" \
        in captured.err
    assert "1 published buckets could not be read" in captured.err
    assert "left out 2 published buckets that are empty files" in captured.out


def test_import_published_then_check_reports_what_it_finds(tmp_path, capsys):
    src, out = tmp_path / "published", tmp_path / "store"
    write_published(src)
    # the empty files are the release's (issue 51, item 2): named in one line, exit 0
    assert run_app(["buckets", "import-published", str(src), "--out", str(out)]) == 0
    captured = capsys.readouterr()
    assert "left out 2 published buckets that are empty files in the release" in captured.out
    assert "panx/1-shots/jv/1-th/train.tsv, panx/1-shots/my/0-th/train.tsv" in captured.out
    assert captured.err == ""
    assert "ignored readme.md" not in captured.out  # a file at the root is not a folder
    manifest, buckets, _ = read_set(out / "xnli" / "de" / "k1")
    assert manifest["sampler"] == "published" and manifest["language"] == "de"
    assert "missing_buckets" not in manifest
    assert [ex.id for ex in buckets[2].examples][0] == "german-2entailment-val"
    jv, jv_buckets, _ = read_set(out / "panx" / "jv" / "k1")
    assert [b.index for b in jv_buckets] == [0, 2]  # published numbers kept
    assert sorted(files_of(out / "panx" / "jv" / "k1")) == ["00.json", "02.json", "manifest.json"]
    assert jv["missing_buckets"] == [{"index": 1, "file": "panx/1-shots/jv/1-th/train.tsv",
                                      "reason": "file is empty"}]
    assert not (out / "panx" / "my").exists()
    assert run_app(["buckets", "check", str(out)]) == 1
    printed = capsys.readouterr().out
    assert "xnli/de/k1" in printed and "ok" in printed
    assert "(1 published buckets missing: 01)" in printed
    assert "not-minimal" in printed and "3 of 4 sentences can be removed" in printed
    assert "missing-label" in printed and "'ORG' occurs 0 times" in printed
    assert "3 bucket sets checked: 2 ok, 1 with violations" in printed
    assert "1 published buckets are missing from their sets" in printed


def test_a_sweep_over_a_set_with_a_gap_runs_the_other_buckets(tmp_path):
    from fsxlt.execution import expand, parse_config

    src, out = tmp_path / "published", tmp_path / "store"
    write_published(src)
    run_app(["buckets", "import-published", str(src), "--out", str(out), "--task", "panx"])
    data = tmp_path / "data"
    data.mkdir()
    start = tmp_path / "ckpt"  # the plan hashes its files; no model is loaded
    start.mkdir()
    (start / "config.json").write_text("{}")
    (start / "tokenizer_config.json").write_text("{}")  # a model folder's
    for split in ("dev", "test"):
        write_conll(data / f"{split}-jv.tsv", [(["Ada"], ["B-PER"])])

    def config(n_buckets: int) -> dict:
        return {"name": "gap", "out": str(tmp_path / "runs"), "buckets": str(out),
                "data_dir": str(data), "start": str(start), "n_buckets": n_buckets,
                "tasks": {"panx": {"languages": ["jv"], "k": [1]}}}

    runs = expand(parse_config(config(3))).runs
    assert [run.index for run in runs] == [0, 2]  # bucket 01 is the gap
    with pytest.raises(FsxltError, match="holds 2 buckets, the sweep asks for 4"):
        expand(parse_config(config(4)))


@pytest.mark.parametrize(("args", "message"), [
    (["-t", "nli", "-l", "de"],
     "error: unknown task 'nli' (did you mean 'xnli'?); valid: bustm, chid"),
    (["-t", "xnli", "-l", "xx"], "error: unknown language 'xx' for task xnli"),
    (["-t", "xnli", "-l", "de", "--data", "MISSING"], "missing.tsv: file not found"),
    (["-t", "xnli", "-l", "de", "-k", "8", "--data", "DEV"],
     "label 'entailment' needs 320 examples but only 130 are available"),
    (["-t", "panx", "-l", "de", "-k", "1", "--data", "BAD"], "bad.tsv:4: expected 'token<TAB>tag'"),
    (["-t", "xnli", "-l", "de", "--data", "EMPTY"], "empty.tsv: file is empty"),
])
def test_bad_input_is_one_line_nonzero_and_writes_nothing(tmp_path, args, message):
    dev = write_pair_tsv(tmp_path / "dev-de.tsv",
                         {"entailment": 130, "neutral": 330, "contradiction": 330})
    bad = tmp_path / "bad.tsv"
    bad.write_text("Ada\tB-PER\n\nBonn\tB-LOC\nthree columns here\n")
    empty = tmp_path / "empty.tsv"
    empty.write_text("")
    paths = {"MISSING": str(tmp_path / "missing.tsv"), "DEV": str(dev), "BAD": str(bad),
             "EMPTY": str(empty)}
    out = tmp_path / "out"
    code, stdout, stderr = fsxlt("sample", *[paths.get(a, a) for a in args], "--out", str(out))
    assert code != 0
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and message in lines[0], stderr
    assert "Traceback" not in stderr + stdout
    assert not out.exists()


def test_every_command_has_help_with_an_example():
    for command in (["sample"], ["buckets", "import-published"], ["buckets", "check"]):
        code, stdout, _ = fsxlt(*command, "--help")
        assert code == 0 and "fsxlt " + " ".join(command) in stdout


def test_many_languages_from_a_data_dir(tmp_path):
    for lang in ("de", "zh"):
        write_ner(tmp_path / f"train-{lang}.tsv", 200, seed=len(lang) + ord(lang[0]))
    out = tmp_path / "b"
    assert run_app(["sample", "-t", "panx", "-l", "de", "-l", "zh", "-k", "1",
                    "--data-dir", str(tmp_path), "--out", str(out), "--n-buckets", "5"]) == 0
    assert sorted(p.name for p in (out / "panx").iterdir()) == ["de", "zh"]
    for write_many in (tmp_path / "b" / "panx" / "zh" / "k1",):
        assert check_set(write_many, tmp_path / "train-zh.tsv").ok
