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
    zero_shot = sorted(studies["theirs"].glob("*/*/k0/zero-shot.json"))
    assert len(records) == len(record_files(studies["theirs"])) + len(zero_shot) == 13
    assert [r["path"] for r in records if r["k"] == 0] == ["xnli/de/k0/zero-shot.json"]
    row = records[0]
    source = (studies["theirs"] / row["path"]).read_text(encoding="utf-8")
    assert row["record"] == source and json.loads(source)["test_score"] == row["test_score"]
    predictions = load_dataset(str(studies["export"]), "predictions", split="predictions")
    icl = [r for r in predictions if "/icl/" in r["record"] and r["line"] == 1]
    assert icl and len(icl[0]["loglik"]) == 3
    card = (studies["export"] / "README.md").read_text(encoding="utf-8")
    for part in ("## The study", "## The arms", "## The buckets", "## Summary", "## Columns",
                 "--arm-prefix their-study", "name: test-sweep"):
        assert part in card
    # issue 62, item 4: each arm's encoder (a local folder by its name) and start by content
    fc = json.loads((studies["theirs"] / "xnli/de/k1/fc/00.json").read_text())
    assert (f"| fc | `encoder` (a local folder) | `{fc['model']['start']['id'][:28]}`, "
            "source-trained on en |") in card
    assert str(studies["theirs"].parent) not in card.split("```yaml")[0]


def test_import_is_byte_identical_write_once_and_marked(studies, tmp_path, capsys):
    runs = tmp_path / "runs"
    assert run_app(["runs", "import-hf", str(studies["export"]), "--out", str(runs)]) == 0
    assert "13 records imported" in capsys.readouterr().out
    imports = read_imports(runs)
    assert len(imports) == 13 and {i.prefix for i in imports.values()} == {"their-study"}
    assert (runs / "xnli/de/k0/their-study.zero-shot.json").read_bytes() == \
        (studies["theirs"] / "xnli/de/k0/zero-shot.json").read_bytes()
    for rel in imports:
        if rel.count("/") == 3:  # the K=0 record
            continue
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
    ("missing", "its records are not the 13 its fsxlt_results.json lists"),
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
    assert set(mine["arm"]) == {"full", ""} and set(theirs["arm"]) == {"fc", "icl", ""}


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


# --------------------------------------------------------------------------- issue 61:
# what comes back in is input: forged exports, all-or-nothing imports, one set of facts

def _forge(export: Path, tmp_path: Path, edit: Any, *, which: str = "/k1/fc/00.json",
           name: str = "forged") -> Path:
    """A copy of the export in which one record was edited by ``edit`` and everything else
    made consistent with it by fsxlt's own row builders (its row, path, predictions rows,
    cell hashes and manifest): a forgery only the record's own facts can give away."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from fsxlt.fileio import sha256_text
    from fsxlt.report.hf_results import _features, cell_hashes, record_row
    from fsxlt.study.runs import record_path_of

    copy = tmp_path / name
    shutil.copytree(export, copy)
    records = next((copy / "records").glob("*.parquet"))
    rows = pq.read_table(records).to_pylist()
    old = next(row for row in rows if row["path"].endswith(which))
    record = json.loads(old["record"])
    edit(record)
    text = json.dumps(record, indent=2) + "\n"
    try:
        path = record_path_of("", record).as_posix()
    except (TypeError, ValueError, KeyError):
        path = old["path"]
    new = record_row(path, text, record, old["predictions_sha256"])
    rows[rows.index(old)] = new
    for row, digest in zip(rows, [cell_hashes(rows)[(r["task"], r["language"], r["k"],
                                                    r["arm"])] for r in rows], strict=True):
        row["cell_buckets_sha256"] = digest
    pq.write_table(pa.Table.from_pylist(rows, schema=_features("records").arrow_schema), records)
    predictions = next((copy / "predictions").glob("*.parquet"))
    lines = pq.read_table(predictions).to_pylist()
    for line in lines:
        if line["record"] == old["path"]:
            line["record"] = path
    pq.write_table(pa.Table.from_pylist(lines, schema=_features("predictions").arrow_schema),
                   predictions)
    manifest = json.loads((copy / "fsxlt_results.json").read_text())
    manifest["records"].pop(old["path"])
    manifest["records"][path] = sha256_text(text)
    if old["path"] in manifest["predictions"]:
        manifest["predictions"][path] = manifest["predictions"].pop(old["path"])
    (copy / "fsxlt_results.json").write_text(json.dumps(manifest))
    return copy


def _set(*keys: str, value: Any) -> Any:
    def edit(record: dict[str, Any]) -> None:
        block = record
        for key in keys[:-1]:
            block = block.setdefault(key, {})
        block[keys[-1]] = value
    return edit


BAD_NAMES = ["..", ".", "a/b", "/abs", "..\\x", "a\x00b", "", "x\ny", ".hidden"]
FEW_BAD_NAMES = ["..", "a/b", "a\x00b"]  # every kind of escape, for the facts after the first
PLACED_FACTS = [("task",), ("language",), ("method",), ("bucket", "name"),
                ("bucket", "strategy"), ("regime", "name")]


def _tree(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes()
            for p in sorted(root.rglob("*")) if p.is_file()} if root.exists() else {}


@pytest.mark.parametrize("keys", PLACED_FACTS, ids=".".join)
def test_a_forged_name_is_refused_before_anything_is_written(studies, tmp_path, capsys, keys):
    runs = tmp_path / "deep" / "er" / "runs"
    for bad in BAD_NAMES if keys == ("task",) else FEW_BAD_NAMES:
        if bad == "" and keys[0] in ("bucket", "regime"):
            continue  # an empty strategy or bucket name is no strategy or name: plain
        forged = _forge(studies["export"], tmp_path, _set(*keys, value=bad),
                        name=f"forged-{BAD_NAMES.index(bad)}")
        capsys.readouterr()
        assert run_app(["runs", "import-hf", str(forged), "--out", str(runs)]) == 2, bad
        err = capsys.readouterr().err
        field_name = ".".join(keys) if keys[0] != "regime" else "regime.name"
        assert err.count("\n") == 1 and "Traceback" not in err, (bad, err)
        assert f"{field_name} is {bad!r}" in err and "nothing was written" in err, (bad, err)
        assert not (tmp_path / "deep").exists(), bad
        assert not any(p.name.endswith(".json") for p in tmp_path.glob("*.json"))


@pytest.mark.parametrize("edit, message", [
    (_set("k", value=-1), "k is -1, not a whole number"),
    (_set("bucket", "index", value=-3), "bucket.index is -3"),
    (_set("model", "start", "source_languages", value=["../x"]), "source_languages[0] is '../x'"),
    (_set("regime", "languages", value=["de", "a/b"]), "regime.languages[1] is 'a/b'"),
])
def test_every_fact_that_places_a_record_is_checked(studies, tmp_path, capsys, edit, message):
    forged = _forge(studies["export"], tmp_path, edit)
    runs = tmp_path / "runs"
    assert run_app(["runs", "import-hf", str(forged), "--out", str(runs)]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1 and not runs.exists()


def test_a_malformed_imports_file_refuses_the_import_leaving_the_directory(studies, tmp_path,
                                                                             capsys):
    runs = tmp_path / "runs"
    shutil.copytree(studies["ours"], runs)
    (runs / IMPORTS_FILE).write_text('{"format": "fsxlt-imports/1", "imports": []}')
    before = _tree(runs)
    assert run_app(["runs", "import-hf", str(studies["export"]), "--out", str(runs)]) == 2
    assert IMPORTS_FILE in capsys.readouterr().err
    assert _tree(runs) == before


def test_a_failure_at_any_write_leaves_the_directory_byte_identical(studies, tmp_path,
                                                                    monkeypatch):
    import fsxlt.fileio as fileio
    from fsxlt.report.hf_results import import_results

    runs = tmp_path / "runs"
    shutil.copytree(studies["ours"], runs)
    assert import_results(studies["export"], runs, prefix="first")
    (runs / "xnli/de/k1/first.fc/00.json").write_text("{}")  # replaced below
    before = _tree(runs)
    real, calls, fail_at = fileio.atomic_write_text, [], [0]

    def failing(path: Any, text: str) -> None:
        calls.append(path)
        if len(calls) == fail_at[0]:
            raise OSError(28, "No space left on device")
        real(path, text)

    monkeypatch.setattr(fileio, "atomic_write_text", failing)
    for prefix in ("first", "second"):  # over a listed arm (--replace) and into new ones
        counted = tmp_path / f"count-{prefix}"
        shutil.copytree(runs, counted)
        calls.clear()
        import_results(studies["export"], counted, prefix=prefix, replace=True)
        writes = len(calls)
        assert writes >= (2 if prefix == "first" else 20)
        for stage in range(1, writes + 1):
            calls.clear()
            fail_at[0] = stage
            with pytest.raises(OSError, match="No space"):
                import_results(studies["export"], runs, prefix=prefix, replace=True)
            assert _tree(runs) == before, (prefix, stage)
        fail_at[0] = 0
    fresh = tmp_path / "fresh"
    calls.clear()
    fail_at[0] = 5
    with pytest.raises(OSError):
        import_results(studies["export"], fresh, prefix="x")
    assert not fresh.exists()


def test_replace_removes_the_replaced_records_predictions_and_says_so(studies, tmp_path,
                                                                      capsys):
    runs = tmp_path / "runs"
    assert run_app(["runs", "import-hf", str(studies["export"]), "--out", str(runs)]) == 0
    record = runs / "xnli/de/k1/their-study.fc/00.json"
    stale = record.with_name("00.predictions.jsonl")
    assert stale.is_file()

    def no_predictions(rec: dict[str, Any]) -> None:
        rec["test_score"] = 0.5
    forged = _forge(studies["export"], tmp_path, no_predictions)
    import pyarrow as pa
    import pyarrow.parquet as pq

    from fsxlt.report.hf_results import _features

    for config in ("records", "predictions"):  # the forged record has no predictions
        path = next((forged / config).glob("*.parquet"))
        rows = pq.read_table(path).to_pylist()
        if config == "records":
            for row in rows:
                if row["path"] == "xnli/de/k1/fc/00.json":
                    row["predictions_sha256"] = ""
        else:
            rows = [r for r in rows if r["record"] != "xnli/de/k1/fc/00.json"]
        pq.write_table(pa.Table.from_pylist(rows, schema=_features(config).arrow_schema), path)
    manifest = json.loads((forged / "fsxlt_results.json").read_text())
    del manifest["predictions"]["xnli/de/k1/fc/00.json"]
    (forged / "fsxlt_results.json").write_text(json.dumps(manifest))
    capsys.readouterr()
    assert run_app(["runs", "import-hf", str(forged), "--out", str(runs),
                    "--arm-prefix", "their-study"]) == 2
    assert "--replace" in capsys.readouterr().err and stale.is_file()
    assert run_app(["runs", "import-hf", str(forged), "--out", str(runs),
                    "--arm-prefix", "their-study", "--replace"]) == 0
    err = capsys.readouterr().err
    assert "removed xnli/de/k1/their-study.fc/00.predictions.jsonl" in err
    assert not stale.exists() and json.loads(record.read_text())["test_score"] == 0.5


def test_two_records_of_one_bucket_in_a_cell_are_refused(studies, tmp_path, capsys):
    first = json.loads((studies["theirs"] / "xnli/de/k1/fc/00.json").read_text())
    forged = _forge(studies["export"], tmp_path,
                    _set("bucket", "sha256", value=first["bucket"]["sha256"]),
                    which="/k1/fc/01.json")
    runs = tmp_path / "runs"
    assert run_app(["runs", "import-hf", str(forged), "--out", str(runs)]) == 2
    err = capsys.readouterr().err
    assert "are runs of one bucket" in err and "xnli/de/k1/fc/00.json" in err
    assert not runs.exists()


def test_compare_never_pairs_a_bucket_twice(studies, tmp_path, capsys):
    mixed = tmp_path / "mixed"
    shutil.copytree(studies["ours"], mixed)
    assert run_app(["runs", "import-hf", str(studies["export"]), "--out", str(mixed)]) == 0
    one, two = mixed / "xnli/de/k1/full/00.json", mixed / "xnli/de/k1/full/01.json"
    record = json.loads(two.read_text())
    record["bucket"]["sha256"] = json.loads(one.read_text())["bucket"]["sha256"]
    two.write_text(json.dumps(record))
    capsys.readouterr()
    assert run_app(["report", str(mixed), "--compare", "full", "their-study.fc"]) == 2
    err = capsys.readouterr().err.splitlines()[-1]
    assert "xnli/de/k1: full ran bucket" in err and "twice (buckets 00, 01)" in err


def test_export_places_rows_by_their_records_facts(studies, tmp_path, capsys):
    moved = tmp_path / "moved"
    shutil.copytree(studies["theirs"], moved)
    (moved / "xnli/de/k2/fc").rename(moved / "xnli/de/k2/fc-renamed")
    assert run_app(["runs", "export", str(moved), str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert "fc-renamed/00.json: its own facts" in err and "xnli/de/k2/fc/00.json" in err
    assert err.count("\n") == 1 and not (tmp_path / "out").exists()


def test_a_report_over_an_imported_study_keeps_its_zero_shot_and_gains(studies, tmp_path):
    from fsxlt.report.records import load_records
    from fsxlt.report.tables import aggregate

    runs = tmp_path / "runs"
    shutil.copytree(studies["ours"], runs)  # a local study of its own start beside it
    local = json.loads((runs / "xnli/de/k0/zero-shot.json").read_text())
    local["test_score"] = 0.01  # so that a mix-up of starts shows
    (runs / "xnli/de/k0/zero-shot.json").write_text(json.dumps(local))
    assert run_app(["runs", "import-hf", str(studies["export"]), "--out", str(runs)]) == 0
    original = aggregate(load_records(studies["theirs"]))
    imported = aggregate(load_records(runs))
    imported = imported[imported["arm"].str.startswith("their-study.")]
    columns = ["language", "k", "mean", "zero_shot", "gain"]
    fc = original[original["arm"] == "fc"][columns].reset_index(drop=True)
    theirs = imported[imported["arm"] == "their-study.fc"][columns].reset_index(drop=True)
    assert 0 in set(fc["k"]) and fc["zero_shot"].notna().all()
    pd_testing = pytest.importorskip("pandas.testing")
    pd_testing.assert_frame_equal(fc, theirs)


def test_analyses_take_an_imported_arm_as_an_arm(studies, tmp_path, capsys):
    """Issue 62, item 3: analyze selection over a runs directory holding another study's
    records reads them as the arm ``<prefix>.<arm>``, never as runs of our buckets."""
    from fsxlt.analysis.adapt_selection import read_adapt_records, selection_table

    mixed = tmp_path / "mixed"
    shutil.copytree(studies["ours"], mixed)
    shutil.copytree(studies["theirs"] / "xnli/de/k1/fc", mixed / "xnli/de/k1/fc")  # ours too
    assert run_app(["runs", "import-hf", str(studies["export"]), "--out", str(mixed)]) == 0
    capsys.readouterr()
    assert run_app(["analyze", "selection", str(mixed), "--out", str(tmp_path / "sel")]) == 0
    table = selection_table(read_adapt_records(mixed), n_boot=50)
    arms = set(table["arm"])
    assert {"full", "fc", "their-study.fc"} <= arms
    theirs = table[(table["arm"] == "their-study.fc") & (table["k"] == 1)]
    local = table[(table["arm"] == "fc") & (table["k"] == 1)]
    assert theirs["test_mean"].tolist() == local["test_mean"].tolist()  # the same runs
