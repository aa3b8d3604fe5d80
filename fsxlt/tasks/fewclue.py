"""FewCLUE's tasks as the registry knows them: the benchmark its task YAMLs name, the
sampler its fixed splits are imported under, and the list of its tasks.

The import of those splits (:mod:`fsxlt.sampling.fewclue`) and the submission folder
(:mod:`fsxlt.study.submission`) both read these facts here, where FewCLUE's tasks are
defined, so neither reaches into the other's folder.
"""

from __future__ import annotations

from fsxlt.tasks import benchmark_tasks

BENCHMARK = "fewclue"  # the task YAMLs of FewCLUE's tasks say benchmark: fewclue
FIXED_SAMPLER = "fewclue-fixed"  # the sampler of a set of FewCLUE's own fixed splits


def fewclue_tasks() -> tuple[str, ...]:
    """FewCLUE's tasks: the built-in tasks whose YAML says ``benchmark: fewclue``, by name."""
    return benchmark_tasks(BENCHMARK)


__all__ = ["BENCHMARK", "FIXED_SAMPLER", "fewclue_tasks"]
