"""Lesson 2's exercises: each skeleton, exactly as the notebook has it, fails; each solution passes; the
plausible wrong answers fail."""

import math

from numba import cuda
from test_exercises import exercise_tests

from gpu_lessons.exercises import littles_law as ex

NOTEBOOK = "02_littles_law_ilp.ipynb"
SOLUTIONS = [
    (ex.check_predict_bandwidth, ex.solution_predict_bandwidth),
    (ex.check_occupancy_by_hand, ex.solution_occupancy_by_hand),
    (ex.check_copy2_kernel, ex.solution_copy2_kernel),
    (ex.check_chains_for_peak, ex.solution_chains_for_peak),
]


def _no_writes(warps, loads, width, latency_ns, sms, ceiling):  # a copy writes what it reads: x2 forgotten
    return min(ceiling, warps * 32 * loads * width * sms / latency_ns)


def _no_ceiling(warps, loads, width, latency_ns, sms, ceiling):  # no memory system delivers past its ceiling
    return 2 * warps * 32 * loads * width * sms / latency_ns


@cuda.jit
def _copy2_store_between(x, out):  # two loads, but the first store comes before the second load
    step = cuda.blockDim.x
    i0 = cuda.blockIdx.x * 2 * step + cuda.threadIdx.x
    i1 = i0 + step
    if i0 < x.size:
        a = x[i0]
        out[i0] = a
    if i1 < x.size:
        b = x[i1]
        out[i1] = b


@cuda.jit
def _copy2_neighbours(x, out):  # elements i and i + 1 of the thread's pair: lanes overlap, half are missed
    i0 = (cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x) * 2
    if i0 + 1 < x.size:
        a = x[i0]
        b = x[i0 + 1]
        out[i0] = a
        out[i0 + 1] = b
    elif i0 < x.size:
        out[i0] = x[i0]


WRONG_ANSWERS = [
    (ex.check_predict_bandwidth, _no_writes),
    (ex.check_predict_bandwidth, _no_ceiling),
    # the thread limit only (2048 / 256 = 8 blocks), for both
    (ex.check_occupancy_by_hand, lambda: {case: (8, "warps") for case in ex.OCCUPANCY_CASES}),
    # right block counts, but shared memory named for the register-limited kernel
    (ex.check_occupancy_by_hand, lambda: {"256 threads, 72 registers": (3, "shared memory"),
                                          "256 threads, 32 registers, 40 KiB shared": (5, "shared memory")}),
    (ex.check_copy2_kernel, _copy2_store_between),
    (ex.check_copy2_kernel, _copy2_neighbours),
    (ex.check_chains_for_peak, lambda latency, warps: math.ceil(latency)),  # one warp per scheduler assumed
    (ex.check_chains_for_peak, lambda latency, warps: math.ceil(latency / warps)),  # 4 schedulers forgotten
]

(test_notebook_has_one_cell_per_exercise, test_skeleton_fails, test_solution_passes,
 test_every_check_has_two_plausible_wrong_answers, test_wrong_answer_fails) = exercise_tests(
    NOTEBOOK, SOLUTIONS, WRONG_ANSWERS)
