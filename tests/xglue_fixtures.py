"""Small files in exactly XGLUE's formats (its Data_Format.txt), one writer per task.

Every writer makes a label readable from a cue word, so a tiny model can
learn something, and writes test files the way XGLUE ships them: the TSV
tasks' test files carry no label, NER/POS test files carry tags, XNLI is one
file of every language, PAWS-X has a folder per language and a header line.
"""

from __future__ import annotations

import random
from pathlib import Path

from tests.train_fixtures import FILLER, ORGS, PERSONS, PLACES

NC_LABELS = ("foodanddrink", "sports", "news", "entertainment", "health", "video", "finance",
             "travel", "lifestyle", "autos")
NER_TAGS = ("O", "I-PER", "I-LOC", "I-ORG", "I-MISC")
XNLI_HEADER = ("language", "gold_label", "sentence1_binary_parse", "sentence2_binary_parse",
               "sentence1_parse", "sentence2_parse", "sentence1", "sentence2", "promptID",
               "pairID", "genre")
NLI_CUES = {"entailment": "happy", "neutral": "big", "contradiction": "not"}


def _words(rng: random.Random, n: int) -> str:
    return " ".join(rng.choice(FILLER[:12]) for _ in range(n))


def _write(path: Path, lines: list[str]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def write_qadsm(directory: Path, lang: str, split: str, n: int, seed: int = 0) -> Path:
    """``query<TAB>ad title<TAB>ad description[<TAB>Good|Bad]``."""
    rng = random.Random(f"qadsm{lang}{split}{seed}")
    lines = []
    for i in range(n):
        label = ("Good", "Bad")[i % 2]
        title = ("happy " if label == "Good" else "sad ") + rng.choice(PLACES)
        row = [_words(rng, 3), title, _words(rng, 5)]
        lines.append("\t".join(row + ([label] if split != "test" else [])))
    return _write(directory / f"xglue.qadsm.{lang}.{split}", lines)


def write_nc(directory: Path, lang: str, split: str, n: int, seed: int = 0) -> Path:
    """``query<TAB>news title<TAB>news body[<TAB>category]``; the cue is a filler word."""
    rng = random.Random(f"nc{lang}{split}{seed}")
    lines = []
    for i in range(n):
        label = NC_LABELS[i % len(NC_LABELS)]
        row = [_words(rng, 2), f"{FILLER[NC_LABELS.index(label)]} {_words(rng, 2)}",
               _words(rng, 6)]
        lines.append("\t".join(row + ([label] if split != "test" else [])))
    return _write(directory / f"xglue.nc.{lang}.{split}", lines)


def write_qam(directory: Path, lang: str, split: str, n: int, seed: int = 0) -> Path:
    """``question<TAB>answer passage[<TAB>0|1]``."""
    rng = random.Random(f"qam{lang}{split}{seed}")
    lines = []
    for i in range(n):
        label = str(i % 2)
        passage = ("happy " if label == "1" else "sad ") + _words(rng, 6)
        lines.append("\t".join([_words(rng, 4), passage] + ([label] if split != "test" else [])))
    return _write(directory / f"xglue.qam.{lang}.{split}", lines)


def write_wpr(directory: Path, lang: str, split: str, n_queries: int, seed: int = 0) -> Path:
    """``query<TAB>page title<TAB>page snippet[<TAB>grade 0-4]``, 2-5 pages per query,
    a query's pages on consecutive lines; the grade is readable from the title."""
    rng = random.Random(f"wpr{lang}{split}{seed}")
    cues = ("not", "sad", "small", "big", "happy")
    lines = []
    for q in range(n_queries):
        query = f"{rng.choice(PERSONS)} {rng.choice(PLACES)} {q}"
        for _ in range(rng.randint(2, 5)):
            grade = rng.randint(0, 4)
            row = [query, f"{cues[grade]} {_words(rng, 2)}", _words(rng, 5)]
            lines.append("\t".join(row + ([str(grade)] if split != "test" else [])))
    return _write(directory / f"xglue.wpr.{lang}.{split}", lines)


def write_ner(directory: Path, lang: str, split: str, n: int) -> Path:
    """``word<SPACE>tag`` lines in IOB1 (with MISC), a blank line between sentences."""
    rng = random.Random(f"ner{lang}{split}")
    blocks = []
    for i in range(n):
        words = [(rng.choice(FILLER), "O") for _ in range(3)]
        entity = NER_TAGS[1 + i % 4]
        name = {"I-PER": PERSONS, "I-LOC": PLACES}.get(entity, ORGS)
        words.insert(1, (rng.choice(name), entity))
        blocks.append("\n".join(f"{w} {t}" for w, t in words))
    return _write(directory / f"{lang}.{split}", ["\n\n".join(blocks)])


def write_pos(directory: Path, lang: str, split: str, n: int) -> Path:
    """``word<SPACE>UPOS`` lines, a blank line between sentences."""
    rng = random.Random(f"pos{lang}{split}")
    blocks = []
    for _ in range(n):
        words = [(rng.choice(("the", "a")), "DET"), (rng.choice(("cat", "dog", "city")), "NOUN"),
                 (rng.choice(("saw", "went", "met")), "VERB"), (rng.choice(PERSONS), "PROPN"),
                 (".", "PUNCT")]
        blocks.append("\n".join(f"{w} {t}" for w, t in words))
    return _write(directory / f"{lang}.{split}", ["\n\n".join(blocks)])


def _nli_pair(rng: random.Random, label: str) -> tuple[str, str]:
    return _words(rng, 4), f"{rng.choice(PERSONS)} {NLI_CUES[label]} {_words(rng, 1)}"


def write_xnli(directory: Path, split: str, n_per_language: int,
               languages: tuple[str, ...] = ("de", "en", "zh")) -> Path:
    """XNLI 1.0's / XGLUE's ``xnli.<split>.tsv``: a header, every language in one file."""
    rng = random.Random(f"xnli{split}")
    lines = ["\t".join(XNLI_HEADER)]
    for lang in languages:
        for i in range(n_per_language):
            label = tuple(NLI_CUES)[i % 3]
            a, b = _nli_pair(rng, label)
            lines.append("\t".join([lang, label, f"( {a} )", f"( {b} )", f"(ROOT {a})",
                                    f"(ROOT {b})", a, b, str(i), f"{i}{lang}", "fiction"]))
    return _write(directory / f"xnli.{split}.tsv", lines)


def write_multinli(directory: Path, n: int) -> Path:
    """``multinli.train.en.tsv``: header ``premise hypo label``, MultiNLI's ``contradictory``."""
    rng = random.Random("multinli")
    lines = ["premise\thypo\tlabel"]
    for i in range(n):
        label = tuple(NLI_CUES)[i % 3]
        a, b = _nli_pair(rng, label)
        lines.append("\t".join([a, b, "contradictory" if label == "contradiction" else label]))
    return _write(directory / "multinli.train.en.tsv", lines)


def write_pawsx(directory: Path, lang: str, split: str, n: int) -> Path:
    """PAWS-X's / XGLUE's ``<lang>/{train,dev_2k,test_2k}.tsv``: ``id sentence1 sentence2
    label`` with a header line."""
    rng = random.Random(f"pawsx{lang}{split}")
    lines = ["id\tsentence1\tsentence2\tlabel"]
    for i in range(n):
        label = str(i % 2)
        a = _words(rng, 4)
        b = ("happy " if label == "1" else "not ") + a
        lines.append("\t".join([str(i + 1), a, b, label]))
    name = "train.tsv" if split == "train" else f"{split}_2k.tsv"
    return _write(directory / lang / name, lines)


def write_task(task: str, directory: Path, n_train: int = 24) -> dict[str, Path | int]:
    """English train and dev and German dev and test for ``task`` in XGLUE's layout under
    ``directory/data``, and the German file to predict as XGLUE ships it: returns its path
    (``predict``) and how many prediction lines XGLUE expects for it (``lines``).

    XGLUE's test files of the TSV tasks carry no label, so their labelled test set
    here stands for a held-out part of dev; the file to predict is the unlabelled one.
    """
    data, shipped = directory / "data", directory / "to-predict"
    tsv = {"nc": write_nc, "qadsm": write_qadsm, "qam": write_qam}
    if task in tsv:
        write = tsv[task]
        write(data, "en", "train", n_train)
        write(data, "en", "dev", 12, seed=1)
        write(data, "de", "dev", 60 if task == "nc" else 20, seed=2)
        write(directory / "held-out", "de", "dev", 10, seed=3).rename(
            data / f"xglue.{task}.de.test")
        return {"predict": write(shipped, "de", "test", 12, seed=4), "lines": 12}
    if task == "wpr":
        write_wpr(data, "en", "train", 8)
        write_wpr(data, "en", "dev", 4, seed=1)
        write_wpr(data, "de", "dev", 10, seed=2)
        write_wpr(directory / "held-out", "de", "dev", 4, seed=3).rename(
            data / "xglue.wpr.de.test")
        predict = write_wpr(shipped, "de", "test", 4, seed=4)
        return {"predict": predict, "lines": len(predict.read_text().splitlines())}
    if task in ("xglue-ner", "xglue-pos"):
        write = write_ner if task == "xglue-ner" else write_pos
        write(data, "en", "train", n_train)
        write(data, "en", "dev", 8)
        write(data, "de", "dev", 30)
        return {"predict": write(data, "de", "test", 6), "lines": 6}
    if task == "xnli":
        write_multinli(data, n_train)
        write_xnli(data, "dev", 24)
        return {"predict": write_xnli(data, "test", 9), "lines": 9}
    if task == "pawsx":
        write_pawsx(data, "en", "train", n_train)
        write_pawsx(data, "en", "dev", 8)
        write_pawsx(data, "de", "dev", 20)
        return {"predict": write_pawsx(data, "de", "test", 10), "lines": 10}  # 11 - header
    raise ValueError(task)
