"""A task YAML into a :class:`~fsxlt.tasks.spec.TaskSpec`, every field checked, each
problem one line naming the file and field."""

from __future__ import annotations

from typing import Any

from fsxlt.config_checks import document, mapping, one_of, require
from fsxlt.errors import FsxltError
from fsxlt.tasks.spec import (
    COLUMN_ROLES,
    DATA_FORMATS,
    KINDS,
    METRICS,
    QA_METRICS,
    SAMPLERS,
    UNLABELLED_KINDS,
    DataSpec,
    HubSource,
    PetSpec,
    SamplingSpec,
    TaskSpec,
    TrainingSpec,
)


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
