"""The seeds-versus-buckets ablation (docs/protocol.md#ablations).

For one target language and one K (1 in the study): adapt on ``n_buckets``
different buckets with one fixed seed, and on one fixed bucket with
``n_seeds`` different seeds (``fixed_seed``, ``fixed_seed + 1``, ...), all
else equal. If buckets matter more than seeds, the first distribution is
wider: the max - min spread of each (dev and test scores, in points)
summarises it, a box plot shows it.

The run (fixed bucket, fixed seed) belongs to both arms; it is trained once
and reused. Every run goes through one :class:`~fsxlt.training.AdaptEngine`
(data tokenized and starting weights loaded once), so a run is a
deterministic function of (bucket, seed) on CPU.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import pandas as pd

from fsxlt.errors import FsxltError
from fsxlt.sampling.store import Bucket

ARMS = ("buckets", "seeds")


def ablation_plan(bucket_indices: Sequence[int], *, n_buckets: int, n_seeds: int,
                  fixed_seed: int, fixed_bucket: int) -> list[tuple[str, int, int]]:
    """``(arm, bucket index, seed)`` of every run, buckets arm first."""
    if n_buckets < 1 or n_seeds < 1:
        raise FsxltError("the ablation needs at least one bucket and one seed")
    available = sorted(bucket_indices)
    if len(available) < n_buckets:
        raise FsxltError(f"the bucket set holds {len(available)} buckets, the ablation asks "
                         f"for {n_buckets}")
    if fixed_bucket not in available:
        raise FsxltError(f"bucket {fixed_bucket} is not in the bucket set")
    plan = [("buckets", index, fixed_seed) for index in available[:n_buckets]]
    plan += [("seeds", fixed_bucket, fixed_seed + i) for i in range(n_seeds)]
    return plan


def seeds_vs_buckets(engine: Any, buckets: Sequence[Bucket], *, n_buckets: int = 40,
                     n_seeds: int = 40, fixed_seed: int | None = None, fixed_bucket: int = 0,
                     method: str = "full", lrs: Sequence[float] | None = None,
                     max_epochs: int | None = None, patience: int | None = None,
                     on_run: Callable[[dict[str, Any]], None] | None = None) -> pd.DataFrame:
    """Run both arms with ``engine`` (an :class:`~fsxlt.training.AdaptEngine`).

    Returns one row per run: arm, bucket, seed, selected lr, best epoch, dev
    and test score (points; test is empty without a test set).
    """
    by_index = {b.index: b for b in buckets}
    seed = engine.task.training.seed if fixed_seed is None else int(fixed_seed)
    plan = ablation_plan(list(by_index), n_buckets=n_buckets, n_seeds=n_seeds,
                         fixed_seed=seed, fixed_bucket=fixed_bucket)
    done: dict[tuple[int, int], dict[str, Any]] = {}
    rows = []
    for arm, index, run_seed in plan:
        if (index, run_seed) not in done:
            record = engine.adapt(by_index[index], method=method, lrs=lrs, seed=run_seed,
                                  max_epochs=max_epochs, patience=patience)
            test = record["test_score"]
            done[(index, run_seed)] = {
                "bucket": index, "seed": run_seed, "lr": record["selected_lr"],
                "best_epoch": record["best_epoch"], "dev_score": 100 * record["dev_score"],
                "test_score": None if test is None else 100 * test}
        row = {"arm": arm, **done[(index, run_seed)]}
        rows.append(row)
        if on_run is not None:
            on_run(row)
    return pd.DataFrame(rows)


def spread_table(runs: pd.DataFrame) -> pd.DataFrame:
    """Per arm and score (dev, test): runs, mean, std, min, max and spread (max - min)."""
    rows = []
    for arm in ARMS:
        group = runs[runs["arm"] == arm]
        for column in ("dev_score", "test_score"):
            values = group[column].dropna().astype(float)
            if values.empty:
                continue
            rows.append({"arm": arm, "score": column.removesuffix("_score"), "runs": len(values),
                         "mean": values.mean(), "std": values.std(ddof=1) if len(values) > 1
                         else 0.0, "min": values.min(), "max": values.max(),
                         "spread": values.max() - values.min()})
    return pd.DataFrame(rows)
