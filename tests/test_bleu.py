"""BLEU for the generation tasks as XGLUE's evaluator computes it, in runs (compute_scores)
and in ``fsxlt score``; XGLUE's ``QG/<lang>.prediction`` files as ``fsxlt submission``
gathers them.

Every expected number is sacrebleu's own ``corpus_bleu(stripped predictions, [last tab
field of each gold line, stripped], lowercase=True).score``, computed here from the
files' text; every refusal is one line and exit status 2.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
import sacrebleu

from fsxlt.cli import run_app
from fsxlt.fileio import atomic_write_json
from fsxlt.metrics.scores import compute_scores
from fsxlt.metrics.scoring import SCORERS, score_file, summary, tasks_with_format
from fsxlt.metrics.text import xglue_bleu
from fsxlt.study.predictions import read_predictions, write_predictions
from fsxlt.study.runs import RUN_FORMAT, record_path
from fsxlt.study.submission import read_unlabelled, render_submission, write_submission
from fsxlt.tasks import get_task

GOLD_LINES = ["what is the capital of france ?", "query\tWho wrote Faust ?  ",
              "how tall is the eiffel tower ?", "when did the war end ?"]
PREDICTED = ["  What is the capital of France ?", "who wrote faust", "",
             "when did the war end ? ?  "]


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def evaluator_bleu(prediction_text: str, gold_text: str) -> float:
    """XGLUE's evaluator on two files' text: lines as Python iterates a file."""
    preds = [line.strip() for line in prediction_text.splitlines(keepends=True)]
    golds = [line.split("\t")[-1].strip() for line in gold_text.splitlines(keepends=True)]
    return sacrebleu.corpus_bleu(preds, [golds], lowercase=True).score


def qg_gold(directory: Path, lang: str = "de") -> Path:
    """``xglue.qg.<lang>.src.dev`` and its ``.tgt.`` twin; the target file's path."""
    write(directory / f"xglue.qg.{lang}.src.dev",
          "".join(f"passage {i} .\n" for i in range(len(GOLD_LINES))))
    return write(directory / f"xglue.qg.{lang}.tgt.dev", "".join(f"{g}\n" for g in GOLD_LINES))


def one_line(capsys, args: list[str], *says: str) -> None:
    capsys.readouterr()
    status = run_app(args)
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.strip()]
    assert status == 2 and len(lines) == 1 and "Traceback" not in err, err
    for part in says:
        assert part in lines[0], err


# --------------------------------------------------------------------------- the metric


def test_xglue_bleu_is_sacrebleus_lowercased_corpus_bleu():
    golds = [g.split("\t")[-1] for g in GOLD_LINES]
    expected = sacrebleu.corpus_bleu([p.strip() for p in PREDICTED],
                                     [[g.strip() for g in golds]], lowercase=True)
    result = xglue_bleu(PREDICTED, golds)
    assert result["bleu"] == expected.score and 0 < result["bleu"] < 100
    assert result["n"] == 4 and "case:lc" in result["signature"] \
        and "tok:13a" in result["signature"]
    assert xglue_bleu([], [])["bleu"] == 0.0
    with pytest.raises(ValueError, match="3 predictions but 4 targets"):
        xglue_bleu(PREDICTED[:3], golds)


def test_compute_scores_reports_bleu_as_a_fraction_beside_sacrebleus_number():
    golds = [g.split("\t")[-1].strip() for g in GOLD_LINES]
    scores = compute_scores(get_task("qg"), golds, PREDICTED)
    assert scores["metric"] == "bleu" and scores["bleu"] == xglue_bleu(PREDICTED, golds)["bleu"]
    assert scores["score"] == pytest.approx(scores["bleu"] / 100)
    perfect = compute_scores(get_task("ntg"), golds, [g.upper() for g in golds])
    assert perfect["score"] == pytest.approx(1.0)  # lowercased, as XGLUE's evaluator


# --------------------------------------------------------------------------- fsxlt score


def test_fsxlt_score_gives_the_evaluators_bleu(tmp_path, capsys):
    gold = qg_gold(tmp_path / "XGLUE" / "QG")
    text = "".join(f"{p}\n" for p in PREDICTED)
    predictions = write(tmp_path / "sub" / "QG" / "de.prediction", text)
    expected = evaluator_bleu(text, gold.read_text(encoding="utf-8"))
    result = score_file("qg", gold, predictions, "de")
    assert result["bleu"] == expected and result["score"] == pytest.approx(expected / 100)
    assert (result["n"], result["unit"], result["format"]) == (4, "examples", "xglue")
    assert summary(result) == f"qg/de: bleu {expected:.2f} (4 examples)"
    # the source file's name finds the same target file, and the result names and hashes
    # the file scored (issue 41, case 10: it named the .src file and hashed it)
    by_source = score_file("qg", gold.with_name("xglue.qg.de.src.dev"), predictions, "de")
    assert by_source["bleu"] == expected and by_source["gold"] == str(gold)
    assert by_source["gold_sha256"] == hashlib.sha256(gold.read_bytes()).hexdigest()
    assert by_source["gold_given"] == str(gold.with_name("xglue.qg.de.src.dev"))
    assert "gold_given" not in result
    capsys.readouterr()
    assert run_app(["score", "--task", "qg", "--lang", "de", str(gold), str(predictions),
                    "--json"]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed["bleu"] == expected and printed["signature"].startswith("nrefs:1|case:lc")


def test_scorers_cover_the_generation_tasks():
    assert "xglue/generation" in SCORERS
    assert {"qg", "ntg"} <= set(tasks_with_format())
    assert "xquad-qg" not in tasks_with_format()  # no benchmark prediction format


def test_another_number_of_lines_is_one_line(tmp_path, capsys):
    gold = qg_gold(tmp_path)
    predictions = write(tmp_path / "QG" / "de.prediction", "a\nb\nc\n")
    one_line(capsys, ["score", "--task", "qg", "--lang", "de", str(gold), str(predictions)],
             "3 prediction lines but the gold file", "xglue.qg.de.tgt.dev has 4 target lines")


def test_a_test_split_without_targets_is_one_line(tmp_path, capsys):
    source = write(tmp_path / "xglue.ntg.ru.src.test", "body\n")
    predictions = write(tmp_path / "NTG" / "ru.prediction", "title\n")
    one_line(capsys, ["score", "--task", "ntg", "--lang", "ru", str(source), str(predictions)],
             "has no target file xglue.ntg.ru.tgt.test")


# --------------------------------------------------------------------------- files written


def test_generated_texts_become_one_line_each(tmp_path):
    task = get_task("qg")
    source = write(tmp_path / "xglue.qg.fr.src.test", "passage one\npassage two\npassage 3\n")
    examples, ids = read_unlabelled(source, task, "fr")
    assert ids == [f"xglue.qg.fr.src.test:{i}" for i in (1, 2, 3)]
    assert all(ex.target == "" and ex.language == "fr" for ex in examples)
    texts = ["Qui ?\nQuoi ?", "Où\r\nest-il ?", "Quand\r?"]
    assert render_submission(task, ids, texts) == "Qui ? Quoi ?\nOù est-il ?\nQuand ?\n"
    record = {"bucket": {"index": 3}, "language": "fr", "predict": texts}
    path = write_submission(tmp_path / "runs", task, record, ids, examples)
    assert path == tmp_path / "runs" / "submission" / "03" / "QG" / "fr.prediction"
    assert len(path.read_text(encoding="utf-8").split("\n")) == 3 + 1
    assert record["submission"] == {"file": "submission/03/QG/fr.prediction", "n": 3}


def test_predictions_files_hold_the_generated_texts(tmp_path):
    task = get_task("ntg")
    source = write(tmp_path / "xglue.ntg.de.src.dev", "body one\nbody two\n")
    write(tmp_path / "xglue.ntg.de.tgt.dev", "Title one\nTitle two\n")
    from fsxlt.data import read_examples

    examples = read_examples(source, task, language="de")
    path = write_predictions(tmp_path / "x.predictions.jsonl", examples,
                             ["A title\nover two lines", "Title two"], task=task,
                             language="de", split="dev", model={"kind": "icl"})
    read = read_predictions(path)
    assert read.kind == "generation" and read.gold() == ["Title one", "Title two"]
    assert read.predicted() == ["A title\nover two lines", "Title two"]
    assert read.rows[0]["source"] == "body one"


def test_fsxlt_submission_gathers_qg_and_ntg_files(tmp_path, capsys):
    runs = tmp_path / "runs"
    for task, lang, name in (("qg", "de", "QG"), ("ntg", "ru", "NTG")):
        path = record_path(runs, task, lang, 4, "full", "00")
        record = {"format": RUN_FORMAT, "status": "ok", "task": task, "language": lang,
                  "k": 4, "method": "full", "metric": "bleu",
                  "model": {"source_training": True},
                  "bucket": {"id": f"{task}/{lang}/k4/00", "index": 0, "k": 4, "name": "00",
                             "sampler": "k-pairs"},
                  "dev_score": 0.2, "test_score": None, "best_epoch": 1, "selected_lr": 1e-3,
                  "runs": []}
        write_submission(path.parent, get_task(task), dict(record, predict=["x\ny", "z"]),
                         ["a:1", "a:2"])
        record["submission"] = {"file": f"submission/00/{name}/{lang}.prediction", "n": 2}
        atomic_write_json(path, record)
    capsys.readouterr()
    assert run_app(["submission", str(runs), "--out", str(tmp_path / "sub")]) == 0
    out = tmp_path / "sub"
    assert sorted(p.relative_to(out).as_posix() for p in out.rglob("*.prediction")) == \
        ["NTG/ru.prediction", "QG/de.prediction"]
    assert (out / "QG" / "de.prediction").read_text(encoding="utf-8") == "x y\nz\n"
