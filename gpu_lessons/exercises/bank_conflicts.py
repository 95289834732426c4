"""Exercises of lesson 4 (bank conflicts): their checks and reference solutions.

1. Predict a number: the time the shared-memory pipe needs for a 32x32 transpose tile whose rows are
   ``row_words`` words long, from the wavefronts its requests need and the measured cost of a
   wavefront. Checked for the unpadded tile (``tile32``, rows of 32) against the time the H200
   recording's counts give, within 1%, and for other row lengths (fixed ones and two drawn each run),
   on another GPU's numbers, against the bank model's wavefronts (so the count must come from the
   model, not from "a column costs 32" or a table).
   A function that calls the course's own counters (``model_pipe_us``, the bank model) is refused.
2. A swizzle-only tile: a 32x32-tile transpose whose tile stays 32x32 words (no padding) and whose
   shared loads and stores have no bank conflict. The check runs the kernel under the tracer on a
   45x70 matrix (partial tiles): the result must be a.T, every element must go through the tile (the
   thread that writes it to ``out`` is, off the diagonal, not the one that loaded it from ``a``),
   both global accesses coalesced (no more sectors a request than 32 consecutive floats touch) and
   no more of their requests than the reference needs (25% slack: no warp moves the whole tile),
   every shared word inside the first 1,024, and the bank conflicts zero.
3. A float64 tile read by column: the wavefronts of the read for any padding (float64 elements per
   row), which the rule of thumb ("pad by one") does not give: 8-byte accesses go by half-warps, and
   paddings 2, 4, 6 ... leave conflicts, and 16 as many as none. Checked at the lesson's paddings, then
   at every padding 0..64 (a table wrong at any one fails). (For a column read, section 1's gcd rule
   applied to the stride in words gives the same counts as the half-warp model, at every padding: a
   right answer, which the lesson no longer hands out as a shortcut. So does a whole-warp count of the
   distinct words in the busiest bank: lanes r and r + 16 land on the same bank pair, so the whole warp
   holds exactly twice what each half-warp does, at every padding.)

Every check refuses a function that calls a reference solution (``solution_*``), and those of 1 and 3
the course's counters (the bank model, the tracer, the lesson's ``conflict_degree``), however imported.
"""

from __future__ import annotations

import functools
import inspect
import math
import sys

import numba
import numpy as np
from numba import cuda

from ..device import WARP_SIZE
from ..kernels import bank_conflicts as kernels
from ..lessons import bank_conflicts as lesson
from ..results import read_result
from ..sim import memory_model
from ..sim import trace as tracer
from ..sim.trace import trace
from . import guarded, report
from .refuse import refused

# ----------------------------------------------------------------------------- exercise 1

PIPE_TOLERANCE = 0.01  # the prediction against the pipe time of the recorded counts (the model's counts
# give it exactly; a missed term such as the stores' 32 wavefronts moves it 3%)
OTHER_GPU = {"sms": 78, "tiles": kernels.tile_count((6144, 4096)), "intercept_ns": 0.041,
             "ns_per_wavefront": 0.617}  # numbers the lesson does not print: the model, not a copy
OTHER_ROWS = (33, 40, 44, 48, 64)  # row lengths in words: 1, 8, 4, 16 and 32 wavefronts a column read
DRAWN_ROWS = 2  # and two row lengths drawn each run from the even ones of 34..126 that are neither fixed
# nor a multiple of 32 (2 to 16 wavefronts): a table of the fixed rows, whatever its default, fails


def drawn_rows(rng=None) -> list[int]:
    """DRAWN_ROWS row lengths for this run of exercise 1's check."""
    rng = rng or np.random.default_rng()
    pool = [r for r in range(34, 127, 2) if r % 32 and r not in OTHER_ROWS]
    return sorted(int(r) for r in rng.choice(pool, DRAWN_ROWS, replace=False))


def recorded_pipe(variant: str = "tile32", result=None) -> dict:
    """What exercise 1 is held to: the recording's SMs, tiles at 8192x8192 and fit, the shared pipe's
    time for ``variant`` from the recorded wavefronts, and its measured time and three-bill model."""
    result = result or read_result(lesson.NAME)
    fit = lesson.wavefront_cost(result)
    bills = lesson.three_bills(result, [variant]).iloc[0]
    return {"sms": int(result.meta["sms"]), "tiles": kernels.tile_count(lesson.SQUARE),
            "intercept_ns": fit["intercept_ns"], "ns_per_wavefront": fit["ns_per_wavefront"],
            "pipe_us": float(bills["pipe_us"]), "measured_us": float(bills["measured_us"]),
            "predicted_us": float(bills["predicted_us"]), "error": float(bills["error"])}


def tile_request_wavefronts(row_words: int) -> tuple[int, int]:
    """(wavefronts of a row store, of a column read) of a 32x32 float32 tile with rows of ``row_words``
    words, from the bank model (``sim.memory_model``): lane t stores word r x row_words + t, reads word
    t x row_words + c."""
    lanes = np.arange(WARP_SIZE)
    one = np.zeros(WARP_SIZE, int)
    counts = []
    for words in (lanes, lanes * row_words):
        wavefronts, _ = memory_model.shared_wavefronts(one, lanes, words * 4, np.full(WARP_SIZE, 4), 1)
        counts.append(int(wavefronts[0]))
    return counts[0], counts[1]


def model_pipe_us(row_words: int, sms, tiles, intercept_ns, ns_per_wavefront) -> float:
    """The shared pipe's time per SM for ``tiles`` tiles of rows of ``row_words`` words: 32 row stores
    and 32 column reads a tile, each request costing the intercept plus its wavefronts."""
    store, read = tile_request_wavefronts(row_words)
    return tiles / sms * (64 * intercept_ns + 32 * (store + read) * ns_per_wavefront) / 1e3


def _this_module():
    return sys.modules[__name__]


_WAVEFRONT_COUNTERS = ((tracer.trace, "the tracer"), (tracer.simulate, "the tracer's simulate"),
                       (lesson.request_wavefronts, "the lesson's request_wavefronts"),
                       (lesson.conflict_degree, "the lesson's conflict_degree"),
                       (memory_model.shared_wavefronts, "the course's shared_wavefronts"))


def check_tile32_pipe(predict, result=None) -> object:
    """``predict(row_words, sms, tiles, intercept_ns, ns_per_wavefront)``: the µs the shared-memory
    pipe of one SM needs for its share of ``tiles`` 32x32 transpose tiles with rows of ``row_words``
    words, from a wavefront fit. Rows of 32 (``tile32``) on the H200: held to the recorded counts'
    bill; other rows on other numbers: held to the bank model's. No expected value is printed."""
    name = "exercise 1 (predict the shared pipe's time)"
    hint = ("Each SM serves its share of the tiles, each tile costing a time per request plus a time per "
            "wavefront; a tile is 32 row stores and 32 column reads. For a column read, work out which "
            "lanes' words share a bank: the request needs as many wavefronts as its busiest bank holds "
            "distinct words")

    def attempt():
        refusal = refused(name, (predict,), _this_module(), (
            (model_pipe_us, "the course's model_pipe_us"),
            (tile_request_wavefronts, "the course's tile_request_wavefronts"), *_WAVEFRONT_COUNTERS),
                          "the exercise is to count the wavefronts yourself, from the banks")
        if refusal:
            return refusal
        recorded = recorded_pipe("tile32", result)
        h200 = {key: recorded[key] for key in ("sms", "tiles", "intercept_ns", "ns_per_wavefront")}
        cases = [(32, h200, recorded["pipe_us"], "on the H200, against the recorded counts' bill")]
        cases += [(rows, OTHER_GPU, model_pipe_us(rows, **OTHER_GPU), "on another GPU's numbers")
                  for rows in (*OTHER_ROWS, *drawn_rows())]
        for rows, gpu, expected, where in cases:
            got = predict(rows, gpu["sms"], gpu["tiles"], gpu["intercept_ns"], gpu["ns_per_wavefront"])
            if got is None:
                return report(name, False, "return a time in microseconds")
            if abs(float(got) / expected - 1) > PIPE_TOLERANCE:
                return report(name, False, f"rows of {rows} words {where}: your {float(got):,.1f} µs is more "
                              f"than {PIPE_TOLERANCE:.0%} off. {hint}")
        got = float(predict(32, h200["sms"], h200["tiles"], h200["intercept_ns"], h200["ns_per_wavefront"]))
        off = got / recorded["pipe_us"] - 1
        others = ", ".join(map(str, OTHER_ROWS))
        return report(name, True, f"tile32: {got:,.1f} µs of shared pipe, {off:+.1%} from the recorded "
                      "counts; "
                      f"rows of {others} words and {DRAWN_ROWS} drawn at random right too. "
                      f"tile32 measured {recorded['measured_us']:,.1f} µs: the pipe is its longest bill, and "
                      f"the measurement is {recorded['error']:+.0%} from it")

    return guarded(name, attempt)


def solution_tile32_pipe(row_words, sms, tiles, intercept_ns, ns_per_wavefront):
    requests = 32 + 32  # 32 row stores and 32 column reads a tile (warps x 4 each)
    # a row store: 32 consecutive words, 32 banks; a column read: lane t at word t x row_words, bank
    # (t x row_words) % 32, which repeats every 32 / gcd(row_words, 32) lanes: gcd(row_words, 32) words
    # in the busiest bank
    wavefronts = 32 * 1 + 32 * math.gcd(row_words, 32)
    return tiles / sms * (requests * intercept_ns + wavefronts * ns_per_wavefront) / 1e3


# ----------------------------------------------------------------------------- exercise 2

EXERCISE_SHAPE = (45, 70)  # partial tiles on both edges
TILE_BYTES = 32 * 32 * 4  # a 32x32 float32 tile, no padding
LOADS = "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum"
STORES = "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum"


SAME_THREAD_LIMIT = 1 / 8  # a tile moves off-diagonal elements between threads: 1/32 stay in one
GLOBAL_SECTORS_LIMIT = 5  # a warp's 32 consecutive floats (128 bytes) touch at most 5 sectors


def uncoalesced_global(kernel, counts) -> str | None:
    """The first of the global load of ``a`` and the store to ``out`` (the kernel's first two
    parameters) whose requests touch more sectors than 32 consecutive floats can, with its count."""
    a, out = list(inspect.signature(kernel.py_func).parameters)[:2]
    table = counts.by_instruction
    for array, op, what in ((a, "ld", f"load of {a}"), (out, "st", f"store to {out}")):
        rows = table[(table["space"] == "global") & (table["array"] == array) & (table["op"] == op)]
        per_request = float(rows["sectors"].sum() / rows["instructions"].sum()) if len(rows) else 0.0
        if per_request > GLOBAL_SECTORS_LIMIT:
            return f"the global {what} touches {per_request:.1f} sectors per request"
    return None


GLOBAL_REQUESTS_SLACK = 1.25  # the load of a and the store to out: at most this times the reference's
# requests on the same shape (every warp loading the whole tile is 8 times)


@functools.cache
def reference_global_requests(shape=EXERCISE_SHAPE) -> dict:
    """The reference tile's global requests on ``shape``: {"ld": loads of a, "st": stores to out}."""
    _, counts = traced_conflicts(solution_swizzled_tile, shape)
    return global_requests(solution_swizzled_tile, counts)


def global_requests(kernel, counts) -> dict:
    """The warp-level global requests of the kernel's load of ``a`` and store to ``out`` (its first two
    parameters): {"ld": ..., "st": ...}."""
    a, out = list(inspect.signature(kernel.py_func).parameters)[:2]
    table = counts.by_instruction
    found = {}
    for array, op in ((a, "ld"), (out, "st")):
        rows = table[(table["space"] == "global") & (table["array"] == array) & (table["op"] == op)]
        found[op] = int(rows["instructions"].sum())
    return found


def traced_conflicts(kernel, shape=EXERCISE_SHAPE):
    """Run a (32, 8)-block tile transpose under the tracer; (result is right, counts)."""
    a = np.random.default_rng().standard_normal(shape, dtype=np.float32)
    out = np.full(shape[::-1], np.nan, np.float32)
    counts = trace(kernel, kernels.tiled_transpose_grid(shape), kernels.TRANSPOSE_BLOCK, a, out)
    return np.array_equal(out, a.T), counts


def _thread_elements(counts, array: str, op: str) -> np.ndarray:
    """(thread, element index) of every access of a global array (a thread: its warp and lane)."""
    sites = counts.sites[(counts.sites["array"] == array) & (counts.sites["op"] == op)]["site"]
    accesses = counts.accesses[counts.accesses["site"].isin(sites)]
    thread = accesses["warp"].to_numpy() * 32 + accesses["lane"].to_numpy()
    return np.stack([thread, accesses["address"].to_numpy() // 4], axis=1)


def same_thread_share(counts, shape=EXERCISE_SHAPE) -> float:
    """The share of out's elements written by the thread that loaded that element of ``a`` itself: 1
    for a global transpose (whatever it does with shared memory besides), 1/32 for a tile."""
    rows, cols = shape
    loads = _thread_elements(counts, "a", "ld")
    stores = _thread_elements(counts, "out", "st")
    if not len(stores):
        return 0.0
    j, i = np.divmod(stores[:, 1], rows)  # out[j, i] holds a[i, j]
    stored = stores[:, 0] * (rows * cols) + i * cols + j
    loaded = loads[:, 0] * (rows * cols) + loads[:, 1]
    return float(np.isin(stored, loaded).mean())


def shared_bytes_touched(counts) -> int:
    """One past the highest shared-memory byte the traced kernel touched."""
    shared = counts.sites.loc[counts.sites["space"] == "shared", "site"]
    accesses = counts.accesses[counts.accesses["site"].isin(shared)]
    return int((accesses["address"] + accesses["bytes"]).max()) if len(accesses) else 0


SECOND_SHAPE = (33, 100)  # a second shape, checked for a.T only: a size written into the code fails


def _transposes(kernel, shape):
    """True if the kernel, run (traced) on (32, 8) blocks, writes a.T on ``shape``; else a text (empty,
    or what it raised) for the failure message."""
    try:
        correct, _ = traced_conflicts(kernel, shape)
    except Exception as error:  # noqa: BLE001 - the learner's kernel: any error is feedback
        return f" (it raised {type(error).__name__})"
    return True if correct else ""


def check_swizzled_tile(kernel) -> object:
    """``kernel(a, out)``: a 32x32-tile transpose on (32, 8) blocks, its tile 32x32 words, 0 conflicts."""
    name = "exercise 2 (a swizzle-only tile)"

    def attempt():
        refusal = refused(name, (kernel,), _this_module(), why="the exercise is to write the tile yourself")
        if refusal:
            return refusal
        correct, counts = traced_conflicts(kernel)
        if counts["smsp__inst_executed_op_shared_ld.sum"] == 0:
            return report(name, False, "the kernel reads no shared memory: stage the tile in shared memory")
        if not correct:
            return report(name, False, f"out is not a.T on a {EXERCISE_SHAPE[0]}x{EXERCISE_SHAPE[1]} "
                          "matrix: check that the read finds element (r, c) where the store put it (the "
                          "same placement on both sides), and that every store is done before any read "
                          "(a barrier between them)")
        second = _transposes(kernel, SECOND_SHAPE)
        if second is not True:
            return report(name, False, f"out is a.T on a {EXERCISE_SHAPE[0]}x{EXERCISE_SHAPE[1]} matrix but "
                          f"not on a {SECOND_SHAPE[0]}x{SECOND_SHAPE[1]} one{second}: are sizes written in? "
                          "Take the matrix's rows and columns from a.shape (and the rows a pass from "
                          "cuda.blockDim.y)")
        same = same_thread_share(counts)
        if same > SAME_THREAD_LIMIT:
            return report(name, False, f"{same:.0%} of out's elements were written by the thread that loaded "
                          "them from a: they never went through the tile. Each thread stores elements of a "
                          "into the tile, and after the barrier writes out elements that other threads put "
                          "there")
        uncoalesced = uncoalesced_global(kernel, counts)
        if uncoalesced:
            return report(name, False, f"{uncoalesced}: it is not coalesced. A tile's point is that both "
                          "global accesses are: a warp's lanes read consecutive elements of a row of a and "
                          "write consecutive elements of a row of out; the transpose happens in the tile")
        requests, reference = global_requests(kernel, counts), reference_global_requests()
        for op, what in (("ld", "loads of a"), ("st", "stores to out")):
            if requests[op] > GLOBAL_REQUESTS_SLACK * reference[op]:
                return report(name, False, f"the {what} took {requests[op] / reference[op]:.1f} times the "
                              "warp requests a tile needs: each element goes through global memory once. "
                              "Threads past the matrix's edges access nothing (guard them; clamping the "
                              "index loads an edge element again), and the block's warps share the tile's "
                              "rows between them (a warp takes every eighth row), rather than each moving "
                              "the whole tile")
        touched = shared_bytes_touched(counts)
        if touched > TILE_BYTES:
            return report(name, False, f"your tile reaches byte {touched:,} of shared memory, past the "
                          f"{TILE_BYTES:,} of a 32x32 float32 tile: that is padding; keep rows of 32 words "
                          "and move elements within their row instead")
        loads, stores = counts[LOADS], counts[STORES]
        if loads or stores:
            shared = counts.by_instruction[counts.by_instruction["space"] == "shared"]
            worst = shared.sort_values("bank_conflicts", ascending=False).iloc[0]
            per_request = worst["wavefronts"] / worst["instructions"]
            return report(name, False, f"{loads} load and {stores} store bank conflicts; worst: "
                          f"`{worst['source']}` ({worst['op']}, {per_request:.1f} wavefronts per request on "
                          "average): the 32 lanes of that access must land in 32 different banks")
        return report(name, True, f"a.T exactly, within {touched:,} bytes of shared memory, and 0 bank "
                      f"conflicts in {counts['smsp__inst_executed_op_shared_ld.sum']} shared loads and "
                      f"{counts['smsp__inst_executed_op_shared_st.sum']} stores")

    return guarded(name, attempt)


@cuda.jit
def solution_swizzled_tile(a, out):
    tile = cuda.shared.array((32, 32), numba.float32)
    tx = cuda.threadIdx.x
    ty = cuda.threadIdx.y
    rows, cols = a.shape
    col = cuda.blockIdx.x * 32 + tx
    row = cuda.blockIdx.y * 32 + ty
    for k in range(0, 32, cuda.blockDim.y):
        if row + k < rows and col < cols:
            tile[ty + k, tx ^ (ty + k)] = a[row + k, col]  # element (r, c) at column c ^ r
    cuda.syncthreads()
    out_col = cuda.blockIdx.y * 32 + tx
    out_row = cuda.blockIdx.x * 32 + ty
    for k in range(0, 32, cuda.blockDim.y):
        if out_row + k < cols and out_col < rows:
            out[out_row + k, out_col] = tile[tx, (ty + k) ^ tx]  # element (tx, c): column c ^ tx


# ----------------------------------------------------------------------------- exercise 3

CHECKED_PADDINGS = (0, 1, 2, 3, 4, 6, 8, 12, 16, 32, 48)  # float64 elements a row; the float32 rule misses
# 2, 4, 6 ...; 16 is as bad as none (a rule of gcd(p, 8) misses it), and so are 32 and 48 (a rule of
# 2 gcd(p, 32) misses them)
ALL_PADDINGS = range(65)  # then every padding 0..64 (cheap for a formula or a count): a table wrong at any
# one of them fails, every run


def column_read_wavefronts(padding: int) -> tuple[int, int]:
    """(wavefronts, ideal) for 32 lanes reading column 0 of a (32, 32 + padding) float64 tile, from the
    bank model (``sim.memory_model``: 8-byte accesses go by half-warps)."""
    lanes = np.arange(WARP_SIZE)
    addresses = lanes * (32 + padding) * 8
    wavefronts, ideal = memory_model.shared_wavefronts(np.zeros(WARP_SIZE, int), lanes, addresses,
                                                       np.full(WARP_SIZE, 8), 1)
    return int(wavefronts[0]), int(ideal[0])


def check_float64_column(answer) -> object:
    """``answer(padding)``: the wavefronts of the column read of a (32, 32 + padding) float64 tile (lane
    r reads element (r, c)), for any padding; held to the bank model at paddings the lesson does not
    name. No expected value is printed."""
    name = "exercise 3 (a float64 tile read by column)"

    def attempt():
        refusal = refused(name, (answer,), _this_module(), (
            (column_read_wavefronts, "exercises.column_read_wavefronts"), *_WAVEFRONT_COUNTERS),
                          "the exercise is to count the wavefronts yourself, from the banks")
        if refusal:
            return refusal
        rest = [p for p in ALL_PADDINGS if p not in CHECKED_PADDINGS]
        for padding in (*CHECKED_PADDINGS, *rest):
            try:
                got = answer(padding)
            except Exception as error:  # noqa: BLE001 - the learner's code: any error is feedback
                return report(name, False, f"at a padding of {padding} your function raised "
                              f"{type(error).__name__}: it must count the wavefronts for any padding, from "
                              "the banks, not look them up")
            if got is None or isinstance(got, (tuple, list)) or not float(got).is_integer():
                return report(name, False, "return one whole number: the wavefronts of the column read at "
                              "that padding")
            if int(got) != column_read_wavefronts(padding)[0]:
                return report(name, False, f"with {padding} float64 of padding a row you give {int(got)} "
                              "wavefronts; the bank model gives another count. 32 lanes x 8 bytes is 256 "
                              "bytes: the request goes in two half-warps of 16 lanes; row r starts at word "
                              "r x (64 + 2 x padding): in each half-warp, how many different words does the "
                              "busiest bank hold?")
        counts = ", ".join(f"{column_read_wavefronts(p)[0]} at padding {p}" for p in (0, 1, 2, 4))
        return report(name, True, f"{counts}: one float64 a row is the least padding that leaves no "
                      "conflict (2 wavefronts, one per half-warp: 256 bytes need two), and more padding is "
                      "not always better")

    return guarded(name, attempt)


def solution_float64_column(padding: int) -> int:
    # rows of 64 + 2p words: lane r's 8 bytes start in bank 2 r (32 + p) % 32 = 2 r p % 32; the 16 lanes
    # of a half-warp land on 16 / gcd(p, 16) bank pairs, gcd(p, 16) words each; two half-warps
    return 2 * math.gcd(padding, 16)
