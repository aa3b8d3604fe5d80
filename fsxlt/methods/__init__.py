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
plug-ins apart so the others stay usable. Nothing in this module imports torch, so the
command line validates ``--method`` without loading it.
"""

from __future__ import annotations

from typing import Any, ClassVar

from fsxlt.errors import FsxltError
from fsxlt.methods.options import Option, parse_method_options
from fsxlt.plugins import CLASS_REFERENCE, describe_error

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


class Full(Method):
    """Full fine-tuning: every weight trains (the study's default)."""

    name = "full"
    label = "Full FT"
    summary = "full fine-tuning: encoder, pooler and classifier"
    source_trains = True
    identity_by_name = True

    def prepare(self, model: Any, seed: int) -> None:
        _set_trainable(model, {"encoder": True, "pooler": True, "classifier": True})


class _HeadOnly(Method):
    """A frozen encoder; the pooler trains or not; the classifier kept, reset or cosine."""

    train_pooler: ClassVar[bool] = False
    classifier: ClassVar[str] = "keep"  # keep | reset | cos
    identity_by_name = True  # all four are study methods (docs/protocol.md)

    def check_start(self, task: Any, start: str | None = None) -> None:
        """A pooler method refuses a checkpoint whose head has none (``--head cls``)."""
        super().check_start(task, start)
        from fsxlt.study.runs import checkpoint_meta

        if self.train_pooler and checkpoint_meta(start).get("head") == "cls":
            raise FsxltError(f"method {self.name} trains the pooler; {start} has a head "
                             "without one (source-trained with --head cls)")

    def prepare(self, model: Any, seed: int) -> None:
        if self.train_pooler and model.pooler is None:
            raise FsxltError(f"method {self.name} trains the pooler; this start has none")
        if self.classifier == "cos":
            model.use_cosine_head(seed)
        elif self.classifier == "reset":
            model.reset_classifier(seed)
        _set_trainable(model, {"pooler": self.train_pooler, "classifier": True})

    def feature_point(self, model: Any) -> str | None:
        if model.pooler is not None and not self.train_pooler:
            return "pooled"
        return "encoder"


class Fc(_HeadOnly):
    """The classifier alone trains."""

    name = "fc"
    label = "FC only"
    summary = "classifier only (frozen encoder; features cached)"


class FcPooler(_HeadOnly):
    name = "fc-pooler"
    label = "FC+Pooler"
    summary = "classifier and pooler (frozen encoder; features cached)"
    kinds = ("classification", "multiple_choice")
    train_pooler = True


class CosPooler(_HeadOnly):
    name = "cos-pooler"
    label = "COS+Pooler"
    summary = "new cosine classifier (scale 10) and pooler (frozen encoder)"
    kinds = ("classification", "multiple_choice")
    train_pooler = True
    classifier = "cos"


class FcResetPooler(_HeadOnly):
    name = "fc-reset-pooler"
    label = "FC(reset)+Pooler"
    summary = "re-initialised classifier and pooler (frozen encoder)"
    kinds = ("classification", "multiple_choice")
    train_pooler = True
    classifier = "reset"


class Lora(Method):
    """LoRA adapters (``peft``) in the encoder; adapters and head train. The wrapped encoder
    stays for a next LoRA run of the same options, adapters reset as a fresh wrap with its
    seed draws them (:mod:`fsxlt.models.lora`); other runs get it unloaded (not merged)."""

    name = "lora"
    summary = "LoRA adapters in the frozen encoder (peft); the head trains too"
    options = (
        Option("rank", int, 8, "rank r of the update matrices"),
        Option("alpha", float, 16.0, "scaling: the update is multiplied by alpha / rank"),
        Option("dropout", float, 0.1, "dropout on the adapter input"),
        Option("target_modules", list, ["query", "value"],
               "names of the linear layers that get adapters"),
    )

    def validate(self) -> None:
        if self.rank < 1 or self.alpha <= 0 or not 0 <= self.dropout < 1:
            raise FsxltError("method lora: rank must be >= 1, alpha > 0, 0 <= dropout < 1")

    def prepare(self, model: Any, seed: int) -> None:
        from fsxlt.models import lora

        settings = lora.lora_settings(self.config)
        if lora.wrapped_settings(model) == settings:
            lora.reset_adapters(model, seed)
            lora.train_only_adapters(model)
        else:
            lora.unwrap(model)
            lora.wrap(model, settings, seed)
        for pname, param in model.named_parameters():
            if not pname.startswith("encoder."):  # the head trains; anything else stays
                param.requires_grad_(pname.startswith(("pooler.", "classifier.")))

    def keeps(self, following: Method) -> bool:
        return type(following) is type(self) and following.config == self.config

    def start_names(self, model: Any) -> dict[str, str]:
        from fsxlt.models.lora import start_names

        return start_names(model)

    def teardown(self, model: Any) -> None:
        from fsxlt.models.lora import unwrap

        unwrap(model)


class Pet(Method):
    """PET-style prompt-based adapting: the masked-LM logit of each label's word at the mask.

    The task's pattern and verbalizers come from its YAML (``pet``); the
    target language's verbalizer is used when the YAML gives one, else the
    English one (``verbalizer: en`` forces English). A label word of several
    pieces gets as many masks (:mod:`fsxlt.models.pet`); a multiple-choice task's
    candidates are its words. The masked-LM head
    comes from the start's pretrained encoder, or from the checkpoint when it
    was source-trained with ``pet``; it is kept on the model between runs and
    restored from memory before each.
    """

    name = "pet"
    version = "2"  # 2: a mask per piece, summed log-probabilities (1: mean logit, one mask)
    summary = "prompt-based: a cloze pattern, label words scored by the masked-LM head"
    kinds = ("classification", "multiple_choice")
    source_trains = True
    saved_modules = ("mlm_head",)
    scores_untrained = True  # K=0: the pretrained masked LM and the pattern (FewCLUE's zero-shot)
    options = (
        Option("train_encoder", bool, True, "false: only the masked-LM head trains"),
        Option("verbalizer", str, "target", "target (the language's words, else English) or en"),
    )

    def validate(self) -> None:
        if self.verbalizer not in ("target", "en"):
            raise FsxltError("method pet: option verbalizer must be target or en")

    def check_start(self, task: Any, start: str | None = None) -> None:
        """The task needs a pet pattern; the start's encoder a masked-LM head (by its config)."""
        from fsxlt.models.pet import check_mlm_config, task_pet

        super().check_start(task, start)
        task_pet(task)
        if start is not None:
            check_mlm_config(start)

    def bind(self, task: Any, language: str, tokenizer: Any, start_info: dict[str, Any]) -> None:
        from fsxlt.models.pet import task_pet, verbalizer_pieces

        self.spec = task_pet(task)
        self.n_choices = len(task.labels) if task.kind == "multiple_choice" else 0
        self.mask_id = tokenizer.mask_token_id
        self.pieces = []
        if not self.n_choices:
            words = self.spec.verbalizer("en" if self.verbalizer == "en" else language)
            self.pieces = verbalizer_pieces(tokenizer, [words[label] for label in task.labels])
        self.source = start_info.get("encoder")
        self.saved_head = start_info.get("mlm_head")

    def encode(self, featurizer: Any, examples: Any) -> Any:
        from fsxlt.models.pet import encode_choice_pattern, encode_pattern

        if self.n_choices:
            return encode_choice_pattern(featurizer, self.spec, examples)
        return encode_pattern(featurizer, self.spec, examples,
                              n_masks=max(len(word) for word in self.pieces))

    def prepare(self, model: Any, seed: int) -> None:
        from fsxlt.models.pet import PetChoiceScorer, PetScorer, load_mlm_head

        if not hasattr(self, "spec"):
            raise FsxltError("method pet must be bound to a task first (bind)")
        if getattr(model, "mlm_head", None) is None:
            model.mlm_head = load_mlm_head(str(self.source), model)
            if self.saved_head:
                model.mlm_head.load_state_dict(self.saved_head, strict=False)
            model.mlm_head.to(next(model.encoder.parameters()).device)
            model.mlm_head_initial = {k: v.detach().clone()
                                      for k, v in model.mlm_head.state_dict().items()}
        else:
            model.mlm_head.load_state_dict(model.mlm_head_initial)
        self._detach_hook()
        if self.n_choices:
            scorer = PetChoiceScorer(model.mlm_head, self.n_choices, self.mask_id)
            self.hook = scorer.attach(model)
            model.output_head = scorer
        else:
            model.output_head = PetScorer(model.mlm_head, self.pieces)
        _set_trainable(model, {"encoder": self.train_encoder, "mlm_head": True,
                               "output_head": True})

    def _detach_hook(self) -> None:
        if getattr(self, "hook", None) is not None:
            self.hook.remove()
            self.hook = None

    def teardown(self, model: Any) -> None:
        self._detach_hook()
        model.output_head = None


BUILTIN: dict[str, type[Method]] = {
    cls.name: cls for cls in (Full, Fc, FcPooler, CosPooler, FcResetPooler, Lora, Pet)}
METHODS = tuple(name for name, cls in BUILTIN.items() if cls.identity_by_name)  # the study's five


def _import_class(ref: str, label: str | None = None) -> type[Method]:
    """The class ``module:Class`` names; any failure is one line starting with ``label``."""
    from fsxlt.plugins import import_class

    return import_class(ref, Method, label or f"method {ref}")


def _load_plugin(name: str, ref: str) -> type[Method]:
    """The class of the installed plug-in ``name`` (entry point ``ref``)."""
    return _import_class(ref, f"plug-in method {name} ({ref})")


def plugins() -> dict[str, str]:
    """Installed plug-in methods: entry-point name -> ``module:Class`` (nothing is imported)."""
    from fsxlt.plugins import entry_point_refs

    return entry_point_refs(ENTRY_POINT_GROUP)


def discover() -> tuple[dict[str, type[Method]], dict[str, str]]:
    """The methods that load, by name, and the one-line error of each plug-in that does not.

    Built-ins come first, then installed plug-ins by name; a plug-in never
    shadows a built-in. A plug-in that fails to import (a syntax error, a
    missing module, an exception on import, not a Method) is left out of the
    first mapping and named, with its error, in the second.
    """
    from fsxlt.plugins import discover_group

    return discover_group(ENTRY_POINT_GROUP, BUILTIN, Method, "method")


def method_class(ref: str) -> type[Method]:
    """A method class from a name (built-in or installed) or ``package.module:Class``."""
    if ref in BUILTIN:
        return BUILTIN[ref]
    if CLASS_REFERENCE.match(ref):
        return _import_class(ref)
    installed = plugins()
    if ref in installed:
        return _load_plugin(ref, installed[ref])
    valid = ", ".join([*BUILTIN, *sorted(set(installed) - set(BUILTIN))])
    raise FsxltError(f"unknown method {ref!r}; valid: {valid}, or package.module:Class")


def method_label(name: str) -> str:
    """How reports title the method ``name``: its class's ``label``, else the name itself
    (also for a name no built-in or installed plug-in has, or one that fails to load)."""
    try:
        cls = method_class(name) if name in BUILTIN or name in plugins() else None
    except FsxltError:
        cls = None
    return (cls.label or cls.name) if cls is not None else name


def source_training_methods() -> list[str]:
    """The built-in methods that ``fsxlt source-train --method`` takes (``source_trains``)."""
    return [name for name, cls in BUILTIN.items() if cls.source_trains]


def check_source_training(cls: type[Method]) -> None:
    """One-line error unless the method class may source-train a start."""
    if not cls.source_trains:
        raise FsxltError(f"source-training uses {' or '.join(source_training_methods())} "
                         f"(or a method that declares source_trains), not {cls.name}")


def prepare_method(model: Any, method: str | Method, seed: int) -> list[str]:
    """Let ``method`` set up the head and the trainable set; return the trainable names.

    Every method, built in or a plug-in, goes through its own
    :meth:`Method.prepare` (``cos-pooler`` installs a new random cosine
    matrix, ``fc-reset-pooler`` re-initialises the linear classifier, both
    seeded with ``seed``; ``lora`` wraps the encoder).
    """
    get_method(method, model.kind).prepare(model, seed)
    return model.trainable_names()


def _build(cls: type[Method], options: dict[str, Any]) -> Method:
    """``cls(**options)``; a plug-in constructor's own failure is a one-line error."""
    try:
        return cls(**options)
    except FsxltError:
        raise
    except Exception as err:
        raise FsxltError(f"method {cls.name}: cannot build it ({describe_error(err)})") from err


def get_method(ref: str | Method, kind: str = "classification",
               options: dict[str, Any] | None = None) -> Method:
    """A configured method for a task kind; unknown names, kinds and options are errors,
    and so is any failure of a plug-in to import or build (one line naming it)."""
    if isinstance(ref, Method):
        if options:
            raise FsxltError("options go to the method's constructor, not with an instance")
        method = ref
    else:
        method = _build(method_class(ref), options or {})
    method.check_kind(kind)
    return method


__all__ = ["BUILTIN", "DEFAULT_MODEL", "ENTRY_POINT_GROUP", "METHODS", "Method", "Option",
           "check_source_training", "discover", "get_method",
           "method_class", "method_label", "parse_method_options", "plugins",
           "prepare_method", "source_training_methods"]
