"""The input files of runs: bucket sets (each file checked against its manifest's hash) and
the task's dev and test files.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fsxlt.errors import DataFormatError, FsxltError
from fsxlt.execution.config import TaskPlan
from fsxlt.execution.spec import Hashes
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
        raise FsxltError(f"{path}: {split} file for {spec.name}/{lang} not found")
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
    from fsxlt.data import has_labels

    stat = path.stat()
    key = (str(path.resolve()), stat.st_size, stat.st_mtime_ns, spec.name, spec.config_path,
           lang)
    if key not in _LABELLED:
        _LABELLED[key] = has_labels(path, spec, language=lang)
    return _LABELLED[key]


@dataclass(frozen=True)
class SetFiles:
    """What a sweep reads of one bucket set: the buckets it runs and the set's own data."""

    directory: Path
    buckets: list[tuple[int, str, Path, Path | None]]  # index, name, file, its own dev set
    test: Path | None  # the set's test set (fixed splits), else the task's test file
    strategy: str = ""  # the shot-selection strategy that built the set (fsxlt select)
    remaining: Path | None = None  # dev examples in no bucket (sets drawn from dev)
    coordinates: tuple[str, str, int] = ("", "", 0)  # task, language, K of the set


def bucket_files(plan: TaskPlan, lang: str, k: int, hashes: Hashes) -> SetFiles:
    """The set's bucket files the sweep runs, each checked against its manifest's hash."""
    from fsxlt.sampling.store import MANIFEST, bucket_dir

    directory = bucket_dir(plan.buckets, plan.task, lang, k)
    if not (directory / MANIFEST).is_file():
        raise FsxltError(f"{directory}: no bucket set for {plan.task}/{lang}/k{k} (draw it "
                         "with fsxlt sample, or fsxlt buckets import-published/import-fewclue)")
    return set_files(directory, hashes, plan.n_buckets)


def set_files(directory: Path, hashes: Hashes, n_buckets: int | None = None,
              only: str | None = None) -> SetFiles:
    """A bucket set's files: its buckets (the first ``n_buckets``, or the file named
    ``only``), their own dev sets, the set's test set and remaining dev set, each checked
    against the hash its manifest recorded."""
    from fsxlt.sampling.store import DEV_REMAINING, check_bucket_hash, read_manifest

    manifest = read_manifest(directory)
    entries = sorted(manifest["buckets"], key=lambda e: int(e["index"]))
    if only is not None:
        entries = [e for e in entries if e.get("file") == only]
        if not entries:
            raise DataFormatError(directory / only, "bucket file not listed in its set's "
                                  "manifest")
    if n_buckets is not None:
        # a published bucket that could not be imported counts as drawn: its
        # runs are missing (the report shows the gap), the others still run
        gaps = [int(entry["index"]) for entry in manifest.get("missing_buckets") or []]
        numbers = sorted({int(e["index"]) for e in entries} | set(gaps))
        if len(numbers) < n_buckets:
            raise FsxltError(f"{directory}: holds {len(entries)} buckets, the sweep asks for "
                             f"{n_buckets}")
        wanted = set(numbers[:n_buckets])
        entries = [e for e in entries if int(e["index"]) in wanted]
    buckets = []
    for entry in entries:
        path = directory / entry["file"]
        if not path.is_file():
            raise DataFormatError(path, "bucket file listed in the manifest is missing")
        check_bucket_hash(path, hashes.text(path), entry)
        dev = _own_file(directory, entry.get("dev"), hashes, "its dev set")
        buckets.append((int(entry["index"]), str(entry.get("name") or ""), path, dev))
    test = _own_file(directory, manifest.get("test"), hashes, "the set's test set")
    strategy = (manifest.get("strategy") or {}).get("name") or ""
    remaining = _own_file(directory, manifest.get("dev_remaining"), hashes,
                          "the set's remaining dev set")
    if remaining is None and (directory / DEV_REMAINING).is_file():  # a manifest without it
        remaining = directory / DEV_REMAINING
    return SetFiles(directory, buckets, test, str(strategy), remaining,
                    (str(manifest.get("task")), str(manifest.get("language")),
                     int(manifest.get("k") or 0)))


def _own_file(directory: Path, entry: dict[str, Any] | None, hashes: Hashes,
              what: str) -> Path | None:
    """A data file a bucket set carries (a bucket's dev set, the test set), hash-checked."""
    if not entry:
        return None
    path = directory / entry["file"]
    if not path.is_file():
        raise DataFormatError(path, f"{what}, listed in the manifest, is missing")
    if hashes.text(path) != entry.get("sha256"):
        raise DataFormatError(path, "differs from the hash in its manifest (changed after it "
                              "was written); 'fsxlt buckets check' shows what changed")
    return path
