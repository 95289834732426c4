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


def recording_readers() -> list[tuple[object, str]]:
    """The course's functions that read a recording, each with what a refusal calls it (an exercise to be
    worked out from what it is given refuses a function that calls one)."""
    from .. import lessons  # here: gpu_lessons.lessons imports the exercises' lesson modules
    from ..lessons import runner
    from ..results import store

    readers = [(lessons.load, "lessons.load"), (runner.load, "lessons.runner.load"),
               (lessons.roof, "lessons.roof"), (store.read_result, "results.read_result"),
               (store.read_probe, "results.read_probe"), (store.list_recordings, "results.list_recordings")]
    readers += [(getattr(store, n), f"results.store.{n}") for n in dir(store) if n.startswith("_read_")]
    return [(f, f"{what}, which reads a recording") for f, what in readers]


def own_data(function, kinds, namespace=None, seen=None) -> list[str]:
    """The names through which ``function`` (or a function of the learner's it calls, defined beside it)
    reads an object of ``kinds`` it was not given (a recording loaded beforehand, its table): a global, a
    closure cell or a default argument. reach.reaches follows functions, not data: this looks for the data."""
    function = getattr(function, "py_func", function)
    code = getattr(function, "__code__", None)
    globals_ = getattr(function, "__globals__", None)
    namespace = globals_ if namespace is None else namespace
    seen = set() if seen is None else seen
    if code is None or globals_ is not namespace or id(function) in seen:
        return []  # not the learner's: the course's, a library's, a builtin
    seen.add(id(function))
    values = [(n, namespace[n]) for n in _names(code) if n in namespace]
    values += [(n, cell.cell_contents) for n, cell in zip(code.co_freevars, function.__closure__ or (),
                                                         strict=False) if _filled(cell)]
    values += [("a default argument", v) for v in (function.__defaults__ or ())]
    values += [(f"the default of {n}", v) for n, v in (function.__kwdefaults__ or {}).items()]
    found = [n for n, v in values if isinstance(v, kinds)]
    for _, value in values:
        found += own_data(value, kinds, namespace, seen)
    return found


def _names(code) -> set:
    names = set(code.co_names)
    for const in code.co_consts:
        if hasattr(const, "co_names"):
            names |= _names(const)
    return names


def _filled(cell) -> bool:
    try:
        cell.cell_contents  # noqa: B018 (an empty cell raises)
    except ValueError:
        return False
    return True
