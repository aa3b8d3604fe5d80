"""The example types every reader produces (:class:`TextExample`, :class:`TaggedSentence`,
:class:`ChoiceExample`, :class:`QAExample`, :class:`GenerationExample`) and :class:`Split`,
the examples of one split with their source.

Every example carries a stable ``id``: for local files the file name and the 1-based
line where the example starts (``train-de.tsv:57``), for hub data the dataset, config,
split and row index. Ids let a bucket be checked against its source data.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any

from fsxlt.data.readings import DEFAULT_READING, Reading


@dataclass(frozen=True)
class TextExample:
    """A classification example: ``text_a`` (and ``text_b`` for pair tasks) with a label."""

    id: str
    text_a: str
    text_b: str | None
    label: str
    # the items ``text_b`` joins with ``、`` (CSL's keywords), kept only where an item holds
    # a ``、`` itself, so that splitting the text would not give the items back
    text_b_items: tuple[str, ...] | None = None

    def to_dict(self) -> dict[str, Any]:
        row: dict[str, Any] = {"id": self.id, "text_a": self.text_a, "label": self.label}
        if self.text_b is not None:
            row["text_b"] = self.text_b
        if self.text_b_items is not None:
            row["text_b_items"] = list(self.text_b_items)
        return row

    def items_b(self) -> list[str]:
        """The items ``text_b`` joins with ``、`` (CSL's keywords), as the data gave them."""
        if self.text_b_items is not None:
            return list(self.text_b_items)
        return (self.text_b or "").split("、")

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


@dataclass(frozen=True)
class QAExample:
    """An extractive-QA example: one question on a paragraph (its ``context``) and its gold
    answers, each a span of the context (``answers[i]`` starts at character ``starts[i]``).

    ``question_id`` is the question's id in its benchmark (what prediction files are keyed
    by; XQuAD and MLQA give a question the same id in every language); ``id`` is fsxlt's
    ``file:question_id``. Questions on one paragraph share its text, which is how buckets
    keep paragraphs apart (:func:`fsxlt.data.qa.paragraph_of`). ``language`` is the
    language of the context and its answers (MLQA's metric normalises answers by it).
    """

    id: str
    question_id: str
    context: str
    question: str
    answers: tuple[str, ...]
    starts: tuple[int, ...]
    title: str = ""
    language: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "question_id": self.question_id, "title": self.title,
                "context": self.context, "question": self.question, "language": self.language,
                "answers": [{"text": text, "answer_start": start}
                            for text, start in zip(self.answers, self.starts, strict=True)]}

    def content_key(self) -> tuple:
        return (self.context, self.question, self.answers, self.starts)


@dataclass(frozen=True)
class GenerationExample:
    """A generation example: a ``source`` text and the ``target`` text written for it
    (XGLUE's QG: an answer passage and its question; NTG: a news body and its title).

    ``target`` is empty in a file to predict (XGLUE's test files have no targets);
    ``language`` is the language of both texts.
    """

    id: str
    source: str
    target: str
    language: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "source": self.source, "target": self.target,
                "language": self.language}

    def content_key(self) -> tuple:
        return (self.source, self.target)


Example = TextExample | TaggedSentence | ChoiceExample | QAExample | GenerationExample


def example_texts(example: Example) -> tuple[str, ...]:
    """The running texts of an example (for word counts and overlap): its text(s), a
    multiple-choice example's text and candidates, a question and its paragraph, a
    generation example's source and target; a tagged sentence's words joined by spaces."""
    if isinstance(example, TaggedSentence):
        return (" ".join(example.tokens),)
    if isinstance(example, ChoiceExample):
        return (example.text, *example.choices)
    if isinstance(example, QAExample):
        return (example.question, example.context)
    if isinstance(example, GenerationExample):
        return (example.source, example.target)
    return (example.text_a,) + ((example.text_b,) if example.text_b else ())


def example_from_dict(row: dict[str, Any]) -> Example:
    """Inverse of ``to_dict``; raises ``KeyError``/``TypeError`` on a malformed row."""
    if "question" in row:
        answers = row["answers"]
        if not isinstance(answers, list):
            raise TypeError("answers must be a list")
        return QAExample(id=str(row["id"]), question_id=str(row["question_id"]),
                         context=str(row["context"]), question=str(row["question"]),
                         answers=tuple(str(a["text"]) for a in answers),
                         starts=tuple(int(a["answer_start"]) for a in answers),
                         title=str(row.get("title") or ""),
                         language=str(row.get("language") or ""))
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
    if "source" in row and "target" in row:
        return GenerationExample(id=str(row["id"]), source=str(row["source"]),
                                 target=str(row["target"]),
                                 language=str(row.get("language") or ""))
    text_b, items = row.get("text_b"), row.get("text_b_items")
    if items is not None and not isinstance(items, list):
        raise TypeError("text_b_items must be a list")
    return TextExample(id=str(row["id"]), text_a=str(row["text_a"]),
                       text_b=None if text_b is None else str(text_b), label=str(row["label"]),
                       text_b_items=None if items is None else tuple(map(str, items)))


@dataclass(frozen=True)
class Split:
    """The examples of one (task, language, split) and where they came from."""

    task: str
    language: str
    split: str
    examples: list[Example]
    source: str
    sha256: str
    reading: Reading = DEFAULT_READING  # how the file became examples (fsxlt.data.readings)


# the keys of the seeded evaluation samples (fsxlt icl's --test-limit, fsxlt lm-adapt's
# --dev-limit; fsxlt adapt's limits take them at seed 0, so the arms score the same examples)
TEST_SAMPLE_KEY = "fsxlt-icl-test:{seed}"
DEV_SAMPLE_KEY = "fsxlt-lm-dev:{seed}"


def seeded_sample(examples: list[Any], limit: int | None, key: str) -> list[Any]:
    """The first ``limit`` of a sample seeded by ``key``, in file order (all: no limit)."""
    if limit is None or limit >= len(examples):
        return list(examples)
    chosen = random.Random(key).sample(range(len(examples)), limit)
    return [examples[i] for i in sorted(chosen)]
