"""Every Eval Ever records back as arms: ``fsxlt runs import-eee``.

A study shared as EEE records (``fsxlt runs export --format eee``,
:mod:`fsxlt.report.eee`) comes back as another study's arms, as a results dataset does
(:func:`fsxlt.report.hf_results.import_results`): each bucket's record byte for byte under
``<prefix>.<arm>``, listed in the runs directory's imports file, so ``fsxlt report``
shows the cells and ``--compare`` pairs them with yours by bucket hash.

EEE records are input anyone can have written. An aggregate record is taken only where it
carries fsxlt's bucket fields (the cell's ``fsxlt_unit`` of ``shot bucket``, its bucket
set's hash and its buckets' hashes; each bucket's result with its hash and its fsxlt
record), or is a start's zero-shot score (``fsxlt_unit`` ``zero-shot``, its record
beside it); a record without them (any other tool's, or one whose spread is over test
samples) is refused in one line, since nothing in it says which shots its score came
from. Everything the records keep is checked against content before anything is written:
each embedded record's bytes against its sha256, its own facts (task, language, K, arm,
bucket) against the cell's and the bucket's fields and the place they give it, its test
score against the bucket's score and the metric's name; the bucket set's hash against the
buckets' hashes; the cell's score against the mean of its buckets'; the samples file
beside a record that declares one (named after the record, as the datastore names it),
where it is present, against its checksum and row count. One bucket appears
once per cell. Each refusal is one line and nothing is written.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from fsxlt.errors import FsxltError
from fsxlt.fileio import loads_strict, sha256_text

FIELDS = ("fsxlt_unit", "fsxlt_buckets_sha256", "fsxlt_bucket_sha256s")
BUCKET_FIELDS = ("fsxlt_bucket_sha256", "fsxlt_buckets_sha256", "fsxlt_record",
                 "fsxlt_record_sha256", "fsxlt_record_path")
ZERO_SHOT_FIELDS = ("fsxlt_record", "fsxlt_record_sha256", "fsxlt_record_path")
NOTHING = "nothing was written"


def read_eee(source: str | Path) -> tuple[Path, list[Any]]:
    """The folder (or hub dataset id) ``source`` and the fsxlt records its EEE aggregate
    records carry, each checked (module docstring) and placed by its own facts."""
    from fsxlt.report.hf_results import ImportedRecord, one_bucket_once
    from fsxlt.sampling.hf_dataset import dataset_folder

    folder = dataset_folder(source)
    paths = sorted(path for path in folder.rglob("*.json") if path.is_file()
                   and not path.name.startswith("."))
    if not paths:
        raise FsxltError(f"{folder}: no Every Eval Ever records (.json) below it")
    rows = [row for path in paths for row in _read_cell(path)]
    one_bucket_once(rows, folder)
    return folder, [ImportedRecord(Path(row["path"]), row["record"], "") for row in rows]


def _read_cell(path: Path) -> list[dict[str, Any]]:
    """The rows of the records one aggregate record carries, each checked."""
    from fsxlt.report.hf_results import cell_hashes

    where = f"{path}"
    try:
        data = loads_strict(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, ValueError):
        raise FsxltError(f"{where}: not JSON; {NOTHING}") from None
    results = data.get("evaluation_results") if isinstance(data, dict) else None
    if not isinstance(results, list) or not results \
            or not all(isinstance(result, dict) for result in results):
        raise FsxltError(f"{where}: not an Every Eval Ever aggregate record (no "
                         f"evaluation_results); {NOTHING}")
    details = [_details(result) for result in results]
    if details[0].get("fsxlt_unit") == "zero-shot" and len(results) == 1:
        return [_record_row(results[0], details[0], details[0], where, zero_shot=True)]
    if any(key not in details[0] for key in FIELDS) \
            or details[0]["fsxlt_unit"] != "shot bucket":
        missing = [key for key in FIELDS if key not in details[0]]
        raise FsxltError(f"{where}: an Every Eval Ever record without fsxlt's bucket fields "
                         f"({', '.join(missing or ['fsxlt_unit: shot bucket'])}): nothing "
                         f"says which shots its scores came from, so no arm can pair them; "
                         f"{NOTHING}")
    cell, buckets = details[0], list(zip(results[1:], details[1:], strict=True))
    if not buckets:
        raise FsxltError(f"{where}: its cell lists no bucket results; {NOTHING}")
    rows = [_record_row(result, detail, cell, where) for result, detail in buckets]
    hashes = [row["bucket_sha256"] for row in rows]
    if _strings(cell["fsxlt_bucket_sha256s"]) != hashes:
        raise FsxltError(f"{where}: fsxlt_bucket_sha256s are not its buckets' hashes; "
                         f"{NOTHING}")
    keys = {(row["task"], row["language"], row["k"], row["arm"]) for row in rows}
    if len(keys) != 1:
        raise FsxltError(f"{where}: its buckets' records are of {len(keys)} cells, not one; "
                         f"{NOTHING}")
    own = cell_hashes(rows)[(rows[0]["task"], rows[0]["language"], rows[0]["k"],
                             rows[0]["arm"])]
    if own != cell["fsxlt_buckets_sha256"]:
        raise FsxltError(f"{where}: fsxlt_buckets_sha256 is not the hash of its buckets' "
                         f"hashes (edited?); {NOTHING}")
    for row in rows:
        row["cell_buckets_sha256"] = own
    mean = math.fsum(row["test_score"] for row in rows) / len(rows)
    score = _score(results[0], where)
    if not math.isclose(score, mean, rel_tol=1e-9, abs_tol=1e-12):
        raise FsxltError(f"{where}: its score {score!r} is not the mean of its buckets' "
                         f"scores ({mean!r}); {NOTHING}")
    _check_samples(path, data, where)
    return rows


def _record_row(result: dict[str, Any], detail: dict[str, str], cell: dict[str, str],
                where: str, *, zero_shot: bool = False) -> dict[str, Any]:
    """A bucket result's embedded record (``zero_shot``: a zero-shot record's), checked
    against the result, as its row."""
    from fsxlt.report.hf_results import finished_record, own_place, record_row

    fields = ZERO_SHOT_FIELDS if zero_shot else BUCKET_FIELDS
    missing = [key for key in fields if key not in detail]
    name = result.get("evaluation_name")
    if missing:
        raise FsxltError(f"{where}: bucket result {name!r} lacks fsxlt's bucket fields "
                         f"({', '.join(missing)}); {NOTHING}")
    text = detail["fsxlt_record"]
    if sha256_text(text) != detail["fsxlt_record_sha256"]:
        raise FsxltError(f"{where}: {name}: its record's bytes are not those its "
                         f"fsxlt_record_sha256 names (edited?); {NOTHING}")
    try:
        record = loads_strict(text)
    except ValueError:
        record = None
    if not finished_record(record) or (record.get("k") == 0) != zero_shot:
        raise FsxltError(f"{where}: {name}: not a finished "
                         f"{'zero-shot' if zero_shot else 'few-shot run'} record; {NOTHING}")
    problem, place = own_place(record)
    if problem is not None:
        raise FsxltError(f"{where}: {name}: {problem}; {NOTHING}")
    if place != detail["fsxlt_record_path"]:
        raise FsxltError(f"{where}: {name}: the record's own facts place it at {place}, not "
                         f"{detail['fsxlt_record_path']}; {NOTHING}")
    row = record_row(place, text, record, "")
    metric = (result.get("metric_config") or {}).get("metric_name") \
        if isinstance(result.get("metric_config"), dict) else None
    checks = [("score", _score(result, where) == row["test_score"]),
              ("metric_name", metric == row["metric"])]
    if not zero_shot:
        checks += [("fsxlt_bucket_sha256", row["bucket_sha256"] == detail[
                        "fsxlt_bucket_sha256"]),
                   ("fsxlt_buckets_sha256", cell["fsxlt_buckets_sha256"] == detail[
                       "fsxlt_buckets_sha256"])]
    checks += [(f"fsxlt_{key}", str(row[key]) == cell[f"fsxlt_{key}"])
               for key in ("task", "language", "k", "arm") if f"fsxlt_{key}" in cell]
    differ = [what for what, ok in checks if not ok]
    if differ:
        raise FsxltError(f"{where}: {name}: {', '.join(differ)} not what its record says "
                         f"(edited?); {NOTHING}")
    return row


def _details(result: dict[str, Any]) -> dict[str, str]:
    score = result.get("score_details")
    details = score.get("details") if isinstance(score, dict) else None
    if not isinstance(details, dict):
        return {}
    return {key: value for key, value in details.items() if isinstance(value, str)}


def _score(result: dict[str, Any], where: str) -> float:
    score = result.get("score_details")
    value = score.get("score") if isinstance(score, dict) else None
    if not isinstance(value, (int, float)) or isinstance(value, bool) \
            or not math.isfinite(value):
        raise FsxltError(f"{where}: {result.get('evaluation_name')!r} has no finite score; "
                         f"{NOTHING}")
    return float(value)


def _strings(text: str) -> list[str] | None:
    try:
        value = json.loads(text)
    except ValueError:
        return None
    return value if isinstance(value, list) and all(isinstance(v, str) for v in value) \
        else None


def _check_samples(path: Path, data: dict[str, Any], where: str) -> None:
    """The samples file beside an aggregate record that declares one, where it is here
    (the datastore names it after the record: ``<uuid>_samples.jsonl``, never where the
    record says): its checksum and row count."""
    from fsxlt.fileio import sha256_file

    detail = data.get("detailed_evaluation_results")
    samples = path.with_name(f"{path.stem}_samples.jsonl")
    if not isinstance(detail, dict) or not samples.is_file():
        return  # the aggregate alone is shared: its records are what an arm needs
    if detail.get("checksum") != sha256_file(samples):
        raise FsxltError(f"{where}: its samples file {samples.name} is not the one its "
                         f"checksum names (edited?); {NOTHING}")
    with samples.open("rb") as handle:
        rows = sum(1 for line in handle if line.strip())
    if detail.get("total_rows") not in (None, rows):
        raise FsxltError(f"{where}: its samples file holds {rows} rows, not the "
                         f"{detail.get('total_rows')} it names; {NOTHING}")


def import_eee(source: str | Path, runs: str | Path, *, prefix: str | None = None,
               replace: bool = False) -> list[Any]:
    """Bring the EEE records below ``source`` into RUNS_DIR ``runs`` (module docstring),
    as :func:`fsxlt.report.hf_results.import_results` brings a results dataset: under
    ``<prefix>.<arm>`` (default: the folder's name), write-once, all or nothing."""
    from fsxlt.report.hf_results import default_prefix, write_imported

    folder, found = read_eee(source)
    return write_imported(found, runs, source=str(source), folder=folder, revision=None,
                          prefix=prefix or default_prefix(source), replace=replace,
                          folder_what="the records' folder")
