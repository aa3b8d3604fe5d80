"""A sweep that stops a cell when its answer is known (``stop_early`` in a sweep config;
never the default: the standardized 40 buckets stay the study's protocol).

::

    stop_early:
      width: 2.0             # points: a cell stops once its anytime 95% interval is this
                             # narrow (or narrower)
      compare: [full, lora]  # a (task, language, K) that runs both arms stops once their
                             # paired difference is decided (its interval excludes 0), or
                             # once its interval is within width
      min_buckets: 10        # no cell stops before this many buckets (the interval is
                             # finite from 5; from 10 it holds better on skewed scores)
      every: 5               # look after every N more buckets
      level: 0.95

The rule: buckets always run in index order, a few at a time (a *wave*: each open cell's
next ``every`` buckets, ``min_buckets`` at first); after each wave every open cell's
finished prefix is judged by :func:`fsxlt.report.sequential.decide`, whose anytime-valid
interval stays valid at whatever look the cell stops. A stopped cell is a prefix of the
standard bucket set, so it stays comparable with any study on the same buckets; its
folder gets ``stopped.json`` (:data:`STOP_FORMAT`: the buckets it stopped at, the rule and
the reason), which ``fsxlt report`` reads. The rule is in no run's identity: a record is
the same with or without it, so a sweep started again with another rule, a larger
``n_buckets`` or none at all continues the prefix (and rewrites or removes
``stopped.json`` to say where the cell stands under the rule it now runs).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fsxlt.errors import FsxltError
from fsxlt.fileio import atomic_write_json
from fsxlt.study.runs import STOP_FILE, STOP_FORMAT

KEYS = {"width", "compare", "min_buckets", "every", "level"}


@dataclass(frozen=True)
class StopRule:
    """When a cell of a sweep may stop (see the module docstring)."""

    width: float | None = None
    compare: tuple[str, str] | None = None
    min_buckets: int = 10
    every: int = 5
    level: float = 0.95

    def describe(self) -> dict[str, Any]:
        return {"width": self.width, "compare": list(self.compare) if self.compare else None,
                "min_buckets": self.min_buckets, "every": self.every, "level": self.level}


def parse_stop_rule(raw: Any, where: str) -> StopRule | None:
    """``stop_early`` of a sweep config (None: every planned bucket runs)."""
    if raw is None:
        return None
    if not isinstance(raw, dict):
        raise FsxltError(f"{where}: stop_early must be a mapping (width: POINTS, compare: "
                         "[A, B], min_buckets: N, every: N, level: 0.95)")
    unknown = sorted(set(raw) - KEYS)
    if unknown:
        raise FsxltError(f"{where}: stop_early: unknown key {unknown[0]!r}; known: "
                         f"{', '.join(sorted(KEYS))}")
    width, compare = raw.get("width"), raw.get("compare")
    if width is not None and (isinstance(width, bool) or not isinstance(width, (int, float))
                              or not width > 0):
        raise FsxltError(f"{where}: stop_early.width must be a positive number of points")
    if compare is not None and (not isinstance(compare, list) or len(compare) != 2
                                or len(set(map(str, compare))) != 2):
        raise FsxltError(f"{where}: stop_early.compare must name two different arms, "
                         "[A, B]")
    if width is None and compare is None:
        raise FsxltError(f"{where}: stop_early needs width, compare or both")
    counts = {}
    for key, default in (("min_buckets", 10), ("every", 5)):
        value = raw.get(key, default)
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise FsxltError(f"{where}: stop_early.{key} must be a whole number >= 1")
        counts[key] = value
    if counts["min_buckets"] < 5:
        raise FsxltError(f"{where}: stop_early.min_buckets must be 5 or more (below 5 "
                         "buckets the anytime interval is unbounded)")
    level = raw.get("level", 0.95)
    if isinstance(level, bool) or not isinstance(level, float) or not 0.5 <= level < 1:
        raise FsxltError(f"{where}: stop_early.level must lie in [0.5, 1), e.g. 0.95")
    return StopRule(float(width) if width is not None else None,
                    (str(compare[0]), str(compare[1])) if compare else None,
                    counts["min_buckets"], counts["every"], level)


def _score(path: str) -> float | None:
    from fsxlt.study.runs import is_complete, read_record

    record = read_record(path)
    return 100.0 * float(record["test_score"]) if is_complete(record) else None


def _prefix(runs: Sequence[Any]) -> list[float]:
    """The test scores (points) of a cell's runs in bucket order, up to the first run
    without a finished record."""
    scores = []
    for run in runs:
        score = _score(run.record_path)
        if score is None:
            break
        scores.append(score)
    return scores


def cells(runs: Sequence[Any]) -> dict[Path, list[Any]]:
    """A plan's adapt runs by cell folder (``<task>/<lang>/k<K>/<arm>``), in bucket order."""
    by_cell: dict[Path, list[Any]] = {}
    for run in runs:
        if hasattr(run, "index") and getattr(run, "k", 0) > 0:
            by_cell.setdefault(Path(run.record_path).parent, []).append(run)
    return {cell: sorted(group, key=lambda r: r.index) for cell, group in by_cell.items()}


def judge(rule: StopRule, by_cell: dict[Path, list[Any]]) -> dict[Path, Any]:
    """Each cell's :class:`~fsxlt.report.sequential.Decision` under ``rule``: from its own
    prefix, or, for the two arms ``rule.compare`` names, from their paired differences
    over the prefix both finished (both cells then share the decision)."""
    from fsxlt.report.sequential import decide

    decisions: dict[Path, Any] = {}
    prefixes = {cell: _prefix(runs) for cell, runs in by_cell.items()}
    paired: dict[Path, Path] = {}
    if rule.compare:
        a, b = rule.compare
        for cell in by_cell:
            if cell.name == a and (cell.parent / b) in by_cell:
                paired[cell] = cell.parent / b
    for cell_a, cell_b in paired.items():
        n = min(len(prefixes[cell_a]), len(prefixes[cell_b]))
        diffs = [x - y for x, y in zip(prefixes[cell_a][:n], prefixes[cell_b][:n],
                                       strict=True)]
        decision = decide(diffs, width=rule.width, decided=True,
                          min_buckets=rule.min_buckets, level=rule.level)
        decisions[cell_a] = decisions[cell_b] = decision
    for cell, prefix in prefixes.items():
        if cell not in decisions and rule.width is not None:
            decisions[cell] = decide(prefix, width=rule.width, decided=False,
                                     min_buckets=rule.min_buckets, level=rule.level)
    return decisions


def wave(rule: StopRule, pending: Sequence[tuple[Any, str]], plan_runs: Sequence[Any]
         ) -> tuple[list[tuple[Any, str]], dict[Path, Any]]:
    """The pending runs of the next wave, and the decisions behind it: every run of a cell
    the rule does not govern; a governed cell's runs up to its next look, none once it may
    stop."""
    by_cell = cells(plan_runs)
    decisions = judge(rule, by_cell)
    last: dict[Path, int] = {}  # a governed cell's last bucket index in this wave
    for cell, decision in decisions.items():
        runs = by_cell[cell]
        if decision.stop:
            last[cell] = -1  # stopped: nothing more
        else:
            target = max(rule.min_buckets, len(_prefix(runs)) + rule.every)
            last[cell] = runs[min(target, len(runs)) - 1].index
    chosen = []
    for run, why in pending:
        cell = Path(getattr(run, "record_path", "")).parent
        if cell not in last or run.index <= last[cell]:
            chosen.append((run, why))
    return chosen, decisions


def write_stops(rule: StopRule, decisions: dict[Path, Any], by_cell: dict[Path, list[Any]],
                say: Any = None) -> list[str]:
    """``stopped.json`` in each stopped cell's folder (written atomically, only when it
    changes); removed from a governed cell that runs on; one line per cell newly stopped."""
    lines = []
    for cell, decision in sorted(decisions.items()):
        path = cell / STOP_FILE
        if not decision.stop or decision.buckets >= len(by_cell[cell]):  # ran every bucket
            if path.is_file():
                path.unlink()
            continue
        runs = by_cell[cell]
        content = {"format": STOP_FORMAT, "buckets": decision.buckets,
                   "last_bucket": runs[decision.buckets - 1].index, "planned": len(runs),
                   "reason": decision.reason, "interval": [decision.low, decision.high],
                   "rule": rule.describe()}
        old = None
        if path.is_file():
            try:
                old = json.loads(path.read_text(encoding="utf-8"))
            except (OSError, ValueError):
                old = None
        if old != content:
            atomic_write_json(path, content)
            lines.append(f"stopped {cell.relative_to(cell.parents[3])} at {decision.buckets} "
                         f"of {len(runs)} buckets: {decision.reason}")
    if say:
        for line in lines:
            say(line)
    return lines


def clear_stops(plan_runs: Sequence[Any]) -> None:
    """A sweep without ``stop_early``: a cell that has now run every planned bucket is no
    longer stopped early; its old ``stopped.json`` goes."""
    for cell, runs in cells(plan_runs).items():
        path = cell / STOP_FILE
        if path.is_file() and len(_prefix(runs)) == len(runs):
            path.unlink()
