"""``--precision``: resolution and refusals, records and identities, out of memory as a
record, and every autocast branch run under CPU bf16 against fp32.

The bf16 comparisons run the same seeded work twice, fp32 and bf16 (CPU autocast,
the code path CUDA's bf16 takes), and check two things of each: that autocast ran (the
bf16 losses are not the fp32 ones bit for bit) and that it stayed close. bf16 keeps 8
mantissa bits (a relative error of 2**-8 = 0.4% per rounding), so the tolerances are:

- a loss or log-likelihood: within ``LOSS_RTOL`` (3%) of fp32's;
- a score (0-1) on the tiny dev and test sets here (10-40 examples, a few tokens
  each, where one flipped prediction moves accuracy by 1/n): within ``SCORE_ATOL``;
- nothing bf16 leaves the forward passes: weights, snapshots and checkpoints stay
  float32, and every number in a record is a Python float or int.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
import torch

from fsxlt.cli import run_app
from fsxlt.errors import FsxltError
from fsxlt.models.precision import (
    autocast_context,
    loss_scaler,
    precision_identity,
    resolve_precision,
)
from fsxlt.training import AdaptEngine, save_checkpoint, source_train
from fsxlt.training.loop import optimizer_step
from fsxlt.training.regimes import Regime
from tests.train_fixtures import make_encoder_dir, make_mlm_encoder_dir, ner_data, nli_data

LOSS_RTOL = 0.03
SCORE_ATOL = 0.2


def numbers_are_plain(value, where="record") -> None:
    """Every number of a record is a Python int or float (no tensor, no numpy scalar)."""
    if isinstance(value, dict):
        for key, item in value.items():
            numbers_are_plain(item, f"{where}.{key}")
    elif isinstance(value, (list, tuple)):
        for i, item in enumerate(value):
            numbers_are_plain(item, f"{where}[{i}]")
    else:
        assert value is None or isinstance(value, (str, bool, int, float)), (where, type(value))


def floats_only(model) -> None:
    for name, tensor in model.state_dict().items():
        assert not tensor.is_floating_point() or tensor.dtype == torch.float32, name


def close_losses(fp32: list[float], bf16: list[float]) -> None:
    assert len(fp32) == len(bf16)
    assert fp32 != bf16, "bf16 gave fp32's losses bit for bit: autocast did not run"
    for a, b in zip(fp32, bf16, strict=True):
        assert b == pytest.approx(a, rel=LOSS_RTOL)


def first_epoch_losses(record) -> list[float]:
    return [run["epochs"][0]["train_loss"] for run in record["runs"]]


def close_records(fp32: dict, bf16: dict) -> None:
    """Two adapt records of one run in fp32 and bf16: the first epoch's loss of every lr
    (the epochs after it train from weights that have drifted apart), the test scores,
    the precisions named, the identities apart, nothing bf16 in the record."""
    assert (fp32["precision"], bf16["precision"]) == ("fp32", "bf16")
    close_losses(first_epoch_losses(fp32), first_epoch_losses(bf16))
    assert abs(fp32["test_score"] - bf16["test_score"]) <= SCORE_ATOL
    assert fp32["config_hash"] != bf16["config_hash"]
    numbers_are_plain(bf16)
    json.dumps(bf16)


# --------------------------------------------------------------------------- resolution

def test_auto_is_fp32_on_cpu_and_what_cpu_cannot_run_is_one_line():
    assert resolve_precision("auto", "cpu") == "fp32"
    assert resolve_precision("bf16", "cpu") == "bf16"
    assert resolve_precision("fp32", "cpu") == "fp32"
    with pytest.raises(FsxltError, match="fp16 runs on CUDA only"):
        resolve_precision("fp16", "cpu")
    with pytest.raises(FsxltError, match="'fp64' is not a precision; valid: auto, bf16"):
        resolve_precision("fp64", "cpu")
    assert precision_identity("fp32") == {} and precision_identity("bf16") == {
        "precision": "bf16"}


@pytest.mark.parametrize(("capability", "name", "auto", "bf16_ok"), [
    ((7, 0), "Tesla V100-SXM2-16GB", "fp32", False),
    ((7, 5), "Tesla T4", "fp32", False),
    ((8, 0), "NVIDIA A100-SXM4-80GB", "bf16", True),
    ((9, 0), "NVIDIA H200", "bf16", True)])
def test_on_cuda_auto_is_bf16_only_where_the_gpu_runs_it_natively(monkeypatch, capability,
                                                                  name, auto, bf16_ok):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "get_device_capability", lambda device=None: capability)
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda device=None: name)
    assert resolve_precision("auto", "cuda") == auto
    assert resolve_precision("fp16", "cuda") == "fp16"
    assert resolve_precision("fp32", "cuda:0") == "fp32"
    if bf16_ok:
        assert resolve_precision("bf16", "cuda") == "bf16"
    else:
        with pytest.raises(FsxltError, match=f"{name} has no native bf16"):
            resolve_precision("bf16", "cuda")


# --------------------------------------------------------------------------- fp16's scaler

def test_fp16_steps_scale_the_loss_and_skip_a_step_whose_gradients_overflow():
    """The scaler fp16 training goes through (torch's GradScaler, one per optimizer): a
    finite step updates the weights as the unscaled gradient says; an overflowing one
    leaves them as they were and halves the scale."""
    torch.manual_seed(0)
    model = torch.nn.Linear(4, 2)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    scaler = loss_scaler(optimizer, "fp16", "cpu")
    assert scaler is not None and loss_scaler(optimizer, "fp16", "cpu") is scaler
    assert loss_scaler(optimizer, "bf16", "cpu") is None
    before = model.weight.detach().clone()
    x = torch.ones(3, 4)
    scaler.scale(model(x).sum()).backward()
    expected = before - 0.1 * model.weight.grad / scaler.get_scale()
    optimizer_step(optimizer, scaler)
    torch.testing.assert_close(model.weight.detach(), expected)
    scale = scaler.get_scale()
    stepped = model.weight.detach().clone()
    scaler.scale(model(x * math.inf).sum()).backward()
    optimizer_step(optimizer, scaler)
    assert torch.equal(model.weight.detach(), stepped)
    assert scaler.get_scale() == scale / 2


# --------------------------------------------------------------------------- bf16 on CPU

@pytest.fixture(scope="module")
def encoder(tmp_path_factory):
    return str(make_encoder_dir(tmp_path_factory.mktemp("enc") / "tiny"))


@pytest.fixture(scope="module")
def source_runs(encoder, tmp_path_factory):
    """One source-training per precision, saved as checkpoints."""
    out = {}
    for precision in ("fp32", "bf16"):
        result = source_train("xnli", nli_data(48, seed=1), nli_data(12, seed=2),
                              model_name=encoder, lrs=[1e-3], epochs=2, batch_size=16,
                              seed=5, device="cpu", precision=precision,
                              target_test={"de": nli_data(20, seed=6)})
        path = save_checkpoint(tmp_path_factory.mktemp(precision) / "ckpt", result.model,
                               result.tokenizer, result.record)
        out[precision] = (result, path)
    return out


def test_source_training_in_bf16_is_close_to_fp32_and_saves_float32(source_runs):
    from safetensors.torch import load_file

    (fp32, _), (bf16, path) = source_runs["fp32"], source_runs["bf16"]
    assert (fp32.record["precision"], bf16.record["precision"]) == ("fp32", "bf16")
    close_losses([c["train_loss"] for c in fp32.record["checkpoints"]],
                 [c["train_loss"] for c in bf16.record["checkpoints"]])
    assert abs(fp32.record["zero_shot"]["de"]["score"]
               - bf16.record["zero_shot"]["de"]["score"]) <= SCORE_ATOL
    assert fp32.record["config_hash"] != bf16.record["config_hash"]
    numbers_are_plain(bf16.record)
    floats_only(bf16.model)
    for file in Path(path).glob("*.safetensors"):
        for name, tensor in load_file(file).items():
            assert tensor.dtype == torch.float32, (file.name, name)


def test_shot_selection_signals_in_bf16_are_float32_arrays_close_to_fp32(source_runs):
    """What fsxlt select reads of a model (features and entropies) leaves autocast as
    float32 numpy arrays."""
    import numpy as np

    from fsxlt.training.starts import open_start

    opened = open_start(str(source_runs["fp32"][1]), "xnli", device="cpu")
    examples = nli_data(12, seed=8)
    (v32, e32), (v16, e16) = (opened.signals(examples, precision=p) for p in ("fp32", "bf16"))
    assert v16.dtype == e16.dtype == np.float32 and v16.shape == v32.shape
    assert not np.array_equal(v16, v32)
    np.testing.assert_allclose(v16, v32, atol=0.05)
    np.testing.assert_allclose(e16, e32, rtol=LOSS_RTOL)


def engine(start: str, precision: str, task: str = "xnli", **kwargs) -> AdaptEngine:
    data = nli_data if task == "xnli" else ner_data
    return AdaptEngine.from_start(task, "de", start, dev=data(16, seed=3),
                                  test=data(20, seed=4), device="cpu", precision=precision,
                                  **kwargs)


@pytest.mark.parametrize(("method", "cache"), [
    ("full", True), ("fc", True), ("fc", False), ("fc-pooler", True), ("lora", True)])
def test_every_method_adapts_in_bf16_close_to_fp32(source_runs, method, cache):
    start = str(source_runs["fp32"][1])
    records, engines = {}, {}
    for precision in ("fp32", "bf16"):
        engines[precision] = engine(start, precision, feature_cache=cache)
        records[precision] = engines[precision].adapt(
            nli_data(6, seed=7), method=method, lrs=[1e-3, 1e-2], seed=1, max_epochs=2,
            patience=5)
    close_records(records["fp32"], records["bf16"])
    floats_only(engines["bf16"].model)
    assert all(t.dtype == torch.float32 for t in engines["bf16"].start_state.values())


def test_the_feature_cache_gives_the_uncached_path_s_bf16_results(source_runs):
    """In bf16 too the cached features are what the frozen encoder gives each epoch."""
    from fsxlt.training import strip_timings

    start = str(source_runs["fp32"][1])
    cached, uncached = (engine(start, "bf16", feature_cache=cache).adapt(
        nli_data(6, seed=7), method="fc", lrs=[1e-2], seed=1, max_epochs=3)
        for cache in (True, False))
    assert strip_timings(cached) == strip_timings(uncached)


def test_pet_adapts_in_bf16_close_to_fp32(tmp_path_factory):
    from importlib import resources

    import yaml

    from fsxlt.tasks import get_task

    raw = yaml.safe_load(resources.files("fsxlt").joinpath("configs", "xnli.yaml").read_text())
    raw["name"] = "toy-nli"
    raw["pet"] = {"pattern": "{text_a} ? {mask} , {text_b}",
                  "verbalizers": {"en": {"entailment": "happy", "neutral": "big",
                                         "contradiction": "not"}}}
    path = tmp_path_factory.mktemp("task") / "toy-nli.yaml"
    path.write_text(yaml.safe_dump(raw))
    task = get_task(str(path))
    mlm = str(make_mlm_encoder_dir(tmp_path_factory.mktemp("mlm") / "encoder"))
    records = {precision: AdaptEngine.from_start(
        task, "de", mlm, dev=nli_data(12, seed=3), test=nli_data(15, seed=4), device="cpu",
        precision=precision).adapt(nli_data(6, seed=5), method="pet", lrs=[5e-3], seed=1,
                                   max_epochs=2) for precision in ("fp32", "bf16")}
    close_records(records["fp32"], records["bf16"])


@pytest.mark.parametrize("task", ["xnli", "panx"])
def test_mixup_in_bf16_is_close_to_fp32(encoder, task):
    data = nli_data if task == "xnli" else ner_data
    records = {}
    for precision in ("fp32", "bf16"):
        adapting = engine(encoder, precision, task)
        adapting.set_source(data(20, seed=7, source="en"), train_source="train-en.tsv")
        records[precision] = adapting.adapt(
            data(4, seed=1), lrs=[1e-3], max_epochs=2, patience=5,
            regime=Regime("mixup", batch_size=4, target_batch_size=2, epoch="source-pass"))
    close_records(records["fp32"], records["bf16"])


def test_multi_in_bf16_is_close_to_fp32(encoder):
    records = {}
    for precision in ("fp32", "bf16"):
        adapting = engine(encoder, precision)
        adapting.set_source(nli_data(10, seed=7, source="en"), train_source="train-en.tsv")
        records[precision] = adapting.adapt(
            nli_data(3, seed=12), lrs=[1e-3], max_epochs=2, patience=5,
            regime=Regime("multi", batch_size=5, steps_per_epoch=2, languages=("ar",)),
            companions={"ar": nli_data(3, seed=11, source="ar")})
    close_records(records["fp32"], records["bf16"])


def test_qa_decoding_in_bf16_finds_fp32_s_answers(tmp_path):
    from fsxlt.sampling.set_files import read_data_file
    from fsxlt.tasks import get_task
    from tests.qa_fixtures import QA_EXTRA, write_xquad

    data = write_xquad(tmp_path / "data", ("de",), 12)
    examples = read_data_file(data / "xquad.de.json", get_task("xquad"), "de")
    start = str(make_encoder_dir(tmp_path / "enc", extra=QA_EXTRA))
    results = {}
    for precision in ("fp32", "bf16"):
        qa = AdaptEngine.from_start("xquad", "de", start, dev=examples[:12],
                                    test=examples[12:], device="cpu", precision=precision,
                                    max_seq_length=48)
        results[precision] = qa.adapt(examples[:4], lrs=[1e-3], max_epochs=2, patience=5,
                                      predictions=True)
    fp32, bf16 = results["fp32"], results["bf16"]
    close_records(fp32, bf16)
    assert abs(fp32["test"]["exact_match"] - bf16["test"]["exact_match"]) <= SCORE_ATOL
    assert all(isinstance(answer, str) for answer in bf16["test_predictions"])


@pytest.fixture(scope="module")
def tiny_llama(tmp_path_factory):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from tests.icl_fixtures import make_causal_lm_dir

    directory = make_causal_lm_dir(tmp_path_factory.mktemp("llama"), "llama")
    model = AutoModelForCausalLM.from_pretrained(directory, dtype=torch.float32).eval()
    return model, AutoTokenizer.from_pretrained(directory), directory


def test_generation_under_bf16_is_consistent_and_close_to_fp32(tiny_llama):
    from fsxlt.icl.generation import DecodeSettings, generate

    model, tokenizer, _ = tiny_llama
    ids = [list(tokenizer(text, add_special_tokens=False)["input_ids"]) for text in (
        "premise : the cat sat . answer : yes", "premise : dogs run . answer :",
        "premise : the cat ran . answer :")]
    settings = DecodeSettings(max_new_tokens=6, stop=("?",))
    with autocast_context("cpu", "bf16"):
        cached = generate(model, tokenizer, ids[0], ids[1:], settings, batch_size=2)
        naive = generate(model, tokenizer, ids[0], ids[1:], settings, cached=False)
        bf16 = model(torch.tensor([ids[0] + ids[1]])).logits[0, -1].float()
    assert cached == naive and all(isinstance(text, str) for text in cached)
    fp32 = model(torch.tensor([ids[0] + ids[1]])).logits[0, -1]
    assert bf16.dtype == torch.float32 and not torch.equal(bf16, fp32)
    assert torch.allclose(bf16.log_softmax(-1), fp32.log_softmax(-1), rtol=LOSS_RTOL,
                          atol=0.05)
    floats_only(model)


def test_icl_scoring_in_bf16_is_close_to_fp32_and_another_identity(tiny_llama, tmp_path,
                                                                   capsys):
    from tests.train_fixtures import write_bucket_set, write_pairs

    data = nli_data(20, 5)
    buckets = write_bucket_set(tmp_path / "buckets", "xnli", "de", 1,
                               [data[i:i + 3] for i in (0, 3)],
                               ["entailment", "neutral", "contradiction"],
                               dev_remaining=data[6:])
    test = write_pairs(tmp_path / "test-de.tsv", nli_data(10, 9))
    out = {p: tmp_path / p for p in ("fp32", "bf16")}

    def icl(where, precision, *extra):
        return run_app(["icl", "--task", "xnli", "--lang", "de", "--model", str(tiny_llama[2]),
                        "--test", str(test), "--out", str(where), "--threads", "1",
                        "--bucket", str(buckets / "00.json"), "--save-predictions",
                        "--precision", precision, *extra])

    for precision, where in out.items():
        assert icl(where, precision) == 0
    records = {p: json.loads((where / "xnli/de/k1/icl/00.json").read_text())
               for p, where in out.items()}
    assert records["bf16"]["precision"] == "bf16" and records["fp32"]["precision"] == "fp32"
    assert records["bf16"]["run"]["identity"]["precision"] == "bf16"
    assert "precision" not in records["fp32"]["run"]["identity"]
    rows = {p: [json.loads(line) for line in (where / "xnli/de/k1/icl/00.predictions.jsonl")
                .read_text().splitlines()[1:]] for p, where in out.items()}
    fp32 = [ll for row in rows["fp32"] for ll in row["loglik"].values()]
    bf16 = [ll for row in rows["bf16"] for ll in row["loglik"].values()]
    close_losses(fp32, bf16)
    capsys.readouterr()
    assert icl(out["fp32"], "bf16") != 0  # the fp32 record is not bf16's: refused, kept
    assert "(precision differ)" in capsys.readouterr().err
    assert json.loads((out["fp32"] / "xnli/de/k1/icl/00.json").read_text()) == records["fp32"]


def test_lm_adapt_in_bf16_is_close_to_fp32(tiny_llama, tmp_path):
    from tests.train_fixtures import write_bucket_set, write_pairs

    data = nli_data(24, 5)
    buckets = write_bucket_set(tmp_path / "buckets", "xnli", "de", 1, [data[0:3]],
                               ["entailment", "neutral", "contradiction"],
                               dev_remaining=data[3:])
    test = write_pairs(tmp_path / "test-de.tsv", nli_data(8, 9))
    records = {}
    for precision in ("fp32", "bf16"):
        assert run_app(["lm-adapt", "--task", "xnli", "--lang", "de", "--model",
                        str(tiny_llama[2]), "--bucket", str(buckets / "00.json"), "--test",
                        str(test), "--out", str(tmp_path / precision), "--lr", "1e-3",
                        "--max-epochs", "2", "--threads", "1", "--precision",
                        precision]) == 0
        [path] = (tmp_path / precision).glob("xnli/de/k1/*/00.json")
        records[precision] = json.loads(path.read_text())
    assert records["bf16"]["precision"] == "bf16"
    assert records["bf16"]["run"]["identity"]["precision"] == "bf16"
    close_losses([e["train_loss"] for e in records["fp32"]["runs"][0]["epochs"]][:1],
                 [e["train_loss"] for e in records["bf16"]["runs"][0]["epochs"]][:1])


# --------------------------------------------------------------------------- commands

def test_commands_refuse_what_the_device_cannot_run_in_one_line(encoder, tmp_path, capsys):
    for command in (["adapt", "--task", "xnli", "--lang", "de", "--bucket", str(tmp_path),
                     "--from", encoder, "--out", str(tmp_path / "runs")],
                    ["source-train", "--task", "xnli", "--model", encoder,
                     "--out", str(tmp_path / "ckpt")],
                    ["evaluate", encoder, "--task", "xnli", "--lang", "de"]):
        assert run_app([*command, "--device", "cpu", "--precision", "fp16"]) == 2
        err = capsys.readouterr().err
        assert "fp16 runs on CUDA only" in err and "Traceback" not in err
        assert len(err.strip().splitlines()) == 1
    assert not (tmp_path / "runs").exists() and not (tmp_path / "ckpt").exists()


@pytest.fixture(scope="module")
def study(tmp_path_factory):
    from tests.sweep_fixtures import build_study

    return build_study(tmp_path_factory.mktemp("study"))


def sweep_file(study, out: Path, where: Path, **extra) -> Path:
    from tests.sweep_fixtures import sweep_config, write_config

    config = sweep_config(study, out, n_buckets=2, max_epochs=2, **extra)
    config["tasks"] = {"xnli": {"languages": ["de"], "k": [1]}}
    return write_config(where, config)


def test_a_sweep_names_its_precision_and_reruns_only_when_told(study, tmp_path, capsys):
    out = tmp_path / "runs"
    config = sweep_file(study, out, tmp_path / "sweep.yaml")
    assert run_app(["sweep", str(config), "--workers", "0", "--device", "cpu"]) == 0
    record = json.loads((out / "xnli/de/k1/full/00.json").read_text())
    assert record["precision"] == "fp32" and "precision" not in record["run"]["identity"]
    capsys.readouterr()
    assert run_app(["sweep", str(config), "--workers", "0", "--device", "cpu",
                    "--precision", "bf16"]) == 2  # fp32's records are not bf16's
    assert "--replace" in capsys.readouterr().err
    assert json.loads((out / "xnli/de/k1/full/00.json").read_text()) == record
    assert run_app(["sweep", str(config), "--workers", "0", "--device", "cpu",
                    "--precision", "bf16", "--replace"]) == 0
    again = json.loads((out / "xnli/de/k1/full/00.json").read_text())
    assert again["precision"] == "bf16" and again["run"]["identity"]["precision"] == "bf16"
    assert abs(again["test_score"] - record["test_score"]) <= SCORE_ATOL
    capsys.readouterr()
    assert run_app(["sweep", str(config), "--workers", "0", "--device", "cpu",
                    "--precision", "bf16"]) == 0  # done in bf16: nothing reruns
    assert "0 runs completed" in capsys.readouterr().out


def test_a_report_says_when_a_cell_mixes_precisions(study, tmp_path, capsys):
    import shutil

    out = tmp_path / "runs"
    assert run_app(["sweep", str(sweep_file(study, out, tmp_path / "sweep.yaml")),
                    "--workers", "0", "--device", "cpu"]) == 0
    assert run_app(["report", str(out), "--expected-buckets", "2"]) == 0
    assert "precision" not in capsys.readouterr().err  # one precision: nothing to say
    old = tmp_path / "old"  # a record of fsxlt < 0.8 on CUDA: amp true, no precision named
    shutil.copytree(out, old)
    path = old / "xnli/de/k1/full/01.json"
    record = json.loads(path.read_text())
    del record["precision"]
    record["amp"] = True
    path.write_text(json.dumps(record))
    assert run_app(["report", str(old), "--expected-buckets", "2"]) == 0
    assert "note: xnli/de/k1/full mix records run in bf16 and fp32" in capsys.readouterr().err


def test_a_sweep_config_s_precision_is_checked_and_resolved(study, tmp_path, capsys):
    from fsxlt.execution import load_config
    from fsxlt.execution.executors import resolve_precisions

    bad = sweep_file(study, tmp_path / "runs", tmp_path / "bad.yaml", precision="fp64")
    assert run_app(["sweep", str(bad), "--workers", "0"]) == 2
    assert "precision 'fp64' is not a precision" in capsys.readouterr().err
    config = load_config(sweep_file(study, tmp_path / "runs", tmp_path / "ok.yaml"))
    assert config.tasks[0].precision == "auto"
    local = resolve_precisions(config, "local", "cpu")
    assert local.tasks[0].precision == "fp32"
    with pytest.raises(FsxltError, match="fp16 runs on CUDA only"):
        resolve_precisions(load_config(sweep_file(study, tmp_path / "runs",
                                                  tmp_path / "fp16.yaml", precision="fp16")),
                           "local", "cpu")
    if not torch.cuda.is_available():
        with pytest.raises(FsxltError, match="say --precision bf16"):
            resolve_precisions(config, "ray", "auto", gpus_per_task=0.5)
        told = resolve_precisions(load_config(sweep_file(
            study, tmp_path / "runs", tmp_path / "bf.yaml", precision="bf16")), "ray", "auto",
            gpus_per_task=0.5)
        assert told.tasks[0].precision == "bf16"  # the workers' GPUs check it
    assert not (tmp_path / "runs").exists()


# --------------------------------------------------------------------------- out of memory

@pytest.mark.parametrize("error", [torch.OutOfMemoryError, MemoryError])
def test_a_run_out_of_memory_is_an_error_record_and_the_group_goes_on(study, tmp_path,
                                                                      monkeypatch, error,
                                                                      capsys):
    import fsxlt.models.precision as precision

    freed = []
    monkeypatch.setattr(precision, "free_memory", lambda device: freed.append(str(device)))
    adapt = AdaptEngine.adapt
    calls = []

    def first_runs_out(self, bucket, *args, **kwargs):
        calls.append(1)
        if len(calls) == 1:
            raise error("CUDA out of memory. Tried to allocate 2.00 GiB")
        return adapt(self, bucket, *args, **kwargs)

    monkeypatch.setattr(AdaptEngine, "adapt", first_runs_out)
    out = tmp_path / "runs"
    config = sweep_file(study, out, tmp_path / "sweep.yaml", eval_max_tokens=512,
                        micro_batch=2)
    assert run_app(["sweep", str(config), "--workers", "0", "--device", "cpu"]) == 1
    first, second = (json.loads((out / f"xnli/de/k1/full/{i}.json").read_text())
                     for i in ("00", "01"))
    assert first["status"] == "error"
    assert "out of memory" in first["error"] and "GiB of host memory" in first["error"]
    assert "--eval-max-tokens" in first["error"] and "--micro-batch" in first["error"]
    assert second["status"] == "ok" and freed == ["cpu"]
    assert "failed xnli/de/k1/full/00: out of memory" in capsys.readouterr().err
