"""What identifies a model: its content, never its path or name.

Everything that determines a result and lives in files, a source-trained
checkpoint, a pretrained encoder directory, a causal LM (its weights, GGUF
file and tokenizer), the similarity order's sentence encoder, is identified
by :func:`fingerprint`: the sha256 of every file it is made of, by relative
path. Two models with the same config and other weights, in other
directories or replaced in place, are two models; the same files copied
elsewhere are one. A name that is not a local path (a Hugging Face hub
model) is identified by its name, the only thing there is to hash before
the hub is asked.

Hashing is cached per process by (real path, size, modification time, inode,
change time), so a 500 MB model is read once however many runs a process plans
or loads over it.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

_CHUNK = 1 << 20
_CACHE: dict[tuple[str, int, int, int, int], str] = {}
# files that travel with a model folder but do not make the model
_IGNORED = (".fsxlt-writer.lock", ".DS_Store")


def file_sha256(path: str | Path) -> str:
    """The sha256 of a file's bytes, cached by (real path, size, mtime; and inode and
    change time, which a file replaced by another one moved into place changes)."""
    real = Path(path).resolve()
    stat = real.stat()
    key = (str(real), stat.st_size, stat.st_mtime_ns, stat.st_ino, stat.st_ctime_ns)
    if key not in _CACHE:
        digest = hashlib.sha256()
        with open(real, "rb") as handle:
            for chunk in iter(lambda: handle.read(_CHUNK), b""):
                digest.update(chunk)
        _CACHE[key] = digest.hexdigest()
    return _CACHE[key]


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
        return f"hub:{name_or_path}"
    if path.is_file():
        return "sha256:" + file_sha256(path)
    chosen = model_files(path) if files is None else \
        [path / name for name in sorted(files) if (path / name).is_file()]
    digest = hashlib.sha256()
    for file in chosen:
        digest.update(f"{file.relative_to(path).as_posix()}\0{file_sha256(file)}\n".encode())
    return "sha256:" + digest.hexdigest()
