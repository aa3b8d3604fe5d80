"""``fsxlt evaluate``: score any start on any split, the way it was trained."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer

from fsxlt.cli.app import app
from fsxlt.cli.inputs import limit_examples, read_split
from fsxlt.cli.options import (
    Device,
    Precision,
)
from fsxlt.errors import FsxltError
from fsxlt.fileio import atomic_write_json, check_output_file
from fsxlt.tasks import get_task


@app.command("evaluate")
def evaluate_cmd(
    checkpoint: Annotated[
        str, typer.Argument(help="Checkpoint dir (or encoder name: fresh head).")
    ],
    task: Annotated[str, typer.Option("--task", help="Task name or task YAML.")],
    lang: Annotated[str, typer.Option("--lang", help="Language of the split.")],
    split: Annotated[str, typer.Option("--split", help="train, dev or test.")] = "test",
    file: Annotated[
        Path | None, typer.Option("--file", help="Data file (else --data-dir).")
    ] = None,
    data_dir: Annotated[
        Path | None, typer.Option("--data-dir", help="Task data directory.")
    ] = None,
    limit: Annotated[int | None, typer.Option("--limit", min=1,
                                              help="Only the first N examples.")] = None,
    out: Annotated[
        Path | None, typer.Option("--out", help="Also write the scores as JSON.")
    ] = None,
    device: Device = "auto",
    precision: Precision = "auto",
    save_predictions: Annotated[
        bool,
        typer.Option(
            "--save-predictions",
            help="Also write per-example predictions beside --out (X.json -> "
            "X.predictions.jsonl). Zero-shot predictions for the analyses: "
            "--out RUNS/<task>/<lang>/k0/zero-shot-test.json.",
        ),
    ] = False,
    replace: Annotated[
        bool, typer.Option("--replace", help="Replace an --out file of other settings "
                           "(else refused).")
    ] = False,
) -> None:
    """Score a checkpoint on one split of one language.

    Tagging tasks score every word: sentences longer than the maximum sequence
    length (128 wordpieces) are predicted in consecutive windows, not truncated.

    Examples:

    \b
      fsxlt evaluate ckpt/panx-mbert --task panx --lang de --split test \\
          --data-dir data/panx
      fsxlt evaluate ckpt/panx-mbert --task panx --lang de --data-dir data/panx \\
          --save-predictions --out runs/panx/de/k0/zero-shot-test.json
    """
    from fsxlt.models.location import check_model_location

    check_model_location(checkpoint, "checkpoint", tokenizer=True)  # before torch, any data
    from fsxlt.models.model import quiet_transformers
    from fsxlt.study.predictions import predictions_path, write_predictions
    from fsxlt.study.runs import EVALUATION_FORMAT, start_fingerprint
    from fsxlt.training.loop import examples_digest, versions
    from fsxlt.training.starts import checkpoint_predictions

    spec = get_task(task)
    spec.check_language(lang)
    if save_predictions and out is None:
        raise FsxltError("--save-predictions writes beside --out FILE.json; pass --out")
    if out is not None:
        check_output_file(out, "--out file")
        _refuse_a_bucket_store(out)
        from fsxlt.study.directories import check_apart_from_models

        check_apart_from_models(Path(out).parent, [("the checkpoint", checkpoint)],
                                holding=False)
    from fsxlt.models.precision import DEFAULT_RESOLVED, resolve_precision
    from fsxlt.training.checkpoint import resolve_device

    precision = resolve_precision(precision, resolve_device(device))
    examples, source = read_split(spec, lang, split, file, data_dir)
    examples = limit_examples(examples, limit, "--limit")
    identity = {"start": start_fingerprint(checkpoint), "task": spec.name, "language": lang,
                "split": split, "data_sha256": examples_digest(examples),
                "predictions": save_predictions,
                **({} if precision == DEFAULT_RESOLVED else {"precision": precision})}
    if out is not None and _evaluation_found(out, identity, replace):
        return
    quiet_transformers()
    from fsxlt.execution.heartbeat import watched

    with watched(f"evaluate: scoring {len(examples)} examples", None):  # lines off a terminal
        scores, predicted = checkpoint_predictions(checkpoint, spec, examples, device=device,
                                                    precision=precision)
    result = {
        "format": EVALUATION_FORMAT,
        "checkpoint": checkpoint,
        "task": spec.name,
        "language": lang,
        "split": split,
        "data": source,
        "data_sha256": examples_digest(examples),
        "n_examples": len(examples),
        "precision": precision,
        "scores": scores,
        "versions": versions(),
        "identity": identity,
    }
    if save_predictions:
        model_info = {"kind": "zero-shot", "checkpoint": checkpoint, "start": identity["start"],
                      "record": Path(out).name}
        write_predictions(predictions_path(out), examples, predicted, task=spec, language=lang,
                          split=split, model=model_info, data_sha256=examples_digest(examples))
    if out is not None:
        atomic_write_json(out, result)
    typer.echo(json.dumps(result, ensure_ascii=False, sort_keys=True))


def _refuse_a_bucket_store(out: Path) -> None:
    """An evaluation is no bucket set's file, nor a benchmark's: refused inside a bucket
    store or a submission folder, as every writer refuses a directory of another kind."""
    from fsxlt.study.directories import KINDS, RUNS, enclosing

    found = enclosing(Path(out).parent)
    if found is not None and found[0] != RUNS:
        raise FsxltError(f"{out}: --out lies inside {found[1]}, a {KINDS[found[0]]}; write "
                         "the evaluation into a runs directory or a folder of its own")


def _evaluation_found(out: Path, identity: dict[str, Any], replace: bool) -> bool:
    """Whether ``out`` already holds this evaluation (printed; nothing to do). An ``out`` of
    other settings (or unreadable) is refused unless ``replace``: the write-once rule."""
    if not out.exists():
        return False
    try:
        held = json.loads(out.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError):
        held = None
    found = held.get("identity") if isinstance(held, dict) else None
    if found == identity and (not identity["predictions"] or _predictions_exist(out)):
        typer.echo(json.dumps(held, ensure_ascii=False, sort_keys=True))
        typer.echo(f"{out}: already holds this evaluation (same start, task, language, split "
                   "and data); nothing to do", err=True)
        return True
    if replace:
        typer.echo(f"{out}: replacing an evaluation of other settings", err=True)
        return False
    what = ", ".join(k for k in identity if not isinstance(found, dict)
                     or found.get(k) != identity[k]) or "format"
    raise FsxltError(f"{out}: holds an evaluation of other settings ({what} differ); pass "
                     "--replace to replace it, or write to another file")


def _predictions_exist(out: Path) -> bool:
    from fsxlt.study.predictions import predictions_path

    return predictions_path(out).is_file()
