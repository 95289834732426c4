"""Lesson 4's figures: one warp's shared-memory request lane -> word -> bank, tiles coloured by bank,
time against wavefronts, the transposes against the copy, the 32x32 -> 64x64 steps, the shapes, and
the transposes against their cost model (shared pipe, DRAM, instruction issue)."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.colors import ListedColormap, to_rgb
from matplotlib.figure import Figure
from matplotlib.ticker import FixedLocator, FuncFormatter, NullFormatter

from .style import (
    LABEL_BOX,
    PALETTE,
    STYLE,
    add_caption,
    finish,
    new_axes,
    plain_number,
    with_alt,
)

BANKS = 32
BANK_BYTES = 4
# One colour per wavefront where a request has a few (their order is the order the bank serves
# them); more than these go light to dark along a sequential map.
WAVEFRONT_COLORS = ["#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000"]


FIG_WIDTH = 11.0  # inches: 32 banks wide, room for a 4-digit word at 6.8 pt in each cell


def plural(count: int, word: str) -> str:
    """'1 wavefront', '2 wavefronts', 'no bank conflict'."""
    if count == 0:
        return f"no {word}"
    return f"{count} {word}" + ("" if count == 1 else "s")


def request_title(request: pd.DataFrame, wavefronts: int, what: str | None = None) -> str:
    """'<what>: 32 lanes x 4 B -> 2 wavefronts, 1 bank conflict' for one traced request."""
    attrs = request.attrs
    lanes = request["lane"].nunique()
    size = int(request["bytes"].iloc[0])
    conflicts = int(attrs.get("bank_conflicts", 0))
    what = what or attrs.get("source", "shared access")
    return (f"{what}: {lanes} lanes x {size} B -> {plural(wavefronts, 'wavefront')}, "
            f"{plural(conflicts, 'bank conflict')}")


def shared_bank_layout(request: pd.DataFrame) -> pd.DataFrame:
    """Where each word of a shared-memory request sits in the picture: one row per (lane, word).

    ``request`` is ``MemoryTrace.request(...)`` of a shared access (columns lane, address, bytes,
    word, bank, phase). A lane reading 8 or 16 bytes touches 2 or 4 consecutive words. In each phase,
    the distinct words one bank must deliver go to successive wavefronts (a word several lanes read
    is delivered once: a broadcast); phases follow each other. Columns: lane, phase, word, bank,
    wavefront (0-based over the whole request).
    """
    missing = {"lane", "bytes", "word", "phase"} - set(request.columns)
    if missing or request.attrs.get("space", "shared") != "shared":
        raise ValueError("shared_bank_layout needs MemoryTrace.request(...) of a shared-memory access "
                         f"(missing: {', '.join(sorted(missing)) or 'shared space'})")
    rows = []
    for lane, size, word, phase in request[["lane", "bytes", "word", "phase"]].itertuples(index=False):
        for extra in range(max(1, -(-int(size) // BANK_BYTES))):
            rows.append((int(lane), int(phase), int(word) + extra))
    touched = pd.DataFrame(rows, columns=["lane", "phase", "word"])
    touched["bank"] = touched["word"] % BANKS
    offset = 0
    pieces = []
    for _, group in touched.groupby("phase", sort=True):
        words = group[["bank", "word"]].drop_duplicates().sort_values(["bank", "word"])
        words["rank"] = words.groupby("bank").cumcount()
        group = group.merge(words, on=["bank", "word"], how="left")
        group["wavefront"] = offset + group["rank"]
        offset += int(words["rank"].max()) + 1
        pieces.append(group.drop(columns="rank"))
    return pd.concat(pieces, ignore_index=True)


def wavefront_colors(wavefronts: int) -> list:
    """A colour per wavefront: distinct ones for a few, light to dark along a map for many."""
    if wavefronts <= len(WAVEFRONT_COLORS):
        return WAVEFRONT_COLORS[:wavefronts]
    cmap = plt.get_cmap("viridis")
    return [cmap(0.85 * (1 - w / (wavefronts - 1))) for w in range(wavefronts)]


def shared_memory_banks(request: pd.DataFrame, title: str | None = None, provenance: str | None = None,
                        ax: Axes | None = None, bank_label: bool = True) -> Figure:
    """Draw one warp's shared-memory request: lanes (top) -> the 4-byte words they touch, placed in
    their bank (columns 0..31) and in the wavefront that delivers them (rows, in the order the banks
    serve them). A lane reading 8 or 16 bytes gets one box around all its words. Each wavefront has
    its colour (its row label carries it); a word marked * is read by several lanes (a broadcast).
    ``title`` names the request; the drawn title adds its lanes, bytes, wavefronts and conflicts."""
    layout = shared_bank_layout(request)
    wavefronts = int(layout["wavefront"].max()) + 1
    counted = request.attrs.get("wavefronts")
    if counted is not None and counted != wavefronts:
        raise ValueError(f"layout needs {wavefronts} wavefronts, the tracer counted {counted}")
    spans = [words for _, words in layout.groupby("lane", sort=True)]
    # every lane one box of adjacent words and several wavefronts: lines from a top row of lanes would
    # cross (lane 8 above bank 8 serves bank 0): each box is tagged with its lane instead
    boxed = wavefronts > 1 and all(
        len(w) > 1 and w["wavefront"].nunique() == 1 and np.all(np.diff(np.sort(w["bank"].to_numpy())) == 1)
        for w in spans)
    pitch = 1.5 if boxed else 1.0
    own_figure = ax is None
    fig, ax = new_axes(ax)
    if own_figure:
        fig.set_size_inches(FIG_WIDTH, 1.6 + 0.32 * pitch * max(wavefronts, 3))
    lanes = sorted(layout["lane"].unique())
    top, first_row = 0.0, (0.0 if boxed else 1.8)  # lanes at y = 0; wavefront w at first_row + pitch w

    def row_y(wave):
        return first_row + pitch * wave

    if not boxed:
        for lane in range(32):
            active = lane in lanes
            ax.add_patch(plt.Rectangle((lane - 0.42, top - 0.4), 0.84, 0.8, facecolor=PALETTE[0] if active
                                       else "white", edgecolor=PALETTE[0], linewidth=0.8))
            ax.text(lane, top, str(lane), ha="center", va="center", fontsize=8,
                    color="white" if active else PALETTE[0])
    for wave in range(wavefronts):
        ax.add_patch(plt.Rectangle((-0.5, row_y(wave) - 0.5 * pitch), BANKS, pitch, edgecolor="none",
                                   zorder=0, facecolor="#f4f4f4" if wave % 2 else "white"))
    colors = wavefront_colors(wavefronts)
    readers = layout.groupby("word")["lane"].nunique()
    for word, bank, wave in layout.drop_duplicates(["word"])[["word", "bank", "wavefront"]].itertuples(
            index=False):
        y = row_y(wave)
        ax.add_patch(plt.Rectangle((bank - 0.45, y - 0.4), 0.9, 0.8, facecolor="white",
                                   edgecolor=colors[wave], linewidth=1.0, zorder=2))
        label = f"{word}" + ("*" if readers[word] > 1 else "")
        ax.text(bank, y, label, ha="center", va="center", fontsize=8 if len(label) <= 3 else 6.8, zorder=3)
    for words in spans:
        lane = int(words["lane"].iloc[0])
        rows = words["wavefront"].unique()
        banks = np.sort(words["bank"].to_numpy())
        if len(words) > 1 and len(rows) == 1 and np.all(np.diff(banks) == 1):  # one span: one box
            y = row_y(rows[0])
            ax.add_patch(plt.Rectangle((banks[0] - 0.47, y - 0.47), banks[-1] - banks[0] + 0.94, 0.94,
                                       fill=False, edgecolor=colors[rows[0]], linewidth=1.6, zorder=4))
            targets = [((banks[0] + banks[-1]) / 2, rows[0])]
        else:
            targets = list(zip(words["bank"], words["wavefront"], strict=True))
        for bank, wave in targets:
            if boxed:
                ax.text(bank, row_y(wave) - 0.52, f"lane {lane}", ha="center", va="bottom", fontsize=7,
                        color=colors[wave], zorder=5)
            else:
                ax.plot([lane, bank], [top + 0.4, row_y(wave) - 0.42], color=colors[wave], linewidth=0.8,
                        alpha=0.85, zorder=1)
    ax.set_xlim(-1.0, BANKS)
    ax.set_ylim(row_y(wavefronts - 1) + 0.7, (row_y(0) - 0.95) if boxed else top - 0.8)
    ax.set_xticks(range(0, BANKS, 4))
    every = 1 if wavefronts <= 16 else 4
    shown = [w for w in range(wavefronts) if w % every == 0 or w == wavefronts - 1]
    lane_row = [] if boxed else [top]
    ax.set_yticks(lane_row + [row_y(w) for w in shown], ["lanes"] * len(lane_row)
                  + [f"wavefront {w + 1}" for w in shown])
    for tick, wave in zip(ax.get_yticklabels()[len(lane_row):], shown, strict=True):
        tick.set_color(colors[wave])
    ax.tick_params(axis="y", length=0, labelsize=STYLE["tick_size"] - 1)
    ax.tick_params(axis="x", labelsize=STYLE["tick_size"] - 1)
    for side in ("top", "right", "left"):
        ax.spines[side].set_visible(False)
    ax.set_title(request_title(request, wavefronts, title), fontsize=STYLE["title_size"] - 1, loc="left")
    verb = "written" if request.attrs.get("op") == "st" else "read"
    if bank_label:
        ax.set_xlabel(f"bank (word % 32); each cell is a 4-byte word, * = {verb} by several lanes"
                      + (" (broadcast)" if verb == "read" else ""), fontsize=STYLE["label_size"] - 1)
    if provenance:
        add_caption(fig, provenance)
    writes = "write" if verb == "written" else "read"
    where = ("each lane's words boxed and tagged with the lane" if boxed else
             f"lanes 0 to 31 on top, lines to the 4-byte words they {writes}")
    return with_alt(fig, f"One warp's shared-memory request: {where}, each word in its bank (column) and in "
                    f"the wavefront that carries it (row): {request_title(request, wavefronts)}.")


def bank_requests(panels: list[tuple[str, pd.DataFrame]], provenance: str | None = None,
                  title: str | None = None) -> Figure:
    """Several requests stacked (``panels``: (title, request) pairs), each panel as tall as its
    wavefronts, on the same 32 banks."""
    heights = [shared_bank_layout(request)["wavefront"].max() + 3.2 for _, request in panels]
    fig = plt.figure(figsize=(FIG_WIDTH, 0.33 * sum(heights) + 0.9), layout="constrained")
    plt.close(fig)
    axes = fig.subplots(len(panels), 1, height_ratios=heights)
    axes = np.atleast_1d(axes)
    summaries = []
    for index, (ax, (name, request)) in enumerate(zip(axes, panels, strict=True)):
        wavefronts = int(shared_bank_layout(request)["wavefront"].max()) + 1
        shared_memory_banks(request, title=name, ax=ax,
                            bank_label=index == len(panels) - 1)
        summaries.append(request_title(request, wavefronts, name))
    if title:
        fig.suptitle(title, fontsize=STYLE["title_size"], x=0.01, ha="left")
    if provenance:
        add_caption(fig, provenance)
    return with_alt(fig, "Stacked panels, one warp's shared-memory request each: lanes 0 to 31 on top, "
                    "lines to the 4-byte words they read, each word placed in its bank (column) and in "
                    "the wavefront that delivers it (row). " + "; ".join(summaries) + ".")


def time_vs_wavefronts(cost: pd.DataFrame, provenance: str | None = None, ax: Axes | None = None,
                       title: str = "Cost of a bank conflict: time per request against wavefronts",
                       sm_clock_mhz: float | None = None) -> Figure:
    """Measured time per warp request (y) against the tracer's wavefronts per request (x), one
    point per access pattern, with the least-squares line time = a + b x wavefronts."""
    fig, ax = new_axes(ax)
    intercept, slope = wavefront_fit(cost)
    waves = np.array(sorted(cost["wavefronts"].unique()))
    clocks = f" (= {slope * sm_clock_mhz / 1e3:.3f} SM clocks)" if sm_clock_mhz else ""
    ax.plot(waves, intercept + slope * waves, color=STYLE["ceiling_color"], linestyle="-.", linewidth=1.2,
            label=f"fit: {intercept:.3f} ns + {slope:.3f} ns{clocks} x wavefronts")
    ax.scatter(cost["wavefronts"], cost["ns_per_request"], color=PALETTE[0], s=36, zorder=3,
               label="measured", edgecolors="white", linewidths=0.6)
    for x, group in cost.groupby("wavefronts"):  # patterns of equal cost share one label
        ax.annotate(", ".join(group["access"]), xy=(x, group["ns_per_request"].mean()), xytext=(6, -3),
                    textcoords="offset points", ha="left", va="top", fontsize=STYLE["note_size"] - 0.5,
                    color=PALETTE[0])
    ax.set_xscale("log", base=2)
    ax.set_yscale("log", base=2)
    ax.xaxis.set_major_locator(FixedLocator(list(waves)))
    ax.xaxis.set_major_formatter(FuncFormatter(plain_number))
    ax.xaxis.set_minor_formatter(NullFormatter())
    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:.3g}"))
    fig = finish(fig, ax, title, "wavefronts per request (tracer; = Nsight Compute)",
                 "time per warp request per SM (ns)", provenance, legend_loc="upper left")
    points = "; ".join(f"{a}: {w} wavefront(s), {t:.3g} ns" for a, w, t in
                       cost[["access", "wavefronts", "ns_per_request"]].itertuples(index=False))
    return with_alt(fig, f"Log-log scatter of the time per warp request per SM against the wavefronts it "
                    f"needs, on the fitted line {intercept:.3f} ns + {slope:.3f} ns per wavefront{clocks}. "
                    f"{points}.")


def wavefront_fit(cost: pd.DataFrame) -> tuple[float, float]:
    """(a, b) of the least-squares line ns_per_request = a + b x wavefronts."""
    slope, intercept = np.polyfit(cost["wavefronts"].astype(float), cost["ns_per_request"], 1)
    return float(intercept), float(slope)


BANK_HUES = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#17becf")
BANK_SHADES = (-0.35, 0.0, 0.4, 0.65)  # darker, as is, lighter, lightest: mixed with black or white


def _shade(color: str, amount: float) -> tuple:
    rgb = np.array(to_rgb(color))
    return tuple(rgb * (1 + amount) if amount < 0 else rgb + (1 - rgb) * amount)


def _bank_colormap():
    """32 colours, one per bank, neighbours always of different hues: bank b takes hue b % 8 and shade
    b // 8, so only banks 8 apart share a hue (in another shade)."""
    colors = [_shade(BANK_HUES[b % 8], BANK_SHADES[b // 8]) for b in range(BANKS)]
    return ListedColormap(colors, name="banks")


def tile_bank_map(banks: np.ndarray, read_rows=None, read_cols=None, title: str = "",
                  wavefronts: int | None = None, ax: Axes | None = None) -> Figure:
    """One tile coloured by the bank of each element (rows down, columns across), the elements one
    warp reads outlined and labelled with their bank; the title says the wavefronts of that read."""
    fig, ax = new_axes(ax)
    rows, cols = banks.shape
    ax.imshow(banks, cmap=_bank_colormap(), vmin=-0.5, vmax=BANKS - 0.5, interpolation="nearest",
              aspect="equal")
    if read_rows is not None:
        palette = _bank_colormap().colors
        for r, c in zip(read_rows, read_cols, strict=True):
            red, green, blue = palette[int(banks[r, c])][:3]
            dark = 0.299 * red + 0.587 * green + 0.114 * blue < 0.45
            ax.add_patch(plt.Rectangle((c - 0.5, r - 0.5), 1, 1, fill=False, edgecolor="black",
                                       linewidth=1.2))
            ax.text(c, r, str(int(banks[r, c])), ha="center", va="center", color="white" if dark else "black",
                    fontsize=7.5 if banks[r, c] < 10 else 6.6, fontweight="bold")
    ax.set_xticks(range(0, cols, 8))
    ax.set_yticks(range(0, rows, 8))
    ax.tick_params(labelsize=STYLE["tick_size"] - 1, length=2)
    ax.set_xlabel("tile column", fontsize=STYLE["label_size"] - 1)
    ax.set_ylabel("tile row", fontsize=STYLE["label_size"] - 1)
    if wavefronts is not None:
        title = f"{title}\none warp's read: {plural(wavefronts, 'wavefront')}"
    ax.set_title(title, fontsize=STYLE["title_size"] - 2, loc="left")
    return fig


def tile_bank_maps(panels: list[dict], provenance: str | None = None, columns: int | None = None,
                   panel_width: float = 4.6,
                   title: str = "A 32x32 float32 tile coloured by shared-memory bank (word % 32); "
                                "outlined: one warp's read") -> Figure:
    """Tiles side by side, each coloured by bank (``panels``: dicts with title, banks, read_rows,
    read_cols, wavefronts, as ``lessons.bank_conflicts.bank_layouts()`` gives them)."""
    count = len(panels)
    columns = columns or min(count, 2)
    lines = -(-count // columns)
    fig = plt.figure(figsize=(panel_width * columns, (panel_width + 0.6) * lines + 0.3), layout="constrained")
    plt.close(fig)
    for index, panel in enumerate(panels):
        ax = fig.add_subplot(lines, columns, index + 1)
        tile_bank_map(panel["banks"], panel.get("read_rows"), panel.get("read_cols"), panel["title"],
                      panel.get("wavefronts"), ax=ax)
    fig.suptitle(title, fontsize=STYLE["title_size"] - 1, x=0.01, ha="left")
    if provenance:
        add_caption(fig, provenance)
    reads = "; ".join(f"{p['title']}: {plural(p['wavefronts'], 'wavefront')}" for p in panels)
    return with_alt(fig, f"{count} tiles of 32 by 32 float32 elements, each element coloured by its "
                    f"shared-memory bank, the 32 elements one warp reads outlined with their bank "
                    f"number. {reads}.")


def cost_model_bars(model: pd.DataFrame, provenance: str | None = None, ax: Axes | None = None,
                    title: str = "Transposes 8192x8192: measured time against the bills of the model",
                    unlabelled: tuple = ()) -> Figure:
    """Per transpose: the measured time (bar); inside it, the shared-memory pipe's time from its
    wavefronts and, where ``model`` has ``issue_us``, the time to issue its instructions (thin bars);
    the same-run copy's time (a line). The model is the longest bill (``predicted_us``); each bar is
    labelled with the measured time's distance from it (``error``). ``unlabelled``: variants whose
    shared-pipe bar is not drawn and whose distance from the model is not written out (an exercise
    asks for them)."""
    fig, ax = new_axes(ax)
    issue = "issue_us" in model and model["issue_us"].notna().any()
    if len(fig.axes) == 1:
        fig.set_figheight(1.9 + (0.5 if issue else 0.42) * len(model))
    model = model.sort_values("measured_us")
    positions = np.arange(len(model))[::-1]
    ax.barh(positions, model["measured_us"], height=0.7, color=PALETTE[0], label="measured")
    thin = 0.2
    shown = ~model["variant"].isin(unlabelled).to_numpy()  # an exercise's pipe bar is not drawn
    ax.barh(positions[shown] + (thin / 2 + 0.01 if issue else 0), model.loc[shown, "pipe_us"], height=thin,
            color=PALETTE[1], label="shared pipe: per request + 1 SM clock per wavefront")
    if issue:
        upper = (model["issue_upper_bound"].fillna(False).astype(bool) if "issue_upper_bound" in model
                 else pd.Series(False, index=model.index))
        ax.barh(positions[~upper.to_numpy()] - thin / 2 - 0.01, model.loc[~upper, "issue_us"], height=thin,
                color=PALETTE[2], label="issue: instructions / (4 per SM clock)")
        if upper.any():
            ax.barh(positions[upper.to_numpy()] - thin / 2 - 0.01, model.loc[upper, "issue_us"], height=thin,
                    color="white", edgecolor=PALETTE[2], hatch="////", linewidth=0.8,
                    label="issue, at most (count includes the edge path)")
    copy_us = float(model["copy_us"].iloc[0])
    ax.axvline(copy_us, color=STYLE["ceiling_color"], linestyle="-.", linewidth=1.2,
               label=f"DRAM: our copy, same run ({copy_us:,.0f} µs)")
    for y, row in zip(positions, model.itertuples(index=False), strict=True):
        label = f"{row.measured_us:,.0f} µs" + ("" if row.variant in unlabelled
                                                else f" ({row.error:+.0%} vs model)")
        ax.annotate(label, xy=(row.measured_us, y),
                    xytext=(4, 0), textcoords="offset points", ha="left", va="center",
                    fontsize=STYLE["note_size"] - 0.5)
    ax.set_yticks(positions, model["variant"])
    bills = model[["measured_us", "pipe_us", *(["issue_us"] if issue else [])]].max().max()
    ax.set_xlim(0, float(bills) * 1.5)
    ax.set_ylim(-2.2 if issue else -1.9, len(model) - 0.5)  # an empty band under the bars holds the legend
    ax.tick_params(axis="y", length=0)
    ax.legend(loc="lower right", fontsize=STYLE["legend_size"] - 1, frameon=True, facecolor="white",
              edgecolor="none", framealpha=1, ncols=2)
    bill_names = "shared pipe, DRAM, issue" if issue else "shared pipe, DRAM"
    fig = finish(fig, ax, title, f"time per transpose (µs); model = the longest bill ({bill_names})", "",
                 provenance)
    ax.grid(False, axis="y")
    rows = "; ".join(
        f"{r.variant}: measured {r.measured_us:,.0f} µs"
        + (", pipe and model: exercise 1" if r.variant in unlabelled else
           f", pipe {r.pipe_us:,.0f}"
           + (f", issue {r.issue_us:,.0f}" if issue and pd.notna(r.issue_us) else "")
           + f", {r.error:+.0%} vs model")
        for r in model.itertuples(index=False))
    return with_alt(fig, f"Horizontal bars per transpose of an 8192 by 8192 matrix: the measured time "
                    f"beside the bills of the cost model, and a line at the same-run copy's "
                    f"{copy_us:,.0f} µs. {rows}.")


STEP_LINES = (  # (label, 32x32 variant, 64x64 variant)
    ("4-byte accesses, words XOR-swizzled", "tile32_swizzled", "tile64_swizzled"),
    ("16-byte accesses, float4 groups unswizzled (8-way conflicts)", "tile32_vec4", "tile64_vec4"),
    ("16-byte accesses, float4 groups XOR-swizzled", "tile32_vec4_swizzled", "tile64_vec4_swizzled"),
)


def _spread(values: list[float], gap: float) -> list[float]:
    """Label positions near ``values`` (in order), at least ``gap`` apart."""
    order = np.argsort(values)
    placed = list(values)
    for before, after in zip(order[:-1], order[1:], strict=True):
        placed[after] = max(placed[after], placed[before] + gap)
    return placed


def tile_steps(square: pd.DataFrame, provenance: str | None = None, ax: Axes | None = None,
               value: str = "of_cupy_copy", reference_label: str = "cupy.copyto",
               title: str = "From 32x32 to 64x64 float4 tiles, one change at a time") -> Figure:
    """A slope chart of the transposes that take the 32x32 -> 64x64 float4 step one change at a time:
    x = the tile, one line per access width and layout, y = share of the reference in the same run;
    arrows give the 16-byte accesses' factor at each tile. ``square``: rows of one shape with columns
    variant and ``value``."""
    fig, ax = new_axes(ax)
    if len(fig.axes) == 1:
        fig.set_size_inches(8.0, 5.2)
    share = square.set_index("variant")[value]
    colors = [PALETTE[1], PALETTE[3], PALETTE[0]]
    drawn, labels = [], {0: [], 1: []}
    for (label, small, large), color in zip(STEP_LINES, colors, strict=True):
        if small not in share or large not in share:
            continue
        y = [100 * share[small], 100 * share[large]]
        ax.plot([0, 1], y, color=color, marker="o", linewidth=STYLE["line_width"],
                markersize=STYLE["marker_size"] + 1, label=label)
        labels[0].append((y[0], color))
        labels[1].append((y[1], color))
        drawn.append(f"{label}: {y[0]:.1f}% at 32x32, {y[1]:.1f}% at 64x64")
    if "tile32_padded" in share:
        padded = 100 * share["tile32_padded"]
        ax.plot([0], [padded], marker="D", color=STYLE["ceiling_color"], linestyle="none",
                markersize=STYLE["marker_size"], label="4-byte accesses, padded 32x33 (the notes' tile)")
        labels[0].append((padded, STYLE["ceiling_color"]))
        drawn.append(f"padded 32x33: {padded:.1f}%")
    for x, side in labels.items():
        if not side:
            continue
        spots = _spread([v for v, _ in side], gap=3.6)
        for (v, color), spot in zip(side, spots, strict=True):
            ax.annotate(f"{v:.1f}%", xy=(x, v), xytext=(x + (-0.06 if x == 0 else 0.06), spot),
                        textcoords="data", ha="right" if x == 0 else "left", va="center",
                        fontsize=STYLE["note_size"], color=color)
    for x, small, large in ((-0.3, "tile32_swizzled", "tile32_vec4_swizzled"),
                            (1.3, "tile64_swizzled", "tile64_vec4_swizzled")):
        if small in share and large in share:
            low, high = 100 * share[small], 100 * share[large]
            ax.annotate("", xy=(x, high), xytext=(x, low),
                        arrowprops={"arrowstyle": "->", "color": PALETTE[0], "linewidth": 1.2})
            ax.annotate(f"16-byte\naccesses:\n×{high / low:.2f}", xy=(x, (low + high) / 2), xytext=(0, 0),
                        textcoords="offset points", ha="center", va="center", fontsize=STYLE["note_size"],
                        color=PALETTE[0], bbox=LABEL_BOX)
    ax.axhline(100, color=STYLE["ceiling_color"], linestyle="-.", linewidth=1.1)
    ax.annotate(f"{reference_label}, same run", xy=(0.5, 100), xytext=(0, 4), textcoords="offset points",
                ha="center", va="bottom", fontsize=STYLE["note_size"], color=STYLE["ceiling_color"])
    ax.set_xticks([0, 1], ["32x32 tile\n(4 elements a thread)", "64x64 tile\n(16 elements a thread)"])
    ax.set_xlim(-0.5, 1.5)
    ax.set_ylim(0, 108)
    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:.0f}%"))
    ax.legend(loc="lower center", fontsize=STYLE["legend_size"] - 0.5, frameon=True, facecolor="white",
              edgecolor="none", framealpha=1)
    fig = finish(fig, ax, title, "", f"% of {reference_label} bandwidth, same run", provenance)
    ax.grid(False, axis="x")
    return with_alt(fig, "Slope chart: transposes of an 8192 by 8192 matrix as a share of "
                    f"{reference_label}, at a 32x32 tile (left) and a 64x64 tile (right). "
                    + "; ".join(drawn) + ".")


def shape_grid(summary: pd.DataFrame, variants: list[str], value: str = "of_cupy_copy",
               reference_label: str = "cupy.copyto", provenance: str | None = None,
               title: str = "Transposes at four shapes: share of cupy.copyto, same run") -> Figure:
    """A grid of numbers, variants down and shapes across, each cell the variant's share of the
    reference at that shape (the cell's shade says the same)."""
    grid = summary.pivot_table(index="variant", columns="shape", values=value, sort=False)
    grid = grid.reindex([v for v in variants if v in grid.index])
    fig = plt.figure(figsize=(7.8, 0.9 + 0.42 * len(grid)), layout="constrained")
    plt.close(fig)
    ax = fig.add_subplot()
    ax.imshow(grid.to_numpy(), cmap="Blues", vmin=0, vmax=1.3, aspect="auto")
    for (i, j), share in np.ndenumerate(grid.to_numpy()):
        ax.text(j, i, f"{share:.3f}", ha="center", va="center", fontsize=STYLE["note_size"] + 0.5,
                color="white" if share > 0.75 else "black")
    ax.set_xticks(range(grid.shape[1]), grid.columns)
    ax.set_yticks(range(grid.shape[0]), grid.index)
    ax.tick_params(length=0, labelsize=STYLE["tick_size"])
    for side in ax.spines.values():
        side.set_visible(False)
    ax.set_title(title, fontsize=STYLE["title_size"], loc="left")
    ax.set_xlabel(f"matrix shape (rows x columns); each cell: bandwidth / {reference_label}",
                  fontsize=STYLE["label_size"])
    if provenance:
        add_caption(fig, provenance)
    rows = "; ".join(f"{v}: " + ", ".join(f"{s} {x:.3f}" for s, x in row.items())
                     for v, row in grid.iterrows())
    return with_alt(fig, f"A grid of each transpose's bandwidth as a share of {reference_label} at four "
                    f"matrix shapes. {rows}.")
