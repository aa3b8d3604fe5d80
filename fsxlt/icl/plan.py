"""Planning ``fsxlt icl``'s runs: which tasks and settings a causal LM can run
(:func:`check_task`, :func:`check_settings`), the test file and the buckets a run
reads, and :func:`icl_runs`, which ``fsxlt icl`` (:func:`icl_plan`) and a sweep's ICL
arms build their runs with, so that their identities are one."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fsxlt.data.readers import check_file_language
from fsxlt.errors import FsxltError
from fsxlt.icl.generative import check_generative, is_generative
from fsxlt.icl.presets import check_preset
from fsxlt.icl.run import IclRun, IclSettings
from fsxlt.models.precision import precision_identity
from fsxlt.study.runs import ZERO_SHOT_RUN, record_path
from fsxlt.tasks import TaskSpec, get_task
from fsxlt.tasks.prompts import check_languages


def check_task(spec: TaskSpec) -> None:
    """Tasks a causal LM cannot score by ranking options, or without prompts: one line."""
    if spec.is_tagging:
        raise FsxltError(f"{spec.name}: a tagging task; in-context learning here ranks "
                         "label words and cannot tag words")
    if spec.is_ranking:
        raise FsxltError(f"{spec.name}: a ranking task (nDCG over relevance grades); "
                         "in-context learning here scores classification and multiple choice")
    if spec.icl is None:
        raise FsxltError(f"{spec.name}: the task has no icl section (prompts) in "
                         f"{spec.config_path or 'its YAML'}")


def _test_file(spec: TaskSpec, language: str, test: Path | None, data_dir: Path | None,
               set_test: Path | None) -> Path:
    if test is not None:
        if not Path(test).is_file():
            raise FsxltError(f"{test}: --test file not found")
        return Path(test)
    if set_test is not None:
        return set_test
    if data_dir is None:
        raise FsxltError("no target test set: pass --test FILE or --data-dir DIR")
    path = spec.data.locate(data_dir, "test", language)
    if not path.is_file():
        raise FsxltError(f"{path}: test file of {spec.name}/{language} not found")
    return path


def _bucket_entries(bucket: Path) -> tuple[list[tuple[Path, Any]], Any]:
    """The bucket files named by ``bucket`` (a set, a bucket of one, or a bucket file on its
    own), hash-checked and read, and their :class:`~fsxlt.sampling.set_files.SetFiles`."""
    from fsxlt.sampling.set_files import named_files
    from fsxlt.sampling.store import read_bucket

    files = named_files(bucket)
    return [(path, read_bucket(path)) for _, _, path, _ in files.buckets], files


def check_settings(spec: TaskSpec, language: str, settings: IclSettings) -> None:
    """Everything about ICL runs of ``spec`` in ``language`` that is wrong before a model
    loads (the task, the settings, the prompts' languages): one line."""
    spec.check_language(language)
    check_task(spec)
    settings.check()
    if settings.preset is not None:
        check_preset(settings.preset, spec.name, spec.labels, language)
    else:
        check_languages(spec.icl, spec.name, settings.prompt, language)
    if is_generative(spec):
        check_generative(spec, settings)
    if settings.calibrate and spec.is_multiple_choice:
        raise FsxltError(f"{spec.name}: contextual calibration needs one label set for "
                         "every example; a multiple-choice task's candidates change")


@dataclass(frozen=True)
class BucketRef:
    """A bucket an ICL run reads: its coordinates, file and content hash (sha256 of its
    text, as the set's manifest records it)."""

    k: int
    index: int
    name: str
    path: Path
    sha256: str
    strategy: str = ""


def icl_runs(spec: TaskSpec, language: str, settings: IclSettings, out: Path, test_path: Path,
             buckets: list[BucketRef] | None, *,
             digest: Callable[[Path], str] | None = None,
             predict: Path | None = None, whole_test: bool = False,
             reading: Any = None) -> list[IclRun]:
    """The runs of ``settings`` on ``buckets`` (one each), or the zero-shot run (K=0) when
    ``buckets`` is None; ``fsxlt icl`` and a sweep's ICL arms both build their runs here,
    so their identities are one. ``digest``: the test file's content hash (a sweep's
    cache; default: sha256 of its bytes). ``predict``: a file each run also predicts (its
    content hash joins the identity). ``reading``: the bucket set's, by which the test file
    is read (in the identity where it is not the default)."""
    from fsxlt.fileio import sha256_file, sha256_text
    from fsxlt.icl.model import model_fingerprint

    gguf = Path(settings.model) / (settings.gguf_file or "")
    if settings.gguf_file and Path(settings.model).is_dir() and not gguf.is_file():
        raise FsxltError(f"{gguf}: GGUF file not found")
    arm = settings.arm_name()
    decoding = {"decoding": settings.decode.describe()} if is_generative(spec) else {}
    common = {"task": spec.name, "language": language, "method": arm,
              "model": model_fingerprint(settings.model, settings.gguf_file),
              "prompt": {**settings.describe(), "icl": repr(spec.icl), **decoding},
              "test": (digest or sha256_file)(Path(test_path)),
              **({"predict": sha256_file(predict)} if predict is not None else {}),
              **({"test_part": "whole"} if whole_test and spec.reads_parts else {}),
              **({"reading": reading.to_dict()} if reading is not None
                 and not reading.is_default else {}),
              **precision_identity(settings.precision)}
    to_predict = str(predict) if predict is not None else ""
    split = "" if whole_test and spec.reads_parts else "test"
    if reading is not None:
        from fsxlt.data.readings import check_arm_reading

        check_arm_reading("icl", reading, spec.name)
    if buckets is None:
        identity = {**common, "k": 0, "index": 0, "bucket": sha256_text("")}
        return [IclRun(spec.name, language, 0, 0, ZERO_SHOT_RUN, "", sha256_text(""),
                       str(test_path), str(record_path(out, spec.name, language, 0, arm,
                                                       ZERO_SHOT_RUN)), identity, spec=spec,
                       predict_path=to_predict, test_split=split)]
    runs = []
    for ref in buckets:
        full_arm = f"{arm}~{ref.strategy}" if ref.strategy else arm
        identity = {**common, "k": ref.k, "index": ref.index, "bucket": ref.sha256}
        runs.append(IclRun(spec.name, language, ref.k, ref.index, ref.name, str(ref.path),
                           ref.sha256, str(test_path),
                           str(record_path(out, spec.name, language, ref.k, full_arm,
                                           ref.name)), identity, ref.strategy, spec,
                           to_predict, split))
    return runs


def check_predict_file(spec: TaskSpec, predict: Path, language: str) -> Path:
    """``--predict``: a file of a task with a submission format, of the run's language where
    its name says one (else one line); ``fsxlt icl`` and ``fsxlt lm-adapt`` check it here."""
    if spec.submission is None:
        raise FsxltError(f"{spec.name}: the task has no submission format, so there is "
                         "nothing to --predict into")
    if not Path(predict).is_file():
        raise FsxltError(f"{predict}: file to predict not found")
    check_file_language(predict, language, "--predict")
    return Path(predict)


def icl_plan(task: str | TaskSpec, language: str, bucket: Path | None, out: Path,
             settings: IclSettings, *, test: Path | None = None,
             data_dir: Path | None = None, predict: Path | None = None) -> list[IclRun]:
    """The runs of ``fsxlt icl``: one per bucket of ``bucket`` (a set or a file), or one
    zero-shot run (K=0) when ``bucket`` is None; ``predict``: a file of the task each run
    also predicts, into the benchmark's submission file beside its record."""
    spec = get_task(task)
    check_settings(spec, language, settings)
    if predict is not None:
        check_predict_file(spec, predict, language)
    entries, files = _bucket_entries(Path(bucket)) if bucket is not None else ([], None)
    test_path = _test_file(spec, language, test, data_dir, files.test if files else None)
    whole = test is not None  # a --test file is read as given
    if files is not None:
        files.check_test(test_path, spec, "--test" if whole else "the test file", whole=whole)
    if bucket is None:
        return icl_runs(spec, language, settings, out, test_path, None, predict=predict,
                        whole_test=whole)
    refs = []
    for path, loaded in entries:
        if (loaded.task, loaded.language) != (spec.name, language):
            raise FsxltError(f"{path}: a bucket of {loaded.task}/{loaded.language}, not "
                             f"{spec.name}/{language}")
        strategy = loaded.meta.get("strategy")
        strategy = str(strategy.get("name") or "") if isinstance(strategy, dict) else ""
        refs.append(BucketRef(loaded.k, loaded.index, loaded.name, path, loaded.sha256,
                              strategy))
    return icl_runs(spec, language, settings, out, test_path, refs, predict=predict,
                    whole_test=whole, reading=files.reading if files is not None else None)


__all__ = ["BucketRef", "check_predict_file", "check_settings", "check_task", "icl_plan",
           "icl_runs"]
