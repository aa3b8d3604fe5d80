"""The head-only feature cache: same weights, curves and scores as the frozen-encoder path.

Every comparison here is between two engines on the same start, one with
``feature_cache=True`` (the default) and one with ``feature_cache=False``
(every epoch runs the frozen encoder, as before the cache existed). On CPU
the two are expected to agree to float tolerance; in practice bit for bit.
"""

from __future__ import annotations

import pytest
import torch

from fsxlt.training import AdaptEngine, save_checkpoint, source_train, strip_timings
from fsxlt.training.features import ENCODER, POOLED, feature_point
from fsxlt.training.loop import snapshot
from tests.train_fixtures import HEAD_ONLY_TRAINABLE, make_encoder_dir, ner_data, nli_data

HEAD_ONLY = sorted(HEAD_ONLY_TRAINABLE)


@pytest.fixture(scope="module")
def encoder_dir(tmp_path_factory):
    return make_encoder_dir(tmp_path_factory.mktemp("tiny-bert"))


@pytest.fixture(scope="module")
def xnli_checkpoint(encoder_dir, tmp_path_factory):
    """A tiny source-trained XNLI checkpoint (one lr, two epochs)."""
    result = source_train("xnli", nli_data(48, seed=1), nli_data(12, seed=2),
                          model_name=str(encoder_dir), lrs=[1e-3], epochs=2, batch_size=16,
                          seed=5, device="cpu")
    return save_checkpoint(tmp_path_factory.mktemp("ckpt") / "xnli", result.model,
                           result.tokenizer, result.record)


def xnli_engine(start, cache: bool, **kwargs) -> AdaptEngine:
    return AdaptEngine.from_start("xnli", "de", str(start), dev=nli_data(30, seed=3),
                                  test=nli_data(21, seed=4), device="cpu",
                                  feature_cache=cache, **kwargs)


def assert_same_state(a: dict[str, torch.Tensor], b: dict[str, torch.Tensor]) -> None:
    assert a.keys() == b.keys()
    for name in a:
        torch.testing.assert_close(a[name], b[name], rtol=1e-6, atol=1e-7, msg=name)


def adapt_both(make_engine, bucket, method: str, **kwargs):
    """Adapt with and without the cache; return both records and both models' states."""
    out = []
    for cache in (True, False):
        engine = make_engine(cache)
        record = engine.adapt(bucket, method=method, **kwargs)
        out.append((strip_timings(record), snapshot(engine.model), engine))
    return out


def test_feature_points_follow_the_trainable_sets(xnli_checkpoint, encoder_dir):
    engine = xnli_engine(xnli_checkpoint, True)
    assert feature_point(engine.model, "full") is None
    assert feature_point(engine.model, "fc") == POOLED  # pooler frozen too
    for method in ("fc-pooler", "cos-pooler", "fc-reset-pooler"):
        assert feature_point(engine.model, method) == ENCODER  # [CLS] state before the pooler
    tagger = AdaptEngine.from_start("panx", "de", str(encoder_dir), dev=ner_data(5, seed=1),
                                    device="cpu")
    assert feature_point(tagger.model, "fc") == ENCODER  # per-word last-piece states


@pytest.mark.parametrize("method", HEAD_ONLY)
def test_cached_features_give_the_same_head_weights_and_scores(xnli_checkpoint, method):
    (cached, cached_state, engine), (plain, plain_state, _) = adapt_both(
        lambda cache: xnli_engine(xnli_checkpoint, cache), nli_data(9, seed=9), method,
        lrs=[5e-2, 1e-2], seed=1, max_epochs=6, patience=3)
    assert engine.model.dropout.p > 0  # the head's dropout is live while training
    assert_same_state(cached_state, plain_state)
    for name in HEAD_ONLY_TRAINABLE[method]:  # the comparison is not vacuous
        assert not torch.equal(cached_state[name], engine.start_state[name]) or \
            cached_state[name].shape != engine.start_state[name].shape
    assert [r["epochs"] for r in cached["runs"]] == [r["epochs"] for r in plain["runs"]]
    assert cached == plain  # best epochs, dev and test scores, everything but timings


def test_tagging_fc_caches_word_states(encoder_dir):
    def engine(cache: bool) -> AdaptEngine:
        return AdaptEngine.from_start("panx", "de", str(encoder_dir), dev=ner_data(20, seed=3),
                                      test=ner_data(15, seed=4), device="cpu",
                                      feature_cache=cache, micro_batch=4)

    (cached, cached_state, _), (plain, plain_state, _) = adapt_both(
        engine, ner_data(10, seed=9), "fc", lrs=[5e-2], seed=2, max_epochs=5, patience=5)
    assert_same_state(cached_state, plain_state)
    assert cached == plain


def test_the_encoder_runs_once_per_split_for_all_runs(xnli_checkpoint, monkeypatch):
    engine = xnli_engine(xnli_checkpoint, True)
    calls = []
    original = type(engine.model).encode

    def counting(model, batch):
        calls.append(int(batch["input_ids"].shape[0]))
        return original(model, batch)

    monkeypatch.setattr(type(engine.model), "encode", counting)
    for index, method in enumerate(HEAD_ONLY * 2):
        engine.adapt(nli_data(6, seed=20 + index), method=method, lrs=[1e-2], seed=1,
                     max_epochs=4, patience=4)
    dev, test = engine.features.splits["dev"], engine.features.splits["test"]
    assert dev.encoder_passes == test.encoder_passes == 1
    # one pass over dev (30) and test (21), then only the 6-example buckets, once per run
    assert sum(calls) == 30 + 21 + 6 * len(HEAD_ONLY) * 2


def test_full_runs_between_head_only_runs_see_tokens_again(xnli_checkpoint):
    bucket = nli_data(9, seed=9)
    cached = xnli_engine(xnli_checkpoint, True)
    plain = xnli_engine(xnli_checkpoint, False)
    for method in ("fc-pooler", "full", "fc", "full", "cos-pooler"):
        a = cached.adapt(bucket, method=method, lrs=[1e-2], seed=3, max_epochs=3, patience=3)
        b = plain.adapt(bucket, method=method, lrs=[1e-2], seed=3, max_epochs=3, patience=3)
        assert strip_timings(a) == strip_timings(b), method
        assert_same_state(snapshot(cached.model), snapshot(plain.model))
    assert cached.features.active == ENCODER
    assert "input_ids" in plain.dev.batches[0] and "features" in cached.dev.batches[0]


def test_pooled_features_follow_the_pooler(xnli_checkpoint):
    """fc's pooled cache is keyed by the pooler's weights, not just by the split."""
    engine = xnli_engine(xnli_checkpoint, True)
    engine.adapt(nli_data(6, seed=9), method="fc", lrs=[1e-2], seed=1, max_epochs=2,
                 patience=2)
    before = [b["pooled"].clone() for b in engine.dev.batches]
    with torch.no_grad():
        engine.model.pooler.dense.weight.mul_(0.5)  # as a seed-drawn fresh pooler would be
    engine.features.activate(POOLED)
    after = engine.dev.batches
    encoded = engine.features.splits["dev"].encoder
    assert engine.features.splits["dev"].encoder_passes == 1
    assert not torch.equal(before[0], after[0]["pooled"])
    with torch.no_grad():
        for batch, features in zip(after, encoded, strict=True):
            torch.testing.assert_close(batch["pooled"],
                                       engine.model.pooler(features["features"]))


def test_the_cache_refuses_a_trainable_encoder(xnli_checkpoint):
    from fsxlt.errors import FsxltError

    engine = xnli_engine(xnli_checkpoint, True)
    engine.adapt(nli_data(6, seed=9), method="full", lrs=[1e-3], seed=1, max_epochs=1,
                 patience=1)
    with pytest.raises(FsxltError, match="frozen encoder"):
        engine.features.activate(ENCODER)


def test_replacing_the_dev_set_keeps_the_test_set_and_matches_a_new_engine(xnli_checkpoint):
    """XNLI/PAWS-X: a sweep worker swaps the per-K dev set instead of rebuilding the engine."""
    bucket, other_dev = nli_data(9, seed=9), nli_data(25, seed=11)
    swapped = xnli_engine(xnli_checkpoint, True)
    swapped.adapt(bucket, method="fc-pooler", lrs=[1e-2], seed=1, max_epochs=3, patience=3)
    test_split = swapped.features.splits["test"]
    swapped.replace_dev(other_dev, "dev-k2.jsonl")
    fresh = AdaptEngine.from_start("xnli", "de", str(xnli_checkpoint), dev=other_dev,
                                   test=nli_data(21, seed=4), dev_source="dev-k2.jsonl",
                                   device="cpu")
    for method in ("fc-pooler", "full"):
        a = swapped.adapt(bucket, method=method, lrs=[1e-2], seed=1, max_epochs=4, patience=4)
        b = fresh.adapt(bucket, method=method, lrs=[1e-2], seed=1, max_epochs=4, patience=4)
        assert strip_timings(a) == strip_timings(b), method
    assert swapped.features.splits["test"] is test_split and test_split.encoder_passes == 1
    assert swapped.dev_info == fresh.dev_info and len(swapped.dev.encoded.gold) == 25
