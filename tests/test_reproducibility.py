"""Issue 75, item 4: the reproducibility section, computed from the records: every value
it states against the records it came from, in report.md, report.html and a file of its
own."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from fsxlt.cli import run_app
from fsxlt.fileio import atomic_write_json
from fsxlt.report import load_records
from fsxlt.report.reproducibility import reproducibility_lines

CLOCKS = [12.0, 20.0, 31.0, 40.0, 18.0, 25.0]


def record(lang: str, k: int, index: int, score: float, *, lr: float, clock: float) -> dict:
    return {
        "format": "fsxlt-adapt-run/1", "status": "ok", "task": "xnli", "language": lang,
        "k": k, "method": "full", "metric": "accuracy", "device": "cpu", "torch_threads": 2,
        "precision": "fp32", "wall_time_s": clock, "selected_lr": lr, "select_start": False,
        "bucket": {"id": f"xnli/{lang}/k{k}/{index:02d}", "index": index, "k": k,
                   "sha256": f"{lang}{k}{index}".ljust(64, "0"), "sampler": "n-way-k-shot",
                   "set_size": 40},
        "model": {"source_training": True, "encoder": "bert-base-multilingual-cased"},
        "data": {"dev": {"n": 2490, "sha256": "d" * 64, "source": f"dev-{lang}.tsv"},
                 "test": {"n": 5010, "sha256": "e" * 64, "source": f"test-{lang}.tsv"}},
        "versions": {"fsxlt": "0.14.0", "fsxlt_code": "sha256:abc", "torch": "2.13.0+cpu",
                     "transformers": "5.25.0", "python": "3.11.7"},
        "runs": [{"lr": lr, "epochs": [{"epoch": e, "dev_score": score} for e in (1, 2)]}],
        "best_epoch": 1 + index % 3, "dev_score": score - 0.01, "test_score": score,
        "run": {"identity": {"lrs": [1e-5, 3e-5], "max_epochs": 50, "patience": 10,
                             "seed": 42, "start": "checkpoint:" + "a" * 64}},
        "sweep": {"config_hash": "sweep:test", "arm": "full"}}


@pytest.fixture
def runs(tmp_path) -> Path:
    root = tmp_path / "runs"
    clocks = iter(CLOCKS)
    for lang in ("de", "fr"):
        atomic_write_json(root / "xnli" / lang / "k0" / "zero-shot.json", {
            "format": "fsxlt-zero-shot/1", "status": "ok", "task": "xnli", "language": lang,
            "k": 0, "test_score": 0.6, "metric": "accuracy"})
        for index in range(3):
            atomic_write_json(root / "xnli" / lang / "k1" / "full" / f"{index:02d}.json",
                              record(lang, 1, index, 0.6 + index / 100,
                                     lr=1e-5 if index else 3e-5, clock=next(clocks)))
    return root


def test_every_value_the_section_states_comes_from_the_records(runs):
    lines = reproducibility_lines(load_records(runs))
    text = "\n".join(lines)
    assert "- **xnli / full**: 6 adapting runs in 2 cells (2 languages: de, fr; K = 1; " \
           "3 buckets a cell), beside 2 zero-shot (K=0) records." in text
    assert "learning-rate grid [1e-05, 3e-05]" in text and "epochs at most 50" in text
    assert "after 10 epochs without a better dev score" in text
    assert "Chosen: 1e-05 (4 runs), 3e-05 (2 runs); best epoch median 2 (range 1-3)" in text
    assert "6 distinct buckets from sets of 40, sampled by n-way-k-shot" in text
    assert "dev sets of 2490 examples, test sets of 5010 examples" in text
    assert f"Run time: {sum(CLOCKS):,.0f} s in all" in text
    clocks = sorted(CLOCKS)
    assert f"median {(clocks[2] + clocks[3]) / 2:g} s (range 12-40 s) a run" in text
    assert "device cpu (6 runs), torch threads 2; precision fp32." in text
    assert "  - Run time: 146 s in all" in text
    assert ("fsxlt 0.14.0, fsxlt code sha256:abc, torch 2.13.0+cpu, transformers 5.25.0, "
            "python 3.11.7") in text


def test_the_section_changes_with_the_records(runs):
    path = runs / "xnli" / "de" / "k1" / "full" / "00.json"
    changed = json.loads(path.read_text())
    changed["wall_time_s"], changed["run"]["identity"]["max_epochs"] = 100.0, 30
    path.write_text(json.dumps(changed))
    text = "\n".join(reproducibility_lines(load_records(runs)))
    assert f"Run time: {sum(CLOCKS) - CLOCKS[0] + 100:,.0f} s in all" in text
    assert "epochs at most 30, 50" in text


def test_the_report_prints_it_and_writes_it_alone(runs, tmp_path):
    out = tmp_path / "report"
    assert run_app(["report", str(runs), "--out", str(out), "--no-plots"]) == 0
    alone = (out / "reproducibility.md").read_text(encoding="utf-8")
    page = (out / "report.md").read_text(encoding="utf-8")
    html = (out / "report.html").read_text(encoding="utf-8")
    assert alone.startswith("# Reproducibility\n") and "## Reproducibility" in page
    body = alone.split("\n", 2)[2].strip()
    assert body in page
    assert "<h2>Reproducibility</h2>" in html and "xnli / full: 6 adapting runs" in html
    assert re.search(r"<li>Compute: device cpu \(6 runs\)", html)
    assert re.search(r"<li>Run time: 146 s in all", html)


def test_a_comparison_of_two_reports_can_leave_the_clocks_and_the_machine_out(runs):
    from fsxlt.report.reproducibility import without_run_times

    text = "\n".join(reproducibility_lines(load_records(runs))) + "\n"
    assert "Run time:" not in without_run_times(text) and "Compute:" in without_run_times(text)
    assert "Compute:" not in without_run_times(text, machine=True)
    html = "<ul><li>Compute: device cpu</li><li>Run time: 9 s</li><li>Software: x</li></ul>"
    assert without_run_times(html) == "<ul><li>Compute: device cpu</li><li>Software: x</li></ul>"
    assert without_run_times(html, machine=True) == "<ul><li>Software: x</li></ul>"


def test_ctrl_c_inside_an_interpreter_callback_prints_no_traceback(monkeypatch):
    """The CLI's unraisable hook drops a KeyboardInterrupt the interpreter could not raise
    (Ctrl-C inside an import lock's callback) and hands anything else on."""
    import sys
    import types

    from fsxlt.cli import _quiet_interrupt

    seen = []
    monkeypatch.setattr(sys, "__unraisablehook__", seen.append)
    _quiet_interrupt(types.SimpleNamespace(exc_value=KeyboardInterrupt()))
    other = types.SimpleNamespace(exc_value=ValueError("x"))
    _quiet_interrupt(other)
    assert seen == [other]
