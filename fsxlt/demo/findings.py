"""The demo's summary: its cells (mean and spread per task, language and K), the three
expected behaviours it checks (:func:`findings`) and the printed text.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from fsxlt.demo.stages import STAGES, Layout


def summary_cells(layout: Layout) -> list[dict[str, Any]]:
    """Per (task, language, K) of the full fine-tuning arm: n, mean and std in points."""
    from fsxlt.report import aggregate, load_records

    cells = aggregate(load_records(layout.runs))
    cells = cells[cells["arm"] == "full"]
    rows = []
    for row in cells.itertuples(index=False):
        std = None if row.std != row.std else round(float(row.std), 2)  # NaN: one value
        rows.append({"task": row.task, "language": row.language, "k": int(row.k),
                     "n": int(row.n), "mean": round(float(row.mean), 2), "std": std})
    return rows


def _by_cell(cells: Sequence[Mapping[str, Any]]) -> dict[tuple[str, str, int], Mapping[str, Any]]:
    return {(c["task"], c["language"], c["k"]): c for c in cells}


def _few_beats_zero(task: str, ks: Sequence[int], langs: list[str], by: dict,
                    overlap: dict[str, float]) -> dict[str, Any]:
    low = min(langs, key=lambda code: overlap[code])
    few = [by[(task, low, k)]["mean"] for k in ks if (task, low, k) in by]
    zero = by.get((task, low, 0), {}).get("mean")
    gain = None if zero is None or not few else sum(few) / len(few) - zero
    return {"task": task, "behaviour": "few-shot beats zero-shot",
            "holds": gain is not None and gain > 0,
            "detail": f"{low}: no scores" if gain is None else
            f"{low}: mean over K {gain:+.1f} points"}


def _less_spread(task: str, ks: Sequence[int], langs: list[str], by: dict) -> dict[str, Any]:
    first, top = min(ks), max(ks)
    stds = [(by[(task, lang, first)]["std"], by[(task, lang, top)]["std"]) for lang in langs
            if (task, lang, first) in by and (task, lang, top) in by]
    stds = [(a, b) for a, b in stds if a is not None and b is not None]
    smaller = sum(1 for a, b in stds if b < a)
    return {"task": task, "behaviour": "more shots, less spread",
            "holds": bool(stds) and smaller > len(stds) / 2,
            "detail": f"std at K={top} below K={first} for {smaller}/{len(stds)} languages"}


def _overlap_orders(task: str, langs: list[str], by: dict, info: dict) -> dict[str, Any]:
    groups: dict[str, list[tuple[float, str, float]]] = {}
    for lang in langs:
        if (task, lang, 0) in by:
            groups.setdefault(info[lang]["order"], []).append(
                (info[lang]["overlap"], lang, by[(task, lang, 0)]["mean"]))
    chains = [sorted(g, reverse=True) for g in groups.values() if len(g) > 1]
    holds = bool(chains) and all(a[2] >= b[2] for chain in chains
                                 for a, b in zip(chain, chain[1:], strict=False))
    detail = "; ".join(", ".join(f"{lang} {zero:.1f}" for _, lang, zero in chain)
                       for chain in chains) or "no two targets share a word order"
    return {"task": task, "behaviour": "lower overlap, lower zero-shot", "holds": holds,
            "detail": f"zero-shot by falling overlap: {detail}"}


def findings(cells: Sequence[Mapping[str, Any]], languages: Sequence[Mapping[str, Any]],
             tasks: Sequence[tuple[str, Sequence[int]]]) -> list[dict[str, Any]]:
    """Three behaviours FS-XLT should show, checked on this run's numbers, per task.

    - ``few-shot beats zero-shot``: on the lowest-overlap target, the mean
      over K of the K-shot means is above the zero-shot score;
    - ``more shots, less spread``: for most targets, the std over buckets at
      the largest K is below the std at K=1;
    - ``lower overlap, lower zero-shot``: among targets with the same word
      order, a lower overlap never gives a higher zero-shot score.

    What: a list of ``{task, behaviour, holds, detail}``. Why: the demo says
    in its summary whether the run shows what FS-XLT studies report, rather
    than leaving the reader to compare numbers.
    """
    by = _by_cell(cells)
    info = {lang["code"]: lang for lang in languages}
    overlap = {code: float(lang["overlap"]) for code, lang in info.items()}
    out = []
    for task, ks in tasks:
        langs = sorted({c["language"] for c in cells if c["task"] == task})
        if langs:
            out += [_few_beats_zero(task, ks, langs, by, overlap),
                    _less_spread(task, ks, langs, by),
                    _overlap_orders(task, langs, by, info)]
    return out


def summary_text(summary: Mapping[str, Any]) -> str:
    """The short summary the command prints: where things are, a mini-table, the findings."""
    by = _by_cell(summary["cells"])
    info = {lang["code"]: lang for lang in summary["languages"]}
    seconds = summary["stage_seconds"]
    lines = [f"fsxlt demo: done in {summary['wall_time_s']:.0f}s "
             f"({', '.join(f'{k} {seconds[k]:.0f}s' for k in STAGES)})",
             f"report: {summary['report']}  (tables, cells.csv, plots/)",
             f"runs:   {summary['runs']}  ({summary['n_runs']} adapt runs, "
             f"{summary['n_failed']} failed)", ""]
    for task, ks in summary["tasks"]:
        lines.append(f"{task}: test score, zero-shot (K=0) and mean ± std over "
                     f"{summary['n_buckets']} buckets")
        header = f"  {'language':9} {'overlap':>7} {'order':5} {'K=0':>6}" + "".join(
            f" {'K=' + str(k):>12}" for k in ks)
        lines.append(header)
        for lang in summary["target_languages"]:
            zero = by.get((task, lang, 0))
            row = f"  {lang:9} {info[lang]['overlap']:>7.2f} {info[lang]['order']:5} " + \
                (f"{zero['mean']:>6.1f}" if zero else f"{'-':>6}")
            for k in ks:
                cell = by.get((task, lang, k))
                text = "-" if cell is None else f"{cell['mean']:.1f}" + (
                    "" if cell["std"] is None else f" ± {cell['std']:.1f}")
                row += f" {text:>12}"
            lines.append(row)
        lines.append("")
    lines.append("what the numbers show:")
    for item in summary["findings"]:
        mark = "yes" if item["holds"] else "NO "
        lines.append(f"  [{mark}] {item['task']}: {item['behaviour']} ({item['detail']})")
    strategies = summary.get("strategies")
    if strategies and strategies["judged"]:
        lines += ["", f"which shots to label: {strategies['task']} {strategies['language']} "
                  f"K={strategies['k']}, {strategies['n_pools']} pools of "
                  f"{strategies['pool_size']}, against random buckets from the same pools"]
        for row in strategies["judged"]:
            lines.append(f"  {row['strategy']:15} {row['mean']:6.1f} vs {row['random_mean']:.1f}"
                         f"  diff {row['diff']:+.1f} [{row['ci'][0]:+.1f}, {row['ci'][1]:+.1f}]"
                         f"  P(beats random) {row['p_beat']:.2f}")
    return "\n".join(lines) + "\n"
