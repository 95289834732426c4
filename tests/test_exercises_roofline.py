"""Lesson 1's exercises: the notebook's skeletons fail their checks; the solutions pass."""

from test_exercises import exercise_tests

from gpu_lessons.exercises import roofline as ex

NOTEBOOK = "01_roofline.ipynb"
SOLUTIONS = [
    (ex.check_saxpy_intensity, ex.solution_saxpy_intensity),
    (ex.check_attainable, ex.solution_attainable),
    (ex.check_fma4_kernel, ex.solution_fma4_kernel),
]
WRONG_ANSWERS = [
    (ex.check_saxpy_intensity, lambda: 2 / 16),  # the triad's intensity, not SAXPY's
    (ex.check_saxpy_intensity, lambda: 2 / 8),  # counts only the reads
    (ex.check_attainable, lambda i, bw, peak: bw * i),  # no flat roof
    (ex.check_attainable, lambda i, bw, peak: 1 / 0),  # an error is feedback, not a crash
]

(test_notebook_has_one_cell_per_exercise, test_skeleton_fails, test_solution_passes,
 test_every_check_has_two_plausible_wrong_answers, test_wrong_answer_fails) = exercise_tests(
    NOTEBOOK, SOLUTIONS, WRONG_ANSWERS)
