"""Benchmark ICL by generation: greedy decoding over the shared-prefix cache versus
generating from every full prompt with no cache at all.

    python scripts/bench_generation.py --task xquad --lang de --data-dir DIR
        [--shots 4] [--test-size 20] [--max-new-tokens 32] [--batch-size 8]
        [--threads 2] [--model DIR --gguf-file NAME] [--json OUT.json]

One prompt (``--shots`` demonstrations drawn from the task's dev split, seeded,
in the task's ``icl`` template) and ``--test-size`` test examples of the task's
test split are decoded greedily in one process, with the same model and token ids:

(a) **naive**: each test example's full prompt (instruction, demonstrations,
    query) is run whole at every generated token, no key/value cache;
(b) **cached**: the demonstrations' cache is computed once; each batch of
    queries of one length continues a copy of it, one token per step
    (:mod:`fsxlt.icl.generation`).

Both must generate the same text for every example, or the script exits with
status 1. The report gives examples per second of each path, their ratio
and the prompt's lengths; loading and tokenizing are not timed. A generation
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
from fsxlt.icl.generation import DecodeSettings, generate
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
    settings = DecodeSettings(max_new_tokens=args.max_new_tokens)
    timings, outputs = {}, {}
    for path, cached in (("naive", False), ("cached", True)):
        began = time.perf_counter()
        outputs[path] = generate(lm.model, lm.tokenizer, prompt.prefix, prompt.queries,
                                 settings, cached=cached, batch_size=args.batch_size)
        timings[path] = time.perf_counter() - began
    differ = [i for i, (a, b) in enumerate(zip(outputs["naive"], outputs["cached"],
                                               strict=True)) if a != b]
    figures = {
        "model": args.model, "gguf_file": args.gguf_file, "task": spec.name,
        "language": args.lang, "shots": len(shots), "test_examples": len(test),
        "prefix_tokens": len(prompt.prefix),
        "mean_query_tokens": round(sum(map(len, prompt.queries)) / len(test), 1),
        "distinct_query_lengths": len({len(q) for q in prompt.queries}),
        "max_new_tokens": args.max_new_tokens, "threads": args.threads,
        "batch_size": args.batch_size, "load_s": round(load_s, 1),
        "naive_examples_per_s": round(len(test) / timings["naive"], 3),
        "cached_examples_per_s": round(len(test) / timings["cached"], 3),
        "speedup": round(timings["naive"] / timings["cached"], 2),
        "outputs_differing": len(differ),
        "mean_output_chars": round(sum(map(len, outputs["cached"])) / len(test), 1),
    }
    print(json.dumps(figures, indent=1))
    if args.json:
        Path(args.json).write_text(json.dumps(figures, indent=1) + "\n", encoding="utf-8")
    if differ:
        print(f"{len(differ)} outputs differ between the paths (first: example {differ[0]})",
              file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
