"""Verify bucket sets against the guarantees of docs/protocol.md#buckets.

For every bucket set (one manifest) the checker reports violations per
bucket:

* gaps: published buckets that could not be imported (the manifest's
  ``missing_buckets``) are reported beside the set, not as violations: the
  buckets that are there keep their guarantees;
* integrity: each bucket file exists, its hash and ids match the manifest,
  its provenance matches the set;
* classification: exactly K examples of every label, no other labels,
  buckets pairwise disjoint, the remaining dev set disjoint from all buckets;
* multiple choice: exactly K examples per bucket (no per-label quota),
  buckets pairwise disjoint;
* ranking (XGLUE's WPR): exactly K queries per bucket, no query in two
  buckets or in the remaining dev set, and, given the source, every page
  judged for a bucket's query is in the bucket;
* fixed splits (FewCLUE): no K to demand; each bucket's per-label counts are
  reported, and its examples must carry labels of the task and occur neither
  in its own dev set nor in the set's test set; every dev file and the test
  file must match their manifest hashes;
* extractive QA (``k-questions``): exactly K questions per bucket, no
  paragraph (a context) in two buckets, none of a bucket's paragraphs in the
  remaining dev set or in the set's test set (XQuAD's held-out paragraphs),
  and none of the dev set's in the test set; given the source, the remaining
  dev set holds whole paragraphs that no bucket touches;
* generation (``k-pairs``): exactly K pairs per bucket, on K distinct sources, no
  source in two buckets, none of a bucket's sources in the remaining dev set or in the
  set's test set; given the source, the remaining dev set is every pair whose source no
  bucket has;
* tagging (Minimum-Including): every label of the set occurs at least K
  times, and the bucket is minimal: no sentence can be removed while every
  label that reaches K still reaches K; a remaining dev set (XGLUE's tagging
  tasks sample from dev) shares no sentence with the buckets;
* shot-selection strategies (``fsxlt select``): the per-bucket guarantees
  above (exact K per label, or both Minimum-Including criteria), but no
  disjointness across buckets, whose candidate pools overlap; no bucket
  example in its own dev set; given the source, every bucket inside the
  candidate pool it was selected from;
* against the source data (optional): the source hash, and that every
  bucket example is in the source with the same content (by id for buckets
  sampled by fsxlt, by content for published ones), and that the remaining
  dev set is exactly the source minus the buckets.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fsxlt.data import (
    Example,
    GenerationExample,
    TaggedSentence,
    TextExample,
    read_examples,
)
from fsxlt.data.readings import reading_of
from fsxlt.errors import FsxltError
from fsxlt.fileio import sha256_text
from fsxlt.sampling.check_source import (
    Violation,
    check_source,
    contexts,
    loose_key,
    pair_sources,
)
from fsxlt.sampling.locate import leaked
from fsxlt.sampling.samplers import (
    bucket_label_counts,
    present_labels,
    query_of,
    redundant_sentences,
    sentence_label_counts,
)
from fsxlt.sampling.store import Bucket, find_sets, read_set
from fsxlt.tasks import get_task

FIXED_SAMPLER = "fewclue-fixed"  # fsxlt.sampling.fewclue.SAMPLER
STRATEGY_SAMPLER = "strategy"  # fsxlt.sampling.select.SAMPLER


@dataclass
class SetReport:
    """The outcome of checking one bucket set."""

    directory: str
    task: str
    language: str
    k: int
    sampler: str
    n_buckets: int
    mean_size: float
    violations: list[Violation] = field(default_factory=list)
    missing_buckets: list[dict[str, Any]] = field(default_factory=list)
    label_counts: dict[str, dict[str, int]] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.violations

    def kinds(self) -> Counter[str]:
        """How many buckets show each kind of violation."""
        seen = {(v.bucket, v.kind) for v in self.violations}
        return Counter(kind for _bucket, kind in seen)

    def to_dict(self) -> dict[str, Any]:
        return {"directory": self.directory, "task": self.task, "language": self.language,
                "k": self.k, "sampler": self.sampler, "n_buckets": self.n_buckets,
                "mean_size": self.mean_size, "ok": self.ok,
                "violations": [vars(v) for v in self.violations],
                "missing_buckets": self.missing_buckets, "label_counts": self.label_counts,
                "notes": self.notes}


def _check_integrity(manifest: dict[str, Any], buckets: list[Bucket]) -> list[Violation]:
    found = []
    for entry, bucket in zip(manifest["buckets"], buckets, strict=True):
        i = entry["index"]
        if bucket.sha256 != entry.get("sha256"):
            found.append(Violation(i, "integrity", "bucket hash differs from the manifest"))
        if [ex.id for ex in bucket.examples] != entry.get("ids"):
            found.append(Violation(i, "integrity", "example ids differ from the manifest"))
        for key in ("task", "language", "k"):
            if bucket.meta.get(key) != manifest.get(key):
                found.append(Violation(i, "integrity", f"{key} {bucket.meta.get(key)!r} differs "
                                       f"from the manifest's {manifest.get(key)!r}"))
        if len({ex.id for ex in bucket.examples}) != len(bucket.examples):
            found.append(Violation(i, "duplicate", "an example id occurs twice in the bucket"))
    return found


def _check_classification(manifest: dict[str, Any], buckets: list[Bucket],
                          remaining: list[Example] | None,
                          disjoint: bool = True) -> list[Violation]:
    k, labels = manifest["k"], manifest["labels"]
    found = []
    for bucket in buckets:
        counts = Counter(ex.label for ex in bucket.examples)
        for label in labels:
            if counts[label] != k:
                found.append(Violation(bucket.index, "count",
                                       f"label {label!r} has {counts[label]} examples, not {k}"))
        for label in sorted(set(counts) - set(labels)):
            found.append(Violation(bucket.index, "count", f"unexpected label {label!r}"))
    return found + _overlaps(buckets, remaining) if disjoint else found


def _check_strategy_set(directory: Path, manifest: dict[str, Any], buckets: list[Bucket],
                        pool: list[Example] | None) -> list[Violation]:
    """A strategy's set: per-bucket guarantees only (its buckets come from overlapping
    pools), no bucket example in the bucket's own dev set, and, given the source, every
    bucket inside the candidate pool it was selected from."""
    from fsxlt.sampling.select import candidate_pools
    from fsxlt.sampling.store import read_examples_jsonl

    found = []
    by_index = {int(e["index"]): e for e in manifest["buckets"]}
    for bucket in buckets:
        dev = by_index[bucket.index].get("dev")
        if dev and (directory / dev["file"]).is_file():
            dev_ids = {ex.id for ex in read_examples_jsonl(directory / dev["file"])}
            leaked = dev_ids & {ex.id for ex in bucket.examples}
            if leaked:
                found.append(Violation(bucket.index, "dev-leak", f"{len(leaked)} examples "
                                       "also occur in the bucket's dev set"))
    pools = (manifest.get("strategy") or {}).get("pools") or {}
    if pool is not None and pools:
        drawn = candidate_pools(len(pool), int(pools["n"]), int(pools["size"]),
                                int(pools["seed"]), manifest["task"], manifest["language"])
        for bucket in buckets:
            if bucket.index >= len(drawn):
                found.append(Violation(bucket.index, "not-in-pool", "no such pool"))
                continue
            members = {pool[int(i)].id for i in drawn[bucket.index]}
            outside = [ex.id for ex in bucket.examples if ex.id not in members]
            if outside:
                found.append(Violation(bucket.index, "not-in-pool", f"{len(outside)} examples "
                                       f"are not in candidate pool {bucket.index} (e.g. "
                                       f"{outside[0]})"))
    return found


def _check_k_examples(manifest: dict[str, Any], buckets: list[Bucket],
                      remaining: list[Example] | None) -> list[Violation]:
    """Multiple choice: exactly K examples per bucket, buckets pairwise disjoint."""
    k = manifest["k"]
    found = [Violation(b.index, "count", f"{len(b.examples)} examples, not {k}")
             for b in buckets if len(b.examples) != k]
    found += _overlaps(buckets, remaining)
    return found


def _check_k_queries(manifest: dict[str, Any], buckets: list[Bucket],
                     remaining: list[Example] | None,
                     pool: list[Example] | None) -> list[Violation]:
    """Ranking: exactly K queries per bucket, no query in two buckets or in the remaining
    dev set, and (given the source) every page of a bucket's queries in the bucket."""
    k = manifest["k"]
    found, owner = [], {}
    for bucket in buckets:
        queries = {query_of(ex) for ex in bucket.examples}
        if len(queries) != k:
            found.append(Violation(bucket.index, "count", f"{len(queries)} queries, not {k}"))
        for query in sorted(queries):
            other = owner.setdefault(query, bucket.index)
            if other != bucket.index:
                found.append(Violation(bucket.index, "overlap",
                                       f"query {query!r} is also in bucket {other}"))
        if pool is not None:
            have = {ex.id for ex in bucket.examples}
            missing = [ex.id for ex in pool if query_of(ex) in queries and ex.id not in have]
            if missing:
                found.append(Violation(bucket.index, "count", f"{len(missing)} pages of its "
                                       f"queries are missing (e.g. {missing[0]})"))
    leaked = [ex.id for ex in remaining or [] if query_of(ex) in owner]
    if leaked:
        found.append(Violation(None, "dev-leak", f"{len(leaked)} remaining-dev pages belong "
                               f"to bucket queries (e.g. {leaked[0]})"))
    return found + _overlaps(buckets, remaining)


def _overlaps(buckets: list[Bucket], remaining: list[Example] | None) -> list[Violation]:
    found = []
    owner: dict[str, int] = {}
    for bucket in buckets:
        for ex in bucket.examples:
            other = owner.setdefault(ex.id, bucket.index)
            if other != bucket.index:
                found.append(Violation(bucket.index, "overlap",
                                       f"example {ex.id} is also in bucket {other}"))
    return found + _dev_leak(buckets, remaining)


def _dev_leak(buckets: list[Bucket], remaining: list[Example] | None) -> list[Violation]:
    """The remaining dev set (what selects models) must share nothing with the buckets."""
    if remaining is None:
        return []
    if _published(buckets):  # their ids are the release's: compare the texts
        examples = [ex for bucket in buckets for ex in bucket.examples
                    if isinstance(ex, TextExample)]
        shared = [ex.id for ex in leaked(examples, remaining)]
    else:
        used = {ex.id for bucket in buckets for ex in bucket.examples}
        shared = [ex.id for ex in remaining if ex.id in used]
    if not shared:
        return []
    return [Violation(None, "dev-leak", f"{len(shared)} remaining-dev examples are also in "
                      f"buckets (e.g. {shared[0]})")]


def _published(buckets: list[Bucket]) -> bool:
    """Whether the buckets are the study's published ones (their ids are the release's)."""
    return any(bucket.meta.get("sampler") == "published" for bucket in buckets)


def _check_k_questions(directory: Path, manifest: dict[str, Any], buckets: list[Bucket],
                       remaining: list[Example] | None) -> list[Violation]:
    """Exactly K questions per bucket; paragraphs kept apart between buckets, the remaining
    dev set and the set's test set (see the module docstring)."""
    from fsxlt.sampling.store import read_examples_jsonl

    k, found = manifest["k"], []
    owner: dict[str, int] = {}
    for bucket in buckets:
        if len(bucket.examples) != k:
            found.append(Violation(bucket.index, "count",
                                   f"{len(bucket.examples)} questions, expected {k}"))
        for text in contexts(bucket.examples):
            other = owner.setdefault(text, bucket.index)
            if other != bucket.index:
                found.append(Violation(bucket.index, "overlap", f"paragraph {text[:40]!r} is "
                                       f"also in bucket {other}"))
    dev = contexts(remaining)
    test_path = directory / manifest["test"]["file"] if manifest.get("test") else None
    test = contexts(read_examples_jsonl(test_path)) if test_path and test_path.is_file() \
        else set()
    for what, kind, texts in (("remaining dev set", "dev-leak", dev),
                              ("test set", "test-leak", test)):
        shared = sorted(set(owner) & texts)
        if shared:
            found.append(Violation(None, kind, f"{len(shared)} bucket paragraphs are also in "
                                   f"the {what} (e.g. {shared[0][:40]!r})"))
    if dev & test:
        found.append(Violation(None, "test-leak", f"{len(dev & test)} paragraphs of the "
                               "remaining dev set are also in the test set"))
    return found


def _check_k_pairs(directory: Path, manifest: dict[str, Any], buckets: list[Bucket],
                   remaining: list[Example] | None) -> list[Violation]:
    """Exactly K pairs on K distinct sources per bucket; sources kept apart between
    buckets, the remaining dev set and the set's test set (see the module docstring)."""
    from fsxlt.sampling.store import read_examples_jsonl

    k, found = manifest["k"], []
    owner: dict[str, int] = {}
    for bucket in buckets:
        sources = [ex.source for ex in bucket.examples if isinstance(ex, GenerationExample)]
        if len(bucket.examples) != k or len(set(sources)) != k:
            found.append(Violation(bucket.index, "count", f"{len(bucket.examples)} pairs on "
                                   f"{len(set(sources))} distinct sources, expected {k}"))
        for text in sorted(set(sources)):
            other = owner.setdefault(text, bucket.index)
            if other != bucket.index:
                found.append(Violation(bucket.index, "overlap", f"source {text[:40]!r} is "
                                       f"also in bucket {other}"))
    test_path = directory / manifest["test"]["file"] if manifest.get("test") else None
    test = pair_sources(read_examples_jsonl(test_path)) if test_path and test_path.is_file() \
        else set()
    for what, kind, texts in (("remaining dev set", "dev-leak", pair_sources(remaining)),
                              ("test set", "test-leak", test)):
        shared = sorted(set(owner) & texts)
        if shared:
            found.append(Violation(None, kind, f"{len(shared)} bucket sources are also in "
                                   f"the {what} (e.g. {shared[0][:40]!r})"))
    return found


def _check_fixed(directory: Path, manifest: dict[str, Any], buckets: list[Bucket],
                 labels: list[str],
                 ) -> tuple[list[Violation], dict[str, dict[str, int]], list[str]]:
    """Fixed splits (FewCLUE): no K to demand. Report each bucket's per-label counts and
    check that its examples carry labels of the task, are not in its own dev set, and
    are not in the test set (by content: the files number their examples apart).
    A dev set sharing examples with the test set is noted, not a violation; a
    missing dev or test file is :func:`_check_dev_files`' violation, not read here.
    """
    from fsxlt.sampling.store import read_examples_jsonl

    found: list[Violation] = []
    notes: list[str] = []
    counts: dict[str, dict[str, int]] = {}
    test_keys: set[tuple] = set()
    test_path = directory / manifest["test"]["file"] if manifest.get("test") else None
    if test_path is not None and test_path.is_file():
        test_keys = {loose_key(ex) for ex in read_examples_jsonl(test_path)}
    entries = {int(e["index"]): e for e in manifest["buckets"]}
    for bucket in buckets:
        tally = Counter(ex.label for ex in bucket.examples)
        counts[bucket.name] = {label: tally[label] for label in labels if tally[label]}
        for label in sorted(set(tally) - set(labels)):
            found.append(Violation(bucket.index, "count", f"unexpected label {label!r}"))
        keys = {loose_key(ex) for ex in bucket.examples}
        in_test = len(keys & test_keys)
        if in_test:
            found.append(Violation(bucket.index, "test-leak",
                                   f"{in_test} examples also occur in the test set"))
        dev = (entries.get(bucket.index) or {}).get("dev")
        if dev and (directory / dev["file"]).is_file():
            dev_keys = {loose_key(ex) for ex in read_examples_jsonl(directory / dev["file"])}
            if keys & dev_keys:
                found.append(Violation(bucket.index, "dev-leak", f"{len(keys & dev_keys)} "
                                       "examples also occur in the bucket's dev set"))
            if dev_keys & test_keys:  # selection, not training: worth knowing, not a violation
                notes.append(f"{bucket.name}: {len(dev_keys & test_keys)} examples of its dev "
                             "set also occur in the test set")
    return found, counts, notes


def _check_dev_files(directory: Path, manifest: dict[str, Any]) -> list[Violation]:
    """Every per-bucket dev file, the test file and the remaining dev set exist and match
    their manifest hashes (what a sweep checks before it runs)."""
    found = []
    files = [(int(e["index"]), e["dev"]) for e in manifest["buckets"] if e.get("dev")]
    for key in ("test", "dev_remaining"):
        if isinstance(manifest.get(key), dict) and manifest[key].get("file"):
            files.append((None, manifest[key]))
    for index, entry in files:
        path = directory / entry["file"]
        if not path.is_file():
            found.append(Violation(index, "integrity", f"{entry['file']} is missing"))
        elif sha256_text(path.read_text(encoding="utf-8")) != entry.get("sha256"):
            found.append(Violation(index, "integrity", f"{entry['file']} differs from the "
                                   "hash in the manifest"))
    return found


def _check_tagging(manifest: dict[str, Any], buckets: list[Bucket],
                   labels: list[str]) -> list[Violation]:
    task = get_task(manifest["task"])
    k = manifest["k"]
    found = []
    for bucket in buckets:
        sentences = [ex for ex in bucket.examples if isinstance(ex, TaggedSentence)]
        counts = [sentence_label_counts(s, task.label_unit) for s in sentences]
        total = bucket_label_counts(counts)
        short = [label for label in labels if total[label] < k]
        for label in short:
            kind = "missing-label" if total[label] == 0 else "count"
            found.append(Violation(bucket.index, kind,
                                   f"label {label!r} occurs {total[label]} times, fewer than {k}"))
        redundant = redundant_sentences(counts, labels, k)
        if redundant:
            ids = ", ".join(sentences[i].id for i in redundant[:3])
            more = "" if len(redundant) <= 3 else f" and {len(redundant) - 3} more"
            found.append(Violation(bucket.index, "not-minimal",
                                   f"{len(redundant)} of {len(sentences)} sentences can be "
                                   f"removed ({ids}{more})"))
    return found


def check_set(directory: str | Path, source: str | Path | None = None) -> SetReport:
    """Check one bucket set directory (optionally against its source data file)."""
    directory = Path(directory)
    manifest, buckets, remaining = read_set(directory)
    task = get_task(manifest["task"])
    pool = None
    if source is not None:
        source = Path(source)
        pool = read_examples(source, task, language=manifest["language"],
                             split=manifest.get("split"), reading=reading_of(manifest))
    violations = _check_integrity(manifest, buckets) + _check_dev_files(directory, manifest)
    label_counts: dict[str, dict[str, int]] = {}
    notes: list[str] = []
    if manifest.get("sampler") == FIXED_SAMPLER:
        fixed, label_counts, notes = _check_fixed(directory, manifest, buckets,
                                                  list(manifest["labels"]))
        violations += fixed
    elif task.is_multiple_choice:
        violations += _check_k_examples(manifest, buckets, remaining)
    elif task.is_qa:
        violations += _check_k_questions(directory, manifest, buckets, remaining)
    elif task.is_generation:
        violations += _check_k_pairs(directory, manifest, buckets, remaining)
    elif task.is_ranking:
        violations += _check_k_queries(manifest, buckets, remaining, pool)
    elif task.is_tagging:
        labels = list(manifest["labels"])
        if pool is not None:  # labels absent from the pool cannot be asked of a bucket
            counts = [sentence_label_counts(s, task.label_unit) for s in pool]
            labels, _absent = present_labels(counts, labels)
        violations += _check_tagging(manifest, buckets, labels)
        violations += _dev_leak(buckets, remaining)
    else:
        strategy = manifest.get("sampler") == STRATEGY_SAMPLER
        by_line = reading_of(manifest).get("remaining") == "by-line"
        violations += _check_classification(manifest, buckets,
                                            None if by_line and _published(buckets)
                                            else remaining, disjoint=not strategy)
    if manifest.get("sampler") == STRATEGY_SAMPLER:
        violations += _check_strategy_set(directory, manifest, buckets, pool)
    if source is not None:
        violations += check_source(manifest, buckets, remaining, source, pool)
    notes += _dev_notes(task, manifest, remaining, buckets)
    sizes = [len(b.examples) for b in buckets]
    return SetReport(directory=str(directory), task=task.name, language=manifest["language"],
                     k=manifest["k"], sampler=manifest["sampler"], n_buckets=len(buckets),
                     mean_size=sum(sizes) / len(sizes) if sizes else 0.0,
                     violations=violations,
                     missing_buckets=list(manifest.get("missing_buckets") or []),
                     label_counts=label_counts, notes=notes)


def _dev_notes(task: Any, manifest: dict[str, Any], remaining: list[Example] | None,
               buckets: list[Bucket]) -> list[str]:
    """A published set's remaining dev set, as its import left it: none (its runs are
    refused until it is added), or bucket examples its dev file did not hold (accepted)."""
    if manifest.get("sampler") != "published" or not task.selects_on_remaining:
        return []
    if remaining is None:
        return ["no remaining dev set, which its runs select models on: add it with fsxlt "
                "buckets import-published RELEASE --out STORE --data-dir DIR"]
    notes = []
    if reading_of(manifest).get("remaining") == "by-line":  # the study's rule keeps them
        examples = [ex for bucket in buckets for ex in bucket.examples
                    if isinstance(ex, TextExample)]
        repeated = leaked(examples, remaining)
        if repeated:
            notes.append(f"{len(repeated)} remaining dev lines repeat a bucket example's text "
                         f"(e.g. {repeated[0].id}); the by-line rule, the study's, keeps them")
    unlocated = (manifest.get("dev_remaining") or {}).get("unlocated") or []
    if unlocated:
        notes.append(f"{len(unlocated)} bucket examples were not located in the dev file at "
                     "import (accepted with --max-unlocated): the remaining dev set may hold "
                     "them")
    return notes


def check_store(root: str | Path, source: str | Path | None = None) -> list[SetReport]:
    """Check every bucket set at or below ``root``."""
    directories = find_sets(root)
    if not directories:
        raise FsxltError(f"{root}: no bucket sets found (no manifest.json below it)")
    if source is not None and len(directories) != 1:
        tasks_langs = {(d.parent.parent.name, d.parent.name) for d in directories}
        if len(tasks_langs) != 1:
            raise FsxltError("--source is one data file: point DIR at one task and language")
    return [check_set(d, source) for d in directories]
