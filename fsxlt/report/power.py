"""How many buckets a conclusion needs: the smallest difference a number of buckets can
detect, and the buckets a difference needs (issue 74, item 2).

A paired comparison of two arms over the same buckets (``fsxlt report --compare``) tests
the mean of the per-bucket differences; its power rests on their standard deviation
``sd_d`` (points). For ``n`` buckets, a two-sided level ``alpha`` and a wanted ``power``,
the minimum detectable difference (MDD) is the standardised effect ``d`` at which the
paired t-test has that power (``statsmodels``' ``TTestPower``), times ``sd_d``; the
buckets a difference ``delta`` needs solve the same equation for ``n``.

Before a second arm exists, a cell's spread over its buckets ``sd`` bounds the paired
case from above: two arms that share nothing have ``sd_d = sqrt(2) sd``, and pairing
only narrows it where the arms rank the buckets alike. That planning figure is
``TTestIndPower``'s (two arms of ``n`` buckets each, unpaired), a conservative bound.

The report's own test is Wilcoxon's signed-rank test, not the t-test. Its power is
close to the t-test's for well-behaved differences (asymptotic relative efficiency
3/pi, 0.955, under normality) but it has a floor the t-test lacks: with ``n`` buckets and
no ties its smallest two-sided p-value is ``2 / 2**n``, so 5 buckets can never reach
p < 0.05 (:func:`wilcoxon_can_reject`). :func:`simulated_power` checks either test by
resampling the runs' own per-bucket differences.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Sequence

import numpy as np
import pandas as pd

ALPHA = 0.05
POWER = 0.8
BUCKET_COUNTS = (5, 10, 20, 40)
MIN_PILOT = 3  # buckets below which a pilot's spread says too little to plan with


def paired_mdd(sd_diff: float, n: int, *, alpha: float = ALPHA, power: float = POWER
               ) -> float:
    """The smallest mean paired difference (points) the paired t-test over ``n`` buckets
    detects with ``power`` at two-sided level ``alpha`` (NaN below 2 buckets or without
    a positive spread)."""
    from statsmodels.stats.power import TTestPower

    if n < 2 or not sd_diff > 0:
        return float("nan")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        effect = TTestPower().solve_power(effect_size=None, nobs=n, alpha=alpha, power=power,
                                          alternative="two-sided")
    return float(effect) * float(sd_diff)


def unpaired_mdd(sd: float, n: int, *, alpha: float = ALPHA, power: float = POWER) -> float:
    """The smallest difference between two arms of ``n`` buckets each, sharing nothing, that
    a two-sample t-test detects (the planning bound before a second arm ran)."""
    from statsmodels.stats.power import TTestIndPower

    if n < 2 or not sd > 0:
        return float("nan")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        effect = TTestIndPower().solve_power(effect_size=None, nobs1=n, alpha=alpha,
                                             power=power, ratio=1.0, alternative="two-sided")
    return float(effect) * float(sd)


def paired_buckets_needed(sd_diff: float, difference: float, *, alpha: float = ALPHA,
                          power: float = POWER) -> int | None:
    """Buckets the paired t-test needs to detect ``difference`` (points) with ``power``;
    None where it cannot be said (no spread, or no difference)."""
    from statsmodels.stats.power import TTestPower

    if not sd_diff > 0 or not abs(difference) > 0 or not np.isfinite(difference):
        return None
    effect = abs(difference) / sd_diff
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        n = TTestPower().solve_power(effect_size=effect, nobs=None, alpha=alpha, power=power,
                                     alternative="two-sided")
        return _smallest(math.ceil(float(np.atleast_1d(n)[0])), power, lambda m: float(
            TTestPower().power(effect, m, alpha, alternative="two-sided")))


def _smallest(n: int, power: float, power_at: Callable[[int], float]) -> int:
    """The smallest count from a solver's rounded-up ``n`` whose power reaches ``power``
    (the solver's own tolerance can put its answer a hair above a whole number)."""
    n = max(2, n)
    while n > 2 and power_at(n - 1) >= power - 1e-9:
        n -= 1
    while power_at(n) < power - 1e-9:
        n += 1
    return n


def wilcoxon_can_reject(n: int, alpha: float = ALPHA) -> bool:
    """Whether Wilcoxon's signed-rank test over ``n`` untied, non-zero differences can give
    a two-sided p-value under ``alpha`` at all (its smallest is ``2 / 2**n``)."""
    return n >= 1 and 2.0 / 2.0 ** n < alpha


SMOOTHING = 0.2  # the smoothed bootstrap's kernel width, as a share of the differences' std


def simulated_power(diffs: np.ndarray, n: int, difference: float, *, test: str = "wilcoxon",
                    alpha: float = ALPHA, n_sim: int = 2000, seed: int = 0) -> float:
    """The share of ``n_sim`` simulated studies of ``n`` buckets whose test rejects, each
    study's differences drawn from the observed ``diffs`` centred on ``difference`` (their
    own shape and spread, the effect set).

    The draws are a smoothed bootstrap that keeps the differences' variance (a resampled
    value plus normal noise of :data:`SMOOTHING` times their std, shrunk back to that std):
    scores are continuous, and plain resampling would tie most studies' differences, which
    no real study shows. Wilcoxon's p-values are then scipy's exact ones up to 50 buckets
    and its normal approximation above, as ``scipy.stats.wilcoxon`` gives them for
    untied differences (and so as ``fsxlt report --compare`` does)."""
    from scipy.stats import ttest_1samp, wilcoxon

    if test not in ("t", "wilcoxon"):
        raise ValueError(f"test must be 't' or 'wilcoxon', not {test!r}")
    diffs = np.asarray(diffs, dtype=float)
    centred = diffs - diffs.mean()
    sd = float(np.std(diffs))
    rng = np.random.default_rng([int(seed), int(n)])
    draws = rng.choice(centred, size=(n_sim, n))
    if sd > 0:
        draws = (draws + rng.normal(0.0, SMOOTHING * sd, size=draws.shape)) / np.sqrt(
            1 + SMOOTHING ** 2)
    draws += difference
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        if test == "t":
            p = ttest_1samp(draws, 0.0, axis=1).pvalue
        else:
            p = wilcoxon(draws, axis=1, zero_method="wilcox",
                         method="exact" if n <= 50 else "asymptotic").pvalue
    return float(np.mean(np.nan_to_num(p, nan=1.0) < alpha))


def mdd_columns(counts: Sequence[int]) -> list[str]:
    return [f"mdd_{n}" for n in counts]


def paired_power(compared: pd.DataFrame, sd_diffs: Sequence[float], *,
                 counts: Sequence[int] = BUCKET_COUNTS, difference: float | None = None,
                 alpha: float = ALPHA, power: float = POWER) -> pd.DataFrame:
    """Beside each compared cell (rows of :func:`~fsxlt.report.compare.compare_pairs`, with
    the standard deviation of its per-bucket differences ``sd_diffs``): the MDD at each of
    ``counts`` buckets, the buckets the observed difference needs and, with
    ``difference``, the buckets that one needs."""
    rows = []
    for row, sd_d in zip(compared.itertuples(index=False), sd_diffs, strict=True):
        usable = row.n >= MIN_PILOT and sd_d > 0
        entry = {"task": row.task, "language": row.language, "k": int(row.k), "n": int(row.n),
                 "mean_diff": row.mean_diff, "sd_diff": sd_d}
        for n in counts:
            entry[f"mdd_{n}"] = paired_mdd(sd_d, n, alpha=alpha, power=power) if usable \
                else float("nan")
        entry["needed_observed"] = paired_buckets_needed(
            sd_d, row.mean_diff, alpha=alpha, power=power) if usable else None
        if difference is not None:
            entry["needed_named"] = paired_buckets_needed(
                sd_d, difference, alpha=alpha, power=power) if usable else None
        rows.append(entry)
    return pd.DataFrame(rows)


def cell_power(cells: pd.DataFrame, *, counts: Sequence[int] = BUCKET_COUNTS,
               difference: float | None = None, alpha: float = ALPHA,
               power: float = POWER) -> pd.DataFrame:
    """For each cell (rows with ``task, arm, language, k, n, std`` in points): the
    half-width of its mean's 95% t-interval and the unpaired MDD against a second arm, at
    each of ``counts`` buckets; with ``difference``, the buckets per arm it needs unpaired
    (an upper bound: pairing can only lower it)."""
    from scipy.stats import t as student_t
    from statsmodels.stats.power import TTestIndPower

    rows = []
    for row in cells.itertuples(index=False):
        usable = row.n >= MIN_PILOT and row.std > 0
        entry = {"task": row.task, "arm": row.arm, "language": row.language, "k": int(row.k),
                 "n": int(row.n), "std": row.std}
        for n in counts:
            entry[f"half_width_{n}"] = (float(student_t.ppf(1 - alpha / 2, n - 1))
                                        * row.std / math.sqrt(n) if usable and n > 1
                                        else float("nan"))
            entry[f"mdd_{n}"] = unpaired_mdd(row.std, n, alpha=alpha, power=power) \
                if usable else float("nan")
        if difference is not None:
            needed = None
            if usable and difference > 0:
                effect = difference / row.std
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    solved = TTestIndPower().solve_power(effect_size=effect, nobs1=None,
                                                         alpha=alpha, power=power, ratio=1.0)
                    needed = _smallest(math.ceil(float(np.atleast_1d(solved)[0])), power,
                                       lambda m, e=effect: float(TTestIndPower().power(
                                           e, m, alpha, ratio=1.0)))
            entry["needed_named"] = needed
        rows.append(entry)
    return pd.DataFrame(rows)
