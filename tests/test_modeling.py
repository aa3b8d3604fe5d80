"""Heads, freezing policies and featurisation on a tiny config-built BERT."""

from __future__ import annotations

import pytest
import torch
from torch.nn import functional as F

from fsxlt.data import TaggedSentence, TextExample
from fsxlt.errors import FsxltError
from fsxlt.methods import prepare_method
from fsxlt.models.encoding import Featurizer, collate
from fsxlt.models.model import COS_SCALE, CosineClassifier
from fsxlt.tasks import get_task
from fsxlt.training.checkpoint import load_start
from tests.train_fixtures import HEAD_ONLY_TRAINABLE, make_encoder_dir


@pytest.fixture(scope="module")
def encoder_dir(tmp_path_factory):
    return make_encoder_dir(tmp_path_factory.mktemp("tiny-bert"))


@pytest.fixture()
def xnli_start(encoder_dir):
    return load_start(encoder_dir, "xnli", seed=1)


def test_pretrained_pooler_is_the_encoders_own(encoder_dir):
    from transformers import AutoModel

    reference = AutoModel.from_pretrained(encoder_dir)
    start = load_start(encoder_dir, "xnli", seed=1)
    assert torch.equal(start.model.pooler.dense.weight, reference.pooler.dense.weight)
    assert start.model.encoder.pooler is None  # the head owns it now


@pytest.mark.parametrize("method", sorted(HEAD_ONLY_TRAINABLE))
def test_head_only_methods_train_exactly_the_head(xnli_start, method):
    model = xnli_start.model
    trainable = prepare_method(model, method, seed=3)
    assert set(trainable) == HEAD_ONLY_TRAINABLE[method]
    assert not any(p.requires_grad for p in model.encoder.parameters())
    model.train()
    assert not model.encoder.training  # frozen encoder runs without dropout
    assert model.dropout.training


def test_full_trains_everything(xnli_start):
    model = xnli_start.model
    trainable = prepare_method(model, "full", seed=3)
    assert set(trainable) == {n for n, _ in model.named_parameters()}


def test_tagging_rejects_pooler_methods(encoder_dir):
    start = load_start(encoder_dir, "panx", seed=1)
    assert start.model.pooler is None
    assert set(prepare_method(start.model, "fc", 0)) == {"classifier.weight", "classifier.bias"}
    with pytest.raises(FsxltError, match="pooler"):
        prepare_method(start.model, "fc-pooler", 0)
    with pytest.raises(FsxltError, match="unknown method"):
        prepare_method(start.model, "lora-x", 0)


def test_cos_head_logits_are_ten_times_cosine():
    torch.manual_seed(0)
    head = CosineClassifier(16, 5)
    torch.nn.init.normal_(head.weight)
    x = torch.randn(7, 16) * 3.0
    expected = COS_SCALE * F.cosine_similarity(x[:, :, None], head.weight[None, :, :], dim=1)
    assert torch.allclose(head(x), expected, atol=1e-5)
    assert COS_SCALE == 10.0


def test_cos_pooler_installs_new_random_matrix(xnli_start):
    model = xnli_start.model
    prepare_method(model, "cos-pooler", seed=3)
    assert isinstance(model.classifier, CosineClassifier)
    assert model.classifier.weight.shape == (32, 3)
    features = torch.randn(4, 32)
    pooled = model.pooler(features)
    model.eval()
    logits = model.head(features)
    expected = 10 * F.cosine_similarity(pooled[:, :, None], model.classifier.weight[None], dim=1)
    assert torch.allclose(logits, expected, atol=1e-5)


def test_fc_reset_starts_from_different_weights(xnli_start):
    model = xnli_start.model
    # pretend the classifier was source-trained: give it distinctive weights
    with torch.no_grad():
        model.classifier.weight.fill_(0.5)
        model.classifier.bias.fill_(0.25)
    before = {k: v.clone() for k, v in model.classifier.state_dict().items()}
    prepare_method(model, "fc-reset-pooler", seed=3)
    after = model.classifier.state_dict()
    assert not torch.equal(before["weight"], after["weight"])
    assert not torch.equal(before["bias"], after["bias"]) or torch.all(after["bias"] == 0)
    # re-initialisation is seeded: same seed, same weights
    first = after["weight"].clone()
    prepare_method(model, "fc-reset-pooler", seed=3)
    assert torch.equal(first, model.classifier.weight)
    prepare_method(model, "fc-reset-pooler", seed=4)
    assert not torch.equal(first, model.classifier.weight)


def test_fc_keeps_source_classifier(xnli_start):
    model = xnli_start.model
    before = model.classifier.weight.clone()
    prepare_method(model, "fc-pooler", seed=3)
    assert torch.equal(before, model.classifier.weight)


def test_last_wordpiece_carries_the_label(encoder_dir, xnli_start):
    start = load_start(encoder_dir, "panx", seed=1)
    featurizer = Featurizer(start.tokenizer, get_task("panx"))
    sentence = TaggedSentence("s:1", ("acme", "unbelievable", "paris"),
                              ("B-ORG", "I-ORG", "B-LOC"))
    row = featurizer.encode([sentence]).rows[0]
    pieces = start.tokenizer.convert_ids_to_tokens(row.input_ids)
    assert pieces == ["[CLS]", "acme", "un", "##believ", "##able", "paris", "[SEP]"]
    assert row.positions == [1, 4, 5]  # "##able", not "un", carries I-ORG
    labels = get_task("panx").labels
    assert [labels[i] for i in row.labels] == ["B-ORG", "I-ORG", "B-LOC"]
    batch = collate([row], featurizer.pad_id)
    start.model.eval()
    with torch.no_grad():
        hidden = start.model.encoder(input_ids=batch["input_ids"],
                                     attention_mask=batch["attention_mask"]).last_hidden_state
        features = start.model.encode(batch)
    assert torch.equal(features, hidden[0, [1, 4, 5]])
    assert start.model(batch).shape == (3, len(labels))


def test_word_without_pieces_is_kept_as_unknown(encoder_dir):
    start = load_start(encoder_dir, "panx", seed=1)
    featurizer = Featurizer(start.tokenizer, get_task("panx"))
    sentence = TaggedSentence("s:1", ("john", "\u200b", "paris"), ("B-PER", "O", "B-LOC"))
    row = featurizer.encode([sentence], windows=True).rows[0]
    assert row.words == [0, 1, 2]
    assert row.input_ids[row.positions[1]] == start.tokenizer.unk_token_id


def test_training_truncates_but_evaluation_windows_keep_every_word(encoder_dir):
    start = load_start(encoder_dir, "panx", seed=1)
    featurizer = Featurizer(start.tokenizer, get_task("panx"), max_seq_length=8)  # 6 pieces
    tokens = ("john", "unbelievable", "went", "to", "paris", "and", "met", "maria", "in",
              "lima", "unbelievable", "today", ".")
    sentence = TaggedSentence("s:1", tokens, ("O",) * len(tokens))
    train_rows = featurizer.encode([sentence], windows=False).rows
    assert len(train_rows) == 1 and train_rows[0].words == [0, 1, 2, 3]
    assert len(train_rows[0].input_ids) <= 8
    eval_rows = featurizer.encode([sentence], windows=True).rows
    assert [w for r in eval_rows for w in r.words] == list(range(len(tokens)))
    assert all(len(r.input_ids) <= 8 for r in eval_rows)
    assert all(r.input_ids[0] == start.tokenizer.cls_token_id for r in eval_rows)


def test_pair_inputs_are_segment_pairs_truncated_to_max_length(encoder_dir):
    start = load_start(encoder_dir, "xnli", seed=1)
    featurizer = Featurizer(start.tokenizer, get_task("xnli"), max_seq_length=10)
    example = TextExample("p:1", "the cat saw the dog in the big city today", "a cat",
                          "neutral")
    row = featurizer.encode([example]).rows[0]
    assert len(row.input_ids) == 10
    sep = start.tokenizer.sep_token_id
    assert row.input_ids.count(sep) == 2
    assert row.token_type_ids[-3:] == [1, 1, 1]  # "a cat [SEP]"
    assert row.token_type_ids[0] == 0


def test_unknown_label_is_a_user_error(encoder_dir):
    start = load_start(encoder_dir, "xnli", seed=1)
    featurizer = Featurizer(start.tokenizer, get_task("xnli"))
    with pytest.raises(FsxltError, match="not a label"):
        featurizer.encode([TextExample("p:1", "a", "b", "maybe")])
