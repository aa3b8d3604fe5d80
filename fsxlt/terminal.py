"""Progress bars that stay readable where stderr is no terminal.

tqdm redraws its bar in place with carriage returns; in a log file (``nohup``, a cluster
job) that is one endless line. :func:`bar_options` gives a tqdm bar, off a terminal, a
stream that turns each redraw into a line of its own and a redraw at most every
:data:`LINE_EVERY` seconds; on a terminal the bar is tqdm's own.
"""

from __future__ import annotations

import sys
from typing import Any, TextIO

LINE_EVERY = 30.0  # seconds between two progress lines in a log


class LineStream:
    """A file for tqdm that writes each redraw of the bar as a plain line."""

    def __init__(self, stream: TextIO):
        self.stream = stream

    def write(self, text: str) -> int:
        line = text.replace("\r", "").rstrip("\n")
        if line.strip():
            self.stream.write(line + "\n")
        return len(text)

    def flush(self) -> None:
        self.stream.flush()


def bar_options(stream: TextIO | None = None) -> dict[str, Any]:
    """tqdm's options for a bar on ``stream`` (stderr): nothing on a terminal; off one, a
    :class:`LineStream`, a redraw every :data:`LINE_EVERY` s and ASCII."""
    stream = sys.stderr if stream is None else stream
    if stream.isatty():
        return {}
    return {"file": LineStream(stream), "mininterval": LINE_EVERY, "maxinterval": LINE_EVERY,
            "ascii": True, "ncols": 100}
