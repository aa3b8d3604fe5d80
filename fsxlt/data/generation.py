"""Generation data: a source text and the target text written for it, one
:class:`~fsxlt.data.GenerationExample` each.

``xglue_src_tgt`` (XGLUE's QG and NTG, ``Data_Format.txt`` of microsoft/XGLUE): two
files of lines per split, ``xglue.<task>.<lang>.src.<split>`` (QG: an answer passage;
NTG: a news body) and ``xglue.<task>.<lang>.tgt.<split>`` (the question; the news
title), the i-th target for the i-th source. Either file's name finds the other (its
``.src.`` and ``.tgt.`` swapped). A target is the last tab-separated field of its line,
stripped (:func:`target_of_line`: how XGLUE's evaluator reads its gold files). Train
exists in English only, dev and test in every language; test has no target file (a
file to predict: read it with ``labelled=False``). An example's id is the source file's
name and line, ``xglue.qg.de.src.dev:12``. Refused in one line naming the file (and
line): an empty source or target line, two files of different lengths, a labelled
reading without a target file.

``squad_qg`` (question generation made from XQuAD's SQuAD v1.1 files): every question
of a file is one example whose target is the question and whose source is the sentence
of its paragraph that holds its (first) answer's start (:func:`sentence_at`); its id is
the question's, ``xquad.de.json:<question id>``. The file is read by
:func:`fsxlt.data.qa.read_squad_json`; a task with ``data.holdout`` keeps the paragraphs
of one part (:func:`fsxlt.data.qa.holdout_part`, the same paragraphs in every language
and the same test paragraphs as the extractive QA task with that holdout): ``test`` the
held-out ones, any other split every other paragraph.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from fsxlt.data.examples import GenerationExample
from fsxlt.data.lines import open_lines
from fsxlt.data.qa import holdout_part, read_squad_json
from fsxlt.errors import DataFormatError

SOURCE_PART, TARGET_PART = ".src.", ".tgt."
# a sentence ends at . ! ? (Hindi's danda, Arabic's question mark, the full-width forms)
# before whitespace, or at 。！？ (Chinese and Japanese put no space after them)
_SENTENCE_END = re.compile(r"[.!?।؟。！？]\s+|[。！？]")


def target_of_line(line: str) -> str:
    """A target file's line as XGLUE's evaluator reads it: its last tab-separated field,
    stripped."""
    return line.split("\t")[-1].strip()


def paired_files(path: str | Path) -> tuple[Path, Path]:
    """(source file, target file) of an XGLUE generation split, from either one's name
    (``xglue.qg.de.src.dev`` and ``xglue.qg.de.tgt.dev``)."""
    path = Path(path)
    for mine, other in ((SOURCE_PART, TARGET_PART), (TARGET_PART, SOURCE_PART)):
        if mine in path.name:
            twin = path.with_name(path.name.replace(mine, other, 1))
            return (path, twin) if mine == SOURCE_PART else (twin, path)
    raise DataFormatError(path, "not an XGLUE generation file (xglue.<task>.<lang>.src.<split> "
                          "or its .tgt. twin)")


def has_targets(path: str | Path) -> bool:
    """Whether an XGLUE generation split has its target file (test has none)."""
    return paired_files(path)[1].is_file()


def read_xglue_src_tgt(path: str | Path, task: Any = None, skipped: Any = None,
                       labelled: bool = True, language: str = "") -> list[GenerationExample]:
    """Every (source, target) pair of an XGLUE generation split (see the module docstring),
    in line order, each marked as in ``language``. ``labelled=False`` reads the source
    file alone (targets empty): a file to predict. ``task`` and ``skipped`` are unused
    (the signature of :data:`fsxlt.data.readers.UNLABELLED_READERS`)."""
    source, target = paired_files(path)
    sources = open_lines(source)
    for line_no, text in enumerate(sources, start=1):
        if not text.strip():
            raise DataFormatError(source, "an empty source line (every line is one input "
                                  "text)", line_no)
    targets = [""] * len(sources)
    if labelled:
        if not target.is_file():
            raise DataFormatError(source, f"no target file {target.name} beside it (XGLUE's "
                                  "test splits have none: files to predict)")
        targets = [target_of_line(line) for line in open_lines(target)]
        if len(targets) != len(sources):
            raise DataFormatError(target, f"{len(targets)} lines but its source file "
                                  f"{source.name} has {len(sources)}; the i-th line is the "
                                  "target of the i-th source line")
        empty = next((i for i, text in enumerate(targets, start=1) if not text), None)
        if empty is not None:
            raise DataFormatError(target, "an empty target line", empty)
    return [GenerationExample(id=f"{source.name}:{i}", source=text.strip(), target=gold,
                              language=language)
            for i, (text, gold) in enumerate(zip(sources, targets, strict=True), start=1)]


def sentence_at(text: str, offset: int) -> str:
    """The sentence of ``text`` that holds character ``offset``, stripped: sentences end at
    ``. ! ?``, ``।`` (Hindi), ``؟`` (Arabic) and ``。！？`` followed by whitespace, and at
    ``。！？`` directly; a text without such an end is one sentence (the whole paragraph;
    Thai marks no sentence end)."""
    start = 0
    for match in _SENTENCE_END.finditer(text):
        if match.end() > offset:
            return text[start:match.start() + 1].strip()
        start = match.end()
    return text[start:].strip()


def read_squad_qg(path: str | Path, task: Any = None, *, language: str = "",
                  split: str | None = None) -> list[GenerationExample]:
    """Question generation from a SQuAD v1.1 JSON file (see the module docstring): one
    (answer sentence, question) pair per question, in file order. With ``split`` and a
    ``task`` that holds paragraphs out (``data.holdout``), the pairs of that split's
    paragraphs only."""
    path = Path(path)
    questions = read_squad_json(path, language=language)
    holdout = getattr(getattr(task, "data", None), "holdout_paragraphs", 0)
    if split is not None and holdout:
        questions = holdout_part(questions, holdout, 0, task.data.holdout_seed,
                                 "test" if split == "test" else "train")
    pairs = []
    for qa in questions:
        if not qa.question.strip():
            raise DataFormatError(path, f"question {qa.question_id}: an empty question")
        pairs.append(GenerationExample(id=qa.id, source=sentence_at(qa.context, qa.starts[0]),
                                       target=qa.question.strip(), language=qa.language))
    return pairs
