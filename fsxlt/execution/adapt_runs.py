"""The runs of ``fsxlt adapt``, built as a sweep builds them, so both write the same records.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from fsxlt.data.files import data_file
from fsxlt.errors import FsxltError
from fsxlt.execution.config import TaskPlan, parse_patience_from, parse_qa_decoding
from fsxlt.execution.spec import Hashes, RunSpec, build_run, check_eval_sets
from fsxlt.sampling.set_files import SetFiles, named_files
from fsxlt.study.runs import DEFAULT_REGIME, is_checkpoint
from fsxlt.tasks import TaskSpec, get_task

if TYPE_CHECKING:
    from fsxlt.training.optim import OptimizerSettings


def adapt_plan(task: str, language: str, bucket: Path, out: Path, *, start: str,
               method: str = "full", method_options: dict[str, Any] | None = None,
               lrs: Sequence[float] | None = None, seed: int | None = None,
               max_epochs: int | None = None, patience: int | None = None,
               max_seq_length: int | None = None, select_start: bool = False,
               predict: Path | None = None, dev: Path | None = None, test: Path | None = None,
               no_test: bool = False, data_dir: Path | None = None,
               batch_size: int | None = None, patience_from: str | None = None,
               regime: str = DEFAULT_REGIME, regime_options: dict[str, Any] | None = None,
               source_train: Path | None = None, source_dev: Path | None = None,
               average_last: int | None = None, long_sentences: str | None = None,
               optimizer: OptimizerSettings | None = None, label_all_tokens: bool = False,
               dev_limit: int | None = None, test_limit: int | None = None,
               qa_decoding: str | None = None, precision: str = "fp32",
               eval_max_tokens: int | None = None,
               micro_batch: int | None = None) -> list[RunSpec]:
    """The runs of ``fsxlt adapt``: one per bucket of ``bucket`` (a set directory or one
    bucket file), built as a sweep builds them, so both write the same records.

    ``batch_size`` / ``patience_from`` / ``long_sentences`` / ``optimizer`` /
    ``label_all_tokens``: the adapting protocol (None, False: the study's); ``qa_decoding``:
    extractive QA's decoding rule (None: max-context, BERT's).
    ``regime`` (:mod:`fsxlt.training.regimes`) with its ``regime_options`` and a joint one's
    ``source_train`` file; ``average_last`` N keeps candidates (the average of the last N
    epochs, the last epoch and, given ``source_dev``, the best epoch on it).
    Defaults come from the task; each bucket selects on ``dev`` if given, else its own
    dev set (fixed splits), the task's dev file under ``data_dir`` (tasks sampled from
    train) or the set's remaining dev examples (sampled from dev). ``dev``, ``test`` given
    are read whole (not cut into the task's parts); ``dev_limit``, ``test_limit`` keep a
    seeded sample (:meth:`RunSpec.read_eval`). Both are read here: unusable, refused.
    ``precision``: as resolved for the run's device (:mod:`fsxlt.models.precision`);
    ``eval_max_tokens`` and ``micro_batch``: the engine's memory knobs (None: its defaults).
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
        task=spec.name, task_ref="" if task == spec.name else str(task),
        languages=(language,), k=(), buckets=str(bucket),
        data_dir=str(data_dir) if data_dir is not None else None, start=start,
        methods=(method,), n_buckets=None, lrs=grid,
        seed=training.seed if seed is None else int(seed),
        max_epochs=training.adapt_max_epochs if max_epochs is None else int(max_epochs),
        patience=training.adapt_patience if patience is None else int(patience),
        max_seq_length=(training.max_seq_length if max_seq_length is None
                        else int(max_seq_length)),
        no_source=None, method_options={method: dict(method_options)} if method_options else {},
        select_start=select_start, predict=str(predict) if predict is not None else None,
        dev_limit=dev_limit, test_limit=test_limit, whole_dev=dev is not None,
        whole_test=test is not None,
        qa_decoding=parse_qa_decoding(qa_decoding, spec, "--qa-decoding"),
        precision=precision, eval_max_tokens=eval_max_tokens, micro_batch=micro_batch,
        **_protocol_fields(spec, batch_size, patience_from, long_sentences, optimizer,
                           label_all_tokens),
        **_regime_fields(regime, regime_options or {}, source_train, source_dev, average_last))
    _check_multi_languages(plan, language)
    if plan.regimes != (DEFAULT_REGIME,) and batch_size is not None:
        raise FsxltError(f"--batch-size (the mini-batch protocol) is for the sequential "
                         f"regime; --regime {regime} makes its own batches (--joint-batch-size)")
    plan.method(method).check_start(spec, start)  # an unknown method, a bad option, a task
    # or start it cannot use (pet: no pattern, no masked-LM head): one line, before anything
    hashes = Hashes()
    files = named_files(Path(bucket), hashes.text, hashes.bucket)
    set_task, set_lang, k = files.coordinates
    if (set_task, set_lang) != (spec.name, language):
        raise FsxltError(f"{bucket}: buckets of {set_task}/{set_lang}, not "
                         f"{spec.name}/{language}")
    test_path = _adapt_test(spec, plan, language, files, dev, test, no_test)
    start_is_checkpoint = is_checkpoint(start)
    runs = []
    for index, name, path, own_dev in files.buckets:
        chosen_dev = dev or own_dev or _adapt_dev(spec, plan, language, files)
        runs.append(build_run(plan, language, k, (index, name), method, start,
                              start_is_checkpoint, path, Path(chosen_dev),
                              Path(test_path) if test_path else None, Path(out), hashes, None,
                              files.strategy, plan.regimes[0], files.reading))
    check_eval_sets(runs)
    return runs


def _protocol_fields(spec: TaskSpec, batch_size: int | None, patience_from: str | None,
                     long_sentences: str | None, optimizer: OptimizerSettings | None,
                     label_all_tokens: bool) -> dict[str, Any]:
    """``fsxlt adapt``'s adapting protocol as TaskPlan fields, each checked (the optimizer
    None when it is the study's Adam)."""
    from fsxlt.models.encoding import (
        DEFAULT_LONG_SENTENCES,
        check_label_all_tokens,
        check_long_sentences,
    )

    return {"batch_size": batch_size,
            "patience_from": parse_patience_from(patience_from, "--patience-from"),
            "long_sentences": check_long_sentences(long_sentences or DEFAULT_LONG_SENTENCES,
                                                   spec, "--long-sentences"),
            "optimizer": None if optimizer is None or optimizer.is_default else optimizer,
            "label_all_tokens": check_label_all_tokens(label_all_tokens, spec,
                                                       "--label-all-tokens")}


# the command line's name of a regime option
CLI_NAMES = {"batch_size": "joint-batch-size", "steps_per_epoch": "joint-steps",
             "epoch": "joint-epoch", "target_repeat": "target-repeat",
             "target_batch_size": "target-batch-size", "alpha": "mixup-alpha",
             "languages": "multi-lang", "multi_epochs": "multi-epochs",
             "target_restart": "target-restart"}


def _regime_fields(regime: str, options: dict[str, Any], source_train: Path | None,
                   source_dev: Path | None, average_last: int | None) -> dict[str, Any]:
    """``fsxlt adapt``'s regime and candidates as TaskPlan fields, each checked: a regime
    it knows with settings it takes, the source train file a joint regime needs (and
    only it), average_last >= 1 and a source dev file only beside it."""
    from fsxlt.training.regimes import OPTION_REGIMES, inapplicable, parse_regime

    options = {key: value for key, value in options.items() if value is not None}
    parsed = parse_regime(regime, None, "--regime")
    if not parsed.is_sequential:
        parsed = parse_regime(regime, options, f"--regime {regime}")
        for key in inapplicable(parsed, options):
            raise FsxltError(f"--{CLI_NAMES[key]} is for regime(s) "
                             f"{', '.join(OPTION_REGIMES[key])}, not --regime {regime}")
        if source_train is None:
            raise FsxltError(f"--regime {regime} trains on the source data beside the bucket; "
                             "pass --source-train FILE (the source language's train file)")
    elif options or source_train is not None:
        raise FsxltError("--source-train and the --joint-*, --target-*, --mixup-alpha and "
                         "--multi-lang options set a joint regime; pass --regime joint (or "
                         "joint-concat, joint-macro, mixup, multi)")
    if average_last is not None and average_last < 1:
        raise FsxltError(f"--average-last must be at least 1, got {average_last}")
    if source_dev is not None and average_last is None:
        raise FsxltError("--source-dev selects the source-dev candidate of --average-last; "
                         "pass --average-last N too")
    for path, what in ((source_train, "--source-train"), (source_dev, "--source-dev")):
        if path is not None and not Path(path).is_file():
            raise FsxltError(f"{path}: {what} file not found")
    return {"regimes": (parsed.name,), "regime_options": dict(options),
            "source_train": str(source_train) if source_train is not None else None,
            "source_dev": str(source_dev) if source_dev is not None else None,
            "average_last": average_last}


def _adapt_test(spec: TaskSpec, plan: TaskPlan, language: str, files: SetFiles,
                dev: Path | None, test: Path | None, no_test: bool) -> Path | None:
    """The test file of ``fsxlt adapt``'s runs (None: ``--no-test``): ``--test``, else the
    task's under ``--data-dir``, else the set's own; named files must exist, and the test
    file may not be the buckets' source (:meth:`SetFiles.check_test`)."""
    for path, what in ((dev, "--dev"), (test, "--test")):
        if path is not None and not Path(path).is_file():
            raise FsxltError(f"{path}: {what} file not found")
    if no_test:
        return None
    test_path = test or (data_file(spec, plan.data_dir, "test", language)
                         if plan.data_dir is not None else files.test)
    if test_path is None:
        raise FsxltError("no target test set: pass --test FILE, --data-dir DIR or --no-test")
    files.check_test(test_path, spec, "--test" if test else "the test file",
                     whole=test is not None)
    return Path(test_path)


def _check_multi_languages(plan: TaskPlan, language: str) -> None:
    """Refuse a multi run whose ``--multi-lang`` names only ``--lang`` itself (the run's own
    language always trains; multi needs another one beside it)."""
    given = set(plan.regime_options.get("languages") or ())
    if plan.regimes[0] == "multi" and given == {language}:
        raise FsxltError(f"--multi-lang {language} is --lang itself, which multi always "
                         "trains; name the other target language(s) trained with it "
                         "(--multi-lang L, once per language)")


def _adapt_dev(spec: TaskSpec, plan: TaskPlan, lang: str, files: SetFiles) -> Path:
    """The dev set of a bucket without its own, when ``--dev`` is not given."""
    if plan.data_dir is not None and not spec.selects_on_remaining:
        return data_file(spec, plan.data_dir, "dev", lang)
    if files.remaining is not None:
        return files.remaining
    if spec.selects_on_remaining:
        refusal = files.no_remaining(spec.name)
        raise FsxltError(f"{refusal}; or pass --dev FILE, a dev set that holds no bucket "
                         "example")
    raise FsxltError("no target dev set: pass --dev FILE or --data-dir DIR")
