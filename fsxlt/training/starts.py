"""One room for a loaded start: score and read examples the way the start was trained.

A source-trained checkpoint records the method it was trained with (its
``method`` entry: name, version, options). :func:`open_start` loads the start
(:func:`~fsxlt.training.checkpoint.load_start`), rebuilds that method from the
record, binds it to the start and prepares the model with it, so that
examples go through the same inputs and the same output head as in
source-training: a checkpoint source-trained with ``pet`` is read through its
cloze pattern and its trained masked-LM head, a ``full`` one through its
classifier. A checkpoint without a ``method`` entry (older ones) was trained
with ``full``; a pretrained encoder gets the task's inputs and a fresh,
seeded classifier head.

Everything that scores or reads a start goes through here: ``fsxlt
evaluate`` (:func:`evaluate_checkpoint`), its ``--save-predictions``
(:func:`checkpoint_predictions`), and the signals that model-based shot
selection and the bucket-features analysis read (:meth:`OpenStart.signals`).

:func:`bind_to_start` is how any method (adapting or source-training) is told
about its start: the start's description plus the modules of the method's
own that the checkpoint saved (:attr:`~fsxlt.methods.Method.saved_modules`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from fsxlt.data import Example
from fsxlt.errors import FsxltError
from fsxlt.methods import Method, get_method
from fsxlt.models.encoding import Featurizer
from fsxlt.models.model import quiet_transformers
from fsxlt.models.prediction import (
    EvalSet,
    describe_examples,
    example_signals,
    make_eval_set,
    score,
    score_and_predict,
)
from fsxlt.tasks import TaskSpec, get_task
from fsxlt.training.checkpoint import Start, load_start, resolve_device


def bind_to_start(method: Method, task: TaskSpec, language: str, start: Start) -> None:
    """``method.bind`` with the start's description and the method's saved modules.

    ``start_info`` is the start's ``info`` plus, under its own name, each
    module the method declares in ``saved_modules`` (its state dict from the
    checkpoint, or None when the checkpoint holds none).
    """
    saved = {name: start.extra.get(name) for name in method.saved_modules}
    method.bind(task, language, start.tokenizer, dict(start.info, **saved))


def trained_method(start: Start, task: TaskSpec) -> Method | None:
    """The method a checkpoint was source-trained with, rebuilt from its record.

    None for a pretrained encoder (nothing was trained); ``full`` for a
    checkpoint whose record names no method. A recorded method that is no
    longer available, or whose options no longer parse, is a one-line error
    naming the checkpoint.
    """
    if start.fresh_head:
        return None
    recorded = start.record.get("method")
    if recorded is None:
        return get_method("full", task.kind)
    if not isinstance(recorded, dict) or not recorded.get("name"):
        raise FsxltError(f"{start.info.get('path')}: the checkpoint's method entry is not "
                         f"a method description ({recorded!r})")
    try:
        return get_method(str(recorded["name"]), task.kind, recorded.get("options") or {})
    except FsxltError as err:
        raise FsxltError(f"{start.info.get('path')}: cannot rebuild the method it was "
                         f"trained with: {err}") from None


@dataclass
class OpenStart:
    """A loaded start on its device, prepared by the method it was trained with."""

    start: Start
    task: TaskSpec
    method: Method | None
    featurizer: Featurizer
    device: torch.device

    @property
    def model(self) -> Any:
        return self.start.model

    def eval_set(self, examples: Sequence[Example]) -> EvalSet:
        """``examples`` tokenized as the start reads them (windows for tagging), batched."""
        encoded = self.method.encode(self.featurizer, examples) if self.method else None
        return make_eval_set(encoded or self.featurizer.encode(examples, windows=True),
                             self.featurizer.pad_id, self.device,
                             name=describe_examples(examples))

    def score(self, examples: Sequence[Example], *, precision: str = "auto") -> dict[str, Any]:
        """The task's scores of the start on ``examples``."""
        return score(self.model, self.eval_set(examples), self.task, precision=precision)

    def score_and_predict(self, examples: Sequence[Example], *, precision: str = "auto",
                          ) -> tuple[dict[str, Any], list[Any]]:
        """Scores and predicted labels from one pass."""
        return score_and_predict(self.model, self.eval_set(examples), self.task,
                                 precision=precision)

    def signals(self, examples: Sequence[Example], *, precision: str = "auto") -> tuple[Any, Any]:
        """Embeddings and prediction entropies (:func:`~fsxlt.models.prediction.example_signals`)
        from the head the start was trained with."""
        return example_signals(self.model, self.eval_set(examples), precision=precision)


def open_start(start: str | Path, task: str | TaskSpec, *, device: Any = None,
               max_seq_length: int | None = None) -> OpenStart:
    """Load ``start`` for ``task`` and prepare it the way it was trained (module docstring).

    The method is bound to the first language the start was source-trained
    on (the task's source language for an encoder), as source-training bound it.
    """
    task = get_task(task)
    device = resolve_device(device)
    quiet_transformers()  # no load report or progress bar of transformers' own
    loaded = load_start(start, task, seed=task.training.seed)
    method = trained_method(loaded, task)
    if method is not None:
        language = (loaded.info.get("source_languages") or [task.source_language])[0]
        bind_to_start(method, task, str(language), loaded)
        method.prepare(loaded.model, seed=task.training.seed)
    loaded.model.to(device)
    return OpenStart(loaded, task, method, Featurizer(loaded.tokenizer, task, max_seq_length),
                     device)


def evaluate_checkpoint(checkpoint: str | Path, task: TaskSpec | str,
                        examples: Sequence[Example], *, device: Any = None, precision: str = "auto",
                        max_seq_length: int | None = None) -> dict[str, Any]:
    """Load a checkpoint (or an encoder with a fresh, seeded head) and score ``examples``."""
    opened = open_start(checkpoint, task, device=device, max_seq_length=max_seq_length)
    return opened.score(examples, precision=precision)


def checkpoint_predictions(checkpoint: str | Path, task: TaskSpec | str,
                           examples: Sequence[Example], *, device: Any = None,
                           max_seq_length: int | None = None, precision: str = "auto",
                           ) -> tuple[dict[str, Any], list[Any]]:
    """Scores and predicted labels of a checkpoint on ``examples`` (one pass, in
    ``precision``: :mod:`fsxlt.models.precision`).

    What ``fsxlt evaluate --save-predictions`` uses, so the scores it prints
    and the predictions it saves come from the same forward passes.
    """
    opened = open_start(checkpoint, task, device=device, max_seq_length=max_seq_length)
    return opened.score_and_predict(examples, precision=precision)


__all__ = ["OpenStart", "bind_to_start", "checkpoint_predictions", "evaluate_checkpoint",
           "open_start", "trained_method"]


def pool_signals(start: str | Path, task: str | TaskSpec, examples: Sequence[Example], *,
                 device: Any = None, max_seq_length: int | None = None) -> tuple[Any, Any]:
    """The embeddings and prediction entropies of ``examples`` under the source-trained
    checkpoint ``start``, read the way it was trained (a ``pet`` checkpoint through its
    pattern and masked-LM head): what model-based shot selection reads
    (:func:`fsxlt.sampling.select.select`'s ``signals_from``)."""
    from fsxlt.training.checkpoint import is_checkpoint

    if not is_checkpoint(Path(start)):
        raise FsxltError(f"{start}: model-based strategies need a source-trained fsxlt "
                         "checkpoint (fsxlt source-train)")
    opened = open_start(start, task, device=device, max_seq_length=max_seq_length)
    return opened.signals(examples)
