"""Shot-selection strategies judged against random buckets from the same pools.

Runs on a strategy's buckets are arms ``<arm>~<strategy>`` (``full~diverse``).
Each run record names the candidate pools its bucket set was selected from
(``bucket.strategy_pools``: seed, pool size, number of pools, split and the
data's SHA-256), read back from the record file under RUNS_DIR. A strategy's
runs are only compared with random runs of the same (task, language, K, arm)
and the same pools. Where the random runs there come from other pools, or
either side's pools are unknown (records written before fsxlt recorded
them), the comparison is left out and said in one line (a note on stderr;
when nothing comparable remains, the one-line error says the first one).
For every (task, language, K, arm, pools) that has at least two runs on
``random`` buckets and runs on another strategy's, with the strategy's
bucket scores ``s`` and the random ones ``r`` (points):

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
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from fsxlt.errors import FsxltError
from fsxlt.report.records import Records
from fsxlt.report.tables import Table, arm_label, fmt
from fsxlt.sampling.strategies import Random
from fsxlt.study.runs import arm_strategy, read_record

RANDOM = Random.name  # the baseline every strategy is judged against
UNKNOWN = "unknown"
CELL = ["task", "language", "k", "base"]
COLUMNS = ["task", "language", "k", "arm", "strategy", "n", "mean", "random_n", "random_mean",
           "diff", "ci_low", "ci_high", "p_beat", "u", "p_value", "pools"]


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


def pools_label(pools: Any) -> str:
    """A record's ``bucket.strategy_pools`` in words, e.g. ``seed 0, size 30, 40 pools of
    train, data 1a2b3c4d5e6f``: equal labels mean the same pools; UNKNOWN when absent."""
    if not isinstance(pools, dict):
        return UNKNOWN
    label = (f"seed {pools.get('seed')}, size {pools.get('size')}, {pools.get('n')} pools of "
             f"{pools.get('split')}")
    source = pools.get("source")
    return f"{label}, data {source[:12]}" if isinstance(source, str) else label


def record_pools(path: Path) -> Any:
    """The ``bucket.strategy_pools`` of the run record at ``path`` (None when it has none)."""
    bucket = (read_record(path) or {}).get("bucket")
    return bucket.get("strategy_pools") if isinstance(bucket, dict) else None


def strategy_runs(records: Records, runs_dir: str | Path) -> pd.DataFrame:
    """The scores of runs on a strategy's buckets with ``base`` (the arm without its
    strategy), ``strategy`` and ``pools`` (:func:`pools_label` of the record's pools)."""
    scores = records.scores.copy()
    split = scores["arm"].map(arm_strategy)
    scores["base"] = [base for base, _ in split]
    scores["strategy"] = [strategy for _, strategy in split]
    scores = scores[scores["strategy"] != ""].copy()
    scores["pools"] = [pools_label(record_pools(Path(runs_dir) / rel) if isinstance(rel, str)
                                   else None) for rel in scores["record"]]
    return scores


def _pools_words(labels: set[str]) -> str:
    if labels == {UNKNOWN}:
        return "pools unknown: records written before fsxlt recorded pools"
    return "pools: " + "; ".join(sorted(labels))


def same_pools(runs: pd.DataFrame) -> tuple[pd.DataFrame, list[str]]:
    """``runs`` (:func:`strategy_runs`) without the strategy runs that have no random runs
    of the same pools in their cell, nor random runs of unknown pools; and one line for
    each (cell, strategy, pools) left out so. Cells without random runs drop silently."""
    keep = np.zeros(len(runs), dtype=bool)
    notes = []
    for (task, lang, k, base), cell in runs.groupby(CELL, sort=True):
        is_random = (cell["strategy"] == RANDOM).to_numpy()
        random_pools = set(cell.loc[is_random, "pools"])
        matched = is_random & (cell["pools"] != UNKNOWN).to_numpy()
        for (strategy, pools), group in cell[~is_random].groupby(["strategy", "pools"],
                                                                  sort=True):
            if pools != UNKNOWN and pools in random_pools:
                matched |= cell.index.isin(group.index)
            elif random_pools:
                notes.append(f"{task}/{lang} K={k} {arm_label(base)}: {strategy} buckets "
                             f"({_pools_words({pools})}) and random buckets "
                             f"({_pools_words(random_pools)}) are not from the same pools; "
                             "not compared")
        keep[runs.index.get_indexer(cell.index)] = matched
    return runs[keep], notes


def judge(records: Records, runs_dir: str | Path, *, seed: int = 0, n_boot: int = 10_000,
          warn: Callable[[str], None] | None = None) -> pd.DataFrame:
    """One row per (task, language, K, arm, strategy other than random, pools), against
    the random runs of the same pools; ``warn`` hears each comparison left out for
    other or unknown pools (``note: ...``), unless nothing comparable remains: then the
    one-line error names the first one."""
    runs = strategy_runs(records, runs_dir)
    if runs.empty:
        raise FsxltError("no runs on a selection strategy's buckets (arms like full~diverse: "
                         "build them with fsxlt select, run them with fsxlt sweep)")
    runs, notes = same_pools(runs)
    rows = []
    for (task, lang, k, base, pools), cell in runs.groupby(CELL + ["pools"], sort=True):
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
                         "ci_high": high, "p_beat": p_beat, "u": u, "p_value": p_value,
                         "pools": pools})
    if not rows:
        why = (f": {notes[0]}" + (f" (and {len(notes) - 1} more)" if len(notes) > 1 else "")
               if notes else "; run fsxlt select -s random too")
        raise FsxltError("no cell has runs on random buckets from the same pools (at least 2) "
                         f"beside another strategy's{why}")
    for note in notes if warn else ():
        warn(f"note: {note}")
    return pd.DataFrame(rows, columns=COLUMNS)


def strategy_table(result: pd.DataFrame) -> Table:
    rows = [[r.task, r.language, str(r.k), arm_label(r.arm), r.strategy,
             f"{fmt(r.mean)} (n={r.n})", f"{fmt(r.random_mean)} (n={r.random_n})",
             fmt(r.diff, signed=True),
             f"[{fmt(r.ci_low, signed=True)}, {fmt(r.ci_high, signed=True)}]",
             f"{r.p_beat:.2f}", f"{r.p_value:.4f}", r.pools]
            for r in result.itertuples(index=False)]
    return Table("Selection strategies against random buckets from the same pools (test, "
                 "points)", ["task", "language", "K", "arm", "strategy", "mean", "random mean",
                             "diff", "95% CI (bootstrap)", "P(beats random)",
                             "Mann-Whitney p", "pools"], rows)


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


def plot_strategies(records: Records, runs_dir: str | Path, out: str | Path) -> list[Path]:
    """Per (task, language, K, arm, pools): the random buckets' scores as a violin with
    their points, each strategy's bucket scores of the same pools beside it, the random
    mean as a line; a cell whose runs come from several pools gets one plot per pools
    (``..._pools1``, ``..._pools2`` in label order)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from fsxlt.report.plots import _save

    runs = same_pools(strategy_runs(records, runs_dir))[0]
    written: list[Path] = []
    for (task, lang, k, base), cell in runs.groupby(CELL, sort=True):
        groups = list(cell.groupby("pools", sort=True))
        for number, (pools, group) in enumerate(groups, start=1):
            random = 100.0 * group.loc[group["strategy"] == RANDOM, "test_score"].to_numpy()
            others = sorted(set(group["strategy"]) - {RANDOM})
            if len(random) < 2 or not others:
                continue
            fig, ax = plt.subplots(figsize=(1.4 * (len(others) + 1) + 1.5, 3.6))
            ax.violinplot([random], positions=[0], showextrema=False)
            jitter = np.random.default_rng(0).uniform(-0.08, 0.08, size=len(random))
            ax.scatter(jitter, random, s=10, color="grey")
            ax.axhline(random.mean(), color="grey", linestyle="--", linewidth=1)
            for x, strategy in enumerate(others, start=1):
                values = 100.0 * group.loc[group["strategy"] == strategy,
                                           "test_score"].to_numpy()
                ax.scatter(np.full(len(values), x), values, s=14)
                ax.plot([x - 0.2, x + 0.2], [values.mean()] * 2, color="black")
            ax.set_xticks(range(len(others) + 1), [RANDOM] + others, rotation=20)
            ax.set_ylabel("test score")
            ax.set_title(f"{task} {lang} K={k}, {arm_label(base)}\npools: {pools}", fontsize=8)
            fig.tight_layout()
            suffix = f"_pools{number}" if len(groups) > 1 else ""
            written += _save(fig, Path(out), f"strategies_{task}_{lang}_k{k}_{base}{suffix}")
    return written
