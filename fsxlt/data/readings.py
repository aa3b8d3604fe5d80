"""Readings: how a benchmark file becomes examples, as named choices.

The same benchmark reaches users in several forms. XNLI 1.0's files carry each
sentence twice, as written (``sentence1``) and word-tokenized
(``sentence1_tokenized``); XTREME's preprocessing keeps the first, the study
read the second. XTREME wrote PAWS-X with a CSV writer, which wraps every field
holding a ``"`` in quotes and doubles the inner ones; PAWS-X's own files, the
hub's loader and the study carry no quoting. Which form a loader takes changes
the model's input (Hindi under mBERT, nearly every example under a
sentencepiece model), so fsxlt names it.

A **reading** is one choice per *axis* (:data:`AXES`). Every axis's default is
how fsxlt read files before readings had names, so a bucket set, a record or a
manifest that names no reading was read the default way, and keeps its hash. A
reading is written down as the mapping of its non-default choices
(``{"quoting": "csv"}``; ``{}`` is the default reading): in a set's manifest
and each of its buckets, in every run's identity, in the bucket card and the
report. A set is read one way: its buckets, its remaining dev set and the test
files its runs score on.

``study`` names the study's reading of each task it ran (:data:`STUDY`):
XNLI's tokenized columns, PAWS-X unquoted, the remaining dev set by line, long
tagging sentences truncated in evaluation, UD's multiword tokens fused as XTREME's
preprocessing fused them (:mod:`fsxlt.data.ud_xtreme`).
docs/protocol.md says why. ``remaining`` is no reading of a file but of a split:
which of its lines select models once buckets are drawn from it; ``eval_long`` is how
a tagging split is scored (:class:`fsxlt.models.encoding.Featurizer`), not read.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from fsxlt.errors import FsxltError


@dataclass(frozen=True)
class Axis:
    """One way a file can be read: its choices (value -> what it does), the default
    (fsxlt's reading before readings had names), and the task formats it applies to."""

    name: str
    default: str
    choices: Mapping[str, str]
    formats: tuple[str, ...]
    where: str  # the tasks it applies to, in words
    tasks: tuple[str, ...] = ()  # only these tasks of those formats (none: every one)

    def applies(self, task: Any) -> bool:
        return task.data.format in self.formats and (not self.tasks or task.name in self.tasks)


AXES: dict[str, Axis] = {axis.name: axis for axis in (
    Axis("text", "raw", {
        "raw": "the text columns as written (sentence1/sentence2: XTREME's files, the hub)",
        "tokenized": "the word-tokenized columns of a header that has them "
                     "(XNLI 1.0's sentence1_tokenized/sentence2_tokenized: the study's)"},
         ("tsv_pair",), "tab-separated pair files (xnli, pawsx)"),
    Axis("quoting", "as-written", {
        "as-written": "each field exactly as the file holds it (XTREME's reader)",
        "csv": "a field written CSV-quoted (wrapped in \" with each inner \" doubled, as "
               "XTREME's preprocessing wrote PAWS-X) is read as its value: PAWS-X's own "
               "text, the study's; a file with a quote no CSV writer leaves bare (PAWS-X's "
               "own files) is read as written"},
         ("tsv_pair",), "tab-separated pair files (xnli, pawsx)"),
    Axis("remaining", "legacy", {
        "legacy": "fsxlt 0.10's rule, which differs by path: a set fsxlt samples leaves out "
                  "its bucket lines (by-line), the published import every line holding a "
                  "bucket example's text (by-text)",
        "by-line": "the dev split less the lines the buckets were drawn from (the published "
                   "import: the lines the release's ids name); a line repeating a bucket "
                   "example's text stays (the study's)",
        "by-text": "the dev split less every line holding a bucket example's text, however "
                   "often and under whatever label"},
         ("tsv_pair",), "sets drawn from a dev split (xnli, pawsx)"),
    Axis("eval_long", "whole", {
        "whole": "a tagging sentence longer than max_seq_length is scored in windows, every "
                 "word of it",
        "truncate": "it is scored on the words that fit in max_seq_length wordpieces, the "
                    "rest neither predicted nor counted (the study's: its code cuts "
                    "evaluation inputs as it cuts training inputs)"},
         ("conll", "conllu"), "tagging files (panx, udpos)"),
    Axis("tokens", "words", {
        "words": "a CoNLL-U file's syntactic words (Spanish del is read as de and el, each "
                 "with its own tag); the hub's rows likewise; a TSV file's tokens as written",
        "xtreme": "a CoNLL-U file as XTREME's preprocessing turned it into TSV lines (the "
                  "study's): a multiword token is one token with its head word's tag, "
                  "spaces and zero-width non-joiners leave a token, sentences with "
                  "withheld forms are left out; a TSV file as written (XTREME's TSVs are "
                  "that conversion's output); the hub's rows are refused"},
         ("conll", "conllu"), "UD-POS files (udpos)", ("udpos",)),
    Axis("input", "fsxlt", {
        "fsxlt": "fsxlt's input strings: CSL the abstract, then the keywords joined by 、; "
                 "CLUEWSC the noun phrase marked [...] and the pronoun <...>",
        "baseline": "FewCLUE's fine-tuning baseline's: CSL the keywords joined by a space, "
                    "then the abstract; CLUEWSC the noun phrase marked _..._ and the pronoun "
                    "[...] (for fine-tuning arms: PET patterns and ICL prompts read fsxlt's)"},
         ("fewclue_json", "fewclue_wsc"), "FewCLUE's csl and cluewsc", ("csl", "cluewsc")),
)}

# the study's reading of each task it ran whose reading differs from the default
# (docs/protocol.md, "Readings"): every other task the study ran reads the default way
STUDY: dict[str, dict[str, str]] = {
    "xnli": {"text": "tokenized", "remaining": "by-line"},
    "pawsx": {"quoting": "csv", "remaining": "by-line"},
    "panx": {"eval_long": "truncate"},
    "udpos": {"eval_long": "truncate", "tokens": "xtreme"},
}


@dataclass(frozen=True)
class Reading:
    """A reading: the non-default choice of each axis, as sorted (axis, value) pairs
    (none: the default reading)."""

    choices: tuple[tuple[str, str], ...] = ()

    def get(self, axis: str) -> str:
        return dict(self.choices).get(axis, AXES[axis].default)

    @property
    def is_default(self) -> bool:
        return not self.choices

    def to_dict(self) -> dict[str, str]:
        """The non-default choices (what manifests, buckets and identities hold)."""
        return dict(self.choices)

    def describe(self) -> str:
        """``quoting=csv, text=tokenized``; ``default`` for the default reading."""
        return ", ".join(f"{a}={v}" for a, v in self.choices) or "default"

    def full(self, task: Any) -> dict[str, str]:
        """Every axis that applies to ``task`` with its choice (defaults included)."""
        return {name: self.get(name) for name, axis in AXES.items() if axis.applies(task)}


DEFAULT_READING = Reading()


def make_reading(choices: Mapping[str, str]) -> Reading:
    """A reading from axis -> value (defaults dropped); the values are not checked here."""
    return Reading(tuple(sorted((a, v) for a, v in choices.items() if AXES[a].default != v)))


def reading_problem(value: Any) -> str | None:
    """Why ``value`` (a manifest's or record's ``reading``) is not a reading, or None."""
    if not isinstance(value, dict):
        return f"{value!r:.60} is not a mapping of axis to choice"
    for axis, choice in value.items():
        if axis not in AXES:
            return f"unknown axis {axis!r:.40} (known: {', '.join(AXES)})"
        if choice not in AXES[axis].choices:
            return (f"{axis} is {choice!r:.40}, not one of "
                    f"{', '.join(AXES[axis].choices)}")
    return None


def reading_of(meta: Mapping[str, Any] | None) -> Reading:
    """The reading a manifest, bucket or identity records (``reading``; none: the
    default). Call it on what passed :func:`reading_problem` (the manifest boundary)."""
    value = (meta or {}).get("reading")
    if not value:
        return DEFAULT_READING
    problem = reading_problem(value)
    if problem is not None:
        raise FsxltError(f"reading: {problem}")
    return make_reading(value)


def study_reading(task: Any) -> Reading:
    """The study's reading of ``task`` (the default for a task it read that way or did
    not run)."""
    return make_reading(STUDY.get(task.name, {}))


def parse_reading(values: str | Iterable[str] | None, task: Any,
                  option: str = "--reading") -> Reading:
    """A reading from ``--reading`` values: ``study``, ``default`` or ``AXIS=CHOICE``,
    later ones overriding earlier ones (``study text=raw``); refused in one line where an
    axis or choice is unknown or the axis does not apply to ``task``."""
    if values is None:
        return DEFAULT_READING
    if isinstance(values, str):
        values = values.replace(",", " ").split()
    chosen: dict[str, str] = {}
    for value in values:
        value = value.strip()
        if value in ("study", "default"):
            chosen = dict(study_reading(task).to_dict()) if value == "study" else {}
            continue
        axis, sep, choice = value.partition("=")
        axis, choice = axis.strip(), choice.strip()
        if not sep or axis not in AXES:
            raise FsxltError(f"{option} {value}: expected study, default or AXIS=CHOICE with "
                             f"AXIS one of {', '.join(AXES)}")
        if choice not in AXES[axis].choices:
            raise FsxltError(f"{option} {value}: {axis} is one of "
                             f"{', '.join(AXES[axis].choices)}")
        if not AXES[axis].applies(task):
            raise FsxltError(f"{option} {value}: {task.name} has no {axis} to choose (the axis "
                             f"applies to {AXES[axis].where})")
        chosen[axis] = choice
    return make_reading(chosen)


def check_arm_reading(arm: str, reading: Reading, task: str) -> None:
    """Refuse, in one line, a prompt-based arm (``pet``, ``icl``, ``lm-lora``) on a set read
    ``input=baseline``: its patterns and prompts name fsxlt's fields, which the baseline's
    CSL input swaps."""
    if reading.get("input") == "baseline" and arm in ("pet", "icl", "lm-lora"):
        raise FsxltError(f"{task}: a set read input=baseline (FewCLUE's fine-tuning "
                         f"baseline's input strings) is for fine-tuning arms; {arm}'s "
                         "patterns read fsxlt's input: import the set without --reading")


def readings_help() -> str:
    """Every axis and its choices, for ``--help``."""
    lines = []
    for axis in AXES.values():
        options = "; ".join(f"{value}{' (default)' if value == axis.default else ''}: {what}"
                            for value, what in axis.choices.items())
        lines.append(f"{axis.name} ({axis.where}): {options}")
    return "\n".join(lines)


__all__ = ["AXES", "DEFAULT_READING", "STUDY", "Axis", "Reading", "check_arm_reading",
           "make_reading",
           "parse_reading", "reading_of", "reading_problem", "readings_help", "study_reading"]
