"""Lesson 4 (bank conflicts): the tracer's counts for every transpose, Nsight Compute's recorded counts
against the tracer, the readers of a recording (cost model, Little's law, counters, SASS), the figures,
and the tile coloured by bank against where the kernels really put each element."""

from __future__ import annotations

import json
from functools import cache

import matplotlib

matplotlib.use("Agg")

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402

from gpu_lessons import plots, results  # noqa: E402
from gpu_lessons.kernels import bank_conflicts as k  # noqa: E402
from gpu_lessons.lessons import bank_conflicts as lesson  # noqa: E402
from gpu_lessons.lessons import runner  # noqa: E402
from gpu_lessons.plots import bank_conflicts as pictures  # noqa: E402
from gpu_lessons.results import LessonResult, RecordingError, make_table  # noqa: E402
from gpu_lessons.sim.trace import trace  # noqa: E402

TILED = [v for v in lesson.ALL_TRANSPOSES if v != "naive"]


@cache
def recording() -> LessonResult:
    return results.read_result(lesson.NAME)


def one_tile(variant: str) -> tuple[int, int]:
    return (64, 64) if "tile64" in variant else (32, 32)


@cache
def traced(variant: str):
    """The tracer's MemoryTrace of one transpose of a matrix of one tile (traced once per test run)."""
    shape = one_tile(variant)
    a = np.arange(shape[0] * shape[1], dtype=np.float32).reshape(shape)
    return lesson.trace_transpose(variant, a)


@cache
def traffic() -> pd.DataFrame:
    """The tracer's counts of every tiled transpose, one tile each, as traced_transposes gives them."""
    rows = [lesson.with_per_tile(pd.DataFrame([lesson.traffic_counts(v, traced(v).totals, 4 * 32 * 32)]),
                                 one_tile(v)) for v in TILED]
    return pd.concat(rows).set_index("variant")


# ----------------------------------------------------------------------------- the tracer's counts


def test_read_requests_need_gcd_of_stride_and_32_wavefronts():
    table = lesson.traced_read_requests([0, 1, 2, 8, 32, 33])
    assert table["wavefronts"].tolist() == [1, 1, 2, 8, 32, 1]
    assert table["bank_conflicts"].tolist() == [0, 0, 1, 7, 31, 0]
    assert table["distinct_words"].tolist() == [1, 32, 32, 32, 32, 32]  # stride 0: one word, broadcast
    assert [lesson.conflict_degree(s) for s in table["stride"]] == table["wavefronts"].tolist()


# Wavefronts per tile (loads + stores): a 32x32 tile is 32 load and 32 store requests, a 64x64 tile 128
# loads and 32 16-byte stores (4 wavefronts each) or 128 4-byte stores.
WAVEFRONTS_PER_TILE = {
    "tile32": 32 * 32 + 32, "tile32_padded_loop": 64, "tile32_padded": 64, "tile32_swizzled": 64,
    "tile64_vec4": 128 * 8 + 32 * 4, "tile64_vec4_swizzled": 128 + 32 * 4,
    "tile32_padded_2tiles": 64, "tile32_padded_grid_stride": 64, "tile32_padded_prefetch": 64,
    "tile64_swizzled": 128 + 128, "tile32_vec4": 32 * 8 + 8 * 4, "tile32_vec4_swizzled": 32 + 8 * 4,
}


def test_wavefronts_per_tile():
    assert traffic()["wavefronts_per_tile"].to_dict() == WAVEFRONTS_PER_TILE


def test_traced_transposes_counts_per_whole_tile():
    """What the run records: a 64x64 matrix, four 32x32 tiles walked by three blocks."""
    counts = lesson.traced_transposes(lesson.TRAFFIC_SHAPE, ["tile32_padded_grid_stride"]).iloc[0]
    assert counts["tiles"] == 4 and counts["wavefronts_per_tile"] == 64
    assert counts["global_sectors"] == counts["ideal_sectors"] == 2 * 64 * 64 * 4 // 32


def test_padded_and_swizzled_tiles_have_no_conflicts():
    conflicted = {"tile32": 31 * 32, "tile64_vec4": 7 * 128, "tile32_vec4": 7 * 32}  # per tile, loads
    for variant, row in traffic().iterrows():
        assert row["shared_ld_conflicts"] / row["tiles"] == conflicted.get(variant, 0), variant
        assert row["shared_st_conflicts"] == 0, variant


def test_every_tile_moves_only_the_ideal_sectors():
    ideal = {v: 2 * 4 * one_tile(v)[0] ** 2 // 32 for v in TILED}
    assert traffic()["global_sectors"].to_dict() == ideal


# lesson.check() at the lesson's own shapes runs, and must pass, in
# notebooks/deep_dives/04_bank_conflicts_padding.ipynb: nbval runs it there, once for CI.


def test_padding_costs_a_block_only_on_a_boundary():
    cost = lesson.padding_cost().set_index("tile")
    assert cost.loc["32x32", "blocks_per_sm"] == cost.loc["32x33", "blocks_per_sm"] == 8
    assert (cost.loc["64x224", "blocks_per_sm"], cost.loc["64x225", "blocks_per_sm"]) == (4, 3)


# ------------------------------------------------------------------- the recording's readers


def test_one_clock_per_wavefront():
    fit = lesson.wavefront_cost(recording())
    assert fit["clocks_per_wavefront"] == pytest.approx(1.0, abs=0.02)
    assert fit["max_error"] < 0.03 and fit["sm_clock_mhz"] == 1980


def test_recorded_traffic_is_ncus_count_and_the_tracers():  # the tracer's: test_wavefronts_per_tile
    recorded = lesson.recorded_traffic(recording()).set_index("variant")
    assert set(recorded.index) == set(WAVEFRONTS_PER_TILE)  # every tiled transpose, ncu's count
    for variant, row in recorded.iterrows():
        assert row["wavefronts_per_tile"] == WAVEFRONTS_PER_TILE[variant], variant


def test_cost_model_of_the_recording():
    model = lesson.cost_model(recording()).set_index("variant")
    fit = lesson.wavefront_cost(recording())
    tiles_per_sm = (8192 // 32) ** 2 / 132
    pipe = tiles_per_sm * (64 * fit["intercept_ns"] + 1056 * fit["ns_per_wavefront"]) / 1e3
    assert model.loc["tile32", "pipe_us"] == pytest.approx(pipe)
    assert 250 < pipe < 280  # about 1 clock per wavefront at 1980 MHz: 496 tiles x 1056 wavefronts
    copy = model["copy_us"].iloc[0]
    assert model.loc["tile32", "predicted_us"] == pipe and model.loc["tile32_padded", "predicted_us"] == copy
    assert model.loc["tile64_vec4_swizzled", "error"] < 0.15  # the 64x64 float4 tile: near the copy
    assert model.loc["tile32_padded", "error"] > 0.5  # what the shared pipe does not explain


def test_cost_model_on_a_made_up_table():
    rows = [_row("copy", 100 * 1024, 1024, 0.1), _row("tile32", 100 * 1024, 1024, 0.5)]
    table = make_table(rows)
    counts = lesson.with_per_tile(pd.DataFrame([{
        "variant": "tile32", "shared_ld_requests": 32, "shared_st_requests": 32,
        "shared_ld_wavefronts": 1024, "shared_st_wavefronts": 32}]), (32, 32))
    model = lesson.transpose_cost_model(table, counts, sms=10, intercept_ns=0.0, ns_per_wavefront=1.0,
                                        shape=(1024, 100)).iloc[0]
    tiles = 32 * 4  # 1024 / 32 rows x ceil(100 / 32) columns of tiles
    assert model["pipe_us"] == pytest.approx(tiles / 10 * 1056 / 1e3)
    assert model["predicted_us"] == pytest.approx(max(model["pipe_us"], 100.0))
    assert model["error"] == pytest.approx(500 / model["predicted_us"] - 1)
    with pytest.raises(RecordingError, match="copy"):
        lesson.transpose_cost_model(table[table["variant"] != "copy"], counts, 10, 0.0, 1.0, (1024, 100))


def test_in_flight_reproduces_the_refutation_of_16_bytes_in_flight():
    table = lesson.in_flight(recording()).set_index("variant")
    padded = table.loc["tile32_padded"]
    assert padded["blocks_per_sm"] == 8 and padded["in_flight_mb"] == pytest.approx(4.325, abs=1e-3)
    assert padded["read_tb_per_s"] == pytest.approx(1.15, abs=0.01)
    assert padded["implied_latency_us"] == pytest.approx(3.76, abs=0.01)
    loop = table.loc["tile32_padded_loop"]  # a quarter of the bytes in flight, 1.44x slower
    assert loop["in_flight_mb"] == pytest.approx(padded["in_flight_mb"] / 4)


def test_issue_time_counts_the_compilers_instructions_per_block():
    issue = lesson.issue_time(recording()).set_index("variant")
    assert set(issue.index) == set(lesson.STRAIGHT_LINE) | set(lesson.WITH_SCALAR_PATH)  # no loop kernels
    padded = issue.loc["tile32_padded"]
    blocks_per_sm = (8192 // 32) ** 2 / 132
    assert padded["instructions"] == 375 and padded["blocks_per_sm"] == pytest.approx(blocks_per_sm)
    assert padded["issue_us"] == pytest.approx(blocks_per_sm * 8 * 375 / 4 / 1980)
    two = issue.loc["tile32_padded_2tiles"]  # half the blocks, 8 elements a thread
    assert two["blocks_per_sm"] == pytest.approx(blocks_per_sm / 2)
    assert two["instructions_per_element"] == pytest.approx(two["instructions"] / 8)


def test_three_bills_take_the_longest():
    bills = lesson.three_bills(recording()).set_index("variant")
    assert bills.loc["tile32", "bill"] == "shared pipe"  # 32-way conflicts
    assert bills.loc["tile32_padded", "bill"] == "issue"  # conflict-free, 4-byte accesses
    assert bills.loc["tile64_vec4_swizzled", "bill"] == "DRAM"
    loop = bills.loc["tile32_padded_loop"]  # a loop: no static count per tile
    assert loop["bill"] == "DRAM" and pd.isna(loop["issue_us"])
    padded = bills.loc["tile32_padded"]
    assert padded["predicted_us"] == padded["issue_us"] and 0.2 < padded["error"] < 0.3
    assert bills.loc["tile64_vec4", "issue_upper_bound"] and not padded["issue_upper_bound"]
    picked = lesson.three_bills(recording(), ["tile64_vec4", "tile32_padded"])
    assert picked["variant"].tolist() == ["tile64_vec4", "tile32_padded"]


def test_step_effects_pair_variants_that_differ_in_one_thing():
    rows = [_row(v, 64 * 1024, 1024, ms) for v, ms in
            [("tile32_swizzled", 0.4), ("tile64_swizzled", 0.3), ("tile32_vec4_swizzled", 0.2),
             ("tile64_vec4_swizzled", 0.1)]]
    effects = lesson.step_effects(make_table(rows), shape=(1024, 64)).set_index("change")
    assert effects.loc["tile size, 4-byte accesses", "speedup"] == pytest.approx(4 / 3)
    assert effects.loc["16-byte accesses, 64x64", "speedup"] == pytest.approx(3)
    assert effects.loc["all three at once", "speedup"] == pytest.approx(4)
    assert "float4 swizzle, 32x32" not in effects.index  # tile32_vec4 was not measured


def test_recorded_traffic_prefers_the_runs_own_tracer_counts(monkeypatch, tmp_path):
    """A run's 'traced wavefronts per tile' section, written and read back, is what the model reads."""
    one = traffic().loc[["tile32_vec4"]].reset_index()  # one 32x32 tile
    monkeypatch.setattr(lesson, "TRAFFIC_SHAPE", (32, 32))
    monkeypatch.setattr(lesson, "traced_transposes", lambda shape, variants: one)
    run = runner.Run(lesson.NAME)
    lesson._traffic(run)
    recorded = recording()
    result = LessonResult(lesson.NAME, recorded.table, dict(recorded.meta),
                          recorded.evidence.__class__(facts=run.facts))
    results.write_result(result, root=tmp_path)
    back = results.read_result(lesson.NAME, root=tmp_path)
    read = lesson.recorded_traffic(back)
    assert read["variant"].tolist() == ["tile32_vec4"]
    assert read["wavefronts_per_tile"].iloc[0] == WAVEFRONTS_PER_TILE["tile32_vec4"]
    stored = json.loads((tmp_path / "nvidia-h200" / "bank_conflicts.evidence.json").read_text())
    assert stored["facts"]["transpose_traffic"]["shape"] == list(lesson.TRAFFIC_SHAPE)


def test_readers_name_what_a_recording_lacks():
    bare = LessonResult(lesson.NAME, recording().table, recording().meta)
    for read in (lesson.recorded_traffic, lesson.ncu_table, lambda r: lesson.sass_lines(r, "x")):
        with pytest.raises(RecordingError):
            read(bare)


def test_sass_lines_and_resources_of_the_recording():
    text = lesson.sass_lines(recording(), "transpose_tile64_swizzled_kernel", 8, start="LDG.E.128")
    assert text.splitlines()[0].startswith("LDG.E.128") and text.count("STS.128") == 4
    with pytest.raises(RecordingError, match="kernels.nope is missing"):
        lesson.sass_lines(recording(), "nope")
    lines = ["/*0a10*/ LDS R1, [R2]", "/*0a20*/ BAR.SYNC 0x0"]
    fake = LessonResult(lesson.NAME, recording().table, recording().meta,
                        results.Evidence(kernels={"k": {"registers": 8, "sass": {"lines": lines}}}))
    assert lesson.sass_lines(fake, "k", start="BAR") == "BAR.SYNC 0x0"
    table = lesson.resources_table(recording()).set_index("kernel")
    assert table.loc["transpose_padded_kernel", "shared_bytes"] == 4224
    assert "STS.128 x4" in table.loc["transpose_tile64_kernel", "sass_memory_opcodes"]


def test_ncu_table_shortens_metric_names():
    table = lesson.ncu_table(recording(), "shared_read").set_index("case")
    assert table.loc["shared_read/stride=32", "wavefronts_mem_shared_op_ld"] == 32 * 128


# ------------------------------------------------------------------- tables and figures


def _row(variant, size, param, ms, provider="gpu_lessons", bytes_moved=None):
    bytes_moved = 8 * size if bytes_moved is None else bytes_moved
    return {"lesson": lesson.NAME, "variant": variant, "provider": provider, "size": size,
            "param": param, "bytes": bytes_moved, "flops": 0, "runs": 25, "median_ms": ms,
            "min_ms": ms, "max_ms": ms}


def fraction_of(variant):
    """The made-up share of cupy.copyto for each variant: rising in teaching order."""
    return 0.5 + 0.03 * lesson.ALL_TRANSPOSES.index(variant)


@pytest.fixture
def table():
    rows = []
    requests = 132 * 8 * 8 * lesson.READ_REPS * k.READ_UNROLL
    for stride in lesson.READ_STRIDES:
        rows.append(_row("shared_read", requests, stride, 0.1 * lesson.conflict_degree(stride),
                         bytes_moved=128 * requests))
    for rows_n, cols_n in lesson.SHAPES:
        n = rows_n * cols_n
        variants = lesson.ALL_TRANSPOSES if (rows_n, cols_n) == lesson.SQUARE else lesson.TRANSPOSE_VARIANTS
        for variant, fraction in [("copy", 0.99), ("cupy copyto", 1.0), ("cupy ascontiguousarray(a.T)", 0.3),
                                  *((v, fraction_of(v)) for v in variants)]:
            provider = "cupy" if variant.startswith("cupy") else "gpu_lessons"
            rows.append(_row(variant, n, rows_n, 8 * n / (4e12 * fraction) * 1e3, provider))
    return make_table(rows)


def _result(table, evidence=None):
    meta = {**recording().meta}
    return LessonResult(lesson.NAME, table, meta, evidence or recording().evidence)


def test_read_cost_is_per_request_per_sm(table):
    cost = lesson.read_cost(table, sms=132, sm_clock_mhz=1980).set_index("stride")
    assert cost.loc[32, "wavefronts"] == 32 and cost.loc[0, "access"] == "broadcast"
    assert cost.loc[32, "vs_stride_1"] == pytest.approx(32)
    requests = table[table["variant"] == "shared_read"]["size"].iloc[0]
    assert cost.loc[1, "ns_per_request"] == pytest.approx(0.1e6 * 132 / requests)


def test_transpose_summary_is_same_run_fractions(table):
    summary = lesson.transpose_summary(table, lesson.TRANSPOSE_VARIANTS)
    square = summary[summary["shape"] == "8192x8192"].set_index("variant")
    best = fraction_of("tile64_vec4_swizzled")
    assert square.loc["tile64_vec4_swizzled", "of_cupy_copy"] == pytest.approx(best)
    assert square.loc["cupy ascontiguousarray(a.T)", "of_cupy_copy"] == pytest.approx(0.3)
    assert "tile32_padded_2tiles" not in square.index  # the experiments stay out of the teaching figure
    assert set(summary["shape"]) == {f"{r}x{c}" for r, c in lesson.SHAPES}
    assert "tile32_padded_2tiles" in set(lesson.transpose_summary(table)["variant"])


def test_figures_of_the_recording_have_alt_text():
    figs = lesson.figures(recording(), {"bandwidth_gbps": 4000.0})
    assert set(figs) == {"transpose_8192", "transpose_shapes", "read_cost", "cost_model", "tile_banks",
                         "float4_banks", "padded_tile_controls", "tile_steps"}
    assert all(plots.style.alt_text(fig) for fig in figs.values())
    bars = [t.get_text() for t in figs["cost_model"].axes[0].get_yticklabels()]
    assert set(bars) == set(lesson.BILLS_FIGURE) and "tile32" in bars  # drawn (issue 26) ...
    pipe = lesson.three_bills(recording(), ["tile32"]).iloc[0]["pipe_us"]
    alt = plots.style.alt_text(figs["cost_model"])
    assert "tile32: measured" in alt and f"pipe {pipe:,.0f}" not in alt  # ... its bill (exercise 1) unwritten
    widths = [bar.get_width() for bar in figs["cost_model"].axes[0].patches]
    assert not any(abs(w / pipe - 1) < 0.01 for w in widths)  # ... and undrawn (review R34c, 7)
    others = lesson.three_bills(recording(), [v for v in lesson.BILLS_FIGURE if v != "tile32"])["pipe_us"]
    assert sum(abs(w / p - 1) < 1e-9 for w in widths for p in others) >= len(others)  # the others' drawn


def test_figures_of_a_run_with_the_experiments(table):
    figs = lesson.figures(_result(table), {"bandwidth_gbps": 4000.0})
    assert {"padded_tile_controls", "tile_steps", "cost_model"} <= set(figs)
    legend = [t.get_text() for t in figs["tile_steps"].axes[0].get_legend().get_texts()]
    assert len(legend) == 4 and legend[-1].startswith("4-byte accesses, padded")
    controls = [t.get_text().split(" (")[0] for t in figs["padded_tile_controls"].axes[0].get_yticklabels()]
    assert "tile32_padded_2tiles" in controls and "tile32_vec4_swizzled" not in controls


def test_comparisons_score_the_best_transpose_at_8192(table, tmp_path):
    from gpu_lessons.scoreboard import scoreboard

    results.write_result(_result(table, results.Evidence()), root=tmp_path)
    board = scoreboard(lesson.COMPARISONS, root=tmp_path).set_index("title")
    copy = board.loc["transpose 8192x8192 vs device copy"]
    best = fraction_of("tile64_vec4_swizzled")  # the experiments are not scoreboard rows
    assert copy["best_variant"] == "tile64_vec4_swizzled" and copy["ratio"] == pytest.approx(best)
    assert board.loc["transpose 8192x8192 vs cupy a.T copy", "ratio"] == pytest.approx(best / 0.3)


def test_time_vs_wavefronts_draws_the_fitted_line(table):
    cost = lesson.read_cost(table, sms=132)
    intercept, slope = pictures.wavefront_fit(cost)  # the fixture: time exactly proportional
    assert intercept == pytest.approx(0, abs=1e-9) and slope == pytest.approx(cost["ns_per_request"].iloc[1])
    fig = pictures.time_vs_wavefronts(cost)
    labels = [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
    assert labels[0].startswith("fit:") and labels[1] == "measured"


# ----------------------------------------------------------------------------- the bank picture


def _request(kernel, *args, **pick):
    return trace(kernel, 1, 32, *args).request(**pick)


@pytest.mark.parametrize("stride, rows", [(0, 1), (1, 1), (2, 2), (32, 32), (33, 1)])
def test_bank_layout_places_words_in_wavefronts(stride, rows):
    request = _request(k.shared_read_kernel, np.zeros(32, np.float32), stride, 1,
                       source="buffer[slot + u32(32 * j)]")
    layout = pictures.shared_bank_layout(request)
    assert layout["wavefront"].max() + 1 == rows == request.attrs["wavefronts"]
    assert (layout["bank"] == layout["word"] % 32).all()
    fig = pictures.shared_memory_banks(request, provenance="simulated")
    assert f"{rows} wavefront" in fig.axes[0].get_title(loc="left")


def test_bank_layout_of_a_float64_access_spans_two_words_and_two_phases():
    request = _request(k.shared_stride64_kernel, np.arange(32.0), np.zeros(32), 1, array="buffer", op="ld")
    layout = pictures.shared_bank_layout(request)
    assert len(layout) == 64 and set(layout["wavefront"]) == {0, 1}  # half-warps, no conflict
    assert layout.groupby("wavefront")["bank"].nunique().tolist() == [32, 32]


def test_request_titles_count_in_words():
    request = _request(k.shared_read_kernel, np.zeros(32, np.float32), 2, 1,
                       source="buffer[slot + u32(32 * j)]")
    assert pictures.request_title(request, 2, "stride 2") == (
        "stride 2: 32 lanes x 4 B -> 2 wavefronts, 1 bank conflict")
    assert pictures.plural(0, "bank conflict") == "no bank conflict"
    fig = pictures.bank_requests([("stride 2", request), ("again", request)])
    assert len(fig.axes) == 2 and "stride 2: 32 lanes" in plots.style.alt_text(fig)


def test_a_wide_access_is_drawn_as_one_box_per_lane():
    request = _request(k.shared_stride64_kernel, np.arange(32.0), np.zeros(32), 1, array="buffer", op="ld")
    ax = pictures.shared_memory_banks(request).axes[0]
    boxes = [p for p in ax.patches if not p.get_fill()]
    assert len(boxes) == 32 and {round(b.get_width(), 2) for b in boxes} == {1.94}  # two words each


def test_shape_grid_writes_every_share(table):
    summary = lesson.transpose_summary(table, lesson.TRANSPOSE_VARIANTS)
    fig = pictures.shape_grid(summary, [*lesson.TRANSPOSE_VARIANTS, lesson.CUPY_TRANSPOSE])
    texts = [t.get_text() for t in fig.axes[0].texts]
    assert len(texts) == (len(lesson.TRANSPOSE_VARIANTS) + 1) * len(lesson.SHAPES)
    assert "0.300" in texts  # cupy's a.T in the made-up table


def test_bank_layout_refuses_a_global_request():
    request = _request(k.shared_read_kernel, np.zeros(32, np.float32), 1, 1, array="out")
    with pytest.raises(ValueError, match="shared-memory"):
        pictures.shared_bank_layout(request)


# (layout, tile width, variant, source of the kernel's first tile read): the kernel's real placement
KERNEL_LAYOUTS = [
    ("unpadded", 32, "tile32", "tile[tx, ty]"),
    ("padded", 32, "tile32_padded", "tile[tx, ty]"),
    ("xor", 32, "tile32_swizzled", "tile[tx, ty ^ tx]"),
    ("float4", 32, "tile32_vec4", "tile[word(r, c)]"),
    ("float4_xor", 32, "tile32_vec4_swizzled", "tile[word(r, c)]"),
    ("xor", 64, "tile64_swizzled", "tile[tile64_word(r, c)]"),
    ("float4_xor", 64, "tile64_vec4_swizzled", "tile[word(r, c)]"),
]


@pytest.mark.parametrize("layout, width, variant, source", KERNEL_LAYOUTS)
def test_tile_words_are_where_the_kernels_put_each_element(layout, width, variant, source):
    assert one_tile(variant) == (width, width)
    request = traced(variant).request(source=source, op="ld")  # warp 0's first read of the tile
    rows, cols = lesson.warp_read_elements(layout)
    expected = lesson.tile_words(layout, width, width)[rows, cols]
    assert request.sort_values("lane")["word"].tolist() == expected.tolist()
    assert lesson.request_wavefronts(expected) == request.attrs["wavefronts"]


def test_bank_layouts_for_the_picture():
    panels = {p["layout"]: p for p in lesson.bank_layouts(lesson.LAYOUTS)}
    assert {name: p["wavefronts"] for name, p in panels.items()} == {
        "unpadded": 32, "padded": 1, "xor": 1, "float4": 8, "float4_xor": 1}
    assert (panels["unpadded"]["banks"][:, 0] == 0).all()  # a column: all in bank 0
    assert sorted(panels["padded"]["banks"][:, 0]) == list(range(32))
    assert np.array_equal(panels["xor"]["banks"], lesson.tile_words("xor") % 32)
    with pytest.raises(ValueError, match="unknown layout"):
        lesson.tile_words("diagonal")
    fig = pictures.tile_bank_maps(lesson.bank_layouts())
    assert len(fig.axes) == 4 and "32 wavefronts" in fig.axes[0].get_title(loc="left")


def test_variant_design_covers_every_transpose():
    design = lesson.variant_design().set_index("variant")
    assert list(design.index) == lesson.ALL_TRANSPOSES
    assert set(design["layout"]) - {"none"} <= set(lesson.LAYOUTS)
    assert all(lesson.kernel_name(v).endswith("_kernel") for v in lesson.ALL_TRANSPOSES)


# ----------------------------------------------------------------- the sections, on the simulator


def test_the_sections_run_end_to_end_with_a_fixed_clock(monkeypatch):
    """What only a GPU run executes (launchers, poisoning, checks, facts, evidence), on tiny shapes:
    the GPU's clock, compiler and driver replaced by stand-ins."""
    from types import SimpleNamespace

    from gpu_lessons import bench
    from gpu_lessons.results.evidence import check_evidence

    def measure(launch, input_sets=1, **_):
        launch(0)  # the output is checked afterwards: launch once
        return bench.Timing(2.0, 1.5, 3.0, 25)

    recorded_kernels = []
    monkeypatch.setattr(bench, "measure", measure)
    monkeypatch.setattr(runner.Run, "kernel", lambda run, name, kernel, args, sass_pattern=None:
                        recorded_kernels.append(name))
    monkeypatch.setattr(lesson, "driver_blocks_per_sm", lambda kernel, threads, signature=None: 1)
    monkeypatch.setattr(lesson, "device_info", lambda: SimpleNamespace(sms=1))
    monkeypatch.setattr(lesson, "blocks_per_sm", lambda threads: 1)
    monkeypatch.setattr(lesson, "READ_REPS", 1)
    monkeypatch.setattr(lesson, "READ_STRIDES", [0, 33])
    monkeypatch.setattr(lesson, "SQUARE", (32, 36))  # a whole tile and an edge
    counts = traffic().reset_index()  # traced before the tracer is replaced by its result
    monkeypatch.setattr(lesson, "traced_transposes", lambda shape, variants: counts)
    monkeypatch.setattr(lesson, "poison", lambda array: array.copy_to_device(  # the fill kernel: slow here
        np.full(array.shape, np.nan, array.dtype)))
    sections = (runner.Section("shared reads", lesson._shared_reads),
                runner.Section("transposes", lesson._transposes_at((32, 36))),
                *(s for s in lesson.SECTIONS
                  if s.name.startswith(("padded tile", "32x32 to 64x64", "traced"))))
    result = runner.measure(SimpleNamespace(NAME=lesson.NAME, SECTIONS=sections), show_progress=False)
    assert not result.failures, result.failures
    timed = set(result.table["variant"])
    references = {lesson.CUPY_COPY, lesson.CUPY_TRANSPOSE} if runner.cupy_or_none() else set()  # a GPU's CuPy
    assert set(lesson.ALL_TRANSPOSES) | {"copy", "shared_read"} | references == timed
    assert set(recorded_kernels) == {lesson.kernel_name(v) for v in lesson.ALL_TRANSPOSES} | {
        "shared_read_kernel", "shared_stride64_kernel"}
    grids = result.facts["grid_stride_grids"]
    assert grids["tile32_padded_prefetch"] == {"blocks_per_sm": 1, "blocks": 1, "tiles": 2}
    assert [row["stride"] for row in result.facts["stride_wavefronts"]] == lesson.READ_STRIDES
    assert len(result.facts["transpose_traffic"]["rows"]) == len(TILED)
    assert len(sections) == 5
    check_evidence(result.evidence, lesson.NAME)


def test_a_float4_tile_padded_by_a_float4_still_conflicts():  # issue 26 item 20: traced on the simulator
    traced = lesson.float4_padded_read().set_index("layout")["wavefronts"]
    assert traced.tolist() == [8, 4, 1]  # unswizzled, padded by a float4 (16-byte aligned rows), swizzled


def test_the_thread_element_map_is_a_transpose_through_the_tile():
    elements = lesson.thread_elements()
    assert len(elements) == 2 * 32 * 32  # every element loaded once and stored once
    mine = elements[(elements["tx"] == 5) & (elements["ty"] == 2)].set_index(["array", "k"])
    assert mine.loc["a"][["row", "col"]].to_numpy().tolist() == [[2, 5], [10, 5], [18, 5], [26, 5]]
    assert mine.loc["out"][["row", "col"]].to_numpy().tolist() == [[2, 5], [10, 5], [18, 5], [26, 5]]
    assert plots.style.alt_text(lesson.half_warp_picture()).endswith("2 wavefronts, no bank conflict.")
