"""Lesson 2's exercises: each skeleton, exactly as the notebook has it, fails; each solution passes; the
plausible wrong answers fail."""

import dataclasses
import math

from numba import cuda, float32
from test_exercises import exercise_tests

from gpu_lessons import occupancy
from gpu_lessons.exercises import littles_law as ex
from gpu_lessons.lessons import littles_law as lesson

NOTEBOOK = "02_littles_law_ilp.ipynb"
SOLUTIONS = [
    (ex.check_predict_bandwidth, ex.solution_predict_bandwidth),
    (ex.check_occupancy_by_hand, ex.solution_occupancy_by_hand),
    (ex.check_copy2_kernel, ex.solution_copy2_kernel),
    (ex.check_chains_for_peak, (ex.solution_chains_for_peak, ex.solution_chains_measured)),
]


def _littles_law(result, warps, loads, width, latency_ns, writes=2, lanes=32):
    sweep = lesson.sweep_points(result)
    read = warps * lanes * loads * width * sweep.attrs["sms"] / latency_ns
    return min(sweep.attrs["ceiling_gbps"], writes * read)


def _light(result):  # the latency the lightest copies imply (section 3)
    return lesson.sweep_points(result).attrs["light_load_latency_ns"]


def _chase_latency(result, warps, loads, width):  # one load alone: the latency the lesson measured first
    return _littles_law(result, warps, loads, width, lesson.latency(result, "DRAM"))


def _latency_under_load(result, warps, loads, width):  # the most a copy below the knee saw (section 4)
    implied = lesson.implied_latencies(result)
    most = implied.loc[~implied["past_knee"], "implied_latency_ns"].max()
    return _littles_law(result, warps, loads, width, most)


def _fastest_under_load(result, warps, loads, width):  # the latency the fastest copy below the knee saw
    implied = lesson.implied_latencies(result)
    below = implied[~implied["past_knee"]]
    return _littles_law(result, warps, loads, width, below.loc[below["gbps"].idxmax(), "implied_latency_ns"])


def _no_ceiling(result, warps, loads, width):  # the light-load latency, but the ceiling forgotten
    sweep = lesson.sweep_points(result)
    return 2 * warps * 32 * loads * width * sweep.attrs["sms"] / sweep.attrs["light_load_latency_ns"]


def _no_writes(result, warps, loads, width):  # a copy writes what it reads: x2 forgotten
    return _littles_law(result, warps, loads, width, _light(result),
                        writes=1)


def _no_lanes(result, warps, loads, width):  # a warp's load counted once, not 32 lanes
    return _littles_law(result, warps, loads, width, _light(result),
                        lanes=1)


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
    (ex.check_predict_bandwidth, _chase_latency),
    (ex.check_predict_bandwidth, _latency_under_load),
    (ex.check_predict_bandwidth, _fastest_under_load),
    (ex.check_predict_bandwidth, _no_ceiling),
    (ex.check_predict_bandwidth, _no_writes),
    (ex.check_predict_bandwidth, _no_lanes),
    (ex.check_predict_bandwidth, lambda result, warps, loads, width: 923.0),  # one number for every shape
    # the ceiling for every shape
    (ex.check_predict_bandwidth, lambda result, warps, loads, width: lesson.copy_ceiling(result)),
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


@cuda.jit
def _copy2_local_array(x, out):  # a right answer: the two elements loaded into a local array in a loop
    step = cuda.blockDim.x
    i0 = cuda.blockIdx.x * 2 * step + cuda.threadIdx.x
    v = cuda.local.array(2, float32)
    for k in range(2):
        if i0 + k * step < x.size:
            v[k] = x[i0 + k * step]
    for k in range(2):
        if i0 + k * step < x.size:
            out[i0 + k * step] = v[k]


def test_two_loads_from_one_source_line_count_as_two():
    result = ex.check_copy2_kernel(_copy2_local_array)
    assert result.passed, result
    assert "2 loads per thread" in result.message


def test_exercise_2_holds_the_h200s_limits_on_any_gpu(monkeypatch):
    """The prompt fixes the H200's limits: a GPU with less shared memory per SM changes nothing."""
    h200 = occupancy.recorded_limits()
    smaller = dataclasses.replace(h200, shared_per_sm=164 * 1024, shared_per_block_optin=163 * 1024)
    assert occupancy.occupancy(256, 32, 45 * 1024, smaller).blocks_per_sm == 3  # not the H200's 4
    monkeypatch.setattr(occupancy, "sm_limits", lambda: smaller)
    result = ex.check_occupancy_by_hand(ex.solution_occupancy_by_hand)
    assert result.passed, result
