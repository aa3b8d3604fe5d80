"""What an adapt record says of its bucket, and how two records are compared.

:func:`bucket_facts` turns a bucket (or a plain list of examples) into the
record's ``bucket`` block; :func:`long_sentence_facts` its ``long_sentences`` block;
:func:`strip_timings` drops the wall-clock fields,
so that two runs of the same settings compare equal (they do, on CPU).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from fsxlt.data import Example
from fsxlt.data.buckets import Bucket
from fsxlt.errors import FsxltError
from fsxlt.training.loop import examples_digest

TIMING_KEYS = ("wall_time_s", "examples_per_s")  # wall-clock figures (examples_per_s: ICL)


def long_sentence_facts(task: Any, start: Any, long_sentences: str) -> dict[str, Any]:
    """A tagging record's ``long_sentences``: how the start's training rows (a checkpoint's;
    ``unrecorded`` before fsxlt said) and the run's treated a sentence longer than
    ``max_seq_length`` (``fsxlt report`` names cells that mix them); nothing for other
    tasks, whose inputs are always truncated."""
    if not task.is_tagging:
        return {}
    facts = {"adapt": long_sentences}
    if not start.fresh_head:
        facts["source"] = start.info.get("long_sentences", "unrecorded")
    return {"long_sentences": facts}


def bucket_facts(bucket: Bucket | Sequence[Example], task: str, language: str,
                 ) -> tuple[list[Example], dict[str, Any]]:
    """A bucket's examples and what a record says of it (id, index, K, hash, strategy);
    a bucket of another task or language is refused."""
    if isinstance(bucket, Bucket):
        if bucket.task != task:
            raise FsxltError(f"bucket {bucket.id} is for task {bucket.task}, "
                             f"not {task}")
        if bucket.language != language:
            raise FsxltError(f"bucket {bucket.id} is for language {bucket.language}, "
                             f"not {language}")
        info = {"id": bucket.id, "index": bucket.index, "k": bucket.k,
                "sha256": bucket.sha256, "n_examples": len(bucket.examples),
                "sampler": bucket.meta.get("sampler")}
        if bucket.meta.get("name"):
            info["name"] = bucket.name
        if bucket.set_size is not None:
            info["set_size"] = bucket.set_size  # reports expect the set's own count
        strategy = bucket.meta.get("strategy")
        if isinstance(strategy, dict):
            info["strategy"] = strategy.get("name")
            if isinstance(strategy.get("pools"), dict):  # the candidates it chose from
                info["strategy_pools"] = dict(
                    strategy["pools"], source=(bucket.meta.get("source") or {}).get("sha256"))
        if bucket.union:
            info["union"] = True  # FewCLUE's all: reported beside the splits, not among
        return list(bucket.examples), info
    examples = list(bucket)
    return examples, {"id": None, "index": None, "k": None,
                      "sha256": examples_digest(examples), "n_examples": len(examples)}


def strip_timings(record: Any) -> Any:
    """A copy of a record without wall-clock fields (to compare two runs)."""
    if isinstance(record, dict):
        return {k: strip_timings(v) for k, v in record.items() if k not in TIMING_KEYS}
    if isinstance(record, list):
        return [strip_timings(v) for v in record]
    return record
