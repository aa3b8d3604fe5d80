"""``fsxlt score``: prediction files written by fsxlt's own writer (:mod:`fsxlt.study.submission`,
fed label lists directly, no model) scored against their gold files.

The gold labels score 1.0; k changed labels of n score the fraction worked out by hand
in each test; NER's IOB1 file scores what compute_scores gives the model's own tags,
WPR's file the nDCG compute_scores gives; FewCLUE predictions meet their gold examples
by id, in any order. Every refusal is one line and exit status 2.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
import random
from pathlib import Path

import pytest

from fsxlt.cli import run_app
from fsxlt.data import read_examples
from fsxlt.metrics.scores import compute_scores
from fsxlt.metrics.scoring import SCORERS, score_file, summary, tasks_with_format
from fsxlt.study.submission import read_unlabelled, render_submission, tag_scheme, write_submission
from fsxlt.tasks import get_task
from tests.fewclue_fixtures import write_task
from tests.xglue_fixtures import (
    write_nc,
    write_ner,
    write_pawsx,
    write_pos,
    write_qadsm,
    write_qam,
    write_wpr,
    write_xnli,
)

# --------------------------------------------------------------------------- helpers


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def one_line(status: int, err: str, *says: str) -> None:
    lines = [line for line in err.splitlines() if line.strip()]
    assert status == 2 and len(lines) == 1 and "Traceback" not in err, err
    for part in says:
        assert part in lines[0], err


def refused(capsys, *args: str) -> tuple[int, str]:
    capsys.readouterr()
    status = run_app(["score", *args])
    return status, capsys.readouterr().err


def json_score(capsys, task: str, lang: str, gold: Path, predictions: Path) -> dict:
    capsys.readouterr()
    assert run_app(["score", "--task", task, "--lang", lang, str(gold), str(predictions),
                    "--json"]) == 0
    out = capsys.readouterr().out.strip().splitlines()
    assert len(out) == 1, out
    return json.loads(out[0])


def changed(task: str, labels: list[str], indices: list[int]) -> list[str]:
    """``labels`` with each of ``indices`` replaced by another label of the task."""
    names = get_task(task).labels
    out = list(labels)
    for i in indices:
        out[i] = names[(names.index(out[i]) + 1) % len(names)]
    return out


def prediction_file(path: Path, task: str, examples: list, labels: list) -> Path:
    """An XGLUE prediction file as fsxlt's writer renders it."""
    return write(path, render_submission(get_task(task), [ex.id for ex in examples], labels))


# --------------------------------------------------------------------------- XGLUE classification

# task, gold writer, n gold examples, k changed, (n - k) / n worked out by hand
CLASSIFICATION = [
    ("nc", lambda d: write_nc(d, "de", "dev", 20), 20, 3, 0.85),
    ("qadsm", lambda d: write_qadsm(d, "de", "dev", 20), 20, 5, 0.75),
    ("qam", lambda d: write_qam(d, "de", "dev", 16), 16, 4, 0.75),
    ("pawsx", lambda d: write_pawsx(d, "de", "test", 10), 10, 1, 0.9),  # a header line
    ("xnli", lambda d: write_xnli(d, "test", 9), 9, 3, 2 / 3),  # every language in one file
]


@pytest.mark.parametrize(("task", "make", "n", "k", "expected"), CLASSIFICATION,
                         ids=[c[0] for c in CLASSIFICATION])
def test_xglue_classification_scores_its_gold_labels_and_k_changed(tmp_path, capsys, task,
                                                                   make, n, k, expected):
    gold = make(tmp_path / "gold")
    examples = read_examples(gold, task, language="de")
    labels = [ex.label for ex in examples]
    assert len(examples) == n
    right = prediction_file(tmp_path / "right.prediction", task, examples, labels)
    scores = json_score(capsys, task, "de", gold, right)
    assert scores["score"] == scores["accuracy"] == 1.0 and scores["n"] == n
    wrong = prediction_file(tmp_path / "wrong.prediction", task, examples,
                            changed(task, labels, list(range(0, 2 * k, 2))))
    scores = json_score(capsys, task, "de", gold, wrong)
    assert scores["metric"] == "accuracy"
    assert scores["score"] == pytest.approx(expected, abs=1e-12)


def test_the_human_line_names_task_language_metric_and_count(tmp_path, capsys):
    gold = write_xnli(tmp_path, "test", 9)
    examples = read_examples(gold, "xnli", language="de")
    labels = changed("xnli", [ex.label for ex in examples], [0, 4, 8])
    prediction = prediction_file(tmp_path / "de.prediction", "xnli", examples, labels)
    capsys.readouterr()
    assert run_app(["score", "--task", "xnli", "--lang", "de", str(gold),
                    str(prediction)]) == 0
    assert capsys.readouterr().out == "xnli/de: accuracy 66.67 (9 examples)\n"


def test_json_holds_every_metric_the_task_and_both_files_hashes(tmp_path, capsys):
    gold = write_nc(tmp_path, "de", "dev", 10)
    examples = read_examples(gold, "nc")
    prediction = prediction_file(tmp_path / "de.prediction", "nc", examples,
                                 [ex.label for ex in examples])
    scores = json_score(capsys, "nc", "de", gold, prediction)
    assert scores["task"] == "nc" and scores["language"] == "de"
    assert scores["format"] == "xglue" and scores["unit"] == "examples"
    assert scores["gold_sha256"] == hashlib.sha256(gold.read_bytes()).hexdigest()
    assert scores["predictions_sha256"] == hashlib.sha256(prediction.read_bytes()).hexdigest()
    assert scores == score_file("nc", gold, prediction, "de")  # the API gives the same


# --------------------------------------------------------------------------- WPR


def test_wpr_ndcg_worked_out_by_hand(tmp_path):
    """q1 graded 2, 0 and ranked the other way: DCG 2/log2(3), ideal 2 -> 1/log2(3);
    q2 graded 0, 1, 3 and ranked by its own grades: 1. The mean of the two."""
    gold = write(tmp_path / "xglue.wpr.de.dev", "".join(
        f"{query}\ttitle {i}\tsnippet\t{grade}\n"
        for i, (query, grade) in enumerate([("q1", 2), ("q1", 0), ("q2", 0), ("q2", 1),
                                            ("q2", 3)])))
    examples = read_examples(gold, "wpr")
    right = prediction_file(tmp_path / "right", "wpr", examples, ["2", "0", "0", "1", "3"])
    assert score_file("wpr", gold, right, "de")["score"] == pytest.approx(1.0, abs=1e-12)
    wrong = prediction_file(tmp_path / "wrong", "wpr", examples, ["0", "2", "0", "1", "3"])
    scores = score_file("wpr", gold, wrong, "de")
    assert scores["score"] == pytest.approx((1 / math.log2(3) + 1) / 2, abs=1e-12)
    assert scores["n_queries"] == 2 and scores["n"] == 5 and scores["unit"] == "pages"
    assert summary(scores) == "wpr/de: ndcg 81.55 (5 pages, 2 queries)"


@pytest.mark.parametrize("seed", range(3))
def test_wpr_file_scores_the_ndcg_compute_scores_gives(tmp_path, seed):
    gold = write_wpr(tmp_path, "de", "dev", 8, seed=seed)
    examples = read_examples(gold, "wpr")
    rng = random.Random(seed)
    grades = [str(rng.randint(0, 4)) for _ in examples]
    prediction = prediction_file(tmp_path / "de.prediction", "wpr", examples, grades)
    expected = compute_scores(get_task("wpr"), [ex.label for ex in examples], grades,
                              groups=[ex.text_a for ex in examples])
    scores = score_file("wpr", gold, prediction, "de")
    assert scores["score"] == expected["score"] and scores["ndcg"] == expected["ndcg"]
    assert scores["n_queries"] == expected["n_queries"]


def test_a_wpr_gold_file_with_nothing_to_rank_is_refused(tmp_path, capsys):
    gold = write(tmp_path / "xglue.wpr.de.dev",
                 "".join(f"query {q}\ttitle\tsnippet\t{q % 5}\n" for q in range(3)))
    prediction = write(tmp_path / "de.prediction", "0\n1\n2\n")
    one_line(*refused(capsys, "--task", "wpr", "--lang", "de", str(gold), str(prediction)),
             "no query has two judged pages")


# --------------------------------------------------------------------------- NER and POS

NER_GOLD = """-DOCSTART- O

Angela I-PER
Merkel I-PER
Olaf B-PER
met O
in O
Berlin I-LOC
. O

The O
EU I-ORG
said O
so O

-DOCSTART- O

Siemens I-ORG
AG I-ORG
and O
Bosch I-ORG
hired O
Anna I-PER
"""


def ner_file(tmp_path: Path, examples: list, tags: list[list[str]]) -> Path:
    """The NER prediction file fsxlt's writer makes of ``tags``, in the scheme of the
    gold file (its input's tags)."""
    record = {"bucket": {"index": 0, "name": "00"}, "language": "de", "predict": tags}
    return write_submission(tmp_path / "runs", get_task("xglue-ner"), record,
                            [ex.id for ex in examples], inputs=examples)


def test_ner_gold_tags_are_written_as_the_gold_file_has_them_and_score_one(tmp_path):
    gold = write(tmp_path / "de.test", NER_GOLD)
    examples = read_examples(gold, "xglue-ner")
    assert tag_scheme(ex.tags for ex in examples) == "iob1"
    prediction = ner_file(tmp_path, examples, [list(ex.tags) for ex in examples])
    written = prediction.read_text(encoding="utf-8").strip().split("\n\n")
    assert [block.split("\n") for block in written] == [list(ex.tags) for ex in examples]
    scores = score_file("xglue-ner", gold, prediction, "de")
    assert scores["score"] == scores["seqeval_f1"] == 1.0
    assert scores["n"] == 3 and scores["n_words"] == 17


@pytest.mark.parametrize("seed", range(6))
def test_ner_iob1_file_scores_the_f1_of_the_models_own_tags(tmp_path, seed):
    """The model predicts any mix of B- and I- tags; the writer re-encodes them in IOB1,
    and the file scores what compute_scores gives the model's tags against the gold."""
    gold = write(tmp_path / "de.test", NER_GOLD)
    examples = read_examples(gold, "xglue-ner")
    labels = get_task("xglue-ner").labels
    rng = random.Random(seed)
    model = [[tag if rng.random() < 0.5 else rng.choice(labels) for tag in ex.tags]
             for ex in examples]
    model = [[f"B-{t[2:]}" if t.startswith("I-") and rng.random() < 0.5 else t for t in tags]
             for tags in model]  # IOB2-style openings too
    prediction = ner_file(tmp_path, examples, model)
    expected = compute_scores(get_task("xglue-ner"), [list(ex.tags) for ex in examples], model)
    scores = score_file("xglue-ner", gold, prediction, "de")
    for key in ("seqeval_f1", "precision", "recall"):
        assert scores[key] == expected[key], key


def test_ner_k_entities_missed_of_n(tmp_path):
    """8 sentences with one entity each; 2 predicted O: precision 1, recall 6/8, F1 6/7."""
    gold = write_ner(tmp_path, "de", "test", 8)
    examples = read_examples(gold, "xglue-ner")
    tags = [list(ex.tags) for ex in examples]
    for sentence in tags[:2]:
        sentence[1] = "O"
    scores = score_file("xglue-ner", gold, ner_file(tmp_path, examples, tags), "de")
    assert scores["score"] == pytest.approx(6 / 7, abs=1e-12)
    assert scores["precision"] == 1.0 and scores["recall"] == pytest.approx(0.75)


def test_pos_scores_xglues_precision_worked_out_by_hand(tmp_path, capsys):
    """6 sentences DET NOUN VERB PROPN PUNCT: 5 seqeval chunks each. VERB tagged NOUN in 2
    of them makes NOUN NOUN one chunk: 4 predicted chunks there, 3 right.
    Precision (4 * 5 + 2 * 3) / (4 * 5 + 2 * 4) = 26 / 28."""
    gold = write_pos(tmp_path, "de", "test", 6)
    examples = read_examples(gold, "xglue-pos")
    tags = [list(ex.tags) for ex in examples]
    right = write(tmp_path / "right", render_submission(get_task("xglue-pos"),
                                                        [ex.id for ex in examples], tags))
    assert json_score(capsys, "xglue-pos", "de", gold, right)["score"] == 1.0
    for sentence in tags[:2]:
        sentence[2] = "NOUN"
    wrong = write(tmp_path / "wrong", render_submission(get_task("xglue-pos"),
                                                        [ex.id for ex in examples], tags))
    scores = json_score(capsys, "xglue-pos", "de", gold, wrong)
    assert scores["metric"] == "seqeval_precision"
    assert scores["score"] == pytest.approx(26 / 28, abs=1e-12)
    assert scores["token_accuracy"] == pytest.approx(28 / 30, abs=1e-12)


# --------------------------------------------------------------------------- FewCLUE


def fewclue_predictions(path: Path, task: str, gold: Path, labels: list[str] | None = None,
                        order: slice = slice(None)) -> Path:
    """The prediction file fsxlt's writer makes for ``gold``'s examples (ids as the file
    gives them), ``labels`` (default: the gold ones), lines in ``order``."""
    spec = get_task(task)
    _, ids = read_unlabelled(gold, spec)
    if labels is None:
        labels = [ex.label for ex in read_examples(gold, spec)]
    lines = render_submission(spec, ids, labels).splitlines(keepends=True)
    return write(path, "".join(lines[order]))


@pytest.mark.parametrize("task", ["eprstmt", "tnews", "chid", "cluewsc"])
def test_fewclue_matches_by_id_in_any_order(tmp_path, capsys, task):
    """21 gold examples; 3 changed: 18/21. Lines reversed: matched by id, not position."""
    gold = write_task(tmp_path, task) / "test_public.json"
    labels = [ex.label for ex in read_examples(gold, task)]
    right = fewclue_predictions(tmp_path / "right.json", task, gold, order=slice(None, None, -1))
    scores = json_score(capsys, task, "zh", gold, right)
    assert scores["score"] == 1.0 and scores["n"] == 21 and scores["format"] == "fewclue"
    wrong = fewclue_predictions(tmp_path / "wrong.json", task, gold,
                                changed(task, labels, [1, 10, 20]))
    assert json_score(capsys, task, "zh", gold, wrong)["score"] == pytest.approx(18 / 21)


def test_fewclue_ids_match_as_text_and_the_language_defaults_to_zh(tmp_path, capsys):
    """TNEWS's test.json gives ids as strings, test_public.json as numbers."""
    gold = write_task(tmp_path, "tnews") / "test_public.json"
    rows = [json.loads(line) for line in
            fewclue_predictions(tmp_path / "p.json", "tnews", gold).read_text().splitlines()]
    prediction = write(tmp_path / "tnewsf_predict_0.json", "".join(
        json.dumps({"id": str(row["id"]), "label": row["label"]}) + "\n" for row in rows))
    capsys.readouterr()
    assert run_app(["score", "--task", "tnews", str(gold), str(prediction)]) == 0
    assert capsys.readouterr().out == "tnews/zh: accuracy 100.00 (21 examples)\n"


def test_fewclue_gold_rows_without_a_label_are_left_out(tmp_path):
    gold = write_task(tmp_path, "ocnli") / "test_public.json"
    prediction = fewclue_predictions(tmp_path / "ocnlif_predict_0.json", "ocnli", gold)
    rows = [json.loads(line) for line in gold.read_text(encoding="utf-8").splitlines()]
    rows[1]["label"] = "-"  # OCNLI's mark of an example without a gold label
    write(gold, "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows))
    scores = score_file("ocnli", gold, prediction, "zh")
    assert scores["score"] == 1.0 and scores["n"] == 20 and scores["unlabelled"] == 1
    assert summary(scores) == "ocnli/zh: accuracy 100.00 (20 examples, 1 unlabelled left out)"


# --------------------------------------------------------------------------- refusals


@pytest.fixture()
def nc_files(tmp_path) -> tuple[Path, list[str]]:
    gold = write_nc(tmp_path / "gold", "de", "dev", 20)
    return gold, [f"{ex.label}\n" for ex in read_examples(gold, "nc")]


def test_another_number_of_lines_names_both_counts(tmp_path, capsys, nc_files):
    gold, lines = nc_files
    for name, text, count in (("fewer", lines[:-1], "19"), ("more", lines + lines[:1], "21")):
        prediction = write(tmp_path / name, "".join(text))
        one_line(*refused(capsys, "--task", "nc", "--lang", "de", str(gold), str(prediction)),
                 f"{count} prediction lines", "has 20 examples", str(prediction))


def test_a_label_not_of_the_task_names_file_and_line(tmp_path, capsys, nc_files):
    gold, lines = nc_files
    for bad, shown in (("weather\n", "'weather' is not a label of task nc"),
                       ("\n", "an empty label is not a label of task nc")):
        prediction = write(tmp_path / "de.prediction", "".join(lines[:2] + [bad] + lines[3:]))
        one_line(*refused(capsys, "--task", "nc", "--lang", "de", str(gold), str(prediction)),
                 f"{prediction}:3", shown)


@pytest.fixture()
def pos_files(tmp_path) -> tuple[Path, list[list[str]]]:
    gold = write_pos(tmp_path / "gold", "de", "test", 6)
    return gold, [list(ex.tags) for ex in read_examples(gold, "xglue-pos")]


def pos_text(tags: list[list[str]]) -> str:
    return "\n\n".join("\n".join(sentence) for sentence in tags) + "\n"


def test_tagging_files_out_of_step_with_the_gold_are_refused(tmp_path, capsys, pos_files):
    gold, tags = pos_files
    cases = [
        (pos_text(tags[:-1]), None, ("5 sentences", "has 6 sentences")),
        (pos_text([tags[0], tags[1][:-1], *tags[2:]]), 7,
         ("sentence 2 has 4 tags", "has 5 words")),
        (pos_text(tags[:1]) + "\n\n" + pos_text(tags[1:]), 7, ("a blank line after a blank",)),
        (pos_text([tags[0], ["DET", "NOUNS", *tags[1][2:]], *tags[2:]]), 8,
         ("'NOUNS' is not a label of task xglue-pos",)),
    ]
    for text, line, says in cases:
        prediction = write(tmp_path / "de.prediction", text)
        where = f"{prediction}:{line}" if line else str(prediction)
        one_line(*refused(capsys, "--task", "xglue-pos", "--lang", "de", str(gold),
                          str(prediction)), where, *says)


def test_fewclue_ids_missing_unknown_or_twice_are_refused(tmp_path, capsys):
    gold = write_task(tmp_path, "eprstmt") / "test_public.json"
    lines = fewclue_predictions(tmp_path / "p.json", "eprstmt", gold).read_text().splitlines()
    cases = [
        (lines[1:], ("no prediction for 1 of the 21 labelled examples", "ids ")),
        ([*lines, json.dumps({"id": 999, "label": "Positive"})],
         (":22:", "id 999 is not an id of the gold file")),
        ([*lines, lines[0]], (":22:", "predicted twice (lines 1 and 22)")),
        ([json.dumps({"id": json.loads(lines[0])["id"], "label": "Neutral"}), *lines[1:]],
         (":1:", "'Neutral' is not a label of task eprstmt")),
        ([json.dumps({"label": "Positive"}), *lines[1:]], (":1:", "has no 'id'")),
    ]
    for text, says in cases:
        prediction = write(tmp_path / "eprstmt_predict_0.json", "\n".join(text) + "\n")
        one_line(*refused(capsys, "--task", "eprstmt", str(gold), str(prediction)), *says)


def test_chid_answers_must_be_candidate_positions(tmp_path, capsys):
    gold = write_task(tmp_path, "chid") / "test_public.json"
    first = json.loads(fewclue_predictions(tmp_path / "p.json", "chid", gold)
                       .read_text().splitlines()[0])
    rest = fewclue_predictions(tmp_path / "p.json", "chid", gold).read_text().splitlines()[1:]
    for answer, says in (("3", "'answer' must be an integer"), (9, "'9' is not a label")):
        line = json.dumps({"id": first["id"], "answer": answer})
        prediction = write(tmp_path / "chidf_predict_0.json", "\n".join([line, *rest]) + "\n")
        one_line(*refused(capsys, "--task", "chid", str(gold), str(prediction)), ":1:", says)
    line = json.dumps({"id": first["id"], "label": "3"})
    prediction = write(tmp_path / "chidf_predict_0.json", "\n".join([line, *rest]) + "\n")
    one_line(*refused(capsys, "--task", "chid", str(gold), str(prediction)),
             "missing 'answer'")


def test_missing_files_tasks_languages_and_unlabelled_gold(tmp_path, capsys, nc_files):
    gold, lines = nc_files
    prediction = write(tmp_path / "de.prediction", "".join(lines))
    missing = tmp_path / "nowhere"
    cases = [
        (["--task", "nc", "--lang", "de", str(missing), str(prediction)],
         (f"{missing}: gold file not found",)),
        (["--task", "nc", "--lang", "de", str(gold), str(missing)],
         (f"{missing}: prediction file not found",)),
        (["--task", "panx", "--lang", "de", str(gold), str(prediction)],
         ("task panx has no prediction format", "tasks with one: ", "xnli")),
        (["--task", "nc", "--lang", "xx", str(gold), str(prediction)],
         ("unknown language 'xx' for task nc",)),
        (["--task", "nc", str(gold), str(prediction)],
         ("name the one scored with --lang",)),
        (["--task", "nc", "--lang", "de", str(write_nc(tmp_path / "test", "de", "test", 20)),
          str(prediction)], ("holds no labels",)),
        (["--task", "no-such-task", "--lang", "de", str(gold), str(prediction)],
         ("unknown task 'no-such-task'",)),
    ]
    for args, says in cases:
        one_line(*refused(capsys, *args), *says)


def test_another_format_plugs_in_with_one_entry(tmp_path, monkeypatch):
    """A task whose format and kind have no scorer is refused naming the tasks with one;
    one entry in SCORERS makes it scored, with the task, language and hashes added."""
    from fsxlt.errors import FsxltError

    task = dataclasses.replace(get_task("chid"), submission_format="xglue")
    gold = write(tmp_path / "gold.json", "{}\n")
    prediction = write(tmp_path / "de.prediction", "{}\n")
    with pytest.raises(FsxltError, match="no scorer for xglue prediction files of "
                                         "multiple_choice tasks"):
        score_file(task, gold, prediction, "zh")
    monkeypatch.setitem(SCORERS, "xglue/multiple_choice",
                        lambda *args: {"metric": "f1", "score": 0.5, "n": 1, "unit": "questions"})
    scores = score_file(task, gold, prediction, "zh")
    assert scores["score"] == 0.5 and scores["task"] == "chid" and scores["format"] == "xglue"
    assert summary(scores) == "chid/zh: f1 50.00 (1 questions)"


def test_every_task_with_a_prediction_format_is_scored():
    """xglue's and fewclue's tasks, none without a submission in its YAML."""
    names = tasks_with_format()
    assert {"xnli", "pawsx", "nc", "qadsm", "qam", "wpr", "xglue-ner", "xglue-pos",
            "eprstmt", "ocnli", "chid", "tnews"} <= set(names)
    assert not {"panx", "udpos", "mldoc", "marc"} & set(names)


def test_help_has_examples(capsys):
    assert run_app(["score", "--help"]) == 0
    out = capsys.readouterr().out
    assert "Examples:" in out and "fsxlt score --task xnli --lang de" in out
