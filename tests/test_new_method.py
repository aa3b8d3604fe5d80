"""A new method is one class: defined here, registered as a plug-in, and run through
source-training, ``fsxlt evaluate``, ``fsxlt select``, ``fsxlt adapt``, a sweep,
``fsxlt report`` and the bucket features without any change in ``fsxlt/``.

It also checks the one room that loads a start and scores it the way it was
trained (:mod:`fsxlt.training.starts`): a start source-trained with such a
method, or with ``pet``, gives evaluation, shot selection and the bucket
features the scores of its own head, not those of the untrained classifier
every checkpoint also carries.
"""

from __future__ import annotations

import json
import sys
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
import yaml
from torch import nn

from fsxlt.cli import run_app
from fsxlt.errors import FsxltError
from fsxlt.methods import Method, Option, get_method, method_label
from fsxlt.models.encoding import Featurizer
from fsxlt.models.prediction import example_signals, make_eval_set, prepare_eval
from fsxlt.tasks import get_task
from fsxlt.training import load_start, save_checkpoint, source_train
from fsxlt.training.starts import open_start, trained_method
from tests.train_fixtures import make_encoder_dir, make_mlm_encoder_dir, nli_data, write_pairs

PROBE_REF = "tests.test_new_method:ClsProbe"


class Probe(nn.Module):
    """``scale * W tanh(V h)`` on the [CLS] state: a head of the method's own (seeded)."""

    def __init__(self, hidden: int, labels: int, seed: int):
        super().__init__()
        self.dense = nn.Linear(hidden, hidden)
        self.out = nn.Linear(hidden, labels)
        generator = torch.Generator().manual_seed(seed)
        with torch.no_grad():
            for layer in (self.dense, self.out):
                layer.weight.copy_(torch.randn(layer.weight.shape, generator=generator) * 0.1)
                layer.bias.zero_()
        self.scale = 1.0

    def forward(self, states: torch.Tensor) -> torch.Tensor:
        return self.scale * self.out(torch.tanh(self.dense(states)))


class ClsProbe(Method):
    """Full fine-tuning through a probe of its own on the [CLS] state (the classifier and
    pooler stay untouched), saved with a source-trained checkpoint."""

    name = "cls-probe"
    label = "CLS probe"
    summary = "full fine-tuning through its own probe on the [CLS] state (a test method)"
    kinds = ("classification",)
    options = (Option("scale", float, 1.0, "multiplies the probe's logits"),)
    source_trains = True
    saved_modules = ("probe",)

    def validate(self) -> None:
        if self.scale <= 0:
            raise FsxltError("method cls-probe: scale must be > 0")

    def bind(self, task: Any, language: str, tokenizer: Any, start_info: dict[str, Any]) -> None:
        self.saved = start_info.get("probe")

    def encode(self, featurizer: Any, examples: Any) -> Any:
        encoded = featurizer.encode(examples, windows=True)
        for row in encoded.rows:
            row.positions = [0]  # the probe reads the [CLS] state
        return encoded

    def prepare(self, model: Any, seed: int) -> None:
        if getattr(model, "probe", None) is None:
            model.probe = Probe(model.hidden_size, model.num_labels, seed)
            if self.saved:
                model.probe.load_state_dict(self.saved)
            model.probe.to(next(model.encoder.parameters()).device)
            model.probe_initial = {k: v.detach().clone()
                                   for k, v in model.probe.state_dict().items()}
        else:
            model.probe.load_state_dict(model.probe_initial)
        model.probe.scale = self.scale
        model.output_head = model.probe
        for pname, param in model.named_parameters():
            param.requires_grad_(pname.startswith(("encoder.", "probe.")))

    def teardown(self, model: Any) -> None:
        model.output_head = None


@pytest.fixture(scope="module")
def registered(tmp_path_factory):
    """``cls-probe`` installed the way ``pip install`` registers a plug-in (an entry point)."""
    site = tmp_path_factory.mktemp("site")
    dist = site / "fsxlt_cls_probe-0.1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: fsxlt-cls-probe\n"
                                   "Version: 0.1.0\n")
    (dist / "entry_points.txt").write_text(f"[fsxlt.methods]\ncls-probe = {PROBE_REF}\n")
    with pytest.MonkeyPatch.context() as patch:
        patch.syspath_prepend(str(site))
        yield
    sys.modules.pop("fsxlt_cls_probe", None)


@pytest.fixture(scope="module")
def probe_study(tmp_path_factory, registered):
    """XNLI-shaped toy data, a tiny encoder and a checkpoint source-trained with cls-probe."""
    root = tmp_path_factory.mktemp("probe")
    data = root / "data"
    for name, (n, seed) in {"train-en": (36, 1), "dev-en": (9, 2), "dev-de": (30, 3),
                            "test-de": (12, 4)}.items():
        write_pairs(data / f"{name}.tsv", nli_data(n, seed=seed, source=name))
    encoder = make_encoder_dir(root / "encoder")
    assert run_app(["source-train", "--task", "xnli", "--model", str(encoder), "--data-dir",
                    str(data), "--target", "de", "--method", "cls-probe", "--lr", "1e-2",
                    "--epochs", "2", "--device", "cpu", "--out", str(root / "ckpt")]) == 0
    return {"root": root, "data": data, "checkpoint": root / "ckpt"}


def _entropy(logits: torch.Tensor) -> np.ndarray:
    log_p = logits.float().log_softmax(dim=-1)
    return (-(log_p.exp() * log_p).sum(dim=-1)).numpy()


# --------------------------------------------------------------------------- the new method

def test_the_checkpoint_records_and_saves_the_method_and_is_scored_through_it(probe_study,
                                                                             tmp_path):
    checkpoint = probe_study["checkpoint"]
    record = json.loads((checkpoint / "fsxlt_checkpoint.json").read_text())
    assert record["method"] == {"name": "cls-probe", "version": "1",
                                "options": {"scale": 1.0}}
    start = load_start(checkpoint, "xnli")
    assert set(start.extra) == {"probe"}  # what the method saved, by its module's name
    assert type(trained_method(start, get_task("xnli"))) is ClsProbe
    out = tmp_path / "zero-shot.json"
    assert run_app(["evaluate", str(checkpoint), "--task", "xnli", "--lang", "de",
                    "--data-dir", str(probe_study["data"]), "--device", "cpu",
                    "--out", str(out)]) == 0
    # fsxlt evaluate reproduces the source run's zero-shot score: the probe scored it
    zero_shot = record["zero_shot"]["de"]["score"]
    assert json.loads(out.read_text())["scores"]["score"] == pytest.approx(zero_shot)
    # the checkpoint's linear classifier, which cls-probe never trained, reads otherwise
    examples = nli_data(12, seed=4)
    untrained = example_signals(start.model, prepare_eval(Featurizer(start.tokenizer,
                                                                     get_task("xnli")),
                                                          examples))[1]
    trained = open_start(checkpoint, "xnli", device="cpu").signals(examples)[1]
    assert not np.allclose(untrained, trained, atol=1e-4)


def test_select_reads_the_probe_not_the_untrained_classifier(probe_study):
    from fsxlt.sampling.select import compute_signals
    from fsxlt.training.starts import pool_signals

    root, data, checkpoint = (probe_study[k] for k in ("root", "data", "checkpoint"))
    assert run_app(["select", "--task", "xnli", "--lang", "de", "--data-dir", str(data),
                    "--from", str(checkpoint), "-s", "random", "-s", "uncertain", "-k", "1",
                    "--n-pools", "2", "--pool-size", "12", "--out", str(root / "buckets"),
                    "--device", "cpu"]) == 0
    assert (root / "buckets" / "uncertain" / "xnli" / "de" / "k1").is_dir()
    examples = nli_data(8, seed=9)
    signals = compute_signals(checkpoint, get_task("xnli"), examples, read=pool_signals,
                              device="cpu")
    opened = open_start(checkpoint, "xnli", device="cpu")
    eval_set = opened.eval_set(examples)
    with torch.no_grad():
        logits = torch.cat([opened.model.eval()(batch) for batch in eval_set.batches])
    order = np.argsort([eval_set.encoded.rows[i].example
                        for rows in eval_set.batch_rows for i in rows])
    assert np.allclose(signals.uncertainty, _entropy(logits)[order], atol=1e-5)


def test_adapt_sweep_report_and_bucket_features_run_the_new_method(probe_study, tmp_path,
                                                                  capsys):
    root, data, checkpoint = (probe_study[k] for k in ("root", "data", "checkpoint"))
    buckets = root / "buckets" / "random"
    if not buckets.is_dir():
        assert run_app(["select", "--task", "xnli", "--lang", "de", "--data-dir", str(data),
                        "-s", "random", "-k", "1", "--n-pools", "2", "--pool-size", "12",
                        "--out", str(root / "buckets")]) == 0
    runs = tmp_path / "runs"
    assert run_app(["adapt", "--task", "xnli", "--lang", "de",
                    "--bucket", str(buckets / "xnli" / "de" / "k1" / "00.json"),
                    "--from", str(checkpoint), "--data-dir", str(data), "--method",
                    "cls-probe", "--method-opt", "scale=2", "--out", str(tmp_path / "one"),
                    "--device", "cpu", "--max-epochs", "2", "--lr", "0.01"]) == 0
    adapted = [json.loads(p.read_text()) for p in (tmp_path / "one").rglob("00.json")]
    assert [r["method_info"]["options"] for r in adapted] == [{"scale": 2.0}]
    config = {"name": "probe", "out": str(runs), "buckets": str(buckets),
              "data_dir": str(data), "start": str(checkpoint),
              "methods": ["full", "cls-probe"], "n_buckets": 2, "lrs": [1e-2],
              "max_epochs": 2, "patience": 1, "tasks": {"xnli": {"languages": ["de"],
                                                                  "k": [1]}}}
    path = tmp_path / "sweep.yaml"
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    assert run_app(["sweep", str(path), "--workers", "0", "--device", "cpu"]) == 0
    records = sorted(runs.rglob("*.json"))
    assert {json.loads(p.read_text())["method"] for p in records
            if "zero-shot" not in p.name} >= {"full", "cls-probe"}
    capsys.readouterr()
    assert run_app(["report", str(runs)]) == 0
    assert method_label("cls-probe") == "CLS probe"
    assert "CLS probe" in capsys.readouterr().out
    from fsxlt.analysis.bucket_features import feature_table

    table = feature_table(runs, device="cpu")
    assert len(table) == 2 and table["model_entropy"].between(0, np.log(3)).all()


def test_a_method_that_does_not_source_train_is_refused_by_source_train(tmp_path, capsys):
    assert run_app(["source-train", "--task", "xnli", "--out", str(tmp_path / "c"),
                    "--method", "fc"]) == 2
    assert "full or pet" in capsys.readouterr().err


# --------------------------------------------------------------------------- pet

@pytest.fixture(scope="module")
def pet_start(tmp_path_factory):
    """A checkpoint source-trained with pet on a toy task whose verbalizer is in the tiny
    vocabulary, and the task."""
    root = tmp_path_factory.mktemp("pet")
    raw = yaml.safe_load(resources.files("fsxlt").joinpath("configs", "xnli.yaml").read_text())
    raw["name"] = "toy-nli-pet"
    raw["pet"] = {"pattern": "{text_a} ? {mask} , {text_b}",
                  "verbalizers": {"en": {"entailment": "happy", "neutral": "big",
                                         "contradiction": "not"}}}
    (root / "toy.yaml").write_text(yaml.safe_dump(raw))
    task = get_task(str(root / "toy.yaml"))
    encoder = make_mlm_encoder_dir(root / "encoder")
    result = source_train(task, nli_data(36, seed=1), nli_data(9, seed=2),
                          model_name=str(encoder), lrs=[5e-3], epochs=2, batch_size=12,
                          seed=5, device="cpu", method="pet")
    return save_checkpoint(root / "ckpt", result.model, result.tokenizer, result.record), task


def _pet_entropy(checkpoint: Path, task: Any, examples: list) -> np.ndarray:
    """Entropy of the PET scores, worked out through the method's own hooks."""
    start = load_start(checkpoint, task)
    pet = get_method("pet", task.kind)
    pet.bind(task, "en", start.tokenizer, dict(start.info, **start.extra))
    pet.prepare(start.model, seed=0)
    encoded = pet.encode(Featurizer(start.tokenizer, task), examples)
    eval_set = make_eval_set(encoded, start.tokenizer.pad_token_id)
    out = np.zeros(len(examples))
    with torch.no_grad():
        for batch, rows in zip(eval_set.batches, eval_set.batch_rows, strict=True):
            out[[encoded.rows[i].example for i in rows]] = _entropy(start.model.eval()(batch))
    return out


def test_a_pet_trained_start_gives_select_and_bucket_features_pets_scores(pet_start):
    from fsxlt.analysis.bucket_features import _Model
    from fsxlt.sampling.select import compute_signals
    from fsxlt.training.starts import pool_signals

    checkpoint, task = pet_start
    examples = nli_data(10, seed=11)
    expected = _pet_entropy(checkpoint, task, examples)
    selected = compute_signals(checkpoint, task, examples, read=pool_signals, device="cpu")
    # near log(3) after two short epochs, so compared to float precision
    assert np.allclose(selected.uncertainty, expected, rtol=0, atol=1e-6)
    features = _Model(str(checkpoint), task, "cpu").signals(examples)
    assert np.allclose(features[1], expected, rtol=0, atol=1e-6)
    # what both read before: the checkpoint's classifier head, which pet never trained
    plain = load_start(checkpoint, task)
    untrained = example_signals(plain.model, prepare_eval(Featurizer(plain.tokenizer, task),
                                                          examples))[1]
    assert np.abs(untrained - expected).max() > 1e-4
