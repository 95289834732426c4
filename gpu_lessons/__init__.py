"""gpu-lessons: GPU performance lessons with real numba.cuda kernels.

Importing this package picks the mode (a real GPU, or numba-cuda's simulator when there is none)
before ``numba.cuda`` is imported; ``GPU_LESSONS_MODE=gpu|sim|auto`` forces the choice. In simulator
mode it also installs the warp-level primitives the simulator lacks (see ``gpu_lessons.sim``).
"""

from .mode import ModeError, choose_mode

MODE = choose_mode()
SIMULATED = MODE == "sim"

if SIMULATED:
    from .sim import install as _install_simulator_extras

    _install_simulator_extras()

from .device import describe, device_info  # noqa: E402

__all__ = ["MODE", "SIMULATED", "ModeError", "describe", "device_info"]
__version__ = "0.1.0"
