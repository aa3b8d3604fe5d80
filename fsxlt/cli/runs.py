"""``fsxlt runs export`` and ``fsxlt runs import-hf``: a study's results as a dataset, and back."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from fsxlt.cli.app import app
from fsxlt.errors import FsxltError
from fsxlt.fileio import check_output_dir

# the options every import of another study shares
ImportOut = Annotated[Path, typer.Option("--out", "-o", help="The runs directory to write to.")]
ArmPrefix = Annotated[str | None, typer.Option(
    "--arm-prefix", help="Imported arms are named PREFIX.ARM (default: the name of the "
    "folder or hub dataset given).")]
Replace = Annotated[bool, typer.Option(
    "--replace", help="Replace records of other bytes at the same place.")]

runs_app = typer.Typer(help="A study's per-bucket results as a Hugging Face dataset, and back.",
                       no_args_is_help=True)
app.add_typer(runs_app, name="runs")


@runs_app.command("export")
def export_command(
    runs: Annotated[Path, typer.Argument(help="The runs directory (RUNS_DIR) to export.")],
    out: Annotated[Path, typer.Argument(help="The folder to write (new or empty).")],
    format_: Annotated[str, typer.Option(
        "--format", help="hf: a Hugging Face dataset folder; eee: Every Eval Ever records "
        "(schema 0.3.0).")] = "hf",
    config: Annotated[Path | None, typer.Option(
        "--config", help="hf: the sweep config the study ran, shown on the card.")] = None,
    name: Annotated[str | None, typer.Option(
        "--name", help="hf: the study's name (default: OUT's folder name), the card's title "
        "and the arm prefix its comparison example suggests.")] = None,
    organization: Annotated[str, typer.Option(
        "--organization", help="eee: who ran the study (source_organization_name).")
    ] = "unknown",
    relationship: Annotated[str, typer.Option(
        "--relationship", help="eee: how they stand to the model: first_party, third_party, "
        "collaborative or other.")] = "third_party",
    buckets_dataset: Annotated[str | None, typer.Option(
        "--buckets-dataset", help="eee: the hub dataset the buckets were published as "
        "(fsxlt buckets export --format hf, then hf upload); else the local files are "
        "named with their sha256.")] = None,
    no_samples: Annotated[bool, typer.Option(
        "--no-samples", help="eee: the aggregate records alone, no samples files.")] = False,
) -> None:
    """Write a study's finished run records as a Hugging Face dataset folder.

    Config records: one row per finished record (task, language, K, bucket index and
    sha256, the cell's buckets' hash, arm, method, regime, start, run hash, lr and epoch
    chosen, dev and test scores and metric, versions, and the record itself with its
    sha256). Config predictions, where runs saved them: one row per line of each
    predictions file (id, gold, predicted, the options' log-likelihoods for ICL). A
    README.md card says what the study is, the buckets it ran on, a summary per cell
    and how to compare against it. Error records and records imported from another
    study are left out. datasets.load_dataset reads the folder offline; hf upload
    publishes it as it is; fsxlt runs import-hf reads it back, every record verified.

    --format eee writes Every Eval Ever records (docs/sharing.md): per cell (task,
    language, K, arm) an aggregate record under OUT/data/<task>/<developer>/<model>/,
    its score the mean over the cell's shot buckets, its uncertainty the spread over
    them, one result per bucket with its hash and record; and a samples file, one row
    per bucket and test example, where the runs saved predictions. fsxlt runs
    import-eee reads them back.

    Examples:

      fsxlt runs export runs my-study --config study.yaml
      hf upload ORG/my-study my-study --repo-type dataset

      fsxlt runs export runs my-eee --format eee --organization "My Lab"
    """
    from fsxlt.report.hf_results import export_results

    if format_ not in ("hf", "eee"):
        raise FsxltError(f"--format must be hf or eee, got {format_!r}")
    given = {"--config": config is not None, "--name": name is not None,
             "--organization": organization != "unknown",
             "--relationship": relationship != "third_party",
             "--buckets-dataset": buckets_dataset is not None, "--no-samples": no_samples}
    other = [flag for flag, on in given.items() if on and (
        flag in ("--config", "--name")) == (format_ == "eee")]
    if other:
        raise FsxltError(f"{other[0]} is an option of --format "
                         f"{'hf' if format_ == 'eee' else 'eee'}, not {format_}")
    check_output_dir(out, "export folder")
    if format_ == "eee":
        _export_eee(runs, out, organization, relationship, buckets_dataset, no_samples)
        return
    if config is not None and not config.is_file():
        raise FsxltError(f"--config {config}: no such file")
    done = export_results(runs, out, config=config, name=name)
    for rel in done.unreadable:
        typer.echo(f"warning: {runs / rel}: unreadable record (not JSON), not exported",
                   err=True)
    left = f"; left out {len(done.left_out)} error or imported records" if done.left_out \
        else ""
    left += f"; {len(done.unreadable)} unreadable (named above)" if done.unreadable else ""
    typer.echo(f"{len(done.records)} records and {done.n_predictions} prediction rows "
               f"written to {out}{left}; load them with datasets.load_dataset('{out}', "
               "'records', split='records')")


def _export_eee(runs: Path, out: Path, organization: str, relationship: str,
                buckets_dataset: str | None, no_samples: bool) -> None:
    from fsxlt.report.eee import export_eee

    done = export_eee(runs, out, organization=organization, relationship=relationship,
                      buckets_dataset=buckets_dataset, samples=not no_samples)
    for rel in done.unreadable:
        typer.echo(f"warning: {runs / rel}: unreadable record (not JSON), not exported",
                   err=True)
    if done.without_samples:
        typer.echo(f"note: {len(done.without_samples)} cells without saved predictions "
                   f"({', '.join(done.without_samples[:3])}"
                   f"{', ...' if len(done.without_samples) > 3 else ''}): aggregate records "
                   "only (--save-predictions keeps them)", err=True)
    left = f"; left out {len(done.left_out)} error, imported or K=0 records" \
        if done.left_out else ""
    typer.echo(f"{len(done.files)} Every Eval Ever records ({done.cells} cells) and "
               f"{done.samples} samples rows written to {out / 'data'}{left}")


@runs_app.command("import-hf")
def import_hf_command(
    source: Annotated[str, typer.Argument(
        help="A folder fsxlt runs export wrote, or a hub dataset id.")],
    out: ImportOut,
    arm_prefix: ArmPrefix = None,
    replace: Replace = False,
) -> None:
    """Bring another study's records into a runs directory, byte for byte.

    Every row is verified before anything is written: the record's bytes against the
    dataset's manifest, every column against the record it describes, predictions line
    by line. Each record goes where its own facts place it, under the arm PREFIX.ARM, and
    is listed in RUNS_DIR/fsxlt_imports.json with the dataset and its revision; a record
    already there with the same bytes is already done, another one is refused unless
    --replace. fsxlt report shows the imported arms; --compare pairs them with yours by
    bucket hash.

    Examples:

      fsxlt runs import-hf their-study --out runs --arm-prefix theirs
      fsxlt report runs --compare full theirs.full

      fsxlt runs import-hf ORG/their-study --out runs
    """
    from fsxlt.report.hf_results import import_results

    check_output_dir(out, "runs directory")
    _imported(import_results(source, out, prefix=arm_prefix, replace=replace), out)


def _imported(done: list, out: Path) -> None:
    """What an import wrote, in one line (and what --replace removed, a line each)."""
    new = sum(one.state == "new" for one in done)
    arms = sorted({one.path.parts[3] for one in done if len(one.path.parts) == 5})
    for one in done:
        for removed in one.removed:
            typer.echo(f"removed {removed}: the replaced record's, not {one.path.name}'s",
                       err=True)
    typer.echo(f"{new} records imported into {out} ({len(done) - new} already done) as arms "
               f"{', '.join(arms)}")


@runs_app.command("import-eee")
def import_eee_command(
    source: Annotated[str, typer.Argument(
        help="A folder of Every Eval Ever records (fsxlt runs export --format eee wrote), or "
        "a hub dataset id.")],
    out: ImportOut,
    arm_prefix: ArmPrefix = None,
    replace: Replace = False,
) -> None:
    """Bring a study shared as Every Eval Ever records into a runs directory as its arms.

    Only records that carry fsxlt's bucket fields are taken (the cell's bucket set hash,
    each bucket's hash and its fsxlt record); any other EEE record is refused in one
    line, since nothing in it says which shots its score came from. Every record is
    checked before anything is written: each bucket's record against its sha256 and
    the cell's and bucket's fields, the bucket set's hash against its buckets', the
    cell's score against their mean, a samples file present against its checksum.
    Each record is written byte for byte under the arm PREFIX.ARM and listed in
    RUNS_DIR/fsxlt_imports.json; fsxlt report shows the arms and --compare pairs them
    with yours by bucket hash.

    Examples:

      fsxlt runs import-eee their-eee --out runs --arm-prefix theirs
      fsxlt report runs --compare full theirs.full
    """
    from fsxlt.report.eee_import import import_eee

    check_output_dir(out, "runs directory")
    _imported(import_eee(source, out, prefix=arm_prefix, replace=replace), out)


@runs_app.command("log")
def log_command(
    runs: Annotated[Path, typer.Argument(help="The runs directory whose records to send.")],
    to: Annotated[str, typer.Option("--to", help="mlflow, wandb or tensorboard.")],
    uri: Annotated[str | None, typer.Option(
        "--uri", help="MLflow's tracking URI (e.g. sqlite:///mlflow.db), the folder for wandb "
        "and tensorboard.")] = None,
    project: Annotated[str | None, typer.Option(
        "--project", help="The MLflow experiment or W&B project (default fsxlt).")] = None,
) -> None:
    """Send a study's finished records to a tracker, one tracker run per record.

    Each run is named by the record's coordinates (task/lang/kK/arm/bucket), tagged with
    them and keyed by the record's identity hash: a record sent before with the same bytes
    is not sent again, one of the same identity with other bytes replaces its run
    (records imported from another study are not sent). The
    parameters are the record's identity; the dev curve is a step metric, the test score
    a metric, the record and its predictions artifacts. What fsxlt sweep, adapt, icl and
    lm-adapt --log-to send as they run is the same.

    Examples:

      fsxlt runs log runs --to mlflow --uri sqlite:///mlflow.db --project my-study
      fsxlt runs log runs --to tensorboard --uri tb && tensorboard --logdir tb
      WANDB_MODE=offline fsxlt runs log runs --to wandb --uri wandb-runs
    """
    from fsxlt.report.trackers import tracker_logger
    from fsxlt.study.runs import record_files

    if not runs.is_dir():
        raise FsxltError(f"{runs}: no such runs directory")
    from fsxlt.cli.progress import bar
    from fsxlt.report.hf_results import zero_shot_files
    from fsxlt.study.imports import read_imports

    imported = read_imports(runs)  # another study's records are theirs to send
    paths = [path for path in sorted(record_files(runs) + zero_shot_files(runs))
             if path.relative_to(runs).as_posix() not in imported]
    if not paths:
        raise FsxltError(f"{runs}: no run records (<task>/<lang>/k<K>/<arm>/<bucket>.json) "
                         "under it; give the runs directory of a sweep or of fsxlt adapt")
    logger = tracker_logger(to, uri, project, lambda line: typer.echo(line, err=True))

    logger.log_all(bar("logging", "record")(paths))
    if logger.failed:
        raise typer.Exit(1)
    for path in logger.unreadable:
        typer.echo(f"warning: {path}: unreadable record (not JSON), not sent", err=True)
    left = len(paths) - sum(logger.counts.values()) - len(logger.unreadable)
    typer.echo(f"{logger.counts['sent']} records sent to {to}, {logger.counts['unchanged']} "
               f"sent before with the same bytes; {left} error or unfinished records left "
               f"out" + (f"; {len(logger.unreadable)} unreadable (named above)"
                         if logger.unreadable else ""))
