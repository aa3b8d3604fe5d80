"""The remaining dev sets of the study's published buckets, on the release as downloaded.

Imports the release with ``--data-dir`` into a fresh store (timed, the whole command
as a user runs it), then prints, per set that selects models on a remaining dev set,
the bucket examples, how many were located in the dev file and how many not, the dev
lines left out and the remaining set's size; and, per dev file, its exact duplicate
lines and the lines the match key could merge (none expected).

    python scripts/published_dev_sets.py ../shared/data/published_buckets \\
        --data-dir '../shared/data/{task}' --task xnli --task pawsx
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

from fsxlt.data import read_examples
from fsxlt.sampling.locate import alike_lines
from fsxlt.sampling.published import dev_path
from fsxlt.sampling.store import find_sets, read_manifest
from fsxlt.tasks import get_task


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("release")
    parser.add_argument("--data-dir", required=True)
    parser.add_argument("--task", action="append", default=[])
    parser.add_argument("--lang", action="append", default=[])
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        store = Path(tmp) / "store"
        command = [sys.executable, "-m", "fsxlt", "buckets", "import-published", args.release,
                   "--out", str(store), "--data-dir", args.data_dir]
        command += [f"--task={t}" for t in args.task] + [f"--lang={x}" for x in args.lang]
        start = time.perf_counter()
        done = subprocess.run(command, capture_output=True, text=True)
        wall = time.perf_counter() - start
        print(done.stdout + done.stderr, end="")
        if done.returncode:
            return done.returncode
        print(f"\nimport with --data-dir: {wall:.1f} s wall, exit {done.returncode}\n")
        print("| set | bucket examples | located | not located | dev lines left out "
              "| remaining dev set | dev file |")
        print("|---|---|---|---|---|---|---|")
        dev_files = set()
        for directory in find_sets(store):
            manifest = read_manifest(directory)
            entry = manifest.get("dev_remaining")
            if not entry:
                continue
            drawn = sum(len(bucket["ids"]) for bucket in manifest["buckets"])
            name = f"{manifest['task']}/{manifest['language']}/k{manifest['k']}"
            print(f"| {name} | {drawn} | {entry['located']} | {len(entry['unlocated'])} "
                  f"| {entry['removed']} | {entry['n']} | {entry['source']['file']} |")
            dev_files.add((manifest["task"], manifest["language"]))
    print("\n| dev file | lines | lines in groups of exact duplicates | lines the match key "
          "merges |")
    print("|---|---|---|---|")
    for task, language in sorted(dev_files):
        path = dev_path(args.data_dir, task, language)
        dev = read_examples(path, get_task(task), language=language, split="dev")
        copies = Counter((ex.text_a, ex.text_b, ex.label) for ex in dev)
        duplicated = sum(n for n in copies.values() if n > 1)
        merged = sum(len(group) for group in alike_lines(dev))
        print(f"| {task}/{path.name} | {len(dev)} | {duplicated} | {merged} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
