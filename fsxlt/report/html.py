"""A report as one self-contained HTML page: the Markdown page's tables, notes and plots,
the plots inline (``data:`` URIs of their PNG files), one inline style sheet, no script,
nothing fetched from a network or another file: the page opens as it is, mailed or copied.
"""

from __future__ import annotations

import base64
import html
from collections.abc import Sequence
from pathlib import Path
from typing import Any

STYLE = """
body { font-family: system-ui, sans-serif; margin: 2em auto; max-width: 72em;
       color: #1a1a1a; line-height: 1.4; }
h1 { font-size: 1.6em; } h2 { font-size: 1.3em; margin-top: 2em; }
h3 { font-size: 1.05em; margin-top: 1.6em; }
table { border-collapse: collapse; margin: 0.5em 0 1em; font-size: 0.9em; }
th, td { border: 1px solid #ccc; padding: 0.25em 0.6em; text-align: right; }
th:first-child, td:first-child { text-align: left; }
th { background: #f3f3f3; }
img { max-width: 100%; display: block; margin: 0.5em 0 1.2em; }
code { font-size: 0.9em; }
"""


def image(path: Path, alt: str) -> str:
    """``<img>`` holding the PNG at ``path`` inline."""
    data = base64.b64encode(path.read_bytes()).decode("ascii")
    return f'<img alt="{html.escape(alt)}" src="data:image/png;base64,{data}">'


def _cell(text: str) -> str:
    """A table cell's text: escaped, `code` spans as <code>."""
    parts = html.escape(text).split("`")
    return "".join(f"<code>{part}</code>" if i % 2 else part for i, part in enumerate(parts))


def table(one: Any, root: Path | None = None) -> str:
    """A :class:`fsxlt.report.tables.Table` (its title a heading) and, under it, its
    plots inline (read from ``root``, the folder its image paths are relative to)."""
    lines = [f"<h3>{_cell(one.title)}</h3>", "<table>", "<thead><tr>"
             + "".join(f"<th>{_cell(h)}</th>" for h in one.header) + "</tr></thead>", "<tbody>"]
    lines += ["<tr>" + "".join(f"<td>{_cell(c)}</td>" for c in row) + "</tr>"
              for row in one.rows]
    lines += ["</tbody>", "</table>"]
    if root is not None:
        lines += [image(root / rel, Path(rel).stem) for rel in one.images]
    return "\n".join(lines)


def notes(lines: Sequence[str]) -> str:
    """The report's notes: a paragraph per line, ``- item`` lines as a list."""
    out, items = [], []
    for line in [*lines, ""]:
        if line.startswith("- "):
            items.append(f"<li>{_cell(line[2:])}</li>")
            continue
        if items:
            out.append("<ul>" + "".join(items) + "</ul>")
            items = []
        if line:
            out.append(f"<p>{_cell(line)}</p>")
    return "\n".join(out)


def page(title: str, sections: Sequence[str]) -> str:
    """The whole document."""
    return ("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
            f"<title>{html.escape(title)}</title>\n<style>{STYLE}</style>\n</head>\n<body>\n"
            f"<h1>{html.escape(title)}</h1>\n" + "\n".join(sections) + "\n</body>\n</html>\n")
