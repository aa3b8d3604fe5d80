"""XGLUE's folders as downloaded: labelled train/dev, unlabelled test (its Data_Format.txt).

docs/xglue.md's commands run on exactly that layout; CoNLL's ``-DOCSTART-``
lines are document breaks; XNLI's per-language ``XNLI/<lang>.<split>`` files
are found. Prediction files for tagging are read back the way XGLUE's
evaluator reads them (written here from its documented behaviour).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from fsxlt.cli import run_app
from fsxlt.data import has_labels, load_split, read_examples
from fsxlt.errors import DataFormatError
from fsxlt.sampling.store import read_set
from fsxlt.tasks import get_task
from tests.train_fixtures import make_encoder_dir
from tests.xglue_fixtures import (
    write_multinli,
    write_nc,
    write_ner,
    write_qadsm,
    write_qam,
    write_wpr,
)

# --------------------------------------------------------------------------- XGLUE's evaluator


def gold_sentences(text: str) -> list[list[str]]:
    """The tags of a gold NER/POS file as XGLUE's evaluator reads them: the last field of
    each line; a blank line or a line starting with -DOCSTART- ends a sentence."""
    sentences, current = [], []
    for line in text.splitlines():
        if line.strip() and not line.startswith("-DOCSTART-"):
            current.append(line.split()[-1])
        elif current:
            sentences.append(current)
            current = []
    return sentences + ([current] if current else [])


def predicted_sentences(text: str) -> list[list[str]]:
    """A prediction file as XGLUE's evaluator reads it: a blank line ends an open
    sentence; any other line, a blank one with no sentence open included, is a tag."""
    sentences, current = [], []
    for line in text.splitlines():
        if not line.strip() and current:
            sentences.append(current)
            current = []
        else:
            current.append(line.strip())
    return sentences + ([current] if current else [])


# --------------------------------------------------------------------------- -DOCSTART-

NER_WITH_DOCSTART = ("-DOCSTART- O\n\njohn I-PER\nwent O\nto O\nparis I-LOC\n\n"
                     "-DOCSTART- -X- -X- O\n\nthe O\nacme I-ORG\n"
                     "-DOCSTART- O\nmaria I-PER\nsaw O\n\n")


def test_docstart_lines_are_document_breaks_not_sentences(tmp_path):
    path = tmp_path / "de.test"
    path.write_text(NER_WITH_DOCSTART, encoding="utf-8")
    assert predicted_sentences("O\n\n\nI-PER\n") == [["O"], ["", "I-PER"]]  # as documented
    sentences = read_examples(path, "xglue-ner")
    assert [s.tokens for s in sentences] == [("john", "went", "to", "paris"), ("the", "acme"),
                                            ("maria", "saw")]
    assert [s.id for s in sentences] == ["de.test:3", "de.test:10", "de.test:13"]
    assert [list(s.tags) for s in sentences] == gold_sentences(NER_WITH_DOCSTART)


def test_docstart_first_does_not_hide_xtremes_language_prefix(tmp_path):
    path = tmp_path / "dev-de.tsv"
    path.write_text("-DOCSTART-\tO\n\nde:Berlin\tB-LOC\nde:ist\tO\n\n", encoding="utf-8")
    assert read_examples(path, "panx")[0].tokens == ("Berlin", "ist")


def test_a_file_of_docstart_lines_only_holds_no_examples(tmp_path):
    path = tmp_path / "de.dev"
    path.write_text("-DOCSTART- -X- -X- O\n\n", encoding="utf-8")
    with pytest.raises(DataFormatError, match="de.dev: file holds no examples"):
        read_examples(path, "xglue-ner")


@pytest.fixture(scope="module")
def encoder(tmp_path_factory) -> Path:
    return make_encoder_dir(tmp_path_factory.mktemp("layout-enc"))


def test_ner_prediction_file_of_input_with_docstart_scores_with_xglues_evaluator(
        encoder, tmp_path):
    data = tmp_path / "XGLUE" / "NER"
    write_ner(data, "de", "dev", 30)
    test = data / "de.test"
    test.write_text(NER_WITH_DOCSTART, encoding="utf-8")
    out = tmp_path / "buckets"
    assert run_app(["sample", "--task", "xglue-ner", "--lang", "de", "-k", "1", "--n-buckets",
                    "1", "--data-dir", str(data), "--out", str(out)]) == 0
    adapt = ["adapt", "--task", "xglue-ner", "--lang", "de", "--from", str(encoder),
             "--bucket", str(out / "xglue-ner/de/k1"), "--no-test", "--predict",
             str(test), "--out", str(tmp_path / "runs"), "--max-epochs", "1",
             "--lr", "1e-3", "--device", "cpu"]
    assert run_app(adapt) == 0
    record = next((tmp_path / "runs").rglob("00.json"))
    stamp = record.stat().st_mtime_ns
    assert run_app(adapt) == 0  # a --no-test run is finished without a test score: found
    assert record.stat().st_mtime_ns == stamp
    written = next((tmp_path / "runs").rglob("NER/de.prediction")).read_text(encoding="utf-8")
    predicted, gold = predicted_sentences(written), gold_sentences(NER_WITH_DOCSTART)
    assert [len(p) for p in predicted] == [len(g) for g in gold]  # word j <-> tag line j
    assert {tag for tags in predicted for tag in tags} <= set(get_task("xglue-ner").labels)


# --------------------------------------------------------------------------- files to predict

def test_xglue_test_files_have_no_labels_and_say_so(tmp_path):
    dev, test = write_qam(tmp_path, "de", "dev", 4), write_qam(tmp_path, "de", "test", 4)
    assert has_labels(dev, "qam") and not has_labels(test, "qam")
    with pytest.raises(DataFormatError, match=r"xglue.qam.de.test:1: expected 3 tab-separated "
                       r"fields .*found 2 \(no label: a file to predict"):
        read_examples(test, "qam")
    broken = tmp_path / "xglue.qam.fr.dev"  # labelled, one label lost further on
    broken.write_text(dev.read_text(encoding="utf-8") + "q\tpassage\n", encoding="utf-8")
    with pytest.raises(DataFormatError, match=r"xglue.qam.fr.dev:5: expected 3"):
        has_labels(broken, "qam")


# ----------------------------------------------------------------------- docs/xglue.md's commands

WRITERS = {"nc": write_nc, "qadsm": write_qadsm, "qam": write_qam}


def xglue_folder(root: Path, task: str) -> Path:
    """``root/XGLUE/<TASK>`` as XGLUE ships it: English train and dev, German dev, and
    German test without labels."""
    folder = root / "XGLUE" / task.upper()
    if task == "wpr":
        write_wpr(folder, "en", "train", 8)
        write_wpr(folder, "en", "dev", 4, seed=1)
        write_wpr(folder, "de", "dev", 10, seed=2)
        write_wpr(folder, "de", "test", 4, seed=3)
    else:
        write = WRITERS[task]
        write(folder, "en", "train", 20)
        write(folder, "en", "dev", 10, seed=1)
        write(folder, "de", "dev", 40 if task == "nc" else 20, seed=2)
        write(folder, "de", "test", 6, seed=3)
    return folder


def source_train(task: str, data: Path, encoder: Path, out: Path) -> int:
    return run_app(["source-train", "--task", task, "--model", str(encoder), "--data-dir",
                    str(data), "--target", "de", "--lr", "1e-3", "--epochs", "1",
                    "--device", "cpu", "--out", str(out)])


def test_readme_wpr_workflow_on_xglues_folder(encoder, tmp_path, capsys):
    """docs/xglue.md's commands, verbatim but for the tiny model and short training."""
    wpr = xglue_folder(tmp_path, "wpr")
    buckets, ckpt, runs = tmp_path / "buckets/xglue", tmp_path / "ckpt/wpr", tmp_path / "runs"
    assert run_app(["sample", "--task", "wpr", "--lang", "de", "--data-dir", str(wpr), "--out",
                    str(buckets), "-k", "1", "--n-buckets", "2"]) == 0
    assert run_app(["buckets", "check", str(buckets / "wpr/de/k1"), "--source",
                    str(wpr / "xglue.wpr.de.dev")]) == 0
    capsys.readouterr()
    assert source_train("wpr", wpr, encoder, ckpt) == 0
    err = capsys.readouterr().err
    assert "xglue.wpr.de.test: the test file carries no labels" in err
    assert "no zero-shot test score for de" in err and "Traceback" not in err
    record = json.loads((ckpt / "fsxlt_checkpoint.json").read_text(encoding="utf-8"))
    assert "de" not in record["zero_shot"]
    assert run_app(["adapt", "--task", "wpr", "--lang", "de", "--from", str(ckpt), "--bucket",
                    str(buckets / "wpr/de/k1"), "--no-test", "--predict",
                    str(wpr / "xglue.wpr.de.test"), "--out", str(runs), "--max-epochs", "1",
                    "--lr", "1e-3", "--device", "cpu"]) == 0
    prediction = runs / "wpr/de/k1/full/submission/01/WPR/de.prediction"
    test_lines = (wpr / "xglue.wpr.de.test").read_text(encoding="utf-8").splitlines()
    assert len(prediction.read_text(encoding="utf-8").splitlines()) == len(test_lines)


@pytest.mark.parametrize("task", ["nc", "qadsm", "qam"])
def test_source_train_reads_target_dev_and_skips_an_unlabelled_test(task, encoder, tmp_path,
                                                                    capsys):
    folder = xglue_folder(tmp_path, task)
    assert source_train(task, folder, encoder, tmp_path / "ckpt") == 0
    err = capsys.readouterr().err
    assert f"xglue.{task}.de.test: the test file carries no labels" in err
    record = json.loads((tmp_path / "ckpt/fsxlt_checkpoint.json").read_text(encoding="utf-8"))
    assert record["zero_shot"] == {}
    assert "de" in json.dumps(record["data"]["target_dev"])


def test_source_train_without_a_test_file_says_so_and_goes_on(encoder, tmp_path, capsys):
    folder = xglue_folder(tmp_path, "qam")
    (folder / "xglue.qam.de.test").unlink()
    assert source_train("qam", folder, encoder, tmp_path / "ckpt") == 0
    assert "xglue.qam.de.test: no test file; no zero-shot test score for de" in \
        capsys.readouterr().err


def test_a_sweep_on_xglues_folder_refuses_the_unlabelled_test_in_one_line(encoder, tmp_path,
                                                                          capsys):
    """A run is scored on a labelled test set: the sweep says the file has none and what
    to do, before anything is written."""
    folder = xglue_folder(tmp_path, "qadsm")
    buckets = tmp_path / "buckets"
    assert run_app(["sample", "--task", "qadsm", "--lang", "de", "-k", "1", "--n-buckets", "1",
                    "--data-dir", str(folder), "--out", str(buckets)]) == 0
    config = {"out": str(tmp_path / "runs"), "buckets": str(buckets), "data_dir": str(folder),
              "start": str(encoder), "n_buckets": 1, "max_epochs": 1,
              "predict": str(folder / "xglue.qadsm.de.test"),
              "tasks": {"qadsm": {"languages": ["de"], "k": [1]}}}
    (tmp_path / "sweep.yaml").write_text(yaml.safe_dump(config), encoding="utf-8")
    capsys.readouterr()
    assert run_app(["sweep", str(tmp_path / "sweep.yaml"), "--device", "cpu"]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "xglue.qadsm.de.test: the test file of qadsm/de carries no " \
        "labels" in err and "--no-test --predict" in err
    assert not (tmp_path / "runs").exists()
    assert run_app(["adapt", "--task", "qadsm", "--lang", "de", "--from", str(encoder),
                    "--bucket", str(buckets / "qadsm/de/k1"), "--data-dir", str(folder),
                    "--out", str(tmp_path / "runs")]) == 2
    assert "carries no labels" in capsys.readouterr().err


# --------------------------------------------------------------------------- XNLI/<lang>.<split>

def write_xnli_language(folder: Path, lang: str, split: str, n: int, labelled: bool = True):
    """XGLUE's ``XNLI/<lang>.<split>``: premise, hypothesis (and label), no header."""
    labels = ("entailment", "neutral", "contradictory" if lang == "en" else "contradiction")
    lines = [f"the {lang} cat {i}\tjohn {('happy', 'big', 'not')[i % 3]} {i}"
             + (f"\t{labels[i % 3]}" if labelled else "") for i in range(n)]
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{lang}.{split}").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return folder / f"{lang}.{split}"


def test_xnli_per_language_files_are_found_by_data_dir(encoder, tmp_path, capsys):
    xnli = tmp_path / "XGLUE" / "XNLI"
    write_multinli(xnli, 12)
    write_xnli_language(xnli, "en", "dev", 6)
    dev = write_xnli_language(xnli, "de", "dev", 24)
    test = write_xnli_language(xnli, "de", "test", 5, labelled=False)
    split = load_split("xnli", "de", "dev", data_dir=xnli)
    assert split.source == str(dev) and len(split.examples) == 24
    assert load_split("xnli", "en", "dev", data_dir=xnli).examples[2].label == "contradiction"
    out = tmp_path / "buckets"
    assert run_app(["sample", "--task", "xnli", "--lang", "de", "--data-dir", str(xnli),
                    "--out", str(out), "-k", "1", "--n-buckets", "2"]) == 0
    manifest, _buckets, _rest = read_set(out / "xnli/de/k1")
    assert manifest["source"]["file"].endswith("de.dev")
    assert not has_labels(test, "xnli", language="de")
    capsys.readouterr()
    assert source_train("xnli", xnli, encoder, tmp_path / "ckpt") == 0
    assert "de.test: the test file carries no labels" in capsys.readouterr().err


def test_a_sweeps_predict_path_takes_the_language(tmp_path):
    """``predict: .../xglue.nc.{lang}.test``: one file per language of a task."""
    from fsxlt.errors import FsxltError
    from fsxlt.execution import parse_config

    config = {"out": str(tmp_path / "runs"), "predict": str(tmp_path / "xglue.{task}.{lang}.test"),
              "tasks": {"nc": {"languages": ["de", "fr"]}}}
    plan = parse_config(config).tasks[0]
    assert plan.predict == str(tmp_path / "xglue.nc.{lang}.test")
    with pytest.raises(FsxltError, match=r"predict may hold \{lang\}, \{task\}, not \{split\}"):
        parse_config(dict(config, predict=str(tmp_path / "x.{split}")))
