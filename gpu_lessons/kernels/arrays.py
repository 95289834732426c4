"""Host or device arrays in, the same kind out: the plumbing every lesson wrapper shares."""

from __future__ import annotations

import numpy as np
from numba import cuda

from ..checks import InputError


def is_device_array(array) -> bool:
    """A numba device array (real or simulated) or any object with the CUDA array interface."""
    return hasattr(array, "copy_to_host") or hasattr(array, "__cuda_array_interface__")


def to_device(array, name: str):
    """The array on the device: NumPy arrays are copied there, device arrays are used as they are."""
    if isinstance(array, np.ndarray):
        return cuda.to_device(array)
    if hasattr(array, "copy_to_host"):
        return array
    if hasattr(array, "__cuda_array_interface__"):  # CuPy, PyTorch...: wrap without a copy
        return cuda.as_cuda_array(array)
    raise InputError(f"{name} must be a NumPy or CUDA device array, got {type(array).__name__}")


def device_empty(shape, dtype=np.float32):
    return cuda.device_array(shape, dtype)


def returned(device_out, host_inputs: bool):
    """Hand the result back the way the inputs came: a NumPy array for NumPy inputs."""
    return device_out.copy_to_host() if host_inputs else device_out


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
