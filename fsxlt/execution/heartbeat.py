"""Plain progress lines for long work whose output is no terminal (``nohup``, a cluster
job's log): a tqdm bar there draws nothing useful (or carriage returns), so the work says
where it stands in a line of its own at least every :data:`EVERY` seconds::

    sweep: 12/40 runs done, 1 failed, 3m12s elapsed, about 9m left

The estimate is the mean time per finished run times the runs left (none before the
first run ends). Work that ends before the first line says nothing; otherwise a last line
says how it ended. On a terminal the bar stays. Work that cannot count its parts (one
long scoring pass) says it is alive: ``evaluate: scoring 10000 examples, 1m30s elapsed``.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

EVERY = 30.0  # seconds between two lines at most


def duration(seconds: float) -> str:
    """``45s``, ``3m12s``, ``2h05m``."""
    seconds = int(round(seconds))
    if seconds < 60:
        return f"{seconds}s"
    if seconds < 3600:
        return f"{seconds // 60}m{seconds % 60:02d}s"
    return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m"


class Heartbeat:
    """Says ``what: done/total units done, failed, elapsed, about … left`` every ``every``
    seconds from a thread of its own, until :meth:`stop` (which says the last line)."""

    def __init__(self, what: str, total: int | None, unit: str = "runs",
                 say: Callable[[str], None] | None = None, every: float | None = None,
                 clock: Callable[[], float] = time.monotonic):
        self.what, self.total, self.unit, self.clock = what, total, unit, clock
        self.every = EVERY if every is None else every
        self.say = say or (lambda line: print(line, file=sys.stderr, flush=True))
        self.done = self.failed = self.beats = 0
        self.began = clock()
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._beat, daemon=True)

    def start(self) -> Heartbeat:
        self._thread.start()
        return self

    def update(self, ok: bool) -> None:
        with self._lock:
            self.done += 1
            self.failed += 0 if ok else 1

    def line(self) -> str:
        with self._lock:
            done, failed = self.done, self.failed
        elapsed = self.clock() - self.began
        if self.total is None:  # nothing to count: the work is alive
            return f"{self.what}, {duration(elapsed)} elapsed"
        left = self.total - done
        estimate = (f", about {duration(elapsed / done * left)} left" if done and left
                    else "")
        return (f"{self.what}: {done}/{self.total} {self.unit} done, {failed} failed, "
                f"{duration(elapsed)} elapsed{estimate}")

    def _beat(self) -> None:
        while not self._stop.wait(self.every):
            self.beats += 1
            self.say(self.line())

    def stop(self) -> None:
        """End the beats; the last line where any was said."""
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join()
        if self.beats:
            self.say(self.line())


@contextmanager
def watched(what: str, total: int | None, unit: str = "runs",
            say: Callable[[str], None] | None = None,
            on_terminal: bool | None = None) -> Iterator[Heartbeat | None]:
    """A started :class:`Heartbeat` for ``total`` units of ``what`` (None: one piece of
    work, said as alive with its elapsed time) while the block runs, where stderr is no
    terminal (``on_terminal`` overrides the check); None on a terminal,
    where the command's own lines and bars are enough. The last line is said on the way
    out, however the block ends."""
    if sys.stderr.isatty() if on_terminal is None else on_terminal:
        yield None
        return
    beat = Heartbeat(what, total, say=say, unit=unit).start()
    try:
        yield beat
    finally:
        beat.stop()
