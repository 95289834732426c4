"""Lesson 2's figures: an ILP timeline (the lesson's model), bandwidth against bytes in flight with Little's
Law, the latency a copy implies against its load, FMA chains x warps, register pressure, the occupancy
staircase, copies against resident warps (the 50% rule), copies at low occupancy, what resident warps are
doing (ncu).

Each takes the frame a reader of ``gpu_lessons.lessons.littles_law`` returns, draws nothing else, and
carries alt text made from that frame."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch
from matplotlib.ticker import FixedLocator, FuncFormatter, NullFormatter

from .style import (
    LABEL_BOX,
    PALETTE,
    STYLE,
    binary_ticks,
    draw_ceiling,
    finish,
    human_bytes,
    new_axes,
    plain_number,
    with_alt,
)


def littles_law_memory(points: pd.DataFrame, provenance: str | None = None,
                       title: str = "Little's Law for memory: bandwidth against bytes in flight") -> Figure:
    """One column per bytes per load (4, 8, 16): top, measured copy GB/s against read bytes in flight
    per SM (log-log), one colour per loads per thread, joined in order of warps, beside the lines Little's
    Law draws from the chase's and the light copies' latency, capped by the ceiling, and the fit below the
    knee; bottom, each copy's measured / predicted at the chase's latency.

    points: lessons.littles_law.memory_points (attrs latency_ns, ceiling_gbps, sms)."""
    widths = sorted(points["width"].unique())
    fig = plt.figure(figsize=(STYLE["figsize"][0] * 1.3, STYLE["figsize"][1] * 1.3), layout="constrained")
    plt.close(fig)
    axes = fig.subplots(2, len(widths), sharex=True, sharey="row", height_ratios=[3, 1.1], squeeze=False)
    latency, ceiling, sms = (points.attrs[key] for key in ("latency_ns", "ceiling_gbps", "sms"))
    unrolls = sorted(points["unroll"].unique())
    colors = {u: PALETTE[i % len(PALETTE)] for i, u in enumerate(unrolls)}
    inflight = points["bytes_in_flight_per_sm"]
    x = np.geomspace(inflight.min() / 1.5, inflight.max() * 1.5, 300)
    model = np.minimum(ceiling, 2 * x * sms / latency)
    light = points.attrs.get("light_load_latency_ns")
    fit = points.attrs.get("below_knee_fit")
    ratios = points["gbps"] / points["predicted_gbps"]
    for column, width in enumerate(widths):
        ax, low = axes[0, column], axes[1, column]
        mine = points[points["width"] == width]
        for unroll, rows in mine.groupby("unroll"):
            rows = rows.sort_values("bytes_in_flight_per_sm")
            style = {"color": colors[unroll], "marker": "o", "markersize": 4.5, "linewidth": 0.9,
                     "markeredgecolor": "white", "markeredgewidth": 0.4, "zorder": 3}
            ax.plot(rows["bytes_in_flight_per_sm"], rows["gbps"], **style)
            low.plot(rows["bytes_in_flight_per_sm"], rows["gbps"] / rows["predicted_gbps"], **style)
        ax.plot(x, model, color=STYLE["roof_color"], linewidth=STYLE["line_width"], zorder=2,
                label=f"Little's Law at the\nchase's {latency:,.0f} ns")
        if light and np.isfinite(light):
            ax.plot(x, np.minimum(ceiling, 2 * x * sms / light), color=STYLE["roof_color"], linestyle="--",
                    linewidth=1.1, zorder=2, label=f"... at the light\ncopies' {light:,.0f} ns")
        if fit:
            span = np.geomspace(fit["from_bytes"], fit["to_bytes"], 50)
            ax.plot(span, np.exp(fit["intercept"]) * span ** fit["slope"], color=PALETTE[4], linestyle=":",
                    linewidth=2.0, zorder=4,
                    label=f"fit below the knee\n({fit['copies']} copies, all widths):\n"
                          f"slope {fit['slope']:.2f}")
        if column == 0:
            draw_ceiling(ax, ceiling, "measured ceiling")
        else:
            ax.axhline(ceiling, color=STYLE["ceiling_color"], linestyle="-.", linewidth=1.2, zorder=1)
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")  # Little's Law is a line of slope 1 here, until the ceiling
        ax.set_ylim(min(points["gbps"].min(), model.min()) / 1.5, ceiling * 1.6)
        ax.yaxis.set_major_formatter(FuncFormatter(plain_number))
        ax.yaxis.set_minor_formatter(NullFormatter())
        finish(fig, ax, f"{width}-byte loads ({len(mine)} copies)", "",
               "Copy bandwidth (GB/s, read + write)" if column == 0 else "", None)
        low.axhline(1.0, color=STYLE["roof_color"], linewidth=1.0)
        low.set_ylim(min(0.0, ratios.min() * 0.9), max(1.2, ratios.max() * 1.1))
        low.xaxis.set_major_locator(FixedLocator(binary_ticks(x.min(), x.max())[::2]))
        low.xaxis.set_major_formatter(FuncFormatter(lambda value, _: human_bytes(value)))
        low.xaxis.set_minor_formatter(NullFormatter())
        finish(fig, low, "", "Read bytes in flight per SM" if column == len(widths) // 2 else "",
               f"measured /\npredicted\nat {latency:,.0f} ns" if column == 0 else "",
               provenance if column == len(widths) - 1 else None)
    lines = axes[0, 0].get_legend_handles_labels()[0]
    for ax in axes.flat:  # the legends, where the panels are empty (right of the rise, under the ceiling)
        if ax.get_legend() is not None:
            ax.get_legend().remove()
    axes[0, 0].legend(handles=lines, fontsize=STYLE["legend_size"] - 1.5, frameon=False, loc="lower right")
    axes[0, -1].legend(handles=[Line2D([], [], color=colors[u], marker="o", linewidth=0.9,
                                       label=f"{u} load(s) per thread") for u in unrolls],
                       fontsize=STYLE["legend_size"] - 1, frameon=False, loc="lower right")
    fig.suptitle(f"{title} (a line joins one kind of copy at 2 to 64 warps/SM)", x=0.01, ha="left",
                 fontsize=STYLE["title_size"])
    light_text = f" and the {light:,.0f} ns the lightest copies imply (dashed)" if light else ""
    if fit:
        light_text += (f", and a dotted line fitted to the {fit['copies']} copies below the knee, of slope "
                       f"{fit['slope']:.2f} where the law's is 1")
    return with_alt(fig, f"Three log-log panels, one per bytes per load ({', '.join(map(str, widths))}), of "
                    f"{len(points)} copies in all: bandwidth in GB/s against read bytes in flight per SM "
                    f"({human_bytes(inflight.min())} to {human_bytes(inflight.max())}), one coloured line "
                    "per loads per thread joining its copies in order of warps, with Little's Law's lines "
                    "for the "
                    f"{latency:,.0f} ns pointer-chase latency{light_text}, up to the {ceiling:,.0f} GB/s "
                    f"ceiling; below, each copy's measured / predicted ratio, from {ratios.min():.2f} to "
                    f"{ratios.max():.2f}.")


def _warps(count) -> str:
    return f"{count:g} warp{'' if count == 1 else 's'}/SM"


def littles_law_fma(points: pd.DataFrame, provenance: str | None = None, split: int = 8,
                    title: str = "Little's Law for arithmetic: FMA rate against chains and warps") -> Figure:
    """Share of the FP32 peak against independent chains per thread, one line per resident warps per
    SM, solid measured beside the dashed 4-scheduler model (points: lessons.littles_law.fma_points).
    Two panels sharing the y axis: fewer than ``split`` warps per SM (at most one per scheduler), where
    warps and chains multiply, and ``split`` or more, where the model lines meet at 100% and the measured
    lines lie almost on top of each other; each line is labelled at its ends."""
    fig = plt.figure(figsize=(STYLE["figsize"][0] * 1.25, STYLE["figsize"][1] * 1.05), layout="constrained")
    plt.close(fig)
    left, right = fig.subplots(1, 2, sharey=True)
    latency = points.attrs.get("latency_cycles", float("nan"))
    chains = sorted(points["chains"].unique())
    note = STYLE["note_size"] - 0.5
    groups = list(points.groupby("warps_per_sm"))
    few = [(w, r) for w, r in groups if w < split]
    many = [(w, r) for w, r in groups if w >= split]
    for ax, mine in ((left, few), (right, many)):
        for i, (warps, rows) in enumerate(mine):
            rows = rows.sort_values("chains")
            color = PALETTE[(i + (0 if ax is left else 3)) % len(PALETTE)]
            ax.plot(rows["chains"], 100 * rows["fraction_of_peak"], color=color, marker="o",
                    linewidth=STYLE["line_width"], markersize=STYLE["marker_size"],
                    label=f"{_warps(warps)}, measured")
            ax.plot(rows["chains"], 100 * rows["predicted_fraction"], color=color, linestyle="--",
                    linewidth=1.1, label=f"{_warps(warps)}, model")
        ax.xaxis.set_major_locator(FixedLocator(chains))
        ax.set_xlim(0.5, max(chains) + 0.8)
        ax.yaxis.set_major_formatter(FuncFormatter(lambda value, _: f"{value:.0f}%"))
    for i, (_, rows) in enumerate(few):
        last = rows.sort_values("chains").iloc[-1]
        for column, dy in (("fraction_of_peak", -11), ("predicted_fraction", 4)):
            left.annotate(f"{100 * last[column]:.0f}%", xy=(last["chains"], 100 * last[column]),
                          xytext=(0, dy), textcoords="offset points", ha="center", fontsize=note,
                          color=PALETTE[i % len(PALETTE)])
    if many:  # the model lines meet at 100%; the measured lines nearly coincide: say both in words
        model_one = ", ".join(f"{100 * r.sort_values('chains')['predicted_fraction'].iloc[0]:.0f}% at {w:g}"
                              for w, r in many)
        full = max(int(r.loc[r["predicted_fraction"] >= 0.999, "chains"].min()) for _, r in many)
        right.text(0.3, 0.6, f"dashed, the model: with 1 chain\n{model_one} warps/SM;\n"
                   f"100% for all from {full} chains", transform=right.transAxes, ha="left", va="center",
                   fontsize=note, bbox=LABEL_BOX)
        measured = pd.concat([r for _, r in many]).pivot(index="chains", columns="warps_per_sm",
                                                         values="fraction_of_peak")
        spread = float((measured.max(axis=1) - measured.min(axis=1)).max())
        at_end = measured.iloc[-1]
        target = measured.loc[3].min() if 3 in measured.index else at_end.min()
        right.annotate(f"solid, measured: {', '.join(f'{w:g}' for w in measured.columns)} warps/SM\n"
                       f"at most {100 * spread:.1f} points apart", xy=(3, 100 * target),
                       xytext=(0.3, 0.42), textcoords="axes fraction", ha="left", va="center", fontsize=note,
                       bbox=LABEL_BOX, arrowprops={"arrowstyle": "->", "color": "#555555", "linewidth": 0.8})
    left.set_ylim(0, 108)
    handles = [Line2D([], [], color=PALETTE[i % len(PALETTE)], marker="o", linewidth=STYLE["line_width"],
                      markersize=STYLE["marker_size"], label=_warps(w)) for i, (w, _) in enumerate(few)]
    handles += [Line2D([], [], color="#555555", marker="o", linewidth=STYLE["line_width"],
                       markersize=STYLE["marker_size"], label="solid: measured"),
                Line2D([], [], color="#555555", linestyle="--", linewidth=1.1, label="dashed: model")]
    left.legend(handles=handles, fontsize=STYLE["legend_size"] - 1, frameon=False, loc="center",
                bbox_to_anchor=(0.66, 0.6), ncols=1)
    right.legend(fontsize=STYLE["legend_size"] - 1, frameon=False, loc="lower right", ncols=2,
                 bbox_to_anchor=(1.0, 0.02))
    finish(fig, left, f"Fewer than {split} warps/SM", "Independent FMA chains per thread",
           "% of theoretical FP32 peak", None)
    finish(fig, right, f"{split} or more warps/SM", "Independent FMA chains per thread", "", provenance)
    fig.suptitle(f"{title} (model: 4 schedulers, FMA latency {latency:.1f} cycles)", x=0.01, ha="left",
                 fontsize=STYLE["title_size"])
    described = ""
    if many:
        described = (f"; at {', '.join(f'{w:g}' for w, _ in many)} warps per SM the model lines meet at "
                     f"100% while the measured lines lie within {100 * spread:.1f} points of each other, "
                     f"from "
                     f"{100 * measured.iloc[0].min():.0f}% with one chain to {100 * at_end.max():.0f}% with "
                     f"{chains[-1]}")
    tops = ", ".join(f"{100 * r['fraction_of_peak'].max():.0f}%" for _, r in few)
    return with_alt(fig, f"Two panels of the share of the FP32 peak against independent FMA chains per "
                    f"thread (1 to {max(chains)}), one solid measured line and one dashed model line (4 "
                    f"schedulers, FMA latency {latency:.1f} cycles) per resident warps per SM: left, "
                    f"{', '.join(f'{w:g}' for w, _ in few)} warps per SM, the measured lines levelling off "
                    f"at "
                    f"{tops}{described}.")


def register_pressure(rows: pd.DataFrame, provenance: str | None = None,
                      title: str = "What unrolling costs: registers, resident warps, spills, bandwidth"
                      ) -> Figure:
    """Three panels, one column per 16-byte copy (rows: lessons.littles_law.register_pressure):
    registers per thread (orange where values spill to local memory, labelled with the local bytes),
    resident warps per SM, and the copy's GB/s."""
    fig = plt.figure(figsize=(9.0, STYLE["figsize"][1] * 1.55), layout="constrained")
    plt.close(fig)
    top, middle, bottom = fig.subplots(3, 1, sharex=True, height_ratios=[3, 1.6, 2])
    labels = [f"u{int(u)}" + (f"\ncap\n{int(m)}" if pd.notna(m) else "")
              for u, m in zip(rows["unroll"], rows["max_registers"], strict=True)]
    positions = np.arange(len(rows))
    spills = rows["local_bytes"].fillna(0).to_numpy() > 0
    colors = [PALETTE[1] if spill else PALETTE[0] for spill in spills]
    note = STYLE["note_size"] - 0.5
    top.bar(positions, rows["registers"], color=colors, width=0.62)
    for x, regs, spill, local in zip(positions, rows["registers"], spills, rows["local_bytes"], strict=True):
        top.annotate(f"{int(regs)}" + (f"\n+{int(local)} B" if spill else ""), xy=(x, regs), xytext=(0, 2),
                     textcoords="offset points", ha="center", va="bottom", fontsize=note)
    top.set_ylim(0, 330)
    top.legend(handles=[Patch(color=PALETTE[0], label="registers only"),
                        Patch(color=PALETTE[1], label="spills: + local memory bytes per thread")],
               fontsize=STYLE["legend_size"], frameon=False, loc="upper left")
    finish(fig, top, title, "", "Registers\nper thread", None)
    warps = rows["warps_per_sm"].astype(float)
    middle.bar(positions, warps, color=PALETTE[2], width=0.62)
    for x, value in zip(positions, warps, strict=True):
        middle.annotate(f"{value:.0f}", xy=(x, value), xytext=(0, 2), textcoords="offset points", ha="center",
                        va="bottom", fontsize=note)
    most = max(64.0, float(warps.max()))
    middle.set_ylim(0, most * 1.3)
    middle.yaxis.set_major_locator(FixedLocator([0, 16, 32, 48, 64]))
    finish(fig, middle, "", "", "Resident\nwarps per SM", None)
    gbps = rows["gbps"].astype(float)
    bottom.bar(positions, gbps, color=colors, width=0.62)
    for x, value in zip(positions, gbps, strict=True):
        if np.isfinite(value):
            bottom.annotate(f"{value:,.0f}", xy=(x, value), xytext=(0, 2), textcoords="offset points",
                            ha="center", va="bottom", fontsize=note, rotation=90)
    bottom.set_xticks(positions, labels)
    bottom.set_ylim(0, np.nanmax(gbps.to_numpy()) * 1.45 if np.isfinite(gbps).any() else 1)
    bottom.yaxis.set_major_formatter(FuncFormatter(plain_number))
    finish(fig, bottom, "", "Float4 loads per thread (uN), register cap (max_registers)", "Copy GB/s",
           provenance)
    bottom.tick_params(axis="x", labelsize=STYLE["tick_size"] - 0.5)
    plain = rows[~spills]
    described = (f"registers from {int(rows['registers'].min())} to {int(rows['registers'].max())}, "
                 f"{int(spills.sum())} of them spilling, resident warps from {warps.min():.0f} to "
                 f"{warps.max():.0f}, "
                 f"bandwidth from {np.nanmin(gbps):,.0f} to {np.nanmax(gbps):,.0f} GB/s")
    if len(plain):
        described += f" ({np.nanmin(plain['gbps']):,.0f} or more without spills)"
    return with_alt(fig, f"Three bar panels for {len(rows)} 16-byte copies by unroll and register cap: "
                    f"registers per thread, resident warps per SM and copy bandwidth; {described}.")


def low_occupancy_copies(rows: pd.DataFrame, target: float | None = None, provenance: str | None = None,
                         ax: Axes | None = None,
                         title: str = "Copies at low occupancy, as a share of cupy.copyto") -> Figure:
    """One dot per copy (rows: lessons.littles_law.low_occupancy_copies, with a ``label`` column to show
    instead of the variant, e.g. lessons.littles_law.describe_copy), its share of CuPy's copy, coloured
    by kind and labelled with its resident warps per SM; a line at ``target`` if given."""
    own = ax is None
    fig, ax = new_axes(ax)
    if own:
        fig.set_size_inches(9.0, max(STYLE["figsize"][1], 1.6 + 0.26 * len(rows)))
    rows = rows.sort_values("of_copyto").reset_index(drop=True)
    kinds = list(dict.fromkeys(rows["kind"].sort_values()))
    for i, kind in enumerate(kinds):
        mine = rows[rows["kind"] == kind]
        ax.scatter(mine["of_copyto"], mine.index, color=PALETTE[i % len(PALETTE)], label=kind,
                   s=STYLE["marker_size"] ** 2 * 1.6, zorder=3)
    names = rows["label"] if "label" in rows else rows["variant"]
    labels = [f"{v} · {w} warps/SM" for v, w in zip(names, rows["warps_per_sm"], strict=True)]
    ax.set_yticks(rows.index, labels)
    ax.axvline(1.0, color=STYLE["ceiling_color"], linestyle="-.", linewidth=1.1, label="cupy.copyto")
    if target is not None:
        ax.axvline(target, color=PALETTE[3], linestyle=":", linewidth=1.5,
                   label=f"{target:.0%} of cupy.copyto")
    low = float(rows["of_copyto"].min()) if len(rows) else 0.9
    ax.set_xlim(min(0.9, low - 0.02), 1.02)
    ax.set_ylim(-0.7, len(rows) + 2.2)  # room above the dots for the legend
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:.0%}"))
    ax.legend(fontsize=STYLE["legend_size"], frameon=False, loc="upper left", ncols=2)
    finish(fig, ax, "" if own else title, "Bandwidth / cupy.copyto, same run", "", provenance)
    if own:  # the title over the whole figure: the long labels push the axes right
        fig.suptitle(title, x=0.01, ha="left", fontsize=STYLE["title_size"])
    best = rows.iloc[-1] if len(rows) else None
    described = "" if best is None else (f"; the best, {names.iloc[-1]} at {best['warps_per_sm']} warps/SM, "
                                         f"reaches {best['of_copyto']:.3f}")
    return with_alt(fig, f"Dot plot of {len(rows)} copies at low occupancy, each as a share of cupy.copyto "
                    f"from {low:.0%}, coloured by kind{described}.")


def occupancy_staircase(steps: pd.DataFrame, kernels: pd.DataFrame | None = None,
                        provenance: str | None = None, ax: Axes | None = None,
                        title: str = "Occupancy staircase: resident warps against registers per thread"
                        ) -> Figure:
    """Resident warps per SM against registers per thread for one block size (steps:
    lessons.littles_law.occupancy_staircase, attrs block), the flat part limited by warp slots and
    each step down by the register file; the lesson's kernels placed on it by their registers
    (kernels: lessons.littles_law.staircase_kernels; orange where they spill)."""
    fig, ax = new_axes(ax)
    limits = steps.attrs.get("limits")
    most = limits.max_warps_per_sm if limits is not None else int(steps["warps_per_sm"].max())
    block = steps.attrs.get("block", "?")
    ax.plot(steps["registers"], steps["warps_per_sm"], drawstyle="steps-post", color=PALETTE[0],
            linewidth=STYLE["line_width"], label=f"blocks of {block} threads (calculator)")
    if kernels is not None and len(kernels):
        labels: list[list] = []  # [registers, warps, names]: kernels within 8 registers on one step share one
        for row in kernels.sort_values("registers").itertuples():
            spills = row.local_bytes > 0
            ax.scatter([row.registers], [row.warps_per_sm], color=PALETTE[1] if spills else PALETTE[2], s=36,
                       zorder=3, edgecolors="white", linewidths=0.6)
            name = row.kernel.split()[-1]
            if labels and labels[-1][1] == row.warps_per_sm and row.registers - labels[-1][0] <= 8:
                labels[-1][2].append(name)
            else:
                labels.append([row.registers, row.warps_per_sm, [name]])
        for registers, warps, names in labels:
            ax.annotate(", ".join(names), xy=(registers, warps), xytext=(3, 6), textcoords="offset points",
                        fontsize=STYLE["note_size"] - 1, rotation=35, ha="left", va="bottom")
        ax.scatter([], [], color=PALETTE[2], s=36, label="a 16-byte copy (uN: N float4 per thread)")
        ax.scatter([], [], color=PALETTE[1], s=36, label="... that spills to local memory")
    ax.set_xlim(0, int(steps["registers"].max()) + 1)
    ax.set_ylim(0, most * 1.25)
    ax.xaxis.set_major_locator(FixedLocator([0, 32, 64, 96, 128, 160, 192, 224, 255]))
    ax.yaxis.set_major_locator(FixedLocator(list(range(0, most + 1, 8))))
    ax.legend(fontsize=STYLE["legend_size"], frameon=False, loc="upper right")
    finish(fig, ax, title, "Registers per thread", f"Resident warps per SM (of {most})", provenance)
    flat = int(steps.loc[steps["warps_per_sm"] == steps["warps_per_sm"].max(), "registers"].max())
    placed = "" if kernels is None or not len(kernels) else \
        f", with {len(kernels)} of the lesson's 16-byte copies placed on it by their registers"
    return with_alt(fig, f"Step plot of resident warps per SM against registers per thread for blocks of "
                    f"{block} threads, from the occupancy calculator: "
                    f"{int(steps['warps_per_sm'].max())} warps up to {flat} registers, then fewer at each "
                    "step down to "
                    f"{int(steps['warps_per_sm'].iloc[-1])} at {int(steps['registers'].iloc[-1])}{placed}.")


WARP_STATES = (  # (column of lessons.littles_law.warp_states, label, colour)
    ("issuing", "issuing (selected)", PALETTE[2]),
    ("stalled_not_selected", "eligible, not selected", PALETTE[5]),
    ("stalled_long_scoreboard", "waiting on memory (long scoreboard)", PALETTE[1]),
    ("stalled_lg_throttle", "waiting to issue a load (lg throttle)", "#8c3b00"),
    ("stalled_wait", "waiting on a fixed latency (wait)", PALETTE[4]),
    ("stalled_dispatch_stall", "dispatch stall", PALETTE[0]),
    ("other", "other stall reasons", PALETTE[3]),
    ("unaccounted", "no recorded reason", "#d0d0d0"),
)


def warp_states(states: pd.DataFrame, provenance: str | None = None, ax: Axes | None = None,
                title: str = "What resident warps do, cycle by cycle") -> Figure:
    """One stacked bar per profiled case (states: lessons.littles_law.warp_states; its ``label`` names
    the bar): the warps one of the SM's 4 schedulers holds per cycle, split into issuing, eligible but
    not selected, waiting on memory, waiting to issue a load, waiting on a fixed latency, dispatch stalls,
    other stalls; the bar's length is the
    resident warps, and a tick marks the warps the launch could have held (theoretical occupancy)."""
    fig, ax = new_axes(ax)
    if len(fig.axes) == 1:
        fig.set_size_inches(8.5, STYLE["figsize"][1] * 1.15)
    rows = states.reset_index(drop=True)
    named = {column for column, _, _ in WARP_STATES}
    stall_columns = [c for c in rows.columns if c.startswith("stalled_") and c not in named]
    parts = pd.DataFrame({column: rows[column] if column in rows else 0.0
                          for column, _, _ in WARP_STATES if column not in ("other", "unaccounted")})
    parts["other"] = rows[stall_columns].sum(axis=1) if stall_columns else 0.0
    parts = parts.fillna(0.0)
    parts["unaccounted"] = (rows["resident_per_scheduler"] - parts.sum(axis=1)).clip(lower=0.0)
    positions = np.arange(len(rows))[::-1]  # the first case on top
    left = np.zeros(len(rows))
    rest = float((parts["unaccounted"] / rows["resident_per_scheduler"]).max())
    for column, label, color in WARP_STATES:
        if column == "unaccounted":
            label = f"{label}: at most {rest:.0%} of a bar"
        ax.barh(positions, parts[column], left=left, color=color, height=0.6, label=label)
        left += parts[column].to_numpy()
    theoretical = rows["theoretical_warps_per_sm"] / 4 if "theoretical_warps_per_sm" in rows else None
    for i, (y, resident) in enumerate(zip(positions, rows["resident_per_scheduler"], strict=True)):
        text = f"{resident:.2f}"
        end = resident
        if theoretical is not None:
            text += f" of {theoretical.iloc[i]:g}"
        if theoretical is not None and theoretical.iloc[i] - resident > 0.05:
            ax.plot([theoretical.iloc[i]] * 2, [y - 0.36, y + 0.36], color=STYLE["roof_color"], linewidth=1.4)
            end = theoretical.iloc[i]
        ax.annotate(text, xy=(end, y), xytext=(5, 0), textcoords="offset points", va="center",
                    fontsize=STYLE["note_size"] - 0.5)
    names = rows["label"].str.replace(": ", ":\n", n=1) if "label" in rows else rows["case"]
    ax.set_yticks(positions, names)
    resident = rows["resident_per_scheduler"]
    ends = resident if theoretical is None else np.maximum(resident, theoretical)
    ax.set_xlim(0, float(ends.max()) * 1.14)  # room for the label after the longest bar
    ax.set_ylim(-0.6, len(rows) + 1.6)  # room above the bars for the legend
    if theoretical is not None:
        ax.plot([], [], color=STYLE["roof_color"], linewidth=1.4,
                label="the launch's limit (label: resident of limit)")
    ax.legend(fontsize=STYLE["legend_size"] - 1, frameon=False, loc="upper right", ncols=3)
    xlabel = "Warps per cycle on one of the SM's 4 schedulers (a quarter of its resident warps)"
    finish(fig, ax, title, xlabel, "", provenance)
    memory = parts["stalled_long_scoreboard"]
    waiting = memory / rows["resident_per_scheduler"]
    resident = rows["resident_per_scheduler"]
    return with_alt(fig, f"Stacked bars for {len(rows)} profiled kernels: the warps one scheduler holds per "
                    f"cycle ({resident.min():.2f} to {resident.max():.2f}) split into issuing, eligible but "
                    "not selected, waiting on memory (long scoreboard), waiting to issue a load, waiting "
                    "on a fixed latency, dispatch stalls and other, and in grey the rest, which no recorded "
                    "reason accounts for; waiting on memory takes up to "
                    f"{waiting.max():.0%} of them.")


def ilp_timeline(timelines: list[pd.DataFrame], provenance: str | None = None,
                 title: str | None = None) -> Figure:
    """The lesson's model of one thread's loads (timelines: lessons.littles_law.ilp_timeline, one per
    number of loads in flight). Top: a bar per load from its issue to its data; a tick per store.
    Bottom: loads in flight over time, and their average (Little's Law's 'in flight')."""
    title = title or f"Four loads in flight: from {len(timelines[0])} warps or from one"
    fig = plt.figure(figsize=(STYLE["figsize"][0], STYLE["figsize"][1] * 1.15), layout="constrained")
    plt.close(fig)
    top, low = fig.subplots(2, 1, sharex=True, height_ratios=[2.2, 1])
    end = max(t.attrs["done_ns"] for t in timelines)
    times = np.linspace(0, end * 1.02, 2000)
    ticks, names, y = [], [], 0
    summary = []
    for i, timeline in enumerate(timelines):
        color = PALETTE[i % len(PALETTE)]
        u = timeline.attrs["loads_in_flight"]
        for _, load in timeline.iterrows():
            top.barh(y, load["ready_ns"] - load["issue_ns"], left=load["issue_ns"], height=0.62, color=color)
            top.plot([load["store_ns"]] * 2, [y - 0.31, y + 0.31], color=STYLE["roof_color"], linewidth=1.6)
            ticks.append(y)
            names.append(f"{timeline.attrs.get('row', 'load')} {int(load['element']) + 1}")
            y += 1
        done = timeline.attrs["done_ns"]
        late = done > 0.6 * end  # a late finish: the label left of it, on the thread's first row (free there)
        label = timeline.attrs.get("label", f"{u} in flight at a time")
        top.annotate(f"{label}: done at {done:,.0f} ns",
                     xy=(done, y - len(timeline) if late else y - 1), xytext=(0 if late else 6, 0),
                     textcoords="offset points", ha="right" if late else "left", va="center",
                     fontsize=STYLE["note_size"], color=color, bbox=LABEL_BOX)
        issued, ready = timeline["issue_ns"].to_numpy(), timeline["ready_ns"].to_numpy()
        counts = ((issued[None, :] <= times[:, None]) & (times[:, None] < ready[None, :])).sum(axis=1)
        average = timeline.attrs["average_in_flight"]
        low.step(times, counts, where="post", color=color, linewidth=STYLE["line_width"],
                 label=f"{label}: {average:.2f} in flight on average")
        summary.append(f"{label} finishes at {done:,.0f} ns with {average:.2f} loads in flight on average")
        y += 1  # a gap between the two threads
    top.set_yticks(ticks, names)
    top.invert_yaxis()
    top.set_xlim(0, end * 1.04)
    top.legend(handles=[Patch(color=PALETTE[i % len(PALETTE)],
                              label=t.attrs.get("label", f"{t.attrs['loads_in_flight']} at a time"))
                        for i, t in enumerate(timelines)]
               + [Line2D([], [], color=STYLE["roof_color"], linewidth=1.6, label="a bar: a load waiting for "
                         "its data; a tick: its store")],
               fontsize=STYLE["legend_size"] - 0.5, frameon=False, loc="lower left",
               bbox_to_anchor=(0.0, 1.0), ncols=2)
    latency = float((timelines[0]["ready_ns"] - timelines[0]["issue_ns"]).iloc[0])
    finish(fig, top, "", "", "", None)
    fig.suptitle(title, x=0.01, ha="left", fontsize=STYLE["title_size"])
    most = max(t.attrs["loads_in_flight"] for t in timelines)
    low.set_ylim(0, most + 1.2)
    low.yaxis.set_major_locator(FixedLocator(range(0, most + 1)))
    low.legend(fontsize=STYLE["legend_size"], frameon=False, loc="upper right")
    finish(fig, low, "", f"Time (ns); each load's latency {latency:,.0f} ns", "Loads in\nflight", provenance)
    return with_alt(fig, f"Timelines of {len(timelines)} ways to make {len(timelines[0])} loads, each taking "
                    f"{latency:,.0f} ns, as bars from issue to data with a tick at each store, and below the "
                    "loads in flight over time: " + "; ".join(summary) + ".")


def implied_latency(points: pd.DataFrame, provenance: str | None = None, ax: Axes | None = None,
                    title: str = "Implied latency (latency plus idle slots) grows with the load",
                    highlight: tuple[str, float] | None = None) -> Figure:
    """Each copy of the sweep (points: lessons.littles_law.implied_latencies): the latency at which
    Little's Law gives its measured bandwidth, against that bandwidth; copies past the knee hollow and
    grey (their 'latency' counts waiting in the SM); lines at the pointer chase's and the light-load
    latency. The implied latency assumes every slot is filled: it is latency plus idle slots, not a
    latency measured under load."""
    fig, ax = new_axes(ax)
    attrs = points.attrs
    before, past = points[~points["past_knee"]], points[points["past_knee"]]
    ax.scatter(before["gbps"], before["implied_latency_ns"], color=PALETTE[0], s=30, zorder=3,
               edgecolors="white", linewidths=0.5, label="below the knee")
    ax.scatter(past["gbps"], past["implied_latency_ns"], facecolors="none", edgecolors="#8c8c8c", s=30,
               zorder=3, label="past the knee: more bytes than the ceiling needs")
    for value, text, style in ((attrs["latency_ns"], "one load alone, idle memory (pointer chase)", "-"),
                               (attrs["light_load_latency_ns"], "the lightest copies (their median)", "--")):
        ax.axhline(value, color=STYLE["roof_color"], linestyle=style, linewidth=1.1, zorder=1)
        ax.annotate(f"{text}: {value:,.0f} ns", xy=(0.3, value), xycoords=("axes fraction", "data"),
                    xytext=(0, -3), textcoords="offset points", va="top", fontsize=STYLE["note_size"])
    implied = before["implied_latency_ns"]
    lowest, highest = before.loc[implied.idxmin()], before.loc[implied.idxmax()]
    ax.annotate("", xy=(lowest["gbps"] * 0.55, highest["implied_latency_ns"]),
                xytext=(lowest["gbps"] * 0.55, lowest["implied_latency_ns"]),
                arrowprops={"arrowstyle": "<->", "color": PALETTE[0], "linewidth": 1.2})
    ax.annotate(f"below the knee:\n{implied.min():,.0f} to {implied.max():,.0f} ns,\nrising with the load",
                xy=(lowest["gbps"] * 0.55, implied.max()), xytext=(-4, 6), textcoords="offset points",
                va="bottom", fontsize=STYLE["note_size"] - 0.5, color=PALETTE[0])
    named = ""
    if highlight is not None:
        variant, warps = highlight
        hit = before[(before["variant"] == variant) & (before["warps_per_sm"] == warps)]
        if len(hit):
            row = hit.iloc[0]
            named = (f"; ringed, {variant} at {warps:g} warps/SM, "
                     f"{human_bytes(row['bytes_in_flight_per_sm'])} in flight per SM, implies "
                     f"{row['implied_latency_ns']:,.0f} ns")
            ax.scatter([row["gbps"]], [row["implied_latency_ns"]], s=110, facecolors="none",
                       edgecolors=PALETTE[1], linewidths=1.8, zorder=4)
            ax.annotate(f"{row['implied_latency_ns']:,.0f} ns: {variant}, {warps:g} warps/SM\n"
                        f"({human_bytes(row['bytes_in_flight_per_sm'])} in flight per SM)",
                        xy=(row["gbps"], row["implied_latency_ns"]), xytext=(0, 28),
                        textcoords="offset points",
                        ha="center", fontsize=STYLE["note_size"] - 0.5, color=PALETTE[1], bbox=LABEL_BOX,
                        arrowprops={"arrowstyle": "->", "color": PALETTE[1], "linewidth": 0.9})
    ax.axvline(attrs["ceiling_gbps"], color=STYLE["ceiling_color"], linestyle="-.", linewidth=1.1, zorder=1)
    ax.annotate(f"ceiling {attrs['ceiling_gbps']:,.0f} GB/s", xy=(attrs["ceiling_gbps"], 1.0),
                xycoords=("data", "axes fraction"), xytext=(-4, -4), textcoords="offset points", ha="right",
                va="top", fontsize=STYLE["note_size"], bbox=LABEL_BOX)
    ax.set_yscale("log")
    ax.set_ylim(attrs["latency_ns"] / 1.4, points["implied_latency_ns"].max() * 1.6)
    ax.set_xlim(0, attrs["ceiling_gbps"] * 1.08)
    ax.yaxis.set_major_formatter(FuncFormatter(plain_number))
    ax.yaxis.set_minor_formatter(NullFormatter())
    ax.xaxis.set_major_formatter(FuncFormatter(plain_number))
    ax.legend(fontsize=STYLE["legend_size"], frameon=False, loc="center left", bbox_to_anchor=(0.0, 0.62))
    finish(fig, ax, title, "Measured copy bandwidth (GB/s)",
           "Implied latency (ns) = 2 x bytes in flight x SMs / GB/s", provenance)
    ax.yaxis.label.set_size(STYLE["label_size"] - 1)
    implied = before["implied_latency_ns"]
    return with_alt(fig, f"Scatter of {len(points)} copies: the latency Little's Law implies, from "
                    f"{implied.min():,.0f} to {implied.max():,.0f} ns below the knee ({len(before)} copies), "
                    f"against measured bandwidth; {len(past)} copies past the knee pile up near the "
                    f"{attrs['ceiling_gbps']:,.0f} GB/s ceiling with implied latencies up to "
                    f"{past['implied_latency_ns'].max():,.0f} ns; lines at {attrs['latency_ns']:,.0f} and "
                    f"{attrs['light_load_latency_ns']:,.0f} ns (one load alone; the lightest copies' median)"
                    f"{named}.")


def occupancy_rule(frame: pd.DataFrame, rule: float = 0.5, describe=None, provenance: str | None = None,
                   ax: Axes | None = None,
                   title: str = "Does a memory-bound kernel need 50% occupancy?") -> Figure:
    """Copies against the warps per SM their launch allows (theoretical; achieved can be lower) (frame:
    lessons.littles_law.occupancy_rule): the best copy at each residency and the simplest one, as shares
    of cupy.copyto; the region below ``rule`` occupancy shaded. ``describe(variant)`` names the best
    copies (default: the variant)."""
    fig, ax = new_axes(ax)
    most = frame.attrs.get("max_warps_per_sm", 64)
    describe = describe or (lambda v: v)
    # up to, not over, the rule's point (review R12c: the band covered the 50% point itself): it ends
    # halfway (log scale) between the last residency below the rule and the rule's
    below = frame["warps_per_sm"][frame["warps_per_sm"] < rule * most]
    end = float(np.sqrt(below.max() * rule * most)) if len(below) else rule * most / 1.4
    ax.axvspan(frame["warps_per_sm"].min() / 1.4, end, color=PALETTE[1], alpha=0.08, zorder=0)
    shaded = f" ({below.min():g}–{below.max():g} warps/SM)" if len(below) else ""  # review R12d: the band
    ax.annotate(f"below {rule:.0%} occupancy{shaded}:\n'too few warps'\nby the rule of thumb",
                xy=(frame["warps_per_sm"].min() / 1.4, 0.97), xytext=(6, 0), textcoords="offset points",
                ha="left", va="top", fontsize=STYLE["note_size"], color=PALETTE[1])
    one_shot = tuple(frame.attrs.get("kinds", ())) == ("copy",)
    ax.plot(frame["warps_per_sm"], frame["best_of_copyto"], color=PALETTE[0], marker="o",
            linewidth=STYLE["line_width"],
            label=f"best {'one-shot copy (copy_ilp)' if one_shot else 'copy'} at that residency")
    simple = frame.dropna(subset=["simple_of_copyto"])
    ax.plot(simple["warps_per_sm"], simple["simple_of_copyto"], color=PALETTE[2], marker="s",
            linewidth=STYLE["line_width"], label="one 4-byte load per thread")
    ax.axhline(1.0, color=STYLE["ceiling_color"], linestyle="-.", linewidth=1.1, zorder=1,
               label="cupy.copyto")
    low = frame.loc[frame["warps_per_sm"] <= rule * most / 2]
    star = low.loc[low["best_of_copyto"].idxmax()] if len(low) else None
    for row in frame.itertuples():
        if star is not None and row.warps_per_sm == star["warps_per_sm"]:
            continue  # its value is in the callout, whose arrow would cross the label
        ax.annotate(f"{row.best_of_copyto:.3f}", xy=(row.warps_per_sm, row.best_of_copyto), xytext=(0, -13),
                    textcoords="offset points", ha="center", fontsize=STYLE["note_size"] - 0.5)
    for row in simple.itertuples():
        ax.annotate(f"{row.simple_of_copyto:.3f}", xy=(row.warps_per_sm, row.simple_of_copyto), xytext=(0, 6),
                    textcoords="offset points", ha="center", fontsize=STYLE["note_size"] - 0.5,
                    color=PALETTE[2])
    if star is not None:
        ax.annotate(f"{describe(star['best_variant'])}\nat {star['warps_per_sm']} warps/SM "
                    f"({star['occupancy']:.1%}): {star['best_of_copyto']:.3f}",
                    xy=(star["warps_per_sm"], star["best_of_copyto"]), xytext=(22, -66),
                    textcoords="offset points", ha="left", fontsize=STYLE["note_size"],
                    arrowprops={"arrowstyle": "->", "color": "#555555", "linewidth": 0.8}, bbox=LABEL_BOX)
    ax.set_xscale("log", base=2)
    ticks = list(frame["warps_per_sm"])
    ax.xaxis.set_major_locator(FixedLocator(ticks))
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}\n{100 * v / most:.4g}%"))
    ax.xaxis.set_minor_formatter(NullFormatter())
    ax.set_xlim(min(ticks) / 1.4, max(ticks) * 1.3)
    ax.set_ylim(0, 1.12)
    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:.0%}"))
    ax.legend(fontsize=STYLE["legend_size"], frameon=False, loc="lower left", bbox_to_anchor=(0.0, 0.11))
    finish(fig, ax, title, "Warps per SM the launch allows (theoretical occupancy)",
           "Bandwidth / cupy.copyto, same run",
           provenance)
    at_rule = frame.loc[frame["warps_per_sm"] == rule * most]
    rule_text = "" if at_rule.empty else f", {at_rule['best_of_copyto'].iloc[0]:.3f} at {rule:.0%}"
    steps = "".join(f", {r.best_of_copyto:.3f} at {r.warps_per_sm}" for r in frame.iloc[1:].itertuples())
    return with_alt(fig, "Best copy and simplest copy as shares of cupy.copyto against the warps per SM the "
                    "launch allows (theoretical) "
                    f"({min(ticks)} to {max(ticks)}), the region below {rule:.0%} occupancy shaded: the best "
                    f"copy reaches {frame['best_of_copyto'].iloc[0]:.3f} at {min(ticks)} warps{steps}"
                    f"{rule_text}; one 4-byte load per thread reaches {simple['simple_of_copyto'].max():.3f} "
                    "at most.")
