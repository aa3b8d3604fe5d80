"""XTREME's UD-POS tokens: a CoNLL-U sentence as XTREME's preprocessing turned it into
its ``.tsv`` lines, the study's input (reading ``tokens=xtreme``).

XTREME converted each UD 2.5 treebank with its third-party ``conllu_to_conll.py``
(``--replace_subtokens_with_fused_forms``, ``--lang`` from the file name), then read the
result with ``utils_preprocess.py``. Together (google-research/xtreme 838c13b):

1. **A multiword token becomes one token.** Spanish ``del`` (words ``de`` ``el``) is
   one token, tagged with the UPOS of one of its words, the span's head
   (``lib/conll.py`` ``_choose_spanhead_from_heuristics``, lines 104-128): the word
   with the fewest ancestors in the sentence's graph, whose edges are each word's
   head *and* every integer head of its enhanced ``DEPS`` column (lines 24-29, 385);
   where several share the fewest, the first of them in the word order whose UPOS comes
   earliest in the language's precedence list (``conllu_to_conll.py`` lines 28-38:
   lists for es, fr, it, and a default). The token takes that word's place in the
   sentence; the span's other words are dropped (lines 141-229).
2. **Sentences whose forms are withheld are dropped**: every form ``_``, or all but one
   (``utils_preprocess.py`` lines 196-201; some treebanks ship without forms).
3. **Zero-width non-joiners and spaces are removed inside a token** (lines 216-225):
   Vietnamese ``Hà Nội`` is read ``HàNội``, Persian words lose their ZWNJ.

Where XTREME's script stops (a tie among words whose UPOS the list lacks, a span over
a word the sentence does not have, a span word without an integer head), this reading
refuses the sentence, naming its line: it has no rule there to be faithful to.
"""

from __future__ import annotations

from dataclasses import dataclass

# conllu_to_conll.py lines 29-33: the UPOS precedence among a span's highest words
PRECEDENCE: dict[str, tuple[str, ...]] = {
    "default": ("VERB", "NOUN", "PROPN", "PRON", "ADJ", "NUM", "ADV", "INTJ", "AUX", "ADP",
                "DET", "PART", "CCONJ", "SCONJ", "X", "PUNCT"),
    "es": ("VERB", "AUX", "PRON", "ADP", "DET"),
    "fr": ("VERB", "AUX", "PRON", "NOUN", "ADJ", "ADV", "ADP", "DET", "PART", "SCONJ", "CONJ"),
    "it": ("VERB", "AUX", "ADV", "PRON", "ADP", "DET", "INTJ"),
}


@dataclass(frozen=True)
class Word:
    """One syntactic word of a CoNLL-U sentence: its id, form, UPOS, heads (the HEAD
    column and the integer heads of DEPS; ``None`` where HEAD is not an integer) and
    line number."""

    id: int
    form: str
    upos: str
    heads: tuple[int | None, ...]
    line: int


@dataclass(frozen=True)
class Span:
    """A multiword token: its first and last word ids, its surface form, its line."""

    first: int
    last: int
    form: str
    line: int


class ConversionError(ValueError):
    """A sentence XTREME's conversion has no rule for; ``line`` names where."""

    def __init__(self, message: str, line: int) -> None:
        super().__init__(message)
        self.line = line


def deps_heads(deps: str) -> tuple[int, ...]:
    """The integer heads of an enhanced ``DEPS`` value (``4:nmod|8.1:nsubj``: 4); heads of
    empty nodes and ``_`` give none, as XTREME's ``parse_deps`` keeps them."""
    if deps == "_":
        return ()
    return tuple(int(head) for head, _, _ in (pair.partition(":") for pair in deps.split("|"))
                 if head.isdigit())


def _ancestors(word: int, parents: dict[int | None, set[int | None]]) -> int:
    """How many nodes have a path to ``word`` (``word`` itself left out, cycles allowed)."""
    seen: set[int | None] = set()
    stack = list(parents.get(word, ()))
    while stack:
        node = stack.pop()
        if node in seen:
            continue
        seen.add(node)
        stack.extend(parents.get(node, ()))
    seen.discard(word)
    return len(seen)


def _parents(words: dict[int, Word]) -> dict[int | None, set[int | None]]:
    """Each word's heads (HEAD and the integer DEPS heads): the sentence's graph."""
    parents: dict[int | None, set[int | None]] = {}
    for word in words.values():
        parents.setdefault(word.id, set()).update(word.heads)
    return parents


def span_head(span: Span, words: dict[int, Word], language: str,
              parents: dict[int | None, set[int | None]] | None = None) -> Word:
    """The word of ``span`` whose UPOS the fused token takes (module docstring, item 1);
    ``parents``: the sentence's graph, where the caller built it once for every span."""
    members = []
    for index in range(span.first, span.last + 1):
        if index not in words:
            raise ConversionError(f"multiword token {span.first}-{span.last} names word "
                                  f"{index}, which the sentence does not have", span.line)
        members.append(words[index])
    parents = _parents(words) if parents is None else parents
    for word in members:
        if None in word.heads:
            raise ConversionError(f"word {word.id} of multiword token {span.first}-"
                                  f"{span.last} has no integer head, which XTREME's "
                                  "conversion needs", word.line)
    depth = [_ancestors(word.id, parents) for word in members]
    highest = [word for word, d in zip(members, depth, strict=True) if d == min(depth)]
    if len(highest) == 1:
        return highest[0]
    order = PRECEDENCE.get(language, PRECEDENCE["default"])
    unranked = sorted({word.upos for word in highest if word.upos not in order})
    if unranked:
        raise ConversionError(
            f"multiword token {span.first}-{span.last}: its highest words tie and XTREME's "
            f"precedence list for {language if language in PRECEDENCE else 'default'} has "
            f"no {', '.join(unranked)}", span.line)
    return min(highest, key=lambda word: order.index(word.upos))


def _clean(form: str) -> str:
    return "".join(form.replace("\u200c", "").split(" "))


def xtreme_tokens(words: list[Word], spans: list[Span], language: str,
                  ) -> list[tuple[str, str, int]] | None:
    """A sentence's ``(token, tag, line)`` as XTREME's TSV holds it, or None where XTREME
    drops the sentence (its forms withheld). ``words`` in order; ``language`` picks the
    precedence list (XTREME took it from the file name's prefix: ``es_ancora-...``)."""
    by_id = {word.id: word for word in words}
    head_of: dict[int, int] = {}  # a span word's id -> its span head's id
    forms: dict[int, Span] = {}  # a span head's id -> its span
    graph = _parents(by_id) if spans else {}
    for span in spans:
        head = span_head(span, by_id, language, graph).id
        head_of.update({index: head for index in range(span.first, span.last + 1)})
        forms[head] = span
    tokens = []
    for word in words:
        if word.id not in head_of:
            tokens.append((word.form.strip(), word.upos.strip(), word.line))
        elif head_of[word.id] == word.id:
            span = forms[word.id]
            tokens.append((span.form.strip(), word.upos.strip(), span.line))
    withheld = sum(token == "_" for token, _, _ in tokens)
    if withheld and withheld >= len(tokens) - 1:
        return None
    cleaned = []
    for token, tag, line in tokens:
        token = _clean(token)
        if not token:
            raise ConversionError("a word that is nothing but spaces and zero-width "
                                  "non-joiners, which XTREME's preprocessing leaves empty",
                                  line)
        cleaned.append((token, tag, line))
    return cleaned


__all__ = ["PRECEDENCE", "ConversionError", "Span", "Word", "deps_heads", "span_head",
           "xtreme_tokens"]
