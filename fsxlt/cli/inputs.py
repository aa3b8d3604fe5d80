"""Reading a command's data files: one split from a file or a data directory, limited;
source-training's source and target sets."""

from __future__ import annotations

from pathlib import Path

import typer

from fsxlt.data import Example, has_labels, load_split
from fsxlt.data.readings import DEFAULT_READING, Reading
from fsxlt.errors import FsxltError
from fsxlt.tasks import TaskSpec


def read_split(
    task: TaskSpec, lang: str, split: str, path: Path | None, data_dir: Path | None,
    reading: Reading = DEFAULT_READING,
) -> tuple[list[Example], str]:
    """Examples and their source from an explicit file or ``data_dir`` + the task pattern,
    read by ``reading`` (:mod:`fsxlt.data.readings`)."""
    if path is not None:
        from fsxlt.sampling.set_files import read_data_file

        return read_data_file(path, task, lang, split, reading), str(path)
    if data_dir is None:
        raise FsxltError(f"no {split} data for {lang}: pass a file or --data-dir")
    loaded = load_split(task, lang, split, data_dir=data_dir, reading=reading)
    return loaded.examples, loaded.source


def limit_examples(examples: list[Example], limit: int | None,
                   option: str = "--train-limit") -> list[Example]:
    """The first ``limit`` examples (all of them without a limit); the command line refuses
    a limit below 1 (``min=1``) before this, by the option's name."""
    if limit is not None and limit < 1:
        raise FsxltError(f"{option} {limit}: must be >= 1")
    return examples if limit is None else examples[:limit]


def _zero_shot_test(task: TaskSpec, lang: str, data_dir: Path,
                    reading: Reading = DEFAULT_READING) -> tuple[list[Example], str] | None:
    """A target's test set from ``data_dir`` for the zero-shot score, or None (said in a
    one-line note) when there is none to score: no test file, or one without labels
    (XGLUE's test files, which only XGLUE scores)."""
    path = task.data.locate(data_dir, "test", lang)
    if not path.is_file():
        why = "no test file"
    elif not has_labels(path, task, language=lang):
        why = "the test file carries no labels (a file to predict, as XGLUE's are)"
    else:
        loaded = load_split(task, lang, "test", path=path, reading=reading)
        return loaded.examples, loaded.source
    typer.echo(f"note: {path}: {why}; no zero-shot test score for {lang} (pass "
               f"--target-test {lang}=FILE to score a labelled one)", err=True)
    return None


def lang_files(values: list[str] | None, option: str) -> dict[str, Path]:
    """``--target-dev`` / ``--target-test`` values, ``LANG=FILE`` each, by language."""
    out = {}
    for value in values or []:
        lang, sep, path = value.partition("=")
        if not sep or not lang or not path:
            raise FsxltError(f"{option} expects LANG=FILE, got {value!r}")
        out[lang.strip()] = Path(path)
    return out


def source_data(spec: TaskSpec, source_langs: list[str], train_file: Path | None,
                 dev_file: Path | None, data_dir: Path | None, train_limit: int | None,
                 ) -> tuple[list[Example], dict[str, list[Example]], dict[str, str]]:
    """The source train examples (joined over the source languages), the dev set of each
    source language, and where each came from."""
    if len(source_langs) > 1 and (train_file or dev_file):
        raise FsxltError("several source languages read their files from --data-dir, "
                         "not --train/--dev")
    train: list[Example] = []
    source_dev: dict[str, list[Example]] = {}
    sources: dict[str, str] = {}
    for src in source_langs:
        part, train_src = read_split(spec, src, "train", train_file, data_dir)
        train += limit_examples(part, train_limit)  # the limit applies per source language
        source_dev[src], sources[f"dev-{src}"] = read_split(spec, src, "dev", dev_file, data_dir)
        sources.setdefault("train", train_src)
        sources.setdefault("dev", sources[f"dev-{src}"])
    if len(source_langs) > 1:
        sources["train"] = " + ".join(str(spec.data.locate(data_dir, "train", lang))
                                      for lang in source_langs)
    return train, source_dev, sources


def target_data(spec: TaskSpec, targets: list[str] | None, dev_files: dict[str, Path],
                 test_files: dict[str, Path], data_dir: Path | None, sources: dict[str, str],
                 reading: Reading = DEFAULT_READING,
                 ) -> tuple[dict[str, list[Example]], dict[str, list[Example]]]:
    """The dev and test sets of every target (``--target``, ``--target-dev``,
    ``--target-test``), read by ``reading``; where each came from is added to
    ``sources``."""
    langs = list(dict.fromkeys(list(targets or []) + list(dev_files) + list(test_files)))
    tdev, ttest = {}, {}
    for lang in langs:
        spec.check_language(lang)
        if lang in dev_files or data_dir is not None:
            tdev[lang], sources[f"dev-{lang}"] = read_split(
                spec, lang, "dev", dev_files.get(lang), data_dir, reading
            )
        if lang in test_files:
            ttest[lang], sources[f"test-{lang}"] = read_split(
                spec, lang, "test", test_files[lang], data_dir, reading
            )
        elif data_dir is not None and (found := _zero_shot_test(spec, lang, data_dir,
                                                                reading)):
            ttest[lang], sources[f"test-{lang}"] = found
    return tdev, ttest
