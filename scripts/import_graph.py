"""The import graph of ``fsxlt``, drawn from its source: modules, circles, upward imports.

Every ``import``/``from ... import`` of an fsxlt module counts, at module level
or inside a function (a deferred import still ties two modules together).
``from fsxlt.a import b`` is an import of ``fsxlt.a.b`` when that is a module,
else of ``fsxlt.a``; importing a package counts as importing its ``__init__``.

Layers, lowest first; a module belongs to the layer of the longest name in the
table that it starts with (``fsxlt.training.adapt`` -> ``training``;
``fsxlt.sampling.store``, the bucket file format, sits with the data below the
rest of ``sampling``; the study's record files sit low, its submissions high).
A module may import its own layer and those below it; an import of a higher
layer "runs back up". The package root (``fsxlt/__init__.py``, a lazy name
table, and ``__main__``) is outside the layers and left out of the upward count.

    0  errors, fileio, config_checks, lazy, identity, plugins   (the ground floor)
    1  tasks, data, synthetic, study.runs, study.directories, sampling.store,
       sampling.set_compare, sampling.samplers   (what a task, its data and a record are)
    2  metrics                       (every metric; scoring prediction files)
    3  models                        (encoder and heads, featurizers, prediction, LoRA, PET)
    4  methods                       (what adapting changes; plug-ins)
    5  training, study.predictions   (source-training, adapting, loading starts)
    6  sampling, analysis, report, execution, study.submission, icl
    7  demo, cli

Prints, in order: every module with its number of lines (``--modules``), the
circles (strongly connected groups of two or more modules) and every upward
import, each with the file and line of the import statement.

    python scripts/import_graph.py [--modules] [--long] [--root fsxlt]

``--long`` also lists the modules over 600 lines and the functions over 80
(a typer command counted from its body: its option declarations are its
signature), the code standard's limits.
"""

from __future__ import annotations

import argparse
import ast
from collections.abc import Iterator
from pathlib import Path

LAYERS: tuple[tuple[str, ...], ...] = (
    ("errors", "fileio", "config_checks", "lazy", "identity", "plugins", "terminal"),
    ("tasks", "data", "synthetic", "study", "study.runs", "study.directories", "sampling.store",
     "sampling.set_compare", "sampling.manifest", "sampling.samplers"),
    ("metrics",),
    ("models",),
    ("methods",),
    ("training", "study.predictions"),
    ("sampling", "analysis", "report", "execution", "study.submission", "icl"),
    ("demo", "cli"),
)
LAYER_OF = {name: level for level, names in enumerate(LAYERS) for name in names}


def module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def find_modules(root: Path) -> dict[str, Path]:
    return {module_name(path, root): path for path in sorted(root.rglob("*.py"))}


def imported_names(tree: ast.AST, package: str, is_package: bool,
                   ) -> Iterator[tuple[str, int]]:
    """``(dotted name, line)`` of every fsxlt import in ``tree`` (relative ones resolved)."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, node.lineno
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                keep = len(parts) - node.level + (1 if is_package else 0)
                base = ".".join(parts[:keep] + ([base] if base else []))
            for alias in node.names:
                yield f"{base}.{alias.name}", node.lineno


def resolve(name: str, modules: dict[str, Path]) -> str | None:
    """The longest known module that ``name`` starts with."""
    parts = name.split(".")
    while parts:
        candidate = ".".join(parts)
        if candidate in modules:
            return candidate
        parts.pop()
    return None


def build_graph(root: Path) -> tuple[dict[str, Path], dict[str, dict[str, int]]]:
    """Modules and, per module, the fsxlt modules it imports with the first line of each."""
    modules = find_modules(root)
    edges: dict[str, dict[str, int]] = {}
    for name, path in modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        targets: dict[str, int] = {}
        for imported, line in imported_names(tree, name, path.name == "__init__.py"):
            target = resolve(imported, modules) if imported.startswith(root.name) else None
            if target is not None and target != name and not name.startswith(target + "."):
                targets.setdefault(target, line)
        edges[name] = targets
    return modules, edges


def circles(edges: dict[str, dict[str, int]]) -> list[list[str]]:
    """Strongly connected groups of two or more modules (Tarjan's algorithm, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for origin in sorted(edges):
        if origin in index:
            continue
        work = [(origin, iter(sorted(edges[origin])))]
        index[origin] = low[origin] = len(index)
        stack.append(origin)
        on_stack.add(origin)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(edges.get(child, {})))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                group = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    group.append(member)
                    if member == node:
                        break
                if len(group) > 1:
                    found.append(sorted(group))
    return sorted(found)


def folder_edges(edges: dict[str, dict[str, int]]) -> dict[str, dict[str, int]]:
    """The graph between the package's folders (``fsxlt.sampling.select`` is
    ``fsxlt.sampling``; a loose module is its own node): what a reader following arrows
    between folders sees. Its :func:`circles` are loops between folders."""
    def folder(module: str) -> str:
        return ".".join(module.split(".")[:2])

    found: dict[str, dict[str, int]] = {}
    for source, targets in edges.items():
        into = found.setdefault(folder(source), {})
        for target, line in targets.items():
            if folder(target) != folder(source):
                into.setdefault(folder(target), line)
    return found


def layer(module: str) -> int | None:
    """The layer of ``fsxlt.X...`` (longest listed prefix of ``X...``); None for the root."""
    parts = module.split(".")[1:]
    while parts:
        if ".".join(parts) in LAYER_OF:
            return LAYER_OF[".".join(parts)]
        parts.pop()
    return None


def upward_imports(edges: dict[str, dict[str, int]]) -> list[tuple[str, str, int]]:
    """``(importer, imported, line)`` where the imported module sits in a higher layer."""
    found = []
    for source, targets in sorted(edges.items()):
        for target, line in sorted(targets.items()):
            low, high = layer(source), layer(target)
            if low is not None and high is not None and high > low:
                found.append((source, target, line))
    return found


MAX_FUNCTION, MAX_MODULE = 80, 600  # the code standard's limits (--long)


def _is_command(node: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    """Whether a function is a CLI command (``@app.command``): its signature is its options."""
    for decorator in node.decorator_list:
        target = decorator.func if isinstance(decorator, ast.Call) else decorator
        if isinstance(target, ast.Attribute) and target.attr in {"command", "callback"}:
            return True
    return False


def function_lengths(path: Path) -> Iterator[tuple[str, int]]:
    """(qualified name, lines) of every function in a file: from its first decorator to its
    last line; a CLI command's from its body, so its option declarations do not count."""
    def visit(node: ast.AST, prefix: str) -> Iterator[tuple[str, int]]:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                first = (child.body[0].lineno if _is_command(child) else
                         min([child.lineno, *(d.lineno for d in child.decorator_list)]))
                yield f"{prefix}{child.name}", (child.end_lineno or child.lineno) - first + 1
                yield from visit(child, f"{prefix}{child.name}.")
            elif isinstance(child, ast.ClassDef):
                yield from visit(child, f"{prefix}{child.name}.")

    yield from visit(ast.parse(path.read_text(encoding="utf-8"), str(path)), "")


def print_long(modules: dict[str, Path], root: Path) -> None:
    """``--long``: modules over MAX_MODULE lines and functions over MAX_FUNCTION."""
    long_modules, long_functions = [], []
    for path in modules.values():
        shown = path.relative_to(root.parent)
        lines = len(path.read_text(encoding="utf-8").splitlines())
        if lines > MAX_MODULE:
            long_modules.append((lines, f"{shown}"))
        long_functions += [(n, f"{shown}:{name}") for name, n in function_lengths(path)
                           if n > MAX_FUNCTION]
    print(f"modules over {MAX_MODULE} lines: {len(long_modules)}")
    for lines, name in sorted(long_modules, reverse=True):
        print(f"  {name:50} {lines:5} lines")
    print(f"functions over {MAX_FUNCTION} lines (a command's options not counted): "
          f"{len(long_functions)}")
    for lines, name in sorted(long_functions, reverse=True):
        print(f"  {name:70} {lines:5} lines")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=Path, default=Path(__file__).resolve().parents[1]
                        / "fsxlt", help="the package directory (default: fsxlt)")
    parser.add_argument("--modules", action="store_true", help="also list every module")
    parser.add_argument("--long", action="store_true", help=f"also list modules over "
                        f"{MAX_MODULE} lines and functions over {MAX_FUNCTION}")
    args = parser.parse_args()
    root = args.root.resolve()
    modules, edges = build_graph(root)
    unplaced = sorted(m for m in modules
                      if "." in m and layer(m) is None and m != f"{root.name}.__main__")
    if unplaced:
        print(f"not in any layer: {', '.join(unplaced)}")
    total = sum(len(p.read_text(encoding="utf-8").splitlines()) for p in modules.values())
    print(f"{len(modules)} modules, {total} lines, "
          f"{sum(len(t) for t in edges.values())} imports between them")
    if args.modules:
        for name, path in modules.items():
            lines = len(path.read_text(encoding="utf-8").splitlines())
            print(f"  {name:40} {lines:5} lines  layer {layer(name)}")
    found = circles(edges)
    print(f"circles: {len(found)}")
    for group in found:
        print(f"  {' <-> '.join(group)}")
    upward = upward_imports(edges)
    print(f"upward imports: {len(upward)}")
    for source, target, line in upward:
        print(f"  {source} -> {target}  ({modules[source].relative_to(root.parent)}:{line}; "
              f"layer {layer(source)} -> {layer(target)})")
    if args.long:
        print_long(modules, root)


if __name__ == "__main__":
    main()
