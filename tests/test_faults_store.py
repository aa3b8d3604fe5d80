"""The bucket store is write-once: same files are left alone, other files are refused.

Every writer of bucket sets (sample, select, import-published,
import-fewclue) goes through :func:`fsxlt.sampling.store.write_sets`, which
checks every set of the command against what its directory holds before
writing anything, and claims the root as a bucket store
(:mod:`fsxlt.study.directories`) so that a runs directory is never written into.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from fsxlt.cli import run_app
from fsxlt.sampling.store import find_sets
from fsxlt.study.directories import MARKER
from tests.conftest import write_ner
from tests.fewclue_fixtures import write_task
from tests.train_fixtures import nli_data, write_pairs

RECORD = {"format": "fsxlt-adapt-run/1", "status": "ok", "test_score": 50.0}


def snapshot(root: Path) -> dict[str, bytes]:
    """Every entry below ``root`` with its bytes (directories as empty entries)."""
    return {p.relative_to(root).as_posix(): b"" if p.is_dir() else p.read_bytes()
            for p in sorted(root.rglob("*"))}


def one_line(status: int, err: str, *parts: str) -> str:
    """The one-line error contract: exit 2, one line on stderr holding ``parts``."""
    lines = err.splitlines()
    assert status == 2 and len(lines) == 1 and "Traceback" not in err, err
    assert all(part in lines[0] for part in parts), lines[0]
    return lines[0]


@pytest.fixture
def ner(tmp_path: Path) -> Path:
    (tmp_path / "data").mkdir()
    return write_ner(tmp_path / "data" / "train-de.tsv", 120, seed=1)


def sample(ner: Path, out: Path, seed: str, *extra: str) -> int:
    return run_app(["sample", "-t", "panx", "-l", "de", "-k", "1", "--n-buckets", "3",
                    "--data", str(ner), "--seed", seed, "--out", str(out), *extra])


def runs_tree(root: Path, marked: bool) -> Path:
    """A runs directory holding one record at panx/de/k1/fc/00.json."""
    record = root / "panx" / "de" / "k1" / "fc" / "00.json"
    record.parent.mkdir(parents=True)
    record.write_text(json.dumps(RECORD))
    if marked:
        (root / MARKER).write_text(json.dumps({"kind": "runs"}))
    return record


# --------------------------------------------------------------------------- runs directories

@pytest.mark.parametrize("marked", [True, False], ids=["marked", "legacy"])
def test_sample_into_a_runs_directory_is_refused_and_its_records_stay(marked, ner, tmp_path,
                                                                      capsys):
    runs = tmp_path / "runs"
    record = runs_tree(runs, marked)
    before = snapshot(runs)
    status = sample(ner, runs, "0", "--replace")
    one_line(status, capsys.readouterr().err, str(runs), "runs")
    assert snapshot(runs) == before and record.is_file()


def test_sample_inside_a_runs_directory_is_refused(ner, tmp_path, capsys):
    runs = tmp_path / "runs"
    runs_tree(runs, marked=True)
    before = snapshot(runs)
    one_line(sample(ner, runs / "buckets", "0"), capsys.readouterr().err,
             "lies inside", "runs directory")
    assert snapshot(runs) == before


def test_a_set_directory_holding_other_files_is_never_deleted(ner, tmp_path, capsys):
    """Unmarked, with files no reader knows: the set-level rule still refuses, even --replace."""
    out = tmp_path / "out"
    stray = out / "panx" / "de" / "k1" / "fc" / "00.json"
    stray.parent.mkdir(parents=True)
    stray.write_text('{"score": 1}')
    for extra in ((), ("--replace",)):
        one_line(sample(ner, out, "0", *extra), capsys.readouterr().err,
                 str(out / "panx" / "de" / "k1"), "fc/", "no bucket set")
    assert snapshot(out) == {"panx": b"", "panx/de": b"", "panx/de/k1": b"",
                             "panx/de/k1/fc": b"", "panx/de/k1/fc/00.json": b'{"score": 1}'}


def test_replace_keeps_a_set_beside_foreign_files(ner, tmp_path, capsys):
    out = tmp_path / "out"
    assert sample(ner, out, "0") == 0
    (out / "panx" / "de" / "k1" / "notes.txt").write_text("mine")
    before = snapshot(out)
    capsys.readouterr()
    one_line(sample(ner, out, "1", "--replace"), capsys.readouterr().err,
             "notes.txt besides its bucket set", "nothing was written")
    assert snapshot(out) == before


# --------------------------------------------------------------------------- the write rule

def test_resampling_with_the_same_seed_is_unchanged(ner, tmp_path, capsys):
    out = tmp_path / "out"
    assert sample(ner, out, "0") == 0
    assert json.loads((out / MARKER).read_text()) == {"kind": "buckets"}
    before = snapshot(out)
    inode = (out / "panx" / "de" / "k1").stat().st_ino
    capsys.readouterr()
    assert sample(ner, out, "0") == 0
    captured = capsys.readouterr()
    assert "(unchanged)" in captured.out and "1 unchanged" in captured.out, captured.out
    assert captured.err == ""
    assert snapshot(out) == before
    assert (out / "panx" / "de" / "k1").stat().st_ino == inode  # not even rewritten
    # the marker is no set: the store's walkers see only the set
    assert find_sets(out) == [out / "panx" / "de" / "k1"]
    assert run_app(["buckets", "check", str(out)]) == 0
    assert "1 bucket sets checked: 1 ok" in capsys.readouterr().out


def test_another_seed_is_refused_in_one_line_naming_the_set_and_the_seed(ner, tmp_path, capsys):
    out = tmp_path / "out"
    assert sample(ner, out, "0") == 0
    before = snapshot(out)
    capsys.readouterr()
    line = one_line(sample(ner, out, "7"), capsys.readouterr().err,
                    str(out / "panx" / "de" / "k1"), "seed: 0 -> 7", "--replace")
    assert "nothing was written" in line
    assert snapshot(out) == before


def test_replace_replaces_and_says_what_it_replaced(ner, tmp_path, capsys):
    out = tmp_path / "out"
    assert sample(ner, out, "0") == 0
    assert sample(ner, tmp_path / "fresh", "7") == 0
    capsys.readouterr()
    assert sample(ner, out, "7", "--replace") == 0
    captured = capsys.readouterr()
    assert captured.err.splitlines() == [f"replaced {out / 'panx' / 'de' / 'k1'} (seed: 0 -> 7)"]
    assert "(replaced)" in captured.out and "1 replaced" in captured.out
    assert snapshot(out) == snapshot(tmp_path / "fresh")


def test_every_set_is_checked_before_any_is_written(ner, tmp_path, capsys):
    """k2 would be new, k1 differs: the refusal comes before k2 is written."""
    out = tmp_path / "out"
    assert sample(ner, out, "0") == 0
    before = snapshot(out)
    capsys.readouterr()
    status = run_app(["sample", "-t", "panx", "-l", "de", "-k", "2", "-k", "1", "--n-buckets",
                      "3", "--data", str(ner), "--seed", "5", "--out", str(out)])
    one_line(status, capsys.readouterr().err, "k1", "seed: 0 -> 5")
    assert snapshot(out) == before


def test_a_refusal_of_several_sets_is_one_line_that_counts_the_others(ner, tmp_path, capsys):
    out = tmp_path / "out"
    argv = ["sample", "-t", "panx", "-l", "de", "-k", "1", "-k", "2", "-k", "4", "--n-buckets",
            "3", "--data", str(ner), "--out", str(out), "--seed"]
    assert run_app([*argv, "0"]) == 0
    before = snapshot(out)
    capsys.readouterr()
    one_line(run_app([*argv, "1"]), capsys.readouterr().err, "k1", "seed: 0 -> 1",
             "(2 more sets refused)")
    assert snapshot(out) == before


def test_a_refused_write_leaves_no_marker(ner, tmp_path, capsys):
    """A store written before markers existed: a refused command does not mark it."""
    out = tmp_path / "out"
    assert sample(ner, out, "0") == 0
    (out / MARKER).unlink()
    before = snapshot(out)
    capsys.readouterr()
    one_line(sample(ner, out, "3"), capsys.readouterr().err, "seed: 0 -> 3")
    assert snapshot(out) == before and not (out / MARKER).exists()


# --------------------------------------------------------------------------- other writers

def test_reimporting_an_edited_fewclue_copy_is_refused(tmp_path, capsys):
    src = tmp_path / "datasets"
    write_task(src, "eprstmt")
    out = tmp_path / "buckets"
    argv = ["buckets", "import-fewclue", str(src), "--out", str(out), "-t", "eprstmt"]
    assert run_app(argv) == 0
    capsys.readouterr()
    assert run_app(argv) == 0
    assert "(unchanged)" in capsys.readouterr().out
    train = src / "eprstmt" / "train_2.json"
    rows = train.read_text(encoding="utf-8").splitlines()
    first = json.loads(rows[0])
    rows[0] = json.dumps(dict(first, sentence=first["sentence"] + "天"), ensure_ascii=False)
    train.write_text("\n".join(rows) + "\n", encoding="utf-8")
    before = snapshot(out)
    one_line(run_app(argv), capsys.readouterr().err, str(out / "eprstmt" / "zh"),
             "files differ: 02.json")
    assert snapshot(out) == before


def test_select_with_another_seed_over_a_store_is_refused(tmp_path, capsys):
    write_pairs(tmp_path / "dev-de.tsv", nli_data(60, 1))
    out = tmp_path / "strategies"

    def select(seed: str) -> int:
        return run_app(["select", "--task", "xnli", "--lang", "de", "--data-dir",
                        str(tmp_path), "-s", "random", "-k", "1", "--n-pools", "3",
                        "--pool-size", "20", "--seed", seed, "--out", str(out)])

    assert select("0") == 0
    assert json.loads((out / MARKER).read_text()) == {"kind": "buckets"}
    before = snapshot(out)
    capsys.readouterr()
    assert select("0") == 0
    assert "1 unchanged" in capsys.readouterr().out
    one_line(select("7"), capsys.readouterr().err, str(out / "random" / "xnli" / "de" / "k1"),
             "seed: 0 -> 7")
    assert snapshot(out) == before


def test_two_published_folders_for_one_set_are_refused(tmp_path, capsys):
    """``german`` and ``de`` both become xnli/de/k1: one command, two sets, one directory."""
    src = tmp_path / "published"
    for folder, text in (("german", "a"), ("de", "b")):
        bucket = src / "xnli" / "1-shots" / folder / "0-th"
        bucket.mkdir(parents=True)
        sampled = {lab: [{"uid": f"{folder}-{lab}", "text_a": text, "text_b": "b",
                          "label": lab}] for lab in ("entailment", "neutral", "contradiction")}
        (bucket / "sampled.json").write_text(json.dumps(sampled))
    out = tmp_path / "buckets"
    status = run_app(["buckets", "import-published", str(src), "--out", str(out)])
    one_line(status, capsys.readouterr().err, str(out / "xnli" / "de" / "k1"),
             "two different bucket sets")
    assert not out.exists()
    shutil.rmtree(src / "xnli" / "1-shots" / "german")
    assert run_app(["buckets", "import-published", str(src), "--out", str(out)]) == 0


def test_two_samplers_on_one_store_never_both_write(ner, tmp_path, capsys):
    """One lock per output directory (issue 31, mechanism 3): under fsxlt 0.2.0 two
    ``fsxlt sample --out st`` with other seeds, started together, both said "1 new" and
    one finished set silently replaced the other. The first here stops just before it
    renames its set into place, holding the store's writer lock; the second is refused
    in one line naming it, and the store ends with the first one's set."""
    from tests.test_faults import wait_until_held, with_fault

    out = tmp_path / "out"
    gate = tmp_path / "go"
    argv = ["sample", "-t", "panx", "-l", "de", "-k", "1", "--n-buckets", "3", "--data",
            str(ner), "--seed", "1", "--out", str(out)]
    first = with_fault("os.replace", 2, f"wait:{gate}", *argv, wait=False)
    try:
        wait_until_held(first, gate)
        before = snapshot(out)
        capsys.readouterr()
        one_line(sample(ner, out, "2"), capsys.readouterr().err,
                 f"{out}: another fsxlt command is writing this bucket store (pid {first.pid}")
        assert snapshot(out) == before
    finally:
        gate.write_text("")
        stdout, stderr = first.communicate(timeout=300)
    assert first.returncode == 0, stderr
    assert "new" in stdout, stdout
    assert json.loads((out / "panx/de/k1/manifest.json").read_text())["seed"] == 1
    one_line(sample(ner, out, "2"), capsys.readouterr().err, "seed: 1 -> 2")


def test_a_finished_store_names_no_machine(ner, tmp_path):
    """Issue 41, case 15: the writer lock kept its last holder's pid and host name, so a
    published store carried the host that sampled it. It is emptied on release."""
    import socket

    out = tmp_path / "out"
    assert sample(ner, out, "1") == 0
    lock = out / ".fsxlt-writer.lock"
    assert lock.is_file() and lock.read_bytes() == b""
    host = socket.gethostname().encode()
    assert not any(host in p.read_bytes() for p in out.rglob("*") if p.is_file())


def test_a_link_into_a_runs_directory_is_refused_as_the_directory_it_points_into(
        ner, tmp_path, capsys):
    """Paths are resolved before the rules (issue 31, mechanism 5): fsxlt 0.2.0 wrote a
    bucket store through a symbolic link into a runs directory."""
    runs = tmp_path / "runs"
    runs_tree(runs, marked=True)
    (runs / "inner").mkdir()
    link = tmp_path / "link"
    link.symlink_to(runs / "inner")
    before = snapshot(runs)
    one_line(sample(ner, link, "0"), capsys.readouterr().err,
             f"{link}: --out (a link to {(runs / 'inner').resolve()}) lies inside "
             f"{runs.resolve()}, which is a runs directory")
    assert snapshot(runs) == before
