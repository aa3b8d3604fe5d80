"""What a model is: the encoder with its heads, how examples become its inputs, and
how it predicts.

- :mod:`fsxlt.models.location`: where a model argument points, checked before anything
  loads (no torch);
- :mod:`fsxlt.models.model`: :class:`~fsxlt.models.model.FsxltModel`, one class for
  every task kind (heads, pooler, the encode/head seam);
- :mod:`fsxlt.models.encoding`: the featurizer (examples to wordpiece rows) and collation;
- :mod:`fsxlt.models.spans`: extractive QA's windows and span decoding;
- :mod:`fsxlt.models.prediction`: fast batched prediction of a split, with its scores;
- :mod:`fsxlt.models.lora`: LoRA adapters (peft) on the encoder;
- :mod:`fsxlt.models.pet`: PET's pattern-verbalizer model on a masked LM.
"""
