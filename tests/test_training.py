"""Source-training, the adapt engine and the CLI on a tiny config-built BERT."""

from __future__ import annotations

import json

import pytest
import torch

from fsxlt.cli import run_app
from fsxlt.training import AdaptEngine, load_start, save_checkpoint, source_train, strip_timings
from fsxlt.training import adapt as adapt_module
from fsxlt.training.starts import evaluate_checkpoint
from tests.train_fixtures import (
    HEAD_ONLY_TRAINABLE,
    make_encoder_dir,
    ner_data,
    nli_data,
    read_first_bucket,
    write_bucket_set,
    write_conll,
    write_pairs,
)


@pytest.fixture(scope="module")
def encoder_dir(tmp_path_factory):
    return make_encoder_dir(tmp_path_factory.mktemp("tiny-bert"))


@pytest.fixture(scope="module")
def xnli_source(encoder_dir, tmp_path_factory):
    """A tiny source-trained XNLI checkpoint (2 lrs x 2 epochs) and its record."""
    out = tmp_path_factory.mktemp("ckpt") / "xnli"
    result = source_train("xnli", nli_data(48, seed=1), nli_data(12, seed=2),
                          model_name=str(encoder_dir),
                          target_dev={"de": nli_data(12, seed=3)},
                          target_test={"de": nli_data(15, seed=4)},
                          lrs=[1e-3, 3e-4], epochs=2, batch_size=16, seed=5,
                          checkpoint_test_scores=True, device="cpu")
    save_checkpoint(out, result.model, result.tokenizer, result.record)
    return out, result


def xnli_engine(checkpoint, **kwargs) -> AdaptEngine:
    return AdaptEngine.from_start("xnli", "de", str(checkpoint), dev=nli_data(12, seed=3),
                                  test=nli_data(15, seed=4), device="cpu", **kwargs)


# --------------------------------------------------------------------------- source-training

def test_source_train_records_every_checkpoint_and_selects_by_english_dev(xnli_source):
    out, result = xnli_source
    record = result.record
    assert [(c["lr"], c["epoch"]) for c in record["checkpoints"]] == [
        (1e-3, 1), (1e-3, 2), (3e-4, 1), (3e-4, 2)]
    assert all(set(c["dev"]) == {"en", "de"} and "de" in c["test"]
               for c in record["checkpoints"])
    best = max(record["checkpoints"], key=lambda c: c["dev"]["en"])
    assert (record["selection"]["lr"], record["selection"]["epoch"]) == (best["lr"],
                                                                          best["epoch"])
    assert record["selection"]["protocol"] == "english-dev"
    assert record["english_dev"]["score"] == pytest.approx(best["dev"]["en"])
    oracle = max(record["checkpoints"], key=lambda c: c["dev"]["de"])
    assert record["oracle"]["de"]["test_score"] == oracle["test"]["de"]
    assert set(record["zero_shot"]) == {"de"}
    assert record["lr_results"][0]["lr"] == 1e-3
    assert set(record["versions"]) == {"fsxlt", "fsxlt_code", "python", "torch", "transformers"}


def test_saved_checkpoint_reloads_to_the_same_model(xnli_source):
    out, result = xnli_source
    assert {p.name for p in out.iterdir()} >= {"config.json", "model.safetensors",
                                               "fsxlt_head.safetensors",
                                               "fsxlt_checkpoint.json", "tokenizer.json"}
    reloaded = load_start(out, "xnli")
    assert not reloaded.fresh_head and reloaded.info["kind"] == "source-trained"
    for name, tensor in result.model.state_dict().items():
        assert torch.equal(tensor, reloaded.model.state_dict()[name]), name
    scores = evaluate_checkpoint(str(out), "xnli", nli_data(15, seed=4), device="cpu")
    assert scores["score"] == pytest.approx(result.record["zero_shot"]["de"]["score"])


def test_checkpoint_for_another_task_is_refused(xnli_source):
    from fsxlt.errors import FsxltError

    with pytest.raises(FsxltError, match="do not match"):
        load_start(xnli_source[0], "pawsx")


# --------------------------------------------------------------------------- adapting

@pytest.mark.parametrize("method", sorted(HEAD_ONLY_TRAINABLE))
def test_head_only_methods_touch_only_their_parameters(xnli_source, method):
    engine = xnli_engine(xnli_source[0])
    bucket = nli_data(6, seed=9)
    record = engine.adapt(bucket, method=method, lrs=[5e-2], seed=1, max_epochs=3, patience=3)
    model = engine.model
    assert set(model.trainable_names()) == HEAD_ONLY_TRAINABLE[method]
    state = model.state_dict()
    for name, tensor in state.items():
        if name in HEAD_ONLY_TRAINABLE[method]:
            continue
        assert torch.equal(tensor, engine.start_state[name]), f"{method} changed {name}"
    changed = [n for n in HEAD_ONLY_TRAINABLE[method]
               if state[n].shape != engine.start_state[n].shape
               or not torch.equal(state[n], engine.start_state[n])]
    assert set(changed) == HEAD_ONLY_TRAINABLE[method]
    assert record["runs"][0]["n_trainable_parameters"] == sum(
        state[n].numel() for n in HEAD_ONLY_TRAINABLE[method])


def test_full_fine_tuning_trains_the_encoder(xnli_source):
    engine = xnli_engine(xnli_source[0])
    engine.adapt(nli_data(6, seed=9), method="full", lrs=[1e-2], seed=1, max_epochs=2,
                 patience=2)
    name = "encoder.embeddings.word_embeddings.weight"
    assert not torch.equal(engine.model.state_dict()[name], engine.start_state[name])
    assert set(engine.model.trainable_names()) == {n for n, _ in
                                                    engine.model.named_parameters()}


def test_early_stopping_on_a_scripted_dev_curve(xnli_source, monkeypatch):
    engine = xnli_engine(xnli_source[0])
    curve = [0.1, 0.3, 0.6, 0.5, 0.6, 0.2] + [0.55] * 60  # best at epoch 3; 0.6 again is no gain
    seen: list[torch.Tensor] = []
    at_test: list[torch.Tensor] = []

    def scripted(model, eval_set, task, precision="auto"):
        weights = model.classifier.weight.detach().clone()
        if eval_set is engine.dev:
            seen.append(weights)
            value = curve[len(seen) - 1]
        else:
            at_test.append(weights)
            value = 0.0
        return {"metric": "accuracy", "score": value, "accuracy": value}

    monkeypatch.setattr(adapt_module, "score", scripted)
    record = engine.adapt(nli_data(6, seed=9), method="fc", lrs=[1e-2], seed=1)
    run = record["runs"][0]
    assert record["max_epochs"] == 50 and record["patience"] == 10  # the task's defaults
    assert run["best_epoch"] == record["best_epoch"] == 3
    assert run["stopped_epoch"] == 13 == len(run["epochs"]) == len(seen)
    assert [e["dev_score"] for e in run["epochs"]] == curve[:13]
    assert torch.equal(at_test[0], seen[2])  # the test set saw epoch 3's weights
    assert not torch.equal(seen[2], seen[-1])
    assert record["dev_score"] == 0.6


def test_one_optimizer_step_per_epoch(xnli_source, monkeypatch):
    engine = xnli_engine(xnli_source[0], micro_batch=2)  # 3 micro-batches, still one step
    steps = []
    original = torch.optim.Adam.step

    def counting(self, *args, **kwargs):
        steps.append(1)
        return original(self, *args, **kwargs)

    monkeypatch.setattr(torch.optim.Adam, "step", counting)
    record = engine.adapt(nli_data(6, seed=9), method="full", lrs=[1e-3, 1e-4], seed=1,
                          max_epochs=4, patience=2)
    assert len(steps) == sum(r["stopped_epoch"] for r in record["runs"])
    assert all(len(r["epochs"]) == r["stopped_epoch"] for r in record["runs"])


def test_lr_grid_keeps_the_best_dev_lr(xnli_source):
    engine = xnli_engine(xnli_source[0])
    record = engine.adapt(nli_data(6, seed=9), method="fc-pooler", lrs=[1e-1, 1e-6], seed=1,
                          max_epochs=3, patience=2)
    assert [r["lr"] for r in record["runs"]] == [1e-1, 1e-6]
    best = max(record["runs"], key=lambda r: r["dev"]["score"])  # first on ties
    assert record["selected_lr"] == best["lr"]
    assert record["dev_score"] == best["dev"]["score"]
    assert record["test"]["n"] == 15


def test_identical_runs_give_identical_records(xnli_source):
    bucket = nli_data(6, seed=9)
    first = xnli_engine(xnli_source[0]).adapt(bucket, method="full", lrs=[1e-3, 3e-4],
                                              seed=7, max_epochs=4, patience=2)
    engine = xnli_engine(xnli_source[0])
    engine.adapt(nli_data(6, seed=10), method="cos-pooler", lrs=[1e-2], seed=3, max_epochs=2)
    second = engine.adapt(bucket, method="full", lrs=[1e-3, 3e-4], seed=7, max_epochs=4,
                          patience=2)
    assert strip_timings(first) == strip_timings(second)
    assert "wall_time_s" in first and "wall_time_s" in first["runs"][0]
    json.dumps(first)  # a record is plain JSON


def test_record_has_the_provenance_fields(xnli_source, tmp_path):
    directory = write_bucket_set(tmp_path, "xnli", "de", 2, [nli_data(6, seed=9)],
                                 ["entailment", "neutral", "contradiction"])
    bucket = read_first_bucket(directory)
    record = xnli_engine(xnli_source[0]).adapt(bucket, method="fc", lrs=[1e-3], seed=1,
                                               max_epochs=2, patience=1)
    for key in ("task", "language", "k", "bucket", "method", "lrs", "seed", "model", "runs",
                "best_epoch", "dev", "test", "wall_time_s", "versions", "config_hash"):
        assert key in record
    assert record["k"] == 2 and record["bucket"]["id"] == "xnli/de/k2/00"
    assert record["bucket"]["sha256"] == bucket.sha256
    assert record["model"]["source_training"] is True
    assert record["model"]["start"]["id"].startswith("checkpoint:")  # by content
    assert {"train_loss", "dev_score", "epoch"} == set(record["runs"][0]["epochs"][0])


def test_no_source_training_ablation_starts_from_a_fresh_head(encoder_dir):
    engine = AdaptEngine.from_start("panx", "de", str(encoder_dir), dev=ner_data(10, seed=3),
                                    test=ner_data(10, seed=4), device="cpu")
    bucket = ner_data(4, seed=9)
    a = engine.adapt(bucket, method="full", lrs=[1e-3], seed=1, max_epochs=2, patience=2)
    assert a["model"]["source_training"] is False
    assert a["model"]["start"]["kind"] == "pretrained"
    engine._reset("full", seed=1)
    head_1 = engine.model.classifier.weight.detach().clone()
    engine._reset("full", seed=2)
    assert not torch.equal(head_1, engine.model.classifier.weight)
    assert a["test"]["n_words"] == sum(len(s.tokens) for s in ner_data(10, seed=4))


# --------------------------------------------------------------------------- the CLI

@pytest.fixture()
def ner_files(tmp_path):
    data = tmp_path / "data"
    write_conll(data / "train-en.tsv", ner_data(40, seed=1))
    write_conll(data / "dev-en.tsv", ner_data(10, seed=2))
    write_conll(data / "dev-de.tsv", ner_data(10, seed=3))
    write_conll(data / "test-de.tsv", ner_data(12, seed=4))
    buckets = write_bucket_set(tmp_path / "buckets", "panx", "de", 1,
                               [ner_data(3, seed=5), ner_data(2, seed=6)], ["PER", "ORG", "LOC"])
    return data, buckets


def test_cli_source_train_adapt_evaluate(encoder_dir, ner_files, tmp_path, capsys):
    data, buckets = ner_files
    ckpt = tmp_path / "ckpt"
    assert run_app(["source-train", "--task", "panx", "--model", str(encoder_dir),
                    "--data-dir", str(data), "--target", "de", "--lr", "1e-3", "--epochs", "1",
                    "--out", str(ckpt), "--device", "cpu"]) == 0
    meta = json.loads((ckpt / "fsxlt_checkpoint.json").read_text())
    assert meta["task"] == "panx" and "de" in meta["zero_shot"]
    runs = tmp_path / "runs"
    assert run_app(["adapt", "--task", "panx", "--lang", "de", "--bucket", str(buckets),
                    "--from", str(ckpt), "--data-dir", str(data), "--out", str(runs),
                    "--method", "fc", "--lr", "1e-2", "--max-epochs", "3", "--patience", "2",
                    "--device", "cpu"]) == 0
    records = sorted((runs / "panx" / "de" / "k1" / "fc").glob("*.json"))
    assert [p.name for p in records] == ["00.json", "01.json"]
    record = json.loads(records[1].read_text())
    assert record["bucket"]["index"] == 1 and record["method"] == "fc"
    assert record["data"]["dev"]["source"].endswith("dev-de.tsv")
    capsys.readouterr()
    assert run_app(["evaluate", str(ckpt), "--task", "panx", "--lang", "de", "--split", "test",
                    "--data-dir", str(data), "--device", "cpu"]) == 0
    printed = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert printed["scores"]["score"] == pytest.approx(meta["zero_shot"]["de"]["score"])


def test_cli_uses_dev_remaining_for_tasks_sampled_from_dev(encoder_dir, tmp_path):
    buckets = write_bucket_set(tmp_path / "buckets", "xnli", "de", 1, [nli_data(3, seed=5)],
                               ["entailment", "neutral", "contradiction"],
                               dev_remaining=nli_data(9, seed=6))
    test = write_pairs(tmp_path / "test-de.tsv", nli_data(9, seed=7))
    runs = tmp_path / "runs"
    assert run_app(["adapt", "--task", "xnli", "--lang", "de", "--bucket",
                    str(buckets / "00.json"), "--from", str(encoder_dir), "--test", str(test),
                    "--out", str(runs), "--lr", "1e-3", "--max-epochs", "1",
                    "--device", "cpu"]) == 0
    record = json.loads((runs / "xnli" / "de" / "k1" / "full-nosource" / "00.json").read_text())
    assert record["data"]["dev"]["source"].endswith("dev-remaining.jsonl")
    assert record["data"]["dev"]["n"] == 9
    assert record["model"]["source_training"] is False


@pytest.mark.parametrize("args, message", [
    (["--method", "cos-pooler"], "tagging"),
    (["--method", "lora-x"], "unknown method"),
    (["--from", "/nonexistent/model"], "cannot load start /nonexistent/model: no such directory"),
])
def test_cli_errors_are_one_line_and_write_nothing(ner_files, tmp_path, capsys, args, message):
    data, buckets = ner_files
    runs = tmp_path / "runs"
    status = run_app(["adapt", "--task", "panx", "--lang", "de", "--bucket", str(buckets),
                      "--data-dir", str(data), "--out", str(runs), "--device", "cpu", *args])
    err = capsys.readouterr().err.strip()
    assert status == 2
    assert message in err and len(err.splitlines()) == 1 and "Traceback" not in err
    assert not runs.exists()


def test_cli_help_has_examples():
    from typer.testing import CliRunner

    from fsxlt.cli import app

    for command in ("source-train", "adapt", "evaluate"):
        result = CliRunner().invoke(app, [command, "--help"])
        assert result.exit_code == 0 and "Example" in result.output


def test_source_train_refuses_to_overwrite(encoder_dir, ner_files, tmp_path, capsys):
    data, _ = ner_files
    out = tmp_path / "ckpt"
    out.mkdir()
    (out / "keep.txt").write_text("x")
    assert run_app(["source-train", "--task", "panx", "--model", str(encoder_dir),
                    "--data-dir", str(data), "--out", str(out), "--epochs", "1"]) == 2
    assert "--overwrite" in capsys.readouterr().err
    assert [p.name for p in out.iterdir()] == ["keep.txt"]

