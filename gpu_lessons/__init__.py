"""gpu-lessons: GPU performance lessons with real numba.cuda kernels.

Importing this package picks the mode (a real GPU, or numba-cuda's simulator when there is none)
before ``numba.cuda`` is imported; ``GPU_LESSONS_MODE=gpu|sim|auto`` forces the choice. In simulator
mode it also installs the warp-level primitives the simulator lacks (see ``gpu_lessons.sim``).

A mode that cannot be had (``GPU_LESSONS_MODE=gpu`` without a GPU, an unknown mode, ``numba.cuda``
imported first in the other mode) raises ``ModeError`` at the first use of the package: ``MODE``,
``SIMULATED``, ``describe()``, or the import of any of its modules (none of them gets to import
``numba.cuda`` in a mode nobody chose). ``import gpu_lessons`` alone does not fail, so that the
``gpu-lessons`` command, a module of this package, can report the problem in one line.
"""

import sys

from .mode import ModeError, choose_mode

__all__ = ["MODE", "SIMULATED", "ModeError", "describe", "device_info"]
__version__ = "0.1.0"
_NEED_THE_MODE = ("MODE", "SIMULATED", "describe", "device_info")
# the command's shell, where the course files are (--version), the notebooks' Colab cell: no mode needed
_WITHOUT_MODE = {f"{__name__}.{name}" for name in ("mode", "cli", "__main__", "course", "colab")}


class _StartFirst:
    """On ``sys.meta_path`` only while the mode could not be picked: importing a module of the package
    tries again first, and so raises the ModeError (or starts the package, and leaves)."""

    @staticmethod
    def find_spec(name, path=None, target=None):
        if name.startswith(f"{__name__}.") and name not in _WITHOUT_MODE:
            _start()
        return None


def _start() -> None:
    """Pick the mode (once per process) and bind what depends on it."""
    mode = choose_mode()
    if _StartFirst in sys.meta_path:
        sys.meta_path.remove(_StartFirst)
    if mode == "sim":
        from .sim import install

        install()
    from .device import describe, device_info

    globals().update(MODE=mode, SIMULATED=mode == "sim", describe=describe, device_info=device_info)


def __getattr__(name: str):
    """Only reached when the import could not pick the mode: try again, and raise its ModeError."""
    if name in _NEED_THE_MODE:
        _start()
        return globals()[name]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


try:
    _start()
except ModeError:
    sys.meta_path.insert(0, _StartFirst)  # raised again, whole, at the first use (see above)
