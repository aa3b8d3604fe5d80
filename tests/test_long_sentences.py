"""How training rows treat a sentence longer than ``max_seq_length`` (issue 35).

``long_sentences`` is a protocol setting: ``truncate`` (the study's and XTREME's,
the default) or ``windows`` (every window a training row; tagging only), for
source-training and adapting alike. It is recorded in the checkpoint, in the
run identity when it is not the default, and in every tagging record together
with the start's setting; ``fsxlt report`` names the cells that mix them. The
numerics of both settings are pinned in ``tests/test_numerics_pin.py``.
"""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from fsxlt.cli import run_app
from fsxlt.data import TaggedSentence
from fsxlt.errors import FsxltError
from fsxlt.execution import adapt_plan, expand, parse_config
from fsxlt.fileio import atomic_write_json
from fsxlt.models.encoding import Featurizer, check_long_sentences
from fsxlt.report import load_records, mixed_long_sentences
from fsxlt.report.records import record_long_sentences
from fsxlt.study.runs import RUN_FORMAT
from fsxlt.tasks import get_task
from fsxlt.training.checkpoint import start_long_sentences
from fsxlt.training.protocol import Protocol
from tests.sweep_fixtures import build_study, sweep_config
from tests.test_protocol import DEFAULT_HASHES, adapt_runs
from tests.train_fixtures import (
    FILLER,
    ORGS,
    PERSONS,
    make_tokenizer,
    ner_data,
    write_bucket_set,
    write_conll,
)

PANX = get_task("panx")
TAGS = list(PANX.labels)


def random_sentence(rng: random.Random, index: int) -> TaggedSentence:
    """1 to 40 words, some of several wordpieces, so that some rows overflow."""
    words = [rng.choice(FILLER + PERSONS + ORGS + ["unbelievable", "newtown"])
             for _ in range(rng.randint(1, 40))]
    return TaggedSentence(f"rand:{index}", tuple(words),
                          tuple(rng.choice(TAGS) for _ in words))


@pytest.fixture(scope="module")
def featurizer(tmp_path_factory) -> Featurizer:
    return Featurizer(make_tokenizer(tmp_path_factory.mktemp("tok")), PANX, max_seq_length=12)


@pytest.mark.parametrize("seed", range(20))
def test_truncating_keeps_the_first_window_of_every_sentence(featurizer, seed):
    rng = random.Random(seed)
    sentences = [random_sentence(rng, i) for i in range(12)]
    truncated = featurizer.training_rows(sentences, "truncate").rows
    windows = featurizer.training_rows(sentences, "windows").rows
    assert [row.example for row in truncated] == list(range(len(sentences)))
    assert [r.words for r in windows] == [r.words for r in featurizer.encode(
        sentences, windows=True).rows]
    for index, row in enumerate(truncated):
        first = next(r for r in windows if r.example == index)
        assert (row.input_ids, row.labels, row.words) == (first.input_ids, first.labels,
                                                          first.words)
        assert len(row.input_ids) <= featurizer.max_len
        assert row.words == list(range(len(row.words)))  # a prefix of whole words
        covered = [w for r in windows if r.example == index for w in r.words]
        assert covered == list(range(len(sentences[index].tokens)))  # every word, once
    assert len(windows) > len(truncated)  # some sentences overflow: the case in question


def test_the_setting_is_checked():
    assert check_long_sentences("windows", PANX) == "windows"
    with pytest.raises(FsxltError, match="one of truncate, windows, got 'cut'"):
        check_long_sentences("cut", PANX)
    with pytest.raises(FsxltError, match="windows is for tagging tasks; xnli"):
        check_long_sentences("windows", get_task("xnli"))
    # issue 41, case 13: QA was refused as if its inputs were truncated; its windows are its own
    with pytest.raises(FsxltError, match="training rows of tagging tasks; xquad is extractive "
                       "QA, which always cuts a long paragraph into overlapping windows"):
        check_long_sentences("windows", get_task("xquad"))
    with pytest.raises(FsxltError, match="long_sentences must be one of"):
        Protocol(long_sentences="all")
    assert Protocol(long_sentences="windows").changes() == {"long_sentences": "windows"}
    assert Protocol().changes() == {} and Protocol(long_sentences="truncate").is_default


def test_a_checkpoint_says_how_it_was_trained():
    assert start_long_sentences({"long_sentences": "windows"}, PANX) == "windows"
    assert start_long_sentences({"long_sentences": "truncate"}, PANX) == "truncate"
    # fsxlt from 4acc7b3 to 0.2.0 trained tagging starts on windows without a word
    assert start_long_sentences({}, PANX) == "unrecorded"
    assert start_long_sentences({}, get_task("xnli")) == "truncate"


def panx_runs(tmp_path: Path, **kwargs):
    data = ner_data(20, seed=3)
    directory = write_bucket_set(tmp_path / "b", "panx", "de", 1, [data[:3], data[3:6]], TAGS)
    dev = write_conll(tmp_path / "dev.tsv", data[6:12])
    test = write_conll(tmp_path / "test.tsv", data[12:20])
    return adapt_plan("panx", "de", directory, tmp_path / "runs",
                      start="bert-base-multilingual-cased", dev=dev, test=test, lrs=[1e-4],
                      max_epochs=3, patience=2, **kwargs)


def test_windows_enter_the_identity_and_truncate_keeps_it(tmp_path):
    plain = panx_runs(tmp_path)
    explicit = panx_runs(tmp_path, long_sentences="truncate")
    windows = panx_runs(tmp_path, long_sentences="windows")
    assert [r.config_hash for r in explicit] == [r.config_hash for r in plain]
    assert "long_sentences" not in plain[0].identity and plain[0].long_sentences == "truncate"
    assert windows[0].identity["long_sentences"] == "windows"
    assert windows[0].long_sentences == "windows"
    assert not {r.config_hash for r in windows} & {r.config_hash for r in plain}
    assert windows[0].record_path == plain[0].record_path  # one arm: write-once decides
    assert [r.config_hash for r in adapt_runs(tmp_path / "x", long_sentences=None)] == \
        DEFAULT_HASHES
    with pytest.raises(FsxltError, match="--long-sentences windows is for tagging tasks"):
        adapt_runs(tmp_path / "y", long_sentences="windows")


@pytest.fixture(scope="module")
def study(tmp_path_factory):
    return build_study(tmp_path_factory.mktemp("study"))


@pytest.mark.parametrize("where", ["top", "task", "no_source"])
def test_a_sweep_refuses_windows_for_classification(study, tmp_path, where):
    config = sweep_config(study, tmp_path / "runs")
    if where == "top":
        config["long_sentences"] = "windows"
    elif where == "task":
        config["tasks"]["xnli"]["long_sentences"] = "windows"
    else:
        config["no_source_training"] = {"encoder": "bert-base-multilingual-cased",
                                        "long_sentences": "windows"}
    with pytest.raises(FsxltError, match="long_sentences windows is for tagging tasks"):
        parse_config(config)
    config = sweep_config(study, tmp_path / "runs", long_sentences="truncate")
    runs = expand(parse_config(config)).runs
    assert {r.long_sentences for r in runs} == {"truncate"}
    assert not any("long_sentences" in r.identity for r in runs)


def test_a_sweep_takes_the_setting_per_task(tmp_path):
    config = {"out": str(tmp_path / "runs"), "start": "bert-base-multilingual-cased",
              "long_sentences": "windows", "tasks": {"panx": {"languages": ["de"], "k": [1]},
                                                     "udpos": {"long_sentences": "truncate",
                                                               "languages": ["de"]}}}
    plans = {plan.task: plan for plan in parse_config(config).tasks}
    assert (plans["panx"].long_sentences, plans["udpos"].long_sentences) == \
        ("windows", "truncate")
    config["long_sentences"] = "halves"
    with pytest.raises(FsxltError, match="long_sentences must be one of truncate, windows"):
        parse_config(config)


def test_commands_refuse_a_bad_setting_in_one_line(study, tmp_path, capsys):
    argv = ["source-train", "--task", "xnli", "--out", str(tmp_path / "ckpt"),
            "--long-sentences", "windows", "--train", str(tmp_path / "missing.tsv")]
    assert run_app(argv) != 0
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "--long-sentences windows is for tagging tasks" in err
    argv = ["adapt", "--task", "xnli", "--lang", "de", "--bucket",
            str(study["buckets"] / "xnli/de/k1"), "--out", str(tmp_path / "runs"),
            "--long-sentences", "sometimes"]
    assert run_app(argv) != 0
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "--long-sentences must be one of" in err
    assert not (tmp_path / "ckpt").exists() and not (tmp_path / "runs").exists()


def tagging_record(index: int, facts: dict | None) -> dict:
    record = {"format": RUN_FORMAT, "status": "ok", "task": "panx", "language": "de", "k": 1,
              "method": "full", "metric": "f1", "bucket": {"index": index, "k": 1},
              "model": {"source_training": True}, "selected_lr": 1e-5, "runs": [],
              "best_epoch": 1, "dev": {"score": 0.5, "n_words": 40}, "dev_score": 0.5,
              "test": {"score": 0.4, "n_words": 80}, "test_score": 0.4}
    if facts is not None:
        record["long_sentences"] = facts
    return record


def test_the_record_names_both_stages():
    assert record_long_sentences(tagging_record(0, {"source": "windows", "adapt": "truncate"})) \
        == "source windows, adapt truncate"
    assert record_long_sentences(tagging_record(0, {"adapt": "windows"})) == "adapt windows"
    assert record_long_sentences(tagging_record(0, None)) == "not recorded"
    classification = {"dev": {"score": 0.5, "n": 10}, "test": {"score": 0.4, "n": 20}}
    assert record_long_sentences(classification) == ""


@pytest.mark.parametrize("second, mixed", [
    ({"source": "truncate", "adapt": "truncate"}, False),
    ({"source": "windows", "adapt": "truncate"}, True),
    ({"source": "truncate", "adapt": "windows"}, True),
    (None, True),  # a record of before the setting was recorded
])
def test_report_names_a_cell_that_mixes_them(tmp_path, capsys, second, mixed):
    runs = tmp_path / "runs"
    first = {"source": "truncate", "adapt": "truncate"}
    for index, facts in enumerate([first, first, second]):
        atomic_write_json(runs / f"panx/de/k1/full/{index:02d}.json",
                          tagging_record(index, facts))
    note = mixed_long_sentences(load_records(runs))
    assert (note is not None) == mixed
    assert run_app(["report", str(runs), "--expected-buckets", "3"]) == 0
    err = capsys.readouterr().err
    assert ("panx/de/k1/full mix records whose training rows treated long sentences "
            "differently" in err) == mixed
    if mixed:
        assert "source truncate, adapt truncate" in note
        assert record_long_sentences(tagging_record(2, second)) in note
