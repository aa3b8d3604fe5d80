"""Bad inputs that used to be accepted with exit 0 and wrong output, now one-line errors.

NaN/infinite float options and JSON that cannot hold NaN; sample sets that
leave no dev examples for model selection; tagging files without sentence
breaks; CoNLL lines that are neither ``token<TAB>tag`` nor ``token tag``;
ranking sets with no query nDCG can score; the column of invalid JSON.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from fsxlt.cli import run_app
from fsxlt.data import TaggedSentence, read_conll, read_examples
from fsxlt.errors import DataFormatError, FsxltError
from fsxlt.fileio import atomic_write_json, dumps_json, dumps_jsonl, read_json
from fsxlt.methods import get_method
from fsxlt.tasks import get_task
from tests.conftest import write_pair_tsv
from tests.train_fixtures import make_encoder_dir
from tests.xglue_fixtures import write_wpr


def one_line(status: int, err: str, *says: str) -> str:
    """The one stderr line of a refused command (exit 2, no traceback), checked for ``says``."""
    lines = [line for line in err.splitlines() if line.strip()]
    assert status == 2 and len(lines) == 1 and "Traceback" not in err, err
    for part in says:
        assert part in lines[0], err
    return lines[0]


def files_under(root: Path) -> list[str]:
    return sorted(p.relative_to(root).as_posix() for p in root.rglob("*"))


# --------------------------------------------------------------------------- 1. NaN

@pytest.mark.parametrize("value", ["nan", "NaN", "inf", "-inf", "Infinity", float("nan"),
                                   float("inf")])
def test_a_float_method_option_refuses_nan_and_infinities(value):
    with pytest.raises(FsxltError, match=r"^method lora: option alpha must be a finite number"):
        get_method("lora", options={"alpha": value})


def test_an_int_option_given_an_infinity_is_a_one_line_error():
    with pytest.raises(FsxltError, match=r"^method lora: option rank must be an integer"):
        get_method("lora", options={"rank": float("inf")})


@pytest.mark.parametrize("value", ["nan", "inf", "-inf"])
def test_cli_method_opt_nan_is_refused_before_anything_runs(value, tmp_path, capsys):
    status = run_app(["adapt", "--task", "panx", "--lang", "de", "--bucket", str(tmp_path),
                      "--data-dir", str(tmp_path), "--out", str(tmp_path / "runs"),
                      "--method", "lora", "--method-opt", f"alpha={value}"])
    one_line(status, capsys.readouterr().err, "option alpha must be a finite number",
             repr(value))
    assert not (tmp_path / "runs").exists()


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), -math.inf])
def test_json_writers_refuse_nan_and_name_where_it_sits(bad):
    record = {"epochs": [{"epoch": 1, "train_loss": 0.5}, {"epoch": 2, "train_loss": bad}]}
    with pytest.raises(FsxltError, match=r"epochs\[1\]\.train_loss is (nan|inf|-inf)"):
        dumps_json(record)
    with pytest.raises(FsxltError, match=r"score is .*\(row 2\)"):
        dumps_jsonl([{"score": 1.0}, {"score": bad}])


def test_atomic_write_json_names_the_file_and_writes_nothing(tmp_path):
    target = tmp_path / "runs" / "00.json"
    with pytest.raises(FsxltError, match=rf"^{target}: not written: .*dev\.score is nan"):
        atomic_write_json(target, {"dev": {"score": float("nan")}})
    assert not target.exists() and files_under(tmp_path) == []


def test_finite_values_are_written_as_before():
    assert dumps_json({"b": 1.5, "a": [None, 2]}) == '{\n "a": [\n  null,\n  2\n ],\n "b": 1.5\n}\n'
    assert dumps_jsonl([{"x": "é"}]) == '{"x": "é"}\n'


# --------------------------------------------------------------------------- 2. dev-remaining

def test_sample_refuses_a_set_that_uses_the_whole_dev_split(tmp_path, capsys):
    dev = write_pair_tsv(tmp_path / "dev-de.tsv",
                         {"entailment": 2, "neutral": 2, "contradiction": 2})
    before = files_under(tmp_path)
    status = run_app(["sample", "--task", "xnli", "--lang", "de", "-k", "1", "--n-buckets", "2",
                      "--data", str(dev), "--out", str(tmp_path / "buckets")])
    one_line(status, capsys.readouterr().err, "xnli/de K=1", "dev-de.tsv",
             "no dev examples for model selection")
    assert files_under(tmp_path) == before


def test_sample_still_writes_a_set_with_dev_examples_left(tmp_path):
    dev = write_pair_tsv(tmp_path / "dev-de.tsv",
                         {"entailment": 3, "neutral": 2, "contradiction": 2})
    assert run_app(["sample", "--task", "xnli", "--lang", "de", "-k", "1", "--n-buckets", "2",
                    "--data", str(dev), "--out", str(tmp_path / "buckets")]) == 0
    remaining = tmp_path / "buckets" / "xnli" / "de" / "k1" / "dev-remaining.jsonl"
    assert len(remaining.read_text(encoding="utf-8").splitlines()) == 1


def test_sample_refuses_a_ranking_set_whose_remaining_queries_have_one_page(tmp_path, capsys):
    dev = tmp_path / "xglue.wpr.de.dev"
    dev.write_text("".join(f"query {q}\ttitle {q}\tsnippet\t{q % 5}\n" for q in range(3)),
                   encoding="utf-8")
    status = run_app(["sample", "--task", "wpr", "--lang", "de", "-k", "1", "--n-buckets", "1",
                      "--data", str(dev), "--out", str(tmp_path / "buckets")])
    one_line(status, capsys.readouterr().err, "wpr/de K=1", "xglue.wpr.de.dev",
             "has two judged pages")
    assert not (tmp_path / "buckets").exists()


# --------------------------------------------------------------------------- 3. sentence breaks

@pytest.mark.parametrize(("task", "name", "text"), [
    ("xglue-ner", "de.dev", "Angela B-PER\nMerkel I-PER\nin O\nBonn B-LOC\n"),
    ("xglue-pos", "de.dev", "the DET\ncat NOUN\nsaw VERB"),  # no final newline either
    ("panx", "dev-de.tsv", "Ada\tB-PER\nin\tO\nBonn\tB-LOC\n"),
    ("udpos", "dev-de.conllu", "1\tde\tde\tADP\t_\t_\t0\t_\t_\t_\n"
                               "2\tmar\tmar\tNOUN\t_\t_\t0\t_\t_\t_\n"),
])
def test_a_tagging_file_without_a_blank_line_is_an_error_naming_it(task, name, text, tmp_path):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    with pytest.raises(DataFormatError, match=rf"^{path}: no blank line between sentences"):
        read_examples(path, task)


def test_sample_on_a_tagging_file_without_breaks_is_one_line(tmp_path, capsys):
    dev = tmp_path / "de.dev"
    dev.write_text("".join(f"w{i} O\nBerlin B-LOC\nAda B-PER\nUN B-ORG\nX B-MISC\n"
                           for i in range(10)), encoding="utf-8")
    status = run_app(["sample", "--task", "xglue-ner", "--lang", "de", "-k", "1",
                      "--n-buckets", "1", "--data", str(dev), "--out", str(tmp_path / "b")])
    one_line(status, capsys.readouterr().err, f"{dev}: no blank line between sentences")
    assert not (tmp_path / "b").exists()


@pytest.mark.parametrize(("text", "tokens"), [
    ("Angela B-PER\nMerkel I-PER\n\n", ("Angela", "Merkel")),   # one sentence, ended by a blank
    ("Angela\tB-PER\nMerkel\tI-PER\n \n", ("Angela", "Merkel")),  # a whitespace-only blank line
    ("Bonn B-LOC", ("Bonn",)),                                 # one line, no final newline
    ("Bonn B-LOC\n", ("Bonn",)),
])
def test_a_file_of_one_sentence_is_read_when_it_is_unambiguous(text, tokens, tmp_path):
    path = tmp_path / "de.dev"
    path.write_text(text, encoding="utf-8")
    assert [s.tokens for s in read_examples(path, "xglue-ner")] == [tokens]


def test_a_bucket_file_of_one_sentence_needs_no_blank_line(tmp_path):
    """Published bucket files are read with read_conll itself: a bucket may be one sentence."""
    path = tmp_path / "train.tsv"
    path.write_text("Ada\tB-PER\nin\tO\nBonn\tB-LOC", encoding="utf-8")
    assert read_conll(path, get_task("panx")) == [
        TaggedSentence("train.tsv:1", ("Ada", "in", "Bonn"), ("B-PER", "O", "B-LOC"))]


# --------------------------------------------------------------------------- 4. separators

def test_xglue_space_separated_lines_are_read(tmp_path):
    path = tmp_path / "de.dev"
    path.write_text("Angela B-PER\nMerkel  I-PER\n\nBonn B-LOC\n", encoding="utf-8")
    assert [(s.tokens, s.tags) for s in read_examples(path, "xglue-ner")] == [
        (("Angela", "Merkel"), ("B-PER", "I-PER")), (("Bonn",), ("B-LOC",))]


@pytest.mark.parametrize(("line", "found"), [
    ("New York B-LOC", "found a space-separated line of 3 fields"),
    ("Bonn", "found a token without a tag"),
    ("Bonn\tB-LOC\textra", "found 3 tab-separated fields"),
    ("\tB-LOC", "found an empty token"),
])
def test_a_bad_conll_line_says_what_it_found_and_what_is_expected(line, found, tmp_path):
    path = tmp_path / "de.dev"
    path.write_text(f"Ada B-PER\n\n{line}\n\n", encoding="utf-8")
    with pytest.raises(DataFormatError) as caught:
        read_examples(path, "xglue-ner")
    assert str(caught.value) == (f"{path}:3: expected 'token<TAB>tag' (or XGLUE's 'token tag'), "
                                 f"{found}")


# --------------------------------------------------------------------------- 5. nDCG

def test_ndcg_of_a_set_without_a_two_page_query_is_an_error_not_zero():
    from fsxlt.metrics.scores import compute_scores

    with pytest.raises(FsxltError, match=r"^the dev set: no query has two judged pages"):
        compute_scores(get_task("wpr"), ["1", "3"], ["1", "1"], relevance=[1.0, 2.0],
                       groups=["q1", "q2"], what="the dev set")


def test_evaluate_on_single_page_queries_names_the_set(tmp_path, capsys):
    encoder = make_encoder_dir(tmp_path / "enc")
    dev = tmp_path / "xglue.wpr.de.dev"
    dev.write_text("".join(f"query {q}\tgood title\tsnippet\t{q % 5}\n" for q in range(4)),
                   encoding="utf-8")
    capsys.readouterr()  # the fixture's progress output
    status = run_app(["evaluate", str(encoder), "--task", "wpr", "--lang", "de", "--split",
                      "dev", "--file", str(dev), "--device", "cpu",
                      "--out", str(tmp_path / "scores.json")])
    one_line(status, capsys.readouterr().err, "the 4 examples of xglue.wpr.de.dev",
             "no query has two judged pages")
    assert not (tmp_path / "scores.json").exists()


def test_adapt_with_a_dev_set_of_single_page_queries_is_refused(tmp_path, capsys):
    data = tmp_path / "data"
    write_wpr(data, "de", "dev", 6)
    assert run_app(["sample", "--task", "wpr", "--lang", "de", "-k", "1", "--n-buckets", "1",
                    "--data-dir", str(data), "--out", str(tmp_path / "buckets")]) == 0
    single = tmp_path / "single" / "xglue.wpr.de.dev"
    single.parent.mkdir()
    single.write_text("".join(f"query {q}\ttitle\tsnippet\t{q % 5}\n" for q in range(3)),
                      encoding="utf-8")
    encoder = make_encoder_dir(tmp_path / "enc")
    capsys.readouterr()
    status = run_app(["adapt", "--task", "wpr", "--lang", "de", "--bucket",
                      str(tmp_path / "buckets" / "wpr" / "de" / "k1" / "00.json"),
                      "--from", str(encoder), "--dev", str(single),
                      "--no-test", "--out", str(tmp_path / "runs"), "--max-epochs", "2",
                      "--lr", "1e-3", "--device", "cpu"])
    one_line(status, capsys.readouterr().err, "xglue.wpr.de.dev",
             "no query has two judged pages")
    records = [json.loads(p.read_text()) for p in (tmp_path / "runs").rglob("*.json")]
    assert not [r for r in records if "selected_lr" in r]  # no run was scored and selected


# --------------------------------------------------------------------------- 6. JSON column

def test_invalid_json_names_line_and_column(tmp_path):
    path = tmp_path / "manifest.json"
    path.write_text('{\n  "k": 1,\n  "n": oops\n}\n', encoding="utf-8")
    with pytest.raises(DataFormatError) as caught:
        read_json(path)
    assert str(caught.value) == f"{path}:3: invalid JSON at column 8: Expecting value"
    assert caught.value.line == 3


def test_invalid_json_reaches_the_user_with_its_column(tmp_path, capsys):
    directory = tmp_path / "set"
    directory.mkdir()
    (directory / "manifest.json").write_text('{"format": x}', encoding="utf-8")
    status = run_app(["buckets", "check", str(directory)])
    err = capsys.readouterr().err
    assert status != 0 and "manifest.json:1: invalid JSON at column 12" in err, err
