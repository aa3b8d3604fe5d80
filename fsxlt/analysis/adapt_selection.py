"""Model selection when adapting: each selection rule's test score against target dev.

An adapt run picks its model by the target dev score (its learning rate and
epoch: the record's own selection, ``test_score``). Runs that kept more
candidates store them in the record's optional ``candidates`` block, each
with its target dev score and its test score::

    {"average_last": 3, "models": [
      {"name": "target-dev", "rule": "target-dev", "lr": 2e-05, "epochs": [7],
       "dev": 0.61, "test": 0.58},
      {"name": "source-dev", "rule": "source-dev", ...},      # with an English dev set
      {"name": "last@2e-05", "rule": "last", ...},             # one per learning rate
      {"name": "average-last-3@2e-05", "rule": "average-last", ...},
      {"name": "average-lrs", "rule": "average-lrs", "lr": null, ...}]}

A record without the block (older records, runs without averaging) holds
the target-dev rule only. :func:`selection_table` gives, per (task,
language, K, arm, candidate), the test score over buckets (mean and sample
std, ``ddof=1`` as in ``fsxlt report``), the mean target dev score, and the
gap to the target-dev selection: the mean over buckets of (candidate test -
target-dev test) of the same bucket, with the percentile bootstrap interval
and the Wilcoxon p-value of ``fsxlt report --compare``
(:mod:`fsxlt.report.compare`). A candidate counts in the buckets whose
record holds it with a test score; ``n`` says how many.

Counted: finished adapt records (:func:`fsxlt.study.runs.is_complete`: status
ok, a test score) of a bucket and a K; error records, unfinished ones,
``--no-test`` runs, K=0 records, ICL records (they select nothing) and
FewCLUE's union bucket (``all``, reported beside the splits, never among
them) are left out. The arm comes
from the record's facts (:func:`fsxlt.study.runs.arm_of`). Scores are in points
(x100), like ``fsxlt report``.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from fsxlt.errors import FsxltError
from fsxlt.report.compare import bootstrap_ci, wilcoxon_p
from fsxlt.report.tables import Table, arm_order
from fsxlt.study.directories import RUNS, marked_kind
from fsxlt.study.runs import (
    CHECKPOINT_FILE,
    arm_of,
    bucket_stem,
    is_complete,
    read_record,
    record_files,
)

TARGET_DEV = "target-dev"  # the record's own selection, the reference of every gap
RULE_ORDER = ("target-dev", "source-dev", "last", "average-last", "average-lrs")
CELL = ["task", "language", "k", "arm"]
COLUMNS = CELL + ["candidate", "rule", "lr", "n", "test_mean", "test_std", "dev_mean",
                  "gap", "gap_ci_low", "gap_ci_high", "gap_p"]


def is_runs_directory(path: str | Path) -> bool:
    """Whether ``path`` is a runs directory: marked so, or holding run records by the
    layout (trees written before markers); a checkpoint directory is not one."""
    path = Path(path)
    if not path.is_dir() or (path / CHECKPOINT_FILE).is_file():
        return False
    return marked_kind(path) == RUNS or bool(record_files(path))


def counts(record: dict[str, Any] | None) -> bool:
    """Whether an adapt record counts (see the module docstring): finished with a test
    score, of a bucket of a K, not a union bucket, and a run that selected a model (an ICL
    record trains nothing and selects nothing: no candidate of any rule)."""
    if not is_complete(record) or not isinstance(record.get("bucket"), dict):
        return False
    if isinstance(record.get("icl"), dict):
        return False
    return record.get("k") is not None and not record["bucket"].get("union")


def read_adapt_records(runs_dir: str | Path) -> list[dict[str, Any]]:
    """The counted adapt records of a runs directory (:func:`counts`), each with
    ``_path``, its file, and ``_arm``, its arm: a record imported from another study
    (:mod:`fsxlt.study.imports`) is an arm of its own, ``<prefix>.<arm>``, as in ``fsxlt
    report``; one whose bytes changed since the import is left out."""
    from fsxlt.fileio import sha256_file
    from fsxlt.study.imports import read_imports

    root = Path(runs_dir)
    imports = read_imports(root)
    records = []
    for path in record_files(root):
        record = read_record(path)
        if not counts(record):
            continue
        arm = arm_of(record)
        imported = imports.get(path.relative_to(root).as_posix())
        if imported is not None:
            if sha256_file(path) != imported.sha256:
                continue  # changed since it was imported: no record of theirs, nor ours
            arm = imported.arm(arm)
        records.append({**record, "_path": str(path), "_arm": arm})
    return records


def record_arm(record: dict[str, Any]) -> str:
    """A read record's arm (:func:`read_adapt_records`), else its own facts'."""
    return str(record.get("_arm") or arm_of(record))


def _number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) \
        and math.isfinite(value)


def _own_selection(record: dict[str, Any]) -> dict[str, Any]:
    """The target-dev candidate of a record without a ``candidates`` block."""
    epoch = record.get("best_epoch")
    return {"name": TARGET_DEV, "rule": TARGET_DEV, "lr": record.get("selected_lr"),
            "epochs": [epoch] if epoch is not None else [], "dev": record.get("dev_score"),
            "test": record["test_score"]}


def record_candidates(record: dict[str, Any]) -> list[dict[str, Any]]:
    """A record's candidates with a test score; the target-dev one always among them."""
    block = record.get("candidates")
    models = block.get("models") if isinstance(block, dict) else None
    if not isinstance(models, list):
        return [_own_selection(record)]
    chosen = [m for m in models if isinstance(m, dict) and m.get("name")
              and _number(m.get("test"))]
    if not any(m["name"] == TARGET_DEV for m in chosen):
        chosen.insert(0, _own_selection(record))
    return chosen


def _bucket_rows(records: Iterable[dict[str, Any]]) -> pd.DataFrame:
    """One row per (record, candidate): the cell, the bucket, the rule and its scores."""
    rows, seen = [], {}
    for record in filter(counts, records):
        cell = (record["task"], record["language"], int(record["k"]), record_arm(record))
        bucket = bucket_stem(record["bucket"])
        where = record.get("_path", "a record")
        if (*cell, bucket) in seen:
            raise FsxltError(f"{where} and {seen[(*cell, bucket)]} are runs of the same "
                             f"bucket ({'/'.join(map(str, cell))}, bucket {bucket}); give "
                             "runs directories that do not overlap")
        seen[(*cell, bucket)] = where
        for model in record_candidates(record):
            lr = model.get("lr")
            dev = model.get("dev")
            rows.append(dict(zip(CELL, cell, strict=True), bucket=bucket,
                             candidate=str(model["name"]),
                             rule=str(model.get("rule") or model["name"]),
                             lr=float(lr) if _number(lr) else np.nan,
                             dev=100.0 * dev if _number(dev) else np.nan,
                             test=100.0 * float(model["test"])))
    return pd.DataFrame(rows, columns=CELL + ["bucket", "candidate", "rule", "lr", "dev",
                                              "test"])


def _common_lr(lrs: pd.Series) -> float:
    """The candidate's learning rate when every bucket has the same one, else NaN."""
    values = lrs.dropna().unique()
    return float(values[0]) if len(values) == 1 and lrs.notna().all() else np.nan


def _rule_rank(rule: str) -> int:
    return RULE_ORDER.index(rule) if rule in RULE_ORDER else len(RULE_ORDER)


def _candidate_row(cell: tuple, name: str, group: pd.DataFrame, reference: pd.Series,
                   *, seed: int, n_boot: int) -> dict[str, Any]:
    """The summary of one candidate in one cell; ``reference``: target-dev test by bucket."""
    paired = group.set_index("bucket")["test"]
    diffs = (paired - reference.reindex(paired.index)).dropna().to_numpy(dtype=float)
    key = "/".join(map(str, (*cell, name)))
    low, high = bootstrap_ci(diffs, seed=seed, key=key, n_boot=n_boot) if len(diffs) \
        else (np.nan, np.nan)
    return {**dict(zip(CELL, cell, strict=True)), "candidate": name,
            "rule": group["rule"].iloc[0], "lr": _common_lr(group["lr"]), "n": len(group),
            "test_mean": float(group["test"].mean()),
            "test_std": float(group["test"].std(ddof=1)),
            "dev_mean": float(group["dev"].mean()) if group["dev"].notna().any() else np.nan,
            "gap": float(diffs.mean()) if len(diffs) else np.nan,
            "gap_ci_low": low, "gap_ci_high": high,
            "gap_p": wilcoxon_p(diffs) if len(diffs) else np.nan}


def selection_table(records: Sequence[dict[str, Any]], *, seed: int = 0,
                    n_boot: int = 10_000) -> pd.DataFrame:
    """One row per (task, language, k, arm, candidate) of the records that count
    (:func:`counts`; the others are left out): see the module docstring. Rows
    are sorted by task, language, K, arm (as ``fsxlt report`` orders arms), then rule
    (target-dev, source-dev, last, average-last, average-lrs) and learning rate.

    ``seed`` and ``n_boot`` drive the bootstrap of the gap (each cell's
    interval is seeded with ``seed`` and the cell's name, as in ``fsxlt report``).
    """
    if n_boot < 1:
        raise FsxltError("the bootstrap needs at least one resample")
    rows = _bucket_rows(records)
    if rows.empty:
        raise FsxltError("no finished adapt records with a test score to compare")
    table = []
    for cell, group in rows.groupby(CELL, sort=True):
        reference = group.loc[group["candidate"] == TARGET_DEV].set_index("bucket")["test"]
        for name, candidate in group.groupby("candidate", sort=True):
            table.append(_candidate_row(cell, str(name), candidate, reference, seed=seed,
                                        n_boot=n_boot))
    frame = pd.DataFrame(table, columns=COLUMNS)
    arm_rank = {arm: i for i, arm in enumerate(sorted(set(frame["arm"]), key=arm_order))}
    order = frame.assign(_arm=frame["arm"].map(arm_rank), _rule=frame["rule"].map(_rule_rank))
    order = order.sort_values(["task", "language", "k", "_arm", "_rule", "rule", "lr",
                               "candidate"], na_position="last", kind="mergesort")
    return order.drop(columns=["_arm", "_rule"]).reset_index(drop=True)


def filter_records(records: Iterable[dict[str, Any]], *, tasks: Sequence[str] = (),
                   languages: Sequence[str] = (), ks: Sequence[int] = (),
                   arms: Sequence[str] = ()) -> list[dict[str, Any]]:
    """The records of the given tasks, languages, Ks and arms (an empty filter keeps all)."""
    return [r for r in records
            if (not tasks or r["task"] in tasks) and (not languages or r["language"] in languages)
            and (not ks or int(r["k"]) in ks) and (not arms or record_arm(r) in arms)]


def _points(value: float, signed: bool = False) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "–"
    return f"{value:+.2f}" if signed else f"{value:.2f}"


def selection_markdown(table: pd.DataFrame, *, seed: int, n_boot: int) -> str:
    """The table as Markdown: test ``mean ± std``, dev mean, gap with its interval."""

    rows = []
    for r in table.itertuples(index=False):
        test = _points(r.test_mean) + (f" ± {_points(r.test_std)}" if r.n > 1 else "")
        rows.append([r.task, r.language, str(r.k), r.arm, r.candidate, str(r.n), test,
                     _points(r.dev_mean), _points(r.gap, signed=True),
                     f"[{_points(r.gap_ci_low, signed=True)}, "
                     f"{_points(r.gap_ci_high, signed=True)}]",
                     "–" if np.isnan(r.gap_p) else f"{r.gap_p:.4f}"])
    note = (f"Scores in points (x100): test mean ± std over buckets (ddof=1), mean target "
            f"dev score. Gap: candidate minus target-dev test score, paired by bucket; "
            f"95% percentile bootstrap ({n_boot} resamples, seed {seed}); Wilcoxon "
            "signed-rank, two-sided, zero differences dropped.")
    body = Table("Selection rules when adapting (test, points)",
                 ["task", "language", "K", "arm", "candidate", "n", "test", "dev",
                  "gap to target-dev", "95% CI", "Wilcoxon p"], rows).markdown()
    return f"# Adapt selection\n\n{note}\n\n{body}"
