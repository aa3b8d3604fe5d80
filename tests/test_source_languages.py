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


# --------------------------------------------------------------------------- runs and reports

@pytest.fixture(scope="module")
def two_sources(panx, tmp_path_factory) -> dict[str, Path]:
    """English and German starts, each adapted on the same two zh 1-shot buckets."""
    root = tmp_path_factory.mktemp("sources")
    ckpts = root / "ckpt"
    for source in ("en", "de"):
        assert run_app(["source-train", "--task", "panx", "--model", str(panx["encoder"]),
                        "--data-dir", str(panx["data"]), "--lr", "1e-3", "--epochs", "1",
                        "--device", "cpu", "--out", str(ckpts / source), "--source-lang",
                        source, "--target", "zh", "--target", "de"]) == 0
    write_conll(root / "train-zh.tsv", ner_data(20, 40, source="zh"))
    assert run_app(["sample", "--task", "panx", "--lang", "zh", "--k", "1", "--n-buckets", "2",
                    "--data", str(root / "train-zh.tsv"), "--out", str(root / "buckets")]) == 0
    for source in ("en", "de"):
        assert run_app(["adapt", "--task", "panx", "--lang", "zh", "--from",
                        str(ckpts / source), "--bucket", str(root / "buckets/panx/zh/k1"),
                        "--data-dir", str(panx["data"]), "--lr", "1e-3", "--max-epochs", "2",
                        "--device", "cpu", "--out", str(root / "runs")]) == 0
    return {"root": root, "ckpt": ckpts, "runs": root / "runs"}


def test_runs_from_another_source_are_an_arm_of_their_own(two_sources):
    arms = two_sources["runs"] / "panx" / "zh" / "k1"
    assert sorted(p.name for p in arms.iterdir()) == ["full", "full@de"]
    record = json.loads((arms / "full@de" / "00.json").read_text(encoding="utf-8"))
    assert record["source_languages"] == ["de"]
    assert record["model"]["start"]["source_languages"] == ["de"]


def test_report_never_mixes_sources_and_pairs_them(two_sources, capsys):
    from fsxlt.report import aggregate, load_records

    records = load_records(two_sources["root"])  # runs and both checkpoints
    cells = aggregate(records, expected=2)
    shots = cells[cells["k"] == 1].set_index("arm")
    scores = records.scores.groupby("arm")["test_score"].mean() * 100
    assert shots.loc["full", "n"] == 2 and shots.loc["full@de", "n"] == 2
    assert shots.loc["full@de", "mean"] == pytest.approx(scores["full@de"])
    zero = {(r.source, r.language): 100 * r.test_score
            for r in records.zero_shot.itertuples(index=False)}
    assert shots.loc["full@de", "zero_shot"] == pytest.approx(zero[("de", "zh")])
    assert shots.loc["full", "zero_shot"] == pytest.approx(zero[("en", "zh")])
    assert run_app(["report", str(two_sources["root"]), "--expected-buckets", "2"]) == 0
    out = capsys.readouterr().out
    assert "### panx: Full FT, source de (K=0: zero-shot;" in out
    assert "### panx: adapting variants side by side, K=1" in out
    assert run_app(["report", str(two_sources["runs"]), "--compare", "full@de", "full"]) == 0
    assert "| zh | 1 | 2 |" in capsys.readouterr().out


def test_sources_table_marks_in_source_targets_and_names_the_best(two_sources, capsys):
    assert run_app(["report", str(two_sources["ckpt"]), "--sources"]) == 0
    out = capsys.readouterr().out
    en = json.loads((two_sources["ckpt"] / "en/fsxlt_checkpoint.json").read_text("utf-8"))
    de = json.loads((two_sources["ckpt"] / "de/fsxlt_checkpoint.json").read_text("utf-8"))
    rows = {line.split(" | ")[0].strip("| "): line for line in out.splitlines()
            if line.startswith("| ")}
    assert rows["de"] == (f"| de | {100 * de['zero_shot']['de']['score']:.2f}* | "
                          f"{100 * de['zero_shot']['zh']['score']:.2f} |")
    assert rows["en"].startswith(f"| en | {100 * en['zero_shot']['de']['score']:.2f} |")
    zh_best = "de" if de["zero_shot"]["zh"]["score"] > en["zero_shot"]["zh"]["score"] else "en"
    assert rows["best zero-shot source"] == f"| best zero-shot source | en | {zh_best} |"


def test_sources_without_zero_shot_scores_is_one_line(tmp_path, capsys):
    tmp_path.joinpath("empty").mkdir()
    assert run_app(["report", str(tmp_path / "empty"), "--sources"]) == 2
    err = capsys.readouterr().err.strip()
    assert "no zero-shot scores found" in err and "\n" not in err


def test_the_sweep_names_the_arm_by_the_start_source(two_sources, panx, tmp_path):
    import shutil

    from fsxlt.execution import expand, parse_config

    data = two_sources["root"] / "data"
    data.mkdir(exist_ok=True)
    write_conll(data / "dev-zh.tsv", ner_data(4, 50, source="zh"))
    # the test set the starts scored zero-shot: the K=0 record is theirs only for it
    shutil.copyfile(panx["data"] / "test-zh.tsv", data / "test-zh.tsv")
    config = {"name": "src", "out": str(tmp_path / "runs"),
              "buckets": str(two_sources["root"] / "buckets"), "data_dir": str(data),
              "start": str(two_sources["ckpt"] / "de"), "n_buckets": 2,
              "tasks": {"panx": {"languages": ["zh"], "k": [1]}}}
    plan = expand(parse_config(config))
    assert {run.arm for run in plan.runs} == {"full@de"}
    assert all("/full@de/" in run.record_path for run in plan.runs)
    assert plan.zero_shot[0].record["source_languages"] == ["de"]
