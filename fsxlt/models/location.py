"""Where a model argument points, checked without loading anything: cheap enough that
every command checks its model arguments before it reads any data (a mistyped folder, a
folder without its tokenizer, a file given for a folder: one line within the CLI's own
start-up time, not after minutes of reading)."""

from __future__ import annotations

from pathlib import Path

from fsxlt.errors import FsxltError
from fsxlt.identity import hub_id_like, split_revision
from fsxlt.study.runs import is_checkpoint

TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "vocab.txt", "tokenizer.model")


def check_model_location(name: str, what: str = "encoder", tokenizer: bool = False) -> None:
    """One-line error for a model argument that is neither a directory nor a hub id: cheap,
    so every command calls it before reading data.

    A path that does not exist would otherwise reach the hub client and come
    back as its repo-id rules; a directory without ``config.json`` is not a
    model directory. ``tokenizer``: an encoder folder (not an fsxlt checkpoint, whose
    tokenizer is its encoder's) must hold tokenizer files, or transformers builds an
    empty tokenizer from ``config.json``'s ``tokenizer_class`` and nothing tokenizes.
    """
    path = Path(name).expanduser()
    if path.is_dir():
        if not (path / "config.json").is_file():
            raise FsxltError(f"cannot load {what} {name}: not a model directory (no "
                             "config.json)")
        if tokenizer and not is_checkpoint(path) and not any(
                (path / f).is_file() for f in TOKENIZER_FILES):
            raise FsxltError(f"cannot load {what} {name}: no tokenizer files "
                             f"({', '.join(TOKENIZER_FILES)}); give the folder its "
                             "tokenizer's files")
        return
    if path.exists():
        raise FsxltError(f"cannot load {what} {name}: a file, not a model directory "
                         "or a hub model name")
    if not hub_id_like(split_revision(name)[0]):
        raise FsxltError(f"cannot load {what} {name}: no such directory, and not a model "
                         "name the hub would accept")


def check_causal_lm_location(name: str, gguf_file: str | None = None) -> None:
    """:func:`check_model_location` for a causal LM: a GGUF model is a folder (or hub
    repository) holding ``gguf_file``, with no ``config.json`` of its own."""
    if not gguf_file:
        check_model_location(name, "causal LM")
        return
    path = Path(name).expanduser()
    if path.is_dir():
        if not (path / gguf_file).is_file():
            raise FsxltError(f"{path / gguf_file}: GGUF file not found")
    elif path.exists() or not hub_id_like(split_revision(name)[0]):
        raise FsxltError(f"cannot load causal LM {name}: no such directory, and not a model "
                         "name the hub would accept")
