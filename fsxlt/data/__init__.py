"""Examples and the readers that produce them, from local files or the hub.

Two example types cover every task: :class:`TextExample` (one text or a text
pair with a class label) and :class:`TaggedSentence` (words with one tag
each); multiple choice has :class:`ChoiceExample`, extractive QA
:class:`QAExample` and generation :class:`GenerationExample` (a source text and
its target text). Every example carries a stable ``id``: for local files the
file name and the 1-based line where the example starts (``train-de.tsv:57``),
for hub data the dataset, config, split and row index. Ids let a bucket be
checked against its source data.

Readers validate as they go: a missing, empty or malformed file raises
:class:`~fsxlt.errors.DataFormatError` naming the file and line.
This package knows nothing about models. Its modules, one per concern:

- :mod:`~fsxlt.data.examples`: the example types and :class:`Split`;
- :mod:`~fsxlt.data.lines`: a local file's lines and labels, with file:line errors;
- :mod:`~fsxlt.data.classification`, :mod:`~fsxlt.data.tagging`,
  :mod:`~fsxlt.data.fewclue`, :mod:`~fsxlt.data.qa`, :mod:`~fsxlt.data.generation`: the
  readers of each family of formats;
- :mod:`~fsxlt.data.hub`: splits from the Hugging Face hub;
- :mod:`~fsxlt.data.readers`: :func:`read_examples`, :func:`has_labels` and
  :func:`load_split`, the entry points.
"""

from fsxlt.data.classification import marc_text_b, read_marc_jsonl, read_mldoc, read_pair_tsv
from fsxlt.data.examples import (
    ChoiceExample,
    Example,
    GenerationExample,
    QAExample,
    Split,
    TaggedSentence,
    TextExample,
    example_from_dict,
    example_texts,
)
from fsxlt.data.fewclue import (
    CHID_BLANK,
    FEWCLUE_ID_KEYS,
    FEWCLUE_READERS,
    LIST_FIELDS,
    NO_LABEL,
    WSC_MARKS,
    Skipped,
    mark_spans,
    read_fewclue_chid,
    read_fewclue_json,
    read_fewclue_wsc,
    source_ids,
)
from fsxlt.data.hub import examples_from_hub_rows, load_hub_split
from fsxlt.data.readers import (
    READERS,
    UNLABELLED_READERS,
    file_format,
    has_labels,
    load_split,
    read_examples,
)
from fsxlt.data.tagging import DOCSTART, is_docstart, read_conll, read_conllu, read_xglue_tsv

__all__ = [
    "CHID_BLANK", "DOCSTART", "FEWCLUE_ID_KEYS", "FEWCLUE_READERS", "LIST_FIELDS", "NO_LABEL",
    "GenerationExample", "QAExample", "READERS", "UNLABELLED_READERS", "WSC_MARKS",
    "ChoiceExample", "Example", "Skipped", "Split",
    "TaggedSentence", "TextExample", "example_from_dict", "example_texts",
    "examples_from_hub_rows", "file_format",
    "has_labels", "is_docstart", "load_hub_split", "load_split", "marc_text_b", "mark_spans",
    "read_conll", "read_conllu", "read_examples", "read_fewclue_chid", "read_fewclue_json",
    "read_fewclue_wsc", "read_marc_jsonl", "read_mldoc", "read_pair_tsv", "read_xglue_tsv",
    "source_ids",
]
