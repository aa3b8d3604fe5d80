"""Loading plug-in classes: by entry point of an installed package, or by ``module:Class``.

Adapting methods (:mod:`fsxlt.methods`) and shot-selection strategies
(:mod:`fsxlt.sampling.strategies`) are plug-in classes. A package registers
one under an entry-point group (``fsxlt.strategies``: ``name =
"package.module:Class"``); nothing is imported until the class is wanted. A
class that fails to load (a syntax error, a missing module, an exception on
import, not a subclass of the expected base, no ``name``) is a one-line
:class:`~fsxlt.errors.FsxltError` naming it and where it failed
(:func:`describe_error`). Nothing here imports torch.
"""

from __future__ import annotations

import importlib
import re
import traceback
from pathlib import Path
from typing import Any, TypeVar

from fsxlt.errors import FsxltError

T = TypeVar("T")
CLASS_REFERENCE = re.compile(r"^[\w.]+:[\w.]+$")  # package.module:Class
_PACKAGE = Path(__file__).resolve().parent


def _plugin_frame(frame: traceback.FrameSummary) -> bool:
    """Whether a traceback frame is the plug-in's code (not fsxlt's own nor the importer's)."""
    name = frame.filename
    return not (name.startswith("<") or Path(name).parent.name == "importlib"
                or Path(name).resolve().is_relative_to(_PACKAGE))


def describe_error(err: BaseException) -> str:
    """``Type: first line of the message (file, line N)``: one line on a plug-in's failure.

    The place is the syntax error's, else the last frame of the traceback in
    the plug-in's own code; none when the failure is in finding the module.
    """
    if isinstance(err, SyntaxError):
        text, place = err.msg, (err.filename, err.lineno)
    else:
        text = next(iter(str(err).strip().splitlines()), "")
        frames = [f for f in traceback.extract_tb(err.__traceback__) if _plugin_frame(f)]
        place = (frames[-1].filename, frames[-1].lineno) if frames else (None, None)
    line = f"{err.__class__.__name__}: {text}" if text else err.__class__.__name__
    return f"{line} ({place[0]}, line {place[1]})" if place[0] else line


def entry_point_refs(group: str) -> dict[str, str]:
    """Installed plug-ins of ``group``: entry-point name -> ``module:Class`` (none imported)."""
    from importlib.metadata import entry_points

    return {ep.name: ep.value for ep in entry_points(group=group)}


def import_class(ref: str, base: type[T], label: str) -> type[T]:
    """The class ``module:Class`` names, a subclass of ``base`` with a ``name``; any failure
    is one line starting with ``label``."""
    module_name, _, attr = ref.partition(":")
    try:
        obj: Any = importlib.import_module(module_name)
        for part in attr.split("."):
            obj = getattr(obj, part)
    except Exception as err:  # a plug-in module can fail any way on import: SyntaxError, ...
        raise FsxltError(f"{label}: cannot import it ({describe_error(err)})") from err
    if not (isinstance(obj, type) and issubclass(obj, base)) or not getattr(obj, "name", ""):
        raise FsxltError(f"{label}: not a subclass of {base.__module__}.{base.__qualname__} "
                         "with a name")
    return obj


def discover_group(group: str, builtin: dict[str, type[T]], base: type[T],
                   noun: str) -> tuple[dict[str, type[T]], dict[str, str]]:
    """The classes that load, by name (built-ins first, then installed plug-ins by name; a
    plug-in never shadows a built-in), and the one-line error of each plug-in that does
    not load (``plug-in <noun> <name> (<ref>): ...``)."""
    found: dict[str, type[T]] = dict(builtin)
    broken: dict[str, str] = {}
    for name, ref in sorted(entry_point_refs(group).items()):
        if name in found:
            continue
        try:
            found[name] = import_class(ref, base, f"plug-in {noun} {name} ({ref})")
        except FsxltError as err:
            broken[name] = str(err)
    return found, broken
