"""The ``icl:`` section of a sweep config: in-context learning arms beside the adapting ones.

::

    icl:                                  # top level (every task), or per task (replaces it;
                                          # icl: null in a task runs its adapting arms only)
      model: models/gemma                 # the causal LM: a hub name or a directory ({task})
      gguf_file: gemma-3-270m-q4_k_m.gguf # a GGUF file inside model (optional)
      zero_shot: true                     # also one K=0 run per (language, arm)
      test_limit: 300                     # settings here are every arm's defaults
      arms:                               # one entry per arm (absent: one arm, [{}])
        - {}                                              # icl
        - {template_lang: target, words_lang: target}     # icl-target
        - {calibrate: true}                               # icl-calibrated
        - {order: similarity, encoder: ckpt/{task}-mbert} # icl-similarity
        - {preset: lm-eval, normalize: char}              # icl-lmeval-norm-char

An arm (and the section, for every arm) may set ``model``, ``gguf_file``,
``template_lang`` / ``words_lang`` (``en`` or ``target``), ``calibrate``,
``normalize`` (``true`` or ``token``: per token; ``char``: per character),
``preset`` (a prompt protocol of the field, :mod:`fsxlt.icl.presets`),
``order`` (``seeded``, ``bucket``, ``similarity``),
``encoder`` (the similarity order's sentence encoder), ``test_limit``,
``seed`` (default 0; not the sweep's adapting seed), ``max_new_tokens`` and
``stop`` (a string or a list: greedy decoding of generation and QA tasks; default
32 tokens, ending at a newline), ``batching`` (how generated queries share a batch:
``auto``, ``padded`` or ``one-length``, :mod:`fsxlt.icl.generation`), ``batch_size`` (rows
per forward pass, default 8; not part of a run's identity) and ``arm`` (a
name of its own; default: ``icl`` plus the settings that differ, as
``fsxlt icl`` names it). These are :class:`fsxlt.icl.run.IclSettings`, so a
sweep's ICL record and ``fsxlt icl``'s of the same settings are one run.

Everything is checked here, before anything runs: unknown keys, types, the
task (tagging and ranking tasks, and tasks whose YAML has no ``icl``
section, are refused), the prompts' languages, two arms of one name.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fsxlt.config_checks import check_keys, flag, mapping, number, one_of, text
from fsxlt.errors import FsxltError
from fsxlt.tasks import TaskSpec

ARM_KEYS = ("arm", "model", "gguf_file", "template_lang", "words_lang", "calibrate",
            "normalize", "order", "encoder", "test_limit", "seed", "batch_size",
            "max_new_tokens", "stop", "batching", "preset")
SECTION_KEYS = (*ARM_KEYS, "arms", "zero_shot")
DEFAULT_BATCH_SIZE = 8

PathSetting = Callable[[str, str], str]  # (value, key) -> the value with {task} filled in


def check_lm_location(model: str, gguf_file: str | None, where: str, key: str) -> str:
    """``model`` if it is a folder here (holding ``gguf_file`` where one is named) or a name
    the hub accepts; else one line naming the config key, while the sweep is planned
    (0.6.0 found a missing folder only when the arm's first run loaded it)."""
    from fsxlt.identity import hub_id_like, split_revision

    folder = Path(model).expanduser()
    if folder.is_dir():
        if gguf_file and not (folder / gguf_file).is_file():
            raise FsxltError(f"{where}: {key} {model}: holds no GGUF file {gguf_file}")
        return model
    if folder.exists():
        raise FsxltError(f"{where}: {key} {model}: a file, not a model folder or hub name")
    if not hub_id_like(split_revision(model)[0]):
        raise FsxltError(f"{where}: {key} {model}: no such folder, and not a model name the "
                         "hub would accept")
    return model


@dataclass(frozen=True)
class IclArm:
    """One ICL arm of a task: how it prompts (``fsxlt.icl.run.IclSettings``) and scores."""

    settings: Any                 # fsxlt.icl.run.IclSettings (imported lazily: torch)
    batch_size: int = DEFAULT_BATCH_SIZE

    @property
    def name(self) -> str:
        return self.settings.arm_name()


@dataclass(frozen=True)
class IclPlan:
    """A task's ICL arms, and whether each also runs zero-shot (K=0)."""

    arms: tuple[IclArm, ...]
    zero_shot: bool = True

    def only(self, names: Sequence[str] | None) -> IclPlan:
        """The arms named in ``names`` (a sweep's ``--method`` filter); all when empty."""
        if not names:
            return self
        return IclPlan(tuple(a for a in self.arms if a.name in names), self.zero_shot)


def parse_icl(raw: Any, spec: TaskSpec, languages: Sequence[str], where: str,
              path: PathSetting) -> IclPlan | None:
    """A task's ``icl`` setting (None: no ICL arms), checked against the task and each of
    its languages; ``path`` fills ``{task}`` into ``model`` and ``encoder``."""
    if raw is None:
        return None
    section = mapping(raw, where, "icl", " (model: ..., arms: [...])")
    check_keys(section, SECTION_KEYS, where, " in icl")
    _check_task(spec, where)
    arms = parse_arms(section, "icl", ARM_KEYS, where, "{} is the default prompt",
                      lambda merged, origin, label: _checked_arm(
                          _arm(merged, origin, where, path), spec, languages,
                          f"{where}: {label}"))
    check_arm_names(arms, "icl", where, spec.name, "icl")
    zero_shot = section.get("zero_shot")
    return IclPlan(tuple(arms), True if zero_shot is None else
                   flag(zero_shot, where, "icl.zero_shot"))


def parse_arms(section: dict[str, Any], name: str, keys: Sequence[str], where: str,
               default_hint: str, build: Callable[[dict[str, Any], dict[str, str], str], Any],
               ) -> list[Any]:
    """The arms of a section (``icl``, ``lm_lora``): each mapping of its ``arms`` (default
    ``[{}]``) over the section's own values of ``keys``, built by ``build(merged, origin,
    label)``; ``origin`` names the section each key came from, for errors."""
    arms_raw = [{}] if section.get("arms") is None else section["arms"]
    if not isinstance(arms_raw, list) or not arms_raw:
        raise FsxltError(f"{where}: {name}.arms must be a non-empty list of mappings "
                         f"(one per arm; {default_hint})")
    defaults = {key: value for key, value in section.items() if key in keys}
    arms = []
    for position, arm_raw in enumerate(arms_raw):
        label = f"{name}.arms[{position}]"
        arm_raw = mapping(arm_raw, where, label)
        check_keys(arm_raw, keys, where, f" in {label}")
        origin = {key: (label if key in arm_raw else name) for key in keys}
        arms.append(build({**defaults, **arm_raw}, origin, label))
    return arms


def check_arm_names(arms: Sequence[Any], name: str, where: str, task: str,
                    prefix: str) -> None:
    """Two arms of one name in a section: one line asking for ``arm: NAME``."""
    names = [arm.name for arm in arms]
    twice = sorted({arm for arm in names if names.count(arm) > 1})
    if twice:
        raise FsxltError(f"{where}: {name}.arms: two arms named {', '.join(twice)} for task "
                         f"{task}; give one of them arm: NAME (a name starting with {prefix})")


def _check_task(spec: TaskSpec, where: str) -> None:
    """A task in-context learning cannot score, or without prompts: one line."""
    from fsxlt.icl.plan import check_task

    try:
        check_task(spec)
    except FsxltError as err:
        raise FsxltError(f"{where}: icl: {err} (give task {spec.name} icl: null to run its "
                         "adapting arms only)") from None


def _arm(merged: dict[str, Any], origin: dict[str, str], where: str,
         path: PathSetting) -> IclArm:
    """One arm's settings, each checked (``origin`` names the section a key came from)."""
    from fsxlt.icl.generation import BATCHING
    from fsxlt.icl.run import ORDERS, IclSettings
    from fsxlt.tasks.prompts import PROMPT_LANGUAGES

    def key(name: str) -> str:
        return f"{origin[name]}.{name}"

    def optional(name: str, minimum: int) -> int | None:
        value = merged.get(name)
        return None if value is None else number(value, where, key(name), int, minimum)

    model = text(merged.get("model"), where, key("model"))
    if model is None:
        raise FsxltError(f"{where}: {origin['model']} needs model (a causal LM: a hub name "
                         "or a directory)")
    encoder = text(merged.get("encoder"), where, key("encoder"))
    gguf_file = text(merged.get("gguf_file"), where, key("gguf_file"))
    model = check_lm_location(path(model, key("model")), gguf_file, where, key("model"))
    settings = IclSettings(
        model=model, gguf_file=gguf_file,
        template_language=one_of(merged.get("template_lang", "en"), PROMPT_LANGUAGES, where,
                                 key("template_lang")),
        words_language=one_of(merged.get("words_lang", "en"), PROMPT_LANGUAGES, where,
                              key("words_lang")),
        calibrate=flag(merged.get("calibrate"), where, key("calibrate")),
        normalize=_normalize(merged.get("normalize"), where, key("normalize")),
        order=one_of(merged.get("order", "seeded"), ORDERS, where, key("order")),
        seed=optional("seed", 0) or 0, test_limit=optional("test_limit", 1),
        arm=text(merged.get("arm"), where, key("arm")),
        encoder=None if encoder is None else path(encoder, key("encoder")),
        max_new_tokens=optional("max_new_tokens", 1) or 32,
        stop=stop_setting(merged.get("stop"), where, key("stop")),
        batching=one_of(merged.get("batching", BATCHING[0]), BATCHING, where, key("batching")),
        preset=text(merged.get("preset"), where, key("preset")))
    return IclArm(settings, optional("batch_size", 1) or DEFAULT_BATCH_SIZE)


def _normalize(raw: Any, where: str, key: str) -> bool | str:
    """``normalize``: true or ``token`` (per token), ``char`` (per character), false or
    absent (summed); the values of :class:`fsxlt.icl.run.IclSettings`."""
    if raw in ("token", "char"):
        return True if raw == "token" else "char"
    if raw is None or isinstance(raw, bool):
        return flag(raw, where, key)
    raise FsxltError(f"{where}: {key} must be true, false, token or char, got {raw!r}")


def stop_setting(raw: Any, where: str, key: str) -> tuple[str, ...]:
    """``stop``: a string or a list of non-empty strings (absent: a newline)."""
    from fsxlt.icl.generation import DEFAULT_STOP

    if raw is None:
        return DEFAULT_STOP
    values = [raw] if isinstance(raw, str) else raw
    if not isinstance(values, list) or not values \
            or not all(isinstance(v, str) and v for v in values):
        raise FsxltError(f"{where}: {key} must be a non-empty string or a list of them")
    return tuple(values)


def _checked_arm(arm: IclArm, spec: TaskSpec, languages: Sequence[str], where: str) -> IclArm:
    """The arm, its settings checked together, on the task, in each of the task's
    languages."""
    from fsxlt.icl.plan import check_settings

    try:
        arm.settings.check()
        for language in languages:
            check_settings(spec, language, arm.settings)
    except FsxltError as err:
        raise FsxltError(f"{where}: {err}") from None
    return arm
