"""Benchmark submissions: one folder per study (fsxlt submission), FewCLUE's ids as each
file gives them, NER tags in the input's scheme, and the FewCLUE overview only for
fixed splits.

Runs are fabricated records (the layout of fsxlt.study.runs) with their submission files,
except one end-to-end run that predicts CLUEWSC's test.json with a tiny encoder.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from fsxlt.cli import run_app
from fsxlt.errors import DataFormatError, FsxltError
from fsxlt.fileio import atomic_write_json
from fsxlt.metrics.scores import entity_set
from fsxlt.report import report_text
from fsxlt.study.runs import RUN_FORMAT, record_path
from fsxlt.study.submission import (
    encode_entities,
    read_unlabelled,
    render_submission,
    tag_scheme,
    write_submission,
)
from fsxlt.tasks import get_task
from tests.fewclue_fixtures import FEWCLUE_VOCAB, TASKS, TEST_KEYS, TRAIN_SIZE, write_task


def assert_one_line(status: int, err: str, says: str) -> None:
    lines = [line for line in err.splitlines() if line.strip()]
    assert status == 2, err
    assert "Traceback" not in err and len(lines) == 1, err
    assert says in lines[0], err


def fake_run(root: Path, task: str, lang: str, k: int, stem: str, *, file: str | None,
             text: str = "", source: bool = True, dev: float = 0.5, sampler: str = "nway-kshot",
             metric: str = "accuracy", test: float | None = None) -> Path:
    """A finished run record of ``task`` (arm full, or full-nosource) on bucket ``stem``,
    naming ``submission/<file>`` (written with ``text``) when ``file`` is given."""
    index = 5 if stem == "all" else int(stem)
    record = {"format": RUN_FORMAT, "status": "ok", "task": task, "language": lang, "k": k,
              "method": "full", "metric": metric, "model": {"source_training": source},
              "bucket": {"id": f"{task}/{lang}/k{k}/{stem}", "index": index, "k": k,
                         "name": stem, "sampler": sampler, **({"union": True}
                                                              if stem == "all" else {})},
              "dev_score": dev, "test_score": test, "best_epoch": 1, "selected_lr": 1e-3,
              "runs": []}
    path = record_path(root, task, lang, k, "full" if source else "full-nosource", stem)
    if file is not None:
        record["submission"] = {"file": f"submission/{file}", "n": 1}
        (path.parent / "submission" / file).parent.mkdir(parents=True, exist_ok=True)
        (path.parent / "submission" / file).write_text(text, encoding="utf-8")
    atomic_write_json(path, record)
    return path


def xglue_runs(root: Path) -> Path:
    """NER de and es, QADSM fr: K=1, buckets 00 and 01 (dev 0.4 and 0.6; es: 0.7, 0.3)."""
    for task, lang, name in (("xglue-ner", "de", "NER"), ("xglue-ner", "es", "NER"),
                             ("qadsm", "fr", "QADSM")):
        for stem, dev in (("00", 0.7 if lang == "es" else 0.4),
                          ("01", 0.3 if lang == "es" else 0.6)):
            fake_run(root, task, lang, 1, stem, file=f"{stem}/{name}/{lang}.prediction",
                     text=f"{task} {lang} {stem}\n", dev=dev)
    return root


def folder(out: Path) -> dict[str, str]:
    return {p.relative_to(out).as_posix(): p.read_text(encoding="utf-8")
            for p in sorted(out.rglob("*")) if p.is_file()}


# --------------------------------------------------------------------------- one folder (6)

def test_xglue_runs_of_one_bucket_make_the_folder_the_evaluator_reads(tmp_path, capsys):
    runs = xglue_runs(tmp_path / "runs")
    out = tmp_path / "sub"
    assert run_app(["submission", str(runs), "--out", str(out), "--bucket", "01"]) == 0
    assert folder(out) == {"NER/de.prediction": "xglue-ner de 01\n",
                           "NER/es.prediction": "xglue-ner es 01\n",
                           "QADSM/fr.prediction": "qadsm fr 01\n"}
    said = capsys.readouterr().out.splitlines()
    assert said[-1] == f"written 3 files to {out} (arm full)"
    assert "NER/de.prediction  <-  xglue-ner/de/k1/full/01.json" in said


def test_best_dev_takes_each_cells_run_with_the_best_dev_score(tmp_path):
    runs = xglue_runs(tmp_path / "runs")
    out = tmp_path / "sub"
    assert run_app(["submission", str(runs), "--out", str(out), "--bucket", "best-dev"]) == 0
    assert folder(out) == {"NER/de.prediction": "xglue-ner de 01\n",
                           "NER/es.prediction": "xglue-ner es 00\n",
                           "QADSM/fr.prediction": "qadsm fr 01\n"}


def test_two_runs_that_claim_one_file_are_refused(tmp_path, capsys):
    runs = xglue_runs(tmp_path / "runs")
    out = tmp_path / "sub"
    status = run_app(["submission", str(runs), "--out", str(out)])
    assert_one_line(status, capsys.readouterr().err, "QADSM/fr.prediction is claimed by two "
                    f"runs, {runs}/qadsm/fr/k1/full/00.json and {runs}/qadsm/fr/k1/full/01.json")
    assert not out.exists()


def test_a_file_a_record_names_that_is_missing_is_refused(tmp_path, capsys):
    runs = xglue_runs(tmp_path / "runs")
    gone = runs / "qadsm/fr/k1/full/submission/01/QADSM/fr.prediction"
    gone.unlink()
    out = tmp_path / "sub"
    status = run_app(["submission", str(runs), "--out", str(out), "--bucket", "01"])
    assert_one_line(status, capsys.readouterr().err, f"{gone}: missing")
    assert not out.exists()


def test_several_arms_need_arm_and_one_is_gathered(tmp_path, capsys):
    runs = tmp_path / "runs"
    fake_run(runs, "qam", "de", 1, "00", file="00/QAM/de.prediction", text="1\n")
    fake_run(runs, "qam", "de", 1, "00", file="00/QAM/de.prediction", text="0\n", source=False)
    out = tmp_path / "sub"
    status = run_app(["submission", str(runs), "--out", str(out)])
    assert_one_line(status, capsys.readouterr().err, "several arms")
    assert run_app(["submission", str(runs), "--out", str(out), "--arm", "full-nosource"]) == 0
    assert folder(out) == {"QAM/de.prediction": "0\n"}


def fewclue_runs(root: Path, tasks: tuple[str, ...] = ("cluewsc", "eprstmt")) -> Path:
    for task in tasks:
        name = get_task(task).submission
        for stem in ("00", "01", "02", "03", "04", "all"):
            split = stem if stem == "all" else str(int(stem))
            fake_run(root, task, "zh", 32, stem, file=f"{name}_predict_{split}.json",
                     text=f'{{"id": {split!r}}}\n', sampler="fewclue-fixed", source=False)
    return root


def test_fewclue_folder_holds_every_split_of_every_task(tmp_path, capsys):
    runs = fewclue_runs(tmp_path / "runs")
    out = tmp_path / "sub"
    assert run_app(["submission", str(runs), "--out", str(out)]) == 0
    assert sorted(folder(out)) == sorted(f"{name}_predict_{x}.json"
                                         for name in ("cluewscf", "eprstmt")
                                         for x in ("0", "1", "2", "3", "4", "all"))
    assert capsys.readouterr().err == ("note: FewCLUE's leaderboard takes nine tasks; this "
                                       "folder lacks bustm, chid, csl, csldcp, iflytek, "
                                       "ocnli, tnews\n")


def test_a_fewclue_task_without_all_its_splits_is_refused(tmp_path, capsys):
    runs = fewclue_runs(tmp_path / "runs")
    (runs / "eprstmt/zh/k32/full-nosource/03.json").unlink()
    out = tmp_path / "sub"
    status = run_app(["submission", str(runs), "--out", str(out)])
    assert_one_line(status, capsys.readouterr().err,
                    "eprstmt/zh/k32/full-nosource: no submission file for split 03")
    assert not out.exists()
    assert run_app(["submission", str(runs), "--out", str(out), "--bucket", "all"]) == 0
    assert sorted(folder(out)) == ["cluewscf_predict_all.json", "eprstmt_predict_all.json"]


def test_the_folder_is_write_once(tmp_path, capsys):
    runs = xglue_runs(tmp_path / "runs")
    out = tmp_path / "sub"
    args = ["submission", str(runs), "--out", str(out), "--bucket", "00"]
    assert run_app(args) == 0
    assert run_app(args) == 0
    assert capsys.readouterr().out.splitlines()[-1].startswith("unchanged 3 files")
    (runs / "qadsm/fr/k1/full/submission/00/QADSM/fr.prediction").write_text("Bad\n")
    assert_one_line(run_app(args), capsys.readouterr().err, "pass --replace")
    assert folder(out)["QADSM/fr.prediction"] == "qadsm fr 00\n"
    assert run_app([*args, "--replace"]) == 0
    assert capsys.readouterr().out.splitlines()[-1].startswith("replaced 3 files")
    assert folder(out)["QADSM/fr.prediction"] == "Bad\n"
    (out / "notes.txt").write_text("mine")
    (runs / "qadsm/fr/k1/full/submission/00/QADSM/fr.prediction").write_text("Good\n")
    assert_one_line(run_app([*args, "--replace"]), capsys.readouterr().err,
                    "not submission files")
    assert (out / "notes.txt").read_text() == "mine"


def test_replace_removes_only_files_it_wrote(tmp_path, capsys):
    """A command owns only what it wrote (issue 31, mechanism 4): under fsxlt 0.2.0
    ``--replace`` deleted any file shaped like a submission file (``notes/draft.prediction``
    in a folder of the user's)."""
    runs = xglue_runs(tmp_path / "runs")
    mine = tmp_path / "mine"
    (mine / "notes").mkdir(parents=True)
    (mine / "notes" / "draft.prediction").write_text("my draft\n")
    args = ["submission", str(runs), "--out", str(mine), "--bucket", "00", "--replace"]
    assert_one_line(run_app(args), capsys.readouterr().err,
                    "not submission files fsxlt wrote there (notes/draft.prediction)")
    assert folder(mine) == {"notes/draft.prediction": "my draft\n"}


def test_replace_through_a_link_replaces_the_folder_it_points_to(tmp_path, capsys):
    """Paths are resolved first (issue 31, mechanism 5): under 0.2.0 ``--replace`` on a
    link replaced the link and left a hidden ``.old`` folder beside it."""
    runs = xglue_runs(tmp_path / "runs")
    real, link = tmp_path / "real", tmp_path / "link"
    args = ["submission", str(runs), "--bucket", "00"]
    assert run_app([*args, "--out", str(real)]) == 0
    link.symlink_to(real)
    (runs / "qadsm/fr/k1/full/submission/00/QADSM/fr.prediction").write_text("New\n")
    assert run_app([*args, "--out", str(link), "--replace"]) == 0
    assert link.is_symlink() and link.resolve() == real.resolve()
    assert folder(real)["QADSM/fr.prediction"] == "New\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == [".real.fsxlt-submission.json",
                                                          "link", "real", "runs"]


def test_a_submission_path_that_leaves_its_folder_is_refused(tmp_path, capsys):
    """A record naming ``submission/00/../../x.prediction`` made 0.2.0 write outside
    --out; now it is one line and nothing is written."""
    runs = xglue_runs(tmp_path / "runs")
    path = fake_run(runs, "qadsm", "de", 1, "00", file="00/QADSM/de.prediction", text="x\n")
    record = json.loads(path.read_text())
    record["submission"]["file"] = "submission/00/../../../../../evil.prediction"
    path.write_text(json.dumps(record))
    out = tmp_path / "out" / "sub"
    status = run_app(["submission", str(runs), "--out", str(out), "--bucket", "00"])
    assert_one_line(status, capsys.readouterr().err, "may not leave its run's submission/")
    assert not (tmp_path / "out").exists() and not list(tmp_path.rglob("evil.prediction"))


def test_out_inside_the_runs_directory_is_refused(tmp_path, capsys):
    runs = xglue_runs(tmp_path / "runs")
    status = run_app(["submission", str(runs), "--out", str(runs / "sub"), "--bucket", "00"])
    assert_one_line(status, capsys.readouterr().err, "a submission folder must be a directory")
    assert not (runs / "sub").exists()


# --------------------------------------------------------------------------- FewCLUE ids (9)

def first_line(path: Path) -> dict:
    return json.loads(path.read_text(encoding="utf-8").splitlines()[0])


@pytest.mark.parametrize("task", TASKS)
def test_each_tasks_test_json_gives_its_ids_to_the_submission(task, tmp_path):
    """The fixture's test.json has FewCLUE's test.json keys; every line gets its id."""
    folder_ = write_task(tmp_path, task)
    test = folder_ / "test.json"
    assert list(first_line(test)) == list(TEST_KEYS[task])
    rows = [json.loads(line) for line in test.read_text(encoding="utf-8").splitlines()]
    spec = get_task(task)
    examples, ids = read_unlabelled(test, spec)
    assert ids == [row["id"] for row in rows] and None not in ids
    labels = ["0"] * len(ids) if task == "chid" else [spec.labels[0]] * len(ids)
    written = [json.loads(line) for line in render_submission(spec, ids, labels).splitlines()]
    assert [line["id"] for line in written] == [row["id"] for row in rows]


def test_cluewsc_reads_idx_where_its_files_say_idx(tmp_path):
    public = write_task(tmp_path, "cluewsc") / "test_public.json"
    assert "idx" in first_line(public) and "id" not in first_line(public)
    rows = [json.loads(line) for line in public.read_text(encoding="utf-8").splitlines()]
    assert read_unlabelled(public, get_task("cluewsc"))[1] == [row["idx"] for row in rows]


def test_a_line_without_an_id_is_refused_naming_file_and_line(tmp_path):
    test = write_task(tmp_path, "eprstmt") / "test.json"
    lines = test.read_text(encoding="utf-8").splitlines()
    lines[2] = json.dumps({"sentence": "天地人"}, ensure_ascii=False)
    test.write_text("\n".join(lines) + "\n", encoding="utf-8")
    with pytest.raises(DataFormatError, match=r"test\.json:3: the example has no id"):
        read_unlabelled(test, get_task("eprstmt"))
    with pytest.raises(FsxltError, match="1 of 2 examples to predict have no id"):
        render_submission(get_task("eprstmt"), [1, None], ["Positive", "Negative"])


def test_cluewsc_test_json_predicted_end_to_end_and_gathered(tmp_path, capsys):
    """adapt --predict on CLUEWSC's test.json layout: every line has the file's id."""
    from tests.train_fixtures import make_encoder_dir

    data = write_task(tmp_path / "data", "cluewsc")
    store = tmp_path / "buckets"
    assert run_app(["buckets", "import-fewclue", str(tmp_path / "data"), "--out", str(store),
                    "-t", "cluewsc"]) == 0
    encoder = make_encoder_dir(tmp_path / "enc", extra=FEWCLUE_VOCAB)
    runs = tmp_path / "runs"
    assert run_app(["adapt", "--task", "cluewsc", "--lang", "zh", "--bucket",
                    str(store / "cluewsc" / "zh" / f"k{TRAIN_SIZE}" / "00.json"), "--from",
                    str(encoder), "--out", str(runs), "--lr", "1e-3", "--max-epochs", "1",
                    "--max-seq-length", "32", "--device", "cpu", "--predict",
                    str(data / "test.json")]) == 0
    out = tmp_path / "sub"
    assert run_app(["submission", str(runs), "--out", str(out), "--bucket", "00"]) == 0
    written = [json.loads(line) for line in
               (out / "cluewscf_predict_0.json").read_text(encoding="utf-8").splitlines()]
    expected = [json.loads(line)["id"] for line in
                (data / "test.json").read_text(encoding="utf-8").splitlines()]
    assert [row["id"] for row in written] == expected and None not in expected
    assert all(row["label"] in ("true", "false") for row in written)
    # a deleted submission file: the message says what helps, and that does (issue 31,
    # mechanism 11; 0.2.0 said "rerun with --predict (and --replace)", then "already done")
    made = next(runs.rglob("submission/cluewscf_predict_0.json"))
    text = made.read_text(encoding="utf-8")
    made.unlink()
    capsys.readouterr()
    assert run_app(["submission", str(runs), "--out", str(tmp_path / "sub2"), "--bucket",
                    "00"]) == 2
    assert "run the sweep (or fsxlt adapt) again with the same settings" in \
        capsys.readouterr().err
    assert run_app(["adapt", "--task", "cluewsc", "--lang", "zh", "--bucket",
                    str(store / "cluewsc" / "zh" / f"k{TRAIN_SIZE}" / "00.json"), "--from",
                    str(encoder), "--out", str(runs), "--lr", "1e-3", "--max-epochs", "1",
                    "--max-seq-length", "32", "--device", "cpu", "--predict",
                    str(data / "test.json")]) == 0
    assert "already done" not in capsys.readouterr().out
    assert made.read_text(encoding="utf-8") == text


# --------------------------------------------------------------------------- NER scheme (7)

def sentences_of(*tags: str) -> list[list[str]]:
    return [t.split() for t in tags]


def test_ner_predictions_are_written_in_the_inputs_scheme(tmp_path):
    from fsxlt.data import TaggedSentence

    task = get_task("xglue-ner")
    iob1 = sentences_of("I-PER I-PER O I-LOC", "O I-ORG B-ORG O")
    iob2 = sentences_of("B-PER I-PER O B-LOC", "O B-ORG B-ORG O")
    assert tag_scheme(iob1) == "iob1" and tag_scheme(iob2) == "iob2"
    predicted = sentences_of("B-PER I-PER O B-LOC", "O B-ORG B-ORG I-ORG")
    for given, expected in ((iob1, "I-PER I-PER O I-LOC\n\nO I-ORG B-ORG I-ORG\n"),
                            (iob2, "B-PER I-PER O B-LOC\n\nO B-ORG B-ORG I-ORG\n")):
        inputs = [TaggedSentence(f"in:{i}", tuple(f"w{j}" for j in range(len(tags))),
                                 tuple(tags)) for i, tags in enumerate(given)]
        record = {"bucket": {"index": 0, "name": "00"}, "language": "de",
                  "predict": predicted}
        path = write_submission(tmp_path, task, record, [x.id for x in inputs], inputs=inputs)
        text = path.read_text(encoding="utf-8")
        assert text == expected.replace(" ", "\n")  # one tag a line, a blank line between
        written = [block.split("\n") for block in text.strip().split("\n\n")]
        assert entity_set(written) == entity_set(predicted)  # the same entities, same score


@pytest.mark.parametrize("seed", range(5))
def test_reencoding_keeps_every_entity_of_any_tag_mix(seed):
    rng = random.Random(seed)
    tags = [rng.choice(["O", "B-PER", "I-PER", "B-LOC", "I-LOC"]) for _ in range(40)]
    for scheme in ("iob1", "iob2"):
        out = encode_entities(tags, scheme)
        assert entity_set([out]) == entity_set([tags])
        previous = "O"
        for tag in out:  # IOB2 opens with B- only; IOB1 uses B- only after its own type
            if scheme == "iob2":
                assert not (tag.startswith("I-") and previous[2:] != tag[2:])
            else:
                assert not (tag.startswith("B-") and previous[2:] != tag[2:])
            previous = tag


# --------------------------------------------------------------------------- report (12)

def test_five_sampled_buckets_make_no_fewclue_table(tmp_path):
    runs = tmp_path / "runs"
    for lang in ("hi", "ur", "zh"):
        for index in range(5):
            fake_run(runs, "panx", lang, 1, f"{index:02d}", file=None, sampler="minimum-including",
                     metric="seqeval_f1", test=0.5 + 0.01 * index)
    text = report_text(runs, "md", expected=5)
    assert "### FewCLUE" not in text
    assert "| hi | " in text and "| ur | " in text and "| zh | " in text


def test_the_fewclue_overview_names_each_tasks_metric_and_every_language(tmp_path):
    runs = tmp_path / "runs"
    for task, lang, metric in (("eprstmt", "zh", "accuracy"), ("mytask", "zh", "macro_f1"),
                               ("mytask", "en", "macro_f1")):
        for stem in ("00", "01", "02", "03", "04", "all"):
            fake_run(runs, task, lang, 32, stem, file=None, sampler="fewclue-fixed",
                     metric=metric, test=0.6)
    text = report_text(runs, "md", expected=5)
    assert "### FewCLUE: test score (each column's metric in its header), mean ± std over " \
        "splits 0-4" in text
    assert "| arm | eprstmt (accuracy) | mytask en (macro_f1) | mytask zh (macro_f1) | " \
        "average |" in text
    assert "(n=5)" not in text
    only = tmp_path / "only"
    for stem in ("00", "01", "02", "03", "04"):
        fake_run(only, "eprstmt", "zh", 32, stem, file=None, sampler="fewclue-fixed", test=0.6)
    assert "### FewCLUE: test accuracy, mean ± std over splits 0-4" in report_text(only, "md")
