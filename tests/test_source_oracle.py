"""Oracle starts (keep oracle) and the mean over seeds (keep average-seeds) in source-training."""

from __future__ import annotations

import json

import pytest
import torch

from fsxlt.cli import run_app
from fsxlt.errors import FsxltError
from fsxlt.study.runs import start_fingerprint
from fsxlt.training import is_checkpoint, load_start, source_train
from fsxlt.training import source as source_module
from fsxlt.training.loop import average_states
from fsxlt.training.oracle import OracleKeeper
from tests.train_fixtures import make_encoder_dir, ner_data, write_bucket_set, write_conll

GRID = [3e-4, 1e-4]


@pytest.fixture(scope="module")
def encoder_dir(tmp_path_factory):
    return make_encoder_dir(tmp_path_factory.mktemp("tiny-bert"))


def train(encoder_dir, lrs, epochs=2, n_train=24, **kwargs):
    """A tiny PAN-X source-training: English dev, targets de and es (de has a test set)."""
    kwargs.setdefault("seed", 5)
    return source_train("panx", ner_data(n_train, seed=1), ner_data(8, seed=2),
                        model_name=str(encoder_dir),
                        target_dev={"de": ner_data(8, seed=3), "es": ner_data(8, seed=6)},
                        target_test={"de": ner_data(6, seed=4)}, lrs=lrs, epochs=epochs,
                        batch_size=4, device="cpu", **kwargs)


def weights(model) -> dict[str, torch.Tensor]:
    return {k: v.detach().to("cpu").clone() for k, v in model.state_dict().items()}


def assert_same_weights(first: dict[str, torch.Tensor], second: dict[str, torch.Tensor]) -> None:
    assert set(first) == set(second)
    for key, tensor in first.items():
        assert torch.equal(tensor, second[key]), key


def read_record(directory) -> dict:
    return json.loads((directory / "fsxlt_checkpoint.json").read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def oracle_grid(encoder_dir, tmp_path_factory):
    """The grid with oracle starts (test scores per checkpoint), saved, and the same grid
    keeping only the selected checkpoint."""
    result = train(encoder_dir, GRID, keep="oracle", checkpoint_test_scores=True)
    out = result.save(tmp_path_factory.mktemp("ckpt") / "panx")
    return {"result": result, "out": out, "record": read_record(out),
            "plain": train(encoder_dir, GRID, checkpoint_test_scores=True)}


# --------------------------------------------------------------------------- the keeper

def test_the_keeper_holds_each_languages_first_best_epoch():
    model = torch.nn.Linear(2, 1)
    keeper = OracleKeeper(["de", "es"])
    for epoch, de, es in [(1, 0.2, 0.1), (2, 0.5, 0.1), (3, 0.5, 0.3), (4, 0.4, 0.3)]:
        with torch.no_grad():
            model.bias.fill_(float(epoch))
        keeper.epoch_done(model, {"lr": 0.1, "epoch": epoch, "dev": {"de": de, "es": es}})
    assert (keeper.best["de"].epoch, keeper.best["de"].dev_score) == (2, 0.5)  # not the tie
    assert (keeper.best["es"].epoch, keeper.best["es"].dev_score) == (3, 0.3)
    assert keeper.best["de"].state["bias"].item() == 2.0
    assert keeper.best["es"].state["bias"].item() == 3.0
    assert keeper.best["de"].state["bias"].device.type == "cpu"


def test_one_epoch_that_improves_two_languages_is_copied_once():
    keeper = OracleKeeper(["de", "es"])
    keeper.epoch_done(torch.nn.Linear(2, 1), {"lr": 0.1, "epoch": 1,
                                              "dev": {"de": 0.1, "es": 0.2}})
    assert keeper.best["de"].state is keeper.best["es"].state


# --------------------------------------------------------------------------- oracle starts

def test_every_target_gets_an_oracle_checkpoint_that_holds_the_records_oracle(oracle_grid):
    main, out = oracle_grid["record"], oracle_grid["out"]
    assert main["oracle_starts"] == {"de": "oracle-de", "es": "oracle-es"}
    selected = (main["selection"]["lr"], main["selection"]["epoch"])
    named = {lang: (main["oracle"][lang]["lr"], main["oracle"][lang]["epoch"])
             for lang in ("de", "es")}
    assert any(where != selected for where in named.values())  # the fixture has a real oracle
    hashes = {main["config_hash"]}
    for lang in ("de", "es"):
        assert is_checkpoint(out / f"oracle-{lang}")
        record = read_record(out / f"oracle-{lang}")
        start, grid = record["oracle_start"], main["oracle"][lang]
        assert start["language"] == lang and start["rule"] == "target-dev"
        assert {k: start[k] for k in grid} == grid  # lr, epoch, dev and test scores
        assert start["selected_config_hash"] == main["config_hash"]
        assert record["selection"] == {"protocol": "target-dev", "languages": [lang],
                                       "lr": grid["lr"], "epoch": grid["epoch"],
                                       "dev_score": grid["dev_score"], "keep": "oracle",
                                       "kept": f"oracle-{lang}"}
        epoch = next(c for c in main["checkpoints"]
                     if (c["lr"], c["epoch"]) == named[lang])
        assert start["dev"] == epoch["dev"] and start["dev_score"] == epoch["dev"][lang]
        # its own scores, measured on the weights it holds, are that epoch's
        assert record["zero_shot"]["de"]["score"] == epoch["test"]["de"]
        assert record["english_dev"]["score"] == epoch["dev"]["en"]
        assert record["checkpoints"] == main["checkpoints"] and "candidates" not in record
        hashes.add(record["config_hash"])
    assert len(hashes) == 3  # the selected one and each oracle start: three starts


def test_an_oracle_checkpoint_holds_the_weights_of_the_epoch_it_names(oracle_grid,
                                                                      encoder_dir):
    main, out = oracle_grid["record"], oracle_grid["out"]
    retrained: dict[tuple[float, int], dict[str, torch.Tensor]] = {}
    for lang in ("de", "es"):
        where = (main["oracle"][lang]["lr"], main["oracle"][lang]["epoch"])
        if where not in retrained:  # that lr alone, stopped at that epoch
            retrained[where] = weights(train(encoder_dir, [where[0]], epochs=where[1],
                                             keep="last").model)
        loaded = load_start(str(out / f"oracle-{lang}"), "panx")
        assert loaded.info["kind"] == "source-trained"
        assert_same_weights(weights(loaded.model), retrained[where])
        kept = next(o for o in oracle_grid["result"].oracles if o.language == lang)
        assert_same_weights(kept.state, retrained[where])


def test_the_selected_checkpoint_is_the_one_without_oracles(oracle_grid):
    result, plain = oracle_grid["result"], oracle_grid["plain"]
    assert_same_weights(weights(result.model), weights(plain.model))
    record = {k: v for k, v in result.record.items() if k != "oracle_starts"}
    assert record == plain.record  # its config hash too: the same start as without oracles
    assert_same_weights(weights(load_start(str(oracle_grid["out"]), "panx").model),
                        weights(plain.model))
    assert plain.oracles == []


def test_oracle_starts_are_starts_of_their_own(oracle_grid):
    out = oracle_grid["out"]
    ids = {start_fingerprint(out), start_fingerprint(out / "oracle-de"),
           start_fingerprint(out / "oracle-es")}
    assert len(ids) == 3


# --------------------------------------------------------------------------- seeds

@pytest.fixture(scope="module")
def seeded(encoder_dir):
    """The mean of seeds 1 and 2 (their selected and their last weights), and each seed
    trained alone."""
    args = {"lrs": [1e-4], "epochs": 2, "n_train": 12, "seed": None}
    return {"mean": train(encoder_dir, keep="average-seeds", seeds=[1, 2], **args),
            "mean-last": train(encoder_dir, keep="average-seeds", seeds=[1, 2],
                               seed_weights="last", **args),
            "alone": {seed: train(encoder_dir, **{**args, "seed": seed}) for seed in (1, 2)},
            "last": {seed: train(encoder_dir, keep="last", **{**args, "seed": seed})
                     for seed in (1, 2)}}


@pytest.mark.parametrize(("mean", "alone"), [("mean", "alone"), ("mean-last", "last")])
def test_the_seed_average_is_the_mean_of_the_seeds_kept_weights(seeded, mean, alone):
    singles = [weights(seeded[alone][seed].model) for seed in (1, 2)]
    assert not torch.equal(singles[0]["classifier.weight"], singles[1]["classifier.weight"])
    averaged = weights(seeded[mean].model)
    assert_same_weights(averaged, average_states(singles))
    torch.testing.assert_close(averaged["classifier.weight"],
                               (singles[0]["classifier.weight"]
                                + singles[1]["classifier.weight"]) / 2)


def test_the_seed_average_records_its_seeds_and_scores(seeded):
    record, singles = seeded["mean"].record, seeded["alone"]
    assert record["seeds"] == [1, 2] and record["seed"] is None
    block = record["seed_average"]
    assert block["seeds"] == [1, 2] and block["weights"] == "selected"
    assert [(m["seed"], m["lr"], m["epoch"], m["config_hash"]) for m in block["members"]] == [
        (seed, singles[seed].record["selection"]["lr"], singles[seed].record["selection"]["epoch"],
         singles[seed].record["config_hash"]) for seed in (1, 2)]
    assert record["checkpoints"] == [dict(c, seed=seed) for seed in (1, 2)
                                     for c in singles[seed].record["checkpoints"]]
    models = {m["name"]: m for m in record["candidates"]["models"]}
    assert list(models) == ["seed-1", "seed-2", "average-seeds"]
    for seed in (1, 2):
        assert models[f"seed-{seed}"]["test"]["de"] == \
            singles[seed].record["zero_shot"]["de"]["score"]
    assert models["average-seeds"]["seeds"] == [1, 2]
    assert record["zero_shot"]["de"]["score"] == models["average-seeds"]["test"]["de"]
    assert record["english_dev"]["score"] == models["average-seeds"]["dev"]["en"]
    assert record["selection"]["keep"] == record["selection"]["kept"] == "average-seeds"
    best = max(record["checkpoints"], key=lambda c: c["selection_score"])
    assert (record["selection"]["seed"], record["selection"]["epoch"]) == (best["seed"],
                                                                           best["epoch"])
    others = {singles[1].record["config_hash"], singles[2].record["config_hash"],
              seeded["mean-last"].record["config_hash"]}
    assert record["config_hash"] not in others
    last = seeded["mean-last"].record["seed_average"]
    assert last["weights"] == "last" and [m["epoch"] for m in last["members"]] == [2, 2]


# --------------------------------------------------------------------------- bad input

BAD = [
    ({"keep": "oracle", "target_dev": {}}, "keep oracle keeps the epoch best on each target"),
    ({"keep": "oracle", "target_dev": {"de": []}}, "give a --target with a dev set"),
    ({"seeds": [1, 2]}, "seeds (--seeds) train one model per seed for keep average-seeds"),
    ({"seed_weights": "last"}, "seed_weights (--seed-weights) says what keep average-seeds"),
    ({"keep": "average-seeds", "seeds": [1]}, "needs two or more seeds"),
    ({"keep": "average-seeds"}, "needs two or more seeds (--seeds 1 --seeds 2), got 0"),
    ({"keep": "average-seeds", "seeds": [1, 2], "seed": 3}, "not both"),
    ({"keep": "average-seeds", "seeds": [1, 1]}, "seeds repeat"),
    ({"keep": "average-seeds", "seeds": [1, -2]}, "seeds must be integers >= 0"),
    ({"keep": "average-seeds", "seeds": [1, 2], "seed_weights": "best"},
     "unknown seed_weights 'best'"),
    ({"keep": "average-seeds", "seeds": [1, 2], "seed_weights": "last", "lrs": GRID},
     "seed_weights last averages each seed's last epoch of one learning rate"),
    ({"keep": "average-seeds", "seeds": [1, 2], "average_last": 2},
     "cannot go with average_last"),
]


@pytest.mark.parametrize(("kwargs", "message"), BAD)
def test_bad_choices_are_one_error_before_training(encoder_dir, monkeypatch, kwargs, message):
    def no_training(*_args, **_kwargs):
        raise AssertionError("a model was loaded")

    monkeypatch.setattr(source_module, "load_start", no_training)
    kwargs = {"seed": None, "lrs": [1e-4], **kwargs}
    target_dev = kwargs.pop("target_dev", None)
    with pytest.raises(FsxltError) as err:
        if target_dev is None:
            train(encoder_dir, **kwargs)
        else:
            source_train("panx", ner_data(4, seed=1), ner_data(4, seed=2),
                         model_name=str(encoder_dir), target_dev=target_dev, device="cpu",
                         **kwargs)
    assert message in str(err.value) and "\n" not in str(err.value)


# --------------------------------------------------------------------------- the CLI

@pytest.fixture(scope="module")
def panx_dir(tmp_path_factory):
    data = tmp_path_factory.mktemp("panx")
    write_conll(data / "train-en.tsv", ner_data(12, seed=1))
    write_conll(data / "dev-en.tsv", ner_data(6, seed=2))
    write_conll(data / "dev-de.tsv", ner_data(6, seed=3))
    write_conll(data / "test-de.tsv", ner_data(6, seed=4))
    return data


def cli(encoder_dir, data, out, *extra: str) -> int:
    return run_app(["source-train", "--task", "panx", "--model", str(encoder_dir),
                    "--data-dir", str(data), "--epochs", "2", "--lr", "1e-4",
                    "--device", "cpu", "--out", str(out), *extra])


def test_cli_keeps_oracle_starts_that_adapt_files_as_another_start(encoder_dir, panx_dir,
                                                                   tmp_path, capsys):
    from fsxlt.tasks import get_task

    out = tmp_path / "ckpt"
    assert cli(encoder_dir, panx_dir, out, "--target", "de", "--keep", "oracle") == 0
    printed = capsys.readouterr().out
    oracle = read_record(out / "oracle-de")["oracle_start"]
    assert f"oracle de: lr {oracle['lr']:g} epoch {oracle['epoch']}" in printed
    assert f"wrote {out / 'oracle-de'}" in printed
    buckets = write_bucket_set(tmp_path / "buckets", "panx", "de", 1,
                               [ner_data(2, seed=9, source="de")],
                               list(get_task("panx").labels))
    starts = {}
    for name, start in (("selected", out), ("oracle", out / "oracle-de")):
        runs = tmp_path / f"runs-{name}"
        assert run_app(["adapt", "--task", "panx", "--lang", "de", "--bucket", str(buckets),
                        "--from", str(start), "--data-dir", str(panx_dir), "--lr", "1e-4",
                        "--max-epochs", "1", "--device", "cpu", "--out", str(runs)]) == 0
        record = json.loads(next(runs.rglob("00.json")).read_text(encoding="utf-8"))
        starts[name] = (record["model"]["start"]["id"], record["config_hash"])
    assert starts["selected"][0] != starts["oracle"][0]
    assert starts["selected"][1] != starts["oracle"][1]


def test_cli_prints_the_seeds_and_saves_their_mean(encoder_dir, panx_dir, tmp_path, capsys):
    out = tmp_path / "ckpt"
    assert cli(encoder_dir, panx_dir, out, "--target", "de", "--keep", "average-seeds",
               "--seeds", "1", "--seeds", "2") == 0
    record = read_record(out)
    assert record["seed_average"]["seeds"] == [1, 2]
    printed = capsys.readouterr().out
    assert "kept average-seeds (--keep average-seeds)" in printed
    assert any(line.startswith("* average-seeds") for line in printed.splitlines())
    assert sum(line.strip().startswith("seed-") for line in printed.splitlines()) == 2


@pytest.mark.parametrize(("args", "message"), [
    (["--keep", "oracle"], "keep oracle keeps the epoch best on each target language's dev set"),
    (["--keep", "average-seeds", "--seeds", "1"], "needs two or more seeds"),
    (["--seeds", "1", "--seeds", "2"], "for keep average-seeds (--keep average-seeds)"),
    (["--keep", "average-seeds", "--seeds", "1", "--seeds", "2", "--seed", "3"], "not both"),
    (["--keep", "average-seeds", "--seeds", "1", "--seeds", "2", "--seed-weights", "last",
      "--lr", "3e-4"], "the grid has 2 (0.0001, 0.0003)"),
    (["--keep", "average-seeds", "--seeds", "1", "--seeds", "2", "--average-last", "2"],
     "cannot go with average_last"),
])
def test_cli_bad_choices_are_one_line_and_write_nothing(encoder_dir, panx_dir, tmp_path,
                                                        capsys, args, message):
    out = tmp_path / "ckpt"
    assert cli(encoder_dir, panx_dir, out, *args) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and len(err.splitlines()) == 1 and "Traceback" not in err
    assert not out.exists()


def test_cli_help_names_the_oracle_and_seed_options():
    from typer.testing import CliRunner

    from fsxlt.cli import app

    result = CliRunner().invoke(app, ["source-train", "--help"], terminal_width=200)
    assert result.exit_code == 0
    for word in ("--seeds", "--seed-weights", "average-seeds", "oracle-<lang>",
                 "--keep oracle"):
        assert word in result.output, word
