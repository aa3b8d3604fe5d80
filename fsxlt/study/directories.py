"""The four kinds of output directory, the rule that keeps them apart, and model folders.

fsxlt writes four kinds of tree: a *bucket store* (``fsxlt sample``,
``select``, ``buckets import-*``; layout in :mod:`fsxlt.sampling.store`), a
*runs directory* (``fsxlt adapt``, ``sweep``, ``icl``, ``lm-adapt``; layout in
:mod:`fsxlt.study.runs`), a *submission folder* (``fsxlt submission``: a
benchmark's files, ready to upload) and a *report folder* (``fsxlt report --out``:
tables and plots, :func:`fsxlt.report.claim_report_dir`). The first two share the
``<task>/<lang>/k<K>/`` prefix, so one written into the other would replace or
shadow its files; anything written into a submission folder would be uploaded
with it. Each store and runs directory therefore carries a marker at its root,
``.fsxlt-directory`` (``{"kind": "buckets"}`` or ``{"kind": "runs"}``), written
the first time a command writes there; a submission folder is known by the list
of the files fsxlt wrote there, which sits beside it (inside, it would travel
to the leaderboard: :func:`submission_list`). Every writing command *claims*
its root first: :func:`claim` refuses, in one line, a root that is or lies
inside a directory of another kind, or that holds one, and writes the marker
only then, so a refused command writes nothing (:func:`check_claim` refuses the
same way without writing, for a command to call before its work). Trees written
before markers existed are recognised by their content (a bucket manifest, a run record) where it
matters: the bucket store and the runs directory each refuse to write over
the other's files. The marker is a hidden file at the root, neither a set
nor a record: code that walks a tree must not take it for one (the bucket
store's walkers look for ``manifest.json`` only).

A model is identified by its files' content (:mod:`fsxlt.identity`), so no
output may be written into the folder of a model, encoder or checkpoint a
command reads: its own records would change the model's fingerprint, and every
rerun would find a model that differs. :func:`check_apart_from_models` refuses an
output equal to, inside or holding such a folder.

One writer at a time: a command holds :func:`writer_lock` on the root it
writes (``.fsxlt-writer.lock``, an exclusive ``flock``) from its last check to
its last write, so two commands on one directory never both find it free and
write over each other; the second is refused in one line naming the first.
"""

from __future__ import annotations

import json
import os
import socket
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from fsxlt.errors import FsxltError
from fsxlt.fileio import atomic_write_json
from fsxlt.study.runs import record_files

MARKER = ".fsxlt-directory"
LOCK_FILE = ".fsxlt-writer.lock"  # held while a command writes (writer_lock)
BUCKETS = "buckets"
RUNS = "runs"
SUBMISSION = "submission"
REPORT = "report"
KINDS = {BUCKETS: "bucket store", RUNS: "runs directory", SUBMISSION: "submission folder",
         REPORT: "report folder"}
SUBMISSION_LIST = ".{name}.fsxlt-submission.json"  # beside a submission folder (its files)
RECORD_FORMATS = ("fsxlt-adapt-", "fsxlt-zero-shot", "fsxlt-evaluation")  # files of a runs dir


def submission_list(folder: str | Path) -> Path:
    """Where ``fsxlt submission`` lists the files it wrote into ``folder``: a hidden file
    beside it (inside, it would travel with the folder to the leaderboard)."""
    folder = Path(folder)
    return folder.parent / SUBMISSION_LIST.format(name=folder.name)


def marked_kind(directory: str | Path) -> str | None:
    """The kind a directory's own marker names (a submission folder: the list beside it),
    or None when it has none (or it is unreadable)."""
    directory = Path(directory)
    if directory.name and submission_list(directory).is_file() and directory.is_dir():
        return SUBMISSION
    path = directory / MARKER
    if not path.is_file():
        return None
    try:
        kind = json.loads(path.read_text(encoding="utf-8")).get("kind")
    except (OSError, ValueError, AttributeError):
        return None
    return kind if kind in KINDS else None


def enclosing(path: str | Path) -> tuple[str, Path] | None:
    """The nearest marked directory at or above ``path``: (kind, directory), or None.

    ``path`` is resolved first (symbolic links followed), so a link to a folder
    inside a directory of one kind is found inside it, as what is written through
    the link would be."""
    path = Path(path).resolve()
    for candidate in (path, *path.parents):
        kind = marked_kind(candidate)
        if kind is not None:
            return kind, candidate
    return None


def marked_inside(path: str | Path, kind: str, limit: int = 6) -> Path | None:
    """A directory of ``kind`` strictly below ``path`` (at most ``limit`` levels), or None.

    Hidden folders are not searched.
    """
    root = Path(path)
    if not root.is_dir():
        return None
    frontier = [root]
    for _ in range(limit):
        below = []
        for directory in frontier:
            try:  # hidden folders (.git, .venv, a writer's temporaries) hold no output tree
                children = [c for c in directory.iterdir() if c.is_dir()
                            and not c.is_symlink() and not c.name.startswith(".")]
            except OSError:
                continue
            for child in sorted(children):
                if marked_kind(child) == kind:
                    return child
                below.append(child)
        frontier = below
    return None


def claim(root: str | Path, kind: str, what: str = "--out") -> Path:
    """Make ``root`` a directory of ``kind``, or refuse in one line; returns ``root``.

    Refused as :func:`check_claim` refuses, before anything is written. Call
    it after every input is checked and before writing: it writes the marker
    (creating ``root``) when neither ``root`` nor a directory above it has one.
    """
    root = Path(root)
    if check_claim(root, kind, what) is None:
        atomic_write_json(root / MARKER, {"kind": kind})
    return root


class WriterLock:
    """The writer lock of one root (:func:`writer_lock`): taken once, released at the end."""

    def __init__(self, root: str | Path, kind: str) -> None:
        self.root, self.kind = Path(root), kind
        self.path = self.root / LOCK_FILE
        self.handle: Any = None
        self.created = False  # the lock file is this command's (removed if it is refused)

    def take(self) -> None:
        """Hold the lock now (a no-op when held), or refuse in one line naming the holder."""
        try:
            import fcntl
        except ImportError:  # pragma: no cover - Windows
            return
        if self.handle is not None:
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.created = not self.path.exists()
        handle = open(self.path, "a+", encoding="utf-8")  # noqa: SIM115 - held until release
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.seek(0)
            holder = handle.read().strip() or "another process"
            handle.close()
            raise FsxltError(f"{self.root}: another fsxlt command is writing this "
                             f"{KINDS[self.kind]} ({holder}); wait for it to finish, or give "
                             "this one another output directory") from None
        handle.seek(0)
        handle.truncate()
        handle.write(f"pid {os.getpid()} on {socket.gethostname()}\n")
        handle.flush()
        self.handle = handle

    def claim(self) -> None:
        """Make the root a directory of this lock's kind (:func:`claim`) and hold the lock:
        what an ``early`` command does once its cheap checks and its model load passed."""
        claim(self.root, self.kind)
        self.take()

    def release(self, refused: bool = False) -> None:
        """Empty the lock file (a finished directory names no machine or process) and let go;
        ``refused``: a lock file this command created is removed with it."""
        if self.handle is None:
            return
        import fcntl

        if refused and self.created:
            self.path.unlink(missing_ok=True)
        self.handle.seek(0)
        self.handle.truncate()
        self.handle.flush()
        fcntl.flock(self.handle, fcntl.LOCK_UN)
        self.handle.close()
        self.handle = None


@contextmanager
def writer_lock(root: str | Path, kind: str, early: bool = False) -> Iterator[WriterLock]:
    """Hold ``root`` (a claimed directory of ``kind``) while a command writes there; a second
    writer is refused in one line naming the holder.

    An exclusive, non-blocking ``flock`` on ``ROOT/.fsxlt-writer.lock``, which
    names its holder (pid and host) while it is held and is emptied on release, so a
    finished store or runs directory says nothing of the machine that wrote it. The
    kernel releases it when the holder exits or is killed, so no lock is ever stale.
    Without ``fcntl`` (not POSIX) writers are not serialised.

    ``early``: for a command that loads a model before it writes. ``root`` is checked
    (:func:`check_claim`) and the lock taken at once only where ``root`` already exists
    (a directory another command may be writing: refused before the load), else by the
    command's ``lock.claim()`` before its first write; a command refused while holding
    it leaves no lock file it created.
    """
    lock = WriterLock(root, kind)
    if early:
        check_claim(root, kind)
    if not early or Path(root).is_dir():
        lock.take()
    try:
        yield lock
    except FsxltError:
        lock.release(refused=True)
        raise
    finally:
        lock.release()


def check_claim(root: str | Path, kind: str, what: str = "--out") -> Path | None:
    """Refuse, in one line, a ``root`` that cannot become a directory of ``kind``; writes nothing.

    Refused: ``root`` is, or lies inside, a directory of the other kind, or
    holds one (marked, or unmarked with the other kind's files: see
    :func:`check_separate`). Returns the marked directory of ``kind`` at or
    above ``root``, or None when there is none yet (:func:`claim` then marks
    ``root``). Commands call it early, so that a wrong ``--out`` costs nothing.
    """
    if kind not in KINDS:
        raise ValueError(f"unknown directory kind {kind!r}")
    root = Path(root)
    found = enclosing(root)
    if found is not None and found[0] != kind:
        real = root.resolve()
        where = "is" if found[1] == real else f"lies inside {found[1]}, which is"
        if real != root.absolute():
            where = f"(a link to {real}) {where}"
        raise FsxltError(f"{root}: {what} {where} a {KINDS[found[0]]}; a {KINDS[kind]} "
                         "must be a directory of its own")
    for other in KINDS:
        inner = None if other == kind else marked_inside(root, other)
        if inner is not None:
            raise FsxltError(f"{root}: {what} holds a {KINDS[other]} ({inner}); a "
                             f"{KINDS[kind]} must be a directory of its own")
    check_separate(root, kind, what)
    return None if found is None else found[1]


def check_apart_from_models(out: str | Path, models: Iterable[tuple[str, Any]],
                            what: str = "--out", holding: bool = True) -> None:
    """Refuse, in one line, an output ``out`` that is, lies inside or (``holding``: an
    output directory, not the folder of one output file) holds the folder of a model it
    reads (``models``: (option, path) pairs; a name that is no local path, a hub model, is
    skipped; a model file stands for its folder). Links are followed."""
    target = Path(out).resolve()
    for option, model in models:
        if model is None or not Path(model).exists():
            continue
        folder = Path(model).resolve()
        folder = folder if folder.is_dir() else folder.parent
        if target == folder or folder in target.parents or (
                holding and target in folder.parents):
            relation = ("is" if target == folder else "lies inside"
                        if folder in target.parents else "holds")
            raise FsxltError(f"{out}: {what} {relation} the folder of {option} ({model}); a "
                             "model is identified by its files, so outputs written there would "
                             "change it: give the output a folder of its own")


def check_separate(root: str | Path, kind: str, what: str = "--out") -> None:
    """Refuse a root of ``kind`` that is not marked but holds the other kind's files.

    A tree written before markers existed: a runs directory holds
    ``<task>/<lang>/k<K>/<arm>/`` folders of run records and
    ``<task>/<lang>/k0/`` zero-shot records, a bucket store
    ``<task>/<lang>/k<K>/manifest.json``.
    """
    root = Path(root)
    if not root.is_dir() or marked_kind(root) == kind:
        return
    if kind in (RUNS, REPORT):
        manifests = sorted(root.glob("*/*/k*/manifest.json"))
        if manifests or (root / "manifest.json").is_file():
            example = manifests[0].parent if manifests else root
            raise FsxltError(f"{root}: {what} holds bucket sets ({example}); a {KINDS[kind]} "
                             "must be a directory of its own")
    if kind != RUNS:
        records = [*record_files(root)[:50], *sorted(root.glob("*/*/k0/*.json"))]
        for record in records:
            try:
                fmt = json.loads(record.read_text(encoding="utf-8")).get("format", "")
            except (OSError, ValueError, AttributeError):
                continue
            if isinstance(fmt, str) and fmt.startswith(RECORD_FORMATS):
                raise FsxltError(f"{root}: {what} holds run records ({record}); a "
                                 f"{KINDS[kind]} must be a directory of its own")


def overlap(path: str | Path, other: str | Path) -> str | None:
    """How ``path`` stands to ``other``: ``is``, ``lies inside``, ``holds``, or None (apart)."""
    a, b = Path(path).resolve(), Path(other).resolve()
    if a == b:
        return "is"
    return "lies inside" if b in a.parents else ("holds" if a in b.parents else None)


def check_apart(runs: str | Path, buckets: str | Path, where: str) -> None:
    """Refuse a runs directory equal to, inside or around a bucket store (a sweep's paths)."""
    relation = overlap(runs, buckets)
    if relation is not None:
        raise FsxltError(f"{where}: out ({runs}) {relation} the bucket store ({buckets}); "
                         "records and buckets need directories of their own")


@contextmanager
def undone_on_failure(root: str | Path) -> Iterator[None]:
    """For a command that claims ``root`` and writes there all or nothing
    (:func:`fsxlt.fileio.write_all`): where it fails, a ``root`` it created is removed, and
    so are the marker and lock file it made in one that was there."""
    import shutil

    root = Path(root)
    existed = root.exists()
    fresh = [path for path in (root / MARKER, root / LOCK_FILE) if not path.exists()]
    try:
        yield
    except BaseException:
        if not existed:
            shutil.rmtree(root, ignore_errors=True)
        for path in fresh:
            path.unlink(missing_ok=True)
        raise

