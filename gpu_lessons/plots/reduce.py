"""Lesson 5's figures: the steps in teaching order against a ceiling, a metric against size or grid."""

from __future__ import annotations

import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.ticker import FixedLocator, FuncFormatter, NullFormatter

from .style import (
    PALETTE,
    PROVIDER_STYLE,
    STYLE,
    UNITS,
    binary_ticks,
    draw_ceiling,
    finish,
    human_bytes,
    new_axes,
    plain_number,
    variant_colors,
)


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
    fig, ax = new_axes(ax)
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
    fig = finish(fig, ax, title or f"Steps in teaching order: share of the {label}",
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
    fig, ax = new_axes(ax)
    colors = variant_colors(table)
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
        draw_ceiling(ax, ceiling, ceiling_label or "measured ceiling")
    ax.set_xscale("log", base=2)
    ticks = binary_ticks(table[x].min(), table[x].max(), most=12)
    ax.xaxis.set_major_locator(FixedLocator(ticks))
    formatter = (lambda v, _: human_bytes(v)) if x == "bytes" else (lambda v, _: f"{v:g}")
    ax.xaxis.set_major_formatter(FuncFormatter(formatter))
    ax.xaxis.set_minor_formatter(NullFormatter())
    if log_y:
        ax.set_yscale("log")
        ax.yaxis.set_major_formatter(FuncFormatter(plain_number))
    else:
        top = max(table["_value"].max(), ceiling or 0)
        ax.set_ylim(0, top * 1.12)
        ax.yaxis.set_major_formatter(FuncFormatter(plain_number))
    ylabel = {"gbps": "Bandwidth (GB/s)", "gflops": "GFLOP/s", "median_ms": "Time (ms)",
              "median_us": "Time (us)"}.get(metric, metric)
    return finish(fig, ax, title or f"{ylabel} against {x}", xlabel or x, ylabel, provenance)
