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
# Steps in teaching order, and a metric against a parameter (lesson 5, reduce)


def steps_in_order(
    table: pd.DataFrame,
    order: list[str],
    ceiling: float,
    metric: str = "gbps",
    labels: dict[str, str] | None = None,
    ceiling_label: str | None = None,
    provenance: str | None = None,
    ax: Axes | None = None,
    title: str | None = None,
) -> Figure:
    """Horizontal bars in teaching order (first step on top): each variant's `metric` as a % of
    the ceiling (log scale: steps span orders of magnitude), with the speed-up over the step above.

    `table` holds one row per variant (rows of variants not in `order` are drawn last, grey)."""
    if metric not in UNITS:
        raise ValueError(f"metric must be one of {', '.join(UNITS)}, got {metric!r}")
    if not ceiling > 0:
        raise ValueError(f"ceiling must be positive, got {ceiling}")
    unit = UNITS[metric]
    by_variant = table.drop_duplicates("variant").set_index("variant")
    ours = [v for v in order if v in by_variant.index]
    others = [v for v in by_variant.index if v not in order]
    names = ours + others
    values = by_variant.loc[names, metric].to_numpy(dtype=float)
    percents = 100 * values / ceiling
    own_figure = ax is None
    fig, ax = _new_axes(ax)
    if own_figure:
        fig.set_figheight(1.5 + 0.42 * len(names))
    positions = np.arange(len(names))[::-1]
    colors = [PALETTE[0] if v in order else STYLE["reference_bar_color"] for v in names]
    ax.barh(positions, percents, color=colors, height=0.62)
    shown = [(labels or {}).get(v, v) for v in names]
    ax.set_yticks(positions, shown)
    previous = None
    for y, name, percent, value in zip(positions, names, percents, values, strict=True):
        speedup = f", {value / previous:.3g}x" if previous and name in order else ""
        ax.annotate(f"{percent:.3g}%  ({value:,.0f} {unit}{speedup})", xy=(percent, y), xytext=(4, 0),
                    textcoords="offset points", ha="left", va="center", fontsize=STYLE["note_size"])
        previous = value if name in order else previous
    label = ceiling_label or "measured ceiling"
    ax.axvline(100, color=STYLE["ceiling_color"], linestyle="-.", linewidth=1.2,
               label=f"{label} ({ceiling:,.0f} {unit})")
    ax.set_xscale("log")
    ax.set_xlim(max(1e-3, percents.min() / 2), 100 * 12)
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}%"))
    ax.set_ylim(-0.6, len(names) - 0.4)
    ax.tick_params(axis="y", length=0)
    ax.legend(loc="upper right", fontsize=STYLE["legend_size"], frameon=False)  # short bars on top
    fig = _finish(fig, ax, title or f"Steps in teaching order: share of the {label}",
                  f"% of {label} (log scale); 2x = speed-up over the step above", "", provenance)
    ax.grid(False, axis="y")
    return fig


def metric_vs(
    table: pd.DataFrame,
    x: str,
    metric: str = "gbps",
    xlabel: str | None = None,
    ceiling: float | None = None,
    ceiling_label: str | None = None,
    log_y: bool = False,
    provenance: str | None = None,
    ax: Axes | None = None,
    title: str | None = None,
    models: pd.DataFrame | None = None,
) -> Figure:
    """One line per variant of `metric` (or 'median_ms', 'median_us') against column `x` (log2).

    `models`: optional rows (variant, x, value) drawn dotted in the variant's colour: a model
    beside the measurements."""
    fig, ax = _new_axes(ax)
    colors = _variant_colors(table)
    values = table[metric] if metric != "median_us" else 1e3 * table["median_ms"]
    table = table.assign(_value=values)
    for variant, rows in table.groupby("variant", sort=False):
        rows = rows.sort_values(x)
        style = PROVIDER_STYLE.get(rows["provider"].iloc[0], PROVIDER_STYLE["gpu_lessons"])
        ax.plot(rows[x], rows["_value"], color=colors[variant], label=variant,
                linewidth=STYLE["line_width"], markersize=STYLE["marker_size"], **style)
    if models is not None:
        for variant, rows in models.groupby("variant", sort=False):
            rows = rows.sort_values("x")
            ax.plot(rows["x"], rows["value"], color=colors.get(variant, STYLE["ceiling_color"]),
                    linestyle=":", linewidth=1.4, label=f"model: {variant}")
    if ceiling is not None:
        _draw_ceiling(ax, ceiling, ceiling_label or "measured ceiling")
    ax.set_xscale("log", base=2)
    ticks = _binary_ticks(table[x].min(), table[x].max(), most=12)
    ax.xaxis.set_major_locator(FixedLocator(ticks))
    formatter = (lambda v, _: human_bytes(v)) if x == "bytes" else (lambda v, _: f"{v:g}")
    ax.xaxis.set_major_formatter(FuncFormatter(formatter))
    ax.xaxis.set_minor_formatter(NullFormatter())
    if log_y:
        ax.set_yscale("log")
        ax.yaxis.set_major_formatter(FuncFormatter(_plain_number))
    else:
        top = max(table["_value"].max(), ceiling or 0)
        ax.set_ylim(0, top * 1.12)
        ax.yaxis.set_major_formatter(FuncFormatter(_plain_number))
    ylabel = {"gbps": "Bandwidth (GB/s)", "gflops": "GFLOP/s", "median_ms": "Time (ms)",
              "median_us": "Time (us)"}.get(metric, metric)
    return _finish(fig, ax, title or f"{ylabel} against {x}", xlabel or x, ylabel, provenance)


# ---------------------------------------------------------------------------------------------
# Little's Law (lesson 2)

WIDTH_MARKERS = {4: "o", 8: "s", 16: "D"}


def littles_law_memory(points: pd.DataFrame, provenance: str | None = None,
                       title: str = "Little's Law for memory: bandwidth against bytes in flight") -> Figure:
    """Top: measured copy GB/s against read bytes in flight per SM (log-log), colour by loads per
    thread, marker by bytes per access, and the line Little's Law draws from the measured latency and
    ceiling. Bottom: each point's measured / predicted (the model's error).

    points: lessons.littles_law.memory_points (attrs latency_ns, ceiling_gbps, sms)."""
    from matplotlib.lines import Line2D

    fig = plt.figure(figsize=(STYLE["figsize"][0], STYLE["figsize"][1] * 1.3), layout="constrained")
    plt.close(fig)
    ax, low = fig.subplots(2, 1, sharex=True, height_ratios=[3, 1.1])
    latency, ceiling, sms = (points.attrs[key] for key in ("latency_ns", "ceiling_gbps", "sms"))
    unrolls = sorted(points["unroll"].unique())
    colors = {u: PALETTE[i % len(PALETTE)] for i, u in enumerate(unrolls)}
    for (width, unroll), rows in points.groupby(["width", "unroll"]):
        style = {"color": colors[unroll], "marker": WIDTH_MARKERS.get(width, "o"), "s": 30, "zorder": 3,
                 "edgecolors": "white", "linewidths": 0.5, "alpha": 0.9}
        ax.scatter(rows["bytes_in_flight_per_sm"], rows["gbps"], **style)
        low.scatter(rows["bytes_in_flight_per_sm"], rows["gbps"] / rows["predicted_gbps"], **style)
    inflight = points["bytes_in_flight_per_sm"]
    x = np.geomspace(inflight.min() / 1.5, inflight.max() * 1.5, 300)
    model = np.minimum(ceiling, 2 * x * sms / latency)
    ax.plot(x, model, color=STYLE["roof_color"], linewidth=STYLE["line_width"], zorder=2,
            label=f"Little's Law, chase latency {latency:,.0f} ns")
    light = points.attrs.get("light_load_latency_ns")
    if light and np.isfinite(light):
        ax.plot(x, np.minimum(ceiling, 2 * x * sms / light), color=STYLE["roof_color"], linestyle="--",
                linewidth=1.1, zorder=2, label=f"Little's Law, light-load latency {light:,.0f} ns")
    _draw_ceiling(ax, ceiling, "measured ceiling")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")  # Little's Law is a line of slope 1 here, until the ceiling
    ax.set_ylim(min(points["gbps"].min(), model.min()) / 1.5, ceiling * 1.6)
    ax.yaxis.set_major_formatter(FuncFormatter(_plain_number))
    ax.yaxis.set_minor_formatter(NullFormatter())
    handles = [Line2D([], [], color=colors[u], marker="o", linestyle="", label=f"{u} load(s)/thread")
               for u in unrolls]
    handles += [Line2D([], [], color="#777777", marker=WIDTH_MARKERS.get(w, "o"), linestyle="",
                       label=f"{w}-byte loads") for w in sorted(points["width"].unique())]
    handles += ax.get_legend_handles_labels()[0][:2]
    ax.legend(handles=handles, fontsize=STYLE["legend_size"] - 1, frameon=False, loc="lower right", ncols=2,
              title=f"GB/s = min(ceiling, 2 x bytes in flight x {sms} SMs / latency)",
              title_fontsize=STYLE["legend_size"] - 1)
    _finish(fig, ax, title, "", "Copy bandwidth (GB/s, read + write)", None)
    low.axhline(1.0, color=STYLE["roof_color"], linewidth=1.0)
    ratios = points["gbps"] / points["predicted_gbps"]
    low.set_ylim(min(0.0, ratios.min() * 0.9), max(1.2, ratios.max() * 1.1))
    low.xaxis.set_major_locator(FixedLocator(_binary_ticks(x.min(), x.max())))
    low.xaxis.set_major_formatter(FuncFormatter(lambda value, _: human_bytes(value)))
    low.xaxis.set_minor_formatter(NullFormatter())
    return _finish(fig, low, "", "Read bytes in flight per SM (warps x 32 x loads per thread x bytes)",
                   "measured /\npredicted", provenance)


def littles_law_fma(points: pd.DataFrame, provenance: str | None = None, ax: Axes | None = None,
                    title: str = "Little's Law for arithmetic: FMA rate against chains and warps") -> Figure:
    """Share of the FP32 peak against independent chains per thread, one line per resident warps
    per SM; dashed, the 4-scheduler model (points: lessons.littles_law.fma_points)."""
    fig, ax = _new_axes(ax)
    for i, (warps, rows) in enumerate(points.groupby("warps_per_sm")):
        rows = rows.sort_values("chains")
        color = PALETTE[i % len(PALETTE)]
        ax.plot(rows["chains"], 100 * rows["fraction_of_peak"], color=color, marker="o",
                linewidth=STYLE["line_width"], markersize=STYLE["marker_size"], label=f"{warps} warps/SM")
        ax.plot(rows["chains"], 100 * rows["predicted_fraction"], color=color, linestyle="--", linewidth=1.0)
    latency = points.attrs.get("latency_cycles", float("nan"))
    ax.plot([], [], color=STYLE["roof_color"], linestyle="--", linewidth=1.0,
            label=f"model: 4 schedulers, FMA latency {latency:.1f} cycles")
    ax.set_ylim(0, 105)
    ax.xaxis.set_major_locator(FixedLocator(sorted(points["chains"].unique())))
    ax.yaxis.set_major_formatter(FuncFormatter(lambda value, _: f"{value:.0f}%"))
    ax.legend(fontsize=STYLE["legend_size"] - 0.5, frameon=False, loc="center right",
              bbox_to_anchor=(1.0, 0.6), ncols=2)
    return _finish(fig, ax, title, "Independent FMA chains per thread", "% of theoretical FP32 peak",
                   provenance)


def register_pressure(rows: pd.DataFrame, provenance: str | None = None,
                      title: str = "What unrolling costs: registers, occupancy, spills, time") -> Figure:
    """Top: registers per thread (bars; orange where values spill to local memory) and resident
    warps per SM (line). Bottom: the copy's GB/s. One column per 16-byte copy variant
    (rows: lessons.littles_law.register_pressure)."""
    fig = plt.figure(figsize=(STYLE["figsize"][0], STYLE["figsize"][1] * 1.35), layout="constrained")
    plt.close(fig)
    top, bottom = fig.subplots(2, 1, sharex=True, height_ratios=[3, 2])
    labels = [f"u{int(u)}" + (f"\ncap {int(m)}" if pd.notna(m) else "")
              for u, m in zip(rows["unroll"], rows["max_registers"], strict=True)]
    positions = np.arange(len(rows))
    spills = rows["local_bytes"].fillna(0).to_numpy() > 0
    colors = [PALETTE[1] if spill else PALETTE[0] for spill in spills]
    top.bar(positions, rows["registers"], color=colors, width=0.6)
    for x, regs, spill, local in zip(positions, rows["registers"], spills, rows["local_bytes"], strict=True):
        top.annotate(f"{int(regs)}" + (f"\n+{int(local)} B" if spill else ""), xy=(x, regs), xytext=(0, 3),
                     textcoords="offset points", ha="center", va="bottom", fontsize=STYLE["note_size"] - 1)
    top.set_ylim(0, 330)
    twin = top.twinx()
    twin.plot(positions, rows["warps_per_sm"], color=PALETTE[2], marker="o", linewidth=STYLE["line_width"])
    twin.set_ylim(0, 100)  # the line stays under the legend
    twin.set_ylabel("Resident warps per SM", fontsize=STYLE["label_size"], color=PALETTE[2])
    twin.tick_params(labelsize=STYLE["tick_size"], colors=PALETTE[2])
    top.legend(handles=[Patch(color=PALETTE[0], label="registers only"),
                        Patch(color=PALETTE[1], label="spills: + local bytes per thread")],
               fontsize=STYLE["legend_size"], frameon=False, loc="upper left")
    _finish(fig, top, title, "", "Registers per thread", None)
    gbps = rows["gbps"].astype(float)
    bottom.bar(positions, gbps, color=colors, width=0.6)
    for x, value in zip(positions, gbps, strict=True):
        if np.isfinite(value):
            bottom.annotate(f"{value:,.0f}", xy=(x, value), xytext=(0, 2), textcoords="offset points",
                            ha="center", va="bottom", fontsize=STYLE["note_size"] - 1)
    bottom.set_xticks(positions, labels)
    bottom.set_ylim(0, np.nanmax(gbps.to_numpy()) * 1.25 if np.isfinite(gbps).any() else 1)
    bottom.yaxis.set_major_formatter(FuncFormatter(_plain_number))
    return _finish(fig, bottom, "", "Float4 loads per thread (unroll), register cap (max_registers)",
                   "Copy GB/s", provenance)


def low_occupancy_copies(rows: pd.DataFrame, target: float | None = None, provenance: str | None = None,
                         ax: Axes | None = None,
                         title: str = "Copies at low occupancy vs cupy.copyto") -> Figure:
    """One dot per copy (rows: lessons.littles_law.low_occupancy_copies), its share of CuPy's copy,
    coloured by kind; labelled with its resident warps per SM; a line at the target if given."""
    fig, ax = _new_axes(ax)
    if len(fig.axes) == 1:
        fig.set_size_inches(STYLE["figsize"][0], max(STYLE["figsize"][1], 1.2 + 0.24 * len(rows)))
    rows = rows.sort_values("of_copyto").reset_index(drop=True)
    kinds = list(dict.fromkeys(rows["kind"].sort_values()))
    for i, kind in enumerate(kinds):
        mine = rows[rows["kind"] == kind]
        ax.scatter(mine["of_copyto"], mine.index, color=PALETTE[i % len(PALETTE)], label=kind,
                   s=STYLE["marker_size"] ** 2 * 1.6, zorder=3)
    labels = [f"{v} ({w} warps/SM)" for v, w in zip(rows["variant"], rows["warps_per_sm"], strict=True)]
    ax.set_yticks(rows.index, labels)
    ax.axvline(1.0, color=STYLE["ceiling_color"], linestyle="-.", linewidth=1.1, label="cupy.copyto")
    if target is not None:
        ax.axvline(target, color=PALETTE[3], linestyle=":", linewidth=1.5, label=f"target {target:g}")
    low = float(rows["of_copyto"].min()) if len(rows) else 0.9
    ax.set_xlim(min(0.9, low - 0.02), 1.02)
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:.0%}"))
    return _finish(fig, ax, title, "bandwidth / cupy.copyto", "", provenance, legend_loc="upper left")


# ---------------------------------------------------------------------------------------------
# Shared memory: one warp's request, lanes -> words -> 32 banks, and the wavefronts it needs (lesson 4)

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
    fig, ax = _new_axes(ax)
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
        _add_caption(fig, provenance)
    return fig


def time_vs_wavefronts(cost: pd.DataFrame, provenance: str | None = None, ax: Axes | None = None,
                       title: str = "Cost of a bank conflict: time per request against wavefronts") -> Figure:
    """Measured time per warp request (y) against the tracer's wavefronts per request (x), one
    point per access pattern, with the least-squares line time = a + b x wavefronts."""
    fig, ax = _new_axes(ax)
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
    ax.xaxis.set_major_formatter(FuncFormatter(_plain_number))
    ax.xaxis.set_minor_formatter(NullFormatter())
    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:.3g}"))
    return _finish(fig, ax, title, "wavefronts per request (tracer; = Nsight Compute)",
                   "time per warp request per SM (ns)", provenance, legend_loc="upper left")


def wavefront_fit(cost: pd.DataFrame) -> tuple[float, float]:
    """(a, b) of the least-squares line ns_per_request = a + b x wavefronts."""
    slope, intercept = np.polyfit(cost["wavefronts"].astype(float), cost["ns_per_request"], 1)
    return float(intercept), float(slope)


def grouped_fractions(summary: pd.DataFrame, value: str = "of_cupy_copy", group: str = "shape",
                      reference_label: str = "cupy.copyto", provenance: str | None = None,
                      ax: Axes | None = None, title: str | None = None) -> Figure:
    """Bars per variant (colour) in each group (x), as a fraction of a same-run reference (= 1)."""
    fig, ax = _new_axes(ax)
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
    return _finish(fig, ax, title or f"Share of {reference_label} bandwidth, same run", "",
                   f"bandwidth / {reference_label}", provenance)


# ---------------------------------------------------------------------------------------------
# Saving


def save(fig: Figure, path: str | os.PathLike) -> Path:
    """Write the figure as PNG (dpi 120), creating folders; returns the path."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=SAVE_DPI, format="png", facecolor="white")
    return path


# ---------------------------------------------------------------------------------------------
# Lesson 3: one warp's global-memory request, and sweeps of sectors against bandwidth

SECTOR_BYTES = 32
LINE_BYTES = 128
_LINE_GAP = 40  # bytes of blank drawn between two touched lines that are not neighbours


def _line_positions(lines: np.ndarray) -> dict[int, float]:
    """x position of each touched 128-byte line: side by side, a gap where lines are skipped."""
    positions, x, previous = {}, 0.0, None
    for line in sorted(set(int(v) for v in lines)):
        if previous is not None:
            x += LINE_BYTES + (_LINE_GAP if line != previous + 1 else 0)
        positions[line] = x
        previous = line
    return positions


def global_sectors(
    request: pd.DataFrame,
    ax: Axes | None = None,
    title: str | None = None,
    provenance: str | None = None,
) -> Figure:
    """Draw one warp's global-memory request: lanes -> the bytes each touches -> the 32-byte
    sectors and 128-byte lines they fall in. ``request`` is ``MemoryTrace.request(...)``.

    Only the lines the request touches are drawn (a gap marks skipped ones); sectors it touches
    are coloured, with the bytes lanes actually use filled dark. The title gives the sector count
    and useful / moved bytes.
    """
    attrs = request.attrs
    if attrs.get("space") != "global":
        raise ValueError("global_sectors draws global-memory requests; this one is "
                         f"{attrs.get('space', 'not a MemoryTrace.request table')}")
    own = ax is None
    fig, ax = _new_axes(ax)
    if own:
        fig.set_size_inches(9.5, 3.6)
    address = request["address"].to_numpy()
    size = request["bytes"].to_numpy()
    first_line = (address // LINE_BYTES)
    last_line = (address + size - 1) // LINE_BYTES
    touched_lines = np.unique(np.concatenate([np.arange(a, b + 1) for a, b in zip(first_line, last_line,
                                                                                   strict=True)]))
    x_of_line = _line_positions(touched_lines)

    def x_of(byte: float) -> float:
        line = int(byte // LINE_BYTES)
        return x_of_line[line] + (byte - line * LINE_BYTES)

    width = max(x_of_line.values()) + LINE_BYTES
    sectors = set()
    for a, s in zip(address, size, strict=True):
        sectors.update(range(int(a // SECTOR_BYTES), int((a + s - 1) // SECTOR_BYTES) + 1))
    touched, plain, used = PALETTE[5], "#f2f2f2", PALETTE[0]
    for line, x0 in x_of_line.items():
        ax.add_patch(plt.Rectangle((x0, 0.05), LINE_BYTES, 0.25, facecolor="#dddddd", edgecolor="white"))
        if len(x_of_line) <= 16:
            ax.text(x0 + LINE_BYTES / 2, 0.17, f"line {line}", ha="center", va="center",
                    fontsize=STYLE["note_size"] - 1)
        for s in range(4):
            sector = line * 4 + s
            ax.add_patch(plt.Rectangle((x0 + s * SECTOR_BYTES, 0.45), SECTOR_BYTES, 0.5,
                                       facecolor=touched if sector in sectors else plain,
                                       edgecolor="#777777", linewidth=0.6))
    lane_x = np.linspace(width / 64, width - width / 64, 32)
    for lane, a, s in zip(request["lane"], address, size, strict=True):
        left, right = x_of(a), x_of(a + s - 1) + 1
        ax.add_patch(plt.Rectangle((left, 0.45), right - left, 0.5, facecolor=used, edgecolor="none"))
        ax.plot([lane_x[lane], (left + right) / 2], [1.55, 0.95], color=used, linewidth=0.6, alpha=0.7)
    for x0 in x_of_line.values():  # sector edges again, over the used bytes
        for s in range(4):
            ax.add_patch(plt.Rectangle((x0 + s * SECTOR_BYTES, 0.45), SECTOR_BYTES, 0.5, facecolor="none",
                                       edgecolor="#555555", linewidth=0.6))
    for lane in range(32):
        active = lane in set(request["lane"])
        ax.add_patch(plt.Rectangle((lane_x[lane] - width / 80, 1.55), width / 40, 0.3,
                                   facecolor=PALETTE[0] if active else "white", edgecolor=PALETTE[0],
                                   linewidth=0.6))
        if lane % 4 == 0 or lane == 31:
            ax.text(lane_x[lane], 1.95, str(lane), ha="center", va="bottom", fontsize=STYLE["note_size"] - 1)
    ax.set_xlim(-width * 0.01, width * 1.01)
    ax.set_ylim(0, 2.25)
    ax.set_yticks([0.17, 0.7, 1.7], ["128-B lines", "32-B sectors", "lanes"])
    ax.set_xticks([])
    for side in ("top", "right", "bottom", "left"):
        ax.spines[side].set_visible(False)
    ax.tick_params(axis="y", length=0, labelsize=STYLE["tick_size"])
    moved = attrs["moved_bytes"]
    headline = title or f"{attrs['op']} {attrs['array']}  `{attrs['source']}`"
    ax.set_title(f"{headline}\n{attrs['sectors']} sectors per request (ideal {attrs['ideal_sectors']}), "
                 f"{len(x_of_line)} lines; {attrs['useful_bytes']} useful of {moved} bytes moved "
                 f"({attrs['useful_bytes'] / moved:.0%})", fontsize=STYLE["title_size"] - 1, loc="left")
    ax.legend(handles=[Patch(color=used, label="bytes a lane uses"),
                       Patch(color=touched, label="sector moved"),
                       Patch(facecolor=plain, edgecolor="#777777", label="sector not moved")],
              loc="upper right", bbox_to_anchor=(1.0, -0.02), ncols=3, fontsize=STYLE["legend_size"] - 1,
              frameon=False)
    if provenance:
        _add_caption(fig, provenance)
    return fig


def sectors_sweep(
    model: pd.DataFrame,
    kind: str,
    ceiling_gbps: float,
    ceiling_label: str = "measured ceiling",
    provenance: str | None = None,
    title: str | None = None,
) -> Figure:
    """Two panels over an offset or stride sweep: measured useful GB/s beside the sector model
    (ceiling x ideal / actual sectors), with the model's error per point; sectors per request
    from the tracer (and Nsight Compute where recorded) below.

    ``model``: columns param, gbps, model_gbps, error, ld_sectors, st_sectors and optionally
    ncu_ld_sectors (``lessons.coalescing.model_table``).
    """
    fig = plt.figure(figsize=(8.5, 6.4), layout="constrained")
    plt.close(fig)
    top, bottom = fig.subplots(2, 1, sharex=True, height_ratios=[2.2, 1])
    x = model["param"].to_numpy()
    top.plot(x, model["gbps"], color=PALETTE[0], marker="o", markersize=STYLE["marker_size"],
             linewidth=STYLE["line_width"], label="measured (useful bytes / time)")
    top.plot(x, model["model_gbps"], color=PALETTE[1], linestyle="--", marker="s",
             markersize=STYLE["marker_size"] - 1, linewidth=1.4,
             label="model: ceiling x ideal / actual sectors")
    top.axhline(ceiling_gbps, color=STYLE["ceiling_color"], linestyle="-.", linewidth=1.2, zorder=1)
    top.annotate(f"{ceiling_label}: {ceiling_gbps:,.0f} GB/s", xy=(1.0, ceiling_gbps),
                 xycoords=("axes fraction", "data"), xytext=(-4, 4), textcoords="offset points", ha="right",
                 va="bottom", fontsize=STYLE["note_size"], color=STYLE["ceiling_color"], bbox=LABEL_BOX)
    for xi, yi, error in zip(x, model["gbps"], model["error"], strict=True):
        if len(x) <= 16 or xi % 4 in (0, 1):
            top.annotate(f"{error:+.0%}", xy=(xi, yi), xytext=(0, 6), textcoords="offset points", ha="center",
                         fontsize=STYLE["note_size"] - 1.5, color=PALETTE[0])
    low = 0 if kind == "stride" else 0.7 * min(model["gbps"].min(), model["model_gbps"].min())
    top.set_ylim(low, ceiling_gbps * 1.12)
    top.yaxis.set_major_formatter(FuncFormatter(_plain_number))
    name = "start offset (elements of 4 bytes)" if kind == "offset" else "stride (elements of 4 bytes)"
    article = "an" if kind == "offset" else "a"
    headline = f"Copy with {article} {kind}: bandwidth beside the sector model (labels: model error)"
    _finish(fig, top, title or headline,
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
    _finish(fig, bottom, "", name, "Sectors per request", provenance)
    return fig


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
                  legend_loc="upper right")  # the first steps' bars are short: room at the top
    ax.grid(False, axis="y")
    return fig
