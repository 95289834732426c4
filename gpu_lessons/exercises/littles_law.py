"""Exercises of lesson 2 (Little's Law): their checks and reference solutions.

1. Little's Law by hand: the bandwidth of three launch shapes on a made-up GPU drawn on each run, given its
   SMs, its ceiling and the latency a copy sees at each load (bytes in flight per SM), and no bandwidth:
   the learner works out the bytes in flight and 2 x bytes x SMs / latency, capped by the ceiling. Checked
   within 2% against that model (the numbers are made up: there is no measurement to hold it to); a
   function that reads a recording, calls the check's or the lesson's model or a reference solution is
   refused.
2. Occupancy by hand: blocks per SM and the limiting resource for any launch shape, by the steps (the
   register allocation unit, the sub-partitions, the shared-memory reservation, the block limit),
   checked on named and random shapes (threads not a multiple of 32 among them) against the occupancy
   calculator on the H200's recorded SM limits
   (the calculator agrees with the driver: see the deep dive), which is switched off while the
   learner's function runs.
3. Two loads in flight per thread: a copy unrolled as the notes unroll ``c = a*b + c``, checked
   against NumPy (also on NaN and infinities, which an address computed from a loaded value gets wrong)
   and the simulator's traffic counter (two loads per thread, counted per execution, both before the
   stores, each a warp's 32 consecutive floats; each element loaded once and stored once over the whole
   launch, the last block's tail included), in blocks of 64 and of 96.
4. How many independent FMA chains reach the peak at 16 warps per SM: the model's answer from the
   recorded FMA latency, and the measured answer read from the recording (90% of the peak); the lesson
   works the same question at 8 warps per SM. A function that calls the lesson's model
   (``kernels.fma_model_fraction``) or reads a recording is refused.
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
import sys

import numpy as np
from numba import cuda

from .. import occupancy as occ
from ..kernels import littles_law as kernels
from ..lessons import littles_law as lesson
from ..mode import choose_mode
from ..results import LessonResult, read_result
from ..sim import trace
from . import guarded, refuse, report
from .reach import answers, reaches

# ----------------------------------------------------------------------------- exercise 1

# Little's Law applied, not looked up (review R12c: when the learner got the recording without the two asked
# loads, the law at a latency between the neighbouring loads' was the same arithmetic as going between the
# neighbours' GB/s, and the lesson's fit line passed too: nothing told the law from interpolating a curve).
# The learner now gets a made-up GPU drawn on each run: its SMs, its ceiling and the latency a copy sees at
# each load (read bytes in flight per SM, 512 B to 128 KiB) and no bandwidth at all. For three launch shapes
# the learner works out the bytes in flight and the bandwidth: 2 x bytes in flight per SM x SMs / latency,
# capped by the ceiling. The check holds the answer to that arithmetic (the model), not to a measurement: the
# numbers are made up. The latency grows by at least 5% per doubling of the load, so a latency read at the
# wrong load (a warp counted as one lane, say) misses; the ceiling caps the 32 KiB shape by at least 25% and
# leaves the 4 and 8 KiB ones at least 20% under it.
PREDICT_SHAPES = ((2, 8, 8), (64, 1, 4), (32, 4, 8))  # (warps per SM, loads per thread, bytes per load)
PREDICT_TOLERANCE = 0.02
TABLE_LOADS = tuple(512 * 2**k for k in range(9))  # read bytes in flight per SM: 512 B to 128 KiB
MADE_UP_SMS = (60, 140)  # each drawn from [low, high) on every run
MADE_UP_LIGHT_NS = (350.0, 650.0)  # the latency at the lightest load
MADE_UP_GROWTH = (1.05, 1.3)  # the latency's growth per doubling of the load


class LatencyTable(dict):
    """Read bytes in flight per SM -> the latency (ns) a copy sees at that load; a load not in the table
    says which loads it has."""

    def __missing__(self, load):
        raise KeyError(f"the table has no latency at {load!r} bytes in flight per SM (it has "
                       f"{', '.join(f'{b:,}' for b in self)}): count every lane of every warp, every load "
                       "a thread keeps in flight and every byte of each")


@dataclasses.dataclass(frozen=True)
class MadeUpGPU:
    """What exercise 1 gives the learner: the SMs, the ceiling (GB/s, reads + writes) and the latency a
    copy sees at each load (``latency_ns[bytes in flight per SM]``). No bandwidth of any copy."""

    sms: int
    ceiling_gbps: float
    latency_ns: LatencyTable

    @classmethod
    def draw(cls, rng) -> MadeUpGPU:
        sms = int(rng.integers(*MADE_UP_SMS))
        latency, table = float(rng.uniform(*MADE_UP_LIGHT_NS)), LatencyTable()
        for load in TABLE_LOADS:
            table[load] = round(latency, 1)
            latency *= float(rng.uniform(*MADE_UP_GROWTH))
        gpu = cls(sms, math.inf, table)
        light = max(little(gpu, *shape) for shape in PREDICT_SHAPES[:2])
        heavy = little(gpu, *PREDICT_SHAPES[2])
        return dataclasses.replace(gpu, ceiling_gbps=round(float(rng.uniform(1.25 * light, 0.8 * heavy)), 1))

    def __str__(self) -> str:
        return f"a made-up GPU of {self.sms} SMs with a ceiling of {self.ceiling_gbps:,.0f} GB/s"


def bytes_in_flight(warps_per_sm, loads_per_thread, bytes_per_load) -> int:
    return warps_per_sm * 32 * loads_per_thread * bytes_per_load


def little(gpu: MadeUpGPU, warps_per_sm, loads_per_thread, bytes_per_load) -> float:
    """The model the check holds answers to: reads and writes, every SM, at the latency of this load."""
    load = bytes_in_flight(warps_per_sm, loads_per_thread, bytes_per_load)
    return min(gpu.ceiling_gbps, 2 * load * gpu.sms / gpu.latency_ns[load])


def describe_shape(shape) -> str:
    warps, loads, width = shape
    return f"{warps} warps/SM, {loads} load{'s' if loads > 1 else ''} of {width} bytes per thread"


def slip(ratio: float, gpu: MadeUpGPU, capped: bool, mine: float) -> str:
    """What a prediction ``ratio`` times the model's most likely forgot (no number of the answer in it)."""
    if mine > gpu.ceiling_gbps * (1 + PREDICT_TOLERANCE):
        return "it is above the ceiling, which no copy beats"
    if capped:
        return "this copy has more bytes in flight than the ceiling needs: what limits it then?"
    if abs(ratio - 0.5) < 0.05:
        return "half the answer: a copy writes what it reads"
    if ratio < 2.0 / gpu.sms:
        return "far too little: bytes in flight per SM, times how many SMs?"
    if abs(ratio * 32 - 1) < 0.2 or abs(ratio * 16 - 1) < 0.2:
        return "a warp's load is 32 lanes' loads"
    return ("not Little's Law at this load: bytes in flight (per SM, all SMs) / the latency at that load, "
            "reads and writes")


def judged(predict, gpu: MadeUpGPU):
    """``predict``'s answers for PREDICT_SHAPES on ``gpu``, held to Little's Law within PREDICT_TOLERANCE."""
    name = "exercise 1 (predict a copy's bandwidth)"
    lines = []
    for shape in PREDICT_SHAPES:
        got = predict(gpu, *shape)
        if got is None or not np.isfinite(float(got)) or float(got) <= 0:
            return report(name, False, f"predict_gbps(gpu, {', '.join(map(str, shape))}) gave {got}: return "
                          "GB/s, a positive number")
        mine, right = float(got), little(gpu, *shape)
        if abs(mine / right - 1) > PREDICT_TOLERANCE:
            capped = right >= gpu.ceiling_gbps
            return report(name, False, f"on {gpu}, {describe_shape(shape)}: you predict {mine:,.0f} GB/s, "
                          f"not within {PREDICT_TOLERANCE:.0%} of Little's Law: "
                          f"{slip(mine / right, gpu, capped, mine)}")
        lines.append(f"{describe_shape(shape)}: {mine:,.0f} GB/s")
    return report(name, True, f"on {gpu}, " + "; ".join(lines) + " (Little's Law on made-up numbers; the "
                  "H200's copies under load are section 4)")


def recording_readers() -> list[tuple[object, str]]:
    """The course's functions that read a recording (and what a refusal calls them), the reference
    solutions, and the helpers that compute exercise 1's answer: it must be worked out from ``gpu``."""
    return refuse.recording_readers() + [
        (s, f"exercises.{s.__name__}, the reference solution") for s in answers(sys.modules[__name__])]


def model_helpers() -> list[tuple[object, str]]:
    """The course's functions that compute exercise 1's answer, or its bytes in flight (review R12d: the
    check's own model, called, passed)."""
    return [(little, "exercises.little, the check's own model"),
            (bytes_in_flight, "exercises.bytes_in_flight, the check's own count"),
            (kernels.littles_law_gbps, "kernels.littles_law_gbps, the lesson's model")]
    # kernels.bytes_in_flight_per_sm, shown in section 1, is allowed: the law is the rest of the work


def own_recordings(function) -> list[str]:
    """The names through which ``function`` reads a ``LessonResult`` it was not given (refuse.own_data)."""
    return refuse.own_data(function, LessonResult)


def refusal(predict) -> str | None:
    """Why exercise 1 refuses ``predict`` before running it, or None. (A reference solution itself is
    checked as any answer: the tests hold that it passes; a function that calls one is refused.)"""
    itself = getattr(predict, "py_func", predict)
    for helper, what in recording_readers():
        if helper is not itself and reaches(predict, helper):
            return (f"your function calls {what}: the exercise is to work the bandwidth out from "
                    "`gpu` with Little's Law, not to look it up")
    own = own_recordings(predict)
    if own:
        return (f"your function reads a recording of its own ({own[0]}): the exercise is to work the "
                "bandwidth out from `gpu` (a made-up GPU, not the H200) with Little's Law, not to look it up")
    for helper, what in model_helpers():
        if reaches(predict, helper):
            return (f"your function calls {what}: the exercise is to work the bandwidth out from `gpu` "
                    "with Little's Law yourself")
    return None


def calls_a_solution(function) -> str | None:
    """A refusal if ``function`` calls one of this module's reference solutions (being one is checked
    as any answer: the tests hold that each passes), else None."""
    itself, module = getattr(function, "py_func", function), sys.modules[__name__]
    for solution in answers(module):
        if getattr(solution, "py_func", solution) is not itself and reaches(function, solution):
            named = next(n for n in dir(module) if getattr(module, n) is solution)
            return (f"your code calls exercises.{named}, the reference solution: the exercise is to work it "
                    "out yourself")
    return None


def check_predict_bandwidth(predict) -> object:
    """``predict(gpu, warps_per_sm, loads_per_thread, bytes_per_load)`` returns the copy bandwidth (GB/s,
    reads + writes) Little's Law gives on ``gpu``, a MadeUpGPU drawn on each run (its SMs, its ceiling and
    a latency per load, no bandwidth), for PREDICT_SHAPES; held within PREDICT_TOLERANCE to the law. A
    function that reads a recording or calls a reference solution is refused. No message prints the
    answer."""
    name = "exercise 1 (predict a copy's bandwidth)"

    def attempt():
        why = refusal(predict)
        if why:
            return report(name, False, why)
        return judged(predict, MadeUpGPU.draw(np.random.default_rng()))

    return guarded(name, attempt)


def solution_predict_bandwidth(gpu, warps_per_sm, loads_per_thread, bytes_per_load):
    in_flight = warps_per_sm * 32 * loads_per_thread * bytes_per_load  # read bytes per SM: every lane
    latency_ns = gpu.latency_ns[in_flight]  # the latency copies see at this load
    # bytes/ns = GB/s; x2: the writes; every SM; no copy beats the ceiling
    return min(gpu.ceiling_gbps, 2 * in_flight * gpu.sms / latency_ns)


# ----------------------------------------------------------------------------- exercise 2

# Named shapes (the lesson's prompt) and random ones; every shape fits one block. Shared memory is any
# number of 4-byte words, asked for by a kernel that opted in past 48 KiB. (32, 16, 22,276) tests that the
# allocation is rounded up at all (10 blocks unrounded, 9 rounded to 128 bytes, and 9 rounded to 1 KiB
# too: it does not test the unit). (64, 16, 7,172) and (128, 16, 14,340) test the unit, with shared memory
# the limit: 28 and 15 blocks at 128 bytes, 27 and 14 at 256, 26 and 14 at 512, 25 and 14 at 1 KiB
# (review R12b: random shapes told 1 KiB from 128 bytes 0.235% of the time, so 1 KiB passed 91% of runs).
# (112, 87, 0) and (338, 25, 0) have threads not a multiple of 32: a block's warps round up (4 and 11), and
# warps counted as threads // 32 give 6 blocks, not 5 (review R12d: every shape was whole warps, so the
# floor passed); random shapes are whole warps half the time, any 33 to 1,024 threads the other half.
OCCUPANCY_CASES = ((128, 33, 0), (256, 32, 45 * 1024), (32, 16, 0), (96, 72, 20 * 1024), (32, 16, 22_276),
                   (64, 16, 7_172), (128, 16, 14_340), (112, 87, 0), (338, 25, 0))
OCCUPANCY_RANDOM = 40
OCCUPANCY_HINT = ("registers are allocated per warp in units of 256, and each of the SM's 4 sub-partitions "
                  "holds whole warps of its 16,384; shared memory adds a 1 KiB reservation per block; and "
                  "an SM also has a limit on blocks")


def _calculator_off(*args, **kwargs):  # runs with the occupancy module's globals: builtins only
    raise RuntimeError("the occupancy calculator is switched off while this check runs: "
                       "work the steps out in your own code")


@contextlib.contextmanager
def calculator_off():
    """Every reference to ``occupancy.occupancy`` raises RuntimeError inside the block; yields a list that
    is non-empty after the block if any code of the occupancy module ran in it anyway (a reloaded or
    re-imported calculator)."""
    function = occ.occupancy
    original = function.__code__
    function.__code__ = _calculator_off.__code__
    ran, previous = [], sys.getprofile()

    def watch(frame, event, arg):
        if event == "call" and frame.f_code.co_filename == occ.__file__:
            ran.append(frame.f_code.co_name)

    sys.setprofile(watch)
    try:
        yield ran
    finally:
        sys.setprofile(previous)
        function.__code__ = original


def occupancy_shapes(rng, count: int = OCCUPANCY_RANDOM, limits=None) -> list[tuple[int, int, int]]:
    """The named shapes and ``count`` random ones (threads, registers, shared bytes), each fitting a block."""
    limits = limits or occ.recorded_limits()
    shapes = list(OCCUPANCY_CASES)
    while len(shapes) < len(OCCUPANCY_CASES) + count:
        threads = int(rng.integers(1, 33) * 32 if rng.integers(0, 2) else rng.integers(33, 1025))
        shape = (threads, int(rng.integers(16, 256)),
                 4 * int(rng.integers(0, 30 * 1024)) * int(rng.integers(0, 2)))
        if lesson.calculated_occupancy(*shape, limits, opt_in=True).blocks_per_sm > 0:
            shapes.append(shape)
    return shapes


def describe_occupancy_shape(shape) -> str:
    threads, registers, shared = shape
    size = f"{shared // 1024} KiB" if shared % 1024 == 0 else f"{shared:,} bytes of"
    return f"{threads} threads, {registers} registers" + (f", {size} shared" if shared else "")


def check_occupancy_by_hand(blocks_per_sm) -> object:
    """``blocks_per_sm(threads, registers, shared_bytes)`` returns (blocks per SM, limiting resource) on the
    H200's SM limits as recorded (``occupancy.recorded_limits()``), whatever GPU this machine has, for the
    named shapes and random ones; the occupancy calculator is switched off while it runs."""
    name = "exercise 2 (occupancy by hand)"

    def attempt():
        why = calls_a_solution(blocks_per_sm)
        if why:
            return report(name, False, why)
        limits = occ.recorded_limits()  # the prompt's limits (the H200's), not this machine's GPU's
        shapes = occupancy_shapes(np.random.default_rng(), limits=limits)
        expected = [lesson.calculated_occupancy(*shape, limits, opt_in=True) for shape in shapes]
        with calculator_off() as ran:
            given = [blocks_per_sm(*shape) for shape in shapes]
        if ran:
            return report(name, False, "the occupancy calculator ran while this check ran (a reloaded or "
                          "re-imported occupancy module too): work the steps out in your own code")
        for shape, right, answer in zip(shapes, expected, given, strict=True):
            shown = describe_occupancy_shape(shape)
            if not isinstance(answer, tuple | list) or len(answer) != 2:
                return report(name, False, f"{describe_occupancy_shape(shape)}: you returned {answer!r}; "
                              "return (blocks per SM, limiting resource)")
            blocks, limiter = answer
            if blocks != right.blocks_per_sm:
                return report(name, False, f"{shown}: {blocks} blocks per SM is not it ({OCCUPANCY_HINT})")
            tied = [r for r, n in right.blocks_by_resource.items() if n == right.blocks_per_sm]
            if str(limiter) not in tied:
                return report(name, False, f"{shown}: {blocks} blocks is right, but {limiter!r} is not what "
                              f"limits it (limiters: {', '.join(occ.LIMITERS)})")
        return report(name, True, f"{len(shapes)} shapes right, worked out by hand; e.g. "
                      + "; ".join(f"{describe_occupancy_shape(s)}: {r}" for s, r in zip(shapes[:2], expected,
                                                                                   strict=False)))

    return guarded(name, attempt)


def solution_occupancy_by_hand(threads, registers, shared_bytes):
    warps = -(-threads // 32)
    per_warp = -(-registers * 32 // 256) * 256  # registers go per warp, in units of 256
    warps_per_partition = 16_384 // per_warp  # each of the 4 sub-partitions holds whole warps
    allocated = -(-(shared_bytes + 1024) // 128) * 128  # the 1 KiB reservation, in units of 128 bytes
    by = {"warps": 64 // warps, "threads": 2048 // threads, "blocks": 32,
          "registers": 4 * warps_per_partition // warps, "shared memory": 233_472 // allocated}
    blocks = min(by.values())
    return blocks, next(name for name, n in by.items() if n == blocks)


# ----------------------------------------------------------------------------- exercise 3

COPY2_SIZES = (1027, 1100)  # n mod 128 = 3 (the last block's second half is empty) and 76 (it is cut)
COPY2_BLOCK = 64
# review R12c: a kernel with the prompt's block size written in (blockIdx.x * 128, i0 + 64) passed when
# every launch had blocks of 64; a second block size (n mod 192 = 67: the last block's second half is cut)
COPY2_OTHER_BLOCK = 96
COPY2_LAUNCHES = tuple((n, COPY2_BLOCK) for n in COPY2_SIZES) + ((COPY2_SIZES[0], COPY2_OTHER_BLOCK),)
UNWRITTEN = np.float32(-7.5e37)  # outputs start as this: no copy of a standard normal x can be it


def check_copy2_kernel(kernel) -> object:
    """``kernel(x, out)``: each thread copies elements i and i + blockDim.x of its block's share of
    2 x blockDim.x elements, loading both before storing either; launched on ceil(n / 128) blocks, for
    sizes whose last block ends in either half."""
    name = "exercise 3 (two loads in flight per thread)"

    def attempt():
        why = calls_a_solution(kernel)
        if why:
            return report(name, False, why)
        for n, size in COPY2_LAUNCHES:
            x = np.random.default_rng().standard_normal(n, dtype=np.float32)
            out = np.full(n, UNWRITTEN, np.float32)
            blocks = -(-n // (2 * size))
            if choose_mode() == "gpu":  # an index past the end shows only on the simulator (a GPU reads on)
                trace.simulate(kernel, blocks, size, x, out.copy())
            kernel[blocks, size](x, out)
            other = (f" (blocks of {size}, not {COPY2_BLOCK}: is a block size written into your indices? "
                     "read it from cuda.blockDim.x)" if size != COPY2_BLOCK else "")
            unwritten = int((out == UNWRITTEN).sum())
            if unwritten:
                return report(name, False, f"n = {n}: {unwritten} outputs never written (the launch has "
                              f"{blocks} blocks of {size}: two elements per thread){other}")
            if not np.array_equal(out, x):
                worst = int(np.flatnonzero(out != x)[0])
                return report(name, False, f"n = {n}: out[{worst}] = {out[worst]} is not x[{worst}] (which "
                              f"element does each thread load, and which does it store?){other}")
        if not copies_any_value(kernel, COPY2_SIZES[0]):
            return report(name, False, "with NaN and infinities in x, out is not x bit for bit: a copy moves "
                          "values without looking at them (a second address computed from the first load's "
                          "value would also make that load wait for the first: one request in flight)")
        counts = trace.trace(kernel, 1, COPY2_BLOCK, x[:2 * COPY2_BLOCK].copy(), out[:2 * COPY2_BLOCK].copy())
        table = counts.by_instruction
        loads = table[(table["op"] == "ld") & (table["array"] == "x")]
        per_thread = loads_per_thread(counts, "x", COPY2_BLOCK)
        if per_thread.min() < 2:
            return report(name, False, f"{int((per_thread < 2).sum())} of {COPY2_BLOCK} threads load fewer "
                          f"than two elements of x (fewest: {int(per_thread.min())}) in a block whose "
                          f"{2 * COPY2_BLOCK} elements are all in bounds: each thread loads two (two "
                          "independent requests in flight)")
        loaded, stored = accesses_per_element(counts, "x", "ld"), accesses_per_element(counts, "out", "st")
        if (loaded[:2 * COPY2_BLOCK] > 1).any() or (stored[:2 * COPY2_BLOCK] > 1).any():
            return report(name, False, f"in a block of {COPY2_BLOCK} threads, "
                          f"{int((loaded[:2 * COPY2_BLOCK] > 1).sum())} elements of x are loaded and "
                          f"{int((stored[:2 * COPY2_BLOCK] > 1).sum())} of out stored more than once: each "
                          "thread loads its two elements once each and stores each once (a second load of "
                          "the same element is traffic a copy does not need)")
        # review R12c: over the whole launch, the last block's tail included (clamped indices, i1 =
        # min(i0 + step, n - 1), load and store the last element once per thread past the end)
        n = COPY2_SIZES[0]
        whole = trace.trace(kernel, -(-n // (2 * COPY2_BLOCK)), COPY2_BLOCK, x[:n].copy(),
                            np.full(n, UNWRITTEN, np.float32))
        loaded, stored = accesses_per_element(whole, "x", "ld"), accesses_per_element(whole, "out", "st")
        if (loaded > 1).any() or (stored > 1).any():
            return report(name, False, f"n = {n}, over the whole launch: {int((loaded > 1).sum())} "
                          f"element(s) of x loaded and {int((stored > 1).sum())} of out stored more than "
                          f"once, the most {int(max(loaded.max(), stored.max()))} times: at the end of the "
                          "array, a thread whose element is past it loads and stores nothing (a clamped "
                          "index repeats the last element)")
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
        sizes = " and ".join(map(str, COPY2_SIZES))
        return report(name, True, f"{sizes} elements match NumPy, in blocks of {COPY2_BLOCK} and "
                      f"{COPY2_OTHER_BLOCK}; {int(per_thread.min())} loads per thread, "
                      "both before its first store: each warp has two requests in flight")

    return guarded(name, attempt)


def copies_any_value(kernel, n: int) -> bool:
    """Whether ``kernel`` copies n elements holding NaN and infinities bit for bit (an address that
    depends on a loaded value goes wrong on them)."""
    x = np.random.default_rng().standard_normal(n, dtype=np.float32)
    x[::3], x[1::7], x[2::11] = np.nan, np.inf, -np.inf
    out = np.full(n, UNWRITTEN, np.float32)
    kernel[-(-n // (2 * COPY2_BLOCK)), COPY2_BLOCK](x, out)
    return np.array_equal(out.view(np.uint32), x.view(np.uint32))


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


def accesses_per_element(counts, array: str, op: str):
    """How many times each 4-byte element of ``array`` was loaded (``op`` "ld") or stored ("st") in a
    trace, from ``trace(...).accesses`` and its sites."""
    sites = counts.sites[(counts.sites["array"] == array) & (counts.sites["op"] == op)]["site"]
    acc = counts.accesses[counts.accesses["site"].isin(sites)]
    return np.bincount((acc["address"] // 4).astype(int))


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
        why = calls_a_solution(model) or calls_a_solution(measured)
        helpers = refuse.recording_readers() + [(kernels.fma_model_fraction, "kernels.fma_model_fraction, "
                                                 "the lesson's model of this question")]  # review R12d
        for function, (helper, what) in ((f, h) for f in (model, measured) for h in helpers):
            if not why and reaches(function, helper):
                why = f"your code calls {what}: the exercise is to work it out from what it is given"
        if why:
            return report(name, False, why)
        for latency in (4.0, 4.5, 6.0, 10.0, 24.0):
            for warps in (4, 8, 16, 32):
                expected = math.ceil(latency * 4 / warps - 1e-9)
                got = model(latency, warps)
                if got != expected:
                    return report(name, False, f"model({latency}, {warps}) = {got} is not the model's "
                                  "answer: a scheduler issues every cycle only if its own warps, together, "
                                  "keep enough independent FMAs in flight to cover the latency (an SM has 4 "
                                  "schedulers; chains come in whole numbers)")
        data = result or read_result(lesson.NAME)
        points = lesson.fma_points(data)
        for warps, share in MEASURED_CASES:
            expected = solution_chains_measured(points, warps, share)
            got = measured(points, warps, share)
            if got != expected:
                return report(name, False, f"measured(points, {warps}, {share}) = {got} is not what the "
                              "recording says: read the measured share (not the model's), at that residency "
                              "only; None if no row reaches it")
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
