"""A GGUF model converted once: its float weights kept in a cache keyed by the file's content.

transformers de-quantises a GGUF file to float32 on every load (168 s for Gemma 3 270M
on two cores, as issue 54 measured: more than scoring a bucket, paid by every ``fsxlt
icl`` call and every sweep worker). The first load of a local GGUF file converts it as
before and saves the model (safetensors) and its tokenizer under
``<cache>/<sha256 of the GGUF file>-transformers-<version>/``, with ``fsxlt_gguf.json``
written last; later loads read that folder instead. The key holds transformers' version
because the conversion is transformers' (another version may convert otherwise).

The model's identity stays the GGUF file's content (:func:`fsxlt.icl.model.
model_fingerprint`): the cache changes how fast a model loads, never what it is. The
cached weights are the converted float32 weights, saved and read back exactly, and the
tokenizer is the converted one (tested: the same logits and token ids).

- Where: ``$FSXLT_CACHE_DIR/gguf`` (default ``~/.cache/fsxlt/gguf``).
- How big: the model in float32, 4 bytes a parameter (about 1.1 GB for Gemma 3 270M),
  and its tokenizer, per GGUF file and transformers version.
- How to clear: delete the folder, or one entry of it, when no command is loading a
  model; ``FSXLT_GGUF_CACHE=0`` turns the cache off (every load converts).

The cache is input too (anyone with the folder can write there): the marker names the
GGUF file's sha256 and the sha256 and size of every file of the conversion, and an entry
is used only where its marker names this GGUF file and every file is the one written at
conversion (:func:`problem`). Anything else (altered weights, an edited config or
tokenizer, a cut file, another file's conversion under this key, an entry of fsxlt 0.8 or
earlier, which recorded no hashes) is converted again, saying so in one line that names
the entry, and the entry is replaced by the new conversion.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from fsxlt.fileio import staged_dir

MARKER = "fsxlt_gguf.json"


def cache_root() -> Path:
    root = os.environ.get("FSXLT_CACHE_DIR") or Path.home() / ".cache" / "fsxlt"
    return Path(root) / "gguf"


def entry_for(gguf_path: Path) -> Path | None:
    """The cache folder of a local GGUF file (None: the cache is off)."""
    if os.environ.get("FSXLT_GGUF_CACHE", "1") == "0":
        return None
    import transformers

    from fsxlt.identity import file_sha256

    return cache_root() / f"{file_sha256(gguf_path)}-transformers-{transformers.__version__}"


def ready(entry: Path | None) -> bool:
    """Whether ``entry`` holds a whole conversion (its marker is written last); whether it
    is this file's, unaltered, is :func:`problem`'s to say."""
    return entry is not None and (entry / MARKER).is_file()


def problem(entry: Path) -> str | None:
    """What makes a cache entry other than the conversion its marker recorded, in words,
    or None: the marker must name the GGUF file the entry's key is the hash of, and every
    file of the entry (but the marker) must have the size and sha256 it was written with."""
    from fsxlt.identity import file_sha256

    try:
        marker = json.loads((entry / MARKER).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return "its marker is unreadable"
    files = marker.get("files") if isinstance(marker, dict) else None
    if not isinstance(files, dict) or not files:
        return "it records no hashes of its files (written by fsxlt 0.8 or earlier)"
    if marker.get("gguf_sha256") != entry.name.split("-")[0]:
        return "it is the conversion of another GGUF file than its key's"
    present = sorted(p.relative_to(entry).as_posix() for p in entry.rglob("*")
                     if p.is_file() and p.name != MARKER)
    if present != sorted(files):
        extra = sorted(set(present) ^ set(files))
        return f"its files are not those it recorded ({extra[0]})"
    for name, facts in sorted(files.items()):
        path = entry / name
        if not isinstance(facts, dict) or path.stat().st_size != facts.get("size"):
            return f"{name} is not the size it was written with (cut or altered)"
        if file_sha256(path) != facts.get("sha256"):
            return f"{name} is not the file it was written as (altered)"
    return None


def save(entry: Path, model: Any, tokenizer: Any, gguf_path: Path) -> None:
    """Keep a converted model and tokenizer at ``entry``, whole or not at all; a cache
    that cannot be written is no error (the next load converts again)."""
    import transformers

    from fsxlt.identity import file_sha256

    quantizer = getattr(model, "hf_quantizer", None)
    try:
        with staged_dir(entry) as staging:
            # transformers refuses to save a model its GGUF "quantizer" loaded, though the
            # weights are plain float32 by then; the saved config keeps the GGUF
            # quantization config, so a model read back is the one a GGUF load gives
            model.hf_quantizer = None
            model.save_pretrained(staging)
            tokenizer.save_pretrained(staging)
            files = {p.relative_to(staging).as_posix(): {"size": p.stat().st_size,
                                                           "sha256": file_sha256(p)}
                     for p in sorted(staging.rglob("*")) if p.is_file()}
            (staging / MARKER).write_text(json.dumps({
                "gguf_file": gguf_path.name, "gguf_sha256": entry.name.split("-")[0],
                "transformers": transformers.__version__, "files": files},
                sort_keys=True, indent=1) + "\n", encoding="utf-8")
    except OSError:
        pass
    finally:
        model.hf_quantizer = quantizer
