#!/usr/bin/env python3
"""Write the small made-up NER file that the sampling example (docs/sampling.md) draws from.

The sentences are generated from a few templates and name lists, so the file
is ours to ship (no licensed data) and every run of this script writes the
same bytes:

    python scripts/make_example_data.py examples/panx-de-mini.tsv
"""

from __future__ import annotations

import random
import sys
from pathlib import Path

PEOPLE = ["Anna Schmidt", "Jonas Weber", "Lea Fischer", "Karl Becker", "Mia Wagner",
          "Paul Hoffmann", "Emma Schulz", "Felix Koch", "Sophie Richter", "Ben Wolf"]
PLACES = ["Berlin", "Hamburg", "München", "Köln", "Leipzig", "Dresden", "Bremen", "Bonn",
          "Nürnberg", "Rostock"]
ORGS = ["Deutsche Bahn", "Universität Leipzig", "FC Hansa", "Rotes Kreuz", "Siemens",
        "Bundestag", "Stadtwerke Bonn", "Goethe-Institut"]
TEMPLATES = [
    ["{PER}", "wohnt", "seit", "Jahren", "in", "{LOC}", "."],
    ["{PER}", "arbeitet", "bei", "der", "{ORG}", "."],
    ["Die", "{ORG}", "hat", "ihren", "Sitz", "in", "{LOC}", "."],
    ["Gestern", "besuchte", "{PER}", "die", "Stadt", "{LOC}", "."],
    ["Das", "Wetter", "war", "am", "Wochenende", "schön", "."],
    ["{PER}", "und", "{PER}", "trafen", "sich", "in", "{LOC}", "."],
    ["Der", "Vertrag", "mit", "der", "{ORG}", "läuft", "bis", "2030", "."],
]


def fill(template: list[str], rng: random.Random) -> list[tuple[str, str]]:
    pools = {"{PER}": ("PER", PEOPLE), "{LOC}": ("LOC", PLACES), "{ORG}": ("ORG", ORGS)}
    rows = []
    for slot in template:
        if slot in pools:
            kind, names = pools[slot]
            words = rng.choice(names).split()
            rows += [(w, ("B-" if i == 0 else "I-") + kind) for i, w in enumerate(words)]
        else:
            rows.append((slot, "O"))
    return rows


def main(out: str) -> None:
    rng = random.Random(2020)
    sentences = [fill(rng.choice(TEMPLATES), rng) for _ in range(120)]
    text = "\n\n".join("\n".join(f"{w}\t{t}" for w, t in s) for s in sentences) + "\n"
    Path(out).write_text(text, encoding="utf-8")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "examples/panx-de-mini.tsv")
