"""A package's public names, each loaded from its module the first time it is used.

A package face (``fsxlt``, ``fsxlt.sampling``, ``fsxlt.analysis``) names what
callers need without importing the modules behind it until a name is used,
so importing the package stays light (no torch).
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable
from typing import Any


def lazy_names(package: str, api: dict[str, str], renamed: dict[str, str] | None = None,
               ) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """``(__getattr__, __dir__)`` for ``package``: ``api`` maps a public name to the module
    defining it (``renamed``: where the module calls it otherwise)."""
    aliases = renamed or {}

    def load(name: str) -> Any:
        if name not in api:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(api[name]), aliases.get(name, name))
        setattr(sys.modules[package], name, value)
        return value

    def names() -> list[str]:
        return sorted(api)

    return load, names
