"""Issue 73, item 6: a bad model argument is refused in one line before any data is read.

Each command is given a bad model and a data folder that does not exist: were the data
read first, the refusal would name the data; it names the model. (How long a refusal
takes is measured in docs/reliability.md, not asserted here.)"""

from __future__ import annotations

import shutil

import pytest

from fsxlt.cli import run_app
from fsxlt.models.location import TOKENIZER_FILES
from tests.train_fixtures import make_encoder_dir


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    root = tmp_path_factory.mktemp("models")
    encoder = make_encoder_dir(root / "encoder")
    bare = root / "no-tokenizer"  # a model folder without its tokenizer's files
    shutil.copytree(encoder, bare)
    for name in TOKENIZER_FILES + ("special_tokens_map.json",):
        (bare / name).unlink(missing_ok=True)
    (root / "model-file").write_text("not a folder")
    return {"bare": bare, "typo": root / "encodr", "file": root / "model-file"}


def commands(model, tmp_path):
    nowhere = tmp_path / "no-data"
    bucket = tmp_path / "no-buckets" / "xnli" / "de" / "k1"
    return {
        "source-train": ["source-train", "--task", "xnli", "--model", model, "--data-dir",
                         str(nowhere), "--out", str(tmp_path / "ckpt")],
        "adapt": ["adapt", "--task", "xnli", "--lang", "de", "--bucket", str(bucket),
                  "--model", model, "--data-dir", str(nowhere), "--out", str(tmp_path / "r")],
        "evaluate": ["evaluate", model, "--task", "xnli", "--lang", "de", "--data-dir",
                     str(nowhere)],
    }


@pytest.mark.parametrize("command", ["source-train", "adapt", "evaluate"])
@pytest.mark.parametrize("bad, message", [
    ("bare", "no tokenizer files"),
    ("typo", "no such directory, and not a model name the hub would accept"),
    ("file", "a file, not a model directory"),
])
def test_a_bad_model_is_refused_before_the_data_is_read(models, tmp_path, capsys, command,
                                                        bad, message):
    args = commands(str(models[bad]), tmp_path)[command]
    assert run_app(args) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and str(models[bad]) in err, err
    assert len(err.splitlines()) == 1 and "no-data" not in err
    assert not (tmp_path / "ckpt").exists() and not (tmp_path / "r").exists()


def test_icl_and_lm_adapt_check_the_causal_lm_first(tmp_path, capsys):
    for command in ("icl", "lm-adapt"):
        assert run_app([command, "--task", "xnli", "--lang", "de", "--bucket",
                        str(tmp_path / "no-buckets"), "--model", str(tmp_path / "lm-typo"),
                        "--data-dir", str(tmp_path / "no-data"),
                        "--out", str(tmp_path / "r")]) == 2
        err = capsys.readouterr().err.strip()
        assert "lm-typo: no such directory" in err and len(err.splitlines()) == 1
    (tmp_path / "gguf").mkdir()
    assert run_app(["icl", "--task", "xnli", "--lang", "de", "--bucket",
                    str(tmp_path / "no-buckets"), "--model", str(tmp_path / "gguf"),
                    "--gguf-file", "m.gguf", "--data-dir", str(tmp_path / "no-data"),
                    "--out", str(tmp_path / "r")]) == 2
    assert "m.gguf: GGUF file not found" in capsys.readouterr().err


def test_refusals_come_before_torch_is_imported(models, tmp_path):
    """A refusal of a bad model or config comes in the CLI's start-up: torch (over a
    second to import) is never imported for it."""
    import subprocess
    import sys

    bad_config = tmp_path / "bad.yaml"
    bad_config.write_text("name: x\nout: r\nlr: [0.001]\ntasks: {xnli: {}}\n")
    cases = [commands(str(models["typo"]), tmp_path)[name]
             for name in ("source-train", "adapt", "evaluate")]
    cases += [["sweep", str(bad_config), "--dry-run"],
              ["icl", "--task", "xnli", "--lang", "de", "--bucket", "x", "--model",
               str(models["typo"]), "--out", str(tmp_path / "r")]]
    script = ("import sys, json\nfrom fsxlt.cli import run_app\n"
              "codes = [run_app(args) for args in json.loads(sys.argv[1])]\n"
              "print(json.dumps([codes, 'torch' in sys.modules]))\n")
    import json

    done = subprocess.run([sys.executable, "-c", script, json.dumps(cases)],
                          capture_output=True, text=True, timeout=120)
    codes, torch_loaded = json.loads(done.stdout.strip().splitlines()[-1])
    assert codes == [2] * len(cases) and not torch_loaded, done.stderr
