"""Time the sharing path on the published buckets: import, export as a Hugging Face dataset,
import back; each against the way ``datasets`` itself would do it, in the same run.

    python scripts/bench_sharing.py --published ../shared/data/published_buckets

Steps (each on every set of the folder):

- ``import-published``: the study's folder into a bucket store;
- ``export``: fsxlt's export (parquet written straight with pyarrow), against building
  each split as ``datasets.Dataset.from_list(...).to_parquet`` (fsxlt 0.6.0's way);
- ``import-hf``: fsxlt's import (each split's parquet read with pyarrow, every split
  verified), against ``datasets.load_dataset(folder, config)`` of every config into a
  fresh cache (0.6.0's way, and what a user of the dataset runs);
- that the store came back byte for byte (exit 1 if not).

Prints one line per step: seconds, sets, seconds per set, and the ratio to its baseline.
"""

from __future__ import annotations

import argparse
import filecmp
import sys
import tempfile
import time
from pathlib import Path


def timed(what, *args, **kwargs):
    start = time.perf_counter()
    result = what(*args, **kwargs)
    return result, time.perf_counter() - start


def export_the_datasets_way(store: Path) -> int:
    """Every split of every set as ``Dataset.from_list(...).to_parquet`` (in memory)."""
    import io

    from datasets import Dataset, disable_progress_bars

    from fsxlt.sampling.hf_dataset import features_of, set_splits, to_row
    from fsxlt.sampling.store import find_sets
    from fsxlt.tasks import get_task

    disable_progress_bars()
    n = 0
    for directory in find_sets(store):
        manifest, splits = set_splits(directory)
        task = get_task(manifest["task"])
        features = features_of(task, [ex for examples in splits.values() for ex in examples])
        for examples in splits.values():
            Dataset.from_list([to_row(ex, features) for ex in examples],
                              features=features).to_parquet(io.BytesIO())
        n += 1
    return n


def load_the_datasets_way(folder: Path, cache: Path) -> int:
    """``datasets.load_dataset(folder, config)`` of every config the card lists."""
    from datasets import disable_progress_bars, load_dataset
    from datasets.utils.logging import set_verbosity_error

    from fsxlt.sampling.hf_dataset import card_configs

    disable_progress_bars()
    set_verbosity_error()
    configs = card_configs(folder)
    for config in configs:
        load_dataset(str(folder), config, cache_dir=str(cache))
    return len(configs)


def same_tree(a: Path, b: Path) -> bool:
    files = sorted(p.relative_to(a) for p in a.rglob("*") if p.is_file()
                   and not p.name.startswith(".fsxlt"))
    theirs = sorted(p.relative_to(b) for p in b.rglob("*") if p.is_file()
                    and not p.name.startswith(".fsxlt"))
    return files == theirs and all(filecmp.cmp(a / f, b / f, shallow=False) for f in files)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--published", type=Path, required=True,
                        help="the study's published buckets as downloaded")
    parser.add_argument("--work", type=Path, default=None, help="scratch folder (default: a "
                        "temporary one)")
    args = parser.parse_args(argv)
    from fsxlt.sampling.hf_dataset import export_hf, import_hf
    from fsxlt.sampling.published import import_published

    work = args.work or Path(tempfile.mkdtemp(prefix="fsxlt-bench-sharing-"))
    store, dataset, back = work / "store", work / "dataset", work / "back"
    summary, seconds = timed(import_published, args.published, store)
    sets = len(summary.sets)
    rows = [("import-published", seconds, None)]
    _, seconds = timed(export_hf, store, dataset)
    _, baseline = timed(export_the_datasets_way, store)
    rows.append(("export --format hf", seconds, baseline))
    _, seconds = timed(import_hf, dataset, back)
    _, baseline = timed(load_the_datasets_way, dataset, work / "cache")
    rows.append(("import-hf", seconds, baseline))
    print(f"{sets} bucket sets from {args.published}")
    for step, took, against in rows:
        ratio = f", datasets' way {against:.1f} s: {against / took:.1f}x" if against else ""
        print(f"{step:18} {took:7.1f} s  {took / sets:.3f} s/set{ratio}")
    same = same_tree(store, back)
    print("the store came back byte for byte" if same else "the store came back DIFFERENT")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
