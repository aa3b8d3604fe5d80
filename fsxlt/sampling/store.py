"""The bucket store: one directory per (task, language, K), self-contained.

Layout (``ROOT`` is e.g. ``buckets/``)::

    ROOT/<task>/<lang>/k<K>/
        manifest.json         provenance of the whole set + ids and hash of every bucket
        00.json ... 39.json   one bucket each: provenance + its examples (text and labels)
        dev-remaining.jsonl   XNLI/PAWS-X only: the dev examples in no bucket (model selection)

A set of fixed splits (FewCLUE, ``fsxlt buckets import-fewclue``) names its
buckets after the splits and keeps what the benchmark ships with them::

        00.json ... 04.json   splits train_0 ... train_4
        all.json              train_few_all, the union of the splits (marked ``union``)
        00.dev.jsonl ...      each bucket's own dev set (dev_0 ..., all.dev.jsonl)
        test.jsonl            the labelled test set every bucket is scored on

A bucket file is a JSON object whose ``examples`` list holds one compact
example per line, so it diffs and greps well. Training needs nothing but
these files. Every file is deterministic (sorted keys, no timestamps), so the
same inputs give byte-identical files, and a set is written by swapping a
finished temporary directory into place, never half-written.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fsxlt import __version__
from fsxlt.data import Example, example_from_dict
from fsxlt.errors import DataFormatError, FsxltError
from fsxlt.fileio import (
    atomic_replace_dir,
    dumps_json,
    dumps_jsonl,
    read_json,
    sha256_text,
    text_lines,
)

STORE_FORMAT = "fsxlt-buckets/1"
MANIFEST = "manifest.json"
DEV_REMAINING = "dev-remaining.jsonl"


@dataclass
class BucketSet:
    """All buckets of one (task, language, K), with where they came from.

    ``source_file``/``source_sha256`` identify the data the buckets were drawn
    from; ``labels`` is the label set the buckets are balanced over and
    ``missing_labels`` the task labels that never occur in the pool.
    ``indices`` numbers the buckets (default 0, 1, ...); an imported set keeps
    the published numbers, and ``missing_buckets`` lists the published
    buckets that could not be read (``index``, ``file``, ``reason``), so the
    gap stays visible in ``buckets check`` and in reports.
    """

    task: str
    language: str
    k: int
    sampler: str
    seed: int | None
    split: str
    source_file: str
    source_sha256: str | None
    labels: list[str]
    buckets: list[list[Example]]
    missing_labels: list[str] = field(default_factory=list)
    dev_remaining: list[Example] | None = None
    notes: dict[str, Any] = field(default_factory=dict)
    indices: list[int] | None = None
    missing_buckets: list[dict[str, Any]] = field(default_factory=list)
    names: list[str] | None = None
    devs: list[list[Example]] | None = None
    union: int | None = None
    test: list[Example] | None = None
    test_source: dict[str, Any] | None = None
    strategy: dict[str, Any] | None = None  # a shot-selection strategy's name, pools, model

    def bucket_indices(self) -> list[int]:
        """The index of each bucket, in order."""
        return list(self.indices) if self.indices is not None else list(range(len(self.buckets)))

    def bucket_names(self) -> list[str]:
        """The name of each bucket (its file stem): ``00``, ``01``, ... unless named."""
        if self.names is not None:
            return list(self.names)
        return [bucket_name(index) for index in self.bucket_indices()]

    def provenance(self) -> dict[str, Any]:
        meta = {
            "task": self.task, "language": self.language, "k": self.k,
            "sampler": self.sampler, "seed": self.seed, "split": self.split,
            "source": {"file": self.source_file, "sha256": self.source_sha256},
            "fsxlt_version": __version__,
        }
        if self.strategy is not None:
            meta["strategy"] = self.strategy
        return meta


@dataclass(frozen=True)
class Bucket:
    """One bucket as training reads it."""

    task: str
    language: str
    k: int
    index: int
    examples: list[Example]
    meta: dict[str, Any]
    sha256: str

    @property
    def name(self) -> str:
        """The bucket's name: a fixed split's (``all``), else its two-digit index."""
        return str(self.meta.get("name") or bucket_name(self.index))

    @property
    def union(self) -> bool:
        """True for a set's union of the other buckets (FewCLUE's ``all``)."""
        return bool(self.meta.get("union"))

    @property
    def id(self) -> str:
        return f"{self.task}/{self.language}/k{self.k}/{self.name}"


def bucket_dir(root: str | Path, task: str, language: str, k: int) -> Path:
    return Path(root) / task / language / f"k{k}"


def bucket_name(index: int) -> str:
    return f"{index:02d}"


def bucket_file_name(index: int, name: str | None = None) -> str:
    return f"{name or bucket_name(index)}.json"


TEST_FILE = "test.jsonl"


def render_bucket(bucket_set: BucketSet, position: int) -> str:
    """The text of the bucket at ``position`` (deterministic)."""
    examples = bucket_set.buckets[position]
    index = bucket_set.bucket_indices()[position]
    meta = dict(bucket_set.provenance(), index=index, ids=[ex.id for ex in examples])
    if bucket_set.names is not None:
        meta["name"] = bucket_set.names[position]
    if bucket_set.union == position:
        meta["union"] = True
    head = dumps_json({"bucket": meta}).rstrip()[:-1].rstrip()  # drop the closing brace
    rows = ",\n".join("  " + json.dumps(ex.to_dict(), ensure_ascii=False, sort_keys=True)
                      for ex in examples)
    return f'{head},\n "examples": [\n{rows}\n ]\n}}\n'


def render_set(bucket_set: BucketSet) -> dict[str, str]:
    """All files of a bucket set, name -> text."""
    files: dict[str, str] = {}
    entries = []
    names = bucket_set.bucket_names()
    for position, index in enumerate(bucket_set.bucket_indices()):
        name = bucket_file_name(index, names[position])
        files[name] = render_bucket(bucket_set, position)
        entry = {"index": index, "file": name, "sha256": sha256_text(files[name]),
                 "ids": [ex.id for ex in bucket_set.buckets[position]]}
        if bucket_set.names is not None:
            entry["name"] = names[position]
        if bucket_set.union == position:
            entry["union"] = True
        if bucket_set.devs is not None:
            dev_name = f"{names[position]}.dev.jsonl"
            files[dev_name] = dumps_jsonl(ex.to_dict() for ex in bucket_set.devs[position])
            entry["dev"] = {"file": dev_name, "n": len(bucket_set.devs[position]),
                            "sha256": sha256_text(files[dev_name])}
        entries.append(entry)
    manifest: dict[str, Any] = dict(
        bucket_set.provenance(), format=STORE_FORMAT, n_buckets=len(entries),
        labels=bucket_set.labels, missing_labels=bucket_set.missing_labels,
        buckets=entries, dev_remaining=None, notes=bucket_set.notes)
    if bucket_set.missing_buckets:
        manifest["missing_buckets"] = bucket_set.missing_buckets
    if bucket_set.test is not None:
        files[TEST_FILE] = dumps_jsonl(ex.to_dict() for ex in bucket_set.test)
        manifest["test"] = {"file": TEST_FILE, "n": len(bucket_set.test),
                            "sha256": sha256_text(files[TEST_FILE]),
                            "source": bucket_set.test_source}
    if bucket_set.dev_remaining is not None:
        files[DEV_REMAINING] = dumps_jsonl(ex.to_dict() for ex in bucket_set.dev_remaining)
        manifest["dev_remaining"] = {"file": DEV_REMAINING, "n": len(bucket_set.dev_remaining),
                                     "sha256": sha256_text(files[DEV_REMAINING])}
    files[MANIFEST] = dumps_json(manifest)
    return files


def write_sets(root: str | Path, bucket_sets: list[BucketSet]) -> list[Path]:
    """Write bucket sets under ``root``; each set directory is replaced atomically.

    Rendering happens for all sets before anything is written, so an error
    while rendering leaves the store untouched.
    """
    rendered = [(s, render_set(s)) for s in bucket_sets]
    written = []
    for bucket_set, files in rendered:
        target = bucket_dir(root, bucket_set.task, bucket_set.language, bucket_set.k)
        atomic_replace_dir(target, files)
        written.append(target)
    return written


def read_manifest(directory: str | Path) -> dict[str, Any]:
    path = Path(directory) / MANIFEST
    manifest = read_json(path)
    if not isinstance(manifest, dict) or manifest.get("format") != STORE_FORMAT:
        raise DataFormatError(path, f"not an fsxlt bucket manifest (format {STORE_FORMAT})")
    return manifest


def read_bucket(path: str | Path) -> Bucket:
    """Read one bucket file; a malformed file is a one-line error naming it."""
    path = Path(path)
    raw = read_json(path)
    try:
        meta = raw["bucket"]
        examples = [example_from_dict(row) for row in raw["examples"]]
        bucket = Bucket(task=meta["task"], language=meta["language"], k=int(meta["k"]),
                        index=int(meta["index"]), examples=examples, meta=meta,
                        sha256=sha256_text(path.read_text(encoding="utf-8")))
    except (KeyError, TypeError, ValueError) as err:
        raise DataFormatError(path, f"not an fsxlt bucket file ({err})") from None
    if not examples:
        raise DataFormatError(path, "bucket holds no examples")
    return bucket


def read_examples_jsonl(path: str | Path) -> list[Example]:
    """Read a JSON-lines file of examples (e.g. ``dev-remaining.jsonl``)."""
    path = Path(path)
    if not path.is_file():
        raise DataFormatError(path, "file not found")
    examples = []
    for line_no, line in enumerate(text_lines(path.read_text(encoding="utf-8")), start=1):
        if not line.strip():
            continue
        try:
            examples.append(example_from_dict(json.loads(line)))
        except (json.JSONDecodeError, KeyError, TypeError, ValueError) as err:
            raise DataFormatError(path, f"malformed example ({err})", line_no) from None
    return examples


def check_bucket_hash(path: str | Path, sha256: str, entry: dict[str, Any]) -> None:
    """One-line error if a bucket file's content hash is not the one its manifest recorded.

    Training refuses such a bucket: its examples are no longer the ones that
    were drawn (an edit by hand, a merge gone wrong), so its scores would
    not be the bucket's.
    """
    if sha256 != entry.get("sha256"):
        raise DataFormatError(path, "differs from the hash in its manifest (changed after it "
                              "was written); 'fsxlt buckets check' shows what changed")


def manifest_entry(path: str | Path) -> dict[str, Any] | None:
    """The manifest entry of the bucket file ``path``, or None when no manifest lists it."""
    path = Path(path)
    if not (path.parent / MANIFEST).is_file():
        return None
    manifest = read_manifest(path.parent)
    return next((e for e in manifest.get("buckets") or [] if e.get("file") == path.name), None)


def read_set(directory: str | Path, verify: bool = False,
             ) -> tuple[dict[str, Any], list[Bucket], list[Example] | None]:
    """Read a bucket set directory: its manifest, buckets (in index order), remaining dev.

    With ``verify`` every bucket must match the hash its manifest recorded
    (training verifies; ``fsxlt buckets check`` reports instead).
    """
    directory = Path(directory)
    manifest = read_manifest(directory)
    buckets = [read_bucket(directory / entry["file"]) for entry in manifest["buckets"]]
    if verify:
        for entry, bucket in zip(manifest["buckets"], buckets, strict=True):
            check_bucket_hash(directory / entry["file"], bucket.sha256, entry)
    remaining = None
    if manifest.get("dev_remaining"):
        remaining = read_examples_jsonl(directory / manifest["dev_remaining"]["file"])
    return manifest, buckets, remaining


def find_sets(root: str | Path) -> list[Path]:
    """Every bucket set directory at or below ``root``, sorted."""
    root = Path(root)
    if not root.exists():
        raise FsxltError(f"{root}: no such directory")
    if (root / MANIFEST).is_file():
        return [root]
    return sorted(p.parent for p in root.rglob(MANIFEST))
