"""Every public GEMM wrapper of lessons 6 and 7 with the lessons' own tiles, on awkward shapes, on a GPU.

K and N not multiples of 4 (rows not 16-byte aligned: the generated kernels' 4-byte twins), K = 1 and
K = 0. On the simulator the same generated source is checked with small tiles (test_gemm.py,
test_tensor_cores.py, test_kernels_gemm.py): a 128x128 tile there is 256 Python threads a block. On a GPU
each twin is one compile (seconds, half a minute for the 64x64 TF32 tile): few shapes, every wrapper.
"""

import numpy as np
import pytest

import gpu_lessons  # noqa: F401 - chooses the mode before numba.cuda

# isort: split
from gpu_lessons.kernels import gemm_codegen as codegen
from gpu_lessons.kernels import gemm_steps as steps
from gpu_lessons.kernels import tensor_cores as tc

pytestmark = pytest.mark.gpu_only("the lessons' full-size tiles; the simulator checks the same source "
                                  "with small tiles")

SHAPES = ((37, 13, 45), (33, 1, 70), (5, 0, 7))  # (M, K, N): K and N not multiples of 4, K = 1, K = 0
rng = np.random.default_rng(25)
TF32_UNIT = 2.0**-11


def operands(m, k, n):
    return rng.standard_normal((m, k), dtype=np.float32), rng.standard_normal((k, n), dtype=np.float32)


def check(c, a, b, unit):
    exact = a.astype(np.float64) @ b.astype(np.float64)
    bound = (2 * unit + a.shape[1] * 2.0**-23) * (np.abs(a).astype(np.float64) @ np.abs(b).astype(np.float64))
    assert c.shape == exact.shape and c.dtype == np.float32
    if a.shape[1] == 0:
        np.testing.assert_array_equal(c, np.zeros(exact.shape, np.float32))
    else:
        assert np.all(np.abs(c - exact) <= bound + 1e-30), float(np.max(np.abs(c - exact) - bound))


@pytest.mark.parametrize("name", [s.name for s in tc.STEPS])
def test_tensor_core_matmul_on_awkward_shapes(name):
    for m, k, n in SHAPES:
        a, b = operands(m, k, n)
        check(tc.matmul(a, b, name), a, b, TF32_UNIT)


def test_tensor_core_gemm_tile_on_awkward_shapes():
    tile = tc.TcTile(bn=256, wn=64)  # lesson 7's 128x256 variant: not a step, so matmul does not reach it
    for m, k, n in SHAPES:
        a, b = operands(m, k, n)
        check(tc.gemm_tile(a, b, tile), a, b, TF32_UNIT)


@pytest.mark.parametrize("name", [s.name for s in steps.STEPS])
def test_gemm_matmul_on_awkward_shapes(name):
    for m, k, n in SHAPES:
        a, b = operands(m, k, n)
        check(steps.matmul(a, b, name), a, b, 2.0**-24)


def test_gemm_generated_on_awkward_shapes():
    tile = codegen.Tile(bm=64, bn=64, tm=4, tn=4)  # a tile of lesson 6's search: its twin compiles fast
    for m, k, n in SHAPES:
        a, b = operands(m, k, n)
        check(codegen.gemm_generated(a, b, tile), a, b, 2.0**-24)
