"""The dataset card of a results export (:mod:`fsxlt.report.hf_results`): the YAML
``configs:`` that ``datasets`` reads, then what the study is (its sweeps, config and
versions), the buckets it ran on, a summary (mean ± std per cell), the columns in words
and how to compare another study against it."""

from __future__ import annotations

import json
import statistics
from pathlib import Path
from typing import Any

from fsxlt import __version__
from fsxlt.fileio import sha256_text

COLUMNS = {
    "records": [
        ("path", "the record's path in the study's runs directory"),
        ("task, language, k", "the cell: task, target language, shots per label"),
        ("bucket_index, bucket_name", "which bucket of the cell's set"),
        ("bucket_sha256", "the bucket's content hash (the `bucket_NN` split hash of the "
         "bucket dataset it came from): runs pair by it"),
        ("cell_buckets_sha256", "sha256 of the sorted bucket hashes of the arm's cell"),
        ("test_sha256", "the content hash of the test examples scored"),
        ("arm, method, regime", "what was run: the arm (method and its variants), the "
         "method, the training regime; a K=0 record (`<task>/<lang>/k0/zero-shot.json`, the "
         "start's zero-shot score) has no arm and method `zero-shot`"),
        ("start", "the model's identity (a checkpoint's content hash, a causal LM's "
         "files' sha256, or a hub id at its commit)"),
        ("run_hash", "the run's identity: the hash of everything that determines it"),
        ("lr, best_epoch", "the learning rate and epoch chosen on dev (empty where none)"),
        ("dev_score, test_score, metric", "scores in 0-1 and the metric they are in"),
        ("fsxlt_version, versions", "what wrote the record (JSON of the versions)"),
        ("record, record_sha256", "the record itself, byte for byte, and its sha256"),
        ("predictions_sha256", "the sha256 of its predictions file (empty: none saved)"),
    ],
    "predictions": [
        ("record", "the path of the record these predictions belong to"),
        ("line", "the line of the predictions file (0: its header)"),
        ("id, gold, predicted", "the test example's id, gold and predicted label (JSON)"),
        ("loglik", "each option's log-likelihood (in-context learning runs)"),
        ("text", "the line itself, byte for byte"),
    ],
}


def results_card(rows: list[dict[str, Any]], files: dict[str, bytes], config: str | None,
                 name: str, prefix: str) -> str:
    """The card; ``prefix``: the arm prefix its comparison example imports under."""
    lines = ["---", "configs:"]
    for path in sorted(p for p in files if p.endswith(".parquet")):
        config_name = path.split("/")[0]
        lines += [f"- config_name: {config_name}", "  data_files:",
                  f"  - split: {config_name}", f"    path: {path}"]
    lines += ["tags:", "- few-shot", "- crosslingual-transfer", "- fsxlt", "- results", "---",
              "", f"# {name}: per-bucket results of an fsxlt study", ""]
    lines += (_study(rows, config) + _arms(rows) + _buckets(rows) + _summary(rows)
              + _columns(files))
    lines += ["## Comparing against this study", "",
              "Bring its records into your runs directory and pair an arm of yours with "
              "one of its arms, bucket by bucket (pairs are made by bucket hash; cells "
              "whose buckets or test sets differ are refused):", "", "```bash",
              f"fsxlt runs import-hf PATH_OR_ID --out runs --arm-prefix {prefix}",
              f"fsxlt report runs --compare full {prefix}.full", "```", "",
              "`datasets.load_dataset(PATH_OR_ID, 'records', split='records')` reads the "
              "rows without fsxlt.", ""]
    return "\n".join(lines)


def _study(rows: list[dict[str, Any]], config: str | None) -> list[str]:
    runs = [_run_block(row) for row in rows]
    sweeps = sorted({str(run.get("sweep") or "") for run in runs} - {""})
    writers = sorted({str(run.get("writer") or "") for run in runs} - {""})
    versions = sorted({row["fsxlt_version"] for row in rows})
    zero = [r for r in rows if not r["arm"]]
    rows = [r for r in rows if r["arm"]]
    cells = {(r["task"], r["language"], r["k"]) for r in rows}
    lines = ["## The study", "",
             f"{len(rows)} finished runs in {len(cells)} cells (task, language, K), arms "
             f"{', '.join(sorted({r['arm'] for r in rows}))}"
             + (f", and {len(zero)} K=0 records (the start's zero-shot score)" if zero
                else "") + "; written by fsxlt "
             f"{', '.join(versions)}, exported by fsxlt {__version__}."
             + (f" Sweeps: {', '.join(sweeps)}." if sweeps else "")
             + (f" Written by: {', '.join(writers)}." if writers else ""), ""]
    if config:
        lines += ["The sweep config it ran (`fsxlt sweep CONFIG`):", "", "```yaml",
                  config.rstrip("\n"), "```", ""]
    return lines


def _arms(rows: list[dict[str, Any]]) -> list[str]:
    """Each arm's encoder and start, as its records name them: a hub id (at its commit
    where recorded), or a local folder by its name (its path on the exporting machine says
    nothing here), and the start's content identity."""
    found: dict[str, set[tuple[str, str]]] = {}
    for row in rows:
        if row["arm"]:
            found.setdefault(row["arm"], set()).add(_encoder_and_start(json.loads(row["record"])))
    lines = ["## The arms", "", "What each arm adapted (or prompted): the encoder it started "
             "from and the start's identity by content (a source-trained checkpoint's hash, a "
             "causal LM's files' sha256, a hub id at its commit).", "",
             "| arm | encoder | start |", "|---|---|---|"]
    for arm, pairs in sorted(found.items()):
        for encoder, start in sorted(pairs):
            lines.append(f"| {arm} | {encoder} | {start} |")
    return lines + [""] + _learned_nothing(rows)


def _learned_nothing(rows: list[dict[str, Any]]) -> list[str]:
    """A warning per arm (or K=0 record) whose start learned nothing on its source dev set,
    as its records say (``fsxlt report`` says the same): their scores say nothing of the
    method."""
    found: dict[str, set[str]] = {}
    for row in rows:
        record = json.loads(row["record"])
        model = record.get("model") if isinstance(record.get("model"), dict) else {}
        start = model.get("start") if isinstance(model.get("start"), dict) else {}
        warnings = start.get("warnings") or record.get("warnings") or []
        if isinstance(warnings, list) and warnings:
            where = row["arm"] or f"K=0 of {row['task']}/{row['language']}"
            found.setdefault(str(where), set()).update(str(w) for w in warnings)
    if not found:
        return []
    lines = ["**Warning: a start that learned nothing.** These records were adapted from (or "
             "are the zero-shot score of) a source-trained start that learned nothing on its "
             "source dev set; their scores say nothing of the method:", ""]
    lines += [f"- {where}: {'; '.join(sorted(warnings))}"
              for where, warnings in sorted(found.items())]
    return lines + [""]


def _encoder_and_start(record: dict[str, Any]) -> tuple[str, str]:
    model = record.get("model") if isinstance(record.get("model"), dict) else {}
    start = model.get("start") if isinstance(model.get("start"), dict) else {}
    encoder = str(model.get("encoder") or start.get("encoder") or "")
    revision = str(start.get("revision") or "")
    if encoder.startswith(("/", ".", "~")) or "\\" in encoder or encoder.count("/") > 1:
        shown = f"`{Path(encoder).name}` (a local folder)"
    else:
        shown = f"`{encoder}`" + (f" at `{revision[:12]}`" if revision else "") if encoder \
            else "–"
    identity = str(start.get("id") or start.get("fingerprint") or "")
    kind = str(start.get("kind") or "")
    sources = start.get("source_languages")
    trained = (f", source-trained on {'+'.join(sources)}" if kind == "source-trained"
               and isinstance(sources, list) else "")
    return shown, (f"`{identity[:28]}`{trained}" if identity else "–")


def _run_block(row: dict[str, Any]) -> dict[str, Any]:
    """The record's ``run`` block (its sweep, its writer: the command that wrote it)."""
    run = json.loads(row["record"]).get("run")
    return run if isinstance(run, dict) else {}


def _buckets(rows: list[dict[str, Any]]) -> list[str]:
    lines = ["## The buckets", "", "Each cell's buckets, by content hash: the split hashes of "
             "the bucket dataset (`fsxlt buckets export --format hf`) they came from.", "",
             "| task | language | K | buckets | buckets' hash |", "|---|---|---|---|---|"]
    cells: dict[tuple, set[str]] = {}
    for row in rows:
        if row["arm"]:  # a K=0 record ran no bucket
            cells.setdefault((row["task"], row["language"], row["k"]), set()).add(
                row["bucket_sha256"])
    for (task, lang, k), found in sorted(cells.items()):
        digest = sha256_text("\n".join(sorted(found)))
        lines.append(f"| {task} | {lang} | {k} | {len(found)} | `{digest[:16]}` |")
    return lines + [""]


def _summary(rows: list[dict[str, Any]]) -> list[str]:
    lines = ["## Summary", "", "Test score (points) per cell and arm: mean ± sample std over "
             "its buckets.", "", "| task | language | K | arm | n | mean ± std | metric |",
             "|---|---|---|---|---|---|---|"]
    cells: dict[tuple, list[float]] = {}
    metric = {}
    for row in rows:
        key = (row["task"], row["language"], row["k"], row["arm"] or "zero-shot (start)")
        cells.setdefault(key, []).append(100 * row["test_score"])
        metric[key] = row["metric"]
    for key, scores in sorted(cells.items()):
        spread = f" ± {statistics.stdev(scores):.2f}" if len(scores) > 1 else ""
        lines.append(f"| {' | '.join(map(str, key))} | {len(scores)} | "
                     f"{statistics.fmean(scores):.2f}{spread} | {metric[key]} |")
    return lines + [""]


def _columns(files: dict[str, bytes]) -> list[str]:
    lines = ["## Columns", ""]
    for config, columns in COLUMNS.items():
        if not any(path.startswith(f"{config}/") for path in files):
            continue
        lines += [f"`{config}`:", ""] + [f"- **{name}**: {what}" for name, what in columns]
        lines.append("")
    return lines
