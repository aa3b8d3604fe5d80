"""Refusals before writing (issue 50, items 13-15): a Ray sweep without Ray, a report folder
that is a runs directory or a bucket store or holds a user's files, and an option that
would change a run's identity and nothing else are each one line, with nothing written."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from fsxlt.cli import run_app
from tests.sweep_fixtures import write_config
from tests.train_fixtures import NLI_LABELS, nli_data, write_bucket_set, write_pairs


def one_line(capsys, says: str) -> None:
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and says in err[0] and "Traceback" not in err[0], err


@pytest.fixture
def small(tmp_path) -> dict[str, Path]:
    data = nli_data(30, seed=1)
    write_bucket_set(tmp_path / "store", "xnli", "de", 1, [data[:3], data[3:6]], NLI_LABELS)
    write_pairs(tmp_path / "dev-de.tsv", data[8:20])
    write_pairs(tmp_path / "test-de.tsv", data[20:30])
    return {"store": tmp_path / "store", "data": tmp_path}


def test_a_ray_sweep_without_ray_is_refused_before_anything_is_written(small, tmp_path,
                                                                       capsys, monkeypatch):
    """0.6.0 wrote the runs directory's marker and the K=0 records first."""
    config = write_config(tmp_path / "sweep.yaml", {
        "out": str(tmp_path / "runs"), "buckets": str(small["store"]), "methods": ["full"],
        "no_source_training": {"encoder": "bert-base-multilingual-cased"}, "lrs": [1e-3],
        "data_dir": str(small["data"]), "tasks": {"xnli": {"languages": ["de"], "k": [1]}}})
    monkeypatch.setitem(sys.modules, "ray", None)  # as where Ray is not installed
    assert run_app(["sweep", str(config), "--executor", "ray"]) == 2
    one_line(capsys, "the ray executor needs Ray")
    assert not (tmp_path / "runs").exists()


@pytest.fixture
def runs(tmp_path) -> Path:
    """A runs directory with two finished records of one arm."""
    from fsxlt.fileio import atomic_write_json
    from tests.test_faults_like_with_like import record

    for index in range(2):
        atomic_write_json(tmp_path / f"runs/xnli/de/k1/full/{index:02d}.json",
                          record("full", index, 0.5 + index / 10))
    (tmp_path / "runs" / ".fsxlt-directory").write_text(json.dumps({"kind": "runs"}))
    return tmp_path / "runs"


@pytest.mark.parametrize("where", ["runs", "runs/report", "store", "store/xnli"])
def test_a_report_is_not_written_into_a_runs_directory_or_bucket_store(runs, small, tmp_path,
                                                                       capsys, where):
    before = sorted(p for p in tmp_path.rglob("*"))
    assert run_app(["report", str(runs), "--out", str(tmp_path / where)]) == 2
    one_line(capsys, "a report folder must be a directory of its own")
    assert sorted(p for p in tmp_path.rglob("*")) == before


@pytest.mark.parametrize("mine", ["records.csv", "report.md", "plots"])
def test_a_report_does_not_replace_a_file_fsxlt_did_not_write(runs, tmp_path, capsys, mine):
    out = tmp_path / "paper"
    out.mkdir()
    (out / mine).mkdir() if mine == "plots" else (out / mine).write_text("my own table")
    (out / "notes.txt").write_text("mine")
    assert run_app(["report", str(runs), "--out", str(out)]) == 2
    one_line(capsys, f"holds {mine}, which no fsxlt report wrote there")
    assert sorted(p.name for p in out.iterdir()) == sorted([mine, "notes.txt"])
    clean = tmp_path / "report"  # a folder of its own: written, and written again
    for _ in range(2):
        assert run_app(["report", str(runs), "--out", str(clean), "--no-plots"]) == 0
    assert (clean / "records.csv").is_file() and (tmp_path / "paper/notes.txt").is_file()


@pytest.mark.parametrize("command", ["adapt", "source-train"])
def test_fractional_warmup_without_warmup_is_refused(small, tmp_path, capsys, command):
    """Like --target-restart without a joint regime: 0.6.0 accepted it, changed nothing but
    the run's identity."""
    if command == "adapt":
        argv = ["adapt", "--task", "xnli", "--lang", "de", "--bucket",
                str(small["store"] / "xnli/de/k1"), "--from", "bert-base-multilingual-cased",
                "--data-dir", str(small["data"]), "--out", str(tmp_path / "runs")]
    else:
        argv = ["source-train", "--task", "xnli", "--model", "bert-base-multilingual-cased",
                "--train", str(small["data"] / "dev-de.tsv"), "--dev",
                str(small["data"] / "dev-de.tsv"), "--out", str(tmp_path / "ckpt")]
    assert run_app([*argv, "--fractional-warmup"]) == 2
    one_line(capsys, "--fractional-warmup needs --warmup above 0")
    assert not (tmp_path / "runs").exists() and not (tmp_path / "ckpt").exists()
    from fsxlt.errors import FsxltError
    from fsxlt.training.optim import OptimizerSettings, parse_optimizer

    with pytest.raises(FsxltError, match="optimizer.fractional_warmup needs"):
        parse_optimizer({"fractional_warmup": True}, "sweep.yaml")
    with pytest.raises(FsxltError, match="fractional_warmup needs warmup above 0"):
        OptimizerSettings(fractional_warmup=True)
