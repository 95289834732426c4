"""Shared-memory tiled GEMM, C = A @ B in float32: each 16x16 block stages a tile of A and a tile
of B in shared memory, so every element loaded from global memory is reused 16 times.

Edges that are not multiples of 16 load zeros into the tiles, so any shape works.
"""

from __future__ import annotations

import numba
import numpy as np
from numba import cuda

from .arrays import is_device_array, returned, to_device
from .gemm import check_gemm_operands

TILE = 16
BLOCK = (TILE, TILE)


@cuda.jit
def gemm_tiled_kernel(a, b, c):
    a_tile = cuda.shared.array((TILE, TILE), numba.float32)
    b_tile = cuda.shared.array((TILE, TILE), numba.float32)
    tx = cuda.threadIdx.x
    ty = cuda.threadIdx.y
    row = cuda.blockIdx.y * TILE + ty
    col = cuda.blockIdx.x * TILE + tx
    m, depth = a.shape
    n = b.shape[1]
    acc = numba.float32(0.0)
    for start in range(0, depth, TILE):
        if row < m and start + tx < depth:
            a_tile[ty, tx] = a[row, start + tx]
        else:
            a_tile[ty, tx] = 0.0
        if start + ty < depth and col < n:
            b_tile[ty, tx] = b[start + ty, col]
        else:
            b_tile[ty, tx] = 0.0
        cuda.syncthreads()  # the tiles are complete
        for k in range(TILE):
            acc += a_tile[ty, k] * b_tile[k, tx]
        cuda.syncthreads()  # everyone is done with the tiles before they are overwritten
    if row < m and col < n:
        c[row, col] = acc


def gemm_tiled_grid(m: int, n: int) -> tuple[int, int]:
    return -(-n // TILE), -(-m // TILE)


def gemm_tiled_launch(a, b, c) -> None:
    if c.size:  # an empty C (M or N = 0) needs no launch; K = 0 is one: C is all zeros
        gemm_tiled_kernel[gemm_tiled_grid(c.shape[0], c.shape[1]), BLOCK](a, b, c)


def gemm_tiled(a, b):
    """C = A @ B (float32, 2-D, NumPy or device arrays; the result is of the same kind)."""
    m, n = check_gemm_operands(a, b)
    d_c = cuda.device_array((m, n), np.float32)
    gemm_tiled_launch(to_device(a, "a"), to_device(b, "b"), d_c)
    return returned(d_c, not (is_device_array(a) and is_device_array(b)))
