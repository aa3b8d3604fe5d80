"""Attention shift of [CLS] after adapting, for classification (docs/protocol.md#analyses).

For every test example whose predicted label changed between the
source-trained (zero-shot) model and the adapted model, take the top
layer's attention from the [CLS] position (position 0) to every wordpiece,
averaged over heads, in both models; the shift of a position is adapted
minus zero-shot. Shifts are pooled per wordpiece string (special tokens
such as [SEP] included) and the tokens with the largest positive and
negative mean shift are listed.

Getting the adapted weights. fsxlt does not store adapted weights (40
buckets x languages x methods would be far too much disk); instead an adapt
run is **re-run from its record**: the same start, bucket (checked against
the recorded hash), method, seed, epochs and patience, with the recorded
winning learning rate only. Each learning rate's run starts from the same
weights and the same seed, so this reproduces the selected run; the re-run's
dev score and best epoch are compared with the record and a mismatch (e.g.
GPU nondeterminism, changed files) is an error rather than a silent
analysis of another model.

Attention weights need the encoder's *eager* attention (SDPA and flash
kernels do not return them); it is switched on for the forward passes here
and switched back afterwards.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd
import torch

from fsxlt.data import Example
from fsxlt.errors import FsxltError
from fsxlt.fileio import read_json

Attention = tuple[list[str], list[float]]  # wordpieces and [CLS] attention to each


@dataclass
class Rerun:
    """What re-running an adapt record needs: the engine (at the start), record, bucket, test."""

    engine: Any
    record: dict[str, Any]
    bucket: Any
    test: list[Example]


@dataclass
class ShiftResult:
    """Per-token mean shifts (all tokens) and how many test examples changed prediction."""

    tokens: pd.DataFrame
    changed: int
    total: int
    run: str = ""  # task-language-kK-method-bucket, to name outputs


@contextmanager
def eager_attention(encoder: Any) -> Iterator[None]:
    """Run ``encoder`` with eager attention (which returns weights) inside the block."""
    previous = getattr(encoder.config, "_attn_implementation", None)
    if previous != "eager":
        if not hasattr(encoder, "set_attn_implementation"):
            raise FsxltError(f"{type(encoder).__name__} cannot switch to eager attention")
        encoder.set_attn_implementation("eager")
    try:
        yield
    finally:
        if previous not in (None, "eager"):
            encoder.set_attn_implementation(previous)


def cls_attention(model: Any, featurizer: Any, examples: Sequence[Example],
                  device: torch.device | str = "cpu", batch_size: int = 32) -> list[Attention]:
    """Top-layer attention from [CLS] to each wordpiece (mean over heads), per example."""
    from fsxlt.models.encoding import collate

    rows = featurizer.encode(examples, windows=False).rows
    tokenizer = featurizer.tokenizer
    out: list[Attention] = []
    was_training = model.training
    model.eval()
    try:
        with eager_attention(model.encoder), torch.inference_mode():
            for i in range(0, len(rows), batch_size):
                chunk = rows[i:i + batch_size]
                batch = collate(chunk, featurizer.pad_id, device)
                inputs = {k: batch[k] for k in ("input_ids", "attention_mask", "token_type_ids")
                          if k in batch}
                top = model.encoder(**inputs, output_attentions=True).attentions[-1]
                weights = top[:, :, 0, :].mean(dim=1).float().cpu()
                for b, row in enumerate(chunk):
                    size = len(row.input_ids)
                    out.append((tokenizer.convert_ids_to_tokens(row.input_ids),
                                weights[b, :size].tolist()))
    finally:
        model.train(was_training)
    return out


def attention_shift(before: Sequence[Attention], after: Sequence[Attention],
                    changed: Sequence[bool]) -> pd.DataFrame:
    """Mean shift (after - before) per wordpiece over the examples flagged ``changed``."""
    sums: dict[str, list[float]] = {}
    for (tokens, old), (tokens_after, new), flag in zip(before, after, changed, strict=True):
        if not flag:
            continue
        if tokens != tokens_after:
            raise ValueError("the two models saw different wordpieces")
        for token, a, b in zip(tokens, old, new, strict=True):
            entry = sums.setdefault(token, [0.0, 0.0])
            entry[0] += b - a
            entry[1] += 1
    rows = [{"token": token, "occurrences": int(n), "mean_shift": total / n}
            for token, (total, n) in sums.items()]
    frame = pd.DataFrame(rows, columns=["token", "occurrences", "mean_shift"])
    return frame.sort_values(["mean_shift", "token"], ascending=[False, True], ignore_index=True)


def top_shifts(table: pd.DataFrame, top: int = 15, min_occurrences: int = 1) -> pd.DataFrame:
    """The ``top`` tokens with the largest positive and the largest negative mean shift."""
    kept = table[table["occurrences"] >= min_occurrences]
    positive = kept[kept["mean_shift"] > 0].head(top).assign(direction="gained attention")
    negative = (kept[kept["mean_shift"] < 0].sort_values(["mean_shift", "token"])
                .head(top).assign(direction="lost attention"))
    return pd.concat([positive, negative], ignore_index=True)


# --------------------------------------------------------------------------- from a run record

def _examples(source: str | None, info: dict[str, Any] | None, task: Any, what: str,
              override: Path | None, language: str) -> list[Example]:
    """Examples of a recorded data set, checked against the recorded content hash."""
    from fsxlt.data import read_examples
    from fsxlt.sampling.store import DEV_REMAINING, read_examples_jsonl
    from fsxlt.training.loop import examples_digest

    path = override or (Path(source) if source else None)
    if path is None or not path.is_file():
        raise FsxltError(f"the run's {what} file {source} is not found; pass --{what} FILE")
    examples = (read_examples_jsonl(path) if path.name == DEV_REMAINING
                else read_examples(path, task, language=language))
    if info and info.get("sha256") and examples_digest(examples) != info["sha256"]:
        raise FsxltError(f"{path}: differs from the {what} set the run used (content hash)")
    return examples


def rerun_record(record_path: str | Path, *, start: str | None = None,
                 dev: Path | None = None, test: Path | None = None,
                 device: str | None = "cpu") -> Rerun:
    """Rebuild a run's engine and data from its record (see the module docstring).

    The engine still holds the *starting* weights; :func:`adapt_again` then
    reproduces the run.
    """
    from fsxlt.models.model import quiet_transformers
    from fsxlt.sampling.store import read_bucket
    from fsxlt.tasks import get_task
    from fsxlt.training import AdaptEngine

    record = read_json(record_path)
    if not isinstance(record, dict) or record.get("format") != "fsxlt-adapt-run/1":
        raise FsxltError(f"{record_path}: not an adapt run record (run fsxlt adapt first)")
    task = get_task(record["task"])
    if task.kind != "classification":
        raise FsxltError(f"the attention analysis is for classification; {task.name} is "
                         f"{task.kind}")
    start = start or (record["model"]["start"] or {}).get("path") or record["model"]["encoder"]
    bucket_path = Path(record["bucket"].get("path") or "")
    if not bucket_path.is_file():
        raise FsxltError(f"bucket file {bucket_path} of {record_path} not found")
    bucket = read_bucket(bucket_path)
    if bucket.sha256 != record["bucket"]["sha256"]:
        raise FsxltError(f"{bucket_path}: changed since the run (bucket hash differs)")
    data = record.get("data") or {}
    dev_examples = _examples((data.get("dev") or {}).get("source"), data.get("dev"), task,
                             "dev", dev, record["language"])
    test_examples = _examples((data.get("test") or {}).get("source"), data.get("test"), task,
                              "test", test, record["language"])
    quiet_transformers()
    engine = AdaptEngine.from_start(task, record["language"], start, dev=dev_examples,
                                    test=test_examples, seed=record["seed"], device=device,
                                    max_seq_length=record.get("max_seq_length"))
    if engine.start.info["id"] != record["model"]["start"]["id"]:
        raise FsxltError(f"{start} is not the start the run used ({record['model']['start']})")
    return Rerun(engine, record, bucket, test_examples)


def adapt_again(rerun: Rerun) -> dict[str, Any]:
    """Re-run the record's selected learning rate; the engine then holds the adapted model."""
    record = rerun.record
    again = rerun.engine.adapt(rerun.bucket, method=record["method"], lrs=[record["selected_lr"]],
                         seed=record["seed"], max_epochs=record["max_epochs"],
                         patience=record["patience"])
    if (again["best_epoch"] != record["best_epoch"]
            or abs(again["dev_score"] - record["dev_score"]) > 1e-9):
        raise FsxltError(f"could not reproduce the run: best epoch {again['best_epoch']} / dev "
                         f"{again['dev_score']:.6f} vs. recorded {record['best_epoch']} / "
                         f"{record['dev_score']:.6f} (adapt on CPU for exact reruns)")
    return again


def attention_analysis(record_path: str | Path, *, start: str | None = None,
                       dev: Path | None = None, test: Path | None = None,
                       device: str | None = "cpu") -> ShiftResult:
    """Reproduce a run and measure the [CLS] attention shift on changed test predictions."""
    from fsxlt.models.prediction import predict_labels

    rerun = rerun_record(record_path, start=start, dev=dev, test=test, device=device)
    engine, examples = rerun.engine, rerun.test
    labels = engine.task.labels
    before_labels = predict_labels(engine.model, engine.test, labels)
    before = cls_attention(engine.model, engine.featurizer, examples, engine.device)
    adapt_again(rerun)
    after_labels = predict_labels(engine.model, engine.test, labels)
    after = cls_attention(engine.model, engine.featurizer, examples, engine.device)
    changed = [a != b for a, b in zip(before_labels, after_labels, strict=True)]
    record = rerun.record
    run = f"{record['task']}-{record['language']}-k{record['k']}-{record['method']}-" \
          f"{rerun.bucket.index:02d}"
    return ShiftResult(attention_shift(before, after, changed), sum(changed), len(changed), run)
