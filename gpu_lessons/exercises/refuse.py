"""The refusal the exercises share: a learner's function that calls a course helper which computes the
answer, or one of the reference solutions (``solution_*``), is told so and fails (``reach.reaches``
finds the call however it is named or imported)."""

from __future__ import annotations

from . import report
from .reach import answers, reaches


def _name(function) -> str:
    return getattr(getattr(function, "py_func", function), "__name__", repr(function))


def _yours(function) -> str:
    name = _name(function)
    return f"your {name}" if name.isidentifier() else "your function"


def refused(name: str, functions, module, helpers=(), why: str = "the exercise is to work it out yourself"):
    """A failing ``Result`` if one of ``functions`` (the learner's) reaches one of ``helpers`` ((helper,
    what it is called in the message) pairs) or a reference solution of ``module``; None otherwise.

    The reference solution handed in whole (every function one of ``module``'s ``solution_*``) is the
    exercise's own answer and is not refused: the tests hand it in to show that the check passes it."""
    functions = [f for f in functions if f is not None]
    for function in functions:
        for helper, what in helpers:
            if reaches(function, helper):
                return report(name, False, f"{_yours(function)} calls {what}, which computes the answer "
                              f"for you: {why}")
    references = answers(module)
    if all(any(function is answer for answer in references) for function in functions):
        return None
    for function in functions:
        for answer in references:
            if function is answer:
                return report(name, False, f"you handed in exercises.{_name(answer)}, a reference "
                              f"solution: {why}")
            if reaches(function, answer):
                return report(name, False, f"{_yours(function)} calls exercises.{_name(answer)}, a "
                              f"reference solution: {why}")
    return None
