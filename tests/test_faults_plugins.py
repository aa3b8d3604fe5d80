"""Plug-in methods that fail to load, and small command-line messages.

Broken plug-ins are modules written into ``tmp_path`` on ``sys.path``;
installed plug-ins are simulated by replacing ``importlib.metadata.
entry_points``, which :func:`fsxlt.methods.plugins` reads.
"""

from __future__ import annotations

import importlib.metadata
import json
import logging
import re
import sys
from pathlib import Path

import pytest

from fsxlt.cli import run_app
from fsxlt.errors import FsxltError
from fsxlt.methods import BUILTIN, ENTRY_POINT_GROUP, discover, get_method
from tests.conftest import write_pair_tsv

GOOD = '''from fsxlt.methods import Method, Option


class Good(Method):
    """A plug-in that loads."""

    name = "good-one"
    options = (Option("flag", bool, False, "a switch"), Option("limit", int, None, "a cap"),
               Option("names", list, ["a", "b"], "some names"))

    def prepare(self, model, seed):
        pass
'''
BAD_VALIDATE = '''from fsxlt.methods import Method


class Picky(Method):
    name = "picky"

    def validate(self):
        raise ValueError("bad value")

    def prepare(self, model, seed):
        pass
'''
BAD_INIT = '''from fsxlt.methods import Method


class Fussy(Method):
    name = "fussy"

    def __init__(self, **options):
        raise KeyError("no config")

    def prepare(self, model, seed):
        pass
'''
# module name -> (source, the class to name, what the one error line must say)
BROKEN = {
    "fx_syntax": ("def broken(:\n", "X", r"SyntaxError: .*fx_syntax\.py, line 1\)"),
    "fx_raises": ("x = 1\nraise RuntimeError('boom on import')\n", "X",
                  r"RuntimeError: boom on import \(.*fx_raises\.py, line 2\)"),
    "fx_validate": (BAD_VALIDATE, "Picky",
                    r"method picky: validate\(\) failed \(ValueError: bad value "
                    r"\(.*fx_validate\.py, line 8\)\)"),
    "fx_init": (BAD_INIT, "Fussy", r"method fussy: cannot build it \(KeyError: 'no config'"),
}


@pytest.fixture
def modules(tmp_path, monkeypatch):
    """The plug-in modules above (and a good one) importable from ``tmp_path/plugins``."""
    root = tmp_path / "plugins"
    root.mkdir()
    for name, (source, _, _) in BROKEN.items():
        (root / f"{name}.py").write_text(source, encoding="utf-8")
    (root / "fx_good.py").write_text(GOOD, encoding="utf-8")
    monkeypatch.syspath_prepend(str(root))
    yield root
    for name in [*BROKEN, "fx_good"]:
        sys.modules.pop(name, None)


@pytest.fixture
def installed(monkeypatch, modules):
    """Register entry points under ``fsxlt.methods`` (name -> ``module:Class``)."""
    def install(points: dict[str, str]) -> None:
        eps = [importlib.metadata.EntryPoint(name, value, ENTRY_POINT_GROUP)
               for name, value in points.items()]

        def entry_points(**select):
            return [ep for ep in eps if select.get("group") in (None, ep.group)]
        monkeypatch.setattr(importlib.metadata, "entry_points", entry_points)
    return install


def one_error_line(capsys) -> str:
    err = capsys.readouterr().err
    assert "Traceback" not in err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    return lines[0]


def adapt_args(tmp_path: Path, method: str, *extra: str) -> list[str]:
    return ["adapt", "--task", "xnli", "--lang", "de", "--bucket", str(tmp_path / "nobucket"),
            "--out", str(tmp_path / "runs"), "--method", method, *extra]


# --------------------------------------------------------------------------- 1. plug-in failures

@pytest.mark.parametrize("module", list(BROKEN))
def test_a_broken_method_reference_is_one_line(tmp_path, modules, capsys, module):
    _, cls, expected = BROKEN[module]
    assert run_app(adapt_args(tmp_path, f"{module}:{cls}")) == 2
    line = one_error_line(capsys)
    assert line.startswith("error: method ") and re.search(expected, line), line
    assert not (tmp_path / "runs").exists()


def test_validate_raising_an_ordinary_exception_is_an_fsxlt_error(modules):
    with pytest.raises(FsxltError, match=r"^method picky: validate\(\) failed \(ValueError"):
        get_method("fx_validate:Picky")


def test_a_broken_method_in_a_sweep_config_is_one_line(tmp_path, modules, capsys):
    config = tmp_path / "sweep.yaml"
    config.write_text(json.dumps({
        "name": "t", "out": str(tmp_path / "runs"), "buckets": str(tmp_path / "buckets"),
        "start": str(tmp_path / "ckpt"), "methods": ["full", "fx_syntax:X"],
        "tasks": {"xnli": {"languages": ["de"], "k": [1]}}}), encoding="utf-8")
    assert run_app(["sweep", str(config), "--dry-run"]) == 2
    line = one_error_line(capsys)
    assert "method fx_syntax:X: cannot import it (SyntaxError" in line


def test_fsxlt_methods_lists_what_loads_and_names_what_does_not(installed, capsys):
    installed({"good-one": "fx_good:Good", "syntax-one": "fx_syntax:X",
               "missing-one": "fx_nowhere_at_all:X", "raising-one": "fx_raises:X"})
    assert run_app(["methods"]) == 0
    out = capsys.readouterr().out
    listed, _, failed = out.partition("plug-ins that failed to load")
    names = {line.split()[0] for line in listed.splitlines() if line and line[0] != " "}
    assert names == {*BUILTIN, "good-one"}
    broken = [line.strip() for line in failed.splitlines()[1:] if line.strip()]
    assert len(broken) == 3
    assert broken[0].startswith("plug-in method missing-one (fx_nowhere_at_all:X): cannot "
                                "import it (ModuleNotFoundError")
    assert broken[1].startswith("plug-in method raising-one (fx_raises:X): cannot import it "
                                "(RuntimeError: boom on import")
    assert broken[2].startswith("plug-in method syntax-one (fx_syntax:X): cannot import it "
                                "(SyntaxError")
    found, errors = discover()
    assert "good-one" in found and set(errors) == {"missing-one", "raising-one", "syntax-one"}


def test_a_broken_installed_plugin_is_one_line_naming_it(tmp_path, installed, capsys):
    installed({"syntax-one": "fx_syntax:X"})
    assert run_app(adapt_args(tmp_path, "syntax-one")) == 2
    line = one_error_line(capsys)
    assert line.startswith("error: plug-in method syntax-one (fx_syntax:X): cannot import it "
                           "(SyntaxError: ")


# --------------------------------------------------------------------------- 2. select is quiet

def tiny_checkpoint(root: Path) -> Path:
    """An XNLI checkpoint (fresh head) whose weights hold a key BertModel does not expect."""
    import torch
    from safetensors.torch import load_file, save_file

    from fsxlt.tasks import get_task
    from fsxlt.training import load_start, save_checkpoint
    from tests.train_fixtures import make_encoder_dir

    task = get_task("xnli")
    start = load_start(make_encoder_dir(root / "encoder"), task)
    record = {"task": "xnli", "kind": task.kind, "labels": list(task.labels),
              "encoder": str(root / "encoder")}
    checkpoint = save_checkpoint(root / "ckpt", start.model, start.tokenizer, record)
    weights = load_file(str(checkpoint / "model.safetensors"))
    weights["cls.extra.bias"] = torch.zeros(3)
    save_file(weights, str(checkpoint / "model.safetensors"), metadata={"format": "pt"})
    return checkpoint


@pytest.fixture
def loud_transformers():
    """transformers at its default verbosity, with its warnings recorded; restored after."""
    from transformers.utils import logging as hf_logging

    verbosity, bars = hf_logging.get_verbosity(), hf_logging.is_progress_bar_enabled()
    hf_logging.set_verbosity_warning()
    hf_logging.enable_progress_bar()
    records: list[str] = []
    handler = logging.Handler()
    handler.emit = lambda record: records.append(record.getMessage())
    logging.getLogger("transformers").addHandler(handler)
    yield records
    logging.getLogger("transformers").removeHandler(handler)
    hf_logging.set_verbosity(verbosity)
    if not bars:
        hf_logging.disable_progress_bar()


def test_model_based_select_prints_no_load_report(tmp_path, loud_transformers, capsys):
    checkpoint = tiny_checkpoint(tmp_path)
    write_pair_tsv(tmp_path / "dev-de.tsv", {"entailment": 8, "neutral": 8, "contradiction": 8})
    capsys.readouterr()
    assert run_app(["select", "--task", "xnli", "--lang", "de", "--data-dir", str(tmp_path),
                    "--from", str(checkpoint), "-s", "uncertain", "-k", "1", "--n-pools", "2",
                    "--pool-size", "12", "--out", str(tmp_path / "sets"), "--device",
                    "cpu"]) == 0
    err = capsys.readouterr().err
    assert not [m for m in loud_transformers if "LOAD REPORT" in m]
    assert "LOAD REPORT" not in err and "Loading weights" not in err


# --------------------------------------------------------------------------- 3. select options

@pytest.mark.parametrize(("option", "value"), [("--n-pools", "0"), ("--pool-size", "0")])
def test_select_pool_options_are_named(tmp_path, capsys, option, value):
    assert run_app(["select", "--task", "xnli", "--lang", "de", "--data-dir", str(tmp_path),
                    "-s", "random", "-k", "1", option, value, "--out",
                    str(tmp_path / "sets")]) == 2
    line = one_error_line(capsys)
    assert line == f"error: {option} must be at least 1, got {value}"


# --------------------------------------------------------------------------- 4. adapt --help

def test_adapt_help_lists_every_builtin_method(capsys):
    assert run_app(["adapt", "--help"]) == 0
    text = re.sub(r"-\s+", "-", re.sub(r"\s+", " ", capsys.readouterr().out))
    listed = re.search(r"--method <str> (.*?)\[default", text).group(1)
    assert all(re.search(rf"\b{re.escape(name)}\b(?!-)", listed) for name in BUILTIN), listed


# --------------------------------------------------------------------------- 5. defaults as YAML

def test_fsxlt_methods_spells_defaults_as_yaml(installed, capsys):
    installed({"good-one": "fx_good:Good"})
    assert run_app(["methods"]) == 0
    out = capsys.readouterr().out
    assert "--method-opt train_encoder=true " in out
    assert "--method-opt flag=false " in out and "--method-opt limit=null " in out
    assert "--method-opt names=a,b " in out
    assert not re.search(r"=(True|False|None)\b", out)


# --------------------------------------------------------------------------- 6. pet checks first

@pytest.fixture
def no_model_loads(monkeypatch):
    """Any attempt to load an encoder fails the test."""
    from fsxlt.training import checkpoint

    def refuse(*args, **kwargs):
        raise AssertionError("a model was loaded")
    monkeypatch.setattr(checkpoint, "load_encoder", refuse)


def write_config(directory: Path, model_type: str, architectures: list[str]) -> Path:
    """A model directory with its config.json and a tokenizer file, no weights (nothing may
    load them)."""
    directory.mkdir(parents=True)
    (directory / "config.json").write_text(json.dumps(
        {"model_type": model_type, "architectures": architectures}), encoding="utf-8")
    (directory / "tokenizer_config.json").write_text("{}", encoding="utf-8")  # as shipped
    return directory


@pytest.mark.parametrize("command", ["adapt", "source-train"])
def test_pet_refuses_a_task_without_a_pattern_before_loading(tmp_path, no_model_loads, capsys,
                                                             command):
    encoder = write_config(tmp_path / "mlm", "bert", ["BertForMaskedLM"])
    if command == "adapt":
        args = adapt_args(tmp_path, "pet", "--from", str(encoder))
        args[2] = "wpr"
    else:
        args = ["source-train", "--task", "wpr", "--method", "pet", "--model", str(encoder),
                "--out", str(tmp_path / "ckpt")]
    assert run_app(args) == 2
    assert one_error_line(capsys) == ("error: task wpr has no pet pattern and verbalizer "
                                      "(a 'pet' section in its YAML)")


def test_a_sweep_with_pet_on_a_task_without_a_pattern_is_refused_at_parse(tmp_path):
    from fsxlt.errors import FsxltError
    from fsxlt.execution import parse_config

    encoder = write_config(tmp_path / "mlm", "bert", ["BertForMaskedLM"])
    with pytest.raises(FsxltError, match="task wpr has no pet pattern"):
        parse_config({"out": str(tmp_path / "runs"), "methods": ["pet"],
                      "start": str(encoder), "tasks": {"wpr": {"languages": ["de"]}}})
    with pytest.raises(FsxltError, match="task wpr has no pet pattern"):
        parse_config({"out": str(tmp_path / "runs"), "methods": [],
                      "no_source_training": {"encoder": str(encoder), "methods": ["pet"]},
                      "tasks": {"wpr": {"languages": ["de"]}}})


@pytest.mark.parametrize(("model_type", "architectures", "names"), [
    ("bert", ["BertModel"], "BertModel"),
    ("bert", ["BertForSequenceClassification"], "BertForSequenceClassification"),
    ("gpt2", ["GPT2LMHeadModel"], "GPT2LMHeadModel"),
])
def test_pet_refuses_an_encoder_without_a_masked_lm_head_from_its_config(
        tmp_path, no_model_loads, capsys, model_type, architectures, names):
    encoder = write_config(tmp_path / "plain", model_type, architectures)
    assert run_app(adapt_args(tmp_path, "pet", "--from", str(encoder))) == 2
    assert one_error_line(capsys) == (
        f"error: pet needs an encoder pretrained with a masked-LM head; {encoder} has none "
        f"(its config names {names})")
    assert not (tmp_path / "runs").exists()


def test_pet_reads_a_checkpoints_encoder_config(tmp_path, no_model_loads, capsys):
    encoder = write_config(tmp_path / "plain", "bert", ["BertModel"])
    checkpoint = tmp_path / "ckpt"
    checkpoint.mkdir()
    (checkpoint / "fsxlt_checkpoint.json").write_text(json.dumps(
        {"format": "fsxlt-checkpoint/1", "encoder": str(encoder)}), encoding="utf-8")
    (checkpoint / "config.json").write_text("{}", encoding="utf-8")  # as a checkpoint has
    assert run_app(["source-train", "--task", "xnli", "--method", "pet", "--model",
                    str(checkpoint), "--out", str(tmp_path / "out")]) == 2
    assert f"{encoder} has none (its config names BertModel)" in one_error_line(capsys)


@pytest.mark.parametrize("architectures", [["BertForMaskedLM"], ["BertForPreTraining"], []])
def test_pet_accepts_an_encoder_whose_config_has_the_head(tmp_path, architectures):
    from fsxlt.tasks import get_task

    encoder = write_config(tmp_path / "mlm", "bert", architectures)
    get_method("pet").check_start(get_task("xnli"), str(encoder))
    get_method("pet").check_start(get_task("xnli"), "no-such-org/not-a-cached-model")
