"""The bucket store: one directory per (task, language, K), self-contained.

Layout (``ROOT`` is e.g. ``buckets/``)::

    ROOT/.fsxlt-directory       marks ROOT as a bucket store (JSON; :mod:`fsxlt.study.directories`)
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

The write rule (write-once, :func:`write_sets`): a set, once written, is
never changed silently. Writing a set where byte-identical files already
are writes nothing (``unchanged``: this is how a rerun resumes); writing
another set there (another seed, source, sampler or strategy, edited
examples) is refused in one line naming the directory and what differs.
``replace=True`` (``--replace``) replaces it, and says so, but only a
directory that holds nothing but the old set's own files (those its
manifest names): run records or anything else are never deleted. Every set
of a command is checked before any is written, and ``ROOT`` is claimed as a
bucket store first: a root that is, lies in or holds a runs directory is
refused, so a refused command writes nothing, not even the marker.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fsxlt import __version__
from fsxlt.data import Example, example_from_dict
from fsxlt.data.buckets import Bucket, bucket_name  # re-exported: fsxlt.sampling.store.Bucket
from fsxlt.errors import DataFormatError, FsxltError
from fsxlt.fileio import (
    atomic_replace_dir,
    dumps_json,
    dumps_jsonl,
    read_json,
    sha256_text,
    text_lines,
)
from fsxlt.sampling.manifest import LEGACY_FORMAT as LEGACY_FORMAT  # re-exported
from fsxlt.sampling.manifest import STORE_FORMAT, parse_manifest, plain_name
from fsxlt.sampling.set_compare import (  # re-exported: fsxlt.sampling.store.MANIFEST
    MANIFEST,
    describe_difference,
    listing,
    own_files,
    same_file,
    same_files,
)

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
    gap stays visible in ``buckets check`` and in reports. ``dev_provenance``: what
    the manifest's ``dev_remaining`` entry records beside the file (a published set's
    dev file, and what of its buckets was located there). ``written`` is
    what :func:`write_sets` did with the set (None until it is written).
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
    dev_provenance: dict[str, Any] | None = None  # where a published set's dev set came from
    notes: dict[str, Any] = field(default_factory=dict)
    indices: list[int] | None = None
    missing_buckets: list[dict[str, Any]] = field(default_factory=list)
    names: list[str] | None = None
    devs: list[list[Example]] | None = None
    union: int | None = None
    test: list[Example] | None = None
    test_source: dict[str, Any] | None = None
    strategy: dict[str, Any] | None = None  # a shot-selection strategy's name, pools, model
    reading: dict[str, str] = field(default_factory=dict)  # fsxlt.data.readings: non-default
    written: WrittenSet | None = field(default=None, compare=False, repr=False)

    def bucket_indices(self) -> list[int]:
        """The index of each bucket, in order."""
        return list(self.indices) if self.indices is not None else list(range(len(self.buckets)))

    def bucket_names(self) -> list[str]:
        """The name of each bucket (its file stem): ``00``, ``01``, ... unless named."""
        if self.names is not None:
            return list(self.names)
        return [bucket_name(index) for index in self.bucket_indices()]

    def provenance(self) -> dict[str, Any]:
        """What the set's buckets were drawn by and from (the version that drew them is the
        manifest's alone: it is not part of a bucket's content)."""
        meta = {
            "task": self.task, "language": self.language, "k": self.k,
            "sampler": self.sampler, "seed": self.seed, "split": self.split,
            "source": {"file": self.source_file, "sha256": self.source_sha256},
        }
        if self.strategy is not None:
            meta["strategy"] = self.strategy
        return meta


def bucket_dir(root: str | Path, task: str, language: str, k: int) -> Path:
    return Path(root) / task / language / f"k{k}"


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


def bucket_hash(text: str, raw: Any = None) -> str:
    """A bucket's identity (its manifest entry's and its runs' ``sha256``), from the text of
    its file: the sha256 of its content, not of its bytes.

    The content is what the bucket is: task, language, K, sampler, seed, split, the
    sha256 of the file it was drawn from (the file's name only where no hash is
    known), index, name, ids and examples, as canonical JSON (sorted keys, no
    whitespace). Which fsxlt wrote it and how the file is laid out are not
    content: the same draw gives the same hash in every release. A bucket file
    written by fsxlt 0.3 or 0.4 carries ``fsxlt_version`` in its header; it keeps
    the identity it was given then, the sha256 of its bytes, so its runs keep theirs.
    A text that is not a bucket file hashes as its bytes (its manifest's check
    then fails, and :func:`read_bucket` says why). ``raw``: the text already parsed.
    """
    try:
        raw = json.loads(text) if raw is None else raw
        meta, examples = raw["bucket"], raw["examples"]
    except (ValueError, TypeError, KeyError):
        return sha256_text(text)
    if not isinstance(meta, dict) or "fsxlt_version" in meta:
        return sha256_text(text)
    source = meta.get("source")
    if isinstance(source, dict) and source.get("sha256"):
        meta = {**meta, "source": {"sha256": source["sha256"]}}
    content = json.dumps({"bucket": meta, "examples": examples}, ensure_ascii=False,
                         sort_keys=True, separators=(",", ":"))
    return sha256_text(content)


def bucket_file_hash(path: Path) -> str:
    """:func:`bucket_hash` of the bucket file at ``path``."""
    return bucket_hash(Path(path).read_text(encoding="utf-8"))


def render_set(bucket_set: BucketSet) -> dict[str, str]:
    """All files of a bucket set, name -> text."""
    files: dict[str, str] = {}
    entries = []
    names = bucket_set.bucket_names()
    for position, index in enumerate(bucket_set.bucket_indices()):
        name = bucket_file_name(index, names[position])
        files[name] = render_bucket(bucket_set, position)
        entry = {"index": index, "file": name, "sha256": bucket_hash(files[name]),
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
        bucket_set.provenance(), fsxlt_version=__version__, format=STORE_FORMAT,
        n_buckets=len(entries),
        labels=bucket_set.labels, missing_labels=bucket_set.missing_labels,
        buckets=entries, dev_remaining=None, notes=bucket_set.notes)
    if bucket_set.reading:  # the set's, not a bucket's: the default reading is named by none
        manifest["reading"] = dict(sorted(bucket_set.reading.items()))
    if bucket_set.missing_buckets:
        manifest["missing_buckets"] = bucket_set.missing_buckets
    if bucket_set.test is not None:
        files[TEST_FILE] = dumps_jsonl(ex.to_dict() for ex in bucket_set.test)
        manifest["test"] = {"file": TEST_FILE, "n": len(bucket_set.test),
                            "sha256": sha256_text(files[TEST_FILE]),
                            "source": bucket_set.test_source}
    if bucket_set.dev_remaining is not None:
        files[DEV_REMAINING] = dumps_jsonl(ex.to_dict() for ex in bucket_set.dev_remaining)
        manifest["dev_remaining"] = {**(bucket_set.dev_provenance or {}),
                                     "file": DEV_REMAINING, "n": len(bucket_set.dev_remaining),
                                     "sha256": sha256_text(files[DEV_REMAINING])}
    files[MANIFEST] = dumps_json(manifest)
    return files


NEW, UNCHANGED, REPLACED, DEV_ADDED = "new", "unchanged", "replaced", "dev set added"


@dataclass(frozen=True)
class WrittenSet:
    """What :func:`write_sets` did with one set: its directory, ``new``, ``unchanged``
    (byte-identical files already there, or the same set with a remaining dev set the new
    one lacks; nothing written), ``dev set added`` (the same set, which lacked the
    remaining dev set the new one brings: its buckets stay byte for byte) or
    ``replaced``; ``detail`` says what differed from the replaced set."""

    path: Path
    status: str
    detail: str = ""


def write_sets(root: str | Path, bucket_sets: Sequence[BucketSet], *, replace: bool = False,
               what: str = "--out", folders: Sequence[str] | None = None,
               whole: bool = False) -> list[WrittenSet]:
    """Write bucket sets under ``root`` by the store's write-once rule (module docstring).

    Every set is rendered and checked against what its directory holds
    before anything is written (``whole``: then all of them or none, an import's rule,
    :func:`fsxlt.fileio.replace_dirs`; else each set whole), and ``root`` is claimed as a
    bucket store
    (:func:`fsxlt.study.directories.claim`, ``what`` names it in a refusal), so a
    refusal writes nothing. The check is made again under the store's writer
    lock (:func:`fsxlt.study.directories.writer_lock`), which is held until the last
    set is written: two commands writing one store never both find a
    directory free (the second is refused, or finds the first one's set).
    ``folders`` files set *i* under ``root/folders[i]`` (``fsxlt select``: one
    folder per strategy). Each set's :class:`WrittenSet` is returned and kept as
    ``bucket_set.written``.
    """
    from fsxlt.fileio import replace_dirs
    from fsxlt.study.directories import (
        BUCKETS,
        check_claim,
        claim,
        undone_on_failure,
        writer_lock,
    )

    root = Path(root)
    places = [root / folder for folder in folders] if folders is not None else None
    check_claim(root, BUCKETS, what)
    rendered = [render_set(bucket_set) for bucket_set in bucket_sets]  # once, planned twice
    _plan_sets(root, bucket_sets, places, replace, rendered)  # refused here: nothing written
    with undone_on_failure(root) if whole else contextlib.nullcontext():
        claim(root, BUCKETS, what)
        with writer_lock(root, BUCKETS):
            plans, targets = _plan_sets(root, bucket_sets, places, replace, rendered)
            changed = {target: files for target, (files, plan) in plans.items()
                       if plan.status != UNCHANGED}
            if whole:  # every set, or none
                replace_dirs(changed)
            for target, files in changed.items() if not whole else ():
                atomic_replace_dir(target, files)  # each set whole: a rerun writes the rest
    for bucket_set, target in zip(bucket_sets, targets, strict=True):
        bucket_set.written = plans[target][1]
    return [plan for _files, plan in plans.values()]


def _plan_sets(root: Path, bucket_sets: Sequence[BucketSet], places: list[Path] | None,
               replace: bool, rendered: Sequence[dict[str, str]],
               ) -> tuple[dict[Path, tuple[dict[str, str], WrittenSet]], list[Path]]:
    """Each set's files and what writing them would do (:func:`plan_write`), by target
    directory, and each set's target; every refusal at once, in one line."""
    plans: dict[Path, tuple[dict[str, str], WrittenSet]] = {}
    targets, refusals = [], []
    for position, bucket_set in enumerate(bucket_sets):
        base = places[position] if places is not None else root
        target = bucket_dir(base, bucket_set.task, bucket_set.language, bucket_set.k)
        if not target.resolve().is_relative_to(root.resolve()) or not all(
                plain_name(part) for part in (bucket_set.task, bucket_set.language)):
            raise FsxltError(f"{target}: a bucket set's place must lie below {root} (task "
                             f"{bucket_set.task!r}, language {bucket_set.language!r}); "
                             "nothing was written")
        targets.append(target)
        files = rendered[position]
        if target in plans:
            if plans[target][0] != files:
                refusals.append(f"{target}: two different bucket sets of this command go to "
                                "this directory; nothing was written")
            continue
        try:
            plans[target] = (files, plan_write(root, target, files, replace))
        except FsxltError as err:
            refusals.append(str(err))
    if refusals:
        others = len(refusals) - 1
        more = f" ({others} more set{'s' if others > 1 else ''} refused)" if others else ""
        raise FsxltError(refusals[0] + more)
    return plans, targets


def plan_write(root: Path, target: Path, files: dict[str, str], replace: bool) -> WrittenSet:
    """What writing ``files`` as the set directory ``target`` would do; refuses in one line.

    ``new`` where nothing (or an empty directory) is, ``unchanged`` where the
    same files are already there byte for byte, ``replaced`` where another
    set is and ``replace`` is given. Refused: another set without
    ``replace``, and, even with it, a directory holding anything but a set's
    own files (those its manifest names), which is never deleted.
    """
    for parent in [target, *target.parents]:
        if parent.exists() and not parent.is_dir():
            raise FsxltError(f"{parent}: a file where the bucket set {target} goes; "
                             "nothing was written")
        if parent == root:
            break
    if not target.exists() or not any(target.iterdir()):
        return WrittenSet(target, NEW)
    if same_files(target, files):
        return WrittenSet(target, UNCHANGED)
    old = _old_manifest(target)
    present = {entry.name for entry in target.iterdir()}
    if old is None:
        raise FsxltError(f"{target}: holds {listing(target, present)} but no bucket set "
                         "(no readable manifest.json); nothing was written, and --replace "
                         "replaces bucket sets only")
    foreign = present - own_files(old)
    foreign |= {name for name in present - foreign if not (target / name).is_file()}
    if foreign:
        raise FsxltError(f"{target}: holds {listing(target, foreign)} besides its bucket set; "
                         "nothing was written, and --replace replaces bucket sets only")
    dev_only = _dev_only_change(target, old, files)
    if dev_only is not None:
        return WrittenSet(target, dev_only)
    difference = describe_difference(target, old, files)
    if not replace:
        raise FsxltError(f"{target}: holds another bucket set ({difference}); nothing was "
                         "written (--replace replaces it)")
    return WrittenSet(target, REPLACED, difference)


def _dev_only_change(directory: Path, old: dict[str, Any] | None,
                     files: dict[str, str]) -> str | None:
    """``dev set added`` where ``files`` are the set in ``directory`` plus the remaining dev
    set it lacks, ``unchanged`` where they are that set less the remaining dev set it
    has, else None. Every other file must be there byte for byte, and the manifests
    agree but for ``dev_remaining`` (and who wrote them): a bucket's file and hash stay."""
    if old is None:
        return None
    new = json.loads(files[MANIFEST])
    had, brings = bool(old.get("dev_remaining")), bool(new.get("dev_remaining"))
    if had == brings:
        return None
    ignored = ("dev_remaining", "fsxlt_version", "reading")  # the reading: of the dev file
    if ({k: v for k, v in old.items() if k not in ignored}
            != {k: v for k, v in new.items() if k not in ignored}):
        return None
    others = [name for name in files if name not in (MANIFEST, DEV_REMAINING)]
    if not all(same_file(directory / name, files[name]) for name in others):
        return None
    if (had and not (directory / DEV_REMAINING).is_file()) or (
            not had and (directory / DEV_REMAINING).exists()):
        return None
    return DEV_ADDED if brings else UNCHANGED


def _old_manifest(directory: Path) -> dict[str, Any] | None:
    """The manifest of the set in ``directory``, or None when there is no readable one."""
    try:
        return read_manifest(directory)
    except (FsxltError, OSError):
        return None


def read_manifest(directory: str | Path) -> dict[str, Any]:
    """A set's manifest, checked at this one boundary: every reader of a store (training,
    ``buckets check``, sweeps) gets a manifest whose fields have the types fsxlt writes,
    or a one-line error naming the file and the field (a hand-edited manifest)."""
    path = Path(directory) / MANIFEST
    return parse_manifest(read_json(path), path)


def read_bucket(path: str | Path) -> Bucket:
    """Read one bucket file; a malformed file is a one-line error naming it."""
    path = Path(path)
    raw = read_json(path)
    try:
        meta = raw["bucket"]
        examples = [example_from_dict(row) for row in raw["examples"]]
        bucket = Bucket(task=meta["task"], language=meta["language"], k=int(meta["k"]),
                        index=int(meta["index"]), examples=examples, meta=meta,
                        sha256=bucket_hash(path.read_text(encoding="utf-8"), raw),
                        set_size=_set_size(path.parent))
    except (KeyError, TypeError, ValueError) as err:
        raise DataFormatError(path, f"not an fsxlt bucket file ({err})") from None
    if not examples:
        raise DataFormatError(path, "bucket holds no examples")
    return bucket


def _set_size(directory: Path) -> int | None:
    """How many buckets the set in ``directory`` has (its manifest's ``n_buckets``), or None
    for a bucket file outside a set (reports then expect the task's number)."""
    try:
        size = json.loads((directory / MANIFEST).read_text(encoding="utf-8")).get("n_buckets")
    except (OSError, ValueError, AttributeError):
        return None
    return size if isinstance(size, int) and not isinstance(size, bool) and size > 0 else None


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


@dataclass(frozen=True)
class StoreIndex:
    """Every bucket file of a store by the content hash its manifest records: read once,
    for looking up many runs' buckets (:func:`run_bucket`)."""

    root: Path
    files: dict[str, Path]


def index_store(root: str | Path) -> StoreIndex:
    """The :class:`StoreIndex` of the store at ``root`` (one-line error if none is there)."""
    files = {}
    for directory in find_sets(root):
        for entry in read_manifest(directory)["buckets"]:
            files.setdefault(str(entry.get("sha256") or ""), directory / entry["file"])
    files.pop("", None)
    return StoreIndex(Path(root), files)


def run_bucket(block: dict[str, Any], where: str | Path,
               store: StoreIndex | str | Path | None = None) -> Bucket:
    """The bucket a run record's ``bucket`` block names, found by its content hash: in the
    bucket store ``store`` (any set under it; an imported study's records name files of
    another machine; pass an :func:`index_store` to look up many), else at the record's
    path. A bucket whose content is not the hash the run recorded is refused in one line
    naming ``where`` (the record)."""
    expected = str(block.get("sha256") or "")
    if store is not None:
        index = store if isinstance(store, StoreIndex) else index_store(store)
        if expected not in index.files:
            raise FsxltError(f"{where}: its bucket ({expected[:16] or 'no hash'}) is in no "
                             f"set under {index.root}")
        return run_bucket({**block, "path": str(index.files[expected])}, where)
    if not block.get("path"):
        raise FsxltError(f"{where}: names no bucket file; pass --buckets STORE (found there "
                         "by its hash)")
    path = Path(str(block["path"]))
    if not path.is_file():
        raise FsxltError(f"{where}: its bucket file {path} is not here; pass --buckets STORE "
                         "(found there by its hash)")
    bucket = read_bucket(path)
    if expected and bucket.sha256 != expected:
        raise FsxltError(f"{where}: its bucket file {path} is not the bucket it ran on "
                         f"(hash {bucket.sha256[:16]}, the record's {expected[:16]})")
    return bucket
