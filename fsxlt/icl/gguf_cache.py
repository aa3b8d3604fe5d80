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
    """Whether ``entry`` holds a whole conversion (its marker is written last)."""
    return entry is not None and (entry / MARKER).is_file()


def save(entry: Path, model: Any, tokenizer: Any, gguf_path: Path) -> None:
    """Keep a converted model and tokenizer at ``entry``, whole or not at all; a cache
    that cannot be written is no error (the next load converts again)."""
    import transformers

    quantizer = getattr(model, "hf_quantizer", None)
    try:
        with staged_dir(entry) as staging:
            # transformers refuses to save a model its GGUF "quantizer" loaded, though the
            # weights are plain float32 by then; the saved config keeps the GGUF
            # quantization config, so a model read back is the one a GGUF load gives
            model.hf_quantizer = None
            model.save_pretrained(staging)
            tokenizer.save_pretrained(staging)
            (staging / MARKER).write_text(json.dumps({
                "gguf_file": gguf_path.name, "gguf_sha256": entry.name.split("-")[0],
                "transformers": transformers.__version__}, sort_keys=True) + "\n",
                encoding="utf-8")
    except OSError:
        pass
    finally:
        model.hf_quantizer = quantizer
