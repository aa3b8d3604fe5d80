"""Property tests of the samplers' guarantees, over many seeds and label distributions."""

from __future__ import annotations

import random
from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fsxlt.data import TaggedSentence, TextExample
from fsxlt.errors import InsufficientDataError
from fsxlt.sampling.samplers import (
    derive_rng,
    minimum_including,
    nway_kshot,
    remaining_examples,
    sentence_label_counts,
)

LABELS = ["a", "b", "c", "d", "e"]


def make_pool(counts: dict[str, int], seed: int) -> list[TextExample]:
    rows = [TextExample(f"f:{label}{i}", f"text {label} {i}", None, label)
            for label, n in counts.items() for i in range(n)]
    random.Random(seed).shuffle(rows)
    return rows


@settings(max_examples=60, deadline=None)
@given(
    n_labels=st.integers(2, 5),
    k=st.sampled_from([1, 2, 4, 8]),
    n_buckets=st.integers(1, 40),
    extra=st.lists(st.integers(0, 30), min_size=5, max_size=5),
    seed=st.integers(0, 2**32 - 1),
)
def test_nway_kshot_exact_k_disjoint_and_remaining(n_labels, k, n_buckets, extra, seed):
    labels = LABELS[:n_labels]
    pool = make_pool({lab: k * n_buckets + extra[i] for i, lab in enumerate(labels)}, seed)
    buckets = nway_kshot(pool, labels, k, n_buckets, derive_rng(seed, "t", "de", k))
    assert len(buckets) == n_buckets
    for bucket in buckets:
        assert Counter(ex.label for ex in bucket) == {lab: k for lab in labels}
    ids = [ex.id for bucket in buckets for ex in bucket]
    assert len(ids) == len(set(ids)), "buckets must be pairwise disjoint"
    remaining = remaining_examples(pool, buckets)
    assert not {ex.id for ex in remaining} & set(ids)
    assert len(remaining) + len(ids) == len(pool)


@settings(max_examples=30, deadline=None)
@given(short=st.integers(0, 4), k=st.sampled_from([1, 2, 4]), seed=st.integers(0, 10**6))
def test_nway_kshot_insufficient_label_is_named(short, k, seed):
    counts = {"a": 40 * k, "b": 40 * k - 1 - short, "c": 40 * k}
    with pytest.raises(InsufficientDataError) as err:
        nway_kshot(make_pool(counts, seed), ["a", "b", "c"], k, 40, derive_rng(seed))
    assert (err.value.label, err.value.needed, err.value.available) == ("b", 40 * k, counts["b"])
    assert "'b'" in str(err.value) and str(40 * k) in str(err.value)


def random_tagged_pool(rng: random.Random, labels: list[str], size: int) -> list[TaggedSentence]:
    weights = [rng.random() + 0.05 for _ in labels]
    pool = []
    for i in range(size):
        n = rng.randint(1, 6)
        tags = rng.choices(labels, weights=weights, k=n)
        pool.append(TaggedSentence(f"f:{i}", tuple(f"w{j}" for j in range(n)), tuple(tags)))
    return pool


def is_minimum_including(counts: list[Counter], labels: list[str], k: int) -> bool:
    """Both criteria, computed directly from the definition."""
    total = Counter()
    for c in counts:
        total.update(c)
    if any(total[lab] < k for lab in labels):
        return False
    for c in counts:
        without = total.copy()
        without.subtract(c)
        if all(without[lab] >= k for lab in labels):
            return False  # this sentence could be removed
    return True


@settings(max_examples=80, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), k=st.sampled_from([1, 2, 4]),
       n_labels=st.integers(1, 8), size=st.integers(30, 200))
def test_minimum_including_satisfies_both_criteria(seed, k, n_labels, size):
    rng = random.Random(seed)
    labels = [f"T{i}" for i in range(n_labels)]
    pool = random_tagged_pool(rng, labels, size)
    counts = [sentence_label_counts(s, "tag") for s in pool]
    present = [lab for lab in labels if sum(c[lab] for c in counts) >= k]
    picked = minimum_including(counts, present, k, derive_rng(seed, "pos", "xx", k, 0))
    assert len(picked) == len(set(picked))
    assert is_minimum_including([counts[i] for i in picked], present, k)


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), k=st.sampled_from([1, 2, 4]))
def test_minimum_including_counts_entity_mentions(seed, k):
    from tests.conftest import random_ner_sentence

    rng = random.Random(seed)
    pool = [TaggedSentence(f"f:{i}", tuple(t), tuple(g))
            for i, (t, g) in enumerate(random_ner_sentence(rng) for _ in range(150))]
    counts = [sentence_label_counts(s, "entity") for s in pool]
    labels = ["PER", "ORG", "LOC"]
    picked = minimum_including(counts, labels, k, derive_rng(seed, 1))
    mentions = Counter()
    for i in picked:  # count B- tags independently of seqeval
        mentions.update(tag[2:] for tag in pool[i].tags if tag.startswith("B-"))
    assert all(mentions[lab] >= k for lab in labels)
    assert is_minimum_including([counts[i] for i in picked], labels, k)


def test_minimum_including_label_too_rare_is_named():
    pool = [TaggedSentence("f:0", ("x", "z"), ("A", "A")), TaggedSentence("f:1", ("y",), ("B",))]
    counts = [sentence_label_counts(s, "tag") for s in pool]
    with pytest.raises(InsufficientDataError, match="'B' needs 2 occurrences but only 1"):
        minimum_including(counts, ["A", "B"], 2, derive_rng(0))


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 2**32 - 1))
def test_derived_streams_are_deterministic_and_distinct(seed):
    a = derive_rng(seed, "panx", "de", 1, 0).integers(0, 2**62, size=4)
    b = derive_rng(seed, "panx", "de", 1, 0).integers(0, 2**62, size=4)
    c = derive_rng(seed, "panx", "de", 1, 1).integers(0, 2**62, size=4)
    d = derive_rng(seed + 1, "panx", "de", 1, 0).integers(0, 2**62, size=4)
    assert list(a) == list(b)
    assert list(a) != list(c) and list(a) != list(d)
