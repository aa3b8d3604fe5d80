"""What each reading changes on real files: examples whose model input changes, remaining
dev lines, bucket hashes.

    python scripts/readings_diff.py --data ../shared/data --tokenizer /tmp/e5 --out FILE.csv

``--data`` holds XTREME's XNLI and PAWS-X dev files (``xnli/dev-<lang>.tsv``,
``pawsx/dev-<lang>.tsv``) and the study's release (``published_buckets/``). For every
task and language it counts, under mBERT's cased normaliser and pre-tokenizer and under
the tokenizer of ``--tokenizer`` (a Hugging Face folder; the offline e5 encoder's is
XLM-R's sentencepiece vocabulary):

* ``text`` (XNLI): the release's examples (XNLI 1.0's tokenized text) against the raw dev
  lines they were located in: how many have another input;
* ``quoting`` (PAWS-X): dev examples whose input differs between ``as-written`` and
  ``csv``;
* ``remaining``: per published set, dev lines that are in the by-text remaining set and
  not the by-line one (lines repeating a bucket's text);
* bucket hashes: published buckets whose hash changes when put in the dev file's form
  (``--bucket-text dev-file``, under the study's reading of the dev file where it has
  one), and buckets ``fsxlt sample`` draws (seed 0, 40 per K) whose hash changes between
  the two quoting readings (PAWS-X).

Prints one line per row and writes them as CSV.
"""

from __future__ import annotations

import argparse
import csv
import sys
from collections.abc import Iterable
from pathlib import Path

from fsxlt.data import read_examples
from fsxlt.data.readings import make_reading
from fsxlt.sampling.forms import form_differences, in_dev_form, mbert_words
from fsxlt.sampling.locate import locate, locate_by_line
from fsxlt.sampling.published import import_published
from fsxlt.sampling.store import BucketSet, bucket_hash, render_bucket

KS = (1, 2, 4, 8)
CSV_QUOTING = make_reading({"quoting": "csv"})


def _words(tokenizer, text: str | None) -> tuple:
    return tuple(tokenizer.tokenize(text or "")) if tokenizer is not None else ()


def _input(tokenizer, example) -> tuple[tuple, tuple]:
    """An example's input under mBERT's pre-tokenizer and under ``tokenizer``."""
    return ((mbert_words(example.text_a), mbert_words(example.text_b)),
            (_words(tokenizer, example.text_a), _words(tokenizer, example.text_b)))


def _published(release: Path, task: str, tmp: Path) -> list[BucketSet]:
    """The release's sets of ``task`` (read, not written anywhere that matters)."""
    return import_published(release, tmp / task, tasks=[task]).sets


def _hashes(bucket_set: BucketSet) -> list[str]:
    return [bucket_hash(render_bucket(bucket_set, i)) for i in range(len(bucket_set.buckets))]


def rows(data: Path, tokenizer, tmp: Path) -> Iterable[dict]:
    release = data / "published_buckets"
    # XNLI: the release's tokenized text against the raw dev lines
    for bucket_set in _sets_by_language(_published(release, "xnli", tmp)):
        lang = bucket_set[0].language
        dev = read_examples(data / "xnli" / f"dev-{lang}.tsv", "xnli", language=lang)
        yield from _set_rows("xnli", lang, bucket_set, dev, tokenizer, "text")
    # PAWS-X: the dev file's two quoting readings, and the release against each
    pawsx_sets = _sets_by_language(_published(release, "pawsx", tmp))
    for lang in ("en", "de", "zh", "ko"):
        path = data / "pawsx" / f"dev-{lang}.tsv"
        written = read_examples(path, "pawsx", language=lang)
        unquoted = read_examples(path, "pawsx", language=lang, reading=CSV_QUOTING)
        mbert = e5 = 0
        for a, b in zip(written, unquoted, strict=True):
            (ma, ea), (mb, eb) = _input(tokenizer, a), _input(tokenizer, b)
            mbert, e5 = mbert + (ma != mb), e5 + (ea != eb)
        yield {"task": "pawsx", "language": lang, "what": "dev examples, quoting as-written "
               "vs csv", "n": len(written), "changed": mbert, "by": "mBERT",
               "changed_tokenizer": e5}
        yield from _sampled_hashes(path, lang)
        for sets in pawsx_sets:
            if sets[0].language == lang:
                yield from _set_rows("pawsx", lang, sets, written, tokenizer, "quoting",
                                     unquoted)


def _sets_by_language(sets: list[BucketSet]) -> list[list[BucketSet]]:
    by: dict[str, list[BucketSet]] = {}
    for bucket_set in sets:
        by.setdefault(bucket_set.language, []).append(bucket_set)
    return [sorted(group, key=lambda s: s.k) for _lang, group in sorted(by.items())]


def _set_rows(task: str, lang: str, sets: list[BucketSet], dev: list, tokenizer,
              axis: str, study_dev: list | None = None) -> Iterable[dict]:
    """Per language: release examples whose input differs from their dev line's; per set:
    bucket hashes changed by the dev file's form, and the remaining-dev rules' difference."""
    seen: dict[str, tuple] = {}
    for bucket_set in sets:
        check = form_differences(zip(bucket_set.bucket_indices(), bucket_set.buckets,
                                     strict=True), dev)
        for (bucket, position), line in check.dev_texts.items():
            example = bucket_set.buckets[bucket_set.bucket_indices().index(bucket)][position]
            seen.setdefault(example.id, (_input(tokenizer, example), _input(tokenizer, line)))
        moved = in_dev_form(bucket_set.buckets, bucket_set.bucket_indices(), check)
        before = _hashes(bucket_set)
        after_set = BucketSet(**{**bucket_set.__dict__, "buckets": moved, "written": None})
        changed = sum(a != b for a, b in zip(before, _hashes(after_set), strict=True))
        yield {"task": task, "language": lang, "what": f"k{bucket_set.k}: published buckets "
               "whose hash changes in the dev file's form (default reading)",
               "n": len(before), "changed": changed, "by": "hash", "changed_tokenizer": ""}
        drawn = list(zip(bucket_set.bucket_indices(), bucket_set.buckets, strict=True))
        base = study_dev if study_dev is not None else dev
        by_text = locate(drawn, base).remaining
        by_line = locate_by_line(task, lang, drawn, base).remaining
        extra = len({ex.id for ex in by_line} - {ex.id for ex in by_text})
        yield {"task": task, "language": lang, "what": f"k{bucket_set.k}: remaining dev lines "
               "by-line keeps and by-text drops", "n": len(by_line), "changed": extra,
               "by": "id", "changed_tokenizer": ""}
    mbert = sum(ours[0] != theirs[0] for ours, theirs in seen.values())
    other = sum(ours[1] != theirs[1] for ours, theirs in seen.values())
    yield {"task": task, "language": lang, "what": f"release examples ({axis}): input differs "
           "from their dev line's (default reading)", "n": len(seen), "changed": mbert,
           "by": "mBERT", "changed_tokenizer": other}


def _sampled_hashes(path: Path, lang: str) -> Iterable[dict]:
    from fsxlt.data import load_split
    from fsxlt.sampling.api import sample_set

    for k in KS:
        plain = sample_set("pawsx", load_split("pawsx", lang, "dev", path=path), k)
        quoted = sample_set("pawsx", load_split("pawsx", lang, "dev", path=path,
                                                reading=CSV_QUOTING), k)
        changed = sum(a != b for a, b in zip(_hashes(plain), _hashes(quoted), strict=True))
        yield {"task": "pawsx", "language": lang, "what": f"k{k}: fsxlt-sampled buckets whose "
               "hash changes with quoting=csv", "n": len(plain.buckets), "changed": changed,
               "by": "hash", "changed_tokenizer": ""}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, required=True)
    parser.add_argument("--tokenizer", type=Path, default=None,
                        help="a Hugging Face model folder whose tokenizer to count with")
    parser.add_argument("--out", type=Path, required=True, help="CSV file to write")
    args = parser.parse_args(argv)
    tokenizer = None
    if args.tokenizer is not None:
        from transformers import AutoTokenizer

        tokenizer = AutoTokenizer.from_pretrained(args.tokenizer)
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        found = []
        for row in rows(args.data, tokenizer, Path(tmp)):
            under = f" ({row['by']})" if row["by"] == "mBERT" else ""
            print(f"{row['task']}/{row['language']}: {row['what']}: {row['changed']} of "
                  f"{row['n']}{under}" + (f", {row['changed_tokenizer']} (tokenizer of "
                                          f"{args.tokenizer})"
                                          if row["changed_tokenizer"] != "" else ""),
                  flush=True)
            found.append(row)
    with open(args.out, "w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, ["task", "language", "what", "n", "changed", "by",
                                         "changed_tokenizer"])
        writer.writeheader()
        writer.writerows(found)
    return 0


if __name__ == "__main__":
    sys.exit(main())
