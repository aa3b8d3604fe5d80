"""In-context learning: a causal LM predicts with a bucket's examples in its prompt.

Modules, one per concern:

- :mod:`~fsxlt.tasks.prompts`: the ``icl:`` section of a task YAML and the prompts it makes;
- :mod:`~fsxlt.icl.presets`: the prompt protocols of the field (lm-evaluation-harness's,
  FewCLUE's GPT baseline's) as named presets;
- :mod:`~fsxlt.icl.scoring`: options scored by log-likelihood, the shared-prefix cache,
  length normalisation and contextual calibration;
- :mod:`~fsxlt.icl.generation`: greedy decoding over the same cache (token budget, stop
  strings); :mod:`~fsxlt.icl.generative`: the runs that generate (generation tasks, QA);
- :mod:`~fsxlt.icl.model`: loading a causal LM (hub name, directory or GGUF file);
- :mod:`~fsxlt.icl.run`: one bucket in, one record out, in the runs directory;
- :mod:`~fsxlt.icl.lm_lora`, :mod:`~fsxlt.icl.tuning_plan` and :mod:`~fsxlt.icl.tuning`: the
  same LM fine-tuned on a bucket with LoRA adapters under the adapting protocol (``fsxlt
  lm-adapt``), one record per bucket.

Importing this package loads no model and no ``torch``.
"""
