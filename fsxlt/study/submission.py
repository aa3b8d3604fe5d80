"""Predictions for a file to predict, written in its benchmark's submission format.

``fsxlt adapt --predict FILE`` and a sweep's ``predict: FILE`` predict the
file with the model each run selected and write the result into
``submission/`` beside the run records (one arm's files, ready to be zipped).
The task YAML's ``submission`` names the task as its benchmark spells it and
``submission_format`` picks the format:

``fewclue``
    One file per task and split, ``<task>_predict_<x>.json`` with ``x`` in
    ``0 1 2 3 4 all`` (``ocnlif``, ``bustm``, ``chidf``, ...): one JSON object
    per line, the example's ``id`` as the input file gives it and its
    ``label`` (ChID: ``answer``, the candidate's position as a number).
``xglue``
    ``<bucket>/<TASK>/<lang>.prediction``: one predicted label per line, the
    i-th line for the i-th example of the input (tagging: one tag per word
    line and one blank line between sentences; the input's ``-DOCSTART-``
    lines and runs of blank lines are sentence breaks and become that one
    blank line, because XGLUE's evaluator splits the prediction file at
    blank lines only and reads a second blank line in a row as a word, while
    it reads ``-DOCSTART-`` in its gold file as a break: the j-th sentence
    and word of the file are the j-th of the input as the evaluator reads it).
    Entity tags (NER) are written in the scheme of the input's own tags
    (:func:`tag_scheme`): XGLUE's NER files are IOB1, so an entity opens
    with ``I-`` and ``B-`` only starts one right after another of its type.
    The model's tags are read as entities the way conlleval and seqeval's
    default mode read them and re-encoded, so the entities, and the score
    XGLUE's evaluator gives the file, are the model's own. WPR: each page's
    most probable grade (0-4, as XGLUE's format asks), the grades the
    reported nDCG ranks by, so XGLUE's evaluator gives the file the score
    fsxlt reports (:mod:`fsxlt.metrics.scores`). Generation (QG, NTG): one
    generated text per line, the i-th for the i-th source line; a newline
    inside a text (``\n``, ``\r``) becomes a space, since the evaluator reads
    the file line by line.

Extractive QA writes one JSON object from question id to answer text (the
question ids the input gives): XGLUE's MLQA file ``<bucket>/MLQA/<lang>.prediction``
(``xglue``), and SQuAD's ``predictions.json`` format as
``<bucket>/<TASK>/predictions.<lang>.json`` (``squad``: XQuAD, TyDiQA-GoldP).

``fsxlt submission`` gathers the files of a study's runs into one folder in
the benchmark's layout (:mod:`fsxlt.cli.submission`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path, PurePosixPath
from typing import Any

from fsxlt.data import Example, read_examples, source_ids
from fsxlt.errors import FsxltError
from fsxlt.fileio import atomic_replace_dir, atomic_write_json, atomic_write_text, read_json
from fsxlt.study.runs import (
    SUBMISSION_DIR,
    arm_of,
    bucket_stem,
    is_finished,
    read_record,
    record_files,
)
from fsxlt.tasks import TaskSpec

_LINE = re.compile(r":(\d+)$")
_BREAK = re.compile(r"\r\n|\r|\n")


def _bucket_name(bucket: dict[str, Any]) -> str:
    name = bucket.get("name") or (f"{bucket['index']:02d}" if bucket.get("index") is not None
                                  else None)
    if name is None:
        raise FsxltError("a submission file names its split; adapt on a bucket of a set")
    return name


def submission_file(task: TaskSpec, bucket: dict[str, Any], language: str = "") -> str:
    """The file (relative to ``submission/``) of a run on ``bucket`` (a record's block)."""
    name = _bucket_name(bucket)
    if task.submission_format == "xglue":
        return f"{name}/{task.submission or task.name}/{language}.prediction"
    if task.submission_format == "squad":
        return f"{name}/{task.submission or task.name}/predictions.{language}.json"
    prefix = task.submission or task.name
    if not fewclue_split(bucket):  # a sampled bucket is none of FewCLUE's splits
        return f"{prefix}_predict_bucket{name}.json"
    split = name if not name.isdigit() else str(int(name))
    return f"{prefix}_predict_{split}.json"


def fewclue_split(bucket: dict[str, Any]) -> bool:
    """Whether a record's bucket is one of FewCLUE's own splits (0-4, or their union
    ``all``), which alone take FewCLUE's file names (``<task>_predict_<split>.json``):
    imported by ``fsxlt buckets import-fewclue``, or a block that names its split and no
    sampler."""
    from fsxlt.tasks.fewclue import FIXED_SAMPLER

    sampler = bucket.get("sampler")
    return sampler == FIXED_SAMPLER or (sampler is None and bucket.get("name") is not None)


def read_unlabelled(path: str | Path, task: TaskSpec, language: str | None = None,
                    reading: Any = None) -> tuple[list[Example], list[Any]]:
    """The examples of a file to predict and the id each gives (FewCLUE: its ``id`` or
    ``idx`` as the file has it, see :func:`fsxlt.data.source_ids`; else line numbers).

    ``language`` picks its rows from a file that holds every language (XNLI);
    ``reading``: the run's set's (:mod:`fsxlt.data.readings`), for classification files.
    Labels are not read where the format allows files without them (their
    examples carry the task's first label as a stand-in that nothing reads).
    """
    if task.submission is None:
        raise FsxltError(f"task {task.name} has no submission format (the task YAML's "
                         "'submission' key)")
    path = Path(path)
    if task.is_qa:  # answers, where the file has them, are not used
        examples = read_examples(path, task, labelled=False, language=language)
        return examples, [ex.question_id for ex in examples]
    if task.is_tagging:  # XGLUE's tagging test files carry tags; they are not used
        examples = read_examples(path, task, language=language)
        return examples, [ex.id for ex in examples]
    if task.is_generation:  # the sources alone (XGLUE's test splits have no targets)
        examples = read_examples(path, task, labelled=False, language=language)
        return examples, [ex.id for ex in examples]
    examples = read_examples(path, task, labelled=False, language=language,
                             **({"reading": reading} if reading is not None else {}))
    placeholder = task.labels[0]
    examples = [replace(ex, label=placeholder) for ex in examples]
    if task.submission_format != "fewclue":
        return examples, [ex.id for ex in examples]
    ids = source_ids(path, task)
    lines = [int(_LINE.search(ex.id).group(1)) for ex in examples]
    return examples, [ids.get(line) for line in lines]


def is_entity_tagging(task: TaskSpec) -> bool:
    """A tagging task whose tags are ``B-``/``I-`` entity tags (NER), not POS tags."""
    return task.is_tagging and any(label[:2] in ("B-", "I-") for label in task.labels)


def tag_scheme(sentences: Iterable[Sequence[str]]) -> str:
    """``iob1`` when some ``I-`` tag opens an entity (at a sentence's start, after ``O``
    or after another type: IOB1's mark, never IOB2's), else ``iob2`` (also for input
    without entities, which shows no scheme: IOB2 is the scheme of XGLUE's label list)."""
    for tags in sentences:
        previous = "O"
        for tag in tags:
            if tag.startswith("I-") and previous[2:] != tag[2:]:
                return "iob1"
            previous = tag
    return "iob2"


def encode_entities(tags: Sequence[str], scheme: str) -> list[str]:
    """``tags`` re-encoded in ``scheme`` (``iob1`` or ``iob2``), entity for entity.

    Entities are read as seqeval's default (conlleval) mode reads them
    (:func:`fsxlt.metrics.scores.entity_set`), so any mix of schemes the model
    predicts keeps its entities and its score. IOB2 opens every entity with
    ``B-``; IOB1 opens one with ``B-`` only right after an entity of its type.
    """
    from fsxlt.metrics.scores import entity_set

    out = ["O"] * len(tags)
    last_end, last_type = -2, ""
    for kind, start, end in sorted(entity_set([tags]), key=lambda chunk: chunk[1]):
        adjacent = last_end == start - 1 and last_type == kind
        out[start] = f"{'B' if scheme == 'iob2' or adjacent else 'I'}-{kind}"
        out[start + 1:end + 1] = [f"I-{kind}"] * (end - start)
        last_end, last_type = end, kind
    return out


def one_line(text: str) -> str:
    """A generated text as one line of a prediction file: every line break a space."""
    return _BREAK.sub(" ", text)


def render_submission(task: TaskSpec, ids: Sequence[Any], labels: Sequence[Any], *,
                      scheme: str = "iob2") -> str:
    """The text of a submission file (see the module docstring); ``scheme``: the entity
    tags' scheme (NER), :func:`tag_scheme` of the input. A FewCLUE line without an id
    is refused."""
    if len(ids) != len(labels):
        raise ValueError(f"{len(ids)} ids but {len(labels)} predictions")
    if task.is_qa:
        return json.dumps(dict(zip(map(str, ids), labels, strict=True)), ensure_ascii=False,
                          indent=1) + "\n"
    if task.submission_format == "xglue":
        if is_entity_tagging(task):
            labels = [encode_entities(tags, scheme) for tags in labels]
        if task.is_tagging:
            return "\n\n".join("\n".join(tags) for tags in labels) + "\n"
        if task.is_generation:
            labels = [one_line(text) for text in labels]
        return "".join(f"{label}\n" for label in labels)
    missing = sum(example_id is None for example_id in ids)
    if missing:
        raise FsxltError(f"{missing} of {len(ids)} examples to predict have no id; a "
                         f"{task.name} submission line needs one")
    rows = []
    for example_id, label in zip(ids, labels, strict=True):
        if task.is_multiple_choice:
            rows.append({"id": example_id, "answer": int(label)})
        else:
            rows.append({"id": example_id, "label": label})
    return "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows)


def write_submission(directory: str | Path, task: TaskSpec, record: dict[str, Any],
                     ids: Sequence[Any], inputs: Sequence[Example] = ()) -> Path:
    """Move a record's ``predict`` labels into its submission file under ``directory``
    (the folder of the run records): ``directory/submission/<file>``. ``inputs``: the
    examples predicted, whose tags give the entity tags' scheme (NER)."""
    name = submission_file(task, record["bucket"], record.get("language", ""))
    path = Path(directory) / SUBMISSION_DIR / name
    scheme = tag_scheme(ex.tags for ex in inputs) if is_entity_tagging(task) else "iob2"
    atomic_write_text(path, render_submission(task, ids, record.pop("predict"), scheme=scheme))
    record["submission"] = {"file": f"{SUBMISSION_DIR}/{name}", "n": len(ids)}
    return path


# --------------------------------------------------------------------------- one folder per study

FIXED_SPLITS = ("00", "01", "02", "03", "04", "all")  # FewCLUE's splits and their union
BEST_DEV = "best-dev"


@dataclass(frozen=True)
class Claim:
    """A run's submission file and the path it takes in the benchmark's folder."""

    target: str        # NER/de.prediction, cluewscf_predict_0.json
    source: Path       # the file under RUNS_DIR
    record: Path       # the record that names it
    task: str
    language: str
    k: int | None
    arm: str
    stem: str          # the bucket's name: 00, all, ...
    dev_score: float | None
    fixed: bool        # a run on FewCLUE's fixed splits

    @property
    def group(self) -> str:
        return f"{self.task}/{self.language}/k{self.k}/{self.arm}"


def folder_name(file: str) -> str:
    """Where a run's submission file (its record's ``submission.file``) goes in the
    benchmark's folder: XGLUE's ``submission/<bucket>/<TASK>/<lang>.prediction`` becomes
    ``<TASK>/<lang>.prediction``; FewCLUE's ``submission/<task>_predict_<x>.json`` keeps
    its name (the split is in it)."""
    parts = PurePosixPath(file).parts
    if any(part in ("..", ".", "/") or "\\" in part for part in parts):
        raise FsxltError(f"{file}: a submission file's path may not leave its run's "
                         "submission/ folder")
    if len(parts) == 4 and parts[0] == SUBMISSION_DIR:
        return "/".join(parts[2:])
    if len(parts) == 2 and parts[0] == SUBMISSION_DIR:
        return parts[1]
    raise FsxltError(f"{file}: not a submission file of a run (submission/<file>)")


def submission_claims(runs_dir: str | Path) -> list[Claim]:
    """Every finished run under ``runs_dir`` whose record names a submission file (runs
    adapted with ``--predict``), in path order. A named file that is not there is an
    error naming it: the folder would silently lack it."""
    from fsxlt.tasks.fewclue import FIXED_SAMPLER

    claims = []
    for path in record_files(runs_dir):
        record = read_record(path)
        block = record.get("submission") if is_finished(record) else None
        if not isinstance(block, dict) or not isinstance(block.get("file"), str):
            continue
        target = folder_name(block["file"])  # refuses a path that leaves submission/
        source = path.parent / block["file"]
        if not source.is_file():
            raise FsxltError(f"{source}: missing, though its record {path} names it; run "
                             "the sweep (or fsxlt adapt) again with the same settings: a run "
                             "whose submission file is missing runs again")
        bucket = record.get("bucket") or {}
        dev = record.get("dev_score")
        claims.append(Claim(
            target=target, source=source, record=path,
            task=str(record["task"]), language=str(record["language"]), k=record.get("k"),
            arm=arm_of(record), stem=bucket_stem(bucket),
            dev_score=float(dev) if isinstance(dev, int | float) else None,
            fixed=bucket.get("sampler") == FIXED_SAMPLER))
    return claims


def _pick_arm(claims: Sequence[Claim], arm: str | None, runs_dir: Path) -> str:
    arms = sorted({c.arm for c in claims})
    if arm is not None:
        if arm not in arms:
            raise FsxltError(f"{runs_dir}: no run of arm {arm} has submission files; arms "
                             f"with them: {', '.join(arms)}")
        return arm
    if len(arms) > 1:
        raise FsxltError(f"{runs_dir}: runs of several arms have submission files "
                         f"({', '.join(arms)}); pick one with --arm")
    return arms[0]


def _best_dev(claims: Sequence[Claim]) -> list[Claim]:
    """Per (task, language, K): the run with the best dev score (the first bucket on a tie)."""
    best: dict[tuple, Claim] = {}
    for claim in claims:
        key = (claim.task, claim.language, claim.k)
        if claim.dev_score is None:
            raise FsxltError(f"{claim.record}: no dev score, so --bucket {BEST_DEV} cannot "
                             "rank it")
        if key not in best or claim.dev_score > best[key].dev_score:
            best[key] = claim
    return list(best.values())


def select_claims(claims: Sequence[Claim], runs_dir: str | Path, *, arm: str | None = None,
                  bucket: str | None = None, k: int | None = None,
                  tasks: Sequence[str] = ()) -> list[Claim]:
    """The claims of one arm (``arm``, or the only one), of ``tasks`` and ``k`` when given,
    on ``bucket`` (a bucket's name, or ``best-dev``: per task, language and K the run with
    the best dev score); without ``bucket``, every run's file."""
    runs_dir = Path(runs_dir)
    chosen = [c for c in claims if (not tasks or c.task in tasks) and (k is None or c.k == k)]
    if not chosen:
        raise FsxltError(f"{runs_dir}: no run{' of the tasks and K asked for' if claims else ''}"
                         " has submission files (adapt or sweep with --predict / predict:)")
    arm = _pick_arm(chosen, arm, runs_dir)
    chosen = [c for c in chosen if c.arm == arm]
    if bucket == BEST_DEV:
        return _best_dev(chosen)
    if bucket is not None:
        named = [c for c in chosen if c.stem == bucket]
        if not named:
            raise FsxltError(f"{runs_dir}: no run of arm {arm} on bucket {bucket} has "
                             f"submission files; its buckets: "
                             f"{', '.join(sorted({c.stem for c in chosen}))}")
        return named
    return chosen


def folder_files(claims: Sequence[Claim], *, every_split: bool = True) -> dict[str, Claim]:
    """Folder path -> the claim that fills it. Refused in one line: two runs that claim one
    file, and (``every_split``) runs on FewCLUE's fixed splits that lack a split of 0-4
    and all (the leaderboard takes all six of a task)."""
    files: dict[str, Claim] = {}
    for claim in claims:
        other = files.get(claim.target)
        if other is not None:
            raise FsxltError(f"{claim.target} is claimed by two runs, {other.record} and "
                             f"{claim.record}; pick one with --bucket (a bucket's name or "
                             f"{BEST_DEV}), --k or --task")
        files[claim.target] = claim
    if every_split:
        have: dict[str, set[str]] = {}
        for claim in claims:
            if claim.fixed:
                have.setdefault(claim.group, set()).add(claim.stem)
        for group, stems in sorted(have.items()):
            lacking = [s for s in FIXED_SPLITS if s not in stems]
            if lacking:
                raise FsxltError(f"{group}: no submission file for split "
                                 f"{', '.join(lacking)} (FewCLUE takes splits 0-4 and all); "
                                 "run it with --predict, or pass --bucket for one split")
    return files


def written_list(folder: Path) -> Path:
    """Where ``fsxlt submission`` lists the files it wrote into ``folder`` (the list that
    makes it a submission folder: :func:`fsxlt.study.directories.submission_list`)."""
    from fsxlt.study.directories import submission_list

    return submission_list(folder)


def _folder_texts(folder: Path) -> tuple[dict[str, str] | None, str | None]:
    """The files of an existing submission folder (relative path -> text; None when it holds
    a link or anything but folders and files), and the first entry that ``fsxlt
    submission`` did not list as written there (None: it wrote them all; only such a
    folder is ever replaced)."""
    listed = read_json(written_list(folder)) if written_list(folder).is_file() else None
    names = set(listed.get("files", [])) if isinstance(listed, dict) else set()
    texts: dict[str, str] | None = {}
    foreign = None
    for path in sorted(folder.rglob("*")):
        rel = path.relative_to(folder).as_posix()
        if path.is_symlink() or not (path.is_dir() or path.is_file()):
            texts, foreign = None, foreign or rel
        elif path.is_file():
            foreign = foreign if rel in names else foreign or rel
            if texts is not None:
                texts[rel] = path.read_text(encoding="utf-8", errors="replace")
    return texts, foreign


def check_folder_place(out: str | Path, runs_dir: str | Path) -> None:
    """Refuse, in one line, an ``out`` that is or lies inside the runs directory, a runs
    directory or a bucket store (reports would meet its files), or that holds one."""
    from fsxlt.study.directories import BUCKETS, KINDS, RUNS, SUBMISSION, enclosing, marked_inside

    out, runs = Path(out).resolve(), Path(runs_dir).resolve()
    found = enclosing(out)
    if found is not None and found == (SUBMISSION, out):
        found = None  # a submission folder fsxlt wrote: replaced under the write-once rule
    if out == runs or runs in out.parents or found is not None:
        where = KINDS[found[0]] if found is not None else "runs directory"
        raise FsxltError(f"{out}: --out lies in a {where}; a submission folder must be a "
                         "directory of its own")
    for kind in (RUNS, BUCKETS, SUBMISSION):
        inner = marked_inside(out, kind)
        if inner is not None:
            raise FsxltError(f"{out}: --out holds a {KINDS[kind]} ({inner}); a submission "
                             "folder must be a directory of its own")


def write_submission_folder(runs_dir: str | Path, out: str | Path, *, arm: str | None = None,
                            bucket: str | None = None, k: int | None = None,
                            tasks: Sequence[str] = (), replace: bool = False,
                            ) -> tuple[str, dict[str, Claim]]:
    """Gather the submission files of a study's runs into ``out``, in the benchmark's
    layout: XGLUE's ``<TASK>/<lang>.prediction`` (one folder for every task and language,
    as its evaluator reads it) and FewCLUE's ``<task>_predict_<x>.json`` side by side.

    Runs are chosen by :func:`select_claims`; :func:`folder_files` refuses clashes and
    incomplete FewCLUE splits. The folder is written at once (a staged sibling renamed
    into place). Write-once: an existing ``out`` with the same files is left as it is
    (``unchanged``); one with other files is refused unless ``replace`` (``replaced``),
    and one that holds anything but submission files is never replaced. Returns
    (``written``, ``unchanged`` or ``replaced``, the files).
    """
    runs_dir, out = Path(runs_dir), Path(out).resolve()  # a link: its folder is replaced
    if not runs_dir.is_dir():
        raise FsxltError(f"{runs_dir}: no such runs directory")
    check_folder_place(out, runs_dir)
    claims = select_claims(submission_claims(runs_dir), runs_dir, arm=arm, bucket=bucket,
                           k=k, tasks=tasks)
    files = folder_files(claims, every_split=bucket is None)
    texts = {name: files[name].source.read_text(encoding="utf-8") for name in sorted(files)}
    state = "written"
    if out.exists() and any(out.iterdir()):
        old, foreign = _folder_texts(out)
        if old == texts:
            if foreign is not None:  # the same files, written before fsxlt listed them
                atomic_write_json(written_list(out), {"files": sorted(texts)})
            return "unchanged", files
        if foreign is not None:
            raise FsxltError(f"{out}: holds files that are not submission files fsxlt wrote "
                             f"there ({foreign}); give --out a folder of its own")
        if not replace:
            raise FsxltError(f"{out}: holds another submission ({len(old or {})} files); pass "
                             "--replace to replace it, or give another --out")
        state = "replaced"
    atomic_replace_dir(out, texts)
    atomic_write_json(written_list(out), {"files": sorted(texts)})
    return state, files


def fewclue_lacking(tasks: set[str]) -> list[str]:
    """FewCLUE's tasks missing from a folder that holds some of them (else none)."""
    from fsxlt.tasks.fewclue import fewclue_tasks

    if not tasks & set(fewclue_tasks()):
        return []
    return [task for task in fewclue_tasks() if task not in tasks]
