"""Readers of tagging files: CoNLL, CoNLL-U and XGLUE's tab-separated token files."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from fsxlt.data.examples import TaggedSentence, TextExample
from fsxlt.data.lines import check_label, open_lines
from fsxlt.data.ud_xtreme import ConversionError, Span, Word, deps_heads, xtreme_tokens
from fsxlt.errors import DataFormatError
from fsxlt.tasks import TaskSpec

_LANG_PREFIX = re.compile(r"^([a-z]{2,3}):.")


DOCSTART = "-DOCSTART-"  # CoNLL's document separator: a document break, never a word


def is_docstart(line: str) -> bool:
    """Whether a CoNLL line is a document separator (``-DOCSTART- O``, ``-DOCSTART- -X- -X- O``).

    By the CoNLL convention, which XGLUE's evaluator follows for its gold
    files, such a line ends the sentence before it and is no sentence itself.
    """
    fields = line.split()
    return bool(fields) and fields[0] == DOCSTART


def _sentences(lines: list[str]) -> Iterator[tuple[int, list[tuple[int, str]]]]:
    """Group lines into sentences: (first line no, [(no, line)]) of each block of lines
    between blank lines and ``-DOCSTART-`` lines (which belong to no sentence)."""
    block: list[tuple[int, str]] = []
    for line_no, line in enumerate(lines, start=1):
        if line.strip() and not is_docstart(line):
            block.append((line_no, line))
        elif block:
            yield block[0][0], block
            block = []
    if block:
        yield block[0][0], block


def _check_tag(task: TaskSpec, tag: str, path: Path, line_no: int) -> str:
    if tag not in task.labels:
        raise DataFormatError(path, f"unknown tag {tag!r} for task {task.name}", line_no)
    return tag


def _tagging_blocks(lines: list[str], path: Path,
                    require_breaks: bool) -> list[tuple[int, list[tuple[int, str]]]]:
    """:func:`_sentences` of a tagging file; with ``require_breaks``, a file whose only
    sentence has more than one line and no blank line after it is an error.

    Such a file has lost its sentence breaks (or never had them): read as
    it is, thousands of lines would become one sentence. A file of one
    sentence is accepted when a blank line ends it; a file of one line
    (one token) needs none.
    """
    blocks = list(_sentences(lines))
    if require_breaks and len(blocks) == 1:
        block = blocks[0][1]
        if len(block) > 1 and block[-1][0] == len(lines):
            raise DataFormatError(
                path, f"no blank line between sentences: its {len(block)} lines would be read "
                "as one sentence (separate sentences with a blank line; end a file of one "
                "sentence with one)")
    return blocks


def _token_tag(line: str) -> list[str]:
    """A CoNLL line's fields: ``token<TAB>tag``, else ``token tag`` (XGLUE's layout)."""
    fields = line.split("\t")
    return fields if len(fields) == 2 else line.split()


def _token_tag_problem(line: str, fields: list[str]) -> str | None:
    """What is wrong with a CoNLL line split into ``fields``, or None if nothing is."""
    if len(fields) == 2 and fields[0]:
        return None
    expected = "expected 'token<TAB>tag' (or XGLUE's 'token tag')"
    if len(fields) == 2:
        return f"{expected}, found an empty token"
    tabs = line.count("\t")
    if tabs > 1:
        return f"{expected}, found {tabs + 1} tab-separated fields"
    if len(fields) > 2:
        return f"{expected}, found a space-separated line of {len(fields)} fields"
    return f"{expected}, found a token without a tag"


def read_conll(path: Path, task: TaskSpec, *,
               require_breaks: bool = False) -> list[TaggedSentence]:
    """Two columns ``token<TAB>tag``, blank line between sentences.

    A line without exactly one tab is split at whitespace instead: XGLUE's
    NER and POS files are ``word<SPACE>label`` (XGLUE's Data_Format.txt). A
    line that gives anything but a token and a tag either way is an error
    saying what it found. A ``-DOCSTART-`` line (whatever its other fields)
    is a document break: it ends the sentence before it, like a blank line,
    and is no sentence of its own (:func:`is_docstart`).

    XTREME files prefix tokens with the language (``de:Berlin``); when the
    file's first token carries such a prefix, it is stripped from all tokens.

    ``require_breaks`` (what :func:`read_examples` passes for a whole split):
    a file of more than one line must hold a blank line; a file of one
    sentence must end it with a blank line, so that a file that lost its
    sentence breaks is an error naming it, not one giant sentence. Bucket
    files, which may hold one sentence, are read without it.
    """
    lines = open_lines(path)
    first = next((line for line in lines if line.strip() and not is_docstart(line)), "")
    match = _LANG_PREFIX.match(first)
    prefix = f"{match.group(1)}:" if match else None
    sentences = []
    for start, block in _tagging_blocks(lines, path, require_breaks):
        tokens, tags = [], []
        for line_no, line in block:
            fields = _token_tag(line)
            problem = _token_tag_problem(line, fields)
            if problem:
                raise DataFormatError(path, problem, line_no)
            token, tag = fields
            if prefix and token.startswith(prefix) and len(token) > len(prefix):
                token = token[len(prefix):]
            tokens.append(token)
            tags.append(_check_tag(task, tag.strip(), path, line_no))
        sentences.append(TaggedSentence(f"{path.name}:{start}", tuple(tokens), tuple(tags)))
    return sentences


def read_conllu(path: Path, task: TaskSpec, *, require_breaks: bool = False,
                tokens: str = "words", language: str = "") -> list[TaggedSentence]:
    """CoNLL-U: the UPOS column of each word; multiword ranges and empty nodes are skipped.

    ``require_breaks``: as for :func:`read_conll` (CoNLL-U ends every
    sentence with a blank line anyway). ``tokens="xtreme"`` reads each sentence as
    XTREME's preprocessing wrote it into its TSV files, the study's input: a multiword
    token as one token with its head word's tag, forms without spaces and zero-width
    non-joiners, sentences with withheld forms left out (:mod:`fsxlt.data.ud_xtreme`;
    ``language`` picks its precedence list).
    """
    lines = open_lines(path)
    sentences = []
    for _start, block in _tagging_blocks(lines, path, require_breaks):
        words: list[Word] = []
        spans: list[Span] = []
        for line_no, line in block:
            if line.startswith("#"):
                continue
            fields = line.split("\t")
            if len(fields) != 10:
                raise DataFormatError(
                    path, f"expected 10 tab-separated CoNLL-U fields, found {len(fields)}",
                    line_no)
            if "." in fields[0]:
                continue
            if "-" in fields[0]:
                first, _, last = fields[0].partition("-")
                if tokens == "xtreme":
                    if not (first.isdigit() and last.isdigit()):
                        raise DataFormatError(path, f"multiword range {fields[0]!r} is not "
                                              "FIRST-LAST", line_no)
                    spans.append(Span(int(first), int(last), fields[1], line_no))
                continue
            _check_tag(task, fields[3], path, line_no)
            head = int(fields[6]) if fields[6].isdigit() else None
            index = int(fields[0]) if fields[0].isdigit() else len(words) + 1
            words.append(Word(index, fields[1], fields[3], (head, *deps_heads(fields[8])),
                              line_no))
        if not words:
            continue
        if tokens == "xtreme":
            try:
                converted = xtreme_tokens(words, spans, language)
            except ConversionError as err:
                raise DataFormatError(path, f"XTREME's conversion (tokens=xtreme): {err}",
                                      err.line) from None
            if converted is None:
                continue
            rows = converted
        else:
            rows = [(word.form, word.upos, word.line) for word in words]
        sentences.append(TaggedSentence(f"{path.name}:{rows[0][2]}",
                                        tuple(r[0] for r in rows), tuple(r[1] for r in rows)))
    return sentences


def read_xglue_tsv(path: Path, task: TaskSpec, skipped: Any = None,
                   labelled: bool = True) -> list[TextExample]:
    """XGLUE's headerless TSV files (``xglue.qadsm.de.dev``): one column per ``data.columns``.

    Columns of one part are joined with `` . `` (QADSM: ad title . ad
    description). Test files have no label column: read them with
    ``labelled=False``.
    """
    columns = task.data.columns if labelled else task.data.columns[:-1]
    examples = []
    for line_no, line in enumerate(open_lines(path), start=1):
        if not line.strip():
            continue
        fields = line.split("\t")
        if len(fields) != len(columns):
            unlabelled = labelled and len(fields) == len(columns) - 1
            raise DataFormatError(path, f"expected {len(columns)} tab-separated fields "
                                  f"({', '.join(columns)}), found {len(fields)}"
                                  + (" (no label: a file to predict, as XGLUE's test files "
                                     "are; give it to --predict)" if unlabelled else ""),
                                  line_no)
        parts: dict[str, list[str]] = {}
        for role, value in zip(columns, fields, strict=True):
            parts.setdefault(role, []).append(value.strip())
        label = check_label(task, parts["label"][0], path, line_no) if labelled else ""
        text_b = " . ".join(parts["text_b"]) if "text_b" in parts else None
        examples.append(TextExample(f"{path.name}:{line_no}", " . ".join(parts["text_a"]),
                                    text_b, label))
    return examples
