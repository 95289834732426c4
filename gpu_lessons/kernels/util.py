"""Small device helpers the experiments use (poisoning outputs before a timed run)."""

from numba import cuda

from .launch import THREADS_PER_BLOCK, grid_stride_blocks


@cuda.jit
def _fill(flat, value):
    for i in range(cuda.grid(1), flat.size, cuda.gridsize(1)):
        flat[i] = value


def poison(array, value=float("nan")) -> None:
    """Overwrite a device array so that any element a kernel fails to write is caught afterwards."""
    flat = array.reshape(array.size)
    _fill[grid_stride_blocks(flat.size), THREADS_PER_BLOCK](flat, flat.dtype.type(value))
