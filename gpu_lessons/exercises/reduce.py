"""Exercises of lesson 5 (reduce): their checks and reference solutions.

1. The notes' ``warp_reduce_sum``: shuffles leave a warp's sum in lane 0. Checked on an input
   whose last warp is partial (lanes past the end take part with zero, none exits early).
2. The notes' ``reduce_sum`` kernel: grid-stride accumulation, then both levels of shuffles and
   one atomic per block. Checked on lengths 0, 1, smaller than a block and not a multiple of it.
3. A test's tolerance, derived rather than guessed: the worst-case error of a float32 sum whose
   addition tree has depth d is gamma_d * sum|x|, gamma_d = d u / (1 - d u), u = 2^-24.
"""

from __future__ import annotations

import math

import numpy as np
from numba import cuda, float32

from ..device import WARP_SIZE
from ..kernels import reduce as k
from . import guarded, report

# ----------------------------------------------------------------------------- exercise 1

WARP_N = 100  # three full warps and a partial one (4 lanes of data, 28 lanes of zeros)
WARP_BLOCK = 128


def _warp_sums_kernel(warp_reduce_sum):
    @cuda.jit
    def warp_sums(x, out):
        i = cuda.grid(1)
        value = x[i] if i < x.size else float32(0)  # past the end: zero, and stay for the shuffles
        value = warp_reduce_sum(value)
        if cuda.threadIdx.x % WARP_SIZE == 0:
            out[i // WARP_SIZE] = value

    return warp_sums


def check_warp_reduce_sum(warp_reduce_sum) -> object:
    """``warp_reduce_sum(value)`` (a device function): lane 0 returns the sum over its warp."""
    name = "exercise 1 (warp_reduce_sum)"

    def attempt():
        x = np.random.default_rng().standard_normal(WARP_N, dtype=np.float32)
        warps = WARP_BLOCK // WARP_SIZE
        out = np.full(warps, np.nan, np.float32)
        _warp_sums_kernel(warp_reduce_sum)[1, WARP_BLOCK](x, out)
        padded = np.zeros(WARP_BLOCK, np.float32)
        padded[:WARP_N] = x
        for w in range(warps):
            part = padded[w * WARP_SIZE:(w + 1) * WARP_SIZE]
            exact = float(np.sum(part, dtype=np.float64))
            bound = _gamma(5) * float(np.sum(np.abs(part), dtype=np.float64))  # 5 rounds of adds
            if not abs(float(out[w]) - exact) <= bound:
                where = "the partial last warp" if w == warps - 1 else f"warp {w}"
                return report(name, False, f"lane 0 of {where} holds {out[w]:.6f}, its warp's sum is "
                              f"{exact:.6f} (lanes past the end of x hold 0)")
        return report(name, True, f"lane 0 of each of {warps} warps holds its warp's sum, the partial "
                      f"last warp ({WARP_N % WARP_SIZE} lanes of data) included")

    return guarded(name, attempt)


@cuda.jit(device=True)
def solution_warp_reduce_sum(value):
    offset = 16
    while offset > 0:
        value += cuda.shfl_down_sync(0xFFFFFFFF, value, offset)
        offset //= 2
    return value


# ----------------------------------------------------------------------------- exercise 2

SUM_SIZES = (0, 1, 100, 700)  # empty, one element, under one block, not a multiple of it
SUM_BLOCK = 128
SUM_BLOCKS = 2


def check_reduce_sum(kernel) -> object:
    """``kernel[blocks, block](x, out)`` adds sum(x) into out[0] (out starts at zero)."""
    name = "exercise 2 (reduce_sum)"

    def attempt():
        rng = np.random.default_rng()
        for n in SUM_SIZES:
            x = rng.standard_normal(n, dtype=np.float32)
            out = np.zeros(1, np.float32)
            kernel[SUM_BLOCKS, SUM_BLOCK](x, out)
            exact = float(np.sum(x, dtype=np.float64))
            depth = -(-n // (SUM_BLOCKS * SUM_BLOCK)) + 10 + SUM_BLOCKS  # chain, 2 x 5 shuffles, atomics
            bound = _gamma(depth) * float(np.sum(np.abs(x), dtype=np.float64))
            if not abs(float(out[0]) - exact) <= bound:
                return report(name, False, f"n={n}: out[0] = {out[0]:.6f}, the sum is {exact:.6f}")
        return report(name, True, f"sums of {', '.join(map(str, SUM_SIZES))} elements with "
                      f"{SUM_BLOCKS} blocks of {SUM_BLOCK} threads match float64 NumPy")

    return guarded(name, attempt)


@cuda.jit
def solution_reduce_sum(x, out):
    warp_sums = cuda.shared.array(32, float32)
    tid = cuda.threadIdx.x
    i = cuda.blockIdx.x * cuda.blockDim.x * 2 + tid
    stride = cuda.blockDim.x * 2 * cuda.gridDim.x
    value = float32(0)
    while i < x.size:
        value += x[i]
        if i + cuda.blockDim.x < x.size:
            value += x[i + cuda.blockDim.x]
        i += stride
    value = solution_warp_reduce_sum(value)
    if tid % 32 == 0:
        warp_sums[tid // 32] = value
    cuda.syncthreads()
    warp_count = (cuda.blockDim.x + 31) // 32
    value = warp_sums[tid] if tid < warp_count else float32(0)
    if tid < 32:
        value = solution_warp_reduce_sum(value)
        if tid == 0:
            cuda.atomic.add(out, 0, value)


# ----------------------------------------------------------------------------- exercise 3


def _gamma(depth: int) -> float:
    return k.gamma(depth)


def check_tolerance(tolerance) -> object:
    """``tolerance(x, depth)``: the worst-case |float32 sum - exact| for a tree of that depth."""
    name = "exercise 3 (a derived tolerance)"

    def attempt():
        rng = np.random.default_rng()
        cases = [(1000, 1000), (3, 2**22)]  # a deep tree too: there 1 / (1 - d u) is 4/3, not ~1
        cases += [(n, int(rng.integers(1, n + 1))) for n in rng.integers(1, 5000, size=48).tolist()]
        for n, depth in cases:
            x = (rng.standard_normal(n) * 10.0 ** rng.uniform(-3, 3)).astype(np.float32)
            expected = _gamma(depth) * float(np.sum(np.abs(x), dtype=np.float64))
            got = tolerance(x, depth)
            if got is None or not np.isclose(float(got), expected, rtol=1e-6):
                return report(name, False, f"n={n}, depth={depth}: you gave {got}, the bound is "
                              f"{expected:.4g} ({_tolerance_hint(got, x, depth)})")
        return report(name, True, f"gamma_d * sum|x| on {len(cases)} random arrays and depths")

    return guarded(name, attempt)


def _tolerance_hint(got, x, depth) -> str:
    """What a wrong tolerance most likely got wrong (each hint true of the formula)."""
    u = 2.0**-24
    abs_sum = float(np.sum(np.abs(np.asarray(x, np.float64))))
    near = {
        "the bound grows with sum|x|, not with |sum x|":
            _gamma(depth) * abs(float(np.sum(x, dtype=np.float64))),
        "u is the unit roundoff of float32, 2^-24 (half of machine epsilon 2^-23)":
            2 * depth * u / (1 - 2 * depth * u) * abs_sum if 2 * depth * u < 1 else math.inf,
        "gamma_d = d u / (1 - d u): the denominator matters once d u is not tiny": depth * u * abs_sum,
    }
    try:
        value = float(got)
    except (TypeError, ValueError):
        return "return a number: gamma_d times sum|x|"
    for hint, candidate in near.items():
        if math.isfinite(candidate) and np.isclose(value, candidate, rtol=1e-6):
            return hint
    return "gamma_d * sum|x|, with gamma_d = d u / (1 - d u) and u = 2^-24"


def solution_tolerance(x, depth):
    u = 2.0**-24
    return depth * u / (1 - depth * u) * float(np.sum(np.abs(np.asarray(x, np.float64))))
