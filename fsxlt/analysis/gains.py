"""Where the gains of tagging come from (docs/protocol.md#analyses).

For an adapt run on bucket j, ``I_j`` is the set of test-set word types at
positions the zero-shot model tags wrongly and the adapted model tags
correctly. Two views:

- a heatmap over buckets of ``Jaccard(words of bucket i, I_j)``: if adapting
  mostly fixes the words it saw, the diagonal stands out;
- per bucket j, the improved predictions (counted per test word
  *occurrence*, so frequent words weigh as they do in the score) split into
  words that occur in bucket j and words that do not.

Words are compared exactly as written (case-sensitive, like mBERT-cased and
``fsxlt analyze overlap``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

import pandas as pd

from fsxlt.errors import FsxltError
from fsxlt.study.predictions import Predictions, check_comparable


@dataclass
class GainsResult:
    """``jaccard``: rows bucket i, columns run j; ``counts``: one row per run j."""

    jaccard: pd.DataFrame
    counts: pd.DataFrame


def jaccard(a: set[str], b: set[str]) -> float:
    """``|a ∩ b| / |a ∪ b|``; 0 for two empty sets."""
    union = a | b
    return len(a & b) / len(union) if union else 0.0


def improved_words(zero_shot: Predictions, adapted: Predictions) -> list[str]:
    """Test words (one per occurrence) wrong before adapting and right after."""
    if zero_shot.kind != "tagging":
        raise FsxltError(f"the gains analysis is for tagging tasks; "
                         f"{zero_shot.header.get('task')} is {zero_shot.kind}")
    check_comparable(zero_shot, adapted)
    words = []
    for before, after in zip(zero_shot.rows, adapted.rows, strict=True):
        for token, gold, old, new in zip(before["tokens"], before["gold"], before["predicted"],
                                         after["predicted"], strict=True):
            if old != gold and new == gold:
                words.append(token)
    return words


def bucket_word_sets(buckets: Mapping[int, Iterable]) -> dict[int, set[str]]:
    """Word types of each bucket (index -> its tagged sentences)."""
    return {index: {token for sentence in sentences for token in sentence.tokens}
            for index, sentences in buckets.items()}


def gains_analysis(zero_shot: Predictions, adapted: Mapping[int, Predictions],
                   bucket_words: Mapping[int, set[str]]) -> GainsResult:
    """Jaccard heatmap values and in-bucket / not-in-bucket counts of improved predictions."""
    missing = sorted(set(adapted) - set(bucket_words))
    if missing:
        raise FsxltError(f"no bucket words for bucket(s) {', '.join(map(str, missing))}")
    improved = {j: improved_words(zero_shot, adapted[j]) for j in sorted(adapted)}
    types = {j: set(words) for j, words in improved.items()}
    rows = sorted(bucket_words)
    table = pd.DataFrame([[jaccard(bucket_words[i], types[j]) for j in improved] for i in rows],
                         index=pd.Index(rows, name="bucket"),
                         columns=pd.Index(list(improved), name="run"))
    counts = pd.DataFrame([
        {"bucket": j, "improved": len(words), "improved_types": len(types[j]),
         "in_bucket": sum(w in bucket_words[j] for w in words),
         "not_in_bucket": sum(w not in bucket_words[j] for w in words)}
        for j, words in improved.items()])
    return GainsResult(table, counts)
