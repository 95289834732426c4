"""Exercises of lesson 1 (roofline): their checks and reference solutions.

1. Arithmetic intensity of SAXPY, ``y[i] = a * x[i] + y[i]``, checked against the bytes the
   simulator's traffic counter sees the kernel move and the FLOPs it does.
2. Using the roof: the fewest FMAs per element that reach a share of the FP32 ceiling.
3. A kernel of given intensity: finish a kernel doing 4 FMAs per element, checked bit for bit against NumPy
   on sizes that are not a multiple of the block (one the lesson does not name), one load and one store
   per element, also in blocks of 96 and on 5,000 elements. Exercises 1, 2 and 4 refuse a function that calls
   the check's counter or a reference solution; exercise 4 also one that reads a recording.
4. Predict a time from the model: fma_intensity's time from the ceilings, checked against the H200's
   recorded times at two k whose times the lesson does not print, and against the model on made-up GPUs.
"""

from __future__ import annotations

import math
import sys

import numpy as np
import pandas as pd
from numba import cuda

from .. import lessons
from ..kernels import roofline as k
from ..lessons import roofline as lesson
from ..results import LessonResult
from ..sim import fma, trace
from . import guarded, report
from .reach import reaches
from .refuse import own_data, recording_readers, refused

# ----------------------------------------------------------------------------- exercise 1


@cuda.jit
def saxpy(a, x, y):
    i = cuda.grid(1)
    if i < y.size:
        y[i] = a * x[i] + y[i]


SAXPY_N = 1000  # small enough for the simulator, not a multiple of the block


def saxpy_counted_bytes(n: int = SAXPY_N) -> int:
    """Bytes SAXPY moves, as the traffic counter sees it: 32-byte sectors of loads and stores."""
    x = np.random.default_rng().standard_normal(n, dtype=np.float32)
    y = np.random.default_rng().standard_normal(n, dtype=np.float32)
    blocks = -(-n // k.THREADS_PER_BLOCK)
    counts = trace.trace(saxpy, blocks, k.THREADS_PER_BLOCK, np.float32(2.0), x, y)
    totals = counts.totals
    sectors = (totals["l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum"]
               + totals["l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum"])
    return 32 * sectors


def check_saxpy_intensity(answer) -> object:
    """``answer()`` returns SAXPY's FLOPs per byte (float32, each array read or written once)."""
    name = "exercise 1 (SAXPY intensity)"

    def attempt():
        no = refused(name, [answer], sys.modules[__name__], helpers=[
            (saxpy_counted_bytes, "exercises.saxpy_counted_bytes, the check's own traffic counter"),
            (trace.trace, "the traffic counter (trace)")],
            why="the exercise is to count the FLOPs and the bytes yourself")
        if no:
            return no
        value = answer()
        if value is None:
            return report(name, False, "return a number: FLOPs divided by bytes moved")
        counted = 2 * SAXPY_N / saxpy_counted_bytes()
        if abs(float(value) - counted) > 0.01 * counted:  # three significant digits are enough
            return report(name, False, f"{float(value):.4f} FLOP/byte; count the FLOPs of one FMA "
                          "and the bytes of every array read or written")
        return report(name, True, f"{float(value):.4f} FLOP/byte: the traffic counter saw "
                      f"{saxpy_counted_bytes() // SAXPY_N} bytes per element, for 2 FLOPs")

    return guarded(name, attempt)


def solution_saxpy_intensity() -> float:
    return 2 / (4 + 4 + 4)  # one FMA = 2 FLOP; read x, read y, write y


# ----------------------------------------------------------------------------- exercise 2

SHARES = (0.5, 0.9, 0.99)


def check_fmas_for_share(fmas_for_share) -> object:
    """``fmas_for_share(share, bandwidth_gbps, peak_gflops)``: the fewest FMAs per element k with
    which fma_intensity (2k FLOP per 8 bytes) can reach ``share`` of the FP32 ceiling, by the model."""
    name = "exercise 2 (FMAs for a share of the peak)"

    def attempt():
        no = refused(name, [fmas_for_share], sys.modules[__name__],
                     helpers=[(_fewest_fmas, "exercises._fewest_fmas, the check's own answer")])
        if no:
            return no
        rng = np.random.default_rng()
        cases = [(share, 4270.0, 64304.0) for share in SHARES]  # the H200's measured roof
        cases.append((0.5, 4000.0, 64000.0))  # a whole-number ratio: the roof meets the share exactly
        cases += [(float(rng.uniform(0.1, 1.0)), float(rng.uniform(200, 8000)), float(rng.uniform(2e3, 1e5)))
                  for _ in range(50)]
        for share, bandwidth, peak in cases:
            expected = _fewest_fmas(share, bandwidth, peak)
            got = fmas_for_share(share, bandwidth, peak)
            if got is None or int(got) != got or int(got) != expected:
                return report(name, False, f"for {share:.0%} of {peak:,.0f} GFLOP/s at {bandwidth:,.0f} GB/s "
                              f"you gave {got}, which is not it: find the smallest whole k whose roof (at "
                              "fma_intensity's intensity for k) reaches that share of the peak; each element "
                              "moves 8 bytes; a k that falls short is too small")
        fmas = _fewest_fmas(0.9, 4270.0, 64304.0)
        return report(name, True, f"on the H200's measured roof: {fmas} FMAs per element for 90% of the "
                      "peak, and right on 50 random ceilings too")

    return guarded(name, attempt)


def fma_family_intensity(fmas: int) -> float:
    return 2 * fmas / 8


def _fewest_fmas(share: float, bandwidth: float, peak: float) -> int:
    k = max(1, math.ceil(4 * share * peak / bandwidth - 1e-9))
    def reached(fmas):
        return float(lesson.attainable_gflops(fma_family_intensity(fmas), bandwidth, peak)) >= share * peak

    while not reached(k):
        k += 1
    return k


def solution_fmas_for_share(share, bandwidth_gbps, peak_gflops):
    # roof = min(peak, bandwidth * I) with I = 2k / 8: reach share * peak when bandwidth * k / 4 does
    return max(1, math.ceil(4 * share * peak_gflops / bandwidth_gbps))


# ----------------------------------------------------------------------------- exercise 3

EXERCISE_FMAS = 4


TRAFFIC_N = 512  # a whole number of sectors: bytes per element come out exact
FMA4_SIZES = (1027, 1300)  # the size the lesson names, one it does not; a third is drawn on each run
# review R12d: a block size written into the index (blockIdx.x * 256) and a bound written in (i < 2048)
# passed when every launch had blocks of 256 and at most 2,000 elements: blocks of 96, and 5,000 elements
FMA4_OTHER_BLOCK = 96
FMA4_LARGE = 5000
STORES_N = 300  # fewer elements than the 512 threads launched: each element stored once, not twice


def check_fma4_kernel(kernel) -> object:
    """``kernel(x, y, a, b)``: y[i] = 4 chained FMAs v = v*a + b starting from x[i], any length (1,027
    elements, 1,300, a size drawn on each run and 5,000, in blocks of 256, and 1,027 in blocks of 96); y bit
    for bit the fourth FMA's result (a closed form of the chain rounds differently); and it moves 8 bytes
    per element (x read once, y written once: counted by the traffic counter, and per element on a launch
    of more threads than elements)."""
    name = "exercise 3 (a kernel of intensity 1 FLOP/byte)"

    def attempt():
        no = refused(name, [kernel], sys.modules[__name__])
        if no:
            return no
        rng = np.random.default_rng()
        second = int(rng.integers(1100, 2000))
        while second % k.THREADS_PER_BLOCK == 0:
            second += 1
        right_at = []
        launches = [(n, k.THREADS_PER_BLOCK) for n in (*FMA4_SIZES, second, FMA4_LARGE)]
        for n, block in [*launches[:3], (FMA4_SIZES[0], FMA4_OTHER_BLOCK), launches[3]]:
            x = rng.standard_normal(n, dtype=np.float32)
            y = np.full(n, np.nan, np.float32)
            kernel[-(-n // block), block](x, y, k.FMA_A, k.FMA_B)
            expected = k.fma_chain_reference(x, EXERCISE_FMAS)
            wrong = np.isnan(y) | ~np.isclose(y, expected, rtol=1e-6, atol=1e-6)
            if right_at and wrong.any() and block != k.THREADS_PER_BLOCK:
                return report(name, False, f"right in blocks of {k.THREADS_PER_BLOCK}, wrong in blocks of "
                              f"{block}: is a block size written into your index? Use cuda.grid(1) (or "
                              "cuda.blockDim.x)")
            if right_at and wrong.any():
                return report(name, False, f"right at {right_at[0]:,} elements, wrong at {n:,} (the lesson "
                              "names only the first): are sizes written in (or a bound on i)? Use x.size")
            if np.isnan(y).any():
                return report(name, False, f"{int(np.isnan(y).sum())} of {n} outputs never written: does "
                              "every thread with i < x.size write y[i]?")
            if wrong.any():
                worst = int(np.argmax(np.abs(y - expected)))
                return report(name, False, f"y[{worst}] = {y[worst]:.6f} is not what four chained FMAs give: "
                              "y must be four chained v = cuda.fma(v, a, b) starting from x[i] (count them, "
                              "keep the operands in that order)")
            if not np.array_equal(y.view(np.uint32), expected.view(np.uint32)):
                return report(name, False, f"{int((y != expected).sum())} of {n} outputs are close to four "
                              "chained FMAs but not bit for bit: store the fourth cuda.fma's result itself "
                              "(a closed form of the chain, v * a + b, or arithmetic beside the FMAs rounds "
                              "differently)")
            if block == k.THREADS_PER_BLOCK:
                right_at.append(n)
        with fma.counted() as calls:
            moved = _traced_bytes(kernel) / TRAFFIC_N
        if calls[0] != EXERCISE_FMAS * TRAFFIC_N:
            return report(name, False, f"the values are right, but the simulator saw "
                          f"{calls[0] / TRAFFIC_N:g} cuda.fma calls per element: do the FLOPs, one cuda.fma "
                          "per step of the chain, not a closed form of it")
        if moved != 8:
            return report(name, False, f"the values are right, but the traffic counter sees {moved:g} bytes "
                          "per element, not 8: keep v in a register (read x[i] once, write y[i] once)")
        loads, stores = _accesses_per_element(kernel)
        if (loads != 1).any() or (stores != 1).any():
            return report(name, False, f"on {STORES_N} elements launched as {2 * k.THREADS_PER_BLOCK} "
                          f"threads, {int((stores != 1).sum())} elements were stored and "
                          f"{int((loads != 1).sum())} loaded other than once: only threads with i < x.size "
                          "may touch x and y, each its own element once")
        sizes = ", ".join(f"{n:,}" for n in right_at)
        return report(name, True, f"{sizes} elements (and blocks of {FMA4_OTHER_BLOCK}) match NumPy bit for "
                      "bit, and the traffic counter sees "
                      "8 bytes per element (one load, one store) for 8 FLOPs: I = 1 FLOP/byte")

    return guarded(name, attempt)


def _traced_bytes(kernel) -> int:
    x = np.random.default_rng(1).standard_normal(TRAFFIC_N, dtype=np.float32)
    counts = trace.trace(kernel, TRAFFIC_N // k.THREADS_PER_BLOCK, k.THREADS_PER_BLOCK, x,
                         np.zeros(TRAFFIC_N, np.float32), k.FMA_A, k.FMA_B)
    sectors = (counts.totals["l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum"]
               + counts.totals["l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum"])
    return 32 * sectors


def _accesses_per_element(kernel) -> tuple[np.ndarray, np.ndarray]:
    """Loads of x and stores of y per element, on STORES_N elements launched as two blocks (more threads
    than elements: a kernel that wraps its index or skips the bounds check touches some twice)."""
    x = np.random.default_rng(2).standard_normal(STORES_N, dtype=np.float32)
    counts = trace.trace(kernel, 2, k.THREADS_PER_BLOCK, x, np.zeros(STORES_N, np.float32), k.FMA_A, k.FMA_B)
    acc, sites = counts.accesses, counts.sites

    def per_element(array, op):
        chosen = sites[(sites["array"] == array) & (sites["op"] == op)]["site"]
        hits = acc[acc["site"].isin(chosen)]
        return np.bincount((hits["address"] // 4).astype(int), minlength=STORES_N)[:STORES_N]

    return per_element("x", "ld"), per_element("y", "st")


@cuda.jit
def solution_fma4_kernel(x, y, a, b):
    i = cuda.grid(1)
    if i < x.size:
        v = x[i]
        for _ in range(4):  # EXERCISE_FMAS
            v = cuda.fma(v, a, b)
        y[i] = v


# ----------------------------------------------------------------------------- exercise 4

# (k, tolerance): two k the lesson does not print, held to the H200's recorded times: memory-bound
# within 5% (the model is 0.7% under), compute-bound within 12% (9.2% under at k = 512)
PREDICT = ((4, 0.05), (512, 0.12))
MODEL_CASES = 40  # made-up sizes, k and ceilings: the prediction must follow the roofline on any roof
MODEL_TOLERANCE = 0.01


def check_predicted_time(predicted_ms) -> object:
    """``predicted_ms(elements, fmas_per_element, bandwidth_gbps, peak_gflops)``: the roofline's time
    for fma_intensity. Held to the recorded H200 times at two k whose times the lesson does not print
    (it plots them), and to the model itself on made-up sizes, k and ceilings (no time can be copied
    from the lesson)."""
    name = "exercise 4 (predict a time)"

    def attempt():
        no = refused(name, [predicted_ms], sys.modules[__name__], helpers=[
            (lesson.time_budget, "roofline.time_budget, the lesson's own time model"),
            (lesson.attainable_gflops, "roofline.attainable_gflops, the lesson's roof")])
        if no:
            return no
        # review R12d: the recorded times could be looked up, by a reader or from a table loaded beforehand
        read = next((what for reader, what in recording_readers() if reaches(predicted_ms, reader)), None)
        if read:
            return report(name, False, f"your function calls {read}: the exercise is to predict the time "
                          "from the ceilings you are given, not to look it up")
        own = own_data(predicted_ms, (LessonResult, pd.DataFrame, pd.Series))
        if own:
            return report(name, False, f"your function reads a recording or a table of its own ({own[0]}): "
                          "the exercise is to predict the time from the ceilings you are given, not to look "
                          "it up")
        result = lessons.load("roofline", live=False)
        roof = lessons.roof(gpu=result.gpu)  # the recording's own GPU's roof, on any device
        rows = result.table[result.table["variant"] == "fma_intensity"].set_index("param")
        for fmas, tolerance in PREDICT:
            row = rows.loc[float(fmas)]
            got = predicted_ms(int(row["size"]), fmas, roof["bandwidth_gbps"], roof["peak_gflops"])
            if got is None or not np.isfinite(float(got)) or float(got) <= 0:
                return report(name, False, f"predicted_ms(...) gave {got}: return a time in milliseconds")
            if abs(float(row["median_ms"]) / float(got) - 1) > tolerance:
                return report(name, False, f"at k = {fmas} on {int(row['size']):,} elements and the H200's "
                              f"ceilings your time is not within {tolerance:.0%} of the H200's; "
                              + _time_hint(fmas, roof))
        rng = np.random.default_rng()
        for _ in range(MODEL_CASES):
            elements, fmas = int(rng.integers(10**5, 10**9)), int(rng.integers(1, 4097))
            bandwidth, peak = float(rng.uniform(300, 8000)), float(rng.uniform(3e3, 1.2e5))
            got = predicted_ms(elements, fmas, bandwidth, peak)
            if got is None or not np.isfinite(float(got)) or float(got) <= 0:
                return report(name, False, f"predicted_ms({elements}, {fmas}, {bandwidth:.0f}, {peak:.0f}) "
                              f"gave {got}: return a time in milliseconds")
            model = solution_predicted_time(elements, fmas, bandwidth, peak)
            if abs(float(got) / model - 1) > MODEL_TOLERANCE:
                return report(name, False, f"on a made-up GPU ({bandwidth:,.0f} GB/s, {peak:,.0f} GFLOP/s), "
                              f"{elements:,} elements with k = {fmas}: your time does not follow the "
                              "roofline. Use the ceilings you are given, count the bytes and the FLOPs (2 "
                              "per FMA), and the roofline's time is set by one limit, not a sum")
        return report(name, True, f"within {PREDICT[0][1]:.0%} at k = {PREDICT[0][0]} (memory-bound) and "
                      f"{PREDICT[1][1]:.0%} at k = {PREDICT[1][0]} (compute-bound) of the H200's recorded "
                      f"times, and the roofline's time on {MODEL_CASES} made-up GPUs")

    return guarded(name, attempt)


def _time_hint(fmas: int, roof: dict) -> str:
    if 2 * fmas / 8 < roof["peak_gflops"] / roof["bandwidth_gbps"]:
        return (f"at k = {fmas} the kernel is memory-bound: its time is set by the bytes it reads and "
                "writes and the bandwidth ceiling you are given")
    return (f"at k = {fmas} it is compute-bound: its time is set by its FLOPs (2 per FMA) and the FP32 "
            "ceiling you are given")


def solution_predicted_time(elements, fmas_per_element, bandwidth_gbps, peak_gflops):
    memory_ms = 8 * elements / (bandwidth_gbps * 1e9) * 1e3  # 4 bytes read + 4 written per element
    compute_ms = 2 * fmas_per_element * elements / (peak_gflops * 1e9) * 1e3
    return max(memory_ms, compute_ms)
