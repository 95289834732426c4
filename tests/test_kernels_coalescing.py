"""Coalescing kernels against NumPy, on sizes that are not multiples of the block, and bad inputs."""

import numpy as np
import pytest

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
        (lambda: k.offset_copy(np.zeros(10, np.float32), 10), "leaves nothing"),
        (lambda: k.offset_copy(np.zeros(10, np.float32), -1), ">= 0"),
        (lambda: k.offset_copy([1.0, 2.0], 0), "must be an array"),
        (lambda: k.strided_copy(np.zeros(10, np.float32), 0), ">= 1"),
        (lambda: k.strided_copy(np.zeros(10, np.float32), 1.5), "integer"),
        (lambda: k.strided_copy(np.zeros(10, np.float32), 1, block=100), "multiple of 32"),
        (lambda: k.strided_copy(np.zeros(10, np.float32), 1, block=2048), "<= 1024"),
        (lambda: k.read_field_aos(np.zeros((10, 4), np.float32), 4), "<= 3"),
        (lambda: k.read_field_aos(np.zeros(10, np.float32), 0), "2-D"),
        (lambda: k.read_field_soa(np.zeros((4, 0), np.float32), 0), "at least one record"),
    ],
)
def test_bad_inputs_are_named(call, message):
    with pytest.raises(InputError, match=message):
        call()
