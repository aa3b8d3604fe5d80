"""``fsxlt methods`` and ``fsxlt strategies``: the adapting methods and shot-selection
strategies available here, built in and installed plug-ins."""

from __future__ import annotations

from typing import Any

import typer

from fsxlt.cli.app import app

KIND_ABBREVIATIONS = {"classification": "cls", "tagging": "tag", "multiple_choice": "mc",
                      "extractive_qa": "qa"}
BROKEN_HEADER = "plug-ins that failed to load (fix or uninstall them):"


def plugin_columns(name: str, cls: Any, builtin: dict[str, Any],
                   installed: dict[str, str]) -> tuple[str, str, str]:
    """A listed class's kinds (abbreviated), summary (else its docstring's first line) and
    origin (``  [module:Class]`` for a plug-in, empty for a built-in)."""
    origin = "" if name in builtin else f"  [{installed[name]}]"
    kinds = "+".join(KIND_ABBREVIATIONS.get(k, k) for k in cls.kinds)
    summary = cls.summary or next(iter((cls.__doc__ or "").strip().splitlines()), "")
    return kinds, summary, origin


def say_broken(broken: dict[str, str]) -> None:
    """The section naming the plug-ins that failed to load, each with its error."""
    if broken:
        typer.echo(f"\n{BROKEN_HEADER}")
        for message in broken.values():
            typer.echo(f"  {message}")


def format_default(value: Any) -> str:
    """An option's default as ``--method-opt`` and YAML write it: ``true``, ``null``, ``a,b``."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "null"
    if isinstance(value, (list, tuple)):
        return ",".join(map(format_default, value))
    return str(value)


@app.command("methods")
def methods_cmd() -> None:
    """List the adapting methods: name, task kinds, what trains, options with defaults.

    Plug-ins register under the entry-point group 'fsxlt.methods'; a class that
    is not installed is used as --method package.module:Class. An installed
    plug-in that fails to load is named with its error in a section of its
    own at the end (the exit status stays 0).

    Kinds: cls = classification, tag = tagging, mc = multiple choice.

    Example:

      fsxlt methods
    """
    from fsxlt.methods import BUILTIN, discover, plugins

    installed = plugins()
    found, broken = discover()
    for name, cls in found.items():
        kinds, summary, origin = plugin_columns(name, cls, BUILTIN, installed)
        typer.echo(f"{name:<16} {kinds:<13} {summary}{origin}")
        for option in cls.options:
            typer.echo(f"{'':<16} {'':<11}   --method-opt {option.name}="
                       f"{format_default(option.default)}  {option.help}")
    say_broken(broken)


@app.command("strategies")
def strategies_cmd() -> None:
    """List the shot-selection strategies of fsxlt select: name, task kinds, what it picks.

    Plug-ins register under the entry-point group 'fsxlt.strategies'; a class
    that is not installed is used as --strategy package.module:Class. Model-based
    strategies (marked model) read the source-trained model (--from). An
    installed plug-in that fails to load is named with its error in a section
    of its own at the end (the exit status stays 0).

    Kinds: cls = classification, tag = tagging.

    Example:

      fsxlt strategies
    """
    from fsxlt.sampling.strategies import BUILTIN, discover, plugins

    installed = plugins()
    found, broken = discover()
    for name, cls in found.items():
        kinds, summary, origin = plugin_columns(name, cls, BUILTIN, installed)
        needs = "model" if cls.model_based else ""
        typer.echo(f"{name:<16} {kinds:<8} {needs:<6} {summary}{origin}")
    say_broken(broken)
