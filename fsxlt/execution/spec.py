"""A run's spec (:class:`RunSpec`), its identity and the plan of a sweep.

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
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fsxlt.data.examples import DEV_SAMPLE_KEY, TEST_SAMPLE_KEY
from fsxlt.errors import FsxltError
from fsxlt.execution.config import TaskPlan
from fsxlt.fileio import sha256_file, sha256_text
from fsxlt.identity import pinned
from fsxlt.models.precision import DEFAULT_RESOLVED
from fsxlt.sampling.store import bucket_name
from fsxlt.study.runs import (
    ADAPT_WRITER,
    DEFAULT_REGIME,
    arm_name,
    identity_hash,
    record_path,
    start_fingerprint,
    start_source_languages,
)
from fsxlt.tasks import get_task
from fsxlt.training.protocol import DEFAULT_MICRO_BATCH

# the seeded samples --dev-limit / --test-limit take: fsxlt lm-adapt's dev sample and
# fsxlt icl's test sample at their default seed 0
EVAL_SAMPLE_KEYS = {"dev": DEV_SAMPLE_KEY.format(seed=0), "test": TEST_SAMPLE_KEY.format(seed=0)}


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
    long_sentences: str = "truncate"  # a long bucket sentence: truncated (the study's) or windows
    optimizer: str = ""            # OptimizerSettings.describe() as sorted JSON ("": the study's)
    label_all_tokens: bool = False  # tagging: every wordpiece of a word scored in training
    qa_decoding: str = "max-context"  # extractive QA: how answers are decoded (fsxlt.models.spans)
    regime: str = DEFAULT_REGIME   # the training regime (fsxlt.training.regimes)
    regime_options: str = "{}"     # its settings (Regime.changes() less the name), sorted JSON
    source_train_path: str = ""    # the joint regimes' source train file
    companion_buckets: str = "{}"  # multi: the other languages' buckets, {lang: path} JSON
    shared_languages: tuple[str, ...] = ()  # multi trained once: every language it trains
    source_dev_path: str = ""      # the source dev file of the source-dev candidate
    average_last: int | None = None  # candidates: the average of the last N epochs
    task_ref: str = ""             # the task YAML of a task that came from one
    dev_split: str = "dev"         # the part of dev_path read ("": the whole file, as named)
    test_split: str = "test"       # the part of test_path read ("": the whole file)
    dev_limit: int | None = None   # a seeded sample of N dev examples (read_eval)
    test_limit: int | None = None  # a seeded sample of N test examples
    precision: str = "fp32"        # the precision the run uses (fsxlt.models.precision)
    reading: str = ""              # how its dev and test files are read: the set's reading
    # (fsxlt.data.readings), its non-default choices as sorted JSON ("": the default)
    eval_max_tokens: int | None = None  # wordpieces per evaluation batch: memory only, not
    # in the identity (None: the engine's default)
    micro_batch: int | None = None      # inputs per training forward pass (None: 64); in
    # the identity where another, since it changes what a run trains
    planned_buckets: tuple[int, ...] = ()  # the cell's bucket indexes the sweep runs (the
    # record's run.plan: what a report expects; not in the identity)

    def read_eval(self, which: str) -> list[Any]:
        """The run's dev or test examples, read as planned: the task's part of the file
        (or the whole file the user named), then, where a limit is set, the seeded sample of
        that many that ``fsxlt icl`` and ``fsxlt lm-adapt`` take with seed 0 (so the arms
        score the same test examples and pair in ``report --compare``)."""
        from fsxlt.data.examples import seeded_sample
        from fsxlt.sampling.set_files import read_data_file

        path, split, limit = ((self.dev_path, self.dev_split, self.dev_limit) if which == "dev"
                              else (self.test_path, self.test_split, self.test_limit))
        examples = read_data_file(path, self.task_spec, self.language, split or None,
                                  self.load_reading())
        return seeded_sample(examples, limit, EVAL_SAMPLE_KEYS[which])

    def load_reading(self) -> Any:
        """The reading its dev and test files are read by (:mod:`fsxlt.data.readings`)."""
        from fsxlt.data.readings import DEFAULT_READING, make_reading

        return make_reading(json.loads(self.reading)) if self.reading else DEFAULT_READING

    @property
    def task_spec(self) -> Any:
        return get_task(self.task_ref or self.task)

    @property
    def identity(self) -> dict[str, Any]:
        return json.loads(self.identity_json)

    def load_method(self) -> Any:
        """The configured method this run adapts with."""
        from fsxlt.methods import get_method

        return get_method(self.method_ref or self.method, self.task_spec.kind,
                          json.loads(self.method_options))

    @property
    def arm(self) -> str:
        regime = arm_regime_label({"regime": self.regime,
                                   "regime_options": self.regime_options}, self.language)
        return arm_name(self.method, self.source_training, self.select_start,
                        self.source_languages, self.strategy, regime)

    def load_companions(self) -> dict[str, Any]:
        """A multi run's other buckets, each checked against its planned hash."""
        from fsxlt.sampling.store import read_bucket

        out = {}
        for lang, (path, sha) in json.loads(self.companion_buckets).items():
            out[lang] = read_bucket(path)
            if out[lang].sha256 != sha:
                raise FsxltError(f"{path} changed since the sweep was planned")
        return out

    def load_optimizer(self) -> Any:
        """The :class:`~fsxlt.training.optim.OptimizerSettings` this run trains with."""
        from fsxlt.training.optim import OptimizerSettings

        return OptimizerSettings(**json.loads(self.optimizer or "{}"))

    def load_regime(self) -> Any:
        """The :class:`~fsxlt.training.regimes.Regime` this run trains in."""
        from fsxlt.training.regimes import parse_regime

        return parse_regime(self.regime, json.loads(self.regime_options), self.id)

    @property
    def bucket_name(self) -> str:
        return self.name or bucket_name(self.index)

    @property
    def id(self) -> str:
        return f"{self.task}/{self.language}/k{self.k}/{self.arm}/{self.bucket_name}"

    @property
    def group_key(self) -> tuple[str, str, str, str]:
        """Runs sharing a key share one worker: data tokenized and weights loaded once. A
        multi run trained once for its languages shares the worker of their runs."""
        if self.shared_languages:
            return (self.task, "multi:" + ",".join(self.shared_languages), self.start, "")
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
    """A sweep's runs and K=0 records; in a dry run also the starts that do not exist yet and
    every other input that is missing (``gaps``)."""

    runs: list[RunSpec] = field(default_factory=list)  # and the ICL arms' runs (IclSweepRun,
    # fsxlt.execution.icl_runs), which answer what a sweep asks of a run the same way
    zero_shot: list[ZeroShotSpec] = field(default_factory=list)
    missing_starts: list[tuple[str, str]] = field(default_factory=list)  # (task, start)
    notes: list[str] = field(default_factory=list)  # one line each, for the command to say
    gaps: list[Any] = field(default_factory=list)  # a dry run: each missing input's refusal

    def start_missing(self, run: RunSpec) -> bool:
        """Whether the run's start is one of the missing ones (it cannot run yet)."""
        return (run.task, run.start) in self.missing_starts


class Hashes:
    """Content hashes, each file read once per plan."""

    def __init__(self) -> None:
        self.cache: dict[str, str] = {}
        self.source_cache: dict[str, tuple[str, ...]] = {}
        # starts a dry run plans that do not exist yet: local checkpoints still to
        # source-train (a sweep's start is never a hub model), never looked up on the hub
        self.missing: set[str] = set()

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

    def bucket(self, path: Path) -> str:
        """A bucket file's identity (:func:`fsxlt.sampling.store.bucket_hash`)."""
        from fsxlt.sampling.store import bucket_file_hash

        key = f"bucket:{path}"
        if key not in self.cache:
            self.cache[key] = bucket_file_hash(Path(path))
        return self.cache[key]

    def start(self, start: str) -> str:
        if start in self.missing:
            return f"missing:{start}"
        key = f"start:{start}"
        if key not in self.cache:
            self.cache[key] = start_fingerprint(start)
        return self.cache[key]

    def sources(self, start: str) -> tuple[str, ...]:
        """The start checkpoint's source languages, read once per plan."""
        if start in self.missing:
            return ()
        if start not in self.source_cache:
            self.source_cache[start] = tuple(start_source_languages(start))
        return self.source_cache[start]


def sweep_writer(name: str) -> str:
    """How a sweep's records name their writer."""
    return f"sweep {name!r}" if name else "fsxlt sweep"


def regime_settings(plan: TaskPlan, regime: str, hashes: Hashes, adapting: bool = True,
                    ) -> tuple[dict[str, Any], dict[str, Any]]:
    """A run's training regime and candidate models: its identity entries and its RunSpec
    fields. Only what is not the study's enters the identity (a sequential run without
    candidates has none), so every earlier identity stays as it was. ``adapting`` False
    (a K=0 run, which trains nothing): none."""
    from fsxlt.training.regimes import parse_regime

    identity: dict[str, Any] = {}
    fields: dict[str, Any] = {}
    if not adapting:
        return identity, fields
    if regime != DEFAULT_REGIME:
        changes = {key: value for key, value in parse_regime(
            regime, plan.regime_options, plan.task).changes().items() if key != "name"}
        if plan.source_train is None:
            raise FsxltError(f"{plan.task}: regime {regime} trains on the source data beside "
                             "the bucket; it needs a source train file")
        identity.update(regime=regime, regime_options=changes,
                        source_train=hashes.file(Path(plan.source_train)))
        fields.update(regime=regime, regime_options=json.dumps(changes, sort_keys=True),
                      source_train_path=plan.source_train)
    if plan.average_last is not None:
        identity["average_last"] = fields["average_last"] = plan.average_last
        if plan.source_dev is not None:
            identity["source_dev"] = hashes.file(Path(plan.source_dev))
            fields["source_dev_path"] = plan.source_dev
    return identity, fields


def arm_regime_label(fields: dict[str, Any], lang: str) -> str:
    """How a run's arm names its regime (multi with the languages that train together)."""
    from fsxlt.training.regimes import parse_regime

    name = fields.get("regime", DEFAULT_REGIME)
    if name == DEFAULT_REGIME:
        return name
    return parse_regime(name, json.loads(fields["regime_options"])).with_language(lang).label


def _companions(plan: TaskPlan, regime: str, lang: str, cell: tuple[int, int],
                bucket: Path | None, hashes: Hashes, method: Any,
                ) -> tuple[dict[str, Any], dict[str, Any]]:
    """A multi run's other buckets: its identity entries and RunSpec fields (with the
    languages it trains once for, when it does)."""
    companions = companion_buckets(plan, regime, lang, *cell, bucket, hashes)
    if not companions:
        return {}, {}
    fields: dict[str, Any] = {"companion_buckets": json.dumps(companions, sort_keys=True)}
    if plan.shared_multi and _shares_training(plan, regime, method):
        fields["shared_languages"] = tuple(sorted({lang, *companions}))
    return {"companions": {other: sha for other, (_path, sha) in companions.items()}}, fields


def _shares_training(plan: TaskPlan, regime: str, method: Any) -> bool:
    """Whether the multi runs of this regime and method train once for all their languages
    (:func:`fsxlt.training.shared.shares_training`)."""
    from fsxlt.training.regimes import parse_regime
    from fsxlt.training.shared import shares_training

    return shares_training(parse_regime(regime, plan.regime_options, plan.task), method)


def companion_buckets(plan: TaskPlan, regime: str, lang: str, k: int, index: int,
                      bucket: Path | None, hashes: Hashes) -> dict[str, tuple[str, str]]:
    """A multi run's other buckets: the same K and bucket index in each other language,
    from the set beside the run's own (``<root>/<task>/<lang>/k<K>``), with their hashes."""
    from fsxlt.sampling.set_files import set_files
    from fsxlt.sampling.store import MANIFEST, bucket_dir
    from fsxlt.training.regimes import parse_regime

    if regime != "multi" or bucket is None:
        return {}
    languages = parse_regime(regime, plan.regime_options, plan.task).languages
    root = Path(bucket).parent.parent.parent.parent
    out = {}
    for other in sorted(set(languages) - {lang}):
        plan.spec.check_language(other)
        directory = bucket_dir(root, plan.task, other, k)
        if not (directory / MANIFEST).is_file():
            raise FsxltError(f"{directory}: no bucket set for {plan.task}/{other}/k{k}, which "
                             f"regime multi trains beside {lang}")
        held = set_files(directory, hashes.text, bucket_digest=hashes.bucket).buckets
        found = [path for i, _name, path, _dev in held if i == index]
        if not found:
            raise FsxltError(f"{directory}: no bucket {index} for regime multi's {other}")
        out[other] = (str(found[0]), hashes.bucket(found[0]))
    return out


def check_eval_sets(runs: list[RunSpec], sizes: dict[tuple, int] | None = None) -> None:
    """Read the dev and test sets the runs will read (each file once, as planned), so that a
    file that cannot be used (unreadable, or empty once read) is one line before anything
    is written, not an error record in an output directory made for nothing. A test file
    that is the dev set a run selects on is refused too (:mod:`fsxlt.sampling.apart`).
    ``sizes``, where given, gets each set's number of examples, by (which, path, split,
    limit): a dry run costs the runs with them without reading the sets again."""
    from fsxlt.sampling.apart import check_apart

    seen: set[tuple[str, str, str, int | None]] = set()
    pairs: set[tuple[str, str, str, str, str]] = set()
    for run in runs:
        pair = (run.dev_path, run.dev_split, run.test_path, run.test_split, run.reading)
        if run.dev_path and run.test_path and pair not in pairs:
            pairs.add(pair)
            known = {run.dev_path: run.identity.get("dev"),
                     run.test_path: run.identity.get("test")}  # hashed when planned
            check_apart(run.dev_path, run.test_path, run.task_spec, run.language,
                        reading=run.load_reading(), dev_split=run.dev_split or None,
                        test_split=run.test_split or None,
                        digest=lambda path, known=known: known.get(str(path))
                        or sha256_file(path))
        for which, path, split, limit in (
                ("dev", run.dev_path, run.dev_split, run.dev_limit),
                ("test", run.test_path, run.test_split, run.test_limit)):
            if not path or (which, path, split, limit) in seen:
                continue
            seen.add((which, path, split, limit))
            examples = run.read_eval(which)
            if sizes is not None:
                sizes[(which, path, split, limit)] = len(examples)
            if not examples:
                raise FsxltError(f"{path}: the {which} set of {run.id} holds no example to "
                                 f"{'select on' if which == 'dev' else 'score'}")


def _reading(plan: TaskPlan, has_test: bool) -> dict[str, Any]:
    """What the identity adds of how the dev and test files are read, only where it is not
    the default (earlier identities stay): a limit, or a named file of a task that holds
    parts of its files out read whole."""
    cuts = plan.spec.reads_parts
    found: dict[str, Any] = {}
    if plan.dev_limit is not None:
        found["dev_limit"] = plan.dev_limit
    if plan.test_limit is not None and has_test:
        found["test_limit"] = plan.test_limit
    if cuts and plan.whole_dev:
        found["dev_part"] = "whole"
    if cuts and plan.whole_test and has_test:
        found["test_part"] = "whole"
    return found


def _check_regime_here(plan: TaskPlan, regime: str, method: Any) -> None:
    """A regime the run cannot train (mixup on QA, on a method with its own head...) is
    refused while runs are planned, in the engine's words, before anything is written."""
    from fsxlt.training.protocol import Protocol, check_regime
    from fsxlt.training.regimes import parse_regime

    check_regime(parse_regime(regime, plan.regime_options, plan.task),
                 Protocol(batch_size=plan.batch_size), plan.source_train is not None,
                 plan.spec, method)


def plan_precision(plan: TaskPlan) -> str:
    """The precision a plan's runs use: as resolved for the sweep's device
    (:func:`fsxlt.execution.executors.resolve_precisions`), else ``auto`` on this machine."""
    from fsxlt.models.precision import concrete
    from fsxlt.training.checkpoint import resolve_device

    return concrete(plan.precision, resolve_device(None))


def build_run(plan: TaskPlan, lang: str, k: int, bucket_id: tuple[int, str], ref: str,
              start: str, source_training: bool, bucket: Path | None, dev: Path,
              test: Path | None, out: Path, hashes: Hashes, sweep: str | None,
              strategy: str = "", regime: str = DEFAULT_REGIME,
              reading: Any = None) -> RunSpec:
    """One run's spec; ``sweep`` is the sweep's name (None: ``fsxlt adapt`` writes it).
    ``bucket`` None: the K=0 run of a method that scores untrained (no bucket, k 0).
    ``reading``: its set's reading (:mod:`fsxlt.data.readings`), by which its dev and
    test files are read; in the identity where it is not the default."""
    index, name = bucket_id
    bucket_sha = hashes.bucket(bucket) if bucket is not None else sha256_text("")
    method = plan.method(ref)
    identity = {
        "task": plan.task, "language": lang, "k": k, "index": index, "method": method.name,
        "source_training": source_training, "start": hashes.start(start),
        "bucket": bucket_sha, "dev": hashes.file(dev),
        "test": hashes.file(test) if test is not None else None,
        "lrs": list(plan.lrs), "seed": plan.seed, "max_epochs": plan.max_epochs,
        "patience": plan.patience, "max_seq_length": plan.max_seq_length,
    }
    if method.identity() is not None:  # the study's methods keep their old identity
        identity["method_info"] = method.identity()  # version and options rerun on change
    if plan.select_start:
        identity["select_start"] = True
    if plan.batch_size is not None:  # the study's protocol keeps its old identity
        identity["batch_size"] = plan.batch_size
    if plan.patience_from != "start":
        identity["patience_from"] = plan.patience_from
    if plan.long_sentences != "truncate" and bucket is not None:
        identity["long_sentences"] = plan.long_sentences
    if plan.optimizer is not None and not plan.optimizer.is_default and bucket is not None:
        identity["optimizer"] = plan.optimizer.describe()
    if plan.label_all_tokens and bucket is not None:
        identity["label_all_tokens"] = True
    if plan.spec.is_qa:  # the decoding rule changes every QA score (fsxlt 0.4 had one rule)
        identity["qa_decoding"] = plan.qa_decoding
    if bucket is not None and plan.micro_batch not in (None, DEFAULT_MICRO_BATCH):
        identity["micro_batch"] = plan.micro_batch  # dropout and padding per micro-batch
    identity.update(_reading(plan, test is not None))
    if reading is not None and not reading.is_default:  # the default: earlier identities
        identity["reading"] = reading.to_dict()
        from fsxlt.data.readings import check_arm_reading

        check_arm_reading(method.name, reading, plan.task)
    precision = plan_precision(plan)
    if precision != DEFAULT_RESOLVED:  # fp32 runs keep the identity of fsxlt < 0.8's
        identity["precision"] = precision
    predict = Path(plan.predict.replace("{lang}", lang)) if plan.predict else None
    if predict is not None:
        if not predict.is_file():
            raise FsxltError(f"{predict}: file to predict for {plan.task} not found")
        from fsxlt.data.readers import check_file_language

        check_file_language(predict, lang, "the file to predict")
        identity["predict"] = hashes.file(predict)
    if bucket is not None and regime != DEFAULT_REGIME:  # refused now, not in the worker
        _check_regime_here(plan, regime, method)
    regime_identity, regime_fields = regime_settings(plan, regime, hashes, bucket is not None)
    identity.update(regime_identity)
    companion_identity, companion_fields = _companions(plan, regime, lang, (k, index), bucket,
                                                       hashes, method)
    identity.update(companion_identity)
    regime_fields.update(companion_fields)
    sources = hashes.sources(start) if source_training else ()
    arm = arm_name(method.name, source_training, plan.select_start, sources, strategy,
                   arm_regime_label(regime_fields, lang))
    stem = name or bucket_name(index)
    return RunSpec(task=plan.task, language=lang, k=k, index=index, method=method.name,
                   source_training=source_training,
                   start=start if start in hashes.missing else pinned(start),  # hub: commit
                   bucket_path=str(bucket) if bucket is not None else "",
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
                   dev_split="" if plan.whole_dev and plan.spec.reads_parts else "dev",
                   test_split="" if plan.whole_test and plan.spec.reads_parts else "test",
                   dev_limit=plan.dev_limit, test_limit=plan.test_limit, precision=precision,
                   reading=json.dumps(reading.to_dict(), sort_keys=True)
                   if reading is not None and not reading.is_default else "",
                   eval_max_tokens=plan.eval_max_tokens, micro_batch=plan.micro_batch,
                   writer=ADAPT_WRITER if sweep is None else sweep_writer(sweep),
                   batch_size=plan.batch_size, patience_from=plan.patience_from,
                   long_sentences=plan.long_sentences, task_ref=plan.task_ref,
                   optimizer=json.dumps(plan.optimizer.describe(), sort_keys=True)
                   if plan.optimizer is not None else "",
                   label_all_tokens=plan.label_all_tokens, qa_decoding=plan.qa_decoding,
                   **regime_fields)
