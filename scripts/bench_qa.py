"""Benchmark extractive-QA adapting: a typical SQuAD-script loop versus fsxlt's AdaptEngine.

    python scripts/bench_qa.py [--buckets 4] [--bucket-size 8] [--dev-size 200]
        [--test-size 200] [--epochs 5] [--max-seq-length 384] [--repeat 40] [--json OUT]
    python scripts/bench_adapt.py --task xquad ...      (the same: bench_adapt's QA case)

The same adapt runs (every bucket, one learning rate, a fixed epoch budget) run two
ways in one process, from the same start (a BERT built from a config, dropout 0,
and the seeded fresh span head fsxlt gives an encoder):

(a) **naive**, as SQuAD fine-tuning scripts run a few-shot study: per run, load the
    model from disk, tokenize and window bucket, dev and test again, pad every window
    to ``--max-seq-length``, evaluate one window at a time after every epoch, keep
    the best epoch's weights with ``copy.deepcopy``, score the test set with them;
(b) **fsxlt**: one :class:`fsxlt.training.AdaptEngine` (dev and test windowed once,
    length-sorted batches under ``inference_mode``), then ``engine.adapt`` per bucket.

Both use fsxlt's windows (:mod:`fsxlt.models.spans`: stride 128) and span decoding (n-best
20, at most 30 wordpieces), so they must give the same dev curve, best epoch and
scores (to ``--tolerance``) and the same answer to every test question; a
difference is printed and the script exits with status 1. The data is generated:
paragraphs of "<name> went to <place> ." sentences (``--repeat`` of them, so that
contexts of about ``6 x repeat`` wordpieces need several windows at a small
``--max-seq-length``) and questions "who went to <place> ?".
"""

from __future__ import annotations

import argparse
import copy
import json
import random
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch
from torch.nn import functional as F

from fsxlt.data import QAExample
from fsxlt.tasks import get_task

NAMES = [f"{a}{b}" for a in ("jo", "ma", "li", "ah", "ko", "su") for b in ("n", "ra", "mi")]
PLACES = [f"{a}{b}" for a in ("pa", "be", "ca", "li", "to", "ro") for b in ("ris", "lin", "no")]
WORDS = ["went", "to", "who", "?", "."]
SPECIAL = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--task", default="xquad", help="an extractive QA task (metric, windows)")
    p.add_argument("--hidden", type=int, default=64)
    p.add_argument("--layers", type=int, default=2)
    p.add_argument("--buckets", type=int, default=4)
    p.add_argument("--bucket-size", type=int, default=8, help="questions per bucket")
    p.add_argument("--dev-size", type=int, default=200)
    p.add_argument("--test-size", type=int, default=200)
    p.add_argument("--repeat", type=int, default=40,
                   help="sentences per paragraph (40: about 240 wordpieces, as XQuAD's)")
    p.add_argument("--epochs", type=int, default=5)
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--max-seq-length", type=int, default=384)
    p.add_argument("--tolerance", type=float, default=1e-6)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--json", type=Path, default=None)
    args, _unknown = p.parse_known_args(argv)  # bench_adapt's other options do not apply
    if not get_task(args.task).is_qa:
        p.error(f"{args.task} is not an extractive QA task")
    return args


def make_questions(n: int, rng: random.Random, repeat: int, prefix: str) -> list[QAExample]:
    """``n`` questions, each on a paragraph of its own."""
    out = []
    for i in range(n):
        pairs = [(rng.choice(NAMES), rng.choice(PLACES)) for _ in range(repeat)]
        context = " ".join(f"{name} went to {place} ." for name, place in pairs)
        name, place = pairs[rng.randrange(repeat)]
        start = context.index(f"{name} went to {place} .")
        out.append(QAExample(f"{prefix}:{i}", f"{prefix}{i}", context, f"who went to {place} ?",
                             (name,), (start,), "", "en"))
    return out


def build_encoder(directory: Path, args: argparse.Namespace) -> Path:
    """A BERT from a config (dropout 0) with a WordPiece vocabulary of the generated words."""
    from transformers import BertConfig, BertModel, BertTokenizer

    directory.mkdir(parents=True, exist_ok=True)
    vocab = SPECIAL + NAMES + PLACES + WORDS
    (directory / "vocab.txt").write_text("\n".join(vocab) + "\n", encoding="utf-8")
    tokenizer = BertTokenizer(vocab=str(directory / "vocab.txt"), do_lower_case=True)
    config = BertConfig(vocab_size=len(vocab), hidden_size=args.hidden,
                        num_hidden_layers=args.layers, num_attention_heads=2,
                        intermediate_size=2 * args.hidden,
                        max_position_embeddings=max(512, args.max_seq_length),
                        hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
    torch.manual_seed(args.seed)
    BertModel(config).save_pretrained(directory)
    tokenizer.save_pretrained(directory)
    return directory


# --------------------------------------------------------------------------- (a) naive

def padded(batch: dict[str, torch.Tensor], max_len: int) -> dict[str, torch.Tensor]:
    """``batch`` padded to ``max_len`` positions (padding masked out)."""
    extra = max_len - batch["input_ids"].shape[1]
    return {key: value if key == "labels" else F.pad(value, (0, extra))
            for key, value in batch.items()}


def naive_windows(tokenizer: Any, examples: Sequence[QAExample], max_len: int) -> list[dict]:
    """Every window, tokenized now (question by question), padded to ``max_len``."""
    from fsxlt.models.encoding import Row, collate
    from fsxlt.models.spans import QAFeaturizer

    featurizer = QAFeaturizer(tokenizer, max_len, True)
    windows = []
    for i, example in enumerate(examples):
        for _, window in featurizer.windows([example]):
            row = Row(example=i, **window)
            windows.append({"row": row, "batch": padded(collate([row], 0), max_len)})
    return windows


def naive_answers(model: Any, windows: list[dict], examples: Sequence[QAExample]) -> list[str]:
    """One window at a time under ``no_grad``: the best span over each question's windows."""
    from fsxlt.models.spans import best_spans

    model.eval()
    best: dict[int, tuple[float, str]] = {}
    with torch.no_grad():
        for window in windows:
            row, batch = window["row"], window["batch"]
            score, start, end = (t.item() for t in best_spans(model(batch),
                                                                batch["context_mask"]))
            if score > best.get(row.example, (float("-inf"), ""))[0]:
                text = examples[row.example].context[row.offsets[start][0]:row.offsets[end][1]]
                best[row.example] = (score, text)
    return [best.get(i, (0.0, ""))[1] for i in range(len(examples))]


def naive_adapt(start_dir: Path, task: Any, bucket: list[QAExample], dev: list[QAExample],
                test: list[QAExample], args: argparse.Namespace) -> dict[str, Any]:
    from fsxlt.metrics.scores import compute_scores
    from fsxlt.models.encoding import collate
    from fsxlt.training import load_start

    start = load_start(start_dir, task, seed=args.seed)
    model, tokenizer = start.model, start.tokenizer
    train = padded(collate([w["row"] for w in naive_windows(tokenizer, bucket,
                                                            args.max_seq_length)], 0),
                   args.max_seq_length)
    dev_windows = naive_windows(tokenizer, dev, args.max_seq_length)
    test_windows = naive_windows(tokenizer, test, args.max_seq_length)
    torch.manual_seed(args.seed)
    optimizer = torch.optim.Adam([p for p in model.parameters() if p.requires_grad], lr=args.lr)
    curve, best, best_epoch, best_state = [], float("-inf"), 0, None
    gold = [(ex.answers, ex.language) for ex in dev]
    for epoch in range(1, args.epochs + 1):
        model.train()
        optimizer.zero_grad()
        F.cross_entropy(model(train), train["labels"]).backward()
        optimizer.step()
        curve.append(compute_scores(task, gold, naive_answers(model, dev_windows, dev))["score"])
        if curve[-1] > best:
            best, best_epoch, best_state = curve[-1], epoch, copy.deepcopy(model.state_dict())
    model.load_state_dict(best_state)
    answers = naive_answers(model, test_windows, test)
    test_score = compute_scores(task, [(ex.answers, ex.language) for ex in test], answers)
    return {"curve": curve, "best_epoch": best_epoch, "dev": best,
            "test": test_score["score"], "answers": answers}


# --------------------------------------------------------------------------- (b) fsxlt

def engine_runs(start_dir: Path, task: Any, buckets: list[list[QAExample]],
                dev: list[QAExample], test: list[QAExample],
                args: argparse.Namespace) -> list[dict[str, Any]]:
    from fsxlt.training import AdaptEngine, load_start

    engine = AdaptEngine(task, "en", load_start(start_dir, task, seed=args.seed), dev=dev,
                         test=test, device="cpu", max_seq_length=args.max_seq_length)
    out = []
    for bucket in buckets:
        record = engine.adapt(bucket, lrs=[args.lr], seed=args.seed, max_epochs=args.epochs,
                              patience=args.epochs, predictions=True)
        run = record["runs"][0]
        out.append({"curve": [e["dev_score"] for e in run["epochs"]],
                    "best_epoch": run["best_epoch"], "dev": record["dev_score"],
                    "test": record["test_score"], "answers": record["test_predictions"]})
    return out


def dev_windows(start: Path, dev: list[QAExample], max_len: int) -> int:
    from transformers import AutoTokenizer

    from fsxlt.models.spans import QAFeaturizer

    return len(QAFeaturizer(AutoTokenizer.from_pretrained(start), max_len, True).windows(dev))


def compare(naive: list[dict], fast: list[dict], tolerance: float) -> list[str]:
    problems = []
    for i, (a, b) in enumerate(zip(naive, fast, strict=True)):
        if a["best_epoch"] != b["best_epoch"] or a["answers"] != b["answers"] or any(
                abs(x - y) > tolerance for x, y in zip(a["curve"] + [a["dev"], a["test"]],
                                                        b["curve"] + [b["dev"], b["test"]],
                                                        strict=True)):
            same = sum(x == y for x, y in zip(a["answers"], b["answers"], strict=True))
            problems.append(f"bucket {i}: naive {a['curve']} (epoch {a['best_epoch']}, test "
                            f"{a['test']:.6f}) vs fsxlt {b['curve']} (epoch {b['best_epoch']}, "
                            f"test {b['test']:.6f}); {same}/{len(a['answers'])} answers equal")
    return problems


def run(args: argparse.Namespace) -> tuple[dict[str, Any], list[str]]:
    task = get_task(args.task)
    rng = random.Random(args.seed)
    buckets = [make_questions(args.bucket_size, rng, args.repeat, f"b{b}")
               for b in range(args.buckets)]
    dev = make_questions(args.dev_size, rng, args.repeat, "dev")
    test = make_questions(args.test_size, rng, args.repeat, "test")
    with tempfile.TemporaryDirectory() as tmp:
        start = build_encoder(Path(tmp) / "enc", args)
        began = time.perf_counter()
        naive = [naive_adapt(start, task, bucket, dev, test, args) for bucket in buckets]
        naive_s = time.perf_counter() - began
        began = time.perf_counter()
        fast = engine_runs(start, task, buckets, dev, test, args)
        fast_s = time.perf_counter() - began
        windows = dev_windows(start, dev, args.max_seq_length)
    result = {"task": task.name, "runs": len(buckets), "epochs": args.epochs,
              "max_seq_length": args.max_seq_length, "dev_questions": len(dev),
              "test_questions": len(test), "naive_s": naive_s, "fsxlt_s": fast_s,
              "naive_runs_per_min": 60 * len(buckets) / naive_s,
              "fsxlt_runs_per_min": 60 * len(buckets) / fast_s,
              "speedup": naive_s / fast_s, "windows": windows,
              "test_f1": [r["test"] for r in fast]}
    return result, compare(naive, fast, args.tolerance)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    result, problems = run(args)
    print(f"{result['task']}: {result['runs']} adapt runs of {result['epochs']} epochs, "
          f"{result['dev_questions']} dev questions ({result['windows']} windows) and "
          f"{result['test_questions']} test questions, max_seq_length {result['max_seq_length']}")
    print(f"naive {result['naive_runs_per_min']:.2f} runs/min, fsxlt "
          f"{result['fsxlt_runs_per_min']:.2f} runs/min: {result['speedup']:.1f}x; "
          f"{'identical answers' if not problems else 'MISMATCHES'}")
    if args.json:
        args.json.write_text(json.dumps({**result, "problems": problems}, indent=2) + "\n",
                             encoding="utf-8")
    for problem in problems:
        print(f"MISMATCH {problem}", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
