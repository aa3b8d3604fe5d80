"""A test set that is the buckets' own source is refused (issue 41, case 16).

``fsxlt icl --test data/xnli/dev-de.tsv`` over buckets drawn from ``dev-de.tsv`` ran
without a word in 0.4.0: test examples could be the demonstrations. Every writer that
scores a test set over buckets (``adapt``, ``icl``, ``lm-adapt``, ``sweep``) compares the
test file's sha256 with the source file the bucket set records: one line, exit status 2,
nothing written. A copy of the source under another name is the same file.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from fsxlt.cli import run_app
from tests.icl_fixtures import make_causal_lm_dir
from tests.sweep_fixtures import build_study, sweep_config, write_config
from tests.train_fixtures import nli_data, write_pairs


@pytest.fixture(scope="module")
def world(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("apart")
    found = build_study(root / "study")
    found["lm"] = make_causal_lm_dir(root / "lm")
    data = root / "data"
    found["source"] = write_pairs(data / "dev-de.tsv", nli_data(30, seed=9, source="dev-de"))
    write_pairs(data / "test-fr.tsv", nli_data(12, seed=4, source="test-fr"))
    shutil.copy(found["source"], data / "test-de.tsv")  # the source under a test's name
    found["sampled"] = root / "store"
    assert run_app(["sample", "-t", "xnli", "-l", "de", "-k", "1", "--n-buckets", "2",
                    "--data", str(found["source"]), "--out", str(found["sampled"])]) == 0
    found["own_data"] = data
    return found


def bucket(w: dict[str, Path]) -> str:
    return str(w["sampled"] / "xnli/de/k1")


def adapt(w: dict[str, Path], out: Path, test: Path) -> list[str]:
    return ["adapt", "--task", "xnli", "--lang", "de", "--bucket", bucket(w), "--from",
            str(w["checkpoint"]), "--test", str(test), "--lr", "1e-2", "--max-epochs", "1",
            "--device", "cpu", "--out", str(out)]


def icl(w: dict[str, Path], out: Path, test: Path) -> list[str]:
    return ["icl", "--task", "xnli", "--lang", "de", "--model", str(w["lm"]), "--bucket",
            bucket(w), "--test", str(test), "--test-limit", "3", "--out", str(out)]


def lm_adapt(w: dict[str, Path], out: Path, test: Path) -> list[str]:
    return ["lm-adapt", "--task", "xnli", "--lang", "de", "--model", str(w["lm"]), "--bucket",
            bucket(w), "--test", str(test), "--test-limit", "3", "--dev-limit", "3",
            "--max-epochs", "1", "--lr", "1e-2", "--out", str(out)]


def sweep(w: dict[str, Path], out: Path, test: Path) -> list[str]:
    """A sweep whose data_dir's test-de.tsv is ``test`` (the source's copy, or not)."""
    data = out.parent / "sweep-data"
    data.mkdir(exist_ok=True)
    shutil.copy(test, data / "test-de.tsv")
    config = sweep_config(w, out, buckets=str(w["sampled"]), data_dir=str(data),
                          tasks={"xnli": {"languages": ["de"], "k": [1]}})
    return ["sweep", str(write_config(out.parent / "sweep.yaml", config)), "--workers", "0"]


WRITERS = {"adapt": adapt, "icl": icl, "lm-adapt": lm_adapt, "sweep": sweep}


@pytest.mark.parametrize("writer", WRITERS)
@pytest.mark.parametrize("given", ["source", "copy"])
def test_a_test_file_that_is_the_buckets_source_is_refused(world, tmp_path, capsys, writer,
                                                           given):
    out = tmp_path / "runs"
    test = world["source"] if given == "source" else world["own_data"] / "test-de.tsv"
    argv = WRITERS[writer](world, out, test)
    capsys.readouterr()
    assert run_app(argv) == 2
    err = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert len(err) == 1 and "is the file the buckets of" in err[0], err
    assert "the same sha256" in err[0] and "include the demonstrations" in err[0]
    assert not out.exists()


def test_a_test_file_of_its_own_passes(world, tmp_path):
    fr = world["own_data"] / "test-fr.tsv"  # another file: scored (the language is the user's)
    assert run_app(icl(world, tmp_path / "runs", fr)) == 0
