"""The report's plots, PNG and PDF, one set per (task, arm).

- ``<task>_<arm>_distribution``: test scores over buckets, a box per
  language, one panel per K;
- ``<task>_<arm>_vs_k``: mean test score versus K (K=0: zero-shot) per
  language with a band of ±1 std over buckets (same ddof as the tables);
- ``<task>_<arm>_curves``: dev score per epoch of the selected learning
  rate, averaged over the buckets whose run reached that epoch (early
  stopping ends runs at different epochs), one panel per K.

Files carry no timestamps or version strings (matplotlib's ``Software``,
``Creator``, ``Producer`` and ``CreationDate`` metadata are left out), so the
same records give byte-identical files.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from fsxlt.report.records import Records
from fsxlt.report.tables import arm_label

PNG_META = {"Software": None}
PDF_META = {"Creator": None, "Producer": None, "CreationDate": None}


def _save(fig, out: Path, stem: str) -> list[Path]:
    import matplotlib.pyplot as plt

    out.mkdir(parents=True, exist_ok=True)
    paths = [out / f"{stem}.png", out / f"{stem}.pdf"]
    fig.savefig(paths[0], format="png", dpi=100, metadata=PNG_META)
    fig.savefig(paths[1], format="pdf", metadata=PDF_META)
    plt.close(fig)
    return paths


def _panels(n: int, title: str):
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, n, figsize=(3.2 * n + 1.0, 3.4), squeeze=False, sharey=True)
    fig.suptitle(title, fontsize=10)
    return fig, list(axes[0])


def make_plots(records: Records, cells: pd.DataFrame, out: str | Path) -> list[Path]:
    """Write every plot under ``out``; return the files written (sorted)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    plt.rcParams.update({"svg.hashsalt": "fsxlt", "pdf.compression": 6})
    out = Path(out)
    written: list[Path] = []
    scores, curves = records.scores, records.curves
    for (task, arm), sub in scores.groupby(["task", "arm"], sort=True):
        name = f"{task}_{arm}"
        label = f"{task}: {arm_label(arm)}"
        ks = sorted(set(sub["k"]))
        langs = sorted(set(sub["language"]))
        fig, axes = _panels(len(ks), f"{label}, test score over buckets")
        for ax, k in zip(axes, ks, strict=True):
            data = [100 * sub.loc[(sub["k"] == k) & (sub["language"] == lang),
                                  "test_score"].to_numpy() for lang in langs]
            ax.boxplot(data, tick_labels=langs)
            ax.set_title(f"K={k}", fontsize=9)
            ax.grid(axis="y", alpha=0.3)
        axes[0].set_ylabel("test score (points)")
        fig.tight_layout()
        written += _save(fig, out, f"{name}_distribution")

        part = cells[(cells["task"] == task) & (cells["arm"] == arm)]
        fig, axes = _panels(1, f"{label}, score vs K (±1 std over buckets)")
        ax = axes[0]
        for lang in langs:
            line = part[part["language"] == lang].sort_values("k")
            mean = line["mean"].to_numpy()
            std = line["std"].fillna(0.0).to_numpy()
            ax.plot(line["k"], mean, marker="o", label=lang)
            ax.fill_between(line["k"], mean - std, mean + std, alpha=0.2)
        ax.set_xlabel("K (0: zero-shot)")
        ax.set_ylabel("test score (points)")
        ax.set_xticks(sorted(set(part["k"])))
        ax.legend(fontsize=7)
        ax.grid(alpha=0.3)
        fig.tight_layout()
        written += _save(fig, out, f"{name}_vs_k")

        cur = curves[(curves["task"] == task) & (curves["arm"] == arm)]
        if not cur.empty:
            fig, axes = _panels(len(ks), f"{label}, dev score per epoch (mean over buckets)")
            for ax, k in zip(axes, ks, strict=True):
                for lang in langs:
                    line = cur[(cur["k"] == k) & (cur["language"] == lang)].groupby(
                        "epoch", sort=True)["dev_score"].mean()
                    ax.plot(line.index, 100 * line.to_numpy(), label=lang)
                ax.set_title(f"K={k}", fontsize=9)
                ax.set_xlabel("epoch")
                ax.grid(alpha=0.3)
            axes[0].set_ylabel("dev score (points)")
            axes[-1].legend(fontsize=7)
            fig.tight_layout()
            written += _save(fig, out, f"{name}_curves")
    return sorted(written)


def paired_difference_plots(paired: pd.DataFrame, result: pd.DataFrame, arm_a: str,
                            arm_b: str, out: str | Path) -> list[Path]:
    """One figure per compared cell (task, language, K): each shared bucket's difference
    A - B (test, points), buckets in their order, with the zero line and the mean
    difference's bootstrap interval: whether one arm beats the other bucket by bucket.
    Files ``compare_<A>_vs_<B>_<task>_<lang>_k<K>.png`` (and ``.pdf``)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    plt.rcParams.update({"svg.hashsalt": "fsxlt", "pdf.compression": 6})
    written: list[Path] = []
    for row in result.itertuples(index=False):
        cell = paired[(paired["task"] == row.task) & (paired["language"] == row.language)
                      & (paired["k"] == row.k)].sort_values("bucket")
        diffs = 100.0 * (cell["test_score_a"].to_numpy() - cell["test_score_b"].to_numpy())
        fig, axes = _panels(1, f"{row.task}/{row.language} K={row.k}: {arm_a} minus {arm_b}, "
                               "per bucket")
        ax = axes[0]
        positions = list(range(len(diffs)))
        colours = ["tab:green" if d > 0 else "tab:red" if d < 0 else "tab:gray" for d in diffs]
        ax.bar(positions, diffs, color=colours)
        ax.axhline(0.0, color="black", linewidth=0.8)
        if not row.ci_problem:
            ax.axhspan(row.ci_low, row.ci_high, color="tab:blue", alpha=0.15)
        ax.axhline(row.mean_diff, color="tab:blue", linewidth=1.0)
        # said above the bars, not in a legend that would hide some of them
        band = (f"no 95% CI ({row.ci_problem})" if row.ci_problem else
                f"95% CI [{row.ci_low:+.2f}, {row.ci_high:+.2f}] (band)")
        ax.set_title(f"mean {row.mean_diff:+.2f} (line), {band}", fontsize=8)
        ax.set_xticks(positions)
        ax.set_xticklabels([f"{int(b):02d}" for b in cell["bucket"]], fontsize=7)
        ax.set_xlabel("bucket")
        ax.set_ylabel("difference (test, points)")
        ax.grid(axis="y", alpha=0.3)
        fig.tight_layout()
        written += _save(fig, Path(out), f"compare_{arm_a}_vs_{arm_b}_{row.task}_"
                                         f"{row.language}_k{row.k}")
    return sorted(written)
