"""A local data file's lines and labels, with errors that name the file and line."""

from __future__ import annotations

from pathlib import Path

from fsxlt.errors import DataFormatError
from fsxlt.fileio import text_lines
from fsxlt.tasks import TaskSpec


def open_lines(path: Path) -> list[str]:
    """The lines of a UTF-8 text file (a BOM dropped); a missing, undecodable or empty file
    is a :class:`~fsxlt.errors.DataFormatError` naming it (and the line)."""
    if not path.is_file():
        raise DataFormatError(path, "file not found")
    try:
        lines = text_lines(path.read_text(encoding="utf-8-sig"))
    except UnicodeDecodeError as err:
        line = path.read_bytes()[: err.start].count(b"\n") + 1
        raise DataFormatError(path, "not valid UTF-8 text", line) from None
    if not any(line.strip() for line in lines):
        raise DataFormatError(path, "file is empty")
    return lines


def csv_unquoted(text: str | None) -> str | None:
    """The value of a field written with CSV quoting (wrapped in double quotes, each
    inner double quote doubled, as Python's ``csv`` writer quotes a field holding a
    quote), or None when ``text`` is not such a field."""
    if not text or len(text) < 2 or text[0] != '"' or text[-1] != '"':
        return None
    inner = text[1:-1]
    if '"' in inner.replace('""', ""):
        return None
    return inner.replace('""', '"')


def check_label(task: TaskSpec, label: str, path: Path, line_no: int) -> str:
    """The label as the task names it (``label_aliases`` mapped), or a file:line error."""
    label = task.label_aliases.get(label, label)
    if label not in task.labels:
        raise DataFormatError(
            path, f"unknown label {label!r} for task {task.name} "
            f"(expected one of {', '.join(task.labels)})", line_no)
    return label
