"""Planning LoRA runs of a causal LM (``fsxlt lm-adapt``): their settings, one run per
bucket with its dev, test and predict files, and each run's identity and record path.

:class:`LmSettings` is everything but the bucket and the data; :func:`lm_plan`
reads and checks a bucket set (or a bucket) and builds its :class:`LmRun` list,
every bad input a one-line error before a model loads. :mod:`fsxlt.icl.tuning`
trains and scores the runs.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from fsxlt.errors import FsxltError
from fsxlt.icl.generation import BATCHING, DEFAULT_STOP, DecodeSettings
from fsxlt.icl.generative import is_generative
from fsxlt.icl.lm_lora import LoraSettings
from fsxlt.icl.planned import CausalLmRun, check_arm_name
from fsxlt.models.precision import precision_identity
from fsxlt.study.runs import record_path
from fsxlt.tasks import TaskSpec, get_task
from fsxlt.tasks.prompts import PROMPT_LANGUAGES, PromptSettings, check_languages

DEFAULT_ARM = "lm-lora"
LM_LRS = (1e-4, 3e-4, 1e-3)
SELECT_ON = ("metric", "loss")
PROMPT = PromptSettings()   # English template and label words: the ICL arm's default


@dataclass(frozen=True)
class LmSettings:
    """How LoRA runs of a causal LM train and score (everything but the bucket and the
    data); None: the task's default (epochs, patience, seed) or the whole bucket."""

    model: str
    gguf_file: str | None = None
    lrs: tuple[float, ...] = LM_LRS
    max_epochs: int | None = None
    patience: int | None = None
    seed: int | None = None
    mini_batch: int | None = None
    lora: LoraSettings = LoraSettings()
    sample_seed: int = 0             # the test and dev samples (fsxlt icl's default seed)
    test_limit: int | None = None
    dev_limit: int | None = None
    max_new_tokens: int = 32         # generative tasks: the token budget
    stop: tuple[str, ...] = DEFAULT_STOP
    batching: str = BATCHING[0]      # generative tasks: how queries share a batch
    arm: str | None = None
    select_on: str = "metric"        # what dev scores each epoch: the task's metric, or loss
    prompt: PromptSettings = PROMPT  # the template's and label words' language
    precision: str = "fp32"          # training's and scoring's precision, resolved

    def check(self) -> None:
        if not self.lrs or any(not lr > 0 for lr in self.lrs):
            raise FsxltError(f"learning rates must be > 0, got {list(self.lrs)}")
        for name, value in (("max epochs", self.max_epochs), ("patience", self.patience),
                            ("mini-batch", self.mini_batch), ("test limit", self.test_limit),
                            ("dev limit", self.dev_limit)):
            if value is not None and value < 1:
                raise FsxltError(f"the {name} must be at least 1, got {value}")
        self.lora.check()
        self.decode.check()
        for what, value in (("template", self.prompt.template_language),
                            ("label words", self.prompt.words_language)):
            if value not in PROMPT_LANGUAGES:
                raise FsxltError(f"the {what} language is en or target, not {value!r}")
        if self.select_on not in SELECT_ON:
            raise FsxltError(f"--select-on is one of {', '.join(SELECT_ON)}, not "
                             f"{self.select_on!r}")
        check_arm_name(self.arm, "lm-", "@~+/ ", "an LM fine-tuning")

    @property
    def decode(self) -> DecodeSettings:
        return DecodeSettings(self.max_new_tokens, tuple(self.stop), self.batching)

    def resolved(self, spec: TaskSpec) -> LmSettings:
        """The settings with the task's defaults filled in (adapting's epochs, patience and
        seed)."""
        training = spec.training
        return replace(self, lrs=tuple(float(lr) for lr in self.lrs),
                       max_epochs=self.max_epochs or training.adapt_max_epochs,
                       patience=self.patience or training.adapt_patience,
                       seed=training.seed if self.seed is None else int(self.seed))

    def arm_name(self) -> str:
        return self.arm or DEFAULT_ARM

    def describe(self) -> dict[str, Any]:
        """What the identity and the record's ``lm_tuning`` block name (resolved settings)."""
        return {"lora": self.lora.describe(), "lrs": list(self.lrs),
                "max_epochs": self.max_epochs, "patience": self.patience, "seed": self.seed,
                "mini_batch": self.mini_batch, "sample_seed": self.sample_seed,
                "test_limit": self.test_limit, "dev_limit": self.dev_limit,
                "optimizer": "adam", "prompt": self.prompt.describe(),
                "select_on": self.select_on}


@dataclass(frozen=True)
class LmRun(CausalLmRun):
    """One LoRA run: what ``fsxlt.study.write_plan.plan_writes`` needs, and where its inputs are."""

    task: str
    language: str
    k: int
    index: int
    name: str
    bucket_path: str
    bucket_sha256: str
    dev_path: str
    test_path: str
    record_path: str
    identity: dict[str, Any] = field(compare=False)
    settings: LmSettings = field(compare=False)
    strategy: str = ""
    spec: TaskSpec | None = field(default=None, compare=False)
    predict_path: str = ""    # a file to predict (XGLUE/FewCLUE submission files)
    whole_dev: bool = False   # a --dev file named: read whole, never cut into the task's parts
    whole_test: bool = False  # the same for --test


# --------------------------------------------------------------------------- planning

def check_lm_settings(spec: TaskSpec, language: str, settings: LmSettings) -> None:
    """Everything wrong with LoRA runs of ``spec`` in ``language`` before a model loads (the
    task, the settings): one line. The tasks are the ICL arm's."""
    from fsxlt.icl.plan import check_task

    spec.check_language(language)
    check_task(spec)
    settings.check()
    check_languages(spec.icl, spec.name, settings.prompt, language)


def _file(path: Path | None, what: str) -> Path | None:
    if path is not None and not Path(path).is_file():
        raise FsxltError(f"{path}: {what} file not found")
    return path


def _test_file(spec: TaskSpec, language: str, test: Path | None, data_dir: Path | None,
               set_test: Path | None) -> Path:
    """``--test``, else the set's own test set (fixed splits), else the task's test file
    under ``data_dir`` (the order ``fsxlt icl`` takes)."""
    found = _file(test, "--test") or set_test
    if found is None and data_dir is not None:
        from fsxlt.data.files import data_file

        found = data_file(spec, str(data_dir), "test", language)
    if found is None:
        raise FsxltError("no target test set: pass --test FILE or --data-dir DIR")
    return Path(found)


def _dev_file(spec: TaskSpec, language: str, dev: Path | None, own: Path | None,
              data_dir: Path | None, files: Any) -> Path:
    """``--dev``, else the bucket's own dev set, else (as ``fsxlt adapt``) the task's dev
    file under ``data_dir`` (tasks sampled from train) or the set's remaining dev examples."""
    if dev is not None or own is not None:
        return Path(dev or own)
    if data_dir is not None and not spec.selects_on_remaining:
        from fsxlt.data.files import data_file

        return data_file(spec, str(data_dir), "dev", language)
    if files.remaining is not None:
        return Path(files.remaining)
    if spec.selects_on_remaining:
        raise FsxltError(f"{files.directory}: no dev-remaining.jsonl beside the bucket; task "
                         f"{spec.name} selects models on the examples of its sampled split "
                         "that are in no bucket, so pass --dev FILE explicitly")
    raise FsxltError("no target dev set: pass --dev FILE or --data-dir DIR")


def lm_plan(task: str | TaskSpec, language: str, bucket: Path, out: Path,
            settings: LmSettings, *, test: Path | None = None, dev: Path | None = None,
            data_dir: Path | None = None, predict: Path | None = None,
            digest: Callable[[Path], str] | None = None) -> list[LmRun]:
    """The runs of ``fsxlt lm-adapt``: one per bucket of ``bucket`` (a set, a bucket of a
    set, or a bucket file), each with its dev and test files and its identity;
    ``predict``: a file of the task each run also predicts into the benchmark's
    submission file beside its record (its hash joins the identity). ``digest``: how a
    file is hashed (a sweep's cache; default: sha256 of its bytes)."""
    from fsxlt.fileio import sha256_file
    from fsxlt.icl.model import model_fingerprint
    from fsxlt.icl.plan import check_predict_file
    from fsxlt.sampling.apart import check_apart
    from fsxlt.sampling.set_files import named_files
    from fsxlt.sampling.store import read_bucket

    spec = get_task(task)
    digest = digest or sha256_file
    check_lm_settings(spec, language, settings)
    settings = settings.resolved(spec)
    gguf = Path(settings.model) / (settings.gguf_file or "")
    if settings.gguf_file and Path(settings.model).is_dir() and not gguf.is_file():
        raise FsxltError(f"{gguf}: GGUF file not found")
    files = named_files(Path(bucket))
    from fsxlt.data.readings import check_arm_reading

    check_arm_reading("lm-lora", files.reading, spec.name)
    test_path = _test_file(spec, language, test, data_dir, files.test)
    files.check_test(test_path, spec, "--test" if test else "the test file",
                     whole=test is not None)
    _file(dev, "--dev")
    arm = settings.arm_name()
    decoding = {"decoding": settings.decode.describe()} if is_generative(spec) else {}
    digests: dict[Path, str] = {}
    common = {"task": spec.name, "language": language, "method": arm,
              "model": model_fingerprint(settings.model, settings.gguf_file),
              "tuning": settings.describe(), "icl": repr(spec.icl), **decoding,
              "test": digests.setdefault(test_path, digest(test_path)),
              **({"predict": digest(check_predict_file(spec, predict, language))} if predict
                 else {}),
              **({"test_part": "whole"} if test is not None and spec.reads_parts else {}),
              **({"reading": files.reading.to_dict()} if not files.reading.is_default else {}),
              **precision_identity(settings.precision)}
    runs = []
    for _, _, path, own_dev in files.buckets:
        loaded = read_bucket(path)
        if (loaded.task, loaded.language) != (spec.name, language):
            raise FsxltError(f"{path}: a bucket of {loaded.task}/{loaded.language}, not "
                             f"{spec.name}/{language}")
        dev_path = _dev_file(spec, language, dev, own_dev, data_dir, files)
        if dev_path not in digests:
            digests[dev_path] = digest(dev_path)
            check_apart(dev_path, test_path, spec, language, reading=files.reading,
                        dev_what="--dev" if dev is not None else "the dev set",
                        test_what="--test" if test is not None else "the test file",
                        digest=digest, dev_split=None if dev is not None and spec.reads_parts
                        else "dev",
                        test_split=None if test is not None and spec.reads_parts else "test")
        strategy = loaded.meta.get("strategy")
        strategy = str(strategy.get("name") or "") if isinstance(strategy, dict) else ""
        identity = {**common, "k": loaded.k, "index": loaded.index, "bucket": loaded.sha256,
                    "dev": digests[dev_path],
                    **({"dev_part": "whole"} if dev is not None and spec.reads_parts else {})}
        full_arm = f"{arm}~{strategy}" if strategy else arm
        runs.append(LmRun(spec.name, language, loaded.k, loaded.index, loaded.name, str(path),
                          loaded.sha256, str(dev_path), str(test_path),
                          str(record_path(out, spec.name, language, loaded.k, full_arm,
                                          loaded.name)), identity, settings, strategy, spec,
                          str(predict) if predict is not None else "",
                          dev is not None and spec.reads_parts,
                          test is not None and spec.reads_parts))
    return runs
