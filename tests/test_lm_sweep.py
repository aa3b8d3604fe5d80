"""LoRA on the causal LM as a sweep arm (issue 45, part 2): ``lm_lora`` arms beside the
encoder and ICL arms on the same buckets, one identity with ``fsxlt lm-adapt``,
write-once and resumable after a kill, paired by ``report --compare``; bad
``lm_lora`` sections are one line with nothing written."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from fsxlt.cli import run_app
from fsxlt.execution import expand, load_config, parse_config, sweep_status
from fsxlt.study.runs import read_record
from fsxlt.training import strip_timings
from tests.icl_fixtures import make_causal_lm_dir
from tests.sweep_fixtures import build_study, sweep_config, write_config

REPO = Path(__file__).resolve().parents[1]
LORA = {"lrs": [1e-3], "max_epochs": 2, "patience": 1, "test_limit": 6, "dev_limit": 4}
LM_ADAPT_SAME = ["--lr", "1e-3", "--max-epochs", "2", "--patience", "1", "--test-limit", "6",
                 "--dev-limit", "4"]


@pytest.fixture(scope="module")
def study(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("lm-study")
    paths = build_study(root)
    paths["lm"] = make_causal_lm_dir(root / "lm", "llama")
    return paths


def three_arms(study: dict[str, Path], out: Path, **lm_lora: Any) -> dict[str, Any]:
    """Encoder (full), ICL and LoRA arms over German, K 1 and 2, two buckets each."""
    section = {"model": str(study["lm"]), **LORA, **lm_lora}
    return sweep_config(study, out, n_buckets=2, max_epochs=2,
                        icl={"model": str(study["lm"]), "test_limit": 6},
                        lm_lora=section, tasks={"xnli": {"languages": ["de"], "k": [1, 2]}})


def records(runs: Path) -> dict[str, dict]:
    return {p.relative_to(runs).as_posix(): strip_timings(json.loads(p.read_text()))
            for p in sorted(runs.glob("xnli/de/k*/*/*.json"))}


@pytest.fixture(scope="module")
def swept(study, tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("lm-sweep")
    config = write_config(root / "sweep.yaml", three_arms(study, root / "runs"))
    assert run_app(["sweep", str(config), "--workers", "0", "--threads", "1"]) == 0
    return {"runs": root / "runs", "config": config}


def test_lora_arms_run_on_the_cells_buckets_beside_the_others(swept):
    arms = {path.split("/")[3] for path in records(swept["runs"])}
    assert arms == {"full", "icl", "lm-lora"}
    lora = {p: r for p, r in records(swept["runs"]).items() if "/lm-lora/" in p}
    assert sorted(lora) == [f"xnli/de/k{k}/lm-lora/0{i}.json" for k in (1, 2) for i in (0, 1)]
    for path, record in lora.items():
        encoder = read_record(swept["runs"] / path.replace("lm-lora", "full"))
        assert record["status"] == "ok" and record["run"]["sweep"] == "test-sweep"
        assert record["bucket"]["sha256"] == encoder["bucket"]["sha256"]
        assert record["lm_tuning"]["lrs"] == [1e-3] and record["test"]["n"] == 6


def test_a_sweeps_lora_run_is_the_same_run_as_fsxlt_lm_adapts(study, swept, capsys):
    capsys.readouterr()
    for k in (1, 2):
        bucket = study["buckets"] / "xnli" / "de" / f"k{k}" / "01.json"
        assert run_app(["lm-adapt", "--task", "xnli", "--lang", "de", "--bucket", str(bucket),
                        "--model", str(study["lm"]), "--data-dir", str(study["data"]),
                        "--out", str(swept["runs"]), "--threads", "1", *LM_ADAPT_SAME]) == 0
    assert capsys.readouterr().out.count("already done with these settings") == 2


def test_report_compare_pairs_all_three_arms(swept, capsys):
    for pair in (("lm-lora", "icl"), ("lm-lora", "full"), ("icl", "full")):
        capsys.readouterr()
        assert run_app(["report", str(swept["runs"]), "--compare", *pair,
                        "--bootstrap", "200"]) == 0
        printed = capsys.readouterr().out
        assert f"{pair[0]} minus {pair[1]}" in printed
        assert "| xnli | de | 1 | 2 |" in printed and "| xnli | de | 2 | 2 |" in printed


def test_killed_sweep_resumes_to_the_same_records(study, swept, tmp_path):
    """SIGKILL at the second LoRA record (one written), then a second start: every record
    of every arm is the uninterrupted sweep's."""
    runs = tmp_path / "runs"
    config = write_config(tmp_path / "sweep.yaml", three_arms(study, runs))
    proc = subprocess.run(
        [sys.executable, "-m", "tests.fault_runner", "fsxlt.icl.tuning.execute", "2",
         "SIGKILL", "--", "sweep", str(config), "--workers", "0", "--threads", "1"],
        cwd=REPO, capture_output=True, text=True, timeout=600,
        env={**os.environ, "PYTHONPATH": str(REPO)})
    assert proc.returncode == -signal.SIGKILL, proc.stderr[-2000:]
    assert len([p for p in records(runs) if "/lm-lora/" in p]) == 1
    assert sweep_status(load_config(config)).pending
    assert run_app(["sweep", str(config), "--workers", "0", "--threads", "1"]) == 0
    resumed = records(runs)
    assert resumed == records(swept["runs"]) and len(resumed) == 13


def test_method_filter_and_dry_run_see_the_lora_arm(study, tmp_path, capsys):
    config = write_config(tmp_path / "sweep.yaml", three_arms(study, tmp_path / "runs"))
    assert run_app(["sweep", str(config), "--dry-run", "--method", "lm-lora"]) == 0
    ids = [line.split("\t")[0] for line in capsys.readouterr().out.splitlines()]
    assert ids == [f"xnli/de/k{k}/lm-lora/0{i}" for k in (1, 2) for i in (0, 1)]
    two = parse_config(three_arms(study, tmp_path / "r2", arms=[{}, {"rank": 4,
                                                                     "arm": "lm-lora-r4"}]))
    lora = [run for run in expand(two).runs if run.arm.startswith("lm-")]
    assert len(lora) == 8 and len({run.config_hash for run in lora}) == 8
    assert not (tmp_path / "runs").exists()


@pytest.mark.parametrize("change, message", [
    ({"model": None}, "lm_lora needs model"),
    ({"rank": 0}, "lm_lora.rank must be"),
    ({"lrs": []}, "lm_lora.lrs must be a non-empty list"),
    ({"select_on": "accuracy"}, "lm_lora.select_on must be one of metric, loss"),
    ({"epochs": 3}, "unknown key"),
    ({"arm": "lora"}, "arm name starts with lm-"),
    ({"arms": [{}, {}]}, "two arms named lm-lora"),
    # issue 50, item 12: found while planning, before any arm runs
    ({"model": "/no/such/lm"}, "lm_lora.model /no/such/lm: no such folder"),
    ({"gguf_file": "model.gguf"}, "holds no GGUF file model.gguf"),
    ({"icl_model": "/no/such/lm"}, "icl.model /no/such/lm: no such folder"),
])
def test_bad_lm_lora_sections_are_one_line_and_write_nothing(study, tmp_path, capsys, change,
                                                             message):
    config = three_arms(study, tmp_path / "runs")
    if "icl_model" in change:
        config["icl"]["model"] = change.pop("icl_model")
    config["lm_lora"].update(change)
    if change.get("model", "") is None:
        config["lm_lora"].pop("model")
    path = write_config(tmp_path / "sweep.yaml", config)
    assert run_app(["sweep", str(path)]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1
    assert not (tmp_path / "runs").exists()
