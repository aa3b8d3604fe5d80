"""A bucket set's manifest as fsxlt reads it: one boundary for a store's
``manifest.json`` (:func:`fsxlt.sampling.store.read_manifest`) and a shared dataset's
``fsxlt_manifest.json`` (:mod:`fsxlt.sampling.hf_dataset`). Every field has the type
fsxlt writes, and every name the manifest gives a file or folder is a plain name, so
that nothing read from a manifest decides where anything is read or written outside
its set; anything else is a one-line error naming the file and the field."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from fsxlt.data.readings import reading_problem
from fsxlt.errors import DataFormatError
from fsxlt.fileio import PLAIN_NAME, plain_name
from fsxlt.fileio import brief as _brief

STORE_FORMAT = "fsxlt-buckets/2"
LEGACY_FORMAT = "fsxlt-buckets/1"  # written by fsxlt 0.3 and 0.4: read, never written


def parse_manifest(manifest: Any, path: str | Path) -> dict[str, Any]:
    """``manifest`` (parsed JSON read from ``path``) if it is a bucket manifest whose fields
    have the types fsxlt writes and whose every name is a plain file or folder name, else
    a one-line :class:`DataFormatError` naming ``path`` and the field. The one boundary for
    a store's ``manifest.json`` and a dataset's ``fsxlt_manifest.json`` alike."""
    if not isinstance(manifest, dict) or manifest.get("format") not in (STORE_FORMAT,
                                                                        LEGACY_FORMAT):
        raise DataFormatError(path, f"not an fsxlt bucket manifest (format {STORE_FORMAT})")
    problem = _manifest_problem(manifest)
    if problem is not None:
        raise DataFormatError(path, f"not an fsxlt bucket manifest: {problem}")
    return manifest


def _manifest_problem(manifest: dict[str, Any]) -> str | None:
    """The first field of a manifest without the type fsxlt writes, in words, or None."""
    def text(value: Any) -> bool:
        return isinstance(value, str) and bool(value)

    def whole(value: Any) -> bool:
        return isinstance(value, int) and not isinstance(value, bool)

    def entry_problem(where: str, block: Any, required: bool) -> str | None:
        if block is None and not required:
            return None
        if not (isinstance(block, dict) and plain_name(block.get("file"))):
            return f"{where} is {_brief(block)}, not a file entry with a plain file name"
        if "sha256" in block and not text(block["sha256"]):
            return f"{where}.sha256 is {block['sha256']!r}, not a hash"
        return None

    plain = "a plain name (letters, digits, _ . + -)"
    for key, ok, what in (("task", plain_name, plain), ("language", plain_name, plain),
                          ("k", lambda v: whole(v) and v >= 0, "a whole number"),
                          ("labels", lambda v: isinstance(v, list)
                           and all(isinstance(x, str) for x in v), "a list of labels"),
                          ("buckets", lambda v: isinstance(v, list),
                           "a list of buckets")):
        if not ok(manifest.get(key)):
            return f"{key} is {_brief(manifest.get(key))}, not {what}"
    if "reading" in manifest:
        problem = reading_problem(manifest["reading"])
        if problem is not None:
            return f"reading: {problem}"
    strategy = manifest.get("strategy")
    if strategy is not None and not (isinstance(strategy, dict)
                                     and plain_name(strategy.get("name"))):
        return f"strategy is {_brief(strategy)}, not a strategy with {plain}"
    for position, entry in enumerate(manifest["buckets"]):
        if not isinstance(entry, dict):
            return f"buckets[{position}] is {_brief(entry)}, not a bucket entry"
        for key, ok, what in (("file", plain_name, "a plain file name"),
                              ("index", whole, "a whole number"), ("sha256", text, "a hash")):
            if not ok(entry.get(key)):
                return f"buckets[{position}].{key} is {_brief(entry.get(key))}, not {what}"
        if "name" in entry and not plain_name(entry["name"]):
            return f"buckets[{position}].name is {_brief(entry['name'])}, not {plain}"
        problem = entry_problem(f"buckets[{position}].dev", entry.get("dev"), False)
        if problem is not None:
            return problem
    for key in ("dev_remaining", "test"):
        problem = entry_problem(key, manifest.get(key), False)
        if problem is not None:
            return problem
    return _dev_provenance_problem(manifest.get("dev_remaining"))


def _dev_provenance_problem(entry: Any) -> str | None:
    """The first field of a published set's remaining dev set record (its dev file, what was
    located there) without the type fsxlt writes, or None."""
    if not isinstance(entry, dict):
        return None
    for key in ("located", "removed"):
        value = entry.get(key)
        if key in entry and not (isinstance(value, int) and not isinstance(value, bool)
                                 and value >= 0):
            return f"dev_remaining.{key} is {_brief(value)}, not a whole number"
    unlocated = entry.get("unlocated")
    if "unlocated" in entry and not (isinstance(unlocated, list)
                                     and all(isinstance(u, dict) for u in unlocated)):
        return f"dev_remaining.unlocated is {_brief(unlocated)}, not a list of examples"
    source = entry.get("source")
    if "source" in entry and not (isinstance(source, dict)
                                  and isinstance(source.get("sha256"), str)):
        return f"dev_remaining.source is {_brief(source)}, not a file with its sha256"
    return None


__all__ = ["LEGACY_FORMAT", "PLAIN_NAME", "STORE_FORMAT", "parse_manifest", "plain_name"]
