"""Benchmark regime multi: one training per language against one training for all of them.

    python scripts/bench_multi.py [--work DIR] [--task synth-ner] [--buckets 4]
        [--lrs 0.001 0.0003] [--max-epochs 10] [--patience 3] [--threads 1] [--json OUT.json]

The demo's synthetic benchmark (the quick demo's data, tiny encoder, buckets and
English checkpoint, built under ``--work`` and reused on a second call) gives a
three-language multi sweep (svo80, svo20, sov20 trained together, K=1 and 4,
``--buckets`` buckets each, every learning rate of ``--lrs``). It runs twice in
one process, on one worker with ``--threads`` torch threads:

(a) **per language** (``shared_multi: false``, fsxlt 0.5.0's way): each language's
    run trains the shared model again and selects on its own dev set;
(b) **shared** (the default): each (K, bucket, lr) trains once while every
    language follows its own dev set (:mod:`fsxlt.training.shared`).

The two runs directories must hold the same records but for timings, or the
script prints the first difference and exits with status 1. The report gives the
wall time of each way, their ratio, the trainings each ran (counted), and the
epochs trained against the epochs the per-language way trained.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

import torch

from fsxlt.demo.config import load_demo_config
from fsxlt.demo.stages import Layout, stage_buckets, stage_data, stage_encoder, stage_source
from fsxlt.execution import parse_config, run_sweep
from fsxlt.training import AdaptEngine, strip_timings

LANGUAGES = ("sov20", "svo20", "svo80")


def build_study(work: Path, threads: int) -> Layout:
    """The quick demo's data, encoder, buckets and English checkpoints (reused when there)."""
    config = load_demo_config("quick")
    layout = Layout(work / "demo", work / "demo" / "encoders")
    quiet = lambda line: None  # noqa: E731
    stage_data(layout, config, quiet)
    encoder = stage_encoder(layout, config, threads, quiet)
    stage_buckets(layout, config, quiet)
    stage_source(encoder, layout, config, threads, False, quiet)
    return layout


def sweep(layout: Layout, out: Path, args: argparse.Namespace, shared: bool) -> dict[str, Any]:
    task = args.task
    return {"name": "bench-multi", "out": str(out), "buckets": str(layout.buckets),
            "data_dir": str(layout.data / task), "start": str(layout.ckpt / task),
            "methods": ["full"], "n_buckets": args.buckets, "lrs": args.lrs,
            "max_epochs": args.max_epochs, "patience": args.patience, "regimes": ["multi"],
            "joint": {"source_train": str(layout.data / task / "train-en.tsv"),
                      "batch_size": 16, "steps_per_epoch": 2, "languages": list(LANGUAGES)},
            "shared_multi": shared,
            "tasks": {task: {"languages": list(LANGUAGES), "k": [1, 4]}}}


def records(runs: Path) -> dict[str, dict]:
    return {p.relative_to(runs).as_posix(): strip_timings(json.loads(p.read_text()))
            for p in sorted(runs.glob("*/*/k*/*/*.json"))}


def timed(layout: Layout, out: Path, args: argparse.Namespace, shared: bool,
          ) -> tuple[float, int, int]:
    """Run the sweep; its wall time, the trainings it ran and the epochs they trained."""
    trainings, epochs = [0], [0]
    original = AdaptEngine._run_followed

    def counted(self, *call, **kwargs):
        results = original(self, *call, **kwargs)
        trainings[0] += 1
        epochs[0] += max(run["stopped_epoch"] for run, _ in results)
        return results

    AdaptEngine._run_followed = counted
    try:
        began = time.perf_counter()
        result = run_sweep(parse_config(sweep(layout, out, args, shared)), workers=0,
                           device="cpu", threads=args.threads)
        wall = time.perf_counter() - began
    finally:
        AdaptEngine._run_followed = original
    if result.failed:
        sys.exit(f"{len(result.failed)} runs failed: {result.failed[0]}")
    return wall, trainings[0], epochs[0]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--work", type=Path, default=Path("bench-multi"))
    parser.add_argument("--task", default="synth-ner", choices=["synth-ner", "synth-pos"])
    parser.add_argument("--buckets", type=int, default=4)
    parser.add_argument("--lrs", type=float, nargs="+", default=[1e-3, 3e-4])
    parser.add_argument("--max-epochs", type=int, default=10)
    parser.add_argument("--patience", type=int, default=3)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    layout = build_study(args.work, args.threads)
    ways = {}
    for name, shared in (("per_language", False), ("shared", True)):
        out = args.work / f"runs-{name}"
        if out.exists():
            sys.exit(f"{out}: exists; give another --work or remove it")
        ways[name] = (*timed(layout, out, args, shared), records(out))
    per, shared = ways["per_language"], ways["shared"]
    figures = {
        "task": args.task, "languages": list(LANGUAGES), "k": [1, 4], "buckets": args.buckets,
        "lrs": args.lrs, "max_epochs": args.max_epochs, "patience": args.patience,
        "threads": args.threads, "records": len(shared[3]),
        "per_language_s": round(per[0], 1), "shared_s": round(shared[0], 1),
        "speedup": round(per[0] / shared[0], 2),
        "per_language_trainings": per[1], "shared_trainings": shared[1],
        "per_language_epochs": per[2], "shared_epochs": shared[2],
        "records_identical": per[3] == shared[3],
    }
    print(json.dumps(figures, indent=1))
    if args.json:
        args.json.write_text(json.dumps(figures, indent=1) + "\n", encoding="utf-8")
    if per[3] != shared[3]:
        differing = sorted(p for p in per[3] if per[3][p] != shared[3].get(p))
        print(f"records differ, first: {differing[:1]}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
