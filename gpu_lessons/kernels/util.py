"""Small device helpers the experiments use (poisoning outputs before a timed run, work-queue counters)."""

import numpy as np
from numba import cuda

from ..checks import require_array, require_contiguous
from .launch import THREADS_PER_BLOCK, grid_stride_blocks


@cuda.jit
def _fill(flat, value):
    for i in range(cuda.grid(1), flat.size, cuda.gridsize(1)):
        flat[i] = value


def poison(array, value=float("nan")) -> None:
    """Overwrite a device array so that any element a kernel fails to write is caught afterwards."""
    require_array(array, "array")
    require_contiguous(array, "array")
    if array.size:  # an empty array: nothing to launch
        flat = array.reshape(array.size)
        _fill[grid_stride_blocks(flat.size), THREADS_PER_BLOCK](flat, flat.dtype.type(value))


_queue_counters: dict = {}


def queue_counters(dtype=np.int64):
    """A work queue's two counters (next claim, workers done) on the device, zero between launches.

    The queue kernels (lesson 3's block queue, lesson 2's warp queue) reset them when their last
    worker finishes, so no launch needs a memset first. One pair per context (a device array
    belongs to one) and dtype (the kernels' atomics are typed: int64 or uint64).
    """
    context = "sim" if not hasattr(cuda, "current_context") else id(cuda.current_context())
    key = (context, np.dtype(dtype).str)
    if key not in _queue_counters:
        _queue_counters[key] = cuda.to_device(np.zeros(2, dtype))
    return _queue_counters[key]
