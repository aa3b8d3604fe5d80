"""The seven stages of the demo, each writing under ``OUT`` and reusing what a previous run
left there (see :mod:`fsxlt.demo`).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from fsxlt.demo.config import DemoConfig
from fsxlt.errors import FsxltError
from fsxlt.fileio import sha256_file, sha256_text
from fsxlt.synthetic.benchmark import DEFAULT_SIZES

Log = Callable[[str], None]
STAGES = ("data", "encoder", "buckets", "source", "sweep", "report", "strategies")


@dataclass(frozen=True)
class Layout:
    """Where each stage writes under the demo's output directory."""

    out: Path
    encoder_cache: Path

    @property
    def data(self) -> Path:
        return self.out / "data"

    @property
    def buckets(self) -> Path:
        return self.out / "buckets"

    @property
    def ckpt(self) -> Path:
        return self.out / "ckpt"

    @property
    def runs(self) -> Path:
        return self.out / "runs"

    @property
    def report(self) -> Path:
        return self.out / "report"


def _data_is_current(layout: Layout, config: DemoConfig) -> bool:
    """True if ``OUT/data`` holds exactly what :func:`stage_data` would write."""
    path = layout.data / "benchmark.json"
    if not path.is_file():
        return False
    try:
        description = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError):
        return False
    wanted_sizes = {task: {**DEFAULT_SIZES, **config.sizes} for task in config.task_names}
    if (description.get("seed") != config.seed
            or description.get("tasks") != config.task_names
            or description.get("sizes") != wanted_sizes
            or description.get("corpus_sentences") != config.corpus_sentences):
        return False
    files = description.get("files") or {}
    for rel, digest in files.items():
        file = layout.data / rel
        if not file.is_file() or sha256_file(file) != digest:
            return False
    return bool(files)


def stage_data(layout: Layout, config: DemoConfig, log: Log) -> dict[str, Any]:
    """Generate the synthetic benchmark (all languages of the family, the config's tasks)."""
    from fsxlt.synthetic import generate_benchmark, read_description

    if _data_is_current(layout, config):
        log(f"data: reusing {layout.data}")
    else:
        generate_benchmark(layout.data, config.seed, sizes=dict(config.sizes),
                           tasks=config.task_names, corpus_sentences=config.corpus_sentences)
        log(f"data: wrote {layout.data}")
    return read_description(layout.data)


def stage_encoder(layout: Layout, config: DemoConfig, threads: int, log: Log) -> Path:
    """Build the tiny encoder, or find it in the cache."""
    from fsxlt.synthetic import build_tiny_encoder

    return build_tiny_encoder(layout.data, layout.encoder_cache, config.seed,
                              settings=config.encoder, threads=threads, log=log)


def _set_is_current(directory: Path, source_sha: str, config: DemoConfig) -> bool:
    from fsxlt.sampling.store import MANIFEST, read_manifest

    if not (directory / MANIFEST).is_file():
        return False
    try:
        manifest = read_manifest(directory)
    except FsxltError:
        return False
    return ((manifest.get("source") or {}).get("sha256") == source_sha
            and manifest.get("seed") == config.seed
            and len(manifest.get("buckets") or []) == config.n_buckets)


def stage_buckets(layout: Layout, config: DemoConfig, log: Log) -> None:
    """Sample ``n_buckets`` buckets per (task, language, K) from the targets' train splits.

    The demo owns ``OUT``: a set drawn by an earlier run with other settings
    (another seed, number of buckets or data) is replaced, and the log says
    how many were.
    """
    from fsxlt.sampling.api import sample
    from fsxlt.sampling.store import REPLACED, bucket_dir

    for task, ks in config.tasks:
        data_dir = layout.data / task
        todo = []
        for lang in config.languages:
            source_sha = sha256_file(data_dir / f"train-{lang}.tsv")
            if not all(_set_is_current(bucket_dir(layout.buckets, task, lang, k), source_sha,
                                       config) for k in ks):
                todo.append(lang)
        sets = []
        if todo:
            sets = sample(task, todo, list(ks), layout.buckets, data_dir=data_dir,
                          n_buckets=config.n_buckets, seed=config.seed, replace=True)
        reused = len(config.languages) - len(todo)
        replaced = sum(s.written is not None and s.written.status == REPLACED for s in sets)
        log(f"buckets: {task}: {len(config.languages)} languages x K {list(ks)} x "
            f"{config.n_buckets} buckets (sampled {len(todo)}, reusing {reused}"
            + (f"; replaced {replaced} sets of an earlier config)" if replaced else ")"))


def _source_key(task: str, encoder: Path, config: DemoConfig, data_dir: Path) -> str:
    """Everything a source-trained checkpoint depends on, hashed."""
    files = ["train-en.tsv", "dev-en.tsv"] + [f"{split}-{lang}.tsv" for lang in config.languages
                                               for split in ("dev", "test")]
    identity = {"task": task, "encoder": encoder.name, "settings": asdict(config.source),
                "targets": list(config.languages),
                "data": {name: sha256_file(data_dir / name) for name in files}}
    return sha256_text(json.dumps(identity, sort_keys=True))[:16]


def _checkpoint_key(directory: Path) -> str | None:
    from fsxlt.training.checkpoint import CHECKPOINT_FILE

    try:
        meta = json.loads((directory / CHECKPOINT_FILE).read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError):
        return None
    return (meta.get("demo") or {}).get("key") if isinstance(meta, dict) else None


def source_train_task(task: str, encoder: Path, layout: Layout, config: DemoConfig,
                      progress: bool, log: Log) -> Path:
    """Source-train one task on English (zero-shot scores for every target); reuse if current."""
    from fsxlt.data import load_split
    from fsxlt.training import save_checkpoint, source_train

    data_dir = layout.data / task
    target = layout.ckpt / task
    key = _source_key(task, encoder, config, data_dir)
    if _checkpoint_key(target) == key:
        log(f"source-train: {task}: reusing {target}")
        return target

    def split(lang: str, name: str) -> list:
        return load_split(task, lang, name, data_dir=data_dir).examples

    train = split("en", "train")[:config.source.train_limit]
    result = source_train(
        task, train, split("en", "dev"), model_name=str(encoder),
        target_dev={lang: split(lang, "dev") for lang in config.languages},
        target_test={lang: split(lang, "test") for lang in config.languages},
        sources={"train": str(data_dir / "train-en.tsv"), "dev": str(data_dir / "dev-en.tsv")},
        lrs=list(config.source.lrs), epochs=config.source.epochs,
        batch_size=config.source.batch_size, device="cpu", progress=progress)
    record = dict(result.record, demo={"key": key, "config": config.name})
    save_checkpoint(target, result.model, result.tokenizer, record, overwrite=True)
    sel = record["selection"]
    log(f"source-train: {task}: English dev {100 * sel['dev_score']:.1f} "
        f"(lr {sel['lr']:g}, epoch {sel['epoch']}) in {result.wall_time_s:.0f}s")
    return target


def stage_source(encoder: Path, layout: Layout, config: DemoConfig, threads: int,
                 progress: bool, log: Log) -> None:
    """Source-train every task with ``threads`` torch threads (restored afterwards)."""
    import torch

    from fsxlt.models.model import quiet_transformers

    quiet_transformers()
    previous = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        for task in config.task_names:
            source_train_task(task, encoder, layout, config, progress, log)
    finally:
        torch.set_num_threads(previous)


def sweep_config(layout: Layout, config: DemoConfig) -> dict[str, Any]:
    """The sweep config (as :func:`fsxlt.execution.parse_config` reads it) of the demo."""
    return {
        "name": f"fsxlt-{config.name}", "out": str(layout.runs), "buckets": str(layout.buckets),
        "data_dir": str(layout.data / "{task}"), "start": str(layout.ckpt / "{task}"),
        "methods": ["full"], "n_buckets": config.n_buckets, "lrs": list(config.adapt.lrs),
        "max_epochs": config.adapt.max_epochs, "patience": config.adapt.patience,
        "tasks": {task: {"languages": list(config.languages), "k": list(ks)}
                  for task, ks in config.tasks},
    }


def stage_sweep(layout: Layout, config: DemoConfig, threads: int, progress: bool,
                log: Log) -> int:
    """Adapt on every bucket (resuming); return the number of runs that failed or never ran."""
    from fsxlt.execution import parse_config, run_sweep

    sweep = parse_config(sweep_config(layout, config), f"{config.source_file} (sweep)")
    result = run_sweep(sweep, workers=config.workers, threads=threads, device="cpu",
                       progress=progress, replace=True, note=_sweep_note(log))
    status = result.status
    replaced = f", {len(status.replaced)} of them replacing records of an earlier config" \
        if status.replaced else ""
    log(f"sweep: {len(status.plan.runs)} runs ({len(status.plan.runs) - len(status.pending)} "
        f"reused, {len(result.completed)} run now{replaced}, {len(result.failed)} failed"
        + (f", {result.not_run} not run: rerun the demo to run them" if result.not_run else "")
        + ")")
    return len(result.failed) + result.not_run


def _sweep_note(log: Log) -> Callable[[str], None]:
    """A sweep's notes for the demo's log, less one line per replaced record (the demo
    owns ``OUT``: its sweeps replace records of an earlier config and count them)."""
    return lambda line: None if line.startswith("replacing ") else log(line)


def stage_report(layout: Layout, config: DemoConfig) -> list[Path]:
    """Tables and plots from the run records."""
    from fsxlt.report import write_report

    return write_report(layout.runs, layout.report, "md", expected=config.n_buckets)


def stage_strategies(layout: Layout, config: DemoConfig, threads: int, progress: bool,
                     log: Log) -> list[dict[str, Any]]:
    """Select buckets by every strategy, adapt on them (resuming), judge them against
    random; return the judgement rows (also ``OUT/report/strategies.md``)."""
    settings = config.strategies
    if settings is None:
        log("strategies: none configured")
        return []
    import torch

    from fsxlt.execution import parse_config, run_sweep
    from fsxlt.report import strategies_report
    from fsxlt.sampling.select import select
    from fsxlt.training.starts import pool_signals

    root = layout.out / "strategies"
    previous = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:  # the demo owns OUT: sets of an earlier config are replaced (and counted)
        selected = select(settings.task, settings.language, [settings.k], settings.names,
                          root / "buckets", data_dir=layout.data / settings.task,
                          start=layout.ckpt / settings.task, n_pools=settings.n_pools,
                          pool_size=settings.pool_size, seed=config.seed, device="cpu",
                          replace=True, signals_from=pool_signals)
    finally:
        torch.set_num_threads(previous)
    replaced = sum(s.written is not None and s.written.status == "replaced"
                   for sets in selected.values() for s in sets)
    failed = 0
    for name in settings.names:
        sweep = parse_config({
            "name": f"fsxlt-{config.name}-strategy-{name}", "out": str(root / "runs"),
            "buckets": str(root / "buckets" / name),
            "data_dir": str(layout.data / settings.task),
            "start": str(layout.ckpt / settings.task), "methods": ["full"],
            "n_buckets": settings.n_pools, "lrs": list(config.adapt.lrs),
            "max_epochs": config.adapt.max_epochs, "patience": config.adapt.patience,
            "tasks": {settings.task: {"languages": [settings.language], "k": [settings.k]}},
        }, f"{config.source_file} (strategy {name})")
        failed += len(run_sweep(sweep, workers=config.workers, threads=threads, device="cpu",
                                progress=progress, replace=True, note=_sweep_note(log)).failed)
    rows, _text = strategies_report(root / "runs", "md", layout.report, n_boot=2000)
    log(f"strategies: {len(settings.names)} strategies x {settings.n_pools} pools "
        f"({failed} failed runs" + (f"; replaced {replaced} bucket sets of an earlier config)"
                                    if replaced else ")"))
    return [{"strategy": r.strategy, "mean": round(r.mean, 2),
             "random_mean": round(r.random_mean, 2), "diff": round(r.diff, 2),
             "ci": [round(r.ci_low, 2), round(r.ci_high, 2)], "p_beat": round(r.p_beat, 2),
             "p_value": round(r.p_value, 4)} for r in rows.itertuples(index=False)]
