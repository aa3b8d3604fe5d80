"""FewCLUE: readers, import-fewclue, buckets check, the multiple-choice kind, sweeps and reports.

Fixtures are small folders in FewCLUE's own file layout and key names
(tests/fewclue_fixtures.py); the model is a 2-layer BERT whose vocabulary
holds the fixtures' Chinese characters.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
import torch
import yaml

from fsxlt.cli import run_app
from fsxlt.data import ChoiceExample, Skipped, TextExample, read_examples
from fsxlt.errors import DataFormatError
from fsxlt.sampling.check import check_store
from fsxlt.sampling.store import read_bucket, read_manifest
from fsxlt.study.submission import render_submission, submission_file
from fsxlt.tasks import get_task
from tests.fewclue_fixtures import (
    FEWCLUE_VOCAB,
    TASKS,
    TRAIN_SIZE,
    unlabelled_copy,
    write_fewclue,
    write_task,
)
from tests.train_fixtures import make_encoder_dir, nli_data, write_pairs


@pytest.fixture(scope="module")
def fewclue(tmp_path_factory) -> Path:
    return write_fewclue(tmp_path_factory.mktemp("fewclue") / "datasets")


@pytest.fixture(scope="module")
def store(fewclue, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("store") / "buckets"
    tasks = [arg for task in TASKS for arg in ("-t", task)]
    assert run_app(["buckets", "import-fewclue", str(fewclue), "--out", str(out), *tasks]) == 0
    return out


@pytest.fixture(scope="module")
def encoder(tmp_path_factory) -> Path:
    return make_encoder_dir(tmp_path_factory.mktemp("enc") / "tiny-zh", extra=FEWCLUE_VOCAB)


# --------------------------------------------------------------------------- readers

def test_every_fixture_task_reads_in_its_real_format(fewclue):
    eprstmt = read_examples(fewclue / "eprstmt" / "train_0.json", "eprstmt")
    assert isinstance(eprstmt[0], TextExample) and eprstmt[0].label in ("Negative", "Positive")
    assert eprstmt[0].id == "train_0.json:1"
    csl = read_examples(fewclue / "csl" / "train_0.json", "csl")[0]
    raw = json.loads((fewclue / "csl" / "train_0.json").read_text(encoding="utf-8")
                     .splitlines()[0])
    assert csl.text_b == "、".join(raw["keyword"])  # the keyword list, joined
    chid = read_examples(fewclue / "chid" / "train_0.json", "chid")[0]
    assert isinstance(chid, ChoiceExample) and len(chid.choices) == 7
    assert "#idiom#" in chid.text


def test_cluewsc_marks_both_spans_at_their_offsets(tmp_path):
    path = tmp_path / "wsc.json"
    row = {"target": {"span2_index": 7, "span1_index": 1, "span1_text": "猫猫",
                      "span2_text": "它"}, "idx": 3, "label": "true", "text": "我猫猫在书上看它了"}
    path.write_text(json.dumps(row, ensure_ascii=False) + "\n", encoding="utf-8")
    [example] = read_examples(path, "cluewsc")
    assert example.text_a == "我[猫猫]在书上看<它>了" and example.label == "true"


def test_cluewsc_offset_that_misses_its_span_names_file_and_line(tmp_path):
    good = {"target": {"span2_index": 3, "span1_index": 0, "span1_text": "猫",
                       "span2_text": "它"}, "idx": 0, "label": "true", "text": "猫在看它"}
    bad = {**good, "target": {**good["target"], "span2_index": 2}}
    path = tmp_path / "wsc.json"
    path.write_text("\n".join(json.dumps(r, ensure_ascii=False) for r in (good, bad)) + "\n",
                    encoding="utf-8")
    with pytest.raises(DataFormatError, match=r"wsc.json:2: span2_text '它' is not at "
                       r"span2_index 2 \(the text there is '看'\)"):
        read_examples(path, "cluewsc")


def test_unlabelled_examples_are_reported_and_left_out_never_mapped(tmp_path):
    rows = [{"id": 0, "sentence1": "天", "sentence2": "地", "label": "neutral"},
            {"id": 1, "sentence1": "山", "sentence2": "水", "label": "-"},
            {"id": 2, "sentence1": "火", "sentence2": "木"},
            {"id": 3, "sentence1": "日", "sentence2": "月", "label": "contradiction"}]
    path = tmp_path / "ocnli.json"
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows),
                    encoding="utf-8")
    skipped = Skipped()
    examples = read_examples(path, "ocnli", skipped=skipped)
    assert [e.label for e in examples] == ["neutral", "contradiction"]
    assert [(line, label) for _f, line, label in skipped] == [(2, "-"), (3, "None")]
    with pytest.raises(DataFormatError, match="ocnli.json:2: label '-' is not a label"):
        read_examples(path, "ocnli")  # without a list to report them in: an error


def test_lines_split_at_newlines_only(tmp_path):
    """IFLYTEK's texts carry U+2028; str.splitlines would cut such a JSON line in two."""
    path = tmp_path / "iflytek.json"
    row = {"label": 8, "label_des": "公共交通", "sentence": "天\u2028地\x1c人", "id": 0}
    path.write_text(json.dumps(row, ensure_ascii=False) + "\n", encoding="utf-8")
    [example] = read_examples(path, "iflytek")
    assert example.text_a == "天\u2028地\x1c人" and example.label == "8"
    assert get_task("iflytek").label_names["8"] == "公共交通"


def test_chid_needs_one_blank_and_seven_candidates(tmp_path):
    path = tmp_path / "chid.json"
    row = {"id": 0, "candidates": ["天地"] * 7, "content": "没有空", "answer": 1}
    path.write_text(json.dumps(row, ensure_ascii=False) + "\n", encoding="utf-8")
    with pytest.raises(DataFormatError, match="chid.json:1: content must hold exactly one"):
        read_examples(path, "chid")


# --------------------------------------------------------------------------- import and check

def test_import_makes_six_buckets_with_their_own_dev_sets_and_the_test(store, fewclue):
    directory = store / "chid" / "zh" / f"k{TRAIN_SIZE}"
    manifest = read_manifest(directory)
    assert [e["name"] for e in manifest["buckets"]] == ["00", "01", "02", "03", "04", "all"]
    assert [e.get("union", False) for e in manifest["buckets"]] == [False] * 5 + [True]
    assert manifest["sampler"] == "fewclue-fixed" and manifest["test"]["n"] == 21
    assert manifest["buckets"][2]["dev"]["file"] == "02.dev.jsonl"
    dev_2 = read_examples(fewclue / "chid" / "dev_2.json", "chid")
    stored = (directory / "02.dev.jsonl").read_text(encoding="utf-8").splitlines()
    assert [json.loads(line)["text"] for line in stored] == [e.text for e in dev_2]
    assert len(read_bucket(directory / "all.json").examples) == 5 * TRAIN_SIZE


def test_check_passes_and_reports_label_counts(store, capsys):
    assert run_app(["buckets", "check", str(store)]) == 0
    out = capsys.readouterr().out
    assert "9 bucket sets checked: 9 ok" in out
    assert "      00  8 examples: Negative 4, Positive 4" in out


def test_check_finds_a_training_example_in_the_test_set(tmp_path, capsys):
    src = tmp_path / "datasets"
    folder = write_task(src, "eprstmt")
    leaked = (folder / "train_3.json").read_text(encoding="utf-8").splitlines()[0]
    with (folder / "test_public.json").open("a", encoding="utf-8") as handle:
        handle.write(leaked + "\n")
    out = tmp_path / "buckets"
    assert run_app(["buckets", "import-fewclue", str(src), "--out", str(out),
                    "-t", "eprstmt"]) == 0
    reports = check_store(out)
    assert [(v.bucket, v.kind) for v in reports[0].violations] == [(3, "test-leak"),
                                                                    (5, "test-leak")]


def test_a_missing_or_broken_task_is_reported_and_skipped(tmp_path, capsys):
    src = tmp_path / "datasets"
    write_task(src, "eprstmt")
    folder = write_task(src, "ocnli")
    (folder / "dev_4.json").write_text("{not json\n", encoding="utf-8")
    out = tmp_path / "buckets"
    code = run_app(["buckets", "import-fewclue", str(src), "--out", str(out),
                    "-t", "eprstmt", "-t", "ocnli", "-t", "tnews"])
    captured = capsys.readouterr()
    assert code == 1
    assert "skipped ocnli: " in captured.err and "dev_4.json:1: invalid JSON" in captured.err
    assert "skipped tnews: " in captured.err and "not found" in captured.err
    assert sorted(p.name for p in out.iterdir() if not p.name.startswith(".")) == ["eprstmt"]


# --------------------------------------------------------------------------- multiple choice

def test_multiple_choice_head_loss_and_prediction_by_hand(encoder):
    """Two examples x three candidates; one score per (text, candidate) row.

    With classifier weight (1, 0, ...) and bias 0 the score of a row is its
    first feature. Example 0's rows score 0, 0, ln 2: softmax (1/4, 1/4, 1/2),
    so with answer 2 its cross-entropy is -ln(1/2) = ln 2; example 1's rows
    score 1, 0, 0 and its answer is 0: -ln(e / (e + 2)).
    """
    from fsxlt.models.model import FsxltModel
    from fsxlt.training.checkpoint import load_encoder
    from fsxlt.training.loop import summed_cross_entropy

    encoder_model, _tokenizer = load_encoder(str(encoder), 0)
    model = FsxltModel(encoder_model, "multiple_choice", 3, seed=0).eval()
    assert model.classifier.weight.shape == (1, 32)  # one score per row, not per label
    with torch.no_grad():
        model.classifier.weight.zero_()
        model.classifier.weight[0, 0] = 1.0
        model.classifier.bias.zero_()
    pooled = torch.zeros(6, 32)
    pooled[2, 0] = math.log(2.0)
    pooled[3, 0] = 1.0
    logits = model.classify(pooled)
    assert logits.shape == (2, 3)
    assert torch.allclose(logits.softmax(-1)[0], torch.tensor([0.25, 0.25, 0.5]))
    loss = summed_cross_entropy(logits, torch.tensor([2, 0]))
    expected = math.log(2.0) - math.log(math.e / (math.e + 2.0))
    assert float(loss.detach()) == pytest.approx(expected, abs=1e-6)
    assert logits.argmax(-1).tolist() == [2, 0]


def test_candidates_are_batched_example_after_example(encoder):
    from fsxlt.models.encoding import Featurizer, collate
    from fsxlt.training.checkpoint import load_encoder

    _model, tokenizer = load_encoder(str(encoder), 0)
    featurizer = Featurizer(tokenizer, get_task("chid"), 32)
    examples = [ChoiceExample(f"x:{i}", "天地#idiom#人", tuple("山水火木金土日"), str(i))
                for i in range(2)]
    encoded = featurizer.encode(examples)
    batch = collate(encoded.rows, featurizer.pad_id)
    assert batch["input_ids"].shape[0] == 14 and batch["labels"].tolist() == [0, 1]
    second_candidate = tokenizer.convert_ids_to_tokens(batch["input_ids"][1].tolist())
    assert "水" in second_candidate and "山" not in second_candidate


def test_blank_window_keeps_the_blank_of_a_long_passage(encoder):
    from fsxlt.models.encoding import Featurizer
    from fsxlt.training.checkpoint import load_encoder

    _model, tokenizer = load_encoder(str(encoder), 0)
    featurizer = Featurizer(tokenizer, get_task("chid"), 16)
    text = "天" * 100 + "#idiom#" + "地" * 100
    window = featurizer.blank_window(text)
    assert "#idiom#" in window and len(window) == 16


def test_k_examples_buckets_are_exact_disjoint_and_deterministic():
    from fsxlt.sampling.samplers import derive_rng, k_examples

    pool = [ChoiceExample(f"p:{i}", "天", tuple("山水火木金土日"), str(i % 7)) for i in range(60)]
    for seed in range(30):
        k, n = 1 + seed % 5, 1 + seed % 7
        buckets = k_examples(pool, k, n, derive_rng(seed, "chid", "zh", k))
        assert [len(b) for b in buckets] == [k] * n
        ids = [e.id for b in buckets for e in b]
        assert len(ids) == len(set(ids))
        again = k_examples(pool, k, n, derive_rng(seed, "chid", "zh", k))
        assert [[e.id for e in b] for b in again] == [[e.id for e in b] for b in buckets]


def test_feature_cache_gives_the_same_multiple_choice_run(store, encoder):
    from fsxlt.sampling.store import read_examples_jsonl
    from fsxlt.training import AdaptEngine, strip_timings

    directory = store / "chid" / "zh" / f"k{TRAIN_SIZE}"
    records = []
    for cache in (True, False):
        engine = AdaptEngine.from_start(
            "chid", "zh", str(encoder), dev=read_examples_jsonl(directory / "00.dev.jsonl"),
            test=read_examples_jsonl(directory / "test.jsonl"), device="cpu",
            feature_cache=cache, max_seq_length=32)
        records.append(strip_timings(engine.adapt(read_bucket(directory / "00.json"),
                                                  method="fc-pooler", lrs=[1e-2], max_epochs=3,
                                                  patience=2)))
    assert records[0]["runs"] == records[1]["runs"]
    assert records[0]["test"] == records[1]["test"]


# --------------------------------------------------------------------------- sweep, report, predict

@pytest.mark.parametrize("task", TASKS)
def test_every_task_adapts_on_its_splits_and_writes_its_submission_file(
        task, store, fewclue, encoder, tmp_path, capsys):
    """Import (the module's store), adapt on split 00 and all, predict an unlabelled file."""
    directory = store / task / "zh" / f"k{TRAIN_SIZE}"
    to_predict = unlabelled_copy(fewclue / task / "test_public.json", tmp_path / "test.json")
    out = tmp_path / "runs"
    for bucket in ("00.json", "all.json"):
        assert run_app(["adapt", "--task", task, "--lang", "zh", "--bucket",
                        str(directory / bucket), "--from", str(encoder), "--out", str(out),
                        "--lr", "1e-3", "--max-epochs", "1", "--max-seq-length", "32",
                        "--device", "cpu", "--predict", str(to_predict)]) == 0
    runs = out / task / "zh" / f"k{TRAIN_SIZE}" / "full-nosource"
    record = json.loads((runs / "all.json").read_text(encoding="utf-8"))
    assert record["bucket"]["union"] is True and record["test"]["n"] == 21
    assert record["data"]["dev"]["source"].endswith("all.dev.jsonl")
    prefix = get_task(task).submission
    files = sorted(p.name for p in (runs / "submission").iterdir())
    assert files == [f"{prefix}_predict_0.json", f"{prefix}_predict_all.json"]
    rows = [json.loads(line) for line in (runs / "submission" / files[0])
            .read_text(encoding="utf-8").splitlines()]
    key = "answer" if task == "chid" else "label"
    assert len(rows) == 21 and all(set(row) == {"id", key} for row in rows)
    labels = get_task(task).labels
    assert all(str(row[key]) in labels for row in rows)


def test_submission_names_and_lines():
    ocnli, chid = get_task("ocnli"), get_task("chid")
    assert submission_file(ocnli, {"index": 0, "name": "00"}) == "ocnlif_predict_0.json"
    assert submission_file(chid, {"index": 5, "name": "all"}) == "chidf_predict_all.json"
    # issue 41, case 5: only FewCLUE's own splits take its split names; a sampled bucket
    # 00-05 wrote eprstmt_predict_0..5.json, which FewCLUE reads as its splits
    eprstmt = get_task("eprstmt")
    fixed = {"index": 0, "name": "00", "sampler": "fewclue-fixed"}
    assert submission_file(eprstmt, fixed) == "eprstmt_predict_0.json"
    for index in range(6):
        sampled = {"index": index, "k": 4, "sampler": "nway-kshot"}
        assert submission_file(eprstmt, sampled) == f"eprstmt_predict_bucket{index:02d}.json"
    assert render_submission(chid, [7, 9], ["3", "0"]) == \
        '{"id": 7, "answer": 3}\n{"id": 9, "answer": 0}\n'
    assert render_submission(ocnli, ["a"], ["neutral"]) == '{"id": "a", "label": "neutral"}\n'


@pytest.fixture(scope="module")
def xnli_start(tmp_path_factory, encoder) -> Path:
    """A tiny XNLI checkpoint: the FS-XLT start of OCNLI (same labels, same order)."""
    root = tmp_path_factory.mktemp("xnli")
    train = write_pairs(root / "train-en.tsv", nli_data(24, 0))
    dev = write_pairs(root / "dev-en.tsv", nli_data(12, 1))
    out = root / "ckpt"
    assert run_app(["source-train", "--task", "xnli", "--train", str(train), "--dev", str(dev),
                    "--model", str(encoder), "--lr", "1e-3", "--epochs", "1", "--device", "cpu",
                    "--out", str(out)]) == 0
    return out


def test_sweep_runs_both_arms_and_report_shows_fewclue_table(store, fewclue, encoder,
                                                              xnli_start, tmp_path, capsys):
    predict = unlabelled_copy(fewclue / "chid" / "test_public.json", tmp_path / "chid-test.json")
    config = {
        "name": "fewclue-test", "out": str(tmp_path / "runs"), "buckets": str(store),
        "methods": [], "no_source_training": {"encoder": str(encoder), "methods": ["full"]},
        "lrs": [1e-3], "max_epochs": 2, "patience": 1, "max_seq_length": 32,
        "tasks": {"ocnli": {"methods": ["full"], "start": str(xnli_start), "k": [TRAIN_SIZE]},
                  "chid": {"predict": str(predict), "k": [TRAIN_SIZE]},
                  "cluewsc": {"k": [TRAIN_SIZE]}},
    }
    path = tmp_path / "fewclue.yaml"
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    assert run_app(["sweep", str(path), "--device", "cpu", "--workers", "0"]) == 0
    runs = tmp_path / "runs"
    ocnli = runs / "ocnli" / "zh" / f"k{TRAIN_SIZE}"
    assert sorted(p.name for p in (ocnli / "full").glob("*.json")) == \
        ["00.json", "01.json", "02.json", "03.json", "04.json", "all.json"]
    record = json.loads((ocnli / "full-nosource" / "03.json").read_text(encoding="utf-8"))
    assert record["data"]["dev"]["source"].endswith("03.dev.jsonl")  # its own dev set
    assert record["data"]["test"]["n"] == 21
    assert record["model"]["source_training"] is False
    assert not (runs / "ocnli" / "zh" / "k0").exists()  # XNLI's zero-shot is not OCNLI's

    submission = runs / "chid" / "zh" / f"k{TRAIN_SIZE}" / "full-nosource" / "submission"
    assert sorted(p.name for p in submission.iterdir()) == \
        [f"chidf_predict_{x}.json" for x in ("0", "1", "2", "3", "4", "all")]
    lines = [json.loads(line) for line in
             (submission / "chidf_predict_all.json").read_text(encoding="utf-8").splitlines()]
    assert [row["id"] for row in lines] == list(range(80, 101))  # the file's own ids
    assert all(set(row) == {"id", "answer"} and 0 <= row["answer"] < 7 for row in lines)

    capsys.readouterr()
    assert run_app(["report", str(runs)]) == 0
    report = capsys.readouterr().out
    assert "### FewCLUE: test accuracy, mean ± std over splits 0-4 (all: the union split)" \
        in report
    assert "| arm | chid | cluewsc | ocnli | average |" in report
    assert "| Full FT | – | – | " in report and "(1 tasks) |" in report
    assert "; all " in report and "(n=5)" not in report and "(n=6)" not in report
    assert run_app(["report", str(runs), "--compare", "full", "full-nosource"]) == 0
    compared = capsys.readouterr().out
    assert "| ocnli | zh | 8 | 5 |" in compared  # paired over the five splits, not all


def test_predict_is_refused_for_a_task_without_submission_files(tmp_path, capsys):
    path = tmp_path / "sweep.yaml"
    path.write_text(yaml.safe_dump({"tasks": {"mldoc": {"predict": "x.json"}}}),
                    encoding="utf-8")
    assert run_app(["sweep", str(path), "--dry-run"]) == 2  # a config error
    err = capsys.readouterr().err.strip()
    assert err.endswith("predict writes a benchmark's submission files (FewCLUE, XGLUE); "
                        "task mldoc has none") and "\n" not in err


def test_micro_batches_count_candidates_not_examples(store, encoder):
    """A ChID bucket of 8 examples is 56 encoder inputs; micro_batch=14 means 2 examples."""
    from fsxlt.sampling.store import read_examples_jsonl
    from fsxlt.training import AdaptEngine

    directory = store / "chid" / "zh" / f"k{TRAIN_SIZE}"
    engine = AdaptEngine.from_start(
        "chid", "zh", str(encoder), dev=read_examples_jsonl(directory / "00.dev.jsonl"),
        device="cpu", micro_batch=14, max_seq_length=32)
    batches = engine._bucket_batches(read_bucket(directory / "00.json").examples)
    assert [b["labels"].numel() for b in batches] == [2, 2, 2, 2]
    assert all(b["input_ids"].shape[0] == 14 for b in batches)


def test_a_missing_dev_or_test_file_is_a_violation_not_a_crash(store, tmp_path):
    import shutil

    copy = tmp_path / "buckets"
    shutil.copytree(store / "bustm", copy / "bustm")
    directory = copy / "bustm" / "zh" / f"k{TRAIN_SIZE}"
    (directory / "02.dev.jsonl").unlink()
    (directory / "test.jsonl").unlink()
    [report] = check_store(copy)
    assert {(v.bucket, v.kind, v.detail) for v in report.violations} == {
        (2, "integrity", "02.dev.jsonl is missing"),
        (None, "integrity", "test.jsonl is missing")}
    assert set(report.label_counts) == {"00", "01", "02", "03", "04", "all"}
