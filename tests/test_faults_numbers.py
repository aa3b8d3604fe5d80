"""One check for every number (issue 31, mechanism 7).

Every numeric command-line option and every numeric key of a sweep config goes
through :func:`fsxlt.config_checks.number_problem`: NaN, infinity and negative
values are one line and a non-zero exit status, before anything is written.
The options are found from each command's ``--help`` (every ``<int>`` and
``<float>`` option of every command), so a new command or option is covered
without a line here; fsxlt 0.2.0 accepted ``--lr inf``, ``--seed -1`` (a
traceback later) and ``lrs: [.nan]``, and gave tracebacks for ``seed: .nan``,
``n_buckets: .nan`` and ``max_epochs: .inf``.
"""

from __future__ import annotations

import contextlib
import io
import math
import re
from pathlib import Path

import pytest

from fsxlt.cli import NUMERIC_OPTIONS, run_app
from fsxlt.config_checks import number, number_problem
from fsxlt.errors import FsxltError
from fsxlt.execution import parse_config
from tests.sweep_fixtures import write_config

OPTION = re.compile(r"^\s+(?:-\w, )?(--[\w-]+)(?:, -\w)?\s+"
                    r"<(?:list\[)?(int|float)\]?(?: range)?>")  # <int>, <int range>, <list[float]>
COMMAND = re.compile(r"^\s{2}([a-z][\w-]*)\s")
BAD = ("nan", "inf", "-inf", "-1")


def help_text(argv: list[str]) -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert run_app([*argv, "--help"]) == 0
    return out.getvalue()


def commands() -> list[list[str]]:
    """Every command of the CLI, groups' subcommands included, as the argv that names it."""
    found, todo = [], [[]]
    while todo:
        argv = todo.pop()
        listed = help_text(argv).split("Commands:", 1)
        if len(listed) == 1:
            found.append(argv)
            continue
        todo += [[*argv, match.group(1)] for line in listed[1].splitlines()
                 if (match := COMMAND.match(line))]
    return sorted(found)


@pytest.fixture(scope="module")
def every_numeric_option() -> list[tuple[list[str], str, str]]:
    """(command argv, option, int or float) for every numeric option any --help lists."""
    return [(argv, match.group(1), match.group(2)) for argv in commands()
            for line in help_text(argv).splitlines() if (match := OPTION.match(line))]


def test_help_lists_every_option_the_check_covers(every_numeric_option):
    by_command: dict[str, int] = {}
    for argv, _, _ in every_numeric_option:
        by_command[" ".join(argv)] = by_command.get(" ".join(argv), 0) + 1
    covered: dict[str, int] = {}
    for entry in NUMERIC_OPTIONS:
        command = entry.rsplit(" ", 1)[0]
        covered[command] = covered.get(command, 0) + 1
    assert by_command == covered
    assert len(every_numeric_option) >= 60  # sample, select, sweep, adapt, report, analyze ...


def test_every_numeric_option_refuses_nan_infinity_and_negatives(
        every_numeric_option, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    for argv, option, _kind in every_numeric_option:
        for bad in BAD:
            status = run_app([*argv, option, bad])
            err = capsys.readouterr().err.strip().splitlines()
            what = f"{' '.join(argv)} {option} {bad}"
            assert status == 2, what
            assert option in err[-1], f"{what}: {err}"
            assert err[-1].startswith(("error:", "Error:")), f"{what}: {err}"
            assert not any(tmp_path.iterdir()), f"{what} wrote {list(tmp_path.iterdir())}"


@pytest.mark.parametrize("value, problem", [
    (float("nan"), "must be a finite number, got nan"),
    (float("inf"), "must be a finite number, got inf"),
    (-1, "must be >= 0, got -1"),
    (0, None), (2.5, None),
])
def test_one_rule_for_options_and_keys(value, problem):
    assert number_problem(value, "x", minimum=0) == (problem and f"x {problem}")
    if problem is None:
        assert number(value, "cfg", "x", float, 0) == value
        return
    for kind in (int, float):  # a config key follows the rule an option does
        with pytest.raises(FsxltError, match=f"^cfg: x {problem.split(', got')[0]}"):
            number(value, "cfg", "x", kind, 0)


SWEEP_KEYS = {  # every numeric key of a sweep config, with a valid value
    "n_buckets": 1, "lrs": 1e-5, "seed": 1, "max_epochs": 1, "patience": 1,
    "max_seq_length": 64, "batch_size": 2, "average_last": 2,
    "joint.batch_size": 2, "joint.steps_per_epoch": 2, "joint.target_repeat": 2,
    "no_source_training.lrs": 1e-5, "no_source_training.max_epochs": 2,
    "no_source_training.patience": 2, "no_source_training.batch_size": 2,
    "icl.test_limit": 3, "icl.seed": 0, "icl.batch_size": 2, "tasks.xnli.k": 1,
    "tasks.xnli.seed": 1,
}


def sweep_with(key: str, value, tmp_path: Path) -> dict:
    config = {"out": str(tmp_path / "runs"), "start": "bert-base-multilingual-cased",
              "tasks": {"xnli": {"languages": ["de"], "k": [1]}}}
    section, _, name = key.rpartition(".")
    if section == "joint":
        source = tmp_path / "train-en.tsv"
        source.write_text("a\tb\tentailment\n", encoding="utf-8")
        config.update(regimes=["joint"], joint={"source_train": str(source)})
    elif section == "no_source_training":
        config["no_source_training"] = {"encoder": "bert-base-multilingual-cased"}
    elif section == "icl":
        config["icl"] = {"model": "some-lm"}
    target = config
    for part in section.split(".") if section else []:
        target = target.setdefault(part, {})
    target[name] = value
    return config


def test_the_sweep_keys_are_valid_as_given(tmp_path):
    for key, value in SWEEP_KEYS.items():
        parse_config(sweep_with(key, value, tmp_path))


@pytest.mark.parametrize("key", sorted(SWEEP_KEYS))
@pytest.mark.parametrize("bad", [math.nan, math.inf, -1, [math.nan]])
def test_every_numeric_sweep_key_refuses_nan_infinity_and_negatives(key, bad, tmp_path,
                                                                      capsys):
    config = sweep_with(key, bad, tmp_path)
    with pytest.raises(FsxltError) as caught:
        parse_config(config)
    assert key.rpartition(".")[2] in str(caught.value) and "\n" not in str(caught.value)
    path = write_config(tmp_path / "sweep.yaml", config)
    before = sorted(tmp_path.rglob("*"))
    assert run_app(["sweep", str(path), "--workers", "0"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error:") and "\n" not in err
    assert sorted(tmp_path.rglob("*")) == before
