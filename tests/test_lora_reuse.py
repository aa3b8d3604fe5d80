"""LoRA without re-wrapping: the engine keeps the peft-wrapped encoder between LoRA runs.

Every run must start from, and end with, exactly what the old path (unwrap
after every run, wrap again before the next) gives: the same starting
weights (adapters, base and head) and the same records, bit for bit on the
CPU, with other methods' runs in between seeing the plain encoder.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import torch

from fsxlt.models import lora as lora_module
from fsxlt.training import AdaptEngine, strip_timings
from fsxlt.training.loop import snapshot
from tests.train_fixtures import make_encoder_dir, nli_data

# (method, options, seed, lr): LoRA runs of several seeds and lrs, a full run between
# them, then other LoRA options (a re-wrap) and a second run of those
RUNS: list[tuple[str, dict[str, Any] | None, int, float]] = [
    ("lora", {"rank": 2}, 0, 0.05),
    ("lora", {"rank": 2}, 1, 0.02),
    ("full", None, 2, 0.01),
    ("lora", {"rank": 2}, 3, 0.05),
    ("lora", {"rank": 2}, 3, 0.1),
    ("lora", {"rank": 4, "dropout": 0.0}, 4, 0.05),
    ("lora", {"rank": 4, "dropout": 0.0}, 5, 0.05),
]


@pytest.fixture(scope="module")
def encoder(tmp_path_factory) -> Path:
    return make_encoder_dir(tmp_path_factory.mktemp("lora-reuse") / "encoder")


def make_engine(encoder: Path, keep: bool) -> AdaptEngine:
    engine = AdaptEngine.from_start("xnli", "de", str(encoder), dev=nli_data(12, seed=3),
                                    test=nli_data(15, seed=4), device="cpu")
    engine._keep_method_changes = keep
    return engine


def record_starts(engine: AdaptEngine) -> list[dict[str, torch.Tensor]]:
    """Every run's starting weights (all of them, as the method prepared the model)."""
    starts: list[dict[str, torch.Tensor]] = []
    reset = engine._reset

    def reset_and_record(method: Any, seed: int) -> list[str]:
        trainable = reset(method, seed)
        starts.append(snapshot(engine.model))
        return trainable

    engine._reset = reset_and_record  # type: ignore[method-assign]
    return starts


def run_all(encoder: Path, keep: bool) -> tuple[list[dict], list[dict[str, torch.Tensor]],
                                                list[torch.nn.Module]]:
    """The records, starting weights and encoder (module) after each of RUNS, one engine."""
    engine = make_engine(encoder, keep)
    starts = record_starts(engine)
    records, encoders = [], []
    for index, (method, options, seed, lr) in enumerate(RUNS):
        records.append(strip_timings(engine.adapt(
            nli_data(6, seed=20 + index), method=method, method_options=options, lrs=[lr],
            seed=seed, max_epochs=3, patience=2)))
        encoders.append(engine.model.encoder)  # kept alive: no reused ids
        if method != "lora":  # another method sees the plain encoder, no adapter in it
            assert not hasattr(engine.model.encoder, "peft_config")
            assert not any("lora_" in name for name in engine.model.state_dict())
    return records, starts, encoders


def differences(old: tuple, new: tuple) -> list[str]:
    """Where the kept path's runs differ from the re-wrapping path's (empty: identical)."""
    found = []
    for index, (a, b) in enumerate(zip(old[0], new[0], strict=True)):
        if a != b:
            found.append(f"run {index}: records differ")
    for index, (a, b) in enumerate(zip(old[1], new[1], strict=True)):
        if a.keys() != b.keys() or any(not torch.equal(a[k], b[k]) for k in a):
            found.append(f"run {index}: starting weights differ")
    return found


@pytest.fixture(scope="module")
def rewrapped(encoder: Path) -> tuple:
    return run_all(encoder, keep=False)


@pytest.fixture(scope="module")
def kept(encoder: Path) -> tuple:
    return run_all(encoder, keep=True)


def test_kept_wrapper_gives_the_records_and_starts_of_rewrapping(rewrapped, kept):
    assert differences(rewrapped, kept) == []
    lora_starts = [start for start in kept[1] if any("lora_A" in k for k in start)]
    assert len(lora_starts) == 6
    # the adapters really start anew: seeds 0 and 1 draw different A matrices, B is zero
    a_names = [k for k in lora_starts[0] if "lora_A" in k]
    assert not torch.equal(lora_starts[0][a_names[0]], lora_starts[1][a_names[0]])
    assert all(not v.any() for k, v in lora_starts[1].items() if "lora_B" in k)
    assert all(record["runs"][0]["epochs"] for record in kept[0])


def test_the_wrapper_is_kept_only_between_lora_runs_of_the_same_options(rewrapped, kept):
    encoders = kept[2]
    assert encoders[0] is encoders[1]  # the same wrapped encoder: no re-wrap
    assert encoders[3] is encoders[4]
    assert encoders[2] is not encoders[1] and encoders[3] is not encoders[2]  # full: plain
    assert encoders[5] is not encoders[4]  # other options: wrapped anew
    assert encoders[5] is encoders[6]
    old = rewrapped[2]  # the old path wraps anew for every LoRA run
    assert all(old[i] is not old[i + 1] for i in range(len(old) - 1))


def test_skipping_the_adapter_reset_is_caught(encoder, rewrapped, monkeypatch):
    monkeypatch.setattr(lora_module, "reset_adapters", lambda model, seed: None)
    found = differences(rewrapped, run_all(encoder, keep=True))
    assert "run 1: starting weights differ" in found
    assert "run 1: records differ" in found


def test_reset_adapters_draws_what_a_fresh_wrap_draws(encoder):
    engine = make_engine(encoder, keep=True)
    settings = lora_module.lora_settings(
        {"rank": 3, "alpha": 8.0, "dropout": 0.1, "target_modules": ["query", "value", "dense"]})
    lora_module.wrap(engine.model, settings, seed=11)
    fresh = {k: v.clone() for k, v in engine.model.state_dict().items() if "lora_" in k}
    assert fresh and len(lora_module.adapter_layers(engine.model)) > 4
    with torch.no_grad():
        for name, param in engine.model.named_parameters():
            if "lora_" in name:
                param.add_(1.0)  # as if trained
    lora_module.reset_adapters(engine.model, seed=11)
    again = {k: v for k, v in engine.model.state_dict().items() if "lora_" in k}
    assert all(torch.equal(fresh[k], again[k]) for k in fresh)
    names = lora_module.start_names(engine.model)
    assert set(names) == {k for k in engine.start_state if k.startswith("encoder.")}
