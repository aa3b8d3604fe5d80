"""ICL runs whose output is generated text: generation tasks and extractive QA by generation.

A generation task (XGLUE's QG and NTG, QG on XQuAD) shows the bucket's
(source, target) pairs as demonstrations and greedily continues each test
source's query (:mod:`fsxlt.icl.generation`); the texts are scored with the
task's metric (BLEU, as XGLUE's evaluator computes it). An extractive QA task
(MLQA, XQuAD, TyDiQA) shows (paragraph, question, answer) demonstrations and
generates each test question's answer, scored with the task's own F1 and exact
match (:mod:`fsxlt.metrics.qa`), so that prompting and fine-tuning meet on QA
as they do on classification. Nothing is ranked: contextual calibration, length
normalisation and the similarity order are refused for these tasks.

The decoding settings (token budget, stop strings) are part of a generative
run's identity; a classification run's identity does not name them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from fsxlt.errors import FsxltError
from fsxlt.icl.generation import DecodeSettings, generate
from fsxlt.icl.scoring import TokenizedPrompt

GENERATIVE_KINDS = ("generation", "extractive_qa")


def is_generative(spec: Any) -> bool:
    """Whether ICL runs of the task generate their output rather than rank options."""
    return spec.kind in GENERATIVE_KINDS


def check_generative(spec: Any, settings: Any) -> None:
    """Settings that rank options make no sense for generated output: one line."""
    what = ("contextual calibration" if settings.calibrate
            else "length normalisation" if settings.normalize
            else "the similarity order" if settings.order == "similarity" else None)
    if what:
        raise FsxltError(f"{spec.name}: {what} applies to ranking label words or candidates; "
                         f"a {spec.kind.replace('_', ' ')} task's ICL runs generate their "
                         "output (greedy decoding)")
    settings.decode.check()


def gold_of(spec: Any, examples: Sequence[Any], language: str) -> list[Any]:
    """What the task's metric compares a generated text with: a generation example's
    target; a question's gold answers and language (QA's normalisation is per language)."""
    if spec.kind == "generation":
        return [example.target for example in examples]
    return [(list(example.answers), example.language or language) for example in examples]


def generate_prompt(model: Any, tokenizer: Any, prompt: TokenizedPrompt,
                    settings: DecodeSettings, what: str, *, batch_size: int = 8,
                    cached: bool = True) -> list[str]:
    """The generated text of every query of one prompt (one prefix)."""
    return generate(model, tokenizer, prompt.prefix, prompt.queries, settings,
                    cached=cached, batch_size=batch_size, what=what)


def generation_block(settings: DecodeSettings, predicted: Sequence[str]) -> dict[str, Any]:
    """The record's account of decoding: the settings, how many outputs came out empty (a
    model that stopped at once) and the outputs' mean length in characters."""
    return {**settings.describe(), "empty_outputs": sum(1 for text in predicted if not text),
            "mean_output_chars": round(sum(map(len, predicted)) / len(predicted), 2)
            if predicted else 0.0}
