"""Lesson 6's figures: the steps' fraction of cuBLAS, the tile search as a heatmap, shared
wavefronts per warp per k-step."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.colors import ListedColormap
from matplotlib.figure import Figure
from matplotlib.patches import Rectangle
from matplotlib.ticker import FuncFormatter

from . import charts
from .style import (
    LABEL_BOX,
    PALETTE,
    STYLE,
    finish,
    new_axes,
    with_alt,
)


def gemm_progression(
    fractions: pd.DataFrame,
    shapes: list[str] | None = None,
    reference_label: str = "cuBLAS SGEMM, same run",
    provenance: str | None = None,
    ax: Axes | None = None,
    title: str = "Each step as a share of cuBLAS",
    labels: list[str] | None = None,
) -> Figure:
    """Horizontal bars in teaching order (first step on top): each step's fraction of the
    reference at each shape (one bar per shape). ``fractions``: steps as rows, shapes as columns;
    a missing value (a step not timed at that shape) leaves its bar out. ``labels``: the rows' names
    (default: numbered from the index). The legend sits right of the axes, clear of the bars and of
    the 100% line."""
    shapes = [s for s in (shapes or list(fractions.columns)) if s in fractions.columns]
    if not shapes:
        raise ValueError("no shape to draw")
    fig, ax = new_axes(ax)
    steps = list(fractions.index)
    labels = labels or [f"{n + 1}. {s}" for n, s in enumerate(steps)]
    fig.set_figheight(1.6 + 0.38 * len(steps))
    fig.set_figwidth(STYLE["figsize"][0] + 1.6)
    height = 0.8 / len(shapes)
    base = np.arange(len(steps))[::-1].astype(float)
    for i, shape in enumerate(shapes):
        values = 100 * fractions[shape].to_numpy(dtype=float)
        y = base + 0.4 - height * (i + 0.5)
        shown = np.isfinite(values)
        ax.barh(y[shown], values[shown], height=height * 0.92, color=PALETTE[i % len(PALETTE)],
                label=shape.replace("^3", "³"))
        for yy, value in zip(y[shown], values[shown], strict=True):
            ax.annotate(f"{value:.0f}%", xy=(value, yy), xytext=(3, 0), textcoords="offset points",
                        va="center", fontsize=STYLE["note_size"] - 1)
        for yy in y[~shown]:  # say so, rather than leave a gap that reads as zero
            ax.annotate(f"not timed at {shape.replace('^3', '³')}", xy=(0, yy), xytext=(3, 0),
                        textcoords="offset points", va="center", fontsize=STYLE["note_size"] - 1,
                        color="#777777", fontstyle="italic")
    ax.axvline(100, color=STYLE["ceiling_color"], linestyle="-.", linewidth=1.2)
    ax.annotate(f"{reference_label}\n= 100%", xy=(100, 0.0), xycoords=("data", "axes fraction"),
                xytext=(4, 4), textcoords="offset points", ha="left", va="bottom",
                fontsize=STYLE["note_size"], color=STYLE["ceiling_color"])
    ax.set_yticks(base, labels)
    ax.set_xlim(0, max(125.0, np.nanmax(100 * fractions[shapes].to_numpy(dtype=float)) * 1.25))
    ax.xaxis.set_major_formatter(FuncFormatter(lambda value, _: f"{value:.0f}%"))
    ax.tick_params(axis="y", length=0)
    ax.legend(fontsize=STYLE["legend_size"], frameon=False, loc="upper left", bbox_to_anchor=(1.01, 1.0),
              title="matrix shape", title_fontsize=STYLE["legend_size"])
    fig = finish(fig, ax, title, f"GFLOP/s as a share of {reference_label} (%)", "", provenance)
    ax.grid(False, axis="y")
    return fig


def steps_roofline(
    bandwidth_gbps: float,
    peak_gflops: float,
    points: pd.DataFrame,
    provenance: str | None = None,
    title: str = "GEMM steps on the measured roof (2048³, intensity counted per block tile)",
) -> Figure:
    """The measured roof with one marker per kernel at its counted intensity (``points``: label,
    name, intensity, gflops, kind; from ``lessons.gemm.roofline_points``). Kernels sharing an
    intensity sit on one vertical: their labels are stacked beside it, each joined to its marker
    by a thin line, left of the column when the next intensity to the right is close."""
    drawn = points.assign(label="", dx=0.0, dy=0.0, ha="left")  # markers only: labels are placed below
    fig = charts.roofline(bandwidth_gbps, peak_gflops, points=drawn, provenance=provenance, title=title)
    fig.set_figheight(STYLE["figsize"][1] + 0.8)
    ax = fig.axes[0]
    ax.set_xlabel("arithmetic intensity counted from the block tile (FLOP/byte)",
                  fontsize=STYLE["label_size"])
    fig.canvas.draw()  # fix the layout, so that display coordinates hold
    to_points = 72 / fig.dpi
    columns = sorted(points["intensity"].unique())
    gap = STYLE["note_size"] + 1.5
    for number, intensity in enumerate(columns):
        group = points[points["intensity"] == intensity].sort_values("gflops")
        following = columns[number + 1] if number + 1 < len(columns) else None
        left = following is not None and following / intensity < 1.6 and len(group) > 1
        ys = [ax.transData.transform((intensity, g))[1] * to_points for g in group["gflops"]]
        placed: list[float] = []
        clusters: list[list[int]] = []
        for i, y in enumerate(ys):  # bottom-up, each at least one line above the one before
            pushed = bool(placed) and placed[-1] + gap > y
            placed.append(placed[-1] + gap if pushed else y)
            if pushed:
                clusters[-1].append(i)
            else:
                clusters.append([i])
        for cluster in clusters:  # each stack centred on its own markers
            shift = sum(ys[i] - placed[i] for i in cluster) / len(cluster)
            for i in cluster:
                placed[i] += shift
        for (_, point), y, y_label in zip(group.iterrows(), ys, placed, strict=True):
            dx = -9.0 if left else 9.0
            ax.annotate(str(point["label"]), xy=(point["intensity"], point["gflops"]),
                        xytext=(dx, y_label - y), textcoords="offset points", ha="right" if left else "left",
                        va="center", fontsize=STYLE["note_size"], bbox=LABEL_BOX,
                        arrowprops={"arrowstyle": "-", "color": "#999999", "linewidth": 0.6,
                                    "shrinkA": 0, "shrinkB": 3})
    described = "; ".join(f"{p['label']} {p['name']} {p['gflops']:,.0f} GFLOP/s at "
                          f"{p['intensity']:.3g} FLOP/byte" for _, p in points.iterrows())
    return with_alt(fig, f"Log-log roofline: bandwidth roof {bandwidth_gbps:,.0f} GB/s, FP32 roof "
                    f"{peak_gflops:,.0f} GFLOP/s, ridge at {peak_gflops / bandwidth_gbps:.1f} FLOP/byte; one "
                    "marker per kernel at the intensity counted from its block tile, labelled by step: "
                    f"{described}.")


def search_heatmap(
    fractions: pd.DataFrame,
    provenance: str | None = None,
    ax: Axes | None = None,
    title: str = "The tile search: each tile's share of cuBLAS, shape by shape",
    column_labels: list[str] | None = None,
    xlabel: str = "matrix shape (M x N x K)",
) -> Figure:
    """Tiles (rows) by shapes (columns), each cell the tile's fraction of cuBLAS at that shape
    (``lessons.gemm.autotune_table(table, "of_cublas")``); a tile not timed at a shape is marked "not timed".
    ``column_labels`` replace the shapes' names under the columns.
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
        else:
            ax.text(j, i, "not timed", ha="center", va="center", fontsize=STYLE["note_size"] - 1,
                    color="#777777", fontstyle="italic")
    for j in range(values.shape[1]):
        column = values[:, j]
        if np.isfinite(column).any():
            best = int(np.nanargmax(column))
            ax.add_patch(Rectangle((j - 0.5, best - 0.5), 1, 1, fill=False, edgecolor="#D55E00",
                                   linewidth=2.0))
    ax.set_xticks(range(values.shape[1]), column_labels or list(fractions.columns), rotation=30, ha="right")
    ax.set_yticks(range(values.shape[0]), list(fractions.index))
    colorbar = fig.colorbar(image, ax=ax, shrink=0.8)
    colorbar.set_label("% of cuBLAS SGEMM, same run", fontsize=STYLE["label_size"])
    fig = finish(fig, ax, title, xlabel, "", provenance)
    ax.grid(False)
    return fig


def wavefronts(
    counts: pd.DataFrame,
    provenance: str | None = None,
    ax: Axes | None = None,
    title: str = "Shared-memory wavefronts per warp per k-step",
) -> Figure:
    """Two bars per kernel: the pair rule's count ("model") and Nsight Compute's ("ncu"), from
    ``lessons.gemm.wavefront_table`` (its "label" column names the bars, else its index; "lanes" and
    "ffma", where present, are written under the name); a missing value is written "no counter"
    (ncu) or "-" (model) where its bar would be."""
    fig, ax = new_axes(ax)
    fig.set_figwidth(STYLE["figsize"][0] + 1.0)
    kernels = list(counts.get("label", counts.index))
    labels = []
    for i, kernel in enumerate(kernels):
        named = "lanes" in counts and counts["lanes"].iloc[i] != kernel
        parts = [str(counts["lanes"].iloc[i])] if named else []
        if "ffma" in counts:
            parts.append(f"{int(counts['ffma'].iloc[i])} FFMA")
        labels.append(f"{kernel}\n({', '.join(parts)})" if parts else kernel)
    base = np.arange(len(kernels), dtype=float)
    for i, (column, color) in enumerate((("model", PALETTE[0]), ("ncu", PALETTE[1]))):
        values = counts[column].to_numpy(dtype=float)
        shown = np.isfinite(values)
        x = base + (i - 0.5) * 0.38
        ax.bar(x[shown], values[shown], width=0.36, color=color,
               label="pair rule (counted from the lanes)" if column == "model" else "Nsight Compute, H200")
        for xx, value, ok in zip(x, values, shown, strict=True):
            text = f"{value:.1f}" if ok else ("no counter" if column == "ncu" else "-")
            ax.annotate(text, xy=(xx, value if ok else 0.0), xytext=(0, 2), textcoords="offset points",
                        ha="center", va="bottom", fontsize=STYLE["note_size"] - 1,
                        rotation=0 if ok else 90)
    ax.set_xticks(base, labels, rotation=30, ha="right", fontsize=STYLE["tick_size"] - 1)
    ax.set_ylim(0, float(np.nanmax(counts[["model", "ncu"]].to_numpy(dtype=float))) * 1.3)
    return finish(fig, ax, title, "", "wavefronts per warp per k-step", provenance, legend_loc="upper right")


def tiling_hierarchy(
    owners: dict,
    tile,
    shape: tuple[int, int, int] = (512, 512, 512),
    k_tile: int = 16,
    title: str = "The tiling hierarchy: block tile, warp, thread",
) -> Figure:
    """Three levels of one GEMM, drawn from the lesson's tiles (``tile``: a ``gemm_codegen.Tile``;
    ``owners``: ``lessons.gemm.output_owners(tile)``). Left: C = A B for an M x N x K ``shape``, one
    block's tile of C, the panels of A and B it reads and the k-tile now in shared memory (the next
    ones to its right and below). Right: that block tile coloured by warp. Bottom: warp 0's outputs
    coloured by lane, lane 0's micro-tile outlined."""
    m, n, k = shape
    bm, bn, bk = tile.bm, tile.bn, tile.bk
    fig = plt.figure(figsize=(9.0, 7.4), layout="constrained")
    plt.close(fig)
    grid = fig.add_gridspec(2, 2, height_ratios=[3.2, 1.4], width_ratios=[1.15, 1.0])
    ax, ax_block = fig.add_subplot(grid[0, 0]), fig.add_subplot(grid[0, 1])
    ax_warp = fig.add_subplot(grid[1, :])

    gap = k * 0.12
    x_c, y_c = k + gap, k + gap  # C's corner; y grows downwards
    block_row, block_col = 1, 1
    r0, c0 = y_c + block_row * bm, x_c + block_col * bn
    k0 = k_tile * bk

    def box(x, y, w, h, **style):
        ax.add_patch(Rectangle((x, y), w, h, **style))

    for x, y, w, h, name in ((0, y_c, k, m, f"A  ({m} x {k})"), (x_c, 0, n, k, f"B  ({k} x {n})"),
                             (x_c, y_c, n, m, f"C  ({m} x {n})")):
        box(x, y, w, h, fill=False, edgecolor="black", linewidth=1.2)
        ax.text(x + w / 2, y + h + gap * 0.35, name, ha="center", va="top", fontsize=STYLE["note_size"])
    for i in range(1, m // bm):
        ax.plot([x_c, x_c + n], [y_c + i * bm] * 2, color="#bbbbbb", linewidth=0.6)
    for j in range(1, n // bn):
        ax.plot([x_c + j * bn] * 2, [y_c, y_c + m], color="#bbbbbb", linewidth=0.6)
    box(c0, r0, bn, bm, facecolor=PALETTE[1], alpha=0.55, edgecolor=PALETTE[1])
    box(0, r0, k, bm, facecolor=PALETTE[0], alpha=0.18, edgecolor="none")  # A's panel: the block's rows
    box(c0, 0, bn, k, facecolor=PALETTE[2], alpha=0.18, edgecolor="none")  # B's panel: its columns
    box(k0, r0, bk, bm, facecolor=PALETTE[0], alpha=0.9, edgecolor="none")
    box(c0, k0, bn, bk, facecolor=PALETTE[2], alpha=0.9, edgecolor="none")
    arrow = {"arrowstyle": "->", "color": "black", "linewidth": 1.0}
    ahead = k // 4  # how far the arrows reach along K
    ax.annotate("", xy=(k0 + bk + ahead, r0 + bm / 2), xytext=(k0 + bk + 2, r0 + bm / 2), arrowprops=arrow)
    ax.annotate("", xy=(c0 + bn / 2, k0 + bk + ahead), xytext=(c0 + bn / 2, k0 + bk + 2), arrowprops=arrow)
    ax.text(k0 + bk + 6, r0 + 6, "next k-tiles", ha="left", va="top", fontsize=STYLE["note_size"] - 1)
    ax.text(c0 + bn / 2, r0 + bm / 2, f"block tile\n{bm} x {bn}", ha="center", va="center",
            fontsize=STYLE["note_size"], color="white")
    ax.text(k0 + bk + 4, r0 + bm + gap * 0.05, f"k-tile: {bm} x {bk} of A", ha="left", va="top",
            fontsize=STYLE["note_size"] - 1, color=PALETTE[0])
    ax.text(c0 + bn + 6, k0 + bk / 2, f"{bk} x {bn}\nof B", ha="left", va="center",
            fontsize=STYLE["note_size"] - 1, color=PALETTE[2])
    ax.set_xlim(-gap * 0.2, x_c + n + gap * 0.6)
    ax.set_ylim(y_c + m + gap * 0.6, -gap * 0.2)
    ax.set_aspect("equal")
    ax.axis("off")
    ax.set_title(f"1. a block's tile of C and its panels (M = N = K = {m})", fontsize=STYLE["label_size"],
                 loc="left")

    warps = owners["warp"]
    count = int(warps.max()) + 1
    colors = ListedColormap([plt.get_cmap("Pastel1")(i % 9) for i in range(count)])
    ax_block.imshow(warps, cmap=colors, vmin=-0.5, vmax=count - 0.5, aspect="auto",
                    interpolation="nearest")
    for w in range(count):
        rows, cols = np.nonzero(warps == w)
        ax_block.text(cols.mean(), rows.mean(), f"warp {w}", ha="center", va="center",
                      fontsize=STYLE["note_size"] - 1, color="black")
    ax_block.set_title(f"2. the block tile by warp ({tile.threads // 32} warps)",
                       fontsize=STYLE["label_size"], loc="left")
    ax_block.set_xlabel("column of the block tile", fontsize=STYLE["tick_size"])
    ax_block.set_ylabel("row", fontsize=STYLE["tick_size"])
    ax_block.tick_params(labelsize=STYLE["tick_size"] - 1)

    rows, cols = np.nonzero(warps == 0)
    top, bottom, left, right = rows.min(), rows.max() + 1, cols.min(), cols.max() + 1
    lanes = np.ma.masked_where(warps[top:bottom, left:right] != 0, owners["lane"][top:bottom, left:right])
    ax_warp.imshow(lanes, cmap="hsv", vmin=0, vmax=32, aspect="auto", interpolation="nearest",
                   extent=(left - 0.5, right - 0.5, bottom - 0.5, top - 0.5), alpha=0.55)
    for lane, style in ((0, "-"), (1, "--")):  # pieces start on multiples of 4 (rows and columns)
        for i, j in zip(*np.nonzero(owners["thread"] == lane), strict=True):
            if i % 4 == 0 and j % 4 == 0:
                ax_warp.add_patch(Rectangle((j - 0.5, i - 0.5), 4, 4, fill=False, edgecolor="black",
                                            linewidth=1.6, linestyle=style))
    ax_warp.set_title(f"3. warp 0's {bottom - top} x {right - left} outputs, colour = lane: lane 0's "
                      f"{tile.tm} x {tile.tn} outlined (lane 1's dashed)",
                      fontsize=STYLE["label_size"], loc="left")
    ax_warp.set_yticks(range(top, bottom, 4))
    ax_warp.set_xticks(range(left, right + 1, 32))
    ax_warp.set_xlabel("column of the block tile", fontsize=STYLE["tick_size"])
    ax_warp.set_ylabel("row", fontsize=STYLE["tick_size"])
    ax_warp.tick_params(labelsize=STYLE["tick_size"] - 1)
    fig.suptitle(title, fontsize=STYLE["title_size"], x=0.01, ha="left")
    return fig


def bank_map(
    maps: dict,
    title: str = "One warp's 16-byte load of B, bank by bank",
) -> Figure:
    """One panel per lane layout (``maps``: label -> ``lessons.gemm.lds128_bank_map``): the phases
    that serve the warp (rows) by the 32 banks (columns); each cell names the lanes whose words fall
    in that bank, red where the phase asks a bank for two or more different words (a conflict)."""
    fig = plt.figure(figsize=(11.0, 1.2 + 1.55 * len(maps)), layout="constrained")
    plt.close(fig)
    axes = fig.subplots(len(maps), 1, squeeze=False)[:, 0]
    for ax, (label, words) in zip(axes, maps.items(), strict=True):
        phases = int(words["phase"].max()) + 1
        ax.set_xlim(-0.5, 31.5)
        ax.set_ylim(phases - 0.5, -0.5)
        cells = {key: (sorted(set(group["lane"])), int(group["words_in_bank"].iloc[0]))
                 for key, group in words.groupby(["phase", "bank"])}
        per_phase = words.groupby("phase")["words_in_bank"].max()
        lanes_of = words.groupby("phase")["lane"].agg(["min", "max"])
        total = int(per_phase.sum())
        for phase in range(phases):
            for bank in range(32):
                lanes, count = cells.get((phase, bank), ([], 0))
                color = "white" if not lanes else ("#f4a582" if count > 1 else "#d1e5f0")
                ax.add_patch(Rectangle((bank - 0.5, phase - 0.5), 1, 1, facecolor=color, edgecolor="white"))
                if lanes:
                    ax.text(bank, phase, ",".join(str(v) for v in lanes), ha="center", va="center",
                            fontsize=6.2)
            ax.text(31.9, phase, f"lanes {lanes_of.loc[phase, 'min']}-{lanes_of.loc[phase, 'max']}: "
                    f"{int(per_phase[phase])} wavefront(s)", ha="left", va="center",
                    fontsize=STYLE["note_size"] - 1)
        ax.set_title(f"{label}: {total} wavefronts", fontsize=STYLE["label_size"], loc="left")
        ax.set_xticks(range(0, 32, 4))
        ax.set_yticks(range(phases), [f"phase {p}" for p in range(phases)], fontsize=STYLE["tick_size"] - 1)
        ax.set_xlabel("bank", fontsize=STYLE["tick_size"])
        ax.tick_params(labelsize=STYLE["tick_size"] - 1, length=0)
        for side in ax.spines.values():
            side.set_visible(False)
    fig.suptitle(title, fontsize=STYLE["title_size"], x=0.01, ha="left")
    return fig


def pipeline_timelines(
    timelines: dict,
    title: str = "One block's k-loop with one buffer and with two (schematic)",
) -> Figure:
    """One panel per timeline (``timelines``: label -> ``lessons.gemm.pipeline_timeline``): the global
    loads, stores to shared memory and FMAs of each k-tile as bars in time, coloured by k-tile."""
    fig = plt.figure(figsize=(9.0, 1.0 + 1.55 * len(timelines)), layout="constrained")
    plt.close(fig)
    axes = fig.subplots(len(timelines), 1, squeeze=False, sharex=True)[:, 0]
    works = ["global loads", "stores to shared", "FMAs"]
    for ax, (label, table) in zip(axes, timelines.items(), strict=True):
        for _, row in table.iterrows():
            y = works.index(row["work"])
            ax.barh(y, row["end"] - row["start"], left=row["start"], height=0.6,
                    color=PALETTE[int(row["tile"]) % len(PALETTE)], edgecolor="white")
            if row["end"] - row["start"] > 0.3:
                ax.text((row["start"] + row["end"]) / 2, y, f"tile {int(row['tile'])}", ha="center",
                        va="center", fontsize=STYLE["note_size"] - 1, color="white")
        end = table["end"].max()
        ax.set_yticks(range(len(works)), works, fontsize=STYLE["tick_size"])
        ax.set_ylim(len(works) - 0.4, -0.6)
        ax.set_title(f"{label}: {int(table['tile'].max()) + 1} k-tiles in {end:.2f}",
                     fontsize=STYLE["label_size"], loc="left")
        ax.grid(True, axis="x", color=STYLE["grid_color"], linewidth=0.7)
        ax.set_axisbelow(True)
        for side in ("top", "right"):
            ax.spines[side].set_visible(False)
    axes[-1].set_xlabel("time (one k-tile's FMAs = 1)", fontsize=STYLE["label_size"])
    fig.suptitle(title, fontsize=STYLE["title_size"], x=0.01, ha="left")
    return fig


def stall_reasons(
    table: pd.DataFrame,
    labels: dict | None = None,
    provenance: str | None = None,
    ax: Axes | None = None,
    title: str = "Why warps did not issue (Nsight Compute, 2048³)",
) -> Figure:
    """Grouped horizontal bars: warps stalled per issued instruction, by reason (rows of ``table``,
    from ``lessons.gemm.stall_table``), one bar per kernel (columns); its row "issue slots busy (%)"
    goes into the legend."""
    fig, ax = new_axes(ax)
    fig.set_figheight(4.8)
    labels = labels or {}
    busy = table.loc["issue slots busy (%)"]
    reasons = table.drop(index="issue slots busy (%)")
    base = np.arange(len(reasons))[::-1].astype(float)
    height = 0.8 / len(reasons.columns)
    for i, case in enumerate(reasons.columns):
        values = reasons[case].to_numpy(dtype=float)
        y = base + 0.4 - height * (i + 0.5)
        ax.barh(y, values, height=height * 0.92, color=PALETTE[i % len(PALETTE)],
                label=f"{labels.get(case, case)}: issue slots {busy[case]:.0f}% busy")
        for yy, value in zip(y, values, strict=True):
            ax.annotate(f"{value:.2f}", xy=(value, yy), xytext=(3, 0), textcoords="offset points",
                        va="center", fontsize=STYLE["note_size"] - 1.5)
    ax.set_yticks(base, list(reasons.index), fontsize=STYLE["tick_size"])
    ax.set_xlim(0, float(np.nanmax(reasons.to_numpy(dtype=float))) * 1.25)
    ax.tick_params(axis="y", length=0)
    finish(fig, ax, title, "warps stalled per issued instruction", "", provenance, legend_loc="upper right")
    ax.grid(False, axis="y")
    return fig


def lane_grid(layouts: dict, title: str = "Which lanes of a warp share a piece of A or of B") -> Figure:
    """One panel per lane layout (``layouts``: label -> DataFrame of lane, row, col: the row and column
    of the warp's grid of micro-tiles each lane owns). Each cell names its lane; a column's lanes read
    the same 16-byte pieces of B, a row's the same pieces of A. Colours: the quarter-warp (lanes
    0-7, 8-15, ...) a 16-byte load serves together."""
    fig = plt.figure(figsize=(10.5, 1.0 + 1.1 * len(layouts) + 0.32 * sum(
        int(v["row"].max()) + 1 for v in layouts.values())), layout="constrained")
    plt.close(fig)
    heights = [int(v["row"].max()) + 1 for v in layouts.values()]
    axes = fig.subplots(len(layouts), 1, squeeze=False, height_ratios=heights)[:, 0]
    for ax, (label, lanes) in zip(axes, layouts.items(), strict=True):
        rows, cols = int(lanes["row"].max()) + 1, int(lanes["col"].max()) + 1
        ax.set_xlim(-0.5, cols - 0.5)
        ax.set_ylim(rows - 0.5, -0.5)
        for _, lane in lanes.iterrows():
            quarter = int(lane["lane"]) // 8
            ax.add_patch(Rectangle((lane["col"] - 0.5, lane["row"] - 0.5), 1, 1, facecolor=PALETTE[quarter],
                                   alpha=0.35, edgecolor="white", linewidth=2))
            ax.text(lane["col"], lane["row"], str(int(lane["lane"])), ha="center", va="center",
                    fontsize=STYLE["note_size"])
        ax.set_title(label, fontsize=STYLE["label_size"], loc="left")
        ax.set_xticks(range(cols), [str(c) for c in range(cols)], fontsize=STYLE["tick_size"] - 1)
        ax.set_yticks(range(rows), [str(r) for r in range(rows)], fontsize=STYLE["tick_size"] - 1)
        ax.set_xlabel("micro-tile column (its lanes read the same pieces of B)", fontsize=STYLE["tick_size"])
        ax.set_ylabel("micro-tile row\n(same pieces of A)", fontsize=STYLE["tick_size"])
        ax.tick_params(length=0)
        for side in ax.spines.values():
            side.set_visible(False)
    handles = [Rectangle((0, 0), 1, 1, facecolor=PALETTE[q], alpha=0.35) for q in range(4)]
    fig.legend(handles, [f"lanes {8 * q}-{8 * q + 7}" for q in range(4)], loc="outside lower center", ncol=4,
               fontsize=STYLE["tick_size"], frameon=False)
    fig.suptitle(title, fontsize=STYLE["title_size"], x=0.01, ha="left")
    return fig
