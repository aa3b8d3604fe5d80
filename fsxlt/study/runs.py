"""The runs directory: its layout, its record format and the rule that writes records.

``fsxlt adapt``/``sweep`` write here, ``report``/``analyze`` read; this module knows how::

    RUNS/.fsxlt-directory                       marks RUNS as a runs directory (JSON)
    RUNS/<task>/<lang>/k0/zero-shot.json        K=0 record (copied from the start)
    RUNS/<task>/<lang>/k0/zero-shot-test.json   fsxlt evaluate output for the analyses
    RUNS/<task>/<lang>/k0/<arm>/zero-shot.json  K=0 run of a method that scores untrained (pet)
    RUNS/<task>/<lang>/k<K>/<arm>/<bucket>.json one record per adapting run
    RUNS/<task>/<lang>/k<K>/<arm>/<bucket>.predictions.jsonl   its test predictions
    RUNS/<task>/<lang>/k<K>/<arm>/submission/   its benchmark submission files

*Arms.* The arm of a run names how it was made: the method, ``+joint`` (``+joint-macro``,
...) when it trained on the source data beside the bucket (a training regime other than
the sequential one), ``-epoch0`` when the start model competed as epoch 0, ``-nosource``
when the start was a pretrained encoder (no source training), ``@de`` / ``@en+de+es`` when
the start was source-trained on anything but English, ``~diverse`` when a shot-selection
strategy built the bucket set. :func:`arm_of` derives it from a record's own facts, and
every command files and reads records by it.

*Records.* A finished record is the adapt engine's record (format ``fsxlt-adapt-run/1``)
with ``status: ok``, a numeric ``test_score`` and a ``run`` block: the run's ``identity``
(everything that determines its result: coordinates, hyperparameters and the content
hashes of its bucket, dev and test files and its start), the identity's ``hash``, the
``arm``, the ``writer`` (``fsxlt adapt`` or ``sweep 'NAME'``) and the ``fsxlt_version``. A
failed run leaves an error record (``status: error``) that the next start reruns. Records
of earlier versions carry the identity hash in a ``sweep`` block, read the same way.

*The write rule (write-once).* Before a run, :func:`record_state` compares the record at
its path with the run's identity: ``missing``, ``corrupt`` (a record of this format
without its result) and ``error`` records are (re)written; ``done`` (same identity) is
skipped and said so; a finished record with another identity is ``different``, and
anything else at the path is ``foreign``: a record of a format this version does not write
(``fsxlt-adapt-run/2`` of a newer fsxlt, any other JSON object), any other JSON value,
bytes that are not JSON (fsxlt writes whole JSON objects, atomically, so it never left
them). Neither is ever replaced unless the command was given ``--replace`` (which says
what it replaced). Finished means finished in any version: only what this version can read
and knows to be unfinished is rewritten. A folder where a record belongs is refused before
any run.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from fsxlt import __version__
from fsxlt.errors import FsxltError
from fsxlt.fileio import loads_strict, sha256_text

RUN_FORMAT = "fsxlt-adapt-run/1"
ERROR_FORMAT = "fsxlt-adapt-error/1"
ZERO_SHOT_FORMAT = "fsxlt-zero-shot/1"
# ``fsxlt evaluate --out``: the scores of one checkpoint on one split (not a run record).
EVALUATION_FORMAT = "fsxlt-evaluation/1"
ZERO_SHOT_FILE = "zero-shot.json"
ZERO_SHOT_STEM = "zero-shot-test"          # fsxlt evaluate's output kept for the analyses
ZERO_SHOT_RUN = "zero-shot"                # the bucket name (file stem) of a K=0 run
PREDICTIONS_SUFFIX = ".predictions.jsonl"
# a cell a sweep stopped early (fsxlt.execution.stopping) says so in its arm's folder
STOP_FILE = "stopped.json"
STOP_FORMAT = "fsxlt-stop/1"
SUBMISSION_DIR = "submission"
CHECKPOINT_FILE = "fsxlt_checkpoint.json"  # a checkpoint's facts (fsxlt.training.checkpoint)
NOSOURCE_SUFFIX = "-nosource"
EPOCH0_SUFFIX = "-epoch0"
SOURCE_MARK = "@"          # full@de: adapted from a model source-trained on German
DEFAULT_SOURCE = "en"      # the study's source; its arms carry no mark
STRATEGY_MARK = "~"        # full~diverse: adapted on buckets a selection strategy built
REGIME_MARK = "+"          # full+joint: trained on the source data beside the bucket
DEFAULT_REGIME = "sequential"  # the study's regime (adapt on the bucket alone): no mark
# regime names of earlier versions, as records of them are filed: 0.2's and 0.3's "joint-mixup"
# put source and bucket rows in one batch, what is now called joint-concat
LEGACY_REGIMES = {"joint-mixup": "joint-concat"}
ADAPT_WRITER = "fsxlt adapt"


# --------------------------------------------------------------------------- arms

def arm_name(method: str, source_training: bool, select_start: bool = False,
             source_languages: Sequence[str] | None = None, strategy: str = "",
             regime: str = DEFAULT_REGIME) -> str:
    """The arm of a run from its facts (see the module docstring).

    Epoch-0 runs, runs from other sources, runs of another training regime and
    runs on a strategy's buckets get an arm of their own so that they sit beside
    the study's protocol in one runs directory, are never averaged with it, and
    ``fsxlt report --compare full@de full`` (``full+joint full``) pairs them
    bucket by bucket.
    """
    arm = method if regime == DEFAULT_REGIME else f"{method}{REGIME_MARK}{regime}"
    arm = f"{arm}{EPOCH0_SUFFIX}" if select_start else arm
    if not source_training:
        arm = f"{arm}{NOSOURCE_SUFFIX}"
    else:
        source = source_name(source_languages)
        arm = arm if source == DEFAULT_SOURCE else f"{arm}{SOURCE_MARK}{source}"
    return f"{arm}{STRATEGY_MARK}{strategy}" if strategy else arm


def arm_of(record: dict[str, Any]) -> str:
    """The arm of an adapt record, from its own facts: method, training regime, whether its
    start was source-trained (and on what), epoch-0 selection and the bucket set's
    strategy; a causal LM's (prompted, or LoRA-tuned) has no start and no source."""
    if any(isinstance(record.get(key), dict) for key in ("icl", "lm_tuning", "lm_eval")):  # LMs
        return arm_name(str(record["method"]), True,
                        strategy=str((record.get("bucket") or {}).get("strategy") or ""))
    model = record.get("model") or {}
    start = model.get("start") or {}
    source_training = bool(model.get("source_training", True))
    return arm_name(str(record["method"]), source_training, bool(record.get("select_start")),
                    start.get("source_languages") or record.get("source_languages"),
                    str((record.get("bucket") or {}).get("strategy") or ""),
                    record_regime(record))


def record_regime(record: dict[str, Any]) -> str:
    """The training regime of an adapt record as its arm names it (``sequential`` for one
    that names none; :func:`regime_label`)."""
    regime = record.get("regime")
    if not isinstance(regime, dict):
        return DEFAULT_REGIME
    return regime_label(str(regime.get("name") or DEFAULT_REGIME),
                        regime.get("languages") or (), regime.get("multi_epochs"))


def regime_label(name: str, languages: Sequence[str] = (),
                 multi_epochs: int | None = None) -> str:
    """How arms name a regime: its name (an earlier version's as now called); multi with its
    languages (``multi-ar-de-zh``; multi-stage with its multi epochs: ``multi3-ar-de-zh``)."""
    if name == "multi":
        return "-".join((f"multi{multi_epochs or ''}", *sorted(languages)))
    return LEGACY_REGIMES.get(name, name)


def source_name(source_languages: Sequence[str] | None) -> str:
    """``en``, ``de``, ``en+de+es``: how records and reports name a start's source."""
    return "+".join(source_languages) if source_languages else DEFAULT_SOURCE


def arm_strategy(arm: str) -> tuple[str, str]:
    """``(arm without its strategy, strategy)``; the strategy is "" for ordinary buckets."""
    base, _, strategy = arm.partition(STRATEGY_MARK)
    return base, strategy


def arm_regime(arm: str) -> tuple[str, str]:
    """``(arm without its regime, regime)``: ``full+joint-nosource@de~diverse`` ->
    ``(full-nosource@de~diverse, joint)``; the regime is ``sequential`` for an arm that
    names none."""
    head, strategy = arm_strategy(arm)
    head, mark, source = head.partition(SOURCE_MARK)  # a source may hold "+" (en+de)
    method, plus, regime = head.partition(REGIME_MARK)
    if not plus:
        return arm, DEFAULT_REGIME
    suffixes = ""
    for suffix in (NOSOURCE_SUFFIX, EPOCH0_SUFFIX):  # arm_name appends them in reverse
        if regime.endswith(suffix):
            regime, suffixes = regime[: -len(suffix)], suffix + suffixes
    rest = f"{suffixes}{mark}{source}" + (f"{STRATEGY_MARK}{strategy}" if strategy else "")
    return f"{method}{rest}", regime


def arm_source(arm: str) -> str | None:
    """The source an arm's start was trained on (None for the no-source ablation)."""
    arm = arm_strategy(arm)[0]
    if arm.endswith(NOSOURCE_SUFFIX):
        return None
    return arm.split(SOURCE_MARK, 1)[1] if SOURCE_MARK in arm else DEFAULT_SOURCE


# --------------------------------------------------------------------------- starts

def is_checkpoint(start: str | Path | None) -> bool:
    """Whether ``start`` is an fsxlt source-training checkpoint (else a pretrained encoder)."""
    return bool(start) and (Path(start) / CHECKPOINT_FILE).is_file()


def source_languages_of(meta: dict[str, Any]) -> list[str]:
    """A checkpoint record's source languages (English for one that predates them)."""
    return list(meta.get("source_languages") or [meta.get("source_language", DEFAULT_SOURCE)])


def start_source_languages(start: str | Path | None) -> list[str]:
    """The source languages recorded in a checkpoint directory (English when it predates
    them); empty for a start that is not an fsxlt checkpoint (a pretrained encoder)."""
    return source_languages_of(checkpoint_meta(start)) if is_checkpoint(start) else []


def checkpoint_meta(start: str | Path | None) -> dict[str, Any]:
    """A checkpoint directory's record ({} for a start that is no checkpoint)."""
    if not is_checkpoint(start):
        return {}
    meta_path = Path(str(start)) / CHECKPOINT_FILE
    try:
        meta = json.loads(meta_path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as err:
        raise FsxltError(f"{meta_path}: unreadable checkpoint record ({err})") from None
    return meta if isinstance(meta, dict) else {}


def start_fingerprint(start: str | Path) -> str:
    """What identifies a start, by content (:func:`fsxlt.identity.fingerprint`): a
    checkpoint's every file (its record, head, encoder weights and tokenizer), a
    pretrained encoder directory's files; a hub encoder by the commit it loads."""
    from fsxlt.identity import fingerprint

    path = Path(start)
    if (path / CHECKPOINT_FILE).is_file():
        return "checkpoint:" + fingerprint(path).removeprefix("sha256:")
    return "pretrained:" + fingerprint(path if path.is_dir() else str(start))


# --------------------------------------------------------------------------- layout

def bucket_stem(bucket: dict[str, Any]) -> str:
    """A record's file stem from its bucket block: the bucket's name, ``NN``, or its hash."""
    if bucket.get("name"):
        return str(bucket["name"])
    if bucket.get("index") is not None:
        return f"{int(bucket['index']):02d}"
    return str(bucket["sha256"])[:12]


def record_path(root: str | Path, task: str, language: str, k: int | None, arm: str,
                stem: str) -> Path:
    """``ROOT/<task>/<lang>/k<K>/<arm>/<stem>.json``: where a run's record lives."""
    return Path(root) / task / language / (f"k{k}" if k is not None else "k-") / arm \
        / f"{stem}.json"


def record_path_of(root: str | Path, record: dict[str, Any]) -> Path:
    """Where an adapt record belongs, from its own facts."""
    return record_path(root, record["task"], record["language"], record.get("k"),
                       arm_of(record), bucket_stem(record["bucket"]))


# an arm folder's name: what arm_of builds of plain names (method, regime, source, strategy)
ARM_NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.+@~-]{0,199}$")
PLAIN = "a plain name (letters, digits, _ . + -)"


def place_problem(record: dict[str, Any]) -> str | None:
    """The first fact of an adapt record that :func:`record_path_of` makes part of a path
    (task, language, K, the arm's method, regime, source languages and strategy, the
    bucket's name, index or hash) and that is no plain name, in words (``task is '..', not
    a plain name``), or None. The check a record from outside (an imported results
    dataset) passes before anything is placed by its facts."""
    from fsxlt.fileio import brief, plain_name

    def whole(value: Any) -> bool:
        return isinstance(value, int) and not isinstance(value, bool) and value >= 0

    model = record.get("model") if isinstance(record.get("model"), dict) else {}
    start = model.get("start") if isinstance(model.get("start"), dict) else {}
    bucket = record.get("bucket")
    regime = record.get("regime")
    names: list[tuple[str, Any]] = [("task", record.get("task")),
                                    ("language", record.get("language")),
                                    ("method", record.get("method"))]
    if not whole(record.get("k")):
        return f"k is {brief(record.get('k'))}, not a whole number"
    if not isinstance(bucket, dict):
        return f"bucket is {brief(bucket)}, not a bucket block"
    if bucket.get("strategy"):
        names.append(("bucket.strategy", bucket["strategy"]))
    if bucket.get("name"):
        names.append(("bucket.name", bucket["name"]))
    elif bucket.get("index") is not None:
        if not whole(bucket["index"]):
            return f"bucket.index is {brief(bucket['index'])}, not a whole number"
    elif not (isinstance(bucket.get("sha256"), str) and plain_name(bucket["sha256"][:12])):
        return f"bucket.sha256 is {brief(bucket.get('sha256'))}, not a hash"
    if isinstance(regime, dict):
        names.append(("regime.name", regime.get("name") or DEFAULT_REGIME))
        languages = regime.get("languages") or []
        if not isinstance(languages, list):
            return f"regime.languages is {brief(languages)}, not a list of languages"
        names += [(f"regime.languages[{i}]", lang) for i, lang in enumerate(languages)]
    sources = start.get("source_languages") or record.get("source_languages") or []
    if not isinstance(sources, list):
        return f"source_languages is {brief(sources)}, not a list of languages"
    names += [(f"source_languages[{i}]", lang) for i, lang in enumerate(sources)]
    for field_name, value in names:
        if not plain_name(value):
            return f"{field_name} is {brief(value)}, not {PLAIN}"
    arm = arm_of(record)
    if not ARM_NAME.match(arm):
        return f"its arm is {brief(arm)}, not a plain name"
    return None


RECORD_GLOB = "*/*/k*/*/*.json"  # <task>/<lang>/k<K>/<arm>/<bucket>.json


def record_files(root: str | Path) -> list[Path]:
    """The record-shaped files of a runs directory (sorted), by the layout alone."""
    return sorted(Path(root).glob(RECORD_GLOB))


def zero_shot_record_path(root: str | Path, task: str, language: str) -> Path:
    return Path(root) / task / language / "k0" / ZERO_SHOT_FILE


def predictions_path(record_path: str | Path) -> Path:
    """``X.json`` -> ``X.predictions.jsonl`` (the file beside a record)."""
    record_path = Path(record_path)
    return record_path.with_name(record_path.stem + PREDICTIONS_SUFFIX)


def zero_shot_predictions_path(root: str | Path, task: str, language: str) -> Path:
    """Where the analyses look for a language's zero-shot test predictions."""
    return Path(root) / task / language / "k0" / f"{ZERO_SHOT_STEM}{PREDICTIONS_SUFFIX}"


# --------------------------------------------------------------------------- identity

def identity_hash(identity: dict[str, Any]) -> str:
    """``run:<16 hex>``: the hash of a run's identity (sorted JSON)."""
    return "run:" + sha256_text(json.dumps(identity, sort_keys=True))[:16]


def _digest(value: Any) -> str | None:
    """The hex part of an identity hash (``run:...``, or ``sweep:...`` of earlier records)."""
    return value.split(":", 1)[-1] if isinstance(value, str) and value else None


def record_identity_hash(record: dict[str, Any]) -> str | None:
    """The identity hash a record was written with (any version), or None."""
    run = record.get("run") if isinstance(record.get("run"), dict) else {}
    sweep = record.get("sweep") if isinstance(record.get("sweep"), dict) else {}
    return run.get("hash") or sweep.get("config_hash")


def same_identity(record: dict[str, Any], identity_hash_: str) -> bool:
    return _digest(record_identity_hash(record)) == _digest(identity_hash_)


# versions whose run identities named a model by less than its content (a checkpoint by its
# record and head, a local causal LM by its config and weight files' names and sizes)
CONTENT_BLIND_VERSIONS = ("0.1.0", "0.2.0")


def differences(record: dict[str, Any], identity: dict[str, Any],
                metric: str | None = None) -> list[str]:
    """The identity fields in which ``record`` differs from ``identity`` (names only), and
    ``metric`` when the record was scored with another metric than the task's now."""
    scored = ["metric"] if metric is not None and record.get("metric") != metric else []
    old = (record.get("run") or {}).get("identity") if isinstance(record.get("run"), dict) \
        else None
    if not isinstance(old, dict):
        return ["settings (the record predates recorded identities)", *scored]
    keys = sorted(set(old) | set(identity))
    found = [key for key in keys if old.get(key) != identity.get(key)]
    version = record_version(record)
    if version in CONTENT_BLIND_VERSIONS:  # their fingerprints of a model were not its content
        found = [f"{key} (fsxlt {version} did not identify models by content)"
                 if key in ("start", "model") else key for key in found]
    return found + scored or ["identity hash"]


# --------------------------------------------------------------------------- records

def read_record(path: str | Path) -> dict[str, Any] | None:
    """A record file's JSON object, or ``None`` if missing, truncated, not an object, or
    holding a NaN or infinity (never written by fsxlt; a hand-edited score)."""
    try:
        raw = loads_strict(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError):  # JSONDecodeError, NotJsonNumber
        return None
    return raw if isinstance(raw, dict) else None


def _number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def is_finished(record: dict[str, Any] | None) -> bool:
    """An adapt record of a run that ended well: right format and ``status: ok`` (records
    that ``fsxlt adapt`` wrote before it recorded a status, with none, count too)."""
    return (isinstance(record, dict) and record.get("format") == RUN_FORMAT
            and record.get("status", "ok") == "ok")


def record_problem(record: dict[str, Any]) -> str | None:
    """What makes a record of this format unusable (a hand-edited or foreign one), in
    words, or None: its coordinates and scores must have the types fsxlt writes (task and
    language text; K and the bucket's index whole numbers; scores numbers or null; each
    epoch of its runs an epoch number and a dev score). The one check every reader of
    records applies before it uses one (``fsxlt report``, the analyses)."""
    checks: list[tuple[str, Any, tuple[type, ...], bool]] = [
        ("task", record.get("task"), (str,), False),
        ("language", record.get("language"), (str,), False),
        ("k", record.get("k"), (int,), False),
        ("test_score", record.get("test_score"), (int, float), True),
        ("dev_score", record.get("dev_score"), (int, float), True)]
    bucket = record.get("bucket")
    if isinstance(bucket, dict) and "index" in bucket:
        checks.append(("bucket.index", bucket.get("index"), (int,), True))
    for name, value, kinds, nullable in checks:
        if value is None and nullable:
            continue
        if isinstance(value, bool) or not isinstance(value, kinds):
            return f"{name} is {value!r}, not {'text' if kinds == (str,) else 'a number'}"
    for run in record.get("runs") or []:
        for epoch in (run.get("epochs") or []) if isinstance(run, dict) else [None]:
            if not (isinstance(epoch, dict) and _number(epoch.get("epoch"))
                    and (epoch.get("dev_score") is None or _number(epoch.get("dev_score")))):
                return f"an epoch of its runs is {epoch!r}, not an epoch and a dev score"
    return None


def is_complete(record: dict[str, Any] | None) -> bool:
    """A finished adapt record with a numeric test score (what counts in reports and as
    done; a ``--no-test`` run has none)."""
    return is_finished(record) and _number(record.get("test_score"))


def record_writer(record: dict[str, Any]) -> str:
    """Who wrote a record: ``sweep 'NAME'``, ``fsxlt adapt`` or ``a sweep`` (unnamed)."""
    run = record.get("run")
    if isinstance(run, dict) and run.get("writer"):
        return str(run["writer"])
    sweep = record.get("sweep")
    if not isinstance(sweep, dict):
        return ADAPT_WRITER
    return f"sweep {sweep['name']!r}" if sweep.get("name") else "a sweep"


def record_version(record: dict[str, Any]) -> str:
    """The fsxlt version that wrote a record (``unknown`` for records that lack it)."""
    run = record.get("run")
    if isinstance(run, dict) and run.get("fsxlt_version"):
        return str(run["fsxlt_version"])
    return str((record.get("versions") or {}).get("fsxlt") or "unknown")


def record_state(path: str | Path, identity_hash_: str, metric: str | None = None) -> str:
    """``done``, or what to do: ``missing``/``corrupt``/``error`` (run it), ``different``
    (a finished record of other settings, or scored with another ``metric`` than the
    task's now) or ``foreign`` (anything else there): refused unless replacing."""
    return _state(Path(path), read_record(path), identity_hash_, metric)


def _state(path: Path, record: dict[str, Any] | None, identity_hash_: str,
           metric: str | None) -> str:
    """:func:`record_state` of ``record``, the content of ``path`` (None: unreadable)."""
    if record is None:  # nothing fsxlt wrote: it writes whole JSON objects, atomically
        return "foreign" if path.exists() else "missing"
    if not _our_format(record):
        return "foreign"
    if record.get("status") == "error":
        return "error"
    if not (is_complete(record) or (is_finished(record) and _untested(record))):
        return "corrupt"
    if metric is not None and record.get("metric") != metric:
        return "different"
    return "done" if same_identity(record, identity_hash_) else "different"


def _untested(record: dict[str, Any]) -> bool:
    """A run asked to score no test set (``fsxlt adapt --no-test``): its identity names none,
    so it is finished without a test score."""
    run = record.get("run")
    identity = run.get("identity") if isinstance(run, dict) else None
    return isinstance(identity, dict) and "test" in identity and identity["test"] is None


def finish_record(record: dict[str, Any], *, identity: dict[str, Any], arm: str,
                  writer: str, sweep: str = "",
                  planned: Sequence[int] = ()) -> dict[str, Any]:
    """Mark an engine record finished: ``status: ok`` and its ``run`` block; ``planned``:
    the bucket indexes its sweep planned in its cell (``run.plan.buckets``: what a report
    expects of the cell; not in the identity)."""
    record["status"] = "ok"
    record["run"] = {"identity": identity, "hash": identity_hash(identity), "arm": arm,
                     "writer": writer, "sweep": sweep or None, "fsxlt_version": __version__}
    if planned:
        record["run"]["plan"] = {"buckets": sorted(int(i) for i in planned)}
    return record


def error_record(*, identity: dict[str, Any], arm: str, writer: str, sweep: str,
                 stage: str, error: str, traceback: list[str], coordinates: dict[str, Any],
                 ) -> dict[str, Any]:
    """The record a failed run leaves (rerun at the next start)."""
    return {"format": ERROR_FORMAT, "status": "error", "stage": stage, "error": error,
            "traceback": traceback, **coordinates,
            "run": {"identity": identity, "hash": identity_hash(identity), "arm": arm,
                    "writer": writer, "sweep": sweep or None, "fsxlt_version": __version__}}


def refusal(path: str | Path, record: dict[str, Any] | None, identity: dict[str, Any],
            count: int = 1, metric: str | None = None) -> str:
    """The one line that refuses to replace a finished record of other settings, or
    anything else at a record path (:func:`not_a_record`, :func:`_foreign`)."""
    more = f" (and {count - 1} more)" if count > 1 else ""
    if record is None or not _our_format(record):
        what = _foreign(record) if record is not None else not_a_record(path)
        return (f"{path}{more}: {what}, which this fsxlt ({__version__}) does "
                "not write; it is not replaced without --replace (or write to another "
                "runs directory)")
    return (f"{path}{more}: a finished record of other settings "
            f"({', '.join(differences(record, identity, metric))} differ), written by "
            f"{record_writer(record)}; pass --replace to replace it, or write to another "
            "runs directory")


def _our_format(record: dict[str, Any]) -> bool:
    """Whether a record is of a format this version writes (a run's or an error's)."""
    return record.get("format") in (RUN_FORMAT, ERROR_FORMAT)


def not_a_record(path: str | Path) -> str:
    """What a file at a record path that holds no JSON object is, in words (``a JSON
    array``, ``bytes that are not JSON``, ``a folder``): never a record fsxlt wrote."""
    path = Path(path)
    if path.is_dir():
        return "a folder"
    try:
        value = loads_strict(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError):
        return "an empty file" if path.is_file() and path.stat().st_size == 0 else \
            "bytes that are not a JSON record"
    if isinstance(value, dict):
        return _foreign(value)
    names = {list: "array", str: "string", bool: "true or false", type(None): "null"}
    return f"a JSON {names.get(type(value), 'number')}"


def _foreign(record: dict[str, Any]) -> str:
    """What a record of a format this version does not write is, in words."""
    fmt = record.get("format")
    what = f"a record of format {fmt}" if isinstance(fmt, str) else "a JSON object with no " \
        "record format"
    version = record_version(record)
    return what + ("" if version == "unknown" else f" written by fsxlt {version}")


# --------------------------------------------------------------------------- writing
