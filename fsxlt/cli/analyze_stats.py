"""``fsxlt analyze power`` (and the other statistics of a study's design): how many buckets
a conclusion needs, from the runs a study already has."""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Annotated

import typer

from fsxlt.cli.analyze import _check_out, _write_table, analyze_app
from fsxlt.errors import FsxltError


def _warn(line: str) -> None:
    typer.echo(line, err=True)


@analyze_app.command("power")
def power_command(
    runs: Annotated[Path, typer.Argument(help="RUNS_DIR of a pilot or a finished study.")],
    compare: Annotated[tuple[str, str] | None, typer.Option(
        "--compare", help="METHOD_A METHOD_B: plan the paired comparison of two arms (from "
        "their per-bucket differences); default: each arm's cells, unpaired.")] = None,
    arm: Annotated[list[str] | None, typer.Option(
        "--arm", help="Only these arms' cells (repeatable; default: all, or the config's "
        "methods).")] = None,
    config: Annotated[Path | None, typer.Option(
        "--config", help="A sweep config: plan its cells, at its n_buckets too.")] = None,
    buckets: Annotated[list[int] | None, typer.Option(
        "--buckets", help="Bucket counts to plan for (repeatable; default 5 10 20 40).")] = None,
    difference: Annotated[float | None, typer.Option(
        "--difference", help="A difference (points) to detect: the buckets it needs.")] = None,
    alpha: Annotated[float, typer.Option("--alpha", help="Two-sided level.")] = 0.05,
    power: Annotated[float, typer.Option("--power", help="Wanted power.")] = 0.8,
    simulate: Annotated[int, typer.Option(
        "--simulate", min=0, help="With --compare: also simulate N studies per cell from its "
        "own differences (Wilcoxon and t-test power at each MDD).")] = 0,
    seed: Annotated[int, typer.Option("--seed", help="Simulation seed.")] = 0,
    out: Annotated[Path | None, typer.Option(help="Also write power.csv here.")] = None,
) -> None:
    """The smallest difference 5, 10, 20 and 40 buckets detect, per cell or comparison.

    From any runs directory (a pilot, a finished study, an imported arm): per
    (task, language, K), the minimum detectable difference (MDD, points) at each
    bucket count, 5% two-sided and 80% power (paired t-test on the per-bucket
    differences with --compare; else two arms of N buckets, unpaired: an upper
    bound), the buckets a --difference needs, and, with --config, the sweep's own
    cells at its n_buckets. Marks the counts at which the report's Wilcoxon test
    cannot reject at all.

    Example:

    \b
      fsxlt analyze power pilot-runs
      fsxlt analyze power pilot-runs --compare full lora --difference 1.0
      fsxlt analyze power pilot-runs --compare full lora --simulate 2000
      fsxlt analyze power pilot-runs --config configs/sweeps/study.yaml --arm full
    """
    if simulate and compare is None:
        raise FsxltError("--simulate needs --compare: it resamples paired differences")
    if config is not None and not config.is_file():
        raise FsxltError(f"{config}: sweep config not found")
    _check_out(out)
    from fsxlt.analysis.power_plan import power_note, power_plan
    from fsxlt.report.power import BUCKET_COUNTS

    counts = list(buckets) if buckets else list(BUCKET_COUNTS)
    table = power_plan(runs, compare=compare, arms=arm or (), config=config, counts=counts,
                       difference=difference, alpha=alpha, power=power, simulate=simulate,
                       seed=seed, warn=_warn)
    counts = sorted({int(c.split("_")[-1]) for c in table.columns if c.startswith("mdd_")})
    typer.echo(textwrap.fill(power_note(compare=compare is not None, counts=counts,
                                        alpha=alpha, power=power, simulate=simulate), 100))
    _write_table(table, out, "power")


@analyze_app.command("variance")
def variance_command(
    runs: Annotated[Path | None, typer.Argument(
        help="RUNS_DIR (runs with --save-predictions give the test set's share).")] = None,
    arm: Annotated[list[str] | None, typer.Option(
        "--arm", help="Only these arms (repeatable; default: all).")] = None,
    seeds: Annotated[Path | None, typer.Option(
        "--seeds", help="The folder (or runs.csv) of fsxlt analyze seeds-vs-buckets: the "
        "seed's share beside the bucket's.")] = None,
    n_boot: Annotated[int, typer.Option(
        "--bootstrap", min=0, help="Resamples for the shares' intervals (0: none).")] = 1000,
    seed: Annotated[int, typer.Option("--seed", help="Bootstrap seed.")] = 0,
    out: Annotated[Path | None, typer.Option(
        help="Also write variance.csv (and seeds.csv) here.")] = None,
) -> None:
    """Where a cell's spread comes from: the buckets drawn, the test set, the seed.

    Per (task, arm, language, K): the variance components of its scores (points
    squared) from the runs' saved per-example predictions (a two-way random-effects
    ANOVA over buckets and test examples, the same as statsmodels' REML mixed model
    on a balanced table), the share of one run's variance and of the cell mean's
    that the buckets and the finite test set each cause, with two-way bootstrap
    intervals, and the mean's standard error three ways (from the components;
    clustered by bucket; clustered by bucket and example). --seeds adds the seed's
    share from a seeds-vs-buckets ablation.

    Example:

    \b
      fsxlt sweep study.yaml --save-predictions
      fsxlt analyze variance runs --out variance
      fsxlt analyze variance runs --arm full --seeds ablation
    """
    if runs is None and seeds is None:
        raise FsxltError("give RUNS_DIR, --seeds or both")
    if runs is not None and not runs.is_dir():
        raise FsxltError(f"{runs}: no such runs directory")
    _check_out(out)
    from fsxlt.analysis.variance import seeds_table, variance_table

    if runs is not None:
        typer.echo(textwrap.fill(
            "var_*: variance components (points squared); run_*_share: of one run's score's "
            "variance, mean_*_share: of the cell mean's (bucket: which shots were drawn; "
            "test: the finite test set); *_low/_high: 95% two-way bootstrap intervals; "
            "se_*: the cell mean's standard error from the components, clustered by bucket, "
            "clustered by bucket and example.", 100))
        table = variance_table(runs, arms=tuple(arm or ()), n_boot=n_boot, seed=seed,
                               warn=_warn)
        _write_table(table, out, "variance")
    if seeds is not None:
        _write_table(seeds_table(seeds, n_boot=max(n_boot, 1), seed=seed), out, "seeds")
