"""A bucket as training reads it: the room both the bucket store and training stand on.

:class:`Bucket` (one bucket's examples, coordinates, metadata and content hash)
and :func:`bucket_name` (its file stem) are what :mod:`fsxlt.sampling.store`
writes and reads and what :mod:`fsxlt.training` adapts on; neither package
imports the other for them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from fsxlt.data.examples import Example


def bucket_name(index: int) -> str:
    """A bucket's file stem from its index: ``00``, ``01``, ..."""
    return f"{index:02d}"


@dataclass(frozen=True)
class Bucket:
    """One bucket as training reads it."""

    task: str
    language: str
    k: int
    index: int
    examples: list[Example]
    meta: dict[str, Any]
    sha256: str
    set_size: int | None = None  # the buckets of its set (its manifest's n_buckets), if known

    @property
    def name(self) -> str:
        """The bucket's name: a fixed split's (``all``), else its two-digit index."""
        return str(self.meta.get("name") or bucket_name(self.index))

    @property
    def union(self) -> bool:
        """True for a set's union of the other buckets (FewCLUE's ``all``)."""
        return bool(self.meta.get("union"))

    @property
    def id(self) -> str:
        return f"{self.task}/{self.language}/k{self.k}/{self.name}"
