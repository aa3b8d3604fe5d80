"""A tiny multilingual BERT for the synthetic language family, built once and cached.

What: a WordPiece vocabulary learned deterministically (see
:func:`learn_wordpiece_vocab`) from the unlabelled corpora of all languages
together (``<data_dir>/corpus/*.txt``, written by
:func:`fsxlt.synthetic.generate_benchmark`), and a small BERT (default 2
layers, hidden size 128) pretrained with masked language
modelling on all languages together, like mBERT in miniature. Nothing tells
the model which words are translations: whatever crosslingual alignment it
has comes, as in mBERT, from shared surface forms (the ``overlap``), shared
subwords, digits, punctuation and the shared latent grammar. That is what
makes zero-shot transfer work partially and degrade with lower overlap.

The result is an ordinary Hugging Face model directory: ``AutoModel`` and
``AutoTokenizer`` load it (the weights are those of ``BertForPreTraining``,
so the pooler is included and is deterministic; it is not trained by MLM).

Cache: the directory is ``<out_dir>/tiny-bert-<key>``, where ``key`` hashes
the corpus files' contents, every setting and the seed. A second call with
the same inputs finds the directory (and its ``fsxlt-encoder.json``) and
returns at once. The directory is built in a temporary sibling and renamed
into place, so an interrupted build never looks finished.

Determinism: the vocabulary depends only on the corpus; the initial weights
(``torch.manual_seed`` inside a forked RNG state, so the caller's global RNG
is untouched), the masking and the batch order all derive from ``seed``.
With the same number of threads the saved weights are identical; across
thread counts floating-point summation order may differ in the last bits.
"""

from __future__ import annotations

import heapq
import json
import math
import os
import shutil
import tempfile
import time
from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import asdict, dataclass
from itertools import pairwise
from pathlib import Path
from typing import Any

from fsxlt.errors import FsxltError
from fsxlt.fileio import (
    atomic_write_text,
    clear_stale_temps,
    dumps_json,
    sha256_file,
    sha256_text,
    temp_prefix,
)

BUILD_VERSION = 2  # 2: own deterministic WordPiece learner (1: tokenizers' trainer)
SPECIAL_TOKENS = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")
INFO_FILE = "fsxlt-encoder.json"


@dataclass(frozen=True)
class EncoderSettings:
    """Sizes and pretraining budget of the tiny encoder.

    The defaults pretrain in about a minute on two CPU cores. ``steps`` of
    masked language modelling on batches of ``batch_size`` packed sequences
    of at most ``max_length`` wordpieces; ``lr`` with linear warmup over
    ``warmup_steps`` and linear decay to a tenth. ``corpus_lines`` caps the
    lines read per language (None: all).
    """

    vocab_size: int = 2000
    hidden_size: int = 128
    num_layers: int = 2
    num_heads: int = 2
    intermediate_size: int = 256
    max_position_embeddings: int = 128
    max_length: int = 64
    steps: int = 1000
    batch_size: int = 32
    lr: float = 1e-3
    warmup_steps: int = 50
    mask_prob: float = 0.15
    corpus_lines: int | None = None


def _corpus_files(data_dir: Path) -> list[Path]:
    corpus = data_dir / "corpus"
    files = sorted(corpus.glob("*.txt")) if corpus.is_dir() else []
    if not files:
        raise FsxltError(f"{corpus}: no corpus files (*.txt); generate the benchmark first "
                         "(fsxlt.synthetic.generate_benchmark)")
    return files


def cache_key(data_dir: str | Path, settings: EncoderSettings, seed: int) -> str:
    """The hash that names a build: corpus contents, settings, seed and build version."""
    files = _corpus_files(Path(data_dir))
    payload = {"build_version": BUILD_VERSION, "seed": seed, "settings": asdict(settings),
               "corpus": {f.name: sha256_file(f) for f in files}}
    return sha256_text(json.dumps(payload, sort_keys=True))[:16]


def _read_corpus(files: list[Path], cap: int | None) -> dict[str, list[str]]:
    corpus = {}
    for path in files:
        lines = [ln for ln in path.read_text(encoding="utf-8").splitlines() if ln.strip()]
        corpus[path.stem] = lines[:cap] if cap is not None else lines
    return corpus


def count_words(lines: list[str]) -> Counter[str]:
    """Word frequencies after BERT's cased normalisation and pre-tokenisation (``tokenizers``)."""
    from tokenizers import normalizers, pre_tokenizers

    normalizer = normalizers.BertNormalizer(clean_text=True, handle_chinese_chars=True,
                                            strip_accents=False, lowercase=False)
    pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    counts: Counter[str] = Counter()
    for line in lines:
        counts.update(word for word, _ in
                      pre_tokenizer.pre_tokenize_str(normalizer.normalize_str(line)))
    return counts


def learn_wordpiece_vocab(word_counts: Counter[str], vocab_size: int,
                          min_frequency: int = 2) -> list[str]:
    """A WordPiece vocabulary learned by frequency-ordered pair merges, deterministically.

    Why not ``tokenizers.trainers.WordPieceTrainer``: it breaks ties between
    equally frequent pairs (and characters) by hash-map order, which changes
    from process to process, so two builds from the same corpus got different
    vocabularies (different ids, sometimes different pieces) and the demo was
    not reproducible. This learner follows the same recipe (words split into
    a first character and ``##``-prefixed continuation characters; repeatedly
    merge the most frequent adjacent pair, counted over word frequencies,
    while it occurs at least ``min_frequency`` times) and breaks ties by the
    pair's text, so the same counts always give the same list. Order: special
    tokens, the sorted alphabet, then pieces in merge order.
    """
    splits = {word: [word[0], *(f"##{ch}" for ch in word[1:])]
              for word in sorted(word_counts) if word}
    vocab = list(SPECIAL_TOKENS)
    vocab += sorted({piece for pieces in splits.values() for piece in pieces} - set(vocab))
    known = set(vocab)
    pair_counts: Counter[tuple[str, str]] = Counter()
    words_with: dict[tuple[str, str], set[str]] = defaultdict(set)
    heap: list[tuple[int, tuple[str, str]]] = []  # (-count, pair); stale entries skipped

    def tally(word: str, sign: int) -> None:
        pieces, freq = splits[word], word_counts[word]
        for pair in pairwise(pieces):
            pair_counts[pair] += sign * freq
            if sign > 0:
                words_with[pair].add(word)
            if pair_counts[pair] > 0:
                heapq.heappush(heap, (-pair_counts[pair], pair))

    for word in splits:
        tally(word, +1)
    while len(vocab) < vocab_size and heap:
        negative_count, best = heapq.heappop(heap)
        if -negative_count != pair_counts.get(best):
            continue  # a count that has changed since this entry was pushed
        if -negative_count < min_frequency:
            break
        merged = best[0] + best[1].removeprefix("##")
        for word in sorted(words_with.pop(best)):
            pieces = splits[word]
            if best not in pairwise(pieces):
                continue  # the pair was already merged away in this word
            tally(word, -1)
            splits[word] = _merge_pair(pieces, best, merged)
            tally(word, +1)
        del pair_counts[best]
        if merged not in known:
            vocab.append(merged)
            known.add(merged)
    return vocab


def _merge_pair(pieces: list[str], pair: tuple[str, str], merged: str) -> list[str]:
    """``pieces`` with every non-overlapping occurrence of ``pair`` (left to right) joined."""
    out, i = [], 0
    while i < len(pieces):
        if i + 1 < len(pieces) and (pieces[i], pieces[i + 1]) == pair:
            out.append(merged)
            i += 2
        else:
            out.append(pieces[i])
            i += 1
    return out


def train_tokenizer(lines: list[str], vocab_size: int, max_length: int):
    """A cased BERT WordPiece tokenizer whose vocabulary is learned from ``lines``."""
    from transformers import BertTokenizer

    pieces = learn_wordpiece_vocab(count_words(lines), vocab_size)
    return BertTokenizer(vocab={piece: i for i, piece in enumerate(pieces)}, do_lower_case=False,
                         strip_accents=False, tokenize_chinese_chars=True,
                         model_max_length=max_length)


def _pack(ids_per_line: list[list[int]], max_len: int) -> list[list[int]]:
    """Greedily concatenate consecutive lines (without special tokens) up to ``max_len``."""
    sequences, current = [], []
    for ids in ids_per_line:
        ids = ids[:max_len]
        if current and len(current) + len(ids) > max_len:
            sequences.append(current)
            current = []
        current = current + ids
    if current:
        sequences.append(current)
    return sequences


def _pretrain(tokenizer, corpus: dict[str, list[str]], settings: EncoderSettings, seed: int,
              log: Callable[[str], None]) -> tuple[Any, list[list[float]]]:
    import torch
    from transformers import BertConfig, BertForPreTraining

    cls_id, sep_id, pad_id = tokenizer.cls_token_id, tokenizer.sep_token_id, tokenizer.pad_token_id
    sequences: list[list[int]] = []
    for lang in sorted(corpus):
        ids = tokenizer(corpus[lang], add_special_tokens=False)["input_ids"]
        sequences += [[cls_id, *seq, sep_id] for seq in _pack(ids, settings.max_length - 2)]
    config = BertConfig(
        vocab_size=len(tokenizer), hidden_size=settings.hidden_size,
        num_hidden_layers=settings.num_layers, num_attention_heads=settings.num_heads,
        intermediate_size=settings.intermediate_size,
        max_position_embeddings=settings.max_position_embeddings, type_vocab_size=2,
        pad_token_id=pad_id)
    # Initial weights and dropout use torch's global RNG: seed it inside a forked state so
    # that the build is deterministic and the caller's RNG state is left as it was.
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = BertForPreTraining(config)
        curve = _mlm_loop(model, sequences, settings, seed, tokenizer, log)
    if not math.isfinite(curve[-1][1]):
        raise FsxltError("tiny encoder pretraining diverged (loss is not finite); lower lr")
    model.eval()
    return model, curve


def _mlm_loop(model, sequences: list[list[int]], settings: EncoderSettings, seed: int,
              tokenizer, log: Callable[[str], None]) -> list[list[float]]:
    import torch

    pad_id, mask_id = tokenizer.pad_token_id, tokenizer.mask_token_id
    n_special = len(SPECIAL_TOKENS)
    gen = torch.Generator().manual_seed(seed)
    optimizer = torch.optim.AdamW(model.parameters(), lr=settings.lr, weight_decay=0.01)

    def lr_at(step: int) -> float:
        if step < settings.warmup_steps:
            return (step + 1) / settings.warmup_steps
        rest = (step - settings.warmup_steps) / max(1, settings.steps - settings.warmup_steps)
        return 1.0 - 0.9 * rest

    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lr_at)
    order: list[int] = []
    curve: list[list[float]] = []
    running = 0.0
    model.train()
    for step in range(settings.steps):
        if len(order) < settings.batch_size:
            order += torch.randperm(len(sequences), generator=gen).tolist()
        batch, order = order[:settings.batch_size], order[settings.batch_size:]
        width = max(len(sequences[i]) for i in batch)
        input_ids = torch.full((len(batch), width), pad_id, dtype=torch.long)
        for row, i in enumerate(batch):
            input_ids[row, :len(sequences[i])] = torch.tensor(sequences[i])
        attention = (input_ids != pad_id).long()
        maskable = input_ids >= n_special
        chosen = (torch.rand(input_ids.shape, generator=gen) < settings.mask_prob) & maskable
        roll = torch.rand(input_ids.shape, generator=gen)
        random_ids = torch.randint(n_special, len(tokenizer), input_ids.shape, generator=gen)
        inputs = input_ids.clone()
        inputs[chosen & (roll < 0.8)] = mask_id
        swap = chosen & (roll >= 0.8) & (roll < 0.9)
        inputs[swap] = random_ids[swap]
        hidden = model.bert(input_ids=inputs, attention_mask=attention).last_hidden_state
        logits = model.cls.predictions(hidden[chosen])  # the vocabulary projection, masked only
        loss = torch.nn.functional.cross_entropy(logits, input_ids[chosen])
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        scheduler.step()
        running += loss.item()
        if (step + 1) % 50 == 0 or step + 1 == settings.steps:
            n = (step % 50) + 1
            curve.append([step + 1, round(running / n, 4)])
            log(f"MLM step {step + 1}/{settings.steps}: loss {running / n:.3f}")
            running = 0.0
    return curve


def build_tiny_encoder(data_dir: str | Path, out_dir: str | Path, seed: int = 0, *,
                       settings: EncoderSettings | None = None, threads: int | None = None,
                       log: Callable[[str], None] | None = None) -> Path:
    """Train (or find in the cache) the tiny encoder for a synthetic benchmark.

    ``data_dir``: a directory written by ``generate_benchmark`` (its
    ``corpus/*.txt`` are read). ``out_dir``: the cache root; the model lives
    in ``out_dir/tiny-bert-<key>``, which is returned. ``threads`` sets
    torch's intra-op threads for the build (restored afterwards).
    """
    settings = settings or EncoderSettings()
    log = log or (lambda _msg: None)
    data_dir, out_dir = Path(data_dir), Path(out_dir)
    key = cache_key(data_dir, settings, seed)
    target = out_dir / f"tiny-bert-{key}"
    if (target / INFO_FILE).is_file():
        log(f"tiny encoder: cache hit {target}")
        return target

    import torch
    import transformers

    transformers.utils.logging.disable_progress_bar()  # no "Writing model shards" bar:
    # the log says the build (fsxlt.models.model.quiet_transformers does the same upstairs)
    started = time.perf_counter()
    previous_threads = torch.get_num_threads()
    if threads is not None:
        torch.set_num_threads(threads)
    try:
        files = _corpus_files(data_dir)
        corpus = _read_corpus(files, settings.corpus_lines)
        lines = [line for lang in sorted(corpus) for line in corpus[lang]]
        tokenizer = train_tokenizer(lines, settings.vocab_size, settings.max_position_embeddings)
        log(f"tiny encoder: WordPiece vocabulary of {len(tokenizer)} from {len(lines)} lines")
        model, curve = _pretrain(tokenizer, corpus, settings, seed, log)
    finally:
        torch.set_num_threads(previous_threads)

    out_dir.mkdir(parents=True, exist_ok=True)
    clear_stale_temps(target)
    staging = Path(tempfile.mkdtemp(prefix=temp_prefix(target), dir=out_dir))
    try:
        staging.chmod(0o755)
        model.save_pretrained(staging)
        tokenizer.save_pretrained(staging)
        info = {
            "format": "fsxlt-tiny-encoder", "build_version": BUILD_VERSION, "key": key,
            "seed": seed, "settings": asdict(settings),
            "corpus": {f.name: sha256_file(f) for f in files},
            "data_dir": str(data_dir), "vocab_size": len(tokenizer),
            "parameters": sum(p.numel() for p in model.bert.parameters()),
            "mlm_loss": curve, "build_seconds": round(time.perf_counter() - started, 1),
            "versions": {"torch": torch.__version__, "transformers": transformers.__version__},
        }
        atomic_write_text(staging / INFO_FILE, dumps_json(info))
        try:
            os.replace(staging, target)
        except OSError:
            # Another process finished the same build first: keep theirs.
            if not (target / INFO_FILE).is_file():
                raise
            shutil.rmtree(staging, ignore_errors=True)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    log(f"tiny encoder: built {target} in {time.perf_counter() - started:.1f}s")
    return target
