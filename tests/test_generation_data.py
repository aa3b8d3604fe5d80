"""Generation tasks' data and buckets: XGLUE's QG/NTG file pairs, question generation
made from SQuAD JSON (XQuAD's holdout), and the ``k-pairs`` sampler's guarantees.

Every fixture file is written here (tiny XGLUE src/tgt pairs, a tiny SQuAD v1.1 JSON
file); the sampler's guarantees are checked as properties over many seeds.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from fsxlt.cli import run_app
from fsxlt.data import (
    GenerationExample,
    example_from_dict,
    example_texts,
    has_labels,
    load_split,
    read_examples,
)
from fsxlt.data.generation import sentence_at
from fsxlt.data.qa import holdout_part, read_squad_json
from fsxlt.errors import DataFormatError, FsxltError
from fsxlt.sampling import check_set, check_store, sample, sample_set
from fsxlt.sampling.samplers import derive_rng, k_pairs, untouched_pairs
from fsxlt.sampling.store import read_set
from fsxlt.tasks import get_task, parse_task

# --------------------------------------------------------------------------- fixtures


def write_lines(path: Path, lines: list[str]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(f"{line}\n" for line in lines), encoding="utf-8")
    return path


def write_qg(directory: Path, lang: str, split: str, n: int, *, repeats: int = 1,
             targets: bool = True, seed: int = 0, first: int = 0) -> Path:
    """``xglue.qg.<lang>.src.<split>`` (and its ``.tgt.`` twin): ``n`` passages, each on
    ``repeats`` consecutive lines with a question of its own (QG's passages recur);
    ``first``: the first passage's number (a file of other passages than another's)."""
    rng = random.Random(seed)
    sources, golds = [], []
    for i in range(first, first + n):
        passage = f"passage {i} says {rng.choice(['yes', 'no', 'maybe'])} about topic {i} ."
        for r in range(repeats):
            sources.append(passage)
            golds.append(f"what does passage {i} say , take {r} ?")
    src = write_lines(directory / f"xglue.qg.{lang}.src.{split}", sources)
    if targets:
        write_lines(directory / f"xglue.qg.{lang}.tgt.{split}", golds)
    return src


def squad_file(path: Path, n_paragraphs: int) -> Path:
    """A SQuAD v1.1 file: paragraph p has three sentences and a question on each."""
    paragraphs = []
    for p in range(n_paragraphs):
        sentences = [f"Para {p} starts here.", f"Then comes fact {p}!", f"Is it over {p}?"]
        context = " ".join(sentences)
        qas = [{"id": f"q{p}-{s}", "question": f" Question {s} on {p}? ",
                "answers": [{"text": sentence.split()[1],
                             "answer_start": context.index(sentence) + len(
                                 sentence.split()[0]) + 1}]}
               for s, sentence in enumerate(sentences)]
        paragraphs.append({"context": context, "qas": qas})
    data = {"version": "1.1", "data": [{"title": "t", "paragraphs": paragraphs}]}
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def squad_qg_task(tmp_path: Path, test_paragraphs: int) -> str:
    """configs/xquad-qg.yaml with a holdout small enough for a tiny file."""
    raw = yaml.safe_load(Path("configs/xquad-qg.yaml").read_text(encoding="utf-8"))
    raw["name"], raw["data"]["holdout"] = "tiny-qg", {"test_paragraphs": test_paragraphs,
                                                      "seed": 3}
    path = tmp_path / "tiny-qg.yaml"
    path.write_text(yaml.safe_dump(raw, allow_unicode=True), encoding="utf-8")
    return str(path)


def one_line_error(capsys, args: list[str], *says: str) -> None:
    capsys.readouterr()
    status = run_app(args)
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.strip()]
    assert status == 2 and len(lines) == 1 and "Traceback" not in err, err
    for part in says:
        assert part in lines[0], err


# --------------------------------------------------------------------------- the example type


def test_a_generation_example_round_trips_and_has_its_texts():
    example = GenerationExample("xglue.qg.de.src.dev:3", "Ein Abschnitt.", "Eine Frage?", "de")
    row = example.to_dict()
    assert row == {"id": "xglue.qg.de.src.dev:3", "source": "Ein Abschnitt.",
                   "target": "Eine Frage?", "language": "de"}
    assert example_from_dict(row) == example
    assert example_texts(example) == ("Ein Abschnitt.", "Eine Frage?")
    assert example.content_key() == ("Ein Abschnitt.", "Eine Frage?")


# --------------------------------------------------------------------------- XGLUE's files


def test_xglue_pairs_read_line_by_line_with_the_evaluators_targets(tmp_path):
    src = write_lines(tmp_path / "xglue.ntg.fr.src.dev", ["  body one ", "body two"])
    write_lines(tmp_path / "xglue.ntg.fr.tgt.dev", ["query\t Title One ", "Title two"])
    examples = read_examples(src, "ntg", language="fr")
    assert examples == [
        GenerationExample("xglue.ntg.fr.src.dev:1", "body one", "Title One", "fr"),
        GenerationExample("xglue.ntg.fr.src.dev:2", "body two", "Title two", "fr")]
    # the target file's name finds the pair too, and ids still name the source file
    assert read_examples(tmp_path / "xglue.ntg.fr.tgt.dev", "ntg", language="fr") == examples
    assert has_labels(src, "ntg")


def test_a_test_split_has_no_targets_and_reads_as_a_file_to_predict(tmp_path):
    src = write_qg(tmp_path, "de", "test", 3, targets=False)
    assert not has_labels(src, "qg", language="de")
    unlabelled = read_examples(src, "qg", labelled=False, language="de")
    assert [ex.target for ex in unlabelled] == ["", "", ""]
    assert [ex.id for ex in unlabelled] == [f"xglue.qg.de.src.test:{i}" for i in (1, 2, 3)]
    with pytest.raises(DataFormatError, match="no target file xglue.qg.de.tgt.test beside it"):
        read_examples(src, "qg", language="de")


@pytest.mark.parametrize(("sources", "targets", "message"), [
    (["a", "b", "c"], ["x", "y"], "xglue.qg.de.tgt.dev: 2 lines but its source file "
                                  "xglue.qg.de.src.dev has 3"),
    (["a", "  ", "c"], ["x", "y", "z"], "xglue.qg.de.src.dev:2: an empty source line"),
    (["a", "b", "c"], ["x", "q\t ", "z"], "xglue.qg.de.tgt.dev:2: an empty target line"),
    ([" ", " "], ["x", "y"], "xglue.qg.de.src.dev: file is empty"),
])
def test_bad_xglue_pairs_are_one_line_errors_naming_file_and_line(tmp_path, sources, targets,
                                                                  message):
    write_lines(tmp_path / "xglue.qg.de.src.dev", sources)
    write_lines(tmp_path / "xglue.qg.de.tgt.dev", targets)
    with pytest.raises(DataFormatError) as err:
        read_examples(tmp_path / "xglue.qg.de.src.dev", "qg", language="de")
    assert message in str(err.value) and "\n" not in str(err.value)


def test_a_file_that_is_no_xglue_generation_file_is_refused(tmp_path):
    path = write_lines(tmp_path / "dev-de.txt", ["a"])
    with pytest.raises(DataFormatError, match="not an XGLUE generation file"):
        read_examples(path, "qg", language="de")


@pytest.mark.parametrize("layout", ["", "QG/"])
def test_data_dir_finds_xglues_files_in_the_task_folder_or_the_download(tmp_path, layout):
    write_qg(tmp_path / layout, "es", "dev", 4)
    split = load_split("qg", "es", "dev", data_dir=tmp_path)
    assert len(split.examples) == 4 and split.source.endswith("xglue.qg.es.src.dev")
    assert all(ex.language == "es" for ex in split.examples)


# --------------------------------------------------------------------------- SQuAD JSON


@pytest.mark.parametrize(("text", "offset", "sentence"), [
    ("One two. Three four! Five?", 0, "One two."),
    ("One two. Three four! Five?", 10, "Three four!"),
    ("One two. Three four! Five?", 22, "Five?"),
    ("v1.2 is out. Next", 2, "v1.2 is out."),         # a point inside a word ends nothing
    ("第一句。第二句！第三句", 5, "第二句！"),             # 。！？ end a sentence directly
    ("पहला वाक्य। दूसरा वाक्य।", 13, "दूसरा वाक्य।"),
    ("no end at all", 5, "no end at all"),            # the whole paragraph
])
def test_the_answer_sentence_is_cut_at_sentence_ends(text, offset, sentence):
    assert sentence_at(text, offset) == sentence


def test_squad_questions_become_answer_sentence_question_pairs(tmp_path):
    path = squad_file(tmp_path / "xquad.de.json", 2)
    pairs = read_examples(path, "xquad-qg", language="de")
    assert [ex.id for ex in pairs] == [f"xquad.de.json:q{p}-{s}" for p in (0, 1)
                                       for s in (0, 1, 2)]
    assert [ex.source for ex in pairs[:3]] == ["Para 0 starts here.", "Then comes fact 0!",
                                               "Is it over 0?"]
    assert pairs[0].target == "Question 0 on 0?" and pairs[0].language == "de"


def test_squad_qg_keeps_the_qa_tasks_test_paragraphs_out_of_dev(tmp_path):
    task = squad_qg_task(tmp_path, 4)
    path = squad_file(tmp_path / "xquad.de.json", 12)
    questions = read_squad_json(path)
    held_out = {qa.id for qa in holdout_part(questions, 4, 0, 3, "test")}
    test = load_split(task, "de", "test", path=path).examples
    dev = load_split(task, "de", "dev", path=path).examples
    assert {ex.id for ex in test} == held_out and len(held_out) == 12
    assert {ex.id for ex in dev} == {qa.id for qa in questions} - held_out
    # an extractive QA task with the same holdout holds out the same paragraphs
    assert {qa.id for qa in holdout_part(questions, 4, 2, 3, "test")} == held_out


def test_squad_qg_sets_store_the_held_out_test_split_and_check_clean(tmp_path):
    path = squad_file(tmp_path / "xquad.de.json", 130)  # xquad-qg holds 120 paragraphs out
    sets = sample("xquad-qg", ["de"], [2], tmp_path / "b", data=path, n_buckets=3)
    held_out = load_split("xquad-qg", "de", "test", path=path).examples
    assert sets[0].test == held_out and len(held_out) == 3 * 120
    assert len(sets[0].dev_remaining) == 3 * 10 - 6
    assert not {ex.source for ex in held_out} & {ex.source for bucket in sets[0].buckets
                                                 for ex in bucket}
    report = check_set(tmp_path / "b" / "xquad-qg" / "de" / "k2", path)
    assert report.ok, report.violations


@pytest.mark.parametrize(("change", "message"), [
    ({"holdout": {"test_paragraphs": 3, "dev_paragraphs": 2}}, "takes no dev_paragraphs"),
    ({"format": "xglue_src_tgt", "holdout": {"test_paragraphs": 3}},
     "holds out paragraphs of SQuAD JSON files"),
])
def test_a_generation_yaml_with_a_wrong_holdout_is_refused(change, message):
    raw = yaml.safe_load(Path("configs/xquad-qg.yaml").read_text(encoding="utf-8"))
    with pytest.raises(FsxltError, match=message):
        parse_task({**raw, "data": {**raw["data"], **change}}, "xquad-qg.yaml")


@pytest.mark.parametrize(("change", "message"), [
    ({"metric": "accuracy"}, "metric bleu goes with kind generation"),
    ({"labels": ["a"]}, "a generation task has no labels"),
    ({"input": "single"}, "input text goes with kind generation"),
    ({"sampling": {"sampler": "nway-kshot"}}, "use sampler: k-pairs"),
])
def test_a_generation_yaml_is_checked(change, message):
    raw = yaml.safe_load(Path("configs/qg.yaml").read_text(encoding="utf-8"))
    with pytest.raises(FsxltError, match=message):
        parse_task({**raw, **change}, "qg.yaml")


def test_the_generation_tasks_are_registered():
    for name, languages in (("qg", ("en", "de", "es", "fr", "it", "pt")),
                            ("ntg", ("en", "de", "es", "fr", "ru"))):
        spec = get_task(name)
        assert (spec.kind, spec.input, spec.metric, spec.labels) == ("generation", "text",
                                                                      "bleu", ())
        assert set(spec.languages) == set(languages) and spec.is_generation
        assert (spec.submission, spec.submission_format) == (name.upper(), "xglue")
        assert spec.sampling.sampler == "k-pairs" and spec.sampling.split == "dev"
        assert "{text_a}" in spec.icl.templates["en"] and not spec.icl.label_words
    assert get_task("xquad-qg").data.holdout_paragraphs == get_task("xquad").data \
        .holdout_paragraphs
    assert get_task("xquad-qg").sampling_labels == ()


# --------------------------------------------------------------------------- buckets


def test_qg_buckets_are_stored_read_back_and_checked(tmp_path, capsys):
    data = tmp_path / "XGLUE" / "QG"
    write_qg(data, "de", "dev", 30, repeats=2)
    assert run_app(["sample", "--task", "qg", "--lang", "de", "-k", "4", "--n-buckets", "5",
                    "--data-dir", str(tmp_path / "XGLUE"), "--out", str(tmp_path / "b")]) == 0
    directory = tmp_path / "b" / "qg" / "de" / "k4"
    manifest, buckets, remaining = read_set(directory)
    assert manifest["sampler"] == "k-pairs" and len(buckets) == 5
    assert all(isinstance(ex, GenerationExample) and ex.language == "de"
               for bucket in buckets for ex in bucket.examples)
    used = {ex.source for bucket in buckets for ex in bucket.examples}
    assert len(used) == 20 and len(remaining) == 2 * (30 - 20)
    assert not used & {ex.source for ex in remaining}
    assert all(r.ok for r in check_store(tmp_path / "b"))
    source = str(data / "xglue.qg.de.src.dev")
    capsys.readouterr()
    assert run_app(["buckets", "check", str(directory), "--source", source]) == 0


def test_buckets_check_finds_a_source_in_two_buckets_and_in_dev(tmp_path):
    write_qg(tmp_path, "de", "dev", 30, repeats=2)
    split = load_split("qg", "de", "dev", data_dir=tmp_path)
    bucket_set = sample_set("qg", split, 2, n_buckets=3)
    twin = next(ex for ex in split.examples
                if ex.source == bucket_set.buckets[0][0].source
                and ex.id != bucket_set.buckets[0][0].id)
    bucket_set.buckets[1] = [twin, bucket_set.buckets[1][1]]
    bucket_set.dev_remaining = bucket_set.dev_remaining + [twin]
    from fsxlt.sampling.store import write_sets

    write_sets(tmp_path / "b", [bucket_set])
    report = check_set(tmp_path / "b" / "qg" / "de" / "k2",
                       tmp_path / "xglue.qg.de.src.dev")
    kinds = {v.kind for v in report.violations}
    assert {"overlap", "dev-leak", "dev-remaining"} <= kinds, report.violations


@pytest.mark.parametrize(("n_sources", "message"), [
    (5, "qg/fr K=2: 3 buckets of 2 pairs with distinct sources need 6 sources, the data has "
        "5 (15 pairs)"),
    (6, "leaving no dev examples for model selection"),  # the other pairs share their sources
])
def test_too_few_distinct_sources_is_a_one_line_error(tmp_path, capsys, n_sources, message):
    write_qg(tmp_path, "fr", "dev", n_sources, repeats=3)
    one_line_error(capsys, ["sample", "--task", "qg", "--lang", "fr", "-k", "2",
                            "--n-buckets", "3", "--data-dir", str(tmp_path),
                            "--out", str(tmp_path / "b")], message)
    assert not (tmp_path / "b").exists()


def pool_of(n_sources: int, repeats: list[int], seed: int) -> list[GenerationExample]:
    rows = [GenerationExample(f"f:{s}-{r}", f"source {s}", f"target {s} {r}")
            for s in range(n_sources) for r in range(repeats[s % len(repeats)])]
    random.Random(seed).shuffle(rows)
    return rows


@settings(max_examples=80, deadline=None)
@given(k=st.sampled_from([1, 2, 4, 8, 16, 32]), n_buckets=st.integers(1, 10),
       extra=st.integers(0, 20), repeats=st.lists(st.integers(1, 4), min_size=1, max_size=5),
       seed=st.integers(0, 2**32 - 1))
def test_k_pairs_exact_k_distinct_sources_disjoint_and_remaining(k, n_buckets, extra, repeats,
                                                                 seed):
    pool = pool_of(k * n_buckets + extra, repeats, seed)
    buckets = k_pairs(pool, k, n_buckets, derive_rng(seed, "qg", "de", k))
    assert len(buckets) == n_buckets
    owners: dict[str, int] = {}
    for b, bucket in enumerate(buckets):
        sources = [ex.source for ex in bucket]
        assert len(bucket) == k and len(set(sources)) == k
        assert [pool.index(ex) for ex in bucket] == sorted(pool.index(ex) for ex in bucket)
        for source in sources:
            assert owners.setdefault(source, b) == b, "a source in two buckets"
    remaining = untouched_pairs(pool, buckets)
    assert remaining == [ex for ex in pool if ex.source not in owners]
    assert len({ex.source for ex in remaining}) == extra
    again = k_pairs(pool, k, n_buckets, derive_rng(seed, "qg", "de", k))
    assert [[ex.id for ex in b] for b in again] == [[ex.id for ex in b] for b in buckets]


@settings(max_examples=30, deadline=None)
@given(k=st.sampled_from([1, 2, 4]), n_buckets=st.integers(1, 10),
       short=st.integers(1, 5), seed=st.integers(0, 10**6))
def test_k_pairs_refuses_too_few_sources(k, n_buckets, short, seed):
    n_sources = max(k * n_buckets - short, 0)
    pool = pool_of(n_sources, [3], seed)
    with pytest.raises(FsxltError, match=f"need {k * n_buckets} sources, the data has "
                                         f"{n_sources}"):
        k_pairs(pool, k, n_buckets, derive_rng(seed))


def test_an_encoder_refuses_a_generation_task_in_one_line(tmp_path):
    from fsxlt.models.encoding import Featurizer
    from tests.train_fixtures import make_tokenizer

    with pytest.raises(FsxltError, match="task ntg generates text, which an encoder does not"):
        Featurizer(make_tokenizer(tmp_path), get_task("ntg"))
