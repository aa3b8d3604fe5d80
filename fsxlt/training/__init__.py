"""Source-training and target-adapting (METHOD.md §4).

- :class:`~fsxlt.training.adapt.AdaptEngine`: holds tokenized dev/test sets and
  the starting weights in memory; ``engine.adapt(bucket, method, lrs, seed)``
  returns one run record (a dict) per bucket.
- :func:`~fsxlt.training.source.source_train`: English fine-tuning over an lr
  grid with per-epoch dev scores of every checkpoint and zero-shot test scores.
- :mod:`~fsxlt.training.checkpoint`: loading a start (checkpoint or pretrained
  encoder) and saving checkpoints.
"""

from fsxlt.training.adapt import RUN_FORMAT, AdaptEngine, strip_timings
from fsxlt.training.checkpoint import (
    Start,
    is_checkpoint,
    load_start,
    resolve_device,
    save_checkpoint,
)
from fsxlt.training.source import SOURCE_FORMAT, SourceResult, source_train

__all__ = ["RUN_FORMAT", "SOURCE_FORMAT", "AdaptEngine", "SourceResult", "Start",
           "is_checkpoint", "load_start", "resolve_device", "save_checkpoint", "source_train",
           "strip_timings"]
