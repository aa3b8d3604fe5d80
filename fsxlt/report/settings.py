"""What ran, as the records say it: the settings block at the head of a report.

Per arm of each task: the encoder and the start by content, the protocol (learning rates,
epoch cap, patience, sequence length, seed and the settings a run's identity holds where
they are not the study's), dev and test limits, and the fsxlt versions; a setting the
arm's records disagree on is named with its values. Then each (task, language)'s data
files: the dev set runs selected on and the test file, by name and sha256.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

# identity fields a reader needs to know what ran, in this order (others: the study's)
PROTOCOL = ("lrs", "max_epochs", "patience", "max_seq_length", "seed", "batch_size",
            "patience_from", "long_sentences", "optimizer", "label_all_tokens", "dev_limit",
            "test_limit", "precision", "micro_batch", "reading", "regime")


def _shown_model(name: str) -> str:
    """A hub id as it is; a local folder by its name (its path on the writing machine says
    nothing elsewhere)."""
    if name.startswith(("/", ".", "~")) or "\\" in name or name.count("/") > 1:
        return f"{Path(name).name} (a local folder)"
    return name


def record_settings(record: dict[str, Any]) -> str:
    """A finished record's settings (module docstring) as sorted JSON, for ``records``."""
    run = record.get("run") if isinstance(record.get("run"), dict) else {}
    identity = run.get("identity") if isinstance(run.get("identity"), dict) else {}
    model = record.get("model") if isinstance(record.get("model"), dict) else {}
    encoder = str(model.get("encoder") or "")
    found: dict[str, Any] = {"encoder": _shown_model(encoder) if encoder else "",
                             "start": str(identity.get("start") or "")[:28]}
    found.update({key: identity[key] for key in PROTOCOL if key in identity})
    return json.dumps(found, sort_keys=True)


def record_data_files(record: dict[str, Any]) -> str:
    """A record's dev and test files: ``dev NAME (sha256 PREFIX); test NAME (...)``."""
    run = record.get("run") if isinstance(record.get("run"), dict) else {}
    identity = run.get("identity") if isinstance(run.get("identity"), dict) else {}
    data = record.get("data") if isinstance(record.get("data"), dict) else {}
    parts = []
    for split in ("dev", "test"):
        block = data.get(split) if isinstance(data.get(split), dict) else {}
        digest = identity.get(split)
        if block.get("source") or digest:
            name = Path(str(block.get("source") or "?")).name
            sha = f" (sha256 {str(digest)[:16]})" if isinstance(digest, str) else ""
            parts.append(f"{split} {name}{sha}")
    return "; ".join(parts)


def _value(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, sort_keys=True)


def settings_lines(scores: Any) -> list[str]:
    """The report's settings block from ``records.scores`` (its ``settings``,
    ``data_files`` and ``fsxlt_version`` columns)."""
    if scores.empty or "settings" not in scores:
        return []
    lines = ["What ran (as the records say; docs/reports.md#what-ran):"]
    for (task, arm), part in scores.groupby(["task", "arm"], sort=True):
        parsed = [json.loads(text) for text in part["settings"] if text]
        if not parsed:
            continue
        keys = sorted({key for item in parsed for key in item},
                      key=lambda k: (("encoder", "start", *PROTOCOL) + (k,)).index(k))
        shown, differ = [], []
        for key in keys:
            values = sorted({_value(item.get(key, "–")) for item in parsed})
            (shown if len(values) == 1 else differ).append(f"{key} {' | '.join(values)}")
        versions = ", ".join(sorted(set(part["fsxlt_version"].astype(str)) - {""}))
        line = f"- {task}/{arm}: {', '.join(shown)}; fsxlt {versions or '?'}"
        if differ:
            line += f"; **differ across its records**: {'; '.join(differ)}"
        lines.append(line)
    files = scores[scores["data_files"].astype(str) != ""] if "data_files" in scores \
        else scores.iloc[0:0]
    if not files.empty:
        lines.append("Data files (the dev set runs selected on, the test file):")
        for (task, lang), part in files.groupby(["task", "language"], sort=True):
            lines += [f"- {task}/{lang}: {text}" for text in sorted(set(part["data_files"]))]
    return lines


__all__ = ["record_data_files", "record_settings", "settings_lines"]
