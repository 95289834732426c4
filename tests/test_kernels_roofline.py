"""Lesson 1's kernels against NumPy, on random inputs whose sizes are not multiples of the block, and
lengths 0 and 1; bad input refused in one line."""

import numpy as np
import pytest
from kernel_launches import refuse_empty_launches  # noqa: F401 - an autouse fixture

from gpu_lessons.checks import InputError
from gpu_lessons.kernels import gemm
from gpu_lessons.kernels import roofline as k
from gpu_lessons.lessons import ceilings, roofline

rng = np.random.default_rng()


def random(n):
    return rng.standard_normal(n, dtype=np.float32)


@pytest.mark.parametrize("variant", k.COPY_VARIANTS)
@pytest.mark.parametrize("n", [0, 1, 3, 5, 257])  # 7, 1000 and 1027: ceilings.check(), below
def test_copies_are_exact(variant, n):
    x = random(n)
    assert np.array_equal(k.copy(x, variant), x)


def test_vector_copy_rejects_a_misaligned_view():
    x = random(1028)
    with pytest.raises(InputError, match="misaligned for 16-byte vector access"):
        k.copy(x[1:], "copy_vec4")
    assert np.array_equal(k.copy(x[1:], "copy_grid_stride"), x[1:])  # scalar kernels don't care


def test_copy_rejects_wrong_dtype_and_unknown_variant():
    with pytest.raises(InputError, match="dtype float32, got float64"):
        k.copy(np.zeros(8), "copy_vec4")
    with pytest.raises(InputError, match="unknown copy variant 'copy_fast'; choose from: .*copy_vec4"):
        k.copy(random(8), "copy_fast")
    with pytest.raises(InputError, match="unknown copy variant 'nope'"):
        k.copy(random(9)[1:], "nope")  # the name first, before the alignment a vec4 name would need
    with pytest.raises(InputError, match="unknown copy variant 'nope'"):
        k.copy_launch("nope", None, None)


@pytest.mark.parametrize("n", [0, 1, 1000])
def test_triad_matches_numpy(n):
    a, b, c = random(n), random(n), random(n)
    np.testing.assert_allclose(k.triad_host(a, b, c), a * b + c, rtol=1e-6, atol=1e-6)


def test_triad_checks_shapes():
    a, b = random(1000), random(1000)
    with pytest.raises(InputError, match="shape mismatch"):
        k.triad_host(a, b, random(999))


@pytest.mark.parametrize("fmas", [1, 3, 17])  # 17 = one unrolled trip of 16 and one more
def test_fma_intensity_matches_fused_reference(fmas):
    x = random(1027)
    np.testing.assert_allclose(k.fma_intensity_host(x, fmas), k.fma_chain_reference(x, fmas),
                               rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("n", [0, 1])
def test_fma_intensity_at_lengths_0_and_1(n):
    x = random(n)
    np.testing.assert_allclose(k.fma_intensity_host(x, 3), k.fma_chain_reference(x, 3), rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("call, message", [
    (lambda: k.fma_intensity(0), r"k \(FMAs per element\) must be >= 1, got 0"),
    (lambda: k.fma_intensity(2.5), "must be an integer"),
    (lambda: k.fma_intensity_host(random(8), 0), ">= 1"),
    (lambda: k.fma_intensity_host(random(9)[1:], 2), "misaligned for 16-byte"),
    (lambda: k.copy(random(20)[::2], "copy_grid_stride"), "x must be C-contiguous"),
    (lambda: k.triad_host(random(4), random(8)[::2], random(4)), "b must be C-contiguous"),
    (lambda: k.copy(random(4).reshape(2, 2), "copy_grid_stride"), "x must be 1-D"),
])
def test_bad_input_gets_one_clear_line(call, message):
    with pytest.raises(InputError, match=message) as error:
        call()
    assert "\n" not in str(error.value)


def test_the_host_wrappers_say_they_take_numpy_arrays():
    from numba import cuda

    with pytest.raises(InputError, match="x must be a NumPy array, got .*_launch function"):
        k.copy(cuda.to_device(random(8)), "copy_grid_stride")


def test_fma_peak_matches_emulated_chains():
    out = np.full(k.THREADS_PER_BLOCK, np.nan, np.float32)
    k.fma_peak_launch(out, blocks=1, trips=2)
    assert np.array_equal(out, ceilings.fma_peak_reference(np.arange(out.size), trips=2))


@pytest.mark.parametrize("m, k, n", [(1, 1, 1), (1, 33, 17), (17, 1, 1)])
def test_naive_gemm_on_degenerate_shapes(m, k, n):
    """One row, one column, K = 1 (the lesson's check() covers 45x33 @ 33x70, partial tiles both ways)."""
    a, b = rng.standard_normal((m, k), dtype=np.float32), rng.standard_normal((k, n), dtype=np.float32)
    np.testing.assert_allclose(gemm.gemm(a, b), a @ b, rtol=1e-4, atol=1e-4)


def test_naive_gemm_names_a_shape_mismatch():
    a = rng.standard_normal((45, 33), dtype=np.float32)
    with pytest.raises(InputError, match="shape mismatch"):
        gemm.gemm(a, a)


# lesson.check() (every kernel against NumPy on awkward sizes) runs, and must pass, in
# notebooks/deep_dives/01_roofline.ipynb (with ceilings.check()): nbval runs it there, once for CI.


def test_intensity_counts_from_the_notes():
    assert roofline.triad_intensity() == 0.125
    assert roofline.naive_gemm_intensity(4096) == pytest.approx(0.25, rel=1e-3)
    assert roofline.ideal_gemm_intensity(600, 600, 600) == pytest.approx(600 / 6)
    assert roofline.fma_family_intensity(4) == 1.0
    roof = roofline.attainable_gflops([0.125, 100.0], bandwidth_gbps=4000, peak_gflops=60000)
    assert roof.tolist() == [500.0, 60000.0]
    assert roofline.ridge_point(4000, 60000) == 15.0
