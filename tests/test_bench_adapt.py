"""scripts/bench_adapt.py on a tiny setting: the naive loop and the engine agree (no timings)."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest
import torch

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "bench_adapt.py"


@pytest.fixture(scope="module")
def bench():
    spec = importlib.util.spec_from_file_location("bench_adapt", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    sys.modules["bench_adapt"] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    threads = torch.get_num_threads()
    yield module
    torch.set_num_threads(threads)  # the script sets one thread for the whole process
    sys.modules.pop("bench_adapt", None)


@pytest.mark.parametrize("task, methods", [("panx", "full,fc"),
                                           ("xnli", "full,cos-pooler,fc-reset-pooler")])
def test_naive_loop_and_engine_reach_the_same_results(bench, tmp_path, capsys, task, methods):
    head_only = methods.split(",", 1)[1]
    out = tmp_path / "bench.json"
    status = bench.main(["--task", task, "--buckets", "2", "--bucket-size", "6",
                         "--dev-size", "40", "--test-size", "20", "--epochs", "3",
                         "--hidden", "32", "--naive-methods", methods, "--json", str(out),
                         "--cache-methods", head_only, "--threads", "1"])
    assert status == 0, capsys.readouterr().err
    result = json.loads(out.read_text())
    assert result["problems"] == []
    naive = [row for row in result["methods"] if "naive_runs_per_min" in row]
    assert [row["method"] for row in naive] == methods.split(",")
    assert all(row["identical"] for row in naive)
    assert {"naive", "fsxlt", "fsxlt_cached_head"} <= set(result["eval_throughput"])
    printed = capsys.readouterr().out
    assert "speed-up" in printed and "target full" in printed


def test_a_mismatch_is_reported(bench):
    a = {"curve": [0.1, 0.5], "best_epoch": 2, "dev": 0.5, "test": 0.4}
    b = {"curve": [0.1, 0.6], "best_epoch": 2, "dev": 0.6, "test": 0.4}
    problems = bench.compare("fc", [a], [b], 1e-6)
    assert any("dev curves differ" in p for p in problems)
    assert any("dev score" in p for p in problems)
    assert bench.compare("fc", [a], [dict(a)], 1e-6) == []


def test_the_qa_case_gives_the_naive_loops_answers(bench, tmp_path, capsys):
    out = tmp_path / "qa.json"
    status = bench.main(["--task", "xquad", "--buckets", "2", "--bucket-size", "3",
                         "--dev-size", "12", "--test-size", "10", "--epochs", "3",
                         "--max-seq-length", "64", "--repeat", "12", "--json", str(out)])
    assert status == 0, capsys.readouterr().err
    result = json.loads(out.read_text())
    assert result["problems"] == [] and result["windows"] > 12  # long contexts: windows
    assert result["runs"] == 2 and len(result["test_f1"]) == 2
