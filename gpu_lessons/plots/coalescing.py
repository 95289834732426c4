"""Lesson 3's figures: a sweep's bandwidth beside the sector and DRAM-bytes models; the bytes DRAM
reads per element against the stride (64-byte granules); the 2-D walks against their models."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.figure import Figure
from matplotlib.ticker import FixedLocator, FuncFormatter, NullFormatter

from .style import (
    LABEL_BOX,
    PALETTE,
    STYLE,
    finish,
    new_axes,
    plain_number,
)


def sectors_sweep(
    model: pd.DataFrame,
    kind: str,
    ceiling_gbps: float,
    ceiling_label: str = "measured ceiling",
    provenance: str | None = None,
    title: str | None = None,
    loads_per_thread: int = 1,
) -> Figure:
    """Two panels over an offset or stride sweep: measured useful GB/s beside the sector model
    (ceiling x ideal / actual sectors) and, where the table has it, the DRAM-bytes model, with each
    model's error per point (sector model above the points, DRAM model below); sectors per request
    from the tracer (and Nsight Compute where recorded) below.

    ``model``: columns param, gbps, model_gbps, error, ld_sectors, st_sectors and optionally
    dram_model_gbps, dram_model_error, ncu_ld_sectors (``lessons.coalescing.sweep_model``).
    """
    fig = plt.figure(figsize=(8.5, 6.4), layout="constrained")
    plt.close(fig)
    top, bottom = fig.subplots(2, 1, sharex=True, height_ratios=[2.2, 1])
    x = model["param"].to_numpy()
    top.plot(x, model["gbps"], color=PALETTE[0], marker="o", markersize=STYLE["marker_size"],
             linewidth=STYLE["line_width"], label="measured (useful bytes / time)")
    top.plot(x, model["model_gbps"], color=PALETTE[1], linestyle="--", marker="s",
             markersize=STYLE["marker_size"] - 1, linewidth=1.4,
             label="sector model: ceiling x ideal / actual sectors")
    dram = "dram_model_gbps" in model
    if dram:
        top.plot(x, model["dram_model_gbps"], color=PALETTE[2], linestyle=":", marker="^",
                 markersize=STYLE["marker_size"] - 1, linewidth=1.4,
                 label="DRAM model: ceiling x useful / DRAM bytes (64-B granules)")
    top.axhline(ceiling_gbps, color=STYLE["ceiling_color"], linestyle="-.", linewidth=1.2, zorder=1)
    top.annotate(f"{ceiling_label}: {ceiling_gbps:,.0f} GB/s", xy=(1.0, ceiling_gbps),
                 xycoords=("axes fraction", "data"), xytext=(-4, 4), textcoords="offset points", ha="right",
                 va="bottom", fontsize=STYLE["note_size"], color=STYLE["ceiling_color"], bbox=LABEL_BOX)
    dram_errors = model["dram_model_error"] if dram else [np.nan] * len(x)
    for xi, yi, error, dram_error in zip(x, model["gbps"], model["error"], dram_errors, strict=True):
        if len(x) <= 16 or xi % 4 in (0, 1):
            top.annotate(f"{error:+.0%}", xy=(xi, yi), xytext=(0, 6), textcoords="offset points", ha="center",
                         fontsize=STYLE["note_size"] - 1.5, color=PALETTE[1])
            if not np.isnan(dram_error):
                top.annotate(f"{dram_error:+.0%}", xy=(xi, yi), xytext=(0, -11), textcoords="offset points",
                             ha="center", fontsize=STYLE["note_size"] - 1.5, color=PALETTE[2])
    lowest = min(model["gbps"].min(), model["model_gbps"].min(),
                 model["dram_model_gbps"].min() if dram else np.inf)
    low = 0 if kind == "stride" else 0.7 * lowest
    top.set_ylim(low, max(ceiling_gbps, model["gbps"].max()) * 1.15)
    top.yaxis.set_major_formatter(FuncFormatter(plain_number))
    name = "start offset (elements of 4 bytes)" if kind == "offset" else "stride (elements of 4 bytes)"
    article = "an" if kind == "offset" else "a"
    loads = "1 load" if loads_per_thread == 1 else f"{loads_per_thread} loads"
    models = "two models" if dram else "the sector model"
    headline = f"Copy with {article} {kind} ({loads} per thread) vs {models}; labels: errors"
    finish(fig, top, title or headline,
            "", "Useful bandwidth (GB/s)", None, legend_loc="lower left")
    bottom.plot(x, model["ld_sectors"], color=PALETTE[2], marker="o", markersize=STYLE["marker_size"],
                linewidth=STYLE["line_width"], label="load, tracer")
    bottom.plot(x, model["st_sectors"], color=PALETTE[3], marker="o", markersize=STYLE["marker_size"] - 1,
                linewidth=1.2, label="store, tracer")
    if "ncu_ld_sectors" in model and model["ncu_ld_sectors"].notna().any():
        recorded = model[model["ncu_ld_sectors"].notna()]
        bottom.scatter(recorded["param"], recorded["ncu_ld_sectors"], marker="x", color="black", s=40,
                       zorder=4,
                       label="load, Nsight Compute (recorded)")
    if kind == "stride":
        for axis in (top, bottom):
            axis.set_xscale("log", base=2)
            axis.xaxis.set_major_locator(FixedLocator([v for v in x if v & (v - 1) == 0]))
            axis.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
            axis.xaxis.set_minor_formatter(NullFormatter())
        for edge, text in ((8, "1 sector"), (32, "1 line")):
            for axis in (top, bottom):
                axis.axvline(edge, color=STYLE["datasheet_color"], linestyle=":", linewidth=1)
            bottom.annotate(text, xy=(edge, 0), xytext=(3, 3), textcoords="offset points",
                            fontsize=STYLE["note_size"] - 1, color=STYLE["datasheet_color"])
    bottom.set_ylim(0, max(6, model["ld_sectors"].max() * 1.3))
    bottom.legend(fontsize=STYLE["legend_size"] - 1, frameon=False, ncols=3 if kind == "offset" else 1,
                  loc="lower right" if kind == "offset" else "center right")
    finish(fig, bottom, "", name, "Sectors per request", provenance)
    return fig


def dram_granularity(table: pd.DataFrame, provenance: str | None = None, ax=None) -> Figure:
    """DRAM bytes read per copied 4-byte element against the stride: Nsight Compute's measurement
    (one marker per copy kernel) beside the 32-byte-sector and 64-byte-granule predictions.

    ``table``: ``lessons.coalescing.dram_granularity`` (variant, stride, ncu_read_per_element)."""
    fig, ax = new_axes(ax)
    strides = np.array(sorted(set(int(s) for s in table["stride"])))
    grid = np.unique(np.concatenate([strides, 2.0 ** np.arange(0, np.log2(strides.max()) + 0.01, 0.25)]))
    ax.plot(grid, np.minimum(4 * grid, 32), color=PALETTE[1], linestyle="--", linewidth=1.4,
            label="prediction: whole 32-byte sectors")
    ax.plot(grid, np.minimum(4 * grid, 64), color=PALETTE[2], linestyle=":", linewidth=1.8,
            label="prediction: whole 64-byte granules")
    markers = {"strided_copy": ("o", PALETTE[0], "measured (ncu), one load per thread"),
               "strided_copy_x4": ("x", "black", "measured (ncu), four loads in flight")}
    for variant, rows in table.groupby("variant", sort=False):
        marker, color, label = markers.get(variant, ("s", PALETTE[3], f"measured (ncu), {variant}"))
        ax.scatter(rows["stride"], rows["ncu_read_per_element"], marker=marker, color=color, s=42, zorder=4,
                   label=label)
    ax.set_xscale("log", base=2)
    ax.xaxis.set_major_locator(FixedLocator([s for s in strides if s & (s - 1) == 0]))
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
    ax.xaxis.set_minor_formatter(NullFormatter())
    ax.set_ylim(0, 72)
    ax.set_yticks([0, 8, 16, 32, 48, 64])
    for edge, text, side in ((8, "32 B apart ", "right"), (16, " 64 B apart", "left")):
        ax.axvline(edge, color=STYLE["datasheet_color"], linestyle=":", linewidth=1)
        ax.annotate(text, xy=(edge, 68), ha=side, va="center", fontsize=STYLE["note_size"] - 1,
                    color=STYLE["datasheet_color"])
    return finish(fig, ax, "DRAM moves 64-byte granules: bytes read per 4-byte element",
                  "stride (elements of 4 bytes)", "DRAM bytes read per element", provenance,
                  legend_loc="lower right")


def matrix_walks(summary: pd.DataFrame, provenance: str | None = None, ax=None) -> Figure:
    """Bars per leading dimension: the row walk and the column walk (useful GB/s), with what the
    sector model and the DRAM-bytes model predict for the column walk (from the row walk).

    ``summary``: ``lessons.coalescing.matrix_summary``."""
    fig, ax = new_axes(ax)
    lds = sorted(set(int(v) for v in summary["ld"]))
    width, spacing = 0.36, 1.7  # room right of each column bar for the model labels
    by = summary.set_index(["variant", "ld"])
    for index, ld in enumerate(lds):
        position = index * spacing
        row = by.loc[("matrix_row_walk", ld)]
        column = by.loc[("matrix_column_walk", ld)]
        bars = ((-width / 2, row, PALETTE[0], "row walk (lanes along a row)"),
                (width / 2, column, PALETTE[1], "column walk (lanes down a column)"))
        for offset, entry, color, label in bars:
            ax.bar(position + offset, entry["gbps"], width, color=color, label=label if index == 0 else None)
            ax.annotate(f"{entry['gbps']:,.0f}", xy=(position + offset, entry["gbps"]), xytext=(0, 3),
                        textcoords="offset points", ha="center", fontsize=STYLE["note_size"])
        x0, x1 = position, position + width
        for model, style, color, label in (("sector_model_vs_row", "--", PALETTE[3], "sector model"),
                                           ("dram_model_vs_row", ":", PALETTE[2], "DRAM-bytes model")):
            predicted = row["gbps"] * column[model]
            error = column["gbps"] / predicted - 1
            ax.plot([x0, x1], [predicted, predicted], color=color, linestyle=style, linewidth=2,
                    label=f"{label} for the column walk" if index == 0 else None)
            ax.annotate(f"{label}: error {error:+.0%}", xy=(x1, predicted), xytext=(4, 0),
                        textcoords="offset points", va="center", fontsize=STYLE["note_size"] - 1, color=color,
                        bbox=LABEL_BOX)
    ax.set_xticks([i * spacing for i in range(len(lds))], [f"ld = {ld} floats" for ld in lds])
    ax.set_xlim(-0.6, (len(lds) - 1) * spacing + 1.3)
    ax.set_ylim(0, summary["gbps"].max() * 1.45)
    ax.yaxis.set_major_formatter(FuncFormatter(plain_number))
    ax.legend(fontsize=STYLE["legend_size"], frameon=False, loc="upper center", ncols=2)
    side = int(round(int(summary["size"].iloc[0]) ** 0.5))
    return finish(fig, ax, f"Matrix {side} x {side}: warps along rows vs down columns",
                  "leading dimension (row length in memory)", "Useful bandwidth (GB/s)", provenance)
