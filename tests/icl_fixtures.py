"""Test helpers for in-context learning: tiny causal LMs built from a config, saved.

Nothing comes from the hub: the tokenizer is the tiny WordPiece vocabulary
of :mod:`tests.train_fixtures` plus the prompt words below, and each model is
a 2-layer, 32-dim decoder of a seeded random init (Llama, GPT-2, or Gemma 3
with a sliding window shorter than the prompts, so that the cache's window
handling is exercised).
"""

from __future__ import annotations

from pathlib import Path

import torch
import yaml

from tests.train_fixtures import VOCAB, make_tokenizer

PROMPT_WORDS = ("premise", "hypothesis", "answer", ":", "yes", "no", "maybe", "?", "n", "/",
                "does", "entail", "or",
                # label words the tests prompt with (an unknown label word is refused)
                "ja", "vielleicht", "nein", "negative", "positive")


def make_causal_lm_dir(directory: Path, kind: str = "llama", seed: int = 0,
                       context: int = 512, extra_words: tuple[str, ...] = ()) -> Path:
    """Save a tiny random causal LM of ``kind`` (llama, gpt2, gemma3) and its tokenizer;
    ``extra_words`` join the vocabulary after :data:`PROMPT_WORDS` (without them, the
    model and tokenizer are those of earlier versions)."""
    from transformers import (
        Gemma3ForCausalLM,
        Gemma3TextConfig,
        GPT2Config,
        GPT2LMHeadModel,
        LlamaConfig,
        LlamaForCausalLM,
    )

    directory = Path(directory)
    tokenizer = make_tokenizer(directory / "_vocab", PROMPT_WORDS + tuple(extra_words))
    vocab = len(VOCAB) + len(PROMPT_WORDS) + len(extra_words)
    if kind == "gpt2":
        config = GPT2Config(vocab_size=vocab, n_embd=32, n_layer=2, n_head=2, n_positions=context)
        model_class = GPT2LMHeadModel
    elif kind == "gemma3":
        config = Gemma3TextConfig(vocab_size=vocab, hidden_size=32, intermediate_size=64,
                                  num_hidden_layers=2, num_attention_heads=2,
                                  num_key_value_heads=1, head_dim=16, sliding_window=8,
                                  layer_types=["sliding_attention", "full_attention"],
                                  max_position_embeddings=context, pad_token_id=0)
        model_class = Gemma3ForCausalLM
    else:
        config = LlamaConfig(vocab_size=vocab, hidden_size=32, intermediate_size=64,
                             num_hidden_layers=2, num_attention_heads=2, num_key_value_heads=1,
                             max_position_embeddings=context, pad_token_id=0)
        model_class = LlamaForCausalLM
    torch.manual_seed(seed)
    model_class(config).save_pretrained(directory)
    tokenizer.save_pretrained(directory)
    return directory


def write_task_yaml(path: Path, base: str = "xnli", **icl_changes) -> Path:
    """A copy of a built-in task's YAML whose icl section has ``icl_changes`` (a value of
    None removes the key; ``icl=None`` removes the section)."""
    from importlib import resources

    raw = yaml.safe_load(resources.files("fsxlt").joinpath("configs", f"{base}.yaml")
                         .read_text(encoding="utf-8"))
    if "icl" in icl_changes and icl_changes["icl"] is None:
        raw.pop("icl")
    else:
        for key, value in icl_changes.items():
            if value is None:
                raw["icl"].pop(key, None)
            else:
                raw["icl"][key] = value
    path.write_text(yaml.safe_dump(raw, allow_unicode=True), encoding="utf-8")
    return path


def make_gguf_dir(directory: Path, seed: int = 0, name: str = "tiny.gguf") -> Path:
    """Write a tiny Llama as a float32 GGUF file (random weights; a SentencePiece-style
    vocabulary: every byte as a fallback token, a few words) into ``directory``;
    transformers loads it with ``gguf_file=name``."""
    import gguf
    import numpy as np

    rng = np.random.default_rng(seed)
    vocab, hidden, layers, ffn, heads = 300, 32, 2, 64, 4
    directory.mkdir(parents=True, exist_ok=True)
    writer = gguf.GGUFWriter(str(directory / name), "llama")
    writer.add_context_length(2048)
    writer.add_embedding_length(hidden)
    writer.add_block_count(layers)
    writer.add_feed_forward_length(ffn)
    writer.add_head_count(heads)
    writer.add_head_count_kv(heads)
    writer.add_rope_dimension_count(hidden // heads)
    writer.add_layer_norm_rms_eps(1e-5)
    words = ["▁" + w for w in ("yes", "no", "maybe", "the", "a", "is", "true", "false",
                               "question", "answer", "entailment", "neutral",
                               "contradiction", "right", "also", "?", ",")] + ["▁"]
    tokens = ["<unk>", "<s>", "</s>"] + [f"<0x{i:02X}>" for i in range(256)] + words
    tokens += [f"▁w{i}" for i in range(vocab - len(tokens))]
    writer.add_vocab_size(len(tokens))
    writer.add_tokenizer_model("llama")
    writer.add_token_list(tokens)
    writer.add_token_scores([0.0] * 259 + [-float(i) for i in range(len(tokens) - 259)])
    writer.add_token_types([2, 3, 3] + [6] * 256 + [1] * (len(tokens) - 259))
    writer.add_bos_token_id(1)
    writer.add_eos_token_id(2)
    writer.add_unk_token_id(0)

    def tensor(name: str, *shape: int) -> None:
        writer.add_tensor(name, (rng.standard_normal(shape) * 0.1).astype(np.float32))

    tensor("token_embd.weight", len(tokens), hidden)
    for i in range(layers):
        for part, shape in (("attn_q", (hidden, hidden)), ("attn_k", (hidden, hidden)),
                            ("attn_v", (hidden, hidden)), ("attn_output", (hidden, hidden)),
                            ("ffn_gate", (ffn, hidden)), ("ffn_up", (ffn, hidden)),
                            ("ffn_down", (hidden, ffn))):
            tensor(f"blk.{i}.{part}.weight", *shape)
        writer.add_tensor(f"blk.{i}.attn_norm.weight", np.ones(hidden, np.float32))
        writer.add_tensor(f"blk.{i}.ffn_norm.weight", np.ones(hidden, np.float32))
    writer.add_tensor("output_norm.weight", np.ones(hidden, np.float32))
    tensor("output.weight", len(tokens), hidden)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return directory
