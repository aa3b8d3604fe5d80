"""Reading RUNS_DIR into tidy pandas tables; nothing is rerun.

Every ``*.json`` below RUNS_DIR is read once, in sorted path order, and
sorted into:

- ``scores``: one row per finished adapt record (:func:`fsxlt.study.runs.is_complete`):
  task, language, k, arm, method, source_training, bucket, test_score,
  dev_score, best_epoch, metric, record (its path under RUNS_DIR),
  bucket_sha256 and test_sha256 (the content hashes of the bucket and of the
  test examples scored; empty where a record has none), fsxlt_version (that
  wrote it), torch_threads (on CPU, the torch thread count
  it ran with, which moves CPU numerics; empty on GPU or where not
  recorded), long_sentences (tagging: how the
  start's and the run's training rows treated long sentences,
  :func:`record_long_sentences`) and unequal_label_tokens (an ICL
  run whose label words tokenize to different numbers of tokens). The arm
  comes from the record's own facts (:func:`fsxlt.study.runs.arm_of`) and names the
  source when it is not English (``full@de``), so runs from different sources are never one cell;
- ``curves``: the dev score of every epoch of the selected learning rate's
  run (task, language, k, arm, bucket, epoch, dev_score);
- ``zero_shot``: K=0 records (``fsxlt-zero-shot/1``) written by the sweep,
  and the zero-shot scores inside source-training checkpoints
  (``fsxlt_checkpoint.json``; the checkpoint's other files are left out
  silently): one row per (task, language, source, start), ``in_source`` when
  the start was trained on that language (not a zero-shot score);
- ``unions``: runs on a set's union bucket (FewCLUE's ``all``, the union of
  its five splits): reported beside the splits' mean, never among them;
  ``scores`` marks runs on fixed splits (``fixed``), which have five
  buckets, not 40;
- ``failed``: error records (relative paths), never counted;
- ``unreadable``: files that exist but do not parse (truncated, corrupt,
  not UTF-8), each with the reason; never counted, and named by ``fsxlt
  report`` on stderr (``fsxlt sweep`` reruns them);
- ``imported``: the arms of records imported from another study (``fsxlt runs
  import-hf``, :mod:`fsxlt.study.imports`), each named ``<prefix>.<arm>`` and kept
  with its dataset and revision; a listed record whose bytes changed since the import
  is unreadable;
- ``stopped``: the cells a sweep stopped early (``stop_early``,
  :mod:`fsxlt.execution.stopping`), from their ``stopped.json``: the buckets they stopped
  at and why; the report expects those buckets of them, no more;
- ``skipped``: JSON files that are not records, never counted. ``fsxlt
  evaluate`` outputs kept beside the runs (e.g. ``k0/zero-shot-test.json``
  for the analyses) are known, not runs, and left out silently, as are
  FewCLUE submission files (``submission/`` folders).

Scores stay in the records' unit (0-1); the tables show points (x100).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd
from packaging.version import InvalidVersion, Version

from fsxlt.errors import FsxltError
from fsxlt.fileio import NotJsonNumber, loads_strict, sha256_file
from fsxlt.report.reproducibility import record_facts
from fsxlt.report.settings import record_data_files, record_settings
from fsxlt.study.imports import IMPORTS_FILE, read_imports
from fsxlt.study.runs import (
    CHECKPOINT_FILE,
    EVALUATION_FORMAT,
    RUN_FORMAT,
    STOP_FILE,
    STOP_FORMAT,
    SUBMISSION_DIR,
    ZERO_SHOT_FORMAT,
    arm_of,
    is_complete,
    record_problem,
    record_version,
    source_languages_of,
    source_name,
    start_fingerprint,
)

KEY = ["task", "language", "k", "arm", "bucket"]
SCORE_COLUMNS = KEY + ["method", "source_training", "test_score", "test_exact_match",
                       "dev_score",
                       "best_epoch", "metric", "fixed", "record", "bucket_sha256",
                       "test_sha256", "fsxlt_version", "torch_threads", "long_sentences",
                       "unequal_label_tokens", "set_size", "start_path", "precision",
                       "planned", "reading", "micro_batch", "settings", "data_files",
                       "facts"]
UNION_COLUMNS = ["task", "language", "k", "arm", "test_score"]
FIXED_SAMPLER = "fewclue-fixed"  # fsxlt.sampling.fewclue.SAMPLER
CURVE_COLUMNS = KEY + ["epoch", "dev_score"]
ZERO_COLUMNS = ["task", "language", "source", "start", "where", "in_source", "test_score",
                "metric", "test_exact_match"]
CHECKPOINT_FORMAT = "fsxlt-checkpoint/1"  # fsxlt.training.checkpoint


@dataclass
class Records:
    scores: pd.DataFrame
    curves: pd.DataFrame
    zero_shot: pd.DataFrame
    unions: pd.DataFrame = field(default_factory=lambda: pd.DataFrame(columns=UNION_COLUMNS))
    failed: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    duplicates: list[str] = field(default_factory=list)
    unreadable: list[tuple[str, str]] = field(default_factory=list)
    imported: dict[str, str] = field(default_factory=dict)  # arm: "dataset@revision"
    # starts that learned nothing: "task/lang/arm" (or "task/lang/k0") -> their warnings
    learned_nothing: dict[str, list[str]] = field(default_factory=dict)
    # cells a sweep stopped early: (task, language, k, arm) -> their stopped.json
    stopped: dict[tuple[str, str, int, str], dict[str, Any]] = field(default_factory=dict)


def _parse(path: Path) -> tuple[Any, str | None]:
    """A JSON file's content, or ``(None, reason)`` when it cannot be read or parsed."""
    try:
        return loads_strict(path.read_text(encoding="utf-8")), None
    except UnicodeDecodeError:
        return None, "not UTF-8 text"
    except NotJsonNumber as err:
        return None, f"not valid JSON: {err}"
    except json.JSONDecodeError as err:
        cut = err.pos >= len(err.doc.rstrip()) or err.msg.startswith("Unterminated string")
        where = "truncated" if cut else "not valid JSON"
        return None, f"{where} (line {err.lineno}: {err.msg})"
    except OSError as err:
        return None, err.strerror or err.__class__.__name__


def _number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def load_records(runs_dir: str | Path) -> Records:
    """Read every record below ``runs_dir`` (see the module docstring)."""
    root = Path(runs_dir)
    if not root.is_dir():
        raise FsxltError(f"{root}: no such directory")
    scores, curves, zero, unions = [], [], [], []
    failed, skipped, duplicates, unreadable = [], [], [], []
    stopped: dict[tuple[str, str, int, str], dict[str, Any]] = {}
    seen: set[tuple] = set()
    imports, imported = read_imports(root), {}
    learned: dict[str, list[str]] = {}
    for path in sorted(root.rglob("*.json")):
        rel = path.relative_to(root).as_posix()
        if rel == IMPORTS_FILE:
            continue
        if SUBMISSION_DIR in path.relative_to(root).parts[:-1]:
            continue  # FewCLUE submission files (fsxlt.study.submission), not records
        if path.name != CHECKPOINT_FILE and (path.parent / CHECKPOINT_FILE).is_file():
            continue  # a checkpoint's config and tokenizer files, not records
        record, problem = _parse(path)
        if problem is not None:
            unreadable.append((rel, problem))
            continue
        if not isinstance(record, dict):
            skipped.append(rel)
            continue
        status = record.get("status")
        fmt = record.get("format")
        if fmt == EVALUATION_FORMAT:
            continue
        if fmt == STOP_FORMAT and path.name == STOP_FILE:
            stop = _stop_of(path.parent.relative_to(root).parts, record)
            if stop is None:
                unreadable.append((rel, "not a stop record of fsxlt sweep's stop_early"))
            else:
                stopped[stop[0]] = stop[1]
            continue
        problem = record_problem(record) if fmt in (RUN_FORMAT, ZERO_SHOT_FORMAT) \
            and status != "error" else None
        if problem is not None:
            unreadable.append((rel, problem))
        elif status == "error":
            failed.append(rel)
        elif fmt == ZERO_SHOT_FORMAT and status == "ok" and _number(record.get("test_score")):
            start = record.get("start") or {}
            source = source_name(record.get("source_languages"))
            if rel in imports:  # another study's start: its source behind the prefix
                if sha256_file(path) != imports[rel].sha256:
                    unreadable.append((rel, "changed since it was imported"))
                    continue
                source = imports[rel].arm(source)
            _note_warnings(learned, f"{record['task']}/{record['language']}/k0",
                           record.get("warnings"))
            zero.append({"task": record["task"], "language": record["language"],
                         "source": source,
                         "start": start.get("fingerprint") or rel,
                         "where": path.parent.relative_to(root).as_posix(),
                         "in_source": bool(record.get("in_source")),
                         "test_score": float(record["test_score"]),
                         "metric": record.get("metric"),
                         "test_exact_match": exact_match_of(record.get("test"))})
        elif fmt == CHECKPOINT_FORMAT:
            zero += _checkpoint_zero_shot(record, path.parent, root)
        elif (is_complete(record) and isinstance(record.get("bucket"), dict)
              and record["bucket"].get("index") is not None and record.get("k") is not None):
            source = bool((record.get("model") or {}).get("source_training", True))
            arm = arm_of(record)
            if rel in imports:  # another study's record: its arm behind the import's prefix
                arm = _imported_arm(path, imports[rel], arm, imported)
                if arm is None:
                    unreadable.append((rel, "changed since it was imported"))
                    continue
            key = (record["task"], record["language"], int(record["k"]), arm,
                   int(record["bucket"]["index"]))
            if key in seen:
                duplicates.append(rel)
                continue
            seen.add(key)
            if record["bucket"].get("union"):
                unions.append(dict(zip(UNION_COLUMNS, key[:4] + (float(record["test_score"]),),
                                       strict=True)))
                continue
            _note_warnings(learned, f"{key[0]}/{key[1]}/{key[3]}",
                           ((record.get("model") or {}).get("start") or {}).get("warnings"))
            scores.append(_score_row(record, key, rel, source))
            curves += _curve_rows(record, key)
        else:
            skipped.append(rel)
    return Records(
        scores=pd.DataFrame(scores, columns=SCORE_COLUMNS).sort_values(KEY, ignore_index=True),
        curves=pd.DataFrame(curves, columns=CURVE_COLUMNS).sort_values(
            KEY + ["epoch"], ignore_index=True),
        zero_shot=pd.DataFrame(zero, columns=ZERO_COLUMNS).drop_duplicates(
            ["task", "language", "source", "start"]).sort_values(
            ["task", "language", "source", "start"], ignore_index=True),
        unions=pd.DataFrame(unions, columns=UNION_COLUMNS).sort_values(
            UNION_COLUMNS[:4], ignore_index=True),
        failed=failed, skipped=skipped, duplicates=duplicates, unreadable=unreadable,
        imported=imported, learned_nothing=learned, stopped=stopped)


def _stop_of(parts: tuple[str, ...], record: dict[str, Any]
             ) -> tuple[tuple[str, str, int, str], dict[str, Any]] | None:
    """A ``stopped.json``'s cell (from its folder ``task/lang/kK/arm``) and content, or None
    where either is not what fsxlt writes."""
    if len(parts) != 4 or not parts[2].startswith("k") or not parts[2][1:].isdigit():
        return None
    buckets, last = record.get("buckets"), record.get("last_bucket")
    if not (isinstance(buckets, int) and isinstance(last, int) and buckets >= 1
            and isinstance(record.get("reason"), str)):
        return None
    return (parts[0], parts[1], int(parts[2][1:]), parts[3]), record


def _note_warnings(found: dict[str, list[str]], where: str, warnings: Any) -> None:
    """Keep a record's start's warnings (it learned nothing) under ``where``, once each."""
    if isinstance(warnings, list):
        kept = found.setdefault(where, []) if warnings else []
        kept += [str(w) for w in warnings if str(w) not in kept]


def _imported_arm(path: Path, imported: Any, arm: str, arms: dict[str, str]) -> str | None:
    """An imported record's arm (``<prefix>.<arm>``), noted with its provenance in
    ``arms``; None when its bytes changed since the import."""
    if sha256_file(path) != imported.sha256:
        return None
    name = imported.arm(arm)
    arms[name] = imported.dataset + (f"@{imported.revision}" if imported.revision else "")
    return name


def dev_curve(record: dict[str, Any]) -> list[tuple[int, float]]:
    """(epoch, dev score) of every epoch of the selected learning rate's run."""
    selected = record.get("selected_lr")
    for run in record.get("runs") or []:
        if run.get("lr") == selected:
            return [(int(epoch["epoch"]), float(epoch["dev_score"]))
                    for epoch in run.get("epochs") or [] if epoch.get("dev_score") is not None]
    return []


def _curve_rows(record: dict[str, Any], key: tuple) -> list[dict[str, Any]]:
    return [dict(zip(KEY, key, strict=True), epoch=epoch, dev_score=score)
            for epoch, score in dev_curve(record)]


def _score_row(record: dict[str, Any], key: tuple, rel: str, source: bool) -> dict[str, Any]:
    """A finished adapt record's row of ``scores`` (the module docstring's columns)."""
    return dict(zip(KEY, key, strict=True), method=record["method"],
                source_training=source, test_score=float(record["test_score"]),
                test_exact_match=exact_match_of(record.get("test")),
                dev_score=record.get("dev_score"), best_epoch=record.get("best_epoch"),
                metric=record.get("metric"),
                fixed=record["bucket"].get("sampler") == FIXED_SAMPLER,
                record=rel, fsxlt_version=record_version(record),
                torch_threads=_cpu_threads(record),
                bucket_sha256=str(record["bucket"].get("sha256") or ""),
                test_sha256=_test_sha256(record),
                long_sentences=record_long_sentences(record),
                unequal_label_tokens=_unequal_label_tokens(record),
                set_size=_set_size(record["bucket"]), start_path=_start_path(record),
                precision=record_precision(record), planned=record_plan(record),
                reading=record_reading(record), micro_batch=record_micro_batch(record),
                settings=record_settings(record), data_files=record_data_files(record),
                facts=record_facts(record))


def record_micro_batch(record: dict[str, Any]) -> str:
    """The encoder inputs per training forward pass a record trained with (its identity's
    ``micro_batch``; ``default`` where fsxlt 0.12+ left the default, 64, out); empty for
    a record of an older fsxlt, which does not say."""
    run = record.get("run")
    identity = run.get("identity") if isinstance(run, dict) else None
    if isinstance(identity, dict) and identity.get("micro_batch") is not None:
        return str(identity["micro_batch"])
    try:
        newer = Version(record_version(record) or "0") >= Version("0.12.0")
    except InvalidVersion:
        newer = False
    return "default" if newer else ""


def record_reading(record: dict[str, Any]) -> str:
    """How a record's dev and test files were read (its run identity's ``reading``, fsxlt
    0.11+: docs/protocol.md#readings), as ``remaining=by-line, text=tokenized``;
    ``default`` where it names none."""
    run = record.get("run")
    identity = run.get("identity") if isinstance(run, dict) else None
    value = identity.get("reading") if isinstance(identity, dict) else None
    if not isinstance(value, dict) or not value:
        return "default"
    return ", ".join(f"{axis}={value[axis]}" for axis in sorted(value))


def reading_lines(records: Records) -> list[str]:
    """The report's lines on readings, where a record names one other than the default:
    each task's readings with their cells' count."""
    scores = records.scores
    if scores.empty or set(scores["reading"].fillna("default")) <= {"default"}:
        return []
    lines = ["Readings of the data files (docs/protocol.md#readings):"]
    for (task, reading), part in scores.groupby(["task", "reading"], sort=True):
        cells = part.groupby(["language", "k", "arm"]).ngroups
        lines.append(f"- {task}: {reading} ({cells} cell{'s' if cells > 1 else ''})")
    return lines


def record_plan(record: dict[str, Any]) -> str:
    """The bucket indexes its sweep planned in the record's cell, as ``0 1 2`` (fsxlt
    0.9+: ``run.plan.buckets``), "" for a record that does not say."""
    run = record.get("run")
    plan = run.get("plan") if isinstance(run, dict) else None
    buckets = plan.get("buckets") if isinstance(plan, dict) else None
    if not isinstance(buckets, list) or not all(
            isinstance(i, int) and not isinstance(i, bool) and i >= 0 for i in buckets):
        return ""
    return " ".join(str(i) for i in sorted(set(buckets)))


def record_precision(record: dict[str, Any]) -> str:
    """The precision a record's run used: as it names it (fsxlt 0.8+); before, ``amp:
    true`` was bf16 autocast on CUDA and ``amp: false`` fp32, and a causal LM's run of
    fsxlt (a record with a device, no amp) ran fp32; "" for a record that does not say (an
    lm-eval import)."""
    if isinstance(record.get("precision"), str):
        return record["precision"]
    if "amp" in record:
        return "bf16" if record["amp"] is True else "fp32"
    return "fp32" if record.get("device") else ""


def _start_path(record: dict[str, Any]) -> str:
    """Where a source-trained start was when the run read it ("" for other runs)."""
    model = record.get("model")
    start = model.get("start") if isinstance(model, dict) else None
    if not isinstance(start, dict) or start.get("kind") != "source-trained":
        return ""
    return str(start.get("path") or "")


def _set_size(bucket: dict[str, Any]) -> float:
    """The number of buckets in the record's set (NaN: a record of an fsxlt that did not say)."""
    size = bucket.get("set_size")
    return float(size) if isinstance(size, int) and not isinstance(size, bool) else float("nan")


def record_long_sentences(record: dict[str, Any]) -> str:
    """How a tagging record's training rows treated sentences longer than
    ``max_seq_length``, in words: ``source windows, adapt truncate`` (the start's
    source-training, then its adapting; ``adapt ...`` alone from a pretrained
    encoder); ``not recorded`` for a tagging record of fsxlt before it said; empty
    for other tasks, whose inputs are always truncated."""
    facts = record.get("long_sentences")
    if not isinstance(facts, dict):
        return "not recorded" if _tagging(record) else ""
    parts = [f"{stage} {facts[stage]}" for stage in ("source", "adapt") if stage in facts]
    return ", ".join(parts)


def _tagging(record: dict[str, Any]) -> bool:
    """Whether a record is of a tagging task (its dev scores count words)."""
    return any(isinstance(record.get(split), dict) and "n_words" in record[split]
               for split in ("dev", "test"))


def _unequal_label_tokens(record: dict[str, Any]) -> bool:
    """Whether an ICL record says its label words tokenize to different numbers of tokens
    (``icl.unequal_label_tokens``)."""
    icl = record.get("icl")
    return bool(icl.get("unequal_label_tokens")) if isinstance(icl, dict) else False


def exact_match_of(scores: Any) -> float:
    """A test block's exact match (extractive QA's second score), NaN where it has none."""
    value = scores.get("exact_match") if isinstance(scores, dict) else None
    return float(value) if _number(value) else float("nan")


def _test_sha256(record: dict[str, Any]) -> str:
    """The content hash of the test examples a record was scored on ("" if none)."""
    test = (record.get("data") or {}).get("test") if isinstance(record.get("data"), dict) \
        else None
    return str(test.get("sha256") or "") if isinstance(test, dict) else ""


def _cpu_threads(record: dict[str, Any]) -> str:
    """The torch thread count a CPU run recorded, as text ("" on GPU, or not recorded)."""
    threads = record.get("torch_threads")
    return str(threads) if record.get("device") == "cpu" and _number(threads) else ""


def _checkpoint_zero_shot(record: dict[str, Any], directory: Path,
                          root: Path) -> list[dict[str, Any]]:
    """The zero-shot rows of the source-training checkpoint in ``directory``; its start
    fingerprint is the sweep's, so its K=0 records and the checkpoint are one start."""
    start = start_fingerprint(directory)
    where = directory.relative_to(root).as_posix()
    source = source_name(source_languages_of(record))
    rows = []
    for lang, scores in sorted((record.get("zero_shot") or {}).items()):
        if isinstance(scores, dict) and _number(scores.get("score")):
            rows.append({"task": record.get("task"), "language": lang, "source": source,
                         "start": start, "where": where,
                         "in_source": bool(scores.get("in_source")),
                         "test_score": float(scores["score"]), "metric": record.get("metric"),
                         "test_exact_match": exact_match_of(scores)})
    return rows
