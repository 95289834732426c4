"""Lesson 7's figures: the mma.sync fragment layout and a cp.async pipeline (concept pictures drawn from
the lesson's layout functions and pipeline model), TF32's error against K, the mma.sync ceiling, the TF32
GEMM steps beside cuBLAS, and lesson 6's kernel with cp.async pipelines beside its counters."""

from __future__ import annotations

import numpy as np
import pandas as pd
from matplotlib.figure import Figure
from matplotlib.patches import Patch, Rectangle
from matplotlib.ticker import FixedLocator, FuncFormatter, NullFormatter

from .style import (
    PALETTE,
    STYLE,
    add_caption,
    finish,
    new_axes,
    plain_number,
    with_alt,
)

GROUP_COLORS = [*PALETTE[:6], "#F0E442", "#999999"]  # one per groupID g = lane // 4 (8 groups)


def _figure(width: float, height: float) -> Figure:
    fig, ax = new_axes(None)
    fig.set_size_inches(width, height)
    fig.delaxes(ax)
    return fig


def fragment_layout(owners: dict[str, np.ndarray]) -> Figure:
    """Which lane holds each element of A (16x8), B (8x8) and C (16x8) of one mma.sync.m16n8k8, and in
    which register: ``owners`` maps "A", "B", "C" to arrays of 'T<lane> <register>' strings
    (``kernels.tensor_cores.fragment_owners``). Cells are coloured by the lane's groupID, lane // 4."""
    fig = _figure(11.5, 6.4)
    grid = fig.add_gridspec(1, 3, width_ratios=[8, 8, 8])
    titles = {"A": "A (16×8, row-major): a0..a3", "B": "B (8×8, k × n): b0, b1",
              "C": "C and D (16×8): c0..c3 → d0..d3"}
    labels = {"A": ("k (column of A)", "m (row)"), "B": ("n (column of B)", "k (row)"),
              "C": ("n (column)", "m (row)")}
    for position, name in enumerate(("A", "B", "C")):
        ax = fig.add_subplot(grid[0, position])
        cells = owners[name]
        rows, cols = cells.shape
        for r in range(rows):
            for c in range(cols):
                lane_text, register = cells[r, c].split()
                lane = int(lane_text[1:])
                ax.add_patch(Rectangle((c, r), 1, 1, facecolor=GROUP_COLORS[lane // 4], alpha=0.32,
                                       edgecolor="white", linewidth=1.2))
                ax.text(c + 0.5, r + 0.5, f"{lane}\n{register}", ha="center", va="center", fontsize=6.6,
                        linespacing=0.95)
        ax.set_xlim(0, cols)
        ax.set_ylim(rows, 0)
        ax.set_aspect("equal")
        ax.set_anchor("N")  # B, half as tall, at the top beside A and C
        ax.xaxis.tick_top()
        ax.xaxis.set_label_position("top")
        ax.set_xticks(np.arange(cols) + 0.5, range(cols), fontsize=STYLE["tick_size"] - 1)
        ax.set_yticks(np.arange(rows) + 0.5, range(rows), fontsize=STYLE["tick_size"] - 1)
        ax.tick_params(length=0)
        for side in ("top", "right", "bottom", "left"):
            ax.spines[side].set_visible(False)
        ax.set_title(titles[name], fontsize=STYLE["label_size"], loc="left", pad=22)
        ax.set_xlabel(labels[name][0], fontsize=STYLE["label_size"] - 1)
        ax.set_ylabel(labels[name][1], fontsize=STYLE["label_size"] - 1)
    fig.suptitle("One mma.sync.m16n8k8 (TF32): the lane that holds each element, and in which register",
                 fontsize=STYLE["title_size"], x=0.01, ha="left")
    fig.legend(handles=[Patch(facecolor=GROUP_COLORS[g], alpha=0.32, label=f"lanes {4 * g}-{4 * g + 3}")
                        for g in range(8)],
               loc="outside lower center", ncols=8, fontsize=STYLE["legend_size"] - 1, frameon=False,
               title="colour: groupID g = lane // 4;  each cell: lane, register",
               title_fontsize=STYLE["legend_size"] - 1)
    a, c = owners["A"], owners["C"]
    return with_alt(fig, "Three grids, A 16 by 8, B 8 by 8 and C 16 by 8, each cell labelled with the lane "
                    f"that holds it and the register: A[0][0] is {a[0, 0]}, A[8][4] is {a[8, 4]}, C[0][1] is "
                    f"{c[0, 1]}; "
                    "lanes 4g to 4g+3 share rows g and g+8 of A and C and column g of B.")


def slab_k_order(order: list[tuple[int, int, int, int]]) -> Figure:
    """One 16-deep slab of A's row (and B's column): which k-step and which column of the MMA each k
    feeds, from ``kernels.tensor_cores.slab_k_order()`` ((k, step, t, column) per k). Boxes mark the
    four k's one lane loads with one 16-byte load; colours follow the lane's t."""
    fig = _figure(11.0, 3.3)
    ax = fig.add_subplot(1, 1, 1)
    steps = sorted({step for _, step, _, _ in order})
    width = max(k for k, _, _, _ in order) + 1
    for k, step, t, column in order:
        register = "a0 · b0" if column < 4 else "a2 · b1"
        ax.add_patch(Rectangle((k, step), 1, 1, facecolor=PALETTE[t], alpha=0.35, edgecolor="white",
                               linewidth=1.2))
        ax.text(k + 0.5, step + 0.5, f"col {column}\n{register}", ha="center", va="center",
                fontsize=STYLE["note_size"] - 1.5, linespacing=1.0)
    for t in sorted({t for _, _, t, _ in order}):
        ks = [k for k, _, lane_t, _ in order if lane_t == t]
        low, high = min(ks), max(ks) + 1
        ax.add_patch(Rectangle((low + 0.04, 0.03), high - low - 0.08, len(steps) - 0.06, fill=False,
                               edgecolor=PALETTE[t], linewidth=2.0))
        ax.text((low + high) / 2, -0.12, f"lanes with t = {t}: one 16-byte load, k {low}–{high - 1}",
                ha="center", va="bottom", fontsize=STYLE["note_size"] - 1, color=PALETTE[t])
    ax.set_xlim(0, width)
    ax.set_ylim(len(steps), -0.55)
    ax.set_xticks(np.arange(width) + 0.5, range(width), fontsize=STYLE["tick_size"] - 1)
    ax.set_yticks([s + 0.5 for s in steps], [f"MMA of k-step {s}" for s in steps],
                  fontsize=STYLE["tick_size"])
    ax.set_xlabel("k inside the 16-deep slab (as stored: A[row][k], B[k][col])",
                  fontsize=STYLE["label_size"] - 1)
    ax.tick_params(length=0)
    for side in ("top", "right", "bottom", "left"):
        ax.spines[side].set_visible(False)
    ax.set_title("Each cell: the MMA's column of A (= row of B) that this k becomes, and the registers",
                 fontsize=STYLE["label_size"] - 1, loc="left", pad=4)
    fig.suptitle("The generated kernels permute k: one 16-byte load of A feeds two MMAs, B follows",
                 fontsize=STYLE["title_size"], x=0.01, ha="left")
    first = {step: [k for k, s, _, _ in order if s == step] for step in steps}
    return with_alt(fig, "A 2 by 16 grid: k 0 to 15 of a slab across, the two MMAs (k-steps) down. "
                    + "; ".join(f"k-step {s} takes k {', '.join(map(str, ks))}" for s, ks in first.items())
                    + ". Lane t's 16-byte load covers k 4t to 4t+3: its first two k's become columns t and "
                    "t+4 of one MMA, the other two of the next.")


def warp_tile(bm: int, bn: int, wm: int, wn: int) -> Figure:
    """The warp-tile step: left, a block's bm x bn tile of C split among its warps (wm x wn each); right,
    one warp's tile as (wm/16) x (wn/8) MMA tiles of 16x8, the A fragments (one per row of MMA tiles)
    and B fragments (one per column) it loads per k-step, each reused across the row or column."""
    m_tiles, n_tiles = wm // 16, wn // 8
    warps_m, warps_n = bm // wm, bn // wn
    fig = _figure(11.5, 5.2)
    left, right = fig.add_subplot(1, 2, 1), fig.add_subplot(1, 2, 2)
    for w in range(warps_m * warps_n):
        row, col = w // warps_n, w % warps_n
        left.add_patch(Rectangle((col * wn, row * wm), wn, wm, facecolor=GROUP_COLORS[w % 8], alpha=0.3,
                                 edgecolor="white", linewidth=2))
        left.text(col * wn + wn / 2, row * wm + wm / 2, f"warp {w}\n{wm}×{wn}", ha="center", va="center",
                  fontsize=STYLE["note_size"])
    left.set_xlim(0, bn)
    left.set_ylim(bm, 0)
    left.set_aspect("equal")
    left.set_title(f"A block's {bm}×{bn} tile of C: {warps_m * warps_n} warps",
                   fontsize=STYLE["label_size"] - 1, loc="left")
    left.set_xticks([0, bn], [0, bn])
    left.set_yticks([0, bm], [0, bm])
    # one warp: MMA tiles, with the A strip to the left and the B strip on top
    ax = right
    for i in range(m_tiles):
        for j in range(n_tiles):
            ax.add_patch(Rectangle((j * 8, i * 16), 8, 16, facecolor=GROUP_COLORS[0], alpha=0.18,
                                   edgecolor="white", linewidth=1.5))
            ax.text(j * 8 + 4, i * 16 + 8, f"acc{i}_{j}", ha="center", va="center",
                    fontsize=STYLE["note_size"] - 2)
    for i in range(m_tiles):
        ax.add_patch(Rectangle((-10, i * 16), 8, 16, facecolor=GROUP_COLORS[1], alpha=0.45, edgecolor="white",
                               linewidth=1.5))
        ax.text(-6, i * 16 + 8, f"A{i}", ha="center", va="center", fontsize=STYLE["note_size"] - 1)
    for j in range(n_tiles):
        ax.add_patch(Rectangle((j * 8, -10), 8, 8, facecolor=GROUP_COLORS[2], alpha=0.45, edgecolor="white",
                               linewidth=1.5))
        ax.text(j * 8 + 4, -6, f"B{j}", ha="center", va="center", fontsize=STYLE["note_size"] - 1)
    ax.set_xlim(-11, wn + 1)
    ax.set_ylim(wm + 1, -11)
    ax.set_aspect("equal")
    ax.axis("off")
    ax.set_title(f"Warp 0's {wm}×{wn}: {m_tiles * n_tiles} MMAs a k-step,\n{m_tiles} A + {n_tiles} B "
                 "fragments loaded", fontsize=STYLE["label_size"] - 1, loc="left")
    fig.suptitle("The warp tile: each fragment, loaded once, feeds a whole row or column of MMAs",
                 fontsize=STYLE["title_size"], x=0.01, ha="left")
    return with_alt(fig, f"Left: a {bm} by {bn} block tile of C divided into {warps_m * warps_n} warp tiles "
                    f"of {wm} by {wn}. Right: one warp tile as a {m_tiles} by {n_tiles} grid of 16 by 8 MMA "
                    f"tiles acc0_0 to acc{m_tiles - 1}_{n_tiles - 1}, with {m_tiles} A fragments A0 to "
                    f"A{m_tiles - 1} along its rows and {n_tiles} B fragments B0 to B{n_tiles - 1} along its "
                    f"columns: fragment Ai feeds the {n_tiles} MMAs of row i, Bj the {m_tiles} of column j.")


def steady_period(schedule: pd.DataFrame, stages: int) -> float:
    """Time per tile once a pipeline is running: the last ``stages - 1`` intervals between computes
    (a pattern repeats every ``stages - 1`` tiles), start-up excluded."""
    starts = schedule[schedule["what"] == "compute"].sort_values("tile")["start"].to_numpy()
    span = min(max(1, stages - 1), len(starts) - 1)
    return float(starts[-1] - starts[-1 - span]) / span if span > 0 else float("nan")


def pipeline_timeline(schedules: dict[int, pd.DataFrame]) -> Figure:
    """A time line per pipeline depth: each tile's copy (in flight) and its compute, from
    ``lessons.tensor_cores.pipeline_schedule``; the copies of a deeper pipeline overlap the computes."""
    depths = sorted(schedules)
    heights = [max(1, s - 1) + 1 for s in depths]
    fig = _figure(9.5, 1.0 + 0.42 * sum(heights) + 0.45 * len(depths))
    grid = fig.add_gridspec(len(depths), 1, height_ratios=heights)
    end = max(float(s["end"].max()) for s in schedules.values())
    copy_time = None
    periods = {}
    for position, stages in enumerate(depths):
        ax = fig.add_subplot(grid[position, 0])
        schedule = schedules[stages]
        slots = max(1, stages - 1)
        for row in schedule.itertuples():
            y = 0 if row.what == "compute" else 1 + (row.tile % slots)
            color = PALETTE[row.tile % len(PALETTE)]
            ax.add_patch(Rectangle((row.start, y + 0.1), row.end - row.start, 0.8, facecolor=color,
                                   alpha=0.9 if row.what == "compute" else 0.35, edgecolor=color))
            text = str(row.tile) if row.what == "compute" else f"copy {row.tile}"
            ax.text((row.start + row.end) / 2, y + 0.5, text,
                    ha="center", va="center", fontsize=STYLE["note_size"] - 1,
                    color="white" if row.what == "compute" else "black")
            if row.what == "copy":
                copy_time = row.end - row.start
        periods[stages] = steady_period(schedule, stages)
        ax.set_xlim(0, end * 1.01)
        ax.set_ylim(slots + 1, 0)
        copies = ["loads"] if stages == 1 else [f"in flight {i + 1}" for i in range(slots)]
        ax.set_yticks([0.5, *(1.5 + i for i in range(slots))], ["compute", *copies],
                      fontsize=STYLE["tick_size"] - 1)
        ax.tick_params(axis="y", length=0)
        for side in ("top", "right", "left"):
            ax.spines[side].set_visible(False)
        name = ("1 stage: load, barrier, compute, barrier" if stages == 1 else
                f"{stages} stages: up to {stages - 1} tile{'s' if stages > 2 else ''} in flight during a "
                "compute")
        ax.set_title(f"{name}: {periods[stages]:.2f} units per tile", fontsize=STYLE["label_size"] - 0.5,
                     loc="left", pad=3)
        if position == len(depths) - 1:
            ax.set_xlabel(f"time (units of one tile's compute; a copy takes {copy_time:g})",
                          fontsize=STYLE["label_size"])
        else:
            ax.set_xticklabels([])
    fig.suptitle("A cp.async pipeline: copies of the next tiles fly while one tile is computed",
                 fontsize=STYLE["title_size"], x=0.01, ha="left")
    described = "; ".join(f"{s} stage{'s' if s > 1 else ''}: {p:.2f} units per tile"
                          for s, p in periods.items())
    return with_alt(fig, "Time lines of tile copies and computes for pipelines of "
                    f"{', '.join(map(str, depths))} stages, a copy taking {copy_time:g} times a compute; "
                    "in the "
                    f"steady state {described}. With one stage nothing overlaps; with enough stages the "
                    "copies hide behind the computes.")


ERROR_STYLE = {  # measured groups: marker, colour, x offset (x 2^offset: side by side at one K)
    "cuBLAS SGEMM": ("D", PALETTE[6], 0.1),
    "our FP32 SIMT kernels": ("o", PALETTE[5], -0.1),
    "our TF32 kernels (cvt.rna)": ("o", PALETTE[0], -0.1),
    "cuBLAS TF32": ("D", PALETTE[2], 0.1),
    "our TF32 kernel, no cvt.rna": ("s", PALETTE[1], 0.0),
}
MODEL_COLORS = {"FP32 (one FMA per k)": PALETTE[5], "TF32 rounded (cvt.rna)": PALETTE[0],
                "TF32 cut (no cvt.rna)": PALETTE[1]}


def _error_group(row) -> str:
    if row["variant"] == "cublas sgemm":
        return "cuBLAS SGEMM"
    if row["variant"] == "cublas tf32":
        return "cuBLAS TF32"
    return {"fp32": "our FP32 SIMT kernels", "tf32": "our TF32 kernels (cvt.rna)",
            "tf32 cut": "our TF32 kernel, no cvt.rna"}[row["precision"]]


def error_against_k(model: pd.DataFrame, measured: pd.DataFrame, provenance: str | None = None) -> Figure:
    """Relative error against float64 by K: the host model's lines (``emulated_errors``) and the GPU's
    results (``errors``: variant, precision, k, relative_error) as points."""
    fig, ax = new_axes(None)
    fig.set_size_inches(8.2, 5.0)
    for label, rows in model.groupby("model", sort=False):
        ax.plot(rows["k"], rows["relative_error"], color=MODEL_COLORS.get(label, "black"), linewidth=1.4,
                linestyle="--", label=f"model: {label}")
    groups = measured.assign(group=measured.apply(_error_group, axis=1))
    for group, (marker, color, offset) in ERROR_STYLE.items():
        rows = groups[groups["group"] == group]
        if rows.empty:
            continue
        ax.scatter(rows["k"] * 2.0**offset, rows["relative_error"], marker=marker, s=40, color=color,
                   zorder=3,
                   edgecolors="white", linewidths=0.5, label=f"measured: {group}")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ks = sorted(set(model["k"]) | set(measured["k"]))
    ax.xaxis.set_major_locator(FixedLocator([k for k in ks if k & (k - 1) == 0]))
    ax.xaxis.set_major_formatter(FuncFormatter(plain_number))
    ax.xaxis.set_minor_formatter(NullFormatter())
    low = min(model["relative_error"].min(), measured["relative_error"].min())
    high = max(model["relative_error"].max(), measured["relative_error"].max())
    ax.set_ylim(low / 3, high * 25)  # room above the lines for the legend
    finish(fig, ax, "Error against float64: TF32's is set by its operands, FP32's grows with K",
           "K (the sum's length; log scale; points at one K nudged apart sideways)",
           "relative error ‖C − C64‖ / ‖C64‖ (log scale)", provenance,
           legend_loc="upper left")
    ax.legend(fontsize=STYLE["legend_size"] - 1, frameon=False, loc="upper left", ncols=2)
    tf32 = measured[measured["precision"] == "tf32"]["relative_error"]
    fp32 = measured[measured["precision"] == "fp32"]["relative_error"]
    return with_alt(fig, "Log-log plot of relative error against K. Dashed model lines: FP32 rising with K, "
                    "TF32 rounded and TF32 cut flat. Measured points: TF32 results "
                    f"{tf32.min():.2e} to {tf32.max():.2e}, FP32 results {fp32.min():.1e} to "
                    f"{fp32.max():.1e}.")


def mma_ceiling(ceiling: pd.DataFrame, fp32_peak_tflops: float, cublas_tf32_tflops: float,
                best_gemm_tflops: float, provenance: str | None = None, shape: str = "4096³") -> Figure:
    """Bars: the mma.sync ceiling at each (warps per SM, chains); lines: cuBLAS TF32 and our best TF32
    GEMM at ``shape`` and the FP32 FMA ceiling, for scale."""
    fig, ax = new_axes(None)
    fig.set_size_inches(8.2, 4.8)
    rows = ceiling.sort_values(["chains", "warps_per_sm"], key=lambda s: s if s.name == "warps_per_sm" else
                               (s != 8).astype(int) * 100 + s)
    labels = [f"{w} warps/SM\n{c} chains" for w, c in zip(rows["warps_per_sm"], rows["chains"], strict=True)]
    x = np.arange(len(rows))
    colors = [PALETTE[0] if c == 8 else PALETTE[4] for c in rows["chains"]]  # blue against orange
    ax.bar(x, rows["tflops"], color=colors, width=0.66)
    for xi, value in zip(x, rows["tflops"], strict=True):
        ax.annotate(f"{value:.0f}", (xi, value), xytext=(0, 3), textcoords="offset points", ha="center",
                    va="bottom", fontsize=STYLE["note_size"])
    for value, label, style, color in ((cublas_tf32_tflops, f"cuBLAS TF32 ({shape})", "--", PALETTE[2]),
                                       (best_gemm_tflops, f"our best TF32 GEMM ({shape})", "-.", PALETTE[1]),
                                       (fp32_peak_tflops, "FP32 FMA ceiling (lesson 1)", ":", "black")):
        ax.axhline(value, color=color, linestyle=style, linewidth=1.3, label=f"{label}: {value:.0f} TFLOP/s")
    ax.set_xticks(x, labels, fontsize=STYLE["tick_size"] - 1)
    ax.set_ylim(0, max(cublas_tf32_tflops, rows["tflops"].max()) * 1.32)
    finish(fig, ax, "The mma.sync ceiling: independent MMA chains on registers only",
           "launch shape (blue: 8 chains per warp; orange: "
           f"{' or '.join(str(c) for c in sorted(set(rows['chains']) - {8}))})", "TFLOP/s (TF32)", provenance,
           legend_loc="upper left")
    ax.legend(fontsize=STYLE["legend_size"], frameon=False, loc="upper left", ncols=2)
    ax.grid(False, axis="x")
    return with_alt(fig, f"Bars of the mma.sync TF32 ceiling from {rows['tflops'].min():.0f} to "
                    f"{rows['tflops'].max():.0f} TFLOP/s across launch shapes, under a cuBLAS TF32 line at "
                    f"{cublas_tf32_tflops:.0f} and above our best TF32 GEMM ({best_gemm_tflops:.0f}), both "
                    f"at {shape}, and the FP32 ceiling ({fp32_peak_tflops:.0f}).")


LIBRARY_NAMES = {"cublas sgemm": "cuBLAS SGEMM (FP32)", "cublas tf32": "cuBLAS TF32"}


def progression(wide: pd.DataFrame, provenance: str | None = None) -> Figure:
    """Horizontal bars, first row on top: TFLOP/s of each row of ``wide`` (variants x shapes), one bar
    per shape, log scale; the cuBLAS rows (references) in bold."""
    shapes = list(wide.columns)
    fig, ax = new_axes(None)
    fig.set_size_inches(8.6, 1.8 + 0.52 * len(wide))
    height = 0.8 / len(shapes)
    base = np.arange(len(wide))[::-1].astype(float)
    library = np.array([name.startswith("cublas") for name in wide.index])
    for i, shape in enumerate(shapes):
        values = wide[shape].to_numpy(dtype=float)
        y = base + 0.4 - height * (i + 0.5)
        shown = np.isfinite(values)
        ax.barh(y[shown], values[shown], height=height * 0.9, color=PALETTE[i % len(PALETTE)],
                label=shape.replace("^3", "³"))
        for yy, value, ref in zip(y[shown], values[shown], library[shown], strict=True):
            ax.annotate(f"{value:.1f}", xy=(value, yy), xytext=(3, 0), textcoords="offset points",
                        va="center",
                        fontsize=STYLE["note_size"] - 1, fontweight="bold" if ref else "normal")
        for yy in y[~shown]:  # a shape this variant was not timed at: say so where its bar would be
            ax.annotate(f"{shape.replace('^3', '³')}: not timed", xy=(wide.min().min() / 1.5, yy),
                        xytext=(3, 0),
                        textcoords="offset points", va="center", fontsize=STYLE["note_size"] - 1.5,
                        fontstyle="italic", color=STYLE["datasheet_color"])
    names = [LIBRARY_NAMES.get(name, name) if ref else f"{number}. {name}"
             for number, (name, ref) in enumerate(zip(wide.index, library, strict=True))]
    ax.set_yticks(base, names)
    for label, ref in zip(ax.get_yticklabels(), library, strict=True):
        if ref:
            label.set_fontweight("bold")
    ax.set_xscale("log")
    ax.set_xlim(wide.min().min() / 1.5, wide.max().max() * 3)
    ax.xaxis.set_major_formatter(FuncFormatter(plain_number))
    ax.tick_params(axis="y", length=0)
    finish(fig, ax, "The TF32 GEMM steps between cuBLAS FP32 and cuBLAS TF32",
           "TFLOP/s (log scale)", "", provenance, legend_loc="lower right")
    ax.grid(False, axis="y")
    described = "; ".join(f"{name}: {', '.join(f'{v:.0f}' for v in row if np.isfinite(v))}"
                          for name, row in zip(wide.index, wide.to_numpy(dtype=float), strict=True))
    missing = [f"{name} at {shape}" for name in wide.index for shape in shapes
               if not np.isfinite(wide.loc[name, shape])]
    untimed = f" Not timed: {', '.join(missing)}." if missing else ""
    return with_alt(fig, f"Horizontal bars of TFLOP/s on a log scale at {', '.join(shapes)}: "
                    f"{described}.{untimed}")


def _recording(source: str) -> str:
    """'lesson 6 ncu 2cbd25c' -> "lesson 6's recording" (the commit is the deep dive's to give)."""
    words = source.split()
    return f"lesson {words[1]}'s recording" if words[:1] == ["lesson"] and len(words) > 1 else source


def simt_pipeline(summary: pd.DataFrame, provenance: str | None = None) -> Figure:
    """Three panels per kernel (lesson 6's, its cp.async pipelines, cuBLAS SGEMM): the share of cuBLAS at
    each shape; the issue slots busy (Nsight Compute); shared-memory wavefronts, loads and writes."""
    fig = _figure(12.5, 4.8)
    grid = fig.add_gridspec(1, 3)
    names = list(summary.index)
    short = {name: name.replace("simt ", "").replace("cp.async ", "").replace(" (lesson 6)", "\n(lesson 6)")
             .replace("cublas sgemm", "cuBLAS\nSGEMM") for name in names}
    labels = [short[n] + (f"\n{int(r)} regs" if np.isfinite(r) else "") for n, r in
              zip(names, summary["registers"], strict=True)]
    x = np.arange(len(names))
    shares = [c for c in summary.columns if c.startswith("of_sgemm")]
    ax = fig.add_subplot(grid[0, 0])
    width = 0.8 / len(shares)
    for i, column in enumerate(shares):
        values = summary[column].to_numpy(dtype=float)
        ax.bar(x - 0.4 + width * (i + 0.5), values, width * 0.92, color=PALETTE[i],
               label=column.split()[-1].replace("^3", "³"))
        for xi, value in zip(x - 0.4 + width * (i + 0.5), values, strict=True):
            if np.isfinite(value):
                ax.annotate(f"{value:.2f}", (xi, value), xytext=(0, 2), textcoords="offset points",
                            ha="center", fontsize=STYLE["note_size"] - 2, rotation=90, va="bottom")
    ax.set_ylim(0, 1.3)
    ax.set_xticks(x, labels, fontsize=STYLE["tick_size"] - 2)
    ax.set_title("speed: share of cuBLAS SGEMM", fontsize=STYLE["label_size"], loc="left")
    ax.set_ylabel("GFLOP/s ÷ cuBLAS's, same shape", fontsize=STYLE["label_size"] - 1)
    ax.legend(fontsize=STYLE["legend_size"] - 1, frameon=False, loc="upper left", ncols=2)

    ax = fig.add_subplot(grid[0, 1])
    busy = summary["issue_active"].to_numpy(dtype=float)
    ax.bar(x, busy, color=[STYLE["reference_bar_color"] if n.startswith("cublas") else PALETTE[0]
                           for n in names],
           width=0.62)
    for xi, value in zip(x, busy, strict=True):
        if np.isfinite(value):
            ax.annotate(f"{value:.1f}%", (xi, value), xytext=(0, 2), textcoords="offset points", ha="center",
                        fontsize=STYLE["note_size"] - 1.5)
    ax.set_ylim(0, 100)
    ax.set_xticks(x, labels, fontsize=STYLE["tick_size"] - 2)
    ax.set_title("issue slots busy (2048³)", fontsize=STYLE["label_size"], loc="left")
    sources = summary["counters_source"] if "counters_source" in summary else pd.Series("", summary.index)
    if sources.nunique() > 1:  # some kernel's counters come from another recording: say which, under it
        common = sources.mode().iloc[0]
        others = [f"{short[n].replace(chr(10), ' ')}'s counters: from {_recording(sources[n])}" for n in names
                  if sources[n] and sources[n] != common]
        ax.set_xlabel("; ".join(others), fontsize=STYLE["note_size"] - 2)
    ax.set_ylabel("% of cycles an instruction issues", fontsize=STYLE["label_size"] - 1)

    ax = fig.add_subplot(grid[0, 2])
    loads = summary["shared_load_wavefronts"].to_numpy(dtype=float) / 1e6
    writes = summary["shared_write_wavefronts"].to_numpy(dtype=float) / 1e6
    ax.bar(x, loads, color=PALETTE[0], width=0.62, label="loads")
    ax.bar(x, np.nan_to_num(writes), bottom=loads, color=PALETTE[4], width=0.62,
           label="writes (stores, cp.async)")
    for xi, low, high in zip(x, loads, writes, strict=True):
        if not np.isfinite(low):
            text = "not\nrecorded"
        else:
            text = f"{low + high:.1f}" if np.isfinite(high) else f"{low:.1f}\n(writes\nnot\nrecorded)"
        ax.annotate(text, (xi, np.nan_to_num(low) + np.nan_to_num(high)), xytext=(0, 2),
                    textcoords="offset points", ha="center", va="bottom", fontsize=STYLE["note_size"] - 1.5)
    tallest = np.nan_to_num(loads) + np.nan_to_num(writes)
    ax.set_ylim(0, tallest.max() * 1.35 if tallest.max() > 0 else 1)
    ax.set_xticks(x, labels, fontsize=STYLE["tick_size"] - 2)
    ax.set_title("shared-memory wavefronts (2048³)", fontsize=STYLE["label_size"], loc="left")
    ax.set_ylabel("millions", fontsize=STYLE["label_size"] - 1)
    ax.legend(fontsize=STYLE["legend_size"] - 1, frameon=False, loc="upper left")
    for axis in fig.axes:
        axis.tick_params(axis="x", length=0)
        for side in ("top", "right"):
            axis.spines[side].set_visible(False)
        axis.grid(True, axis="y", color=STYLE["grid_color"], linewidth=0.7)
        axis.set_axisbelow(True)
    fig.suptitle("Lesson 6's FP32 kernel with cp.async pipelines: slower, with issue slots less busy",
                 fontsize=STYLE["title_size"], x=0.01, ha="left")
    if provenance:
        add_caption(fig, provenance)
    described = "; ".join(
        f"{n}: {summary.loc[n, shares[-1]]:.2f} of cuBLAS at {shares[-1].split()[-1]}, issue slots "
        f"{summary.loc[n, 'issue_active']:.1f}% busy" for n in names
        if np.isfinite(summary.loc[n, "issue_active"]))
    return with_alt(fig, "Three bar panels per kernel: share of cuBLAS SGEMM, issue slots busy, "
                    f"shared-memory wavefronts. {described}.")

