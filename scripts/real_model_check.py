#!/usr/bin/env python3
"""Real-model check (not a test): source-train NER, adapt on published 1-shot buckets.

Runs the real CLI end to end on a real multilingual encoder:

1. build the offline encoder (``../shared/tools/offline_encoder.py``) unless
   ``--encoder`` already holds one;
2. write the data slices: the first ``--train-sentences`` English PAN-X train
   sentences, the first ``--en-dev-sentences`` English dev sentences, and per
   target language dev = the first 500 sentences of ``dev-<lang>.tsv`` and
   test = the next 1,000;
3. ``fsxlt buckets import-published`` the published PAN-X buckets;
4. ``fsxlt source-train`` (English), scoring the target devs every epoch and
   the target tests (zero-shot, K=0) at the end;
5. ``fsxlt adapt`` on the first ``--buckets`` published K-shot buckets per
   language, once per ``--arms`` entry (a method name; ``NAME-epoch0`` adds
   ``--select-start``), skipping runs whose record exists; then prints
   zero-shot F1 and mean ± std few-shot test F1 per arm, and ``fsxlt report
   --compare ARM FIRST`` for every further arm (paired over the buckets).

Every command it runs is printed first, so the numbers can be reproduced.
The defaults follow docs/protocol.md#training; on a small CPU pass e.g. ``--lr 5e-5
--epochs 2 --adapt-lr 7e-5 --adapt-max-epochs 8 --adapt-patience 3
--adapt-dev-sentences 200``.
"""

from __future__ import annotations

import argparse
import json
import shlex
import statistics
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
SHARED = HERE.parent.parent / "shared"


def run(cmd: list[str]) -> None:
    print("+ " + " ".join(shlex.quote(c) for c in cmd), flush=True)
    subprocess.run(cmd, check=True)


def fsxlt(*args: str) -> list[str]:
    return [sys.executable, "-c", "from fsxlt.cli import main; main()", *args]


def sentence_blocks(path: Path) -> list[str]:
    blocks, current = [], []
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            current.append(line)
        elif current:
            blocks.append("\n".join(current))
            current = []
    if current:
        blocks.append("\n".join(current))
    return blocks


def write_blocks(path: Path, blocks: list[str]) -> None:
    path.write_text("\n\n".join(blocks) + "\n", encoding="utf-8")


def prepare_work(work: Path, encoder: Path | None) -> tuple[Path, Path, Path]:
    """The work directory, the encoder (built with the offline tool when missing) and the
    data directory under ``work``."""
    work.mkdir(parents=True, exist_ok=True)
    encoder = encoder or work / "encoder"
    if not (encoder / "config.json").is_file():
        run([sys.executable, str(SHARED / "tools" / "offline_encoder.py"), str(encoder)])
    (work / "data").mkdir(exist_ok=True)
    return work, encoder, work / "data"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--work", type=Path, default=Path("/tmp/fsxlt-real-check"))
    ap.add_argument("--encoder", type=Path, default=None,
                    help="Encoder dir (built with the offline tool if missing).")
    ap.add_argument("--panx", type=Path, default=SHARED / "data" / "panx")
    ap.add_argument("--published", type=Path, default=SHARED / "data" / "published_buckets")
    ap.add_argument("--langs", nargs="+", default=["zh", "ar"])
    ap.add_argument("--k", type=int, default=1)
    ap.add_argument("--buckets", type=int, default=5)
    ap.add_argument("--train-sentences", type=int, default=2000)
    ap.add_argument("--en-dev-sentences", type=int, default=1000)
    ap.add_argument("--dev-sentences", type=int, default=500)
    ap.add_argument("--test-sentences", type=int, default=1000)
    ap.add_argument("--adapt-dev-sentences", type=int, default=None,
                    help="Adapt with only the first N of the dev sentences (default: all).")
    ap.add_argument("--reuse-checkpoint", action="store_true",
                    help="Skip source-training when the checkpoint already exists.")
    ap.add_argument("--lr", type=float, nargs="*", default=None, help="Source lrs (task grid).")
    ap.add_argument("--epochs", type=int, default=None, help="Source epochs (10).")
    ap.add_argument("--adapt-lr", type=float, nargs="*", default=None, help="Adapt lrs (grid).")
    ap.add_argument("--adapt-max-epochs", type=int, default=None, help="50")
    ap.add_argument("--adapt-patience", type=int, default=None, help="10")
    ap.add_argument("--arms", nargs="+", default=["full"],
                    help="Methods to adapt with; NAME-epoch0 adds --select-start.")
    ap.add_argument("--device", default="auto")
    args = ap.parse_args()

    work, encoder, data = prepare_work(args.work, args.encoder)
    write_blocks(data / "train-en.tsv",
                 sentence_blocks(args.panx / "train-en.tsv")[:args.train_sentences])
    write_blocks(data / "dev-en.tsv",
                 sentence_blocks(args.panx / "dev-en.tsv")[:args.en_dev_sentences])
    for lang in args.langs:
        blocks = sentence_blocks(args.panx / f"dev-{lang}.tsv")
        n_dev, n_test = args.dev_sentences, args.test_sentences
        write_blocks(data / f"dev-{lang}.tsv", blocks[:n_dev])
        write_blocks(data / f"test-{lang}.tsv", blocks[n_dev:n_dev + n_test])
        write_blocks(work / f"adapt-dev-{lang}.tsv", blocks[:args.adapt_dev_sentences or n_dev])

    buckets = work / "buckets"
    run(fsxlt("buckets", "import-published", str(args.published), "--out", str(buckets),
              "--task", "panx"))

    ckpt = work / "ckpt-panx-en"
    cmd = ["source-train", "--task", "panx", "--model", str(encoder), "--data-dir", str(data),
           "--out", str(ckpt), "--overwrite", "--device", args.device]
    for lang in args.langs:
        cmd += ["--target", lang]
    for lr in args.lr or []:
        cmd += ["--lr", repr(lr)]
    if args.epochs:
        cmd += ["--epochs", str(args.epochs)]
    if not (args.reuse_checkpoint and (ckpt / "fsxlt_checkpoint.json").is_file()):
        run(fsxlt(*cmd))

    runs = work / "runs"
    for index in range(args.buckets):  # interleaved, so partial results cover every language
        for lang in args.langs:
            for arm in args.arms:
                record = runs / "panx" / lang / f"k{args.k}" / arm / f"{index:02d}.json"
                if record.is_file():
                    continue
                method = arm.removesuffix("-epoch0")
                cmd = ["adapt", "--task", "panx", "--lang", lang, "--from", str(ckpt),
                       "--bucket",
                       str(buckets / "panx" / lang / f"k{args.k}" / f"{index:02d}.json"),
                       "--dev", str(work / f"adapt-dev-{lang}.tsv"), "--test",
                       str(data / f"test-{lang}.tsv"), "--out", str(runs),
                       "--device", args.device, "--method", method]
                if arm.endswith("-epoch0"):
                    cmd.append("--select-start")
                for lr in args.adapt_lr or []:
                    cmd += ["--lr", repr(lr)]
                if args.adapt_max_epochs:
                    cmd += ["--max-epochs", str(args.adapt_max_epochs)]
                if args.adapt_patience:
                    cmd += ["--patience", str(args.adapt_patience)]
                run(fsxlt(*cmd))

    source = json.loads((ckpt / "fsxlt_checkpoint.json").read_text(encoding="utf-8"))
    summary = {"selection": source["selection"], "english_dev": source["english_dev"]["score"],
               "languages": {}}
    print(f"\nEnglish dev F1 {100 * source['english_dev']['score']:.2f} "
          f"(lr {source['selection']['lr']:g}, epoch {source['selection']['epoch']})")
    for lang in args.langs:
        zero = source["zero_shot"][lang]["score"]
        summary["languages"][lang] = {"zero_shot": zero, "arms": {}}
        print(f"{lang}: zero-shot F1 {100 * zero:.2f}")
        for arm in args.arms:
            scores = []
            for index in range(args.buckets):
                record = json.loads((runs / "panx" / lang / f"k{args.k}" / arm /
                                     f"{index:02d}.json").read_text(encoding="utf-8"))
                scores.append(record["test_score"])
            mean = statistics.mean(scores)
            std = statistics.stdev(scores) if len(scores) > 1 else 0.0
            summary["languages"][lang]["arms"][arm] = {"few_shot": scores, "mean": mean,
                                                       "std": std}
            print(f"  {arm}: {args.k}-shot F1 {100 * mean:.2f} ± {100 * std:.2f} over "
                  f"{len(scores)} buckets ({', '.join(f'{100 * s:.2f}' for s in scores)})")
    for arm in args.arms[1:]:
        run(fsxlt("report", str(runs), "--compare", arm, args.arms[0]))
    (work / "summary.json").write_text(json.dumps(summary, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
