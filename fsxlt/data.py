"""Examples and the readers that produce them, from local files or the hub.

Two example types cover every task: :class:`TextExample` (one text or a text
pair with a class label) and :class:`TaggedSentence` (words with one tag
each). Every example carries a stable ``id``: for local files the file name
and the 1-based line where the example starts (``train-de.tsv:57``), for hub
data the dataset, config, split and row index. Ids let a bucket be checked
against its source data.

Readers validate as they go: a missing, empty or malformed file raises
:class:`~fsxlt.errors.DataFormatError` naming the file and line.
This module knows nothing about models.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fsxlt.errors import DataFormatError, FsxltError
from fsxlt.fileio import sha256_file, sha256_text, text_lines
from fsxlt.tasks import TaskSpec, get_task, languages


@dataclass(frozen=True)
class TextExample:
    """A classification example: ``text_a`` (and ``text_b`` for pair tasks) with a label."""

    id: str
    text_a: str
    text_b: str | None
    label: str

    def to_dict(self) -> dict[str, Any]:
        row: dict[str, Any] = {"id": self.id, "text_a": self.text_a, "label": self.label}
        if self.text_b is not None:
            row["text_b"] = self.text_b
        return row

    def content_key(self) -> tuple:
        """What the example says, ignoring its id (to match examples across files)."""
        return (self.text_a, self.text_b, self.label)


@dataclass(frozen=True)
class TaggedSentence:
    """A tagging example: words and one tag per word."""

    id: str
    tokens: tuple[str, ...]
    tags: tuple[str, ...]

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "tokens": list(self.tokens), "tags": list(self.tags)}

    def content_key(self) -> tuple:
        return (self.tokens, self.tags)


@dataclass(frozen=True)
class ChoiceExample:
    """A multiple-choice example: a text, its candidate answers and the right one's position.

    ``label`` is the position of the right candidate as a string ("0",
    "1", ...), so that labels, metrics and predictions work as for
    classification; the task's labels are those positions.
    """

    id: str
    text: str
    choices: tuple[str, ...]
    label: str

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "text": self.text, "choices": list(self.choices),
                "label": self.label}

    def content_key(self) -> tuple:
        return (self.text, self.choices, self.label)


Example = TextExample | TaggedSentence | ChoiceExample


def example_from_dict(row: dict[str, Any]) -> Example:
    """Inverse of ``to_dict``; raises ``KeyError``/``TypeError`` on a malformed row."""
    if "choices" in row:
        if not isinstance(row["choices"], list):
            raise TypeError("choices must be a list")
        return ChoiceExample(id=str(row["id"]), text=str(row["text"]),
                             choices=tuple(map(str, row["choices"])), label=str(row["label"]))
    if "tokens" in row:
        tokens, tags = tuple(map(str, row["tokens"])), tuple(map(str, row["tags"]))
        if len(tokens) != len(tags):
            raise ValueError("tokens and tags differ in length")
        return TaggedSentence(id=str(row["id"]), tokens=tokens, tags=tags)
    text_b = row.get("text_b")
    return TextExample(id=str(row["id"]), text_a=str(row["text_a"]),
                       text_b=None if text_b is None else str(text_b), label=str(row["label"]))


@dataclass(frozen=True)
class Split:
    """The examples of one (task, language, split) and where they came from."""

    task: str
    language: str
    split: str
    examples: list[Example]
    source: str
    sha256: str


# --------------------------------------------------------------------------- local files

def _open_lines(path: Path) -> list[str]:
    if not path.is_file():
        raise DataFormatError(path, "file not found")
    try:
        lines = text_lines(path.read_text(encoding="utf-8-sig"))
    except UnicodeDecodeError as err:
        line = path.read_bytes()[: err.start].count(b"\n") + 1
        raise DataFormatError(path, "not valid UTF-8 text", line) from None
    if not any(line.strip() for line in lines):
        raise DataFormatError(path, "file is empty")
    return lines


def _check_label(task: TaskSpec, label: str, path: Path, line_no: int) -> str:
    """The label as the task names it (``label_aliases`` mapped), or a file:line error."""
    label = task.label_aliases.get(label, label)
    if label not in task.labels:
        raise DataFormatError(
            path, f"unknown label {label!r} for task {task.name} "
            f"(expected one of {', '.join(task.labels)})", line_no)
    return label


_PAIR_HEADERS = {"sentence1", "premise", "text_a", "label", "gold_label"}


def read_pair_tsv(path: Path, task: TaskSpec, labelled: bool = True,
                  language: str | None = None) -> list[TextExample]:
    """XTREME-style TSV: ``text_a<TAB>text_b<TAB>label``.

    A header line (PAWS-X's ``id sentence1 sentence2 label``, XNLI 1.0's and
    XGLUE's ``language gold_label ... sentence1 sentence2 ...``) is recognised
    by its column names and used to find the columns. A file with a
    ``language`` column holds every language: only ``language``'s rows are
    read, in file order. ``labelled=False`` reads a file to predict (its
    label column, if any, is not read).
    """
    lines = _open_lines(path)
    columns: tuple[int, ...] = (0, 1, 2) if labelled else (0, 1)
    n_fields: int | None = None
    start, lang_col = 0, None
    header = lines[0].rstrip("\n").split("\t") if lines else []
    if _PAIR_HEADERS & {h.strip().lower() for h in header}:
        names = [h.strip().lower() for h in header]
        try:
            a = next(i for i, n in enumerate(names) if n in ("sentence1", "premise", "text_a"))
            b = next(i for i, n in enumerate(names)
                     if n in ("sentence2", "hypothesis", "hypo", "text_b"))
            lab = next((i for i, n in enumerate(names) if n in ("label", "gold_label")), None)
        except StopIteration:
            raise DataFormatError(path, "header lacks text_a/text_b/label columns", 1) from None
        if lab is None and labelled:
            raise DataFormatError(path, "header lacks a label column", 1)
        columns = (a, b, lab) if labelled else (a, b)
        n_fields, start = len(names), 1
        lang_col = names.index("language") if "language" in names else None
    if lang_col is not None and language is None:
        raise DataFormatError(path, "holds every language (a language column); name the "
                              "language to read", 1)
    examples = []
    for line_no, line in enumerate(lines[start:], start=start + 1):
        if not line.strip():
            continue
        fields = line.split("\t")
        if n_fields is None and not labelled and len(fields) in (2, 3):
            pass  # a file to predict may keep or drop the label column
        elif len(fields) != (n_fields or 3):
            raise DataFormatError(
                path, f"expected {n_fields or 3} tab-separated fields, found {len(fields)}",
                line_no)
        if lang_col is not None and fields[lang_col].strip() != language:
            continue
        text_a, text_b = fields[columns[0]], fields[columns[1]]
        label = _check_label(task, fields[columns[2]].strip(), path, line_no) if labelled else ""
        examples.append(TextExample(f"{path.name}:{line_no}", text_a, text_b, label))
    return examples


def read_mldoc(path: Path, task: TaskSpec) -> list[TextExample]:
    """MLDoc: ``label<TAB>text`` per line."""
    examples = []
    for line_no, line in enumerate(_open_lines(path), start=1):
        if not line.strip():
            continue
        label, sep, text = line.partition("\t")
        if not sep or not text.strip():
            raise DataFormatError(path, "expected 'label<TAB>text'", line_no)
        examples.append(TextExample(f"{path.name}:{line_no}", text, None,
                                    _check_label(task, label.strip(), path, line_no)))
    return examples


def marc_text_b(title: str, category: str) -> str:
    """MARC's second input: the review title and product category (METHOD.md §2)."""
    return f"{title} . {category}"


def read_marc_jsonl(path: Path, task: TaskSpec) -> list[TextExample]:
    """MARC JSON lines with ``review_body``, ``review_title``, ``product_category``, ``stars``."""
    examples = []
    for line_no, line in enumerate(_open_lines(path), start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
            body, title = row["review_body"], row["review_title"]
            category, stars = row["product_category"], row["stars"]
        except json.JSONDecodeError as err:
            raise DataFormatError(path, f"invalid JSON ({err.msg})", line_no) from None
        except (KeyError, TypeError) as err:
            raise DataFormatError(path, f"missing field {err}", line_no) from None
        label = _check_label(task, str(stars), path, line_no)
        examples.append(TextExample(f"{path.name}:{line_no}", str(body),
                                    marc_text_b(str(title), str(category)), label))
    return examples


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
    lines = _open_lines(path)
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


def read_conllu(path: Path, task: TaskSpec, *,
                require_breaks: bool = False) -> list[TaggedSentence]:
    """CoNLL-U: the UPOS column of each word; multiword ranges and empty nodes are skipped.

    ``require_breaks``: as for :func:`read_conll` (CoNLL-U ends every
    sentence with a blank line anyway).
    """
    lines = _open_lines(path)
    sentences = []
    for start, block in _tagging_blocks(lines, path, require_breaks):
        tokens, tags, first = [], [], None
        for line_no, line in block:
            if line.startswith("#"):
                continue
            fields = line.split("\t")
            if len(fields) != 10:
                raise DataFormatError(
                    path, f"expected 10 tab-separated CoNLL-U fields, found {len(fields)}",
                    line_no)
            if "-" in fields[0] or "." in fields[0]:
                continue
            first = first or line_no
            tokens.append(fields[1])
            tags.append(_check_tag(task, fields[3], path, line_no))
        if tokens:
            sentences.append(TaggedSentence(f"{path.name}:{first or start}",
                                            tuple(tokens), tuple(tags)))
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
    for line_no, line in enumerate(_open_lines(path), start=1):
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
        label = _check_label(task, parts["label"][0], path, line_no) if labelled else ""
        text_b = " . ".join(parts["text_b"]) if "text_b" in parts else None
        examples.append(TextExample(f"{path.name}:{line_no}", " . ".join(parts["text_a"]),
                                    text_b, label))
    return examples


# --------------------------------------------------------------------------- FewCLUE

WSC_MARKS = (("[", "]"), ("<", ">"))  # around the noun phrase (span 1) and the pronoun (span 2)
CHID_BLANK = "#idiom#"


NO_LABEL = "-"  # OCNLI's mark of an example without a gold label
LIST_FIELDS = ("keyword",)  # FewCLUE keys holding a list of strings (CSL's keywords)


class Skipped(list):
    """Examples a reader left out because they carry no label: (file, line, label).

    ``label`` is ``"-"`` (:data:`NO_LABEL`) or ``"None"`` (label key absent
    or null, as in FewCLUE's unlabelled ``test.json``).
    """


def _json_rows(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line number, object) of every non-blank line of a JSON-lines file."""
    for line_no, line in enumerate(_open_lines(path), start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as err:
            raise DataFormatError(path, f"invalid JSON ({err.msg})", line_no) from None
        if not isinstance(row, dict):
            raise DataFormatError(path, "expected a JSON object", line_no)
        yield line_no, row


def _field(row: dict[str, Any], key: str, path: Path, line_no: int) -> Any:
    if key not in row or row[key] is None:
        raise DataFormatError(path, f"missing field {key!r}", line_no)
    return row[key]


def _json_kind(value: Any) -> str:
    """What a JSON value is, for messages: ``null``, ``a number``, ``an object``, ..."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    return {dict: "an object", list: "a list", str: "a string"}.get(type(value), "a value")


def _string_field(row: dict[str, Any], key: str, path: Path, line_no: int) -> str:
    """A field that must be a JSON string (a number or an object is an error, never str()'d)."""
    value = _field(row, key, path, line_no)
    if not isinstance(value, str):
        raise DataFormatError(path, f"field {key!r} must be a string, found {_json_kind(value)}",
                              line_no)
    return value


def _text_field(row: dict[str, Any], key: str, path: Path, line_no: int) -> str:
    """A string field; a key of :data:`LIST_FIELDS` may hold a list of strings instead.

    Such a list (CSL's keywords) is joined with the ideographic comma; any
    other type (a number, an object, a list under another key) is an error.
    """
    value = _field(row, key, path, line_no)
    if key not in LIST_FIELDS or not isinstance(value, list):
        return _string_field(row, key, path, line_no)
    for number, item in enumerate(value, start=1):
        if not isinstance(item, str):
            raise DataFormatError(path, f"field {key!r} must be a string or a list of strings "
                                  f"(item {number} is {_json_kind(item)})", line_no)
    return "、".join(value)


def _fewclue_label(task: TaskSpec, row: dict[str, Any], key: str, path: Path, line_no: int,
                   skipped: Skipped | None, labelled: bool) -> str | None:
    """The row's label as the task names it, or None (reported in ``skipped``) if it has none.

    A row has no label when its label key is absent or null (FewCLUE's
    unlabelled ``test.json``) or holds ``-`` (:data:`NO_LABEL`, OCNLI's mark
    of an example without a gold label). Such a row is left out and listed
    in ``skipped`` when one is given, and is an error otherwise. Any other
    label outside the task's label set (a typo, another case, a number
    where a name is expected) is always an error naming file and line:
    it is never left out or mapped to a label. With ``labelled=False``
    (files to predict) labels are not needed and not read.
    """
    if not labelled:
        return ""
    raw = row.get(key)
    label = "" if raw is None else str(raw).strip()
    if label in task.labels:
        return label
    if skipped is None or (raw is not None and label != NO_LABEL):
        raise DataFormatError(path, f"label {label or raw!r} is not a label of task {task.name}",
                              line_no)
    skipped.append((path.name, line_no, label or repr(raw)))
    return None


def read_fewclue_json(path: Path, task: TaskSpec, skipped: Skipped | None = None,
                      labelled: bool = True) -> list[TextExample]:
    """FewCLUE's single-text and pair tasks: one JSON object per line, keys in ``data.fields``."""
    fields = task.data.fields
    examples = []
    for line_no, row in _json_rows(path):
        text_a = _text_field(row, fields.get("text_a", "sentence"), path, line_no)
        text_b = (_text_field(row, fields["text_b"], path, line_no)
                  if task.input == "pair" else None)
        label = _fewclue_label(task, row, fields.get("label", "label"), path, line_no,
                               skipped, labelled)
        if label is not None:
            examples.append(TextExample(f"{path.name}:{line_no}", text_a, text_b, label))
    return examples


def _check_span(text: str, number: int, offset: Any, span: str, path: Path,
                line_no: int) -> None:
    """Refuse a span whose index is not an integer >= 0, that is empty, or that misses its text."""
    name = f"span{number}"
    if not isinstance(offset, int) or isinstance(offset, bool):
        raise DataFormatError(path, f"{name}_index must be an integer, found {offset!r}", line_no)
    if offset < 0:
        raise DataFormatError(path, f"{name}_index must not be negative, found {offset}", line_no)
    if not span:
        raise DataFormatError(path, f"{name}_text is empty", line_no)
    found = text[offset:offset + len(span)]
    if found != span:
        raise DataFormatError(path, f"{name}_text {span!r} is not at {name}_index {offset} "
                              f"(the text there is {found!r})", line_no)


def _check_apart(spans: list[tuple[int, str]], path: Path, line_no: int) -> None:
    """Refuse spans that share a character (their marks would interleave)."""
    for i, (start_a, span_a) in enumerate(spans):
        for j in range(i + 1, len(spans)):
            start_b, span_b = spans[j]
            if start_a < start_b + len(span_b) and start_b < start_a + len(span_a):
                raise DataFormatError(
                    path, f"span{i + 1} ({start_a}-{start_a + len(span_a)} {span_a!r}) and "
                    f"span{j + 1} ({start_b}-{start_b + len(span_b)} {span_b!r}) overlap", line_no)


def mark_spans(text: str, spans: list[tuple[int, str]], path: Path, line_no: int) -> str:
    """``text`` with each (offset, span text) wrapped in its marks (:data:`WSC_MARKS`).

    Each offset must be an integer >= 0 at which the text holds the span's
    (non-empty) text, and no two spans may share a character; anything else
    is an error naming the file and line, since a shifted, empty or
    interleaved mark would teach the model the wrong words.
    """
    for number, (offset, span) in enumerate(spans, start=1):
        _check_span(text, number, offset, span, path, line_no)
    _check_apart(spans, path, line_no)
    order = sorted(range(len(spans)), key=lambda i: spans[i][0], reverse=True)
    for i in order:  # from the end, so earlier offsets stay valid
        offset, span = spans[i]
        left, right = WSC_MARKS[i]
        text = text[:offset] + left + span + right + text[offset + len(span):]
    return text


def _wsc_spans(row: dict[str, Any], path: Path, line_no: int) -> list[tuple[Any, str]]:
    """The (index, text) of ``target``'s two spans; the texts must be strings."""
    target = _field(row, "target", path, line_no)
    if not isinstance(target, dict):
        raise DataFormatError(path, f"field 'target' must be an object, found "
                              f"{_json_kind(target)}", line_no)
    spans = []
    for n in (1, 2):
        for key in (f"span{n}_index", f"span{n}_text"):
            if key not in target:
                raise DataFormatError(path, f"target lacks {key!r}", line_no)
        span = target[f"span{n}_text"]
        if not isinstance(span, str):
            raise DataFormatError(path, f"span{n}_text must be a string, found "
                                  f"{_json_kind(span)}", line_no)
        spans.append((target[f"span{n}_index"], span))
    return spans


def read_fewclue_wsc(path: Path, task: TaskSpec, skipped: Skipped | None = None,
                     labelled: bool = True) -> list[TextExample]:
    """CLUEWSC: ``text`` and ``target`` (two spans with character offsets), label true/false.

    The noun phrase is marked ``[...]`` and the pronoun ``<...>`` in the text
    the model reads (see :func:`mark_spans` for what a span must be).
    """
    examples = []
    for line_no, row in _json_rows(path):
        text = _string_field(row, "text", path, line_no)
        marked = mark_spans(text, _wsc_spans(row, path, line_no), path, line_no)
        label = _fewclue_label(task, row, "label", path, line_no, skipped, labelled)
        if label is not None:
            examples.append(TextExample(f"{path.name}:{line_no}", marked, None, label))
    return examples


def _chid_candidates(row: dict[str, Any], n: int, path: Path, line_no: int) -> tuple[str, ...]:
    """ChID's ``candidates``: a list of ``n`` strings (a null is never read as "None")."""
    candidates = _field(row, "candidates", path, line_no)
    if not isinstance(candidates, list) or len(candidates) != n:
        raise DataFormatError(path, f"expected {n} candidates", line_no)
    for number, candidate in enumerate(candidates, start=1):
        if not isinstance(candidate, str):
            raise DataFormatError(path, f"candidates must be {n} strings (candidate {number} "
                                  f"is {_json_kind(candidate)})", line_no)
    return tuple(candidates)


def read_fewclue_chid(path: Path, task: TaskSpec, skipped: Skipped | None = None,
                      labelled: bool = True) -> list[ChoiceExample]:
    """ChID: ``content`` with one ``#idiom#`` blank, ``candidates`` and the ``answer`` position."""
    examples = []
    for line_no, row in _json_rows(path):
        content = _string_field(row, "content", path, line_no)
        if content.count(CHID_BLANK) != 1:
            raise DataFormatError(path, f"content must hold exactly one {CHID_BLANK} blank, "
                                  f"found {content.count(CHID_BLANK)}", line_no)
        candidates = _chid_candidates(row, task.n_choices, path, line_no)
        label = _fewclue_label(task, row, "answer", path, line_no, skipped, labelled)
        if label is not None:
            examples.append(ChoiceExample(f"{path.name}:{line_no}", content, candidates, label))
    return examples


FEWCLUE_READERS = {"fewclue_json": read_fewclue_json, "fewclue_wsc": read_fewclue_wsc,
                   "fewclue_chid": read_fewclue_chid}


FEWCLUE_ID_KEYS = ("id", "idx")  # test.json says id; CLUEWSC's other files say idx


def _row_id(row: dict[str, Any], keys: tuple[str, ...], path: Path, line_no: int) -> Any:
    """The value of the first of ``keys`` the row gives (not null): a string or an integer."""
    for key in keys:
        value = row.get(key)
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, str | int):
            raise DataFormatError(path, f"id {key!r} must be a string or an integer, found "
                                  f"{_json_kind(value)}", line_no)
        return value
    raise DataFormatError(path, f"the example has no id (none of {', '.join(map(repr, keys))}); "
                          "a submission line needs it", line_no)


def source_ids(path: str | Path, task: TaskSpec) -> dict[int, Any]:
    """Line number -> the id a JSON-lines file gives the example (for submission files).

    Each file is read with its own key: the task's ``data.fields.id`` when the
    YAML names one, else ``id`` or ``idx`` (:data:`FEWCLUE_ID_KEYS`), whichever
    the row has (CLUEWSC's ``test.json`` says ``id``, its other files ``idx``).
    The value is kept as the file gives it (TNEWS's test ids are strings). A
    row with no id, or an id that is not a string or an integer, is an error
    naming the file and line: a submission line is never written without one.
    """
    named = task.data.fields.get("id")
    keys = (named, *(k for k in FEWCLUE_ID_KEYS if k != named)) if named else FEWCLUE_ID_KEYS
    path = Path(path)
    return {line_no: _row_id(row, keys, path, line_no) for line_no, row in _json_rows(path)}


# readers that can also read files without labels (files to predict; tsv_pair too, below)
UNLABELLED_READERS = {"xglue_tsv": read_xglue_tsv, **FEWCLUE_READERS}

READERS = {
    "tsv_pair": read_pair_tsv,
    "mldoc": read_mldoc,
    "marc_jsonl": read_marc_jsonl,
    "conll": read_conll,
    "conllu": read_conllu,
    "xglue_tsv": read_xglue_tsv,
    **FEWCLUE_READERS,
}


def file_format(path: Path, task: TaskSpec) -> str:
    """The reader for ``path``: the task's format, or CoNLL-U for ``*.conllu`` files."""
    if path.suffix == ".conllu":
        return "conllu"
    return task.data.format


def read_examples(path: str | Path, task: str | TaskSpec, *, skipped: Skipped | None = None,
                  labelled: bool = True, language: str | None = None) -> list[Example]:
    """Read every example of a local data file in the task's format.

    FewCLUE formats leave out examples without a label of the task and list
    them in ``skipped`` (without it, such an example is an error);
    ``labelled=False`` reads a file to predict (labels neither needed nor
    read; every example gets the empty label). ``language`` picks its rows
    from a file that holds every language (XNLI 1.0's and XGLUE's layout).
    A tagging file must separate its sentences by blank lines (see
    :func:`read_conll`'s ``require_breaks``).
    """
    task, path = get_task(task), Path(path)
    fmt = file_format(path, task)
    if fmt == "tsv_pair":
        examples = read_pair_tsv(path, task, labelled, language)
        if not examples and language is not None:
            raise DataFormatError(path, f"file holds no example of language {language!r}")
    elif fmt in UNLABELLED_READERS:
        examples = UNLABELLED_READERS[fmt](path, task, skipped, labelled)
    elif not labelled:
        raise FsxltError(f"task {task.name}: unlabelled files are read for FewCLUE and XGLUE "
                         "formats only")
    elif fmt in ("conll", "conllu"):
        examples = READERS[fmt](path, task, require_breaks=True)
    else:
        examples = READERS[fmt](path, task)
    if not examples:
        raise DataFormatError(path, "file holds no examples" if not skipped else
                              "file holds no example with a label of the task")
    return examples


def _first_line(example: Example) -> int | None:
    """The line an example of a local file starts on (its id ``file:line``)."""
    match = re.search(r":(\d+)$", example.id)
    return int(match.group(1)) if match else None


def has_labels(path: str | Path, task: str | TaskSpec, *, language: str | None = None) -> bool:
    """Whether a local data file is a labelled split (True) or a file to predict (False).

    A file to predict reads without labels and its first example (or its
    header) carries none: XGLUE's test files (``xglue.wpr.de.test``: query,
    title, snippet; no grade). A file that is neither (a labelled file with a
    broken line further on, a missing file) raises the error its labelled
    reading gives, naming the file and line. The file is read in full.
    """
    task, path = get_task(task), Path(path)
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


# --------------------------------------------------------------------------- the hub

def _class_names(features: Any, column: str) -> list[str] | None:
    feature = features.get(column) if features is not None else None
    feature = getattr(feature, "feature", feature)  # Sequence(ClassLabel) -> ClassLabel
    return list(feature.names) if hasattr(feature, "names") else None


def examples_from_hub_rows(task: TaskSpec, rows: Any, source: str) -> list[Example]:
    """Convert a Hugging Face ``datasets.Dataset`` into examples, using the task's column map.

    Integer class labels are turned into names with the dataset's
    ``ClassLabel`` features; ids are ``<source>:<row index>``.
    """
    hub = task.data.hf
    cols = hub.columns if hub else {}
    features = getattr(rows, "features", None)
    examples: list[Example] = []
    if task.is_tagging:
        names = _class_names(features, cols.get("tags", "tags"))
        for i, row in enumerate(rows):
            tags = [names[t] if names and isinstance(t, int) else str(t)
                    for t in row[cols.get("tags", "tags")]]
            for tag in tags:
                if tag not in task.labels:
                    raise FsxltError(f"{source}:{i}: unknown tag {tag!r} for task {task.name}")
            tokens = tuple(str(t) for t in row[cols.get("tokens", "tokens")])
            examples.append(TaggedSentence(f"{source}:{i}", tokens, tuple(tags)))
        return examples
    if task.data.format == "marc_jsonl":
        for i, row in enumerate(rows):
            label = str(row[cols.get("stars", "stars")])
            text_b = marc_text_b(str(row[cols.get("review_title", "review_title")]),
                                 str(row[cols.get("product_category", "product_category")]))
            examples.append(TextExample(f"{source}:{i}", str(row[cols.get("review_body",
                                        "review_body")]), text_b, label))
    else:
        label_col = cols.get("label", "label")
        names = _class_names(features, label_col)
        for i, row in enumerate(rows):
            raw = row[label_col]
            label = names[raw] if names and isinstance(raw, int) and raw >= 0 else str(raw)
            text_b = row[cols["text_b"]] if "text_b" in cols else None
            examples.append(TextExample(f"{source}:{i}", str(row[cols.get("text_a", "text_a")]),
                                        None if text_b is None else str(text_b), label))
    bad = [ex for ex in examples if ex.label not in task.labels]
    if bad:
        raise FsxltError(f"{bad[0].id}: unknown label {bad[0].label!r} for task {task.name}")
    return examples


def load_hub_split(task: TaskSpec, language: str, split: str) -> Split:
    """Load a split from the Hugging Face hub (or its local cache) via ``datasets``."""
    hub = task.data.hf
    if task.data.hub_unavailable:
        raise FsxltError(f"{task.name}: no Hugging Face copy loads: {task.data.hub_unavailable}")
    if hub is None:
        raise FsxltError(f"task {task.name} has no hub source; pass a local file with --data")
    lang_name = languages().get(language).name if language in languages() else language
    config = hub.name.format(lang=language, language_name=lang_name) if hub.name else None
    hub_split = hub.splits.get(split, split)
    try:
        import datasets

        rows = datasets.load_dataset(hub.path, config, split=hub_split)
    except Exception as err:  # network, missing config, ...: one line for the user
        first = str(err).strip().splitlines()[0] if str(err).strip() else ""
        if "scripts are no longer supported" in first:
            raise FsxltError(f"{hub.path} is a loading-script dataset, which datasets "
                             f"{datasets.__version__} no longer runs; pass local files with "
                             "--data/--data-dir") from None
        raise FsxltError(
            f"could not load {hub.path} ({config}, {hub_split}) from the Hugging Face hub: "
            f"{err.__class__.__name__}: {first[:200]}; pass local files with --data/--data-dir"
        ) from None
    source = f"hf:{hub.path}/{config}/{hub_split}"
    examples = examples_from_hub_rows(task, rows, source)
    digest = sha256_text("\n".join(json.dumps(e.to_dict(), sort_keys=True) for e in examples))
    return Split(task.name, language, split, examples, source, digest)


# --------------------------------------------------------------------------- one entry point

def load_split(task: str | TaskSpec, language: str, split: str, *,
               path: str | Path | None = None, data_dir: str | Path | None = None) -> Split:
    """Load one split of a task for one language.

    ``path`` names the file directly; otherwise ``data_dir`` plus the task's
    file pattern (``{split}-{lang}.tsv`` by default) is used; with neither,
    the task's Hugging Face dataset is loaded.
    """
    task = get_task(task)
    task.check_language(language)
    if path is None and data_dir is not None:
        path = task.data.locate(data_dir, split, language)
    if path is None:
        return load_hub_split(task, language, split)
    path = Path(path)
    examples = read_examples(path, task, language=language)
    return Split(task.name, language, split, examples, str(path), sha256_file(path))
