"""``fsxlt analyze``: the analyses of docs/analyses.md, one subcommand each."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from fsxlt.cli.app import app
from fsxlt.cli.options import Device, Lrs, MaxEpochs, Patience
from fsxlt.data import load_split
from fsxlt.errors import FsxltError
from fsxlt.fileio import atomic_write_text, check_output_dir
from fsxlt.tasks import get_task


def _labelled(task: str, what: str) -> None:
    """Refuse an extractive QA task in one line: its answers are spans, not labels."""
    if get_task(task).is_qa:
        raise FsxltError(f"{what} need predicted labels; {task} is extractive QA, whose "
                         "answers are spans")

# pandas, scipy and matplotlib are imported inside the commands (quick `fsxlt --help`).


analyze_app = typer.Typer(help="Analyses that explain FS-XLT results.", no_args_is_help=True)
app.add_typer(analyze_app, name="analyze")


def _english_examples(task: str, english: Path | None, data_dir: Path | None):
    spec = get_task(task)
    return load_split(spec, spec.source_language, "train", path=english,
                      data_dir=data_dir).examples


def _check_out(out: Path | None) -> None:
    """Fail before any work if ``--out`` cannot be written (a file, no permission)."""
    if out is not None:
        check_output_dir(out, "--out directory")


def _write_table(table, out: Path | None, name: str) -> None:
    """Print a DataFrame and, with ``out``, save it as CSV."""
    typer.echo(table.to_string(index=False, float_format=lambda x: f"{x:.3f}"))
    if out is not None:
        atomic_write_text(out / f"{name}.csv", table.to_csv(index=False))


@analyze_app.command("overlap")
def overlap_command(
    buckets: Annotated[Path, typer.Argument(help="Bucket store root (or one set).")],
    task: Annotated[str, typer.Option("--task", "-t", help="Task whose buckets to use.")],
    english: Annotated[Path | None, typer.Option(help="English training file.")] = None,
    data_dir: Annotated[Path | None, typer.Option(
        help="Directory holding train-en.tsv (the task's file pattern).")] = None,
    out: Annotated[Path | None, typer.Option(help="Also write overlap.csv here.")] = None,
) -> None:
    """Lexical overlap of each target language's buckets with the English training words.

    Example:

      fsxlt analyze overlap buckets/ --task panx --english data/panx/train-en.tsv
    """
    _check_out(out)
    from fsxlt.analysis.typology import overlap_table

    table = overlap_table(buckets, _english_examples(task, english, data_dir), task=task)
    _write_table(table, out, "overlap")


@analyze_app.command("correlate")
def correlate_command(
    scores: Annotated[Path, typer.Argument(
        help="CSV with columns task, language, k, mean (k=0: zero-shot); optional overlap.")],
    buckets: Annotated[Path | None, typer.Option(
        help="Compute lexical overlap from this bucket store (needs --english).")] = None,
    english: Annotated[Path | None, typer.Option(help="English training file.")] = None,
    overlap_k: Annotated[int | None, typer.Option(
        help="K whose buckets define a language's overlap (default: the largest).")] = None,
    out: Annotated[Path | None, typer.Option(help="Write tables (CSV) and plots here.")] = None,
) -> None:
    """Correlate per-language gains with lexical overlap and shared WALS features.

    A language's gain is the mean over K of (K-shot mean minus zero-shot).
    Prints Spearman's rho and Pearson's r with p-values, and the mean gain
    of Latin-script versus other-script languages.

    Example:

      fsxlt analyze correlate published_scores.csv --buckets buckets/ --english train-en.tsv
    """
    _check_out(out)
    import pandas as pd

    from fsxlt.analysis.plots import gain_scatter
    from fsxlt.analysis.typology import (
        correlation_table,
        language_gains,
        overlap_table,
        script_table,
    )

    if not scores.is_file():
        raise FsxltError(f"{scores}: file not found")
    frame = pd.read_csv(scores)
    gains = language_gains(frame)
    zero_only = gains.attrs.get("zero_shot_only") or []
    if zero_only:
        typer.echo(f"left out (zero-shot only, not few-shot targets): {', '.join(zero_only)}",
                   err=True)
    if "overlap" in frame.columns:
        per_lang = frame.dropna(subset=["overlap"]).groupby(["task", "language"])["overlap"]
        gains = gains.merge(per_lang.mean().reset_index(), on=["task", "language"], how="left")
    elif buckets is not None:
        if english is None:
            raise FsxltError("--buckets needs --english (the English training file)")
        tables = []
        for task in sorted(gains["task"].unique()):
            ov = overlap_table(buckets, _english_examples(task, english, None), task=task)
            k = overlap_k if overlap_k is not None else int(ov["k"].max())
            tables.append(ov.loc[ov["k"] == k, ["task", "language", "overlap"]])
        gains = gains.merge(pd.concat(tables), on=["task", "language"], how="left")
    correlations = correlation_table(gains)
    _write_table(gains, out, "gains")
    typer.echo("")
    _write_table(correlations, out, "correlations")
    typer.echo("")
    _write_table(script_table(gains), out, "script")
    if out is not None:
        for task, group in gains.groupby("task"):
            gain_scatter(group, "wals_shared", "WALS features shared with English (of 6)",
                         f"{task}: gain vs. common WALS features", out / f"{task}-gain-wals")
            if "overlap" in group and group["overlap"].notna().any():
                gain_scatter(group, "overlap", "lexical overlap with English",
                             f"{task}: gain vs. lexical overlap", out / f"{task}-gain-overlap")
        typer.echo(f"wrote tables and plots to {out}")


# --------------------------------------------------------------------------- predictions

RunsArg = Annotated[Path, typer.Argument(help="RUNS_DIR holding the adapt records.")]
TaskOpt = Annotated[str, typer.Option("--task", "-t", help="Task name.")]
LangOpt = Annotated[str, typer.Option("--lang", help="Target language.")]
KOpt = Annotated[int, typer.Option("--k", help="K of the adapt runs.")]
MethodOpt = Annotated[str, typer.Option("--method", help="Arm directory (method).")]
ZeroOpt = Annotated[Path | None, typer.Option(
    "--zero-shot", help="Zero-shot predictions file (default: "
    "RUNS/<task>/<lang>/k0/zero-shot-test.predictions.jsonl).")]
BucketsOpt = Annotated[list[int] | None, typer.Option(
    "--bucket", help="Only this bucket's run (repeatable; default: every saved run).")]


def _run_bucket_words(runs: Path, task: str, lang: str, k: int, method: str,
                      indices: list[int], store: Path | None) -> dict[int, set[str]]:
    """Word types of the buckets behind the runs, each found by the hash its record holds:
    in the bucket store ``store``, else at the record's path."""
    from fsxlt.analysis.gains import bucket_word_sets
    from fsxlt.fileio import read_json
    from fsxlt.sampling.store import index_store, run_bucket

    index = index_store(store) if store is not None else None  # every manifest read once
    sentences = {}
    for run in indices:
        path = runs / task / lang / f"k{k}" / method / f"{run:02d}.json"
        record = read_json(path)
        block = record.get("bucket") if isinstance(record, dict) else None
        sentences[run] = run_bucket(block if isinstance(block, dict) else {}, path,
                                    index).examples
    return bucket_word_sets(sentences)


@analyze_app.command("gains")
def gains_command(
    runs: RunsArg, task: TaskOpt, lang: LangOpt, k: KOpt,
    out: Annotated[Path, typer.Option(help="Write tables (CSV) and plots here.")],
    method: MethodOpt = "full", zero_shot: ZeroOpt = None, bucket: BucketsOpt = None,
    buckets: Annotated[Path | None, typer.Option(
        help="Bucket store root, where each run's bucket is found by its hash (default: "
             "each run record's bucket path).")] = None,
) -> None:
    """Tagging: which test words adapting fixed, and whether they occur in the bucket.

    Needs zero-shot predictions (fsxlt evaluate CKPT --save-predictions --out
    RUNS/<task>/<lang>/k0/zero-shot-test.json) and adapt runs saved with
    --save-predictions. Writes jaccard.csv, improved.csv, a heatmap of
    Jaccard(words of bucket i, test words improved by the run on bucket j)
    and stacked bars of improved words in / not in the bucket.

    Example:

      fsxlt analyze gains runs/ --task panx --lang de --k 1 --out analysis/gains
    """
    _check_out(out)
    from fsxlt.analysis.gains import gains_analysis
    from fsxlt.analysis.plots import improved_bars, jaccard_heatmap
    from fsxlt.study.predictions import check_same_start, load_adapted, load_zero_shot

    if not get_task(task).is_tagging:
        raise FsxltError(f"--task {task}: analyze gains counts the test words adapting "
                         f"fixed, which needs a tagging task (panx, udpos, ...); {task} "
                         "labels whole examples: see analyze confusion")

    zero = load_zero_shot(runs, task, lang, zero_shot)
    adapted = load_adapted(runs, task, lang, k, method, bucket)
    check_same_start(zero, adapted, runs / task / lang / f"k{k}" / method)
    words = _run_bucket_words(runs, task, lang, k, method, sorted(adapted), buckets)
    result = gains_analysis(zero, adapted, words)
    _write_table(result.counts, None, "improved")
    stem = f"{task}-{lang}-k{k}-{method}"
    atomic_write_text(out / "jaccard.csv", result.jaccard.to_csv())
    atomic_write_text(out / "improved.csv", result.counts.to_csv(index=False))
    jaccard_heatmap(result.jaccard, f"{task} {lang} K={k}: bucket words vs. improved words",
                    out / f"{stem}-jaccard")
    improved_bars(result.counts, f"{task} {lang} K={k}: improved test words per bucket",
                  out / f"{stem}-improved")
    typer.echo(f"wrote tables and plots to {out}")


@analyze_app.command("confusion")
def confusion_command(
    runs: RunsArg, task: TaskOpt, lang: LangOpt, k: KOpt,
    out: Annotated[Path, typer.Option(help="Write the matrices (CSV) and the heatmaps here.")],
    method: MethodOpt = "full", zero_shot: ZeroOpt = None, bucket: BucketsOpt = None,
    normalize: Annotated[bool, typer.Option(
        help="Divide each row by its gold count (shares instead of counts).")] = False,
) -> None:
    """Confusion matrices of zero-shot and adapted test predictions, and their difference.

    The adapted matrix is the mean over the selected runs (default: every
    run of the K and method with saved predictions). Needs zero-shot
    predictions (fsxlt evaluate CKPT --save-predictions --out
    RUNS/<task>/<lang>/k0/zero-shot-test.json) and adapt runs saved with
    --save-predictions.

    Example:

      fsxlt analyze confusion runs/ --task xnli --lang de --k 1 --out analysis/confusion
    """
    _check_out(out)
    from fsxlt.analysis.confusion import confusion_analysis
    from fsxlt.analysis.plots import confusion_heatmaps
    from fsxlt.study.predictions import check_same_start, load_adapted, load_zero_shot

    _labelled(task, "confusion matrices")

    zero = load_zero_shot(runs, task, lang, zero_shot)
    adapted = load_adapted(runs, task, lang, k, method, bucket)
    check_same_start(zero, adapted, runs / task / lang / f"k{k}" / method)
    result = confusion_analysis(zero, list(adapted.values()), normalize)
    typer.echo(f"adapted minus zero-shot (mean over {result.n_runs} run(s); rows gold, "
               "columns predicted):")
    typer.echo(result.difference.to_string(float_format=lambda x: f"{x:.2f}"))
    for name in ("zero_shot", "adapted", "difference"):
        atomic_write_text(out / f"{name.replace('_', '-')}.csv", getattr(result, name).to_csv())
    runs_text = f"bucket {sorted(adapted)[0]}" if len(adapted) == 1 else f"{len(adapted)} buckets"
    confusion_heatmaps(result.zero_shot, result.adapted, result.difference,
                       f"{task} {lang}: zero-shot vs. adapted K={k} ({method}, {runs_text})",
                       out / f"{task}-{lang}-k{k}-{method}-confusion", normalize)
    typer.echo(f"wrote matrices and heatmaps to {out}")


@analyze_app.command("selection")
def selection_command(
    paths: Annotated[list[Path], typer.Argument(
        help="Source-trained checkpoint dirs (one per seed) or their fsxlt_checkpoint.json; "
        "or runs directories of fsxlt adapt / sweep (not both kinds at once).")],
    langs: Annotated[list[str] | None, typer.Option(
        "--lang", help="Target language (repeatable; default: every one scored).")] = None,
    min_test_diff: Annotated[float, typer.Option(
        help="Pairs count for agreement when test scores differ by at least this (points).")
    ] = 0.5,
    tasks: Annotated[list[str] | None, typer.Option(
        "--task", "-t", help="Runs directories: only this task (repeatable).")] = None,
    ks: Annotated[list[int] | None, typer.Option(
        "-k", "--k", help="Runs directories: only this K (repeatable).")] = None,
    arms: Annotated[list[str] | None, typer.Option(
        "--arm", help="Runs directories: only this arm, e.g. full (repeatable).")] = None,
    seed: Annotated[int, typer.Option(
        "--seed", help="Runs directories: bootstrap seed of the gap's interval.")] = 0,
    n_boot: Annotated[int, typer.Option(
        "--bootstrap", help="Runs directories: bootstrap resamples.")] = 10_000,
    out: Annotated[Path | None, typer.Option(help="Write tables (CSV) and plots here.")] = None,
) -> None:
    """Model selection: English dev vs. oracle when source-training; rules when adapting.

    Checkpoint dirs: selection.csv, seed-variation.csv and a plot need
    checkpoints from fsxlt source-train --target LANG --checkpoint-test-scores
    (every checkpoint scored on the target test sets); give several checkpoint
    dirs (different --seed) for the min / max / spread of zero-shot scores. With
    checkpoints of source-train --average-last N, source-candidates.csv (per
    language and candidate model: test mean and std over runs, target dev mean,
    gap to the target-dev-selected checkpoint), with or without
    --checkpoint-test-scores.

    Runs directories: per task, language, K, arm and selection rule (target dev,
    English dev, last epoch, averages, as the records' candidates hold them;
    records without candidates have target dev only): the test score as mean and
    std over buckets, the mean dev score and the gap to the target-dev selection,
    paired by bucket, with a bootstrap interval. Writes adapt-selection.csv,
    adapt-selection.md and a plot per task and language.

    Examples:

      fsxlt analyze selection ckpt/xnli-s1 ckpt/xnli-s2 ckpt/xnli-s3 --out analysis/selection

      fsxlt analyze selection runs/ --task xnli --lang de -k 1 -k 4 --out analysis/selection
    """
    _check_out(out)
    from fsxlt.analysis.adapt_selection import is_runs_directory
    from fsxlt.study.runs import CHECKPOINT_FILE

    runs_dirs = [path for path in paths if is_runs_directory(path)]
    if runs_dirs and len(runs_dirs) < len(paths):
        other = next(path for path in paths if path not in runs_dirs)
        raise FsxltError(f"{other}: not a runs directory, but {runs_dirs[0]} is one; give "
                         "either checkpoint directories or runs directories, not both")
    if runs_dirs:
        _adapt_selection(runs_dirs, out, langs=langs or [], tasks=tasks or [], ks=ks or [],
                         arms=arms or [], seed=seed, n_boot=n_boot)
        return
    if tasks or ks or arms:
        raise FsxltError("--task, -k and --arm filter runs directories; checkpoints were given")
    for path in paths:
        if path.is_dir() and not (path / CHECKPOINT_FILE).is_file():
            raise FsxltError(f"{path}: neither a checkpoint (no {CHECKPOINT_FILE}) nor a "
                             "runs directory (no run records)")
    _source_selection(paths, out, langs, min_test_diff)


def _source_selection(checkpoints: list[Path], out: Path | None, langs: list[str] | None,
                      min_test_diff: float) -> None:
    """``fsxlt analyze selection`` of source-training checkpoints."""
    from fsxlt.analysis.plots import selection_bars
    from fsxlt.analysis.selection import (
        candidates_table,
        load_source_record,
        selection_tables,
        target_languages,
    )

    records = [load_source_record(path) for path in checkpoints]
    try:
        runs, seeds = selection_tables(records, langs, min_test_diff / 100)
    except FsxltError as err:  # no per-checkpoint test scores: the candidates may still be
        runs = seeds = None
        missing = str(err)
    languages = (list(dict.fromkeys(runs["language"])) if runs is not None
                 else langs or target_languages(records[0]))
    candidates = candidates_table(records, languages) if languages else None
    if runs is None:
        if candidates is None:
            raise FsxltError(missing)
        typer.echo(f"note: no selection and seed-variation tables ({missing})")
    else:
        _write_table(runs, out, "selection")
        typer.echo("")
        _write_table(seeds, out, "seed-variation")
        typer.echo("")
    if candidates is None:
        typer.echo("no candidates in these checkpoints (source-train --average-last N): "
                   "no source-candidates table")
    else:
        _write_table(candidates.assign(lr=[f"{lr:g}" if lr == lr else "-"
                                           for lr in candidates["lr"]]), None,
                     "source-candidates")  # learning rates readable, not 0.000
        if out is not None:
            atomic_write_text(out / "source-candidates.csv", candidates.to_csv(index=False))
    if out is not None and runs is not None:
        task = records[0].get("task", "task")
        selection_bars(runs, f"{task}: zero-shot by selection protocol ({len(records)} run(s))",
                       out / f"{task}-selection")
        typer.echo(f"wrote tables and a plot to {out}")
    elif out is not None:
        typer.echo(f"wrote the candidates table to {out}")


def _adapt_selection(runs_dirs: list[Path], out: Path | None, *, langs: list[str],
                     tasks: list[str], ks: list[int], arms: list[str], seed: int,
                     n_boot: int) -> None:
    """``fsxlt analyze selection`` of runs directories (fsxlt.analysis.adapt_selection)."""
    from fsxlt.analysis.adapt_selection import (
        filter_records,
        read_adapt_records,
        selection_markdown,
        selection_table,
    )
    from fsxlt.analysis.plots import adapt_selection_lines

    found = [record for runs in runs_dirs for record in read_adapt_records(runs)]
    if not found:
        raise FsxltError(f"{runs_dirs[0]}: no finished adapt records with a test score")
    records = filter_records(found, tasks=tasks, languages=langs, ks=ks, arms=arms)
    if not records:
        raise FsxltError(f"{len(found)} finished adapt record(s), none of the asked "
                         "--task / --lang / -k / --arm")
    table = selection_table(records, seed=seed, n_boot=n_boot)
    shown = table.assign(lr=[f"{lr:g}" if lr == lr else "-" for lr in table["lr"]])
    _write_table(shown, None, "adapt-selection")  # learning rates readable, not 0.000
    if out is None:
        return
    atomic_write_text(out / "adapt-selection.csv", table.to_csv(index=False))
    atomic_write_text(out / "adapt-selection.md",
                      selection_markdown(table, seed=seed, n_boot=n_boot))
    for (task, lang), rows in table.groupby(["task", "language"], sort=True):
        adapt_selection_lines(rows, f"{task} {lang}: test score by selection rule "
                              "(mean ± std over buckets)", out / f"{task}-{lang}-adapt-selection")
    typer.echo(f"wrote adapt-selection.csv, adapt-selection.md and plots to {out}")


@analyze_app.command("seeds-vs-buckets")
def seeds_vs_buckets_command(
    task: TaskOpt, lang: LangOpt,
    buckets: Annotated[Path, typer.Option(
        "--buckets", help="The bucket set directory (e.g. buckets/xnli/de/k1).")],
    start: Annotated[str, typer.Option("--from", help="Source-trained checkpoint dir.")],
    out: Annotated[Path, typer.Option(help="Write runs.csv, spread.csv and the plot here.")],
    data_dir: Annotated[Path | None, typer.Option(
        help="Directory with the task's {split}-{lang} files (dev, test).")] = None,
    dev: Annotated[Path | None, typer.Option(
        help="Target dev file (default: the set's dev-remaining.jsonl, else --data-dir).")
    ] = None,
    test: Annotated[Path | None, typer.Option(
        help="Target test file (default: --data-dir; none: dev scores only).")] = None,
    n_buckets: Annotated[int, typer.Option(help="Buckets 0..N-1 (fixed seed).")] = 40,
    n_seeds: Annotated[int, typer.Option(help="Seeds SEED..SEED+N-1 (fixed bucket).")] = 40,
    seed: Annotated[int | None, typer.Option(help="The fixed seed (default: task's).")] = None,
    bucket: Annotated[int, typer.Option(help="The fixed bucket's index.")] = 0,
    method: Annotated[str, typer.Option(help="Adapting method.")] = "full",
    lrs: Lrs = None,
    max_epochs: MaxEpochs = None,
    patience: Patience = None,
    device: Device = "auto",
) -> None:
    """Seeds versus buckets: spread of scores over buckets (one seed) and over seeds (one bucket).

    The protocol's ablation (docs/protocol.md#ablations). Runs n-buckets +
    n-seeds - 1 adaptations (40 + 40 - 1 by default; reduce --n-buckets/--n-seeds,
    --lr and --max-epochs for a quick look) and prints the max - min spread
    of each arm's dev and test scores.

    Example:

      fsxlt analyze seeds-vs-buckets --task xnli --lang de --buckets buckets/xnli/de/k1 \\
          --from ckpt/xnli-mbert --data-dir data/xnli --out analysis/seeds
    """
    _check_out(out)
    from fsxlt.analysis.plots import seeds_buckets_boxes
    from fsxlt.analysis.seeds import ablation_plan, seeds_vs_buckets, spread_table
    from fsxlt.cli.inputs import read_split
    from fsxlt.fileio import atomic_write_json
    from fsxlt.methods import get_method
    from fsxlt.models.model import quiet_transformers
    from fsxlt.training import AdaptEngine

    spec = get_task(task)
    spec.check_language(lang)
    get_method(method, spec.kind)
    from fsxlt.sampling.store import MANIFEST, read_set

    if not (buckets / MANIFEST).is_file():
        raise FsxltError(f"{buckets}: not a bucket set directory (fsxlt sample writes them)")
    _, items, remaining = read_set(buckets, verify=True)
    where = buckets
    fixed_seed = spec.training.seed if seed is None else seed
    ablation_plan([b.index for b in items], n_buckets=n_buckets, n_seeds=n_seeds,
                  fixed_seed=fixed_seed, fixed_bucket=bucket)  # fail before loading a model
    if dev is None and remaining is not None:
        dev_examples, dev_src = remaining, str(where / "dev-remaining.jsonl")
    else:
        dev_examples, dev_src = read_split(spec, lang, "dev", dev, data_dir)
    test_examples, test_src = (None, None)
    if test is not None or data_dir is not None:
        test_examples, test_src = read_split(spec, lang, "test", test, data_dir)
    quiet_transformers()
    engine = AdaptEngine.from_start(spec, lang, start, dev=dev_examples, test=test_examples,
                                    seed=fixed_seed, dev_source=dev_src, test_source=test_src,
                                    device=device)
    runs = seeds_vs_buckets(
        engine, items, n_buckets=n_buckets, n_seeds=n_seeds, fixed_seed=fixed_seed,
        fixed_bucket=bucket, method=method, lrs=lrs, max_epochs=max_epochs, patience=patience,
        on_run=lambda r: typer.echo(f"{r['arm']}: bucket {r['bucket']} seed {r['seed']} "
                                    f"dev {r['dev_score']:.2f}", err=True))
    spread = spread_table(runs)
    _write_table(spread, out, "spread")
    atomic_write_text(out / "runs.csv", runs.to_csv(index=False))
    atomic_write_json(out / "ablation.json", {
        "task": spec.name, "language": lang, "buckets": str(buckets), "start": start,
        "start_id": engine.start.info["id"], "method": method, "lrs": lrs,
        "fixed_seed": fixed_seed, "fixed_bucket": bucket, "n_buckets": n_buckets,
        "n_seeds": n_seeds, "max_epochs": max_epochs, "patience": patience,
        "dev": dev_src, "test": test_src})
    k = items[0].k
    seeds_buckets_boxes(runs, f"{spec.name} {lang} K={k}: {n_buckets} buckets vs. "
                        f"{n_seeds} seeds ({method})",
                        out / f"{spec.name}-{lang}-k{k}-seeds-vs-buckets")
    typer.echo(f"wrote runs, spreads and the plot to {out}")


@analyze_app.command("attention")
def attention_command(
    record: Annotated[Path, typer.Argument(help="An adapt run record (RUNS/.../<index>.json).")],
    out: Annotated[Path, typer.Option(help="Write attention-shift.csv and the plot here.")],
    start: Annotated[str | None, typer.Option(
        "--from", help="Starting checkpoint (default: the path in the record).")] = None,
    dev: Annotated[Path | None, typer.Option(
        help="Target dev file (default: the record's; checked by hash).")] = None,
    test: Annotated[Path | None, typer.Option(
        help="Target test file (default: the record's; checked by hash).")] = None,
    top: Annotated[int, typer.Option(help="Tokens listed per direction.")] = 15,
    min_occurrences: Annotated[int, typer.Option(
        help="Only tokens seen at least this often in changed examples.")] = 2,
    device: Annotated[str, typer.Option(help="cpu (exact reruns) or cuda.")] = "cpu",
) -> None:
    """Classification: shift of top-layer [CLS] attention on examples whose prediction changed.

    Re-runs the adapt run from its record (same start, bucket, method, seed and
    the winning learning rate; checked against the recorded dev score), then
    compares the zero-shot and adapted models' [CLS] attention (mean over heads)
    per wordpiece. Needs a record from fsxlt adapt or fsxlt sweep whose start,
    bucket, dev and test files are still where the record says (or pass them).

    Example:

      fsxlt analyze attention runs/xnli/de/k1/full/00.json --out analysis/attention
    """
    _check_out(out)
    from fsxlt.analysis.attention import attention_analysis, top_shifts
    from fsxlt.analysis.plots import attention_bars

    result = attention_analysis(record, start=start, dev=dev, test=test, device=device)
    typer.echo(f"{result.changed} of {result.total} test predictions changed")
    if not result.changed:
        raise FsxltError("no test prediction changed after adapting: no attention shift "
                         "to analyse")
    table = top_shifts(result.tokens, top, min_occurrences)
    _write_table(table, None, "attention-shift")
    atomic_write_text(out / "attention-shift.csv", result.tokens.to_csv(index=False))
    atomic_write_text(out / "attention-top.csv", table.to_csv(index=False))
    if not table.empty:
        attention_bars(table, f"[CLS] attention shift, {result.changed} changed predictions",
                       out / f"{result.run}-attention")
    typer.echo(f"wrote tables and plot to {out}")


@analyze_app.command("bucket-features")
def bucket_features_command(
    runs: Annotated[Path, typer.Argument(help="RUNS_DIR with the runs' records.")],
    arm: Annotated[str | None, typer.Option(
        help="Arm whose buckets to describe (default: full~random, else full).")] = None,
    english: Annotated[Path | None, typer.Option(
        help="English training file (default: the one the start was trained on).")] = None,
    start: Annotated[str | None, typer.Option(
        "--from", help="Source-trained checkpoint (default: the records' start).")] = None,
    buckets: Annotated[Path | None, typer.Option(
        help="Bucket store root, where each run's bucket is found by its hash (an imported "
             "arm's records name another machine's files; default: each record's path)."),
    ] = None,
    no_model: Annotated[bool, typer.Option(
        "--no-model", help="Leave out the features that need the model.")] = False,
    device: Device = "auto",
    out: Annotated[Path | None, typer.Option(
        help="Write bucket_features.csv, correlations.csv and the plot here.")] = None,
) -> None:
    """Which bucket features go with good scores: Spearman's rho over the random buckets.

    Per bucket: examples, mean length, label (entity-type) entropy, mentions,
    word overlap with the English training data, the source model's mean
    prediction entropy on it and its embedding distance to the dev set (not for
    extractive QA, whose buckets have no labels and whose model predicts spans).
    Per (task, language, K) the correlation with the test score; over all cells
    pooled, with the gain over zero-shot.

    Example:

      fsxlt analyze bucket-features runs/strategies --out analysis/bucket-features
    """
    _check_out(out)
    from fsxlt.analysis.bucket_features import correlations, feature_table, plot_features
    from fsxlt.models.model import quiet_transformers

    quiet_transformers()
    table = feature_table(runs, arm=arm, english=english, start=start, buckets=buckets,
                          device=None if device == "auto" else device, model=not no_model)
    typer.echo(f"arm {table.attrs['arm']}: {len(table)} buckets")
    _write_table(table, out, "bucket_features")
    typer.echo("")
    _write_table(correlations(table), out, "correlations")
    if out is not None:
        plot_features(table, out)
