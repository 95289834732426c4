"""Lesson 5's figures: the steps in teaching order against a ceiling, a metric against size or grid,
vec4's waves, the trees without atomics against their models, the floating-point errors, and two
concept pictures drawn from the kernels' own index arithmetic (which threads each tree level keeps
busy; which lane each shuffle reads). Every figure carries alt text."""

from __future__ import annotations

import math

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.colors import ListedColormap
from matplotlib.figure import Figure
from matplotlib.ticker import FixedLocator, FuncFormatter, NullFormatter

from .style import (
    LABEL_BOX,
    PALETTE,
    PROVIDER_STYLE,
    STYLE,
    UNITS,
    add_caption,
    binary_ticks,
    draw_ceiling,
    finish,
    human_bytes,
    new_axes,
    plain_number,
    variant_colors,
    with_alt,
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
    best = int(np.argmax(values))
    return with_alt(fig, f"Horizontal bars, one per variant in teaching order, of {unit} as a share of "
                    f"the {label} ({ceiling:,.0f} {unit}) on a log scale: from {names[0]} at "
                    f"{percents[0]:.3g}% to {names[best]} at {percents[best]:.3g}%.")


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
    fig = finish(fig, ax, title or f"{ylabel} against {x}", xlabel or x, ylabel, provenance)
    variants = ", ".join(dict.fromkeys(table["variant"]))
    return with_alt(fig, f"{ylabel} against {xlabel or x} (log scale), one line per variant: {variants}"
                    + (f"; the measured ceiling is drawn at {ceiling:,.0f} GB/s" if ceiling else "") + ".")


def waves(table: pd.DataFrame, ceiling: float | None = None, provenance: str | None = None) -> Figure:
    """vec4 and its twins at 2^28: GB/s against blocks per SM (left) and against waves of blocks,
    blocks / (resident blocks per SM x SMs) (right, whole waves marked). ``table``: waves_table()."""
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.6), layout="constrained", sharey=True)
    plt.close(fig)
    colors = variant_colors(table)
    for variant, rows in table.groupby("variant", sort=False):
        rows = rows.sort_values("blocks_per_sm")
        label = f"{variant} ({rows['resident_per_sm'].iloc[0]} resident/SM, {rows['registers'].iloc[0]} regs)"
        for ax, x in ((left, "blocks_per_sm"), (right, "waves")):
            ax.plot(rows[x], rows["gbps"], color=colors[variant], marker="o", linewidth=STYLE["line_width"],
                    markersize=STYLE["marker_size"], label=label if ax is left else None)
    top = max(table["gbps"].max(), ceiling or 0)
    for ax, x, xlabel in ((left, "blocks_per_sm", "Blocks per SM in the grid (256 threads each)"),
                          (right, "waves", "Waves of blocks (blocks / (resident blocks x SMs))")):
        if ceiling is not None:
            draw_ceiling(ax, ceiling, "measured ceiling")
        ax.set_xscale("log", base=2)
        ticks = binary_ticks(table[x].min(), table[x].max())
        ax.xaxis.set_major_locator(FixedLocator(ticks))
        ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
        ax.xaxis.set_minor_formatter(NullFormatter())
        ax.set_ylim(0, top * 1.12)
        ax.yaxis.set_major_formatter(FuncFormatter(plain_number))
        finish(fig, ax, "", xlabel, "Bandwidth (GB/s)" if ax is left else "", None)
    for whole in range(1, int(math.ceil(table["waves"].max())) + 1):
        right.axvline(whole, color=STYLE["grid_color"], linewidth=1.6, zorder=0)
    left.legend(fontsize=STYLE["legend_size"] - 1, frameon=False, loc="lower right")
    left.set_title("vec4 and its twins, sum of 2^28 float32", fontsize=STYLE["title_size"], loc="left")
    right.set_title("the same, against waves (whole waves: grey lines)", fontsize=STYLE["title_size"],
                    loc="left")
    if provenance:
        add_caption(fig, provenance)
    dips = table.loc[table.groupby("variant")["of_best"].idxmin()]
    worst = ", ".join(f"{r.variant} {r.of_best:.2f} of its best at {r.blocks_per_sm} blocks/SM"
                      for r in dips.itertuples())
    return with_alt(fig, "Two line charts of bandwidth for vec4 and its twins (launch bounds, register cap, "
                    "two loads in flight, residency capped by shared memory): against blocks per SM, and "
                    f"against waves of blocks with whole waves marked. Lowest points: {worst}.")


def tree_costs(model: pd.DataFrame, provenance: str | None = None) -> Figure:
    """The trees without atomics: SM cycles per tree over the same frame without a tree (bars), per
    setting and blocks per SM, with the two models' predictions (markers). ``model``: divergence_model()."""
    groups = list(dict.fromkeys(zip(model["setting"], model["blocks_per_sm"], strict=True)))
    kinds = list(dict.fromkeys(model["kind"]))
    fig, ax = new_axes(None)
    fig.set_figwidth(8.5)
    width = 0.8 / len(kinds)
    for i, kind in enumerate(kinds):
        part = model[model["kind"] == kind].set_index(["setting", "blocks_per_sm"]).reindex(groups)
        x = np.arange(len(groups)) + (i - (len(kinds) - 1) / 2) * width
        ax.bar(x, part["extra_cycles"], width=width * 0.92, color=PALETTE[i], label=f"{kind} (measured)")
        ax.scatter(x, part["paths_model_cycles"], marker="_", s=180, color="black", zorder=3,
                   label="model: sum of executed paths" if i == 0 else None)
        ax.scatter(x, part["wavefronts_model_cycles"], marker="x", s=30, color="black", zorder=3,
                   label="model: shared wavefronts" if i == 0 else None)
        for xi, value in zip(x, part["extra_cycles"], strict=True):
            if np.isfinite(value):
                ax.annotate(f"{value:,.0f}", xy=(xi, value), xytext=(0, 3), textcoords="offset points",
                            ha="center", va="bottom", fontsize=STYLE["note_size"] - 1)
    ax.set_xticks(np.arange(len(groups)), [f"{s}\n{b} blocks/SM" for s, b in groups])
    ax.axhline(0, color=STYLE["ceiling_color"], linewidth=0.8)
    fig = finish(fig, ax, "Trees without atomics: what the tree itself costs",
                 "tiles: streamed from DRAM, partials per block; repeat: one tile reduced again and again",
                 "SM cycles per tree over the frame without a tree", provenance, legend_loc="upper left")
    costs = ", ".join(f"{r.kind} {r.extra_cycles:,.0f}" for r in model.itertuples()
                      if (r.setting, r.blocks_per_sm) == groups[-1])
    return with_alt(fig, "Grouped bars of the SM cycles each shared-memory tree adds per 256-element "
                    "tile, for interleaved (divergent), strided-index (bank conflicts) and sequential "
                    "addressing, in two settings and two occupancies, with markers for the executed-paths "
                    f"and wavefront models. In {groups[-1][0]} at {groups[-1][1]} blocks per SM: {costs}.")


def float_errors(frame: pd.DataFrame, provenance: str | None = None) -> Figure:
    """Relative error of each variant's sum (log scale) at each size, with its derived bound where
    there is one, 'no bound' where gamma_d is infinite, and the number of distinct results per runs.
    ``frame``: float_table()."""
    sizes = sorted(frame["size"].unique())
    variants = list(dict.fromkeys(frame["variant"]))
    fig, ax = new_axes(None)
    fig.set_figheight(1.4 + 0.42 * len(variants))
    fig.set_figwidth(9)
    height = 0.8 / len(sizes)
    floor = frame.loc[frame["relative_error"] > 0, "relative_error"].min() / 4
    for j, size in enumerate(sizes):
        part = frame[frame["size"] == size].set_index("variant").reindex(variants)
        y = np.arange(len(variants))[::-1] + (j - (len(sizes) - 1) / 2) * height
        shown = part["relative_error"].clip(lower=floor)
        ax.barh(y, shown, height=height * 0.9, color=PALETTE[j], label=f"n = 2^{int(math.log2(size))}")
        for yi, (name, row) in zip(y, part.iterrows(), strict=True):
            if pd.isna(row["runs"]):
                continue
            if row["bound"] == "derived":
                relative_bound = row["relative_bound"]
                ax.plot([relative_bound] * 2, [yi - height / 2, yi + height / 2], color="black",
                        linewidth=1.4)
                note = f"{row['error_over_bound']:.1e} of bound"
            else:
                note = "no bound" if row["bound"].startswith("none") else "bound not derived"
            exact = " (exact)" if row["relative_error"] == 0 else ""
            right = max(shown[name], row["relative_bound"] if np.isfinite(row["relative_bound"]) else 0)
            ax.annotate(f"{int(row['distinct_results'])}/{int(row['runs'])} distinct, {note}{exact}",
                        xy=(right, yi), xytext=(4, 0), textcoords="offset points", ha="left",
                        va="center", fontsize=STYLE["note_size"] - 1.5, bbox=LABEL_BOX)
    ax.set_yticks(np.arange(len(variants))[::-1], variants)
    ax.set_xscale("log")
    ax.set_xlim(floor, frame["relative_bound"].replace(np.inf, np.nan).max() * 1e4)
    ax.plot([], [], color="black", linewidth=1.4, label="derived bound gamma_d")
    fig = finish(fig, ax, "Float32 sums: error against the float64 sum, and bits per run",
                 "max |sum - exact| / sum|x| over the runs (log scale)", "", provenance,
                 legend_loc="lower right")
    ax.grid(False, axis="y")
    worst = frame.loc[frame["relative_error"].idxmax()]
    return with_alt(fig, "Horizontal bars of each variant's relative error (log scale) at two sizes, with "
                    "its derived error bound where there is one and the number of distinct results over "
                    f"repeated runs. Largest: {worst['variant']} at {worst['relative_error']:.1e}.")


def tree_activity(schedules: dict) -> Figure:
    """Which of the 256 threads each tree level keeps busy, one panel per tree (rows: levels; columns:
    threads; warps 32 wide), and how many warps must execute the add at each level: the divergence
    model's count. ``schedules``: kind -> tree_schedule(kind)."""
    fig, axes = plt.subplots(len(schedules), 1, figsize=(9, 1.3 + 1.5 * len(schedules)), layout="constrained")
    plt.close(fig)
    axes = np.atleast_1d(axes)
    summary = []
    for ax, (kind, schedule) in zip(axes, schedules.items(), strict=True):
        levels = int(schedule["level"].max()) + 1
        threads = 256 if schedule["thread"].max() < 256 else int(schedule["thread"].max()) + 1
        image = np.zeros((levels, threads))
        image[schedule["level"], schedule["thread"]] = 1
        ax.imshow(image, aspect="auto", cmap=ListedColormap(["#f2f2f2", PALETTE[0]]), interpolation="nearest")
        for edge in range(32, threads, 32):
            ax.axvline(edge - 0.5, color=STYLE["ceiling_color"], linewidth=0.7)
        warps = schedule.groupby("level")["warp"].nunique()
        for level, count in warps.items():
            ax.annotate(f"{count} warps", xy=(1.0, level), xycoords=("axes fraction", "data"), xytext=(4, 0),
                        textcoords="offset points", va="center", fontsize=STYLE["note_size"] - 1)
        strides = schedule.groupby("level")["s"].first()
        ax.set_yticks(range(levels), [f"s={s}" for s in strides])
        ax.set_title(f"{kind}: {int(warps.sum())} warp instructions for the add",
                     fontsize=STYLE["label_size"], loc="left")
        ax.tick_params(labelsize=STYLE["tick_size"] - 1)
        summary.append(f"{kind} {int(warps.sum())}")
    axes[-1].set_xlabel("thread index (grey lines: warp boundaries, every 32 threads)",
                        fontsize=STYLE["label_size"])
    return with_alt(fig, "For each shared-memory tree, a grid of tree levels by the 256 threads of a block, "
                    "coloured where a thread adds at that level, with the number of warps that must execute "
                    f"the add. Warp instructions in all: {', '.join(summary)}.")


def shuffle_butterflies(steps: dict) -> Figure:
    """Which lane each lane reads at each step of a warp reduction, one panel per shuffle kind
    (``steps``: kind -> shuffle_steps(kind)). Dashed grey: shfl_down past the warp's end returns
    the lane's own value."""
    fig, axes = plt.subplots(1, len(steps), figsize=(5 * len(steps), 6.2), layout="constrained", sharey=True)
    plt.close(fig)
    axes = np.atleast_1d(axes)
    for ax, (kind, frame) in zip(axes, steps.items(), strict=True):
        width = int(frame["lane"].max()) + 1
        for row in frame.itertuples():
            style = ({"color": PALETTE[row.step % len(PALETTE)], "linewidth": 0.9} if row.in_range
                     else {"color": "#b0b0b0", "linewidth": 0.7, "linestyle": "--"})
            ax.plot([row.step, row.step + 1], [row.source, row.lane], **style)
        offsets = frame.groupby("step")["offset"].first()
        ax.set_xticks(range(len(offsets) + 1), ["start", *[f"after {o}" for o in offsets]], rotation=30)
        ax.set_ylim(width - 0.5, -0.5)
        ax.set_yticks(range(0, width, 4))
        ax.set_title(f"shfl_{kind}_sync", fontsize=STYLE["title_size"], loc="left")
        ax.tick_params(labelsize=STYLE["tick_size"])
        for side in ("top", "right"):
            ax.spines[side].set_visible(False)
    axes[0].set_ylabel("lane", fontsize=STYLE["label_size"])
    return with_alt(fig, "Two diagrams of a warp's 32 lanes over five shuffle steps (offsets 16, 8, 4, "
                    "2, 1): lines join the lane a value is read from to the lane that adds it. With "
                    "shfl_down only lane 0 ends with the whole sum, and lanes past the end read their own "
                    "value (dashed); with shfl_xor the lanes swap in pairs and every lane ends with the "
                    "whole sum.")
