"""Import FewCLUE's fixed few-shot splits as bucket sets.

FewCLUE ships each task as a directory of JSON-lines files::

    <task>/train_0.json ... train_4.json    five fixed few-shot training splits
    <task>/dev_0.json ... dev_4.json        the dev set that goes with each split
    <task>/train_few_all.json               the splits' union (deduplicated)
    <task>/dev_few_all.json                 the dev sets' union
    <task>/test_public.json                 the labelled public test set

Each task becomes one bucket set (``<task>/zh/k<N>``, N = the examples of
``train_0``): bucket i is ``train_i`` with ``dev_i`` as **its own** dev set
(FewCLUE selects models on the split's dev set, not on a shared one), bucket
``all`` (index 5, marked ``union``) is ``train_few_all`` with
``dev_few_all``, and the set carries ``test_public`` as its test set, so a
sweep needs nothing but the store.

Every example of a training or dev file must carry a label of the task:
any other label (a typo, another case, none at all) is an error naming the
file and line, never left out or mapped to a label. Only the test file may
hold unlabelled examples, marked as FewCLUE marks them (no label key or a
null label, as in its ``test.json``) or as OCNLI does (``-``); they are left
out and counted. A field of the wrong JSON type and a CLUEWSC span that is
empty or overlaps the other are errors too (:mod:`fsxlt.data`'s readers).

A task whose directory is missing, is a file, or holds a malformed file is
reported and skipped; the other tasks are imported. When every task fails
nothing is written (an error). ``out`` must not be ``src`` or lie inside it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from fsxlt.data import NO_LABEL, Example, Skipped, read_examples
from fsxlt.data.readings import DEFAULT_READING, Reading
from fsxlt.errors import FsxltError
from fsxlt.fileio import sha256_file
from fsxlt.sampling.store import BucketSet, write_sets
from fsxlt.tasks import TaskSpec, get_task
from fsxlt.tasks.fewclue import FIXED_SAMPLER as SAMPLER
from fsxlt.tasks.fewclue import fewclue_tasks

SPLITS = ("0", "1", "2", "3", "4", "all")
LANGUAGE = "zh"
UNION = SPLITS.index("all")


@dataclass
class FewClueImport:
    """What an import did: sets written, tasks skipped (with why), examples left out."""

    sets: list[BucketSet] = field(default_factory=list)
    skipped_tasks: list[str] = field(default_factory=list)
    unlabelled: list[str] = field(default_factory=list)


def check_out_apart(src: str | Path, out: str | Path) -> None:
    """Refuse, in one line, an ``out`` that is ``src`` or lies inside it (before writing)."""
    source, target = Path(src).resolve(), Path(out).resolve()
    if target == source or source in target.parents:
        raise FsxltError(f"{out}: --out must not be inside the FewCLUE input {src} (the import "
                         "would write into its input); choose a folder outside it")


def bucket_name(split: str) -> str:
    """The bucket a split becomes: ``0`` -> ``00``, ``all`` -> ``all``."""
    return split if split == "all" else f"{int(split):02d}"


def split_files(split: str) -> tuple[str, str]:
    """The training and dev file names of a split (``0`` ... ``4``, ``all``)."""
    if split == "all":
        return "train_few_all.json", "dev_few_all.json"
    return f"train_{split}.json", f"dev_{split}.json"


def _read_test(path: Path, task: TaskSpec, unlabelled: list[str],
               reading: Reading = DEFAULT_READING) -> list[Example]:
    """The test file; its unlabelled examples are left out and counted in ``unlabelled``."""
    skipped = Skipped()
    examples = read_examples(path, task, skipped=skipped, reading=reading)
    if skipped:
        lines = ", ".join(f"{line} ({label if label == NO_LABEL else 'no label'})"
                          for _file, line, label in skipped[:3])
        more = "" if len(skipped) <= 3 else f" and {len(skipped) - 3} more"
        unlabelled.append(f"{task.name}/{path.name}: left out {len(skipped)} unlabelled "
                          f"examples: lines {lines}{more}")
    return examples


def import_task(directory: Path, task: TaskSpec, unlabelled: list[str],
                reading: Reading = DEFAULT_READING) -> BucketSet:
    """One task directory as a bucket set, every file read by ``reading`` (recorded).

    Raises on a missing or malformed file, and on a training or dev example
    without a label of the task; the test file's unlabelled examples are
    left out and listed in ``unlabelled``.
    """
    buckets, devs = [], []
    for split in SPLITS:
        train_name, dev_name = split_files(split)
        buckets.append(read_examples(directory / train_name, task, reading=reading))
        devs.append(read_examples(directory / dev_name, task, reading=reading))
    test_name = task.data.file_name("test", LANGUAGE)
    test_path = directory / test_name
    test = _read_test(test_path, task, unlabelled, reading)
    return BucketSet(
        task=task.name, language=LANGUAGE, k=len(buckets[0]), sampler=SAMPLER, seed=None,
        split="train", source_file=directory.name, source_sha256=None,
        labels=list(task.labels), buckets=buckets, indices=list(range(len(SPLITS))),
        names=[bucket_name(split) for split in SPLITS],
        devs=devs, union=UNION, test=test, reading=reading.to_dict(),
        test_source={"file": test_name, "sha256": sha256_file(test_path)},
        notes={"benchmark": "FewCLUE", "splits": {
            bucket_name(split): dict(zip(("train", "dev"), split_files(split), strict=True))
            for split in SPLITS}})


def import_fewclue(src: str | Path, out: str | Path, *, tasks: Sequence[str] | None = None,
                   replace: bool = False, readings: dict[str, Reading] | None = None,
                   progress: Callable[[Iterable], Iterable] = lambda it: it) -> FewClueImport:
    """Import every FewCLUE task found under ``src`` (or just ``tasks``) into the store ``out``.

    A task whose directory is missing, is a file or holds a malformed file
    is reported in ``skipped_tasks`` (one line each) and left out; the
    others are written. Raises, writing nothing, when every task fails or
    when ``out`` is ``src`` or lies inside it. Sets are written by the
    store's write-once rule (:func:`write_sets`: a set already there
    unchanged is left alone, another one is refused unless ``replace``;
    each set's ``written`` says what happened). ``readings``: how each task's files are
    read (by task name; :mod:`fsxlt.data.readings`: ``input=baseline`` for CSL and
    CLUEWSC), recorded in its set.
    """
    src = Path(src)
    if not src.is_dir():
        raise FsxltError(f"{src}: no such directory (FewCLUE's datasets: one folder per task)")
    check_out_apart(src, out)
    known = fewclue_tasks()
    wanted = list(tasks or known)
    for name in wanted:
        if name not in known:
            raise FsxltError(f"unknown FewCLUE task {name!r}; valid: {', '.join(known)}")
    result = FewClueImport()
    for name in progress(wanted):
        directory = src / name
        if not directory.is_dir():
            problem = "is a file, not a folder" if directory.is_file() else "not found"
            result.skipped_tasks.append(f"{name}: {directory} {problem}")
            continue
        try:
            result.sets.append(import_task(directory, get_task(name), result.unlabelled,
                                           (readings or {}).get(name, DEFAULT_READING)))
        except (FsxltError, OSError) as err:
            result.skipped_tasks.append(f"{name}: {err}")
    if not result.sets:
        raise FsxltError(f"nothing written to {out}: every task failed ({len(wanted)} of "
                         f"{len(wanted)}): {'; '.join(result.skipped_tasks)}")
    write_sets(out, result.sets, replace=replace)
    return result
