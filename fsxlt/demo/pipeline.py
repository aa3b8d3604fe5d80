"""``run_demo``: the stages in order, timed, and the summary they end with."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from dataclasses import asdict, fields
from pathlib import Path
from typing import Any

from fsxlt.demo.config import DemoConfig, load_demo_config
from fsxlt.demo.findings import findings, summary_cells
from fsxlt.demo.stages import (
    STAGES,
    Layout,
    Log,
    stage_buckets,
    stage_data,
    stage_encoder,
    stage_report,
    stage_source,
    stage_strategies,
    stage_sweep,
)
from fsxlt.errors import FsxltError
from fsxlt.fileio import atomic_write_json

DEMO_FORMAT = "fsxlt-demo/1"
SUMMARY_FILE = "summary.json"
DEMO_MARKER = ".fsxlt-demo"  # written first: this folder is the demo's


def claim_demo_folder(out: Path) -> None:
    """Make ``out`` the demo's folder, or refuse in one line before anything is written.

    The demo owns only a folder it created: a new or empty one (marked now), or one
    it marked before (or, from before markers, whose ``summary.json`` is a demo's).
    Anything else, a sweep's runs directory or a bucket store above all, is refused:
    the demo's stages would reuse and replace what they find there.
    """
    from fsxlt.fileio import read_json
    from fsxlt.study.directories import KINDS, enclosing

    if out.exists() and not out.is_dir():
        raise FsxltError(f"{out}: --out is a file; the demo needs a folder of its own")
    found = enclosing(out)
    if found is not None:
        raise FsxltError(f"{out}: --out is or lies inside {found[1]}, a {KINDS[found[0]]}; "
                         "the demo needs a new or empty folder of its own")
    if out.is_dir() and any(out.iterdir()) and not (out / DEMO_MARKER).is_file():
        try:
            summary = read_json(out / SUMMARY_FILE)
        except FsxltError:
            summary = None
        if not (isinstance(summary, dict) and summary.get("format") == DEMO_FORMAT):
            raise FsxltError(f"{out}: not a folder fsxlt demo created (it holds other "
                             "files); give --out a new or empty folder")
    atomic_write_json(out / DEMO_MARKER, {"kind": "demo", "format": DEMO_FORMAT})


def _default_threads(workers: int) -> int:
    import os

    return max(1, (os.cpu_count() or 1) // max(1, workers))


def _stderr(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def run_demo(out: str | Path, config: DemoConfig | str | Path = "demo", *,
             encoder_cache: str | Path | None = None, workers: int | None = None,
             progress: bool = True, log: Log | None = None) -> dict[str, Any]:
    """Run the whole demo under ``out``; return the summary (also in ``OUT/summary.json``).

    ``config``: a :class:`DemoConfig`, a shipped config name or a YAML path.
    ``encoder_cache``: where the tiny encoder is cached (default ``OUT/encoders``).
    ``workers`` overrides the config's sweep processes. ``log`` receives one
    line per stage (default: stderr); ``progress`` shows progress bars.
    """
    began = time.perf_counter()
    config = config if isinstance(config, DemoConfig) else load_demo_config(config)
    workers = config.workers if workers is None else workers
    if workers < 0:
        raise FsxltError("workers must be >= 0")
    config = DemoConfig(**{**{f.name: getattr(config, f.name) for f in fields(config)},
                           "workers": workers})
    log = log or _stderr
    out = Path(out)
    claim_demo_folder(out)
    layout = Layout(out, Path(encoder_cache) if encoder_cache else out / "encoders")
    threads_all = config.threads or _default_threads(1)
    stages: dict[str, float] = {}

    def stage(name: str, fn: Callable[[], Any]) -> Any:
        log(f"[{STAGES.index(name) + 1}/{len(STAGES)}] {name} ...")
        started = time.perf_counter()
        value = fn()
        stages[name] = round(time.perf_counter() - started, 1)
        return value

    description = stage("data", lambda: stage_data(layout, config, log))
    encoder = stage("encoder", lambda: stage_encoder(layout, config, threads_all, log))
    stage("buckets", lambda: stage_buckets(layout, config, log))
    stage("source", lambda: stage_source(encoder, layout, config, threads_all, progress, log))
    failed = stage("sweep", lambda: stage_sweep(
        layout, config, config.threads or _default_threads(workers), progress, log))
    stage("report", lambda: stage_report(layout, config))
    strategies = stage("strategies", lambda: stage_strategies(
        layout, config, config.threads or _default_threads(workers), progress, log))
    cells = summary_cells(layout)
    languages = [lang for lang in description["languages"]]
    summary = {
        "format": DEMO_FORMAT, "config": config.source_file, "name": config.name,
        "out": str(out), "report": str(layout.report / "report.md"), "runs": str(layout.runs),
        "encoder": str(encoder), "tasks": [[task, list(ks)] for task, ks in config.tasks],
        "target_languages": list(config.languages), "n_buckets": config.n_buckets,
        "languages": languages, "cells": cells,
        "n_runs": sum(1 for c in cells if c["k"] > 0 for _ in range(c["n"])),
        "n_failed": failed, "stage_seconds": stages,
        "strategies": ({**asdict(config.strategies), "names": list(config.strategies.names),
                        "judged": strategies} if config.strategies else None),
        "wall_time_s": round(time.perf_counter() - began, 1),
    }
    summary["findings"] = findings(cells, languages, config.tasks)
    atomic_write_json(out / SUMMARY_FILE, summary)
    return summary
