"""``fsxlt source-train`` and ``fsxlt adapt``: thin layers over the API."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from fsxlt.cli.app import app
from fsxlt.cli.inputs import lang_files, source_data, target_data
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
    task_default,
)
from fsxlt.errors import FsxltError
from fsxlt.fileio import check_output_dir
from fsxlt.methods import (
    DEFAULT_MODEL,
    check_source_training,
    get_method,
    method_class,
    parse_method_options,
    source_training_methods,
)
from fsxlt.study.directories import check_apart_from_models
from fsxlt.study.runs import is_checkpoint
from fsxlt.tasks import TaskSpec, get_task


def _print_scores(label: str, scores: dict | None) -> None:
    if scores:
        typer.echo(f"{label}: {scores['metric']} {100 * scores['score']:.2f}")


def _source_languages(spec: TaskSpec, value: str | None, data_dir: Path | None) -> list[str]:
    """``--source-lang``: one language, a comma list, or ``all`` (train files in data_dir)."""
    if value is None:
        return [spec.source_language]
    if value.strip() == "all":
        if data_dir is None:
            raise FsxltError("--source-lang all reads every train file in --data-dir; pass it")
        langs = [lang for lang in spec.languages
                 if spec.data.locate(data_dir, "train", lang).is_file()]
        if not langs:
            raise FsxltError(f"{data_dir}: no train file of {spec.name} in any language")
        return langs
    langs = [lang.strip() for lang in value.split(",") if lang.strip()]
    if not langs:
        raise FsxltError("--source-lang needs a language, a comma-separated list or all")
    for lang in langs:
        spec.check_language(lang)
    return list(dict.fromkeys(langs))


@app.command("source-train")
def source_train_cmd(
    task: Annotated[
        str, typer.Option("--task", help="Task name (xnli, panx, ...) or a task YAML.")
    ],
    out: Annotated[Path, typer.Option("--out", help="Checkpoint directory to write.")],
    model: Annotated[
        str, typer.Option("--model", help="Hugging Face encoder name or dir.")
    ] = DEFAULT_MODEL,
    data_dir: DataDir = None,
    train_file: Annotated[Path | None, typer.Option(
        "--train", help="Source train file (one source language).")] = None,
    dev_file: Annotated[Path | None, typer.Option(
        "--dev", help="Source dev file (one source language).")] = None,
    source_lang: Annotated[
        str | None,
        typer.Option(
            "--source-lang",
            help="Source language(s): a pivot (de), several joined (de,es), or all (every "
            "language with a train file in --data-dir). Default: the task's (en).",
        ),
    ] = None,
    select: Annotated[
        str,
        typer.Option(
            "--select",
            help="Checkpoint selection: source-dev (mean over the source languages' dev "
            "sets) or all-dev (over every language with a dev set: XGLUE's).",
        ),
    ] = "source-dev",
    train_limit: Annotated[
        int | None, typer.Option("--train-limit", help="Use only the first N training examples.")
    ] = None,
    dev_limit: Annotated[
        int | None, typer.Option("--dev-limit", min=1, help="Select on a seeded sample of N "
                                 "examples of each dev set, source and target (a smoke "
                                 "test; recorded by the sample's hash).")
    ] = None,
    test_limit: Annotated[
        int | None, typer.Option("--test-limit", min=1, help="Score zero-shot on a seeded "
                                 "sample of N examples of each target test set: the sample "
                                 "a sweep with test_limit N scores, so its K=0 record pairs.")
    ] = None,
    targets: Annotated[
        list[str] | None,
        typer.Option(
            "--target",
            help="Target language to score after every epoch (repeatable); "
            "dev and test come from --data-dir unless given by --target-dev/--target-test "
            "(a test file there without labels, as XGLUE's, is not scored: a note says so).",
        ),
    ] = None,
    target_dev: Annotated[
        list[str] | None,
        typer.Option("--target-dev", help="LANG=FILE: a target dev set (repeatable)."),
    ] = None,
    target_test: Annotated[
        list[str] | None,
        typer.Option(
            "--target-test", help="LANG=FILE: a target test set for zero-shot (repeatable)."
        ),
    ] = None,
    lrs: Lrs = None,
    epochs: Annotated[
        int | None, typer.Option("--epochs", help=task_default("source_epochs"))
    ] = None,
    batch_size: Annotated[int | None, typer.Option(
        "--batch-size", help=task_default("source_batch_size"))] = None,
    seed: Seed = None,
    max_seq_length: MaxSeqLength = None,
    device: Device = "auto",
    precision: Precision = "auto",
    checkpoint_test_scores: Annotated[
        bool,
        typer.Option(
            "--checkpoint-test-scores",
            help="Also score target test sets after every epoch (for oracle/agreement analyses).",
        ),
    ] = False,
    overwrite: Annotated[
        bool, typer.Option("--overwrite", help="Replace an existing --out.")
    ] = False,
    method: Annotated[
        str, typer.Option("--method", help="A method that source-trains: "
                          f"{' or '.join(source_training_methods())} ('fsxlt methods' says "
                          "what each does); full is the study's.")
    ] = "full",
    average_last: Annotated[
        int | None,
        typer.Option(
            "--average-last",
            help="Checkpoint averaging: keep each lr run's last N epochs' weights and score "
            "candidates beside the selected checkpoint (last@LR, average-last-N@LR: the mean "
            "of the run's last N epochs, average-lrs: the mean of the runs' last epochs); "
            "the record's candidates holds their dev and test scores.",
        ),
    ] = None,
    keep: Annotated[
        str,
        typer.Option(
            "--keep",
            help="Which candidate the checkpoint holds: selected (by --select; default), last "
            "(one --lr), average-last (one --lr, needs --average-last), average-lrs "
            "(needs --average-last), oracle (the selected one, and per --target with a dev "
            "set the epoch best on that dev set as its own checkpoint OUT/oracle-<lang>) or "
            "average-seeds (the mean of one training per --seeds; see --seed-weights).",
        ),
    ] = "selected",
    seeds: Annotated[list[int] | None, typer.Option(
        "--seeds", min=0, help="--keep average-seeds: train once per seed (repeatable, two or "
        "more; not with --seed) and keep the mean of their weights.")] = None,
    seed_weights: Annotated[str | None, typer.Option(
        "--seed-weights", help="--keep average-seeds: which weights of each seed the mean "
        "takes: selected (by --select over its lr grid; default) or last (one --lr).")] = None,
    long_sentences: LongSentences = None,
    optimizer: OptimizerName = None,
    weight_decay: WeightDecay = None,
    warmup: Warmup = None,
    schedule: Schedule = None,
    fractional_warmup: FractionalWarmup = False,
    head: Annotated[str, typer.Option(
        "--head", help="Classification and multiple choice: pooler (default; BERT's "
        "pooler, dropout, linear: the study's) or cls (dropout and a linear layer on the "
        "[CLS] state, no pooler: the peer study's). The checkpoint keeps it; adapting "
        "from it uses it.")] = "pooler",
    label_all_tokens: LabelAllTokens = False,
) -> None:
    """Source-train over the lr grid; keep the checkpoint with the best source dev score.

    The source is English unless --source-lang names a pivot language or several
    (their train sets joined). Records the source and target dev scores of every
    epoch of every lr and the zero-shot (K=0) test scores of the selected
    checkpoint; a target that was also a source is marked, not zero-shot.
    A target's test set from --data-dir that is missing or carries no labels
    (XGLUE's test files) gets no zero-shot score, said in a one-line note.

    Example:

    \b
      fsxlt source-train --task panx --data-dir data/panx \\
          --target de --target zh --out ckpt/panx-mbert
      fsxlt source-train --task panx --data-dir data/panx --source-lang en,de,es \\
          --target zh --target ar --out ckpt/panx-en-de-es
      fsxlt source-train --task panx --data-dir data/panx --target de \\
          --average-last 3 --keep average-lrs --out ckpt/panx-avg
      fsxlt source-train --task panx --data-dir data/panx --target de --target zh \\
          --keep oracle --out ckpt/panx-mbert    # also ckpt/panx-mbert/oracle-de, oracle-zh
      fsxlt source-train --task panx --data-dir data/panx --target de --lr 2e-5 \\
          --seeds 1 --seeds 2 --seeds 3 --keep average-seeds --out ckpt/panx-seeds

    With --average-last the summary lists every candidate's dev and target test scores;
    --keep picks which one is saved (and scores zero-shot); --keep oracle also saves each
    target's best epoch on its dev set (OUT/oracle-<lang>), --keep average-seeds the mean of
    the seeds' --seed-weights. A tagging sentence longer than --max-seq-length is truncated
    for training (the study's) unless --long-sentences windows; the checkpoint records
    which, and so does every record adapted from it. Adam with a constant learning rate is
    the study's optimizer; --optimizer transformers-adamw --weight-decay 0.05 --warmup 0.1
    --fractional-warmup --schedule linear is the peer study's (Schmidt et al. 2022), and
    --label-all-tokens (tagging) trains on every wordpiece of a word; the checkpoint
    records both:

    \b
      fsxlt source-train --task panx --data-dir data/panx --target de --optimizer \\
          transformers-adamw --weight-decay 0.05 --warmup 0.1 --fractional-warmup \\
          --schedule linear --label-all-tokens --out ckpt/panx-peer
    """
    from fsxlt.models.encoding import (
        DEFAULT_LONG_SENTENCES,
        check_label_all_tokens,
        check_long_sentences,
    )
    from fsxlt.models.model import check_head, quiet_transformers
    from fsxlt.training import source_train
    from fsxlt.training.candidates import check_averaging
    from fsxlt.training.optim import flag_settings
    from fsxlt.training.seed_average import check_seeds

    spec = get_task(task)
    source_langs = _source_languages(spec, source_lang, data_dir)
    check_averaging(average_last, keep, lrs or spec.training.source_lrs)  # before any data loads
    check_seeds(seeds, seed, keep, seed_weights, lrs or spec.training.source_lrs)
    long_sentences = check_long_sentences(long_sentences or DEFAULT_LONG_SENTENCES, spec,
                                          "--long-sentences")
    settings = flag_settings(optimizer, weight_decay, warmup, schedule, fractional_warmup)
    label_all_tokens = check_label_all_tokens(label_all_tokens, spec, "--label-all-tokens")
    check_head(head, spec.kind, "--head")
    check_source_training(method_class(method))
    get_method(method, spec.kind).check_start(spec, model)  # before any model loads
    from fsxlt.models.precision import resolve_precision
    from fsxlt.training.checkpoint import resolve_device

    precision = resolve_precision(precision, resolve_device(device))  # refused: one line
    out = _checkpoint_out(out, model, overwrite)
    train, source_dev, sources = source_data(spec, source_langs, train_file, dev_file,
                                              data_dir, train_limit)
    tdev, ttest = target_data(spec, targets, lang_files(target_dev, "--target-dev"),
                               lang_files(target_test, "--target-test"), data_dir, sources)
    source_dev, tdev, ttest = limited_sets(source_dev, tdev, ttest, dev_limit, test_limit)
    quiet_transformers()
    result = source_train(
        spec, train, source_dev, model_name=model, source_languages=source_langs,
        select=select, target_dev=tdev, target_test=ttest, sources=sources, lrs=lrs,
        epochs=epochs, batch_size=batch_size, seed=seed, max_seq_length=max_seq_length,
        device=device, precision=precision, checkpoint_test_scores=checkpoint_test_scores,
        progress=True,
        method=method, average_last=average_last, keep=keep, long_sentences=long_sentences,
        optimizer=settings, label_all_tokens=label_all_tokens, head=head,
        seeds=seeds, seed_weights=seed_weights)
    result.save(out, overwrite=overwrite)  # with the oracle starts, OUT/oracle-<lang>
    _print_source_result(result, source_langs == ["en"] and select == "source-dev", out)


def limited_sets(source_dev: dict[str, list], target_dev: dict[str, list],
                 target_test: dict[str, list], dev_limit: int | None,
                 test_limit: int | None) -> tuple[dict, dict, dict]:
    """Each dev set cut to the seeded sample of ``dev_limit`` examples and each test set to
    that of ``test_limit`` (the samples ``fsxlt adapt`` and a sweep take with these limits,
    seed 0); the checkpoint records each set's hash and size, so its config hash names
    the cut."""
    from fsxlt.data.examples import DEV_SAMPLE_KEY, TEST_SAMPLE_KEY, seeded_sample

    def cut(sets: dict[str, list], limit: int | None, key: str) -> dict[str, list]:
        return {lang: seeded_sample(list(ex), limit, key.format(seed=0))
                for lang, ex in sets.items()}

    return (cut(source_dev, dev_limit, DEV_SAMPLE_KEY), cut(target_dev, dev_limit, DEV_SAMPLE_KEY),
            cut(target_test, test_limit, TEST_SAMPLE_KEY))


def _checkpoint_out(out: Path, model: str, overwrite: bool) -> Path:
    """``source-train --out``, checked before any data loads: a folder it can write, apart
    from the encoder it reads, empty or (``--overwrite``) a checkpoint."""
    out = check_output_dir(out, "checkpoint directory")
    check_apart_from_models(out, [("--model", model)])
    if out.exists() and any(out.iterdir()) and not overwrite:
        raise FsxltError(f"{out} exists and is not empty; pass --overwrite to replace it")
    if out.exists() and any(out.iterdir()) and not is_checkpoint(out.resolve()):
        raise FsxltError(f"{out}: not a checkpoint directory; --overwrite replaces a "
                         "checkpoint, nothing else (give --out a new folder)")
    return out


def _print_source_result(result: Any, english: bool, out: Path) -> None:
    """The selected checkpoint and its zero-shot scores, one line each."""
    sel = result.record["selection"]
    on = "English" if english else "+".join(sel["languages"])
    seed = f" seed {sel['seed']}" if "seed" in sel else ""  # over the seeds averaged
    typer.echo(
        f"selected lr {sel['lr']:g} epoch {sel['epoch']}{seed} "
        f"({on} dev {100 * sel['dev_score']:.2f}) in {result.wall_time_s:.1f}s; wrote {out}"
    )
    if "keep" in sel:
        typer.echo(f"kept {sel['kept']} (--keep {sel['keep']}) instead of the selected checkpoint")
    for warning in result.record.get("warnings") or []:
        typer.echo(f"warning: {warning}; {out} says so in its fsxlt_checkpoint.json, and "
                   "every report over runs adapted from it", err=True)
    for lang, scores in result.record["zero_shot"].items():
        what = "test (a source language, not zero-shot)" if scores.get("in_source") else "test"
        _print_scores(f"zero-shot {lang} {what}", scores)
    if "candidates" in result.record:
        _print_candidates(result.record["candidates"]["models"], sel.get("kept"))
    for oracle in result.oracles:
        _print_oracle(oracle.record, out / oracle.name)


def _print_oracle(record: dict[str, Any], where: Path) -> None:
    """An oracle start's line: its language, lr and epoch, dev score."""
    start = record["oracle_start"]
    typer.echo(f"oracle {start['language']}: lr {start['lr']:g} epoch {start['epoch']} "
               f"({start['language']} dev {100 * start['dev_score']:.2f}); wrote {where}")


def _print_candidates(models: list[dict[str, Any]], kept: str | None) -> None:
    """One row per candidate model: its test scores, then its dev scores (x100); the
    kept one is marked ``*``."""
    tests = list(models[0]["test"]) if models else []
    devs = list(models[0]["dev"]) if models else []
    header = ["  candidate"] + [f"test {lang}" for lang in tests] + [f"dev {lang}" for lang in devs]
    rows = [[("* " if m["name"] == (kept or models[0]["name"]) else "  ") + m["name"]]
            + [f"{100 * m['test'][lang]:.2f}" for lang in tests]
            + [f"{100 * m['dev'][lang]:.2f}" for lang in devs] for m in models]
    widths = [max(len(str(r[i])) for r in [header, *rows]) for i in range(len(header))]
    typer.echo("candidates (* the saved model):")
    for row in [header, *rows]:
        typer.echo("  ".join(str(cell).ljust(w) if i == 0 else str(cell).rjust(w)
                             for i, (cell, w) in enumerate(zip(row, widths, strict=True))))


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
    from fsxlt.study.runs import plan_messages, plan_writes

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
