#!/usr/bin/env python3
"""Shot-selection check (not a test): every strategy against random on real PAN-X.

Runs the real CLI on a source-trained English NER checkpoint (e.g. the ``en``
one ``scripts/source_language_matrix.py`` writes) and the real PAN-X data:

1. data slices in ``WORK/data``: each target's train file as it is (the
   pools come from it), its dev file cut to the first ``--dev-sentences``
   sentences, its test set = dev sentences ``--test-from`` + 1 to
   ``--test-from`` + ``--test-sentences`` (the matrix script's test sets, so
   the checkpoint's zero-shot scores are on the same sentences);
2. ``fsxlt select`` every strategy for every target and K;
3. one ``fsxlt sweep`` per K and strategy (the runs of all strategies share
   ``WORK/runs``; finished runs are skipped, so a killed check resumes);
4. ``fsxlt report --strategies`` and ``fsxlt analyze bucket-features``.

Every command is printed first, so the numbers can be reproduced.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import yaml
from real_model_check import SHARED, fsxlt, run, sentence_blocks, write_blocks

from fsxlt.sampling.strategies import BUILTIN

STRATEGIES = list(BUILTIN)  # every built-in strategy


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--work", type=Path, default=Path("/tmp/fsxlt-strategy-check"))
    ap.add_argument("--checkpoint", type=Path, required=True,
                    help="A source-trained PAN-X checkpoint (fsxlt source-train).")
    ap.add_argument("--panx", type=Path, default=SHARED / "data" / "panx")
    ap.add_argument("--langs", nargs="+", default=["zh", "ar"])
    ap.add_argument("--k", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--strategies", nargs="+", default=STRATEGIES)
    ap.add_argument("--n-pools", type=int, default=10)
    ap.add_argument("--pool-size", type=int, default=200)
    ap.add_argument("--n-buckets", type=int, default=6, help="Pools adapted on (0..N-1).")
    ap.add_argument("--dev-sentences", type=int, default=100)
    ap.add_argument("--test-from", type=int, default=300)
    ap.add_argument("--test-sentences", type=int, default=1000)
    ap.add_argument("--lr", type=float, default=7e-5)
    ap.add_argument("--max-epochs", type=int, default=6)
    ap.add_argument("--patience", type=int, default=2)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--device", default="cpu")
    args = ap.parse_args()

    work, data = args.work, args.work / "data"
    data.mkdir(parents=True, exist_ok=True)
    for lang in args.langs:
        dev = sentence_blocks(args.panx / f"dev-{lang}.tsv")
        write_blocks(data / f"dev-{lang}.tsv", dev[:args.dev_sentences])
        write_blocks(data / f"test-{lang}.tsv",
                     dev[args.test_from:args.test_from + args.test_sentences])
        train = data / f"train-{lang}.tsv"
        train.unlink(missing_ok=True)
        train.symlink_to((args.panx / f"train-{lang}.tsv").resolve())

    buckets = work / "buckets"
    for lang in args.langs:
        cmd = ["select", "--task", "panx", "--lang", lang, "--data-dir", str(data), "--from",
               str(args.checkpoint), "--n-pools", str(args.n_pools), "--pool-size",
               str(args.pool_size), "--out", str(buckets), "--device", args.device]
        for strategy in args.strategies:
            cmd += ["-s", strategy]
        for k in args.k:
            cmd += ["-k", str(k)]
        run(fsxlt(*cmd))

    config = {"name": "panx-strategies", "out": str(work / "runs"),
              "buckets": str(buckets / "random"), "data_dir": str(data),
              "start": str(args.checkpoint), "methods": ["full"], "n_buckets": args.n_buckets,
              "lrs": [args.lr], "max_epochs": args.max_epochs, "patience": args.patience,
              "tasks": {"panx": {"languages": list(args.langs), "k": list(args.k)}}}
    sweep = work / "sweep.yaml"
    sweep.write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
    for k in args.k:  # K by K, so a partial check has every strategy at the first K
        for strategy in args.strategies:
            run(fsxlt("sweep", str(sweep), "--buckets", str(buckets / strategy), "--k", str(k),
                      "--workers", str(args.workers), "--threads", "1",
                      "--device", args.device))
    run(fsxlt("report", str(work / "runs"), "--strategies", "--out", str(work / "report")))
    run(fsxlt("analyze", "bucket-features", str(work / "runs"), "--out",
              str(work / "features"), "--device", args.device))


if __name__ == "__main__":
    main()
