"""What makes a bucket good: features of random buckets against their adapted scores.

For every finished run of one arm (by default the ``~random`` arm of
``fsxlt select``'s pools when there is one, else the ordinary ``full``
buckets), the bucket file the record names is read and described by:

* ``n_examples``: examples (sentences) in the bucket;
* ``mean_length``: mean words per example (tokens; text: word-character
  runs and punctuation, as the overlap analysis splits them);
* ``label_entropy``: entropy (nats) of the bucket's label distribution:
  entity mentions per type (NER), tags (POS), labels (classification;
  constant under exact K per label);
* ``mentions``: entity mentions (NER; tag count otherwise);
* ``english_overlap``: ``|V_bucket ∩ V_EN| / |V_bucket|`` over word types,
  with ``V_EN`` the English training file the start was source-trained on
  (its record names it; ``--english`` overrides);
* ``model_entropy``: the source-trained model's mean prediction entropy on
  the bucket's examples (tagging: per word, averaged per sentence): low =
  confident;
* ``dev_distance``: cosine distance between the mean embedding of the
  bucket's examples and that of the run's dev set, both from the
  source-trained model (the embeddings :func:`fsxlt.models.prediction.example_signals`
  gives, read the way the start was trained: :mod:`fsxlt.training.starts`).

The two model features need the start checkpoint (``model.start.path`` in the
record, or ``--from``); without it they are left out. Per (task, language,
K) cell, Spearman's rho (scipy) between each feature and the test score is
reported with its p-value. Inside one cell the zero-shot score is one
number, so the gain over zero-shot has the same ranks as the score; the
gain's correlations are therefore also computed with all cells pooled
(``cell = all``), where they compare buckets across languages and K.
"""

from __future__ import annotations

import json
import math
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from fsxlt.analysis.typology import WORD_PATTERN, word_types
from fsxlt.data import Example, TaggedSentence, example_texts, read_examples
from fsxlt.errors import FsxltError
from fsxlt.report.records import Records, load_records
from fsxlt.sampling.samplers import sentence_label_counts
from fsxlt.sampling.set_files import read_data_file
from fsxlt.sampling.store import index_store, run_bucket
from fsxlt.study.runs import arm_strategy
from fsxlt.tasks import TaskSpec, get_task

TEXT_FEATURES = ("n_examples", "mean_length", "label_entropy", "mentions", "english_overlap")
MODEL_FEATURES = ("model_entropy", "dev_distance")


def _entropy(counts: Counter[str]) -> float:
    total = sum(counts.values())
    return -sum(n / total * math.log(n / total) for n in counts.values() if n) if total else 0.0


def _length(example: Example) -> int:
    if isinstance(example, TaggedSentence):
        return len(example.tokens)
    return sum(len(WORD_PATTERN.findall(text)) for text in example_texts(example))


def text_features(task: TaskSpec, examples: list[Example], english_types: set[str] | None,
                  ) -> dict[str, float]:
    """The features that need no model (module docstring)."""
    if task.is_tagging:
        counts: Counter[str] = Counter()
        for sentence in examples:
            counts.update(sentence_label_counts(sentence, task.label_unit))
    elif task.is_qa:
        counts = Counter()  # answers are spans: no labels to count
    else:
        counts = Counter(ex.label for ex in examples)
    row = {"n_examples": float(len(examples)),
           "mean_length": float(np.mean([_length(ex) for ex in examples])),
           "label_entropy": _entropy(counts), "mentions": float(sum(counts.values()))}
    if english_types is not None:
        types = word_types(examples)
        row["english_overlap"] = len(types & english_types) / len(types) if types else 0.0
    return row


class _Model:
    """The start checkpoint, loaded once, and the signals of every set it has seen."""

    def __init__(self, start: str, task: TaskSpec, device: str | None):
        from fsxlt.training.starts import open_start

        self.opened = open_start(start, task, device=device)  # read as it was trained
        self.dev_centres: dict[str, np.ndarray] = {}

    def signals(self, examples: list[Example]) -> tuple[np.ndarray, np.ndarray]:
        return self.opened.signals(examples)

    def dev_centre(self, path: str, task: TaskSpec, language: str) -> np.ndarray:
        if path not in self.dev_centres:
            source = Path(path)
            if not source.is_file():
                raise FsxltError(f"{source}: the run's dev set is not found")
            examples = read_data_file(source, task, language, "dev")
            self.dev_centres[path] = self.signals(examples)[0].mean(axis=0)
        return self.dev_centres[path]

    def features(self, examples: list[Example], dev_path: str | None, task: TaskSpec,
                 language: str) -> dict[str, float]:
        embeddings, entropy = self.signals(examples)
        row = {"model_entropy": float(entropy.mean())}
        if dev_path:
            centre, dev = embeddings.mean(axis=0), self.dev_centre(dev_path, task, language)
            cosine = float(centre @ dev / (np.linalg.norm(centre) * np.linalg.norm(dev)))
            row["dev_distance"] = 1.0 - cosine
        return row


def default_arm(arms: set[str]) -> str:
    """The random buckets of a strategy study when there are any, else ``full``."""
    for arm in ("full~random", "full"):
        if arm in arms:
            return arm
    randoms = sorted(a for a in arms if arm_strategy(a)[1] == "random")
    if randoms:
        return randoms[0]
    raise FsxltError(f"no run of arm full or full~random; pass --arm (found: "
                     f"{', '.join(sorted(arms)) or 'none'})")


def _english_types(task: TaskSpec, record_start: str | None,
                   english: Path | None) -> set[str] | None:
    """Word types of the English training file (``english``, else the one the start's
    record names; None when neither is there, e.g. a multi-language source)."""
    path = english
    if path is None and record_start:
        meta_path = Path(record_start) / "fsxlt_checkpoint.json"
        if meta_path.is_file():
            meta = json.loads(meta_path.read_text(encoding="utf-8"))
            source = str(((meta.get("data") or {}).get("train") or {}).get("source") or "")
            if source and " + " not in source and Path(source).is_file():
                path = Path(source)
    if path is None:
        return None
    if not Path(path).is_file():
        raise FsxltError(f"{path}: English training file not found")
    return word_types(read_examples(path, task, language=task.source_language))


def arm_zero_shot(records: Records, arm: str) -> dict[tuple[str, str], float]:
    """The K=0 score (points) each (task, language) of ``arm`` gains over, as the report
    reads it (:func:`fsxlt.report.tables.aggregate`): its own start's, an imported arm's
    from its own study, none for an arm without source-training or a language the start
    was trained on."""
    from fsxlt.report.tables import aggregate

    cells = aggregate(records)
    own = cells[(cells["arm"] == arm) & (cells["k"] == 0) & ~cells["in_source"]]
    return {(r.task, r.language): float(r.zero_shot) for r in own.itertuples(index=False)
            if not np.isnan(r.zero_shot)}


def feature_table(runs_dir: str | Path, *, arm: str | None = None,
                  english: str | Path | None = None, start: str | None = None,
                  buckets: str | Path | None = None, device: str | None = None,
                  model: bool = True) -> pd.DataFrame:
    """One row per finished run of ``arm``: its cell, scores and bucket features; each
    run's bucket found by the hash its record holds, in the store ``buckets`` or at the
    record's path (:func:`fsxlt.sampling.store.run_bucket`)."""
    records = load_records(runs_dir)
    scores = records.scores
    if scores.empty:
        raise FsxltError(f"{runs_dir}: no finished run records found")
    arm = arm or default_arm(set(scores["arm"]))
    chosen = scores[(scores["arm"] == arm) & (scores["k"] > 0)]  # K=0 runs have no bucket
    if chosen.empty:
        raise FsxltError(f"no runs of arm {arm!r} under {runs_dir}")
    zero = arm_zero_shot(records, arm)
    index = index_store(buckets) if buckets is not None else None  # manifests read once
    rows, models, vocab = [], {}, {}
    for rel in chosen["record"]:
        path = Path(runs_dir) / rel
        record = json.loads(path.read_text(encoding="utf-8"))
        task = get_task(record["task"])
        bucket = run_bucket(record["bucket"], path, index)
        record_start = start or ((record.get("model") or {}).get("start") or {}).get("path")
        key = str(english or record_start)
        if key not in vocab:
            vocab[key] = _english_types(task, record_start, Path(english) if english else None)
        row: dict[str, Any] = {"task": task.name, "language": record["language"],
                               "k": int(record["k"]), "bucket": int(record["bucket"]["index"]),
                               "score": 100.0 * float(record["test_score"])}
        row["gain"] = row["score"] - zero[(task.name, row["language"])] \
            if (task.name, row["language"]) in zero else np.nan
        row.update(text_features(task, list(bucket.examples), vocab[key]))
        if model and record_start and not task.is_qa:  # QA predicts spans, not labels
            if (record_start, task.name) not in models:
                models[(record_start, task.name)] = _Model(record_start, task, device)
            dev = ((record.get("data") or {}).get("dev") or {}).get("source")
            row.update(models[(record_start, task.name)].features(
                list(bucket.examples), dev, task, record["language"]))
        rows.append(row)
    table = pd.DataFrame(rows).sort_values(["task", "language", "k", "bucket"],
                                           ignore_index=True)
    table.attrs["arm"] = arm
    return table


def correlations(table: pd.DataFrame) -> pd.DataFrame:
    """Spearman's rho (and p) of every feature with the score, per cell, and with the gain
    over all cells pooled."""
    from scipy.stats import spearmanr

    features = [f for f in TEXT_FEATURES + MODEL_FEATURES if f in table.columns]
    rows = []

    def add(cell: str, target: str, part: pd.DataFrame) -> None:
        for feature in features:
            data = part[[feature, target]].dropna()
            rho, p = (np.nan, np.nan)
            if len(data) >= 3 and data[feature].nunique() > 1 and data[target].nunique() > 1:
                result = spearmanr(data[feature], data[target])
                rho, p = float(result.statistic), float(result.pvalue)
            rows.append({"cell": cell, "target": target, "feature": feature,
                         "n": len(data), "rho": rho, "p_value": p})

    for (task, lang, k), part in table.groupby(["task", "language", "k"], sort=True):
        add(f"{task}/{lang}/k{k}", "score", part)
    if "gain" in table.columns and table["gain"].notna().any():
        add("all", "gain", table)
    return pd.DataFrame(rows, columns=["cell", "target", "feature", "n", "rho", "p_value"])


def plot_features(table: pd.DataFrame, out: str | Path) -> list[Path]:
    """One panel per feature: the feature against the gain (score when no zero-shot),
    one colour per cell."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from fsxlt.report.plots import _save

    features = [f for f in TEXT_FEATURES + MODEL_FEATURES if f in table.columns]
    target = "gain" if "gain" in table.columns and table["gain"].notna().all() else "score"
    cols = min(4, len(features))
    rows = math.ceil(len(features) / cols)
    fig, axes = plt.subplots(rows, cols, figsize=(3.2 * cols, 2.8 * rows), squeeze=False)
    for ax, feature in zip(axes.flat, features, strict=False):
        for (_task, lang, k), part in table.groupby(["task", "language", "k"], sort=True):
            ax.scatter(part[feature], part[target], s=12, label=f"{lang} K={k}")
        ax.set_xlabel(feature, fontsize=8)
        ax.set_ylabel(f"{target} (points)", fontsize=8)
    for ax in list(axes.flat)[len(features):]:
        ax.axis("off")
    axes.flat[0].legend(fontsize=7)
    fig.suptitle(f"bucket features, arm {table.attrs.get('arm', '')}", fontsize=10)
    fig.tight_layout()
    return _save(fig, Path(out), "bucket_features")
