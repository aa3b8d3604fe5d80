"""Power before a study (``fsxlt analyze power``): from any runs directory (a pilot, a
published study's results, an imported arm), the smallest difference 5, 10, 20 or 40
buckets can detect per cell or paired comparison, and the buckets a named difference
needs; with a sweep config, for the cells that config would run, at its own bucket count.

The formulas are :mod:`fsxlt.report.power`'s (statsmodels' t-test power). With
``simulate``, each paired cell's power at its MDD is also measured by resampling the
runs' own per-bucket differences under the test the report uses (Wilcoxon) and under
the t-test the MDD assumes, so a reader sees where the two part.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

import pandas as pd

from fsxlt.errors import FsxltError
from fsxlt.report.compare import compare_pairs, pairs
from fsxlt.report.power import (
    ALPHA,
    BUCKET_COUNTS,
    POWER,
    cell_power,
    paired_power,
    simulated_power,
    wilcoxon_can_reject,
)
from fsxlt.report.records import load_records
from fsxlt.report.tables import aggregate

CELL = ["task", "language", "k"]


def config_cells(config_path: str | Path) -> tuple[set[tuple[str, str, int]], set[str], set[int]]:
    """The (task, language, K) cells a sweep config runs, its methods and bucket counts."""
    from fsxlt.execution.config import load_config

    config = load_config(config_path)
    cells, methods, counts = set(), set(), set()
    for plan in config.tasks:
        cells |= {(plan.task, lang, int(k)) for lang in plan.languages for k in plan.k if k > 0}
        methods |= set(plan.methods)
        if plan.n_buckets:
            counts.add(int(plan.n_buckets))
    return cells, methods, counts


def power_plan(runs_dir: str | Path, *, compare: tuple[str, str] | None = None,
               arms: Sequence[str] = (), config: str | Path | None = None,
               counts: Sequence[int] = BUCKET_COUNTS, difference: float | None = None,
               alpha: float = ALPHA, power: float = POWER, simulate: int = 0, seed: int = 0,
               warn: Callable[[str], None] | None = None) -> pd.DataFrame:
    """The planning table: one row per paired cell (``compare``) or per (arm, cell)."""
    if not 0 < alpha < 1 or not 0 < power < 1:
        raise FsxltError("--alpha and --power must lie strictly between 0 and 1")
    if difference is not None and not difference > 0:
        raise FsxltError("--difference must be a positive number of points")
    if any(n < 2 for n in counts):
        raise FsxltError("--buckets counts must be 2 or more")
    wanted, methods, config_counts = (config_cells(config) if config is not None
                                      else (None, set(), set()))
    counts = sorted(set(counts) | config_counts)
    records = load_records(runs_dir)
    if compare is not None:
        paired = pairs(records, *compare)
        result = compare_pairs(paired, n_boot=1)
        table = paired_power(result, list(result["sd_diff"]), counts=counts,
                             difference=difference, alpha=alpha, power=power)
        if simulate:
            table = _simulated(table, paired, counts, simulate=simulate, seed=seed,
                               alpha=alpha)
    else:
        cells = aggregate(records)
        cells = cells[cells["k"] > 0]
        keep = set(arms) or methods
        if keep:
            cells = cells[cells["arm"].isin(keep)]
        table = cell_power(cells, counts=counts, difference=difference, alpha=alpha,
                           power=power)
    if table.empty:
        raise FsxltError(f"{runs_dir}: no cell with few-shot records to plan from"
                         + (f" (arms {', '.join(sorted(keep))})" if compare is None and keep
                            else ""))
    if wanted is not None:
        have = {(r.task, r.language, int(r.k)) for r in table.itertuples(index=False)}
        missing = sorted(wanted - have)
        if missing and warn:
            warn(f"note: {len(missing)} of the config's {len(wanted)} cells have no pilot "
                 f"runs to plan from: {', '.join(f'{t}/{lang}/k{k}' for t, lang, k in missing[:8])}"
                 + (" ..." if len(missing) > 8 else ""))
        table = table[[(r.task, r.language, int(r.k)) in wanted
                       for r in table.itertuples(index=False)]].reset_index(drop=True)
        if table.empty:
            raise FsxltError(f"{config}: none of its cells has pilot runs in {runs_dir}")
    return table


def _simulated(table: pd.DataFrame, paired: pd.DataFrame, counts: Sequence[int], *,
               simulate: int, seed: int, alpha: float) -> pd.DataFrame:
    """Each cell's simulated power at its MDD for every count: Wilcoxon (the report's test)
    and the t-test (the MDD's own), from its per-bucket differences."""
    table = table.copy()
    for n in counts:
        wilcoxon_power, t_power = [], []
        for row in table.itertuples(index=False):
            cell = paired[(paired["task"] == row.task) & (paired["language"] == row.language)
                          & (paired["k"] == row.k)]
            diffs = 100.0 * (cell["test_score_a"] - cell["test_score_b"]).to_numpy()
            mdd = getattr(row, f"mdd_{n}")
            if pd.isna(mdd):
                wilcoxon_power.append(float("nan"))
                t_power.append(float("nan"))
                continue
            wilcoxon_power.append(simulated_power(diffs, n, mdd, test="wilcoxon", alpha=alpha,
                                                  n_sim=simulate, seed=seed)
                                  if wilcoxon_can_reject(n, alpha) else 0.0)
            t_power.append(simulated_power(diffs, n, mdd, test="t", alpha=alpha,
                                           n_sim=simulate, seed=seed))
        table[f"sim_wilcoxon_{n}"] = wilcoxon_power
        table[f"sim_t_{n}"] = t_power
    return table


def power_note(*, compare: bool, counts: Sequence[int], alpha: float, power: float,
               simulate: int) -> str:
    """What the planning table's numbers are, in words."""
    if compare:
        text = (f"mdd_N: the smallest mean paired difference (points) N buckets detect with "
                f"{power:.0%} power at a two-sided {alpha:g} level (paired t-test, from the "
                "cell's std of per-bucket differences, sd_diff); needed_observed: the buckets "
                "the observed difference needs")
    else:
        text = (f"half_width_N: the 95% t-interval's half-width of a cell's mean over N "
                f"buckets; mdd_N: the smallest difference (points) between this arm and "
                f"another of N buckets, unpaired (an upper bound: pairing over the same "
                f"buckets only lowers it), {power:.0%} power, two-sided {alpha:g}")
    text += "; needed_named: the buckets --difference needs" + (
        " (per arm)" if not compare else "")
    floor = [n for n in counts if not wilcoxon_can_reject(n, alpha)]
    if floor:
        text += (f". Wilcoxon's signed-rank test, which fsxlt report --compare uses, cannot "
                 f"reach p < {alpha:g} at all with {', '.join(map(str, floor))} buckets")
    if simulate:
        text += (f". sim_wilcoxon_N, sim_t_N: the power each test had at mdd_N in {simulate} "
                 "studies simulated from the cell's own per-bucket differences")
    return text + "."
