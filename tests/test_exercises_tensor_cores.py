"""Lesson 7's exercises: the notebook's skeletons fail their checks, the solutions pass, and plausible
wrong answers fail."""

import math

from test_exercises import exercise_tests

import gpu_lessons
from gpu_lessons import ptx
from gpu_lessons.exercises import tensor_cores as ex

cuda, float32 = ex.cuda, ex.float32  # numba.cuda as gpu_lessons imported it

NOTEBOOK = "07_tensor_cores.ipynb"
SOLUTIONS = [
    (ex.check_c_owner, ex.solution_c_owner),
    (ex.check_cp_async_tile, ex.solution_cp_async_tile),
    (ex.check_per_slab, ex.solution_per_slab),
    (ex.check_mma_global_rate, ex.solution_mma_global_rate),
]


@cuda.jit
def four_bytes_read(x, y):  # src_bytes 4: the copy writes 16 bytes, 12 of them zeros
    tile = cuda.shared.array(128, float32)
    t = cuda.threadIdx.x
    for q in range(4):
        tile[4 * t + q] = math.nan
    cuda.syncthreads()
    ptx.cp_async16(tile, 4 * t, x, 4 * t, 4)
    ptx.cp_async_commit_group()
    ptx.cp_async_wait_group(0)
    cuda.syncthreads()
    for q in range(4):
        y[4 * t + q] = tile[127 - 4 * t - q]


@cuda.jit
def one_float_per_lane(x, y):  # cp_async4: one float of the lane's four
    tile = cuda.shared.array(128, float32)
    t = cuda.threadIdx.x
    for q in range(4):
        tile[4 * t + q] = math.nan
    cuda.syncthreads()
    ptx.cp_async4(tile, 4 * t, x, 4 * t, 4)
    ptx.cp_async_commit_group()
    ptx.cp_async_wait_group(0)
    cuda.syncthreads()
    for q in range(4):
        y[4 * t + q] = tile[127 - 4 * t - q]


@cuda.jit
def never_waits(x, y):  # committed, never waited for: on a GPU a race, on the simulator nothing lands
    tile = cuda.shared.array(128, float32)
    t = cuda.threadIdx.x
    for q in range(4):
        tile[4 * t + q] = math.nan
    cuda.syncthreads()
    ptx.cp_async16(tile, 4 * t, x, 4 * t, 16)
    ptx.cp_async_commit_group()
    cuda.syncthreads()
    for q in range(4):
        y[4 * t + q] = tile[127 - 4 * t - q]


@cuda.jit
def waits_for_all_but_one(x, y):  # wait_group(1) with one group committed: lets it stay in flight
    tile = cuda.shared.array(128, float32)
    t = cuda.threadIdx.x
    for q in range(4):
        tile[4 * t + q] = math.nan
    cuda.syncthreads()
    ptx.cp_async16(tile, 4 * t, x, 4 * t, 16)
    ptx.cp_async_commit_group()
    ptx.cp_async_wait_group(1)
    cuda.syncthreads()
    for q in range(4):
        y[4 * t + q] = tile[127 - 4 * t - q]


WRONG_ANSWERS = [
    (ex.check_c_owner, lambda row, col: (4 * (row % 8) + col % 4, 2 * (row // 8) + col % 2)),  # t = col % 4
    (ex.check_c_owner, lambda row, col: (row % 8 + 8 * (col // 2), 2 * (row // 8) + col % 2)),  # g, t swapped
    (ex.check_c_owner, lambda row, col: (4 * (row % 8) + col // 2, 2 * (col % 2) + row // 8)),  # c1 <-> c2
    (ex.check_cp_async_tile, four_bytes_read),
    (ex.check_cp_async_tile, one_float_per_lane),
    (ex.check_per_slab, lambda wm, wn: ((wm // 16) * (wn // 8), 2 * (wm // 16), 4 * (wn // 8))),  # one k-step
    (ex.check_per_slab, lambda wm, wn: (2 * (wm // 16) * (wn // 8), wm // 16, 4 * (wn // 8))),  # no g+8
    (ex.check_per_slab, lambda wm, wn: (2 * (wm // 16) * (wn // 8), 2 * (wm // 16), wn // 8)),  # B 16-byte
    (ex.check_mma_global_rate, lambda bandwidth: 4814.3 * 2048 / 768 / 1e3),  # the datasheet's bandwidth
    (ex.check_mma_global_rate, lambda bandwidth: bandwidth * 1024 / 768 / 1e3),  # one FLOP per multiply-add
    (ex.check_mma_global_rate, lambda bandwidth: bandwidth * 2048 / (768 + 1024) / 1e3),  # + C in, D out
    (ex.check_mma_global_rate, lambda bandwidth: bandwidth * 2048 / 512 / 1e3),  # A's fragments only
]
if gpu_lessons.SIMULATED:  # deterministic only there: on a GPU the copy may land before the read anyway
    WRONG_ANSWERS += [(ex.check_cp_async_tile, never_waits), (ex.check_cp_async_tile, waits_for_all_but_one)]

(test_notebook_has_one_cell_per_exercise, test_skeleton_fails, test_solution_passes,
 test_every_check_has_two_plausible_wrong_answers, test_wrong_answer_fails) = exercise_tests(
    NOTEBOOK, SOLUTIONS, WRONG_ANSWERS)
