"""A bucket set against the data file it was drawn from (``fsxlt buckets check
--source``): each bucket example is in the file with the content recorded, and the
remaining dev set is the file less the buckets, by the set's rule.

Examples are matched by their place in the file and their content, not by the file's
name: XTREME's files travel under other names, and ids carry the name they were read
under (``dev-de.tsv:12``). Also the pieces :mod:`fsxlt.sampling.check` shares with it: a
violation, and the content keys examples are compared by.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fsxlt.data import Example, GenerationExample, QAExample, TextExample
from fsxlt.data.readings import reading_of
from fsxlt.fileio import sha256_file
from fsxlt.sampling.locate import bucket_key, dev_keys, locate, locate_by_line
from fsxlt.sampling.store import Bucket

_WHITESPACE = re.compile(r"\s+")


@dataclass
class Violation:
    """One broken guarantee; ``bucket`` is the bucket index, or None for the whole set."""

    bucket: int | None
    kind: str
    detail: str


def loose_key(example: Example) -> tuple:
    """Content with all whitespace removed: the published classification buckets hold
    re-tokenized text (``erklärt , die``), which should still match the raw source."""
    return tuple(_WHITESPACE.sub("", part) if isinstance(part, str) else part
                 for part in example.content_key())


def contexts(examples: list[Example] | None) -> set[str]:
    return {ex.context for ex in examples or [] if isinstance(ex, QAExample)}


def pair_sources(examples: list[Example] | None) -> set[str]:
    return {ex.source for ex in examples or [] if isinstance(ex, GenerationExample)}


def _expected_remaining(pool: list[Example], buckets: list[Bucket],
                        by_text: bool = False) -> list[str]:
    """The ids the remaining dev set must hold: the source minus the buckets (generation:
    minus every pair on a bucket's source; ``by_text``: minus every line holding a bucket
    example's texts)."""
    used = {ex.id for bucket in buckets for ex in bucket.examples}
    sources = pair_sources([ex for bucket in buckets for ex in bucket.examples])
    texts = {(ex.text_a, ex.text_b) for bucket in buckets for ex in bucket.examples
             if isinstance(ex, TextExample)} if by_text else set()
    return [ex.id for ex in pool if ex.id not in used and not (
        isinstance(ex, GenerationExample) and ex.source in sources) and not (
        isinstance(ex, TextExample) and (ex.text_a, ex.text_b) in texts)]


def _qa_remaining_ok(pool: list[Example], buckets: list[Bucket],
                     remaining: list[Example]) -> bool:
    """Whether a QA set's remaining dev set is whole paragraphs of the source that no
    bucket touches, in file order."""
    kept = contexts(remaining)
    if kept & contexts([ex for bucket in buckets for ex in bucket.examples]):
        return False
    return [ex.id for ex in remaining] == [ex.id for ex in pool
                                           if isinstance(ex, QAExample) and ex.context in kept]


def as_named(pool: list[Example], reference: str | None, source: Path) -> list[Example]:
    """``pool`` (read from ``source``) with its ids under the file name ``reference`` (an
    id of the set's, read from the file it was drawn from) carries, where that file was
    ``source`` under another name: an example is its place in the file (``name:line``),
    whatever the file is called now."""
    from dataclasses import replace

    own = f"{source.name}:"
    if reference is None or reference.startswith(own) or ":" not in reference:
        return pool
    if not all(ex.id.startswith(own) for ex in pool):
        return pool
    named = reference.rsplit(":", 1)[0] + ":"
    return [replace(ex, id=named + ex.id[len(own):]) for ex in pool]


def check_source(manifest: dict[str, Any], buckets: list[Bucket],
                  remaining: list[Example] | None, source: Path,
                  pool: list[Example]) -> list[Violation]:
    found = []
    recorded = (manifest.get("source") or {}).get("sha256")
    published = manifest.get("sampler") == "published"
    # the set's own ids name the file it read: its remaining dev set's for a published set
    # (the buckets carry the release's ids), its buckets' otherwise
    reference = next((ex.id for ex in remaining or []), None) if published else next(
        (ex.id for bucket in buckets for ex in bucket.examples), None)
    pool = as_named(pool, reference, source)
    if not published and recorded and recorded != sha256_file(source):
        found.append(Violation(None, "source-hash",
                               f"{source.name} differs from the data the buckets were drawn "
                               "from (sha256 mismatch)"))
    by_id = {ex.id: ex for ex in pool}
    contents = {loose_key(ex) for ex in pool}
    texts = {key for ex in pool if isinstance(ex, TextExample) for key in dev_keys(ex)} \
        if published else set()
    for bucket in buckets:
        for ex in bucket.examples:
            if published:
                present = (bucket_key(ex) in texts if isinstance(ex, TextExample)
                           else loose_key(ex) in contents)
                if not present:
                    found.append(Violation(bucket.index, "not-in-source",
                                           f"example {ex.id} does not occur in {source.name}"))
            elif ex.id not in by_id:
                found.append(Violation(bucket.index, "not-in-source",
                                       f"id {ex.id} is not in {source.name}"))
            elif by_id[ex.id].content_key() != ex.content_key():
                found.append(Violation(bucket.index, "content",
                                       f"example {ex.id} differs from {source.name}"))
    if remaining is not None and published:
        drawn = [(bucket.index, [ex for ex in bucket.examples if isinstance(ex, TextExample)])
                 for bucket in buckets]
        expected = [ex.id for ex in (
            locate_by_line(manifest["task"], manifest["language"], drawn, pool)
            if reading_of(manifest).get("remaining") == "by-line"
            else locate(drawn, pool)).remaining]
        if [ex.id for ex in remaining] != expected:
            found.append(Violation(None, "dev-remaining",
                                   f"the remaining dev set is not {source.name} less the lines "
                                   "holding the buckets' texts"))
    if remaining is not None and not published:
        qa = any(isinstance(ex, QAExample) for ex in pool)
        if (not _qa_remaining_ok(pool, buckets, remaining) if qa
                else [ex.id for ex in remaining] != _expected_remaining(
                    pool, buckets, reading_of(manifest).get("remaining") == "by-text")):
            found.append(Violation(None, "dev-remaining",
                                   "the remaining dev set is not the source minus the buckets"))
    return found


__all__ = ["Violation", "as_named", "check_source", "contexts", "loose_key",
           "pair_sources"]
