"""Input checks for host wrappers: a clear error naming the problem, before numba sees the data."""

from __future__ import annotations

import numpy as np


class InputError(ValueError):
    """An argument a lesson wrapper cannot use (wrong dtype, shape, alignment...)."""


def address_of(array) -> int:
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


def require_host(array, name: str):
    """A NumPy array (for wrappers that return host arrays and launch on device arrays only through
    their ``*_launch`` functions)."""
    if not isinstance(array, np.ndarray):
        raise InputError(f"{name} must be a NumPy array, got {type(array).__name__} (this wrapper takes "
                         "host arrays; on device arrays, call its *_launch function)")
    return array


def require_same_shape(**arrays) -> None:
    shapes = {name: tuple(a.shape) for name, a in arrays.items()}
    if len(set(shapes.values())) > 1:
        listed = ", ".join(f"{name} {shape}" for name, shape in shapes.items())
        raise InputError(f"shape mismatch: {listed}")


def require_aligned(array, name: str, alignment: int) -> None:
    """Vector (e.g. float4) access needs the buffer to start on an `alignment`-byte boundary."""
    address = address_of(array)
    if address % alignment:
        raise InputError(
            f"{name} is misaligned for {alignment}-byte vector access: it starts at address "
            f"{address:#x}, {address % alignment} bytes past a {alignment}-byte boundary "
            "(a slice like x[1:] shifts the start; use an offset that is a multiple of "
            f"{alignment // np.dtype(array.dtype).itemsize} elements, or the scalar kernel)"
        )


def _c_contiguous(array) -> bool:
    flags = getattr(array, "flags", None)
    if flags is not None:  # NumPy, CuPy, the simulator's device arrays
        return bool(flags["C_CONTIGUOUS"])
    if hasattr(array, "is_c_contiguous"):  # numba device arrays
        return bool(array.is_c_contiguous())
    interface = array.__cuda_array_interface__  # anything else on the device (PyTorch...)
    strides, shape = interface.get("strides"), tuple(interface["shape"])
    if strides is None or 0 in shape:
        return True
    expected, itemsize = [], np.dtype(interface["typestr"]).itemsize
    for extent in reversed(shape):
        expected.insert(0, itemsize)
        itemsize *= extent
    return all(s == e for s, e, n in zip(strides, expected, shape, strict=True) if n > 1)


def require_contiguous(array, name: str) -> None:
    """The kernels index flat, C-ordered buffers (and a strided host view cannot be copied to the
    device in one piece): views such as ``a[:, ::2]`` or ``a.T`` are refused, by name."""
    if not _c_contiguous(array):
        raise InputError(f"{name} must be C-contiguous, got a strided view of shape {tuple(array.shape)} "
                         "(use numpy.ascontiguousarray)")


def require_choice(value, kind: str, choices) -> str:
    """One of a fixed set of names (a kernel variant, a step, a layout...)."""
    if not isinstance(value, str) or value not in choices:
        raise InputError(f"unknown {kind} {value!r}; choose from: {', '.join(choices)}")
    return value


def require_number(value, name: str) -> float:
    """A real number (int or float, NumPy's too; not a bool)."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise InputError(f"{name} must be a number, got {type(value).__name__}")
    return value


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
