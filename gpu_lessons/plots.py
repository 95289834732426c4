"""One look for every figure in the lessons: bandwidth against size, share of a ceiling, roofline.

Each function returns a matplotlib Figure. Figures are made through pyplot (so Jupyter's inline
backend is set up) and then detached from it: a figure shows once when it is a cell's value, and
loops that save many PNGs keep nothing open. Pass ``ax=`` to draw into an axes of your own figure.
"""

from __future__ import annotations

import math
import os
import textwrap
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.patches import Patch
from matplotlib.ticker import FixedLocator, FuncFormatter, LogLocator, NullFormatter

# Okabe-Ito colours: distinguishable with the common colour-vision deficiencies.
PALETTE = ["#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000"]
STYLE = {
    "figsize": (7.5, 4.6),
    "title_size": 12,
    "label_size": 10,
    "tick_size": 9,
    "legend_size": 9,
    "note_size": 8.5,  # values written next to lines and bars
    "caption_size": 8,
    "caption_color": "#555555",
    "grid_color": "#e3e3e3",
    "ceiling_color": "#444444",
    "roof_color": "#222222",
    "datasheet_color": "#8c8c8c",
    "reference_bar_color": "#bdbdbd",
    "line_width": 1.8,
    "marker_size": 5,
}
# Line and marker by provider: our kernels solid, what a user would pick instead dashed.
PROVIDER_STYLE = {
    "gpu_lessons": {"linestyle": "-", "marker": "o"},
    "cupy": {"linestyle": "--", "marker": "s"},
    "cublas": {"linestyle": "--", "marker": "D"},
    "theory": {"linestyle": ":", "marker": ""},
}
# Behind text that sits on lines, so both stay readable.
LABEL_BOX = {"boxstyle": "round,pad=0.2", "facecolor": "white", "edgecolor": "none", "alpha": 0.85}
SAVE_DPI = 120
UNITS = {"gbps": "GB/s", "gflops": "GFLOP/s"}


# ---------------------------------------------------------------------------------------------
# Shared pieces


def human_bytes(count: float) -> str:
    """1536 -> '1.5 KiB'; binary units, as memory sizes are."""
    for unit, scale in (("TiB", 2**40), ("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if count >= scale:
            return f"{count / scale:.4g} {unit}"
    return f"{count:.4g} B"


def _plain_number(value: float, _position=None) -> str:
    """Tick labels without powers of ten: 0.25, 1, 1,000, 100,000."""
    return f"{value:,.0f}" if value >= 1 else f"{value:g}"


def _new_axes(ax: Axes | None) -> tuple[Figure, Axes]:
    if ax is not None:
        return ax.figure, ax
    fig = plt.figure(figsize=STYLE["figsize"], layout="constrained")
    ax = fig.add_subplot()
    plt.close(fig)  # detach from pyplot: no double display in Jupyter, nothing left open
    return fig, ax


def _finish(
    fig: Figure, ax: Axes, title: str, xlabel: str, ylabel: str, caption: str | None,
    legend_loc: str = "best",
) -> Figure:
    """The parts every figure shares: title, axis labels with units, grid, legend, caption."""
    ax.set_title(title, fontsize=STYLE["title_size"], loc="left")
    ax.set_xlabel(xlabel, fontsize=STYLE["label_size"])
    ax.set_ylabel(ylabel, fontsize=STYLE["label_size"])
    ax.tick_params(labelsize=STYLE["tick_size"])
    ax.grid(True, which="major", color=STYLE["grid_color"], linewidth=0.7)
    ax.set_axisbelow(True)
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)
    if ax.get_legend() is None and ax.get_legend_handles_labels()[0]:
        ax.legend(fontsize=STYLE["legend_size"], frameon=False, loc=legend_loc)
    if caption:
        _add_caption(fig, caption)
    return fig


def _add_caption(fig: Figure, text: str) -> None:
    """The provenance line under the axes (a figure-level label, so the layout leaves room)."""
    characters_per_line = int(fig.get_figwidth() * 72 / (STYLE["caption_size"] * 0.52))
    fig.supxlabel(
        textwrap.fill(text, characters_per_line), x=0.01, ha="left",
        fontsize=STYLE["caption_size"], color=STYLE["caption_color"],
    )


def _variant_colors(table: pd.DataFrame) -> dict[str, str]:
    """A colour per variant, in order of appearance, so a variant keeps its colour in a figure."""
    variants = list(dict.fromkeys(table["variant"]))
    return {v: PALETTE[i % len(PALETTE)] for i, v in enumerate(variants)}


def _series_label(variant: str, param: float) -> str:
    return variant if pd.isna(param) else f"{variant} ({param:g})"


def _binary_ticks(low: float, high: float, most: int = 11) -> list[float]:
    """Powers of two spanning [low, high], thinned to at most `most` ticks."""
    first, last = math.floor(math.log2(low)), math.ceil(math.log2(high))
    for step in (1, 2, 5, 10, 20):
        exponents = [e for e in range(first, last + 1) if e % step == 0]
        if len(exponents) <= most:
            break
    return [2.0**e for e in exponents]


# ---------------------------------------------------------------------------------------------
# Bandwidth against size


def bandwidth_vs_size(
    table: pd.DataFrame,
    ceiling_gbps: float | None = None,
    ceiling_label: str | None = None,
    provenance: str | None = None,
    ax: Axes | None = None,
    title: str = "Bandwidth against bytes moved",
) -> Figure:
    """GB/s against bytes moved per call, one line per variant (and param); log x."""
    fig, ax = _new_axes(ax)
    colors = _variant_colors(table)
    for (variant, param), rows in table.groupby(["variant", "param"], sort=False, dropna=False):
        rows = rows.sort_values("bytes")
        style = PROVIDER_STYLE.get(rows["provider"].iloc[0], PROVIDER_STYLE["gpu_lessons"])
        ax.plot(
            rows["bytes"], rows["gbps"], color=colors[variant], label=_series_label(variant, param),
            linewidth=STYLE["line_width"], markersize=STYLE["marker_size"], **style,
        )
    top = table["gbps"].max()
    if ceiling_gbps is not None:
        _draw_ceiling(ax, ceiling_gbps, ceiling_label or "measured ceiling")
        top = max(top, ceiling_gbps)
    ax.set_xscale("log", base=2)
    ticks = _binary_ticks(table["bytes"].min(), table["bytes"].max())
    ax.xaxis.set_major_locator(FixedLocator(ticks))
    ax.xaxis.set_major_formatter(FuncFormatter(lambda value, _: human_bytes(value)))
    ax.xaxis.set_minor_formatter(NullFormatter())
    ax.set_ylim(0, top * 1.12)
    ax.yaxis.set_major_formatter(FuncFormatter(_plain_number))
    return _finish(
        fig, ax, title, "Bytes moved per call (reads + writes)", "Bandwidth (GB/s)", provenance
    )


def _draw_ceiling(ax: Axes, value: float, label: str) -> None:
    ax.axhline(value, color=STYLE["ceiling_color"], linestyle="-.", linewidth=1.2, zorder=1)
    ax.annotate(
        f"{label}: {value:,.0f} GB/s", xy=(0.0, value), xycoords=("axes fraction", "data"),
        xytext=(4, 3), textcoords="offset points", ha="left", va="bottom",
        fontsize=STYLE["note_size"], color=STYLE["ceiling_color"], bbox=LABEL_BOX,
    )


# ---------------------------------------------------------------------------------------------
# Share of a ceiling


def _largest_size_rows(table: pd.DataFrame, metric: str) -> pd.DataFrame:
    """Each variant's row at its largest size (the best param there); best first."""
    largest = table.groupby("variant")["size"].transform("max")
    at_largest = table[table["size"] == largest]
    best = at_largest.loc[at_largest.groupby("variant", sort=False)[metric].idxmax()]
    return best.sort_values(metric, ascending=False)


def _size_phrase(rows: pd.DataFrame, metric: str) -> str:
    """' (1 GiB moved)' when every bar is at the same size, else ''."""
    if rows["size"].nunique() != 1:
        return ""
    if metric == "gbps":
        return f" ({human_bytes(rows['bytes'].iloc[0])} moved)"
    return f" (size {rows['size'].iloc[0]:,})"


def percent_of_ceiling(
    table: pd.DataFrame,
    ceiling: float,
    metric: str = "gbps",
    ceiling_label: str | None = None,
    provenance: str | None = None,
    ax: Axes | None = None,
    title: str | None = None,
) -> Figure:
    """Horizontal bars: each variant at its largest size, as a % of the ceiling; best on top."""
    if metric not in UNITS:
        raise ValueError(f"metric must be one of {', '.join(UNITS)}, got {metric!r}")
    if not ceiling > 0:
        raise ValueError(f"ceiling must be positive, got {ceiling}")
    unit = UNITS[metric]
    rows = _largest_size_rows(table, metric)
    percents = 100 * rows[metric].to_numpy() / ceiling
    own_figure = ax is None
    fig, ax = _new_axes(ax)
    if own_figure and len(rows) > 6:
        fig.set_figheight(1.4 + 0.4 * len(rows))  # room for every bar label
    ours = (rows["provider"] == "gpu_lessons").to_numpy()
    colors = [PALETTE[0] if mine else STYLE["reference_bar_color"] for mine in ours]
    positions = np.arange(len(rows))[::-1]  # best at the top
    ax.barh(positions, percents, color=colors, height=0.62)
    ax.set_yticks(positions, [_series_label(v, p) for v, p in zip(rows["variant"], rows["param"],
                                                                    strict=True)])
    for y, percent, value, mine in zip(positions, percents, rows[metric], ours, strict=True):
        inside = percent >= 40  # long bars carry their label, clear of the ceiling line
        ax.annotate(
            f"{percent:.0f}%  ({value:,.0f} {unit})", xy=(percent, y), xytext=(-5 if inside else 4, 0),
            textcoords="offset points", ha="right" if inside else "left", va="center",
            fontsize=STYLE["note_size"], color="white" if inside and mine else "black",
        )
    label = ceiling_label or "measured ceiling"
    ceiling_line = ax.axvline(100, color=STYLE["ceiling_color"], linestyle="-.", linewidth=1.2,
                              label=f"{label} ({ceiling:,.0f} {unit})")
    ax.legend(handles=[Patch(color=PALETTE[0], label="our kernels"),
                       Patch(color=STYLE["reference_bar_color"], label="references"), ceiling_line],
              loc="lower right", ncols=3, fontsize=STYLE["legend_size"],
              facecolor="white", edgecolor="none", framealpha=1)  # hides the line behind it
    ax.set_ylim(-1.15, len(rows) - 0.5)  # an empty band under the bars holds the legend
    ax.set_xlim(0, max(120.0, percents.max() * 1.1))
    ax.tick_params(axis="y", length=0)
    ax.xaxis.set_major_formatter(FuncFormatter(lambda value, _: f"{value:.0f}%"))
    fig = _finish(
        fig, ax, title or f"Share of the {label}{_size_phrase(rows, metric)}",
        f"% of {label} (100% = {ceiling:,.0f} {unit})", "", provenance,
    )
    ax.grid(False, axis="y")
    return fig


# ---------------------------------------------------------------------------------------------
# Roofline


def _intensity_range(ridge: float, points: pd.DataFrame | None) -> tuple[float, float]:
    low, high = ridge / 64, ridge * 32
    if points is not None and len(points):
        low = min(low, points["intensity"].min() / 2)
        high = max(high, points["intensity"].max() * 2)
    return low, high


def _roof(intensity: np.ndarray, bandwidth_gbps: float, peak_gflops: float) -> np.ndarray:
    """Attainable GFLOP/s: memory bound (GB/s x FLOP/byte) until the compute peak."""
    return np.minimum(peak_gflops, bandwidth_gbps * intensity)


def _roof_label(name: str, bandwidth_gbps: float | None, peak_gflops: float | None) -> str:
    values = []
    if bandwidth_gbps:
        values.append(f"{bandwidth_gbps:,.0f} GB/s")
    if peak_gflops:
        values.append(f"{peak_gflops:,.0f} GFLOP/s")
    return f"{name} ({'; '.join(values)})"


def _draw_datasheet(ax: Axes, intensity: np.ndarray, datasheet: dict) -> None:
    """Datasheet figures as dashed lines only: they are what the vendor promises, not measured."""
    bandwidth, peak = datasheet.get("bandwidth_gbps"), datasheet.get("peak_gflops")
    style = {"color": STYLE["datasheet_color"], "linestyle": "--", "linewidth": 1.2, "zorder": 1,
             "label": _roof_label("datasheet", bandwidth, peak)}
    if bandwidth:
        ax.plot(intensity, np.minimum(peak or math.inf, bandwidth * intensity), **style)
    elif peak:
        ax.axhline(peak, **style)


def _draw_ridge(ax: Axes, ridge: float, peak_gflops: float) -> None:
    color = STYLE["roof_color"]
    ax.plot([ridge], [peak_gflops], marker="o", markersize=7, color=color, zorder=4)
    ax.axvline(ridge, color=color, linestyle=":", linewidth=0.9, zorder=1)
    ax.annotate(
        f"ridge point\nI* = {ridge:.3g} FLOP/byte", xy=(ridge, peak_gflops), xytext=(-10, 12),
        textcoords="offset points", ha="right", va="bottom", fontsize=STYLE["note_size"],
        color=color, bbox=LABEL_BOX,
    )


def _label_offsets(ax: Axes, points: pd.DataFrame) -> list[tuple[float, float, str]]:
    """(dx, dy, ha) in points for each label: below right of its marker (left near the right
    edge), pushed further down while it would overlap a label placed before it."""
    points_per_pixel = 72 / ax.figure.dpi
    right_edge = ax.transAxes.transform((0.85, 0.0))[0] * points_per_pixel
    height = STYLE["note_size"] + 2
    placed: list[tuple[float, float, float, float]] = []  # label boxes: x0, x1, y0, y1
    offsets = []
    for _, point in points.iterrows():
        x, y = ax.transData.transform((point["intensity"], point["gflops"])) * points_per_pixel
        width = len(str(point["label"])) * STYLE["note_size"] * 0.55
        ha = "right" if x > right_edge else "left"
        dx = -5 if ha == "right" else 5
        x0 = x + dx - (width if ha == "right" else 0)
        dy = -9.0
        while any(x0 < b[1] and x0 + width > b[0] and y + dy - height < b[3] and y + dy > b[2]
                  for b in placed):
            dy -= height
        placed.append((x0, x0 + width, y + dy - height, y + dy))
        offsets.append((dx, dy, ha))
    return offsets


def _draw_points(ax: Axes, points: pd.DataFrame) -> None:
    kinds = points["kind"].astype(str) if "kind" in points else pd.Series("measured", points.index)
    colors = {kind: PALETTE[i % len(PALETTE)] for i, kind in enumerate(dict.fromkeys(kinds))}
    for kind, group in points.groupby(kinds, sort=False):
        ax.scatter(group["intensity"], group["gflops"], color=colors[kind], s=36, zorder=3,
                   label=kind, edgecolors="white", linewidths=0.6)
    for (_, point), (dx, dy, ha) in zip(points.iterrows(), _label_offsets(ax, points), strict=True):
        ax.annotate(
            str(point["label"]), xy=(point["intensity"], point["gflops"]), xytext=(dx, dy),
            textcoords="offset points", ha=ha, va="top", fontsize=STYLE["note_size"] - 0.5,
            color=colors[kinds[point.name]],
        )


def roofline(
    bandwidth_gbps: float,
    peak_gflops: float,
    points: pd.DataFrame | None = None,
    datasheet: dict | None = None,
    provenance: str | None = None,
    ax: Axes | None = None,
    title: str = "Roofline",
) -> Figure:
    """Log-log roofline from measured ceilings; datasheet figures dashed; points labelled.

    points: columns label, intensity (FLOP/byte), gflops, and optionally kind (colour groups).
    datasheet: optional bandwidth_gbps and peak_gflops.
    """
    if not (bandwidth_gbps > 0 and peak_gflops > 0):
        raise ValueError("bandwidth_gbps and peak_gflops must be positive")
    if points is not None:
        missing = {"label", "intensity", "gflops"} - set(points.columns)
        if missing:
            raise ValueError(f"points lacks column(s): {', '.join(sorted(missing))}")
        points = points.reset_index(drop=True)
    has_points = points is not None and len(points) > 0
    datasheet = datasheet or {}
    fig, ax = _new_axes(ax)
    ridge = peak_gflops / bandwidth_gbps
    low, high = _intensity_range(ridge, points)
    intensity = np.geomspace(low, high, 400)

    ax.set_xscale("log")
    ax.set_yscale("log")
    # Limits first: label placement below works in screen space.
    bottom = min([bandwidth_gbps * low] + ([points["gflops"].min()] if has_points else []))
    top = max(peak_gflops, datasheet.get("peak_gflops") or 0)
    ax.set_xlim(low, high)
    ax.set_ylim(bottom / 2, top * 3)

    ax.plot(intensity, _roof(intensity, bandwidth_gbps, peak_gflops), color=STYLE["roof_color"],
            linewidth=2.2, zorder=2, label=_roof_label("measured roof", bandwidth_gbps, peak_gflops))
    _draw_ridge(ax, ridge, peak_gflops)
    if datasheet:
        _draw_datasheet(ax, intensity, datasheet)
    if has_points:
        _draw_points(ax, points)

    for axis in (ax.xaxis, ax.yaxis):
        axis.set_major_locator(LogLocator(base=10))
        axis.set_major_formatter(FuncFormatter(_plain_number))
        axis.set_minor_formatter(NullFormatter())
    return _finish(fig, ax, title, "Arithmetic intensity (FLOP/byte)", "Performance (GFLOP/s)",
                   provenance, legend_loc="lower right")


# ---------------------------------------------------------------------------------------------
# Saving


def save(fig: Figure, path: str | os.PathLike) -> Path:
    """Write the figure as PNG (dpi 120), creating folders; returns the path."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=SAVE_DPI, format="png", facecolor="white")
    return path


# ---------------------------------------------------------------------------------------------
# Lesson 6: a progression of kernels against a library, one step per row


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
    fig, ax = _new_axes(ax)
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
    fig = _finish(fig, ax, title, f"% of {reference_label} (GFLOP/s)", "", provenance,
                  legend_loc="lower right")
    ax.grid(False, axis="y")
    return fig
