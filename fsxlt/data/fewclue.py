"""Readers of FewCLUE's JSON-lines files (CLUEWSC's spans and CHID's candidates included)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from fsxlt.data.examples import ChoiceExample, TextExample
from fsxlt.data.lines import open_lines
from fsxlt.data.readings import DEFAULT_READING, Reading
from fsxlt.errors import DataFormatError
from fsxlt.tasks import TaskSpec

WSC_MARKS = (("[", "]"), ("<", ">"))  # around the noun phrase (span 1) and the pronoun (span 2)
# FewCLUE's fine-tuning baseline's marks (reading input=baseline), CLUEbenchmark/FewCLUE
# 62a02c6, baselines/models_tf/fine_tuning/classifier_utils.py lines 886-895
BASELINE_WSC_MARKS = (("_", "_"), ("[", "]"))
CHID_BLANK = "#idiom#"


NO_LABEL = "-"  # OCNLI's mark of an example without a gold label
LIST_FIELDS = ("keyword",)  # FewCLUE keys holding a list of strings (CSL's keywords)


class Skipped(list):
    """Examples a reader left out because they carry no label: (file, line, label).

    ``label`` is ``"-"`` (:data:`NO_LABEL`) or ``"None"`` (label key absent
    or null, as in FewCLUE's unlabelled ``test.json``).
    """


def json_rows(path: Path, expected: str = "a JSON object",
              ) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line number, object) of every non-blank line of a JSON-lines file; a line that is
    not JSON, or not an object (``expected`` says what it should be), is a file:line error."""
    for line_no, line in enumerate(open_lines(path), start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as err:
            raise DataFormatError(path, f"invalid JSON ({err.msg})", line_no) from None
        if not isinstance(row, dict):
            raise DataFormatError(path, f"expected {expected}", line_no)
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


def _lossy_items(row: dict[str, Any], key: str | None) -> tuple[str, ...] | None:
    """A list field's items where joining them with ``、`` loses their bounds (an item holds
    a ``、``: CSL's test_public lines 885, 1464, 1681, 2671), else None."""
    value = row.get(key) if key in LIST_FIELDS else None
    if isinstance(value, list) and any("、" in item for item in value):
        return tuple(value)
    return None


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
                      labelled: bool = True, reading: Reading = DEFAULT_READING,
                      ) -> list[TextExample]:
    """FewCLUE's single-text and pair tasks: one JSON object per line, keys in ``data.fields``.

    Reading ``input=baseline`` (CSL): the keywords joined by a space, then the abstract,
    as FewCLUE's fine-tuning baseline gives them (CLUEbenchmark/FewCLUE 62a02c6,
    baselines/models_tf/fine_tuning/classifier_utils.py lines 500-501)."""
    fields = task.data.fields
    if reading.get("input") == "baseline":
        return _baseline_csl(path, task, skipped, labelled)
    examples = []
    for line_no, row in json_rows(path):
        text_a = _text_field(row, fields.get("text_a", "sentence"), path, line_no)
        text_b = (_text_field(row, fields["text_b"], path, line_no)
                  if task.input == "pair" else None)
        label = _fewclue_label(task, row, fields.get("label", "label"), path, line_no,
                               skipped, labelled)
        if label is not None:
            items = _lossy_items(row, fields.get("text_b")) if text_b is not None else None
            examples.append(TextExample(f"{path.name}:{line_no}", text_a, text_b, label,
                                        items))
    return examples


def _baseline_csl(path: Path, task: TaskSpec, skipped: Skipped | None,
                  labelled: bool) -> list[TextExample]:
    """CSL as the fine-tuning baseline reads it (:func:`read_fewclue_json`)."""
    fields = task.data.fields
    examples = []
    for line_no, row in json_rows(path):
        keywords = _text_field(row, fields["text_b"], path, line_no)
        items = row[fields["text_b"]]
        text_a = " ".join(items) if isinstance(items, list) else keywords
        abstract = _text_field(row, fields.get("text_a", "sentence"), path, line_no)
        label = _fewclue_label(task, row, fields.get("label", "label"), path, line_no,
                               skipped, labelled)
        if label is not None:
            examples.append(TextExample(f"{path.name}:{line_no}", text_a, abstract, label))
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


def mark_spans(text: str, spans: list[tuple[int, str]], path: Path, line_no: int,
               marks: tuple[tuple[str, str], ...] = WSC_MARKS) -> str:
    """``text`` with each (offset, span text) wrapped in its marks (:data:`WSC_MARKS`;
    the baseline's: :data:`BASELINE_WSC_MARKS`).

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
        left, right = marks[i]
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
                     labelled: bool = True, reading: Reading = DEFAULT_READING,
                     ) -> list[TextExample]:
    """CLUEWSC: ``text`` and ``target`` (two spans with character offsets), label true/false.

    The noun phrase is marked ``[...]`` and the pronoun ``<...>`` in the text
    the model reads (see :func:`mark_spans` for what a span must be); reading
    ``input=baseline``: ``_..._`` and ``[...]``, the fine-tuning baseline's.
    """
    marks = BASELINE_WSC_MARKS if reading.get("input") == "baseline" else WSC_MARKS
    examples = []
    for line_no, row in json_rows(path):
        text = _string_field(row, "text", path, line_no)
        marked = mark_spans(text, _wsc_spans(row, path, line_no), path, line_no, marks)
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
    for line_no, row in json_rows(path):
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
    return {line_no: _row_id(row, keys, path, line_no) for line_no, row in json_rows(path)}
