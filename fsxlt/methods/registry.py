"""Finding a method by name: built-in, installed plug-in (entry points) or a
``package.module:Class`` reference, built with its checked options."""

from __future__ import annotations

from typing import Any

from fsxlt.errors import FsxltError
from fsxlt.methods.base import ENTRY_POINT_GROUP, Method
from fsxlt.methods.builtin import BUILTIN
from fsxlt.plugins import CLASS_REFERENCE, describe_error


def _import_class(ref: str, label: str | None = None) -> type[Method]:
    """The class ``module:Class`` names; any failure is one line starting with ``label``."""
    from fsxlt.plugins import import_class

    return import_class(ref, Method, label or f"method {ref}")


def _load_plugin(name: str, ref: str) -> type[Method]:
    """The class of the installed plug-in ``name`` (entry point ``ref``)."""
    return _import_class(ref, f"plug-in method {name} ({ref})")


def plugins() -> dict[str, str]:
    """Installed plug-in methods: entry-point name -> ``module:Class`` (nothing is imported)."""
    from fsxlt.plugins import entry_point_refs

    return entry_point_refs(ENTRY_POINT_GROUP)


def discover() -> tuple[dict[str, type[Method]], dict[str, str]]:
    """The methods that load, by name, and the one-line error of each plug-in that does not.

    Built-ins come first, then installed plug-ins by name; a plug-in never
    shadows a built-in. A plug-in that fails to import (a syntax error, a
    missing module, an exception on import, not a Method) is left out of the
    first mapping and named, with its error, in the second.
    """
    from fsxlt.plugins import discover_group

    return discover_group(ENTRY_POINT_GROUP, BUILTIN, Method, "method")


def method_class(ref: str) -> type[Method]:
    """A method class from a name (built-in or installed) or ``package.module:Class``."""
    if ref in BUILTIN:
        return BUILTIN[ref]
    if CLASS_REFERENCE.match(ref):
        return _import_class(ref)
    installed = plugins()
    if ref in installed:
        return _load_plugin(ref, installed[ref])
    valid = ", ".join([*BUILTIN, *sorted(set(installed) - set(BUILTIN))])
    raise FsxltError(f"unknown method {ref!r}; valid: {valid}, or package.module:Class")


def method_label(name: str) -> str:
    """How reports title the method ``name``: its class's ``label``, else the name itself
    (also for a name no built-in or installed plug-in has, or one that fails to load)."""
    try:
        cls = method_class(name) if name in BUILTIN or name in plugins() else None
    except FsxltError:
        cls = None
    return (cls.label or cls.name) if cls is not None else name


def source_training_methods() -> list[str]:
    """The built-in methods that ``fsxlt source-train --method`` takes (``source_trains``)."""
    return [name for name, cls in BUILTIN.items() if cls.source_trains]


def check_source_training(cls: type[Method]) -> None:
    """One-line error unless the method class may source-train a start."""
    if not cls.source_trains:
        raise FsxltError(f"source-training uses {' or '.join(source_training_methods())} "
                         f"(or a method that declares source_trains), not {cls.name}")


def prepare_method(model: Any, method: str | Method, seed: int) -> list[str]:
    """Let ``method`` set up the head and the trainable set; return the trainable names.

    Every method, built in or a plug-in, goes through its own
    :meth:`Method.prepare` (``cos-pooler`` installs a new random cosine
    matrix, ``fc-reset-pooler`` re-initialises the linear classifier, both
    seeded with ``seed``; ``lora`` wraps the encoder).
    """
    get_method(method, model.kind).prepare(model, seed)
    return model.trainable_names()


def _build(cls: type[Method], options: dict[str, Any]) -> Method:
    """``cls(**options)``; a plug-in constructor's own failure is a one-line error."""
    try:
        return cls(**options)
    except FsxltError:
        raise
    except Exception as err:
        raise FsxltError(f"method {cls.name}: cannot build it ({describe_error(err)})") from err


def get_method(ref: str | Method, kind: str = "classification",
               options: dict[str, Any] | None = None) -> Method:
    """A configured method for a task kind; unknown names, kinds and options are errors,
    and so is any failure of a plug-in to import or build (one line naming it)."""
    if isinstance(ref, Method):
        if options:
            raise FsxltError("options go to the method's constructor, not with an instance")
        method = ref
    else:
        method = _build(method_class(ref), options or {})
    method.check_kind(kind)
    return method

