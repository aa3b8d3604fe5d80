"""ICL arms in ``fsxlt sweep``: beside the adapting arms on the same buckets, at K=0, resumable,
write-once, on local workers (on Ray: test_ray_cluster.py); bad ``icl:`` sections are one
line with nothing written."""

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
from fsxlt.execution import load_config, parse_config, sweep_status
from fsxlt.study.runs import arm_of, is_complete, read_record
from fsxlt.training import strip_timings
from tests.icl_fixtures import make_causal_lm_dir, write_task_yaml
from tests.sweep_fixtures import KS, N_BUCKETS, build_study, sweep_config, write_config

REPO = Path(__file__).resolve().parents[1]
LANG = "de"
# per language: every bucket of every K, and one zero-shot run
ICL_RUNS = len(KS) * N_BUCKETS + 1
ARMS = ("icl", "icl-calibrated-norm", "icl-similarity")  # the swept fixture's ICL arms


@pytest.fixture(scope="module")
def study(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("icl-study")
    paths = build_study(root)
    paths["lm"] = make_causal_lm_dir(root / "lm", "llama")
    return paths


def icl_config(study: dict[str, Path], out: Path, icl: dict[str, Any] | None = None,
               **extra: Any) -> dict[str, Any]:
    """The study's sweep over German with an ICL section (default: one arm, 6 test examples)."""
    section = {"model": str(study["lm"]), "test_limit": 6} if icl is None else icl
    config = sweep_config(study, out, icl=section,
                          tasks={"xnli": {"languages": [LANG], "k": list(KS)}})
    config.update(extra)
    return config


def icl_records(runs: Path) -> dict[str, dict]:
    """The ICL records below ``runs``, without timings, by path."""
    return {p.relative_to(runs).as_posix(): _untimed(json.loads(p.read_text()))
            for p in sorted(runs.glob("xnli/*/k*/icl*/*.json"))}


def _untimed(record: dict) -> dict:
    return strip_timings(record)


@pytest.fixture(scope="module")
def swept(study, tmp_path_factory) -> dict[str, Path]:
    """A sweep with ``full`` and three ICL arms, on two local worker processes."""
    root = tmp_path_factory.mktemp("icl-sweep")
    section = {"model": str(study["lm"]), "test_limit": 6,
               "arms": [{}, {"calibrate": True, "normalize": True},
                        {"order": "similarity", "encoder": str(study["encoder"])}]}
    config = write_config(root / "sweep.yaml", icl_config(study, root / "runs", section))
    assert run_app(["sweep", str(config), "--workers", "2", "--threads", "1"]) == 0
    return {"root": root, "runs": root / "runs", "config": config,
            "encoder": study["encoder"]}


def test_icl_arms_run_on_the_adapting_arms_buckets(swept):
    runs = swept["runs"]
    for k in KS:
        full = sorted(p.name for p in (runs / f"xnli/{LANG}/k{k}/full").glob("*.json"))
        for arm in ARMS:
            paths = sorted((runs / f"xnli/{LANG}/k{k}/{arm}").glob("*.json"))
            assert [p.name for p in paths] == full and len(full) == N_BUCKETS
            for path in paths:
                record = read_record(path)
                adapted = read_record(runs / f"xnli/{LANG}/k{k}/full" / path.name)
                assert is_complete(record) and arm_of(record) == arm
                assert record["bucket"]["sha256"] == adapted["bucket"]["sha256"]
                assert record["run"]["writer"] == "sweep 'test-sweep'"
                assert record["data"]["test"]["n"] == 6 and record["k"] == k
    zero = read_record(runs / f"xnli/{LANG}/k0/icl/zero-shot.json")
    assert zero["k"] == 0 and zero["icl"]["demonstrations"] == []
    assert read_record(runs / f"xnli/{LANG}/k0/icl-calibrated-norm/zero-shot.json")["icl"][
        "calibrate"]
    similar = read_record(runs / f"xnli/{LANG}/k2/icl-similarity/04.json")["icl"]
    assert similar["encoder"] == str(swept["encoder"]) and similar["prompt_prefixes"] >= 1


def test_a_task_may_replace_or_drop_the_top_level_icl_section(study, tmp_path):
    top = {"model": str(study["lm"]), "arms": [{}]}
    config = parse_config(sweep_config(study, tmp_path / "runs", icl=top, tasks={
        "xnli": {"icl": {"model": "{task}-lm", "arms": [{"calibrate": True}],
                         "zero_shot": False}},
        "pawsx": {}, "panx": {"icl": None}}))
    plans = {plan.task: plan for plan in config.tasks}
    assert [arm.name for arm in plans["xnli"].icl.arms] == ["icl-calibrated"]
    assert plans["xnli"].icl.arms[0].settings.model == "xnli-lm"
    assert not plans["xnli"].icl.zero_shot
    assert plans["pawsx"].icl.arms[0].settings.model == str(study["lm"])
    assert plans["panx"].icl is None  # a tagging task runs its adapting arms only
    assert config.restrict(methods=["full"]).tasks[1].icl.arms == ()


def test_a_sweeps_icl_run_is_the_same_run_as_fsxlt_icls(study, swept, capsys):
    """One identity: ``fsxlt icl`` finds the sweep's records done, and the report pairs
    ICL with fine-tuning bucket by bucket."""
    runs = swept["runs"]
    capsys.readouterr()
    assert run_app(["icl", "--task", "xnli", "--lang", LANG, "--model", str(study["lm"]),
                    "--bucket", str(study["buckets"] / "xnli" / LANG / "k1"),
                    "--data-dir", str(study["data"]), "--test-limit", "6",
                    "--out", str(runs)]) == 0
    out = capsys.readouterr().out
    assert out.count("already done with these settings") == N_BUCKETS
    assert run_app(["report", str(runs), "--compare", "icl", "full", "--bootstrap", "200"]) == 0
    printed = capsys.readouterr().out
    assert "icl minus full" in printed
    paired, spreads = printed.split("### spread over the same buckets")
    spreads, power = spreads.split("### icl against full: the smallest difference")
    for table in (paired, spreads, power):
        rows = [line for line in table.splitlines() if line.startswith(f"| xnli | {LANG} |")]
        assert [row.split("|")[3:5] for row in rows] == [[f" {k} ", f" {N_BUCKETS} "]
                                                          for k in KS]


def test_a_finished_sweep_says_all_done(swept, capsys):
    capsys.readouterr()
    assert run_app(["sweep", str(swept["config"]), "--workers", "0"]) == 0
    total = len(KS) * N_BUCKETS + len(ARMS) * ICL_RUNS
    assert f"0 runs completed, 0 failed, {total} already done" in capsys.readouterr().out
    status = sweep_status(load_config(swept["config"]))
    assert status.pending == [] and len(status.done) == total


def test_dry_run_lists_the_icl_runs_and_method_picks_them(study, tmp_path, capsys):
    config = write_config(tmp_path / "sweep.yaml", icl_config(study, tmp_path / "runs"))
    assert run_app(["sweep", str(config), "--dry-run"]) == 0
    captured = capsys.readouterr()
    lines = [line.split("\t") for line in captured.out.strip().splitlines()]
    ids = [line[0] for line in lines]
    assert len(ids) == len(KS) * N_BUCKETS + ICL_RUNS
    assert f"xnli/{LANG}/k1/icl/00" in ids and f"xnli/{LANG}/k0/icl/zero-shot" in ids
    assert {line[1] for line in lines} == {"missing"}
    assert lines[ids.index(f"xnli/{LANG}/k0/icl/zero-shot")][2].endswith(
        f"runs/xnli/{LANG}/k0/icl/zero-shot.json")
    assert f"{len(ids)} to run" in captured.err and "in 2 groups" in captured.err
    assert run_app(["sweep", str(config), "--dry-run", "--method", "icl"]) == 0
    only = capsys.readouterr().out.strip().splitlines()
    assert len(only) == ICL_RUNS and all("/icl/" in line for line in only)
    assert not (tmp_path / "runs").exists()


def test_icl_records_of_other_settings_are_refused_unless_replaced(study, swept, tmp_path,
                                                                   capsys):
    import shutil

    runs = tmp_path / "runs"
    shutil.copytree(swept["runs"], runs)
    before = icl_records(runs)
    config = write_config(tmp_path / "sweep.yaml", icl_config(
        study, runs, {"model": str(study["lm"]), "test_limit": 5}, methods=[]))
    capsys.readouterr()
    assert run_app(["sweep", str(config), "--workers", "0"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "prompt differ" in err[0] and "--replace" in err[0]
    assert icl_records(runs) == before
    assert run_app(["sweep", str(config), "--workers", "0", "--k", "1", "--replace",
                    "--save-predictions"]) == 0
    assert capsys.readouterr().err.count("replacing ") == N_BUCKETS + 1  # and K=0
    record = read_record(runs / f"xnli/{LANG}/k1/icl/03.json")
    assert record["data"]["test"]["n"] == 5 and record["icl"]["test_limit"] == 5
    assert (runs / f"xnli/{LANG}/k1/icl/03.predictions.jsonl").is_file()
    assert read_record(runs / f"xnli/{LANG}/k2/icl/03.json")["data"]["test"]["n"] == 6


def test_killed_sweep_resumes_to_the_same_records(study, swept, tmp_path):
    """SIGKILL at the fourth ICL record (three written), then a second start: the ICL
    records are those of the uninterrupted sweep."""
    runs = tmp_path / "runs"
    config = write_config(tmp_path / "sweep.yaml", icl_config(study, runs, methods=[]))
    proc = subprocess.run(
        [sys.executable, "-m", "tests.fault_runner", "fsxlt.icl.run.execute", "4", "SIGKILL",
         "--", "sweep", str(config), "--workers", "0", "--threads", "1"],
        cwd=REPO, capture_output=True, text=True, timeout=600,
        env={**os.environ, "PYTHONPATH": str(REPO)})
    assert proc.returncode == -signal.SIGKILL, proc.stderr[-2000:]
    written = icl_records(runs)
    assert len(written) == 3
    status = sweep_status(load_config(config))
    assert len(status.done) == 3 and len(status.pending) == ICL_RUNS - 3
    assert run_app(["sweep", str(config), "--workers", "0", "--threads", "1"]) == 0
    resumed = icl_records(runs)
    reference = {path: record for path, record in icl_records(swept["runs"]).items()
                 if "/icl/" in path}
    assert resumed == reference and len(resumed) == ICL_RUNS


def test_a_failing_icl_run_leaves_an_error_record_and_the_sweep_goes_on(study, tmp_path,
                                                                       capsys):
    """An arm whose model's context is too short for the demonstrations fails run by run
    (the zero-shot prompt fits); the other arm and the adapting runs are unaffected."""
    short = make_causal_lm_dir(tmp_path / "short", "llama", context=64)
    section = {"test_limit": 3, "zero_shot": True,
               "arms": [{"model": str(study["lm"])},
                        {"model": str(short), "arm": "icl-short"}]}
    runs = tmp_path / "runs"
    config = write_config(tmp_path / "sweep.yaml", icl_config(
        study, runs, section, methods=[], tasks={"xnli": {"languages": [LANG], "k": [2]}}))
    capsys.readouterr()
    assert run_app(["sweep", str(config), "--workers", "0", "--threads", "1"]) == 1
    assert f"{N_BUCKETS + 2} runs completed, {N_BUCKETS} failed" in capsys.readouterr().out
    error = read_record(runs / f"xnli/{LANG}/k2/icl-short/00.json")
    assert error["status"] == "error" and "longer than the model's context" in error["error"]
    assert error["run"]["arm"] == "icl-short" and error["stage"] == "icl"
    assert is_complete(read_record(runs / f"xnli/{LANG}/k0/icl-short/zero-shot.json"))
    assert is_complete(read_record(runs / f"xnli/{LANG}/k2/icl/00.json"))
    status = sweep_status(load_config(config))
    assert sorted({why for _, why in status.pending}) == ["error"]


def _bad_section(study: dict[str, Path], tmp_path: Path, case: str) -> dict[str, Any]:
    """The config of one bad-input case."""
    model = str(study["lm"])
    sections = {
        "unknown-key": {"model": model, "temperature": 0.7},
        "unknown-arm-key": {"model": model, "arms": [{"shots": 4}]},
        "type": {"model": model, "arms": [{"calibrate": "yes"}]},
        "test-limit": {"model": model, "test_limit": 0},
        "order": {"model": model, "order": "random"},
        "no-encoder": {"model": model, "arms": [{"order": "similarity"}]},
        "no-model": {"arms": [{}]},
        "arms-not-a-list": {"model": model, "arms": {"calibrate": True}},
        "same-arm": {"model": model, "arms": [{}, {"seed": 1}]},
        "bad-arm-name": {"model": model, "arm": "mine"},
        "no-gguf": {"model": model, "gguf_file": "missing.gguf"},
    }
    if case in sections:
        return icl_config(study, tmp_path / "runs", sections[case])
    config = icl_config(study, tmp_path / "runs")
    if case == "tagging":
        config["tasks"] = {"panx": {"languages": [LANG], "k": [1]}}
    elif case == "no-icl-section":
        task = write_task_yaml(tmp_path / "plain.yaml", icl=None)
        config["tasks"] = {str(task): {"languages": [LANG], "k": [1]}}
    elif case == "target-missing":
        config["icl"]["template_lang"] = "target"
        config["tasks"] = {"xnli": {"languages": ["sw"], "k": [1]}}
    return config


@pytest.mark.parametrize("case, message", [
    ("unknown-key", "unknown key(s) in icl: temperature"),
    ("unknown-arm-key", "unknown key(s) in icl.arms[0]: shots"),
    ("type", "icl.arms[0].calibrate must be true or false, got 'yes'"),
    ("test-limit", "icl.test_limit must be >= 1, got 0"),
    ("order", "icl.order must be one of seeded, bucket, similarity"),
    ("no-encoder", "icl.arms[0]: the similarity order needs a sentence encoder"),
    ("no-model", "icl needs model"),
    ("arms-not-a-list", "icl.arms must be a non-empty list"),
    ("same-arm", "two arms named icl"),
    ("bad-arm-name", "an ICL arm name starts with icl"),
    ("no-gguf", "holds no GGUF file missing.gguf"),
    ("tagging", "a tagging task"),
    ("no-icl-section", "has no icl section"),
    ("target-missing", "no template in sw"),
])
def test_bad_icl_config_is_one_line_and_writes_nothing(study, tmp_path, capsys, case, message):
    config = write_config(tmp_path / "sweep.yaml", _bad_section(study, tmp_path, case))
    capsys.readouterr()
    assert run_app(["sweep", str(config), "--workers", "0"]) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and len(err.splitlines()) == 1 and "Traceback" not in err
    assert str(config) in err or case == "no-gguf"
    assert not (tmp_path / "runs").exists()


def test_a_task_yaml_in_a_sweep_brings_its_own_prompts(study, tmp_path):
    """What runs is what was configured (issue 31, mechanism 9): under 0.2.0 a sweep whose
    ``tasks:`` key was a task YAML ran the built-in task's prompts (429 of 450 predictions
    differed from ``fsxlt icl --task mine.yaml``), and a YAML of a new task name failed."""
    from fsxlt.execution import expand
    from fsxlt.tasks import get_task

    mine = write_task_yaml(tmp_path / "mine.yaml",
                           template={"en": "{text_a} / {text_b} ? answer : {label}"})
    config = icl_config(study, tmp_path / "runs", methods=[])
    config["tasks"] = {str(mine): config["tasks"]["xnli"]}
    plan = parse_config(config)
    assert plan.tasks[0].task == "xnli" and plan.tasks[0].task_ref == str(mine)
    runs = [r for r in expand(plan).runs if r.k > 0]
    assert runs and all(r.run.identity["prompt"]["icl"] == repr(get_task(mine).icl)
                        for r in runs)
    assert repr(get_task(mine).icl) != repr(get_task("xnli").icl)
    renamed = tmp_path / "other.yaml"
    renamed.write_text(mine.read_text().replace("name: xnli", "name: xnli-mine", 1))
    config["tasks"] = {str(renamed): {"languages": [LANG], "k": list(KS)}}
    plan = parse_config(config)
    assert plan.tasks[0].spec.name == "xnli-mine"
