"""``fsxlt demo``: the whole FS-XLT pipeline on the synthetic benchmark, on a CPU, in minutes.

What it runs, every stage writing under ``OUT`` and reusing what a previous
run left there:

====== ====================================== =============================================
stage  writes                                 reused when
====== ====================================== =============================================
data   ``OUT/data/<task>/{split}-<lang>.tsv`` ``OUT/data/benchmark.json`` has the same seed,
       (:func:`fsxlt.synthetic.generate_      tasks, sizes and corpus, and every file still
       benchmark`)                            has its recorded sha256
encoder ``<cache>/tiny-bert-<key>``           always (content-hashed cache of
       (:func:`fsxlt.synthetic.build_tiny_    :func:`~fsxlt.synthetic.build_tiny_encoder`;
       encoder`)                              ``<cache>`` defaults to ``OUT/encoders``)
buckets ``OUT/buckets/<task>/<lang>/k<K>/``   a set's manifest names the same data sha256,
       (:func:`fsxlt.sampling.api.sample`)    seed and number of buckets (else it is
                                              replaced, and the log says so)
source ``OUT/ckpt/<task>/`` (source-training, the checkpoint's record carries the same demo
       :func:`fsxlt.training.source_train`)   key (encoder, data hashes, settings, targets)
sweep  ``OUT/runs/`` (:func:`fsxlt.execution. always: finished runs with a matching config
       run_sweep`, also the K=0 records)      hash are skipped, so a killed demo resumes
                                              (records of an earlier config are replaced)
report ``OUT/report/{report.md,cells.csv,     never (cheap; rebuilt from the records)
       plots/}`` (:func:`fsxlt.report.
       write_report`)
strate- ``OUT/strategies/{buckets,runs}``,    the selection is redone (seconds; the same
gies   ``OUT/report/strategies.md`` (:func:`  buckets come out unchanged), finished runs
       fsxlt.sampling.select.select`, a sweep are skipped
       per strategy, ``report --strategies``)
====== ====================================== =============================================

and finally ``OUT/summary.json`` and a short printed summary: zero-shot and
few-shot scores per task and language, and whether three expected behaviours
hold on this run (:func:`~fsxlt.demo.findings.findings`).

The settings come from a demo config (``configs/demo/demo.yaml`` is the
default, ``configs/demo/quick.yaml`` the reduced one the end-to-end test
uses); see :func:`parse_demo_config` for its keys. Why the defaults are what
they are is written in the YAML files themselves: the full demo has to fit
ten minutes on two CPU cores, so it uses 10 buckets instead of the study's
40, one learning rate per stage instead of a grid, a shortened source-
training, and K in {1, 2, 4, 8} for the classification task but {1, 2, 4}
for the two tagging tasks (docs/protocol.md#tagging-minimum-including leaves K=8 out: a
Minimum-Including bucket of K=8 is too many labelled tokens to be few-shot).

Every random choice is seeded by the config's ``seed`` (data, encoder,
buckets) or by the tasks' training seeds (source-training, adapting), and
every stage runs with a fixed number of torch threads, so two fresh runs on
the same machine print the same numbers; a run that reuses ``OUT`` reuses
what is already there.

The package, one module per concern: :mod:`~fsxlt.demo.config` (the demo
config), :mod:`~fsxlt.demo.stages` (the seven stages),
:mod:`~fsxlt.demo.findings` (the summary and what it checks) and
:mod:`~fsxlt.demo.pipeline` (:func:`run_demo`).
"""

from fsxlt.demo.config import DemoConfig, load_demo_config, parse_demo_config
from fsxlt.demo.findings import findings, summary_cells, summary_text
from fsxlt.demo.pipeline import DEMO_FORMAT, SUMMARY_FILE, run_demo
from fsxlt.demo.stages import STAGES, Layout

__all__ = ["DEMO_FORMAT", "STAGES", "SUMMARY_FILE", "DemoConfig", "Layout", "findings",
           "load_demo_config", "parse_demo_config", "run_demo", "summary_cells", "summary_text"]
