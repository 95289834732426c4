"""Exercises of lesson 2 (Little's Law): their checks and reference solutions.

1. Predict two copies' bandwidth the lesson does not print from Little's Law, at loads (bytes in flight
   per SM) no copy of the learner's recording has: the latency comes from the copies at the loads either
   side (the pointer chase's and the light copies' miss), checked within 10% on a made-up GPU drawn on
   each run (the recording as a GPU of another SM count would have made it, whose memory is slower by
   different factors for one load alone, below the knee and past it, with a lower ceiling: no table of
   the H200, rescaled, answers it): one copy below the knee and one past it. The learner predicts from
   that GPU's recording without any one-shot copy at those two loads; a function that reads a recording
   or calls a reference solution is refused; no message prints a measurement.
2. Occupancy by hand: blocks per SM and the limiting resource for any launch shape, by the steps (the
   register allocation unit, the sub-partitions, the shared-memory reservation, the block limit),
   checked on named and random shapes against the occupancy calculator on the H200's recorded SM limits
   (the calculator agrees with the driver: see the deep dive), which is switched off while the
   learner's function runs.
3. Two loads in flight per thread: a copy unrolled as the notes unroll ``c = a*b + c``, checked
   against NumPy (also on NaN and infinities, which an address computed from a loaded value gets wrong)
   and the simulator's traffic counter (two loads per thread, counted per execution, both before the
   stores, each a warp's 32 consecutive floats; each element loaded once and stored once).
4. How many independent FMA chains reach the peak at 16 warps per SM: the model's answer from the
   recorded FMA latency, and the measured answer read from the recording (90% of the peak); the lesson
   works the same question at 8 warps per SM.
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
import sys

import numpy as np
from numba import cuda

from .. import occupancy as occ
from ..kernels import littles_law as k
from ..lessons import littles_law as lesson
from ..mode import choose_mode
from ..results import LessonResult, RecordingError, read_result
from ..sim import trace
from . import guarded, report
from .reach import answers, reaches

# ----------------------------------------------------------------------------- exercise 1

# Two copies the lesson does not print: eight 8-byte loads per thread at 2 warps/SM (4 KiB of reads in
# flight per SM: below the knee, where the latency has grown well past the light copies'), and four 8-byte
# loads at 32 warps/SM (32 KiB: past the knee). The learner's function gets a made-up GPU's recording
# without any one-shot copy at 4 KiB or 32 KiB per SM (review R12b: with only the two rows dropped, the
# median GB/s of the copies at the same load answered it, no law needed): the latency must come from the
# loads either side (2 and 8 KiB, 16 and 64 KiB), between them. The GPU is the H200's, as a GPU of
# MADE_UP_SMS SMs like the H200's would have made it, whose memory differs from the H200's by different
# factors at different loads (review R12: when it took one factor for everything, the H200's recorded row
# rescaled by the SM ratio and the chase's latency ratio answered it):
#   - one load alone (the chases) takes MADE_UP_IDLE times as long as on the H200;
#   - copies below the H200's knee see MADE_UP_BELOW times their implied latency, copies past it that
#     divided by MADE_UP_EASING (the queues under heavy load grow less than the H200's);
#   - its ceiling is MADE_UP_CUT of what its fastest copies would reach: it flattens most copies at 32 KiB
#     (the one asked about among them: past the knee the ceiling, which `result` gives, is the answer) and
#     none below the knee (which moves to 11-15 KiB: the 8 KiB copies stay below it).
# The latency between the neighbouring loads' (their medians, log-log) predicts both (+1.5% and -1.4% to
# -4.2%, any draw; linearly between them +6.1%); the nearest load's latency alone misses the first by 15-21%,
# its GB/s by 39-70%, the light copies' latency by over 36%, the chase's by over 250%, the most a copy below
# the knee saw by 22%; the H200's row rescaled by the SM ratio and any one ratio misses one of the two by
# over 19% (tests: every corner of the draw). Going between the neighbours' GB/s in log-log is the same
# arithmetic as the law at the latency between theirs, and passes. A function that reads a recording
# (lessons.load, results.read_result, ...) or calls a reference solution is refused before it runs.
PREDICT_SHAPES = (("copy w8 u8", 2), ("copy w8 u4", 32))  # (variant, resident warps per SM)
PREDICT_TOLERANCE = 0.10
MADE_UP_SMS = (60, 100)  # each drawn from [low, high) on every run
MADE_UP_IDLE = (1.1, 1.3)
MADE_UP_BELOW = (2.0, 2.4)
MADE_UP_EASING = (1.45, 1.7)
MADE_UP_CUT = (0.85, 0.9)


@dataclasses.dataclass(frozen=True)
class MadeUpGPU:
    sms: int
    idle: float  # one load alone takes this many times as long as on the H200
    below: float  # a copy below the H200's knee: this many times its latency
    past: float  # a copy past it: this many times
    cut: float  # the ceiling: this share of what its fastest copies would reach

    @classmethod
    def draw(cls, rng) -> MadeUpGPU:
        sms, idle = int(rng.integers(*MADE_UP_SMS)), float(rng.uniform(*MADE_UP_IDLE))
        below = float(rng.uniform(*MADE_UP_BELOW))
        past = below / float(rng.uniform(*MADE_UP_EASING))
        return cls(sms, idle, below, past, float(rng.uniform(*MADE_UP_CUT)))

    def __str__(self) -> str:
        return (f"a made-up GPU of {self.sms} SMs whose memory takes {self.idle:.2f} times as long as the "
                f"H200's for one load alone, {self.below:.2f} times as long for copies below the H200's knee "
                f"and {self.past:.2f} times past it, with a ceiling at {self.cut:.0%} of what its fastest "
                "copies would reach")


def made_up_gpu(result: LessonResult, gpu: MadeUpGPU) -> LessonResult:
    """``result`` as ``gpu`` would have recorded it: the memory chases' times x ``gpu.idle``; each one-shot
    copy's GB/s x (sms / the recording's SMs) / ``gpu.below`` where its bytes in flight per SM are below
    the recording's knee, / ``gpu.past`` from the knee on, and every other copy's (grid-stride, queue,
    CuPy's: heavy loads) / ``gpu.past``; then every copy capped at ``gpu.cut`` x the fastest, its times
    scaled inversely; the datasheet bandwidth scaled as the ceiling; the FMA rows as they are."""
    table = result.table.copy()
    variant = table["variant"]
    copies = variant.str.startswith(("copy", "cupy copy")).to_numpy()
    chases = (variant.str.startswith("chase ") & (variant != "chase FMA")).to_numpy()
    knee = lesson.sweep_points(result).attrs["knee_bytes_per_sm"]
    slower = np.full(len(table), gpu.past)
    for i in np.flatnonzero(variant.str.startswith("copy ").to_numpy()):
        f = lesson.parse_variant(variant.iloc[i])
        if k.bytes_in_flight_per_sm(table["param"].iloc[i], f["unroll"], f["width"]) <= knee:
            slower[i] = gpu.below
    gbps = table["gbps"].to_numpy(float)
    new = gbps * gpu.sms / int(result.meta["sms"]) / slower
    ceiling = gpu.cut * new[copies].max()
    new = np.minimum(new, ceiling)
    times = ["median_ms", "min_ms", "max_ms"]
    table.loc[copies, times] = table.loc[copies, times].mul(gbps[copies] / new[copies], axis=0)
    table.loc[copies, "gbps"] = new[copies]
    table.loc[chases, times] *= gpu.idle
    datasheet = float(result.meta["datasheet_bandwidth_gbps"]) * ceiling / lesson.copy_ceiling(result)
    meta = dict(result.meta, sms=gpu.sms, datasheet_bandwidth_gbps=datasheet)
    return dataclasses.replace(result, table=table, meta=meta)


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


def without_shapes(result: LessonResult, shapes=PREDICT_SHAPES) -> LessonResult:
    """``result`` without every one-shot copy (``copy w... u...``) whose read bytes in flight per SM equal
    one of ``shapes``': what the learner predicts from. No copy at the asked load is left, so its GB/s or
    its latency cannot be looked up (review R12b: a median of the GB/s copies at the same load measured
    passed, with no Little's Law in it)."""
    table = result.table
    loads = {shape_bytes(variant, warps) for variant, warps in shapes}
    drop = np.zeros(len(table), bool)
    for i, (variant, warps) in enumerate(zip(table["variant"], table["param"], strict=True)):
        if str(variant).startswith("copy w") and np.isfinite(warps):
            drop[i] = shape_bytes(variant, warps) in loads
    return dataclasses.replace(result, table=table[~drop].reset_index(drop=True))


def shape_bytes(variant: str, warps) -> float:
    """Read bytes in flight per SM of a one-shot copy ``variant`` at ``warps`` resident warps per SM."""
    f = lesson.parse_variant(variant)
    return float(k.bytes_in_flight_per_sm(warps, f["unroll"], f["width"]))


def recording_readers() -> list[tuple[object, str]]:
    """The course's functions that read a recording (and what a refusal calls them), and the reference
    solutions: exercise 1 must be modelled from ``result``, not looked up."""
    from .. import lessons  # here: gpu_lessons.lessons imports this package's lesson modules
    from ..lessons import runner
    from ..results import store

    readers = [(lessons.load, "lessons.load"), (runner.load, "lessons.runner.load"),
               (lessons.roof, "lessons.roof"), (store.read_result, "results.read_result"),
               (store.read_probe, "results.read_probe"), (store.list_recordings, "results.list_recordings")]
    readers += [(getattr(store, n), f"results.store.{n}") for n in dir(store) if n.startswith("_read_")]
    return [(f, f"{what}, which reads a recording") for f, what in readers] + [
        (s, f"exercises.{s.__name__}, the reference solution") for s in answers(sys.modules[__name__])]


def own_recordings(function, namespace=None, seen=None) -> list[str]:
    """The names through which ``function`` (or a function of the learner's it calls, defined beside it)
    reads a ``LessonResult`` it was not given: a global, a closure cell or a default argument. reach.reaches
    follows functions, not data, so a recording loaded beforehand (``h200 = lessons.load(...)``) is looked
    for here."""
    function = getattr(function, "py_func", function)
    code = getattr(function, "__code__", None)
    globals_ = getattr(function, "__globals__", None)
    namespace = globals_ if namespace is None else namespace
    seen = set() if seen is None else seen
    if code is None or globals_ is not namespace or id(function) in seen:
        return []  # not the learner's: the course's, a library's, a builtin
    seen.add(id(function))
    values = [(n, namespace[n]) for n in _names(code) if n in namespace]
    values += [(n, cell.cell_contents) for n, cell in zip(code.co_freevars, function.__closure__ or (),
                                                         strict=False) if _filled(cell)]
    values += [("a default argument", v) for v in (function.__defaults__ or ())]
    values += [(f"the default of {n}", v) for n, v in (function.__kwdefaults__ or {}).items()]
    found = [n for n, v in values if isinstance(v, LessonResult)]
    for _, value in values:
        found += own_recordings(value, namespace, seen)
    return found


def _names(code) -> set:
    names = set(code.co_names)
    for const in code.co_consts:
        if hasattr(const, "co_names"):
            names |= _names(const)
    return names


def _filled(cell) -> bool:
    try:
        cell.cell_contents  # noqa: B018 (an empty cell raises)
    except ValueError:
        return False
    return True


def refusal(predict) -> str | None:
    """Why exercise 1 refuses ``predict`` before running it, or None. (A reference solution itself is
    checked as any answer: the tests hold that it passes; a function that calls one is refused.)"""
    itself = getattr(predict, "py_func", predict)
    for helper, what in recording_readers():
        if helper is not itself and reaches(predict, helper):
            return (f"your function calls {what}: the exercise is to work the bandwidth out from "
                    "`result` with Little's Law, not to look it up")
    own = own_recordings(predict)
    if own:
        return (f"your function reads a recording of its own ({own[0]}): the exercise is to work the "
                "bandwidth out from `result` (this GPU's recording) with Little's Law, not to look it up")
    return None


def judged(predict, data: LessonResult, gpu: MadeUpGPU | str):
    """``predict``'s two predictions on ``data`` (a made-up GPU's full recording): a Result."""
    name = "exercise 1 (predict a copy's bandwidth)"
    given = without_shapes(data)
    lines, passed, over = [], True, []
    for variant, warps in PREDICT_SHAPES:
        shape = recorded_shape(data, variant, warps)
        got = predict(given, warps, shape["loads_per_thread"], shape["bytes_per_load"])
        if got is not None and np.isnan(float(got)):
            return report(name, False, f"predict(result, {warps}, {shape['loads_per_thread']}, "
                          f"{shape['bytes_per_load']}) gave nan: `result` has no copy at this load (read "
                          "bytes in flight per SM), so a lookup there finds nothing; take the latency from "
                          "the copies at the loads either side of it")
        if got is None or not np.isfinite(float(got)) or float(got) <= 0:
            return report(name, False, f"predict(result, {warps}, {shape['loads_per_thread']}, "
                          f"{shape['bytes_per_load']}) gave {got}: return GB/s, a positive number")
        mine = float(got)
        if mine > data_ceiling(data) * 1.001:
            over.append(describe_shape(shape))
        implied = 2 * shape["bytes_in_flight_per_sm"] * shape["sms"] / mine
        passed &= abs(shape["gbps"] / mine - 1) <= PREDICT_TOLERANCE
        lines.append(f"{describe_shape(shape)}: you predict {mine:,.0f} GB/s (a latency of "
                     f"{implied:,.0f} ns)")
    summary = f"on {gpu}, " + "; ".join(lines)
    if passed:
        return report(name, True, summary + f": both within {PREDICT_TOLERANCE:.0%} of what it would "
                      "measure")
    capped = (f" No copy beats the measured ceiling ({data_ceiling(data):,.0f} GB/s), yet you predict "
              f"more for {' and '.join(over)}." if over else "")
    return report(name, False, summary + f": not both within {PREDICT_TOLERANCE:.0%}.{capped} Read "
                  "every number from `result` (it is this GPU's recording, not the H200's: its memory "
                  "differs from the H200's by different factors at different loads). Little's Law turns "
                  "bytes in flight into GB/s at a latency, and a copy both reads and writes; the latency is "
                  "not one number (section 4), and no copy of `result` has this load: what latency do "
                  "copies at the loads either side of it see?")


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


def check_predict_bandwidth(predict, result: LessonResult | None = None) -> object:
    """``predict(result, warps_per_sm, loads_per_thread, bytes_per_load)`` returns the copy bandwidth
    (GB/s, reads + writes) Little's Law predicts from what ``result`` measured, which has no one-shot copy
    at the two loads asked about; held, within PREDICT_TOLERANCE, to what a made-up GPU drawn on each run
    (made_up_gpu of ``result``, by default the reference recording) measured of PREDICT_SHAPES. The
    learner chooses the latency. A function that reads a recording or calls a reference solution is
    refused. No message prints a measurement the learner could copy."""
    name = "exercise 1 (predict a copy's bandwidth)"

    def attempt():
        why = refusal(predict)
        if why:
            return report(name, False, why)
        gpu = MadeUpGPU.draw(np.random.default_rng())
        return judged(predict, made_up_gpu(result or read_result(lesson.NAME), gpu), gpu)

    return guarded(name, attempt)


def data_ceiling(result: LessonResult) -> float:
    return lesson.copy_ceiling(result)


def describe_shape(shape: dict) -> str:
    """'copy w8 u2 at 4 warps/SM (2 KiB of reads in flight per SM)'."""
    kib = shape["bytes_in_flight_per_sm"] / 1024
    size = f"{kib:g} KiB" if kib >= 1 else f"{shape['bytes_in_flight_per_sm']:.0f} B"
    return f"{shape['variant']} at {shape['warps_per_sm']} warps/SM ({size} of reads in flight per SM)"


def solution_predict_bandwidth(result, warps_per_sm, loads_per_thread, bytes_per_load):
    implied = lesson.implied_latencies(result)
    in_flight = warps_per_sm * 32 * loads_per_thread * bytes_per_load  # read bytes per SM
    # no copy of result has this load: take the latency copies at the loads either side of it see (their
    # median at each load) and go between them, in log-log as the lesson's figures are drawn
    by_load = implied.groupby("bytes_in_flight_per_sm")["implied_latency_ns"].median()
    latency_ns = float(np.exp(np.interp(np.log(in_flight), np.log(by_load.index.to_numpy(float)),
                                        np.log(by_load.to_numpy(float)))))
    # bytes/ns = GB/s; x2: the writes; no copy beats the measured ceiling (past the knee it is the answer)
    return min(lesson.copy_ceiling(result), 2 * in_flight * int(result.meta["sms"]) / latency_ns)


# ----------------------------------------------------------------------------- exercise 2

# Named shapes (the lesson's prompt) and random ones; every shape fits one block. Shared memory is any
# number of 4-byte words, asked for by a kernel that opted in past 48 KiB. (32, 16, 22,276) tests that the
# allocation is rounded up at all (10 blocks unrounded, 9 rounded to 128 bytes, and 9 rounded to 1 KiB
# too: it does not test the unit). (64, 16, 7,172) and (128, 16, 14,340) test the unit, with shared memory
# the limit: 28 and 15 blocks at 128 bytes, 27 and 14 at 256, 26 and 14 at 512, 25 and 14 at 1 KiB
# (review R12b: random shapes told 1 KiB from 128 bytes 0.235% of the time, so 1 KiB passed 91% of runs).
OCCUPANCY_CASES = ((128, 33, 0), (256, 32, 45 * 1024), (32, 16, 0), (96, 72, 20 * 1024), (32, 16, 22_276),
                   (64, 16, 7_172), (128, 16, 14_340))
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
        shape = (32 * int(rng.integers(1, 33)), int(rng.integers(16, 256)),
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
        for n in COPY2_SIZES:
            x = np.random.default_rng().standard_normal(n, dtype=np.float32)
            out = np.full(n, UNWRITTEN, np.float32)
            blocks = -(-n // (2 * COPY2_BLOCK))
            if choose_mode() == "gpu":  # an index past the end shows only on the simulator (a GPU reads on)
                trace.simulate(kernel, blocks, COPY2_BLOCK, x, out.copy())
            kernel[blocks, COPY2_BLOCK](x, out)
            unwritten = int((out == UNWRITTEN).sum())
            if unwritten:
                return report(name, False, f"n = {n}: {unwritten} outputs never written (the launch has "
                              f"{blocks} blocks of {COPY2_BLOCK}: two elements per thread)")
            if not np.array_equal(out, x):
                worst = int(np.flatnonzero(out != x)[0])
                return report(name, False, f"n = {n}: out[{worst}] = {out[worst]} is not x[{worst}] (which "
                              "element does each thread load, and which does it store?)")
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
        return report(name, True, f"{sizes} elements match NumPy; {int(per_thread.min())} loads per thread, "
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
