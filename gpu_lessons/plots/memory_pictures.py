"""Concept pictures of lessons 3 and 4, drawn from the tracer's requests and the recorded counters:
two neighbouring warps sharing a sector, seen at L1, L2 and DRAM; what one lane costs DRAM 32 and 64
bytes apart (the 64-byte granule); a transpose's thread -> element map."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from .style import LABEL_BOX, PALETTE, STYLE, add_caption, with_alt

SECTOR_BYTES = 32
GRANULE_BYTES = 64
WARP_COLORS = (PALETTE[0], PALETTE[1])


def _sector_strip(ax, sectors: int, y: float, height: float = 0.8) -> None:
    for s in range(sectors):
        ax.add_patch(
            plt.Rectangle(
                (s * SECTOR_BYTES, y), SECTOR_BYTES, height, fill=False, edgecolor="#888888", linewidth=0.8
            )
        )
        ax.text(
            s * SECTOR_BYTES + SECTOR_BYTES / 2,
            y + height + 0.12,
            f"sector {s}",
            ha="center",
            va="bottom",
            fontsize=STYLE["note_size"] - 1,
            color="#555555",
        )


def sector_sharing(requests: list[pd.DataFrame], levels: pd.Series, provenance: str | None = None) -> Figure:
    """Top: two neighbouring warps' requests (``requests``: ``MemoryTrace.request`` of warps 0 and 1,
    global) over the 32-byte sectors they touch; the sector both touch is hatched. Bottom: what each
    level moved for the whole copy against the aligned copy (``levels``: 'L1 load sectors', 'L2 read
    sectors', 'DRAM bytes read' -> ratio, from Nsight Compute)."""
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(8.6, 4.6), height_ratios=[1.25, 1.0])
    touched = [set(range(int(r["sector"].min()), int(r["last_sector"].max()) + 1)) for r in requests]
    shared = set.intersection(*touched)
    sectors = max(max(t) for t in touched) + 1
    _sector_strip(top, sectors, 0.0)
    for index, (request, color) in enumerate(zip(requests, WARP_COLORS, strict=True)):
        first, last = int(request["address"].min()), int((request["address"] + request["bytes"]).max())
        y = -0.45 - 0.5 * index
        top.add_patch(plt.Rectangle((first, y), last - first, 0.32, color=color))
        top.text(
            first,
            y - 0.08,
            f"warp {index}: bytes {first}-{last - 1}, {len(touched[index])} sectors",
            ha="left",
            va="top",
            fontsize=STYLE["note_size"],
            color=color,
        )
        for s in touched[index]:
            top.add_patch(plt.Rectangle((s * SECTOR_BYTES, 0.0), SECTOR_BYTES, 0.8, color=color, alpha=0.18))
    for s in shared:
        top.add_patch(
            plt.Rectangle(
                (s * SECTOR_BYTES, 0.0),
                SECTOR_BYTES,
                0.8,
                fill=False,
                hatch="///",
                edgecolor="black",
                linewidth=1.2,
            )
        )
        top.annotate(
            "in both requests",
            xy=(s * SECTOR_BYTES + 16, 0.8),
            xytext=(0, 18),
            textcoords="offset points",
            ha="center",
            fontsize=STYLE["note_size"],
            arrowprops={"arrowstyle": "->", "color": "black"},
        )
    top.set_xlim(-4, sectors * SECTOR_BYTES + 4)
    top.set_ylim(-1.6, 1.9)
    top.axis("off")
    top.set_title(
        "Offset 1: two neighbouring warps' loads share a 32-byte sector",
        loc="left",
        fontsize=STYLE["title_size"],
    )
    names = list(levels.index)
    values = levels.to_numpy(dtype=float)
    bars = bottom.barh(range(len(names)), values, color=[PALETTE[3], PALETTE[2], PALETTE[0]][: len(names)])
    for bar, value in zip(bars, values, strict=True):
        bottom.text(
            value + 0.01,
            bar.get_y() + bar.get_height() / 2,
            f"{value:.3f}x",
            va="center",
            fontsize=STYLE["note_size"],
        )
    bottom.axvline(1.0, color=STYLE["ceiling_color"], linewidth=1, linestyle=":")
    bottom.set_yticks(range(len(names)), names, fontsize=STYLE["tick_size"])
    bottom.invert_yaxis()
    bottom.set_xlim(0, 1.45)  # from 0: bar lengths compare as ratios
    bottom.set_xlabel(
        "whole copy at offset 1 / aligned copy (Nsight Compute, one load per thread)",
        fontsize=STYLE["label_size"],
    )
    for side in ("top", "right"):
        bottom.spines[side].set_visible(False)
    fig.tight_layout()
    fig.subplots_adjust(bottom=0.17)
    if provenance:
        add_caption(fig, provenance)
    plt.close(fig)
    counts = ", ".join(f"{name} {value:.3f} times" for name, value in zip(names, values, strict=True))
    return with_alt(
        fig,
        f"Two neighbouring warps of the offset-1 copy drawn over 32-byte sectors: each request "
        f"touches {len(touched[0])} sectors and sector {min(shared)} is in both. Below, what the "
        f"whole copy moved against the aligned copy: {counts}: L1 serves each request's sectors, "
        "the shared sector reaches DRAM once.",
    )


def granule(strides: list[int], measured: dict, lanes: int = 4, provenance: str | None = None) -> Figure:
    """One row per stride (elements of 4 bytes): the first ``lanes`` lanes' 4-byte reads over 32-byte
    sectors and 64-byte granules (thick lines); the granules an L2 miss fetches are shaded.
    ``measured``: stride -> DRAM bytes read per element (Nsight Compute)."""
    fig, ax = plt.subplots(figsize=(8.6, 1.0 + 1.05 * len(strides)))
    span = max(strides) * 4 * lanes
    span = int(np.ceil(span / GRANULE_BYTES) * GRANULE_BYTES)
    for row, stride in enumerate(strides):
        y = -1.3 * row
        for g in range(span // GRANULE_BYTES):
            used = any(
                GRANULE_BYTES * g <= 4 * stride * lane < GRANULE_BYTES * (g + 1) for lane in range(lanes)
            )
            ax.add_patch(
                plt.Rectangle(
                    (g * GRANULE_BYTES, y),
                    GRANULE_BYTES,
                    0.7,
                    facecolor=PALETTE[5] if used else "white",
                    alpha=0.35 if used else 1,
                    edgecolor="black",
                    linewidth=1.8,
                )
            )
        for s in range(span // SECTOR_BYTES):
            ax.plot([s * SECTOR_BYTES] * 2, [y, y + 0.7], color="#888888", linewidth=0.6)
        for lane in range(lanes):
            ax.add_patch(plt.Rectangle((4 * stride * lane, y + 0.15), 4, 0.4, color=PALETTE[1]))
            ax.text(
                4 * stride * lane + 2,
                y + 0.78,
                f"{lane}",
                ha="center",
                va="bottom",
                fontsize=STYLE["note_size"] - 1.5,
                color=PALETTE[1],
            )
        ax.text(-3, y + 0.78, "lane", ha="right", va="bottom", fontsize=STYLE["note_size"] - 1.5,
                color=PALETTE[1])  # left of the row: lane numbers 32 bytes apart leave no room for it
        cost = min(4 * stride, GRANULE_BYTES)
        ax.text(
            span + 6,
            y + 0.35,
            f"stride {stride} ({4 * stride} B apart):\nDRAM reads {cost} B a lane"
            + (f"\n(measured {measured[stride]:.1f})" if stride in measured else ""),
            va="center",
            fontsize=STYLE["note_size"],
            bbox=LABEL_BOX,
        )
    ax.set_xlim(-30, span + 150)
    ax.set_ylim(-1.3 * (len(strides) - 1) - 0.3, 1.25)
    ax.axis("off")
    ax.set_title(
        "What one 4-byte read costs DRAM: whole 64-byte granules (thick), of two 32-byte sectors",
        loc="left",
        fontsize=STYLE["title_size"] - 1,
    )
    if provenance:
        add_caption(fig, provenance)
    plt.close(fig)
    parts = "; ".join(
        f"stride {s}: {min(4 * s, GRANULE_BYTES)} bytes a lane"
        + (f", measured {measured[s]:.1f}" if s in measured else "")
        for s in strides
    )
    return with_alt(
        fig,
        f"The first {lanes} lanes of strided 4-byte reads drawn over 32-byte sectors and 64-byte "
        f"granules, the granules DRAM fetches shaded: {parts}. From 64 bytes apart on, every lane "
        "costs a whole granule.",
    )


def thread_element_map(
    elements: pd.DataFrame, thread: tuple[int, int], provenance: str | None = None
) -> Figure:
    """Two 32x32 grids, the input tile of ``a`` and the output tile of ``out``: warp 0's first load and
    store (outlined), and one thread's elements (filled, numbered in program order). ``elements``:
    ``lessons.bank_conflicts.thread_elements`` (tx, ty, array, k, row, col)."""
    fig, axes = plt.subplots(1, 2, figsize=(9.4, 4.9))
    tx, ty = thread
    mine = elements[(elements["tx"] == tx) & (elements["ty"] == ty)]
    warp0 = elements[(elements["ty"] == 0) & (elements["k"] == 0)]
    for ax, array, what in (
        (axes[0], "a", "loads from a (row by row)"),
        (axes[1], "out", "stores to out (row by row)"),
    ):
        ax.add_patch(plt.Rectangle((-0.5, -0.5), 32, 32, facecolor="#f6f6f6", edgecolor="#999999"))
        first = warp0[warp0["array"] == array]
        ax.add_patch(
            plt.Rectangle(
                (first["col"].min() - 0.5, first["row"].min() - 0.5),
                first["col"].max() - first["col"].min() + 1,
                1,
                fill=False,
                edgecolor=PALETTE[0],
                linewidth=1.8,
            )
        )
        if array == "a":  # the values this thread writes to out: out[j, i] holds a[i, j]
            stored = mine[mine["array"] == "out"]
            for row, col in zip(stored["col"], stored["row"], strict=True):
                ax.add_patch(
                    plt.Rectangle(
                        (col - 0.5, row - 0.5),
                        1,
                        1,
                        facecolor="white",
                        hatch="xxxx",
                        edgecolor=PALETTE[2],
                        linewidth=0.8,
                    )
                )
        own = mine[mine["array"] == array].sort_values("k")
        for order, (row, col) in enumerate(zip(own["row"], own["col"], strict=True)):
            ax.add_patch(plt.Rectangle((col - 0.5, row - 0.5), 1, 1, color=PALETTE[1]))
            ax.text(
                col + 1.0, row, f"{order + 1}", va="center", fontsize=STYLE["note_size"] - 1, color=PALETTE[1]
            )
        ax.set_xlim(-0.8, 32.8)
        ax.set_ylim(31.8, -0.8)
        ax.set_xticks(range(0, 32, 8))
        ax.set_yticks(range(0, 32, 8))
        ax.set_xlabel("column of the tile", fontsize=STYLE["label_size"])
        ax.set_ylabel("row of the tile", fontsize=STYLE["label_size"])
        ax.set_title(f"{array}: thread (tx={tx}, ty={ty}) {what}", fontsize=STYLE["label_size"], loc="left")
    fig.suptitle(
        "A 32x32 transpose tile, block (32, 8): outlined, warp 0's first load and first store; "
        "filled, one thread's four;\nhatched in a, the values it writes to out (another thread loaded them)",
        fontsize=STYLE["title_size"] - 1,
        x=0.01,
        ha="left",
    )
    fig.tight_layout()
    if provenance:
        add_caption(fig, provenance)
    plt.close(fig)

    def listed(array, columns):
        return ", ".join(
            f"({r}, {c})" for r, c in mine[mine["array"] == array].sort_values("k")[columns].to_numpy()
        )

    loads, stores, values = (
        listed("a", ["row", "col"]),
        listed("out", ["row", "col"]),
        listed("out", ["col", "row"]),
    )
    return with_alt(
        fig,
        f"Two 32 by 32 grids, a tile of the input and of the output. Warp 0 loads row 0 of the "
        f"input tile and stores row 0 of the output tile, both coalesced. Thread (tx={tx}, ty={ty}) "
        f"loads input elements {loads} and stores output elements {stores}, which hold input elements "
        f"{values}: values other threads loaded, passed through the shared tile.",
    )
