"""Sweep configs, their expansion into runs, and the resume check.

A sweep config (YAML) names a grid; :func:`expand` turns it into one
:class:`RunSpec` per (task, language, K, bucket, method) and one
:class:`ZeroShotSpec` per (task, language)::

    out: runs                       # RUNS_DIR: runs/<task>/<lang>/k<K>/<arm>/<index>.json
    buckets: buckets                # bucket store root (fsxlt sample)
    data_dir: data/{task}           # target dev/test files, the task's {split}-{lang} pattern
    start: ckpt/{task}-mbert        # source-trained checkpoint (fsxlt source-train)
    methods: [full]                 # adapting methods (fsxlt methods; or package.module:Class)
    method_options: {}              # e.g. {lora: {rank: 4}}: options per method
    select_start: false             # true: the start model competes as epoch 0
    predict: null                   # a file to predict: each run writes its predictions
                                    # beside its record, in FewCLUE's or XGLUE's format
    n_buckets: 40                   # bucket indices 0..n-1 (null: every bucket of the set)
    lrs: null                       # null: the task's lr grid
    seed: null                      # null: the task's seed (one seed for all buckets)
    max_epochs: null                # null: the task's default (50)
    patience: null                  # null: the task's default (10)
    max_seq_length: null            # null: the task's default (128)
    batch_size: null                # null: one Adam step per epoch on the whole bucket (the
                                    # study's); N: shuffled mini-batches of N, a step each
    patience_from: start            # or first-improvement: patience counts from the first
                                    # epoch whose dev score beats the first epoch's
    no_source_training: null        # or {encoder: NAME_OR_DIR, methods: [full]}: the ablation;
                                    # it may set its own lrs, max_epochs, patience,
                                    # batch_size and patience_from (its protocol)
    tasks:
      xnli: {languages: [de, fr], k: [1, 2, 4, 8]}
      marc: {methods: [full, fc, fc-pooler, cos-pooler, fc-reset-pooler]}

``batch_size`` and ``patience_from`` are the adapting protocol
(:class:`fsxlt.training.adapt.Protocol`); a run's identity holds them only
when they are not the study's defaults, so existing records keep theirs.

Every top-level key except ``out`` and ``tasks`` may be overridden per task;
``{task}`` in a path is replaced by the task name. Paths are relative to the
directory the sweep runs from. ``languages`` defaults to every language of
the task except the source language, ``k`` to the task's K values.

Records go to ``out`` (a runs directory, :mod:`fsxlt.runs`: layout, arms,
record format and the write rule), which must be a directory apart from
``buckets``. The arm of a run (its record's folder) comes from the run's
facts (:func:`fsxlt.runs.arm_name`): a start that is an fsxlt checkpoint is
source-trained, anything else (a pretrained encoder, as in
``no_source_training``) is the ``-nosource`` ablation.

Resume. Every run gets an identity over everything that determines its
result: the run's coordinates and hyperparameters, and the *content* hashes
of its bucket file, its dev and test files and its starting checkpoint
(metadata and head weights; a pretrained encoder is identified by its name).
A record with that identity is done; a missing, truncated, corrupt or error
record runs (again); a finished record of another identity is never
replaced unless the sweep is told to (``--replace``).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from fsxlt.errors import DataFormatError, FsxltError
from fsxlt.fileio import parse_yaml, sha256_file, sha256_text
from fsxlt.methods import METHODS
from fsxlt.runs import (
    ADAPT_WRITER,
    CHECKPOINT_FILE,
    ZERO_SHOT_FORMAT,
    arm_name,
    identity_hash,
    is_checkpoint,
    record_path,
    source_languages_of,
    start_fingerprint,
    start_source_languages,
    zero_shot_record_path,
)
from fsxlt.sampling.store import bucket_name
from fsxlt.tasks import TaskSpec, get_task

SETTINGS = ("buckets", "data_dir", "start", "methods", "n_buckets", "lrs", "seed",
            "max_epochs", "patience", "max_seq_length", "no_source_training",
            "method_options", "select_start", "predict", "batch_size", "patience_from")
# what no_source_training may set for its own arm, beside encoder and methods
NO_SOURCE_SETTINGS = ("lrs", "max_epochs", "patience", "batch_size", "patience_from")

TOP_KEYS = {"name", "description", "out", "tasks", *SETTINGS}
TASK_KEYS = {"languages", "k", *SETTINGS}


@dataclass(frozen=True)
class TaskPlan:
    """The resolved settings of one task of a sweep."""

    task: str
    languages: tuple[str, ...]
    k: tuple[int, ...]
    buckets: str
    data_dir: str | None
    start: str | None
    methods: tuple[str, ...]
    n_buckets: int | None
    lrs: tuple[float, ...]
    seed: int
    max_epochs: int
    patience: int
    max_seq_length: int
    no_source: dict[str, Any] | None
    method_options: dict[str, dict[str, Any]] = field(default_factory=dict)
    select_start: bool = False
    predict: str | None = None
    batch_size: int | None = None   # the adapting protocol (fsxlt.training.adapt.Protocol)
    patience_from: str = "start"

    def method(self, ref: str) -> Any:
        """The configured :class:`~fsxlt.methods.Method` for a method reference of this task."""
        from fsxlt.methods import get_method

        return get_method(ref, get_task(self.task).kind, self.method_options.get(ref))


@dataclass(frozen=True)
class SweepConfig:
    """A parsed sweep config: where records go and one :class:`TaskPlan` per task."""

    out: str
    tasks: tuple[TaskPlan, ...]
    name: str = ""
    source: str = ""

    def restrict(self, tasks: Sequence[str] | None = None, languages: Sequence[str] | None = None,
                 ks: Sequence[int] | None = None, methods: Sequence[str] | None = None,
                 ) -> SweepConfig:
        """Keep only the given tasks / languages / K values / methods (command-line filters)."""
        plans = []
        for plan in self.tasks:
            if tasks and plan.task not in tasks:
                continue
            plan = replace(
                plan,
                languages=tuple(x for x in plan.languages if not languages or x in languages),
                k=tuple(x for x in plan.k if not ks or x in ks),
                methods=tuple(x for x in plan.methods if not methods or x in methods),
                no_source=(None if plan.no_source is None else dict(
                    plan.no_source, methods=[m for m in plan.no_source["methods"]
                                             if not methods or m in methods])))
            plans.append(plan)
        for wanted, have, what in ((tasks, {p.task for p in self.tasks}, "task"),
                                   (languages, {x for p in self.tasks for x in p.languages},
                                    "language")):
            for value in wanted or ():
                if value not in have:
                    raise FsxltError(f"{what} {value!r} is not in the sweep config "
                                     f"(has: {', '.join(sorted(have))})")
        return replace(self, tasks=tuple(plans))


def _as_list(value: Any, where: str, key: str) -> list:
    if value is None:
        return []
    if isinstance(value, (str, int, float)) and not isinstance(value, bool):
        return [value]
    if not isinstance(value, list):
        raise FsxltError(f"{where}: {key} must be a list")
    return value


def _number(value: Any, where: str, key: str, kind: type, minimum: float | None = None,
            exclusive: bool = False) -> Any:
    """``value`` as ``kind`` (int or float), or a one-line error naming the key.

    YAML gives numbers as numbers; a string, list, bool or a fractional value
    for an integer setting is a mistake worth naming, not silently coerced.
    """
    ok = isinstance(value, (int, float)) and not isinstance(value, bool)
    if kind is int and ok and float(value) != int(value):
        ok = False
    if not ok and kind is float and isinstance(value, str):  # YAML reads 1e-5 as a string
        try:
            value, ok = float(value), True
        except ValueError:
            ok = False
    if not ok:
        expected = "an integer" if kind is int else "a number"
        raise FsxltError(f"{where}: {key} must be {expected}, got {value!r}")
    value = kind(value)
    if minimum is not None and (value <= minimum if exclusive else value < minimum):
        bound = f"> {minimum}" if exclusive else f">= {minimum}"
        raise FsxltError(f"{where}: {key} must be {bound}, got {value}")
    return value


def _text(value: Any, where: str, key: str) -> str | None:
    """A string setting (a path or a name), or None when absent."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        raise FsxltError(f"{where}: {key} must be a string, got {value!r}")
    return str(value)


def _task_plan(name: str, raw: dict[str, Any], top: dict[str, Any], where: str) -> TaskPlan:
    from fsxlt.methods import get_method

    unknown = set(raw) - TASK_KEYS
    if unknown:
        raise FsxltError(f"{where}: unknown key(s) for task {name}: {', '.join(sorted(unknown))}")
    spec = get_task(name)
    merged = {key: raw.get(key, top.get(key)) for key in SETTINGS}
    default_langs = [x for x in spec.languages if x != spec.source_language]
    languages = [_text(x, where, "languages") for x in _as_list(raw.get("languages"), where,
                                                               "languages")] or default_langs
    for lang in languages:
        spec.check_language(lang)
    ks = [_number(x, where, "k", int) for x in _as_list(raw.get("k"), where, "k")] \
        or list(spec.sampling.k_values)
    for k in ks:
        spec.check_k(k)
    methods = ["full"] if merged["methods"] is None else [
        _text(m, where, "methods") for m in _as_list(merged["methods"], where, "methods")]
    options = _method_options(merged["method_options"], where)
    start = _text(merged["start"], where, "start")
    start = None if start is None else _expand(start, where, "start", name)
    for method in methods:  # before any model loads: e.g. pet on a task without a pattern
        get_method(method, spec.kind, options.get(method)).check_start(spec, start)
    no_source = merged["no_source_training"]
    if no_source is not None:
        if not isinstance(no_source, dict) or "encoder" not in no_source:
            raise FsxltError(f"{where}: no_source_training needs {{encoder: NAME, methods: [...]}}")
        unknown = sorted(set(no_source) - {"encoder", "methods", *NO_SOURCE_SETTINGS})
        if unknown:
            raise FsxltError(f"{where}: unknown key(s) in no_source_training: "
                             f"{', '.join(map(str, unknown))} (it takes encoder, methods, "
                             f"{', '.join(NO_SOURCE_SETTINGS)})")
        ns_methods = [str(m) for m in _as_list(no_source.get("methods"), where, "methods")] \
            or ["full"]
        for method in ns_methods:
            get_method(method, spec.kind, options.get(method)).check_start(
                spec, _expand(str(no_source["encoder"]), where, "encoder", name))
        no_source = {"encoder": _expand(str(no_source["encoder"]), where, "encoder", name),
                     "methods": ns_methods,
                     "settings": _arm_settings(no_source, f"{where}: no_source_training")}
    unused = sorted(set(options) - set(methods) - set((no_source or {}).get("methods") or []))
    if unused:
        raise FsxltError(f"{where}: method_options for {', '.join(unused)}, which task {name} "
                         "does not run")
    lrs = [_number(x, where, "lrs", float, 0, exclusive=True)
           for x in _as_list(merged["lrs"], where, "lrs")]
    training = spec.training

    def pick(key: str, default: Any, minimum: int) -> int:
        value = default if merged[key] is None else merged[key]
        return _number(value, where, key, int, minimum)

    def path(key: str) -> str | None:
        value = _text(merged[key], where, key)
        return None if value is None else _expand(value, where, key, task=name)

    n_buckets = merged["n_buckets"]
    n_buckets = None if n_buckets is None else _number(n_buckets, where, "n_buckets", int, 1)
    if merged["predict"] is not None and spec.submission is None:
        raise FsxltError(f"{where}: predict writes a benchmark's submission files (FewCLUE, "
                         f"XGLUE); task {name} has none")
    return TaskPlan(
        task=spec.name, languages=tuple(dict.fromkeys(languages)), k=tuple(dict.fromkeys(ks)),
        buckets=path("buckets") or "buckets", data_dir=path("data_dir"), start=path("start"),
        methods=tuple(dict.fromkeys(methods)),
        n_buckets=n_buckets,
        lrs=tuple(lrs) or tuple(training.lr_grid),
        seed=pick("seed", training.seed, 0),
        max_epochs=pick("max_epochs", training.adapt_max_epochs, 1),
        patience=pick("patience", training.adapt_patience, 1),
        max_seq_length=pick("max_seq_length", training.max_seq_length, 8),
        no_source=no_source, method_options=options,
        select_start=_flag(merged["select_start"], where, "select_start"),
        predict=path("predict"),
        batch_size=_batch_size(merged["batch_size"], where),
        patience_from=_patience_from(merged["patience_from"], where))


def _batch_size(value: Any, where: str) -> int | None:
    """``batch_size``: null (the whole bucket, one step per epoch) or an integer >= 1."""
    return None if value is None else _number(value, where, "batch_size", int, 1)


def _patience_from(value: Any, where: str) -> str:
    """``patience_from``: ``start`` (the default) or ``first-improvement``."""
    from fsxlt.training.adapt import PATIENCE_FROM

    if value is None:
        return PATIENCE_FROM[0]
    if value not in PATIENCE_FROM:
        raise FsxltError(f"{where}: patience_from must be one of {', '.join(PATIENCE_FROM)}, "
                         f"got {value!r}")
    return str(value)


def _arm_settings(raw: dict[str, Any], where: str) -> dict[str, Any]:
    """The settings an arm (no_source_training) gives itself, as TaskPlan fields."""
    out: dict[str, Any] = {}
    if raw.get("lrs") is not None:
        out["lrs"] = tuple(_number(x, where, "lrs", float, 0, exclusive=True)
                           for x in _as_list(raw["lrs"], where, "lrs"))
    for key in ("max_epochs", "patience"):
        if raw.get(key) is not None:
            out[key] = _number(raw[key], where, key, int, 1)
    if "batch_size" in raw:
        out["batch_size"] = _batch_size(raw["batch_size"], where)
    if raw.get("patience_from") is not None:
        out["patience_from"] = _patience_from(raw["patience_from"], where)
    return out


def _expand(value: str, where: str, key: str, task: str) -> str:
    """A path setting with ``{task}`` filled in; ``{lang}`` stays for ``predict`` (filled per
    language); any other placeholder is a one-line error."""
    import re

    allowed = {"task", "lang"} if key == "predict" else {"task"}
    for name in re.findall(r"\{([^{}]*)\}", value):
        if name not in allowed:
            shown = ", ".join("{" + a + "}" for a in sorted(allowed))
            raise FsxltError(f"{where}: {key} may hold {shown}, not {{{name}}}")
    return value.replace("{task}", task)


def _method_options(raw: Any, where: str) -> dict[str, dict[str, Any]]:
    """``method_options``: a mapping from method reference to its option mapping."""
    if raw is None:
        return {}
    if not isinstance(raw, dict) or not all(isinstance(v, dict) for v in raw.values()):
        raise FsxltError(f"{where}: method_options must map methods to their options, "
                         "e.g. {lora: {rank: 4}}")
    return {str(k): dict(v) for k, v in raw.items()}


def _flag(value: Any, where: str, key: str) -> bool:
    if value is None:
        return False
    if not isinstance(value, bool):
        raise FsxltError(f"{where}: {key} must be true or false, got {value!r}")
    return value


def parse_config(raw: Any, where: str = "<sweep config>",
                 overrides: dict[str, Any] | None = None) -> SweepConfig:
    """Build a :class:`SweepConfig` from a mapping; ``overrides`` replace top-level settings."""
    if not isinstance(raw, dict):
        raise FsxltError(f"{where}: a sweep config must be a YAML mapping")
    raw = dict(raw)
    for key, value in (overrides or {}).items():
        if value is not None:
            raw[key] = value
    unknown = set(raw) - TOP_KEYS
    if unknown:
        raise FsxltError(f"{where}: unknown key(s): {', '.join(sorted(unknown))}")
    tasks = raw.get("tasks")
    if not isinstance(tasks, dict) or not tasks:
        raise FsxltError(f"{where}: 'tasks' must map task names to their settings")
    overridden = {k for k, v in (overrides or {}).items() if v is not None}
    plans = []
    for name, task_raw in tasks.items():
        if task_raw is not None and not isinstance(task_raw, dict):
            raise FsxltError(f"{where}: the settings of task {name} must be a mapping "
                             f"(languages: [...], k: [...]), got {task_raw!r}")
        task_raw = dict(task_raw or {})
        for key in overridden & set(SETTINGS):  # a command-line flag beats per-task settings
            task_raw.pop(key, None)
        for holder in (task_raw, raw):  # ... and the settings of the no-source arm
            no_source = holder.get("no_source_training")
            if isinstance(no_source, dict) and overridden & set(NO_SOURCE_SETTINGS):
                holder["no_source_training"] = {k: v for k, v in no_source.items()
                                                if k not in overridden}
        plans.append(_task_plan(str(name), task_raw, raw, where))
    return SweepConfig(out=_text(raw.get("out"), where, "out") or "runs", tasks=tuple(plans),
                       name=_text(raw.get("name"), where, "name") or "", source=where)


def load_config(path: str | Path, overrides: dict[str, Any] | None = None) -> SweepConfig:
    """Read a sweep config YAML file (see the module docstring)."""
    path = Path(path)
    if not path.is_file():
        raise FsxltError(f"{path}: sweep config not found")
    raw = parse_yaml(path.read_text(encoding="utf-8"), str(path))
    return parse_config(raw, str(path), overrides)


# --------------------------------------------------------------------------- expansion

@dataclass(frozen=True)
class RunSpec:
    """One adapt run: everything a worker needs, and the hash that identifies its result."""

    task: str
    language: str
    k: int
    index: int
    method: str
    source_training: bool
    start: str
    bucket_path: str
    bucket_sha256: str
    dev_path: str
    test_path: str
    lrs: tuple[float, ...]
    seed: int
    max_epochs: int
    patience: int
    max_seq_length: int
    record_path: str
    config_hash: str
    sweep_name: str = ""
    name: str = ""            # the bucket's name when it has one (FewCLUE's splits: 00 ... all)
    method_ref: str = ""      # how the worker loads the method (name or package.module:Class)
    method_options: str = "{}"  # its options, as sorted JSON
    select_start: bool = False
    predict_path: str = ""    # a file to predict (FewCLUE/XGLUE submission files)
    source_languages: tuple[str, ...] = ()  # the start's source (empty: English or none)
    strategy: str = ""        # the shot-selection strategy of the bucket set (fsxlt select)
    identity_json: str = "{}"  # what determines the result (config_hash is its hash)
    writer: str = ""          # who writes the record: "sweep 'NAME'" or "fsxlt adapt"
    batch_size: int | None = None  # the adapting protocol (None, "start": the study's)
    patience_from: str = "start"

    @property
    def identity(self) -> dict[str, Any]:
        return json.loads(self.identity_json)

    def load_method(self) -> Any:
        """The configured method this run adapts with."""
        from fsxlt.methods import get_method

        return get_method(self.method_ref or self.method, get_task(self.task).kind,
                          json.loads(self.method_options))

    @property
    def arm(self) -> str:
        return arm_name(self.method, self.source_training, self.select_start,
                        self.source_languages, self.strategy)

    @property
    def bucket_name(self) -> str:
        return self.name or bucket_name(self.index)

    @property
    def id(self) -> str:
        return f"{self.task}/{self.language}/k{self.k}/{self.arm}/{self.bucket_name}"

    @property
    def group_key(self) -> tuple[str, str, str, str]:
        """Runs sharing a key share one worker: data tokenized and weights loaded once."""
        return (self.task, self.language, self.start, self.test_path)


@dataclass(frozen=True)
class ZeroShotSpec:
    """The K=0 record of one (task, language), taken from the checkpoint's source-run record."""

    task: str
    language: str
    record_path: str
    record: dict[str, Any]


@dataclass
class Plan:
    runs: list[RunSpec] = field(default_factory=list)
    zero_shot: list[ZeroShotSpec] = field(default_factory=list)


class _Hashes:
    """Content hashes, each file read once per plan."""

    def __init__(self) -> None:
        self.cache: dict[str, str] = {}
        self.source_cache: dict[str, tuple[str, ...]] = {}

    def file(self, path: Path) -> str:
        key = str(path)
        if key not in self.cache:
            self.cache[key] = sha256_file(path)
        return self.cache[key]

    def text(self, path: Path) -> str:
        key = f"text:{path}"
        if key not in self.cache:
            self.cache[key] = sha256_text(path.read_text(encoding="utf-8"))
        return self.cache[key]

    def start(self, start: str) -> str:
        key = f"start:{start}"
        if key not in self.cache:
            self.cache[key] = start_fingerprint(start)
        return self.cache[key]

    def sources(self, start: str) -> tuple[str, ...]:
        """The start checkpoint's source languages, read once per plan."""
        if start not in self.source_cache:
            self.source_cache[start] = tuple(start_source_languages(start))
        return self.source_cache[start]


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


def _bucket_files(plan: TaskPlan, lang: str, k: int, hashes: _Hashes) -> SetFiles:
    """The set's bucket files the sweep runs, each checked against its manifest's hash."""
    from fsxlt.sampling.store import MANIFEST, bucket_dir

    directory = bucket_dir(plan.buckets, plan.task, lang, k)
    if not (directory / MANIFEST).is_file():
        raise FsxltError(f"{directory}: no bucket set for {plan.task}/{lang}/k{k} (draw it "
                         "with fsxlt sample, or fsxlt buckets import-published/import-fewclue)")
    return set_files(directory, hashes, plan.n_buckets)


def set_files(directory: Path, hashes: _Hashes, n_buckets: int | None = None,
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


def _own_file(directory: Path, entry: dict[str, Any] | None, hashes: _Hashes,
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


def _zero_shot(plan: TaskPlan, lang: str, out: Path, hashes: _Hashes) -> ZeroShotSpec | None:
    if not is_checkpoint(plan.start):
        return None
    meta = json.loads((Path(str(plan.start)) / CHECKPOINT_FILE).read_text(encoding="utf-8"))
    if meta.get("task") != plan.task:  # e.g. an XNLI checkpoint starting OCNLI: its zh
        return None                    # zero-shot score is XNLI's, not this task's
    scores = (meta.get("zero_shot") or {}).get(lang)
    if not scores:
        return None
    record = {
        "format": ZERO_SHOT_FORMAT, "status": "ok", "task": plan.task, "language": lang,
        "k": 0, "method": "zero-shot", "metric": meta.get("metric"),
        "test_score": scores.get("score"), "test": scores,
        "start": {"fingerprint": hashes.start(str(plan.start)), "encoder": meta.get("encoder"),
                  "source_config_hash": meta.get("config_hash")},
        "selection": meta.get("selection"), "oracle": (meta.get("oracle") or {}).get(lang),
        "source_languages": source_languages_of(meta),
    }
    if scores.get("in_source"):
        record["in_source"] = True  # trained on this language: not a zero-shot score
    return ZeroShotSpec(plan.task, lang, str(zero_shot_record_path(out, plan.task, lang)),
                        record)


def expand(config: SweepConfig) -> Plan:
    """Every run of the sweep (sorted by task, language, K, arm, bucket) and the K=0 records.

    Reads bucket manifests and hashes input files; missing inputs are one-line errors.
    """
    hashes = _Hashes()
    out = Path(config.out)
    result = Plan()
    for plan in config.tasks:
        spec = get_task(plan.task)
        starts: list[tuple[str, bool, tuple[str, ...], TaskPlan]] = []
        if plan.methods:
            if plan.start is None:
                raise FsxltError(f"{plan.task}: the sweep needs start (a source-trained "
                                 "checkpoint)")
            if not Path(plan.start).exists():
                raise FsxltError(f"{plan.start}: starting checkpoint for {plan.task} not found")
            starts.append((plan.start, is_checkpoint(plan.start), plan.methods, plan))
        if plan.no_source and plan.no_source["methods"]:
            encoder = plan.no_source["encoder"]
            starts.append((encoder, is_checkpoint(encoder), tuple(plan.no_source["methods"]),
                           replace(plan, **plan.no_source.get("settings", {}))))
        for lang in plan.languages:
            zero = _zero_shot(plan, lang, out, hashes)
            if zero is not None:
                result.zero_shot.append(zero)
            for k in plan.k:
                files = _bucket_files(plan, lang, k, hashes)
                test = files.test or data_file(spec, plan.data_dir, "test", lang)
                shared_dev = None
                if any(dev is None for *_rest, dev in files.buckets):
                    shared_dev = _shared_dev(spec, plan, lang, files)
                for start, source_training, methods, arm_plan in starts:
                    for method in methods:
                        for index, name, bucket, dev in files.buckets:
                            result.runs.append(_run(arm_plan, lang, k, (index, name), method,
                                                    start, source_training, bucket,
                                                    dev or shared_dev, test, out, hashes,
                                                    config.name, files.strategy))
    result.runs.sort(key=lambda r: (r.task, r.language, r.k, r.arm, r.index))
    return result


def _shared_dev(spec: TaskSpec, plan: TaskPlan, lang: str, files: SetFiles) -> Path:
    """The dev set of buckets without their own: the remaining dev set, or the task's file."""
    if spec.sampling.split == "dev":
        if files.remaining is None:
            raise FsxltError(f"{files.directory}: no remaining dev set (dev-remaining.jsonl); "
                             f"{plan.task} samples buckets from dev and selects models on the "
                             "dev examples in no bucket")
        return files.remaining
    return data_file(spec, plan.data_dir, "dev", lang)


def sweep_writer(name: str) -> str:
    """How a sweep's records name their writer."""
    return f"sweep {name!r}" if name else "fsxlt sweep"


def _run(plan: TaskPlan, lang: str, k: int, bucket_id: tuple[int, str], ref: str, start: str,
         source_training: bool, bucket: Path, dev: Path, test: Path | None, out: Path,
         hashes: _Hashes, sweep: str | None, strategy: str = "") -> RunSpec:
    """One run's spec; ``sweep`` is the sweep's name (None: ``fsxlt adapt`` writes it)."""
    index, name = bucket_id
    bucket_sha = hashes.text(bucket)
    method = plan.method(ref)
    identity = {
        "task": plan.task, "language": lang, "k": k, "index": index, "method": method.name,
        "source_training": source_training, "start": hashes.start(start),
        "bucket": bucket_sha, "dev": hashes.file(dev),
        "test": hashes.file(test) if test is not None else None,
        "lrs": list(plan.lrs), "seed": plan.seed, "max_epochs": plan.max_epochs,
        "patience": plan.patience, "max_seq_length": plan.max_seq_length,
    }
    if method.name not in METHODS:  # the study's methods (no options) keep their old identity
        identity["method_info"] = method.describe()  # version and options rerun on change
    if plan.select_start:
        identity["select_start"] = True
    if plan.batch_size is not None:  # the study's protocol keeps its old identity
        identity["batch_size"] = plan.batch_size
    if plan.patience_from != "start":
        identity["patience_from"] = plan.patience_from
    predict = Path(plan.predict.replace("{lang}", lang)) if plan.predict else None
    if predict is not None:
        if not predict.is_file():
            raise FsxltError(f"{predict}: file to predict for {plan.task} not found")
        identity["predict"] = hashes.file(predict)
    sources = hashes.sources(start) if source_training else ()
    arm = arm_name(method.name, source_training, plan.select_start, sources, strategy)
    stem = name or bucket_name(index)
    return RunSpec(task=plan.task, language=lang, k=k, index=index, method=method.name,
                   source_training=source_training, start=start, bucket_path=str(bucket),
                   bucket_sha256=bucket_sha, dev_path=str(dev),
                   test_path=str(test) if test is not None else "",
                   lrs=plan.lrs, seed=plan.seed, max_epochs=plan.max_epochs,
                   patience=plan.patience, max_seq_length=plan.max_seq_length,
                   record_path=str(record_path(out, plan.task, lang, k, arm, stem)),
                   config_hash=identity_hash(identity),
                   sweep_name=sweep or "",
                   name=name, method_ref=ref,
                   method_options=json.dumps(method.config, sort_keys=True),
                   select_start=plan.select_start,
                   predict_path=str(predict) if predict is not None else "",
                   source_languages=sources, strategy=strategy,
                   identity_json=json.dumps(identity, sort_keys=True),
                   writer=ADAPT_WRITER if sweep is None else sweep_writer(sweep),
                   batch_size=plan.batch_size, patience_from=plan.patience_from)


# --------------------------------------------------------------------------- fsxlt adapt

def adapt_plan(task: str, language: str, bucket: Path, out: Path, *, start: str,
               method: str = "full", method_options: dict[str, Any] | None = None,
               lrs: Sequence[float] | None = None, seed: int | None = None,
               max_epochs: int | None = None, patience: int | None = None,
               max_seq_length: int | None = None, select_start: bool = False,
               predict: Path | None = None, dev: Path | None = None, test: Path | None = None,
               no_test: bool = False, data_dir: Path | None = None,
               batch_size: int | None = None, patience_from: str | None = None,
               ) -> list[RunSpec]:
    """The runs of ``fsxlt adapt``: one per bucket of ``bucket`` (a set directory or one
    bucket file), built as a sweep builds them, so both write the same records.

    ``batch_size`` / ``patience_from``: the adapting protocol (None: the study's).
    Defaults come from the task; each bucket selects on ``dev`` if given, else its own
    dev set (fixed splits), the task's dev file under ``data_dir`` (tasks sampled from
    train) or the set's remaining dev examples (tasks sampled from dev).
    """
    spec = get_task(task)
    spec.check_language(language)
    training = spec.training
    grid = tuple(float(x) for x in (lrs or training.lr_grid))
    if any(not lr > 0 for lr in grid):
        raise FsxltError(f"learning rates must be > 0, got {list(grid)}")
    for name, value in (("--max-epochs", max_epochs), ("--patience", patience),
                        ("--batch-size", batch_size)):
        if value is not None and value < 1:
            raise FsxltError(f"{name} must be at least 1, got {value}")
    plan = TaskPlan(
        task=spec.name, languages=(language,), k=(), buckets=str(bucket),
        data_dir=str(data_dir) if data_dir is not None else None, start=start,
        methods=(method,), n_buckets=None, lrs=grid,
        seed=training.seed if seed is None else int(seed),
        max_epochs=training.adapt_max_epochs if max_epochs is None else int(max_epochs),
        patience=training.adapt_patience if patience is None else int(patience),
        max_seq_length=(training.max_seq_length if max_seq_length is None
                        else int(max_seq_length)),
        no_source=None, method_options={method: dict(method_options)} if method_options else {},
        select_start=select_start, predict=str(predict) if predict is not None else None,
        batch_size=batch_size, patience_from=_patience_from(patience_from, "--patience-from"))
    plan.method(method).check_start(spec, start)  # an unknown method, a bad option, a task
    # or start it cannot use (pet: no pattern, no masked-LM head): one line, before anything
    hashes = _Hashes()
    files = _adapt_files(Path(bucket), hashes)
    set_task, set_lang, k = files.coordinates
    if (set_task, set_lang) != (spec.name, language):
        raise FsxltError(f"{bucket}: buckets of {set_task}/{set_lang}, not "
                         f"{spec.name}/{language}")
    for path, what in ((dev, "--dev"), (test, "--test")):
        if path is not None and not Path(path).is_file():
            raise FsxltError(f"{path}: {what} file not found")
    test_path = None if no_test else (
        test or (data_file(spec, plan.data_dir, "test", language) if data_dir is not None
                 else files.test))
    if test_path is None and not no_test:
        raise FsxltError("no target test set: pass --test FILE, --data-dir DIR or --no-test")
    start_is_checkpoint = is_checkpoint(start)
    runs = []
    for index, name, path, own_dev in files.buckets:
        chosen_dev = dev or own_dev or _adapt_dev(spec, plan, language, files)
        runs.append(_run(plan, language, k, (index, name), method, start, start_is_checkpoint,
                         path, Path(chosen_dev), Path(test_path) if test_path else None,
                         Path(out), hashes, None, files.strategy))
    return runs


def _adapt_files(bucket: Path, hashes: _Hashes) -> SetFiles:
    """The files ``fsxlt adapt --bucket`` names: a whole set, a bucket of a set, or a
    bucket file on its own."""
    from fsxlt.sampling.store import MANIFEST, read_bucket

    if bucket.is_dir():
        if not (bucket / MANIFEST).is_file():
            raise FsxltError(f"{bucket}: not a bucket set directory (no {MANIFEST})")
        return set_files(bucket, hashes)
    if not bucket.exists():
        raise FsxltError(f"{bucket}: file not found")
    if (bucket.parent / MANIFEST).is_file():
        return set_files(bucket.parent, hashes, only=bucket.name)
    loose = read_bucket(bucket)
    strategy = loose.meta.get("strategy") if isinstance(loose.meta.get("strategy"), dict) \
        else {}
    return SetFiles(bucket.parent, [(loose.index, str(loose.meta.get("name") or ""), bucket,
                                     None)],
                    None, str(strategy.get("name") or ""),
                    coordinates=(loose.task, loose.language, loose.k))


def _adapt_dev(spec: TaskSpec, plan: TaskPlan, lang: str, files: SetFiles) -> Path:
    """The dev set of a bucket without its own, when ``--dev`` is not given."""
    if plan.data_dir is not None and spec.sampling.split != "dev":
        return data_file(spec, plan.data_dir, "dev", lang)
    if files.remaining is not None:
        return files.remaining
    if spec.sampling.split == "dev":
        raise FsxltError(f"{files.directory}: no dev-remaining.jsonl beside the bucket; task "
                         f"{spec.name} samples buckets from dev, so pass --dev FILE explicitly")
    raise FsxltError("no target dev set: pass --dev FILE or --data-dir DIR")
