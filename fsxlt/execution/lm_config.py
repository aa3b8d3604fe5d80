"""The ``lm_lora`` section of a sweep config: LoRA on a causal LM as arms beside the rest.

At the top level (every task) or in a task (that task only; ``lm_lora: null``
turns it off there), a mapping::

    lm_lora:
      model: models/gemma                 # a causal LM: hub name or directory ({task} expands)
      gguf_file: gemma-3-270m-q4_k_m.gguf # optional
      arms: [{}, {rank: 16, arm: lm-lora-r16}]  # optional; [{}] by default

Every key of an arm may also stand in the section, as the arms' default: the
adapting protocol's ``lrs`` (default 1e-4, 3e-4, 1e-3), ``max_epochs`` and
``patience`` (default: the task's), ``seed`` (default: the task's), ``mini_batch``
and ``select_on`` (``metric`` or ``loss``); LoRA's ``rank``, ``alpha``, ``dropout``
and ``target_modules``; the prompt's ``template_lang`` and ``words_lang``; the
samples' ``sample_seed``, ``test_limit`` and ``dev_limit``; decoding's
``max_new_tokens``, ``stop`` and ``batching``; ``batch_size`` (rows per forward
pass; not part of a run's identity) and ``arm`` (a name starting with ``lm-``;
default ``lm-lora``). These are :class:`fsxlt.icl.tuning_plan.LmSettings`, and
the runs are planned by :func:`fsxlt.icl.tuning_plan.lm_plan` on the cell's
bucket set, its dev and test files found as ``fsxlt lm-adapt --bucket SET
--data-dir DATA_DIR`` finds them: a sweep's LoRA record and ``fsxlt lm-adapt``'s
of the same settings are one run. There is no K=0 run (nothing to train on).

Everything is checked here, before anything runs: unknown keys, types, the task
(tasks the ICL arms cannot score are refused), the settings, two arms of one name.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from fsxlt.config_checks import check_keys, mapping, number, one_of, text
from fsxlt.errors import FsxltError
from fsxlt.execution.icl_config import (
    DEFAULT_BATCH_SIZE,
    PathSetting,
    check_arm_names,
    check_lm_location,
    parse_arms,
    stop_setting,
)
from fsxlt.tasks import TaskSpec

ARM_KEYS = ("arm", "model", "gguf_file", "lrs", "max_epochs", "patience", "seed",
            "mini_batch", "select_on", "rank", "alpha", "dropout", "target_modules",
            "template_lang", "words_lang", "sample_seed", "test_limit", "dev_limit",
            "max_new_tokens", "stop", "batching", "batch_size")
SECTION_KEYS = (*ARM_KEYS, "arms")


@dataclass(frozen=True)
class LmArm:
    """One LoRA arm of a task: its settings (``fsxlt.icl.tuning_plan.LmSettings``) and the
    rows per forward pass."""

    settings: Any                 # fsxlt.icl.tuning_plan.LmSettings (imported lazily)
    batch_size: int = DEFAULT_BATCH_SIZE

    @property
    def name(self) -> str:
        return self.settings.arm_name()


@dataclass(frozen=True)
class LmPlan:
    """A task's LoRA arms on the causal LM."""

    arms: tuple[LmArm, ...]

    def only(self, names: Sequence[str] | None) -> LmPlan:
        """The arms named in ``names`` (a sweep's ``--method`` filter); all when empty."""
        if not names:
            return self
        return LmPlan(tuple(a for a in self.arms if a.name in names))


def parse_lm_lora(raw: Any, spec: TaskSpec, languages: Sequence[str], where: str,
                  path: PathSetting) -> LmPlan | None:
    """A task's ``lm_lora`` setting (None: no LoRA arms), checked against the task and each
    of its languages; ``path`` fills ``{task}`` into ``model``."""
    if raw is None:
        return None
    section = mapping(raw, where, "lm_lora", " (model: ..., arms: [...])")
    check_keys(section, SECTION_KEYS, where, " in lm_lora")
    arms = parse_arms(section, "lm_lora", ARM_KEYS, where, "{} is the default LoRA arm",
                      lambda merged, origin, label: _checked_arm(
                          _arm(merged, origin, where, path), spec, languages,
                          f"{where}: {label}"))
    check_arm_names(arms, "lm_lora", where, spec.name, "lm-")
    return LmPlan(tuple(arms))


def _arm(merged: dict[str, Any], origin: dict[str, str], where: str,
         path: PathSetting) -> LmArm:
    """One arm's settings, each checked (``origin`` names the section a key came from)."""
    from fsxlt.icl.generation import BATCHING
    from fsxlt.icl.lm_lora import LoraSettings
    from fsxlt.icl.tuning_plan import LM_LRS, SELECT_ON, LmSettings
    from fsxlt.tasks.prompts import PROMPT_LANGUAGES, PromptSettings

    def key(name: str) -> str:
        return f"{origin[name]}.{name}"

    def optional(name: str, low: int | float, kind: type = int) -> Any:
        value = merged.get(name)
        return None if value is None else number(value, where, key(name), kind, low)

    model = text(merged.get("model"), where, key("model"))
    if model is None:
        raise FsxltError(f"{where}: lm_lora needs model: a causal LM (hub name or directory)")
    lrs = merged.get("lrs")
    lrs = LM_LRS if lrs is None else lrs
    if not isinstance(lrs, list | tuple) or not lrs:
        raise FsxltError(f"{where}: {key('lrs')} must be a non-empty list of learning rates")
    targets = merged.get("target_modules")
    if targets is not None and (not isinstance(targets, list) or not targets or not all(
            isinstance(t, str) and t for t in targets)):
        raise FsxltError(f"{where}: {key('target_modules')} must be a list of module names")
    lora = LoraSettings(optional("rank", 1) or 8,
                        16.0 if merged.get("alpha") is None else optional("alpha", 0.0, float),
                        0.1 if merged.get("dropout") is None
                        else optional("dropout", 0.0, float),
                        tuple(targets) if targets else None)
    prompt = PromptSettings(
        one_of(merged.get("template_lang", "en"), PROMPT_LANGUAGES, where, key("template_lang")),
        one_of(merged.get("words_lang", "en"), PROMPT_LANGUAGES, where, key("words_lang")))
    gguf_file = text(merged.get("gguf_file"), where, key("gguf_file"))
    settings = LmSettings(
        model=check_lm_location(path(model, key("model")), gguf_file, where, key("model")),
        gguf_file=gguf_file,
        lrs=tuple(number(lr, where, key("lrs"), float, 0.0) for lr in lrs),
        max_epochs=optional("max_epochs", 1), patience=optional("patience", 1),
        seed=optional("seed", 0), mini_batch=optional("mini_batch", 1), lora=lora,
        sample_seed=optional("sample_seed", 0) or 0, test_limit=optional("test_limit", 1),
        dev_limit=optional("dev_limit", 1),
        max_new_tokens=optional("max_new_tokens", 1) or 32,
        stop=stop_setting(merged.get("stop"), where, key("stop")),
        batching=one_of(merged.get("batching", BATCHING[0]), BATCHING, where, key("batching")),
        arm=text(merged.get("arm"), where, key("arm")),
        select_on=one_of(merged.get("select_on", SELECT_ON[0]), SELECT_ON, where,
                         key("select_on")),
        prompt=prompt)
    return LmArm(settings, optional("batch_size", 1) or DEFAULT_BATCH_SIZE)


def _checked_arm(arm: LmArm, spec: TaskSpec, languages: Sequence[str], where: str) -> LmArm:
    """The arm, its settings checked together, on the task, in each of the task's
    languages."""
    from fsxlt.icl.tuning_plan import check_lm_settings

    try:
        for language in languages:
            check_lm_settings(spec, language, arm.settings)
    except FsxltError as err:
        raise FsxltError(f"{where}: {err} (give task {spec.name} lm_lora: null to leave "
                         "its LoRA arms out)") from None
    return arm
