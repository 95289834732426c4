"""Lesson 5's exercises: the notebook's skeletons fail their checks, the solutions pass, and plausible
wrong answers (at least two per check) fail."""

from test_exercises import exercise_tests

import gpu_lessons
from gpu_lessons.exercises import reduce as ex

cuda = ex.cuda  # numba.cuda as gpu_lessons imported it (the mode is chosen before the import)
float32 = ex.float32


# ----------------------------------------------------------- exercise 1: warp_reduce_sum


@cuda.jit(device=True)
def half_warp(value):
    offset = 8  # starts at 8: misses the upper half of the warp
    while offset > 0:
        value += cuda.shfl_down_sync(0xFFFFFFFF, value, offset)
        offset //= 2
    return value


@cuda.jit(device=True)
def shuffle_up(value):
    offset = 16  # shfl_up: the sum gathers in lane 31, and lane 0 adds its own value five times
    while offset > 0:
        value += cuda.shfl_up_sync(0xFFFFFFFF, value, offset)
        offset //= 2
    return value


@cuda.jit(device=True)
def assigned_not_added(value):
    offset = 16
    while offset > 0:
        value = cuda.shfl_down_sync(0xFFFFFFFF, value, offset)  # replaces instead of adding
        offset //= 2
    return value


# ------------------------------------------------------------------ exercise 2: reduce_sum


@cuda.jit
def early_exit(x, out):
    i = cuda.grid(1)
    if i >= x.size:
        return  # lanes past the end leave: the shuffles of their warp can never complete
    value = ex.solution_warp_reduce_sum(x[i])
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
    value = ex.solution_warp_reduce_sum(value)
    if tid % 32 == 0:
        warp_sums[tid // 32] = value
    cuda.syncthreads()
    value = warp_sums[tid] if tid < (cuda.blockDim.x + 31) // 32 else float32(0)
    if tid < 32:
        value = ex.solution_warp_reduce_sum(value)
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
    value = ex.solution_warp_reduce_sum(value)
    if tid % 32 == 0:
        warp_sums[tid // 32] = value
    cuda.syncthreads()
    value = warp_sums[tid] if tid < (cuda.blockDim.x + 31) // 32 else float32(0)
    if tid < 32:
        value = ex.solution_warp_reduce_sum(value)
        cuda.atomic.add(out, 0, value)  # every lane of warp 0, not only lane 0 (which holds the sum)


# ----------------------------------------------------------------- exercise 3: a tolerance


def abs_of_sum(x, depth):
    u = 2.0**-24
    return depth * u / (1 - depth * u) * abs(float(x.sum()))  # |sum x|, not sum |x|


def machine_epsilon(x, depth):
    u = 2.0**-23  # machine epsilon, twice the unit roundoff
    return depth * u / (1 - depth * u) * float(abs(x).astype("float64").sum())


def no_denominator(x, depth):
    return depth * 2.0**-24 * float(abs(x).astype("float64").sum())  # d u, not d u / (1 - d u)


NOTEBOOK = "05_reduce.ipynb"
SOLUTIONS = [
    (ex.check_warp_reduce_sum, ex.solution_warp_reduce_sum),
    (ex.check_reduce_sum, ex.solution_reduce_sum),
    (ex.check_tolerance, ex.solution_tolerance),
]
WRONG_ANSWERS = [
    (ex.check_warp_reduce_sum, half_warp),
    (ex.check_warp_reduce_sum, shuffle_up),
    (ex.check_warp_reduce_sum, assigned_not_added),
    (ex.check_reduce_sum, early_exit),
    (ex.check_reduce_sum, no_grid_stride),
    (ex.check_reduce_sum, every_lane_adds),
    (ex.check_tolerance, abs_of_sum),
    (ex.check_tolerance, machine_epsilon),
    (ex.check_tolerance, no_denominator),
]

(test_notebook_has_one_cell_per_exercise, test_skeleton_fails, test_solution_passes,
 test_every_check_has_two_plausible_wrong_answers, test_wrong_answer_fails) = exercise_tests(
    NOTEBOOK, SOLUTIONS, WRONG_ANSWERS)


def test_an_early_exit_deadlocks_on_the_simulator():
    result = ex.check_reduce_sum(early_exit)
    assert not result.passed
    if gpu_lessons.SIMULATED:  # on a GPU the early return does not hang: it only gives a wrong sum
        assert "Deadlock" in result.message, result


def test_a_wrong_tolerance_gets_a_true_hint():
    assert "2^-24" in ex.check_tolerance(machine_epsilon).message
    assert "denominator" in ex.check_tolerance(no_denominator).message
    assert "sum|x|" in ex.check_tolerance(abs_of_sum).message
