"""Exercises of lesson 6 (GEMM): their checks and reference solutions.

1. The shared-tiled kernel's missing loop: the tiles are loaded and synchronised; multiply them.
   Checked against a float64 reference on a shape that is no multiple of the 16x16 tile, and with
   the traffic counter for the reuse: two global loads per thread per tile, not two per k.
2. A 2x2 register micro-tile (the notes' T_M = T_N = 2): each thread computes four outputs and reads
   two values of A and two of B per k. Checked for correctness at the edges, and with the traffic
   counter for the reuse: 4 global loads per k per thread, not 8.
"""

from __future__ import annotations

import numpy as np
from numba import cuda

from ..kernels import gemm_tiled as tiled
from ..lessons.gemm import error_report
from ..sim import trace
from . import guarded, report

# ----------------------------------------------------------------------------- exercise 1

TILED_SHAPE = (20, 21, 17)  # M, K, N: no multiple of 16; 2 x 2 blocks, 2 tiles along K


def _random_operands(m, k, n):
    rng = np.random.default_rng()
    return rng.standard_normal((m, k), dtype=np.float32), rng.standard_normal((k, n), dtype=np.float32)


def _verdict(name, c, a, b):
    """None when C is right, else the 'not yet' Result saying what is wrong."""
    if np.isnan(c).any():
        return report(name, False, f"{int(np.isnan(c).sum())} of {c.size} outputs never written")
    errors = error_report(c, a, b)
    if errors["worst_share_of_bound"] > 1.0:
        reference = a.astype(np.float64) @ b
        worst = np.unravel_index(int(np.argmax(np.abs(c - reference))), c.shape)
        return report(name, False, f"C[{worst[0]}, {worst[1]}] = {c[worst]:.5f}, expected "
                      f"{reference[worst]:.5f}")
    return None


def _global_loads_per_thread(kernel, grid, block, a, b, c) -> float:
    """Global loads each launched thread executed (the traffic counter, on the simulator)."""
    counts = trace.trace(kernel, grid, block, a, b, c)
    loads = counts.by_array
    loads = loads[(loads["space"] == "global") & (loads["op"] == "ld")]
    threads = int(np.prod(grid)) * int(np.prod(block))
    return float(loads["threads"].sum()) / threads


def check_tiled_kernel(kernel) -> object:
    """``kernel(a, b, c)``: C = A @ B with 16x16 shared tiles, launched on 16x16 blocks."""
    name = "exercise 1 (the shared-tiled kernel's loop)"

    def attempt():
        m, k, n = TILED_SHAPE
        a, b = _random_operands(m, k, n)
        c = np.full((m, n), np.nan, np.float32)
        grid = tiled.gemm_tiled_grid(m, n)
        kernel[grid, tiled.BLOCK](a, b, c)
        wrong = _verdict(name, c, a, b)
        if wrong is not None:
            return wrong
        tiles = -(-k // tiled.TILE)
        per_thread = _global_loads_per_thread(kernel, grid, tiled.BLOCK, a, b, c)
        if per_thread > 2 * tiles:  # one element of A and one of B per thread and tile
            return report(name, False, f"right answer, but {per_thread:.1f} global loads per thread for "
                          f"{tiles} tiles: multiply a_tile and b_tile, which the block has already loaded")
        return report(name, True, f"{m}x{k} @ {k}x{n} matches float64 within the FP32 bound, with "
                      f"{per_thread:.1f} global loads per thread: every element of A and B loaded into "
                      f"shared memory is used {tiled.TILE} times")

    return guarded(name, attempt)


solution_tiled_kernel = tiled.gemm_tiled_kernel

# ----------------------------------------------------------------------------- exercise 2

MICRO_BLOCK = (16, 16)  # threads; each computes 2x2 outputs, so a block covers 32x32 of C
MICRO_SHAPE = (37, 9, 35)  # M, K, N: odd, so the last row and column of micro-tiles are partial


def micro_grid(m: int, n: int) -> tuple[int, int]:
    return -(-n // (2 * MICRO_BLOCK[0])), -(-m // (2 * MICRO_BLOCK[1]))


def _loads_per_thread_per_k(kernel, a, b, c) -> float:
    m, k = a.shape
    n = b.shape[1]
    counts = trace.trace(kernel, micro_grid(m, n), MICRO_BLOCK, a, b, c)
    loads = counts.by_array
    loads = loads[(loads["space"] == "global") & (loads["op"] == "ld")]
    threads = -(-m // 2) * -(-n // 2)  # threads that own at least one output
    return float(loads["threads"].sum()) / (threads * k)


def check_micro_tile_kernel(kernel) -> object:
    """``kernel(a, b, c)``: thread (tx, ty) computes C[2ty:2ty+2, 2tx:2tx+2] of its block's 32x32."""
    name = "exercise 2 (a 2x2 register micro-tile)"

    def attempt():
        m, k, n = MICRO_SHAPE
        a, b = _random_operands(m, k, n)
        c = np.full((m, n), np.nan, np.float32)
        kernel[micro_grid(m, n), MICRO_BLOCK](a, b, c)
        wrong = _verdict(name, c, a, b)
        if wrong is not None:
            return wrong
        c = np.full((m, n), np.nan, np.float32)
        per_k = _loads_per_thread_per_k(kernel, a, b, c)
        if per_k > 4.5:  # interior threads: 2 of A + 2 of B; edge threads load fewer
            return report(name, False, f"right answer, but {per_k:.1f} global loads per k per thread: "
                          "read a0, a1, b0, b1 once each and reuse them in the four FMAs")
        return report(name, True, f"correct at the edges, and {per_k:.2f} loads per k per thread feed 4 "
                      "FMAs (one output per thread would need 2 loads per FMA)")

    return guarded(name, attempt)


@cuda.jit
def solution_micro_tile_kernel(a, b, c):
    m, depth = a.shape
    n = b.shape[1]
    row = 2 * (cuda.blockIdx.y * cuda.blockDim.y + cuda.threadIdx.y)
    col = 2 * (cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x)
    if row >= m or col >= n:
        return
    has_row1, has_col1 = row + 1 < m, col + 1 < n
    acc00 = acc01 = acc10 = acc11 = np.float32(0)
    for k in range(depth):
        a0 = a[row, k]
        a1 = a[row + 1, k] if has_row1 else np.float32(0)
        b0 = b[k, col]
        b1 = b[k, col + 1] if has_col1 else np.float32(0)
        acc00 = cuda.fma(a0, b0, acc00)  # two loads of A and two of B feed four FMAs
        acc01 = cuda.fma(a0, b1, acc01)
        acc10 = cuda.fma(a1, b0, acc10)
        acc11 = cuda.fma(a1, b1, acc11)
    c[row, col] = acc00
    if has_col1:
        c[row, col + 1] = acc01
    if has_row1:
        c[row + 1, col] = acc10
        if has_col1:
            c[row + 1, col + 1] = acc11
