"""``fsxlt methods``: the adapting methods available here, built in and installed plug-ins."""

from __future__ import annotations

import typer

from fsxlt.cli.app import app

KIND_ABBREVIATIONS = {"classification": "cls", "tagging": "tag", "multiple_choice": "mc"}


def _default(value: object) -> str:
    return ",".join(map(str, value)) if isinstance(value, list) else str(value)


@app.command("methods")
def methods_cmd() -> None:
    """List the adapting methods: name, task kinds, what trains, options with defaults.

    Plug-ins register under the entry-point group 'fsxlt.methods'; a class that
    is not installed is used as --method package.module:Class.

    Kinds: cls = classification, tag = tagging, mc = multiple choice.

    Example:

      fsxlt methods
    """
    from fsxlt.methods import BUILTIN, available, plugins

    installed = plugins()
    for name, cls in available().items():
        origin = "" if name in BUILTIN else f"  [{installed[name]}]"
        kinds = "+".join(KIND_ABBREVIATIONS.get(k, k) for k in cls.kinds)
        summary = cls.summary or next(iter((cls.__doc__ or "").strip().splitlines()), "")
        typer.echo(f"{name:<16} {kinds:<11} {summary}{origin}")
        for option in cls.options:
            typer.echo(f"{'':<16} {'':<11}   --method-opt {option.name}="
                       f"{_default(option.default)}  {option.help}")
