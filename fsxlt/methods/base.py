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

This module holds :class:`Method` and the names every method module shares; the
package :mod:`fsxlt.methods` hands them on.
"""

from __future__ import annotations

from typing import Any, ClassVar

from fsxlt.errors import FsxltError
from fsxlt.methods.options import Option
from fsxlt.plugins import describe_error

DEFAULT_MODEL = "bert-base-multilingual-cased"
ENTRY_POINT_GROUP = "fsxlt.methods"
KINDS = ("classification", "tagging", "multiple_choice", "extractive_qa")


class Method:
    """Base class of adapting methods (see the module docstring for the contract)."""

    name: ClassVar[str] = ""
    version: ClassVar[str] = "1"
    summary: ClassVar[str] = ""
    kinds: ClassVar[tuple[str, ...]] = KINDS
    options: ClassVar[tuple[Option, ...]] = ()
    label: ClassVar[str] = ""
    source_trains: ClassVar[bool] = False
    identity_by_name: ClassVar[bool] = False
    saved_modules: ClassVar[tuple[str, ...]] = ()
    scores_untrained: ClassVar[bool] = False

    def __init__(self, **options: Any) -> None:
        declared = {option.name: option for option in self.options}
        unknown = sorted(set(options) - set(declared))
        if unknown:
            valid = ", ".join(declared) or "none"
            raise FsxltError(f"method {self.name}: unknown option(s) {', '.join(unknown)} "
                             f"(valid: {valid})")
        self.config = {name: (option.parse(options[name], self.name) if name in options
                              else option.default)
                       for name, option in declared.items()}
        try:
            self.validate()
        except FsxltError:
            raise
        except Exception as err:  # a plug-in's check that fails other than by FsxltError
            raise FsxltError(f"method {self.name}: validate() failed ({describe_error(err)})"
                             ) from err

    def validate(self) -> None:
        """Check option values beyond their type (one-line errors before any model loads).

        Raise :class:`~fsxlt.errors.FsxltError`; any other exception is turned
        into one (a one-line error naming the method, the exception and where
        it was raised).
        """
        return None

    def check_start(self, task: Any, start: str | None = None) -> None:
        """Cheap checks before any model loads, once the task and the start are known.

        ``task`` is the :class:`~fsxlt.tasks.TaskSpec`, ``start`` the starting
        point as given (a checkpoint directory, or an encoder name or
        directory), or None. The command line calls it right after building
        the method; default: the task's kind (:meth:`check_kind`).
        """
        self.check_kind(task.kind)

    def __getattr__(self, item: str) -> Any:  # options read as attributes: self.rank
        config = self.__dict__.get("config", {})
        if item in config:
            return config[item]
        raise AttributeError(item)

    # ----------------------------------------------------------------- hooks

    def prepare(self, model: Any, seed: int) -> None:
        raise NotImplementedError(f"method {self.name} does not implement prepare()")

    def feature_point(self, model: Any) -> str | None:
        return None

    def loss(self, logits: Any, labels: Any) -> Any:
        from torch.nn import functional as F

        return F.cross_entropy(logits.float(), labels, reduction="sum")

    def teardown(self, model: Any) -> None:
        return None

    def keeps(self, following: Method) -> bool:
        return False

    def start_names(self, model: Any) -> dict[str, str]:
        return {}

    def bind(self, task: Any, language: str, tokenizer: Any, start_info: dict[str, Any]) -> None:
        """Called once per adapt call, before any run: what the method may need to know."""
        return None

    def encode(self, featurizer: Any, examples: Any) -> Any:
        """Its own model inputs for ``examples`` (an ``EncodedSplit``), or None: the task's."""
        return None

    # ----------------------------------------------------------------- identity

    def describe(self) -> dict[str, Any]:
        """What a run record says about the method (also part of the config hash)."""
        return {"name": self.name, "version": str(self.version), "options": dict(self.config)}

    def identity(self) -> dict[str, Any] | None:
        """What a config hash adds for the method beside its name: :meth:`describe`, or
        None for a method whose identity is its name alone (``identity_by_name``)."""
        return None if self.identity_by_name else self.describe()

    def check_kind(self, kind: str) -> None:
        if kind not in self.kinds:
            raise FsxltError(f"method {self.name} supports {' and '.join(self.kinds)} tasks, "
                             f"not {kind}")


# --------------------------------------------------------------------------- built-ins

def _set_trainable(model: Any, train: dict[str, bool]) -> None:
    """``requires_grad`` by parameter prefix (``encoder.``, ``pooler.``, ``classifier.``)."""
    for pname, param in model.named_parameters():
        prefix = pname.split(".", 1)[0]
        param.requires_grad_(train.get(prefix, False))
