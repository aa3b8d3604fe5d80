"""The study's files: where a run's record, predictions and checkpoint live, the
directories fsxlt writes, and the benchmark submissions built from them.

- :mod:`fsxlt.study.runs`: records (write-once, their facts and ids) and their paths;
- :mod:`fsxlt.study.directories`: each output directory's kind, its claim and writer lock;
- :mod:`fsxlt.study.predictions`: the per-run prediction files;
- :mod:`fsxlt.study.submission`: the benchmark submission folders.
"""
