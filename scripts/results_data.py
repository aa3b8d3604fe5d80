"""Build the data slices that the pages of docs/results/ ran on, from the files as downloaded.

Each page of docs/results/ that cuts its data by hand names one recipe here; a
recipe writes every file that page's commands and configs read, under the
names they use, into one output directory. Ranges are 1-based and inclusive,
counted in sentences (CoNLL-style files: blocks separated by blank lines) or
in lines (one example per line). Nothing is sampled: the slices are prefixes
and ranges of the files, so they are the same on every machine.

    python scripts/results_data.py panx-regimes --panx ../shared/data/panx --out data2
    python scripts/results_data.py icl-same-buckets --xnli ../shared/data/xnli \\
        --pawsx ../shared/data/pawsx --out .
    python scripts/results_data.py fewclue-sources --xnli ../shared/data/xnli \\
        --pawsx ../shared/data/pawsx --out src
    python scripts/results_data.py icl-xnli-de --xnli ../shared/data/xnli --out xnli

Recipes (the page that uses each):

- ``panx-regimes`` (training regimes on real PAN-X; the peer's regimes on real
  PAN-X): ``train-en.tsv`` = English train sentences 1-2,000;
  ``dev-en-select.tsv`` = English dev sentences 201-700 (source-training's
  selection); ``dev-en.tsv`` = English dev 1-100 (the ``source-dev``
  candidate); per target (ar, de, zh) ``dev-L.tsv`` = its dev sentences 1-100
  and ``test-L.tsv`` = 201-500.
- ``icl-same-buckets`` (in-context learning against fine-tuning): per task
  (xnli, pawsx) and target (de, zh) ``m/T/test-L.tsv`` = dev lines 1-200 and
  ``m/T/dev-L.tsv`` = 201-440 (the pool); ``src/T/dev-en.tsv`` = English dev
  lines 441-640 and ``src/T/train-en.tsv`` = 641 to the end.
- ``fewclue-sources`` (FewCLUE on the real encoder): ``xnli-train-en.tsv`` =
  English XNLI dev lines 1-2,000, ``xnli-dev-en.tsv`` = 2,001 to the end;
  ``pawsx-train-en.tsv`` = PAWS-X 1-1,600, ``pawsx-dev-en.tsv`` = the rest.
- ``icl-xnli-de`` (in-context learning with Gemma 3 270M on XNLI):
  ``test-de.tsv`` = German XNLI dev lines 1-500, ``dev-de.tsv`` = 501 to the end.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path

END = None  # a range's open end: to the last unit of the file


def sentences(path: Path) -> list[str]:
    """The blank-line separated blocks of a CoNLL-style file, each with its newline."""
    blocks, current = [], []
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            current.append(line)
        elif current:
            blocks.append("\n".join(current) + "\n")
            current = []
    if current:
        blocks.append("\n".join(current) + "\n")
    return blocks


def lines(path: Path) -> list[str]:
    return [line + "\n" for line in path.read_text(encoding="utf-8").splitlines() if line]


def cut(units: list[str], first: int, last: int | None, what: Path) -> list[str]:
    """Units ``first``..``last`` (1-based, inclusive; ``last`` None: to the end)."""
    stop = len(units) if last is None else last
    if stop > len(units) or first < 1 or first > stop:
        raise SystemExit(f"{what}: has {len(units)} units, the range {first}-{last} does not fit")
    return units[first - 1:stop]


def write(out: Path, name: str, units: list[str], joiner: str) -> None:
    path = out / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(joiner.join(units), encoding="utf-8")
    print(f"{path}: {len(units)}")


def panx_regimes(args: argparse.Namespace) -> None:
    src, out = Path(args.panx), Path(args.out)
    train_en, dev_en = sentences(src / "train-en.tsv"), sentences(src / "dev-en.tsv")
    write(out, "train-en.tsv", cut(train_en, 1, 2000, src / "train-en.tsv"), "\n")
    write(out, "dev-en-select.tsv", cut(dev_en, 201, 700, src / "dev-en.tsv"), "\n")
    write(out, "dev-en.tsv", cut(dev_en, 1, 100, src / "dev-en.tsv"), "\n")
    for lang in ("ar", "de", "zh"):
        dev = sentences(src / f"dev-{lang}.tsv")
        write(out, f"dev-{lang}.tsv", cut(dev, 1, 100, src / f"dev-{lang}.tsv"), "\n")
        write(out, f"test-{lang}.tsv", cut(dev, 201, 500, src / f"dev-{lang}.tsv"), "\n")


def icl_same_buckets(args: argparse.Namespace) -> None:
    out = Path(args.out)
    for task, folder in (("xnli", Path(args.xnli)), ("pawsx", Path(args.pawsx))):
        for lang in ("de", "zh"):
            rows = lines(folder / f"dev-{lang}.tsv")
            write(out, f"m/{task}/test-{lang}.tsv", cut(rows, 1, 200, folder), "")
            write(out, f"m/{task}/dev-{lang}.tsv", cut(rows, 201, 440, folder), "")
        english = lines(folder / "dev-en.tsv")
        write(out, f"src/{task}/dev-en.tsv", cut(english, 441, 640, folder), "")
        write(out, f"src/{task}/train-en.tsv", cut(english, 641, END, folder), "")


def fewclue_sources(args: argparse.Namespace) -> None:
    out = Path(args.out)
    for task, folder, split in (("xnli", Path(args.xnli), 2000), ("pawsx", Path(args.pawsx), 1600)):
        english = lines(folder / "dev-en.tsv")
        write(out, f"{task}-train-en.tsv", cut(english, 1, split, folder), "")
        write(out, f"{task}-dev-en.tsv", cut(english, split + 1, END, folder), "")


def icl_xnli_de(args: argparse.Namespace) -> None:
    folder, out = Path(args.xnli), Path(args.out)
    rows = lines(folder / "dev-de.tsv")
    write(out, "test-de.tsv", cut(rows, 1, 500, folder), "")
    write(out, "dev-de.tsv", cut(rows, 501, END, folder), "")


RECIPES: dict[str, tuple[Callable[[argparse.Namespace], None], tuple[str, ...]]] = {
    "panx-regimes": (panx_regimes, ("panx",)),
    "icl-same-buckets": (icl_same_buckets, ("xnli", "pawsx")),
    "fewclue-sources": (fewclue_sources, ("xnli", "pawsx")),
    "icl-xnli-de": (icl_xnli_de, ("xnli",)),
}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("recipe", choices=sorted(RECIPES))
    for source in ("panx", "xnli", "pawsx"):
        parser.add_argument(f"--{source}", help=f"the folder of {source}'s files as downloaded "
                            "({split}-{lang}.tsv)")
    parser.add_argument("--out", required=True, help="where the slices are written")
    args = parser.parse_args(argv)
    build, needs = RECIPES[args.recipe]
    missing = [f"--{n}" for n in needs if getattr(args, n) is None]
    if missing:
        parser.error(f"{args.recipe} needs {', '.join(missing)}")
    try:
        build(args)
    except FileNotFoundError as exc:
        sys.exit(f"{exc.filename}: not found")


if __name__ == "__main__":
    main()
