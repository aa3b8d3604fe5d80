"""``fsxlt lm-adapt``: LoRA fine-tuning of a causal LM on a bucket (or every bucket of a set)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from fsxlt.cli.app import app
from fsxlt.cli.options import (
    LmModel,
    LmOut,
    LmRunOptions,
    LmTask,
    MaxEpochs,
    Patience,
    Seed,
    TargetLang,
    lm_run_options,
)
from fsxlt.errors import FsxltError


@app.command("lm-adapt")
@lm_run_options
def lm_adapt_cmd(
    task: LmTask,
    lang: TargetLang,
    bucket: Annotated[Path, typer.Option(
        "--bucket", help="A bucket file, or a bucket set directory (all its buckets).")],
    model: LmModel,
    out: LmOut,
    dev_file: Annotated[Path | None, typer.Option(
        "--dev", help="Target dev file (default: the bucket's own, else dev-remaining.jsonl "
        "of the set for tasks sampled from dev, else --data-dir).")] = None,
    test_limit: Annotated[int | None, typer.Option(
        "--test-limit", help="Score a seeded sample of N test examples (the one fsxlt icl "
        "--test-limit N scores with --seed = --sample-seed).")] = None,
    dev_limit: Annotated[int | None, typer.Option(
        "--dev-limit", help="Select on a seeded sample of N dev examples.")] = None,
    select_on: Annotated[str, typer.Option(
        "--select-on", help="What the dev set scores after every epoch: the task's metric "
        "(metric), or the teacher-forced loss of its gold continuations (loss: no decoding, "
        "for generation on a CPU); the record's dev score is the metric either way.")
    ] = "metric",
    sample_seed: Annotated[int, typer.Option(
        "--sample-seed", min=0, help="Seed of the test and dev samples.")] = 0,
    lrs: Annotated[list[float] | None, typer.Option(
        "--lr", help="Learning rate (repeatable); default: 1e-4, 3e-4, 1e-3.")] = None,
    max_epochs: MaxEpochs = None,
    patience: Patience = None,
    seed: Seed = None,
    mini_batch: Annotated[int | None, typer.Option(
        "--mini-batch", min=1, help="Train in shuffled mini-batches of N examples, one Adam "
        "step each; default: the whole bucket, one step per epoch (the study's).")] = None,
    rank: Annotated[int, typer.Option("--rank", min=1, help="LoRA rank r.")] = 8,
    alpha: Annotated[float, typer.Option(
        "--alpha", help="LoRA scaling: the update is multiplied by alpha / rank.")] = 16.0,
    dropout: Annotated[float, typer.Option(
        "--dropout", help="Dropout on the adapters' input, in [0, 1).")] = 0.1,
    target_modules: Annotated[list[str] | None, typer.Option(
        "--target-module", help="A linear layer that gets adapters (repeatable); default: "
        "peft's for the model type (q_proj and v_proj for Llama and Gemma).")] = None,
    arm: Annotated[str | None, typer.Option(
        "--arm", help="The arm's name (starts with lm-; default: lm-lora).")] = None,
    batch_size: Annotated[int, typer.Option(
        "--batch-size", min=1, help="Rows per forward pass, scoring and training (a step "
        "still covers its whole batch).")] = 8,
    *,
    lm_options: LmRunOptions,
) -> None:
    """Fine-tune a causal LM with LoRA on each bucket, as the study adapts an encoder.

    The input is the task's zero-shot ICL prompt, the loss the gold label word's (or
    candidate's, or target's) negative log-likelihood after it; prediction ranks the
    options as fsxlt icl does (generation tasks: greedy decoding). Per bucket and lr:
    fresh adapters from --seed, one Adam step per epoch on the whole bucket, the dev
    set scored after every epoch, early stopping after --patience epochs; the lr
    with the best dev score is scored on the test set. One record per bucket (arm
    lm-lora), beside the icl and encoder arms: fsxlt report --compare lm-lora icl
    pairs them. A record with the same settings is skipped, one of other settings
    refused unless --replace; a failed run leaves an error record and the others go on.

    Examples:

    \b
      fsxlt lm-adapt --task xnli --lang de --bucket buckets/xnli/de/k4 \\
          --model models/gemma --gguf-file gemma-3-270m-q4_k_m.gguf \\
          --data-dir data/xnli --dev-limit 200 --test-limit 300 --threads 1 --out runs
      fsxlt lm-adapt --task pawsx --lang zh --bucket buckets/pawsx/zh/k2/00.json \\
          --model gpt2 --data-dir data/pawsx --lr 3e-4 --rank 4 --max-epochs 20 --out runs
      fsxlt report runs --compare lm-lora icl
    """
    from fsxlt.fileio import check_output_dir
    from fsxlt.icl.lm_lora import LoraSettings
    from fsxlt.icl.tuning import LM_LRS, LmSettings, lm_plan
    from fsxlt.study.directories import check_apart_from_models
    from fsxlt.tasks.prompts import PromptSettings

    o = lm_options
    lora = LoraSettings(rank, alpha, dropout,
                        tuple(target_modules) if target_modules else None)
    settings = LmSettings(model=model, gguf_file=o.gguf_file, lrs=tuple(lrs or LM_LRS),
                          max_epochs=max_epochs, patience=patience, seed=seed,
                          mini_batch=mini_batch, lora=lora, sample_seed=sample_seed,
                          test_limit=test_limit, dev_limit=dev_limit,
                          max_new_tokens=o.max_new_tokens, stop=o.stop, arm=arm,
                          batching=o.batching,
                          select_on=select_on, precision=o.precision,
                          prompt=PromptSettings(o.template_lang, o.words_lang))
    check_output_dir(out, "runs directory")
    check_apart_from_models(out, [("--model", model)])
    runs = lm_plan(task, lang, bucket, out, settings, test=o.test_file, dev=dev_file,
                   data_dir=o.data_dir, predict=o.predict)
    failed = _run_all(runs, out, o, batch_size=batch_size)
    if failed:
        more = (f" (and {len(failed) - 1} more failed runs; their error records are in --out)"
                if len(failed) > 1 else " (its error record is in --out)")
        raise FsxltError(f"{failed[0][0]}: {failed[0][1]}{more}")


def _run_all(runs: list[Any], out: Path, options: LmRunOptions, *,
             batch_size: int) -> list[tuple[str, str]]:
    """Skip the done runs, load the model, prepare every pending run, then train and write
    one record per run (under the runs directory's lock); returns the failed runs' ids and
    errors (each left its error record)."""
    from fsxlt.cli.icl import claim_pending, first_plan, load_model, options_logger
    from fsxlt.execution.heartbeat import watched
    from fsxlt.icl.lm_lora import Adapters
    from fsxlt.icl.tuning import prepare_all
    from fsxlt.study.directories import RUNS, writer_lock

    failed: list[tuple[str, str]] = []
    logger = options_logger(options)  # a missing extra: refused before anything is written
    with writer_lock(out, RUNS, early=True) as lock:  # held before the load where out exists
        first = first_plan(runs, options)
        if first is None:
            return []
        settings = runs[0].settings
        lm = load_model(settings, options)
        prepared = prepare_all([run for run, _ in first.pending], lm)
        adapters = Adapters(lm.model, settings.lora, settings.seed)
        pending = claim_pending(lock, runs, options)
        todo = [item for item in prepared if item.run.record_path in pending]
        with watched("lm-adapt", len(todo)) as beat:  # plain lines off a terminal
            for item in todo:
                ok = _adapt_one(item, lm, adapters, options, batch_size, failed, logger)
                if beat is not None:
                    beat.update(ok)
    return failed


def _adapt_one(item: Any, lm: Any, adapters: Any, options: LmRunOptions, batch_size: int,
               failed: list[tuple[str, str]], logger: Any) -> bool:
    """Train and write one prepared run, saying its line; a failure is its error record
    and an entry of ``failed`` (the others go on; it is rerun next time)."""
    from fsxlt.icl.tuning import execute, write_error

    try:
        record = execute(item, lm, adapters, batch_size=batch_size,
                         save_predictions=options.save_predictions)
    except Exception as err:
        failed.append((item.run.id, write_error(item.run, err)))
        return False
    dev = record["dev_score"]
    typer.echo(f"{item.run.id}: lr {record['selected_lr']:g}, best epoch "
               f"{record['best_epoch']}, dev "
               f"{'-' if dev is None else f'{100 * dev:.2f}'}, {record['metric']} "
               f"{100 * record['test_score']:.2f} -> {item.run.record_path}")
    if logger is not None:
        logger.log(item.run.record_path)
    return True
