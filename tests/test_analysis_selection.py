"""English-dev vs. oracle selection, directional agreement, seed variation.

The protocol: docs/protocol.md#model-selection."""

from __future__ import annotations

import json

import pytest

from fsxlt.analysis.selection import directional_agreement, load_source_record, selection_tables
from fsxlt.cli import run_app
from fsxlt.errors import FsxltError

# (English dev, German dev, German test) per checkpoint, in training order
SCRIPT = [(0.80, 0.60, 0.500), (0.82, 0.58, 0.520), (0.85, 0.57, 0.503), (0.83, 0.66, 0.550)]


def write_record(directory, zero_shot: float, seed: int, script=SCRIPT, with_test=True):
    checkpoints = []
    for epoch, (en, de, test) in enumerate(script, start=1):
        entry = {"lr": 1e-5, "epoch": epoch, "train_loss": 1.0, "dev": {"en": en, "de": de}}
        if with_test:
            entry["test"] = {"de": test}
        checkpoints.append(entry)
    record = {"format": "fsxlt-checkpoint/1", "task": "xnli", "source_language": "en",
              "seed": seed, "checkpoints": checkpoints,
              "zero_shot": {"de": {"metric": "accuracy", "score": zero_shot}}}
    directory.mkdir(parents=True)
    (directory / "fsxlt_checkpoint.json").write_text(json.dumps(record))
    return directory


def test_directional_agreement_by_hand():
    # pairs with |test diff| >= .005: (1,2) (1,4) (2,3) (2,4) (3,4); (1,3) differs by .003
    # English dev moves alike in (1,2) (1,4) (2,4): 3 of 5
    # German dev moves alike in (1,4) (2,3) (2,4) (3,4): 4 of 5
    en, de, test = zip(*SCRIPT, strict=True)
    assert directional_agreement(en, test) == (pytest.approx(0.6), 5)
    assert directional_agreement(de, test) == (pytest.approx(0.8), 5)
    # exactly 0.5 points counts; a dev tie is not agreement
    assert directional_agreement([1, 1, 2], [0.1, 0.105, 0.2]) == (pytest.approx(2 / 3), 3)
    assert directional_agreement([1, 2], [0.5, 0.5]) == (None, 0)


def test_selected_oracle_and_seed_spread(tmp_path):
    records = [load_source_record(write_record(tmp_path / f"s{seed}", score, seed))
               for seed, score in ((1, 0.503), (2, 0.48), (3, 0.52))]
    runs, seeds = selection_tables(records)
    first = runs.iloc[0]
    assert first["language"] == "de" and first["seed"] == 1
    assert first["english_dev_selected"] == pytest.approx(50.3)  # checkpoint 3: best English dev
    assert first["oracle"] == pytest.approx(55.0)                 # checkpoint 4: best German dev
    assert first["oracle_gain"] == pytest.approx(4.7)
    assert first["agreement_english_dev"] == pytest.approx(0.6)
    assert first["agreement_target_dev"] == pytest.approx(0.8)
    row = seeds.iloc[0]
    assert (row["runs"], row["min"], row["max"]) == (3, pytest.approx(48.0), pytest.approx(52.0))
    assert row["spread"] == pytest.approx(4.0)


def test_missing_test_scores_and_unknown_language_say_what_to_run(tmp_path):
    record = load_source_record(write_record(tmp_path / "a", 0.5, 1, with_test=False))
    with pytest.raises(FsxltError, match="--checkpoint-test-scores"):
        selection_tables([record])
    record = load_source_record(write_record(tmp_path / "b", 0.5, 1))
    with pytest.raises(FsxltError, match="no 'fr' dev scores; source-train with --target fr"):
        selection_tables([record], ["fr"])
    with pytest.raises(FsxltError, match="run fsxlt source-train first"):
        load_source_record(tmp_path / "nowhere")


def test_cli_writes_tables_and_plot(tmp_path, capsys):
    dirs = [write_record(tmp_path / f"s{seed}", score, seed)
            for seed, score in ((1, 0.503), (2, 0.48))]
    out = tmp_path / "out"
    assert run_app(["analyze", "selection", *map(str, dirs), "--out", str(out)]) == 0
    assert {p.name for p in out.iterdir()} == {"selection.csv", "seed-variation.csv",
                                               "xnli-selection.png", "xnli-selection.pdf"}
    capsys.readouterr()
    assert run_app(["analyze", "selection", str(dirs[0]), "--lang", "fr",
                    "--out", str(tmp_path / "bad")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "bad").exists()


def test_reads_a_real_source_training_record(tmp_path):
    from fsxlt.training import save_checkpoint, source_train
    from tests.train_fixtures import make_encoder_dir, nli_data

    encoder = make_encoder_dir(tmp_path / "encoder")
    result = source_train("xnli", nli_data(24, seed=1), nli_data(9, seed=2),
                          model_name=str(encoder), target_dev={"de": nli_data(9, seed=3)},
                          target_test={"de": nli_data(9, seed=4)}, lrs=[1e-3, 3e-4],
                          epochs=2, batch_size=12, seed=5, checkpoint_test_scores=True,
                          device="cpu")
    ckpt = save_checkpoint(tmp_path / "ckpt", result.model, result.tokenizer, result.record)
    runs, seeds = selection_tables([load_source_record(ckpt)])
    row = runs.iloc[0]
    assert row["checkpoints"] == 4
    assert row["english_dev_selected"] == pytest.approx(
        100 * result.record["zero_shot"]["de"]["score"])
    assert row["oracle"] == pytest.approx(100 * result.record["oracle"]["de"]["test_score"])
    assert seeds.iloc[0]["spread"] == 0
