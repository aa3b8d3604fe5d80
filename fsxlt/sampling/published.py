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

XNLI's and PAWS-X's buckets were drawn from the target dev split, and runs
select models on the rest of it, which the release does not hold. Given the
user's dev files (``data_dir``), each such set gets its ``dev-remaining.jsonl``:
the dev file minus every line holding one of *this K's* buckets' examples,
found by content (:mod:`fsxlt.sampling.locate`). A set with bucket examples
that cannot be found there is refused, unless ``max_unlocated`` accepts that
many; what was not found is recorded in the manifest (``dev_remaining``).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from fsxlt.data import TextExample, example_from_dict, read_conll, read_examples
from fsxlt.data.readings import DEFAULT_READING, Reading
from fsxlt.errors import DataFormatError, FsxltError
from fsxlt.fileio import read_json, sha256_file, sha256_text
from fsxlt.sampling.forms import BUCKET_TEXTS, FormCheck, form_differences, in_dev_form
from fsxlt.sampling.locate import Location, alike_lines, locate, locate_by_line
from fsxlt.sampling.store import DEV_REMAINING, BucketSet, write_sets
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
    tasks, stray files), ignored. ``no_dev``: sets that select models on a
    remaining dev set and have none (imported without ``data_dir``, or without the dev
    file it lacks: ``no_dev_file``, those files' paths); ``alike``:
    per dev file, groups of its lines that differ as written but match alike
    (their ids); ``unlocated``: per set (``task/lang/kK``) its accepted
    unlocated examples.
    """

    sets: list[BucketSet] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    no_dev: list[BucketSet] = field(default_factory=list)
    alike: dict[str, list[list[str]]] = field(default_factory=dict)
    unlocated: dict[str, list[str]] = field(default_factory=dict)
    no_dev_file: list[str] = field(default_factory=list)  # dev files --data-dir lacks


def selects_on_remaining(bucket_set: BucketSet) -> bool:
    """Whether runs on a published set select models on its remaining dev set (a
    classification task drawn from dev: XNLI, PAWS-X)."""
    task = get_task(bucket_set.task)
    return task.selects_on_remaining and not (task.is_tagging or task.is_qa)


def set_name(bucket_set: BucketSet) -> str:
    return f"{bucket_set.task}/{bucket_set.language}/k{bucket_set.k}"


def dev_path(data_dir: str | Path, task_name: str, language: str) -> Path:
    """The dev file of ``task_name``/``language`` under ``data_dir`` ({task} filled in)."""
    task = get_task(task_name)
    return Path(task.data.locate(str(data_dir).replace("{task}", task.name), "dev", language))


def add_remaining(summary: ImportSummary, data_dir: str | Path, max_unlocated: int = 0,
                  readings: dict[str, Reading] | None = None,
                  bucket_text: str | None = None) -> None:
    """Give every set of ``summary`` that selects on a remaining dev set its remaining set,
    computed from its dev file under ``data_dir`` read by its task's reading
    (``readings``, by task; the default where none is named). A set whose dev file is
    not there is imported without one (its path in ``summary.no_dev_file``: what can be
    imported is, and the summary says what could not). Refuse, in one line, a set with
    more than ``max_unlocated`` bucket examples not found in its dev file, or a set whose
    release text and dev text differ under mBERT's pre-tokenizer unless ``bucket_text``
    says which to keep (:mod:`fsxlt.sampling.forms`)."""
    dev_files: dict[tuple[Path, str], list[TextExample]] = {}  # a file of every language
    refusals = []  # (XNLI 1.0's) is read once per language
    for bucket_set in summary.sets:
        if not selects_on_remaining(bucket_set):
            continue
        path = dev_path(data_dir, bucket_set.task, bucket_set.language)
        reading = (readings or {}).get(bucket_set.task, DEFAULT_READING)
        bucket_set.reading = reading.to_dict()
        key = (path, bucket_set.language)
        if key not in dev_files:
            if not path.is_file():
                if str(path) not in summary.no_dev_file:
                    summary.no_dev_file.append(str(path))
                continue
            dev_files[key] = read_examples(path, get_task(bucket_set.task),
                                           language=bucket_set.language, split="dev",
                                           reading=reading)
            alike = alike_lines(dev_files[key])
            if alike:
                summary.alike[str(path)] = [[ex.id for ex in group] for group in alike]
        drawn = zip(bucket_set.bucket_indices(), bucket_set.buckets, strict=True)
        found = (locate_by_line(bucket_set.task, bucket_set.language, drawn, dev_files[key])
                 if reading.get("remaining") == "by-line" else locate(drawn, dev_files[key]))
        if len(found.unlocated) > max_unlocated:
            refusals.append(_unlocated_refusal(bucket_set, path, found, max_unlocated))
            continue
        if not found.remaining:
            raise FsxltError(f"{set_name(bucket_set)}: its buckets hold every line of {path}, "
                             "leaving no dev examples for model selection; nothing was written")
        forms = form_differences(zip(bucket_set.bucket_indices(), bucket_set.buckets,
                                     strict=True), dev_files[key])
        if forms.differ and bucket_text is None:
            refusals.append(_form_refusal(bucket_set, path, forms, reading))
            continue
        _keep_remaining(bucket_set, path, found, summary)
        if forms.differ or bucket_text is not None:
            _keep_form(bucket_set, forms, bucket_text)
    if refusals:
        more = f" ({len(refusals) - 1} more sets refused)" if len(refusals) > 1 else ""
        raise FsxltError(refusals[0] + more)


def _form_refusal(bucket_set: BucketSet, path: Path, forms: FormCheck,
                  reading: Reading) -> str:
    bucket, release, dev = forms.examples[0]
    cure = {"xnli": "read XNLI 1.0's xnli.dev.tsv (and xnli.test.tsv) in the release's form "
                    "with --reading study",
            "pawsx": "read the dev file unquoted, the release's form, with --reading study"
            }.get(bucket_set.task, "read a dev file in the release's form")
    return (f"{set_name(bucket_set)}: the release's text and {path.name}'s (reading "
            f"{reading.describe()}) differ on {forms.differ} of {forms.compared} bucket "
            f"examples under mBERT's pre-tokenizer (bucket {bucket:02d}: {release!r} against "
            f"{dev!r}), so its runs would train on one form and select and test on another; "
            f"{cure}, or pass --bucket-text dev-file to put the buckets in the dev file's form "
            "(--bucket-text release keeps both); nothing was written")


def _keep_form(bucket_set: BucketSet, forms: FormCheck, bucket_text: str | None) -> None:
    """Record (and, for ``dev-file``, apply) the form the set's buckets keep."""
    assert bucket_set.dev_provenance is not None
    bucket_set.dev_provenance["forms"] = {**forms.to_dict(), "bucket_text": bucket_text}
    if bucket_text == "dev-file":
        bucket_set.buckets = in_dev_form(bucket_set.buckets,  # type: ignore[arg-type]
                                         bucket_set.bucket_indices(), forms)
        bucket_set.notes["bucket_text"] = ("dev-file: every located example holds its dev "
                                           "line's text, not the release's")


def _unlocated_refusal(bucket_set: BucketSet, path: Path, found: Location,
                       allowed: int) -> str:
    shown = "; ".join(u.describe() for u in found.unlocated[:3])
    more = f" and {len(found.unlocated) - 3} more" if len(found.unlocated) > 3 else ""
    n = len(found.unlocated)
    return (f"{set_name(bucket_set)}: {n} bucket example{'s' if n > 1 else ''} not located in "
            f"{path} ({shown}{more}); nothing was written: is this the dev file the buckets "
            f"were drawn from? --max-unlocated {n} accepts them "
            f"(now {allowed}), recorded in the set's manifest")


BY_TEXT_RULE = ("the dev file less every line holding the text of an example of this K's "
                "buckets (docs/sampling.md)")
BY_LINE_RULE = ("the dev file less the lines the release's ids of this K's buckets name "
                "(the study's; docs/sampling.md)")


def _keep_remaining(bucket_set: BucketSet, path: Path, found: Location,
                    summary: ImportSummary) -> None:
    by_line = bucket_set.reading.get("remaining") == "by-line"
    bucket_set.dev_remaining = found.remaining
    bucket_set.dev_provenance = {
        "source": {"file": path.name, "sha256": sha256_file(path)},
        "rule": BY_LINE_RULE if by_line else BY_TEXT_RULE,
        "located": found.located, "removed": found.removed,
        "unlocated": [u.to_dict() for u in found.unlocated],
    }
    if found.unlocated:
        summary.unlocated[set_name(bucket_set)] = [u.describe() for u in found.unlocated]


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
                     languages: Iterable[str] | None = None,
                     replace: bool = False, data_dir: str | Path | None = None,
                     max_unlocated: int = 0, readings: dict[str, Reading] | None = None,
                     bucket_text: str | None = None,
                     progress: Callable[[Iterable], Iterable] = lambda it: it) -> ImportSummary:
    """Convert every published (task, K, language) under ``src`` into bucket sets under ``out``.

    Unknown folders and stray files (``.DS_Store``, readmes) are skipped and
    listed in the summary; unreadable buckets are left out of their sets and
    listed (see the module docstring). Everything is read before anything is
    written, by the store's write-once rule (:func:`write_sets`: a set already
    there unchanged is left alone, another one is refused unless ``replace``;
    each set's ``written`` says what happened).

    ``languages``: only these (codes or the release's names). ``data_dir`` (``{task}`` is
    filled in): the task's dev files, from which every set
    drawn from dev gets its remaining dev set (:func:`add_remaining`); a set already in
    the store without one gets it added, its buckets untouched. Without it, such sets
    are imported without one and listed in the summary's ``no_dev``. ``readings``: how
    each task's dev files are read (by task name; :mod:`fsxlt.data.readings`), recorded
    in its sets; ``bucket_text``: which text a set keeps where the release's and the dev
    file's differ (``release`` or ``dev-file``; None refuses such a set).
    """
    if max_unlocated < 0:
        raise FsxltError(f"--max-unlocated must be 0 or more, got {max_unlocated}")
    if bucket_text is not None and bucket_text not in BUCKET_TEXTS:
        raise FsxltError(f"--bucket-text is one of {', '.join(BUCKET_TEXTS)}, got "
                         f"{bucket_text!r}")
    if data_dir is None and (bucket_text is not None or any(
            not reading.is_default and get_task(name).selects_on_remaining
            for name, reading in (readings or {}).items())):
        raise FsxltError("--bucket-text and XNLI's and PAWS-X's --reading say how their dev "
                         "files are read: they need --data-dir")
    src = Path(src)
    if not src.is_dir():
        raise FsxltError(f"{src}: no such directory")
    wanted = set(tasks) if tasks else set(builtin_tasks())
    chosen = {language_code(name) for name in languages} if languages else None
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
                if chosen is None or language_code(lang_dir.name) in chosen:
                    jobs.append((task_dir.name, int(match.group(1)), lang_dir))
    if chosen is not None:
        found = {language_code(lang_dir.name) for _, _, lang_dir in jobs}
        absent = sorted(chosen - found)
        if absent and found:  # none found at all: refused below, in the release's words
            raise FsxltError(f"--lang {', '.join(absent)}: the release holds no buckets of "
                             f"{', '.join(sorted(wanted & {j[0] for j in jobs}) or wanted)} "
                             "in that language (a --lang applies to every --task that has "
                             "it)")
    for task_name, k, lang_dir in progress(jobs):
        bucket_set = _import_language(task_name, k, lang_dir, src, summary)
        if bucket_set is not None:
            bucket_set.reading = (readings or {}).get(task_name, DEFAULT_READING).to_dict()
            summary.sets.append(bucket_set)
    if not summary.sets:
        raise FsxltError(f"{src}: no published buckets found "
                         "(expected <task>/<K>-shots/<language>/<i>-th/)")
    if data_dir is not None:
        add_remaining(summary, data_dir, max_unlocated, readings, bucket_text)
    write_sets(out, summary.sets, replace=replace)
    summary.no_dev = [s for s in summary.sets if selects_on_remaining(s)
                      and s.dev_remaining is None and not _store_has_dev(s)]
    return summary


def _store_has_dev(bucket_set: BucketSet) -> bool:
    """Whether the store's copy of a set imported without a dev set holds one (added by an
    earlier import with --data-dir, and kept)."""
    written = bucket_set.written
    return written is not None and (written.path / DEV_REMAINING).is_file()
