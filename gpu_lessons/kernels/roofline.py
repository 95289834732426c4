"""Kernels of lesson 1 (roofline): the ceilings and points placed under them.

1. ``copy_one_per_thread``  float32 copy, one element per thread         (I = 0)
2. ``copy_grid_stride``     float32 copy, grid-stride loop                (I = 0)
3. ``copy_vec4_grid_stride`` float4 copy, grid-stride loop             (I = 0)
4. ``copy_vec4``            float4 copy, one float4 per thread: the bandwidth ceiling
5. ``triad``                c[i] = a[i] * b[i] + c[i], the notes' example  (I = 2 / 16 = 0.125)
6. ``fma_intensity(k)``     y[i] = k chained FMAs on x[i]                  (I = 2k / 8 = k / 4)
7. ``fma_peak``             FMAs on registers only: the FP32 ceiling

Host wrappers check their inputs and return the output array; ``*_launch`` functions take
device arrays and only launch (the timing harness calls those).
"""

from __future__ import annotations

from functools import cache

import numpy as np
from numba import cuda, float32

from ..checks import (
    require_aligned,
    require_array,
    require_choice,
    require_contiguous,
    require_host,
    require_int,
    require_same_shape,
)
from ..vector import load4, store4
from .launch import THREADS_PER_BLOCK, blocks_to_cover, grid_stride_blocks

# ---------------------------------------------------------------------------------- kernels


@cuda.jit
def copy_one_per_thread(x, out):
    i = cuda.grid(1)
    if i < x.size:
        out[i] = x[i]


@cuda.jit
def copy_grid_stride(x, out):
    for i in range(cuda.grid(1), x.size, cuda.gridsize(1)):
        out[i] = x[i]


@cuda.jit
def copy_vec4_grid_stride(x, out):
    """16 bytes per load and store in a grid-stride loop; the last n % 4 elements one by one."""
    start, step = cuda.grid(1), cuda.gridsize(1)
    groups = x.size // 4
    for i in range(start, groups, step):
        v0, v1, v2, v3 = load4(x, i)
        store4(out, i, v0, v1, v2, v3)
    tail = 4 * groups + start
    if tail < x.size:
        out[tail] = x[tail]


@cuda.jit
def copy_vec4(x, out):
    """One float4 per thread; the n % 4 threads past the last group copy the tail one by one.

    On the H200 this one-shot grid reaches CuPy's copy and the grid-stride float4 copy does not. Why
    is not settled: lesson 3's deep dive measures one difference (with one wave of blocks, SMs finish
    at different times), not tested as the cause.
    """
    i = cuda.grid(1)
    groups = x.size // 4
    if i < groups:
        v0, v1, v2, v3 = load4(x, i)
        store4(out, i, v0, v1, v2, v3)
    elif 4 * groups + (i - groups) < x.size:
        j = 4 * groups + (i - groups)
        out[j] = x[j]


@cuda.jit
def triad(a, b, c):
    i = cuda.grid(1)
    if i < c.size:
        c[i] = a[i] * b[i] + c[i]


FMA_UNROLL = 16  # FMAs per chain per loop trip, so loop overhead stays under 1% at any k


@cache
def fma_intensity(k: int):
    """A kernel doing k dependent FMAs on each element: 2k FLOP per 8 bytes moved.

    ``k`` is baked in at compile time (closure constants). One float4 per thread (the shape of
    ``copy_vec4``) gives each thread four independent chains. The FMAs run in trips of 16 per
    chain, an inner loop the compiler unrolls, so that the loop's counter and branch do not take
    issue slots from the FMAs.
    """
    k = require_int(k, "k (FMAs per element)", 1)
    trips, rest = divmod(k, FMA_UNROLL)

    @cuda.jit
    def fma_k(x, y, a, b):
        i = cuda.grid(1)
        groups = x.size // 4
        if i < groups:
            v0, v1, v2, v3 = load4(x, i)
            for _ in range(trips):
                for _ in range(16):  # FMA_UNROLL
                    v0 = cuda.fma(v0, a, b)
                    v1 = cuda.fma(v1, a, b)
                    v2 = cuda.fma(v2, a, b)
                    v3 = cuda.fma(v3, a, b)
            for _ in range(rest):
                v0 = cuda.fma(v0, a, b)
                v1 = cuda.fma(v1, a, b)
                v2 = cuda.fma(v2, a, b)
                v3 = cuda.fma(v3, a, b)
            store4(y, i, v0, v1, v2, v3)
        elif 4 * groups + (i - groups) < x.size:
            j = 4 * groups + (i - groups)
            v = x[j]
            for _ in range(k):
                v = cuda.fma(v, a, b)
            y[j] = v

    fma_k.__name__ = f"fma_intensity_{k}"
    return fma_k


FMA_PEAK_CHAINS = 8  # independent accumulators per thread: hides the FMA latency
FMA_PEAK_UNROLL = 16  # FMAs per chain per loop trip: loop overhead under 1%


@cuda.jit
def fma_peak(out, trips, a, b):
    """8 independent FMA chains per thread, registers only; one store keeps the work alive."""
    t = cuda.grid(1)
    x0 = float32(t)
    x1, x2, x3 = x0 + float32(1), x0 + float32(2), x0 + float32(3)
    x4, x5, x6, x7 = x0 + float32(4), x0 + float32(5), x0 + float32(6), x0 + float32(7)
    for _ in range(trips):
        for _ in range(16):  # FMA_PEAK_UNROLL
            x0 = cuda.fma(x0, a, b)
            x1 = cuda.fma(x1, a, b)
            x2 = cuda.fma(x2, a, b)
            x3 = cuda.fma(x3, a, b)
            x4 = cuda.fma(x4, a, b)
            x5 = cuda.fma(x5, a, b)
            x6 = cuda.fma(x6, a, b)
            x7 = cuda.fma(x7, a, b)
    if t < out.size:
        out[t] = ((x0 + x1) + (x2 + x3)) + ((x4 + x5) + (x6 + x7))


# ---------------------------------------------------------------------- launches (device data)


def copy_launch(variant: str, x, out) -> None:
    require_choice(variant, "copy variant", COPY_VARIANTS)
    n = x.size
    if variant == "copy_one_per_thread":
        copy_one_per_thread[blocks_to_cover(n), THREADS_PER_BLOCK](x, out)
    elif variant == "copy_grid_stride":
        copy_grid_stride[grid_stride_blocks(n), THREADS_PER_BLOCK](x, out)
    elif variant == "copy_vec4_grid_stride":
        copy_vec4_grid_stride[grid_stride_blocks(max(1, n // 4)), THREADS_PER_BLOCK](x, out)
    else:  # copy_vec4
        copy_vec4[blocks_to_cover(vec4_threads(n)), THREADS_PER_BLOCK](x, out)


COPY_VARIANTS = ("copy_one_per_thread", "copy_grid_stride", "copy_vec4_grid_stride", "copy_vec4")


def vec4_threads(n: int) -> int:
    """Threads for a one-float4-per-thread kernel: one per group of 4, one per leftover element."""
    return n // 4 + n % 4


def triad_launch(a, b, c) -> None:
    triad[blocks_to_cover(c.size), THREADS_PER_BLOCK](a, b, c)


FMA_A, FMA_B = np.float32(0.999), np.float32(0.001)  # v -> 0.999 v + 0.001 stays finite for any k


def fma_intensity_launch(k: int, x, y) -> None:
    fma_intensity(k)[blocks_to_cover(vec4_threads(x.size)), THREADS_PER_BLOCK](x, y, FMA_A, FMA_B)


def fma_peak_launch(out, blocks: int, trips: int) -> None:
    fma_peak[blocks, THREADS_PER_BLOCK](out, np.int32(trips), FMA_A, FMA_B)


def fma_peak_flops(blocks: int, trips: int) -> int:
    return 2 * blocks * THREADS_PER_BLOCK * trips * FMA_PEAK_UNROLL * FMA_PEAK_CHAINS


# ------------------------------------------------------------------- checked host wrappers


def _float32_vector(x, name):
    """The wrappers below take NumPy vectors (and return NumPy arrays)."""
    require_host(x, name)
    require_array(x, name, dtype=np.float32, ndim=1)
    require_contiguous(x, name)
    return x


def copy(x, variant: str = "copy_vec4"):
    """Copy a float32 vector with one of the copy kernels; returns the copy (host array)."""
    _float32_vector(x, "x")
    require_choice(variant, "copy variant", COPY_VARIANTS)
    if "vec4" in variant:
        require_aligned(x, "x", 16)
    out = np.empty_like(x)
    if x.size:  # an empty x: an empty copy, no launch
        copy_launch(variant, x, out)
    return out


def triad_host(a, b, c):
    """c = a * b + c with the triad kernel, returning the new c (inputs are not modified)."""
    for name, v in (("a", a), ("b", b), ("c", c)):
        _float32_vector(v, name)
    require_same_shape(a=a, b=b, c=c)
    result = np.array(c, copy=True)
    if result.size:  # empty vectors: nothing to launch
        triad_launch(a, b, result)
    return result


def fma_chain_reference(x, k: int):
    """NumPy reference for fma_intensity(k), in float32 with a fused multiply-add per step."""
    v = np.asarray(x, dtype=np.float32)
    a, b = np.float64(FMA_A), np.float64(FMA_B)
    for _ in range(k):
        # float64 holds the exact product of two float32s, so one rounding to float32 = an FMA
        v = (v.astype(np.float64) * a + b).astype(np.float32)
    return v


def fma_intensity_host(x, k: int):
    """k dependent FMAs on each element of a float32 NumPy vector (fma_intensity(k)); returns y."""
    _float32_vector(x, "x")
    require_aligned(x, "x", 16)
    fma_intensity(k)  # a bad k: an error before any work
    y = np.empty_like(x)
    if x.size:  # an empty x: nothing to launch
        fma_intensity_launch(k, x, y)
    return y
