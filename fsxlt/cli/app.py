"""The typer application and the error boundary of the command line.

Commands live in one module per area (``fsxlt.cli.buckets``, ...), each a
thin layer that parses options, calls the Python API and prints. Errors the
user can fix (:class:`~fsxlt.errors.FsxltError`) become one line on stderr
and exit status 2, never a traceback.
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
        return 130
    except Exception as err:  # click usage errors and the like
        import click

        if isinstance(err, click.exceptions.ClickException):
            err.show()
            return err.exit_code
        raise
    return status if isinstance(status, int) else 0
