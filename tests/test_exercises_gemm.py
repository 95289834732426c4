"""Lesson 6's exercises: each skeleton, exactly as the notebook has it, fails its check; each
reference solution passes; plausible wrong answers are caught (at least two per check)."""

import numba
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

TILE = 16


@cuda.jit
def tiles_swapped(a, b, c):
    """The tiles' indices swapped: a_tile[k, tx] * b_tile[ty, k] (transposed products)."""
    a_tile = cuda.shared.array((16, 16), numba.float32)
    b_tile = cuda.shared.array((16, 16), numba.float32)
    tx, ty = cuda.threadIdx.x, cuda.threadIdx.y
    row, col = cuda.blockIdx.y * TILE + ty, cuda.blockIdx.x * TILE + tx
    m, depth = a.shape
    n = b.shape[1]
    acc = numba.float32(0.0)
    for start in range(0, depth, TILE):
        a_tile[ty, tx] = a[row, start + tx] if row < m and start + tx < depth else 0.0
        b_tile[ty, tx] = b[start + ty, col] if start + ty < depth and col < n else 0.0
        cuda.syncthreads()
        for k in range(TILE):
            acc += a_tile[k, tx] * b_tile[ty, k]
        cuda.syncthreads()
    if row < m and col < n:
        c[row, col] = acc


@cuda.jit
def last_product_only(a, b, c):
    """acc = ... instead of acc += ...: each tile's loop keeps its last product."""
    a_tile = cuda.shared.array((16, 16), numba.float32)
    b_tile = cuda.shared.array((16, 16), numba.float32)
    tx, ty = cuda.threadIdx.x, cuda.threadIdx.y
    row, col = cuda.blockIdx.y * TILE + ty, cuda.blockIdx.x * TILE + tx
    m, depth = a.shape
    n = b.shape[1]
    acc = numba.float32(0.0)
    for start in range(0, depth, TILE):
        a_tile[ty, tx] = a[row, start + tx] if row < m and start + tx < depth else 0.0
        b_tile[ty, tx] = b[start + ty, col] if start + ty < depth and col < n else 0.0
        cuda.syncthreads()
        for k in range(TILE):
            acc = a_tile[ty, k] * b_tile[k, tx]
        cuda.syncthreads()
    if row < m and col < n:
        c[row, col] = acc


@cuda.jit
def global_memory_instead(a, b, c):
    """Right answer, no reuse: the loop reads A and B from global memory, not the tiles."""
    a_tile = cuda.shared.array((16, 16), numba.float32)
    b_tile = cuda.shared.array((16, 16), numba.float32)
    tx, ty = cuda.threadIdx.x, cuda.threadIdx.y
    row, col = cuda.blockIdx.y * TILE + ty, cuda.blockIdx.x * TILE + tx
    m, depth = a.shape
    n = b.shape[1]
    acc = numba.float32(0.0)
    for start in range(0, depth, TILE):
        a_tile[ty, tx] = a[row, start + tx] if row < m and start + tx < depth else 0.0
        b_tile[ty, tx] = b[start + ty, col] if start + ty < depth and col < n else 0.0
        cuda.syncthreads()
        if row < m and col < n:
            for k in range(start, min(start + TILE, depth)):
                acc += a[row, k] * b[k, col]
        cuda.syncthreads()
    if row < m and col < n:
        c[row, col] = acc


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


WRONG_ANSWERS = [
    (ex.check_tiled_kernel, tiles_swapped),
    (ex.check_tiled_kernel, last_product_only),
    (ex.check_tiled_kernel, global_memory_instead),
    (ex.check_micro_tile_kernel, four_dot_products),
    (ex.check_micro_tile_kernel, no_edge_guard),
]

(test_notebook_has_one_cell_per_exercise, test_skeleton_fails, test_solution_passes,
 test_every_check_has_two_plausible_wrong_answers, test_wrong_answer_fails) = exercise_tests(
    NOTEBOOK, SOLUTIONS, WRONG_ANSWERS)

