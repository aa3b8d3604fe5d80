"""Every writer against an ``--out`` of the wrong kind, given directly or through a link
(issue 31, mechanisms 4 and 5): one line, exit status 2, nothing written anywhere.

The writers of bucket stores (``sample``, ``select``, ``buckets import-published``,
``buckets import-fewclue``) meet a runs directory; the writers of runs directories
(``adapt``, ``sweep``, ``icl``, ``evaluate --out``) meet a bucket store; ``demo`` and
``submission``, which own folders of their own, meet both. Each target is the directory
itself, a folder inside it, and a symbolic link to that folder (0.2.0 judged a link by
where it lay, not where it pointed). ``source-train --overwrite`` replaces a checkpoint
directory and nothing else (0.2.0 replaced whatever ``--out`` held).
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from fsxlt.cli import run_app
from fsxlt.study.directories import MARKER
from tests.conftest import write_ner
from tests.fewclue_fixtures import write_fewclue
from tests.icl_fixtures import make_causal_lm_dir
from tests.sweep_fixtures import build_study, sweep_config, write_config
from tests.test_buckets_cli import write_published


@pytest.fixture(scope="module")
def world(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("writers")
    study = build_study(root / "study")
    study["lm"] = make_causal_lm_dir(root / "lm")
    (root / "ner").mkdir()
    study["ner"] = write_ner(root / "ner" / "train-de.tsv", 120, seed=1)
    study["fewclue"] = write_fewclue(root / "FewCLUE", tasks=("eprstmt",))
    write_published(root / "published")
    study["published"] = root / "published"
    runs = root / "runs"  # a runs directory with records: what store writers must not touch
    assert run_app(["adapt", "--task", "xnli", "--lang", "de", "--bucket",
                    str(study["buckets"] / "xnli/de/k1/00.json"), "--from",
                    str(study["checkpoint"]), "--data-dir", str(study["data"]), "--lr", "1e-2",
                    "--max-epochs", "1", "--device", "cpu", "--out", str(runs)]) == 0
    study["runs"] = runs
    return study


def adapt(w: dict[str, Path], out: Path) -> list[str]:
    return ["adapt", "--task", "xnli", "--lang", "de", "--bucket",
            str(w["buckets"] / "xnli/de/k1/00.json"), "--from", str(w["checkpoint"]),
            "--data-dir", str(w["data"]), "--lr", "1e-2", "--max-epochs", "1", "--device",
            "cpu", "--out", str(out)]


def sweep(w: dict[str, Path], out: Path) -> list[str]:
    config = write_config(out.parent / f"{out.name}-sweep.yaml", sweep_config(w, out))
    return ["sweep", str(config), "--workers", "0"]


def icl(w: dict[str, Path], out: Path) -> list[str]:
    return ["icl", "--task", "xnli", "--lang", "de", "--model", str(w["lm"]), "--bucket",
            str(w["buckets"] / "xnli/de/k1/00.json"), "--test", str(w["data"] / "test-de.tsv"),
            "--test-limit", "3", "--out", str(out)]


def evaluate(w: dict[str, Path], out: Path) -> list[str]:
    return ["evaluate", str(w["checkpoint"]), "--task", "xnli", "--lang", "de", "--data-dir",
            str(w["data"]), "--out", str(out / "zero-shot-test.json")]


def sample(w: dict[str, Path], out: Path) -> list[str]:
    return ["sample", "-t", "panx", "-l", "de", "-k", "1", "--n-buckets", "3", "--data",
            str(w["ner"]), "--out", str(out)]


def select(w: dict[str, Path], out: Path) -> list[str]:
    return ["select", "--task", "panx", "--lang", "de", "--data-dir", str(w["ner"].parent),
            "-s", "random", "-k", "1", "--n-pools", "2", "--pool-size", "40", "--seed", "5",
            "--out", str(out)]


def import_published(w: dict[str, Path], out: Path) -> list[str]:
    return ["buckets", "import-published", str(w["published"]), "--out", str(out)]


def import_fewclue(w: dict[str, Path], out: Path) -> list[str]:
    return ["buckets", "import-fewclue", str(w["fewclue"]), "--out", str(out), "-t", "eprstmt"]


def demo(w: dict[str, Path], out: Path) -> list[str]:
    return ["demo", "--out", str(out), "--config", "quick"]


def source_train(w: dict[str, Path], out: Path) -> list[str]:
    return ["source-train", "--task", "xnli", "--model", str(w["encoder"]), "--train",
            str(w["data"] / "test-de.tsv"), "--dev", str(w["data"] / "test-fr.tsv"),
            "--epochs", "1", "--lr", "1e-3", "--device", "cpu", "--overwrite",
            "--out", str(out)]


def submission(w: dict[str, Path], out: Path) -> list[str]:
    return ["submission", str(w["runs"]), "--out", str(out)]


def lm_adapt(w: dict[str, Path], out: Path) -> list[str]:
    return ["lm-adapt", "--task", "xnli", "--lang", "de", "--model", str(w["lm"]), "--bucket",
            str(w["buckets"] / "xnli/de/k1/00.json"), "--test", str(w["data"] / "test-de.tsv"),
            "--test-limit", "3", "--dev-limit", "3", "--max-epochs", "1", "--lr", "1e-2",
            "--out", str(out)]


# writer -> (its argv, the kinds of directory it must refuse): three kinds (issue 41, case 8:
# a folder fsxlt submission wrote was taken as a bucket store or a runs directory)
STORE_WRITER = ("runs", "submission")
RUNS_WRITER = ("buckets", "submission")
WRITERS: dict[str, tuple[Callable[[dict[str, Path], Path], list[str]], tuple[str, ...]]] = {
    "sample": (sample, STORE_WRITER), "select": (select, STORE_WRITER),
    "import-published": (import_published, STORE_WRITER),
    "import-fewclue": (import_fewclue, STORE_WRITER),
    "adapt": (adapt, RUNS_WRITER), "sweep": (sweep, RUNS_WRITER), "icl": (icl, RUNS_WRITER),
    "lm-adapt": (lm_adapt, RUNS_WRITER), "evaluate": (evaluate, RUNS_WRITER),
    "demo": (demo, ("runs", "buckets", "submission")),
    "submission": (submission, ("runs", "buckets")),
    "source-train": (source_train, ("runs", "buckets", "submission")),
}
# a checkpoint may live in an empty folder anywhere (report reads those inside a runs
# directory): source-train meets a directory of either kind itself, not a folder inside
CASES = [(writer, kind, how) for writer, (_, kinds) in WRITERS.items() for kind in kinds
         for how in ("itself", "inside", "link")
         if writer != "source-train" or how == "itself"]


def snapshot(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): b"" if p.is_dir() else p.read_bytes()
            for p in sorted(root.rglob("*")) if not p.is_symlink()
            and p.name != ".fsxlt-writer.lock"}


@pytest.mark.parametrize("writer, kind, how", CASES)
def test_every_writer_refuses_the_wrong_kind_of_out(world, tmp_path, capsys, writer, kind,
                                                    how):
    target = tmp_path / kind
    if kind == "runs":
        shutil.copytree(world["runs"], target)
    elif kind == "buckets":
        shutil.copytree(world["buckets"], target)
    else:
        submission_folder(target)
    if kind != "submission":
        assert json.loads((target / MARKER).read_text())["kind"] == kind
    (target / "xnli" / "inner").mkdir(parents=True)
    out = {"itself": target, "inside": target / "xnli" / "inner",
           "link": tmp_path / "link"}[how]
    if how == "link":
        out.symlink_to(target / "xnli" / "inner")
    argv = WRITERS[writer][0](world, out)  # a sweep's config is written here, before
    before = snapshot(tmp_path)
    capsys.readouterr()
    status = run_app(argv)
    err = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert status == 2 and len(err) == 1 and err[0].startswith("error:"), err
    assert snapshot(tmp_path) == before, f"{writer} wrote into the {kind} through {how}"


def submission_folder(folder: Path) -> Path:
    """A folder as ``fsxlt submission`` leaves it: the benchmark's files, and beside it the
    list of the files it wrote."""
    (folder / "XNLI").mkdir(parents=True)
    (folder / "XNLI" / "de.prediction").write_text("entailment\n")
    (folder.parent / f".{folder.name}.fsxlt-submission.json").write_text(
        json.dumps({"files": ["XNLI/de.prediction"]}))
    return folder


# writer -> the option naming the model folder it reads, and that folder in the world
MODEL_READERS = {"adapt": ("--from", "checkpoint"), "sweep": ("start", "checkpoint"),
                 "icl": ("--model", "lm"), "lm-adapt": ("--model", "lm"),
                 "source-train": ("--model", "encoder"), "evaluate": ("the checkpoint",
                                                                      "checkpoint")}


@pytest.mark.parametrize("writer, how", [
    (writer, how) for writer in MODEL_READERS for how in ("itself", "inside", "around")
    if writer != "evaluate" or how != "around"])
def test_no_writer_writes_into_a_model_folder_it_reads(world, tmp_path, capsys, writer, how):
    """Issue 41, case 9: ``fsxlt icl --model m --out m/runs`` ran once, then its own records
    changed the model's fingerprint and every rerun was refused as "model differ"."""
    option, name = MODEL_READERS[writer]
    home = tmp_path / "home"
    model = home / "model"
    shutil.copytree(world[name], model)
    w = dict(world, **{name: model})
    out = {"itself": model, "inside": model / "runs", "around": home}[how]
    argv = WRITERS[writer][0](w, out)
    before = snapshot(home)
    capsys.readouterr()
    status = run_app(argv)
    err = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert status == 2 and len(err) == 1 and err[0].startswith("error:"), err
    relation = {"itself": "is", "inside": "lies inside", "around": "holds"}[how]
    assert f"{relation} the folder of {option}" in err[0], err
    assert snapshot(home) == before


def test_a_sweep_writes_nothing_into_its_icl_arms_model(world, tmp_path, capsys):
    model = tmp_path / "lm"
    shutil.copytree(world["lm"], model)
    config = sweep_config(world, model / "runs", icl={"model": str(model), "arms": [{}]})
    argv = ["sweep", str(write_config(tmp_path / "sweep.yaml", config)), "--workers", "0"]
    before = snapshot(tmp_path)
    capsys.readouterr()
    assert run_app(argv) == 2
    err = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert len(err) == 1 and "lies inside the folder of icl model" in err[0], err
    assert snapshot(tmp_path) == before
