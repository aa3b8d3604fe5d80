"""A run's identity holds everything that changes its numbers (issue 72, item 1): each
setting a record's identity does not hold is changed in turn on a tiny study and leaves
the records as they were (but for the field that names the machine's thread count), and
``micro_batch``, which changes what a run trains, is in the identity."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fsxlt.cli import run_app
from fsxlt.execution import expand, parse_config, run_sweep
from fsxlt.training import strip_timings
from tests.sweep_fixtures import build_study, sweep_config, write_config

TASKS = {"xnli": {"languages": ["de"], "k": [1, 2]}}


@pytest.fixture(scope="module")
def study(tmp_path_factory):
    return build_study(tmp_path_factory.mktemp("study"))


def _records(runs: Path, drop: tuple[str, ...] = ()) -> dict[str, dict]:
    found = {}
    for path in sorted(runs.rglob("*.json")):
        record = strip_timings(json.loads(path.read_text()))
        for key in drop:
            record.pop(key, None)
        found[path.relative_to(runs).as_posix()] = record
    return found


def _first_difference(a, b, path: str = "") -> str | None:
    """Where two records first differ (a JSON path and both values), or None."""
    if isinstance(a, dict) and isinstance(b, dict):
        for key in sorted(set(a) | set(b)):
            found = _first_difference(a.get(key), b.get(key), f"{path}/{key}")
            if found:
                return found
        return None
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            found = _first_difference(x, y, f"{path}[{i}]")
            if found:
                return found
        return None
    return None if a == b else f"{path}: {a!r} != {b!r}"


def _close(a, b, skip: str, rel: float = 1e-5) -> bool:
    """Whether two records are equal but for floats within ``rel`` and the key ``skip``."""
    if isinstance(a, dict) and isinstance(b, dict):
        keys = (set(a) | set(b)) - {skip}
        return all(_close(a.get(k), b.get(k), skip, rel) for k in keys)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_close(x, y, skip, rel)
                                        for x, y in zip(a, b, strict=True))
    if isinstance(a, float) and isinstance(b, float):
        return abs(a - b) <= rel * max(abs(a), abs(b), 1.0)
    return a == b


@pytest.fixture(scope="module")
def baseline(study, tmp_path_factory):
    """The study's de runs with every setting at its default, in this process."""
    runs = tmp_path_factory.mktemp("baseline") / "runs"
    result = run_sweep(parse_config(sweep_config(study, runs, n_buckets=2, tasks=TASKS)),
                       workers=0, threads=1)
    assert len(result.completed) == 4 and not result.failed
    return runs


# every setting of a sweep that no identity holds, and what changing it means here
UNHELD = {
    "eval_max_tokens": ({"eval_max_tokens": 24}, {}),  # many small evaluation batches
    "workers": ({}, {"workers": 2}),  # two worker processes, runs spread over them
    "threads": ({}, {"threads": 2}),
    # the GPU each worker is pinned to, in another order: a worker sees its GPU as its
    # only one (CUDA_VISIBLE_DEVICES), so a record names none; run here on the CPU, where
    # the pinning is all that changes (two GPUs would test the GPUs' numerics too)
    "devices": ({}, {"workers": 2, "devices": ["1", "0"]}),
    "save_predictions": ({}, {"save_predictions": True}),
    "progress": ({}, {"progress": True}),
}


@pytest.mark.parametrize("setting", sorted(UNHELD))
def test_a_setting_outside_the_identity_leaves_every_record_as_it_was(
        study, baseline, tmp_path, setting):
    config_change, run_change = UNHELD[setting]
    runs = tmp_path / "runs"
    options = {"workers": 0, "threads": 1, **run_change}
    config = parse_config(sweep_config(study, runs, n_buckets=2, tasks=TASKS,
                                       **config_change))
    assert [r.config_hash for r in expand(config).runs] == \
        [r.config_hash for r in expand(parse_config(sweep_config(
            study, baseline, n_buckets=2, tasks=TASKS))).runs]
    result = run_sweep(config, **options)
    assert len(result.completed) == 4 and not result.failed
    got = _records(runs)
    if setting == "save_predictions":  # the predictions beside each record: nothing else
        assert sorted(runs.rglob("*.predictions.jsonl"))
    if setting != "threads":  # the baseline's records, byte for byte
        assert got == _records(baseline), _first_difference(got, _records(baseline))
        return
    # CPU sums run in another order with another thread count: a float may move in its
    # last bits (seen: a training loss by 1e-7 after other tests ran in the process), so
    # the thread count is stated, not identity: every record names it, and the report
    # notes a cell that mixes counts (docs/training.md#numerics-are-pinned)
    assert {r["torch_threads"] for r in got.values() if "torch_threads" in r} == {2}
    assert _close(got, _records(baseline, ("torch_threads",)), skip="torch_threads"), \
        _first_difference(got, _records(baseline))


def test_micro_batch_is_in_the_identity_and_a_resume_with_another_is_refused(
        study, baseline, tmp_path, capsys):
    base = parse_config(sweep_config(study, baseline, n_buckets=2, tasks=TASKS))
    for value in (None, 64):
        same = parse_config(sweep_config(study, baseline, n_buckets=2, tasks=TASKS,
                                         micro_batch=value))
        assert [r.identity for r in expand(same).runs] == [r.identity for r in
                                                             expand(base).runs]
    small = parse_config(sweep_config(study, baseline, n_buckets=2, tasks=TASKS,
                                      micro_batch=2))
    planned = expand(small)
    assert {r.identity.get("micro_batch") for r in planned.runs} == {2}
    # a study resumed with another size takes none of the old records as done
    config = write_config(tmp_path / "sweep.yaml", sweep_config(
        study, baseline, n_buckets=2, tasks=TASKS, micro_batch=2))
    before = _records(baseline)
    capsys.readouterr()
    assert run_app(["sweep", str(config), "--workers", "0"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "micro_batch differ" in err[0] and "--replace" in err[0]
    assert _records(baseline) == before
    # and the numbers do move: dropout masks and padding are drawn per micro-batch
    runs = tmp_path / "small"
    assert run_app(["sweep", str(config), "--workers", "0", "--out", str(runs)]) == 0
    moved = _records(runs)
    assert moved.keys() == before.keys()
    first_losses = [
        [run["epochs"][0].get("train_loss") for run in record["runs"]]
        for name, record in sorted(moved.items()) if record.get("runs")]
    base_losses = [
        [run["epochs"][0].get("train_loss") for run in record["runs"]]
        for name, record in sorted(before.items()) if record.get("runs")]
    assert first_losses != base_losses


def test_the_report_notes_a_cell_trained_with_two_micro_batch_sizes(study, baseline,
                                                                     tmp_path):
    import shutil

    from fsxlt.report import load_records
    from fsxlt.report.notes import mixed_micro_batches

    runs = tmp_path / "runs"
    shutil.copytree(baseline, runs)
    assert mixed_micro_batches(load_records(runs)) is None
    path = runs / "xnli/de/k1/full/01.json"
    record = json.loads(path.read_text())
    record["run"]["identity"]["micro_batch"] = 8  # as a rerun with --micro-batch 8 wrote it
    path.write_text(json.dumps(record))
    note = mixed_micro_batches(load_records(runs))
    assert note == ("note: xnli/de/k1/full mix records trained with micro_batch 8 and "
                    "default; see docs/sweeps.md#failures")


def test_a_resume_with_another_thread_count_is_refused(study, baseline, tmp_path, capsys):
    """The thread count is stated, not identity, and changes CPU numerics: a sweep that
    finds finished CPU records of another count, and would run more, refuses in one line
    naming the --threads that continues them, before writing anything; with it, it runs."""
    import shutil

    runs = tmp_path / "runs"
    shutil.copytree(baseline, runs)
    (runs / "xnli/de/k2/full/01.json").unlink()
    config = write_config(tmp_path / "sweep.yaml",
                          sweep_config(study, runs, n_buckets=2, tasks=TASKS))
    before = sorted(p.relative_to(runs) for p in runs.rglob("*"))
    assert run_app(["sweep", str(config), "--workers", "0", "--threads", "2"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.endswith(
        f"{runs}: finished CPU records of this sweep ran with other torch thread counts "
        "(3 with 1) than its runs now would (2); CPU numerics depend on the count, so a "
        "study keeps one: add --threads 1 (docs/training.md#numerics-are-pinned)")
    assert len(err.splitlines()) == 1
    assert sorted(p.relative_to(runs) for p in runs.rglob("*")) == before
    assert run_app(["sweep", str(config), "--workers", "0", "--threads", "1"]) == 0
    assert (runs / "xnli/de/k2/full/01.json").is_file()
    # nothing left to run: any count is fine, nothing would be added
    assert run_app(["sweep", str(config), "--workers", "0", "--threads", "2"]) == 0


def test_the_report_says_what_ran_and_what_differs(study, baseline, tmp_path, capsys):
    """Issue 73, item 5: a settings block on report.md (encoder, start, protocol, limits,
    version; each cell's data files with their sha256), and a setting an arm's records
    disagree on named."""
    import shutil

    from fsxlt import __version__

    runs = tmp_path / "runs"
    shutil.copytree(baseline, runs)
    capsys.readouterr()
    assert run_app(["report", str(runs), "--out", str(tmp_path / "report")]) == 0
    page = (tmp_path / "report" / "report.md").read_text()
    assert "What ran (as the records say; docs/reports.md#what-ran):" in page
    line = next(text for text in page.splitlines() if text.startswith("- xnli/full: "))
    assert "encoder encoder (a local folder), start checkpoint:" in line
    assert "lrs [0.01], max_epochs 3, patience 2, max_seq_length 128" in line
    assert line.endswith(f"fsxlt {__version__}") and "differ" not in line
    record = json.loads((runs / "xnli/de/k1/full/00.json").read_text())
    dev = record["run"]["identity"]["dev"][:16]
    assert f"- xnli/de: dev dev-remaining.jsonl (sha256 {dev}); test test-de.tsv" in page
    record["run"]["identity"]["max_epochs"] = 5  # as a rerun with other settings wrote it
    (runs / "xnli/de/k1/full/00.json").write_text(json.dumps(record))
    assert run_app(["report", str(runs), "--out", str(tmp_path / "report2")]) == 0
    page = (tmp_path / "report2" / "report.md").read_text()
    assert "**differ across its records**: max_epochs 3 | 5" in page
