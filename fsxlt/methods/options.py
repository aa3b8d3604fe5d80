"""A method's options: typed declarations and the values the command line and sweeps give.

:class:`Option` declares one (:mod:`fsxlt.methods` states the contract);
:func:`parse_method_options` turns ``--method-opt key=value`` pairs into the strings
each :meth:`Option.parse` types. Both are named by :mod:`fsxlt.methods` too.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from fsxlt.errors import FsxltError


@dataclass(frozen=True)
class Option:
    """One option of a method: name, type (int, float, str, bool or list), default, help."""

    name: str
    type: type
    default: Any
    help: str = ""

    def parse(self, value: Any, method: str) -> Any:
        """``value`` (a command-line string or a YAML value) as this option's type.

        A float option takes finite numbers only: ``nan``, ``inf`` and ``-inf``
        are refused in one line naming the option.
        """
        try:
            if self.type is bool:
                if isinstance(value, bool):
                    return value
                text = str(value).strip().lower()
                if text in ("true", "1", "yes", "on"):
                    return True
                if text in ("false", "0", "no", "off"):
                    return False
                raise ValueError(value)
            if self.type is list:
                items = value if isinstance(value, (list, tuple)) else str(value).split(",")
                return [str(item).strip() for item in items if str(item).strip()]
            if self.type is int and (isinstance(value, bool) or
                                     (isinstance(value, float) and not value.is_integer())):
                raise ValueError(value)
            parsed = self.type(value)
            if self.type is float and not math.isfinite(parsed):
                raise ValueError(value)  # nan, inf, -inf: training would turn to NaN
            return parsed
        except (TypeError, ValueError):
            kind = {int: "an integer", float: "a finite number", str: "a string",
                    bool: "true or false", list: "a list"}.get(self.type, self.type.__name__)
            raise FsxltError(f"method {method}: option {self.name} must be {kind}, "
                             f"got {value!r}") from None


def parse_method_options(pairs: list[str] | None) -> dict[str, str]:
    """``["rank=4", "alpha=8"]`` -> ``{"rank": "4", "alpha": "8"}`` (values typed later)."""
    options: dict[str, str] = {}
    for pair in pairs or []:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise FsxltError(f"--method-opt expects key=value, got {pair!r}")
        options[key.strip()] = value.strip()
    return options
