"""The reproducibility section of a report, computed from the records (issue 75, item 4).

Venues' checklists (NAACL 2021's, ARR's Responsible NLP checklist) ask for the number of
training and evaluation runs, the hyperparameters with their bounds and how they were
selected, summary statistics with error bars, the validation score behind each test
score, the runtime and infrastructure, and the split details. Every one of them is in
fsxlt's records; :func:`reproducibility_lines` states them per task and arm, each value
computed from the records the report read (through ``records.scores``, whose ``facts``
column :func:`record_facts` fills at the one place records are parsed), nothing typed by
hand. ``fsxlt report`` prints the section in ``report.md`` and ``report.html`` and
writes it alone as ``reproducibility.md``. The measured run times are the one line of a
report that a study run again, or resumed after a kill, does not repeat
(:data:`RUN_TIME`); everything else is the same.
"""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

import numpy as np
import pandas as pd

VERSIONS = ("fsxlt", "fsxlt_code", "torch", "transformers", "python")
# how the measured run time's line starts: the clocks are the one thing a study run again
# (or resumed after a kill) does not repeat, so a comparison of two reports can leave it out
RUN_TIME = "  - Run time: "
COMPUTE = "  - Compute: "  # the machine's line: device, torch threads, precision


def record_facts(record: dict[str, Any]) -> str:
    """What a finished record says of how it ran, beyond its settings, as sorted JSON:
    its clock, device, torch threads, dev and test sizes, the learning rate and epoch it
    selected, whether the start competed, its bucket's sampler and its software."""
    data = record.get("data") if isinstance(record.get("data"), dict) else {}
    versions = record.get("versions") if isinstance(record.get("versions"), dict) else {}
    bucket = record.get("bucket") if isinstance(record.get("bucket"), dict) else {}

    def size(split: str) -> Any:
        part = data.get(split)
        return part.get("n") if isinstance(part, dict) else None

    facts = {"wall_time_s": record.get("wall_time_s"), "device": record.get("device"),
             "torch_threads": record.get("torch_threads"), "dev_n": size("dev"),
             "test_n": size("test"), "selected_lr": record.get("selected_lr"),
             "select_start": record.get("select_start"),
             "sampler": bucket.get("sampler"),
             "versions": {key: versions[key] for key in VERSIONS if key in versions}}
    return json.dumps({k: v for k, v in facts.items() if v is not None}, sort_keys=True)


def _number(value: float) -> str:
    return f"{value:g}"


def _spread(values: list[float], unit: str = "") -> str:
    """``median M (range LO-HI)``, or the one value."""
    if not values:
        return "not recorded"
    low, high = min(values), max(values)
    if low == high:
        return f"{_number(low)}{unit}"
    return f"median {_number(float(np.median(values)))}{unit} (range {_number(low)}-" \
           f"{_number(high)}{unit})"


def _counts(values: list[Any]) -> str:
    """``a (N runs), b (M runs)`` for the values a group of records holds."""
    found = Counter(values)
    return ", ".join(f"{_number(v) if isinstance(v, float) else v} ({n} run"
                     f"{'' if n == 1 else 's'})" for v, n in sorted(found.items(), key=str))


def _arm_lines(task: str, arm: str, rows: pd.DataFrame, zero: pd.DataFrame) -> list[str]:
    settings = [json.loads(s) for s in rows["settings"]]
    facts = [json.loads(f) for f in rows["facts"]]
    cells = rows.groupby(["language", "k"]).size()
    per_k = rows.groupby("k")["bucket"].nunique()
    languages = sorted(set(rows["language"]))
    lines = [f"- **{task} / {arm}**: {len(rows)} adapting runs in {len(cells)} cells "
             f"({len(languages)} language{'s' if len(languages) != 1 else ''}: "
             f"{', '.join(languages)}; K = {', '.join(str(k) for k in per_k.index)}; "
             f"{_spread([float(n) for n in cells], ' buckets')} a cell)"
             + (f", beside {len(zero)} zero-shot (K=0) record"
                f"{'' if len(zero) == 1 else 's'}" if len(zero) else "") + "."]
    grids = Counter(tuple(s.get("lrs") or ()) for s in settings)
    grid = "; ".join(f"[{', '.join(_number(lr) for lr in g)}]" + (
        f" ({n} runs)" if len(grids) > 1 else "") for g, n in sorted(grids.items()))
    epochs = sorted({s.get("max_epochs") for s in settings if s.get("max_epochs")})
    patience = sorted({s.get("patience") for s in settings if s.get("patience") is not None})
    start = any(f.get("select_start") for f in facts)
    metric = ", ".join(sorted(set(rows["metric"].dropna().astype(str))))
    if any(s.get("lrs") for s in settings):
        lines.append(
            f"  - Hyperparameters: learning-rate grid {grid}, each trained in every run; "
            f"epochs at most {', '.join(map(str, epochs)) or 'not recorded'}, early stopping "
            f"after {', '.join(map(str, patience)) or 'no'} epochs without a better dev score; "
            f"selected: the learning rate and epoch with the best target-language dev "
            f"{metric}" + (", the start competing as epoch 0" if start else "")
            + f". Chosen: {_counts([f.get('selected_lr') for f in facts])}; best epoch "
            f"{_spread([float(e) for e in rows['best_epoch'].dropna()])}.")
    else:
        lines.append(f"  - Hyperparameters: none trained (no learning rate in the records); "
                     f"scored by {metric}.")
    lines.append("  - Results: each cell as mean ± std over its buckets with a 95% "
                 "percentile-bootstrap interval (cells.csv); every run's dev score beside "
                 "its test score (records.csv: dev_points, test_points).")
    samplers = sorted({str(f.get("sampler")) for f in facts if f.get("sampler")})
    set_sizes = sorted({int(s) for s in rows["set_size"].dropna()}) \
        if "set_size" in rows else []
    dev_n = sorted({f["dev_n"] for f in facts if f.get("dev_n") is not None})
    test_n = sorted({f["test_n"] for f in facts if f.get("test_n") is not None})
    limits = [f"{key} {', '.join(map(str, sorted({s[key] for s in settings if key in s})))}"
              for key in ("dev_limit", "test_limit") if any(key in s for s in settings)]
    files = sorted(set(rows["data_files"].dropna().astype(str)) - {""})
    lines.append(
        f"  - Data: {rows['bucket_sha256'].nunique()} distinct buckets"
        + (f" from sets of {', '.join(map(str, set_sizes))}" if set_sizes else "")
        + (f", sampled by {', '.join(samplers)}" if samplers else "")
        + " (each by sha256 in records.csv); dev sets of "
        + (", ".join(map(str, dev_n)) or "unrecorded") + " examples, test sets of "
        + (", ".join(map(str, test_n)) or "unrecorded") + " examples"
        + (f" ({'; '.join(limits)}: seeded samples)" if limits else "")
        + (f"; files: {'; '.join(files[:6])}" + (" ..." if len(files) > 6 else "")
           if files else "") + ".")
    clocks = [float(f["wall_time_s"]) for f in facts if f.get("wall_time_s") is not None]
    devices = _counts([f.get("device", "not recorded") for f in facts])
    threads = sorted({f["torch_threads"] for f in facts if f.get("torch_threads")})
    precisions = ", ".join(sorted(set(rows["precision"].dropna().astype(str)) - {""})) \
        or "not recorded"
    lines.append(
        f"{COMPUTE}device {devices}"
        + (f", torch threads {', '.join(map(str, threads))}" if threads else "")
        + f"; precision {precisions}.")
    lines.append(  # the one line two runs of the same study differ in (RUN_TIME)
        f"{RUN_TIME}"
        + (f"{sum(clocks):,.0f} s in all, {_spread([round(c, 1) for c in clocks], ' s')} a "
           f"run ({len(clocks)} of {len(rows)} runs clocked)." if clocks else
           "not recorded."))
    versions = Counter(json.dumps(f.get("versions", {}), sort_keys=True) for f in facts)
    shown = []
    for text, n in sorted(versions.items()):
        found = json.loads(text)
        named = ", ".join(f"{key.replace('fsxlt_code', 'fsxlt code')} {found[key]}"
                          for key in VERSIONS if key in found) or "not recorded"
        shown.append(named + (f" ({n} runs)" if len(versions) > 1 else ""))
    lines.append(f"  - Software: {'; '.join(shown)}.")
    return lines


def reproducibility_lines(records: Any) -> list[str]:
    """The section's lines (Markdown), per task and arm, from ``records``."""
    scores = records.scores
    if scores.empty:
        return []
    lines = ["The answers a reproducibility checklist asks for, per task and arm, each "
             "computed from the records this report read:"]
    zero = records.zero_shot
    for (task, arm), rows in scores.groupby(["task", "arm"], sort=True):
        languages = set(rows["language"])
        own = zero[(zero["task"] == task) & zero["language"].isin(languages)] \
            if rows["source_training"].astype(bool).any() else zero.iloc[0:0]
        lines += _arm_lines(task, arm, rows, own)
    return lines


def without_run_times(text: str, *, machine: bool = False) -> str:
    """A report's text (Markdown or HTML) less its measured run times: what two runs of the
    same study, or one resumed after a kill, give alike. ``machine``: less the compute
    line too (device, torch threads, precision), to set side by side the results of one
    study run on two machines or thread counts."""
    import re

    drop = (RUN_TIME, COMPUTE) if machine else (RUN_TIME,)
    kept = [line for line in text.splitlines(keepends=True) if not line.startswith(drop)]
    items = "Run time|Compute" if machine else "Run time"
    return re.sub(rf"<li>(?:{items}): [^<]*</li>", "", "".join(kept))
