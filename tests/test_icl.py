"""In-context learning: prompts from the task YAML, log-likelihood scoring (cached ==
naive), calibration, and the ICL prompt section's validation."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import torch

from fsxlt.data import ChoiceExample, TextExample
from fsxlt.errors import FsxltError
from fsxlt.icl.run import IclSettings, demonstration_order, sample_test
from fsxlt.icl.scoring import (
    OptionScores,
    TokenizedPrompt,
    decision_scores,
    option_scores,
    plan_rows,
    predictions,
    tokenize_prompt,
)
from fsxlt.icl.scoring import common_start as scoring_common_start
from fsxlt.tasks import builtin_tasks, get_task
from fsxlt.tasks.prompts import PromptSettings, parse_icl, render
from tests.conftest import HUB_COMMIT
from tests.icl_fixtures import make_causal_lm_dir, write_task_yaml
from tests.train_fixtures import nli_data

MULTI_TOKEN_WORDS = {"en": {"entailment": "unbelievable", "neutral": "newtown",
                            "contradiction": "no"}}


@pytest.fixture(scope="module")
def lms(tmp_path_factory) -> dict:
    from fsxlt.icl.model import load_causal_lm

    torch.set_num_threads(1)
    root = tmp_path_factory.mktemp("lms")
    return {kind: load_causal_lm(str(make_causal_lm_dir(root / kind, kind)))
            for kind in ("llama", "gpt2", "gemma3")}


def _max_diff(a: OptionScores, b: OptionScores) -> float:
    return max(abs(x - y) for ra, rb in zip(a.loglik, b.loglik, strict=True)
               for x, y in zip(ra, rb, strict=True))


@pytest.mark.parametrize("kind", ["llama", "gpt2", "gemma3"])
def test_cached_scores_equal_each_full_prompt_scored_alone(lms, kind, tmp_path):
    """Multi-token label words, batches that mix rows of several lengths, and (gemma3) a
    sliding window shorter than the prefix: the cache changes nothing but the speed."""
    spec = get_task(write_task_yaml(tmp_path / "task.yaml", label_words=MULTI_TOKEN_WORDS))
    text = render(spec.icl, spec.labels, PromptSettings(), "de", nli_data(6, 1),
                  nli_data(11, 2))
    lm = lms[kind]
    prompt = tokenize_prompt(lm.tokenizer, text, "b")
    cached = option_scores(lm.model, prompt, "b", cached=True, batch_size=3)
    naive = option_scores(lm.model, prompt, "b", cached=False)
    assert _max_diff(cached, naive) <= 1e-4
    assert cached.n_tokens[0] == [3, 2, 1]  # un ##believ ##able, new ##town, no
    assert all(v < 0 for row in cached.loglik for v in row)


def test_rows_share_the_query_for_single_token_words(lms):
    spec = get_task("xnli")
    text = render(spec.icl, spec.labels, PromptSettings(), "de", nli_data(3, 1),
                  nli_data(5, 2))
    prompt = tokenize_prompt(lms["llama"].tokenizer, text, "b")
    assert [len(c) for c in prompt.continuations[0]] == [1, 1, 1]
    assert len(plan_rows(prompt, "b").rows) == 5  # one row per example scores all 3 words


def test_multiple_choice_candidates_cached_equals_naive(lms):
    spec = get_task("chid")
    examples = [ChoiceExample(f"c{i}", f"the cat #idiom# went to {place}",
                              ("unbelievable", "newtown", "happy dog", "no"), str(i % 4))
                for i, place in enumerate(["paris", "berlin", "cairo", "lima", "paris"])]
    text = render(spec.icl, spec.labels[:4], PromptSettings(), "zh", examples[:2],
                  examples[2:])
    assert text.continuations[0] == [" unbelievable", " newtown", " happy dog", " no"]
    lm = lms["llama"]
    prompt = tokenize_prompt(lm.tokenizer, text, "b")
    cached = option_scores(lm.model, prompt, "b", batch_size=2)
    assert _max_diff(cached, option_scores(lm.model, prompt, "b", cached=False)) <= 1e-4


def test_prompt_pieces_by_hand():
    spec = get_task("xnli")
    shot = TextExample("s", "a cat", "a dog", "neutral")
    query = TextExample("q", "x {text_b} y", "z", "entailment")
    text = render(spec.icl, spec.labels, PromptSettings("target", "target"), "de", [shot],
                  [query])
    instruction = spec.icl.instructions["de"]
    assert text.prefix == (f"{instruction}\n\nPrämisse: a cat\nHypothese: a dog\n"
                           "Antwort: vielleicht\n\n")
    assert text.queries == ["Prämisse: x {text_b} y\nHypothese: z\nAntwort:"]
    assert text.continuations == [[" ja", " vielleicht", " nein"]]
    english = render(spec.icl, spec.labels, PromptSettings("en", "target"), "de", [], [query])
    assert english.prefix == spec.icl.instructions["en"] + "\n\n"
    assert english.queries[0].startswith("Premise: x") and english.continuations[0][0] == " ja"


def test_calibration_divides_by_the_content_free_probabilities():
    """Zhao et al.'s example: p(x) = (.6, .4) after N/A's (.7, .3) -> (.6/.7, .4/.3),
    so the second label wins once calibrated."""
    scores = OptionScores([[math.log(0.6), math.log(0.4)]], [[1, 1]])
    free = OptionScores([[math.log(0.7), math.log(0.3)]], [[1, 1]])
    plain = decision_scores(scores)
    calibrated = decision_scores(scores, content_free=free)
    assert predictions(plain, ["a", "b"]) == ["a"]
    assert predictions(calibrated, ["a", "b"]) == ["b"]
    assert calibrated[0][0] == pytest.approx(math.log(0.6 / 0.7))
    assert calibrated[0][1] == pytest.approx(math.log(0.4 / 0.3))


def test_length_normalisation_divides_by_the_tokens():
    scores = OptionScores([[-3.0, -2.0]], [[3, 1]])
    assert predictions(decision_scores(scores), ["long", "short"]) == ["short"]
    normalized = decision_scores(scores, normalize=True)
    assert normalized == [[-1.0, -2.0]]
    assert predictions(normalized, ["long", "short"]) == ["long"]


def test_seeded_order_is_a_fixed_permutation_and_the_test_subset_is_shared():
    shots = nli_data(9, 0)
    seeded = IclSettings(model="m", seed=3)
    first = demonstration_order(shots, seeded, 1)
    assert first == demonstration_order(shots, seeded, 1)
    assert sorted(e.id for e in first) == sorted(e.id for e in shots) and first != shots
    assert demonstration_order(shots, IclSettings(model="m", order="bucket"), 1) == shots
    test = nli_data(50, 1)
    subset = sample_test(test, IclSettings(model="m", test_limit=10))
    assert len(subset) == 10 and subset == sample_test(test, IclSettings(model="m",
                                                                         test_limit=10))
    assert [test.index(e) for e in subset] == sorted(test.index(e) for e in subset)


def test_arm_names_say_what_differs_from_the_default():
    assert IclSettings(model="m").arm_name() == "icl"
    assert IclSettings(model="m", template_language="target", words_language="target",
                       calibrate=True).arm_name() == "icl-target-calibrated"
    assert IclSettings(model="m", words_language="target", normalize=True,
                       order="bucket").arm_name() == "icl-target-words-norm-bucket-order"


@pytest.mark.parametrize("name", ["xnli", "pawsx", "eprstmt", "bustm", "ocnli", "csl", "chid"])
def test_builtin_tasks_carry_prompts(name):
    spec = builtin_tasks()[name]
    assert spec.icl is not None and "en" in spec.icl.templates
    if not spec.is_multiple_choice:
        assert all(set(words) == set(spec.labels) for words in spec.icl.label_words.values())


TEMPLATE = "P: {text_a} H: {text_b} A: {label}"
WORDS = {"en": {"0": "no", "1": "yes"}}


@pytest.mark.parametrize("section, message", [
    ({"template": "P: {text_a} A: {label}", "label_words": WORDS}, "misses {text_b}"),
    ({"template": "P: {text_a} H: {text_b}", "label_words": WORDS}, "misses {label}"),
    ({"template": TEMPLATE + " {label}", "label_words": WORDS}, "exactly one {label}"),
    ({"template": TEMPLATE + " {mask}", "label_words": WORDS}, "may only use"),
    ({"template": TEMPLATE, "label_words": {"en": {"0": "no"}}}, "no word for 1"),
    ({"template": TEMPLATE, "label_words": {"de": {"0": "nein", "1": "ja"}}}, "at least en"),
    ({"template": TEMPLATE, "label_words": WORDS, "shots": 3}, "unknown key(s) in icl: shots"),
    ({"label_words": WORDS}, "needs a template"),
])
def test_bad_icl_sections_are_one_line_naming_the_yaml(section, message):
    with pytest.raises(FsxltError) as err:
        parse_icl(section, kind="classification", input_kind="pair", labels=("0", "1"),
                  where="configs/mine.yaml")
    text = str(err.value)
    assert text.startswith("configs/mine.yaml: ") and message in text and "\n" not in text


def test_a_task_yaml_with_a_bad_icl_section_fails_to_load(tmp_path):
    path = write_task_yaml(tmp_path / "bad.yaml", template={"en": "{text_a} {label}"})
    with pytest.raises(FsxltError, match=r"bad\.yaml: icl.template en misses \{text_b\}"):
        get_task(str(path))


def test_a_label_word_that_tokenizes_to_nothing_is_refused(lms, tmp_path):
    words = {"en": {"entailment": "yes", "neutral": "\u200b", "contradiction": "no"}}
    spec = get_task(write_task_yaml(tmp_path / "task.yaml", label_words=words))
    text = render(spec.icl, spec.labels, PromptSettings(), "de", [], nli_data(2, 0))
    with pytest.raises(FsxltError, match="tokenizes to nothing"):
        tokenize_prompt(lms["llama"].tokenizer, text, "xnli/de/k1/00")


def test_a_prompt_longer_than_the_context_names_the_bucket_and_length(tmp_path):
    from fsxlt.icl.model import load_causal_lm

    lm = load_causal_lm(str(make_causal_lm_dir(tmp_path / "short", "llama", context=40)))
    spec = get_task("xnli")
    text = render(spec.icl, spec.labels, PromptSettings(), "de", nli_data(6, 1),
                  nli_data(2, 2))
    prompt = tokenize_prompt(lm.tokenizer, text, "xnli/de/k2/07")
    with pytest.raises(FsxltError, match=r"xnli/de/k2/07: a prompt of \d+ tokens is longer "
                                         r"than the model's context of 40 tokens"):
        option_scores(lm.model, prompt, "xnli/de/k2/07")


def test_models_that_are_not_causal_lms_are_refused(tmp_path):
    from fsxlt.icl.model import load_causal_lm
    from tests.train_fixtures import make_encoder_dir

    encoder = make_encoder_dir(tmp_path / "bert")
    with pytest.raises(FsxltError, match="not a causal language model .*BertModel"):
        load_causal_lm(str(encoder))


def test_model_fingerprint_tells_local_models_apart(tmp_path):
    from fsxlt.icl.model import model_fingerprint

    a = make_causal_lm_dir(tmp_path / "a", "llama", seed=0)
    b = make_causal_lm_dir(tmp_path / "b", "gpt2", seed=0)
    assert model_fingerprint(str(a)) != model_fingerprint(str(b))
    assert model_fingerprint("xlm-roberta-base") == f"hub:xlm-roberta-base@{HUB_COMMIT}"
    assert Path(a).is_dir()


def test_similarity_order_puts_the_most_similar_shot_last(tmp_path):
    from fsxlt.icl.similarity import load_encoder, similarity_orders
    from tests.train_fixtures import make_encoder_dir

    encoder = load_encoder(str(make_encoder_dir(tmp_path / "bert")))
    shots = nli_data(6, 1)
    twins = [TextExample(f"t{i}", shots[i].text_a, shots[i].text_b, "neutral") for i in (2, 4)]
    orders = similarity_orders(shots, twins, *encoder)
    assert [order[-1] for order in orders] == [2, 4]
    assert all(sorted(order) == list(range(6)) for order in orders)
    assert similarity_orders([], twins, *encoder) == [(), ()]


def test_scores_are_the_same_when_the_output_layer_cannot_be_hooked(lms, monkeypatch):
    """Only the scored positions' logits are computed (a hook on the output layer); a model
    whose output layer is not found gets every position's logits and the same scores."""
    spec = get_task("xnli")
    text = render(spec.icl, spec.labels, PromptSettings(), "de", nli_data(3, 1),
                  nli_data(4, 2))
    lm = lms["gpt2"]
    prompt = tokenize_prompt(lm.tokenizer, text, "b")
    hooked = option_scores(lm.model, prompt, "b", batch_size=2)
    monkeypatch.setattr(lm.model, "get_output_embeddings", lambda: None)
    assert _max_diff(hooked, option_scores(lm.model, prompt, "b", batch_size=2)) <= 1e-5


def _random_prompt(seed: int, vocab: int = 40) -> TokenizedPrompt:
    """Queries and options of random token ids: each example's options share a start of
    0-9 tokens and end in 0-4 tokens of their own (one option may be another's start)."""
    import random

    rng = random.Random(seed)

    def ids(n: int) -> list[int]:
        return [rng.randrange(5, vocab) for _ in range(n)]

    queries, continuations = [], []
    for _ in range(rng.randint(1, 5)):
        start = ids(rng.randint(0, 9))
        options: list[list[int]] = []
        while len(options) < rng.randint(2, 4):
            option = start + ids(rng.randint(0 if start else 1, 4))
            if option not in options:
                options.append(option)
        queries.append(ids(rng.randint(0, 6)))
        continuations.append(options)
    return TokenizedPrompt([2] + ids(rng.randint(0, 14)), queries, continuations)


@pytest.mark.parametrize("seed", range(300))
def test_every_option_token_is_scored_once_after_exactly_its_prompt(seed):
    """The rows of a plan, as a property: for every token of every option, one spot in one
    row scores it, and the tokens before that spot (the cached prefix, the row's stem, the
    row) are the prefix, the query and the option's tokens before it; a shared start is
    fed once per example, not once per option."""
    prompt = _random_prompt(seed)
    plan = plan_rows(prompt, "b")

    def context(index: int, position: int) -> list[int]:
        row = plan.rows[index]
        stem = plan.rows[row.parent].ids if row.parent is not None else []
        assert row.parent is None or plan.rows[row.parent].parent is None
        return (plan.cached + stem + row.ids)[: len(plan.cached) + len(stem) + position + 1]

    for query, options, segments in zip(prompt.queries, prompt.continuations, plan.options,
                                        strict=True):
        assert len(segments) == len(options)
        for option, found in zip(options, segments, strict=True):
            spots = [(row, pos, tok) for row, wanted in found for pos, tok in wanted]
            assert [tok for _, _, tok in spots] == option
            for t, (row, pos, tok) in enumerate(spots):
                assert (pos, tok) in plan.rows[row].wanted
                assert context(row, pos) == prompt.prefix + query + option[:t]
        fed = {tuple(plan.rows[row].ids) for found in segments for row, _ in found}
        shared = len(scoring_common_start([o[:-1] for o in options]))
        assert sum(map(len, fed)) <= 1 + len(query) + sum(map(len, options)) - \
            shared * (len(options) - 1)  # the lead token, the query and the start once


@pytest.mark.parametrize("packed", [True, False])
@pytest.mark.parametrize("kind", ["llama", "gpt2", "gemma3"])
def test_options_that_start_alike_score_as_each_full_prompt_alone(lms, kind, packed):
    """Stems and their suffix rows (options sharing a start, as lm-eval's preset's whole
    sentences do), packed in one row under a tree mask or run as two passes, in batches of
    1 to 3, with (gemma3) a sliding window of 8 tokens that the stems and prefixes outrun:
    the same log-likelihoods as each full prompt alone."""
    lm = lms[kind]
    vocab = lm.model.config.vocab_size
    for seed in range(6):
        prompt = _random_prompt(seed, vocab)
        naive = option_scores(lm.model, prompt, "b", cached=False)
        for batch_size in (1, 2, 3):
            cached = option_scores(lm.model, prompt, "b", batch_size=batch_size,
                                   packed=packed)
            assert _max_diff(cached, naive) <= 1e-4
            assert cached.n_tokens == [[len(o) for o in options]
                                       for options in prompt.continuations]


@pytest.mark.parametrize("kind", ["llama", "gpt2", "gemma3"])
def test_the_packed_path_applies_to_each_kind_and_falls_back_alike(lms, kind, monkeypatch):
    """Llama, GPT-2 and Gemma 3 (a sliding layer and a full one: a mask per layer type)
    score packed rows, with and without a cached prefix; a model whose layers cannot be
    read falls back to a stem pass and a suffix pass, with the same scores."""
    from fsxlt.icl.packed import layer_views, mask_kinds
    from fsxlt.icl.scoring import _prefix_cache

    model = lms[kind].model
    for cached in ([], [2, 7, 9, 11, 5, 6, 7, 8, 9, 10, 11, 12]):
        views = layer_views(model, _prefix_cache(model, cached))
        kinds = mask_kinds(model, views)
        assert kinds is not None and len(views) == 2
        assert set(kinds) == ({"sliding_attention", "full_attention"} if kind == "gemma3"
                              else {"all"})
        if kind == "gemma3" and cached:
            assert kinds["sliding_attention"].kept == 7 and kinds["full_attention"].kept == 12
    prompt = _random_prompt(3, model.config.vocab_size)
    packed = option_scores(model, prompt, "b", batch_size=2)
    monkeypatch.setattr(model, "get_decoder", lambda: None)
    assert layer_views(model, None) is None
    assert _max_diff(packed, option_scores(model, prompt, "b", batch_size=2)) <= 1e-4
