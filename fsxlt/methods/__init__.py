"""Target-adapting methods: one small class each, built in or from a plug-in.

A method says what adapting on a bucket changes. The adapt engine calls it
at fixed points and knows nothing else about it, so the study's five methods
(docs/protocol.md#adapting-variants), LoRA and a researcher's own method go through the same code
(``fsxlt adapt``, ``fsxlt sweep``, reports and analyses)::

    from fsxlt.methods import Method, Option

    class BiasOnly(Method):
        '''Train only the classifier's bias.'''

        name = "bias-only"
        version = "1"
        kinds = ("classification", "tagging")
        options = (Option("scale", float, 1.0, "multiplies the loss"),)

        def prepare(self, model, seed):
            for pname, param in model.named_parameters():
                param.requires_grad_(pname == "classifier.bias")

The contract (attributes and hooks; only :meth:`Method.prepare` is required):

``name``, ``version``, ``summary``
    How records, reports and ``fsxlt methods`` name it; the version and the option
    values go into every run record and the sweep's config hash, so changing either
    reruns the method's runs.
``label``
    How report tables and plots title its arm (``Full FT``); default: the name.
``source_trains``
    Whether ``fsxlt source-train --method`` may train a start with it (``full``,
    ``pet``); default: no. A checkpoint records the method it was trained with, and
    loading it for scoring rebuilds that method (:mod:`fsxlt.training.starts`), so it is
    scored the way it was trained.
``identity_by_name``
    True for the study's five methods (docs/protocol.md#adapting-variants), whose
    records and config hashes name them only (as they always have); any other method's
    identity (:meth:`Method.identity`) is its name, version and options.
``saved_modules``
    Modules the method adds to the model (attribute names) that a source-trained
    checkpoint saves beside the head and that ``bind`` gets back, by name, in
    ``start_info`` (``pet``: ``mlm_head``); default: none.
``scores_untrained``
    Whether the model as ``prepare`` leaves it predicts something before any training,
    so that K=0 (no bucket) is a run of its own (``pet``: the pretrained masked LM and
    the pattern); default: no.
``kinds``
    The task kinds it supports (``classification``, ``tagging``, ``multiple_choice``;
    default: all three).
``options``
    Typed :class:`Option` declarations with defaults; ``--method-opt key=value`` and a
    sweep config's ``method_options`` set them, and a wrong key or value is a one-line
    error.
``validate()``
    Check option values beyond their type, when the method is built (before any model is
    loaded); default: nothing. Raise ``FsxltError``; any other exception becomes a
    one-line error naming the method.
``check_start(task, start)``
    Cheap checks once the task and the start (checkpoint or encoder) are known, before
    any model loads (``pet``: the task's pattern and the encoder's masked-LM head, from
    its config); default: the task's kind.
``prepare(model, seed)``
    Called before every run, after the engine restored the starting weights: set up the
    head (keep, reset, replace it), change the model if the method needs to, and set
    ``requires_grad`` on exactly the parameters it trains.
``feature_point(model)``
    Where a *frozen* encoder's output can be cached (``"encoder"``: the hidden states
    before the pooler; ``"pooled"``: after it), or ``None`` (the default): the encoder
    runs every time.
``loss(logits, labels)``
    The training loss, summed over the micro-batch (the engine divides by the size of
    the whole bucket); default: cross-entropy. Prediction is the arg-max of the model's
    logits, so a method that predicts differently installs its own head in ``prepare``.
``teardown(model)``
    Undo structural changes (e.g. remove adapter layers) before the engine restores the
    starting weights for the next run; default: nothing.
``keeps(following)``, ``start_names(model)``
    Whether the change may stay for the next run, of ``following`` (``lora``: same
    options; default: no): the engine then skips ``teardown``, restores the start under
    the names ``start_names`` gives, and ``following.prepare`` resets it exactly.
``bind(task, language, tokenizer, start_info)`` and ``encode(featurizer, examples)``
    For methods that read their inputs differently (``pet`` renders every example
    through a cloze pattern): ``bind`` tells the method the task, target language,
    tokenizer and start before the runs, ``encode`` returns its own tokenized rows (the
    engine keeps them, like the task's, for every run); default: the task's inputs.

Discovery: the built-in methods below; methods that installed packages register under
the entry-point group ``fsxlt.methods`` (``name = "package.module:Class"``); and
``--method package.module:Class`` for a class that is importable but not installed. A
plug-in that fails to load (a syntax error, a missing module, an exception on import or
in ``validate``) is a one-line error naming it; :func:`discover` sets such installed
plug-ins apart so the others stay usable. Nothing in this package imports torch at import, so
the command line validates ``--method`` without loading it.

The code lives in :mod:`~fsxlt.methods.base` (the contract, :class:`Method`),
:mod:`~fsxlt.methods.builtin` (the built-in methods), :mod:`~fsxlt.methods.registry`
(finding and building a method) and :mod:`~fsxlt.methods.options` (typed options);
this package hands their names on.
"""

from fsxlt.methods.base import DEFAULT_MODEL, ENTRY_POINT_GROUP, KINDS, Method
from fsxlt.methods.builtin import (
    BUILTIN,
    METHODS,
    CosPooler,
    Fc,
    FcPooler,
    FcResetPooler,
    Full,
    Lora,
    Pet,
)
from fsxlt.methods.options import Option, parse_method_options
from fsxlt.methods.registry import (
    check_source_training,
    discover,
    get_method,
    method_class,
    method_label,
    plugins,
    prepare_method,
    source_training_methods,
)

__all__ = ["BUILTIN", "DEFAULT_MODEL", "ENTRY_POINT_GROUP", "KINDS", "METHODS", "CosPooler",
           "Fc", "FcPooler", "FcResetPooler", "Full", "Lora", "Method", "Option", "Pet",
           "check_source_training", "discover", "get_method", "method_class", "method_label",
           "parse_method_options", "plugins", "prepare_method", "source_training_methods"]
