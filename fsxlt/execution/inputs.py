"""The input files of runs: a sweep cell's bucket set (what the set answers for:
:mod:`fsxlt.sampling.set_files`); the task's dev and test files are
:func:`fsxlt.data.files.data_file`'s."""

from __future__ import annotations

from fsxlt.errors import MissingInput
from fsxlt.execution.config import TaskPlan
from fsxlt.execution.spec import Hashes
from fsxlt.sampling.set_files import SetFiles, set_files


def bucket_files(plan: TaskPlan, lang: str, k: int, hashes: Hashes) -> SetFiles:
    """The set's bucket files the sweep runs, each checked against its manifest's hash."""
    from fsxlt.sampling.store import MANIFEST, bucket_dir

    directory = bucket_dir(plan.buckets, plan.task, lang, k)
    if not (directory / MANIFEST).is_file():
        raise MissingInput(f"{directory}: no bucket set for {plan.task}/{lang}/k{k} (draw it "
                           "with fsxlt sample, or fsxlt buckets import-published/"
                           "import-fewclue)", "set", plan.task, lang, directory, k)
    return set_files(directory, hashes.text, plan.n_buckets, bucket_digest=hashes.bucket)
