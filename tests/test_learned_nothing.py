"""Issue 61, item 6 (and 62, item 6): a model folder whose tokenizer cannot tokenize is
refused before any training, and a start that learned nothing is said: when source-trained,
in its checkpoint, and in every report over runs adapted from it."""

from __future__ import annotations

import json
import random
import shutil
from pathlib import Path

import pytest

from fsxlt.cli import run_app
from fsxlt.data import TextExample
from fsxlt.report.records import load_records
from fsxlt.report.tables import aggregate
from fsxlt.tasks import get_task
from fsxlt.training.source import learned_nothing
from tests.sweep_fixtures import N_BUCKETS, build_study, sweep_config, write_config
from tests.train_fixtures import NLI_LABELS, make_encoder_dir, nli_data, write_pairs


@pytest.fixture(scope="module")
def study(tmp_path_factory) -> dict[str, Path]:
    return build_study(tmp_path_factory.mktemp("learned-nothing-study"))


def small_sweep(study: dict[str, Path], out: Path, tmp_path: Path, **extra) -> Path:
    """Run fc over two buckets of xnli/de K=1 for one epoch into ``out``; its config."""
    config = write_config(tmp_path / "sweep.yaml", sweep_config(
        study, out, methods=["fc"], n_buckets=2, max_epochs=1,
        tasks={"xnli": {"languages": ["de"], "k": [1]}}, **extra))
    assert run_app(["sweep", str(config), "--workers", "0", "--threads", "1"]) == 0
    return config


def _source_train(tmp_path: Path, encoder: Path, train: list, capsys) -> tuple[int, str]:
    data = tmp_path / "data"
    train_file = write_pairs(data / "train-en.tsv", train)
    dev = write_pairs(data / "dev-en.tsv", nli_data(9, seed=2))
    capsys.readouterr()
    code = run_app(["source-train", "--task", "xnli", "--model", str(encoder), "--train",
                    str(train_file), "--dev", str(dev), "--epochs", "1", "--lr", "1e-3",
                    "--device", "cpu", "--out", str(tmp_path / "ckpt")])
    return code, capsys.readouterr().err


def test_a_model_folder_without_its_tokenizer_is_refused_before_training(tmp_path, capsys):
    encoder = make_encoder_dir(tmp_path / "enc")
    for path in encoder.iterdir():
        if path.name not in ("config.json", "model.safetensors"):
            shutil.rmtree(path) if path.is_dir() else path.unlink()
    config = json.loads((encoder / "config.json").read_text())
    config["tokenizer_class"] = "BertTokenizer"  # transformers then builds an empty one
    (encoder / "config.json").write_text(json.dumps(config))
    code, err = _source_train(tmp_path, encoder, nli_data(24, seed=1), capsys)
    assert code == 2 and err.count("\n") == 1 and "Traceback" not in err
    assert "no tokenizer files" in err and "tokenizer.json" in err  # seen before loading
    assert not (tmp_path / "ckpt").exists()
    # a tokenizer file that holds no vocabulary passes the folder check and is refused
    # once loaded, still before training
    (encoder / "tokenizer_config.json").write_text(json.dumps(
        {"tokenizer_class": "BertTokenizer"}))
    code, err = _source_train(tmp_path, encoder, nli_data(24, seed=1), capsys)
    assert code == 2 and err.count("\n") == 1 and "Traceback" not in err
    assert "pieces, all special tokens: no vocabulary" in err and "tokenizer.json" in err
    assert not (tmp_path / "ckpt").exists()


def test_a_tokenizer_that_knows_none_of_the_words_is_refused(tmp_path, capsys):
    encoder = make_encoder_dir(tmp_path / "enc")
    rng = random.Random(0)
    words = ["".join(rng.choice("qxzvwjk") for _ in range(6)) for _ in range(40)]
    unknown = [TextExample(f"t:{i}", " ".join(rng.sample(words, 4)),
                           " ".join(rng.sample(words, 3)), NLI_LABELS[i % 3]) for i in range(24)]
    code, err = _source_train(tmp_path, encoder, unknown, capsys)
    assert code == 2 and err.count("\n") == 1
    assert "knows 0 of the first 168 words of the training data" in err
    assert not (tmp_path / "ckpt").exists()


@pytest.mark.parametrize("seed", range(30))
def test_learned_nothing_is_said_exactly_for_a_zero_score_or_one_label(seed):
    """As a property: a warning per dev set whose score is 0 or whose predictions are one
    label (classification), none for any other."""
    rng = random.Random(seed)
    task = get_task("xnli")
    scores, predicted, expected = {}, {}, set()
    for lang in ("en", "de", "fr"):
        n = rng.randint(2, 12)
        labels = [rng.choice(NLI_LABELS[: rng.randint(1, 3)]) for _ in range(n)]
        score = rng.choice([0.0, round(rng.random(), 3) or 0.5])
        scores[lang], predicted[lang] = {"score": score}, labels
        if score == 0.0 or len(set(labels)) == 1:
            expected.add(lang)
    lines = learned_nothing(task, scores, predicted)
    assert {lang for lang in scores if any(f"the {lang} dev set" in line for line in lines)} \
        == expected and len(lines) == len(expected)


def test_a_start_that_learned_nothing_is_said_in_every_report(study, tmp_path, capsys):
    shutil.copytree(study["checkpoint"], tmp_path / "ckpt")  # the module's study stays
    study = dict(study, checkpoint=tmp_path / "ckpt")
    meta_path = study["checkpoint"] / "fsxlt_checkpoint.json"
    meta = json.loads(meta_path.read_text())
    warning = "the kept checkpoint scores 0.00 on the en dev set: it learned nothing"
    meta["warnings"] = [warning]
    meta_path.write_text(json.dumps(meta))
    out = tmp_path / "runs"
    small_sweep(study, out, tmp_path)
    zero = json.loads((out / "xnli/de/k0/zero-shot.json").read_text())
    record = json.loads((out / "xnli/de/k1/fc/00.json").read_text())
    assert zero["warnings"] == [warning] == record["model"]["start"]["warnings"]
    capsys.readouterr()
    assert run_app(["report", str(out), "--out", str(tmp_path / "report")]) == 0
    err = capsys.readouterr().err
    assert "warning: xnli/de/fc and 1 more: their start learned nothing" in err
    page = (tmp_path / "report" / "report.md").read_text()
    assert "Runs whose start learned nothing" in page and f"- xnli/de/fc: {warning}" in page
    # the results card of the exported study says it too (issue 72, item 4)
    assert run_app(["runs", "export", str(out), str(tmp_path / "export")]) == 0
    card = (tmp_path / "export" / "README.md").read_text(encoding="utf-8")
    assert "**Warning: a start that learned nothing.**" in card
    assert f"- fc: {warning}" in card and f"- K=0 of xnli/de: {warning}" in card


def test_a_planned_subset_reports_no_missing_buckets_and_a_real_gap_is_named(study, tmp_path,
                                                                           capsys):
    """Issue 62, item 2: a sweep's records carry its plan (the cell's bucket indexes it
    runs), so a report of a deliberate subset (``n_buckets: 2`` of a larger set) names no
    missing buckets, and a bucket the sweep planned but has no record of is named."""
    assert N_BUCKETS > 2
    out = tmp_path / "runs"
    config = small_sweep(study, out, tmp_path)
    record = json.loads((out / "xnli/de/k1/fc/01.json").read_text())
    assert record["run"]["plan"] == {"buckets": [0, 1]}
    assert "plan" not in json.dumps(record["run"]["identity"])
    cells = aggregate(load_records(out))
    cell = cells[(cells["k"] == 1) & (cells["arm"] == "fc")].iloc[0]
    assert cell["missing"] == "" and cell["expected"] == 2 and cell["n"] == 2
    capsys.readouterr()
    assert run_app(["report", str(out)]) == 0
    text = capsys.readouterr().out
    assert "Missing buckets" not in text
    # issue 73, item 5: 2 of the set's 5 buckets are marked so, planned or not, and an
    # interval over so few buckets is marked as such; issue 74, item 4: two buckets that
    # scored alike give no interval at all, and the page says why
    assert cell["set_buckets"] == N_BUCKETS and "(n=2)" in text
    assert "| none (1 distinct resampled value) |" in text
    assert "which a bootstrap cannot say much of" not in text
    (out / "xnli/de/k1/fc/01.json").unlink()  # a run the sweep planned but has no record of
    cells = aggregate(load_records(out))
    assert cells[(cells["k"] == 1) & (cells["arm"] == "fc")].iloc[0]["missing"] == "01"
    cells = aggregate(load_records(out), expected=N_BUCKETS)  # --expected-buckets decides
    assert cells[(cells["k"] == 1)].iloc[0]["missing"] == " ".join(
        f"{i:02d}" for i in range(1, N_BUCKETS))
    assert run_app(["sweep", str(config), "--workers", "0", "--threads", "1"]) == 0
    assert "1 runs completed, 0 failed, 1 already done" in capsys.readouterr().out


def test_a_smoke_test_with_dev_and_test_limits_keeps_its_zero_shot_column(study, tmp_path,
                                                                          capsys):
    """Issue 62, item 7: source-train --dev-limit/--test-limit and the sweep's dev_limit
    and test_limit take the same seeded samples: the checkpoint's K=0 score is of the
    runs' test sample, so the sweep copies it; the limits are in every identity."""
    data = tmp_path / "data"
    test = study["data"] / "test-de.tsv"
    train = write_pairs(data / "train-en.tsv", nli_data(24, seed=1))
    dev = write_pairs(data / "dev-en.tsv", nli_data(30, seed=2))
    ckpt = tmp_path / "ckpt"
    assert run_app(["source-train", "--task", "xnli", "--model", str(study["encoder"]),
                    "--train", str(train), "--dev", str(dev), "--target", "de",
                    "--target-test", f"de={test}", "--dev-limit", "7", "--test-limit", "6",
                    "--epochs", "1", "--lr", "1e-3", "--device", "cpu",
                    "--out", str(ckpt)]) == 0
    meta = json.loads((ckpt / "fsxlt_checkpoint.json").read_text())
    assert meta["data"]["dev"]["n"] == 7
    assert meta["data"]["target_test"]["de"]["n"] == 6
    out = tmp_path / "runs"
    capsys.readouterr()
    small_sweep(dict(study, checkpoint=ckpt), out, tmp_path, dev_limit=4, test_limit=6)
    assert "no K=0 record" not in capsys.readouterr().err
    zero = json.loads((out / "xnli/de/k0/zero-shot.json").read_text())
    assert zero["test"]["score"] == meta["zero_shot"]["de"]["score"]
    record = json.loads((out / "xnli/de/k1/fc/00.json").read_text())
    assert record["run"]["identity"]["test_limit"] == 6
    assert record["run"]["identity"]["dev_limit"] == 4
    assert record["data"]["test"]["n"] == 6
    cells = aggregate(load_records(out))
    assert 0 in set(cells["k"]) and cells["gain"].notna().any()
