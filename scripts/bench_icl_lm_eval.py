"""fsxlt icl against lm-evaluation-harness's own evaluator, on the same buckets, model and
test examples: ``python scripts/bench_icl.py --against lm-eval`` (see bench_icl.py).

For every cell (task and K) the script

1. splits the task's real dev file (``DATA_DIR/xnli/dev-LANG.tsv``,
   ``DATA_DIR/pawsx/dev-LANG.tsv``) into a pool (every line but the last
   ``--test-size``) and a test file (those last lines), and draws ``--buckets``
   buckets of K shots per label from the pool with ``fsxlt sample``;
2. exports every bucket as an lm-eval task (``fsxlt.icl.lm_eval_tasks``, what
   ``fsxlt buckets export-lm-eval`` writes: lm-eval's own XNLI / PAWS-X task, its
   few-shot split the bucket);
3. runs lm-eval: one ``HFLM`` loaded from the GGUF file (timed), then
   ``simple_evaluate`` on each bucket's task alone (timed: per-bucket time);
4. runs ``fsxlt icl --preset lm-eval`` once per cell, as a user would, over the
   whole set (timed: the command, model load included; each record's
   ``wall_time_s`` is its bucket's scoring time);
5. compares each test example's predicted label.

Both tools score in float32 on the CPU with the same threads; fsxlt in batches of
``--batch-size`` (8), lm-eval in batches of ``--lm-eval-batch-size`` (1, its default). The
per-bucket ratio excludes both model loads; the "including loads" ratio compares
lm-eval's load plus its buckets with the fsxlt command's whole time. Exit 1 when a
prediction differs.
"""

from __future__ import annotations

import argparse
import gc
import json
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

FAMILY = {"xnli": "xnli", "pawsx": "pawsx"}  # task -> folder under --data-dir
CELLS = ["xnli:1", "xnli:4", "xnli:8", "pawsx:1", "pawsx:4", "pawsx:8"]
QUICK = {"cells": ["xnli:1"], "buckets": 2, "test_size": 4}


@dataclass
class Cell:
    task: str
    k: int
    set_dir: Path = Path()
    test_file: Path = Path()
    lm_eval_tasks: list[str] = field(default_factory=list)
    lm_eval_s: list[float] = field(default_factory=list)
    lm_eval_predicted: dict[str, dict[str, int]] = field(default_factory=dict)
    fsxlt_s: list[float] = field(default_factory=list)
    fsxlt_command_s: float = 0.0
    fsxlt_predicted: dict[str, dict[str, int]] = field(default_factory=dict)

    @property
    def name(self) -> str:
        return f"{self.task} K={self.k}"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("--against lm-eval")
    group.add_argument("--data-dir", help="the real data: DATA_DIR/xnli, DATA_DIR/pawsx")
    group.add_argument("--cells", nargs="+", metavar="TASK:K",
                       help=f"cells to run (default: {' '.join(CELLS)})")
    group.add_argument("--buckets", type=int, help="buckets per cell (default 2)")
    group.add_argument("--work", help="keep the buckets, tasks and runs here (default: a "
                       "temporary folder)")
    group.add_argument("--lm-eval-batch-size", type=int, default=1,
                       help="lm-eval's batch size (default 1, lm-eval's own; at 8 its "
                       "whole-vocabulary log-softmax of every position of K=8 prompts "
                       "outgrows 24 GB)")
    group.add_argument("--quick", action="store_true",
                       help="one small cell: xnli K=1, 2 buckets, 4 test examples")


def split_dev(data_dir: Path, task: str, lang: str, test_size: int, work: Path
              ) -> tuple[Path, Path]:
    """The pool (every line but the last ``test_size``) and the test file (those)."""
    source = data_dir / FAMILY[task] / f"dev-{lang}.tsv"
    if not source.is_file():
        raise SystemExit(f"{source}: not found (--data-dir holds xnli/ and pawsx/)")
    lines = source.read_text(encoding="utf-8").splitlines(keepends=True)
    folder = work / "data" / task
    folder.mkdir(parents=True, exist_ok=True)
    pool, test = folder / f"pool-{lang}.tsv", folder / f"test-{lang}.tsv"
    pool.write_text("".join(lines[:-test_size]), encoding="utf-8")
    test.write_text("".join(lines[-test_size:]), encoding="utf-8")
    return pool, test


def run_cli(args: list[str]) -> float:
    """Run an fsxlt command in a process of its own, as a user does; its wall time
    (Python's start and fsxlt's imports included)."""
    began = time.perf_counter()
    status = subprocess.run([sys.executable, "-m", "fsxlt", *args], check=False).returncode
    if status != 0:
        raise SystemExit(f"fsxlt {' '.join(args[:1])} failed with status {status}")
    return time.perf_counter() - began


def prepare(cells: list[Cell], args: argparse.Namespace, work: Path) -> None:
    """Draw each cell's buckets and export them all as lm-eval tasks."""
    from fsxlt.icl.lm_eval_tasks import export_lm_eval

    tests: dict[tuple[str, str], Path] = {}
    for cell in cells:
        pool, cell.test_file = split_dev(Path(args.data_dir), cell.task, args.lang,
                                         args.test_size, work)
        tests[(cell.task, args.lang)] = cell.test_file
        run_cli(["sample", "--task", cell.task, "--lang", args.lang, "-k", str(cell.k),
                 "--n-buckets", str(args.buckets), "--data", str(pool), "--seed",
                 str(args.seed), "--out", str(work / "buckets")])
        cell.set_dir = work / "buckets" / cell.task / args.lang / f"k{cell.k}"
    exported = export_lm_eval(work / "buckets", work / "tasks",
                              lambda task, lang: tests.get((task, lang)))
    by_group = {one.group: one.tasks for one in exported}
    for cell in cells:
        cell.lm_eval_tasks = by_group[f"fsxlt_{cell.task}_{args.lang}_k{cell.k}"]


def run_lm_eval(cells: list[Cell], args: argparse.Namespace, work: Path) -> float:
    """lm-eval's evaluator on every bucket's task; its model load time."""
    import torch
    from lm_eval import simple_evaluate
    from lm_eval.models.huggingface import HFLM
    from lm_eval.tasks import TaskManager

    torch.set_num_threads(args.threads)
    began = time.perf_counter()
    model = HFLM(pretrained=args.model, gguf_file=args.gguf_file, dtype="float32",
                 device="cpu", batch_size=args.lm_eval_batch_size)
    load_s = time.perf_counter() - began
    manager = TaskManager(include_path=str(work / "tasks"))
    for cell in cells:
        for task in cell.lm_eval_tasks:
            began = time.perf_counter()
            results = simple_evaluate(model=model, tasks=[task], log_samples=True,
                                      task_manager=manager)
            cell.lm_eval_s.append(time.perf_counter() - began)
            cell.lm_eval_predicted[task] = {
                str(s["doc"]["id"]): _argmax([float(r[0]) for r in s["filtered_resps"]])
                for s in results["samples"][task]}
            print(f"lm-eval {task}: {cell.lm_eval_s[-1]:.1f} s", flush=True)
    del model  # its memory back before fsxlt runs
    gc.collect()
    return load_s


def _argmax(values: list[float]) -> int:
    return max(range(len(values)), key=values.__getitem__)


def run_fsxlt(cells: list[Cell], args: argparse.Namespace, work: Path) -> None:
    """``fsxlt icl --preset lm-eval`` over each cell's set, as one command per cell."""
    from fsxlt.study.predictions import read_predictions
    from fsxlt.study.runs import predictions_path, read_record
    from fsxlt.tasks import get_task

    for cell in cells:
        out = work / "runs"
        command = ["icl", "--task", cell.task, "--lang", args.lang, "--model", args.model,
                   "--bucket", str(cell.set_dir), "--test", str(cell.test_file),
                   "--preset", "lm-eval", "--save-predictions", "--threads",
                   str(args.threads), "--batch-size", str(args.batch_size), "--out", str(out)]
        if args.gguf_file:
            command += ["--gguf-file", args.gguf_file]
        cell.fsxlt_command_s = run_cli(command)
        labels = list(get_task(cell.task).labels)
        records = sorted((out / cell.task / args.lang / f"k{cell.k}").glob("*/*.json"))
        for record_path in records:
            record = read_record(record_path)
            if record is None:
                raise SystemExit(f"{record_path}: not a finished record")
            index = int(record["bucket"]["index"])
            name = f"fsxlt_{cell.task}_{args.lang}_k{cell.k}_b{index:02d}"
            cell.fsxlt_s.append(float(record["wall_time_s"]))
            rows = read_predictions(predictions_path(record_path)).rows
            cell.fsxlt_predicted[name] = {str(row["id"]): labels.index(row["predicted"])
                                          for row in rows}
        print(f"fsxlt {cell.name}: {cell.fsxlt_command_s:.1f} s for {len(records)} buckets",
              flush=True)


def differences(cell: Cell) -> tuple[int, int]:
    """(examples whose predictions differ, examples compared) in a cell."""
    differ = compared = 0
    for task, theirs in cell.lm_eval_predicted.items():
        mine = cell.fsxlt_predicted.get(task, {})
        for doc, label in theirs.items():
            compared += 1
            differ += mine.get(doc) != label
    return differ, compared


def table(cells: list[Cell], lm_eval_load: float, args: argparse.Namespace) -> list[dict]:
    rows = []
    for cell in cells:
        differ, compared = differences(cell)
        theirs, mine = statistics.mean(cell.lm_eval_s), statistics.mean(cell.fsxlt_s)
        with_loads = (lm_eval_load + sum(cell.lm_eval_s)) / cell.fsxlt_command_s
        rows.append({
            "cell": cell.name, "buckets": len(cell.fsxlt_s), "test_examples": args.test_size,
            "lm_eval_s_per_bucket": round(theirs, 2), "fsxlt_s_per_bucket": round(mine, 2),
            "ratio_per_bucket": round(theirs / mine, 2),
            "lm_eval_load_s": round(lm_eval_load, 1),
            "fsxlt_load_and_setup_s": round(cell.fsxlt_command_s - sum(cell.fsxlt_s), 1),
            "ratio_with_loads": round(with_loads, 2),
            "predictions_differ": differ, "predictions_compared": compared})
    return rows


def print_table(rows: list[dict]) -> None:
    print("| cell | buckets | lm-eval s/bucket | fsxlt s/bucket | ratio | lm-eval load s "
          "| fsxlt load+setup s | ratio with loads | predictions |")
    print("|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        same = "equal" if not r["predictions_differ"] else \
            f"{r['predictions_differ']} of {r['predictions_compared']} differ"
        print(f"| {r['cell']} | {r['buckets']} | {r['lm_eval_s_per_bucket']} | "
              f"{r['fsxlt_s_per_bucket']} | {r['ratio_per_bucket']}x | {r['lm_eval_load_s']} "
              f"| {r['fsxlt_load_and_setup_s']} | {r['ratio_with_loads']}x | {same} |")


def against_lm_eval(args: argparse.Namespace) -> int:
    import os
    import tempfile

    os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    if not args.model or not args.data_dir:
        raise SystemExit("--against lm-eval needs --model (and --gguf-file) and --data-dir")
    if args.quick:
        args.cells, args.buckets = QUICK["cells"], QUICK["buckets"]
        args.test_size = QUICK["test_size"]
    cells = []
    for spec in args.cells or CELLS:
        task, _, k = spec.partition(":")
        if task not in FAMILY or not k.isdigit():
            raise SystemExit(f"--cells {spec}: expected xnli:K or pawsx:K")
        cells.append(Cell(task, int(k)))
    args.buckets = args.buckets or 2
    args.test_size = args.test_size or 12
    with tempfile.TemporaryDirectory() as scratch:
        work = Path(args.work) if args.work else Path(scratch)
        if work.exists() and any(work.iterdir()):
            raise SystemExit(f"{work}: not empty; give a new --work folder")
        prepare(cells, args, work)
        load_s = run_lm_eval(cells, args, work)
        run_fsxlt(cells, args, work)
    rows = table(cells, load_s, args)
    print_table(rows)
    figures = {"model": args.model, "gguf_file": args.gguf_file, "language": args.lang,
               "threads": args.threads, "batch_size": args.batch_size,
               "lm_eval_batch_size": args.lm_eval_batch_size,
               "load_average": os.getloadavg(), "cells": rows}
    if args.json:
        Path(args.json).write_text(json.dumps(figures, indent=1) + "\n", encoding="utf-8")
    differ = sum(r["predictions_differ"] for r in rows)
    compared = sum(r["predictions_compared"] for r in rows)
    worst = min(r["ratio_per_bucket"] for r in rows)
    same = "predictions equal" if not differ else \
        f"predictions differ on {differ} of {compared} examples"
    print(f"lm-eval/fsxlt per bucket: {worst:.1f}x ({same})")
    return 1 if differ else 0
