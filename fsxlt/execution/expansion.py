"""A sweep config's expansion into runs (:func:`expand`) and its K=0 records."""

from __future__ import annotations

import json
from dataclasses import replace
from itertools import product
from pathlib import Path
from typing import Any

from fsxlt.data.files import data_file
from fsxlt.data.readings import DEFAULT_READING, Reading
from fsxlt.errors import FsxltError
from fsxlt.execution.config import SweepConfig, TaskPlan
from fsxlt.execution.gaps import Gaps, missing_source_files
from fsxlt.execution.icl_runs import icl_cell_runs, icl_zero_shot_runs, lm_cell_runs
from fsxlt.execution.inputs import bucket_files
from fsxlt.execution.spec import Hashes, Plan, RunSpec, ZeroShotSpec, build_run
from fsxlt.models.location import check_model_location
from fsxlt.sampling.set_files import SetFiles
from fsxlt.study.runs import (
    CHECKPOINT_FILE,
    ZERO_SHOT_FORMAT,
    ZERO_SHOT_RUN,
    is_checkpoint,
    source_languages_of,
    zero_shot_record_path,
)
from fsxlt.tasks import TaskSpec


def _zero_shot(plan: TaskPlan, lang: str, out: Path, hashes: Hashes, test: Path | None,
               notes: list[str], reading: Reading = DEFAULT_READING) -> ZeroShotSpec | None:
    """The K=0 record of a language: the checkpoint's zero-shot score, when it scored the
    same test set as the sweep's runs, read as its set reads it (else none, and a note
    says why)."""
    if not is_checkpoint(plan.start):
        return None
    meta = json.loads((Path(str(plan.start)) / CHECKPOINT_FILE).read_text(encoding="utf-8"))
    if meta.get("task") != plan.task:  # e.g. an XNLI checkpoint starting OCNLI: its zh
        return None                    # zero-shot score is XNLI's, not this task's
    scores = (meta.get("zero_shot") or {}).get(lang)
    if not scores:
        return None
    if not _same_test(meta, plan.spec, lang, test, plan.test_limit, reading):
        cure = f"--target-test {lang}={test}" + (
            f" --test-limit {plan.test_limit}" if plan.test_limit is not None else "") + "".join(
            f" --reading {axis}={choice}" for axis, choice in reading.choices)
        notes.append(f"{plan.task}/{lang}: no K=0 record: {plan.start} scored zero-shot on "
                     f"another test set than the runs' ({test}"
                     + (f", a sample of {plan.test_limit}" if plan.test_limit else "")
                     + (f", read by reading {reading.describe()}" if not reading.is_default
                        else "")
                     + f"); source-train with {cure} to score this one")
        return None
    record = {
        "format": ZERO_SHOT_FORMAT, "status": "ok", "task": plan.task, "language": lang,
        "k": 0, "method": "zero-shot", "metric": meta.get("metric"),
        "test_score": scores.get("score"), "test": scores,
        "start": {"fingerprint": hashes.start(str(plan.start)), "encoder": meta.get("encoder"),
                  "source_config_hash": meta.get("config_hash")},
        "selection": meta.get("selection"), "oracle": (meta.get("oracle") or {}).get(lang),
        "source_languages": source_languages_of(meta),
    }
    if scores.get("in_source"):
        record["in_source"] = True  # trained on this language: not a zero-shot score
    if isinstance(meta.get("warnings"), list) and meta["warnings"]:  # it learned nothing
        record["warnings"] = [str(w) for w in meta["warnings"]]
    return ZeroShotSpec(plan.task, lang, str(zero_shot_record_path(out, plan.task, lang)),
                        record)


def _same_test(meta: dict, task: TaskSpec, lang: str, test: Path | None,
               limit: int | None = None, reading: Reading = DEFAULT_READING) -> bool:
    """Whether the checkpoint's zero-shot test set of ``lang`` holds the examples the runs
    score: the ``test`` file, or its seeded sample of ``limit`` (true when either is
    unknown and no limit is set: older records name no hash)."""
    recorded = (((meta.get("data") or {}).get("target_test") or {}).get(lang) or {})
    if (meta.get("eval_long") or "whole") != reading.get("eval_long"):
        return False  # scored under another rule for long tagging sentences
    if test is None or not recorded.get("sha256"):
        return limit is None and reading.is_default
    from fsxlt.data.examples import seeded_sample
    from fsxlt.execution.spec import EVAL_SAMPLE_KEYS
    from fsxlt.sampling.set_files import read_data_file
    from fsxlt.training.loop import examples_digest

    examples = seeded_sample(read_data_file(test, task, lang, "test", reading), limit,
                             EVAL_SAMPLE_KEYS["test"])
    return examples_digest(examples) == recorded["sha256"]


def expand(config: SweepConfig, dry_run: bool = False) -> Plan:
    """Every run of the sweep (sorted by task, language, K, arm, bucket) and the K=0 records:
    the adapting runs (:class:`RunSpec`: one per method and training regime, each pair an
    arm of its own), the ICL arms' runs on the same buckets and at K=0
    (:class:`~fsxlt.execution.icl_runs.IclSweepRun`) and the LoRA arms' runs on the same
    buckets (:class:`~fsxlt.execution.icl_runs.LmSweepRun`).

    Reads bucket manifests and hashes input files; a missing input is a one-line error.
    ``dry_run``: every missing input is kept in the plan's ``gaps`` instead (each line once,
    :mod:`fsxlt.execution.gaps`) and the cells that lack one are left out; a ``start``
    that does not exist yet (a checkpoint still to source-train) is listed in
    ``missing_starts``, with any source file its source training lacks in ``gaps``, and
    its runs are planned as source-trained ones, with no identity to check
    (``start_missing``).
    """
    hashes = Hashes()
    out = Path(config.out)
    result = Plan()
    gaps = Gaps(collect=dry_run)
    for plan in config.tasks:
        starts = _starts(plan, result.missing_starts if dry_run else None)
        if dry_run and any(task == plan.task for task, _ in result.missing_starts):
            for err in missing_source_files(plan):
                gaps.add(err)
        hashes.missing.update(start for _task, start in result.missing_starts)
        for lang in plan.languages:
            untrained_sets: tuple[Path, Path | None] | None = None  # K=0 runs' dev, test
            reading = DEFAULT_READING  # how the first K's set reads them
            for k in plan.k:
                cell = _cell(plan, lang, k, starts, out, hashes, config.name, gaps)
                if cell is None:
                    continue
                runs, sets, files = cell
                result.runs += runs
                if untrained_sets is None and sets is not None:
                    untrained_sets, reading = sets, files.reading
            zero = gaps.attempt(_zero_shot, plan, lang, out, hashes,
                                untrained_sets[1] if untrained_sets else None, result.notes,
                                reading)
            if zero is not None:
                result.zero_shot.append(zero)
            if untrained_sets is not None:
                result.runs += gaps.attempt(_k0_runs, plan, starts, lang, untrained_sets,
                                            out, hashes, config.name, reading) or []
    result.runs.sort(key=lambda r: (r.task, r.language, r.k, r.arm, r.index))
    result.gaps = gaps.found
    return result


def _k0_runs(plan: TaskPlan, starts: list, lang: str, sets: tuple[Path, Path | None],
             out: Path, hashes: Hashes, sweep: str, reading: Reading) -> list[Any]:
    """A language's K=0 runs: the untrained methods' and the ICL arms' zero-shot runs."""
    return (_untrained_runs(starts, lang, sets, out, hashes, sweep, reading)
            + icl_zero_shot_runs(plan, lang, sets[1], out, hashes, sweep))


def _cell(plan: TaskPlan, lang: str, k: int, starts: list, out: Path, hashes: Hashes,
          sweep: str, gaps: Gaps,
          ) -> tuple[list[Any], tuple[Path, Path | None] | None, SetFiles] | None:
    """The runs of one (task, language, K) cell, the dev and test sets of its K=0 runs and
    its bucket set; ``None`` where an input is missing (``gaps`` keeps why, or raises).
    The bucket set and the test file are looked up apart, so a dry run names both."""
    spec = plan.spec
    files = gaps.attempt(bucket_files, plan, lang, k, hashes)
    test = files.test if files is not None else None
    if test is None:
        test = gaps.attempt(data_file, spec, plan.data_dir, "test", lang)
    if files is None or test is None:
        return None

    def build() -> tuple[list[Any], tuple[Path, Path | None] | None, SetFiles]:
        check_set_reading(plan, files)
        files.check_test(test, spec)
        runs: list[Any] = []
        shared_dev = None  # adapting runs select on a dev set; ICL runs need none
        if starts and any(dev is None for *_rest, dev in files.buckets):
            shared_dev = _shared_dev(spec, plan, lang, files)
        sets = (files.buckets[0][3] or shared_dev, test) if files.buckets else None
        for start, source_training, methods, arm_plan in starts:
            for method, regime in product(methods, arm_plan.regimes):
                for index, name, bucket, dev in files.buckets:
                    runs.append(build_run(
                        arm_plan, lang, k, (index, name), method, start, source_training,
                        bucket, dev or shared_dev, test, out, hashes, sweep, files.strategy,
                        regime, files.reading))
        runs += icl_cell_runs(plan, lang, k, files, test, out, hashes, sweep)
        runs += lm_cell_runs(plan, lang, files, out, hashes, sweep)
        _plan_cell(runs, 0, files)
        return runs, sets, files

    return gaps.attempt(build)


def check_set_reading(plan: TaskPlan, files: SetFiles) -> None:
    """Refuse, in one line, a set read otherwise than the sweep's ``reading`` asks."""
    if plan.reading is None or files.reading == plan.reading:
        return
    cure = ("--reading " + " --reading ".join(f"{a}={v}" for a, v in plan.reading.choices)
            if not plan.reading.is_default else "no --reading")
    raise FsxltError(f"{files.directory}: its set was read by reading "
                     f"{files.reading.describe()}, the sweep asks for "
                     f"{plan.reading.describe()}; import or sample it into another store with "
                     f"{cure}")


def _plan_cell(runs: list[Any], first: int, files: SetFiles) -> None:
    """Give each run of a cell (``runs[first:]``) the bucket indexes the sweep runs there,
    for its record (``run.plan``): a report then expects what was planned."""
    planned = tuple(sorted(index for index, *_rest in files.buckets))
    for position in range(first, len(runs)):
        runs[position] = replace(runs[position], planned_buckets=planned)


def _starts(plan: TaskPlan, missing: list[tuple[str, str]] | None,
            ) -> list[tuple[str, bool, tuple[str, ...], TaskPlan]]:
    """The starts of a task's runs: (start, is it source-trained, its methods, its settings).

    A ``start`` that does not exist is refused, or, given ``missing``, added to it as
    (task, start) and taken for the source-trained checkpoint it is to be.
    """
    starts: list[tuple[str, bool, tuple[str, ...], TaskPlan]] = []
    if plan.methods:
        if plan.start is None:
            raise FsxltError(f"{plan.task}: the sweep needs start (a source-trained "
                             "checkpoint)")
        if Path(plan.start).exists():
            check_model_location(plan.start, "start", tokenizer=True)
            starts.append((plan.start, is_checkpoint(plan.start), plan.methods, plan))
        elif missing is None:
            raise FsxltError(f"{plan.start}: starting checkpoint for {plan.task} not found")
        else:
            missing.append((plan.task, plan.start))
            starts.append((plan.start, True, plan.methods, plan))
    if plan.no_source and plan.no_source["methods"]:
        encoder = plan.no_source["encoder"]
        check_model_location(encoder, "encoder", tokenizer=True)
        starts.append((encoder, is_checkpoint(encoder), tuple(plan.no_source["methods"]),
                       replace(plan, **plan.no_source.get("settings", {}))))
    return starts


def _untrained_runs(starts: list[tuple[str, bool, tuple[str, ...], TaskPlan]], lang: str,
                    sets: tuple[Path, Path | None], out: Path, hashes: Hashes,
                    sweep: str, reading: Reading = DEFAULT_READING) -> list[RunSpec]:
    """The K=0 runs of a language: each method of a pretrained-encoder start (the no-source
    arm) that scores untrained (pet: FewCLUE's zero-shot), on the dev and test sets of the
    language's first K (``k0/<arm>/zero-shot.json``)."""
    runs = []
    for start, source_training, methods, arm_plan in starts:
        if source_training:
            continue  # a checkpoint's K=0 is its own zero-shot record
        for ref in methods:
            if arm_plan.method(ref).scores_untrained:
                runs.append(build_run(arm_plan, lang, 0, (0, ZERO_SHOT_RUN), ref, start, False,
                                      None, sets[0], sets[1], out, hashes, sweep,
                                      reading=reading))
    return runs


def _shared_dev(spec: TaskSpec, plan: TaskPlan, lang: str, files: SetFiles) -> Path:
    """The dev set of buckets without their own: the remaining dev set, or the task's file."""
    if spec.selects_on_remaining:
        if files.remaining is None:
            raise files.no_remaining(plan.task)
        return files.remaining
    return data_file(spec, plan.data_dir, "dev", lang)
