"""Exercise checks for the notebooks.

Each notebook exercise is a cell (tagged ``exercise`` in its metadata) holding a skeleton for the
learner to finish, ending with a call to a ``check_*`` function from the lesson's exercise module.
A check never raises on a wrong answer: it prints what is wrong and returns a ``Result``, so that
the notebook still runs top to bottom. The tests prove both directions: each reference solution
passes its check, and each skeleton, exactly as the notebook has it, fails.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Result:
    exercise: str
    passed: bool
    message: str

    def __str__(self) -> str:
        mark = "PASSED" if self.passed else "NOT YET"
        return f"[{mark}] {self.exercise}: {self.message}"


def report(exercise: str, passed: bool, message: str) -> Result:
    result = Result(exercise, passed, message)
    print(result)
    return result


def guarded(exercise: str, attempt) -> Result | None:
    """Run the learner's code; an exception is a 'not yet' with its message, not a crash."""
    try:
        return attempt()
    except NotImplementedError:
        return report(exercise, False, "not answered yet (the skeleton raises NotImplementedError)")
    except Exception as error:  # noqa: BLE001 - any error in learner code is feedback, not a failure
        return report(exercise, False, f"your code raised {type(error).__name__}: {error}")
