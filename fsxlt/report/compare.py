"""Paired comparison of two arms over the buckets both ran (the point of fixed buckets).

For every (task, language, K) where both arms have records, the differences
``d_b = score_A(b) - score_B(b)`` over the shared buckets ``b`` give:

- the mean paired difference (points);
- a 95% percentile bootstrap confidence interval of that mean:
  ``n_boot`` resamples of the buckets with replacement, from a NumPy
  generator seeded with ``seed`` and the cell's name (so every cell's
  interval is reproducible and independent of which other cells exist);
  none, and ``ci_problem`` says why, where the resampled means take too few
  distinct values (:func:`fsxlt.report.bootstrap.checked_interval`);
- the two-sided Wilcoxon signed-rank p-value (``scipy.stats.wilcoxon``,
  zero differences dropped; none when every difference is zero or for a
  single bucket), and its Benjamini-Hochberg adjusted value ``q_value`` over
  every cell of the comparison (``statsmodels``' ``multipletests``,
  ``fdr_bh``): a cell with ``q_value`` below 0.05 is a discovery at a false
  discovery rate of 5% across the cells compared;
- the spread of each arm over the same buckets (sample standard deviations
  ``sd_a``, ``sd_b``, points), their ratio ``sd_a / sd_b`` with the interval
  that inverts the Pitman-Morgan test (exact for normal paired scores, and
  finite wherever both arms vary; ``sd_ratio_problem`` says where one does
  not), and the Pitman-Morgan p-value for equal variances of paired scores
  (two-sided: the variances are equal exactly when ``A + B`` and ``A - B``
  are uncorrelated, tested with ``scipy.stats.pearsonr``). The spread
  answers "which arm depends more on which shots were drawn"; none below
  three buckets;
- beside every difference, the standard deviation of the per-bucket differences
  ``sd_diff`` and, in the rendered tables, the smallest difference 5, 10, 20 and 40
  buckets would detect and the buckets the observed difference needs
  (:mod:`fsxlt.report.power`);
- the Spearman rank correlation of the two arms' scores over the buckets
  (``rho``, ``rho_p_value``): whether the buckets that suit one arm suit the
  other (none below three buckets or when an arm's scores do not vary).
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from fsxlt.errors import FsxltError
from fsxlt.report.bootstrap import (  # noqa: F401 - re-exported
    LEVEL,
    MIN_DISTINCT,
    bootstrap_ci,
    checked_interval,
    interval_text,
    percentile_interval,
    resample_index,
)
from fsxlt.report.records import Records
from fsxlt.report.tables import Table, fmt

SPREAD_COLUMNS = ["sd_a", "sd_b", "sd_ratio", "sd_ratio_low", "sd_ratio_high",
                  "sd_ratio_problem", "sd_p_value", "rho", "rho_p_value"]
COLUMNS = ["task", "language", "k", "n", "mean_diff", "sd_diff", "ci_low", "ci_high",
           "ci_problem", "p_value", "q_value", *SPREAD_COLUMNS]


def wilcoxon_p(diffs: np.ndarray) -> float:
    from scipy.stats import wilcoxon

    if len(diffs) < 2 or np.all(diffs == 0):  # no test is possible: no p-value
        return float("nan")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return float(wilcoxon(diffs, zero_method="wilcox").pvalue)


def compare(records: Records, arm_a: str, arm_b: str, *, seed: int = 0,
            n_boot: int = 10_000) -> pd.DataFrame:
    """One row per (task, language, K): n shared buckets, mean A-B (points), CI, p."""
    return compare_pairs(pairs(records, arm_a, arm_b), seed=seed, n_boot=n_boot)


def pairs(records: Records, arm_a: str, arm_b: str) -> pd.DataFrame:
    """The two arms' runs paired bucket by bucket (columns ``test_score_a``,
    ``test_score_b`` and the cell's and bucket's keys), checked like with like."""
    scores = records.scores
    arms = sorted(set(scores["arm"]))
    for arm in (arm_a, arm_b):
        if arm not in arms:
            raise FsxltError(f"no records for method {arm!r}; found: {', '.join(arms) or 'none'}")
    key = ["task", "language", "k", "bucket"]
    facts = ["test_score", "bucket_sha256", "test_sha256", "metric"]
    a = scores.loc[scores["arm"] == arm_a, key + facts]
    b = scores.loc[scores["arm"] == arm_b, key + facts]
    if arm_a in records.imported or arm_b in records.imported:
        paired = paired_by_hash(a, b, arm_a, arm_b)
    else:
        paired = a.merge(b, on=key, suffixes=("_a", "_b")).sort_values(key)
    if paired.empty:
        raise FsxltError(f"{arm_a} and {arm_b} share no bucket")
    _check_like_with_like(paired, arm_a, arm_b)
    return paired


def compare_pairs(paired: pd.DataFrame, *, seed: int = 0, n_boot: int = 10_000,
                  ) -> pd.DataFrame:
    """:func:`compare`'s rows from :func:`pairs`' paired runs."""
    rows = []
    for (task, lang, k), group in paired.groupby(["task", "language", "k"], sort=True):
        score_a = 100.0 * group["test_score_a"].to_numpy()
        score_b = 100.0 * group["test_score_b"].to_numpy()
        index = resample_index(len(group), seed=seed, key=f"{task}/{lang}/{k}", n_boot=n_boot)
        diffs = score_a - score_b
        low, high, problem = checked_interval(diffs[index].mean(axis=1))
        rows.append({"task": task, "language": lang, "k": int(k), "n": len(diffs),
                     "mean_diff": float(diffs.mean()),
                     "sd_diff": float(np.std(diffs, ddof=1)) if len(diffs) > 1 else float("nan"),
                     "ci_low": low, "ci_high": high,
                     "ci_problem": problem, "p_value": wilcoxon_p(diffs),
                     **spread(score_a, score_b)})
    result = pd.DataFrame(rows, columns=COLUMNS)
    result["q_value"] = bh_adjusted(result["p_value"].to_numpy(dtype=float))
    return result


def bh_adjusted(p_values: np.ndarray) -> np.ndarray:
    """Benjamini-Hochberg adjusted p-values (``statsmodels``' ``fdr_bh``) over the finite
    ones; NaN stays NaN (no test, no discovery)."""
    from statsmodels.stats.multitest import multipletests

    q = np.full(len(p_values), np.nan)
    finite = np.isfinite(p_values)
    if finite.any():
        q[finite] = multipletests(p_values[finite], method="fdr_bh")[1]
    return q


def paired_by_hash(a: pd.DataFrame, b: pd.DataFrame, arm_a: str, arm_b: str) -> pd.DataFrame:
    """Two arms' rows paired by bucket content (an imported study's bucket numbers need not
    be ours); every cell both arms ran must pair every bucket, on one test set, else the
    cells are refused by name."""
    cell = ["task", "language", "k"]
    for arm, rows in ((arm_a, a), (arm_b, b)):
        known = rows[rows["bucket_sha256"] != ""]
        twice = known[known.duplicated(cell + ["bucket_sha256"], keep=False)]
        if not twice.empty:
            row = twice.iloc[0]
            same = twice[(twice[cell + ["bucket_sha256"]] == row[cell + ["bucket_sha256"]])
                         .all(axis=1)]
            raise FsxltError(
                f"{row['task']}/{row['language']}/k{row['k']}: {arm} ran bucket "
                f"{row['bucket_sha256'][:16]} twice (buckets "
                f"{', '.join(f'{int(i):02d}' for i in sorted(same['bucket']))}); a bucket "
                "pairs once, so these cells do not pair")
    paired = a.merge(b, on=cell + ["bucket_sha256"], suffixes=("_a", "_b"))
    paired = paired.assign(bucket=paired["bucket_a"], bucket_sha256_a=paired["bucket_sha256"],
                           bucket_sha256_b=paired["bucket_sha256"])
    bad = []
    for (task, lang, k), rows_a in a.groupby(cell, sort=True):
        rows_b = b[(b["task"] == task) & (b["language"] == lang) & (b["k"] == k)]
        if rows_b.empty:
            continue
        ours, theirs = set(rows_a["bucket_sha256"]), set(rows_b["bucket_sha256"])
        tests = set(rows_a["test_sha256"]) | set(rows_b["test_sha256"])
        if ours != theirs:
            bad.append(f"{task}/{lang}/k{k} ({len(ours & theirs)} of {len(ours | theirs)} "
                       "buckets pair: another bucket set)")
        elif len(tests - {""}) > 1:
            bad.append(f"{task}/{lang}/k{k} (another test set)")
    if bad:
        raise FsxltError(f"{arm_a} and {arm_b} do not pair bucket for bucket in "
                         f"{len(bad)} cells: {'; '.join(bad[:5])}"
                         + (" ..." if len(bad) > 5 else ""))
    return paired.sort_values(cell + ["bucket"])


def _check_like_with_like(paired: pd.DataFrame, arm_a: str, arm_b: str) -> None:
    """Refuse pairs that are not the same bucket (same index, other content: a set sampled
    again between the two arms) or not scored alike (another metric); pairs are by bucket
    content, not by number."""
    for column, what in (("bucket_sha256", "buckets"), ("metric", "metrics")):
        known = paired[(paired[f"{column}_a"] != "") & (paired[f"{column}_b"] != "")
                       & paired[f"{column}_a"].notna() & paired[f"{column}_b"].notna()]
        differ = known[known[f"{column}_a"] != known[f"{column}_b"]]
        if not differ.empty:
            row = differ.iloc[0]
            raise FsxltError(
                f"{row['task']}/{row['language']}/k{row['k']}: {arm_a} and {arm_b} ran "
                f"different {what} under bucket {int(row['bucket']):02d}"
                + (f" and {len(differ) - 1} more" if len(differ) > 1 else "")
                + (" (a set sampled again between the arms?); pairs must be the same "
                   "bucket" if what == "buckets" else "; scores of two metrics do not pair"))


def test_set_note(records: Records, arm_a: str, arm_b: str) -> str | None:
    """One line when the two arms of a cell were scored on different test examples."""
    scores = records.scores[records.scores["arm"].isin([arm_a, arm_b])
                            & (records.scores["test_sha256"] != "")]
    cells = scores.groupby(["task", "language", "k"])["test_sha256"].nunique()
    mixed = cells[cells > 1]
    if mixed.empty:
        return None
    (task, lang, k), more = mixed.index[0], len(mixed) - 1
    return (f"note: {task}/{lang}/k{k}{f' and {more} more' if more else ''}: {arm_a} and "
            f"{arm_b} were scored on different test examples (another test file, or a "
            "--test-limit sample); their differences mix both")


def spread(score_a: np.ndarray, score_b: np.ndarray) -> dict[str, Any]:
    """Each arm's standard deviation over the paired buckets, their ratio with the
    Pitman-Morgan interval (:func:`sd_ratio_interval`), and the Pitman-Morgan p-value
    (NaN below three buckets; no ratio and no interval where an arm does not vary, and
    ``sd_ratio_problem`` says so)."""
    nan = float("nan")
    if len(score_a) < 3:
        return {**dict.fromkeys(SPREAD_COLUMNS, nan), "sd_ratio_problem": "under 3 buckets"}
    sd_a, sd_b = float(np.std(score_a, ddof=1)), float(np.std(score_b, ddof=1))
    low, high, problem = sd_ratio_interval(score_a, score_b)
    return {"sd_a": sd_a, "sd_b": sd_b, "sd_ratio": sd_a / sd_b if sd_b > 0 else nan,
            "sd_ratio_low": low, "sd_ratio_high": high, "sd_ratio_problem": problem,
            "sd_p_value": pitman_morgan_p(score_a, score_b), **rank_correlation(score_a, score_b)}


def sd_ratio_interval(score_a: np.ndarray, score_b: np.ndarray, level: float = LEVEL,
                      ) -> tuple[float, float, str]:
    """The interval of ``sd_a / sd_b`` for paired scores that inverts the Pitman-Morgan test:
    the ratios ``s`` at which ``A`` and ``s * B`` are not found to differ in variance at
    ``1 - level``. With ``F = var_a / var_b``, ``r`` the correlation of the arms, ``t`` the
    two-sided ``t`` quantile on ``n - 2`` degrees of freedom and
    ``c = 1 + 2 (1 - r^2) t^2 / (n - 2)``, the variance ratio lies in
    ``F (c -+ sqrt(c^2 - 1))``; the ends here are their square roots. Exact for normal
    paired scores, finite wherever both arms vary; NaN bounds and the reason otherwise."""
    from scipy.stats import t as student_t

    n = len(score_a)
    if n < 3:
        return float("nan"), float("nan"), "under 3 buckets"
    var_a, var_b = float(np.var(score_a, ddof=1)), float(np.var(score_b, ddof=1))
    if var_a == 0 or var_b == 0:
        still = " and ".join(arm for arm, var in (("A", var_a), ("B", var_b)) if var == 0)
        return float("nan"), float("nan"), f"{still} does not vary: unbounded"
    r = float(np.corrcoef(score_a, score_b)[0, 1])
    t = float(student_t.ppf(1 - (1 - level) / 2, n - 2))
    c = 1 + 2 * (1 - r * r) * t * t / (n - 2)
    root = np.sqrt(max(c * c - 1, 0.0))
    ratio = var_a / var_b
    return float(np.sqrt(ratio * (c - root))), float(np.sqrt(ratio * (c + root))), ""


def rank_correlation(score_a: np.ndarray, score_b: np.ndarray) -> dict[str, float]:
    """Spearman's rho of two arms' scores over the same buckets, with its p-value (NaN
    when either arm's scores do not vary)."""
    from scipy.stats import spearmanr

    if np.ptp(score_a) == 0 or np.ptp(score_b) == 0:
        return {"rho": float("nan"), "rho_p_value": float("nan")}
    result = spearmanr(score_a, score_b)
    return {"rho": float(result.statistic), "rho_p_value": float(result.pvalue)}


def pitman_morgan_p(score_a: np.ndarray, score_b: np.ndarray) -> float:
    """Two-sided p-value that two paired samples have equal variances (NaN when a sum or
    a difference does not vary, or below three pairs)."""
    from scipy.stats import pearsonr

    sums, diffs = score_a + score_b, score_a - score_b
    if len(sums) < 3 or np.ptp(sums) == 0 or np.ptp(diffs) == 0:
        return float("nan")
    return float(pearsonr(sums, diffs).pvalue)


def compare_table(result: pd.DataFrame, arm_a: str, arm_b: str) -> Table:
    rows = [[r.task, r.language, str(r.k), str(r.n), fmt(r.mean_diff, signed=True),
             interval_text(r.ci_low, r.ci_high, r.ci_problem, signed=True),
             _p(r.p_value), _p(r.q_value)]
            for r in result.itertuples(index=False)]
    return Table(f"{arm_a} minus {arm_b}: paired over shared buckets (test, points)",
                 ["task", "language", "K", "n", "mean diff", "95% CI (bootstrap)",
                  "Wilcoxon p", "BH q"], rows)


def spread_table(result: pd.DataFrame, arm_a: str, arm_b: str) -> Table:
    rows = [[r.task, r.language, str(r.k), str(r.n), fmt(r.sd_a), fmt(r.sd_b),
             fmt(r.sd_ratio), interval_text(r.sd_ratio_low, r.sd_ratio_high,
                                            r.sd_ratio_problem),
             _p(r.sd_p_value), fmt(r.rho), _p(r.rho_p_value)]
            for r in result.itertuples(index=False)]
    return Table(f"spread over the same buckets: {arm_a} against {arm_b} (test std, points)",
                 ["task", "language", "K", "n", f"std {arm_a}", f"std {arm_b}", "ratio",
                  "95% CI (Pitman-Morgan)", "Pitman-Morgan p", "Spearman rho", "rho p"], rows)


def power_table(result: pd.DataFrame, arm_a: str, arm_b: str) -> Table:
    """Beside every paired difference: the smallest difference 5, 10, 20 and 40 buckets
    detect (paired t-test, 5% two-sided, 80% power, from this cell's spread of
    differences) and the buckets the observed difference needs (:mod:`fsxlt.report.power`);
    a count at which the Wilcoxon test cannot reach p < 0.05 at all is marked."""
    from fsxlt.report.power import BUCKET_COUNTS, paired_power, wilcoxon_can_reject

    table = paired_power(result, list(result["sd_diff"]))
    rows = []
    for r in table.itertuples(index=False):
        mdds = [fmt(getattr(r, f"mdd_{n}")) + ("" if wilcoxon_can_reject(n) else WILCOXON_MARK)
                for n in BUCKET_COUNTS]
        needed = "–" if r.needed_observed is None or pd.isna(r.needed_observed) \
            else str(int(r.needed_observed))
        rows.append([r.task, r.language, str(r.k), str(r.n), fmt(r.mean_diff, signed=True),
                     fmt(r.sd_diff), *mdds, needed])
    return Table(f"{arm_a} against {arm_b}: the smallest difference n buckets detect (points; "
                 "paired t-test, 5% two-sided, 80% power, from the cell's spread of "
                 f"differences; {WILCOXON_MARK}: Wilcoxon cannot reach p < 0.05 with so few)",
                 ["task", "language", "K", "n", "mean diff", "std of diffs",
                  *[f"MDD at {n}" for n in BUCKET_COUNTS], "buckets for this diff"], rows)


WILCOXON_MARK = "‡"


def _p(value: float) -> str:
    if np.isnan(value):
        return "–"
    return "<0.0001" if value < 0.0001 else f"{value:.4f}"


def compare_note(result: pd.DataFrame, *, seed: int, n_boot: int) -> str:
    """What a comparison's numbers are, in words (and why a p-value is missing)."""
    note = (f"Bootstrap: {n_boot} resamples of the shared buckets, seed {seed}, percentile "
            f"interval (none where the resampled means take fewer than {MIN_DISTINCT} "
            "distinct values); Wilcoxon signed-rank, two-sided, zero differences dropped; BH "
            f"q: Benjamini-Hochberg over the {int(result['p_value'].notna().sum())} cells "
            "tested (a cell under 0.05 is a discovery at a 5% false discovery rate). Spread: "
            "sample std over the same buckets, ratio A/B with the interval that inverts the "
            "Pitman-Morgan test (exact for normal scores; none where an arm does not vary); "
            "Pitman-Morgan test of equal variances (paired), two-sided; Spearman rank "
            "correlation of the arms' scores over the buckets.")
    if result["p_value"].isna().any():
        note += (" Wilcoxon p – : no test is possible (every paired difference is 0, or "
                 "fewer than 2 pairs).")
    return note


def render_compare(result: pd.DataFrame, arm_a: str, arm_b: str, fmt_name: str, *,
                   seed: int, n_boot: int) -> str:
    if fmt_name == "csv":
        return result.to_csv(index=False, float_format="%.6f", lineterminator="\n")
    tables = [compare_table(result, arm_a, arm_b), spread_table(result, arm_a, arm_b),
              power_table(result, arm_a, arm_b)]
    note = compare_note(result, seed=seed, n_boot=n_boot)
    if fmt_name == "md":
        return "# Paired comparison\n\n" + note + "\n\n" + "\n".join(
            t.markdown() for t in tables)
    return f"% {note}\n" + "\n".join(t.latex() for t in tables)


def compare_html(result: pd.DataFrame, arm_a: str, arm_b: str, root: Any,
                 images: Sequence[str], *, seed: int, n_boot: int) -> str:
    """The paired comparison as one self-contained HTML page, each compared cell's
    per-bucket plot inline (read from ``root``)."""
    from pathlib import Path

    from fsxlt.report import html

    sections = [html.notes([compare_note(result, seed=seed, n_boot=n_boot)]),
                html.table(compare_table(result, arm_a, arm_b)),
                html.table(spread_table(result, arm_a, arm_b)),
                html.table(power_table(result, arm_a, arm_b))]
    if images:
        sections += ["<h2>Per bucket</h2>"] + [html.image(Path(root) / rel, Path(rel).stem)
                                               for rel in images]
    return html.page(f"Paired comparison: {arm_a} against {arm_b}", sections)
