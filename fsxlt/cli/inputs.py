"""Reading a command's data files: one split from a file or a data directory, limited."""

from __future__ import annotations

from pathlib import Path

from fsxlt.data import Example, load_split
from fsxlt.errors import FsxltError
from fsxlt.tasks import TaskSpec


def read_split(
    task: TaskSpec, lang: str, split: str, path: Path | None, data_dir: Path | None
) -> tuple[list[Example], str]:
    """Examples and their source from an explicit file or ``data_dir`` + the task pattern."""
    if path is not None:
        from fsxlt.sampling.set_files import read_data_file

        return read_data_file(path, task, lang, split), str(path)
    if data_dir is None:
        raise FsxltError(f"no {split} data for {lang}: pass a file or --data-dir")
    loaded = load_split(task, lang, split, data_dir=data_dir)
    return loaded.examples, loaded.source


def limit_examples(examples: list[Example], limit: int | None) -> list[Example]:
    """The first ``limit`` examples (all of them without a limit)."""
    if limit is not None and limit < 1:
        raise FsxltError("limits must be positive")
    return examples if limit is None else examples[:limit]
