"""Model selection during source-training and its pitfalls (docs/protocol.md#model-selection).

Everything comes from the source-run record that ``fsxlt source-train``
stores in ``fsxlt_checkpoint.json``: every checkpoint (learning rate x
epoch) with its English and target dev scores, and, when source-training ran
with ``--checkpoint-test-scores``, its target test scores.

- **English-dev-selected vs. oracle zero-shot**: the test score of the
  checkpoint with the best English dev score (the standard protocol; the
  record's ``zero_shot``) against the test score of the checkpoint with the
  best target dev score (the oracle; first best wins on ties, as in
  source-training).
- **Directional agreement**: over all pairs of checkpoints of one run whose
  target test scores differ by at least ``min_test_diff`` (0.5 points), the
  share of pairs in which a dev score moved in the same direction as the test
  score. A dev tie counts as disagreement (the dev score did not say which
  checkpoint is better).
- **Seed variation**: min, max and max - min of the English-dev-selected
  zero-shot score over independent source-training runs (one checkpoint
  directory per seed).
- **Candidates** (records of ``fsxlt source-train --average-last N``): per
  language and candidate model (the selected checkpoint, ``last@LR``,
  ``average-last-N@LR``, ``average-lrs``), the test score as mean and std over
  the runs holding it, its mean target dev score, and the mean gap of its test
  score to the oracle's (the target-dev-selected checkpoint's test score,
  NaN when a run was source-trained without ``--checkpoint-test-scores``).

Scores are reported in points (x100), like ``fsxlt report``.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import combinations
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from fsxlt.errors import FsxltError
from fsxlt.fileio import read_json

MIN_TEST_DIFF = 0.005  # 0.5 points on the records' 0-1 scale
CHECKPOINT_FILE = "fsxlt_checkpoint.json"  # written by fsxlt.training.checkpoint


def load_source_record(path: str | Path) -> dict[str, Any]:
    """The source-run record of a checkpoint directory (or its ``fsxlt_checkpoint.json``)."""
    path = Path(path)
    file = path / CHECKPOINT_FILE if path.is_dir() else path
    if not file.is_file():
        raise FsxltError(f"{path}: no {CHECKPOINT_FILE}; run fsxlt source-train first")
    record = read_json(file)
    if not isinstance(record, dict) or not isinstance(record.get("checkpoints"), list):
        raise FsxltError(f"{file}: not a source-training record (no checkpoints)")
    record.setdefault("_path", str(path))
    return record


def directional_agreement(dev: Sequence[float], test: Sequence[float],
                          min_test_diff: float = MIN_TEST_DIFF) -> tuple[float | None, int]:
    """Share of checkpoint pairs (test differs >= ``min_test_diff``) where dev moved alike.

    Returns ``(share, number of pairs)``; the share is ``None`` without pairs.
    """
    if len(dev) != len(test):
        raise ValueError("dev and test need one score per checkpoint each")
    agree = pairs = 0
    for a, b in combinations(range(len(test)), 2):
        test_move = test[b] - test[a]
        if abs(test_move) < min_test_diff - 1e-12:
            continue
        pairs += 1
        agree += (dev[b] - dev[a]) * test_move > 0
    return (agree / pairs if pairs else None), pairs


def target_languages(record: dict[str, Any]) -> list[str]:
    return sorted({lang for c in record["checkpoints"] for lang in c.get("dev", {})}
                  - {record.get("source_language", "en")})


def _check_language(record: dict[str, Any], language: str) -> None:
    where = record["_path"]
    if language not in target_languages(record):
        raise FsxltError(f"{where}: no {language!r} dev scores; source-train with "
                         f"--target {language} (and --checkpoint-test-scores)")
    if any(language not in (c.get("test") or {}) for c in record["checkpoints"]):
        raise FsxltError(f"{where}: source-training did not score the {language} test set "
                         "per checkpoint; rerun fsxlt source-train with --checkpoint-test-scores")
    if language not in (record.get("zero_shot") or {}):
        raise FsxltError(f"{where}: no zero-shot {language} test score; source-train with a "
                         f"{language} test set")


def run_summary(record: dict[str, Any], language: str,
                min_test_diff: float = MIN_TEST_DIFF) -> dict[str, Any]:
    """One source-training run, one language: selected vs. oracle, agreement of both devs."""
    _check_language(record, language)
    checkpoints = record["checkpoints"]
    en = record.get("source_language", "en")
    test = [c["test"][language] for c in checkpoints]
    oracle = max(checkpoints, key=lambda c: c["dev"][language])  # first best wins
    en_share, n_pairs = directional_agreement([c["dev"][en] for c in checkpoints], test,
                                              min_test_diff)
    target_share, _ = directional_agreement([c["dev"][language] for c in checkpoints], test,
                                            min_test_diff)
    selected = 100 * record["zero_shot"][language]["score"]
    return {"run": record["_path"], "seed": record.get("seed"), "language": language,
            "english_dev_selected": selected, "oracle": 100 * oracle["test"][language],
            "oracle_gain": 100 * oracle["test"][language] - selected,
            "best_checkpoint": 100 * max(test),
            "agreement_english_dev": en_share, "agreement_target_dev": target_share,
            "pairs": n_pairs, "checkpoints": len(checkpoints)}


def selection_tables(records: Sequence[dict[str, Any]], languages: Sequence[str] | None = None,
                     min_test_diff: float = MIN_TEST_DIFF) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Per (run, language) summaries and, per language, the spread over runs (seeds)."""
    if not records:
        raise FsxltError("no source-training records given")
    tasks = {r.get("task") for r in records}
    if len(tasks) > 1:
        raise FsxltError(f"the checkpoints are of different tasks: {', '.join(map(str, tasks))}")
    langs = list(languages) if languages else target_languages(records[0])
    if not langs:
        raise FsxltError(f"{records[0]['_path']}: no target languages were scored; "
                         "source-train with --target LANG --checkpoint-test-scores")
    runs = pd.DataFrame([run_summary(r, lang, min_test_diff) for r in records for lang in langs])
    seeds = (runs.groupby("language", sort=True)["english_dev_selected"]
             .agg(runs="count", min="min", max="max").reset_index())
    seeds["spread"] = seeds["max"] - seeds["min"]
    return runs, seeds


CANDIDATE_COLUMNS = ["language", "candidate", "rule", "lr", "runs", "test_mean", "test_std",
                     "target_dev_mean", "gap_to_oracle"]


def _number(value: object) -> float:
    """A number of a record as a float; NaN when absent."""
    return float(value) if isinstance(value, int | float) else np.nan


def _points(value: object) -> float:
    """A 0-1 score of a record in points; NaN when absent."""
    return 100 * _number(value)


def _oracle_test(record: dict[str, Any], language: str) -> float:
    """The test score (points) of the target-dev-selected checkpoint; NaN if not scored."""
    oracle = (record.get("oracle") or {}).get(language) or {}
    return _points(oracle.get("test_score"))


def _candidate_runs(records: Sequence[dict[str, Any]], languages: Sequence[str]) -> pd.DataFrame:
    """One row per (run, language, candidate) of the records that carry candidates."""
    rows = []
    for record in records:
        models = (record.get("candidates") or {}).get("models") or []
        for language, model in ((lang, m) for lang in languages for m in models):
            test = _points((model.get("test") or {}).get(language))
            rows.append({"run": record.get("_path"), "language": language,
                         "candidate": model["name"], "rule": model.get("rule"),
                         "lr": _number(model.get("lr")), "test": test,
                         "dev": _points((model.get("dev") or {}).get(language)),
                         "gap": test - _oracle_test(record, language)})
    return pd.DataFrame(rows, columns=["run", "language", "candidate", "rule", "lr", "test",
                                       "dev", "gap"])


def _common_lr(lrs: pd.Series) -> float:
    """The candidate's learning rate when every run has the same one, else NaN."""
    values = lrs.dropna().unique()
    return float(values[0]) if len(values) == 1 and lrs.notna().all() else np.nan


def candidates_table(records: Sequence[dict[str, Any]],
                     languages: Sequence[str]) -> pd.DataFrame | None:
    """Per (language, candidate): test mean / std over runs, target dev mean, gap to oracle.

    Points (x100); std with ddof=1 (NaN with one run); the gap is a mean over the
    runs holding the candidate, NaN if one of them has no oracle test score.
    Records without ``candidates`` contribute nothing; ``None`` when none has them.
    """
    runs = _candidate_runs(records, languages)
    if runs.empty:
        return None
    rows = []
    for (language, name), group in runs.groupby(["language", "candidate"], sort=False):
        rows.append({"language": language, "candidate": name, "rule": group["rule"].iloc[0],
                     "lr": _common_lr(group["lr"]), "runs": len(group),
                     "test_mean": group["test"].mean(), "test_std": group["test"].std(ddof=1),
                     "target_dev_mean": group["dev"].mean(),
                     "gap_to_oracle": group["gap"].mean(skipna=False)})
    table = pd.DataFrame(rows, columns=CANDIDATE_COLUMNS)
    return table.sort_values("language", kind="stable").reset_index(drop=True)
