"""Extractive QA fixtures: small SQuAD v1.1 JSON files in XQuAD's, MLQA's and TyDiQA-GoldP's
layouts, over the tiny BERT vocabulary of :mod:`tests.train_fixtures` (plus ``who`` and ``?``).

A paragraph says where four people went, three times over (so that long contexts need
several windows at a small ``max_seq_length``); each question asks who went to one place.
Question ids are the same in every language, as XQuAD's and MLQA's are.
"""

from __future__ import annotations

import itertools
import json
import random
from pathlib import Path
from typing import Any

QA_EXTRA = ("who", "?")
NAMES = ["john", "maria", "li", "ahmed"]
PLACES = ["paris", "berlin", "cairo", "lima"]


ORDERS = list(itertools.permutations(range(4)))


def paragraph(rng: random.Random, index: int, n_questions: int, repeat: int = 3,
              ) -> dict[str, Any]:
    """Paragraph ``index`` (a context no other index below 576 has): who went where is
    the ``index % 24``-th pairing of names and places, told in the ``index // 24``-th
    order; ``rng`` picks the questions' order."""
    pairing = [(NAMES[i], PLACES[j]) for i, j in enumerate(ORDERS[index % 24])]
    pairing = [pairing[k] for k in ORDERS[index // 24 % 24]]
    names, places = [n for n, _ in pairing], [p for _, p in pairing]
    asked = rng.sample(range(4), 4)
    context = " ".join(f"{n} went to {p} ." for n, p in zip(names, places, strict=True))
    context = " ".join([context] * repeat)
    qas = []
    for q in range(n_questions):
        j = asked[q % 4]
        start = context.index(f"{names[j]} went to {places[j]}")
        qas.append({"id": f"p{index:03d}q{q}", "question": f"who went to {places[j]} ?",
                    "answers": [{"text": names[j], "answer_start": start}]})
    return {"context": context, "qas": qas}


def squad_data(n_paragraphs: int, seed: int = 0, questions: int = 3,
               repeat: int = 3, first: int = 0) -> dict[str, Any]:
    """A SQuAD v1.1 JSON object: ``n_paragraphs`` paragraphs of ``questions`` questions,
    in articles of five paragraphs (XQuAD's 48 articles of 5); ``first``: the index of
    the first paragraph (a file of other paragraphs than another's)."""
    rng = random.Random(seed)
    paras = [paragraph(rng, first + i, questions, repeat) for i in range(n_paragraphs)]
    return {"version": "1.1", "data": [{"title": f"article {a}", "paragraphs": paras[a:a + 5]}
                                       for a in range(0, n_paragraphs, 5)]}


def write_json(path: Path, data: dict[str, Any]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
    return path


def write_xquad(directory: Path, languages: tuple[str, ...] = ("en", "de"),
                n_paragraphs: int = 200) -> Path:
    """``xquad.<lang>.json`` per language, the same paragraphs and ids in each."""
    for language in languages:
        write_json(directory / f"xquad.{language}.json", squad_data(n_paragraphs))
    return directory


def write_mlqa(directory: Path, languages: tuple[str, ...] = ("en", "de"),
               n_paragraphs: int = 40) -> Path:
    """MLQA's own layout (``MLQA_V1/{dev,test}/...``) and SQuAD's ``train-v1.1.json``."""
    write_json(directory / "train-v1.1.json", squad_data(n_paragraphs, seed=7))
    for language in languages:
        for split, seed, first in (("dev", 1, 0), ("test", 2, n_paragraphs)):
            write_json(directory / "MLQA_V1" / split /  # test: paragraphs of its own
                       f"{split}-context-{language}-question-{language}.json",
                       squad_data(n_paragraphs, seed=seed, first=first))
    return directory


def write_tydiqa(directory: Path, languages: tuple[str, ...] = ("en", "fi"),
                 n_paragraphs: int = 40) -> Path:
    """XTREME's TyDiQA-GoldP files: ``tydiqa-goldp-v1.1-{train,dev}/tydiqa.goldp.<lang>...``."""
    for language in languages:
        for split, seed in (("train", 3), ("dev", 4)):
            write_json(directory / f"tydiqa-goldp-v1.1-{split}" /
                       f"tydiqa.goldp.{language}.{split}.json", squad_data(n_paragraphs, seed))
    return directory
