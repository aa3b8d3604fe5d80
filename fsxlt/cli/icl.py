"""``fsxlt icl``: in-context learning of a causal LM on a bucket, a bucket set or K=0."""

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
    TargetLang,
    lm_run_options,
)


@app.command("icl")
@lm_run_options
def icl_cmd(
    task: LmTask,
    lang: TargetLang,
    out: LmOut,
    model: LmModel,
    bucket: Annotated[Path | None, typer.Option(
        "--bucket", help="A bucket file, or a bucket set directory (all its buckets). "
        "Without it: zero-shot prompting (K=0).")] = None,
    test_limit: Annotated[int | None, typer.Option(
        "--test-limit", help="Score a seeded sample of N test examples (the same for "
        "every bucket).")] = None,
    calibrate: Annotated[bool, typer.Option(
        "--calibrate", help="Contextual calibration on the content-free input N/A.")] = False,
    normalize: Annotated[bool, typer.Option(
        "--normalize", help="Score options by log-likelihood per token.")] = False,
    normalize_chars: Annotated[bool, typer.Option(
        "--normalize-chars", help="Score options by log-likelihood per character "
        "(lm-eval's acc_norm).")] = False,
    preset: Annotated[str | None, typer.Option(
        "--preset", help="A prompt protocol of the field instead of the task YAML's prompts: "
        "lm-eval (XNLI, PAWS-X) or fewclue-gpt (FewCLUE's GPT zero-shot baseline).")] = None,
    order: Annotated[str, typer.Option(
        "--order", help="Demonstrations in the seeded order (a shuffle by --seed), as the "
        "bucket file lists them (bucket), or per test example by similarity to it "
        "(similarity: most similar last; needs --encoder).")] = "seeded",
    encoder: Annotated[str | None, typer.Option(
        "--encoder", help="Sentence encoder of --order similarity (hub name or directory; "
        "mean-pooled last hidden states).")] = None,
    seed: Annotated[int, typer.Option("--seed", min=0, help="Order and test-sample seed.")] = 0,
    arm: Annotated[str | None, typer.Option(
        "--arm", help="The arm's name (default: icl plus the settings that differ).")] = None,
    batch_size: Annotated[int, typer.Option(
        "--batch-size", min=1, help="Rows per forward pass; ranked options take one row per "
        "test example (CPU: 4-8 is best).")] = 8,
    save_prompts: Annotated[bool, typer.Option(
        "--save-prompts", help="With --save-predictions: also write each test example's "
        "prompt (prefix, query, each option's text), as lm-eval's per-sample files "
        "do.")] = False,
    *,
    lm_options: LmRunOptions,
) -> None:
    """Prompt a causal LM with a bucket's examples and predict the target's test set.

    Rank classification: each label word (a multiple-choice task: each candidate)
    is scored by its log-likelihood after the prompt; no weights change. A
    generation task (qg, ntg, xquad-qg) or an extractive QA task generates its
    output greedily (--max-new-tokens, --stop), scored by BLEU or QA F1. One
    record per bucket, read by fsxlt report like any adapting run (arm icl, or
    icl-target, icl-calibrated, ... for other prompt settings; icl-lmeval for
    --preset lm-eval, lm-evaluation-harness's prompts). Label words of unequal
    token lengths are warned about and recorded. A record with the same
    settings is skipped, one of other settings refused unless --replace.
    --save-predictions writes each ranked example's log-likelihood of every
    option beside its prediction (--save-prompts: and its prompt), so that a
    run can be checked against lm-eval's per-sample files on your own model.

    Examples:

    \b
      fsxlt icl --task xnli --lang de --bucket buckets/xnli/de/k4 \\
          --model gpt2 --data-dir data/xnli --test-limit 300 --out runs
      fsxlt icl --task xnli --lang de --model gpt2 --data-dir data/xnli --out runs
      fsxlt icl --task eprstmt --lang zh --bucket buckets/fewclue/eprstmt/zh/k32 \\
          --model models/gemma --gguf-file gemma-3-270m-q4_k_m.gguf \\
          --template-lang target --words-lang target --calibrate --out runs
    """
    from fsxlt.errors import FsxltError
    from fsxlt.fileio import check_output_dir
    from fsxlt.icl.plan import icl_plan
    from fsxlt.icl.run import IclSettings
    from fsxlt.study.directories import check_apart_from_models

    if save_prompts and not lm_options.save_predictions:
        raise FsxltError("--save-prompts writes into the predictions file: give "
                         "--save-predictions too")
    if normalize and normalize_chars:
        raise FsxltError("--normalize (per token) and --normalize-chars (per character) "
                         "exclude each other; give one")
    o = lm_options
    settings = IclSettings(model=model, gguf_file=o.gguf_file, template_language=o.template_lang,
                           words_language=o.words_lang, calibrate=calibrate,
                           normalize="char" if normalize_chars else normalize,
                           order=order, seed=seed, test_limit=test_limit, arm=arm,
                           encoder=encoder, max_new_tokens=o.max_new_tokens, stop=o.stop,
                           batching=o.batching, preset=preset, precision=o.precision)
    check_output_dir(out, "runs directory")
    check_apart_from_models(out, [("--model", model), ("--encoder", encoder)])
    runs = icl_plan(task, lang, bucket, out, settings, test=o.test_file, data_dir=o.data_dir,
                    predict=o.predict)
    _run_all(runs, settings, out, o, batch_size=batch_size, save_prompts=save_prompts)


def _run_all(runs: list, settings, out: Path, options: LmRunOptions, *,
             batch_size: int, save_prompts: bool = False) -> None:
    """Skip the done runs, load the model, check every pending prompt, then score and write
    one record per run (under the runs directory's lock)."""
    from fsxlt.execution.heartbeat import watched
    from fsxlt.icl.run import execute, load_test, prepare
    from fsxlt.study.directories import RUNS, writer_lock

    logger = options_logger(options)  # a missing extra: refused before anything is written
    with writer_lock(out, RUNS, early=True) as lock:  # held before the load where out exists
        first = first_plan(runs, options)
        if first is None:
            return
        lm = load_model(settings, options)
        test = load_test(runs[0], settings)
        sentence_encoder = None
        if settings.encoder is not None:
            from fsxlt.icl.similarity import load_encoder

            sentence_encoder = load_encoder(settings.encoder)
        prepared = [prepare(run, settings, lm.tokenizer, lm.model, test, sentence_encoder)
                    for run, _ in first.pending]  # every prompt checked before writing
        _warn_label_tokens(prepared)
        pending = claim_pending(lock, runs, options)
        todo = [item for item in prepared if item.run.record_path in pending]
        with watched("icl", len(todo)) as beat:  # plain lines off a terminal
            for item in todo:
                record = execute(item, lm, settings, batch_size=batch_size,
                                 save_predictions=options.save_predictions,
                                 save_prompts=save_prompts)
                typer.echo(f"{item.run.id}: {record['metric']} "
                           f"{100 * record['test_score']:.2f} ({record['examples_per_s']:.1f} "
                           f"examples/s) -> {item.run.record_path}")
                if logger is not None:
                    logger.log(item.run.record_path)
                if beat is not None:
                    beat.update(True)


def options_logger(options: LmRunOptions) -> Any:
    """The tracker of ``--log-to`` (None without one); its notes on standard error."""
    from fsxlt.report.trackers import tracker_logger

    return tracker_logger(options.log_to, options.log_uri, options.log_project,
                          lambda line: typer.echo(line, err=True))


def first_plan(runs: list, options: LmRunOptions) -> Any:
    """The runs' write plan before the model loads; None, each done run said, when there
    is nothing to run (``fsxlt icl`` and ``fsxlt lm-adapt``)."""
    from fsxlt.study.write_plan import plan_writes

    plan = plan_writes(runs, replace=options.replace, need_predictions=options.save_predictions)
    if plan.pending:
        return plan
    for run in plan.done:
        typer.echo(f"{run.id}: already done with these settings -> {run.record_path}")
    return None


def load_model(settings: Any, options: LmRunOptions) -> Any:
    """The causal LM of ``settings`` on the device and threads of ``options``."""
    from fsxlt.icl.model import load_causal_lm
    from fsxlt.training.checkpoint import resolve_device

    return load_causal_lm(settings.model, settings.gguf_file,
                          device=str(resolve_device(options.device)), threads=options.threads)


def claim_pending(lock: Any, runs: list, options: LmRunOptions) -> set[Path]:
    """Claim the runs directory, plan the writes again under the claim (another writer may
    have finished some meanwhile), say what is done or replaced, and return the record
    paths still to write."""
    from fsxlt.study.write_plan import plan_messages, plan_writes

    lock.claim()
    writes = plan_writes(runs, replace=options.replace,
                         need_predictions=options.save_predictions)
    for text, to_stderr in plan_messages(writes):
        typer.echo(text, err=to_stderr)
    return {run.record_path for run, _ in writes.pending}


def _warn_label_tokens(prepared: list) -> None:
    """One line on stderr when the label words of the runs differ in number of tokens (the
    records say so too: ``icl.unequal_label_tokens``)."""
    from fsxlt.icl.run import option_lengths
    from fsxlt.icl.scoring import unequal_tokens_warning

    for item in prepared:
        line = unequal_tokens_warning(f"{item.run.task}/{item.run.language}",
                                      option_lengths(item))
        if line:
            typer.echo(line, err=True)
            return
