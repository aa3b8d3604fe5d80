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
from fsxlt.directories import MARKER
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


# writer -> (its argv, the kinds of directory it must refuse)
WRITERS: dict[str, tuple[Callable[[dict[str, Path], Path], list[str]], tuple[str, ...]]] = {
    "sample": (sample, ("runs",)), "select": (select, ("runs",)),
    "import-published": (import_published, ("runs",)),
    "import-fewclue": (import_fewclue, ("runs",)),
    "adapt": (adapt, ("buckets",)), "sweep": (sweep, ("buckets",)), "icl": (icl, ("buckets",)),
    "evaluate": (evaluate, ("buckets",)), "demo": (demo, ("runs", "buckets")),
    "submission": (submission, ("runs", "buckets")),
    "source-train": (source_train, ("runs", "buckets")),
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
    else:
        shutil.copytree(world["buckets"], target)
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
