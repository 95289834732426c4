"""Lesson 4's figures: one warp's shared-memory request lane -> word -> bank, a tile coloured by bank,
time against wavefronts, transposes against the copy and against the shared pipe's cost model."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.colors import ListedColormap
from matplotlib.figure import Figure
from matplotlib.ticker import FixedLocator, FuncFormatter, NullFormatter

from .style import (
    PALETTE,
    STYLE,
    add_caption,
    finish,
    new_axes,
    plain_number,
)

BANKS = 32
BANK_BYTES = 4


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


def shared_memory_banks(request: pd.DataFrame, title: str | None = None, provenance: str | None = None,
                        ax: Axes | None = None) -> Figure:
    """Draw one warp's shared-memory request: lanes (top) -> the words they touch, placed in their
    bank (columns 0..31) and in the wavefront that delivers them (rows). Lines are coloured by
    wavefront; a cell read by several lanes is a broadcast. The title gives the tracer's counts.
    """
    layout = shared_bank_layout(request)
    wavefronts = int(layout["wavefront"].max()) + 1
    counted = request.attrs.get("wavefronts")
    if counted is not None and counted != wavefronts:
        raise ValueError(f"layout needs {wavefronts} wavefronts, the tracer counted {counted}")
    own_figure = ax is None
    fig, ax = new_axes(ax)
    if own_figure:
        fig.set_size_inches(9.0, 2.3 + 0.16 * min(max(wavefronts, 4), 8) + 0.09 * max(wavefronts - 8, 0))
    lanes = sorted(layout["lane"].unique())
    top, first_row = 0.0, 2.2  # lanes at y = 0; wavefront w at y = first_row + w (downwards)
    for lane in range(32):
        active = lane in lanes
        ax.add_patch(plt.Rectangle((lane - 0.42, top - 0.4), 0.84, 0.8, facecolor=PALETTE[0] if active
                                   else "white", edgecolor=PALETTE[0], linewidth=0.8))
        ax.text(lane, top, str(lane), ha="center", va="center", fontsize=5.5,
                color="white" if active else PALETTE[0])
    for wave in range(wavefronts):
        y = first_row + wave
        ax.add_patch(plt.Rectangle((-0.5, y - 0.5), BANKS, 1.0, facecolor="#f4f4f4" if wave % 2 else "white",
                                   edgecolor="none", zorder=0))
    colors = [PALETTE[(1 + w) % len(PALETTE)] for w in range(wavefronts)]
    cells = layout.drop_duplicates(["word"])
    readers = layout.groupby("word")["lane"].nunique()
    small = wavefronts > 12
    for word, bank, wave in cells[["word", "bank", "wavefront"]].itertuples(index=False):
        y = first_row + wave
        ax.add_patch(plt.Rectangle((bank - 0.45, y - 0.42), 0.9, 0.84, facecolor="white",
                                   edgecolor=colors[wave], linewidth=1.2, zorder=2))
        label = f"{word}" + ("*" if readers[word] > 1 else "")
        size = 5.5 if small or word > 99 else 6.5
        ax.text(bank, y, label, ha="center", va="center", fontsize=size, zorder=3)
    first_words = layout.groupby("lane", sort=True).first().reset_index()
    for lane, bank, wave in first_words[["lane", "bank", "wavefront"]].itertuples(index=False):
        ax.plot([lane, bank], [top + 0.4, first_row + wave - 0.42], color=colors[wave], linewidth=0.8,
                alpha=0.8, zorder=1)
    ax.set_xlim(-1.0, BANKS)
    ax.set_ylim(first_row + wavefronts + 0.2, top - 1.2)
    ax.set_xticks(range(0, BANKS, 4))
    ax.set_yticks([top] + [first_row + w for w in range(wavefronts)],
                  ["lanes"] + [f"wavefront {w + 1}" if wavefronts <= 12 or w in (0, wavefronts - 1) else ""
                               for w in range(wavefronts)])
    ax.tick_params(axis="y", length=0, labelsize=STYLE["tick_size"] - 1)
    ax.tick_params(axis="x", labelsize=STYLE["tick_size"] - 1)
    for side in ("top", "right", "left"):
        ax.spines[side].set_visible(False)
    attrs = request.attrs
    if title is None:
        what = attrs.get("source", "shared access")
        title = (f"{what}: {len(lanes)} lanes x {int(request['bytes'].iloc[0])} B -> {wavefronts} "
                 f"wavefront{'s' if wavefronts > 1 else ''}, {attrs.get('bank_conflicts', wavefronts - 1)} "
                 "bank conflicts")
    ax.set_title(title, fontsize=STYLE["title_size"] - 1, loc="left")
    ax.set_xlabel("bank (word % 32); each cell is a 4-byte word, * = read by several lanes (broadcast)",
                  fontsize=STYLE["label_size"] - 1)
    if provenance:
        add_caption(fig, provenance)
    return fig


def time_vs_wavefronts(cost: pd.DataFrame, provenance: str | None = None, ax: Axes | None = None,
                       title: str = "Cost of a bank conflict: time per request against wavefronts") -> Figure:
    """Measured time per warp request (y) against the tracer's wavefronts per request (x), one
    point per access pattern, with the least-squares line time = a + b x wavefronts."""
    fig, ax = new_axes(ax)
    intercept, slope = wavefront_fit(cost)
    waves = np.array(sorted(cost["wavefronts"].unique()))
    ax.plot(waves, intercept + slope * waves, color=STYLE["ceiling_color"], linestyle="-.", linewidth=1.2,
            label=f"fit: {intercept:.3f} ns + {slope:.3f} ns x wavefronts")
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
    return finish(fig, ax, title, "wavefronts per request (tracer; = Nsight Compute)",
                   "time per warp request per SM (ns)", provenance, legend_loc="upper left")


def wavefront_fit(cost: pd.DataFrame) -> tuple[float, float]:
    """(a, b) of the least-squares line ns_per_request = a + b x wavefronts."""
    slope, intercept = np.polyfit(cost["wavefronts"].astype(float), cost["ns_per_request"], 1)
    return float(intercept), float(slope)


def grouped_fractions(summary: pd.DataFrame, value: str = "of_cupy_copy", group: str = "shape",
                      reference_label: str = "cupy.copyto", provenance: str | None = None,
                      ax: Axes | None = None, title: str | None = None) -> Figure:
    """Bars per variant (colour) in each group (x), as a fraction of a same-run reference (= 1)."""
    fig, ax = new_axes(ax)
    if ax is not None and len(fig.axes) == 1:
        fig.set_size_inches(9.0, 4.6)
    groups = list(dict.fromkeys(summary[group]))
    variants = list(dict.fromkeys(summary["variant"]))
    width = 0.8 / len(variants)
    colors = [*PALETTE, "#882255", "#44AA99", "#999933"]  # enough for our variants; references grey
    ours = [v for v in variants if not v.startswith("cupy")]
    for i, variant in enumerate(variants):
        rows = summary[summary["variant"] == variant].set_index(group).reindex(groups)
        x = np.arange(len(groups)) - 0.4 + width * (i + 0.5)
        reference = variant.startswith("cupy")
        color = STYLE["reference_bar_color"] if reference else colors[ours.index(variant) % len(colors)]
        ax.bar(x, rows[value], width=width * 0.92, color=color, label=variant,
               hatch="//" if reference else None, edgecolor="white", linewidth=0.3)
    ax.axhline(1.0, color=STYLE["ceiling_color"], linestyle="-.", linewidth=1.1)
    ax.set_xticks(np.arange(len(groups)), groups)
    ax.set_ylim(0, max(1.15, float(summary[value].max()) * 1.1))
    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:.0%}"))
    ax.legend(fontsize=STYLE["legend_size"] - 1, frameon=False, ncols=3, loc="upper center",
              bbox_to_anchor=(0.5, -0.12))
    return finish(fig, ax, title or f"Share of {reference_label} bandwidth, same run", "",
                   f"bandwidth / {reference_label}", provenance)


def _bank_colormap():
    """32 distinguishable colours, one per bank (tab20 then tab20b's first 12), in bank order."""
    colors = [*plt.get_cmap("tab20").colors, *plt.get_cmap("tab20b").colors[:12]]
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
        for r, c in zip(read_rows, read_cols, strict=True):
            ax.add_patch(plt.Rectangle((c - 0.5, r - 0.5), 1, 1, fill=False, edgecolor="black",
                                       linewidth=1.1))
            ax.text(c, r, str(int(banks[r, c])), ha="center", va="center", fontsize=4.5, color="black")
    ax.set_xticks(range(0, cols, 8))
    ax.set_yticks(range(0, rows, 8))
    ax.tick_params(labelsize=STYLE["tick_size"] - 2, length=2)
    ax.set_xlabel("column", fontsize=STYLE["label_size"] - 2)
    ax.set_ylabel("row", fontsize=STYLE["label_size"] - 2)
    if wavefronts is not None:
        title = f"{title}\none warp's read: {wavefronts} wavefront{'s' if wavefronts > 1 else ''}"
    ax.set_title(title, fontsize=STYLE["title_size"] - 3, loc="left")
    return fig


def tile_bank_maps(panels: list[dict], provenance: str | None = None) -> Figure:
    """Tiles side by side, each coloured by bank (``panels``: dicts with title, banks, read_rows,
    read_cols, wavefronts, as ``lessons.bank_conflicts.bank_layouts()`` gives them)."""
    count = len(panels)
    columns = min(count, 2)
    lines = -(-count // columns)
    fig = plt.figure(figsize=(4.2 * columns, 4.3 * lines), layout="constrained")
    plt.close(fig)
    for index, panel in enumerate(panels):
        ax = fig.add_subplot(lines, columns, index + 1)
        tile_bank_map(panel["banks"], panel.get("read_rows"), panel.get("read_cols"), panel["title"],
                      panel.get("wavefronts"), ax=ax)
    fig.suptitle("A 32x32 float32 tile coloured by shared-memory bank (word % 32); outlined: one warp's read",
                 fontsize=STYLE["title_size"] - 1, x=0.01, ha="left")
    if provenance:
        add_caption(fig, provenance)
    return fig


def cost_model_bars(model: pd.DataFrame, provenance: str | None = None, ax: Axes | None = None,
                    title: str = "Transposes 8192x8192: measured time, shared pipe, copy") -> Figure:
    """Per transpose: the measured time (bar), the shared-memory pipe's time predicted from its
    wavefronts (a thin bar inside), and the same-run copy's time (a line): the model is their max."""
    fig, ax = new_axes(ax)
    if len(model) > 6 and len(fig.axes) == 1:
        fig.set_figheight(1.6 + 0.42 * len(model))
    model = model.sort_values("measured_us")
    positions = np.arange(len(model))[::-1]
    ax.barh(positions, model["measured_us"], height=0.62, color=PALETTE[0], label="measured")
    ax.barh(positions, model["pipe_us"], height=0.24, color=PALETTE[1],
            label="shared pipe: wavefronts x 1 clock (model)")
    copy_us = float(model["copy_us"].iloc[0])
    ax.axvline(copy_us, color=STYLE["ceiling_color"], linestyle="-.", linewidth=1.2,
               label=f"our copy, same run ({copy_us:,.0f} us)")
    for y, row in zip(positions, model.itertuples(index=False), strict=True):
        ax.annotate(f"{row.measured_us:,.0f} us ({row.error:+.0%} vs model)", xy=(row.measured_us, y),
                    xytext=(4, 0), textcoords="offset points", ha="left", va="center",
                    fontsize=STYLE["note_size"] - 0.5)
    ax.set_yticks(positions, model["variant"])
    ax.set_xlim(0, float(max(model["measured_us"].max(), model["pipe_us"].max())) * 1.45)
    ax.set_ylim(-1.3, len(model) - 0.5)
    ax.tick_params(axis="y", length=0)
    ax.legend(loc="lower right", fontsize=STYLE["legend_size"] - 1, frameon=True, facecolor="white",
              edgecolor="none", framealpha=1)
    fig = finish(fig, ax, title, "time per transpose (us); model = max(shared pipe, copy)", "", provenance)
    ax.grid(False, axis="y")
    return fig
