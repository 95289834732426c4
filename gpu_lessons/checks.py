"""Input checks for host wrappers: a clear error naming the problem, before numba sees the data."""

from __future__ import annotations

import numpy as np


class InputError(ValueError):
    """An argument a lesson wrapper cannot use (wrong dtype, shape, alignment...)."""


def _pointer(array) -> int:
    """Address of the first element, for NumPy arrays and CUDA device arrays alike."""
    if hasattr(array, "__cuda_array_interface__"):
        return array.__cuda_array_interface__["data"][0]
    return array.__array_interface__["data"][0]


def require_array(array, name: str, dtype=None, ndim: int | None = None):
    """Check an argument is an array (host or device) of the given dtype and rank."""
    if not hasattr(array, "dtype") or not hasattr(array, "shape"):
        raise InputError(f"{name} must be an array, got {type(array).__name__}")
    if dtype is not None and np.dtype(array.dtype) != np.dtype(dtype):
        raise InputError(f"{name} must have dtype {np.dtype(dtype).name}, got {np.dtype(array.dtype).name}")
    if ndim is not None and len(array.shape) != ndim:
        raise InputError(f"{name} must be {ndim}-D, got shape {tuple(array.shape)}")
    return array


def require_same_shape(**arrays) -> None:
    shapes = {name: tuple(a.shape) for name, a in arrays.items()}
    if len(set(shapes.values())) > 1:
        listed = ", ".join(f"{name} {shape}" for name, shape in shapes.items())
        raise InputError(f"shape mismatch: {listed}")


def require_aligned(array, name: str, alignment: int) -> None:
    """Vector (e.g. float4) access needs the buffer to start on an `alignment`-byte boundary."""
    address = _pointer(array)
    if address % alignment:
        raise InputError(
            f"{name} is misaligned for {alignment}-byte vector access: it starts at address "
            f"{address:#x}, {address % alignment} bytes past a {alignment}-byte boundary "
            "(a slice like x[1:] shifts the start; use an offset that is a multiple of "
            f"{alignment // np.dtype(array.dtype).itemsize} elements, or the scalar kernel)"
        )


def require_contiguous(array, name: str) -> None:
    flags = getattr(array, "flags", None)
    contiguous = flags["C_CONTIGUOUS"] if flags is not None else array.is_c_contiguous()
    if not contiguous:
        raise InputError(f"{name} must be C-contiguous (use numpy.ascontiguousarray)")


def require_int(value, name: str, minimum: int | None = None, maximum: int | None = None) -> int:
    """An integer argument (NumPy integers too) within [minimum, maximum]."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise InputError(f"{name} must be an integer, got {type(value).__name__}")
    value = int(value)
    if minimum is not None and value < minimum:
        raise InputError(f"{name} must be >= {minimum}, got {value}")
    if maximum is not None and value > maximum:
        raise InputError(f"{name} must be <= {maximum}, got {value}")
    return value


def require_block(block: int, largest: int = 1024) -> int:
    """A 1-D block: a whole number of warps, 32..largest threads."""
    block = require_int(block, "block", 32, largest)
    if block % 32:
        raise InputError(f"block must be a multiple of 32 (whole warps), got {block}")
    return block
