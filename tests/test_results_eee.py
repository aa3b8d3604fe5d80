"""A study's results as Every Eval Ever records (issue 75): ``fsxlt runs export --format
eee`` writes what every-eval-ever 0.3.0's own validator accepts, spread over shot buckets
stated as such; ``fsxlt runs import-eee`` brings them back as arms whose report cells are
the original's, and refuses in one line, writing nothing, what does not carry fsxlt's
bucket fields or does not agree with itself."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from fsxlt.cli import run_app
from fsxlt.fileio import sha256_text
from tests.eee_package import eee_root, validate_tree
from tests.icl_fixtures import make_causal_lm_dir
from tests.sweep_fixtures import build_study, sweep_config, write_config

CELLS = {"xnli": {"languages": ["de"], "k": [1, 2]}}


@pytest.fixture(scope="module")
def studies(tmp_path_factory) -> dict[str, Path]:
    """A sweep (an encoder arm and an ICL arm, predictions saved) and its EEE export."""
    root = tmp_path_factory.mktemp("eee")
    study = build_study(root)
    study["lm"] = make_causal_lm_dir(root / "lm", "llama")
    runs = root / "theirs"
    config = write_config(root / "theirs.yaml", sweep_config(
        study, runs, methods=["fc"], n_buckets=3, max_epochs=2, tasks=CELLS,
        icl={"model": str(study["lm"]), "test_limit": 6, "zero_shot": False}))
    assert run_app(["sweep", str(config), "--workers", "0", "--threads", "1",
                    "--save-predictions"]) == 0
    export = root / "their-eee"
    assert run_app(["runs", "export", str(runs), str(export), "--format", "eee",
                    "--organization", "Test Lab"]) == 0
    return {"root": root, "runs": runs, "export": export}


def _aggregates(folder: Path) -> dict[str, dict]:
    found = {}
    for path in sorted((folder / "data").rglob("*.json")):
        data = json.loads(path.read_text(encoding="utf-8"))
        details = data["evaluation_results"][0]["score_details"]["details"]
        found[data["evaluation_results"][0]["evaluation_name"] + "/"
              + details.get("fsxlt_arm", details["fsxlt_unit"])] = data
    return found


def test_the_export_is_valid_under_every_eval_ever_s_own_validator(studies):
    assert validate_tree(studies["export"]) == []
    files = sorted(p.relative_to(studies["export"]).as_posix()
                   for p in (studies["export"] / "data").rglob("*") if p.is_file())
    assert len(files) == 9  # 2 K x 2 arms, each an aggregate and its samples; zero-shot
    assert all(f.startswith("data/xnli/local/") for f in files)


def test_a_cell_states_its_spread_over_shot_buckets(studies):
    from fsxlt.report.tables import mean_interval

    cells = _aggregates(studies["export"])
    zero = cells.pop("fsxlt_xnli_de_k0/zero-shot")
    (result,) = zero["evaluation_results"]
    record = json.loads((studies["runs"] / "xnli/de/k0/zero-shot.json").read_text())
    assert result["score_details"]["score"] == record["test_score"]
    assert json.loads(result["score_details"]["details"]["fsxlt_record"]) == record
    assert set(cells) == {"fsxlt_xnli_de_k1/fc", "fsxlt_xnli_de_k2/fc",
                          "fsxlt_xnli_de_k1/icl", "fsxlt_xnli_de_k2/icl"}
    for name, data in cells.items():
        arm, k = name.split("/")[1], name.split("/")[0].rsplit("_k", 1)[1]
        cell, *buckets = data["evaluation_results"]
        records = [json.loads((studies["runs"] / f"xnli/de/k{k}/{arm}/{i:02d}.json")
                              .read_text()) for i in range(3)]
        scores = np.array([r["test_score"] for r in records])
        assert [b["score_details"]["score"] for b in buckets] == list(scores)
        assert cell["score_details"]["score"] == pytest.approx(scores.mean(), abs=1e-15)
        spread = cell["score_details"]["uncertainty"]
        assert spread["num_samples"] == 3
        assert spread["standard_deviation"] == pytest.approx(np.std(scores, ddof=1))
        assert "over 3 shot buckets" in spread["standard_error"]["method"]
        problem = mean_interval(100 * scores, f"xnli/{arm}/de/{k}")[2]
        assert problem and "confidence_interval" not in spread  # 3 buckets: too few
        details = cell["score_details"]["details"]
        hashes = [r["bucket"]["sha256"] for r in records]
        assert json.loads(details["fsxlt_bucket_sha256s"]) == hashes
        assert details["fsxlt_buckets_sha256"] == sha256_text("\n".join(sorted(hashes)))
        assert details["fsxlt_unit"] == "shot bucket"
        for bucket, record, index in zip(buckets, records, range(3), strict=True):
            assert bucket["evaluation_name"] == f"{name.split('/')[0]}_b{index:02d}"
            bucket_details = bucket["score_details"]["details"]
            assert bucket_details["fsxlt_bucket_sha256"] == record["bucket"]["sha256"]
            assert json.loads(bucket_details["fsxlt_record"]) == record
        assert data["eval_library"]["name"] == "fsxlt"
        assert data["model_info"]["additional_details"]["fsxlt_start"]
        assert data["source_metadata"]["source_organization_name"] == "Test Lab"


def test_an_interval_is_the_report_s_own_in_the_metric_s_unit():
    """Where the report prints an interval (20 buckets here), the record states it, as a
    fraction, with its resamples; the cell is seeded as the report seeds it."""
    from fsxlt.report.eee import Cell, _uncertainty
    from fsxlt.report.tables import BOOTSTRAP, mean_interval

    scores = np.random.default_rng(3).uniform(0.6, 0.8, size=20)
    spread = _uncertainty(scores, Cell(("panx", "de", 4, "full"), []))
    low, high, problem = mean_interval(100 * scores, "panx/full/de/4")
    assert not problem and spread["num_bootstrap_samples"] == BOOTSTRAP
    interval = spread["confidence_interval"]
    assert (interval["lower"], interval["upper"]) == pytest.approx((low / 100, high / 100))
    assert interval["lower"] < scores.mean() < interval["upper"]
    assert "over 20 shot buckets" in interval["method"]


def test_samples_rows_are_one_per_bucket_and_test_example(studies):
    for path in (studies["export"] / "data").rglob("*_samples.jsonl"):
        rows = [json.loads(line) for line in path.read_text().splitlines()]
        aggregate = json.loads(path.with_name(path.name.replace("_samples.jsonl", ".json"))
                               .read_text())
        results = {r["evaluation_result_id"]: r for r in aggregate["evaluation_results"][1:]}
        by_bucket: dict[str, list] = {}
        for row in rows:
            assert row["evaluation_result_id"] in results
            by_bucket.setdefault(row["metadata"]["fsxlt_bucket_sha256"], []).append(row)
            assert row["input"]["raw"] and row["input"]["choices"]
        assert len(by_bucket) == 3
        for result_id, result in results.items():
            mine = [r for r in rows if r["evaluation_result_id"] == result_id]
            accuracy = np.mean([r["evaluation"]["score"] for r in mine])  # XNLI: a mean
            assert accuracy == pytest.approx(result["score_details"]["score"])


def test_the_round_trip_gives_the_original_s_cells(studies, tmp_path, capsys):
    runs = tmp_path / "runs"
    assert run_app(["runs", "import-eee", str(studies["export"]), "--out", str(runs)]) == 0
    assert "13 records imported" in capsys.readouterr().out
    for rel in ("xnli/de/k1/their-eee.fc/00.json", "xnli/de/k2/their-eee.icl/02.json"):
        original = studies["runs"] / rel.replace("their-eee.", "")
        assert (runs / rel).read_bytes() == original.read_bytes()
    for folder, out in ((studies["runs"], tmp_path / "a"), (runs, tmp_path / "b")):
        assert run_app(["report", str(folder), "--out", str(out)]) == 0
    original, back = (pd.read_csv(tmp_path / side / "cells.csv") for side in "ab")
    columns = ["task", "language", "k", "n", "mean", "std", "ci_low", "ci_high", "ci_problem",
               "min", "max", "zero_shot", "gain", "missing", "metric"]
    assert back["arm"].tolist() == ["their-eee." + arm for arm in original["arm"]]
    pd.testing.assert_frame_equal(original[columns], back[columns])
    capsys.readouterr()
    assert run_app(["runs", "import-eee", str(studies["export"]), "--out", str(runs)]) == 0
    assert "0 records imported" in capsys.readouterr().out  # write-once: already done


def _copy(studies: dict, tmp_path: Path) -> tuple[Path, Path]:
    copy = tmp_path / "copy"
    shutil.copytree(studies["export"], copy)
    cells = [path for path in sorted((copy / "data").rglob("*.json"))
             if '"fsxlt_unit": "shot bucket"' in path.read_text()]
    return copy, cells[0]


def _edit(path: Path, change) -> None:
    data = json.loads(path.read_text())
    change(data)
    path.write_text(json.dumps(data))


def _reseal(result: dict, change) -> None:
    """Change a bucket's embedded record and give it its new sha256 (a forger's care)."""
    details = result["score_details"]["details"]
    record = json.loads(details["fsxlt_record"])
    change(record)
    details["fsxlt_record"] = json.dumps(record)
    details["fsxlt_record_sha256"] = sha256_text(details["fsxlt_record"])


def _drop_bucket_fields(data: dict) -> None:
    for key in ("fsxlt_buckets_sha256", "fsxlt_bucket_sha256s"):
        del data["evaluation_results"][0]["score_details"]["details"][key]


def _edit_record(data: dict) -> None:
    details = data["evaluation_results"][1]["score_details"]["details"]
    details["fsxlt_record"] = details["fsxlt_record"].replace('"test_score": ', '"test_score": 1')


def _bad_task(data: dict) -> None:
    _reseal(data["evaluation_results"][1], lambda record: record.update(task="../x"))


def _other_bucket(data: dict) -> None:
    _reseal(data["evaluation_results"][1],
            lambda record: record["bucket"].update(sha256="0" * 64))


def _cell_score(data: dict) -> None:
    data["evaluation_results"][0]["score_details"]["score"] += 0.01


def _bucket_hashes(data: dict) -> None:
    details = data["evaluation_results"][0]["score_details"]["details"]
    details["fsxlt_buckets_sha256"] = "f" * 64


@pytest.mark.parametrize("change, says", [
    (_drop_bucket_fields, "without fsxlt's bucket fields (fsxlt_buckets_sha256, "
                          "fsxlt_bucket_sha256s)"),
    (_edit_record, "its record's bytes are not those its fsxlt_record_sha256 names"),
    (_bad_task, "not a plain name"),
    (_other_bucket, "fsxlt_bucket_sha256 not what its record says"),
    (_cell_score, "is not the mean of its buckets' scores"),
    (_bucket_hashes, "fsxlt_buckets_sha256"),
])
def test_a_forged_record_is_refused_in_one_line_writing_nothing(studies, tmp_path, capsys,
                                                               change, says):
    copy, aggregate = _copy(studies, tmp_path)
    _edit(aggregate, change)
    runs = tmp_path / "runs"
    assert run_app(["runs", "import-eee", str(copy), "--out", str(runs)]) == 2
    err = capsys.readouterr().err
    assert says in err and "nothing was written" in err and len(err.splitlines()) == 1
    assert not runs.exists()


def test_an_edited_samples_file_and_another_tool_s_record_are_refused(studies, tmp_path,
                                                                     capsys):
    copy, aggregate = _copy(studies, tmp_path)
    samples = next(aggregate.parent.glob(aggregate.stem + "_samples.jsonl"))
    samples.write_text(samples.read_text().replace('"score": 1.0', '"score": 0.0', 1))
    assert run_app(["runs", "import-eee", str(copy), "--out", str(tmp_path / "r")]) == 2
    assert "is not the one its checksum names" in capsys.readouterr().err
    # a record of another tool (here: every-eval-ever's own lm-eval converter's shape)
    other = tmp_path / "other" / "data/xnli/x/y"
    other.mkdir(parents=True)
    data = json.loads(aggregate.read_text())
    for result in data["evaluation_results"]:
        result["score_details"].pop("details")
    (other / aggregate.name).write_text(json.dumps(data))
    assert run_app(["runs", "import-eee", str(tmp_path / "other"), "--out",
                    str(tmp_path / "r")]) == 2
    err = capsys.readouterr().err
    assert "without fsxlt's bucket fields" in err and len(err.splitlines()) == 1
    assert not (tmp_path / "r").exists()


def test_export_refuses_a_used_folder_and_a_bad_relationship(studies, tmp_path, capsys):
    assert run_app(["runs", "export", str(studies["runs"]), str(studies["export"]),
                    "--format", "eee"]) == 2
    assert "not empty" in capsys.readouterr().err
    assert run_app(["runs", "export", str(studies["runs"]), str(tmp_path / "x"), "--format",
                    "eee", "--relationship", "friend"]) == 2
    assert "--relationship must be one of" in capsys.readouterr().err
    assert not (tmp_path / "x").exists()


def test_metric_configs_are_what_every_eval_ever_s_converters_give(studies):
    """fsxlt's accuracy is EEE's canonical ``accuracy`` exactly as the package's own table
    gives lm-eval's ``acc`` (every field but the display name); its other metrics are
    namespaced and marked unregistered as the package marks a harness's own."""
    eee_root()
    from every_eval_ever.converters.common.metrics import metric_config_fields

    from fsxlt.report.eee import metric_config

    theirs = metric_config_fields("acc", harness="lm-evaluation-harness")
    ours = metric_config("accuracy", "")
    for key, value in theirs.items():
        if value is not None:
            expected = value.value if hasattr(value, "value") else value
            assert ours[key] == expected, key
    unregistered = metric_config_fields("seqeval_f1", harness="fsxlt")
    assert metric_config("seqeval_f1", "")["metric_id"] == unregistered["metric_id"]
    assert unregistered["additional_details"]["metric_id_status"] == \
        metric_config("seqeval_f1", "")["additional_details"]["metric_id_status"]


def test_a_forged_zero_shot_score_is_refused(studies, tmp_path, capsys):
    copy = tmp_path / "copy"
    shutil.copytree(studies["export"], copy)
    (zero,) = [path for path in (copy / "data").rglob("*.json")
               if '"fsxlt_unit": "zero-shot"' in path.read_text()]
    _edit(zero, lambda data: data["evaluation_results"][0]["score_details"].update(score=0.9))
    assert run_app(["runs", "import-eee", str(copy), "--out", str(tmp_path / "r")]) == 2
    err = capsys.readouterr().err
    assert "score not what its record says" in err and len(err.splitlines()) == 1
    assert not (tmp_path / "r").exists()


def test_published_buckets_are_named_as_the_hub_dataset(studies, tmp_path):
    out = tmp_path / "eee"
    assert run_app(["runs", "export", str(studies["runs"]), str(out), "--format", "eee",
                    "--buckets-dataset", "org/xnli-buckets", "--no-samples"]) == 0
    assert validate_tree(out) == []
    assert not list(out.rglob("*_samples.jsonl"))
    for data in _aggregates(out).values():
        source = data["evaluation_results"][-1]["source_data"]
        if data["evaluation_results"][0]["evaluation_name"].endswith("_k0"):
            assert source["source_type"] == "other"  # no shots: the test set alone
        else:
            assert source["source_type"] == "hf_dataset"
            assert source["hf_repo"] == "org/xnli-buckets"


def test_an_option_of_the_other_format_is_refused(studies, tmp_path, capsys):
    for args, says in ((["--format", "eee", "--name", "x"], "--name is an option of "
                        "--format hf, not eee"),
                       (["--no-samples"], "--no-samples is an option of --format eee, not hf")):
        assert run_app(["runs", "export", str(studies["runs"]), str(tmp_path / "x"),
                        *args]) == 2
        assert says in capsys.readouterr().err
    assert not (tmp_path / "x").exists()


def test_the_validation_can_fail(studies, tmp_path):
    """The checks the export passes reject what breaks the schema (so passing means
    something): a record without its model, a samples row without its input."""
    copy, aggregate = _copy(studies, tmp_path)
    _edit(aggregate, lambda data: data.pop("model_info"))
    samples = aggregate.with_name(aggregate.stem + "_samples.jsonl")
    first, *rest = samples.read_text().splitlines()
    row = json.loads(first)
    row.pop("input")
    samples.write_text("\n".join([json.dumps(row), *rest]) + "\n")
    problems = validate_tree(copy)
    assert any("model_info" in one for one in problems)
    assert any("'input' is a required property" in one for one in problems)
