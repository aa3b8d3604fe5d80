"""``fsxlt buckets check`` checks what a sweep checks (issue 72, item 3): every file of a
set against its manifest, the remaining dev set included; ``--source`` matches examples
by place and content, so the same bytes under another file name pass."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from fsxlt.cli import run_app
from fsxlt.errors import FsxltError
from fsxlt.sampling.check import check_set
from tests.train_fixtures import ner_data, nli_data, write_conll, write_pairs


def _set(tmp_path: Path, task: str) -> tuple[Path, Path]:
    data = tmp_path / "data"
    data.mkdir()
    if task == "xnli":
        source = write_pairs(data / "dev-de.tsv", nli_data(40, seed=3))
    else:
        source = write_conll(data / "train-de.tsv", ner_data(60, seed=1))
        write_conll(data / "dev-de.tsv", ner_data(10, seed=2))
    store = tmp_path / "buckets"
    assert run_app(["sample", "--task", task, "--lang", "de", "-k", "1", "--n-buckets", "3",
                    "--data-dir", str(data), "--out", str(store)]) == 0
    return store / task / "de" / "k1", source


def _alterations(path: Path) -> list[tuple[str, bytes]]:
    """Ways to alter a file: one line fewer, one character changed, a line more."""
    data = path.read_bytes()
    lines = data.splitlines(keepends=True)
    changed = data.replace(b"a", b"b", 1) if b"a" in data else data.replace(b"e", b"f", 1)
    return [("a line removed", b"".join(lines[:-1])), ("a character changed", changed),
            ("a line added", data + lines[0])]


@pytest.mark.parametrize("task", ["xnli", "panx"])
def test_every_file_of_a_set_altered_is_caught(tmp_path, task):
    directory, source = _set(tmp_path, task)
    assert check_set(directory).ok and check_set(directory, source).ok
    files = sorted(p for p in directory.iterdir() if p.name != "manifest.json")
    assert (directory / "dev-remaining.jsonl").is_file() or task == "panx"
    for path in files:
        original = path.read_bytes()
        for what, altered in _alterations(path):
            if altered == original:
                continue
            path.write_bytes(altered)
            try:
                report = check_set(directory)
                assert not report.ok, f"{path.name}: {what} passed"
                assert any(path.name in v.detail or v.kind == "integrity"
                           for v in report.violations), report.violations
            except FsxltError as err:  # unreadable as a set file: one line naming it
                assert path.name in str(err) and "\n" not in str(err)
            finally:
                path.write_bytes(original)
    assert check_set(directory).ok


def test_the_remaining_dev_set_cut_by_one_line_is_named(tmp_path, capsys):
    directory, _source = _set(tmp_path, "xnli")
    remaining = directory / "dev-remaining.jsonl"
    lines = remaining.read_text().splitlines(keepends=True)
    remaining.write_text("".join(lines[:-1]))
    capsys.readouterr()
    assert run_app(["buckets", "check", str(directory)]) == 1
    out = capsys.readouterr()
    assert "dev-remaining.jsonl differs from the hash in the manifest" in out.out + out.err


@pytest.mark.parametrize("task", ["xnli", "panx"])
def test_the_source_under_another_name_is_the_same_source(tmp_path, task):
    directory, source = _set(tmp_path, task)
    renamed = tmp_path / "elsewhere" / f"{task}.de.dev"
    renamed.parent.mkdir()
    shutil.copy(source, renamed)
    report = check_set(directory, renamed)
    assert report.ok, report.violations
    # other content under that name is still caught, by content
    text = renamed.read_text().splitlines(keepends=True)
    renamed.write_text("".join(text[:-3]) if task == "xnli" else "".join(reversed(text[1:]))
                       + "\n")
    assert not check_set(directory, renamed).ok
