"""PET on FewCLUE: a mask per piece, the nine Chinese patterns, ChID, CLUEWSC, K=0 runs."""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path

import pytest
import torch
import yaml

from fsxlt.cli import run_app
from fsxlt.data import read_examples
from fsxlt.errors import FsxltError
from fsxlt.execution import expand, parse_config
from fsxlt.methods import get_method
from fsxlt.models.encoding import Featurizer, collate
from fsxlt.models.pet import encode_choice_pattern, verbalizer_pieces
from fsxlt.sampling.store import read_examples_jsonl
from fsxlt.tasks import PET_PLACEHOLDERS, get_task, parse_task
from fsxlt.training import AdaptEngine, load_start
from tests.fewclue_fixtures import FEWCLUE_VOCAB, TASKS, TRAIN_SIZE, write_fewclue
from tests.train_fixtures import make_mlm_encoder_dir, make_tokenizer

SWEEP_TASKS = ("eprstmt", "chid")


def pet_characters() -> tuple[str, ...]:
    """Every character the nine tasks' patterns and label words use (placeholders aside)."""
    seen: dict[str, None] = {}
    for name in TASKS:
        pet = get_task(name).pet
        text = pet.pattern
        for placeholder in PET_PLACEHOLDERS:
            text = text.replace(placeholder, "")
        text += "".join("".join(words.values()) for words in pet.verbalizers.values())
        seen.update((char, None) for char in text if not char.isspace())
    return tuple(seen)


VOCAB = tuple(dict.fromkeys(FEWCLUE_VOCAB + pet_characters()))  # one token per character


@pytest.fixture(scope="module")
def mlm(tmp_path_factory) -> Path:
    return make_mlm_encoder_dir(tmp_path_factory.mktemp("mlm") / "tiny-zh-mlm", extra=VOCAB)


@pytest.fixture(scope="module")
def fewclue(tmp_path_factory) -> Path:
    return write_fewclue(tmp_path_factory.mktemp("fewclue") / "datasets")


def split(fewclue: Path, task: str, name: str) -> list:
    return read_examples(fewclue / task / f"{name}.json", get_task(task))


def custom_task(tmp_path: Path, base: str, pet: dict) -> object:
    raw = yaml.safe_load(resources.files("fsxlt").joinpath("configs", f"{base}.yaml")
                         .read_text(encoding="utf-8"))
    raw.update(name=f"toy-{base}", pet=pet)
    path = tmp_path / f"toy-{base}.yaml"
    path.write_text(yaml.safe_dump(raw, allow_unicode=True), encoding="utf-8")
    return get_task(str(path))


def prepared(start_dir: Path, task: object, examples: list, max_len: int = 64):
    """The start, bound and prepared for pet, in eval mode; the batch of ``examples``."""
    start = load_start(start_dir, task)
    method = get_method("pet", task.kind)
    method.bind(task, "zh", start.tokenizer, dict(start.info))
    method.prepare(start.model, seed=0)
    start.model.eval()
    featurizer = Featurizer(start.tokenizer, task, max_seq_length=max_len)
    encoded = method.encode(featurizer, examples)
    return start, encoded, collate(encoded.rows, featurizer.pad_id)


def reference_log_probs(start_dir: Path, batch: dict) -> torch.Tensor:
    """The pretrained masked LM's own log-probabilities (transformers, not fsxlt)."""
    from transformers import BertForMaskedLM

    model = BertForMaskedLM.from_pretrained(str(start_dir)).eval()
    with torch.no_grad():
        logits = model(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"],
                       token_type_ids=batch.get("token_type_ids")).logits
    return torch.log_softmax(logits, dim=-1)


# --------------------------------------------------------------------------- the YAMLs

@pytest.mark.parametrize("name", TASKS)
def test_each_fewclue_yaml_has_a_chinese_pattern_whose_words_tokenize(name, tmp_path):
    task = get_task(name)
    tokenizer = make_tokenizer(tmp_path, VOCAB)
    assert task.pet is not None and "{text_a}" in task.pet.pattern
    if task.kind == "multiple_choice":  # ChID: the candidates are the words
        assert task.pet.verbalizers == {} and "{choices}" in task.pet.pattern
        assert "{mask}" not in task.pet.pattern
        return
    words = task.pet.verbalizer("zh")
    assert set(words) == set(task.labels) and len(set(words.values())) == len(words)
    pieces = verbalizer_pieces(tokenizer, [words[label] for label in task.labels])
    for word, ids in zip((words[label] for label in task.labels), pieces, strict=True):
        assert len(ids) == len(word) and tokenizer.unk_token_id not in ids, word
    assert task.pet.verbalizer("zh") is task.pet.verbalizers["zh"]


# --------------------------------------------------------------------------- scoring

def test_a_word_of_several_pieces_sums_their_log_probabilities_at_as_many_masks(mlm,
                                                                                fewclue,
                                                                                tmp_path):
    """Worked from the pretrained masked LM: 不 at the first mask; 很 at the first plus 好
    at the second (the shorter word is scored on its own mask only)."""
    task = custom_task(tmp_path, "eprstmt", {"pattern": "{text_a}。我{mask}满意。",
                                             "verbalizers": {"zh": {"Negative": "不",
                                                                    "Positive": "很好"}}})
    examples = split(fewclue, "eprstmt", "dev_0")
    start, encoded, batch = prepared(mlm, task, examples)
    vocab = start.tokenizer.get_vocab()
    mask = start.tokenizer.mask_token_id
    for row in encoded.rows:
        assert len(row.positions) == 2 and row.positions[1] == row.positions[0] + 1
        assert [row.input_ids[p] for p in row.positions] == [mask, mask]
        assert row.input_ids.count(mask) == 2
    with torch.no_grad():
        logits = start.model(batch)
    log_probs = reference_log_probs(mlm, batch)
    expected = []
    for b, row in enumerate(encoded.rows):
        first, second = (log_probs[b, p] for p in row.positions)
        expected.append([first[vocab["不"]], first[vocab["很"]] + second[vocab["好"]]])
    assert torch.allclose(logits, torch.tensor(expected), atol=1e-4)


def test_words_of_one_piece_give_the_old_one_mask_result(mlm, fewclue):
    """One piece per word: one mask, and the scores are the words' masked-LM logits less
    one number per row, so losses and predictions are those of the logits themselves."""
    task = get_task("eprstmt")
    start, encoded, batch = prepared(mlm, task, split(fewclue, "eprstmt", "dev_0"))
    assert all(len(row.positions) == 1 for row in encoded.rows)
    with torch.no_grad():
        logits = start.model(batch)
        words = [start.tokenizer.convert_tokens_to_ids(w) for w in ("不", "很")]
        old = start.model.mlm_head(start.model.encode(batch, positions=True))[:, words]
    assert torch.allclose(logits - logits[:, :1], old - old[:, :1], atol=1e-4)
    assert torch.equal(logits.argmax(-1), old.argmax(-1))
    labels = batch["labels"]
    assert torch.allclose(torch.nn.functional.cross_entropy(logits, labels),
                          torch.nn.functional.cross_entropy(old, labels), atol=1e-5)


def test_chid_lists_its_candidates_and_scores_each_at_the_blanks_masks(mlm, fewclue):
    task = get_task("chid")
    examples = split(fewclue, "chid", "dev_0")
    start, encoded, batch = prepared(mlm, task, examples, max_len=96)
    tokenizer, mask = start.tokenizer, start.tokenizer.mask_token_id
    n_masks = max(len(tokenizer(c, add_special_tokens=False)["input_ids"])
                  for ex in examples for c in ex.choices)
    for row, example in zip(encoded.rows, examples, strict=True):
        masks, listed = row.positions[:n_masks], row.positions[n_masks:]
        assert [row.input_ids[p] for p in masks] == [mask] * n_masks
        assert len(listed) == 7 * n_masks
        for c, candidate in enumerate(example.choices):
            ids = tokenizer(candidate, add_special_tokens=False)["input_ids"]
            read = [row.input_ids[p] for p in listed[c * n_masks:(c + 1) * n_masks]]
            assert read == ids + [mask] * (n_masks - len(ids))
        assert "#" not in tokenizer.convert_ids_to_tokens(row.input_ids)  # the blank is gone
    with torch.no_grad():
        logits = start.model(batch)
    log_probs = reference_log_probs(mlm, batch)
    for b, (row, example) in enumerate(zip(encoded.rows, examples, strict=True)):
        for c, candidate in enumerate(example.choices):
            ids = tokenizer(candidate, add_special_tokens=False)["input_ids"]
            by_hand = sum(log_probs[b, row.positions[j], piece] for j, piece in enumerate(ids))
            assert float(logits[b, c]) == pytest.approx(float(by_hand), abs=1e-4)


def test_cluewsc_names_the_pronoun_and_the_noun_phrase_in_its_pattern(mlm, fewclue):
    task = get_task("cluewsc")
    examples = split(fewclue, "cluewsc", "dev_0")
    start, encoded, _ = prepared(mlm, task, examples)
    for row, example in zip(encoded.rows, examples, strict=True):
        tokens = start.tokenizer.convert_ids_to_tokens(row.input_ids)
        noun = example.text_a[example.text_a.index("[") + 1]
        pronoun = example.text_a[example.text_a.index("<") + 1]
        mask_at = row.positions[0]
        # ... 这 里 ， <pronoun> [MASK] 是 指 <noun> 。 [SEP]
        assert tokens[mask_at - 4:mask_at + 5] == ["这", "里", "，", pronoun, "[MASK]", "是",
                                                  "指", noun, "。"]


# --------------------------------------------------------------------------- adapting

@pytest.mark.parametrize("name", ["tnews", "csl", "cluewsc", "chid"])
def test_pet_adapts_on_a_fewclue_split_end_to_end(name, mlm, fewclue):
    engine = AdaptEngine.from_start(name, "zh", str(mlm), dev=split(fewclue, name, "dev_0"),
                                    test=split(fewclue, name, "test_public"), device="cpu",
                                    max_seq_length=96)
    record = engine.adapt(split(fewclue, name, "train_0"), method="pet", lrs=[5e-3], seed=1,
                          max_epochs=2, select_start=True)
    assert record["method"] == "pet" and record["method_info"]["version"] == "2"
    assert [e["epoch"] for e in record["runs"][0]["epochs"]] == [0, 1, 2]
    assert 0.0 <= record["test_score"] <= 1.0 and record["test"]["n"] == 21
    again = engine.zero_shot("pet", seed=1)  # K=0 on the same engine: the start's epoch 0
    assert again["dev_score"] == pytest.approx(record["runs"][0]["epochs"][0]["dev_score"])


# --------------------------------------------------------------------------- K=0

@pytest.fixture(scope="module")
def store(fewclue, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("buckets") / "fewclue"
    tasks = [x for task in SWEEP_TASKS for x in ("-t", task)]
    assert run_app(["buckets", "import-fewclue", str(fewclue), "--out", str(out), *tasks]) == 0
    return out


def test_the_no_source_pet_arm_writes_a_k0_record_that_the_report_shows(mlm, fewclue, store,
                                                                       tmp_path, capsys):
    runs = tmp_path / "runs"
    config = {"name": "pet-fewclue", "out": str(runs), "buckets": str(store), "methods": [],
              "no_source_training": {"encoder": str(mlm), "methods": ["pet"]},
              "lrs": [1e-3], "max_epochs": 1, "patience": 1, "max_seq_length": 64,
              "tasks": {task: {"k": [TRAIN_SIZE]} for task in SWEEP_TASKS}}
    path = tmp_path / "sweep.yaml"
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    assert run_app(["sweep", str(path), "--device", "cpu", "--workers", "0"]) == 0
    for task in SWEEP_TASKS:
        k0 = runs / task / "zh" / "k0"
        assert sorted(p.relative_to(k0).as_posix() for p in k0.rglob("*.json")) == \
            ["pet-nosource/zero-shot.json"]
        record = json.loads((k0 / "pet-nosource" / "zero-shot.json").read_text("utf-8"))
        assert (record["status"], record["k"], record["method"]) == ("ok", 0, "pet")
        assert record["runs"] == [] and record["bucket"]["n_examples"] == 0
        assert record["model"]["source_training"] is False
        engine = AdaptEngine.from_start(task, "zh", str(mlm), device="cpu", max_seq_length=64,
                                        dev=read_examples_jsonl(record["data"]["dev"]["source"]),
                                        test=split(fewclue, task, "test_public"))
        assert record["test_score"] == pytest.approx(engine.zero_shot("pet")["test_score"])
    capsys.readouterr()
    assert run_app(["sweep", str(path), "--device", "cpu"]) == 0
    assert "already done" in capsys.readouterr().out + capsys.readouterr().err
    assert run_app(["report", str(runs), "--format", "csv"]) == 0
    rows = [line.split(",") for line in capsys.readouterr().out.splitlines()]
    header = rows[0]
    cells = [dict(zip(header, row, strict=False)) for row in rows[1:]]
    zero = [c for c in cells if c.get("arm") == "pet-nosource" and c.get("k") == "0"]
    assert sorted(c["task"] for c in zero) == sorted(SWEEP_TASKS)
    assert all(c["n"] == "1" and c["missing"] == "" for c in zero)


def test_only_methods_that_score_untrained_get_a_k0_run(store, tmp_path):
    config = {"out": str(tmp_path / "runs"), "buckets": str(store), "methods": [],
              "no_source_training": {"encoder": "an-encoder", "methods": ["full", "pet"]},
              "tasks": {"eprstmt": {"k": [TRAIN_SIZE]}}}
    runs = [run for run in expand(parse_config(config)).runs if run.k == 0]
    assert [(run.arm, run.bucket_name, run.bucket_path) for run in runs] == \
        [("pet-nosource", "zero-shot", "")]  # a fresh head (full) predicts nothing at K=0
    assert runs[0].record_path.endswith("eprstmt/zh/k0/pet-nosource/zero-shot.json")
    assert runs[0].dev_path.endswith("00.dev.jsonl")  # the first split's dev set


def test_k0_is_refused_for_a_method_that_needs_training(mlm, fewclue):
    engine = AdaptEngine.from_start("eprstmt", "zh", str(mlm), device="cpu",
                                    dev=split(fewclue, "eprstmt", "dev_0"))
    with pytest.raises(FsxltError, match="predicts nothing untrained") as err:
        engine.zero_shot("full")
    assert "\n" not in str(err.value)


# --------------------------------------------------------------------------- bad input

def bad_task(pet: dict, base: str = "eprstmt") -> None:
    raw = yaml.safe_load(resources.files("fsxlt").joinpath("configs", f"{base}.yaml")
                         .read_text(encoding="utf-8"))
    raw["pet"] = pet
    parse_task(raw, f"{base}.yaml")


@pytest.mark.parametrize(("base", "pet", "says"), [
    ("eprstmt", {"pattern": "{text_a}。我满意。", "verbalizers": {"zh": {"Negative": "不",
                                                                   "Positive": "很"}}},
     "exactly one {mask}"),
    ("eprstmt", {"pattern": "{text_a}{span1}{mask}", "verbalizers": {"zh": {"Negative": "不",
                                                                         "Positive": "很"}}},
     "may only use"),
    ("cluewsc", {"pattern": "{text_a}{span2}{span2}{mask}",
                 "verbalizers": {"zh": {"false": "不", "true": "就"}}}, "at most once"),
    ("eprstmt", {"pattern": "{text_a}{mask}", "verbalizers": {"de": {"Negative": "n",
                                                                      "Positive": "p"}}},
     "every language of the task"),
    ("chid", {"pattern": "{choices}{text_a}{mask}"}, "no {mask}"),
    ("chid", {"pattern": "{text_a}"}, "must use {choices} exactly once"),
    ("chid", {"pattern": "{choices}{text_a}", "verbalizers": {"zh": {"0": "一"}}},
     "takes no verbalizers"),
])
def test_bad_fewclue_pet_sections_are_one_line_errors(base, pet, says):
    with pytest.raises(FsxltError) as err:
        bad_task(pet, base)
    assert says in str(err.value) and "\n" not in str(err.value)


def test_a_label_word_that_tokenizes_to_nothing_is_a_one_line_error(mlm, tmp_path):
    task = custom_task(tmp_path, "eprstmt", {"pattern": "{text_a}。我{mask}满意。",
                                             "verbalizers": {"zh": {"Negative": "\u200b",
                                                                    "Positive": "很"}}})
    start = load_start(mlm, task)
    with pytest.raises(FsxltError, match="empty after tokenization") as err:
        get_method("pet", task.kind).bind(task, "zh", start.tokenizer, dict(start.info))
    assert "\n" not in str(err.value)


def test_a_span_placeholder_without_marked_spans_is_a_one_line_error(mlm, tmp_path):
    from fsxlt.data import TextExample

    task = get_task("cluewsc")
    start = load_start(mlm, task)
    method = get_method("pet", task.kind)
    method.bind(task, "zh", start.tokenizer, dict(start.info))
    unmarked = [TextExample("x:1", "天地人山水", None, "true")]
    with pytest.raises(FsxltError, match=r"names \{span1\} but the text marks no span") as err:
        method.encode(Featurizer(start.tokenizer, task), unmarked)
    assert "\n" not in str(err.value)


def test_chid_candidates_that_tokenize_to_nothing_are_a_one_line_error(mlm):
    from fsxlt.data import ChoiceExample

    task = get_task("chid")
    start = load_start(mlm, task)
    example = ChoiceExample("c:1", "天地#idiom#山水", ("天地人山", "\u200b", "a", "b", "c", "d",
                                                    "e"), "0")
    with pytest.raises(FsxltError, match="empty after tokenization"):
        encode_choice_pattern(Featurizer(start.tokenizer, task), task.pet, [example])
