"""Generate the synthetic FS-XLT benchmark and build (or reuse) its tiny encoder.

    python scripts/build_synthetic.py OUT [--seed 0] [--encoder-cache OUT/encoders]
                                          [--no-encoder] [--steps N] [--threads 2]

Writes OUT/<task>/{train,dev,test}-<lang>.tsv, OUT/corpus/<lang>.txt and
OUT/benchmark.json (see fsxlt.synthetic), then trains the tiny encoder into
the cache (a second run with the same inputs reuses it) and prints its path
and the timings.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from fsxlt.errors import FsxltError
from fsxlt.synthetic import EncoderSettings, build_tiny_encoder, generate_benchmark


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--encoder-cache", type=Path, default=None)
    parser.add_argument("--no-encoder", action="store_true")
    parser.add_argument("--steps", type=int, default=EncoderSettings.steps)
    parser.add_argument("--threads", type=int, default=None)
    args = parser.parse_args(argv)
    try:
        started = time.perf_counter()
        description = generate_benchmark(args.out, args.seed)
        print(f"benchmark: {args.out} ({len(description['files'])} files) "
              f"in {time.perf_counter() - started:.1f}s")
        for lang in description["languages"]:
            print(f"  {lang['code']:6} overlap {lang['overlap']:.2f} "
                  f"(word types {lang['type_overlap_pos_train']:.2f})  {lang['order']} "
                  f"{lang['adjective']} {lang['adposition']}")
        if not args.no_encoder:
            started = time.perf_counter()
            path = build_tiny_encoder(args.out, args.encoder_cache or args.out / "encoders",
                                      args.seed, settings=EncoderSettings(steps=args.steps),
                                      threads=args.threads, log=print)
            print(f"encoder: {path} in {time.perf_counter() - started:.1f}s")
    except FsxltError as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
