"""PET-style prompt-based adapting: patterns, verbalizers, masked-LM scoring, training."""

from __future__ import annotations

from importlib import resources

import pytest
import torch
import yaml

from fsxlt.cli import run_app
from fsxlt.errors import FsxltError
from fsxlt.methods import get_method
from fsxlt.models.encoding import Featurizer, collate
from fsxlt.models.pet import encode_pattern
from fsxlt.tasks import builtin_tasks, get_task, parse_task
from fsxlt.training import AdaptEngine, load_start, save_checkpoint, source_train
from tests.train_fixtures import make_encoder_dir, make_mlm_encoder_dir, nli_data

# the toy NLI data carries its label in one cue word (tests.train_fixtures.nli_data)
CUES = {"entailment": "happy", "neutral": "big", "contradiction": "not"}


@pytest.fixture(scope="module")
def mlm_dir(tmp_path_factory):
    return make_mlm_encoder_dir(tmp_path_factory.mktemp("mlm") / "encoder")


@pytest.fixture(scope="module")
def toy_task(tmp_path_factory):
    """XNLI with a pet verbalizer of words in the tiny vocabulary (one of them multi-piece)."""
    raw = yaml.safe_load(resources.files("fsxlt").joinpath("configs", "xnli.yaml").read_text())
    raw["name"] = "toy-nli"
    raw["pet"] = {"pattern": "{text_a} ? {mask} , {text_b}",
                  "verbalizers": {"en": {"entailment": "happy", "neutral": "big",
                                         "contradiction": "unbelievable"},
                                  "de": {"entailment": "sad", "neutral": "small",
                                         "contradiction": "not"}}}
    path = tmp_path_factory.mktemp("task") / "toy-nli.yaml"
    path.write_text(yaml.safe_dump(raw))
    return get_task(str(path))


def test_every_builtin_classification_task_has_a_pattern_and_verbalizer():
    from fsxlt.sampling.fewclue import fewclue_tasks

    without = {"nc", "qadsm", "qam", "wpr"}  # no pet section yet (docs/training.md#methods)
    chinese = set(fewclue_tasks())  # zh words only: tests/test_pet_fewclue.py
    for task in builtin_tasks().values():
        if task.name in without:
            assert task.pet is None
        elif task.name in chinese:
            assert task.pet is not None, task.name
        elif task.kind == "classification":
            assert task.pet is not None and "{mask}" in task.pet.pattern, task.name
            assert set(task.pet.verbalizer("en")) == set(task.labels)
            assert task.pet.verbalizer("xx") == task.pet.verbalizer("en")  # the fallback


@pytest.mark.parametrize(("pet", "message"), [
    ({"pattern": "{text_a} {text_b}", "verbalizers": {"en": {}}}, "exactly one {mask}"),
    ({"pattern": "{text_a} {mask}", "verbalizers": {"en": {}}}, "exactly when the task's input"),
    ({"pattern": "{text_a} {mask} {text_b} {oops}", "verbalizers": {}}, "may only use"),
    ({"pattern": "{text_a} {mask} {text_b}", "verbalizers": {"de": {}}}, "at least en"),
    ({"pattern": "{text_a} {mask} {text_b}",
      "verbalizers": {"en": {"entailment": "yes"}}}, "a word for each label"),
])
def test_bad_pet_sections_are_one_line_errors(pet, message):
    raw = {"name": "t", "kind": "classification", "input": "pair",
           "labels": ["entailment", "neutral", "contradiction"], "metric": "accuracy",
           "languages": ["en", "de"], "data": {"format": "tsv_pair"},
           "sampling": {"sampler": "nway-kshot"}, "pet": pet}
    with pytest.raises(FsxltError, match=message.replace("{", r"\{").replace("}", r"\}")):
        parse_task(raw, "t.yaml")


def test_the_pattern_puts_one_mask_in_every_row_and_cuts_the_texts_not_the_mask(mlm_dir,
                                                                                 toy_task):
    start = load_start(mlm_dir, toy_task)
    featurizer = Featurizer(start.tokenizer, toy_task, max_seq_length=16)
    long = nli_data(3, seed=1)
    long[0] = type(long[0])("x", " ".join(["the"] * 40), "john happy the", "entailment")
    encoded = encode_pattern(featurizer, toy_task.pet, long)
    mask = start.tokenizer.mask_token_id
    for row in encoded.rows:
        assert row.input_ids.count(mask) == 1 and row.input_ids[row.positions[0]] == mask
        assert len(row.input_ids) <= 16
    # budget 16 - [CLS] - [SEP] - "?" - "," - mask = 11 pieces: the premise is cut to 8
    first = start.tokenizer.convert_ids_to_tokens(encoded.rows[0].input_ids)
    question, comma = (start.tokenizer.tokenize(x)[0] for x in ("?", ","))  # [UNK] here
    assert first == ["[CLS]"] + ["the"] * 8 + [question, "[MASK]", comma, "john", "happy",
                                               "the", "[SEP]"]


def test_a_labels_score_is_its_words_log_probabilities_summed_worked_by_hand(mlm_dir,
                                                                           toy_task):
    """Transform zeroed: the head's output is its decoder bias at every mask, so a word
    scores the sum over its pieces of bias[piece] - logsumexp(bias); the three-piece
    word gets three masks, the one-piece words the first one."""
    start = load_start(mlm_dir, toy_task)
    method = get_method("pet", "classification")
    method.bind(toy_task, "en", start.tokenizer, dict(start.info))
    model = start.model
    method.prepare(model, seed=0)
    head = model.mlm_head
    with torch.no_grad():
        head.predictions.transform.dense.weight.zero_()
        head.predictions.transform.dense.bias.zero_()
        head.predictions.transform.LayerNorm.bias.zero_()
        head.predictions.bias.zero_()
        vocab = start.tokenizer.get_vocab()
        for word, value in {"happy": 2.0, "big": -1.0, "un": 1.0, "##believ": 2.0,
                            "##able": 6.0}.items():
            head.predictions.bias[vocab[word]] = value
    model.eval()
    featurizer = Featurizer(start.tokenizer, toy_task)
    batch = collate(method.encode(featurizer, nli_data(4, seed=2)).rows,
                    featurizer.pad_id)
    assert batch["word_index"].numel() == 4 * 3  # un ##believ ##able: three masks a row
    logits = model(batch)
    norm = float(torch.logsumexp(head.predictions.bias.detach(), 0))
    expected = torch.tensor([2.0 - norm, -1.0 - norm, 1.0 + 2.0 + 6.0 - 3 * norm])
    assert torch.allclose(logits, expected.expand(4, 3), atol=1e-4)
    # German verbalizer: other words, other scores
    method.bind(toy_task, "de", start.tokenizer, dict(start.info))
    assert method.pieces == [[vocab["sad"]], [vocab["small"]], [vocab["not"]]]


def test_an_encoder_without_a_masked_lm_head_is_a_one_line_error(tmp_path, toy_task):
    plain = make_encoder_dir(tmp_path / "plain")
    engine = AdaptEngine.from_start(toy_task, "de", str(plain), dev=nli_data(6, seed=3),
                                    device="cpu")
    with pytest.raises(FsxltError, match="pet needs an encoder pretrained with a masked-LM head"):
        engine.adapt(nli_data(6, seed=4), method="pet", lrs=[1e-3], max_epochs=1)


def test_pet_source_training_then_adapting_continues_from_the_trained_head(mlm_dir, toy_task,
                                                                           tmp_path):
    result = source_train(toy_task, nli_data(36, seed=1), nli_data(9, seed=2),
                          model_name=str(mlm_dir), lrs=[5e-3], epochs=3, batch_size=12,
                          seed=5, device="cpu", method="pet",
                          target_test={"de": nli_data(12, seed=7)})
    assert result.record["method"]["name"] == "pet"
    checkpoint = save_checkpoint(tmp_path / "ckpt", result.model, result.tokenizer,
                                 result.record)
    from safetensors.torch import load_file

    saved = load_file(str(checkpoint / "fsxlt_head.safetensors"))
    assert any(k.startswith("mlm_head.") for k in saved)
    from fsxlt.training.starts import evaluate_checkpoint  # through the pattern, as trained

    zero_shot = result.record["zero_shot"]["de"]["score"]
    scores = evaluate_checkpoint(str(checkpoint), toy_task, nli_data(12, seed=7), device="cpu")
    assert scores["score"] == pytest.approx(zero_shot)
    engine = AdaptEngine.from_start(toy_task, "de", str(checkpoint), dev=nli_data(12, seed=7),
                                    test=nli_data(12, seed=7), device="cpu")
    record = engine.adapt(nli_data(6, seed=8), method="pet", lrs=[1e-3], max_epochs=1,
                          select_start=True, method_options={"verbalizer": "en"})
    # epoch 0 is the source-trained model: its target dev score is the zero-shot one
    zero_shot = result.record["zero_shot"]["de"]["score"]
    assert record["runs"][0]["epochs"][0]["dev_score"] == pytest.approx(zero_shot)
    assert record["method_info"]["options"] == {"train_encoder": True, "verbalizer": "en"}


def test_pet_adapting_trains_and_restores_between_runs(mlm_dir, toy_task):
    engine = AdaptEngine.from_start(toy_task, "de", str(mlm_dir), dev=nli_data(12, seed=3),
                                    test=nli_data(15, seed=4), device="cpu")
    first = engine.adapt(nli_data(6, seed=5), method="pet", lrs=[5e-3], seed=1, max_epochs=3)
    engine.adapt(nli_data(6, seed=5), method="full", lrs=[5e-3], seed=1, max_epochs=2)
    again = engine.adapt(nli_data(6, seed=5), method="pet", lrs=[5e-3], seed=1, max_epochs=3)
    assert first["runs"][0]["epochs"] == again["runs"][0]["epochs"]
    assert first["test_score"] == again["test_score"]
    assert first["method"] == "pet" and first["runs"][0]["n_trainable_parameters"] > 0


def test_cli_source_train_rejects_other_methods(tmp_path, capsys):
    status = run_app(["source-train", "--task", "xnli", "--out", str(tmp_path / "c"),
                      "--method", "lora"])
    assert status == 2 and "full or pet" in capsys.readouterr().err
