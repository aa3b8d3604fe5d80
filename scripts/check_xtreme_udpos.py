"""fsxlt's ``tokens=xtreme`` reading against XTREME's own UD-POS preprocessing, run on
generated CoNLL-U files.

    python scripts/check_xtreme_udpos.py --xtreme XTREME_CHECKOUT --python NX1_PYTHON \\
        --sentences 3000 --seed 0

XTREME converted UD with ``third_party/ud-conversion-tools/conllu_to_conll.py``
(``scripts/download_data.sh`` lines 91-92), written for networkx 1.x: ``--python`` is an
interpreter with networkx 1.11 installed (on Python 3.11 it needs two aliases, which
this script sets before running the converter). The converter's ``.conll`` output then
goes through ``udpos_preprocess`` of XTREME's ``utils_preprocess.py``, taken from the
file as it is (its module imports transformers, so the function alone is run).

Sentences are random: trees over 1-12 words with random UPOS, enhanced ``DEPS`` columns
with extra heads (cycles included), multiword tokens of 2-3 words, forms with spaces and
zero-width non-joiners, sentences whose forms are withheld, in es, fr, it (their own
precedence lists) and de, ar (the default list). XTREME's converter runs as its ``main``
does, a sentence at a time so that one it fails on (a tie its precedence list cannot
break; a cycle among enhanced heads its cycle removal turns into a missing head) is
counted and left out. Every sentence fsxlt refuses must be one XTREME fails on; every
other sentence XTREME converts must read the same in fsxlt (tokens and tags) after
XTREME's ``udpos_preprocess``. Prints the counts; exits 1 on any disagreement.

    python scripts/check_xtreme_udpos.py --contractions ../shared/data/udpos/dev-es.tsv

counts instead, in XTREME's Spanish TSVs, the tokens ``del`` and ``al`` (multiword tokens
XTREME fused; a ``.conllu`` file read as syntactic words has two tokens for each) by tag.
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import random
import subprocess
import sys
import tempfile
from argparse import Namespace
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from fsxlt.data.tagging import read_conll  # noqa: E402
from fsxlt.data.ud_xtreme import ConversionError, Span, Word, xtreme_tokens  # noqa: E402
from fsxlt.tasks import get_task  # noqa: E402

UPOS = tuple(get_task("udpos").labels)
LANGUAGES = ("es", "fr", "it", "de", "ar")
CONVERT = """
import ast, copy, fractions, json, math, collections, collections.abc, sys
from pathlib import Path
fractions.gcd = math.gcd
for name in ("Mapping", "MutableMapping", "Iterable", "Sequence", "Set"):
    setattr(collections, name, getattr(collections.abc, name))
script, conllu, conll, lang = sys.argv[1:]
sys.path.insert(0, script.rsplit("/", 1)[0])
from lib.conll import CoNLLReader
main = next(node for node in ast.parse(open(script).read()).body
            if isinstance(node, ast.FunctionDef) and node.name == "main")
lists = {}
for node in ast.walk(main):
    if (isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Subscript)
            and getattr(node.targets[0].value, "id", "") == "POSRANKPRECEDENCEDICT"):
        key = node.targets[0].slice.value
        lists[key] = eval(compile(ast.Expression(node.value), script, "eval"))
order = lists.get(lang, lists["default"])
reader = CoNLLReader()
kept, failed = [], []
for index, sent in enumerate(reader.read_conll_u(conllu)):
    try:
        sent.filter_sentence_content(True, lang, order, None, False, False)
        kept.append(sent)
    except Exception:
        failed.append(index)
reader.write_conll(kept, Path(conll), "conll2006", print_fused_forms=True,
                   print_comments=False)
print(json.dumps(failed))
"""


def _form(rng: random.Random) -> str:
    word = "".join(rng.choice("abcdeñéxyz") for _ in range(rng.randint(1, 5)))
    roll = rng.random()
    if roll < 0.05:
        return word + " " + word[::-1]
    if roll < 0.08:
        return word + "\u200c" + word
    return word


def sentence(rng: random.Random) -> tuple[list[Word], list[Span], list[str]]:
    """A random sentence: its words, multiword spans and CoNLL-U lines."""
    n = rng.randint(1, 12)
    order = list(range(1, n + 1))
    rng.shuffle(order)
    heads = {order[0]: 0}
    for place, word in enumerate(order[1:], start=1):
        heads[word] = rng.choice(order[:place])
    withheld = rng.random() < 0.05
    words, deps_column = [], {}
    for index in range(1, n + 1):
        extra = sorted({h for h in rng.sample(range(n + 1), k=min(2, n + 1)) if h != index}
                       - {heads[index]}) if rng.random() < 0.3 else []
        enhanced = bool(extra) or rng.random() < 0.5
        deps_column[index] = ("|".join(f"{h}:dep" for h in sorted({heads[index], *extra}))
                              if enhanced else "_")
        form = "_" if withheld or rng.random() < 0.02 else _form(rng)
        words.append(Word(index, form, rng.choice(UPOS), (heads[index], *extra), 0))
    spans = []
    index = 1
    while index < n:
        if rng.random() < 0.25:
            last = min(n, index + rng.randint(1, 2))
            spans.append(Span(index, last, _form(rng), 0))
            index = last + 1
        else:
            index += 1
    starts = {span.first: span for span in spans}
    lines = []
    for word in words:
        if word.id in starts:
            span = starts[word.id]
            lines.append(f"{span.first}-{span.last}\t{span.form}\t_\t_\t_\t_\t_\t_\t_\t_")
        lines.append(f"{word.id}\t{word.form}\t_\t{word.upos}\t_\t_\t{word.heads[0]}\tdep\t"
                     f"{deps_column[word.id]}\t_")
    return words, spans, lines


def xtreme_preprocess(repo: Path):
    """XTREME's ``udpos_preprocess``, taken from its file as it is."""
    source = (repo / "utils_preprocess.py").read_text()
    tree = ast.parse(source)
    function = next(node for node in tree.body
                    if isinstance(node, ast.FunctionDef) and node.name == "udpos_preprocess")
    namespace = {"os": os, "UDPOS_LANGUAGES": list(LANGUAGES)}
    exec(compile(ast.Module([function], []), "utils_preprocess.py", "exec"), namespace)
    return namespace["udpos_preprocess"]


def convert(repo: Path, python: str, conllu: Path, conll: Path, lang: str) -> list[int]:
    """Run XTREME's converter on ``conllu``: what its ``main`` does (the precedence lists
    read from the script), a sentence at a time; the indices of the sentences it fails on
    (left out of ``conll``)."""
    script = repo / "third_party" / "ud-conversion-tools" / "conllu_to_conll.py"
    done = subprocess.run([python, "-c", CONVERT, str(script), str(conllu), str(conll), lang],
                          capture_output=True, text=True, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--xtreme", type=Path, help="an XTREME checkout")
    parser.add_argument("--python", help="a Python with networkx 1.11")
    parser.add_argument("--contractions", type=Path, nargs="+",
                        help="XTREME Spanish TSVs: count del/al by tag, nothing else")
    parser.add_argument("--sentences", type=int, default=3000)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    if args.contractions:
        for path in args.contractions:
            found = Counter((token.lower(), tag) for s in read_conll(path, get_task("udpos"))
                            for token, tag in zip(s.tokens, s.tags, strict=True)
                            if token.lower() in ("del", "al"))
            print(f"{path.name}: {sum(found.values())} del/al tokens; "
                  + ", ".join(f"{t} {g}: {n}" for (t, g), n in sorted(found.items())))
        return 0
    if args.xtreme is None or args.python is None:
        parser.error("--xtreme and --python are needed to compare with XTREME")
    rng = random.Random(args.seed)
    task = get_task("udpos")
    work = Path(tempfile.mkdtemp(prefix="xtreme-udpos-"))
    preprocess = xtreme_preprocess(args.xtreme)
    counts = dict(agree=0, disagree=0, withheld=0, spans=0, refused=0, refused_fail=0,
                  xtreme_fails=0)
    for lang in LANGUAGES:
        sentences = [sentence(rng) for _ in range(args.sentences // len(LANGUAGES))]
        conllu = work / "ud" / f"{lang}_gen-ud-dev.conllu"
        conllu.parent.mkdir(parents=True, exist_ok=True)
        conllu.write_text("".join("\n".join(lines) + "\n\n" for _, _, lines in sentences))
        conll = work / "conll" / lang / f"{lang}_gen-ud-dev.conll"
        conll.parent.mkdir(parents=True, exist_ok=True)
        failed = set(convert(args.xtreme, args.python, conllu, conll, lang))
        counts["xtreme_fails"] += len(failed)
        ours = []
        for index, (words, spans, _) in enumerate(sentences):
            try:
                tokens = xtreme_tokens(words, spans, lang)
            except ConversionError:
                counts["refused"] += 1
                counts["refused_fail"] += index in failed
                continue
            if index in failed:
                continue  # XTREME stopped where fsxlt has a rule (counted above)
            counts["spans"] += len(spans)
            if tokens is None:
                counts["withheld"] += 1
            else:
                ours.append(tokens)
        preprocess(Namespace(data_dir=str(work / "conll"), output_dir=str(work / "tsv")))
        theirs = read_conll(work / "tsv" / f"dev-{lang}.tsv", task)
        if len(ours) != len(theirs):
            print(f"{lang}: fsxlt keeps {len(ours)} sentences, XTREME wrote {len(theirs)}")
            counts["disagree"] += 1
            continue
        for mine, its in zip(ours, theirs, strict=True):
            if [(t, g) for t, g, _ in mine] == list(zip(its.tokens, its.tags, strict=True)):
                counts["agree"] += 1
            else:
                counts["disagree"] += 1
                if counts["disagree"] <= 5:
                    print(f"{lang}: fsxlt {[(t, g) for t, g, _ in mine]} "
                          f"XTREME {list(zip(its.tokens, its.tags, strict=True))}")
    print(f"sentences agreeing: {counts['agree']}, disagreeing: {counts['disagree']} "
          f"(multiword tokens in them: {counts['spans']}; left out by both as withheld: "
          f"{counts['withheld']})")
    print(f"refused by fsxlt: {counts['refused']}, of which XTREME fails on "
          f"{counts['refused_fail']}; XTREME fails on {counts['xtreme_fails']} in all")
    return 0 if counts["disagree"] == 0 and counts["refused_fail"] == counts["refused"] else 1


if __name__ == "__main__":
    sys.exit(main())
