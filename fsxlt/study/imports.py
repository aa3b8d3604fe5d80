"""Records imported from another study's results dataset, and how a runs directory marks them.

``fsxlt runs import-hf`` (:mod:`fsxlt.report.hf_results`) writes another study's records
into RUNS_DIR byte for byte, each under an arm folder ``<prefix>.<arm>`` (its own arm
behind the import's prefix, so it is never taken for a local arm), and lists them in
``RUNS_DIR/fsxlt_imports.json``:

    {"format": "fsxlt-imports/1",
     "imports": {"<prefix>": {"dataset": "<folder or hub id>", "revision": "<commit>|null",
                              "records": {"<path under RUNS_DIR>": "<sha256 of its bytes>"}}}}

Readers (:func:`fsxlt.report.records.load_records`) take a listed record's arm as
``<prefix>.<arm>`` and its provenance from here; a listed record whose bytes changed
since the import is no imported record.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fsxlt.errors import DataFormatError
from fsxlt.fileio import atomic_write_text, dumps_json, read_json

IMPORTS_FILE = "fsxlt_imports.json"
IMPORTS_FORMAT = "fsxlt-imports/1"
SEPARATOR = "."


@dataclass(frozen=True)
class Imported:
    """One imported record: the prefix of its import, where it came from, its bytes' hash."""

    prefix: str
    dataset: str
    revision: str | None
    sha256: str

    def arm(self, own: str) -> str:
        return imported_arm(self.prefix, own)


def imported_arm(prefix: str, arm: str) -> str:
    return f"{prefix}{SEPARATOR}{arm}"


def read_imports(root: str | Path) -> dict[str, Imported]:
    """{path under RUNS_DIR: Imported} from ``root``'s imports file (empty: none); a
    malformed file is one line naming it."""
    path = Path(root) / IMPORTS_FILE
    if not path.is_file():
        return {}
    raw = read_json(path)
    imports = raw.get("imports") if isinstance(raw, dict) else None
    if not isinstance(raw, dict) or raw.get("format") != IMPORTS_FORMAT \
            or not isinstance(imports, dict):
        raise DataFormatError(path, f"not an fsxlt imports file ({IMPORTS_FORMAT})")
    found = {}
    for prefix, entry in imports.items():
        records = entry.get("records") if isinstance(entry, dict) else None
        if not isinstance(records, dict) or not all(
                isinstance(k, str) and isinstance(v, str) for k, v in records.items()):
            raise DataFormatError(path, f"import {prefix!r} lists no records")
        revision = entry.get("revision")
        for rel, sha in records.items():
            found[rel] = Imported(prefix, str(entry.get("dataset")),
                                  revision if isinstance(revision, str) else None, sha)
    return found


def imports_after(root: str | Path, prefix: str, dataset: str, revision: str | None,
                  records: dict[str, str]) -> str:
    """The imports file's text once ``records`` ({path: sha256}) are listed as imported under
    ``prefix`` (the prefix's earlier records stay listed); a malformed file is refused."""
    path = Path(root) / IMPORTS_FILE
    read_imports(root)  # a malformed file is refused before it is added to
    raw: dict[str, Any] = read_json(path) if path.is_file() else {
        "format": IMPORTS_FORMAT, "imports": {}}
    entry = raw["imports"].setdefault(prefix, {"records": {}})
    entry.update(dataset=dataset, revision=revision)
    entry["records"] = dict(sorted({**entry["records"], **records}.items()))
    return dumps_json(raw)


def add_imports(root: str | Path, prefix: str, dataset: str, revision: str | None,
                records: dict[str, str]) -> None:
    """List ``records`` ({path: sha256}) as imported under ``prefix``, atomically
    (:func:`imports_after`)."""
    atomic_write_text(Path(root) / IMPORTS_FILE,
                      imports_after(root, prefix, dataset, revision, records))
