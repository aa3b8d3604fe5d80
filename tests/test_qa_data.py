"""Extractive QA data, buckets and windows: the readers of MLQA's, XQuAD's and TyDiQA-GoldP's
layouts, XQuAD's held-out paragraphs, the k-questions sampler's guarantees as properties
over many seeds, windows over long contexts and span decoding."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest
import torch

from fsxlt.data import QAExample, load_split, read_examples
from fsxlt.data.qa import holdout_part, paragraphs, squad_json
from fsxlt.errors import DataFormatError, FsxltError
from fsxlt.models.spans import answer_span, answers_of, best_spans, window_starts
from fsxlt.sampling.api import sample_set
from fsxlt.sampling.check import check_set
from fsxlt.sampling.samplers import derive_rng, k_questions, untouched_questions
from fsxlt.sampling.store import bucket_dir, write_sets
from fsxlt.tasks import get_task
from tests.qa_fixtures import (
    QA_EXTRA,
    squad_data,
    write_json,
    write_mlqa,
    write_tydiqa,
    write_xquad,
)
from tests.train_fixtures import make_tokenizer

# --------------------------------------------------------------------------- readers


def test_each_benchmark_layout_is_found_and_read(tmp_path):
    mlqa, xquad, tydiqa = (write_mlqa(tmp_path / "mlqa"), write_xquad(tmp_path / "xquad"),
                           write_tydiqa(tmp_path / "tydiqa"))
    dev = load_split("mlqa", "de", "dev", data_dir=mlqa)
    assert dev.source.endswith("MLQA_V1/dev/dev-context-de-question-de.json")
    assert len(dev.examples) == 120 and all(ex.language == "de" for ex in dev.examples)
    assert load_split("mlqa", "en", "train", data_dir=mlqa).source.endswith("train-v1.1.json")
    assert load_split("tydiqa", "fi", "train", data_dir=tydiqa).source.endswith(
        "tydiqa-goldp-v1.1-train/tydiqa.goldp.fi.train.json")
    assert load_split("tydiqa", "fi", "test", data_dir=tydiqa).source.endswith(
        "tydiqa-goldp-v1.1-dev/tydiqa.goldp.fi.dev.json")
    assert load_split("xquad", "de", "test", data_dir=xquad).source.endswith("xquad.de.json")


def test_xglues_mlqa_layout_is_found_too(tmp_path):
    path = write_json(tmp_path / "MLQA" / "MLQA_v1" / "test" / "test-context-es-question-es.json",
                      squad_data(5))
    spec = get_task("mlqa").data
    assert spec.locate(tmp_path, "test", "es") == path
    train = write_json(tmp_path / "squad1.1" / "train-v1.1.json", squad_data(5))
    assert spec.locate(tmp_path, "train", "en") == train
    assert spec.locate(tmp_path, "dev", "es").name == "dev-context-es-question-es.json"


def test_a_question_keeps_its_id_answers_and_character_offsets(tmp_path):
    path = write_json(tmp_path / "x.json", squad_data(2, questions=2))
    first = read_examples(path, "xquad", language="de")[0]
    assert isinstance(first, QAExample) and first.id == "x.json:p000q0"
    assert first.context[first.starts[0]:].startswith(first.answers[0])
    assert first.language == "de"
    # a start that misses its text is moved to the nearest occurrence
    data = squad_data(1, questions=1)
    answer = data["data"][0]["paragraphs"][0]["qas"][0]["answers"][0]
    right = answer["answer_start"]
    answer["answer_start"] = right + 2
    moved = read_examples(write_json(tmp_path / "y.json", data), "xquad")[0]
    assert moved.starts == (right,)


@pytest.mark.parametrize("breakage, message", [
    (lambda d: d.pop("data"), "expected a SQuAD v1.1 JSON object with a 'data' list"),
    (lambda d: d["data"][0]["paragraphs"][0]["qas"][0].update(answers=[]), "no answer"),
    (lambda d: d["data"][0]["paragraphs"][0]["qas"][0]["answers"][0].update(text="zebra"),
     "answer 'zebra' does not occur in its context"),
    (lambda d: d["data"][0]["paragraphs"][1]["qas"][0].update(id="p000q0"),
     "question id p000q0 occurs twice"),
    (lambda d: d["data"][0]["paragraphs"][0].pop("context"), "has no context"),
])
def test_a_broken_file_is_one_error_naming_it(tmp_path, breakage, message):
    data = squad_data(2)
    breakage(data)
    with pytest.raises(DataFormatError, match=message) as err:
        read_examples(write_json(tmp_path / "bad.json", data), "xquad")
    assert str(err.value).startswith(str(tmp_path / "bad.json"))


def test_invalid_json_names_file_and_line(tmp_path):
    path = tmp_path / "cut.json"
    path.write_text('{"data": [\n{"title": "a",\n', encoding="utf-8")
    with pytest.raises(DataFormatError, match=r"cut.json:\d+: invalid JSON"):
        read_examples(path, "mlqa")


def test_a_file_to_predict_may_lack_answers(tmp_path):
    data = squad_data(2)
    for paragraph in data["data"][0]["paragraphs"]:
        for qa in paragraph["qas"]:
            del qa["answers"]
    examples = read_examples(write_json(tmp_path / "p.json", data), "mlqa", labelled=False)
    assert len(examples) == 6 and all(ex.answers == () for ex in examples)


def test_squad_json_round_trips_the_questions(tmp_path):
    examples = read_examples(write_json(tmp_path / "a.json", squad_data(7)), "xquad")
    again = read_examples(write_json(tmp_path / "b.json", squad_json(examples)), "xquad")
    assert [ex.content_key() for ex in again] == [ex.content_key() for ex in examples]


# --------------------------------------------------------------------------- XQuAD's parts


def test_xquads_parts_are_disjoint_complete_and_the_same_in_every_language(tmp_path):
    data = write_xquad(tmp_path, ("en", "de"), n_paragraphs=200)
    parts = {lang: {split: load_split("xquad", lang, split, data_dir=data).examples
                    for split in ("train", "dev", "test")} for lang in ("en", "de")}
    for lang in ("en", "de"):
        counts = {split: len(paragraphs(ex)) for split, ex in parts[lang].items()}
        assert counts == {"test": 120, "dev": 20, "train": 60}
        contexts = [set(paragraphs(parts[lang][s])) for s in ("train", "dev", "test")]
        assert not (contexts[0] & contexts[1] or contexts[0] & contexts[2]
                    or contexts[1] & contexts[2])
    for split in ("train", "dev", "test"):
        assert [ex.question_id for ex in parts["en"][split]] == \
            [ex.question_id for ex in parts["de"][split]]


def test_holdout_depends_on_the_seed_and_question_ids_only():
    examples = [QAExample(f"f:{q}", q, f"context {q[:2]}", "?", ("context",), (0,))
                for q in (f"{p:02d}{i}" for p in range(30) for i in range(2))]
    test = holdout_part(examples, 10, 5, 0, "test")
    assert len(paragraphs(test)) == 10
    assert holdout_part(list(reversed(examples)), 10, 5, 0, "test")[0].question_id in \
        {ex.question_id for ex in test}
    assert {ex.id for ex in holdout_part(examples, 10, 5, 1, "test")} != {ex.id for ex in test}


# --------------------------------------------------------------------------- buckets


def _pool(rng: random.Random) -> list[QAExample]:
    """Paragraphs of 1 to 6 questions each."""
    examples = []
    for p in range(rng.randint(40, 80)):
        for q in range(rng.randint(1, 6)):
            examples.append(QAExample(f"f:{p}-{q}", f"{p}-{q}", f"paragraph {p}", f"q{q}",
                                      ("paragraph",), (0,)))
    return examples


@pytest.mark.parametrize("seed", range(60))
def test_k_questions_buckets_hold_exactly_k_on_disjoint_paragraphs(seed):
    rng = random.Random(seed)
    pool = _pool(rng)
    k, n_buckets = rng.choice([1, 2, 4, 8]), rng.randint(1, 5)
    buckets = k_questions(pool, k, n_buckets, derive_rng(seed, "t", "xx", k), "ctx")
    assert buckets == k_questions(pool, k, n_buckets, derive_rng(seed, "t", "xx", k), "ctx")
    owner: dict[str, int] = {}
    for b, bucket in enumerate(buckets):
        assert len(bucket) == k and len({ex.id for ex in bucket}) == k
        assert [ex.id for ex in bucket] == [ex.id for ex in pool if ex in bucket]  # file order
        for ex in bucket:
            assert owner.setdefault(ex.context, b) == b
    dev = untouched_questions(pool, buckets)
    assert not {ex.context for ex in dev} & set(owner)
    assert {ex.context for ex in dev} | set(owner) == {ex.context for ex in pool}
    limited = untouched_questions(pool, buckets, 3, derive_rng(seed, "dev"))
    assert len(paragraphs(limited)) == min(3, len(paragraphs(dev)))


def test_too_few_paragraphs_is_one_line():
    pool = [QAExample(f"f:{p}", str(p), f"c{p}", "q", ("c",), (0,)) for p in range(5)]
    with pytest.raises(FsxltError, match="xquad/de K=2: 3 buckets of 2 questions on disjoint "
                       "paragraphs need more than the data's 5 paragraphs"):
        k_questions(pool, 2, 3, derive_rng(0, "x"), "xquad/de K=2")


@pytest.mark.parametrize("seed", range(8))
def test_sampled_sets_pass_every_check_and_carry_the_held_out_test(tmp_path, seed):
    data = write_xquad(tmp_path / "data", ("de",), n_paragraphs=200)
    split = load_split("xquad", "de", "train", data_dir=data)
    bucket_set = sample_set("xquad", split, 4, n_buckets=5, seed=seed)
    write_sets(tmp_path / "b", [bucket_set])
    directory = bucket_dir(tmp_path / "b", "xquad", "de", 4)
    report = check_set(directory, data / "xquad.de.json")
    assert report.ok, report.violations
    test = {ex.context for ex in bucket_set.test}
    assert len(test) == 120 and not test & {ex.context for b in bucket_set.buckets for ex in b}
    assert not test & {ex.context for ex in bucket_set.dev_remaining}


def test_a_set_whose_buckets_share_a_paragraph_fails_its_check(tmp_path):
    data = write_xquad(tmp_path / "data", ("de",), n_paragraphs=200)
    split = load_split("xquad", "de", "train", data_dir=data)
    bucket_set = sample_set("xquad", split, 2, n_buckets=3)
    neighbour = next(ex for ex in split.examples if ex.context == bucket_set.buckets[0][0].context
                     and ex not in bucket_set.buckets[0])
    bucket_set.buckets[1][0] = neighbour
    write_sets(tmp_path / "b", [bucket_set])
    kinds = check_set(bucket_dir(tmp_path / "b", "xquad", "de", 2)).kinds()
    assert kinds["overlap"] >= 1


def test_tydiqa_selects_on_a_limited_part_of_its_train_pool(tmp_path):
    data = write_tydiqa(tmp_path, ("fi",), n_paragraphs=300)
    split = load_split("tydiqa", "fi", "train", data_dir=data)
    bucket_set = sample_set("tydiqa", split, 1)
    assert len(paragraphs(bucket_set.dev_remaining)) == 200 and bucket_set.test is None


# --------------------------------------------------------------------------- windows


def test_windows_start_every_stride_and_the_last_reaches_the_end():
    assert window_starts(10, 20) == [0]
    assert window_starts(100, 40, stride=30) == [0, 30, 60]
    for n, room, stride in ((500, 100, 128), (300, 128, 64), (129, 128, 128)):
        starts = window_starts(n, room, stride)
        assert starts[-1] + room >= n and all(b - a == min(room, stride)
                                               for a, b in zip(starts, starts[1:], strict=False))


def test_answer_span_needs_the_whole_answer_in_the_window():
    offsets = [(0, 4), (5, 9), (10, 14)]
    assert answer_span(offsets, 5, 9) == (1, 1) and answer_span(offsets, 5, 14) == (1, 2)
    assert answer_span(offsets[1:], 3, 9) is None and answer_span(offsets, 10, 20) is None
    assert answer_span(offsets, -1, -1) is None


@pytest.fixture(scope="module")
def featurizer(tmp_path_factory):
    from fsxlt.models.encoding import Featurizer

    tokenizer = make_tokenizer(tmp_path_factory.mktemp("tok"), QA_EXTRA)
    return Featurizer(tokenizer, get_task("xquad"), max_seq_length=24)


def _question(context: str, answer: str, at: int) -> QAExample:
    return QAExample("f:1", "1", context, "who went to paris ?", (answer,), (at,), "", "en")


def test_one_window_for_a_short_context_with_the_answer_in_it(featurizer):
    context = "john went to paris ."
    encoded = featurizer.encode([_question(context, "john", 0)])
    assert len(encoded.rows) == 1
    row = encoded.rows[0]
    tokens = featurizer.tokenizer.convert_ids_to_tokens(row.input_ids)
    assert tokens[0] == "[CLS]" and tokens[row.labels[0]] == "john"
    assert row.labels[0] == row.labels[1]
    assert [o is not None for o in row.offsets] == [t not in ("[CLS]", "[SEP]") and i > 6
                                                    for i, t in enumerate(tokens)]


def test_an_answer_across_a_window_edge_is_learnt_from_the_window_that_holds_it(featurizer):
    from fsxlt.models.encoding import Row
    from fsxlt.models.spans import QAFeaturizer

    words = " ".join(["the cat"] * 7) + " a maria went to berlin ."
    at = words.index("maria went")  # wordpieces 15 and 16: across the first window's edge
    qa = QAFeaturizer(featurizer.tokenizer, 24, True, stride=8)  # 16 context pieces a window
    rows = [Row(example=i, **window) for i, window in qa.windows([_question(words,
                                                                           "maria went", at)])]
    assert len(rows) == 2  # 20 context pieces: windows at 0 and 8
    assert [row.labels == [0, 0] for row in rows] == [True, False]  # the first cuts it
    first, last = rows[1].offsets[rows[1].labels[0]], rows[1].offsets[rows[1].labels[1]]
    assert words[first[0]:last[1]] == "maria went"
    tokens = featurizer.tokenizer.convert_ids_to_tokens(rows[1].input_ids)
    assert tokens[rows[1].labels[0]:rows[1].labels[1] + 1] == ["maria", "went"]


def test_every_context_character_is_in_some_window(featurizer):
    context = " ".join(["john went to paris ."] * 9)
    encoded = featurizer.encode([_question(context, "john", 0)])
    covered = {o for row in encoded.rows for o in row.offsets if o is not None}
    tokens = featurizer.tokenizer(context, add_special_tokens=False,
                                  return_offsets_mapping=True)["offset_mapping"]
    assert covered == {tuple(o) for o in tokens}


# --------------------------------------------------------------------------- decoding


def test_best_spans_takes_the_best_valid_pair_inside_the_context():
    start = torch.tensor([[9.0, 1.0, 5.0, 0.0, 0.0, 4.0]])
    end = torch.tensor([[9.0, 0.0, 2.0, 6.0, 0.0, 0.0]])
    rows = torch.stack([start[0], end[0]])
    context = torch.tensor([[False, True, True, True, True, True]])
    score, s, e = best_spans(rows, context)  # position 0 ([CLS]) is never a candidate
    assert (s.item(), e.item(), score.item()) == (2, 3, 11.0)
    score, s, e = best_spans(rows, context, max_tokens=1)  # one-token spans only
    assert (s.item(), e.item()) == (2, 2)
    rows = torch.stack([torch.tensor([0.0, 0.0, 0.0, 9.0]), torch.tensor([0.0, 9.0, 0.0, 1.0])])
    score, s, e = best_spans(rows, torch.tensor([[False, True, False, True]]))
    assert (s.item(), e.item(), score.item()) == (3, 3, 10.0)  # not (3, 1): ends before it


def test_answers_of_picks_each_questions_best_window_and_cuts_the_text():
    class Row:
        def __init__(self, example, offsets):
            self.example, self.offsets = example, offsets

    class Encoded:
        n_examples = 3
        contexts = ["john went to paris", "maria saw li", "no answer here"]
        rows = [Row(0, [None, (0, 4), (5, 9)]), Row(0, [None, (10, 12), (13, 18)]),
                Row(1, [None, (0, 5), (6, 9), (10, 12)]), Row(2, [None, (0, 2)])]

    answers = answers_of(Encoded(), [1.0, 3.0, 2.0, float("-inf")], [1, 1, 1, 0], [2, 2, 3, 0])
    assert answers == ["to paris", "maria saw li", ""]


def test_the_task_scores_report_f1_and_exact_match_by_each_questions_language():
    from fsxlt.metrics.scores import compute_scores

    gold = [(("der Hund",), "de"), (("the dog",), "en")]
    scores = compute_scores(get_task("mlqa"), gold, ["Hund", "a dog"])
    assert scores["score"] == scores["f1"] == 1.0 and scores["exact_match"] == 1.0
    squad = compute_scores(get_task("xquad"), gold, ["Hund", "a dog"])
    assert squad["f1"] == pytest.approx((2 / 3 + 1.0) / 2)


def test_qa_records_round_trip_through_bucket_files(tmp_path):
    data = write_xquad(tmp_path / "data", ("de",), n_paragraphs=200)
    bucket_set = sample_set("xquad", load_split("xquad", "de", "train", data_dir=data), 2,
                            n_buckets=2)
    write_sets(tmp_path / "b", [bucket_set])
    stored = json.loads((bucket_dir(tmp_path / "b", "xquad", "de", 2) / "00.json").read_text())
    assert stored["examples"][0]["language"] == "de"
    assert {"answers", "context", "question", "question_id"} <= set(stored["examples"][0])


def test_a_qa_task_yaml_is_checked(tmp_path):
    import yaml

    from fsxlt.tasks import parse_task

    raw = yaml.safe_load(Path("configs/xquad.yaml").read_text())
    with pytest.raises(FsxltError, match="metrics mlqa_f1 and squad_f1 go with kind"):
        parse_task({**raw, "metric": "accuracy"})
    with pytest.raises(FsxltError, match="has no labels"):
        parse_task({**raw, "labels": ["a"]})
    with pytest.raises(FsxltError, match="holdout.test_paragraphs must be a positive"):
        parse_task({**raw, "data": {**raw["data"], "holdout": {"test_paragraphs": 0}}})
