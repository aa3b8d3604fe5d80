"""The synthetic language family, its four tasks and the tiny encoder (fsxlt.synthetic)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest
import yaml

from fsxlt.data import load_split
from fsxlt.errors import FsxltError
from fsxlt.sampling.api import sample
from fsxlt.sampling.check import check_store
from fsxlt.synthetic import (
    DEFAULT_LANGUAGES,
    TASKS,
    EncoderSettings,
    LanguageSpec,
    build_family,
    build_tiny_encoder,
    generate_benchmark,
    read_description,
    task_config,
)
from fsxlt.synthetic import encoder as encoder_module
from fsxlt.synthetic.grammar import (
    NER_TAGS,
    POS_TAGS,
    TOPICS,
    Clause,
    NounPhrase,
    shared_slot_plan,
)
from fsxlt.tasks import get_task

SMALL = {"train": 120, "dev": 30, "test": 40}
CODES = [lang.code for lang in DEFAULT_LANGUAGES]


def _generate(path: Path, seed: int = 0, **kwargs) -> dict:
    return generate_benchmark(path, seed, sizes=SMALL, corpus_sentences=150, **kwargs)


@pytest.fixture(scope="module")
def bench(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("synth")
    _generate(out)
    return out


def _all_files(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file()}


def test_same_seed_gives_byte_identical_files_and_another_seed_differs(bench, tmp_path):
    again = tmp_path / "again"
    _generate(again)
    assert _all_files(again) == _all_files(bench)
    other = tmp_path / "other"
    _generate(other, seed=1)
    first, second = _all_files(bench), _all_files(other)
    assert first.keys() == second.keys()
    differing = [name for name in first if first[name] != second[name]]
    assert len(differing) > len(first) * 0.9  # only the task YAMLs stay the same


def test_layout_and_description(bench):
    description = read_description(bench)
    assert [lang["code"] for lang in description["languages"]] == CODES
    assert description["tasks"] == list(TASKS)
    for rel, digest in description["files"].items():
        assert (bench / rel).is_file(), rel
        assert len(digest) == 64
    for task in TASKS:
        for split in ("train", "dev", "test"):
            for code in CODES:
                assert (bench / task / f"{split}-{code}.tsv").is_file()
    for code in CODES:
        assert (bench / "corpus" / f"{code}.txt").read_text().count("\n") == 150
    sov = next(lang for lang in description["languages"] if lang["code"] == "sov20")
    assert sov["wals"]["81A"] == "SOV" and sov["wals"]["85A"] == "Postpositions"
    assert sov["order"] == "SOV" and sov["overlap"] == 0.2


def test_every_file_parses_with_the_real_readers(bench):
    for task_name in TASKS:
        for task in (get_task(task_name), get_task(str(bench / task_name / "task.yaml"))):
            for code in CODES:
                for split, n in SMALL.items():
                    loaded = load_split(task, code, split, data_dir=bench / task_name)
                    assert len(loaded.examples) == n
                    if task.is_tagging:
                        assert all(set(ex.tags) <= set(task.labels) for ex in loaded.examples)
                        assert all(len(ex.tokens) == len(ex.tags) > 1 for ex in loaded.examples)
                    else:
                        assert {ex.label for ex in loaded.examples} == set(task.labels)
                        assert all((ex.text_b is not None) == (task.input == "pair")
                                   for ex in loaded.examples)


def test_the_builtin_configs_are_the_generator_output():
    for task in TASKS:
        path = Path(__file__).parent.parent / "configs" / f"{task}.yaml"
        assert yaml.safe_load(path.read_text()) == task_config(task, CODES)
        spec = get_task(task)
        assert spec.languages == tuple(CODES) and spec.source_language == "en"
    assert get_task("synth-ner").sampling_labels == ("PER", "ORG", "LOC")
    assert get_task("synth-topic").labels == TOPICS


def test_overlap_is_the_requested_fraction_of_shared_forms():
    languages = [DEFAULT_LANGUAGES[0], LanguageSpec("a", 0.0), LanguageSpec("b", 0.3),
                 LanguageSpec("c", 0.75, "SOV"), LanguageSpec("d", 1.0, "VSO")]
    family = build_family(languages, seed=5)
    source = family.vocabularies["en"]
    classes = family.lexicon.slot_classes
    for lang in languages[1:]:
        vocab = family.vocabularies[lang.code]
        assert family.lexicon_overlap(lang.code) == pytest.approx(lang.overlap, abs=0.01)
        for cls in set(classes) - {"NUM"}:  # exact per word class, up to rounding
            slots = [s for s, c in enumerate(classes) if c == cls]
            same = sum(vocab.forms[s] == source.forms[s] for s in slots)
            assert same == round(lang.overlap * len(slots)), (lang.code, cls)
        # fresh forms are never source forms, and forms are unique within a language
        fresh = [vocab.forms[s] for s in range(len(classes)) if s not in vocab.shared]
        assert not set(fresh) & set(source.forms)
        assert len(set(vocab.forms)) == len(vocab.forms)
    assert len(set(source.forms)) == len(source.forms)
    # the plan is seeded: same seed same slots, another seed other slots
    lexicon = family.lexicon
    assert shared_slot_plan(lexicon, 0.3, 5) == family.vocabularies["b"].shared
    assert shared_slot_plan(lexicon, 0.3, 6) != family.vocabularies["b"].shared
    # nested: lower overlap shares a subset of what higher overlap shares
    assert family.vocabularies["b"].shared < family.vocabularies["c"].shared


def test_type_overlap_in_the_data_follows_the_overlap_parameter(bench):
    by_code = {lang["code"]: lang for lang in read_description(bench)["languages"]}
    assert by_code["en"]["type_overlap_pos_train"] == 1.0
    assert (by_code["svo80"]["type_overlap_pos_train"] > by_code["svo50"]["type_overlap_pos_train"]
            > by_code["svo20"]["type_overlap_pos_train"])
    en = load_split("synth-pos", "en", "train", data_dir=bench / "synth-pos").examples
    en_types = {t for ex in en for t in ex.tokens}
    low = load_split("synth-pos", "svo20", "train", data_dir=bench / "synth-pos").examples
    low_types = {t for ex in low for t in ex.tokens}
    assert len(low_types & en_types) / len(low_types) < 0.4


def test_word_order_follows_the_language_parameters():
    languages = [DEFAULT_LANGUAGES[0], LanguageSpec("sov", 0.0, "SOV", "NA", "post"),
                 LanguageSpec("vso", 0.0, "VSO", "AN", "pre"),
                 LanguageSpec("osv", 0.0, "OSV", "AN", "pre")]
    family = build_family(languages, seed=0)
    by_class = family.lexicon.by_class
    noun1, noun2, noun3 = by_class["NOUN"][:3]
    clause = Clause(subj=NounPhrase(noun=noun1, adjs=(by_class["ADJ"][0],)),
                    verb=by_class["VERB"][0], obj=NounPhrase(noun=noun2),
                    adp=by_class["ADP"][0], pobj=NounPhrase(noun=noun3))
    tags = {code: [w[1] for w in family.realizer(code).clause(clause)] for code in
            family.vocabularies}
    assert tags["en"] == ["ADJ", "NOUN", "VERB", "NOUN", "ADP", "NOUN"]
    assert tags["sov"] == ["NOUN", "ADJ", "NOUN", "NOUN", "ADP", "VERB"]
    assert tags["vso"] == ["VERB", "ADJ", "NOUN", "NOUN", "ADP", "NOUN"]
    assert tags["osv"] == ["NOUN", "ADJ", "NOUN", "ADP", "NOUN", "VERB"]
    forms = {code: [w[0] for w in family.realizer(code).clause(clause)]
             for code in family.vocabularies}
    osv = family.vocabularies["osv"].forms
    assert forms["osv"][0] == osv[noun2.slot] and forms["osv"][2] == osv[noun1.slot]


def test_parallel_splits_differ_only_in_words_and_order(bench):
    def tag_seqs(code: str) -> list[tuple[str, ...]]:
        return [ex.tags for ex in load_split("synth-pos", code, "test",
                                             data_dir=bench / "synth-pos").examples]
    en, svo, sov = tag_seqs("en"), tag_seqs("svo20"), tag_seqs("sov20")
    assert en == svo                                   # same grammar, same order
    assert en != sov
    assert [Counter(a) for a in en] == [Counter(b) for b in sov]  # same words, other order
    # verb-final: every sentence's last word before the full stop is a verb
    assert all(tags[-2] == "VERB" for tags in sov)
    assert sum(tags[-2] == "VERB" for tags in en) < len(en) / 2


def test_labels_are_balanced_and_valid(bench):
    for task, labels in (("synth-topic", TOPICS), ("synth-pair", ("same", "different"))):
        for split in SMALL:
            examples = load_split(task, "en", split, data_dir=bench / task).examples
            counts = Counter(ex.label for ex in examples)
            assert set(counts) == set(labels)
            assert max(counts.values()) - min(counts.values()) <= 1, (task, split, counts)
    pos = load_split("synth-pos", "en", "train", data_dir=bench / "synth-pos").examples
    assert {t for ex in pos for t in ex.tags} == set(POS_TAGS)
    ner = load_split("synth-ner", "sov50", "train", data_dir=bench / "synth-ner").examples
    seen = Counter()
    for ex in ner:
        previous = "O"
        for tag in ex.tags:
            if tag.startswith("I-"):
                assert previous[2:] == tag[2:], ex  # I- continues an entity of its type
            if tag.startswith("B-"):
                seen[tag[2:]] += 1
            previous = tag
    assert set(seen) == {"PER", "ORG", "LOC"} and min(seen.values()) > 20
    assert {t for ex in ner for t in ex.tags} == set(NER_TAGS)


def test_the_sampler_works_on_every_synthetic_task(bench, tmp_path):
    out = tmp_path / "buckets"
    for task in TASKS:
        k_values = [1, 2] if task != "synth-topic" else [1, 2, 4]
        sets = sample(task, ["svo20", "sov50"], k_values, out,
                      data_dir=bench / task, n_buckets=4, seed=0)
        assert len(sets) == 2 * len(k_values)
    reports = check_store(out)
    assert reports and all(report.ok for report in reports)


def test_invalid_parameters_are_one_line_errors(tmp_path):
    with pytest.raises(FsxltError, match="overlap must be in"):
        LanguageSpec("x", 1.5)
    with pytest.raises(FsxltError, match="order must be one of"):
        LanguageSpec("x", 0.5, "SXV")
    with pytest.raises(FsxltError, match="needs overlap 1.0"):
        build_family([LanguageSpec("x", 0.5)])
    with pytest.raises(FsxltError, match="unknown key"):
        generate_benchmark(tmp_path, sizes={"training": 5})
    with pytest.raises(FsxltError, match="no corpus files"):
        build_tiny_encoder(tmp_path, tmp_path / "cache")


TINY = EncoderSettings(vocab_size=300, hidden_size=32, num_layers=1, num_heads=2,
                       intermediate_size=64, max_length=32, steps=4, batch_size=8,
                       warmup_steps=2, corpus_lines=60)


def test_tiny_encoder_builds_loads_and_is_cached(bench, tmp_path, monkeypatch):
    import torch
    from transformers import AutoModel, AutoTokenizer

    cache = tmp_path / "cache"
    before = torch.random.get_rng_state()
    path = build_tiny_encoder(bench, cache, seed=0, settings=TINY, threads=1)
    assert torch.equal(before, torch.random.get_rng_state())  # the global RNG is untouched
    assert path.parent == cache and path.name.startswith("tiny-bert-")
    tokenizer = AutoTokenizer.from_pretrained(path)
    model = AutoModel.from_pretrained(path)
    assert model.config.hidden_size == 32 and model.config.num_hidden_layers == 1
    sentence = (bench / "corpus" / "sov20.txt").read_text().splitlines()[0]
    batch = tokenizer(sentence.split(), is_split_into_words=True, return_tensors="pt")
    assert batch["input_ids"][0, 0] == tokenizer.cls_token_id
    assert tokenizer.unk_token_id not in batch["input_ids"][0].tolist()
    with torch.no_grad():
        out = model(**batch)
    assert out.last_hidden_state.shape[-1] == 32 and out.pooler_output is not None
    pair = tokenizer("a b", "c", return_tensors="pt")
    assert pair["token_type_ids"][0].tolist()[-1] == 1

    def no_training(*_args, **_kwargs):
        raise AssertionError("a cache hit must not retrain")

    monkeypatch.setattr(encoder_module, "_pretrain", no_training)
    assert build_tiny_encoder(bench, cache, seed=0, settings=TINY) == path
    assert encoder_module.cache_key(bench, TINY, 1) != encoder_module.cache_key(bench, TINY, 0)
    info = (path / encoder_module.INFO_FILE).read_text()
    assert '"key"' in info and '"mlm_loss"' in info


def test_wordpiece_learner_follows_a_hand_worked_example():
    # Pairs in {"abc": 5, "abd": 3, "bd": 2}: (a,##b) 8, (##b,##c) 5, (##b,##d) 3, (b,##d) 2.
    # Merge 1: "ab" (8). Then (ab,##c) 5, (ab,##d) 3, (b,##d) 2. Merge 2: "abc" (5).
    # Merge 3: "abd" (3). Merge 4: "bd" (2). (min_frequency 2 stops nothing here.)
    counts = Counter({"abc": 5, "abd": 3, "bd": 2})
    vocab = encoder_module.learn_wordpiece_vocab(counts, vocab_size=100)
    specials = list(encoder_module.SPECIAL_TOKENS)
    assert vocab == [*specials, "##b", "##c", "##d", "a", "b", "ab", "abc", "abd", "bd"]
    assert encoder_module.learn_wordpiece_vocab(counts, vocab_size=len(specials) + 6)[-1] == "ab"
    assert "bd" not in encoder_module.learn_wordpiece_vocab(counts, 100, min_frequency=3)


def test_wordpiece_ties_are_broken_by_text_not_by_input_order():
    # (x,##y) and (p,##q) occur equally often: the alphabetically first pair merges first,
    # whatever order the words were counted in.
    forward = Counter({"xy": 4, "pq": 4, "pz": 1})
    backward = Counter(dict(reversed(list(forward.items()))))
    first = encoder_module.learn_wordpiece_vocab(forward, 100)
    assert first == encoder_module.learn_wordpiece_vocab(backward, 100)
    assert first.index("pq") < first.index("xy")


def test_tokenizer_vocabulary_is_identical_across_processes(bench):
    """Two processes (different hash seeds) learn the same vocabulary, id for id."""
    import os
    import subprocess
    import sys

    script = ("import sys, pathlib\n"
              "from fsxlt.synthetic.encoder import train_tokenizer\n"
              "lines = [ln for f in sorted(pathlib.Path(sys.argv[1]).glob('*.txt'))\n"
              "         for ln in f.read_text().splitlines() if ln.strip()]\n"
              "vocab = train_tokenizer(lines, 300, 64).get_vocab()\n"
              "print(' '.join(sorted(vocab, key=vocab.get)))\n")
    outputs = []
    for hash_seed in ("1", "2"):
        env = {**os.environ, "PYTHONHASHSEED": hash_seed}
        done = subprocess.run([sys.executable, "-c", script, str(bench / "corpus")], env=env,
                              capture_output=True, text=True, check=True)
        outputs.append(done.stdout)
    assert outputs[0] == outputs[1] and len(outputs[0].split()) == 300
