"""The multi regime: the source data and several target languages' buckets in one model.

Its steps hold the source rows and every language's bucket rows (one mean loss each,
averaged); its languages are taken in sorted order, so the runs of every language train
the same model; sweeps and fsxlt adapt find the other buckets beside the run's own,
and arms, identities and records name the languages.
"""

from __future__ import annotations

import json

import pytest

from fsxlt.cli import run_app
from fsxlt.errors import FsxltError
from fsxlt.execution import expand, parse_config, run_sweep
from fsxlt.study.runs import arm_regime, read_record
from fsxlt.training import AdaptEngine
from fsxlt.training.regimes import JointMixer, Regime, parse_regime
from tests.sweep_fixtures import build_study, sweep_config
from tests.train_fixtures import nli_data, write_pairs


@pytest.mark.parametrize("seed", range(6))
def test_a_multi_step_holds_every_language_with_equal_weight(seed):
    source = list(range(30))
    buckets = {"ar": ["a0", "a1", "a2"], "de": ["d0", "d1"], "zh": ["z0", "z1", "z2", "z3"]}
    regime = Regime("multi", batch_size=5, steps_per_epoch=4, target_batch_size=2,
                    languages=("ar", "zh"))
    mixer = JointMixer(regime, source, buckets["de"], seed,
                       companions={"ar": buckets["ar"], "zh": buckets["zh"]}, language="de")
    steps = list(mixer.epoch()) + list(mixer.epoch())
    for step in steps:
        assert [w for _, w in step] == [0.25] * 4
        assert len(step[0][0]) == 5 and all(isinstance(r, int) for r in step[0][0])
        for (rows, _), lang in zip(step[1:], ("ar", "de", "zh"), strict=True):
            assert set(rows) <= set(buckets[lang]) and len(rows) <= 2
    # zh (4 rows, 2 a step) is seen whole every two steps
    zh = [row for step in steps for row in step[3][0]]
    assert sorted(zh[:4]) == sorted(buckets["zh"]) and sorted(zh[4:8]) == sorted(buckets["zh"])
    # the run of another language trains on the same steps
    other = JointMixer(regime.with_language("de"), source, buckets["ar"], seed,
                       companions={"de": buckets["de"], "zh": buckets["zh"]}, language="ar")
    assert list(other.epoch()) + list(other.epoch()) == steps


def test_multi_settings():
    regime = parse_regime("multi", {"languages": ["zh", "ar", "zh"]})
    assert regime.languages == ("ar", "zh") and regime.with_language("de").label == \
        "multi-ar-de-zh"
    assert regime.changes()["languages"] == ["ar", "zh"]
    with pytest.raises(FsxltError, match="name the target languages"):
        parse_regime("multi", {"batch_size": 4})
    with pytest.raises(FsxltError, match="name the target languages"):
        JointMixer(Regime("multi"), [1, 2], ["d"], 0, language="de")
    with pytest.raises(FsxltError, match="trains ar, de together; buckets given for de"):
        JointMixer(Regime("multi", languages=("ar",)), [1, 2], ["d"], 0, language="de")
    with pytest.raises(FsxltError, match="other languages' buckets are for regime multi"):
        JointMixer(Regime("joint-macro"), [1, 2], ["d"], 0, companions={"ar": ["a"]},
                   language="de")


@pytest.fixture(scope="module")
def study(tmp_path_factory):
    root = tmp_path_factory.mktemp("multi-study")
    paths = build_study(root)
    paths["source_train"] = write_pairs(root / "data" / "train-en.tsv", nli_data(24, seed=7))
    return paths


def multi_config(study, out, **extra):
    config = sweep_config(study, out, n_buckets=2, max_epochs=2, regimes=["multi"],
                          joint={"source_train": str(study["source_train"]), "batch_size": 4,
                                 "steps_per_epoch": 2, "languages": ["de", "fr"]},
                          tasks={"xnli": {"languages": ["de", "fr"], "k": [1]}})
    config.update(extra)
    return config


def test_a_sweep_trains_the_languages_together_and_files_them(study, tmp_path):
    config = parse_config(multi_config(study, tmp_path / "runs"))
    runs = expand(config).runs
    assert {run.arm for run in runs} == {"full+multi-de-fr"}
    assert arm_regime("full+multi-de-fr") == ("full", "multi-de-fr")
    de0 = next(r for r in runs if r.language == "de" and r.index == 0)
    fr_bucket = study["buckets"] / "xnli" / "fr" / "k1" / "00.json"
    assert json.loads(de0.companion_buckets)["fr"][0] == str(fr_bucket)
    assert set(de0.identity["companions"]) == {"fr"}
    result = run_sweep(config, workers=0, device="cpu")
    assert len(result.completed) == 4
    records = {(r.language, r.index): read_record(r.record_path) for r in runs}
    de, fr = records[("de", 0)], records[("fr", 0)]
    assert de["regime"]["languages"] == ["de", "fr"]
    assert de["regime"]["companions"]["fr"]["sha256"] == fr["bucket"]["sha256"]
    # one model trained for both: the same losses epoch by epoch
    assert [e["train_loss"] for e in de["runs"][0]["epochs"]] == \
        [e["train_loss"] for e in fr["runs"][0]["epochs"]]
    assert de["runs"][0]["optimizer_steps"] == 4
    assert len(run_sweep(config, workers=0, device="cpu").completed) == 0  # resumes


def test_a_missing_language_set_is_one_line(study, tmp_path, capsys):
    from tests.sweep_fixtures import write_config

    bad = multi_config(study, tmp_path / "runs")
    bad["joint"]["languages"] = ["de", "es"]
    path = write_config(tmp_path / "sweep.yaml", bad)
    assert run_app(["sweep", str(path)]) == 2
    err = capsys.readouterr().err.strip()
    assert "no bucket set for xnli/es/k1" in err and len(err.splitlines()) == 1, err
    assert not (tmp_path / "runs").exists()
    assert run_app(["sweep", str(path), "--dry-run"]) == 1  # the plan lists it, exit 1
    assert "missing: " in capsys.readouterr().err


def test_adapt_takes_the_other_languages(study, tmp_path, capsys):
    args = ["adapt", "--task", "xnli", "--lang", "de",
            "--bucket", str(study["buckets"] / "xnli" / "de" / "k1" / "01.json"),
            "--from", str(study["checkpoint"]), "--data-dir", str(study["data"]),
            "--lr", "0.01", "--max-epochs", "1", "--out", str(tmp_path / "runs"),
            "--regime", "multi", "--multi-lang", "fr", "--source-train",
            str(study["source_train"]), "--joint-batch-size", "4", "--joint-steps", "1",
            "--device", "cpu"]
    assert run_app(args) == 0
    path = tmp_path / "runs" / "xnli" / "de" / "k1" / "full+multi-de-fr" / "01.json"
    assert read_record(path)["regime"]["companions"]["fr"]["index"] == 1
    assert run_app([*args[:-2], "--target-repeat", "3", "--device", "cpu"]) == 2
    assert "--target-repeat is for regime(s) joint, not --regime multi" in \
        capsys.readouterr().err


def test_adapt_refuses_multi_with_only_its_own_language_up_front(study, tmp_path, capsys):
    """Issue 41, case 12: ``--multi-lang de --lang de`` failed late, leaving an error
    record and the runs marker, and did not say that de is --lang itself."""
    out = tmp_path / "runs"
    args = ["adapt", "--task", "xnli", "--lang", "de",
            "--bucket", str(study["buckets"] / "xnli" / "de" / "k1" / "01.json"),
            "--from", str(study["checkpoint"]), "--data-dir", str(study["data"]),
            "--lr", "0.01", "--max-epochs", "1", "--out", str(out),
            "--regime", "multi", "--multi-lang", "de", "--source-train",
            str(study["source_train"]), "--device", "cpu"]
    assert run_app(args) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "--multi-lang de is --lang itself" in err, err
    assert not out.exists()


def test_the_engine_refuses_a_multi_run_without_its_buckets(tmp_path):
    from tests.train_fixtures import make_encoder_dir

    encoder = str(make_encoder_dir(tmp_path / "enc"))
    engine = AdaptEngine.from_start("xnli", "de", encoder, dev=nli_data(4, seed=3),
                                    device="cpu")
    engine.set_source(nli_data(8, seed=7))
    with pytest.raises(FsxltError, match="trains de, fr together; buckets given for de"):
        engine.adapt(nli_data(3, seed=1), lrs=[1e-3], max_epochs=1,
                     regime=Regime("multi", languages=("fr",)))


def test_a_multi_step_s_loss_is_the_mean_of_each_language_s_mean(tmp_path):
    """weighted_step over a multi step = mean over languages of each one's mean loss."""
    import torch
    from torch.nn import functional as F

    from fsxlt.training.loop import weighted_step
    from tests.train_fixtures import make_encoder_dir

    engine = AdaptEngine.from_start("xnli", "de", str(make_encoder_dir(tmp_path / "enc")),
                                    dev=nli_data(4, seed=3), device="cpu")
    source = engine._bucket_rows(nli_data(5, seed=7, source="en"))
    buckets = {lang: engine._bucket_rows(nli_data(n, seed=s, source=lang))
               for lang, n, s in (("ar", 2, 11), ("de", 3, 12), ("zh", 4, 13))}
    mixer = JointMixer(Regime("multi", batch_size=5, steps_per_epoch=1,
                              languages=("ar", "zh")), source, buckets["de"], 0,
                       companions={"ar": buckets["ar"], "zh": buckets["zh"]}, language="de")
    step = engine._step_batches(next(mixer.epoch()))
    state = {k: v.clone() for k, v in engine.model.state_dict().items()}
    torch.manual_seed(0)
    optimizer = torch.optim.SGD(engine.model.parameters(), lr=0.0)
    loss = weighted_step(engine.model, step, optimizer, precision="fp32")
    engine.model.load_state_dict(state)
    torch.manual_seed(0)  # the same dropout masks: the same forward passes in the same order
    engine.model.train()
    means = []
    with torch.no_grad():
        for batches, _weight in step:
            logits = torch.cat([engine.model(b) for b in batches])
            labels = torch.cat([b["labels"] for b in batches])
            means.append(float(F.cross_entropy(logits, labels)))
    assert len(means) == 4  # the source and three target languages
    assert loss == pytest.approx(sum(means) / 4, rel=1e-5)


def test_reports_title_a_multi_arm_with_its_languages():
    from fsxlt.report.tables import arm_label

    assert arm_label("full+multi-ar-de-zh") == "Full FT, multi (ar, de, zh) training"
    assert arm_label("full+mixup-nosource") == "Full FT, mixup training, no source-training"


@pytest.mark.parametrize("seed", range(4))
def test_the_multi_stage_recipe_trains_the_own_language_after_its_multi_epochs(seed):
    source = list(range(20))
    buckets = {"ar": ["a0", "a1"], "de": ["d0", "d1", "d2"]}
    regime = Regime("multi", batch_size=4, steps_per_epoch=3, languages=("ar", "de"),
                    multi_epochs=2)
    assert regime.with_language("de").label == "multi2-ar-de"
    assert regime.changes()["multi_epochs"] == 2
    runs = {lang: JointMixer(regime, source, buckets[lang], seed,
                             companions={o: buckets[o] for o in buckets if o != lang},
                             language=lang) for lang in buckets}
    epochs = {lang: [list(mixer.epoch()) for _ in range(4)] for lang, mixer in runs.items()}
    assert epochs["ar"][:2] == epochs["de"][:2]  # the multi stage: one model for both
    for lang, own in buckets.items():
        for step in epochs[lang][0]:
            assert [w for _, w in step] == [1 / 3] * 3
        for epoch in epochs[lang][2:]:
            for step in epoch:
                assert [w for _, w in step] == [0.5, 0.5] and step[1][0] == own
    from fsxlt.report.tables import arm_label

    assert arm_label("full+multi2-ar-de") == \
        "Full FT, multi (ar, de) for 2 epochs, then joint-macro training"
    assert arm_regime("full+multi2-ar-de") == ("full", "multi2-ar-de")
