"""Coalescing kernels against NumPy, on sizes that are not multiples of the block, lengths 0 and 1,
and bad inputs (one line each)."""

import numpy as np
import pytest
from kernel_launches import refuse_empty_launches  # noqa: F401 - an autouse fixture

from gpu_lessons.checks import InputError
from gpu_lessons.kernels import coalescing as k

rng = np.random.default_rng()


def random(*shape):
    return rng.standard_normal(shape, dtype=np.float32)


@pytest.mark.parametrize("offset", [0, 1, 7])
def test_offset_copy(offset):
    x = random(1000 + offset)
    assert np.array_equal(k.offset_copy(x, offset), x[offset:])


@pytest.mark.parametrize("stride", [1, 3, 32])
def test_strided_copy(stride):
    x = random(1000)
    assert np.array_equal(k.strided_copy(x, stride), x[::stride])


def test_aos_and_soa_read_the_same_field():
    records = random(1000, 4)
    assert np.array_equal(k.read_field_aos(records, 2), records[:, 2])
    assert np.array_equal(k.read_field_soa(np.ascontiguousarray(records.T), 2), records[:, 2])


def test_device_arrays_in_device_array_out():
    from numba import cuda  # after gpu_lessons chose the mode

    x = random(300)
    out = k.offset_copy(cuda.to_device(x), 5, block=64)
    assert hasattr(out, "copy_to_host")
    assert np.array_equal(out.copy_to_host(), x[5:])


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
