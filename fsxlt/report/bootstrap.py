"""The percentile bootstrap the report's intervals share: a cell's mean over its buckets
(``fsxlt report``) and a paired difference's (``--compare``), each resampled with a seed
of its own cell, so the same records give the same interval.

A percentile interval is only as good as the resampled statistics it rests on.
:func:`checked_interval` says, instead of printing numbers, when they cannot make one:
a resample whose statistic is not finite (the interval is unbounded), or resamples
that take fewer than :data:`MIN_DISTINCT` distinct values (two or three buckets, or
buckets that nearly all scored alike: the interval's ends would be two of those few
values, not an estimate).
"""

from __future__ import annotations

import zlib

import numpy as np

LEVEL = 0.95
MIN_DISTINCT = 20  # distinct resampled values below which a percentile interval is refused


def resample_index(n: int, *, seed: int, key: str, n_boot: int) -> np.ndarray:
    """``n_boot`` bootstrap resamples (rows) of ``n`` paired items, seeded by ``seed`` and
    the cell's ``key``."""
    rng = np.random.default_rng([int(seed), zlib.crc32(key.encode("utf-8"))])
    return rng.integers(0, n, size=(n_boot, n))


def percentile_interval(values: np.ndarray, level: float = LEVEL) -> tuple[float, float]:
    tail = 100 * (1 - level) / 2
    low, high = np.percentile(values, [tail, 100 - tail])
    return float(low), float(high)


def interval_problem(values: np.ndarray) -> str:
    """Why resampled statistics ``values`` make no percentile interval ("" when they do):
    ``unbounded`` where a resample's statistic is not finite, ``N distinct resampled
    values`` where they take fewer than :data:`MIN_DISTINCT` values."""
    values = np.asarray(values, dtype=float)
    if not np.all(np.isfinite(values)):
        return "unbounded"
    distinct = len(np.unique(np.round(values, 9)))
    if distinct >= MIN_DISTINCT:
        return ""
    return f"{distinct} distinct resampled value{'' if distinct == 1 else 's'}"


def checked_interval(values: np.ndarray, level: float = LEVEL) -> tuple[float, float, str]:
    """The percentile interval of resampled ``values`` and ``""``, or NaN bounds and what
    :func:`interval_problem` says."""
    problem = interval_problem(values)
    if problem:
        return float("nan"), float("nan"), problem
    return (*percentile_interval(values, level), "")


def bootstrap_ci(values: np.ndarray, *, seed: int, key: str, n_boot: int = 10_000,
                 level: float = LEVEL) -> tuple[float, float]:
    """The percentile interval of the mean of ``values`` over ``n_boot`` resamples."""
    index = resample_index(len(values), seed=seed, key=key, n_boot=n_boot)
    return percentile_interval(values[index].mean(axis=1), level)


def checked_bootstrap_ci(values: np.ndarray, *, seed: int, key: str, n_boot: int = 10_000,
                         level: float = LEVEL) -> tuple[float, float, str]:
    """:func:`bootstrap_ci` through :func:`checked_interval`: NaN bounds and the reason
    where the resampled means make no interval."""
    index = resample_index(len(values), seed=seed, key=key, n_boot=n_boot)
    return checked_interval(values[index].mean(axis=1), level)


def interval_text(low: float, high: float, problem: str = "", *, signed: bool = False) -> str:
    """``[low, high]``, or the reason there is none (``–`` where there is neither)."""
    if isinstance(problem, str) and problem:
        return f"none ({problem})"
    if np.isnan(low) or np.isnan(high):
        return "–"
    if signed:
        return f"[{low:+.2f}, {high:+.2f}]"
    return f"[{low:.2f}, {high:.2f}]"
