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
- Ctrl-C: ``interrupted``, exit status 130.

Anything else is a bug in fsxlt and keeps its traceback.
"""

from __future__ import annotations

import sys

import typer

from fsxlt.errors import FsxltError

app = typer.Typer(
    name="fsxlt",
    help="Few-shot crosslingual transfer: standardized buckets, fast adapting, honest reports.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
    add_completion=False,
)


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
        print("interrupted", file=sys.stderr)
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
        print("interrupted", file=sys.stderr)
    return status if isinstance(status, int) else 0
