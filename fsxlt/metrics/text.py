"""BLEU as XGLUE scores its generation tasks (QG and NTG), in one function.

XGLUE's evaluator (``evaluation/xglue_evaluate.py`` in microsoft/XGLUE) strips every
prediction line and every gold target, and scores the corpus with
``sacrebleu.corpus_bleu(predictions, [targets], lowercase=True)``: one reference per
line, sacrebleu's default 13a tokenizer, exponential smoothing. :func:`xglue_bleu` is
that computation; both :func:`fsxlt.metrics.scores.compute_scores` (metric ``bleu``) and
``fsxlt score`` (:mod:`fsxlt.metrics.scoring`) call it, so a run's BLEU and a prediction file's
BLEU cannot differ. A gold line's target is its last tab-separated field
(:func:`fsxlt.data.generation.target_of_line`), which the readers apply before.

13a splits at spaces and punctuation, so a language written without spaces (Chinese,
Thai) gets few, long tokens; XGLUE's generation languages are all written with spaces.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any


def xglue_bleu(predictions: Sequence[str], targets: Sequence[str]) -> dict[str, Any]:
    """Corpus BLEU of ``predictions`` against ``targets`` (the i-th against the i-th), as
    XGLUE's evaluator computes it: ``bleu`` (sacrebleu's score, 0-100), ``n`` (pairs) and
    ``signature`` (sacrebleu's, naming case, tokenizer, smoothing and version). An empty
    corpus scores 0 without a signature (sacrebleu has neither for it); another number of
    predictions than targets is a ``ValueError``."""
    from sacrebleu.metrics import BLEU

    if len(predictions) != len(targets):
        raise ValueError(f"{len(predictions)} predictions but {len(targets)} targets")
    if not targets:
        return {"bleu": 0.0, "n": 0, "signature": None}
    metric = BLEU(lowercase=True)
    result = metric.corpus_score([p.strip() for p in predictions],
                                 [[t.strip() for t in targets]])
    return {"bleu": float(result.score), "n": len(targets),
            "signature": str(metric.get_signature()),
            "bleu_precisions": [float(p) for p in result.precisions],
            "brevity_penalty": float(result.bp)}
