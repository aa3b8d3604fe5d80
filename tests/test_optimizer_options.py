"""The training-regime peer's optimizer (AdamW, weight decay, warm-up and linear decay) and
tagging loss (``label_all_tokens``) as options; the study's Adam and last-piece loss stay
the default, with the identities they always had. Tiny models only."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
import yaml
from transformers import get_constant_schedule_with_warmup, get_linear_schedule_with_warmup

import fsxlt.training.run_records as run_records
import fsxlt.training.source as source_module
import fsxlt.training.steps as steps_module
from fsxlt.cli import run_app
from fsxlt.data import TaggedSentence
from fsxlt.errors import FsxltError
from fsxlt.execution import adapt_plan, parse_config
from fsxlt.methods import get_method
from fsxlt.models.encoding import Featurizer
from fsxlt.tasks import get_task
from fsxlt.training import AdaptEngine, load_start, source_train
from fsxlt.training.optim import (
    PEER,
    OptimizerSettings,
    build_optimizer,
    decays,
    parse_optimizer,
)
from fsxlt.training.protocol import Protocol
from fsxlt.training.regimes import Regime
from fsxlt.training.transformers_adamw import TransformersAdamW
from tests.train_fixtures import (
    make_encoder_dir,
    ner_data,
    nli_data,
    write_bucket_set,
    write_conll,
    write_pairs,
)

NLI = ["entailment", "neutral", "contradiction"]
PANX = list(get_task("panx").labels)


@pytest.fixture(scope="module")
def encoder(tmp_path_factory) -> Path:
    return make_encoder_dir(tmp_path_factory.mktemp("enc") / "tiny")


@pytest.fixture(scope="module")
def nli_engine(encoder) -> AdaptEngine:
    return AdaptEngine.from_start("xnli", "de", str(encoder), dev=nli_data(6, seed=3),
                                  device="cpu")


@pytest.fixture(scope="module")
def ner_engine(encoder) -> AdaptEngine:
    return AdaptEngine.from_start("panx", "de", str(encoder), dev=ner_data(6, seed=3),
                                  device="cpu")


def reference_lrs(lr: float, total: int, settings: OptimizerSettings) -> list[float]:
    """The lr of each of ``total`` steps under transformers' own scheduler, stepped after
    every optimizer step; a fractional warm-up is passed unrounded, as the peer's trident
    passes it (trident/core/mixins/optimizer.py lines 74-77)."""
    optimizer = torch.optim.AdamW([torch.nn.Parameter(torch.zeros(1))], lr=lr)
    warmup = settings.warmup * total
    warmup = warmup if settings.fractional_warmup else round(warmup)
    scheduler = (get_linear_schedule_with_warmup(optimizer, warmup, total)
                 if settings.schedule == "linear"
                 else get_constant_schedule_with_warmup(optimizer, warmup))
    out = []
    for _ in range(total):
        out.append(optimizer.param_groups[0]["lr"])
        optimizer.step()
        scheduler.step()
    return out


def recording(monkeypatch, module, name: str = "train_step") -> list[float]:
    """The lr each optimizer step of ``module``'s ``name`` runs with, in order."""
    seen: list[float] = []
    step = getattr(module, name)

    def recorded(model, batches, optimizer, **kwargs):
        seen.append(optimizer.param_groups[0]["lr"])
        return step(model, batches, optimizer, **kwargs)

    monkeypatch.setattr(module, name, recorded)
    return seen


# --------------------------------------------------------------------------- the optimizer

def test_weight_decay_skips_biases_and_norms_of_every_spelling():
    for name in ("encoder.embeddings.word_embeddings.weight", "classifier.weight",
                 "encoder.encoder.layer.0.attention.self.query.weight",
                 "pooler.dense.weight", "encoder.layer.0.lora_A.weight"):
        assert decays(name), name
    for name in ("classifier.bias", "encoder.embeddings.LayerNorm.weight",
                 "encoder.encoder.layer.1.output.LayerNorm.bias",
                 "encoder.block.0.layer.0.layer_norm.weight", "encoder.final_layer_norm.weight",
                 "model.layernorm_embedding.weight", "layers.0.attn_norm.weight",
                 "encoder.embeddings.norm.weight"):
        assert not decays(name), name


def test_adamw_groups_hold_the_trainable_parameters_decayed_or_not(encoder):
    model = load_start(str(encoder), get_task("xnli"), seed=0).model
    for param in model.encoder.embeddings.parameters():
        param.requires_grad = False  # frozen: in no group
    names = {id(p): n for n, p in model.named_parameters()}
    optimizer = build_optimizer(model, 1e-3, PEER, total_steps=10)
    assert isinstance(optimizer, TransformersAdamW)
    torch_adamw = build_optimizer(model, 1e-3, OptimizerSettings("adamw", 0.05))
    assert isinstance(torch_adamw, torch.optim.AdamW)
    decayed, kept = ([names[id(p)] for p in group["params"]]
                     for group in optimizer.param_groups)
    assert [g["weight_decay"] for g in optimizer.param_groups] == [0.05, 0.0]
    assert "classifier.weight" in decayed and "pooler.dense.weight" in decayed
    assert "encoder.encoder.layer.0.attention.self.query.weight" in decayed
    assert "classifier.bias" in kept and "encoder.encoder.layer.0.output.LayerNorm.weight" in kept
    assert all("bias" in n or "LayerNorm" in n for n in kept)
    assert not any("bias" in n or "LayerNorm" in n for n in decayed)
    assert sorted(decayed + kept) == sorted(model.trainable_names())
    assert not any(n.startswith("encoder.embeddings.") for n in decayed + kept)


def test_the_default_is_the_study_s_adam_in_one_group(encoder):
    model = load_start(str(encoder), get_task("xnli"), seed=0).model
    optimizer = build_optimizer(model, 1e-3, OptimizerSettings())
    assert type(optimizer) is torch.optim.Adam and len(optimizer.param_groups) == 1
    assert optimizer.param_groups[0]["weight_decay"] == 0.0
    assert not optimizer._optimizer_step_post_hooks  # no schedule stepping


ROUNDED = OptimizerSettings("adamw", 0.05, 0.1, "linear")  # fsxlt 0.4's preset, rounded


@pytest.mark.parametrize("batch_size, max_epochs, settings", [
    (2, 4, ROUNDED),                                  # 3 steps per epoch, 12 in all
    (None, 6, ROUNDED),                               # the study's one step per epoch
    (2, 4, PEER),                                     # 1.2 warm-up steps, kept fractional
    (2, 3, OptimizerSettings("adam", 0.0, 0.25, "constant")),  # warm-up, then constant
])
def test_the_lr_of_every_adapt_step_follows_the_schedule(nli_engine, monkeypatch, batch_size,
                                                          max_epochs, settings):
    seen = recording(monkeypatch, steps_module)
    record = nli_engine.adapt(nli_data(5, seed=1), lrs=[1e-3], max_epochs=max_epochs,
                              patience=max_epochs, batch_size=batch_size, optimizer=settings)
    steps_per_epoch = record["protocol"]["steps_per_epoch"]
    assert record["runs"][0]["optimizer_steps"] == len(seen) == steps_per_epoch * max_epochs
    assert seen == pytest.approx(reference_lrs(1e-3, len(seen), settings), abs=1e-12)
    assert seen[0] == 0.0 and max(seen) <= 1e-3
    # a whole number of warm-up steps reaches the peak; 1.2 of 12 does not (0.9259e-3)
    assert (max(seen) == pytest.approx(1e-3)) != settings.fractional_warmup
    assert record["protocol"]["optimizer"] == settings.describe()


def test_a_joint_regime_s_schedule_spans_its_steps_per_epoch(nli_engine, monkeypatch):
    nli_engine.set_source(nli_data(20, seed=7))
    try:
        seen = recording(monkeypatch, steps_module)
        nli_engine.adapt(nli_data(5, seed=1), lrs=[1e-3], max_epochs=2, patience=2,
                         regime=Regime("joint", batch_size=4, steps_per_epoch=3),
                         optimizer=PEER)
    finally:
        nli_engine.set_source()
    assert len(seen) == 6
    assert seen == pytest.approx(reference_lrs(1e-3, 6, PEER), abs=1e-12)


def test_the_source_training_schedule_spans_epochs_times_batches(encoder, monkeypatch):
    seen = recording(monkeypatch, source_module)
    result = source_train("xnli", nli_data(10, seed=5), nli_data(4, seed=6),
                          model_name=str(encoder), lrs=[1e-3], epochs=2, batch_size=4,
                          device="cpu", optimizer=PEER)
    assert len(seen) == 6  # ceil(10 / 4) = 3 batches x 2 epochs
    assert seen == pytest.approx(reference_lrs(1e-3, 6, PEER), abs=1e-12)
    assert result.record["optimizer"] == PEER.describe()


# --------------------------------------------------------------------------- identities

def captured_configs(monkeypatch, module) -> list[dict]:
    configs: list[dict] = []
    real = module.config_hash
    monkeypatch.setattr(module, "config_hash", lambda c: configs.append(c) or real(c))
    return configs


def test_default_records_hash_no_optimizer_settings(nli_engine, ner_engine, monkeypatch):
    configs = captured_configs(monkeypatch, run_records)  # where records hash their config
    bucket = nli_data(4, seed=1)
    default = nli_engine.adapt(bucket, lrs=[1e-3], max_epochs=1)
    explicit = nli_engine.adapt(bucket, lrs=[1e-3], max_epochs=1, optimizer=OptimizerSettings(),
                                label_all_tokens=False)
    peer = nli_engine.adapt(bucket, lrs=[1e-3], max_epochs=1, optimizer=PEER)
    tagged = ner_engine.adapt(ner_data(4, seed=1), lrs=[1e-3], max_epochs=1,
                              label_all_tokens=True)
    assert "protocol" not in configs[0] and configs[0]["optimizer"] == "adam"
    assert configs[1] == configs[0] and explicit["config_hash"] == default["config_hash"]
    assert configs[2]["protocol"] == {"optimizer": PEER.describe()}
    assert configs[3]["protocol"] == {"label_all_tokens": True}
    assert peer["config_hash"] != default["config_hash"]
    assert default["protocol"]["optimizer"] == OptimizerSettings().describe()
    assert tagged["protocol"]["label_all_tokens"] is True
    assert Protocol().changes() == {} and Protocol(optimizer=OptimizerSettings()).is_default


def test_default_source_records_hash_no_optimizer_settings(encoder, monkeypatch):
    configs = captured_configs(monkeypatch, source_module)
    data = ner_data(6, seed=5)
    kwargs = {"model_name": str(encoder), "lrs": [1e-3], "epochs": 1, "device": "cpu"}
    default = source_train("panx", data, ner_data(3, seed=6), **kwargs)
    peer = source_train("panx", data, ner_data(3, seed=6), optimizer=PEER,
                        label_all_tokens=True, **kwargs)
    assert "optimizer" not in configs[0] and "label_all_tokens" not in configs[0]
    assert configs[-1]["optimizer"] == PEER.describe() and configs[-1]["label_all_tokens"]
    assert default.record["optimizer"] == OptimizerSettings().describe()
    assert default.record["label_all_tokens"] is False
    assert peer.record["label_all_tokens"] is True
    assert peer.record["config_hash"] != default.record["config_hash"]


def plan_runs(tmp_path: Path, task: str = "xnli", **kwargs):
    """``fsxlt adapt``'s runs over a one-bucket set (a hub name as start: nothing loads)."""
    if task == "xnli":
        data = nli_data(12, seed=1)
        directory = write_bucket_set(tmp_path / "b", task, "de", 4, [data[:4]], NLI)
        dev = write_pairs(tmp_path / "dev.tsv", data[4:])
    else:
        data = ner_data(8, seed=1)
        directory = write_bucket_set(tmp_path / "b", task, "de", 1, [data[:2]], PANX)
        dev = write_conll(tmp_path / "dev.tsv", data[2:])
    return adapt_plan(task, "de", directory, tmp_path / "runs",
                      start="bert-base-multilingual-cased", dev=dev, no_test=True, lrs=[1e-4],
                      **kwargs)


def test_the_sweep_identity_holds_the_settings_only_when_not_default(tmp_path):
    default = plan_runs(tmp_path)[0]
    explicit = plan_runs(tmp_path, optimizer=OptimizerSettings(), label_all_tokens=False)[0]
    peer = plan_runs(tmp_path, optimizer=PEER)[0]
    tagged = plan_runs(tmp_path, "panx", label_all_tokens=True)[0]
    assert "optimizer" not in default.identity and "label_all_tokens" not in default.identity
    assert explicit.config_hash == default.config_hash
    assert peer.identity["optimizer"] == PEER.describe()
    assert peer.config_hash != default.config_hash and peer.load_optimizer() == PEER
    assert default.load_optimizer() == OptimizerSettings()
    assert tagged.identity["label_all_tokens"] is True and tagged.label_all_tokens


def test_sweep_configs_read_the_settings_per_task_and_arm(tmp_path):
    config = {"out": str(tmp_path / "runs"), "methods": [],
              "optimizer": {"name": "transformers-adamw", "weight_decay": 0.05,
                            "warmup": 0.1, "schedule": "linear", "fractional_warmup": True},
              "no_source_training": {"encoder": "e", "optimizer": None,
                                     "label_all_tokens": False},
              "tasks": {"panx": {"languages": ["de"], "label_all_tokens": True},
                        "xnli": {"languages": ["de"], "optimizer": None}}}
    plans = {plan.task: plan for plan in parse_config(config).tasks}
    assert plans["panx"].optimizer == PEER and plans["panx"].label_all_tokens
    assert plans["xnli"].optimizer is None  # a task's null: the study's Adam
    assert plans["panx"].no_source["settings"] == {"label_all_tokens": False}
    config["optimizer"] = {"name": "adam"}  # the study's: no settings to carry
    assert parse_config(config).tasks[0].optimizer is None


# --------------------------------------------------------------------------- label_all_tokens

def test_label_all_tokens_rows_score_every_piece(encoder):
    task = get_task("panx")
    featurizer = Featurizer(load_start(str(encoder), task, seed=0).tokenizer, task)
    sentence = TaggedSentence("s", ("john", "unbelievable", "paris"), ("B-PER", "O", "B-LOC"))
    pieces = featurizer.tokenizer(["unbelievable"], is_split_into_words=True,
                                  add_special_tokens=False)["input_ids"]
    assert len(pieces) == 3  # un ##believ ##able
    ids = [PANX.index(tag) for tag in ("B-PER", "O", "O", "O", "B-LOC")]
    last = featurizer.training_rows([sentence]).rows[0]
    every = featurizer.training_rows([sentence], label_all_tokens=True).rows[0]
    assert (last.positions, last.words) == ([1, 4, 5], [0, 1, 2])
    assert last.labels == [ids[0], ids[1], ids[4]]
    assert (every.positions, every.words, every.labels) == ([1, 2, 3, 4, 5], [0, 1, 1, 1, 2],
                                                            ids)
    assert every.input_ids == last.input_ids
    scored = featurizer.encode([sentence], windows=True).rows[0]  # dev/test: last pieces
    assert scored.positions == last.positions


def test_label_all_tokens_in_windows(encoder):
    task = get_task("panx")
    featurizer = Featurizer(load_start(str(encoder), task, seed=0).tokenizer, task,
                            max_seq_length=5)  # 3 pieces per window
    sentence = TaggedSentence("s", ("john", "unbelievable", "paris"), ("B-PER", "O", "B-LOC"))
    rows = featurizer.training_rows([sentence], "windows", label_all_tokens=True).rows
    assert [(r.positions, r.words) for r in rows] == [([1], [0]), ([1, 2, 3], [1, 1, 1]),
                                                      ([1], [2])]


def test_an_adapt_step_scores_every_piece(ner_engine, monkeypatch):
    sizes: list[int] = []
    step = steps_module.train_step

    def sized(model, batches, optimizer, **kwargs):
        sizes.append(sum(int(b["labels"].numel()) for b in batches))
        return step(model, batches, optimizer, **kwargs)

    monkeypatch.setattr(steps_module, "train_step", sized)
    bucket = ner_data(4, seed=2)
    featurizer = ner_engine.featurizer
    pieces = sum(len(r.positions) for r in featurizer.training_rows(bucket, "truncate", True).rows)
    words = sum(len(r.positions) for r in featurizer.training_rows(bucket).rows)
    assert pieces > words  # "unbelievable" is three pieces
    record = ner_engine.adapt(bucket, lrs=[1e-3], max_epochs=1, label_all_tokens=True)
    ner_engine.adapt(bucket, lrs=[1e-3], max_epochs=1)
    assert sizes == [pieces, words]
    assert 0 <= record["dev_score"] <= 1


def test_a_joint_regime_s_source_rows_take_the_setting(ner_engine):
    ner_engine.set_source(ner_data(6, seed=8))
    try:
        method = get_method("full", "tagging")
        every = ner_engine._source_train_rows(method, "truncate", True)
        last = ner_engine._source_train_rows(method, "truncate")
    finally:
        ner_engine.set_source()
    assert sum(len(r.positions) for r in every) > sum(len(r.positions) for r in last)
    assert all(len(r.labels) == len(r.positions) == len(r.words) for r in every)


def test_a_joint_run_scores_every_piece_of_the_source_rows(ner_engine, monkeypatch):
    sizes: list[int] = []
    step = steps_module.train_step

    def sized(model, batches, optimizer, **kwargs):
        sizes.append(sum(int(b["labels"].numel()) for b in batches))
        return step(model, batches, optimizer, **kwargs)

    monkeypatch.setattr(steps_module, "train_step", sized)
    source = ner_data(4, seed=8)
    ner_engine.set_source(source)
    try:
        ner_engine.adapt(ner_data(2, seed=2), lrs=[1e-3], max_epochs=1, label_all_tokens=True,
                         regime=Regime("joint", batch_size=6, steps_per_epoch=1,
                                       target_repeat=1))
    finally:
        ner_engine.set_source()
    featurizer = ner_engine.featurizer
    every = [*source, *ner_data(2, seed=2)]
    assert sizes == [sum(len(r.positions)
                         for r in featurizer.training_rows(every, "truncate", True).rows)]


# --------------------------------------------------------------------------- bad values

def test_bad_values_in_the_api_are_errors(nli_engine):
    with pytest.raises(FsxltError, match="label_all_tokens labels every wordpiece"):
        nli_engine.adapt(nli_data(4, seed=1), lrs=[1e-3], max_epochs=1, label_all_tokens=True)
    for kwargs, says in (({"name": "sgd"}, "optimizer must be one of adam, adamw"),
                         ({"weight_decay": -0.1}, "weight_decay must be a number >= 0"),
                         ({"warmup": 1.0}, r"warmup must be a fraction .* \[0, 1\)"),
                         ({"schedule": "cosine"}, "schedule must be one of constant, linear")):
        with pytest.raises(FsxltError, match=says):
            OptimizerSettings(**kwargs)
    with pytest.raises(FsxltError, match="unknown optimizer setting"):
        parse_optimizer({"lr": 1e-3}, "cfg")


def one_line(status: int, err: str, says: str) -> None:
    lines = [line for line in err.splitlines() if line.strip()]
    assert status == 2 and "Traceback" not in err, err
    assert len(lines) == 1 and says in lines[0], err


@pytest.mark.parametrize("flags, says", [
    (["--optimizer", "sgd"],
     "--optimizer must be one of adam, adamw, transformers-adamw, got 'sgd'"),
    (["--weight-decay=-1"], "--weight-decay must be >= 0, got -1"),  # every numeric flag
    (["--warmup", "1"], "--warmup must be a fraction of the training steps in [0, 1)"),
    (["--schedule", "cosine"], "--schedule must be one of constant, linear"),
    (["--label-all-tokens"], "--label-all-tokens labels every wordpiece of a word (tagging); "
                             "xnli is classification"),
])
@pytest.mark.parametrize("command", ["adapt", "source-train"])
def test_bad_flags_are_one_line(command, flags, says, tmp_path, capsys):
    if command == "adapt":
        argv = ["adapt", "--task", "xnli", "--lang", "de", "--bucket", str(tmp_path / "b"),
                "--from", "bert-base-multilingual-cased", "--no-test"]
    else:
        argv = ["source-train", "--task", "xnli", "--train", str(tmp_path / "train.tsv")]
    status = run_app([*argv, "--out", str(tmp_path / "out"), *flags])
    one_line(status, capsys.readouterr().err, says)
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("change, says", [
    ({"optimizer": {"name": "sgd"}}, "optimizer.name must be one of adam, adamw"),
    ({"optimizer": "adamw"}, "optimizer must be a mapping"),
    ({"optimizer": {"lr": 1}}, "unknown optimizer setting(s) lr"),
    ({"optimizer": {"warmup": -0.1}}, "optimizer.warmup must be a fraction"),
    ({"tasks": {"xnli": {"languages": ["de"], "optimizer": {"weight_decay": "x"}}}},
     "optimizer.weight_decay must be a number >= 0"),
    ({"label_all_tokens": True}, "label_all_tokens labels every wordpiece"),
    ({"label_all_tokens": "yes"}, "label_all_tokens must be true or false"),
    ({"no_source_training": {"encoder": "e", "optimizer": {"schedule": "cosine"}}},
     "no_source_training: optimizer.schedule must be one of constant, linear"),
])
def test_bad_sweep_keys_are_one_line(change, says, tmp_path, capsys):
    config = {"out": str(tmp_path / "runs"), "methods": [],
              "no_source_training": {"encoder": "e"},
              "tasks": {"xnli": {"languages": ["de"]}}}
    config.update(change)
    path = tmp_path / "sweep.yaml"
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    status = run_app(["sweep", str(path), "--dry-run"])
    err = capsys.readouterr().err
    one_line(status, err, says)
    assert str(path) in err


# --------------------------------------------------------------------------- the command line

def test_adapt_runs_and_records_the_peer_s_settings(encoder, tmp_path):
    data = ner_data(8, seed=1)
    directory = write_bucket_set(tmp_path / "b", "panx", "de", 1, [data[:2]], PANX)
    dev = write_conll(tmp_path / "dev.tsv", data[2:])
    status = run_app(["adapt", "--task", "panx", "--lang", "de", "--bucket", str(directory),
                      "--from", str(encoder), "--dev", str(dev), "--no-test", "--lr", "1e-3",
                      "--max-epochs", "2", "--device", "cpu", "--out", str(tmp_path / "runs"),
                      "--optimizer", "transformers-adamw", "--weight-decay", "0.05",
                      "--warmup", "0.1", "--fractional-warmup", "--schedule", "linear",
                      "--label-all-tokens"])
    assert status == 0
    record = json.loads(next((tmp_path / "runs").rglob("00.json")).read_text(encoding="utf-8"))
    assert record["protocol"]["optimizer"] == PEER.describe()
    assert record["protocol"]["label_all_tokens"] is True
    assert record["run"]["identity"]["optimizer"] == PEER.describe()
    assert record["run"]["identity"]["label_all_tokens"] is True
