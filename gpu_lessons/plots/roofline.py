"""Lesson 1's own figures: the roofline as two times per kernel, and the bytes per FMA of naive GEMM."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.figure import Figure
from matplotlib.ticker import FuncFormatter

from .style import PALETTE, STYLE, add_caption, finish, new_axes, plain_number, with_alt


def time_budget(budget: pd.DataFrame, provenance: str | None = None) -> Figure:
    """Per kernel, two bars: the time its bytes take at the bandwidth ceiling and the time its FLOPs
    take at the FP32 ceiling; a diamond marks the measured time (the model: the longer bar). A second
    panel, on a linear scale, shows measured / model, where a log time axis would hide the gaps."""
    fig = plt.figure(figsize=(STYLE["figsize"][0] * 1.2, STYLE["figsize"][1]), layout="constrained")
    plt.close(fig)
    ax, ratio = fig.subplots(1, 2, sharey=True, width_ratios=[3, 1.3])
    y = np.arange(len(budget))[::-1]
    height = 0.36
    ax.barh(y + height / 2, budget["memory_ms"], height, color=PALETTE[0], label="bytes / bandwidth ceiling")
    ax.barh(y - height / 2, budget["compute_ms"], height, color=PALETTE[1], label="FLOPs / FP32 ceiling")
    ax.scatter(budget["measured_ms"], y, marker="D", s=46, color="black", zorder=3, label="measured time")
    ax.set_xscale("log")
    labels = [f"{k}\n(I = {i:.3g})" for k, i in zip(budget["kernel"], budget["intensity"], strict=True)]
    ax.set_yticks(y, labels)
    ax.set_xlim(right=ax.get_xlim()[1] * 1.5)
    finish(fig, ax, "The roofline as time: the longer bar sets the time",
           "Time per launch (ms, log scale)", "Kernel (intensity in FLOP/byte)", None,
           legend_loc="upper right")
    measured_over_model = budget["measured_ms"] / budget["model_ms"]
    colors = [PALETTE[2] if r < 1 else PALETTE[3] for r in measured_over_model]
    ratio.barh(y, measured_over_model - 1, left=1, color=colors, height=0.5)
    ratio.axvline(1.0, color=STYLE["roof_color"], linewidth=1.2)
    for yi, (_, row) in zip(y, budget.iterrows(), strict=True):
        value = row["measured_ms"] / row["model_ms"]
        ax_text = f"{row['error']:+.0%}"
        ratio.annotate(ax_text, (value, yi), xytext=(5 if value >= 1 else -5, 0), textcoords="offset points",
                       ha="left" if value >= 1 else "right", va="center", fontsize=STYLE["note_size"])
    low, high = float(measured_over_model.min()), float(measured_over_model.max())
    ratio.set_xlim(min(0.9, low - 0.2), max(1.1, high + 0.12))
    finish(fig, ratio, "Measured / the longer bar", "Ratio (linear scale)", "", provenance)
    ratio.tick_params(axis="y", left=False)
    worst = budget.loc[budget["error"].idxmax()]
    under = budget[budget["error"] < 0]
    below = "" if under.empty else (f"; {', '.join(under['kernel'])} took less time than its bar "
                                    f"({', '.join(f'{e:+.0%}' for e in under['error'])})")
    return with_alt(fig, "Left: horizontal bars per kernel, memory time and compute time at the measured "
                    "ceilings on a log time axis, and the measured time as a diamond. Right: measured time "
                    f"over the longer bar on a linear axis, from {low:.2f} to {high:.2f}: the largest gap "
                    f"is {worst['kernel']} at {worst['error']:+.0%}{below}.")


KIND_COLORS = {"model": PALETTE[1], "traced": PALETTE[0], "measured": PALETTE[2]}
KIND_LABELS = {"model": "a count on paper", "traced": "counted by the simulator's tracer",
               "measured": "bound from the measured time"}


def bytes_per_fma(levels: pd.DataFrame, provenance: str | None = None, ax=None) -> Figure:
    """Naive GEMM's bytes per FMA, counted four ways: dots on a log scale (a bar would start at an
    arbitrary value), coloured by where each comes from."""
    fig, ax = new_axes(ax)
    y = np.arange(len(levels))[::-1]
    for kind, color in KIND_COLORS.items():
        mine = (levels["kind"] == kind).to_numpy()
        ax.scatter(levels["bytes_per_fma"][mine], y[mine], s=70, color=color, label=KIND_LABELS[kind],
                   zorder=3)
    for yi, value in zip(y, levels["bytes_per_fma"], strict=True):
        ax.annotate(f"{value:.3g} B", (value, yi), xytext=(6, 0), textcoords="offset points", va="center",
                    fontsize=STYLE["note_size"])
    ax.set_xscale("log")
    ax.set_yticks(y, levels["level"])
    ax.set_ylim(y.min() - 0.6, y.max() + 0.6)
    ax.set_xlim(levels["bytes_per_fma"].min() / 3, levels["bytes_per_fma"].max() * 6)
    finish(fig, ax, "Naive GEMM: bytes per FMA, counted four ways", "Bytes per FMA (log scale)", "",
           provenance, legend_loc="lower right")
    described = "; ".join(f"{row.level}: {row.bytes_per_fma:.3g}" for row in levels.itertuples())
    return with_alt(fig, f"Dots of naive GEMM's bytes per FMA on a log scale. {described}.")


def model_roof(bandwidth_gbps: float, peak_gflops: float, marks: dict[str, float], source: str,
               ax=None) -> Figure:
    """The roofline as a model: the two limits, the ridge point, the memory- and compute-bound sides
    shaded, and vertical marks at the intensities of a few kernels (nothing measured)."""
    fig, ax = new_axes(ax)
    ridge = peak_gflops / bandwidth_gbps
    intensity = np.logspace(-2, 3, 200)
    ax.plot(intensity, np.minimum(peak_gflops, bandwidth_gbps * intensity), color=STYLE["roof_color"],
            linewidth=STYLE["line_width"] + 0.6, label=f"min({peak_gflops:,.0f}, {bandwidth_gbps:,.0f} x I)")
    ax.axvspan(intensity[0], ridge, color=PALETTE[0], alpha=0.07, label="memory-bound side")
    ax.axvspan(ridge, intensity[-1], color=PALETTE[1], alpha=0.07, label="compute-bound side")
    ax.axvline(ridge, color=STYLE["ceiling_color"], linestyle=":", linewidth=1)
    ax.annotate(f"ridge point I* = {ridge:.1f}", (ridge, peak_gflops), xytext=(6, -16),
                textcoords="offset points", fontsize=STYLE["note_size"])
    for number, (label, value) in enumerate(marks.items()):
        ax.axvline(value, color=PALETTE[2 + number % 4], linewidth=1.2, linestyle="--")
        ax.annotate(label, (value, bandwidth_gbps * 0.02), rotation=90, xytext=(4, 0),
                    textcoords="offset points", fontsize=STYLE["note_size"], color=PALETTE[2 + number % 4],
                    va="bottom")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(intensity[0], intensity[-1])
    finish(fig, ax, "The roofline as a model (before any measurement)", "Arithmetic intensity I (FLOP/byte)",
           "Attainable performance (GFLOP/s)", source, legend_loc="upper left")
    for axis in (ax.xaxis, ax.yaxis):
        axis.set_major_formatter(FuncFormatter(plain_number))
    shown = ", ".join(f"{label} at I = {value:g}" for label, value in marks.items())
    return with_alt(fig, f"Log-log roofline drawn from the model: a slanted bandwidth limit of "
                    f"{bandwidth_gbps:,.0f} GB/s meets a flat limit of {peak_gflops:,.0f} GFLOP/s at "
                    f"I* = {ridge:.1f} FLOP/byte; "
                    f"dashed marks: {shown}.")


LEVEL_BOXES = (("the warp's\nloads and stores", None), ("L1", "L1, ncu"), ("L2\n(60 MiB)", "L2, ncu"),
               ("DRAM", "DRAM, ncu"))


def memory_levels(levels: pd.DataFrame, provenance: str | None = None) -> Figure:
    """A concept picture drawn from counters (levels: lessons.roofline.traffic_levels): per kernel, a row
    of boxes, the warp's loads and stores -> L1 -> L2 -> DRAM, each arrow as thick as the (log) bytes per
    unit of work that cross it, labelled with them; the notes' count and the simulator's L1 count beside."""
    kernels = list(dict.fromkeys(levels["kernel"]))
    fig = plt.figure(figsize=(STYLE["figsize"][0] * 1.15, 1.2 + 1.75 * len(kernels)), layout="constrained")
    plt.close(fig)
    ax = fig.subplots()
    ax.set_xlim(0, 10)
    ax.set_ylim(0, 2.1 * len(kernels))
    ax.axis("off")
    xs = [0.9, 3.75, 6.4, 9.05]
    described = []
    for row, kernel in enumerate(kernels):
        mine = levels[levels["kernel"] == kernel].set_index("level")
        per = mine["per"].iloc[0]
        y = 2.1 * (len(kernels) - 1 - row) + 0.85
        count, traced = mine.loc["the count", "bytes"], mine.loc["L1, simulator", "bytes"]
        ax.text(0.0, y + 0.95, f"{kernel}: bytes per {per} (the notes' count: {count:g}; the simulator's "
                f"L1 count: {traced:.3g})",
                fontsize=STYLE["label_size"], ha="left", va="center")
        for x, (name, _) in zip(xs, LEVEL_BOXES, strict=True):
            ax.add_patch(plt.Rectangle((x - 0.75, y - 0.38), 1.5, 0.76, facecolor="#f2f2f2",
                                       edgecolor="#555555", linewidth=1.0, zorder=2))
            ax.text(x, y, name, ha="center", va="center", fontsize=STYLE["note_size"] + 0.5, zorder=3)
        crossing = []
        for left, right, (_, level) in zip(xs[:-1], xs[1:], LEVEL_BOXES[1:], strict=True):
            value = float(mine.loc[level, "bytes"])
            width = max(1.0, 3.0 + 2.2 * np.log10(max(value, 1e-3)))
            ax.annotate("", xy=(right - 0.78, y), xytext=(left + 0.78, y), zorder=1,
                        arrowprops={"arrowstyle": "-|>", "color": PALETTE[0], "linewidth": width,
                                    "mutation_scale": 12 + 2 * width})
            read, write = mine.loc[level, "read"], mine.loc[level, "write"]
            ax.text((left + right) / 2, y + 0.5, f"{value:.3g} B", ha="center", va="bottom",
                    fontsize=STYLE["note_size"] + 0.5, fontweight="bold")
            ax.text((left + right) / 2, y - 0.5, f"read {read:.3g}, write {write:.3g}", ha="center", va="top",
                    fontsize=STYLE["note_size"] - 0.5, color="#555555")
            crossing.append(f"{level.split(',')[0]} {value:.3g}")
        described.append(f"{kernel}, bytes per {per}: count {mine.loc['the count', 'bytes']:g}, at "
                         + ", ".join(crossing))
    fig.suptitle("Where the bytes go: asked of the L1, of the L2, moved by DRAM (Nsight Compute)", x=0.01,
                 ha="left", fontsize=STYLE["title_size"])
    if provenance:
        add_caption(fig, provenance)
    return with_alt(fig, "Rows of four boxes, the warp's loads and stores, L1, L2 and DRAM, joined by arrows "
                    "as thick as the bytes that cross each link, labelled with them: "
                    + "; ".join(described) + ".")
