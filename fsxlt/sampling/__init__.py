"""Buckets of few shots: drawing, storing, importing, checking and selecting them.

Modules, one per concern:

- :mod:`~fsxlt.sampling.samplers`: the algorithms (N-way K-shot,
  Minimum-Including, K examples, K queries), pure and seeded by coordinates;
- :mod:`~fsxlt.sampling.api`: a task's bucket sets drawn by the sampler its YAML names;
- :mod:`~fsxlt.sampling.store`: the bucket store (one layout function, atomic,
  write-once writes) and :mod:`~fsxlt.sampling.set_files`: the files a set
  answers for (buckets, their dev sets, test, remaining dev), hash-checked;
- :mod:`~fsxlt.sampling.published`, :mod:`~fsxlt.sampling.fewclue`: importing
  the study's published buckets and FewCLUE's fixed splits;
- :mod:`~fsxlt.sampling.strategies`, :mod:`~fsxlt.sampling.select`: shot-selection
  strategies (plug-in classes) and the bucket sets they build;
- :mod:`~fsxlt.sampling.check`: verifying any bucket set.

The names below load their module on first use (importing the package
imports neither torch nor the modules).
"""

from fsxlt.lazy import lazy_names

_API = {
    "sample": "fsxlt.sampling.api", "sample_set": "fsxlt.sampling.api",
    "BucketSet": "fsxlt.sampling.store", "Bucket": "fsxlt.sampling.store",
    "bucket_dir": "fsxlt.sampling.store", "read_set": "fsxlt.sampling.store",
    "read_bucket": "fsxlt.sampling.store", "write_sets": "fsxlt.sampling.store",
    "SetFiles": "fsxlt.sampling.set_files", "set_files": "fsxlt.sampling.set_files",
    "named_files": "fsxlt.sampling.set_files",
    "import_published": "fsxlt.sampling.published", "import_fewclue": "fsxlt.sampling.fewclue",
    "fewclue_tasks": "fsxlt.sampling.fewclue",
    "Strategy": "fsxlt.sampling.strategies", "get_strategy": "fsxlt.sampling.strategies",
    "discover_strategies": "fsxlt.sampling.strategies", "select": "fsxlt.sampling.select",
    "check_set": "fsxlt.sampling.check", "check_store": "fsxlt.sampling.check",
}
__all__ = list(_API)
__getattr__, __dir__ = lazy_names(__name__, _API, {"discover_strategies": "discover"})
