"""Training regimes and candidate models through arms, sweep configs, fsxlt adapt and workers.

A joint regime's runs are an arm of their own (``full+joint``) beside the
sequential ones (``full``), whose names, identities and record paths stay as
they were; bad regime input is one line before anything is written; a tiny
sweep over both regimes with candidates writes both arms and resumes.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fsxlt.cli import run_app
from fsxlt.errors import FsxltError
from fsxlt.execution import expand, parse_config, run_sweep
from fsxlt.report.tables import arm_label, arm_order
from fsxlt.study.runs import (
    arm_name,
    arm_of,
    arm_regime,
    arm_source,
    arm_strategy,
    is_complete,
    read_record,
)
from tests.sweep_fixtures import build_study, sweep_config, write_config
from tests.test_protocol import DEFAULT_HASHES, adapt_runs
from tests.train_fixtures import nli_data, write_pairs

REGIMES = ("sequential", "joint", "joint-concat", "joint-macro", "mixup")


@pytest.fixture(scope="module")
def study(tmp_path_factory):
    root = tmp_path_factory.mktemp("regime-study")
    paths = build_study(root)
    paths["source_train"] = write_pairs(root / "data" / "train-en.tsv", nli_data(24, seed=7))
    paths["source_dev"] = write_pairs(root / "data" / "dev-en.tsv", nli_data(9, seed=8))
    return paths


def small_config(study, out: Path, **extra) -> dict:
    """The study's sweep cut to one language, one K and two buckets, two epochs."""
    config = sweep_config(study, out, n_buckets=2, max_epochs=2,
                          tasks={"xnli": {"languages": ["de"], "k": [1]}})
    config.update(extra)
    return config


def joint(study, **options) -> dict:
    return {"source_train": str(study["source_train"]), **options}


# --------------------------------------------------------------------------- arms

@pytest.mark.parametrize("facts", [
    {}, {"source_training": False}, {"source_languages": ["de"]},
    {"source_languages": ["en", "de", "es"], "strategy": "diverse"},
    {"select_start": True, "source_training": False, "strategy": "random"},
])
@pytest.mark.parametrize("regime", REGIMES)
def test_an_arm_names_its_regime_and_gives_it_back(facts, regime):
    facts = {"source_training": True, **facts}
    sequential = arm_name("full", **facts)
    arm = arm_name("full", regime=regime, **facts)
    assert arm_regime(arm) == (sequential, regime)
    assert (arm == sequential) == (regime == "sequential")
    assert arm_source(arm) == arm_source(sequential)
    assert arm_strategy(arm)[1] == arm_strategy(sequential)[1]


def test_the_regime_marks_the_method():
    assert [arm_name("full", True, regime="joint"),
            arm_name("full", True, regime="joint-macro"),
            arm_name("full", False, regime="joint"),
            arm_name("full", True, source_languages=["de"], regime="joint"),
            arm_name("full", True, strategy="diverse", regime="joint"),
            arm_name("full", True)] == [
        "full+joint", "full+joint-macro", "full+joint-nosource", "full+joint@de",
        "full+joint~diverse", "full"]
    assert arm_regime("full@en+de") == ("full@en+de", "sequential")  # a source's "+"


def test_a_record_is_filed_under_its_regime():
    record = {"method": "full", "model": {"source_training": True, "start": {}},
              "bucket": {}}
    assert arm_of(record) == "full"
    assert arm_of({**record, "regime": {"name": "joint-mixup"}}) == "full+joint-concat"  # 0.2


def test_reports_title_and_order_regime_arms():
    assert arm_label("full+joint") == "Full FT, joint training"
    assert arm_label("full+joint-nosource") == "Full FT, joint training, no source-training"
    assert arm_label("full+joint@de~diverse") == \
        "Full FT, joint training, source de, diverse buckets"
    assert sorted(["full+joint", "full-nosource", "full", "fc"], key=arm_order) == \
        ["full", "full+joint", "fc", "full-nosource"]


# --------------------------------------------------------------------------- sweep configs

def test_each_method_and_regime_is_an_arm(study, tmp_path):
    config = parse_config(small_config(
        study, tmp_path / "runs", methods=["full", "fc"],
        regimes=["sequential", "joint", "joint-macro"],
        joint=joint(study, steps_per_epoch=3)))
    runs = expand(config).runs
    assert sorted({run.arm for run in runs}) == ["fc", "fc+joint", "fc+joint-macro", "full",
                                                 "full+joint", "full+joint-macro"]
    assert len(runs) == 6 * 2 and len({run.config_hash for run in runs}) == 12
    one = next(run for run in runs if run.arm == "full+joint")
    assert one.record_path.endswith("runs/xnli/de/k1/full+joint/00.json")
    assert (one.regime, json.loads(one.regime_options)) == (
        "joint", {"batch_size": 32, "steps_per_epoch": 3, "target_repeat": 100})
    assert one.source_train_path == str(study["source_train"])
    assert one.identity["regime"] == "joint"
    assert one.identity["regime_options"] == json.loads(one.regime_options)
    assert len(one.identity["source_train"]) == 64


def test_sequential_runs_keep_their_identities(study, tmp_path):
    plain = expand(parse_config(small_config(study, tmp_path / "runs"))).runs
    both = expand(parse_config(small_config(study, tmp_path / "runs",
                                            regimes=["sequential", "joint"],
                                            joint=joint(study)))).runs
    sequential = [run for run in both if run.regime == "sequential"]
    assert [(r.config_hash, r.record_path) for r in sequential] == \
        [(r.config_hash, r.record_path) for r in plain]
    assert not {"regime", "average_last", "source_dev"} & set(sequential[0].identity)
    assert [r.config_hash for r in adapt_runs(tmp_path, regime="sequential")] == \
        DEFAULT_HASHES


def test_candidates_and_source_files_enter_the_identity(study, tmp_path):
    def runs(**extra):
        return expand(parse_config(small_config(study, tmp_path / "runs", **extra))).runs

    kept = runs(average_last=2, source_dev=str(study["source_dev"]))
    assert kept[0].identity["average_last"] == 2 and "source_dev" in kept[0].identity
    assert (kept[0].average_last, kept[0].source_dev_path) == (2, str(study["source_dev"]))
    assert kept[0].record_path == runs()[0].record_path  # the same arm
    other = tmp_path / "train-en.tsv"
    write_pairs(other, nli_data(24, seed=99))
    first = runs(regimes=["joint"], joint=joint(study))
    second = runs(regimes=["joint"], joint={"source_train": str(other)})
    hashes = {r.config_hash for r in runs()}
    assert not hashes & {r.config_hash for r in kept + first + second}
    assert not {r.config_hash for r in first} & {r.config_hash for r in second}


def test_a_task_may_set_its_own_regimes(study, tmp_path):
    config = small_config(study, tmp_path / "runs", joint=joint(study))
    config["tasks"]["xnli"]["regimes"] = ["joint-concat"]
    assert {run.arm for run in expand(parse_config(config)).runs} == {"full+joint-concat"}


def test_dry_run_lists_the_regime_arms(study, tmp_path, capsys):
    config = write_config(tmp_path / "sweep.yaml", small_config(
        study, tmp_path / "runs", regimes=["sequential", "joint"], joint=joint(study)))
    assert run_app(["sweep", str(config), "--dry-run"]) == 0
    ids = [line.split("\t")[0] for line in capsys.readouterr().out.splitlines()]
    assert ids == ["xnli/de/k1/full/00", "xnli/de/k1/full/01", "xnli/de/k1/full+joint/00",
                   "xnli/de/k1/full+joint/01"]
    assert not (tmp_path / "runs").exists()


def test_one_regime_of_a_config_runs_alone_as_the_same_runs(study, tmp_path, capsys):
    """``fsxlt sweep --regime R`` keeps the config's joint: settings: the runs it keeps are
    the whole config's runs of R, with the same identities and record paths; a regime
    the config does not have is one line."""
    both = small_config(study, tmp_path / "runs", regimes=["sequential", "joint"],
                        joint=joint(study, steps_per_epoch=2))
    whole = expand(parse_config(both)).runs
    for regime in ("sequential", "joint"):
        alone = expand(parse_config(both).restrict(regimes=[regime])).runs
        assert [(r.id, r.config_hash, r.record_path) for r in alone] == \
            [(r.id, r.config_hash, r.record_path) for r in whole if r.regime == regime]
    config = write_config(tmp_path / "sweep.yaml", both)
    assert run_app(["sweep", str(config), "--dry-run", "--regime", "joint"]) == 0
    ids = [line.split("\t")[0] for line in capsys.readouterr().out.splitlines()]
    assert ids == ["xnli/de/k1/full+joint/00", "xnli/de/k1/full+joint/01"]
    assert run_app(["sweep", str(config), "--dry-run", "--regime", "mixup"]) == 2
    assert "regime 'mixup' is not in the sweep config (has: joint, sequential)" in \
        capsys.readouterr().err


BAD_CONFIGS = [
    ({"regimes": ["joint", "sideways"]}, "regimes: unknown regime 'sideways'"),
    ({"regimes": ["joint"]}, "give its file as joint: {source_train: PATH}"),
    ({"regimes": ["joint"], "joint": {"source_train": "/nonexistent/train-en.tsv"}},
     "joint.source_train: /nonexistent/train-en.tsv not found"),
    ({"regimes": ["joint"], "joint": {"source_train": "SRC", "steps_per_epoch": 0}},
     "joint: regime joint: steps_per_epoch must be an integer >= 1"),
    ({"regimes": ["joint"], "joint": {"source_train": "SRC", "epochs": 3}},
     "joint: unknown regime option(s) epochs"),
    ({"regimes": ["joint"], "joint": {"source_train": "SRC"}, "batch_size": 4},
     "batch_size (the mini-batch protocol) is for the sequential regime"),
    ({"average_last": 0}, "average_last must be >= 1, got 0"),
    ({"source_dev": "SRC"}, "set average_last: N too"),
    ({"average_last": 2, "source_dev": "/nonexistent/dev-en.tsv"},
     "source_dev: /nonexistent/dev-en.tsv not found"),
]


@pytest.mark.parametrize("change, message", BAD_CONFIGS)
def test_bad_regime_settings_are_one_line(study, tmp_path, capsys, change, message):
    change = json.loads(json.dumps(change).replace('"SRC"', json.dumps(
        str(study["source_train"]))))
    path = write_config(tmp_path / "sweep.yaml",
                        small_config(study, tmp_path / "runs", **change))
    for args in (["--dry-run"], ["--workers", "0"]):
        assert run_app(["sweep", str(path), *args]) == 2
        err = capsys.readouterr().err.strip()
        assert err.startswith(f"error: {path}: ") and message in err, err
        assert len(err.splitlines()) == 1
    assert not (tmp_path / "runs").exists()


# --------------------------------------------------------------------------- fsxlt adapt

def adapt_args(study, out: Path, *extra: str) -> list[str]:
    return ["adapt", "--task", "xnli", "--lang", "de",
            "--bucket", str(study["buckets"] / "xnli" / "de" / "k1"),
            "--from", str(study["checkpoint"]), "--data-dir", str(study["data"]),
            "--lr", "0.01", "--max-epochs", "2", "--out", str(out), *extra]


@pytest.mark.parametrize("extra, message", [
    (["--regime", "joint"], "--regime joint trains on the source data beside the bucket; "
                            "pass --source-train FILE"),
    (["--regime", "sideways"], "--regime: unknown regime 'sideways'"),
    (["--source-train", "SRC"], "pass --regime joint"),
    (["--joint-steps", "3"], "pass --regime joint"),
    (["--regime", "joint", "--source-train", "/nonexistent/train-en.tsv"],
     "/nonexistent/train-en.tsv: --source-train file not found"),
    (["--regime", "joint", "--source-train", "SRC", "--batch-size", "4"],
     "--batch-size (the mini-batch protocol) is for the sequential regime"),
    (["--average-last", "0"], "--average-last must be at least 1, got 0"),
    (["--source-dev", "SRC"], "pass --average-last N too"),
])
def test_bad_adapt_regimes_are_one_line(study, tmp_path, capsys, extra, message):
    extra = [str(study["source_train"]) if arg == "SRC" else arg for arg in extra]
    assert run_app(adapt_args(study, tmp_path / "runs", *extra)) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and len(err.splitlines()) == 1, err
    assert not (tmp_path / "runs").exists()


def test_adapt_writes_a_joint_run_under_its_arm(study, tmp_path, capsys):
    bucket = study["buckets"] / "xnli" / "de" / "k1" / "00.json"
    args = adapt_args(study, tmp_path / "runs", "--regime", "joint-macro", "--source-train",
                      str(study["source_train"]), "--joint-batch-size", "4",
                      "--joint-steps", "1", "--average-last", "1", "--device", "cpu")
    args[args.index("--bucket") + 1] = str(bucket)
    assert run_app(args) == 0
    path = tmp_path / "runs" / "xnli" / "de" / "k1" / "full+joint-macro" / "00.json"
    assert f"-> {path}" in capsys.readouterr().out
    record = read_record(path)
    assert is_complete(record) and record["regime"]["name"] == "joint-macro"
    assert record["run"]["identity"]["regime_options"] == {"batch_size": 4,
                                                           "steps_per_epoch": 1}
    assert run_app(args) == 0  # done: said, not rerun
    assert "already done" in capsys.readouterr().out


def test_adapt_plans_a_joint_arm(study, tmp_path):
    from fsxlt.execution import adapt_plan

    runs = adapt_plan("xnli", "de", study["buckets"] / "xnli" / "de" / "k1", tmp_path,
                      start=str(study["checkpoint"]), data_dir=study["data"],
                      regime="joint-macro", regime_options={"steps_per_epoch": 4},
                      source_train=study["source_train"], average_last=3)
    assert {run.arm for run in runs} == {"full+joint-macro"}
    assert json.loads(runs[0].regime_options) == {"batch_size": 32, "steps_per_epoch": 4}
    assert runs[0].average_last == 3 and runs[0].identity["average_last"] == 3
    with pytest.raises(FsxltError, match="source-dev candidate"):
        adapt_plan("xnli", "de", study["buckets"] / "xnli" / "de" / "k1", tmp_path,
                   start=str(study["checkpoint"]), data_dir=study["data"],
                   source_dev=study["source_dev"])


# --------------------------------------------------------------------------- end to end

def test_a_sweep_writes_both_arms_with_candidates_and_resumes(study, tmp_path, monkeypatch):
    from fsxlt.training import adapt as adapt_module

    given = []
    real_set_source = adapt_module.AdaptEngine.set_source

    def counting_set_source(self, train=None, dev=None, **kwargs):
        given.append((kwargs.get("train_source"), kwargs.get("dev_source")))
        real_set_source(self, train, dev, **kwargs)

    monkeypatch.setattr(adapt_module.AdaptEngine, "set_source", counting_set_source)
    config = parse_config(small_config(
        study, tmp_path / "runs", regimes=["sequential", "joint"],
        joint=joint(study, batch_size=4, steps_per_epoch=2, target_repeat=2),
        average_last=2, source_dev=str(study["source_dev"])))
    result = run_sweep(config, workers=0, device="cpu")
    assert len(result.completed) == 4 and not result.failed
    train, dev = str(study["source_train"]), str(study["source_dev"])
    # the engine's own empty call, then the source dev set (sequential runs), then the
    # train set beside it (joint runs): each source set given once
    assert given == [(None, None), (None, dev), (train, dev)]
    runs_dir = tmp_path / "runs" / "xnli" / "de" / "k1"
    assert sorted(p.name for p in runs_dir.iterdir()) == ["full", "full+joint"]
    for arm in ("full", "full+joint"):
        for bucket in ("00", "01"):
            record = read_record(runs_dir / arm / f"{bucket}.json")
            assert is_complete(record) and arm_of(record) == arm
            names = [model["name"] for model in record["candidates"]["models"]]
            assert "target-dev" in names and "source-dev" in names
            assert ("regime" in record) == (arm == "full+joint")
    regime = read_record(runs_dir / "full+joint" / "00.json")["regime"]
    assert regime["name"] == "joint" and regime["steps_per_epoch"] == 2
    assert regime["source_train"]["sha256"]
    again = run_sweep(config, workers=0, device="cpu")
    assert not again.completed and len(again.status.done) == 4


def test_report_pairs_the_joint_arm_with_the_sequential_one(study, tmp_path, capsys):
    config = parse_config(small_config(
        study, tmp_path / "runs", regimes=["sequential", "joint"],
        joint=joint(study, batch_size=4, steps_per_epoch=1, target_repeat=1), max_epochs=1))
    assert len(run_sweep(config, workers=0, device="cpu").completed) == 4
    capsys.readouterr()
    assert run_app(["report", str(tmp_path / "runs"), "--compare", "full+joint", "full",
                    "--bootstrap", "50"]) == 0
    compared = capsys.readouterr().out
    assert "full+joint minus full" in compared and "| de " in compared
    assert run_app(["report", str(tmp_path / "runs"), "--expected-buckets", "2"]) == 0
    assert "Full FT, joint training" in capsys.readouterr().out
