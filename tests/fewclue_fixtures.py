"""Small FewCLUE-format fixtures: one folder per task, in the benchmark's own file layout.

Each task folder holds ``train_0..4.json``, ``dev_0..4.json``,
``train_few_all.json``, ``dev_few_all.json``, ``test_public.json`` and the
unlabelled ``test.json`` one submits on, JSON lines with the task's real keys
(``sentence``; ``sentence1/2``; ``abst`` and a ``keyword`` list; CLUEWSC's
``target`` spans; ChID's ``candidates``, ``content`` with ``#idiom#`` and
``answer``). ``test.json`` has the keys of FewCLUE's own test.json
(:data:`TEST_KEYS`): no label, ``id`` everywhere (CLUEWSC's other files say
``idx``) and TNEWS's ids as strings. Texts are random Chinese
characters from :data:`CHARS` with a cue that decides the label, so a tiny
model can learn something; :data:`FEWCLUE_VOCAB` is the vocabulary a tiny
tokenizer needs to read them.
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

CHARS = tuple("天地人山水火木金土日月风云雨雪花草鸟鱼马牛羊书车门")
CUES = tuple("好差是或不猫它他")
FEWCLUE_VOCAB = CHARS + CUES + ("[", "]", "<", ">", "#", "idiom", "、")
SPLITS = ("0", "1", "2", "3", "4")
TRAIN_SIZE = 8  # examples per split
TASKS = ("eprstmt", "tnews", "iflytek", "csldcp", "ocnli", "bustm", "chid", "csl", "cluewsc")


def _text(rng: random.Random, n: int = 6) -> str:
    return "".join(rng.choice(CHARS) for _ in range(n))


def eprstmt_row(rng: random.Random, i: int) -> dict[str, Any]:
    label = ("Negative", "Positive")[i % 2]
    cue = "好" if label == "Positive" else "差"
    return {"id": i, "sentence": _text(rng) + cue + _text(rng, 3), "label": label}


def _labelled_text(task: str, rng: random.Random, i: int) -> tuple[str, str]:
    """A label of the task (cycled, from its YAML) and a text whose cue character says it."""
    from fsxlt.tasks import get_task

    labels = get_task(task).labels
    label = labels[(i * 7) % len(labels)]
    return label, _text(rng) + CHARS[labels.index(label) % len(CHARS)]


def tnews_row(rng: random.Random, i: int) -> dict[str, Any]:
    label, text = _labelled_text("tnews", rng, i)
    return {"label": int(label), "label_desc": "news_story", "sentence": text,
            "keywords": "天,地", "id": i}


def iflytek_row(rng: random.Random, i: int) -> dict[str, Any]:
    label, text = _labelled_text("iflytek", rng, i)
    return {"label": int(label), "label_des": "打车", "sentence": text, "id": i}


def csldcp_row(rng: random.Random, i: int) -> dict[str, Any]:
    label, text = _labelled_text("csldcp", rng, i)
    return {"content": text, "label": label, "id": i}


def bustm_row(rng: random.Random, i: int) -> dict[str, Any]:
    label = str(i % 2)
    first = _text(rng)
    second = first[:4] + "是" if label == "1" else _text(rng) + "不"
    return {"id": i, "sentence1": first, "sentence2": second, "label": label}


def ocnli_row(rng: random.Random, i: int) -> dict[str, Any]:
    label = ("entailment", "neutral", "contradiction")[i % 3]
    cue = {"entailment": "是", "neutral": "或", "contradiction": "不"}[label]
    return {"level": "easy", "sentence1": _text(rng, 8), "sentence2": cue + _text(rng, 4),
            "label": label, "label0": None, "genre": "news", "prem_id": f"news_{i}", "id": i}


def csl_row(rng: random.Random, i: int) -> dict[str, Any]:
    abst = _text(rng, 10)
    label = str(i % 2)
    keywords = [abst[0:2], abst[3:5]] if label == "1" else [abst[0:2], "猫它"]
    return {"id": i, "abst": abst, "keyword": keywords, "label": label}


def cluewsc_row(rng: random.Random, i: int) -> dict[str, Any]:
    label = ("false", "true")[i % 2]
    noun, pronoun = ("猫", "它") if label == "true" else ("书", "他")
    before, middle, after = _text(rng, 3), _text(rng, 4), _text(rng, 2)
    text = before + noun + middle + pronoun + after
    return {"target": {"span2_index": len(before) + 1 + len(middle), "span1_index": len(before),
                       "span1_text": noun, "span2_text": pronoun},
            "idx": i, "label": label, "text": text}


def chid_row(rng: random.Random, i: int) -> dict[str, Any]:
    answer = i % 7
    cue = rng.choice(CUES)
    candidates = [_text(rng, 4) for _ in range(7)]
    candidates[answer] = cue + candidates[answer][1:]
    content = _text(rng, 5) + cue + "#idiom#" + _text(rng, 5)
    return {"id": i, "candidates": candidates, "content": content, "answer": answer}


ROWS = {"eprstmt": eprstmt_row, "tnews": tnews_row, "iflytek": iflytek_row,
        "csldcp": csldcp_row, "ocnli": ocnli_row, "bustm": bustm_row, "csl": csl_row,
        "cluewsc": cluewsc_row, "chid": chid_row}


# the keys of each task's test.json as FewCLUE ships it (its first line)
TEST_KEYS = {
    "eprstmt": ("id", "sentence"), "tnews": ("id", "sentence"), "iflytek": ("id", "sentence"),
    "csldcp": ("id", "content"), "ocnli": ("sentence1", "sentence2", "id"),
    "bustm": ("id", "sentence1", "sentence2"), "chid": ("id", "candidates", "content"),
    "csl": ("id", "abst", "keyword"), "cluewsc": ("target", "id", "text"),
}


def unlabelled_row(task: str, row: dict[str, Any]) -> dict[str, Any]:
    """A labelled row as FewCLUE's test.json has it: its keys only, the id under ``id``
    (CLUEWSC's ``idx`` renamed), TNEWS's id a string."""
    example_id = row["id"] if "id" in row else row["idx"]
    out = {key: (example_id if key == "id" else row[key]) for key in TEST_KEYS[task]}
    if task == "tnews":
        out["id"] = str(example_id)
    return out


def _write(path: Path, rows: list[dict[str, Any]]) -> None:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows),
                    encoding="utf-8")


def write_task(root: Path, task: str, seed: int = 0, n_test: int = 21) -> Path:
    """One task folder in FewCLUE's layout; returns it."""
    make = ROWS[task]
    rng = random.Random(f"{task}-{seed}")
    folder = Path(root) / task
    folder.mkdir(parents=True, exist_ok=True)
    counter = iter(range(10**6))
    trains, devs = [], []
    for split in SPLITS:
        train = [make(rng, next(counter)) for _ in range(TRAIN_SIZE)]
        dev = [make(rng, next(counter)) for _ in range(TRAIN_SIZE)]
        _write(folder / f"train_{split}.json", train)
        _write(folder / f"dev_{split}.json", dev)
        trains += train
        devs += dev
    _write(folder / "train_few_all.json", trains)
    _write(folder / "dev_few_all.json", devs)
    _write(folder / "test_public.json", [make(rng, next(counter)) for _ in range(n_test)])
    _write(folder / "test.json", [unlabelled_row(task, make(rng, next(counter)))
                                  for _ in range(n_test)])
    return folder


def write_fewclue(root: Path, tasks: tuple[str, ...] = TASKS, seed: int = 0) -> Path:
    """FewCLUE's datasets folder with ``tasks``; returns ``root``."""
    for task in tasks:
        write_task(root, task, seed)
    return Path(root)


def unlabelled_copy(path: Path, out: Path) -> Path:
    """``path`` without its labels: a file to predict, as FewCLUE's test.json is."""
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    for row in rows:
        row.pop("label", None)
        row.pop("answer", None)
    _write(out, rows)
    return out
