"""Lesson 5's exercises: the notebook's skeletons fail their checks; the solutions pass."""

from test_exercises import exercise_tests

import gpu_lessons
from gpu_lessons.exercises import reduce as ex

cuda = ex.cuda  # numba.cuda as gpu_lessons imported it (the mode is chosen before the import)

NOTEBOOK = "05_reduce.ipynb"
SOLUTIONS = [
    (ex.check_warp_reduce_sum, ex.solution_warp_reduce_sum),
    (ex.check_reduce_sum, ex.solution_reduce_sum),
    (ex.check_tolerance, ex.solution_tolerance),
]


test_notebook_has_one_cell_per_exercise, test_skeleton_fails, test_solution_passes = exercise_tests(
    NOTEBOOK, SOLUTIONS)


@cuda.jit(device=True)
def half_warp(value):
    offset = 8  # misses the upper half of the warp
    while offset > 0:
        value += cuda.shfl_down_sync(0xFFFFFFFF, value, offset)
        offset //= 2
    return value


@cuda.jit
def early_exit(x, out):
    i = cuda.grid(1)
    if i >= x.size:
        return  # lanes past the end leave: the shuffles of their warp can never complete
    value = ex.solution_warp_reduce_sum(x[i])
    if cuda.threadIdx.x % 32 == 0:
        cuda.atomic.add(out, 0, value)


def test_wrong_answers_are_caught():
    assert not ex.check_warp_reduce_sum(half_warp).passed
    result = ex.check_reduce_sum(early_exit)
    assert not result.passed, result
    if gpu_lessons.SIMULATED:  # on a GPU the early return does not hang: it only gives a wrong sum
        assert "Deadlock" in result.message, result
    assert not ex.check_tolerance(lambda x, d: d * 2**-24 * abs(float(x.sum()))).passed  # |sum|, not sum|x|
    assert not ex.check_tolerance(lambda x, d: 1 / 0).passed
