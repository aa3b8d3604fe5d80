"""The ``icl:`` section of a task YAML, and the prompts it makes.

A task that in-context learning can score carries, at the end of its YAML::

    icl:
      separator: "\\n\\n"                  # between demonstrations (optional)
      instruction: {en: "...", de: "..."}  # before the demonstrations (optional)
      template: {en: "Premise: {text_a}\\nHypothesis: {text_b}\\nAnswer: {label}", ...}
      label_words:                         # classification tasks only
        en: {entailment: "yes", neutral: "maybe", contradiction: "no"}
        de: {...}

Every field is keyed by language, ``en`` required (the fallback of the
English-prompt option). A template holds ``{text_a}``, ``{text_b}`` exactly
when the task's input is a pair, and exactly one ``{label}``. A multiple-choice
task (ChID) has no label words: its candidates are the continuations scored.
Nor has a generation task (``{text_a}`` its source, ``{label}`` its target) or
an extractive QA task (``{text_a}`` the paragraph, ``{text_b}`` the question,
``{label}`` the answer): their ``{label}`` is what the model generates.

A prompt is three kinds of pieces, tokenized separately (so that a bucket's
demonstrations are one prefix shared by every test example): the *prefix*
(instruction and demonstrations), each test example's *query* (the template up
to ``{label}``, trailing spaces removed) and its *continuations* (the spaces
the query lost, then a label word or a candidate).

This module reads YAML mappings and strings only; it loads no model.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from fsxlt.config_checks import check_keys
from fsxlt.errors import FsxltError

FIELDS = ("{text_a}", "{text_b}", "{label}")
TWO_TEXTS = ("pair", "question_context")   # inputs whose template holds {text_b}
NO_LABEL_WORDS = ("multiple_choice", "generation", "extractive_qa")
DEFAULT_SEPARATOR = "\n\n"
PROMPT_LANGUAGES = ("en", "target")
ICL_KEYS = ("template", "instruction", "label_words", "separator")


@dataclass(frozen=True)
class IclSpec:
    """A task's ICL prompts: per language an instruction, a template and label words."""

    templates: dict[str, str]
    instructions: dict[str, str]
    label_words: dict[str, dict[str, str]]
    separator: str = DEFAULT_SEPARATOR

    def template(self, language: str) -> str:
        return self.templates.get(language) or self.templates["en"]

    def instruction(self, language: str) -> str:
        return self.instructions.get(language, self.instructions.get("en", ""))

    def words(self, language: str) -> dict[str, str]:
        return self.label_words.get(language) or self.label_words.get("en") or {}


def _by_language(raw: Any, key: str, where: str) -> dict[str, Any]:
    """A field given per language (``{en: ..., de: ...}``), or one value meaning ``en``."""
    if isinstance(raw, str):
        return {"en": raw}
    if not isinstance(raw, dict) or "en" not in raw:
        raise FsxltError(f"{where}: icl.{key} must map languages (at least en) to its value")
    return {str(lang): value for lang, value in raw.items()}


def _check_template(template: Any, language: str, input_kind: str, where: str) -> str:
    if not isinstance(template, str):
        raise FsxltError(f"{where}: icl.template {language} must be a string")
    needed = ["{text_a}", "{label}"] + (["{text_b}"] if input_kind in TWO_TEXTS else [])
    missing = [name for name in needed if name not in template]
    if missing:
        raise FsxltError(f"{where}: icl.template {language} misses {', '.join(missing)}")
    if template.count("{label}") != 1:
        raise FsxltError(f"{where}: icl.template {language} needs exactly one {{label}}")
    late = [name for name in ("{text_a}", "{text_b}")
            if name in template and template.index(name) > template.index("{label}")]
    if late:
        raise FsxltError(f"{where}: icl.template {language} puts {{label}} before "
                         f"{', '.join(late)}; the label word is scored as what follows the "
                         "example's text, so it must come after it")
    if input_kind not in TWO_TEXTS and "{text_b}" in template:
        raise FsxltError(f"{where}: icl.template {language} uses {{text_b}} but the task's "
                         "input is not a pair")
    stray = template
    for name in FIELDS:
        stray = stray.replace(name, "")
    if "{" in stray or "}" in stray:
        raise FsxltError(f"{where}: icl.template {language} may only use "
                         f"{', '.join(FIELDS)}")
    return template


def _refuse_shared_words(words: dict[str, str], labels: Sequence[str], where: str) -> None:
    """Refuse two labels with one word: the label that loses every tie could never be
    predicted. Named with both labels and the word."""
    owner: dict[str, str] = {}
    for label in labels:
        first = owner.setdefault(words[label], label)
        if first != label:
            raise FsxltError(f"{where}: labels {first} and {label} have the same word "
                             f"{words[label]!r}; no score can tell them apart, give each "
                             "label a word of its own")


def _check_words(raw: Any, labels: Sequence[str], where: str) -> dict[str, dict[str, str]]:
    if not isinstance(raw, dict) or "en" not in raw:
        raise FsxltError(f"{where}: icl.label_words must map languages (at least en) to "
                         "{label: word}")
    parsed: dict[str, dict[str, str]] = {}
    for language, words in raw.items():
        given = {str(k): str(v).strip() for k, v in (words or {}).items()} \
            if isinstance(words, dict) else {}
        missing = [label for label in labels if not given.get(label)]
        extra = sorted(set(given) - set(labels))
        if missing or extra:
            what = (f"no word for {', '.join(missing)}" if missing
                    else f"words for unknown labels {', '.join(extra)}")
            raise FsxltError(f"{where}: icl.label_words {language}: {what}")
        _refuse_shared_words(given, labels, f"{where}: icl.label_words {language}")
        parsed[str(language)] = given
    return parsed


def parse_icl(raw: Any, *, kind: str, input_kind: str, labels: Sequence[str],
              where: str) -> IclSpec | None:
    """The ``icl`` section of a task YAML (None when absent); bad fields are one line."""
    if raw is None:
        return None
    if not isinstance(raw, dict) or "template" not in raw:
        raise FsxltError(f"{where}: icl needs a template (per language, with {{label}})")
    check_keys(raw, ICL_KEYS, where, " in icl")
    templates = {lang: _check_template(text, lang, input_kind, where)
                 for lang, text in _by_language(raw["template"], "template", where).items()}
    instructions = {lang: str(text) for lang, text in _by_language(
        raw.get("instruction", ""), "instruction", where).items()}
    if kind in NO_LABEL_WORDS:
        if raw.get("label_words") is not None:
            what = ("a multiple-choice task scores its candidates" if kind == "multiple_choice"
                    else f"a{'n' * (kind[0] in 'aeiou')} {kind.replace('_', ' ')} task "
                    "generates its output")
            raise FsxltError(f"{where}: icl.label_words: {what}, it has no label words")
        words: dict[str, dict[str, str]] = {}
    else:
        words = _check_words(raw.get("label_words"), labels, where)
    return IclSpec(templates=templates, instructions=instructions, label_words=words,
                   separator=str(raw.get("separator", DEFAULT_SEPARATOR)))


# --------------------------------------------------------------------------- rendering

@dataclass(frozen=True)
class PromptSettings:
    """Which language the template (and instruction) and the label words are in."""

    template_language: str = "en"   # en or target
    words_language: str = "en"      # en or target

    def describe(self) -> dict[str, str]:
        return {"template_language": self.template_language,
                "words_language": self.words_language}


@dataclass(frozen=True)
class PromptText:
    """A prompt as text pieces: the shared prefix, and per example its query and the
    continuation of each option (a label, or a candidate)."""

    prefix: str
    queries: list[str]
    continuations: list[list[str]]
    # per example, per option: its length in characters for per-character normalisation,
    # where the renderer knows it (a preset: len(choice) as the harness measures it);
    # None: the option less the whitespace that joins it (fsxlt.icl.scoring.option_chars)
    chars: list[list[int]] | None = None


def _language(choice: str, target: str) -> str:
    if choice not in PROMPT_LANGUAGES:
        raise FsxltError(f"a prompt language is en or target, not {choice!r}")
    return target if choice == "target" else "en"


def check_languages(spec: IclSpec, task: str, settings: PromptSettings, target: str) -> None:
    """Target-language prompts need the target's template / label words in the YAML."""
    if _language(settings.template_language, target) not in spec.templates:
        raise FsxltError(f"{task}: the icl section has no template in {target}; use an "
                         "English template or add one to the task YAML")
    if spec.label_words and _language(settings.words_language, target) not in spec.label_words:
        raise FsxltError(f"{task}: the icl section has no label words in {target}; use "
                         "English label words or add them to the task YAML")


def _fill(part: str, text_a: str, text_b: str | None) -> str:
    """A template part with the example's texts in place (no ``str.format``: texts may
    hold braces)."""
    filled = part.replace("{text_a}", "\0a").replace("{text_b}", "\0b")
    return filled.replace("\0a", text_a).replace("\0b", text_b or "")


def _texts(example: Any) -> tuple[str, str | None]:
    """``text_a``/``text_b`` of an example: a multiple-choice example's text, a generation
    example's source, a QA example's paragraph and question."""
    if hasattr(example, "choices"):
        return example.text, None
    if hasattr(example, "source"):
        return example.source, None
    if hasattr(example, "question"):
        return example.context, example.question
    return example.text_a, example.text_b


def _options(example: Any, words: dict[str, str], labels: Sequence[str]) -> list[str]:
    """What a label position is continued by: the candidates, a generated output's gold
    (one option, what fine-tuning learns), else the label words."""
    if hasattr(example, "choices"):
        return list(example.choices)
    if hasattr(example, "source") or hasattr(example, "question"):
        return [_answer(example, words)]
    return [words[label] for label in labels]


def _answer(example: Any, words: dict[str, str]) -> str:
    """What a demonstration shows at ``{label}``: the right candidate, the target, the first
    gold answer, or the label's word."""
    if hasattr(example, "choices"):
        return example.choices[int(example.label)]
    if hasattr(example, "source"):
        return example.target
    if hasattr(example, "question"):
        return example.answers[0] if example.answers else ""
    return words[example.label]


def render(spec: IclSpec, labels: Sequence[str], settings: PromptSettings, target: str,
           demonstrations: Sequence[Any], examples: Sequence[Any]) -> PromptText:
    """The prompt pieces of ``examples`` after ``demonstrations`` (in the given order)."""
    template = spec.template(_language(settings.template_language, target))
    instruction = spec.instruction(_language(settings.template_language, target))
    words = spec.words(_language(settings.words_language, target))
    before, after = template.split("{label}")
    shown = [_fill(before, *_texts(d)) + _answer(d, words) + _fill(after, *_texts(d))
             for d in demonstrations]
    head = [instruction] if instruction else []
    prefix = spec.separator.join(head + shown) + (spec.separator if head or shown else "")
    queries, continuations = [], []
    for example in examples:
        query = _fill(before, *_texts(example))
        stripped = query.rstrip()
        queries.append(stripped)
        gap = query[len(stripped):]
        continuations.append([gap + option for option in _options(example, words, labels)])
    return PromptText(prefix, queries, continuations)
