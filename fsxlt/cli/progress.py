"""Progress for long CLI work, on stderr (so stdout stays clean for tables).

On a terminal, a tqdm bar. Off a terminal (a log file of ``nohup``, a cluster job) a bar
would draw nothing until the end, so a long step prints a plain line instead, at most
every :data:`PLAIN_EVERY` seconds: ``importing: 12/56 sets, 40s``. A step that ends
sooner prints nothing, so quick commands (and one-line refusals) stay as they are.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Iterable, Iterator
from typing import TypeVar

from tqdm.auto import tqdm

T = TypeVar("T")
PLAIN_EVERY = 5.0  # seconds between two plain progress lines off a terminal


def bar(description: str, unit: str = "it") -> Callable[[Iterable[T]], Iterable[T]]:
    """A wrapper that shows progress over an iterable: a bar on a terminal, plain lines
    every few seconds elsewhere (module docstring)."""

    def wrap(items: Iterable[T]) -> Iterable[T]:
        if sys.stderr.isatty():
            return tqdm(items, desc=description, unit=unit, leave=False, dynamic_ncols=True)
        return plain_progress(items, description, unit)

    return wrap


def plain_progress(items: Iterable[T], description: str, unit: str,
                   every: float = PLAIN_EVERY,
                   clock: Callable[[], float] = time.monotonic) -> Iterator[T]:
    """``items``, printing ``description: done/total units, elapsed`` on stderr once
    ``every`` seconds have passed since the start or the last line, and a last line at
    the end when any was printed before it."""
    total = len(items) if hasattr(items, "__len__") else None  # type: ignore[arg-type]
    of = f"/{total}" if total is not None else ""
    start = last = clock()
    done, shown = 0, 0
    for item in items:
        yield item
        done += 1
        now = clock()
        if now - last >= every:
            print(f"{description}: {done}{of} {unit}s, {now - start:.0f}s", file=sys.stderr,
                  flush=True)
            last, shown = now, done
    if shown and shown != done:
        print(f"{description}: {done}{of} {unit}s, {clock() - start:.0f}s", file=sys.stderr,
              flush=True)
