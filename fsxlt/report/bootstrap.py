"""The percentile bootstrap the report's intervals share: a cell's mean over its buckets
(``fsxlt report``) and a paired difference's (``--compare``), each resampled with a seed
of its own cell, so the same records give the same interval."""

from __future__ import annotations

import zlib

import numpy as np

LEVEL = 0.95


def resample_index(n: int, *, seed: int, key: str, n_boot: int) -> np.ndarray:
    """``n_boot`` bootstrap resamples (rows) of ``n`` paired items, seeded by ``seed`` and
    the cell's ``key``."""
    rng = np.random.default_rng([int(seed), zlib.crc32(key.encode("utf-8"))])
    return rng.integers(0, n, size=(n_boot, n))


def percentile_interval(values: np.ndarray, level: float = LEVEL) -> tuple[float, float]:
    tail = 100 * (1 - level) / 2
    low, high = np.percentile(values, [tail, 100 - tail])
    return float(low), float(high)


def bootstrap_ci(values: np.ndarray, *, seed: int, key: str, n_boot: int = 10_000,
                 level: float = LEVEL) -> tuple[float, float]:
    """The percentile interval of the mean of ``values`` over ``n_boot`` resamples."""
    index = resample_index(len(values), seed=seed, key=key, n_boot=n_boot)
    return percentile_interval(values[index].mean(axis=1), level)
