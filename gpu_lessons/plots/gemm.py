"""Lesson 6's figures: the steps' fraction of cuBLAS, shape by shape."""

from __future__ import annotations

import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.figure import Figure
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
