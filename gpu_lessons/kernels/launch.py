"""Launch geometry shared by the lessons' host wrappers."""

from __future__ import annotations

from functools import lru_cache

from numba import typeof

from .. import SIMULATED
from ..checks import require_int
from ..device import device_info

THREADS_PER_BLOCK = 256
BLOCKS_PER_SM = 8  # 8 x 256 = 2048 threads: a full H100/H200 SM
SIMULATOR_MAX_BLOCKS = 4  # the simulator runs one Python thread per CUDA thread: keep grids tiny


def blocks_to_cover(items: int, threads: int = THREADS_PER_BLOCK) -> int:
    """One thread per item: enough blocks to cover them all (at least one)."""
    return max(1, -(-items // threads))


@lru_cache(maxsize=1)
def resident_blocks() -> int:
    """Blocks that fill the device once (a grid-stride kernel needs no more)."""
    info = device_info()
    return SIMULATOR_MAX_BLOCKS if info.mode == "sim" else info.sms * BLOCKS_PER_SM


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
