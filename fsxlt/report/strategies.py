"""Shot-selection strategies judged against random buckets from the same pools.

Runs on a strategy's buckets are arms ``<arm>~<strategy>`` (``full~diverse``).
For every (task, language, K, arm) that has runs on ``random`` buckets and on
another strategy's, with the strategy's bucket scores ``s`` and the random
ones ``r`` (points):

- the difference of means ``mean(s) - mean(r)`` with a 95% percentile
  bootstrap interval: ``n_boot`` times, ``s`` and ``r`` are each resampled
  with replacement (the two are separate samples), from a NumPy generator
  seeded with ``seed`` and the cell's name;
- the probability that a strategy bucket beats a random one,
  ``U / (len(s) * len(r))`` with ``U`` scipy's Mann-Whitney U statistic of
  ``s`` (ties count one half), and the test's two-sided p-value;
- where each strategy bucket falls in the random distribution is drawn by
  :func:`plot_strategies`: the random scores as a violin with their points,
  each strategy's scores beside it.
"""

from __future__ import annotations

import zlib
from pathlib import Path

import numpy as np
import pandas as pd

from fsxlt.errors import FsxltError
from fsxlt.execution.plan import arm_strategy
from fsxlt.report.records import Records
from fsxlt.report.tables import Table, arm_label, fmt

RANDOM = "random"
COLUMNS = ["task", "language", "k", "arm", "strategy", "n", "mean", "random_n", "random_mean",
           "diff", "ci_low", "ci_high", "p_beat", "u", "p_value"]


def diff_of_means_ci(s: np.ndarray, r: np.ndarray, *, seed: int, key: str,
                     n_boot: int = 10_000, level: float = 0.95) -> tuple[float, float]:
    """Percentile bootstrap interval of ``mean(s) - mean(r)``, resampling each sample."""
    rng = np.random.default_rng([int(seed), zlib.crc32(key.encode("utf-8"))])
    means_s = s[rng.integers(0, len(s), size=(n_boot, len(s)))].mean(axis=1)
    means_r = r[rng.integers(0, len(r), size=(n_boot, len(r)))].mean(axis=1)
    tail = 100 * (1 - level) / 2
    low, high = np.percentile(means_s - means_r, [tail, 100 - tail])
    return float(low), float(high)


def beat_probability(s: np.ndarray, r: np.ndarray) -> tuple[float, float, float]:
    """``(P(a strategy bucket beats a random one), U, two-sided p)`` by Mann-Whitney U."""
    from scipy.stats import mannwhitneyu

    result = mannwhitneyu(s, r, alternative="two-sided")
    u = float(result.statistic)
    return u / (len(s) * len(r)), u, float(result.pvalue)


def judge(records: Records, *, seed: int = 0, n_boot: int = 10_000) -> pd.DataFrame:
    """One row per (task, language, K, arm, strategy other than random)."""
    scores = records.scores.copy()
    split = scores["arm"].map(arm_strategy)
    scores["base"] = [base for base, _ in split]
    scores["strategy"] = [strategy for _, strategy in split]
    scores = scores[scores["strategy"] != ""]
    if scores.empty:
        raise FsxltError("no runs on a selection strategy's buckets (arms like full~diverse: "
                         "build them with fsxlt select, run them with fsxlt sweep)")
    rows = []
    for (task, lang, k, base), cell in scores.groupby(["task", "language", "k", "base"],
                                                      sort=True):
        random = 100.0 * cell.loc[cell["strategy"] == RANDOM, "test_score"].to_numpy()
        if len(random) < 2:
            continue
        for strategy, group in cell[cell["strategy"] != RANDOM].groupby("strategy", sort=True):
            s = 100.0 * group["test_score"].to_numpy()
            key = f"{task}/{lang}/{k}/{base}/{strategy}"
            low, high = diff_of_means_ci(s, random, seed=seed, key=key, n_boot=n_boot)
            p_beat, u, p_value = beat_probability(s, random)
            rows.append({"task": task, "language": lang, "k": int(k), "arm": base,
                         "strategy": strategy, "n": len(s), "mean": float(s.mean()),
                         "random_n": len(random), "random_mean": float(random.mean()),
                         "diff": float(s.mean() - random.mean()), "ci_low": low,
                         "ci_high": high, "p_beat": p_beat, "u": u, "p_value": p_value})
    if not rows:
        raise FsxltError("no cell has runs on random buckets from the same pools (at least 2) "
                         "beside another strategy's; run fsxlt select -s random too")
    return pd.DataFrame(rows, columns=COLUMNS)


def strategy_table(result: pd.DataFrame) -> Table:
    rows = [[r.task, r.language, str(r.k), arm_label(r.arm), r.strategy,
             f"{fmt(r.mean)} (n={r.n})", f"{fmt(r.random_mean)} (n={r.random_n})",
             fmt(r.diff, signed=True),
             f"[{fmt(r.ci_low, signed=True)}, {fmt(r.ci_high, signed=True)}]",
             f"{r.p_beat:.2f}", f"{r.p_value:.4f}"]
            for r in result.itertuples(index=False)]
    return Table("Selection strategies against random buckets from the same pools (test, "
                 "points)", ["task", "language", "K", "arm", "strategy", "mean", "random mean",
                             "diff", "95% CI (bootstrap)", "P(beats random)",
                             "Mann-Whitney p"], rows)


def render_strategies(result: pd.DataFrame, fmt_name: str, *, seed: int, n_boot: int) -> str:
    if fmt_name == "csv":
        return result.to_csv(index=False, float_format="%.6f", lineterminator="\n")
    note = (f"diff = strategy mean minus random mean; bootstrap: {n_boot} resamples of each "
            f"sample, seed {seed}, percentile interval. P(beats random) = U / (n x random n), "
            "Mann-Whitney U of the strategy's scores (ties count 1/2), two-sided test.")
    table = strategy_table(result)
    if fmt_name == "md":
        return f"# Selection strategies\n\n{note}\n\n{table.markdown()}"
    return f"% {note}\n{table.latex()}"


def plot_strategies(records: Records, out: str | Path) -> list[Path]:
    """Per (task, language, K, arm): the random buckets' scores as a violin with their
    points, each strategy's bucket scores beside it, the random mean as a line."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from fsxlt.report.plots import _save

    scores = records.scores.copy()
    split = scores["arm"].map(arm_strategy)
    scores["base"] = [base for base, _ in split]
    scores["strategy"] = [strategy for _, strategy in split]
    scores = scores[scores["strategy"] != ""]
    written: list[Path] = []
    for (task, lang, k, base), cell in scores.groupby(["task", "language", "k", "base"],
                                                      sort=True):
        random = 100.0 * cell.loc[cell["strategy"] == RANDOM, "test_score"].to_numpy()
        others = sorted(set(cell["strategy"]) - {RANDOM})
        if len(random) < 2 or not others:
            continue
        fig, ax = plt.subplots(figsize=(1.4 * (len(others) + 1) + 1.5, 3.6))
        ax.violinplot([random], positions=[0], showextrema=False)
        jitter = np.random.default_rng(0).uniform(-0.08, 0.08, size=len(random))
        ax.scatter(jitter, random, s=10, color="grey")
        ax.axhline(random.mean(), color="grey", linestyle="--", linewidth=1)
        for x, strategy in enumerate(others, start=1):
            values = 100.0 * cell.loc[cell["strategy"] == strategy, "test_score"].to_numpy()
            ax.scatter(np.full(len(values), x), values, s=14)
            ax.plot([x - 0.2, x + 0.2], [values.mean()] * 2, color="black")
        ax.set_xticks(range(len(others) + 1), [RANDOM] + others, rotation=20)
        ax.set_ylabel("test score")
        ax.set_title(f"{task} {lang} K={k}, {arm_label(base)}", fontsize=9)
        fig.tight_layout()
        written += _save(fig, Path(out), f"strategies_{task}_{lang}_k{k}_{base}")
    return written
