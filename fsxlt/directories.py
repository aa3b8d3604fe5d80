"""The two kinds of output directory, and the rule that keeps them apart.

fsxlt writes two kinds of tree: a *bucket store* (``fsxlt sample``,
``select``, ``buckets import-*``; layout in :mod:`fsxlt.sampling.store`) and
a *runs directory* (``fsxlt adapt``, ``sweep``; layout in :mod:`fsxlt.runs`).
Their layouts share the ``<task>/<lang>/k<K>/`` prefix, so one written into
the other would replace or shadow its files. Each root therefore carries a
marker, ``.fsxlt-directory`` (``{"kind": "buckets"}`` or
``{"kind": "runs"}``), written the first time a command writes there, and
every writing command *claims* its root first: :func:`claim` refuses, in one
line, a root that is or lies inside a directory of the other kind, or that
holds one, and writes the marker only then, so a refused command writes
nothing (:func:`check_claim` refuses the same way without writing, for a
command to call before its work). Trees written before markers existed are
recognised by their content (a bucket manifest, a run record) where it
matters: the bucket store and the runs directory each refuse to write over
the other's files. The marker is a hidden file at the root, neither a set
nor a record: code that walks a tree must not take it for one (the bucket
store's walkers look for ``manifest.json`` only).

One writer at a time: a command holds :func:`writer_lock` on the root it
writes (``.fsxlt-writer.lock``, an exclusive ``flock``) from its last check to
its last write, so two commands on one directory never both find it free and
write over each other; the second is refused in one line naming the first.
"""

from __future__ import annotations

import json
import os
import socket
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from fsxlt.errors import FsxltError
from fsxlt.fileio import atomic_write_json
from fsxlt.runs import record_files

MARKER = ".fsxlt-directory"
LOCK_FILE = ".fsxlt-writer.lock"  # held while a command writes (writer_lock)
BUCKETS = "buckets"
RUNS = "runs"
KINDS = {BUCKETS: "bucket store", RUNS: "runs directory"}
RECORD_FORMATS = ("fsxlt-adapt-", "fsxlt-zero-shot", "fsxlt-evaluation")  # files of a runs dir


def marked_kind(directory: str | Path) -> str | None:
    """The kind a directory's own marker names, or None when it has none (or is unreadable)."""
    path = Path(directory) / MARKER
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


@contextmanager
def writer_lock(root: str | Path, kind: str) -> Iterator[None]:
    """Hold ``root`` (a claimed directory of ``kind``) while a command writes there; a second
    writer is refused in one line naming the holder.

    An exclusive, non-blocking ``flock`` on ``ROOT/.fsxlt-writer.lock``, which
    names its holder (pid and host) while it is held and is emptied on release, so a
    finished store or runs directory says nothing of the machine that wrote it. The
    kernel releases it when the holder exits or is killed, so no lock is ever stale.
    Without ``fcntl`` (not POSIX) writers are not serialised.
    """
    try:
        import fcntl
    except ImportError:  # pragma: no cover - Windows
        yield
        return
    path = Path(root) / LOCK_FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a+", encoding="utf-8") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.seek(0)
            holder = handle.read().strip() or "another process"
            raise FsxltError(f"{root}: another fsxlt command is writing this {KINDS[kind]} "
                             f"({holder}); wait for it to finish, or give this one another "
                             "output directory") from None
        handle.seek(0)
        handle.truncate()
        handle.write(f"pid {os.getpid()} on {socket.gethostname()}\n")
        handle.flush()
        try:
            yield
        finally:  # emptied before release: a finished directory names no machine or process
            handle.seek(0)
            handle.truncate()
            handle.flush()
            fcntl.flock(handle, fcntl.LOCK_UN)


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
    other = RUNS if kind == BUCKETS else BUCKETS
    found = enclosing(root)
    if found is not None and found[0] == other:
        real = root.resolve()
        where = "is" if found[1] == real else f"lies inside {found[1]}, which is"
        if real != root.absolute():
            where = f"(a link to {real}) {where}"
        raise FsxltError(f"{root}: {what} {where} a {KINDS[other]}; a {KINDS[kind]} "
                         "must be a directory of its own")
    inner = marked_inside(root, other)
    if inner is not None:
        raise FsxltError(f"{root}: {what} holds a {KINDS[other]} ({inner}); a {KINDS[kind]} "
                         "must be a directory of its own")
    check_separate(root, kind, what)
    return None if found is None else found[1]


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
    if kind == RUNS:
        manifests = sorted(root.glob("*/*/k*/manifest.json"))
        if manifests or (root / "manifest.json").is_file():
            example = manifests[0].parent if manifests else root
            raise FsxltError(f"{root}: {what} holds bucket sets ({example}); a runs directory "
                             "must be a directory of its own")
    else:
        records = [*record_files(root)[:50], *sorted(root.glob("*/*/k0/*.json"))]
        for record in records:
            try:
                fmt = json.loads(record.read_text(encoding="utf-8")).get("format", "")
            except (OSError, ValueError, AttributeError):
                continue
            if isinstance(fmt, str) and fmt.startswith(RECORD_FORMATS):
                raise FsxltError(f"{root}: {what} holds run records ({record}); a bucket "
                                 "store must be a directory of its own")


def check_apart(runs: str | Path, buckets: str | Path, where: str) -> None:
    """Refuse a runs directory equal to, inside or around a bucket store (a sweep's paths)."""
    a, b = Path(runs).resolve(), Path(buckets).resolve()
    if a == b or b in a.parents or a in b.parents:
        relation = "is" if a == b else ("lies inside" if b in a.parents else "holds")
        raise FsxltError(f"{where}: out ({runs}) {relation} the bucket store ({buckets}); "
                         "records and buckets need directories of their own")
