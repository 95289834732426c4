"""Exercises of lesson 4 (bank conflicts): their checks and reference solutions.

1. Predict a number: the time the shared-memory pipe needs for the unpadded 32x32 tile (``tile32``)
   at 8192x8192, from the wavefronts its requests need and the measured cost of a wavefront; checked
   against the time the H200 recording's counts give, within 2%.
2. A swizzle-only tile: a 32x32-tile transpose whose tile stays 32x32 words (no padding) and whose
   shared loads and stores have no bank conflict. The check runs the kernel under the tracer on a
   45x70 matrix (partial tiles): the result must be a.T, every shared word inside the first 1,024,
   and the bank conflicts zero.
3. A float64 tile read by column: the wavefronts of the read without padding, and the fewest float64
   elements of padding per row that make it conflict-free (8-byte accesses go by half-warps).
"""

from __future__ import annotations

import numba
import numpy as np
from numba import cuda

from ..device import WARP_SIZE
from ..kernels import bank_conflicts as kernels
from ..lessons import bank_conflicts as lesson
from ..results import read_result
from ..sim import memory_model
from ..sim.trace import trace
from . import guarded, report

# ----------------------------------------------------------------------------- exercise 1

PIPE_TOLERANCE = 0.01  # the prediction against the pipe time of the recorded counts (the model's counts
# give it exactly; a missed term such as the stores' 32 wavefronts moves it 3%)


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


def check_tile32_pipe(predict, result=None) -> object:
    """``predict(sms, tiles, intercept_ns, ns_per_wavefront)``: the µs tile32's shared-memory pipe
    needs at 8192x8192 on a GPU of ``sms`` SMs, from the microbenchmark's fit."""
    name = "exercise 1 (predict the shared pipe's time)"

    def attempt():
        recorded = recorded_pipe("tile32", result)
        got = predict(recorded["sms"], recorded["tiles"], recorded["intercept_ns"],
                      recorded["ns_per_wavefront"])
        if got is None:
            return report(name, False, "return a time in microseconds")
        got = float(got)
        error = got / recorded["pipe_us"] - 1
        if abs(error) > PIPE_TOLERANCE:
            return report(name, False, f"you predict {got:,.1f} µs, {error:+.1%} from the recorded "
                          f"counts' {recorded['pipe_us']:,.1f} µs (allowed: within {PIPE_TOLERANCE:.0%}). "
                          "Each SM serves tiles / SMs tiles, each costing (its requests x intercept + its "
                          "wavefronts x ns per wavefront); a tile is 32 row stores of 1 wavefront each and "
                          "32 column reads: how many wavefronts does each column read of the unpadded tile "
                          "need?")
        return report(name, True, f"{got:,.1f} µs of shared pipe, {error:+.1%} from the recorded counts. "
                      f"tile32 measured {recorded['measured_us']:,.1f} µs: the pipe is its longest bill, and "
                      f"the measurement is {recorded['error']:+.0%} from it")

    return guarded(name, attempt)


def solution_tile32_pipe(sms, tiles, intercept_ns, ns_per_wavefront):
    requests = 32 + 32  # 32 row stores and 32 column reads a tile (warps x 4 each)
    wavefronts = 32 * 1 + 32 * 32  # a row store: 32 banks; a column read: all 32 lanes in one bank
    return tiles / sms * (requests * intercept_ns + wavefronts * ns_per_wavefront) / 1e3


# ----------------------------------------------------------------------------- exercise 2

EXERCISE_SHAPE = (45, 70)  # partial tiles on both edges
TILE_BYTES = 32 * 32 * 4  # a 32x32 float32 tile, no padding
LOADS = "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum"
STORES = "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum"


def traced_conflicts(kernel, shape=EXERCISE_SHAPE):
    """Run a (32, 8)-block tile transpose under the tracer; (result is right, counts)."""
    a = np.random.default_rng().standard_normal(shape, dtype=np.float32)
    out = np.full(shape[::-1], np.nan, np.float32)
    counts = trace(kernel, kernels.tiled_transpose_grid(shape), kernels.TRANSPOSE_BLOCK, a, out)
    return np.array_equal(out, a.T), counts


def shared_bytes_touched(counts) -> int:
    """One past the highest shared-memory byte the traced kernel touched."""
    shared = counts.sites.loc[counts.sites["space"] == "shared", "site"]
    accesses = counts.accesses[counts.accesses["site"].isin(shared)]
    return int((accesses["address"] + accesses["bytes"]).max()) if len(accesses) else 0


def check_swizzled_tile(kernel) -> object:
    """``kernel(a, out)``: a 32x32-tile transpose on (32, 8) blocks, its tile 32x32 words, 0 conflicts."""
    name = "exercise 2 (a swizzle-only tile)"

    def attempt():
        correct, counts = traced_conflicts(kernel)
        if counts["smsp__inst_executed_op_shared_ld.sum"] == 0:
            return report(name, False, "the kernel reads no shared memory: stage the tile in shared memory")
        if not correct:
            return report(name, False, f"out is not a.T on a {EXERCISE_SHAPE[0]}x{EXERCISE_SHAPE[1]} "
                          "matrix: check that the read finds element (r, c) where the store put it (the "
                          "same placement on both sides), and that every store is done before any read "
                          "(a barrier between them)")
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


def float64_column_wavefronts(padding: int) -> tuple[int, int]:
    """(wavefronts, ideal) for 32 lanes reading column 0 of a (32, 32 + padding) float64 tile."""
    lanes = np.arange(WARP_SIZE)
    addresses = lanes * (32 + padding) * 8
    wavefronts, ideal = memory_model.shared_wavefronts(np.zeros(WARP_SIZE, int), lanes, addresses,
                                                       np.full(WARP_SIZE, 8), 1)
    return int(wavefronts[0]), int(ideal[0])


def least_float64_padding() -> int:
    return next(p for p in range(64) if float64_column_wavefronts(p)[0] == float64_column_wavefronts(p)[1])


def check_float64_column(answer) -> object:
    """``answer()``: (wavefronts of the column read of an unpadded (32, 32) float64 tile, the fewest
    float64 elements of padding per row that make the read conflict-free)."""
    name = "exercise 3 (a float64 tile read by column)"

    def attempt():
        got = answer()
        if not isinstance(got, (tuple, list)) or len(got) != 2:
            return report(name, False, "return two whole numbers: (wavefronts without padding, padding)")
        wavefronts, padding = got
        unpadded, ideal = float64_column_wavefronts(0)
        if wavefronts != unpadded:
            return report(name, False, f"{wavefronts} wavefronts without padding is not what the bank model "
                          f"needs. 32 lanes x 8 bytes is 256 bytes: the request goes in two half-warps of 16 "
                          "lanes; in each, how many different words does the busiest bank hold?")
        if padding is None or int(padding) != padding or padding < 0:
            return report(name, False, "the padding is a whole number of float64 elements (0, 1, 2, ...)")
        needed, _ = float64_column_wavefronts(int(padding))
        least = least_float64_padding()
        if needed != ideal or int(padding) != least:
            what = (f"still needs {needed} wavefronts, {ideal} is the least" if needed != ideal else
                    f"is conflict-free, but {least} float64 a row does it with less shared memory")
            return report(name, False, f"the wavefronts are right; with {int(padding)} float64 of padding "
                          f"the column read {what}. Row r of a padded tile starts at word r x (64 + 2 x "
                          "padding): which banks do the 16 rows of a half-warp start in?")
        return report(name, True, f"{unpadded} wavefronts unpadded (16-way conflicts in each half-warp), "
                      f"{ideal} with {least} float64 of padding a row ({32 * 8 * least} bytes more a tile)")

    return guarded(name, attempt)


def solution_float64_column() -> tuple[int, int]:
    return 32, 1  # rows of 64 words all start in bank 0; rows of 66 words start in banks 0, 2, 4, ...
