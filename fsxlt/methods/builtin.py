"""The built-in methods: the study's full fine-tuning and four head-only variants,
LoRA and PET (:data:`BUILTIN`; :data:`METHODS`: the study's five)."""

from __future__ import annotations

from typing import Any, ClassVar

from fsxlt.errors import FsxltError
from fsxlt.methods.base import Method, _set_trainable
from fsxlt.methods.options import Option


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
