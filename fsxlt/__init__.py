"""fsxlt: few-shot crosslingual transfer with standardized, verifiable buckets.

The package is a set of small modules, one concern each (see
docs/architecture.md); the ``fsxlt`` command line is a thin layer over them,
so everything it does can also be called from Python or a notebook. What a
notebook needs is named here (loaded on first use, so ``import fsxlt`` stays
light and does not import torch)::

    import fsxlt

    fsxlt.sample("panx", ["de"], [1, 2], "buckets", data_dir="data/panx")
    reports = fsxlt.check_store("buckets")
    engine = fsxlt.AdaptEngine.from_start("panx", "de", "ckpt/panx", dev=dev, test=test)
    record = engine.adapt(bucket, method="lora", method_options={"rank": 4})
    fsxlt.run_sweep(fsxlt.load_config("configs/sweeps/study.yaml"))
    print(fsxlt.report_text("runs"))
"""

from __future__ import annotations

from fsxlt.lazy import lazy_names

__version__ = "0.15.0"

# name -> module that defines it
_API = {
    # tasks and data
    "get_task": "fsxlt.tasks", "read_examples": "fsxlt.data", "load_split": "fsxlt.data",
    # sampling and checking
    "sample": "fsxlt.sampling.api", "sample_set": "fsxlt.sampling.api",
    "read_set": "fsxlt.sampling.store", "read_bucket": "fsxlt.sampling.store",
    "check_store": "fsxlt.sampling.check", "check_set": "fsxlt.sampling.check",
    "import_published": "fsxlt.sampling.published", "select": "fsxlt.sampling.select",
    # training
    "source_train": "fsxlt.training", "save_checkpoint": "fsxlt.training",
    "load_start": "fsxlt.training", "AdaptEngine": "fsxlt.training",
    # adapting methods
    "Method": "fsxlt.methods", "Option": "fsxlt.methods", "get_method": "fsxlt.methods",
    "discover_methods": "fsxlt.methods",
    # shot-selection strategies
    "Strategy": "fsxlt.sampling.strategies", "get_strategy": "fsxlt.sampling.strategies",
    "discover_strategies": "fsxlt.sampling.strategies",
    # sweeps and reports
    "load_config": "fsxlt.execution", "parse_config": "fsxlt.execution",
    "expand": "fsxlt.execution", "run_sweep": "fsxlt.execution",
    "load_records": "fsxlt.report", "report_text": "fsxlt.report",
    "write_report": "fsxlt.report", "write_compare": "fsxlt.report",
    "sources_text": "fsxlt.report", "strategies_text": "fsxlt.report",
    # errors
    "FsxltError": "fsxlt.errors",
}
_RENAMED = {"discover_methods": "discover", "discover_strategies": "discover"}

__all__ = ["__version__", *_API]


__getattr__, _names = lazy_names(__name__, _API, _RENAMED)


def __dir__() -> list[str]:
    return sorted(__all__)
