"""Joint source+target training and the candidates beside target-dev selection (engine side).

Tiny BERTs only. The sequential regime stays the study's (records unchanged);
the joint regimes train on the source rows and the bucket as their docstring
says; the candidates are the models they claim to be.
"""

from __future__ import annotations

import pytest
import torch

from fsxlt.errors import FsxltError
from fsxlt.training import AdaptEngine, strip_timings
from fsxlt.training.candidates import EpochKeeper, candidate_models
from fsxlt.training.loop import average_states, train_step, weighted_step
from fsxlt.training.regimes import JointMixer, Regime, parse_regime
from tests.train_fixtures import make_encoder_dir, ner_data, nli_data

LR = [1e-3]


@pytest.fixture(scope="module")
def encoder(tmp_path_factory):
    return str(make_encoder_dir(tmp_path_factory.mktemp("enc") / "tiny"))


@pytest.fixture
def engine(encoder) -> AdaptEngine:
    engine = AdaptEngine.from_start("xnli", "de", encoder, dev=nli_data(12, seed=3),
                                    test=nli_data(9, seed=4), device="cpu")
    engine.set_source(nli_data(40, seed=7, source="en"), nli_data(10, seed=8, source="en"),
                      train_source="train-en.tsv", dev_source="dev-en.tsv")
    return engine


def bucket():
    return nli_data(6, seed=1)


# --------------------------------------------------------------------------- sequential

def test_sequential_records_do_not_change_with_source_data(encoder):
    plain = AdaptEngine.from_start("xnli", "de", encoder, dev=nli_data(12, seed=3),
                                   test=nli_data(9, seed=4), device="cpu")
    before = plain.adapt(bucket(), lrs=LR, max_epochs=3, patience=2)
    plain.set_source(nli_data(40, seed=7), nli_data(10, seed=8))
    after = plain.adapt(bucket(), lrs=LR, max_epochs=3, patience=2, regime="sequential")
    assert strip_timings(before) == strip_timings(after)
    assert "regime" not in after and "candidates" not in after


def test_weighted_step_of_one_group_is_train_step(encoder):
    def fresh():
        engine = AdaptEngine.from_start("xnli", "de", encoder, dev=nli_data(4, seed=3),
                                        device="cpu")
        return engine.model, engine._bucket_batches(bucket())

    losses, states = [], []
    for step in ("plain", "weighted"):
        model, batches = fresh()
        torch.manual_seed(0)
        optimizer = torch.optim.Adam([p for p in model.parameters() if p.requires_grad], lr=1e-3)
        losses.append(train_step(model, batches, optimizer) if step == "plain"
                      else weighted_step(model, [(batches, 1.0)], optimizer))
        states.append({k: v.clone() for k, v in model.state_dict().items()})
    assert losses[0] == pytest.approx(losses[1], rel=1e-6)
    for name, tensor in states[0].items():
        assert torch.allclose(tensor, states[1][name], atol=1e-7), name


# --------------------------------------------------------------------------- the mixer

@pytest.mark.parametrize("seed", range(5))
def test_joint_mixer_batches(seed):
    source, target = list(range(100)), [f"t{i}" for i in range(3)]
    multi = JointMixer(Regime("joint", batch_size=8, steps_per_epoch=50, target_repeat=10),
                       source, target, seed)
    drawn = [row for step in multi.epoch() for group, weight in step for row in group]
    assert len(drawn) == 400 and all(w == 1.0 for step in multi.epoch() for _, w in step)
    # the pool (100 source + 30 bucket copies) is run through before it is reshuffled
    first_pass = drawn[:130]
    assert sorted(map(str, first_pass)) == sorted(map(str, source + target * 10))
    mixup = JointMixer(Regime("joint-concat", batch_size=8, steps_per_epoch=3), source, target,
                       seed)
    for step in mixup.epoch():
        assert len(step) == 1 and step[0][0][-3:] == target and len(step[0][0]) == 11
    macro = JointMixer(Regime("joint-macro", batch_size=8, steps_per_epoch=3), source, target,
                       seed)
    for step in macro.epoch():
        assert [w for _, w in step] == [0.5, 0.5] and step[1][0] == target
        assert all(isinstance(row, int) for row in step[0][0])
    again = JointMixer(Regime("joint-macro", batch_size=8, steps_per_epoch=3), source, target,
                       seed)
    assert list(again.epoch()) == list(JointMixer(
        Regime("joint-macro", batch_size=8, steps_per_epoch=3), source, target, seed).epoch())


def test_regime_options_are_checked():
    with pytest.raises(FsxltError, match="unknown regime 'jointly'"):
        parse_regime("jointly")
    with pytest.raises(FsxltError, match="steps_per_epoch must be an integer >= 1"):
        parse_regime("joint", {"steps_per_epoch": 0})
    with pytest.raises(FsxltError, match="unknown regime option"):
        parse_regime("joint", {"steps": 3})
    assert parse_regime("joint-macro", {"batch_size": 4}).changes() == {
        "name": "joint-macro", "batch_size": 4, "steps_per_epoch": 20}


# --------------------------------------------------------------------------- joint runs

@pytest.mark.parametrize("name", ["joint", "joint-concat", "joint-macro"])
def test_joint_runs_train_on_source_and_bucket(engine, name):
    regime = Regime(name, batch_size=4, steps_per_epoch=3, target_repeat=2)
    record = engine.adapt(bucket(), lrs=LR, max_epochs=2, patience=5, regime=regime)
    assert record["regime"]["name"] == name
    assert record["regime"]["source_train"]["source"] == "train-en.tsv"
    assert record["runs"][0]["optimizer_steps"] == 6
    again = engine.adapt(bucket(), lrs=LR, max_epochs=2, patience=5, regime=regime)
    assert strip_timings(record) == strip_timings(again)  # seeded: identical
    sequential = engine.adapt(bucket(), lrs=LR, max_epochs=2, patience=5)
    assert record["config_hash"] != sequential["config_hash"]
    assert record["runs"][0]["epochs"] != sequential["runs"][0]["epochs"]


def test_joint_source_rows_are_tokenized_once(engine, monkeypatch):
    calls = []
    original = engine.featurizer.encode

    def counting(examples, **kwargs):
        calls.append(len(examples))
        return original(examples, **kwargs)

    monkeypatch.setattr(engine.featurizer, "encode", counting)
    for _ in range(3):
        engine.adapt(bucket(), lrs=LR, max_epochs=1, patience=1, regime="joint-macro")
    assert calls.count(40) == 1  # the source set; the bucket (6) is encoded per run


def test_joint_regimes_work_for_tagging(encoder):
    engine = AdaptEngine.from_start("panx", "de", encoder, dev=ner_data(6, seed=3),
                                    test=ner_data(6, seed=4), device="cpu")
    engine.set_source(ner_data(20, seed=5))
    record = engine.adapt(ner_data(4, seed=1), lrs=LR, max_epochs=2, patience=2,
                          regime=Regime("joint-macro", batch_size=4, steps_per_epoch=2))
    assert record["regime"]["name"] == "joint-macro" and record["test_score"] is not None


def test_joint_needs_source_data_and_no_mini_batch_protocol(encoder):
    engine = AdaptEngine.from_start("xnli", "de", encoder, dev=nli_data(12, seed=3),
                                    device="cpu")
    with pytest.raises(FsxltError, match="regime joint trains on source data"):
        engine.adapt(bucket(), lrs=LR, max_epochs=1, regime="joint")
    engine.set_source(nli_data(10, seed=7))
    with pytest.raises(FsxltError, match="makes its own batches"):
        engine.adapt(bucket(), lrs=LR, max_epochs=1, regime="joint", batch_size=2)


# --------------------------------------------------------------------------- candidates

def test_average_of_states():
    a = {"w": torch.tensor([1.0, 2.0]), "ids": torch.tensor([1, 2])}
    b = {"w": torch.tensor([3.0, 6.0]), "ids": torch.tensor([5, 6])}
    mean = average_states([a, b])
    assert torch.equal(mean["w"], torch.tensor([2.0, 4.0]))
    assert torch.equal(mean["ids"], b["ids"])


def test_candidates_are_the_models_they_name(engine):
    record = engine.adapt(bucket(), lrs=[1e-3, 3e-4], max_epochs=4, patience=4,
                          average_last=2)
    models = {m["name"]: m for m in record["candidates"]["models"]}
    assert list(models) == ["target-dev", "source-dev", "last@0.001", "average-last-2@0.001",
                            "last@0.0003", "average-last-2@0.0003", "average-lrs"]
    target = models["target-dev"]
    assert (target["dev"], target["test"]) == (record["dev_score"], record["test_score"])
    assert models["last@0.001"]["epochs"] == [4]
    assert models["average-last-2@0.001"]["epochs"] == [3, 4]
    assert models["average-lrs"]["epochs"] == [4, 4] and models["average-lrs"]["lr"] is None
    last_dev = [e["dev_score"] for e in record["runs"][0]["epochs"]][-1]
    assert models["last@0.001"]["dev"] == pytest.approx(last_dev, abs=1e-9)
    plain = engine.adapt(bucket(), lrs=[1e-3, 3e-4], max_epochs=4, patience=4)
    assert plain["test_score"] == record["test_score"]  # keeping changes no selection
    assert plain["config_hash"] != record["config_hash"]


def test_average_last_one_is_the_last_epoch(engine):
    record = engine.adapt(bucket(), lrs=LR, max_epochs=3, patience=3, average_last=1)
    models = {m["rule"]: m for m in record["candidates"]["models"]}
    assert models["average-last"]["dev"] == models["last"]["dev"]
    assert models["average-last"]["test"] == models["last"]["test"]


def test_candidate_models_average_the_kept_states():
    keeper = EpochKeeper(2, None)
    model = torch.nn.Linear(2, 1)
    for epoch, value in enumerate([1.0, 2.0, 4.0], start=1):
        with torch.no_grad():
            model.weight.fill_(value)
        keeper.after_epoch(model, ["weight"], epoch)
    kept = keeper.finish(0.1)
    entries = dict((entry["rule"], state) for entry, state in candidate_models([kept], 2))
    assert torch.allclose(entries["average-last"]["weight"], torch.full((1, 2), 3.0))
    assert torch.allclose(entries["last"]["weight"], torch.full((1, 2), 4.0))


def test_bad_average_last(engine):
    for value in (0, -1, 1.5, True):
        with pytest.raises(FsxltError, match="average_last must be an integer >= 1"):
            engine.adapt(bucket(), lrs=LR, max_epochs=1, average_last=value)


def test_joint_regime_with_candidates(engine):
    record = engine.adapt(bucket(), lrs=LR, max_epochs=2, patience=2, average_last=2,
                          regime=Regime("joint", batch_size=4, steps_per_epoch=2))
    assert record["regime"]["name"] == "joint"
    assert {m["rule"] for m in record["candidates"]["models"]} == {
        "target-dev", "source-dev", "last", "average-last"}
    assert record["source_dev"]["source"] == "dev-en.tsv"
