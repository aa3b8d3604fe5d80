"""Why some target languages gain more: lexical overlap, WALS features, script.

docs/protocol.md#analyses:

* lexical overlap of a target language L with English is
  ``|V_L ∩ V_EN| / |V_L|``, with ``V_L`` the word types in L's buckets (for
  one K) and ``V_EN`` the word types of the English training data;
* common linguistic features: how many of six WALS word-order features a
  language shares with English (a missing value never counts as shared);
* correlations (Spearman's rho, Pearson's r) between per-language gains and
  either predictor, where a language's gain is the mean over K of (K-shot
  mean score minus zero-shot score);
* mean gain of languages written in Latin script versus other scripts.

Word types are case-sensitive (mBERT is cased). For tagging tasks the words
are the data's tokens; for text tasks, runs of word characters and single
punctuation marks (so scripts without spaces yield long types: overlap is
then low by construction, as in the original study's setting).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path

import pandas as pd
from scipy import stats

from fsxlt.data import Example, TaggedSentence, example_texts
from fsxlt.errors import FsxltError
from fsxlt.sampling.store import find_sets, read_set
from fsxlt.tasks.languages import languages

WALS_FEATURES = ("81A", "85A", "86A", "87A", "88A", "89A")
WORD_PATTERN = re.compile(r"\w+|[^\w\s]")


def word_types(examples: Iterable[Example]) -> set[str]:
    """The set of word types in some examples."""
    types: set[str] = set()
    for ex in examples:
        if isinstance(ex, TaggedSentence):
            types.update(ex.tokens)
        else:
            for text in example_texts(ex):
                types.update(WORD_PATTERN.findall(text))
    return types


def lexical_overlap(target_types: set[str], english_types: set[str]) -> float:
    """``|V_L ∩ V_EN| / |V_L|``."""
    if not target_types:
        raise FsxltError("no target-language words to compare (empty buckets?)")
    return len(target_types & english_types) / len(target_types)


def overlap_table(bucket_root: str | Path, english: Iterable[Example],
                  task: str | None = None) -> pd.DataFrame:
    """Lexical overlap of every (task, language, K) bucket set below ``bucket_root``.

    Columns: task, language, k, types (|V_L|), shared (|V_L ∩ V_EN|), overlap.
    """
    english_types = word_types(english)
    rows = []
    for directory in find_sets(bucket_root):
        manifest, buckets, _ = read_set(directory)
        if task is not None and manifest["task"] != task:
            continue
        types = word_types(ex for bucket in buckets for ex in bucket.examples)
        rows.append({"task": manifest["task"], "language": manifest["language"],
                     "k": manifest["k"], "types": len(types),
                     "shared": len(types & english_types),
                     "overlap": lexical_overlap(types, english_types)})
    if not rows:
        raise FsxltError(f"{bucket_root}: no bucket sets" + (f" for task {task}" if task else ""))
    return pd.DataFrame(rows).sort_values(["task", "language", "k"], ignore_index=True)


def shared_wals_features(language: str, reference: str = "en") -> int:
    """How many of the six WALS features ``language`` shares with ``reference``."""
    table = languages()
    for code in (language, reference):
        if code not in table:
            raise FsxltError(f"language {code!r} is not in the bundled WALS table "
                             f"(fsxlt/resources/wals.tsv); known: {', '.join(sorted(table))}")
    ours, theirs = table[language].wals, table[reference].wals
    return sum(1 for f in WALS_FEATURES if ours.get(f) and ours.get(f) == theirs.get(f))


def language_gains(scores: pd.DataFrame) -> pd.DataFrame:
    """Per (task, language): the mean over K > 0 of (K-shot mean minus zero-shot).

    ``scores`` has columns task, language, k, mean; rows with k == 0 are the
    zero-shot scores. A language without a zero-shot row is an error that
    says what to run first. A language with only a zero-shot row (the source
    language, as the study's tables print English) is not a few-shot target:
    it is left out, and listed as ``task/language`` in
    ``result.attrs["zero_shot_only"]``.
    """
    missing = {"task", "language", "k", "mean"} - set(scores.columns)
    if missing:
        raise FsxltError(f"scores lack the column(s) {', '.join(sorted(missing))}; "
                         "expected task, language, k, mean")
    rows, zero_only = [], []
    for (task, language), group in scores.groupby(["task", "language"], sort=True):
        zero = group.loc[group["k"] == 0, "mean"]
        if zero.empty:
            raise FsxltError(f"no zero-shot (k=0) score for {task}/{language}: run source-train "
                             "(it writes zero-shot scores) or add a k=0 row")
        shots = group.loc[group["k"] > 0]
        if shots.empty:
            zero_only.append(f"{task}/{language}")
            continue
        rows.append({"task": task, "language": language,
                     "zero_shot": float(zero.iloc[0]),
                     "gain": float((shots["mean"] - zero.iloc[0]).mean()),
                     "n_k": int(shots["k"].nunique())})
    if not rows:
        raise FsxltError("no few-shot (k>0) scores: every language has only its zero-shot row")
    gains = pd.DataFrame(rows)
    gains.attrs["zero_shot_only"] = zero_only
    return gains


def correlate(gains: pd.DataFrame, predictor: str) -> dict[str, float]:
    """Spearman's rho and Pearson's r (with p-values) between gains and a predictor column."""
    data = gains[["gain", predictor]].dropna()
    if len(data) < 3:
        raise FsxltError(f"need at least 3 languages with a {predictor} value to correlate, "
                         f"got {len(data)}")
    rho, rho_p = stats.spearmanr(data[predictor], data["gain"])
    r, r_p = stats.pearsonr(data[predictor], data["gain"])
    return {"predictor": predictor, "n": len(data), "spearman_rho": float(rho),
            "spearman_p": float(rho_p), "pearson_r": float(r), "pearson_p": float(r_p)}


def correlation_table(gains: pd.DataFrame) -> pd.DataFrame:
    """Correlations of gains with WALS features shared with English and, if present, overlap.

    Adds a ``wals_shared`` column to ``gains`` (in place) and returns one row
    per (task, predictor).
    """
    gains["wals_shared"] = [shared_wals_features(lang) for lang in gains["language"]]
    predictors = ["wals_shared"] + (["overlap"] if "overlap" in gains.columns else [])
    rows = [dict(task=task, **correlate(group, p))
            for task, group in gains.groupby("task", sort=True) for p in predictors]
    return pd.DataFrame(rows)


def script_table(gains: pd.DataFrame, reference_script: str = "Latin") -> pd.DataFrame:
    """Mean gain of languages in the reference (English) script versus the others, per task."""
    table = languages()
    unknown = sorted(set(gains["language"]) - set(table))
    if unknown:
        raise FsxltError(f"no script known for {', '.join(unknown)} (fsxlt/resources/wals.tsv)")
    group = ["same script" if table[lang].script == reference_script else "other script"
             for lang in gains["language"]]
    return (gains.assign(script=group).groupby(["task", "script"], sort=True)["gain"]
            .agg(["count", "mean"]).reset_index())
