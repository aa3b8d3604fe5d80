"""NaN scores are never dropped silently, compared or picked (issue 31, mechanism 7).

fsxlt writes strict JSON (no NaN), so a NaN in a record was put there by hand or by
another tool. fsxlt 0.2.0 read it as a score: ``report`` averaged it in, ``report
--compare`` paired it and ``submission --bucket best-dev`` picked the split whose dev
score was NaN over one of 0.9. Now such a record is unreadable: listed by ``report``,
refused by ``--compare``, never a candidate for ``best-dev``.
"""

from __future__ import annotations

from pathlib import Path

from fsxlt.cli import run_app
from fsxlt.report import load_records
from tests.test_faults_like_with_like import two_arms
from tests.test_submission_folder import fake_run


def nan_record(path: Path, field: str) -> None:
    text = path.read_text().replace(f'"{field}": ', f'"{field}": NaN, "was": ', 1)
    path.write_text(text)
    assert "NaN" in path.read_text()


def test_report_lists_a_nan_score_as_unreadable(tmp_path, capsys):
    runs = two_arms(tmp_path)
    nan_record(runs / "xnli/de/k1/fc/02.json", "test_score")
    records = load_records(runs)
    assert [(p, why) for p, why in records.unreadable] == [
        ("xnli/de/k1/fc/02.json", "not valid JSON: holds NaN, which JSON has no number for")]
    assert len(records.scores[records.scores["arm"] == "fc"]) == 3
    assert run_app(["report", str(runs), "--expected-buckets", "4"]) == 0
    assert "02.json: unreadable run record, not counted: not valid JSON: holds NaN" in \
        capsys.readouterr().err


def test_compare_refuses_an_arm_with_a_nan_score(tmp_path, capsys):
    runs = two_arms(tmp_path)
    nan_record(runs / "xnli/de/k1/fc/02.json", "test_score")
    status = run_app(["report", str(runs), "--compare", "full", "fc"])
    err = capsys.readouterr().err.strip().splitlines()
    assert status == 2
    assert err[-1].startswith(f"error: {runs / 'xnli/de/k1/fc/02.json'}: not valid JSON")
    assert "would leave its bucket out" in err[-1]


def test_best_dev_never_picks_a_nan_dev_score(tmp_path, capsys):
    runs = tmp_path / "runs"
    for stem, dev in (("00", 0.5), ("01", 0.9)):  # 00 first: 0.2.0 kept its NaN as best
        fake_run(runs, "qadsm", "fr", 1, stem, file=f"{stem}/QADSM/fr.prediction",
                 text=f"{stem}\n", dev=dev)
    nan_record(runs / "qadsm/fr/k1/full/00.json", "dev_score")
    out = tmp_path / "sub"
    assert run_app(["submission", str(runs), "--out", str(out), "--bucket", "best-dev"]) == 0
    assert (out / "QADSM/fr.prediction").read_text() == "01\n"
