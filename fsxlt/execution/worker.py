"""Running one group of runs in one process: the code every executor calls.

A group of ICL runs (:mod:`fsxlt.execution.icl_runs`: one task, language,
causal LM and test set) loads the causal LM once and runs each bucket as
``fsxlt icl`` does; the rest of this docstring is about adapting groups.

A *group* is every pending run of one (task, language, starting model). The
worker loads the start once, reads and tokenizes the target test set once,
and builds one :class:`~fsxlt.training.AdaptEngine`; when the dev set
changes (XNLI/PAWS-X: one per K, the dev examples the K's buckets left
over) it swaps the engine's dev set and keeps everything else (a different
``max_seq_length`` gets a new engine, with the start's weights restored).
The source data of the joint regimes and of the source-dev candidate is read
once per group and given to the engine (``set_source``) when a run needs
other source data than the one before it (:class:`SourceSets`).
It calls ``engine.adapt`` for each run; training itself is the engine's job.

Every run ends in exactly one atomically written record (format and rule:
:mod:`fsxlt.study.runs`): the engine's record finished with ``status: ok`` and its
``run`` block (identity, arm, writer, fsxlt version), or an error record
(``status: error``, the error text and the identity) when anything fails,
after which the worker goes on with the next run. ``fsxlt adapt`` and
``fsxlt sweep`` both write through here.
"""

from __future__ import annotations

import os
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from itertools import groupby
from pathlib import Path
from typing import Any

from fsxlt.execution.icl_runs import IclSweepRun, LmSweepRun
from fsxlt.execution.spec import RunSpec
from fsxlt.fileio import atomic_write_json
from fsxlt.sampling.set_files import read_data_file
from fsxlt.study.runs import arm_of, error_record, finish_record


@dataclass(frozen=True)
class Outcome:
    """What happened to one run (sent back to the executor for the progress bar)."""

    run_id: str
    ok: bool
    error: str | None = None


def _error_text(err: BaseException) -> str:
    text = str(err).strip().splitlines()
    return f"{err.__class__.__name__}: {text[0] if text else ''}".rstrip(": ")


def write_error(run: RunSpec, err: BaseException, stage: str, device: Any = None) -> Outcome:
    """Write the error record of a failed run. Out of memory (CUDA's, or a ``MemoryError``)
    on ``device``: the record names the device's memory and the settings that lower the
    need, and what the run held is given back, so the group's next run starts clean."""
    text = _error_text(err)
    lines = traceback.format_exception(type(err), err, err.__traceback__)[-6:]
    if device is not None and is_out_of_memory(err):
        from fsxlt.models.precision import free_memory
        from fsxlt.training.checkpoint import resolve_device

        device = resolve_device(device)
        text = out_of_memory_text(err, device, isinstance(run, (IclSweepRun, LmSweepRun)))
        traceback.clear_frames(err.__traceback__)  # the failed run's tensors, let go
        free_memory(device)
    atomic_write_json(run.record_path, error_record(
        identity=run.identity, arm=run.arm, writer=run.writer, sweep=run.sweep_name,
        stage=stage, error=text, traceback=lines,
        coordinates={"task": run.task, "language": run.language, "k": run.k,
                     "method": run.method,
                     "bucket": {"index": run.index, "name": run.bucket_name,
                                "path": run.bucket_path}}))
    return Outcome(run.id, False, text)


def is_out_of_memory(err: BaseException) -> bool:
    """Whether ``err`` is a device or host running out of memory."""
    import torch

    return isinstance(err, (MemoryError, torch.OutOfMemoryError))


def out_of_memory_text(err: BaseException, device: Any, causal_lm: bool = False) -> str:
    """The error line of a run that ran out of memory: where, and what lowers the need
    (a causal LM's run: its arm's batch size)."""
    from fsxlt.models.precision import memory_facts

    if causal_lm:
        return (f"out of memory ({err.__class__.__name__}) on {memory_facts(device)}; lower "
                "the arm's batch_size (--batch-size: prompts per forward pass), or run fewer "
                "workers per device")
    return (f"out of memory ({err.__class__.__name__}) on {memory_facts(device)}; run fewer "
            "workers per device or lower eval_max_tokens (--eval-max-tokens: wordpieces per "
            "evaluation batch), which change no score; or lower micro_batch (--micro-batch: "
            "inputs per training forward pass) for the whole study, which makes new runs")


def _adapt_one(engine: Any, run: RunSpec, test: list | None = None,
               unlabelled: tuple[list, list] | None = None) -> Outcome:
    """Adapt one run and write its record (with ``test``: its predictions first; with
    ``unlabelled`` (examples, ids): its submission file first)."""
    if run.k == 0:  # no bucket: the start as the method prepares it (pet's zero-shot)
        record = engine.zero_shot(run.load_method(), seed=run.seed,
                                  predictions=test is not None,
                                  predict=unlabelled[0] if unlabelled else None,
                                  select_start=run.select_start)
    else:
        record = engine.adapt(_bucket(run), predictions=test is not None,
                              predict=unlabelled[0] if unlabelled else None,
                              companions=run.load_companions(), **_adapt_options(run))
    return _write_record(engine, run, record, test, unlabelled)


def _bucket(run: RunSpec) -> Any:
    """The run's bucket, as planned (its hash checked)."""
    from fsxlt.errors import FsxltError
    from fsxlt.sampling.store import read_bucket

    bucket = read_bucket(run.bucket_path)
    if bucket.sha256 != run.bucket_sha256:
        raise FsxltError(f"{run.bucket_path} changed since the sweep was planned")
    return bucket


def _adapt_options(run: RunSpec) -> dict[str, Any]:
    """What :meth:`AdaptEngine.adapt` takes of a run's settings."""
    return {"method": run.load_method(), "lrs": list(run.lrs), "seed": run.seed,
            "max_epochs": run.max_epochs, "patience": run.patience,
            "select_start": run.select_start, "batch_size": run.batch_size,
            "patience_from": run.patience_from, "long_sentences": run.long_sentences,
            "optimizer": run.load_optimizer(), "label_all_tokens": run.label_all_tokens,
            "regime": run.load_regime(), "average_last": run.average_last}


def _write_record(engine: Any, run: RunSpec, record: dict[str, Any], test: list | None,
                  unlabelled: tuple[list, list] | None) -> Outcome:
    """Write a run's record (its predictions and submission file first)."""
    from fsxlt.errors import FsxltError
    from fsxlt.study.predictions import save_run_predictions
    from fsxlt.study.submission import write_submission

    if run.k:
        record["bucket"]["path"] = run.bucket_path
    if arm_of(record) != run.arm:  # the facts the run was filed by must be the record's
        raise FsxltError(f"the run was planned as arm {run.arm} but its record says "
                         f"{arm_of(record)}")
    finish_record(record, identity=run.identity, arm=run.arm, writer=run.writer,
                  sweep=run.sweep_name, planned=run.planned_buckets)
    if test is not None:
        save_run_predictions(run.record_path, record, test, engine.task)
    if unlabelled is not None:
        write_submission(Path(run.record_path).parent, engine.task, record, unlabelled[1],
                         inputs=unlabelled[0])
    atomic_write_json(run.record_path, record)
    return Outcome(run.id, True)


def _group_runner(first: Any, start: Any) -> Callable[..., None] | None:
    """How a group other than adapting runs one by one runs: ICL, LoRA on the causal LM,
    or regime multi trained once for all its languages; None: adapting runs."""
    special = {IclSweepRun: _run_icl_group, LmSweepRun: _run_lm_group}.get(type(first))
    if special is None and first.shared_languages:
        special = partial(_run_shared_group, start=start)
    return special


def run_group(runs: Sequence[RunSpec], device: str = "auto",
              on_result: Callable[[Outcome], None] | None = None,
              should_stop: Callable[[], bool] | None = None,
              save_predictions: bool = False, start: Any = None) -> list[Outcome]:
    """Run ``runs`` (one group: same task, language and start) and write their records.

    ``save_predictions``: also write each run's test predictions beside its
    record (``fsxlt.study.predictions``), before the record itself. ``start``: the
    group's start, already loaded (``fsxlt adapt`` loads it before writing
    anything, so a broken model is a one-line error rather than error records).
    """
    from fsxlt.models.model import quiet_transformers
    from fsxlt.training import AdaptEngine, load_start
    from fsxlt.training.loop import restore

    outcomes: list[Outcome] = []

    def report(outcome: Outcome) -> None:
        outcomes.append(outcome)
        if on_result is not None:
            on_result(outcome)

    if not runs:
        return outcomes
    first = runs[0]
    if any(r.group_key != first.group_key for r in runs):
        raise ValueError("run_group needs runs of one (task, language, start)")
    quiet_transformers()
    special = _group_runner(first, start)
    if special is not None:  # a causal LM's group (prompted or LoRA-tuned), or multi's
        special(runs, device, report, should_stop, save_predictions)
        return outcomes
    try:
        task = first.task_spec  # a task YAML's own spec (its path travels with the run)
        start = start if start is not None else load_start(first.start, task, seed=first.seed)
        test = first.read_eval("test") if first.test_path else None
    except Exception as err:  # every run of the group fails the same way
        for run in runs:
            report(write_error(run, err, "load"))
        return outcomes
    engine, engine_setup = None, None
    to_predict: dict[str, tuple[list, list]] = {}  # unlabelled files, read once per group
    sources = SourceSets(task, task.source_language)
    ordered = sorted(runs, key=lambda r: (r.dev_path, _engine_setup(r), r.source_train_path,
                                          r.source_dev_path, r.k, r.arm, r.index))
    for (dev_path, setup), batch in groupby(ordered, key=lambda r: (
            r.dev_path, _engine_setup(r))):
        batch = list(batch)
        try:
            dev = batch[0].read_eval("dev")  # the runs of a group read their dev alike
            if engine is not None and engine_setup == setup:
                engine.replace_dev(dev, dev_path)  # same test set: keep it tokenized
            else:
                if engine is not None:  # give the next engine the start's own weights back
                    start.model.use_linear_head()
                    restore(start.model, engine.start_state)
                engine = None
                engine = AdaptEngine(task, first.language, start, dev=dev, test=test,
                                     dev_source=dev_path, test_source=first.test_path or None,
                                     device=device, **engine_options(batch[0]))
                engine_setup = setup
                sources.held = ("", "")  # a new engine holds no source data
        except Exception as err:
            for run in batch:
                report(write_error(run, err, "engine", device))
            continue
        for run in batch:
            if should_stop is not None and should_stop():
                return outcomes
            try:
                unlabelled = _unlabelled(run.predict_path, task, run.language, to_predict,
                                         run.load_reading())
                sources.give(engine, run)
                report(_adapt_one(engine, run, test if save_predictions else None, unlabelled))
            except Exception as err:
                report(write_error(run, err, "adapt", engine.device))
    return outcomes


def _engine_setup(run: RunSpec) -> tuple:
    """What the engine of a run is built with (:func:`engine_options`), as a sort key."""
    return tuple(str(value) for value in engine_options(run).values())


def engine_options(run: RunSpec) -> dict[str, Any]:
    """What :class:`~fsxlt.training.AdaptEngine` takes of a run's settings (runs that
    differ in one of them need engines of their own)."""
    options: dict[str, Any] = {"max_seq_length": run.max_seq_length,
                               "qa_decoding": run.qa_decoding, "precision": run.precision}
    eval_long = run.load_reading().get("eval_long")
    if eval_long != "whole":  # the set's reading: a long tagging sentence scored truncated
        options["eval_long"] = eval_long
    if run.eval_max_tokens is not None:
        options["eval_max_tokens"] = run.eval_max_tokens
    if run.micro_batch is not None:
        options["micro_batch"] = run.micro_batch
    return options


def _run_shared_group(runs: Sequence[RunSpec], device: str,
                      report: Callable[[Outcome], None], should_stop: Callable[[], bool] | None,
                      save_predictions: bool, *, start: Any = None) -> None:
    """Run one group of multi runs trained once for all their languages: per (K, bucket
    index, arm) one :meth:`AdaptEngine.adapt_languages` call writes the record of every
    language of the group (each language's dev and test sets tokenized once per group);
    a training that fails leaves the error record of each of its runs."""
    from fsxlt.training import AdaptEngine, load_start

    first = runs[0]
    try:
        task = first.task_spec
        start = start if start is not None else load_start(first.start, task, seed=first.seed)
        engine = AdaptEngine(task, first.language, start, dev=first.read_eval("dev"),
                             dev_source=first.dev_path, device=device,
                             **engine_options(first))
    except Exception as err:  # every run of the group fails the same way
        for run in runs:
            report(write_error(run, err, "load"))
        return
    views: dict[tuple[str, str, str], Any] = {}
    tests: dict[tuple[str, str], list] = {}
    to_predict: dict[str, tuple[list, list]] = {}
    sources = SourceSets(task, task.source_language)
    ordered = sorted(runs, key=lambda r: (r.k, r.index, r.arm, r.language))
    for _key, members in groupby(ordered, key=lambda r: (r.k, r.index, r.arm)):
        members = list(members)
        if should_stop is not None and should_stop():
            return
        try:
            for run in members:
                view_key = (run.language, run.dev_path, run.test_path)
                if view_key not in views:
                    tests[(run.language, run.test_path)] = run.read_eval("test") \
                        if run.test_path else None
                    views[view_key] = engine.language_view(
                        run.language, run.read_eval("dev"),
                        tests[(run.language, run.test_path)], dev_source=run.dev_path,
                        test_source=run.test_path or None)
            sources.give(engine, members[0])
            unlabelled = {run.language: _unlabelled(run.predict_path, task, run.language,
                                                    to_predict, run.load_reading())
                          for run in members}
            companions = {lang: bucket for lang, bucket in
                          members[0].load_companions().items()
                          if lang not in {run.language for run in members}}
            records = engine.adapt_languages(
                {run.language: _bucket(run) for run in members},
                {run.language: views[(run.language, run.dev_path, run.test_path)]
                 for run in members}, companions,
                predict={lang: found[0] for lang, found in unlabelled.items() if found},
                predictions=save_predictions, **_adapt_options(members[0]))
            for run in members:
                test = tests[(run.language, run.test_path)] if save_predictions else None
                report(_write_record(engine, run, records[run.language], test,
                                     unlabelled[run.language]))
        except Exception as err:
            for run in members:
                report(write_error(run, err, "adapt", engine.device))


class SourceSets:
    """The source data of a group's runs (the joint regimes' train set, the source-dev
    candidate's dev set): each file read once per group, and given to the engine only
    when a run needs other source data than the engine holds (runs are sorted by their
    source files, so an engine tokenizes each once)."""

    def __init__(self, task: Any, language: str):
        self.task = task
        self.language = language  # the task's source language: its rows of the files
        self.examples: dict[tuple[str, str], list] = {}
        self.held = ("", "")  # (train file, dev file) the engine holds; "": none

    def read(self, path: str, split: str) -> list | None:
        if not path:
            return None
        if (path, split) not in self.examples:
            self.examples[(path, split)] = read_data_file(path, self.task, self.language,
                                                          split)
        return self.examples[(path, split)]

    def give(self, engine: Any, run: RunSpec) -> None:
        """Make ``engine`` hold the source data ``run`` reads: the train set of a joint
        run; the dev set (or none) of a run that keeps candidates. What a run does not
        read stays as it is, so a sequential run between joint ones costs no
        tokenizing."""
        train, dev = self.held
        wanted = (run.source_train_path if run.source_train_path else train,
                  run.source_dev_path if run.average_last is not None else dev)
        if wanted == self.held:
            return
        engine.set_source(self.read(wanted[0], "train"), self.read(wanted[1], "dev"),
                          train_source=wanted[0] or None, dev_source=wanted[1] or None)
        self.held = wanted


def _run_icl_group(runs: Sequence[IclSweepRun], device: str,
                   report: Callable[[Outcome], None], should_stop: Callable[[], bool] | None,
                   save_predictions: bool) -> None:
    """Run one group of ICL runs (one causal LM, loaded once) as ``fsxlt icl`` runs them
    (:func:`fsxlt.icl.run.prepare`, :func:`~fsxlt.icl.run.execute`); a run that fails (a
    prompt longer than the model's context, a bucket changed since planning) leaves its
    error record and the next one runs."""
    from fsxlt.errors import FsxltError
    from fsxlt.icl.model import load_causal_lm
    from fsxlt.icl.run import execute, load_test, prepare
    from fsxlt.training.checkpoint import resolve_device

    settings = runs[0].settings
    try:
        lm = load_causal_lm(settings.model, settings.gguf_file,
                            device=str(resolve_device(device)))
    except Exception as err:  # every run of the group fails the same way
        for run in runs:
            report(write_error(run, err, "load"))
        return
    tests: dict[tuple, list] = {}     # test sets, by file and sample (test_limit, seed)
    encoders: dict[str, Any] = {}     # sentence encoders of the similarity order
    for run in sorted(runs, key=lambda r: (r.k, r.arm, r.index)):
        if should_stop is not None and should_stop():
            return
        try:
            settings = run.settings
            key = (run.test_path, settings.test_limit, settings.seed)
            if key not in tests:
                tests[key] = load_test(run.run, settings)
            prepared = prepare(run.run, settings, lm.tokenizer, lm.model, tests[key],
                               _sentence_encoder(settings.encoder, encoders))
            if prepared.bucket is not None and prepared.bucket.sha256 != run.run.bucket_sha256:
                raise FsxltError(f"{run.bucket_path} changed since the sweep was planned")
            execute(prepared, lm, settings, batch_size=run.batch_size,
                    save_predictions=save_predictions, writer=run.writer,
                    sweep=run.sweep_name, planned=run.planned_buckets)
            report(Outcome(run.id, True))
        except Exception as err:
            report(write_error(run, err, "icl", lm.model.device))


def _run_lm_group(runs: Sequence[LmSweepRun], device: str,
                  report: Callable[[Outcome], None], should_stop: Callable[[], bool] | None,
                  save_predictions: bool) -> None:
    """Run one group of LoRA runs (one causal LM and arm: the model loaded and wrapped in
    the arm's adapters once) as ``fsxlt lm-adapt`` runs them (:func:`fsxlt.icl.tuning.
    prepare_all`, :func:`~fsxlt.icl.tuning.execute`); a run that fails leaves its error
    record and the next one runs."""
    from fsxlt.errors import FsxltError
    from fsxlt.icl.lm_lora import Adapters
    from fsxlt.icl.model import load_causal_lm
    from fsxlt.icl.tuning import execute, prepare_all
    from fsxlt.sampling.store import read_bucket
    from fsxlt.training.checkpoint import resolve_device

    settings = runs[0].settings
    try:
        lm = load_causal_lm(settings.model, settings.gguf_file,
                            device=str(resolve_device(device)))
        adapters = Adapters(lm.model, settings.lora, settings.seed)
    except Exception as err:  # every run of the group fails the same way
        for run in runs:
            report(write_error(run, err, "load"))
        return
    splits: dict = {}  # dev and test sets, tokenized once per group
    for run in sorted(runs, key=lambda r: (r.k, r.index)):
        if should_stop is not None and should_stop():
            return
        try:
            if read_bucket(run.bucket_path).sha256 != run.run.bucket_sha256:
                raise FsxltError(f"{run.bucket_path} changed since the sweep was planned")
            prepared = prepare_all([run.run], lm, splits)[0]
            execute(prepared, lm, adapters, batch_size=run.batch_size,
                    save_predictions=save_predictions, writer=run.writer,
                    sweep=run.sweep_name, planned=run.planned_buckets)
            report(Outcome(run.id, True))
        except Exception as err:
            report(write_error(run, err, "lm-adapt", lm.model.device))


def _sentence_encoder(name: str | None, cache: dict[str, Any]) -> Any:
    """The similarity order's sentence encoder (loaded once per group), or None."""
    from fsxlt.icl.similarity import load_encoder

    if name is None:
        return None
    if name not in cache:
        cache[name] = load_encoder(name)
    return cache[name]


def _unlabelled(path: str, task: Any, language: str, cache: dict[str, tuple[list, list]],
                reading: Any = None) -> tuple[list, list] | None:
    """The examples and ids of a run's file to predict (read once per group), or None."""
    from fsxlt.study.submission import read_unlabelled

    if not path:
        return None
    if path not in cache:
        cache[path] = read_unlabelled(path, task, language, reading)
    return cache[path]


def die_with_parent() -> Callable[[], bool]:
    """Ask Linux to kill this process when its parent dies; return an 'orphaned?' check."""
    import ctypes
    import signal

    parent = os.getppid()
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, int(signal.SIGKILL))  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass
    return lambda: os.getppid() != parent
