"""Fine-tuning the ICL arm's causal LM on a bucket with LoRA: one bucket in, one record out.

The model, the prompts and the scoring are the ICL arm's; the protocol is the
study's adapting one. A training example is the task's zero-shot prompt
(:func:`fsxlt.tasks.prompts.render` with no demonstrations: the instruction and
the template up to ``{label}``) followed by its gold continuation (a label
word, a multiple-choice candidate; a generated output's target followed by the
template's text after ``{label}`` and the ICL separator, and the tokenizer's
end-of-sequence token where those hold no stop string, so the model learns to
stop), the loss is the negative log-likelihood of the continuation's tokens
alone (:mod:`fsxlt.icl.lm_lora`), and prediction is the ICL arm's: options
ranked by summed log-likelihood (:mod:`fsxlt.icl.scoring`), or greedy decoding
(:mod:`fsxlt.icl.generation`) scored with the task's metric.

Per bucket and learning rate: the LoRA adapters fresh from the seed
(:class:`~fsxlt.icl.lm_lora.Adapters`), at most ``max_epochs`` epochs of one
Adam step on the whole bucket (``mini_batch`` N: shuffled mini-batches of N,
one step each, the order drawn from the seed), the dev set scored after every
epoch, the best epoch's adapters kept, stopping once ``patience`` epochs pass
without a better dev score. The lr with the best dev score (ties: the earlier)
is scored on the test set. Defaults: the task's epochs, patience and seed, and
:data:`LM_LRS` (LoRA moves further per step than full fine-tuning, so its grid
sits above the study's 1e-5 to 7e-5).

Records are adapt records (``fsxlt report``, ``--compare`` and the analyses
read them unchanged) filed under the arm :data:`DEFAULT_ARM` (``lm-lora``, or
``--arm``), with an ``lm_tuning`` block: the LoRA settings, the grid, every
lr's dev scores per epoch, the chosen lr and epoch. :func:`lm_plan` builds the
runs (one per bucket, their identities and record paths); :func:`prepare`
tokenizes one (every bad input a one-line error before anything is written);
:func:`execute` trains, scores and writes its record atomically;
:func:`write_error` leaves the record of a run that failed.
"""

from __future__ import annotations

import time
import traceback
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from fsxlt.data.examples import DEV_SAMPLE_KEY, seeded_sample
from fsxlt.errors import FsxltError
from fsxlt.icl.generation import check_room, generate
from fsxlt.icl.generative import generation_block, gold_of, is_generative
from fsxlt.icl.lm_lora import (
    Adapters,
    TrainRow,
    check_rows,
    mean_token_nll,
    train_step,
)
from fsxlt.icl.scoring import (
    TokenizedPrompt,
    check_length,
    decision_scores,
    option_scores,
    plan_rows,
    predictions,
    tokenize_prompt,
)
from fsxlt.icl.tuning_plan import (  # noqa: F401  (the planning API, named here too)
    DEFAULT_ARM,
    LM_LRS,
    PROMPT,
    SELECT_ON,
    LmRun,
    LmSettings,
    check_lm_settings,
    lm_plan,
)
from fsxlt.study.runs import RUN_FORMAT
from fsxlt.tasks import TaskSpec
from fsxlt.tasks.prompts import PromptSettings, PromptText, render

LM_WRITER = "fsxlt lm-adapt"


# --------------------------------------------------------------------------- preparing

@dataclass
class EvalSplit:
    """A dev or test set as the model scores it: its examples, their zero-shot prompt
    (tokenized), what the metric compares predictions with, and its file."""

    examples: list[Any]
    prompt: TokenizedPrompt
    gold: list[Any]
    path: str


@dataclass
class LmPrepared:
    """A run with its bucket's training rows and its dev and test sets, checked."""

    run: LmRun
    bucket: Any                      # fsxlt.data.buckets.Bucket
    rows: list[TrainRow]
    dev: EvalSplit
    test: EvalSplit
    longest: int


def load_split(run: LmRun, split: str) -> list[Any]:
    """A run's dev or test examples, the seeded sample when limited; the test sample is the
    one ``fsxlt icl --test-limit`` scores with ``--seed`` = the sample seed."""
    from fsxlt.icl.run import IclSettings, sample_test
    from fsxlt.sampling.set_files import read_data_file

    path = run.test_path if split == "test" else run.dev_path
    whole = run.whole_test if split == "test" else run.whole_dev  # a file named: as given
    examples = read_data_file(path, run.task_spec, run.language, None if whole else split,
                              run.reading)
    if not examples:
        raise FsxltError(f"{path}: no {split} examples")
    settings = run.settings
    if split == "test":
        return sample_test(examples, IclSettings(model=settings.model,
                                                 seed=settings.sample_seed,
                                                 test_limit=settings.test_limit))
    return seeded_sample(examples, settings.dev_limit,
                         DEV_SAMPLE_KEY.format(seed=settings.sample_seed))


def _prompt_text(spec: TaskSpec, language: str, examples: list[Any],
                 prompt: PromptSettings) -> PromptText:
    return render(spec.icl, spec.labels, prompt, language, [], examples)


def eval_split(run: LmRun, examples: list[Any], tokenizer: Any, model: Any,
               split: str) -> tuple[EvalSplit, int]:
    """A dev or test set's zero-shot prompt, tokenized and checked against the model's
    context (one line naming the run), and its longest prompt in tokens."""
    spec, what = run.task_spec, f"{run.id} ({split})"
    generative = is_generative(spec)
    prompt = tokenize_prompt(tokenizer, _prompt_text(spec, run.language, examples,
                                                     run.settings.prompt), what,
                             check=not generative)
    if generative:
        longest = check_room(model, prompt.prefix, prompt.queries, run.settings.decode, what)
        gold = gold_of(spec, examples, run.language)
    else:
        longest = check_length(plan_rows(prompt, what), model, what)
        gold = [e.label for e in examples]
    path = {"test": run.test_path, "predict": run.predict_path}.get(split, run.dev_path)
    return EvalSplit(examples, prompt, gold, path), longest


def _gold_index(spec: TaskSpec, example: Any) -> int:
    """Which option of a ranked example is right (a candidate's position, a label's)."""
    if spec.is_multiple_choice:
        return int(example.label)
    return list(spec.labels).index(example.label)


def tail_text(spec: TaskSpec, language: str = "en") -> str:
    """The text after ``{label}`` in ``language``'s template, and the separator (no fields:
    templates put every field before ``{label}``)."""
    return spec.icl.template(language).split("{label}")[1] + spec.icl.separator


def train_rows(spec: TaskSpec, language: str, tokenizer: Any, examples: list[Any],
               settings: LmSettings, what: str) -> list[TrainRow]:
    """The bucket's training rows: each example's zero-shot prompt (``settings.prompt``)
    and gold continuation, the continuation (with, generating, what ends it) scored."""
    generative, decode = is_generative(spec), settings.decode
    prompt = tokenize_prompt(tokenizer, _prompt_text(spec, language, examples,
                                                     settings.prompt), what,
                             check=not generative)
    ending: list[int] = []
    if generative:
        text = tail_text(spec, language if settings.prompt.template_language == "target"
                         else "en")
        ending = list(tokenizer(text, add_special_tokens=False)["input_ids"])
        eos = getattr(tokenizer, "eos_token_id", None)
        if (not ending or not any(s in text for s in decode.stop)) and isinstance(eos, int):
            ending.append(eos)
    rows = []
    for example, query, options in zip(examples, prompt.queries, prompt.continuations,
                                       strict=True):
        gold = options[0] + ending if generative else options[_gold_index(spec, example)]
        rows.append(TrainRow(prompt.prefix + query + gold, len(gold)))
    return rows


def prepare(run: LmRun, tokenizer: Any, model: Any, dev: EvalSplit, test: EvalSplit,
            longest: int = 0) -> LmPrepared:
    """A run's training rows from its bucket (the bucket checked against the plan's hash),
    checked against the model's context; ``dev``, ``test``: :func:`eval_split`'s."""
    from fsxlt.sampling.store import read_bucket

    bucket = read_bucket(run.bucket_path)
    if bucket.sha256 != run.bucket_sha256:
        raise FsxltError(f"{run.bucket_path} changed since the runs were planned")
    rows = train_rows(run.task_spec, run.language, tokenizer, list(bucket.examples),
                      run.settings, run.id)
    longest = max(longest, check_rows(rows, model, run.id))
    return LmPrepared(run, bucket, rows, dev, test, longest)


def prepare_all(pending: list[LmRun], lm: Any,
                splits: dict[tuple[str, str], tuple[EvalSplit, int]] | None = None,
                ) -> list[LmPrepared]:
    """Every pending run tokenized and checked (its dev and test sets read once per file,
    in ``splits`` when given: runs of one settings share them), before anything is
    written."""
    splits = {} if splits is None else splits
    prepared = []
    for run in pending:
        found = []
        for split, path in (("dev", run.dev_path), ("test", run.test_path)):
            if (split, path) not in splits:
                splits[(split, path)] = eval_split(run, load_split(run, split), lm.tokenizer,
                                                   lm.model, split)
            found.append(splits[(split, path)])
        (dev, dev_longest), (test, test_longest) = found
        prepared.append(prepare(run, lm.tokenizer, lm.model, dev, test,
                                max(dev_longest, test_longest)))
    return prepared


# --------------------------------------------------------------------------- training

def predict(model: Any, tokenizer: Any, run: LmRun, split: EvalSplit, *,
            batch_size: int = 8) -> list[Any]:
    """A split's predictions, as the ICL arm makes them: options ranked by summed
    log-likelihood, or greedy decoding."""
    spec = run.task_spec
    model.eval()
    if is_generative(spec):
        return generate(model, tokenizer, split.prompt.prefix, split.prompt.queries,
                        run.settings.decode, batch_size=batch_size, what=run.id)
    scores = option_scores(model, split.prompt, run.id, batch_size=batch_size)
    return predictions(decision_scores(scores), spec.labels)


def evaluate(model: Any, tokenizer: Any, run: LmRun, split: EvalSplit, *,
             batch_size: int = 8) -> tuple[dict[str, Any], list[Any]]:
    """A split's scores (the task's metric) and its predictions (:func:`predict`)."""
    from fsxlt.metrics.scores import compute_scores

    predicted = predict(model, tokenizer, run, split, batch_size=batch_size)
    return compute_scores(run.task_spec, split.gold, predicted), predicted


def predict_file(run: LmRun, model: Any, tokenizer: Any, record: dict[str, Any], *,
                 batch_size: int = 8) -> None:
    """Predict the run's file to predict with the chosen adapters into the benchmark's
    submission file beside the record; the record names that file."""
    from fsxlt.study.submission import read_unlabelled, write_submission

    examples, ids = read_unlabelled(run.predict_path, run.task_spec, run.language)
    split, _ = eval_split(run, examples, tokenizer, model, "predict")
    record["predict"] = predict(model, tokenizer, run, split, batch_size=batch_size)
    write_submission(Path(run.record_path).parent, run.task_spec, record, ids,
                     inputs=examples)


def _epoch_steps(rows: list[TrainRow], mini_batch: int | None,
                 generator: torch.Generator) -> list[list[TrainRow]]:
    """An epoch's steps: the whole bucket, or shuffled mini-batches of ``mini_batch``."""
    if mini_batch is None:
        return [rows]
    order = torch.randperm(len(rows), generator=generator).tolist()
    return [[rows[i] for i in order[first: first + mini_batch]]
            for first in range(0, len(rows), mini_batch)]


def train_lr(prepared: LmPrepared, tokenizer: Any, adapters: Adapters, lr: float, *,
             batch_size: int = 8) -> tuple[dict[str, Any], dict[str, torch.Tensor]]:
    """One learning rate: fresh adapters, train, score dev after every epoch, keep the best
    epoch (strictly better than every earlier one); stop ``patience`` epochs after it."""
    from fsxlt.training.loop import seed_all
    from fsxlt.training.optim import DEFAULT, build_optimizer

    began = time.perf_counter()
    run, settings = prepared.run, prepared.run.settings
    assert settings.seed is not None and settings.max_epochs and settings.patience
    adapters.reset()
    seed_all(settings.seed)  # the adapters' dropout
    generator = torch.Generator().manual_seed(settings.seed)  # the mini-batches' order
    optimizer = build_optimizer(adapters.model, lr, DEFAULT)
    dev_rows = (train_rows(run.task_spec, run.language, tokenizer, prepared.dev.examples,
                           settings, f"{run.id} (dev)")
                if settings.select_on == "loss" else None)
    epochs: list[dict[str, Any]] = []
    best_score, best_epoch, best_dev = float("-inf"), 0, None
    best_state, n_steps = adapters.snapshot(), 0
    for epoch in range(1, settings.max_epochs + 1):
        losses = [train_step(adapters.model, step, optimizer, forward_batch=batch_size,
                             precision=settings.precision)
                  for step in _epoch_steps(prepared.rows, settings.mini_batch, generator)]
        n_steps += len(losses)
        dev = (dev_loss(adapters.model, dev_rows, batch_size) if dev_rows is not None
               else evaluate(adapters.model, tokenizer, run, prepared.dev,
                             batch_size=batch_size)[0])
        epochs.append({"epoch": epoch, "train_loss": sum(losses) / len(losses),
                       "dev_score": dev["score"]})
        if dev["score"] > best_score:
            best_score, best_epoch, best_dev = dev["score"], epoch, dev
            best_state = adapters.snapshot()
        elif epoch - best_epoch >= settings.patience:
            break
    adapters.restore(best_state)
    return {"lr": lr, "epochs": epochs, "best_epoch": best_epoch,
            "stopped_epoch": epochs[-1]["epoch"], "dev": best_dev,
            "n_trainable_parameters": adapters.n_trainable, "optimizer_steps": n_steps,
            "wall_time_s": round(time.perf_counter() - began, 3)}, best_state


def dev_loss(model: Any, rows: list[TrainRow], batch_size: int) -> dict[str, Any]:
    """The dev set's teacher-forced loss (per token of the gold continuations) as a score
    to maximise: ``--select-on loss``, which spares decoding the dev set every epoch."""
    loss = mean_token_nll(model, rows, batch_size)
    return {"metric": "negative mean token nll", "loss": loss, "score": -loss,
            "n": len(rows)}


def tune(prepared: LmPrepared, tokenizer: Any, adapters: Adapters, *,
         batch_size: int = 8) -> tuple[list[dict[str, Any]], int]:
    """Every lr of the grid (:func:`train_lr`) and the index of the chosen one (best dev
    score; ties: the earlier lr), whose best adapters the model holds afterwards."""
    runs: list[dict[str, Any]] = []
    chosen: tuple[float, int, dict[str, torch.Tensor]] | None = None
    for index, lr in enumerate(prepared.run.settings.lrs):
        result, state = train_lr(prepared, tokenizer, adapters, lr, batch_size=batch_size)
        runs.append(result)
        score = result["dev"]["score"] if result["dev"] else float("-inf")
        if chosen is None or score > chosen[0]:
            chosen = (score, index, state)
    assert chosen is not None
    adapters.restore(chosen[2])
    return runs, chosen[1]


# --------------------------------------------------------------------------- records

def _data_block(split: EvalSplit) -> dict[str, Any]:
    from fsxlt.training.loop import examples_digest

    return {"file": split.path, "n": len(split.examples),
            "sha256": examples_digest(split.examples)}


def _tuning_block(prepared: LmPrepared, adapters: Adapters, runs: list[dict[str, Any]],
                  selected: dict[str, Any], predicted: list[Any]) -> dict[str, Any]:
    """The record's ``lm_tuning`` block: the settings, every lr's dev scores per epoch, the
    chosen lr and epoch (and, generating, the decoding and its outputs' lengths)."""
    settings, spec = prepared.run.settings, prepared.run.task_spec
    block = {**settings.describe(), "target_modules": adapters.target_modules,
             "loss": "mean over rows of the summed negative log-likelihood of the gold "
                     "continuation's tokens after the zero-shot prompt",
             "dev_scores": {f"{run['lr']:g}": [e["dev_score"] for e in run["epochs"]]
                            for run in runs},
             "selected_lr": selected["lr"], "best_epoch": selected["best_epoch"],
             "n_trainable_parameters": adapters.n_trainable,
             "prompt_tokens": prepared.longest,
             "training_rows": len(prepared.rows)}
    if is_generative(spec):
        block["generation"] = generation_block(settings.decode, predicted)
    return block


def lm_record(prepared: LmPrepared, lm: Any, adapters: Adapters, runs: list[dict[str, Any]],
              selected: int, test: dict[str, Any], predicted: list[Any],
              began: float) -> dict[str, Any]:
    """A finished run's record: an adapt record (bucket, model, metric, data, scores, every
    lr's run) with its ``lm_tuning`` block."""
    from fsxlt.training.loop import versions
    from fsxlt.training.optim import DEFAULT
    from fsxlt.training.records import bucket_facts

    run, settings, chosen = prepared.run, prepared.run.settings, runs[selected]
    _, bucket_info = bucket_facts(prepared.bucket, run.task, run.language)
    steps = 1 if settings.mini_batch is None else -(-len(prepared.rows) // settings.mini_batch)
    return {
        "format": RUN_FORMAT, "task": run.task, "language": run.language, "k": run.k,
        "bucket": bucket_info, "method": run.arm.partition("~")[0],
        "lm_tuning": _tuning_block(prepared, adapters, runs, chosen, predicted),
        "lrs": list(settings.lrs), "seed": settings.seed, "max_epochs": settings.max_epochs,
        "patience": settings.patience, "select_start": False,
        "protocol": {"batch_size": settings.mini_batch, "steps_per_epoch": steps,
                     "patience_from": "start", "optimizer": DEFAULT.describe()},
        "runs": runs, "selected_lr": chosen["lr"], "best_epoch": chosen["best_epoch"],
        "start_selected": False,
        "model": {"encoder": lm.name, "start": lm.describe(), "source_training": False},
        "metric": run.task_spec.metric,
        "data": {"dev": _data_block(prepared.dev), "test": _data_block(prepared.test)},
        "dev": chosen["dev"], "test": test,
        "dev_score": chosen["dev"]["score"] if chosen["dev"] else None,
        "test_score": test["score"], "versions": versions(),
        "wall_time_s": round(time.perf_counter() - began, 3),
        "device": str(next(lm.model.parameters()).device.type),
        "precision": settings.precision, "torch_threads": torch.get_num_threads(),
    }


def execute(prepared: LmPrepared, lm: Any, adapters: Adapters, *, batch_size: int = 8,
            save_predictions: bool = False, writer: str = LM_WRITER,
            sweep: str = "", planned: Sequence[int] = ()) -> dict[str, Any]:
    """Train a prepared run over its lr grid, score the chosen adapters on the test set and
    write its record (and predictions) atomically."""
    from fsxlt.fileio import atomic_write_json
    from fsxlt.models.precision import autocast_context
    from fsxlt.study.predictions import write_predictions
    from fsxlt.study.runs import finish_record, predictions_path

    run, began = prepared.run, time.perf_counter()
    with autocast_context(next(lm.model.parameters()).device, run.settings.precision):
        runs, selected = tune(prepared, lm.tokenizer, adapters, batch_size=batch_size)
        if run.settings.select_on == "loss":  # the record's dev score is the task's metric
            dev, _ = evaluate(adapters.model, lm.tokenizer, run, prepared.dev,
                              batch_size=batch_size)
            runs[selected]["dev"] = {**dev, "selection_loss": runs[selected]["dev"]["loss"]}
        test, predicted = evaluate(adapters.model, lm.tokenizer, run, prepared.test,
                                   batch_size=batch_size)
        record = lm_record(prepared, lm, adapters, runs, selected, test, predicted, began)
        finish_record(record, identity=run.identity, arm=run.arm, writer=writer, sweep=sweep,
                      planned=planned)
        if run.predict_path:
            predict_file(run, adapters.model, lm.tokenizer, record, batch_size=batch_size)
    if save_predictions:
        model_info = {"kind": "lm-lora", "record": Path(run.record_path).name,
                      "method": run.arm, "k": run.k, "bucket": run.index, "model": lm.name}
        write_predictions(predictions_path(run.record_path), prepared.test.examples,
                          predicted, task=run.task_spec, language=run.language, split="test",
                          model=model_info, data_sha256=record["data"]["test"]["sha256"])
    atomic_write_json(run.record_path, record)
    return record


def write_error(run: LmRun, err: BaseException, writer: str = LM_WRITER) -> str:
    """Leave the error record of a failed run (rerun at the next start); its one line."""
    from fsxlt.fileio import atomic_write_json
    from fsxlt.study.runs import error_record

    lines = str(err).strip().splitlines()
    text = f"{err.__class__.__name__}: {lines[0] if lines else ''}".rstrip(": ")
    atomic_write_json(run.record_path, error_record(
        identity=run.identity, arm=run.arm, writer=writer, sweep="", stage="lm-adapt",
        error=text, traceback=traceback.format_exception(type(err), err,
                                                         err.__traceback__)[-6:],
        coordinates={"task": run.task, "language": run.language, "k": run.k,
                     "method": run.arm.partition("~")[0],
                     "bucket": {"index": run.index, "name": run.name,
                                "path": run.bucket_path}}))
    return text
