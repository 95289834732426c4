"""The lessons, in teaching order, and the one protocol every lesson module follows.

A lesson module (``lessons/<topic>.py``) has:

    NAME, TITLE, NOTEBOOK, SUMMARY   its topic name, title, notebook file and one-line summary
    COMPARISONS                      scoreboard rows: our best variant against what a user would pick
    SECTIONS                         the experiment, as ``runner.Section``s measured in order on a GPU
    check() -> DataFrame             every kernel against NumPy on awkward sizes (either mode)
    figures(result, roof) -> dict    the lesson's figures from a ``LessonResult`` and the measured roof
    NCU_METRICS, ncu_cases()         optional: the Nsight Compute counters ``record --ncu`` keeps
    left_out() -> {name: why}        optional: the kernels this GPU cannot run (``gpu_lessons.gates``);
                                     check() and the sections leave them out, and one line says so

What a run learns travels in its ``LessonResult`` (table, facts, evidence), never in module state.
``load(name)`` gives a lesson's result: measured live on a GPU, else its recording under ``data/``.
``ceilings`` is the experiment every roofline is drawn from.
"""

from __future__ import annotations

from types import ModuleType

from .. import SIMULATED
from ..device import device_info
from ..results import LessonResult, MissingRecordingError
from . import bank_conflicts, ceilings, coalescing, gemm, littles_law, reduce, roofline, runner, tensor_cores

LESSONS: dict[str, ModuleType] = {
    module.NAME: module
    for module in (roofline, littles_law, coalescing, bank_conflicts, reduce, gemm, tensor_cores)
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


def load(name: str, live: bool | None = None, gpu: str | None = None, root=None) -> LessonResult:
    """A lesson's result: measured now on a GPU (``live=None``: when there is one), else recorded."""
    return runner.load(get(name, include_ceilings=True), live=live, gpu=gpu, root=root)


_MEASURED_ROOFS: dict[str, LessonResult] = {}  # this process's live ceilings runs, by GPU slug


def roof(live_ceilings: LessonResult | None = None, gpu: str | None = None, root=None) -> dict:
    """The measured roof (bandwidth and FP32 ceilings) that results are divided by.

    ``live_ceilings``: from that run. ``gpu``: from that GPU's recording (``"nvidia-h200"``: the
    reference). Neither: this device's -- on a GPU, its own recording (``data/<its slug>/``) if there is
    one, else the ceilings measured live once and kept for the process (never another GPU's roof under a
    live result); on the simulator, the recorded reference GPU's, as every simulated lesson shows."""
    if live_ceilings is not None:
        return ceilings.ceilings_from(live_ceilings.table)
    if gpu is None and not SIMULATED:
        return ceilings.ceilings_from(this_gpu_ceilings(root).table)
    return ceilings.ceilings_from(runner.load(ceilings, live=False, gpu=gpu, root=root).table)


def roof_of(result: LessonResult) -> dict:
    """The roof of the GPU a result was measured on: this device's for a live result, the recording's
    own GPU's for a recording (never one GPU's results divided by another's roof)."""
    return roof() if result.live else roof(gpu=result.gpu)


def this_gpu_ceilings(root=None) -> LessonResult:
    """On a GPU: its recorded ceilings, else measured now (once per process)."""
    slug = device_info().slug
    try:
        return runner.load(ceilings, live=False, gpu=slug, root=root)
    except MissingRecordingError:
        pass
    if slug not in _MEASURED_ROOFS:
        print(f"No ceilings recorded for {slug}: measuring them once "
              "('gpu-lessons record ceilings' keeps them)")
        _MEASURED_ROOFS[slug] = runner.measure(ceilings, show_progress=False)
    return _MEASURED_ROOFS[slug]


def comparisons() -> list:
    """Every scoreboard row, in lesson order (the ceilings first)."""
    return [c for module in EXPERIMENTS.values() for c in getattr(module, "COMPARISONS", [])]
