"""Finding the examples of published buckets in the dev file they were drawn from.

The study drew XNLI's and PAWS-X's buckets from each target language's dev
split and selected models on the rest of it; its release holds the buckets
but not the rest. fsxlt rebuilds the rest from the user's dev file: every
bucket example is looked up in it by content, and the remaining dev set is
the dev file minus every line that holds a bucket example's text.

The release's ids (``german-7053-val``) are not lines of that file, and its
text was re-tokenized, so content is compared under a **match key**
(docs/sampling.md, "Remaining dev sets for published buckets"):

* whitespace is ignored (the release's XNLI reads ``erklärt , die`` where the
  dev file reads ``erklärt, die``; its Chinese is cut into words);
* control characters (Unicode category Cc) are ignored (XNLI's Chinese dev
  file holds a backspace, U+0008, that the release's tokenizer dropped);
* a dev field written with CSV quoting (wrapped in ``"`` with every inner
  ``"`` doubled, as the PAWS-X dev files have it wherever a sentence holds a
  quote) is matched both as written and unquoted.

Nothing else is ignored: letters, digits, punctuation and their order stay,
and so does the label (a bucket example is *located* where a dev line has its
texts and its label). Ignoring whitespace could in principle make two
different lines alike (``ab c`` and ``a bc``); :func:`alike_lines` finds every
such pair in a dev file, and an import reports them. A dev line with the text
of a bucket example is left out of the remaining set whatever its label and
however often it occurs (the dev files hold exact duplicates), so no text a
bucket trains on selects a model.
"""

from __future__ import annotations

import re
import unicodedata
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from itertools import product

from fsxlt.data import TextExample
from fsxlt.data.lines import csv_unquoted

Key = tuple[str, str]


def squeezed(text: str | None) -> str:
    """``text`` without whitespace and control characters (the match key's part)."""
    if not text:
        return ""
    return "".join(ch for ch in text
                   if not ch.isspace() and unicodedata.category(ch) != "Cc")


def _variants(text: str | None) -> set[str]:
    found = {squeezed(text)}
    unquoted = csv_unquoted(text)
    if unquoted is not None:
        found.add(squeezed(unquoted))
    return found


def bucket_key(example: TextExample) -> Key:
    """A bucket example's match key: its texts without whitespace and control characters."""
    return squeezed(example.text_a), squeezed(example.text_b)


def dev_keys(example: TextExample) -> set[Key]:
    """The match keys of a dev line: as written, and with CSV quoting undone."""
    return set(product(_variants(example.text_a), _variants(example.text_b)))


@dataclass(frozen=True)
class Unlocated:
    """A bucket example not found in the dev file: its bucket, the example, and why."""

    bucket: int
    example: TextExample
    reason: str

    def describe(self, width: int = 50) -> str:
        text = self.example.text_a if not self.example.text_b else \
            f"{self.example.text_a} | {self.example.text_b}"
        text = text if len(text) <= width else text[:width - 3] + "..."
        return f"bucket {self.bucket:02d}: {self.example.id} {text!r} ({self.reason})"

    def to_dict(self) -> dict:
        return {"bucket": self.bucket, "id": self.example.id, "reason": self.reason,
                "text_a": self.example.text_a, "text_b": self.example.text_b,
                "label": self.example.label}


@dataclass
class Location:
    """Where a set's bucket examples are in a dev file.

    ``located``: bucket examples found (texts and label); ``unlocated``: the
    others, in bucket order; ``removed``: dev lines left out of the remaining
    set (every line holding a bucket example's text); ``remaining``: the dev
    lines kept, in file order.
    """

    located: int
    unlocated: list[Unlocated]
    removed: int
    remaining: list[TextExample] = field(repr=False)


def dev_index(dev: Sequence[TextExample]) -> dict[Key, list[int]]:
    """Each match key of ``dev``'s lines -> their positions (:func:`dev_keys`)."""
    index: dict[Key, list[int]] = defaultdict(list)
    for position, example in enumerate(dev):
        for key in dev_keys(example):
            index[key].append(position)
    return index


def locate(buckets: Iterable[tuple[int, Sequence[TextExample]]],
           dev: Sequence[TextExample]) -> Location:
    """Find every example of ``buckets`` ((index, examples) pairs) in ``dev``, and the dev
    lines that remain (module docstring)."""
    index = dev_index(dev)
    located, unlocated, dropped = 0, [], set()
    for bucket, examples in buckets:
        for example in examples:
            lines = index.get(bucket_key(example), [])
            dropped.update(lines)
            if any(dev[line].label == example.label for line in lines):
                located += 1
            elif lines:
                labels = sorted({str(dev[line].label) for line in lines})
                unlocated.append(Unlocated(bucket, example,
                                           f"in the dev file with label {', '.join(labels)}"))
            else:
                unlocated.append(Unlocated(bucket, example, "not in the dev file"))
    remaining = [example for position, example in enumerate(dev) if position not in dropped]
    return Location(located, unlocated, len(dropped), remaining)


# The release's ids (``hindi-19296-val``) index XNLI 1.0's dev rows of every language in
# this order, 2,490 a language; PAWS-X's (``korean-1275-val``) the dev file's lines from 1.
# Checked on the release against XTREME's dev files: every id names the line holding its
# example (docs/sampling.md, "By line").
XNLI_ORDER = ("ar", "bg", "de", "el", "en", "es", "fr", "hi", "ru", "sw", "th", "tr", "ur",
              "vi", "zh")
XNLI_DEV_ROWS = 2490
_RELEASE_ID = re.compile(r"^[a-z]+-(\d+)-val$")


def release_position(task: str, language: str, uid: str) -> int | None:
    """The position (from 0) in its language's dev examples, in file order, of the example a
    release id names, or None where the id names none (another form, another task)."""
    found = _RELEASE_ID.match(uid)
    if found is None:
        return None
    number = int(found.group(1))
    if task == "xnli" and language in XNLI_ORDER:
        return number - XNLI_DEV_ROWS * XNLI_ORDER.index(language)
    if task == "pawsx":
        return number - 1
    return None


def locate_by_line(task: str, language: str,
                   buckets: Iterable[tuple[int, Sequence[TextExample]]],
                   dev: Sequence[TextExample]) -> Location:
    """The study's rule: every bucket example is the dev example its release id names
    (:func:`release_position`), checked there by the match key and label; the remaining
    set is the dev file less those lines only (a line repeating a bucket's text stays)."""
    located, unlocated, dropped = 0, [], set()
    for bucket, examples in buckets:
        for example in examples:
            position = release_position(task, language, example.id)
            if position is None or not 0 <= position < len(dev):
                unlocated.append(Unlocated(bucket, example, "its id names no dev line"))
                continue
            line = dev[position]
            if bucket_key(example) not in dev_keys(line) or line.label != example.label:
                unlocated.append(Unlocated(bucket, example, f"its id names {line.id}, which "
                                           "holds another example"))
                continue
            located += 1
            dropped.add(position)
    remaining = [example for position, example in enumerate(dev) if position not in dropped]
    return Location(located, unlocated, len(dropped), remaining)


def alike_lines(dev: Sequence[TextExample]) -> list[list[TextExample]]:
    """Groups of dev lines that differ as written (texts or label) but share a match key:
    the pairs the match key could merge. Exact duplicates are not listed (they are one
    example written twice), nor lines whose texts agree and labels differ (the label
    keeps them apart when locating)."""
    groups = []
    for lines in dev_index(dev).values():
        if len(lines) < 2:
            continue
        written = {(dev[line].text_a, dev[line].text_b) for line in lines}
        if len(written) > 1:
            groups.append(lines)
    unique = {tuple(sorted(set(lines))) for lines in groups}
    return [[dev[line] for line in lines] for lines in sorted(unique)]


def leaked(bucket_examples: Iterable[TextExample],
           remaining: Iterable[TextExample]) -> list[TextExample]:
    """The remaining dev examples that hold a bucket example's text under the match key."""
    keys = {bucket_key(example) for example in bucket_examples}
    return [example for example in remaining if dev_keys(example) & keys]


__all__ = ["XNLI_DEV_ROWS", "XNLI_ORDER", "locate_by_line", "release_position",
           "Location", "Unlocated", "alike_lines", "bucket_key", "csv_unquoted", "dev_index",
           "dev_keys",
           "leaked", "locate", "squeezed"]
