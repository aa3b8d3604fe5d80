"""Compare only like with like, and run what was configured (issue 31, mechanisms 6, 9).

fsxlt 0.2.0 paired two arms by bucket number, so after a set was sampled again
with ``--replace`` arms over different buckets were "paired over shared
buckets"; a cell mixed records scored on different test files or with other
metrics with no note; ``--threads`` was ignored with ``--workers 0``; a
``--method`` or ``--k`` filter that matched nothing ran nothing without a word;
``joint:`` settings without a joint regime were accepted. Each is one line now
(or a note, where the numbers are still worth seeing).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from fsxlt.errors import FsxltError
from fsxlt.execution import parse_config
from fsxlt.fileio import atomic_write_json
from fsxlt.report import (
    foreign_metrics,
    load_records,
    mixed_tests,
    mixed_threads,
    other_bucket_sets,
    write_compare,
)
from fsxlt.report.compare import compare
from fsxlt.study.runs import RUN_FORMAT


def record(arm: str, index: int, score: float, *, bucket: str | None = None,
           test: str = "t" * 64, metric: str = "accuracy", threads: int | None = None,
           device: str = "cpu") -> dict:
    return {"format": RUN_FORMAT, "status": "ok", "task": "xnli", "language": "de", "k": 1,
            "method": arm.split("-")[0], "metric": metric,
            "bucket": {"id": f"xnli/de/k1/{index:02d}", "index": index, "k": 1,
                       "sha256": bucket or f"bucket-{index}"},
            "model": {"source_training": "nosource" not in arm}, "selected_lr": 1e-5,
            "runs": [], "best_epoch": 1, "dev_score": score, "test_score": score,
            "data": {"test": {"sha256": test, "n": 10}}, "device": device,
            **({"torch_threads": threads} if threads is not None else {})}


def write(root: Path, arm: str, index: int, rec: dict) -> None:
    atomic_write_json(root / f"xnli/de/k1/{arm}/{index:02d}.json", rec)


def two_arms(root: Path, changes: dict[int, dict] | None = None) -> Path:
    changes = changes or {}
    for index in range(4):
        write(root, "full", index, record("full", index, 0.6 + index / 100))
        write(root, "fc", index, record("fc", index, 0.5 + index / 100,
                                        **changes.get(index, {})))
    return root


def test_pairs_of_other_bucket_content_are_refused(tmp_path):
    runs = two_arms(tmp_path, {2: {"bucket": "re-sampled"}})
    with pytest.raises(FsxltError, match="xnli/de/k1: full and fc ran different buckets "
                                         "under bucket 02"):
        compare(load_records(runs), "full", "fc")
    assert compare(load_records(two_arms(tmp_path / "same")), "full", "fc")["n"][0] == 4


def test_pairs_of_other_metrics_are_refused(tmp_path):
    runs = two_arms(tmp_path, {1: {"metric": "f1"}})
    with pytest.raises(FsxltError, match="ran different metrics under bucket 01"):
        compare(load_records(runs), "full", "fc")


def test_other_test_examples_are_named(tmp_path):
    runs = two_arms(tmp_path, {i: {"test": "s" * 64} for i in range(4)})
    notes: list[str] = []
    write_compare(runs, "full", "fc", warn=notes.append)
    assert any("full and fc were scored on different test examples" in n for n in notes)


def test_a_cell_that_mixes_metrics_or_test_sets_is_named(tmp_path):
    runs = two_arms(tmp_path / "metrics", {3: {"metric": "f1"}})
    assert "xnli/de/k1/fc mix records scored with different metrics (accuracy, f1)" in \
        mixed_tests(load_records(runs))
    runs = two_arms(tmp_path / "tests", {3: {"test": "u" * 64}})
    assert "xnli/de/k1/fc mix records scored with different test sets" in \
        mixed_tests(load_records(runs))
    assert mixed_tests(load_records(two_arms(tmp_path / "same"))) is None


def test_a_cell_that_mixes_thread_counts_is_named(tmp_path):
    runs = two_arms(tmp_path, {0: {"threads": 1}, 1: {"threads": 2}})
    assert "xnli/de/k1/fc mix CPU runs of 1, 2 torch threads" in mixed_threads(
        load_records(runs))
    gpu = two_arms(tmp_path / "gpu", {0: {"threads": 1, "device": "cuda"},
                                         1: {"threads": 2, "device": "cuda"}})
    assert mixed_threads(load_records(gpu)) is None  # GPU numerics: not the CPU count


def sweep(tmp_path: Path, **extra) -> dict:
    config = {"out": str(tmp_path / "runs"), "start": "bert-base-multilingual-cased",
              "tasks": {"xnli": {"languages": ["de"], "k": [1, 2]}}}
    config.update(extra)
    return config


@pytest.mark.parametrize("filters, message", [
    ({"methods": ["ful"]}, "method 'ful' is not in the sweep config (has: full)"),
    ({"ks": [4]}, "K 4 is not in the sweep config (has: 1, 2)"),
    ({"languages": ["fr"]}, "language 'fr' is not in the sweep config"),
])
def test_a_filter_that_matches_nothing_is_an_error(tmp_path, filters, message):
    config = parse_config(sweep(tmp_path))
    with pytest.raises(FsxltError, match=message.replace("(", r"\(").replace(")", r"\)")):
        config.restrict(**filters)
    assert config.restrict(methods=["full"], ks=[2]).tasks[0].k == (2,)


def test_joint_settings_without_a_joint_regime_are_refused(tmp_path):
    source = tmp_path / "train-en.tsv"
    source.write_text("a\tb\tentailment\n", encoding="utf-8")
    with pytest.raises(FsxltError, match="joint sets the joint regimes, but regimes has none"):
        parse_config(sweep(tmp_path, joint={"source_train": str(source), "batch_size": 4}))
    with pytest.raises(FsxltError, match="joint.target_repeat is for regime.s. joint; regimes "
                                         "has joint-macro"):
        parse_config(sweep(tmp_path, regimes=["joint-macro"],
                           joint={"source_train": str(source), "target_repeat": 5}))
    both = parse_config(sweep(tmp_path, regimes=["joint", "joint-macro"],
                              joint={"source_train": str(source), "target_repeat": 5}))
    assert both.tasks[0].regimes == ("joint", "joint-macro")


def test_threads_hold_with_workers_zero(monkeypatch):
    import torch

    from fsxlt.execution import executors

    seen: list[int] = []
    monkeypatch.setattr(executors, "run_group",
                        lambda group, **kwargs: seen.append(torch.get_num_threads()))
    before = torch.get_num_threads()
    executors._run_local([["a"], ["b"]], lambda outcome: None, workers=0, devices=None,
                         device="cpu", threads=1)
    assert seen == [1, 1] and torch.get_num_threads() == before
    executors._run_local([["a"]], lambda outcome: None, workers=0, devices=None,
                         device="cpu", threads=None)
    assert seen[-1] == before


def test_a_dry_run_refuses_what_the_sweep_refuses(tmp_path, capsys):
    """0.2.0's ``--dry-run`` listed the runs of a sweep whose out is a bucket store."""
    from fsxlt.cli import run_app
    from fsxlt.study.directories import MARKER
    from tests.sweep_fixtures import write_config

    store = tmp_path / "store"
    store.mkdir()
    (store / MARKER).write_text('{"kind": "buckets"}')
    config = write_config(tmp_path / "sweep.yaml", sweep(tmp_path, out=str(store)))
    for extra in (["--dry-run"], []):
        status = run_app(["sweep", str(config), "--workers", "0", *extra])
        err = capsys.readouterr().err.strip().splitlines()
        assert status == 2 and len(err) == 1 and "is a bucket store" in err[0], err
    assert sorted(p.name for p in store.iterdir()) == [MARKER]


def test_a_cell_scored_wholly_with_another_metric_is_named(tmp_path, capsys):
    """Issue 41, case 3: a cell whose records all say f1 sat in xnli's accuracy table with
    no note (one that mixes metrics was named)."""
    runs = two_arms(tmp_path / "runs", {i: {"metric": "f1"} for i in range(4)})
    note = foreign_metrics(load_records(runs))
    assert note == ("note: xnli/de/k1/fc hold records scored with f1, not xnli's accuracy; "
                    "their mean is not comparable with the table's other cells")
    assert foreign_metrics(load_records(two_arms(tmp_path / "same"))) is None
    from fsxlt.cli import run_app

    assert run_app(["report", str(runs)]) == 0
    assert "xnli/de/k1/fc hold records scored with f1" in capsys.readouterr().err


def test_arms_side_by_side_on_other_bucket_sets_are_named(tmp_path, capsys):
    """Issue 41, case 4: the plain report put two arms of the same task, language and K
    side by side though one ran on a set sampled again (``--compare`` refused the pair)."""
    runs = two_arms(tmp_path / "runs", {i: {"bucket": f"again-{i}"} for i in range(4)})
    note = other_bucket_sets(load_records(runs))
    assert note.startswith("note: xnli/de/k1 (bucket 00: fc, full): arms ran on different "
                           "bucket sets")
    assert other_bucket_sets(load_records(two_arms(tmp_path / "same"))) is None
    from fsxlt.cli import run_app

    assert run_app(["report", str(runs)]) == 0
    assert "arms ran on different bucket sets" in capsys.readouterr().err
