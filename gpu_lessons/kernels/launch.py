"""Launch geometry shared by the lessons' host wrappers."""

from __future__ import annotations

from functools import lru_cache

from numba import typeof

from .. import SIMULATED
from ..checks import require_int
from ..device import device_info

THREADS_PER_BLOCK = 256
SIMULATOR_MAX_BLOCKS = 4  # the simulator runs one Python thread per CUDA thread: keep grids tiny


def blocks_to_cover(items: int, threads: int = THREADS_PER_BLOCK) -> int:
    """One thread per item: enough blocks to cover them all (at least one)."""
    return max(1, -(-items // threads))


def blocks_per_sm(threads: int = THREADS_PER_BLOCK, limits=None) -> int:
    """Blocks of ``threads`` that fill one SM of this GPU by its thread and block limits (registers and
    shared memory allowing): 256-thread blocks, 8 on sm_80/sm_90 (2,048 threads), 6 on sm_86/sm_89
    (1,536), 4 on sm_75 (1,024). The limits are the device's (``occupancy.sm_limits()``)."""
    from ..occupancy import sm_limits  # occupancy reads the device: only when asked

    lim = limits or sm_limits()
    return max(1, min(lim.max_threads_per_sm // threads, lim.max_blocks_per_sm))


@lru_cache(maxsize=1)
def resident_blocks() -> int:
    """Blocks of 256 threads that fill the device once: one wave (a grid-stride kernel needs no more).
    On the simulator, a tiny grid whatever the target (one Python thread per CUDA thread)."""
    info = device_info()
    return SIMULATOR_MAX_BLOCKS if info.mode == "sim" else info.sms * blocks_per_sm()


def grid_stride_blocks(items: int, threads: int = THREADS_PER_BLOCK) -> int:
    """Blocks for a grid-stride loop: fill the device, but no more than the items need."""
    return min(blocks_to_cover(items, threads), resident_blocks())


def allow_dynamic_shared(kernel, args: tuple, nbytes: int) -> None:
    """Let ``kernel`` (compiled for ``args``) take ``nbytes`` of dynamic shared memory per block.

    Past 48 KiB a kernel must opt in (cudaFuncSetAttribute's MAX_DYNAMIC_SHARED_SIZE_BYTES); a
    no-op on the simulator.
    """
    nbytes = require_int(nbytes, "nbytes", 0)
    if SIMULATED:
        return
    from numba.cuda.cudadrv.driver import binding, driver  # the driver's API: only on a GPU

    overload = kernel.compile(tuple(typeof(a) for a in args))
    cufunc = overload._codelibrary.get_cufunc()
    attribute = binding.CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
    driver.cuKernelSetAttribute(attribute, int(nbytes), cufunc.handle, cufunc.device.id)
