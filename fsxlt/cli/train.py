"""``fsxlt source-train``: a thin layer over the API."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from fsxlt.cli.app import app
from fsxlt.cli.inputs import lang_files, source_data, target_data
from fsxlt.cli.options import (
    DataDir,
    Device,
    FractionalWarmup,
    LabelAllTokens,
    LongSentences,
    Lrs,
    MaxSeqLength,
    OptimizerName,
    Precision,
    Reading,
    Schedule,
    Seed,
    Warmup,
    WeightDecay,
    task_default,
)
from fsxlt.data.readings import parse_reading
from fsxlt.errors import FsxltError
from fsxlt.fileio import check_output_dir
from fsxlt.methods import (
    DEFAULT_MODEL,
    check_source_training,
    get_method,
    method_class,
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
        int | None, typer.Option("--train-limit", min=1,
                                  help="Use only the first N training examples.")
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
    reading: Reading = None,
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

    --reading reads the target dev and test files as a bucket set reads them (its
    manifest's reading, e.g. study), so that a sweep on that set takes this zero-shot
    score as its K=0; the source files are read as they are, and eval_long=truncate
    scores every dev and test set's long tagging sentences on the words that fit.

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
    from fsxlt.models.location import check_model_location

    check_model_location(model, tokenizer=True)  # before torch loads, before any data
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
    target_reading = parse_reading(reading, spec)  # the target files' (a set's, to match it)
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
                               lang_files(target_test, "--target-test"), data_dir, sources,
                               target_reading)
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
        seeds=seeds, seed_weights=seed_weights, eval_long=target_reading.get("eval_long"))
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
