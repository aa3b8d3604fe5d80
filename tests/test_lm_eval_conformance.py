"""``--preset lm-eval`` against lm-evaluation-harness itself (issue 42, items 1 and 2).

Each case builds the harness's own task from its shipped YAML (``lm_eval/tasks/xnli``,
``lm_eval/tasks/paws-x``: ``process_docs``, ``doc_to_choice``, the few-shot context with
sampler ``first_n``, ``construct_requests``) over a local JSON-lines dataset, and compares
fsxlt's prompt pieces with the harness's requests character by character: the prefix is
the harness's context less its trailing whitespace, and prefix + option is context +
continuation, for every option, at K = 0 and K = 2. ``acc_norm`` goes through the
harness's ``process_results``. No model and no network: the harness only renders.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("HF_HUB_OFFLINE", "1")

lm_eval = pytest.importorskip("lm_eval", reason="lm-eval is an optional extra ([lmeval], [test])")
from lm_eval.api.task import ConfigurableTask  # noqa: E402
from lm_eval.tasks._yaml_loader import load_yaml  # noqa: E402

from fsxlt.data import TextExample  # noqa: E402
from fsxlt.icl.presets import PAWSX_WORDS, XNLI_WORDS, render_for  # noqa: E402
from fsxlt.icl.scoring import OptionScores, decision_scores, tokenize_prompt  # noqa: E402
from fsxlt.tasks import get_task  # noqa: E402
from fsxlt.tasks.prompts import PromptSettings  # noqa: E402

TASKS = Path(lm_eval.__file__).parent / "tasks"
XNLI_LABELS = ("entailment", "neutral", "contradiction")  # the harness's 0, 1, 2

# sentences that exercise every rule: spaces the harness's detokenizer drops, a final
# full stop or comma, a capital to lower, and whitespace a sentence starts with
PAIRS = [("  Diarhoda is a genus (UDP ) .", "It is n't a genus ."),
         ("The \" river \" flows , they said ,", "Yes it does ; really"),
         ("Er kam am Montag an.", "Sie kam am Dienstag an ;"),
         ("東京は日本の首都です。", "大阪は日本の首都です。"),
         ("  서울은 수도이다 .", "부산은 수도이다"),
         ("他们在 ( 1990 年 ) 结婚 ,", "他们 n't 结婚"),
         ("Il est arrivé ' hier ' .", "Elle est partie"),
         ("A short one", "Another one .")]


def harness_task(tmp_path: Path, family: str, language: str, rows: list[dict],
                 shots: int, metrics: tuple[str, ...] = ("acc",)) -> ConfigurableTask:
    """The harness's task of ``language`` over ``rows`` (its few-shot examples: the first
    ``shots`` rows, sampler first_n; its test docs: the rest)."""
    name = {"xnli": f"xnli_{language}", "paws-x": f"paws_{language}"}[family]
    train, test = tmp_path / f"{name}-train.jsonl", tmp_path / f"{name}-test.jsonl"
    train.write_text("".join(json.dumps(r) + "\n" for r in rows[:max(shots, 1)]),
                     encoding="utf-8")  # K=0 samples none; the split must still load
    test.write_text("".join(json.dumps(r) + "\n" for r in rows[shots:]), encoding="utf-8")
    config = load_yaml(TASKS / family / f"{name}.yaml")
    config.update(dataset_path="json", dataset_name=None, test_split="test",
                  validation_split=None, training_split=None, fewshot_split="train",
                  dataset_kwargs={"data_files": {"train": str(train), "test": str(test)}},
                  fewshot_config={"sampler": "first_n"}, num_fewshot=shots,
                  metric_list=[{"metric": m, "aggregation": "mean", "higher_is_better": True}
                               for m in metrics])
    return ConfigurableTask(config=config)


def rows_of(family: str) -> list[dict]:
    if family == "xnli":
        return [{"premise": a, "hypothesis": b, "label": i % 3}
                for i, (a, b) in enumerate(PAIRS)]
    return [{"id": i, "sentence1": a, "sentence2": b, "label": i % 2}
            for i, (a, b) in enumerate(PAIRS)]


def example(family: str, index: int, row: dict) -> TextExample:
    if family == "xnli":
        return TextExample(f"x:{index}", row["premise"], row["hypothesis"],
                           XNLI_LABELS[row["label"]])
    return TextExample(f"p:{index}", row["sentence1"], row["sentence2"], str(row["label"]))


CASES = [("xnli", lang, shots) for lang in sorted(XNLI_WORDS) for shots in (0, 2)] + \
        [("paws-x", lang, shots) for lang in sorted(PAWSX_WORDS) for shots in (0, 2)]


@pytest.mark.parametrize("family, language, shots", CASES)
def test_the_preset_renders_what_the_harness_requests(tmp_path, family, language, shots):
    rows = rows_of(family)
    task = harness_task(tmp_path, family, language, rows, shots)
    spec = get_task("xnli" if family == "xnli" else "pawsx")
    demos = [example(family, i, r) for i, r in enumerate(rows[:shots])]
    docs = list(task.test_docs())
    examples = [example(family, shots + i, r) for i, r in enumerate(rows[shots:])]
    text = render_for(spec, PromptSettings(), "lm-eval", language, demos, examples)
    assert len(docs) == len(examples) == len(text.continuations)
    for doc, options, chars in zip(docs, text.continuations, text.chars, strict=True):
        context = task.fewshot_context(doc, num_fewshot=shots)
        requests = task.construct_requests(doc, context, metadata=(task.config.task, 0, 1))
        pairs = [r.arguments for r in requests]
        assert text.prefix == context.rstrip()
        assert [text.prefix + option for option in options] == [c + t for c, t in pairs]
        assert chars == [len(choice) for choice in task.doc_to_choice(doc)]


def test_acc_norm_picks_what_the_harness_picks(tmp_path):
    """A premise that starts with two spaces: the harness divides by len(choice), spaces
    included, and with these log-likelihoods picks another label than lengths without
    them would (0.4.0 used len(option.lstrip()))."""
    rows = [{"premise": "  Der Hund schläft im Haus.", "hypothesis": "Ein Tier ruht", "label": 0}]
    task = harness_task(tmp_path, "xnli", "de", rows, 0, metrics=("acc", "acc_norm"))
    doc = next(iter(task.test_docs()))
    text = render_for(get_task("xnli"), PromptSettings(), "lm-eval", "de", [],
                      [example("xnli", 0, rows[0])])
    lengths = [len(choice) for choice in task.doc_to_choice(doc)]
    assert text.chars == [lengths] and lengths != [len(o.lstrip()) for o in text.continuations[0]]
    for loglik in ([-43.0, -44.02, -1000.0], [-44.02, -43.0, -1000.0], [-50.0, -49.0, -48.0]):
        harness = [task.process_results({**doc, "label": gold}, [(v, False) for v in loglik])
                   ["acc_norm"] for gold in range(3)]
        mine = decision_scores(OptionScores([loglik], [[1, 1, 1]], text.chars),
                               normalize="char")[0]
        assert harness.index(1.0) == max(range(3), key=mine.__getitem__)


def test_a_tokenized_preset_prompt_keeps_the_harness_lengths():
    """The lengths travel from the rendered prompt to the scores' per-character
    normalisation (tokenize_prompt takes the renderer's, not len(option.lstrip()))."""

    class Tokenizer:
        bos_token_id = 1
        unk_token_id = None

        def __call__(self, text, add_special_tokens=False):
            return {"input_ids": [ord(c) % 50 + 2 for c in text]}

    text = render_for(get_task("xnli"), PromptSettings(), "lm-eval", "de", [],
                      [TextExample("x", "  Vorn zwei Leerzeichen.", "Und dann", "neutral")])
    prompt = tokenize_prompt(Tokenizer(), text, "xnli/de/k0/zero-shot")
    assert prompt.chars == text.chars and prompt.chars[0][0] == len(
        "  Vorn zwei Leerzeichen., richtig? Ja, Und dann")
