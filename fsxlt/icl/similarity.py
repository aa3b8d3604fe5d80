"""Demonstrations ordered by similarity to each test example (the shots stay the bucket's).

Every example is embedded by a sentence encoder (any Hugging Face encoder,
e.g. the source-trained model or a sentence-transformers checkpoint: the
mean of its last hidden states over the example's tokens, L2-normalised),
and each test example sees the bucket's examples in ascending cosine
similarity, the most similar last (next to the query); ties keep the
seeded order. Test examples with the same order share one prompt prefix.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch

from fsxlt.errors import FsxltError


def example_text(example: Any) -> str:
    """What an example says: its text(s), a multiple-choice example's passage."""
    if hasattr(example, "choices"):
        return example.text
    return example.text_a if example.text_b is None else f"{example.text_a} {example.text_b}"


@torch.no_grad()
def embed(texts: Sequence[str], encoder: Any, tokenizer: Any, *, batch_size: int = 32,
          max_length: int = 256) -> torch.Tensor:
    """Mean-pooled, L2-normalised last hidden states of ``texts`` (one row each)."""
    device = next(encoder.parameters()).device
    rows = []
    for first in range(0, len(texts), batch_size):
        batch = tokenizer(list(texts[first: first + batch_size]), padding=True, truncation=True,
                          max_length=max_length, return_tensors="pt").to(device)
        hidden = encoder(**batch).last_hidden_state
        mask = batch["attention_mask"].unsqueeze(-1).to(hidden.dtype)
        pooled = (hidden * mask).sum(dim=1) / mask.sum(dim=1).clamp(min=1.0)
        rows.append(torch.nn.functional.normalize(pooled.float(), dim=-1))
    return torch.cat(rows)


def load_encoder(name: str) -> tuple[Any, Any]:
    """A sentence encoder and its tokenizer (an fsxlt checkpoint's encoder, or any model)."""
    from transformers import AutoModel, AutoTokenizer

    from fsxlt.identity import hub_source
    from fsxlt.models.model import quiet_transformers

    quiet_transformers()
    source, revision = hub_source(name)  # a hub name: at the commit it resolves to
    try:
        tokenizer = AutoTokenizer.from_pretrained(source, **revision)
        encoder = AutoModel.from_pretrained(source, **revision)
    except (OSError, ValueError) as err:
        raise FsxltError(f"{name}: cannot load a sentence encoder "
                         f"({str(err).splitlines()[0]})") from None
    encoder.eval()
    return encoder, tokenizer


def similarity_orders(shots: Sequence[Any], test: Sequence[Any], encoder: Any,
                      tokenizer: Any) -> list[tuple[int, ...]]:
    """Per test example, the shots' positions in ascending similarity (most similar last;
    a tie keeps the shots' given order)."""
    if not shots:
        return [() for _ in test]
    vectors = embed([example_text(e) for e in list(shots) + list(test)], encoder, tokenizer)
    shot_vectors, test_vectors = vectors[: len(shots)], vectors[len(shots):]
    similarity = test_vectors @ shot_vectors.T
    return [tuple(sorted(range(len(shots)), key=lambda i, row=row: (float(row[i]), i)))
            for row in similarity]
