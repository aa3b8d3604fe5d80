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
