"""Lesson 3's exercises: each skeleton, exactly as the notebook has it, fails its check; each
reference solution passes; plausible wrong answers fail with feedback that says what is wrong."""

import numpy as np
from test_exercises import exercise_tests

from gpu_lessons.exercises import coalescing as ex

# isort: off
from numba import cuda  # after gpu_lessons chose the mode; the kernels below use it
from gpu_lessons.vector import load4, store4
# isort: on

NOTEBOOK = "03_coalescing_aos_soa.ipynb"


@cuda.jit
def speed_strided(x, y, vx, vy, out):
    """Right values, but vx read with a stride of 2 as well: an AoS read in SoA clothing."""
    i = cuda.grid(1)
    if i < out.size:
        a = vx[(2 * i) % out.size]
        a = vx[i] + 0 * a
        out[i] = (a * a + vy[i] * vy[i]) ** 0.5


@cuda.jit
def speed_of_positions(x, y, vx, vy, out):
    """Coalesced, but the speed of the positions."""
    i = cuda.grid(1)
    if i < out.size:
        out[i] = (x[i] * x[i] + y[i] * y[i]) ** 0.5


@cuda.jit
def speed_squared(x, y, vx, vy, out):
    """Coalesced, but no square root."""
    i = cuda.grid(1)
    if i < out.size:
        out[i] = vx[i] * vx[i] + vy[i] * vy[i]


@cuda.jit
def scale_scalar(x, out, a):
    """Right values, one float at a time: no 16-byte loads."""
    i = cuda.grid(1)
    for j in range(4 * i, min(4 * i + 4, x.size)) if i < x.size // 4 else range(0):
        out[j] = a * x[j]
    j = 4 * (x.size // 4) + (i - x.size // 4)
    if i >= x.size // 4 and j < x.size:
        out[j] = a * x[j]


@cuda.jit
def scale_tail_off_by_groups(x, out, a):
    """The tail indexed 4 * groups + i: threads past the groups skip the first leftovers."""
    i = cuda.grid(1)
    groups = x.size // 4
    if i < groups:
        v0, v1, v2, v3 = load4(x, i)
        store4(out, i, a * v0, a * v1, a * v2, a * v3)
    else:
        j = 4 * groups + i
        if j < x.size:
            out[j] = a * x[j]


@cuda.jit
def scale_tail_one_element(x, out, a):
    """Only the first leftover element is written (one thread, one element)."""
    i = cuda.grid(1)
    groups = x.size // 4
    if i < groups:
        v0, v1, v2, v3 = load4(x, i)
        store4(out, i, a * v0, a * v1, a * v2, a * v3)
    elif i == groups and 4 * groups < x.size:
        out[4 * groups] = a * x[4 * groups]


SOLUTIONS = [
    (ex.check_sector_prediction, (ex.gather, ex.solution_sector_prediction)),
    (ex.check_speed_soa, (ex.solution_speed_soa,)),
    (ex.check_scale_vec4, (ex.solution_scale_vec4,)),
]
WRONG_ANSWERS = [
    (ex.check_sector_prediction, (ex.gather, lambda: 4)),  # as if the gather were a contiguous copy
    (ex.check_sector_prediction, (ex.gather, lambda: 32)),  # a sector per lane
    (ex.check_sector_prediction, (ex.gather, lambda: 16)),  # two lanes per sector
    (ex.check_speed_soa, (speed_strided,)),
    (ex.check_speed_soa, (speed_of_positions,)),
    (ex.check_speed_soa, (speed_squared,)),
    (ex.check_scale_vec4, (scale_scalar,)),
    (ex.check_scale_vec4, (scale_tail_off_by_groups,)),
    (ex.check_scale_vec4, (scale_tail_one_element,)),
]

(test_notebook_has_one_cell_per_exercise, test_skeleton_fails, test_solution_passes,
 test_every_check_has_two_plausible_wrong_answers, test_wrong_answer_fails) = exercise_tests(
    NOTEBOOK, SOLUTIONS, WRONG_ANSWERS)


def test_the_sector_check_traces_the_kernel_it_is_given():
    @cuda.jit
    def contiguous(x, out):
        i = cuda.grid(1)
        if i < out.size:
            out[i] = x[i]

    assert ex.check_sector_prediction(contiguous, lambda: 4).passed
    assert not ex.check_sector_prediction(contiguous, lambda: 8).passed


def test_the_feedback_says_what_is_wrong():
    assert "8 sectors per request" in ex.check_speed_soa(speed_strided).message
    assert "16 bytes at a time" in ex.check_scale_vec4(scale_scalar).message
    assert "never written" in ex.check_scale_vec4(scale_tail_one_element).message
    assert "you predicted 4 sectors" in ex.check_sector_prediction(ex.gather, lambda: 4).message


def test_wrong_answers_are_feedback_not_errors():
    assert not ex.check_sector_prediction(ex.gather, lambda: None).passed
    assert not ex.check_sector_prediction(ex.gather, lambda: 1 / 0).passed
    assert np.isclose(ex.traced_load_sectors(ex.gather), 8)
