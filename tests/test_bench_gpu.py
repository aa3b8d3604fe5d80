"""scripts/bench_gpu.py end to end on CPU with a tiny encoder: it builds, source-trains,
samples, times evaluation, sweeps with two workers and extrapolates (no timing asserted)."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import torch

from tests.train_fixtures import ner_data, nli_data, write_conll, write_pairs

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "bench_gpu.py"


def shared_layout(root: Path) -> Path:
    """PAN-X and XNLI files laid out as ../shared/data has them (en and two targets)."""
    for i, lang in enumerate(("en", "de", "es")):
        write_conll(root / "panx" / f"train-{lang}.tsv", ner_data(120, seed=i, source=lang))
        write_conll(root / "panx" / f"dev-{lang}.tsv", ner_data(40, seed=10 + i, source=lang))
        write_pairs(root / "xnli" / f"dev-{lang}.tsv",
                    nli_data(160 if lang == "en" else 60, seed=20 + i, source=lang))
    return root


def test_the_gpu_benchmark_runs_on_cpu_and_says_what_it_measured(tmp_path, capsys):
    spec = importlib.util.spec_from_file_location("bench_gpu", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    sys.modules["bench_gpu"] = module
    threads = torch.get_num_threads()
    try:
        spec.loader.exec_module(module)
        out = tmp_path / "bench.json"
        found = module.main(["--data", str(shared_layout(tmp_path / "data")), "--tiny",
                             "--device", "cpu", "--workers", "2", "--k", "1",
                             "--buckets", "2", "--epochs", "1", "--source-limit", "100",
                             "--work", str(tmp_path / "work"), "--json", str(out)])
    finally:
        torch.set_num_threads(threads)
        sys.modules.pop("bench_gpu", None)
    assert json.loads(out.read_text()) == json.loads(json.dumps(found))
    assert found["device"] == "cpu" and found["precision"] == "fp32"
    assert found["peak_bf16_tflops"] is None  # no GPU: no share of a peak
    for task in ("panx", "xnli"):
        sweep = found["sweep"][task]
        assert sweep["groups"] == 2 and sweep["workers"] == 2
        assert sweep["runs"] == 2 * 2  # two languages x two buckets at K=1
        assert sweep["dev_evaluations"] == sweep["runs"] * 4  # 4 lrs x 1 epoch, none stopped
        assert sweep["dev_wordpieces_evaluated"] > 0 and sweep["runs_per_hour"] > 0
        paid = sweep["worker_seconds"]  # the two workers' seconds, by what they paid for
        assert paid["epochs"] > 0 and paid["per_run"] > 0
        # wall_s is rounded to 0.01 s (twice that for two workers) and each part to 0.001 s:
        # the sum may fall short of the wall time by the rounding, no more
        assert sum(paid.values()) >= 2 * sweep["wall_s"] - 0.025
        evaluation = found["evaluation"][task]
        assert 0 < evaluation["dev_wordpieces"] <= evaluation["padded_wordpieces"]
        assert evaluation["tflops"] > 0
    study = found["study"]
    assert set(study["per_task"]) == {"xnli", "pawsx", "mldoc", "marc", "udpos", "panx"}
    assert study["per_task"]["marc"]["records"] == 5 * 4 * 40  # full only, head-only left out
    assert study["device_hours"] > 0 and study["assumptions"]["average_epochs"] == 25.0
    # the study's hours from its parts, each grown by its own count
    panx, sweep = study["per_task"]["panx"], found["sweep"]["panx"]
    paid = {key: value / 2 for key, value in sweep["worker_seconds"].items()}  # 2 workers
    rate = found["evaluation"]["panx"]["wordpieces_per_s"]
    epochs = panx["records"] * 4 * 25.0
    per_epoch = max(paid["epochs"] - sweep["dev_wordpieces_evaluated"] / rate, 0.0) \
        / sweep["dev_evaluations"]
    parts = [epochs * 10000 * 18 / rate, epochs * per_epoch,
             panx["records"] * paid["per_run"] / sweep["runs"],
             panx["groups"] * paid["per_group"] / sweep["groups"]]
    assert panx["device_hours"] == round(sum(parts) / 3600, 2) and panx["groups"] == 39
    assert list(panx["parts_hours"].values()) == [round(x / 3600, 2) for x in parts]
    printed = capsys.readouterr().out
    assert "the study: about" in printed and "assumed average_epochs: 25.0" in printed
