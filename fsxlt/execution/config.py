"""A sweep config (YAML) and its parsing into one :class:`TaskPlan` per task.

A sweep config (YAML) names a grid; :func:`~fsxlt.execution.expansion.expand` turns
it into one :class:`~fsxlt.execution.spec.RunSpec` per (task, language, K, bucket,
method) and one :class:`~fsxlt.execution.spec.ZeroShotSpec` per (task, language)::

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
    long_sentences: truncate        # a bucket sentence longer than max_seq_length: truncated
                                    # (the study's) or windows (each window a training row;
                                    # tagging tasks)
    optimizer: null                 # null: Adam, constant lr (the study's); or {name: adamw,
                                    # weight_decay: 0.05, warmup: 0.1, schedule: linear}
    label_all_tokens: false         # true (tagging): train on every wordpiece of a word
    qa_decoding: max-context        # extractive QA: BERT's max-context rule, or any-window
                                    # (fsxlt 0.4's)
    precision: auto                 # auto (bf16 on a GPU with native bf16, fp32 elsewhere),
                                    # bf16, fp16 (CUDA) or fp32 (fsxlt.models.precision);
                                    # resolved when the sweep starts, in every run's identity
                                    # unless fp32
    reading: null                   # null: each bucket set as it was read; study, default or
                                    # AXIS=CHOICE items: every set must have been read so
                                    # (docs/protocol.md#readings), else refused in one line
    eval_max_tokens: null           # wordpieces per evaluation batch (null: 32768 on a GPU,
                                    # 4096 on CPU); lower it when a run runs out of memory
    micro_batch: null               # encoder inputs per forward pass in training (null: 64):
                                    # dropout masks and padding are drawn per micro-batch, so
                                    # any other value is in the identity (new runs); lower it
                                    # for a whole study that runs out of memory in training
    dev_limit: null                 # N: each adapting run selects on a seeded sample of N
    test_limit: null                # dev examples, and is scored on one of N test examples
                                    # (a smoke test; in the run's identity)
    no_source_training: null        # or {encoder: NAME_OR_DIR, methods: [full]}: the ablation;
                                    # it may set its own lrs, max_epochs, patience,
                                    # batch_size, patience_from, long_sentences,
                                    # optimizer and label_all_tokens
    icl: null                       # or {model: NAME_OR_DIR, arms: [{}, {calibrate: true}]}:
                                    # in-context learning arms on the same buckets, and at
                                    # K=0 (fsxlt.execution.icl_config); methods: [] runs
                                    # them alone
    lm_lora: null                   # or {model: NAME_OR_DIR, arms: [{}]}: LoRA on the causal
                                    # LM, one run per bucket as fsxlt lm-adapt runs it
                                    # (fsxlt.execution.lm_config)
    shared_multi: true              # regime multi: train once for all its languages, each
                                    # selecting on its own dev set (false: once per language,
                                    # the same records; fsxlt.training.shared)
    regimes: [sequential]           # training regimes: sequential (the bucket alone), joint,
                                    # joint-concat, joint-macro, mixup (the source data too);
                                    # each (method, regime) is an arm: full, full+joint
    joint: null                     # the joint regimes' settings: {source_train: PATH (the
                                    # source language's train file, required), batch_size: 32,
                                    # steps_per_epoch: 20, target_repeat: 100,
                                    # epoch: steps|source-pass, target_batch_size: N,
                                    # alpha: 0.4 (mixup), languages: [..] and
                                    # multi_epochs: N (multi)}
    average_last: null              # N: also keep the average of the last N epochs' weights
                                    # (and the last epoch, per lr) as candidate models
    source_dev: null                # PATH: the source language's dev file, whose best epoch is
                                    # one more candidate (needs average_last)
    stop_early: null                # or {width: 2.0, compare: [full, lora], min_buckets: 10,
                                    # every: 5}: a cell stops once its answer is known
                                    # (fsxlt.execution.stopping; top level only)
    tasks:
      xnli: {languages: [de, fr], k: [1, 2, 4, 8]}
      marc: {methods: [full, fc, fc-pooler, cos-pooler, fc-reset-pooler]}

``batch_size``, ``patience_from``, ``long_sentences``, ``optimizer``
(:mod:`fsxlt.training.optim`) and ``label_all_tokens`` are the adapting protocol
(:class:`fsxlt.training.protocol.Protocol`); a run's identity holds them only
when they are not the study's defaults, so existing records keep theirs.
Likewise ``regimes`` (:mod:`fsxlt.training.regimes`): a sequential run's
identity names no regime, a joint run's holds the regime, its settings and the
content hash of ``source_train``; ``average_last`` and ``source_dev`` enter
the identity only when set. Source files are read in the task's format, in its
source language.

Every top-level key except ``out``, ``stop_early`` and ``tasks`` may be overridden per task;
``{task}`` in a path is replaced by the task name. Paths are relative to the
directory the sweep runs from. ``languages`` defaults to every language of
the task except the source language, ``k`` to the task's K values.

Records go to ``out`` (a runs directory, :mod:`fsxlt.study.runs`: layout, arms,
record format and the write rule), which must be a directory apart from
``buckets``. The arm of a run (its record's folder) comes from the run's
facts (:func:`fsxlt.study.runs.arm_name`): a start that is an fsxlt checkpoint is
source-trained, anything else (a pretrained encoder, as in
``no_source_training``) is the ``-nosource`` ablation.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from fsxlt.config_checks import (
    as_list,
    check_keys,
    document,
    flag,
    mapping,
    number,
    numbers,
    one_of,
    text,
)
from fsxlt.errors import FsxltError
from fsxlt.execution.icl_config import IclPlan, parse_icl
from fsxlt.execution.lm_config import LmPlan, parse_lm_lora
from fsxlt.execution.stopping import StopRule, parse_stop_rule
from fsxlt.fileio import parse_yaml
from fsxlt.models.precision import check_precision
from fsxlt.study.runs import DEFAULT_REGIME
from fsxlt.tasks import TaskSpec, get_task

if TYPE_CHECKING:
    from fsxlt.training.optim import OptimizerSettings

SETTINGS = ("buckets", "data_dir", "start", "methods", "n_buckets", "lrs", "seed",
            "max_epochs", "patience", "max_seq_length", "no_source_training",
            "method_options", "select_start", "predict", "batch_size", "patience_from",
            "icl", "regimes", "joint", "average_last", "source_dev", "long_sentences",
            "optimizer", "label_all_tokens", "qa_decoding", "lm_lora", "shared_multi",
            "precision", "eval_max_tokens", "micro_batch", "dev_limit", "test_limit",
            "reading")
# what no_source_training may set for its own arm, beside encoder and methods
NO_SOURCE_SETTINGS = ("lrs", "max_epochs", "patience", "batch_size", "patience_from",
                      "long_sentences", "optimizer", "label_all_tokens")

TOP_KEYS = {"name", "description", "out", "tasks", "stop_early", *SETTINGS}
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
    batch_size: int | None = None   # the adapting protocol (fsxlt.training.protocol.Protocol)
    patience_from: str = "start"
    long_sentences: str = "truncate"  # a long bucket sentence: truncated or in windows
    optimizer: OptimizerSettings | None = None  # None: the study's Adam, constant lr
    label_all_tokens: bool = False  # tagging: every wordpiece of a word scored in training
    qa_decoding: str = "max-context"  # extractive QA: how answers are decoded (fsxlt.models.spans)
    icl: IclPlan | None = None      # in-context learning arms (fsxlt.execution.icl_config)
    lm_lora: LmPlan | None = None   # LoRA arms on the causal LM (fsxlt.execution.lm_config)
    shared_multi: bool = True       # regime multi: one training for all its languages
    regimes: tuple[str, ...] = (DEFAULT_REGIME,)  # training regimes (fsxlt.training.regimes)
    regime_options: dict[str, Any] = field(default_factory=dict)  # joint: less source_train
    source_train: str | None = None  # the joint regimes' source train file
    source_dev: str | None = None    # the source dev file of the source-dev candidate
    average_last: int | None = None  # candidates: the average of the last N epochs
    task_ref: str = ""               # the task YAML the task came from ("": a built-in task)
    dev_limit: int | None = None     # a seeded sample of N target dev examples (fsxlt adapt)
    test_limit: int | None = None    # a seeded sample of N test examples (fsxlt adapt)
    whole_dev: bool = False          # a dev file the user named: read whole, never cut into
    whole_test: bool = False         # the task's parts (XQuAD's holdout); the same for test
    precision: str = "auto"          # as asked; resolve_precisions makes it the one used
    eval_max_tokens: int | None = None  # wordpieces per evaluation batch (None: the device's)
    micro_batch: int | None = None   # encoder inputs per training forward pass (None: 64;
    # in the identity where another)
    reading: Any = None              # the reading every bucket set must have been read by
    # (fsxlt.data.readings; None: any, each set's own)

    @property
    def spec(self) -> TaskSpec:
        """The task as the config named it: its YAML file's, never a built-in namesake."""
        return get_task(self.task_ref or self.task)

    def method(self, ref: str) -> Any:
        """The configured :class:`~fsxlt.methods.Method` for a method reference of this task."""
        from fsxlt.methods import get_method

        return get_method(ref, self.spec.kind, self.method_options.get(ref))


@dataclass(frozen=True)
class SweepConfig:
    """A parsed sweep config: where records go and one :class:`TaskPlan` per task."""

    out: str
    tasks: tuple[TaskPlan, ...]
    name: str = ""
    source: str = ""
    stop_early: StopRule | None = None  # fsxlt.execution.stopping: None runs every bucket

    def restrict(self, tasks: Sequence[str] | None = None, languages: Sequence[str] | None = None,
                 ks: Sequence[int] | None = None, methods: Sequence[str] | None = None,
                 regimes: Sequence[str] | None = None) -> SweepConfig:
        """Keep only the given tasks / languages / K values / methods / training regimes
        (command-line filters); a filter value that names nothing in the config is a
        one-line error, as a run that would run nothing is no run the user meant. A
        regime filter keeps the config's ``joint:`` settings (the regimes left read them
        as before), so the runs it keeps are the same runs, with the same records."""
        self._check_filters(tasks, languages, ks, methods, regimes)
        plans = []
        for plan in self.tasks:
            if tasks and plan.task not in tasks:
                continue
            plan = replace(
                plan,
                languages=tuple(x for x in plan.languages if not languages or x in languages),
                k=tuple(x for x in plan.k if not ks or x in ks),
                methods=tuple(x for x in plan.methods if not methods or x in methods),
                regimes=tuple(x for x in plan.regimes if not regimes or x in regimes),
                icl=None if plan.icl is None else plan.icl.only(methods),
                lm_lora=None if plan.lm_lora is None else plan.lm_lora.only(methods),
                no_source=(None if plan.no_source is None else dict(
                    plan.no_source, methods=[m for m in plan.no_source["methods"]
                                             if not methods or m in methods])))
            plans.append(plan)
        return replace(self, tasks=tuple(plans))

    def with_precision(self, resolve: Callable[[str], str]) -> SweepConfig:
        """Every task's precision as ``resolve`` makes it: the one its runs use (records
        and identities name it), from the one the config asks for."""
        return replace(self, tasks=tuple(replace(plan, precision=resolve(plan.precision))
                                         for plan in self.tasks))

    def _check_filters(self, tasks: Sequence[str] | None, languages: Sequence[str] | None,
                       ks: Sequence[int] | None, methods: Sequence[str] | None,
                       regimes: Sequence[str] | None = None) -> None:
        """Every filter value names something of the config (``--method``: an adapting
        method, the ablation's or an ICL arm)."""
        arms = {m for p in self.tasks for m in p.methods}
        arms |= {m for p in self.tasks for m in (p.no_source or {}).get("methods") or []}
        arms |= {a.name for p in self.tasks if p.icl is not None for a in p.icl.arms}
        arms |= {a.name for p in self.tasks if p.lm_lora is not None for a in p.lm_lora.arms}
        for wanted, have, what in (
                (tasks, {p.task for p in self.tasks}, "task"),
                (languages, {x for p in self.tasks for x in p.languages}, "language"),
                (ks, {k for p in self.tasks for k in p.k}, "K"),
                (methods, arms, "method"),
                (regimes, {r for p in self.tasks for r in p.regimes}, "regime")):
            for value in wanted or ():
                if value not in have:
                    raise FsxltError(f"{what} {value!r} is not in the sweep config "
                                     f"(has: {', '.join(sorted(map(str, have)))})")


def _task_plan(name: str, raw: dict[str, Any], top: dict[str, Any], where: str) -> TaskPlan:
    """One task's settings: its own, else the config's top-level ones, else the task's."""
    check_keys(raw, TASK_KEYS, where, f" for task {name}")
    spec = get_task(name)
    merged = {key: raw.get(key, top.get(key)) for key in SETTINGS}
    methods = ["full"] if merged["methods"] is None else [
        text(m, where, "methods") for m in as_list(merged["methods"], where, "methods")]
    options = _method_options(merged["method_options"], where)
    _check_starts(spec, methods, options, _path(merged, "start", where, name))
    no_source = _no_source(merged["no_source_training"], spec, options, where, name)
    unused = sorted(set(options) - set(methods) - set((no_source or {}).get("methods") or []))
    if unused:
        raise FsxltError(f"{where}: method_options for {', '.join(unused)}, which task {name} "
                         "does not run")
    if merged["predict"] is not None and spec.submission is None:
        raise FsxltError(f"{where}: predict writes a benchmark's submission files (FewCLUE, "
                         f"XGLUE); task {name} has none")
    n_buckets = merged["n_buckets"]
    languages = _languages(spec, raw, where)
    icl = parse_icl(merged["icl"], spec, languages, where,
                    lambda value, key: _expand(value, where, key, name))
    lm_lora = parse_lm_lora(merged["lm_lora"], spec, languages, where,
                            lambda value, key: _expand(value, where, key, name))
    return TaskPlan(
        task=spec.name, task_ref="" if name == spec.name else str(name),
        languages=languages, k=_ks(spec, raw, where),
        buckets=_path(merged, "buckets", where, name) or "buckets",
        data_dir=_path(merged, "data_dir", where, name),
        start=_path(merged, "start", where, name), methods=tuple(dict.fromkeys(methods)),
        n_buckets=None if n_buckets is None else number(n_buckets, where, "n_buckets", int, 1),
        no_source=no_source, method_options=options,
        select_start=flag(merged["select_start"], where, "select_start"),
        predict=_path(merged, "predict", where, name), icl=icl, lm_lora=lm_lora,
        shared_multi=merged["shared_multi"] is None or flag(merged["shared_multi"], where,
                                                            "shared_multi"),
        precision=check_precision(text(merged["precision"], where, "precision") or "auto",
                                  f"{where}: precision"),
        reading=_reading(merged["reading"], spec, where),
        **{key: None if merged[key] is None else number(merged[key], where, key, int, 1)
           for key in ("eval_max_tokens", "micro_batch", "dev_limit", "test_limit")},
        **_protocol(merged, spec, where), **_regimes(merged, where, name))


def _reading(value: Any, spec: TaskSpec, where: str) -> Any:
    """``reading``: null (each set as it was read) or the reading its sets must have:
    ``study``, ``default`` or ``AXIS=CHOICE`` items (fsxlt.data.readings)."""
    from fsxlt.data.readings import parse_reading

    if value is None:
        return None
    items = [text(item, where, "reading") for item in as_list(value, where, "reading")]
    return parse_reading(items, spec, f"{where}: reading")


def _languages(spec: TaskSpec, raw: dict[str, Any], where: str) -> tuple[str, ...]:
    """The task's target languages (default: all but its source language), each checked."""
    languages = [text(x, where, "languages") for x in as_list(raw.get("languages"), where,
                                                              "languages")]
    languages = languages or [x for x in spec.languages if x != spec.source_language]
    for lang in languages:
        spec.check_language(lang)
    return tuple(dict.fromkeys(languages))


def _ks(spec: TaskSpec, raw: dict[str, Any], where: str) -> tuple[int, ...]:
    """The task's K values (default: the task's), each checked."""
    ks = numbers(raw.get("k"), where, "k", int, 1) or list(spec.sampling.k_values)
    for k in ks:
        spec.check_k(k)
    return tuple(dict.fromkeys(ks))


def _path(merged: dict[str, Any], key: str, where: str, task: str) -> str | None:
    """A path setting with ``{task}`` filled in (None when absent)."""
    value = text(merged[key], where, key)
    return None if value is None else _expand(value, where, key, task)


def _check_starts(spec: TaskSpec, methods: list[str], options: dict[str, dict[str, Any]],
                  start: str | None) -> None:
    """Each method can start from ``start``: checked before any model loads (e.g. pet on a
    task without a pattern is refused here)."""
    from fsxlt.methods import get_method

    for method in methods:
        get_method(method, spec.kind, options.get(method)).check_start(spec, start)


def _no_source(raw: Any, spec: TaskSpec, options: dict[str, dict[str, Any]], where: str,
               task: str) -> dict[str, Any] | None:
    """The ``no_source_training`` arm: its encoder, methods and own protocol settings."""
    if raw is None:
        return None
    if not isinstance(raw, dict) or "encoder" not in raw:
        raise FsxltError(f"{where}: no_source_training needs {{encoder: NAME, methods: [...]}}")
    check_keys(raw, {"encoder", "methods", *NO_SOURCE_SETTINGS}, where,
               " in no_source_training")
    methods = [str(m) for m in as_list(raw.get("methods"), where, "methods")] or ["full"]
    encoder = _expand(str(raw["encoder"]), where, "encoder", task)
    _check_starts(spec, methods, options, encoder)
    return {"encoder": encoder, "methods": methods,
            "settings": _arm_settings(raw, spec, f"{where}: no_source_training")}


def _protocol(merged: dict[str, Any], spec: TaskSpec, where: str) -> dict[str, Any]:
    """The adapting hyperparameters and protocol of a task, as TaskPlan fields."""
    training = spec.training

    def pick(key: str, default: Any, minimum: int) -> int:
        value = default if merged[key] is None else merged[key]
        return number(value, where, key, int, minimum)

    return {"lrs": tuple(numbers(merged["lrs"], where, "lrs", float, 0, exclusive=True))
            or tuple(training.lr_grid),
            "seed": pick("seed", training.seed, 0),
            "max_epochs": pick("max_epochs", training.adapt_max_epochs, 1),
            "patience": pick("patience", training.adapt_patience, 1),
            "max_seq_length": pick("max_seq_length", training.max_seq_length, 8),
            "batch_size": _batch_size(merged["batch_size"], where),
            "patience_from": parse_patience_from(merged["patience_from"], where),
            "long_sentences": parse_long_sentences(merged["long_sentences"], spec, where),
            "optimizer": parse_optimizer_settings(merged["optimizer"], where),
            "label_all_tokens": parse_label_all_tokens(merged["label_all_tokens"], spec, where),
            "qa_decoding": parse_qa_decoding(merged["qa_decoding"], spec,
                                             f"{where}: qa_decoding")}


def parse_qa_decoding(value: Any, spec: TaskSpec, what: str) -> str:
    """``qa_decoding``: null (max-context, BERT's) or a rule of
    :data:`fsxlt.models.spans.QA_DECODING`, for an extractive QA task only."""
    from fsxlt.models.spans import DEFAULT_QA_DECODING, check_qa_decoding

    if value is None:
        return DEFAULT_QA_DECODING
    if not spec.is_qa:
        raise FsxltError(f"{what} is for extractive QA tasks; {spec.name} is "
                         f"{spec.kind.replace('_', ' ')}")
    return check_qa_decoding(value if isinstance(value, str) else repr(value), what)


def _regimes(merged: dict[str, Any], where: str, task: str) -> dict[str, Any]:
    """The training regimes of a task, their settings (``joint``), ``average_last`` and
    ``source_dev``, as TaskPlan fields; each regime checked with its settings."""
    from fsxlt.training.regimes import OPTION_REGIMES, parse_regime

    names = tuple(dict.fromkeys(
        text(x, where, "regimes") or "" for x in as_list(merged["regimes"], where, "regimes")))
    options = mapping(merged["joint"], where, "joint", " ({source_train: PATH, ...})")
    source_train = text(options.pop("source_train", None), where, "joint.source_train")
    joined = [name for name in names
              if not parse_regime(name, None, f"{where}: regimes").is_sequential]
    for name in joined:
        parse_regime(name, options, f"{where}: joint")
    if (options or source_train is not None) and not joined:
        raise FsxltError(f"{where}: joint sets the joint regimes, but regimes has none of "
                         "them (regimes: [sequential, joint] runs both)")
    for key, value in options.items():
        users = OPTION_REGIMES.get(key)
        if value is not None and users and not set(users) & set(joined):
            raise FsxltError(f"{where}: joint.{key} is for regime(s) {', '.join(users)}; "
                             f"regimes has {', '.join(joined)}")
    if joined and source_train is None:
        raise FsxltError(f"{where}: regimes {', '.join(joined)} train on the source data "
                         "beside the bucket; give its file as joint: {source_train: PATH}")
    no_source = merged["no_source_training"]
    if joined and (merged["batch_size"] is not None or isinstance(no_source, dict)
                   and no_source.get("batch_size") is not None):
        raise FsxltError(f"{where}: batch_size (the mini-batch protocol) is for the "
                         f"sequential regime; {', '.join(joined)} make their own batches "
                         "(joint: {batch_size: N})")
    source_train = _expand(source_train, where, "joint.source_train", task) if joined \
        else None
    source_dev = _path(merged, "source_dev", where, task)
    if source_dev is not None and merged["average_last"] is None:
        raise FsxltError(f"{where}: source_dev selects the source-dev candidate of "
                         "average_last; set average_last: N too")
    for key, path in (("joint.source_train", source_train), ("source_dev", source_dev)):
        if path is not None and not Path(path).is_file():
            raise FsxltError(f"{where}: {key}: {path} not found")
    return {"regimes": names or (DEFAULT_REGIME,), "regime_options": options,
            "source_train": source_train, "source_dev": source_dev,
            "average_last": None if merged["average_last"] is None else number(
                merged["average_last"], where, "average_last", int, 1)}


def _batch_size(value: Any, where: str) -> int | None:
    """``batch_size``: null (the whole bucket, one step per epoch) or an integer >= 1."""
    return None if value is None else number(value, where, "batch_size", int, 1)


def parse_patience_from(value: Any, where: str) -> str:
    """``patience_from``: ``start`` (the default) or ``first-improvement``."""
    from fsxlt.training.protocol import PATIENCE_FROM

    return PATIENCE_FROM[0] if value is None else one_of(value, PATIENCE_FROM, where,
                                                          "patience_from")


def parse_long_sentences(value: Any, spec: TaskSpec, where: str) -> str:
    """``long_sentences``: ``truncate`` (the default, the study's) or ``windows`` (tagging)."""
    from fsxlt.models.encoding import DEFAULT_LONG_SENTENCES, LONG_SENTENCES, check_long_sentences

    if value is None:
        return DEFAULT_LONG_SENTENCES
    return check_long_sentences(one_of(value, LONG_SENTENCES, where, "long_sentences"), spec,
                                f"{where}: long_sentences")


def parse_optimizer_settings(value: Any, where: str) -> OptimizerSettings | None:
    """``optimizer``: null (Adam, constant lr: the study's) or a mapping of
    :func:`fsxlt.training.optim.parse_optimizer`; None when it is the study's."""
    from fsxlt.training.optim import parse_optimizer

    settings = parse_optimizer(value, where)
    return None if settings.is_default else settings


def parse_label_all_tokens(value: Any, spec: TaskSpec, where: str) -> bool:
    """``label_all_tokens``: false (the default, the study's) or true (tagging tasks)."""
    from fsxlt.models.encoding import check_label_all_tokens

    return check_label_all_tokens(flag(value, where, "label_all_tokens"), spec,
                                  f"{where}: label_all_tokens")


def _arm_settings(raw: dict[str, Any], spec: TaskSpec, where: str) -> dict[str, Any]:
    """The settings an arm (no_source_training) gives itself, as TaskPlan fields."""
    out: dict[str, Any] = {}
    if raw.get("lrs") is not None:
        out["lrs"] = tuple(numbers(raw["lrs"], where, "lrs", float, 0, exclusive=True))
    for key in ("max_epochs", "patience"):
        if raw.get(key) is not None:
            out[key] = number(raw[key], where, key, int, 1)
    if "batch_size" in raw:
        out["batch_size"] = _batch_size(raw["batch_size"], where)
    if raw.get("patience_from") is not None:
        out["patience_from"] = parse_patience_from(raw["patience_from"], where)
    if raw.get("long_sentences") is not None:
        out["long_sentences"] = parse_long_sentences(raw["long_sentences"], spec, where)
    if raw.get("optimizer") is not None:
        out["optimizer"] = parse_optimizer_settings(raw["optimizer"], where)
    if raw.get("label_all_tokens") is not None:
        out["label_all_tokens"] = parse_label_all_tokens(raw["label_all_tokens"], spec, where)
    return out


def _expand(value: str, where: str, key: str, task: str) -> str:
    """A path setting with ``{task}`` filled in; ``{lang}`` stays for ``predict`` (filled per
    language); any other placeholder is a one-line error."""
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


def _apply_overrides(raw: dict[str, Any], task_raw: dict[str, Any],
                     overridden: set[str]) -> None:
    """A command-line flag beats per-task settings and the no-source arm's own."""
    for key in overridden & set(SETTINGS):
        task_raw.pop(key, None)
    for holder in (task_raw, raw):
        no_source = holder.get("no_source_training")
        if isinstance(no_source, dict) and overridden & set(NO_SOURCE_SETTINGS):
            holder["no_source_training"] = {k: v for k, v in no_source.items()
                                            if k not in overridden}


def parse_config(raw: Any, where: str = "<sweep config>",
                 overrides: dict[str, Any] | None = None) -> SweepConfig:
    """Build a :class:`SweepConfig` from a mapping; ``overrides`` replace top-level settings."""
    raw = document(raw, where, "a sweep config")
    overridden = {k for k, v in (overrides or {}).items() if v is not None}
    raw.update({key: overrides[key] for key in overridden} if overrides else {})
    check_keys(raw, TOP_KEYS, where)
    tasks = raw.get("tasks")
    if not isinstance(tasks, dict) or not tasks:
        raise FsxltError(f"{where}: 'tasks' must map task names to their settings")
    plans = []
    for name, task_raw in tasks.items():
        task_raw = mapping(task_raw, where, f"the settings of task {name}",
                           " (languages: [...], k: [...])")
        _apply_overrides(raw, task_raw, overridden)
        plans.append(_task_plan(str(name), task_raw, raw, where))
    return SweepConfig(out=text(raw.get("out"), where, "out") or "runs", tasks=tuple(plans),
                       name=text(raw.get("name"), where, "name") or "", source=where,
                       stop_early=parse_stop_rule(raw.get("stop_early"), where))


def load_config(path: str | Path, overrides: dict[str, Any] | None = None) -> SweepConfig:
    """Read a sweep config YAML file (see the module docstring)."""
    path = Path(path)
    if not path.is_file():
        raise FsxltError(f"{path}: sweep config not found")
    raw = parse_yaml(path.read_text(encoding="utf-8"), str(path))
    return parse_config(raw, str(path), overrides)
