"""The look every figure shares: colours, sizes, axes, the provenance caption, alt text, saving.

Figures are made through pyplot (so Jupyter's inline backend is set up) and then detached from it: a
figure shows once when it is a cell's value, and loops that save many PNGs keep nothing open. Pass
``ax=`` to a figure function to draw into an axes of your own figure.

Alt text: ``with_alt(fig, text)`` attaches a sentence saying what the figure shows; ``save`` writes it
into the PNG's metadata and Jupyter shows it as the image's alt text (see ``show``).
"""

from __future__ import annotations

import math
import os
import textwrap
from pathlib import Path

import matplotlib.pyplot as plt
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.figure import Figure

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



def human_bytes(count: float) -> str:
    """1536 -> '1.5 KiB'; binary units, as memory sizes are."""
    for unit, scale in (("TiB", 2**40), ("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if count >= scale:
            return f"{count / scale:.4g} {unit}"
    return f"{count:.4g} B"


def share_percent(share: float) -> str:
    """0.8 -> '80%', 0.125 -> '12.5%': a share rounded honestly, the decimal only where it counts."""
    return f"{share:.1%}".replace(".0%", "%")


def plain_number(value: float, _position=None) -> str:
    """Tick labels without powers of ten: 0.25, 1, 1,000, 100,000."""
    return f"{value:,.0f}" if value >= 1 else f"{value:g}"


def new_axes(ax: Axes | None) -> tuple[Figure, Axes]:
    if ax is not None:
        return ax.figure, ax
    fig = plt.figure(figsize=STYLE["figsize"], layout="constrained")
    ax = fig.add_subplot()
    plt.close(fig)  # detach from pyplot: no double display in Jupyter, nothing left open
    return fig, ax


def finish(
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
        add_caption(fig, caption)
    return fig


def add_caption(fig: Figure, text: str) -> None:
    """The provenance line under the axes (a figure-level label, so the layout leaves room)."""
    characters_per_line = int(fig.get_figwidth() * 72 / (STYLE["caption_size"] * 0.52))
    fig.supxlabel(
        textwrap.fill(text, characters_per_line), x=0.01, ha="left",
        fontsize=STYLE["caption_size"], color=STYLE["caption_color"],
    )


def variant_colors(table: pd.DataFrame) -> dict[str, str]:
    """A colour per variant, in order of appearance, so a variant keeps its colour in a figure."""
    variants = list(dict.fromkeys(table["variant"]))
    return {v: PALETTE[i % len(PALETTE)] for i, v in enumerate(variants)}


def series_label(variant: str, param: float) -> str:
    return variant if pd.isna(param) else f"{variant} ({param:g})"


def binary_ticks(low: float, high: float, most: int = 11) -> list[float]:
    """Powers of two spanning [low, high], thinned to at most `most` ticks."""
    first, last = math.floor(math.log2(low)), math.ceil(math.log2(high))
    for step in (1, 2, 5, 10, 20):
        exponents = [e for e in range(first, last + 1) if e % step == 0]
        if len(exponents) <= most:
            break
    return [2.0**e for e in exponents]


def draw_ceiling(ax: Axes, value: float, label: str) -> None:
    ax.axhline(value, color=STYLE["ceiling_color"], linestyle="-.", linewidth=1.2, zorder=1)
    ax.annotate(
        f"{label}: {value:,.0f} GB/s", xy=(0.0, value), xycoords=("axes fraction", "data"),
        xytext=(4, 3), textcoords="offset points", ha="left", va="bottom",
        fontsize=STYLE["note_size"], color=STYLE["ceiling_color"], bbox=LABEL_BOX,
    )


def with_alt(fig: Figure, text: str) -> Figure:
    """Attach alt text (what the figure shows, in a sentence or two) to a figure; returns it."""
    fig.alt_text = " ".join(str(text).split())
    return fig


def alt_text(fig: Figure) -> str | None:
    return getattr(fig, "alt_text", None)


def save(fig: Figure, path: str | os.PathLike) -> Path:
    """Write the figure as PNG (dpi 120), creating folders, its alt text as the PNG's Description."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    metadata = {"Description": alt_text(fig)} if alt_text(fig) else None
    fig.savefig(path, dpi=SAVE_DPI, format="png", facecolor="white", metadata=metadata)
    return path


def _png_with_alt(fig: Figure):
    """Jupyter's PNG of a figure, with its alt text in the output's metadata when it has one."""
    from IPython.core.pylabtools import print_figure  # only called by IPython's display, so present

    data = print_figure(fig, "png", bbox_inches="tight")
    return (data, {"alt": alt_text(fig)}) if alt_text(fig) else data


def show_alt_text_in_jupyter() -> None:
    """In IPython, display figures through _png_with_alt (the notebook keeps each figure's alt text)."""
    try:
        from IPython import get_ipython  # optional: figures are also drawn outside Jupyter
    except ImportError:  # no IPython: nothing displays figures, nothing to do
        return
    shell = get_ipython()
    if shell is not None:
        shell.display_formatter.formatters["image/png"].for_type(Figure, _png_with_alt)
