"""Lesson 6's exercises: each skeleton, exactly as the notebook has it, fails its check; each
reference solution passes; typical wrong answers are caught."""

import numpy as np
from test_exercises import exercise_tests

import gpu_lessons  # noqa: F401 - chooses the mode before numba.cuda

# isort: split
from numba import cuda

from gpu_lessons.exercises import gemm as ex

NOTEBOOK = "06_gemm_tiling.ipynb"
SOLUTIONS = [
    (ex.check_tiled_kernel, ex.solution_tiled_kernel),
    (ex.check_micro_tile_kernel, ex.solution_micro_tile_kernel),
]


test_notebook_has_one_cell_per_exercise, test_skeleton_fails, test_solution_passes = exercise_tests(
    NOTEBOOK, SOLUTIONS)


@cuda.jit
def four_dot_products(a, b, c):
    """Right answer, no reuse: each of the four outputs reads its own row and column."""
    m, depth = a.shape
    n = b.shape[1]
    row = 2 * (cuda.blockIdx.y * cuda.blockDim.y + cuda.threadIdx.y)
    col = 2 * (cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x)
    for i in range(2):
        for j in range(2):
            if row + i < m and col + j < n:
                acc = np.float32(0)
                for k in range(depth):
                    acc = cuda.fma(a[row + i, k], b[k, col + j], acc)
                c[row + i, col + j] = acc


@cuda.jit
def no_edge_guard(a, b, c):
    """Reuse right, but the last partial micro-tile is dropped."""
    m, depth = a.shape
    n = b.shape[1]
    row = 2 * (cuda.blockIdx.y * cuda.blockDim.y + cuda.threadIdx.y)
    col = 2 * (cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x)
    if row + 1 < m and col + 1 < n:
        acc00 = acc01 = acc10 = acc11 = np.float32(0)
        for k in range(depth):
            a0, a1, b0, b1 = a[row, k], a[row + 1, k], b[k, col], b[k, col + 1]
            acc00 = cuda.fma(a0, b0, acc00)
            acc01 = cuda.fma(a0, b1, acc01)
            acc10 = cuda.fma(a1, b0, acc10)
            acc11 = cuda.fma(a1, b1, acc11)
        c[row, col], c[row, col + 1], c[row + 1, col], c[row + 1, col + 1] = acc00, acc01, acc10, acc11


def test_wrong_micro_tiles_are_caught():
    assert "loads per k" in ex.check_micro_tile_kernel(four_dot_products).message
    assert not ex.check_micro_tile_kernel(no_edge_guard).passed
