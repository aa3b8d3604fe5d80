"""``fsxlt analyze selection CKPT...``: the candidates of source-train --average-last N."""

from __future__ import annotations

import json
import math

import pandas as pd
import pytest

from fsxlt.analysis.selection import candidates_table, load_source_record
from fsxlt.cli import run_app

# (English dev, German dev, German test) per checkpoint, in training order
SCRIPT = [(0.80, 0.60, 0.500), (0.82, 0.58, 0.520), (0.85, 0.57, 0.503), (0.83, 0.66, 0.550)]

# per run: candidate -> (lr, German dev, German test); the selected checkpoint first
RUN_1 = {"english-dev": (1e-5, 0.57, 0.503), "last@1e-05": (1e-5, 0.66, 0.55),
         "average-last-2@1e-05": (1e-5, 0.64, 0.56), "average-lrs": (None, 0.62, 0.54)}
RUN_2 = {"english-dev": (2e-5, 0.59, 0.48), "last@1e-05": (1e-5, 0.60, 0.50),
         "average-last-2@1e-05": (1e-5, 0.62, 0.53), "average-lrs": (None, 0.61, 0.51)}
RULES = {"english-dev": "english-dev", "last@1e-05": "last",
         "average-last-2@1e-05": "average-last", "average-lrs": "average-lrs"}


def write_record(directory, seed: int, zero_shot: float, oracle_test: float | None,
                 candidates: dict | None):
    """A source-run record as fsxlt source-train writes it (the fields the analysis reads)."""
    script = SCRIPT[:-1] + [SCRIPT[-1][:2] + (oracle_test or 0.55,)]  # checkpoint 4: oracle
    checkpoints = [{"lr": 1e-5, "epoch": epoch, "train_loss": 1.0,
                    "dev": {"en": en, "de": de}, "test": {"de": test}}
                   for epoch, (en, de, test) in enumerate(script, start=1)]
    record = {"format": "fsxlt-checkpoint/1", "task": "xnli", "source_language": "en",
              "seed": seed, "checkpoints": checkpoints,
              "zero_shot": {"de": {"metric": "accuracy", "score": zero_shot}},
              "oracle": {"de": {"lr": 1e-5, "epoch": 4, "dev_score": 0.66,
                                "test_score": oracle_test}}}
    if candidates is not None:
        record["candidates"] = {"average_last": 2, "models": [
            {"name": name, "rule": RULES[name], "lr": lr, "epochs": [2],
             "dev": {"en": 0.8, "de": dev}, "test": {"de": test}}
            for name, (lr, dev, test) in candidates.items()]}
    directory.mkdir(parents=True)
    (directory / "fsxlt_checkpoint.json").write_text(json.dumps(record))
    return directory


@pytest.fixture
def two_runs(tmp_path):
    return [write_record(tmp_path / "s1", 1, 0.503, 0.55, RUN_1),
            write_record(tmp_path / "s2", 2, 0.48, 0.52, RUN_2)]


def test_candidates_over_two_runs_by_hand(two_runs):
    table = candidates_table([load_source_record(d) for d in two_runs], ["de"])
    assert list(table["candidate"]) == list(RUN_1)  # the selected checkpoint first
    rows = table.set_index("candidate")
    assert list(rows["rule"]) == list(RULES.values())
    assert (rows["runs"] == 2).all() and (rows["language"] == "de").all()
    # learning rate: shared by both runs, else NaN (the selected lr differs; average-lrs has none)
    assert rows.loc["last@1e-05", "lr"] == pytest.approx(1e-5)
    assert math.isnan(rows.loc["english-dev", "lr"]) and math.isnan(rows.loc["average-lrs", "lr"])
    # test 50.3 and 48; dev 57 and 59; gap to the oracles (55, 52): -4.7 and -4
    selected = rows.loc["english-dev"]
    assert selected["test_mean"] == pytest.approx(49.15)
    assert selected["test_std"] == pytest.approx(2.3 / math.sqrt(2))  # ddof=1
    assert selected["target_dev_mean"] == pytest.approx(58.0)
    assert selected["gap_to_oracle"] == pytest.approx(-4.35)
    # last: test 55 and 50, gaps 0 and -2; average-last: test 56 and 53, gaps +1 and +1
    assert rows.loc["last@1e-05", ["test_mean", "test_std", "target_dev_mean",
                                   "gap_to_oracle"]].tolist() == pytest.approx(
        [52.5, 5 / math.sqrt(2), 63.0, -1.0])
    assert rows.loc["average-last-2@1e-05", ["test_mean", "gap_to_oracle"]].tolist() == \
        pytest.approx([54.5, 1.0])
    assert rows.loc["average-lrs", ["target_dev_mean", "gap_to_oracle"]].tolist() == \
        pytest.approx([61.5, -1.0])


def test_one_run_without_oracle_test_score_and_records_without_candidates(tmp_path):
    plain = load_source_record(write_record(tmp_path / "plain", 3, 0.5, 0.55, None))
    assert candidates_table([plain], ["de"]) is None
    unscored = load_source_record(write_record(tmp_path / "unscored", 1, 0.503, None, RUN_1))
    table = candidates_table([unscored, plain], ["de"])  # plain adds nothing
    assert (table["runs"] == 1).all() and len(table) == len(RUN_1)
    assert table["test_std"].isna().all()          # one run: no std
    assert table["gap_to_oracle"].isna().all()     # no oracle test score recorded
    assert table["test_mean"].tolist() == pytest.approx([50.3, 55.0, 56.0, 54.0])
    # a gap over runs is NaN when one run lacks the oracle's test score
    scored = load_source_record(write_record(tmp_path / "scored", 2, 0.48, 0.52, RUN_2))
    mixed = candidates_table([unscored, scored], ["de"])
    assert mixed["gap_to_oracle"].isna().all() and (mixed["runs"] == 2).all()


def test_cli_writes_source_candidates_csv(two_runs, tmp_path, capsys):
    out = tmp_path / "out"
    assert run_app(["analyze", "selection", *map(str, two_runs), "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "average-last-2@1e-05" in printed and "1e-05" in printed
    table = pd.read_csv(out / "source-candidates.csv")
    assert list(table.columns) == ["language", "candidate", "rule", "lr", "runs", "test_mean",
                                   "test_std", "target_dev_mean", "gap_to_oracle"]
    assert table["gap_to_oracle"].tolist() == pytest.approx([-4.35, -1.0, 1.0, -1.0])
    assert pd.read_csv(out / "selection.csv")["oracle"].tolist() == pytest.approx([55.0, 52.0])


def test_cli_without_candidates_writes_no_csv(tmp_path, capsys):
    dirs = [write_record(tmp_path / f"s{seed}", seed, 0.5, 0.55, None) for seed in (1, 2)]
    out = tmp_path / "out"
    assert run_app(["analyze", "selection", *map(str, dirs), "--out", str(out)]) == 0
    assert not (out / "source-candidates.csv").exists()
    lines = [line for line in capsys.readouterr().out.splitlines()
             if line.startswith("no candidates")]
    assert len(lines) == 1 and "--average-last" in lines[0]


def test_reads_a_real_averaging_record(tmp_path):
    from fsxlt.training import save_checkpoint, source_train
    from tests.train_fixtures import make_encoder_dir, nli_data

    encoder = make_encoder_dir(tmp_path / "encoder")
    result = source_train("xnli", nli_data(24, seed=1), nli_data(9, seed=2),
                          model_name=str(encoder), target_dev={"de": nli_data(9, seed=3)},
                          target_test={"de": nli_data(9, seed=4)}, lrs=[1e-3], epochs=2,
                          batch_size=12, seed=5, checkpoint_test_scores=True, device="cpu",
                          average_last=2)
    ckpt = save_checkpoint(tmp_path / "ckpt", result.model, result.tokenizer, result.record)
    table = candidates_table([load_source_record(ckpt)], ["de"])
    assert list(table["candidate"]) == ["english-dev", "last@0.001", "average-last-2@0.001",
                                        "average-lrs"]
    selected = table.iloc[0]
    assert selected["test_mean"] == pytest.approx(100 * result.record["zero_shot"]["de"]["score"])
    oracle = 100 * result.record["oracle"]["de"]["test_score"]
    assert selected["gap_to_oracle"] == pytest.approx(selected["test_mean"] - oracle)
