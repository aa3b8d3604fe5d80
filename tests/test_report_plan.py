"""Issue 62, item 2: a sweep's records carry its plan (the cell's bucket indexes it runs),
so a report of a deliberate subset (``n_buckets: 2`` of a larger set) names no missing
buckets, and a bucket the sweep planned but has no record of is named."""

from __future__ import annotations

import json

from fsxlt.cli import run_app
from fsxlt.report.records import load_records
from fsxlt.report.tables import aggregate
from tests.sweep_fixtures import N_BUCKETS, build_study, sweep_config, write_config


def test_a_planned_subset_reports_no_missing_buckets_and_a_real_gap_is_named(tmp_path, capsys):
    assert N_BUCKETS > 2
    study = build_study(tmp_path / "study")
    out = tmp_path / "runs"
    config = write_config(tmp_path / "sweep.yaml", sweep_config(
        study, out, methods=["fc"], n_buckets=2, max_epochs=1,
        tasks={"xnli": {"languages": ["de"], "k": [1]}}))
    assert run_app(["sweep", str(config), "--workers", "0", "--threads", "1"]) == 0
    record = json.loads((out / "xnli/de/k1/fc/01.json").read_text())
    assert record["run"]["plan"] == {"buckets": [0, 1]}
    assert "plan" not in json.dumps(record["run"]["identity"])
    cells = aggregate(load_records(out))
    cell = cells[(cells["k"] == 1) & (cells["arm"] == "fc")].iloc[0]
    assert cell["missing"] == "" and cell["expected"] == 2 and cell["n"] == 2
    capsys.readouterr()
    assert run_app(["report", str(out)]) == 0
    assert "Missing buckets" not in capsys.readouterr().out
    (out / "xnli/de/k1/fc/01.json").unlink()  # a run the sweep planned but has no record of
    cells = aggregate(load_records(out))
    assert cells[(cells["k"] == 1) & (cells["arm"] == "fc")].iloc[0]["missing"] == "01"
    cells = aggregate(load_records(out), expected=N_BUCKETS)  # --expected-buckets decides
    assert cells[(cells["k"] == 1)].iloc[0]["missing"] == " ".join(
        f"{i:02d}" for i in range(1, N_BUCKETS))
    assert run_app(["sweep", str(config), "--workers", "0", "--threads", "1"]) == 0
    assert "1 runs completed, 0 failed, 1 already done" in capsys.readouterr().out
