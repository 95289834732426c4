"""Exercises of lesson 4 (bank conflicts): their checks and reference solutions.

1. Predict the wavefronts of one warp reading 4-byte words at a stride (0: every lane the same
   word), checked against the bank model the tracer uses, over strides 0..64.
2. Fix a conflicting tile: finish a 32x32-tile transpose whose column reads are conflict-free.
   The check runs the learner's kernel under the tracer on a 45x70 matrix (partial tiles) and
   counts its shared-memory bank conflicts: PASSED only at zero, with a correct transpose.
3. A float64 tile read by column: how many float64 elements of padding per row remove the
   conflicts? Checked with the bank model (8-byte accesses go by half-warps).
"""

from __future__ import annotations

import math

import numba
import numpy as np
from numba import cuda

from ..device import WARP_SIZE
from ..kernels import bank_conflicts as kernels
from ..sim import memory_model
from ..sim.trace import trace
from . import guarded, report

# ----------------------------------------------------------------------------- exercise 1


def stride_wavefronts(stride: int, word_bytes: int = 4) -> int:
    """What the tracer counts for 32 lanes reading element ``lane * stride`` of a shared array."""
    lanes = np.arange(WARP_SIZE)
    addresses = lanes * stride * word_bytes
    wavefronts, _ = memory_model.shared_wavefronts(np.zeros(WARP_SIZE, int), lanes, addresses,
                                                   np.full(WARP_SIZE, word_bytes), 1)
    return int(wavefronts[0])


STRIDES = range(65)


def check_wavefronts(predict) -> object:
    """``predict(stride)``: wavefronts of 32 lanes reading float32 word ``lane * stride``."""
    name = "exercise 1 (wavefronts of a strided read)"

    def attempt():
        for stride in STRIDES:
            expected = stride_wavefronts(stride)
            got = predict(stride)
            if got is None or int(got) != expected:
                hint = ("a broadcast: every lane reads the same word" if stride == 0 else
                        f"lanes 0..31 read words 0, {stride}, {2 * stride}, ...: how many share a bank?")
                return report(name, False, f"stride {stride}: you said {got}, the bank model needs "
                              f"{expected} ({hint})")
        return report(name, True, f"all strides 0..{STRIDES[-1]}: gcd(stride, 32) wavefronts, "
                      "1 for a broadcast")

    return guarded(name, attempt)


def solution_wavefronts(stride: int) -> int:
    return 1 if stride == 0 else math.gcd(stride, 32)


# ----------------------------------------------------------------------------- exercise 2

EXERCISE_SHAPE = (45, 70)  # partial tiles on both edges
LOADS = "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum"
STORES = "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum"


def traced_conflicts(kernel, shape=EXERCISE_SHAPE):
    """Run a (32, 8)-block tile transpose under the tracer; (result is right, counts, by instruction)."""
    a = np.random.default_rng().standard_normal(shape, dtype=np.float32)
    out = np.full(shape[::-1], np.nan, np.float32)
    counts = trace(kernel, kernels.tiled_transpose_grid(shape), kernels.TRANSPOSE_BLOCK, a, out)
    return np.array_equal(out, a.T), counts


def check_conflict_free_transpose(kernel) -> object:
    """``kernel(a, out)``: a 32x32-tile transpose launched on (32, 8) blocks; 0 bank conflicts."""
    name = "exercise 2 (a conflict-free tile)"

    def attempt():
        correct, counts = traced_conflicts(kernel)
        if counts["smsp__inst_executed_op_shared_ld.sum"] == 0:
            return report(name, False, "the kernel reads no shared memory: stage the tile in shared memory")
        if not correct:
            return report(name, False, f"out is not a.T on a {EXERCISE_SHAPE[0]}x{EXERCISE_SHAPE[1]} "
                          "matrix: keep the indexing, change only where elements live in the tile")
        loads, stores = counts[LOADS], counts[STORES]
        if loads or stores:
            shared = counts.by_instruction[counts.by_instruction["space"] == "shared"]
            worst = shared.sort_values("bank_conflicts", ascending=False).iloc[0]
            per_request = worst["wavefronts"] / worst["instructions"]
            return report(name, False, f"{loads} load and {stores} store bank conflicts; worst: "
                          f"`{worst['source']}` ({worst['op']}, {per_request:.1f} wavefronts per request "
                          "on average)")
        return report(name, True, f"a.T exactly, and 0 bank conflicts in "
                      f"{counts['smsp__inst_executed_op_shared_ld.sum']} shared loads and "
                      f"{counts['smsp__inst_executed_op_shared_st.sum']} stores")

    return guarded(name, attempt)


@cuda.jit
def solution_conflict_free_transpose(a, out):
    tile = cuda.shared.array((32, 33), numba.float32)  # one word of padding per row
    tx = cuda.threadIdx.x
    ty = cuda.threadIdx.y
    rows, cols = a.shape
    col = cuda.blockIdx.x * 32 + tx
    row = cuda.blockIdx.y * 32 + ty
    for k in range(0, 32, cuda.blockDim.y):
        if row + k < rows and col < cols:
            tile[ty + k, tx] = a[row + k, col]
    cuda.syncthreads()
    out_col = cuda.blockIdx.y * 32 + tx
    out_row = cuda.blockIdx.x * 32 + ty
    for k in range(0, 32, cuda.blockDim.y):
        if out_row + k < cols and out_col < rows:
            out[out_row + k, out_col] = tile[tx, ty + k]


# ----------------------------------------------------------------------------- exercise 3


def float64_column_wavefronts(padding: int) -> tuple[int, int]:
    """(wavefronts, ideal) for 32 lanes reading column 0 of a (32, 32 + padding) float64 tile."""
    lanes = np.arange(WARP_SIZE)
    addresses = lanes * (32 + padding) * 8
    wavefronts, ideal = memory_model.shared_wavefronts(np.zeros(WARP_SIZE, int), lanes, addresses,
                                                       np.full(WARP_SIZE, 8), 1)
    return int(wavefronts[0]), int(ideal[0])


def check_float64_padding(answer) -> object:
    """``answer()``: float64 elements of padding per row that make column reads conflict-free."""
    name = "exercise 3 (padding a float64 tile)"

    def attempt():
        padding = answer()
        if padding is None or int(padding) != padding or padding < 0:
            return report(name, False, "return a whole number of float64 elements (0, 1, 2, ...)")
        padding = int(padding)
        wavefronts, ideal = float64_column_wavefronts(padding)
        if wavefronts != ideal:
            return report(name, False, f"with {padding} float64 of padding a column read needs "
                          f"{wavefronts} wavefronts; {ideal} is the least (two half-warps of 16 lanes "
                          "x 8 bytes)")
        extra = 32 * padding * 8
        return report(name, True, f"{padding} float64 per row: {wavefronts} wavefronts, no conflicts, "
                      f"for {extra} bytes more per tile" + ("" if padding == 1 else " (1 is the least)"))

    return guarded(name, attempt)


def solution_float64_padding() -> int:
    return 1  # rows of 33 doubles = 66 words: row r starts in bank 2r, 16 rows of a half-warp span 32
