"""The test set is never the model-selection set (issue 72, item 2): a test file equal to,
or sharing most examples with, the dev set runs select on is refused in one line for
sweeps, ``fsxlt adapt`` and ``fsxlt lm-adapt``, for sets fsxlt draws, published and
imported sets, and with limits drawn from one file; natural repeats pass."""

from __future__ import annotations

import random
import shutil
from pathlib import Path

import pytest

from fsxlt.cli import run_app
from fsxlt.errors import FsxltError
from fsxlt.sampling.apart import check_apart, shared_examples
from fsxlt.tasks import get_task
from tests.train_fixtures import ner_data, nli_data, write_conll, write_pairs


@pytest.mark.parametrize("seed", range(30))
def test_copies_and_cuts_are_refused_and_natural_repeats_pass(tmp_path, seed):
    rng = random.Random(seed)
    task, name = rng.choice([("panx", "conll"), ("xnli", "pairs")])
    make = ner_data if name == "conll" else nli_data
    write = write_conll if name == "conll" else write_pairs
    dev_examples = make(rng.randint(8, 30), seed=seed)
    dev = write(tmp_path / "dev-de.tsv", dev_examples)
    spec = get_task(task)
    # the dev file under another name: the same bytes
    copy = tmp_path / "test-de.tsv"
    shutil.copy(dev, copy)
    with pytest.raises(FsxltError, match=r"test-de.tsv: the test file is the dev set runs "
                       r"select on \(.*dev-de.tsv: the same sha256\)"):
        check_apart(dev, copy, spec, "de")
    # a cut of it, or a shuffle, with at most a few others: half or more shared
    lines = rng.sample(dev_examples, k=max(1, len(dev_examples) // 2 + rng.randint(0, 3)))
    others = make(rng.randint(0, len(lines) - 1) if len(lines) > 1 else 0, seed=seed + 500,
                  source="other")
    cut = write(tmp_path / "cut-de.tsv", lines + others)
    with pytest.raises(FsxltError, match="examples are in the dev set runs select on"):
        check_apart(dev, cut, spec, "de")
    # a test set of its own that repeats a few dev examples, as treebanks do, passes
    own = make(len(dev_examples) + 4, seed=seed + 1000, source="test")
    repeats = rng.sample(dev_examples, k=rng.randint(0, (len(own) - 1) // 2 // 2))
    mixed = write(tmp_path / "own-de.tsv", own + repeats)
    check_apart(dev, mixed, spec, "de")
    read = lambda p: __import__("fsxlt.data", fromlist=["x"]).read_examples(p, spec)  # noqa: E731
    assert shared_examples(read(dev), read(mixed)) >= len(repeats)


def _panx(tmp_path: Path) -> tuple[Path, Path, Path]:
    """PAN-X de files, a set drawn from train, and a placeholder start."""
    data = tmp_path / "panx"
    data.mkdir()
    write_conll(data / "train-de.tsv", ner_data(60, seed=1))
    write_conll(data / "dev-de.tsv", ner_data(20, seed=2))
    shutil.copy(data / "dev-de.tsv", data / "test-de.tsv")  # docs' old smoke test did this
    store = tmp_path / "buckets"
    assert run_app(["sample", "--task", "panx", "--lang", "de", "-k", "1", "--n-buckets", "2",
                    "--data-dir", str(data), "--out", str(store)]) == 0
    start = tmp_path / "ckpt"
    start.mkdir()
    (start / "config.json").write_text("{}")
    (start / "tokenizer_config.json").write_text("{}")  # a model folder's
    return data, store, start


@pytest.mark.parametrize("limits", [{}, {"dev_limit": 5, "test_limit": 5}])
def test_a_sweep_whose_test_file_is_its_dev_file_is_refused(tmp_path, capsys, limits):
    import yaml

    data, store, start = _panx(tmp_path)
    config = tmp_path / "sweep.yaml"
    config.write_text(yaml.safe_dump({
        "name": "apart", "out": str(tmp_path / "runs"), "buckets": str(store),
        "data_dir": str(data), "start": str(start), "n_buckets": 2, **limits,
        "tasks": {"panx": {"languages": ["de"], "k": [1]}}}))
    capsys.readouterr()
    assert run_app(["sweep", str(config), "--workers", "0"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "test-de.tsv: the test file is the dev set runs select on" \
        in err and "give a test file of its own" in err
    assert not (tmp_path / "runs").exists()


def test_fsxlt_adapt_refuses_a_test_that_is_its_dev(tmp_path, capsys):
    data, store, start = _panx(tmp_path)
    (data / "test-de.tsv").unlink()
    capsys.readouterr()
    assert run_app(["adapt", "--task", "panx", "--lang", "de", "--bucket",
                    str(store / "panx" / "de" / "k1"), "--from", str(start), "--dev",
                    str(data / "dev-de.tsv"), "--test", str(data / "dev-de.tsv"), "--out",
                    str(tmp_path / "runs")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "the test file is the dev set runs select on" in err
    assert not (tmp_path / "runs").exists()


def test_a_set_drawn_from_dev_refuses_the_dev_file_as_test(tmp_path, capsys):
    """XNLI: runs select on the remaining dev set (a file of the set); the dev file it was
    drawn from, given as the test file, holds it whole."""
    from fsxlt.execution import expand, parse_config
    from fsxlt.execution.spec import check_eval_sets

    data = tmp_path / "xnli"
    data.mkdir()
    write_pairs(data / "dev-de.tsv", nli_data(60, seed=3))
    store = tmp_path / "buckets"
    assert run_app(["sample", "--task", "xnli", "--lang", "de", "-k", "1", "--n-buckets", "2",
                    "--data-dir", str(data), "--out", str(store)]) == 0
    other = tmp_path / "other"
    other.mkdir()
    shutil.copy(data / "dev-de.tsv", other / "test-de.tsv")  # under another name and place
    start = tmp_path / "ckpt"
    start.mkdir()
    (start / "config.json").write_text("{}")
    (start / "tokenizer_config.json").write_text("{}")  # a model folder's
    config = {"name": "x", "out": str(tmp_path / "runs"), "buckets": str(store),
              "data_dir": str(other), "start": str(start), "n_buckets": 2,
              "tasks": {"xnli": {"languages": ["de"], "k": [1]}}}
    with pytest.raises(FsxltError, match="is the file the buckets of .* were drawn from"):
        expand(parse_config(config))  # the bucket source itself: refused as before
    # a remaining dev set against a test file that holds most of it, not byte-equal
    write_pairs(other / "test-de.tsv", nli_data(60, seed=3)[5:])
    runs = expand(parse_config(config)).runs
    with pytest.raises(FsxltError, match=r"of the test file's 55 examples are in the dev set "
                       r"runs select on \(.*dev-remaining.jsonl"):
        check_eval_sets(runs)
    write_pairs(other / "test-de.tsv", nli_data(30, seed=99, source="test"))
    check_eval_sets(expand(parse_config(config)).runs)  # a test set of its own


def test_lm_adapt_refuses_a_test_that_is_its_dev(tmp_path):
    from fsxlt.icl.tuning_plan import LmSettings, lm_plan

    data = tmp_path / "xnli"
    data.mkdir()
    write_pairs(data / "dev-de.tsv", nli_data(40, seed=3))
    store = tmp_path / "buckets"
    assert run_app(["sample", "--task", "xnli", "--lang", "de", "-k", "1", "--n-buckets", "1",
                    "--data-dir", str(data), "--out", str(store)]) == 0
    own_dev = write_pairs(tmp_path / "mine.tsv", nli_data(20, seed=8, source="mine"))
    copy = tmp_path / "copy.tsv"
    shutil.copy(own_dev, copy)
    with pytest.raises(FsxltError, match="copy.tsv: --test is --dev runs select on"):
        lm_plan("xnli", "de", store / "xnli" / "de" / "k1", tmp_path / "runs",
                LmSettings(model=str(tmp_path)), test=copy, dev=own_dev)
