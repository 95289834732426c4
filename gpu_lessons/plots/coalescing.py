"""Lesson 3's figures: sectors per request against bandwidth across a sweep."""

from __future__ import annotations

import matplotlib.pyplot as plt
import pandas as pd
from matplotlib.figure import Figure
from matplotlib.ticker import FixedLocator, FuncFormatter, NullFormatter

from .style import (
    LABEL_BOX,
    PALETTE,
    STYLE,
    finish,
    plain_number,
)


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
    top.yaxis.set_major_formatter(FuncFormatter(plain_number))
    name = "start offset (elements of 4 bytes)" if kind == "offset" else "stride (elements of 4 bytes)"
    article = "an" if kind == "offset" else "a"
    headline = f"Copy with {article} {kind}: bandwidth beside the sector model (labels: model error)"
    finish(fig, top, title or headline,
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
    finish(fig, bottom, "", name, "Sectors per request", provenance)
    return fig
