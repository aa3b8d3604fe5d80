"""What comes from a shared dataset is input (issue 50, items 1-6): ``fsxlt buckets
import-hf`` takes no path from the dataset, verifies every split of every set by content,
parses every manifest at the store's manifest boundary, imports every config its card
lists or refuses, says one line; and two exports of one folder name never share
``datasets``' cache. Each case is written as its class: every split, every field that
names a place, every way a manifest can be broken."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from fsxlt.cli import run_app
from fsxlt.sampling.hf_dataset import export_hf
from tests.conftest import write_pair_tsv
from tests.test_hf_dataset import store  # noqa: F401  (the module's fixture: every kind)


@pytest.fixture(scope="module")
def dataset(store, tmp_path_factory) -> Path:  # noqa: F811
    out = tmp_path_factory.mktemp("shared") / "ds"
    export_hf(store, out)
    return out


def tree(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file()}


def import_fails(source: Path, out: Path, capfd, says: str, *extra: str) -> str:
    """import-hf refuses in one line naming ``says`` and writes nothing at ``out``."""
    capfd.readouterr()
    status = run_app(["buckets", "import-hf", str(source), "--out", str(out), *extra])
    err = capfd.readouterr().err.strip().splitlines()
    assert status == 2 and len(err) == 1, err
    assert says in err[0] and "Traceback" not in err[0], err[0]
    return err[0]


def every_split(dataset: Path) -> list[tuple[str, str, Path]]:
    """(config, split, parquet file) of every split (a file is ``<split>-<hash>.parquet``)."""
    return [(path.parent.name, path.stem.split("-")[0], path)
            for path in sorted(dataset.glob("*/*.parquet"))]


def test_every_split_of_every_set_is_verified(dataset, tmp_path, capfd):
    """An edited row in any split (a bucket, the remaining dev set model selection uses, a
    held-out test set, a FewCLUE bucket's own dev set) is refused, naming the config and
    the split; the manifest is never rewritten to fit."""
    splits = every_split(dataset)
    names = {split for _config, split, _path in splits}
    assert {"bucket_00", "bucket_all", "bucket_00_dev", "test", "dev_remaining"} <= names
    copy = tmp_path / "ds"
    shutil.copytree(dataset, copy)
    for config, split, path in splits:
        target = copy / path.relative_to(dataset)
        original = target.read_bytes()
        table = pq.read_table(target)
        rows = table.to_pylist()
        rows[-1]["id"] = str(rows[-1]["id"]) + "-edited"
        pq.write_table(pa.Table.from_pylist(rows, schema=table.schema), target)
        line = import_fails(copy, tmp_path / "out", capfd, f"config {config}")
        assert f"split {split} " in line and "does not hold the examples" in line, line
        assert not (tmp_path / "out").exists()
        target.write_bytes(original)
    assert run_app(["buckets", "import-hf", str(copy), "--out", str(tmp_path / "out")]) == 0


def test_a_manifest_edited_to_fit_its_split_is_refused(dataset, tmp_path, capfd):
    """A count or note of the manifest changed (no split changed): what the splits give is
    not what the manifest says, and the manifest is not rewritten to fit."""
    for edit, field in ((lambda m: m["dev_remaining"].update(n=999), "dev_remaining"),
                        (lambda m: m.update(n_buckets=40), "n_buckets"),
                        (lambda m: m.update(seed=12345), "seed")):
        copy = tmp_path / f"ds-{field}"
        shutil.copytree(dataset, copy)
        path = copy / "xnli-de-k1" / "fsxlt_manifest.json"
        manifest = json.loads(path.read_text(encoding="utf-8"))
        edit(manifest)
        path.write_text(json.dumps(manifest), encoding="utf-8")
        says = f"its manifest's {field} is not what its splits give" if field != "seed" \
            else "split bucket_00 does not hold the examples"
        import_fails(copy, tmp_path / "out", capfd, says)
        assert not (tmp_path / "out").exists()


# every field of a manifest that names a place, each pointing out of --out
PLACE_EDITS = {
    "language": (lambda m: m.update(language="../../elsewhere"), "language is"),
    "bucket file": (lambda m: m["buckets"][0].update(file="../../x.json"), "buckets[0].file"),
    "bucket name": (lambda m: m["buckets"][0].update(name="/tmp/x"), "buckets[0].name"),
    "strategy": (lambda m: m.update(strategy={"name": "../../x"}), "strategy is"),
    "remaining file": (lambda m: m["dev_remaining"].update(file="/tmp/r.jsonl"),
                       "dev_remaining is"),
    "task": (lambda m: m.update(task="../xnli"), "task is"),
}


@pytest.mark.parametrize("edit", sorted(PLACE_EDITS))
def test_no_place_comes_from_the_manifest_but_plain_names(dataset, tmp_path, capfd, edit):
    copy = tmp_path / "ds"
    shutil.copytree(dataset, copy)
    path = copy / "xnli-de-k1" / "fsxlt_manifest.json"
    manifest = json.loads(path.read_text(encoding="utf-8"))
    PLACE_EDITS[edit][0](manifest)
    path.write_text(json.dumps(manifest), encoding="utf-8")
    before = tree(tmp_path.parent)
    line = import_fails(copy, tmp_path / "out", capfd, PLACE_EDITS[edit][1])
    assert "xnli-de-k1" in line and "fsxlt_manifest.json" in line
    assert tree(tmp_path.parent) == before  # nothing anywhere


def test_no_place_comes_from_a_file_of_the_dataset(dataset, tmp_path, capfd):
    """0.6.0 placed each set where the dataset's fsxlt_sets.json said (``../../x``, an
    absolute path), and --replace rewrote another store's set: a set's place is now its
    own task, language, K (and strategy) under --out, whatever the dataset says."""
    other = tmp_path / "other"
    assert run_app(["sample", "--task", "xnli", "--lang", "de", "-k", "1", "--n-buckets", "3",
                    "--seed", "7", "--data", str(write_pair_tsv(
                        tmp_path / "dev.tsv", {"entailment": 9, "neutral": 9,
                                               "contradiction": 9})),
                    "--out", str(other)]) == 0
    theirs = tree(other)
    copy = tmp_path / "ds"
    shutil.copytree(dataset, copy)
    (copy / "fsxlt_sets.json").write_text(json.dumps(
        {"xnli-de-k1": "../other/xnli/de/k1", "panx-de-k1": str(tmp_path / "abs/panx")}))
    assert run_app(["buckets", "import-hf", str(copy), "--out", str(tmp_path / "imp"),
                    "--replace"]) == 0
    assert tree(other) == theirs and not (tmp_path / "abs").exists()
    assert (tmp_path / "imp/xnli/de/k1/manifest.json").is_file()
    assert (tmp_path / "imp/panx/de/k1/manifest.json").is_file()


@pytest.mark.parametrize("name, edit, says", [
    ("config name", lambda c: c.replace("config_name: xnli-de-k1", "config_name: ../xnli"),
     "config_name '../xnli', not a plain name"),
    ("data file outside", lambda c: c.replace("path: xnli-de-k1/bucket_00",
                                              "path: ../elsewhere/bucket_00"),
     "has data file '../elsewhere/bucket_00"),
    ("data file of another config", lambda c: c.replace("path: xnli-de-k1/bucket_00",
                                                        "path: panx-de-k1/bucket_00"),
     "a split must be one parquet file in xnli-de-k1/"),
    ("no front matter", lambda c: c.split("---", 2)[2], "no configs in its YAML front matter"),
])
def test_every_file_name_the_card_gives_stays_in_its_config(dataset, tmp_path, capfd, name,
                                                            edit, says):
    copy = tmp_path / "ds"
    shutil.copytree(dataset, copy)
    card = copy / "README.md"
    card.write_text(edit(card.read_text(encoding="utf-8")), encoding="utf-8")
    import_fails(copy, tmp_path / "out", capfd, says)
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("text, says", [
    ("{not json", "invalid JSON"),
    ("[1, 2]", "not an fsxlt bucket manifest"),
    ("MISSING_TASK", "task is None"),
    ("BUCKETS_OOPS", "buckets is 'oops', not a list of buckets"),
    ("K_TEXT", "k is 'four', not a whole number"),
    ("UNKNOWN_TASK", "unknown task"),
])
def test_a_bad_manifest_in_a_dataset_is_one_line_naming_config_and_field(dataset, tmp_path,
                                                                         capfd, text, says):
    copy = tmp_path / "ds"
    shutil.copytree(dataset, copy)
    path = copy / "panx-de-k1" / "fsxlt_manifest.json"
    manifest = json.loads(path.read_text(encoding="utf-8"))
    edits = {"MISSING_TASK": lambda m: m.pop("task"),
             "BUCKETS_OOPS": lambda m: m.update(buckets="oops"),
             "K_TEXT": lambda m: m.update(k="four"),
             "UNKNOWN_TASK": lambda m: m.update(task="no-such-task")}
    if text in edits:
        edits[text](manifest)
        text = json.dumps(manifest)
    path.write_text(text, encoding="utf-8")
    line = import_fails(copy, tmp_path / "out", capfd, says)
    assert "panx-de-k1" in line and "fsxlt_manifest.json" in line


def test_every_config_the_card_lists_is_imported_or_refused(dataset, tmp_path, capfd):
    copy = tmp_path / "ds"
    shutil.copytree(dataset, copy)
    (copy / "xquad-de-k2" / "fsxlt_manifest.json").unlink()
    import_fails(copy, tmp_path / "out", capfd, "config xquad-de-k2, which the card lists, "
                 "has no xquad-de-k2/fsxlt_manifest.json")
    shutil.rmtree(copy)
    shutil.copytree(dataset, copy)
    card = copy / "README.md"  # a config dropped from the card, its files left behind
    text = card.read_text(encoding="utf-8")
    start = text.index("- config_name: xquad-de-k2")
    end = min(i for i in (text.find("- config_name:", start + 1), text.index("license:"))
              if i > 0)
    card.write_text(text[:start] + text[end:], encoding="utf-8")
    import_fails(copy, tmp_path / "out", capfd, "xquad-de-k2/fsxlt_manifest.json belongs to "
                 "no config the card lists")
    assert not (tmp_path / "out").exists()


def test_a_cut_parquet_file_is_one_line_on_stderr(dataset, tmp_path, capfd):
    copy = tmp_path / "ds"
    shutil.copytree(dataset, copy)
    path = next(p for config, split, p in every_split(copy)
                if (config, split) == ("xnli-de-k1", "bucket_01"))
    path.write_bytes(path.read_bytes()[: len(path.read_bytes()) // 2])
    line = import_fails(copy, tmp_path / "out", capfd, "split bucket_01")
    assert "does not read as its examples" in line
    assert not (tmp_path / "out").exists()


def test_two_exports_of_one_folder_name_load_their_own_buckets(tmp_path, monkeypatch):
    """datasets caches a local folder by its name and its files' names: each export's file
    names carry their content's hash, so loading b/shared after a/shared (one cache, the
    same relative name) gives b's buckets, not a's."""
    import datasets

    data = write_pair_tsv(tmp_path / "dev.tsv", {"entailment": 9, "neutral": 9,
                                                 "contradiction": 9})
    ids = {}
    for seed, side in ((1, "a"), (2, "b")):
        bucket_store = tmp_path / side / "buckets"
        assert run_app(["sample", "--task", "xnli", "--lang", "de", "-k", "2", "--n-buckets",
                        "2", "--seed", str(seed), "--data", str(data), "--out",
                        str(bucket_store)]) == 0
        export_hf(bucket_store, tmp_path / side / "shared")
        manifest = json.loads((bucket_store / "xnli/de/k2/manifest.json").read_text())
        monkeypatch.chdir(tmp_path / side)
        loaded = datasets.load_dataset("shared", "xnli-de-k2", cache_dir=str(tmp_path / "c"))
        ids[side] = [row["id"] for row in loaded["bucket_00"]]
        assert ids[side] == manifest["buckets"][0]["ids"]
    assert ids["a"] != ids["b"]
