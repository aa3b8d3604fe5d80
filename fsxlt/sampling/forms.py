"""A published set's text form against the dev file it was located in.

The study's release holds its XNLI buckets in XNLI 1.0's word-tokenized form
and its PAWS-X buckets unquoted; a user's dev file may hold the raw sentences
(XTREME's XNLI) or CSV-quoted fields (XTREME's PAWS-X). The locator finds each
bucket example in the dev file whatever the form (:mod:`fsxlt.sampling.locate`),
so without a check a set would train on one form and select and test on the
other. :func:`form_differences` pairs every located bucket example with its dev
line and counts the examples whose model input differs: their words under
mBERT's own normaliser and pre-tokenizer (``bert-base-multilingual-cased``:
control characters dropped, CJK characters split, punctuation split, no
lower-casing, accents kept). Spacing that the pre-tokenizer undoes
(``erklärt , die`` against ``erklärt, die``) is no difference; Hindi conjuncts
split at the virama and CSV quotes are.

An import refuses a set with differences unless told which form to keep
(``bucket_text``): ``release`` keeps the release's text (the manifest records
the differences), ``dev-file`` puts every located example in the dev file's text
as the set's reading read it, so buckets, remaining dev set and test file share
one form (a new set: its buckets' hashes are not the release's).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from functools import lru_cache
from typing import Any

from fsxlt.data import TextExample
from fsxlt.sampling.locate import bucket_key, dev_index

BUCKET_TEXTS = ("release", "dev-file")


@lru_cache(maxsize=1)
def _mbert() -> tuple[Any, Any]:
    from tokenizers import normalizers, pre_tokenizers

    return (normalizers.BertNormalizer(clean_text=True, handle_chinese_chars=True,
                                       strip_accents=False, lowercase=False),
            pre_tokenizers.BertPreTokenizer())


def mbert_words(text: str | None) -> tuple[str, ...]:
    """``text`` as mBERT's (cased) normaliser and pre-tokenizer cut it, before wordpieces."""
    if not text:
        return ()
    normalizer, pre = _mbert()
    return tuple(word for word, _span in pre.pre_tokenize_str(normalizer.normalize_str(text)))


@dataclass
class FormCheck:
    """A set's bucket examples against their dev lines: ``compared`` located examples,
    ``differ`` of them with other mBERT words in a text, ``examples`` a few of those
    (bucket index, the release's text, the dev file's), ``dev_texts`` each located
    example's dev line (by position in its bucket) for putting the set in the dev
    file's form."""

    compared: int
    differ: int
    examples: list[tuple[int, str, str]]
    dev_texts: dict[tuple[int, int], TextExample]

    def to_dict(self) -> dict[str, Any]:
        return {"compared": self.compared, "differ": self.differ,
                "tokenizer": "mBERT's normaliser and pre-tokenizer (cased)"}


def form_differences(buckets: Sequence[tuple[int, Sequence[TextExample]]],
                     dev: Sequence[TextExample], keep: int = 3) -> FormCheck:
    """Pair each bucket example with the first dev line holding its texts and label
    under the match key, and count the pairs whose mBERT words differ."""
    index = dev_index(dev)
    compared = differ = 0
    shown: list[tuple[int, str, str]] = []
    dev_texts: dict[tuple[int, int], TextExample] = {}
    for bucket, examples in buckets:
        for position, example in enumerate(examples):
            line = next((dev[i] for i in index.get(bucket_key(example), [])
                         if dev[i].label == example.label), None)
            if line is None:
                continue
            compared += 1
            dev_texts[(bucket, position)] = line
            ours = mbert_words(example.text_a) + ("|",) + mbert_words(example.text_b)
            theirs = mbert_words(line.text_a) + ("|",) + mbert_words(line.text_b)
            if ours != theirs:
                differ += 1
                if len(shown) < keep:
                    shown.append((bucket, *_where(ours, theirs)))
    return FormCheck(compared, differ, shown, dev_texts)


def _where(ours: tuple[str, ...], theirs: tuple[str, ...]) -> tuple[str, str]:
    """The words around the first place two word sequences differ, each as a short text."""
    first = next((i for i, (a, b) in enumerate(zip(ours, theirs, strict=False)) if a != b),
                 min(len(ours), len(theirs)))
    start = max(0, first - 2)
    return " ".join(ours[start:first + 4]), " ".join(theirs[start:first + 4])


def in_dev_form(buckets: list[list[TextExample]], indices: Sequence[int],
                check: FormCheck) -> list[list[TextExample]]:
    """The buckets with every located example's texts taken from its dev line (ids and
    labels kept; an unlocated example as it was)."""
    out = []
    for bucket, examples in zip(indices, buckets, strict=True):
        kept = []
        for position, example in enumerate(examples):
            line = check.dev_texts.get((bucket, position))
            kept.append(example if line is None else
                        replace(example, text_a=line.text_a, text_b=line.text_b))
        out.append(kept)
    return out


__all__ = ["BUCKET_TEXTS", "FormCheck", "form_differences", "in_dev_form", "mbert_words"]
