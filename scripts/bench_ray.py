"""Benchmark the Ray executor on a three-node cluster against the local executor.

    python scripts/bench_ray.py [--work DIR] [--task synth-ner] [--buckets 4]
        [--max-epochs 5] [--start-size mbert|small] [--json OUT.json]

The quick demo's synthetic benchmark (data, tiny encoder, buckets and English
checkpoint, built under ``--work`` and reused on a second call) gives a sweep of
three languages (three groups), K=1 and 4, ``--buckets`` buckets each, with
``--save-predictions``. In one process it runs:

(a) **local**: the local executor, two worker processes of one torch thread;
(b) **cluster**: the Ray executor on a ``ray.cluster_utils.Cluster`` of three nodes on
    this machine (a head that runs nothing, two worker nodes of one CPU), every input
    shipped through the object store and every record sent back, as on a cluster
    without a shared disk. The driver's resident memory is sampled every 50 ms while
    records stream back.

Both must write the same records (timings aside), else the script exits with status 1.
Then a start of mBERT's size (a BERT built from mBERT's config: 119,547 wordpieces,
12 layers, hidden 768; about 0.7 GB of float32 safetensors; ``--start-size small``
for a quick try) is shipped: the driver's read, hash and put, and a worker node's
fetch, check and write into its cache, each timed, and a second group's lookup of the
same start (no transfer). The report gives runs per minute for each executor and
their ratio, the shipping times and throughput, and the driver's memory.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import threading
import time
from pathlib import Path
from typing import Any

from fsxlt.demo.config import load_demo_config
from fsxlt.demo.stages import Layout, stage_buckets, stage_data, stage_encoder, stage_source
from fsxlt.execution import parse_config, run_sweep
from fsxlt.training import strip_timings

LANGUAGES = ("sov20", "svo20", "svo80")
MBERT = {"vocab_size": 119547, "hidden_size": 768, "num_hidden_layers": 12,
         "num_attention_heads": 12, "intermediate_size": 3072}
SMALL = {"vocab_size": 30000, "hidden_size": 256, "num_hidden_layers": 4,
         "num_attention_heads": 4, "intermediate_size": 1024}


def build_study(work: Path) -> Layout:
    """The quick demo's data, encoder, buckets and English checkpoints (reused when there)."""
    config = load_demo_config("quick")
    layout = Layout(work / "demo", work / "demo" / "encoders")
    quiet = lambda line: None  # noqa: E731
    stage_data(layout, config, quiet)
    encoder = stage_encoder(layout, config, 1, quiet)
    stage_buckets(layout, config, quiet)
    stage_source(encoder, layout, config, 1, False, quiet)
    return layout


def sweep_config(layout: Layout, out: Path, args: argparse.Namespace) -> dict[str, Any]:
    task = args.task
    return {"name": "bench-ray", "out": str(out), "buckets": str(layout.buckets),
            "data_dir": str(layout.data / task), "start": str(layout.ckpt / task),
            "methods": ["full"], "n_buckets": args.buckets, "lrs": [1e-3],
            "max_epochs": args.max_epochs, "patience": args.max_epochs,
            "tasks": {task: {"languages": list(LANGUAGES), "k": [1, 4]}}}


def records(runs: Path) -> dict[str, Any]:
    return {p.relative_to(runs).as_posix(): strip_timings(json.loads(p.read_text()))
            for p in sorted(runs.glob("*/*/k*/*/*.json"))}


def rss_mb() -> float:
    with open("/proc/self/status", encoding="ascii") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


class MemorySampler:
    """The driver's resident memory, sampled every 50 ms while a block runs."""

    def __init__(self) -> None:
        self.peak = self.before = rss_mb()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def _sample(self) -> None:
        while not self._stop.wait(0.05):
            self.peak = max(self.peak, rss_mb())

    def __enter__(self) -> MemorySampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._stop.set()
        self._thread.join()


def timed_sweep(config: dict[str, Any], **options: Any) -> tuple[float, int]:
    began = time.perf_counter()
    result = run_sweep(parse_config(config), save_predictions=True, note=lambda line: None,
                       **options)
    wall = time.perf_counter() - began
    if result.failed or result.not_run:
        sys.exit(f"{len(result.failed)} runs failed, {result.not_run} not run")
    return wall, len(result.completed)


def make_start(work: Path, size: str) -> Path:
    """A BERT of ``size`` built from a config and saved as safetensors (reused when there)."""
    from transformers import BertConfig, BertModel

    folder = work / f"start-{size}"
    if not (folder / "model.safetensors").is_file():
        BertModel(BertConfig(**(MBERT if size == "mbert" else SMALL))).save_pretrained(folder)
    return folder


def ship_start(ray: Any, folder: Path, cache: Path) -> dict[str, float]:
    """Time the driver's put and a worker node's fetch of ``folder``; then the lookup of a
    second group that reads the same start."""
    from fsxlt.execution.shipping import Shipper, unpack

    size = sum(p.stat().st_size for p in folder.iterdir() if p.is_file())
    shipper = Shipper(ray.put)
    began = time.perf_counter()
    parcel = shipper.parcel(str(folder))
    put_s = time.perf_counter() - began

    @ray.remote(num_cpus=1)
    def fetch(parcels: list[Any], root: str) -> float:
        began = time.perf_counter()
        unpack(parcels, ray.get, Path(root))
        return time.perf_counter() - began

    fetch_s = ray.get(fetch.remote([parcel], str(cache)))
    began = time.perf_counter()
    again = shipper.parcel(str(folder))
    second_s = time.perf_counter() - began + ray.get(fetch.remote([again], str(cache)))
    return {"start_mb": round(size / 2**20, 1), "put_s": round(put_s, 2),
            "fetch_s": round(fetch_s, 2), "second_group_s": round(second_s, 3),
            "put_mb_per_s": round(size / 2**20 / put_s, 1),
            "fetch_mb_per_s": round(size / 2**20 / fetch_s, 1),
            "bytes_put_twice": shipper.bytes_put > size}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--work", type=Path, default=Path("bench-ray"))
    parser.add_argument("--task", default="synth-ner", choices=["synth-ner", "synth-pos"])
    parser.add_argument("--buckets", type=int, default=4)
    parser.add_argument("--max-epochs", type=int, default=5)
    parser.add_argument("--start-size", default="mbert", choices=["mbert", "small"])
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args(argv)
    import ray
    from ray.cluster_utils import Cluster

    layout = build_study(args.work)
    outs = {name: args.work / f"runs-{name}" for name in ("local", "cluster")}
    for out in outs.values():
        if out.exists():
            sys.exit(f"{out}: exists; give another --work or remove it")
    local_s, n = timed_sweep(sweep_config(layout, outs["local"], args), workers=2, threads=1,
                             device="cpu")
    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 0})
    cache = args.work / "node-cache"
    env = {"FSXLT_RAY_CACHE": str(cache)}
    for _ in range(2):
        cluster.add_node(num_cpus=1, env_vars=env)
    cluster.wait_for_nodes()
    ray.init(address=cluster.address, include_dashboard=False, log_to_driver=False)
    try:
        with MemorySampler() as memory:
            cluster_s, _ = timed_sweep(sweep_config(layout, outs["cluster"], args),
                                       executor="ray", device="cpu")
        shipping = ship_start(ray, make_start(args.work, args.start_size), cache)
    finally:
        ray.shutdown()
        cluster.shutdown()
    same = records(outs["local"]) == records(outs["cluster"])
    figures = {
        "task": args.task, "languages": list(LANGUAGES), "k": [1, 4], "buckets": args.buckets,
        "max_epochs": args.max_epochs, "runs": n, "cpus": os.cpu_count(),
        "local_runs_per_min": round(n / local_s * 60, 1),
        "cluster_runs_per_min": round(n / cluster_s * 60, 1),
        "cluster_over_local": round(local_s / cluster_s, 2),
        "driver_rss_mb_before": round(memory.before, 1),
        "driver_rss_mb_peak": round(memory.peak, 1),
        "start": args.start_size, **shipping, "records_identical": same,
    }
    print(json.dumps(figures, indent=1))
    if args.json:
        args.json.write_text(json.dumps(figures, indent=1) + "\n", encoding="utf-8")
    if not same:
        print("the cluster's records differ from the local executor's", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
