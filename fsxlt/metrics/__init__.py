"""Every metric fsxlt reports, and the scoring of prediction files.

- :mod:`fsxlt.metrics.scores`: a task's scores from gold and predicted labels
  (accuracy, seqeval, token accuracy, nDCG; QA and BLEU through the two below);
- :mod:`fsxlt.metrics.qa`: MLQA's and SQuAD v1.1's answer F1 and exact match;
- :mod:`fsxlt.metrics.text`: XGLUE's corpus BLEU for generation;
- :mod:`fsxlt.metrics.scoring`: a prediction file against a gold file, as the
  benchmarks' official scorers read them (``fsxlt score``).
"""
