"""``fsxlt lm-adapt``: LoRA fine-tuning of a causal LM on buckets. One record per bucket beside
the ICL arm's (paired by ``fsxlt report --compare``), write-once and resumable, reproducible on
CPU; the adapters train and reset; a generation task's loss skips the prompt's tokens."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest
import torch

from fsxlt.cli import run_app
from fsxlt.study.runs import arm_of, is_complete, predictions_path, read_record
from fsxlt.training.records import strip_timings
from tests.icl_fixtures import make_causal_lm_dir
from tests.train_fixtures import make_encoder_dir, nli_data, write_bucket_set, write_pairs

FAST = ["--dev-limit", "6", "--max-epochs", "3", "--patience", "2", "--lr", "1e-2",
        "--lr", "3e-2", "--threads", "1"]


@pytest.fixture(scope="module")
def setup(tmp_path_factory) -> dict:
    root = tmp_path_factory.mktemp("lm")
    data = nli_data(40, 5)
    buckets = write_bucket_set(root / "buckets", "xnli", "de", 1,
                               [data[i:i + 3] for i in (0, 3, 6)],
                               ["entailment", "neutral", "contradiction"],
                               dev_remaining=data[9:])
    return {"root": root, "buckets": buckets,
            "test": write_pairs(root / "test-de.tsv", nli_data(12, 9)),
            "model": make_causal_lm_dir(root / "lm", "llama")}


def _lm(setup: dict, out: Path, *extra: str) -> int:
    return run_app(["lm-adapt", "--task", "xnli", "--lang", "de", "--model",
                    str(setup["model"]), "--bucket", str(setup["buckets"]),
                    "--test", str(setup["test"]), "--out", str(out), *FAST, *extra])


def _records(out: Path, arm: str = "lm-lora") -> dict[str, dict]:
    return {p.name: read_record(p) for p in sorted((out / "xnli/de/k1" / arm).glob("*.json"))}


def test_records_pair_with_icl_and_are_written_once(setup, tmp_path, capsys):
    out = tmp_path / "runs"
    assert _lm(setup, out, "--save-predictions", "--test-limit", "8") == 0
    records = _records(out)
    assert list(records) == ["00.json", "01.json", "02.json"]
    record = records["01.json"]
    assert is_complete(record) and arm_of(record) == "lm-lora" and record["k"] == 1
    assert record["bucket"]["index"] == 1 and record["run"]["writer"] == "fsxlt lm-adapt"
    assert record["data"]["dev"]["n"] == 6 and record["data"]["test"]["n"] == 8
    assert record["model"]["start"]["fingerprint"].startswith("sha256:")
    block = record["lm_tuning"]
    assert block["lora"] == {"rank": 8, "alpha": 16.0, "dropout": 0.1, "target_modules": None}
    assert block["target_modules"] == ["q_proj", "v_proj"] and block["lrs"] == [0.01, 0.03]
    for run in record["runs"]:  # the dev-score trajectory of every lr, epoch by epoch
        assert block["dev_scores"][f"{run['lr']:g}"] == [e["dev_score"]
                                                         for e in run["epochs"]]
        assert 1 <= len(run["epochs"]) <= 3 and run["optimizer_steps"] == len(run["epochs"])
    assert block["selected_lr"] == record["selected_lr"] in (0.01, 0.03)
    assert record["dev_score"] == max(r["dev"]["score"] for r in record["runs"])
    assert len(predictions_path(out / "xnli/de/k1/lm-lora/01.json").read_text(
        encoding="utf-8").splitlines()) == 9
    assert run_app(["icl", "--task", "xnli", "--lang", "de", "--model", str(setup["model"]),
                    "--bucket", str(setup["buckets"]), "--test", str(setup["test"]),
                    "--out", str(out), "--threads", "1", "--test-limit", "8"]) == 0
    icl = _records(out, "icl")["01.json"]  # the same test sample: pairs score alike
    assert icl["data"]["test"]["sha256"] == record["data"]["test"]["sha256"]
    capsys.readouterr()
    assert run_app(["report", str(out), "--compare", "lm-lora", "icl", "--bootstrap",
                    "200"]) == 0
    said = capsys.readouterr()
    assert "lm-lora" in said.out and "different test examples" not in said.out + said.err
    assert run_app(["adapt", "--task", "xnli", "--lang", "de", "--bucket", str(setup["buckets"]),
                    "--from", str(make_encoder_dir(tmp_path / "bert")), "--test",
                    str(setup["test"]), "--out", str(out), "--max-epochs", "2",
                    "--lr", "1e-3", "--device", "cpu"]) == 0  # the encoder's arm
    for other in ("icl", "full-nosource"):
        assert run_app(["report", str(out), "--compare", other, "lm-lora", "--bootstrap",
                        "200"]) == 0
    assert "| xnli | de | 1 | 3 |" in capsys.readouterr().out
    limited = ("--test-limit", "8")
    assert _lm(setup, out, *limited) == 0  # resume: every record done
    assert capsys.readouterr().out.count("already done with these settings") == 3
    assert _lm(setup, out, *limited, "--rank", "4") == 2  # write-once: other settings refused
    err = capsys.readouterr().err
    assert "a finished record of other settings" in err and "--replace" in err
    assert _records(out) == records
    assert _lm(setup, out, "--rank", "4", "--replace") == 0
    assert _records(out)["00.json"]["lm_tuning"]["lora"]["rank"] == 4


def test_a_killed_and_a_failed_run_resume_to_the_same_records(setup, tmp_path, monkeypatch,
                                                              capsys):
    """Interrupted at bucket 01: 00 is written, nothing of 01; a rerun failing at 02 leaves
    its error record and writes 01; the last rerun writes 02. Every record equals a clean
    run's but for wall-clock times (CPU runs are deterministic)."""
    import fsxlt.icl.tuning as tuning

    clean = tmp_path / "clean"
    assert _lm(setup, clean) == 0
    original = tuning.train_lr

    def failing(index: int, error: BaseException):
        def train_lr(prepared, *args, **kwargs):
            if prepared.run.index == index:
                raise error
            return original(prepared, *args, **kwargs)
        return train_lr

    out = tmp_path / "resumed"
    monkeypatch.setattr(tuning, "train_lr", failing(1, KeyboardInterrupt()))
    assert _lm(setup, out) == 130
    assert list(_records(out)) == ["00.json"]
    assert not [p for p in out.rglob("*") if p.is_file() and ".tmp" in p.name]
    monkeypatch.setattr(tuning, "train_lr", failing(2, RuntimeError("disk on fire")))
    capsys.readouterr()
    assert _lm(setup, out) == 2
    assert "xnli/de/k1/02: RuntimeError: disk on fire" in capsys.readouterr().err
    error = _records(out)["02.json"]
    assert error["status"] == "error" and error["error"] == "RuntimeError: disk on fire"
    monkeypatch.setattr(tuning, "train_lr", original)
    assert _lm(setup, out) == 0
    assert "already done" in capsys.readouterr().out
    resumed, reference = _records(out), _records(clean)
    assert list(resumed) == list(reference)
    assert [strip_timings(r) for r in resumed.values()] == \
        [strip_timings(r) for r in reference.values()]


def test_training_moves_the_adapters_and_a_reset_restores_the_fresh_wrap(setup, tmp_path):
    from fsxlt.icl.lm_lora import Adapters, LoraSettings
    from fsxlt.icl.model import load_causal_lm
    from fsxlt.icl.tuning import LmSettings, eval_split, lm_plan, load_split, prepare, train_lr

    settings = LmSettings(model=str(setup["model"]), max_epochs=4, patience=4, dev_limit=6)
    run = lm_plan("xnli", "de", setup["buckets"] / "00.json", tmp_path, settings,
                  test=setup["test"])[0]
    lm = load_causal_lm(str(setup["model"]))
    dev, _ = eval_split(run, load_split(run, "dev"), lm.tokenizer, lm.model, "dev")
    test, _ = eval_split(run, load_split(run, "test"), lm.tokenizer, lm.model, "test")
    prepared = prepare(run, lm.tokenizer, lm.model, dev, test)
    adapters = Adapters(lm.model, LoraSettings(), seed=42)
    fresh = adapters.snapshot()
    assert all(not t.any() for name, t in fresh.items() if "lora_B" in name)
    result, state = train_lr(prepared, lm.tokenizer, adapters, 3e-2)
    losses = [e["train_loss"] for e in result["epochs"]]
    assert len(losses) == result["stopped_epoch"] and losses[-1] < losses[0]
    assert all(state[n].any() for n in state if "lora_B" in n)  # B left zero: it trained
    base = {n: p for n, p in lm.model.named_parameters() if "lora_" not in n}
    assert all(not p.requires_grad for p in base.values())  # the LM itself stays frozen
    adapters.reset()
    again = Adapters(load_causal_lm(str(setup["model"])).model, LoraSettings(), seed=42)
    assert all(torch.equal(adapters.snapshot()[n], again.snapshot()[n]) for n in fresh)


def test_a_generation_loss_scores_the_target_and_its_end_only(setup):
    """The training row of a generation example is its prompt, then the target and what
    ends it (the separator); the loss is the target's and the end's tokens', nothing of
    the prompt's."""
    from fsxlt.data.examples import GenerationExample
    from fsxlt.icl.lm_lora import rows_nll
    from fsxlt.icl.model import load_causal_lm
    from fsxlt.icl.tuning import LmSettings, train_rows
    from fsxlt.tasks import get_task
    from fsxlt.tasks.prompts import IclSpec

    icl = IclSpec(templates={"en": "premise : {text_a} answer : {label}"},
                  instructions={"en": "does"}, label_words={})
    spec = replace(get_task("xnli"), kind="generation", metric="bleu", icl=icl)
    lm = load_causal_lm(str(setup["model"]))
    example = GenerationExample("g", "anna big house", "yes maybe no")
    [row] = train_rows(spec, "de", lm.tokenizer, [example], LmSettings(model="m"), "b")
    tokenize = lm.tokenizer

    def ids(text: str) -> list[int]:
        return list(tokenize(text, add_special_tokens=False)["input_ids"])

    target, prompt = ids(" yes maybe no"), ids("does\n\n") + ids("premise : anna big house "
                                                                "answer :")
    assert row.ids[: len(prompt)] == prompt and row.ids[len(prompt):][: len(target)] == target
    assert row.scored == len(row.ids) - len(prompt) >= len(target)
    with torch.no_grad():
        loss = float(rows_nll(lm.model, [row]))
        logprobs = torch.log_softmax(lm.model(input_ids=torch.tensor([row.ids])).logits[0], -1)
    by_hand = -sum(float(logprobs[t - 1, row.ids[t]]) for t in range(len(prompt), len(row.ids)))
    everything = -sum(float(logprobs[t - 1, row.ids[t]]) for t in range(1, len(row.ids)))
    assert loss == pytest.approx(by_hand, rel=1e-5) and loss < everything


@pytest.mark.parametrize("extra, message", [
    (["--task", "panx"], "a tagging task"),
    (["--arm", "lora"], "starts with lm-"),
    (["--target-module", "nope"], "LoRA on LlamaForCausalLM"),
    (["--dropout", "1.5"], "0 <= dropout < 1"),
])
def test_bad_input_is_one_line_and_writes_nothing(setup, tmp_path, capsys, extra, message):
    out = tmp_path / "runs"
    capsys.readouterr()
    assert _lm(setup, out, *extra) == 2
    err = capsys.readouterr().err
    assert err.startswith("error:") and message in err and err.count("\n") == 1
    assert not out.exists()


def test_a_generation_task_trains_and_decodes_scored_with_bleu(tmp_path):
    from fsxlt.data.examples import GenerationExample

    words = ["anna", "big", "house", "yes", "no", "maybe"]

    def pair(i: int, source: str, step: int = 1) -> GenerationExample:
        return GenerationExample(f"{source}:{i}",
                                 " ".join(words[(i + step * j) % 6] for j in range(4)),
                                 " ".join(words[(2 * i + j) % 6] for j in range(3)), "de")

    data = [pair(i, "dev") for i in range(12)]
    buckets = write_bucket_set(tmp_path / "buckets", "qg", "de", 1, [data[:2], data[2:4]], [],
                               dev_remaining=data[4:])
    test = [pair(i, "test", step=2) for i in range(5)]  # no dev pair: a test set of its own
    source = tmp_path / "xglue.qg.de.src.test"
    source.write_text("".join(f"{e.source}\n" for e in test), encoding="utf-8")
    (tmp_path / "xglue.qg.de.tgt.test").write_text("".join(f"{e.target}\n" for e in test),
                                                   encoding="utf-8")
    model = make_causal_lm_dir(tmp_path / "lm", "gpt2")
    out = tmp_path / "runs"
    assert run_app(["lm-adapt", "--task", "qg", "--lang", "de", "--model", str(model),
                    "--bucket", str(buckets / "01.json"), "--test", str(source), "--out",
                    str(out), "--max-new-tokens", "5", "--save-predictions", *FAST]) == 0
    record = read_record(out / "qg/de/k1/lm-lora/01.json")
    assert is_complete(record) and record["metric"] == "bleu" and record["test"]["n"] == 5
    assert record["lm_tuning"]["generation"]["max_new_tokens"] == 5
    assert record["run"]["identity"]["decoding"]["stop"] == ["\n"]
    assert record["run"]["identity"]["decoding"]["batching"] == "auto"
    rows = predictions_path(out / "qg/de/k1/lm-lora/01.json").read_text(
        encoding="utf-8").splitlines()
    assert len(rows) == 6 and json.loads(rows[1])["gold"] == test[0].target
    # selecting on the dev loss: every epoch's dev score is -NLL per token, the record's the
    # task's metric (BLEU) of the chosen adapters; another identity, so another arm here
    assert run_app(["lm-adapt", "--task", "qg", "--lang", "de", "--model", str(model),
                    "--bucket", str(buckets / "01.json"), "--test", str(source), "--out",
                    str(out), "--max-new-tokens", "5", "--select-on", "loss",
                    "--arm", "lm-lora-loss", *FAST]) == 0
    by_loss = read_record(out / "qg/de/k1/lm-lora-loss/01.json")
    assert by_loss["lm_tuning"]["select_on"] == "loss"
    epochs = [e["dev_score"] for run in by_loss["runs"] for e in run["epochs"]]
    assert all(score < 0 for score in epochs)
    chosen = next(r for r in by_loss["runs"] if r["lr"] == by_loss["selected_lr"])
    assert chosen["dev"]["metric"] == "bleu" and chosen["dev"]["selection_loss"] > 0
    assert by_loss["dev_score"] == chosen["dev"]["score"] >= 0
    # --stop, as fsxlt icl takes it (\n typed as a backslash and n): in the identity
    assert run_app(["lm-adapt", "--task", "qg", "--lang", "de", "--model", str(model),
                    "--bucket", str(buckets / "01.json"), "--test", str(source), "--out",
                    str(out), "--max-new-tokens", "5", "--stop", "\\n\\n", "--stop", ".",
                    "--arm", "lm-lora-stop", *FAST]) == 0
    stopped = read_record(out / "qg/de/k1/lm-lora-stop/01.json")
    assert stopped["run"]["identity"]["decoding"]["stop"] == ["\n\n", "."]


def test_lm_adapt_predicts_xglues_test_file_into_a_submission(tmp_path):
    """--predict: the chosen adapters write XGLUE's QG file for the unlabelled test file, one
    line per input; the file's hash is part of the identity."""
    from tests.test_generation_data import write_qg

    data = tmp_path / "XGLUE" / "QG"
    write_qg(data, "de", "dev", 12)
    held_out = write_qg(tmp_path / "held", "de", "dev", 4, seed=1, first=100)
    to_predict = write_qg(data, "de", "test", 3, targets=False, seed=2)
    assert run_app(["sample", "--task", "qg", "--lang", "de", "-k", "2", "--n-buckets", "1",
                    "--data-dir", str(tmp_path / "XGLUE"), "--out", str(tmp_path / "b")]) == 0
    out = tmp_path / "runs"
    assert run_app(["lm-adapt", "--task", "qg", "--lang", "de", "--model",
                    str(make_causal_lm_dir(tmp_path / "lm", "gpt2")), "--bucket",
                    str(tmp_path / "b" / "qg" / "de" / "k2"), "--test", str(held_out),
                    "--predict", str(to_predict), "--out", str(out), "--max-new-tokens", "4",
                    "--select-on", "loss", *FAST]) == 0
    arm = out / "qg" / "de" / "k2" / "lm-lora"
    record = read_record(arm / "00.json")
    assert record["submission"] == {"file": "submission/00/QG/de.prediction", "n": 3}
    assert "predict" in record["run"]["identity"] and "predict" not in record["lm_tuning"]
    written = arm / "submission" / "00" / "QG" / "de.prediction"
    assert len(written.read_text(encoding="utf-8").splitlines()) == 3


def test_the_prompt_languages_are_settings_of_the_run(setup, tmp_path, capsys):
    """lm-adapt takes icl's --template-lang and --words-lang (one set of options, in the
    identity and the record); a language that is neither en nor target is one line."""
    out = tmp_path / "runs"
    assert _lm(setup, out, "--template-lang", "target", "--test-limit", "4",
               "--arm", "lm-lora-de") == 0
    target = _records(out, "lm-lora-de")["00.json"]
    assert target["lm_tuning"]["prompt"] == {"template_language": "target",
                                             "words_language": "en"}
    assert target["run"]["identity"]["tuning"]["prompt"]["template_language"] == "target"
    assert _lm(setup, out, "--test-limit", "4") == 0
    plain = _records(out)["00.json"]
    assert plain["run"]["identity"]["tuning"]["prompt"]["template_language"] == "en"
    assert target["run"]["hash"] != plain["run"]["hash"]
    capsys.readouterr()
    assert _lm(setup, tmp_path / "other", "--words-lang", "fr") == 2
    err = capsys.readouterr().err
    assert "the label words language is en or target, not 'fr'" in err
    assert len(err.strip().splitlines()) == 1 and not (tmp_path / "other").exists()
