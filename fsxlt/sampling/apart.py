"""The test set is never the model-selection set: a run's test file may not be the dev
set it selects on, by content, nor share most of its examples with it.

A dev set picks the learning rate and epoch of every run; a score on those same
examples rewards the pick, not the transfer. Two files are the same set when their
bytes are (a copy under another name, ``test-de.tsv`` made from ``dev-de.tsv``), or
when half or more of the smaller one's examples, compared by content
(:meth:`content_key`: tokens and tags, texts and label, ...), are the other's (a cut of
one file, a file read twice under two limits). Treebanks and NER corpora repeat short
sentences on their own: 79 of UD English's 5,440 test sentences (`Thank you .`) are
also dev sentences, and that passes.

``dev_limit``/``test_limit`` samples are drawn from their files after this check, so
limits drawn from one file are refused with it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from fsxlt.data.readings import DEFAULT_READING, Reading
from fsxlt.errors import FsxltError
from fsxlt.fileio import sha256_file

_SHARED: dict[tuple[str, str, str, str, str], tuple[int, int, int]] = {}


def shared_examples(dev: Sequence[Any], test: Sequence[Any]) -> int:
    """How many of ``test``'s examples occur in ``dev``, by content."""
    keys = {example.content_key() for example in dev}
    return sum(example.content_key() in keys for example in test)


def check_apart(dev: str | Path | None, test: str | Path | None, task: Any, language: str, *,
                reading: Reading = DEFAULT_READING, dev_what: str = "the dev set",
                test_what: str = "the test file",
                digest: Callable[[Path], str] = sha256_file,
                dev_split: str | None = "dev", test_split: str | None = "test") -> None:
    """Refuse, in one line, a ``test`` file that is the ``dev`` set runs select on
    (module docstring). Either None: nothing to compare. Each (dev, test) pair of contents
    is read once a process."""
    from fsxlt.sampling.set_files import read_data_file

    if dev is None or test is None:
        return
    dev, test = Path(dev), Path(test)
    if not dev.is_file() or not test.is_file():
        return
    remedy = ("model selection on the test set rewards the pick, not the transfer; give a "
              "test file of its own (cut a dev file in two: docs/sweeps.md#a-smoke-test-first)")
    dev_sha, test_sha = digest(dev), digest(test)
    if dev_sha == test_sha and (dev_split == test_split or not task.reads_parts):
        raise FsxltError(f"{test}: {test_what} is {dev_what} runs select on ({dev}: the same "
                         f"sha256); {remedy}")
    key = (dev_sha, test_sha, language, repr(reading), f"{dev_split}/{test_split}")
    if key not in _SHARED:
        dev_examples = read_data_file(dev, task, language, dev_split, reading)
        test_examples = read_data_file(test, task, language, test_split, reading)
        _SHARED[key] = (shared_examples(dev_examples, test_examples), len(dev_examples),
                        len(test_examples))
    shared, n_dev, n_test = _SHARED[key]
    if shared and 2 * shared >= min(n_dev, n_test):
        raise FsxltError(f"{test}: {shared} of {test_what}'s {n_test} examples are in "
                         f"{dev_what} runs select on ({dev}, {n_dev} examples); {remedy}")


__all__ = ["check_apart", "shared_examples"]
