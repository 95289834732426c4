"""Lesson 3's kernels against NumPy, on sizes that are not multiples of the block, and bad inputs:
offset and strided copies (one and four loads per thread), the 2-D walks, AoS/SoA reads, particle
layouts, copies of every access width, float4 chunks per thread, add_vec4."""

import numpy as np
import pytest
from kernel_launches import refuse_empty_launches  # noqa: F401 - an autouse fixture

from gpu_lessons.checks import InputError
from gpu_lessons.kernels import coalescing as k
from gpu_lessons.sim import trace

# isort: off
from numba import cuda  # after gpu_lessons chose the mode
# isort: on

rng = np.random.default_rng()
DT = np.float32(0.01)


def random(*shape):
    return rng.standard_normal(shape, dtype=np.float32)


# ------------------------------------------------------------------------ offsets and strides


@pytest.mark.parametrize("x4", [False, True])
@pytest.mark.parametrize("offset", [0, 1, 7])
def test_offset_copy(offset, x4):
    x = random(1300 + offset)  # x4: one block of 1024 and a part-full one
    assert np.array_equal(k.offset_copy(x, offset, x4=x4), x[offset:])


@pytest.mark.parametrize("x4", [False, True])
@pytest.mark.parametrize("stride", [1, 3, 32])
def test_strided_copy(stride, x4):
    x = random(1000)
    assert np.array_equal(k.strided_copy(x, stride, x4=x4), x[::stride])


def test_the_x4_copies_cover_a_part_full_last_block_on_small_blocks():
    x = random(203)
    assert np.array_equal(k.offset_copy(x, 5, block=32, x4=True), x[5:])  # 198 = 128 + 70
    assert np.array_equal(k.strided_copy(x, 2, block=32, x4=True), x[::2])


def test_the_x4_copy_issues_four_loads_before_its_stores():
    counts = trace.trace(k.offset_copy_x4_kernel, 1, 32, random(129), np.zeros(128, np.float32), 1)
    table = counts.by_instruction
    lines = table["location"].str.split(":").str[-1].astype(int)
    loads, stores = lines[table["op"] == "ld"], lines[table["op"] == "st"]
    assert len(loads) == 4 and len(stores) == 4 and loads.max() < stores.min()  # every load first
    assert table["sectors_per_request"].tolist() == [5.0] * 4 + [4.0] * 4  # offset 1: one sector more


def test_device_arrays_in_device_array_out():
    x = random(300)
    out = k.offset_copy(cuda.to_device(x), 5, block=64)
    assert hasattr(out, "copy_to_host")
    assert np.array_equal(out.copy_to_host(), x[5:])


# ------------------------------------------------------------------------ 2-D walks


@pytest.mark.parametrize("walk", list(k.MATRIX_WALKS))
def test_matrix_walks_copy_the_used_columns(walk):
    a = random(7, 12)  # leading dimension 12, 9 columns used
    assert np.array_equal(k.matrix_walk(a, 9, walk, block=32), a[:, :9])
    assert np.array_equal(k.matrix_walk(a, walk=walk, block=32), a)


def test_matrix_walk_lanes_follow_a_row_or_a_column():
    a = random(32, 40)
    out = np.zeros((32, 40), np.float32)
    rows = trace.trace(k.matrix_row_walk, (1, 32), 32, a, out, np.uint64(32), np.uint64(32))
    assert rows.sectors_per_request("ld") == 4
    columns = trace.trace(k.matrix_column_walk, (1, 4), 32, a, out, np.uint64(32), np.uint64(4))
    assert columns.sectors_per_request("ld") == 32


@pytest.mark.parametrize("call, message", [
    (lambda: k.matrix_walk(np.zeros(10, np.float32)), "2-D"),
    (lambda: k.matrix_walk(np.zeros((3, 4), np.float32), 5), "<= 4"),
    (lambda: k.matrix_walk(np.zeros((3, 4), np.float64)), "dtype float32"),
    (lambda: k.matrix_walk(np.zeros((3, 4), np.float32), walk="diagonal"), "unknown walk"),
    (lambda: k.matrix_walk(np.zeros((70000, 1), np.float32)), "65535"),
])
def test_matrix_walk_inputs_are_checked(call, message):
    with pytest.raises(InputError, match=message):
        call()


# ------------------------------------------------------------------------ AoS and SoA reads


def test_aos_and_soa_read_the_same_field():
    records = random(300, 4)
    assert np.array_equal(k.read_field_aos(records, 2), records[:, 2])
    assert np.array_equal(k.read_field_soa(np.ascontiguousarray(records.T), 2), records[:, 2])


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda: k.offset_copy(np.zeros(10, np.float64), 0), "dtype float32"),
        (lambda: k.offset_copy(np.zeros((2, 5), np.float32), 0), "1-D"),
        (lambda: k.offset_copy(np.zeros(10, np.float32), 11), r"offset 11 is past the end of x \(length 10"),
        (lambda: k.offset_copy(np.zeros(10, np.float32), -1), ">= 0"),
        (lambda: k.offset_copy([1.0, 2.0], 0), "must be an array"),
        (lambda: k.strided_copy(np.zeros(10, np.float32), 0), ">= 1"),
        (lambda: k.strided_copy(np.zeros(10, np.float32), 1.5), "integer"),
        (lambda: k.strided_copy(np.zeros(10, np.float32), 1, block=100), "multiple of 32"),
        (lambda: k.strided_copy(np.zeros(10, np.float32), 1, block=2048), "<= 1024"),
        (lambda: k.read_field_aos(np.zeros((10, 4), np.float32), 4), "<= 3"),
        (lambda: k.read_field_aos(np.zeros(10, np.float32), 0), "2-D"),
        (lambda: k.read_field_aos(np.zeros((4, 0), np.float32), 0), "aos has no fields to read"),
        (lambda: k.offset_copy(random(20)[::2], 1), "x must be C-contiguous"),
        (lambda: k.strided_copy(random(20)[::2], 1), "x must be C-contiguous"),
        (lambda: k.read_field_aos(random(8, 4)[::2], 1), "aos must be C-contiguous"),
        (lambda: k.read_field_soa(random(4, 8).T, 1), "soa must be C-contiguous"),
        (lambda: k.copy_width(random(20)[::2], "copy_w4"), "x must be C-contiguous"),
        (lambda: k.copy_width(random(20), "copy_w4", waves=0), "waves must be >= 1"),
        (lambda: k.copy_width(random(20), "nope"), "unknown copy 'nope'; choose from: copy_w4, copy_w8"),
        (lambda: k.width_launch("nope", None, None), "unknown copy 'nope'"),
        (lambda: k.particles_soa_launch("nope", [], 0.1), "unknown SoA variant 'nope'; choose from"),
        (lambda: k.update_particles(random(4, 6), 0.1, "aos", "particles_soa"), "variant picks a SoA kernel"),
        (lambda: k.update_particles(random(4, 6), "0.1"), "dt must be a number, got str"),
        (lambda: k.update_particles(random(4, 6), 0.1, "nope"), "unknown layout 'nope'; choose from: aos"),
        (lambda: k.fill_random(np.zeros(8, np.float32), -1), "seed must be >= 0"),
        (lambda: k.fill_random(np.zeros(8, np.float32)[::2], 1), "array must be C-contiguous"),
        (lambda: k.count_nan(np.zeros(8)), "dtype float32"),
        (lambda: k.add_vec4(random(20)[::2], random(10)), "x must be C-contiguous"),
    ],
)
def test_bad_inputs_are_named(call, message):
    with pytest.raises(InputError, match=message) as error:
        call()
    assert "\n" not in str(error.value)


# ------------------------------------------------------------------------ particles


@pytest.mark.parametrize("n", [1, 37, 300])
@pytest.mark.parametrize("layout", ["aos", "aosoa", "padded"])
def test_particle_layouts_match_numpy(layout, n):
    records = random(n, 6)
    got = k.update_particles(records, DT, layout)
    assert np.allclose(got, k.particles_reference(records, DT), rtol=1e-6, atol=1e-6)
    assert np.array_equal(got[:, 3:], records[:, 3:])  # velocities untouched


@pytest.mark.parametrize("variant", k.PARTICLE_SOA_VARIANTS)
def test_soa_variants_match_numpy(variant):
    records = random(259, 6)  # vec4: 64 groups and a tail of 3
    got = k.update_particles(records, DT, "soa", variant)
    assert np.allclose(got, k.particles_reference(records, DT), rtol=1e-6, atol=1e-6)


def test_layout_conversions_round_trip():
    records = random(45, 6)
    assert np.array_equal(k.from_aosoa(k.to_aosoa(records), 45), records)
    assert np.array_equal(k.from_padded(k.to_padded(records)), records)
    blocks = k.to_aosoa(records)
    assert blocks.shape == (2, 6, 32) and np.array_equal(blocks[1, 4, :13], records[32:, 4])


def test_device_layout_kernels_agree_with_the_host_ones():
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


# ------------------------------------------------------------------------ copies


@pytest.mark.parametrize("variant", list(k.WIDTH_VARIANTS))
def test_copies_of_every_width_are_exact(variant):
    for n in (1, 7, 523):
        x = random(n)
        assert np.array_equal(k.copy_width(x, variant), x), n


@pytest.mark.parametrize("variant", ["copy_w16_grid_stride", "copy_w16_grid_stride_x4", "copy_w16_queue",
                                     "copy_w8_grid_stride"])
def test_grid_stride_copies_with_other_blocks_and_waves(variant):
    x = random(3003)  # several trips of the 4-block simulated grid
    for block, waves in ((64, 1), (128, 2)):
        assert np.array_equal(k.copy_width(x, variant, block, waves), x), (block, waves)


def test_the_queue_counters_are_reset_for_the_next_launch():
    x = random(1001)
    for _ in range(2):
        assert np.array_equal(k.copy_width(x, "copy_w16_queue", 64), x)
    assert k.queue_counters().copy_to_host().tolist() == [0, 0]


@pytest.mark.parametrize("variant, width, sectors", [("copy_w4", 4, 4), ("copy_w8", 8, 8),
                                                     ("copy_w16", 16, 16)])
def test_access_width_is_what_the_tracer_sees(variant, width, sectors):
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


@pytest.mark.parametrize("per_thread", [1, 2, 3])
def test_thread_chunks_copy_every_length(per_thread):
    for n in (1, 3, 6, 259):
        x = random(n)
        assert np.array_equal(k.copy_thread_chunks(x, per_thread, block=64), x), n
    assert k.thread_chunks_threads(259, per_thread) == -(-64 // per_thread)


def test_thread_chunks_inputs_are_checked():
    with pytest.raises(InputError, match="misaligned for 16-byte"):
        k.copy_thread_chunks(random(10)[1:])
    with pytest.raises(InputError, match="per_thread"):
        k.copy_thread_chunks(random(8), 0)


# ------------------------------------------------------------------------ add_vec4


@pytest.mark.parametrize("n", [0, 1, 2, 3, 4, 5, 8, 259])
def test_add_vec4_body_and_tail(n):
    x, y = random(n), random(n)
    assert np.array_equal(k.add_vec4(x, y, block=64), x + y)


def test_add_vec4_uses_16_byte_loads_for_the_body_and_scalars_for_the_tail():
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
    a, b = random(263), random(263)
    assert np.array_equal(k.add_vec4(a[4:], b[4:]), a[4:] + b[4:])  # 16 bytes in: aligned again
    assert np.array_equal(k.add_vec4(a[:261], b[:261]), a[:261] + b[:261])  # any length


def test_add_vec4_checks_shapes_and_dtypes():
    with pytest.raises(InputError, match="shape mismatch"):
        k.add_vec4(random(8), random(12))
    with pytest.raises(InputError, match="dtype float32"):
        k.add_vec4(np.zeros(8), random(8))


def test_add_vec4_device_arrays_in_device_array_out():
    x, y = random(33), random(33)
    out = k.add_vec4(cuda.to_device(x), cuda.to_device(y))
    assert hasattr(out, "copy_to_host") and np.array_equal(out.copy_to_host(), x + y)


# ------------------------------------------------------------------------ helpers


def test_random_fill_is_reproduced_on_the_host_bit_for_bit():
    d = cuda.device_array(3001, np.float32)
    k.fill_random(d, 11)
    values = d.copy_to_host()
    assert np.array_equal(values, k.random_values(np.arange(3001), 11))
    assert values.min() >= -1 and values.max() < 1 and np.count_nonzero(values) > 2990
    assert abs(float(values.mean())) < 0.05
    assert not np.array_equal(values, k.random_values(np.arange(3001), 12))


def test_count_nan_counts_unwritten_outputs():
    host = random(1000)
    host[[3, 500, 999]] = np.nan
    assert k.count_nan(cuda.to_device(host)) == 3


# --------------------------------------------------------------- lengths 0 and 1, past a block

LENGTHS = [0, 1]  # past a block: 1000 and more above, and in test_coalescing_lesson.py


@pytest.mark.parametrize("n", LENGTHS)
def test_offset_and_strided_copies_at_lengths_0_and_1(n):
    x = random(n)
    assert np.array_equal(k.offset_copy(x, 0), x)
    assert np.array_equal(k.strided_copy(x, 2), x[::2])
    assert k.offset_copy(x, n).shape == (0,)  # x[len(x):]


@pytest.mark.parametrize("n", LENGTHS)
def test_field_reads_of_0_and_1_records(n):
    records = random(n, 3)
    assert np.array_equal(k.read_field_aos(records, 2), records[:, 2])
    assert np.array_equal(k.read_field_soa(np.ascontiguousarray(records.T), 1), records[:, 1])


@pytest.mark.parametrize("variant", list(k.WIDTH_VARIANTS))
def test_every_copy_width_at_lengths_0_and_1(variant):
    for n in (0, 1):
        x = random(n)
        assert np.array_equal(k.copy_width(x, variant), x), n


LAYOUTS = [("aos", None), ("aosoa", None), ("padded", None), *(("soa", v) for v in k.PARTICLE_SOA_VARIANTS)]


# 1 particle in aos, aosoa, padded and past a block: test_coalescing_lesson.py
@pytest.mark.parametrize("layout, variant, n", [(*case, 0) for case in LAYOUTS] +
                         [("soa", v, 1) for v in k.PARTICLE_SOA_VARIANTS])
def test_particles_at_0_and_1(layout, variant, n):
    records = random(n, 6)
    got = k.update_particles(records, 0.25, layout, variant)
    assert got.shape == (n, 6)
    np.testing.assert_allclose(got, k.particles_reference(records, 0.25), rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("n", LENGTHS)
def test_fill_random_and_count_nan_at_lengths_0_and_1(n):
    from numba import cuda

    d = cuda.device_array(n, np.float32)
    k.fill_random(d, 5)
    values = d.copy_to_host()
    assert values.shape == (n,) and np.all((values >= -1) & (values < 1))
    assert k.count_nan(d) == 0
    if n:
        values[-1] = np.nan
        assert k.count_nan(cuda.to_device(values)) == 1
