"""Splits from the Hugging Face hub (or its local cache), read through ``datasets``."""

from __future__ import annotations

import json
from typing import Any

from fsxlt.data.classification import csv_values, marc_text_b
from fsxlt.data.examples import Example, QAExample, Split, TaggedSentence, TextExample
from fsxlt.data.qa import relocated_start
from fsxlt.data.readings import DEFAULT_READING, Reading
from fsxlt.errors import FsxltError
from fsxlt.fileio import sha256_text
from fsxlt.tasks import TaskSpec
from fsxlt.tasks.languages import languages


def _class_names(features: Any, column: str) -> list[str] | None:
    feature = features.get(column) if features is not None else None
    feature = getattr(feature, "feature", feature)  # Sequence(ClassLabel) -> ClassLabel
    return list(feature.names) if hasattr(feature, "names") else None


def examples_from_hub_rows(task: TaskSpec, rows: Any, source: str,
                           language: str = "") -> list[Example]:
    """Convert a Hugging Face ``datasets.Dataset`` into examples, using the task's column map.

    Integer class labels are turned into names with the dataset's
    ``ClassLabel`` features; ids are ``<source>:<row index>``.
    """
    hub = task.data.hf
    cols = hub.columns if hub else {}
    features = getattr(rows, "features", None)
    examples: list[Example] = []
    if task.is_qa:
        return _qa_examples(rows, source, language)
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


def _qa_examples(rows: Any, source: str, language: str) -> list[Example]:
    """SQuAD-style hub rows (``id``, ``title``, ``context``, ``question``, ``answers`` with
    ``text`` and ``answer_start`` lists) as QA examples; ids ``<source>:<question id>``.
    Each answer start goes through the relocation local files get
    (:func:`fsxlt.data.qa.relocated_start`): the hub's XQuAD loader strips contexts and
    keeps the offsets; an answer whose text is not in its context is refused."""
    examples: list[Example] = []
    for i, row in enumerate(rows):
        answers = row.get("answers") or {}
        texts, starts = list(answers.get("text") or []), list(answers.get("answer_start") or [])
        if not texts or len(texts) != len(starts):
            raise FsxltError(f"{source}:{i}: a question without answers (or answer starts)")
        qid = str(row.get("id") or i)
        context = str(row["context"])
        placed = []
        for text, start in zip(map(str, texts), starts, strict=True):
            found = relocated_start(context, text, int(start)) if text else None
            if found is None:
                raise FsxltError(f"{source}:{i}: question {qid}: answer {text!r:.60} does not "
                                 "occur in its context")
            placed.append(found)
        examples.append(QAExample(f"{source}:{qid}", qid, context,
                                  str(row["question"]), tuple(map(str, texts)),
                                  tuple(placed), str(row.get("title") or ""), language))
    return examples


def load_hub_split(task: TaskSpec, language: str, split: str,
                   reading: Reading = DEFAULT_READING) -> Split:
    """Load a split from the Hugging Face hub (or its local cache) via ``datasets``.
    ``reading`` (:mod:`fsxlt.data.readings`): ``quoting=csv`` reads a CSV-quoted text as
    its value, as for local files (the hub's PAWS-X holds none); ``text=tokenized`` is
    refused (the hub's XNLI has no tokenized columns), as is ``tokens=xtreme`` (the hub's
    UD rows hold no multiword tokens)."""
    hub = task.data.hf
    if reading.get("text") != "raw":
        raise FsxltError(f"{task.name}: reading text={reading.get('text')} reads XNLI 1.0's "
                         "tokenized columns, which the hub's copy lacks; pass XNLI 1.0's "
                         "xnli.dev.tsv/xnli.test.tsv with --data/--data-dir")
    if reading.get("tokens") != "words":
        raise FsxltError(f"{task.name}: reading tokens={reading.get('tokens')} fuses "
                         "multiword tokens, which the hub's rows no longer hold; pass the "
                         "treebank's .conllu files (or XTREME's TSVs) with --data/--data-dir")
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
    examples = examples_from_hub_rows(task, rows, source, language)
    if reading.get("quoting") == "csv" and all(isinstance(e, TextExample) for e in examples):
        examples = list(csv_values(examples))  # type: ignore[arg-type]
    digest = sha256_text("\n".join(json.dumps(e.to_dict(), sort_keys=True) for e in examples))
    return Split(task.name, language, split, examples, source, digest, reading)

