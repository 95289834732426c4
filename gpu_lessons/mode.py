"""GPU or simulator: decided once, before ``numba.cuda`` is imported.

numba-cuda reads ``NUMBA_ENABLE_CUDASIM`` when ``numba.cuda`` is first imported, so the choice has to
be made here, first. ``GPU_LESSONS_MODE`` forces it: ``gpu``, ``sim`` or ``auto`` (the default).
``compile`` is a third mode, for the compile checks (``gpu_lessons.matrix``): numba's real compiler
(the simulator off) without a GPU; kernels compile to PTX for a named target, nothing launches.

``GPU_LESSONS_DEVICE=t4|a100|a10|rtx3060|l4|rtx4090|h100|h200`` makes the simulator stand in for one
of the target GPUs (``gpu_lessons.targets``): numba and the course see that GPU's compute capability
and limits (``gpu_lessons.sim.target``), so what it cannot run is left out and sizes follow its
limits, on a laptop. It implies the simulator in ``auto`` mode; with ``GPU_LESSONS_MODE=gpu`` it is
an error (a real GPU reports its own facts).

The choice is made once per process, when ``gpu_lessons`` is imported; every later ``choose_mode()``
(bench.py and vector.py ask at their import) returns it, whatever the environment says by then: a
script or test that sets ``GPU_LESSONS_MODE`` after the import cannot switch numba-cuda any more, so
it must not make a later import fail.
"""

import ctypes
import os
import sys

MODE_VARIABLE = "GPU_LESSONS_MODE"
MODES = ("auto", "gpu", "sim", "compile")
DEVICE_VARIABLE = "GPU_LESSONS_DEVICE"
_chosen: str | None = None  # the decision of this process, once made


class ModeError(RuntimeError):
    """The requested mode cannot be used in this Python process."""


def cuda_gpu_count() -> int:
    """Number of CUDA devices the driver reports, without importing numba.cuda (0 when none)."""
    names = ["nvcuda.dll"] if sys.platform == "win32" else ["libcuda.so.1", "libcuda.so"]
    for name in names:
        try:
            libcuda = ctypes.CDLL(name)
        except OSError:
            continue
        count = ctypes.c_int(0)
        if libcuda.cuInit(0) != 0 or libcuda.cuDeviceGetCount(ctypes.byref(count)) != 0:
            return 0
        return count.value
    return 0


def requested_mode() -> str:
    value = os.environ.get(MODE_VARIABLE, "auto").strip().lower() or "auto"
    if value not in MODES:
        raise ModeError(f"{MODE_VARIABLE}={value!r} is not a mode; choose one of: {', '.join(MODES)}")
    return value


def requested_target() -> str | None:
    """The target key ``GPU_LESSONS_DEVICE`` names for the simulator (None when unset or empty); an
    unknown key is a ModeError naming the targets."""
    value = os.environ.get(DEVICE_VARIABLE, "").strip().lower()
    if not value:
        return None
    from .targets import TARGETS  # no numba there: safe before the mode is chosen

    if value not in TARGETS:
        raise ModeError(f"{DEVICE_VARIABLE}={value!r} is not a target GPU; choose one of: "
                        f"{', '.join(TARGETS)}")
    return value


def _imported_mode() -> str | None:
    """The mode numba.cuda was already imported in, or None if it was not imported yet."""
    if "numba.cuda" not in sys.modules:
        return None
    from numba.cuda.core import config  # numba.cuda is already imported here (checked above)

    return "sim" if config.ENABLE_CUDASIM else "gpu"


def choose_mode() -> str:
    """Decide 'gpu' or 'sim' (once per process), set NUMBA_ENABLE_CUDASIM to match, return the choice."""
    global _chosen
    if _chosen is not None:
        return _chosen
    _chosen = _decide()
    return _chosen


def _decide() -> str:
    wanted = requested_mode()
    target = requested_target()
    already = _imported_mode()
    if target is not None and wanted == "gpu":
        raise ModeError(f"{DEVICE_VARIABLE}={target} makes the simulator stand in for a target GPU, but "
                        f"{MODE_VARIABLE}=gpu asks for the real one: unset one of them")
    if wanted == "auto":
        if already is not None:
            return already
        if target is not None or os.environ.get("NUMBA_ENABLE_CUDASIM", "0") == "1":
            wanted = "sim"
        else:
            wanted = "gpu" if cuda_gpu_count() > 0 else "sim"
    elif wanted == "gpu" and already is None and cuda_gpu_count() == 0:
        raise ModeError(
            f"{MODE_VARIABLE}=gpu but no CUDA GPU is visible to the driver; unset it to use the simulator"
        )
    if wanted == "compile" and already == "gpu":  # the real compiler either way
        already = "compile"
    if already is not None and already != wanted:
        raise ModeError(
            f"numba.cuda was already imported in {already!r} mode, but gpu_lessons wants {wanted!r}. "
            "Restart the Python kernel and import gpu_lessons before numba.cuda, "
            f"or set {MODE_VARIABLE}={already} to keep the mode you have."
        )
    os.environ["NUMBA_ENABLE_CUDASIM"] = "1" if wanted == "sim" else "0"
    return wanted
