"""A bucket set's files against what a directory holds: the same set (byte for byte, or
the same content written by another release of fsxlt), and, where not, what differs in
words for the store's write-once refusal (:func:`fsxlt.sampling.store.write_sets`)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

MANIFEST = "manifest.json"
# the manifest fields a refusal names when they differ
PROVENANCE = ("sampler", "seed", "split", "source", "reading", "strategy", "n_buckets",
              "labels",
              "missing_labels", "missing_buckets", "test", "dev_remaining", "notes")


def same_files(directory: Path, files: dict[str, str]) -> bool:
    """True if every one of ``files`` is in ``directory`` with these bytes, or with the same
    content (:func:`_content`): the same set written by another release of fsxlt."""
    names = [MANIFEST, *(name for name in files if name != MANIFEST)]  # the manifest fails first
    for name in names:
        path = directory / name
        try:
            if not path.is_file():
                return False
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            return False
        if text != files[name] and _content(name, text) != _content(name, files[name]):
            return False
    return True


def _content(name: str, text: str) -> Any:
    """What a set's file says, less who wrote it: the manifest without ``fsxlt_version``,
    ``format`` and its buckets' hashes (a 0.4 set's are its files' bytes), a bucket file
    without the ``fsxlt_version`` a 0.4 one carries; other files are their text."""
    if not name.endswith(".json"):
        return text
    try:
        raw = json.loads(text)
    except ValueError:
        return text
    if name == MANIFEST and isinstance(raw, dict):
        raw = {key: value for key, value in raw.items() if key not in ("fsxlt_version", "format")}
        if isinstance(raw.get("buckets"), list):
            raw["buckets"] = [{k: v for k, v in entry.items() if k != "sha256"}
                              if isinstance(entry, dict) else entry for entry in raw["buckets"]]
    elif isinstance(raw, dict) and isinstance(raw.get("bucket"), dict):
        raw = {**raw, "bucket": {k: v for k, v in raw["bucket"].items() if k != "fsxlt_version"}}
    return raw


def own_files(manifest: dict[str, Any]) -> set[str]:
    """The files a set's manifest names: itself, its buckets, their dev sets, test, dev."""
    names = {MANIFEST}
    for entry in manifest.get("buckets") or []:
        names.add(str(entry.get("file")))
        if isinstance(entry.get("dev"), dict):
            names.add(str(entry["dev"].get("file")))
    for key in ("test", "dev_remaining"):
        if isinstance(manifest.get(key), dict):
            names.add(str(manifest[key].get("file")))
    return names


def describe_difference(directory: Path, old: dict[str, Any], files: dict[str, str]) -> str:
    """How the set in ``directory`` differs from ``files``: the provenance fields that
    differ (``seed: 0 -> 7``), else the files whose bytes differ."""
    new = json.loads(files[MANIFEST])
    fields = [f"{name}: {_short(before)} -> {_short(after)}"
              for name, before, after in _changes(old, new, PROVENANCE)]
    if fields:
        return "; ".join(fields[:3]) + (f"; {len(fields) - 3} more fields" if len(fields) > 3
                                        else "")
    changed = sorted(name for name in own_files(old) | set(files) if name != MANIFEST
                     and not same_file(directory / name, files.get(name)))
    shown = ", ".join(changed[:4]) + (f" and {len(changed) - 4} more" if len(changed) > 4 else "")
    return f"files differ: {shown or MANIFEST}"


def _changes(old: Any, new: Any, keys: Sequence[str], prefix: str = "",
             ) -> list[tuple[str, Any, Any]]:
    """(dotted name, old, new) of every differing value of ``keys``, nested dicts flattened."""
    found = []
    for key in keys:
        before = old.get(key) if isinstance(old, dict) else None
        after = new.get(key) if isinstance(new, dict) else None
        if before == after:
            continue
        if isinstance(before, dict) and isinstance(after, dict):
            found += _changes(before, after, sorted(set(before) | set(after)), f"{prefix}{key}.")
        else:
            found.append((f"{prefix}{key}", before, after))
    return found


def _short(value: Any, width: int = 40) -> str:
    """A value as a refusal shows it: hashes cut to 12 digits, long values cut."""
    text = json.dumps(value, ensure_ascii=False, sort_keys=True)
    if isinstance(value, str):
        text = value[:12] + "..." if len(value) == 64 and value.isalnum() else value
    return text if len(text) <= width else text[:width - 3] + "..."


def same_file(path: Path, text: str | None) -> bool:
    try:
        return text is not None and path.is_file() and path.read_bytes() == text.encode("utf-8")
    except OSError:
        return False


def listing(directory: Path, names: set[str], shown: int = 3) -> str:
    """A few entries of ``directory`` for a refusal: folders end in ``/``."""
    labels = [name + ("/" if (directory / name).is_dir() else "") for name in sorted(names)]
    more = f" and {len(labels) - shown} more" if len(labels) > shown else ""
    return ", ".join(labels[:shown]) + more


__all__ = ["MANIFEST", "PROVENANCE", "describe_difference", "listing", "own_files",
           "same_file", "same_files"]
