"""Analyses that run models: seeds vs. buckets on a tiny config-built BERT.

The ablation is docs/protocol.md#ablations."""

from __future__ import annotations

import random

import pytest

from fsxlt.analysis.seeds import ablation_plan, seeds_vs_buckets, spread_table
from fsxlt.cli import run_app
from fsxlt.errors import FsxltError
from fsxlt.sampling.store import read_set
from tests.train_fixtures import (
    NLI_LABELS,
    make_encoder_dir,
    nli_data,
    write_bucket_set,
    write_pairs,
)

N_BUCKETS = 3


@pytest.fixture(scope="module")
def xnli_study(tmp_path_factory):
    """A tiny source-trained XNLI checkpoint, a K=1 bucket set with its dev remainder, a test."""
    from fsxlt.training import save_checkpoint, source_train

    root = tmp_path_factory.mktemp("xnli-study")
    encoder = make_encoder_dir(root / "encoder")
    result = source_train("xnli", nli_data(36, seed=1), nli_data(9, seed=2),
                          model_name=str(encoder), lrs=[3e-3], epochs=2, batch_size=12, seed=5,
                          device="cpu")
    ckpt = save_checkpoint(root / "ckpt", result.model, result.tokenizer, result.record)
    pool = nli_data(3 * N_BUCKETS + 9, seed=7, source="dev-de")
    by_label = {label: [e for e in pool if e.label == label] for label in NLI_LABELS}
    rng = random.Random(0)
    for items in by_label.values():
        rng.shuffle(items)
    sets = [[by_label[label][b] for label in NLI_LABELS] for b in range(N_BUCKETS)]
    used = {e.id for bucket in sets for e in bucket}
    buckets = write_bucket_set(root / "buckets", "xnli", "de", 1, sets, list(NLI_LABELS),
                               dev_remaining=[e for e in pool if e.id not in used])
    test = write_pairs(root / "data" / "test-de.tsv", nli_data(12, seed=8, source="test-de"))
    return {"ckpt": ckpt, "buckets": buckets, "test": test}


def _engine(study):
    from fsxlt.data import read_examples
    from fsxlt.training import AdaptEngine

    _, _, remaining = read_set(study["buckets"])
    return AdaptEngine.from_start("xnli", "de", str(study["ckpt"]), dev=remaining,
                                  test=read_examples(study["test"], "xnli"), device="cpu")


def test_ablation_plan_and_its_errors():
    plan = ablation_plan([2, 0, 1], n_buckets=2, n_seeds=3, fixed_seed=10, fixed_bucket=1)
    assert plan == [("buckets", 0, 10), ("buckets", 1, 10),
                    ("seeds", 1, 10), ("seeds", 1, 11), ("seeds", 1, 12)]
    with pytest.raises(FsxltError, match="holds 3 buckets, the ablation asks for 40"):
        ablation_plan([0, 1, 2], n_buckets=40, n_seeds=1, fixed_seed=0, fixed_bucket=0)
    with pytest.raises(FsxltError, match="bucket 7 is not in the bucket set"):
        ablation_plan([0, 1, 2], n_buckets=1, n_seeds=1, fixed_seed=0, fixed_bucket=7)


def test_spread_table_by_hand():
    import pandas as pd

    runs = pd.DataFrame({"arm": ["buckets"] * 3 + ["seeds"] * 2,
                         "dev_score": [50.0, 60.0, 55.0, 52.0, 53.0],
                         "test_score": [40.0, 48.0, 41.0, 45.0, 45.5]})
    table = spread_table(runs).set_index(["arm", "score"])
    assert table.loc[("buckets", "dev"), "spread"] == pytest.approx(10.0)
    assert table.loc[("buckets", "test"), "spread"] == pytest.approx(8.0)
    assert table.loc[("seeds", "dev"), "spread"] == pytest.approx(1.0)
    assert table.loc[("seeds", "dev"), "std"] == pytest.approx(0.5 ** 0.5)
    assert table.loc[("buckets", "dev"), "runs"] == 3


def test_seeds_vs_buckets_runs_each_arm_and_matches_single_runs(xnli_study):
    engine = _engine(xnli_study)
    _, buckets, _ = read_set(xnli_study["buckets"])
    settings = {"lrs": [1e-2], "max_epochs": 2, "patience": 1}
    runs = seeds_vs_buckets(engine, buckets, n_buckets=N_BUCKETS, n_seeds=2, fixed_seed=4,
                            fixed_bucket=1, **settings)
    assert list(zip(runs["arm"], runs["bucket"], runs["seed"], strict=True)) == [
        ("buckets", 0, 4), ("buckets", 1, 4), ("buckets", 2, 4), ("seeds", 1, 4), ("seeds", 1, 5)]
    shared = runs[(runs["bucket"] == 1) & (runs["seed"] == 4)]
    assert shared["dev_score"].nunique() == 1 and len(shared) == 2
    # an independent run of (bucket 1, seed 5) on a fresh engine gives the same scores
    record = _engine(xnli_study).adapt(buckets[1], seed=5, **settings)
    last = runs.iloc[-1]
    assert last["dev_score"] == pytest.approx(100 * record["dev_score"])
    assert last["test_score"] == pytest.approx(100 * record["test_score"])
    spread = spread_table(runs).set_index(["arm", "score"])
    dev = runs.loc[runs["arm"] == "buckets", "dev_score"]
    assert spread.loc[("buckets", "dev"), "spread"] == pytest.approx(dev.max() - dev.min())


def test_seeds_vs_buckets_cli(xnli_study, tmp_path, capsys):
    out = tmp_path / "out"
    args = ["analyze", "seeds-vs-buckets", "--task", "xnli", "--lang", "de",
            "--buckets", str(xnli_study["buckets"]), "--from", str(xnli_study["ckpt"]),
            "--test", str(xnli_study["test"]), "--n-buckets", "2", "--n-seeds", "2",
            "--lr", "1e-2", "--max-epochs", "1", "--patience", "1", "--device", "cpu",
            "--out", str(out)]
    assert run_app(args) == 0
    assert {p.name for p in out.iterdir()} == {
        "runs.csv", "spread.csv", "ablation.json", "xnli-de-k1-seeds-vs-buckets.png",
        "xnli-de-k1-seeds-vs-buckets.pdf"}
    assert len((out / "runs.csv").read_text().splitlines()) == 1 + 4
    capsys.readouterr()
    bad = tmp_path / "bad"
    assert run_app(args[:-1] + [str(bad), "--n-buckets", "9"]) == 2
    err = capsys.readouterr().err
    assert "holds 3 buckets, the ablation asks for 9" in err and len(err.splitlines()) == 1
    assert not bad.exists()


# --------------------------------------------------------------------------- attention

def test_attention_shift_and_top_tokens_by_hand():
    from fsxlt.analysis.attention import attention_shift, top_shifts

    before = [(["[CLS]", "not", "[SEP]"], [0.5, 0.2, 0.3]),
              (["[CLS]", "happy", "[SEP]"], [0.6, 0.1, 0.3]),
              (["[CLS]", "not", "[SEP]"], [0.4, 0.4, 0.2])]
    after = [(["[CLS]", "not", "[SEP]"], [0.3, 0.5, 0.2]),
             (["[CLS]", "happy", "[SEP]"], [0.1, 0.1, 0.8]),   # unchanged example: ignored
             (["[CLS]", "not", "[SEP]"], [0.4, 0.5, 0.1])]
    table = attention_shift(before, after, [True, False, True]).set_index("token")
    assert table.loc["not", "mean_shift"] == pytest.approx((0.3 + 0.1) / 2)
    assert table.loc["[SEP]", "mean_shift"] == pytest.approx((-0.1 - 0.1) / 2)
    assert table.loc["[CLS]", "mean_shift"] == pytest.approx(-0.1)
    assert table.loc["not", "occurrences"] == 2 and "happy" not in table.index
    top = top_shifts(table.reset_index(), top=1)
    assert list(top["token"]) == ["not", "[CLS]"]  # -0.1 vs. -0.1: ties by token name
    assert list(top["direction"]) == ["gained attention", "lost attention"]


def test_cls_attention_sums_to_one_and_ignores_padding(xnli_study):
    from fsxlt.analysis.attention import cls_attention
    from fsxlt.models.encoding import Featurizer
    from fsxlt.tasks import get_task
    from fsxlt.training import load_start

    start = load_start(xnli_study["ckpt"], "xnli")
    featurizer = Featurizer(start.tokenizer, get_task("xnli"))
    examples = nli_data(5, seed=11)
    batched = cls_attention(start.model, featurizer, examples, batch_size=5)
    for example, (tokens, weights) in zip(examples, batched, strict=True):
        assert tokens[0] == "[CLS]" and tokens[-1] == "[SEP]"
        assert sum(weights) == pytest.approx(1.0, abs=1e-5)
        alone = cls_attention(start.model, featurizer, [example])[0]
        assert alone[0] == tokens and alone[1] == pytest.approx(weights, abs=1e-5)
    assert start.model.encoder.config._attn_implementation != "eager"  # switched back


@pytest.fixture(scope="module")
def adapt_record(xnli_study, tmp_path_factory):
    runs = tmp_path_factory.mktemp("runs")
    assert run_app(["adapt", "--task", "xnli", "--lang", "de", "--bucket",
                    str(xnli_study["buckets"] / "00.json"), "--from", str(xnli_study["ckpt"]),
                    "--test", str(xnli_study["test"]), "--out", str(runs), "--lr", "3e-2",
                    "--lr", "1e-2", "--max-epochs", "4", "--patience", "2",
                    "--device", "cpu"]) == 0
    return runs / "xnli" / "de" / "k1" / "full" / "00.json"


def test_attention_cli_reproduces_the_run(adapt_record, tmp_path, capsys):
    out = tmp_path / "out"
    code = run_app(["analyze", "attention", str(adapt_record), "--out", str(out),
                    "--min-occurrences", "1", "--top", "5"])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    changed = int(captured.out.split(" of ")[0])
    assert changed > 0
    table = (out / "attention-top.csv").read_text().splitlines()
    assert table[0] == "token,occurrences,mean_shift,direction" and len(table) > 1
    assert {p.name for p in out.iterdir()} >= {"attention-shift.csv", "attention-top.csv",
                                               "xnli-de-k1-full-00-attention.png",
                                               "xnli-de-k1-full-00-attention.pdf"}


def test_attention_refuses_a_run_it_cannot_reproduce(adapt_record, tmp_path, capsys):
    import json

    record = json.loads(adapt_record.read_text())
    record["dev_score"] += 0.01
    tampered = tmp_path / "00.json"
    tampered.write_text(json.dumps(record))
    out = tmp_path / "out"
    assert run_app(["analyze", "attention", str(tampered), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "could not reproduce the run" in err and len(err.strip().splitlines()) == 1
    assert not out.exists()
