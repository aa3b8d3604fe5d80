"""The house (issue 31, mechanism 12): the import graph has no circles and no import that
runs up a layer (``scripts/import_graph.py``'s table), and training and sampling do not
lean on each other: a bucket (:mod:`fsxlt.data.buckets`) is the room both stand on.
fsxlt 0.2.0's ``training.records`` and ``training.adapt`` imported ``sampling.store``
while ``sampling.select`` imported ``training``."""

from __future__ import annotations

import importlib.util
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def import_graph():
    spec = importlib.util.spec_from_file_location("import_graph",
                                                  REPO / "scripts" / "import_graph.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_no_circles_and_no_upward_imports():
    graph = import_graph()
    _modules, edges = graph.build_graph(REPO / "fsxlt")
    assert graph.circles(edges) == []
    assert graph.upward_imports(edges) == []


def test_training_does_not_import_sampling():
    _modules, edges = import_graph().build_graph(REPO / "fsxlt")
    leaning = sorted((a, b) for a, targets in edges.items() if a.startswith("fsxlt.training")
                     for b in targets if b.startswith("fsxlt.sampling"))
    assert leaning == []
