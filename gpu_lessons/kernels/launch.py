"""Launch geometry shared by the lessons' host wrappers."""

from __future__ import annotations

from functools import lru_cache

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
