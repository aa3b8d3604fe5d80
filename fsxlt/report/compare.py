"""Paired comparison of two arms over the buckets both ran (the point of fixed buckets).

For every (task, language, K) where both arms have records, the differences
``d_b = score_A(b) - score_B(b)`` over the shared buckets ``b`` give:

- the mean paired difference (points);
- a 95% percentile bootstrap confidence interval of that mean:
  ``n_boot`` resamples of the buckets with replacement, from a NumPy
  generator seeded with ``seed`` and the cell's name (so every cell's
  interval is reproducible and independent of which other cells exist);
- the two-sided Wilcoxon signed-rank p-value (``scipy.stats.wilcoxon``,
  zero differences dropped; 1.0 when every difference is zero, none for a
  single bucket).
"""

from __future__ import annotations

import warnings
import zlib

import numpy as np
import pandas as pd

from fsxlt.errors import FsxltError
from fsxlt.report.records import Records
from fsxlt.report.tables import Table, fmt

COLUMNS = ["task", "language", "k", "n", "mean_diff", "ci_low", "ci_high", "p_value"]


def bootstrap_ci(diffs: np.ndarray, *, seed: int, key: str, n_boot: int = 10_000,
                 level: float = 0.95) -> tuple[float, float]:
    rng = np.random.default_rng([int(seed), zlib.crc32(key.encode("utf-8"))])
    index = rng.integers(0, len(diffs), size=(n_boot, len(diffs)))
    means = diffs[index].mean(axis=1)
    tail = 100 * (1 - level) / 2
    low, high = np.percentile(means, [tail, 100 - tail])
    return float(low), float(high)


def wilcoxon_p(diffs: np.ndarray) -> float:
    from scipy.stats import wilcoxon

    if len(diffs) < 2:
        return float("nan")
    if np.all(diffs == 0):
        return 1.0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return float(wilcoxon(diffs, zero_method="wilcox").pvalue)


def compare(records: Records, arm_a: str, arm_b: str, *, seed: int = 0,
            n_boot: int = 10_000) -> pd.DataFrame:
    """One row per (task, language, K): n shared buckets, mean A-B (points), CI, p."""
    scores = records.scores
    arms = sorted(set(scores["arm"]))
    for arm in (arm_a, arm_b):
        if arm not in arms:
            raise FsxltError(f"no records for method {arm!r}; found: {', '.join(arms) or 'none'}")
    key = ["task", "language", "k", "bucket"]
    a = scores.loc[scores["arm"] == arm_a, key + ["test_score"]]
    b = scores.loc[scores["arm"] == arm_b, key + ["test_score"]]
    paired = a.merge(b, on=key, suffixes=("_a", "_b")).sort_values(key)
    if paired.empty:
        raise FsxltError(f"{arm_a} and {arm_b} share no bucket")
    rows = []
    for (task, lang, k), group in paired.groupby(["task", "language", "k"], sort=True):
        diffs = 100.0 * (group["test_score_a"].to_numpy() - group["test_score_b"].to_numpy())
        low, high = bootstrap_ci(diffs, seed=seed, key=f"{task}/{lang}/{k}", n_boot=n_boot)
        rows.append({"task": task, "language": lang, "k": int(k), "n": len(diffs),
                     "mean_diff": float(diffs.mean()), "ci_low": low, "ci_high": high,
                     "p_value": wilcoxon_p(diffs)})
    return pd.DataFrame(rows, columns=COLUMNS)


def compare_table(result: pd.DataFrame, arm_a: str, arm_b: str) -> Table:
    rows = [[r.task, r.language, str(r.k), str(r.n), fmt(r.mean_diff, signed=True),
             f"[{fmt(r.ci_low, signed=True)}, {fmt(r.ci_high, signed=True)}]",
             "–" if np.isnan(r.p_value) else f"{r.p_value:.4f}"]
            for r in result.itertuples(index=False)]
    return Table(f"{arm_a} minus {arm_b}: paired over shared buckets (test, points)",
                 ["task", "language", "K", "n", "mean diff", "95% CI (bootstrap)",
                  "Wilcoxon p"], rows)


def render_compare(result: pd.DataFrame, arm_a: str, arm_b: str, fmt_name: str, *,
                   seed: int, n_boot: int) -> str:
    if fmt_name == "csv":
        return result.to_csv(index=False, float_format="%.6f", lineterminator="\n")
    table = compare_table(result, arm_a, arm_b)
    note = (f"Bootstrap: {n_boot} resamples of the shared buckets, seed {seed}, percentile "
            "interval; Wilcoxon signed-rank, two-sided, zero differences dropped.")
    if fmt_name == "md":
        return f"# Paired comparison\n\n{note}\n\n{table.markdown()}"
    return f"% {note}\n{table.latex()}"
