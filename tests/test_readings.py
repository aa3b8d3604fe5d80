"""Readings (fsxlt.data.readings): each named way of reading a benchmark file gives what
its reference gives, over generated files; a set is read one way (its buckets, remaining
dev set and its runs' test files); a published set in two forms is refused and each cure
works; what 0.10 wrote reads as before; the hub's QA rows are relocated as local files."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fsxlt.cli import run_app
from fsxlt.data import examples_from_hub_rows, read_examples
from fsxlt.data.hub import load_hub_split
from fsxlt.data.readings import DEFAULT_READING, make_reading, parse_reading, study_reading
from fsxlt.errors import DataFormatError, FsxltError
from fsxlt.sampling.check import check_set
from fsxlt.sampling.set_files import set_files
from fsxlt.sampling.store import read_set
from fsxlt.tasks import get_task

CSV_READING = make_reading({"quoting": "csv"})
TOKENIZED = make_reading({"text": "tokenized"})

# PAWS-X-like sentences: letters, Hangul, spaces and quotes (no tab or line break)
_TEXT = st.text(alphabet=st.sampled_from(list('ab "Z한국,.')), min_size=1, max_size=14)
_ROWS = st.lists(st.tuples(_TEXT, _TEXT, st.sampled_from(["0", "1"])), min_size=1,
                 max_size=8)


def _xtreme_file(rows, path: Path) -> None:
    """PAWS-X as XTREME's preprocessing writes it: a CSV writer with tabs, CRLF line ends."""
    buffer = io.StringIO()
    csv.writer(buffer, delimiter="\t", lineterminator="\r\n").writerows(rows)
    path.write_text(buffer.getvalue(), encoding="utf-8", newline="")


def _own_file(rows, path: Path) -> None:
    """PAWS-X's own layout: a header, an id column, every field as it is (no quoting)."""
    lines = ["id\tsentence1\tsentence2\tlabel"] + [f"{i}\t{a}\t{b}\t{label}"
                                                  for i, (a, b, label) in enumerate(rows, 1)]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


@settings(max_examples=60, deadline=None)
@given(rows=_ROWS)
def test_csv_quoting_read_as_the_references_read_it(tmp_path_factory, rows):
    folder = tmp_path_factory.mktemp("pawsx")
    xtreme, own = folder / "dev-ko.tsv", folder / "dev_2k.tsv"
    _xtreme_file(rows, xtreme)
    rows_with_bare_quote = [*rows, ('Ein "Wort" hier', "plain", "1")]  # as PAWS-X has them
    _own_file(rows_with_bare_quote, own)
    # XTREME's reader takes every field literally: fsxlt's default reading
    with open(xtreme, encoding="utf-8", newline="") as handle:
        literal = [line.rstrip("\r\n").split("\t") for line in handle]
    as_written = read_examples(xtreme, "pawsx")
    assert [[ex.text_a, ex.text_b] for ex in as_written] == [r[:2] for r in literal]
    # a CSV reader undoes the quoting: reading quoting=csv gives the values, PAWS-X's text
    with open(xtreme, encoding="utf-8", newline="") as handle:
        values = list(csv.reader(handle, delimiter="\t"))
    unquoted = read_examples(xtreme, "pawsx", reading=CSV_READING)
    assert [[ex.text_a, ex.text_b] for ex in unquoted] == [r[:2] for r in values]
    assert [(ex.text_a, ex.text_b, ex.label) for ex in unquoted] == [tuple(r) for r in rows]
    # PAWS-X's own files, read as the hub's loader reads them (QUOTE_NONE): both readings
    with open(own, encoding="utf-8", newline="") as handle:
        reference = list(csv.reader(handle, delimiter="\t", quoting=csv.QUOTE_NONE))[1:]
    for reading in (DEFAULT_READING, CSV_READING):
        read = read_examples(own, "pawsx", reading=reading)
        assert [[ex.text_a, ex.text_b] for ex in read] == [r[1:3] for r in reference]


XNLI_HEADER = ("language\tgold_label\tsentence1_binary_parse\tsentence2_binary_parse\t"
               "sentence1_parse\tsentence2_parse\tsentence1\tsentence2\tpromptID\tpairID\t"
               "genre\tlabel1\tlabel2\tlabel3\tlabel4\tlabel5\tsentence1_tokenized\t"
               "sentence2_tokenized\tmatch")


def _xnli_row(lang: str, label: str, raw: tuple[str, str], tokenized: tuple[str, str],
              pair: int) -> str:
    return "\t".join([lang, label, "(", "(", "(", "(", raw[0], raw[1], str(pair), str(pair),
                      "fiction", label, label, label, label, label, tokenized[0],
                      tokenized[1], "True"])


def _tokenize(text: str) -> str:
    """XNLI 1.0's tokenized column, roughly: punctuation cut off, Hindi split at the virama."""
    return " ".join(text.replace(",", " ,").replace("।", " ।").replace("्", " ् ").split())


HINDI = [("और उसने कहा, माँ, मैं घर आया हूं।", "उसने एक शब्द नहीं कहा।"),
         ("कार्यक्रम युवा लोगों को पढ़ने के लिए है।", "प्रोत्साहित करते हैं।"),
         ("वह स्कूल गया।", "वह घर पर रहा।"),
         ("मैं क्या करूं?", "कुछ नहीं।"),
         ("बस आई।", "बस नहीं आई।"),
         ("वह पढ़ता है।", "वह पढ़ता नहीं है।")]
LABELS = ["entailment", "neutral", "contradiction"]


def write_xnli10(folder: Path, split: str, rows=HINDI, offset: int = 0) -> Path:
    """XNLI 1.0's xnli.<split>.tsv: every language in one file, German rows between."""
    lines = [XNLI_HEADER, _xnli_row("de", "neutral", ("Ein Satz.", "Noch einer."),
                                    ("Ein Satz .", "Noch einer ."), 0)]
    for i, (a, b) in enumerate(rows):
        lines.append(_xnli_row("hi", LABELS[(i + offset) % 3], (a, b),
                               (_tokenize(a), _tokenize(b)), i + 1))
    path = folder / f"xnli.{split}.tsv"
    folder.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_tokenized_columns_are_read_by_name_and_refused_where_absent(tmp_path):
    path = write_xnli10(tmp_path, "dev")
    raw = read_examples(path, "xnli", language="hi")
    tokenized = read_examples(path, "xnli", language="hi", reading=TOKENIZED)
    assert [(ex.text_a, ex.text_b) for ex in raw] == HINDI
    assert [(ex.text_a, ex.text_b) for ex in tokenized] == \
        [(_tokenize(a), _tokenize(b)) for a, b in HINDI]
    assert [ex.id for ex in raw] == [ex.id for ex in tokenized]  # the same lines
    xtreme = tmp_path / "dev-hi.tsv"
    xtreme.write_text("a\tb\tneutral\n", encoding="utf-8")
    with pytest.raises(DataFormatError, match="text=tokenized reads the word-tokenized "
                       "columns of a header .* this file has no header"):
        read_examples(xtreme, "xnli", reading=TOKENIZED)
    header_only = tmp_path / "multinli.train.en.tsv"
    header_only.write_text("premise\thypo\tlabel\na\tb\tneutral\n", encoding="utf-8")
    with pytest.raises(DataFormatError, match="needs the column premise_tokenized and "
                       "hypo_tokenized"):
        read_examples(header_only, "xnli", reading=TOKENIZED)
    with pytest.raises(FsxltError, match="the hub's copy lacks"):  # before any download
        load_hub_split(get_task("xnli"), "hi", "dev", TOKENIZED)


def test_readings_parse_by_name_and_refuse_what_does_not_apply():
    xnli, pawsx, panx = get_task("xnli"), get_task("pawsx"), get_task("panx")
    assert parse_reading(["study"], xnli).to_dict() == {"remaining": "by-line",
                                                        "text": "tokenized"}
    assert parse_reading(["study"], pawsx).to_dict() == {"quoting": "csv",
                                                         "remaining": "by-line"}
    assert study_reading(panx).to_dict() == {"eval_long": "truncate"}
    assert study_reading(get_task("marc")).is_default and parse_reading(None, panx).is_default
    assert parse_reading(["study", "text=raw"], xnli).to_dict() == {"remaining": "by-line"}
    assert parse_reading(["quoting=as-written"], pawsx).describe() == "default"
    for values, message in ((["text=tokenized"], "panx has no text to choose"),
                            (["casing=upper"], "expected study, default or AXIS=CHOICE"),
                            (["quoting=smart"], "quoting is one of as-written, csv")):
        with pytest.raises(FsxltError, match=message):
            parse_reading(values, panx if "tokenized" in values[0] else pawsx)


def test_a_reading_that_does_not_apply_is_refused_before_any_data(tmp_path, capsys):
    assert run_app(["sample", "--task", "panx", "--lang", "de", "--data-dir",
                    str(tmp_path / "nowhere"), "--out", str(tmp_path / "b"),
                    "--reading", "quoting=csv"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "panx has no quoting to choose" in err
    assert not (tmp_path / "b").exists()


def test_a_set_is_read_one_way_its_buckets_remaining_dev_and_runs_test(tmp_path, capsys):
    from fsxlt.execution import expand, parse_config

    data = tmp_path / "xnli10"
    dev = write_xnli10(data, "dev")
    write_xnli10(data, "test", rows=list(reversed(HINDI)), offset=1)
    store = tmp_path / "buckets"
    assert run_app(["sample", "--task", "xnli", "--lang", "hi", "-k", "1", "--n-buckets",
                    "1", "--data-dir", str(data), "--out", str(store),
                    "--reading", "study"]) == 0
    manifest, buckets, remaining = read_set(store / "xnli" / "hi" / "k1")
    assert manifest["reading"] == {"remaining": "by-line", "text": "tokenized"}
    tokenized = {_tokenize(a) for a, _b in HINDI}
    assert {ex.text_a for ex in buckets[0].examples} <= tokenized
    assert {ex.text_a for ex in remaining} <= tokenized
    assert check_set(store / "xnli" / "hi" / "k1", dev).ok  # the source, read its way
    assert set_files(store / "xnli" / "hi" / "k1").reading == parse_reading("study",
                                                                            get_task("xnli"))
    start = tmp_path / "ckpt"
    start.mkdir()
    (start / "config.json").write_text("{}")
    (start / "tokenizer_config.json").write_text("{}")  # a model folder's
    config = {"name": "read", "out": str(tmp_path / "runs"), "buckets": str(store),
              "data_dir": str(data), "start": str(start), "n_buckets": 1,
              "tasks": {"xnli": {"languages": ["hi"], "k": [1]}}}
    run, = expand(parse_config(config)).runs
    assert run.identity["reading"] == {"remaining": "by-line", "text": "tokenized"}
    assert {ex.text_a for ex in run.read_eval("test")} == tokenized  # the test file, too
    # the same buckets read the default way: another set, and other runs
    other = tmp_path / "raw"
    assert run_app(["sample", "--task", "xnli", "--lang", "hi", "-k", "1", "--n-buckets",
                    "1", "--data-dir", str(data), "--out", str(other)]) == 0
    assert "reading" not in read_set(other / "xnli" / "hi" / "k1")[0]
    raw_run, = expand(parse_config({**config, "buckets": str(other)})).runs
    assert "reading" not in raw_run.identity and raw_run.config_hash != run.config_hash
    # a sweep that names the study's reading takes the first set and refuses the other
    assert expand(parse_config({**config, "reading": "study"})).runs == [run]
    with pytest.raises(FsxltError, match="its set was read by reading default, the sweep asks "
                       "for remaining=by-line, text=tokenized; import or sample it into another "
                       "store with --reading remaining=by-line --reading text=tokenized"):
        expand(parse_config({**config, "buckets": str(other), "reading": "study"}))
    capsys.readouterr()
    assert run_app(["sample", "--task", "xnli", "--lang", "hi", "-k", "1", "--n-buckets",
                    "1", "--data-dir", str(data), "--out", str(store)]) == 2  # no silent swap
    assert "holds another bucket set" in capsys.readouterr().err


def _study_set(tmp_path: Path) -> Path:
    """A store holding one XNLI hi K=1 set sampled the study's way from XNLI 1.0's file."""
    data = tmp_path / "xnli10"
    write_xnli10(data, "dev")
    store = tmp_path / "buckets"
    assert run_app(["sample", "--task", "xnli", "--lang", "hi", "-k", "1", "--n-buckets", "1",
                    "--data-dir", str(data), "--out", str(store), "--reading", "study"]) == 0
    return store


def test_a_manifest_naming_an_unknown_reading_is_one_line(tmp_path):
    store = _study_set(tmp_path)
    path = store / "xnli" / "hi" / "k1" / "manifest.json"
    manifest = json.loads(path.read_text())
    manifest["reading"] = {"text": "lemmatized"}
    path.write_text(json.dumps(manifest))
    with pytest.raises(FsxltError, match="reading: text is 'lemmatized', not one of raw, "
                       "tokenized"):
        read_set(path.parent)


# ------------------------------------------------------------------ the published import

RELEASE_HINDI = [(_tokenize(a), _tokenize(b)) for a, b in HINDI]


def _release(root: Path) -> Path:
    """One XNLI hi K=1 bucket in the release's (tokenized) form, its ids the release's (the
    first three Hindi rows: Hindi is XNLI 1.0's eighth language of 2,490 dev rows each)."""
    folder = root / "xnli" / "1-shots" / "hindi" / "0-th"
    folder.mkdir(parents=True)
    sampled = {label: [{"uid": f"hindi-{2490 * 7 + i}-val", "text_a": RELEASE_HINDI[i][0],
                        "text_b": RELEASE_HINDI[i][1], "label": label}]
               for i, label in enumerate(LABELS)}
    (folder / "sampled.json").write_text(json.dumps(sampled, ensure_ascii=False))
    return root


def _xtreme_dev(folder: Path) -> Path:
    """XTREME's dev-hi.tsv: the raw sentences, three columns."""
    folder.mkdir(parents=True, exist_ok=True)
    lines = [f"{a}\t{b}\t{LABELS[i % 3]}" for i, (a, b) in enumerate(HINDI)]
    (folder / "dev-hi.tsv").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return folder


def test_a_set_in_two_forms_is_refused_and_each_cure_works(tmp_path, capsys):
    src = _release(tmp_path / "release")
    _xtreme_dev(tmp_path / "data" / "xnli")
    base = ["buckets", "import-published", str(src), "--task", "xnli", "--data-dir",
            str(tmp_path / "data" / "{task}")]
    assert run_app([*base, "--out", str(tmp_path / "refused")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert ("xnli/hi/k1: the release's text and dev-hi.tsv's (reading default) differ on 3 "
            "of 3 bucket examples under mBERT's pre-tokenizer") in err
    assert "--reading study" in err and "--bucket-text dev-file" in err
    assert not (tmp_path / "refused").exists()
    # cure 1: the buckets in the dev file's text, one form throughout
    assert run_app([*base, "--out", str(tmp_path / "dev-form"), "--bucket-text",
                    "dev-file"]) == 0
    manifest, buckets, remaining = read_set(tmp_path / "dev-form" / "xnli" / "hi" / "k1")
    assert {(ex.text_a, ex.text_b) for ex in buckets[0].examples} == set(HINDI[:3])
    assert [ex.id for ex in buckets[0].examples] == ["hindi-17430-val", "hindi-17431-val",
                                                      "hindi-17432-val"]
    assert manifest["dev_remaining"]["forms"]["bucket_text"] == "dev-file"
    assert manifest["dev_remaining"]["forms"]["differ"] == 3
    assert check_set(tmp_path / "dev-form" / "xnli" / "hi" / "k1").ok
    # cure 2: XNLI 1.0's own file read in the release's (tokenized) form
    write_xnli10(tmp_path / "xnli10" / "xnli", "dev")
    assert run_app(["buckets", "import-published", str(src), "--task", "xnli", "--data-dir",
                    str(tmp_path / "xnli10" / "{task}"), "--out", str(tmp_path / "study"),
                    "--reading", "study"]) == 0
    manifest, buckets, remaining = read_set(tmp_path / "study" / "xnli" / "hi" / "k1")
    assert manifest["reading"] == {"remaining": "by-line", "text": "tokenized"}
    assert "forms" not in manifest["dev_remaining"]
    assert [ex.text_a for ex in remaining] == [a for a, _b in RELEASE_HINDI[3:]]
    # cure 3: both forms kept, said so in the manifest
    assert run_app([*base, "--out", str(tmp_path / "mixed"), "--bucket-text", "release"]) == 0
    manifest = read_set(tmp_path / "mixed" / "xnli" / "hi" / "k1")[0]
    assert manifest["dev_remaining"]["forms"] == {
        "compared": 3, "differ": 3, "bucket_text": "release",
        "tokenizer": "mBERT's normaliser and pre-tokenizer (cased)"}


def test_spacing_the_pre_tokenizer_undoes_is_no_difference(tmp_path):
    from fsxlt.sampling.forms import mbert_words

    assert mbert_words("Die Frau erklärt , die Regel gilt .") == \
        mbert_words("Die Frau erklärt, die Regel gilt.")
    assert mbert_words("表 A- 总共") == mbert_words("表A-总共")
    assert mbert_words("कार ् यक") != mbert_words("कार्यक")
    assert mbert_words('"""Ras"" Abbi"') != mbert_words('"Ras" Abbi')


# ------------------------------------------------------------------------ the hub's QA rows

@settings(max_examples=60, deadline=None)
@given(lead=st.text(alphabet=" \n\t", min_size=0, max_size=4),
       before=st.text(alphabet="abc ", max_size=20),
       answer=st.text(alphabet="xyz", min_size=1, max_size=5),
       after=st.text(alphabet="abcx ", max_size=20))
def test_hub_qa_rows_are_relocated_as_local_files_are(tmp_path_factory, lead, before, answer,
                                                      after):
    """The hub's XQuAD loader strips a context and keeps the answer's offset into the
    unstripped one: the row gets the start a local file with that context and offset gets."""
    context, given_start = (lead + before + answer + after).strip(), len(lead + before)
    row = {"id": "q1", "title": "t", "context": context, "question": "what?",
           "answers": {"text": [answer], "answer_start": [given_start]}}
    hub, = examples_from_hub_rows(get_task("xquad"), [row], "hf:xquad/xquad.de/validation",
                                  "de")
    path = tmp_path_factory.mktemp("xquad") / "xquad.de.json"
    path.write_text(json.dumps({"data": [{"title": "t", "paragraphs": [{
        "context": context, "qas": [{"id": "q1", "question": "what?", "answers": [
            {"text": answer, "answer_start": given_start}]}]}]}]}), encoding="utf-8")
    local, = read_examples(path, "xquad", language="de")
    assert hub.starts == local.starts
    assert hub.context[hub.starts[0]:hub.starts[0] + len(answer)] == answer


def test_a_hub_qa_answer_not_in_its_context_is_refused():
    row = {"id": "q9", "title": "t", "context": "nothing here", "question": "what?",
           "answers": {"text": ["elsewhere"], "answer_start": [3]}}
    with pytest.raises(FsxltError, match="question q9: answer 'elsewhere' does not occur in "
                       "its context"):
        examples_from_hub_rows(get_task("xquad"), [row], "hf:xquad/xquad.de/validation", "de")


# ------------------------------------------------------------------- the remaining dev set

def _pawsx_dev(folder: Path, rows) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "dev-de.tsv"
    path.write_text("".join(f"{a}\t{b}\t{label}\n" for a, b, label in rows), encoding="utf-8")
    return path


PAWSX_ROWS = [("NS", "NS", "1"), ("A eins.", "A zwei.", "0"), ("B eins.", "B zwei.", "1"),
              ("NS", "NS", "1"), ("C eins.", "C zwei.", "0"), ("D eins.", "D zwei.", "1"),
              ("NS", "NS", "0"), ("E eins.", "E zwei.", "0")]


def _pawsx_release(root: Path, lines: dict[str, int]) -> Path:
    """One PAWS-X de K=1 bucket whose release ids name the dev lines ``lines`` (from 1)."""
    folder = root / "pawsx" / "1-shots" / "german" / "0-th"
    folder.mkdir(parents=True)
    sampled = {label: [{"uid": f"german-{line}-val", "text_a": PAWSX_ROWS[line - 1][0],
                        "text_b": PAWSX_ROWS[line - 1][1], "label": label}]
               for label, line in lines.items()}
    (folder / "sampled.json").write_text(json.dumps(sampled))
    return root


def test_by_line_keeps_a_line_repeating_a_bucket_text_and_by_text_drops_it(tmp_path, capsys):
    src = _pawsx_release(tmp_path / "release", {"0": 2, "1": 1})  # line 1: NS/NS
    _pawsx_dev(tmp_path / "data" / "pawsx", PAWSX_ROWS)
    base = ["buckets", "import-published", str(src), "--task", "pawsx", "--data-dir",
            str(tmp_path / "data" / "{task}")]
    assert run_app([*base, "--out", str(tmp_path / "text")]) == 0
    assert run_app([*base, "--out", str(tmp_path / "line"), "--reading", "study"]) == 0
    by_text = read_set(tmp_path / "text" / "pawsx" / "de" / "k1")
    by_line = read_set(tmp_path / "line" / "pawsx" / "de" / "k1")
    assert [ex.id for ex in by_text[2]] == ["dev-de.tsv:3", "dev-de.tsv:5", "dev-de.tsv:6",
                                            "dev-de.tsv:8"]
    assert [ex.id for ex in by_line[2]] == ["dev-de.tsv:3", "dev-de.tsv:4", "dev-de.tsv:5",
                                            "dev-de.tsv:6", "dev-de.tsv:7", "dev-de.tsv:8"]
    assert by_line[0]["reading"] == {"quoting": "csv", "remaining": "by-line"}
    assert "the release's ids" in by_line[0]["dev_remaining"]["rule"]
    report = check_set(tmp_path / "line" / "pawsx" / "de" / "k1",
                       tmp_path / "data" / "pawsx" / "dev-de.tsv")
    assert report.ok and any("repeat a bucket example's text" in n for n in report.notes)
    assert check_set(tmp_path / "text" / "pawsx" / "de" / "k1",
                     tmp_path / "data" / "pawsx" / "dev-de.tsv").ok


def test_by_line_refuses_an_id_that_names_another_line(tmp_path, capsys):
    src = _pawsx_release(tmp_path / "release", {"0": 2, "1": 3})
    _pawsx_dev(tmp_path / "data" / "pawsx", [PAWSX_ROWS[0], *PAWSX_ROWS])  # shifted a line
    assert run_app(["buckets", "import-published", str(src), "--task", "pawsx", "--data-dir",
                    str(tmp_path / "data" / "{task}"), "--out", str(tmp_path / "b"),
                    "--reading", "remaining=by-line"]) == 2
    err = capsys.readouterr().err
    assert "its id names dev-de.tsv:2, which holds another example" in err
    assert not (tmp_path / "b").exists()


@pytest.mark.parametrize("seed", range(12))
def test_a_sampled_set_by_text_leaves_no_bucket_text_to_select_on(tmp_path, seed):
    """Property over seeds: by-text leaves no line with a bucket example's text; the default
    (by line) leaves exactly the lines no bucket holds."""
    rows = [(f"S{i % 13}", f"T{i % 13}", str(i % 2)) for i in range(40)]  # texts repeat
    dev = _pawsx_dev(tmp_path / "data", rows)
    for reading in ([], ["--reading", "remaining=by-text"]):
        out = tmp_path / ("text" if reading else "line")
        assert run_app(["sample", "--task", "pawsx", "--lang", "de", "-k", "1", "--n-buckets",
                        "3", "--seed", str(seed), "--data", str(dev), "--out", str(out),
                        *reading]) == 0
        manifest, buckets, remaining = read_set(out / "pawsx" / "de" / "k1")
        used = {ex.id for bucket in buckets for ex in bucket.examples}
        texts = {(ex.text_a, ex.text_b) for bucket in buckets for ex in bucket.examples}
        if reading:
            assert not any((ex.text_a, ex.text_b) in texts for ex in remaining)
            assert manifest["reading"] == {"remaining": "by-text"}
        else:
            assert [ex.id for ex in remaining] == [f"dev-de.tsv:{i}" for i in range(1, 41)
                                                   if f"dev-de.tsv:{i}" not in used]
        assert check_set(out / "pawsx" / "de" / "k1", dev).ok


# ------------------------------------------------------------------------------ the report

def test_the_report_names_each_tasks_readings_and_notes_a_cell_that_mixes_them(tmp_path):
    from fsxlt.fileio import atomic_write_json
    from fsxlt.report import load_records, report_text
    from tests.test_report import fake_record

    notes: list[str] = []
    for index in range(4):
        record = fake_record("de", 1, "full", index, 0.6 + index / 100)
        if index < 2:  # two runs on a set read the study's way, two the default way
            record["run"] = {"identity": {"reading": {"remaining": "by-line",
                                                      "text": "tokenized"}}}
        atomic_write_json(tmp_path / "xnli" / "de" / "k1" / "full" / f"{index:02d}.json",
                          record)
    text = report_text(tmp_path, warn=notes.append)
    assert "Readings of the data files (docs/protocol.md#readings):" in text
    assert "- xnli: default (1 cell)" in text
    assert "- xnli: remaining=by-line, text=tokenized (1 cell)" in text
    assert any("xnli/de/k1/full mix records whose data files were read differently" in n
               for n in notes)
    default_only = tmp_path / "plain"
    atomic_write_json(default_only / "xnli" / "de" / "k1" / "full" / "00.json",
                      fake_record("de", 1, "full", 0, 0.6))
    assert "Readings" not in report_text(default_only)  # what 0.10 wrote reads as before
    assert list(load_records(default_only).scores["reading"]) == ["default"]


def test_the_bucket_card_says_how_the_set_was_read(tmp_path):
    store = _study_set(tmp_path)
    assert run_app(["buckets", "export", str(store), str(tmp_path / "hf"), "--format",
                    "hf"]) == 0
    card = (tmp_path / "hf" / "README.md").read_text(encoding="utf-8")
    assert ("- **Reading**: `text=tokenized`, `quoting=as-written`, `remaining=by-line` "
            "(the study's); the set's runs read their dev and test files the same way") in card
    assert run_app(["buckets", "import-hf", str(tmp_path / "hf"), "--out",
                    str(tmp_path / "back")]) == 0
    assert read_set(tmp_path / "back" / "xnli" / "hi" / "k1")[0]["reading"] == \
        {"remaining": "by-line", "text": "tokenized"}


def test_source_train_reads_the_target_files_as_the_set_does(tmp_path, capsys):
    """``source-train --reading``: its target dev and test sets are the set's examples (so
    that a sweep on the set takes its zero-shot score as K=0); refused before any data."""
    from fsxlt.cli.inputs import target_data
    from fsxlt.execution.expansion import _same_test
    from fsxlt.training.loop import examples_digest

    data = tmp_path / "xnli10"
    write_xnli10(data, "dev")
    test = write_xnli10(data, "test", rows=list(reversed(HINDI)), offset=1)
    study = parse_reading("study", get_task("xnli"))
    sources: dict[str, str] = {}
    tdev, ttest = target_data(get_task("xnli"), ["hi"], {}, {}, data, sources, study)
    assert {ex.text_a for ex in ttest["hi"]} == {_tokenize(a) for a, _b in HINDI}
    meta = {"data": {"target_test": {"hi": {"sha256": examples_digest(ttest["hi"])}}}}
    assert _same_test(meta, get_task("xnli"), "hi", test, None, study)
    assert not _same_test(meta, get_task("xnli"), "hi", test)  # read raw: other examples
    assert run_app(["source-train", "--task", "xnli", "--data-dir", str(data), "--target",
                    "hi", "--reading", "text=lemmas", "--out", str(tmp_path / "ckpt")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "text is one of raw, tokenized" in err
    assert not (tmp_path / "ckpt").exists()


# --------------------------------------------------------------- FewCLUE's baseline input

BASELINE = make_reading({"input": "baseline"})


def test_csl_as_the_fine_tuning_baseline_gives_it(tmp_path):
    """FewCLUE's fine-tuning baseline: text_a the keywords joined by a space, text_b the
    abstract (CLUEbenchmark/FewCLUE 62a02c6, baselines/models_tf/fine_tuning/
    classifier_utils.py lines 500-501); fsxlt's own: the abstract, then the keywords
    joined by 、."""
    path = tmp_path / "train_0.json"
    rows = [{"id": 1, "abst": "一篇摘要。", "keyword": ["甲", "乙、丙"], "label": "1"},
            {"id": 2, "abst": "另一篇。", "keyword": ["丁"], "label": "0"}]
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows),
                    encoding="utf-8")
    ours = read_examples(path, "csl")
    theirs = read_examples(path, "csl", reading=BASELINE)
    assert [(ex.text_a, ex.text_b) for ex in ours] == [("一篇摘要。", "甲、乙、丙"),
                                                      ("另一篇。", "丁")]
    assert [(ex.text_a, ex.text_b, ex.label) for ex in theirs] == [
        ("甲 乙、丙", "一篇摘要。", "1"), ("丁", "另一篇。", "0")]
    assert [ex.id for ex in ours] == [ex.id for ex in theirs]


@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_cluewsc_marks_as_the_fine_tuning_baseline_marks(tmp_path_factory, data):
    """The baseline wraps the noun phrase (span 1) in _ and the pronoun (span 2) in [ ]
    in the text as written (classifier_utils.py lines 886-895: four insertions whose
    offsets shift by the marks before them); fsxlt's own marks are [ ] and < >."""
    text = data.draw(st.text(alphabet="他她它我们小明书桌上的是", min_size=4, max_size=20))
    a = data.draw(st.integers(0, len(text) - 2))
    a_len = data.draw(st.integers(1, max(1, min(3, len(text) - a - 1))))
    free = [i for i in range(len(text)) if i + 1 <= len(text) and (i + 1 <= a or i >= a + a_len)]
    b = data.draw(st.sampled_from(free))
    noun, pronoun = text[a:a + a_len], text[b]
    row = {"idx": 0, "text": text, "label": "true", "target": {
        "span1_index": a, "span1_text": noun, "span2_index": b, "span2_text": pronoun}}
    path = tmp_path_factory.mktemp("wsc") / "train_0.json"
    path.write_text(json.dumps(row, ensure_ascii=False) + "\n", encoding="utf-8")

    def wrapped(noun_marks: tuple[str, str], pronoun_marks: tuple[str, str]) -> str:
        first, second = sorted([(a, noun, *noun_marks), (b, pronoun, *pronoun_marks)])
        return (text[:first[0]] + first[2] + first[1] + first[3]
                + text[first[0] + len(first[1]):second[0]] + second[2] + second[1]
                + second[3] + text[second[0] + len(second[1]):])

    example, = read_examples(path, "cluewsc", reading=BASELINE)
    assert example.text_a == wrapped(("_", "_"), ("[", "]"))
    ours, = read_examples(path, "cluewsc")
    assert ours.text_a == wrapped(("[", "]"), ("<", ">"))


def test_a_prompt_arm_on_a_baseline_set_is_refused_in_one_line():
    from fsxlt.data.readings import check_arm_reading

    for arm in ("pet", "icl", "lm-lora"):
        with pytest.raises(FsxltError, match=f"is for fine-tuning arms; {arm}'s patterns"):
            check_arm_reading(arm, BASELINE, "csl")
    check_arm_reading("full", BASELINE, "csl")
    check_arm_reading("pet", DEFAULT_READING, "csl")
    assert parse_reading(["input=baseline"], get_task("cluewsc")) == BASELINE
    with pytest.raises(FsxltError, match="eprstmt has no input to choose"):
        parse_reading(["input=baseline"], get_task("eprstmt"))


def test_a_tagging_set_read_the_studys_way_is_scored_truncated(tmp_path):
    """panx under --reading study: eval_long=truncate reaches each run's identity and the
    engine that scores it; a set read the default way keeps the engine as it was."""
    from fsxlt.execution import expand, parse_config
    from fsxlt.execution.worker import engine_options
    from tests.train_fixtures import ner_data, write_conll

    data = tmp_path / "panx"
    data.mkdir()
    write_conll(data / "train-de.tsv", ner_data(60, seed=1))
    write_conll(data / "dev-de.tsv", ner_data(20, seed=2))
    write_conll(data / "test-de.tsv", ner_data(20, seed=3))
    start = tmp_path / "ckpt"
    start.mkdir()
    (start / "config.json").write_text("{}")
    (start / "tokenizer_config.json").write_text("{}")  # a model folder's
    runs = {}
    for name, reading in (("study", ["--reading", "study"]), ("plain", [])):
        assert run_app(["sample", "--task", "panx", "--lang", "de", "-k", "1", "--n-buckets",
                        "1", "--data-dir", str(data), "--out", str(tmp_path / name),
                        *reading]) == 0
        runs[name], = expand(parse_config({
            "name": name, "out": str(tmp_path / f"runs-{name}"),
            "buckets": str(tmp_path / name), "data_dir": str(data), "start": str(start),
            "n_buckets": 1, "tasks": {"panx": {"languages": ["de"], "k": [1]}}})).runs
    assert runs["study"].identity["reading"] == {"eval_long": "truncate"}
    assert engine_options(runs["study"])["eval_long"] == "truncate"
    assert "eval_long" not in engine_options(runs["plain"])
    assert "reading" not in runs["plain"].identity
