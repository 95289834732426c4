"""Host or device arrays in, the same kind out: the plumbing every lesson wrapper shares."""

from __future__ import annotations

import numpy as np
from numba import cuda

from ..checks import InputError, require_contiguous


def is_device_array(array) -> bool:
    """A numba device array (real or simulated) or any object with the CUDA array interface."""
    return hasattr(array, "copy_to_host") or hasattr(array, "__cuda_array_interface__")


def to_device(array, name: str):
    """The array on the device: NumPy arrays are copied there, device arrays are used as they are.
    Either must be C-contiguous (the wrappers check it first; this is the backstop)."""
    if not (isinstance(array, np.ndarray) or is_device_array(array)):
        raise InputError(f"{name} must be a NumPy or CUDA device array, got {type(array).__name__}")
    require_contiguous(array, name)
    if isinstance(array, np.ndarray):
        return cuda.to_device(array)
    if hasattr(array, "copy_to_host"):
        return array
    return cuda.as_cuda_array(array)  # CuPy, PyTorch...: wrap without a copy


def returned(device_out, host_inputs: bool):
    """Hand the result back the way the inputs came: a NumPy array for NumPy inputs."""
    return device_out.copy_to_host() if host_inputs else device_out
