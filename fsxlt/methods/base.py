"""The method contract (:class:`Method`: what a method declares and the hooks a run
calls) and the names every method module shares; the contract itself is the package's
docstring (:mod:`fsxlt.methods`)."""

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
