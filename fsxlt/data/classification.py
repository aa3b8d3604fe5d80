"""Readers of classification files: tab-separated text pairs, MLDoc and MARC's JSON lines."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

from fsxlt.data.examples import TextExample
from fsxlt.data.lines import check_label, csv_unquoted, open_lines
from fsxlt.data.readings import DEFAULT_READING, Reading
from fsxlt.errors import DataFormatError
from fsxlt.tasks import TaskSpec

_PAIR_HEADERS = {"sentence1", "premise", "text_a", "label", "gold_label"}


def read_pair_tsv(path: Path, task: TaskSpec, labelled: bool = True,
                  language: str | None = None,
                  reading: Reading = DEFAULT_READING) -> list[TextExample]:
    """XTREME-style TSV: ``text_a<TAB>text_b<TAB>label``.

    A header line (PAWS-X's ``id sentence1 sentence2 label``, XNLI 1.0's and
    XGLUE's ``language gold_label ... sentence1 sentence2 ...``) is recognised
    by its column names and used to find the columns. A file with a
    ``language`` column holds every language: only ``language``'s rows are
    read, in file order. ``labelled=False`` reads a file to predict (its
    label column, if any, is not read).

    ``reading`` (:mod:`fsxlt.data.readings`): ``text=tokenized`` reads the texts from
    the header's ``<column>_tokenized`` columns (XNLI 1.0's ``sentence1_tokenized``;
    a file without them is refused); ``quoting=csv`` reads a CSV-quoted field as its
    value where the file was written by a CSV writer (:func:`csv_values`).
    """
    lines = open_lines(path)
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
        if reading.get("text") == "tokenized":
            a, b = _tokenized_columns(path, names, a, b)
        columns = (a, b, lab) if labelled else (a, b)
        n_fields, start = len(names), 1
        lang_col = names.index("language") if "language" in names else None
    elif reading.get("text") == "tokenized":
        raise DataFormatError(path, "reading text=tokenized reads the word-tokenized columns "
                              "of a header (XNLI 1.0's sentence1_tokenized, in xnli.dev.tsv "
                              "and xnli.test.tsv); this file has no header", 1)
    unquote = reading.get("quoting") == "csv"
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
        label = check_label(task, fields[columns[2]].strip(), path, line_no) if labelled else ""
        examples.append(TextExample(f"{path.name}:{line_no}", text_a, text_b, label))
    return csv_values(examples) if unquote else examples


def _tokenized_columns(path: Path, names: list[str], a: int, b: int) -> tuple[int, int]:
    """The word-tokenized columns of text columns ``a`` and ``b`` (``sentence1`` ->
    ``sentence1_tokenized``), or a one-line error naming what the header lacks."""
    wanted = (f"{names[a]}_tokenized", f"{names[b]}_tokenized")
    missing = [name for name in wanted if name not in names]
    if missing:
        raise DataFormatError(path, f"reading text=tokenized needs the column "
                              f"{' and '.join(missing)} (XNLI 1.0's xnli.dev.tsv and "
                              "xnli.test.tsv have them); this header has none", 1)
    return names.index(wanted[0]), names.index(wanted[1])


def csv_values(examples: list[TextExample]) -> list[TextExample]:
    """Reading ``quoting=csv``: the examples with every CSV-quoted text read as its value,
    where the texts were written by a CSV writer. Such a writer quotes every field that
    holds a ``"``, so texts holding a quote that is no such field (``Ein "Wort"``: PAWS-X's
    own files, the hub's rows) were not written so, and are all kept as written."""
    texts = [text for ex in examples for text in (ex.text_a, ex.text_b) if text]
    if any('"' in text and csv_unquoted(text) is None for text in texts):
        return examples
    return [replace(ex, text_a=_value(ex.text_a), text_b=_value(ex.text_b))
            for ex in examples]


def _value(field: str | None) -> str | None:
    """A field as its value: CSV quoting undone where it was written quoted."""
    unquoted = csv_unquoted(field)
    return field if unquoted is None else unquoted


def read_mldoc(path: Path, task: TaskSpec) -> list[TextExample]:
    """MLDoc: ``label<TAB>text`` per line."""
    examples = []
    for line_no, line in enumerate(open_lines(path), start=1):
        if not line.strip():
            continue
        label, sep, text = line.partition("\t")
        if not sep or not text.strip():
            raise DataFormatError(path, "expected 'label<TAB>text'", line_no)
        examples.append(TextExample(f"{path.name}:{line_no}", text, None,
                                    check_label(task, label.strip(), path, line_no)))
    return examples


def marc_text_b(title: str, category: str) -> str:
    """MARC's second input: the review title and product category (docs/protocol.md#tasks)."""
    return f"{title} . {category}"


def read_marc_jsonl(path: Path, task: TaskSpec) -> list[TextExample]:
    """MARC JSON lines with ``review_body``, ``review_title``, ``product_category``, ``stars``."""
    examples = []
    for line_no, line in enumerate(open_lines(path), start=1):
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
        label = check_label(task, str(stars), path, line_no)
        examples.append(TextExample(f"{path.name}:{line_no}", str(body),
                                    marc_text_b(str(title), str(category)), label))
    return examples
