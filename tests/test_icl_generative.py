"""ICL runs that generate: extractive QA answered by greedy generation and scored with the
task's F1 and exact match; decoding settings in the identity; what ranking settings are
refused for generated output."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fsxlt.cli import run_app
from fsxlt.metrics.scores import compute_scores
from fsxlt.study.runs import is_complete, predictions_path, read_record
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


def test_qg_by_generation_predicts_xglues_test_file_into_a_submission(tmp_path, capsys):
    """XGLUE QG: buckets from dev, a held-out labelled part as the test set (scored with
    BLEU), XGLUE's unlabelled test file predicted with the same prompt into
    <bucket>/QG/de.prediction; fsxlt submission gathers it and fsxlt score reads it."""
    from tests.test_generation_data import write_qg

    data = tmp_path / "XGLUE" / "QG"
    write_qg(data, "de", "dev", 12)
    held_out = write_qg(tmp_path / "held", "de", "dev", 5, seed=1)
    to_predict = write_qg(data, "de", "test", 4, targets=False, seed=2)
    assert run_app(["sample", "--task", "qg", "--lang", "de", "-k", "2", "--n-buckets", "2",
                    "--data-dir", str(tmp_path / "XGLUE"), "--out", str(tmp_path / "b")]) == 0
    out = tmp_path / "runs"
    model = make_causal_lm_dir(tmp_path / "lm", "llama")
    argv = ["icl", "--task", "qg", "--lang", "de", "--model", str(model), "--bucket",
            str(tmp_path / "b" / "qg" / "de" / "k2"), "--test", str(held_out), "--out",
            str(out), "--max-new-tokens", "5", "--stop", "?", "--threads", "1"]
    # issue 41, case 11: a file to predict of another language wrote QG/de.prediction
    french = write_qg(tmp_path / "fr", "fr", "test", 4, targets=False, seed=2)
    capsys.readouterr()
    assert run_app([*argv, "--predict", str(french)]) == 2
    err = capsys.readouterr().err
    assert "--predict is a file of language fr (its name says so), not de" in err, err
    assert not out.exists()
    assert run_app([*argv, "--predict", str(to_predict)]) == 0
    record = read_record(out / "qg" / "de" / "k2" / "icl" / "00.json")
    assert record["metric"] == "bleu" and 0 <= record["test_score"] <= 1
    assert record["test"]["bleu"] == pytest.approx(100 * record["test_score"])
    assert record["submission"] == {"file": "submission/00/QG/de.prediction", "n": 4}
    written = out / "qg" / "de" / "k2" / "icl" / "submission" / "00" / "QG" / "de.prediction"
    assert len(written.read_text(encoding="utf-8").splitlines()) == 4
    assert run_app(["submission", str(out), "--bucket", "00", "--out",
                    str(tmp_path / "sub")]) == 0
    gathered = tmp_path / "sub" / "QG" / "de.prediction"
    assert gathered.read_text(encoding="utf-8") == written.read_text(encoding="utf-8")
    capsys.readouterr()
    gold = write_qg(tmp_path / "gold", "de", "test", 4, seed=2)  # the same passages, with targets
    assert run_app(["score", "--task", "qg", "--lang", "de", str(gold), str(gathered)]) == 0
    assert "bleu" in capsys.readouterr().out.lower()


def test_predict_needs_a_task_with_a_submission_format(qa, tmp_path, capsys):
    assert _icl(qa, tmp_path / "runs", "--data-dir", str(qa["data"]), "--predict",
                str(tmp_path / "missing.json")) == 2
    assert "file to predict not found" in capsys.readouterr().err


def test_a_sweeps_icl_arm_generates_with_its_decoding_settings(tmp_path, capsys):
    """A sweep's ICL arm on a generation task (QG on XQuAD): the arm's max_new_tokens and
    stop reach the runs, and fsxlt icl with the same settings finds them done (one
    identity)."""
    import yaml

    data = write_xquad(tmp_path / "data", ("en", "de"), 200)
    assert run_app(["sample", "--task", "xquad-qg", "--lang", "de", "-k", "1", "--n-buckets",
                    "2", "--data-dir", str(data), "--out", str(tmp_path / "buckets")]) == 0
    model = make_causal_lm_dir(tmp_path / "lm", "gpt2")
    out = tmp_path / "runs"
    config = {"name": "qg-icl", "out": str(out), "buckets": str(tmp_path / "buckets"),
              "data_dir": str(data), "methods": [], "n_buckets": 2,
              "icl": {"model": str(model), "test_limit": 3, "zero_shot": False,
                      "arms": [{"max_new_tokens": 3, "stop": ["?", "."], "batching": "padded"}]},
              "tasks": {"xquad-qg": {"languages": ["de"], "k": [1]}}}
    path = tmp_path / "sweep.yaml"
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    assert run_app(["sweep", str(path), "--workers", "0", "--threads", "1"]) == 0
    record = read_record(out / "xquad-qg" / "de" / "k1" / "icl" / "01.json")
    assert record["metric"] == "bleu" and record["data"]["test"]["n"] == 3
    assert record["icl"]["generation"]["stop"] == ["?", "."]
    assert record["run"]["identity"]["prompt"]["decoding"]["max_new_tokens"] == 3
    assert record["icl"]["generation"]["batching"] == "padded"
    bucket_set = tmp_path / "buckets" / "xquad-qg" / "de" / "k1"
    argv = ["icl", "--task", "xquad-qg", "--lang", "de", "--model", str(model), "--bucket",
            str(bucket_set), "--test", str(bucket_set / "test.jsonl"), "--test-limit", "3",
            "--max-new-tokens", "3", "--stop", "?", "--stop", ".", "--out", str(out),
            "--threads", "1"]
    assert run_app([*argv, "--batching", "padded"]) == 0
    assert capsys.readouterr().out.count("already done with these settings") == 2
    # the exact path is another identity (its outputs may differ in a near-tie): refused
    # without --replace; with it, the texts generated are the padded ones here
    assert run_app([*argv, "--batching", "one-length"]) == 2
    assert "other settings" in capsys.readouterr().err
    assert run_app([*argv, "--batching", "one-length", "--replace"]) == 0
    exact = read_record(out / "xquad-qg" / "de" / "k1" / "icl" / "01.json")
    assert exact["icl"]["generation"]["batching"] == "one-length"
    assert exact["test_score"] == record["test_score"]


def test_a_named_test_file_is_read_whole_and_the_buckets_source_refused(qa, tmp_path, capsys):
    """Issue 41, case 19, for fsxlt icl: a --test file is used as given (never cut to
    XQuAD's held-out part); the buckets' own source file, read whole, is refused."""
    import json

    from fsxlt.data.qa import squad_json
    from fsxlt.sampling.store import read_examples_jsonl

    bucket_set = qa["buckets"] / "xquad" / "de" / "k2"
    mine = tmp_path / "mine.json"  # 5 questions of the set's dev part, as SQuAD JSON
    mine.write_text(json.dumps(squad_json(read_examples_jsonl(
        bucket_set / "dev-remaining.jsonl")[:5]), ensure_ascii=False), encoding="utf-8")
    out = tmp_path / "runs"
    assert _icl(qa, out, "--bucket", str(bucket_set / "00.json"), "--test", str(mine)) == 0
    record = read_record(out / "xquad" / "de" / "k2" / "icl" / "00.json")
    assert record["test"]["n"] == 5 and record["run"]["identity"]["test_part"] == "whole"
    capsys.readouterr()
    assert _icl(qa, tmp_path / "other", "--bucket", str(bucket_set / "00.json"), "--test",
                str(qa["data"] / "xquad.de.json")) == 2
    assert "is the file the buckets of" in capsys.readouterr().err
