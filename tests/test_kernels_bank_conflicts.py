"""Shared-memory kernels against NumPy: strides, and transposes of shapes that are not multiples of 32."""

import numpy as np
import pytest

from gpu_lessons.checks import InputError
from gpu_lessons.kernels import bank_conflicts as k

rng = np.random.default_rng()

TRANSPOSES = [k.transpose_naive, k.transpose_tiled, k.transpose_padded]


def random(*shape):
    return rng.standard_normal(shape, dtype=np.float32)


@pytest.mark.parametrize("stride", [1, 2, 32, 33])
def test_shared_stride_round_trip(stride):
    x = random(300)  # two blocks, the second one partial
    assert np.array_equal(k.shared_stride(x, stride), x)


def test_shared_stride_with_a_1024_thread_block():
    x = random(1000)
    assert np.array_equal(k.shared_stride(x, 8, block=1024), x)


@pytest.mark.parametrize("transpose", TRANSPOSES)
def test_transpose_45_by_70(transpose):
    a = random(45, 70)
    assert np.array_equal(transpose(a), a.T)


@pytest.mark.parametrize("transpose", [k.transpose_tiled, k.transpose_padded])
def test_tiled_transpose_with_32_by_32_blocks(transpose):
    a = random(33, 20)
    assert np.array_equal(transpose(a, block=(32, 32)), a.T)


def test_transpose_keeps_device_arrays_on_the_device():
    from numba import cuda  # after gpu_lessons chose the mode

    a = random(7, 40)
    out = k.transpose_padded(cuda.to_device(a))
    assert np.array_equal(out.copy_to_host(), a.T)


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda: k.shared_stride(np.zeros(10, np.float32), 33, block=512), "shared words"),
        (lambda: k.shared_stride(np.zeros(10, np.float32), 0), ">= 1"),
        (lambda: k.shared_stride(np.zeros(10, np.int32), 1), "dtype float32"),
        (lambda: k.transpose_naive(np.zeros(10, np.float32)), "2-D"),
        (lambda: k.transpose_naive(np.zeros((0, 3), np.float32)), "empty"),
        (lambda: k.transpose_naive(np.zeros((3, 3), np.float32), block=(64, 32)), "at most 1024"),
        (lambda: k.transpose_tiled(np.zeros((3, 3), np.float32), block=(16, 8)), r"\(32, rows\)"),
        (lambda: k.transpose_padded(np.zeros((3, 3), np.float32), block=(32, 5)), "dividing 32"),
        (lambda: k.transpose_tiled(np.zeros((3, 3), np.float32), block=8), "two integers"),
    ],
)
def test_bad_inputs_are_named(call, message):
    with pytest.raises(InputError, match=message):
        call()
