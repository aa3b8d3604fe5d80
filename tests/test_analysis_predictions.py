"""Saved predictions, the confusion and the gains analyses: hand-built cases and the CLI."""

from __future__ import annotations

import json
import re
import shutil

import numpy as np
import pytest

from fsxlt.analysis.confusion import confusion_analysis
from fsxlt.analysis.gains import gains_analysis, improved_words, jaccard
from fsxlt.cli import run_app
from fsxlt.data import TaggedSentence, TextExample
from fsxlt.errors import FsxltError
from fsxlt.study.predictions import (
    Predictions,
    predictions_path,
    read_predictions,
    write_predictions,
)
from fsxlt.tasks import get_task
from tests.train_fixtures import make_encoder_dir, ner_data, write_bucket_set, write_conll

XNLI = get_task("xnli")
PANX = get_task("panx")


def text_predictions(gold: list[str], predicted: list[str]) -> Predictions:
    header = {"format": "fsxlt-predictions/1", "task": "xnli", "language": "de",
              "kind": "classification", "labels": list(XNLI.labels), "split": "test",
              "n": len(gold)}
    rows = [{"id": f"t{i}", "gold": g, "predicted": p}
            for i, (g, p) in enumerate(zip(gold, predicted, strict=True))]
    return Predictions(header, rows)


def tag_predictions(sentences: list[tuple[list[str], list[str], list[str]]]) -> Predictions:
    header = {"format": "fsxlt-predictions/1", "task": "panx", "language": "de",
              "kind": "tagging", "labels": list(PANX.labels), "split": "test",
              "n": len(sentences)}
    rows = [{"id": f"s{i}", "tokens": t, "gold": g, "predicted": p}
            for i, (t, g, p) in enumerate(sentences)]
    return Predictions(header, rows)


# --------------------------------------------------------------------------- file format

def test_predictions_round_trip_beside_the_record(tmp_path):
    examples = [TextExample("a", "x", "y", "neutral"),
                TextExample("b", "z", "w", "entailment")]
    record = tmp_path / "runs" / "00.json"
    path = write_predictions(predictions_path(record), examples, ["neutral", "contradiction"],
                             task=XNLI, language="de", split="test", model={"kind": "adapt"})
    assert path == tmp_path / "runs" / "00.predictions.jsonl"
    loaded = read_predictions(path)
    assert loaded.gold() == ["neutral", "entailment"]
    assert loaded.predicted() == ["neutral", "contradiction"]
    assert loaded.header["n"] == 2 and loaded.kind == "classification"
    path.write_text(path.read_text().splitlines()[0] + "\n")  # truncated after the header
    with pytest.raises(FsxltError, match="truncated"):
        read_predictions(path)


# --------------------------------------------------------------------------- confusion

def test_confusion_difference_by_hand():
    e, n, c = XNLI.labels
    gold = [e, e, n, n, c, c]
    zero = text_predictions(gold, [e, n, n, c, c, e])
    # zero-shot:  e->e 1, e->n 1 | n->n 1, n->c 1 | c->c 1, c->e 1
    adapted = text_predictions(gold, [e, e, n, n, c, n])
    # adapted:    e->e 2 | n->n 2 | c->n 1, c->c 1
    result = confusion_analysis(zero, [adapted])
    expected_difference = np.array([[1, -1, 0],
                                    [0, 1, -1],
                                    [-1, 1, 0]])
    assert list(result.difference.index) == [e, n, c]
    np.testing.assert_array_equal(result.difference.to_numpy(), expected_difference)
    assert result.zero_shot.to_numpy().sum() == 6
    # two runs: the adapted matrix is their mean
    twice = confusion_analysis(zero, [adapted, zero])
    np.testing.assert_array_equal(twice.difference.to_numpy(), expected_difference / 2)
    shares = confusion_analysis(zero, [adapted], normalize=True)
    np.testing.assert_allclose(shares.difference.to_numpy(), expected_difference / 2)


def test_confusion_counts_every_word_of_tagging():
    tokens = ["Anna", "in", "Berlin"]
    gold = ["B-PER", "O", "B-LOC"]
    zero = tag_predictions([(tokens, gold, ["O", "O", "B-PER"])])
    adapted = tag_predictions([(tokens, gold, ["B-PER", "O", "B-LOC"])])
    diff = confusion_analysis(zero, [adapted]).difference
    assert diff.loc["B-PER", "B-PER"] == 1 and diff.loc["B-PER", "O"] == -1
    assert diff.loc["B-LOC", "B-LOC"] == 1 and diff.loc["B-LOC", "B-PER"] == -1
    assert diff.loc["O", "O"] == 0 and diff.to_numpy().sum() == 0


def test_predictions_on_different_test_sets_are_refused():
    a = text_predictions(["neutral"], ["neutral"])
    b = text_predictions(["entailment"], ["neutral"])
    with pytest.raises(FsxltError, match="different test sets"):
        confusion_analysis(a, [b])


# --------------------------------------------------------------------------- gains

def test_jaccard_on_hand_built_sets():
    assert jaccard({"a", "b", "c"}, {"b", "c", "d"}) == pytest.approx(2 / 4)
    assert jaccard(set(), set()) == 0.0
    assert jaccard({"a"}, {"b"}) == 0.0


def test_gains_by_hand():
    tokens = [["Anna", "sah", "Berlin"], ["Anna", "und", "Paris"]]
    gold = [["B-PER", "O", "B-LOC"], ["B-PER", "O", "B-LOC"]]
    zero = tag_predictions([(tokens[0], gold[0], ["O", "O", "O"]),
                            (tokens[1], gold[1], ["O", "O", "B-LOC"])])
    # bucket 0's run fixes Anna (twice) and Berlin; bucket 1's run fixes Berlin only
    run0 = tag_predictions([(tokens[0], gold[0], ["B-PER", "O", "B-LOC"]),
                            (tokens[1], gold[1], ["B-PER", "O", "B-LOC"])])
    run1 = tag_predictions([(tokens[0], gold[0], ["O", "O", "B-LOC"]),
                            (tokens[1], gold[1], ["O", "B-PER", "B-LOC"])])
    assert improved_words(zero, run0) == ["Anna", "Berlin", "Anna"]
    words = {0: {"Anna", "lebt"}, 1: {"Berlin", "Anna", "Rom"}}
    result = gains_analysis(zero, {0: run0, 1: run1}, words)
    # I_0 = {Anna, Berlin}, I_1 = {Berlin}
    assert result.jaccard.loc[0, 0] == pytest.approx(1 / 3)   # {Anna} / {Anna, lebt, Berlin}
    assert result.jaccard.loc[0, 1] == pytest.approx(0.0)
    assert result.jaccard.loc[1, 0] == pytest.approx(2 / 3)   # {Anna, Berlin} / 3 words
    assert result.jaccard.loc[1, 1] == pytest.approx(1 / 3)
    counts = result.counts.set_index("bucket")
    assert counts.loc[0].to_dict() == {"improved": 3, "improved_types": 2, "in_bucket": 2,
                                       "not_in_bucket": 1}
    assert counts.loc[1].to_dict() == {"improved": 1, "improved_types": 1, "in_bucket": 1,
                                       "not_in_bucket": 0}


def test_gains_refuses_classification():
    a = text_predictions(["neutral"], ["entailment"])
    with pytest.raises(FsxltError, match="tagging"):
        improved_words(a, a)


# --------------------------------------------------------------------------- end to end

@pytest.fixture(scope="module")
def panx_study(tmp_path_factory):
    """A tiny source-trained PAN-X checkpoint, two buckets, dev and test files."""
    from fsxlt.training import save_checkpoint, source_train

    root = tmp_path_factory.mktemp("panx-study")
    encoder = make_encoder_dir(root / "encoder")
    result = source_train("panx", ner_data(40, seed=1), ner_data(10, seed=2),
                          model_name=str(encoder), lrs=[3e-3], epochs=2, batch_size=10,
                          seed=5, device="cpu")
    ckpt = save_checkpoint(root / "ckpt", result.model, result.tokenizer, result.record)
    data = root / "data"
    write_conll(data / "dev-de.tsv", ner_data(8, seed=3, source="dev"))
    write_conll(data / "test-de.tsv", ner_data(12, seed=4, source="test"))
    pool = ner_data(6, seed=6, source="train")
    labels = ["PER", "ORG", "LOC"]
    buckets = write_bucket_set(root / "buckets", "panx", "de", 1, [pool[:3], pool[3:]], labels)
    return {"root": root, "ckpt": ckpt, "data": data, "buckets": buckets}


def _adapt_and_evaluate(study, runs):
    args = ["adapt", "--task", "panx", "--lang", "de", "--bucket", str(study["buckets"]),
            "--from", str(study["ckpt"]), "--data-dir", str(study["data"]), "--out", str(runs),
            "--lr", "1e-2", "--max-epochs", "3", "--patience", "2", "--device", "cpu",
            "--save-predictions"]
    assert run_app(args) == 0
    zero = runs / "panx" / "de" / "k0" / "zero-shot-test.json"
    assert run_app(["evaluate", str(study["ckpt"]), "--task", "panx", "--lang", "de",
                    "--data-dir", str(study["data"]), "--device", "cpu",
                    "--save-predictions", "--out", str(zero)]) == 0


def test_cli_saves_predictions_and_runs_gains_and_confusion(panx_study, tmp_path, capsys):
    runs = tmp_path / "runs"
    _adapt_and_evaluate(panx_study, runs)
    arm = runs / "panx" / "de" / "k1" / "full"
    record = json.loads((arm / "00.json").read_text())
    assert "test_predictions" not in record
    saved = read_predictions(arm / "00.predictions.jsonl")
    assert saved.kind == "tagging" and saved.header["n"] == 12
    words = sum(len(r["gold"]) for r in saved.rows)
    correct = sum(g == p for r in saved.rows for g, p in zip(r["gold"], r["predicted"],
                                                             strict=True))
    assert correct / words == pytest.approx(record["test"]["token_accuracy"])
    zero = read_predictions(runs / "panx" / "de" / "k0" / "zero-shot-test.predictions.jsonl")
    evaluated = json.loads((runs / "panx" / "de" / "k0" / "zero-shot-test.json").read_text())
    zero_correct = sum(g == p for r in zero.rows for g, p in zip(r["gold"], r["predicted"],
                                                                 strict=True))
    assert zero_correct / words == pytest.approx(evaluated["scores"]["token_accuracy"])
    assert evaluated["format"] == "fsxlt-evaluation/1" and evaluated["n_examples"] == 12
    assert evaluated["data_sha256"] == zero.header["data"] and evaluated["versions"]

    out = tmp_path / "analysis"
    assert run_app(["analyze", "confusion", str(runs), "--task", "panx", "--lang", "de",
                    "--k", "1", "--out", str(out / "confusion")]) == 0
    names = {p.name for p in (out / "confusion").iterdir()}
    assert {"zero-shot.csv", "adapted.csv", "difference.csv",
            "panx-de-k1-full-confusion.png", "panx-de-k1-full-confusion.pdf"} <= names
    assert run_app(["analyze", "gains", str(runs), "--task", "panx", "--lang", "de",
                    "--k", "1", "--out", str(out / "gains")]) == 0
    improved = (out / "gains" / "improved.csv").read_text().splitlines()
    assert improved[0] == "bucket,improved,improved_types,in_bucket,not_in_bucket"
    assert len(improved) == 3
    for stem in ("panx-de-k1-full-jaccard", "panx-de-k1-full-improved"):
        assert (out / "gains" / f"{stem}.png").is_file()
        assert (out / "gains" / f"{stem}.pdf").is_file()


def test_gains_and_confusion_take_an_imported_arm_with_its_own_start(panx_study, tmp_path,
                                                                     capsys):
    """Issue 62, item 3: an arm imported from another study is compared with the zero-shot
    predictions of its own start, never with ours: against ours (another start by content)
    both analyses refuse in one line, writing nothing; with theirs they run."""
    theirs, ours = tmp_path / "theirs", tmp_path / "ours"
    _adapt_and_evaluate(panx_study, theirs)
    export = tmp_path / "their-study"
    assert run_app(["runs", "export", str(theirs), str(export)]) == 0
    ckpt = tmp_path / "our-ckpt"  # the same weights, one fact more: another start by content
    shutil.copytree(panx_study["ckpt"], ckpt)
    facts = ckpt / "fsxlt_checkpoint.json"
    facts.write_text(json.dumps({**json.loads(facts.read_text()), "note": "ours"}))
    assert run_app(["evaluate", str(ckpt), "--task", "panx", "--lang", "de",
                    "--data-dir", str(panx_study["data"]), "--device", "cpu",
                    "--save-predictions",
                    "--out", str(ours / "panx" / "de" / "k0" / "zero-shot-test.json")]) == 0
    assert run_app(["runs", "import-hf", str(export), "--out", str(ours)]) == 0
    capsys.readouterr()
    out = tmp_path / "analysis"
    for command in ("gains", "confusion"):
        code = run_app(["analyze", command, str(ours), "--task", "panx", "--lang", "de",
                        "--k", "1", "--method", "their-study.full", "--out", str(out)])
        err = capsys.readouterr().err
        assert code == 2 and len(err.strip().splitlines()) == 1, err
        assert "their-study.full: run 00 was adapted from checkpoint:" in err
        assert "pass --zero-shot" in err and "Traceback" not in err
        assert not out.exists()
    their_zero = theirs / "panx" / "de" / "k0" / "zero-shot-test.predictions.jsonl"
    for command in ("gains", "confusion"):
        assert run_app(["analyze", command, str(ours), "--task", "panx", "--lang", "de",
                        "--k", "1", "--method", "their-study.full", "--zero-shot",
                        str(their_zero), "--out", str(out / command)]) == 0
    store = panx_study["buckets"].parents[2]  # their buckets, found in a store by hash
    assert run_app(["analyze", "gains", str(ours), "--task", "panx", "--lang", "de", "--k",
                    "1", "--method", "their-study.full", "--zero-shot", str(their_zero),
                    "--buckets", str(store), "--out", str(out / "by-hash")]) == 0
    assert (out / "by-hash" / "improved.csv").read_text() == \
        (out / "gains" / "improved.csv").read_text()


def test_a_runs_bucket_is_found_by_its_hash(panx_study):
    """A record names its bucket by hash: at its path only if that file is the bucket, in
    a store wherever the set lies (another study's records name another machine's
    files); anything else is one line."""
    from fsxlt.sampling.store import read_bucket, run_bucket

    set_dir = panx_study["buckets"]
    bucket = read_bucket(set_dir / "01.json")
    block = {"index": 1, "sha256": bucket.sha256, "path": "/elsewhere/panx/de/k1/01.json"}
    with pytest.raises(FsxltError, match="is not here; pass --buckets STORE"):
        run_bucket(block, "runs/x.json")
    found = run_bucket(block, "runs/x.json", set_dir.parents[2])
    assert found.sha256 == bucket.sha256 and found.examples == bucket.examples
    with pytest.raises(FsxltError, match="01.json is not the bucket it ran on"):
        run_bucket({**block, "sha256": read_bucket(set_dir / "00.json").sha256,
                    "path": str(set_dir / "01.json")}, "runs/x.json")
    with pytest.raises(FsxltError, match="runs/x.json: its bucket \\(0000000000000000\\) is in no"):
        run_bucket({**block, "sha256": "0" * 64}, "runs/x.json", set_dir.parents[2])


@pytest.mark.parametrize("case, message", [
    ("no-zero-shot", "no zero-shot predictions for panx/de .*run fsxlt evaluate"),
    ("no-predictions", "no saved predictions; run fsxlt adapt"),
    ("unknown-language", "xx"),
])
def test_missing_inputs_are_one_line_errors(panx_study, tmp_path, capsys, case, message):
    runs = tmp_path / "runs"
    arm = runs / "panx" / "de" / "k1" / "full"
    arm.mkdir(parents=True)
    if case == "no-predictions":
        zero = runs / "panx" / "de" / "k0" / "zero-shot-test.predictions.jsonl"
        write_predictions(zero, [TaggedSentence("s", ("a",), ("O",))], [["O"]], task=PANX,
                          language="de", split="test", model={})
    lang = "xx" if case == "unknown-language" else "de"
    out = tmp_path / "out"
    for command in ("gains", "confusion"):
        code = run_app(["analyze", command, str(runs), "--task", "panx", "--lang", lang,
                        "--k", "1", "--out", str(out)])
        err = capsys.readouterr().err
        assert code == 2 and len(err.strip().splitlines()) == 1, err
        assert err.startswith("error: ") and "Traceback" not in err
        assert re.search(message, err), err
        assert not out.exists()


def test_evaluate_save_predictions_needs_out(panx_study, capsys):
    assert run_app(["evaluate", str(panx_study["ckpt"]), "--task", "panx", "--lang", "de",
                    "--data-dir", str(panx_study["data"]), "--save-predictions"]) == 2
    assert "pass --out" in capsys.readouterr().err


def test_sweep_save_predictions_reruns_runs_without_them(tmp_path, capsys):
    from fsxlt.training import strip_timings
    from tests.sweep_fixtures import N_BUCKETS, build_study, sweep_config, write_config

    study = build_study(tmp_path / "study")
    runs = tmp_path / "runs"
    config = write_config(tmp_path / "sweep.yaml",
                          sweep_config(study, runs, max_epochs=2, patience=1))
    only = ["--lang", "de", "--k", "1", "--workers", "0"]
    assert run_app(["sweep", str(config), *only]) == 0
    arm = runs / "xnli" / "de" / "k1" / "full"
    first = {p.name: json.loads(p.read_text()) for p in sorted(arm.glob("*.json"))}
    assert len(first) == N_BUCKETS and not list(arm.glob("*.predictions.jsonl"))
    capsys.readouterr()
    assert run_app(["sweep", str(config), *only, "--save-predictions", "--dry-run"]) == 0
    pending = capsys.readouterr().out.strip().splitlines()
    assert len(pending) == N_BUCKETS and all("\tno-predictions\t" in p for p in pending)
    assert run_app(["sweep", str(config), *only, "--save-predictions"]) == 0
    for name, record in first.items():
        again = json.loads((arm / name).read_text())
        assert strip_timings(again) == strip_timings(record)
        saved = read_predictions(predictions_path(arm / name))
        accuracy = np.mean([r["gold"] == r["predicted"] for r in saved.rows])
        assert accuracy == pytest.approx(record["test_score"])
        assert saved.header["model"]["bucket"] == record["bucket"]["index"]


def test_evaluate_out_is_write_once(panx_study, tmp_path, capsys):
    """An --out file of the same evaluation is found (nothing written); one of other settings
    is refused unless --replace, and then replaced."""
    out = tmp_path / "zero-shot-test.json"
    base = ["evaluate", str(panx_study["ckpt"]), "--task", "panx", "--lang", "de",
            "--data-dir", str(panx_study["data"]), "--device", "cpu", "--out", str(out)]
    assert run_app(base) == 0
    first = out.read_bytes()
    stamp = out.stat().st_mtime_ns
    capsys.readouterr()
    assert run_app(base) == 0
    assert "already holds this evaluation" in capsys.readouterr().err
    assert out.stat().st_mtime_ns == stamp and out.read_bytes() == first
    other = [*base, "--split", "dev"]
    assert run_app(other) == 2
    err = capsys.readouterr().err
    assert "holds an evaluation of other settings (split, data_sha256 differ)" in err, err
    assert out.read_bytes() == first
    assert run_app([*other, "--replace"]) == 0
    assert json.loads(out.read_text())["split"] == "dev"
    out.write_text("{not json", encoding="utf-8")
    assert run_app(base) == 2
    assert "holds an evaluation of other settings" in capsys.readouterr().err


def test_evaluate_reads_a_bucket_sets_own_file(panx_study, tmp_path, capsys):
    """--file may name a set's own data (dev-remaining.jsonl, test.jsonl): fsxlt's JSON lines
    beside a manifest, read as sweeps read them, scored like the same examples in CoNLL."""
    from fsxlt.data import read_examples
    from tests.train_fixtures import write_bucket_set

    test_file = panx_study["data"] / "test-de.tsv"
    examples = read_examples(test_file, "panx", language="de")
    pool = ner_data(6, seed=6, source="train")
    directory = write_bucket_set(tmp_path / "buckets", "panx", "de", 1, [pool[:3]],
                                 ["PER", "ORG", "LOC"], dev_remaining=examples)
    scores = []
    for path in (directory / "dev-remaining.jsonl", test_file):
        assert run_app(["evaluate", str(panx_study["ckpt"]), "--task", "panx", "--lang", "de",
                        "--file", str(path), "--device", "cpu"]) == 0
        scores.append(json.loads(capsys.readouterr().out.strip().splitlines()[-1])["scores"])
    assert scores[0] == scores[1]


def test_analyze_gains_on_a_classification_task_is_one_line(tmp_path, capsys):
    """Issue 72, item 5: gains counts the test words adapting fixed, a tagging analysis;
    on XNLI it refused nothing and ended in an AttributeError."""
    from fsxlt.cli import run_app

    assert run_app(["analyze", "gains", str(tmp_path), "--task", "xnli", "--lang", "de",
                    "--k", "1", "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--task xnli: analyze gains" in err \
        and "needs a tagging task" in err
    assert not (tmp_path / "out").exists()
