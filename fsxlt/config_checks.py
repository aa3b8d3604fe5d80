"""Checks for the mappings YAML config files hold: one kit for task, sweep and demo configs.

Each check returns the value it accepts (converted where YAML leaves it
ambiguous: ``1e-5`` reads as a string) or raises :class:`~fsxlt.errors.FsxltError`
with one line that starts with ``where`` (the file, or ``<sweep config>`` for a
mapping built in code) and names the key::

    raw = document(parse_yaml(text, where), where, "a sweep config")
    check_keys(raw, TOP_KEYS, where)
    epochs = number(raw.get("max_epochs", 50), where, "max_epochs", int, minimum=1)

Keys inside sections are named by their path (``adapt.lrs``,
``tasks.synth-pos.k``) so that the message points at the line to fix.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Mapping, Sequence
from typing import Any

from fsxlt.errors import FsxltError, did_you_mean


def document(raw: Any, where: str, what: str) -> dict[str, Any]:
    """A whole config file's content, which must be a mapping (``what``: "a sweep config")."""
    if not isinstance(raw, dict):
        raise FsxltError(f"{where}: {what} must be a YAML mapping")
    return dict(raw)


def mapping(value: Any, where: str, what: str, hint: str = "") -> dict[str, Any]:
    """A section that must be a mapping (absent: empty); ``hint`` shows what it holds."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise FsxltError(f"{where}: {what} must be a mapping{hint}, got {value!r}")
    return dict(value)


def check_keys(raw: Mapping[str, Any], allowed: Collection[str], where: str,
               section: str = "") -> None:
    """Refuse keys outside ``allowed``, naming them and the valid ones.

    ``section`` says where they are, e.g. ``" in no_source_training"``.
    """
    unknown = sorted(str(key) for key in set(raw) - set(allowed))
    if unknown:
        named = ", ".join(f"{key}{did_you_mean(key, allowed)}" for key in unknown)
        raise FsxltError(f"{where}: unknown key(s){section}: {named} "
                         f"(valid: {', '.join(sorted(allowed))})")


def require(raw: Mapping[str, Any], key: str, where: str) -> Any:
    """The value of a key that must be present."""
    if key not in raw:
        raise FsxltError(f"{where}: missing required field {key!r}")
    return raw[key]


def as_list(value: Any, where: str, key: str) -> list:
    """A list setting; a single scalar is a list of one, absent is empty."""
    if value is None:
        return []
    if isinstance(value, (str, int, float)) and not isinstance(value, bool):
        return [value]
    if not isinstance(value, list):
        raise FsxltError(f"{where}: {key} must be a list")
    return value


def number_problem(value: float, key: str, minimum: float | None = None,
                   exclusive: bool = False) -> str | None:
    """What is wrong with a number for ``key``, or None: NaN and infinity never pass, nor a
    value below (``exclusive``: at or below) ``minimum``. The one rule for every number a
    config key (:func:`number`) or a command-line option (``fsxlt.cli.app``) takes."""
    if not math.isfinite(value):
        return f"{key} must be a finite number, got {value}"
    if minimum is not None and (value <= minimum if exclusive else value < minimum):
        bound = f"> {minimum}" if exclusive else f">= {minimum}"
        return f"{key} must be {bound}, got {value}"
    return None


def number(value: Any, where: str, key: str, kind: type, minimum: float | None = None,
           exclusive: bool = False) -> Any:
    """``value`` as ``kind`` (int or float), finite and at least (``exclusive``: above)
    ``minimum`` (:func:`number_problem`).

    YAML gives numbers as numbers; a string, list, bool or a fractional value
    for an integer setting is a mistake worth naming, not silently coerced
    (except a float written as ``1e-5``, which YAML reads as a string).
    """
    ok = isinstance(value, (int, float)) and not isinstance(value, bool)
    if ok and not math.isfinite(value):
        raise FsxltError(f"{where}: {number_problem(value, key)}")
    if kind is int and ok and float(value) != int(value):
        ok = False
    if not ok and kind is float and isinstance(value, str):
        try:
            value, ok = float(value), True
        except ValueError:
            ok = False
    if not ok:
        expected = "an integer" if kind is int else "a number"
        raise FsxltError(f"{where}: {key} must be {expected}, got {value!r}")
    value = kind(value)
    problem = number_problem(value, key, minimum, exclusive)
    if problem is not None:
        raise FsxltError(f"{where}: {problem}")
    return value


def numbers(value: Any, where: str, key: str, kind: type, minimum: float | None = None,
            exclusive: bool = False) -> list:
    """A list of numbers (a single number is a list of one), each checked by :func:`number`."""
    return [number(x, where, key, kind, minimum, exclusive) for x in as_list(value, where, key)]


def numeric(value: Any, where: str, key: str) -> int | float:
    """An int or a float, kept as YAML gave it."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise FsxltError(f"{where}: {key} must be a number, got {value!r}")
    problem = number_problem(value, key)
    if problem is not None:
        raise FsxltError(f"{where}: {problem}")
    return value


def text(value: Any, where: str, key: str) -> str | None:
    """A string setting (a path or a name), or None when absent."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        raise FsxltError(f"{where}: {key} must be a string, got {value!r}")
    return str(value)


def flag(value: Any, where: str, key: str) -> bool:
    """A true/false setting (absent: false)."""
    if value is None:
        return False
    if not isinstance(value, bool):
        raise FsxltError(f"{where}: {key} must be true or false, got {value!r}")
    return value


def one_of(value: Any, choices: Sequence[str], where: str, key: str) -> str:
    """A setting that names one of ``choices``."""
    if value not in choices:
        raise FsxltError(f"{where}: {key} must be one of {', '.join(choices)}, got {value!r}")
    return str(value)
