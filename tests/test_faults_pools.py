"""Strategies are judged only against random buckets of the same candidate pools: run
records carry the pools, the report leaves out (and says) comparisons across pools."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fsxlt.cli import run_app
from fsxlt.study.runs import RUN_FORMAT
from tests.train_fixtures import ner_data, write_conll

SEED5 = {"n": 40, "size": 40, "seed": 5, "split": "train", "source": "ab" * 32}
SEED0 = {"n": 40, "size": 30, "seed": 0, "split": "train", "source": "ab" * 32}
SEED5_WORDS = "seed 5, size 40, 40 pools of train, data abababababab"
SEED0_WORDS = "seed 0, size 30, 40 pools of train, data abababababab"


def write_run(runs: Path, strategy: str, index: int, score: float,
              pools: dict | None) -> None:
    """A finished sweep record of arm ``full~<strategy>``; ``pools`` None: an old record."""
    bucket = {"id": f"panx/de/k1/{index:02d}", "index": index, "k": 1, "sha256": "0" * 64,
              "n_examples": 3, "sampler": "strategy", "strategy": strategy}
    if pools is not None:
        bucket["strategy_pools"] = pools
    record = {"format": RUN_FORMAT, "status": "ok", "task": "panx", "language": "de", "k": 1,
              "bucket": bucket, "method": "full", "model": {"source_training": True},
              "test_score": score, "dev_score": score, "best_epoch": 1, "metric": "seqeval_f1",
              "sweep": {"arm": f"full~{strategy}"}}
    path = runs / f"panx/de/k1/full~{strategy}/{index:02d}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(record), encoding="utf-8")


def write_arm(runs: Path, strategy: str, scores: list[float], pools: dict | None,
              first: int = 0) -> None:
    for offset, score in enumerate(scores):
        write_run(runs, strategy, first + offset, score, pools)


def report(runs: Path, capsys, *extra: str) -> tuple[int, str, str]:
    code = run_app(["report", str(runs), "--strategies", "--bootstrap", "200", *extra])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def csv_rows(text: str) -> list[dict[str, str]]:
    import csv
    import io

    return list(csv.DictReader(io.StringIO(text)))


# --------------------------------------------------------------------------- the records

def test_adapt_records_the_pools_of_a_strategy_bucket(tmp_path):
    """A bucket fsxlt select wrote (pools seed 5, size 40, 2 pools) as adapt records it."""
    from fsxlt.sampling.store import read_bucket
    from fsxlt.training.records import bucket_facts

    write_conll(tmp_path / "train-de.tsv", ner_data(60, 3, source="de"))
    assert run_app(["select", "--task", "panx", "--lang", "de", "--data-dir", str(tmp_path),
                    "-s", "random", "-k", "1", "--n-pools", "2", "--pool-size", "40",
                    "--seed", "5", "--out", str(tmp_path / "buckets")]) == 0
    bucket = read_bucket(tmp_path / "buckets/random/panx/de/k1/01.json")
    info = bucket_facts(bucket, "panx", "de")[1]
    assert info["strategy"] == "random"
    assert info["strategy_pools"] == {"n": 2, "size": 40, "seed": 5, "split": "train",
                                      "source": bucket.meta["source"]["sha256"]}
    assert len(info["strategy_pools"]["source"]) == 64


# --------------------------------------------------------------------------- the report

def test_a_strategy_from_other_pools_is_left_out_with_a_one_line_note(tmp_path, capsys):
    """The issue's case: entity-rich (seed 0, size 30) beside random (seed 5, size 40)."""
    runs = tmp_path / "runs"
    write_arm(runs, "random", [0.40, 0.45, 0.50], SEED5)
    write_arm(runs, "diverse", [0.52, 0.58, 0.61], SEED5)
    write_arm(runs, "entity-rich", [0.70, 0.72, 0.75], SEED0)
    code, out, err = report(runs, capsys, "--format", "csv")
    assert code == 0
    rows = csv_rows(out)
    assert [(r["strategy"], r["pools"]) for r in rows] == [("diverse", SEED5_WORDS)]
    lines = err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("note: panx/de K=1 "), err
    assert "entity-rich buckets" in lines[0] and "not compared" in lines[0]
    assert SEED0_WORDS in lines[0] and SEED5_WORDS in lines[0]


def test_nothing_comparable_is_a_one_line_error_and_nothing_is_written(tmp_path, capsys):
    runs = tmp_path / "runs"
    write_arm(runs, "random", [0.40, 0.45, 0.50], SEED5)
    write_arm(runs, "entity-rich", [0.70, 0.72, 0.75], SEED0)
    code, out, err = report(runs, capsys, "--out", str(tmp_path / "rep"))
    assert code != 0 and out == ""
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err, err
    assert "from the same pools" in err and "entity-rich buckets" in err
    assert SEED0_WORDS in err and SEED5_WORDS in err
    assert not (tmp_path / "rep/strategies.md").exists()


def test_records_without_pools_are_unknown_pools_never_compared(tmp_path, capsys):
    """Records written before the pools were recorded: said, not silently compared."""
    runs = tmp_path / "runs"
    write_arm(runs, "random", [0.40, 0.45, 0.50], SEED5)
    write_arm(runs, "diverse", [0.52, 0.58, 0.61], SEED5)
    write_arm(runs, "uncertain", [0.30, 0.35, 0.31], None)
    code, out, err = report(runs, capsys, "--format", "csv")
    assert code == 0 and [r["strategy"] for r in csv_rows(out)] == ["diverse"]
    assert len(err.splitlines()) == 1 and "uncertain buckets (pools unknown" in err, err


def test_only_old_records_is_a_one_line_error_naming_unknown_pools(tmp_path, capsys):
    runs = tmp_path / "runs"
    write_arm(runs, "random", [0.40, 0.45, 0.50], None)
    write_arm(runs, "diverse", [0.52, 0.58, 0.61], None)
    code, _out, err = report(runs, capsys)
    assert code != 0 and len(err.strip().splitlines()) == 1, err
    assert "diverse buckets (pools unknown" in err and "random buckets (pools unknown" in err


def test_each_strategy_meets_the_random_buckets_of_its_own_pools(tmp_path, capsys):
    """Random runs from two pools in one cell: each strategy against its own pools' only."""
    runs = tmp_path / "runs"
    write_arm(runs, "random", [0.40, 0.50], SEED5)
    write_arm(runs, "random", [0.80, 0.90], SEED0, first=2)
    write_arm(runs, "diverse", [0.60, 0.62], SEED5)
    write_arm(runs, "uncertain", [0.70, 0.71], SEED0, first=2)
    code, out, err = report(runs, capsys, "--format", "csv", "--out", str(tmp_path / "rep"))
    assert code == 0 and err == ""
    rows = {r["strategy"]: r for r in csv_rows(out)}
    assert float(rows["diverse"]["random_mean"]) == pytest.approx(45.0)
    assert float(rows["uncertain"]["random_mean"]) == pytest.approx(85.0)
    assert rows["uncertain"]["pools"] == SEED0_WORDS and rows["uncertain"]["random_n"] == "2"
    plots = sorted(p.name for p in (tmp_path / "rep/plots").glob("*.png"))
    assert plots == ["strategies_panx_de_k1_full_pools1.png",
                     "strategies_panx_de_k1_full_pools2.png"]
