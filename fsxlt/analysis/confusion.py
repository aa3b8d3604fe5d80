"""Confusion matrices of zero-shot and adapted test predictions (docs/protocol.md#analyses).

Rows are gold labels, columns predicted labels, both in the task's label
order (scikit-learn's ``confusion_matrix`` with ``labels=`` fixed, so every
matrix has the same layout even when a label never occurs). Tagging tasks
count every word. With several adapt runs (e.g. all buckets of one K) the
adapted matrix is the **mean** over runs, so that it stays on the scale of
one test set and the difference ``adapted - zero-shot`` reads as "how many
test items moved from one cell to another on average".
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from fsxlt.errors import FsxltError
from fsxlt.study.predictions import Predictions, check_comparable


@dataclass
class ConfusionResult:
    """Zero-shot, adapted (mean over runs) and difference matrices, as labelled frames."""

    zero_shot: pd.DataFrame
    adapted: pd.DataFrame
    difference: pd.DataFrame
    n_runs: int


def flat_labels(predictions: Predictions) -> tuple[list[str], list[str]]:
    """Gold and predicted labels, one per example (classification) or per word (tagging)."""
    if predictions.kind == "tagging":
        gold = [tag for row in predictions.rows for tag in row["gold"]]
        predicted = [tag for row in predictions.rows for tag in row["predicted"]]
        return gold, predicted
    return predictions.gold(), predictions.predicted()


def confusion(predictions: Predictions, labels: Sequence[str] | None = None) -> np.ndarray:
    """Counts: ``[i, j]`` = items with gold ``labels[i]`` predicted as ``labels[j]``."""
    from sklearn.metrics import confusion_matrix

    labels = list(labels or predictions.labels)
    gold, predicted = flat_labels(predictions)
    unknown = sorted((set(gold) | set(predicted)) - set(labels))
    if unknown:
        raise FsxltError(f"{predictions.path}: labels {', '.join(unknown)} are not labels of "
                         f"task {predictions.header.get('task')}")
    if not gold:
        raise FsxltError(f"{predictions.path}: no predictions to count")
    return confusion_matrix(gold, predicted, labels=labels)


def _frame(matrix: np.ndarray, labels: Sequence[str]) -> pd.DataFrame:
    frame = pd.DataFrame(matrix, index=list(labels), columns=list(labels))
    frame.index.name, frame.columns.name = "gold", "predicted"
    return frame


def confusion_analysis(zero_shot: Predictions, adapted: Sequence[Predictions],
                       normalize: bool = False) -> ConfusionResult:
    """The three matrices; ``normalize`` divides each row by its gold count (recall view)."""
    if not adapted:
        raise FsxltError("no adapted predictions to compare with zero-shot")
    for other in adapted:
        check_comparable(zero_shot, other)
    labels = zero_shot.labels
    zero = confusion(zero_shot, labels).astype(float)
    mean = np.mean([confusion(p, labels) for p in adapted], axis=0)
    if normalize:
        totals = zero.sum(axis=1, keepdims=True)  # gold counts: the same for every run
        zero = np.divide(zero, totals, out=np.zeros_like(zero), where=totals > 0)
        mean = np.divide(mean, totals, out=np.zeros_like(mean), where=totals > 0)
    return ConfusionResult(_frame(zero, labels), _frame(mean, labels),
                           _frame(mean - zero, labels), len(adapted))
