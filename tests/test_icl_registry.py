"""Every built-in task that in-context learning can score has prompts (an ``icl`` section)
whose label words cover each label, distinct per language, and whose templates fill."""

from __future__ import annotations

import pytest

from fsxlt.data import TextExample
from fsxlt.errors import FsxltError
from fsxlt.icl.plan import check_task
from fsxlt.synthetic.benchmark import TASKS as SYNTHETIC_TASKS
from fsxlt.tasks import TaskSpec, builtin_tasks, get_task
from fsxlt.tasks.prompts import PromptSettings, render
from tests.icl_fixtures import write_task_yaml

# the tasks whose sections this file was written for (a floor: a new task joins by itself)
KNOWN_SCORABLE = {"xnli", "pawsx", "eprstmt", "bustm", "ocnli", "csl", "chid", "cluewsc",
                  "csldcp", "iflytek", "tnews", "marc", "mldoc", "nc", "qadsm", "qam"}
NEW_SECTIONS = ("cluewsc", "csldcp", "iflytek", "tnews", "marc", "mldoc", "nc", "qadsm", "qam")


def scorable_tasks() -> list[str]:
    """Built-in classification and multiple-choice tasks, neither synthetic nor ranking."""
    return sorted(name for name, spec in builtin_tasks().items()
                  if spec.kind in ("classification", "multiple_choice")
                  and name not in SYNTHETIC_TASKS and not spec.is_ranking)


def prompt_problems(spec: TaskSpec) -> list[str]:
    """What is wrong with a task's prompts, one line each (empty: nothing)."""
    icl = spec.icl
    if icl is None:
        return [f"{spec.name}: no icl section"]
    problems = [f"{spec.name}: prompts in {lang}, not a language of the task"
                for lang in sorted(set(icl.templates) - set(spec.languages) - {"en"})]
    if set(icl.instructions) != set(icl.templates):
        problems.append(f"{spec.name}: instructions in {sorted(icl.instructions)}, "
                        f"templates in {sorted(icl.templates)}")
    if spec.is_multiple_choice:
        return problems + ([f"{spec.name}: label words for candidates"] if icl.label_words
                           else [])
    if set(icl.label_words) != set(icl.templates):
        problems.append(f"{spec.name}: label words in {sorted(icl.label_words)}, "
                        f"templates in {sorted(icl.templates)}")
    for lang, words in icl.label_words.items():
        if set(words) != set(spec.labels) or not all(w.strip() for w in words.values()):
            problems.append(f"{spec.name}: {lang} words do not name every label once")
        if len(set(words.values())) != len(words):
            problems.append(f"{spec.name}: {lang} words are not distinct")
    return problems


def test_the_scorable_tasks_are_found():
    assert set(scorable_tasks()) >= KNOWN_SCORABLE
    assert "wpr" not in scorable_tasks() and "synth-topic" not in scorable_tasks()


@pytest.mark.parametrize("name", scorable_tasks())
def test_every_scorable_task_has_complete_prompts(name):
    spec = get_task(name)
    assert spec.icl is not None, f"{name}: no icl section"
    assert prompt_problems(spec) == []
    check_task(spec)  # what fsxlt icl checks before it runs


@pytest.mark.parametrize(("changes", "problem"), [
    ({"icl": None}, "no icl section"),
    ({"label_words": {"en": {"0": "no", "1": "yes"}}}, "label words in ['en'], templates"),
    ({"instruction": {"en": "Answer yes or no."}}, "instructions in ['en'], templates"),
])
def test_incomplete_prompts_are_caught(tmp_path, changes, problem):
    spec = get_task(write_task_yaml(tmp_path / "qam.yaml", base="qam", **changes))
    assert any(problem in line for line in prompt_problems(spec)), prompt_problems(spec)


def test_words_that_are_not_distinct_are_refused_when_the_yaml_is_read(tmp_path):
    """Two labels with one word never reach the registry's checks: the task YAML itself is
    refused, naming both labels and the word (issue 41, case 1)."""
    path = write_task_yaml(tmp_path / "qam.yaml", base="qam",
                           label_words={"en": {"0": "yes", "1": "yes"}})
    with pytest.raises(FsxltError, match="labels 0 and 1 have the same word 'yes'"):
        get_task(path)


def test_a_ranking_task_has_no_prompts_and_is_refused():
    spec = get_task("wpr")
    assert spec.is_ranking and spec.icl is None
    with pytest.raises(FsxltError, match="a ranking task"):
        check_task(spec)


def _example(spec: TaskSpec, tag: str, label: str) -> TextExample:
    text_b = f"second {tag}" if spec.input == "pair" else None
    return TextExample(tag, f"first {tag}", text_b, label)


@pytest.mark.parametrize("name", NEW_SECTIONS)
def test_each_language_renders_a_filled_prompt(name):
    spec = get_task(name)
    shot = _example(spec, "shot", spec.labels[-1])
    query = _example(spec, "query", spec.labels[0])
    for lang in spec.icl.templates:
        text = render(spec.icl, spec.labels, PromptSettings("target", "target"), lang,
                      [shot], [query])
        words = spec.icl.label_words[lang]
        assert text.prefix.startswith(spec.icl.instructions[lang] + "\n\n")
        assert "first shot" in text.prefix and words[spec.labels[-1]] in text.prefix
        assert "first query" in text.queries[0]
        assert ("second query" in text.queries[0]) == (spec.input == "pair")
        assert "{" not in text.prefix + text.queries[0]
        continuations = text.continuations[0]
        assert [c.strip() for c in continuations] == [words[label] for label in spec.labels]
        assert len(set(continuations)) == len(spec.labels)
