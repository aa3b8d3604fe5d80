"""Source-training beyond English: a pivot language, several joined, and how selection works."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fsxlt.cli import run_app
from tests.train_fixtures import make_encoder_dir, ner_data, write_conll


@pytest.fixture(scope="module")
def panx(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("panx")
    data = root / "data"
    for i, lang in enumerate(("en", "de", "es")):
        write_conll(data / f"train-{lang}.tsv", ner_data(12, 10 + i, source=lang))
        write_conll(data / f"dev-{lang}.tsv", ner_data(6, 20 + i, source=lang))
    write_conll(data / "dev-zh.tsv", ner_data(6, 30, source="zh"))
    write_conll(data / "test-zh.tsv", ner_data(6, 31, source="zh"))
    write_conll(data / "test-de.tsv", ner_data(6, 32, source="de"))
    return {"data": data, "encoder": make_encoder_dir(root / "enc")}


def train(panx, out: Path, *extra: str) -> dict:
    assert run_app(["source-train", "--task", "panx", "--model", str(panx["encoder"]),
                    "--data-dir", str(panx["data"]), "--lr", "1e-3", "--epochs", "1",
                    "--device", "cpu", "--out", str(out), *extra]) == 0
    return json.loads((out / "fsxlt_checkpoint.json").read_text(encoding="utf-8"))


def test_a_pivot_language_is_the_source(panx, tmp_path):
    record = train(panx, tmp_path / "de", "--source-lang", "de", "--target", "zh")
    assert record["source_languages"] == ["de"] and record["source_language"] == "de"
    assert record["data"]["train"]["source"].endswith("train-de.tsv")
    assert record["data"]["train"]["n"] == 12
    assert record["selection"]["protocol"] == "source-dev"
    assert record["selection"]["languages"] == ["de"]
    assert "in_source" not in record["zero_shot"]["zh"]


def test_several_languages_are_joined_and_a_source_target_is_marked(panx, tmp_path, capsys):
    record = train(panx, tmp_path / "multi", "--source-lang", "en,de", "--target", "de",
                   "--target", "zh")
    assert record["source_languages"] == ["en", "de"] and record["data"]["train"]["n"] == 24
    assert record["selection"]["languages"] == ["en", "de"]
    assert set(record["source_dev"]) == {"en", "de"}
    best = max(record["checkpoints"], key=lambda c: c["selection_score"])
    assert best["selection_score"] == pytest.approx((best["dev"]["en"] + best["dev"]["de"]) / 2)
    assert record["zero_shot"]["de"]["in_source"] is True
    assert "in_source" not in record["zero_shot"]["zh"]
    out = capsys.readouterr().out
    assert "zero-shot de test (a source language, not zero-shot)" in out


def test_all_dev_selection_averages_every_language_with_a_dev_set(panx, tmp_path):
    record = train(panx, tmp_path / "all", "--source-lang", "all", "--select", "all-dev",
                   "--target", "zh")
    assert record["source_languages"] == ["de", "en", "es"]  # the task's language order
    assert record["selection"]["protocol"] == "all-dev"
    assert record["selection"]["languages"] == ["de", "en", "es", "zh"]


def test_english_stays_the_default(panx, tmp_path):
    record = train(panx, tmp_path / "en", "--target", "zh")
    assert record["source_languages"] == ["en"]
    assert record["selection"]["protocol"] == "english-dev"


@pytest.mark.parametrize(("args", "message"), [
    (["--source-lang", "xx"], "unknown language 'xx' for task panx"),
    (["--source-lang", "en,de", "--train", "x.tsv"], "several source languages read their "
     "files from --data-dir"),
    (["--source-lang", "de", "--select", "best"], "unknown selection 'best'"),
])
def test_bad_source_options_are_one_line(panx, tmp_path, capsys, args, message):
    code = run_app(["source-train", "--task", "panx", "--model", str(panx["encoder"]),
                    "--data-dir", str(panx["data"]), "--out", str(tmp_path / "x"),
                    "--device", "cpu", *args])
    err = capsys.readouterr().err.strip()
    assert code == 2 and message in err and "\n" not in err
