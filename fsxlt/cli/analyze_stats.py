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
