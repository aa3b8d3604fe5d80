"""Scoring a benchmark prediction file against a gold file, with the benchmark's own metric.

:func:`score_file` (``fsxlt score``) takes a prediction file in the format its task's
benchmark takes (the task YAML's ``submission_format``; the files
:mod:`fsxlt.study.submission` writes) and a labelled gold file in the task's data format
(read by :func:`fsxlt.data.read_examples`), matches each prediction to its gold
example and scores the pairs with :func:`fsxlt.metrics.scores.compute_scores`, the metric
fsxlt reports for its runs. No metric is computed here. One scorer per format, in
:data:`SCORERS`:

``xglue`` (``xnli``, ``pawsx``, ``nc``, ``qadsm``, ``qam``, ``wpr``, ``xglue-ner``, ``xglue-pos``)
    ``<lang>.prediction``, read and scored as XGLUE's evaluator
    (``evaluation/xglue_evaluate.py`` in microsoft/XGLUE) reads and scores it. Every
    line is stripped and must hold a label of the task.

    - Classification (XNLI, PAWS-X, NC, QADSM, QAM): the i-th line is the label of the
      i-th example of the gold file (PAWS-X's header line has none; from XNLI's one
      file of every language, the rows of the language scored). Accuracy.
    - Ranking (WPR): the i-th line is the i-th page's grade (0-4). nDCG of each query's
      pages ranked by those grades, a query being a run of consecutive gold lines with
      the same query text, averaged over the queries of two or more pages; a gold file
      with no such query has no score (an error, where the evaluator gets NaN).
    - Tagging (NER, POS): one tag per word line and one blank line between sentences;
      the j-th sentence is the j-th of the gold file, whose blank lines and
      ``-DOCSTART-`` lines are breaks. NER: seqeval's entity F1 (default, conlleval
      mode) of the file's tags against the gold file's own tags; seqeval reads IOB1
      (XGLUE's files, and fsxlt's re-encoding of the model's tags for them,
      :func:`fsxlt.study.submission.encode_entities`) and IOB2 as the same entities, so
      the score is that of the model's entities in either scheme. POS: seqeval's
      precision over the tag sequences (XGLUE's POS score).

    Refused where the evaluator would crash or silently misalign: another number of
    lines (or sentences) than the gold has, a sentence with another number of words
    than its gold sentence (the evaluator pads a short one with ``O``), and a second
    blank line in a row (the evaluator reads it as a word tagged ``''``).
``xglue`` for generation (``qg``, ``ntg``)
    ``QG/<lang>.prediction``, ``NTG/<lang>.prediction``: one generated text per line, the
    i-th for the i-th line of the gold file ``xglue.<task>.<lang>.tgt.<split>`` (its
    ``.src.`` twin names it too). Read and scored as XGLUE's evaluator does: every
    prediction line stripped, every gold line reduced to its last tab-separated field,
    stripped; sacrebleu's corpus BLEU, lowercased, 13a tokens
    (:func:`fsxlt.metrics.text.xglue_bleu`, what runs report). The score is BLEU / 100,
    ``bleu`` beside it on sacrebleu's scale, with sacrebleu's ``signature``. Another number
    of lines than the gold has is refused (sacrebleu would stop on it).
``fewclue`` (FewCLUE's nine tasks)
    ``<task>_predict_<x>.json``: one JSON object per line, ``{"id": ..., "label": ...}``
    (ChID: ``"answer"``, the candidate's position, an integer). The gold file is a
    labelled ``test_public.json``; each prediction is matched to the gold example its
    ``id`` names (the id each gold row gives, :func:`fsxlt.data.source_ids`), compared
    as text (FewCLUE's ``test.json`` gives TNEWS's ids as strings, ``test_public.json``
    as numbers). Every labelled gold example needs exactly one prediction and every
    prediction's id must be in the gold file. Gold rows without a label (OCNLI's ``-``)
    are left out of the score, as fsxlt's imported test sets leave them out
    (``unlabelled`` counts them); a prediction for one is allowed. Accuracy.

``xglue`` and ``squad`` for extractive QA (``mlqa``; ``xquad``, ``tydiqa``)
    XGLUE's MLQA ``<lang>.prediction`` and SQuAD's ``predictions.json``: one JSON object
    from question id to answer text. The gold file is SQuAD v1.1 JSON; it is scored as
    MLQA's ``mlqa_evaluation_v1.py`` (``mlqa_f1``) or SQuAD v1.1's ``evaluate-v1.1.py``
    (``squad_f1``) scores it (:func:`fsxlt.metrics.qa.score_prediction_file`): every
    question of the gold file counts, one without a prediction scores 0
    (``unanswered`` counts them) and ids the gold file lacks are ignored
    (``unknown_ids``). F1 is the score, exact match beside it.

A result holds every metric :func:`~fsxlt.metrics.scores.compute_scores` returns
(``metric``, ``score``, ...), ``n`` (the examples, sentences or pages scored) and
``unit`` (what ``n`` counts), the task, language and format, and both files' paths
and sha256. Errors are one line (:class:`~fsxlt.errors.FsxltError`): a missing file,
another count than the gold's, a label that is not the task's (file and line), an
id missing from or unknown to the gold, a task without a prediction format, an
unknown language.

Another format plugs in with one entry: a function ``(task, gold, predictions,
language) -> scores`` (compute_scores's dict with ``n`` and ``unit``) in
:data:`SCORERS` under the ``submission_format`` it scores, or under
``<submission_format>/<kind>`` where one benchmark's files differ by the task's kind
(XGLUE's are registered as ``xglue/classification``, ``xglue/tagging``,
``xglue/generation`` and ``xglue/extractive_qa``, the last a JSON object from question
id to answer text). A task whose format and kind have no entry is refused in
one line.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from fsxlt.data import Example, Skipped, has_labels, read_examples, source_ids
from fsxlt.data.fewclue import json_rows
from fsxlt.data.lines import open_lines
from fsxlt.errors import DataFormatError, FsxltError
from fsxlt.fileio import sha256_file, text_lines
from fsxlt.metrics.scores import compute_scores
from fsxlt.tasks import TaskSpec, builtin_tasks, get_task

Scorer = Callable[[TaskSpec, Path, Path, str], dict[str, Any]]

_LINE = re.compile(r":(\d+)$")
_SHOWN_LABELS = 12  # a task with more labels (IFLYTEK's 119) names the first few in errors


# --------------------------------------------------------------------------- shared


def task_labels_text(task: TaskSpec) -> str:
    """The task's labels for a message (the first few of a long list, and how many)."""
    if len(task.labels) <= _SHOWN_LABELS:
        return ", ".join(task.labels)
    return f"{', '.join(task.labels[:_SHOWN_LABELS])}, ... ({len(task.labels)} labels)"


def predicted_label(task: TaskSpec, value: str, path: Path, line_no: int) -> str:
    """``value`` if it is a label of ``task``, else an error naming the file and line."""
    if value not in task.labels:
        shown = "an empty label" if value == "" else repr(value)
        raise DataFormatError(path, f"{shown} is not a label of task {task.name} (labels: "
                              f"{task_labels_text(task)})", line_no)
    return value


def read_gold(path: Path, task: TaskSpec, language: str,
              skipped: Skipped | None = None) -> list[Example]:
    """The gold file's examples (:func:`fsxlt.data.read_examples`); a file to predict (no
    labels, as the benchmarks ship their test files) is refused as such, in one line."""
    try:
        return read_examples(path, task, skipped=skipped, language=language)
    except DataFormatError:
        try:
            unlabelled = not has_labels(path, task, language=language)
        except FsxltError:
            unlabelled = False
        if not unlabelled:
            raise
    raise DataFormatError(path, "holds no labels (a file to predict, as the benchmark ships "
                          "its test files); score against a labelled gold file")


def _counts_differ(predictions: Path, gold: Path, n_predicted: int, n_gold: int,
                   unit: str, gold_unit: str) -> DataFormatError:
    return DataFormatError(predictions, f"{n_predicted} {unit} but the gold file {gold} has "
                           f"{n_gold} {gold_unit}; the i-th {unit.rstrip('s')} is the "
                           f"prediction for the gold file's i-th {gold_unit.rstrip('s')}")


# --------------------------------------------------------------------------- xglue


def read_label_lines(path: Path, task: TaskSpec) -> list[str]:
    """An XGLUE prediction file of a classification or ranking task: one label a line."""
    return [predicted_label(task, line.strip(), path, line_no)
            for line_no, line in enumerate(open_lines(path), start=1)]


def read_tag_sentences(path: Path, task: TaskSpec) -> list[tuple[int, list[str]]]:
    """An XGLUE prediction file of a tagging task as its evaluator splits it: (first line,
    tags) of each sentence, a blank line ending a sentence. A blank line where no sentence
    is open is refused: the evaluator would read it as a word tagged ``''``."""
    sentences: list[tuple[int, list[str]]] = []
    current: list[str] = []
    start = 0
    for line_no, line in enumerate(open_lines(path), start=1):
        tag = line.strip()
        if not tag and current:
            sentences.append((start, current))
            current = []
            continue
        if not tag:
            where = "at the start of the file" if line_no == 1 else "after a blank line"
            raise DataFormatError(path, f"a blank line {where}: sentences are separated by "
                                  "one blank line (XGLUE's evaluator reads another as a word "
                                  "tagged '')", line_no)
        if not current:
            start = line_no
        current.append(predicted_label(task, tag, path, line_no))
    if current:
        sentences.append((start, current))
    return sentences


def _score_tagging(task: TaskSpec, examples: Sequence[Example], gold: Path,
                   predictions: Path) -> dict[str, Any]:
    sentences = read_tag_sentences(predictions, task)
    if len(sentences) != len(examples):
        raise _counts_differ(predictions, gold, len(sentences), len(examples), "sentences",
                             "sentences")
    for number, ((line_no, tags), example) in enumerate(zip(sentences, examples, strict=True),
                                                        start=1):
        if len(tags) != len(example.tags):
            raise DataFormatError(predictions, f"sentence {number} has {len(tags)} tags but "
                                  f"its gold sentence ({example.id}) has {len(example.tags)} "
                                  "words", line_no)
    scores = compute_scores(task, [list(ex.tags) for ex in examples],
                            [tags for _, tags in sentences])
    return {**scores, "unit": "sentences"}


def score_xglue(task: TaskSpec, gold: Path, predictions: Path,
                language: str) -> dict[str, Any]:
    """An XGLUE ``<lang>.prediction`` file against the task's labelled file (see the module
    docstring)."""
    examples = read_gold(gold, task, language)
    if task.is_tagging:
        return _score_tagging(task, examples, gold, predictions)
    predicted = read_label_lines(predictions, task)
    if len(predicted) != len(examples):
        raise _counts_differ(predictions, gold, len(predicted), len(examples),
                             "prediction lines", "examples")
    labels = [ex.label for ex in examples]
    if task.is_ranking:
        scores = compute_scores(task, labels, predicted, groups=[ex.text_a for ex in examples],
                                what=str(gold))
        return {**scores, "unit": "pages"}
    return {**compute_scores(task, labels, predicted), "unit": "examples"}


def read_text_lines(path: Path) -> list[str]:
    """A prediction file of a generation task: its lines, blank ones too (a model may
    generate nothing), without line ends; a file that is not UTF-8 is refused."""
    try:
        return text_lines(path.read_text(encoding="utf-8"))
    except UnicodeDecodeError as err:
        line = path.read_bytes()[: err.start].count(b"\n") + 1
        raise DataFormatError(path, "not valid UTF-8 text", line) from None


def score_generation(task: TaskSpec, gold: Path, predictions: Path,
                     language: str) -> dict[str, Any]:
    """An XGLUE ``QG/<lang>.prediction`` or ``NTG/<lang>.prediction`` file against the
    split's target file, as XGLUE's evaluator reads and scores them (see the module
    docstring)."""
    from fsxlt.data.generation import paired_files, target_of_line

    target = paired_files(gold)[1]
    if not target.is_file():
        raise DataFormatError(gold, f"has no target file {target.name} (a file to predict, as "
                              "XGLUE ships its test splits); score against a labelled split")
    targets = [target_of_line(line) for line in open_lines(target)]
    predicted = read_text_lines(predictions)
    if len(predicted) != len(targets):
        raise _counts_differ(predictions, target, len(predicted), len(targets),
                             "prediction lines", "target lines")
    return {**compute_scores(task, targets, predicted), "unit": "examples",
            SCORED_GOLD: str(target)}


# --------------------------------------------------------------------------- fewclue


def _id_key(value: Any) -> str:
    """An id as predictions and gold are matched by it: its text (3 and "3" are one id)."""
    return str(value)


def _gold_table(gold: Path, task: TaskSpec,
                examples: Sequence[Example]) -> dict[str, tuple[int, Any, str | None]]:
    """id -> (gold line, id as the file gives it, label; None for a row without one), in
    file order. An id that two gold rows give is an error: predictions could not say which."""
    labels = {int(_LINE.search(ex.id).group(1)): ex.label for ex in examples}
    table: dict[str, tuple[int, Any, str | None]] = {}
    for line_no, raw in source_ids(gold, task).items():
        key = _id_key(raw)
        if key in table:
            raise DataFormatError(gold, f"id {raw!r} is given by lines {table[key][0]} and "
                                  f"{line_no}; predictions are matched to gold examples by id",
                                  line_no)
        table[key] = (line_no, raw, labels.get(line_no))
    return table


def _json_rows(path: Path) -> list[tuple[int, dict[str, Any]]]:
    return list(json_rows(path, 'a JSON object ({"id": ..., "label": ...})'))


def _fewclue_label(task: TaskSpec, row: dict[str, Any], path: Path, line_no: int) -> str:
    """A prediction line's label: ``label`` (a string, or a number for numeric labels), or
    ChID's ``answer``, a candidate's position (an integer)."""
    key = "answer" if task.is_multiple_choice else "label"
    value = row.get(key)
    if value is None:
        other = "label" if key == "answer" else "answer"
        hint = f" (it gives {other!r}; {task.name}'s prediction lines say {key!r})" \
            if other in row else ""
        raise DataFormatError(path, f"missing {key!r}{hint}", line_no)
    wrong_type = isinstance(value, bool) or not isinstance(value, int if key == "answer"
                                                          else int | str)
    if wrong_type:
        expected = "an integer, the candidate's position" if key == "answer" else \
            "a string (or a number, for numeric labels)"
        raise DataFormatError(path, f"{key!r} must be {expected}, found {value!r}", line_no)
    return predicted_label(task, str(value).strip(), path, line_no)


def read_fewclue_predictions(path: Path, task: TaskSpec, gold: Path,
                             known: dict[str, Any]) -> dict[str, str]:
    """id -> predicted label of a FewCLUE prediction file; an id that is not in ``known``
    (the gold file's), a line without an id and an id predicted twice are errors."""
    predicted: dict[str, str] = {}
    lines: dict[str, int] = {}
    for line_no, row in _json_rows(path):
        raw = row.get("id")
        if raw is None or isinstance(raw, bool) or not isinstance(raw, int | str):
            raise DataFormatError(path, "the line has no 'id' (a string or an integer); "
                                  "predictions are matched to gold examples by id", line_no)
        key = _id_key(raw)
        if key not in known:
            raise DataFormatError(path, f"id {raw!r} is not an id of the gold file {gold}",
                                  line_no)
        if key in predicted:
            raise DataFormatError(path, f"id {raw!r} is predicted twice (lines {lines[key]} "
                                  f"and {line_no})", line_no)
        predicted[key] = _fewclue_label(task, row, path, line_no)
        lines[key] = line_no
    return predicted


def score_fewclue(task: TaskSpec, gold: Path, predictions: Path,
                  language: str) -> dict[str, Any]:
    """A FewCLUE ``<task>_predict_<x>.json`` against a labelled ``test_public.json`` (see the
    module docstring)."""
    skipped = Skipped()
    table = _gold_table(gold, task, read_gold(gold, task, language, skipped=skipped))
    predicted = read_fewclue_predictions(predictions, task, gold, table)
    labelled = [(key, label) for key, (_, _, label) in table.items() if label is not None]
    missing = [table[key] for key, _ in labelled if key not in predicted]
    if missing:
        shown = ", ".join(f"{raw!r} (line {line})" for line, raw, _ in missing[:3])
        more = f" and {len(missing) - 3} more" if len(missing) > 3 else ""
        raise DataFormatError(predictions, f"no prediction for {len(missing)} of the "
                              f"{len(labelled)} labelled examples of the gold file {gold}: "
                              f"ids {shown}{more}")
    scores = compute_scores(task, [label for _, label in labelled],
                            [predicted[key] for key, _ in labelled])
    return {**scores, "unit": "examples", "unlabelled": len(skipped)}


def score_qa(task: TaskSpec, gold: Path, predictions: Path, language: str) -> dict[str, Any]:
    """An extractive QA prediction file (question id -> answer text) against a SQuAD v1.1
    gold file, as MLQA's or SQuAD's evaluator scores it (see the module docstring)."""
    from fsxlt.metrics.qa import metric_style, score_prediction_file

    read = {}
    for path, what in ((gold, "gold file"), (predictions, "prediction file")):
        try:
            read[what] = json.loads("\n".join(open_lines(path)))
        except json.JSONDecodeError as err:
            raise DataFormatError(path, f"the {what} is not JSON ({err.msg})", err.lineno
                                  ) from None
    answers = read["prediction file"]
    if not isinstance(answers, dict) or not all(isinstance(v, str) for v in answers.values()):
        raise DataFormatError(predictions, "expected one JSON object from question id to "
                              "answer text")
    try:
        scores = score_prediction_file(read["gold file"], answers, language=language,
                                       style=metric_style(task.metric))
    except FsxltError as err:
        raise DataFormatError(gold, str(err)) from None
    return {"metric": task.metric, "score": scores["f1"], **scores, "unit": "questions"}


# --------------------------------------------------------------------------- the registry

# a task YAML's submission_format, or "<submission_format>/<kind>" where a format's files
# differ by the task's kind, -> its scorer (the module docstring says what each reads)
SCORERS: dict[str, Scorer] = {
    "xglue/classification": score_xglue,
    "xglue/tagging": score_xglue,
    "xglue/generation": score_generation,
    "fewclue": score_fewclue,
    "xglue/extractive_qa": score_qa,
    "squad": score_qa,
}


def scorer_key(task: TaskSpec) -> str | None:
    """The key of ``task``'s scorer in :data:`SCORERS`: ``<format>/<kind>`` if registered,
    else ``<format>``; None for a task without a prediction format or without a scorer."""
    if task.submission is None:
        return None
    fmt = task.submission_format
    return next((key for key in (f"{fmt}/{task.kind}", fmt) if key in SCORERS), None)


def tasks_with_format() -> list[str]:
    """The built-in tasks whose prediction files can be scored, by name."""
    return sorted(name for name, spec in builtin_tasks().items()
                  if scorer_key(spec) is not None)


def prediction_format(task: TaskSpec) -> str:
    """The key of the task's scorer in :data:`SCORERS`, or a one-line error naming the
    tasks that have one."""
    key = scorer_key(task)
    if key is not None:
        return key
    if task.submission is None:
        raise FsxltError(f"task {task.name} has no prediction format (its YAML names no "
                         f"'submission'); tasks with one: {', '.join(tasks_with_format())}")
    raise FsxltError(f"task {task.name}: no scorer for {task.submission_format} prediction "
                     f"files of {task.kind} tasks (scorers: {', '.join(sorted(SCORERS))}); "
                     f"tasks with one: {', '.join(tasks_with_format())}")


# a scorer's key for the gold file it read when that is not the one given (XGLUE's
# generation scorer reads the .tgt. twin of a .src. file): what score_file reports and hashes
SCORED_GOLD = "scored_gold"


def _check_file(path: Path, what: str) -> None:
    if not path.exists():
        raise DataFormatError(path, f"{what} not found")
    if not path.is_file():
        raise DataFormatError(path, f"{what} is not a file")


def score_file(task: str | TaskSpec, gold: str | Path, predictions: str | Path,
               language: str) -> dict[str, Any]:
    """Score the prediction file ``predictions`` against the labelled ``gold`` file of
    ``task`` in ``language``, with the task's metric, as its benchmark scores it.

    Returns every metric :func:`~fsxlt.metrics.scores.compute_scores` gives (``metric``,
    ``score``, ...), ``n`` and ``unit`` (what was scored), ``task``, ``language``,
    ``format``, ``gold``, ``predictions`` and both files' sha256. Raises
    :class:`~fsxlt.errors.FsxltError` (one line) on anything that cannot be scored.
    """
    spec = get_task(task)
    scorer = SCORERS[prediction_format(spec)]
    spec.check_language(language)
    gold, predictions = Path(gold), Path(predictions)
    _check_file(gold, "gold file")
    _check_file(predictions, "prediction file")
    scores = scorer(spec, gold, predictions, language)
    scored = Path(scores.pop(SCORED_GOLD, gold))  # XGLUE's .src. given: its .tgt. twin
    named = {"gold_given": str(gold)} if scored != gold else {}
    return {**scores, "task": spec.name, "language": language,
            "format": spec.submission_format,
            "gold": str(scored), **named, "predictions": str(predictions),
            "gold_sha256": sha256_file(scored), "predictions_sha256": sha256_file(predictions)}


def summary(result: dict[str, Any]) -> str:
    """One human line of a :func:`score_file` result:
    ``xnli/de: accuracy 71.20 (5010 examples)``."""
    counts = [f"{result['n']} {result.get('unit', 'examples')}"]
    if "n_words" in result:
        counts.append(f"{result['n_words']} words")
    if "n_queries" in result:
        counts.append(f"{result['n_queries']} queries")
    if result.get("unlabelled"):
        counts.append(f"{result['unlabelled']} unlabelled left out")
    if result.get("unanswered"):
        counts.append(f"{result['unanswered']} unanswered")
    extra = f", exact match {100 * result['exact_match']:.2f}" if "exact_match" in result \
        else ""
    return (f"{result['task']}/{result['language']}: {result['metric']} "
            f"{100 * result['score']:.2f}{extra} ({', '.join(counts)})")
