"""Small file helpers shared by every stage: atomic writes, hashing, JSON.

Every artifact fsxlt writes goes through :func:`atomic_write_text` (or
:func:`atomic_replace_dir` for a directory of files), so a crash never leaves
a half-written file that a later stage could mistake for a finished one.

Temporary files and directories sit beside their target, hidden, and are
named after it, the host and the writing process
(``.<name>.<host>-<pid>.<random>``). A process killed mid-write (SIGKILL,
power loss) leaves one behind; the next write of the same target removes
every such leftover whose process is gone, so a rerun leaves the directory
exactly as an uninterrupted run would.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import math
import os
import re
import shutil
import socket
import tempfile
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

# a name read from outside that becomes a file or folder: letters, digits, '_', '-', '+' and
# '.', not starting with '.' (so never '.', '..' or hidden), no separator or control
# character: it stays where it is put (a manifest's files, a record's task or arm)
PLAIN_NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.+-]{0,99}$")


def plain_name(value: Any) -> bool:
    """Whether ``value`` is a name that may become a file or folder (:data:`PLAIN_NAME`)."""
    return isinstance(value, str) and bool(PLAIN_NAME.fullmatch(value))


def brief(value: Any, width: int = 60) -> str:
    """A value from outside as a refusal shows it: its repr, cut to ``width``."""
    text = repr(value)
    return text if len(text) <= width else text[:width - 3] + "..."


def sha256_file(path: str | Path, chunk_size: int = 1 << 20) -> str:
    """Content hash of a file, hex-encoded."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while chunk := handle.read(chunk_size):
            digest.update(chunk)
    return digest.hexdigest()


def sha256_text(text: str) -> str:
    """Content hash of a string (UTF-8), hex-encoded."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def text_lines(text: str) -> list[str]:
    """``text`` split at newlines only (``\n``, ``\r\n``), without the line ends.

    ``str.splitlines`` also splits at Unicode separators (U+2028, U+0085,
    ...) that real data carries inside its texts (IFLYTEK's app
    descriptions hold U+2028), which would cut a JSON line or a TSV row in two.
    """
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return [line[:-1] if line.endswith("\r") else line for line in lines]


def _non_finite(obj: Any, where: str = "") -> str | None:
    """Where in ``obj`` the first NaN or infinity sits (``epochs[2].train_loss``), or None."""
    if isinstance(obj, float) and not math.isfinite(obj):
        return f"{where or 'the value'} is {obj}"
    if isinstance(obj, dict):
        items: Iterable[tuple[str, Any]] = ((f"{where}.{key}" if where else str(key), value)
                                            for key, value in obj.items())
    elif isinstance(obj, (list, tuple)):
        items = ((f"{where}[{i}]", value) for i, value in enumerate(obj))
    else:
        return None
    for path, value in items:
        found = _non_finite(value, path)
        if found:
            return found
    return None


def _strict_dumps(obj: Any, **options: Any) -> str:
    """``json.dumps`` that refuses NaN and infinities (not JSON) with a one-line FsxltError."""
    from fsxlt.errors import FsxltError

    try:
        return json.dumps(obj, ensure_ascii=False, sort_keys=True, allow_nan=False, **options)
    except ValueError as err:
        found = _non_finite(obj)
        if found is None:
            raise
        raise FsxltError(f"cannot write JSON: {found}, which JSON cannot hold") from err


class NotJsonNumber(ValueError):
    """A ``NaN``, ``Infinity`` or ``-Infinity`` in a file read as strict JSON."""


def _refuse_constant(name: str) -> Any:
    raise NotJsonNumber(f"holds {name}, which JSON has no number for")


def loads_strict(text: str) -> Any:
    """JSON as fsxlt writes it (:func:`dumps_json`): ``NaN`` and infinities raise
    :class:`NotJsonNumber` (Python's parser would take them, and a NaN score would then be
    counted, compared or picked as best)."""
    return json.loads(text, parse_constant=_refuse_constant)


def dumps_json(obj: Any) -> str:
    """Deterministic pretty JSON: sorted keys, UTF-8 kept readable, trailing newline.

    NaN and infinities are not JSON: a value holding one raises
    :class:`~fsxlt.errors.FsxltError` naming where it sits, and nothing is written.
    """
    return _strict_dumps(obj, indent=1) + "\n"


def dumps_jsonl(rows: Iterable[Any]) -> str:
    """Deterministic JSON lines, one compact object per line (NaN refused as by
    :func:`dumps_json`; the message names the row)."""
    from fsxlt.errors import FsxltError

    lines = []
    for number, row in enumerate(rows, start=1):
        try:
            lines.append(_strict_dumps(row) + "\n")
        except FsxltError as err:
            raise FsxltError(f"{err} (row {number})") from None
    return "".join(lines)


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


_HOST = socket.gethostname().split(".")[0].replace("-", "_") or "host"
_TEMP = re.compile(r"^\.(?P<name>.+)\.(?P<host>[^.]+)-(?P<pid>\d+)\.")


def temp_prefix(target: Path) -> str:
    """The hidden name prefix of this process's temporaries for ``target``."""
    return f".{target.name}.{_HOST}-{os.getpid()}."


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's live process
        return True
    return True


def clear_stale_temps(target: str | Path) -> list[Path]:
    """Remove temporaries of ``target`` left by dead processes on this host; return them.

    Temporaries of live processes (a concurrent writer) and of other hosts
    (a shared filesystem) are left alone.
    """
    target = Path(target)
    removed = []
    try:
        siblings = list(target.parent.iterdir())
    except OSError:
        return removed
    for entry in siblings:
        match = _TEMP.match(entry.name)
        if (match is None or match["name"] != target.name or match["host"] != _HOST
                or _alive(int(match["pid"]))):
            continue
        if entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry, ignore_errors=True)
        else:
            entry.unlink(missing_ok=True)
        removed.append(entry)
    return removed


def atomic_write_text(path: str | Path, text: str) -> None:
    """Write ``text`` to ``path`` so that readers see either the old or the new file."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    clear_stale_temps(path)
    fd, tmp = tempfile.mkstemp(prefix=temp_prefix(path), suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, 0o666 & ~_umask())  # mkstemp creates 0600; make it a normal file
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def atomic_write_json(path: str | Path, obj: Any) -> None:
    """Atomically write ``obj`` as deterministic JSON (a NaN in it: an error naming ``path``)."""
    from fsxlt.errors import FsxltError

    try:
        text = dumps_json(obj)
    except FsxltError as err:
        raise FsxltError(f"{path}: not written: {err}") from None
    atomic_write_text(path, text)


def write_all(changes: dict[Path, str | None]) -> None:
    """Write every path's text (``None``: remove the path), each atomically, all or nothing:
    where one fails, every path already changed is put back byte for byte, the folders
    made for them are removed, and the error is raised."""
    before: list[tuple[Path, bytes | None]] = []
    made: list[Path] = []
    try:
        for path, text in changes.items():
            before.append((path, path.read_bytes() if path.is_file() else None))
            made += [parent for parent in reversed(path.parents) if not parent.exists()]
            if text is None:
                path.unlink(missing_ok=True)
            else:
                atomic_write_text(path, text)
    except BaseException:
        for path, data in reversed(before):
            if data is None:
                path.unlink(missing_ok=True)
            else:
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_bytes(data)
        for folder in reversed(made):
            with contextlib.suppress(OSError):
                folder.rmdir()
        raise


def atomic_replace_dir(target: str | Path, files: dict[str, str]) -> None:
    """Replace directory ``target`` by one holding exactly ``files`` (name -> text).

    The new content is written into a sibling temporary directory and renamed
    into place (see :func:`staged_dir`), so ``target`` is never observed
    half-written.
    """
    with staged_dir(target) as staging:
        for name, text in files.items():
            (staging / name).parent.mkdir(parents=True, exist_ok=True)
            (staging / name).write_text(text, encoding="utf-8", newline="\n")  # umask modes


def replace_dirs(changes: dict[Path, dict[str, str]]) -> None:
    """Replace each directory by one holding exactly its files (:func:`atomic_replace_dir`),
    all or nothing: every new directory is written aside first, then each swapped into
    place; where any step fails, every directory is as it was and the error is raised."""
    staged: list[tuple[Path, Path]] = []
    swapped: list[tuple[Path, Path | None]] = []
    made: list[Path] = []
    try:
        for target, files in changes.items():
            made += [parent for parent in reversed(target.parents) if not parent.exists()]
            target.parent.mkdir(parents=True, exist_ok=True)
            clear_stale_temps(target)
            staging = Path(tempfile.mkdtemp(prefix=temp_prefix(target), dir=target.parent))
            staged.append((target, staging))
            for name, text in files.items():
                (staging / name).parent.mkdir(parents=True, exist_ok=True)
                (staging / name).write_text(text, encoding="utf-8", newline="\n")
            os.chmod(staging, 0o777 & ~_umask())
        for target, staging in staged:
            old = target.with_name(f"{temp_prefix(target)}old") if target.exists() else None
            if old is not None:
                os.replace(target, old)
            swapped.append((target, old))
            os.replace(staging, target)
    except BaseException:
        for target, old in reversed(swapped):
            if target.exists() and (old is None or old.exists()):
                shutil.rmtree(target, ignore_errors=True)
            if old is not None and old.exists():
                os.replace(old, target)
        for _target, staging in staged:
            shutil.rmtree(staging, ignore_errors=True)
        for folder in reversed(made):
            with contextlib.suppress(OSError):
                folder.rmdir()
        raise
    for _target, old in swapped:
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)


@contextmanager
def staged_dir(target: str | Path) -> Iterator[Path]:
    """Yield a sibling temporary directory that replaces ``target`` on success.

    Whatever the caller writes into the yielded directory appears at
    ``target`` all at once: a previous ``target`` is moved aside, the staging
    directory renamed into place, and the old one deleted. If the block
    raises, the staging directory is removed and ``target`` is untouched.
    """
    target = Path(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    clear_stale_temps(target)
    staging = Path(tempfile.mkdtemp(prefix=temp_prefix(target), dir=target.parent))
    try:
        yield staging
        os.chmod(staging, 0o777 & ~_umask())  # mkdtemp creates 0700
        old = None
        if target.exists():
            old = target.with_name(f"{temp_prefix(target)}old")
            os.replace(target, old)
        os.replace(staging, target)
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise


def _first_existing(path: Path) -> Path:
    """``path`` or its nearest ancestor that exists (the filesystem root at worst)."""
    for candidate in (path, *path.parents):
        if candidate.exists():
            return candidate
    return Path(path.anchor or ".")


def _probe_writable(directory: Path) -> bool:
    """Whether a file can be created in ``directory`` (tried, then removed; root-proof)."""
    try:
        fd, probe = tempfile.mkstemp(prefix=".fsxlt-probe.", dir=directory)  # removed below
    except OSError:
        return False
    os.close(fd)
    os.unlink(probe)
    return True


def check_output_dir(path: str | Path, what: str = "output directory") -> Path:
    """Fail early, in one line, if ``path`` cannot be (or become) a directory to write into.

    Called by every command that writes before it does any work, so a typo'd
    ``--out`` costs nothing and leaves nothing behind: ``path`` must be a
    directory or not exist yet, its nearest existing ancestor must be a
    writable directory. Nothing is created.
    """
    from fsxlt.errors import FsxltError

    path = Path(path)
    if path.exists() and not path.is_dir():
        raise FsxltError(f"{path}: the {what} is a file, not a directory")
    existing = _first_existing(path)
    if not existing.is_dir():
        raise FsxltError(f"{path}: cannot create the {what}: {existing} is a file")
    if not _probe_writable(existing):
        raise FsxltError(f"{path}: the {what} is not writable (permission denied in {existing})")
    return path


def check_output_file(path: str | Path, what: str = "output file") -> Path:
    """Like :func:`check_output_dir` for a file: not a directory, its folder writable."""
    from fsxlt.errors import FsxltError

    path = Path(path)
    if path.is_dir():
        raise FsxltError(f"{path}: the {what} is a directory")
    check_output_dir(path.parent, f"folder of the {what}")
    return path


def read_json(path: str | Path) -> Any:
    """Read a JSON file, turning a missing or malformed file into a clear error."""
    from fsxlt.errors import DataFormatError

    path = Path(path)
    if not path.is_file():
        raise DataFormatError(path, "file not found")
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as err:
        raise DataFormatError(path, f"invalid JSON at column {err.colno}: {err.msg}",
                              err.lineno) from None
    except UnicodeDecodeError:
        raise DataFormatError(path, "not valid UTF-8 text") from None


def parse_yaml(text: str, where: str) -> Any:
    """Parse YAML text; a syntax error becomes a one-line error naming ``where`` and the line."""
    import yaml

    from fsxlt.errors import FsxltError

    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml's where installed
    try:
        return yaml.load(text, Loader=loader)  # noqa: S506 - a safe loader
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        line = f":{mark.line + 1}" if mark is not None else ""
        problem = getattr(err, "problem", None) or err.__class__.__name__
        raise FsxltError(f"{where}{line}: invalid YAML ({problem})") from None

