"""``fsxlt adapt``: a thin layer over the API."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from fsxlt.cli.app import app
from fsxlt.cli.options import (
    BatchSize,
    DataDir,
    Device,
    EvalMaxTokens,
    FractionalWarmup,
    LabelAllTokens,
    LogProject,
    LogTo,
    LogUri,
    LongSentences,
    Lrs,
    MaxEpochs,
    MaxSeqLength,
    MethodName,
    MethodOpts,
    MicroBatch,
    OptimizerName,
    Patience,
    PatienceFrom,
    Precision,
    QaDecoding,
    Replace,
    Schedule,
    Seed,
    SelectStart,
    Warmup,
    WeightDecay,
)
from fsxlt.errors import FsxltError
from fsxlt.fileio import check_output_dir
from fsxlt.methods import (
    DEFAULT_MODEL,
    parse_method_options,
)
from fsxlt.study.directories import check_apart_from_models


@app.command("adapt")
def adapt_cmd(
    task: Annotated[str, typer.Option("--task", help="Task name or task YAML.")],
    lang: Annotated[str, typer.Option("--lang", help="Target language (ISO 639-1).")],
    bucket: Annotated[
        Path,
        typer.Option("--bucket", help="A bucket file, or a bucket set directory (all buckets)."),
    ],
    out: Annotated[
        Path,
        typer.Option(
            "--out",
            help="Runs directory: records go to OUT/<task>/<lang>/k<K>/<arm>/<bucket>.json.",
        ),
    ],
    start: Annotated[
        str | None,
        typer.Option(
            "--from",
            help="Source-trained checkpoint dir; or an encoder name/dir for the "
            "no-source-training ablation (fresh head). Default: --model.",
        ),
    ] = None,
    model: Annotated[
        str, typer.Option("--model", help="Encoder used when --from is not given.")
    ] = DEFAULT_MODEL,
    method: MethodName = "full",
    method_opt: MethodOpts = None,
    select_start: SelectStart = False,
    lrs: Lrs = None,
    seed: Seed = None,
    dev_file: Annotated[
        Path | None,
        typer.Option(
            "--dev",
            help="Target dev file (default: dev-remaining.jsonl of the bucket set "
            "for tasks sampled from dev, else --data-dir). A file given is used whole, "
            "never cut into the task's parts (XQuAD's held-out paragraphs).",
        ),
    ] = None,
    test_file: Annotated[Path | None, typer.Option(
        "--test", help="Target test file, used whole as --dev is.")] = None,
    dev_limit: Annotated[int | None, typer.Option(
        "--dev-limit", min=1, help="Select on a seeded sample of N dev examples (fsxlt "
        "lm-adapt's at its default seed; in the run's identity).")] = None,
    test_limit: Annotated[int | None, typer.Option(
        "--test-limit", min=1, help="Score a seeded sample of N test examples, the one "
        "fsxlt icl --test-limit N scores at its default seed (in the run's identity).")] = None,
    predict: Annotated[
        Path | None,
        typer.Option(
            "--predict",
            help="A file of the task to predict (FewCLUE and XGLUE tasks): each run also "
            "writes its predictions under submission/ beside its record, in the "
            "benchmark's format (<task>_predict_<split>.json; <bucket>/<TASK>/<lang>.prediction).",
        ),
    ] = None,
    data_dir: DataDir = None,
    no_test: Annotated[bool, typer.Option("--no-test", help="Skip the test set.")] = False,
    max_epochs: MaxEpochs = None,
    patience: Patience = None,
    batch_size: BatchSize = None,
    patience_from: PatienceFrom = None,
    long_sentences: LongSentences = None,
    optimizer: OptimizerName = None,
    weight_decay: WeightDecay = None,
    warmup: Warmup = None,
    schedule: Schedule = None,
    fractional_warmup: FractionalWarmup = False,
    label_all_tokens: LabelAllTokens = False,
    qa_decoding: QaDecoding = None,
    max_seq_length: MaxSeqLength = None,
    device: Device = "auto",
    precision: Precision = "auto",
    eval_max_tokens: EvalMaxTokens = None,
    micro_batch: MicroBatch = None,
    save_predictions: Annotated[
        bool,
        typer.Option(
            "--save-predictions",
            help="Also write each run's per-example test predictions beside its record "
            "(<index>.predictions.jsonl), for fsxlt analyze gains/confusion.",
        ),
    ] = False,
    replace: Replace = False,
    regime: Annotated[str, typer.Option(
        "--regime", help="Training regime: sequential (the bucket alone; the study's), "
        "joint, joint-concat, joint-macro, mixup or multi (the source language's training "
        "data beside the bucket; needs --source-train). Such a run's arm is e.g. "
        "full+mixup, full+multi-ar-de-zh.")
    ] = "sequential",
    source_train: Annotated[Path | None, typer.Option(
        "--source-train", help="The source language's train file, in the task's format "
        "(joint regimes).")] = None,
    joint_batch_size: Annotated[int | None, typer.Option(
        "--joint-batch-size", min=1, help="Joint regimes: source examples per step (joint: "
        "examples per step); default 32.")] = None,
    joint_steps: Annotated[int | None, typer.Option(
        "--joint-steps", min=1, help="Joint regimes: optimizer steps per epoch (between two "
        "dev scores); default 20.")] = None,
    joint_epoch: Annotated[str | None, typer.Option(
        "--joint-epoch", help="Joint regimes: what an epoch is: steps (--joint-steps "
        "steps; default) or source-pass (one pass over the source data).")] = None,
    target_batch_size: Annotated[int | None, typer.Option(
        "--target-batch-size", min=1, help="joint-concat, joint-macro, mixup: bucket rows "
        "per step, cycling through the bucket (default: the whole bucket every step).")
    ] = None,
    target_restart: Annotated[bool, typer.Option(
        "--target-restart", help="joint-concat, joint-macro, mixup, multi: every epoch "
        "begins a new pass over the bucket (the peer's data loaders), instead of carrying "
        "on where the last epoch stopped.")] = False,
    target_repeat: Annotated[int | None, typer.Option(
        "--target-repeat", min=1, help="joint: copies of the bucket in the shuffled pool "
        "beside the source data; default 100.")] = None,
    mixup_alpha: Annotated[float | None, typer.Option(
        "--mixup-alpha", help="mixup: λ ~ Beta(alpha, alpha); default 0.4.")] = None,
    multi_lang: Annotated[list[str] | None, typer.Option(
        "--multi-lang", help="multi: a target language trained together with --lang "
        "(repeatable); its bucket of the same K and index comes from the set beside "
        "--bucket's (<root>/<task>/<lang>/k<K>).")] = None,
    multi_epochs: Annotated[int | None, typer.Option(
        "--multi-epochs", min=1, help="multi: the multi-stage recipe: multi for N epochs, "
        "then the source and --lang alone (joint-macro's steps).")] = None,
    average_last: Annotated[int | None, typer.Option(
        "--average-last", help="Also keep candidate models: the average of the last N "
        "epochs' weights and the last epoch (per lr) and the average over the lrs; the "
        "record's candidates hold each one's dev and test score.")] = None,
    source_dev: Annotated[Path | None, typer.Option(
        "--source-dev", help="The source language's dev file: its best epoch is one more "
        "candidate (with --average-last).")] = None,
    log_to: LogTo = None,
    log_uri: LogUri = None,
    log_project: LogProject = None,
) -> None:
    """Adapt a model on a bucket (or every bucket of a set) and write one record per run.

    Early stopping on the target dev set, batch = the whole bucket (or --batch-size
    mini-batches), best epoch scored on the target test set; over several --lr the best
    dev score wins. Runs are
    built and written exactly as a sweep's: a run whose record with the same
    settings is already in --out is skipped (and said so), a finished record of
    other settings is refused unless --replace. Starting from a pretrained
    encoder (not an fsxlt checkpoint) files the run under the -nosource arm; a
    joint regime (--regime) under its own arm (full+joint, full+mixup-nosource).
    --optimizer transformers-adamw --weight-decay 0.05 --warmup 0.1 --fractional-warmup
    --schedule linear trains as the peer study (Schmidt et al. 2022) does (the schedule
    spans steps per epoch x --max-epochs steps) and --label-all-tokens scores every
    wordpiece of a tagged word in training; records name both, and their identity holds
    them when not the defaults.

    Example:

    \b
      fsxlt adapt --task panx --lang zh --bucket buckets/panx/zh/k1/00.json \\
          --from ckpt/panx-mbert --data-dir data/panx --out runs
      fsxlt adapt --task panx --lang zh --bucket buckets/panx/zh/k1 --method lora \\
          --method-opt rank=4 --select-start --from ckpt/panx-mbert --data-dir data/panx --out runs
      fsxlt adapt --task eprstmt --lang zh --bucket buckets/fewclue/eprstmt/zh/k32 \\
          --from bert-base-multilingual-cased --predict FewCLUE/eprstmt/test.json --out runs
      fsxlt adapt --task xnli --lang de --bucket buckets/xnli/de/k8 --from ckpt/xnli-mbert \\
          --regime joint --source-train data/xnli/train-en.tsv --average-last 3 \\
          --source-dev data/xnli/dev-en.tsv --data-dir data/xnli --out runs
      fsxlt adapt --task panx --lang zh --bucket buckets/panx/zh/k16 --from ckpt/panx-mbert \\
          --regime mixup --source-train data/panx/train-en.tsv --joint-batch-size 16 \\
          --target-batch-size 16 --joint-epoch source-pass --data-dir data/panx --out runs
      fsxlt adapt --task panx --lang de --bucket buckets/panx/de/k8 --from ckpt/panx-peer \\
          --optimizer transformers-adamw --weight-decay 0.05 --warmup 0.1 \\
          --fractional-warmup --schedule linear --label-all-tokens --data-dir data/panx \\
          --out runs
    """
    from fsxlt.models.location import check_model_location

    check_model_location(start or model, "start" if start else "encoder", tokenizer=True)
    from fsxlt.execution import adapt_plan
    from fsxlt.models.precision import resolve_precision
    from fsxlt.training.checkpoint import resolve_device
    from fsxlt.training.optim import flag_settings

    if save_predictions and no_test:
        raise FsxltError("--save-predictions saves test predictions; it cannot go with --no-test")
    check_output_dir(out, "runs directory")
    check_apart_from_models(out, [("--from", start or model)])
    runs = adapt_plan(task, lang, Path(bucket), out, start=start or model, method=method,
                      method_options=parse_method_options(method_opt), lrs=lrs, seed=seed,
                      max_epochs=max_epochs, patience=patience,
                      max_seq_length=max_seq_length, select_start=select_start,
                      predict=predict, dev=dev_file, test=test_file, no_test=no_test,
                      data_dir=data_dir, batch_size=batch_size, patience_from=patience_from,
                      regime=regime, source_train=source_train, source_dev=source_dev,
                      average_last=average_last, long_sentences=long_sentences,
                      optimizer=flag_settings(optimizer, weight_decay, warmup, schedule,
                                              fractional_warmup),
                      label_all_tokens=label_all_tokens, dev_limit=dev_limit,
                      test_limit=test_limit, qa_decoding=qa_decoding,
                      precision=resolve_precision(precision, resolve_device(device)),
                      eval_max_tokens=eval_max_tokens, micro_batch=micro_batch,
                      regime_options={
                          "batch_size": joint_batch_size, "steps_per_epoch": joint_steps,
                          "target_repeat": target_repeat, "epoch": joint_epoch,
                          "target_batch_size": target_batch_size, "alpha": mixup_alpha,
                          "languages": list(multi_lang) if multi_lang else None,
                          "multi_epochs": multi_epochs,
                          "target_restart": target_restart or None})
    from fsxlt.report.trackers import tracker_logger

    logger = tracker_logger(log_to, log_uri, log_project, lambda line: typer.echo(line,
                                                                                 err=True))
    failed = _run_adapt(runs, out, replace=replace, save_predictions=save_predictions,
                        device=device, logger=logger)
    if failed:
        raise FsxltError(f"{failed[0].run_id}: {failed[0].error}"
                         + (f" (and {len(failed) - 1} more failed runs; their error records "
                            "are in --out)" if len(failed) > 1 else
                            " (its error record is in --out)"))


def _run_adapt(runs: list[Any], out: Path, *, replace: bool, save_predictions: bool,
               device: str, logger: Any = None) -> list[Any]:
    """Write the records of ``fsxlt adapt``'s runs that are not done, as a sweep does
    (under the runs directory's lock); returns the outcomes of the runs that failed."""
    from fsxlt.execution import run_group
    from fsxlt.execution.heartbeat import watched
    from fsxlt.study.directories import RUNS, writer_lock
    from fsxlt.study.write_plan import plan_messages, plan_writes

    failed: list[Any] = []
    with writer_lock(out, RUNS, early=True) as lock:  # held before the load where out exists
        first = plan_writes(runs, replace=replace, need_predictions=save_predictions)
        loaded = None
        if first.pending:  # a broken start is a one-line error before anything is written
            from fsxlt.models.model import quiet_transformers
            from fsxlt.training import load_start

            quiet_transformers()
            loaded = load_start(runs[0].start, runs[0].task, seed=runs[0].seed)
        lock.claim()
        writes = plan_writes(runs, replace=replace, need_predictions=save_predictions)
        for text, to_stderr in plan_messages(writes):
            typer.echo(text, err=to_stderr)
        with watched("adapt", len(writes.pending)) as beat:  # lines off a terminal

            def said(outcome: Any) -> None:
                _said(outcome, runs, out, failed, logger)
                if beat is not None:
                    beat.update(outcome.ok)

            run_group([run for run, _ in writes.pending], device=device, on_result=said,
                      save_predictions=save_predictions, start=loaded)
    return failed


def _said(outcome: Any, runs: list[Any], out: Path, failed: list[Any],
          logger: Any = None) -> None:
    """One adapt run's line (its scores and record), or its outcome kept in ``failed``;
    a finished record also goes to the tracker of ``--log-to``."""
    from fsxlt.study.runs import read_record, record_path_of

    path = next(r.record_path for r in runs if r.id == outcome.run_id)
    record = read_record(path)
    if outcome.ok and record is not None and logger is not None:
        logger.log(path)
    if not outcome.ok or record is None:
        failed.append(outcome)
        return
    test_part = (f", test {100 * record['test_score']:.2f}"
                 if record.get("test_score") is not None else "")
    typer.echo(f"{record['bucket']['id']}: lr {record['selected_lr']:g}, best epoch "
               f"{record['best_epoch']}, dev {100 * record['dev_score']:.2f}{test_part}"
               f" -> {record_path_of(out, record)}")
