"""Sweeps: expand a config into runs, skip what is done, run the rest locally or on Ray.

This package owns *which* runs happen where; how a run trains is
:mod:`fsxlt.training`'s business (a worker only calls ``AdaptEngine.adapt``),
how an in-context learning run prompts and scores :mod:`fsxlt.icl`'s (a worker
calls ``prepare`` and ``execute``).

    from fsxlt.execution import load_config, run_sweep

    result = run_sweep(load_config("configs/sweeps/study.yaml"), workers=4)
    print(len(result.completed), len(result.failed))

- :mod:`~fsxlt.execution.config`: the sweep config format, parsed into one
  :class:`~fsxlt.execution.config.TaskPlan` per task.
- :mod:`~fsxlt.execution.spec`: a run's :class:`RunSpec` and its identity.
- :mod:`~fsxlt.execution.inputs`: bucket sets and data files, hash-checked.
- :mod:`~fsxlt.execution.expansion`: a config's expansion into runs.
- :mod:`~fsxlt.execution.adapt_runs`: the runs of ``fsxlt adapt``, built as a
  sweep builds them.
- :mod:`~fsxlt.execution.icl_config`: the ``icl:`` section (in-context learning
  arms); :mod:`~fsxlt.execution.icl_runs`: their runs on the cells' buckets and
  at K=0, built by :func:`fsxlt.icl.plan.icl_runs` as ``fsxlt icl`` builds them.
- :mod:`fsxlt.study.runs` (not in this package): where records go, their format
  and the write rule every run follows.
- :mod:`~fsxlt.execution.worker`: one group of runs in one process.
- :mod:`~fsxlt.execution.executors`: :func:`run_sweep`, local processes and Ray.

The names below load their module on first use: importing the package (or one of
its light modules, such as :mod:`~fsxlt.execution.config`) imports no torch, so a
command refuses a bad config in its start-up time.
"""

from fsxlt.lazy import lazy_names

_API = {
    "EXECUTORS": "fsxlt.execution.executors",
    "Outcome": "fsxlt.execution.worker",
    "Plan": "fsxlt.execution.spec",
    "RunSpec": "fsxlt.execution.spec",
    "SweepConfig": "fsxlt.execution.config",
    "SweepResult": "fsxlt.execution.executors",
    "SweepStatus": "fsxlt.execution.executors",
    "adapt_plan": "fsxlt.execution.adapt_runs",
    "expand": "fsxlt.execution.expansion",
    "load_config": "fsxlt.execution.config",
    "parse_config": "fsxlt.execution.config",
    "run_group": "fsxlt.execution.worker",
    "run_sweep": "fsxlt.execution.executors",
    "sweep_status": "fsxlt.execution.executors",
    "write_zero_shot": "fsxlt.execution.executors",
}
__all__ = list(_API)
__getattr__, __dir__ = lazy_names(__name__, _API)
