"""Whether a learner's function can call one of the course's helpers (the exercises that must be worked,
not looked up, refuse one that does): followed through the objects its names resolve to."""

from __future__ import annotations

import dis
import functools
import importlib
from types import ModuleType


def _code_names(code) -> set:
    """The global and attribute names a code object reads, its nested functions' included."""
    names = set(code.co_names) | set(code.co_freevars)
    for const in code.co_consts:
        if hasattr(const, "co_names"):
            names |= _code_names(const)
    return names


def reaches(kernel, helper) -> bool:
    """Whether ``kernel`` can call ``helper``: the objects its names resolve to (globals, closure
    cells, attributes of modules it reads), device functions and plain functions followed into. The
    objects, not their names: an alias (``brs = kernels.block_reduce_sum``) or a wrapper is found."""
    target = getattr(helper, "py_func", helper)
    seen: set = set()

    def visit(value) -> bool:
        if isinstance(value, functools.partial):  # partial(helper, ...): the helper and its bound arguments
            return any(visit(v) for v in (value.func, *value.args, *value.keywords.values()))
        function = getattr(value, "py_func", value)
        if function is target:
            return True
        code = getattr(function, "__code__", None)
        library = (getattr(function, "__module__", "") or "").split(".")[0] in ("numba", "numpy")
        if code is None or library or id(function) in seen:
            return False
        seen.add(id(function))
        names = _code_names(code)
        namespace = getattr(function, "__globals__", {})
        values = [namespace[n] for n in names if n in namespace]
        values += [cell.cell_contents for cell in (function.__closure__ or ()) if _filled(cell)]
        values += _imported_course_modules(code)  # `from gpu_lessons.sim import trace` inside it
        values += list(getattr(function, "__defaults__", None) or ())  # def f(x, helper=course.helper)
        values += list((getattr(function, "__kwdefaults__", None) or {}).values())
        modules = _course_modules(values)
        while modules:  # kernels.block_reduce_sum, ex.lesson.model_times: attributes of modules it reads
            found = [getattr(module, n) for module in modules for n in names if hasattr(module, n)]
            modules = [v for v in _course_modules(found) if v not in values]
            values += found
        return any(visit(v) for v in values if not isinstance(v, ModuleType))

    return visit(kernel)


def answers(*modules) -> list:
    """Every reference solution (``solution_*``) in modules: no exercise may be answered by calling one."""
    return [getattr(m, n) for m in modules for n in dir(m) if n.startswith("solution_")]


def _imported_course_modules(code) -> list:
    """The course's modules a code object (or one nested in it) imports, each parent package included."""
    modules = []
    for instruction in dis.get_instructions(code):
        parts = str(instruction.argval).split(".")
        if instruction.opname == "IMPORT_NAME" and parts[0] == "gpu_lessons":
            modules += [importlib.import_module(".".join(parts[:i])) for i in range(1, len(parts) + 1)]
    for const in code.co_consts:
        if hasattr(const, "co_names"):
            modules += _imported_course_modules(const)
    return modules


def _course_modules(values) -> list:
    """The course's own modules among values (where its helpers live)."""
    return [v for v in values if isinstance(v, ModuleType) and v.__name__.split(".")[0] == "gpu_lessons"]


def _filled(cell) -> bool:
    try:
        cell.cell_contents  # noqa: B018 (an empty cell raises)
    except ValueError:
        return False
    return True
