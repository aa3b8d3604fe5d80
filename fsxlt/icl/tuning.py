"""Fine-tuning the ICL arm's causal LM on a bucket with LoRA: one bucket in, one record out.

The model, the prompts and the scoring are the ICL arm's; the protocol is the
study's adapting one. A training example is the task's zero-shot prompt
(:func:`fsxlt.icl.prompts.render` with no demonstrations: the instruction and
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

import random
import time
import traceback
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import torch

from fsxlt.errors import FsxltError
from fsxlt.icl.generation import DEFAULT_STOP, DecodeSettings, check_room, generate
from fsxlt.icl.generative import generation_block, gold_of, is_generative
from fsxlt.icl.lm_lora import (
    Adapters,
    LoraSettings,
    TrainRow,
    check_rows,
    mean_token_nll,
    train_step,
)
from fsxlt.icl.prompts import PromptSettings, PromptText, render
from fsxlt.icl.scoring import (
    TokenizedPrompt,
    check_length,
    decision_scores,
    option_scores,
    plan_rows,
    predictions,
    tokenize_prompt,
)
from fsxlt.runs import RUN_FORMAT, identity_hash, record_path
from fsxlt.tasks import TaskSpec, get_task

LM_WRITER = "fsxlt lm-adapt"
DEFAULT_ARM = "lm-lora"
LM_LRS = (1e-4, 3e-4, 1e-3)
SELECT_ON = ("metric", "loss")
PROMPT = PromptSettings()   # English template and label words: the ICL arm's default


@dataclass(frozen=True)
class LmSettings:
    """How LoRA runs of a causal LM train and score (everything but the bucket and the
    data); None: the task's default (epochs, patience, seed) or the whole bucket."""

    model: str
    gguf_file: str | None = None
    lrs: tuple[float, ...] = LM_LRS
    max_epochs: int | None = None
    patience: int | None = None
    seed: int | None = None
    mini_batch: int | None = None
    lora: LoraSettings = LoraSettings()
    sample_seed: int = 0             # the test and dev samples (fsxlt icl's default seed)
    test_limit: int | None = None
    dev_limit: int | None = None
    max_new_tokens: int = 32         # generative tasks: the token budget
    stop: tuple[str, ...] = DEFAULT_STOP
    arm: str | None = None
    select_on: str = "metric"        # what dev scores each epoch: the task's metric, or loss

    def check(self) -> None:
        if not self.lrs or any(not lr > 0 for lr in self.lrs):
            raise FsxltError(f"learning rates must be > 0, got {list(self.lrs)}")
        for name, value in (("max epochs", self.max_epochs), ("patience", self.patience),
                            ("mini-batch", self.mini_batch), ("test limit", self.test_limit),
                            ("dev limit", self.dev_limit)):
            if value is not None and value < 1:
                raise FsxltError(f"the {name} must be at least 1, got {value}")
        self.lora.check()
        self.decode.check()
        if self.select_on not in SELECT_ON:
            raise FsxltError(f"--select-on is one of {', '.join(SELECT_ON)}, not "
                             f"{self.select_on!r}")
        if self.arm is not None and (not self.arm.startswith("lm-")
                                     or any(c in self.arm for c in "@~+/ ")):
            raise FsxltError(f"an LM fine-tuning arm name starts with lm- and has no @, ~, +, / "
                             f"or space; got {self.arm!r}")

    @property
    def decode(self) -> DecodeSettings:
        return DecodeSettings(self.max_new_tokens, tuple(self.stop))

    def resolved(self, spec: TaskSpec) -> LmSettings:
        """The settings with the task's defaults filled in (adapting's epochs, patience and
        seed)."""
        training = spec.training
        return replace(self, lrs=tuple(float(lr) for lr in self.lrs),
                       max_epochs=self.max_epochs or training.adapt_max_epochs,
                       patience=self.patience or training.adapt_patience,
                       seed=training.seed if self.seed is None else int(self.seed))

    def arm_name(self) -> str:
        return self.arm or DEFAULT_ARM

    def describe(self) -> dict[str, Any]:
        """What the identity and the record's ``lm_tuning`` block name (resolved settings)."""
        return {"lora": self.lora.describe(), "lrs": list(self.lrs),
                "max_epochs": self.max_epochs, "patience": self.patience, "seed": self.seed,
                "mini_batch": self.mini_batch, "sample_seed": self.sample_seed,
                "test_limit": self.test_limit, "dev_limit": self.dev_limit,
                "optimizer": "adam", "prompt": PROMPT.describe(), "select_on": self.select_on}


@dataclass(frozen=True)
class LmRun:
    """One LoRA run: what ``fsxlt.runs.plan_writes`` needs, and where its inputs are."""

    task: str
    language: str
    k: int
    index: int
    name: str
    bucket_path: str
    bucket_sha256: str
    dev_path: str
    test_path: str
    record_path: str
    identity: dict[str, Any] = field(compare=False)
    settings: LmSettings = field(compare=False)
    strategy: str = ""
    spec: TaskSpec | None = field(default=None, compare=False)

    @property
    def task_spec(self) -> TaskSpec:
        return self.spec if self.spec is not None else get_task(self.task)

    @property
    def config_hash(self) -> str:
        return identity_hash(self.identity)

    @property
    def id(self) -> str:
        return f"{self.task}/{self.language}/k{self.k}/{self.name}"

    @property
    def arm(self) -> str:
        return Path(self.record_path).parent.name


# --------------------------------------------------------------------------- planning

def check_lm_settings(spec: TaskSpec, language: str, settings: LmSettings) -> None:
    """Everything wrong with LoRA runs of ``spec`` in ``language`` before a model loads (the
    task, the settings): one line. The tasks are the ICL arm's."""
    from fsxlt.icl.run import check_task

    spec.check_language(language)
    check_task(spec)
    settings.check()


def _file(path: Path | None, what: str) -> Path | None:
    if path is not None and not Path(path).is_file():
        raise FsxltError(f"{path}: {what} file not found")
    return path


def _test_file(spec: TaskSpec, language: str, test: Path | None, data_dir: Path | None,
               set_test: Path | None) -> Path:
    """``--test``, else the set's own test set (fixed splits), else the task's test file
    under ``data_dir`` (the order ``fsxlt icl`` takes)."""
    found = _file(test, "--test") or set_test
    if found is None and data_dir is not None:
        from fsxlt.execution.inputs import data_file

        found = data_file(spec, str(data_dir), "test", language)
    if found is None:
        raise FsxltError("no target test set: pass --test FILE or --data-dir DIR")
    return Path(found)


def _dev_file(spec: TaskSpec, language: str, dev: Path | None, own: Path | None,
              data_dir: Path | None, files: Any) -> Path:
    """``--dev``, else the bucket's own dev set, else (as ``fsxlt adapt``) the task's dev
    file under ``data_dir`` (tasks sampled from train) or the set's remaining dev examples."""
    if dev is not None or own is not None:
        return Path(dev or own)
    if data_dir is not None and not spec.selects_on_remaining:
        from fsxlt.execution.inputs import data_file

        return data_file(spec, str(data_dir), "dev", language)
    if files.remaining is not None:
        return Path(files.remaining)
    if spec.selects_on_remaining:
        raise FsxltError(f"{files.directory}: no dev-remaining.jsonl beside the bucket; task "
                         f"{spec.name} selects models on the examples of its sampled split "
                         "that are in no bucket, so pass --dev FILE explicitly")
    raise FsxltError("no target dev set: pass --dev FILE or --data-dir DIR")


def lm_plan(task: str | TaskSpec, language: str, bucket: Path, out: Path,
            settings: LmSettings, *, test: Path | None = None, dev: Path | None = None,
            data_dir: Path | None = None) -> list[LmRun]:
    """The runs of ``fsxlt lm-adapt``: one per bucket of ``bucket`` (a set, a bucket of a
    set, or a bucket file), each with its dev and test files and its identity."""
    from fsxlt.fileio import sha256_file
    from fsxlt.icl.model import model_fingerprint
    from fsxlt.sampling.set_files import named_files
    from fsxlt.sampling.store import read_bucket

    spec = get_task(task)
    check_lm_settings(spec, language, settings)
    settings = settings.resolved(spec)
    gguf = Path(settings.model) / (settings.gguf_file or "")
    if settings.gguf_file and Path(settings.model).is_dir() and not gguf.is_file():
        raise FsxltError(f"{gguf}: GGUF file not found")
    files = named_files(Path(bucket))
    test_path = _test_file(spec, language, test, data_dir, files.test)
    _file(dev, "--dev")
    arm = settings.arm_name()
    decoding = {"decoding": settings.decode.describe()} if is_generative(spec) else {}
    digests: dict[Path, str] = {}
    common = {"task": spec.name, "language": language, "method": arm,
              "model": model_fingerprint(settings.model, settings.gguf_file),
              "tuning": settings.describe(), "icl": repr(spec.icl), **decoding,
              "test": digests.setdefault(test_path, sha256_file(test_path))}
    runs = []
    for _, _, path, own_dev in files.buckets:
        loaded = read_bucket(path)
        if (loaded.task, loaded.language) != (spec.name, language):
            raise FsxltError(f"{path}: a bucket of {loaded.task}/{loaded.language}, not "
                             f"{spec.name}/{language}")
        dev_path = _dev_file(spec, language, dev, own_dev, data_dir, files)
        if dev_path not in digests:
            digests[dev_path] = sha256_file(dev_path)
        strategy = loaded.meta.get("strategy")
        strategy = str(strategy.get("name") or "") if isinstance(strategy, dict) else ""
        identity = {**common, "k": loaded.k, "index": loaded.index, "bucket": loaded.sha256,
                    "dev": digests[dev_path]}
        full_arm = f"{arm}~{strategy}" if strategy else arm
        runs.append(LmRun(spec.name, language, loaded.k, loaded.index, loaded.name, str(path),
                          loaded.sha256, str(dev_path), str(test_path),
                          str(record_path(out, spec.name, language, loaded.k, full_arm,
                                          loaded.name)), identity, settings, strategy, spec))
    return runs


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


def seeded_sample(examples: list[Any], limit: int | None, key: str) -> list[Any]:
    """The first ``limit`` of a sample seeded by ``key``, in file order (all: no limit)."""
    if limit is None or limit >= len(examples):
        return list(examples)
    chosen = random.Random(key).sample(range(len(examples)), limit)
    return [examples[i] for i in sorted(chosen)]


def load_split(run: LmRun, split: str) -> list[Any]:
    """A run's dev or test examples, the seeded sample when limited; the test sample is the
    one ``fsxlt icl --test-limit`` scores with ``--seed`` = the sample seed."""
    from fsxlt.icl.run import IclSettings, sample_test
    from fsxlt.sampling.set_files import read_data_file

    path = run.test_path if split == "test" else run.dev_path
    examples = read_data_file(path, run.task_spec, run.language, split)
    if not examples:
        raise FsxltError(f"{path}: no {split} examples")
    settings = run.settings
    if split == "test":
        return sample_test(examples, IclSettings(model=settings.model,
                                                 seed=settings.sample_seed,
                                                 test_limit=settings.test_limit))
    return seeded_sample(examples, settings.dev_limit, f"fsxlt-lm-dev:{settings.sample_seed}")


def _prompt_text(spec: TaskSpec, language: str, examples: list[Any]) -> PromptText:
    return render(spec.icl, spec.labels, PROMPT, language, [], examples)


def eval_split(run: LmRun, examples: list[Any], tokenizer: Any, model: Any,
               split: str) -> tuple[EvalSplit, int]:
    """A dev or test set's zero-shot prompt, tokenized and checked against the model's
    context (one line naming the run), and its longest prompt in tokens."""
    spec, what = run.task_spec, f"{run.id} ({split})"
    generative = is_generative(spec)
    prompt = tokenize_prompt(tokenizer, _prompt_text(spec, run.language, examples), what,
                             check=not generative)
    if generative:
        longest = check_room(model, prompt.prefix, prompt.queries, run.settings.decode, what)
        gold = gold_of(spec, examples, run.language)
    else:
        longest = check_length(plan_rows(prompt, what), model, what)
        gold = [e.label for e in examples]
    path = run.test_path if split == "test" else run.dev_path
    return EvalSplit(examples, prompt, gold, path), longest


def _gold_index(spec: TaskSpec, example: Any) -> int:
    """Which option of a ranked example is right (a candidate's position, a label's)."""
    if spec.is_multiple_choice:
        return int(example.label)
    return list(spec.labels).index(example.label)


def tail_text(spec: TaskSpec) -> str:
    """The template's text after ``{label}`` and the separator (no fields: templates put
    every field before ``{label}``)."""
    return spec.icl.template("en").split("{label}")[1] + spec.icl.separator


def train_rows(spec: TaskSpec, language: str, tokenizer: Any, examples: list[Any],
               decode: DecodeSettings, what: str) -> list[TrainRow]:
    """The bucket's training rows: each example's zero-shot prompt and gold continuation,
    the continuation (with, generating, what ends it) scored."""
    generative = is_generative(spec)
    prompt = tokenize_prompt(tokenizer, _prompt_text(spec, language, examples), what,
                             check=not generative)
    ending: list[int] = []
    if generative:
        text = tail_text(spec)
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
                      run.settings.decode, run.id)
    longest = max(longest, check_rows(rows, model, run.id))
    return LmPrepared(run, bucket, rows, dev, test, longest)


# --------------------------------------------------------------------------- training

def evaluate(model: Any, tokenizer: Any, run: LmRun, split: EvalSplit, *,
             batch_size: int = 8) -> tuple[dict[str, Any], list[Any]]:
    """A split's scores (the task's metric) and predictions, as the ICL arm makes them:
    options ranked by summed log-likelihood, or greedy decoding."""
    from fsxlt.evaluation import compute_scores

    spec = run.task_spec
    model.eval()
    if is_generative(spec):
        predicted = generate(model, tokenizer, split.prompt.prefix, split.prompt.queries,
                             run.settings.decode, batch_size=batch_size, what=run.id)
    else:
        scores = option_scores(model, split.prompt, run.id, batch_size=batch_size)
        predicted = predictions(decision_scores(scores), spec.labels)
    return compute_scores(spec, split.gold, predicted), predicted


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
                           settings.decode, f"{run.id} (dev)")
                if settings.select_on == "loss" else None)
    epochs: list[dict[str, Any]] = []
    best_score, best_epoch, best_dev = float("-inf"), 0, None
    best_state, n_steps = adapters.snapshot(), 0
    for epoch in range(1, settings.max_epochs + 1):
        losses = [train_step(adapters.model, step, optimizer, forward_batch=batch_size)
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
        "torch_threads": torch.get_num_threads(),
    }


def execute(prepared: LmPrepared, lm: Any, adapters: Adapters, *, batch_size: int = 8,
            save_predictions: bool = False, writer: str = LM_WRITER) -> dict[str, Any]:
    """Train a prepared run over its lr grid, score the chosen adapters on the test set and
    write its record (and predictions) atomically."""
    from fsxlt.fileio import atomic_write_json
    from fsxlt.predictions import write_predictions
    from fsxlt.runs import finish_record, predictions_path

    run, began = prepared.run, time.perf_counter()
    runs, selected = tune(prepared, lm.tokenizer, adapters, batch_size=batch_size)
    if run.settings.select_on == "loss":  # the record's dev score is the task's metric
        dev, _ = evaluate(adapters.model, lm.tokenizer, run, prepared.dev,
                          batch_size=batch_size)
        runs[selected]["dev"] = {**dev, "selection_loss": runs[selected]["dev"]["loss"]}
    test, predicted = evaluate(adapters.model, lm.tokenizer, run, prepared.test,
                               batch_size=batch_size)
    record = lm_record(prepared, lm, adapters, runs, selected, test, predicted, began)
    finish_record(record, identity=run.identity, arm=run.arm, writer=writer)
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
    from fsxlt.runs import error_record

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
