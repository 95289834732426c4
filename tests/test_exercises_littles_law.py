"""Lesson 2's exercises: each skeleton, exactly as the notebook has it, fails; each solution passes."""

from test_exercises import exercise_tests

from gpu_lessons.exercises import littles_law as ex

NOTEBOOK = "02_littles_law_ilp.ipynb"
SOLUTIONS = [
    (ex.check_predict_bandwidth, ex.solution_predict_bandwidth),
    (ex.check_occupancy_by_hand, ex.solution_occupancy_by_hand),
    (ex.check_copy2_kernel, ex.solution_copy2_kernel),
    (ex.check_chains_for_peak, ex.solution_chains_for_peak),
]


test_notebook_has_one_cell_per_exercise, test_skeleton_fails, test_solution_passes = exercise_tests(
    NOTEBOOK, SOLUTIONS)


def test_wrong_answers_are_caught():
    def no_writes(w, u, b, lat, sms, ceiling):  # forgets that a copy writes what it reads
        return min(ceiling, w * 32 * u * b * sms / lat)

    assert not ex.check_predict_bandwidth(no_writes).passed
    four = {case: (4, "registers") for case in ex.OCCUPANCY_CASES}
    assert not ex.check_occupancy_by_hand(lambda: four).passed
    assert not ex.check_chains_for_peak(lambda latency, warps: 8).passed
