"""Issue 74, item 3: a sweep that stops a cell when its answer is known. The confidence
sequence's guarantee by simulation from real per-bucket scores (the demo's), under
continuous looks and under the stopping rules themselves; the waves' logic; and a real
sweep that stops, reports it and, started again without the rule, continues the prefix."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy.stats import t as student_t

from fsxlt.cli import run_app
from fsxlt.errors import FsxltError
from fsxlt.execution.stopping import StopRule, parse_stop_rule, wave
from fsxlt.fileio import atomic_write_json
from fsxlt.report.sequential import confidence_sequence, decide, e_value
from tests.sweep_fixtures import build_study, sweep_config, write_config
from tests.train_fixtures import NLI_LABELS, nli_data, write_bucket_set

DEMO = Path(__file__).resolve().parents[1] / "docs" / "results" / "2026-11-25-demo.records.csv"


def demo_cells() -> list[np.ndarray]:
    demo = pd.read_csv(DEMO)
    return [100 * part["test_score"].to_numpy()
            for _, part in demo.groupby(["task", "language", "k"])]


def smoothed(rng, scores: np.ndarray, size: tuple[int, ...]) -> np.ndarray:
    """Draws from a real cell's scores, jittered (scores are continuous; resampling alone
    would tie them), its mean kept."""
    sd = scores.std()
    return rng.choice(scores, size) + rng.normal(0, 0.2 * sd, size)


def test_the_interval_is_where_the_e_value_reaches_one_over_alpha():
    x = np.random.default_rng(0).normal(50, 2, 15)
    low, high, problem = confidence_sequence(x)
    assert problem == "" and low < x.mean() < high
    assert e_value(x, low) == pytest.approx(20) and e_value(x, high) == pytest.approx(20)
    fixed = student_t.ppf(0.975, 14) * x.std(ddof=1) / np.sqrt(15)
    assert 1.4 < (high - low) / 2 / fixed < 2.0  # the price of looking at any time
    assert confidence_sequence(x[:1])[2] == "under 2 buckets"
    assert confidence_sequence(np.full(6, 3.0))[2] == "the buckets do not vary"


def test_every_interval_of_a_sequence_covers_at_once_on_real_scores():
    """Looking after every bucket from the 2nd to the 40th, the sequence misses the mean at
    some look in at most 6% of simulated studies pooled over real cells (the demo's; a
    skewed cell misses more often than a normal one, docs/results); fixed-n t-intervals,
    looked at alike, miss several times as often."""
    rng = np.random.default_rng(74)
    ever = naive = total = 0
    for scores in demo_cells()[::3]:
        truth = scores.mean()
        for study in smoothed(rng, scores, (50, 40)):
            missed = fixed_missed = False
            for n in range(2, 41):
                low, high, problem = confidence_sequence(study[:n])
                missed |= not problem and not low <= truth <= high  # unbounded covers
                half = student_t.ppf(0.975, n - 1) * study[:n].std(ddof=1) / np.sqrt(n)
                fixed_missed |= abs(study[:n].mean() - truth) > half
            ever += missed
            naive += fixed_missed
            total += 1
    assert ever / total <= 0.06 and naive / total > 3 * ever / total


def test_the_stopping_rules_keep_their_coverage_and_error_rates():
    """Stopping once the interval is 2 points wide (looks every 5 buckets from 5), the
    stopped interval covers the cell's mean in at least 94% of studies; a paired comparison
    with no difference is wrongly decided in at most 5%, one with a clear difference stops
    early."""
    rng = np.random.default_rng(3)
    cells = demo_cells()
    covered = total = wrong = 0
    stopped_at = []
    for scores in cells[::6]:
        truth = scores.mean()
        for _ in range(100):
            study = smoothed(rng, scores, (40,))
            for n in range(5, 41, 5):
                made = decide(study[:n], width=2.0, decided=False, min_buckets=5)
                if made.stop or n == 40:
                    covered += made.low <= truth <= made.high
                    total += 1
                    break
            null = smoothed(rng, scores, (40,)) - smoothed(rng, scores, (40,))
            effect = null + 3 * scores.std()
            for n in range(5, 41, 5):
                if decide(null[:n], width=None, decided=True, min_buckets=5).stop:
                    wrong += 1
                    break
            for n in range(5, 41, 5):
                if decide(effect[:n], width=None, decided=True, min_buckets=5).stop or n == 40:
                    stopped_at.append(n)
                    break
    assert covered / total >= 0.94
    assert wrong / total <= 0.05
    assert np.mean(stopped_at) < 15


@pytest.mark.parametrize(("raw", "message"), [
    ({"width": -1}, "width must be a positive number"),
    ({"compare": ["full"]}, "must name two different arms"),
    ({}, "needs width, compare or both"),
    ({"width": 2, "every": 0}, "every must be a whole number >= 1"),
    ({"width": 2, "min_buckets": 4}, "min_buckets must be 5 or more"),
    ({"width": 2, "level": 95}, "level must lie in [0.5, 1)"),
    ({"width": 2, "patience": 3}, "unknown key 'patience'"),
])
def test_a_bad_stop_rule_is_refused_in_one_line(raw, message):
    with pytest.raises(FsxltError, match=message.replace("[", r"\[").replace(")", r"\)")):
        parse_stop_rule(raw, "sweep.yaml")


@dataclass(frozen=True)
class FakeRun:
    record_path: str
    index: int
    k: int = 1


def test_a_wave_runs_each_open_cell_to_its_next_look_in_bucket_order(tmp_path):
    cell_a, cell_b = tmp_path / "xnli/de/k1/full", tmp_path / "xnli/de/k1/lora"
    runs = [FakeRun(str(cell / f"{i:02d}.json"), i) for cell in (cell_a, cell_b)
            for i in range(12)]
    rule = StopRule(width=1.0, min_buckets=4, every=3)
    chosen, _ = wave(rule, [(run, "missing") for run in runs], runs)
    assert sorted((Path(r.record_path).parent.name, r.index) for r, _ in chosen) == [
        (arm, i) for arm in ("full", "lora") for i in range(4)]
    for i, score in enumerate([0.70, 0.71, 0.69, 0.70, 0.70]):  # full: 5 tight buckets
        atomic_write_json(cell_a / f"{i:02d}.json", {
            "format": "fsxlt-adapt-run/1", "status": "ok", "test_score": score})
    pending = [(run, "missing") for run in runs if not Path(run.record_path).is_file()]
    chosen, decisions = wave(StopRule(width=6.0, min_buckets=4, every=3), pending, runs)
    assert decisions[cell_a].stop and decisions[cell_a].buckets == 5
    assert {Path(r.record_path).parent for r, _ in chosen} == {cell_b}
    chosen, decisions = wave(StopRule(width=0.1, min_buckets=4, every=3), pending, runs)
    assert not decisions[cell_a].stop  # another rule: the prefix continues, to its next look
    assert sorted(r.index for r, _ in chosen if Path(r.record_path).parent == cell_a) == [
        5, 6, 7]


N = 12  # buckets in the stopping sweep's set


@pytest.fixture(scope="module")
def study(tmp_path_factory) -> dict[str, Path]:
    """The sweep fixtures' study with a set of 12 buckets for xnli/de K=1 of its own."""
    study = build_study(tmp_path_factory.mktemp("stop-early-study"))
    pool = nli_data(3 * N + 9, seed=77, source="dev-de")
    by_label = {label: [e for e in pool if e.label == label] for label in NLI_LABELS}
    sets = [[by_label[label][b] for label in NLI_LABELS] for b in range(N)]
    used = {ex.id for bucket in sets for ex in bucket}
    study["buckets12"] = study["root"] / "buckets12"
    write_bucket_set(study["buckets12"], "xnli", "de", 1, sets, list(NLI_LABELS),
                     dev_remaining=[e for e in pool if e.id not in used])
    return study


def test_a_sweep_stops_a_cell_says_so_and_continues_the_prefix_later(study, tmp_path, capsys):
    out = tmp_path / "runs"
    common = {"methods": ["full"], "max_epochs": 2, "buckets": str(study["buckets12"]),
              "n_buckets": N, "tasks": {"xnli": {"languages": ["de"], "k": [1]}}}
    config = write_config(tmp_path / "stop.yaml", sweep_config(
        study, out, stop_early={"width": 1000.0, "min_buckets": 5, "every": 2}, **common))
    assert run_app(["sweep", str(config), "--workers", "0", "--threads", "1"]) == 0
    err = capsys.readouterr().err
    cell = out / "xnli" / "de" / "k1" / "full"
    scores = [json.loads(p.read_text())["test_score"] for p in sorted(cell.glob("[0-9]*.json"))]
    stop = json.loads((cell / "stopped.json").read_text())
    # the first look with buckets that differ stops it (at 5, then every 2); a prefix
    assert np.ptp(scores[:stop["buckets"]]) > 0 and np.ptp(scores[:stop["buckets"] - 2]) == 0 \
        or stop["buckets"] == 5
    assert stop["buckets"] == len(scores) < N and stop["last_bucket"] == len(scores) - 1
    assert stop["rule"]["width"] == 1000.0 and stop["planned"] == N
    assert f"stopped xnli/de/k1/full at {len(scores)} of {N} buckets" in err
    assert f"{N - len(scores)} planned runs not needed" in err
    capsys.readouterr()
    assert run_app(["report", str(out)]) == 0
    page = capsys.readouterr().out
    assert "Missing buckets" not in page and "Cells a sweep stopped early" in page
    assert f"xnli/de/k1/full: {len(scores)} of {N} buckets" in page
    # the rule is no part of a run's identity: without it, the prefix stays, the rest runs,
    # and the cell is no longer said to have stopped
    before = {p: p.read_bytes() for p in cell.glob("[0-9]*.json")}
    plain = write_config(tmp_path / "plain.yaml", sweep_config(study, out, **common))
    assert run_app(["sweep", str(plain), "--workers", "0", "--threads", "1"]) == 0
    assert "replacing" not in capsys.readouterr().err
    assert all(p.read_bytes() == content for p, content in before.items())
    assert len(list(cell.glob("[0-9]*.json"))) == N and not (cell / "stopped.json").exists()


def test_the_dry_run_says_the_rule_and_that_its_cost_is_the_most(study, tmp_path, capsys):
    config = write_config(tmp_path / "stop.yaml", sweep_config(
        study, tmp_path / "runs", methods=["full"], buckets=str(study["buckets12"]),
        n_buckets=N, stop_early={"width": 2.0, "compare": ["full", "fc"]},
        tasks={"xnli": {"languages": ["de"], "k": [1]}}))
    assert run_app(["sweep", str(config), "--dry-run"]) == 0
    err = capsys.readouterr().err
    assert ("stop_early: cells may stop from 10 buckets on, looked at every 5 (interval "
            "within 2 points or full against fc decided)") in err
    bad = write_config(tmp_path / "bad.yaml", sweep_config(
        study, tmp_path / "runs", stop_early={"width": 0}))
    assert run_app(["sweep", str(bad), "--dry-run"]) == 2
    assert "stop_early.width must be a positive number" in capsys.readouterr().err
