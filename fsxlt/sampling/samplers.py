"""The bucket samplers of docs/protocol.md#buckets, pure functions of their inputs and a seed.

* :func:`nway_kshot` (classification): 40 pairwise disjoint buckets, each
  with exactly K examples of every label.
* :func:`k_examples` (multiple choice): disjoint buckets of exactly K
  examples each, no per-label quota (the labels are candidate positions).
* :func:`k_queries` (ranking, XGLUE's WPR): disjoint buckets of exactly K
  queries, each with all its judged pages; no per-grade quota.
* :func:`k_questions` (extractive QA): disjoint buckets of exactly K
  questions whose paragraphs no other bucket touches.
* :func:`k_pairs` (generation): buckets of exactly K (source, target) pairs
  with K distinct sources, no source in two buckets.
* :func:`minimum_including` (tagging, Hou et al. 2020): one bucket in which
  every label occurs at least K times and no sentence can be dropped without
  breaking that. Buckets are drawn independently, so two buckets may share
  sentences.

Randomness comes from :func:`derive_rng`, which turns the seed and the
bucket's coordinates (task, language, K, index) into an independent NumPy
stream; nothing touches global RNG state, so results do not depend on what
ran before.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Sequence

import numpy as np

from fsxlt.data import Example, GenerationExample, QAExample, TaggedSentence, TextExample
from fsxlt.data.qa import paragraphs
from fsxlt.errors import FsxltError, InsufficientDataError


def _stable_int(part: str | int) -> int:
    if isinstance(part, int):
        return part
    return int.from_bytes(hashlib.sha256(part.encode("utf-8")).digest()[:8], "little")


def derive_rng(seed: int, *coordinates: str | int) -> np.random.Generator:
    """An RNG that depends only on ``seed`` and ``coordinates``, stable across runs and machines."""
    return np.random.default_rng([_stable_int(seed), *(_stable_int(c) for c in coordinates)])


# --------------------------------------------------------------------------- multiple choice

def k_examples(examples: Sequence[Example], k: int, n_buckets: int, rng: np.random.Generator,
               context: str = "") -> list[list[Example]]:
    """Draw ``n_buckets`` disjoint buckets of exactly ``k`` examples, with no per-label quota.

    Used for multiple-choice tasks, whose "labels" are candidate positions
    and say nothing about the example: a random permutation of the pool is
    cut into consecutive runs of ``k``.
    """
    needed = k * n_buckets
    if len(examples) < needed:
        raise FsxltError(f"{context}: {n_buckets} buckets of {k} examples need {needed} "
                         f"examples, the data has {len(examples)}")
    order = rng.permutation(len(examples))
    return [[examples[int(i)] for i in order[b * k:(b + 1) * k]] for b in range(n_buckets)]


# --------------------------------------------------------------------------- ranking

def query_of(example: Example) -> str:
    """The query a ranking example's page was judged for (its first text)."""
    return example.text_a  # type: ignore[union-attr]


def k_queries(examples: Sequence[Example], k: int, n_buckets: int, rng: np.random.Generator,
              context: str = "") -> list[list[Example]]:
    """Draw ``n_buckets`` disjoint buckets of exactly ``k`` queries with all their pages.

    A ranking task's shot is a query and every page judged for it (a query
    alone teaches nothing about ranking); the grades get no quota. Queries
    are taken in the order they first occur, a random permutation of them is
    cut into consecutive runs of ``k``, and a bucket lists its queries' pages
    in file order.
    """
    pages: dict[str, list[int]] = {}
    for i, example in enumerate(examples):
        pages.setdefault(query_of(example), []).append(i)
    queries = list(pages)
    needed = k * n_buckets
    if len(queries) < needed:
        raise FsxltError(f"{context}: {n_buckets} buckets of {k} queries need {needed} "
                         f"queries, the data has {len(queries)}")
    order = rng.permutation(len(queries))
    buckets = []
    for b in range(n_buckets):
        chosen = [queries[int(q)] for q in order[b * k:(b + 1) * k]]
        buckets.append([examples[i] for i in sorted(i for q in chosen for i in pages[q])])
    return buckets


# --------------------------------------------------------------------------- extractive QA

def k_questions(examples: Sequence[QAExample], k: int, n_buckets: int,
                rng: np.random.Generator, context: str = "") -> list[list[QAExample]]:
    """Draw ``n_buckets`` buckets of exactly ``k`` questions, pairwise disjoint in paragraphs.

    A shot is one question with its paragraph. The paragraphs (in the order they first
    occur) are put in a random order; each bucket in turn takes the next paragraphs in
    that order, and of each a random subset of its questions, until it holds ``k``. The
    questions left over on a paragraph a bucket took are in no bucket and are not dev
    data either (their paragraph was trained on). A bucket lists its questions in file
    order.
    """
    groups = list(paragraphs(examples).values())
    order = rng.permutation(len(groups))
    buckets: list[list[QAExample]] = []
    cursor = 0
    for _ in range(n_buckets):
        chosen: list[int] = []
        while len(chosen) < k:
            if cursor == len(groups):
                raise FsxltError(f"{context}: {n_buckets} buckets of {k} questions on disjoint "
                                 f"paragraphs need more than the data's {len(groups)} "
                                 f"paragraphs ({len(examples)} questions); use fewer buckets "
                                 "or a smaller K")
            questions = groups[int(order[cursor])]
            cursor += 1
            picks = rng.permutation(len(questions))[:k - len(chosen)]
            chosen.extend(questions[int(i)] for i in picks)
        buckets.append([examples[i] for i in sorted(chosen)])
    return buckets


def untouched_questions(pool: Sequence[QAExample], buckets: Sequence[Sequence[QAExample]],
                        max_paragraphs: int | None = None,
                        rng: np.random.Generator | None = None) -> list[QAExample]:
    """The pool's questions on paragraphs no bucket touches (file order): the dev set of
    model selection. With ``max_paragraphs``, a random choice (``rng``) of that many of
    those paragraphs."""
    used = {ex.context for bucket in buckets for ex in bucket}
    free = [idx for text, idx in paragraphs(pool).items() if text not in used]
    if max_paragraphs is not None and len(free) > max_paragraphs:
        assert rng is not None, "a random choice needs an rng"
        free = [free[int(i)] for i in sorted(rng.permutation(len(free))[:max_paragraphs])]
    return [pool[i] for i in sorted(i for idx in free for i in idx)]


# --------------------------------------------------------------------------- generation

def pairs_by_source(examples: Sequence[GenerationExample]) -> dict[str, list[int]]:
    """Positions of each source text's pairs, sources in the order they first occur."""
    groups: dict[str, list[int]] = {}
    for i, example in enumerate(examples):
        groups.setdefault(example.source, []).append(i)
    return groups


def k_pairs(examples: Sequence[GenerationExample], k: int, n_buckets: int,
            rng: np.random.Generator, context: str = "") -> list[list[GenerationExample]]:
    """Draw ``n_buckets`` buckets of exactly ``k`` (source, target) pairs, no source in two
    buckets or twice in one.

    A shot is one input text with the output written for it. The distinct sources (in
    the order they first occur) are put in a random order and cut into consecutive runs
    of ``k``; bucket *b* takes run *b*, and of each of its sources one pair at random (a
    passage with several questions gives one). The other pairs of a bucket's source are
    in no bucket and are not dev data either (:func:`untouched_pairs`). A bucket lists
    its pairs in file order.
    """
    groups = list(pairs_by_source(examples).values())
    needed = k * n_buckets
    if len(groups) < needed:
        raise FsxltError(f"{context}: {n_buckets} buckets of {k} pairs with distinct sources "
                         f"need {needed} sources, the data has {len(groups)} "
                         f"({len(examples)} pairs); use fewer buckets or a smaller K")
    order = rng.permutation(len(groups))
    buckets = []
    for b in range(n_buckets):
        chosen = [groups[int(g)] for g in order[b * k:(b + 1) * k]]
        picks = [pairs[int(rng.integers(len(pairs)))] for pairs in chosen]
        buckets.append([examples[i] for i in sorted(picks)])
    return buckets


def untouched_pairs(pool: Sequence[GenerationExample],
                    buckets: Sequence[Sequence[GenerationExample]]) -> list[GenerationExample]:
    """The pool's pairs whose source is in no bucket, in file order: the dev set of model
    selection (a pair on a bucket's source would show the model that source again)."""
    used = {ex.source for bucket in buckets for ex in bucket}
    return [ex for ex in pool if ex.source not in used]


# --------------------------------------------------------------------------- classification

def nway_kshot(examples: Sequence[TextExample], labels: Sequence[str], k: int, n_buckets: int,
               rng: np.random.Generator, context: str = "") -> list[list[TextExample]]:
    """Draw ``n_buckets`` disjoint buckets with exactly ``k`` examples of every label.

    For each label (in ``labels`` order) a random permutation of its
    examples is cut into consecutive runs of ``k``; bucket *b* takes run *b*
    of every label. Inside a bucket, examples are grouped by label in label
    order. Raises :class:`InsufficientDataError` naming the first label with
    fewer than ``k * n_buckets`` examples.
    """
    by_label: dict[str, list[TextExample]] = {label: [] for label in labels}
    for example in examples:
        if example.label in by_label:
            by_label[example.label].append(example)
    needed = k * n_buckets
    for label in labels:
        if len(by_label[label]) < needed:
            raise InsufficientDataError(label, needed, len(by_label[label]), context)
    buckets: list[list[TextExample]] = [[] for _ in range(n_buckets)]
    for label in labels:
        pool = by_label[label]
        order = rng.permutation(len(pool))[:needed]
        for b in range(n_buckets):
            buckets[b].extend(pool[i] for i in order[b * k:(b + 1) * k])
    return buckets


def remaining_examples(pool: Sequence[TextExample],
                       buckets: Sequence[Sequence[TextExample]]) -> list[TextExample]:
    """The pool's examples that are in no bucket, in their original order."""
    used = {ex.id for bucket in buckets for ex in bucket}
    return [ex for ex in pool if ex.id not in used]


def without_texts(examples: Sequence[TextExample],
                  buckets: Sequence[Sequence[TextExample]]) -> list[TextExample]:
    """``examples`` less every one holding the texts of a bucket example (any label)."""
    texts = {(ex.text_a, ex.text_b) for bucket in buckets for ex in bucket}
    return [ex for ex in examples if (ex.text_a, ex.text_b) not in texts]


# --------------------------------------------------------------------------- tagging

def sentence_label_counts(sentence: TaggedSentence, unit: str) -> Counter[str]:
    """How often each sampling label occurs in a sentence.

    ``unit == "entity"``: entity types, one per mention (BIO chunks as
    seqeval reads them, so a stray ``I-`` also starts a mention);
    ``unit == "tag"``: the tags themselves, one per word.
    """
    if unit == "entity":
        # imported here: seqeval pulls in scikit-learn, too slow for CLI start-up
        from seqeval.metrics.sequence_labeling import get_entities

        return Counter(kind for kind, _start, _end in get_entities(list(sentence.tags)))
    return Counter(sentence.tags)


def bucket_label_counts(counts: Sequence[Counter[str]]) -> Counter[str]:
    total: Counter[str] = Counter()
    for c in counts:
        total.update(c)
    return total


def redundant_sentences(counts: list[Counter[str]], labels: list[str], k: int) -> list[int]:
    """Positions of sentences whose removal keeps every label that reaches ``k`` at ``k`` or more.

    A bucket is minimal exactly when this is empty. Labels already below
    ``k`` are a separate violation and do not make every sentence necessary.
    """
    total = bucket_label_counts(counts)
    satisfied = [label for label in labels if total[label] >= k]
    return [i for i, c in enumerate(counts)
            if all(total[label] - c[label] >= k for label in satisfied)]


def minimum_including(pool_counts: Sequence[Counter[str]], labels: Sequence[str], k: int,
                      rng: np.random.Generator | None, context: str = "",
                      preference: Sequence[float] | None = None) -> list[int]:
    """Draw one Minimum-Including bucket; returns pool indices in the order they were added.

    ``pool_counts[i]`` holds the label counts of pool sentence *i*; ``labels``
    is the (fixed-order) label set, each of which must occur at least ``k``
    times in the pool. Step 2 draws, for each label in turn, sentences that
    contain it uniformly at random (among those not yet chosen) until the
    label occurs ``k`` times; step 3 then drops every sentence, in the order
    added, whose removal keeps all labels at ``k`` or more.

    With ``preference`` (one number per pool sentence, higher is better; a
    selection strategy's ranking) step 2 takes the most preferred sentence
    containing the label instead of a random one (ties: pool order), so the
    bucket still meets both Minimum-Including criteria.
    """
    containing: dict[str, list[int]] = {label: [] for label in labels}
    totals: Counter[str] = Counter()
    for i, counts in enumerate(pool_counts):
        for label, n in counts.items():
            if label in containing:
                containing[label].append(i)
                totals[label] += n
    for label in labels:
        if totals[label] < k:
            raise InsufficientDataError(label, k, totals[label], context, unit="occurrences")

    chosen: list[int] = []
    chosen_set: set[int] = set()
    counts: Counter[str] = Counter()
    for label in labels:
        candidates = containing[label]
        if preference is not None:
            for pick in sorted(candidates, key=lambda i: (-preference[i], i)):
                if counts[label] >= k:
                    break
                if pick not in chosen_set:
                    chosen.append(pick)
                    chosen_set.add(pick)
                    counts.update(pool_counts[pick])
            continue
        assert rng is not None, "a random draw needs an rng"
        while counts[label] < k:
            # Rejection sampling is uniform over candidates not yet chosen; at
            # least one exists because the pool holds >= k occurrences.
            pick = candidates[int(rng.integers(len(candidates)))]
            if pick in chosen_set:
                continue
            chosen.append(pick)
            chosen_set.add(pick)
            counts.update(pool_counts[pick])

    kept: list[int] = []
    for index in chosen:
        counts.subtract(pool_counts[index])
        if any(counts[label] < k for label in labels):
            counts.update(pool_counts[index])  # needed: put it back
            kept.append(index)
    return kept


def present_labels(pool_counts: Sequence[Counter[str]],
                   labels: Sequence[str]) -> tuple[list[str], list[str]]:
    """Split ``labels`` into those occurring in the pool and those that never do."""
    seen: set[str] = set()
    for counts in pool_counts:
        seen.update(counts)
    return [lab for lab in labels if lab in seen], [lab for lab in labels if lab not in seen]


def check_k(k: int, n_buckets: int) -> None:
    if k < 1:
        raise FsxltError(f"K must be at least 1, got {k}")
    if n_buckets < 1:
        raise FsxltError(f"the number of buckets must be at least 1, got {n_buckets}")
