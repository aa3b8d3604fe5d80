"""Shot-selection strategies: which K examples of a candidate pool to label.

A strategy sees one candidate pool (examples drawn from the target's train
split) and, for the model-based ones, what the source-trained model makes of
each pool example (:class:`PoolSignals`: a sentence embedding and the
entropy of its prediction). It returns one bucket that keeps the task's
guarantees, which :func:`select_bucket` checks for every strategy:

* classification: exactly K examples of every label. Every strategy picks
  within each label's examples, so no repair is ever needed;
* tagging: both Minimum-Including criteria. A strategy only ranks the pool's
  sentences; the bucket is filled label by label as Minimum-Including does,
  with the best-ranked sentence containing the label instead of a random
  one, and then pruned (:func:`~fsxlt.sampling.samplers.minimum_including`).

Each strategy is one small class, built in or from a plug-in, so ``fsxlt
select``, sweeps on its buckets, ``fsxlt adapt`` and ``fsxlt report
--strategies`` treat a researcher's own strategy as they treat these::

    import numpy as np
    from fsxlt.sampling.strategies import Strategy

    class Longest(Strategy):
        '''Longest examples first.'''

        name = "longest"
        summary = "most words first"
        kinds = ("classification",)
        options = {"order": "words of both texts, most first"}

        def preference(self, pool):
            return np.array([len(f"{ex.text_a} {ex.text_b or ''}".split())
                             for ex in pool.examples], dtype=float)

The contract (attributes and hooks; a strategy implements :meth:`Strategy.
preference` or its own picks):

``name``, ``summary``
    How bucket folders (``OUT/<name>/...``), manifests, run arms
    (``full~<name>``), reports and ``fsxlt strategies`` name it.
``options``
    What its choice depends on besides the pool (a JSON-able mapping); every
    manifest of its sets records it.
``model_based``
    True when it reads :class:`PoolSignals`: ``fsxlt select`` then needs the
    source-trained model (``--from``); default: False (``pool.signals`` is None).
``kinds``
    The task kinds it selects for (``classification``, ``tagging``; default
    both); :meth:`Strategy.check_task` refuses others before any data loads.
``preference(pool)``
    One number per pool example, higher first. The default picks take, per
    label, the K most preferred examples (classification) or fill a
    Minimum-Including bucket in this order (tagging); ties go to pool order.
``pick_classification(pool)`` and ``pick_tagging(pool)``
    Pool positions of one bucket, for strategies that choose other than by
    one ranking (``random`` draws, ``diverse`` clusters each label).

Every random choice takes the pool's seed or its own seeded generator
(``pool.rng``), so a strategy gives the same bucket for the same pool,
signals and seed. Discovery is that of adapting methods (:mod:`fsxlt.plugins`):
the built-ins below, installed packages under the entry-point group
``fsxlt.strategies`` (``name = "package.module:Class"``), and
``package.module:Class`` for a class that is importable but not installed; a
plug-in that fails to load, or a hook of it that fails, is a one-line error
naming it. Nothing in this module imports torch.

The built-in strategies:

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
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from fsxlt.errors import FsxltError, InsufficientDataError
from fsxlt.sampling.samplers import minimum_including, nway_kshot, redundant_sentences

if TYPE_CHECKING:
    from fsxlt.tasks import TaskSpec

ENTRY_POINT_GROUP = "fsxlt.strategies"
NAME_PATTERN = re.compile(r"\w[\w.-]*")  # a bucket folder's name and an arm's suffix (full~<name>)
KINDS = ("classification", "tagging")
DENSITY_NEIGHBOURS = 10
KMEANS_INITS = 4


@dataclass(frozen=True)
class PoolSignals:
    """What the source-trained model makes of each pool example (row i: example i)."""

    embeddings: np.ndarray   # (n, d), L2-normalised
    uncertainty: np.ndarray  # (n,), prediction entropy in nats


@dataclass(frozen=True)
class Pool:
    """One candidate pool as a strategy sees it (position i: pool example i).

    ``labels`` are the labels a bucket is balanced over (tagging: those that
    occur in the split); ``label_of`` each example's label (classification),
    ``counts`` each sentence's label counts (tagging: entity types or tags);
    ``signals`` the model's signals (model-based strategies, else None);
    ``rng`` the pool's own seeded generator; ``examples`` the pool's examples
    (``fsxlt select`` always gives them); ``context`` how errors name it.
    """

    labels: Sequence[str]
    k: int
    seed: int
    rng: np.random.Generator | None = None
    signals: PoolSignals | None = None
    label_of: Sequence[str] | None = None
    counts: Sequence[Counter[str]] | None = None
    examples: Sequence[Any] = ()
    context: str = ""

    @property
    def size(self) -> int:
        return len(self.counts if self.counts is not None else self.label_of or ())

    @property
    def is_tagging(self) -> bool:
        return self.counts is not None

    def members(self, label: str) -> np.ndarray:
        """Positions of the examples of ``label`` (classification), in pool order."""
        return np.array([i for i, lab in enumerate(self.label_of or ()) if lab == label],
                        dtype=int)


class Strategy:
    """Base class of shot-selection strategies (see the module docstring for the contract)."""

    name: ClassVar[str] = ""
    summary: ClassVar[str] = ""
    options: ClassVar[dict[str, Any]] = {}
    model_based: ClassVar[bool] = False
    kinds: ClassVar[tuple[str, ...]] = KINDS

    def check_task(self, task: TaskSpec) -> None:
        """Refuse, in one line, a task this strategy cannot select for."""
        kind = "tagging" if task.is_tagging else task.kind
        if kind not in self.kinds:
            raise FsxltError(f"strategy {self.name} selects for {' and '.join(self.kinds)} "
                             f"tasks, not {task.kind}")

    def preference(self, pool: Pool) -> np.ndarray:
        """One number per pool example, higher first."""
        raise NotImplementedError(f"strategy {self.name} implements neither preference() "
                                  "nor its own picks")

    def pick_classification(self, pool: Pool) -> list[int]:
        """Per label (in label order), its K most preferred examples (ties: pool order)."""
        score = np.asarray(self.preference(pool), dtype=float)
        picked: list[int] = []
        for label in pool.labels:
            members = pool.members(label)
            order = members[np.lexsort((members, -score[members]))]
            picked.extend(int(i) for i in order[:pool.k])
        return picked

    def pick_tagging(self, pool: Pool) -> list[int]:
        """A Minimum-Including bucket filled in preference order."""
        preference = [float(x) for x in self.preference(pool)]
        return minimum_including(pool.counts or [], pool.labels, pool.k, None, pool.context,
                                 preference=preference)

    def describe(self) -> dict[str, Any]:
        """What a manifest records about the strategy (besides pools and model)."""
        return {"name": self.name, "options": dict(self.options)}


# --------------------------------------------------------------------------- built-ins

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


def _signals(strategy: Strategy, pool: Pool) -> PoolSignals:
    if pool.signals is None:
        raise FsxltError(f"strategy {strategy.name} needs the source-trained model's signals")
    return pool.signals


@dataclass(frozen=True)
class _Indexed:
    """A pool position dressed as an example for :func:`nway_kshot` (label and index)."""

    index: int
    label: str


class Random(Strategy):
    """The task's own sampler on the pool: N-way K-shot or Minimum-Including."""

    name = "random"
    summary = "the task's sampler on the pool (N-way K-shot, Minimum-Including)"
    options = {"sampler": "nway-kshot | minimum-including"}

    def pick_classification(self, pool: Pool) -> list[int]:
        indexed = [_Indexed(i, lab) for i, lab in enumerate(pool.label_of or ())]
        bucket = nway_kshot(indexed, pool.labels, pool.k, 1, pool.rng, pool.context)[0]
        return [ex.index for ex in bucket]

    def pick_tagging(self, pool: Pool) -> list[int]:
        return minimum_including(pool.counts or [], pool.labels, pool.k, pool.rng, pool.context)


class Diverse(Strategy):
    """Cover the pool: k-means clusters, the example nearest each centre."""

    name = "diverse"
    summary = "cover the pool: k-means on the model's embeddings, nearest each centre"
    model_based = True
    options = {"clustering": "k-means", "n_init": KMEANS_INITS,
               "clusters": "K per label (classification), K x labels (tagging)"}

    def pick_classification(self, pool: Pool) -> list[int]:
        embeddings = _signals(self, pool).embeddings
        picked: list[int] = []
        for label in pool.labels:
            members = pool.members(label)
            rows = nearest_to_centres(embeddings[members], pool.k, pool.seed)
            picked.extend(int(members[r]) for r in rows)
        return picked

    def preference(self, pool: Pool) -> np.ndarray:
        return diverse_ranking(_signals(self, pool).embeddings, pool.k * len(pool.labels),
                               pool.seed)


class Uncertain(Strategy):
    """Highest prediction entropy first (tagging: the mean over the sentence's words)."""

    name = "uncertain"
    summary = "highest prediction entropy of the model first"
    model_based = True
    options = {"measure": "prediction entropy", "tagging": "mean over words"}

    def preference(self, pool: Pool) -> np.ndarray:
        return _signals(self, pool).uncertainty


class Representative(Strategy):
    """Densest first: mean cosine similarity to the nearest pool neighbours."""

    name = "representative"
    summary = "densest first: mean cosine similarity to the 10 nearest pool neighbours"
    model_based = True
    options = {"density": "mean cosine similarity", "neighbours": DENSITY_NEIGHBOURS}

    def preference(self, pool: Pool) -> np.ndarray:
        return density(_signals(self, pool).embeddings)


class EntityRich(Strategy):
    """Most distinct entity types first, then most mentions (tagging with entity labels)."""

    name = "entity-rich"
    summary = "most distinct entity types first, then most mentions (entity tagging)"
    kinds = ("tagging",)
    options = {"order": "distinct entity types, then mentions"}

    def check_task(self, task: TaskSpec) -> None:
        if not (task.is_tagging and task.label_unit == "entity"):
            raise FsxltError("strategy entity-rich ranks sentences by their entity mentions; "
                             "it needs a tagging task with entity labels (label_unit: entity)")

    def preference(self, pool: Pool) -> np.ndarray:
        return entity_richness(pool.counts or [])


BUILTIN: dict[str, type[Strategy]] = {
    cls.name: cls for cls in (Random, Diverse, Uncertain, Representative, EntityRich)}


# --------------------------------------------------------------------------- discovery

def plugins() -> dict[str, str]:
    """Installed plug-in strategies: entry-point name -> ``module:Class`` (none imported)."""
    from fsxlt.plugins import entry_point_refs

    return entry_point_refs(ENTRY_POINT_GROUP)


def discover() -> tuple[dict[str, type[Strategy]], dict[str, str]]:
    """The strategies that load, by name (built-ins, then installed plug-ins by name), and
    the one-line error of each installed plug-in that does not."""
    from fsxlt.plugins import discover_group

    return discover_group(ENTRY_POINT_GROUP, BUILTIN, Strategy, "strategy")


def strategy_class(ref: str) -> type[Strategy]:
    """A strategy class from a name (built-in or installed) or ``package.module:Class``."""
    from fsxlt.plugins import CLASS_REFERENCE, import_class

    if ref in BUILTIN:
        return BUILTIN[ref]
    if CLASS_REFERENCE.match(ref):
        return import_class(ref, Strategy, f"strategy {ref}")
    installed = plugins()
    if ref in installed:
        return import_class(installed[ref], Strategy,
                            f"plug-in strategy {ref} ({installed[ref]})")
    valid = ", ".join([*BUILTIN, *sorted(set(installed) - set(BUILTIN))])
    raise FsxltError(f"unknown strategy {ref!r}; valid: {valid}, or package.module:Class")


def get_strategy(ref: str | Strategy, task: TaskSpec | None = None) -> Strategy:
    """A strategy by name or reference (or as given), checked against ``task`` when given;
    a plug-in that fails to build or to check is a one-line error naming it."""
    strategy = ref if isinstance(ref, Strategy) else _guarded(
        strategy_class(ref), "cannot build it", lambda cls: cls())
    if not NAME_PATTERN.fullmatch(strategy.name):
        raise FsxltError(f"strategy {strategy.name!r}: a name is a letter or digit, then "
                         "letters, digits, '.', '_' and '-' (it names folders and arms like "
                         "full~<name>)")
    if task is not None:
        _guarded(strategy, "check_task() failed", lambda s: s.check_task(task))
    return strategy


def _guarded(subject: Any, what: str, call: Any) -> Any:
    """``call(subject)``; a plug-in's own failure (other than FsxltError) is one line."""
    cls = subject if isinstance(subject, type) else type(subject)
    if cls in BUILTIN.values():
        return call(subject)
    try:
        return call(subject)
    except FsxltError:
        raise
    except Exception as err:
        from fsxlt.plugins import describe_error

        raise FsxltError(f"strategy {cls.name}: {what} ({describe_error(err)})") from err


# --------------------------------------------------------------------------- one bucket

def check_pool(pool: Pool) -> None:
    """An :class:`InsufficientDataError` naming the first label the pool holds fewer than
    K examples (classification) or occurrences (tagging) of."""
    for label in pool.labels:
        if pool.is_tagging:
            have = sum(counts[label] for counts in pool.counts or ())
            if have < pool.k:
                raise InsufficientDataError(label, pool.k, have, pool.context,
                                            unit="occurrences")
        elif len(pool.members(label)) < pool.k:
            raise InsufficientDataError(label, pool.k, len(pool.members(label)), pool.context)


def select_bucket(strategy: Strategy, pool: Pool) -> list[int]:
    """Pool positions of one bucket by ``strategy``, checked against the task's guarantees
    (exactly K of every label; both Minimum-Including criteria)."""
    check_pool(pool)
    if pool.is_tagging:
        picked = _guarded(strategy, "pick_tagging() failed", lambda s: s.pick_tagging(pool))
    else:
        picked = _guarded(strategy, "pick_classification() failed",
                          lambda s: s.pick_classification(pool))
    picked = [int(i) for i in picked]
    problem = broken_guarantee(pool, picked)
    if problem:
        raise FsxltError(f"{pool.context}: strategy {strategy.name} broke the bucket "
                         f"guarantee: {problem}")
    return picked


def broken_guarantee(pool: Pool, picked: list[int]) -> str:
    """What is wrong with ``picked`` as a bucket of ``pool`` (empty when nothing is)."""
    if len(set(picked)) != len(picked) or any(not 0 <= i < pool.size for i in picked):
        return "positions repeat or fall outside the pool"
    if not pool.is_tagging:
        counts = Counter((pool.label_of or [])[i] for i in picked)
        wrong = sorted(set(counts) ^ set(pool.labels) |
                       {label for label in pool.labels if counts[label] != pool.k})
        return f"not exactly {pool.k} examples of {', '.join(wrong)}" if wrong else ""
    chosen = [(pool.counts or [])[i] for i in picked]
    total = sum(chosen, Counter())
    short = [label for label in pool.labels if total[label] < pool.k]
    if short:
        return f"fewer than {pool.k} of {', '.join(short)}"
    if redundant_sentences(chosen, list(pool.labels), pool.k):
        return "a sentence can be dropped without breaking the minimum (not minimal)"
    return ""
