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
