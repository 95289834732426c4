"""Exercises of lesson 2 (Little's Law): their checks and reference solutions.

1. Predict a copy's bandwidth from its bytes in flight with Little's Law, checked against the
   formula, then used with the latency the lightest recorded copies imply to predict a heavier one,
   checked against the bandwidth recorded on the GPU for that launch shape.
2. Occupancy by hand: blocks per SM and the limiting resource for two kernels, checked against the
   occupancy calculator (which agrees with the driver: see the lesson).
3. Two loads in flight per thread: finish the notes' unrolled copy, checked against NumPy and the
   simulator's traffic counter (two load instructions per thread, both before the stores, each a
   warp's 32 consecutive floats).
4. How many independent FMA chains reach the peak at 8 warps per SM, from the recorded FMA latency.
"""

from __future__ import annotations

import math

import numpy as np
from numba import cuda

from .. import occupancy as occ
from ..kernels import littles_law as k
from ..lessons import littles_law as lesson
from ..results import LessonResult, read_result
from ..sim import trace
from . import guarded, report

# ----------------------------------------------------------------------------- exercise 1

PREDICT_VARIANT = "copy w4 u1"  # 4-byte loads, one per thread
PREDICT_WARPS = 16  # resident warps per SM
PREDICT_TOLERANCE = 0.25  # how far a Little's Law prediction may be from the measurement


def recorded_point(result: LessonResult | None = None, variant: str = PREDICT_VARIANT,
                   warps: int = PREDICT_WARPS) -> dict:
    """The measurement the prediction is held to (``result``: default, the reference recording), with
    the model's inputs: the latency is the one the lightest copies imply (calibrated on them; this
    point is not one of them)."""
    result = result or read_result(lesson.NAME)
    points = lesson.memory_points(result)
    row = points[(points["variant"] == variant) & (points["warps_per_sm"] == warps)].iloc[0]
    return {"gbps": float(row["gbps"]), "latency_ns": points.attrs["light_load_latency_ns"],
            "sms": points.attrs["sms"], "ceiling_gbps": points.attrs["ceiling_gbps"],
            "provenance": result.provenance}


def check_predict_bandwidth(predict, result: LessonResult | None = None) -> object:
    """``predict(warps_per_sm, loads_per_thread, bytes_per_load, latency_ns, sms, ceiling_gbps)``
    returns the copy bandwidth (GB/s, reads + writes) Little's Law predicts; held to the formula, then
    to a copy of ``result`` (default: the reference recording)."""
    name = "exercise 1 (bandwidth from bytes in flight)"

    def attempt():
        rng = np.random.default_rng()
        for _ in range(100):
            args = (int(rng.integers(1, 65)), int(rng.integers(1, 9)), int(rng.choice([4, 8, 16])),
                    float(rng.uniform(200, 1500)), int(rng.integers(1, 200)), float(rng.uniform(500, 9000)))
            expected = float(k.littles_law_gbps(k.bytes_in_flight_per_sm(*args[:3]), *args[3:]))
            got = predict(*args)
            if got is None or not np.isclose(float(got), expected, rtol=1e-6):
                return report(name, False, f"predict{args} gave {got}; Little's Law gives "
                              f"{expected:,.1f} GB/s "
                              "(read bytes in flight per SM x SMs / latency, as many bytes written, "
                              "at most the ceiling)")
        point = recorded_point(result)
        width, unroll = (lesson.parse_variant(PREDICT_VARIANT)[key] for key in ("width", "unroll"))
        mine = float(predict(PREDICT_WARPS, unroll, width, point["latency_ns"], point["sms"],
                             point["ceiling_gbps"]))
        error = point["gbps"] / mine - 1
        message = (f"{PREDICT_VARIANT} at {PREDICT_WARPS} warps/SM, at the light-load latency of "
                   f"{point['latency_ns']:,.0f} ns: you predict {mine:,.0f} GB/s, the GPU measured "
                   f"{point['gbps']:,.0f} ({error:+.0%}; {point['provenance']})")
        return report(name, abs(error) <= PREDICT_TOLERANCE, message)

    return guarded(name, attempt)


def solution_predict_bandwidth(warps_per_sm, loads_per_thread, bytes_per_load, latency_ns, sms, ceiling_gbps):
    in_flight = warps_per_sm * 32 * loads_per_thread * bytes_per_load  # read bytes per SM
    return min(ceiling_gbps, 2 * in_flight * sms / latency_ns)  # bytes/ns = GB/s; x2: the writes


# ----------------------------------------------------------------------------- exercise 2

OCCUPANCY_CASES = {  # name: (threads per block, registers per thread, shared bytes per block)
    "256 threads, 72 registers": (256, 72, 0),
    "256 threads, 32 registers, 40 KiB shared": (256, 32, 40 * 1024),
}


def check_occupancy_by_hand(answer) -> object:
    """``answer()`` returns {case name: (blocks per SM, limiting resource)} for OCCUPANCY_CASES."""
    name = "exercise 2 (occupancy by hand)"

    def attempt():
        given = answer()
        if not isinstance(given, dict) or set(given) != set(OCCUPANCY_CASES):
            return report(name, False, "return a dict with one (blocks, limiter) per case: "
                          f"{list(OCCUPANCY_CASES)}")
        wrong = []
        for case, shape in OCCUPANCY_CASES.items():
            expected = lesson.calculated_occupancy(*shape, occ.sm_limits())
            blocks, limiter = given[case]
            if blocks != expected.blocks_per_sm:
                wrong.append(f"{case}: {blocks} blocks per SM is not it")
            elif str(limiter) != expected.limiter:
                wrong.append(f"{case}: {blocks} blocks is right, but {limiter!r} is not what limits it")
        if wrong:
            return report(name, False, "; ".join(wrong) + " (limiters: " + ", ".join(occ.LIMITERS) + ")")
        return report(name, True, "; ".join(f"{case}: {lesson.calculated_occupancy(*shape, occ.sm_limits())}"
                                            for case, shape in OCCUPANCY_CASES.items()))

    return guarded(name, attempt)


def solution_occupancy_by_hand() -> dict:
    # 72 x 32 = 2304 registers per warp (a multiple of 256); 16,384 per sub-partition hold 7 warps:
    # 28 warps per SM, 3 blocks of 8 warps. 40 KiB + 1 KiB reserved = 41 KiB; 228 KiB / 41 KiB = 5.
    return {"256 threads, 72 registers": (3, "registers"),
            "256 threads, 32 registers, 40 KiB shared": (5, "shared memory")}


# ----------------------------------------------------------------------------- exercise 3

COPY2_N = 1027  # not a multiple of the block, nor of 2 x the block
COPY2_BLOCK = 64


def check_copy2_kernel(kernel) -> object:
    """``kernel(x, out)``: each thread copies elements i and i + blockDim.x of its block's share of
    2 x blockDim.x elements, loading both before storing either; launched on ceil(n / 128) blocks."""
    name = "exercise 3 (two loads in flight per thread)"

    def attempt():
        x = np.random.default_rng().standard_normal(COPY2_N, dtype=np.float32)
        out = np.full(COPY2_N, np.nan, np.float32)
        blocks = -(-COPY2_N // (2 * COPY2_BLOCK))
        kernel[blocks, COPY2_BLOCK](x, out)
        if np.isnan(out).any():
            return report(name, False, f"{int(np.isnan(out).sum())} of {COPY2_N} outputs never written "
                          f"(the launch has {blocks} blocks of {COPY2_BLOCK}: two elements per thread)")
        if not np.array_equal(out, x):
            worst = int(np.flatnonzero(out != x)[0])
            return report(name, False, f"out[{worst}] = {out[worst]}, expected x[{worst}] = {x[worst]}")
        counts = trace.trace(kernel, 1, COPY2_BLOCK, x[:2 * COPY2_BLOCK].copy(), out[:2 * COPY2_BLOCK].copy())
        table = counts.by_instruction
        loads = table[(table["op"] == "ld") & (table["array"] == "x")]
        if len(loads) < 2:
            return report(name, False, f"each thread issues {len(loads)} load instruction(s) from x: "
                          "write two loads (two independent requests in flight)")
        scattered = loads[loads["sectors_per_request"] > 4]
        if len(scattered):
            first = scattered.iloc[0]
            return report(name, False, f"`{first['source']}`: a warp's load touches "
                          f"{first['sectors_per_request']:g} sectors, not 4: keep the 32 lanes of a warp "
                          "on 32 consecutive floats (the thread's second element is blockDim.x further)")
        early = stores_before_last_load(counts.accesses)
        if early:
            return report(name, False, f"{early} of {COPY2_BLOCK} threads store before their second load: "
                          "that load waits behind the first (one request in flight at a time); load both "
                          "elements into variables first, then store them")
        return report(name, True, f"{COPY2_N} elements match NumPy; {len(loads)} load instructions per "
                      "thread, so each warp has two requests in flight before its first store")

    return guarded(name, attempt)


def _copy2(x, out):
    step = cuda.blockDim.x
    i0 = cuda.blockIdx.x * 2 * step + cuda.threadIdx.x
    i1 = i0 + step
    if i1 < x.size:
        a = x[i0]  # both loads first: their waits overlap
        b = x[i1]
        out[i0] = a
        out[i1] = b
    elif i0 < x.size:
        out[i0] = x[i0]


solution_copy2_kernel = cuda.jit(_copy2)


def stores_before_last_load(accesses) -> int:
    """How many threads store before their last load (``trace(...).accesses``: each thread's global
    accesses in the order it made them)."""
    acc = accesses.reset_index(drop=True)
    acc["position"] = acc.groupby(["warp", "lane"]).cumcount()
    last_load = acc[acc["store"] == 0].groupby(["warp", "lane"])["position"].max()
    first_store = acc[acc["store"] == 1].groupby(["warp", "lane"])["position"].min()
    both = first_store.index.intersection(last_load.index)
    return int((first_store[both] < last_load[both]).sum())


# ----------------------------------------------------------------------------- exercise 4

FMA_WARPS = 8


def check_chains_for_peak(answer, result: LessonResult | None = None) -> object:
    """``answer(latency_cycles, warps_per_sm)`` returns the fewest independent FMA chains per thread
    that keep all 4 schedulers issuing every cycle (the model of the lesson); then placed on the FMA
    latency and rates of ``result`` (default: the reference recording)."""
    name = "exercise 4 (chains for the FMA peak)"

    def attempt():
        for latency in (4.0, 4.5, 6.0, 10.0, 24.0):
            for warps in (4, 8, 16, 32):
                expected = math.ceil(latency * 4 / warps - 1e-9)
                got = answer(latency, warps)
                if got != expected:
                    return report(name, False, f"answer({latency}, {warps}) = {got}; each scheduler has "
                                  f"{warps // 4} warp(s) and needs {latency:g} FMAs in flight")
        data = result or read_result(lesson.NAME)
        cycles = lesson.latency(data, "FMA", unit="cycles")
        chains = answer(cycles, FMA_WARPS)
        points = lesson.fma_points(data)
        measured = points[(points["warps_per_sm"] == FMA_WARPS)].set_index("chains")["fraction_of_peak"]
        near = measured.index[np.argmin(np.abs(measured.index - chains))]
        return report(name, True, f"at the recorded FMA latency of {cycles:.2f} cycles the model needs "
                      f"{chains} chains at {FMA_WARPS} warps/SM; the H200 measured {measured[near]:.0%} of "
                      f"the peak with {near} (section 3 says why the model is optimistic there)")

    return guarded(name, attempt)


def solution_chains_for_peak(latency_cycles, warps_per_sm):
    warps_per_scheduler = warps_per_sm / 4
    return math.ceil(latency_cycles / warps_per_scheduler - 1e-9)
