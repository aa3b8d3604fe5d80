"""``fsxlt icl``: one record per bucket in the runs directory, read by ``fsxlt report``;
bad input is one line with nothing written."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fsxlt.cli import run_app
from fsxlt.study.runs import arm_of, is_complete, predictions_path, read_record
from tests.icl_fixtures import make_causal_lm_dir, write_task_yaml
from tests.train_fixtures import make_encoder_dir, nli_data, write_bucket_set, write_pairs


@pytest.fixture(scope="module")
def setup(tmp_path_factory) -> dict:
    root = tmp_path_factory.mktemp("icl")
    data = nli_data(40, 5)
    buckets = write_bucket_set(root / "buckets", "xnli", "de", 1,
                               [data[i:i + 3] for i in (0, 3, 6)],
                               ["entailment", "neutral", "contradiction"],
                               dev_remaining=data[9:])
    return {"root": root, "buckets": buckets,
            "test": write_pairs(root / "test-de.tsv", nli_data(12, 9)),
            "model": make_causal_lm_dir(root / "lm", "llama")}


def _icl(setup: dict, out: Path, *extra: str) -> int:
    return run_app(["icl", "--task", "xnli", "--lang", "de", "--model", str(setup["model"]),
                    "--test", str(setup["test"]), "--out", str(out), "--threads", "1",
                    *extra])


def test_a_bucket_set_gives_one_record_per_bucket_that_report_shows(setup, tmp_path, capsys):
    out = tmp_path / "runs"
    assert _icl(setup, out, "--bucket", str(setup["buckets"]), "--save-predictions") == 0
    paths = sorted((out / "xnli" / "de" / "k1" / "icl").glob("*.json"))
    assert [p.name for p in paths] == ["00.json", "01.json", "02.json"]
    record = read_record(paths[1])
    assert is_complete(record) and arm_of(record) == "icl" and record["k"] == 1
    assert record["bucket"]["index"] == 1 and len(record["icl"]["demonstrations"]) == 3
    assert record["model"]["encoder"] == str(setup["model"])
    assert record["data"]["test"]["n"] == 12 and record["run"]["writer"] == "fsxlt icl"
    rows = predictions_path(paths[1]).read_text(encoding="utf-8").splitlines()
    assert len(rows) == 13 and json.loads(rows[0])["model"]["kind"] == "icl"
    assert _icl(setup, out) == 0  # K=0: zero-shot prompting
    zero = read_record(out / "xnli" / "de" / "k0" / "icl" / "zero-shot.json")
    assert zero["k"] == 0 and zero["icl"]["demonstrations"] == []
    capsys.readouterr()
    assert run_app(["report", str(out), "--expected-buckets", "3"]) == 0
    report = capsys.readouterr().out
    assert "### xnli: icl (K=0: zero-shot" in report and "| K=0 | K=1 |" in report
    assert "### xnli: icl, gain over zero-shot" in report  # no source named: none trained
    assert "(n=1)" not in report  # K=0 is one run, not a cell missing 39 buckets
    from fsxlt.report import load_records
    from fsxlt.report.tables import aggregate

    cells = aggregate(load_records(out), expected=3).set_index(["arm", "k"])
    zero_shot = cells.loc[("icl", 0), "mean"]
    assert cells.loc[("icl", 1), "zero_shot"] == zero_shot  # its own K=0 run
    assert cells.loc[("icl", 1), "gain"] == cells.loc[("icl", 1), "mean"] - zero_shot
    assert _icl(setup, out, "--bucket", str(setup["buckets"])) == 0
    assert "already done with these settings" in capsys.readouterr().out


def test_calibrated_target_prompts_are_an_arm_of_their_own(setup, tmp_path):
    out = tmp_path / "runs"
    bucket = setup["buckets"] / "00.json"
    assert _icl(setup, out, "--bucket", str(bucket), "--calibrate", "--template-lang",
                "target", "--words-lang", "target", "--test-limit", "5") == 0
    record = read_record(out / "xnli" / "de" / "k1" / "icl-target-calibrated" / "00.json")
    assert record["icl"]["calibrate"] and len(record["icl"]["content_free_loglik"][0]) == 3
    assert record["test"]["n"] == 5


def test_similarity_order_gives_each_test_example_its_own_prefix(setup, tmp_path):
    out = tmp_path / "runs"
    encoder = make_encoder_dir(tmp_path / "bert")
    assert _icl(setup, out, "--bucket", str(setup["buckets"] / "01.json"), "--order",
                "similarity", "--encoder", str(encoder), "--calibrate") == 0
    record = read_record(out / "xnli" / "de" / "k1" / "icl-calibrated-similarity" / "01.json")
    block = record["icl"]
    assert block["encoder"] == str(encoder) and 1 <= block["prompt_prefixes"] <= 6
    assert len(block["prefix_tokens"]) == block["prompt_prefixes"]
    assert len(block["content_free_loglik"]) == block["prompt_prefixes"]
    if block["prompt_prefixes"] > 1:  # each test example's own order (0.2.0: null)
        bucket = json.loads((setup["buckets"] / "01.json").read_text())
        shots = sorted(e["id"] for e in bucket["examples"])
        assert block["demonstrations"] is None
        assert len(block["test_demonstrations"]) == record["test"]["n"]
        assert all(sorted(order) == shots for order in block["test_demonstrations"])
        assert len({tuple(o) for o in block["test_demonstrations"]}) == \
            block["prompt_prefixes"]


@pytest.mark.parametrize("case, message", [
    ("bert", "not a causal language model"),
    ("no-icl", "has no icl section"),
    ("bad-template", "icl.template en misses {text_b}"),
    ("empty-word", "tokenizes to nothing"),
    ("too-long", "is longer than the model's context of 64 tokens"),
    ("tagging", "a tagging task"),
    ("target-missing", "no template in sw"),
    ("calibrate-chid", "contextual calibration needs one label set"),
    ("similarity-no-encoder", "the similarity order needs a sentence encoder"),
    # issue 31, mechanism 10: prompts that cannot work (0.2.0 scored them)
    ("same-words", "the options 'yes' and 'Yes' tokenize the same"),
    # issue 41, case 1: one word for two labels passed (the strings compared equal)
    ("one-word", "labels entailment and neutral have the same word 'yes'"),
    ("unknown-word", "the option 'qwzxv' tokenizes to the unknown token"),
    ("label-first", "puts {label} before {text_a}, {text_b}"),
    # issue 31, mechanism 8: every model load one line (0.2.0: tracebacks)
    ("lm-truncated", "model.safetensors: truncated or corrupt weights"),
    ("lm-no-tokenizer", "no tokenizer files"),
    ("lm-file", "a file, not a model directory"),
    ("lm-no-weights", "cannot load causal LM"),
])
def test_bad_input_is_one_line_and_writes_nothing(setup, tmp_path, capsys, case, message):
    args = ["--bucket", str(setup["buckets"])]
    task, lang, model = "xnli", "de", str(setup["model"])
    if case == "bert":
        model = str(make_encoder_dir(tmp_path / "bert"))
    elif case == "no-icl":
        task = str(write_task_yaml(tmp_path / "t.yaml", icl=None))
    elif case == "bad-template":
        task = str(write_task_yaml(tmp_path / "t.yaml", template={"en": "{text_a} {label}"}))
    elif case == "empty-word":
        task = str(write_task_yaml(tmp_path / "t.yaml", label_words={"en": {
            "entailment": "yes", "neutral": "\u200b", "contradiction": "no"}}))
    elif case == "too-long":
        model = str(make_causal_lm_dir(tmp_path / "short", "llama", context=64))
    elif case == "tagging":
        task, lang, args = "panx", "de", []
    elif case == "target-missing":
        lang, args = "sw", ["--template-lang", "target"]
    elif case == "calibrate-chid":
        task, lang, args = "chid", "zh", ["--calibrate"]
    elif case == "similarity-no-encoder":
        args += ["--order", "similarity"]
    elif case in ("same-words", "unknown-word", "one-word"):  # the tokenizer lowercases
        second = {"same-words": "Yes", "unknown-word": "qwzxv", "one-word": "yes"}[case]
        task = str(write_task_yaml(tmp_path / "t.yaml", label_words={"en": {
            "entailment": "yes", "neutral": second, "contradiction": "no"}}))
    elif case.startswith("lm-"):
        broken = make_causal_lm_dir(tmp_path / "lm", "llama")
        weights = broken / "model.safetensors"
        if case == "lm-truncated":
            weights.write_bytes(weights.read_bytes()[:1000])
        elif case == "lm-no-weights":
            weights.unlink()
        elif case == "lm-no-tokenizer":
            for name in ("tokenizer.json", "tokenizer_config.json", "vocab.txt",
                         "special_tokens_map.json"):
                (broken / name).unlink(missing_ok=True)
        model = str(broken / "config.json") if case == "lm-file" else str(broken)
    elif case == "label-first":
        task = str(write_task_yaml(tmp_path / "t.yaml", template={
            "en": "answer : {label} premise : {text_a} hypothesis : {text_b}"}))
    capsys.readouterr()
    out = tmp_path / "runs"
    code = run_app(["icl", "--task", task, "--lang", lang, "--model", model, "--test",
                    str(setup["test"]), "--out", str(out), *args])
    err = capsys.readouterr().err
    assert code == 2 and message in err and err.count("\n") == 1 and err.startswith("error:")
    assert not out.exists()


def test_a_fixed_split_set_is_scored_on_its_own_test_set(setup, tmp_path):
    """FewCLUE's sets carry their test set (test.jsonl): fsxlt icl reads it as sweeps do."""
    from tests.fewclue_fixtures import write_fewclue

    source = write_fewclue(tmp_path / "FewCLUE", tasks=("eprstmt",))
    store = tmp_path / "buckets"
    assert run_app(["buckets", "import-fewclue", str(source), "--out", str(store),
                    "-t", "eprstmt"]) == 0
    out = tmp_path / "runs"
    assert run_app(["icl", "--task", "eprstmt", "--lang", "zh", "--model", str(setup["model"]),
                    "--bucket", str(next(store.glob("eprstmt/zh/k*/00.json"))), "--out", str(out),
                    "--test-limit", "4", "--threads", "1"]) == 0
    records = sorted(out.glob("eprstmt/zh/k*/icl/*.json"))
    assert [p.stem for p in records] == ["00"] and is_complete(read_record(records[0]))
    assert read_record(records[0])["data"]["test"]["n"] == 4


def test_two_options_of_one_text_are_refused_by_position():
    """Issue 41, case 1: check_options compared the option strings, so two equal ones
    never clashed; they are compared by position now, and named as the same text."""
    from fsxlt.errors import FsxltError
    from fsxlt.icl.scoring import check_options

    with pytest.raises(FsxltError, match="the options 'yes' and 'yes' are the same text"):
        check_options([" yes", " no", " yes"], [[5], [6], [5]], None, "xnli/de/k1/00")
    check_options([" yes", " no"], [[5], [6]], None, "xnli/de/k1/00")


def test_a_sweep_refuses_a_task_yaml_with_one_word_for_two_labels(setup, tmp_path, capsys):
    from tests.sweep_fixtures import write_config

    task = write_task_yaml(tmp_path / "mine.yaml", label_words={"en": {
        "entailment": "yes", "neutral": "yes", "contradiction": "no"}})
    config = write_config(tmp_path / "sweep.yaml", {
        "name": "one-word", "out": str(tmp_path / "runs"),
        "buckets": str(setup["root"] / "buckets"),
        "methods": [], "icl": {"model": str(setup["model"]), "arms": [{}]},
        "tasks": {str(task): {"languages": ["de"], "k": [1]}}})
    assert run_app(["sweep", str(config), "--workers", "0"]) == 2
    err = capsys.readouterr().err
    assert "labels entailment and neutral have the same word 'yes'" in err, err
    assert err.count("\n") == 1 and not (tmp_path / "runs").exists()
