"""Lesson 5's exercises: the notebook's skeletons fail their checks, the solutions pass, and plausible
wrong answers (at least two per check) fail."""

import math

from test_exercises import exercise_tests

import gpu_lessons
from gpu_lessons.exercises import reduce as ex
from gpu_lessons.kernels import reduce as k

cuda = ex.cuda  # numba.cuda as gpu_lessons imported it (the mode is chosen before the import)
float32 = ex.float32


# ----------------------------------------------------------- exercise 1: warp_all_sum


@cuda.jit(device=True)
def half_warp(value):
    offset = 8  # starts at 8: each half of the warp sums only itself
    while offset > 0:
        value += cuda.shfl_xor_sync(0xFFFFFFFF, value, offset)
        offset //= 2
    return value


@cuda.jit(device=True)
def shuffle_down(value):
    offset = 16  # the lesson's shfl_down: only lane 0 ends with the warp's sum
    while offset > 0:
        value += cuda.shfl_down_sync(0xFFFFFFFF, value, offset)
        offset //= 2
    return value


@cuda.jit(device=True)
def assigned_not_added(value):
    offset = 16
    while offset > 0:
        value = cuda.shfl_xor_sync(0xFFFFFFFF, value, offset)  # replaces instead of adding
        offset //= 2
    return value


# ------------------------------------------------------------------ exercise 2: reduce_sum


@cuda.jit
def early_exit(x, out):
    i = cuda.grid(1)
    if i >= x.size:
        return  # lanes past the end leave: the shuffles of their warp can never complete
    value = k.warp_reduce_sum(x[i])
    if cuda.threadIdx.x % 32 == 0:
        cuda.atomic.add(out, 0, value)


@cuda.jit
def no_grid_stride(x, out):
    warp_sums = cuda.shared.array(32, float32)
    tid = cuda.threadIdx.x
    i = cuda.blockIdx.x * cuda.blockDim.x * 2 + tid
    value = float32(0)
    if i < x.size:  # one step only: elements past 2 x blocks x threads are never read
        value += x[i]
        if i + cuda.blockDim.x < x.size:
            value += x[i + cuda.blockDim.x]
    value = k.warp_reduce_sum(value)
    if tid % 32 == 0:
        warp_sums[tid // 32] = value
    cuda.syncthreads()
    value = warp_sums[tid] if tid < (cuda.blockDim.x + 31) // 32 else float32(0)
    if tid < 32:
        value = k.warp_reduce_sum(value)
        if tid == 0:
            cuda.atomic.add(out, 0, value)


@cuda.jit
def every_lane_adds(x, out):
    warp_sums = cuda.shared.array(32, float32)
    tid = cuda.threadIdx.x
    i = cuda.blockIdx.x * cuda.blockDim.x * 2 + tid
    stride = cuda.blockDim.x * 2 * cuda.gridDim.x
    value = float32(0)
    while i < x.size:
        value += x[i]
        if i + cuda.blockDim.x < x.size:
            value += x[i + cuda.blockDim.x]
        i += stride
    value = k.warp_reduce_sum(value)
    if tid % 32 == 0:
        warp_sums[tid // 32] = value
    cuda.syncthreads()
    value = warp_sums[tid] if tid < (cuda.blockDim.x + 31) // 32 else float32(0)
    if tid < 32:
        value = k.warp_reduce_sum(value)
        cuda.atomic.add(out, 0, value)  # every lane of warp 0, not only lane 0 (which holds the sum)


# ----------------------------------------------------------------- exercise 3: a tolerance


def abs_of_sum(x, depth):
    du = depth * 2.0**-24
    return math.inf if du >= 1 else du / (1 - du) * abs(float(x.sum()))  # |sum x|, not sum |x|


def machine_epsilon(x, depth):
    du = depth * 2.0**-23  # machine epsilon, twice the unit roundoff
    return math.inf if du >= 1 else du / (1 - du) * float(abs(x).astype("float64").sum())


def no_denominator(x, depth):
    du = depth * 2.0**-24
    return math.inf if du >= 1 else du * float(abs(x).astype("float64").sum())  # d u, not d u / (1 - d u)


def no_infinity(x, depth):
    du = depth * 2.0**-24  # the formula everywhere: negative past d u = 1
    return du / (1 - du) * float(abs(x).astype("float64").sum())


# ---------------------------------------------------------------- exercise 4: predict a time


def no_launch_cost(n, t0_us, bw_gbps):
    return 4 * n / (bw_gbps * 1e3)  # bytes over bandwidth only


def elements_not_bytes(n, t0_us, bw_gbps):
    return t0_us + n / (bw_gbps * 1e3)  # n bytes, not 4n


def bandwidth_units(n, t0_us, bw_gbps):
    return t0_us + 4 * n / bw_gbps  # bytes / (GB/s) is ns, not us


NOTEBOOK = "05_reduce.ipynb"
SOLUTIONS = [
    (ex.check_warp_all_sum, ex.solution_warp_all_sum),
    (ex.check_reduce_sum, ex.solution_reduce_sum),
    (ex.check_tolerance, ex.solution_tolerance),
    (ex.check_predicted_time, ex.solution_predicted_time),
]
WRONG_ANSWERS = [
    (ex.check_warp_all_sum, half_warp),
    (ex.check_warp_all_sum, shuffle_down),
    (ex.check_warp_all_sum, assigned_not_added),
    (ex.check_reduce_sum, early_exit),
    (ex.check_reduce_sum, no_grid_stride),
    (ex.check_reduce_sum, every_lane_adds),
    (ex.check_tolerance, abs_of_sum),
    (ex.check_tolerance, machine_epsilon),
    (ex.check_tolerance, no_denominator),
    (ex.check_tolerance, no_infinity),
    (ex.check_predicted_time, no_launch_cost),
    (ex.check_predicted_time, elements_not_bytes),
    (ex.check_predicted_time, bandwidth_units),
]

(test_notebook_has_one_cell_per_exercise, test_skeleton_fails, test_solution_passes,
 test_every_check_has_two_plausible_wrong_answers, test_wrong_answer_fails) = exercise_tests(
    NOTEBOOK, SOLUTIONS, WRONG_ANSWERS)


def test_an_early_exit_deadlocks_on_the_simulator():
    result = ex.check_reduce_sum(early_exit)
    assert not result.passed
    if gpu_lessons.SIMULATED:  # on a GPU the early return does not hang: it only gives a wrong sum
        assert "Deadlock" in result.message, result


def test_shfl_down_gets_the_hint_that_only_lane_0_has_the_sum():
    assert "only lane 0" in ex.check_warp_all_sum(shuffle_down).message
    assert "only lane 0" not in ex.check_warp_all_sum(half_warp).message  # there lane 0 is wrong too


def test_a_wrong_tolerance_gets_a_true_hint():
    assert "2^-24" in ex.check_tolerance(machine_epsilon).message
    assert "denominator" in ex.check_tolerance(no_denominator).message
    assert "sum|x|" in ex.check_tolerance(abs_of_sum).message
    assert "math.inf" in ex.check_tolerance(no_infinity).message
    for answer in (machine_epsilon, no_denominator, no_infinity):  # hints name what each got wrong
        assert "not with |sum x|" not in ex.check_tolerance(answer).message


def test_a_wrong_prediction_gets_a_true_hint():
    assert "add it" in ex.check_predicted_time(no_launch_cost).message
    assert "4 bytes" in ex.check_predicted_time(elements_not_bytes).message
    assert "10^3 bytes per microsecond" in ex.check_predicted_time(bandwidth_units).message
