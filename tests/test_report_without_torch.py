"""``fsxlt report`` reads run records only: it never imports torch (a fresh interpreter
runs every kind of report on a tiny runs directory and says what it imported)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from fsxlt.fileio import atomic_write_json
from fsxlt.study.runs import RUN_FORMAT, ZERO_SHOT_FORMAT

POOLS = {"n": 4, "size": 30, "seed": 0, "split": "train"}
PROBE = """import json, sys
from fsxlt.cli import run_app
status = run_app(sys.argv[1:])
print(json.dumps({"status": status, "torch": "torch" in sys.modules,
                  "transformers": "transformers" in sys.modules}))
"""


def record(method: str, index: int, score: float, strategy: str = "") -> dict:
    bucket = {"id": f"xnli/de/k1/{index:02d}", "index": index, "k": 1}
    if strategy:
        bucket.update(strategy=strategy, strategy_pools=POOLS)
    return {"format": RUN_FORMAT, "status": "ok", "task": "xnli", "language": "de", "k": 1,
            "method": method, "metric": "accuracy", "bucket": bucket,
            "model": {"source_training": True}, "selected_lr": 1e-5,
            "runs": [{"lr": 1e-5, "epochs": [{"epoch": 1, "dev_score": score - 0.01}]}],
            "best_epoch": 1, "dev_score": score - 0.01, "test_score": score}


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> Path:
    """Two methods on four buckets, and full on random and diverse buckets of one pool set."""
    root = tmp_path_factory.mktemp("runs")
    atomic_write_json(root / "xnli/de/k0/zero-shot.json", {
        "format": ZERO_SHOT_FORMAT, "status": "ok", "task": "xnli", "language": "de", "k": 0,
        "test_score": 0.4, "metric": "accuracy"})
    for index in range(4):
        for method, score in (("full", 0.60), ("fc", 0.50)):
            atomic_write_json(root / f"xnli/de/k1/{method}/{index:02d}.json",
                              record(method, index, score + 0.01 * index))
        for strategy, score in (("random", 0.55), ("diverse", 0.58)):
            atomic_write_json(root / f"xnli/de/k1/full~{strategy}/{index:02d}.json",
                              record("full", index, score + 0.01 * index, strategy))
    return root


def report_in_fresh_interpreter(*args: str) -> dict:
    done = subprocess.run([sys.executable, "-c", PROBE, "report", *args],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("extra", [
    [],
    ["--compare", "full", "fc"],
    ["--strategies", "--bootstrap", "200"],
], ids=["tables", "compare", "strategies"])
def test_report_never_imports_torch(runs, extra):
    result = report_in_fresh_interpreter(str(runs), *extra)
    assert result == {"status": 0, "torch": False, "transformers": False}


def test_a_written_report_with_plots_never_imports_torch(runs, tmp_path):
    result = report_in_fresh_interpreter(str(runs), "--out", str(tmp_path / "report"))
    assert result == {"status": 0, "torch": False, "transformers": False}
    assert (tmp_path / "report" / "report.md").is_file()
