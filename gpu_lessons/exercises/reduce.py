"""Exercises of lesson 5 (reduce): their checks and reference solutions.

1. A warp's sum in every lane: the butterfly, ``shfl_xor_sync`` with offsets 16, 8, 4, 2, 1 (the
   lesson shows ``shfl_down_sync``, which leaves the sum in lane 0 only). Checked on an input whose
   last warp is partial (lanes past the end take part with zero, none exits early).
2. The notes' ``reduce_sum`` kernel: grid-stride accumulation, then both levels of shuffles and
   one atomic per block. Checked on lengths 0, 1, smaller than a block and not a multiple of it.
3. A test's tolerance, derived rather than guessed: the worst-case error of a float32 sum whose
   addition tree has depth d (the lesson's bound), including depths where there is no bound.
4. Predict a time: a sum's time at any size from the launch model t(N) = t0 + 4N / BW, checked
   against the recorded times of ``vec4_last_block`` and ``cupy.sum`` from 4 MiB to 1 GiB.
"""

from __future__ import annotations

import math

import numpy as np
from numba import cuda, float32

from .. import lessons
from ..device import WARP_SIZE
from ..kernels import reduce as k
from ..lessons import reduce as lesson
from . import guarded, report

# ----------------------------------------------------------------------------- exercise 1

WARP_N = 100  # three full warps and a partial one (4 lanes of data, 28 lanes of zeros)
WARP_BLOCK = 128


def _warp_sums_kernel(warp_all_sum):
    @cuda.jit
    def warp_sums(x, out):
        i = cuda.grid(1)
        value = x[i] if i < x.size else float32(0)  # past the end: zero, and stay for the shuffles
        out[i] = warp_all_sum(value)  # every lane writes what it holds

    return warp_sums


def check_warp_all_sum(warp_all_sum) -> object:
    """``warp_all_sum(value)`` (a device function): every lane returns the sum over its warp."""
    name = "exercise 1 (warp_all_sum)"

    def attempt():
        x = np.random.default_rng().standard_normal(WARP_N, dtype=np.float32)
        out = np.full(WARP_BLOCK, np.nan, np.float32)
        _warp_sums_kernel(warp_all_sum)[1, WARP_BLOCK](x, out)
        padded = np.zeros(WARP_BLOCK, np.float32)
        padded[:WARP_N] = x
        warps = WARP_BLOCK // WARP_SIZE
        for w in range(warps):
            part = padded[w * WARP_SIZE:(w + 1) * WARP_SIZE]
            exact = float(np.sum(part, dtype=np.float64))
            bound = _gamma(5) * float(np.sum(np.abs(part), dtype=np.float64))  # 5 rounds of adds
            wrong = [lane for lane in range(WARP_SIZE)
                     if not abs(float(out[w * WARP_SIZE + lane]) - exact) <= bound]
            if wrong:
                lane = wrong[0]
                where = "the partial last warp" if w == warps - 1 else f"warp {w}"
                hint = ("lane 0 holds the sum but the others do not: shfl_down_sync reads lane + offset, "
                        "so only lane 0 gathers every value; shfl_xor_sync swaps with lane ^ offset"
                        if 0 not in wrong else "add what each shuffle brings, over offsets 16, 8, 4, 2, 1")
                return report(name, False, f"lane {lane} of {where} holds {out[w * WARP_SIZE + lane]:.6f}, "
                              f"its warp's sum is {exact:.6f} ({len(wrong)} of 32 lanes wrong; {hint})")
        return report(name, True, f"every lane of each of {warps} warps holds its warp's sum, the partial "
                      f"last warp ({WARP_N % WARP_SIZE} lanes of data) included")

    return guarded(name, attempt)


@cuda.jit(device=True)
def solution_warp_all_sum(value):
    offset = 16
    while offset > 0:
        value += cuda.shfl_xor_sync(0xFFFFFFFF, value, offset)
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
    value = k.warp_reduce_sum(value)
    if tid % 32 == 0:
        warp_sums[tid // 32] = value
    cuda.syncthreads()
    warp_count = (cuda.blockDim.x + 31) // 32
    value = warp_sums[tid] if tid < warp_count else float32(0)
    if tid < 32:
        value = k.warp_reduce_sum(value)
        if tid == 0:
            cuda.atomic.add(out, 0, value)


# ----------------------------------------------------------------------------- exercise 3


def _gamma(depth: int) -> float:
    return k.gamma(depth)


def check_tolerance(tolerance) -> object:
    """``tolerance(x, depth)``: the worst-case |float32 sum - exact| for an addition tree of that depth
    (math.inf where the bound says nothing)."""
    name = "exercise 3 (a derived tolerance)"

    def attempt():
        rng = np.random.default_rng(5)
        # a deep tree too (there 1 / (1 - d u) is 4/3, not ~1), and one past d u = 1 (no bound)
        cases = [(1000, 1000), (3, 2**22), (4, 2**25)]
        cases += [(n, int(rng.integers(1, n + 1))) for n in rng.integers(2, 5000, size=48).tolist()]
        for n, depth in cases:
            x = (rng.standard_normal(n) * 10.0 ** rng.uniform(-3, 3)).astype(np.float32)
            expected = _gamma(depth) * float(np.sum(np.abs(x), dtype=np.float64))
            got = tolerance(x, depth)
            if not _same(got, expected):  # within 1e-4 (relative)
                shown = "inf" if expected == math.inf else f"{expected:.4g}"
                return report(name, False, f"n={n}, depth={depth}: you gave {got}, the bound is {shown} "
                              f"({_tolerance_hint(got, x, depth)})")
        return report(name, True, f"gamma_d * sum|x| on {len(cases)} random arrays and depths, and "
                      "no bound (inf) once d u >= 1")

    return guarded(name, attempt)


SAME = 1e-4  # relative: a float32 sum|x| (np.abs(x).sum()) is fine; a missing factor 1 / (1 - d u) is not


def _same(got, expected: float) -> bool:
    try:
        value = float(got)
    except (TypeError, ValueError):
        return False
    if math.isinf(expected):
        return value == expected
    return np.isclose(value, expected, rtol=SAME, atol=0)


def _tolerance_hint(got, x, depth) -> str:
    """What a wrong tolerance got wrong, where its value shows it (each hint true of the answer)."""
    u = 2.0**-24
    try:
        value = float(got)
    except (TypeError, ValueError):
        return "return a number: the bound, in the units of the sum"
    if depth * u >= 1:
        return (f"here d u = {depth * u:g} >= 1: the chain is long enough to lose everything, so there is "
                "no bound; return math.inf")
    if math.isinf(value):
        return f"here d u = {depth * u:.3g} < 1: the bound is finite"
    abs_sum = float(np.sum(np.abs(np.asarray(x, np.float64))))
    near = {
        "the bound grows with sum|x|, not with |sum x|: cancellation does not cancel rounding errors":
            _gamma(depth) * abs(float(np.sum(x, dtype=np.float64))),
        "u is the unit roundoff of float32, 2^-24 (half of machine epsilon 2^-23)":
            2 * depth * u / (1 - 2 * depth * u) * abs_sum if 2 * depth * u < 1 else math.inf,
        "gamma_d = d u / (1 - d u): the denominator matters once d u is not tiny": depth * u * abs_sum,
    }
    right = _gamma(depth) * abs_sum
    for hint, candidate in near.items():
        if (math.isfinite(candidate) and np.isclose(value, candidate, rtol=SAME, atol=0)
                and not np.isclose(candidate, right, rtol=SAME, atol=0)):
            return hint
    return "the bound is gamma_d * sum|x| with gamma_d = d u / (1 - d u) and u = 2^-24"


def solution_tolerance(x, depth):
    du = depth * 2.0**-24
    if du >= 1:
        return math.inf
    return du / (1 - du) * float(np.sum(np.abs(np.asarray(x, np.float64))))


# ----------------------------------------------------------------------------- exercise 4

PREDICT_VARIANTS = ("vec4_last_block", lesson.CUPY)
PREDICT_SIZES = (2**20, 2**22, 2**24, 2**26, 2**28)
PREDICT_TOLERANCE = 0.10  # the model's own largest error over these sizes is 7.2% (cupy.sum)


def check_predicted_time(predicted_us) -> object:
    """``predicted_us(n, t0_us, bw_gbps)``: the launch model's time of one sum of n float32, in us.
    Given each variant's t0 and BW fitted on the H200 recording, it must come within 10% of the
    recorded median time at every size from 2^20 to 2^28 (every second power of two)."""
    name = "exercise 4 (predict a time)"

    def attempt():
        recorded = lessons.load(lesson.NAME, live=False)
        fits = lesson.launch_model(recorded, list(PREDICT_VARIANTS)).set_index("variant")
        table = lesson.sweep_rows(recorded)
        for variant in PREDICT_VARIANTS:
            t0_us, bw_gbps = float(fits.loc[variant, "t0_us"]), float(fits.loc[variant, "bw_gbps"])
            rows = table[table["variant"] == variant].set_index("size")
            for n in PREDICT_SIZES:
                got = predicted_us(n, t0_us, bw_gbps)
                if got is None:
                    return report(name, False, "return a time in microseconds")
                measured = 1e3 * float(rows.loc[n, "median_ms"])
                error = float(got) / measured - 1
                if not abs(error) <= PREDICT_TOLERANCE:
                    return report(name, False, f"{variant} at n = 2^{n.bit_length() - 1}: you predict "
                                  f"{float(got):.4g} us, the H200 took {measured:.4g} us ({error:+.0%}; "
                                  f"allowed +-{PREDICT_TOLERANCE:.0%}); {_time_hint(got, n, t0_us, bw_gbps)}")
        return report(name, True, f"within {PREDICT_TOLERANCE:.0%} of the recorded time of "
                      f"{' and '.join(PREDICT_VARIANTS)} at 2^20, 2^22, ..., 2^28 elements")

    return guarded(name, attempt)


def _time_hint(got, n: int, t0_us: float, bw_gbps: float) -> str:
    """Which part of t0 + 4n / BW a wrong prediction got wrong (each hint true where it is given)."""
    right = solution_predicted_time(n, t0_us, bw_gbps)
    bytes_us = 4 * n / (bw_gbps * 1e3)
    near = {
        "a call costs t0 however few bytes it reads: add it": bytes_us,
        "a float32 is 4 bytes: the sum reads 4n bytes": t0_us + n / (bw_gbps * 1e3),
        "t0 is already in microseconds": 1e3 * t0_us + bytes_us,
        "1 GB/s is 10^3 bytes per microsecond": t0_us + 4 * n / bw_gbps,
    }
    for hint, candidate in near.items():
        if (np.isclose(float(got), candidate, rtol=1e-6, atol=0)
                and not np.isclose(candidate, right, rtol=1e-3)):
            return hint
    return "t = t0 + (bytes read) / (bandwidth), with t0 in us and the bandwidth in GB/s (10^3 bytes per us)"


def solution_predicted_time(n, t0_us, bw_gbps):
    return t0_us + 4 * n / (bw_gbps * 1e3)  # 4n bytes at bw_gbps x 10^9 bytes/s, in microseconds
