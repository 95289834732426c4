"""The lessons, in teaching order. Each module has NAME, TITLE, NOTEBOOK, SUMMARY, COMPARISONS,
``measure()`` (GPU: the tidy table), ``check()`` (either mode: kernels against NumPy) and
``figures()``. ``ceilings`` is the experiment every roofline is drawn from."""

from __future__ import annotations

from types import ModuleType

from . import bank_conflicts, ceilings, coalescing, gemm, littles_law, reduce, roofline

LESSONS: dict[str, ModuleType] = {
    module.NAME: module for module in (roofline, littles_law, coalescing, bank_conflicts, reduce, gemm)
}
EXPERIMENTS: dict[str, ModuleType] = {ceilings.NAME: ceilings, **LESSONS}


class UnknownLesson(KeyError):
    def __str__(self) -> str:
        return self.args[0]


def get(name: str, include_ceilings: bool = False) -> ModuleType:
    choices = EXPERIMENTS if include_ceilings else LESSONS
    if name not in choices:
        raise UnknownLesson(f"unknown lesson {name!r}; choose from: {', '.join(choices)}")
    return choices[name]


def comparisons() -> list:
    """Every scoreboard row, in lesson order (the ceilings first)."""
    return [c for module in EXPERIMENTS.values() for c in getattr(module, "COMPARISONS", [])]
