"""Benchmark in-context learning: the shared-prefix cache versus scoring every full prompt.

    python scripts/bench_icl.py [--shots 4] [--test-size 200] [--batch-size 8] [--threads 1]
        [--model DIR --gguf-file NAME] [--task xnli --lang de --data FILE] [--json OUT.json]
    python scripts/bench_icl.py --against lm-eval --model DIR --gguf-file NAME
        --data-dir ../shared/data [--quick] [--cells xnli:1 pawsx:4 ...] [--buckets 2]
        [--test-size 12] [--threads 2] [--work DIR] [--json OUT.json]

``--against lm-eval`` runs lm-evaluation-harness's own evaluator and ``fsxlt icl
--preset lm-eval`` on the same buckets, model and test examples
(``scripts/bench_icl_lm_eval.py`` says how); its last line reads
``lm-eval/fsxlt per bucket: N.Nx (predictions equal)``, N.N the smallest cell's
ratio. Without it:

One bucket's prompt (``--shots`` demonstrations per label, in the task's
``icl`` template) and ``--test-size`` test examples are scored twice in one
process, with the same model and the same token ids:

(a) **naive**: every (example, option) row is scored with its whole prompt
    (instruction, demonstrations, query, option) in a forward pass of its own;
(b) **cached**: the demonstrations' key/value cache is computed once and every
    batch of rows is scored against a copy of it (:mod:`fsxlt.icl.scoring`).

Both must give the same log-likelihood for every option (max |Δ| at most
``--tolerance``, 1e-4 in fp32) or the script exits with status 1. The report
gives examples per second for each path and their ratio, and the prompt's
lengths. The timing excludes loading and tokenizing (the same for both).

Defaults: a Llama built from a config (hidden size 64, 2 layers) with a
WordPiece vocabulary written on the fly, XNLI's English prompt, generated
sentence pairs. ``--model DIR --gguf-file NAME`` loads a real causal LM
instead (e.g. Gemma 3 270M from the ``llm`` extra); ``--data FILE`` takes the
demonstrations (a seeded N-way K-shot draw) and the test examples (the next
ones) from a task file, e.g. ``../shared/data/xnli/dev-de.tsv``.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import bench_icl_lm_eval  # beside this script
import torch

from fsxlt.data import TextExample, read_examples
from fsxlt.icl.model import load_causal_lm
from fsxlt.icl.scoring import OptionScores, option_scores, plan_rows, tokenize_prompt
from fsxlt.tasks import TaskSpec, get_task
from fsxlt.tasks.prompts import PromptSettings, render

WORDS = ["the", "a", "cat", "dog", "went", "to", "city", "saw", "big", "small", "not",
         "happy", "sad", "today", "with", "and", "in", "is", "john", "maria", "paris", "lima"]
PROMPT_WORDS = ["premise", "hypothesis", "answer", ":", "yes", "no", "maybe", "?", "does",
                "entail", "or", ",", "."]


def tiny_model(directory: Path, seed: int) -> Path:
    """A 2-layer Llama (hidden 64) and a WordPiece tokenizer, saved under ``directory``."""
    from transformers import BertTokenizer, LlamaConfig, LlamaForCausalLM

    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + WORDS + PROMPT_WORDS
    (directory / "vocab.txt").write_text("\n".join(vocab) + "\n", encoding="utf-8")
    tokenizer = BertTokenizer(vocab=str(directory / "vocab.txt"), do_lower_case=True)
    config = LlamaConfig(vocab_size=len(vocab), hidden_size=64, intermediate_size=128,
                         num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                         max_position_embeddings=4096, pad_token_id=0)
    torch.manual_seed(seed)
    LlamaForCausalLM(config).save_pretrained(directory)
    tokenizer.save_pretrained(directory)
    return directory


def generated(n: int, labels: tuple[str, ...], seed: int) -> list[TextExample]:
    rng = random.Random(seed)

    def sentence() -> str:
        return " ".join(rng.choice(WORDS) for _ in range(rng.randint(6, 14)))

    return [TextExample(f"gen:{i}", sentence(), sentence(), labels[i % len(labels)])
            for i in range(n)]


def shots_and_test(spec: TaskSpec, args: argparse.Namespace) -> tuple[list, list]:
    """``--shots`` per label (seeded) and the next ``--test-size`` examples."""
    pool = (read_examples(args.data, spec, language=args.lang) if args.data
            else generated(len(spec.labels) * (args.shots + 1) + args.test_size, spec.labels,
                           args.seed))
    order = list(range(len(pool)))
    random.Random(args.seed).shuffle(order)
    shots, used = [], set()
    for label in spec.labels:
        picked = [i for i in order if pool[i].label == label][: args.shots]
        shots += [pool[i] for i in picked]
        used.update(picked)
    random.Random(args.seed + 1).shuffle(shots)
    test = [pool[i] for i in order if i not in used][: args.test_size]
    return shots, test


def timed(model: Any, prompt: Any, cached: bool, batch_size: int) -> tuple[OptionScores, float]:
    began = time.perf_counter()
    scores = option_scores(model, prompt, "bench", cached=cached, batch_size=batch_size)
    return scores, time.perf_counter() - began


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", help="causal LM directory or hub name (default: tiny)")
    parser.add_argument("--gguf-file", help="GGUF file inside --model")
    parser.add_argument("--task", default="xnli")
    parser.add_argument("--lang", default="de")
    parser.add_argument("--data", help="task file for shots and test examples")
    parser.add_argument("--shots", type=int, default=4, help="demonstrations per label")
    parser.add_argument("--test-size", type=int,
                        help="test examples (default 200; --against lm-eval: 12 per bucket)")
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument("--threads", type=int,
                        help="torch threads (default 1; --against lm-eval: 2)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--tolerance", type=float, default=1e-4)
    parser.add_argument("--json", help="also write the figures here")
    parser.add_argument("--against", choices=["lm-eval"],
                        help="time lm-eval's evaluator and fsxlt icl side by side")
    bench_icl_lm_eval.add_arguments(parser)
    args = parser.parse_args(argv)
    if args.against:
        args.threads = args.threads or 2
        return bench_icl_lm_eval.against_lm_eval(args)
    args.threads = args.threads or 1
    args.test_size = args.test_size or 200
    torch.set_num_threads(args.threads)
    spec = get_task(args.task)
    with tempfile.TemporaryDirectory() as scratch:
        began = time.perf_counter()
        name = args.model or str(tiny_model(Path(scratch), args.seed))
        lm = load_causal_lm(name, args.gguf_file)
        load_s = time.perf_counter() - began
        shots, test = shots_and_test(spec, args)
        text = render(spec.icl, spec.labels, PromptSettings(), args.lang, shots, test)
        prompt = tokenize_prompt(lm.tokenizer, text, "bench")
        naive, naive_s = timed(lm.model, prompt, False, args.batch_size)
        cached, cached_s = timed(lm.model, prompt, True, args.batch_size)
    diff = max(abs(a - b) for ra, rb in zip(cached.loglik, naive.loglik, strict=True)
               for a, b in zip(ra, rb, strict=True))
    rows = plan_rows(prompt, "bench").rows
    figures = {
        "model": args.model or "tiny llama (hidden 64, 2 layers)", "gguf_file": args.gguf_file,
        "task": spec.name, "language": args.lang, "data": args.data or "generated",
        "shots": len(shots), "test_examples": len(test), "rows": len(rows),
        "prefix_tokens": len(prompt.prefix),
        "mean_query_tokens": round(sum(map(len, prompt.queries)) / len(test), 1),
        "threads": args.threads, "batch_size": args.batch_size, "load_s": round(load_s, 1),
        "naive_examples_per_s": round(len(test) / naive_s, 2),
        "cached_examples_per_s": round(len(test) / cached_s, 2),
        "speedup": round(naive_s / cached_s, 2), "max_abs_diff": diff,
    }
    print(json.dumps(figures, indent=1))
    if args.json:
        Path(args.json).write_text(json.dumps(figures, indent=1) + "\n", encoding="utf-8")
    if diff > args.tolerance:
        print(f"log-likelihoods differ by {diff:.3g} > {args.tolerance:g}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
