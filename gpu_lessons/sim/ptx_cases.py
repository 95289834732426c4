"""Fixed kernels and inputs for ``gpu_lessons.ptx``, to hold the simulator to a GPU: bit for bit for
copies, conversions and the MMA's fragment layout; within 2^-23 (|A||B| + |C|) for the MMA's sums.

Like ``warp_cases``: each case is a kernel, a launch and deterministic inputs (seeded from the
case's name); ``run_cases()`` launches them on whichever device ``gpu_lessons`` picked and returns
each case's output. ``benchmarks/record_ptx_primitives.py`` saves an H200's outputs, and
``tests/test_sim_ptx.py`` compares the simulator's (the kernels on the first tiles of each case,
the MMA arithmetic on all of them) with that recording.

The MMA cases are chosen to tell models of the tensor cores' arithmetic apart: integers (exact in
any order: they pin the fragment layout alone), raw float32 operands (are the 13 bits TF32 drops
cut or rounded?), the same operands rounded in the kernel by ``cvt.rna``, TF32 operands over a wide
range of exponents (how wide is the sum, how is it rounded), and sums that cancel.
Every case uses only defined behaviour: copies are read after their wait and a barrier.
"""

from __future__ import annotations

import numpy as np
from numba import cuda, float32

from ..ptx import (
    cp_async4,
    cp_async8,
    cp_async16,
    cp_async_commit_group,
    cp_async_wait_group,
    cvt_rna_tf32,
    mma_tf32,
)
from .ptx import tf32_truncate
from .warp_cases import WarpCase

SENTINEL = np.float32(-7.0)  # what shared memory holds before the copies land
COPY_THREADS = 64
SHARED_FLOATS = 7 * COPY_THREADS  # 4 floats per thread for 16-byte copies, 2 for 8, 1 for 4


# --- Kernels --------------------------------------------------------------------------------------


@cuda.jit
def mma_tiles(a, b, c, round_first, d):
    """Warp w: D[w] = A[w] B[w] + C[w] with one mma.sync; A and B cvt.rna'd first if round_first."""
    thread = cuda.threadIdx.x + cuda.blockIdx.x * cuda.blockDim.x
    w, lane = thread // 32, thread % 32
    if w < a.shape[0]:  # whole warps: 32 threads per tile
        g, t = lane // 4, lane % 4
        a0, a1, a2, a3 = a[w, g, t], a[w, g + 8, t], a[w, g, t + 4], a[w, g + 8, t + 4]
        b0, b1 = b[w, t, g], b[w, t + 4, g]
        if round_first:
            a0, a1, a2, a3 = cvt_rna_tf32(a0), cvt_rna_tf32(a1), cvt_rna_tf32(a2), cvt_rna_tf32(a3)
            b0, b1 = cvt_rna_tf32(b0), cvt_rna_tf32(b1)
        d0, d1, d2, d3 = mma_tf32(a0, a1, a2, a3, b0, b1, c[w, g, 2 * t], c[w, g, 2 * t + 1],
                                  c[w, g + 8, 2 * t], c[w, g + 8, 2 * t + 1])
        d[w, g, 2 * t] = d0
        d[w, g, 2 * t + 1] = d1
        d[w, g + 8, 2 * t] = d2
        d[w, g + 8, 2 * t + 1] = d3


@cuda.jit
def cvt_elements(x, out):
    i = cuda.grid(1)
    if i < x.size:
        out[i] = cvt_rna_tf32(x[i])


@cuda.jit
def async_copies(src, offsets, counts, out):
    """Each thread copies 16, 8 and 4 bytes (three groups) from src[offsets[k, i]] with counts[k, i]
    bytes read; out[0] is what the thread sees of its 16-byte copy after wait_group(2) (its first
    group has landed), out[1] the whole shared array after wait_group(0) and a barrier."""
    s = cuda.shared.array(SHARED_FLOATS, float32)
    i = cuda.threadIdx.x
    for j in range(i, SHARED_FLOATS, COPY_THREADS):
        s[j] = SENTINEL
    cuda.syncthreads()
    cp_async16(s, 4 * i, src, offsets[0, i], counts[0, i])
    cp_async_commit_group()
    cp_async8(s, 4 * COPY_THREADS + 2 * i, src, offsets[1, i], counts[1, i])
    cp_async_commit_group()
    cp_async4(s, 6 * COPY_THREADS + i, src, offsets[2, i], counts[2, i])
    cp_async_commit_group()
    cp_async_wait_group(2)
    for k in range(4):
        out[0, 4 * i + k] = s[4 * i + k]
    cp_async_wait_group(0)
    cuda.syncthreads()
    for j in range(i, SHARED_FLOATS, COPY_THREADS):
        out[1, j] = s[j]


# --- Inputs ---------------------------------------------------------------------------------------


def _tiles(count: int) -> tuple[tuple[int, int, int], tuple[int, int, int], tuple[int, int, int]]:
    return (count, 16, 8), (count, 8, 8), (count, 16, 8)


def _output(shape) -> np.ndarray:
    return np.full(shape, SENTINEL, np.float32)


def _mma_integers(rng, grid, block):
    tiles = grid * block // 32
    sa, sb, sc = _tiles(tiles)
    a, b, c = (rng.integers(-64, 65, s).astype(np.float32) for s in (sa, sb, sc))
    return a, b, c, np.int32(0), _output(sc)


def _mma_raw(round_first: int):
    def make(rng, grid, block):
        sa, sb, sc = _tiles(grid * block // 32)
        a, b, c = (rng.standard_normal(s).astype(np.float32) for s in (sa, sb, sc))
        return a, b, c, np.int32(round_first), _output(sc)

    return make


def _scaled(rng, shape, low: int, high: int) -> np.ndarray:
    """TF32 values (13 low bits zero) of random sign and significand, exponents in [low, high)."""
    values = rng.uniform(1, 2, shape) * np.exp2(rng.integers(low, high, shape))
    return tf32_truncate(np.where(rng.random(shape) < 0.5, -values, values).astype(np.float32))


def _mma_wide(rng, grid, block):
    """TF32 operands with exponents over 2^-12 .. 2^12 and C over 2^-20 .. 2^20: terms of very
    different sizes meet in every sum, so the bits a sum keeps show."""
    sa, sb, sc = _tiles(grid * block // 32)
    c = _scaled(rng, sc, -20, 20)
    c[rng.random(sc) < 0.1] = 0
    return _scaled(rng, sa, -12, 12), _scaled(rng, sb, -12, 12), c, np.int32(0), _output(sc)


def _mma_cancel(rng, grid, block):
    """Sums that cancel: every row of A repeats ± its first half, C is near minus the products'
    sum, so the result is much smaller than the terms and its low bits depend on every cut."""
    sa, sb, sc = _tiles(grid * block // 32)
    a = _scaled(rng, sa, -4, 4)
    a[:, :, 4:] = -a[:, :, :4] * np.exp2(rng.integers(-2, 3, (sa[0], 16, 4))).astype(np.float32)
    b = _scaled(rng, sb, -4, 4)
    b[:, 4:, :] = b[:, :4, :] * (1 + rng.integers(-8, 9, (sb[0], 4, 8)) * 2.0**-10).astype(np.float32)
    exact = a.astype(np.float64) @ b.astype(np.float64)
    c = (-exact * (1 + rng.standard_normal(sc) * 2.0**-12)).astype(np.float32)
    return a, b, c, np.int32(0), _output(sc)


def _cvt_args(rng, grid, block):
    n = grid * block
    bits = rng.integers(0, 2**32, n, dtype=np.uint64).astype(np.uint32)
    # ties (the 13 dropped bits exactly half), just below and above, and special values
    ties = bits[: n // 4] & np.uint32(0xFFFFE000) | np.uint32(0x1000)
    bits[: n // 4] = ties
    bits[n // 4: n // 4 + 64] = np.array(
        [0, 0x80000000, 0x7F800000, 0xFF800000, 0x7FC00000, 0x7F800001, 0x7F7FFFFF, 0x7F7FF000,
         0x00000001, 0x00001000, 0x00001FFF, 0x807FF000, 0x3F800FFF, 0x3F801000, 0x3F801001, 0xBF801000]
        * 4, dtype=np.uint32)
    return bits.view(np.float32), _output(n)


def _copy_args(rng, grid, block):
    src = rng.standard_normal(1024).astype(np.float32)
    offsets = np.stack([rng.integers(0, 1024 // size, COPY_THREADS) * size for size in (4, 2, 1)])
    counts = np.stack([rng.integers(0, 4 * size + 1, COPY_THREADS) for size in (4, 2, 1)])
    return src, offsets.astype(np.int64), counts.astype(np.int32), _output((2, SHARED_FLOATS))


CASES: tuple[WarpCase, ...] = (
    WarpCase("mma_integers", mma_tiles, 4, 256, _mma_integers),
    WarpCase("mma_raw_float32", mma_tiles, 32, 256, _mma_raw(0)),
    WarpCase("mma_cvt_rna_first", mma_tiles, 16, 256, _mma_raw(1)),
    WarpCase("mma_wide_exponents", mma_tiles, 64, 256, _mma_wide),
    WarpCase("mma_cancellation", mma_tiles, 32, 256, _mma_cancel),
    WarpCase("cvt_rna_tf32", cvt_elements, 8, 256, _cvt_args),
    WarpCase("cp_async_groups", async_copies, 1, COPY_THREADS, _copy_args),
)
BY_NAME = {case.name: case for case in CASES}


def fingerprints() -> dict[str, str]:
    return {case.name: case.fingerprint() for case in CASES}


def run_cases(names=None) -> dict[str, np.ndarray]:
    """Launch every case (or those named) on the current device; each case's output by name."""
    return {case.name: case.run() for case in CASES if names is None or case.name in names}
