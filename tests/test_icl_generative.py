"""ICL runs that generate: extractive QA answered by greedy generation and scored with the
task's F1 and exact match; decoding settings in the identity; what ranking settings are
refused for generated output."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fsxlt.cli import run_app
from fsxlt.evaluation import compute_scores
from fsxlt.runs import is_complete, predictions_path, read_record
from fsxlt.tasks import get_task
from tests.icl_fixtures import make_causal_lm_dir
from tests.qa_fixtures import write_xquad


@pytest.fixture(scope="module")
def qa(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("icl-qa")
    paths = {"data": write_xquad(root / "data", ("en", "de"), 200),
             "buckets": root / "buckets", "model": make_causal_lm_dir(root / "lm", "llama")}
    assert run_app(["sample", "--task", "xquad", "--lang", "de", "-k", "2", "--n-buckets", "2",
                    "--data-dir", str(paths["data"]), "--out", str(paths["buckets"])]) == 0
    return paths


def _icl(qa: dict[str, Path], out: Path, *extra: str) -> int:
    return run_app(["icl", "--task", "xquad", "--lang", "de", "--model", str(qa["model"]),
                    "--out", str(out), "--threads", "1", "--test-limit", "6",
                    "--max-new-tokens", "4", *extra])


def test_qa_by_generation_writes_records_scored_with_f1_and_exact_match(qa, tmp_path, capsys):
    out = tmp_path / "runs"
    bucket_set = qa["buckets"] / "xquad" / "de" / "k2"
    assert _icl(qa, out, "--bucket", str(bucket_set), "--save-predictions") == 0
    path = out / "xquad" / "de" / "k2" / "icl" / "01.json"
    record = read_record(path)
    assert is_complete(record) and record["metric"] == "squad_f1"
    assert set(record["test"]) >= {"f1", "exact_match", "score"}
    assert record["icl"]["generation"]["max_new_tokens"] == 4
    assert record["icl"]["generation"]["stop"] == ["\n"]
    assert len(record["icl"]["demonstrations"]) == 2
    rows = [json.loads(line) for line in
            predictions_path(path).read_text(encoding="utf-8").splitlines()[1:]]
    assert len(rows) == 6
    # the record's score is the task's metric on the texts the predictions file holds
    gold = [(r["gold"], "de") for r in rows]
    again = compute_scores(get_task("xquad"), gold, [r["predicted"] for r in rows])
    assert again["score"] == pytest.approx(record["test_score"])
    capsys.readouterr()
    assert _icl(qa, out, "--bucket", str(bucket_set)) == 0          # resumed: nothing to do
    assert "already done" in capsys.readouterr().out
    assert _icl(qa, out, "--bucket", str(bucket_set), "--stop", "?") == 2  # other decoding
    assert "--replace" in capsys.readouterr().err


def test_zero_shot_qa_by_generation(qa, tmp_path):
    out = tmp_path / "runs"
    assert _icl(qa, out, "--data-dir", str(qa["data"]), "--stop", "?") == 0
    zero = read_record(out / "xquad" / "de" / "k0" / "icl" / "zero-shot.json")
    assert zero["icl"]["generation"]["stop"] == ["?"] and zero["icl"]["demonstrations"] == []


@pytest.mark.parametrize("option", [["--calibrate"], ["--normalize"]])
def test_ranking_settings_are_refused_for_generated_output(qa, tmp_path, capsys, option):
    out = tmp_path / "runs"
    assert _icl(qa, out, "--data-dir", str(qa["data"]), *option) == 2
    err = capsys.readouterr().err
    assert "generate their output" in err and "Traceback" not in err
    assert not out.exists() or not any(out.rglob("*.json"))
