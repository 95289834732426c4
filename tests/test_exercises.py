"""Each exercise's skeleton, exactly as the notebook has it, fails its check; each solution passes.

The skeleton is taken from the notebook cell tagged ``exercise`` (so the two never drift apart) and
executed as the notebook would run it; the check's ``Result`` is what it returns.
"""

from pathlib import Path

import nbformat
import pytest

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


def exercise_tests(notebook: str, solutions: list, wrong_answers: list | None = None):
    """The tests every lesson's exercises share, for ``name = exercise_tests(...)`` in its test module:
    one notebook cell per exercise, each skeleton fails its check, each solution passes it, and each
    plausible wrong answer fails it.

    ``solutions``: (check, solution) pairs, one per exercise in notebook order; ``wrong_answers``:
    (check, answer) pairs, at least two per check (a tuple is the check's arguments, as for
    solutions). A wrong answer is one a learner would plausibly write, not a skeleton."""

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

    wrong = wrong_answers or []

    def test_every_check_has_two_plausible_wrong_answers():
        for check, _ in solutions:
            count = sum(1 for c, _ in wrong if c is check)
            assert count >= 2, f"{check.__name__}: {count} plausible wrong answers tested (at least 2)"

    @pytest.mark.parametrize("check, answer", wrong or [(None, None)])
    def test_wrong_answer_fails(check, answer):
        if check is None:
            pytest.skip("no wrong answers listed (test_every_check_has_two_plausible_wrong_answers fails)")
        result = check(*answer) if isinstance(answer, tuple) else check(answer)
        assert not result.passed, result

    return (test_notebook_has_one_cell_per_exercise, test_skeleton_fails, test_solution_passes,
            test_every_check_has_two_plausible_wrong_answers, test_wrong_answer_fails)


