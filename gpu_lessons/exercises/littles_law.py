"""Exercises of lesson 2 (Little's Law): their checks and reference solutions.

1. Predict two copies' bandwidth the lesson does not print from Little's Law, choosing the latency
   (the pointer chase's, the one light copies imply, or one under load), checked against the recording
   within 15%: one copy below the knee, but not among the light copies that define the light-load
   latency, and one past it (the ceiling caps the law).
2. Occupancy by hand: blocks per SM and the limiting resource for two kernels whose answers hinge on the
   register allocation unit and the shared-memory reservation, checked against the occupancy calculator
   on the H200's recorded SM limits (the calculator agrees with the driver: see the deep dive).
3. Two loads in flight per thread: a copy unrolled as the notes unroll ``c = a*b + c``, checked
   against NumPy and the simulator's traffic counter (two loads per thread, counted per execution,
   both before the stores, each a warp's 32 consecutive floats).
4. How many independent FMA chains reach the peak at 16 warps per SM: the model's answer from the
   recorded FMA latency, and the measured answer read from the recording (90% of the peak); the lesson
   works the same question at 8 warps per SM.
"""

from __future__ import annotations

import math

import numpy as np
from numba import cuda

from .. import occupancy as occ
from ..lessons import littles_law as lesson
from ..results import LessonResult, RecordingError, read_result
from ..sim import trace
from . import guarded, report

# ----------------------------------------------------------------------------- exercise 1

# Two copies the lesson does not print: one 16-byte load per thread at 4 warps/SM (2 KiB of reads in
# flight per SM: below the knee, not one of the light copies whose median gives the light-load latency),
# and four 8-byte loads at 32 warps/SM (32 KiB: past the knee, where the ceiling caps the law).
PREDICT_SHAPES = (("copy w16 u1", 4), ("copy w8 u4", 32))  # (variant, resident warps per SM)
# The light-load latency predicts both within it (-11%, -4%); the chase's misses the first by -48%, the
# latency under load of the fastest copy below the knee (783 ns) by +19%, its most (1,021 ns) by +55%.
PREDICT_TOLERANCE = 0.15


def recorded_shape(result: LessonResult, variant: str, warps: int) -> dict:
    """A copy of ``result`` the prediction is held to: its launch shape, bytes in flight per SM and GB/s."""
    points = lesson.memory_points(result)
    rows = points[(points["variant"] == variant) & (points["warps_per_sm"] == warps)]
    if rows.empty:
        raise RecordingError(f"{result.source}: no '{variant}' row at {warps} warps/SM")
    f = lesson.parse_variant(variant)
    return {"variant": variant, "warps_per_sm": warps, "loads_per_thread": f["unroll"],
            "bytes_per_load": f["width"],
            "bytes_in_flight_per_sm": float(rows["bytes_in_flight_per_sm"].iloc[0]),
            "gbps": float(rows["gbps"].iloc[0]), "sms": points.attrs["sms"]}


def check_predict_bandwidth(predict, result: LessonResult | None = None) -> object:
    """``predict(result, warps_per_sm, loads_per_thread, bytes_per_load)`` returns the copy bandwidth
    (GB/s, reads + writes) Little's Law predicts from what ``result`` measured; held to ``result``'s
    own measurements of PREDICT_SHAPES (default: the reference recording), within PREDICT_TOLERANCE.
    The learner chooses the latency."""
    name = "exercise 1 (predict a copy's bandwidth)"

    def attempt():
        data = result or read_result(lesson.NAME)
        lines, passed, over = [], True, []
        for variant, warps in PREDICT_SHAPES:
            shape = recorded_shape(data, variant, warps)
            got = predict(data, warps, shape["loads_per_thread"], shape["bytes_per_load"])
            if got is None or not np.isfinite(float(got)) or float(got) <= 0:
                return report(name, False, f"predict(result, {warps}, {shape['loads_per_thread']}, "
                              f"{shape['bytes_per_load']}) gave {got}: return GB/s, a positive number")
            mine = float(got)
            error = shape["gbps"] / mine - 1
            if mine > data_ceiling(data) * 1.001:
                over.append(describe_shape(shape))
            implied = 2 * shape["bytes_in_flight_per_sm"] * shape["sms"] / mine
            passed &= abs(error) <= PREDICT_TOLERANCE
            lines.append(f"{describe_shape(shape)}: you predict {mine:,.0f} GB/s, measured "
                         f"{shape['gbps']:,.0f} ({error:+.0%}; your number implies a latency of "
                         f"{implied:,.0f} ns)")
        summary = "; ".join(lines) + f" ({data.provenance})"
        if passed:
            return report(name, True, summary + f": within {PREDICT_TOLERANCE:.0%} of both")
        capped = (f" No copy beats the ceiling ({data_ceiling(data):,.0f} GB/s), yet you predict more for "
                  f"{' and '.join(over)}." if over else "")
        return report(name, False, summary + f". Allowed: within {PREDICT_TOLERANCE:.0%}.{capped} Little's "
                      "Law: GB/s = 2 (reads and writes) x read bytes in flight per SM x SMs / latency in ns, "
                      "at most the ceiling; the lesson met more than one latency: which one does a copy at "
                      "this load see?")

    return guarded(name, attempt)


def data_ceiling(result: LessonResult) -> float:
    return lesson.copy_ceiling(result)


def describe_shape(shape: dict) -> str:
    """'copy w8 u2 at 4 warps/SM (2 KiB of reads in flight per SM)'."""
    kib = shape["bytes_in_flight_per_sm"] / 1024
    size = f"{kib:g} KiB" if kib >= 1 else f"{shape['bytes_in_flight_per_sm']:.0f} B"
    return f"{shape['variant']} at {shape['warps_per_sm']} warps/SM ({size} of reads in flight per SM)"


def solution_predict_bandwidth(result, warps_per_sm, loads_per_thread, bytes_per_load):
    sweep = lesson.sweep_points(result)
    latency_ns = sweep.attrs["light_load_latency_ns"]  # what light copies see, not one load alone
    in_flight = warps_per_sm * 32 * loads_per_thread * bytes_per_load  # read bytes per SM
    # bytes/ns = GB/s; x2: the writes
    return min(sweep.attrs["ceiling_gbps"], 2 * in_flight * sweep.attrs["sms"] / latency_ns)


# ----------------------------------------------------------------------------- exercise 2

OCCUPANCY_CASES = {  # name: (threads per block, registers per thread, shared bytes per block)
    "128 threads, 33 registers": (128, 33, 0),
    "256 threads, 32 registers, 45 KiB shared": (256, 32, 45 * 1024),
}
OCCUPANCY_HINT = ("registers are allocated per warp in units of 256, and each of the SM's 4 sub-partitions "
                  "holds whole warps of its 16,384; shared memory adds a 1 KiB reservation per block")


def check_occupancy_by_hand(answer) -> object:
    """``answer()`` returns {case name: (blocks per SM, limiting resource)} for OCCUPANCY_CASES, on the
    H200's SM limits as recorded (``occupancy.recorded_limits()``), whatever GPU this machine has."""
    name = "exercise 2 (occupancy by hand)"

    def attempt():
        given = answer()
        if not isinstance(given, dict) or set(given) != set(OCCUPANCY_CASES):
            return report(name, False, "return a dict with one (blocks, limiter) per case: "
                          f"{list(OCCUPANCY_CASES)}")
        limits = occ.recorded_limits()  # the prompt's limits (the H200's), not this machine's GPU's
        expected = {case: lesson.calculated_occupancy(*shape, limits)
                    for case, shape in OCCUPANCY_CASES.items()}
        wrong = []
        for case, right in expected.items():
            blocks, limiter = given[case]
            if blocks != right.blocks_per_sm:
                wrong.append(f"{case}: {blocks} blocks per SM is not it")
            elif str(limiter) != right.limiter:
                wrong.append(f"{case}: {blocks} blocks is right, but {limiter!r} is not what limits it")
        if wrong:
            return report(name, False, "; ".join(wrong) + f" ({OCCUPANCY_HINT}; limiters: "
                          + ", ".join(occ.LIMITERS) + ")")
        return report(name, True, "; ".join(f"{case}: {right}" for case, right in expected.items()))

    return guarded(name, attempt)


def solution_occupancy_by_hand() -> dict:
    # 33 x 32 = 1,056 registers per warp, allocated as 1,280 (units of 256): 16,384 / 1,280 = 12 warps per
    # sub-partition, 48 per SM, 12 blocks of 4 warps (65,536 / (33 x 128) would say 15).
    # 45 KiB + 1 KiB reserved = 47,104 bytes; 233,472 / 47,104 = 4.96: 4 blocks (without the reservation, 5).
    return {"128 threads, 33 registers": (12, "registers"),
            "256 threads, 32 registers, 45 KiB shared": (4, "shared memory")}


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
        per_thread = loads_per_thread(counts, "x", COPY2_BLOCK)
        if per_thread.min() < 2:
            return report(name, False, f"{int((per_thread < 2).sum())} of {COPY2_BLOCK} threads load fewer "
                          f"than two elements of x (fewest: {int(per_thread.min())}) in a block whose "
                          f"{2 * COPY2_BLOCK} elements are all in bounds: each thread loads two (two "
                          "independent requests in flight)")
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
        return report(name, True, f"{COPY2_N} elements match NumPy; {int(per_thread.min())} loads per "
                      "thread, "
                      "both before its first store: each warp has two requests in flight")

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


def loads_per_thread(counts, array: str, threads: int):
    """How many times each of a one-block trace's ``threads`` threads loaded from ``array``, counted per
    execution (a load in a loop counts once per trip), from ``trace(...).accesses`` and its sites."""
    sites = counts.sites[(counts.sites["array"] == array) & (counts.sites["op"] == "ld")]["site"]
    acc = counts.accesses[counts.accesses["site"].isin(sites)]
    thread = acc["warp"].astype(int) * 32 + acc["lane"].astype(int)
    return thread.value_counts().reindex(range(threads), fill_value=0)


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

FMA_WARPS = 16  # the lesson answers the question at 8 warps per SM; the exercise asks it at 16
FMA_SHARE = 0.9  # "reaches the peak", measured: at least this share of the theoretical FP32 peak
# (warps per SM, share of the peak) -> the measured question asked of the learner's reader, beside FMA_WARPS
MEASURED_CASES = ((FMA_WARPS, FMA_SHARE), (32, 0.9), (4, 0.85), (8, 0.95), (8, 0.7), (1, 0.5))


def check_chains_for_peak(model, measured, result: LessonResult | None = None) -> object:
    """``model(latency_cycles, warps_per_sm)`` returns the fewest independent FMA chains per thread that
    keep all 4 schedulers issuing every cycle (the lesson's model); ``measured(points, warps_per_sm,
    share)`` reads the fewest chains that reached ``share`` of the FP32 peak at ``warps_per_sm`` from
    ``lesson.fma_points`` rows (None if none did). Both are checked, then set side by side at FMA_WARPS
    on ``result`` (default: the reference recording)."""
    name = "exercise 4 (chains for the FMA peak: model and measurement)"

    def attempt():
        for latency in (4.0, 4.5, 6.0, 10.0, 24.0):
            for warps in (4, 8, 16, 32):
                expected = math.ceil(latency * 4 / warps - 1e-9)
                got = model(latency, warps)
                if got != expected:
                    return report(name, False, f"model({latency}, {warps}) = {got}; each of the 4 schedulers "
                                  f"has {warps // 4} warp(s) and needs {latency:g} independent FMAs in "
                                  "flight (a whole number of chains)")
        data = result or read_result(lesson.NAME)
        points = lesson.fma_points(data)
        for warps, share in MEASURED_CASES:
            expected = solution_chains_measured(points, warps, share)
            got = measured(points, warps, share)
            if got != expected:
                return report(name, False, f"measured(points, {warps}, {share}) = {got}: read the rows at "
                              f"warps_per_sm == {warps} whose measured fraction_of_peak (not the model's "
                              f"predicted_fraction) is at least {share}, and take the fewest chains (None if "
                              "no row reaches it)")
        cycles = lesson.latency(data, "FMA", unit="cycles")
        predicted, needed = model(cycles, FMA_WARPS), measured(points, FMA_WARPS, FMA_SHARE)
        at_warps = points[points["warps_per_sm"] == FMA_WARPS].set_index("chains")["fraction_of_peak"]
        said = f"{at_warps[predicted]:.3f}" if predicted in at_warps.index else "not measured"
        return report(name, True, f"at the recorded FMA latency of {cycles:.2f} cycles the model needs "
                      f"{predicted} chains at {FMA_WARPS} warps/SM, where the GPU measured {said} of the "
                      f"peak; it reached {FMA_SHARE:.0%} with {needed} ({at_warps[needed]:.3f}; "
                      f"{data.provenance})")

    return guarded(name, attempt)


def solution_chains_for_peak(latency_cycles, warps_per_sm):
    warps_per_scheduler = warps_per_sm / 4
    return math.ceil(latency_cycles / warps_per_scheduler - 1e-9)


def solution_chains_measured(points, warps_per_sm, share):
    rows = points[(points["warps_per_sm"] == warps_per_sm) & (points["fraction_of_peak"] >= share)]
    return int(rows["chains"].min()) if len(rows) else None
