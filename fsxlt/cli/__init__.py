"""The ``fsxlt`` command line: one module of commands per area, over the Python API."""

from __future__ import annotations

import sys

from fsxlt.cli import adapt as _adapt  # noqa: F401  (registers commands)
from fsxlt.cli import analyze as _analyze  # noqa: F401
from fsxlt.cli import analyze_stats as _analyze_stats  # noqa: F401
from fsxlt.cli import buckets as _buckets  # noqa: F401
from fsxlt.cli import demo as _demo  # noqa: F401
from fsxlt.cli import evaluate as _evaluate  # noqa: F401
from fsxlt.cli import icl as _icl  # noqa: F401
from fsxlt.cli import imports as _imports  # noqa: F401
from fsxlt.cli import lm as _lm  # noqa: F401
from fsxlt.cli import methods as _methods  # noqa: F401
from fsxlt.cli import report as _report  # noqa: F401
from fsxlt.cli import runs as _runs  # noqa: F401
from fsxlt.cli import score as _score  # noqa: F401
from fsxlt.cli import submission as _submission  # noqa: F401
from fsxlt.cli import sweep as _sweep  # noqa: F401
from fsxlt.cli import train as _train  # noqa: F401
from fsxlt.cli.app import app, check_numbers, keep_examples_verbatim, run_app

NUMERIC_OPTIONS = check_numbers(app)  # every int and float option: one number check
keep_examples_verbatim(app)  # every help's examples as written, ready to copy

__all__ = ["NUMERIC_OPTIONS", "app", "main", "run_app"]


def _quiet_interrupt(unraisable) -> None:  # noqa: ANN001 - sys.UnraisableHookArgs
    """Ctrl-C can land inside a callback the interpreter runs (an import lock's), which it
    then reports as "Exception ignored in ..." with a traceback; the one interrupted line
    says it already. Anything else goes to Python's own hook."""
    if isinstance(unraisable.exc_value, KeyboardInterrupt):
        return
    sys.__unraisablehook__(unraisable)


def main() -> None:
    """Console-script entry point."""
    sys.unraisablehook = _quiet_interrupt
    sys.exit(run_app())
