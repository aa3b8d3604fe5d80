"""The languages fsxlt knows: ISO code, name, script and WALS word-order features
(docs/protocol.md#analyses), bundled in ``fsxlt/resources/wals.tsv``."""

from __future__ import annotations

import csv
from dataclasses import dataclass
from functools import cache
from importlib import resources

from fsxlt.errors import FsxltError


@dataclass(frozen=True)
class LanguageInfo:
    """A language's name, script and WALS word-order features (docs/protocol.md#analyses)."""

    code: str
    name: str
    script: str
    wals: dict[str, str]


@cache
def languages() -> dict[str, LanguageInfo]:
    """Language facts bundled from WALS (``fsxlt/resources/wals.tsv``), by ISO code."""
    text = resources.files("fsxlt").joinpath("resources", "wals.tsv").read_text(encoding="utf-8")
    rows = list(csv.DictReader(text.splitlines(), delimiter="\t"))
    info = {}
    for row in rows:
        features = {k: v for k, v in row.items() if k not in ("language", "name", "script")}
        info[row["language"]] = LanguageInfo(
            code=row["language"], name=row["name"], script=row["script"],
            wals={k: (v or "").strip() for k, v in features.items()},
        )
    return info


def language_code(name_or_code: str) -> str:
    """Map a language name (``German``, ``german``) or ISO code to its ISO 639-1 code."""
    key = name_or_code.strip().lower()
    table = languages()
    if key in table:
        return key
    for code, info in table.items():
        if info.name.lower() == key:
            return code
    raise FsxltError(f"unknown language {name_or_code!r}; expected an ISO 639-1 code or a name "
                     f"such as {', '.join(sorted(i.name.lower() for i in table.values())[:6])}")
