"""A family of artificial languages that share one latent grammar.

Why
---
The real FS-XLT tasks need a pretrained multilingual encoder and hub data.
This module builds a miniature world in which FS-XLT's known behaviour
can be reproduced offline in minutes: a source language (``en``) and target
languages that differ from it in a controlled way along the two axes the
literature names as the drivers of transfer, **lexical overlap** and
**word order (typology)**.

What
----
*Lexemes.* One language-independent lexicon of word classes (nouns, verbs,
adjectives, adverbs, determiners, adpositions, pronouns, conjunctions,
numerals and names of persons, locations and organisations). Content
lexemes (nouns, verbs, adjectives) are partitioned into four topics plus a
general pool; the topic carries the document-classification task. Every
lexeme sits in a *form slot*, the unit that gets one surface form per
language. A few slots hold two lexemes on purpose, so that the surface form
is ambiguous and only context disambiguates it:

- noun/verb homographs (like English *run*; a third of the verbs) and
  noun/adjective homographs, for the POS task: their tag follows from their
  position, which is why word order matters for POS transfer;
- surnames that are also place names, and place names that also appear
  inside organisation names, for the NER task.

*Surface forms.* Each language draws its own small phoneme inventory
(consonants and vowels from one ASCII alphabet) and builds words from
syllables: function words have one syllable, content words two or three,
names two or three and are capitalised (a script-level cue shared by every
language, as for Latin-script languages). A target language with
``overlap = p`` copies the source form of exactly ``round(p * n)`` slots of
every word class and invents a fresh form for the others (which slots: a
seeded order shared by all languages, so that languages of equal overlap
share the same slots and lower overlaps share subsets; see
:func:`shared_slot_plan`);
a fresh form never equals a source form, so the overlap is exact. Numerals
are written as digits and the full stop is ``.`` in every language (like
digits and punctuation across real scripts): they are anchors shared by all
languages and are not counted in the overlap.

*Word order.* A language fixes the order of subject, object and verb (any
of the six orders), adjective-noun order (``AN``/``NA``) and adposition
placement (``pre``/``post``). Determiners and numerals always precede the
noun. A prepositional phrase and an adverb go at the end of the clause, or
just before the verb in verb-final languages (SOV, OSV). These map onto
WALS features 81A, 85A, 87A, 88A, 89A, so the toolkit's "common features"
analysis applies unchanged.

*Latent sentences.* A sentence is generated once as a language-independent
structure (clauses of subject, verb, optional object, optional
prepositional phrase and adverb; noun phrases with optional determiner,
numeral, adjectives) and then *realised* in a language: its lexemes are
replaced by that language's forms and its constituents ordered by that
language's parameters. Realisation is deterministic, so the same latent
sentence realised in two languages gives translation-equivalent sentences
whose differences are exactly the lexicon and the word order. Each word
carries its class (POS tag) and its BIO entity tag.

Frequencies within a class follow a mild Zipf law (a random rank order per
class), so a few-shot bucket mostly contains frequent words that recur in
the test set, and rare words stay rare.

Everything random takes an explicit seed; the same seed gives the same
lexicon, the same forms and the same sentences on every machine.
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

from fsxlt.errors import FsxltError

ORDERS = ("SVO", "SOV", "VSO", "VOS", "OVS", "OSV")
TOPICS = ("arts", "business", "science", "sports")
POS_TAGS = ("NOUN", "VERB", "ADJ", "ADV", "DET", "NUM", "ADP", "PRON", "PROPN", "CCONJ", "PUNCT")
ENTITY_TYPES = ("PER", "ORG", "LOC")
NER_TAGS = ("O", "B-PER", "I-PER", "B-ORG", "I-ORG", "B-LOC", "I-LOC")

# The lexicon: word class -> (number of topical lexemes per topic, number of general lexemes).
# Word classes that are not "content" have no topical lexemes.
LEXICON_SIZES: dict[str, tuple[int, int]] = {
    "NOUN": (30, 90),
    "VERB": (10, 36),
    "ADJ": (6, 24),
    "ADV": (0, 16),
    "DET": (0, 6),
    "ADP": (0, 8),
    "PRON": (0, 8),
    "CCONJ": (0, 3),
    "FIRST": (0, 40),   # person first names
    "LAST": (0, 40),    # person surnames
    "LOC": (0, 40),     # place names
    "ORGW": (0, 24),    # words that name an organisation
    "ORGH": (0, 6),     # organisation heads ("bank", "corp", ...), last word of an ORG
}
N_HOMOGRAPHS = 30       # general nouns sharing a form with a verb (a third of the verbs)
N_ADJ_NOUN = 12         # general nouns sharing a form with an adjective
N_LAST_AS_LOC = 8       # surnames that are also place names
N_LOC_IN_ORG = 8        # place names that also name organisations
NUMERALS = tuple(str(n) for n in range(2, 13))
FUNCTION_CLASSES = ("DET", "ADP", "PRON", "CCONJ")
NAME_CLASSES = ("FIRST", "LAST", "LOC", "ORGW", "ORGH")
POS_OF_CLASS = {"NOUN": "NOUN", "VERB": "VERB", "ADJ": "ADJ", "ADV": "ADV", "DET": "DET",
                "ADP": "ADP", "PRON": "PRON", "CCONJ": "CCONJ", "NUM": "NUM",
                **{c: "PROPN" for c in NAME_CLASSES}}

CONSONANTS = "bcdfghjklmnprstvwxz"
VOWELS = "aeiouy"


def stable_seed(*parts: object) -> int:
    """A 64-bit integer derived from ``parts``; the same on every machine and Python run."""
    text = "\x1f".join(str(p) for p in parts)
    return int.from_bytes(hashlib.sha256(text.encode("utf-8")).digest()[:8], "little")


def rng_for(*parts: object) -> random.Random:
    """An independent ``random.Random`` stream for the coordinates ``parts``."""
    return random.Random(stable_seed(*parts))


# --------------------------------------------------------------------------- languages

@dataclass(frozen=True)
class LanguageSpec:
    """One language of the family.

    ``overlap`` is the fraction of the source language's surface forms this
    language shares (1.0 for the source itself). ``order`` is the order of
    subject, object and verb; ``adjective`` is ``AN`` (adjective before
    noun) or ``NA``; ``adposition`` is ``pre`` or ``post``.
    """

    code: str
    overlap: float
    order: str = "SVO"
    adjective: str = "AN"
    adposition: str = "pre"

    def __post_init__(self) -> None:
        if not 0.0 <= self.overlap <= 1.0:
            raise FsxltError(f"language {self.code}: overlap must be in [0, 1], got {self.overlap}")
        if self.order not in ORDERS:
            raise FsxltError(f"language {self.code}: order must be one of {', '.join(ORDERS)}")
        if self.adjective not in ("AN", "NA"):
            raise FsxltError(f"language {self.code}: adjective must be AN or NA")
        if self.adposition not in ("pre", "post"):
            raise FsxltError(f"language {self.code}: adposition must be pre or post")
        if not self.code or not self.code.isalnum() or self.code != self.code.lower():
            raise FsxltError(f"language code {self.code!r} must be lowercase letters and digits")

    @property
    def verb_final(self) -> bool:
        return self.order.endswith("V")

    def wals(self) -> dict[str, str]:
        """The WALS word-order features this language has by construction.

        The six features of docs/protocol.md#analyses.

        86A (genitive and noun) is not modelled and left empty, so it never
        counts as shared.
        """
        return {
            "81A": self.order,
            "85A": "Prepositions" if self.adposition == "pre" else "Postpositions",
            "86A": "",
            "87A": "Adjective-Noun" if self.adjective == "AN" else "Noun-Adjective",
            "88A": "Demonstrative-Noun",
            "89A": "Numeral-Noun",
        }

    def to_dict(self) -> dict[str, object]:
        return {"code": self.code, "overlap": self.overlap, "order": self.order,
                "adjective": self.adjective, "adposition": self.adposition,
                "wals": self.wals(), "script": "Latin"}


SOURCE = LanguageSpec("en", 1.0, "SVO", "AN", "pre")

#: The default family: the source and six targets that cross three overlap levels with
#: three word-order types (English-like SVO, head-final SOV, verb-initial VSO).
DEFAULT_LANGUAGES: tuple[LanguageSpec, ...] = (
    SOURCE,
    LanguageSpec("svo80", 0.8, "SVO", "AN", "pre"),
    LanguageSpec("svo50", 0.5, "SVO", "AN", "pre"),
    LanguageSpec("svo20", 0.2, "SVO", "AN", "pre"),
    LanguageSpec("sov50", 0.5, "SOV", "NA", "post"),
    LanguageSpec("sov20", 0.2, "SOV", "NA", "post"),
    LanguageSpec("vso50", 0.5, "VSO", "NA", "pre"),
)


# --------------------------------------------------------------------------- the lexicon

@dataclass(frozen=True)
class Lexeme:
    """A language-independent word: its class, topic (or None) and form slot."""

    id: int
    cls: str
    topic: str | None
    slot: int

    @property
    def pos(self) -> str:
        return POS_OF_CLASS[self.cls]


@dataclass
class Lexicon:
    """All lexemes, their form slots, and per-class sampling weights."""

    lexemes: list[Lexeme]
    slot_classes: list[str]            # the word class that decides a slot's word shape
    by_class: dict[str, list[Lexeme]] = field(default_factory=dict)
    weights: dict[str, list[float]] = field(default_factory=dict)
    _pools: dict[tuple, tuple[list[Lexeme], list[float]]] = field(default_factory=dict,
                                                                  repr=False)

    @property
    def n_slots(self) -> int:
        return len(self.slot_classes)

    def pool(self, cls: str, topic: str | None = None, general_only: bool = False
             ) -> tuple[list[Lexeme], list[float]]:
        """Lexemes of ``cls`` (only ``topic``'s, or only general ones) with their weights."""
        key = (cls, topic, general_only)
        if key in self._pools:
            return self._pools[key]
        pairs = [(lex, w) for lex, w in zip(self.by_class[cls], self.weights[cls], strict=True)
                 if (topic is None or lex.topic == topic)
                 and not (general_only and lex.topic is not None)]
        self._pools[key] = ([p[0] for p in pairs], [p[1] for p in pairs])
        return self._pools[key]


def build_lexicon(seed: int) -> Lexicon:
    """The shared lexicon. Deterministic in ``seed``."""
    rng = rng_for(seed, "lexicon")
    lexemes: list[Lexeme] = []
    slot_classes: list[str] = []

    def add(cls: str, topic: str | None, slot: int | None = None) -> Lexeme:
        if slot is None:
            slot = len(slot_classes)
            slot_classes.append(cls)
        lex = Lexeme(len(lexemes), cls, topic, slot)
        lexemes.append(lex)
        return lex

    by_class: dict[str, list[Lexeme]] = {}
    for cls, (per_topic, general) in LEXICON_SIZES.items():
        items = [add(cls, topic) for topic in TOPICS for _ in range(per_topic)]
        items += [add(cls, None) for _ in range(general)]
        by_class[cls] = items
    # Ambiguous forms: extra lexemes that reuse another class's slot.
    general_nouns = [lex for lex in by_class["NOUN"] if lex.topic is None]
    ambiguous = rng.sample(general_nouns, N_HOMOGRAPHS + N_ADJ_NOUN)
    for noun in ambiguous[:N_HOMOGRAPHS]:
        by_class["VERB"].append(add("VERB", None, noun.slot))
    for noun in ambiguous[N_HOMOGRAPHS:]:
        by_class["ADJ"].append(add("ADJ", None, noun.slot))
    for last in rng.sample(by_class["LAST"], N_LAST_AS_LOC):
        by_class["LOC"].append(add("LOC", None, last.slot))
    for loc in rng.sample(by_class["LOC"][:LEXICON_SIZES["LOC"][1]], N_LOC_IN_ORG):
        by_class["ORGW"].append(add("ORGW", None, loc.slot))
    by_class["NUM"] = [add("NUM", None) for _ in NUMERALS]

    weights: dict[str, list[float]] = {}
    for cls, items in by_class.items():
        ranks = list(range(len(items)))
        rng.shuffle(ranks)
        weights[cls] = [1.0 / (r + 2) ** 0.8 for r in ranks]
    return Lexicon(lexemes, slot_classes, by_class, weights)


# --------------------------------------------------------------------------- surface forms

@dataclass(frozen=True)
class Vocabulary:
    """One language's surface form for every slot, and which slots it shares with the source."""

    language: LanguageSpec
    forms: tuple[str, ...]
    shared: frozenset[int]


def _phonology(seed: int, code: str) -> tuple[str, str]:
    rng = rng_for(seed, "phonology", code)
    consonants = "".join(sorted(rng.sample(CONSONANTS, 11)))
    vowels = "".join(sorted(rng.sample(VOWELS, 4)))
    return consonants, vowels


def _syllable(rng: random.Random, consonants: str, vowels: str, closed_p: float) -> str:
    syl = rng.choice(consonants) + rng.choice(vowels)
    if rng.random() < closed_p:
        syl += rng.choice(consonants)
    return syl


def _new_form(rng: random.Random, cls: str, consonants: str, vowels: str) -> str:
    if cls == "NUM":
        raise AssertionError("numerals are universal")
    if cls in FUNCTION_CLASSES:
        return _syllable(rng, consonants, vowels, 0.5)
    n = rng.choice((2, 2, 3)) if cls not in NAME_CLASSES else rng.choice((2, 3))
    word = "".join(_syllable(rng, consonants, vowels, 0.25) for _ in range(n))
    return word.capitalize() if cls in NAME_CLASSES else word


def shared_slot_plan(lexicon: Lexicon, overlap: float, seed: int) -> frozenset[int]:
    """The slots whose form a language copies from the source: ``round(overlap * n)`` per class.

    The slots of each word class are put in one random order (seeded, the
    same for every language) and a language with overlap ``p`` shares the
    first ``round(p * n)`` of them. The plans are therefore nested: two
    languages with the same overlap share exactly the same slots, so they
    differ only in word order and in their fresh forms, and a language with
    lower overlap shares a subset of what one with higher overlap shares.
    This keeps the comparison between languages controlled (which frequent
    function words happen to be shared would otherwise add noise).
    Numerals are universal (always shared) and do not count.
    """
    rng = rng_for(seed, "overlap")
    shared: set[int] = set()
    by_cls: dict[str, list[int]] = {}
    for slot, cls in enumerate(lexicon.slot_classes):
        by_cls.setdefault(cls, []).append(slot)
    for cls in sorted(by_cls):
        slots = list(by_cls[cls])
        rng.shuffle(slots)
        shared.update(slots if cls == "NUM" else slots[:round(overlap * len(slots))])
    return frozenset(shared)


def build_vocabulary(lexicon: Lexicon, language: LanguageSpec, seed: int,
                     source: Vocabulary | None = None) -> Vocabulary:
    """Surface forms of ``language``; ``source`` is required unless this is the source."""
    consonants, vowels = _phonology(seed, language.code)
    rng = rng_for(seed, "forms", language.code)
    numerals = iter(NUMERALS)
    if source is None:
        shared: frozenset[int] = frozenset(range(lexicon.n_slots))
        taken: set[str] = set()
        avoid: set[str] = set()
    else:
        shared = shared_slot_plan(lexicon, language.overlap, seed)
        taken = {source.forms[s] for s in shared}
        avoid = set(source.forms)
    forms: list[str] = []
    for slot, cls in enumerate(lexicon.slot_classes):
        if cls == "NUM":
            forms.append(next(numerals))
            continue
        if source is not None and slot in shared:
            forms.append(source.forms[slot])
            continue
        for _ in range(1000):
            form = _new_form(rng, cls, consonants, vowels)
            if form not in taken and form not in avoid:
                break
        else:  # pragma: no cover - the inventories are far larger than the lexicon
            raise FsxltError(f"language {language.code}: could not invent enough word forms")
        taken.add(form)
        forms.append(form)
    return Vocabulary(language, tuple(forms), shared)


# --------------------------------------------------------------------------- latent sentences

@dataclass(frozen=True)
class NounPhrase:
    """A common-noun phrase (``noun`` set) or a name (``name`` set) or a pronoun."""

    noun: Lexeme | None = None
    det: Lexeme | None = None
    num: Lexeme | None = None
    adjs: tuple[Lexeme, ...] = ()
    name: tuple[Lexeme, ...] = ()
    entity: str | None = None
    pron: Lexeme | None = None


@dataclass(frozen=True)
class Clause:
    subj: NounPhrase
    verb: Lexeme
    obj: NounPhrase | None = None
    adp: Lexeme | None = None
    pobj: NounPhrase | None = None
    adv: Lexeme | None = None


@dataclass(frozen=True)
class Sentence:
    clauses: tuple[Clause, ...]
    conj: tuple[Lexeme, ...] = ()


@dataclass(frozen=True)
class Style:
    """How a stream of latent sentences looks: entity rates, topic, clause counts."""

    topic: str | None = None
    topic_p: float = 0.0          # a content word is drawn from the topic's lexemes
    distractor_p: float = 0.0     # ... or else from another topic's lexemes
    entity_p: float = 0.15        # an argument is a name
    pron_p: float = 0.1
    obj_p: float = 0.8
    pp_p: float = 0.45
    adv_p: float = 0.25
    conj_p: float = 0.2


class LatentGenerator:
    """Draws latent sentences from the shared grammar with a given RNG."""

    def __init__(self, lexicon: Lexicon, rng: random.Random):
        self.lex = lexicon
        self.rng = rng

    def _pick(self, cls: str, style: Style, topic_ok: bool = True) -> Lexeme:
        rng = self.rng
        if topic_ok and style.topic is not None and cls in ("NOUN", "VERB", "ADJ"):
            r = rng.random()
            if r < style.topic_p:
                items, weights = self.lex.pool(cls, topic=style.topic)
                return rng.choices(items, weights)[0]
            if r < style.topic_p + style.distractor_p:
                other = rng.choice([t for t in TOPICS if t != style.topic])
                items, weights = self.lex.pool(cls, topic=other)
                return rng.choices(items, weights)[0]
            items, weights = self.lex.pool(cls, general_only=True)
            return rng.choices(items, weights)[0]
        return rng.choices(self.lex.by_class[cls], self.lex.weights[cls])[0]

    def name(self, entity: str, style: Style) -> NounPhrase:
        rng = self.rng
        if entity == "PER":
            parts = []
            if rng.random() < 0.8:
                parts.append(self._pick("FIRST", style))
            if not parts or rng.random() < 0.6:
                parts.append(self._pick("LAST", style))
        elif entity == "LOC":
            parts = [self._pick("LOC", style)]
            if rng.random() < 0.15:
                parts.append(self._pick("LOC", style))
        else:
            parts = [self._pick("ORGW", style) for _ in range(rng.choice((1, 1, 2)))]
            parts.append(self._pick("ORGH", style))
        return NounPhrase(name=tuple(parts), entity=entity)

    def noun_phrase(self, style: Style, role: str) -> NounPhrase:
        rng = self.rng
        r = rng.random()
        if r < style.entity_p:
            entity = {"subj": ("PER", "PER", "ORG"), "obj": ("PER", "ORG", "ORG", "LOC"),
                      "pobj": ("LOC", "LOC", "LOC", "ORG")}[role]
            return self.name(rng.choice(entity), style)
        if role != "pobj" and r < style.entity_p + style.pron_p:
            return NounPhrase(pron=self._pick("PRON", style))
        det = self._pick("DET", style) if rng.random() < 0.6 else None
        num = self._pick("NUM", style) if rng.random() < 0.12 else None
        adjs = tuple(self._pick("ADJ", style) for _ in range(rng.choice((0, 0, 0, 1, 1, 2))))
        return NounPhrase(noun=self._pick("NOUN", style), det=det, num=num, adjs=adjs)

    def clause(self, style: Style, transitive: bool | None = None) -> Clause:
        rng = self.rng
        if transitive is None:
            transitive = rng.random() < style.obj_p
        obj = self.noun_phrase(style, "obj") if transitive else None
        adp = pobj = None
        if rng.random() < style.pp_p:
            adp, pobj = self._pick("ADP", style), self.noun_phrase(style, "pobj")
        adv = self._pick("ADV", style) if rng.random() < style.adv_p else None
        return Clause(self.noun_phrase(style, "subj"), self._pick("VERB", style), obj, adp,
                      pobj, adv)

    def sentence(self, style: Style) -> Sentence:
        clauses = [self.clause(style)]
        conj = []
        while len(clauses) < 3 and self.rng.random() < style.conj_p:
            conj.append(self._pick("CCONJ", style))
            clauses.append(self.clause(style))
        return Sentence(tuple(clauses), tuple(conj))


# --------------------------------------------------------------------------- realisation

Word = tuple[str, str, str]  # (surface form, POS tag, BIO tag)


class Realizer:
    """Turns latent sentences into the words of one language, with POS and BIO tags."""

    def __init__(self, vocabulary: Vocabulary):
        self.vocab = vocabulary
        self.lang = vocabulary.language

    def word(self, lex: Lexeme, ner: str = "O") -> Word:
        return (self.vocab.forms[lex.slot], lex.pos, ner)

    def noun_phrase(self, np_: NounPhrase) -> list[Word]:
        if np_.pron is not None:
            return [self.word(np_.pron)]
        if np_.name:
            return [self.word(lex, ("B-" if i == 0 else "I-") + str(np_.entity))
                    for i, lex in enumerate(np_.name)]
        assert np_.noun is not None
        words = [self.word(x) for x in (np_.det, np_.num) if x is not None]
        adjs = [self.word(a) for a in np_.adjs]
        noun = [self.word(np_.noun)]
        return words + (adjs + noun if self.lang.adjective == "AN" else noun + adjs)

    def clause(self, clause: Clause) -> list[Word]:
        parts: dict[str, list[Word]] = {"S": self.noun_phrase(clause.subj),
                                        "V": [self.word(clause.verb)],
                                        "O": self.noun_phrase(clause.obj) if clause.obj else []}
        extra: list[Word] = []
        if clause.adp is not None and clause.pobj is not None:
            pobj = self.noun_phrase(clause.pobj)
            adp = [self.word(clause.adp)]
            extra += adp + pobj if self.lang.adposition == "pre" else pobj + adp
        if clause.adv is not None:
            extra.append(self.word(clause.adv))
        if self.lang.verb_final:
            parts["V"] = extra + parts["V"]
            extra = []
        words = [w for key in self.lang.order for w in parts[key]]
        return words + extra

    def sentence(self, sentence: Sentence) -> list[Word]:
        words = self.clause(sentence.clauses[0])
        for conj, clause in zip(sentence.conj, sentence.clauses[1:], strict=True):
            words += [self.word(conj)] + self.clause(clause)
        return words + [(".", "PUNCT", "O")]


@dataclass
class LanguageFamily:
    """The lexicon and every language's vocabulary, built from one seed."""

    seed: int
    lexicon: Lexicon
    vocabularies: dict[str, Vocabulary]

    @property
    def languages(self) -> list[LanguageSpec]:
        return [v.language for v in self.vocabularies.values()]

    def realizer(self, code: str) -> Realizer:
        return Realizer(self.vocabularies[code])

    def lexicon_overlap(self, code: str) -> float:
        """The fraction of non-numeral form slots whose form equals the source's."""
        source = next(iter(self.vocabularies.values()))
        vocab = self.vocabularies[code]
        slots = [s for s, cls in enumerate(self.lexicon.slot_classes) if cls != "NUM"]
        same = sum(vocab.forms[s] == source.forms[s] for s in slots)
        return same / len(slots)


def build_family(languages: Sequence[LanguageSpec] = DEFAULT_LANGUAGES,
                 seed: int = 0) -> LanguageFamily:
    """Build the lexicon and the vocabularies; the first language is the source."""
    if not languages:
        raise FsxltError("give at least one language")
    codes = [lang.code for lang in languages]
    if len(set(codes)) != len(codes):
        raise FsxltError(f"duplicate language codes in {codes}")
    if languages[0].overlap != 1.0:
        raise FsxltError(f"the first language ({codes[0]}) is the source and needs overlap 1.0")
    lexicon = build_lexicon(seed)
    source = build_vocabulary(lexicon, languages[0], seed)
    vocabularies = {languages[0].code: source}
    for lang in languages[1:]:
        vocabularies[lang.code] = build_vocabulary(lexicon, lang, seed, source)
    return LanguageFamily(seed, lexicon, vocabularies)


def latent_stream(lexicon: Lexicon, rng: random.Random, style: Style) -> Iterator[Sentence]:
    """An endless stream of latent sentences in ``style``."""
    gen = LatentGenerator(lexicon, rng)
    while True:
        yield gen.sentence(style)
