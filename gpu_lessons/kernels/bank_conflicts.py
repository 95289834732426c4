"""Shared-memory bank conflicts: 32 banks of 4-byte words; a warp's access is served in one pass
(*wavefront*) unless two of its threads need different words of the same bank.

1. ``shared_stride_kernel``  thread ``t`` stores to and loads from word ``t * stride`` of a shared
   buffer. Word ``w`` lives in bank ``w % 32``, so stride s puts gcd(s, 32) threads of a warp on
   each bank it uses: 1, 2, 4, 8, 16, 32-way conflicts for s = 1, 2, 4, 8, 16, 32; an odd stride
   such as 33 is conflict-free again.
2. ``transpose_naive_kernel``   ``out[j, i] = a[i, j]``: reads coalesced, writes 32 sectors apart.
3. ``transpose_tiled_kernel``   stage a 32x32 tile in shared memory so both global sides are
   coalesced; reading the tile by column puts all 32 threads on one bank: 32-way conflicts.
4. ``transpose_padded_kernel``  the same with rows of 33 words: column reads spread over all banks.

Transposes use 2-D blocks of (32, rows) threads, rows dividing 32: each thread moves 32 / rows
elements of its tile. Edges of matrices that are not multiples of 32 are guarded.
"""

from __future__ import annotations

import numba
import numpy as np
from numba import cuda

from ..checks import InputError, require_array, require_block, require_int
from .arrays import is_device_array, returned, to_device
from .launch import THREADS_PER_BLOCK, blocks_to_cover

# Static shared memory is limited to 48 KiB a block: 33 words x 256 threads = 33 KiB lets a
# 256-thread block use every stride up to 33 (a 1024-thread block, strides up to 8).
SHARED_WORDS = 33 * 256
TILE = 32
PADDED_WIDTH = TILE + 1  # a module constant: numba needs literal shared-array shapes
TRANSPOSE_BLOCK = (TILE, 8)


@cuda.jit
def shared_stride_kernel(x, out, stride):
    buffer = cuda.shared.array(SHARED_WORDS, numba.float32)
    i = cuda.grid(1)
    slot = cuda.threadIdx.x * stride
    value = numba.float32(0.0)
    if i < x.shape[0]:
        value = x[i]
    buffer[slot] = value
    cuda.syncthreads()  # a barrier: the load below must really read shared memory back
    if i < x.shape[0]:
        out[i] = buffer[slot]


@cuda.jit
def transpose_naive_kernel(a, out):
    col, row = cuda.grid(2)
    if row < a.shape[0] and col < a.shape[1]:
        out[col, row] = a[row, col]


@cuda.jit
def transpose_tiled_kernel(a, out):
    tile = cuda.shared.array((TILE, TILE), numba.float32)
    tx = cuda.threadIdx.x
    ty = cuda.threadIdx.y
    rows, cols = a.shape
    col = cuda.blockIdx.x * TILE + tx
    row = cuda.blockIdx.y * TILE + ty
    for k in range(0, TILE, cuda.blockDim.y):
        if row + k < rows and col < cols:
            tile[ty + k, tx] = a[row + k, col]
    cuda.syncthreads()
    out_col = cuda.blockIdx.y * TILE + tx
    out_row = cuda.blockIdx.x * TILE + ty
    for k in range(0, TILE, cuda.blockDim.y):
        if out_row + k < cols and out_col < rows:
            out[out_row + k, out_col] = tile[tx, ty + k]  # a column of the tile: one bank


@cuda.jit
def transpose_padded_kernel(a, out):
    tile = cuda.shared.array((TILE, PADDED_WIDTH), numba.float32)  # the only change: 33-word rows
    tx = cuda.threadIdx.x
    ty = cuda.threadIdx.y
    rows, cols = a.shape
    col = cuda.blockIdx.x * TILE + tx
    row = cuda.blockIdx.y * TILE + ty
    for k in range(0, TILE, cuda.blockDim.y):
        if row + k < rows and col < cols:
            tile[ty + k, tx] = a[row + k, col]
    cuda.syncthreads()
    out_col = cuda.blockIdx.y * TILE + tx
    out_row = cuda.blockIdx.x * TILE + ty
    for k in range(0, TILE, cuda.blockDim.y):
        if out_row + k < cols and out_col < rows:
            out[out_row + k, out_col] = tile[tx, ty + k]  # a column of 33-word rows: 32 banks


def shared_stride(x, stride: int, block: int = THREADS_PER_BLOCK):
    """Round-trip x through shared memory at word stride ``stride``; returns a copy of x."""
    require_array(x, "x", dtype=np.float32, ndim=1)
    stride = require_int(stride, "stride", minimum=1)
    block = require_block(block)
    if block * stride > SHARED_WORDS:
        raise InputError(
            f"block {block} x stride {stride} needs {block * stride} shared words, more than the "
            f"{SHARED_WORDS} the kernel allocates; use a smaller block (256 allows strides up to 33)"
        )
    if x.shape[0] < 1:
        raise InputError("x is empty")
    d_out = cuda.device_array(x.shape[0], np.float32)
    grid = blocks_to_cover(x.shape[0], block)
    shared_stride_kernel[grid, block](to_device(x, "x"), d_out, stride)
    return returned(d_out, not is_device_array(x))


def transpose_grid(shape, block) -> tuple[int, int]:
    """Blocks covering a (rows, cols) matrix: x across columns, y down rows, per ``block``."""
    rows, cols = shape
    return -(-cols // block[0]), -(-rows // block[1])


def tiled_transpose_grid(shape) -> tuple[int, int]:
    """One block per 32x32 tile, whatever the block's row count."""
    rows, cols = shape
    return -(-cols // TILE), -(-rows // TILE)


def _check_matrix(a) -> None:
    require_array(a, "a", dtype=np.float32, ndim=2)
    if 0 in tuple(a.shape):
        raise InputError(f"a is empty: shape {tuple(a.shape)}")


def _check_2d_block(block) -> tuple[int, int]:
    if not isinstance(block, (tuple, list)) or len(block) != 2:
        raise InputError(f"block must be two integers (x, y), got {block!r}")
    bx, by = (require_int(v, "block", minimum=1) for v in block)
    if bx * by > 1024:
        raise InputError(f"block {bx}x{by} has {bx * by} threads; a block holds at most 1024")
    return bx, by


def transpose_naive(a, block=TRANSPOSE_BLOCK):
    """``a.T`` (float32, 2-D), one element a thread, no shared memory."""
    _check_matrix(a)
    block = _check_2d_block(block)
    d_out = cuda.device_array((a.shape[1], a.shape[0]), np.float32)
    transpose_naive_kernel[transpose_grid(a.shape, block), block](to_device(a, "a"), d_out)
    return returned(d_out, not is_device_array(a))


def _transpose_via_tile(kernel, a, block):
    _check_matrix(a)
    bx, by = _check_2d_block(block)
    if bx != TILE or TILE % by:
        raise InputError(f"block must be ({TILE}, rows) with rows dividing {TILE}, got {block!r}")
    d_out = cuda.device_array((a.shape[1], a.shape[0]), np.float32)
    kernel[tiled_transpose_grid(a.shape), (bx, by)](to_device(a, "a"), d_out)
    return returned(d_out, not is_device_array(a))


def transpose_tiled(a, block=TRANSPOSE_BLOCK):
    """``a.T`` through a 32x32 shared tile (coalesced global traffic, 32-way bank conflicts)."""
    return _transpose_via_tile(transpose_tiled_kernel, a, block)


def transpose_padded(a, block=TRANSPOSE_BLOCK):
    """``a.T`` through a 32x33 shared tile (coalesced and conflict-free)."""
    return _transpose_via_tile(transpose_padded_kernel, a, block)
