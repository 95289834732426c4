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
from matplotlib.lines import Line2D
from matplotlib.ticker import FixedLocator, FuncFormatter, NullFormatter

from .style import (
    LABEL_BOX,
    PALETTE,
    PROVIDER_STYLE,
    STYLE,
    UNITS,
    add_caption,
    binary_ticks,
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
    title: str | None = None,
) -> Figure:
    """Horizontal bars in teaching order (first step on top): each variant's `metric` as a % of
    the ceiling (log scale: steps span orders of magnitude); beside the bars, a column with the
    value and the speed-up over the step above.

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
    fig, (ax, column) = plt.subplots(1, 2, figsize=(8.6, 1.6 + 0.42 * len(names)), sharey=True,
                                     layout="constrained", gridspec_kw={"width_ratios": [3.2, 1.25]})
    plt.close(fig)
    positions = np.arange(len(names))[::-1]
    colors = [PALETTE[0] if v in order else STYLE["reference_bar_color"] for v in names]
    ax.barh(positions, percents, color=colors, height=0.62)
    for y, percent in zip(positions, percents, strict=True):
        inside = 40 <= percent < 100  # a label right of the bar would cross the 100% line: inside it
        ax.annotate(f"{percent:.3g}%", xy=(percent, y), xytext=(-3 if inside else 3, 0),
                    textcoords="offset points", ha="right" if inside else "left", va="center",
                    fontsize=STYLE["note_size"], color="white" if inside else "black")
    ax.set_yticks(positions, [(labels or {}).get(v, v) for v in names])
    label = ceiling_label or "measured ceiling"
    ax.axvline(100, color=STYLE["ceiling_color"], linestyle="-.", linewidth=1.2)
    ax.annotate("100%", xy=(100, 1.0), xycoords=("data", "axes fraction"), xytext=(0, 2),
                textcoords="offset points", ha="center", va="bottom", fontsize=STYLE["note_size"],
                color=STYLE["ceiling_color"])
    ax.set_xscale("log")
    ax.set_xlim(max(1e-3, percents.min() / 2), 100 * 2.5)  # room for the labels of bars near 100%
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}%"))
    ax.set_ylim(-0.6, len(names) - 0.4)
    ax.tick_params(axis="y", length=0)
    finish(fig, ax, title or f"Steps in teaching order: share of the {label}",
           f"% of the {label}, {ceiling:,.0f} {unit} (log scale)", "", None)
    ax.grid(False, axis="y")
    previous = None
    for y, name, value in zip(positions, names, values, strict=True):
        ratio = value / previous if previous and name in order else None
        speedup = "" if ratio is None else f"{ratio:.0f}x" if ratio >= 10 else f"{ratio:.2f}x"
        column.text(0.0, y, f"{value:,.0f}", ha="left", va="center", fontsize=STYLE["note_size"])
        column.text(0.62, y, speedup, ha="left", va="center", fontsize=STYLE["note_size"])
        previous = value if name in order else previous
    column.text(0.0, len(names) - 0.45, unit, ha="left", va="bottom", fontsize=STYLE["note_size"],
                fontweight="bold")
    column.text(0.62, len(names) - 0.45, "speed-up", ha="left", va="bottom",
                fontsize=STYLE["note_size"], fontweight="bold")
    column.set_xlim(0, 1)
    column.axis("off")
    if provenance:
        add_caption(fig, provenance)
    best = int(np.argmax(values))
    return with_alt(fig, f"Horizontal bars, one per variant in teaching order, of {unit} as a share of "
                    f"the {label} ({ceiling:,.0f} {unit}) on a log scale, with each step's speed-up over "
                    f"the one above: from {names[0]} at {percents[0]:.3g}% (top) to {names[-1]} at "
                    f"{percents[-1]:.3g}% (bottom); the highest is {names[best]} at {percents[best]:.3g}%.")


def _ceiling(ax: Axes, value: float, label: str) -> None:
    """The ceiling as a line, its label under the line at the right end (where our curves are flat
    and above it, so the label covers no data)."""
    ax.axhline(value, color=STYLE["ceiling_color"], linestyle="-.", linewidth=1.2, zorder=1)
    ax.annotate(f"{label}: {value:,.0f} GB/s", xy=(1.0, value), xycoords=("axes fraction", "data"),
                xytext=(-4, -3), textcoords="offset points", ha="right", va="top",
                fontsize=STYLE["note_size"], color=STYLE["ceiling_color"], bbox=LABEL_BOX)


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
        _ceiling(ax, ceiling, ceiling_label or "measured ceiling")
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


def size_sweep(
    sweep: pd.DataFrame,
    models: pd.DataFrame,
    ratios: pd.DataFrame,
    reference: str,
    provenance: str | None = None,
    fitted_from: float | None = None,
    errors: dict | None = None,
) -> Figure:
    """The size sweep in two panels: time per call against bytes read (log-log), with the launch
    model t0 + 4N/BW drawn as a wide pale line under the variants it was fitted to (``models``:
    rows variant, x = bytes, value = microseconds), and each variant's bandwidth over the
    reference's (``ratios``: sizes x variants, from versus())."""
    fig, (left, right) = plt.subplots(1, 2, figsize=(11.5, 4.9), layout="constrained")
    plt.close(fig)
    colors = variant_colors(sweep)
    for variant, rows in models.groupby("variant", sort=False):
        rows = rows.sort_values("x")
        if fitted_from is not None:
            rows = rows[rows["x"] >= fitted_from]
        error = f", error <= {errors[variant]:.1%}" if errors and variant in errors else ""
        left.plot(rows["x"], rows["value"], color=colors.get(variant, STYLE["ceiling_color"]), linewidth=8,
                  alpha=0.28, solid_capstyle="butt", label=f"model of {variant}{error}")
    if fitted_from is not None:
        left.axvline(fitted_from, color=STYLE["ceiling_color"], linestyle=":", linewidth=1.0)
        left.annotate("model fitted from here", xy=(fitted_from, 0.02), xycoords=("data", "axes fraction"),
                      xytext=(4, 0), textcoords="offset points", fontsize=STYLE["note_size"] - 1)
    for variant, rows in sweep.groupby("variant", sort=False):
        rows = rows.sort_values("bytes")
        style = PROVIDER_STYLE.get(rows["provider"].iloc[0], PROVIDER_STYLE["gpu_lessons"])
        left.plot(rows["bytes"], 1e3 * rows["median_ms"], color=colors[variant], label=variant,
                  linewidth=STYLE["line_width"] - 0.4, markersize=STYLE["marker_size"] - 1, **style)
    left.set_yscale("log")
    left.yaxis.set_major_formatter(FuncFormatter(plain_number))
    for variant in ratios.columns:
        right.plot(4 * ratios.index.to_numpy(), ratios[variant], color=colors.get(variant, PALETTE[0]),
                   marker="o", linewidth=STYLE["line_width"], markersize=STYLE["marker_size"], label=variant)
    right.axhline(1.0, color=STYLE["ceiling_color"], linestyle="--", linewidth=1.2,
                  label=f"{reference} (= 1)")
    for ax in (left, right):
        ax.set_xscale("log", base=2)
        ticks = binary_ticks(sweep["bytes"].min(), sweep["bytes"].max(), most=7)
        ax.xaxis.set_major_locator(FixedLocator(ticks))
        ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: human_bytes(v)))
        ax.xaxis.set_minor_formatter(NullFormatter())
    finish(fig, left, "Time per call against size", "Bytes read per call", "Time per call (µs, log scale)",
           None)
    left.legend(fontsize=STYLE["legend_size"] - 1, frameon=False, loc="upper left")
    finish(fig, right, f"Bandwidth over {reference}'s", "Bytes read per call",
           f"GB/s / {reference}'s GB/s", None)
    right.legend(fontsize=STYLE["legend_size"] - 1, frameon=False, loc="lower right", ncols=2)
    if provenance:
        add_caption(fig, provenance)
    wins = ", ".join(f"{v} {ratios[v].min():.2f}-{ratios[v].max():.2f}x" for v in ratios.columns)
    return with_alt(fig, "Left: time per call of each reduction against bytes read, log-log, with the fitted "
                    "launch model t0 + 4N/BW drawn under two of them "
                    "over the sizes it was fitted to. Right: each of our kernels' bandwidth "
                    f"over {reference}'s at every size, against a line at 1 (range over sizes: {wins}).")


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
    bottom = math.floor(0.9 * table["gbps"].min() / 500) * 500
    for ax, x, xlabel in ((left, "blocks_per_sm", "Blocks per SM in the grid (256 threads each)"),
                          (right, "waves", "Waves of blocks (blocks / (resident blocks x SMs))")):
        if ceiling is not None:
            _ceiling(ax, ceiling, "copy ceiling")
        ax.set_xscale("log", base=2)
        ticks = binary_ticks(table[x].min(), table[x].max())
        ax.xaxis.set_major_locator(FixedLocator(ticks))
        ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
        ax.xaxis.set_minor_formatter(NullFormatter())
        ax.set_ylim(bottom, top * 1.04)  # the axis starts at `bottom` (the tick labels say where)
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
    """The trees without atomics: SM cycles per tree beyond the same kernel without a tree (bars), per
    setting and blocks per SM, with the notes' rule (the executed paths counted from the source,
    anchored on sequential) as a marker: what the rule predicts, not what ran (the compiler predicates
    the tiles kernels' adds, so every warp issues every level).
    ``model``: divergence_model(), the rows to draw."""
    groups = list(dict.fromkeys(zip(model["setting"], model["blocks_per_sm"], strict=True)))
    kinds = list(dict.fromkeys(model["kind"]))
    fig, ax = new_axes(None)
    fig.set_size_inches(9, 5)
    width = 0.8 / len(kinds)
    for i, kind in enumerate(kinds):
        part = model[model["kind"] == kind].set_index(["setting", "blocks_per_sm"]).reindex(groups)
        x = np.arange(len(groups)) + (i - (len(kinds) - 1) / 2) * width
        ax.bar(x, part["extra_cycles"], width=width * 0.92, color=PALETTE[i], label=f"{kind}: measured")
        ax.scatter(x, part["paths_model_cycles"], marker="_", s=260, linewidths=2.2, color="black", zorder=3,
                   label="the notes' rule on the source's branches (the compiler predicated them)"
                   if i == 0 else None)
        for xi, value in zip(x, part["extra_cycles"], strict=True):
            if np.isfinite(value):
                ax.annotate(f"{value:,.0f}", xy=(xi, value), xytext=(0, 3), textcoords="offset points",
                            ha="center", va="bottom", fontsize=STYLE["note_size"] - 1, bbox=LABEL_BOX)
    ax.set_xticks(np.arange(len(groups)), [f"{s}, {b} block{'s' if b > 1 else ''}/SM" for s, b in groups])
    ax.axhline(0, color=STYLE["ceiling_color"], linewidth=0.8)
    finish(fig, ax, "Trees without atomics: what the tree itself costs",
           "256-element tiles from DRAM; adds predicated: every warp issues every level",
           "SM cycles per tree (minus the kernel without it)", provenance)
    ax.legend(fontsize=STYLE["legend_size"], frameon=False, loc="upper center", ncols=2,
              bbox_to_anchor=(0.5, -0.16))
    costs = ", ".join(f"{r.kind} {r.extra_cycles:,.0f} (rule {r.paths_model_cycles:,.0f})"
                      for r in model.itertuples() if (r.setting, r.blocks_per_sm) == groups[-1])
    return with_alt(fig, "Grouped bars of the SM cycles each shared-memory tree adds per 256-element "
                    "tile, for interleaved (divergent in the source, predicated by the compiler), "
                    "strided-index (bank conflicts) and sequential addressing, at each occupancy, with a "
                    "marker for what the notes' executed-paths rule would predict had the source's branches "
                    "been kept (they were not: every warp issues every level). "
                    f"At {groups[-1][1]} blocks per SM: {costs}.")


def float_errors(frame: pd.DataFrame, provenance: str | None = None,
                 variants: list[str] | None = None) -> Figure:
    """Relative error of each variant's sum (log scale) at each size, with its derived bound where
    there is one (a black tick), 'no bound' where d u >= 1, 'useless bound' where
    gamma_d >= 1 only (a chain of 2^23 adds or more), and
    the number of distinct results over the runs. ``frame``: float_table(); ``variants``: which rows
    to draw, in order (default: all)."""
    if variants is not None:
        frame = frame[frame["variant"].isin(variants)]
    sizes = sorted(frame["size"].unique())
    variants = list(dict.fromkeys(variants or frame["variant"]))
    variants = [v for v in variants if v in set(frame["variant"])]
    fig, ax = new_axes(None)
    fig.set_size_inches(9.5, 1.5 + 0.46 * len(variants))
    height = 0.8 / len(sizes)
    floor = frame.loc[frame["relative_error"] > 0, "relative_error"].min() / 4
    derived = frame["bound"] == "derived"
    right_edge = max(frame["relative_error"].max(), frame.loc[derived, "relative_bound"].max())
    for j, size in enumerate(sizes):
        part = frame[frame["size"] == size].set_index("variant").reindex(variants)
        y = np.arange(len(variants))[::-1] + (j - (len(sizes) - 1) / 2) * height
        shown = part["relative_error"].clip(lower=floor)
        ax.barh(y, shown, height=height * 0.9, color=PALETTE[j], label=f"n = 2^{int(math.log2(size))}")
        for yi, (name, row) in zip(y, part.iterrows(), strict=True):
            if pd.isna(row["runs"]):
                continue
            right = shown[name]
            if row["bound"] == "derived":
                ax.plot([row["relative_bound"]] * 2, [yi - height / 2, yi + height / 2], color="black",
                        linewidth=1.4)
                ax.plot([shown[name], row["relative_bound"]], [yi, yi], color=PALETTE[j], linewidth=0.8,
                        linestyle=":")  # from the bar to its own bound
                right = max(right, row["relative_bound"])
                note = f"error = {row['error_over_bound']:.1e} of the bound"
            elif row["bound"] == "none (d u >= 1)":
                note = "no bound (d u \u2265 1)"
            elif row["bound"].startswith("none"):
                note = "useless bound (\u03b3_d \u2265 1)"
            else:
                note = "order unknown"
            ax.annotate(f"{int(row['distinct_results'])}/{int(row['runs'])} distinct; {note}",
                        xy=(right, yi), xytext=(4, 0), textcoords="offset points", ha="left",
                        va="center", fontsize=STYLE["note_size"] - 1.5, bbox=LABEL_BOX)
    ax.set_yticks(np.arange(len(variants))[::-1], variants)
    ax.set_xscale("log")
    ax.set_xlim(floor, right_edge * 3e4)  # room for the notes right of the longest bar or bound
    ax.xaxis.set_major_locator(FixedLocator([t for t in 10.0 ** np.arange(-12, 1) if floor <= t <= 1]))
    ax.plot([], [], color="black", linewidth=1.4, label="derived bound gamma_d")
    fig = finish(fig, ax, "Float32 sums: error against the float64 sum, and bits per run",
                 "max |sum - exact| / sum|x| over the runs (log scale)", "", provenance,
                 legend_loc="lower right")
    ax.grid(False, axis="y")
    worst = frame.loc[frame["relative_error"].idxmax()]
    return with_alt(fig, "Horizontal bars of each variant's relative error (log scale) at two sizes, with "
                    "its derived error bound where there is one and the number of distinct results over "
                    f"repeated runs. Largest: {worst['variant']} at {worst['relative_error']:.1e}.")


def _elements(held: list[int]) -> str:
    """Which elements a partial sum holds: '0-3' for a run, '0,2,4,6' otherwise."""
    held = sorted(held)
    if len(held) > 2 and held == list(range(held[0], held[-1] + 1)):
        return f"{held[0]}-{held[-1]}"
    return ",".join(map(str, held))


def reduction_tree(schedules: dict) -> Figure:
    """A tree of 8 partial sums halving 8 -> 4 -> 2 -> 1, one panel per way of indexing it: boxes are
    the 8 words of shared memory at each level (filled: a partial sum still to be added; the label
    says which elements it holds), lines join the two words each thread adds, labelled with the
    thread. ``schedules``: kind -> tree_schedule(kind, block=8)."""
    fig, axes = plt.subplots(1, len(schedules), figsize=(4.1 * len(schedules), 4.4), layout="constrained")
    plt.close(fig)
    axes = np.atleast_1d(axes)
    summary = []
    for ax, (kind, schedule) in zip(axes, schedules.items(), strict=True):
        words = int(max(schedule["src"].max(), schedule["dst"].max())) + 1
        levels = int(schedule["level"].max()) + 1
        held = {w: [w] for w in range(words)}
        live = set(range(words))
        for level in range(levels + 1):
            for w in range(words):
                filled = w in live
                ax.add_patch(plt.Rectangle((w - 0.42, level - 0.24), 0.84, 0.48,
                                           facecolor=PALETTE[0] if filled else "#f2f2f2",
                                           edgecolor="#888888", linewidth=0.6, zorder=2))
                if filled:
                    ax.text(w, level, _elements(held[w]), ha="center", va="center",
                            fontsize=6.5 if len(held[w]) > 2 else 8, color="white", zorder=3)
            if level == levels:
                break
            step = schedule[schedule["level"] == level]
            for row in step.itertuples():
                for source in (row.src, row.dst):
                    ax.plot([source, row.dst], [level + 0.24, level + 1 - 0.24], color=PALETTE[1],
                            linewidth=1.3, zorder=1)
                ax.annotate(f"t{row.thread}", xy=(row.dst, level + 0.5), xytext=(-3, 0),
                            textcoords="offset points", ha="right", va="center",
                            fontsize=STYLE["note_size"] - 0.5, color=PALETTE[1])
            for row in step.itertuples():
                held[row.dst] = held[row.dst] + held[row.src]
                live.discard(row.src)
            summary.append(f"{kind} level {level}: threads {', '.join(map(str, step['thread']))}")
        ax.set_xlim(-0.6, words - 0.4)
        ax.set_ylim(levels + 0.5, -0.5)
        ax.set_xticks(range(words), [str(w) for w in range(words)])
        ax.set_yticks(range(levels + 1), [f"{words >> level} sum{'s' if words >> level > 1 else ''}"
                                          for level in range(levels + 1)])
        strides = schedule.groupby("level")["s"].first().tolist()
        ax.set_title(f"{kind} (s = {', '.join(map(str, strides))})", fontsize=STYLE["label_size"], loc="left")
        ax.set_xlabel("shared-memory word", fontsize=STYLE["label_size"])
        ax.tick_params(labelsize=STYLE["tick_size"], length=0)
        for side in ("top", "right", "left", "bottom"):
            ax.spines[side].set_visible(False)
    return with_alt(fig, "Three small reduction trees of 8 values, 8 to 4 to 2 to 1 partial sums, one per "
                    "indexing (interleaved, strided index, sequential): boxes are shared-memory words "
                    "labelled with the elements they hold, lines join the words each thread adds. "
                    + "; ".join(summary) + ".")


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
            ax.annotate(f"{count} warp{'s' if count != 1 else ''}", xy=(1.0, level),
                        xycoords=("axes fraction", "data"), xytext=(4, 0),
                        textcoords="offset points", va="center", fontsize=STYLE["note_size"] - 1)
        strides = schedule.groupby("level")["s"].first()
        ax.set_yticks(range(levels), [f"s={s}" for s in strides])
        ax.set_title(f"{kind}: {int(warps.sum())} warp instructions for the add",
                     fontsize=STYLE["label_size"], loc="left")
        ax.tick_params(labelsize=STYLE["tick_size"] - 1)
        summary.append(f"{kind} {int(warps.sum())}")
    axes[-1].set_xlabel("thread index (vertical lines: warp boundaries, every 32 threads)",
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
        ax.set_xlabel("shuffle step (offset)", fontsize=STYLE["label_size"])
        ax.tick_params(labelsize=STYLE["tick_size"])
        for side in ("top", "right"):
            ax.spines[side].set_visible(False)
    axes[0].set_ylabel("lane", fontsize=STYLE["label_size"])
    first = next(iter(steps.values()))
    handles = [Line2D([], [], color=PALETTE[step % len(PALETTE)], linewidth=1.6, label=f"offset {offset}")
               for step, offset in first.groupby("step")["offset"].first().items()]
    handles.append(Line2D([], [], color="#b0b0b0", linewidth=1.2, linestyle="--",
                          label="past the warp's end: own value"))
    fig.legend(handles=handles, loc="outside lower center", ncols=len(handles), frameon=False,
               fontsize=STYLE["legend_size"] - 1)
    return with_alt(fig, "Two diagrams of a warp's 32 lanes over five shuffle steps (offsets 16, 8, 4, "
                    "2, 1): lines join the lane a value is read from to the lane that adds it. With "
                    "shfl_down only lane 0 ends with the whole sum, and lanes past the end read their own "
                    "value (dashed); with shfl_xor the lanes swap in pairs and every lane ends with the "
                    "whole sum.")
