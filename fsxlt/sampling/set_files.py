"""What a bucket set answers for: the files a run reads of it, each checked against its manifest.

A bucket set (:mod:`fsxlt.sampling.store`) carries its buckets and may carry
data of its own: a dev set per bucket (FewCLUE's fixed splits), a test set
(FewCLUE's ``test_public``) and the dev examples that are in no bucket
(``dev-remaining.jsonl``, sets drawn from a dev split). Every file a run
reads is checked against the sha256 its manifest recorded, so a run never
trains or selects on a file that changed after the set was written.

:func:`set_files` answers for a set directory (a sweep's cell), and
:func:`named_files` for what ``fsxlt adapt --bucket`` and ``fsxlt icl
--bucket`` name: a whole set, one bucket of a set, or a bucket file on its
own (no manifest: nothing to check it against, no files of its own).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fsxlt.data.readings import DEFAULT_READING, Reading, reading_of, reading_problem
from fsxlt.errors import DataFormatError, FsxltError
from fsxlt.fileio import sha256_file, sha256_text
from fsxlt.sampling.store import (
    DEV_REMAINING,
    MANIFEST,
    bucket_file_hash,
    check_bucket_hash,
    read_bucket,
    read_examples_jsonl,
    read_manifest,
)

Digest = Callable[[Path], str]  # a file's content hash (sha256 of its text; a bucket's:
# fsxlt.sampling.store.bucket_hash)


def text_digest(path: Path) -> str:
    return sha256_text(path.read_text(encoding="utf-8"))


@dataclass(frozen=True)
class SetFiles:
    """The buckets a run reads of one bucket set, and the set's own data."""

    directory: Path
    buckets: list[tuple[int, str, Path, Path | None]]  # index, name, file, its own dev set
    test: Path | None  # the set's test set (fixed splits), else the task's test file
    strategy: str = ""  # the shot-selection strategy that built the set (fsxlt select)
    remaining: Path | None = None  # dev examples in no bucket (sets drawn from dev)
    coordinates: tuple[str, str, int] = ("", "", 0)  # task, language, K of the set
    source_sha256: str | None = None  # the file its buckets were drawn from (its manifest's)
    sampler: str = ""  # what drew the buckets (its manifest's): ``published`` for the study's
    dev_source_sha256: str | None = None  # the dev file a published set's remaining came from
    reading: Reading = DEFAULT_READING  # how the set read its files: its runs read theirs so

    def no_remaining(self, task: str) -> FsxltError:
        """The refusal of a run that selects on the set's remaining dev set, which it lacks,
        with the command that adds it."""
        if self.sampler == "published":
            store = self.directory.parents[2] if len(self.directory.parents) > 2 else "STORE"
            return FsxltError(
                f"{self.directory}: no remaining dev set (dev-remaining.jsonl), which {task} "
                "selects models on; the release does not hold it: add it with 'fsxlt buckets "
                f"import-published RELEASE --out {store} --task {task} --data-dir DIR' (DIR "
                "holding the task's dev-<lang>.tsv; the buckets stay as they are)")
        return FsxltError(
            f"{self.directory}: no remaining dev set (dev-remaining.jsonl), which {task} "
            "selects models on (the examples of its sampled split that are in no bucket); "
            "draw the set again with 'fsxlt sample' into a new store")

    def check_test(self, test: str | Path | None, task: Any, what: str = "the test file",
                   whole: bool = False) -> None:
        """Refuse, in one line, a test file that is the very file the buckets were drawn
        from: its examples may be the demonstrations, and a score on them says nothing of
        the transfer. Tasks that hold parts of one file out (XQuAD's paragraphs: ``data.
        holdout``) score on their own held-out part of it, and pass, unless the file is
        read ``whole`` (a file the user named to ``fsxlt adapt``)."""
        if test is None or not Path(test).is_file() or (
                self.source_sha256 is None and self.dev_source_sha256 is None):
            return
        if task.data.holdout_paragraphs and (task.is_generation or not whole):
            return  # its held-out part of the source file (QG cuts its own, even named)
        if self.dev_source_sha256 is not None and sha256_file(test) == self.dev_source_sha256:
            raise FsxltError(f"{test}: {what} is the dev file the buckets of {self.directory} "
                             "were found in (the same sha256), so its examples include the "
                             "demonstrations; give a test file of its own")
        if sha256_file(test) == self.source_sha256:
            raise FsxltError(f"{test}: {what} is the file the buckets of {self.directory} were "
                             "drawn from (the same sha256), so its examples include the "
                             "demonstrations; give a test file of its own")


def set_files(directory: Path, digest: Digest = text_digest, n_buckets: int | None = None,
              only: str | None = None, bucket_digest: Digest = bucket_file_hash) -> SetFiles:
    """A bucket set's files: its buckets (the first ``n_buckets``, or the file named
    ``only``), their own dev sets, the set's test set and remaining dev set, each checked
    against the hash its manifest recorded (``bucket_digest`` a bucket's, ``digest`` a
    data file's)."""
    manifest = read_manifest(directory)
    entries = _entries(directory, manifest, n_buckets, only)
    buckets = []
    for entry in entries:
        path = directory / entry["file"]
        if not path.is_file():
            raise DataFormatError(path, "bucket file listed in the manifest is missing")
        check_bucket_hash(path, bucket_digest(path), entry)
        dev = _own_file(directory, entry.get("dev"), digest, "its dev set")
        buckets.append((int(entry["index"]), str(entry.get("name") or ""), path, dev))
    test = _own_file(directory, manifest.get("test"), digest, "the set's test set")
    strategy = (manifest.get("strategy") or {}).get("name") or ""
    remaining = _own_file(directory, manifest.get("dev_remaining"), digest,
                          "the set's remaining dev set")
    if remaining is None and (directory / DEV_REMAINING).is_file():  # a manifest without it
        remaining = directory / DEV_REMAINING
    return SetFiles(directory, buckets, test, str(strategy), remaining,
                    (str(manifest.get("task")), str(manifest.get("language")),
                     int(manifest.get("k") or 0)), _source_sha256(manifest),
                    str(manifest.get("sampler") or ""),
                    _source_sha256(manifest.get("dev_remaining") or {}), reading_of(manifest))


def _source_sha256(meta: dict[str, Any]) -> str | None:
    """The sha256 of the file a set (or a bucket) was drawn from, when it records one."""
    source = meta.get("source")
    sha = source.get("sha256") if isinstance(source, dict) else None
    return sha if isinstance(sha, str) and sha else None


def named_files(bucket: Path, digest: Digest = text_digest,
                bucket_digest: Digest = bucket_file_hash) -> SetFiles:
    """The files a ``--bucket`` option names: a whole set, a bucket of a set, or a bucket
    file on its own."""
    if bucket.is_dir():
        if not (bucket / MANIFEST).is_file():
            raise FsxltError(f"{bucket}: not a bucket set directory (no {MANIFEST})")
        return set_files(bucket, digest, bucket_digest=bucket_digest)
    if not bucket.exists():
        raise FsxltError(f"{bucket}: file not found")
    if (bucket.parent / MANIFEST).is_file():
        return set_files(bucket.parent, digest, only=bucket.name, bucket_digest=bucket_digest)
    loose = read_bucket(bucket)
    strategy = loose.meta.get("strategy") if isinstance(loose.meta.get("strategy"), dict) \
        else {}
    return SetFiles(bucket.parent, [(loose.index, str(loose.meta.get("name") or ""), bucket,
                                     None)],
                    None, str(strategy.get("name") or ""),
                    coordinates=(loose.task, loose.language, loose.k),
                    source_sha256=_source_sha256(loose.meta), reading=_loose_reading(loose, bucket))


def _loose_reading(bucket: Any, path: Path) -> Reading:
    """The reading a bucket file on its own records (the default where it names none)."""
    problem = reading_problem(bucket.meta["reading"]) if "reading" in bucket.meta else None
    if problem is not None:
        raise DataFormatError(path, f"not an fsxlt bucket: reading: {problem}")
    return reading_of(bucket.meta)


def read_data_file(path: str | Path, task: Any, language: str,
                   split: str | None = None, reading: Reading = DEFAULT_READING) -> list[Any]:
    """A dev or test set's examples: a bucket set's own file (fsxlt's JSON lines beside its
    manifest, read when the set was written), else a data file in the task's format
    (``language``'s rows of a file that holds every language; ``split``'s part of a file
    that holds several, XQuAD's), read by ``reading`` (the set's)."""
    from fsxlt.data import read_examples

    path = Path(path)
    if path.suffix == ".jsonl" and ((path.parent / MANIFEST).is_file()
                                    or _fsxlt_examples(path)):
        return read_examples_jsonl(path)  # a set's file, or a part of one copied away
    try:
        return read_examples(path, task, language=language, split=split, reading=reading)
    except DataFormatError as err:
        if path.suffix != ".jsonl" or "invalid JSON" not in str(err):
            raise
        raise FsxltError(f"{err}; a data file is read in the task's format "
                         f"({task.data.format}) or as fsxlt's examples, one JSON object a "
                         "line (a bucket set's test.jsonl, dev-remaining.jsonl)") from None


def _fsxlt_examples(path: Path) -> bool:
    """Whether a JSON-lines file holds fsxlt's examples (a set's test.jsonl copied or cut
    elsewhere): its first line is one."""
    from fsxlt.data.examples import example_from_dict

    try:
        with open(path, encoding="utf-8") as handle:
            first = next((line for line in handle if line.strip()), "")
        example_from_dict(json.loads(first))
    except (OSError, UnicodeDecodeError, ValueError, KeyError, TypeError, AttributeError):
        return False
    return True


def _entries(directory: Path, manifest: dict[str, Any], n_buckets: int | None,
             only: str | None) -> list[dict[str, Any]]:
    """The manifest's bucket entries a run reads, in index order."""
    entries = sorted(manifest["buckets"], key=lambda e: int(e["index"]))
    if only is not None:
        entries = [e for e in entries if e.get("file") == only]
        if not entries:
            raise DataFormatError(directory / only, "bucket file not listed in its set's "
                                  "manifest")
    if n_buckets is not None:
        # a published bucket that could not be imported counts as drawn: its
        # runs are missing (the report shows the gap), the others still run
        gaps = [int(entry["index"]) for entry in manifest.get("missing_buckets") or []]
        numbers = sorted({int(e["index"]) for e in entries} | set(gaps))
        if len(numbers) < n_buckets:
            raise FsxltError(f"{directory}: holds {len(entries)} buckets, the sweep asks for "
                             f"{n_buckets}")
        wanted = set(numbers[:n_buckets])
        entries = [e for e in entries if int(e["index"]) in wanted]
    return entries


def _own_file(directory: Path, entry: dict[str, Any] | None, digest: Digest,
              what: str) -> Path | None:
    """A data file a bucket set carries (a bucket's dev set, the test set), hash-checked."""
    if not entry:
        return None
    path = directory / entry["file"]
    if not path.is_file():
        raise DataFormatError(path, f"{what}, listed in the manifest, is missing")
    if digest(path) != entry.get("sha256"):
        raise DataFormatError(path, "differs from the hash in its manifest (changed after it "
                              "was written); 'fsxlt buckets check' shows what changed")
    return path
