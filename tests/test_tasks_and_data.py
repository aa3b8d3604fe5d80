"""The task registry and every local reader, including their error messages."""

from __future__ import annotations

import json

import pytest

from fsxlt.data import (
    TaggedSentence,
    TextExample,
    examples_from_hub_rows,
    load_split,
    read_examples,
)
from fsxlt.errors import DataFormatError, FsxltError
from fsxlt.tasks import builtin_tasks, get_task
from fsxlt.tasks.languages import language_code, languages


def test_registry_has_the_six_tasks_with_their_label_sets():
    tasks = builtin_tasks()
    synthetic = {"synth-pos", "synth-ner", "synth-topic", "synth-pair"}  # fsxlt.synthetic
    fewclue = {"eprstmt", "csldcp", "tnews", "iflytek", "ocnli", "bustm", "chid", "csl",
               "cluewsc"}
    xglue = {"nc", "qadsm", "qam", "wpr", "xglue-ner", "xglue-pos"}
    qa = {"mlqa", "xquad", "tydiqa"}
    generation = {"qg", "ntg", "xquad-qg"}
    assert set(tasks) == {"xnli", "pawsx", "mldoc", "marc", "panx", "udpos"} | synthetic \
        | fewclue | xglue | qa | generation
    assert len(tasks["udpos"].labels) == 17
    assert tasks["panx"].sampling_labels == ("PER", "ORG", "LOC")
    assert {name for name, spec in tasks.items() if spec.benchmark == "fewclue"} == fewclue
    assert tasks["xnli"].sampling.split == "dev" and tasks["marc"].sampling.split == "train"
    assert tasks["panx"].sampling.k_values == (1, 2, 4)
    assert tasks["mldoc"].training.lr_grid == (1e-5, 3e-5, 5e-5, 7e-5)


def test_unknown_task_and_language_list_the_valid_ones():
    with pytest.raises(FsxltError,
                       match=r"unknown task 'nli' \(did you mean 'xnli'\?\); valid: bustm, chid"):
        get_task("nli")
    with pytest.raises(FsxltError, match="unknown language 'xx' for task xnli; valid: ar, bg"):
        get_task("xnli").check_language("xx")


def test_a_task_can_be_defined_by_a_yaml_file(tmp_path):
    path = tmp_path / "news.yaml"
    path.write_text("name: news\nkind: classification\ninput: single\nlabels: [a, b]\n"
                    "metric: accuracy\nlanguages: [en, de]\n"
                    "data: {format: mldoc}\nsampling: {sampler: nway-kshot}\n")
    task = get_task(str(path))
    assert task.name == "news" and task.labels == ("a", "b") and task.sampling.n_buckets == 40


def test_wals_table_and_language_names():
    assert language_code("german") == "de" and language_code("Chinese") == "zh"
    assert language_code("ar") == "ar"
    assert languages()["ja"].wals["81A"] == "SOV"
    with pytest.raises(FsxltError, match="unknown language 'klingon'"):
        language_code("klingon")


def test_pair_tsv_with_and_without_header(tmp_path):
    plain = tmp_path / "dev-de.tsv"
    plain.write_text("a one\tb one\tneutral\na two\tb two\tentailment\n", encoding="utf-8")
    examples = read_examples(plain, "xnli")
    assert examples[1] == TextExample("dev-de.tsv:2", "a two", "b two", "entailment")
    headed = tmp_path / "dev-fr.tsv"
    headed.write_text("id\tsentence1\tsentence2\tlabel\n7\tx\ty\t1\n", encoding="utf-8")
    assert read_examples(headed, "pawsx") == [TextExample("dev-fr.tsv:2", "x", "y", "1")]


def test_mldoc_and_marc(tmp_path):
    mldoc = tmp_path / "train-de.tsv"
    mldoc.write_text("CCAT\tEin Text.\nMCAT\tNoch einer.\n", encoding="utf-8")
    assert read_examples(mldoc, "mldoc")[1] == TextExample("train-de.tsv:2", "Noch einer.", None,
                                                           "MCAT")
    marc = tmp_path / "train-de.jsonl"
    row = {"review_body": "Gut.", "review_title": "Top", "product_category": "home", "stars": 5}
    marc.write_text(json.dumps(row) + "\n", encoding="utf-8")
    assert read_examples(marc, "marc") == [TextExample("train-de.jsonl:1", "Gut.", "Top . home",
                                                       "5")]


def test_conll_strips_language_prefix_and_ids_name_the_first_line(tmp_path):
    path = tmp_path / "train-de.tsv"
    path.write_text("de:Angela\tB-PER\nde:Merkel\tI-PER\n\nde:in\tO\nde:Bonn\tB-LOC\n\n",
                    encoding="utf-8")
    sentences = read_examples(path, "panx")
    assert sentences == [
        TaggedSentence("train-de.tsv:1", ("Angela", "Merkel"), ("B-PER", "I-PER")),
        TaggedSentence("train-de.tsv:4", ("in", "Bonn"), ("O", "B-LOC")),
    ]


def test_conllu_skips_multiword_ranges_and_empty_nodes(tmp_path):
    path = tmp_path / "train-es.conllu"
    rows = [
        "# text = del mar",
        "1-2\tdel\t_\t_\t_\t_\t_\t_\t_\t_",
        "1\tde\tde\tADP\t_\t_\t0\t_\t_\t_",
        "2\tel\tel\tDET\t_\t_\t3\t_\t_\t_",
        "2.1\tx\tx\tNOUN\t_\t_\t_\t_\t_\t_",
        "3\tmar\tmar\tNOUN\t_\t_\t0\t_\t_\t_",
    ]
    path.write_text("\n".join(rows) + "\n\n", encoding="utf-8")
    assert read_examples(path, "udpos") == [
        TaggedSentence("train-es.conllu:3", ("de", "el", "mar"), ("ADP", "DET", "NOUN"))]


@pytest.mark.parametrize(("task", "content", "message"), [
    ("xnli", "a\tb\tneutral\na\tb\n", r"dev.tsv:2: expected 3 tab-separated fields, found 2"),
    ("xnli", "a\tb\tneutral\na\tb\tmaybe\n", r"dev.tsv:2: unknown label 'maybe'"),
    ("panx", "Bonn\tB-LOC\n\nx y z\n", r"dev.tsv:3: expected 'token<TAB>tag'"),
    ("panx", "Bonn\tB-GPE\n", r"dev.tsv:1: unknown tag 'B-GPE'"),
    ("marc", '{"review_body": "x"}\n', r"dev.tsv:1: missing field 'review_title'"),
    ("marc", "{not json\n", r"dev.tsv:1: invalid JSON"),
    ("mldoc", "CCAT no tab here\n", r"dev.tsv:1: expected 'label<TAB>text'"),
    ("xnli", "\n\n", r"dev.tsv: file is empty"),
])
def test_malformed_files_name_file_and_line(tmp_path, task, content, message):
    path = tmp_path / "dev.tsv"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(DataFormatError, match=message):
        read_examples(path, task)


def test_missing_file_and_bad_encoding(tmp_path):
    with pytest.raises(DataFormatError, match="nope.tsv: file not found"):
        read_examples(tmp_path / "nope.tsv", "xnli")
    bad = tmp_path / "bad.tsv"
    bad.write_bytes(b"a\tb\tneutral\n\xff\xfe\tb\tneutral\n")
    with pytest.raises(DataFormatError, match="bad.tsv:2: not valid UTF-8"):
        read_examples(bad, "xnli")


def test_load_split_finds_files_by_pattern_and_hashes_them(tmp_path):
    (tmp_path / "dev-de.tsv").write_text("a\tb\tneutral\n", encoding="utf-8")
    split = load_split("xnli", "de", "dev", data_dir=tmp_path)
    assert split.source.endswith("dev-de.tsv") and len(split.sha256) == 64
    with pytest.raises(DataFormatError, match="dev-fr.tsv: file not found"):
        load_split("xnli", "fr", "dev", data_dir=tmp_path)


def test_hub_rows_use_class_label_names():
    datasets = pytest.importorskip("datasets")
    features = datasets.Features({
        "tokens": datasets.Sequence(datasets.Value("string")),
        "ner_tags": datasets.Sequence(datasets.ClassLabel(
            names=["O", "B-PER", "I-PER", "B-ORG", "I-ORG", "B-LOC", "I-LOC"])),
    })
    rows = datasets.Dataset.from_dict({"tokens": [["Ada", "Lovelace"]], "ner_tags": [[1, 2]]},
                                      features=features)
    assert examples_from_hub_rows(get_task("panx"), rows, "hf:x") == [
        TaggedSentence("hf:x:0", ("Ada", "Lovelace"), ("B-PER", "I-PER"))]
    nli = datasets.Dataset.from_dict(
        {"premise": ["p"], "hypothesis": ["h"], "label": [2]},
        features=datasets.Features({"premise": datasets.Value("string"),
                                    "hypothesis": datasets.Value("string"),
                                    "label": datasets.ClassLabel(names=["entailment", "neutral",
                                                                        "contradiction"])}))
    assert examples_from_hub_rows(get_task("xnli"), nli, "hf:y") == [
        TextExample("hf:y:0", "p", "h", "contradiction")]


def test_a_mistyped_task_or_language_is_told_the_nearest_valid_one():
    """Issue 73, item 6: one line, with the nearest valid name where one is near."""
    from fsxlt.errors import FsxltError
    from fsxlt.tasks import get_task

    with pytest.raises(FsxltError, match=r"unknown task 'xlni' \(did you mean 'xnli'\?\); "):
        get_task("xlni")
    with pytest.raises(FsxltError, match=r"unknown language 'dee' for task xnli \(did you "
                       r"mean 'de'\?\); valid: "):
        get_task("xnli").check_language("dee")
    with pytest.raises(FsxltError, match=r"^unknown task 'qqqqqq'; valid: "):
        get_task("qqqqqq")  # nothing near: no guess
