"""Where a cell's spread comes from (``fsxlt analyze variance``): the buckets, the training
seed, and the finite test set (issue 74, item 1).

**Buckets and test examples**, from the runs' saved predictions (``--save-predictions``).
A metric that is a ratio of sums over test examples (accuracy: correct / examples; token
accuracy: correct words / words; seqeval's micro F1: ``2 TP / (predicted + gold
entities)``) is written per example ``i`` of bucket ``b``'s run as its linearised value
``z_bi = s_b + (y_bi - s_b x_bi) / mean_i(x_bi)``, whose mean over the examples is the
run's score ``s_b`` exactly (for accuracy, ``z_bi`` is 1 or 0). On the table ``Z``
(buckets x examples, points) the two-way crossed random-effects ANOVA without
replication gives, from its mean squares (MS_B over buckets, MS_I over examples, MS_E
the residual):

- ``var_bucket = (MS_B - MS_E) / n``: how much the buckets' true scores differ;
- ``var_example = (MS_I - MS_E) / B``: how much test examples differ in difficulty;
- ``var_residual = MS_E``: which examples a bucket's model gets right beyond both;

each floored at 0 (the usual ANOVA estimator; for a balanced table it equals REML, which
the tests check against ``statsmodels``' ``MixedLM``). One run's score then varies by
``var_bucket`` from the bucket drawn and by ``(var_example + var_residual) / n`` from the
test set drawn; a cell's mean over ``B`` buckets by ``var_bucket / B`` and
``var_example / n + var_residual / (n B)``. The shares are each part over their sum.
Beside them: the standard error of the cell's mean from those components, and from
``statsmodels``' OLS with standard errors clustered by bucket (buckets as the only
source) and by bucket and example together (two-way clustering: both sources).
Intervals are percentile intervals over resamples of buckets and examples drawn
independently (a two-way bootstrap; conservative).

**Seeds**, from ``fsxlt analyze seeds-vs-buckets``' ``runs.csv``: its seeds arm (one
bucket, many seeds) measures ``var_seed``; its buckets arm (many buckets, one seed)
measures ``var_bucket + var_seed``; the bucket part is their difference. Sweeps run one
seed per bucket, so their records alone cannot separate seeds from buckets: the report
says so rather than guess.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from fsxlt.errors import FsxltError
from fsxlt.report.bootstrap import checked_interval

METRICS = ("accuracy", "token_accuracy", "seqeval_f1")  # ratios of sums over examples
CELL = ["task", "arm", "language", "k"]


@dataclass(frozen=True)
class Components:
    """The variance components of one cell (points squared) and its design."""

    buckets: int
    examples: int
    bucket: float
    example: float
    residual: float

    @property
    def run_test(self) -> float:
        """The test set's share of one run's variance, in points squared."""
        return (self.example + self.residual) / self.examples

    @property
    def mean_bucket(self) -> float:
        return self.bucket / self.buckets

    @property
    def mean_test(self) -> float:
        return self.example / self.examples + self.residual / (self.examples * self.buckets)

    def shares(self) -> dict[str, float]:
        run = self.bucket + self.run_test
        mean = self.mean_bucket + self.mean_test
        nan = float("nan")
        return {"run_bucket_share": self.bucket / run if run > 0 else nan,
                "run_test_share": self.run_test / run if run > 0 else nan,
                "mean_bucket_share": self.mean_bucket / mean if mean > 0 else nan,
                "mean_test_share": self.mean_test / mean if mean > 0 else nan}

    @property
    def mean_se(self) -> float:
        return float(np.sqrt(self.mean_bucket + self.mean_test))


def components(table: np.ndarray) -> Components:
    """Two-way crossed random-effects ANOVA (no replication) of a buckets x examples table."""
    table = np.asarray(table, dtype=float)
    b, n = table.shape
    if b < 2 or n < 2:
        raise FsxltError(f"a variance decomposition needs 2 buckets and 2 test examples; "
                         f"this cell has {b} and {n}")
    grand = table.mean()
    rows, cols = table.mean(axis=1), table.mean(axis=0)
    ms_b = n * np.sum((rows - grand) ** 2) / (b - 1)
    ms_i = b * np.sum((cols - grand) ** 2) / (n - 1)
    resid = table - rows[:, None] - cols[None, :] + grand
    ms_e = np.sum(resid ** 2) / ((b - 1) * (n - 1))
    return Components(b, n, max(0.0, float((ms_b - ms_e) / n)),
                      max(0.0, float((ms_i - ms_e) / b)), float(ms_e))


def per_example(metric: str, gold: list, predicted: list) -> tuple[np.ndarray, np.ndarray]:
    """Each test example's numerator ``y`` and denominator ``x`` of ``metric`` (whose score
    is ``sum(y) / sum(x)``)."""
    from fsxlt.metrics.scores import entity_set

    if metric == "accuracy":
        return (np.array([g == p for g, p in zip(gold, predicted, strict=True)], dtype=float),
                np.ones(len(gold)))
    if metric == "token_accuracy":
        return (np.array([sum(a == b for a, b in zip(g, p, strict=True))
                          for g, p in zip(gold, predicted, strict=True)], dtype=float),
                np.array([len(g) for g in gold], dtype=float))
    if metric == "seqeval_f1":
        y, x = np.zeros(len(gold)), np.zeros(len(gold))
        for i, (g, p) in enumerate(zip(gold, predicted, strict=True)):
            true, pred = entity_set([g]), entity_set([p])
            y[i], x[i] = 2 * len(true & pred), len(true) + len(pred)
        return y, x
    raise FsxltError(f"the test set's share needs a metric summed over test examples "
                     f"({', '.join(METRICS)}); this cell's is {metric}")


def linearised(y: np.ndarray, x: np.ndarray) -> np.ndarray:
    """Per-example values (points) whose mean is the run's score ``sum(y) / sum(x)``."""
    total = x.sum()
    score = y.sum() / total if total > 0 else 0.0
    return 100.0 * (score + (y - score * x) / x.mean()) if total > 0 else np.zeros(len(y))


def clustered_se(table: np.ndarray) -> tuple[float, float]:
    """The standard error of the cell's mean from ``statsmodels``' OLS on the per-example
    values, clustered by bucket, and clustered by bucket and example (two-way)."""
    import statsmodels.api as sm

    b, n = table.shape
    endog = table.ravel()
    exog = np.ones((len(endog), 1))
    bucket = np.repeat(np.arange(b), n)
    example = np.tile(np.arange(n), b)
    model = sm.OLS(endog, exog)
    one = model.fit(cov_type="cluster", cov_kwds={"groups": bucket, "use_correction": False})
    two = model.fit(cov_type="cluster", cov_kwds={"groups": np.column_stack([bucket, example]),
                                                  "use_correction": False})
    return float(one.bse[0]), float(two.bse[0])


def bootstrap_shares(table: np.ndarray, *, n_boot: int, seed: int, key: str
                     ) -> dict[str, tuple[float, float, str]]:
    """Percentile intervals of each share over a two-way bootstrap (buckets and examples
    resampled independently), seeded by ``seed`` and the cell's ``key``."""
    import zlib

    rng = np.random.default_rng([int(seed), zlib.crc32(key.encode("utf-8"))])
    b, n = table.shape
    draws: dict[str, list[float]] = {}
    for _ in range(n_boot):
        rows, cols = rng.integers(0, b, b), rng.integers(0, n, n)
        for name, value in components(table[np.ix_(rows, cols)]).shares().items():
            draws.setdefault(name, []).append(value)
    return {name: checked_interval(np.array(values)) for name, values in draws.items()}


def cell_tables(runs_dir: str | Path, scores: pd.DataFrame,
                warn: Callable[[str], None] | None = None) -> dict[tuple, np.ndarray]:
    """Each cell's buckets x examples table of linearised values, from the runs' saved
    predictions, each run's checked against its record's test score; cells without
    predictions for every run, or with another metric, are left out (and said)."""
    from fsxlt.study.predictions import read_predictions
    from fsxlt.study.runs import predictions_path

    tables, left = {}, []
    for key, cell in scores.groupby(CELL, sort=True):
        metric = str(cell["metric"].iloc[0])
        paths = [predictions_path(Path(runs_dir) / rel) for rel in cell["record"]]
        if metric not in METRICS or not all(p.is_file() for p in paths):
            left.append(("/".join(map(str, key)), "metric " + metric if metric not in METRICS
                         else "no saved predictions"))
            continue
        rows, ids = [], None
        for path, score in zip(paths, cell["test_score"], strict=True):
            saved = read_predictions(path)
            if ids is None:
                ids = [row.get("id") for row in saved.rows]
            elif [row.get("id") for row in saved.rows] != ids:
                raise FsxltError(f"{path}: scored other test examples than the cell's other "
                                 "runs; a decomposition needs one test set")
            y, x = per_example(metric, saved.gold(), saved.predicted())
            values = linearised(y, x)
            if abs(values.mean() - 100.0 * score) > 1e-6:
                raise FsxltError(f"{path}: its predictions score {values.mean() / 100:.6f}, "
                                 f"its record {score:.6f}; they are not that run's")
            rows.append(values)
        tables[key] = np.vstack(rows)
    if left and warn:
        warn(f"note: {len(left)} cells have buckets only, no test-set share "
             f"({'; '.join(f'{c}: {why}' for c, why in left[:4])}"
             + (" ..." if len(left) > 4 else "") + "); rerun with --save-predictions")
    return tables


def variance_table(runs_dir: str | Path, *, arms: tuple[str, ...] = (), n_boot: int = 1000,
                   seed: int = 0, warn: Callable[[str], None] | None = None) -> pd.DataFrame:
    """One row per cell: its buckets, test examples, mean, the variance components
    (points squared), the shares of one run's and of the mean's variance with intervals,
    and the mean's standard errors (components; clustered by bucket; by bucket and
    example)."""
    from fsxlt.report.records import load_records

    scores = load_records(runs_dir).scores
    scores = scores[scores["k"] > 0]
    if arms:
        scores = scores[scores["arm"].isin(arms)]
    if scores.empty:
        raise FsxltError(f"{runs_dir}: no few-shot records" + (
            f" of {', '.join(arms)}" if arms else ""))
    tables = cell_tables(runs_dir, scores, warn)
    rows = []
    for key, cell in scores.groupby(CELL, sort=True):
        points = 100.0 * cell["test_score"].to_numpy()
        row = dict(zip(CELL, key, strict=True)) | {
            "buckets": len(points), "mean": float(points.mean()),
            "std": float(np.std(points, ddof=1)) if len(points) > 1 else float("nan")}
        table = tables.get(key)
        if table is not None and table.shape[0] >= 2:
            found = components(table)
            one, two = clustered_se(table)
            row |= {"examples": found.examples, "var_bucket": found.bucket,
                    "var_example": found.example, "var_residual": found.residual,
                    "var_run_test": found.run_test, **found.shares(),
                    "se_components": found.mean_se, "se_cluster_bucket": one,
                    "se_cluster_two_way": two}
            if n_boot:
                for name, (low, high, problem) in bootstrap_shares(
                        table, n_boot=n_boot, seed=seed, key="/".join(map(str, key))).items():
                    row |= {f"{name}_low": low, f"{name}_high": high,
                            f"{name}_problem": problem}
        rows.append(row)
    return pd.DataFrame(rows)


def seeds_table(path: str | Path, *, n_boot: int = 2000, seed: int = 0) -> pd.DataFrame:
    """From ``fsxlt analyze seeds-vs-buckets``' ``runs.csv``: the seed's and the bucket's
    variance (points squared) and the bucket's share of one run's, with a bootstrap
    interval (each arm's runs resampled)."""
    path = Path(path)
    if path.is_dir():
        path = path / "runs.csv"
    if not path.is_file():
        raise FsxltError(f"{path}: no runs.csv of fsxlt analyze seeds-vs-buckets")
    runs = pd.read_csv(path)
    if not {"arm", "test_score"} <= set(runs.columns):
        raise FsxltError(f"{path}: not a seeds-vs-buckets runs.csv (columns arm, test_score)")
    rows = []
    for score in ("test_score", "dev_score"):
        if score not in runs or runs[score].isna().all():
            continue
        buckets = runs.loc[runs["arm"] == "buckets", score].dropna().to_numpy(float)
        seeds = runs.loc[runs["arm"] == "seeds", score].dropna().to_numpy(float)
        if len(buckets) < 2 or len(seeds) < 2:
            raise FsxltError(f"{path}: each arm needs 2 runs or more")
        rng = np.random.default_rng(seed)
        shares = []
        for _ in range(n_boot):
            vb = np.var(rng.choice(buckets, len(buckets)), ddof=1)
            vs = np.var(rng.choice(seeds, len(seeds)), ddof=1)
            shares.append(max(0.0, vb - vs) / vb if vb > 0 else np.nan)
        var_b, var_s = float(np.var(buckets, ddof=1)), float(np.var(seeds, ddof=1))
        low, high, problem = checked_interval(np.array(shares))
        rows.append({"score": score.removesuffix("_score"), "bucket_runs": len(buckets),
                     "seed_runs": len(seeds), "var_buckets_arm": var_b, "var_seed": var_s,
                     "var_bucket": max(0.0, var_b - var_s),
                     "bucket_share": max(0.0, var_b - var_s) / var_b if var_b > 0 else np.nan,
                     "bucket_share_low": low, "bucket_share_high": high,
                     "bucket_share_problem": problem})
    return pd.DataFrame(rows)
