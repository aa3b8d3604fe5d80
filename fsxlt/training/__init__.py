"""Source-training and target-adapting (docs/protocol.md#training).

- :class:`~fsxlt.training.adapt.AdaptEngine`: holds tokenized dev/test sets and
  the starting weights in memory; ``engine.adapt(bucket, method, lrs, seed)``
  returns one run record (a dict) per bucket.
- :func:`~fsxlt.training.source.source_train`: English fine-tuning over an lr
  grid with per-epoch dev scores of every checkpoint and zero-shot test scores.
- :mod:`~fsxlt.training.checkpoint`: loading a start (checkpoint or pretrained
  encoder) and saving checkpoints.
- :mod:`~fsxlt.training.starts`: a start ready to score and read examples the
  way it was trained (:func:`open_start`; the method its checkpoint records is
  rebuilt), for ``fsxlt evaluate``, shot selection and the bucket analyses.
"""

from fsxlt.training.adapt import RUN_FORMAT, AdaptEngine
from fsxlt.training.checkpoint import (
    Start,
    is_checkpoint,
    load_start,
    resolve_device,
    save_checkpoint,
)
from fsxlt.training.records import strip_timings
from fsxlt.training.source import SOURCE_FORMAT, SourceResult, source_train
from fsxlt.training.starts import (
    OpenStart,
    checkpoint_predictions,
    evaluate_checkpoint,
    open_start,
)

__all__ = ["RUN_FORMAT", "SOURCE_FORMAT", "AdaptEngine", "OpenStart", "SourceResult", "Start",
           "checkpoint_predictions", "evaluate_checkpoint", "is_checkpoint", "load_start",
           "open_start", "resolve_device", "save_checkpoint", "source_train", "strip_timings"]
