"""Issue 74, item 1: variance by source. The ANOVA components against statsmodels' REML
mixed model, the per-example metric pieces against fsxlt's metrics, the clustered
standard errors against their formulas, and the command on runs with saved predictions."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from fsxlt.analysis.variance import (
    clustered_se,
    components,
    linearised,
    per_example,
    seeds_table,
)
from fsxlt.cli import run_app
from fsxlt.fileio import atomic_write_json
from fsxlt.metrics.scores import accuracy, seqeval_scores, token_accuracy


def crossed(rng, b: int, n: int, bucket: float, example: float, residual: float):
    return (60 + rng.normal(0, np.sqrt(bucket), b)[:, None]
            + rng.normal(0, np.sqrt(example), n)[None, :]
            + rng.normal(0, np.sqrt(residual), (b, n)))


@pytest.mark.parametrize("seed", [0, 1])
def test_the_components_are_statsmodels_reml_on_a_balanced_table(seed):
    from statsmodels.regression.mixed_linear_model import MixedLM

    table = crossed(np.random.default_rng(seed), 6, 30, 4.0, 20.0, 5.0)
    found = components(table)
    frame = pd.DataFrame({"y": table.ravel(), "bucket": np.repeat(np.arange(6), 30),
                          "example": np.tile(np.arange(30), 6), "one": 1})
    fit = MixedLM.from_formula("y ~ 1", groups="one", re_formula="0", data=frame,
                               vc_formula={"bucket": "0 + C(bucket)",
                                           "example": "0 + C(example)"}).fit(reml=True)
    names = list(fit.model.exog_vc.names)
    assert found.bucket == pytest.approx(fit.vcomp[names.index("bucket")], rel=1e-3)
    assert found.example == pytest.approx(fit.vcomp[names.index("example")], rel=1e-3)
    assert found.residual == pytest.approx(fit.scale, rel=1e-3)


def test_the_components_are_unbiased_over_simulated_studies():
    rng = np.random.default_rng(9)
    found = [components(crossed(rng, 20, 200, 3.0, 30.0, 10.0)) for _ in range(300)]
    assert np.mean([c.bucket for c in found]) == pytest.approx(3.0, rel=0.1)
    assert np.mean([c.example for c in found]) == pytest.approx(30.0, rel=0.05)
    assert np.mean([c.residual for c in found]) == pytest.approx(10.0, rel=0.02)
    one = found[0]
    shares = one.shares()
    assert shares["run_bucket_share"] + shares["run_test_share"] == pytest.approx(1)
    assert one.mean_se == pytest.approx(np.sqrt(one.bucket / 20 + one.example / 200
                                                + one.residual / 4000))


def test_the_per_example_pieces_sum_to_fsxlts_own_scores():
    rng = np.random.default_rng(3)
    labels = ["a", "b", "c"]
    gold, pred = rng.choice(labels, 300).tolist(), rng.choice(labels, 300).tolist()
    y, x = per_example("accuracy", gold, pred)
    assert y.sum() / x.sum() == pytest.approx(accuracy(gold, pred))
    tags = ["O", "B-PER", "I-PER", "B-LOC", "I-LOC"]
    gold_t = [rng.choice(tags, int(rng.integers(1, 12))).tolist() for _ in range(200)]
    pred_t = [[t if rng.random() < 0.7 else str(rng.choice(tags)) for t in s] for s in gold_t]
    y, x = per_example("seqeval_f1", gold_t, pred_t)
    assert y.sum() / x.sum() == pytest.approx(seqeval_scores(gold_t, pred_t)["f1"])
    y, x = per_example("token_accuracy", gold_t, pred_t)
    assert y.sum() / x.sum() == pytest.approx(token_accuracy(gold_t, pred_t))
    assert linearised(y, x).mean() == pytest.approx(100 * token_accuracy(gold_t, pred_t))


def test_clustered_standard_errors_are_their_formulas():
    table = crossed(np.random.default_rng(5), 8, 50, 4.0, 25.0, 6.0)
    one, two = clustered_se(table)
    rows = table.mean(axis=1)
    # clustered by bucket alone: the spread of the buckets' means (no small-sample factor)
    assert one == pytest.approx(np.sqrt(np.sum((rows - rows.mean()) ** 2)) / len(rows))
    cols = table.mean(axis=0)
    cells = table - table.mean()
    by_example = np.sum(cells.sum(axis=0) ** 2) / table.size ** 2
    by_bucket = np.sum(cells.sum(axis=1) ** 2) / table.size ** 2
    both = np.sum(cells ** 2) / table.size ** 2
    assert two == pytest.approx(np.sqrt(by_bucket + by_example - both))
    assert two > one and cols.std() > 0


def write_cell(root: Path, arm: str, b: int, gold: list[str], preds: list[list[str]],
               scores: list[float] | None = None) -> None:
    for index, predicted in enumerate(preds):
        score = accuracy(gold, predicted) if scores is None else scores[index]
        where = root / "xnli" / "de" / "k4" / arm
        atomic_write_json(where / f"{index:02d}.json", {
            "format": "fsxlt-adapt-run/1", "status": "ok", "task": "xnli", "language": "de",
            "k": 4, "method": arm, "metric": "accuracy",
            "bucket": {"id": f"xnli/de/k4/{index:02d}", "index": index, "k": 4},
            "model": {"source_training": True}, "selected_lr": 1e-5,
            "runs": [{"lr": 1e-5, "epochs": [{"epoch": 1, "dev_score": score}]}],
            "best_epoch": 1, "dev_score": score, "test_score": score,
            "sweep": {"config_hash": "sweep:test", "arm": arm}})
        header = {"format": "fsxlt-predictions/1", "task": "xnli", "language": "de",
                  "kind": "classification", "labels": ["a", "b", "c"], "split": "test",
                  "n": len(gold), "data": "x", "model": {}}
        lines = [header] + [{"id": f"test:{i}", "gold": g, "predicted": p}
                            for i, (g, p) in enumerate(zip(gold, predicted, strict=True))]
        (where / f"{index:02d}.predictions.jsonl").write_text(
            "".join(json.dumps(line) + "\n" for line in lines))


def test_analyze_variance_on_runs_with_predictions(tmp_path, capsys):
    rng = np.random.default_rng(8)
    gold = rng.choice(["a", "b", "c"], 120).tolist()
    hard = rng.random(120)  # each example's difficulty: the test set's own share
    preds = []
    for _bucket in range(10):
        skill = 0.5 + 0.05 * rng.normal()  # each bucket's own level: the buckets' share
        preds.append([g if rng.random() < skill + 0.4 * (0.5 - h) else "c" if g != "c" else "a"
                      for g, h in zip(gold, hard, strict=True)])
    runs = tmp_path / "runs"
    write_cell(runs, "full", 10, gold, preds)
    out = tmp_path / "variance"
    assert run_app(["analyze", "variance", str(runs), "--bootstrap", "200",
                    "--out", str(out)]) == 0
    table = pd.read_csv(out / "variance.csv")
    row = table.iloc[0]
    assert row["buckets"] == 10 and row["examples"] == 120
    assert row["run_bucket_share"] + row["run_test_share"] == pytest.approx(1)
    assert row["run_bucket_share_low"] <= row["run_bucket_share"] <= row[
        "run_bucket_share_high"]
    z = np.array([[100.0 * (g == p) for g, p in zip(gold, pred, strict=True)]
                  for pred in preds])
    assert row["var_bucket"] == pytest.approx(components(z).bucket, rel=1e-6)
    assert row["se_cluster_bucket"] == pytest.approx(clustered_se(z)[0], rel=1e-6)
    # a record whose predictions are not its run's is refused, naming the file
    write_cell(tmp_path / "bad", "full", 3, gold, preds[:3], scores=[0.1, 0.2, 0.3])
    assert run_app(["analyze", "variance", str(tmp_path / "bad")]) != 0
    assert "its predictions score" in capsys.readouterr().err


def test_the_seed_share_from_a_seeds_vs_buckets_ablation(tmp_path):
    rng = np.random.default_rng(2)
    rows = [{"arm": "buckets", "bucket": b, "seed": 42, "dev_score": 0.0,
             "test_score": 60 + rng.normal(0, 3)} for b in range(30)]
    rows += [{"arm": "seeds", "bucket": 0, "seed": 42 + s, "dev_score": 0.0,
              "test_score": 60 + rng.normal(0, 1)} for s in range(30)]
    pd.DataFrame(rows).to_csv(tmp_path / "runs.csv", index=False)
    table = seeds_table(tmp_path, n_boot=500)
    test = table[table["score"] == "test"].iloc[0]
    buckets = np.var([r["test_score"] for r in rows[:30]], ddof=1)
    seeds = np.var([r["test_score"] for r in rows[30:]], ddof=1)
    assert test["var_bucket"] == pytest.approx(buckets - seeds)
    assert 0.7 < test["bucket_share"] < 1 and test["bucket_share_low"] < test["bucket_share"]
