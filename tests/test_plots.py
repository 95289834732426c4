"""The figures: labels, lines and texts a reader relies on; PNGs written headless (Agg)."""

from __future__ import annotations

import math
import struct

import matplotlib

matplotlib.use("Agg")

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402

from gpu_lessons import plots  # noqa: E402
from gpu_lessons.results import make_table  # noqa: E402

PROVENANCE = "NVIDIA H200 (CC 9.0, 132 SMs, SM clock <= 1980 MHz), driver CUDA 13.0, recorded 2026-11-29"
CEILING = 4050.0


def copy_row(variant, elements, gbps, provider="gpu_lessons"):
    moved = 8 * elements
    median_ms = moved / gbps / 1e6
    return {
        "lesson": "roofline", "variant": variant, "provider": provider, "size": elements,
        "bytes": moved, "flops": 0, "runs": 25,
        "median_ms": median_ms, "min_ms": median_ms, "max_ms": median_ms,
    }


@pytest.fixture
def table():
    rows = []
    for power in range(14, 29, 2):
        n = 2**power
        saturation = n / (n + 2**18)
        rows += [
            copy_row("copy_scalar", n, 3700 * saturation),
            copy_row("copy_vec4", n, 4050 * saturation),
            copy_row("cupy copy", n, 4000 * saturation, provider="cupy"),
        ]
    return make_table(rows)


def texts(fig) -> list[str]:
    """Every text in the figure: titles, labels, annotations, caption."""
    return [t.get_text() for t in fig.findobj(matplotlib.text.Text) if t.get_text()]


def png_size(path) -> tuple[int, int]:
    header = path.read_bytes()[:24]
    assert header[:8] == b"\x89PNG\r\n\x1a\n"
    return struct.unpack(">II", header[16:24])


def test_bandwidth_vs_size(table, tmp_path):
    fig = plots.charts.bandwidth_vs_size(table, ceiling_gbps=CEILING, ceiling_label="measured ceiling",
                                  provenance=PROVENANCE)
    ax = fig.axes[0]
    assert ax.get_xlabel() == "Bytes moved per call (reads + writes)"
    assert ax.get_ylabel() == "Bandwidth (GB/s)"
    assert ax.get_title(loc="left") and ax.get_xscale() == "log"
    lines = {line.get_label(): line for line in ax.get_lines()}
    assert {"copy_scalar", "copy_vec4", "cupy copy"} <= set(lines)
    assert lines["copy_vec4"].get_linestyle() == "-"
    assert lines["cupy copy"].get_linestyle() == "--"  # references dashed
    assert list(lines["copy_vec4"].get_xdata()) == sorted(lines["copy_vec4"].get_xdata())
    ceiling = [line for line in ax.get_lines() if list(line.get_ydata()) == [CEILING, CEILING]]
    assert len(ceiling) == 1
    assert "measured ceiling: 4,050 GB/s" in texts(fig)
    assert fig.get_supxlabel() == PROVENANCE
    fig.canvas.draw()
    tick_labels = [t.get_text() for t in ax.get_xticklabels()]
    assert "1 MiB" in tick_labels and "1 GiB" in tick_labels
    path = plots.save(fig, tmp_path / "deep" / "folder" / "bandwidth.png")
    assert png_size(path) == (900, 552)  # 7.5 x 4.6 inches at 120 dpi


def test_bandwidth_vs_size_without_ceiling_or_caption(table):
    fig = plots.charts.bandwidth_vs_size(table)
    assert len(fig.axes[0].get_lines()) == 3
    assert fig.get_supxlabel() == ""


def test_bandwidth_vs_size_draws_into_a_given_axes(table):
    fig = matplotlib.figure.Figure()
    ax = fig.add_subplot()
    assert plots.charts.bandwidth_vs_size(table, ax=ax) is fig


def test_percent_of_ceiling(table, tmp_path):
    fig = plots.charts.percent_of_ceiling(table, CEILING, provenance=PROVENANCE)
    ax = fig.axes[0]
    bars = ax.patches
    assert len(bars) == 3
    widths = sorted(bar.get_width() for bar in bars)
    largest = table[table["size"] == table["size"].max()].set_index("variant")["gbps"]
    assert widths == pytest.approx(sorted(100 * largest / CEILING))
    labels = [t.get_text() for t in ax.get_yticklabels()]
    assert max(zip(ax.get_yticks(), labels, strict=True))[1] == "copy_vec4"  # best on top
    assert any(t.startswith(f"{100 * largest['copy_scalar'] / CEILING:.0f}%") for t in texts(fig))
    assert ax.get_xlabel() == "% of measured ceiling (100% = 4,050 GB/s)"
    assert "2 GiB moved" in ax.get_title(loc="left")
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    assert legend == ["our kernels", "references", "measured ceiling (4,050 GB/s)"]
    assert fig.get_supxlabel() == PROVENANCE
    png_size(plots.save(fig, tmp_path / "percent.png"))


def test_percent_of_ceiling_rejects_bad_arguments(table):
    with pytest.raises(ValueError, match="metric"):
        plots.charts.percent_of_ceiling(table, CEILING, metric="tflops")
    with pytest.raises(ValueError, match="ceiling must be positive"):
        plots.charts.percent_of_ceiling(table, 0)


POINTS = pd.DataFrame({
    "label": ["triad", "k=1", "k=64", "naive GEMM"],
    "intensity": [0.125, 0.25, 16.0, 0.5],
    "gflops": [470.0, 950.0, 58000.0, 2100.0],
    "kind": ["triad", "k FMAs", "k FMAs", "GEMM"],
})


def test_roofline(tmp_path):
    bandwidth, peak = 4050.0, 60500.0
    fig = plots.charts.roofline(bandwidth, peak, points=POINTS,
                         datasheet={"bandwidth_gbps": 4800.0, "peak_gflops": 66900.0},
                         provenance=PROVENANCE)
    ax = fig.axes[0]
    assert (ax.get_xscale(), ax.get_yscale()) == ("log", "log")
    assert ax.get_xlabel() == "Arithmetic intensity (FLOP/byte)"
    assert ax.get_ylabel() == "Performance (GFLOP/s)"
    lines = {line.get_label(): line for line in ax.get_lines()}
    roof = lines["measured roof (4,050 GB/s; 60,500 GFLOP/s)"]
    intensity = np.asarray(roof.get_xdata())
    assert np.allclose(roof.get_ydata(), np.minimum(peak, bandwidth * intensity))
    assert roof.get_linestyle() == "-"
    datasheet = lines["datasheet (4,800 GB/s; 66,900 GFLOP/s)"]
    assert datasheet.get_linestyle() == "--"
    ridge = peak / bandwidth
    assert any(f"I* = {ridge:.3g} FLOP/byte" in t for t in texts(fig))
    assert {"triad", "k=1", "k=64", "naive GEMM"} <= set(texts(fig))
    assert [c.get_label() for c in ax.collections] == ["triad", "k FMAs", "GEMM"]
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    assert legend[:2] == [roof.get_label(), datasheet.get_label()]
    lo, hi = ax.get_xlim()
    assert lo <= POINTS["intensity"].min() and hi >= POINTS["intensity"].max()
    assert fig.get_supxlabel() == PROVENANCE
    png_size(plots.save(fig, tmp_path / "roofline.png"))


def test_roofline_without_extras():
    fig = plots.charts.roofline(4000.0, 60000.0)
    ax = fig.axes[0]
    roofs = [line for line in ax.get_lines() if line.get_label().startswith("measured roof")]
    assert [line.get_linestyle() for line in roofs] == ["-"]
    assert not any("datasheet" in line.get_label() for line in ax.get_lines())
    assert not ax.collections


def test_roofline_datasheet_peak_only_and_bad_points():
    fig = plots.charts.roofline(4000.0, 60000.0, datasheet={"peak_gflops": 67000.0})
    dashed = [line for line in fig.axes[0].get_lines() if line.get_linestyle() == "--"]
    assert len(dashed) == 1 and list(dashed[0].get_ydata()) == [67000.0, 67000.0]
    assert dashed[0].get_label() == "datasheet (67,000 GFLOP/s)"
    with pytest.raises(ValueError, match="points lacks column"):
        plots.charts.roofline(4000.0, 60000.0, points=POINTS.drop(columns="gflops"))


@pytest.mark.parametrize(
    "count, text",
    [(512, "512 B"), (1024, "1 KiB"), (1536, "1.5 KiB"), (2**28, "256 MiB"), (2**31, "2 GiB")],
)
def test_human_bytes(count, text):
    assert plots.human_bytes(count) == text


def test_figures_are_detached_from_pyplot(table):
    import matplotlib.pyplot as plt

    before = len(plt.get_fignums())
    plots.charts.bandwidth_vs_size(table)
    assert len(plt.get_fignums()) == before  # shown once in Jupyter, nothing left open in loops
    assert math.isclose(plots.style.SAVE_DPI, 120)


def test_alt_text_travels_in_the_png_and_in_jupyters_output(table, tmp_path):
    from PIL import Image

    alt = "Copy bandwidth rises with size to the ceiling."
    fig = plots.with_alt(plots.charts.bandwidth_vs_size(table), alt.replace(" to", "  to"))
    path = plots.save(fig, tmp_path / "alt.png")
    assert Image.open(path).info["Description"] == alt
    data, metadata = plots.style._png_with_alt(fig)
    assert data.startswith(b"\x89PNG") and metadata == {"alt": alt}
    bare, _ = plots.style.new_axes(None)
    assert isinstance(plots.style._png_with_alt(bare), bytes)  # no alt text: a plain PNG, as Jupyter's


def test_every_figure_a_notebook_shows_has_alt_text():
    """Every image in every committed lesson and deep dive carries alt text (the lessons' own tests
    draw their figures() and hold the alt text's numbers to the data)."""
    import nbformat

    from gpu_lessons import course

    folder = course.notebooks_folder()
    paths = sorted(folder.glob("*.ipynb")) + sorted((folder / "deep_dives").glob("*.ipynb"))
    images = 0
    for path in paths:
        for index, cell in enumerate(nbformat.read(path, as_version=4).cells):
            for output in cell.get("outputs", []):
                if "image/png" in output.get("data", {}):
                    images += 1
                    alt = output.get("metadata", {}).get("image/png", {}).get("alt")
                    assert alt, f"{path.name}, cell {index}: an image without alt text"
    assert len(paths) >= 14 and images >= 60, (len(paths), images)


def test_roofline_figures_have_alt_text():  # the one lesson whose own tests draw no figures()
    from gpu_lessons import lessons

    figures = lessons.LESSONS["roofline"].figures(lessons.load("roofline", live=False), lessons.roof())
    for figure_name, figure in figures.items():
        assert plots.style.alt_text(figure), f"roofline: figure {figure_name!r} has no alt text"
