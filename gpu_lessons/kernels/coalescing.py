"""Coalescing kernels: how the addresses a warp's 32 threads touch decide the memory traffic.

A warp's load or store instruction is one *request*; the memory system serves it in 32-byte
*sectors*. 32 consecutive float32 (128 bytes, aligned) need 4 sectors: the ideal.

1. ``offset_copy_kernel``   ``out[i] = x[i + offset]``: a misaligned start touches one extra sector
   per warp (5 instead of 4) unless the offset is a multiple of 8 floats (32 bytes).
2. ``strided_copy_kernel``  ``out[i] = x[i * stride]``: stride 2, 4, 8 -> 8, 16, 32 sectors per
   request; beyond stride 8 every thread has a sector to itself (32 per request).
3. ``aos_field_kernel`` / ``soa_field_kernel``: one field of n records. Array of structures
   ``aos[i, f]`` (shape (n, fields)) is a stride-``fields`` read; structure of arrays ``soa[f, i]``
   (shape (fields, n)) is contiguous.

Each has a host wrapper taking NumPy or device arrays and returning the same kind.
"""

from __future__ import annotations

import numpy as np
from numba import cuda

from ..checks import InputError, require_array, require_block, require_int
from .arrays import is_device_array, returned, to_device
from .launch import THREADS_PER_BLOCK, blocks_to_cover


@cuda.jit
def offset_copy_kernel(x, out, offset):
    i = cuda.grid(1)
    if i < out.shape[0]:
        out[i] = x[i + offset]


@cuda.jit
def strided_copy_kernel(x, out, stride):
    i = cuda.grid(1)
    if i < out.shape[0]:
        out[i] = x[i * stride]


@cuda.jit
def aos_field_kernel(aos, out, field):
    i = cuda.grid(1)
    if i < out.shape[0]:
        out[i] = aos[i, field]


@cuda.jit
def soa_field_kernel(soa, out, field):
    i = cuda.grid(1)
    if i < out.shape[0]:
        out[i] = soa[field, i]


def _launch_1d(kernel, n: int, block: int, *args) -> None:
    kernel[blocks_to_cover(n, block), block](*args)


def offset_copy(x, offset: int, block: int = THREADS_PER_BLOCK):
    """``out[i] = x[i + offset]`` for i < len(x) - offset."""
    require_array(x, "x", dtype=np.float32, ndim=1)
    offset = require_int(offset, "offset", minimum=0)
    block = require_block(block)
    n = x.shape[0] - offset
    if n < 1:
        raise InputError(f"offset {offset} leaves nothing to copy from x of length {x.shape[0]}")
    d_x = to_device(x, "x")
    d_out = cuda.device_array(n, np.float32)
    _launch_1d(offset_copy_kernel, n, block, d_x, d_out, offset)
    return returned(d_out, not is_device_array(x))


def strided_copy(x, stride: int, block: int = THREADS_PER_BLOCK):
    """``out[i] = x[i * stride]`` for every i with i * stride < len(x)."""
    require_array(x, "x", dtype=np.float32, ndim=1)
    stride = require_int(stride, "stride", minimum=1)
    block = require_block(block)
    if x.shape[0] < 1:
        raise InputError("x is empty")
    n = -(-x.shape[0] // stride)
    d_x = to_device(x, "x")
    d_out = cuda.device_array(n, np.float32)
    _launch_1d(strided_copy_kernel, n, block, d_x, d_out, stride)
    return returned(d_out, not is_device_array(x))


def _read_field(kernel, array, name: str, field: int, records_axis: int, block: int):
    require_array(array, name, dtype=np.float32, ndim=2)
    n, fields = array.shape[records_axis], array.shape[1 - records_axis]
    if n < 1 or fields < 1:
        raise InputError(f"{name} must hold at least one record of one field, got shape {tuple(array.shape)}")
    field = require_int(field, "field", 0, fields - 1)
    block = require_block(block)
    d_out = cuda.device_array(n, np.float32)
    _launch_1d(kernel, n, block, to_device(array, name), d_out, field)
    return returned(d_out, not is_device_array(array))


def read_field_aos(aos, field: int, block: int = THREADS_PER_BLOCK):
    """Field ``field`` of every record in an array of structures, shape (n, fields)."""
    return _read_field(aos_field_kernel, aos, "aos", field, records_axis=0, block=block)


def read_field_soa(soa, field: int, block: int = THREADS_PER_BLOCK):
    """Field ``field`` of every record in a structure of arrays, shape (fields, n)."""
    return _read_field(soa_field_kernel, soa, "soa", field, records_axis=1, block=block)
