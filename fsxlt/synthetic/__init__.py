"""Synthetic FS-XLT: an artificial language family, four tasks over it, and a tiny encoder.

A fresh offline machine (or CI) can run the whole FS-XLT pipeline on this
benchmark: :func:`generate_benchmark` writes task data in the formats the
real readers parse, and :func:`build_tiny_encoder` trains a WordPiece
tokenizer and a small BERT on the family's unlabelled corpus (cached).
See :mod:`fsxlt.synthetic.grammar` for the design of the languages and
:mod:`fsxlt.synthetic.benchmark` for the tasks.
"""

from fsxlt.synthetic.benchmark import (
    DEFAULT_SIZES,
    TASKS,
    generate_benchmark,
    read_description,
    task_config,
)
from fsxlt.synthetic.encoder import EncoderSettings, build_tiny_encoder
from fsxlt.synthetic.grammar import DEFAULT_LANGUAGES, LanguageSpec, build_family

__all__ = [
    "DEFAULT_LANGUAGES",
    "DEFAULT_SIZES",
    "TASKS",
    "EncoderSettings",
    "LanguageSpec",
    "build_family",
    "build_tiny_encoder",
    "generate_benchmark",
    "read_description",
    "task_config",
]
