"""What an ICL run's predictions file says of each ranked example beyond its label: each
option's log-likelihood by label (:func:`fsxlt.icl.run.execute` writes it) and, on
request, the prompt the example was scored with, as lm-eval's per-sample files hold them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from fsxlt.tasks import TaskSpec


def option_keys(spec: TaskSpec, options: Sequence[Any]) -> list[str]:
    """The label of each option: the task's labels, or a candidate's position (a multiple-
    choice example's own number of candidates)."""
    labels = list(spec.labels)
    return labels if len(labels) == len(options) else [str(i) for i in range(len(options))]


def prompt_details(prepared: Any) -> list[dict[str, Any]]:
    """Per test example (in test order) the prompt it was scored with, as text: the shared
    prefix (instruction and demonstrations), its query, and each option's continuation by
    label; lm-eval's per-sample files hold the same as ``arguments``."""
    spec = prepared.run.task_spec
    found: dict[int, dict[str, Any]] = {}
    for group in prepared.groups:
        text = group.text
        for row, position in enumerate(group.examples):
            options = text.continuations[row] if row < len(text.continuations) else []
            found[position] = {"prompt": {
                "prefix": text.prefix, "query": text.queries[row],
                "options": dict(zip(option_keys(spec, options), options, strict=True))
                if options else None}}
    return [found[position] for position in range(len(prepared.test))]


__all__ = ["option_keys", "prompt_details"]
