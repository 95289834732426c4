"""The simulator as one of the target GPUs: ``GPU_LESSONS_DEVICE=t4`` (any key of ``gpu_lessons.targets``).

numba-cuda's simulator reports one fake device (compute capability 5.2, no attributes). With a target
chosen, its device and context report the target's instead, as a real device would:
``cuda.get_current_device().compute_capability``, ``.name``, ``.MULTIPROCESSOR_COUNT``,
``.MAX_THREADS_PER_MULTIPROCESSOR``, ``.MAX_SHARED_MEMORY_PER_BLOCK_OPTIN``, ``.L2_CACHE_SIZE``, ... and
``cuda.current_context().get_memory_info()`` (the target's memory, all of it free). The course reads
the same target (``device.device_info()``, ``occupancy.sm_limits()``), so the lessons leave out what
that GPU cannot run (``gpu_lessons.gates``) and size their grids and buffers for it, on a laptop.
Kernels still run on the simulator: the target changes what is asked, not how it runs.

``use(key)`` switches target within a process (the tests do: it also empties the caches of what was
read from the device); ``use(None)`` is the simulator as shipped.
"""

from __future__ import annotations

import os
from contextlib import contextmanager

from ..mode import DEVICE_VARIABLE, requested_target
from ..targets import Target, target

_standing_in: Target | None = None
_saved: dict = {}


def active() -> Target | None:
    """The target the simulator stands in for, or None (the simulator as shipped)."""
    return _standing_in


def attributes(t: Target) -> dict:
    """The device attributes a real ``t`` reports, by numba's names for them."""
    return {
        "MULTIPROCESSOR_COUNT": t.sms,
        "WARP_SIZE": 32,
        "MAX_THREADS_PER_BLOCK": t.max_threads_per_block,
        "MAX_THREADS_PER_MULTIPROCESSOR": t.max_threads_per_sm,
        "MAX_THREADS_PER_MULTI_PROCESSOR": t.max_threads_per_sm,
        "MAX_BLOCKS_PER_MULTIPROCESSOR": t.max_blocks_per_sm,
        "MAX_REGISTERS_PER_MULTIPROCESSOR": t.registers_per_sm,
        "MAX_REGISTERS_PER_BLOCK": t.registers_per_block,
        "MAX_SHARED_MEMORY_PER_MULTIPROCESSOR": t.shared_per_sm,
        "MAX_SHARED_MEMORY_PER_BLOCK": t.shared_per_block,
        "MAX_SHARED_MEMORY_PER_BLOCK_OPTIN": t.shared_per_block_optin,
        "RESERVED_SHARED_MEMORY_PER_BLOCK": t.reserved_shared_per_block,
        "L2_CACHE_SIZE": t.l2_bytes,
        "CLOCK_RATE": t.sm_clock_mhz * 1000,  # kHz, as the driver reports it
        "TOTAL_MEMORY": t.memory_bytes,
    }


def _device_getattr(self, name):
    if _standing_in is not None:
        found = attributes(_standing_in)
        if name in found:
            return found[name]
        if name == "name":
            return _standing_in.name.encode()
    raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")


def _compute_capability(self):
    return _standing_in.cc if _standing_in is not None else _saved["cc"]


def _memory_info(self):
    if _standing_in is None:
        return _saved["memory_info"](self)
    from numba.cuda.simulator.cudadrv.devices import _MemoryInfo

    return _MemoryInfo(_standing_in.memory_bytes, _standing_in.memory_bytes)


def _patch() -> None:
    from numba.cuda.simulator.cudadrv import devices

    if _saved:
        return
    _saved.update(cc=devices._SIMULATOR_CC, memory_info=devices.FakeCUDAContext.get_memory_info)
    devices.FakeCUDADevice.__getattr__ = _device_getattr
    devices.FakeCUDADevice.compute_capability = property(_compute_capability)
    devices.FakeCUDAContext.compute_capability = property(_compute_capability)
    devices.FakeCUDAContext.get_memory_info = _memory_info


def _unpatch() -> None:
    from numba.cuda.simulator.cudadrv import devices

    if not _saved:
        return
    del devices.FakeCUDADevice.__getattr__
    devices.FakeCUDADevice.compute_capability = property(lambda self: _saved["cc"])
    devices.FakeCUDAContext.compute_capability = property(lambda self: _saved["cc"])
    devices.FakeCUDAContext.get_memory_info = _saved["memory_info"]
    _saved.clear()


def install() -> None:
    """Stand in for the target ``GPU_LESSONS_DEVICE`` names (none: the simulator as shipped)."""
    global _standing_in
    key = requested_target()
    _standing_in = target(key) if key else None
    _patch()


def uninstall() -> None:
    global _standing_in
    _standing_in = None
    _unpatch()


def forget_device_facts() -> None:
    """Empty the caches of facts read from the device (after the target changed)."""
    from .. import device, occupancy
    from ..kernels import launch

    device.device_info.cache_clear()
    occupancy.sm_limits.cache_clear()
    launch.resident_blocks.cache_clear()


@contextmanager
def use(key: str | None):
    """Within the block, the simulator stands in for target ``key`` (None: for no target)."""
    before = os.environ.get(DEVICE_VARIABLE)
    if key is None:
        os.environ.pop(DEVICE_VARIABLE, None)
    else:
        os.environ[DEVICE_VARIABLE] = key
    try:
        install()
        forget_device_facts()
        yield _standing_in
    finally:
        if before is None:
            os.environ.pop(DEVICE_VARIABLE, None)
        else:
            os.environ[DEVICE_VARIABLE] = before
        install()
        forget_device_facts()
