"""Figures for the analyses: PNG and PDF, titled, labelled, readable in print."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402


def save_figure(fig: plt.Figure, out_stem: Path) -> list[Path]:
    """Write ``out_stem.png`` and ``out_stem.pdf`` and close the figure."""
    out_stem.parent.mkdir(parents=True, exist_ok=True)
    paths = []
    for suffix in (".png", ".pdf"):
        path = out_stem.with_suffix(suffix)
        fig.savefig(path, dpi=200, bbox_inches="tight", metadata=None if suffix == ".png"
                    else {"CreationDate": None})
        paths.append(path)
    plt.close(fig)
    return paths


def gain_scatter(gains: pd.DataFrame, predictor: str, label: str, title: str,
                 out_stem: Path) -> list[Path]:
    """Per-language gain against a predictor, each point labelled with its language."""
    fig, ax = plt.subplots(figsize=(4.5, 3.4))
    ax.scatter(gains[predictor], gains["gain"], color="tab:blue")
    for _, row in gains.iterrows():
        ax.annotate(row["language"], (row[predictor], row["gain"]), fontsize=9,
                    xytext=(3, 3), textcoords="offset points")
    ax.set_xlabel(label)
    ax.set_ylabel("FS-XLT gain over zero-shot (points)")
    ax.set_title(title, fontsize=10)
    ax.grid(alpha=0.3)
    return save_figure(fig, out_stem)


def _annotate(ax: plt.Axes, values: pd.DataFrame, fmt: str) -> None:
    """Write each cell's value into a heatmap (only for matrices small enough to read)."""
    if max(values.shape) > 12:
        return
    for i in range(values.shape[0]):
        for j in range(values.shape[1]):
            ax.text(j, i, format(values.iat[i, j], fmt), ha="center", va="center", fontsize=7)


def _heatmap(ax: plt.Axes, values: pd.DataFrame, title: str, xlabel: str, ylabel: str,
             cmap: str, fmt: str, centered: bool = False) -> None:
    limit = float(abs(values.to_numpy()).max()) or 1.0
    kwargs = {"vmin": -limit, "vmax": limit} if centered else {"vmin": 0}
    image = ax.imshow(values.to_numpy(dtype=float), cmap=cmap, aspect="auto", **kwargs)
    ax.set_xticks(range(values.shape[1]), [str(c) for c in values.columns], rotation=90,
                  fontsize=8)
    ax.set_yticks(range(values.shape[0]), [str(r) for r in values.index], fontsize=8)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title, fontsize=10)
    ax.figure.colorbar(image, ax=ax, fraction=0.046, pad=0.04)
    _annotate(ax, values, fmt)


def confusion_heatmaps(zero_shot: pd.DataFrame, adapted: pd.DataFrame,
                       difference: pd.DataFrame, title: str, out_stem: Path,
                       normalized: bool = False) -> list[Path]:
    """Zero-shot, adapted and difference confusion matrices side by side, labelled."""
    size = max(3.2, 0.38 * len(zero_shot) + 1.6)
    fig, axes = plt.subplots(1, 3, figsize=(3 * size + 1.5, size))
    fmt = ".2f" if normalized else ".0f"
    unit = "share of gold" if normalized else "count"
    _heatmap(axes[0], zero_shot, f"zero-shot ({unit})", "predicted label", "gold label",
             "Blues", fmt)
    _heatmap(axes[1], adapted, f"adapted ({unit})", "predicted label", "gold label",
             "Blues", fmt)
    _heatmap(axes[2], difference, "adapted − zero-shot", "predicted label", "gold label",
             "RdBu_r", ".2f" if normalized else ".1f", centered=True)
    fig.suptitle(title, fontsize=11)
    fig.tight_layout()
    return save_figure(fig, out_stem)


def jaccard_heatmap(values: pd.DataFrame, title: str, out_stem: Path) -> list[Path]:
    """Jaccard(words of bucket i, words improved by the run on bucket j)."""
    size = max(3.5, 0.22 * max(values.shape) + 2.0)
    fig, ax = plt.subplots(figsize=(size + 1.0, size))
    _heatmap(ax, values, title, "adapted on bucket j", "words of bucket i", "viridis", ".2f")
    return save_figure(fig, out_stem)


def _label_bar_axes(ax, xlabel: str, ylabel: str, title: str) -> None:
    """Axis labels, title, a two-column legend below the axes, horizontal grid lines."""
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title, fontsize=10)
    ax.legend(fontsize=8, frameon=False, loc="upper center", bbox_to_anchor=(0.5, -0.22),
              ncol=2)
    ax.grid(axis="y", alpha=0.3)


def improved_bars(counts: pd.DataFrame, title: str, out_stem: Path) -> list[Path]:
    """Per bucket, improved predictions on words in the bucket versus not (stacked)."""
    fig, ax = plt.subplots(figsize=(max(4.0, 0.25 * len(counts) + 2.0), 3.4))
    positions = range(len(counts))
    ax.bar(positions, counts["in_bucket"], color="tab:orange", label="word occurs in the bucket")
    ax.bar(positions, counts["not_in_bucket"], bottom=counts["in_bucket"], color="tab:blue",
           label="word not in the bucket")
    ax.set_xticks(list(positions), [str(b) for b in counts["bucket"]],
                  fontsize=8, rotation=90 if len(counts) > 12 else 0)
    _label_bar_axes(ax, "bucket", "improved test words (occurrences)", title)
    return save_figure(fig, out_stem)


def selection_bars(runs: pd.DataFrame, title: str, out_stem: Path) -> list[Path]:
    """Per language: English-dev-selected vs. oracle zero-shot (mean over runs, min-max bars)."""
    stats = runs.groupby("language", sort=True)[["english_dev_selected", "oracle"]]
    mean, low, high = stats.mean(), stats.min(), stats.max()
    fig, ax = plt.subplots(figsize=(max(4.0, 0.9 * len(mean) + 2.0), 3.4))
    width = 0.38
    for offset, column, label, color in ((-width / 2, "english_dev_selected",
                                          "selected by English dev", "tab:blue"),
                                         (width / 2, "oracle", "selected by target dev (oracle)",
                                          "tab:orange")):
        x = [i + offset for i in range(len(mean))]
        errors = [mean[column] - low[column], high[column] - mean[column]]
        ax.bar(x, mean[column], width, yerr=errors, capsize=3, color=color, label=label)
    ax.set_xticks(range(len(mean)), list(mean.index))
    _label_bar_axes(ax, "target language", "zero-shot test score (points)", title)
    return save_figure(fig, out_stem)


def seeds_buckets_boxes(runs: pd.DataFrame, title: str, out_stem: Path) -> list[Path]:
    """Dev and test score distributions over buckets (fixed seed) and over seeds (fixed bucket)."""
    columns = [c for c in ("dev_score", "test_score") if runs[c].notna().any()]
    fig, axes = plt.subplots(1, len(columns), figsize=(3.6 * len(columns), 3.4), squeeze=False)
    labels = {"buckets": "buckets\n(fixed seed)", "seeds": "seeds\n(fixed bucket)"}
    for ax, column in zip(axes[0], columns, strict=True):
        arms = [arm for arm in ("buckets", "seeds") if (runs["arm"] == arm).any()]
        values = [runs.loc[runs["arm"] == arm, column].astype(float) for arm in arms]
        ax.boxplot(values, widths=0.5, showfliers=False)
        for position, series in enumerate(values, start=1):
            jitter = [position + 0.08 * ((i % 5) - 2) for i in range(len(series))]
            ax.scatter(jitter, series, s=10, color="tab:blue", alpha=0.7, zorder=3)
        ax.set_xticks(range(1, len(arms) + 1), [labels[a] for a in arms])
        ax.set_ylabel(f"{column.removesuffix('_score')} score (points)")
        ax.set_xlabel("what varies")
        ax.grid(axis="y", alpha=0.3)
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    return save_figure(fig, out_stem)


def attention_bars(top: pd.DataFrame, title: str, out_stem: Path) -> list[Path]:
    """Horizontal bars: tokens with the largest gain and loss of [CLS] attention."""
    ordered = top.sort_values("mean_shift")
    fig, ax = plt.subplots(figsize=(5.0, max(2.5, 0.24 * len(ordered) + 1.2)))
    colors = ["tab:red" if v < 0 else "tab:green" for v in ordered["mean_shift"]]
    ax.barh(range(len(ordered)), ordered["mean_shift"], color=colors)
    ax.set_yticks(range(len(ordered)),
                  [f"{t} (n={n})" for t, n in zip(ordered["token"], ordered["occurrences"],
                                                  strict=True)], fontsize=8)
    ax.axvline(0, color="black", linewidth=0.8)
    ax.set_xlabel("mean shift of top-layer [CLS] attention (adapted − zero-shot)")
    ax.set_ylabel("wordpiece")
    ax.set_title(title, fontsize=10)
    ax.grid(axis="x", alpha=0.3)
    return save_figure(fig, out_stem)


def adapt_selection_lines(table: pd.DataFrame, title: str, out_stem: Path) -> list[Path]:
    """One language's selection rules when adapting: test mean (± std over buckets) per K,
    one colour per rule, one line per candidate (a rule's learning rates differ in line
    style), one panel per arm, in the table's order."""
    arms = list(dict.fromkeys(table["arm"]))
    ks = sorted(table["k"].unique())
    fig, axes = plt.subplots(1, len(arms), figsize=(max(4.2, 0.6 * len(ks) + 3.0) * len(arms),
                                                     3.6), squeeze=False, sharey=True)
    names = list(dict.fromkeys(table["candidate"]))
    rule_of = dict(zip(table["candidate"], table["rule"], strict=True))
    rules = list(dict.fromkeys(rule_of[name] for name in names))
    colors = plt.get_cmap("tab10")
    shapes = [("-", "o"), ("--", "s"), (":", "^"), ("-.", "D")]  # per lr within a rule
    shape_of = {name: shapes[[n for n in names if rule_of[n] == rule_of[name]].index(name)
                             % len(shapes)] for name in names}
    spread = 0.3 / max(len(names) - 1, 1)
    for ax, arm in zip(axes[0], arms, strict=True):
        rows = table[table["arm"] == arm]
        for i, name in enumerate(names):
            line = rows[rows["candidate"] == name].sort_values("k")
            if line.empty:
                continue
            x = [ks.index(k) + (i - (len(names) - 1) / 2) * spread for k in line["k"]]
            style, marker = shape_of[name]
            ax.errorbar(x, line["test_mean"], yerr=line["test_std"].fillna(0), marker=marker,
                        markersize=4, capsize=3, linewidth=1.2, linestyle=style,
                        color=colors(rules.index(rule_of[name]) % 10), label=name)
        ax.set_xticks(range(len(ks)), [str(k) for k in ks])
        ax.set_title(arm, fontsize=9)
        ax.set_xlabel("K")
        ax.grid(axis="y", alpha=0.3)
    axes[0][0].set_ylabel("test score (points)")
    handles, labels = axes[0][0].get_legend_handles_labels()
    for ax in axes[0][1:]:
        more = ax.get_legend_handles_labels()
        for handle, label in zip(*more, strict=True):
            if label not in labels:
                handles.append(handle)
                labels.append(label)
    fig.legend(handles, labels, fontsize=8, frameon=False, loc="lower center",
               ncol=min(3, len(labels)), bbox_to_anchor=(0.5, -0.02 - 0.05 * len(labels) / 3))
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    return save_figure(fig, out_stem)
