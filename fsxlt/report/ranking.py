"""More than two arms, ranked with ties (``fsxlt report --rank A --rank B --rank C``).

Every pair of arms is compared as ``--compare`` compares two (:mod:`fsxlt.report.compare`:
paired over the buckets both ran, Wilcoxon signed-rank). Their p-values, over every pair
and every cell at once, are adjusted by Benjamini-Hochberg, so the false discovery rate
of all the "X beats Y" statements together stays at ``alpha``. In each (task, language,
K), an arm's rank is one plus the number of arms that beat it (a positive mean paired
difference with an adjusted p-value under ``alpha``); arms that no discovery separates
share a rank. So the best arm is rank 1 with every arm it is not shown to beat, and a
rank says no more than the buckets can.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence

import numpy as np
import pandas as pd

from fsxlt.errors import FsxltError
from fsxlt.report.compare import bh_adjusted, compare_pairs, pairs
from fsxlt.report.records import Records
from fsxlt.report.tables import Table, fmt

ALPHA = 0.05
CELL = ["task", "language", "k"]
COLUMNS = ["task", "language", "k", "arm", "n", "mean", "rank", "beaten_by", "tied_with"]


def pairwise(records: Records, arms: Sequence[str], *, seed: int = 0,
             n_boot: int = 10_000) -> pd.DataFrame:
    """Every pair's paired comparison per cell (``arm_a``, ``arm_b`` and
    :func:`~fsxlt.report.compare.compare_pairs`' columns), ``q_value`` adjusted over all
    pairs and cells together."""
    if len(arms) < 2 or len(set(arms)) != len(arms):
        raise FsxltError("--rank needs at least two different arms")
    parts = []
    for arm_a, arm_b in itertools.combinations(arms, 2):
        try:
            paired = pairs(records, arm_a, arm_b)
        except FsxltError as error:
            if "share no bucket" not in str(error):
                raise
            continue
        parts.append(compare_pairs(paired, seed=seed, n_boot=n_boot)
                     .assign(arm_a=arm_a, arm_b=arm_b))
    if not parts:
        raise FsxltError(f"no two of {', '.join(arms)} share a bucket")
    result = pd.concat(parts, ignore_index=True)
    result["q_value"] = bh_adjusted(result["p_value"].to_numpy(dtype=float))
    return result


def rank(records: Records, arms: Sequence[str], *, seed: int = 0, n_boot: int = 10_000,
         alpha: float = ALPHA) -> pd.DataFrame:
    """One row per (cell, arm): buckets, mean test score (points), rank, the arms that
    beat it and the arms it is tied with (neither beats the other)."""
    result = pairwise(records, arms, seed=seed, n_boot=n_boot)
    scores = records.scores[records.scores["arm"].isin(arms)]
    rows = []
    for (task, lang, k), comparisons in result.groupby(CELL, sort=True):
        cell = scores[(scores["task"] == task) & (scores["language"] == lang)
                      & (scores["k"] == k)]
        present = [arm for arm in arms if (cell["arm"] == arm).any()]
        beats: dict[str, set[str]] = {arm: set() for arm in present}
        compared: dict[str, set[str]] = {arm: set() for arm in present}
        for r in comparisons.itertuples(index=False):
            compared[r.arm_a].add(r.arm_b)
            compared[r.arm_b].add(r.arm_a)
            if np.isfinite(r.q_value) and r.q_value < alpha and r.mean_diff != 0:
                winner, loser = (r.arm_a, r.arm_b) if r.mean_diff > 0 else (r.arm_b, r.arm_a)
                beats[loser].add(winner)
        for arm in present:
            own = 100.0 * cell.loc[cell["arm"] == arm, "test_score"]
            tied = sorted(compared[arm] - beats[arm]
                          - {other for other in present if arm in beats[other]})
            rows.append({"task": task, "language": lang, "k": int(k), "arm": arm,
                         "n": len(own), "mean": float(own.mean()), "rank": 1 + len(beats[arm]),
                         "beaten_by": " ".join(sorted(beats[arm])), "tied_with": " ".join(tied)})
    ranked = pd.DataFrame(rows, columns=COLUMNS)
    ranked = ranked.sort_values(CELL + ["rank", "mean"],
                                ascending=[True, True, True, True, False], ignore_index=True)
    ranked.attrs["tests"] = int(result["p_value"].notna().sum())  # what BH adjusted over
    return ranked


def rank_table(ranked: pd.DataFrame) -> Table:
    rows = [[r.task, r.language, str(r.k), r.arm, str(r.n), fmt(r.mean), str(r.rank),
             r.beaten_by or "–", r.tied_with or "–"] for r in ranked.itertuples(index=False)]
    return Table("arms ranked with ties (test, points)",
                 ["task", "language", "K", "arm", "n", "mean", "rank", "beaten by",
                  "tied with"], rows)


def rank_note(result_pairs: int, *, alpha: float = ALPHA) -> str:
    return (f"Rank: one plus the arms that beat this one; X beats Y where their paired "
            f"Wilcoxon test over shared buckets, Benjamini-Hochberg adjusted over all "
            f"{result_pairs} pair-and-cell comparisons, gives q < {alpha} and X's mean paired "
            "difference is positive. Arms no such discovery separates share a rank.")


def render_rank(records: Records, arms: Sequence[str], fmt_name: str, *, seed: int = 0,
                n_boot: int = 10_000) -> tuple[str, pd.DataFrame]:
    """The ranking as text in ``fmt_name`` (md, latex, csv), and its frame."""
    ranked = rank(records, arms, seed=seed, n_boot=n_boot)
    if fmt_name == "csv":
        return ranked.to_csv(index=False, float_format="%.6f", lineterminator="\n"), ranked
    note = rank_note(ranked.attrs["tests"])
    table = rank_table(ranked)
    if fmt_name == "md":
        return "# Ranking\n\n" + note + "\n\n" + table.markdown(), ranked
    return f"% {note}\n" + table.latex(), ranked
