"""Metrics and batched prediction: every word is scored, batching changes nothing."""

from __future__ import annotations

import pytest
import torch

from fsxlt.data import TaggedSentence
from fsxlt.errors import FsxltError
from fsxlt.metrics.scores import compute_scores, seqeval_scores, token_accuracy
from fsxlt.models.encoding import Featurizer, collate
from fsxlt.models.prediction import make_eval_set, predict_ids, prepare_eval, score
from fsxlt.tasks import get_task
from fsxlt.training.checkpoint import load_start
from tests.train_fixtures import make_encoder_dir, ner_data, nli_data


@pytest.fixture(scope="module")
def encoder_dir(tmp_path_factory):
    return make_encoder_dir(tmp_path_factory.mktemp("tiny-bert"))


def test_accuracy_metric():
    task = get_task("xnli")
    scores = compute_scores(
        task,
        ["entailment", "neutral", "neutral", "contradiction"],
        ["entailment", "neutral", "entailment", "entailment"],
    )
    assert scores["metric"] == "accuracy" and scores["score"] == pytest.approx(0.5)


def test_seqeval_entity_f1():
    gold = [["B-PER", "I-PER", "O", "B-LOC"], ["B-ORG", "O"]]
    pred = [["B-PER", "I-PER", "O", "B-ORG"], ["B-ORG", "O"]]
    scores = compute_scores(get_task("panx"), gold, pred)
    # 3 gold entities, 3 predicted, 2 correct
    assert scores["score"] == pytest.approx(2 / 3)
    assert scores["precision"] == pytest.approx(2 / 3)
    assert scores["recall"] == pytest.approx(2 / 3)
    assert scores["token_accuracy"] == pytest.approx(5 / 6)
    # a truncated entity counts as wrong
    assert seqeval_scores([["B-PER", "I-PER"]], [["B-PER", "O"]])["f1"] == 0.0


@pytest.mark.parametrize("tagset", ["ner", "pos"])
def test_one_pass_seqeval_equals_seqeval(tagset):
    """seqeval_scores (one chunk extraction, cached gold) == seqeval's three functions."""
    import random
    import warnings

    from seqeval.metrics import f1_score, precision_score, recall_score

    from fsxlt.metrics.scores import entity_set

    tags = (["O", "B-PER", "I-PER", "B-ORG", "I-ORG", "B-LOC", "I-LOC"] if tagset == "ner"
            else ["NOUN", "VERB", "DET", "ADJ", "PUNCT"])
    rng = random.Random(7)
    for trial in range(40):
        gold = [[rng.choice(tags) for _ in range(rng.randint(0, 9))]
                for _ in range(rng.randint(1, 12))]
        pred = [[t if rng.random() < 0.6 else rng.choice(tags) for t in s] for s in gold]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            want = {"precision": precision_score(gold, pred, zero_division=0),
                    "recall": recall_score(gold, pred, zero_division=0),
                    "f1": f1_score(gold, pred, zero_division=0)}
        assert seqeval_scores(gold, pred) == pytest.approx(want, abs=1e-15), trial
        cached = seqeval_scores(gold, pred, gold_entities=entity_set(gold))
        assert cached == seqeval_scores(gold, pred)


def test_entity_set_matches_seqeval_get_entities_on_odd_tags():
    """The table-driven chunk scan agrees with seqeval on any prefix-style tag soup."""
    import random
    import warnings

    from seqeval.metrics.sequence_labeling import get_entities

    from fsxlt.metrics.scores import entity_set

    tags = ["O", "B", "I", "E", "S", ".", "B-X", "I-X", "E-X", "S-X", "I-Y", "B-PER-X",
            "NOUN", "I-PER"]
    rng = random.Random(3)
    for trial in range(400):
        seqs = [[rng.choice(tags) for _ in range(rng.randint(0, 8))]
                for _ in range(rng.randint(0, 6))]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            want = frozenset(get_entities(seqs))
        assert entity_set(seqs) == want, (trial, seqs)


def test_pos_token_accuracy_and_seqeval_style_f1():
    gold = [["NOUN", "VERB", "DET", "NOUN"], ["PROPN", "PUNCT"]]
    pred = [["NOUN", "VERB", "NOUN", "NOUN"], ["PROPN", "PUNCT"]]
    scores = compute_scores(get_task("udpos"), gold, pred)
    assert scores["metric"] == "token_accuracy"
    assert scores["score"] == pytest.approx(5 / 6) == token_accuracy(gold, pred)
    assert "seqeval_f1" in scores and 0.0 <= scores["seqeval_f1"] <= 1.0
    assert scores["n_words"] == 6


def test_no_word_is_dropped_by_truncation(encoder_dir):
    """Sentences far longer than max_seq_length get a prediction for every word."""
    task = get_task("panx")
    start = load_start(encoder_dir, task, seed=0)
    featurizer = Featurizer(start.tokenizer, task, max_seq_length=8)
    long = ner_data(40, seed=3)
    long_sentence = TaggedSentence(
        "long:1", tuple(t for s in long for t in s.tokens), tuple(g for s in long for g in s.tags)
    )
    sentences = [long_sentence] + ner_data(5, seed=4)
    eval_set = prepare_eval(featurizer, sentences)
    predicted = predict_ids(start.model, eval_set)
    assert [len(p) for p in predicted] == [len(s.tokens) for s in sentences]
    assert all(label is not None for p in predicted for label in p)
    assert len(long_sentence.tokens) > 100
    scores = score(start.model, eval_set, task)
    assert scores["n_words"] == sum(len(s.tokens) for s in sentences)


def test_truncated_evaluation_scores_the_words_that_fit_and_counts_no_other(encoder_dir):
    """Reading eval_long=truncate (the study's): a long sentence is scored on the words
    whose wordpieces fit in max_seq_length, the others neither predicted nor counted; a
    sentence that fits is scored as under eval_long=whole."""
    task = get_task("panx")
    start = load_start(encoder_dir, task, seed=0)
    whole = Featurizer(start.tokenizer, task, max_seq_length=8)
    cut = Featurizer(start.tokenizer, task, max_seq_length=8, eval_long="truncate")
    long = ner_data(40, seed=3)
    long_sentence = TaggedSentence(
        "long:1", tuple(t for s in long for t in s.tokens), tuple(g for s in long for g in s.tags))
    short = [s for s in ner_data(30, seed=4) if len(whole.encode([s], windows=True).rows) == 1]
    sentences = [long_sentence] + short[:3]
    encoded = cut.encode(sentences, windows=True)
    fits = [sum(len(row.words) for row in whole.encode([s], windows=False).rows)
            for s in sentences]
    assert encoded.word_counts == fits and fits[0] < len(long_sentence.tokens)
    assert encoded.gold == [list(s.tags[:n]) for s, n in zip(sentences, fits, strict=True)]
    assert len(encoded.rows) == len(sentences)  # one row each: the first window
    truncated = score(start.model, prepare_eval(cut, sentences), task)
    assert truncated["n_words"] == sum(fits)
    predicted = predict_ids(start.model, prepare_eval(cut, sentences))
    in_full = predict_ids(start.model, prepare_eval(whole, sentences))
    assert predicted[0] == in_full[0][:fits[0]]  # the first window scores alike either way
    assert predicted[1:] == in_full[1:]
    with pytest.raises(FsxltError, match="eval_long is whole or truncate"):
        Featurizer(start.tokenizer, task, eval_long="cut")


def test_windowed_prediction_matches_per_window_forward(encoder_dir):
    task = get_task("panx")
    start = load_start(encoder_dir, task, seed=0)
    featurizer = Featurizer(start.tokenizer, task, max_seq_length=10)
    sentence = TaggedSentence(
        "s:1",
        tuple(
            [
                "john",
                "went",
                "to",
                "paris",
                "and",
                "met",
                "maria",
                "in",
                "lima",
                "today",
                "with",
                "the",
                "big",
                "dog",
            ]
        ),
        ("O",) * 14,
    )
    eval_set = prepare_eval(featurizer, [sentence])
    predicted = predict_ids(start.model, eval_set)[0]
    start.model.eval()
    expected = []
    with torch.no_grad():
        for row in featurizer.encode([sentence], windows=True).rows:
            expected += start.model(collate([row], featurizer.pad_id)).argmax(-1).tolist()
    assert predicted == expected


@pytest.mark.parametrize("task_name", ["xnli", "panx"])
def test_batching_and_sorting_do_not_change_predictions(encoder_dir, task_name):
    task = get_task(task_name)
    start = load_start(encoder_dir, task, seed=0)
    featurizer = Featurizer(start.tokenizer, task)
    examples = nli_data(30, seed=1) if task_name == "xnli" else ner_data(30, seed=1)
    encoded = featurizer.encode(examples, windows=True)
    big = make_eval_set(encoded, featurizer.pad_id, max_tokens=10_000)
    small = make_eval_set(encoded, featurizer.pad_id, max_tokens=40)
    assert len(small.batches) > len(big.batches) >= 1
    lengths = [len(encoded.rows[i].input_ids) for rows in big.batch_rows for i in rows]
    assert lengths == sorted(lengths)
    assert predict_ids(start.model, big) == predict_ids(start.model, small)
    one_by_one = []
    start.model.eval()
    with torch.no_grad():
        for row in encoded.rows:
            one_by_one.append(start.model(collate([row], featurizer.pad_id)).argmax(-1).tolist())
    if task_name == "xnli":
        assert predict_ids(start.model, big) == [p[0] for p in one_by_one]
    else:
        assert predict_ids(start.model, big) == one_by_one


def test_prediction_restores_training_mode(encoder_dir):
    task = get_task("xnli")
    start = load_start(encoder_dir, task, seed=0)
    featurizer = Featurizer(start.tokenizer, task)
    start.model.train()
    predict_ids(start.model, prepare_eval(featurizer, nli_data(6, seed=0)))
    assert start.model.training
