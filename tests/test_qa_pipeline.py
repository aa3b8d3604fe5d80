"""Extractive QA end to end on the command line: sample, check, source-train, adapt, sweep,
report, submission and score, on XQuAD's and MLQA's layouts with a tiny BERT."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fsxlt.cli import run_app
from fsxlt.data.qa import squad_json
from fsxlt.sampling.store import read_examples_jsonl
from tests.qa_fixtures import QA_EXTRA, write_mlqa, write_xquad
from tests.train_fixtures import make_encoder_dir

TRAIN = ["--max-seq-length", "48", "--device", "cpu"]


@pytest.fixture(scope="module")
def study(tmp_path_factory) -> dict[str, Path]:
    """XQuAD in en and de, its buckets, and an English source-trained checkpoint."""
    root = tmp_path_factory.mktemp("qa")
    paths = {"root": root, "data": write_xquad(root / "data", ("en", "de"), 200),
             "encoder": make_encoder_dir(root / "enc", extra=QA_EXTRA),
             "buckets": root / "buckets", "ckpt": root / "ckpt"}
    assert run_app(["sample", "--task", "xquad", "--lang", "de", "-k", "1", "-k", "2",
                    "--n-buckets", "3", "--data-dir", str(paths["data"]),
                    "--out", str(paths["buckets"])]) == 0
    assert run_app(["source-train", "--task", "xquad", "--data-dir", str(paths["data"]),
                    "--model", str(paths["encoder"]), "--epochs", "2", "--lr", "1e-3",
                    "--batch-size", "16", "--target", "de", "--out", str(paths["ckpt"]),
                    *TRAIN]) == 0
    return paths


def test_buckets_check_and_the_checkpoint_records_f1_and_exact_match(study, capsys):
    assert run_app(["buckets", "check", str(study["buckets"])]) == 0
    assert "2 bucket sets checked: 2 ok" in capsys.readouterr().out
    record = json.loads((study["ckpt"] / "fsxlt_checkpoint.json").read_text())
    zero = record["zero_shot"]["de"]
    assert zero["metric"] == "squad_f1" and 0 <= zero["exact_match"] <= zero["f1"] <= 1
    assert zero["n"] == 360  # the 120 held-out paragraphs, three questions each
    assert set(record["checkpoints"][0]["dev"]) == {"en", "de"}  # every dev, every epoch
    assert record["oracle"]["de"]["epoch"] in (1, 2)  # "Don't Use English Dev"'s oracle


def test_adapt_scores_f1_and_em_and_its_prediction_file_scores_the_same(study, tmp_path,
                                                                        capsys):
    bucket_set = study["buckets"] / "xquad" / "de" / "k2"
    held_out = squad_json(read_examples_jsonl(bucket_set / "test.jsonl"))
    gold = tmp_path / "test-de.json"
    gold.write_text(json.dumps(held_out, ensure_ascii=False), encoding="utf-8")
    runs = tmp_path / "runs"
    assert run_app(["adapt", "--task", "xquad", "--lang", "de", "--bucket",
                    str(bucket_set / "00.json"), "--from", str(study["ckpt"]), "--out",
                    str(runs), "--lr", "1e-3", "--max-epochs", "2", "--patience", "1",
                    "--predict", str(gold), "--save-predictions", *TRAIN]) == 0
    record = json.loads((runs / "xquad/de/k2/full/00.json").read_text())
    assert record["test"]["n"] == 360 and "exact_match" in record["test"]
    with_dir = tmp_path / "with-data-dir"  # data_dir's xquad.de.json is read by its parts
    assert run_app(["adapt", "--task", "xquad", "--lang", "de", "--bucket",
                    str(bucket_set / "00.json"), "--from", str(study["ckpt"]), "--out",
                    str(with_dir), "--lr", "1e-3", "--max-epochs", "2", "--patience", "1",
                    "--data-dir", str(study["data"]), *TRAIN]) == 0
    again = json.loads((with_dir / "xquad/de/k2/full/00.json").read_text())
    assert again["data"]["test"]["sha256"] == record["data"]["test"]["sha256"]
    assert again["data"]["dev"]["sha256"] == record["data"]["dev"]["sha256"]
    assert again["test"] == record["test"]
    # BERT's max-context decoding by default, recorded; fsxlt 0.4's rule is another run
    assert record["qa_decoding"] == "max-context" == record["run"]["identity"]["qa_decoding"]
    old_rule = tmp_path / "any-window"
    assert run_app(["adapt", "--task", "xquad", "--lang", "de", "--bucket",
                    str(bucket_set / "00.json"), "--from", str(study["ckpt"]), "--out",
                    str(old_rule), "--lr", "1e-3", "--max-epochs", "2", "--patience", "1",
                    "--data-dir", str(study["data"]), "--qa-decoding", "any-window",
                    *TRAIN]) == 0
    legacy = json.loads((old_rule / "xquad/de/k2/full/00.json").read_text())
    assert legacy["qa_decoding"] == "any-window" and legacy["config_hash"] != again["config_hash"]
    capsys.readouterr()
    assert run_app(["adapt", "--task", "xquad", "--lang", "de", "--bucket",
                    str(bucket_set / "00.json"), "--from", str(study["ckpt"]), "--out",
                    str(with_dir), "--lr", "1e-3", "--max-epochs", "2", "--patience", "1",
                    "--data-dir", str(study["data"]), "--qa-decoding", "any-window",
                    *TRAIN]) == 2
    assert "(qa_decoding differ)" in capsys.readouterr().err
    answers = runs / "xquad/de/k2/full/submission/00/XQuAD/predictions.de.json"
    assert set(json.loads(answers.read_text())) == {
        qa["id"] for article in held_out["data"] for p in article["paragraphs"]
        for qa in p["qas"]}
    capsys.readouterr()
    assert run_app(["score", "--task", "xquad", "--lang", "de", str(gold), str(answers),
                    "--json"]) == 0
    scored = json.loads(capsys.readouterr().out)
    assert scored["f1"] == pytest.approx(record["test"]["f1"])
    assert scored["exact_match"] == pytest.approx(record["test"]["exact_match"])
    rows = (runs / "xquad/de/k2/full/00.predictions.jsonl").read_text().splitlines()
    assert json.loads(rows[1])["question_id"] and isinstance(json.loads(rows[1])["gold"], list)


def test_sweep_report_submission_and_score(study, tmp_path, capsys):
    config = tmp_path / "sweep.yaml"
    config.write_text(f"""name: qa
out: {tmp_path / "runs"}
buckets: {study["buckets"]}
data_dir: {study["data"]}
start: {study["ckpt"]}
methods: [full, fc, lora]
n_buckets: 3
lrs: [1.0e-3]
max_epochs: 2
patience: 1
max_seq_length: 48
predict: {study["data"]}/xquad.{{lang}}.json
tasks:
  xquad:
    languages: [de]
    k: [1, 2]
""", encoding="utf-8")
    assert run_app(["sweep", str(config), "--device", "cpu", "--workers", "0"]) == 0
    record = json.loads((tmp_path / "runs/xquad/de/k1/full/00.json").read_text())
    # selection on the set's untouched paragraphs, the score on the held-out ones: never
    # the whole file that data_dir names
    assert record["data"]["dev"]["source"].endswith("xquad/de/k1/dev-remaining.jsonl")
    assert record["dev"]["n"] == 171 and record["test"]["n"] == 360
    capsys.readouterr()
    assert run_app(["report", str(tmp_path / "runs")]) == 0
    report = capsys.readouterr().out
    # the set holds 3 buckets, all run: nothing missing (issue 41, case 20: 0.4.0 expected
    # the task's 10 and listed 03-09 as missing)
    assert "Missing buckets" not in report and "(n=3)" not in report
    assert "xquad: Full FT, source en (K=0: zero-shot; test exact match, mean ± std" in report
    assert "### xquad: lora, source en (K=0: zero-shot; test exact match" in report
    sub = tmp_path / "sub"
    assert run_app(["submission", str(tmp_path / "runs"), "--out", str(sub), "--arm", "full",
                    "-k", "1", "--bucket", "best-dev"]) == 0
    assert (sub / "XQuAD" / "predictions.de.json").is_file()
    capsys.readouterr()
    assert run_app(["score", "--task", "xquad", "--lang", "de",
                    str(study["data"] / "xquad.de.json"),
                    str(sub / "XQuAD" / "predictions.de.json")]) == 0
    assert capsys.readouterr().out.startswith("xquad/de: squad_f1 ")


def test_mlqa_writes_xglues_prediction_file_and_scores_it_with_mlqas_metric(tmp_path, capsys,
                                                                            study):
    data = write_mlqa(tmp_path / "mlqa", ("en", "de"), 40)
    buckets = tmp_path / "buckets"
    assert run_app(["sample", "--task", "mlqa", "--lang", "de", "-k", "2", "--n-buckets", "2",
                    "--data-dir", str(data), "--out", str(buckets)]) == 0
    runs = tmp_path / "runs"
    test = data / "MLQA_V1/test/test-context-de-question-de.json"
    assert run_app(["adapt", "--task", "mlqa", "--lang", "de", "--bucket",
                    str(buckets / "mlqa/de/k2/00.json"), "--from", str(study["encoder"]),
                    "--data-dir", str(data), "--out", str(runs), "--lr", "1e-3",
                    "--max-epochs", "1", "--predict", str(test), *TRAIN]) == 0
    record = json.loads((runs / "mlqa/de/k2/full-nosource/00.json").read_text())
    assert record["metric"] == "mlqa_f1" and record["test"]["n"] == 120
    prediction = runs / "mlqa/de/k2/full-nosource/submission/00/MLQA/de.prediction"
    capsys.readouterr()
    assert run_app(["score", "--task", "mlqa", "--lang", "de", str(test), str(prediction),
                    "--json"]) == 0
    scored = json.loads(capsys.readouterr().out)
    assert scored["f1"] == pytest.approx(record["test"]["f1"]) and scored["n"] == 120


def test_pet_refuses_extractive_qa_and_icl_an_encoder_in_one_line(study, tmp_path, capsys):
    """PET has no span head; ICL answers QA by generation, which needs a causal LM."""
    bucket = study["buckets"] / "xquad" / "de" / "k1"
    assert run_app(["adapt", "--task", "xquad", "--lang", "de", "--bucket", str(bucket),
                    "--from", str(study["ckpt"]), "--method", "pet",
                    "--out", str(tmp_path / "r")]) == 2
    assert run_app(["icl", "--task", "xquad", "--lang", "de", "--bucket", str(bucket),
                    "--model", str(study["encoder"]), "--out", str(tmp_path / "r")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[0] == ("error: method pet supports classification and multiple_choice tasks, "
                      "not extractive_qa")
    assert len(err) == 2 and "not a causal language model" in err[1]


def test_a_broken_prediction_file_is_one_line(study, tmp_path, capsys):
    bad = tmp_path / "bad.json"
    bad.write_text('["not", "an", "object"]', encoding="utf-8")
    assert run_app(["score", "--task", "xquad", "--lang", "de",
                    str(study["data"] / "xquad.de.json"), str(bad)]) == 2
    assert capsys.readouterr().err.strip() == (
        f"error: {bad}: expected one JSON object from question id to answer text")


def test_the_analyses_take_qa_runs_or_refuse_them_in_one_line(study, tmp_path, capsys):
    runs = tmp_path / "runs"
    assert run_app(["adapt", "--task", "xquad", "--lang", "de", "--bucket",
                    str(study["buckets"] / "xquad" / "de" / "k1"), "--from", str(study["ckpt"]),
                    "--out", str(runs), "--lr", "1e-3", "--max-epochs", "1", *TRAIN]) == 0
    assert run_app(["analyze", "overlap", str(study["buckets"]), "--task", "xquad",
                    "--english", str(study["data"] / "xquad.en.json")]) == 0
    assert run_app(["analyze", "bucket-features", str(runs),
                    "--out", str(tmp_path / "bf")]) == 0
    capsys.readouterr()
    for what in ("gains", "confusion"):
        assert run_app(["analyze", what, str(runs), "--task", "xquad", "--lang", "de",
                        "--k", "1", "--out", str(tmp_path / what)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 2 and "analyze gains counts the test words adapting fixed, which " \
        "needs a tagging task" in err[0] and "xquad is extractive QA" in err[1]


def test_a_refused_configuration_writes_nothing(study, tmp_path, capsys):
    """Issue 41, case 17: ``adapt --regime mixup`` on xquad was refused by the run, leaving
    --out created with an error record in it; every check that needs no training now
    comes before the output directory is touched."""
    runs = tmp_path / "runs"
    source = study["data"] / "xquad.en.json"
    bucket = study["buckets"] / "xquad" / "de" / "k2" / "00.json"
    argv = ["adapt", "--task", "xquad", "--lang", "de", "--bucket", str(bucket), "--from",
            str(study["ckpt"]), "--out", str(runs), "--lr", "1e-3", "--max-epochs", "1",
            *TRAIN]
    assert run_app([*argv, "--regime", "mixup", "--source-train", str(source)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "has none to mix" in err, err
    assert run_app([*argv, "--long-sentences", "windows"]) == 2
    err = capsys.readouterr().err.strip()
    assert "which always cuts a long paragraph into overlapping windows" in err, err
    assert not runs.exists()


def test_adapt_refuses_a_file_to_predict_of_another_language(study, tmp_path, capsys):
    """Issue 41, case 11: ``adapt --lang de --predict xquad.en.json`` wrote
    predictions.de.json from the English file."""
    runs = tmp_path / "runs"
    assert run_app(["adapt", "--task", "xquad", "--lang", "de", "--bucket",
                    str(study["buckets"] / "xquad" / "de" / "k2" / "00.json"), "--from",
                    str(study["ckpt"]), "--out", str(runs), "--max-epochs", "1",
                    "--predict", str(study["data"] / "xquad.en.json"), *TRAIN]) == 2
    err = capsys.readouterr().err
    assert "is a file of language en (its name says so), not de" in err and \
        err.count("\n") == 1, err
    assert not runs.exists()


def test_file_names_that_name_a_language():
    from fsxlt.data.readers import named_languages

    assert named_languages("XGLUE/QG/xglue.qg.fr.src.test") == ("fr",)
    assert named_languages("xquad.de.json") == ("de",)
    assert named_languages("MLQA_V1/test/test-context-de-question-es.json") == ("de", "es")
    assert named_languages("data/xnli/test-zh.tsv") == ("zh",)
    assert named_languages("mine/to-predict.json") == ()


def test_dev_and_test_files_given_are_used_as_given(study, tmp_path):
    """Issue 41, case 19: a --dev file for xquad was silently cut to XQuAD's 20-paragraph
    dev part (30 dev-remaining questions given as SQuAD JSON ended in "the target dev set
    is empty"); a set's own test.jsonl cut to 40 lines failed as invalid JSON; adapt had no
    --dev-limit / --test-limit."""
    bucket_set = study["buckets"] / "xquad" / "de" / "k2"
    remaining = read_examples_jsonl(bucket_set / "dev-remaining.jsonl")[:30]
    dev = tmp_path / "dev-de.json"
    dev.write_text(json.dumps(squad_json(remaining), ensure_ascii=False), encoding="utf-8")
    test = tmp_path / "test-part.jsonl"
    test.write_text("".join((bucket_set / "test.jsonl").read_text(
        encoding="utf-8").splitlines(keepends=True)[:40]), encoding="utf-8")
    runs = tmp_path / "runs"
    base = ["adapt", "--task", "xquad", "--lang", "de", "--bucket",
            str(bucket_set / "00.json"), "--from", str(study["ckpt"]), "--out", str(runs),
            "--lr", "1e-3", "--max-epochs", "1", *TRAIN]
    assert run_app([*base, "--dev", str(dev), "--test", str(test)]) == 0
    record = json.loads((runs / "xquad/de/k2/full/00.json").read_text())
    assert record["dev"]["n"] == 30 and record["test"]["n"] == 40
    assert record["run"]["identity"]["dev_part"] == "whole"
    limited = tmp_path / "limited"
    assert run_app([*base[:-len(TRAIN) - 6], "--out", str(limited), "--lr", "1e-3",
                    "--max-epochs", "1", *TRAIN, "--dev-limit", "5", "--test-limit", "7"]) == 0
    record = json.loads((limited / "xquad/de/k2/full/00.json").read_text())
    assert record["dev"]["n"] == 5 and record["test"]["n"] == 7
    assert record["run"]["identity"]["dev_limit"] == 5


def test_a_named_test_file_that_is_the_buckets_source_is_refused(study, tmp_path, capsys):
    """Read whole, --test xquad.de.json would score the buckets' own questions."""
    runs = tmp_path / "runs"
    assert run_app(["adapt", "--task", "xquad", "--lang", "de", "--bucket",
                    str(study["buckets"] / "xquad" / "de" / "k2" / "00.json"), "--from",
                    str(study["ckpt"]), "--out", str(runs), "--max-epochs", "1",
                    "--test", str(study["data"] / "xquad.de.json"), *TRAIN]) == 2
    assert "is the file the buckets of" in capsys.readouterr().err
    assert not runs.exists()


def test_adapts_limits_take_the_samples_icl_and_lm_adapt_take():
    """--test-limit N scores the test examples fsxlt icl --test-limit N scores (seed 0), so
    the arms pair in report --compare (--dev-limit takes lm-adapt's dev sample by the
    same shared key)."""
    from fsxlt.data.examples import seeded_sample
    from fsxlt.execution.spec import EVAL_SAMPLE_KEYS
    from fsxlt.icl.run import IclSettings, sample_test

    examples = list(range(50))
    for n in (1, 7, 49):
        assert seeded_sample(examples, n, EVAL_SAMPLE_KEYS["test"]) == sample_test(
            examples, IclSettings(model="m", seed=0, test_limit=n))
