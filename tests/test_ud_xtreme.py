"""UD-POS as XTREME's preprocessing read it (reading ``tokens=xtreme``, the study's input):
multiword tokens fused with their head word's tag, withheld forms and in-token spaces
dropped; recorded with the set, refused where it cannot be read.

XTREME's converter (google-research/xtreme 838c13b,
``third_party/ud-conversion-tools/lib/conll.py`` lines 104-229, ``conllu_to_conll.py``
lines 28-38) needs networkx 1.x and does not install here: the expected tokens below are
what it and ``utils_preprocess.py`` lines 191-225 gave for these sentences, run with
``scripts/check_xtreme_udpos.py``'s driver (which also compares the two over thousands of
generated sentences: docs/results/2026-12-07-ud-tokens.md)."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from fsxlt.cli import run_app
from fsxlt.data import read_examples
from fsxlt.data.hub import load_hub_split
from fsxlt.data.readings import make_reading, parse_reading, study_reading
from fsxlt.data.ud_xtreme import ConversionError, Span, Word, span_head, xtreme_tokens
from fsxlt.errors import DataFormatError, FsxltError
from fsxlt.sampling.check import check_set
from fsxlt.sampling.store import read_set
from fsxlt.tasks import get_task

XTREME = make_reading({"tokens": "xtreme"})


def _row(index: str, form: str, upos: str = "_", head: str = "_", deps: str = "_") -> str:
    return f"{index}\t{form}\t_\t{upos}\t_\t_\t{head}\tdep\t{deps}\t_"


SPANISH = [
    # del: de and el both hang off mar (a tie); Spanish's list puts ADP before DET
    [_row("1", "Vino", "VERB", "0"), _row("2-3", "del"), _row("2", "de", "ADP", "4"),
     _row("3", "el", "DET", "4"), _row("4", "mar", "NOUN", "1")],
    # dárselo: se and lo hang off dar, the span's one highest word
    [_row("1", "Quiero", "VERB", "0"), _row("2-4", "dárselo"), _row("2", "dar", "VERB", "1"),
     _row("3", "se", "PRON", "2"), _row("4", "lo", "PRON", "2")],
    # forms withheld, all but one: XTREME drops the sentence
    [_row("1", "_", "NOUN", "0"), _row("2", "_", "VERB", "1"), _row("3", "x", "PUNCT", "1")],
    # one withheld of three: kept, the _ as a token
    [_row("1", "Sí", "INTJ", "0"), _row("2", "_", "NOUN", "1"), _row("3", ".", "PUNCT", "1")],
]
GERMAN = [
    # zum: a tie under the default list (ADP before DET); ab: a enhanced head (1) gives
    # a more ancestors than b, so b is the highest word though the list prefers NOUN
    [_row("1", "Er", "PRON", "2"), _row("2", "geht", "VERB", "0"), _row("3-4", "zum"),
     _row("3", "zu", "ADP", "5", "5:case"), _row("4", "dem", "DET", "5", "5:det"),
     _row("5", "Haus", "NOUN", "2", "2:obl"), _row("6-7", "ab"),
     _row("6", "a", "NOUN", "2", "2:dep|1:dep"), _row("7", "b", "DET", "2", "2:dep")],
    # a zero-width non-joiner and a space inside a word
    [_row("1", "mi\u200cravam", "VERB", "0"), _row("2", "Hà Nội", "PROPN", "1")],
]
FRENCH = [
    [_row("1", "Il", "PRON", "2"), _row("2", "parle", "VERB", "0"), _row("3-4", "du"),
     _row("3", "de", "ADP", "5"), _row("4", "le", "DET", "5"), _row("5", "livre", "NOUN", "2")],
]
# what XTREME's conversion and preprocessing wrote for them (module docstring)
EXPECTED = {
    "es": [(("Vino", "del", "mar"), ("VERB", "ADP", "NOUN")),
           (("Quiero", "dárselo"), ("VERB", "VERB")),
           (("Sí", "_", "."), ("INTJ", "NOUN", "PUNCT"))],
    "de": [(("Er", "geht", "zum", "Haus", "ab"), ("PRON", "VERB", "ADP", "NOUN", "DET")),
           (("miravam", "HàNội"), ("VERB", "PROPN"))],
    "fr": [(("Il", "parle", "du", "livre"), ("PRON", "VERB", "ADP", "NOUN"))],
}


def _conllu(path: Path, sentences: list[list[str]]) -> Path:
    path.write_text("".join(f"# sent_id = {i}\n" + "\n".join(rows) + "\n\n"
                            for i, rows in enumerate(sentences, 1)), encoding="utf-8")
    return path


@pytest.mark.parametrize("lang,sentences", [("es", SPANISH), ("de", GERMAN), ("fr", FRENCH)])
def test_xtreme_tokens_are_what_xtremes_conversion_wrote(tmp_path, lang, sentences):
    path = _conllu(tmp_path / f"{lang}_x-ud-dev.conllu", sentences)
    read = read_examples(path, "udpos", language=lang, reading=XTREME)
    assert [(s.tokens, s.tags) for s in read] == EXPECTED[lang]
    words = read_examples(path, "udpos", language=lang)  # the default: syntactic words
    assert len(words) == len(sentences)
    assert all("-" not in token for s in words for token in s.tokens)
    first = {"es": ("de", "el"), "de": ("zu", "dem"), "fr": ("de", "le")}[lang]
    assert " ".join(first) in " ".join(words[0].tokens)  # the words, not the fused token


def test_a_tie_xtremes_list_cannot_break_is_refused_naming_its_line(tmp_path):
    # NOUN and ADJ tie under one head; Spanish's list ranks neither (XTREME's
    # list.index raises there)
    path = _conllu(tmp_path / "es.conllu", [
        [_row("1", "ve", "VERB", "0"), _row("2-3", "xy"), _row("2", "x", "NOUN", "1"),
         _row("3", "y", "ADJ", "1")]])
    with pytest.raises(DataFormatError, match=r"es.conllu:3: XTREME's conversion "
                       r"\(tokens=xtreme\): multiword token 2-3: its highest words tie and "
                       r"XTREME's precedence list for es has no ADJ, NOUN"):
        read_examples(path, "udpos", language="es", reading=XTREME)
    # the default list ranks both: NOUN first
    assert read_examples(path, "udpos", language="de", reading=XTREME)[0].tags == ("VERB",
                                                                                 "NOUN")


def _random_sentence(rng: random.Random) -> tuple[list[Word], list[Span]]:
    """A tree over 1-10 words (basic heads only), random UPOS, random multiword spans."""
    n = rng.randint(1, 10)
    order = list(range(1, n + 1))
    rng.shuffle(order)
    heads = {order[0]: 0}
    for place, word in enumerate(order[1:], start=1):
        heads[word] = rng.choice(order[:place])
    tags = get_task("udpos").labels
    words = [Word(i, f"w{i}", rng.choice(tags), (heads[i],), i) for i in range(1, n + 1)]
    spans, index = [], 1
    while index < n:
        if rng.random() < 0.3:
            last = min(n, index + rng.randint(1, 2))
            spans.append(Span(index, last, f"f{index}", index))
            index = last + 1
        else:
            index += 1
    return words, spans


@pytest.mark.parametrize("seed", range(40))
def test_fused_tokens_keep_the_sentence_order_and_a_subtree_roots_tag(seed):
    rng = random.Random(seed)
    for _ in range(25):
        words, spans = _random_sentence(rng)
        try:
            tokens = xtreme_tokens(words, spans, rng.choice(["es", "fr", "it", "de"]))
        except ConversionError:
            continue
        assert tokens is not None
        inside = {i: span for span in spans for i in range(span.first, span.last + 1)}
        expected_forms = []
        for word in words:
            span = inside.get(word.id)
            if span is None:
                expected_forms.append(word.form)
            elif word.id == span.first:
                expected_forms.append(span.form)
        assert [t for t, _, _ in tokens] == expected_forms  # one token a span, in place
        by_id = {word.id: word for word in words}
        fused = dict(zip([f for f in expected_forms], tokens, strict=True))
        for span in spans:
            members = range(span.first, span.last + 1)
            assert fused[span.form][1] in {by_id[i].upos for i in members}
            roots = [i for i in members if by_id[i].heads[0] not in members]
            if len(roots) == 1:  # a span that is a subtree takes its root's tag
                assert span_head(span, by_id, "de").id == roots[0]
                assert fused[span.form][1] == by_id[roots[0]].upos


def test_the_reading_is_the_studys_for_udpos_and_applies_to_udpos_only(tmp_path):
    udpos = get_task("udpos")
    assert study_reading(udpos).to_dict() == {"eval_long": "truncate", "tokens": "xtreme"}
    assert parse_reading(["tokens=xtreme"], udpos) == XTREME
    with pytest.raises(FsxltError, match="panx has no tokens to choose"):
        parse_reading(["tokens=xtreme"], get_task("panx"))
    with pytest.raises(FsxltError, match="the hub's rows no longer hold"):
        load_hub_split(udpos, "es", "validation", XTREME)
    # XTREME's TSVs are its conversion's output: read as written under either choice
    tsv = tmp_path / "dev-es.tsv"
    tsv.write_text("Vino\tVERB\ndel\tADP\nmar\tNOUN\n\n", encoding="utf-8")
    assert read_examples(tsv, udpos, language="es", reading=XTREME) == \
        read_examples(tsv, udpos, language="es")


def test_a_set_sampled_from_conllu_the_xtreme_way_records_it_and_checks(tmp_path, capsys):
    rng = random.Random(3)
    sentences = []
    for i in range(30):
        rows = [_row("1", f"Vino{i}", "VERB", "0"), _row("2-3", "del"),
                _row("2", "de", "ADP", "4"), _row("3", "el", "DET", "4"),
                _row("4", rng.choice(["mar", "sol", "Madrid"]),
                     rng.choice(["NOUN", "PROPN"]), "1")]
        sentences.append(rows)
    source = _conllu(tmp_path / "es_x-ud-dev.conllu", sentences)
    store = tmp_path / "buckets"
    assert run_app(["sample", "--task", "udpos", "--lang", "es", "-k", "1", "--n-buckets",
                    "2", "--data", str(source), "--out", str(store), "--reading",
                    "tokens=xtreme"]) == 0
    manifest, buckets, _remaining = read_set(store / "udpos" / "es" / "k1")
    assert manifest["reading"] == {"tokens": "xtreme"}
    assert all("del" in s.tokens and "de" not in s.tokens
               for bucket in buckets for s in bucket.examples)
    assert check_set(store / "udpos" / "es" / "k1", source).ok
    capsys.readouterr()
    # the hub cannot give that reading: one line, nothing written
    assert run_app(["sample", "--task", "udpos", "--lang", "es", "--out",
                    str(tmp_path / "hub"), "--reading", "tokens=xtreme"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "tokens=xtreme" in err
    assert not (tmp_path / "hub").exists()
