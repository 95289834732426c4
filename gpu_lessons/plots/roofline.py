"""Lesson 1's own figures: the roofline as two times per kernel, and the bytes per FMA of naive GEMM."""

from __future__ import annotations

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from .style import LABEL_BOX, PALETTE, STYLE, finish, new_axes, with_alt


def time_budget(budget: pd.DataFrame, provenance: str | None = None, ax=None) -> Figure:
    """Per kernel, two bars: the time its bytes take at the bandwidth ceiling and the time its FLOPs
    take at the FP32 ceiling; a diamond marks the measured time (the model: the longer bar)."""
    fig, ax = new_axes(ax)
    y = np.arange(len(budget))[::-1]
    height = 0.36
    ax.barh(y + height / 2, budget["memory_ms"], height, color=PALETTE[0], label="bytes / bandwidth ceiling")
    ax.barh(y - height / 2, budget["compute_ms"], height, color=PALETTE[1], label="FLOPs / FP32 ceiling")
    ax.scatter(budget["measured_ms"], y, marker="D", s=46, color="black", zorder=3, label="measured time")
    for yi, (_, row) in zip(y, budget.iterrows(), strict=True):
        ax.annotate(f"{row['error']:+.0%}", (row["measured_ms"], yi), xytext=(8, 0),
                    textcoords="offset points", va="center", fontsize=STYLE["note_size"], bbox=LABEL_BOX)
    ax.set_xscale("log")
    labels = [f"{k}\n(I = {i:.3g})" for k, i in zip(budget["kernel"], budget["intensity"], strict=True)]
    ax.set_yticks(y, labels)
    ax.set_xlim(right=ax.get_xlim()[1] * 3)
    finish(fig, ax, "The roofline as time: the longer bar sets the time",
           "Time per launch (ms, log scale)", "Kernel (intensity in FLOP/byte)", provenance,
           legend_loc="upper right")
    return with_alt(fig, "Horizontal bars per kernel: memory time and compute time at the measured ceilings, "
                    "and the measured time as a diamond labelled with its difference from the longer bar.")


def bytes_per_fma(levels: pd.DataFrame, provenance: str | None = None, ax=None) -> Figure:
    """Naive GEMM's bytes per FMA, counted four ways (log scale)."""
    fig, ax = new_axes(ax)
    y = np.arange(len(levels))[::-1]
    ax.barh(y, levels["bytes_per_fma"], color=[PALETTE[i] for i in (1, 0, 2, 4)][: len(levels)])
    for yi, value in zip(y, levels["bytes_per_fma"], strict=True):
        ax.annotate(f"{value:.3g} B", (value, yi), xytext=(6, 0), textcoords="offset points", va="center",
                    fontsize=STYLE["note_size"])
    ax.set_xscale("log")
    ax.set_yticks(y, levels["level"])
    ax.set_xlim(right=ax.get_xlim()[1] * 4)
    finish(fig, ax, "Naive GEMM: bytes per FMA, counted four ways", "Bytes per FMA (log scale)", "",
           provenance)
    described = "; ".join(f"{row.level}: {row.bytes_per_fma:.3g}" for row in levels.itertuples())
    return with_alt(fig, f"Bars of naive GEMM's bytes per FMA on a log scale. {described}.")
