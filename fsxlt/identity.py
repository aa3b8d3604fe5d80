"""What identifies a model: its content, never its path or name.

Everything that determines a result and lives in files, a source-trained
checkpoint, a pretrained encoder directory, a causal LM (its weights, GGUF
file and tokenizer), the similarity order's sentence encoder, is identified
by :func:`fingerprint`: the sha256 of every file it is made of, by relative
path. Two models with the same config and other weights, in other
directories or replaced in place, are two models; the same files copied
elsewhere are one. A name that is not a local path is a Hugging Face hub model,
``NAME`` or ``NAME@REVISION`` (a branch, tag or commit; ``main`` when none is
given): it is identified by the commit that revision resolves to
(:func:`hub_commit`, ``hub:NAME@COMMIT``), as lm-eval records a model's revision,
and loaded at that commit (:func:`hub_source`), so a model updated on the hub is
another model. Resolving asks the hub, or the local cache offline
(``HF_HUB_OFFLINE=1``); a name neither knows is a one-line error.

Hashing is cached by (real path, size, modification time, inode, change time):
per process, and for files of 1 MiB or more (model weights) also across commands,
in ``file-sha256.json`` under ``$FSXLT_CACHE_DIR`` (default
``~/.cache/fsxlt``), so a 500 MB model is read once, not at every sweep start.
A file changed in place changes its key and is hashed again.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
from pathlib import Path

from fsxlt.errors import FsxltError, did_you_mean
from fsxlt.fileio import atomic_write_text, sha256_file

_REMEMBERED = 1 << 20  # files this large have their hash kept across commands
_CACHE: dict[str, str] = {}
_COMMITS: dict[tuple[str, str | None, str], str] = {}  # (repo, revision, file) -> commit
_DISK: dict[str, str] | None = None  # the cache file's entries, read once per process
# files that travel with a model folder but do not make the model
_IGNORED = (".fsxlt-writer.lock", ".DS_Store")


def file_sha256(path: str | Path) -> str:
    """The sha256 of a file's bytes, cached by (real path, size, mtime; and inode and
    change time, which a file replaced by another one moved into place changes)."""
    real = Path(path).resolve()
    stat = real.stat()
    key = f"{real}|{stat.st_size}|{stat.st_mtime_ns}|{stat.st_ino}|{stat.st_ctime_ns}"
    if key not in _CACHE:
        remembered = _disk_cache() if stat.st_size >= _REMEMBERED else None
        if remembered is not None and key in remembered:
            _CACHE[key] = remembered[key]
        else:
            _CACHE[key] = sha256_file(real)
            if remembered is not None:
                remembered[key] = _CACHE[key]
                _save_disk_cache(remembered)
    return _CACHE[key]


def cache_file() -> Path:
    """Where hashes of large files are kept across commands."""
    root = os.environ.get("FSXLT_CACHE_DIR") or Path.home() / ".cache" / "fsxlt"
    return Path(root) / "file-sha256.json"


def _disk_cache() -> dict[str, str]:
    """The cache file's entries (empty when it is missing or unreadable), read once."""
    global _DISK
    if _DISK is None:
        try:
            raw = json.loads(cache_file().read_text(encoding="utf-8"))
            _DISK = {str(k): str(v) for k, v in raw.items()} if isinstance(raw, dict) else {}
        except (OSError, ValueError):
            _DISK = {}
    return _DISK


def _save_disk_cache(entries: dict[str, str]) -> None:
    """Write the cache file atomically; a cache that cannot be written is no error."""
    with contextlib.suppress(OSError):
        atomic_write_text(cache_file(), json.dumps(entries, sort_keys=True) + "\n")


def model_files(directory: str | Path) -> list[Path]:
    """The files a model directory is made of (every regular file below it, links followed,
    but hidden caches such as ``.cache/`` and a writer's lock), sorted by relative path."""
    root = Path(directory)
    found = []
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root)
        if path.is_file() and path.name not in _IGNORED \
                and not any(part.startswith(".") for part in rel.parts[:-1]):
            found.append(path)
    return found


def fingerprint(name_or_path: str | Path, *, files: list[str] | None = None) -> str:
    """``sha256:<hex>`` over the content of a local model (a directory: each file's
    relative path and sha256; a file: its bytes), or ``hub:<name>`` for a name that is
    no local path. ``files``: only these files of the directory (missing ones count as
    absent), e.g. one GGUF file and the tokenizer of a folder that holds several."""
    path = Path(name_or_path)
    if not path.exists():
        return f"hub:{pinned(str(name_or_path))}"
    if path.is_file():
        return "sha256:" + file_sha256(path)
    chosen = model_files(path) if files is None else \
        [path / name for name in sorted(files) if (path / name).is_file()]
    digest = hashlib.sha256()
    for file in chosen:
        digest.update(f"{file.relative_to(path).as_posix()}\0{file_sha256(file)}\n".encode())
    return "sha256:" + digest.hexdigest()


# What the Hugging Face hub accepts as a model id: ``name`` or ``namespace/name``
# of letters, digits, '-', '_' and '.', at most 96 characters, no '--' or '..'.
_HUB_ID = re.compile(r"^[\w.-]+(/[\w.-]+)?$")


def hub_id_like(name: str) -> bool:
    """Whether ``name`` could be a model id on the hub (rather than a local path)."""
    return (bool(_HUB_ID.match(name)) and len(name) <= 96 and "--" not in name
            and ".." not in name and not name.startswith((".", "-")) and not name.endswith("."))


def split_revision(name: str) -> tuple[str, str | None]:
    """``NAME@REVISION`` as (NAME, REVISION); a name without one as (NAME, None)."""
    repo, sep, revision = name.partition("@")
    return (repo, revision) if sep and revision else (repo, None)


HUB_TIMEOUT_S = 5.0  # ours: the hub client's retries take half a minute on a closed network


def hub_commit(repo: str, revision: str | None = None, filename: str = "config.json") -> str:
    """The commit ``revision`` (``main`` when None) of the hub model ``repo`` is at: the
    snapshot huggingface_hub downloads ``filename`` into (or finds in its cache offline),
    resolved once per process. A hub that does not answer within :data:`HUB_TIMEOUT_S`
    (asked once per process) is not waited for: the cache answers, or one whole line says
    what to do (``--model DIR``, ``HF_HUB_OFFLINE=1``)."""
    key = (repo, revision, filename)
    if key not in _COMMITS:
        from huggingface_hub import hf_hub_download

        unreachable = hub_unreachable()
        try:
            path = Path(hf_hub_download(repo, filename, revision=revision,
                                        local_files_only=unreachable is not None))
        except Exception as err:  # offline and not cached, no such model or revision
            raise FsxltError(_hub_failure(repo, revision, err, unreachable)) from None
        _COMMITS[key] = path.parent.name
    return _COMMITS[key]


def _hub_failure(repo: str, revision: str | None, err: BaseException,
                 unreachable: str | None) -> str:
    """The one line for a hub model that could not be resolved; a name whose folder part
    exists here (``models/e5-smal``) is said to be no local folder either, with the nearest
    folder there."""
    cure = ("give a local model folder (--model DIR), or download the model where the hub "
            "answers and set HF_HUB_OFFLINE=1 to load it from the cache")
    parent = Path(repo).parent
    if str(parent) not in ("", ".") and parent.is_dir():
        folders = [p.name for p in parent.iterdir() if p.is_dir()]
        cure = (f"there is no local folder {repo} either{did_you_mean(Path(repo).name, folders)}"
                f"; {cure}")
    offline = os.environ.get("HF_HUB_OFFLINE", "").lower() in ("1", "true", "yes", "on") \
        and unreachable is None  # set by the user, not by close_hub
    if unreachable is not None or offline:
        why = "HF_HUB_OFFLINE is set" if offline else f"the hub does not answer ({unreachable})"
        return (f"{repo}: {why}, and the model (revision {revision or 'main'}) is not in the "
                f"local Hugging Face cache; {cure}")
    return (f"{repo}: cannot resolve hub revision {revision or 'main'} to a commit "
            f"({type(err).__name__}: {whole_words(str(err))}); {cure}")


_HUB_REACHABLE: dict[str, str | None] = {}


def connection_problem(host: str, port: int, timeout: float) -> str | None:
    """Why nothing accepts a TCP connection at ``host:port`` within ``timeout`` seconds
    (``timed out``, the system's words), or None when something does: the probe of ours
    that fsxlt makes before a client would retry for minutes (the hub, a Ray head, a
    tracker server)."""
    import socket

    try:
        socket.create_connection((host, port), timeout=timeout).close()
    except OSError as err:
        return "timed out" if isinstance(err, TimeoutError) else (err.strerror or str(err))
    return None


def url_host_port(url: str) -> tuple[str, int] | None:
    """``(host, port)`` of an ``http(s)://`` URL (its scheme's port where it names none);
    None for any other URL (a file, an SQLite store: nothing to reach)."""
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return None
    return parts.hostname, parts.port or (443 if parts.scheme == "https" else 80)


def hub_unreachable() -> str | None:
    """Why the hub (``HF_ENDPOINT``, else huggingface.co) cannot be reached, asked once per
    process with a connection of :data:`HUB_TIMEOUT_S`; None when it answers or when
    ``HF_HUB_OFFLINE`` is set (the cache is all there is). A hub found closed stays closed
    for the process: every later load goes to the cache only (:func:`close_hub`)."""
    endpoint = os.environ.get("HF_ENDPOINT") or "https://huggingface.co"
    if _HUB_REACHABLE.get(endpoint):
        return _HUB_REACHABLE[endpoint]
    if os.environ.get("HF_HUB_OFFLINE", "").lower() in ("1", "true", "yes", "on"):
        return None
    if endpoint not in _HUB_REACHABLE:
        target = url_host_port(endpoint)
        why = connection_problem(*target, HUB_TIMEOUT_S) if target else None
        _HUB_REACHABLE[endpoint] = f"{target[0]}:{target[1]}: {why}" if why and target \
            else None
        if _HUB_REACHABLE[endpoint]:
            close_hub()
    return _HUB_REACHABLE[endpoint]


def close_hub() -> None:
    """Send every later hub load of this process to the local cache: the model's config,
    weights, tokenizer and chat template, through transformers, huggingface_hub and
    datasets alike, which would each retry a closed hub for minutes on their own. Set once
    fsxlt has found the hub closed; the process's workers inherit it."""
    os.environ["HF_HUB_OFFLINE"] = "1"
    import sys

    constants = sys.modules.get("huggingface_hub.constants")
    if constants is None:
        import huggingface_hub.constants as constants
    constants.HF_HUB_OFFLINE = True
    config = sys.modules.get("datasets.config")  # read at its import; set where imported
    if config is not None and hasattr(config, "HF_HUB_OFFLINE"):
        config.HF_HUB_OFFLINE = True


def whole_words(text: str, width: int = 200) -> str:
    """The first line of ``text``, cut at a word boundary (with "...") when over ``width``."""
    first = (text.strip().splitlines() or [""])[0]
    if len(first) <= width:
        return first
    return first[:width].rsplit(" ", 1)[0].rstrip(",.;:") + " ..."


def _hub_name(name: str) -> tuple[str, str | None] | None:
    """(repository, revision) of a hub model name; None for a path (or a name no hub
    accepts: the loader then says what is wrong with it)."""
    repo, revision = split_revision(name)
    return None if Path(name).exists() or not hub_id_like(repo) else (repo, revision)


def pinned(name: str, filename: str = "config.json") -> str:
    """A hub model name as ``NAME@COMMIT``, the commit it loads now; a local path as it is.
    ``filename``: a file the model's repository holds (a GGUF repository has no
    ``config.json``)."""
    hub = _hub_name(name)
    return name if hub is None else f"{hub[0]}@{hub_commit(*hub, filename)}"


def hub_source(name: str, filename: str = "config.json") -> tuple[str, dict[str, str]]:
    """What ``from_pretrained`` takes for ``name``: a local path as it is (no options), a
    hub name as its repository and ``revision`` = the commit it resolves to."""
    hub = _hub_name(name)
    return (name, {}) if hub is None else (hub[0], {"revision": hub_commit(*hub, filename)})
