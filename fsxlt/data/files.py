"""A task's own dev and test files under a data directory, as runs take them.

Where the file lies is the task's data layout's (:meth:`fsxlt.tasks.DataSpec.locate`);
this room adds what a run needs of it: that it exists, and that a test file
carries labels (runs are scored on it). Both sweeps and ``fsxlt lm-adapt``
find their files here.
"""

from __future__ import annotations

from pathlib import Path

from fsxlt.data.readers import has_labels
from fsxlt.errors import FsxltError, MissingInput
from fsxlt.tasks import TaskSpec


def data_file(spec: TaskSpec, data_dir: str | None, split: str, lang: str) -> Path:
    """The task's ``{split}-{lang}`` file under ``data_dir`` (or another layout's, as
    :meth:`~fsxlt.tasks.DataSpec.locate` finds it).

    A test file must carry labels, since runs are scored on it: a file to
    predict (XGLUE's test files) is a one-line error saying how to score on
    a labelled test set of one's own and to predict this one instead.
    """
    if data_dir is None:
        raise FsxltError(f"{spec.name}: the sweep needs data_dir (target {split} files)")
    path = spec.data.locate(data_dir, split, lang)
    if not path.is_file():
        raise MissingInput(f"{path}: {split} file for {spec.name}/{lang} not found", split,
                           spec.name, lang, path)
    if split == "test" and not _has_labels(path, spec, lang):
        raise FsxltError(
            f"{path}: the test file of {spec.name}/{lang} carries no labels (a file to "
            "predict, as XGLUE's test files are), and runs are scored on a labelled test set: "
            "score on one of your own (fsxlt adapt --test FILE; a sweep: a data_dir holding a "
            "labelled file of this name, e.g. a held-out part of dev) and predict this one "
            "for the benchmark (--predict FILE; a sweep's predict:), or run fsxlt adapt "
            "--no-test --predict FILE for predictions without a test score")
    return path


_LABELLED: dict[tuple, bool] = {}  # (file, size, mtime, task, language) -> has labels


def _has_labels(path: Path, spec: TaskSpec, lang: str) -> bool:
    """:func:`fsxlt.data.has_labels`, each file read once per process while unchanged."""
    stat = path.stat()
    key = (str(path.resolve()), stat.st_size, stat.st_mtime_ns, spec.name, spec.config_path,
           lang)
    if key not in _LABELLED:
        _LABELLED[key] = has_labels(path, spec, language=lang)
    return _LABELLED[key]
