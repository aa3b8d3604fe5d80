"""The task registry: what each FS-XLT task is, read from one YAML file per task.

A task spec says what kind of problem a task is (classification, tagging, multiple
choice over candidate positions, extractive QA, or generation of a target text, which
has no labels), its label set, metric, languages, where its data comes from (local files
or the Hugging Face hub) and the default sampling and training hyperparameters of
docs/protocol.md. FewCLUE's tasks add ``label_names`` (descriptions of numeric label
ids), ``source_task`` (the English counterpart whose checkpoint starts the FS-XLT arm)
and ``submission`` (the task's name in its benchmark's prediction files;
``submission_format``: fewclue, xglue or squad, the last for extractive QA's SQuAD-style
prediction files); ``benchmark`` names the benchmark a task belongs to (``fewclue``: the
task is one of FewCLUE's, which ``fsxlt buckets import-fewclue`` imports). The built-in
specs live in ``configs/<task>.yaml``; a path to another YAML file with the same fields
defines a new task without touching the code.

The prompts a task's ``icl:`` section defines live in :mod:`fsxlt.tasks.prompts`,
the languages' names and WALS features in :mod:`fsxlt.tasks.languages`. This
package loads no data and no models.

The spec's types live in :mod:`fsxlt.tasks.spec`, a YAML's parsing in
:mod:`fsxlt.tasks.parse`, the built-in tasks and lookup by name in
:mod:`fsxlt.tasks.registry`; this module hands their names on.
"""

from __future__ import annotations

from fsxlt.tasks.parse import (
    PET_PLACEHOLDERS,
    PET_SPAN_FORMAT,
    SUBMISSION_FORMATS,
    parse_task,
)
from fsxlt.tasks.registry import (
    benchmark_tasks,
    builtin_tasks,
    get_task,
)
from fsxlt.tasks.spec import (
    COLUMN_ROLES,
    DATA_FORMATS,
    KINDS,
    METRICS,
    QA_METRICS,
    SAMPLERS,
    UNLABELLED_KINDS,
    DataSpec,
    HubSource,
    InputKind,
    PetSpec,
    SamplingSpec,
    TaskKind,
    TaskSpec,
    TrainingSpec,
)

__all__ = ["COLUMN_ROLES", "DATA_FORMATS", "DataSpec", "HubSource", "InputKind",
           "KINDS", "METRICS", "PET_PLACEHOLDERS", "PET_SPAN_FORMAT", "PetSpec",
           "QA_METRICS", "SAMPLERS", "SUBMISSION_FORMATS", "SamplingSpec", "TaskKind",
           "TaskSpec", "TrainingSpec", "UNLABELLED_KINDS", "benchmark_tasks",
           "builtin_tasks", "get_task", "parse_task"]
