"""Extractive QA decoding as BERT's SQuAD code decodes (google-research/bert, run_squad.py
at eedf571), and fsxlt 0.4's rule as the option ``any-window``.

The reference functions below are written from run_squad.py, not imported (it needs
TensorFlow 1): ``_check_is_max_context`` (lines 513-545) and the candidate loop of
``write_predictions`` (lines 775-805: the 20 best start and end indexes of a feature,
kept when both lie in the context (``token_to_orig_map``), the start has its max context
in this feature, the end is not before the start and the span is at most 30 tokens;
the best kept pair over all features by start + end logit, lines 816-819).
"""

from __future__ import annotations

import random

import pytest
import torch

from fsxlt.data import QAExample
from fsxlt.errors import FsxltError
from fsxlt.models.encoding import collate
from fsxlt.models.spans import (
    QAFeaturizer,
    answers_of,
    best_spans,
    max_context_windows,
    span_logits,
    trimmed_offsets,
    window_starts,
)
from tests.train_fixtures import make_tokenizer

WORDS = ["anna", "went", "to", "paris", "bob", "rome", "who", "carl", "oslo", "dana"]


def bert_is_max_context(doc_spans: list[tuple[int, int]], current: int, position: int) -> bool:
    """run_squad.py lines 513-545: (start, length) doc spans; strict > keeps the first."""
    best_score, best_span = None, None
    for index, (start, length) in enumerate(doc_spans):
        end = start + length - 1
        if position < start or position > end:
            continue
        score = min(position - start, end - position) + 0.01 * length
        if best_score is None or score > best_score:
            best_score, best_span = score, index
    return current == best_span


def bert_best_indexes(logits: list[float], n_best: int) -> list[int]:
    """run_squad.py lines 1023-1032: indexes sorted by logit, highest first (stable)."""
    return [i for i, _ in sorted(enumerate(logits), key=lambda x: x[1], reverse=True)][:n_best]


def bert_prediction(features: list[dict], n_best: int = 20, max_answer: int = 30,
                    ) -> tuple[int, int, int] | None:
    """run_squad.py lines 775-819: the best (feature, start, end) over all features."""
    found = []
    for number, feature in enumerate(features):
        starts = bert_best_indexes(feature["start_logits"], n_best)
        ends = bert_best_indexes(feature["end_logits"], n_best)
        for start in starts:
            for end in ends:
                if start not in feature["token_to_orig_map"] \
                        or end not in feature["token_to_orig_map"]:
                    continue
                if not feature["token_is_max_context"].get(start, False):
                    continue
                if end < start or end - start + 1 > max_answer:
                    continue
                found.append((feature["start_logits"][start] + feature["end_logits"][end],
                              number, start, end))
    if not found:
        return None
    _score, number, start, end = max(found, key=lambda x: x[0])
    return number, start, end


def test_max_context_windows_agree_with_berts_check_over_many_layouts():
    rng = random.Random(0)
    for _ in range(300):
        n_tokens, room = rng.randint(1, 120), rng.randint(1, 40)
        stride = rng.randint(1, 50)
        starts = window_starts(n_tokens, room, stride)
        spans = [(s, min(room, n_tokens - s)) for s in starts]
        owner = max_context_windows(starts, [length for _s, length in spans], n_tokens)
        for position in range(n_tokens):
            mine = [owner[position] == w for w in range(len(spans))]
            theirs = [bert_is_max_context(spans, w, position) if spans[w][0] <= position
                      < spans[w][0] + spans[w][1] else False for w in range(len(spans))]
            assert [m and spans[w][0] <= position < sum(spans[w])
                    for w, m in enumerate(mine)] == theirs


@pytest.fixture(scope="module")
def featurizer(tmp_path_factory):
    tokenizer = make_tokenizer(tmp_path_factory.mktemp("vocab"))
    return QAFeaturizer(tokenizer, max_len=24, uses_token_types=True, stride=5)


def _question(rng: random.Random, number: int) -> QAExample:
    words = [rng.choice(WORDS) for _ in range(rng.randint(3, 60))]
    question = " ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 6)))
    return QAExample(id=f"q{number}", question_id=f"q{number}", question=question,
                     context=" ".join(words), answers=[], starts=[], language="en")


def _bert_features(featurizer, questions, rows, logits: torch.Tensor) -> list[list[dict]]:
    """Each question's windows as BERT's features: their (unpadded) logits, the positions
    of context tokens, and BERT's own max-context flags over the windows' doc spans."""
    tokenizer, out, row = featurizer.tokenizer, [], 0
    for question in questions:
        n_context = len(tokenizer(question.context, add_special_tokens=False)["input_ids"])
        n_question = min(len(tokenizer(question.question, add_special_tokens=False)
                             ["input_ids"]), 64)
        head = len(featurizer.prefix) + n_question + len(featurizer.middle)
        room = featurizer.max_len - head - len(featurizer.suffix)
        spans = [(s, min(room, n_context - s))
                 for s in window_starts(n_context, room, featurizer.stride)]
        features = []
        for number, (_start, length) in enumerate(spans):
            real = len(rows[row + number].input_ids)
            features.append({
                "start_logits": logits[row + number, :real, 0].tolist(),
                "end_logits": logits[row + number, :real, 1].tolist(),
                "token_to_orig_map": {head + i for i in range(length)},
                "token_is_max_context": {
                    head + i: bert_is_max_context(spans, number, spans[number][0] + i)
                    for i in range(length)}})
        out.append(features)
        row += len(spans)
    return out


def test_max_context_decoding_is_berts_write_predictions(featurizer):
    rng = random.Random(1)
    torch.manual_seed(1)
    checked = differ = 0
    for trial in range(60):
        questions = [_question(rng, trial * 10 + i) for i in range(4)]
        windows = featurizer.windows(questions)
        rows = [w for _i, w in windows]
        n_windows = [sum(1 for i, _w in windows if i == q) for q in range(len(questions))]
        batch = collate([_Row(**w) for w in rows], 0, "cpu")
        logits = torch.randn(len(rows), batch["input_ids"].shape[1], 2) * 3
        span_rows = span_logits(logits, batch["attention_mask"])
        mine = best_spans(span_rows, batch["context_mask"], batch["max_context"])
        legacy = best_spans(span_rows, batch["context_mask"])
        features = _bert_features(featurizer, questions, [_Row(**w) for w in rows], logits)
        row = 0
        for count, feats in zip(n_windows, features, strict=True):
            scores = mine[0][row:row + count]
            best = int(scores.argmax()) if torch.isfinite(scores).any() else None
            expected = bert_prediction(feats)
            got = None if best is None else (best, int(mine[1][row + best]),
                                             int(mine[2][row + best]))
            assert got == expected
            old = legacy[0][row:row + count]
            differ += int(old.argmax()) != best or \
                int(legacy[1][row + int(old.argmax())]) != got[1]
            checked += 1
            row += count
    assert checked == 240 and differ > 0  # the two rules do differ on some questions


class _Row:
    """A window as collate reads it (fsxlt.models.encoding.Row's fields)."""

    def __init__(self, **window):
        self.input_ids = window["input_ids"]
        self.token_type_ids = window["token_type_ids"]
        self.labels = window["labels"]
        self.offsets = window["offsets"]
        self.max_context = window["max_context"]
        self.positions, self.words, self.choices, self.n_sequences = [], [], None, 1


def test_a_lone_word_boundary_piece_does_not_take_the_next_words_first_character():
    """transformers 5 builds XLM-R's tokenizer as WhitespaceSplit + Metaspace: a lone ``▁``
    before a word with no ``▁``-joined piece is given that word's first character."""
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    vocab = [("<unk>", 0.0), ("▁", -2.0), ("ab", -2.0), ("▁cd", -1.0), ("▁ef", -1.0),
             ("a", -5.0), ("b", -5.0)]
    backend = Tokenizer(models.Unigram(vocab, unk_id=0, byte_fallback=False))
    backend.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.WhitespaceSplit(), pre_tokenizers.Metaspace(prepend_scheme="always")])
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=backend, unk_token="<unk>")
    context = "cd ab ef"
    raw = tokenizer(context, add_special_tokens=False, return_offsets_mapping=True)
    assert tokenizer.convert_ids_to_tokens(raw["input_ids"]) == ["▁cd", "▁", "ab", "▁ef"]
    assert raw["offset_mapping"][1] == (3, 4)  # the lone piece claims the "a" of "ab"
    offsets = trimmed_offsets(raw["offset_mapping"])
    assert offsets == [(0, 2), (3, 3), (3, 5), (6, 8)]

    class Encoded:
        n_examples = 1
        contexts = [context]
        rows = [type("R", (), {"example": 0, "offsets": offsets})()]

    # a span that ends on the lone piece is "cd", not "cd a"; one that starts on it, "ab"
    assert answers_of(Encoded, [1.0], [0], [1]) == ["cd"]
    assert answers_of(Encoded, [1.0], [1], [2]) == ["ab"]


def test_the_rule_is_checked_and_recorded(tmp_path):
    from fsxlt.execution.config import parse_qa_decoding
    from fsxlt.tasks import get_task

    assert parse_qa_decoding(None, get_task("xquad"), "x") == "max-context"
    assert parse_qa_decoding("any-window", get_task("mlqa"), "x") == "any-window"
    with pytest.raises(FsxltError, match="must be one of max-context, any-window"):
        parse_qa_decoding("best", get_task("xquad"), "--qa-decoding")
    with pytest.raises(FsxltError, match="for extractive QA tasks; xnli is classification"):
        parse_qa_decoding("any-window", get_task("xnli"), "--qa-decoding")
