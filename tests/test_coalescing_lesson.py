"""Lesson 3 (coalescing): particle layouts, access widths and add_vec4 against NumPy on awkward
sizes and misaligned views; the tracer's sector counts behind the model; the lesson's plumbing."""

import numpy as np
import pandas as pd
import pytest

import gpu_lessons
from gpu_lessons import plots
from gpu_lessons.checks import InputError
from gpu_lessons.kernels import coalescing as k
from gpu_lessons.lessons import coalescing as lesson

rng = np.random.default_rng()
DT = np.float32(0.01)


def random(*shape):
    return rng.standard_normal(shape, dtype=np.float32)


# ------------------------------------------------------------------------------ particles


@pytest.mark.parametrize("n", [1, 37, 1027])
@pytest.mark.parametrize("layout", ["aos", "aosoa", "padded"])
def test_particle_layouts_match_numpy(layout, n):
    records = random(n, 6)
    got = k.update_particles(records, DT, layout)
    assert np.allclose(got, k.particles_reference(records, DT), rtol=1e-6, atol=1e-6)
    assert np.array_equal(got[:, 3:], records[:, 3:])  # velocities untouched


@pytest.mark.parametrize("variant", k.PARTICLE_SOA_VARIANTS)
@pytest.mark.parametrize("n", [3, 1027])
def test_soa_variants_match_numpy(variant, n):
    records = random(n, 6)
    got = k.update_particles(records, DT, "soa", variant)
    assert np.allclose(got, k.particles_reference(records, DT), rtol=1e-6, atol=1e-6)


def test_layout_conversions_round_trip():
    records = random(45, 6)
    assert np.array_equal(k.from_aosoa(k.to_aosoa(records), 45), records)
    assert np.array_equal(k.from_padded(k.to_padded(records)), records)
    blocks = k.to_aosoa(records)
    assert blocks.shape == (2, 6, 32) and np.array_equal(blocks[1, 4, :13], records[32:, 4])


def test_device_layout_kernels_agree_with_the_host_ones():
    from numba import cuda

    records = random(45, 6)
    fields = [cuda.to_device(np.ascontiguousarray(records[:, f])) for f in range(6)]
    aos = cuda.device_array((45, 6), np.float32)
    k.soa_to_aos_launch(fields, aos)
    assert np.array_equal(aos.copy_to_host(), records)
    blocks = cuda.to_device(np.zeros((2, 6, 32), np.float32))
    k.aos_to_aosoa_launch(aos, blocks)
    assert np.array_equal(blocks.copy_to_host(), k.to_aosoa(records))
    flat = cuda.device_array(45 * 8, np.float32)
    k.aos_to_padded_launch(aos, flat)
    assert np.array_equal(flat.copy_to_host(), k.to_padded(records))
    back = cuda.device_array((45, 6), np.float32)
    k.padded_to_aos_launch(flat, back)
    assert np.array_equal(back.copy_to_host(), records)
    k.aosoa_to_aos_launch(blocks, back)
    assert np.array_equal(back.copy_to_host(), records)


def test_aos_field_reads_cost_six_times_the_sectors_of_soa():
    from gpu_lessons.sim import trace

    records = random(64, 6)
    aos = trace.trace(k.particles_aos_kernel, 1, 64, records.copy(), DT)
    fields = [np.ascontiguousarray(records[:, f]) for f in range(6)]
    soa = trace.trace(k.particles_soa_kernel, 1, 64, *fields, DT)
    assert aos.sectors_per_request("ld") == 24  # 32 records of 24 bytes: 768 bytes
    assert soa.sectors_per_request("ld") == 4


@pytest.mark.parametrize("call, message", [
    (lambda: k.update_particles(np.zeros((4, 5), np.float32), DT), r"shape \(n, 6\)"),
    (lambda: k.update_particles(np.zeros((4, 6), np.float64), DT), "dtype float32"),
    (lambda: k.update_particles(np.zeros((4, 6), np.float32), DT, "soa2"), "unknown layout"),
    (lambda: k.update_particles(np.zeros((4, 6), np.float32), DT, "soa", "fast"), "unknown SoA variant"),
])
def test_particle_inputs_are_checked(call, message):
    with pytest.raises(InputError, match=message):
        call()


# ------------------------------------------------------------------------------ copies


@pytest.mark.parametrize("variant", list(k.WIDTH_VARIANTS))
@pytest.mark.parametrize("n", [1, 7, 1027])
def test_copies_of_every_width_are_exact(variant, n):
    x = random(n)
    assert np.array_equal(k.copy_width(x, variant), x)


@pytest.mark.parametrize("variant", ["copy_w16_grid_stride", "copy_w16_grid_stride_x4", "copy_w16_queue",
                                     "copy_w8_grid_stride"])
def test_grid_stride_copies_with_other_blocks_and_waves(variant):
    x = random(5003)  # several trips of the 4-block simulated grid
    for block, waves in ((64, 1), (1024, 1), (128, 2)):
        assert np.array_equal(k.copy_width(x, variant, block, waves), x), (block, waves)


def test_the_queue_counters_are_reset_for_the_next_launch():
    x = random(3001)
    for _ in range(3):
        assert np.array_equal(k.copy_width(x, "copy_w16_queue"), x)
    assert k.queue_counters().copy_to_host().tolist() == [0, 0]


@pytest.mark.parametrize("variant, width, sectors", [("copy_w4", 4, 4), ("copy_w8", 8, 8),
                                                     ("copy_w16", 16, 16)])
def test_access_width_is_what_the_tracer_sees(variant, width, sectors):
    from gpu_lessons.sim import trace

    n = 64 * width // 4
    counts = trace.trace(k.WIDTH_VARIANTS[variant][0], 1, 64, random(n), np.zeros(n, np.float32))
    loads = counts.by_instruction.query("op == 'ld'")
    assert set(loads["bytes"]) == {width}
    assert counts.sectors_per_request("ld") == sectors  # a full warp: 32 x width bytes, aligned


def test_copy_inputs_are_checked():
    with pytest.raises(InputError, match="misaligned for 8-byte"):
        k.copy_width(random(10)[1:], "copy_w8")
    with pytest.raises(InputError, match="unknown copy"):
        k.copy_width(random(10), "copy_w32")


# ------------------------------------------------------------------------------ add_vec4


@pytest.mark.parametrize("n", [0, 1, 2, 3, 4, 5, 8, 1027])
def test_add_vec4_body_and_tail(n):
    x, y = random(n), random(n)
    assert np.array_equal(k.add_vec4(x, y), x + y)


def test_add_vec4_uses_16_byte_loads_for_the_body_and_scalars_for_the_tail():
    from gpu_lessons.sim import trace

    n = 130  # 32 groups of 4 (one warp) and a tail of 2
    x, y = random(n), random(n)
    counts = trace.trace(k.add_vec4_kernel, 1, 64, x, y, np.zeros(n, np.float32))
    table = counts.by_instruction
    body = table[(table["array"] == "x") & (table["bytes"] == 16)]
    tail = table[(table["array"] == "x") & (table["bytes"] == 4)]
    assert body["threads"].sum() == 32 and body["sectors"].sum() == 16
    assert tail["threads"].sum() == 2


@pytest.mark.parametrize("which", ["x", "y"])
def test_add_vec4_refuses_a_misaligned_view(which):
    a, b = random(101), random(101)
    views = {"x": a[:100], "y": b[:100], which: (a if which == "x" else b)[1:]}
    with pytest.raises(InputError, match=f"{which} is misaligned for 16-byte vector access"):
        k.add_vec4(views["x"], views["y"])


def test_add_vec4_takes_an_aligned_view_at_the_far_end():
    a, b = random(1031), random(1031)
    assert np.array_equal(k.add_vec4(a[4:], b[4:]), a[4:] + b[4:])  # 16 bytes in: aligned again
    assert np.array_equal(k.add_vec4(a[:1029], b[:1029]), a[:1029] + b[:1029])  # any length


def test_add_vec4_checks_shapes_and_dtypes():
    with pytest.raises(InputError, match="shape mismatch"):
        k.add_vec4(random(8), random(12))
    with pytest.raises(InputError, match="dtype float32"):
        k.add_vec4(np.zeros(8), random(8))


def test_add_vec4_device_arrays_in_device_array_out():
    from numba import cuda

    x, y = random(33), random(33)
    out = k.add_vec4(cuda.to_device(x), cuda.to_device(y))
    assert hasattr(out, "copy_to_host") and np.array_equal(out.copy_to_host(), x + y)


# ------------------------------------------------------------------------------ helpers


def test_random_fill_is_reproduced_on_the_host_bit_for_bit():
    from numba import cuda

    d = cuda.device_array(3001, np.float32)
    k.fill_random(d, 11)
    values = d.copy_to_host()
    assert np.array_equal(values, k.random_values(np.arange(3001), 11))
    assert values.min() >= -1 and values.max() < 1 and np.count_nonzero(values) > 2990
    assert abs(float(values.mean())) < 0.05
    assert not np.array_equal(values, k.random_values(np.arange(3001), 12))


def test_count_nan_counts_unwritten_outputs():
    from numba import cuda

    host = random(1000)
    host[[3, 500, 999]] = np.nan
    assert k.count_nan(cuda.to_device(host)) == 3


# ------------------------------------------------------------------------------ the model


def test_traced_sectors_equal_the_recorded_nsight_compute_counts():
    for kind in ("offset", "stride"):
        recorded = lesson.recorded_ncu_sectors(kind)
        assert len(recorded) >= 6
        traced = lesson.sweep_sectors(kind, recorded["param"])
        assert traced["ld_sectors"].tolist() == recorded["ncu_ld_sectors"].tolist()
        assert traced["st_sectors"].tolist() == recorded["ncu_st_sectors"].tolist()


def test_sweep_sectors_beyond_the_recorded_cases():
    offsets = lesson.sweep_sectors("offset", [0, 8, 9, 31, 32]).set_index("param")["ld_sectors"]
    assert offsets.to_dict() == {0: 4, 8: 4, 9: 5, 31: 5, 32: 4}
    strides = lesson.sweep_sectors("stride", [3, 6, 64, 256]).set_index("param")["ld_sectors"]
    assert strides.to_dict() == {3: 12, 6: 24, 64: 32, 256: 32}


def _synthetic_table():
    rows = []
    for variant, size, param, gbps in [("copy_w16", 2**28, 16, 4000.0), ("cupy copy", 2**28, np.nan, 3900.0),
                                       ("offset_copy", 2**26, 0, 3600.0), ("offset_copy", 2**26, 1, 3500.0),
                                       ("strided_copy", 2**26, 2, 2500.0),
                                       ("strided_copy", 2**24, 64, 500.0)]:
        rows.append({"lesson": "coalescing", "variant": variant, "provider": "cupy" if "cupy" in variant else
                     "gpu_lessons", "size": size, "param": param, "bytes": 8 * size, "flops": 0, "runs": 25,
                     "median_ms": 8 * size / gbps / 1e6, "min_ms": 8 * size / gbps / 1e6,
                     "max_ms": 8 * size / gbps / 1e6})
    from gpu_lessons.results import make_table

    return make_table(rows)


def test_model_table_states_the_error_of_each_point():
    table = _synthetic_table()
    ceiling, variant = lesson.copy_ceiling(table)
    assert variant == "copy_w16" and ceiling == pytest.approx(4000)
    offsets = lesson.model_table(table, "offset", ceiling).set_index("param")
    assert offsets.loc[1, "model_gbps"] == pytest.approx(4000 * 8 / 9)
    assert offsets.loc[1, "error"] == pytest.approx(3500 / (4000 * 8 / 9) - 1)
    assert offsets.loc[1, "ncu_ld_sectors"] == 5  # recorded for offset 1
    strides = lesson.model_table(table, "stride", ceiling).set_index("param")
    assert strides.loc[64, "model_gbps"] == pytest.approx(4000 * 8 / 36)
    assert np.isnan(strides.loc[64, "ncu_ld_sectors"])  # not recorded


# ------------------------------------------------------------------------------ plots


def test_global_sectors_draws_a_traced_request():
    counts = lesson.traced_offset(1)
    request = counts.request(array="x")
    fig = plots.global_sectors(request, provenance="simulated")
    title = fig.axes[0].get_title(loc="left")
    assert "5 sectors per request" in title and "128 useful of 160 bytes moved" in title


def test_global_sectors_refuses_a_shared_memory_request():
    request = pd.DataFrame({"lane": [0], "address": [0], "bytes": [4]})
    request.attrs.update(space="shared")
    with pytest.raises(ValueError, match="global-memory requests"):
        plots.global_sectors(request)


def test_sectors_sweep_draws_both_panels():
    table = _synthetic_table()
    model = lesson.model_table(table, "offset", 4000.0)
    fig = plots.sectors_sweep(model, "offset", 4000.0, provenance="synthetic")
    assert len(fig.axes) == 2


# ------------------------------------------------------------------------------ the lesson


def test_lesson_checks_pass():
    result = lesson.check()
    assert result["passed"].all(), result[~result["passed"]]


def test_lesson_is_registered():
    from gpu_lessons import lessons

    assert lessons.get("coalescing") is lesson
    assert all(c.lesson == "coalescing" for c in lesson.COMPARISONS)


@pytest.mark.skipif(not gpu_lessons.SIMULATED, reason="timing is refused only on the simulator")
def test_measure_is_refused_on_the_simulator():
    from gpu_lessons.bench import TimingUnavailable

    with pytest.raises(TimingUnavailable):
        lesson.measure(show_progress=False)


# ------------------------------------------------------------------------------ recorded data


def test_the_recorded_counters_hold_every_case_the_notebook_reads():
    counters = lesson.recorded_counters()
    wanted = {case for *_, case in lesson.GAP_TESTS}
    wanted |= {f"strided_copy {s}" for s in (1, 2, 8, 32, 64, 128)} | {"offset_copy 0", "offset_copy 1"}
    assert wanted <= set(counters.index)
    assert (counters["sm_cycles_max"] >= counters["sm_cycles_min"]).all()
    assert "Nsight Compute" in lesson.recorded_counters_source()


def test_recorded_dram_bytes_back_the_64_byte_claim():
    counters = lesson.recorded_counters()
    for stride in (32, 64, 128):
        per_element = counters.loc[f"strided_copy {stride}", "dram_read"] / lesson.stride_outputs(stride)
        assert per_element == pytest.approx(64, rel=0.01)
    per_element = counters.loc["strided_copy 8", "dram_read"] / lesson.stride_outputs(8)
    assert per_element == pytest.approx(32, rel=0.01)  # stride 8: one whole sector per element


def test_recorded_sass_shows_the_load_order():
    naive = lesson.recorded_sass("particles_soa_naive", grep="G.E")
    first = lesson.recorded_sass("particles_soa", grep="G.E")
    order = [line.split()[1][:3] for line in first.splitlines()[1:]]
    assert order == ["LDG"] * 6 + ["STG"] * 3
    assert [line.split()[1][:3] for line in naive.splitlines()[1:]].index("STG") == 2


def test_the_lesson_tables_read_the_recording():
    data = lesson.load(live=False)
    counters = lesson.recorded_counters()
    ceiling, _ = lesson.copy_ceiling(data.table)
    assert lesson.dram_model(data.table, counters, ceiling)["dram_model_error"].notna().all()
    waves = lesson.waves_table(data.table, counters)
    assert waves["waves"].is_monotonic_increasing and waves["waves"].iloc[0] == 1
    hypotheses = lesson.gap_hypotheses(data.table, counters)
    assert len(hypotheses) == len(lesson.GAP_TESTS)
    summary = lesson.particle_summary(data.table)
    assert summary.set_index("variant").loc["particles_aos", "dram_bytes_per_particle"] == 48
    figures = lesson.figures(data.table, {}, data.provenance)
    assert {"request_offset_1", "offset_sweep", "stride_sweep", "particles", "copies"} <= set(figures)
