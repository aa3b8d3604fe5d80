"""The training-regime peer's recipe (fdschmidt93/fsxlt at 361e0b2, under trident-xtreme/),
each piece against the peer's own code, cited by file and line. The peer needs Lightning,
trident and transformers 4.17, which do not install here; the reference computations
below are written from those files.

- the optimizer: transformers 4.17.0's ``AdamW`` (``adamw.yaml`` line 1;
  ``transformers/optimization.py`` lines 359-380), fsxlt's ``transformers-adamw``;
- the warm-up: 0.1 x the training steps, kept fractional (``trident/core/mixins/
  optimizer.py`` lines 74-77), fsxlt's ``fractional_warmup``;
- the target loader restarting every epoch (Lightning's loaders), ``target_restart``;
- the head: dropout and a linear layer on the [CLS] state, no pooler
  (``src/modules/modeling/auto_models.py`` lines 52-54), fsxlt's ``--head cls``.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch
from transformers import get_linear_schedule_with_warmup

from fsxlt.cli import run_app
from fsxlt.errors import FsxltError
from fsxlt.models.model import build_model
from fsxlt.tasks import get_task
from fsxlt.training import load_start
from fsxlt.training.optim import (
    PEER,
    OptimizerSettings,
    build_optimizer,
    decays,
    make_schedule,
)
from fsxlt.training.regimes import JointMixer, Regime
from tests.train_fixtures import make_encoder_dir, nli_data, write_bucket_set, write_pairs

NLI = ["entailment", "neutral", "contradiction"]


@pytest.fixture(scope="module")
def encoder(tmp_path_factory) -> Path:
    return make_encoder_dir(tmp_path_factory.mktemp("enc") / "tiny")


def _steps(model, optimizer, batches) -> list[dict[str, np.ndarray]]:
    """Train ``model`` on ``batches`` one optimizer step each; every step's gradients."""
    grads = []
    model.train()
    torch.manual_seed(0)
    for batch in batches:
        optimizer.zero_grad()
        loss = model.head(model.encode(batch)).logsumexp(-1).mean()
        loss.backward()
        grads.append({n: p.grad.detach().double().numpy().copy()
                      for n, p in model.named_parameters() if p.grad is not None})
        optimizer.step()
    return grads


def _batches(tokenizer, n: int = 9) -> list[dict[str, torch.Tensor]]:
    examples = nli_data(2 * n, seed=5)
    return [dict(tokenizer([e.text_a for e in examples[2 * i:2 * i + 2]],
                           [e.text_b for e in examples[2 * i:2 * i + 2]],
                           padding=True, return_tensors="pt")) for i in range(n)]


def _reference(start: dict[str, np.ndarray], grads: list[dict[str, np.ndarray]], lr: float,
               decay: float, eps: float = 1e-8, betas=(0.9, 0.999)) -> dict[str, np.ndarray]:
    """transformers 4.17.0 optimization.py lines 359-380, in float64, parameter by
    parameter: the moments; denominator sqrt(v) + eps; step size lr * sqrt(1 - b2^t) /
    (1 - b1^t); the update; then decay on the updated weights."""
    params = {n: v.copy() for n, v in start.items()}
    m = {n: np.zeros_like(v) for n, v in start.items()}
    v = {n: np.zeros_like(x) for n, x in start.items()}
    for t, step_grads in enumerate(grads, start=1):
        for name, grad in step_grads.items():
            m[name] = betas[0] * m[name] + (1 - betas[0]) * grad
            v[name] = betas[1] * v[name] + (1 - betas[1]) * grad * grad
            size = lr * np.sqrt(1 - betas[1] ** t) / (1 - betas[0] ** t)
            params[name] = params[name] - size * m[name] / (np.sqrt(v[name]) + eps)
            if decays(name) and decay > 0:
                params[name] = params[name] - lr * decay * params[name]
    return params


def test_transformers_adamw_is_the_4_17_update_step_by_step(encoder):
    task = get_task("xnli")
    runs = {}
    for name in ("transformers-adamw", "adamw"):
        start = load_start(str(encoder), task, seed=0)
        model, batches = start.model, _batches(start.tokenizer)
        before = {n: p.detach().double().numpy().copy() for n, p in model.named_parameters()}
        optimizer = build_optimizer(model, 1e-3, OptimizerSettings(name, 0.05))
        grads = _steps(model, optimizer, batches)
        runs[name] = ({n: p.detach().double().numpy() for n, p in model.named_parameters()},
                      _reference(before, grads, 1e-3, 0.05))
    ours, reference = runs["transformers-adamw"]
    worst = max(np.abs(ours[n] - reference[n]).max() for n in reference)
    assert worst < 5e-6  # float32 steps against float64 ones, nine of them
    torch_params = runs["adamw"][0]
    apart = max(np.abs(torch_params[n] - ours[n]).max() for n in ours)
    assert apart > 1e-4  # torch's AdamW is another rule (eps after the correction)


def test_the_peer_s_warmup_is_fractional():
    """25 steps, warm-up 0.1: trident passes 2.5 to transformers' linear schedule."""
    def lrs(settings: OptimizerSettings) -> list[float]:
        optimizer = torch.optim.SGD([torch.nn.Parameter(torch.zeros(1))], lr=1.0)
        schedule = make_schedule(optimizer, settings, 25)
        out = []
        for _ in range(25):
            out.append(optimizer.param_groups[0]["lr"])
            optimizer.step()
            schedule.step()
        return out

    peer = lrs(PEER)
    assert peer[:4] == pytest.approx([0.0, 0.4, 0.8, 22 / 22.5])
    optimizer = torch.optim.SGD([torch.nn.Parameter(torch.zeros(1))], lr=1.0)
    reference = get_linear_schedule_with_warmup(optimizer, 2.5, 25)
    assert peer == pytest.approx([reference.lr_lambdas[0](step) for step in range(25)])
    rounded = lrs(OptimizerSettings("adamw", 0.05, 0.1, "linear"))
    assert rounded[:3] == pytest.approx([0.0, 0.5, 1.0])  # round(2.5) = 2 whole steps


def test_the_target_pass_restarts_every_epoch_only_when_asked():
    source, bucket = list(range(100, 108)), list(range(5))  # K = 5, batches of 2

    def epochs(restart: bool) -> list[list[int]]:
        regime = Regime("joint-macro", batch_size=2, target_batch_size=2,
                        epoch="source-pass", target_restart=restart)
        mixer = JointMixer(regime, source, bucket, seed=3, units=len)
        return [[row for step in mixer.epoch() for row in step[1][0]] for _ in range(3)]

    carried, restarted = epochs(False), epochs(True)
    assert carried[0] == restarted[0]  # the first epoch is the same
    for rows in restarted:  # 4 steps of 2: a whole pass (2 + 2 + 1), then a new one begins
        assert sorted(rows[:5]) == bucket and len(rows) == 7
    assert sorted(carried[1][:5]) != bucket  # carried on: epoch 2 ends the open pass first
    assert Regime("joint-macro", target_restart=True).changes()["target_restart"] is True
    assert "target_restart" not in Regime("joint-macro").changes()  # 0.4's identities
    with pytest.raises(FsxltError, match="target_restart must be true or false"):
        Regime("mixup", target_restart="yes")


def test_the_cls_head_is_dropout_and_a_linear_layer_on_the_cls_state(encoder):
    start = load_start(str(encoder), get_task("xnli"), seed=0, head="cls")
    model = start.model
    assert model.pooler is None and not any(n.startswith("pooler.") for n in
                                            model.head_state_dict())
    batch = _batches(start.tokenizer, 1)[0]
    model.eval()
    with torch.no_grad():
        cls = model.encoder(**batch).last_hidden_state[:, 0]
        assert torch.allclose(model(batch), model.classifier(cls), atol=1e-6)
    with pytest.raises(FsxltError, match="for classification and multiple-choice tasks"):
        build_model(model.encoder, get_task("panx"), head="cls")


def test_source_train_keeps_the_cls_head_and_adapting_uses_it(encoder, tmp_path, capsys):
    train = write_pairs(tmp_path / "train-en.tsv", nli_data(12, seed=1))
    dev = write_pairs(tmp_path / "dev-en.tsv", nli_data(6, seed=2))
    ckpt = tmp_path / "ckpt"
    assert run_app(["source-train", "--task", "xnli", "--train", str(train), "--dev", str(dev),
                    "--model", str(encoder), "--lr", "1e-3", "--epochs", "1", "--head", "cls",
                    "--device", "cpu", "--out", str(ckpt)]) == 0
    record = json.loads((ckpt / "fsxlt_checkpoint.json").read_text(encoding="utf-8"))
    assert record["head"] == "cls"
    assert load_start(str(ckpt), get_task("xnli")).model.pooler is None
    bucket = write_bucket_set(tmp_path / "b", "xnli", "de", 1, [nli_data(3, seed=4)], NLI)
    target_dev = write_pairs(tmp_path / "dev-de.tsv", nli_data(6, seed=6))
    args = ["adapt", "--task", "xnli", "--lang", "de", "--bucket", str(bucket), "--from",
            str(ckpt), "--dev", str(target_dev), "--no-test", "--lr", "1e-3",
            "--max-epochs", "1", "--device", "cpu", "--out", str(tmp_path / "runs")]
    assert run_app(args) == 0
    adapted = json.loads(next((tmp_path / "runs").rglob("00.json")).read_text())
    assert adapted["model"]["start"]["head"] == "cls"
    capsys.readouterr()
    assert run_app([*args, "--method", "fc-pooler"]) == 2  # refused before anything runs
    err = capsys.readouterr().err
    assert "method fc-pooler trains the pooler" in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "runs" / "xnli" / "de" / "k1" / "fc-pooler").exists()
    assert run_app(["source-train", "--task", "panx", "--train", str(train), "--head", "cls",
                    "--out", str(tmp_path / "x")]) == 2
    assert "--head cls is for classification" in capsys.readouterr().err
