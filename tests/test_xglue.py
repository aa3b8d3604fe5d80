"""XGLUE's understanding tasks read from XGLUE's own files, sampled from dev, adapted."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from fsxlt.cli import run_app
from fsxlt.data import read_examples
from fsxlt.errors import DataFormatError
from fsxlt.sampling.check import check_store
from fsxlt.sampling.store import read_set
from fsxlt.tasks import get_task
from tests.train_fixtures import FILLER, PERSONS, PLACES, make_encoder_dir

NER_TAGS = ("O", "I-PER", "I-LOC", "I-ORG", "I-MISC")


def write_qadsm(directory: Path, lang: str, split: str, n: int, seed: int = 0) -> Path:
    """``query<TAB>ad title<TAB>ad description[<TAB>Good|Bad]`` lines, as XGLUE ships them."""
    rng = random.Random(f"{lang}{split}{seed}")
    lines = []
    for i in range(n):
        label = ("Good", "Bad")[i % 2]
        query = " ".join(rng.choice(FILLER) for _ in range(3))
        title = ("happy " if label == "Good" else "sad ") + rng.choice(PLACES)
        row = [query, title, " ".join(rng.choice(FILLER) for _ in range(5))]
        lines.append("\t".join(row + ([label] if split != "test" else [])))
    path = directory / f"xglue.qadsm.{lang}.{split}"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def write_ner(directory: Path, lang: str, split: str, n: int) -> Path:
    """``word<SPACE>tag`` lines in IOB1, a blank line between sentences."""
    rng = random.Random(f"ner{lang}{split}")
    blocks = []
    for i in range(n):
        words = [(rng.choice(FILLER), "O") for _ in range(3)]
        entity = NER_TAGS[1 + i % 4]
        name = {"I-PER": PERSONS, "I-LOC": PLACES}.get(entity, ["acme", "unesco"])
        words.insert(1, (rng.choice(name), entity))
        blocks.append("\n".join(f"{w} {t}" for w, t in words))
    path = directory / f"{lang}.{split}"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n\n".join(blocks) + "\n", encoding="utf-8")
    return path


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
    assert (tmp_path / "runs" / "qadsm" / "de" / "k1" / "full" / "00.json").is_file()


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
    qadsm = tmp_path / "runs/qadsm/fr/k1/full/submission/01/QADSM/fr.prediction"
    lines = qadsm.read_text(encoding="utf-8").splitlines()
    assert len(lines) == 7 and set(lines) <= {"Good", "Bad"}
    ner = tmp_path / "runs/xglue-ner/es/k1/full/submission/01/NER/es.prediction"
    predicted = ner.read_text(encoding="utf-8").split("\n\n")
    gold = ner_test.read_text(encoding="utf-8").split("\n\n")
    assert [len(p.split()) for p in predicted] == [len(g.splitlines()) for g in gold]
    assert set(ner.read_text(encoding="utf-8").split()) <= set(get_task("xglue-ner").labels)
