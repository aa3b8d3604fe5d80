"""A study's per-bucket results as a Hugging Face dataset folder, and back.

``fsxlt runs export RUNS OUT --format hf`` writes:

- ``records/records-<sha16>.parquet`` (config ``records``, split ``records``): one row
  per finished run record (``<task>/<lang>/k<K>/<arm>/<bucket>.json``; K=0 runs of the
  causal LM included, records imported from another study left out): its coordinates,
  the bucket's and test set's hashes, the cell's buckets' hash (``cell_buckets_sha256``:
  the sha256 of the sorted bucket hashes of the cell in this study), arm, method, regime,
  start (the model's identity), the run's identity hash, the learning rate and epoch
  chosen, dev and test scores with their metric, the versions, and the record itself
  (``record``, its bytes as UTF-8, and their sha256);
- ``predictions/predictions-<sha16>.parquet`` (config ``predictions``) where predictions
  were saved: one row per line of each ``.predictions.jsonl`` (its header as line 0):
  the record it belongs to, id, gold and predicted (JSON), the options' log-likelihoods
  (ICL) and the line itself;
- ``fsxlt_results.json``: every record's and predictions file's sha256 by path;
- ``README.md``: the card (:mod:`fsxlt.report.hf_results_card`).

``fsxlt runs import-hf`` reads it back (:func:`import_results`): every row checked
against its record's own bytes and the manifest, every typed column against the record
it claims to describe, each record placed by its own facts (never by a column) under
``<prefix>.<arm>`` and listed in the runs directory's imports file
(:mod:`fsxlt.study.imports`); write-once as every record.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fsxlt.errors import FsxltError
from fsxlt.fileio import (
    dumps_json,
    loads_strict,
    read_json,
    sha256_text,
    staged_dir,
    write_all,
)
from fsxlt.sampling.manifest import plain_name
from fsxlt.study.runs import (
    ZERO_SHOT_FILE,
    ZERO_SHOT_FORMAT,
    arm_of,
    bucket_stem,
    is_complete,
    place_problem,
    predictions_path,
    record_files,
    record_path_of,
    record_problem,
    record_version,
    zero_shot_record_path,
)

RESULTS_FORMAT = "fsxlt-results/1"
MANIFEST = "fsxlt_results.json"
CARD = "README.md"
CONFIGS = ("records", "predictions")


def _features(config: str) -> Any:
    from datasets import Features, Sequence, Value

    text, number = Value("string"), Value("float64")
    if config == "predictions":
        return Features({"record": text, "line": Value("int32"), "id": text, "gold": text,
                         "predicted": text, "loglik": Sequence(number), "text": text})
    return Features({
        "path": text, "task": text, "language": text, "k": Value("int32"),
        "bucket_index": Value("int32"), "bucket_name": text, "bucket_sha256": text,
        "cell_buckets_sha256": text, "test_sha256": text, "arm": text, "method": text,
        "regime": text, "start": text, "run_hash": text, "lr": number,
        "best_epoch": Value("int32"), "dev_score": number, "test_score": number,
        "metric": text, "fsxlt_version": text, "versions": text, "record_sha256": text,
        "predictions_sha256": text, "record": text})


# --------------------------------------------------------------------------- rows

def record_row(rel: str, text: str, record: dict[str, Any],
               predictions_sha256: str) -> dict[str, Any]:
    """A record's row (module docstring) but the cell's buckets' hash, from its own facts
    (``predictions_sha256``: its predictions file's, "" when it has none)."""
    zero = _is_zero_shot(record)
    bucket = {} if zero else record["bucket"]
    model = record.get("model") if isinstance(record.get("model"), dict) else {}
    start = model.get("start") if isinstance(model.get("start"), dict) else {}
    if zero:  # a K=0 record names its start itself
        start = record.get("start") if isinstance(record.get("start"), dict) else {}
    run = record.get("run") if isinstance(record.get("run"), dict) else {}
    regime = record.get("regime")
    data = record.get("data") if isinstance(record.get("data"), dict) else {}
    test = data.get("test") if isinstance(data.get("test"), dict) else {}
    return {
        "path": rel, "task": record["task"], "language": record["language"],
        "k": int(record["k"]), "bucket_index": _int(bucket.get("index")),
        "bucket_name": (ZERO_SHOT_FILE.removesuffix(".json") if zero else bucket_stem(bucket)
                        if bucket.get("index") is not None else ""),
        "bucket_sha256": str(bucket.get("sha256") or ""), "cell_buckets_sha256": "",
        "test_sha256": str(test.get("sha256") or ""), "arm": "" if zero else arm_of(record),
        "method": str(record.get("method") or ""),
        "regime": str(regime.get("name") if isinstance(regime, dict) else regime or ""),
        "start": str(start.get("id") or start.get("fingerprint") or ""),
        "run_hash": str(run.get("hash") or record.get("config_hash") or ""),
        "lr": _float(record.get("selected_lr")), "best_epoch": _int(record.get("best_epoch")),
        "dev_score": _float(record.get("dev_score")),
        "test_score": float(record["test_score"]), "metric": str(record.get("metric")),
        "fsxlt_version": record_version(record),
        "versions": dumps_json(record.get("versions") or {}).strip(),
        "record_sha256": sha256_text(text),
        "predictions_sha256": predictions_sha256, "record": text}


def prediction_rows(rel: str, text: str) -> list[dict[str, Any]]:
    """One row per line of a predictions file (the header is line 0)."""
    rows = []
    for number, line in enumerate(text.split("\n")[:-1]):
        row = json.loads(line) if number else {}
        loglik = row.get("loglik")
        rows.append({"record": rel, "line": number, "id": str(row.get("id", "")),
                     "gold": json.dumps(row.get("gold"), ensure_ascii=False) if number else "",
                     "predicted": (json.dumps(row.get("predicted"), ensure_ascii=False)
                                   if number else ""),
                     "loglik": _logliks(loglik), "text": line})
    return rows


def _logliks(value: Any) -> list[float]:
    if isinstance(value, dict):
        value = list(value.values())
    return [float(v) for v in value] if isinstance(value, list) else []


def _int(value: Any) -> int | None:
    return int(value) if isinstance(value, int) and not isinstance(value, bool) else None


def _float(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) \
        else None


def cell_hashes(rows: list[dict[str, Any]]) -> dict[tuple, str]:
    """Each (task, language, K, arm)'s buckets' hash: sha256 of its sorted bucket hashes."""
    cells: dict[tuple, list[str]] = {}
    for row in rows:
        cells.setdefault(_cell(row), []).append(row["bucket_sha256"])
    return {cell: sha256_text("\n".join(sorted(hashes))) for cell, hashes in cells.items()}


def _cell(row: dict[str, Any]) -> tuple:
    return (row["task"], row["language"], row["k"], row["arm"])


# --------------------------------------------------------------------------- export

@dataclass
class ExportedResults:
    records: list[dict[str, Any]]
    n_predictions: int
    left_out: list[str] = field(default_factory=list)  # error and imported records
    unreadable: list[str] = field(default_factory=list)  # not JSON records at all


def export_results(runs_dir: str | Path, out: str | Path, *, config: str | Path | None = None,
                   name: str | None = None) -> ExportedResults:
    """Write RUNS_DIR's finished records as a dataset folder ``out`` (module docstring),
    whole or not at all; ``config``: the sweep config to show on the card."""
    from fsxlt.report.hf_results_card import results_card
    from fsxlt.sampling.hf_dataset import parquet_bytes

    root, out = Path(runs_dir), Path(out)
    check_export(root, out)
    found = finished_rows(root)
    rows, predictions = found.rows, []
    for row in rows:
        if found.predictions.get(row["path"]):
            predictions += prediction_rows(row["path"], found.predictions[row["path"]])
    files = {}
    for config_name, table in (("records", rows), ("predictions", predictions)):
        if table:
            data = parquet_bytes(table, _features(config_name).arrow_schema)
            files[f"{config_name}/{config_name}-{hashlib.sha256(data).hexdigest()[:16]}"
                  ".parquet"] = data
    manifest = {"format": RESULTS_FORMAT, "name": name or out.name,
                "records": {row["path"]: row["record_sha256"] for row in rows},
                "predictions": {row["path"]: row["predictions_sha256"] for row in rows
                                if row["predictions_sha256"]}}
    config_text = Path(config).read_text(encoding="utf-8") if config else None
    files[MANIFEST] = dumps_json(manifest).encode("utf-8")
    files[CARD] = results_card(rows, files, config_text, name or out.name,
                               plain_prefix(name or out.name)).encode("utf-8")
    with staged_dir(out) as staging:
        for rel, data in files.items():
            (staging / rel).parent.mkdir(parents=True, exist_ok=True)
            (staging / rel).write_bytes(data)
    return ExportedResults(rows, len(predictions), found.left_out, found.unreadable)


@dataclass
class FinishedRows:
    rows: list[dict[str, Any]]       # record_row of each, the cell's buckets' hash filled in
    predictions: dict[str, str]      # each row's predictions file's text ("" where none)
    records: dict[str, dict[str, Any]] = field(default_factory=dict)  # each row's, parsed
    left_out: list[str] = field(default_factory=list)  # error and imported records
    unreadable: list[str] = field(default_factory=list)  # not JSON records at all


def finished_rows(root: Path) -> FinishedRows:
    """Every finished record of the runs directory ``root`` as its row (:func:`record_row`,
    ``cell_buckets_sha256`` filled in) with its predictions' text; records imported from
    another study and error records left out, unreadable ones named; a record whose own
    facts place it elsewhere, or no finished record at all, is one line."""
    from fsxlt.study.imports import read_imports

    imported = read_imports(root)
    done = FinishedRows([], {})
    for path in sorted(record_files(root) + zero_shot_files(root)):
        rel = path.relative_to(root).as_posix()
        try:
            text = path.read_text(encoding="utf-8")
            record = loads_strict(text)
        except (UnicodeDecodeError, ValueError):
            done.unreadable.append(rel)
            continue
        if rel in imported or not finished_record(record):
            done.left_out.append(rel)
            continue
        _check_place(record, rel, path)
        pred_path = predictions_path(path)
        pred_text = pred_path.read_text(encoding="utf-8") \
            if pred_path.is_file() and not _is_zero_shot(record) else ""
        done.rows.append(record_row(rel, text, record,
                                    sha256_text(pred_text) if pred_text else ""))
        done.predictions[rel] = pred_text
        done.records[rel] = record
    if not done.rows:
        raise FsxltError(f"{root}: no finished run records to export")
    hashes = cell_hashes(done.rows)
    for row in done.rows:
        row["cell_buckets_sha256"] = hashes[_cell(row)]
    return done


def check_export(root: Path, out: Path) -> None:
    """Refuse, in one line, a runs directory ``root`` that is not there and an export folder
    ``out`` inside or around it, or not empty."""
    if not root.is_dir():
        raise FsxltError(f"{root}: no such runs directory")
    _apart(out, root, "the export folder", "the runs directory")
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise FsxltError(f"{out}: exists and is not empty; export into a new folder")


def _apart(path: Path, other: Path, what: str, other_what: str) -> None:
    """Refuse ``path`` equal to, inside or around ``other``."""
    from fsxlt.study.directories import overlap

    relation = overlap(path, other)
    if relation is not None:
        raise FsxltError(f"{what} ({path}) {relation} {other_what} ({other}); each needs "
                         "a folder of its own")


def finished_record(record: Any) -> bool:
    """A finished adapt record (with its bucket and K) or a K=0 record with its score."""
    if not isinstance(record, dict) or record_problem(record) is not None:
        return False
    if _is_zero_shot(record):
        return record.get("status") == "ok" and _float(record.get("test_score")) is not None
    return (is_complete(record) and isinstance(record.get("bucket"), dict)
            and record.get("k") is not None)


def _is_zero_shot(record: dict[str, Any]) -> bool:
    return record.get("format") == ZERO_SHOT_FORMAT


def zero_shot_files(root: Path) -> list[Path]:
    """The K=0 records a sweep copied from its start (``<task>/<lang>/k0/zero-shot.json``)."""
    return sorted(root.glob(f"*/*/k0/{ZERO_SHOT_FILE}"))


def own_place(record: dict[str, Any]) -> tuple[str | None, str]:
    """(what in the record's facts is no plain name, or None; where its facts place it
    under a runs directory, "" when they cannot)."""
    if _is_zero_shot(record):
        problem = next((f"{key} is {record.get(key)!r}, not a plain name (letters, digits, "
                        "_ . + -)" for key in ("task", "language")
                        if not plain_name(record.get(key))), None)
        if problem is None and record.get("k") != 0:
            problem = f"k is {record.get('k')!r}, not 0 (a zero-shot record)"
        return problem, "" if problem else zero_shot_record_path(
            "", record["task"], record["language"]).as_posix()
    problem = place_problem(record)
    return problem, "" if problem else record_path_of("", record).as_posix()


def _check_place(record: dict[str, Any], rel: str, path: Path) -> None:
    """Refuse a record of the runs directory whose own facts place it elsewhere (a renamed
    or hand-copied folder): the export is one set of facts, each row where they say."""
    problem, place = own_place(record)
    if problem is not None:
        raise FsxltError(f"{path}: {problem}; not a record fsxlt can place")
    if place != rel:
        raise FsxltError(f"{path}: its own facts (task, language, K, arm, bucket) place it "
                         f"at {place}; move it there (or out of the runs directory) and "
                         "export again")


# --------------------------------------------------------------------------- import

@dataclass
class ImportedRecord:
    path: Path          # where it goes under RUNS_DIR
    text: str
    predictions: str    # "" when none
    state: str = ""     # new, already done
    removed: list[str] = field(default_factory=list)  # what --replace removed with it


def read_results(source: str | Path) -> tuple[Path, str | None, list[ImportedRecord]]:
    """The dataset folder (or hub dataset id) ``source``, its revision (a hub snapshot's
    commit, else None) and its records with their predictions, each verified (module
    docstring), placed relative to RUNS_DIR under their own arm."""
    from fsxlt.sampling.hf_dataset import dataset_folder

    folder = dataset_folder(source)
    revision = folder.name if folder.parent.name == "snapshots" else None
    manifest = _manifest(folder)
    files = _card_files(folder)
    rows = _read_rows(files["records"], "records")
    if sorted(row["path"] for row in rows) != sorted(manifest["records"]):
        raise FsxltError(f"{folder}: its records are not the {len(manifest['records'])} its "
                         f"{MANIFEST} lists; nothing was written")
    lines: dict[str, list[dict[str, Any]]] = {}
    for row in _read_rows(files["predictions"], "predictions") if "predictions" in files \
            else []:
        lines.setdefault(row["record"], []).append(row)
    hashes = cell_hashes([_checked_row(row, manifest, folder) for row in rows])
    one_bucket_once(rows, folder)
    found = []
    for row in rows:
        if row["cell_buckets_sha256"] != hashes[_cell(row)]:
            raise FsxltError(f"{folder}: {row['path']}: cell_buckets_sha256 is not its "
                             "cell's; nothing was written")
        text = _predictions_text(row, lines.pop(row["path"], []), manifest, folder)
        found.append(ImportedRecord(Path(row["path"]), row["record"], text))
    if lines:
        raise FsxltError(f"{folder}: predictions of {sorted(lines)[0]}, which is no record "
                         "of the dataset; nothing was written")
    return folder, revision, found


def one_bucket_once(rows: list[dict[str, Any]], folder: Path) -> None:
    """Refuse a cell (task, language, K, arm) holding two records of one bucket (by its
    hash): a study runs each bucket of a cell once."""
    seen: dict[tuple, str] = {}
    for row in rows:
        if not row["bucket_sha256"]:
            continue
        key = (*_cell(row), row["bucket_sha256"])
        if key in seen:
            raise FsxltError(f"{folder}: {row['path']} and {seen[key]} are runs of one "
                             f"bucket ({row['bucket_sha256'][:16]}) in one cell; a study "
                             "runs each bucket once; nothing was written")
        seen[key] = row["path"]


def _manifest(folder: Path) -> dict[str, Any]:
    path = folder / MANIFEST
    if not path.is_file():
        raise FsxltError(f"{folder}: no {MANIFEST}; not a folder fsxlt runs export wrote")
    raw = read_json(path)
    ok = (isinstance(raw, dict) and raw.get("format") == RESULTS_FORMAT
          and all(isinstance(raw.get(key), dict) for key in ("records", "predictions"))
          and all(isinstance(k, str) and isinstance(v, str)
                  for key in ("records", "predictions") for k, v in raw[key].items()))
    if not ok:
        raise FsxltError(f"{path}: not an fsxlt results manifest ({RESULTS_FORMAT})")
    return raw


def _card_files(folder: Path) -> dict[str, Path]:
    """Each config's one parquet file, as the card's YAML lists it (in its own folder)."""
    from fsxlt.sampling.hf_dataset import front_matter

    card = folder / CARD
    meta = front_matter(card)
    listed = meta.get("configs") if isinstance(meta, dict) else None
    if not isinstance(listed, list):
        raise FsxltError(f"{card}: no configs in a YAML front matter; not a folder fsxlt "
                         "runs export wrote")
    files = {}
    for entry in listed:
        name = entry.get("config_name") if isinstance(entry, dict) else None
        data = entry.get("data_files") if isinstance(entry, dict) else None
        path = data[0].get("path") if isinstance(data, list) and len(data) == 1 \
            and isinstance(data[0], dict) else None
        parts = path.split("/") if isinstance(path, str) else []
        if name not in CONFIGS or name in files or len(parts) != 2 or parts[0] != name \
                or not plain_name(parts[1]) or not parts[1].endswith(".parquet"):
            raise FsxltError(f"{card}: config {name!r} with data file {path!r}; each of "
                             f"{', '.join(CONFIGS)} is one parquet file in its own folder")
        files[name] = folder / name / parts[1]
    if "records" not in files:
        raise FsxltError(f"{card}: lists no records config")
    return files


def _read_rows(path: Path, config: str) -> list[dict[str, Any]]:
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        table = pq.ParquetFile(pa.BufferReader(path.read_bytes())).read(use_threads=False)
        table = table.cast(_features(config).arrow_schema)
    except Exception as err:  # a cut or edited file, another schema
        first = (str(err).strip().splitlines() or [type(err).__name__])[0][:160]
        raise FsxltError(f"{path}: not a {config} file of fsxlt runs export ({first})") from None
    return table.to_pylist()


def _checked_row(row: dict[str, Any], manifest: dict[str, Any], folder: Path) -> dict[str, Any]:
    """A records row whose record is the one the manifest lists, a finished record, and
    whose every column (but the cell's hash) is what its record says."""
    shown = row["path"] if row["path"].isprintable() else repr(row["path"])
    where = f"{folder}: {shown}"
    text = row["record"]
    if sha256_text(text) != manifest["records"].get(row["path"]):
        raise FsxltError(f"{where}: the record's bytes are not those {MANIFEST} lists "
                         "(edited?); nothing was written")
    try:
        record = loads_strict(text)
    except ValueError:
        record = None
    if not finished_record(record):
        raise FsxltError(f"{where}: not a finished run record; nothing was written")
    problem, place = own_place(record)
    if problem is not None:
        raise FsxltError(f"{where}: {problem}; nothing was written")
    if place != row["path"]:
        raise FsxltError(f"{where}: the record's own facts place it at {place}; nothing "
                         "was written")
    expected = record_row(row["path"], text, record, row["predictions_sha256"])
    expected["cell_buckets_sha256"] = row["cell_buckets_sha256"]
    differ = sorted(key for key in expected if expected[key] != row[key])
    if differ:
        raise FsxltError(f"{where}: {', '.join(differ)} not what its record says (edited?); "
                         "nothing was written")
    return row


def _predictions_text(row: dict[str, Any], lines: list[dict[str, Any]],
                      manifest: dict[str, Any], folder: Path) -> str:
    if not row["predictions_sha256"]:
        if lines:
            raise FsxltError(f"{folder}: {row['path']} has predictions its row does not "
                             "name; nothing was written")
        return ""
    lines.sort(key=lambda line: line["line"])
    text = "".join(line["text"] + "\n" for line in lines)
    if sha256_text(text) != row["predictions_sha256"] \
            or manifest["predictions"].get(row["path"]) != row["predictions_sha256"]:
        raise FsxltError(f"{folder}: the predictions of {row['path']} are not those "
                         f"{MANIFEST} lists (edited?); nothing was written")
    if prediction_rows(row["path"], text) != lines:
        raise FsxltError(f"{folder}: a predictions row of {row['path']} is not what its "
                         "line says (edited?); nothing was written")
    return text


def plain_prefix(name: str) -> str:
    """``name`` as an arm prefix: letters, digits, ``_ + -``; anything else a ``-``."""
    cleaned = "".join(c if c.isalnum() or c in "_-+" else "-" for c in name).strip("-")
    return cleaned or "imported"


def default_prefix(source: str | Path) -> str:
    """The import's arm prefix unless given: the name of the folder or hub dataset the user
    named (a hub id's last part), never a name the dataset gives itself."""
    return plain_prefix(Path(str(source)).name)


def import_results(source: str | Path, runs: str | Path, *, prefix: str | None = None,
                   replace: bool = False) -> list[ImportedRecord]:
    """Bring the study ``source`` into RUNS_DIR ``runs`` (module docstring): byte for byte,
    under ``<prefix>.<arm>`` (default: the source's own name, :func:`default_prefix`; a K=0
    record as ``<task>/<lang>/k0/<prefix>.zero-shot.json``), write-once (``replace``: a
    record of other bytes is replaced with everything that belongs to it, its predictions
    included; what was removed is in ``removed``), listed as imported.

    All or nothing: every record is verified, every place and the runs directory's imports
    file checked before anything is written, and a failure while writing puts back every
    file as it was (a runs directory this import created is removed)."""
    folder, revision, found = read_results(source)
    return write_imported(found, runs, source=str(source), folder=folder, revision=revision,
                          prefix=prefix or default_prefix(source), replace=replace)


def write_imported(found: list[ImportedRecord], runs: str | Path, *, source: str,
                   folder: Path, revision: str | None, prefix: str,
                   replace: bool, folder_what: str = "the dataset folder",
                   ) -> list[ImportedRecord]:
    """Write another study's verified records ``found`` (placed by their own facts) into
    RUNS_DIR ``runs`` as :func:`import_results` says: the one way every import of a shared
    study (a results dataset, Every Eval Ever records) writes, all or nothing."""
    from fsxlt.study.directories import RUNS, check_claim, claim, undone_on_failure, writer_lock

    _apart(Path(runs), folder, "--out", folder_what)
    if not plain_name(prefix) or "." in prefix:
        raise FsxltError(f"--arm-prefix {prefix!r}: a plain name without '.' (letters, "
                         "digits, _ + -)")
    root = Path(runs)
    for one in found:
        one.path = _imported_place(one.path, prefix)
    check_claim(root, RUNS, "--out")
    _import_changes(root, found, prefix, source, revision, replace)  # refusals first
    with undone_on_failure(root):
        claim(root, RUNS, "--out")
        with writer_lock(root, RUNS):
            write_all(_import_changes(root, found, prefix, source, revision, replace))
    return found


def _imported_place(path: Path, prefix: str) -> Path:
    """Where an exported record goes under RUNS_DIR: its arm behind the import's prefix."""
    from fsxlt.study.imports import imported_arm

    if len(path.parts) == 4:  # <task>/<lang>/k0/zero-shot.json
        task, lang, k, name = path.parts
        return Path(task, lang, k, imported_arm(prefix, name))
    task, lang, k, arm, name = path.parts
    return Path(task, lang, k, imported_arm(prefix, arm), name)


def _import_changes(root: Path, found: list[ImportedRecord], prefix: str, dataset: str,
                    revision: str | None, replace: bool) -> dict[Path, str | None]:
    """Every file the import writes (text) or removes (None), its imports file included;
    refuses, writing nothing, a clash without ``replace`` or a malformed imports file."""
    from fsxlt.study.imports import IMPORTS_FILE, imports_after

    clashes = []
    changes: dict[Path, str | None] = {}
    for one in found:
        target = root / one.path
        same = target.is_file() and target.read_text(encoding="utf-8") == one.text
        one.state = "already done" if same else "new"
        if target.exists() and not same:
            clashes.append(one.path.as_posix())
        if target.is_dir():
            raise FsxltError(f"{target}: a folder where a record belongs; nothing was written")
    if clashes and not replace:
        raise FsxltError(f"{root / clashes[0]}: holds another record"
                         + (f" (and {len(clashes) - 1} more)" if len(clashes) > 1 else "")
                         + "; records are written once (--replace replaces them)")
    for one in found:
        if one.state == "already done":
            continue
        target = root / one.path
        predictions = predictions_path(target)
        if one.predictions:
            changes[predictions] = one.predictions
        elif predictions.exists():  # the replaced record's, not this one's
            changes[predictions] = None
            one.removed.append(predictions.relative_to(root).as_posix())
        changes[target] = one.text
    changes[root / IMPORTS_FILE] = imports_after(
        root, prefix, dataset, revision,
        {one.path.as_posix(): sha256_text(one.text) for one in found})
    return changes
