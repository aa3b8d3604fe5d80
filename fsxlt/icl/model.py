"""Loading the causal language model of an ICL run: a hub name, a local directory, or a
GGUF file in a directory (``gguf_file``, de-quantised by transformers).

A model that is not a causal LM (an encoder such as BERT, an encoder-decoder,
a checkpoint without a language-modelling head) is refused in one line before
its weights load.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fsxlt.errors import FsxltError

ANNOUNCE_AFTER = 2.0  # seconds a model load may take before it says what it is loading


@dataclass
class CausalLM:
    """A loaded causal LM, its tokenizer and what identifies it in records."""

    model: Any
    tokenizer: Any
    name: str
    gguf_file: str | None

    def describe(self) -> dict[str, Any]:
        return {"name": self.name, "gguf_file": self.gguf_file,
                "class": type(self.model).__name__, "fingerprint": model_fingerprint(
                    self.name, self.gguf_file)}


def model_fingerprint(name: str, gguf_file: str | None = None) -> str:
    """A hub name by the commit it resolves to; a local model by its content
    (:func:`fsxlt.identity.fingerprint`: every file of its directory, weights and tokenizer
    included; of the GGUF files only ``gguf_file``)."""
    from fsxlt.identity import fingerprint, model_files, pinned

    path = Path(name)
    if not path.is_dir():  # the commit it loads (a GGUF repository has no config.json)
        return f"hub:{pinned(name, gguf_file or 'config.json')}" + (
            f"/{gguf_file}" if gguf_file else "")
    files = None
    if gguf_file:
        files = [f.relative_to(path).as_posix() for f in model_files(path)
                 if f.suffix != ".gguf" or f.relative_to(path).as_posix() == gguf_file]
    return fingerprint(path, files=files)


@contextmanager
def announced(line: str, after: float = ANNOUNCE_AFTER) -> Iterator[None]:
    """Print ``line`` on stderr (flushed, so a log file shows it) if the block is still
    running ``after`` seconds on: a long load says what it loads and from where, a quick
    one says nothing (and a refusal stays one line)."""
    timer = threading.Timer(after, lambda: print(line, file=sys.stderr, flush=True))
    timer.daemon = True
    timer.start()
    try:
        yield
    finally:
        timer.cancel()


def load_origin(name: str, gguf_file: str | None, revision: dict[str, str]) -> str:
    """Where a causal LM loads from, in words, for :func:`announced`."""
    what = f"GGUF file {gguf_file} in " if gguf_file else ""
    where = f"the folder {Path(name).resolve()}" if Path(name).is_dir() else \
        f"the hub's {name} at commit {revision.get('revision', 'main')} (or its local cache)"
    slow = "; de-quantised to float32 by transformers, which can take minutes on a CPU" \
        if gguf_file else ""
    return f"loading causal LM: {what}{where}{slow}"


def _check_causal(config: Any, name: str) -> None:
    """One line unless the config is a causal LM's (one with a language-modelling head)."""
    from transformers.models.auto.modeling_auto import MODEL_FOR_CAUSAL_LM_MAPPING_NAMES

    causal_classes = set(MODEL_FOR_CAUSAL_LM_MAPPING_NAMES.values())
    architectures = list(getattr(config, "architectures", None) or [])
    why = None
    if getattr(config, "is_encoder_decoder", False):
        why = "an encoder-decoder model"
    elif config.model_type not in MODEL_FOR_CAUSAL_LM_MAPPING_NAMES:
        why = f"model type {config.model_type!r} has no causal-LM class"
    elif architectures and not causal_classes & set(architectures):
        why = f"its weights are a {', '.join(architectures)}, not a causal LM"
    elif not architectures and not getattr(config, "is_decoder", True):
        why = "an encoder (is_decoder is false)"
    if why:
        raise FsxltError(f"{name}: not a causal language model ({why}); fsxlt icl needs an "
                         "AutoModelForCausalLM (e.g. GPT-2, Llama, Gemma 3)")


def load_causal_lm(name: str, gguf_file: str | None = None, *, device: str = "cpu",
                   threads: int | None = None) -> CausalLM:
    """Load ``name`` (hub name or directory; ``gguf_file`` inside it) in float32 for scoring;
    a local GGUF file converted before is read from :mod:`fsxlt.icl.gguf_cache`."""
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer

    from fsxlt.icl import gguf_cache
    from fsxlt.models.model import quiet_transformers

    if threads is not None:
        torch.set_num_threads(threads)
    from fsxlt.models.location import check_causal_lm_location

    check_causal_lm_location(name, gguf_file)  # a GGUF folder holds no config.json
    quiet_transformers()
    from fsxlt.identity import hub_source
    from fsxlt.training.checkpoint import load_failure

    source, revision = hub_source(name, gguf_file or "config.json")  # hub: at its commit
    extra = {"gguf_file": gguf_file, **revision} if gguf_file else revision
    local_gguf = Path(source) / gguf_file if gguf_file else None
    cache = gguf_cache.entry_for(local_gguf) if local_gguf and local_gguf.is_file() else None
    hit = gguf_cache.ready(cache)
    if hit and cache is not None:
        wrong = gguf_cache.problem(cache)
        if wrong is not None:  # never used on its marker's word
            print(f"GGUF cache entry {cache}: {wrong}; converting {gguf_file} again (the "
                  "entry is replaced; delete it, or set FSXLT_GGUF_CACHE=0, to bypass the "
                  "cache)", file=sys.stderr, flush=True)
            hit = False
    if hit:  # converted before: the float weights, read back
        source, extra = str(cache), {}
    try:
        config = AutoConfig.from_pretrained(source, **extra)
    except (OSError, ValueError) as err:
        raise FsxltError(f"{name}: cannot load a model config ({str(err).splitlines()[0]})"
                         ) from None
    _check_causal(config, name)
    origin = (f"loading causal LM: GGUF file {gguf_file} in {Path(name).resolve()}, "
              f"converted before: from the cache {cache}" if hit
              else load_origin(name, gguf_file, revision))
    try:  # the boundary every model load shares: one line naming the broken file
        with announced(origin):
            tokenizer = AutoTokenizer.from_pretrained(source, **extra)
            model = AutoModelForCausalLM.from_pretrained(source, dtype=torch.float32, **extra)
    except Exception as err:
        raise load_failure(name, err, "causal LM", tokenizer=not gguf_file) from None
    if cache is not None and not hit:  # converted now: kept for the next load
        gguf_cache.save(cache, model, tokenizer, local_gguf)
    model.to(device)
    model.eval()
    read_in(model)
    return CausalLM(model, tokenizer, name, gguf_file)


def read_in(model: Any) -> None:
    """Read every page of the weights now. transformers maps a safetensors file into memory
    and reads each page when a forward pass first needs it: after other work had pushed
    the file out of the page cache, Gemma 3 270M's first bucket waited 14 s for its 1.1 GB;
    read here, that is load time (0.06 s when the file is cached)."""
    import itertools

    import torch

    with torch.no_grad():
        for tensor in itertools.chain(model.parameters(), model.buffers()):
            if tensor.device.type == "cpu" and tensor.numel():
                tensor.detach().reshape(-1)[:: 1024].sum()  # a float32 page is 1,024 values
