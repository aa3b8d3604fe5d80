"""Bucket sets built by shot-selection strategies, from seeded candidate pools.

A deterministic strategy gives one bucket per pool, so a set of N buckets
comes from N candidate pools: pool *i* is ``pool_size`` examples drawn
without replacement from the split the task samples from (the target's
train split; dev for XNLI-like tasks), with a NumPy generator derived from
the seed, task, language and *i*. Pools do not depend on K or the strategy,
and ``random`` draws from the same pools, so every strategy is judged
against random buckets that saw the same candidates.

Model-based strategies read what the source-trained model makes of every
pool example: one batched pass (:func:`fsxlt.models.prediction.example_signals`)
over the union of the pools, through the start as it was trained
(:func:`fsxlt.training.starts.pool_signals`, handed in as ``signals_from``: sampling
loads no model itself). The written sets are ordinary bucket sets
(``OUT/<strategy>/<task>/<lang>/k<K>``); their manifests and bucket files
record the strategy, its pools, the model (path and weight hash) and the
seed. Sets drawn from dev give each bucket its own dev set: the dev split
minus that bucket.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from fsxlt.data import Split, TaggedSentence, load_split
from fsxlt.errors import FsxltError
from fsxlt.sampling.samplers import (
    check_k,
    derive_rng,
    present_labels,
    sentence_label_counts,
)
from fsxlt.sampling.store import BucketSet, write_sets
from fsxlt.sampling.strategies import Pool, PoolSignals, Strategy, get_strategy, select_bucket
from fsxlt.tasks import TaskSpec, get_task

SAMPLER = "strategy"
DEFAULT_POOLS = 40
DEFAULT_POOL_SIZE = 500


def check_pools(n_pools: int, pool_size: int) -> None:
    """One-line errors naming ``--n-pools`` or ``--pool-size`` when either is below 1."""
    for option, value in (("--n-pools", n_pools), ("--pool-size", pool_size)):
        if value < 1:
            raise FsxltError(f"{option} must be at least 1, got {value}")


def candidate_pools(n_examples: int, n_pools: int, pool_size: int, seed: int, task: str,
                    language: str) -> list[np.ndarray]:
    """Pool *i*: ``pool_size`` distinct example indices, sorted, from its own seeded stream."""
    check_pools(n_pools, pool_size)
    if pool_size > n_examples:
        raise FsxltError(f"{task}/{language}: a pool of {pool_size} needs that many examples; "
                         f"the split has {n_examples}")
    return [np.sort(derive_rng(seed, task, language, "pool", i).choice(
        n_examples, pool_size, replace=False)) for i in range(n_pools)]


def model_identity(start: str | Path) -> dict[str, str]:
    """The model a strategy used: its path and a hash over its weight files."""
    path = Path(start)
    files = sorted(p for p in path.glob("*") if p.suffix in (".safetensors", ".bin"))
    if not files:
        raise FsxltError(f"{path}: no weight files (*.safetensors, *.bin) to identify the model")
    digest = hashlib.sha256()
    for file in files:
        digest.update(file.name.encode("utf-8"))
        with file.open("rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
    return {"path": str(path), "sha256": digest.hexdigest()}


SignalReader = Callable[..., tuple[Any, Any]]  # (start, task, examples, device=, ...)


def compute_signals(start: str | Path, task: TaskSpec, examples: Sequence[Any], *,
                    read: SignalReader, device: str | None = None,
                    max_seq_length: int | None = None) -> PoolSignals:
    """The source-trained model's embeddings and prediction entropies for ``examples``, as
    ``read`` gives them: :func:`fsxlt.training.starts.pool_signals`, which reads a
    checkpoint the way it was trained. Sampling does not load models itself: the layer
    that trains them hands their reader in (the command line, the demo)."""
    embeddings, entropy = read(start, task, examples, device=device,
                               max_seq_length=max_seq_length)
    return PoolSignals(embeddings, entropy)


def _subset(signals: PoolSignals | None, rows: np.ndarray) -> PoolSignals | None:
    if signals is None:
        return None
    return PoolSignals(signals.embeddings[rows], signals.uncertainty[rows])


def tagging_counts(task: TaskSpec, split: Split) -> tuple[list[Counter[str]], list[str],
                                                         list[str]]:
    """Label counts of every sentence, the labels that occur and the task labels that do not."""
    counts = [sentence_label_counts(s, task.label_unit) for s in split.examples]
    labels, missing = present_labels(counts, task.sampling_labels)
    if not labels:
        raise FsxltError(f"{task.name}/{split.language}: no label of the task occurs in "
                         f"{split.source}")
    return counts, labels, missing


def select_set(task: TaskSpec, split: Split, k: int, strategy: Strategy,
               pools: list[np.ndarray], signals: PoolSignals | None, seed: int,
               info: dict[str, Any],
               tagging: tuple[list[Counter[str]], list[str], list[str]] | None = None,
               ) -> BucketSet:
    """One bucket per pool by ``strategy``; ``signals`` rows follow ``split.examples``;
    ``tagging``: :func:`tagging_counts` of the split (computed once per split)."""
    examples = split.examples
    context = f"{task.name}/{split.language} K={k} {strategy.name}"
    buckets = []
    if task.is_tagging:
        counts_all, labels, missing = tagging or tagging_counts(task, split)
    else:
        labels, missing = list(task.labels), []
    for i, rows in enumerate(pools):
        members = [examples[int(r)] for r in rows]
        pool = Pool(labels=labels, k=k, seed=seed,
                    rng=derive_rng(seed, task.name, split.language, k, strategy.name, i),
                    signals=_subset(signals, rows), examples=members,
                    label_of=None if task.is_tagging else [ex.label for ex in members],
                    counts=[counts_all[r] for r in rows] if task.is_tagging else None,
                    context=f"{context}, pool {i}")
        buckets.append([members[p] for p in select_bucket(strategy, pool)])
    devs = None
    if split.split == "dev":  # each bucket's own dev set: the split minus that bucket
        used = [{b.id for b in bucket} for bucket in buckets]
        devs = [[ex for ex in examples if ex.id not in ids] for ids in used]
    return BucketSet(task=task.name, language=split.language, k=k, sampler=SAMPLER, seed=seed,
                     reading=split.reading.to_dict(),
                     split=split.split, source_file=Path(split.source).name,
                     source_sha256=split.sha256, labels=list(labels), missing_labels=missing,
                     buckets=buckets, devs=devs,
                     strategy=dict(info, **strategy.describe()))


def select(task: str | TaskSpec, language: str, ks: Sequence[int],
           strategies: Sequence[str | Strategy],
           out: str | Path, *, data: str | Path | None = None,
           data_dir: str | Path | None = None, start: str | Path | None = None,
           n_pools: int = DEFAULT_POOLS, pool_size: int = DEFAULT_POOL_SIZE, seed: int = 0,
           device: str | None = None, replace: bool = False,
           progress: Callable[[Iterable], Iterable] = lambda it: it,
           signals_from: SignalReader | None = None,
           ) -> dict[str, list[BucketSet]]:
    """Build and write ``OUT/<strategy>/<task>/<lang>/k<K>`` for every strategy and K.

    Everything is built before anything is written, so an error writes
    nothing. ``OUT`` is the bucket store; its sets are written by the
    write-once rule (:func:`write_sets`: a set already there unchanged is
    left alone, another one is refused unless ``replace``; each set's
    ``written`` says what happened). ``signals_from`` reads the model of model-based
    strategies (:func:`fsxlt.training.starts.pool_signals`).
    """
    task = get_task(task)
    task.check_language(language)
    if task.is_multiple_choice or task.is_ranking:
        raise FsxltError(f"{task.name}: shot selection is for classification and tagging "
                         "tasks")
    chosen = list({s.name: s for s in (get_strategy(ref, task) for ref in strategies)}.values())
    check_pools(n_pools, pool_size)
    for k in ks:
        check_k(k, n_pools)
    model_based = [s.name for s in chosen if s.model_based]
    if model_based and start is None:
        raise FsxltError(f"strategies {', '.join(model_based)} read the source-trained model: "
                         "pass --from CHECKPOINT")
    if model_based and signals_from is None:
        raise FsxltError(f"strategies {', '.join(model_based)} read the source-trained model: "
                         "pass signals_from=fsxlt.training.starts.pool_signals")
    split = load_split(task, language, task.sampling.split, path=data, data_dir=data_dir)
    if task.is_tagging and any(not isinstance(ex, TaggedSentence) for ex in split.examples):
        raise FsxltError(f"{split.source}: not tagged sentences")
    pools = candidate_pools(len(split.examples), n_pools, pool_size, seed, task.name, language)
    info: dict[str, Any] = {"pools": {"n": n_pools, "size": pool_size, "seed": seed,
                                      "split": split.split}}
    signals = None
    if model_based:
        union = np.unique(np.concatenate(pools))
        partial = compute_signals(start, task, [split.examples[int(i)] for i in union],
                                  read=signals_from, device=device)
        dim = partial.embeddings.shape[1]
        embeddings = np.zeros((len(split.examples), dim))
        entropy = np.zeros(len(split.examples))
        embeddings[union], entropy[union] = partial.embeddings, partial.uncertainty
        signals = PoolSignals(embeddings, entropy)
        info["model"] = model_identity(start)
    tagging = tagging_counts(task, split) if task.is_tagging else None
    sets: dict[str, list[BucketSet]] = {}
    for strategy in progress(chosen):
        recorded = info if strategy.model_based else {"pools": info["pools"]}
        sets[strategy.name] = [select_set(task, split, k, strategy, pools, signals, seed,
                                          recorded, tagging) for k in ks]
    order = [(name, s) for name, bucket_sets in sets.items() for s in bucket_sets]
    write_sets(out, [s for _name, s in order], replace=replace,
               folders=[name for name, _s in order])
    return sets
