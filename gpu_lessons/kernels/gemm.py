"""GEMM kernels (lesson 6), C = A @ B in float32, row-major.

0. ``gemm_naive_uncoalesced``  one thread per output, but threadIdx.x walks the ROWS of C: the 32
   lanes of a warp read 32 different rows of A (32 sectors per load) and write 32 rows of C.
1. ``gemm_naive``  one thread per output; threadIdx.x walks the columns of C, so a warp reads one
   row element of A (broadcast) and 32 neighbouring elements of B (coalesced) per step.
"""

from __future__ import annotations

import numpy as np
from numba import cuda, float32

from ..checks import InputError, require_array, require_contiguous

NAIVE_BLOCK = (32, 8)


@cuda.jit
def gemm_naive(a, b, c):
    col, row = cuda.grid(2)
    if row < c.shape[0] and col < c.shape[1]:
        acc = float32(0)
        for k in range(a.shape[1]):
            acc = cuda.fma(a[row, k], b[k, col], acc)
        c[row, col] = acc


@cuda.jit
def gemm_naive_uncoalesced(a, b, c):
    row, col = cuda.grid(2)  # the same code with x and y swapped: lanes now differ in row
    if row < c.shape[0] and col < c.shape[1]:
        acc = float32(0)
        for k in range(a.shape[1]):
            acc = cuda.fma(a[row, k], b[k, col], acc)
        c[row, col] = acc


def gemm_naive_uncoalesced_launch(a, b, c) -> None:
    if c.size:  # an empty C (M or N = 0) needs no launch, and 0 blocks is no launch configuration
        grid = (-(-c.shape[0] // NAIVE_BLOCK[0]), -(-c.shape[1] // NAIVE_BLOCK[1]))
        gemm_naive_uncoalesced[grid, NAIVE_BLOCK](a, b, c)


def gemm_naive_launch(a, b, c) -> None:
    if c.size:  # as above; K = 0 is a launch: C is all zeros
        grid = (-(-c.shape[1] // NAIVE_BLOCK[0]), -(-c.shape[0] // NAIVE_BLOCK[1]))
        gemm_naive[grid, NAIVE_BLOCK](a, b, c)


def check_gemm_operands(a, b):
    """float32, 2-D, C-contiguous operands with matching inner dimensions; returns the output shape.
    Any dimension may be 0: M or N = 0 gives an empty C, K = 0 a C of zeros (as NumPy's ``a @ b``)."""
    require_array(a, "a", dtype=np.float32, ndim=2)
    require_array(b, "b", dtype=np.float32, ndim=2)
    require_contiguous(a, "a")
    require_contiguous(b, "b")
    if a.shape[1] != b.shape[0]:
        raise InputError(f"shape mismatch: a is {tuple(a.shape)}, b is {tuple(b.shape)}; "
                         "a's columns must equal b's rows")
    return a.shape[0], b.shape[1]


def gemm_flops(m: int, n: int, k: int) -> int:
    return 2 * m * n * k


def gemm(a, b):
    """C = A @ B with the naive kernel (host or device arrays in, host array out)."""
    shape = check_gemm_operands(a, b)
    c = np.empty(shape, np.float32)
    gemm_naive_launch(a, b, c)
    return c
