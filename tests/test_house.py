"""The house (issues 31 and 44): the import graph has no circles and no import that
runs up a layer (``scripts/import_graph.py``'s table, deferred imports counted), every
module has a layer, the package root holds at most 8 loose modules beside its
packages, and training and sampling do not lean on each other: a bucket
(:mod:`fsxlt.data.buckets`) is the room both stand on. fsxlt 0.2.0's
``training.records`` and ``training.adapt`` imported ``sampling.store`` while
``sampling.select`` imported ``training``; 0.5.0's task registry imported the ICL
floor's prompts and the ICL floor imported the sweeps' input files."""

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


def test_every_module_has_a_layer():
    graph = import_graph()
    modules, _edges = graph.build_graph(REPO / "fsxlt")
    unplaced = [m for m in modules if "." in m and m != "fsxlt.__main__" and graph.layer(m) is None]
    assert unplaced == []


def test_at_most_eight_loose_modules():
    loose = sorted(p.name for p in (REPO / "fsxlt").glob("*.py") if p.name != "__init__.py")
    assert len(loose) <= 8, loose


def test_the_check_sees_a_deferred_upward_import_and_a_circle(tmp_path):
    """The check itself can fail: a deferred import from ``tasks`` up into ``icl`` and a
    circle between two modules of one layer are both found, with the importing line."""
    root = tmp_path / "fsxlt"
    (root / "icl").mkdir(parents=True)
    (root / "__init__.py").write_text("")
    (root / "icl" / "__init__.py").write_text("")
    (root / "icl" / "run.py").write_text("from fsxlt.tasks import spec\n")
    (root / "tasks.py").write_text("def spec():\n    from fsxlt.icl.run import x\n")
    (root / "data.py").write_text("import fsxlt.fileio\nimport fsxlt.tasks\n")
    (root / "fileio.py").write_text("import fsxlt.errors\n")
    (root / "errors.py").write_text("from fsxlt import fileio\n")
    graph = import_graph()
    _modules, edges = graph.build_graph(root)
    assert graph.upward_imports(edges) == [("fsxlt.tasks", "fsxlt.icl.run", 2)]
    assert graph.circles(edges) == [["fsxlt.errors", "fsxlt.fileio"],
                                    ["fsxlt.icl.run", "fsxlt.tasks"]]


def test_the_folders_form_no_loop():
    """Issue 51, item 16: 0.6.0's folders looped (study.submission imported sampling.fewclue,
    sampling.select imported training, training imports study); FewCLUE's facts now sit
    with its tasks (tasks.fewclue) and selection is handed the model's reader."""
    graph = import_graph()
    _modules, edges = graph.build_graph(REPO / "fsxlt")
    assert graph.circles(graph.folder_edges(edges)) == []


def test_the_folder_check_sees_a_loop_through_three_folders(tmp_path):
    root = tmp_path / "fsxlt"
    for folder, imports in (("study", "fsxlt.sampling.fewclue"),
                            ("sampling", "fsxlt.training.starts"),
                            ("training", "fsxlt.study.runs")):
        (root / folder).mkdir(parents=True)
        (root / folder / "__init__.py").write_text("")
        (root / folder / "a.py").write_text(f"def f():\n    import {imports}\n")
    for name in ("sampling/fewclue.py", "training/starts.py", "study/runs.py"):
        (root / name).write_text("")
    (root / "__init__.py").write_text("")
    graph = import_graph()
    _modules, edges = graph.build_graph(root)
    assert graph.circles(edges) == []  # no two modules import each other
    assert graph.circles(graph.folder_edges(edges)) == [
        ["fsxlt.sampling", "fsxlt.study", "fsxlt.training"]]
