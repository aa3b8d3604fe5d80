"""fsxlt sweep: expansion, grouping, resume after SIGKILL, error records, Ray, shipped configs."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from fsxlt.cli import run_app
from fsxlt.errors import FsxltError
from fsxlt.execution import expand, load_config, parse_config, run_sweep, sweep_status
from fsxlt.report import write_report
from fsxlt.training import strip_timings
from tests.sweep_fixtures import (
    KS,
    LANGS,
    N_BUCKETS,
    build_study,
    sweep_config,
    write_config,
)

N_RUNS = len(LANGS) * len(KS) * N_BUCKETS
REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def study(tmp_path_factory):
    return build_study(tmp_path_factory.mktemp("study"))


@pytest.fixture(scope="module")
def reference(study, tmp_path_factory):
    """An uninterrupted sweep (two local worker processes) and its report."""
    root = tmp_path_factory.mktemp("reference")
    result = run_sweep(parse_config(sweep_config(study, root / "runs")), workers=2)
    assert len(result.completed) == N_RUNS and not result.failed
    write_report(root / "runs", root / "report", "md", expected=N_BUCKETS)
    return root


def records(runs: Path) -> dict[str, dict]:
    return {p.relative_to(runs).as_posix(): json.loads(p.read_text())
            for p in sorted(runs.rglob("*.json"))}


def same_tree(a: Path, b: Path) -> None:
    """Every file alike, byte for byte; a report page less its measured run times and the
    machine's line (a run's clocks, and the thread count of the test process it ran in)."""
    from fsxlt.report.reproducibility import without_run_times

    files_a = sorted(p.relative_to(a) for p in a.rglob("*") if p.is_file())
    assert files_a == sorted(p.relative_to(b) for p in b.rglob("*") if p.is_file())
    for rel in files_a:
        if rel.suffix in (".md", ".html"):
            assert without_run_times((a / rel).read_text(encoding="utf-8"), machine=True) == \
                without_run_times((b / rel).read_text(encoding="utf-8"), machine=True), rel
        else:
            assert (a / rel).read_bytes() == (b / rel).read_bytes(), rel


def test_dry_run_lists_every_run_and_writes_nothing(study, tmp_path, capsys):
    config = write_config(tmp_path / "sweep.yaml", sweep_config(study, tmp_path / "runs"))
    assert run_app(["sweep", str(config), "--dry-run"]) == 0
    captured = capsys.readouterr()
    lines = captured.out.strip().splitlines()
    assert len(lines) == N_RUNS
    assert lines[0].split("\t")[:2] == ["xnli/de/k1/full/00", "missing"]
    assert f"{N_RUNS} to run" in captured.err and "in 2 groups" in captured.err
    assert not (tmp_path / "runs").exists()
    assert run_app(["sweep", str(config), "--dry-run", "--lang", "fr", "--k", "2"]) == 0
    assert len(capsys.readouterr().out.strip().splitlines()) == N_BUCKETS


def test_dry_run_lists_the_runs_of_a_start_not_trained_yet(study, tmp_path, capsys):
    """Before source-training, a dry run lists the runs (as the arm they will have), names
    the missing checkpoint in one line with the command that writes it, and exits 1 (the
    plan is incomplete); a real run still refuses it before writing."""
    missing = tmp_path / "ckpt" / "xnli-mbert"
    config = write_config(tmp_path / "sweep.yaml",
                          sweep_config(study, tmp_path / "runs", start=str(missing)))
    assert run_app(["sweep", str(config), "--dry-run"]) == 1
    captured = capsys.readouterr()
    lines = [line.split("\t") for line in captured.out.strip().splitlines()]
    assert len(lines) == N_RUNS and {why for _, why, _ in lines} == {"no start"}
    assert lines[0][0] == "xnli/de/k1/full/00"  # the source-trained arm, as it will be
    notes = [line for line in captured.err.splitlines() if line.startswith("start missing")]
    assert notes == [f"start missing: {missing} (task xnli), {N_RUNS} runs wait for it: "
                     f"fsxlt source-train --task xnli --data-dir {study['data']} "
                     f"--target de --target fr --out {missing}"]
    assert f"{N_RUNS} to run ({N_RUNS} no start)" in captured.err
    assert run_app(["sweep", str(config)]) == 2
    err = capsys.readouterr().err.strip()
    assert f"{missing}: starting checkpoint for xnli not found" in err
    assert len(err.splitlines()) == 1 and not (tmp_path / "runs").exists()


def test_a_missing_start_written_as_shipped_configs_write_it_never_asks_the_hub(
        study, tmp_path, capsys, monkeypatch):
    """Issue 73, item 1: ``start: ckpt/{task}-mbert`` (relative, shaped like a hub id) that
    does not exist yet is a checkpoint still to source-train: the dry run plans it without
    asking the hub (closed here), and names it among the missing inputs (exit 1)."""
    from fsxlt import identity

    def closed(*args, **kwargs):
        raise AssertionError("the hub was asked about a start that does not exist")

    monkeypatch.setattr(identity, "hub_commit", closed)
    monkeypatch.chdir(tmp_path)
    config = write_config(tmp_path / "sweep.yaml", sweep_config(
        study, tmp_path / "runs", start="ckpt/{task}-mbert"))
    assert run_app(["sweep", str(config), "--dry-run"]) == 1
    err = capsys.readouterr().err
    assert f"start missing: ckpt/xnli-mbert (task xnli), {N_RUNS} runs wait for it: " in err


def test_no_zero_shot_record_from_another_test_set(study, tmp_path, capsys):
    """The K=0 row is the checkpoint's zero-shot score only if it scored the runs' test set:
    a checkpoint whose test set of one language differs gets no K=0 record there, said."""
    import shutil

    start = shutil.copytree(study["checkpoint"], tmp_path / "ckpt")
    meta_path = start / "fsxlt_checkpoint.json"
    meta = json.loads(meta_path.read_text(encoding="utf-8"))
    changed = LANGS[0]
    assert meta["data"]["target_test"][changed]["sha256"]
    meta["data"]["target_test"][changed]["sha256"] = "0" * 64
    meta_path.write_text(json.dumps(meta), encoding="utf-8")
    plan = expand(parse_config(sweep_config(study, tmp_path / "runs", start=str(start))))
    assert [z.language for z in plan.zero_shot] == list(LANGS[1:])
    assert len(plan.notes) == 1 and plan.notes[0].startswith(f"xnli/{changed}: no K=0 record")
    config = write_config(tmp_path / "s.yaml", sweep_config(study, tmp_path / "runs",
                                                            start=str(start)))
    assert run_app(["sweep", str(config), "--dry-run"]) == 0
    assert f"xnli/{changed}: no K=0 record" in capsys.readouterr().err


def test_expansion_grouping_and_hashes(study, tmp_path):
    config = parse_config(sweep_config(study, tmp_path / "runs", methods=["full", "fc"]))
    plan = expand(config)
    assert len(plan.runs) == 2 * N_RUNS
    assert len({r.config_hash for r in plan.runs}) == len(plan.runs)
    assert {r.group_key[:3] for r in plan.runs} == {("xnli", lang, str(study["checkpoint"]))
                                                   for lang in LANGS}
    assert all(r.group_key[3] == r.test_path for r in plan.runs)
    assert plan.runs[0].record_path.endswith("runs/xnli/de/k1/fc/00.json")
    assert plan.runs[0].dev_path.endswith("k1/dev-remaining.jsonl")
    assert [z.language for z in plan.zero_shot] == list(LANGS)
    again = expand(parse_config(sweep_config(study, tmp_path / "runs", methods=["full", "fc"])))
    assert [r.config_hash for r in again.runs] == [r.config_hash for r in plan.runs]
    longer = expand(parse_config(sweep_config(study, tmp_path / "runs", max_epochs=4)))
    assert not {r.config_hash for r in longer.runs} & {r.config_hash for r in plan.runs}


def test_each_group_loads_its_start_once(study, tmp_path, monkeypatch):
    from fsxlt import training
    from fsxlt.training import adapt as adapt_module

    loads, engines, swaps = [], [], []
    real_load, real_init = training.load_start, adapt_module.AdaptEngine.__init__
    real_replace = adapt_module.AdaptEngine.replace_dev

    def counting_load(*args, **kwargs):
        loads.append(args[0])
        return real_load(*args, **kwargs)

    def counting_init(self, *args, **kwargs):
        engines.append(kwargs["dev_source"])
        real_init(self, *args, **kwargs)

    def counting_replace(self, dev, dev_source=None):
        swaps.append(dev_source)
        real_replace(self, dev, dev_source)

    monkeypatch.setattr(training, "load_start", counting_load)
    monkeypatch.setattr(adapt_module.AdaptEngine, "__init__", counting_init)
    monkeypatch.setattr(adapt_module.AdaptEngine, "replace_dev", counting_replace)
    config = parse_config(sweep_config(study, tmp_path / "runs", methods=["full", "fc"]))
    result = run_sweep(config, workers=0)
    assert len(result.completed) == 2 * N_RUNS
    assert len(loads) == len(LANGS)  # weights loaded once per (task, language, start)
    # one engine per group (its test set tokenized once); XNLI's dev set differs per K,
    # so the engine swaps it for every K after the first
    assert len(engines) == len(LANGS)
    assert len(swaps) == len(LANGS) * (len(KS) - 1)
    assert len(set(engines + swaps)) == len(LANGS) * len(KS)


def test_sigkill_and_resume_gives_the_same_records_and_report(study, reference, tmp_path):
    runs = tmp_path / "runs"
    config = write_config(tmp_path / "sweep.yaml", sweep_config(study, runs))
    proc = subprocess.Popen([sys.executable, "-m", "fsxlt", "sweep", str(config),
                             "--workers", "2"], cwd=REPO, start_new_session=True,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 300
        while len(list(runs.glob("xnli/*/k[12]/full/*.json"))) < 2:
            assert proc.poll() is None, "the sweep ended before it could be killed"
            assert time.monotonic() < deadline
            time.sleep(0.02)
    finally:
        os.killpg(proc.pid, signal.SIGKILL)  # the sweep and its workers, mid-run
        proc.wait()
    done = sorted(runs.glob("xnli/*/k[12]/full/*.json"))
    assert 2 <= len(done) < N_RUNS
    # a record cut short by hand (fsxlt writes atomically, so never by a kill) is not
    # fsxlt's: refused, and replaced only when asked
    truncated = done[0]
    truncated.write_text(truncated.read_text()[:100])
    with pytest.raises(FsxltError, match="bytes that are not a JSON record"):
        sweep_status(load_config(config))
    status = sweep_status(load_config(config), replace=True)
    why = {run.id: reason for run, reason in status.pending}
    assert why[f"xnli/{truncated.parts[-4]}/{truncated.parts[-3]}/full/{truncated.stem}"] \
        == "replace"
    assert len(status.done) == len(done) - 1
    assert run_app(["sweep", str(config), "--workers", "2", "--replace"]) == 0
    resumed = records(runs)
    untouched = {str(p.relative_to(runs)) for p in done[1:]}
    assert len(resumed) == N_RUNS + len(LANGS)
    reference_records = records(reference / "runs")
    assert {k: strip_timings(v) for k, v in resumed.items()} == {
        k: strip_timings(v) for k, v in reference_records.items()}
    assert all(resumed[k] == json.loads((runs / k).read_text()) for k in untouched)
    write_report(runs, tmp_path / "report", "md", expected=N_BUCKETS)
    same_tree(reference / "report", tmp_path / "report")  # tables, cells.csv and plots
    assert sweep_status(load_config(config)).pending == []


def test_ctrl_c_on_a_sweep_with_workers_is_one_line_and_it_resumes(study, reference,
                                                                   tmp_path):
    """Issue 73, item 7: SIGINT to the sweep and its workers (a terminal's Ctrl-C): no
    traceback from any worker, one line saying what is kept; the rerun finishes it."""
    runs = tmp_path / "runs"
    config = write_config(tmp_path / "sweep.yaml", sweep_config(study, runs))
    proc = subprocess.Popen([sys.executable, "-m", "fsxlt", "sweep", str(config),
                             "--workers", "2"], cwd=REPO, start_new_session=True,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        deadline = time.monotonic() + 300
        while len(list(runs.glob("xnli/*/k[12]/full/*.json"))) < 1:
            assert proc.poll() is None, "the sweep ended before it could be interrupted"
            assert time.monotonic() < deadline
            time.sleep(0.02)
        os.killpg(proc.pid, signal.SIGINT)  # the sweep and its workers, as Ctrl-C does
        _, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert proc.returncode == 130, err
    assert "Traceback" not in err and "KeyboardInterrupt" not in err, err
    assert err.strip().splitlines()[-1].startswith("interrupted: what finished is kept")
    assert run_app(["sweep", str(config), "--workers", "2"]) == 0
    assert {k: strip_timings(v) for k, v in records(runs).items()} == {
        k: strip_timings(v) for k, v in records(reference / "runs").items()}


def test_a_failing_run_writes_an_error_record_and_the_sweep_goes_on(study, tmp_path, capsys):
    from tests.train_fixtures import NLI_LABELS, nli_data, write_bucket_set

    buckets = tmp_path / "buckets"
    bad = nli_data(3, seed=3)
    bad[0] = type(bad[0])(bad[0].id, bad[0].text_a, bad[0].text_b, "no-such-label")
    write_bucket_set(buckets, "xnli", "de", 1, [nli_data(3, seed=2), bad], list(NLI_LABELS),
                     dev_remaining=nli_data(9, seed=4))
    runs = tmp_path / "runs"
    config = write_config(tmp_path / "sweep.yaml", sweep_config(
        study, runs, buckets=str(buckets), tasks={"xnli": {"languages": ["de"], "k": [1]}}))
    assert run_app(["sweep", str(config), "--workers", "0"]) == 1
    assert "1 runs completed, 1 failed" in capsys.readouterr().out
    error = json.loads((runs / "xnli/de/k1/full/01.json").read_text())
    assert error["status"] == "error" and error["error"]
    assert error["run"]["hash"].startswith("run:")
    assert json.loads((runs / "xnli/de/k1/full/00.json").read_text())["status"] == "ok"
    status = sweep_status(load_config(config))
    assert [(r.index, why) for r, why in status.pending] == [(1, "error")]
    write_report(runs, tmp_path / "report", "md", plots=False)
    text = (tmp_path / "report" / "report.md").read_text()
    assert "(n=1)" in text and "Error records (not counted): 1" in text


def test_records_of_other_settings_are_refused_unless_replaced(study, reference, tmp_path,
                                                                capsys):
    import shutil

    runs = tmp_path / "runs"
    shutil.copytree(reference / "runs", runs)
    before = records(runs)
    config = write_config(tmp_path / "sweep.yaml",
                          sweep_config(study, runs, max_epochs=2, patience=1))
    assert run_app(["sweep", str(config), "--dry-run", "--lang", "de"]) == 0
    assert f"{N_RUNS // 2} different" in capsys.readouterr().err
    assert run_app(["sweep", str(config), "--lang", "de", "--workers", "0"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "max_epochs, patience differ" in err[0] and "--replace" in err[0]
    assert records(runs) == before  # refused: nothing written
    assert run_app(["sweep", str(config), "--lang", "de", "--k", "1", "--workers", "0",
                    "--replace"]) == 0
    err = capsys.readouterr().err
    assert err.count("replacing ") == N_RUNS // 4 and "(max_epochs, patience differ)" in err


@pytest.mark.parametrize("change, message", [
    ({"tasks": {"nosuchtask": {}}}, "unknown task"),
    ({"tasks": {"xnli": {"languages": ["xx"]}}}, "unknown language 'xx'"),
    ({"methods": ["lora-x"]}, "unknown method 'lora-x'"),
    ({"buckets": "/nonexistent"}, "no bucket set"),
    ({"workers": 3}, "unknown key(s): workers"),
    ({"lr": [1e-3]}, "unknown key(s): lr (did you mean 'lrs'?) (valid: "),
    ({"n_buckets": 9}, "holds 5 buckets"),
])
def test_config_errors_are_one_line(study, tmp_path, capsys, change, message):
    """A sweep refuses in one line; a dry run too, except what a cell lacks (a bucket set,
    buckets), which it lists with every other gap, and exits 1 (tests/test_dry_run_plan)."""
    config = write_config(tmp_path / "sweep.yaml",
                          sweep_config(study, tmp_path / "runs", **change))
    cell = "buckets" in change or "n_buckets" in change
    assert run_app(["sweep", str(config)] + ([] if cell else ["--dry-run"])) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and len(err.splitlines()) == 1 and "Traceback" not in err
    assert not (tmp_path / "runs").exists()
    if cell:
        assert run_app(["sweep", str(config), "--dry-run"]) == 1
        err = capsys.readouterr().err
        assert "missing: " in err and message in err and "plan incomplete" in err


def test_missing_config_is_one_line(tmp_path, capsys):
    assert run_app(["sweep", str(tmp_path / "nope.yaml")]) == 2
    assert "sweep config not found" in capsys.readouterr().err


def test_shipped_configs_reproduce_the_study_grid():
    from fsxlt.tasks import get_task

    study = load_config(REPO / "configs/sweeps/study.yaml")
    plans = {p.task: p for p in study.tasks}
    assert set(plans) == {"xnli", "pawsx", "mldoc", "marc", "udpos", "panx"}
    for name, plan in plans.items():
        spec = get_task(name)
        assert set(plan.languages) == set(spec.languages) - {"en"}
        assert plan.k == spec.sampling.k_values and plan.n_buckets == 40
        assert plan.methods == (("full", "fc", "fc-pooler", "cos-pooler", "fc-reset-pooler")
                                if name == "marc" else ("full",))
        assert plan.lrs == (1e-5, 3e-5, 5e-5, 7e-5) and plan.max_epochs == 50
    ablation = load_config(REPO / "configs/sweeps/no-source-ablation.yaml")
    assert all(p.no_source and p.no_source["methods"] == ["full"] for p in ablation.tasks)


def test_the_dont_stop_preset_runs_the_peer_s_protocol(tmp_path, monkeypatch):
    from fsxlt.training.optim import PEER

    monkeypatch.chdir(tmp_path)
    for task in ("panx", "xnli"):
        (tmp_path / "data" / task).mkdir(parents=True)
        (tmp_path / "data" / task / "train-en.tsv").write_text("", encoding="utf-8")
    preset = load_config(REPO / "configs/sweeps/dont-stop.yaml")
    for plan in preset.tasks:
        assert plan.regimes == ("sequential", "joint-macro", "mixup", "multi")
        assert plan.regime_options == {"batch_size": 16, "target_batch_size": 16,
                                       "epoch": "source-pass", "alpha": 0.4,
                                       "languages": list(plan.languages),
                                       "target_restart": True}
        assert plan.optimizer == PEER and plan.lrs == (2e-5,)
        assert plan.max_epochs == plan.patience == 10 and plan.average_last == 1
        assert plan.label_all_tokens == (plan.task == "panx")
