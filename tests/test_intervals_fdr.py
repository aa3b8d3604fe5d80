"""Issue 74, items 4 and 5: intervals that say when they cannot be computed, the false
discovery rate across the cells of a comparison, and several arms ranked with ties."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from statsmodels.stats.multitest import multipletests

from fsxlt.cli import run_app
from fsxlt.fileio import atomic_write_json
from fsxlt.report import load_records
from fsxlt.report.bootstrap import checked_bootstrap_ci, interval_problem, interval_text
from fsxlt.report.compare import (
    bh_adjusted,
    compare,
    pitman_morgan_p,
    sd_ratio_interval,
    spread,
    wilcoxon_p,
)
from fsxlt.report.ranking import rank
from tests.sweep_fixtures import adapt_record

DEMO = Path(__file__).resolve().parents[1] / "docs" / "results" / "2026-11-25-demo.records.csv"


def write_runs(root: Path, scores: dict[tuple[str, int, str], list[float]]) -> Path:
    for (lang, k, arm), values in scores.items():
        for index, score in enumerate(values):
            atomic_write_json(root / "xnli" / lang / f"k{k}" / arm / f"{index:02d}.json",
                              adapt_record(lang, k, arm, index, score))
    return root


def test_a_bootstrap_over_few_values_or_unbounded_resamples_gives_no_interval():
    rng = np.random.default_rng(0)
    for n in (2, 3):  # at most 3 and 10 distinct resampled means
        low, high, problem = checked_bootstrap_ci(rng.normal(50, 3, n), seed=0, key="x")
        assert np.isnan(low) and np.isnan(high) and problem.endswith("distinct resampled values")
    # buckets that nearly all scored alike: 7 distinct means over 6 buckets
    assert "distinct" in checked_bootstrap_ci(np.array([0, 0, 0, 0, 0, 5.0]), seed=0,
                                              key="x")[2]
    assert interval_problem(np.array([1.0, np.inf, 2.0])) == "unbounded"
    low, high, problem = checked_bootstrap_ci(rng.normal(50, 3, 10), seed=0, key="x")
    assert problem == "" and low < high
    assert interval_text(np.nan, np.nan, "unbounded") == "none (unbounded)"
    assert interval_text(1.0, 2.0, "", signed=True) == "[+1.00, +2.00]"


def test_the_spread_ratio_interval_inverts_the_pitman_morgan_test():
    """The interval's ends are the ratios at which the test the report prints has p = 0.05,
    so the two never disagree; it is finite where the bootstrap's was 5.9e14 (issue 74)."""
    rng = np.random.default_rng(3)
    for n in (4, 6, 12, 40):
        a = 50 + rng.normal(0, 3, n)
        b = 0.5 * a + rng.normal(0, 1, n)
        low, high, problem = sd_ratio_interval(a, b)
        assert problem == "" and low < np.std(a, ddof=1) / np.std(b, ddof=1) < high
        assert pitman_morgan_p(a, low * b) == pytest.approx(0.05, abs=1e-6)
        assert pitman_morgan_p(a, high * b) == pytest.approx(0.05, abs=1e-6)
    # the case: 6 buckets, one arm nearly constant (a resample of it has no spread)
    a, b = np.array([61.0, 64, 58, 66, 60, 63]), np.array([70.0, 70, 70, 70, 70, 70.5])
    low, high, problem = sd_ratio_interval(a, b)
    assert problem == "" and np.isfinite(high) and high < 1e4
    still = spread(a, np.full(6, 70.0))
    assert np.isnan(still["sd_ratio_low"]) and still["sd_ratio_problem"] == (
        "B does not vary: unbounded")


def test_the_spread_ratio_interval_covers_under_normal_scores():
    rng = np.random.default_rng(11)
    for n in (6, 20):
        covered = 0
        for _ in range(2000):
            a = rng.normal(0, 2, n)
            b = 0.6 * a + rng.normal(0, 1.5, n)   # true ratio: 2 / sqrt(0.6^2 * 4 + 1.5^2)
            low, high, _ = sd_ratio_interval(a, b)
            covered += low <= 2 / np.sqrt(0.36 * 4 + 2.25) <= high
        assert covered / 2000 >= 0.94


def demo_cells() -> list[np.ndarray]:
    """The demo's per-bucket test scores (points), one array per (task, language, K)."""
    demo = pd.read_csv(DEMO)
    return [100 * part["test_score"].to_numpy()
            for _, part in demo.groupby(["task", "language", "k"]) if len(part) >= 10]


def test_the_false_discovery_rate_across_cells_stays_under_its_level():
    """Paired differences drawn from the demo's real per-bucket scores (two draws from one
    cell: symmetric about 0 under no effect); a third of the cells get a real effect."""
    rng = np.random.default_rng(2026)
    cells = demo_cells()
    assert len(cells) >= 10
    fdp, found = [], 0
    for _ in range(300):
        p, true = [], []
        for index, scores in enumerate(cells[:15]):
            effect = 0.8 * np.std(scores) if index % 3 == 0 else 0.0
            diffs = rng.choice(scores, 20) - rng.choice(scores, 20) + effect
            p.append(wilcoxon_p(diffs))
            true.append(effect > 0)
        q = bh_adjusted(np.array(p))
        found_now = q < 0.05
        false = found_now & ~np.array(true)
        fdp.append(false.sum() / max(found_now.sum(), 1))
        found += found_now.sum()
    assert found > 0 and np.mean(fdp) <= 0.05


def test_compare_adds_bh_q_and_says_where_an_interval_cannot_be_had(tmp_path, capsys):
    rng = np.random.default_rng(1)
    scores = {}
    for lang in ("de", "fr", "es"):
        scores[(lang, 1, "full")] = list(0.6 + rng.normal(0, 0.02, 8))
        scores[(lang, 1, "lora")] = list(0.55 + rng.normal(0, 0.02, 8))
    scores[("hi", 1, "full")] = [0.5, 0.52, 0.51]
    scores[("hi", 1, "lora")] = [0.4, 0.4, 0.4]
    runs = write_runs(tmp_path / "runs", scores)
    result = compare(load_records(runs), "full", "lora", n_boot=2000)
    tested = result["p_value"].notna()
    assert list(result.loc[tested, "q_value"]) == pytest.approx(list(
        multipletests(result.loc[tested, "p_value"], method="fdr_bh")[1]))
    hi = result[result["language"] == "hi"].iloc[0]
    assert hi["ci_problem"].endswith("distinct resampled values") and np.isnan(hi["ci_low"])
    assert hi["sd_ratio_problem"] == "B does not vary: unbounded"
    assert run_app(["report", str(runs), "--compare", "full", "lora"]) == 0
    printed = capsys.readouterr().out
    assert "BH q" in printed and "MDD at 40" in printed  # item 2: power beside each diff
    assert "none (B does not vary: unbounded)" in printed
    assert "distinct resampled values)" in printed and "e+" not in printed


def test_three_arms_rank_with_ties_where_no_test_separates_them(tmp_path, capsys):
    rng = np.random.default_rng(4)
    base = rng.normal(0, 0.02, 20)
    scores = {("de", 1, "full"): list(0.70 + base + rng.normal(0, 0.005, 20)),
              ("de", 1, "lora"): list(0.60 + base + rng.normal(0, 0.005, 20)),
              ("de", 1, "bitfit"): list(0.60 + base + rng.normal(0, 0.005, 20))}
    runs = write_runs(tmp_path / "runs", scores)
    ranked = rank(load_records(runs), ["full", "lora", "bitfit"], n_boot=500)
    by_arm = ranked.set_index("arm")
    assert by_arm.loc["full", "rank"] == 1 and by_arm.loc["full", "tied_with"] == ""
    assert by_arm.loc["lora", "rank"] == by_arm.loc["bitfit", "rank"] == 2
    assert by_arm.loc["lora", "tied_with"] == "bitfit"
    assert by_arm.loc["bitfit", "beaten_by"] == "full"
    out = tmp_path / "report"
    assert run_app(["report", str(runs), "--rank", "full", "--rank", "lora", "--rank",
                    "bitfit", "--out", str(out)]) == 0
    assert "arms ranked with ties" in capsys.readouterr().out
    assert (out / "rank_full_lora_bitfit.md").is_file()
    assert run_app(["report", str(runs), "--rank", "full"]) == 2
    assert "at least two different arms" in capsys.readouterr().err
    assert run_app(["report", str(runs), "--rank", "full", "--rank", "lora", "--compare",
                    "full", "lora"]) == 2
