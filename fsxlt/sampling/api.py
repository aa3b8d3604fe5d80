"""Sampling entry points: from a task's data to bucket sets in the store."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fsxlt.data import (
    ChoiceExample,
    Example,
    GenerationExample,
    QAExample,
    Split,
    TaggedSentence,
    TextExample,
    load_split,
    read_examples,
)
from fsxlt.data.readings import DEFAULT_READING, Reading
from fsxlt.errors import FsxltError
from fsxlt.sampling.samplers import (
    check_k,
    derive_rng,
    k_examples,
    k_pairs,
    k_queries,
    k_questions,
    minimum_including,
    nway_kshot,
    present_labels,
    query_of,
    remaining_examples,
    sentence_label_counts,
    untouched_pairs,
    untouched_questions,
    without_texts,
)
from fsxlt.sampling.store import BucketSet, write_sets
from fsxlt.tasks import TaskSpec, get_task


@dataclass(frozen=True)
class Drawn:
    """What a sampler drew: the examples it drew from, the buckets, the labels the buckets
    are balanced over and the task labels absent from the data (tagging)."""

    pool: list[Example]
    buckets: list[list[Example]]
    labels: list[str]
    missing: list[str] = field(default_factory=list)


def _of_type(split: Split, kind: type) -> list[Any]:
    return [ex for ex in split.examples if isinstance(ex, kind)]


def draw_nway_kshot(task: TaskSpec, split: Split, k: int, n_buckets: int, seed: int,
                    context: str) -> Drawn:
    """Disjoint buckets of exactly K examples of every label (classification)."""
    examples = _of_type(split, TextExample)
    rng = derive_rng(seed, task.name, split.language, k)
    return Drawn(examples, nway_kshot(examples, task.labels, k, n_buckets, rng, context),
                 list(task.labels))


def draw_k_examples(task: TaskSpec, split: Split, k: int, n_buckets: int, seed: int,
                    context: str) -> Drawn:
    """Disjoint buckets of exactly K examples, no per-label quota (multiple choice)."""
    examples = _of_type(split, ChoiceExample)
    rng = derive_rng(seed, task.name, split.language, k)
    return Drawn(examples, k_examples(examples, k, n_buckets, rng, context), list(task.labels))


def draw_k_queries(task: TaskSpec, split: Split, k: int, n_buckets: int, seed: int,
                   context: str) -> Drawn:
    """Disjoint buckets of exactly K queries, each with all its pages (ranking)."""
    examples = _of_type(split, TextExample)
    rng = derive_rng(seed, task.name, split.language, k)
    return Drawn(examples, k_queries(examples, k, n_buckets, rng, context), list(task.labels))


def draw_k_questions(task: TaskSpec, split: Split, k: int, n_buckets: int, seed: int,
                     context: str) -> Drawn:
    """Disjoint buckets of exactly K questions on paragraphs no other bucket touches
    (extractive QA)."""
    questions = _of_type(split, QAExample)
    rng = derive_rng(seed, task.name, split.language, k)
    return Drawn(questions, k_questions(questions, k, n_buckets, rng, context), [])


def draw_k_pairs(task: TaskSpec, split: Split, k: int, n_buckets: int, seed: int,
                 context: str) -> Drawn:
    """Buckets of exactly K (source, target) pairs with distinct sources, no source in two
    buckets (generation)."""
    pairs = _of_type(split, GenerationExample)
    rng = derive_rng(seed, task.name, split.language, k)
    return Drawn(pairs, k_pairs(pairs, k, n_buckets, rng, context), [])


def draw_minimum_including(task: TaskSpec, split: Split, k: int, n_buckets: int, seed: int,
                           context: str) -> Drawn:
    """Independent Minimum-Including buckets, one seeded draw each (tagging); labels that
    never occur in the split are left out of the label set and reported as missing."""
    sentences = _of_type(split, TaggedSentence)
    counts = [sentence_label_counts(s, task.label_unit) for s in sentences]
    labels, missing = present_labels(counts, task.sampling_labels)
    if not labels:
        raise FsxltError(f"{context}: no label of the task occurs in {split.source}")
    buckets = []
    for index in range(n_buckets):
        rng = derive_rng(seed, task.name, split.language, k, index)
        buckets.append([sentences[i] for i in minimum_including(counts, labels, k, rng,
                                                                 context)])
    return Drawn(sentences, buckets, labels, missing)


# a task YAML's ``sampling.sampler`` -> how its buckets are drawn
SAMPLERS: dict[str, Callable[[TaskSpec, Split, int, int, int, str], Drawn]] = {
    "nway-kshot": draw_nway_kshot,
    "k-examples": draw_k_examples,
    "k-queries": draw_k_queries,
    "k-questions": draw_k_questions,
    "k-pairs": draw_k_pairs,
    "minimum-including": draw_minimum_including,
}


def sample_set(task: str | TaskSpec, split: Split, k: int, *, n_buckets: int | None = None,
               seed: int | None = None) -> BucketSet:
    """Draw all buckets of one (task, language, K) from a loaded split, by the sampler its
    YAML names (``sampling.sampler``, one of :data:`SAMPLERS`).

    ``nway-kshot`` (classification) draws disjoint buckets; ``k-examples``
    (multiple choice) disjoint buckets of K examples (no per-label quota),
    ``k-queries`` (ranking) disjoint buckets of K queries, each with all its
    pages, ``k-pairs`` (generation) buckets of K pairs on sources no other bucket
    has; ``minimum-including`` (tagging) one independent draw per bucket,
    leaving labels that never occur in the pool out of the label set (they
    are recorded in ``missing_labels``). When the task samples from its dev
    split, the dev examples in no bucket are kept as the new dev set.

    A set drawn from a dev split must leave dev examples for model
    selection (see :func:`dev_remaining`); one that leaves none is an error.
    """
    task = get_task(task)
    n_buckets = task.sampling.n_buckets if n_buckets is None else n_buckets
    seed = task.sampling.seed if seed is None else seed
    check_k(k, n_buckets)
    context = f"{task.name}/{split.language} K={k}"
    drawn = SAMPLERS[task.sampling.sampler](task, split, k, n_buckets, seed, context)
    held_out = holdout_test(task, split)
    return BucketSet(task=task.name, language=split.language, k=k,
                     sampler=task.sampling.sampler, seed=seed, split=split.split,
                     source_file=Path(split.source).name, source_sha256=split.sha256,
                     labels=drawn.labels, missing_labels=drawn.missing, buckets=drawn.buckets,
                     dev_remaining=dev_remaining(task, split, drawn.pool, drawn.buckets,
                                                 context, seed, split.reading),
                     test=held_out, reading=split.reading.to_dict(),
                     test_source=None if held_out is None else {
                         "file": Path(split.source).name, "sha256": split.sha256,
                         "part": f"the {task.data.holdout_paragraphs} held-out paragraphs"})


def holdout_test(task: TaskSpec, split: Split) -> list[Example] | None:
    """The test split of a task that holds paragraphs out of its one file per language
    (XQuAD), stored in the set so that runs never read the whole file as test; None for
    other tasks (their test file is the task's own)."""
    if not task.data.holdout_paragraphs:
        return None
    if split.source.startswith("hf:"):
        return load_split(task, split.language, "test", reading=split.reading).examples
    return read_examples(split.source, task, language=split.language, split="test",
                         reading=split.reading)


def dev_remaining(task: TaskSpec, split: Split, pool: Sequence[Example],
                  buckets: Sequence[Sequence[Example]], context: str,
                  seed: int = 0, reading: Reading = DEFAULT_READING) -> list[Example] | None:
    """The dev examples in no bucket (the set's early-stopping data), or None off a dev split.
    Reading ``remaining=by-text`` leaves out every line holding a bucket example's text as
    well; the other choices leave out the bucket lines only.

    Extractive QA (any split): the questions on paragraphs no bucket touches, at most
    ``sampling.dev_paragraphs`` paragraphs of them (a seeded choice). Generation: the
    pairs whose source no bucket has.

    Refused in one line when the buckets leave nothing to select a model on:
    no example at all, or, for a ranking task, no query with two judged pages
    (the only queries nDCG can score).
    """
    if task.is_qa:
        remaining = untouched_questions(pool, buckets, task.sampling.dev_paragraphs,
                                        derive_rng(seed, task.name, split.language, "dev"))
    elif split.split != "dev":
        return None
    elif task.is_generation:
        remaining = untouched_pairs(pool, buckets)  # type: ignore[arg-type]
    else:
        remaining = remaining_examples(pool, buckets)
        if reading.get("remaining") == "by-text":
            remaining = without_texts(remaining, buckets)
    source = Path(split.source).name
    if not remaining:
        raise FsxltError(f"{context}: the buckets use every example of {source}, leaving no "
                         "dev examples for model selection (use fewer buckets or a smaller K)")
    if task.is_ranking:
        pages: dict[str, int] = {}
        for example in remaining:
            pages[query_of(example)] = pages.get(query_of(example), 0) + 1
        if max(pages.values()) < 2:
            raise FsxltError(f"{context}: no query of {source} left out of the buckets has two "
                             "judged pages, so the dev nDCG for model selection has nothing to "
                             "rank (use fewer buckets or a smaller K)")
    return remaining


def sample(task: str | TaskSpec, languages: Sequence[str], ks: Sequence[int], out: str | Path, *,
           data: str | Path | None = None, data_dir: str | Path | None = None,
           split: str | None = None, n_buckets: int | None = None, seed: int | None = None,
           replace: bool = False, reading: Reading = DEFAULT_READING,
           progress: Callable[[Iterable], Iterable] = lambda it: it) -> list[BucketSet]:
    """Sample bucket sets for every language and K and write them under ``out``.

    Data comes from ``data`` (one file, one language), ``data_dir`` (the
    task's file pattern) or, with neither, the Hugging Face hub, read by ``reading``
    (:mod:`fsxlt.data.readings`; the sets record it, and their runs read their dev and
    test files the same way). Everything
    is sampled before anything is written, so an error writes nothing. Sets
    are written by the store's write-once rule (:func:`write_sets`): a set
    already there unchanged is left alone, another one is refused unless
    ``replace``; each set's ``written`` says what happened.
    """
    task = get_task(task)
    if not languages:
        raise FsxltError("give at least one language")
    for language in languages:
        task.check_language(language)
    if data is not None and len(languages) != 1:
        raise FsxltError("--data names one file, so give exactly one --lang (or use --data-dir)")
    split = split or task.sampling.split
    sets = []
    for language in progress(list(languages)):
        loaded = load_split(task, language, split, path=data, data_dir=data_dir,
                            reading=reading)
        sets.extend(sample_set(task, loaded, k, n_buckets=n_buckets, seed=seed) for k in ks)
    write_sets(out, sets, replace=replace)
    return sets
