"""Lesson 2's figures: bandwidth against bytes in flight with Little's Law, FMA chains x warps, register
pressure, the occupancy staircase, copies at low occupancy, what resident warps are doing (ncu).

Each takes the frame a reader of ``gpu_lessons.lessons.littles_law`` returns and draws nothing else."""

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
    PALETTE,
    STYLE,
    binary_ticks,
    draw_ceiling,
    finish,
    human_bytes,
    new_axes,
    plain_number,
)

WIDTH_MARKERS = {4: "o", 8: "s", 16: "D"}


def littles_law_memory(points: pd.DataFrame, provenance: str | None = None,
                       title: str = "Little's Law for memory: bandwidth against bytes in flight") -> Figure:
    """Top: measured copy GB/s against read bytes in flight per SM (log-log), colour by loads per
    thread, marker by bytes per access, and the line Little's Law draws from the measured latency and
    ceiling. Bottom: each point's measured / predicted (the model's error).

    points: lessons.littles_law.memory_points (attrs latency_ns, ceiling_gbps, sms)."""
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
    draw_ceiling(ax, ceiling, "measured ceiling")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")  # Little's Law is a line of slope 1 here, until the ceiling
    ax.set_ylim(min(points["gbps"].min(), model.min()) / 1.5, ceiling * 1.6)
    ax.yaxis.set_major_formatter(FuncFormatter(plain_number))
    ax.yaxis.set_minor_formatter(NullFormatter())
    handles = [Line2D([], [], color=colors[u], marker="o", linestyle="", label=f"{u} load(s)/thread")
               for u in unrolls]
    handles += [Line2D([], [], color="#777777", marker=WIDTH_MARKERS.get(w, "o"), linestyle="",
                       label=f"{w}-byte loads") for w in sorted(points["width"].unique())]
    handles += ax.get_legend_handles_labels()[0][:2]
    ax.legend(handles=handles, fontsize=STYLE["legend_size"] - 1, frameon=False, loc="lower right", ncols=2,
              title=f"GB/s = min(ceiling, 2 x bytes in flight x {sms} SMs / latency)",
              title_fontsize=STYLE["legend_size"] - 1)
    finish(fig, ax, title, "", "Copy bandwidth (GB/s, read + write)", None)
    low.axhline(1.0, color=STYLE["roof_color"], linewidth=1.0)
    ratios = points["gbps"] / points["predicted_gbps"]
    low.set_ylim(min(0.0, ratios.min() * 0.9), max(1.2, ratios.max() * 1.1))
    low.xaxis.set_major_locator(FixedLocator(binary_ticks(x.min(), x.max())))
    low.xaxis.set_major_formatter(FuncFormatter(lambda value, _: human_bytes(value)))
    low.xaxis.set_minor_formatter(NullFormatter())
    return finish(fig, low, "", "Read bytes in flight per SM (warps x 32 x loads per thread x bytes)",
                   "measured /\npredicted", provenance)


def littles_law_fma(points: pd.DataFrame, provenance: str | None = None, ax: Axes | None = None,
                    title: str = "Little's Law for arithmetic: FMA rate against chains and warps") -> Figure:
    """Share of the FP32 peak against independent chains per thread, one line per resident warps
    per SM; dashed, the 4-scheduler model (points: lessons.littles_law.fma_points)."""
    fig, ax = new_axes(ax)
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
    return finish(fig, ax, title, "Independent FMA chains per thread", "% of theoretical FP32 peak",
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
    finish(fig, top, title, "", "Registers per thread", None)
    gbps = rows["gbps"].astype(float)
    bottom.bar(positions, gbps, color=colors, width=0.6)
    for x, value in zip(positions, gbps, strict=True):
        if np.isfinite(value):
            bottom.annotate(f"{value:,.0f}", xy=(x, value), xytext=(0, 2), textcoords="offset points",
                            ha="center", va="bottom", fontsize=STYLE["note_size"] - 1)
    bottom.set_xticks(positions, labels)
    bottom.set_ylim(0, np.nanmax(gbps.to_numpy()) * 1.25 if np.isfinite(gbps).any() else 1)
    bottom.yaxis.set_major_formatter(FuncFormatter(plain_number))
    return finish(fig, bottom, "", "Float4 loads per thread (unroll), register cap (max_registers)",
                   "Copy GB/s", provenance)


def low_occupancy_copies(rows: pd.DataFrame, target: float | None = None, provenance: str | None = None,
                         ax: Axes | None = None,
                         title: str = "Copies at low occupancy vs cupy.copyto") -> Figure:
    """One dot per copy (rows: lessons.littles_law.low_occupancy_copies), its share of CuPy's copy,
    coloured by kind; labelled with its resident warps per SM; a line at the target if given."""
    fig, ax = new_axes(ax)
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
    return finish(fig, ax, title, "bandwidth / cupy.copyto", "", provenance, legend_loc="upper left")


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
    ax.plot(steps["registers"], steps["warps_per_sm"], drawstyle="steps-post", color=PALETTE[0],
            linewidth=STYLE["line_width"],
            label=f"blocks of {steps.attrs.get('block', '?')} threads (calculator)")
    if kernels is not None and len(kernels):
        groups = kernels.groupby(["registers", "warps_per_sm"], sort=True)
        for i, ((registers, warps), group) in enumerate(groups):
            spills = bool((group["local_bytes"] > 0).any())
            ax.scatter([registers], [warps], color=PALETTE[1] if spills else PALETTE[2], s=36, zorder=3,
                       edgecolors="white", linewidths=0.6)
            names = ", ".join(name.split()[-1] for name in group["kernel"])
            ax.annotate(names, xy=(registers, warps), xytext=(3, 5 + 10 * (i % 2)),
                        textcoords="offset points", fontsize=STYLE["note_size"] - 1, rotation=35, ha="left",
                        va="bottom")
        ax.scatter([], [], color=PALETTE[2], s=36, label="a 16-byte copy (uN: N float4 per thread)")
        ax.scatter([], [], color=PALETTE[1], s=36, label="... that spills to local memory")
    ax.set_xlim(0, int(steps["registers"].max()) + 1)
    ax.set_ylim(0, most * 1.25)
    ax.xaxis.set_major_locator(FixedLocator([0, 32, 64, 96, 128, 160, 192, 224, 255]))
    ax.yaxis.set_major_locator(FixedLocator(list(range(0, most + 1, 8))))
    ax.legend(fontsize=STYLE["legend_size"], frameon=False, loc="upper right")
    return finish(fig, ax, title, "Registers per thread", f"Resident warps per SM (of {most})", provenance)


WARP_STATES = (  # (column of lessons.littles_law.warp_states, label, colour)
    ("issuing", "issuing (selected)", PALETTE[2]),
    ("stalled_not_selected", "eligible, not selected", PALETTE[5]),
    ("stalled_long_scoreboard", "waiting on memory (long scoreboard)", PALETTE[1]),
    ("stalled_wait", "waiting on the previous instruction (wait)", PALETTE[4]),
    ("other", "other stall reasons", PALETTE[3]),
    ("unaccounted", "reasons not recorded", "#d0d0d0"),
)


def warp_states(states: pd.DataFrame, provenance: str | None = None, ax: Axes | None = None,
                title: str = "What resident warps do: one scheduler, per cycle") -> Figure:
    """One stacked bar per profiled case (states: lessons.littles_law.warp_states): the warps one of
    the SM's 4 schedulers holds per cycle, split into issuing, eligible but not selected, waiting on
    memory, waiting on the previous instruction, other stalls; the bar's length is the resident warps."""
    fig, ax = new_axes(ax)
    rows = states.reset_index(drop=True)
    named = {column for column, _, _ in WARP_STATES}
    stall_columns = [c for c in rows.columns if c.startswith("stalled_") and c not in named]
    parts = pd.DataFrame({
        "issuing": rows["issuing"],
        "stalled_not_selected": rows.get("stalled_not_selected", 0.0),
        "stalled_long_scoreboard": rows.get("stalled_long_scoreboard", 0.0),
        "stalled_wait": rows.get("stalled_wait", 0.0),
        "other": rows[stall_columns].sum(axis=1) if stall_columns else 0.0,
    }).fillna(0.0)
    parts["unaccounted"] = (rows["resident_per_scheduler"] - parts.sum(axis=1)).clip(lower=0.0)
    positions = np.arange(len(rows))[::-1]  # the first case on top
    left = np.zeros(len(rows))
    for column, label, color in WARP_STATES:
        ax.barh(positions, parts[column], left=left, color=color, height=0.6, label=label)
        left += parts[column].to_numpy()
    for y, resident in zip(positions, rows["resident_per_scheduler"], strict=True):
        ax.annotate(f"{resident:.2f} resident", xy=(resident, y), xytext=(4, 0), textcoords="offset points",
                    va="center", fontsize=STYLE["note_size"] - 1)
    ax.set_yticks(positions, rows["case"])
    ax.set_xlim(0, float(rows["resident_per_scheduler"].max()) * 1.3)
    ax.set_ylim(-0.6, len(rows) + 2.4)  # room above the bars for the legend
    ax.legend(fontsize=STYLE["legend_size"] - 1, frameon=False, loc="upper right", ncols=2)
    return finish(fig, ax, title, "Warps per cycle, one of the SM's 4 schedulers", "", provenance)
