#!/usr/bin/env python3
"""Source-language check (not a test): zero-shot PAN-X F1 for several sources.

Is English the best source? This script source-trains one NER model per
source (a language, or several joined as XGLUE's multi-language protocol
does) on real PAN-X data and prints the source x target zero-shot table
with ``fsxlt report --sources``:

1. build the offline encoder (``../shared/tools/offline_encoder.py``) unless
   ``--encoder`` already holds one;
2. write the data slices into ``WORK/data``: each source language's train
   file as it is (``--train-limit`` takes the first N sentences per source
   language), its dev file cut to the first ``--dev-sentences`` sentences,
   and per target dev = those first sentences and test = the next
   ``--test-sentences`` of ``dev-<lang>.tsv``;
3. one ``fsxlt source-train --source-lang SRC`` per ``--sources`` entry
   (``en``, ``de``, ``en,de,es``, ...; a ``:N`` suffix overrides the per-language
   train limit, e.g. ``en,de,es:667`` keeps the total near one language's),
   scoring every target's test set at the end, skipped when its checkpoint
   exists;
4. ``fsxlt report WORK/ckpt --sources``.

Every command is printed first, so the numbers can be reproduced.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from real_model_check import SHARED, fsxlt, prepare_work, run, sentence_blocks, write_blocks


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--work", type=Path, default=Path("/tmp/fsxlt-source-matrix"))
    ap.add_argument("--encoder", type=Path, default=None,
                    help="Encoder dir (built with the offline tool if missing).")
    ap.add_argument("--panx", type=Path, default=SHARED / "data" / "panx")
    ap.add_argument("--sources", nargs="+", default=["en", "de", "en,de,es"])
    ap.add_argument("--targets", nargs="+", default=["es", "zh", "ar"])
    ap.add_argument("--train-limit", type=int, default=2000,
                    help="Train sentences per source language.")
    ap.add_argument("--dev-sentences", type=int, default=300)
    ap.add_argument("--test-sentences", type=int, default=1000)
    ap.add_argument("--lr", type=float, default=5e-5)
    ap.add_argument("--epochs", type=int, default=3)
    ap.add_argument("--device", default="auto")
    args = ap.parse_args()

    work, encoder, data = prepare_work(args.work, args.encoder)
    source_langs = {lang for src in args.sources for lang in src.split(":")[0].split(",")}
    for lang in sorted(source_langs | set(args.targets)):
        dev = sentence_blocks(args.panx / f"dev-{lang}.tsv")
        write_blocks(data / f"dev-{lang}.tsv", dev[:args.dev_sentences])
        if lang in args.targets:
            write_blocks(data / f"test-{lang}.tsv",
                         dev[args.dev_sentences:args.dev_sentences + args.test_sentences])
        if lang in source_langs:
            train = data / f"train-{lang}.tsv"
            train.unlink(missing_ok=True)
            train.symlink_to((args.panx / f"train-{lang}.tsv").resolve())

    for entry in args.sources:
        langs, _, limit = entry.partition(":")
        name = langs.replace(",", "+") + (f"-{limit}" if limit else "")
        ckpt = work / "ckpt" / name
        if (ckpt / "fsxlt_checkpoint.json").is_file():
            continue
        cmd = ["source-train", "--task", "panx", "--model", str(encoder), "--data-dir",
               str(data), "--source-lang", langs, "--train-limit", limit or str(args.train_limit),
               "--lr", repr(args.lr), "--epochs", str(args.epochs), "--out", str(ckpt),
               "--overwrite", "--device", args.device]
        for lang in args.targets:
            cmd += ["--target", lang]
        run(fsxlt(*cmd))
    run(fsxlt("report", str(work / "ckpt"), "--sources"))


if __name__ == "__main__":
    main()
