"""In-context learning runs: one bucket in, one record out, in the runs directory.

A run shows a causal LM the bucket's examples as demonstrations and predicts
the target's test examples by rank classification (:mod:`fsxlt.icl.scoring`);
no weights change. Its record is an adapt-format record (``fsxlt report``,
``--compare`` and the analyses read it unchanged) with an ``icl`` block (the
prompt settings, the demonstrations' order, prompt lengths) and the model in
``model``; its arm is its method, ``icl`` plus what its prompt settings
change (``icl-target``, ``icl-calibrated``, ...), or the name given. K=0 is
zero-shot prompting: one record, ``k0/<arm>/zero-shot.json``.

:func:`fsxlt.icl.plan.icl_plan` builds the runs of a bucket, a bucket set or K=0 (reading
and hash-checking their files) through :func:`~fsxlt.icl.plan.icl_runs`, which a sweep's ICL
arms call on its bucket sets (one identity for both); :func:`prepare` renders and tokenizes a
run's prompts (every bad input is a one-line error before anything is
written); :func:`execute` scores a prepared run and writes its record. A
sweep worker can call :func:`prepare` and :func:`execute` on one run.
"""

from __future__ import annotations

import random
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fsxlt.data.examples import TEST_SAMPLE_KEY, seeded_sample
from fsxlt.errors import FsxltError
from fsxlt.icl.details import option_keys, prompt_details
from fsxlt.icl.generation import BATCHING, DEFAULT_STOP, DecodeSettings, check_room
from fsxlt.icl.generative import (
    generate_prompt,
    generation_block,
    gold_of,
    is_generative,
)
from fsxlt.icl.planned import CausalLmRun, check_arm_name
from fsxlt.icl.presets import describe_preset, get_preset, render_for
from fsxlt.icl.scoring import (
    CONTENT_FREE,
    OptionScores,
    TokenizedPrompt,
    check_length,
    decision_scores,
    label_tokens,
    option_scores,
    plan_rows,
    predictions,
    tokenize_prompt,
)
from fsxlt.identity import fingerprint
from fsxlt.models.precision import autocast_context
from fsxlt.study.runs import RUN_FORMAT, ZERO_SHOT_RUN
from fsxlt.tasks import TaskSpec
from fsxlt.tasks.prompts import PROMPT_LANGUAGES, PromptSettings

ICL_WRITER = "fsxlt icl"


def _torch_threads() -> int:
    import torch

    return torch.get_num_threads()


ORDERS = ("seeded", "bucket", "similarity")


@dataclass(frozen=True)
class IclSettings:
    """How an ICL run prompts and decides (everything but the bucket and the data)."""

    model: str
    gguf_file: str | None = None
    template_language: str = "en"
    words_language: str = "en"
    calibrate: bool = False
    normalize: bool | str = False   # True: per token; "char": per character (acc_norm)
    order: str = "seeded"
    seed: int = 0
    test_limit: int | None = None
    arm: str | None = None
    encoder: str | None = None      # the sentence encoder of the similarity order
    max_new_tokens: int = 32        # generative tasks: the token budget
    stop: tuple[str, ...] = DEFAULT_STOP   # generative tasks: where an output ends
    batching: str = BATCHING[0]     # generative tasks: how queries share a batch
    preset: str | None = None       # a prompt preset (fsxlt.icl.presets) instead of the YAML's
    precision: str = "fp32"         # the forward passes' precision, resolved for the device

    def check(self) -> None:
        for what, value in (("template", self.template_language),
                            ("label words", self.words_language)):
            if value not in PROMPT_LANGUAGES:
                raise FsxltError(f"the {what} language is en or target, not {value!r}")
        if self.order not in ORDERS:
            raise FsxltError(f"the demonstration order is one of {', '.join(ORDERS)}, "
                             f"not {self.order!r}")
        if (self.order == "similarity") != (self.encoder is not None):
            raise FsxltError("the similarity order needs a sentence encoder (--encoder), and "
                             "an encoder is only used by --order similarity")
        if self.test_limit is not None and self.test_limit < 1:
            raise FsxltError(f"the test limit must be at least 1, got {self.test_limit}")
        if not (isinstance(self.normalize, bool) or self.normalize == "char"):
            raise FsxltError("length normalisation is False, True (per token) or 'char' (per "
                             f"character), not {self.normalize!r}")
        if self.preset is not None:
            get_preset(self.preset)  # an unknown one: one line naming the presets
            if self.prompt != PromptSettings():
                raise FsxltError(f"the prompt preset {self.preset} brings its own prompts in "
                                 "the target language; --template-lang and --words-lang do "
                                 "not apply to it")
        check_arm_name(self.arm, "icl", "@~/ ", "an ICL")

    @property
    def prompt(self) -> PromptSettings:
        return PromptSettings(self.template_language, self.words_language)

    @property
    def decode(self) -> DecodeSettings:
        """Greedy decoding of a generative task's runs (part of their identity only)."""
        return DecodeSettings(self.max_new_tokens, tuple(self.stop), self.batching)

    def arm_name(self) -> str:
        """``icl`` and a suffix per setting that differs from the default."""
        if self.arm:
            return self.arm
        parts = ["icl"] + ([get_preset(self.preset).arm] if self.preset else [])
        if self.template_language == self.words_language == "target":
            parts.append("target")
        elif self.template_language == "target":
            parts.append("target-template")
        elif self.words_language == "target":
            parts.append("target-words")
        parts += ["calibrated"] * self.calibrate + ["norm"] * (self.normalize is True)
        parts += ["norm-char"] * (self.normalize == "char")
        parts += ["bucket-order"] * (self.order == "bucket")
        parts += ["similarity"] * (self.order == "similarity")
        return "-".join(parts)

    def describe(self) -> dict[str, Any]:
        return {**self.prompt.describe(), "calibrate": self.calibrate,
                "content_free": CONTENT_FREE if self.calibrate else None,
                "normalize": self.normalize, "order": self.order, "seed": self.seed,
                "test_limit": self.test_limit, "encoder": self.encoder,
                **({"encoder_fingerprint": fingerprint(self.encoder)} if self.encoder else {}),
                **({"preset": describe_preset(self.preset)} if self.preset else {})}


@dataclass(frozen=True)
class IclRun(CausalLmRun):
    """One ICL run: what ``fsxlt.study.write_plan.plan_writes`` needs, and where its inputs are."""

    task: str
    language: str
    k: int
    index: int
    name: str
    bucket_path: str          # "" for K=0
    bucket_sha256: str
    test_path: str
    record_path: str
    identity: dict[str, Any] = field(compare=False)
    strategy: str = ""
    spec: TaskSpec | None = field(default=None, compare=False)  # a task YAML's, if given
    predict_path: str = ""    # a file to predict (XGLUE/FewCLUE submission files)
    test_split: str = "test"  # the part of test_path read ("": a file --test named, whole)


# --------------------------------------------------------------------------- preparing

@dataclass
class PromptGroup:
    """Test examples that share one prompt prefix (one demonstration order): their
    positions in the test set, the demonstrations in order, and the tokenized prompt
    (the examples' queries, then the content-free one when calibrating)."""

    examples: list[int]
    demonstrations: list[Any]
    prompt: TokenizedPrompt
    text: Any = None  # the rendered PromptText the prompt was tokenized from


@dataclass
class Prepared:
    """A run with its bucket, test examples and tokenized prompts, checked."""

    run: IclRun
    bucket: Any                      # fsxlt.sampling.store.Bucket, None for K=0
    test: list[Any]
    groups: list[PromptGroup]
    longest: int


def demonstration_order(examples: list[Any], settings: IclSettings, index: int) -> list[Any]:
    """The bucket's examples in the seeded order (a shuffle by the seed and the bucket's
    index; also the tie-break of the similarity order), or as the bucket file lists them
    (``order: bucket``)."""
    if settings.order == "bucket":
        return list(examples)
    shuffled = list(examples)
    random.Random(f"fsxlt-icl:{settings.seed}:{index}").shuffle(shuffled)
    return shuffled


def sample_test(examples: list[Any], settings: IclSettings) -> list[Any]:
    """The first ``test_limit`` examples of a seeded sample (the same for every bucket)."""
    return seeded_sample(examples, settings.test_limit, TEST_SAMPLE_KEY.format(
        seed=settings.seed))


def _content_free_example(spec: TaskSpec) -> Any:
    from fsxlt.data import TextExample

    pair = CONTENT_FREE if spec.input == "pair" else None
    return TextExample(id="content-free", text_a=CONTENT_FREE, text_b=pair, label=spec.labels[0])


def _orders(shots: list[Any], test: list[Any], settings: IclSettings,
            encoder: Any) -> dict[tuple[int, ...], list[int]]:
    """Test positions by the demonstration order they see (one order unless by similarity)."""
    if settings.order != "similarity" or not shots:
        return {tuple(range(len(shots))): list(range(len(test)))}
    from fsxlt.icl.similarity import similarity_orders

    if encoder is None:
        raise FsxltError("the similarity order needs a sentence encoder (--encoder)")
    groups: dict[tuple[int, ...], list[int]] = {}
    for position, order in enumerate(similarity_orders(shots, test, *encoder)):
        groups.setdefault(order, []).append(position)
    return groups


def prepare(run: IclRun, settings: IclSettings, tokenizer: Any, model: Any,
            test: list[Any], encoder: Any = None) -> Prepared:
    """Render and tokenize a run's prompts and check their length against the model's
    context; every problem is a one-line error naming the bucket. ``encoder``: a sentence
    encoder and its tokenizer (the similarity order)."""
    from fsxlt.sampling.store import read_bucket

    spec = run.task_spec
    bucket = read_bucket(run.bucket_path) if run.bucket_path else None
    shots = demonstration_order(bucket.examples, settings, run.index) if bucket else []
    groups, longest = [], 0
    free = [_content_free_example(spec)] if settings.calibrate else []
    for order, members in _orders(shots, test, settings, encoder).items():
        demos = [shots[i] for i in order]
        text = render_for(spec, settings.prompt, settings.preset, run.language, demos,
                          [test[i] for i in members] + free)
        generative = is_generative(spec)
        prompt = tokenize_prompt(tokenizer, text, run.id, check=not generative)
        longest = max(longest, check_room(model, prompt.prefix, prompt.queries,
                                          settings.decode, run.id) if generative
                      else check_length(plan_rows(prompt, run.id), model, run.id))
        groups.append(PromptGroup(members, demos, prompt, text))
    return Prepared(run, bucket, test, groups, longest)


def load_test(run: IclRun, settings: IclSettings) -> list[Any]:
    """A run's test examples (the seeded subset when ``test_limit`` is set): a task file, or a
    bucket set's own test set (fixed splits: FewCLUE's)."""
    from fsxlt.sampling.set_files import read_data_file

    examples = read_data_file(run.test_path, run.task_spec, run.language, run.test_split or None,
                              run.reading)
    if not examples:
        raise FsxltError(f"{run.test_path}: no test examples")
    return sample_test(examples, settings)


# --------------------------------------------------------------------------- executing

def _bucket_block(prepared: Prepared) -> dict[str, Any]:
    run, bucket = prepared.run, prepared.bucket
    if bucket is None:
        return {"id": run.id, "index": 0, "k": 0, "name": ZERO_SHOT_RUN,
                "sha256": run.bucket_sha256, "n_examples": 0, "sampler": None}
    info = {"id": bucket.id, "index": bucket.index, "k": bucket.k, "sha256": bucket.sha256,
            "n_examples": len(bucket.examples), "sampler": bucket.meta.get("sampler")}
    if bucket.meta.get("name"):
        info["name"] = bucket.name
    if bucket.set_size is not None:
        info["set_size"] = bucket.set_size
    if run.strategy:
        info["strategy"] = run.strategy
    if bucket.union:
        info["union"] = True
    return info


def score_prepared(prepared: Prepared, model: Any, settings: IclSettings, *,
                   batch_size: int = 8, cached: bool = True,
                   ) -> tuple[list[str], OptionScores, OptionScores | None]:
    """Predicted labels, the options' scores and (calibrating) each example's content-free
    scores (those of its group's prefix)."""
    n = len(prepared.test)
    loglik: list[list[float]] = [[] for _ in range(n)]
    n_tokens: list[list[int]] = [[] for _ in range(n)]
    free_ll: list[list[float]] = [[] for _ in range(n)]
    free_n: list[list[int]] = [[] for _ in range(n)]
    n_chars: list[list[int]] = [[] for _ in range(n)]
    free_c: list[list[int]] = [[] for _ in range(n)]
    for group in prepared.groups:
        scores = option_scores(model, group.prompt, prepared.run.id, cached=cached,
                               batch_size=batch_size)
        chars = scores.n_chars or [[] for _ in scores.loglik]
        for row, position in enumerate(group.examples):
            loglik[position], n_tokens[position] = scores.loglik[row], scores.n_tokens[row]
            n_chars[position] = chars[row]
            if settings.calibrate:  # the content-free query is the group's last
                free_ll[position], free_n[position] = scores.loglik[-1], scores.n_tokens[-1]
                free_c[position] = chars[-1]
    scores = OptionScores(loglik, n_tokens, n_chars if all(n_chars) else None)
    free = OptionScores(free_ll, free_n, free_c if all(free_c) else None) \
        if settings.calibrate else None
    decisions = decision_scores(scores, normalize=settings.normalize, content_free=free)
    return predictions(decisions, prepared.run.task_spec.labels), scores, free


def _icl_block(prepared: Prepared, settings: IclSettings, free: OptionScores | None,
               batch_size: int) -> dict[str, Any]:
    """The record's ``icl`` block: settings, prompt lengths, the demonstrations' order
    (``demonstrations`` when every test example saw one order, else
    ``test_demonstrations``: each test example's own)."""
    groups = prepared.groups
    return {**settings.describe(), "prefix_tokens": [len(g.prompt.prefix) for g in groups],
            "longest_prompt_tokens": prepared.longest, "prompt_prefixes": len(groups),
            "demonstrations": [e.id for e in groups[0].demonstrations]
            if len(groups) == 1 else None,
            **({} if len(groups) == 1 else {"test_demonstrations": _test_orders(prepared)}),
            "content_free_loglik": [free.loglik[g.examples[0]] for g in groups if g.examples]
            if free is not None else None,
            "batch_size": batch_size, **option_lengths(prepared)}


def option_lengths(prepared: Prepared) -> dict[str, Any]:
    """A classification run's ``label_word_tokens`` and ``unequal_label_tokens``
    (:func:`fsxlt.icl.scoring.label_tokens`); nothing for candidates or generated output."""
    spec = prepared.run.task_spec
    if spec.is_multiple_choice or is_generative(spec):
        return {}
    return label_tokens([options for g in prepared.groups
                         for options in g.prompt.continuations[: len(g.examples)]], spec.labels)


def _test_orders(prepared: Prepared) -> list[list[str]]:
    """Per test example (in test order), the demonstrations its prompt showed, in order (a
    similarity order gives each example its own)."""
    by_example: dict[int, list[str]] = {}
    for group in prepared.groups:
        for position in group.examples:
            by_example[position] = [e.id for e in group.demonstrations]
    return [by_example[position] for position in sorted(by_example)]


def generate_prepared(prepared: Prepared, lm: Any, settings: IclSettings, *,
                      batch_size: int = 8, cached: bool = True) -> list[str]:
    """A generative run's outputs, one per test example (in test order)."""
    texts = [""] * len(prepared.test)
    for group in prepared.groups:
        outputs = generate_prompt(lm.model, lm.tokenizer, group.prompt, settings.decode,
                                  prepared.run.id, batch_size=batch_size, cached=cached)
        for position, text in zip(group.examples, outputs, strict=True):
            texts[position] = text
    return texts


def _predict(prepared: Prepared, lm: Any, settings: IclSettings, batch_size: int,
             ) -> tuple[list[Any], list[Any], dict[str, Any], list[dict[str, Any]]]:
    """A run's predictions (generated texts, or ranked labels), what its metric compares
    them with, its record's icl block, and per test example each option's log-likelihood."""
    spec, test = prepared.run.task_spec, prepared.test
    if is_generative(spec):
        texts = generate_prepared(prepared, lm, settings, batch_size=batch_size)
        block = {**_icl_block(prepared, settings, None, batch_size),
                 "generation": generation_block(settings.decode, texts)}
        return texts, gold_of(spec, test, prepared.run.language), block, [{} for _ in test]
    predicted, scores, free = score_prepared(prepared, lm.model, settings,
                                             batch_size=batch_size)
    return (predicted, [e.label for e in test], _icl_block(prepared, settings, free, batch_size),
            [{"loglik": dict(zip(option_keys(spec, row), row, strict=True))}
             for row in scores.loglik])


def _predict_file(prepared: Prepared, lm: Any, settings: IclSettings, batch_size: int,
                  record: dict[str, Any]) -> None:
    """Predict the run's file to predict with the run's prompt (the same demonstrations
    and settings) into the benchmark's submission file beside the record; the record
    names that file."""
    from fsxlt.study.submission import read_unlabelled, write_submission

    run = prepared.run
    examples, ids = read_unlabelled(run.predict_path, run.task_spec, run.language)
    shown = prepare(run, settings, lm.tokenizer, lm.model, examples)
    record["predict"] = _predict(shown, lm, settings, batch_size)[0]
    write_submission(Path(run.record_path).parent, run.task_spec, record, ids, inputs=examples)


def execute(prepared: Prepared, lm: Any, settings: IclSettings, *, batch_size: int = 8,
            save_predictions: bool = False, writer: str = ICL_WRITER,
            sweep: str = "", save_prompts: bool = False,
            planned: Sequence[int] = ()) -> dict[str, Any]:
    """Score a prepared run and write its record (and predictions: each ranked example's
    ``loglik`` by label, and its prompt with ``save_prompts``) atomically."""
    from fsxlt.fileio import atomic_write_json
    from fsxlt.metrics.scores import compute_scores
    from fsxlt.study.predictions import write_predictions
    from fsxlt.study.runs import finish_record, predictions_path
    from fsxlt.training.loop import examples_digest, versions

    run, began = prepared.run, time.perf_counter()
    spec = run.task_spec
    device = next(lm.model.parameters()).device
    with autocast_context(device, settings.precision):
        predicted, gold, icl_block, details = _predict(prepared, lm, settings, batch_size)
    test = compute_scores(spec, gold, predicted)
    elapsed = time.perf_counter() - began
    arm = Path(run.record_path).parent.name
    record = {
        "format": RUN_FORMAT, "task": run.task, "language": run.language, "k": run.k,
        "bucket": _bucket_block(prepared), "method": arm.partition("~")[0],
        "icl": icl_block,
        "model": {"encoder": lm.name, "start": lm.describe(), "source_training": False},
        "metric": spec.metric,
        "data": {"test": {"file": run.test_path, "n": len(prepared.test),
                          "sha256": examples_digest(prepared.test)}},
        "test": test, "test_score": test["score"], "dev_score": None,
        "versions": versions(), "wall_time_s": round(elapsed, 3),
        "device": device.type, "precision": settings.precision,
        "torch_threads": _torch_threads(),
        "examples_per_s": round(len(prepared.test) / elapsed, 3) if elapsed > 0 else None,
    }
    finish_record(record, identity=run.identity, arm=arm, writer=writer, sweep=sweep,
                  planned=planned)
    if run.predict_path:
        with autocast_context(device, settings.precision):
            _predict_file(prepared, lm, settings, batch_size, record)
    if save_predictions:
        model_info = {"kind": "icl", "record": Path(run.record_path).name, "method": arm,
                      "k": run.k, "bucket": run.index, "model": lm.name}
        if save_prompts:
            details = [{**d, **p} for d, p in zip(details, prompt_details(prepared),
                                                  strict=True)]
        write_predictions(predictions_path(run.record_path), prepared.test, predicted,
                          task=spec, language=run.language, split="test", model=model_info,
                          data_sha256=record["data"]["test"]["sha256"], extras=details)
    atomic_write_json(run.record_path, record)
    return record
