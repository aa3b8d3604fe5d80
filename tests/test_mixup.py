"""The mixup regime against its definition, its pairs, and the peer's batches and epochs.

Tiny BERTs only. The loss is recomputed from the definition (pairs of encoder output
vectors mixed with λ, one-hot labels mixed the same way, soft cross-entropy averaged
over pairs) one pair at a time; the engine's loss and gradients must equal it.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from scipy import stats
from torch.nn import functional as F

from fsxlt.errors import FsxltError
from fsxlt.training import AdaptEngine, strip_timings
from fsxlt.training.mixup import PairDrawer, mixup_loss, soft_cross_entropy
from fsxlt.training.regimes import JointMixer, MixStep, Regime, parse_regime
from tests.train_fixtures import make_encoder_dir, ner_data, nli_data


@pytest.fixture(scope="module")
def encoder(tmp_path_factory):
    return str(make_encoder_dir(tmp_path_factory.mktemp("enc") / "tiny"))


def engine_for(encoder: str, task: str) -> AdaptEngine:
    data = nli_data if task == "xnli" else ner_data
    engine = AdaptEngine.from_start(task, "de", encoder, dev=data(10, seed=3),
                                    test=data(8, seed=4), device="cpu")
    engine.set_source(data(30, seed=7, source="en"), train_source="train-en.tsv")
    return engine


# --------------------------------------------------------------------------- the loss

def by_definition(model, source_rows, target_rows, pairing, pad_id):
    """The mixup loss one pair at a time: each unit's vector from its own forward pass."""
    from fsxlt.models.encoding import collate

    def units(rows):
        vectors, labels = [], []
        for row in rows:
            batch = collate([row], pad_id)
            vectors.extend(model.encode(batch))
            labels.extend(batch["labels"].tolist())
        return vectors, labels

    xs, ys = units(source_rows)
    xt, yt = units(target_rows)
    losses = []
    for i, j, lam in zip(pairing.source, pairing.target, pairing.lam, strict=True):
        mixed = lam * xs[i] + (1 - lam) * xt[j]
        target = (lam * F.one_hot(torch.tensor(ys[i]), model.n_outputs).float()
                  + (1 - lam) * F.one_hot(torch.tensor(yt[j]), model.n_outputs).float())
        logits = model.head(mixed.unsqueeze(0))[0]
        losses.append(-(target * torch.log_softmax(logits, -1)).sum())
    return torch.stack(losses).mean()


@pytest.mark.parametrize("task", ["xnli", "panx"])
def test_mixup_loss_and_gradients_equal_the_definition(encoder, task):
    engine = engine_for(encoder, task)
    model = engine.model
    model.eval()  # no dropout: both paths see the same vectors
    data = nli_data if task == "xnli" else ner_data
    source = engine._bucket_rows(data(5, seed=11, source="en"))
    target = engine._bucket_rows(data(3, seed=12))
    pairing = PairDrawer(0.4, seed=5).draw(source, target)
    assert len(pairing.lam) == max(sum(len(r.labels) for r in source),
                                   sum(len(r.labels) for r in target))
    grads = []
    for path in ("engine", "definition"):
        model.zero_grad(set_to_none=True)
        if path == "engine":
            loss = mixup_loss(model, engine._micro_batches(source),
                              engine._micro_batches(target), pairing, precision="fp32")
        else:
            loss = by_definition(model, source, target, pairing, engine.featurizer.pad_id)
        loss.backward()
        grads.append((float(loss.detach()), {n: p.grad.clone() for n, p in model.named_parameters()
                                    if p.grad is not None}))
    assert grads[0][0] == pytest.approx(grads[1][0], rel=1e-5)
    assert grads[0][1].keys() == grads[1][1].keys()
    for name, grad in grads[0][1].items():
        assert torch.allclose(grad, grads[1][1][name], atol=1e-6), name


def test_soft_cross_entropy_of_one_hot_labels_is_cross_entropy():
    logits = torch.randn(7, 4, generator=torch.Generator().manual_seed(0))
    labels = torch.tensor([0, 3, 1, 1, 2, 0, 3])
    assert float(soft_cross_entropy(logits, F.one_hot(labels, 4).float())) == \
        pytest.approx(float(F.cross_entropy(logits, labels)), rel=1e-6)


# --------------------------------------------------------------------------- the pairs

@pytest.mark.parametrize("seed", range(6))
def test_lambda_follows_beta_alpha_alpha(seed):
    for alpha in (0.4, 2.0):
        drawer = PairDrawer(alpha, seed, units=len)
        lams = np.concatenate([drawer.draw(range(50), range(20)).lam for _ in range(40)])
        assert len(lams) == 2000 and ((lams >= 0) & (lams <= 1)).all()
        assert stats.kstest(lams, stats.beta(alpha, alpha).cdf).pvalue > 1e-3


@pytest.mark.parametrize("seed", range(10))
def test_pairs_are_seeded_and_in_range(seed):
    draw = PairDrawer(0.4, seed, units=len).draw
    first, again = draw(range(9), range(4)), PairDrawer(0.4, seed, units=len).draw(
        range(9), range(4))
    assert len(first.source) == 9 and first.source.max() < 9 and first.target.max() < 4
    for a, b in zip((first.source, first.target, first.lam),
                    (again.source, again.target, again.lam), strict=True):
        assert np.array_equal(a, b)
    other = PairDrawer(0.4, seed + 100, units=len).draw(range(9), range(4))
    assert not np.array_equal(first.lam, other.lam)
    assert len(draw(range(2), range(30)).source) == 30  # max(n, m) pairs


# --------------------------------------------------------------------------- batches and epochs

@pytest.mark.parametrize("seed", range(8))
def test_target_rows_cycle_through_the_bucket(seed):
    source, bucket = list(range(40)), [f"t{i}" for i in range(7)]
    mixer = JointMixer(Regime("joint-macro", batch_size=4, steps_per_epoch=6,
                              target_batch_size=3), source, bucket, seed)
    slices = [step[1][0] for step in mixer.epoch()] + [step[1][0] for step in mixer.epoch()]
    assert [len(s) for s in slices] == [3, 3, 1] * 4  # a pass: 3 + 3 + the last one
    for at in range(0, 12, 3):
        assert sorted(slices[at] + slices[at + 1] + slices[at + 2]) == sorted(bucket)
    assert {len(step[0][0]) for step in mixer.epoch()} == {4}
    whole = JointMixer(Regime("joint-concat", batch_size=4, steps_per_epoch=2), source, bucket,
                       seed)
    assert all(step[0][0][-7:] == bucket for step in whole.epoch())


@pytest.mark.parametrize("seed", range(8))
def test_a_source_pass_epoch_sees_every_source_row_once(seed):
    source, bucket = list(range(37)), ["a", "b"]
    regime = Regime("mixup", batch_size=8, epoch="source-pass", target_batch_size=16)
    mixer = JointMixer(regime, source, bucket, seed, units=len)
    assert mixer.steps_per_epoch == 5
    for _ in range(3):
        steps = list(mixer.epoch())
        assert all(isinstance(step, MixStep) for step in steps)
        assert [len(step.source) for step in steps] == [8, 8, 8, 8, 5]
        assert sorted(row for step in steps for row in step.source) == source
        assert all(sorted(step.target) == bucket for step in steps)
        assert all(len(step.pairing.lam) == max(len(step.source), 2) for step in steps)


def test_regime_settings_and_identity():
    mixup = parse_regime("mixup", {"batch_size": 16, "target_batch_size": 16,
                                   "epoch": "source-pass"})
    assert mixup.changes() == {"name": "mixup", "batch_size": 16, "epoch": "source-pass",
                               "target_batch_size": 16, "alpha": 0.4}
    # settings 0.2 did not have leave a joint run's identity as it was
    assert parse_regime("joint-macro", {"batch_size": 4}).changes() == {
        "name": "joint-macro", "batch_size": 4, "steps_per_epoch": 20}
    with pytest.raises(FsxltError, match="now called 'joint-concat'"):
        parse_regime("joint-mixup")
    with pytest.raises(FsxltError, match="alpha must be a number > 0"):
        parse_regime("mixup", {"alpha": 0})
    with pytest.raises(FsxltError, match="epoch must be one of steps, source-pass"):
        parse_regime("mixup", {"epoch": "pass"})


# --------------------------------------------------------------------------- runs

@pytest.mark.parametrize("task", ["xnli", "panx"])
def test_mixup_runs_are_seeded_and_recorded(encoder, task):
    engine = engine_for(encoder, task)
    data = nli_data if task == "xnli" else ner_data
    regime = Regime("mixup", batch_size=4, target_batch_size=2, epoch="source-pass")
    record = engine.adapt(data(4, seed=1), lrs=[1e-3], max_epochs=2, patience=5,
                          regime=regime)
    assert record["regime"]["name"] == "mixup" and record["regime"]["alpha"] == 0.4
    assert record["runs"][0]["optimizer_steps"] == 2 * 8  # ceil(30 / 4) steps an epoch
    again = engine.adapt(data(4, seed=1), lrs=[1e-3], max_epochs=2, patience=5,
                         regime=regime)
    assert strip_timings(record) == strip_timings(again)
    concat = engine.adapt(data(4, seed=1), lrs=[1e-3], max_epochs=2, patience=5,
                          regime=Regime("joint-concat", batch_size=4, target_batch_size=2,
                                        epoch="source-pass"))
    assert concat["config_hash"] != record["config_hash"]


def test_mixup_works_on_cached_features(encoder):
    engine = engine_for(encoder, "xnli")
    record = engine.adapt(nli_data(4, seed=1), method="fc", lrs=[1e-2], max_epochs=2,
                          patience=5, regime=Regime("mixup", batch_size=4, steps_per_epoch=3))
    assert record["runs"][0]["optimizer_steps"] == 6
    assert record["runs"][0]["epochs"][0]["train_loss"] > 0


def test_mixup_is_refused_where_nothing_mixes(encoder, tmp_path):
    engine = engine_for(encoder, "xnli")
    with pytest.raises(FsxltError, match="method pet scores with its own head"):
        engine.adapt(nli_data(4, seed=1), method="pet", lrs=[1e-3], max_epochs=1,
                     regime=Regime("mixup"))
