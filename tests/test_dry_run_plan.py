"""Issue 73, item 1: the dry run is the plan of the study. Every missing input at once
(starts with the command that writes each, bucket sets, dev, test and source files), exit
1 while one is missing and 0 when the plan is complete; the plan's size and its cost in
device-hours from measured rates (the study's finished records, or a benchmark's figures),
with the assumption named."""

from __future__ import annotations

import json
import shutil

import pytest

from fsxlt.cli import run_app
from fsxlt.execution import expand, parse_config
from fsxlt.execution.cost import Rate, bench_rates, plan_cost, record_rates
from tests.sweep_fixtures import N_BUCKETS, build_study, sweep_config, write_config

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")


@pytest.fixture(scope="module")
def study(tmp_path_factory):
    return build_study(tmp_path_factory.mktemp("study"))


def release_shaped(study, tmp_path):
    """A data folder with de's test file and without fr's, the store without any ar set, and
    a start still to source-train, its English files absent too."""
    data = tmp_path / "data"
    data.mkdir(parents=True)
    shutil.copy(study["data"] / "test-de.tsv", data / "test-de.tsv")
    return write_config(tmp_path / "sweep.yaml", sweep_config(
        study, tmp_path / "runs", data_dir=str(data), start=str(tmp_path / "ckpt" / "x"),
        tasks={"xnli": {"languages": ["de", "fr", "ar"], "k": [1, 2]}})), data


def test_every_missing_input_is_listed_at_once_and_the_plan_exits_1(study, tmp_path,
                                                                        capsys):
    config, data = release_shaped(study, tmp_path)
    assert run_app(["sweep", str(config), "--dry-run"]) == 1
    captured = capsys.readouterr()
    missing = [line[len("missing: "):] for line in captured.err.splitlines()
               if line.startswith("missing: ")]
    store = study["buckets"] / "xnli"
    assert missing == [
        f"{data / 'train-en.tsv'}: en train file of xnli not found, which fsxlt "
        f"source-train reads to write {tmp_path / 'ckpt' / 'x'}",
        f"{data / 'dev-en.tsv'}: en dev file of xnli not found, which fsxlt source-train "
        f"reads to write {tmp_path / 'ckpt' / 'x'}",
        # a task's missing test files in one line (each once, not once a K), its sets too
        f"{data}: no test files for xnli in 2 languages (test-fr.tsv, test-ar.tsv) (labelled "
        "ones: docs/sampling.md#what-a-study-on-the-published-buckets-needs)",
        f"{store}: no bucket sets for xnli in 1 language (2 sets: ar k1,k2); import them "
        f"(fsxlt buckets import-published RELEASE --out {study['buckets']} --task xnli) or "
        "draw them (fsxlt sample)",
    ]
    starts = [line for line in captured.err.splitlines() if line.startswith("start missing")]
    assert len(starts) == 1 and starts[0].endswith(
        f"fsxlt source-train --task xnli --data-dir {data} --target de --target fr --target ar "
        f"--out {tmp_path / 'ckpt' / 'x'}")
    assert "plan incomplete: 7 missing inputs" in captured.err
    # the cells whose inputs are there are planned: de's runs, waiting for the start
    ids = [line.split("\t")[0] for line in captured.out.splitlines()]
    assert len(ids) == 2 * N_BUCKETS and all(i.startswith("xnli/de/") for i in ids)
    assert not (tmp_path / "runs").exists()


def test_a_complete_plan_exits_0_and_a_sweep_still_stops_at_the_first_gap(study, tmp_path,
                                                                          capsys):
    config = write_config(tmp_path / "sweep.yaml", sweep_config(study, tmp_path / "runs"))
    assert run_app(["sweep", str(config), "--dry-run"]) == 0
    err = capsys.readouterr().err
    assert "missing: " not in err and "plan incomplete" not in err
    gappy, _ = release_shaped(study, tmp_path / "gappy")
    assert run_app(["sweep", str(gappy)]) == 2
    assert len(capsys.readouterr().err.strip().splitlines()) == 1


def test_a_dry_run_lists_a_test_file_that_is_the_dev_set(study, tmp_path, capsys):
    """What the sweep refuses of its dev and test sets, the plan lists."""
    data = tmp_path / "data"
    shutil.copytree(study["data"], data)
    remaining = study["buckets"] / "xnli" / "de" / "k1" / "dev-remaining.jsonl"
    lines = [json.loads(line) for line in remaining.read_text().splitlines()]
    (data / "test-de.tsv").write_text("".join(
        f"{row['text_a']}\t{row['text_b']}\t{row['label']}\n" for row in lines))
    config = write_config(tmp_path / "sweep.yaml", sweep_config(
        study, tmp_path / "runs", data_dir=str(data)))
    assert run_app(["sweep", str(config), "--dry-run"]) == 1
    err = capsys.readouterr().err
    assert any(line.startswith("missing: ") and "test-de.tsv" in line for line in
               err.splitlines())


def record(task="xnli", method="full", trials=((2.0, 3), (4.0, 5)), wall=10.0, dev_n=100,
           k=1):
    return {"status": "ok", "task": task, "method": method, "k": k, "device": "cpu",
            "wall_time_s": wall, "data": {"dev": {"n": dev_n}},
            "runs": [{"wall_time_s": s, "epochs": [{}] * e} for s, e in trials]}


def test_record_rates_are_what_the_records_clocked():
    rates = record_rates([record(), record(trials=((6.0, 4),), wall=9.0, dev_n=50),
                          record(method="fc", trials=((1.0, 10),), wall=2.0),
                          record(k=0), {"status": "error", "task": "xnli"}])
    full = rates[("xnli", "full")]
    assert full.per_example == pytest.approx(12.0 / (8 * 100 + 4 * 50))
    assert full.per_record == pytest.approx(((10 - 6) + (9 - 6)) / 2)
    assert full.epochs == pytest.approx(12 / 3) and full.device == "cpu"
    assert rates[("xnli", "fc")].epochs == 10
    assert Rate(1.0, 0.5, 3.0, None, "", "cpu").seconds(4, 10, 20, True) == 4 * 10 * 11 + 3
    assert Rate(1.0, 0.5, 3.0, None, "", "cpu").seconds(4, 10, 20, False) == 3


def bench_figures(device="NVIDIA H100 80GB HBM3"):
    """A benchmark's JSON as scripts/bench_gpu.py writes it (the parts the cost reads)."""
    return {"device": device, "evaluation": {
        "xnli": {"wordpieces_per_s": 50000.0, "dev_examples": 100, "dev_wordpieces": 4000},
        "panx": {"wordpieces_per_s": 40000.0, "dev_examples": 100, "dev_wordpieces": 2000}},
        "sweep": {shape: {"workers": 2, "runs": 8, "dev_evaluations": 32,
                          "dev_wordpieces_evaluated": 320000,
                          "worker_seconds": {"epochs": 40.0, "per_run": 16.0, "per_group": 4.0}}
                  for shape in ("xnli", "panx")}}


def test_bench_rates_split_a_sweep_into_its_parts():
    rate = bench_rates(bench_figures(), "xnli", tagging=False)
    evaluating = 320000 / 50000.0
    assert rate.per_epoch == pytest.approx((40.0 / 2 - evaluating) / 32)
    assert rate.per_example == pytest.approx(50 / 50000.0)  # XNLI's 50 wordpieces
    assert rate.per_record == pytest.approx(16.0 / 2 / 8) and rate.epochs is None
    assert bench_rates(bench_figures(), "synth-topic", tagging=False).per_example == \
        pytest.approx(40 / 50000.0)  # the shape's own mean where the task is not known
    assert bench_rates({"sweep": {}, "evaluation": {}}, "xnli", False) is None


def test_the_plan_is_costed_from_records_first_then_the_bench(study, tmp_path):
    plan = expand(parse_config(sweep_config(study, tmp_path / "runs", lrs=[1e-3, 1e-2],
                                            max_epochs=8)))
    sizes = lambda run: 7  # noqa: E731
    cost = plan_cost(plan.runs, [record(dev_n=7)], None, None, sizes)
    measured = record_rates([record(dev_n=7)])[("xnli", "full")]
    one = 2 * measured.epochs * measured.per_example * 7 + measured.per_record
    assert cost.runs == len(plan.runs) == 20 and cost.trials == 40
    assert cost.seconds["xnli"] == pytest.approx(20 * one) and not cost.uncosted
    # a record's clock is one worker's: two workers share the device's hours
    assert plan_cost(plan.runs, [record(dev_n=7)], None, None, sizes, workers=2).seconds[
        "xnli"] == pytest.approx(10 * one)
    bench = bench_figures()
    cost = plan_cost(plan.runs, [], bench, None, sizes, workers=2)  # the device's already
    rate = bench_rates(bench, "xnli", False)
    assert cost.seconds["xnli"] == pytest.approx(20 * rate.seconds(2, 4.0, 7, True))
    assert cost.assumed["xnli"] == "4 epochs a learning rate (half the cap)"
    assert plan_cost(plan.runs, [], bench, 6.0, sizes).seconds["xnli"] == \
        pytest.approx(20 * rate.seconds(2, 6.0, 7, True))
    assert plan_cost(plan.runs, [], None, None, sizes).uncosted == {"xnli": 20}


def test_the_dry_run_prints_size_and_cost_on_the_benchmarked_device(study, tmp_path, capsys):
    bench = tmp_path / "h100.json"
    bench.write_text(json.dumps(bench_figures()))
    config = write_config(tmp_path / "sweep.yaml", sweep_config(study, tmp_path / "runs"))
    assert run_app(["sweep", str(config), "--dry-run", "--rates", str(bench),
                    "--assume-epochs", "2"]) == 0
    err = capsys.readouterr().err.splitlines()
    assert "size: 20 adapting runs to run, 20 learning-rate trials of at most 3 epochs" in err
    cost = next(line for line in err if line.startswith("cost: "))
    assert "device-hours on NVIDIA H100 80GB HBM3 (xnli " in cost
    assert any("rates from the benchmark's xnli figures; assumed 2 epochs a learning rate"
               in line for line in err)


@pytest.mark.parametrize("args, message", [
    (["--rates", "{bench}"], "--rates and --assume-epochs cost a plan: they go with --dry-run"),
    (["--dry-run", "--rates", "{junk}"], "not a scripts/bench_gpu.py --json file"),
])
def test_cost_options_are_refused_in_one_line_first(study, tmp_path, capsys, args, message):
    (tmp_path / "junk.json").write_text(json.dumps({"device": "x"}))
    (tmp_path / "bench.json").write_text(json.dumps(bench_figures()))
    config = write_config(tmp_path / "sweep.yaml", sweep_config(study, tmp_path / "runs"))
    args = [a.format(bench=tmp_path / "bench.json", junk=tmp_path / "junk.json") for a in args]
    assert run_app(["sweep", str(config), *args]) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and len(err.splitlines()) == 1
    assert not (tmp_path / "runs").exists()


def test_records_rerun_only_for_their_predictions_still_cost_the_plan(study, tmp_path,
                                                                      capsys):
    """A finished sweep asked again with --save-predictions reruns every run; its own
    records, finished but without predictions, measure what that costs."""
    config = write_config(tmp_path / "sweep.yaml", sweep_config(
        study, tmp_path / "runs", methods=["fc"], max_epochs=1,
        tasks={"xnli": {"languages": ["de"], "k": [1]}}))
    assert run_app(["sweep", str(config), "--workers", "0", "--threads", "1"]) == 0
    capsys.readouterr()
    assert run_app(["sweep", str(config), "--dry-run", "--save-predictions"]) == 0
    err = capsys.readouterr().err
    assert f"{N_BUCKETS} to run ({N_BUCKETS} no-predictions)" in err
    assert "rates from 5 finished records of this study" in err and "not costed" not in err
