"""The task registry: what each FS-XLT task is, read from one YAML file per task.

A task spec says what kind of problem a task is (classification, tagging, multiple
choice over candidate positions, extractive QA, or generation of a target text, which
has no labels), its label set, metric, languages, where its data comes from (local files
or the Hugging Face hub) and the default sampling and training hyperparameters of
docs/protocol.md. FewCLUE's tasks add ``label_names`` (descriptions of numeric label
ids), ``source_task`` (the English counterpart whose checkpoint starts the FS-XLT arm)
and ``submission`` (the task's name in its benchmark's prediction files;
``submission_format``: fewclue, xglue or squad, the last for extractive QA's SQuAD-style
prediction files); ``benchmark`` names the benchmark a task belongs to (``fewclue``: the
task is one of FewCLUE's, which ``fsxlt buckets import-fewclue`` imports). The built-in
specs live in ``configs/<task>.yaml``; a path to another YAML file with the same fields
defines a new task without touching the code.

The prompts a task's ``icl:`` section defines live in :mod:`fsxlt.tasks.prompts`,
the languages' names and WALS features in :mod:`fsxlt.tasks.languages`. This
package loads no data and no models.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any, Literal

import yaml

from fsxlt.config_checks import document, mapping, one_of, require
from fsxlt.errors import FsxltError, did_you_mean
from fsxlt.fileio import parse_yaml

TaskKind = Literal["classification", "tagging", "multiple_choice", "extractive_qa", "generation"]
KINDS = ("classification", "tagging", "multiple_choice", "extractive_qa", "generation")
UNLABELLED_KINDS = ("extractive_qa", "generation")  # no label set: answers are spans, texts
InputKind = Literal["single", "pair", "tokens", "choices", "question_context", "text"]
# sampling.sampler -> the task kinds it draws buckets for (fsxlt.sampling.api.SAMPLERS draws)
SAMPLERS = {"nway-kshot": ("classification",), "minimum-including": ("tagging",),
            "k-examples": ("multiple_choice",), "k-queries": ("classification",),
            "k-questions": ("extractive_qa",), "k-pairs": ("generation",)}
DATA_FORMATS = ("tsv_pair", "mldoc", "marc_jsonl", "conll", "conllu", "fewclue_json",
                "fewclue_wsc", "fewclue_chid", "xglue_tsv", "squad_json", "xglue_src_tgt",
                "squad_qg")
COLUMN_ROLES = ("text_a", "text_b", "label")
QA_METRICS = ("mlqa_f1", "squad_f1")  # fsxlt.metrics.qa: MLQA's and SQuAD v1.1's F1
METRICS = ("accuracy", "seqeval_f1", "seqeval_precision", "token_accuracy", "ndcg",
           "bleu") + QA_METRICS  # bleu: generation's, fsxlt.metrics.text


@dataclass(frozen=True)
class HubSource:
    """Where a task's data lives on the Hugging Face hub and how its columns map."""

    path: str
    name: str | None
    splits: dict[str, str]
    columns: dict[str, str]


@dataclass(frozen=True)
class DataSpec:
    """How to find and parse a task's data files.

    ``files`` names the file of a split where the pattern does not
    (FewCLUE's test split is ``test_public.json``; a ``files`` entry that lists several
    names: the first, the others being other layouts' names of that split alone,
    ``file_alternatives``, tried before ``alternatives``); ``fields`` maps the
    example's parts (``text_a``, ``text_b``, ``label``, ...) to the keys of a
    JSON-lines format; ``columns`` says what each column of a headerless TSV
    is (``text_a``, ``text_b`` or ``label``; columns of one part are joined);
    ``alternatives`` are the file patterns of other distributions' layouts
    (XGLUE's ``{lang}.{split}``, ``xnli.{split}.tsv``), tried in order after the
    pattern (see :meth:`locate`). ``holdout_paragraphs`` and ``holdout_dev_paragraphs``
    (``data.holdout``, XQuAD's one file per language): that many paragraphs of a file are
    its ``test`` and its ``dev`` split, the others its ``train`` split
    (:func:`fsxlt.data.qa.holdout_part`, seeded by ``holdout_seed``; ``squad_qg``: the
    held-out paragraphs are ``test``, every other paragraph is ``dev``).
    """

    format: str
    pattern: str
    hf: HubSource | None
    files: dict[str, str] = field(default_factory=dict)
    fields: dict[str, str] = field(default_factory=dict)
    columns: tuple[str, ...] = ()
    alternatives: tuple[str, ...] = ()
    hub_unavailable: str = ""  # why the hub has no copy that loads, and what to use instead
    file_alternatives: dict[str, tuple[str, ...]] = field(default_factory=dict)
    holdout_paragraphs: int = 0  # extractive QA: paragraphs held out of every file as test
    holdout_dev_paragraphs: int = 0  # ... and as dev (the rest is train)
    holdout_seed: int = 0

    def file_name(self, split: str, language: str) -> str:
        """The file name of ``split`` in ``language`` (the split's own name, else the pattern)."""
        if split in self.files:
            return self.files[split].format(split=split, lang=language)
        return self.pattern.format(split=split, lang=language)

    def locate(self, data_dir: str | Path, split: str, language: str) -> Path:
        """The file of ``split`` in ``language`` under ``data_dir``: the pattern's, its
        ``.conllu`` twin, or the first of the ``alternatives`` patterns (another
        distribution's layout, e.g. XGLUE's) that exists; the pattern's if none does."""
        primary = Path(data_dir) / self.file_name(split, language)
        patterns = self.file_alternatives.get(split, ()) + self.alternatives
        candidates = [primary, primary.with_suffix(".conllu")] + [
            Path(data_dir) / alt.format(split=split, lang=language) for alt in patterns]
        return next((path for path in candidates if path.is_file()), primary)


@dataclass(frozen=True)
class SamplingSpec:
    """Defaults for drawing buckets (docs/protocol.md#buckets)."""

    sampler: str
    split: str
    k_values: tuple[int, ...]
    n_buckets: int
    seed: int = 0
    dev_paragraphs: int | None = None  # extractive QA: at most this many paragraphs of dev


@dataclass(frozen=True)
class TrainingSpec:
    """Defaults for source-training and target-adapting (docs/protocol.md#training)."""

    max_seq_length: int = 128
    lr_grid: tuple[float, ...] = (1e-5, 3e-5, 5e-5, 7e-5)
    source_epochs: int = 10
    source_batch_size: int = 32
    adapt_max_epochs: int = 50
    adapt_patience: int = 10
    seed: int = 42
    source_lr_grid: tuple[float, ...] | None = None  # source-training's, if not lr_grid

    @property
    def source_lrs(self) -> tuple[float, ...]:
        """The learning rates source-training searches (``source_lr_grid``, else
        ``lr_grid``, which adapting searches)."""
        return self.source_lr_grid or self.lr_grid


@dataclass(frozen=True)
class PetSpec:
    """Prompt-based adapting (``pet``): a cloze pattern and a verbalizer per language.

    ``pattern`` holds ``{text_a}``, ``{text_b}`` (pair tasks) and exactly one
    ``{mask}``; ``verbalizers`` maps a language to the word of every label,
    with ``en`` the fallback for languages it does not list (which
    verbalizer to use in a target language is itself a research question);
    a section without ``en`` must list every language of the task (FewCLUE's
    are Chinese only).
    Tasks whose text marks two spans (CLUEWSC) may also name them,
    ``{span1}`` and ``{span2}``. A multiple-choice task's pattern (ChID) has
    ``{text_a}``, the passage whose blank becomes the masks, and
    ``{choices}``, its candidates; the candidates are the label words, so it
    has no ``{mask}`` and no verbalizers.
    """

    pattern: str
    verbalizers: dict[str, dict[str, str]]

    def verbalizer(self, language: str) -> dict[str, str]:
        if not self.verbalizers:
            raise FsxltError("this pet pattern has no verbalizer (its candidates are the words)")
        words = self.verbalizers.get(language) or self.verbalizers.get("en")
        if words is None:
            raise FsxltError(f"the pet section has no verbalizer for {language} and no English "
                             f"one (it has {', '.join(sorted(self.verbalizers))})")
        return words


@dataclass(frozen=True)
class TaskSpec:
    """Everything fsxlt needs to know about one task."""

    name: str
    description: str
    kind: TaskKind
    input: InputKind
    labels: tuple[str, ...]
    metric: str
    source_language: str
    languages: tuple[str, ...]
    data: DataSpec
    sampling: SamplingSpec
    training: TrainingSpec
    label_unit: str = "tag"
    config_path: str = field(default="", compare=False)
    pet: PetSpec | None = field(default=None, compare=False)
    icl: Any = field(default=None, compare=False)  # fsxlt.tasks.prompts.IclSpec
    label_names: dict[str, str] = field(default_factory=dict, compare=False)
    label_aliases: dict[str, str] = field(default_factory=dict, compare=False)
    source_task: str | None = None
    submission: str | None = None
    submission_format: str = "fewclue"
    benchmark: str | None = None  # the benchmark the task belongs to (fewclue: its nine)

    @property
    def is_tagging(self) -> bool:
        return self.kind == "tagging"

    @property
    def is_qa(self) -> bool:
        """Extractive question answering: a question on a paragraph, answered by a span."""
        return self.kind == "extractive_qa"

    @property
    def selects_on_remaining(self) -> bool:
        """Whether runs select models on the examples of the sampled split that are in no
        bucket (a set's ``dev-remaining.jsonl``): sets drawn from dev, and every extractive
        QA set (a paragraph-disjoint part of its pool)."""
        return self.sampling.split == "dev" or self.is_qa

    @property
    def is_generation(self) -> bool:
        """Generation: a target text written for a source text, scored by BLEU."""
        return self.kind == "generation"

    @property
    def reads_parts(self) -> bool:
        """Whether a split of its file is a part of it (``data.holdout``, not generation)."""
        return bool(self.data.holdout_paragraphs) and not self.is_generation

    @property
    def is_ranking(self) -> bool:
        """Relevance grades of (query, page) pairs, scored by nDCG over each query's pages."""
        return self.metric == "ndcg"

    @property
    def is_multiple_choice(self) -> bool:
        """Multiple choice: ``labels`` are the candidate positions ("0", "1", ...)."""
        return self.kind == "multiple_choice"

    @property
    def n_choices(self) -> int:
        return len(self.labels)

    @property
    def sampling_labels(self) -> tuple[str, ...]:
        """The labels buckets are balanced over.

        Classification: the class labels. Tagging with ``label_unit: tag``:
        the tags. Tagging with ``label_unit: entity``: the entity types of the
        BIO tags (``B-PER`` -> ``PER``), each mention counted once.
        """
        if self.kind in ("multiple_choice", *UNLABELLED_KINDS):
            return ()  # K examples (questions, pairs), no per-label quota
        if self.kind == "tagging" and self.label_unit == "entity":
            types: list[str] = []
            for tag in self.labels:
                if tag[:2] in ("B-", "I-") and tag[2:] not in types:
                    types.append(tag[2:])
            return tuple(types)
        return self.labels

    def check_language(self, language: str) -> str:
        """Return ``language`` if the task supports it, else raise a one-line error."""
        if language not in self.languages:
            raise FsxltError(
                f"unknown language {language!r} for task {self.name}"
                f"{did_you_mean(language, self.languages)}; "
                f"valid: {', '.join(self.languages)}"
            )
        return language

    def check_k(self, k: int) -> int:
        if k < 1:
            raise FsxltError(f"K must be a positive number of shots, got {k}")
        return k


def _parse_hub(raw: dict[str, Any] | None) -> HubSource | None:
    if not raw:
        return None
    return HubSource(
        path=raw["path"],
        name=raw.get("name"),
        splits=dict(raw.get("splits") or {"train": "train", "dev": "validation", "test": "test"}),
        columns=dict(raw.get("columns") or {}),
    )


PET_PLACEHOLDERS = ("{text_a}", "{text_b}", "{span1}", "{span2}", "{choices}", "{mask}")
PET_SPAN_FORMAT = "fewclue_wsc"  # texts with marked spans: {span1} and {span2} may be named


def _pet_placeholders(input_kind: str, data_format: str) -> tuple[tuple[str, ...], ...]:
    """(required once, allowed at most once) placeholders of a task's pet pattern."""
    if input_kind == "choices":
        return ("{text_a}", "{choices}"), ()
    required = ("{text_a}", "{mask}") + (("{text_b}",) if input_kind == "pair" else ())
    spans = ("{span1}", "{span2}") if data_format == PET_SPAN_FORMAT else ()
    return required, spans


def _check_pet_pattern(pattern: str, input_kind: str, data_format: str, where: str) -> None:
    required, optional = _pet_placeholders(input_kind, data_format)
    if pattern.count("{mask}") != (0 if input_kind == "choices" else 1) \
            or "{text_a}" not in pattern:
        raise FsxltError(f"{where}: the pet pattern needs {{text_a}} and exactly one {{mask}}"
                         if input_kind != "choices" else f"{where}: a multiple-choice pet "
                         "pattern needs {text_a} (its blank holds the masks) and no {mask}")
    if ("{text_b}" in pattern) != (input_kind == "pair"):
        raise FsxltError(f"{where}: the pet pattern must use {{text_b}} exactly when the "
                         "task's input is a pair")
    for placeholder in required + optional:
        if pattern.count(placeholder) > 1 or (placeholder in required
                                              and placeholder not in pattern):
            raise FsxltError(f"{where}: the pet pattern must use {placeholder} "
                             f"{'exactly' if placeholder in required else 'at most'} once")
    stray = pattern
    for placeholder in required + optional:
        stray = stray.replace(placeholder, "")
    if "{" in stray or "}" in stray:
        raise FsxltError(f"{where}: the pet pattern may only use "
                         f"{', '.join(required + optional)}")


def _parse_pet(raw: Any, labels: tuple[str, ...], input_kind: str,
               where: str, data_format: str = "",
               languages: tuple[str, ...] = ()) -> PetSpec | None:
    """The ``pet`` section: ``{pattern: ..., verbalizers: {en: {label: word}, ...}}``."""
    if raw is None:
        return None
    if not isinstance(raw, dict) or not isinstance(raw.get("pattern"), str):
        raise FsxltError(f"{where}: pet needs a pattern (text with {{mask}}) and verbalizers")
    pattern = raw["pattern"]
    _check_pet_pattern(pattern, input_kind, data_format, where)
    verbalizers = raw.get("verbalizers")
    if input_kind == "choices":
        if verbalizers:
            raise FsxltError(f"{where}: a multiple-choice pet pattern takes no verbalizers "
                             "(each example's candidates are its words)")
        return PetSpec(pattern=pattern, verbalizers={})
    if not isinstance(verbalizers, dict) or ("en" not in verbalizers and not (
            languages and set(languages) <= set(map(str, verbalizers)))):
        raise FsxltError(f"{where}: pet verbalizers must map languages (at least en, or every "
                         "language of the task) to {label: word}")
    parsed = {}
    for language, words in verbalizers.items():
        if not isinstance(words, dict) or {str(k) for k in words} != set(labels):
            raise FsxltError(f"{where}: pet verbalizer {language} must give a word for each "
                             f"label ({', '.join(labels)})")
        parsed[str(language)] = {str(k): str(v).strip() for k, v in words.items()}
        if any(not word for word in parsed[str(language)].values()):
            raise FsxltError(f"{where}: pet verbalizer {language} has an empty word")
    return PetSpec(pattern=pattern, verbalizers=parsed)


SUBMISSION_FORMATS = ("fewclue", "xglue", "squad")


def _submission_format(raw: dict[str, Any], where: str) -> str:
    return one_of(str(raw.get("submission_format", "fewclue")), SUBMISSION_FORMATS, where,
                  "submission_format")


def _parse_columns(raw: Any, fmt: str, where: str) -> tuple[str, ...]:
    """``data.columns`` of a headerless TSV: one role per column, the label last."""
    if raw is None:
        if fmt == "xglue_tsv":
            raise FsxltError(f"{where}: format xglue_tsv needs data.columns")
        return ()
    if not isinstance(raw, list) or any(str(c) not in COLUMN_ROLES for c in raw):
        raise FsxltError(f"{where}: data.columns must list column roles "
                         f"({', '.join(COLUMN_ROLES)})")
    columns = tuple(str(c) for c in raw)
    if "text_a" not in columns or columns.count("label") != 1 or columns[-1] != "label":
        raise FsxltError(f"{where}: data.columns needs text_a and exactly one label, the last")
    return columns


def _label_aliases(raw: Any, labels: tuple[str, ...], where: str) -> dict[str, str]:
    """Other spellings of a label in some distribution's files (MultiNLI's contradictory)."""
    aliases = {str(k): str(v) for k, v in (raw or {}).items()}
    wrong = sorted(v for v in aliases.values() if v not in labels)
    if wrong:
        raise FsxltError(f"{where}: label_aliases map to labels the task does not have: "
                         f"{', '.join(wrong)}")
    return aliases


def _check_metric(metric: str, kind: str, labels: tuple[str, ...], sampler: str,
                  where: str) -> None:
    """A ranking task (nDCG) is a classification over numeric relevance grades whose
    buckets are whole queries; the other metrics have no such demands."""
    one_of(metric, METRICS, where, "metric")
    if (metric in QA_METRICS) != (kind == "extractive_qa"):
        raise FsxltError(f"{where}: the metrics {' and '.join(QA_METRICS)} go with kind "
                         "extractive_qa, and only they")
    if (metric == "bleu") != (kind == "generation"):
        raise FsxltError(f"{where}: metric bleu goes with kind generation, and only it")
    if kind in UNLABELLED_KINDS and labels:
        raise FsxltError(f"{where}: a{'n' * (kind[0] == 'e')} {kind} task has no labels (its "
                         f"{'answers are spans' if kind[0] == 'e' else 'targets are texts'})")
    if (metric == "ndcg") != (sampler == "k-queries"):
        raise FsxltError(f"{where}: metric ndcg and sampler k-queries go together "
                         "(a ranking task's shot is a query with all its pages)")
    if metric == "ndcg":
        if kind != "classification":
            raise FsxltError(f"{where}: metric ndcg needs kind: classification over grades")
        try:
            [float(label) for label in labels]
        except ValueError:
            raise FsxltError(f"{where}: metric ndcg needs numeric labels (relevance grades), "
                             f"got {', '.join(labels)}") from None


def _check_sampler(sampler: str, kind: str, where: str) -> None:
    """The sampler must draw buckets for the task's kind (multiple-choice buckets have no
    per-label quota, tagging buckets are Minimum-Including ones)."""
    if kind not in SAMPLERS[sampler]:
        fitting = [name for name, kinds in SAMPLERS.items() if kind in kinds]
        raise FsxltError(f"{where}: sampler {sampler} draws {' and '.join(SAMPLERS[sampler])} "
                         f"buckets, not {kind} ones; use sampler: {' or '.join(fitting)}")


def parse_task(raw: dict[str, Any], where: str = "<task config>") -> TaskSpec:
    """Build a :class:`TaskSpec` from the mapping a task YAML file holds."""
    raw = document(raw, where, "a task config")
    data = mapping(require(raw, "data", where), where, "data")
    sampling = mapping(require(raw, "sampling", where), where, "sampling")
    kind = one_of(require(raw, "kind", where), KINDS, where, "kind")
    one_of(data.get("format"), DATA_FORMATS, where, "data.format")
    _check_sampler(one_of(sampling.get("sampler"), tuple(SAMPLERS), where, "sampling.sampler"),
                   kind, where)
    if kind == "multiple_choice" and raw.get("input") != "choices":
        raise FsxltError(f"{where}: a multiple_choice task needs input: choices")
    for one_kind, one_input in (("extractive_qa", "question_context"), ("generation", "text")):
        if (kind == one_kind) != (raw.get("input") == one_input):
            raise FsxltError(f"{where}: input {one_input} goes with kind {one_kind}")
    labels = tuple(str(label) for label in (raw.get("labels") or () if kind in UNLABELLED_KINDS
                                            else require(raw, "labels", where)))
    _check_metric(str(require(raw, "metric", where)), kind, labels, sampling["sampler"], where)
    names = {str(k): str(v) for k, v in (raw.get("label_names") or {}).items()}
    if set(names) - set(labels):
        raise FsxltError(f"{where}: label_names for labels the task does not have: "
                         f"{', '.join(sorted(set(names) - set(labels)))}")
    training = dict(raw.get("training") or {})
    for key in ("lr_grid", "source_lr_grid"):
        if key in training:
            training[key] = tuple(float(x) for x in training[key])
    return TaskSpec(
        name=str(require(raw, "name", where)),
        description=str(raw.get("description", "")),
        kind=kind,
        input=require(raw, "input", where),
        labels=labels,
        metric=str(require(raw, "metric", where)),
        source_language=str(raw.get("source_language", "en")),
        languages=tuple(str(lang) for lang in require(raw, "languages", where)),
        data=DataSpec(format=data["format"], pattern=data.get("pattern", "{split}-{lang}.tsv"),
                      hf=_parse_hub(data.get("hf")),
                      files={str(k): str(v[0] if isinstance(v, list) else v)
                             for k, v in (data.get("files") or {}).items()},
                      file_alternatives={str(k): tuple(map(str, v[1:]))
                                         for k, v in (data.get("files") or {}).items()
                                         if isinstance(v, list)},
                      fields={str(k): str(v) for k, v in (data.get("fields") or {}).items()},
                      columns=_parse_columns(data.get("columns"), data["format"], where),
                      alternatives=tuple(str(p) for p in data.get("alternatives") or ()),
                      hub_unavailable=str(data.get("hf_unavailable") or ""),
                      **_holdout(data.get("holdout"), data["format"], where)),
        sampling=SamplingSpec(
            sampler=sampling["sampler"],
            split=sampling.get("split", "train"),
            k_values=tuple(int(k) for k in sampling.get("k_values", (1, 2, 4, 8))),
            n_buckets=int(sampling.get("n_buckets", 40)),
            seed=int(sampling.get("seed", 0)),
            dev_paragraphs=None if sampling.get("dev_paragraphs") is None
            else int(sampling["dev_paragraphs"]),
        ),
        training=TrainingSpec(**training),
        label_unit=str(raw.get("label_unit", "tag")),
        config_path=where,
        pet=_parse_pet(raw.get("pet"), labels, raw["input"], where,
                       str(data.get("format") or ""),
                       tuple(str(lang) for lang in raw["languages"]))
        if kind not in ("tagging", *UNLABELLED_KINDS) else None,
        label_names=names,
        label_aliases=_label_aliases(raw.get("label_aliases"), labels, where),
        source_task=None if raw.get("source_task") is None else str(raw["source_task"]),
        submission=None if raw.get("submission") is None else str(raw["submission"]),
        submission_format=_submission_format(raw, where),
        benchmark=None if raw.get("benchmark") is None else str(raw["benchmark"]),
        icl=_parse_icl(raw, kind, labels, where),
    )


def _holdout(raw: Any, fmt: str, where: str) -> dict[str, int]:
    """``data.holdout: {test_paragraphs: N, dev_paragraphs: D, seed: S}`` (SQuAD JSON files
    only; ``squad_qg``: no dev paragraphs, its dev split is every paragraph not in test) as
    DataSpec fields."""
    if raw is None:
        return {}
    if fmt not in ("squad_json", "squad_qg"):
        raise FsxltError(f"{where}: data.holdout holds out paragraphs of SQuAD JSON files "
                         "(formats squad_json, squad_qg)")
    raw = mapping(raw, where, "data.holdout")
    if fmt == "squad_qg" and raw.get("dev_paragraphs"):
        raise FsxltError(f"{where}: a squad_qg task's dev split is every paragraph not held "
                         "out as test; data.holdout takes no dev_paragraphs")
    counts = {key: raw.get(key, 0) for key in ("test_paragraphs", "dev_paragraphs")}
    for key, count in counts.items():
        if not isinstance(count, int) or isinstance(count, bool) or count < 0 \
                or (key == "test_paragraphs" and count < 1):
            raise FsxltError(f"{where}: data.holdout.{key} must be a positive number")
    return {"holdout_paragraphs": counts["test_paragraphs"],
            "holdout_dev_paragraphs": counts["dev_paragraphs"],
            "holdout_seed": int(raw.get("seed", 0))}


def _parse_icl(raw: dict[str, Any], kind: str, labels: tuple[str, ...], where: str) -> Any:
    """The ``icl`` section (in-context learning prompts), parsed by :mod:`fsxlt.tasks.prompts`."""
    from fsxlt.tasks.prompts import parse_icl

    return parse_icl(raw.get("icl"), kind=kind, input_kind=str(raw.get("input")),
                     labels=labels, where=where)


def _builtin_config_dir():
    return resources.files("fsxlt").joinpath("configs")


@cache
def builtin_tasks() -> dict[str, TaskSpec]:
    """All tasks shipped in ``configs/``, by name."""
    tasks: dict[str, TaskSpec] = {}
    for entry in sorted(_builtin_config_dir().iterdir(), key=lambda e: e.name):
        if not entry.name.endswith(".yaml"):
            continue
        raw = yaml.load(entry.read_text(encoding="utf-8"),  # libyaml's: CLI help reads all
                        Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
        if isinstance(raw, dict) and "kind" in raw and (
                "labels" in raw or raw["kind"] in UNLABELLED_KINDS):
            spec = parse_task(raw, where=f"configs/{entry.name}")
            tasks[spec.name] = spec
    return tasks


def benchmark_tasks(benchmark: str) -> tuple[str, ...]:
    """The built-in tasks whose YAML says ``benchmark: <benchmark>``, by name."""
    return tuple(sorted(name for name, spec in builtin_tasks().items()
                        if spec.benchmark == benchmark))


def get_task(name_or_path: str | TaskSpec) -> TaskSpec:
    """Look up a task by name, or load it from a YAML file path.

    Raises a one-line :class:`FsxltError` listing the valid names when the
    task is unknown.
    """
    if isinstance(name_or_path, TaskSpec):
        return name_or_path
    tasks = builtin_tasks()
    if name_or_path in tasks:
        return tasks[name_or_path]
    path = Path(name_or_path)
    if path.suffix in (".yaml", ".yml") and path.is_file():
        raw = parse_yaml(path.read_text(encoding="utf-8"), str(path))
        return parse_task(raw, where=str(path))
    raise FsxltError(f"unknown task {name_or_path!r}{did_you_mean(name_or_path, tasks)}; "
                     f"valid: {', '.join(sorted(tasks))}")
