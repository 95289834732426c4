"""Lesson 3's exercises: each skeleton, exactly as the notebook has it, fails its check; each
reference solution passes; typical wrong answers are caught."""

import numpy as np
from test_exercises import exercise_tests

from gpu_lessons.exercises import coalescing as ex

# isort: off
from numba import cuda  # after gpu_lessons chose the mode; kernels below use it as a global
# isort: on

NOTEBOOK = "03_coalescing_aos_soa.ipynb"
SOLUTIONS = [
    (ex.check_sector_prediction, (ex.gather, ex.solution_sector_prediction)),
    (ex.check_speed_soa, (ex.solution_speed_soa,)),
    (ex.check_scale_vec4, (ex.solution_scale_vec4,)),
]


test_notebook_has_one_cell_per_exercise, test_skeleton_fails, test_solution_passes = exercise_tests(
    NOTEBOOK, SOLUTIONS)


def test_the_sector_check_traces_the_kernel_it_is_given():
    @cuda.jit
    def contiguous(x, out):
        i = cuda.grid(1)
        if i < out.size:
            out[i] = x[i]

    assert ex.check_sector_prediction(contiguous, lambda: 4).passed
    assert not ex.check_sector_prediction(contiguous, lambda: 8).passed
    assert not ex.check_sector_prediction(ex.gather, lambda: 4).passed  # 8 for the gather


def test_an_aos_read_in_soa_clothing_is_caught():
    @cuda.jit
    def strided(x, y, vx, vy, out):  # right values, but reads vx with a stride of 2
        i = cuda.grid(1)
        if i < out.size:
            a = vx[(2 * i) % out.size]
            a = vx[i] + 0 * a
            out[i] = (a * a + vy[i] * vy[i]) ** 0.5

    result = ex.check_speed_soa(strided)
    assert not result.passed and "8 sectors per request" in result.message


def test_a_float4_kernel_without_16_byte_loads_is_caught():
    @cuda.jit
    def scalar(x, out, a):
        i = cuda.grid(1)
        for j in range(4 * i, min(4 * i + 4, x.size)) if i < x.size // 4 else range(0):
            out[j] = a * x[j]
        j = 4 * (x.size // 4) + (i - x.size // 4)
        if i >= x.size // 4 and j < x.size:
            out[j] = a * x[j]

    result = ex.check_scale_vec4(scalar)
    assert not result.passed and "16 bytes at a time" in result.message


def test_wrong_answers_are_feedback_not_errors():
    assert not ex.check_sector_prediction(ex.gather, lambda: None).passed
    assert not ex.check_sector_prediction(ex.gather, lambda: 1 / 0).passed
    assert np.isclose(ex.traced_load_sectors(ex.gather), 8)
