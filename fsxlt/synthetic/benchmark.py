"""The synthetic FS-XLT benchmark: four tasks over the artificial language family.

``generate_benchmark(out_dir)`` writes, for every language of the family:

=============== ============ =========================================== ===================
task            format       what                                        labels
=============== ============ =========================================== ===================
``synth-pos``   ``conll``    word classes of every word                  11 UPOS-like tags
``synth-ner``   ``conll``    BIO spans of person, organisation, location 7 BIO tags
``synth-topic`` ``mldoc``    a 2-3 sentence document's topic             arts, business,
                                                                         science, sports
``synth-pair``  ``tsv_pair`` do two sentences state the same predicate   same, different
                             with the same arguments in the same roles?
=============== ============ =========================================== ===================

Files: ``out_dir/<task>/{train,dev,test}-<lang>.tsv`` (the formats the real
readers of :mod:`fsxlt.data` parse), ``out_dir/<task>/task.yaml`` (a task
config listing exactly the generated languages, usable with ``--task``),
``out_dir/corpus/<lang>.txt`` (unlabelled sentences, one per line, for
pretraining the tiny encoder) and ``out_dir/benchmark.json`` (the languages'
overlap and word order, sizes, seed and the sha256 of every file).

Why each task behaves like its real counterpart
-----------------------------------------------
- **POS**: most words have one class, so a word-level memory already scores
  well in the source language; noun/verb homographs need context. In a
  target language the shared forms transfer directly and the rest must be
  learnt from context or from the few shots (function words are frequent,
  so even one bucket teaches many of them).
- **NER**: names are capitalised in every language (a shared cue), but the
  entity type depends on context: surnames double as place names, place
  names appear inside organisation names, a location follows an
  adposition. Multi-word names need B/I structure.
- **Topic**: a document's content words come from its topic's lexemes with
  probability 0.35, from another topic with probability 0.1, else from the
  general pool. Zero-shot accuracy rises with the number of topic words the
  target shares with the source, i.e. with overlap.
- **Pair**: PAWS-like. Negatives swap subject and object (same words, so
  only word order tells them apart), change the verb, or change one
  argument; both members of every pair get their modifiers (determiners,
  adjectives, adverb, prepositional phrase) re-drawn independently of the
  label, so surface similarity is no shortcut. Word order matters here most.

Latent sentences are drawn from a stream seeded by (seed, task, split) and
realised in every language, so the splits are parallel across languages
(like XNLI's translated test sets): differences between languages are due
to their lexicon and word order, not to different sentences. The
pretraining corpus instead uses an independent stream per language, so it
holds no translation pairs. Labels are balanced exactly for the two
classification tasks.
"""

from __future__ import annotations

import dataclasses
import json
import random
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml

from fsxlt.errors import FsxltError
from fsxlt.fileio import atomic_write_text, dumps_json, sha256_text
from fsxlt.synthetic.grammar import (
    DEFAULT_LANGUAGES,
    NER_TAGS,
    POS_TAGS,
    TOPICS,
    Clause,
    LanguageFamily,
    LanguageSpec,
    LatentGenerator,
    NounPhrase,
    Sentence,
    Style,
    build_family,
    latent_stream,
    rng_for,
)

GENERATOR_VERSION = 1
TASKS = ("synth-pos", "synth-ner", "synth-topic", "synth-pair")
SPLITS = ("train", "dev", "test")
PAIR_LABELS = ("same", "different")

#: Examples (sentences, documents or pairs) per language and split. Train must hold
#: 40 disjoint buckets of K=8 for the classification tasks (4 x 8 x 40 = 1280 documents).
DEFAULT_SIZES: dict[str, int] = {"train": 1600, "dev": 200, "test": 500}
DEFAULT_CORPUS_SENTENCES = 4000

STYLES = {
    "synth-pos": Style(entity_p=0.12),
    "synth-ner": Style(entity_p=0.45, pron_p=0.08),
    "synth-pair": Style(entity_p=0.15, pron_p=0.08, pp_p=0.3, adv_p=0.2, conj_p=0.0),
}
TOPIC_STYLE = Style(topic_p=0.35, distractor_p=0.1, entity_p=0.1, conj_p=0.1)


# --------------------------------------------------------------------------- task configs

def pet_section(task: str, family: LanguageFamily, languages: Sequence[str]
                ) -> dict[str, Any]:
    """The ``pet`` pattern and per-language verbalizers of a synthetic classification task.

    Topic: each topic's word is its first topical noun, in each language's own
    form (what a speaker of that language would call it). Pairs: the family
    has no words for "same" and "different", so two general adjectives stand
    in for them; their meaning must be learned from the shots.
    """
    lexicon = family.lexicon
    if task == "synth-topic":
        pattern = "{text_a} {mask}"
        lexemes = {topic: next(lex for lex in lexicon.by_class["NOUN"] if lex.topic == topic)
                   for topic in TOPICS}
    else:
        pattern = "{text_a} {mask} {text_b}"
        general = [lex for lex in lexicon.by_class["ADJ"] if lex.topic is None]
        lexemes = dict(zip(PAIR_LABELS, general, strict=False))
    verbalizers = {code: {label: family.vocabularies[code].forms[lex.slot]
                          for label, lex in lexemes.items()}
                   for code in ["en", *languages] if code in family.vocabularies}
    return {"pattern": pattern, "verbalizers": verbalizers}


def task_config(task: str, languages: Sequence[str],
                family: LanguageFamily | None = None) -> dict[str, Any]:
    """The task YAML mapping (same fields as ``configs/panx.yaml``) for ``languages``.

    The built-in ``configs/synth-*.yaml`` are this function's output for the
    default family. Learning rates are those of a tiny encoder trained from
    scratch, two orders of magnitude above mBERT's. Classification tasks get
    a ``pet`` section with ``family``'s words (default: the default family).
    """
    if task not in TASKS:
        raise FsxltError(f"unknown synthetic task {task!r}; valid: {', '.join(TASKS)}")
    common = {
        "source_language": "en",
        "languages": list(languages),
        "training": {"max_seq_length": 128, "lr_grid": [1.0e-4, 3.0e-4, 1.0e-3],
                     "source_epochs": 10, "source_batch_size": 32,
                     "adapt_max_epochs": 50, "adapt_patience": 10, "seed": 42},
    }
    nway = {"sampler": "nway-kshot", "split": "train", "k_values": [1, 2, 4, 8],
            "n_buckets": 40, "seed": 0}
    mi = {"sampler": "minimum-including", "split": "train", "k_values": [1, 2, 4],
          "n_buckets": 40, "seed": 0}
    data = {"pattern": "{split}-{lang}.tsv", "hf": None}
    if task == "synth-pos":
        spec = {"description": "Synthetic word-class tagging (fsxlt.synthetic)",
                "kind": "tagging", "input": "tokens", "labels": list(POS_TAGS),
                "label_unit": "tag", "metric": "token_accuracy",
                "data": {"format": "conll", **data}, "sampling": mi}
    elif task == "synth-ner":
        spec = {"description": "Synthetic named entities, BIO over PER/ORG/LOC "
                               "(fsxlt.synthetic)",
                "kind": "tagging", "input": "tokens", "labels": list(NER_TAGS),
                "label_unit": "entity", "metric": "seqeval_f1",
                "data": {"format": "conll", **data}, "sampling": mi}
    elif task == "synth-topic":
        spec = {"description": "Synthetic document topic classification (fsxlt.synthetic)",
                "kind": "classification", "input": "single", "labels": list(TOPICS),
                "metric": "accuracy", "data": {"format": "mldoc", **data}, "sampling": nway}
    else:
        spec = {"description": "Synthetic sentence pairs: same predicate and arguments? "
                               "(fsxlt.synthetic)",
                "kind": "classification", "input": "pair", "labels": list(PAIR_LABELS),
                "metric": "accuracy", "data": {"format": "tsv_pair", **data},
                "sampling": nway}
    if spec["kind"] == "classification":
        spec["pet"] = pet_section(task, family or build_family(), languages)
    return {"name": task, **spec, **common}


def task_yaml(task: str, languages: Sequence[str],
              family: LanguageFamily | None = None) -> str:
    """:func:`task_config` as YAML text, with a header comment."""
    header = (f"# {task}: a task of the synthetic language family (fsxlt.synthetic).\n"
              f"# Written by fsxlt.synthetic.task_yaml; generate the data with\n"
              f"# scripts/build_synthetic.py or fsxlt.synthetic.generate_benchmark(OUT),\n"
              f"# then pass --data-dir OUT/{task}.\n")
    return header + yaml.safe_dump(task_config(task, languages, family), sort_keys=False,
                                   default_flow_style=None, width=100)


# --------------------------------------------------------------------------- examples

def _tagging_examples(family: LanguageFamily, task: str, split: str, n: int, seed: int
                      ) -> dict[str, list[str]]:
    """One CoNLL block per sentence, per language."""
    stream = latent_stream(family.lexicon, rng_for(seed, task, split), STYLES[task])
    column = 1 if task == "synth-pos" else 2
    out: dict[str, list[str]] = {code: [] for code in family.vocabularies}
    realizers = {code: family.realizer(code) for code in family.vocabularies}
    for _ in range(n):
        sentence = next(stream)
        for code, realizer in realizers.items():
            words = realizer.sentence(sentence)
            out[code].append("\n".join(f"{w[0]}\t{w[column]}" for w in words))
    return out


def _balanced_labels(labels: Sequence[str], n: int, rng: random.Random) -> list[str]:
    seq = [labels[i % len(labels)] for i in range(n)]
    rng.shuffle(seq)
    return seq


def _topic_examples(family: LanguageFamily, split: str, n: int, seed: int
                    ) -> dict[str, list[str]]:
    rng = rng_for(seed, "synth-topic", split)
    gen = LatentGenerator(family.lexicon, rng)
    realizers = {code: family.realizer(code) for code in family.vocabularies}
    out: dict[str, list[str]] = {code: [] for code in family.vocabularies}
    for topic in _balanced_labels(TOPICS, n, rng):
        style = dataclasses.replace(TOPIC_STYLE, topic=topic)
        sentences = [gen.sentence(style) for _ in range(rng.choice((2, 2, 3)))]
        for code, realizer in realizers.items():
            text = " ".join(w[0] for s in sentences for w in realizer.sentence(s))
            out[code].append(f"{topic}\t{text}")
    return out


def _same_content(a: NounPhrase, b: NounPhrase) -> bool:
    return (a.noun, a.name, a.pron) == (b.noun, b.name, b.pron)


def _remodify(gen: LatentGenerator, clause: Clause, style: Style, p: float = 0.25) -> Clause:
    """Re-draw some modifiers of a clause (never its predicate or arguments).

    Each noun phrase's determiner, numeral and adjectives are re-drawn with
    probability ``p``, as is the adverb; the prepositional phrase is dropped
    or added with probability ``p / 2``.
    """
    rng = gen.rng

    def np_(phrase: NounPhrase | None) -> NounPhrase | None:
        if phrase is None or phrase.noun is None or rng.random() >= p:
            return phrase
        fresh = gen.noun_phrase(dataclasses.replace(style, entity_p=0.0, pron_p=0.0), "obj")
        return dataclasses.replace(fresh, noun=phrase.noun)

    adv, adp, pobj = clause.adv, clause.adp, clause.pobj
    if rng.random() < p:
        adv = gen._pick("ADV", style) if rng.random() < style.adv_p else None
    if rng.random() < p / 2:
        adp, pobj = ((gen._pick("ADP", style), gen.noun_phrase(style, "pobj"))
                     if adp is None else (None, None))
    return dataclasses.replace(clause, subj=np_(clause.subj), obj=np_(clause.obj),
                               adv=adv, adp=adp, pobj=np_(pobj))


def _pair_examples(family: LanguageFamily, split: str, n: int, seed: int
                   ) -> dict[str, list[str]]:
    rng = rng_for(seed, "synth-pair", split)
    gen = LatentGenerator(family.lexicon, rng)
    style = STYLES["synth-pair"]
    realizers = {code: family.realizer(code) for code in family.vocabularies}
    out: dict[str, list[str]] = {code: [] for code in family.vocabularies}
    for label in _balanced_labels(PAIR_LABELS, n, rng):
        while True:
            a = gen.clause(style, transitive=True)
            assert a.obj is not None
            if not _same_content(a.subj, a.obj):
                break
        core = a
        if label == "different":
            kind = rng.choices(("swap", "verb", "arg"), (0.4, 0.3, 0.3))[0]
            if kind == "swap":
                core = dataclasses.replace(a, subj=a.obj, obj=a.subj)
            elif kind == "verb":
                while core.verb.slot == a.verb.slot:
                    core = dataclasses.replace(a, verb=gen._pick("VERB", style))
            else:
                role = rng.choice(("subj", "obj"))
                old = getattr(a, role)
                new = old
                while _same_content(new, old) or _same_content(new, a.obj if role == "subj"
                                                               else a.subj):
                    new = gen.noun_phrase(style, role)
                core = dataclasses.replace(a, **{role: new})
        b = _remodify(gen, core, style)
        sa, sb = Sentence((a,)), Sentence((b,))
        for code, realizer in realizers.items():
            text_a = " ".join(w[0] for w in realizer.sentence(sa))
            text_b = " ".join(w[0] for w in realizer.sentence(sb))
            out[code].append(f"{text_a}\t{text_b}\t{label}")
    return out


def _corpus(family: LanguageFamily, code: str, n: int, seed: int) -> list[str]:
    """Unlabelled sentences of one language: a mix of plain, name-rich and topical text."""
    rng = rng_for(seed, "corpus", code)
    gen = LatentGenerator(family.lexicon, rng)
    realizer = family.realizer(code)
    styles = [STYLES["synth-pos"], STYLES["synth-ner"]]
    styles += [dataclasses.replace(TOPIC_STYLE, topic=t) for t in TOPICS]
    lines = []
    for _ in range(n):
        style = rng.choice(styles)
        lines.append(" ".join(w[0] for w in realizer.sentence(gen.sentence(style))))
    return lines


# --------------------------------------------------------------------------- writing

def _resolve_sizes(sizes: Mapping[str, Any] | None) -> dict[str, dict[str, int]]:
    """``sizes`` maps split -> count, or task -> {split -> count}; missing entries use defaults."""
    resolved = {task: dict(DEFAULT_SIZES) for task in TASKS}
    for key, value in (sizes or {}).items():
        if key in SPLITS:
            for task in TASKS:
                resolved[task][key] = int(value)
        elif key in TASKS and isinstance(value, Mapping):
            for split, count in value.items():
                if split not in SPLITS:
                    raise FsxltError(f"sizes[{key!r}]: unknown split {split!r}")
                resolved[key][split] = int(count)
        else:
            raise FsxltError(f"sizes: unknown key {key!r}; use a split ({', '.join(SPLITS)}) "
                             f"or a task ({', '.join(TASKS)})")
    for task, per_split in resolved.items():
        for split, count in per_split.items():
            if count < 1:
                raise FsxltError(f"sizes: {task} {split} needs at least one example, got {count}")
    return resolved


def _type_overlap(blocks: list[str], source_blocks: list[str]) -> float:
    """|V_L ∩ V_src| / |V_L| over word types of two CoNLL sample lists.

    The lexical overlap of docs/protocol.md#analyses."""
    def types(bl: list[str]) -> set[str]:
        return {line.split("\t")[0] for block in bl for line in block.splitlines()}
    target, source = types(blocks), types(source_blocks)
    return len(target & source) / len(target) if target else 0.0


def generate_benchmark(out_dir: str | Path, seed: int = 0, *,
                       sizes: Mapping[str, Any] | None = None,
                       languages: Sequence[LanguageSpec] = DEFAULT_LANGUAGES,
                       tasks: Sequence[str] = TASKS,
                       corpus_sentences: int = DEFAULT_CORPUS_SENTENCES) -> dict[str, Any]:
    """Write the synthetic benchmark under ``out_dir`` and return its description.

    ``sizes`` overrides the number of examples per split (``{"train": 400}``)
    or per task and split (``{"synth-topic": {"train": 200}}``).
    ``languages``: the family, source first (overlap 1.0). Every file is
    written atomically; the same arguments give byte-identical files. The
    returned mapping is what ``out_dir/benchmark.json`` holds, plus ``paths``:
    task -> split -> language -> file path.
    """
    out = Path(out_dir)
    for task in tasks:
        if task not in TASKS:
            raise FsxltError(f"unknown synthetic task {task!r}; valid: {', '.join(TASKS)}")
    per_task = _resolve_sizes(sizes)
    family = build_family(languages, seed)
    codes = list(family.vocabularies)
    source = codes[0]
    files: dict[str, str] = {}
    paths: dict[str, dict[str, dict[str, str]]] = {}
    pos_train: dict[str, list[str]] = {}
    for task in tasks:
        paths[task] = {}
        for split in SPLITS:
            n = per_task[task][split]
            if task in ("synth-pos", "synth-ner"):
                rows = _tagging_examples(family, task, split, n, seed)
                texts = {c: "\n\n".join(r) + "\n" for c, r in rows.items()}
                if task == "synth-pos" and split == "train":
                    pos_train = rows
            elif task == "synth-topic":
                texts = {c: "\n".join(r) + "\n" for c, r in
                         _topic_examples(family, split, n, seed).items()}
            else:
                texts = {c: "\n".join(r) + "\n" for c, r in
                         _pair_examples(family, split, n, seed).items()}
            paths[task][split] = {}
            for code, text in texts.items():
                rel = f"{task}/{split}-{code}.tsv"
                files[rel] = text
                paths[task][split][code] = str(out / rel)
        files[f"{task}/task.yaml"] = task_yaml(task, codes, family)
    if corpus_sentences > 0:
        for code in codes:
            files[f"corpus/{code}.txt"] = "\n".join(
                _corpus(family, code, corpus_sentences, seed)) + "\n"

    lang_info = []
    for lang in family.languages:
        info = lang.to_dict()
        info["lexicon_overlap"] = round(family.lexicon_overlap(lang.code), 4)
        if pos_train:
            info["type_overlap_pos_train"] = round(
                _type_overlap(pos_train[lang.code], pos_train[source]), 4)
        lang_info.append(info)
    description: dict[str, Any] = {
        "format": "fsxlt-synthetic",
        "generator_version": GENERATOR_VERSION,
        "seed": seed,
        "source_language": source,
        "languages": lang_info,
        "tasks": list(tasks),
        "sizes": {t: per_task[t] for t in tasks},
        "corpus_sentences": corpus_sentences,
        "files": {rel: sha256_text(text) for rel, text in sorted(files.items())},
    }
    for rel, text in sorted(files.items()):
        atomic_write_text(out / rel, text)
    atomic_write_text(out / "benchmark.json", dumps_json(description))
    return {**description, "paths": paths}


def read_description(out_dir: str | Path) -> dict[str, Any]:
    """The ``benchmark.json`` of a generated benchmark."""
    path = Path(out_dir) / "benchmark.json"
    if not path.is_file():
        raise FsxltError(f"{path}: not found; generate the benchmark first "
                         "(fsxlt.synthetic.generate_benchmark)")
    return json.loads(path.read_text(encoding="utf-8"))
