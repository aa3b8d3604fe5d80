"""A study's results as Every Eval Ever records (schema 0.3.0): ``fsxlt runs export --format eee``.

Every Eval Ever (EEE) is the evaluation field's shared results record. Its unit is one
evaluation of one model, whose spread is over test samples; fsxlt's unit is a cell (task,
language, K, arm) whose spread is over shot buckets. The export writes, for every cell
of a runs directory's finished records (records imported from another study and error
records left out), in the datastore's layout::

    OUT/data/<task>/<developer>/<model>/<uuid>.json           the aggregate record
    OUT/data/<task>/<developer>/<model>/<uuid>_samples.jsonl  one row per bucket x test example

The aggregate's first result is the cell: its score is the mean test score over the
cell's buckets, its ``uncertainty`` the spread over buckets, each field's method saying
so ("over N shot buckets": standard deviation, standard error, the report's percentile
bootstrap interval, ``num_samples`` = N buckets), its details the bucket set's hash
(``fsxlt_buckets_sha256``, the sha256 of the sorted bucket hashes) and each bucket's hash.
One result per bucket follows (named as ``fsxlt buckets export --format lm-eval`` names
the bucket's lm-eval task, ``fsxlt_<task>_<lang>_k<K>_b<NN>``): its test score, its
bucket's index and hash, and the fsxlt record it comes from (``fsxlt_record``, its sha256
beside it), which is what ``fsxlt runs import-eee`` (:mod:`fsxlt.report.eee_import`)
brings back. A samples row belongs to its bucket's result (``evaluation_result_id``),
the bucket in its metadata; it is written where every record of the cell saved its
predictions. The model is the cell's start, identified by content; fsxlt is the
evaluation library. docs/sharing.md says what the schema cannot express.

The uuid of a cell's files is drawn from the cell's own facts (arm, task, language, K,
the bucket set's hash), so exporting again names the same files.
"""

from __future__ import annotations

import hashlib
import json
import math
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from fsxlt.errors import FsxltError
from fsxlt.fileio import sha256_text, staged_dir
from fsxlt.report.eee_samples import SCHEMA_VERSION, samples_rows
from fsxlt.study.runs import ZERO_SHOT_FORMAT

LIBRARY = "fsxlt"
# EEE's canonical metric ids (the eval-card registry, revision 8b83e9c, as the
# every-eval-ever 0.3.0 converters carry it); fsxlt's other metrics are fsxlt's own
# (``fsxlt.<name>``, marked unregistered as the converters mark theirs)
REGISTRY_REVISION = "8b83e9c"
CANONICAL = {"accuracy": "accuracy"}
KINDS = {"accuracy": "accuracy", "token_accuracy": "accuracy", "seqeval_f1": "f1",
         "seqeval_precision": "precision", "mlqa_f1": "f1", "squad_f1": "f1",
         "bleu": "text_overlap"}
INTERVAL = ("percentile bootstrap of the mean over {n} shot buckets ({b} resamples seeded "
            "by the cell, as fsxlt report computes it)")


def cell_name(task: str, language: str, k: int) -> str:
    return f"fsxlt_{task}_{language}_k{k}"


def bucket_name(task: str, language: str, k: int, index: int) -> str:
    """A bucket's evaluation name: the lm-eval task ``fsxlt buckets export --format
    lm-eval`` writes for it (:data:`fsxlt.icl.lm_eval_results.TASK_NAME`)."""
    return f"{cell_name(task, language, k)}_b{index:02d}"


def metric_config(metric: str, description: str) -> dict[str, Any]:
    """EEE's ``metric_config`` of an fsxlt metric: every fsxlt score is a fraction in
    [0, 1], higher better (fsxlt.metrics.scores)."""
    canonical = CANONICAL.get(metric)
    details = {"metric_id_registry_revision": REGISTRY_REVISION}
    if canonical is None:
        details["metric_id_status"] = "unregistered"
    config = {"evaluation_description": description, "metric_id": canonical or
              f"{LIBRARY}.{metric}", "metric_name": metric, "metric_unit": "proportion",
              "lower_is_better": False, "score_type": "continuous", "min_score": 0.0,
              "max_score": 1.0, "additional_details": details}
    if metric in KINDS:
        config["metric_kind"] = KINDS[metric]
    return config


# --------------------------------------------------------------------------- the model

def model_info(record: dict[str, Any]) -> dict[str, Any]:
    """The cell's model in EEE's terms: the model it started from (a hub id as the hub
    names it; a local folder as ``local/<folder>``), the start by content in the details."""
    from fsxlt.identity import hub_id_like

    model = record.get("model") if isinstance(record.get("model"), dict) else {}
    if record.get("format") == ZERO_SHOT_FORMAT and isinstance(record.get("start"), dict):
        model = {"encoder": record["start"].get("encoder"), "start": record["start"]}
    start = model.get("start") if isinstance(model.get("start"), dict) else {}
    name = str(start.get("name") or model.get("encoder") or "unknown")
    hub = hub_id_like(name) and not Path(name).is_absolute() and not name.startswith(".")
    if hub and "/" in name:
        model_id, developer = name, name.split("/")[0]
    elif hub:  # the hub's legacy flat ids (bert-base-multilingual-cased, xlm-roberta-base)
        model_id, developer = name, "huggingface"
    else:
        folder = Path(name.rstrip("/")).name or "model"
        model_id, developer = f"local/{_component(folder)}", "local"
    identity = start.get("id") or start.get("fingerprint") or model.get("identity") or ""
    details = {"deployment_type": "self_deployed",
               "model_availability": "open_weights" if hub else "unknown",
               "fsxlt_model": name, "fsxlt_start": str(identity)}
    for key in ("kind", "path", "gguf_file"):
        if start.get(key):
            details[f"fsxlt_start_{key}"] = str(start[key])
    if record.get("source_languages"):
        details["fsxlt_source_languages"] = ",".join(map(str, record["source_languages"]))
    versions = record.get("versions") if isinstance(record.get("versions"), dict) else {}
    engine = {"name": "transformers"}
    if versions.get("transformers"):
        engine["version"] = str(versions["transformers"])
    return {"name": name if hub else model_id, "id": model_id, "developer": developer,
            "inference_engine": engine, "additional_details": details}


def _component(text: str) -> str:
    cleaned = "".join(c if c.isalnum() or c in "._-" else "-" for c in text).strip(".- ")
    return cleaned or "model"


def model_dirs(info: dict[str, Any]) -> tuple[str, str]:
    """The datastore's developer and model folders for ``info`` (its id's prefix and the
    rest, slashes flattened as the datastore flattens them)."""
    developer, _, rest = info["id"].partition("/")
    return _component(developer), _component(rest.replace("/", "_"))


# --------------------------------------------------------------------------- one cell

@dataclass
class Cell:
    """One (task, language, K, arm) of the export: its rows (fsxlt.report.hf_results'
    record rows, in bucket order) and the records' parsed facts."""

    key: tuple[str, str, int, str]
    rows: list[dict[str, Any]]
    records: list[dict[str, Any]] = field(default_factory=list)

    @property
    def name(self) -> str:
        task, language, k, _arm = self.key
        return cell_name(task, language, k)

    def bucket_names(self) -> list[str]:
        """Each bucket's result name (:func:`bucket_name`; a bucket without an index by
        its file's stem)."""
        task, language, k, _arm = self.key
        return [bucket_name(task, language, k, row["bucket_index"])
                if row["bucket_index"] is not None else f"{self.name}_{row['bucket_name']}"
                for row in self.rows]


def cells_of(rows: list[dict[str, Any]], records: dict[str, dict[str, Any]]) -> list[Cell]:
    """The rows grouped by cell, each cell's rows in bucket order with their ``records``
    (parsed, by path); a cell whose records ran from two starts, on two test sets or under
    two metrics is one line."""
    cells: dict[tuple, Cell] = {}
    for row in rows:  # a K=0 record (its start's zero-shot score) is a cell of its own
        key = (row["task"], row["language"], row["k"], row["arm"])
        cells.setdefault(key, Cell(key, [])).rows.append(row)
    found = []
    for key in sorted(cells):
        cell = cells[key]
        cell.rows.sort(key=lambda row: (row["bucket_index"] is None, row["bucket_index"],
                                        row["bucket_sha256"]))
        cell.records = [records[row["path"]] for row in cell.rows]
        for what, column in (("starts", "start"), ("test sets", "test_sha256"),
                             ("metrics", "metric")):
            values = sorted({row[column] for row in cell.rows})
            if len(values) > 1:
                raise FsxltError(f"{'/'.join(map(str, key))}: its records ran from "
                                 f"{len(values)} {what} ({', '.join(values[:2])}); a cell "
                                 "is one model's, on one test set: nothing was written")
        found.append(cell)
    return found


def _cell_uuid(cell: Cell) -> str:
    digest = sha256_text(json.dumps([*cell.key, cell.rows[0]["cell_buckets_sha256"]]))
    return str(uuid.UUID(bytes=bytes.fromhex(digest[:32]), version=4))


def _source_data(cell: Cell, buckets_dataset: str | None) -> dict[str, Any]:
    """Where the cell's shots and test set came from: the bucket dataset on the hub where
    one is named, else the local files, each with its sha256."""
    task, language, k, _arm = cell.key
    data = cell.records[0].get("data") if isinstance(cell.records[0].get("data"), dict) \
        else {}
    test = data.get("test") if isinstance(data.get("test"), dict) else {}
    details = {"fsxlt_test_source": str(test.get("source") or test.get("file") or ""),
               "fsxlt_test_sha256": cell.rows[0]["test_sha256"],
               "fsxlt_test_examples": str(test.get("n") or "")}
    details = {key: value for key, value in details.items() if value}
    if k == 0:  # a zero-shot score: no shots, only the test set
        return {"dataset_name": f"{task} {language}", "source_type": "other",
                **({"additional_details": details} if details else {})}
    details["fsxlt_bucket_files"] = json.dumps(
        {row["bucket_name"]: [str((rec.get("bucket") or {}).get("path") or ""),
                              row["bucket_sha256"]]
         for row, rec in zip(cell.rows, cell.records, strict=True)}, sort_keys=True)
    name = f"{task} {language} K={k}"
    if buckets_dataset:
        return {"dataset_name": name, "source_type": "hf_dataset", "hf_repo": buckets_dataset,
                "additional_details": details}
    return {"dataset_name": name, "source_type": "other", "additional_details": details}


def _uncertainty(scores: np.ndarray, cell: Cell) -> dict[str, Any]:
    """The spread over the cell's buckets in EEE's uncertainty fields, each method saying
    it is over shot buckets (not the schema's default, test samples)."""
    from fsxlt.report.tables import BOOTSTRAP, mean_interval

    n = len(scores)
    found: dict[str, Any] = {"num_samples": n}
    if n < 2:
        return found
    sd = float(np.std(scores, ddof=1))
    found["standard_deviation"] = sd
    found["standard_error"] = {"value": sd / math.sqrt(n), "method": (
        f"analytic over {n} shot buckets (standard deviation of the bucket scores / "
        f"sqrt({n}))")}
    task, language, k, arm = cell.key
    low, high, problem = mean_interval(100.0 * scores, f"{task}/{arm}/{language}/{k}")
    if not problem and not math.isnan(low):  # the report's interval (in points), as a fraction
        found["confidence_interval"] = {"lower": low / 100.0, "upper": high / 100.0,
                                        "confidence_level": 0.95,
                                        "method": INTERVAL.format(n=n, b=BOOTSTRAP)}
        found["num_bootstrap_samples"] = BOOTSTRAP
    return found


def aggregate(cell: Cell, info: dict[str, Any], *, retrieved: str, organization: str,
              relationship: str, buckets_dataset: str | None,
              samples: tuple[str, str, int] | None) -> dict[str, Any]:
    """The cell's aggregate record (module docstring); ``samples``: its samples file's
    path, sha256 and row count, where it has one."""
    task, language, k, arm = cell.key
    source = _source_data(cell, buckets_dataset)
    if k == 0:
        return _record(cell, info, [zero_shot_result(cell, source)], retrieved=retrieved,
                       organization=organization, relationship=relationship, samples=None)
    rows, metric = cell.rows, cell.rows[0]["metric"]
    scores = np.array([row["test_score"] for row in rows], dtype=float)
    hashes = [row["bucket_sha256"] for row in rows]
    shots = sorted({str((rec.get("bucket") or {}).get("n_examples", "")) for rec in
                    cell.records})
    cell_details = {"fsxlt_unit": "shot bucket", "fsxlt_task": task,
                    "fsxlt_language": language, "fsxlt_k": str(k), "fsxlt_arm": arm,
                    "fsxlt_method": rows[0]["method"],
                    "fsxlt_buckets": str(len(rows)),
                    "fsxlt_buckets_sha256": rows[0]["cell_buckets_sha256"],
                    "fsxlt_bucket_sha256s": json.dumps(hashes),
                    "fsxlt_shots_per_bucket": ",".join(shots),
                    "fsxlt_min_bucket_score": repr(float(scores.min())),
                    "fsxlt_max_bucket_score": repr(float(scores.max()))}
    if rows[0]["regime"]:
        cell_details["fsxlt_regime"] = rows[0]["regime"]
    results = [{"evaluation_result_id": f"{cell.name}/{metric}", "evaluation_name": cell.name,
                "source_data": source,
                "metric_config": metric_config(metric, (
                    f"{task} in {language}, K={k}, arm {arm}: the mean test {metric} over "
                    f"{len(rows)} shot buckets")),
                "score_details": {"score": float(scores.mean()), "details": cell_details,
                                  "uncertainty": _uncertainty(scores, cell)}}]
    for row, name in zip(rows, cell.bucket_names(), strict=True):
        details = {"fsxlt_bucket_index": str(row["bucket_index"]),
                   "fsxlt_bucket_name": row["bucket_name"],
                   "fsxlt_bucket_sha256": row["bucket_sha256"],
                   "fsxlt_buckets_sha256": row["cell_buckets_sha256"],
                   "fsxlt_record_path": row["path"], "fsxlt_run_hash": row["run_hash"],
                   "fsxlt_record_sha256": row["record_sha256"], "fsxlt_record": row["record"]}
        for key in ("dev_score", "lr", "best_epoch"):
            if row[key] is not None:
                details[f"fsxlt_{key}"] = repr(row[key])
        results.append({
            "evaluation_result_id": f"{name}/{metric}", "evaluation_name": name,
            "source_data": source,
            "metric_config": metric_config(metric, (
                f"{task} in {language}, K={k}, arm {arm}: test {metric} after adapting on "
                f"shot bucket {row['bucket_name']}")),
            "score_details": {"score": float(row["test_score"]), "details": details}})
    return _record(cell, info, results, retrieved=retrieved, organization=organization,
                   relationship=relationship, samples=samples)


def zero_shot_result(cell: Cell, source: dict[str, Any]) -> dict[str, Any]:
    """A K=0 record's one result: its start's test score with no shots, the record beside
    it (what the report's gains are measured from)."""
    task, language, _k, _arm = cell.key
    (row,) = cell.rows
    details = {"fsxlt_unit": "zero-shot", "fsxlt_task": task, "fsxlt_language": language,
               "fsxlt_k": "0", "fsxlt_record_path": row["path"],
               "fsxlt_record_sha256": row["record_sha256"], "fsxlt_record": row["record"]}
    test = cell.records[0].get("test") if isinstance(cell.records[0].get("test"), dict) \
        else {}
    result: dict[str, Any] = {
        "evaluation_result_id": f"{cell.name}/{row['metric']}", "evaluation_name": cell.name,
        "source_data": source,
        "metric_config": metric_config(row["metric"], (
            f"{task} in {language}, zero-shot: the start's test {row['metric']} before any "
            "shots")),
        "score_details": {"score": float(row["test_score"]), "details": details}}
    if isinstance(test.get("n"), int):
        result["score_details"]["uncertainty"] = {"num_samples": test["n"]}
    return result


def _record(cell: Cell, info: dict[str, Any], results: list[dict[str, Any]], *,
            retrieved: str, organization: str, relationship: str,
            samples: tuple[str, str, int] | None) -> dict[str, Any]:
    arm = cell.key[3]
    rows = cell.rows
    versions = {row["fsxlt_version"] for row in rows}
    code = sorted({str((rec.get("versions") or {}).get("fsxlt_code", "")) for rec in
                   cell.records} - {""})
    library = {"name": LIBRARY, "version": ", ".join(sorted(versions))}
    if code:
        library["additional_details"] = {"fsxlt_code": ", ".join(code)}
    record = {"schema_version": SCHEMA_VERSION,
              "evaluation_id": f"{cell.name}/{arm or 'zero-shot'}/{info['id']}/{retrieved}",
              "retrieved_timestamp": retrieved,
              "source_metadata": {"source_name": "fsxlt", "source_type": "evaluation_run",
                                  "source_organization_name": organization,
                                  "evaluator_relationship": relationship},
              "eval_library": library, "model_info": info, "evaluation_results": results}
    if samples is not None:
        path, checksum, total = samples
        record["detailed_evaluation_results"] = {
            "format": "jsonl", "file_path": path, "hash_algorithm": "sha256",
            "checksum": checksum, "total_rows": total}
    return record


# --------------------------------------------------------------------------- export

@dataclass
class ExportedEee:
    files: list[str]                          # aggregate records written, under OUT
    cells: int
    samples: int                              # samples rows written
    without_samples: list[str] = field(default_factory=list)  # cells with no predictions
    left_out: list[str] = field(default_factory=list)
    unreadable: list[str] = field(default_factory=list)


RELATIONSHIPS = ("first_party", "third_party", "collaborative", "other")


def export_eee(runs_dir: str | Path, out: str | Path, *, organization: str = "unknown",
               relationship: str = "third_party", buckets_dataset: str | None = None,
               samples: bool = True) -> ExportedEee:
    """Write RUNS_DIR's finished records as EEE records under ``out`` (module docstring),
    whole or not at all. ``organization`` and ``relationship``: the record's source (who
    ran it, and how they stand to the model); ``buckets_dataset``: the hub dataset the
    buckets were published as; ``samples=False``: aggregate records only."""
    from fsxlt.report.hf_results import check_export, finished_rows

    root, out = Path(runs_dir), Path(out)
    if relationship not in RELATIONSHIPS:
        raise FsxltError(f"--relationship must be one of {', '.join(RELATIONSHIPS)}, got "
                         f"{relationship!r}")
    check_export(root, out)
    found = finished_rows(root)
    cells = cells_of(found.rows, found.records)
    retrieved = repr(time.time())
    files: dict[str, bytes] = {}
    read: dict[tuple, dict[str, str]] = {}  # test examples' texts, read once per test set
    done = ExportedEee([], len(cells), 0, left_out=found.left_out,
                       unreadable=found.unreadable)
    for cell in cells:
        info = model_info(cell.records[0])
        developer, model = model_dirs(info)
        folder = f"data/{_component(cell.key[0])}/{developer}/{model}"
        name = _cell_uuid(cell)
        evaluation_id = f"{cell.name}/{cell.key[3] or 'zero-shot'}/{info['id']}/{retrieved}"
        texts = [found.predictions.get(row["path"], "") for row in cell.rows]
        sample = None
        wanted = samples and cell.key[2] != 0  # a zero-shot score: its source run's rows
        if wanted and all(texts):
            lines = samples_rows(cell, texts, cell.bucket_names(), evaluation_id, info["id"],
                                 read)
            body = "".join(json.dumps(line, ensure_ascii=False, allow_nan=False) + "\n"
                           for line in lines).encode("utf-8")
            files[f"{folder}/{name}_samples.jsonl"] = body
            sample = (f"{folder}/{name}_samples.jsonl", hashlib.sha256(body).hexdigest(),
                      len(lines))
            done.samples += len(lines)
        elif wanted:
            done.without_samples.append("/".join(map(str, cell.key)))
        record = aggregate(cell, info, retrieved=retrieved, organization=organization,
                           relationship=relationship, buckets_dataset=buckets_dataset,
                           samples=sample)
        text = json.dumps(record, ensure_ascii=False, allow_nan=False, indent=1) + "\n"
        files[f"{folder}/{name}.json"] = text.encode("utf-8")
        done.files.append(f"{folder}/{name}.json")
    with staged_dir(out) as staging:
        for rel, data in files.items():
            (staging / rel).parent.mkdir(parents=True, exist_ok=True)
            (staging / rel).write_bytes(data)
    return done
