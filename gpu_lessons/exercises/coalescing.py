"""Exercises of lesson 3 (coalescing): their checks and reference solutions.

1. Predict the sectors per request of a load whose index is an expression of the thread index;
   the check traces the learner's kernel and compares the prediction with what the tracer counts.
2. Rewrite an array-of-structures kernel for a structure of arrays: the check runs it against
   NumPy and traces it, and every load and store must be ideal (4 sectors per full-warp request).
3. Finish a float4 kernel's scalar tail, checked against NumPy at lengths that are not multiples
   of 4 (nor of the block), with the body's loads traced as 16-byte accesses.
"""

from __future__ import annotations

import numpy as np
from numba import cuda

from ..sim import trace
from ..vector import load4, store4
from . import guarded, report

WARPS = 2  # traced launches: one block of two full warps


def _trace(kernel, *args, threads: int = 32 * WARPS):
    return trace.trace(kernel, max(1, -(-threads // 128)), min(threads, 128), *args)


# ----------------------------------------------------------------------------- exercise 1


@cuda.jit
def gather(x, out):
    """The kernel of exercise 1 (the notebook has a copy to edit)."""
    i = cuda.grid(1)
    if i < out.size:
        out[i] = x[(i % 8) * 32 + i // 8]


def traced_load_sectors(kernel, n_out: int = 32 * WARPS, n_in: int = 4096) -> float:
    """Sectors per request of the loads of ``x`` in ``kernel(x, out)`` over two full warps."""
    x = np.random.default_rng().standard_normal(n_in, dtype=np.float32)
    out = np.zeros(n_out, np.float32)
    counts = _trace(kernel, x, out, threads=n_out)
    loads = counts.by_array
    loads = loads[(loads["array"] == "x") & (loads["op"] == "ld")]
    if loads.empty:
        raise ValueError("the kernel never loads x")
    return float(loads["sectors"].sum() / loads["instructions"].sum())


def check_sector_prediction(kernel, prediction) -> object:
    """``prediction()`` returns the sectors per request of ``kernel``'s load of x (float32, x
    starting on a 128-byte line, full warps); the check traces ``kernel(x, out)``."""
    name = "exercise 1 (predict the sectors)"

    def attempt():
        value = prediction()
        if value is None:
            return report(name, False, "return a number: the sectors one warp's load of x touches")
        counted = traced_load_sectors(kernel)
        if not np.isclose(float(value), counted):
            return report(name, False, f"you predicted {float(value):g} sectors per request; draw the 32 "
                          "addresses and count the 32-byte sectors they fall in (plots.global_sectors)")
        return report(name, True, f"{counted:g} sectors per request, as the tracer counts: "
                      f"{128 / (32 * counted):.0%} of the bytes moved are used")

    return guarded(name, attempt)


def solution_sector_prediction() -> int:
    # lanes 0..7 read x[0], x[32], ..., x[224]; lanes 8..15 the next float of each: 8 groups of
    # 4 consecutive floats (16 bytes), each group in its own 128-byte line -> 8 sectors
    return 8


# ----------------------------------------------------------------------------- exercise 2

SPEED_N = 1000  # not a multiple of the block


@cuda.jit
def speed_aos(records, out):
    """The kernel of exercise 2: |v| of particles stored as records (x, y, vx, vy)."""
    i = cuda.grid(1)
    if i < out.size:
        vx, vy = records[i, 2], records[i, 3]
        out[i] = (vx * vx + vy * vy) ** 0.5


def check_speed_soa(kernel) -> object:
    """``kernel(x, y, vx, vy, out)``: out[i] = sqrt(vx[i]^2 + vy[i]^2) on four separate arrays,
    every request ideal (4 sectors for a full warp's 4-byte loads or stores)."""
    name = "exercise 2 (structure of arrays)"

    def attempt():
        rng = np.random.default_rng()
        fields = [rng.standard_normal(SPEED_N, dtype=np.float32) for _ in range(4)]
        out = np.full(SPEED_N, np.nan, np.float32)
        blocks = -(-SPEED_N // 256)
        kernel[blocks, 256](*fields, out)
        expected = np.sqrt(fields[2] ** 2 + fields[3] ** 2)
        if np.isnan(out).any():
            return report(name, False, f"{int(np.isnan(out).sum())} of {SPEED_N} outputs never written")
        if not np.allclose(out, expected, rtol=1e-5, atol=1e-6):
            worst = int(np.argmax(np.abs(out - expected)))
            return report(name, False, f"out[{worst}] = {out[worst]:.5f}, expected {expected[worst]:.5f}")
        counts = _trace(kernel, *(f[:64].copy() for f in fields), np.zeros(64, np.float32), threads=64)
        table = counts.by_instruction
        worst = table.loc[table["sectors_per_request"].astype(float).idxmax()]
        if float(worst["sectors_per_request"]) > 4:
            return report(name, False, f"{worst['op']} {worst['array']} at {worst['location']} needs "
                          f"{float(worst['sectors_per_request']):g} sectors per request; the ideal is 4")
        return report(name, True, f"right on {SPEED_N} particles, and every request is 4 sectors")

    return guarded(name, attempt)


@cuda.jit
def solution_speed_soa(x, y, vx, vy, out):
    i = cuda.grid(1)
    if i < out.size:
        a, b = vx[i], vy[i]
        out[i] = (a * a + b * b) ** 0.5


# ----------------------------------------------------------------------------- exercise 3

SCALE = np.float32(3.0)


def vec4_threads(n: int) -> int:
    """Threads launched for n elements: one per group of 4, one per leftover element."""
    return n // 4 + n % 4


def check_scale_vec4(kernel) -> object:
    """``kernel(x, out, a)``: out = a * x with load4/store4 over the whole groups of 4 and a
    scalar tail, launched with ``vec4_threads(n)`` threads."""
    name = "exercise 3 (float4 body, scalar tail)"

    def attempt():
        rng = np.random.default_rng()
        for n in (1, 3, 6, 1027):
            x = rng.standard_normal(n, dtype=np.float32)
            out = np.full(n, np.nan, np.float32)
            threads = vec4_threads(n)
            kernel[max(1, -(-threads // 256)), 256](x, out, SCALE)
            if np.isnan(out).any():
                missing = np.flatnonzero(np.isnan(out))
                return report(name, False, f"n={n}: out{missing[:4].tolist()} never written "
                              f"({len(missing)} of {n}); the last n % 4 need the scalar tail")
            if not np.array_equal(out, SCALE * x):
                return report(name, False, f"n={n}: values differ from 3 * x")
        counts = _trace(kernel, rng.standard_normal(259, dtype=np.float32), np.zeros(259, np.float32), SCALE,
                        threads=vec4_threads(259))
        loads = counts.by_instruction
        wide = loads[(loads["array"] == "x") & (loads["op"] == "ld") & (loads["bytes"] == 16)]
        if wide.empty:
            return report(name, False, "the body does not load x 16 bytes at a time (use load4)")
        return report(name, True, "16-byte body and scalar tail right at n = 1, 3, 6 and 1027")

    return guarded(name, attempt)


@cuda.jit
def solution_scale_vec4(x, out, a):
    i = cuda.grid(1)
    groups = x.size // 4
    if i < groups:
        v0, v1, v2, v3 = load4(x, i)
        store4(out, i, a * v0, a * v1, a * v2, a * v3)
    else:
        j = 4 * groups + (i - groups)
        if j < x.size:
            out[j] = a * x[j]
