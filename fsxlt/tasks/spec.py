"""What a task is: its kinds, formats, metrics and samplers, and the spec dataclasses
(:class:`TaskSpec` and its data, sampling, training and PET parts) that its YAML becomes."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from fsxlt.errors import FsxltError, did_you_mean

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
