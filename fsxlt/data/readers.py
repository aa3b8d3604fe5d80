"""One entry point per local file (the reader of the task's format) and per split
(a local file, or the task's Hugging Face dataset).
"""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path

from fsxlt.data.classification import read_marc_jsonl, read_mldoc, read_pair_tsv
from fsxlt.data.examples import Example, Split
from fsxlt.data.fewclue import FEWCLUE_READERS, Skipped
from fsxlt.data.generation import has_targets, read_squad_qg, read_xglue_src_tgt
from fsxlt.data.hub import load_hub_split
from fsxlt.data.qa import holdout_part, read_squad_json
from fsxlt.data.readings import AXES, DEFAULT_READING, Reading
from fsxlt.data.tagging import read_conll, read_conllu, read_xglue_tsv
from fsxlt.errors import DataFormatError, FsxltError
from fsxlt.fileio import sha256_file
from fsxlt.tasks import TaskSpec, get_task

# readers that can also read files without labels (files to predict; tsv_pair too, below)
UNLABELLED_READERS = {"xglue_tsv": read_xglue_tsv, "xglue_src_tgt": read_xglue_src_tgt,
                      **FEWCLUE_READERS}

READERS = {
    "tsv_pair": read_pair_tsv,
    "mldoc": read_mldoc,
    "marc_jsonl": read_marc_jsonl,
    "conll": read_conll,
    "conllu": read_conllu,
    "xglue_tsv": read_xglue_tsv,
    "squad_json": read_squad_json,
    "xglue_src_tgt": read_xglue_src_tgt,
    "squad_qg": read_squad_qg,
    **FEWCLUE_READERS,
}


# file names that name their language: XGLUE's (xglue.qg.de.src.test), XQuAD's
# (xquad.de.json), MLQA's (test-context-de-question-es.json: either one) and fsxlt's
# {split}-{lang} layout (test-de.tsv)
_NAMED_LANGUAGE = (re.compile(r"^xglue\.[\w-]+\.([a-z]{2,3})\."),
                   re.compile(r"^xquad\.([a-z]{2,3})\.json$"),
                   re.compile(r"context-([a-z]{2,3})-question-([a-z]{2,3})"),
                   re.compile(r"^(?:train|dev|test)-([a-z]{2,3})\.\w+$"))


def named_languages(path: str | Path) -> tuple[str, ...]:
    """The languages a data file's name says it holds (empty when it names none)."""
    name = Path(path).name
    for pattern in _NAMED_LANGUAGE:
        found = pattern.search(name)
        if found:
            return tuple(found.groups())
    return ()


def check_file_language(path: str | Path, language: str, what: str) -> None:
    """Refuse, in one line, a file whose name says it is of another language than the
    run's (``--predict xglue.qg.fr.src.test`` with ``--lang de``)."""
    named = named_languages(path)
    if named and language not in named:
        raise FsxltError(f"{path}: {what} is a file of language {'/'.join(named)} (its "
                         f"name says so), not {language}; give the {language} file")


def file_format(path: Path, task: TaskSpec) -> str:
    """The reader for ``path``: the task's format, or CoNLL-U for ``*.conllu`` files."""
    if path.suffix == ".conllu":
        return "conllu"
    return task.data.format


def read_examples(path: str | Path, task: str | TaskSpec, *, skipped: Skipped | None = None,
                  labelled: bool = True, language: str | None = None,
                  split: str | None = None,
                  reading: Reading = DEFAULT_READING) -> list[Example]:
    """Read every example of a local data file in the task's format.

    FewCLUE formats leave out examples without a label of the task and list
    them in ``skipped`` (without it, such an example is an error);
    ``labelled=False`` reads a file to predict (labels neither needed nor
    read; every example gets the empty label). ``language`` picks its rows
    from a file that holds every language (XNLI 1.0's and XGLUE's layout).
    A tagging file must separate its sentences by blank lines (see
    :func:`read_conll`'s ``require_breaks``). ``split`` names the split the file is read
    as: a task that cuts its files into parts (XQuAD, ``data.holdout``) keeps the
    paragraphs of that part (``test``, ``dev``, or ``train`` for any other split;
    without a split, the whole file: a file to predict; ``squad_qg``: ``test``, or every
    other paragraph). XGLUE's generation files (``xglue_src_tgt``) are read as a pair,
    source and target (:mod:`fsxlt.data.generation`). ``reading``: how the file becomes
    examples where a format offers a choice (:mod:`fsxlt.data.readings`).
    """
    task, path = get_task(task), Path(path)
    fmt = file_format(path, task)
    check_reading(reading, fmt, str(path))
    if fmt == "tsv_pair":
        examples = read_pair_tsv(path, task, labelled, language, reading)
        if not examples and language is not None:
            raise DataFormatError(path, f"file holds no example of language {language!r}")
    elif fmt == "squad_json":
        examples = read_squad_json(path, language=language or "", labelled=labelled)
    elif fmt == "squad_qg":  # holds its paragraphs out itself: a pair is not a question
        examples = read_squad_qg(path, task, language=language or "", split=split)
    elif fmt == "xglue_src_tgt":
        examples = read_xglue_src_tgt(path, labelled=labelled, language=language or "")
    elif fmt in ("fewclue_json", "fewclue_wsc"):
        examples = UNLABELLED_READERS[fmt](path, task, skipped, labelled, reading)
    elif fmt in UNLABELLED_READERS:
        examples = UNLABELLED_READERS[fmt](path, task, skipped, labelled)
    elif not labelled:
        raise FsxltError(f"task {task.name}: unlabelled files are read for FewCLUE, XGLUE "
                         "and SQuAD formats only")
    elif fmt == "conllu":
        examples = read_conllu(path, task, require_breaks=True,
                               tokens=reading.get("tokens"), language=language or "")
    elif fmt == "conll":
        examples = READERS[fmt](path, task, require_breaks=True)
    else:
        examples = READERS[fmt](path, task)
    if not examples:
        raise DataFormatError(path, "file holds no examples" if not skipped else
                              "file holds no example with a label of the task")
    return split_part(examples, task, split)


def check_reading(reading: Reading, fmt: str, where: str) -> None:
    """Refuse, in one line, a reading with a choice the format ``fmt`` does not offer."""
    for axis, choice in reading.choices:
        if fmt not in AXES[axis].formats:
            raise FsxltError(f"{where}: reading {axis}={choice} applies to "
                             f"{AXES[axis].where}, not to {fmt} files")


def split_part(examples: list[Example], task: TaskSpec, split: str | None) -> list[Example]:
    """The examples of ``split`` in a file that holds several (see :func:`read_examples`)."""
    if split is None or not task.reads_parts:
        return examples
    part = split if split in ("test", "dev") else "train"
    return holdout_part(examples, task.data.holdout_paragraphs,  # type: ignore[arg-type]
                        task.data.holdout_dev_paragraphs, task.data.holdout_seed, part)


def _first_line(example: Example) -> int | None:
    """The line an example of a local file starts on (its id ``file:line``)."""
    match = re.search(r":(\d+)$", example.id)
    return int(match.group(1)) if match else None


def has_labels(path: str | Path, task: str | TaskSpec, *, language: str | None = None) -> bool:
    """Whether a local data file is a labelled split (True) or a file to predict (False).

    A file to predict reads without labels and its first example (or its
    header) carries none: XGLUE's test files (``xglue.wpr.de.test``: query,
    title, snippet; no grade; a generation split without its target file,
    ``xglue.qg.de.src.test``). A file that is neither (a labelled file with a
    broken line further on, a missing file) raises the error its labelled
    reading gives, naming the file and line. The file is read in full.
    """
    task, path = get_task(task), Path(path)
    if file_format(path, task) == "xglue_src_tgt":
        labelled = has_targets(path)
        read_examples(path, task, labelled=labelled, language=language)
        return labelled
    try:
        read_examples(path, task, language=language)
        return True
    except DataFormatError as err:
        problem = err
    try:
        examples = read_examples(path, task, labelled=False, language=language)
    except FsxltError:
        raise problem from None
    if problem.line not in (1, _first_line(examples[0])):  # line 1: a header lacking a label
        raise problem
    return False


def load_split(task: str | TaskSpec, language: str, split: str, *,
               path: str | Path | None = None, data_dir: str | Path | None = None,
               reading: Reading = DEFAULT_READING) -> Split:
    """Load one split of a task for one language.

    ``path`` names the file directly; otherwise ``data_dir`` plus the task's
    file pattern (``{split}-{lang}.tsv`` by default) is used; with neither,
    the task's Hugging Face dataset is loaded. ``reading``: how the file becomes
    examples (:mod:`fsxlt.data.readings`), recorded in the split.
    """
    task = get_task(task)
    task.check_language(language)
    if path is None and data_dir is not None:
        path = task.data.locate(data_dir, split, language)
    if path is None:
        loaded = load_hub_split(task, language, split, reading)
        return replace(loaded, examples=split_part(loaded.examples, task, split))
    path = Path(path)
    examples = read_examples(path, task, language=language, split=split, reading=reading)
    return Split(task.name, language, split, examples, str(path), sha256_file(path), reading)
