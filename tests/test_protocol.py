"""The adapting protocol: mini-batches, patience from the first improvement, defaults kept.

The study's protocol (one Adam step per epoch on the whole bucket, patience
counted from epoch 1) stays the default, with the identities and record
hashes it always had; ``batch_size`` and ``patience_from`` change it for an
arm such as FewCLUE's fine-tuning baseline. Tiny models only.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

import fsxlt.training.adapt as adapt_module
import fsxlt.training.steps as steps_module
from fsxlt.cli import run_app
from fsxlt.errors import FsxltError
from fsxlt.execution import adapt_plan, expand, load_config, parse_config
from fsxlt.training import AdaptEngine, strip_timings
from fsxlt.training.loop import config_hash
from tests.fewclue_fixtures import FEWCLUE_VOCAB, TRAIN_SIZE, write_fewclue
from tests.train_fixtures import (
    as_written_by_0_4,
    make_encoder_dir,
    nli_data,
    write_bucket_set,
    write_pairs,
)

REPO = Path(__file__).resolve().parents[1]
NLI = ["entailment", "neutral", "contradiction"]
# The identity hashes of the two runs of adapt_runs() with the study's protocol: no
# protocol option may change them. fsxlt 0.5.0 identifies a hub start by the commit it
# loads (tests/conftest.py's HUB_COMMIT here), so they are these since; with the start as
# 0.4 named it ("pretrained:<name>") they are still the hashes computed before adapting
# had protocol options (BEFORE_05): nothing else of the identity changed.
DEFAULT_HASHES = ["run:03de8d2779726e19", "run:b0dea1cad91bdee7"]
BEFORE_05 = ["run:3cf0a01b8ba97ebb", "run:6229234af6a1d3fa"]
# what a record's protocol block says of the study's optimizer and tagging loss
STUDY_TRAINING = {"optimizer": {"name": "adam", "weight_decay": 0.0, "warmup": 0.0,
                                "schedule": "constant"}, "label_all_tokens": False}


def adapt_runs(tmp_path: Path, **kwargs):
    """The RunSpecs of ``fsxlt adapt`` over a fixed two-bucket XNLI set (a pretrained
    encoder named, so nothing loads)."""
    data = nli_data(30, seed=1)
    # the pins' buckets are 0.2.0's, identified by their files' bytes as 0.2 to 0.4 did
    directory = as_written_by_0_4(write_bucket_set(
        tmp_path / "b", "xnli", "de", 4, [data[:4], data[4:8]], NLI), "0.2.0")
    dev = write_pairs(tmp_path / "dev.tsv", data[8:20])
    test = write_pairs(tmp_path / "test.tsv", data[20:30])
    return adapt_plan("xnli", "de", directory, tmp_path / "runs",
                      start="bert-base-multilingual-cased", dev=dev, test=test, lrs=[1e-4],
                      max_epochs=3, patience=2, **kwargs)


@pytest.fixture(scope="module")
def engine(tmp_path_factory) -> AdaptEngine:
    encoder = make_encoder_dir(tmp_path_factory.mktemp("enc") / "tiny")
    return AdaptEngine.from_start("xnli", "de", str(encoder), dev=nli_data(12, seed=3),
                                  test=nli_data(9, seed=4), device="cpu")


# --------------------------------------------------------------------------- defaults

def test_a_default_run_keeps_its_identity(tmp_path):
    from fsxlt.study.runs import identity_hash

    runs = adapt_runs(tmp_path)
    assert [r.config_hash for r in runs] == DEFAULT_HASHES
    named = [{**r.identity, "start": "pretrained:bert-base-multilingual-cased"} for r in runs]
    assert [identity_hash(identity) for identity in named] == BEFORE_05
    assert not {"batch_size", "patience_from"} & set(runs[0].identity)
    explicit = adapt_runs(tmp_path, batch_size=None, patience_from="start")
    assert [r.config_hash for r in explicit] == DEFAULT_HASHES


def test_a_changed_protocol_is_part_of_the_identity(tmp_path):
    mini = adapt_runs(tmp_path, batch_size=2)
    later = adapt_runs(tmp_path, patience_from="first-improvement")
    assert mini[0].identity["batch_size"] == 2 and "patience_from" not in mini[0].identity
    assert later[0].identity["patience_from"] == "first-improvement"
    hashes = {r.config_hash for r in mini + later}
    assert len(hashes) == 4 and not hashes & set(DEFAULT_HASHES)
    assert (mini[0].batch_size, later[0].patience_from) == (2, "first-improvement")


def test_a_default_record_keeps_its_config_hash_and_says_its_protocol(engine):
    bucket = nli_data(8, seed=1)
    record = engine.adapt(bucket, lrs=[1e-3], max_epochs=3, patience=2)
    old_config = {  # what the record's config_hash covered before protocols existed
        "task": "xnli", "labels": NLI, "metric": record["metric"], "language": "de",
        "method": record["method_info"], "lrs": [1e-3], "seed": record["seed"],
        "max_epochs": 3, "patience": 2, "select_start": False,
        "max_seq_length": record["max_seq_length"], "start": record["model"]["start"]["id"],
        "dev": record["data"]["dev"]["sha256"], "test": record["data"]["test"]["sha256"],
        "batch": "bucket", "optimizer": "adam",
    }
    assert record["config_hash"] == config_hash(old_config)
    assert record["protocol"] == {"batch_size": None, "steps_per_epoch": 1,
                                  "patience_from": "start", "long_sentences": "truncate",
                                  **STUDY_TRAINING}
    assert all(run["optimizer_steps"] == run["stopped_epoch"] for run in record["runs"])
    assert "patience_from_epoch" not in record["runs"][0]
    explicit = engine.adapt(bucket, lrs=[1e-3], max_epochs=3, patience=2, batch_size=None,
                            patience_from="start")
    assert strip_timings(explicit) == strip_timings(record)
    mini = engine.adapt(bucket, lrs=[1e-3], max_epochs=3, patience=2, batch_size=3)
    assert mini["config_hash"] != record["config_hash"]


# --------------------------------------------------------------------------- mini-batches

class StepCounter:
    """Wraps the engine's optimizer factory: counts Adam steps and each step's examples."""

    def __init__(self, monkeypatch):
        self.sizes: list[int] = []
        make, train = adapt_module.make_optimizer, steps_module.train_step
        self.steps = 0

        def counted_optimizer(model, lr, *settings):
            optimizer = make(model, lr, *settings)
            step = optimizer.step

            def counted_step(*args, **kwargs):
                self.steps += 1
                return step(*args, **kwargs)

            optimizer.step = counted_step
            return optimizer

        def sized_step(model, batches, optimizer, **kwargs):
            self.sizes.append(sum(int(b["labels"].numel()) for b in batches))
            return train(model, batches, optimizer, **kwargs)

        monkeypatch.setattr(adapt_module, "make_optimizer", counted_optimizer)
        monkeypatch.setattr(steps_module, "train_step", sized_step)


@pytest.mark.parametrize("method", ["full", "fc"])
def test_mini_batches_take_several_steps_per_epoch(engine, method, monkeypatch):
    counter = StepCounter(monkeypatch)
    record = engine.adapt(nli_data(10, seed=1), method=method, lrs=[1e-3], max_epochs=2,
                          patience=5, batch_size=4)
    run = record["runs"][0]
    assert run["stopped_epoch"] == 2
    assert counter.steps == run["optimizer_steps"] == 6  # ceil(10 / 4) = 3 per epoch
    assert counter.sizes == [4, 4, 2, 4, 4, 2]
    assert record["protocol"] == {"batch_size": 4, "steps_per_epoch": 3,
                                  "patience_from": "start", "long_sentences": "truncate",
                                  **STUDY_TRAINING}


def test_the_study_protocol_takes_one_step_per_epoch(engine, monkeypatch):
    counter = StepCounter(monkeypatch)
    record = engine.adapt(nli_data(10, seed=1), lrs=[1e-3], max_epochs=3, patience=5)
    assert counter.steps == 3 and counter.sizes == [10, 10, 10]
    assert record["runs"][0]["optimizer_steps"] == 3


def test_mini_batch_runs_repeat_exactly(engine):
    first = engine.adapt(nli_data(6, seed=1), lrs=[1e-3], max_epochs=2, batch_size=2)
    again = engine.adapt(nli_data(6, seed=1), lrs=[1e-3], max_epochs=2, batch_size=2)
    assert strip_timings(first) == strip_timings(again)


# --------------------------------------------------------------------------- patience

def scripted_dev(engine: AdaptEngine, monkeypatch, scores: list[float]) -> None:
    """Make the engine's dev scores ``scores``, epoch after epoch (the test set: 0.5)."""
    real = adapt_module.score
    left = list(scores)

    def fake(model, eval_set, task, **kwargs):
        if eval_set is not engine.dev:
            return real(model, eval_set, task, **kwargs)
        result = dict(real(model, eval_set, task, **kwargs))
        result["score"] = left.pop(0)
        return result

    monkeypatch.setattr(adapt_module, "score", fake)


FLAT_THEN_UP = [0.3, 0.3, 0.3, 0.3, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5]


def test_patience_from_the_start_stops_a_flat_start(engine, monkeypatch):
    scripted_dev(engine, monkeypatch, FLAT_THEN_UP)
    run = engine.adapt(nli_data(6, seed=1), method="fc", lrs=[1e-3], max_epochs=10,
                       patience=2)["runs"][0]
    assert (run["best_epoch"], run["stopped_epoch"]) == (1, 3)


def test_patience_from_the_first_improvement(engine, monkeypatch):
    scripted_dev(engine, monkeypatch, FLAT_THEN_UP)
    record = engine.adapt(nli_data(6, seed=1), method="fc", lrs=[1e-3], max_epochs=10,
                          patience=2, patience_from="first-improvement")
    run = record["runs"][0]
    assert (run["best_epoch"], run["stopped_epoch"], run["patience_from_epoch"]) == (5, 7, 5)
    assert record["best_epoch"] == 5 and record["dev_score"] == 0.5


def test_patience_from_the_first_improvement_that_never_comes(engine, monkeypatch):
    scripted_dev(engine, monkeypatch, [0.4, 0.3, 0.4, 0.2, 0.4, 0.4])
    run = engine.adapt(nli_data(6, seed=1), method="fc", lrs=[1e-3], max_epochs=6, patience=1,
                       patience_from="first-improvement")["runs"][0]
    assert (run["best_epoch"], run["stopped_epoch"], run["patience_from_epoch"]) == (1, 6, None)


def test_first_improvement_with_select_start_counts_from_epoch_zero(engine, monkeypatch):
    scripted_dev(engine, monkeypatch, [0.3, 0.3, 0.6, 0.6, 0.6, 0.6])
    run = engine.adapt(nli_data(6, seed=1), method="fc", lrs=[1e-3], max_epochs=5, patience=2,
                       select_start=True, patience_from="first-improvement")["runs"][0]
    assert (run["best_epoch"], run["stopped_epoch"], run["patience_from_epoch"]) == (2, 4, 2)


# --------------------------------------------------------------------------- bad values

def test_bad_protocol_values_in_the_api_are_errors(engine):
    for kwargs, says in (({"batch_size": 0}, "batch_size must be an integer >= 1"),
                         ({"batch_size": 2.5}, "batch_size must be an integer >= 1"),
                         ({"patience_from": "later"}, "patience_from must be one of")):
        with pytest.raises(FsxltError, match=says):
            engine.adapt(nli_data(4, seed=1), lrs=[1e-3], max_epochs=1, **kwargs)


def one_line(status: int, err: str, says: str) -> None:
    lines = [line for line in err.splitlines() if line.strip()]
    assert status != 0 and "Traceback" not in err, err
    assert len(lines) == 1 and says in lines[0], err


@pytest.mark.parametrize("flags, says", [
    (["--batch-size", "0"], "--batch-size must be at least 1"),
    (["--patience-from", "later"], "patience_from must be one of start, first-improvement"),
])
def test_bad_adapt_options_are_one_line(flags, says, tmp_path, capsys):
    data = nli_data(12, seed=1)
    directory = write_bucket_set(tmp_path / "b", "xnli", "de", 4, [data[:4]], NLI)
    dev = write_pairs(tmp_path / "dev.tsv", data[4:8])
    status = run_app(["adapt", "--task", "xnli", "--lang", "de", "--bucket", str(directory),
                      "--from", "bert-base-multilingual-cased", "--dev", str(dev), "--no-test",
                      "--out", str(tmp_path / "runs"), *flags])
    one_line(status, capsys.readouterr().err, says)
    assert not (tmp_path / "runs").exists()


# --------------------------------------------------------------------------- sweep configs

@pytest.fixture(scope="module")
def fewclue_store(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("fewclue")
    source = write_fewclue(root / "datasets", tasks=("eprstmt", "ocnli"))
    out = root / "buckets"
    assert run_app(["buckets", "import-fewclue", str(source), "--out", str(out),
                    "-t", "eprstmt", "-t", "ocnli"]) == 0
    return out


def fake_checkpoint(path: Path) -> Path:
    """A directory expand() takes for a source-trained start (its record and a config)."""
    path.mkdir(parents=True, exist_ok=True)
    (path / "fsxlt_checkpoint.json").write_text(json.dumps({"task": "xnli",
                                                            "source_languages": ["en"]}))
    (path / "config.json").write_text("{}")  # a checkpoint's, as fsxlt writes one
    return path


def two_arm_config(store: Path, tmp_path: Path, **extra) -> dict:
    return {"out": str(tmp_path / "runs"), "buckets": str(store), "methods": [],
            "n_buckets": 5, "lrs": [5e-5], "max_epochs": 30, "patience": 8,
            "no_source_training": {"encoder": "some-encoder", "methods": ["full"],
                                   "lrs": [2e-5], "batch_size": 8,
                                   "patience_from": "first-improvement"},
            "tasks": {"eprstmt": {"k": [TRAIN_SIZE]},
                      "ocnli": {"methods": ["full"], "k": [TRAIN_SIZE],
                                "start": str(fake_checkpoint(tmp_path / "ckpt"))}},
            **extra}


def test_the_no_source_arm_has_its_protocol_and_the_fsxlt_arm_the_study_s(
        fewclue_store, tmp_path):
    plan = expand(parse_config(two_arm_config(fewclue_store, tmp_path)))
    by_arm: dict[str, set] = {}
    for run in plan.runs:
        by_arm.setdefault(f"{run.task}/{run.arm}", set()).add(
            (run.batch_size, run.patience_from, run.lrs, run.max_epochs))
    assert by_arm == {
        "eprstmt/full-nosource": {(8, "first-improvement", (2e-5,), 30)},
        "ocnli/full-nosource": {(8, "first-improvement", (2e-5,), 30)},
        "ocnli/full": {(None, "start", (5e-5,), 30)},
    }
    study_arm = [r for r in plan.runs if r.arm == "full"]
    assert len(study_arm) == 5 and all(
        not {"batch_size", "patience_from"} & set(r.identity) for r in study_arm)
    nosource = [r for r in plan.runs if r.arm == "full-nosource"][0]
    assert nosource.identity["batch_size"] == 8
    assert nosource.identity["patience_from"] == "first-improvement"


def test_top_level_and_per_task_protocol_keys(fewclue_store, tmp_path):
    config = two_arm_config(fewclue_store, tmp_path, batch_size=4)
    config["no_source_training"] = {"encoder": "some-encoder"}
    config["tasks"]["eprstmt"] = {"k": [TRAIN_SIZE], "batch_size": 2,
                                  "patience_from": "first-improvement"}
    plans = {p.task: p for p in parse_config(config).tasks}
    assert (plans["ocnli"].batch_size, plans["ocnli"].patience_from) == (4, "start")
    assert (plans["eprstmt"].batch_size, plans["eprstmt"].patience_from) == \
        (2, "first-improvement")
    runs = expand(parse_config(config)).runs
    assert {r.batch_size for r in runs if r.task == "ocnli"} == {4}
    overridden = parse_config(config, overrides={"max_epochs": 3})
    config["no_source_training"] = {"encoder": "e", "max_epochs": 40}
    assert {p.max_epochs for p in overridden.tasks} == {3}
    ns = parse_config(config, overrides={"max_epochs": 3}).tasks[0].no_source
    assert "max_epochs" not in ns["settings"]  # a command-line flag beats the arm's own


@pytest.mark.parametrize("change, says", [
    ({"batch_size": 0}, "batch_size must be >= 1, got 0"),
    ({"batch_size": "8"}, "batch_size must be an integer, got '8'"),
    ({"patience_from": "later"}, "patience_from must be one of start, first-improvement"),
    ({"tasks": {"eprstmt": {"k": [TRAIN_SIZE], "batch_size": 1.5}}},
     "batch_size must be an integer, got 1.5"),
    ({"no_source_training": {"encoder": "e", "batch": 8}},
     "unknown key(s) in no_source_training: batch"),
    ({"no_source_training": {"encoder": "e", "patience_from": "end"}},
     "no_source_training: patience_from must be one of"),
    ({"no_source_training": {"encoder": "e", "max_epochs": 0}},
     "no_source_training: max_epochs must be >= 1"),
])
def test_bad_protocol_keys_in_a_sweep_config_are_one_line(change, says, fewclue_store,
                                                          tmp_path, capsys):
    config = {"out": str(tmp_path / "runs"), "buckets": str(fewclue_store), "methods": [],
              "no_source_training": {"encoder": "e"}, "tasks": {"eprstmt": {"k": [TRAIN_SIZE]}}}
    config.update(change)
    path = tmp_path / "sweep.yaml"
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    status = run_app(["sweep", str(path), "--dry-run"])
    err = capsys.readouterr().err
    one_line(status, err, says)
    assert str(path) in err and not (tmp_path / "runs").exists()


def test_the_shipped_fewclue_config_gives_the_no_source_arm_fewclue_s_protocol():
    config = load_config(REPO / "configs" / "sweeps" / "fewclue.yaml")
    for plan in config.tasks:
        settings = plan.no_source["settings"]
        assert settings["batch_size"] == 8 and settings["patience_from"] == "first-improvement"
        assert settings["lrs"] == (2e-5,)
        assert (plan.batch_size, plan.patience_from) == (None, "start")  # the FS-XLT arm


# --------------------------------------------------------------------------- the CLI

def test_adapt_records_the_protocol_and_refuses_a_record_of_another(fewclue_store, tmp_path,
                                                                    capsys):
    encoder = make_encoder_dir(tmp_path / "tiny-zh", extra=FEWCLUE_VOCAB)
    bucket = fewclue_store / "eprstmt" / "zh" / f"k{TRAIN_SIZE}" / "00.json"
    argv = ["adapt", "--task", "eprstmt", "--lang", "zh", "--bucket", str(bucket), "--from",
            str(encoder), "--out", str(tmp_path / "runs"), "--lr", "1e-3", "--max-epochs", "2",
            "--max-seq-length", "32", "--device", "cpu"]
    mini = ["--batch-size", "3", "--patience-from", "first-improvement"]
    assert run_app([*argv, *mini]) == 0
    path = tmp_path / "runs" / "eprstmt" / "zh" / f"k{TRAIN_SIZE}" / "full-nosource" / "00.json"
    record = json.loads(path.read_text(encoding="utf-8"))
    assert record["protocol"] == {"batch_size": 3, "steps_per_epoch": 3,
                                  "patience_from": "first-improvement",
                                  "long_sentences": "truncate", **STUDY_TRAINING}
    assert record["run"]["identity"]["batch_size"] == 3
    assert record["runs"][0]["optimizer_steps"] == 3 * record["runs"][0]["stopped_epoch"]
    assert run_app([*argv, *mini]) == 0
    assert "already done" in capsys.readouterr().out
    status = run_app(argv)  # the study's protocol: another identity, refused
    one_line(status, capsys.readouterr().err, "differ")
