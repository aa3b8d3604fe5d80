"""Greedy generation over the shared-prefix cache (fsxlt.icl.generation)."""

from __future__ import annotations

import pytest
import torch

from fsxlt.errors import FsxltError
from fsxlt.icl.generation import DecodeSettings, cut, generate
from tests.icl_fixtures import make_causal_lm_dir


@pytest.fixture(scope="module", params=["llama", "gpt2", "gemma3"])
def tiny_lm(request, tmp_path_factory):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    directory = make_causal_lm_dir(tmp_path_factory.mktemp(request.param), request.param)
    model = AutoModelForCausalLM.from_pretrained(directory, dtype=torch.float32).eval()
    return model, AutoTokenizer.from_pretrained(directory)


def _ids(tokenizer, text: str) -> list[int]:
    return list(tokenizer(text, add_special_tokens=False)["input_ids"])


def _prompt(tokenizer):
    prefix = _ids(tokenizer, "premise : the cat sat . answer : yes premise : dogs run . "
                             "answer : no")
    queries = [_ids(tokenizer, text) for text in (
        "premise : the dog sat . answer :", "premise : cats run . answer :",
        "premise : the cat ran . answer :", "premise : a dog sat on the cat . answer :",
        "answer :")]
    return prefix, queries


def test_cached_generation_equals_uncached_token_for_token(tiny_lm):
    """Queries of several lengths (batches of one length, one padded never), a prefix longer
    than Gemma's 8-token sliding window: the cached path generates the naive path's text."""
    model, tokenizer = tiny_lm
    prefix, queries = _prompt(tokenizer)
    settings = DecodeSettings(max_new_tokens=12, stop=("?",))
    cached = generate(model, tokenizer, prefix, queries, settings, batch_size=2)
    naive = generate(model, tokenizer, prefix, queries, settings, cached=False)
    assert cached == naive
    assert any(text for text in cached)   # the random model does generate words


def test_generation_tokens_match_transformers_greedy(tiny_lm):
    """The naive path is greedy decoding as transformers' generate does it (no stop string
    reached: the whole budget)."""
    model, tokenizer = tiny_lm
    prefix, queries = _prompt(tokenizer)
    ids = torch.tensor([prefix + queries[0]])
    want = model.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=6,
                          do_sample=False, eos_token_id=None, pad_token_id=0)[0, ids.shape[1]:]
    got = generate(model, tokenizer, prefix, [queries[0]],
                   DecodeSettings(max_new_tokens=6, stop=("\0",)))
    assert got == [tokenizer.decode(want.tolist(), skip_special_tokens=True).strip()]


def test_batch_size_does_not_change_what_is_generated(tiny_lm):
    model, tokenizer = tiny_lm
    prefix, queries = _prompt(tokenizer)
    settings = DecodeSettings(max_new_tokens=8, stop=("?",))
    assert generate(model, tokenizer, prefix, queries, settings, batch_size=1) == \
        generate(model, tokenizer, prefix, queries, settings, batch_size=8)


def test_stop_strings_cut_and_settings_are_checked(tiny_lm):
    model, tokenizer = tiny_lm
    assert cut(" what is it? and more\nnext", ("\n", "?")) == "what is it"
    assert cut("no stop here ", ("\n",)) == "no stop here"
    prefix, queries = _prompt(tokenizer)
    with pytest.raises(FsxltError, match="at least 1"):
        generate(model, tokenizer, prefix, queries, DecodeSettings(max_new_tokens=0))
    with pytest.raises(FsxltError, match="cannot be empty"):
        generate(model, tokenizer, prefix, queries, DecodeSettings(stop=("",)))
    with pytest.raises(FsxltError, match="context of 512"):
        generate(model, tokenizer, prefix, queries, DecodeSettings(max_new_tokens=600))


def test_a_gguf_directory_needs_no_config_json(tmp_path):
    """A folder holding only a GGUF file is a model (the GGUF file carries the config): it is
    not refused as a directory without config.json; a broken GGUF file is one line."""
    from fsxlt.icl.model import load_causal_lm

    (tmp_path / "model.gguf").write_bytes(b"not a gguf file")
    with pytest.raises(FsxltError) as caught:
        load_causal_lm(str(tmp_path), "model.gguf")
    assert "no config.json" not in str(caught.value)
    assert str(tmp_path) in str(caught.value) and "\n" not in str(caught.value)


def test_the_generation_benchmark_finds_both_paths_agree(tmp_path):
    """scripts/bench_generation.py on QA by generation with a tiny Gemma 3 (its sliding window
    shorter than the prompt): every path generates the naive texts (no timing asserted)."""
    import importlib.util
    import json
    from pathlib import Path

    from tests.qa_fixtures import write_xquad

    script = Path(__file__).resolve().parents[1] / "scripts" / "bench_generation.py"
    spec = importlib.util.spec_from_file_location("bench_generation", script)
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    threads = torch.get_num_threads()
    try:
        status = bench.main(["--model", str(make_causal_lm_dir(tmp_path / "lm", "gemma3")),
                             "--data-dir", str(write_xquad(tmp_path / "data", ("en", "de"))),
                             "--test-size", "6", "--max-new-tokens", "5", "--threads", "1",
                             "--json", str(tmp_path / "bench.json")])
    finally:
        torch.set_num_threads(threads)
    figures = json.loads((tmp_path / "bench.json").read_text())
    assert status == 0 and figures["test_examples"] == 6
    assert figures["auto_takes"] == "one-length"  # the 8-token window: padding is not exact
    assert figures["outputs_differing"]["one-length"] == 0
    assert figures["padded_batches"] <= figures["one_length_batches"]


@pytest.mark.parametrize("batching", ["auto", "padded", "one-length"])
def test_every_batching_generates_the_naive_texts(tiny_lm, batching):
    """Padded batches (left padding, a mask, each token at its own position) generate what
    each full prompt alone generates, for queries of five lengths in batches of 2, 3 and 5;
    Gemma 3's window (8 tokens here) is shorter than the prompts, so ``auto`` batches it by
    one length and ``padded`` is asked of it with its window widened to the whole context."""
    model, tokenizer = tiny_lm
    prefix, queries = _prompt(tokenizer)
    queries = [*queries, queries[1][:3], queries[3] + queries[0][-2:]]
    settings = DecodeSettings(max_new_tokens=10, stop=("?",), batching=batching)
    window = getattr(model.config, "sliding_window", None)
    if batching == "padded" and window is not None:
        model.config.sliding_window = model.config.max_position_embeddings
    try:
        naive = generate(model, tokenizer, prefix, queries, settings, cached=False)
        for batch_size in (2, 3, 5):
            assert generate(model, tokenizer, prefix, queries, settings,
                            batch_size=batch_size) == naive
    finally:
        if window is not None:
            model.config.sliding_window = window


def test_auto_pads_only_where_the_window_holds_the_whole_prompt(tiny_lm):
    from fsxlt.icl.generation import _one_length, sliding_window

    model, tokenizer = tiny_lm
    prefix, queries = _prompt(tokenizer)
    auto = DecodeSettings(max_new_tokens=4)
    window = sliding_window(model)
    assert (window is None) == (model.config.model_type != "gemma3_text")
    assert _one_length(model, prefix, queries, auto) == (window is not None)
    assert not _one_length(model, prefix, queries, DecodeSettings(batching="padded"))
    assert _one_length(model, prefix, queries, DecodeSettings(batching="one-length"))
    if window is not None:
        assert not _one_length(model, [], [[1, 2]], DecodeSettings(max_new_tokens=window - 2))
        assert _one_length(model, [], [[1, 2]], DecodeSettings(max_new_tokens=window - 1))


@pytest.mark.parametrize("seed", range(20))
def test_batches_cover_every_query_once_in_length_order(seed):
    """Over random query lengths and batch sizes: each query in exactly one batch, no batch
    over the size, lengths never decreasing; one-length batches hold one length each."""
    import random

    from fsxlt.icl.generation import _batches

    rng = random.Random(seed)
    queries = [[0] * rng.randint(1, 6) for _ in range(rng.randint(1, 30))]
    size = rng.randint(1, 8)
    for one_length in (False, True):
        batches = _batches(queries, size, one_length)
        flat = [i for batch in batches for i in batch]
        assert sorted(flat) == list(range(len(queries)))
        assert all(0 < len(batch) <= size for batch in batches)
        lengths = [len(queries[i]) for i in flat]
        assert lengths == sorted(lengths)
        if one_length:
            assert all(len({len(queries[i]) for i in batch}) == 1 for batch in batches)
        else:  # full batches but the last
            assert all(len(batch) == size for batch in batches[:-1])


def test_batching_is_checked_and_described():
    assert DecodeSettings().describe()["batching"] == "auto"
    assert DecodeSettings(batching="one-length").describe() != DecodeSettings().describe()
    with pytest.raises(FsxltError, match="batching is one of auto, padded, one-length"):
        DecodeSettings(batching="ragged").check()
