"""The samples file of an Every Eval Ever export: one row per bucket and test example.

Each row is the prediction one bucket's run made for one test example, read from that
run's predictions file (``--save-predictions``), and belongs to the bucket's result of
the cell's aggregate record (``evaluation_result_id``); its metadata names the bucket
(index, name, hash), the fsxlt example id and the record. ``sample_id`` is the example's
position in the test set, as lm-eval's ``doc_id`` is, and ``sample_hash`` the sha256 of
the input and reference as every-eval-ever's lm-eval converter hashes them, so the same
test example has the same hash in both.

What the model saw is ``input.raw``: a causal LM's prompt up to its options' texts
(where the run saved its prompts, ``--save-prompts``), a tagged sentence's words, otherwise the test
example's text, read from the test file the record names and used only when its examples
are the ones the run scored (their content hash is the record's). A classification row
states the options (``choices``: the prompt's option texts, or the labels) and the gold
option's position as the reference, as the lm-eval converter does; other rows state the
gold answer. A row's score is 1 where the prediction is the gold answer whole, else 0:
a bucket's score is the task's metric over all its rows (an F1 over entities is no mean
of per-sentence scores), which its result in the aggregate states.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from fsxlt.errors import FsxltError

SCHEMA_VERSION = "0.3.0"  # Every Eval Ever's, of the aggregate records and these rows


def samples_rows(cell: Any, texts: list[str], names: list[str], evaluation_id: str,
                 model_id: str, read: dict[tuple, dict[str, str]]) -> list[dict[str, Any]]:
    """The samples rows of ``cell`` (:class:`fsxlt.report.eee.Cell`) from its records'
    predictions files' ``texts``, each bucket's rows under its result's name in ``names``
    (module docstring); ``read``: the test examples' texts already read, by test file and
    content hash (the cells of one test set read it once)."""
    examples: dict[str, str] | None = None
    found = []
    for row, record, text, name in zip(cell.rows, cell.records, texts, names, strict=True):
        lines = [json.loads(line) for line in text.splitlines() if line.strip()]
        header, body = lines[0], lines[1:]
        labels = [str(label) for label in header.get("labels") or []]
        if examples is None and any(_raw(line) is None for line in body):
            data = record.get("data") if isinstance(record.get("data"), dict) else {}
            test = data.get("test") if isinstance(data.get("test"), dict) else {}
            key = (test.get("source") or test.get("file"), test.get("sha256"))
            if key not in read:
                read[key] = _test_texts(record, row["path"],
                                        [str(line.get("id")) for line in body])
            examples = read[key]
        for position, line in enumerate(body):
            raw = _raw(line)
            if raw is None:
                raw = (examples or {}).get(str(line.get("id")), "")
            found.append(_row(line, raw, labels, position, name, row, evaluation_id,
                              model_id, f"{name}/{row['metric']}"))
    return found


def _raw(line: dict[str, Any]) -> str | None:
    prompt = line.get("prompt")
    if isinstance(prompt, dict) and isinstance(prompt.get("prefix"), str):
        options = prompt.get("options") if isinstance(prompt.get("options"), dict) else {}
        texts = [str(text) for text in options.values()]
        lead = [text[:len(text) - len(text.lstrip())] for text in texts]
        # the line breaks every option starts with (the demonstrations' delimiter) are the
        # prompt's, the space after them (the target delimiter) the option's: as lm-eval
        # splits a request into its context and its continuation
        return prompt["prefix"] + (lead[0].rstrip(" ") if lead and len(set(lead)) == 1
                                   else "")
    if isinstance(line.get("tokens"), list):
        return " ".join(map(str, line["tokens"]))
    return None


def _row(line: dict[str, Any], raw: str, labels: list[str], position: int, name: str,
         row: dict[str, Any], evaluation_id: str, model_id: str,
         result_id: str) -> dict[str, Any]:
    gold, predicted = line.get("gold"), line.get("predicted")
    choices = None
    if labels and isinstance(gold, str) and gold in labels:  # one of the task's labels
        prompt = line.get("prompt") if isinstance(line.get("prompt"), dict) else {}
        options = prompt.get("options") if isinstance(prompt.get("options"), dict) else {}
        choices = [str(options[label]).strip() if label in options else label
                   for label in labels]
        reference = [str(labels.index(gold))]
        output = choices[labels.index(predicted)] if predicted in labels else str(predicted)
        correct = predicted == gold
    elif isinstance(gold, list) and all(isinstance(tag, str) for tag in gold) \
            and isinstance(predicted, list):  # a tag per word
        reference, output = [" ".join(gold)], " ".join(map(str, predicted))
        correct = gold == predicted
    else:  # answers (QA), a target text, a grade
        reference = [_text(one) for one in gold] if isinstance(gold, list) else [_text(gold)]
        output = _text(predicted)
        correct = output in reference
    target = reference[0] if len(reference) == 1 else reference
    metadata = {"fsxlt_bucket_index": str(row["bucket_index"]),
                "fsxlt_bucket_name": row["bucket_name"],
                "fsxlt_bucket_sha256": row["bucket_sha256"],
                "fsxlt_example_id": str(line.get("id")), "fsxlt_record_path": row["path"]}
    if "loglik" in line:
        metadata["fsxlt_loglik"] = json.dumps(line["loglik"], sort_keys=True)
    return {
        "schema_version": SCHEMA_VERSION, "evaluation_id": evaluation_id,
        "model_id": model_id, "evaluation_name": name, "evaluation_result_id": result_id,
        "sample_id": str(position),
        "sample_hash": hashlib.sha256(json.dumps({"raw": raw, "reference": target},
                                                 sort_keys=True).encode()).hexdigest(),
        "interaction_type": "single_turn",
        "input": {"raw": raw, "reference": reference, "choices": choices},
        "output": {"raw": [output]},
        "answer_attribution": [{"turn_idx": 0, "source": "output.raw",
                                "extracted_value": output, "extraction_method": "none",
                                "is_terminal": True}],
        "evaluation": {"score": 1.0 if correct else 0.0, "is_correct": bool(correct)},
        "metadata": metadata}


def _text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def _test_texts(record: dict[str, Any], rel: str, ids: list[str]) -> dict[str, str]:
    """{example id: its text} of the test examples ``ids`` from the test file ``record``
    names, when they are the examples it scored (their content hash is the record's);
    otherwise one line saying so."""
    from fsxlt.data import read_examples
    from fsxlt.data.readings import make_reading
    from fsxlt.training.loop import examples_digest

    data = record.get("data") if isinstance(record.get("data"), dict) else {}
    test = data.get("test") if isinstance(data.get("test"), dict) else {}
    source = test.get("source") or test.get("file")
    hint = ("its samples rows need the test examples' text; --no-samples exports the "
            "aggregate records alone")
    if not source or not Path(str(source)).is_file():
        raise FsxltError(f"{rel}: its test file {source or '(unnamed)'} is not here; {hint}")
    run = record.get("run") if isinstance(record.get("run"), dict) else {}
    identity = run.get("identity") if isinstance(run.get("identity"), dict) else {}
    reading = identity.get("reading") if isinstance(identity.get("reading"), dict) else {}
    try:
        read = read_examples(str(source), str(record["task"]), language=record["language"],
                             split="test", reading=make_reading(reading))
    except (FsxltError, OSError, ValueError) as err:
        raise FsxltError(f"{rel}: its test file {source} does not read ({err}); {hint}") \
            from None
    by_id = {example.id: example for example in read}
    chosen = [by_id[one] for one in ids if one in by_id]
    if len(chosen) != len(ids) or examples_digest(chosen) != test.get("sha256"):
        raise FsxltError(f"{rel}: its test file {source} holds other examples than the run "
                         f"scored (changed since?); {hint}")
    return {example.id: _example_text(example) for example in chosen}


def _example_text(example: Any) -> str:
    """A test example's text as one string: its fields' texts, one per line."""
    for fields in (("text_a", "text_b"), ("question", "context"), ("text",), ("source",)):
        if all(hasattr(example, name) for name in fields):
            parts = [getattr(example, name) for name in fields]
            return "\n".join(str(part) for part in parts if part)
    return " ".join(map(str, getattr(example, "tokens", ())))
