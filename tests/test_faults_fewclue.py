"""FewCLUE input that ``fsxlt buckets import-fewclue`` must refuse rather than silently change.

Labels outside a task's set, fields of the wrong JSON type, CLUEWSC spans
that overlap or are empty, a task folder that is a file, an import where
every task failed, and ``--out`` inside the input tree. Each refusal is one
line on stderr naming the file and line where there is one, a non-zero exit,
and nothing written. Fixtures: tests/fewclue_fixtures.py.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from fsxlt.cli import run_app
from fsxlt.data import Skipped, read_examples
from fsxlt.errors import DataFormatError
from fsxlt.sampling.store import read_manifest
from tests.fewclue_fixtures import TRAIN_SIZE, write_task


def edit_line(path: Path, line_no: int, change: Callable[[dict[str, Any]], None]) -> None:
    """Apply ``change`` to the JSON object on line ``line_no`` (1-based) of ``path``."""
    lines = path.read_text(encoding="utf-8").splitlines()
    row = json.loads(lines[line_no - 1])
    change(row)
    lines[line_no - 1] = json.dumps(row, ensure_ascii=False)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def write_rows(path: Path, *rows: dict[str, Any]) -> Path:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows),
                    encoding="utf-8")
    return path


def snapshot(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): (b"" if p.is_dir() else p.read_bytes())
            for p in sorted(root.rglob("*"))}


def import_fewclue(src: Path, out: Path, *tasks: str) -> int:
    args = [arg for task in tasks for arg in ("-t", task)]
    return run_app(["buckets", "import-fewclue", str(src), "--out", str(out), *args])


def one_error_line(capsys) -> str:
    """The single stderr line of a refused command (asserted to be exactly one)."""
    err = capsys.readouterr().err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert "Traceback" not in err
    return lines[0]


# --------------------------------------------------------------------------- 1: labels

@pytest.mark.parametrize(("file", "line_no", "label"), [
    ("train_0.json", 3, "Postive"),          # a typo
    ("train_0.json", 2, "positive"),         # wrong case
    ("dev_2.json", 5, "-"),                  # the no-label marker is not allowed in a split
    ("train_few_all.json", 7, None),         # nor a null label
    ("test_public.json", 4, "Neutral"),      # a test file's real label must be the task's too
])
def test_a_label_outside_the_task_is_an_error_with_file_and_line(tmp_path, capsys, file,
                                                                 line_no, label):
    src = tmp_path / "datasets"
    folder = write_task(src, "eprstmt")
    edit_line(folder / file, line_no, lambda row: row.update(label=label))
    out = tmp_path / "buckets"
    assert import_fewclue(src, out, "eprstmt") != 0
    line = one_error_line(capsys)
    assert f"{file}:{line_no}: label {label or None!r} is not a label of task eprstmt" in line
    assert not out.exists()


def test_a_missing_label_in_a_split_is_an_error(tmp_path, capsys):
    src = tmp_path / "datasets"
    folder = write_task(src, "ocnli")
    edit_line(folder / "train_3.json", 6, lambda row: row.pop("label"))
    assert import_fewclue(src, tmp_path / "buckets", "ocnli") != 0
    assert "train_3.json:6: label None is not a label of task ocnli" in one_error_line(capsys)


def test_a_wrong_label_in_one_task_leaves_the_others_imported(tmp_path, capsys):
    src = tmp_path / "datasets"
    write_task(src, "bustm")
    folder = write_task(src, "eprstmt")
    edit_line(folder / "train_0.json", 3, lambda row: row.update(label="Postive"))
    out = tmp_path / "buckets"
    assert import_fewclue(src, out, "eprstmt", "bustm") == 1
    err = capsys.readouterr().err
    assert "skipped eprstmt: " in err and "train_0.json:3: label 'Postive'" in err
    assert sorted(p.name for p in out.iterdir() if not p.name.startswith(".")) == ["bustm"]


def test_unlabelled_test_rows_are_left_out_and_counted(tmp_path, capsys):
    """FewCLUE's unlabelled rows have no label key (test.json); OCNLI's own marker is ``-``."""
    src = tmp_path / "datasets"
    folder = write_task(src, "ocnli")
    edit_line(folder / "test_public.json", 2, lambda row: row.pop("label"))
    edit_line(folder / "test_public.json", 5, lambda row: row.update(label="-"))
    edit_line(folder / "test_public.json", 9, lambda row: row.update(label=None))
    out = tmp_path / "buckets"
    assert import_fewclue(src, out, "ocnli") == 0
    err = capsys.readouterr().err
    assert "ocnli/test_public.json: left out 3 unlabelled examples" in err
    assert "lines 2 (no label), 5 (-), 9 (no label)" in err
    assert read_manifest(out / "ocnli" / "zh" / f"k{TRAIN_SIZE}")["test"]["n"] == 21 - 3


def test_reader_skips_only_the_no_label_markers(tmp_path):
    path = write_rows(tmp_path / "ocnli.json",
                      {"sentence1": "天", "sentence2": "地", "label": "neutral"},
                      {"sentence1": "山", "sentence2": "水", "label": "Neutral"})
    with pytest.raises(DataFormatError, match=r"ocnli.json:2: label 'Neutral' is not a label"):
        read_examples(path, "ocnli", skipped=Skipped())


# --------------------------------------------------------------------------- 2: field types

CHID = {"id": 0, "candidates": list("山水火木金土日"), "content": "天#idiom#地", "answer": 1}
EPRSTMT = {"id": 0, "sentence": "天地人", "label": "Positive"}
CSL = {"id": 0, "abst": "天地人山水", "keyword": ["天地", "山水"], "label": "1"}
WSC = {"target": {"span1_index": 0, "span1_text": "猫", "span2_index": 3, "span2_text": "它"},
       "idx": 0, "label": "true", "text": "猫在看它了"}


@pytest.mark.parametrize(("task", "row", "message"), [
    ("chid", {**CHID, "candidates": [None] * 7},
     "candidates must be 7 strings (candidate 1 is null)"),
    ("chid", {**CHID, "candidates": ["山", "水", 3, "木", "金", "土", "日"]},
     "candidates must be 7 strings (candidate 3 is a number)"),
    ("chid", {**CHID, "content": {"text": "天#idiom#地"}},
     "field 'content' must be a string, found an object"),
    ("eprstmt", {**EPRSTMT, "sentence": {"text": "天地"}},
     "field 'sentence' must be a string, found an object"),
    ("eprstmt", {**EPRSTMT, "sentence": 12345},
     "field 'sentence' must be a string, found a number"),
    ("eprstmt", {**EPRSTMT, "sentence": ["天", "地"]},
     "field 'sentence' must be a string, found a list"),
    ("csl", {**CSL, "keyword": ["天地", 7]},
     "field 'keyword' must be a string or a list of strings (item 2 is a number)"),
    ("cluewsc", {**WSC, "text": 42}, "field 'text' must be a string, found a number"),
    ("cluewsc", {**WSC, "target": {**WSC["target"], "span1_text": 5}},
     "span1_text must be a string, found a number"),
])
def test_a_field_of_the_wrong_type_is_an_error(tmp_path, task, row, message):
    good = {"chid": CHID, "eprstmt": EPRSTMT, "csl": CSL, "cluewsc": WSC}[task]
    path = write_rows(tmp_path / f"{task}.json", good, row)
    with pytest.raises(DataFormatError) as caught:
        read_examples(path, task)
    assert str(caught.value) == f"{path}:2: {message}"


def test_import_refuses_null_chid_candidates(tmp_path, capsys):
    src = tmp_path / "datasets"
    folder = write_task(src, "chid")
    edit_line(folder / "dev_1.json", 4, lambda row: row.update(candidates=[None] * 7))
    assert import_fewclue(src, tmp_path / "buckets", "chid") != 0
    assert "dev_1.json:4: candidates must be 7 strings (candidate 1 is null)" in \
        one_error_line(capsys)


def test_csl_keyword_list_is_still_joined(tmp_path):
    path = write_rows(tmp_path / "csl.json", CSL)
    assert read_examples(path, "csl")[0].text_b == "天地、山水"
    assert read_examples(path, "csl")[0].text_b_items is None  # the join loses nothing


def test_a_csl_keyword_holding_the_joiner_keeps_its_bounds(tmp_path):
    """FewCLUE's GPT baseline joins the keyword list as given with "," (CLUEbenchmark/
    FewCLUE baselines/models_keras/gpt/data_util.py lines 206-207); a keyword with a "、"
    (test_public lines 885, 1464, 1681, 2671) stays one keyword in fsxlt's prompt too."""
    from fsxlt.data import example_from_dict
    from fsxlt.icl.presets import FEWCLUE_TASKS

    row = {**CSL, "keyword": ["天地、人", "山水"]}
    example = read_examples(write_rows(tmp_path / "csl.json", row), "csl")[0]
    assert example.text_b == "天地、人、山水" and example.text_b_items == ("天地、人", "山水")
    again = example_from_dict(example.to_dict())
    assert again == example and again.items_b() == ["天地、人", "山水"]
    query = FEWCLUE_TASKS["csl"][0](again)
    assert query == f"{CSL['abst']}与下面的关键词：{','.join(row['keyword'])}，"


# --------------------------------------------------------------------------- 3, 4: CLUEWSC spans

def wsc_with(**target: Any) -> dict[str, Any]:
    return {**WSC, "text": "他走到门口看它", "target": {**WSC["target"], **target}}


@pytest.mark.parametrize(("target", "message"), [
    ({"span1_index": 0, "span1_text": "他走到", "span2_index": 0, "span2_text": "他"},
     "span1 (0-3 '他走到') and span2 (0-1 '他') overlap"),
    ({"span1_index": 1, "span1_text": "走到门", "span2_index": 3, "span2_text": "门口"},
     "span1 (1-4 '走到门') and span2 (3-5 '门口') overlap"),
    ({"span1_index": 0, "span1_text": "他", "span2_index": 7, "span2_text": ""},
     "span2_text is empty"),
    ({"span1_index": "3", "span1_text": "门", "span2_index": 6, "span2_text": "它"},
     "span1_index must be an integer, found '3'"),
    ({"span1_index": 0, "span1_text": "他", "span2_index": 6.0, "span2_text": "它"},
     "span2_index must be an integer, found 6.0"),
    ({"span1_index": 0, "span1_text": "他", "span2_index": -1, "span2_text": "它"},
     "span2_index must not be negative, found -1"),
])
def test_bad_cluewsc_spans_are_refused_with_file_and_line(tmp_path, target, message):
    path = write_rows(tmp_path / "wsc.json", WSC, wsc_with(**target))
    with pytest.raises(DataFormatError) as caught:
        read_examples(path, "cluewsc")
    assert str(caught.value) == f"{path}:2: {message}"


def test_adjacent_cluewsc_spans_are_fine(tmp_path):
    row = wsc_with(span1_index=0, span1_text="他", span2_index=1, span2_text="走到")
    [example] = read_examples(write_rows(tmp_path / "wsc.json", row), "cluewsc")
    assert example.text_a == "[他]<走到>门口看它"


# --------------------------------------------------------------------------- 5, 6: task folders

def test_a_task_folder_that_is_a_file_says_so(tmp_path, capsys):
    src = tmp_path / "datasets"
    write_task(src, "bustm")
    src.joinpath("eprstmt").write_text("not a folder\n", encoding="utf-8")
    out = tmp_path / "buckets"
    assert import_fewclue(src, out, "eprstmt", "bustm") == 1
    err = capsys.readouterr().err
    assert f"skipped eprstmt: {src / 'eprstmt'} is a file, not a folder" in err
    assert "not found" not in err


def test_when_every_task_fails_nothing_is_written_and_the_exit_is_non_zero(tmp_path, capsys):
    src = tmp_path / "datasets"
    folder = write_task(src, "eprstmt")
    edit_line(folder / "dev_0.json", 2, lambda row: row.update(label="Postive"))
    src.joinpath("ocnli").write_text("", encoding="utf-8")
    out = tmp_path / "buckets"
    assert import_fewclue(src, out, "eprstmt", "ocnli", "tnews") != 0
    captured = capsys.readouterr()
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1 and "wrote" not in captured.out
    assert f"nothing written to {out}: every task failed (3 of 3): " in lines[0]
    assert "eprstmt: " in lines[0] and "dev_0.json:2: label 'Postive'" in lines[0]
    assert f"ocnli: {src / 'ocnli'} is a file, not a folder" in lines[0]
    assert f"tnews: {src / 'tnews'} not found" in lines[0]
    assert not out.exists()


# --------------------------------------------------------------------------- 7: --out inside SRC

@pytest.mark.parametrize("where", [".", "buckets", "eprstmt/zh"])
def test_out_inside_the_input_tree_is_refused_before_writing(tmp_path, capsys, where):
    src = tmp_path / "datasets"
    write_task(src, "eprstmt")
    before = snapshot(src)
    out = src / where
    assert import_fewclue(src, out, "eprstmt") != 0
    line = one_error_line(capsys)
    assert "--out" in line and "inside the FewCLUE input" in line and str(src) in line
    assert snapshot(src) == before
