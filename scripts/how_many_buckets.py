"""How many buckets a conclusion needs, measured on real runs (issue 74's results page).

For each runs directory: the variance shares per cell (``fsxlt analyze variance``, where
runs saved predictions), the minimum detectable difference at 10, 20 and 40 buckets
(``fsxlt analyze power``), and what ``stop_early`` would have saved: every comparison the
runs make (each cell's few-shot scores against its own zero-shot score, and, with
``--compare A B``, the two arms' paired differences) replayed in bucket order under the
rule (looks at ``--min-buckets``, then every ``--every``), with the conclusion at the
stop set beside the conclusion over every bucket (Wilcoxon, two-sided 5%, as
``fsxlt report --compare``). Finally the simulated coverage: studies of 40 buckets drawn
from each cell's own scores (a smoothed bootstrap), stopped by the width rule, and how
often the stopped interval, and the whole sequence, covers the cell's mean.

    python scripts/how_many_buckets.py RUNS [RUNS ...] --compare full fc --out DIR
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from fsxlt.analysis.power_plan import power_plan  # noqa: E402
from fsxlt.analysis.variance import variance_table  # noqa: E402
from fsxlt.report.compare import wilcoxon_p  # noqa: E402
from fsxlt.report.records import load_records  # noqa: E402
from fsxlt.report.sequential import confidence_sequence, decide  # noqa: E402
from fsxlt.report.tables import aggregate  # noqa: E402


def replay(values: np.ndarray, *, min_buckets: int, every: int) -> tuple[int, str]:
    """Where the decided rule stops a comparison's values (bucket order), and the sign it
    gives there (``+``, ``-`` or ``open`` when it ran every bucket undecided)."""
    n = len(values)
    looks = list(range(min_buckets, n + 1, every))
    if not looks or looks[-1] != n:
        looks.append(n)
    for at in looks:
        made = decide(values[:at], width=None, decided=True, min_buckets=min_buckets)
        if made.stop:
            return at, "+" if made.low > 0 else "-"
    return n, "open"


def full_conclusion(values: np.ndarray) -> str:
    p = wilcoxon_p(values)
    if not np.isfinite(p) or p >= 0.05:
        return "open"
    return "+" if values.mean() > 0 else "-"


def comparisons(records, compare: tuple[str, str] | None) -> list[dict]:
    scores = records.scores
    zero = {(r.task, r.language): 100 * r.test_score
            for r in records.zero_shot.itertuples(index=False)}
    found = []
    for (task, arm, lang, k), cell in scores.groupby(["task", "arm", "language", "k"]):
        if (task, lang) not in zero:
            continue
        values = 100 * cell.sort_values("bucket")["test_score"].to_numpy() - zero[(task, lang)]
        found.append({"what": f"{task}/{lang}/k{k}/{arm} - zero-shot", "values": values,
                      "runs_per_bucket": 1})
    if compare:
        a, b = compare
        for (task, lang, k), cell in scores.groupby(["task", "language", "k"]):
            one = cell[cell["arm"] == a].set_index("bucket")["test_score"]
            two = cell[cell["arm"] == b].set_index("bucket")["test_score"]
            shared = sorted(set(one.index) & set(two.index))
            if shared:
                found.append({"what": f"{task}/{lang}/k{k}: {a} - {b}", "runs_per_bucket": 2,
                              "values": 100 * (one[shared].to_numpy() - two[shared].to_numpy())})
    return found


def simulate(scores: np.ndarray, *, width: float, min_buckets: int, every: int,
             studies: int, rng: np.random.Generator) -> tuple[float, float, float]:
    """Coverage at the stop under the width rule, the sequence's coverage at every look,
    and the mean buckets run, over ``studies`` simulated studies of 40 buckets."""
    truth, sd = scores.mean(), scores.std()
    at_stop = every_look = 0
    used = []
    for _ in range(studies):
        study = rng.choice(scores, 40) + rng.normal(0, 0.2 * sd, 40)
        missed = False
        for n in range(min_buckets, 41):  # every look the rule could make
            low, high, problem = confidence_sequence(study[:n])
            missed |= not problem and not low <= truth <= high
        stopped = 40
        for n in range(min_buckets, 41, every):
            if decide(study[:n], width=width, decided=False, min_buckets=min_buckets).stop:
                stopped = n
                break
        low, high, _ = confidence_sequence(study[:stopped])
        at_stop += low <= truth <= high
        every_look += not missed
        used.append(stopped)
    return at_stop / studies, every_look / studies, float(np.mean(used))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("runs", nargs="+", type=Path)
    parser.add_argument("--compare", nargs=2, default=None)
    parser.add_argument("--min-buckets", type=int, default=10)
    parser.add_argument("--every", type=int, default=5)
    parser.add_argument("--width", type=float, default=2.0)
    parser.add_argument("--studies", type=int, default=300)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(2026)
    for runs in args.runs:
        name = runs.resolve().parent.name + "-" + runs.name
        variance = variance_table(runs, n_boot=1000, warn=print)
        variance.to_csv(args.out / f"{name}-variance.csv", index=False)
        power = power_plan(runs, counts=[10, 20, 40])
        power.to_csv(args.out / f"{name}-power.csv", index=False)
        if args.compare:
            paired = power_plan(runs, compare=tuple(args.compare), counts=[10, 20, 40],
                                simulate=1000)
            paired.to_csv(args.out / f"{name}-power-paired.csv", index=False)
        records = load_records(runs)  # read once: the comparisons, cells and coverage
        rows = []
        for found in comparisons(records, tuple(args.compare) if args.compare else None):
            values = found["values"]
            stop, sign = replay(values, min_buckets=args.min_buckets, every=args.every)
            full = full_conclusion(values)
            rows.append({"comparison": found["what"], "buckets": len(values),
                         "mean": values.mean(), "stopped_at": stop, "at_stop": sign,
                         "all_buckets": full,
                         "runs_saved": (len(values) - stop) * found["runs_per_bucket"]})
        stops = pd.DataFrame(rows)
        stops.to_csv(args.out / f"{name}-stopping.csv", index=False)
        cells = aggregate(records)
        coverage = []
        for (task, arm, lang, k), cell in records.scores.groupby(
                ["task", "arm", "language", "k"]):
            scores = 100 * cell["test_score"].to_numpy()
            if len(scores) < 5 or scores.std() < 1e-6:  # no spread beyond float noise
                continue
            stop_cov, seq_cov, used = simulate(scores, width=args.width,
                                               min_buckets=args.min_buckets, every=args.every,
                                               studies=args.studies, rng=rng)
            coverage.append({"cell": f"{task}/{lang}/k{k}/{arm}", "std": scores.std(ddof=1),
                             "coverage_at_stop": stop_cov, "coverage_every_look": seq_cov,
                             "mean_buckets": used})
        pd.DataFrame(coverage).to_csv(args.out / f"{name}-coverage.csv", index=False)
        print(f"{runs}: {len(cells)} cells; variance, power, stopping and coverage in "
              f"{args.out}")


if __name__ == "__main__":
    main()
