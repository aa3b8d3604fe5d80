"""lm-evaluation-harness results of exported buckets, as fsxlt run records.

``lm_eval … --include_path OUT --tasks fsxlt_<task>_<lang>_k<K> --log_samples
--output_path RES`` (tasks :mod:`fsxlt.icl.lm_eval_tasks` wrote) leaves
``RES/<model>/results_<time>.json`` and one ``samples_<task>_<time>.jsonl`` per task.
:func:`import_lm_eval` turns each bucket's task into the record of a run of arm
``lm-eval-<model>`` at ``RUNS/<task>/<lang>/k<K>/lm-eval-<model>/<NN>.json``, beside
the encoder and ICL arms of the same buckets, so ``fsxlt report`` shows it and ``report
--compare`` pairs it bucket by bucket:

- the bucket is found in the bucket store by its index and hash (the task's metadata),
  and a hash that matches no bucket there is refused;
- the predictions are the arg-max of lm-eval's per-sample log-likelihoods
  (``filtered_resps``), scored with the task's metric on the test file the task named,
  in its order; the record keeps lm-eval's own score beside it;
- the run's identity is the model (lm-eval's ``model_name`` and revision), the task
  config's hash, the bucket's hash, the test file's hash and lm-eval's version; the
  runs directory's write-once rule applies (a record of the same identity is already
  done, another is refused unless ``replace``).

Everything is read and checked before anything is written: results of a task fsxlt did
not export, a missing per-sample file, samples of other documents than the test file's
are each one line, nothing written.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fsxlt.errors import FsxltError
from fsxlt.fileio import sha256_file, sha256_text

TASK_NAME = re.compile(r"^fsxlt_(?P<task>[a-z0-9-]+)_(?P<lang>[a-z]{2,3})_k(?P<k>\d+)"
                       r"_b(?P<index>\d+)$")
WRITER = "fsxlt import lm-eval"


@dataclass
class Imported:
    """One bucket's lm-eval task, read and checked: the record to write and where, and the
    test examples with their predicted labels (the predictions file beside it)."""

    path: Path
    record: dict[str, Any]
    test: list[Any]
    predicted: list[str]
    state: str = ""


def arm_of_model(model_name: str) -> str:
    """``lm-eval-<model>``: the model's last path part, in the characters of an arm."""
    tail = Path(model_name.rstrip("/")).name or model_name
    return "lm-eval-" + re.sub(r"[^\w.-]+", "-", tail).strip("-")


def results_files(results: Path) -> list[Path]:
    """Every ``results_*.json`` below ``results`` (lm-eval's ``--output_path``)."""
    if not results.exists():
        raise FsxltError(f"{results}: no such file or directory")
    found = [results] if results.is_file() else sorted(results.rglob("results_*.json"))
    if not found:
        raise FsxltError(f"{results}: no lm-eval results (results_*.json) in it")
    return found


def read_lm_eval(results: str | Path, runs: str | Path, buckets: str | Path,
                 ) -> list[Imported]:
    """Every exported bucket's task of the lm-eval results ``results`` as a record, each
    checked (module docstring); nothing is written."""
    out = []
    for path in results_files(Path(results)):
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            configs = data["configs"]
        except (OSError, ValueError, KeyError, TypeError) as err:
            raise FsxltError(f"{path}: not lm-eval results ({type(err).__name__})") from None
        for name, config in sorted(configs.items()):
            if name in (data.get("groups") or {}):
                continue
            out.append(_one_task(path, data, name, config, Path(runs), Path(buckets)))
    return out


def _one_task(path: Path, data: dict[str, Any], name: str, config: dict[str, Any],
              runs: Path, buckets: Path) -> Imported:
    from fsxlt.data import read_examples
    from fsxlt.metrics.scores import compute_scores
    from fsxlt.study.runs import RUN_FORMAT, finish_record, record_path
    from fsxlt.tasks import get_task
    from fsxlt.training.loop import examples_digest

    match = TASK_NAME.match(name)
    meta = (config.get("metadata") or {}).get("bucket") if isinstance(config, dict) else None
    if match is None or not isinstance(meta, dict):
        raise FsxltError(f"{path}: results of task {name}, which fsxlt buckets export did "
                         "not write (no fsxlt_<task>_<lang>_k<K>_bNN with a bucket)")
    spec, language, k = get_task(match["task"]), match["lang"], int(match["k"])
    bucket = _bucket(buckets, spec.name, language, k, int(match["index"]), meta, name)
    test_path = Path(str(meta.get("test")))
    test = read_examples(test_path, spec, language=language, split="test")
    samples = _samples(path, name)
    by_id = {str(s["doc"]["id"]): s for s in samples}
    if set(by_id) != {ex.id for ex in test}:
        raise FsxltError(f"{path}: the samples of {name} are not the documents of its test "
                         f"file {test_path} ({len(by_id)} against {len(test)})")
    predicted = [_argmax(by_id[ex.id], spec.labels, name) for ex in test]
    scores = compute_scores(spec, [ex.label for ex in test], predicted)
    model = str(data.get("model_name") or (data.get("config") or {}).get("model") or "")
    revision = str((data.get("config") or {}).get("model_revision") or "")
    arm = arm_of_model(model)
    identity = {"task": spec.name, "language": language, "k": k, "index": bucket.index,
                "bucket": bucket.sha256, "model": f"{model}@{revision}",
                "lm_eval": str(data.get("lm_eval_version") or ""),
                "task_config": sha256_text(json.dumps(config, sort_keys=True)),
                "test": sha256_file(test_path)}
    record = {
        "format": RUN_FORMAT, "task": spec.name, "language": language, "k": k,
        "bucket": {"id": bucket.id, "index": bucket.index, "k": bucket.k,
                   "sha256": bucket.sha256, "n_examples": len(bucket.examples),
                   "sampler": bucket.meta.get("sampler"),
                   **({"set_size": bucket.set_size} if bucket.set_size else {})},
        "method": arm, "metric": spec.metric,
        "lm_eval": {"task": name, "results": data["results"].get(name), "config": config,
                    "model": model, "model_revision": revision,
                    "model_args": (data.get("config") or {}).get("model_args"),
                    "version": data.get("lm_eval_version"), "file": str(path)},
        "model": {"encoder": model, "start": {"revision": revision}, "source_training": False},
        "data": {"test": {"file": str(test_path), "n": len(test),
                          "sha256": examples_digest(test)}},
        "test": scores, "test_score": scores["score"], "dev_score": None,
    }
    finish_record(record, identity=identity, arm=arm, writer=WRITER)
    stem = f"{bucket.index:02d}"
    return Imported(record_path(runs, spec.name, language, k, arm, stem), record, test,
                    predicted)


def _bucket(buckets: Path, task: str, language: str, k: int, index: int,
            meta: dict[str, Any], name: str) -> Any:
    """The store's bucket a task ran on, found by index and hash, or one line."""
    from fsxlt.sampling.store import MANIFEST, bucket_dir, read_set

    directory = bucket_dir(buckets, task, language, k)
    if not (directory / MANIFEST).is_file():
        raise FsxltError(f"{directory}: no bucket set for {name} in the store")
    _manifest, found, _ = read_set(directory, verify=True)
    match = next((b for b in found if b.index == index and b.sha256 == meta.get("sha256")),
                 None)
    if match is None:
        raise FsxltError(f"{name}: its bucket hash {str(meta.get('sha256'))[:12]}... matches "
                         f"no bucket of {directory}")
    return match


def _samples(results: Path, name: str) -> list[dict[str, Any]]:
    """The per-sample log of ``name`` beside ``results`` (``--log_samples``), or one line."""
    stamp = results.stem.removeprefix("results_")
    path = results.parent / f"samples_{name}_{stamp}.jsonl"
    if not path.is_file():
        raise FsxltError(f"{path}: the per-sample file of {name} is missing (run lm_eval "
                         "with --log_samples)")
    try:
        return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()
                if line.strip()]
    except ValueError as err:
        raise FsxltError(f"{path}: not lm-eval samples ({err})") from None


def _argmax(sample: dict[str, Any], labels: Any, name: str) -> str:
    """The label of the choice lm-eval gave the highest log-likelihood (the first on a tie,
    as its ``acc`` takes it)."""
    try:
        scores = [float(resp[0]) for resp in sample["filtered_resps"]]
    except (KeyError, TypeError, ValueError, IndexError):
        raise FsxltError(f"{name}: a sample without per-choice log-likelihoods") from None
    if len(scores) != len(labels):
        raise FsxltError(f"{name}: {len(scores)} choices, the task has {len(labels)} labels")
    return list(labels)[max(range(len(scores)), key=scores.__getitem__)]


def import_lm_eval(results: str | Path, runs: str | Path, buckets: str | Path, *,
                   replace: bool = False) -> list[Imported]:
    """Read (:func:`read_lm_eval`), then write each record by the runs directory's rules,
    with its predictions beside it; ``state`` says what happened to each (``new``,
    ``already done``, ``replaced``)."""
    from fsxlt.fileio import atomic_write_json
    from fsxlt.study.directories import RUNS, check_claim, claim, writer_lock
    from fsxlt.study.runs import identity_hash, predictions_path, record_state, refusal

    imported = read_lm_eval(results, runs, buckets)
    check_claim(runs, RUNS, "--runs")
    for one in imported:
        hash_ = identity_hash(one.record["run"]["identity"])
        one.state = record_state(one.path, hash_)
        if one.state in ("different", "foreign") and not replace:
            raise FsxltError(refusal(one.path, None, one.record["run"]["identity"]) if
                             one.state == "foreign" else
                             f"{one.path}: a finished record of other settings; nothing was "
                             "written (--replace replaces it)")
    claim(runs, RUNS, "--runs")
    with writer_lock(runs, RUNS):
        for one in imported:
            if one.state == "done":
                one.state = "already done"
                continue
            _write(one, atomic_write_json, predictions_path)
            one.state = "replaced" if one.state in ("different", "foreign") else "new"
    return imported


def _write(one: Imported, write_json: Any, predictions_path: Any) -> None:
    from fsxlt.study.predictions import write_predictions
    from fsxlt.tasks import get_task

    record = one.record
    write_predictions(predictions_path(one.path), one.test, one.predicted,
                      task=get_task(record["task"]), language=record["language"], split="test",
                      model={"kind": "lm-eval", "record": one.path.name,
                             "method": record["method"], "k": record["k"],
                             "bucket": record["bucket"]["index"],
                             "model": record["lm_eval"]["model"]},
                      data_sha256=record["data"]["test"]["sha256"])
    write_json(one.path, record)
