"""Checkpoint averaging in source-training: candidates beside the selected checkpoint."""

from __future__ import annotations

import json

import pytest
import torch

from fsxlt.cli import run_app
from fsxlt.errors import FsxltError
from fsxlt.training import load_start, save_checkpoint, source_train
from fsxlt.training import source as source_module
from fsxlt.training.loop import average_states
from tests.train_fixtures import make_encoder_dir, ner_data, nli_data, write_conll

LRS = [1e-3, 3e-4]


@pytest.fixture(scope="module")
def encoder_dir(tmp_path_factory):
    return make_encoder_dir(tmp_path_factory.mktemp("tiny-bert"))


def train(encoder_dir, lrs, **kwargs):
    """A tiny XNLI source-training: 2 epochs, English dev, one target (de)."""
    return source_train("xnli", nli_data(24, seed=1), nli_data(9, seed=2),
                        model_name=str(encoder_dir), target_dev={"de": nli_data(9, seed=3)},
                        target_test={"de": nli_data(9, seed=4)}, lrs=lrs, epochs=2,
                        batch_size=8, seed=5, device="cpu", **kwargs)


@pytest.fixture(scope="module")
def runs(encoder_dir, tmp_path_factory):
    """Each lr alone (keeping its last epoch) and the grid keeping the mean of both."""
    out = tmp_path_factory.mktemp("ckpt") / "average-lrs"
    grid = train(encoder_dir, LRS, average_last=3, keep="average-lrs")
    save_checkpoint(out, grid.model, grid.tokenizer, grid.record)
    return {"first": train(encoder_dir, LRS[:1], average_last=1, keep="last"),
            "second": train(encoder_dir, LRS[1:], keep="last"),
            "grid": grid, "grid_dir": out}


def by_name(record) -> dict[str, dict]:
    return {m["name"]: m for m in record["candidates"]["models"]}


def weights(model) -> dict[str, torch.Tensor]:
    return {k: v.detach().clone() for k, v in model.state_dict().items()}


# --------------------------------------------------------------------------- average_states

def test_the_average_of_identical_states_is_the_state():
    state = {"w": torch.randn(3, 4), "h": torch.randn(5).half(),
             "position_ids": torch.arange(6)}
    mean = average_states([state, {k: v.clone() for k, v in state.items()}, state])
    assert set(mean) == set(state)
    for name, tensor in state.items():
        assert mean[name].dtype == tensor.dtype and torch.equal(mean[name], tensor)


def test_floats_are_averaged_and_integers_come_from_the_last_state():
    first = {"w": torch.tensor([1.0, 2.0]), "h": torch.tensor([1.0, 3.0]).half(),
             "ids": torch.tensor([0, 1]), "flag": torch.tensor([True])}
    second = {"w": torch.tensor([3.0, 6.0]), "h": torch.tensor([2.0, 4.0]).half(),
              "ids": torch.tensor([7, 8]), "flag": torch.tensor([False])}
    mean = average_states([first, second])
    assert torch.equal(mean["w"], torch.tensor([2.0, 4.0]))
    assert mean["h"].dtype == torch.float16 and torch.equal(mean["h"].float(),
                                                            torch.tensor([1.5, 3.5]))
    assert torch.equal(mean["ids"], second["ids"]) and torch.equal(mean["flag"], second["flag"])


@pytest.mark.parametrize(("states", "message"), [
    ([], "zero states"),
    ([{"a": torch.zeros(2)}, {"b": torch.zeros(2)}], "different weights"),
    ([{"a": torch.zeros(2)}, {"a": torch.zeros(3)}], "shapes"),
])
def test_states_that_cannot_be_averaged_are_one_error(states, message):
    with pytest.raises(FsxltError, match=message):
        average_states(states)


# --------------------------------------------------------------------------- candidates

def test_average_last_1_and_average_lrs_of_one_lr_equal_the_last_epoch(runs):
    record = runs["first"].record
    models = by_name(record)
    assert list(models) == ["english-dev", "last@0.001", "average-last-1@0.001", "average-lrs"]
    last = models["last@0.001"]
    for name in ("average-last-1@0.001", "average-lrs"):
        assert (models[name]["dev"], models[name]["test"]) == (last["dev"], last["test"])
    assert models["average-last-1@0.001"]["epochs"] == [2] and last["epochs"] == [2]
    assert record["candidates"]["average_last"] == 1
    assert record["selection"]["keep"] == "last" and record["selection"]["kept"] == "last@0.001"
    assert record["zero_shot"]["de"]["score"] == last["test"]["de"]


def test_the_grid_records_every_candidate_and_the_selected_one_first(runs):
    record = runs["grid"].record
    models = record["candidates"]["models"]
    assert [(m["name"], m["rule"], m["lr"], m["epochs"]) for m in models] == [
        ("english-dev", "english-dev", record["selection"]["lr"],
         [record["selection"]["epoch"]]),
        ("last@0.001", "last", 1e-3, [2]), ("average-last-3@0.001", "average-last", 1e-3, [1, 2]),
        ("last@0.0003", "last", 3e-4, [2]),
        ("average-last-3@0.0003", "average-last", 3e-4, [1, 2]),
        ("average-lrs", "average-lrs", None, [2])]
    assert all(set(m["dev"]) == {"en", "de"} and set(m["test"]) == {"de"} for m in models)
    assert all(0.0 <= s <= 1.0 for m in models for s in [*m["dev"].values(),
                                                         *m["test"].values()])
    selected = next(c for c in record["checkpoints"] if (c["lr"], c["epoch"]) == (
        record["selection"]["lr"], record["selection"]["epoch"]))
    assert models[0]["dev"] == selected["dev"]
    # a run of the grid is the same run as that lr alone: the same last epoch
    alone = by_name(runs["first"].record)["last@0.001"]
    assert (models[1]["dev"], models[1]["test"]) == (alone["dev"], alone["test"])
    assert record["zero_shot"]["de"]["score"] == models[-1]["test"]["de"]
    assert record["selection"]["keep"] == "average-lrs"


def test_keep_average_lrs_saves_the_mean_of_the_runs_last_weights(runs):
    assert list(by_name(runs["second"].record)) == ["english-dev", "last@0.0003"]  # no averages
    assert runs["second"].record["candidates"]["average_last"] is None
    first, second = weights(runs["first"].model), weights(runs["second"].model)
    saved = weights(load_start(str(runs["grid_dir"]), "xnli").model)
    checked = 0
    for name in ("classifier.weight", "encoder.encoder.layer.0.attention.self.query.weight"):
        matching = [k for k in saved if k.endswith(name)]
        for key in matching:
            assert not torch.equal(first[key], second[key])  # the runs differ: a real mean
            torch.testing.assert_close(saved[key], (first[key] + second[key]) / 2)
            checked += 1
    assert checked >= 2
    kept = weights(runs["grid"].model)
    torch.testing.assert_close(kept["classifier.weight"],
                               (first["classifier.weight"] + second["classifier.weight"]) / 2)


def test_the_default_call_is_unchanged(encoder_dir, runs):
    default = train(encoder_dir, LRS)
    explicit = train(encoder_dir, LRS, average_last=None, keep="selected")
    assert "candidates" not in default.record and "keep" not in default.record["selection"]
    assert default.record["config_hash"] == explicit.record["config_hash"]
    assert default.record["config_hash"] != runs["grid"].record["config_hash"]
    # recording candidates without keeping one leaves the selected model and its scores
    scored = train(encoder_dir, LRS, average_last=2)
    assert scored.record["config_hash"] not in (default.record["config_hash"],
                                                runs["grid"].record["config_hash"])
    assert scored.record["zero_shot"] == default.record["zero_shot"]
    assert scored.record["selection"] == default.record["selection"]
    assert scored.record["candidates"]["models"][0]["test"]["de"] == \
        default.record["zero_shot"]["de"]["score"]
    for key, tensor in weights(default.model).items():
        assert torch.equal(tensor, scored.model.state_dict()[key]), key


# --------------------------------------------------------------------------- bad input

BAD = [
    ({"keep": "best"}, LRS, "unknown keep rule 'best'"),
    ({"average_last": 0}, LRS, "average_last must be an integer >= 1"),
    ({"keep": "average-lrs"}, LRS, "keep average-lrs needs averaging"),
    ({"keep": "average-last"}, LRS[:1], "keep average-last needs averaging"),
    ({"keep": "last"}, LRS, "keep last needs one learning rate, the grid has 2 (0.001, 0.0003)"),
    ({"keep": "average-last", "average_last": 2}, LRS, "use average-lrs or one lr"),
]


@pytest.mark.parametrize(("kwargs", "lrs", "message"), BAD)
def test_bad_averaging_is_one_error_before_training(encoder_dir, monkeypatch, kwargs, lrs,
                                                    message):
    def no_training(*_args, **_kwargs):
        raise AssertionError("a model was loaded")

    monkeypatch.setattr(source_module, "load_start", no_training)
    with pytest.raises(FsxltError) as err:
        train(encoder_dir, lrs, **kwargs)
    assert message in str(err.value) and "\n" not in str(err.value)


# --------------------------------------------------------------------------- the CLI

@pytest.fixture(scope="module")
def panx_dir(tmp_path_factory):
    data = tmp_path_factory.mktemp("panx")
    write_conll(data / "train-en.tsv", ner_data(16, seed=1))
    write_conll(data / "dev-en.tsv", ner_data(6, seed=2))
    write_conll(data / "dev-de.tsv", ner_data(6, seed=3))
    write_conll(data / "test-de.tsv", ner_data(6, seed=4))
    return data


def cli(encoder_dir, data, out, *extra: str) -> int:
    return run_app(["source-train", "--task", "panx", "--model", str(encoder_dir),
                    "--data-dir", str(data), "--target", "de", "--epochs", "2",
                    "--device", "cpu", "--out", str(out), *extra])


def test_cli_prints_the_candidates_and_saves_the_kept_one(encoder_dir, panx_dir, tmp_path,
                                                          capsys):
    out = tmp_path / "ckpt"
    assert cli(encoder_dir, panx_dir, out, "--lr", "1e-3", "--average-last", "2",
               "--keep", "average-last") == 0
    record = json.loads((out / "fsxlt_checkpoint.json").read_text(encoding="utf-8"))
    assert record["selection"]["kept"] == "average-last-2@0.001"
    kept = by_name(record)["average-last-2@0.001"]
    assert record["zero_shot"]["de"]["score"] == kept["test"]["de"]
    printed = capsys.readouterr().out
    assert "kept average-last-2@0.001 (--keep average-last)" in printed
    header = next(line for line in printed.splitlines() if line.split()[:1] == ["candidate"])
    assert header.split() == ["candidate", "test", "de", "dev", "en", "dev", "de"]
    row = next(line for line in printed.splitlines() if line.startswith("* "))
    assert "average-last-2@0.001" in row and f"{100 * kept['test']['de']:.2f}" in row


@pytest.mark.parametrize(("args", "message"), [
    (["--keep", "best"], "unknown keep rule 'best'"),
    (["--average-last", "0"], "average_last must be an integer >= 1"),
    (["--keep", "average-lrs"], "needs averaging: give average_last N (--average-last N)"),
    (["--keep", "last", "--lr", "1e-3", "--lr", "3e-4"], "0.001, 0.0003"),
    (["--keep", "average-last", "--average-last", "2"], "use average-lrs or one lr"),
])
def test_cli_bad_averaging_is_one_line_and_writes_nothing(encoder_dir, panx_dir, tmp_path,
                                                          capsys, args, message):
    out = tmp_path / "ckpt"
    assert cli(encoder_dir, panx_dir, out, *args) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and len(err.splitlines()) == 1 and "Traceback" not in err
    assert not out.exists()


def test_cli_help_names_the_averaging_options():
    from typer.testing import CliRunner

    from fsxlt.cli import app

    result = CliRunner().invoke(app, ["source-train", "--help"], terminal_width=200)
    assert result.exit_code == 0
    assert "--average-last" in result.output and "--keep" in result.output
    assert "average-lrs" in result.output


def test_analyze_selection_gives_the_candidates_without_checkpoint_test_scores(
        runs, tmp_path, capsys):
    """Issue 41, case 20: after docs/regimes.md's averaging command (no
    --checkpoint-test-scores), ``fsxlt analyze selection CKPT`` refused the whole analysis;
    the candidates table needs no per-checkpoint test scores."""
    from fsxlt.cli import run_app

    out = tmp_path / "analysis"
    assert run_app(["analyze", "selection", str(runs["grid_dir"]), "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "note: no selection and seed-variation tables" in printed
    assert "--checkpoint-test-scores" in printed
    assert (out / "source-candidates.csv").is_file() and not (out / "selection.csv").exists()
