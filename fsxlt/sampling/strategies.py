"""Shot-selection strategies: which K examples of a candidate pool to label.

A strategy sees one candidate pool (examples drawn from the target's train
split) and, for the model-based ones, what the source-trained model makes of
each pool example (:class:`PoolSignals`: a sentence embedding and the
entropy of its prediction). It returns one bucket that keeps the task's
guarantees:

* classification: exactly K examples of every label. Every strategy picks
  within each label's examples, so no repair is ever needed;
* tagging: both Minimum-Including criteria. A strategy only ranks the pool's
  sentences; the bucket is filled label by label as Minimum-Including does,
  with the best-ranked sentence containing the label instead of a random
  one, and then pruned (:func:`~fsxlt.sampling.samplers.minimum_including`).

The strategies:

* ``random``: today's sampler on the pool (N-way K-shot, Minimum-Including);
* ``diverse``: cover the pool. Classification: k-means (scikit-learn) with K
  clusters on each label's embeddings, the example nearest each centre.
  Tagging: k-means with K x labels clusters on the pool; sentences ranked
  round-robin over the clusters (largest first), each cluster's sentences by
  distance to its centre, so the fill takes one sentence per region first;
* ``uncertain``: highest prediction entropy first (tagging: the mean over
  the sentence's words);
* ``representative``: densest first; density is the mean cosine similarity
  to the 10 nearest pool neighbours (scikit-learn's ``NearestNeighbors``);
* ``entity-rich`` (tagging with entity labels): most distinct entity types
  first, then most mentions.

Ties go to pool order; every random choice (k-means' initialisation, the
random strategy) takes an explicit seed, so a strategy gives the same bucket
for the same pool, signals and seed.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from fsxlt.errors import FsxltError, InsufficientDataError
from fsxlt.sampling.samplers import minimum_including, nway_kshot

STRATEGIES = ("random", "diverse", "uncertain", "representative", "entity-rich")
MODEL_FREE = ("random", "entity-rich")  # need no source-trained model
DENSITY_NEIGHBOURS = 10
KMEANS_INITS = 4
OPTIONS = {  # what each strategy's choice depends on besides the pool (recorded in manifests)
    "random": {"sampler": "nway-kshot | minimum-including"},
    "diverse": {"clustering": "k-means", "n_init": KMEANS_INITS,
                "clusters": "K per label (classification), K x labels (tagging)"},
    "uncertain": {"measure": "prediction entropy", "tagging": "mean over words"},
    "representative": {"density": "mean cosine similarity", "neighbours": DENSITY_NEIGHBOURS},
    "entity-rich": {"order": "distinct entity types, then mentions"},
}


@dataclass(frozen=True)
class PoolSignals:
    """What the source-trained model makes of each pool example (row i: example i)."""

    embeddings: np.ndarray   # (n, d), L2-normalised
    uncertainty: np.ndarray  # (n,), prediction entropy in nats


def check_strategy(name: str, tagging: bool, entity_labels: bool) -> str:
    """``name`` if the strategy exists and fits the task, else a one-line error."""
    if name not in STRATEGIES:
        raise FsxltError(f"unknown strategy {name!r}; valid: {', '.join(STRATEGIES)}")
    if name == "entity-rich" and not (tagging and entity_labels):
        raise FsxltError("strategy entity-rich ranks sentences by their entity mentions; "
                         "it needs a tagging task with entity labels (label_unit: entity)")
    return name


def density(embeddings: np.ndarray) -> np.ndarray:
    """Mean cosine similarity of each row to its nearest pool neighbours (not itself)."""
    from sklearn.neighbors import NearestNeighbors

    n = len(embeddings)
    if n < 2:
        return np.ones(n)
    neighbours = min(DENSITY_NEIGHBOURS, n - 1)
    index = NearestNeighbors(n_neighbors=neighbours + 1, metric="cosine").fit(embeddings)
    distances, _ = index.kneighbors(embeddings)
    return 1.0 - distances[:, 1:].mean(axis=1)


def _kmeans(embeddings: np.ndarray, n_clusters: int, seed: int):
    from sklearn.cluster import KMeans

    return KMeans(n_clusters=n_clusters, n_init=KMEANS_INITS, random_state=seed).fit(embeddings)


def nearest_to_centres(embeddings: np.ndarray, k: int, seed: int) -> list[int]:
    """k-means with ``k`` clusters; per cluster the member nearest its centre (row indices,
    in cluster order). Fewer distinct rows than ``k`` fall back to the first rows."""
    if len(embeddings) <= k:
        return list(range(len(embeddings)))
    distinct = len(np.unique(np.round(embeddings, 6), axis=0))
    if distinct < k:
        return list(range(k))
    model = _kmeans(embeddings, k, seed)
    picks: list[int] = []
    for c in range(k):
        members = np.flatnonzero(model.labels_ == c)
        gaps = np.linalg.norm(embeddings[members] - model.cluster_centers_[c], axis=1)
        order = members[np.lexsort((members, gaps))]
        picks.append(int(next(i for i in order if i not in picks)))
    return picks


def diverse_ranking(embeddings: np.ndarray, n_clusters: int, seed: int) -> np.ndarray:
    """A preference (higher first) that visits k-means clusters round-robin, largest
    cluster first, each cluster's members by distance to its centre."""
    n = len(embeddings)
    n_clusters = max(1, min(n_clusters, len(np.unique(np.round(embeddings, 6), axis=0))))
    model = _kmeans(embeddings, n_clusters, seed)
    queues = []
    for c in range(n_clusters):
        members = np.flatnonzero(model.labels_ == c)
        gaps = np.linalg.norm(embeddings[members] - model.cluster_centers_[c], axis=1)
        queues.append(list(members[np.lexsort((members, gaps))]))
    queues.sort(key=lambda q: (-len(q), q[0]))
    order: list[int] = []
    while any(queues):
        for queue in queues:
            if queue:
                order.append(int(queue.pop(0)))
    preference = np.empty(n)
    preference[order] = np.arange(n, 0, -1, dtype=float)
    return preference


def entity_richness(counts: Sequence[Counter[str]]) -> np.ndarray:
    """Distinct entity types first, mentions second (as one number, higher first)."""
    return np.array([1000.0 * len(c) + sum(c.values()) for c in counts])


def select_classification(strategy: str, labels: Sequence[str], label_of: Sequence[str],
                          k: int, signals: PoolSignals | None, seed: int,
                          rng: np.random.Generator, context: str = "") -> list[int]:
    """Pool indices of one bucket with exactly ``k`` examples of every label."""
    by_label = {label: [i for i, lab in enumerate(label_of) if lab == label]
                for label in labels}
    for label in labels:
        if len(by_label[label]) < k:
            raise InsufficientDataError(label, k, len(by_label[label]), context)
    if strategy == "random":
        pool = [_Indexed(i, lab) for i, lab in enumerate(label_of)]
        return [ex.index for ex in nway_kshot(pool, labels, k, 1, rng, context)[0]]
    assert signals is not None, f"strategy {strategy} needs the model's signals"
    score = density(signals.embeddings) if strategy == "representative" else \
        signals.uncertainty  # uncertain; diverse picks by clusters below
    picked: list[int] = []
    for label in labels:
        members = np.array(by_label[label])
        if strategy == "diverse":
            rows = nearest_to_centres(signals.embeddings[members], k, seed)
            picked.extend(int(members[r]) for r in rows)
        else:
            order = members[np.lexsort((members, -score[members]))]
            picked.extend(int(i) for i in order[:k])
    return picked


@dataclass(frozen=True)
class _Indexed:
    """A pool position dressed as an example for :func:`nway_kshot` (label and index)."""

    index: int
    label: str


def select_tagging(strategy: str, labels: Sequence[str], counts: Sequence[Counter[str]],
                   k: int, signals: PoolSignals | None, seed: int,
                   rng: np.random.Generator, context: str = "") -> list[int]:
    """Pool indices of one Minimum-Including bucket, filled in the strategy's order."""
    if strategy == "random":
        return minimum_including(counts, labels, k, rng, context)
    if strategy == "entity-rich":
        preference = entity_richness(counts)
    else:
        assert signals is not None, f"strategy {strategy} needs the model's signals"
        if strategy == "uncertain":
            preference = signals.uncertainty
        elif strategy == "representative":
            preference = density(signals.embeddings)
        else:
            preference = diverse_ranking(signals.embeddings, k * len(labels), seed)
    return minimum_including(counts, labels, k, None, context, preference=list(preference))
