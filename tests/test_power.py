"""Issue 74, item 2: power before a study. The minimum detectable difference and the
buckets a difference needs, against the noncentral t distribution (scipy) and against
simulation from real per-bucket scores (the demo's records)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy.stats import nct, wilcoxon
from scipy.stats import t as student_t

from fsxlt.cli import run_app
from fsxlt.fileio import atomic_write_json
from fsxlt.report.power import (
    paired_buckets_needed,
    paired_mdd,
    simulated_power,
    unpaired_mdd,
    wilcoxon_can_reject,
)
from tests.sweep_fixtures import adapt_record

DEMO = Path(__file__).resolve().parents[1] / "docs" / "results" / "2026-11-25-demo.records.csv"


def t_power(n: int, effect: float, alpha: float = 0.05) -> float:
    """The paired t-test's power from the noncentral t distribution (both tails)."""
    crit = student_t.ppf(1 - alpha / 2, n - 1)
    shift = effect * np.sqrt(n)
    return float(nct.sf(crit, n - 1, shift) + nct.cdf(-crit, n - 1, shift))


@pytest.mark.parametrize("n", [5, 10, 20, 40])
def test_the_mdd_is_where_the_t_test_has_the_power_asked(n):
    sd = 2.7
    mdd = paired_mdd(sd, n)
    assert t_power(n, mdd / sd) == pytest.approx(0.8, abs=1e-4)
    needed = paired_buckets_needed(sd, mdd)
    assert needed == n  # the buckets the MDD needs are the buckets it was computed for
    assert t_power(needed - 1, mdd / sd) < 0.8 <= t_power(needed, mdd / sd) + 1e-6
    # unpaired: two arms of n buckets each; sqrt(2) times the paired MDD, roughly
    assert unpaired_mdd(sd, n) > mdd
    assert unpaired_mdd(sd, 40) == pytest.approx(np.sqrt(2) * paired_mdd(sd, 40), rel=0.02)


def test_the_mdd_is_said_to_be_unknown_without_a_spread():
    assert np.isnan(paired_mdd(0.0, 10)) and np.isnan(paired_mdd(1.0, 1))
    assert paired_buckets_needed(0.0, 1.0) is None and paired_buckets_needed(1.0, 0.0) is None


def test_five_buckets_never_let_wilcoxon_reject():
    assert not wilcoxon_can_reject(5) and wilcoxon_can_reject(6)
    assert wilcoxon(np.arange(1.0, 6.0)).pvalue == pytest.approx(2 / 2 ** 5)
    assert simulated_power(np.random.default_rng(0).normal(5, 1, 10), 5, 5.0) == 0.0


def demo_differences() -> list[np.ndarray]:
    """Differences of two draws from one demo cell's real per-bucket scores (points)."""
    demo = pd.read_csv(DEMO)
    rng = np.random.default_rng(7)
    cells = [100 * part["test_score"].to_numpy()
             for _, part in demo.groupby(["task", "language", "k"])]
    return [rng.choice(scores, 40) - rng.choice(scores, 40) for scores in cells[::6]]


def test_simulated_power_at_the_mdd_is_what_was_asked_on_real_scores():
    """Resampling the demo's own differences, the t-test rejects at the MDD about 80% of the
    time at 10 and 20 buckets; Wilcoxon, the report's test, a little less or more."""
    for diffs in demo_differences():
        sd = float(np.std(diffs, ddof=1))
        for n in (10, 20):
            mdd = paired_mdd(sd, n)
            assert simulated_power(diffs, n, mdd, test="t", n_sim=4000) == pytest.approx(
                0.8, abs=0.06)
            assert simulated_power(diffs, n, mdd, n_sim=4000) == pytest.approx(0.8, abs=0.1)
            assert simulated_power(diffs, n, 0.0, test="t", n_sim=4000) < 0.075


@pytest.fixture
def pilot(tmp_path) -> Path:
    rng = np.random.default_rng(3)
    for lang in ("de", "fr"):
        base = rng.normal(0.6, 0.03, 12)
        for arm, shift in (("full", 0.02), ("lora", 0.0)):
            for index, score in enumerate(base + shift + rng.normal(0, 0.01, 12)):
                atomic_write_json(tmp_path / "runs" / "xnli" / lang / "k4" / arm
                                  / f"{index:02d}.json", adapt_record(lang, 4, arm, index, score))
    return tmp_path / "runs"


def test_analyze_power_plans_a_paired_comparison_and_a_sweep(pilot, tmp_path, capsys):
    out = tmp_path / "power"
    assert run_app(["analyze", "power", str(pilot), "--compare", "full", "lora",
                    "--difference", "1", "--simulate", "300", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "cannot reach p < 0.05 at all with 5 buckets" in " ".join(printed.split())
    table = pd.read_csv(out / "power.csv")
    assert list(table["language"]) == ["de", "fr"]
    for row in table.itertuples(index=False):
        assert row.mdd_40 < row.mdd_20 < row.mdd_10 < row.mdd_5
        assert row.mdd_10 == pytest.approx(paired_mdd(row.sd_diff, 10))
        assert row.needed_named == paired_buckets_needed(row.sd_diff, 1.0)
        assert row.sim_wilcoxon_5 == 0.0 and 0.6 < row.sim_t_10 < 0.95
    config = tmp_path / "sweep.yaml"
    config.write_text("out: runs\nbuckets: b\nstart: s\nmethods: [full]\nn_buckets: 16\n"
                      "tasks:\n  xnli: {languages: [de, es], k: [4]}\n")
    assert run_app(["analyze", "power", str(pilot), "--config", str(config)]) == 0
    captured = capsys.readouterr()
    assert "1 of the config's 2 cells have no pilot runs to plan from: xnli/es/k4" in (
        captured.err)
    assert "mdd_16" in captured.out and " fr " not in captured.out and "lora" not in (
        captured.out)


@pytest.mark.parametrize(("args", "message"), [
    (["--simulate", "10"], "--simulate needs --compare"),
    (["--alpha", "1.5"], "strictly between 0 and 1"),
    (["--difference", "-1"], "--difference must be >= 0"),
    (["--config", "nowhere.yaml"], "nowhere.yaml: sweep config not found"),
    (["--arm", "bitfit"], "no cell with few-shot records to plan from (arms bitfit)"),
])
def test_analyze_power_refuses_bad_input_in_one_line(pilot, capsys, args, message):
    assert run_app(["analyze", "power", str(pilot), *args]) != 0
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err
