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
    (ex.check_issue_time, ex.solution_issue_time),
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


@cuda.jit
def plain_stores(x, y):  # the right outputs without cp.async: ordinary loads and stores, then a barrier
    tile = cuda.shared.array(128, float32)
    t = cuda.threadIdx.x
    for q in range(4):
        tile[4 * t + q] = math.nan
    cuda.syncthreads()
    for q in range(4):
        tile[4 * t + q] = x[4 * t + q]
    cuda.syncthreads()
    for q in range(4):
        y[4 * t + q] = tile[127 - 4 * t - q]


@cuda.jit
def half_by_cp_async(x, y):  # lanes 0..15 copy with cp.async, lanes 16..31 store: half the tile is plain
    tile = cuda.shared.array(128, float32)
    t = cuda.threadIdx.x
    for q in range(4):
        tile[4 * t + q] = math.nan
    cuda.syncthreads()
    if t < 16:
        ptx.cp_async16(tile, 4 * t, x, 4 * t, 16)
    else:
        for q in range(4):
            tile[4 * t + q] = x[4 * t + q]
    ptx.cp_async_commit_group()
    ptx.cp_async_wait_group(0)
    cuda.syncthreads()
    for q in range(4):
        y[4 * t + q] = tile[127 - 4 * t - q]


SCHEDULERS, CLOCK_HZ = 4, 1.98e9

WRONG_ANSWERS = [
    (ex.check_c_owner, lambda row, col: (4 * (row % 8) + col % 4, 2 * (row // 8) + col % 2)),  # t = col % 4
    (ex.check_c_owner, lambda row, col: (row % 8 + 8 * (col // 2), 2 * (row // 8) + col % 2)),  # g, t swapped
    (ex.check_c_owner, lambda row, col: (4 * (row % 8) + col // 2, 2 * (col % 2) + row // 8)),  # c1 <-> c2
    (ex.check_cp_async_tile, four_bytes_read),
    (ex.check_cp_async_tile, one_float_per_lane),
    (ex.check_per_slab, lambda wm, wn: ((wm // 16) * (wn // 8), 2 * (wm // 16), 4 * (wn // 8))),  # one k-step
    (ex.check_per_slab, lambda wm, wn: (2 * (wm // 16) * (wn // 8), wm // 16, 4 * (wn // 8))),  # no g+8
    (ex.check_per_slab, lambda wm, wn: (2 * (wm // 16) * (wn // 8), 2 * (wm // 16), wn // 8)),  # B 16-byte
    (ex.check_cp_async_tile, plain_stores),
    (ex.check_cp_async_tile, half_by_cp_async),
    # every cycle issues (the issue share left out)
    (ex.check_issue_time, lambda n, pct, sms: n / (SCHEDULERS * sms * CLOCK_HZ) * 1e6),
    # all 132 SMs, though 4 hold no block
    (ex.check_issue_time, lambda n, pct, sms: n / (SCHEDULERS * 132 * CLOCK_HZ * pct / 100) * 1e6),
    # one scheduler per SM
    (ex.check_issue_time, lambda n, pct, sms: n / (sms * CLOCK_HZ * pct / 100) * 1e6),
    # the percentage used as a fraction
    (ex.check_issue_time, lambda n, pct, sms: n / (SCHEDULERS * sms * CLOCK_HZ * pct) * 1e6),
    (ex.check_issue_time, lambda n, pct, sms: 400.0),  # one number for every kernel
    # a round 2 GHz instead of the 1.98 GHz the prompt gives (cuBLAS: -3.2%)
    (ex.check_issue_time, lambda n, pct, sms: n / (SCHEDULERS * sms * 2.0e9 * pct / 100) * 1e6),
    # the H200's base clock, 1.755 GHz (+10.6%)
    (ex.check_issue_time, lambda n, pct, sms: n / (SCHEDULERS * sms * 1.755e9 * pct / 100) * 1e6),
    # the measured durations looked up, whatever the input (a constant per call would fail too)
    (ex.check_issue_time, lambda n, pct, sms: {304443392: 391.68, 313575424: 414.208, 318033920: 442.912,
                                                313875456: 438.72, 301505536: 344.064}.get(n, 400.0)),
]
if gpu_lessons.SIMULATED:  # deterministic only there: on a GPU the copy may land before the read anyway
    WRONG_ANSWERS += [(ex.check_cp_async_tile, never_waits), (ex.check_cp_async_tile, waits_for_all_but_one)]

(test_notebook_has_one_cell_per_exercise, test_skeleton_fails, test_solution_passes,
 test_every_check_has_two_plausible_wrong_answers, test_wrong_answer_fails) = exercise_tests(
    NOTEBOOK, SOLUTIONS, WRONG_ANSWERS)
