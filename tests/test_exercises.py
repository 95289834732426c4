"""Each exercise's skeleton, exactly as the notebook has it, fails its check; each solution passes.

The skeleton is taken from the notebook cell tagged ``exercise`` (so the two never drift apart) and
executed as the notebook would run it; the check's ``Result`` is what it returns.
"""

from pathlib import Path

import nbformat
import pytest

from gpu_lessons.exercises import roofline as ex

NOTEBOOKS = Path(__file__).resolve().parents[1] / "notebooks"


def exercise_cells(notebook: str) -> list[str]:
    nb = nbformat.read(NOTEBOOKS / notebook, as_version=4)
    return [c.source for c in nb.cells if "exercise" in c.metadata.get("tags", [])]


def run_cell(source: str):
    """Execute a cell; its last line is the check call, whose Result we return."""
    *body, last = source.rstrip().splitlines()
    namespace: dict = {}
    exec("\n".join(body), namespace)  # noqa: S102 - the notebook's own code
    return eval(last.rstrip(";"), namespace)  # noqa: S307


def exercise_tests(notebook: str, solutions: list):
    """The tests every lesson's exercises share, for ``name = exercise_tests(...)`` in its test module:
    one notebook cell per exercise, each skeleton fails its check, each solution passes it.
    ``solutions``: (check, solution) pairs; a tuple solution is the check's arguments."""

    def test_notebook_has_one_cell_per_exercise():
        assert len(exercise_cells(notebook)) == len(solutions)

    @pytest.mark.parametrize("index", range(len(solutions)))
    def test_skeleton_fails(index):
        result = run_cell(exercise_cells(notebook)[index])
        assert result is not None and not result.passed, result

    @pytest.mark.parametrize("check, solution", solutions)
    def test_solution_passes(check, solution):
        result = check(*solution) if isinstance(solution, tuple) else check(solution)
        assert result.passed, result

    return test_notebook_has_one_cell_per_exercise, test_skeleton_fails, test_solution_passes


ROOFLINE_SOLUTIONS = [
    (ex.check_saxpy_intensity, ex.solution_saxpy_intensity),
    (ex.check_attainable, ex.solution_attainable),
    (ex.check_fma4_kernel, ex.solution_fma4_kernel),
]


(test_roofline_notebook_has_one_cell_per_exercise, test_roofline_skeleton_fails,
 test_roofline_solution_passes) = exercise_tests("01_roofline.ipynb", ROOFLINE_SOLUTIONS)


def test_wrong_answers_are_caught():
    assert not ex.check_saxpy_intensity(lambda: 2 / 16).passed  # the triad's intensity, not SAXPY's
    assert not ex.check_attainable(lambda i, bw, peak: bw * i).passed  # no flat roof
    assert not ex.check_attainable(lambda i, bw, peak: 1 / 0).passed  # an error is feedback
