"""Analyses that explain FS-XLT results (docs/protocol.md, docs/analyses.md).

Modules, one per analysis, each with the function ``fsxlt analyze`` calls:

- :mod:`~fsxlt.analysis.typology`: lexical overlap and WALS features against gains
  (:func:`overlap_table`, :func:`correlation_table`);
- :mod:`~fsxlt.analysis.gains`: where tagging gains come from (:func:`gains_analysis`);
- :mod:`~fsxlt.analysis.confusion`: confusion matrices before and after adapting
  (:func:`confusion_analysis`);
- :mod:`~fsxlt.analysis.attention`: the shift of [CLS] attention (:func:`attention_analysis`);
- :mod:`~fsxlt.analysis.selection`: model selection on English and target dev
  (:func:`selection_tables`);
- :mod:`~fsxlt.analysis.adapt_selection`: selection rules when adapting, against target dev
  (:func:`selection_table`);
- :mod:`~fsxlt.analysis.seeds`: seeds against buckets (:func:`seeds_vs_buckets`);
- :mod:`~fsxlt.analysis.bucket_features`: what makes a bucket good (:func:`feature_table`);
- :mod:`~fsxlt.analysis.power_plan`: the buckets a conclusion needs (:func:`power_plan`);
- :mod:`~fsxlt.analysis.variance`: the buckets', test set's and seed's shares of a cell's
  variance (:func:`variance_table`, :func:`seeds_table`);
- :mod:`~fsxlt.analysis.plots`: their figures.

The names below load their module on first use (importing the package
imports no torch).
"""

from fsxlt.lazy import lazy_names

_API = {
    "overlap_table": "fsxlt.analysis.typology", "correlation_table": "fsxlt.analysis.typology",
    "gains_analysis": "fsxlt.analysis.gains", "confusion_analysis": "fsxlt.analysis.confusion",
    "attention_analysis": "fsxlt.analysis.attention",
    "selection_tables": "fsxlt.analysis.selection", "seeds_vs_buckets": "fsxlt.analysis.seeds",
    "spread_table": "fsxlt.analysis.seeds", "feature_table": "fsxlt.analysis.bucket_features",
    "correlations": "fsxlt.analysis.bucket_features",
    "selection_table": "fsxlt.analysis.adapt_selection",
    "power_plan": "fsxlt.analysis.power_plan", "variance_table": "fsxlt.analysis.variance",
    "seeds_table": "fsxlt.analysis.variance",
}
__all__ = list(_API)
__getattr__, __dir__ = lazy_names(__name__, _API)
