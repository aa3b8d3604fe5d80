"""Write each results page's tables as a CSV beside it, one row per table cell.

Every page of docs/results/ keeps its numbers in Markdown tables; this writes
``docs/results/<page>.csv`` with the columns ``table`` (1, 2, ... in page
order), ``row`` (the row's first cell), ``column`` (the header) and ``value``
(the cell as printed: a mean ± std, a paired difference with its interval, a
list of per-bucket scores), so that a rerun's numbers can be set beside the
page's cell by cell, or bucket by bucket where the page prints buckets.

    python scripts/results_tables.py            # every page; --check: fail if one is stale
"""

from __future__ import annotations

import argparse
import csv
import io
import sys
from pathlib import Path

RESULTS = Path(__file__).resolve().parents[1] / "docs" / "results"


def cells(text: str) -> list[str]:
    """A Markdown table row's cells, without the outer pipes and bold marks."""
    return [cell.strip().replace("**", "") for cell in text.strip().strip("|").split("|")]


def tables(page: str) -> list[tuple[list[str], list[list[str]]]]:
    """``(header, rows)`` of every Markdown table of ``page``, code blocks left out."""
    found, in_code, block = [], False, []
    for line in [*page.splitlines(), ""]:
        if line.startswith("```"):
            in_code = not in_code
        if not in_code and line.startswith("|"):
            block.append(line)
            continue
        header = cells(block[0]) if block else []
        if len(block) >= 3 and set(block[1].replace("|", "").strip()) <= set("-: ") \
                and any(header):  # a page's facts (a table without a header) are no scores
            found.append((header, [cells(row) for row in block[2:]]))
        block = []
    return found


class MalformedTable(ValueError):
    """A table row with another number of cells than its header."""


def page_csv(page: str, name: str = "page") -> str:
    """The page's tables as the CSV's rows; a row whose cells do not match its table's
    header raises :class:`MalformedTable` naming the table and the row."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(["table", "row", "column", "value"])
    for number, (header, rows) in enumerate(tables(page), 1):
        for row in rows:
            if len(row) != len(header):
                raise MalformedTable(f"{name}: table {number}, row {row[0]!r}: {len(row)} "
                                     f"cells under a header of {len(header)}")
            for column, value in zip(header[1:], row[1:], strict=True):
                writer.writerow([number, row[0], column, value])
    return out.getvalue()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true",
                        help="write nothing; exit 1 if a CSV differs from its page's tables")
    args = parser.parse_args(argv)
    stale = []
    for page in sorted(RESULTS.glob("20*.md")):
        try:
            text = page_csv(page.read_text(encoding="utf-8"), str(page))
        except MalformedTable as err:
            sys.exit(f"error: {err}")
        target = page.with_suffix(".csv")
        has_cells = text.count("\n") > 1
        if args.check:
            now = target.read_text(encoding="utf-8") if target.is_file() else None
            if now != (text if has_cells else None):
                stale.append(target.name)
        elif has_cells:
            target.write_text(text, encoding="utf-8")
            print(f"{target}: {text.count(chr(10)) - 1} cells")
    if stale:
        sys.exit(f"stale: {', '.join(stale)} (run python scripts/results_tables.py)")


if __name__ == "__main__":
    main()
