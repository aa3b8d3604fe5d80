"""What a new user met on the command line (issue 41, case 21): ``fsxlt --version``, the
help's defaults that are the task's, and the progress bar in the summary's units."""

from __future__ import annotations

import re

from fsxlt import __version__
from fsxlt.cli import run_app
from tests.train_fixtures import make_encoder_dir, nli_data, write_pairs


def test_version(capsys):
    assert run_app(["--version"]) == 0
    assert capsys.readouterr().out.strip() == f"fsxlt {__version__}"


def test_the_version_pyproject_and_changelog_agree():
    """Issue 63, item 4: one version, named alike by the command, the package's metadata
    and the newest CHANGELOG.md entry (semantic: MAJOR.MINOR.PATCH)."""
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    project = dict(re.findall(r'^(version) = "([^"]+)"$',
                              (root / "pyproject.toml").read_text(encoding="utf-8"), re.M))
    entries = re.findall(r"^## (\d+\.\d+\.\d+) — (\d{4}-\d{2}-\d{2})$",
                         (root / "CHANGELOG.md").read_text(encoding="utf-8"), re.M)
    assert re.fullmatch(r"\d+\.\d+\.\d+", __version__)
    assert project["version"] == __version__ == entries[0][0]
    numbers = [tuple(int(x) for x in version.split(".")) for version, _ in entries]
    assert numbers == sorted(numbers, reverse=True) and len(set(numbers)) == len(numbers)
    assert [date for _, date in entries] == sorted((d for _, d in entries), reverse=True)


def test_source_train_help_names_the_tasks_own_defaults(capsys):
    assert run_app(["source-train", "--help"]) == 0
    text = " ".join(capsys.readouterr().out.split())
    # extractive QA source-trains 2 epochs of batch 12 (XGLUE's MLQA baseline), not 10 x 32
    assert "--epochs <int> Default: the task's (10; 2 for mlqa, tydiqa, xquad)." in text
    assert "--batch-size <int> Default: the task's (32; 12 for mlqa, tydiqa, xquad)." in text


def test_the_bar_shows_dev_as_the_summary_does(tmp_path, capsys):
    encoder = make_encoder_dir(tmp_path / "enc")
    train = write_pairs(tmp_path / "train-en.tsv", nli_data(24, seed=1))
    dev = write_pairs(tmp_path / "dev-en.tsv", nli_data(9, seed=2))
    test = write_pairs(tmp_path / "test-de.tsv", nli_data(9, seed=3))
    assert run_app(["source-train", "--task", "xnli", "--model", str(encoder), "--train",
                    str(train), "--dev", str(dev), "--target", "de", "--target-test",
                    f"de={test}", "--epochs", "1", "--lr", "1e-3", "--device", "cpu",
                    "--out", str(tmp_path / "ckpt")]) == 0
    captured = capsys.readouterr()
    summary = re.search(r"English dev (\d+\.\d\d)\)", captured.out).group(1)
    shown = re.findall(r"dev=(\d+\.\d+)", captured.err)
    assert shown and shown[-1] == summary, (shown, summary)
    assert "zero-shot test" in captured.err  # the test sets are scored under a bar too


def test_sample_help_names_the_tasks_own_number_of_buckets(capsys):
    """Issue 42, item 5: ``fsxlt sample --help`` said --n-buckets defaults to 40; extractive
    QA's and generation's sets hold 10, FewCLUE's 5 fixed splits."""
    assert run_app(["sample", "--help"]) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "Default: the task's (40;" in text and "10 for mlqa, ntg, qg, tydiqa, xquad" \
        in text.replace("- qg", "-qg")


def _commands(typer_app, prefix=()):
    for command in typer_app.registered_commands:
        yield (*prefix, command.name or command.callback.__name__.replace("_", "-")), \
            command.callback
    for group in typer_app.registered_groups:
        yield from _commands(group.typer_instance, (*prefix, group.name))


def test_every_help_prints_its_examples_as_written(capsys, monkeypatch):
    """Issue 51, item 6: example blocks are not re-wrapped into lines that cannot be copied
    (0.6.0: buckets export --help and import lm-eval --help ran them together)."""
    import inspect

    from fsxlt.cli import app

    monkeypatch.setenv("COLUMNS", "80")
    checked = 0
    for path, callback in _commands(app):
        doc = inspect.cleandoc(callback.__doc__ or "")
        examples = [line.strip() for line in doc.splitlines()
                    if line.startswith("  ") and line.strip().startswith(("fsxlt ", "lm_eval"))]
        if not examples:
            continue
        capsys.readouterr()
        assert run_app([*path, "--help"]) == 0
        shown = [line.strip() for line in capsys.readouterr().out.splitlines()]
        for line in examples:
            assert line in shown, (path, line)
        checked += 1
    assert checked >= 20


def test_off_a_terminal_long_work_prints_plain_progress_lines(capsys, monkeypatch):
    """Issue 51, item 7: a log file shows where a long step is; a quick one prints nothing."""
    from fsxlt.cli import progress

    ticks = iter(range(0, 1000, 3))  # each item takes 3 seconds
    items = list(progress.plain_progress(range(4), "importing", "set",
                                         clock=lambda: next(ticks)))
    assert items == [0, 1, 2, 3]
    lines = capsys.readouterr().err.strip().splitlines()
    assert lines == ["importing: 2/4 sets, 6s", "importing: 4/4 sets, 12s"]
    assert list(progress.plain_progress(range(4), "importing", "set", clock=lambda: 0.0)) \
        == [0, 1, 2, 3]
    assert capsys.readouterr().err == ""
    import sys

    from tqdm.auto import tqdm

    class NoTerminal:  # stderr as a log file is: bar() takes the plain lines, not tqdm
        def isatty(self) -> bool:
            return False

        def write(self, text: str) -> int:
            return len(text)

        def flush(self) -> None:
            pass

    monkeypatch.setattr(sys, "stderr", NoTerminal())
    wrapped = progress.bar("importing", "set")(range(3))
    assert not isinstance(wrapped, tqdm) and list(wrapped) == [0, 1, 2]


def test_a_slow_model_load_says_what_it_loads_and_from_where(capsys, tmp_path):
    """Issue 51, item 7: 0.6.0 printed nothing for minutes while a GGUF file de-quantised."""
    import time

    from fsxlt.icl.model import announced, load_origin

    line = load_origin(str(tmp_path), "model.gguf", {})
    assert str(tmp_path.resolve()) in line and "GGUF file model.gguf" in line
    assert "the hub's org/lm at commit abc" in load_origin("org/lm", None, {"revision": "abc"})
    with announced(line, after=0.01):
        time.sleep(0.3)
    assert capsys.readouterr().err == line + "\n"
    with announced(line, after=5):
        pass
    time.sleep(0.05)
    assert capsys.readouterr().err == ""


def test_save_prompts_needs_save_predictions(tmp_path, capsys):
    assert run_app(["icl", "--task", "xnli", "--lang", "de", "--model", "gpt2", "--out",
                    str(tmp_path / "runs"), "--save-prompts"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--save-prompts writes into the predictions file" in err[0]
    assert not (tmp_path / "runs").exists()
