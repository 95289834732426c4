"""Lesson 6's figures: the steps' fraction of cuBLAS, the tile search as a heatmap, shared
wavefronts per warp per k-step."""

from __future__ import annotations

import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.patches import Rectangle
from matplotlib.ticker import FuncFormatter

from .style import (
    PALETTE,
    STYLE,
    finish,
    new_axes,
)


def gemm_progression(
    fractions: pd.DataFrame,
    shapes: list[str] | None = None,
    reference_label: str = "cuBLAS SGEMM, same run",
    provenance: str | None = None,
    ax: Axes | None = None,
    title: str = "Each step as a share of cuBLAS",
) -> Figure:
    """Horizontal bars in teaching order (first step on top): each step's fraction of the
    reference at each shape (one bar per shape). ``fractions``: steps as rows, shapes as columns;
    a missing value (a step not timed at that shape) leaves its bar out."""
    shapes = [s for s in (shapes or list(fractions.columns)) if s in fractions.columns]
    if not shapes:
        raise ValueError("no shape to draw")
    fig, ax = new_axes(ax)
    steps = list(fractions.index)
    fig.set_figheight(1.6 + 0.38 * len(steps))
    height = 0.8 / len(shapes)
    base = np.arange(len(steps))[::-1].astype(float)
    for i, shape in enumerate(shapes):
        values = 100 * fractions[shape].to_numpy(dtype=float)
        y = base + 0.4 - height * (i + 0.5)
        shown = np.isfinite(values)
        ax.barh(y[shown], values[shown], height=height * 0.92, color=PALETTE[i % len(PALETTE)], label=shape)
        for yy, value in zip(y[shown], values[shown], strict=True):
            ax.annotate(f"{value:.0f}%", xy=(value, yy), xytext=(3, 0), textcoords="offset points",
                        va="center", fontsize=STYLE["note_size"] - 1)
    ax.axvline(100, color=STYLE["ceiling_color"], linestyle="-.", linewidth=1.2, label=reference_label)
    ax.set_yticks(base, [f"{n + 1}. {s}" for n, s in enumerate(steps)])
    ax.set_xlim(0, max(115.0, np.nanmax(100 * fractions[shapes].to_numpy(dtype=float)) * 1.12))
    ax.xaxis.set_major_formatter(FuncFormatter(lambda value, _: f"{value:.0f}%"))
    ax.tick_params(axis="y", length=0)
    fig = finish(fig, ax, title, f"% of {reference_label} (GFLOP/s)", "", provenance,
                  legend_loc="upper right")  # the first steps' bars are short: room at the top
    ax.grid(False, axis="y")
    return fig


def search_heatmap(
    fractions: pd.DataFrame,
    provenance: str | None = None,
    ax: Axes | None = None,
    title: str = "The tile search: each tile's share of cuBLAS, shape by shape",
) -> Figure:
    """Tiles (rows) by shapes (columns), each cell the tile's fraction of cuBLAS at that shape
    (``lessons.gemm.autotune_table(table, "of_cublas")``); a tile not timed at a shape is left blank.
    The best tile of each shape is framed."""
    if fractions.empty:
        raise ValueError("no search rows to draw")
    fig, ax = new_axes(ax)
    fig.set_figheight(1.8 + 0.42 * len(fractions))
    fig.set_figwidth(max(STYLE["figsize"][0], 4.5 + 1.1 * len(fractions.columns)))
    values = 100 * fractions.to_numpy(dtype=float)
    image = ax.imshow(np.ma.masked_invalid(values), cmap="viridis", vmin=0, vmax=100, aspect="auto")
    for (i, j), value in np.ndenumerate(values):
        if np.isfinite(value):
            ax.text(j, i, f"{value:.0f}%", ha="center", va="center", fontsize=STYLE["note_size"],
                    color="white" if value < 60 else "black")
    for j in range(values.shape[1]):
        column = values[:, j]
        if np.isfinite(column).any():
            best = int(np.nanargmax(column))
            ax.add_patch(Rectangle((j - 0.5, best - 0.5), 1, 1, fill=False, edgecolor="#D55E00",
                                   linewidth=2.0))
    ax.set_xticks(range(values.shape[1]), list(fractions.columns), rotation=30, ha="right")
    ax.set_yticks(range(values.shape[0]), list(fractions.index))
    colorbar = fig.colorbar(image, ax=ax, shrink=0.8)
    colorbar.set_label("% of cuBLAS SGEMM, same run", fontsize=STYLE["label_size"])
    fig = finish(fig, ax, title, "matrix shape (M x N x K)", "", provenance)
    ax.grid(False)
    return fig


def wavefronts(
    counts: pd.DataFrame,
    provenance: str | None = None,
    ax: Axes | None = None,
    title: str = "Shared-memory wavefronts per warp per k-step",
) -> Figure:
    """Two bars per kernel: the pair rule's count ("model") and Nsight Compute's ("ncu"), from
    ``lessons.gemm.wavefront_table`` (its "label" column names the bars, else its index); a missing
    value leaves its bar out."""
    fig, ax = new_axes(ax)
    kernels = list(counts.get("label", counts.index))
    labels = [f"{k}\n({lanes})" for k, lanes in zip(kernels, counts["lanes"], strict=True)]
    base = np.arange(len(kernels), dtype=float)
    for i, (column, color) in enumerate((("model", PALETTE[0]), ("ncu", PALETTE[1]))):
        values = counts[column].to_numpy(dtype=float)
        shown = np.isfinite(values)
        x = base[shown] + (i - 0.5) * 0.38
        ax.bar(x, values[shown], width=0.36, color=color,
               label="pair rule (counted from the lanes)" if column == "model" else "Nsight Compute, H200")
        for xx, value in zip(x, values[shown], strict=True):
            ax.annotate(f"{value:.1f}", xy=(xx, value), xytext=(0, 2), textcoords="offset points",
                        ha="center", fontsize=STYLE["note_size"] - 1)
    ax.set_xticks(base, labels, rotation=30, ha="right", fontsize=STYLE["tick_size"] - 1)
    return finish(fig, ax, title, "", "wavefronts per warp per k-step", provenance, legend_loc="upper right")
