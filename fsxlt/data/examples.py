"""The example types every reader produces (:class:`TextExample`, :class:`TaggedSentence`,
:class:`ChoiceExample`) and :class:`Split`, the examples of one split with their source.

Every example carries a stable ``id``: for local files the file name and the 1-based
line where the example starts (``train-de.tsv:57``), for hub data the dataset, config,
split and row index. Ids let a bucket be checked against its source data.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


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
