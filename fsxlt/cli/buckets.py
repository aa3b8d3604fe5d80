"""``fsxlt sample`` and ``fsxlt buckets import-published|import-fewclue|import-hf|export|check``."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Annotated

import typer

from fsxlt.cli.app import app
from fsxlt.cli.options import Reading, readings_by_task, task_default
from fsxlt.cli.progress import bar
from fsxlt.errors import FsxltError
from fsxlt.fileio import atomic_write_json, check_output_dir, check_output_file
from fsxlt.study.directories import BUCKETS, check_claim
from fsxlt.tasks import get_task

# The sampling modules are imported inside the commands, keeping `fsxlt --help` quick.

buckets_app = typer.Typer(help="Import published buckets and check any bucket set.",
                          no_args_is_help=True)
app.add_typer(buckets_app, name="buckets")

RELEASE_TASKS = ("xnli", "pawsx", "marc", "udpos", "panx")  # the tasks the study released
REPLACE_HELP = ("Replace a bucket set already in the store with different files (never "
                "deletes anything but a bucket set); without it such a set is refused.")


def _check_store(out: Path) -> None:
    """Refuse, before any work, an --out that cannot be a bucket store."""
    check_output_dir(out, "bucket store")
    check_claim(out, BUCKETS, "--out")


def _status(bucket_set) -> str:
    """`` (unchanged)`` / `` (replaced)`` after a set's line; nothing for a new set."""
    written = bucket_set.written
    return "" if written is None or written.status == "new" else f" ({written.status})"


def _written(bucket_sets, out: Path) -> str:
    """Say on stderr which sets were replaced; return the summary line of a write."""
    from fsxlt.sampling.store import DEV_ADDED, NEW, REPLACED, UNCHANGED

    done = {s.written.path: s.written for s in bucket_sets if s.written is not None}
    for written in done.values():
        if written.status == REPLACED:
            typer.echo(f"replaced {written.path} ({written.detail})", err=True)
    counts = Counter(written.status for written in done.values())
    parts = ", ".join(f"{counts[status]} {status}" for status in (NEW, UNCHANGED, DEV_ADDED,
                                                                    REPLACED)
                      if counts[status])
    plural = "" if len(done) == 1 else "s"
    return f"{len(done)} bucket set{plural} under {out}: {parts or 'none'}"


@app.command("sample")
def sample_command(
    task: Annotated[str, typer.Option("--task", "-t", help="Task name or task YAML path.")],
    lang: Annotated[list[str], typer.Option("--lang", "-l",
                                            help="Target language (repeatable).")],
    k: Annotated[list[int] | None, typer.Option(
        "--k", "-k", help="Shots per label (repeatable); default: the task's K values.")] = None,
    out: Annotated[Path, typer.Option("--out", "-o", help="Bucket store root.")] = Path("buckets"),
    data: Annotated[Path | None, typer.Option(
        help="The data file to sample from (one language).")] = None,
    data_dir: Annotated[Path | None, typer.Option(
        help="Directory with files named by the task's pattern, e.g. train-de.tsv.")] = None,
    split: Annotated[str | None, typer.Option(
        help="Split to sample from; default: the task's (dev for XNLI/PAWS-X).")] = None,
    n_buckets: Annotated[int | None, typer.Option(
        help="Buckets per K. " + task_default("n_buckets", "sampling"))] = None,
    seed: Annotated[int | None, typer.Option(help="Sampling seed (default: task config).")] = None,
    replace: Annotated[bool, typer.Option("--replace", help=REPLACE_HELP)] = False,
    reading: Reading = None,
) -> None:
    """Draw the few-shot buckets of a task for target languages.

    Classification tasks get N-way K-shot buckets (exactly K per label, the
    buckets pairwise disjoint); tagging tasks get Minimum-Including buckets.
    Without --data/--data-dir the data is loaded from the Hugging Face hub.
    A set already in OUT with the same files is left as it is (unchanged);
    one with other files (another seed, other data) is refused, naming what
    differs, unless --replace.

    Examples:

      fsxlt sample --task panx --lang de --data-dir data/panx --out buckets

      fsxlt sample --task xnli --lang de --lang zh -k 1 -k 8 --data-dir data/xnli

      fsxlt sample --task xnli --lang hi --data XNLI-1.0/xnli.dev.tsv --reading study
    """
    from fsxlt.data.readings import parse_reading
    from fsxlt.sampling.api import sample as sample_api

    spec = get_task(task)
    chosen = parse_reading(reading, spec) if reading else None
    _check_store(out)
    ks = k or list(spec.sampling.k_values)
    sets = sample_api(spec, lang, ks, out, data=data, data_dir=data_dir, split=split,
                      n_buckets=n_buckets, seed=seed, replace=replace,
                      progress=bar("loading", "lang"),
                      **({"reading": chosen} if chosen is not None else {}))
    unit = "questions" if spec.is_qa else "pairs" if spec.is_generation else "examples"
    for s in sets:
        sizes = [len(b) for b in s.buckets]
        line = (f"{s.task}/{s.language}/k{s.k}: {len(s.buckets)} buckets, "
                f"{sum(sizes) / len(sizes):.2f} {unit} per bucket")
        if s.missing_labels:
            line += f"; labels absent from the data, left out: {', '.join(s.missing_labels)}"
        if s.dev_remaining is not None:
            line += f"; {len(s.dev_remaining)} dev {unit} remain for model selection"
        if s.test is not None and (spec.is_qa or spec.is_generation):
            line += f"; {len(s.test)} held-out test {unit}"
        typer.echo(line + _status(s))
    typer.echo(_written(sets, out))


@app.command("select")
def select_command(
    task: Annotated[str, typer.Option("--task", "-t", help="Task name or task YAML path.")],
    lang: Annotated[str, typer.Option("--lang", "-l", help="Target language.")],
    strategy: Annotated[list[str], typer.Option(
        "--strategy", "-s", help="A strategy's name (fsxlt strategies lists the built-in and "
        "installed ones) or package.module:Class (repeatable).")],
    k: Annotated[list[int] | None, typer.Option(
        "--k", "-k", help="Shots per label (repeatable); default: the task's K values.")] = None,
    out: Annotated[Path, typer.Option(
        "--out", "-o", help="Root: OUT/<strategy>/<task>/<lang>/k<K>.")] = Path(
        "buckets/strategies"),
    start: Annotated[str | None, typer.Option(
        "--from", help="Source-trained checkpoint (model-based strategies).")] = None,
    data: Annotated[Path | None, typer.Option(
        help="The file to draw the pools from (one language).")] = None,
    data_dir: Annotated[Path | None, typer.Option(
        help="Directory with files named by the task's pattern, e.g. train-de.tsv.")] = None,
    n_pools: Annotated[int, typer.Option(
        help="Candidate pools, one bucket each.")] = 40,
    pool_size: Annotated[int, typer.Option(help="Candidates per pool.")] = 500,
    seed: Annotated[int, typer.Option(help="Seed of the pools and of random choices.")] = 0,
    device: Annotated[str, typer.Option(help="auto, cpu, cuda, ...")] = "auto",
    replace: Annotated[bool, typer.Option("--replace", help=REPLACE_HELP)] = False,
) -> None:
    """Build bucket sets by shot-selection strategies, one bucket per candidate pool.

    Pool i holds --pool-size examples drawn (seeded) from the split the task
    samples from; every strategy picks from the same pools, random included,
    so a strategy is judged against random buckets that saw the same
    candidates (fsxlt report --strategies). Buckets keep the task's
    guarantees: exactly K per label, or both Minimum-Including criteria.
    Model-based strategies (diverse, uncertain, representative; fsxlt
    strategies marks them) run the source-trained model once over the pools.
    A set already in OUT with the same files is left as it is (unchanged);
    one with other files is refused, naming what differs, unless --replace.

    Examples:

    \b
      fsxlt select --task panx --lang zh --data-dir data/panx --from ckpt/panx-mbert \\
          -s random -s diverse -s uncertain -s representative -s entity-rich -k 1 -k 2
      fsxlt buckets check buckets/strategies/diverse --source data/panx/train-zh.tsv
    """
    from fsxlt.sampling.select import select
    from fsxlt.training.starts import pool_signals

    spec = get_task(task)
    _check_store(out)
    ks = k or list(spec.sampling.k_values)
    sets = select(spec, lang, ks, strategy, out, data=data, data_dir=data_dir, start=start,
                  n_pools=n_pools, pool_size=pool_size, seed=seed,
                  device=None if device == "auto" else device, replace=replace,
                  progress=bar("selecting", "strategy"), signals_from=pool_signals)
    for name, bucket_sets in sets.items():
        for s in bucket_sets:
            sizes = [len(b) for b in s.buckets]
            typer.echo(f"{name}: {s.task}/{s.language}/k{s.k}: {len(s.buckets)} buckets, "
                       f"{sum(sizes) / len(sizes):.2f} examples per bucket{_status(s)}")
    typer.echo(_written([s for v in sets.values() for s in v], out))


@buckets_app.command("import-published")
def import_published_command(
    src: Annotated[Path, typer.Argument(help="Root of the published buckets.")],
    out: Annotated[Path, typer.Option("--out", "-o", help="Bucket store root.")] = Path("buckets"),
    task: Annotated[list[str] | None, typer.Option(
        "--task", "-t", help="Only these tasks (repeatable).")] = None,
    lang: Annotated[list[str] | None, typer.Option(
        "--lang", "-l", help="Only these languages (repeatable; codes, e.g. de).")] = None,
    replace: Annotated[bool, typer.Option("--replace", help=REPLACE_HELP)] = False,
    data_dir: Annotated[str | None, typer.Option(
        "--data-dir", "-d", help="The tasks' dev files ({task} is the task name, e.g. "
        "data/{task}): XNLI's and PAWS-X's sets get their remaining dev set from them.")] = None,
    max_unlocated: Annotated[int, typer.Option(
        "--max-unlocated", help="Accept a set with up to this many bucket examples that "
        "are not found in its dev file (recorded in its manifest); more refuse the import.",
    )] = 0,
    reading: Reading = None,
    bucket_text: Annotated[str | None, typer.Option(
        "--bucket-text", help="Where the release's text and the dev file's differ under "
        "mBERT's pre-tokenizer (XNLI hi/th raw against the release's tokenized text; "
        "PAWS-X quoted): dev-file puts the buckets in the dev file's text, release keeps "
        "both. Without it such a set is refused.")] = None,
) -> None:
    """Convert the buckets published with the original study into fsxlt bucket sets.

    Reads <task>/<K>-shots/<language>/<i>-th/{sampled.json|train.tsv};
    language names become ISO codes; buckets keep their published numbers;
    stray files are ignored. A bucket that is an empty file (the study's panx
    jv and my folders hold 12) is left out of its set and named in one line;
    one that cannot be read otherwise is left out, listed, and makes the exit
    status 1. Either is recorded in its set's manifest (missing_buckets).
    A set already in OUT with the same files is left as it is (unchanged);
    one with other files is refused, naming what differs, unless --replace.

    XNLI and PAWS-X select models on the dev examples in none of a K's buckets,
    which the release does not hold: with --data-dir each of their sets gets
    that remaining dev set, every bucket example found in dev-<lang>.tsv by its
    text (whitespace and control characters ignored, docs/sampling.md). A set
    already imported without one gets it added; its buckets stay as they are.
    The dev file is read by --reading (recorded in the set; its runs read their
    test files the same way), and a set whose release text differs from the dev
    file's under mBERT's pre-tokenizer is refused unless --bucket-text.

    Examples:

      fsxlt buckets import-published published_buckets/ --out buckets/published

      fsxlt buckets import-published published_buckets/ -o buckets -d 'data/{task}'

      fsxlt buckets import-published published_buckets/ -o buckets -d 'data/{task}' \
          --reading study      # XNLI 1.0's xnli.dev.tsv tokenized; PAWS-X unquoted
    """
    from fsxlt.sampling.published import import_published

    readings = readings_by_task(reading, [name for name in RELEASE_TASKS
                                          if not task or name in task]) if reading else None
    if bucket_text is not None and bucket_text not in ("release", "dev-file"):
        raise FsxltError(f"--bucket-text is release or dev-file, got {bucket_text!r}")
    _check_store(out)
    summary = import_published(src, out, tasks=task, languages=lang, replace=replace,
                               data_dir=data_dir, readings=readings, bucket_text=bucket_text,
                               max_unlocated=max_unlocated, progress=bar("importing", "set"))
    per_task = Counter(s.task for s in summary.sets)
    for name, count in sorted(per_task.items()):
        langs = sorted({s.language for s in summary.sets if s.task == name})
        statuses = "".join(sorted({_status(s) for s in summary.sets if s.task == name}))
        typer.echo(f"{name}: {count} sets ({', '.join(langs)}){statuses}")
    for skipped in summary.skipped:
        typer.echo(f"ignored {skipped}")
    empty = [m for m in summary.missing if m.endswith(": file is empty")]
    broken = [m for m in summary.missing if m not in empty]
    for missing in broken:
        typer.echo(f"not imported: {missing}", err=True)
    filters = "".join(f" --task {name}" for name in task or []) + "".join(
        f" --lang {code}" for code in lang or [])
    _say_dev_sets(summary, src, out, filters)
    typer.echo(f"{_written(summary.sets, out)}; run 'fsxlt buckets check {out}' to verify them")
    if empty:  # a property of the study's release (panx jv, my), not an error
        names = ", ".join(m.removesuffix(": file is empty") for m in empty)
        typer.echo(f"left out {len(empty)} published buckets that are empty files in the "
                   f"release, each recorded in its set's missing_buckets: {names}")
    if broken:
        typer.echo(f"{len(broken)} published buckets could not be read (listed above); "
                   "their sets hold the others and record the gap", err=True)
        raise typer.Exit(1)


def _say_dev_sets(summary, src: Path, out: Path, filters: str = "") -> None:
    """The remaining dev sets an import made, the dev lines that match alike, the accepted
    unlocated examples, and, in one line, the sets left without one and the cure."""
    with_dev = [s for s in summary.sets if s.dev_provenance is not None]
    if with_dev:
        located = sum(s.dev_provenance["located"] for s in with_dev)
        unlocated = sum(len(s.dev_provenance["unlocated"]) for s in with_dev)
        sizes = [len(s.dev_remaining) for s in with_dev]
        typer.echo(f"remaining dev sets: {len(with_dev)} sets, {located} bucket examples "
                   f"located in their dev files, {unlocated} not; {min(sizes)}-{max(sizes)} "
                   "dev examples left per set")
    for path, groups in summary.alike.items():
        shown = "; ".join(" = ".join(group) for group in groups[:3])
        typer.echo(f"note: {path}: {len(groups)} groups of lines that differ as written "
                   f"match alike ({shown}); a bucket holding one leaves all out", err=True)
    for name, examples in summary.unlocated.items():
        typer.echo(f"{name}: {len(examples)} bucket examples not located, accepted "
                   f"(--max-unlocated): {'; '.join(examples[:3])}", err=True)
    if summary.no_dev:
        pairs = sorted({f"{s.task}/{s.language}" for s in summary.no_dev})
        shown = ", ".join(pairs[:6]) + (f" and {len(pairs) - 6} more" if len(pairs) > 6 else "")
        lacking = ""
        if summary.no_dev_file:
            files = summary.no_dev_file
            lacking = (f"; --data-dir lacks their dev files ({', '.join(files[:4])}"
                       + (f" and {len(files) - 4} more" if len(files) > 4 else "") + ")")
        plural = "s" if len(pairs) != 1 else ""
        typer.echo(f"{len(summary.no_dev)} sets of {len(pairs)} task/language pair{plural} "
                   f"({shown}) "
                   f"have no remaining dev set, which their runs select models on{lacking}; "
                   f"add it: fsxlt buckets import-published {src} --out {out}{filters} "
                   "--data-dir DIR (DIR holding dev-<lang>.tsv; 'data/{task}' for several "
                   "tasks)")


@buckets_app.command("import-fewclue")
def import_fewclue_command(
    src: Annotated[Path, typer.Argument(help="FewCLUE's datasets: one folder per task.")],
    out: Annotated[Path, typer.Option("--out", "-o", help="Bucket store root.")] = Path("buckets"),
    task: Annotated[list[str] | None, typer.Option(
        "--task", "-t", help="Only these FewCLUE tasks (repeatable).")] = None,
    replace: Annotated[bool, typer.Option("--replace", help=REPLACE_HELP)] = False,
    reading: Annotated[list[str] | None, typer.Option(
        "--reading", help="input=baseline: CSL's and CLUEWSC's input strings as FewCLUE's "
        "fine-tuning baseline gives them (keywords joined by a space, then the abstract; "
        "_noun_ and [pronoun]); recorded in their sets (docs/fewclue.md).")] = None,
) -> None:
    """Turn FewCLUE's fixed splits into bucket sets, one per task.

    Split i (train_i.json) becomes bucket i with dev_i.json as its own dev
    set; train_few_all/dev_few_all become bucket `all`; test_public.json is
    kept with the set as its test set. Sets are filed under
    <task>/zh/k<N>, N = the examples of train_0. A label that is not the
    task's is an error naming file and line; only test examples without a
    label (no label key, null, or OCNLI's "-") are left out and counted. A
    task folder that is missing, is a file or holds a malformed file is
    reported and skipped (exit status 1); when every task fails, nothing is
    written (exit status 2). OUT must not be SRC or lie inside it.

    A set already in OUT with the same files is left as it is (unchanged);
    one with other files is refused, naming what differs, unless --replace.

    Example:

      fsxlt buckets import-fewclue FewCLUE/datasets --out buckets/fewclue

      fsxlt buckets import-fewclue FewCLUE/datasets --out buckets/fewclue-baseline \
          --task csl --task cluewsc --reading input=baseline
    """
    from fsxlt.sampling.fewclue import check_out_apart, import_fewclue
    from fsxlt.tasks.fewclue import fewclue_tasks

    readings = readings_by_task(reading, [name for name in (task or fewclue_tasks())
                                          if name in fewclue_tasks()]) if reading else None
    check_out_apart(src, out)
    _check_store(out)
    result = import_fewclue(src, out, tasks=task, replace=replace, readings=readings,
                            progress=bar("importing", "task"))
    for s in result.sets:
        sizes = " ".join(f"{name}:{len(b)}" for name, b in zip(s.names, s.buckets, strict=True))
        typer.echo(f"{s.task}/zh/k{s.k}: splits {sizes}; test {len(s.test)}{_status(s)}")
    for line in result.unlabelled:
        typer.echo(line, err=True)
    for line in result.skipped_tasks:
        typer.echo(f"skipped {line}", err=True)
    typer.echo(f"{_written(result.sets, out)}; run 'fsxlt buckets check {out}' to verify them")
    if result.skipped_tasks:
        raise typer.Exit(1)


def _print_label_counts(report, shown: int = 6) -> None:
    """Per-label counts of each bucket of a set of fixed splits (no K to demand)."""
    for name, counts in report.label_counts.items():
        items = sorted(counts.items(), key=lambda item: (-item[1], item[0]))
        text = ", ".join(f"{label} {n}" for label, n in items[:shown])
        if len(items) > shown:
            rest = [n for _label, n in items[shown:]]
            text += f", {len(rest)} more labels {min(rest)}-{max(rest)} each"
        typer.echo(f"    {name:>4}  {sum(counts.values())} examples: {text}")
    for note in report.notes:
        typer.echo(f"    note: {note}")


def _print_report(report, max_rows: int) -> None:
    """One summary line per set, then up to ``max_rows`` violations (a SetReport)."""
    name = f"{report.task}/{report.language}/k{report.k}"
    head = (f"{name:<18} {report.sampler:<18} {report.n_buckets:>3} buckets  "
            f"{report.mean_size:6.2f} per bucket  ")
    gap = ""
    if report.missing_buckets:
        numbers = " ".join(f"{entry['index']:02d}" for entry in report.missing_buckets)
        gap = f"  ({len(report.missing_buckets)} published buckets missing: {numbers})"
    if report.ok:
        typer.echo(head + "ok" + gap)
        _print_label_counts(report)
        return
    kinds = ", ".join(f"{kind} in {n}" for kind, n in sorted(report.kinds().items()))
    typer.echo(head + f"VIOLATIONS: {kinds}" + gap)
    _print_label_counts(report)
    rows = sorted(report.violations, key=lambda v: (-1 if v.bucket is None else v.bucket))
    for v in rows[:max_rows]:
        where = "set" if v.bucket is None else f"{v.bucket:02d}"
        typer.echo(f"    {where:>4}  {v.kind:<14} {v.detail}")
    if len(rows) > max_rows:
        typer.echo(f"    ... {len(rows) - max_rows} more (--max-rows to see them)")


@buckets_app.command("check")
def check_command(
    directory: Annotated[Path, typer.Argument(help="Bucket store root or one bucket set dir.")],
    source: Annotated[Path | None, typer.Option(
        help="The data file the buckets were drawn from (one task and language).")] = None,
    max_rows: Annotated[int, typer.Option(help="Violations listed per set.")] = 5,
    json_out: Annotated[Path | None, typer.Option(
        "--json", help="Also write the full report as JSON.")] = None,
) -> None:
    """Verify every bucket set below DIRECTORY; exit status 1 if anything is violated.

    Published buckets that could not be imported are shown as a gap beside
    their set.

    Classification: exactly K per label, pairwise disjoint buckets, remaining
    dev disjoint from them. Tagging: every label at least K times and no
    sentence removable (Minimum-Including). With --source: the source hash and
    every example against the data.

    Examples:

      fsxlt buckets check buckets/

      fsxlt buckets check buckets/panx/de/k1 --source data/panx/train-de.tsv
    """
    from fsxlt.sampling.check import check_store

    if json_out is not None:
        check_output_file(json_out, "--json file")
    reports = check_store(directory, source)
    for report in reports:
        _print_report(report, max_rows)
    bad = [r for r in reports if not r.ok]
    totals: Counter[str] = Counter()
    for r in bad:
        totals.update(r.kinds())
    if json_out is not None:
        atomic_write_json(json_out, [r.to_dict() for r in reports])
    summary = f"{len(reports)} bucket sets checked: {len(reports) - len(bad)} ok"
    gaps = sum(len(r.missing_buckets) for r in reports)
    if gaps:
        typer.echo(f"{gaps} published buckets are missing from their sets (unreadable when "
                   "imported; see each manifest's missing_buckets)")
    if bad:
        kinds = ", ".join(f"{kind} in {n} buckets" for kind, n in sorted(totals.items()))
        typer.echo(f"{summary}, {len(bad)} with violations ({kinds})")
        raise typer.Exit(1)
    typer.echo(summary)


@buckets_app.command("export")
def export_command(
    store: Annotated[Path, typer.Argument(help="Bucket store root, or one bucket set dir.")],
    out: Annotated[Path, typer.Argument(help="The folder to write (new or empty).")],
    format_: Annotated[str, typer.Option(
        "--format", help="hf: a Hugging Face dataset folder (parquet and a dataset card); "
        "lm-eval: lm-evaluation-harness tasks, one per bucket (XNLI, PAWS-X).")] = "hf",
    preset: Annotated[str | None, typer.Option(
        "--preset", help="--format lm-eval: the prompt protocol, lm-eval (lm-eval's own "
        "task of each language; the only one).")] = None,
    data_dir: Annotated[Path | None, typer.Option(
        "--data-dir", help="--format lm-eval: the task's files (a {task} in it is "
        "filled per set: data/{task}); each set is tested on its language's test file "
        "there.")] = None,
    seed: Annotated[int, typer.Option(
        "--seed", help="--format lm-eval: the demonstration order's seed, as fsxlt icl "
        "--seed (default 0).")] = 0,
) -> None:
    """Write every bucket set below STORE as a Hugging Face dataset folder, or as
    lm-evaluation-harness tasks.

    --format hf: one config per (task, language, K), named <task>-<lang>-k<K> from the
    set's manifest; one split per bucket (bucket_00 ...), plus dev_remaining, and a
    FewCLUE or XQuAD set's test and bucket_NN_dev, each a parquet file named with its
    content's hash; features typed per task kind (labels as ClassLabel); a README.md
    dataset card with the sampling settings, the source's sha256, every split's hash
    and the fsxlt version; each set's fsxlt manifest beside its parquet files. Ready to
    upload (hf upload ORG/NAME OUT --repo-type dataset); fsxlt buckets import-hf reads
    it back, hashes and all.

    --format lm-eval --preset lm-eval: per bucket a task fsxlt_<task>_<lang>_k<K>_bNN on
    lm-eval's own task of the language, its few-shot examples exactly the bucket (in
    fsxlt icl's order), its test set the language's test file under --data-dir
    (test-<lang>.tsv); a group fsxlt_<task>_<lang>_k<K> per set. Sets of other tasks, and
    languages without a test file there, are left out and named. XNLI's and PAWS-X's
    labelled test sets are on the hub (xnli, paws-x); where you have only the dev sets the
    buckets were drawn from, score on the part of dev no bucket holds (fsxlt sample
    keeps it as each set's remaining dev examples). Either folder is written whole or
    not at all.

    Examples:

      fsxlt buckets export buckets/ shared-buckets --format hf

      fsxlt buckets export buckets/xnli/de/k4 tasks --format lm-eval --preset lm-eval \\
          --data-dir data/xnli
      lm_eval --model hf --model_args pretrained=MODEL --include_path tasks \\
          --tasks fsxlt_xnli_de_k4 --log_samples --output_path results
    """
    check_output_dir(out, "export folder")
    if format_ == "lm-eval":
        _export_lm_eval(store, out, preset, data_dir, seed)
        return
    if format_ != "hf":
        raise FsxltError(f"--format must be hf or lm-eval, got {format_!r}")
    if preset is not None or data_dir is not None:
        raise FsxltError("--preset and --data-dir are for --format lm-eval")
    from fsxlt.sampling.hf_dataset import export_hf

    exported = export_hf(store, out, progress=bar("exporting", "set"))
    n = sum(one.n_examples for one in exported)
    typer.echo(f"{len(exported)} bucket sets ({n} examples) written to {out} as a Hugging "
               f"Face dataset; load one with datasets.load_dataset('{out}', "
               f"'{exported[0].config}')")


def _export_lm_eval(store: Path, out: Path, preset: str | None, data_dir: Path | None,
                    seed: int) -> None:
    """``--format lm-eval``: the sets as lm-eval tasks, each tested on its test file."""
    from fsxlt.icl.lm_eval_tasks import export_lm_eval

    if preset != "lm-eval":
        raise FsxltError(f"--format lm-eval needs --preset lm-eval (the prompt protocol "
                         f"its tasks use), got {preset!r}")
    if data_dir is None:
        raise FsxltError("--format lm-eval needs --data-dir: the test file each set is "
                         "scored on")

    def test_file(task: str, language: str) -> Path | None:
        folder = Path(str(data_dir).replace("{task}", task))
        path = get_task(task).data.locate(folder, "test", language)
        return path if path.is_file() else None

    skipped: list[str] = []
    exported = export_lm_eval(store, out, test_file, seed=seed,
                              progress=bar("exporting", "set"), skipped=skipped)
    if skipped:
        typer.echo(f"left out: {'; '.join(skipped)}")
    n = sum(len(one.tasks) for one in exported)
    typer.echo(f"{n} lm-eval tasks in {len(exported)} groups written to {out}; run them "
               f"with lm_eval --include_path {out} --tasks {exported[0].group}")


@buckets_app.command("import-hf")
def import_hf_command(
    source: Annotated[str, typer.Argument(
        help="A dataset folder fsxlt buckets export wrote, or a hub dataset id.")],
    out: Annotated[Path, typer.Option("--out", "-o", help="Bucket store root.")] = Path("buckets"),
    replace: Annotated[bool, typer.Option("--replace", help=REPLACE_HELP)] = False,
) -> None:
    """Read a bucket dataset (fsxlt buckets export --format hf) back into a bucket store.

    Every config the dataset card lists becomes the bucket set it was, at the place its
    own manifest gives (task, language, K, strategy) under --out: the same examples in
    the same order and the provenance of its manifest, so every bucket keeps its hash
    and runs done on the original store are already done on this one. Every split is
    verified by content (buckets, remaining dev, test, each bucket's dev set); a split
    that no longer gives its manifest's hash, a bad manifest or a data file outside its
    config is refused in one line, nothing written. A hub id is downloaded (or read
    from the local cache offline).

    Examples:

      fsxlt buckets import-hf shared-buckets --out buckets

      fsxlt buckets import-hf ORG/fsxlt-buckets --out buckets
    """
    from fsxlt.sampling.hf_dataset import import_hf

    _check_store(out)
    sets = import_hf(source, out, replace=replace, progress=bar("importing", "set"))
    typer.echo(f"{_written(sets, out)}; run 'fsxlt buckets check {out}' to verify them")
