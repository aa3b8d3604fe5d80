"""``fsxlt score``: a benchmark prediction file scored against its gold file."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from fsxlt.cli.app import app
from fsxlt.errors import FsxltError
from fsxlt.tasks import get_task


@app.command("score")
def score_cmd(
    gold: Annotated[
        Path,
        typer.Argument(metavar="GOLD",
                       help="The task's labelled file in its data format (XGLUE: "
                       "xglue.nc.de.test, de.test, de/test_2k.tsv, xnli.test.tsv; FewCLUE: "
                       "test_public.json; QA: the SQuAD v1.1 JSON file predicted)."),
    ],
    predictions: Annotated[
        Path,
        typer.Argument(metavar="PRED",
                       help="The prediction file, as fsxlt adapt --predict and fsxlt "
                       "submission write it (<TASK>/<lang>.prediction, "
                       "<task>_predict_<x>.json, <TASK>/predictions.<lang>.json)."),
    ],
    task: Annotated[str, typer.Option("--task", help="Task name or task YAML.")],
    lang: Annotated[
        str | None,
        typer.Option("--lang", help="The language scored; default: the task's only "
                     "language (FewCLUE: zh)."),
    ] = None,
    as_json: Annotated[
        bool, typer.Option("--json", help="Print every metric, the task, language and both "
                           "files' sha256 as one JSON object.")
    ] = False,
) -> None:
    """Score a prediction file against a gold file with the benchmark's own metric.

    XGLUE (xnli, pawsx, nc, qadsm, qam, wpr, xglue-ner, xglue-pos): the i-th
    line of PRED is the label of the i-th example of GOLD (WPR: the page's
    grade; NER and POS: one tag per word, a blank line between sentences),
    scored as XGLUE's evaluator scores it: accuracy, nDCG per query (WPR),
    seqeval entity F1 (NER, IOB1 or IOB2 alike) or seqeval precision (POS).
    FewCLUE (eprstmt, ocnli, chid, ...): JSON lines {"id": ..., "label": ...}
    (ChID: "answer"), matched to GOLD's examples by id; accuracy.
    Extractive QA (mlqa, xquad, tydiqa): one JSON object from question id to
    answer text, scored as MLQA's or SQuAD v1.1's evaluator scores it (F1 and
    exact match; every question of GOLD counts, an unanswered one scores 0).
    Generation (qg, ntg): one generated text per line against GOLD's target
    file (xglue.qg.de.tgt.dev), XGLUE's BLEU (sacrebleu, lowercased).

    Refused in one line: a missing file, another number of lines, sentences
    or words than GOLD has (both counts named), a label that is not the
    task's (file and line), a FewCLUE id missing from PRED or unknown to
    GOLD, a task without a prediction format, an unknown language.

    Examples:

    \b
      fsxlt score --task xnli --lang de XGLUE/XNLI/de.test sub/XNLI/de.prediction
      fsxlt score --task xglue-ner --lang de XGLUE/NER/de.test sub/NER/de.prediction --json
      fsxlt score --task ocnli FewCLUE/datasets/ocnli/test_public.json \\
          sub/ocnlif_predict_0.json
      fsxlt score --task mlqa --lang de MLQA_V1/test/test-context-de-question-de.json \\
          sub/MLQA/de.prediction
      fsxlt score --task qg --lang de XGLUE/QG/xglue.qg.de.tgt.dev sub/QG/de.prediction
    """
    from fsxlt.metrics.scoring import prediction_format, score_file, summary

    spec = get_task(task)
    prediction_format(spec)  # a task without one is named before the language is asked for
    if lang is None:
        if len(spec.languages) != 1:
            raise FsxltError(f"task {spec.name} has {len(spec.languages)} languages; name the "
                             f"one scored with --lang ({', '.join(spec.languages)})")
        lang = spec.languages[0]
    result = score_file(spec, gold, predictions, lang)
    if as_json:
        typer.echo(json.dumps(result, ensure_ascii=False, sort_keys=True))
    else:
        typer.echo(summary(result))
