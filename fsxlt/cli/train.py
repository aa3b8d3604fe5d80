"""``fsxlt source-train``, ``fsxlt adapt`` and ``fsxlt evaluate``: thin layers over the API."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from fsxlt.cli.app import app
from fsxlt.cli.options import (
    DataDir,
    Device,
    Lrs,
    MaxEpochs,
    MaxSeqLength,
    MethodName,
    MethodOpts,
    Patience,
    Seed,
    SelectStart,
)
from fsxlt.data import Example, load_split, read_examples
from fsxlt.errors import FsxltError
from fsxlt.fileio import atomic_write_json, check_output_dir, check_output_file
from fsxlt.methods import DEFAULT_MODEL, get_method, parse_method_options
from fsxlt.tasks import TaskSpec, get_task


def _split(
    task: TaskSpec, lang: str, split: str, path: Path | None, data_dir: Path | None
) -> tuple[list[Example], str]:
    """Examples and their source from an explicit file or ``data_dir`` + the task pattern."""
    if path is not None:
        return read_examples(path, task, language=lang), str(path)
    if data_dir is None:
        raise FsxltError(f"no {split} data for {lang}: pass a file or --data-dir")
    loaded = load_split(task, lang, split, data_dir=data_dir)
    return loaded.examples, loaded.source


def _limit(examples: list[Example], limit: int | None) -> list[Example]:
    if limit is not None and limit < 1:
        raise FsxltError("limits must be positive")
    return examples if limit is None else examples[:limit]


def _lang_files(values: list[str] | None, option: str) -> dict[str, Path]:
    out = {}
    for value in values or []:
        lang, sep, path = value.partition("=")
        if not sep or not lang or not path:
            raise FsxltError(f"{option} expects LANG=FILE, got {value!r}")
        out[lang.strip()] = Path(path)
    return out


def _print_scores(label: str, scores: dict | None) -> None:
    if scores:
        typer.echo(f"{label}: {scores['metric']} {100 * scores['score']:.2f}")


def _source_languages(spec: TaskSpec, value: str | None, data_dir: Path | None) -> list[str]:
    """``--source-lang``: one language, a comma list, or ``all`` (train files in data_dir)."""
    if value is None:
        return [spec.source_language]
    if value.strip() == "all":
        if data_dir is None:
            raise FsxltError("--source-lang all reads every train file in --data-dir; pass it")
        langs = [lang for lang in spec.languages
                 if spec.data.locate(data_dir, "train", lang).is_file()]
        if not langs:
            raise FsxltError(f"{data_dir}: no train file of {spec.name} in any language")
        return langs
    langs = [lang.strip() for lang in value.split(",") if lang.strip()]
    if not langs:
        raise FsxltError("--source-lang needs a language, a comma-separated list or all")
    for lang in langs:
        spec.check_language(lang)
    return list(dict.fromkeys(langs))


@app.command("source-train")
def source_train_cmd(
    task: Annotated[
        str, typer.Option("--task", help="Task name (xnli, panx, ...) or a task YAML.")
    ],
    out: Annotated[Path, typer.Option("--out", help="Checkpoint directory to write.")],
    model: Annotated[
        str, typer.Option("--model", help="Hugging Face encoder name or dir.")
    ] = DEFAULT_MODEL,
    data_dir: DataDir = None,
    train_file: Annotated[Path | None, typer.Option(
        "--train", help="Source train file (one source language).")] = None,
    dev_file: Annotated[Path | None, typer.Option(
        "--dev", help="Source dev file (one source language).")] = None,
    source_lang: Annotated[
        str | None,
        typer.Option(
            "--source-lang",
            help="Source language(s): a pivot (de), several joined (de,es), or all (every "
            "language with a train file in --data-dir). Default: the task's (en).",
        ),
    ] = None,
    select: Annotated[
        str,
        typer.Option(
            "--select",
            help="Checkpoint selection: source-dev (mean over the source languages' dev "
            "sets) or all-dev (over every language with a dev set: XGLUE's).",
        ),
    ] = "source-dev",
    train_limit: Annotated[
        int | None, typer.Option("--train-limit", help="Use only the first N training examples.")
    ] = None,
    targets: Annotated[
        list[str] | None,
        typer.Option(
            "--target",
            help="Target language to score after every epoch (repeatable); "
            "dev and test come from --data-dir unless given by --target-dev/--target-test.",
        ),
    ] = None,
    target_dev: Annotated[
        list[str] | None,
        typer.Option("--target-dev", help="LANG=FILE: a target dev set (repeatable)."),
    ] = None,
    target_test: Annotated[
        list[str] | None,
        typer.Option(
            "--target-test", help="LANG=FILE: a target test set for zero-shot (repeatable)."
        ),
    ] = None,
    lrs: Lrs = None,
    epochs: Annotated[
        int | None, typer.Option("--epochs", help="Default: task config (10).")
    ] = None,
    batch_size: Annotated[int | None, typer.Option("--batch-size", help="Default: 32.")] = None,
    seed: Seed = None,
    max_seq_length: MaxSeqLength = None,
    device: Device = "auto",
    checkpoint_test_scores: Annotated[
        bool,
        typer.Option(
            "--checkpoint-test-scores",
            help="Also score target test sets after every epoch (for oracle/agreement analyses).",
        ),
    ] = False,
    overwrite: Annotated[
        bool, typer.Option("--overwrite", help="Replace an existing --out.")
    ] = False,
    method: Annotated[
        str, typer.Option("--method", help="full (the study's) or pet (the task's pattern and "
                          "English verbalizer; needs an encoder with a masked-LM head).")
    ] = "full",
) -> None:
    """Source-train over the lr grid; keep the checkpoint with the best source dev score.

    The source is English unless --source-lang names a pivot language or several
    (their train sets joined). Records the source and target dev scores of every
    epoch of every lr and the zero-shot (K=0) test scores of the selected
    checkpoint; a target that was also a source is marked, not zero-shot.

    Example:

    \b
      fsxlt source-train --task panx --data-dir data/panx \\
          --target de --target zh --out ckpt/panx-mbert
      fsxlt source-train --task panx --data-dir data/panx --source-lang en,de,es \\
          --target zh --target ar --out ckpt/panx-en-de-es
    """
    from fsxlt.training import save_checkpoint, source_train
    from fsxlt.training.checkpoint import quiet_transformers

    spec = get_task(task)
    source_langs = _source_languages(spec, source_lang, data_dir)
    if method not in ("full", "pet"):
        raise FsxltError(f"source-train --method is full or pet, not {method!r}")
    get_method(method, spec.kind)
    out = check_output_dir(out, "checkpoint directory")
    if out.exists() and any(out.iterdir()) and not overwrite:
        raise FsxltError(f"{out} exists and is not empty; pass --overwrite to replace it")
    if len(source_langs) > 1 and (train_file or dev_file):
        raise FsxltError("several source languages read their files from --data-dir, "
                         "not --train/--dev")
    train, source_dev, sources = [], {}, {}
    for src in source_langs:
        part, train_src = _split(spec, src, "train", train_file, data_dir)
        train += _limit(part, train_limit)  # the limit applies per source language
        source_dev[src], sources[f"dev-{src}"] = _split(spec, src, "dev", dev_file, data_dir)
        sources.setdefault("train", train_src)
        sources.setdefault("dev", sources[f"dev-{src}"])
    if len(source_langs) > 1:
        sources["train"] = " + ".join(str(spec.data.locate(data_dir, "train", lang))
                                      for lang in source_langs)
    dev_files, test_files = (
        _lang_files(target_dev, "--target-dev"),
        _lang_files(target_test, "--target-test"),
    )
    langs = list(dict.fromkeys(list(targets or []) + list(dev_files) + list(test_files)))
    tdev, ttest = {}, {}
    for lang in langs:
        spec.check_language(lang)
        if lang in dev_files or data_dir is not None:
            tdev[lang], sources[f"dev-{lang}"] = _split(
                spec, lang, "dev", dev_files.get(lang), data_dir
            )
        if lang in test_files or data_dir is not None:
            ttest[lang], sources[f"test-{lang}"] = _split(
                spec, lang, "test", test_files.get(lang), data_dir
            )
    quiet_transformers()
    result = source_train(
        spec,
        train,
        source_dev,
        model_name=model,
        source_languages=source_langs,
        select=select,
        target_dev=tdev,
        target_test=ttest,
        sources=sources,
        lrs=lrs,
        epochs=epochs,
        batch_size=batch_size,
        seed=seed,
        max_seq_length=max_seq_length,
        device=device,
        checkpoint_test_scores=checkpoint_test_scores,
        progress=True,
        method=method,
    )
    save_checkpoint(out, result.model, result.tokenizer, result.record, overwrite=overwrite)
    sel = result.record["selection"]
    on = "English" if source_langs == ["en"] and select == "source-dev" else \
        "+".join(sel["languages"])
    typer.echo(
        f"selected lr {sel['lr']:g} epoch {sel['epoch']} "
        f"({on} dev {100 * sel['dev_score']:.2f}) in {result.wall_time_s:.1f}s; wrote {out}"
    )
    for lang, scores in result.record["zero_shot"].items():
        what = "test (a source language, not zero-shot)" if scores.get("in_source") else "test"
        _print_scores(f"zero-shot {lang} {what}", scores)


def _own_files(directory: Path, buckets: list) -> tuple[dict[int, Path], Path | None]:
    """A fixed-split set's per-bucket dev files and test file (FewCLUE), when it has them."""
    from fsxlt.sampling.store import MANIFEST, read_manifest

    if not (directory / MANIFEST).is_file():
        return {}, None
    manifest = read_manifest(directory)
    devs = {int(e["index"]): directory / e["dev"]["file"]
            for e in manifest["buckets"] if e.get("dev")}
    test = directory / manifest["test"]["file"] if manifest.get("test") else None
    return {b.index: devs[b.index] for b in buckets if b.index in devs}, test


def _buckets(path: Path):
    """The buckets to adapt on (a set directory or one bucket file), verified against their
    manifest, with the set's remaining dev examples when it has them."""
    from fsxlt.sampling.store import (
        DEV_REMAINING,
        MANIFEST,
        check_bucket_hash,
        manifest_entry,
        read_bucket,
        read_examples_jsonl,
        read_set,
    )

    if path.is_dir():
        if not (path / MANIFEST).is_file():
            raise FsxltError(f"{path}: not a bucket set directory (no {MANIFEST})")
        _, buckets, remaining = read_set(path, verify=True)
        return buckets, remaining, path
    if not path.exists():
        raise FsxltError(f"{path}: file not found")
    bucket = read_bucket(path)
    entry = manifest_entry(path)
    if entry is not None:
        check_bucket_hash(path, bucket.sha256, entry)
    remaining = None
    if (path.parent / DEV_REMAINING).is_file():
        remaining = read_examples_jsonl(path.parent / DEV_REMAINING)
    return [bucket], remaining, path.parent


def run_path(out: Path, record: dict) -> Path:
    """Where a run record goes: ``OUT/<task>/<lang>/k<K>/<arm>/<index>.json``, the arm
    being the method, ``-epoch0`` and ``@SOURCE`` for a start not trained on English."""
    from fsxlt.execution.plan import arm_name

    bucket = record["bucket"]
    if bucket.get("name"):
        name = f"{bucket['name']}.json"
    elif bucket.get("index") is not None:
        name = f"{bucket['index']:02d}.json"
    else:
        name = f"{bucket['sha256'][:12]}.json"
    k = f"k{record['k']}" if record.get("k") is not None else "k-"
    start = (record.get("model") or {}).get("start") or {}
    arm = arm_name(record["method"], True, bool(record.get("select_start")),
                   start.get("source_languages"), bucket.get("strategy") or "")
    return Path(out) / record["task"] / record["language"] / k / arm / name


@app.command("adapt")
def adapt_cmd(
    task: Annotated[str, typer.Option("--task", help="Task name or task YAML.")],
    lang: Annotated[str, typer.Option("--lang", help="Target language (ISO 639-1).")],
    bucket: Annotated[
        Path,
        typer.Option("--bucket", help="A bucket file, or a bucket set directory (all buckets)."),
    ],
    out: Annotated[
        Path,
        typer.Option(
            "--out", help="Run records go to OUT/<task>/<lang>/k<K>/<method>/<index>.json."
        ),
    ],
    start: Annotated[
        str | None,
        typer.Option(
            "--from",
            help="Source-trained checkpoint dir; or an encoder name/dir for the "
            "no-source-training ablation (fresh head). Default: --model.",
        ),
    ] = None,
    model: Annotated[
        str, typer.Option("--model", help="Encoder used when --from is not given.")
    ] = DEFAULT_MODEL,
    method: MethodName = "full",
    method_opt: MethodOpts = None,
    select_start: SelectStart = False,
    lrs: Lrs = None,
    seed: Seed = None,
    dev_file: Annotated[
        Path | None,
        typer.Option(
            "--dev",
            help="Target dev file (default: dev-remaining.jsonl of the bucket set "
            "for tasks sampled from dev, else --data-dir).",
        ),
    ] = None,
    test_file: Annotated[Path | None, typer.Option("--test", help="Target test file.")] = None,
    predict: Annotated[
        Path | None,
        typer.Option(
            "--predict",
            help="A file of the task to predict (FewCLUE and XGLUE tasks): each run also "
            "writes its predictions under submission/ beside its record, in the "
            "benchmark's format (<task>_predict_<split>.json; <bucket>/<TASK>/<lang>.prediction).",
        ),
    ] = None,
    data_dir: DataDir = None,
    no_test: Annotated[bool, typer.Option("--no-test", help="Skip the test set.")] = False,
    max_epochs: MaxEpochs = None,
    patience: Patience = None,
    max_seq_length: MaxSeqLength = None,
    device: Device = "auto",
    save_predictions: Annotated[
        bool,
        typer.Option(
            "--save-predictions",
            help="Also write each run's per-example test predictions beside its record "
            "(<index>.predictions.jsonl), for fsxlt analyze gains/confusion.",
        ),
    ] = False,
) -> None:
    """Adapt a model on a bucket (or every bucket of a set) and write one record per run.

    Early stopping on the target dev set, batch = the whole bucket, best epoch scored
    on the target test set; over several --lr the best dev score wins.

    Example:

    \b
      fsxlt adapt --task panx --lang zh --bucket buckets/panx/zh/k1/00.json \\
          --from ckpt/panx-mbert --data-dir data/panx --out runs
      fsxlt adapt --task panx --lang zh --bucket buckets/panx/zh/k1 --method lora \\
          --method-opt rank=4 --select-start --from ckpt/panx-mbert --data-dir data/panx --out runs
      fsxlt adapt --task eprstmt --lang zh --bucket buckets/fewclue/eprstmt/zh/k32 \\
          --from bert-base-multilingual-cased --predict FewCLUE/eprstmt/test.json --out runs
    """
    from tqdm.auto import tqdm

    from fsxlt.sampling.store import read_examples_jsonl
    from fsxlt.training import AdaptEngine
    from fsxlt.training.checkpoint import quiet_transformers

    spec = get_task(task)
    spec.check_language(lang)
    method_obj = get_method(method, spec.kind, parse_method_options(method_opt))  # fail early
    check_output_dir(out, "runs directory")
    buckets, remaining, where = _buckets(Path(bucket))
    own_devs, own_test = _own_files(where, buckets)
    if dev_file is None and own_devs:  # fixed splits: each bucket selects on its own dev set
        dev_src = str(own_devs[buckets[0].index])
        dev = read_examples_jsonl(dev_src)
    elif dev_file is not None or (data_dir is not None and spec.sampling.split != "dev"):
        dev, dev_src = _split(spec, lang, "dev", dev_file, data_dir)
    elif remaining is not None:
        dev, dev_src = remaining, str(where / "dev-remaining.jsonl")
    elif spec.sampling.split == "dev":
        raise FsxltError(
            f"{where}: no dev-remaining.jsonl beside the bucket; task {spec.name} "
            "samples buckets from dev, so pass --dev FILE explicitly"
        )
    else:
        raise FsxltError("no target dev set: pass --dev FILE or --data-dir DIR")
    test, test_src = (None, None)
    if save_predictions and no_test:
        raise FsxltError("--save-predictions saves test predictions; it cannot go with --no-test")
    if not no_test:
        if test_file is None and data_dir is None and own_test is not None:
            test, test_src = read_examples_jsonl(own_test), str(own_test)
        elif test_file is None and data_dir is None:
            raise FsxltError("no target test set: pass --test FILE, --data-dir DIR or --no-test")
        else:
            test, test_src = _split(spec, lang, "test", test_file, data_dir)
    unlabelled = None
    if predict is not None:
        from fsxlt.submission import read_unlabelled, write_submission

        unlabelled = read_unlabelled(predict, spec, lang)
    quiet_transformers()
    engine = AdaptEngine.from_start(
        spec,
        lang,
        start or model,
        dev=dev,
        test=test,
        seed=seed,
        dev_source=dev_src,
        test_source=test_src,
        device=device,
        max_seq_length=max_seq_length,
    )
    for item in tqdm(
        buckets, desc=f"adapt {spec.name}/{lang} {method_obj.name}", unit="bucket",
        disable=len(buckets) < 2,
    ):
        if dev_file is None and item.index in own_devs and str(own_devs[item.index]) != dev_src:
            dev_src = str(own_devs[item.index])
            engine.replace_dev(read_examples_jsonl(dev_src), dev_src)
        record = engine.adapt(
            item, method=method_obj, lrs=lrs, seed=seed, max_epochs=max_epochs,
            patience=patience, predictions=save_predictions, select_start=select_start,
            predict=unlabelled[0] if unlabelled else None,
        )
        record["bucket"]["path"] = (
            str(where / f"{item.name}.json") if Path(bucket).is_dir() else str(bucket)
        )
        path = run_path(out, record)
        if save_predictions:  # first, so a record on disk implies its predictions are there
            from fsxlt.predictions import save_run_predictions

            save_run_predictions(path, record, test, spec)
        if unlabelled is not None:
            write_submission(path.parent, spec, record, unlabelled[1])
        atomic_write_json(path, record)
        test_part = (
            f", test {100 * record['test_score']:.2f}" if record["test_score"] is not None else ""
        )
        typer.echo(
            f"{record['bucket']['id']}: lr {record['selected_lr']:g}, best epoch "
            f"{record['best_epoch']}, dev {100 * record['dev_score']:.2f}{test_part}"
            f" -> {path}"
        )


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
    limit: Annotated[int | None, typer.Option("--limit", help="Only the first N examples.")] = None,
    out: Annotated[
        Path | None, typer.Option("--out", help="Also write the scores as JSON.")
    ] = None,
    device: Device = "auto",
    save_predictions: Annotated[
        bool,
        typer.Option(
            "--save-predictions",
            help="Also write per-example predictions beside --out (X.json -> "
            "X.predictions.jsonl). Zero-shot predictions for the analyses: "
            "--out RUNS/<task>/<lang>/k0/zero-shot-test.json.",
        ),
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
    from fsxlt.evaluation import EVALUATION_FORMAT
    from fsxlt.predictions import checkpoint_predictions, predictions_path, write_predictions
    from fsxlt.training.checkpoint import quiet_transformers
    from fsxlt.training.loop import examples_digest, versions

    spec = get_task(task)
    spec.check_language(lang)
    if save_predictions and out is None:
        raise FsxltError("--save-predictions writes beside --out FILE.json; pass --out")
    if out is not None:
        check_output_file(out, "--out file")
    examples, source = _split(spec, lang, split, file, data_dir)
    examples = _limit(examples, limit)
    quiet_transformers()
    scores, predicted = checkpoint_predictions(checkpoint, spec, examples, device=device)
    result = {
        "format": EVALUATION_FORMAT,
        "checkpoint": checkpoint,
        "task": spec.name,
        "language": lang,
        "split": split,
        "data": source,
        "data_sha256": examples_digest(examples),
        "n_examples": len(examples),
        "scores": scores,
        "versions": versions(),
    }
    if save_predictions:
        model_info = {"kind": "zero-shot", "checkpoint": checkpoint, "record": Path(out).name}
        write_predictions(predictions_path(out), examples, predicted, task=spec, language=lang,
                          split=split, model=model_info, data_sha256=examples_digest(examples))
    if out is not None:
        atomic_write_json(out, result)
    typer.echo(json.dumps(result, ensure_ascii=False, sort_keys=True))
