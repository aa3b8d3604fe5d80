"""Bucket sets as lm-evaluation-harness tasks: any model lm-eval runs, scored per bucket.

:func:`export_lm_eval` writes, for every XNLI and PAWS-X set of a bucket store::

    OUT/<task>-<lang>-k<K>/bucket_00.jsonl ...   each bucket's examples as lm-eval's
                                                 documents, in fsxlt's demonstration order
    OUT/<task>-<lang>-k<K>/test.jsonl            the test set, as lm-eval's documents
    OUT/<task>-<lang>-k<K>/fsxlt_<task>_<lang>_k<K>_b00.yaml ...   one task per bucket
    OUT/<task>-<lang>-k<K>/fsxlt_<task>_<lang>_k<K>.yaml           their group

Each task includes lm-eval's own task file for the language (``xnli_<lang>.yaml``,
``paws_<lang>.yaml`` of the installed lm-eval, by absolute path), so its prompt, choices,
preprocessing (``process_docs``) and metrics are lm-eval's own, and replaces only the
data: the bucket as the few-shot split (sampler ``first_n``, ``num_fewshot`` = the
bucket's size) and the test file as the test split, both local JSON lines. The
demonstrations are in the order ``fsxlt icl`` shows them (a shuffle seeded by ``seed``
and the bucket's index, :func:`fsxlt.icl.run.demonstration_order`), so ``fsxlt icl
--preset lm-eval`` and ``lm_eval --include_path OUT --tasks fsxlt_xnli_de_k4`` prompt alike.
A task's ``metadata`` names the bucket's index and hash, the demonstration order's seed,
the test file (its absolute, resolved path) and the fsxlt version that wrote it. Data
paths are absolute, so an import works from any working directory: export again after
moving the folder.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from fsxlt import __version__
from fsxlt.errors import FsxltError
from fsxlt.fileio import dumps_jsonl, staged_dir
from fsxlt.tasks import TaskSpec, get_task

# fsxlt's task -> (lm-eval's task folder, its file for a language, the document's fields)
LM_EVAL_TASKS = {"xnli": ("xnli", "xnli_{lang}.yaml", ("premise", "hypothesis")),
                 "pawsx": ("paws-x", "paws_{lang}.yaml", ("sentence1", "sentence2"))}


@dataclass(frozen=True)
class ExportedTasks:
    """One set's tasks: its group name, the task per bucket, where they are."""

    group: str
    tasks: list[str]
    directory: Path


def lm_eval_task_file(task: str, language: str) -> Path:
    """lm-eval's own task file of ``task`` in ``language`` (installed lm-eval), or one line."""
    try:
        import lm_eval
    except ImportError:
        raise FsxltError("exporting lm-eval tasks needs lm-eval (pip install -e "
                         "'.[lmeval]')") from None
    folder, name, _fields = LM_EVAL_TASKS[task]
    path = Path(lm_eval.__file__).parent / "tasks" / folder / name.format(lang=language)
    if not path.is_file():
        raise FsxltError(f"lm-eval has no {task} task for {language} ({path} not found)")
    return path


def document(task: TaskSpec, example: Any) -> dict[str, Any]:
    """An example as lm-eval's document: the pair's fields and the label's position."""
    first, second = LM_EVAL_TASKS[task.name][2]
    return {"id": example.id, first: example.text_a, second: example.text_b or "",
            "label": list(task.labels).index(example.label)}


def task_config(name: str, include: Path, fewshot: Path, test: Path, shots: int,
                bucket: dict[str, Any]) -> dict[str, Any]:
    """One bucket's lm-eval task: lm-eval's own task file with the data replaced."""
    return {"include": str(include), "task": name, "dataset_path": "json",
            "dataset_name": None,
            "dataset_kwargs": {"data_files": {"fewshot": str(fewshot), "test": str(test)}},
            "training_split": None, "validation_split": None, "test_split": "test",
            "fewshot_split": "fewshot", "fewshot_config": {"sampler": "first_n"},
            "num_fewshot": shots,
            "metadata": {"version": 1.0, "fsxlt": __version__, "bucket": bucket}}


def export_lm_eval(store: str | Path, out: str | Path,
                   test_file: Callable[[str, str], Path | None], *, seed: int = 0,
                   progress: Callable[[Iterable[Path]], Iterable[Path]] | None = None,
                   skipped: list[str] | None = None) -> list[ExportedTasks]:
    """Write every XNLI and PAWS-X set below ``store`` as lm-eval tasks under ``out``
    (module docstring); ``test_file(task, language)`` is the test file each set is
    scored on (None: there is none). A set of another task (lm-eval's preset covers these
    two) or without a test file is left out and named in ``skipped``; a store with no set
    to export is refused in one line."""
    from fsxlt.data import read_examples
    from fsxlt.icl.run import IclSettings, demonstration_order
    from fsxlt.sampling.store import find_sets, read_manifest, read_set

    store, out = Path(store), Path(out)
    directories = find_sets(store)
    if not directories:
        raise FsxltError(f"{store}: no bucket sets below it")
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise FsxltError(f"{out}: exists and is not empty; export into a new folder")
    manifests = {directory: read_manifest(directory) for directory in directories}
    other = sorted({m["task"] for m in manifests.values()} - set(LM_EVAL_TASKS))
    left_out = [f"{', '.join(other)} (lm-eval's preset covers xnli and pawsx)"] if other else []
    wanted: dict[Path, Path] = {}
    untested: dict[tuple[str, str], list[str]] = {}
    for directory, manifest in manifests.items():
        if manifest["task"] not in LM_EVAL_TASKS:
            continue
        test_path = test_file(manifest["task"], manifest["language"])
        if test_path is None:
            untested.setdefault((manifest["task"], manifest["language"]), []).append(
                f"k{manifest['k']}")
        else:
            wanted[directory] = test_path
    left_out += [f"{task}/{language} {','.join(ks)} (no {task} test file for {language})"
                 for (task, language), ks in sorted(untested.items())]
    if skipped is not None:
        skipped.extend(left_out)
    if not wanted:
        raise FsxltError(f"{store}: no set to export as lm-eval tasks; left out "
                         f"{'; '.join(left_out)}")
    files: dict[str, str] = {}
    exported = []
    settings = IclSettings(model="", seed=seed, preset="lm-eval")
    for directory in (progress or iter)(list(wanted)):
        test_path = wanted[directory]
        manifest, buckets, _remaining = read_set(directory, verify=True)
        task, language, k = get_task(manifest["task"]), manifest["language"], manifest["k"]
        include = lm_eval_task_file(task.name, language)
        stem, group = f"{task.name}-{language}-k{k}", f"fsxlt_{task.name}_{language}_k{k}"
        test = read_examples(test_path, task, language=language, split="test")
        files[f"{stem}/test.jsonl"] = dumps_jsonl(document(task, ex) for ex in test)
        names = []
        for bucket in buckets:
            order = demonstration_order(list(bucket.examples), settings, bucket.index)
            data = f"{stem}/bucket_{bucket.index:02d}.jsonl"
            files[data] = dumps_jsonl(document(task, ex) for ex in order)
            name = f"{group}_b{bucket.index:02d}"
            config = task_config(name, include, out.resolve() / data,
                                 out.resolve() / f"{stem}/test.jsonl", len(order),
                                 {"index": bucket.index, "sha256": bucket.sha256,
                                  "seed": seed, "test": str(Path(test_path).resolve())})
            files[f"{stem}/{name}.yaml"] = yaml.safe_dump(config, sort_keys=False,
                                                          allow_unicode=True)
            names.append(name)
        files[f"{stem}/{group}.yaml"] = yaml.safe_dump(
            {"group": group, "task": names,
             "aggregate_metric_list": [{"metric": "acc", "aggregation": "mean",
                                        "weight_by_size": False}],
             "metadata": {"version": 1.0, "fsxlt": __version__}}, sort_keys=False)
        exported.append(ExportedTasks(group, names, out / stem))
    with staged_dir(out) as staging:  # the folder appears whole, or not at all
        for name, text in files.items():
            (staging / name).parent.mkdir(parents=True, exist_ok=True)
            (staging / name).write_text(text, encoding="utf-8")
    return exported

