"""fsxlt analyze selection on runs directories: selection rules when adapting, by hand."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np
import pytest

from fsxlt.analysis import selection_table
from fsxlt.analysis.adapt_selection import (
    is_runs_directory,
    read_adapt_records,
    record_candidates,
)
from fsxlt.cli import run_app
from fsxlt.errors import FsxltError
from fsxlt.fileio import atomic_write_json
from fsxlt.report.compare import bootstrap_ci
from fsxlt.study.directories import RUNS, claim
from tests.test_analysis_selection import write_record as write_checkpoint
from tests.test_report import fake_record

# per bucket: target-dev (dev, test), source-dev test, last@2e-05 test, average-lrs test
BUCKETS = [((0.60, 0.50), 0.45, 0.52, 0.55),
           ((0.70, 0.60), 0.65, 0.58, 0.60),
           ((0.80, 0.70), None, 0.76, None)]  # bucket 2: no English dev, no average-lrs test


def with_candidates(record: dict, index: int) -> dict:
    (dev, test), source, last, average = BUCKETS[index]
    models = [{"name": "target-dev", "rule": "target-dev", "lr": 2e-05 if index else 1e-05,
               "epochs": [3], "dev": dev, "test": test},
              {"name": "last@2e-05", "rule": "last", "lr": 2e-05, "epochs": [5],
               "dev": dev - 0.05, "test": last},
              {"name": "average-lrs", "rule": "average-lrs", "lr": None, "epochs": [5],
               "dev": dev, "test": average}]
    if source is not None:
        models.insert(1, {"name": "source-dev", "rule": "source-dev", "lr": 2e-05,
                          "epochs": [2], "dev": dev - 0.1, "test": source})
    record.update(test_score=test, dev_score=dev,
                  candidates={"average_last": 3, "models": models})
    return record


@pytest.fixture()
def runs(tmp_path: Path) -> Path:
    root = claim(tmp_path / "runs", RUNS)
    for index in range(3):
        atomic_write_json(root / "xnli" / "de" / "k1" / "full" / f"{index:02d}.json",
                          with_candidates(fake_record("de", 1, "full", index, 0.0), index))
        # an older record: no candidates block, the target-dev rule only
        atomic_write_json(root / "xnli" / "de" / "k4" / "full" / f"{index:02d}.json",
                          fake_record("de", 4, "full", index, 0.6 + 0.1 * index))
    failed = {"format": "fsxlt-adapt-error/1", "status": "error", "task": "xnli",
              "language": "de", "k": 1, "method": "full", "bucket": {"index": 3}}
    atomic_write_json(root / "xnli" / "de" / "k1" / "full" / "03.json", failed)
    unfinished = fake_record("de", 1, "full", 4, 0.99) | {"status": "running"}
    atomic_write_json(root / "xnli" / "de" / "k1" / "full" / "04.json", unfinished)
    (root / "xnli" / "de" / "k1" / "full" / "05.json").write_text('{"format": "fsxlt-ad')
    return root


def rows_by_candidate(table, k: int) -> dict:
    return {r["candidate"]: r for r in table[table["k"] == k].to_dict("records")}


def test_means_stds_and_gaps_by_hand(runs):
    records = read_adapt_records(runs)
    assert len(records) == 6  # the error, unfinished and truncated records are left out
    table = selection_table(records)
    k1 = rows_by_candidate(table, 1)
    assert list(table[table["k"] == 1]["candidate"]) == [
        "target-dev", "source-dev", "last@2e-05", "average-lrs"]  # target-dev first
    oracle = k1["target-dev"]
    assert (oracle["n"], oracle["test_mean"], oracle["test_std"]) == (
        3, pytest.approx(60.0), pytest.approx(10.0))            # 50 60 70, ddof=1
    assert oracle["dev_mean"] == pytest.approx(70.0)
    assert np.isnan(oracle["lr"])                               # chosen per bucket
    assert (oracle["gap"], oracle["gap_ci_low"], oracle["gap_ci_high"]) == (0, 0, 0)
    last = k1["last@2e-05"]
    assert last["lr"] == 2e-05 and last["rule"] == "last" and last["n"] == 3
    assert last["test_mean"] == pytest.approx(62.0)             # 52 58 76
    assert last["test_std"] == pytest.approx(np.sqrt((100 + 16 + 196) / 2))
    assert last["dev_mean"] == pytest.approx(65.0)
    assert last["gap"] == pytest.approx(2.0)                    # +2 -2 +6
    low, high = bootstrap_ci(np.array([2.0, -2.0, 6.0]), seed=0, key="xnli/de/1/full/last@2e-05")
    assert (last["gap_ci_low"], last["gap_ci_high"]) == (pytest.approx(low), pytest.approx(high))
    assert -2.0 <= low <= 2.0 <= high <= 6.0
    source = k1["source-dev"]                                   # only buckets 0 and 1
    assert (source["n"], source["test_mean"], source["gap"]) == (
        2, pytest.approx(55.0), pytest.approx(0.0))              # -5 +5
    assert source["test_std"] == pytest.approx(np.sqrt(200))
    average = k1["average-lrs"]                                 # test null in bucket 2
    assert (average["n"], average["test_mean"], average["gap"]) == (
        2, pytest.approx(57.5), pytest.approx(2.5))              # +5 0
    assert np.isnan(average["lr"])


def test_records_without_candidates_give_target_dev_only(runs):
    table = selection_table(read_adapt_records(runs))
    k4 = rows_by_candidate(table, 4)
    assert list(k4) == ["target-dev"]
    row = k4["target-dev"]
    assert (row["n"], row["test_mean"], row["test_std"]) == (
        3, pytest.approx(70.0), pytest.approx(10.0))
    assert row["lr"] == 1e-05 and row["gap"] == 0
    assert record_candidates(read_adapt_records(runs)[3])[0]["name"] == "target-dev"


def test_a_bucket_run_twice_and_nothing_to_count_are_refused(runs):
    records = read_adapt_records(runs)
    with pytest.raises(FsxltError, match="same bucket"):
        selection_table(records + records[:1])
    with pytest.raises(FsxltError, match="no finished adapt records"):
        selection_table([])


def test_cli_writes_table_markdown_and_plots(runs, tmp_path, capsys):
    out = tmp_path / "out"
    assert run_app(["analyze", "selection", str(runs), "--out", str(out)]) == 0
    assert {p.name for p in out.iterdir()} == {
        "adapt-selection.csv", "adapt-selection.md", "xnli-de-adapt-selection.png",
        "xnli-de-adapt-selection.pdf"}
    printed = capsys.readouterr().out
    assert "last@2e-05" in printed and "wrote adapt-selection.csv" in printed
    with open(out / "adapt-selection.csv", newline="") as handle:
        rows = list(csv.DictReader(handle))
    assert len(rows) == 5 and rows[0]["candidate"] == "target-dev"
    assert float(rows[2]["gap"]) == pytest.approx(2.0)
    markdown = (out / "adapt-selection.md").read_text()
    assert "| xnli | de | 1 | full | last@2e-05 | 3 | 62.00 ± 12.49 | 65.00 | +2.00 |" \
        in markdown
    assert run_app(["analyze", "selection", str(runs), "-k", "4", "--arm", "full",
                    "--lang", "de", "--task", "xnli"]) == 0
    printed = capsys.readouterr().out
    assert "target-dev" in printed and "last@2e-05" not in printed


@pytest.mark.parametrize("setup, message", [
    ("empty", "no finished adapt records"),
    ("filtered", "none of the asked"),
    ("mixed", "not both"),
])
def test_cli_errors_are_one_line_and_write_nothing(runs, tmp_path, capsys, setup, message):
    if setup == "empty":
        paths = [str(claim(tmp_path / "empty", RUNS))]
    elif setup == "filtered":
        paths = [str(runs), "--arm", "fc-pooler"]
    else:
        paths = [str(write_checkpoint(tmp_path / "ckpt", 0.5, 1)), str(runs)]
    out = tmp_path / "out"
    assert run_app(["analyze", "selection", *paths, "--out", str(out)]) != 0
    err = capsys.readouterr().err
    assert err.startswith("error: ") and message in err and len(err.strip().splitlines()) == 1
    assert not out.exists()


def test_runs_directory_is_told_from_a_checkpoint(runs, tmp_path, capsys):
    assert is_runs_directory(runs)
    assert not is_runs_directory(write_checkpoint(tmp_path / "ckpt", 0.5, 1))
    bare = tmp_path / "bare"
    bare.mkdir()
    assert not is_runs_directory(bare)
    assert run_app(["analyze", "selection", str(bare)]) != 0
    assert "neither a checkpoint" in capsys.readouterr().err
    unmarked = tmp_path / "unmarked" / "xnli" / "de" / "k1" / "full" / "00.json"
    atomic_write_json(unmarked, json.loads((runs / "xnli/de/k1/full/00.json").read_text()))
    assert is_runs_directory(tmp_path / "unmarked")  # a tree written before markers


def test_help_names_runs_directories():
    from typer.testing import CliRunner

    from fsxlt.cli.app import app

    result = CliRunner().invoke(app, ["analyze", "selection", "--help"])
    assert result.exit_code == 0
    assert "fsxlt analyze selection runs/" in result.output and "--arm" in result.output


def test_records_fsxlt_adapt_writes_with_average_last(tmp_path, capsys):
    """End to end: fsxlt adapt --average-last on a tiny BERT, then the selection table."""
    from tests.train_fixtures import (
        NLI_LABELS,
        make_encoder_dir,
        nli_data,
        write_bucket_set,
        write_pairs,
    )

    encoder = make_encoder_dir(tmp_path / "encoder")
    pool = nli_data(15, seed=7, source="dev-de")
    buckets = write_bucket_set(tmp_path / "buckets", "xnli", "de", 1,
                               [pool[0:3], pool[3:6]], list(NLI_LABELS),
                               dev_remaining=pool[6:])
    test = write_pairs(tmp_path / "data" / "test-de.tsv", nli_data(9, seed=8, source="test"))
    runs = tmp_path / "runs"
    assert run_app(["adapt", "--task", "xnli", "--lang", "de", "--bucket", str(buckets),
                    "--from", str(encoder), "--test", str(test), "--out", str(runs),
                    "--lr", "1e-3", "--lr", "3e-4", "--max-epochs", "2", "--patience", "2",
                    "--average-last", "2", "--device", "cpu"]) == 0
    records = read_adapt_records(runs)
    assert len(records) == 2 and all("candidates" in r for r in records)
    table = selection_table(records)
    assert list(table["candidate"]) == ["target-dev", "last@0.0003", "last@0.001",
                                        "average-last-2@0.0003", "average-last-2@0.001",
                                        "average-lrs"]
    assert set(table["n"]) == {2} and set(table["arm"]) == {"full-nosource"}
    oracle = table.iloc[0]
    assert oracle["test_mean"] == pytest.approx(
        100 * np.mean([r["test_score"] for r in records]))
    capsys.readouterr()
    out = tmp_path / "out"
    assert run_app(["analyze", "selection", str(runs), "--out", str(out)]) == 0
    assert (out / "xnli-de-adapt-selection.png").is_file()


def test_icl_records_are_no_candidates(tmp_path):
    """Issue 41, case 20: ICL records (no dev set, nothing selected) were listed as
    target-dev candidates; LoRA-tuned causal LMs select on dev and stay."""
    root = tmp_path / "runs"
    claim(root, RUNS)
    adapted = fake_record("de", 1, "full", 0, 0.6)
    prompted = {**fake_record("de", 1, "full", 1, 0.5), "method": "icl", "icl": {"model": "m"}}
    tuned = {**fake_record("de", 1, "full", 2, 0.5), "method": "lm-lora",
             "lm_tuning": {"selected_lr": 1e-3}}
    for name, record in (("full/00", adapted), ("icl/01", prompted), ("lm-lora/02", tuned)):
        atomic_write_json(root / "xnli/de/k1" / f"{name}.json", record)
    found = sorted(record["method"] for record in read_adapt_records(root))
    assert found == ["full", "lm-lora"]
