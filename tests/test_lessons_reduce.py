"""Lesson 5's experiment module: registry, comparisons, the views and models the notebook shows."""

import math

import matplotlib

matplotlib.use("Agg")

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402

from gpu_lessons import lessons  # noqa: E402
from gpu_lessons.kernels import reduce as k  # noqa: E402
from gpu_lessons.lessons import reduce as lesson  # noqa: E402
from gpu_lessons.results import make_table  # noqa: E402

CEILINGS = {"bandwidth_gbps": 4270.0, "bandwidth_variant": "copy_vec4"}
T0_US, BW = 6.0, 4000.0  # the synthetic table's launch cost and bandwidth


def row(variant, n, param=math.nan, provider="gpu_lessons", t0_us=T0_US, bw=BW):
    ms = (t0_us * 1e-6 + 4 * n / (bw * 1e9)) * 1e3
    return {"lesson": lesson.NAME, "variant": variant, "provider": provider, "size": n, "param": param,
            "bytes": 4 * n, "flops": n, "runs": 25, "median_ms": ms, "min_ms": ms, "max_ms": ms}


@pytest.fixture(scope="module")
def table():
    rows = []
    for i, name in enumerate(k.BY_NAME):
        param = lesson.DEFAULT_BLOCKS_PER_SM if k.BY_NAME[name].grid_stride else math.nan
        steps_left = max(0, len(k.PROGRESSION) - 1 - i)  # each step twice as fast; then at BW
        rows.append(row(name, lesson.BIG, param, t0_us=T0_US if not steps_left else 0.0,
                        bw=BW / 2**steps_left))
    for name in lesson.GRID_VARIANTS:
        for bps in lesson.BLOCKS_PER_SM:
            if bps != lesson.DEFAULT_BLOCKS_PER_SM:
                rows.append(row(name, lesson.BIG, bps, bw=BW * min(1, bps / 4)))
    for n in lesson.SIZES:
        for name in lesson.SWEEP_VARIANTS:
            if n != lesson.BIG:
                rows.append(row(name, n, lesson.DEFAULT_BLOCKS_PER_SM))
        rows.append(row(lesson.CUPY, n, provider="cupy", t0_us=9.0))
        rows.append(row(lesson.NUMBA_REDUCE, n, bw=300.0))
    return make_table(rows)


def test_registered_with_a_notebook():
    assert lessons.get("reduce") is lesson
    assert lesson.NOTEBOOK == "05_reduce.ipynb"


def test_comparisons_score_on_the_table(table, tmp_path):
    from gpu_lessons.results import Recording
    from gpu_lessons.scoreboard import score

    recording = Recording(table, {"slug": "test-gpu", "lesson": lesson.NAME}, tmp_path, tmp_path)
    scores = [score(recording, c) for c in lesson.COMPARISONS]
    assert [s["size"] for s in scores] == [lesson.BIG, lesson.MID, lesson.BIG]
    assert scores[1]["ratio"] > 1  # 6 us against CuPy's 9 us of fixed cost at 2^24
    assert scores[2]["best_variant"] in k.DETERMINISTIC


def test_progression_in_teaching_order_with_speedups(table):
    steps = lesson.progression_table(table, CEILINGS)
    assert list(steps.index) == list(k.BY_NAME)
    assert math.isnan(steps["speedup"].iloc[0])
    steps_after_first = len(k.PROGRESSION) - 2
    assert steps["speedup"].iloc[1:-3].round(2).tolist() == [2.0] * steps_after_first


def test_launch_model_recovers_cost_and_bandwidth(table):
    fits = lesson.launch_model(table, ["vec4", lesson.CUPY]).set_index("variant")
    assert fits.loc["vec4", "t0_us"] == pytest.approx(T0_US, rel=1e-6)
    assert fits.loc["vec4", "bw_gbps"] == pytest.approx(BW, rel=1e-6)
    assert fits.loc[lesson.CUPY, "t0_us"] == pytest.approx(9.0, rel=1e-6)
    assert fits["max_model_error"].max() < 1e-9


def test_in_flight_and_implied_latency(table):
    view = lesson.in_flight(table, sms=132).set_index(["variant", "param"])
    vec4 = view.loc[("vec4", 1.0)]
    assert vec4["bytes_in_flight_per_sm"] == 256 * 64
    assert vec4["implied_latency_ns"] == pytest.approx(256 * 64 * 132 / vec4["gbps"])


def test_versus_cupy(table):
    ratios = lesson.versus(table)
    small, big = ratios.loc[2**10, "vec4"], ratios.loc[lesson.BIG, "vec4"]
    assert small > 1.3 and big == pytest.approx(1.0, abs=0.02)


def test_figures_render(table):
    figures = lesson.figures(table, CEILINGS, "synthetic")
    assert set(figures) == {"progression", "bandwidth_vs_size", "time_vs_size", "grid"}
    labels = [t.get_text() for t in figures["progression"].axes[0].get_yticklabels()]
    assert labels[0] == "atomic_per_element" and labels[len(k.BY_NAME)] in (lesson.CUPY, lesson.NUMBA_REDUCE)


def test_host_orders_show_the_order_of_additions():
    x = np.random.default_rng(1).random(2**20, dtype=np.float32)
    orders = lesson.host_orders(x)
    exact = float(np.sum(x, dtype=np.float64))
    sequential, pairwise = orders["sequential float32 (cumsum)"], orders["numpy pairwise float32"]
    assert abs(sequential - exact) > 10 * abs(pairwise - exact)


def test_tree_counts_table():
    counts = lesson.tree_counts(lesson.tree_traces())
    assert counts.loc["tree_interleaved", "lanes per instruction"] < 8
    assert counts.loc["tree_strided_index", "bank conflicts"] > 0
    assert counts.loc["tree_sequential", "bank conflicts"] == 0
    assert isinstance(counts, pd.DataFrame)
