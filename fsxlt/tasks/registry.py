"""The built-in tasks (``configs/<task>.yaml``), a benchmark's tasks, and a task by name
or YAML path."""

from __future__ import annotations

from functools import cache
from importlib import resources
from pathlib import Path

import yaml

from fsxlt.errors import FsxltError, did_you_mean
from fsxlt.fileio import parse_yaml
from fsxlt.tasks.parse import parse_task
from fsxlt.tasks.spec import UNLABELLED_KINDS, TaskSpec


def _builtin_config_dir():
    return resources.files("fsxlt").joinpath("configs")


@cache
def builtin_tasks() -> dict[str, TaskSpec]:
    """All tasks shipped in ``configs/``, by name."""
    tasks: dict[str, TaskSpec] = {}
    for entry in sorted(_builtin_config_dir().iterdir(), key=lambda e: e.name):
        if not entry.name.endswith(".yaml"):
            continue
        raw = yaml.load(entry.read_text(encoding="utf-8"),  # libyaml's: CLI help reads all
                        Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
        if isinstance(raw, dict) and "kind" in raw and (
                "labels" in raw or raw["kind"] in UNLABELLED_KINDS):
            spec = parse_task(raw, where=f"configs/{entry.name}")
            tasks[spec.name] = spec
    return tasks


def benchmark_tasks(benchmark: str) -> tuple[str, ...]:
    """The built-in tasks whose YAML says ``benchmark: <benchmark>``, by name."""
    return tuple(sorted(name for name, spec in builtin_tasks().items()
                        if spec.benchmark == benchmark))


def get_task(name_or_path: str | TaskSpec) -> TaskSpec:
    """Look up a task by name, or load it from a YAML file path.

    Raises a one-line :class:`FsxltError` listing the valid names when the
    task is unknown.
    """
    if isinstance(name_or_path, TaskSpec):
        return name_or_path
    tasks = builtin_tasks()
    if name_or_path in tasks:
        return tasks[name_or_path]
    path = Path(name_or_path)
    if path.suffix in (".yaml", ".yml") and path.is_file():
        raw = parse_yaml(path.read_text(encoding="utf-8"), str(path))
        return parse_task(raw, where=str(path))
    raise FsxltError(f"unknown task {name_or_path!r}{did_you_mean(name_or_path, tasks)}; "
                     f"valid: {', '.join(sorted(tasks))}")
