"""User-facing errors.

Anything the user can fix (a missing file, a malformed line, an unknown task,
a label with too few examples) raises :class:`FsxltError`. The CLI prints its
message as a single line and exits non-zero, without a traceback; library
users can catch it like any other exception.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path


class FsxltError(Exception):
    """An error caused by the user's input, with a one-line explanation."""


class DataFormatError(FsxltError):
    """A data file is missing, empty or malformed; the message names file and line."""

    def __init__(self, path: str | Path, message: str, line: int | None = None):
        where = f"{path}:{line}" if line is not None else str(path)
        super().__init__(f"{where}: {message}")
        self.path = str(path)
        self.line = line


class MissingInput(FsxltError):
    """An input a run needs is not there: a bucket set (``kind`` "set"), a data file
    ("test", "dev", "train"); ``task``, ``language``, ``k`` and ``path`` say which, so a
    plan can group many (``fsxlt sweep --dry-run``)."""

    def __init__(self, message: str, kind: str, task: str, language: str, path: str | Path,
                 k: int | None = None):
        super().__init__(message)
        self.kind = kind
        self.task = task
        self.language = language
        self.path = str(path)
        self.k = k


class InsufficientDataError(FsxltError):
    """A label has too few examples to fill the requested buckets."""

    def __init__(self, label: str, needed: int, available: int, context: str = "",
                 unit: str = "examples"):
        prefix = f"{context}: " if context else ""
        super().__init__(
            f"{prefix}label {label!r} needs {needed} {unit} but only {available} are available"
        )
        self.label = label
        self.needed = needed
        self.available = available


def did_you_mean(value: str, valid: Iterable[str]) -> str:
    """`` (did you mean 'lrs'?)`` for the valid name nearest to a mistyped ``value``
    (difflib's ratio of at least 0.6), else ``""``: for one-line refusals."""
    import difflib

    found = difflib.get_close_matches(str(value), [str(v) for v in valid], n=1, cutoff=0.6)
    return f" (did you mean {found[0]!r}?)" if found else ""
