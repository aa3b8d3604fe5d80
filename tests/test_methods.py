"""Adapting methods as plug-ins: the interface contract, discovery, options, LoRA, epoch 0.

The example plug-in package (``examples/fsxlt-bias-only``) is registered the
way ``pip install`` would register it: a ``*.dist-info`` directory with its
``entry_points.txt`` on ``sys.path``, so ``importlib.metadata`` finds it.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
import torch

from fsxlt.cli import run_app
from fsxlt.errors import FsxltError
from fsxlt.methods import BUILTIN, Method, Option, discover, get_method
from fsxlt.training import AdaptEngine
from fsxlt.training import adapt as adapt_module
from fsxlt.training.loop import snapshot
from tests.sweep_fixtures import build_study, sweep_config, write_config
from tests.train_fixtures import nli_data, read_first_bucket

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "fsxlt-bias-only"


@pytest.fixture(scope="module")
def study(tmp_path_factory):
    return build_study(tmp_path_factory.mktemp("methods"))


@pytest.fixture
def plugin(tmp_path, monkeypatch):
    """The example package importable and registered under ``fsxlt.methods``."""
    dist = tmp_path / "site" / "fsxlt_bias_only-0.1.0.dist-info"
    dist.mkdir(parents=True)
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: fsxlt-bias-only\n"
                                   "Version: 0.1.0\n")
    (dist / "entry_points.txt").write_text(
        "[fsxlt.methods]\nbias-only = fsxlt_bias_only:BiasOnly\n")
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    monkeypatch.syspath_prepend(str(EXAMPLE))
    yield
    sys.modules.pop("fsxlt_bias_only", None)


def engine(study) -> AdaptEngine:
    return AdaptEngine.from_start("xnli", "de", str(study["checkpoint"]),
                                  dev=nli_data(12, seed=3), test=nli_data(15, seed=4),
                                  device="cpu")


def bucket(study):
    return read_first_bucket(study["buckets"] / "xnli" / "de" / "k1")


# --------------------------------------------------------------------------- the contract

def test_a_plugin_trains_only_what_it_declares(study, plugin):
    eng = engine(study)
    start = snapshot(eng.model)
    record = eng.adapt(bucket(study), method="bias-only", lrs=[0.5], seed=1, max_epochs=3,
                       method_options={"label_smoothing": "0.1"})
    after = snapshot(eng.model)
    changed = sorted(name for name in start if not torch.equal(start[name], after[name]))
    assert changed == ["classifier.bias"]
    assert record["runs"][0]["n_trainable_parameters"] == 3
    assert record["method"] == "bias-only"
    assert record["method_info"] == {"name": "bias-only", "version": "1",
                                     "options": {"label_smoothing": 0.1}}


def test_discovery_by_entry_point_and_by_reference(plugin):
    found, broken = discover()
    assert "bias-only" in found and set(BUILTIN) <= set(found) and not broken
    by_name = get_method("bias-only", "tagging")
    by_ref = get_method("fsxlt_bias_only:BiasOnly", "classification")
    assert type(by_name) is type(by_ref) and by_name.name == "bias-only"


def test_fsxlt_methods_lists_builtins_and_plugins(plugin, capsys):
    assert run_app(["methods"]) == 0
    out = capsys.readouterr().out
    lines = {line.split()[0]: line for line in out.splitlines() if not line.startswith(" ")}
    assert set(lines) == {*BUILTIN, "bias-only"}
    assert "fsxlt_bias_only:BiasOnly" in lines["bias-only"]
    assert " cls+tag+mc+qa " in lines["full"] and " cls+mc " in lines["cos-pooler"]
    assert " cls+mc " in lines["pet"]  # ChID: each candidate at the blank's masks
    assert "--method-opt rank=8" in out


class Scale(Method):
    name = "scale-test"
    options = (Option("factor", int, 2), Option("flag", bool, False), Option("mods", list, []))

    def prepare(self, model, seed):  # pragma: no cover - never run
        pass


@pytest.mark.parametrize(("options", "message"), [
    ({"factr": 3}, "unknown option(s) factr (valid: factor, flag, mods)"),
    ({"factor": "three"}, "option factor must be an integer, got 'three'"),
    ({"factor": 2.5}, "option factor must be an integer, got 2.5"),
    ({"flag": "maybe"}, "option flag must be true or false, got 'maybe'"),
])
def test_option_errors_name_the_method_and_option(options, message):
    with pytest.raises(FsxltError, match=rf"^method scale-test: {message}".replace("(", r"\(")
                       .replace(")", r"\)")):
        Scale(**options)


def test_option_values_are_typed():
    method = Scale(factor="3", flag="yes", mods="query, value")
    assert method.config == {"factor": 3, "flag": True, "mods": ["query", "value"]}
    assert method.factor == 3


@pytest.mark.parametrize(("args", "message"), [
    (["--method", "lora", "--method-opt", "rank"], "--method-opt expects key=value"),
    (["--method", "lora", "--method-opt", "rnk=4"], "method lora: unknown option(s) rnk"),
    (["--method", "lora", "--method-opt", "rank=four"], "option rank must be an integer"),
    (["--method", "cos-pooler"],
     "method cos-pooler supports classification and multiple_choice tasks, not tagging"),
    (["--method", "nowhere.module:Cls"], "method nowhere.module:Cls: cannot import it"),
])
def test_cli_method_errors_are_one_line(study, tmp_path, capsys, args, message):
    from tests.conftest import write_ner

    data = write_ner(tmp_path / "dev-de.tsv", 20).parent
    status = run_app(["adapt", "--task", "panx", "--lang", "de", "--bucket", str(tmp_path),
                      "--data-dir", str(data), "--out", str(tmp_path / "runs"), *args])
    err = capsys.readouterr().err.strip()
    assert status == 2 and message in err and len(err.splitlines()) == 1, err
    assert not (tmp_path / "runs").exists()


# --------------------------------------------------------------------------- LoRA

def test_lora_trains_adapters_and_head_and_leaves_the_base_bit_identical(study):
    eng = engine(study)
    start = snapshot(eng.model)
    trainable = eng._reset(get_method("lora", options={"rank": 2}), seed=0)
    assert trainable and all("lora_" in name or name.startswith(("pooler.", "classifier."))
                             for name in trainable)
    assert any("lora_A" in name for name in trainable)
    record = eng.adapt(bucket(study), method="lora", method_options={"rank": 2}, lrs=[0.05],
                       seed=0, max_epochs=3)
    n_lora = sum(p.numel() for n, p in eng.model.named_parameters() if "lora_" in n)
    n_head = sum(p.numel() for n, p in eng.model.named_parameters()
                 if n.startswith(("pooler.", "classifier.")))
    assert record["runs"][0]["n_trainable_parameters"] == n_lora + n_head
    eng._reset("full", seed=0)  # the next run: adapters gone, every start weight restored
    assert snapshot(eng.model).keys() == start.keys()
    assert all(torch.equal(start[k], v) for k, v in snapshot(eng.model).items())
    encoder = {k: v for k, v in snapshot(eng.model).items() if k.startswith("encoder.")}
    assert all(torch.equal(start[k], v) for k, v in encoder.items())


def test_full_after_lora_equals_full_on_a_fresh_engine(study):
    eng = engine(study)
    eng.adapt(bucket(study), method="lora", lrs=[0.05], seed=0, max_epochs=2)
    after_lora = eng.adapt(bucket(study), method="full", lrs=[0.01], seed=0, max_epochs=2)
    fresh = engine(study).adapt(bucket(study), method="full", lrs=[0.01], seed=0, max_epochs=2)
    assert after_lora["runs"][0]["epochs"] == fresh["runs"][0]["epochs"]
    assert after_lora["test_score"] == fresh["test_score"]


# --------------------------------------------------------------------------- epoch 0

def scripted(monkeypatch, scores: list[float]) -> None:
    """Make the engine's dev scores follow ``scores`` (the engine has no test set)."""
    left = list(scores)

    def fake(model, eval_set, task, precision="auto"):
        return {"score": left.pop(0)}

    monkeypatch.setattr(adapt_module, "score", fake)


def test_the_start_model_wins_when_adapting_only_hurts_dev(study, monkeypatch):
    eng = engine(study)
    start = snapshot(eng.model)
    eng.test = None
    scripted(monkeypatch, [0.50, 0.40, 0.45, 0.30])
    record = eng.adapt(bucket(study), lrs=[0.01], seed=0, max_epochs=5, patience=3,
                       select_start=True)
    assert [e["epoch"] for e in record["runs"][0]["epochs"]] == [0, 1, 2, 3]
    assert record["best_epoch"] == 0 and record["start_selected"] is True
    assert record["dev_score"] == 0.50
    assert all(torch.equal(start[k], v) for k, v in snapshot(eng.model).items())


def test_epoch_zero_loses_to_a_better_epoch_and_is_off_by_default(study, monkeypatch):
    eng = engine(study)
    eng.test = None
    scripted(monkeypatch, [0.50, 0.40, 0.60, 0.55])
    record = eng.adapt(bucket(study), lrs=[0.01], seed=0, max_epochs=3, patience=3,
                       select_start=True)
    assert record["best_epoch"] == 2 and record["start_selected"] is False
    scripted(monkeypatch, [0.40, 0.60, 0.55])
    record = eng.adapt(bucket(study), lrs=[0.01], seed=0, max_epochs=3, patience=3)
    assert [e["epoch"] for e in record["runs"][0]["epochs"]] == [1, 2, 3]
    assert record["select_start"] is False


# --------------------------------------------------------------------------- sweeps

def test_method_options_and_epoch_zero_are_part_of_the_run_identity(study, tmp_path):
    from fsxlt.execution import expand, parse_config

    def hashes(**extra) -> dict[str, str]:
        config = sweep_config(study, tmp_path / "runs", methods=["full", "lora"], **extra)
        config["tasks"] = {"xnli": {"languages": ["de"], "k": [1]}}
        return {run.id: run.config_hash for run in expand(parse_config(config)).runs}

    base = hashes()
    rank4 = hashes(method_options={"lora": {"rank": 4}})
    full_runs = [key for key in base if "/full/" in key]
    lora_runs = [key for key in base if "/lora/" in key]
    assert all(base[key] == rank4[key] for key in full_runs)
    assert all(base[key] != rank4[key] for key in lora_runs)
    epoch0 = hashes(select_start=True)  # an arm of its own, and another identity
    assert sorted(key.replace("-epoch0/", "/") for key in epoch0) == sorted(base)
    assert all(base[key.replace("-epoch0/", "/")] != value for key, value in epoch0.items())
    with pytest.raises(FsxltError, match="method_options for fc, which task xnli does not run"):
        hashes(method_options={"fc": {}})
    with pytest.raises(FsxltError, match="method lora: unknown option"):
        hashes(method_options={"lora": {"ranks": 4}})


def test_a_plugin_through_sweep_and_report_compare(study, plugin, tmp_path, capsys):
    runs = tmp_path / "runs"
    config = sweep_config(study, runs, methods=["full", "bias-only"])
    config["tasks"] = {"xnli": {"languages": ["de"], "k": [1]}}
    path = write_config(tmp_path / "sweep.yaml", config)
    assert run_app(["sweep", str(path), "--workers", "0"]) == 0
    records = sorted((runs / "xnli" / "de" / "k1" / "bias-only").glob("*.json"))
    assert len(records) == 5
    assert json.loads(records[0].read_text())["method_info"]["name"] == "bias-only"
    capsys.readouterr()
    assert run_app(["report", str(runs), "--compare", "bias-only", "full"]) == 0
    out = capsys.readouterr().out
    assert "bias-only" in out and "| de | 1 |" in out.replace("  ", " ")
    assert run_app(["sweep", str(path), "--dry-run", "--select-start"]) == 0
    assert "10 to run (10 missing)" in capsys.readouterr().err  # epoch-0 arms: full-epoch0...


def test_adapt_cli_select_start_writes_an_arm_of_its_own(study, tmp_path, capsys):
    out = tmp_path / "runs"
    argv = ["adapt", "--task", "xnli", "--lang", "de",
            "--bucket", str(study["buckets"] / "xnli" / "de" / "k1" / "00.json"),
            "--from", str(study["checkpoint"]), "--data-dir", str(study["data"]),
            "--out", str(out), "--device", "cpu", "--max-epochs", "2", "--lr", "0.01"]
    assert run_app([*argv, "--select-start"]) == 0
    assert run_app(argv) == 0
    record = json.loads((out / "xnli/de/k1/full-epoch0/00.json").read_text())
    assert record["select_start"] is True and record["runs"][0]["epochs"][0]["epoch"] == 0
    assert (out / "xnli/de/k1/full/00.json").is_file()
    capsys.readouterr()
    assert run_app(["report", str(out), "--compare", "full-epoch0", "full"]) == 0
    assert "full-epoch0" in capsys.readouterr().out
