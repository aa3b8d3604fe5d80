"""Regime multi trained once for all its languages (issue 45, part 1).

A sweep's multi runs of one (bucket index, language set, arm) train one model per
learning rate, each language following its own dev set with its own patience; the
records are those of training once per language (``shared_multi: false``), byte for
byte but for timings, over lr grids, early stops at different epochs, candidates and
predictions; resuming after a kill between the languages' records gives the same
records; the runs keep their identities (records of the per-language way stay done);
every record names the training it shares.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from fsxlt.cli import run_app
from fsxlt.execution import expand, parse_config, run_sweep
from fsxlt.training import AdaptEngine, strip_timings
from tests.sweep_fixtures import build_study, ray_or_fail, sweep_config, write_config
from tests.train_fixtures import nli_data, write_pairs

REPO = Path(__file__).resolve().parents[1]
LANGS = ("de", "fr")


@pytest.fixture(scope="module")
def study(tmp_path_factory):
    root = tmp_path_factory.mktemp("shared-multi")
    paths = build_study(root)
    paths["source_train"] = write_pairs(root / "data" / "train-en.tsv", nli_data(24, seed=7))
    paths["source_dev"] = write_pairs(root / "data" / "dev-en.tsv", nli_data(9, seed=8))
    return paths


def multi(study, out: Path, **extra) -> dict:
    """Multi over de and fr, two lrs, up to 6 epochs with patience 1 (the languages stop
    at their own epochs), the last 2 epochs averaged as a candidate beside source dev."""
    config = sweep_config(study, out, n_buckets=2, max_epochs=6, patience=1,
                          lrs=[1e-2, 3e-3], regimes=["multi"], average_last=2,
                          source_dev=str(study["source_dev"]),
                          joint={"source_train": str(study["source_train"]), "batch_size": 4,
                                 "steps_per_epoch": 2, "languages": list(LANGS)},
                          tasks={"xnli": {"languages": list(LANGS), "k": [1, 2]}})
    config.update(extra)
    return config


def records(runs: Path) -> dict[str, dict]:
    return {p.relative_to(runs).as_posix(): strip_timings(json.loads(p.read_text()))
            for p in sorted(runs.glob("xnli/*/k*/*/*.json"))}


def count_trainings(monkeypatch) -> list[int]:
    calls: list[int] = []
    original = AdaptEngine._run_followed

    def counted(self, *args, **kwargs):
        calls.append(len(args[5]))  # the followers: one per language trained for
        return original(self, *args, **kwargs)

    monkeypatch.setattr(AdaptEngine, "_run_followed", counted)
    return calls


@pytest.fixture(scope="module")
def both(study, tmp_path_factory):
    """The same sweep trained once per language and once for both, in this process."""
    root = tmp_path_factory.mktemp("both")
    mp = pytest.MonkeyPatch()
    try:
        calls = count_trainings(mp)
        out = {}
        for name, shared in (("separate", False), ("shared", True)):
            before = len(calls)
            result = run_sweep(parse_config(multi(study, root / name, shared_multi=shared)),
                               workers=0, device="cpu", threads=1, save_predictions=True)
            assert not result.failed and len(result.completed) == 8
            out[name] = (records(root / name), calls[before:])
    finally:
        mp.undo()
    return out


def test_shared_training_gives_the_records_of_one_training_per_language(both):
    separate, separate_calls = both["separate"]
    shared, shared_calls = both["shared"]
    assert separate_calls == [1] * 16           # 2 K x 2 buckets x 2 languages x 2 lrs
    assert shared_calls == [2] * 8              # 2 K x 2 buckets x 2 lrs, both languages
    assert shared == separate and len(shared) == 8
    stops = {(r["k"], r["bucket"]["index"], r["language"]):
             [run["stopped_epoch"] for run in r["runs"]] for r in shared.values()}
    assert any(stops[(k, i, "de")] != stops[(k, i, "fr")] for k in (1, 2) for i in (0, 1)), \
        "the fixture should make the languages stop at different epochs"
    assert all("candidates" in r for r in shared.values())


def test_each_record_names_the_training_it_shares(both):
    shared, _ = both["shared"]
    training = {(r["k"], r["bucket"]["index"]): set() for r in shared.values()}
    for record in shared.values():
        facts = record["regime"]["training"]
        assert facts["languages"] == list(LANGS)
        training[(record["k"], record["bucket"]["index"])].add(facts["id"])
    assert all(len(ids) == 1 for ids in training.values())       # one id per training
    assert len({next(iter(ids)) for ids in training.values()}) == 4  # four trainings


def test_runs_keep_their_identities_and_group_by_language_set(study, tmp_path):
    separate = expand(parse_config(multi(study, tmp_path / "a", shared_multi=False))).runs
    shared = expand(parse_config(multi(study, tmp_path / "a"))).runs
    assert [r.config_hash for r in shared] == [r.config_hash for r in separate]
    assert {r.group_key for r in shared} == {("xnli", "multi:de,fr", r.start, "")
                                             for r in shared}
    assert len({r.group_key for r in separate}) == 2
    # a multi-stage run trains its own language after its multi epochs: not shared
    staged = multi(study, tmp_path / "b")
    staged["joint"]["multi_epochs"] = 2
    assert not any(r.shared_languages for r in expand(parse_config(staged)).runs)


def test_records_of_the_per_language_way_stay_done(study, both, tmp_path, capsys):
    runs = tmp_path / "runs"
    config = write_config(tmp_path / "sweep.yaml", multi(study, runs, shared_multi=False))
    assert run_app(["sweep", str(config), "--workers", "0", "--threads", "1"]) == 0
    again = write_config(tmp_path / "again.yaml", multi(study, runs))
    capsys.readouterr()
    assert run_app(["sweep", str(again), "--workers", "0", "--threads", "1"]) == 0
    assert "0 runs completed, 0 failed, 8 already done" in capsys.readouterr().out


def test_a_kill_between_the_languages_records_resumes_to_the_same_records(study, tmp_path):
    """SIGKILL as the second record is about to be written (one language's record of the
    first training written, the other's not): the second start trains what is missing
    (the other language alone) and writes the records of the uninterrupted sweep."""
    runs = tmp_path / "runs"
    config = write_config(tmp_path / "sweep.yaml", multi(study, runs))
    proc = subprocess.run(
        [sys.executable, "-m", "tests.fault_runner", "fsxlt.execution.worker._write_record", "2",
         "SIGKILL", "--", "sweep", str(config), "--workers", "0", "--threads", "1"],
        cwd=REPO, capture_output=True, text=True, timeout=600,
        env={**os.environ, "PYTHONPATH": str(REPO)})
    assert proc.returncode == -signal.SIGKILL, proc.stderr[-2000:]
    assert len(records(runs)) == 1
    assert run_app(["sweep", str(config), "--workers", "0", "--threads", "1"]) == 0
    reference = tmp_path / "reference"
    reference_config = write_config(tmp_path / "reference.yaml", multi(study, reference))
    assert run_app(["sweep", str(reference_config), "--workers", "0", "--threads", "1"]) == 0
    assert records(runs) == records(reference)


def test_ray_executor_trains_once_too_and_writes_the_same_records(study, both, tmp_path):
    ray = ray_or_fail()
    runs = tmp_path / "shared"
    ray.init(address="local", num_cpus=1, include_dashboard=False,  # never a cluster
             log_to_driver=False)  # another test file started (Ray would join one)
    try:
        result = run_sweep(parse_config(multi(study, runs)), executor="ray", cpus_per_task=1,
                           save_predictions=True)
    finally:
        ray.shutdown()
    assert len(result.completed) == 8 and not result.failed
    assert records(runs) == both["shared"][0]
