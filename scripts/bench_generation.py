"""Benchmark ICL by generation: padded batches and batches of one query length over the
shared-prefix cache, against generating from every full prompt with no cache at all.

    python scripts/bench_generation.py --task xquad --lang de --data-dir DIR
        [--shots 4] [--test-size 20] [--max-new-tokens 32] [--batch-size 8]
        [--threads 2] [--model DIR --gguf-file NAME] [--json OUT.json]

One prompt (``--shots`` demonstrations drawn from the task's dev split, seeded,
in the task's ``icl`` template) and ``--test-size`` test examples of the task's
test split are decoded greedily in one process, with the same model and token ids:

(a) **naive**: each test example's full prompt (instruction, demonstrations,
    query) is run whole at every generated token, no key/value cache;
(b) **one-length**: the demonstrations' cache is computed once; each batch of
    queries of one length continues a copy of it, one token per step (fsxlt
    0.5.0's only path; ``--batching one-length``);
(c) **padded**: the same cache, the queries sorted by length in full batches
    of ``--batch-size``, left-padded, with an attention mask and position ids
    (``--batching padded``; ``auto``, the default, takes it wherever the model
    has no sliding window shorter than the prompt) (:mod:`fsxlt.icl.generation`).

The script lists every example where a cached path's text differs from the naive
one (both texts, for a near-tie to be seen) and exits with status 1 when the
default's path (``auto_takes``: padded, or one-length on a sliding-window model
whose window the prompt overflows) differs; forced padding past such a window
is expected to differ, and is reported, not failed. The report gives examples
per second of each path, the ratios (padded over one-length is what the
default gains), the batches each cached path ran and the prompt's lengths;
loading and tokenizing are not timed. A generation
task (``xquad-qg``, ``qg``, ``ntg``) or an extractive QA task (``xquad``,
``mlqa``, ``tydiqa``) with a local ``--data-dir``.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from pathlib import Path

import torch

from fsxlt.data import load_split
from fsxlt.icl.generation import (
    DecodeSettings,
    _batches,
    _one_length,
    generate,
    sliding_window,
)
from fsxlt.icl.model import load_causal_lm
from fsxlt.icl.scoring import tokenize_prompt
from fsxlt.tasks import get_task
from fsxlt.tasks.prompts import PromptSettings, render


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", required=True, help="causal LM directory or hub name")
    parser.add_argument("--gguf-file", help="GGUF file inside --model")
    parser.add_argument("--task", default="xquad")
    parser.add_argument("--lang", default="de")
    parser.add_argument("--data-dir", required=True, help="the task's local files")
    parser.add_argument("--shots", type=int, default=4)
    parser.add_argument("--test-size", type=int, default=20)
    parser.add_argument("--max-new-tokens", type=int, default=32)
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", help="also write the figures here")
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    spec = get_task(args.task)
    pool = load_split(spec, args.lang, "dev", data_dir=args.data_dir).examples
    shots = random.Random(args.seed).sample(pool, args.shots)
    test = load_split(spec, args.lang, "test", data_dir=args.data_dir).examples
    test = random.Random(args.seed + 1).sample(test, min(args.test_size, len(test)))
    began = time.perf_counter()
    lm = load_causal_lm(args.model, args.gguf_file)
    load_s = time.perf_counter() - began
    text = render(spec.icl, spec.labels, PromptSettings(), args.lang, shots, test)
    prompt = tokenize_prompt(lm.tokenizer, text, "bench", check=False)
    timings, outputs, batches = {}, {}, {}
    for path in ("naive", "one-length", "padded"):
        settings = DecodeSettings(max_new_tokens=args.max_new_tokens,
                                  batching="one-length" if path == "naive" else path)
        began = time.perf_counter()
        outputs[path] = generate(lm.model, lm.tokenizer, prompt.prefix, prompt.queries,
                                 settings, cached=path != "naive", batch_size=args.batch_size)
        timings[path] = time.perf_counter() - began
        batches[path] = len(_batches(prompt.queries, args.batch_size, path == "one-length"))
    differ = {path: [i for i, (a, b) in enumerate(zip(outputs["naive"], outputs[path],
                                                      strict=True)) if a != b]
              for path in ("one-length", "padded")}
    rate = {path: round(len(test) / timings[path], 3) for path in timings}
    auto = "one-length" if _one_length(lm.model, prompt.prefix, prompt.queries, DecodeSettings(
        max_new_tokens=args.max_new_tokens)) else "padded"
    figures = {
        "model": args.model, "gguf_file": args.gguf_file, "task": spec.name,
        "language": args.lang, "shots": len(shots), "test_examples": len(test),
        "prefix_tokens": len(prompt.prefix),
        "mean_query_tokens": round(sum(map(len, prompt.queries)) / len(test), 1),
        "distinct_query_lengths": len({len(q) for q in prompt.queries}),
        "sliding_window": sliding_window(lm.model),
        "max_new_tokens": args.max_new_tokens, "threads": args.threads,
        "batch_size": args.batch_size, "load_s": round(load_s, 1),
        "naive_examples_per_s": rate["naive"],
        "one_length_examples_per_s": rate["one-length"], "one_length_batches":
        batches["one-length"], "padded_examples_per_s": rate["padded"],
        "padded_batches": batches["padded"],
        "one_length_over_naive": round(timings["naive"] / timings["one-length"], 2),
        "padded_over_one_length": round(timings["one-length"] / timings["padded"], 2),
        "padded_over_naive": round(timings["naive"] / timings["padded"], 2),
        "auto_takes": auto,
        "outputs_differing": {path: len(found) for path, found in differ.items()},
        "mean_output_chars": round(sum(map(len, outputs["padded"])) / len(test), 1),
    }
    print(json.dumps(figures, indent=1))
    if args.json:
        Path(args.json).write_text(json.dumps(figures, indent=1) + "\n", encoding="utf-8")
    for path, found in differ.items():
        for i in found:
            print(f"example {i}: {path} generated {outputs[path][i]!r}, the full prompt "
                  f"alone {outputs['naive'][i]!r}", file=sys.stderr)
    return 1 if differ[auto] else 0


if __name__ == "__main__":
    sys.exit(main())
