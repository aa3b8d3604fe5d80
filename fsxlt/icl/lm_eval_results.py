"""lm-evaluation-harness results of exported buckets, as fsxlt run records.

``lm_eval … --include_path OUT --tasks fsxlt_<task>_<lang>_k<K> --log_samples
--output_path RES`` (tasks :mod:`fsxlt.icl.lm_eval_tasks` wrote) leaves
``RES/<model>/results_<time>.json`` and one ``samples_<task>_<time>.jsonl`` per task.
:func:`import_lm_eval` turns each bucket's task into the record of a run of arm
``lm-eval-<model>`` (or ``--arm``) at ``RUNS/<task>/<lang>/k<K>/<arm>/<NN>.json``, beside
the encoder and ICL arms of the same buckets, so ``fsxlt report`` shows it and ``report
--compare`` pairs it bucket by bucket.

A results folder is input anyone could have written, so everything in it that the record
keeps is checked against content, never taken on its word:

- the bucket is found in the bucket store by its index and hash (the task's metadata),
  and a hash that matches no bucket there is refused;
- each sample is matched to its test example by the example's id, and its document (the
  gold label) and every option's prompt (lm-eval's ``arguments``: context and
  continuation) must be the ones ``fsxlt icl --preset lm-eval`` renders from the bucket's
  demonstrations, in fsxlt icl's order, and that test example: an edited test file, a
  reordered one, another bucket's samples are refused;
- the predictions are the arg-max of lm-eval's per-sample log-likelihoods
  (``filtered_resps``), scored with the task's metric; each sample's stored ``acc`` (and
  ``acc_norm`` where it stores one) must be what its own log-likelihoods give, or the
  import is refused naming the sample; that score, the mean per-sample ``acc`` and
  lm-eval's reported ``acc`` must agree, or the import is refused naming both;
- the run's identity is the model by content (the sha256 of its files where the folder
  lm-eval ran is here, or ``--model`` names its copy; a hub id at the commit lm-eval
  recorded), the task config's hash, the bucket's hash, the test file's hash and
  lm-eval's version; the default arm carries the model's name and, for a local folder, the
  start of its hash, so two models in folders of one name are two arms; the runs
  directory's write-once rule applies (a record of the same identity is already done,
  another is refused unless ``replace``).

Everything is read and checked before anything is written; each refusal is one line.
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


@dataclass(frozen=True)
class LmEvalModel:
    """The model of an lm-eval run: its identity (by content) and the arm it defaults to."""

    identity: str
    arm: str
    name: str
    revision: str


@dataclass
class Imported:
    """One bucket's lm-eval task, read and checked: the record to write and where, and the
    test examples with their predicted labels (the predictions file beside it)."""

    path: Path
    record: dict[str, Any]
    test: list[Any]
    predicted: list[str]
    state: str = ""


def _arm_part(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", text).strip("-.") or "model"


def model_args(data: dict[str, Any]) -> dict[str, str]:
    """lm-eval's ``model_args`` of a results file as a dict (it records a dict, or the
    ``key=value,…`` text it was given)."""
    args = (data.get("config") or {}).get("model_args")
    if isinstance(args, dict):
        return {str(k): str(v) for k, v in args.items()}
    if isinstance(args, str):
        pairs = (item.partition("=") for item in args.split(",") if "=" in item)
        return {key.strip(): value.strip() for key, _sep, value in pairs}
    return {}


def lm_eval_model(path: Path, data: dict[str, Any], local: Path | None = None,
                  ) -> LmEvalModel:
    """The model a results file ran, by content: the files of its folder (``local``, else
    the ``pretrained`` path lm-eval was given where it exists here), or a hub id at the
    commit lm-eval recorded; one line when it is neither."""
    from fsxlt.identity import fingerprint, hub_id_like

    config = data.get("config") or {}
    name = model_args(data).get("pretrained") or str(data.get("model_name") or "")
    revision = str(config.get("model_sha") or config.get("model_revision") or "")
    if local is None and name and Path(name).exists():
        local = Path(name)
    if local is not None:
        if not local.exists():
            raise FsxltError(f"{local}: no such model folder (--model)")
        identity = fingerprint(local)
        tail = Path(name.rstrip("/")).name if name else local.name
        return LmEvalModel(identity, f"lm-eval-{_arm_part(tail)}-{identity[7:15]}", name,
                           revision)
    if name and hub_id_like(name):
        return LmEvalModel(f"hub:{name}@{revision}", f"lm-eval-{_arm_part(name)}", name,
                           revision)
    raise FsxltError(f"{path}: lm-eval ran the model {name or '(unnamed)'}, which is not a "
                     "folder here nor a hub id; give its folder with --model DIR (its files "
                     "identify the run)")


def results_files(results: Path) -> list[Path]:
    """Every ``results_*.json`` below ``results`` (lm-eval's ``--output_path``)."""
    if not results.exists():
        raise FsxltError(f"{results}: no such file or directory")
    found = [results] if results.is_file() else sorted(results.rglob("results_*.json"))
    if not found:
        raise FsxltError(f"{results}: no lm-eval results (results_*.json) in it")
    return found


def read_lm_eval(results: str | Path, runs: str | Path, buckets: str | Path, *,
                 arm: str | None = None, model: str | Path | None = None) -> list[Imported]:
    """Every exported bucket's task of the lm-eval results ``results`` as a record, each
    checked (module docstring); nothing is written. ``arm`` names the arm (default from
    the model), ``model`` is the local copy of the model lm-eval ran."""
    from fsxlt.icl.planned import check_arm_name
    from fsxlt.sampling.store import plain_name

    check_arm_name(arm, "lm-eval", "@~+/\\ ", "an lm-eval")
    if arm is not None and not plain_name(arm):
        raise FsxltError(f"--arm {arm!r}: an arm is a plain name (letters, digits, _ . -)")
    out = []
    for path in results_files(Path(results)):
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            configs = data["configs"]
            reported = data["results"]
            if not isinstance(configs, dict) or not isinstance(reported, dict):
                raise TypeError("configs")
        except (OSError, ValueError, KeyError, TypeError) as err:
            raise FsxltError(f"{path}: not lm-eval results ({type(err).__name__})") from None
        found = lm_eval_model(path, data, None if model is None else Path(model))
        for name, config in sorted(configs.items()):
            if name in (data.get("groups") or {}):
                continue
            out.append(_one_task(path, data, name, config, Path(runs), Path(buckets),
                                 found, arm or found.arm))
    return out


def _one_task(path: Path, data: dict[str, Any], name: str, config: dict[str, Any],
              runs: Path, buckets: Path, model: LmEvalModel, arm: str) -> Imported:
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
    by_id = _by_id(samples, test, path, name, test_path)
    chars = _check_prompts(by_id, test, bucket, spec, language, _seed(meta), path, name,
                           test_path)
    predicted = [_argmax(by_id[ex.id], spec.labels, name) for ex in test]
    _check_each_sample(by_id, test, chars, spec.labels, path, name)
    scores = compute_scores(spec, [ex.label for ex in test], predicted)
    _check_scores(data, name, samples, scores["score"], path)
    identity = {"task": spec.name, "language": language, "k": k, "index": bucket.index,
                "bucket": bucket.sha256, "model": model.identity,
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
                    "model": model.name, "model_revision": model.revision,
                    "model_args": (data.get("config") or {}).get("model_args"),
                    "version": data.get("lm_eval_version"), "file": str(path)},
        "model": {"encoder": model.name, "identity": model.identity,
                  "start": {"revision": model.revision}, "source_training": False},
        "data": {"test": {"file": str(test_path), "n": len(test),
                          "sha256": examples_digest(test)}},
        "test": scores, "test_score": scores["score"], "dev_score": None,
    }
    finish_record(record, identity=identity, arm=arm, writer=WRITER)
    stem = f"{bucket.index:02d}"
    return Imported(record_path(runs, spec.name, language, k, arm, stem), record, test,
                    predicted)


def _seed(meta: dict[str, Any]) -> int:
    """The demonstration order's seed the export used (0 where it did not say: 0.6.0)."""
    seed = meta.get("seed", 0)
    return seed if isinstance(seed, int) and not isinstance(seed, bool) else 0


def _by_id(samples: list[dict[str, Any]], test: list[Any], path: Path, name: str,
           test_path: Path) -> dict[str, dict[str, Any]]:
    """The samples by their document's id: exactly one per test example, or one line."""
    by_id: dict[str, dict[str, Any]] = {}
    for sample in samples:
        doc = sample.get("doc") if isinstance(sample, dict) else None
        if not isinstance(doc, dict) or "id" not in doc or str(doc["id"]) in by_id:
            raise FsxltError(f"{path}: a sample of {name} without a document id of its own")
        by_id[str(doc["id"])] = sample
    if set(by_id) != {ex.id for ex in test}:
        raise FsxltError(f"{path}: the samples of {name} are not the documents of its test "
                         f"file {test_path} ({len(by_id)} against {len(test)})")
    return by_id


def _check_prompts(by_id: dict[str, dict[str, Any]], test: list[Any], bucket: Any,
                   spec: Any, language: str, seed: int, path: Path, name: str,
                   test_path: Path) -> list[list[int]]:
    """Each sample's gold label is its test example's, and each option's prompt is the one
    fsxlt icl --preset lm-eval renders from the bucket's demonstrations (in fsxlt icl's
    order) and that example; a sample of other demonstrations or of another example is
    one line. Returns each example's options' lengths as ``acc_norm`` divides by them."""
    from fsxlt.icl.presets import render_for
    from fsxlt.icl.run import IclSettings, demonstration_order
    from fsxlt.tasks.prompts import PromptSettings

    demos = demonstration_order(list(bucket.examples),
                                IclSettings(model="", seed=seed, preset="lm-eval"),
                                bucket.index)
    text = render_for(spec, PromptSettings(), "lm-eval", language, demos, test)
    labels = list(spec.labels)
    for ex, options in zip(test, text.continuations, strict=True):
        sample = by_id[ex.id]
        if sample["doc"].get("label") != labels.index(ex.label):
            raise FsxltError(f"{path}: {name} ran test example {ex.id} with gold label "
                             f"{sample['doc'].get('label')!r}; {test_path} has "
                             f"{labels.index(ex.label)} ({ex.label}): the test file is not "
                             "the one lm-eval ran")
        pairs = _arguments(sample, name, path)
        if len(pairs) != len(options):
            raise FsxltError(f"{path}: {name} scored {len(pairs)} options of {ex.id}, the "
                             f"task has {len(options)}")
        if any(context.rstrip() != text.prefix for context, _rest in pairs):
            raise FsxltError(f"{path}: the prompts of {name} do not hold bucket "
                             f"{bucket.index}'s demonstrations in fsxlt icl's order (seed "
                             f"{seed}): lm-eval ran other demonstrations than this bucket's")
        if [context + rest for context, rest in pairs] != [text.prefix + o for o in options]:
            raise FsxltError(f"{path}: {name} scored test example {ex.id} with another text "
                             f"than {test_path} holds: the test file is not the one lm-eval "
                             "ran")
    return [list(lengths) for lengths in text.chars]


# the per-sample metrics lm-eval's multiple-choice tasks store that follow from a sample's own
# log-likelihoods: each is 1.0 where the option it picks is the gold one, else 0.0
# (lm-eval 0.4.13, lm_eval/api/task.py, ConfigurableTask.process_results, output_type
# multiple_choice: acc from argmax(lls), acc_norm from argmax(lls / len(choice)), lines 1494-1546)
PER_SAMPLE_METRICS = ("acc", "acc_norm")


def _check_each_sample(by_id: dict[str, dict[str, Any]], test: list[Any],
                       chars: list[list[int]], labels: Any, path: Path, name: str) -> None:
    """Every per-sample metric a sample stores (``acc``; ``acc_norm``, the arg-max of the
    log-likelihoods over each option's length in characters) is what its own
    log-likelihoods give; a disagreement is one line naming the sample."""
    labels = list(labels)
    for ex, lengths in zip(test, chars, strict=True):
        sample = by_id[ex.id]
        scores = [float(resp[0]) for resp in sample["filtered_resps"]]
        gold = labels.index(ex.label)
        picks = {"acc": max(range(len(scores)), key=scores.__getitem__),
                 "acc_norm": max(range(len(scores)),
                                 key=lambda i: scores[i] / max(lengths[i], 1))}
        for metric in PER_SAMPLE_METRICS:
            if metric not in sample:
                continue
            value = sample[metric]
            expected = 1.0 if picks[metric] == gold else 0.0
            if not (isinstance(value, (int, float)) and not isinstance(value, bool)) \
                    or float(value) != expected:
                raise FsxltError(
                    f"{path}: sample {sample.get('doc_id', ex.id)} ({ex.id}) of {name} "
                    f"stores {metric} {value!r}; its own log-likelihoods pick option "
                    f"{picks[metric]} (gold {gold}), which gives {expected}: the samples "
                    "were edited; nothing was written")


def _arguments(sample: dict[str, Any], name: str, path: Path) -> list[tuple[str, str]]:
    """A sample's requests as (context, continuation) pairs, in option order (lm-eval logs
    ``{gen_args_0: {arg_0, arg_1}, …}``, or a list of pairs)."""
    raw = sample.get("arguments")
    try:
        if isinstance(raw, dict):
            rows = [raw[f"gen_args_{i}"] for i in range(len(raw))]
            return [(str(row["arg_0"]), str(row["arg_1"])) for row in rows]
        return [(str(row[0]), str(row[1])) for row in raw]
    except (KeyError, TypeError, IndexError):
        raise FsxltError(f"{path}: a sample of {name} without its prompts (arguments)") from None


def _check_scores(data: dict[str, Any], name: str, samples: list[dict[str, Any]],
                  score: float, path: Path) -> None:
    """lm-eval's reported ``acc``, the mean of its per-sample ``acc`` and the accuracy of
    the per-sample log-likelihoods are one number, or one line naming both."""
    reported = (data["results"].get(name) or {}).get("acc,none")
    per_sample = [s.get("acc") for s in samples]
    if not isinstance(reported, (int, float)) or isinstance(reported, bool):
        raise FsxltError(f"{path}: no acc of {name} in its results")
    if not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in per_sample):
        raise FsxltError(f"{path}: a sample of {name} without its acc")
    mean = sum(per_sample) / len(per_sample) if per_sample else 0.0
    for what, value in (("its per-sample acc", mean),
                        ("its per-sample log-likelihoods", score)):
        if abs(value - float(reported)) > 1e-9:
            raise FsxltError(f"{path}: lm-eval's acc of {name} is {float(reported):.6f}, "
                             f"{what} give {value:.6f}: the results were edited; nothing "
                             "was written")


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
                   replace: bool = False, arm: str | None = None,
                   model: str | Path | None = None) -> list[Imported]:
    """Read (:func:`read_lm_eval`), then write each record by the runs directory's rules,
    with its predictions beside it, all or nothing (a failure while writing puts back
    every file as it was); ``state`` says what happened to each (``new``, ``already
    done``, ``replaced``)."""
    from fsxlt.fileio import write_all
    from fsxlt.study.directories import RUNS, check_claim, claim, undone_on_failure, writer_lock
    from fsxlt.study.runs import identity_hash, record_state, refusal

    imported = read_lm_eval(results, runs, buckets, arm=arm, model=model)
    check_claim(runs, RUNS, "--runs")
    for one in imported:
        hash_ = identity_hash(one.record["run"]["identity"])
        one.state = record_state(one.path, hash_)
        if one.state in ("different", "foreign") and not replace:
            raise FsxltError(refusal(one.path, None, one.record["run"]["identity"]) if
                             one.state == "foreign" else
                             f"{one.path}: a finished record of other settings; nothing was "
                             "written (--replace replaces it)")
    changes: dict[Path, str | None] = {}
    for one in imported:
        if one.state != "done":
            changes.update(_texts(one))
    with undone_on_failure(runs):  # all or nothing
        claim(runs, RUNS, "--runs")
        with writer_lock(runs, RUNS):
            write_all(changes)
    for one in imported:
        one.state = {"done": "already done", "different": "replaced",
                     "foreign": "replaced"}.get(one.state, "new")
    return imported


def _texts(one: Imported) -> dict[Path, str | None]:
    """The predictions file and the record of one import, as text by path."""
    from fsxlt.fileio import dumps_json
    from fsxlt.study.predictions import predictions_text
    from fsxlt.study.runs import predictions_path
    from fsxlt.tasks import get_task

    record = one.record
    predictions = predictions_text(
        one.test, one.predicted, task=get_task(record["task"]), language=record["language"],
        split="test", model={"kind": "lm-eval", "record": one.path.name,
                             "method": record["method"], "k": record["k"],
                             "bucket": record["bucket"]["index"],
                             "model": record["model"]["identity"]},
        data_sha256=record["data"]["test"]["sha256"])
    return {predictions_path(one.path): predictions, one.path: dumps_json(record)}
