"""Bucket sets as a Hugging Face dataset folder and back (issue 43, part 1), with the real
``datasets`` library, offline: every task kind round-trips to byte-identical store files
(so every bucket keeps its hash), ``load_dataset`` reads the folder with typed features,
an edited dataset is refused, and runs done on the original store are done on the
imported one."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from fsxlt.cli import run_app
from fsxlt.sampling.hf_dataset import export_hf, import_hf
from tests.conftest import write_ner, write_pair_tsv
from tests.fewclue_fixtures import write_fewclue
from tests.qa_fixtures import write_xquad


def files_of(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file() and not p.name.startswith(".fsxlt")}


@pytest.fixture(scope="module")
def store(tmp_path_factory) -> Path:
    """One store with a set of every kind: classification (XNLI, drawn from dev: with
    remaining dev), tagging (PAN-X), extractive QA (XQuAD: its held-out test), and
    FewCLUE's fixed splits (named buckets, a union, dev sets and a test set; CSL's keyword
    lists, ChID's multiple choice)."""
    root = tmp_path_factory.mktemp("hf")
    out = root / "buckets"
    data = root / "data"
    data.mkdir()
    fewclue = write_fewclue(data / "fewclue", ("csl", "chid", "eprstmt"))
    # a test keyword holding the joiner: only CSL's test split has text_b_items
    test = fewclue / "csl" / "test_public.json"
    rows = [json.loads(line) for line in test.read_text(encoding="utf-8").splitlines()]
    rows[0]["keyword"] = ["天、地", *rows[0]["keyword"]]
    test.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows),
                    encoding="utf-8")
    steps = [
        ["sample", "--task", "xnli", "--lang", "de", "-k", "1", "--n-buckets", "3", "--data",
         str(write_pair_tsv(data / "dev-de.tsv", {"entailment": 9, "neutral": 9,
                                                   "contradiction": 9}))],
        ["sample", "--task", "panx", "--lang", "de", "-k", "1", "--n-buckets", "3", "--data",
         str(write_ner(data / "train-de.tsv", 60, seed=3, prefix="de:"))],
        ["sample", "--task", "xquad", "--lang", "de", "-k", "2", "--n-buckets", "2",
         "--data-dir", str(write_xquad(data / "xquad", ("de",)))],
        ["buckets", "import-fewclue", str(fewclue), "--task", "csl", "--task", "chid",
         "--task", "eprstmt"],
    ]
    for args in steps:
        assert run_app([*args, "--out", str(out)]) == 0
    return out


def test_every_kind_round_trips_to_the_same_files(store, tmp_path):
    exported = export_hf(store, tmp_path / "ds")
    assert {one.config for one in exported} == {
        "xnli-de-k1", "panx-de-k1", "xquad-de-k2", "csl-zh-k8", "chid-zh-k8", "eprstmt-zh-k8"}
    import_hf(tmp_path / "ds", tmp_path / "back")
    assert files_of(tmp_path / "back") == files_of(store)
    assert run_app(["buckets", "check", str(tmp_path / "back")]) == 0


def test_load_dataset_reads_typed_splits_and_the_card_names_them(store, tmp_path):
    import datasets

    exported = export_hf(store, tmp_path / "ds")
    card = (tmp_path / "ds" / "README.md").read_text(encoding="utf-8")
    meta = yaml.safe_load(card.split("---")[1])
    assert [c["config_name"] for c in meta["configs"]] == [one.config for one in exported]
    xnli = datasets.load_dataset(str(tmp_path / "ds"), "xnli-de-k1")
    assert set(xnli) == {"bucket_00", "bucket_01", "bucket_02", "dev_remaining"}
    assert xnli["bucket_00"].features["label"].names == ["entailment", "neutral",
                                                         "contradiction"]
    assert len(xnli["bucket_00"]) == 3
    manifest = json.loads((store / "xnli/de/k1/manifest.json").read_text(encoding="utf-8"))
    assert [row["id"] for row in xnli["bucket_01"]] == manifest["buckets"][1]["ids"]
    assert manifest["buckets"][1]["sha256"] in card and manifest["source"]["sha256"] in card
    # issue 51, item 9: what a stranger needs, per set, and no folder names or "seed None"
    xnli_section = card[card.index("## xnli-de-k1"):card.index("## ", card.index("## xnli-de-k1")
                                                              + 3)]
    assert "`text_a` (the premise), `text_b` (the hypothesis)" in xnli_section
    assert "a ClassLabel: 0 entailment, 1 neutral, 2 contradiction" in xnli_section
    assert "drawn by fsxlt" in xnli_section and "sampler `nway-kshot`, seed 0" in xnli_section
    # issue 62, item 4: drawn from a local file, which the card names (not the hub)
    assert "a local file, `dev-de.tsv` (its `dev` split; the drawn-from file's sha256" \
        in xnli_section and "Hugging Face hub" not in xnli_section
    assert "| dev_remaining | dev examples in no bucket" in xnli_section
    assert "seed None" not in card and "exported from" not in card
    assert "FewCLUE's own fixed few-shot splits" in card and "(0 O, 1 B-PER" not in card
    assert "`tags` (one tag per token, a ClassLabel: 0 O, 1 B-PER" in card
    panx = datasets.load_dataset(str(tmp_path / "ds"), "panx-de-k1")["bucket_00"]
    assert panx.features["tags"].feature.names[0] == "O"
    qa = datasets.load_dataset(str(tmp_path / "ds"), "xquad-de-k2")
    assert set(qa["bucket_00"][0]["answers"]) == {"text", "answer_start"} and "test" in qa
    fewclue = next(one for one in exported if one.config.startswith("eprstmt"))
    assert {"bucket_00", "bucket_all", "bucket_00_dev", "test"} <= set(fewclue.splits)
    csl = datasets.load_dataset(str(tmp_path / "ds"), "csl-zh-k8")  # one schema, all splits
    assert csl["test"][0]["text_b_items"][0] == "天、地"
    assert csl["bucket_00"][0]["text_b_items"] is None


def test_an_edited_dataset_is_refused_and_nothing_is_written(store, tmp_path):
    import pyarrow.parquet as pq

    export_hf(store, tmp_path / "ds")
    from fsxlt.sampling.hf_dataset import card_configs

    path = card_configs(tmp_path / "ds")["xnli-de-k1"]["bucket_01"]
    table = pq.read_table(path).to_pylist()
    table[0]["text_a"] = "an edited premise"
    import pyarrow as pa

    pq.write_table(pa.Table.from_pylist(table, schema=pq.read_schema(path)), path)
    with pytest.raises(Exception, match="split bucket_01 does not hold the examples"):
        import_hf(tmp_path / "ds", tmp_path / "back")
    assert not (tmp_path / "back").exists()


def test_the_command_line_refuses_a_folder_that_holds_files(store, tmp_path, capsys):
    (tmp_path / "ds").mkdir()
    (tmp_path / "ds" / "notes.txt").write_text("mine", encoding="utf-8")
    assert run_app(["buckets", "export", str(store), str(tmp_path / "ds")]) == 2
    assert "exists and is not empty" in capsys.readouterr().err
    assert (tmp_path / "ds" / "notes.txt").read_text(encoding="utf-8") == "mine"
    assert run_app(["buckets", "export", str(store / "xnli"), str(tmp_path / "x"),
                    "--format", "csv"]) == 2
    assert run_app(["buckets", "export", str(store), str(tmp_path / "ds2")]) == 0
    assert run_app(["buckets", "import-hf", str(tmp_path / "ds2"), "--out",
                    str(tmp_path / "b2")]) == 0
    assert "6 new" in capsys.readouterr().out


def test_runs_done_on_the_original_store_are_done_on_the_imported_one(store, tmp_path,
                                                                      capsys):
    from tests.train_fixtures import make_encoder_dir, nli_data, write_pairs

    encoder = make_encoder_dir(tmp_path / "enc")
    test = write_pairs(tmp_path / "test-de.tsv", nli_data(6, seed=9))
    export_hf(store, tmp_path / "ds")
    import_hf(tmp_path / "ds", tmp_path / "back")

    def adapt(root: Path) -> str:
        capsys.readouterr()
        assert run_app(["adapt", "--task", "xnli", "--lang", "de", "--bucket",
                        str(root / "xnli/de/k1/00.json"), "--from", str(encoder), "--test",
                        str(test), "--lr", "1e-3", "--max-epochs", "1", "--device", "cpu",
                        "--out", str(tmp_path / "runs")]) == 0
        return capsys.readouterr().out + capsys.readouterr().err

    adapt(store)
    assert "already done" in adapt(tmp_path / "back")


@pytest.mark.parametrize("args, says", [
    (["buckets", "export", "{tmp}/nowhere", "{tmp}/ds"], "no such directory"),
    (["buckets", "export", "{tmp}/empty", "{tmp}/ds"], "no bucket sets below it"),
    (["buckets", "import-hf", "{tmp}/empty", "--out", "{tmp}/b"],
     "no dataset card (README.md)"),
    (["buckets", "import-hf", "{tmp}/file.txt", "--out", "{tmp}/b"],
     "a file, not a dataset folder"),
    (["buckets", "import-hf", "org/no-such-dataset", "--out", "{tmp}/b"],
     "not a hub dataset fsxlt can download"),
])
def test_bad_input_is_one_line_and_writes_nothing(tmp_path, capsys, args, says):
    (tmp_path / "empty").mkdir()
    (tmp_path / "file.txt").write_text("x", encoding="utf-8")
    assert run_app([a.replace("{tmp}", str(tmp_path)) for a in args]) == 2
    err = capsys.readouterr().err
    assert says in err and len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert not (tmp_path / "ds").exists() and not (tmp_path / "b").exists()


def test_a_config_is_named_after_its_set_whatever_folder_is_exported(store, tmp_path,
                                                                     capsys):
    """Issue 51, item 3: 0.6.0 named the configs of ``export buckets/xnli`` ``de-k1``."""
    capsys.readouterr()
    assert run_app(["buckets", "export", str(store / "xnli"), str(tmp_path / "a")]) == 0
    assert "load_dataset('" + str(tmp_path / "a") + "', 'xnli-de-k1')" in capsys.readouterr().out
    assert run_app(["buckets", "export", str(store / "xnli/de/k1"), str(tmp_path / "b")]) == 0
    for folder in ("a", "b"):
        import datasets

        loaded = datasets.load_dataset(str(tmp_path / folder), "xnli-de-k1")
        assert "bucket_00" in loaded


def test_an_import_that_fails_at_any_set_leaves_the_store_as_it_was(store, tmp_path,
                                                                    monkeypatch):
    """Issue 61, item 2: every set, or none: a failure while writing the Nth set (a full
    disk) leaves a store that held older sets byte-identical, and a store the import was
    creating absent."""
    import shutil

    import fsxlt.fileio as fileio
    from fsxlt.sampling.store import bucket_dir

    export_hf(store, tmp_path / "ds")
    target = tmp_path / "store"
    import_hf(tmp_path / "ds", target)
    stale = bucket_dir(target, "xnli", "de", 1)
    shutil.rmtree(stale)
    shutil.copytree(bucket_dir(target, "panx", "de", 1), stale)  # replaced below
    shutil.rmtree(bucket_dir(target, "xquad", "de", 2))  # written anew below
    before = {p.relative_to(target).as_posix(): p.read_bytes()
              for p in sorted(target.rglob("*")) if p.is_file()}
    real, calls = fileio.os.replace, []

    def failing(src, dst):
        calls.append(dst)
        if len(calls) == fail_at:
            raise OSError(28, "No space left on device")
        real(src, dst)

    for fail_at in range(1, 4):
        calls.clear()
        monkeypatch.setattr(fileio.os, "replace", failing)
        with pytest.raises(OSError):
            import_hf(tmp_path / "ds", target, replace=True)
        monkeypatch.setattr(fileio.os, "replace", real)
        after = {p.relative_to(target).as_posix(): p.read_bytes()
                 for p in sorted(target.rglob("*")) if p.is_file()}
        assert after == before, fail_at
    fresh = tmp_path / "fresh"
    calls.clear()
    fail_at = 4
    monkeypatch.setattr(fileio.os, "replace", failing)
    with pytest.raises(OSError):
        import_hf(tmp_path / "ds", fresh)
    monkeypatch.setattr(fileio.os, "replace", real)
    assert not fresh.exists()


def test_a_set_drawn_from_the_hub_says_so_and_one_from_a_file_names_it():
    from fsxlt.sampling.hf_card import _source
    from fsxlt.tasks import get_task

    task = get_task("xnli")
    hub = {"sampler": "nway-kshot", "split": "dev",
           "source": {"file": "validation", "sha256": "ab" * 32}}
    assert _source(task, hub).startswith("`facebook/xnli` on the Hugging Face hub, split `dev`")
    local = {**hub, "source": {"file": "xnli.dev.de.tsv", "sha256": "cd" * 32}}
    assert _source(task, local).startswith("a local file, `xnli.dev.de.tsv` (its `dev` split")
