"""Shot-selection strategies: guarantees over many seeds, hand-worked picks, the pipeline,
and the report's statistics against scipy."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

from fsxlt.cli import run_app
from fsxlt.data import TaggedSentence
from fsxlt.sampling.samplers import derive_rng, redundant_sentences, sentence_label_counts
from fsxlt.sampling.strategies import (
    BUILTIN,
    Pool,
    PoolSignals,
    density,
    get_strategy,
    select_bucket,
)
from tests.train_fixtures import make_encoder_dir, ner_data, nli_data, write_conll, write_pairs

NLI = ("entailment", "neutral", "contradiction")
NER = ("PER", "ORG", "LOC")


STRATEGIES = list(BUILTIN)


def select_classification(strategy, labels, label_of, k, signals, seed, rng):
    pool = Pool(labels=labels, k=k, seed=seed, rng=rng, signals=signals, label_of=label_of)
    return select_bucket(get_strategy(strategy), pool)


def select_tagging(strategy, labels, counts, k, signals, seed, rng):
    pool = Pool(labels=labels, k=k, seed=seed, rng=rng, signals=signals, counts=counts)
    return select_bucket(get_strategy(strategy), pool)


def random_signals(n: int, seed: int) -> PoolSignals:
    rng = np.random.default_rng(seed)
    vectors = rng.normal(size=(n, 8))
    return PoolSignals(vectors / np.linalg.norm(vectors, axis=1, keepdims=True),
                       rng.uniform(0, 1, size=n))


# --------------------------------------------------------------------------- guarantees

@pytest.mark.parametrize("strategy", [s for s in STRATEGIES if s != "entity-rich"])
def test_classification_buckets_have_exactly_k_per_label_for_every_seed(strategy):
    for seed in range(30):
        rng = np.random.default_rng(seed)
        labels = [NLI[i] for i in rng.integers(0, 3, size=60)]
        k = 1 + seed % 4
        signals = random_signals(60, seed)
        picked = select_classification(strategy, NLI, labels, k, signals, seed,
                                       derive_rng(seed, "t", "de", k, strategy, 0))
        assert len(set(picked)) == len(picked)
        assert Counter(labels[i] for i in picked) == {label: k for label in NLI}
        again = select_classification(strategy, NLI, labels, k, signals, seed,
                                      derive_rng(seed, "t", "de", k, strategy, 0))
        assert again == picked  # deterministic


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_tagging_buckets_meet_both_minimum_including_criteria_for_every_seed(strategy):
    for seed in range(30):
        sentences = ner_data(50, seed)
        counts = [sentence_label_counts(s, "entity") for s in sentences]
        k = 1 + seed % 3
        signals = random_signals(50, seed)
        picked = select_tagging(strategy, NER, counts, k, signals, seed,
                                derive_rng(seed, "t", "de", k, strategy, 0))
        total = sum((counts[i] for i in picked), Counter())
        assert all(total[label] >= k for label in NER)
        assert redundant_sentences([counts[i] for i in picked], list(NER), k) == []
        assert select_tagging(strategy, NER, counts, k, signals, seed,
                              derive_rng(seed, "t", "de", k, strategy, 0)) == picked


# --------------------------------------------------------------------------- hand-worked picks

def unit(*rows: tuple[float, float]) -> np.ndarray:
    vectors = np.array(rows, dtype=float)
    return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


def test_uncertain_takes_the_highest_entropy_per_label():
    labels = ["a", "a", "a", "b", "b", "b"]
    signals = PoolSignals(unit(*[(1, i) for i in range(6)]),
                          np.array([0.1, 0.9, 0.5, 0.7, 0.2, 0.8]))
    picked = select_classification("uncertain", ["a", "b"], labels, 1, signals, 0, None)
    assert picked == [1, 5]
    picked = select_classification("uncertain", ["a", "b"], labels, 2, signals, 0, None)
    assert picked == [1, 2, 5, 3]


def test_representative_prefers_the_dense_region_and_diverse_covers_both():
    """Label a: three near-identical examples pointing east, one pointing north;
    label b: two north-east twins. K=1 representative takes an east one; K=2 diverse
    takes one east and the north one (two clusters), not two east twins."""
    embeddings = unit((1, 0), (1, 0.01), (1, -0.01), (0, 1), (1, 1), (1, 1.01))
    labels = ["a", "a", "a", "a", "b", "b"]
    signals = PoolSignals(embeddings, np.zeros(6))
    assert density(embeddings)[3] < min(density(embeddings)[:3])
    rep = select_classification("representative", ["a", "b"], labels, 1, signals, 0, None)
    assert rep[0] in (0, 1, 2)
    div = select_classification("diverse", ["a", "b"], labels, 2, signals, 0, None)
    assert 3 in div[:2] and len({0, 1, 2} & set(div[:2])) == 1 and set(div[2:]) == {4, 5}


def test_entity_rich_fills_each_label_with_the_richest_sentence():
    sentences = [
        TaggedSentence("s0", ("ada", "went"), ("B-PER", "O")),
        TaggedSentence("s1", ("ada", "acme", "paris"), ("B-PER", "B-ORG", "B-LOC")),
        TaggedSentence("s2", ("bob", "ada", "acme"), ("B-PER", "B-PER", "B-ORG")),
        TaggedSentence("s3", ("paris",), ("B-LOC",)),
    ]
    counts = [sentence_label_counts(s, "entity") for s in sentences]
    assert select_tagging("entity-rich", NER, counts, 1, None, 0, None) == [1]
    # K=2: PER takes s1 (3 types) then s2 (2 types, 3 mentions); LOC still needs s3
    assert select_tagging("entity-rich", NER, counts, 2, None, 0, None) == [1, 2, 3]


# --------------------------------------------------------------------------- the pipeline

@pytest.fixture(scope="module")
def pipeline(tmp_path_factory) -> dict[str, Path]:
    """A tiny NER checkpoint, strategy sets for de, one sweep per strategy into one dir."""
    root = tmp_path_factory.mktemp("strategies")
    data = root / "data"
    write_conll(data / "train-en.tsv", ner_data(16, 1, source="en"))
    write_conll(data / "dev-en.tsv", ner_data(6, 2, source="en"))
    write_conll(data / "train-de.tsv", ner_data(80, 3, source="de"))
    write_conll(data / "dev-de.tsv", ner_data(8, 4, source="de"))
    write_conll(data / "test-de.tsv", ner_data(8, 5, source="de"))
    encoder = make_encoder_dir(root / "enc")
    assert run_app(["source-train", "--task", "panx", "--model", str(encoder), "--data-dir",
                    str(data), "--lr", "1e-3", "--epochs", "1", "--device", "cpu",
                    "--out", str(root / "ckpt")]) == 0
    strategies = ["random", "diverse", "uncertain", "representative", "entity-rich"]
    args = ["select", "--task", "panx", "--lang", "de", "--data-dir", str(data), "--from",
            str(root / "ckpt"), "-k", "1", "--n-pools", "3", "--pool-size", "30",
            "--out", str(root / "buckets"), "--device", "cpu"]
    for strategy in strategies:
        args += ["-s", strategy]
    assert run_app(args) == 0
    for strategy in strategies:
        config = {"name": f"strategy-{strategy}", "out": str(root / "runs"),
                  "buckets": str(root / "buckets" / strategy), "data_dir": str(data),
                  "start": str(root / "ckpt"), "methods": ["full"], "n_buckets": 3,
                  "lrs": [1e-3], "max_epochs": 2, "patience": 1,
                  "tasks": {"panx": {"languages": ["de"], "k": [1]}}}
        path = root / f"{strategy}.yaml"
        path.write_text(yaml.safe_dump(config), encoding="utf-8")
        assert run_app(["sweep", str(path), "--device", "cpu", "--workers", "0"]) == 0
    return {"root": root, "data": data}


def test_select_writes_checked_sets_that_record_strategy_pools_and_model(pipeline):
    from fsxlt.sampling.check import check_store
    from fsxlt.sampling.store import read_manifest

    root = pipeline["root"]
    manifest = read_manifest(root / "buckets/uncertain/panx/de/k1")
    strategy = manifest["strategy"]
    assert strategy["name"] == "uncertain" and manifest["sampler"] == "strategy"
    assert strategy["options"]["measure"] == "prediction entropy"
    assert strategy["pools"] == {"n": 3, "size": 30, "seed": 0, "split": "train"}
    assert strategy["model"]["path"] == str(root / "ckpt")
    assert len(strategy["model"]["sha256"]) == 64
    assert "model" not in read_manifest(root / "buckets/random/panx/de/k1")["strategy"]
    for name in ("random", "diverse", "entity-rich"):
        reports = check_store(root / "buckets" / name, pipeline["data"] / "train-de.tsv")
        assert all(r.ok for r in reports), reports[0].violations


def test_a_bucket_outside_its_pool_is_a_violation(pipeline, tmp_path):
    import shutil

    from fsxlt.sampling.check import check_store
    from fsxlt.sampling.store import MANIFEST

    directory = tmp_path / "set"
    shutil.copytree(pipeline["root"] / "buckets/diverse/panx/de/k1", directory)
    manifest = json.loads((directory / MANIFEST).read_text(encoding="utf-8"))
    manifest["strategy"]["pools"]["seed"] = 7  # other pools: the buckets fall outside them
    (directory / MANIFEST).write_text(json.dumps(manifest), encoding="utf-8")
    report = check_store(directory, pipeline["data"] / "train-de.tsv")[0]
    assert report.kinds()["not-in-pool"] >= 1


def test_runs_on_strategy_buckets_are_arms_of_their_own(pipeline):
    arms = pipeline["root"] / "runs/panx/de/k1"
    assert sorted(p.name for p in arms.iterdir()) == [
        "full~diverse", "full~entity-rich", "full~random", "full~representative",
        "full~uncertain"]
    record = json.loads((arms / "full~diverse/02.json").read_text(encoding="utf-8"))
    assert record["bucket"]["strategy"] == "diverse"


def test_report_strategies_table_and_plots(pipeline, tmp_path, capsys):
    runs = pipeline["root"] / "runs"
    assert run_app(["report", str(runs), "--strategies", "--bootstrap", "500",
                    "--out", str(tmp_path / "rep")]) == 0
    out = capsys.readouterr().out
    assert "| panx | de | 1 | Full FT | diverse |" in out
    assert (tmp_path / "rep/strategies.md").is_file()
    assert (tmp_path / "rep/plots/strategies_panx_de_k1_full.png").is_file()
    assert run_app(["report", str(runs)]) == 0
    assert "### panx: Full FT, source en, diverse buckets (test" in capsys.readouterr().out


def test_strategy_statistics_against_scipy(tmp_path):
    from scipy.stats import mannwhitneyu

    from fsxlt.report.records import SCORE_COLUMNS, Records
    from fsxlt.report.strategies import judge

    random = [0.40, 0.45, 0.50, 0.55, 0.60]
    diverse = [0.52, 0.58, 0.61]
    rows = [{"task": "t", "language": "de", "k": 1, "arm": f"full~{name}", "bucket": i,
             "method": "full", "source_training": True, "source": "en", "test_score": score,
             "dev_score": 0.0, "best_epoch": 1, "metric": "accuracy", "fixed": False,
             "record": f"{name}-{i}.json"}
            for name, scores in (("random", random), ("diverse", diverse))
            for i, score in enumerate(scores)]
    for r in rows:  # both from the same pools (judge reads them from the records)
        (tmp_path / r["record"]).write_text('{"bucket": {"strategy_pools": {"seed": 0}}}')
    records = Records(pd.DataFrame(rows, columns=SCORE_COLUMNS), pd.DataFrame(),
                      pd.DataFrame())
    row = judge(records, tmp_path, n_boot=2000).iloc[0]
    expected = mannwhitneyu([100 * s for s in diverse], [100 * s for s in random],
                            alternative="two-sided")
    assert row["u"] == expected.statistic and row["p_value"] == pytest.approx(expected.pvalue)
    # by hand: diverse beats 3+4+5 = 12 of the 15 pairs (0.52 beats 0.40, 0.45, 0.50)
    assert row["p_beat"] == pytest.approx(12 / 15)
    assert row["diff"] == pytest.approx(100 * (np.mean(diverse) - np.mean(random)))
    assert row["ci_low"] < row["diff"] < row["ci_high"]


def test_select_errors_are_one_line(tmp_path, capsys):
    write_pairs(tmp_path / "dev-de.tsv", nli_data(30, 1))
    cases = [
        (["-s", "entity-rich"], "strategy entity-rich ranks sentences by their entity"),
        (["-s", "smart"], "unknown strategy 'smart'"),
        (["-s", "diverse"], "read the source-trained model: pass --from CHECKPOINT"),
        (["-s", "random", "--pool-size", "100"], "a pool of 100 needs that many examples"),
    ]
    for extra, message in cases:
        code = run_app(["select", "--task", "xnli", "--lang", "de", "--data-dir",
                        str(tmp_path), "-k", "1", "--out", str(tmp_path / "out"), *extra])
        err = capsys.readouterr().err.strip()
        assert code == 2 and message in err and "\n" not in err, err
    assert not (tmp_path / "out").exists()


# --------------------------------------------------------------------------- bucket features

def test_bucket_features_find_a_planted_correlation(tmp_path, capsys):
    """Buckets whose sentences get longer score higher, and gain more over zero-shot, in
    two languages with different zero-shot scores; English overlap is planted inversely."""
    from fsxlt.analysis.bucket_features import correlations, feature_table
    from fsxlt.study.runs import RUN_FORMAT, ZERO_SHOT_FORMAT
    from tests.train_fixtures import write_bucket_set

    english = write_conll(tmp_path / "train-en.tsv", [
        TaggedSentence("e0", ("ada", "went", "home"), ("B-PER", "O", "O"))])
    english.write_text(english.read_text() + "\n")  # a file of one sentence ends it with a blank
    for lang, zero in (("de", 0.30), ("zh", 0.10)):
        buckets = []
        for b in range(6):  # bucket b: sentences of 2 + b words, fewer English words
            words = tuple(["ada", "acme", "paris"] + [f"w{i}" for i in range(b)])
            tags = ("B-PER", "B-ORG", "B-LOC") + ("O",) * b
            buckets.append([TaggedSentence(f"{lang}{b}", words, tags)])
        directory = write_bucket_set(tmp_path / "buckets", "panx", lang, 1, buckets,
                                     list(NER))
        for b, arm in ((b, arm) for arm in ("full", "full-nosource") for b in range(6)):
            record = {"format": RUN_FORMAT, "task": "panx", "language": lang, "k": 1,
                      "method": "full", "bucket": {"index": b, "path": str(
                          directory / f"{b:02d}.json")},
                      "model": {"source_training": arm == "full", "start": {}},
                      "test_score": zero + 0.05 * b + 0.001 * (b % 2), "metric": "seqeval_f1"}
            path = tmp_path / "runs" / "panx" / lang / "k1" / arm / f"{b:02d}.json"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps(record), encoding="utf-8")
        zero_record = {"format": ZERO_SHOT_FORMAT, "status": "ok", "task": "panx",
                       "language": lang, "k": 0, "test_score": zero, "metric": "seqeval_f1"}
        path = tmp_path / "runs" / "panx" / lang / "k0" / "zero-shot.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(zero_record), encoding="utf-8")
    table = feature_table(tmp_path / "runs", english=english, model=False)
    assert len(table) == 12 and table.attrs["arm"] == "full"
    assert table["gain"].round(4).tolist()[:3] == [0.0, 5.1, 10.0]
    result = correlations(table).set_index(["cell", "target", "feature"])
    for cell in ("panx/de/k1", "panx/zh/k1"):
        assert result.loc[(cell, "score", "mean_length"), "rho"] == pytest.approx(1.0)
        assert result.loc[(cell, "score", "english_overlap"), "rho"] == pytest.approx(-1.0)
        assert np.isnan(result.loc[(cell, "score", "n_examples"), "rho"])  # constant
    pooled = result.loc[("all", "gain", "mean_length")]
    assert pooled["rho"] > 0.99 and pooled["p_value"] < 1e-3  # ties across the two cells
    assert run_app(["analyze", "bucket-features", str(tmp_path / "runs"), "--english",
                    str(english), "--no-model", "--out", str(tmp_path / "out")]) == 0
    assert (tmp_path / "out/correlations.csv").is_file()
    assert (tmp_path / "out/bucket_features.png").is_file()
    # an arm without source-training gains over no start's zero-shot (as in the report)
    alone = feature_table(tmp_path / "runs", arm="full-nosource", english=english, model=False)
    assert len(alone) == 12 and alone["gain"].isna().all()


def test_bucket_features_with_the_model(pipeline):
    from fsxlt.analysis.bucket_features import feature_table

    table = feature_table(pipeline["root"] / "runs", device="cpu")
    assert table.attrs["arm"] == "full~random" and len(table) == 3
    assert table["model_entropy"].between(0, np.log(7)).all()
    assert table["dev_distance"].between(0, 2).all()
    assert table["english_overlap"].between(0, 1).all()  # the start's English train file


def test_a_task_sampled_from_dev_gives_each_bucket_its_own_dev_set(tmp_path):
    from fsxlt.sampling.check import check_store
    from fsxlt.sampling.store import read_examples_jsonl, read_manifest

    write_pairs(tmp_path / "dev-de.tsv", nli_data(60, 1))
    assert run_app(["select", "--task", "xnli", "--lang", "de", "--data-dir", str(tmp_path),
                    "-s", "random", "-k", "2", "--n-pools", "3", "--pool-size", "30",
                    "--out", str(tmp_path / "out")]) == 0
    directory = tmp_path / "out/random/xnli/de/k2"
    manifest = read_manifest(directory)
    assert manifest["strategy"]["pools"]["split"] == "dev"
    for entry in manifest["buckets"]:
        dev = {ex.id for ex in read_examples_jsonl(directory / entry["dev"]["file"])}
        assert len(dev) == 60 - 6 and not dev & set(entry["ids"])
    assert all(r.ok for r in check_store(directory, tmp_path / "dev-de.tsv"))
