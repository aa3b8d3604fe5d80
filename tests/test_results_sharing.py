"""A study's results as a Hugging Face dataset (issue 53): ``fsxlt runs export`` writes
what ``datasets`` reads offline, ``fsxlt runs import-hf`` brings the records back byte for
byte (every row verified, write-once, marked as imported), and ``report --compare`` pairs
an imported arm with a local one by bucket hash, as if both had run here."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from fsxlt.cli import run_app
from fsxlt.study.imports import IMPORTS_FILE, read_imports
from fsxlt.study.runs import record_files
from tests.icl_fixtures import make_causal_lm_dir
from tests.sweep_fixtures import build_study, sweep_config, write_config

CELLS = {"xnli": {"languages": ["de"], "k": [1, 2]}}


@pytest.fixture(scope="module")
def study(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("results-study")
    paths = build_study(root)
    paths["lm"] = make_causal_lm_dir(root / "lm", "llama")
    return paths


def sweep(study: dict[str, Path], out: Path, methods: list[str], **extra: Any) -> Path:
    config = write_config(out.parent / f"{out.name}.yaml", sweep_config(
        study, out, methods=methods, n_buckets=3, max_epochs=2, tasks=CELLS, **extra))
    assert run_app(["sweep", str(config), "--workers", "0", "--threads", "1",
                    "--save-predictions"]) == 0
    return config


@pytest.fixture(scope="module")
def studies(study, tmp_path_factory) -> dict[str, Path]:
    """Ours (full) and theirs (fc and an ICL arm) on the same buckets, theirs exported."""
    root = tmp_path_factory.mktemp("results")
    sweep(study, root / "ours", ["full"])
    config = sweep(study, root / "theirs", ["fc"],
                   icl={"model": str(study["lm"]), "test_limit": 6, "zero_shot": False})
    export = root / "their-study"  # the folder's name: the default arm prefix on import
    assert run_app(["runs", "export", str(root / "theirs"), str(export),
                    "--config", str(config), "--name", "their-study"]) == 0
    return {"root": root, "ours": root / "ours", "theirs": root / "theirs", "export": export}


def test_datasets_reads_the_export_offline_with_typed_features(studies, monkeypatch):
    from datasets import load_dataset

    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    records = load_dataset(str(studies["export"]), "records", split="records")
    assert records.features["k"].dtype == "int32"
    assert records.features["test_score"].dtype == "float64"
    assert len(records) == len(record_files(studies["theirs"])) == 12
    row = records[0]
    source = (studies["theirs"] / row["path"]).read_text(encoding="utf-8")
    assert row["record"] == source and json.loads(source)["test_score"] == row["test_score"]
    predictions = load_dataset(str(studies["export"]), "predictions", split="predictions")
    icl = [r for r in predictions if "/icl/" in r["record"] and r["line"] == 1]
    assert icl and len(icl[0]["loglik"]) == 3
    card = (studies["export"] / "README.md").read_text(encoding="utf-8")
    for part in ("## The study", "## The buckets", "## Summary", "## Columns",
                 "--arm-prefix their-study", "name: test-sweep"):
        assert part in card


def test_import_is_byte_identical_write_once_and_marked(studies, tmp_path, capsys):
    runs = tmp_path / "runs"
    assert run_app(["runs", "import-hf", str(studies["export"]), "--out", str(runs)]) == 0
    assert "12 records imported" in capsys.readouterr().out
    imports = read_imports(runs)
    assert len(imports) == 12 and {i.prefix for i in imports.values()} == {"their-study"}
    for rel in imports:
        task, lang, k, arm, name = rel.split("/")
        own = arm.split(".", 1)[1]
        original = studies["theirs"] / task / lang / k / own / name
        assert (runs / rel).read_bytes() == original.read_bytes()
        pred = name.replace(".json", ".predictions.jsonl")
        assert (runs / task / lang / k / arm / pred).read_bytes() == \
            (original.parent / pred).read_bytes()
    assert run_app(["runs", "import-hf", str(studies["export"]), "--out", str(runs)]) == 0
    assert "0 records imported" in capsys.readouterr().out
    assert run_app(["report", str(runs), "--format", "csv"]) == 0
    assert "their-study.fc" in capsys.readouterr().out
    first = sorted(imports)[0]
    (runs / first).write_text((runs / first).read_text().replace('"ok"', '"ok" '))
    capsys.readouterr()
    run_app(["report", str(runs)])
    assert "changed since it was imported" in capsys.readouterr().err


def _edited(export: Path, tmp_path: Path, change: Any) -> Path:
    """A copy of the export whose records rows went through ``change``."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    copy = tmp_path / "edited"
    shutil.copytree(export, copy)
    path = next((copy / "records").glob("*.parquet"))
    table = pq.read_table(path)
    rows = table.to_pylist()
    change(rows)
    pq.write_table(pa.Table.from_pylist(rows, schema=table.schema), path)
    return copy


@pytest.mark.parametrize("case, message", [
    ("score", "test_score not what its record says"),
    ("record", "the record's bytes are not those fsxlt_results.json lists"),
    ("path", "the record's own facts place it at"),
    ("missing", "its records are not the 12 its fsxlt_results.json lists"),
])
def test_an_edited_row_is_refused_in_one_line(studies, tmp_path, capsys, case, message):
    def change(rows: list[dict[str, Any]]) -> None:
        if case == "score":
            rows[0]["test_score"] += 0.01
        elif case == "record":
            rows[0]["record"] = rows[0]["record"].replace('"ok"', '"ok" ')
        elif case == "path":
            rows[0]["path"] = "../../../escape.json"
        else:
            rows.pop()

    edited = _edited(studies["export"], tmp_path, change)
    if case == "path":  # the manifest edited alike: the record's own facts still decide
        manifest = json.loads((edited / "fsxlt_results.json").read_text())
        first = sorted(manifest["records"])[0]
        manifest["records"]["../../../escape.json"] = manifest["records"].pop(first)
        (edited / "fsxlt_results.json").write_text(json.dumps(manifest))
    runs = tmp_path / "runs"
    assert run_app(["runs", "import-hf", str(edited), "--out", str(runs)]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1
    assert not runs.exists() and not (tmp_path / "escape.json").exists()


def test_two_same_named_exports_load_their_own_rows(studies, tmp_path, monkeypatch):
    from datasets import load_dataset

    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    other = tmp_path / "other" / "export"
    assert run_app(["runs", "export", str(studies["ours"]), str(other)]) == 0
    cache = tmp_path / "cache"
    mine = load_dataset(str(other), "records", split="records", cache_dir=str(cache))
    theirs = load_dataset(str(studies["export"]), "records", split="records",
                          cache_dir=str(cache))
    assert set(mine["arm"]) == {"full"} and set(theirs["arm"]) == {"fc", "icl"}


def compare_csv(runs: Path, a: str, b: str, capsys) -> list[dict[str, str]]:
    capsys.readouterr()
    assert run_app(["report", str(runs), "--compare", a, b, "--format", "csv",
                    "--bootstrap", "300"]) == 0
    import csv
    import io

    return list(csv.DictReader(io.StringIO(capsys.readouterr().out)))


def test_compare_pairs_an_imported_arm_as_a_local_one(studies, tmp_path, capsys):
    both = tmp_path / "both"
    shutil.copytree(studies["ours"], both)
    shutil.copytree(studies["theirs"] / "xnli/de/k1/fc", both / "xnli/de/k1/fc")
    shutil.copytree(studies["theirs"] / "xnli/de/k2/fc", both / "xnli/de/k2/fc")
    local = compare_csv(both, "full", "fc", capsys)
    mixed = tmp_path / "mixed"
    shutil.copytree(studies["ours"], mixed)
    assert run_app(["runs", "import-hf", str(studies["export"]), "--out", str(mixed),
                    "--arm-prefix", "theirs"]) == 0
    imported = compare_csv(mixed, "full", "theirs.fc", capsys)
    assert imported == local and [row["n"] for row in local] == ["3", "3"]
    run_app(["report", str(mixed), "--compare", "full", "theirs.fc", "--bootstrap", "300"])
    assert "paired by bucket hash: 6 buckets in 2 cells" in capsys.readouterr().err


def test_a_study_on_another_bucket_set_is_refused_naming_the_cells(study, studies, tmp_path,
                                                                   capsys):
    from fsxlt.sampling.set_files import read_data_file
    from fsxlt.sampling.store import read_bucket
    from fsxlt.tasks import get_task
    from tests.train_fixtures import NLI_LABELS, write_bucket_set

    buckets = tmp_path / "buckets"
    shutil.copytree(study["buckets"], buckets)
    k1 = buckets / "xnli/de/k1"
    drawn = [read_bucket(k1 / f"0{i}.json").examples for i in range(5)]
    dev = read_data_file(k1 / "dev-remaining.jsonl", get_task("xnli"), "de", None)
    shutil.rmtree(k1)
    write_bucket_set(buckets, "xnli", "de", 1, drawn[::-1], list(NLI_LABELS),
                     dev_remaining=dev)
    other = dict(study, buckets=buckets)
    sweep(other, tmp_path / "redrawn", ["fc"])
    assert run_app(["runs", "export", str(tmp_path / "redrawn"), str(tmp_path / "exp")]) == 0
    mixed = tmp_path / "mixed"
    shutil.copytree(studies["ours"], mixed)
    assert run_app(["runs", "import-hf", str(tmp_path / "exp"), "--out", str(mixed),
                    "--arm-prefix", "redrawn"]) == 0
    capsys.readouterr()
    assert run_app(["report", str(mixed), "--compare", "full", "redrawn.fc"]) == 2
    err = capsys.readouterr().err
    refusal = err.splitlines()[-1]  # after the report's note on the two sets
    assert refusal.endswith("full and redrawn.fc do not pair bucket for bucket in 1 cells: "
                            "xnli/de/k1 (1 of 5 buckets pair: another bucket set)")
    assert IMPORTS_FILE in {p.name for p in mixed.iterdir()}


def test_export_and_import_keep_their_folders_apart(studies, capsys):
    ours = studies["ours"]
    assert run_app(["runs", "export", str(ours), str(ours / "export")]) == 2
    assert "lies inside the runs directory" in capsys.readouterr().err
    assert run_app(["runs", "import-hf", str(studies["export"]), "--out",
                    str(studies["export"] / "runs")]) == 2
    assert "lies inside the dataset folder" in capsys.readouterr().err
    assert not (ours / "export").exists() and not (studies["export"] / "runs").exists()

