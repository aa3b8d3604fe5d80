"""Command-line options that several commands share, declared once.

Each alias carries its flag and help text, so ``--device`` or ``--lr`` reads
the same in ``source-train``, ``adapt``, ``evaluate``, ``sweep`` and
``analyze``; a command gives only the default.
"""

from __future__ import annotations

import functools
import inspect
import typing
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

import typer

from fsxlt.config_checks import one_of
from fsxlt.methods import BUILTIN


def task_default(field: str, section: str = "training") -> str:
    """A help text's default for a task setting (``source_epochs``, ...; ``section``: the
    task's ``training`` or ``sampling`` block): the value most built-in tasks have and the
    tasks that differ, read from their YAML files."""
    from fsxlt.tasks import builtin_tasks

    tasks: dict[object, list[str]] = {}
    for name, spec in sorted(builtin_tasks().items()):
        tasks.setdefault(getattr(getattr(spec, section), field), []).append(name)
    common = max(tasks, key=lambda value: len(tasks[value]))
    others = "; ".join(f"{value} for {', '.join(names)}" for value, names in tasks.items()
                       if value != common)
    return f"Default: the task's ({common}{'; ' + others if others else ''})."


Device = Annotated[
    str, typer.Option("--device", help="auto (CUDA when present), cpu, cuda, cuda:1, ...")
]
PRECISION_HELP = ("auto (bf16 autocast on a GPU that runs it natively, compute capability "
                  "8.0+; fp32 elsewhere, CPU included), bf16, fp16 (CUDA; training with a "
                  "loss scaler) or fp32. Records name the precision used; a run's identity "
                  "holds it unless fp32.")
Precision = Annotated[str, typer.Option("--precision", help=PRECISION_HELP)]
SweepPrecision = Annotated[str | None, typer.Option(
    "--precision", help=PRECISION_HELP + " Default: the config's precision (auto).")]
EvalMaxTokens = Annotated[int | None, typer.Option(
    "--eval-max-tokens", min=1, help="Wordpieces per evaluation batch (default: 32768 on a "
    "GPU, 4096 on CPU); lower it when a run runs out of memory.")]
MicroBatch = Annotated[int | None, typer.Option(
    "--micro-batch", min=1, help="Encoder inputs per forward pass in training (default: 64). "
    "Dropout masks and padding are drawn per micro-batch, so another value trains another "
    "model: it enters the run's identity (new records, not the old ones resumed).")]
READING_HELP = ("How the data files become examples (repeatable): study (the study's "
                "reading of the task: XNLI's tokenized columns, PAWS-X unquoted, the "
                "remaining dev set by line, long tagging sentences truncated in evaluation, "
                "UD's multiword tokens fused as XTREME fused them), default, or AXIS=CHOICE: "
                "text=raw|tokenized (XNLI 1.0's sentence1_tokenized columns), "
                "quoting=as-written|csv (a CSV-quoted field read as its value), "
                "remaining=legacy|by-line|by-text, eval_long=whole|truncate, "
                "tokens=words|xtreme (UD-POS .conllu files), input=fsxlt|baseline (FewCLUE "
                "csl, cluewsc). Recorded with the sets; their runs read their dev and test "
                "files the same way (docs/protocol.md#readings).")
Reading = Annotated[list[str] | None, typer.Option("--reading", help=READING_HELP)]


def readings_by_task(values: list[str] | None, tasks: list[str]) -> dict[str, Any]:
    """``--reading`` values for several tasks: ``study``/``default`` for each, ``AXIS=CHOICE``
    for each task it applies to, ``TASK:AXIS=CHOICE`` for one; checked before any work."""
    from fsxlt.data.readings import AXES, parse_reading
    from fsxlt.errors import FsxltError
    from fsxlt.tasks import get_task

    chosen: dict[str, list[str]] = {name: [] for name in tasks}
    for value in values or []:
        task, sep, rest = value.partition(":")
        if sep:
            if task not in chosen:
                raise FsxltError(f"--reading {value}: {task} is not a task of this command")
            chosen[task].append(rest)
            continue
        axis = value.partition("=")[0]
        for name in tasks:
            if value in ("study", "default") or axis not in AXES or \
                    AXES[axis].applies(get_task(name)):
                chosen[name].append(value)
    return {name: parse_reading(given, get_task(name)) for name, given in chosen.items()
            if given}


Lrs = Annotated[
    list[float] | None,
    typer.Option("--lr", help="Learning rate (repeatable); default: the task's grid."),
]
Seed = Annotated[int | None, typer.Option("--seed", min=0, help="Default: the task's seed.")]
MaxSeqLength = Annotated[
    int | None,
    typer.Option("--max-seq-length", min=8,
                 help="Training truncation in wordpieces. " + task_default("max_seq_length")),
]
MaxEpochs = Annotated[
    int | None, typer.Option("--max-epochs", min=1,
                             help="Adapt epoch cap. " + task_default("adapt_max_epochs"))
]
Patience = Annotated[
    int | None,
    typer.Option("--patience", min=1, help="Stop after this many epochs without a better target "
                 "dev score. " + task_default("adapt_patience")),
]
DataDir = Annotated[
    Path | None,
    typer.Option("--data-dir", help="Directory with the task's {split}-{lang} files."),
]
MethodName = Annotated[
    str,
    typer.Option("--method", help="Adapting method: a name from 'fsxlt methods' "
                 f"({', '.join(BUILTIN)}, or an installed plug-in), "
                 "or package.module:Class."),
]
MethodOpts = Annotated[
    list[str] | None,
    typer.Option("--method-opt", help="KEY=VALUE option of the method (repeatable); "
                 "'fsxlt methods' lists each method's options."),
]
SelectStart = Annotated[
    bool,
    typer.Option("--select-start", help="Let the start model compete as epoch 0 for the "
                 "target dev score (off: the study's protocol)."),
]
Replace = Annotated[
    bool,
    typer.Option("--replace", help="Replace finished records of other settings (else "
                 "refused); says what it replaced."),
]
BatchSize = Annotated[
    int | None,
    typer.Option("--batch-size", help="Adapt in shuffled mini-batches of this many examples, "
                 "one Adam step each; default: the whole bucket, one step per epoch (the "
                 "study's protocol)."),
]
LongSentences = Annotated[
    str | None,
    typer.Option("--long-sentences", help="A training sentence longer than --max-seq-length "
                 "wordpieces (tagging): truncate (default; the study's and XTREME's) or "
                 "windows (every window of it a training row). Dev and test sentences are "
                 "always scored in windows, every word."),
]
PatienceFrom = Annotated[
    str | None,
    typer.Option("--patience-from", help="start (default: patience counts from epoch 1) or "
                 "first-improvement (from the first epoch whose dev score beats the first "
                 "epoch's)."),
]
OptimizerName = Annotated[
    str | None,
    typer.Option("--optimizer", help="adam (default: the study's; no weight decay, constant "
                 "learning rate), adamw (torch's, decoupled weight decay) or "
                 "transformers-adamw (transformers 4.x's AdamW update rule, the peer "
                 "study's: epsilon before the bias correction, decay after the update)."),
]
WeightDecay = Annotated[
    float | None,
    typer.Option("--weight-decay", help="Weight decay of every weight except biases and "
                 "LayerNorm/layer_norm weights; default 0 (the peer study: 0.05)."),
]
Warmup = Annotated[
    float | None,
    typer.Option("--warmup", help="Warm the learning rate up linearly from 0 over this "
                 "fraction of all training steps, in [0, 1); default 0 (the peer: 0.1)."),
]
FractionalWarmup = Annotated[
    bool,
    typer.Option("--fractional-warmup", help="Keep --warmup x steps unrounded (the peer's "
                 "trident: 2.5 warm-up steps of 25), not rounded to whole steps."),
]
Schedule = Annotated[
    str | None,
    typer.Option("--schedule", help="Learning rate after the warm-up: constant (default) or "
                 "linear (down to 0 at the last step: steps per epoch x epochs, "
                 "transformers' get_linear_schedule_with_warmup)."),
]
QaDecoding = Annotated[
    str | None,
    typer.Option("--qa-decoding", help="Extractive QA: how answers are decoded: max-context "
                 "(default; BERT's and XTREME's: a span counts only in the window where its "
                 "start token has the most context) or any-window (fsxlt 0.4's). In the "
                 "run's identity."),
]
LabelAllTokens = Annotated[
    bool,
    typer.Option("--label-all-tokens", help="Tagging: train on every wordpiece of a word, "
                 "each with the word's label (the peer study's), not only its last piece "
                 "(the study's); dev and test still score each word's last piece."),
]


# the causal LM's task, model, output, prompt and decoding, shared by fsxlt icl and
# fsxlt lm-adapt
LmTask = Annotated[str, typer.Option("--task", help="Task name or task YAML (with icl:).")]
TargetLang = Annotated[str, typer.Option("--lang", help="Target language (ISO 639-1).")]
LmModel = Annotated[str, typer.Option(
    "--model", help="Causal LM: a hub name or a local directory.")]
LmOut = Annotated[Path, typer.Option(
    "--out", help="Runs directory: records go to OUT/<task>/<lang>/k<K>/<arm>/<bucket>.json.")]
GgufFile = Annotated[str | None, typer.Option(
    "--gguf-file", help="A GGUF file inside the --model directory (de-quantised).")]
TestFile = Annotated[Path | None, typer.Option("--test", help="Target test file.")]
Threads = Annotated[int | None, typer.Option("--threads", min=1, help="torch CPU threads.")]
SavePredictions = Annotated[bool, typer.Option(
    "--save-predictions", help="Also write each run's test predictions beside its record.")]
TemplateLang = Annotated[str, typer.Option(
    "--template-lang", help="Instruction and template in en or the target language.")]
WordsLang = Annotated[str, typer.Option(
    "--words-lang", help="Label words in en or the target language.")]
MaxNewTokens = Annotated[int, typer.Option(
    "--max-new-tokens", min=1, help="Generation and QA tasks: the token budget of each "
    "greedy output.")]
Batching = Annotated[str, typer.Option(
    "--batching", help="Generation and QA tasks: how queries share a batch: auto (padded "
    "batches, or one query length per batch where a model's sliding window is shorter than "
    "the prompt), padded or one-length (exact, fsxlt 0.5's). In the run's identity.")]
PredictFile = Annotated[Path | None, typer.Option(
    "--predict", help="A file of the task to predict (XGLUE's, FewCLUE's): each run also "
    "writes its benchmark submission file under submission/ beside its record (e.g. "
    "<bucket>/QG/<lang>.prediction), for fsxlt submission.")]
StopStrings = Annotated[list[str] | None, typer.Option(
    "--stop", help="Generation and QA tasks: where an output ends (repeatable; \\n is a "
    "newline). Default: the end of the template's line.")]


def stop_strings(given: list[str] | None) -> tuple[str, ...]:
    """Stop strings as typed (``\\n`` and ``\\t`` meaning newline and tab); none given: the
    end of the template's line."""
    from fsxlt.icl.generation import DEFAULT_STOP

    if not given:
        return DEFAULT_STOP
    return tuple(text.replace("\\n", "\n").replace("\\t", "\t") for text in given)


LogTo = Annotated[str | None, typer.Option(
    "--log-to", help="Also send each record to a tracker: mlflow, wandb or tensorboard "
    "(one tracker run per record; docs/reports.md).")]
LogUri = Annotated[str | None, typer.Option(
    "--log-uri", help="Where the tracker keeps its runs: MLflow's tracking URI (e.g. "
    "sqlite:///mlflow.db), the folder for wandb and tensorboard.")]
LogProject = Annotated[str | None, typer.Option(
    "--log-project", help="The MLflow experiment or W&B project (default fsxlt).")]


@dataclass(frozen=True)
class LmRunOptions:
    """The options ``fsxlt icl`` and ``fsxlt lm-adapt`` share besides the task, language,
    model and output: the GGUF file, the test data, how an output is decoded, the
    prompt's languages, where it runs and what it writes."""

    gguf_file: str | None
    test_file: Path | None
    data_dir: Path | None
    max_new_tokens: int
    stop: tuple[str, ...]
    batching: str
    template_lang: str
    words_lang: str
    threads: int | None
    device: str
    predict: Path | None
    save_predictions: bool
    replace: bool
    log_to: str | None = None
    log_uri: str | None = None
    log_project: str | None = None
    precision: str = "auto"  # resolved for --device by lm_run_options


# name, alias, default: declared once for both commands (lm_run_options)
_LM_RUN_OPTIONS = (
    ("gguf_file", GgufFile, None), ("test_file", TestFile, None), ("data_dir", DataDir, None),
    ("max_new_tokens", MaxNewTokens, 32), ("stop", StopStrings, None),
    ("batching", Batching, "auto"),
    ("template_lang", TemplateLang, "en"), ("words_lang", WordsLang, "en"),
    ("threads", Threads, None), ("device", Device, "auto"), ("predict", PredictFile, None),
    ("save_predictions", SavePredictions, False), ("replace", Replace, False),
    ("log_to", LogTo, None), ("log_uri", LogUri, None), ("log_project", LogProject, None),
    ("precision", Precision, "auto"),
)


def lm_run_options(command: Callable[..., Any]) -> Callable[..., Any]:
    """Give a causal-LM command the shared options (:class:`LmRunOptions`) after its own.

    typer reads a command's options from its signature and type hints, so the wrapper
    shows the command's own parameters, less ``lm_options``, then the shared ones; the
    command receives the shared ones as one ``lm_options`` argument.
    """
    hints = typing.get_type_hints(command, include_extras=True)
    own = [p.replace(annotation=hints[p.name])
           for p in inspect.signature(command).parameters.values() if p.name != "lm_options"]
    shared = [inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=default,
                                annotation=alias) for name, alias, default in _LM_RUN_OPTIONS]

    @functools.wraps(command)
    def wrapper(**kwargs: Any) -> Any:
        values = {name: kwargs.pop(name) for name, _, _ in _LM_RUN_OPTIONS}
        if "model" in kwargs:  # the causal LM, checked before torch and before any data
            from fsxlt.models.location import check_causal_lm_location

            check_causal_lm_location(kwargs["model"], values.get("gguf_file"))
        values["stop"] = stop_strings(values["stop"])
        from fsxlt.icl.generation import BATCHING

        one_of(values["batching"], BATCHING, "--batching", "value")
        from fsxlt.models.precision import resolve_precision
        from fsxlt.training.checkpoint import resolve_device

        values["precision"] = resolve_precision(values["precision"],
                                                resolve_device(values["device"]))
        return command(lm_options=LmRunOptions(**values), **kwargs)

    wrapper.__signature__ = inspect.Signature([*own, *shared], return_annotation=None)
    wrapper.__annotations__ = {p.name: p.annotation for p in [*own, *shared]}
    del wrapper.__wrapped__  # typer is to read the signature above, not the command's
    return wrapper
