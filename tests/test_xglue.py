"""XGLUE's understanding tasks read from XGLUE's own files, sampled from dev, adapted."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from fsxlt.cli import run_app
from fsxlt.data import read_examples
from fsxlt.errors import DataFormatError
from fsxlt.sampling.check import check_store
from fsxlt.sampling.store import read_set
from fsxlt.tasks import get_task, parse_task
from tests.train_fixtures import make_encoder_dir
from tests.xglue_fixtures import write_ner, write_qadsm, write_task, write_wpr, write_xnli


def test_qadsm_columns_join_into_the_pair_and_test_files_have_no_label(tmp_path):
    dev = write_qadsm(tmp_path, "de", "dev", 4)
    first = read_examples(dev, "qadsm")[0]
    query, title, description, label = dev.read_text(encoding="utf-8").splitlines()[0] \
        .split("\t")
    assert (first.text_a, first.text_b, first.label) == (query, f"{title} . {description}",
                                                         label)
    test = write_qadsm(tmp_path, "de", "test", 3)
    assert len(read_examples(test, "qadsm", labelled=False)) == 3
    with pytest.raises(DataFormatError, match=r"xglue.qadsm.de.test:1: expected 4 "
                       r"tab-separated fields \(text_a, text_b, text_b, label\), found 3"):
        read_examples(test, "qadsm")


def test_nc_and_qam_columns():
    assert get_task("nc").data.columns == ("text_a", "text_a", "text_b", "label")
    assert len(get_task("nc").labels) == 10
    assert get_task("qam").data.columns == ("text_a", "text_b", "label")


def test_classification_buckets_come_from_dev_and_leave_the_rest_for_selection(tmp_path):
    write_qadsm(tmp_path / "data", "de", "dev", 30)
    out = tmp_path / "buckets"
    assert run_app(["sample", "--task", "qadsm", "--lang", "de", "-k", "2", "--n-buckets", "5",
                    "--data-dir", str(tmp_path / "data"), "--out", str(out)]) == 0
    manifest, buckets, remaining = read_set(out / "qadsm" / "de" / "k2")
    assert manifest["split"] == "dev" and len(buckets) == 5 and len(remaining) == 30 - 20
    assert all(report.ok for report in check_store(out))


def test_xglue_ner_reads_space_separated_iob1_with_misc_and_samples_from_dev(tmp_path):
    dev = write_ner(tmp_path / "data", "nl", "dev", 40)
    sentences = read_examples(dev, "xglue-ner")
    assert len(sentences) == 40 and "I-MISC" in sentences[3].tags
    assert get_task("xglue-ner").sampling_labels == ("PER", "ORG", "LOC", "MISC")
    out = tmp_path / "buckets"
    assert run_app(["sample", "--task", "xglue-ner", "--lang", "nl", "-k", "1", "--n-buckets",
                    "4", "--data-dir", str(tmp_path / "data"), "--out", str(out)]) == 0
    _manifest, buckets, remaining = read_set(out / "xglue-ner" / "nl" / "k1")
    used = {ex.id for b in buckets for ex in b.examples}
    assert remaining and not used & {ex.id for ex in remaining}
    assert len(used) + len(remaining) == 40
    reports = check_store(out)
    assert all(report.ok for report in reports), reports[0].violations


def test_adapt_on_a_qadsm_bucket_selects_on_the_remaining_dev(tmp_path):
    data = tmp_path / "data"
    write_qadsm(data, "de", "dev", 30)
    labelled_test = write_qadsm(tmp_path / "test", "de", "dev", 10, seed=1)
    out = tmp_path / "buckets"
    assert run_app(["sample", "--task", "qadsm", "--lang", "de", "-k", "1", "--n-buckets", "2",
                    "--data-dir", str(data), "--out", str(out)]) == 0
    encoder = make_encoder_dir(tmp_path / "enc")
    assert run_app(["adapt", "--task", "qadsm", "--lang", "de", "--bucket",
                    str(out / "qadsm" / "de" / "k1" / "00.json"), "--from", str(encoder),
                    "--test", str(labelled_test), "--out", str(tmp_path / "runs"),
                    "--max-epochs", "1", "--lr", "1e-3", "--device", "cpu"]) == 0
    assert (tmp_path / "runs" / "qadsm" / "de" / "k1" / "full-nosource" / "00.json").is_file()


def test_prediction_files_in_xglue_format(tmp_path):
    """One label per input line; tags one per word line, a blank line between sentences."""
    data = tmp_path / "data"
    write_qadsm(data, "fr", "dev", 30)
    to_predict = write_qadsm(tmp_path / "in", "fr", "test", 7)
    write_ner(data, "es", "dev", 40)
    ner_test = write_ner(tmp_path / "in", "es", "test", 5)
    encoder = make_encoder_dir(tmp_path / "enc")
    for task, lang, k, file in (("qadsm", "fr", "1", to_predict),
                                ("xglue-ner", "es", "1", ner_test)):
        out = tmp_path / "buckets"
        assert run_app(["sample", "--task", task, "--lang", lang, "-k", k, "--n-buckets", "2",
                        "--data-dir", str(data), "--out", str(out)]) == 0
        assert run_app(["adapt", "--task", task, "--lang", lang, "--bucket",
                        str(out / task / lang / f"k{k}" / "01.json"), "--from", str(encoder),
                        "--no-test", "--predict", str(file), "--out", str(tmp_path / "runs"),
                        "--max-epochs", "1", "--lr", "1e-3", "--device", "cpu"]) == 0
    qadsm = tmp_path / "runs/qadsm/fr/k1/full-nosource/submission/01/QADSM/fr.prediction"
    lines = qadsm.read_text(encoding="utf-8").splitlines()
    assert len(lines) == 7 and set(lines) <= {"Good", "Bad"}
    ner = tmp_path / "runs/xglue-ner/es/k1/full-nosource/submission/01/NER/es.prediction"
    predicted = ner.read_text(encoding="utf-8").split("\n\n")
    gold = ner_test.read_text(encoding="utf-8").split("\n\n")
    assert [len(p.split()) for p in predicted] == [len(g.splitlines()) for g in gold]
    assert set(ner.read_text(encoding="utf-8").split()) <= set(get_task("xglue-ner").labels)


# --------------------------------------------------------------------------- wpr: ranking

def test_ndcg_against_a_hand_worked_example():
    """Query q1: gold grades 3, 2, 0 ranked by predicted grades 2, 4, 0 -> order 2, 3, 0.
    DCG = 2/log2(2) + 3/log2(3) + 0 = 3.8928; ideal = 3 + 2/log2(3) = 4.2619;
    nDCG = 0.91340. Query q2 is ranked perfectly (1.0); q3 has one page and is
    left out. The mean over queries is 0.95670. Expected grades .5, .9, .1, .2, .8
    rank the same way (fsxlt's own second figure)."""
    from fsxlt.metrics.scores import compute_scores

    gold = ["3", "2", "0", "0", "1", "4"]
    predicted = ["2", "4", "0", "0", "1", "4"]
    relevance = [0.5, 0.9, 0.1, 0.2, 0.8, 3.0]
    groups = ["q1", "q1", "q1", "q2", "q2", "q3"]
    q1 = (2 + 3 / math.log2(3)) / (3 + 2 / math.log2(3))
    assert q1 == pytest.approx(0.913402, abs=1e-6)
    scores = compute_scores(get_task("wpr"), gold, predicted, relevance=relevance,
                            groups=groups)
    assert scores["score"] == pytest.approx((q1 + 1.0) / 2)
    assert scores["fsxlt_expected_grade_ndcg"] == pytest.approx((q1 + 1.0) / 2)
    assert scores["n_queries"] == 2 and scores["single_page_queries"] == 1
    assert scores["accuracy"] == pytest.approx(4 / 6)


def test_wpr_reads_grades_and_groups_pages_by_query(tmp_path):
    dev = write_wpr(tmp_path, "de", "dev", 3)
    pages = read_examples(dev, "wpr")
    query, title, snippet, grade = dev.read_text(encoding="utf-8").splitlines()[0].split("\t")
    assert (pages[0].text_a, pages[0].text_b, pages[0].label) == (query, f"{title} . {snippet}",
                                                                  grade)
    assert len({p.text_a for p in pages}) == 3


@pytest.mark.parametrize("seed", range(25))
def test_k_queries_buckets_hold_whole_queries_disjoint_and_reproducible(tmp_path, seed):
    from fsxlt.data import load_split
    from fsxlt.sampling.api import sample_set

    write_wpr(tmp_path, "fr", "dev", 30, seed=seed)
    split = load_split("wpr", "fr", "dev", data_dir=tmp_path)
    k = 1 + seed % 3
    bucket_set = sample_set("wpr", split, k, n_buckets=6, seed=seed)
    pages: dict[str, set[str]] = {}
    for ex in split.examples:
        pages.setdefault(ex.text_a, set()).add(ex.id)
    seen: set[str] = set()
    for bucket in bucket_set.buckets:
        queries = {ex.text_a for ex in bucket}
        assert len(queries) == k and not queries & seen
        assert {ex.id for ex in bucket} == set().union(*(pages[q] for q in queries))
        seen |= queries
    assert {ex.text_a for ex in bucket_set.dev_remaining} == set(pages) - seen
    again = sample_set("wpr", split, k, n_buckets=6, seed=seed)
    assert [[ex.id for ex in b] for b in again.buckets] == \
        [[ex.id for ex in b] for b in bucket_set.buckets]


def test_buckets_check_finds_a_split_query_and_a_query_left_in_dev(tmp_path):
    import json

    from fsxlt.sampling.store import MANIFEST

    data = tmp_path / "data"
    write_wpr(data, "de", "dev", 12)
    out = tmp_path / "buckets"
    assert run_app(["sample", "--task", "wpr", "--lang", "de", "-k", "2", "--n-buckets", "3",
                    "--data-dir", str(data), "--out", str(out)]) == 0
    directory = out / "wpr" / "de" / "k2"
    source = data / "xglue.wpr.de.dev"
    assert all(r.ok for r in check_store(out, source))
    bucket = json.loads((directory / "00.json").read_text(encoding="utf-8"))
    dropped = bucket["examples"].pop()  # one page of a bucket query goes missing ...
    text = json.dumps(bucket, ensure_ascii=False, indent=1) + "\n"
    (directory / "00.json").write_text(text, encoding="utf-8")
    remaining = directory / "dev-remaining.jsonl"  # ... and turns up in the remaining dev
    with remaining.open("a", encoding="utf-8") as handle:
        handle.write(json.dumps(dropped, ensure_ascii=False) + "\n")
    manifest = json.loads((directory / MANIFEST).read_text(encoding="utf-8"))
    from fsxlt.fileio import sha256_text

    manifest["buckets"][0]["sha256"] = sha256_text(text)
    manifest["buckets"][0]["ids"] = [ex["id"] for ex in bucket["examples"]]
    manifest["dev_remaining"]["sha256"] = sha256_text(remaining.read_text(encoding="utf-8"))
    (directory / MANIFEST).write_text(json.dumps(manifest), encoding="utf-8")
    report = check_store(out, source)[0]
    kinds = report.kinds()
    assert kinds["count"] == 1 and kinds["dev-leak"] >= 1, report.violations
    assert any("pages of its queries are missing" in v.detail for v in report.violations)


def test_a_ranking_task_needs_numeric_grades_and_whole_query_buckets(tmp_path):
    import yaml

    from fsxlt.errors import FsxltError

    raw = yaml.safe_load(Path(get_task("wpr").config_path).read_text(encoding="utf-8"))
    with pytest.raises(FsxltError, match="metric ndcg and sampler k-queries go together"):
        parse_task(dict(raw, sampling=dict(raw["sampling"], sampler="nway-kshot")))
    with pytest.raises(FsxltError, match="metric ndcg needs numeric labels"):
        parse_task(dict(raw, labels=["bad", "good"], label_names={}))


# --------------------------------------------------------------------------- XNLI / PAWS-X

def test_xnli_one_file_layout_reads_one_language_and_multinli_spellings(tmp_path):
    dev = write_xnli(tmp_path, "dev", 6)
    german = read_examples(dev, "xnli", language="de")
    assert len(german) == 6 and all(ex.id.startswith("xnli.dev.tsv:") for ex in german)
    assert [ex.label for ex in german[:3]] == ["entailment", "neutral", "contradiction"]
    with pytest.raises(DataFormatError, match="holds every language"):
        read_examples(dev, "xnli")
    with pytest.raises(DataFormatError, match="no example of language 'fr'"):
        read_examples(dev, "xnli", language="fr")
    write_task("xnli", tmp_path / "x")
    train = read_examples(tmp_path / "x/data/multinli.train.en.tsv", "xnli")
    assert train[2].label == "contradiction"  # MultiNLI's "contradictory"


# --------------------------------------------------------------------------- end to end

XGLUE_TASKS = ["nc", "qadsm", "qam", "wpr", "xglue-ner", "xglue-pos", "xnli", "pawsx"]


@pytest.fixture(scope="module")
def xglue_encoder(tmp_path_factory) -> Path:
    return make_encoder_dir(tmp_path_factory.mktemp("xglue-enc"))


@pytest.mark.parametrize("task", XGLUE_TASKS)
def test_every_xglue_task_end_to_end(task, xglue_encoder, tmp_path, capsys):
    """XGLUE's layout: source-train on English, sample German buckets from dev, sweep with
    a prediction file, report; the prediction file has one line per input line."""
    import json

    import yaml

    files = write_task(task, tmp_path)
    data, ckpt = tmp_path / "data", tmp_path / "ckpt"
    assert run_app(["source-train", "--task", task, "--model", str(xglue_encoder),
                    "--data-dir", str(data), "--target", "de", "--lr", "1e-3", "--epochs",
                    "1", "--device", "cpu", "--out", str(ckpt)]) == 0
    record = json.loads((ckpt / "fsxlt_checkpoint.json").read_text(encoding="utf-8"))
    assert 0.0 <= record["zero_shot"]["de"]["score"] <= 1.0
    assert run_app(["sample", "--task", task, "--lang", "de", "-k", "1", "--n-buckets", "2",
                    "--data-dir", str(data), "--out", str(tmp_path / "buckets")]) == 0
    config = {"name": "xglue", "out": str(tmp_path / "runs"), "buckets": str(tmp_path / "buckets"),
              "data_dir": str(data), "start": str(ckpt), "methods": ["full"], "n_buckets": 2,
              "lrs": [1e-3], "max_epochs": 2, "patience": 1, "max_seq_length": 32,
              "predict": str(files["predict"]),
              "tasks": {task: {"languages": ["de"], "k": [1]}}}
    (tmp_path / "sweep.yaml").write_text(yaml.safe_dump(config), encoding="utf-8")
    assert run_app(["sweep", str(tmp_path / "sweep.yaml"), "--device", "cpu",
                    "--workers", "0"]) == 0  # in this process: workers are test_sweep's
    runs = tmp_path / "runs" / task / "de"
    assert sorted(p.name for p in (runs / "k1" / "full").glob("*.json")) == ["00.json", "01.json"]
    assert (runs / "k0" / "zero-shot.json").is_file()
    spec = get_task(task)
    prediction = runs / "k1" / "full" / "submission" / "01" / spec.submission / "de.prediction"
    text = prediction.read_text(encoding="utf-8")
    if spec.is_tagging:
        sentences = text.strip("\n").split("\n\n")
        assert len(sentences) == files["lines"]
        assert set(text.split()) <= set(spec.labels)
    else:
        assert len(text.splitlines()) == files["lines"] and set(text.split()) <= set(spec.labels)
    capsys.readouterr()
    assert run_app(["report", str(tmp_path / "runs"), "--expected-buckets", "2"]) == 0
    assert f"### {task}: Full FT, source en (K=0: zero-shot; test" in capsys.readouterr().out


# --------------------------------------------------------------------------- the hub

@pytest.mark.parametrize(("task", "message"), [
    ("marc", "marc: no Hugging Face copy loads: amazon_reviews_multi was withdrawn"),
    ("wpr", "wpr: no Hugging Face copy loads: microsoft/xglue is a loading script"),
    ("xglue-ner", "get XGLUE's files from github.com/microsoft/XGLUE"),
])
def test_datasets_gone_from_the_hub_say_so_in_one_line(task, message, tmp_path, capsys):
    assert run_app(["sample", "--task", task, "--lang", "de", "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and "\n" not in err and "--data" in err
    assert not any(tmp_path.iterdir())


def test_a_loading_script_dataset_is_named_as_such(monkeypatch):
    import datasets

    from fsxlt.data import load_hub_split
    from fsxlt.errors import FsxltError

    def refuse(*args, **kwargs):
        raise RuntimeError("Dataset scripts are no longer supported, but found xnli.py")

    monkeypatch.setattr(datasets, "load_dataset", refuse)
    with pytest.raises(FsxltError, match=r"facebook/xnli is a loading-script dataset, which "
                       r"datasets \S+ no longer runs; pass local files"):
        load_hub_split(get_task("xnli"), "de", "dev")
