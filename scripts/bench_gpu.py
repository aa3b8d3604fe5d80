"""What the study costs on one device, measured through fsxlt's own code path.

For PAN-X and XNLI (the study's tagging and classification shapes) it:

1. builds an mBERT-shaped encoder from a config (12 layers, hidden 768, 12 heads,
   intermediate 3072, mBERT's vocabulary of 119,547; random weights, which time the
   same as trained ones) with a WordPiece tokenizer trained on the data's text
   (``--tiny``: a 2-layer, 32-dim one, for the CPU test);
2. source-trains it briefly on English (``fsxlt.training.source_train``, what
   ``fsxlt source-train`` runs) and samples buckets for up to ``--workers`` target
   languages (``fsxlt sample``);
3. times dev evaluation on the engine a sweep worker builds (dev wordpieces per
   second, the FLOP rate counted from the model's shapes and the padded batches
   actually fed, its share of the GPU's dense bf16 peak where the GPU is known) and
   the peak device memory of one worker adapting one bucket in this process;
4. runs a sweep (``fsxlt.execution.run_sweep``, what ``fsxlt sweep`` runs) over the
   study's learning-rate grid at a fixed number of epochs (``--epochs``; patience as
   large, so no run stops early), one group per target language with ``--workers``
   workers on the device, sampling the device's used memory while it runs;
5. extrapolates the whole study (``configs/sweeps/study.yaml``) in device-hours, in
   parts that grow with different things: dev evaluation (at the measured rate, by dev
   wordpieces), the rest of each epoch (training steps, weight resets, from the
   records' own clocks, by epochs), each record's fixed part (restore, test set) and
   each group's set-up, with every assumption printed: the study's dev sizes and
   wordpieces per example per task (docs/performance.md), the average number of
   epochs to the early stop (``--assumed-epochs``), classification tasks costed as
   XNLI's shape and tagging tasks as PAN-X's, head-only arms left out (their feature
   cache makes them nearly free).

Data: ``--data DIR`` holds ``panx/{train,dev}-{en,<targets>}.tsv`` and
``xnli/dev-{en,<targets>}.tsv`` as ``../shared/data`` has them. XNLI's English dev set
is split into a source train and dev set; every target's dev set is split in halves,
a pool (buckets, and the remaining dev set) and a test set; PAN-X's buckets come from
the target's train file and its dev set is split in halves into dev and test.

    python scripts/bench_gpu.py --data ../shared/data --device cuda --workers 4
    python scripts/bench_gpu.py --data DIR --tiny --device cpu --workers 2 --epochs 1

``--json FILE`` writes every figure. The figures are timings of this machine; nothing
here is asserted (the CPU test only checks that the script runs and says what it
measured).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import torch

from fsxlt.cli import run_app
from fsxlt.data import read_examples
from fsxlt.execution import parse_config, run_sweep
from fsxlt.execution.cost import STUDY_DEV_EXAMPLES, WORDPIECES, bench_rates
from fsxlt.execution.executors import resolve_precisions
from fsxlt.models.precision import PRECISIONS, device_name, resolve_precision
from fsxlt.sampling.store import read_bucket
from fsxlt.tasks import get_task
from fsxlt.training import AdaptEngine, save_checkpoint, source_train
from fsxlt.training.checkpoint import resolve_device

MBERT = {"vocab_size": 119547, "hidden_size": 768, "num_hidden_layers": 12,
         "num_attention_heads": 12, "intermediate_size": 3072}
TINY = {"vocab_size": 2000, "hidden_size": 32, "num_hidden_layers": 2,
        "num_attention_heads": 2, "intermediate_size": 64}
LRS = [1.0e-5, 3.0e-5, 5.0e-5, 7.0e-5]  # the study's grid (configs/sweeps/study.yaml)
# dense bf16 tensor-core peaks (NVIDIA's datasheets, without sparsity), TFLOP/s; the first
# name found in the device's name wins
PEAK_BF16_TFLOPS = (("H100 PCIe", 756.0), ("H100 NVL", 835.0), ("H200", 989.0),
                    ("GH200", 989.0), ("H100", 989.0), ("A100", 312.0), ("A800", 312.0),
                    ("L40S", 362.0), ("L4", 121.0), ("A10", 125.0), ("B200", 2250.0))
# the study's dev sets as published and their wordpieces per example (docs/performance.md;
# fsxlt sweep --dry-run costs a plan with the same figures)
STUDY_DEV = {task: (n, WORDPIECES[task]) for task, n in STUDY_DEV_EXAMPLES.items()}
SHAPE = {"xnli": "xnli", "pawsx": "xnli", "mldoc": "xnli", "marc": "xnli", "udpos": "panx",
         "panx": "panx"}
HEAD_ONLY = {"fc", "fc-pooler", "cos-pooler", "fc-reset-pooler"}


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--data", type=Path, required=True, help="panx/ and xnli/ files (see above)")
    p.add_argument("--device", default="auto")
    p.add_argument("--precision", default="auto", choices=PRECISIONS)
    p.add_argument("--workers", type=int, default=2, help="sweep workers on the device")
    p.add_argument("--tasks", nargs="+", default=["panx", "xnli"], choices=["panx", "xnli"])
    p.add_argument("--k", type=int, nargs="+", default=[1, 2])
    p.add_argument("--buckets", type=int, default=2, help="buckets per (language, K)")
    p.add_argument("--epochs", type=int, default=3, help="epochs of every sweep run")
    p.add_argument("--source-limit", type=int, default=2000,
                   help="English training examples of the brief source training")
    p.add_argument("--source-epochs", type=int, default=1)
    p.add_argument("--dev-limit", type=int, default=None,
                   help="target dev examples kept (default: half the file, as split)")
    p.add_argument("--eval-repeats", type=int, default=3)
    p.add_argument("--assumed-epochs", type=float, default=25.0,
                   help="the study's average epochs to the early stop (50 is the cap)")
    p.add_argument("--study", type=Path,
                   default=Path(__file__).resolve().parents[1] / "configs/sweeps/study.yaml")
    p.add_argument("--tiny", action="store_true", help="a tiny encoder (the CPU test)")
    p.add_argument("--work", type=Path, default=None, help="working folder (default: temp)")
    p.add_argument("--json", type=Path, default=None)
    return p.parse_args(argv)


# --------------------------------------------------------------------------- data

def _lines(path: Path) -> list[str]:
    if not path.is_file():
        sys.exit(f"{path}: not found (--data needs panx/ and xnli/ files; see --help)")
    return path.read_text(encoding="utf-8").splitlines()


def _blocks(path: Path) -> list[list[str]]:
    """A CoNLL file's sentences, each its lines."""
    blocks, current = [], []
    for line in _lines(path):
        if line.strip():
            current.append(line)
        elif current:
            blocks.append(current)
            current = []
    return blocks + ([current] if current else [])


def _write_blocks(path: Path, blocks: list[list[str]]) -> None:
    path.write_text("".join("\n".join(b) + "\n\n" for b in blocks), encoding="utf-8")


def _write_lines(path: Path, lines: list[str]) -> None:
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")


def targets_of(data: Path, task: str, n: int) -> list[str]:
    """Up to ``n`` target languages with a dev file (not English), sorted."""
    langs = sorted(p.stem.split("-", 1)[1] for p in (data / task).glob("dev-*.tsv"))
    return [lang for lang in langs if lang != "en"][:max(1, n)]


def prepare_task(data: Path, work: Path, task: str, targets: list[str],
                 source_limit: int, dev_limit: int | None) -> Path:
    """The task's files in fsxlt's layout under ``work/task`` (see the module docstring)."""
    out = work / task
    out.mkdir(parents=True, exist_ok=True)
    if task == "panx":
        _write_blocks(out / "train-en.tsv", _blocks(data / task / "train-en.tsv")[:source_limit])
        _write_blocks(out / "dev-en.tsv", _blocks(data / task / "dev-en.tsv")[:1000])
        for lang in targets:
            _write_blocks(out / f"train-{lang}.tsv", _blocks(data / task / f"train-{lang}.tsv"))
            dev = _blocks(data / task / f"dev-{lang}.tsv")
            half = len(dev) // 2
            _write_blocks(out / f"dev-{lang}.tsv", dev[:half][:dev_limit])
            _write_blocks(out / f"test-{lang}.tsv", dev[half:])
    else:
        english = _lines(data / task / "dev-en.tsv")
        cut = min(source_limit, len(english) * 3 // 4)
        _write_lines(out / "train-en.tsv", english[:cut])
        _write_lines(out / "dev-en.tsv", english[cut:])
        for lang in targets:
            dev = _lines(data / task / f"dev-{lang}.tsv")
            half = len(dev) // 2
            _write_lines(out / f"dev-{lang}.tsv", dev[:half])
            _write_lines(out / f"test-{lang}.tsv", dev[half:])
    return out


def read(task: str, path: Path, lang: str) -> list[Any]:
    return read_examples(path, get_task(task), language=lang)


# --------------------------------------------------------------------------- the encoder

def build_encoder(directory: Path, texts: list[str], shape: dict[str, int]) -> Path:
    """A random BERT of ``shape`` and a WordPiece tokenizer trained on ``texts``."""
    from tokenizers import BertWordPieceTokenizer
    from transformers import BertConfig, BertModel, BertTokenizer

    directory.mkdir(parents=True, exist_ok=True)
    trainer = BertWordPieceTokenizer(lowercase=False)
    trainer.train_from_iterator(texts, vocab_size=min(30000, shape["vocab_size"]),
                                min_frequency=1)
    trainer.save_model(str(directory))
    # transformers 5's BertTokenizer is the fast one; it takes the vocabulary as ``vocab``
    # (BertTokenizerFast(vocab_file=...) builds an empty one: every word [UNK])
    BertTokenizer(vocab=str(directory / "vocab.txt"),
                  do_lower_case=False).save_pretrained(directory)
    torch.manual_seed(0)
    config = BertConfig(**shape, max_position_embeddings=512)
    BertModel(config).save_pretrained(directory)
    return directory


def texts_of(examples: list[Any]) -> list[str]:
    out = []
    for e in examples:
        tokens = getattr(e, "tokens", None)
        out.append(" ".join(tokens) if tokens is not None else
                   " ".join(t for t in (getattr(e, "text_a", ""), getattr(e, "text_b", "")) if t))
    return out


# --------------------------------------------------------------------------- measuring

def encoder_flops(model: Any, batch: dict[str, torch.Tensor]) -> float:
    """Forward FLOPs of one padded batch: 2 per multiply-add of every encoder-layer and
    pooler weight matrix per token fed, and attention's two products (scores and the
    weighted values), 4 x seq x hidden per token per layer. Embedding lookups and the
    task head are left out (the head is a few thousand multiply-adds a token)."""
    config = model.encoder.config
    n_rows, seq = batch["input_ids"].shape
    hidden, inter, layers = config.hidden_size, config.intermediate_size, config.num_hidden_layers
    per_layer = 4 * hidden * hidden + 2 * hidden * inter  # q, k, v, out; the feed-forward
    tokens = n_rows * seq
    return float(2 * per_layer * layers * tokens + 4 * layers * seq * hidden * tokens)


def peak_tflops(name: str) -> float | None:
    for known, tflops in PEAK_BF16_TFLOPS:
        if known in name:
            return tflops
    return None


def sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def time_evaluation(engine: AdaptEngine, repeats: int) -> dict[str, Any]:
    """Dev evaluation as a sweep's engine runs it: wordpieces (real and padded) per
    second, FLOP rate, over the best of ``repeats`` passes after one warm-up."""
    from fsxlt.models.prediction import score

    batches = engine.dev.batches
    real = sum(int(b["attention_mask"].sum()) for b in batches if "attention_mask" in b)
    padded = sum(int(b["input_ids"].numel()) for b in batches if "input_ids" in b)
    flops = sum(encoder_flops(engine.model, b) for b in batches if "input_ids" in b)
    score(engine.model, engine.dev, engine.task, precision=engine.precision)  # warm-up
    best = float("inf")
    for _ in range(max(1, repeats)):
        sync(engine.device)
        began = time.perf_counter()
        score(engine.model, engine.dev, engine.task, precision=engine.precision)
        sync(engine.device)
        best = min(best, time.perf_counter() - began)
    return {"dev_examples": len(engine.dev.encoded.rows), "dev_wordpieces": real,
            "padded_wordpieces": padded, "seconds": round(best, 4),
            "wordpieces_per_s": round(real / best, 1),
            "tflops": round(flops / best / 1e12, 3)}


def one_worker_peak(engine: AdaptEngine, bucket: Any, epochs: int) -> float | None:
    """The peak device memory (GiB) of one worker adapting one bucket (CUDA only)."""
    if engine.device.type != "cuda":
        return None
    torch.cuda.reset_peak_memory_stats(engine.device)
    engine.adapt(bucket, lrs=LRS[:1], max_epochs=epochs, patience=epochs)
    return round(torch.cuda.max_memory_allocated(engine.device) / 2**30, 3)


class UsedMemory:
    """The device's used memory (all processes), sampled every half second while the
    block runs; its peak in GiB (CUDA only)."""

    def __init__(self, device: torch.device):
        self.device, self.peak, self._stop = device, 0.0, threading.Event()

    def __enter__(self) -> UsedMemory:
        if self.device.type == "cuda":
            self._thread = threading.Thread(target=self._poll, daemon=True)
            self._thread.start()
        return self

    def _poll(self) -> None:
        while not self._stop.wait(0.5):
            free, total = torch.cuda.mem_get_info(self.device)
            self.peak = max(self.peak, (total - free) / 2**30)

    def __exit__(self, *exc: Any) -> None:
        self._stop.set()


def sweep_task(task: str, work: Path, start: Path, targets: list[str], args: argparse.Namespace,
               device: torch.device, precision: str) -> dict[str, Any]:
    """The timed sweep of one task: runs per hour, evaluations, cost per dev wordpiece."""
    out = work / "runs" / task
    config = resolve_precisions(parse_config({
        "name": f"bench-{task}", "out": str(out), "buckets": str(work / "buckets"),
        "data_dir": str(work / task), "start": str(start), "methods": ["full"],
        "n_buckets": args.buckets, "lrs": LRS, "max_epochs": args.epochs,
        "patience": args.epochs, "precision": precision,
        "tasks": {task: {"languages": targets, "k": args.k}}}), "local", str(device))
    devices = [str(device.index or 0)] if device.type == "cuda" else None
    with UsedMemory(device) as memory:
        began = time.perf_counter()
        result = run_sweep(config, workers=args.workers, devices=devices, device=str(device),
                           threads=None if device.type == "cuda" else 1)
        wall = time.perf_counter() - began
    if result.failed:
        sys.exit(f"{task}: {len(result.failed)} sweep runs failed: {result.failed[0].error}")
    records = [json.loads(p.read_text()) for p in out.rglob("*.json")
               if p.parent.name == "full" and p.stem.isdigit()]
    evaluations = sum(len(run["epochs"]) for r in records for run in r["runs"])
    dev_wordpieces = {lang: _dev_wordpieces(start, config, lang) for lang in targets}
    fed = sum(len(run["epochs"]) * dev_wordpieces[r["language"]]
              for r in records for run in r["runs"])
    return {"runs": len(records), "groups": len(targets), "workers": args.workers,
            "wall_s": round(wall, 2), "runs_per_hour": round(len(records) / wall * 3600, 1),
            "dev_evaluations": evaluations,
            "dev_wordpieces_evaluated": fed,
            "seconds_per_million_dev_wordpieces": round(wall / fed * 1e6, 4) if fed else None,
            "worker_seconds": worker_seconds(records, wall, args.workers),
            "device_memory_used_peak_gib": round(memory.peak, 2) if memory.peak else None}


def worker_seconds(records: list[dict[str, Any]], wall: float, workers: int,
                   ) -> dict[str, float]:
    """The sweep's worker-seconds (``workers`` x its wall time) by what they paid for, from
    the records' own clocks: ``epochs``, every learning rate's training and dev evaluation
    (each lr-run's ``wall_time_s``); ``per_run``, the rest of each record (restoring the
    chosen weights, scoring the test set); ``per_group``, the rest (a worker's start, model
    load and tokenization, once per group). A study's runs have about 25 times the epochs
    of a short benchmark run, so only the first part grows with them."""
    epochs = sum(float(run["wall_time_s"]) for r in records for run in r["runs"])
    runs = sum(float(r["wall_time_s"]) for r in records)
    return {"epochs": round(epochs, 3), "per_run": round(max(runs - epochs, 0.0), 3),
            "per_group": round(max(workers * wall - runs, 0.0), 3)}


def _dev_wordpieces(start: Path, config: Any, lang: str) -> int:
    """The real wordpieces of a language's dev set as the sweep's runs read it (the
    bucket set's remaining dev examples for XNLI, the dev file for PAN-X), tokenized as
    the start tokenizes it."""
    from fsxlt.execution import expand
    from fsxlt.training.starts import open_start

    run = next(r for r in expand(config).runs if r.language == lang)
    opened = open_start(str(start), run.task, device="cpu")
    batches = opened.eval_set(run.read_eval("dev")).batches
    return sum(int(b["attention_mask"].sum()) for b in batches if "attention_mask" in b)


# --------------------------------------------------------------------------- extrapolation

def study_records(study: Path) -> dict[str, tuple[int, int]]:
    """Per task of the study config: its full-fine-tuning records (head-only arms left
    out) and its groups (one per target language: one start per task)."""
    import yaml

    raw = yaml.safe_load(study.read_text(encoding="utf-8"))
    out = {}
    for task, settings in raw["tasks"].items():
        methods = settings.get("methods", raw.get("methods", ["full"]))
        full = [m for m in methods if m not in HEAD_ONLY]
        out[task] = (len(settings["languages"]) * len(settings["k"])
                     * int(settings.get("n_buckets", raw.get("n_buckets", 40))) * len(full),
                     len(settings["languages"]))
    return out


def extrapolate(sweeps: dict[str, dict[str, Any]], evaluation: dict[str, dict[str, Any]],
                args: argparse.Namespace) -> dict[str, Any]:
    """The study in device-hours, per task from the measurements of its shape, in four
    parts that grow with different things: dev evaluation with the dev wordpieces
    (records x lrs x assumed epochs x the published dev set's wordpieces, at the measured
    evaluation rate); the rest of each epoch (its training steps, a learning rate's
    weight reset) with the epochs; each record's fixed part (restoring weights, scoring
    the test set) with the records; each group's set-up with the groups. The sweep's
    worker-seconds over its workers are the device's seconds. (A cost per dev wordpiece of
    the whole sweep charges a short run's training and fixed costs to its few, small dev
    evaluations, and overstates a study's runs many times over.)"""
    per_task = {}
    for task, (n_records, n_groups) in study_records(args.study).items():
        shape = SHAPE.get(task)
        measured, rate = sweeps.get(shape or ""), evaluation.get(shape or "")
        if measured is None or rate is None or not measured["dev_evaluations"]:
            continue
        per = bench_rates({"sweep": sweeps, "evaluation": evaluation}, task, shape == "panx")
        examples, wordpieces = STUDY_DEV[task]
        epochs = n_records * len(LRS) * args.assumed_epochs
        parts = {"dev_evaluation": epochs * examples * per.per_example,
                 "training": epochs * per.per_epoch,
                 "per_run": n_records * per.per_record,
                 "per_group": n_groups * measured["worker_seconds"]["per_group"]
                 / measured["workers"] / measured["groups"]}
        per_task[task] = {"records": n_records, "groups": n_groups, "costed_as": shape,
                          "dev_examples": examples, "wordpieces_per_example": wordpieces,
                          "parts_hours": {k: round(v / 3600, 2) for k, v in parts.items()},
                          "device_hours": round(sum(parts.values()) / 3600, 2)}
    return {"per_task": per_task,
            "device_hours": round(sum(t["device_hours"] for t in per_task.values()), 2),
            "assumptions": {
                "lrs": LRS, "average_epochs": args.assumed_epochs,
                "dev_sets": "as published: " + ", ".join(
                    f"{t} {n} x {w} wordpieces" for t, (n, w) in STUDY_DEV.items()),
                "shapes": "classification tasks costed as XNLI's measured rates, tagging "
                          "tasks as PAN-X's",
                "dev_evaluation": "at the rate one engine measured alone (workers sharing "
                                  "the device are assumed to add no throughput)",
                "fixed_costs": "each epoch's training steps and each learning rate's "
                               "weight reset, each record's restore and test scoring (on "
                               "this benchmark's test sets) and each group's set-up, as "
                               "the sweep's records clocked them",
                "head_only": "MARC's head-only arms left out (the feature cache makes them "
                             "nearly free)",
                "workers": f"{args.workers} workers on the device, as measured"}}


# --------------------------------------------------------------------------- main

def main(argv: list[str] | None = None) -> dict[str, Any]:
    from fsxlt.models.model import quiet_transformers

    args = parse_args(argv)
    quiet_transformers()
    device = resolve_device(args.device)
    precision = resolve_precision(args.precision, device)
    shape = TINY if args.tiny else MBERT
    with tempfile.TemporaryDirectory() as scratch:
        work = args.work or Path(scratch)
        found: dict[str, Any] = {"device": device_name(device), "precision": precision,
                                 "encoder": shape, "torch": torch.__version__,
                                 "evaluation": {}, "one_worker_peak_gib": {}, "sweep": {},
                                 "source_train_s": {}}
        for task in args.tasks:
            targets = targets_of(args.data, task, args.workers)
            data = prepare_task(args.data, work, task, targets, args.source_limit,
                                args.dev_limit)
            train = read(task, data / "train-en.tsv", "en")
            encoder = build_encoder(work / f"encoder-{task}", texts_of(train), shape)
            began = time.perf_counter()
            result = source_train(task, train, read(task, data / "dev-en.tsv", "en"),
                                  model_name=str(encoder), lrs=[3e-5 if not args.tiny else 1e-3],
                                  epochs=args.source_epochs, batch_size=32, seed=0,
                                  device=device, precision=precision)
            found["source_train_s"][task] = round(time.perf_counter() - began, 2)
            start = save_checkpoint(work / f"ckpt-{task}", result.model, result.tokenizer,
                                    result.record)
            for lang in targets:
                code = run_app(["sample", "--task", task, "--lang", lang,
                                *[a for k in args.k for a in ("-k", str(k))],
                                "--n-buckets", str(args.buckets), "--data-dir", str(data),
                                "--out", str(work / "buckets")])
                if code != 0:
                    sys.exit(f"fsxlt sample {task} {lang} failed")
            lang = targets[0]
            engine = AdaptEngine.from_start(task, lang, str(start),
                                            dev=read(task, data / f"dev-{lang}.tsv", lang),
                                            device=device, precision=precision)
            found["evaluation"][task] = time_evaluation(engine, args.eval_repeats)
            first = sorted((work / "buckets" / task / lang / f"k{args.k[0]}").glob("00.json"))
            bucket = read_bucket(first[0])
            found["one_worker_peak_gib"][task] = one_worker_peak(engine, bucket, args.epochs)
            del engine
            found["sweep"][task] = sweep_task(task, work, start, targets, args, device,
                                              precision)
    peak = peak_tflops(found["device"])
    for figures in found["evaluation"].values():
        figures["share_of_bf16_peak"] = round(figures["tflops"] / peak, 3) if peak else None
    found["peak_bf16_tflops"] = peak
    found["study"] = extrapolate(found["sweep"], found["evaluation"], args)
    print_summary(found)
    if args.json:
        args.json.write_text(json.dumps(found, indent=2, sort_keys=True) + "\n")
    return found


def print_summary(found: dict[str, Any]) -> None:
    print(f"device {found['device']}, precision {found['precision']}, encoder "
          f"{found['encoder']['num_hidden_layers']} layers x {found['encoder']['hidden_size']}, "
          f"vocabulary {found['encoder']['vocab_size']}")
    for task, ev in found["evaluation"].items():
        share = f", {ev['share_of_bf16_peak']:.0%} of the bf16 peak" \
            if ev.get("share_of_bf16_peak") is not None else ""
        sweep = found["sweep"][task]
        memory = found["one_worker_peak_gib"][task]
        print(f"{task}: dev evaluation {ev['wordpieces_per_s']:,.0f} wordpieces/s "
              f"({ev['dev_examples']} examples), {ev['tflops']:.2f} TFLOP/s{share}; "
              f"sweep {sweep['runs']} runs in {sweep['wall_s']:.1f} s with "
              f"{sweep['workers']} workers on {sweep['groups']} groups = "
              f"{sweep['runs_per_hour']:,.0f} runs/hour (4 lrs x fixed epochs)"
              + (f"; one worker's peak {memory:.2f} GiB" if memory is not None else "")
              + (f"; device memory used at most {sweep['device_memory_used_peak_gib']} GiB"
                 if sweep["device_memory_used_peak_gib"] else ""))
    study = found["study"]
    tasks = ", ".join(f"{task} {v['device_hours']:,.1f}" for task, v in study["per_task"].items())
    print(f"the study: about {study['device_hours']:,.1f} device-hours on this device ({tasks})")
    parts: dict[str, float] = {}
    for figures in study["per_task"].values():
        for part, hours in figures["parts_hours"].items():
            parts[part] = parts.get(part, 0.0) + hours
    print("  of which " + ", ".join(f"{part.replace('_', ' ')} {hours:,.1f}"
                                    for part, hours in parts.items()))
    for key, value in study["assumptions"].items():
        print(f"  assumed {key}: {value}")


if __name__ == "__main__":
    main()
