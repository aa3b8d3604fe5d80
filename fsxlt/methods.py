"""The target-adapting methods of METHOD.md §4, as data (no torch import).

Kept apart from :mod:`fsxlt.modeling` so the command line can validate a
``--method`` and print help without loading PyTorch.
"""

from __future__ import annotations

from dataclasses import dataclass

from fsxlt.errors import FsxltError

METHODS = ("full", "fc", "fc-pooler", "cos-pooler", "fc-reset-pooler")
DEFAULT_MODEL = "bert-base-multilingual-cased"


@dataclass(frozen=True)
class MethodSpec:
    """What one target-adapting method trains and how it sets up the classifier."""

    name: str
    train_encoder: bool
    train_pooler: bool
    classifier: str  # "keep" | "reset" | "cos"


METHOD_SPECS = {
    "full": MethodSpec("full", True, True, "keep"),
    "fc": MethodSpec("fc", False, False, "keep"),
    "fc-pooler": MethodSpec("fc-pooler", False, True, "keep"),
    "cos-pooler": MethodSpec("cos-pooler", False, True, "cos"),
    "fc-reset-pooler": MethodSpec("fc-reset-pooler", False, True, "reset"),
}


def method_spec(name: str, kind: str = "classification") -> MethodSpec:
    """Look up an adapting method; pooler methods need a classification task."""
    if name not in METHOD_SPECS:
        raise FsxltError(f"unknown method {name!r}; valid: {', '.join(METHODS)}")
    spec = METHOD_SPECS[name]
    if kind == "tagging" and name not in ("full", "fc"):
        raise FsxltError(f"method {name} trains a pooler, which tagging models do not have; "
                         "use full or fc for tagging tasks")
    return spec

__all__ = ["DEFAULT_MODEL", "METHODS", "METHOD_SPECS", "MethodSpec", "method_spec"]
