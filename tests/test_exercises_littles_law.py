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
    (ex.check_chains_for_peak, (ex.solution_chains_for_peak, ex.solution_chains_measured)),
]


def _no_writes(warps, loads, width, latency_ns, sms, ceiling):  # a copy writes what it reads: x2 forgotten
    return min(ceiling, warps * 32 * loads * width * sms / latency_ns)


def _no_ceiling(warps, loads, width, latency_ns, sms, ceiling):  # no memory system delivers past its ceiling
    return 2 * warps * 32 * loads * width * sms / latency_ns


def _no_lanes(warps, loads, width, latency_ns, sms, ceiling):  # a warp's load counted once, not 32 lanes
    return min(ceiling, 2 * warps * loads * width * sms / latency_ns)


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


def _predicted_column(points, warps, share):  # the model's share read instead of the measured one
    rows = points[(points["warps_per_sm"] == warps) & (points["predicted_fraction"] >= share)]
    return int(rows["chains"].min()) if len(rows) else None


def _any_residency(points, warps, share):  # the fewest chains that reached the share at any residency
    rows = points[points["fraction_of_peak"] >= share]
    return int(rows["chains"].min()) if len(rows) else None


WRONG_ANSWERS = [
    (ex.check_predict_bandwidth, _no_writes),
    (ex.check_predict_bandwidth, _no_ceiling),
    (ex.check_predict_bandwidth, _no_lanes),
    # 65,536 registers / (registers x threads), no allocation unit; 228 KiB / 45 KiB, no reservation
    (ex.check_occupancy_by_hand, lambda: {"128 threads, 33 registers": (15, "registers"),
                                          "256 threads, 32 registers, 45 KiB shared": (5, "shared memory")}),
    # the thread limit only (2048 / threads), for both
    (ex.check_occupancy_by_hand, lambda: {"128 threads, 33 registers": (16, "threads"),
                                          "256 threads, 32 registers, 45 KiB shared": (8, "threads")}),
    # right block counts, but shared memory named for the register-limited kernel
    (ex.check_occupancy_by_hand, lambda: {"128 threads, 33 registers": (12, "shared memory"),
                                          "256 threads, 32 registers, 45 KiB shared": (4, "shared memory")}),
    (ex.check_copy2_kernel, _copy2_store_between),
    (ex.check_copy2_kernel, _copy2_neighbours),
    # the model: one warp per scheduler assumed; the 4 schedulers forgotten
    (ex.check_chains_for_peak, (lambda latency, warps: math.ceil(latency), ex.solution_chains_measured)),
    (ex.check_chains_for_peak, (lambda latency, warps: math.ceil(latency / warps),
                                ex.solution_chains_measured)),
    # the measurement: the model's answer again; the model's column read; every residency at once
    (ex.check_chains_for_peak, (ex.solution_chains_for_peak,
                                lambda points, warps, share: ex.solution_chains_for_peak(4.1, warps))),
    (ex.check_chains_for_peak, (ex.solution_chains_for_peak, _predicted_column)),
    (ex.check_chains_for_peak, (ex.solution_chains_for_peak, _any_residency)),
]

(test_notebook_has_one_cell_per_exercise, test_skeleton_fails, test_solution_passes,
 test_every_check_has_two_plausible_wrong_answers, test_wrong_answer_fails) = exercise_tests(
    NOTEBOOK, SOLUTIONS, WRONG_ANSWERS)
