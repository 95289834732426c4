"""Lesson 3's figures: a sweep's bandwidth beside the sector and DRAM-bytes models; the bytes DRAM
reads per element against the stride (64-byte granules); the 2-D walks against their models, and a
matrix drawn cell by cell under one warp's load; warp requests side by side; copy bandwidth by access
width; the particle layouts beside the bytes model; the grid-stride copy against its waves of blocks."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.colors import ListedColormap
from matplotlib.figure import Figure
from matplotlib.patches import Patch
from matplotlib.ticker import FixedLocator, FuncFormatter, NullFormatter

from . import charts
from .style import (
    PALETTE,
    STYLE,
    add_caption,
    finish,
    human_bytes,
    new_axes,
    plain_number,
    share_percent,
)

SECTOR_BYTES = 32


def _stride_axis(axis, x) -> None:
    axis.set_xscale("log", base=2)
    axis.xaxis.set_major_locator(FixedLocator([v for v in x if int(v) & (int(v) - 1) == 0]))
    axis.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
    axis.xaxis.set_minor_formatter(NullFormatter())


def sectors_sweep(
    model: pd.DataFrame,
    kind: str,
    ceiling_gbps: float,
    ceiling_label: str = "measured ceiling",
    provenance: str | None = None,
    title: str | None = None,
    loads_per_thread: int = 1,
) -> Figure:
    """Three panels over an offset or stride sweep, sharing the x axis:

    1. measured useful GB/s (axis from 0) beside the sector model and the DRAM-bytes model;
    2. each model's error per point (measured / model - 1), in %;
    3. the bytes per copied element each model charges: through L1, whole 32-byte sectors (the
       load and store sectors of one warp, from the tracer); through DRAM, whole 64-byte granules;
       and, where recorded, the DRAM bytes Nsight Compute measured for the same access pattern.

    ``model``: ``lessons.coalescing.sweep_model`` (param, gbps, model_gbps, error, sectors,
    dram_model_gbps, dram_model_error, dram_bytes, optionally ncu_dram_bytes).
    """
    fig = plt.figure(figsize=(8.5, 8.2), layout="constrained")
    plt.close(fig)
    top, middle, bottom = fig.subplots(3, 1, sharex=True, height_ratios=[2.1, 1.1, 1.2])
    x = model["param"].to_numpy()
    small = STYLE["marker_size"] - 1
    top.plot(x, model["gbps"], color=PALETTE[0], marker="o", markersize=STYLE["marker_size"],
             linewidth=STYLE["line_width"], label="measured (useful bytes / time)")
    top.plot(x, model["model_gbps"], color=PALETTE[1], linestyle="--", marker="s", markersize=small,
             linewidth=1.4, label="sector model: ceiling x 8 / sectors per warp")
    top.plot(x, model["dram_model_gbps"], color=PALETTE[2], linestyle=":", marker="^", markersize=small,
             linewidth=1.6, label="DRAM model: ceiling x 8 / DRAM bytes per element")
    top.axhline(ceiling_gbps, color=STYLE["ceiling_color"], linestyle="-.", linewidth=1.0, zorder=1,
                label=f"{ceiling_label}: {ceiling_gbps:,.0f} GB/s")
    high = max(ceiling_gbps, model["gbps"].max())
    if kind == "stride":  # 15x from stride 1 to 256: a log axis shows every point's ratio to the models
        top.set_yscale("log")
        low = min(model["gbps"].min(), model["model_gbps"].min(), model["dram_model_gbps"].min())
        top.set_ylim(low / 2.2, high * 1.25)
        top.yaxis.set_major_locator(FixedLocator([125, 250, 500, 1000, 2000, 4000, 8000]))
        top.yaxis.set_minor_formatter(NullFormatter())
    else:
        top.set_ylim(0, high * 1.12)
    top.yaxis.set_major_formatter(FuncFormatter(plain_number))
    article = "an" if kind == "offset" else "a"
    loads = "1 load" if loads_per_thread == 1 else f"{loads_per_thread} loads"
    headline = f"Copy with {article} {kind} ({loads} in flight per thread): measured vs two models"
    unit = "GB/s, log scale" if kind == "stride" else "GB/s"
    finish(fig, top, title or headline, "", f"Useful bandwidth ({unit})", None, legend_loc="lower left")
    middle.axhline(0, color=STYLE["ceiling_color"], linewidth=0.8)
    middle.plot(x, 100 * model["error"], color=PALETTE[1], linestyle="--", marker="s", markersize=small,
                linewidth=1.4, label="sector model")
    middle.plot(x, 100 * model["dram_model_error"], color=PALETTE[2], linestyle=":", marker="^",
                markersize=small, linewidth=1.6, label="DRAM model")
    worst = float(np.nanmax(np.abs(100 * model[["error", "dram_model_error"]].to_numpy())))
    limit = max(5.0, np.ceil(worst / 5) * 5 + 5)
    middle.set_ylim(-limit, limit)
    middle.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:+.0f}%" if v else "0"))
    middle.legend(fontsize=STYLE["legend_size"] - 1, frameon=False, ncols=2,
                  loc="lower left" if kind == "offset" else "lower left")
    finish(fig, middle, "", "", "Model error\n(measured / model - 1)", None)
    bottom.plot(x, model["sectors"], color=PALETTE[1], linestyle="--", marker="s", markersize=small,
                linewidth=1.4, label="through L1: 32-B sectors (tracer)")
    bottom.plot(x, model["dram_bytes"], color=PALETTE[2], linestyle=":", marker="^", markersize=small,
                linewidth=1.6, label="through DRAM: 64-B granules")
    if "ncu_dram_bytes" in model and model["ncu_dram_bytes"].notna().any():
        recorded = model[model["ncu_dram_bytes"].notna()]
        bottom.scatter(recorded["param"], recorded["ncu_dram_bytes"], marker="x", color="black", s=40,
                       zorder=4, label="DRAM, Nsight Compute (same addresses)")
    bottom.set_ylim(0, max(12, float(np.nanmax(model[["sectors", "dram_bytes"]].to_numpy())) * 1.25))
    bottom.legend(fontsize=STYLE["legend_size"] - 1, frameon=False, ncols=1 if kind == "stride" else 3,
                  loc="upper left" if kind == "stride" else "lower right")
    name = "start offset (elements of 4 bytes)" if kind == "offset" else "stride (elements of 4 bytes)"
    finish(fig, bottom, "", name, "Bytes moved per\ncopied element", provenance)
    if kind == "stride":
        for axis in (top, middle, bottom):
            _stride_axis(axis, x)
        for edge, text in ((8, "32 B apart"), (16, "64 B apart")):
            for axis in (top, middle, bottom):
                axis.axvline(edge, color=STYLE["datasheet_color"], linestyle=":", linewidth=1)
            bottom.annotate(text, xy=(edge, 0), xytext=(3, 3), textcoords="offset points",
                            fontsize=STYLE["note_size"] - 1, color=STYLE["datasheet_color"])
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
    """Bars per leading dimension: the row walk, the column walk (useful GB/s) and, beside the column
    walk in its colour but hatched, what the sector model and the DRAM-bytes model predict for it
    (from the row walk), each labelled with the column walk's error against it.

    ``summary``: ``lessons.coalescing.matrix_summary``."""
    fig, ax = new_axes(ax)
    fig.set_size_inches(8.2, 4.8)
    lds = sorted(set(int(v) for v in summary["ld"]))
    width, spacing = 0.22, 1.3
    by = summary.set_index(["variant", "ld"])
    models = (("sector_model_vs_row", "///", "column walk: sector model"),
              ("dram_model_vs_row", "...", "column walk: DRAM-bytes model"))
    for index, ld in enumerate(lds):
        position = index * spacing
        row = by.loc[("matrix_row_walk", ld)]
        column = by.loc[("matrix_column_walk", ld)]
        bars = [(position - 1.5 * width, row["gbps"], dict(color=PALETTE[0]), "row walk (lanes along a row)",
                 ""),
                (position - 0.5 * width, column["gbps"], dict(color=PALETTE[1]),
                 "column walk (lanes down a column), measured", "")]
        for offset, (model, hatch, label) in enumerate(models):
            predicted = row["gbps"] * column[model]
            error = column["gbps"] / predicted - 1
            bars.append((position + (0.5 + offset) * width, predicted,
                         dict(facecolor="white", edgecolor=PALETTE[1], hatch=hatch, linewidth=1.2),
                         f"{label} (predicted)", f"\nerror {error:+.0%}"))
        for x, value, look, label, note in bars:
            ax.bar(x, value, width, label=label if index == 0 else None, **look)
            ax.annotate(f"{value:,.0f}{note}", xy=(x, value), xytext=(0, 3), textcoords="offset points",
                        ha="center", va="bottom", fontsize=STYLE["note_size"] - 0.5)
    ax.set_xticks([i * spacing for i in range(len(lds))], [f"ld = {ld} floats" for ld in lds])
    ax.set_ylim(0, summary["gbps"].max() * 1.55)
    ax.yaxis.set_major_formatter(FuncFormatter(plain_number))
    ax.legend(fontsize=STYLE["legend_size"] - 0.5, frameon=False, loc="upper center", ncols=2)
    side = int(round(int(summary["size"].iloc[0]) ** 0.5))
    return finish(fig, ax, f"Matrix {side} x {side}: warps along rows vs down columns",
                  "leading dimension (row length in memory)", "Useful bandwidth (GB/s)", provenance)


def request_panels(requests, provenance: str | None = None) -> Figure:
    """Several warp requests one above the other (``plots.charts.global_sectors`` each), one legend.

    ``requests``: (title, request) pairs, e.g. ``lessons.coalescing.float4_requests``."""
    bands = [charts.request_rows(request) for _, request in requests]
    fig = plt.figure(figsize=(9.5, 1.0 + 1.9 * sum(bands) + 0.5 * len(requests)), layout="constrained")
    plt.close(fig)
    axes = np.atleast_1d(fig.subplots(len(requests), 1, height_ratios=[b + 0.4 for b in bands]))
    for index, (ax, (title, request)) in enumerate(zip(axes, requests, strict=True)):
        charts.global_sectors(request, ax=ax, title=title, legend=index == len(requests) - 1)
    if provenance:
        add_caption(fig, provenance)
    return fig


def matrix_walk_picture(walks, ld: int, rows: int = 32, provenance: str | None = None) -> Figure:
    """A row-major matrix drawn cell by cell (``rows`` x ``ld`` floats, leading dimension ``ld``), one
    panel per walk, side by side: the cells one warp's load touches (from the tracer's request) and
    the rest of the 32-byte sectors they fall in. Element (r, c) sits at r * ld + c.

    ``walks``: (title, request) pairs, e.g. from ``lessons.coalescing.matrix_requests``."""
    fig = plt.figure(figsize=(4.4 * len(walks) + 0.6, 5.0), layout="constrained")
    plt.close(fig)
    axes = np.atleast_1d(fig.subplots(1, len(walks)))
    floats_per_sector = SECTOR_BYTES // 4
    for ax, (title, request) in zip(axes, walks, strict=True):
        element = request["address"].to_numpy() // 4
        r, c = np.divmod(element, ld)
        shown = max(rows, int(r.max()) + 1)
        sectors = {(int(e) // floats_per_sector) for e in element}
        state = np.zeros((shown, ld))  # 0: not moved, 1: moved, 2: loaded by a lane
        index = np.arange(shown * ld).reshape(shown, ld)
        state[np.isin(index // floats_per_sector, list(sectors))] = 1
        state[r, c] = 2
        colors = ListedColormap(["#f4f4f4", PALETTE[5], PALETTE[0]])
        ax.pcolormesh(np.arange(ld + 1), np.arange(shown + 1), state[::-1], cmap=colors, vmin=-0.5, vmax=2.5,
                      edgecolors="white", linewidth=0.3)
        for edge in range(0, ld + 1, floats_per_sector):
            ax.plot([edge, edge], [0, shown], color="#888888", linewidth=0.7, zorder=3)
        ax.set_xlim(0, ld)
        ax.set_ylim(0, shown)
        ax.set_aspect("equal")
        ax.set_xticks(list(range(0, ld + 1, floats_per_sector)))
        ax.set_yticks([shown - 0.5 - k for k in range(0, shown, 4)], [str(k) for k in range(0, shown, 4)])
        ax.tick_params(labelsize=STYLE["tick_size"] - 1, length=0)
        for side in ("top", "right", "bottom", "left"):
            ax.spines[side].set_visible(False)
        attrs = request.attrs
        used = attrs["useful_bytes"] / attrs["moved_bytes"]
        ax.set_title(f"{title}\n{attrs['sectors']} sectors, {share_percent(used)} of the moved bytes used",
                     fontsize=STYLE["title_size"] - 1, loc="left")
        ax.set_xlabel("column c (floats)", fontsize=STYLE["label_size"] - 1)
        ax.set_ylabel("row r", fontsize=STYLE["label_size"] - 1)
    fig.legend(handles=[Patch(color=PALETTE[0], label="element a lane loads"),
                        Patch(color=PALETTE[5], label="rest of a sector moved"),
                        Patch(facecolor="#f4f4f4", edgecolor="#bbbbbb", label="not moved")],
               loc="outside lower center", ncols=3, frameon=False, fontsize=STYLE["legend_size"])
    fig.suptitle(f"One warp's load of a row-major matrix, ld = {ld} floats per row in memory; "
                 "grey lines: 32-byte sector edges", fontsize=STYLE["title_size"] - 1, x=0.02, ha="left")
    if provenance:
        add_caption(fig, provenance)
    return fig


WIDTH_LABELS = {
    "copy_w4": ("4-byte accesses, one per thread", PALETTE[1], "-"),
    "copy_w8": ("8-byte accesses, one per thread", PALETTE[4], "-"),
    "copy_w16": ("16-byte accesses, one per thread", PALETTE[0], "-"),
    "copy_w4_grid_stride": ("4-byte, grid-stride loop (one wave)", PALETTE[1], ":"),
    "copy_w8_grid_stride": ("8-byte, grid-stride loop (one wave)", PALETTE[4], ":"),
    "copy_w16_grid_stride": ("16-byte, grid-stride loop (one wave)", PALETTE[0], ":"),
    "cupy copy": ("CuPy copy (cupy.copyto)", "#555555", "--"),
}


def access_widths(table: pd.DataFrame, l2_bytes: float | None = None, provenance: str | None = None,
                  ax=None) -> Figure:
    """Copy bandwidth against the size of one buffer (log 2), one line per access width, beside CuPy's
    copy: one panel for one access per thread, one for the grid-stride loop (one wave of blocks), so
    that no line hides another; marked: the size at which the two buffers fill the L2 (smaller copies
    can stay in L2 between repeated runs). ``table``: rows of ``lessons.coalescing.width_summary``
    (variant, size, gbps). ``ax`` is accepted for the common signature and ignored: two panels."""
    fig = plt.figure(figsize=(10.0, 4.8), layout="constrained")
    plt.close(fig)
    panels = fig.subplots(1, 2, sharey=True)
    sizes = 4 * table["size"]
    ticks = sorted(set(int(v) for v in sizes))
    for axis, (style, heading) in zip(panels, (("-", "one access per thread"),
                                               (":", "grid-stride loop, one wave of blocks")), strict=True):
        for variant, (label, color, line) in WIDTH_LABELS.items():
            rows = table[table["variant"] == variant].sort_values("size")
            if rows.empty or line not in (style, "--"):
                continue
            axis.plot(4 * rows["size"], rows["gbps"], color=color, linestyle="-" if line != "--" else "--",
                      marker="o" if line != "--" else "s", markersize=STYLE["marker_size"],
                      linewidth=STYLE["line_width"], label=label.split(",")[0].replace(" accesses", ""))
        axis.set_xscale("log", base=2)
        axis.xaxis.set_major_locator(FixedLocator(ticks))
        axis.xaxis.set_major_formatter(FuncFormatter(lambda v, _: human_bytes(v)))
        axis.xaxis.set_minor_formatter(NullFormatter())
        axis.set_ylim(0, table["gbps"].max() * 1.15)
        axis.yaxis.set_major_formatter(FuncFormatter(plain_number))
        if l2_bytes:  # a copy keeps two buffers: both fit in L2 up to half its size each
            axis.axvline(l2_bytes / 2, color=STYLE["datasheet_color"], linestyle="-", linewidth=1.2)
            axis.annotate(f"both buffers fill\nthe {human_bytes(l2_bytes)} L2",
                          xy=(l2_bytes / 2, table["gbps"].max() * 1.08), xytext=(4, 0),
                          textcoords="offset points", va="center", fontsize=STYLE["note_size"],
                          color=STYLE["datasheet_color"])
        axis.legend(fontsize=STYLE["legend_size"] - 0.5, frameon=False, loc="lower right")
        finish(fig, axis, heading, "Size of each buffer (the copy reads one and writes one)",
               "Useful bandwidth (GB/s)" if style == "-" else "", None)
    fig.suptitle("Copy bandwidth by access width", fontsize=STYLE["title_size"], x=0.01, ha="left")
    if provenance:
        add_caption(fig, provenance)
    return fig


PARTICLE_LABELS = {
    "particles_soa": "SoA: six arrays",
    "particles_soa_naive": "SoA, first draft (load, update, store per field)",
    "particles_aosoa": "AoSoA: blocks of 32 particles",
    "particles_aos": "AoS: (n, 6) records",
    "particles_padded_vec4": "padded 32-B records, 16-B loads",
    "cupy ElementwiseKernel (SoA)": "CuPy ElementwiseKernel (SoA)",
    "cupy expressions (SoA)": "CuPy expressions x += vx * dt (SoA)",
    "cupy expression (AoS)": "CuPy expression on (n, 6) records",
}


def particle_layouts(summary: pd.DataFrame, provenance: str | None = None, ax=None) -> Figure:
    """Horizontal bars: the particle update's useful GB/s per layout and CuPy version; for each layout
    of our kernel a black tick where the bytes model puts it (SoA's speed x SoA's DRAM bytes / its
    DRAM bytes), labelled with the model's error. ``summary``: ``lessons.coalescing.particle_summary``."""
    fig, ax = new_axes(ax)
    fig.set_size_inches(8.5, 4.8)
    rows = summary.set_index("variant").loc[[v for v in PARTICLE_LABELS if v in set(summary["variant"])]]
    y = np.arange(len(rows))[::-1]
    ours = (rows["provider"] == "gpu_lessons").to_numpy()
    ax.barh(y, rows["gbps"], color=[PALETTE[0] if mine else STYLE["reference_bar_color"] for mine in ours],
            height=0.62)
    soa = float(rows.loc["particles_soa", "gbps"]) if "particles_soa" in rows.index else np.nan
    modelled = False
    for yi, (variant, row) in zip(y, rows.iterrows(), strict=True):
        mine = row["provider"] == "gpu_lessons"
        ax.annotate(f"{row['gbps']:,.0f} GB/s", xy=(row["gbps"], yi), xytext=(-5, 0),
                    textcoords="offset points", ha="right", va="center", fontsize=STYLE["note_size"],
                    color="white" if mine else "black")
        right, note = row["gbps"], f"{row['gbps'] / soa:.3f} of SoA"
        if variant in ("particles_aos", "particles_aosoa", "particles_padded_vec4"):
            predicted = soa * row["bytes_model_vs_soa"]
            ax.plot([predicted, predicted], [yi - 0.42, yi + 0.42], color="black", linewidth=2.2,
                    label=None if modelled else "bytes model: SoA x 36 / DRAM bytes per particle")
            modelled = True
            right = max(right, predicted)
            note += f"; model {row['bytes_model_vs_soa']:.4g}, error {row['bytes_model_error']:+.1%}"
        ax.annotate(note, xy=(right, yi), xytext=(6, 0), textcoords="offset points", va="center",
                    fontsize=STYLE["note_size"])
    ax.set_yticks(y, [PARTICLE_LABELS[v] for v in rows.index])
    ax.set_xlim(0, rows["gbps"].max() * 1.75)
    ax.xaxis.set_major_formatter(FuncFormatter(plain_number))
    ax.tick_params(axis="y", length=0)
    ax.legend(handles=[Patch(color=PALETTE[0], label="our kernels"),
                       Patch(color=STYLE["reference_bar_color"], label="CuPy"),
                       *ax.get_legend_handles_labels()[0]],
              loc="lower right", fontsize=STYLE["legend_size"] - 0.5, frameon=False)
    fig = finish(fig, ax, "Particle update x += v*dt: useful bandwidth by layout",
                 "Useful bandwidth (GB/s): 36 bytes per particle / time", "", provenance)
    ax.grid(False, axis="y")
    return fig


def waves(table: pd.DataFrame, reference_gbps: float | None = None, provenance: str | None = None) -> Figure:
    """The grid-stride float4 copy against the waves of resident blocks its grid holds: useful GB/s
    (axis from 0, CuPy's copy as a line) and, where Nsight Compute recorded it, how much longer the
    busiest SM was active than the least busy one. ``table``: ``lessons.coalescing.waves_table``."""
    fig = plt.figure(figsize=(8.0, 5.6), layout="constrained")
    plt.close(fig)
    top, bottom = fig.subplots(2, 1, sharex=True, height_ratios=[2, 1])
    x = table["waves"].to_numpy()
    top.plot(x, table["gbps"], color=PALETTE[0], marker="o", markersize=STYLE["marker_size"],
             linewidth=STYLE["line_width"], label="copy_w16_grid_stride")
    for xi, value in zip(x, table["gbps"], strict=True):
        top.annotate(f"{value:,.0f}", xy=(xi, value), xytext=(0, -14), textcoords="offset points",
                     ha="center", fontsize=STYLE["note_size"] - 1)
    if reference_gbps:
        top.axhline(reference_gbps, color=STYLE["ceiling_color"], linestyle="--", linewidth=1.2,
                    label=f"CuPy copy, same run: {reference_gbps:,.0f} GB/s")
    top.set_ylim(0, max(table["gbps"].max(), reference_gbps or 0) * 1.15)
    top.yaxis.set_major_formatter(FuncFormatter(plain_number))
    finish(fig, top, "Grid-stride float4 copy, 1 GiB per buffer: waves of blocks", "",
           "Useful bandwidth (GB/s)", None, legend_loc="lower right")
    spread = table[table["sm_max_over_min"].notna()]
    bottom.bar(spread["waves"], 100 * (spread["sm_max_over_min"] - 1), width=0.35 * spread["waves"],
               color=PALETTE[1])
    for xi, value in zip(spread["waves"], spread["sm_max_over_min"], strict=True):
        bottom.annotate(f"{100 * (value - 1):.1f}%", xy=(xi, 100 * (value - 1)), xytext=(0, 2),
                        textcoords="offset points", ha="center", fontsize=STYLE["note_size"] - 1)
    bottom.set_ylim(0, max(5.0, 100 * (spread["sm_max_over_min"].max() - 1) * 1.3) if len(spread) else 5)
    for xi in sorted(set(x) - set(spread["waves"])):  # no bar is not a zero: say so
        bottom.annotate("not\nprofiled", xy=(xi, 0), xytext=(0, 3), textcoords="offset points", ha="center",
                        va="bottom", fontsize=STYLE["note_size"] - 1.5, color=STYLE["datasheet_color"])
    for axis in (top, bottom):
        _stride_axis(axis, x)
    finish(fig, bottom, "", "waves of resident blocks in the grid (1 = the grid fits on the GPU once)",
           "busiest SM active longer\nthan the least busy (%)", provenance)
    return fig
