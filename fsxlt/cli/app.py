"""The typer application and the error boundary of the command line.

Commands live in one module per area (``fsxlt.cli.buckets``, ...), each a
thin layer that parses options, calls the Python API and prints. Whatever
goes wrong in a way the user can fix ends as one line on stderr and a
non-zero exit status, never a traceback:

- a usage error (unknown option, a value of the wrong type, a missing
  argument): the usage line, one ``Error:`` line, exit status 2;
- an :class:`~fsxlt.errors.FsxltError` (bad data, unknown task, ...):
  ``error: <message>``, exit status 2;
- an operating-system error on a named path (a directory that is a file,
  permission denied, disk full): ``error: <path>: <reason>``, exit status 2;
- Ctrl-C: one line, ``interrupted: ...`` (what is kept, how to go on), exit status 130.

Every number an option or argument takes passes one check before the command
runs (:func:`check_numbers`, the rule of :func:`fsxlt.config_checks.number_problem`
that config keys follow too): NaN, infinity and a negative value are one line,
``error: --lr must be a finite number, got nan``.

Anything else is a bug in fsxlt and keeps its traceback.
"""

from __future__ import annotations

import inspect
import sys
import typing
from typing import Any

import typer

from fsxlt.config_checks import number_problem
from fsxlt.errors import FsxltError

app = typer.Typer(
    name="fsxlt",
    help="Few-shot crosslingual transfer: standardized buckets, fast adapting, honest reports.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
    add_completion=False,
)


def _print_version(value: bool) -> None:
    """``fsxlt --version``: the version, then exit."""
    if value:
        from fsxlt import __version__

        typer.echo(f"fsxlt {__version__}")
        raise typer.Exit()


@app.callback()
def _root(version: bool = typer.Option(
        False, "--version", callback=_print_version, is_eager=True,
        help="Print fsxlt's version and exit.")) -> None:
    """Few-shot crosslingual transfer: standardized buckets, fast adapting, honest reports."""


def checked_number(param: typer.CallbackParam, value: Any) -> Any:
    """The callback of every numeric option: NaN, infinity and negative numbers refused in
    one line naming the option (a repeatable option: each of its values)."""
    opts = list(getattr(param, "opts", None) or [])
    name = next((o for o in opts if o.startswith("--")), None) or next(iter(opts), None) \
        or f"<{param.name}>"
    for item in value if isinstance(value, (list, tuple)) else [value]:
        if isinstance(item, (int, float)) and not isinstance(item, bool):
            problem = number_problem(item, name, minimum=0)
            if problem is not None:
                raise FsxltError(problem)
    return value


def _is_numeric(annotation: Any) -> bool:
    """Whether a parameter's type is int or float, optional or a list of them."""
    if annotation in (int, float):
        return True
    return any(_is_numeric(arg) for arg in typing.get_args(annotation)
               if arg is not type(None))


def _parameter_infos(function: Any) -> list[tuple[str, Any, Any]]:
    """Each parameter of a command function with its typer info (Option or Argument) and
    its type, whether declared in ``Annotated`` or as the default. Annotations written as
    strings (``from __future__ import annotations``) are replaced by what they evaluate to,
    so that typer reads the same info objects later, not fresh ones."""
    hints = typing.get_type_hints(function, include_extras=True)
    found = []
    for name, parameter in inspect.signature(function).parameters.items():
        hint = hints.get(name)
        if name in function.__annotations__:
            function.__annotations__[name] = hint
        infos = [m for m in getattr(hint, "__metadata__", ())
                 if isinstance(m, typer.models.ParameterInfo)]
        if isinstance(parameter.default, typer.models.ParameterInfo):
            infos.append(parameter.default)
        base = typing.get_args(hint)[0] if infos and hasattr(hint, "__metadata__") else hint
        found += [(name, info, base) for info in infos]
    return found


def check_numbers(typer_app: typer.Typer) -> list[str]:
    """Give every int and float option and argument of every command of ``typer_app`` (its
    groups too) :func:`checked_number` as its callback; returns ``command --option`` of
    each. A numeric option with a callback of its own is an error here: it would escape."""
    checked = []
    groups = [(typer_app, "")]
    while groups:
        current, prefix = groups.pop()
        for command in current.registered_commands:
            label = f"{prefix}{command.name or command.callback.__name__}"
            for name, info, base in _parameter_infos(command.callback):
                if not _is_numeric(base):
                    continue
                if info.callback not in (None, checked_number):
                    raise TypeError(f"{label}: option {name} has a callback of its own; "
                                    "make it call checked_number")
                info.callback = checked_number
                checked.append(f"{label} {name}")
        groups += [(group.typer_instance, f"{prefix}{group.name} ")
                   for group in current.registered_groups]
    return checked


def verbatim_examples(doc: str) -> str:
    """A command's docstring with every indented paragraph (its examples) marked ``\\b``, so
    that click prints it as written instead of re-wrapping it into lines that cannot be
    copied."""
    paragraphs = inspect.cleandoc(doc).split("\n\n")
    marked = ["\b\n" + p if p.strip() and all(line.startswith(" ") for line in p.splitlines())
              else p for p in paragraphs]
    return "\n\n".join(marked)


def keep_examples_verbatim(typer_app: typer.Typer) -> None:
    """Mark the example blocks of every command of ``typer_app`` (its groups too) verbatim
    (:func:`verbatim_examples`)."""
    groups = [typer_app]
    while groups:
        current = groups.pop()
        for command in current.registered_commands:
            if command.callback is not None and command.callback.__doc__:
                command.callback.__doc__ = verbatim_examples(command.callback.__doc__)
        groups += [group.typer_instance for group in current.registered_groups]


INTERRUPTED = 130  # the shell's status for a process stopped by SIGINT; no command uses it


def usage_error_types() -> tuple[type[BaseException], ...]:
    """The exception classes of command-line parsing (click's, and typer's vendored copy).

    typer >= 0.2x ships its own copy of click, whose exceptions are not
    click's; older typers raise click's own. Both are usage errors.
    """
    found: list[type[BaseException]] = []
    try:
        import click

        found.append(click.exceptions.ClickException)
    except ImportError:
        pass
    base = getattr(typer, "TyperException", None)
    if isinstance(base, type) and issubclass(base, BaseException):
        found.append(base)
    return tuple(found)


def _show_usage_error(err: BaseException) -> int:
    """Print a parsing error as click would (usage line, hint, one message); its exit code."""
    show = getattr(err, "show", None)
    if callable(show):
        show()
    else:
        print(f"Error: {err}", file=sys.stderr)
    return int(getattr(err, "exit_code", 2))


INTERRUPTED_LINE = ("interrupted: what finished is kept, each file written whole; the same "
                    "command again goes on from there")


def run_app(args: list[str] | None = None) -> int:
    """Run the CLI and return its exit status; user errors print one line."""
    try:
        status = app(args=args, prog_name="fsxlt", standalone_mode=False)
    except FsxltError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    except typer.Exit as done:
        return done.exit_code
    except typer.Abort:
        print("aborted", file=sys.stderr)
        return 130
    except KeyboardInterrupt:
        print(INTERRUPTED_LINE, file=sys.stderr)
        return INTERRUPTED
    except usage_error_types() as err:
        return _show_usage_error(err)
    except OSError as err:
        if err.filename is None:
            raise
        print(f"error: {err.filename}: {err.strerror or err.__class__.__name__}",
              file=sys.stderr)
        return 2
    if status == INTERRUPTED:  # typer turns Ctrl-C into Exit(130) and returns it
        print(INTERRUPTED_LINE, file=sys.stderr)
    return status if isinstance(status, int) else 0
