"""Charts several lessons draw: bandwidth against size, share of a ceiling, the roofline, one warp's
global-memory request (lane -> 32-byte sector -> 128-byte line)."""

from __future__ import annotations

import math

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.collections import PatchCollection
from matplotlib.figure import Figure
from matplotlib.patches import Patch
from matplotlib.ticker import FixedLocator, FuncFormatter, LogLocator, NullFormatter

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
    series_label,
    share_percent,
    variant_colors,
    with_alt,
)

SECTOR_BYTES = 32
LINE_BYTES = 128
_LINE_GAP = 40  # bytes of blank drawn between two touched lines that are not neighbours


def bandwidth_vs_size(
    table: pd.DataFrame,
    ceiling_gbps: float | None = None,
    ceiling_label: str | None = None,
    provenance: str | None = None,
    ax: Axes | None = None,
    title: str = "Bandwidth against bytes moved",
) -> Figure:
    """GB/s against bytes moved per call, one line per variant (and param); log x."""
    fig, ax = new_axes(ax)
    colors = variant_colors(table)
    for (variant, param), rows in table.groupby(["variant", "param"], sort=False, dropna=False):
        rows = rows.sort_values("bytes")
        provider = rows["provider"].iloc[0]
        style = PROVIDER_STYLE.get(provider, PROVIDER_STYLE["gpu_lessons"])
        reference = provider != "gpu_lessons"  # drawn under ours, hollow: equal lines both show
        ax.plot(
            rows["bytes"], rows["gbps"], color=colors[variant], label=series_label(variant, param),
            linewidth=STYLE["line_width"] * (1.6 if reference else 1),
            markersize=STYLE["marker_size"] + 2 * reference, alpha=0.55 if reference else 1,
            markerfacecolor="white" if reference else colors[variant], zorder=2 if reference else 3, **style,
        )
    top = table["gbps"].max()
    if ceiling_gbps is not None:
        draw_ceiling(ax, ceiling_gbps, ceiling_label or "measured ceiling")
        top = max(top, ceiling_gbps)
    ax.set_xscale("log", base=2)
    ticks = binary_ticks(table["bytes"].min(), table["bytes"].max())
    ax.xaxis.set_major_locator(FixedLocator(ticks))
    ax.xaxis.set_major_formatter(FuncFormatter(lambda value, _: human_bytes(value)))
    ax.xaxis.set_minor_formatter(NullFormatter())
    ax.set_ylim(0, top * 1.12)
    ax.yaxis.set_major_formatter(FuncFormatter(plain_number))
    finish(fig, ax, title, "Bytes moved per call (reads + writes)", "Bandwidth (GB/s)", provenance)
    best = table.loc[table["gbps"].idxmax()]
    return with_alt(fig, f"Bandwidth in GB/s against bytes moved per call (log scale) for "
                    f"{table['variant'].nunique()} variants; it rises with size, the best "
                    f"{best['gbps']:,.0f} GB/s ({best['variant']}) at {human_bytes(best['bytes'])}"
                    + (f", beside a ceiling line at {ceiling_gbps:,.0f} GB/s." if ceiling_gbps else "."))


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
    fig, ax = new_axes(ax)
    if own_figure and len(rows) > 6:
        fig.set_figheight(1.4 + 0.4 * len(rows))  # room for every bar label
    ours = (rows["provider"] == "gpu_lessons").to_numpy()
    colors = [PALETTE[0] if mine else STYLE["reference_bar_color"] for mine in ours]
    positions = np.arange(len(rows))[::-1]  # best at the top
    ax.barh(positions, percents, color=colors, height=0.62)
    ax.set_yticks(positions, [series_label(v, p) for v, p in zip(rows["variant"], rows["param"],
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
    fig = finish(
        fig, ax, title or f"Share of the {label}{_size_phrase(rows, metric)}",
        f"% of {label} (100% = {ceiling:,.0f} {unit})", "", provenance,
    )
    ax.grid(False, axis="y")
    shares = "; ".join(f"{v}: {p:.0f}%" for v, p in zip(rows["variant"], percents, strict=True))
    return with_alt(fig, f"Horizontal bars: each kernel's share of the {label} ({ceiling:,.0f} {unit}). "
                    f"{shares}.")


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
             "label": _roof_label(datasheet.get("label", "datasheet"), bandwidth, peak)}
    if bandwidth:
        ax.plot(intensity, np.minimum(peak or math.inf, bandwidth * intensity), **style)
    elif peak:
        ax.axhline(peak, **style)


def _draw_ridge(ax: Axes, ridge: float, peak_gflops: float, color: str | None = None,
                label: bool = True) -> None:
    color = color or STYLE["roof_color"]
    ax.plot([ridge], [peak_gflops], marker="o", markersize=7, color=color, zorder=4)
    ax.axvline(ridge, color=color, linestyle=":", linewidth=0.9, zorder=1)
    if not label:
        return
    ax.annotate(
        f"ridge point\nI* = {ridge:.3g} FLOP/byte", xy=(ridge, peak_gflops), xytext=(-10, 12),
        textcoords="offset points", ha="right", va="bottom", fontsize=STYLE["note_size"],
        color=color, bbox=LABEL_BOX,
    )


def _label_offsets(ax: Axes, points: pd.DataFrame) -> list[tuple[float, float, str]]:
    """(dx, dy, ha) in points for each label, next to its own marker: below right, above left, above
    right or below left, the first that covers no label placed before it and no other marker (left of
    the marker near the right edge); pushed further down when all four are taken."""
    points_per_pixel = 72 / ax.figure.dpi
    right_edge = ax.transAxes.transform((0.85, 0.0))[0] * points_per_pixel
    height = STYLE["note_size"] + 2
    markers = [tuple(ax.transData.transform((p["intensity"], p["gflops"])) * points_per_pixel)
               for _, p in points.iterrows()]
    placed: list[tuple[float, float, float, float]] = [(x - 4, x + 4, y - 4, y + 4) for x, y in markers]
    offsets = []

    (left, bottom), (right, top) = ax.transAxes.transform([(0, 0), (1, 1)]) * points_per_pixel

    def free(box):
        inside = left <= box[0] and box[1] <= right and bottom <= box[2] and box[3] <= top
        return inside and not any(box[0] < b[1] and box[1] > b[0] and box[2] < b[3] and box[3] > b[2]
                                  for b in placed)

    for (_, point), (x, y) in zip(points.iterrows(), markers, strict=True):
        width = len(str(point["label"])) * STYLE["note_size"] * 0.55
        near_edge = x > right_edge
        candidates = [(-5, -6, "right"), (-5, 4 + height, "right"), (5, 4 + height, "left"), (5, -6, "left")]
        if not near_edge:
            candidates = [candidates[3], candidates[1], candidates[2], candidates[0]]
        for dx, dy, ha in candidates:
            x0 = x + dx - (width if ha == "right" else 0)
            box = (x0, x0 + width, y + dy - height, y + dy)
            if free(box):
                break
        else:
            dx, dy, ha = candidates[0]
            x0 = x + dx - (width if ha == "right" else 0)
            while not free((x0, x0 + width, y + dy - height, y + dy)):
                dy -= height
            box = (x0, x0 + width, y + dy - height, y + dy)
        placed.append(box)
        offsets.append((dx, dy, ha))
    return offsets


def _draw_points(ax: Axes, points: pd.DataFrame) -> None:
    kinds = points["kind"].astype(str) if "kind" in points else pd.Series("measured", points.index)
    colors = {kind: PALETTE[i % len(PALETTE)] for i, kind in enumerate(dict.fromkeys(kinds))}
    for kind, group in points.groupby(kinds, sort=False):
        ax.scatter(group["intensity"], group["gflops"], color=colors[kind], s=36, zorder=3,
                   label=kind, edgecolors="white", linewidths=0.6)
    for (_, point), placed in zip(points.iterrows(), _label_offsets(ax, points), strict=True):
        given = [point.get(key) for key in ("dx", "dy", "ha")]  # a caller's placement wins
        dx, dy, ha = given if all(isinstance(v, str) or pd.notna(v) for v in given) else placed
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
    roofs: dict[str, float] | None = None,
    label_ridges: bool = True,
    xlabel: str = "Arithmetic intensity (FLOP/byte)",
) -> Figure:
    """Log-log roofline from measured ceilings; datasheet figures dashed; points labelled.

    points: columns label, intensity (FLOP/byte), gflops, and optionally kind (colour groups) and dx, dy
    (points), ha: where a label goes from its marker (else it is placed beside it, clear of other labels).
    datasheet: optional bandwidth_gbps and peak_gflops.
    roofs: more measured compute ceilings, {label: GFLOP/s} (another unit's peak, e.g. the tensor
    cores'), each drawn as a second flat roof under the same bandwidth line, with its ridge point.
    label_ridges: write each ridge point's intensity beside it (False: in the legend instead).
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
    fig, ax = new_axes(ax)
    ridge = peak_gflops / bandwidth_gbps
    roofs = {label: value for label, value in (roofs or {}).items() if value and value > 0}
    low, high = _intensity_range(max([ridge, *(v / bandwidth_gbps for v in roofs.values())]), points)
    intensity = np.geomspace(low, high, 400)

    ax.set_xscale("log")
    ax.set_yscale("log")
    # Limits first: label placement below works in screen space.
    bottom = min([bandwidth_gbps * low] + ([points["gflops"].min()] if has_points else []))
    top = max(peak_gflops, datasheet.get("peak_gflops") or 0, *roofs.values())
    ax.set_xlim(low, high)
    ax.set_ylim(bottom / 2, top * 3)

    def ridge_note(value: float) -> str:
        return "" if label_ridges else f"; ridge {value / bandwidth_gbps:.1f} FLOP/byte"

    ax.plot(intensity, _roof(intensity, bandwidth_gbps, peak_gflops), color=STYLE["roof_color"],
            linewidth=2.2, zorder=2,
            label=_roof_label("measured roof", bandwidth_gbps, peak_gflops) + ridge_note(peak_gflops))
    _draw_ridge(ax, ridge, peak_gflops, label=label_ridges)
    for number, (label, value) in enumerate(roofs.items()):
        color = PALETTE[(3 + number) % len(PALETTE)]
        ax.plot(intensity, _roof(intensity, bandwidth_gbps, value), color=color, linewidth=2.0,
                linestyle=(0, (6, 2)), zorder=2, label=_roof_label(label, None, value) + ridge_note(value))
        _draw_ridge(ax, value / bandwidth_gbps, value, color=color, label=label_ridges)
    if datasheet:
        _draw_datasheet(ax, intensity, datasheet)
    if has_points:
        _draw_points(ax, points)

    for axis in (ax.xaxis, ax.yaxis):
        axis.set_major_locator(LogLocator(base=10))
        axis.set_major_formatter(FuncFormatter(plain_number))
        axis.set_minor_formatter(NullFormatter())
    finish(fig, ax, title, xlabel, "Performance (GFLOP/s)", provenance,
           legend_loc="lower right")
    described = f" with {len(points)} measured kernels as points" if has_points else ""
    more = "".join(f"; a second flat roof, {label}, at {value:,.0f} GFLOP/s meets it at "
                   f"{value / bandwidth_gbps:.1f} FLOP/byte" for label, value in roofs.items())
    return with_alt(fig, f"Log-log roofline: a slanted bandwidth roof at {bandwidth_gbps:,.0f} GB/s meets a "
                    f"flat compute roof at {peak_gflops:,.0f} GFLOP/s at the ridge point, "
                    f"{peak_gflops / bandwidth_gbps:.1f} FLOP/byte{more}{described}.")


def _line_positions(lines) -> dict[int, float]:
    """x position of each touched 128-byte line: side by side, a gap where lines are skipped."""
    positions, x, previous = {}, 0.0, None
    for line in sorted(set(int(v) for v in lines)):
        if previous is not None:
            x += LINE_BYTES + (_LINE_GAP if line != previous + 1 else 0)
        positions[line] = x
        previous = line
    return positions


_BAND = 2.4  # height of one band (lanes, sectors, lines) in data units


def _sector_band(ax: Axes, request: pd.DataFrame, lines, y0: float, width: float, every: int) -> None:
    """One band of the request picture at height y0: the given 128-byte lines (4 sectors each), the
    bytes the request's lanes use in them, and those lanes above, joined to their bytes."""
    x_of_line = _line_positions(lines)
    address = request["address"].to_numpy()
    size = request["bytes"].to_numpy()

    def x_of(byte: float) -> float:
        line = int(byte // LINE_BYTES)
        return x_of_line[line] + (byte - line * LINE_BYTES)

    sectors = set()
    for a, s in zip(address, size, strict=True):
        sectors.update(range(int(a // SECTOR_BYTES), int((a + s - 1) // SECTOR_BYTES) + 1))
    touched, plain, used = PALETTE[5], "#f2f2f2", PALETTE[0]
    patches = []  # drawn as one collection: thousands of add_patch calls are slow
    for line, x0 in x_of_line.items():
        patches.append(plt.Rectangle((x0, y0 + 0.05), LINE_BYTES, 0.25, facecolor="#dddddd",
                                     edgecolor="white"))
        if len(x_of_line) <= 16:
            ax.text(x0 + LINE_BYTES / 2, y0 + 0.17, f"line {line}", ha="center", va="center",
                    fontsize=STYLE["note_size"] - 1)
        for s in range(4):
            sector = line * 4 + s
            patches.append(plt.Rectangle((x0 + s * SECTOR_BYTES, y0 + 0.45), SECTOR_BYTES, 0.5,
                                         facecolor=touched if sector in sectors else plain,
                                         edgecolor="#777777", linewidth=0.6))
    mine = [(lane, a, s) for lane, a, s in zip(request["lane"], address, size, strict=True)
            if int(a // LINE_BYTES) in x_of_line]
    lanes = sorted({lane for lane, _, _ in mine})
    band_width = max(x_of_line.values()) + LINE_BYTES
    slots = 32 if len(lanes) > 16 else max(len(lanes), 8)
    lane_x = {lane: band_width * (k + 0.5) / slots for k, lane in
              enumerate(range(32) if slots == 32 else lanes)}
    for lane, a, s in mine:
        left, right = x_of(a), x_of(a + s - 1) + 1
        patches.append(plt.Rectangle((left, y0 + 0.45), right - left, 0.5, facecolor=used, edgecolor="none"))
        ax.plot([lane_x[lane], (left + right) / 2], [y0 + 1.55, y0 + 0.95], color=used, linewidth=0.6,
                alpha=0.7)
    for line, x0 in x_of_line.items():  # the edges of moved sectors again, in white over the used bytes
        for s in range(4):
            if line * 4 + s in sectors:
                patches.append(plt.Rectangle((x0 + s * SECTOR_BYTES, y0 + 0.45), SECTOR_BYTES, 0.5,
                                             facecolor="none", edgecolor="white", linewidth=1.4))
    box = width / 40
    lane_boxes = []
    for lane, x in lane_x.items():
        active = lane in set(request["lane"])
        lane_boxes.append(plt.Rectangle((x - box / 2, y0 + 1.55), box, 0.3,
                                        facecolor=used if active else "white", edgecolor=used, linewidth=0.6))
        if lane % every == 0 or lane == 31 or slots != 32:
            ax.text(x, y0 + 1.95, str(lane), ha="center", va="bottom", fontsize=STYLE["note_size"] - 1)
    ax.add_collection(PatchCollection(patches + lane_boxes, match_original=True))


def _touched_lines(request: pd.DataFrame) -> np.ndarray:
    address = request["address"].to_numpy()
    size = request["bytes"].to_numpy()
    first_line = address // LINE_BYTES
    last_line = (address + size - 1) // LINE_BYTES
    spans = [np.arange(a, b + 1) for a, b in zip(first_line, last_line, strict=True)]
    return np.unique(np.concatenate(spans))


def request_rows(request: pd.DataFrame, lines_per_row: int = 8) -> int:
    """How many rows ``global_sectors`` draws a request in (one unless it touches more than 12 lines)."""
    lines = len(_touched_lines(request))
    return 1 if lines <= 12 else -(-lines // lines_per_row)


def global_sectors(
    request: pd.DataFrame,
    ax: Axes | None = None,
    title: str | None = None,
    provenance: str | None = None,
    lines_per_row: int = 8,
    legend: bool = True,
) -> Figure:
    """Draw one warp's global-memory request: lanes -> the bytes each touches -> the 32-byte
    sectors and 128-byte lines they fall in. ``request`` is ``MemoryTrace.request(...)``.

    Only the lines the request touches are drawn (a gap marks skipped ones); sectors it touches
    are coloured, with the bytes lanes actually use filled dark. A request over more than 12 lines
    is drawn in rows of ``lines_per_row`` lines, each row under the lanes that use it. The title
    gives the sector count and useful / moved bytes.
    """
    attrs = request.attrs
    if attrs.get("space") != "global":
        raise ValueError("global_sectors draws global-memory requests; this one is "
                         f"{attrs.get('space', 'not a MemoryTrace.request table')}")
    own = ax is None
    fig, ax = new_axes(ax)
    touched_lines = _touched_lines(request)
    per_row = len(touched_lines) if len(touched_lines) <= 12 else lines_per_row
    rows = [touched_lines[k:k + per_row] for k in range(0, len(touched_lines), per_row)]
    width = max(max(_line_positions(r).values()) + LINE_BYTES for r in rows)
    if own:
        fig.set_size_inches(9.5, 1.3 + 1.8 * len(rows))
    for k, row in enumerate(rows):
        _sector_band(ax, request, row, (len(rows) - 1 - k) * _BAND, width, every=4)
    ax.set_xlim(-width * 0.01, width * 1.01)
    ax.set_ylim(0, len(rows) * _BAND - 0.15)
    ticks = [(k * _BAND + y, label) for k in range(len(rows))
             for y, label in ((0.17, "128-B lines"), (0.7, "32-B sectors"), (1.7, "lanes"))]
    ax.set_yticks([t for t, _ in ticks], [label for _, label in ticks])
    ax.set_xticks([])
    for side in ("top", "right", "bottom", "left"):
        ax.spines[side].set_visible(False)
    ax.tick_params(axis="y", length=0, labelsize=STYLE["tick_size"])
    moved = attrs["moved_bytes"]
    used = share_percent(attrs["useful_bytes"] / moved)
    headline = title or f"{attrs['op']} {attrs['array']}  `{attrs['source']}`"
    lines = f"{len(touched_lines)} line{'s' if len(touched_lines) > 1 else ''}"
    sectors = f"{attrs['sectors']} sector{'s' if attrs['sectors'] != 1 else ''}"
    lanes = int(attrs.get("active_lanes", len(request)))
    if lanes > 1 and request["address"].nunique() == 1:  # a broadcast: one element serves every lane
        use = f"all {lanes} lanes read the same {attrs['useful_bytes']} bytes: one sector serves the warp"
    else:
        use = f"{attrs['useful_bytes']} useful of {moved} bytes moved ({used})"
    ax.set_title(f"{headline}\n{sectors} per request (ideal {attrs['ideal_sectors']}), {lines}; {use}",
                 fontsize=STYLE["title_size"] - 1, loc="left")
    if legend:
        ax.legend(handles=[Patch(color=PALETTE[0], label="bytes a lane uses"),
                           Patch(color=PALETTE[5], label="sector moved"),
                           Patch(facecolor="#f2f2f2", edgecolor="#777777", label="sector not moved")],
                  loc="upper right", bbox_to_anchor=(1.0, -0.02), ncols=3, fontsize=STYLE["legend_size"] - 1,
                  frameon=False)
    if provenance:
        add_caption(fig, provenance)
    return with_alt(fig, f"One warp's request drawn lane by lane: the bytes each lane uses inside the "
                    f"32-byte sectors and 128-byte lines it touches; {sectors} per request against an ideal "
                    f"{attrs['ideal_sectors']}; {use}.")
