"""fsxlt's XGLUE scores are the scores XGLUE's own evaluator gives the files fsxlt writes.

The evaluator here is written from XGLUE's documented behaviour
(``evaluation/xglue_evaluate.py`` and ``Data_Format.txt`` in microsoft/XGLUE),
not from fsxlt's code:

- POS: seqeval's ``precision_score`` of the predicted tag sequences against
  the gold ones (the last field of each word line; a blank line ends a
  sentence in both files).
- WPR: the prediction file's i-th line is a number for the i-th line of the
  input; a query is a run of consecutive input lines with the same first
  column; each query of two or more pages gets nDCG (linear gains, log2
  discounts, tied predictions share their gain, no cut-off, 0 where every
  gold grade is 0) and the score is their mean (NaN if there is none).
"""

from __future__ import annotations

import itertools
import json
import math
import random
from pathlib import Path

import pytest

from fsxlt.cli import run_app
from fsxlt.errors import FsxltError
from fsxlt.metrics.scores import compute_scores
from fsxlt.tasks import get_task
from tests.train_fixtures import make_encoder_dir
from tests.xglue_fixtures import write_pos, write_wpr

# --------------------------------------------------------------------------- the evaluator


def ndcg(gold: list[float], ranking: list[float]) -> float:
    """nDCG of one query's pages ranked by ``ranking`` (ties share their mean gain)."""
    discounts = [1 / math.log2(i + 2) for i in range(len(gold))]
    order = sorted(range(len(gold)), key=lambda i: -ranking[i])
    dcg, position = 0.0, 0
    for _, tied in itertools.groupby(order, key=lambda i: ranking[i]):
        tied = list(tied)
        mean_gain = sum(gold[i] for i in tied) / len(tied)
        dcg += mean_gain * sum(discounts[position:position + len(tied)])
        position += len(tied)
    ideal = sum(g * d for g, d in zip(sorted(gold, reverse=True), discounts, strict=True))
    return dcg / ideal if ideal else 0.0


def wpr_score(queries: list[str], gold: list[float], predicted: list[float]) -> float:
    """XGLUE's WPR score: mean nDCG over runs of consecutive lines of one query."""
    values = []
    start = 0
    for _, run in itertools.groupby(queries):
        size = len(list(run))
        if size > 1:
            values.append(ndcg(gold[start:start + size], predicted[start:start + size]))
        start += size
    return sum(values) / len(values) if values else math.nan


def wpr_score_of_files(gold_file: Path, prediction_file: Path) -> float:
    rows = [line.split("\t") for line in gold_file.read_text(encoding="utf-8").splitlines()]
    predicted = [float(line) for line in prediction_file.read_text(encoding="utf-8").splitlines()]
    assert len(predicted) == len(rows)
    return wpr_score([r[0] for r in rows], [float(r[-1]) for r in rows], predicted)


def sentences(text: str, field: int | None) -> list[list[str]]:
    """Blank-line separated sentences; ``field``: which space-separated field is the tag."""
    out = []
    for block in text.strip("\n").split("\n\n"):
        lines = [line for line in block.splitlines() if line.strip()]
        out.append([line.split()[field] if field is not None else line.strip()
                    for line in lines])
    return out


def seqeval_precision(gold: list[list[str]], predicted: list[list[str]]) -> float:
    """seqeval's own precision, as XGLUE's evaluator calls it on UPOS tags. seqeval warns
    once per tag that it is no BIO chunk tag ("NOUN seems not to be NE tag"): expected
    here, where UPOS tags are the point, so that warning alone is silenced."""
    import warnings

    from seqeval.metrics import precision_score

    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=r".* seems not to be NE tag\.",
                                category=UserWarning)
        return float(precision_score(gold, predicted))


def pos_score_of_files(gold_file: Path, prediction_file: Path) -> float:
    """XGLUE's POS score: seqeval's precision over the tag sequences."""
    gold = sentences(gold_file.read_text(encoding="utf-8"), -1)
    predicted = sentences(prediction_file.read_text(encoding="utf-8"), None)
    assert [len(s) for s in predicted] == [len(s) for s in gold]
    return seqeval_precision(gold, predicted)


def test_the_evaluators_ndcg_is_scikit_learns():
    import numpy as np
    from sklearn.metrics import ndcg_score

    rng = random.Random(0)
    for _ in range(60):
        n = rng.randint(2, 7)
        gold = [float(rng.randint(0, 4)) for _ in range(n)]
        ranking = [float(rng.randint(0, 4)) for _ in range(n)]
        expected = float(ndcg_score(np.asarray([gold]), np.asarray([ranking])))
        assert ndcg(gold, ranking) == pytest.approx(expected, abs=1e-12)


# --------------------------------------------------------------------------- 1. POS


def test_xglue_pos_reports_xglues_metric_with_token_accuracy_beside_it():
    gold, predicted = [["NOUN", "VERB", "ADJ"]], [["NOUN", "VERB", "VERB"]]
    scores = compute_scores(get_task("xglue-pos"), gold, predicted)
    assert scores["metric"] == get_task("xglue-pos").metric == "seqeval_precision"
    assert scores["score"] == pytest.approx(0.5)  # XGLUE's evaluator on these tags
    assert scores["token_accuracy"] == pytest.approx(2 / 3)
    assert scores["seqeval_f1"] == pytest.approx(0.4)


def test_xglue_pos_score_is_seqeval_precision_on_random_tag_sequences():
    labels = get_task("xglue-pos").labels
    rng = random.Random(1)
    for _ in range(50):
        gold = [[rng.choice(labels) for _ in range(rng.randint(1, 8))] for _ in range(4)]
        predicted = [[t if rng.random() < 0.6 else rng.choice(labels) for t in s] for s in gold]
        scores = compute_scores(get_task("xglue-pos"), gold, predicted)
        assert scores["score"] == pytest.approx(seqeval_precision(gold, predicted), abs=1e-12)


def test_udpos_keeps_token_accuracy():
    scores = compute_scores(get_task("udpos"), [["NOUN", "VERB", "ADJ"]],
                            [["NOUN", "VERB", "VERB"]])
    assert scores["metric"] == "token_accuracy" and scores["score"] == pytest.approx(2 / 3)


# --------------------------------------------------------------------------- 2. WPR


def test_wpr_reports_the_ndcg_of_the_grades_it_writes():
    """Gold 0, 4; probabilities [0,0,0,1,0] and [.45,0,0,0,.55]: the file holds 3 and 4
    (nDCG 1.0); the expected grades 3.0 and 2.2 rank the other way (0.631)."""
    gold, written = ["0", "4"], ["3", "4"]
    expected = [3.0, 0.45 * 0 + 0.55 * 4]
    scores = compute_scores(get_task("wpr"), gold, written, relevance=expected,
                            groups=["q", "q"])
    assert scores["score"] == pytest.approx(1.0)
    assert scores["score"] == wpr_score(["q", "q"], [0.0, 4.0], [3.0, 4.0])
    assert scores["fsxlt_expected_grade_ndcg"] == pytest.approx(4 / math.log2(3) / 4)


def test_wpr_score_equals_the_evaluators_on_random_sets():
    rng = random.Random(2)
    for _ in range(100):
        queries = [q for q in range(rng.randint(1, 6)) for _ in range(rng.randint(1, 5))]
        if all(len(list(run)) == 1 for _, run in itertools.groupby(queries)):
            continue
        gold = [str(rng.randint(0, 4)) for _ in queries]
        written = [str(rng.randint(0, 4)) for _ in queries]
        scores = compute_scores(get_task("wpr"), gold, written,
                                relevance=[rng.random() * 4 for _ in queries],
                                groups=[f"query {q}" for q in queries])
        assert scores["score"] == pytest.approx(
            wpr_score(queries, [float(g) for g in gold], [float(p) for p in written]),
            abs=1e-12)


# --------------------------------------------------------------------------- 4. split queries


def test_a_query_whose_lines_are_split_counts_once_per_run():
    """q: pages graded 4, 0 | r: 1, 2 | q again: 0, 4. As one query q (old grouping) the
    written grades 4, 0, 0, 4 tie 4/4 and 0/0 perfectly; as the evaluator reads the file
    the second run of q is ranked upside down."""
    groups = ["q", "q", "r", "r", "q", "q"]
    gold = ["4", "0", "1", "2", "0", "4"]
    written = ["4", "0", "2", "1", "4", "0"]
    scores = compute_scores(get_task("wpr"), gold, written, groups=groups)
    expected = wpr_score(groups, [float(g) for g in gold], [float(p) for p in written])
    assert scores["score"] == pytest.approx(expected, abs=1e-12)
    assert scores["n_queries"] == 3


def test_a_set_whose_queries_are_all_split_into_single_pages_has_no_ndcg():
    groups, gold = ["q", "r", "q", "r"], ["4", "0", "1", "2"]
    assert math.isnan(wpr_score(groups, [4.0, 0.0, 1.0, 2.0], [1.0, 1.0, 1.0, 1.0]))
    with pytest.raises(FsxltError, match="no query has two judged pages"):
        compute_scores(get_task("wpr"), gold, gold, groups=groups, what="the test set")


# --------------------------------------------------------------------------- 3. no score


def single_page_queries(path: Path, n: int = 4) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(f"query {q}\ttitle {q}\tsnippet\t{q % 5}\n" for q in range(n)),
                    encoding="utf-8")
    return path


def one_line(status: int, err: str, *says: str) -> None:
    lines = [line for line in err.splitlines() if line.strip()]
    assert status == 2 and len(lines) == 1 and "Traceback" not in err, err
    for part in says:
        assert part in lines[0], err


@pytest.fixture(scope="module")
def encoder(tmp_path_factory) -> Path:
    return make_encoder_dir(tmp_path_factory.mktemp("scoring-enc"))


@pytest.fixture()
def no_training(monkeypatch):
    """Fails the test if any training step is taken."""
    import fsxlt.training.source
    import fsxlt.training.steps

    def refuse(*args, **kwargs):
        raise AssertionError("trained on a run that has no test score")

    monkeypatch.setattr(fsxlt.training.steps, "train_step", refuse)
    monkeypatch.setattr(fsxlt.training.source, "train_step", refuse)


def test_adapt_refuses_a_test_set_without_ndcg_before_training(tmp_path, capsys, encoder,
                                                               no_training):
    data = tmp_path / "data"
    write_wpr(data, "de", "dev", 6)
    assert run_app(["sample", "--task", "wpr", "--lang", "de", "-k", "1", "--n-buckets", "1",
                    "--data-dir", str(data), "--out", str(tmp_path / "buckets")]) == 0
    test = single_page_queries(tmp_path / "single" / "xglue.wpr.de.test")
    capsys.readouterr()
    status = run_app(["adapt", "--task", "wpr", "--lang", "de", "--bucket",
                      str(tmp_path / "buckets" / "wpr" / "de" / "k1" / "00.json"),
                      "--from", str(encoder), "--test", str(test),
                      "--out", str(tmp_path / "runs"), "--max-epochs", "2",
                      "--lr", "1e-3", "--device", "cpu"])
    one_line(status, capsys.readouterr().err, "xglue.wpr.de.test",
             "no query has two judged pages")
    records = [json.loads(p.read_text()) for p in (tmp_path / "runs").rglob("*.json")]
    assert not [r for r in records if "test_score" in r]


def test_source_training_refuses_a_zero_shot_test_set_without_ndcg(tmp_path, capsys, encoder,
                                                                   no_training):
    data = tmp_path / "data"
    write_wpr(data, "en", "train", 4)
    write_wpr(data, "en", "dev", 3, seed=1)
    write_wpr(data, "de", "dev", 3, seed=2)
    test = single_page_queries(tmp_path / "single" / "xglue.wpr.de.test")
    capsys.readouterr()
    status = run_app(["source-train", "--task", "wpr", "--model", str(encoder),
                      "--data-dir", str(data), "--target-test", f"de={test}", "--lr", "1e-3",
                      "--epochs", "1", "--device", "cpu", "--out", str(tmp_path / "ckpt")])
    one_line(status, capsys.readouterr().err, "xglue.wpr.de.test",
             "no query has two judged pages")
    assert not (tmp_path / "ckpt" / "fsxlt_checkpoint.json").exists()


# --------------------------------------------------------------------------- the files


def adapt_and_predict(tmp_path: Path, encoder: Path, task: str, k: int, dev: Path,
                      test: Path, to_predict: Path) -> tuple[dict, Path]:
    """Sample a K-shot bucket from ``dev``, adapt on it scoring ``test`` and predicting
    ``to_predict`` (the same examples); the run record and the prediction file written."""
    buckets = tmp_path / "buckets"
    assert run_app(["sample", "--task", task, "--lang", "de", "-k", str(k), "--n-buckets",
                    "1", "--data-dir", str(dev.parent), "--out", str(buckets)]) == 0
    runs = tmp_path / "runs"
    assert run_app(["adapt", "--task", task, "--lang", "de", "--bucket",
                    str(buckets / task / "de" / f"k{k}" / "00.json"), "--from", str(encoder),
                    "--test", str(test), "--predict", str(to_predict), "--out", str(runs),
                    "--max-epochs", "2", "--lr", "1e-2", "--device", "cpu"]) == 0
    records = [json.loads(p.read_text(encoding="utf-8")) for p in runs.rglob("*.json")]
    records = [r for r in records if r.get("test_score") is not None]
    files = list(runs.rglob("*.prediction"))
    assert len(records) == 1 and len(files) == 1, (records, files)
    return records[0], files[0]


def test_wpr_prediction_file_scores_what_fsxlt_reports(tmp_path, encoder):
    """A labelled test file whose first query's lines are split (two queries to the
    evaluator), predicted from its unlabelled copy as XGLUE ships test files."""
    dev = write_wpr(tmp_path / "data", "de", "dev", 8)
    test = write_wpr(tmp_path / "test", "de", "test-labelled", 6, seed=3)
    rows = test.read_text(encoding="utf-8").splitlines()
    rows = rows[1:] + rows[:1]  # every query has 2-5 pages, so the first one is split
    test.write_text("".join(f"{row}\n" for row in rows), encoding="utf-8")
    to_predict = tmp_path / "to-predict" / "xglue.wpr.de.test"
    to_predict.parent.mkdir()
    to_predict.write_text("".join("\t".join(row.split("\t")[:3]) + "\n" for row in rows),
                          encoding="utf-8")
    record, prediction = adapt_and_predict(tmp_path, encoder, "wpr", 4, dev, test, to_predict)
    assert record["metric"] == "ndcg"
    assert set(prediction.read_text(encoding="utf-8").split()) <= set("01234")
    assert record["test_score"] == pytest.approx(wpr_score_of_files(test, prediction),
                                                 abs=1e-9)


def test_pos_prediction_file_scores_what_fsxlt_reports(tmp_path, encoder):
    dev = write_pos(tmp_path / "data", "de", "dev", 12)
    test = write_pos(tmp_path / "test", "de", "test", 6)
    # gold verbs tagged NOUN in every other sentence: NOUN NOUN is one seqeval "chunk", so
    # XGLUE's precision and token accuracy part ways on what the model predicts
    blocks = test.read_text(encoding="utf-8").split("\n\n")
    test.write_text("\n\n".join(b.replace(" VERB", " NOUN") if i % 2 else b
                                 for i, b in enumerate(blocks)), encoding="utf-8")
    record, prediction = adapt_and_predict(tmp_path, encoder, "xglue-pos", 1, dev, test, test)
    assert record["metric"] == "seqeval_precision"
    assert record["test_score"] == pytest.approx(pos_score_of_files(test, prediction),
                                                 abs=1e-9)
    assert "token_accuracy" in record["test"]
