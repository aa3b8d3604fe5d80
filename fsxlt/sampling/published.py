"""Import the standardized buckets published with the original FS-XLT study.

The published layout is ``<task>/<K>-shots/<language>/<i>-th/`` holding
``sampled.json`` (classification: an object mapping each label to its
examples, with ``uid``, ``text_a``, ``text_b``, ``label``) or ``train.tsv``
(tagging: ``token<TAB>tag``, blank line between sentences). Some tasks name
language folders (``german``) instead of codes (``de``). Import converts each
(task, K, language) into an fsxlt bucket set with ``sampler: published``, so
that ``fsxlt buckets check`` and training treat them like our own.

Buckets keep their published numbers (``7-th`` becomes ``07.json``). A
published bucket that cannot be read (the study's panx set has empty files
for jv and my, where its sampler ran out of sentences) does not stop the
import: the others are imported, and the unreadable one is listed with its
reason in the summary and in the set's manifest (``missing_buckets``).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from fsxlt.data import TextExample, example_from_dict, read_conll
from fsxlt.errors import DataFormatError, FsxltError
from fsxlt.fileio import read_json, sha256_text
from fsxlt.sampling.store import BucketSet, write_sets
from fsxlt.tasks import builtin_tasks, get_task
from fsxlt.tasks.languages import language_code

_SHOTS = re.compile(r"^(\d+)-shots$")
_BUCKET = re.compile(r"^(\d+)-th$")


@dataclass
class ImportSummary:
    """What an import found.

    ``sets``: the bucket sets written; ``missing``: published buckets that
    could not be read, as ``path: reason`` (their sets are imported without
    them); ``skipped``: folders and files that are not buckets (unknown
    tasks, stray files), ignored.
    """

    sets: list[BucketSet] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)


def _read_sampled_json(path: Path, task_name: str) -> list[TextExample]:
    raw = read_json(path)
    if not isinstance(raw, dict):
        raise DataFormatError(path, "expected an object mapping labels to example lists")
    examples = []
    for label_key, rows in raw.items():
        if not isinstance(rows, list):
            raise DataFormatError(path, f"label {label_key!r}: expected a list of examples")
        for row in rows:
            try:
                label = str(row.get("label", label_key))
                if label != str(label_key):
                    raise DataFormatError(
                        path, f"example {row.get('uid')} has label {label} under key {label_key}")
                examples.append(example_from_dict(
                    {"id": row["uid"], "text_a": row["text_a"], "text_b": row.get("text_b"),
                     "label": str(label_key)}))
            except (KeyError, TypeError, AttributeError) as err:
                raise DataFormatError(path, f"malformed example ({err})") from None
    task = get_task(task_name)
    for ex in examples:
        if ex.label not in task.labels:
            raise DataFormatError(path, f"unknown label {ex.label!r} for task {task.name}")
    return examples


def _bucket_dirs(lang_dir: Path) -> list[tuple[int, Path]]:
    found = []
    for child in lang_dir.iterdir():
        match = _BUCKET.match(child.name)
        if match and child.is_dir():
            found.append((int(match.group(1)), child))
    return sorted(found)


def _read_bucket(data_file: Path, index: int, task_name: str) -> tuple[list, str]:
    """One published bucket's examples and file hash; DataFormatError if unreadable."""
    task = get_task(task_name)
    if not data_file.is_file():
        raise DataFormatError(data_file, "file not found")
    if task.is_tagging:
        examples = read_conll(data_file, task)
        examples = [type(ex)(f"{index}-th/{ex.id}", ex.tokens, ex.tags) for ex in examples]
    else:
        examples = _read_sampled_json(data_file, task_name)
    if not examples:
        raise DataFormatError(data_file, "holds no examples")
    return examples, sha256_text(data_file.read_text(encoding="utf-8"))


def _reason(err: DataFormatError) -> str:
    """The message of a DataFormatError without its file (the line kept)."""
    where = f"{err.path}:{err.line}" if err.line is not None else err.path
    reason = str(err).removeprefix(f"{where}:").strip()
    return f"line {err.line}: {reason}" if err.line is not None else reason


def _import_language(task_name: str, k: int, lang_dir: Path, root: Path,
                     summary: ImportSummary) -> BucketSet | None:
    task = get_task(task_name)
    language = language_code(lang_dir.name)
    buckets, hashes, indices, missing = [], [], [], []
    for index, bucket_path in _bucket_dirs(lang_dir):
        data_file = bucket_path / ("train.tsv" if task.is_tagging else "sampled.json")
        relative = data_file.relative_to(root).as_posix()
        try:
            examples, digest = _read_bucket(data_file, index, task_name)
        except DataFormatError as err:
            reason = _reason(err)
            missing.append({"index": index, "file": relative, "reason": reason})
            summary.missing.append(f"{relative}: {reason}")
            continue
        buckets.append(examples)
        hashes.append(digest)
        indices.append(index)
    if not buckets:
        return None
    return BucketSet(
        task=task.name, language=language, k=k, sampler="published", seed=None,
        split=task.sampling.split,
        source_file=str(lang_dir.relative_to(root)),
        source_sha256=sha256_text("\n".join(hashes)),
        labels=list(task.sampling_labels), buckets=buckets,
        notes={"imported_from": str(lang_dir.relative_to(root))},
        indices=indices, missing_buckets=missing)


def import_published(src: str | Path, out: str | Path, *, tasks: Iterable[str] | None = None,
                     replace: bool = False,
                     progress: Callable[[Iterable], Iterable] = lambda it: it) -> ImportSummary:
    """Convert every published (task, K, language) under ``src`` into bucket sets under ``out``.

    Unknown folders and stray files (``.DS_Store``, readmes) are skipped and
    listed in the summary; unreadable buckets are left out of their sets and
    listed (see the module docstring). Everything is read before anything is
    written, by the store's write-once rule (:func:`write_sets`: a set already
    there unchanged is left alone, another one is refused unless ``replace``;
    each set's ``written`` says what happened).
    """
    src = Path(src)
    if not src.is_dir():
        raise FsxltError(f"{src}: no such directory")
    wanted = set(tasks) if tasks else set(builtin_tasks())
    summary = ImportSummary()
    jobs = []
    for task_dir in sorted(p for p in src.iterdir() if p.is_dir()):
        if task_dir.name not in wanted:
            why = "not selected" if task_dir.name in builtin_tasks() else "not a known task"
            summary.skipped.append(f"{task_dir.name}/ ({why})")
            continue
        for shots_dir in sorted(p for p in task_dir.iterdir() if p.is_dir()):
            match = _SHOTS.match(shots_dir.name)
            if not match:
                summary.skipped.append(f"{shots_dir.relative_to(src)}/ (not '<K>-shots')")
                continue
            for lang_dir in sorted(p for p in shots_dir.iterdir() if p.is_dir()):
                jobs.append((task_dir.name, int(match.group(1)), lang_dir))
    for task_name, k, lang_dir in progress(jobs):
        bucket_set = _import_language(task_name, k, lang_dir, src, summary)
        if bucket_set is not None:
            summary.sets.append(bucket_set)
    if not summary.sets:
        raise FsxltError(f"{src}: no published buckets found "
                         "(expected <task>/<K>-shots/<language>/<i>-th/)")
    write_sets(out, summary.sets, replace=replace)
    return summary
