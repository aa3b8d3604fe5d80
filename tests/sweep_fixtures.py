"""A tiny but complete study for sweep and report tests.

XNLI-shaped toy data (tests.train_fixtures), two target languages (de, fr),
K in {1, 2}, five buckets each (with the remaining dev set beside them), a
source-trained tiny-BERT checkpoint holding both zero-shot scores, and a
sweep config over all of it with one learning rate and three epochs.
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import yaml

from tests.train_fixtures import (
    NLI_LABELS,
    make_encoder_dir,
    nli_data,
    write_bucket_set,
    write_pairs,
)

LANGS = ("de", "fr")
KS = (1, 2)
N_BUCKETS = 5


def build_study(root: Path) -> dict[str, Path]:
    """Write encoder, checkpoint, buckets and test files under ``root``; return their paths."""
    from fsxlt.sampling.set_files import read_data_file
    from fsxlt.tasks import get_task
    from fsxlt.training import save_checkpoint, source_train

    root = Path(root)
    encoder = make_encoder_dir(root / "encoder")
    tests = {lang: nli_data(12, seed=40 + i, source=f"test-{lang}")
             for i, lang in enumerate(LANGS)}
    data = root / "data"
    for lang, examples in tests.items():
        write_pairs(data / f"test-{lang}.tsv", examples)
    # scored as a sweep reads them (the same ids): the checkpoint's K=0 scores are the runs'
    tests = {lang: read_data_file(data / f"test-{lang}.tsv", get_task("xnli"), lang)
             for lang in tests}
    result = source_train("xnli", nli_data(48, seed=1), nli_data(9, seed=2),
                          model_name=str(encoder), target_test=tests, lrs=[3e-3], epochs=3,
                          batch_size=12, seed=5, device="cpu")
    checkpoint = save_checkpoint(root / "ckpt", result.model, result.tokenizer, result.record)
    buckets = root / "buckets"
    for i, lang in enumerate(LANGS):
        for k in KS:
            pool = nli_data(3 * k * N_BUCKETS + 9, seed=100 * i + k, source=f"dev-{lang}")
            by_label = {label: [e for e in pool if e.label == label] for label in NLI_LABELS}
            rng = random.Random(k)
            for items in by_label.values():
                rng.shuffle(items)
            sets = [[ex for label in NLI_LABELS for ex in by_label[label][b * k:(b + 1) * k]]
                    for b in range(N_BUCKETS)]
            used = {ex.id for bucket in sets for ex in bucket}
            write_bucket_set(buckets, "xnli", lang, k, sets, list(NLI_LABELS),
                             dev_remaining=[e for e in pool if e.id not in used])
    return {"root": root, "encoder": encoder, "checkpoint": checkpoint, "buckets": buckets,
            "data": data}


def sweep_config(study: dict[str, Path], out: Path, **extra: Any) -> dict[str, Any]:
    """The sweep config (a mapping) over the study, records into ``out``."""
    config: dict[str, Any] = {
        "name": "test-sweep", "out": str(out), "buckets": str(study["buckets"]),
        "data_dir": str(study["data"]), "start": str(study["checkpoint"]),
        "methods": ["full"], "lrs": [1e-2], "max_epochs": 3, "patience": 2,
        "tasks": {"xnli": {"languages": list(LANGS), "k": list(KS)}},
    }
    config.update(extra)
    return config


def adapt_record(lang: str, k: int, arm: str, index: int, score: float) -> dict[str, Any]:
    """A finished xnli adapt record of ``arm`` on bucket ``index``, scoring ``score`` on dev
    and test: what the report's statistics read, written without running a model."""
    return {"format": "fsxlt-adapt-run/1", "status": "ok", "task": "xnli", "language": lang,
            "k": k, "method": arm, "metric": "accuracy",
            "bucket": {"id": f"xnli/{lang}/k{k}/{index:02d}", "index": index, "k": k},
            "model": {"source_training": True}, "selected_lr": 1e-5,
            "runs": [{"lr": 1e-5, "epochs": [{"epoch": 1, "dev_score": score}]}],
            "best_epoch": 1, "dev_score": score, "test_score": score,
            "sweep": {"config_hash": "sweep:test", "arm": arm}}


def write_config(path: Path, config: dict[str, Any]) -> Path:
    path.write_text(yaml.safe_dump(config, sort_keys=True), encoding="utf-8")
    return path


# The smallest demo config: one task, two targets, two buckets (about 10 s on a CPU).
MICRO_DEMO = """\
name: micro
seed: 0
languages: [svo80, sov20]
tasks:
  synth-topic: {k: [1]}
n_buckets: 2
data:
  sizes: {train: 200, dev: 40, test: 60}
  corpus_sentences: 500
encoder: {steps: 20}
source: {lrs: [0.001], epochs: 2, batch_size: 32}
adapt: {lrs: [0.001], max_epochs: 3, patience: 2}
workers: 0
threads: 1
"""


def ray_or_fail() -> Any:
    """The ``ray`` module; a missing Ray fails the test (CI installs the extra), unless
    ``FSXLT_ALLOW_NO_RAY=1`` asks for a skip."""
    import os

    import pytest

    try:
        import ray
    except ImportError:
        if os.environ.get("FSXLT_ALLOW_NO_RAY") == "1":
            pytest.skip("FSXLT_ALLOW_NO_RAY=1 and Ray is not installed")
        raise AssertionError("Ray is not installed: pip install -e '.[test,ray]' "
                             "(or set FSXLT_ALLOW_NO_RAY=1 to skip this test)") from None
    return ray
