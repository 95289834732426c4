"""Coalescing kernels: how the addresses a warp's 32 threads touch decide the memory traffic.

A warp's load or store instruction is one *request*; the memory system serves it in 32-byte
*sectors*. 32 consecutive float32 (128 bytes, aligned) need 4 sectors: the ideal.

1. ``offset_copy_kernel``   ``out[i] = x[i + offset]``: a misaligned start touches one extra sector
   per warp (5 instead of 4) unless the offset is a multiple of 8 floats (32 bytes).
2. ``strided_copy_kernel``  ``out[i] = x[i * stride]``: stride 2, 4, 8 -> 8, 16, 32 sectors per
   request; beyond stride 8 every thread has a sector to itself (32 per request).
   ``offset_copy_x4_kernel`` / ``strided_copy_x4_kernel``: the same two copies with four elements
   per thread, a block apart, all four loads issued before the stores (lesson 2's ILP): enough
   bytes in flight that the aligned, contiguous point is DRAM-bound, so the sweeps test a model of
   the memory system rather than the latency of one 4-byte load per thread.
3. ``aos_field_kernel`` / ``soa_field_kernel``: one field of n records. Array of structures
   ``aos[i, f]`` (shape (n, fields)) is a stride-``fields`` read; structure of arrays ``soa[f, i]``
   (shape (fields, n)) is contiguous.
   ``matrix_row_walk`` / ``matrix_column_walk``: 2-D. A row-major matrix with leading dimension
   ``ld`` keeps element (r, c) at ``r * ld + c``: a warp walking along a row reads 32 adjacent
   floats, a warp walking down a column reads 32 floats ``ld`` apart (one sector each).

4. Particles ``x += v * dt`` in three layouts: AoS ``(n, 6)`` records, SoA (six arrays), and two
   in-between ones: AoSoA (blocks of 32 particles, each field contiguous inside a block) and a
   padded 32-byte record read as two 16-byte vectors.
5. Copies 4, 8 and 16 bytes wide per access, one-shot and grid-stride; the grid-stride variants
   that look for the 16-byte grid-stride copy's gap.
   ``copy_w16_thread_chunks``: float4 access is coalesced only when adjacent lanes take adjacent
   16-byte chunks; here each thread copies ``per_thread`` adjacent chunks, so lanes are
   ``16 * per_thread`` bytes apart (for the tracer: what one request touches).
6. ``add_vec4``, the notes' float4 skeleton done right: 16-byte body, scalar tail, misaligned
   views refused with a clear error (no scalar head: see ``add_vec4``).

Each has a host wrapper taking NumPy or device arrays (C-contiguous) and returning the same kind;
an empty input gives the empty result without a launch.
Kernels from 4. on index with unsigned 64-bit integers: a signed index makes Numba emit
negative-index wraparound code on every access (see the lesson).
"""

from __future__ import annotations

import numpy as np
from numba import cuda, float32, int64, uint64

from ..checks import (
    InputError,
    require_aligned,
    require_array,
    require_block,
    require_choice,
    require_contiguous,
    require_int,
    require_number,
    require_same_shape,
)
from ..vector import load2, load4, store2, store4
from .arrays import is_device_array, returned, to_device
from .launch import THREADS_PER_BLOCK, blocks_to_cover, grid_stride_blocks, resident_blocks
from .util import queue_counters  # int64 counters: copy_w16_queue's atomics add int64

_U2, _U3, _U4, _U32 = np.uint64(2), np.uint64(3), np.uint64(4), np.uint64(32)  # unsigned index arithmetic


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
def offset_copy_x4_kernel(x, out, offset):
    """out[i] = x[i + offset], four elements per thread a block apart: four loads in flight."""
    step = uint64(cuda.blockDim.x)
    i0 = uint64(cuda.blockIdx.x) * step * _U4 + uint64(cuda.threadIdx.x)
    i1 = i0 + step
    i2 = i1 + step
    i3 = i2 + step
    n = uint64(out.size)
    o = uint64(offset)
    if i3 < n:  # the whole block's share is in bounds: every load before the first store
        v0 = x[i0 + o]
        v1 = x[i1 + o]
        v2 = x[i2 + o]
        v3 = x[i3 + o]
        out[i0] = v0
        out[i1] = v1
        out[i2] = v2
        out[i3] = v3
    else:  # the last block: element by element
        if i0 < n:
            out[i0] = x[i0 + o]
        if i1 < n:
            out[i1] = x[i1 + o]
        if i2 < n:
            out[i2] = x[i2 + o]


@cuda.jit
def strided_copy_x4_kernel(x, out, stride):
    """out[i] = x[i * stride], four elements per thread a block apart: four loads in flight."""
    step = uint64(cuda.blockDim.x)
    i0 = uint64(cuda.blockIdx.x) * step * _U4 + uint64(cuda.threadIdx.x)
    i1 = i0 + step
    i2 = i1 + step
    i3 = i2 + step
    n = uint64(out.size)
    s = uint64(stride)
    if i3 < n:
        v0 = x[i0 * s]
        v1 = x[i1 * s]
        v2 = x[i2 * s]
        v3 = x[i3 * s]
        out[i0] = v0
        out[i1] = v1
        out[i2] = v2
        out[i3] = v3
    else:
        if i0 < n:
            out[i0] = x[i0 * s]
        if i1 < n:
            out[i1] = x[i1 * s]
        if i2 < n:
            out[i2] = x[i2 * s]


SWEEP_UNROLL = 4  # elements (loads in flight) per thread of the x4 copies


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
    if n:  # nothing to do: no launch (a grid of 0 blocks is no launch configuration)
        kernel[blocks_to_cover(n, block), block](*args)


def _vector(x, name: str = "x"):
    require_array(x, name, dtype=np.float32, ndim=1)
    require_contiguous(x, name)
    return x


def offset_copy(x, offset: int, block: int = THREADS_PER_BLOCK, x4: bool = False):
    """``out[i] = x[i + offset]`` for i < len(x) - offset (``x[offset:]``; empty for offset = len(x));
    ``x4``: four elements per thread."""
    _vector(x)
    offset = require_int(offset, "offset", minimum=0)
    block = require_block(block)
    n = x.shape[0] - offset
    if n < 0:
        raise InputError(f"offset {offset} is past the end of x (length {x.shape[0]})")
    d_x = to_device(x, "x")
    d_out = cuda.device_array(n, np.float32)
    offset_copy_launch(d_x, d_out, offset, x4, block)
    return returned(d_out, not is_device_array(x))


def strided_copy(x, stride: int, block: int = THREADS_PER_BLOCK, x4: bool = False):
    """``out[i] = x[i * stride]`` for every i with i * stride < len(x) (``x[::stride]``); ``x4``: four
    elements per thread."""
    _vector(x)
    stride = require_int(stride, "stride", minimum=1)
    block = require_block(block)
    n = -(-x.shape[0] // stride)
    d_x = to_device(x, "x")
    d_out = cuda.device_array(n, np.float32)
    strided_copy_launch(d_x, d_out, stride, x4, block)
    return returned(d_out, not is_device_array(x))


def _sweep_blocks(n: int, x4: bool, block: int) -> int:
    return blocks_to_cover(n, block * (SWEEP_UNROLL if x4 else 1))


def offset_copy_launch(x, out, offset: int, x4: bool = False, block: int = THREADS_PER_BLOCK) -> None:
    """``out[i] = x[i + offset]`` for i < out.size, on device arrays (one thread per element, or
    four per thread with ``x4``)."""
    kernel = offset_copy_x4_kernel if x4 else offset_copy_kernel
    if out.size:  # nothing to do: no launch (a grid of 0 blocks is no launch configuration)
        kernel[_sweep_blocks(out.size, x4, block), block](x, out, offset)


def strided_copy_launch(x, out, stride: int, x4: bool = False, block: int = THREADS_PER_BLOCK) -> None:
    """``out[i] = x[i * stride]`` for i < out.size, on device arrays."""
    kernel = strided_copy_x4_kernel if x4 else strided_copy_kernel
    if out.size:
        kernel[_sweep_blocks(out.size, x4, block), block](x, out, stride)


def _read_field(kernel, array, name: str, field: int, records_axis: int, block: int):
    require_array(array, name, dtype=np.float32, ndim=2)
    require_contiguous(array, name)
    n, fields = array.shape[records_axis], array.shape[1 - records_axis]
    if fields < 1:
        raise InputError(f"{name} has no fields to read, shape {tuple(array.shape)}")
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


# 2-D: a row-major matrix of ``rows`` x ``cols`` floats stored with leading dimension ``ld`` >= cols
# (the array has shape (rows, ld); columns cols..ld-1 are padding). Element (r, c) is at r * ld + c.


@cuda.jit
def matrix_row_walk(a, out, rows, cols):
    """out[r, c] = a[r, c], lanes along a row: a warp reads 32 adjacent floats of one row."""
    c = uint64(cuda.blockIdx.x) * uint64(cuda.blockDim.x) + uint64(cuda.threadIdx.x)
    r = uint64(cuda.blockIdx.y)
    if c < cols and r < rows:
        out[r, c] = a[r, c]


@cuda.jit
def matrix_column_walk(a, out, rows, cols):
    """out[r, c] = a[r, c], lanes down a column: a warp reads 32 floats ``ld`` apart (32 lines)."""
    r = uint64(cuda.blockIdx.x) * uint64(cuda.blockDim.x) + uint64(cuda.threadIdx.x)
    c = uint64(cuda.blockIdx.y)
    if r < rows and c < cols:
        out[r, c] = a[r, c]


MATRIX_WALKS = {"matrix_row_walk": matrix_row_walk, "matrix_column_walk": matrix_column_walk}


def matrix_walk_launch(walk: str, a, out, cols: int, block: int = THREADS_PER_BLOCK) -> None:
    """Copy the first ``cols`` columns of ``a`` (rows, ld) into ``out`` (rows, >= cols), one thread
    per element, warps walking rows (``matrix_row_walk``) or columns (``matrix_column_walk``)."""
    rows = a.shape[0]
    if walk == "matrix_row_walk":
        grid = (blocks_to_cover(cols, block), rows)
    elif walk == "matrix_column_walk":
        grid = (blocks_to_cover(rows, block), cols)
    else:
        raise InputError(f"unknown walk {walk!r}; choose one of {', '.join(MATRIX_WALKS)}")
    MATRIX_WALKS[walk][grid, block](a, out, np.uint64(rows), np.uint64(cols))


def matrix_walk(a, cols: int | None = None, walk: str = "matrix_row_walk", block: int = THREADS_PER_BLOCK):
    """The first ``cols`` columns (default: all) of a 2-D float32 array, copied by ``walk``; the
    array's row length is the leading dimension. Returns a (rows, cols) array (host in, host out)."""
    require_array(a, "a", dtype=np.float32, ndim=2)
    require_contiguous(a, "a")
    rows, ld = a.shape
    cols = ld if cols is None else require_int(cols, "cols", 1, ld)
    if rows < 1 or ld < 1:
        raise InputError(f"a must hold at least one element, got shape {tuple(a.shape)}")
    if (walk == "matrix_row_walk" and rows > 65535) or (walk == "matrix_column_walk" and cols > 65535):
        raise InputError("a grid's y dimension holds at most 65535 blocks: one per row (column)")
    block = require_block(block)
    d_out = cuda.device_array((rows, cols), np.float32)
    matrix_walk_launch(walk, to_device(a, "a"), d_out, cols, block)
    return returned(d_out, not is_device_array(a))


# ---------------------------------------------------------------------------------------------
# Random inputs made on the device (never zeros): a hash of the index, recomputable on the host,
# so a check can read any element's expected value without copying gigabytes back.

_K1, _K2, _K3 = np.uint64(0x9E3779B1), np.uint64(0x85EBCA6B), np.uint64(0xC2B2AE35)
_M32 = np.uint64(0xFFFFFFFF)
_S8, _S13, _S16 = np.uint64(8), np.uint64(13), np.uint64(16)
_SCALE = np.float32(2.0**-23)


@cuda.jit(device=True)
def _hash_value(j, seed):
    h = ((j * _K1) ^ seed) & _M32
    h ^= h >> _S16
    h = (h * _K2) & _M32
    h ^= h >> _S13
    h = (h * _K3) & _M32
    h ^= h >> _S16
    return float32(h >> _S8) * _SCALE - float32(1.0)


@cuda.jit
def fill_random_kernel(flat, seed):
    i, step, n = uint64(cuda.grid(1)), uint64(cuda.gridsize(1)), uint64(flat.size)
    while i < n:
        flat[i] = _hash_value(i, seed)
        i += step


def random_values(index, seed: int) -> np.ndarray:
    """What ``fill_random(array, seed)`` put at flat ``index``: uniform in [-1, 1), bit for bit."""
    j = np.asarray(index, dtype=np.uint64)
    seed = np.uint64(seed)
    with np.errstate(over="ignore"):
        h = ((j * _K1) ^ seed) & _M32
        h ^= h >> _S16
        h = (h * _K2) & _M32
        h ^= h >> _S13
        h = (h * _K3) & _M32
        h ^= h >> _S16
    return (h >> _S8).astype(np.float32) * _SCALE - np.float32(1.0)


def fill_random(array, seed: int) -> None:
    """Fill a float32 device array with ``random_values(arange(size), seed)`` (on the device)."""
    require_array(array, "array", dtype=np.float32)
    require_contiguous(array, "array")
    seed = require_int(seed, "seed", 0, 2**64 - 1)
    if array.size:  # an empty array: nothing to launch
        flat = array.reshape(array.size)
        fill_random_kernel[grid_stride_blocks(flat.size), THREADS_PER_BLOCK](flat, np.uint64(seed))


# ---------------------------------------------------------------------------------------------
# 4. Particles: x += v * dt for each coordinate, in four layouts. Same math in each.
#
# Arrays may alias, so the compiler cannot move a load above an earlier store: a kernel that
# writes x before reading y waits for each load in turn. The fast kernels issue every load first.

PARTICLE_FIELDS = 6  # x, y, z, vx, vy, vz
PARTICLE_USEFUL_BYTES = 36  # 6 floats read, 3 written
AOSOA_WIDTH = 32  # particles per AoSoA block: one warp reads one field of 32 particles, 128 bytes
PADDED_FIELDS = 8  # x y z pad vx vy vz pad: two 16-byte vectors per particle


@cuda.jit
def particles_soa_naive_kernel(x, y, z, vx, vy, vz, dt):
    """What one writes first: signed index, each coordinate read, updated and stored in turn."""
    i = cuda.grid(1)
    if i < x.size:
        x[i] += vx[i] * dt
        y[i] += vy[i] * dt
        z[i] += vz[i] * dt


@cuda.jit
def particles_soa_unsigned_kernel(x, y, z, vx, vy, vz, dt):
    """The naive order with an unsigned index: no wraparound code, the stores still in the way."""
    i = uint64(cuda.grid(1))
    if i < uint64(x.size):
        x[i] += vx[i] * dt
        y[i] += vy[i] * dt
        z[i] += vz[i] * dt


@cuda.jit
def particles_soa_loads_first_kernel(x, y, z, vx, vy, vz, dt):
    """Signed index, but all six loads issued before the first store."""
    i = cuda.grid(1)
    if i < x.size:
        a, b, c = x[i], y[i], z[i]
        u, v, w = vx[i], vy[i], vz[i]
        x[i] = a + u * dt
        y[i] = b + v * dt
        z[i] = c + w * dt


@cuda.jit
def particles_soa_kernel(x, y, z, vx, vy, vz, dt):
    """Unsigned index and loads first: six loads in flight per thread."""
    i = uint64(cuda.grid(1))
    if i < uint64(x.size):
        a, b, c = x[i], y[i], z[i]
        u, v, w = vx[i], vy[i], vz[i]
        x[i] = a + u * dt
        y[i] = b + v * dt
        z[i] = c + w * dt


@cuda.jit
def particles_soa_vec4_kernel(x, y, z, vx, vy, vz, dt):
    """Four particles per thread with 16-byte loads (all six first), then 16-byte stores;
    the n % 4 threads past the last group update one particle each."""
    i = uint64(cuda.grid(1))
    n = uint64(x.size)
    groups = n // _U4
    if i < groups:
        x0, x1, x2, x3 = load4(x, i)
        y0, y1, y2, y3 = load4(y, i)
        z0, z1, z2, z3 = load4(z, i)
        u0, u1, u2, u3 = load4(vx, i)
        v0, v1, v2, v3 = load4(vy, i)
        w0, w1, w2, w3 = load4(vz, i)
        store4(x, i, x0 + u0 * dt, x1 + u1 * dt, x2 + u2 * dt, x3 + u3 * dt)
        store4(y, i, y0 + v0 * dt, y1 + v1 * dt, y2 + v2 * dt, y3 + v3 * dt)
        store4(z, i, z0 + w0 * dt, z1 + w1 * dt, z2 + w2 * dt, z3 + w3 * dt)
    else:
        j = _U3 * groups + i  # 4 * groups + (i - groups)
        if j < n:
            a, b, c = x[j], y[j], z[j]
            u, v, w = vx[j], vy[j], vz[j]
            x[j] = a + u * dt
            y[j] = b + v * dt
            z[j] = c + w * dt


@cuda.jit
def particles_aos_kernel(p, dt):
    """Array of structures, p[i] = (x, y, z, vx, vy, vz): each field read is a stride-6 access."""
    i = uint64(cuda.grid(1))
    if i < uint64(p.shape[0]):
        a, b, c = p[i, 0], p[i, 1], p[i, 2]
        u, v, w = p[i, 3], p[i, 4], p[i, 5]
        p[i, 0] = a + u * dt
        p[i, 1] = b + v * dt
        p[i, 2] = c + w * dt


@cuda.jit
def particles_aosoa_kernel(p, n, dt):
    """AoSoA, p shape (blocks, 6, 32): particle i is lane i % 32 of block i // 32, so a warp
    reads each field as 32 consecutive floats (4 sectors), as in SoA, but a block's fields sit
    together (one allocation, records stay local)."""
    i = uint64(cuda.grid(1))
    if i < n:
        b, lane = i // _U32, i % _U32
        a, bb, c = p[b, 0, lane], p[b, 1, lane], p[b, 2, lane]
        u, v, w = p[b, 3, lane], p[b, 4, lane], p[b, 5, lane]
        p[b, 0, lane] = a + u * dt
        p[b, 1, lane] = bb + v * dt
        p[b, 2, lane] = c + w * dt


@cuda.jit
def particles_padded_vec4_kernel(p, dt):
    """A 32-byte record (x y z pad vx vy vz pad), flat: two 16-byte loads, one 16-byte store.
    Few instructions, but 48 bytes requested for 36 useful ones (and 64 cross DRAM: the 16-byte
    store dirties a whole 32-byte sector)."""
    i = uint64(cuda.grid(1))
    if i < uint64(p.size) // _U4 // _U2:
        x, y, z, pad = load4(p, _U2 * i)
        u, v, w, _ = load4(p, _U2 * i + np.uint64(1))
        store4(p, _U2 * i, x + u * dt, y + v * dt, z + w * dt, pad)


PARTICLE_SOA_VARIANTS = ("particles_soa_naive", "particles_soa_unsigned", "particles_soa_loads_first",
                         "particles_soa", "particles_soa_vec4")
SOA_KERNELS = {
    "particles_soa_naive": particles_soa_naive_kernel,
    "particles_soa_unsigned": particles_soa_unsigned_kernel,
    "particles_soa_loads_first": particles_soa_loads_first_kernel,
    "particles_soa": particles_soa_kernel,
    "particles_soa_vec4": particles_soa_vec4_kernel,
}


def particles_soa_launch(variant: str, arrays, dt, block: int = THREADS_PER_BLOCK) -> None:
    """Launch a SoA variant on six device arrays (x, y, z, vx, vy, vz)."""
    kernel = SOA_KERNELS[require_choice(variant, "SoA variant", SOA_KERNELS)]
    n = arrays[0].size
    threads = n // 4 + n % 4 if variant.endswith("vec4") else n
    kernel[blocks_to_cover(threads, block), block](*arrays, np.float32(dt))


def particles_aos_launch(p, dt, block: int = THREADS_PER_BLOCK) -> None:
    particles_aos_kernel[blocks_to_cover(p.shape[0], block), block](p, np.float32(dt))


def particles_aosoa_launch(p, n: int, dt, block: int = THREADS_PER_BLOCK) -> None:
    particles_aosoa_kernel[blocks_to_cover(n, block), block](p, np.uint64(n), np.float32(dt))


def particles_padded_launch(flat, dt, block: int = THREADS_PER_BLOCK) -> None:
    blocks = blocks_to_cover(flat.size // PADDED_FIELDS, block)
    particles_padded_vec4_kernel[blocks, block](flat, np.float32(dt))


def aosoa_blocks(n: int) -> int:
    return -(-n // AOSOA_WIDTH)


def to_aosoa(aos: np.ndarray) -> np.ndarray:
    """(n, 6) records -> (blocks, 6, 32); the lanes past n in the last block are zero."""
    n = aos.shape[0]
    out = np.zeros((aosoa_blocks(n) * AOSOA_WIDTH, PARTICLE_FIELDS), aos.dtype)
    out[:n] = aos
    return np.ascontiguousarray(out.reshape(-1, AOSOA_WIDTH, PARTICLE_FIELDS).transpose(0, 2, 1))


def from_aosoa(blocks: np.ndarray, n: int) -> np.ndarray:
    return blocks.transpose(0, 2, 1).reshape(-1, PARTICLE_FIELDS)[:n]


def to_padded(aos: np.ndarray) -> np.ndarray:
    """(n, 6) records -> flat (8n,) floats: x y z 0 vx vy vz 0."""
    n = aos.shape[0]
    out = np.zeros((n, PADDED_FIELDS), aos.dtype)
    out[:, 0:3], out[:, 4:7] = aos[:, 0:3], aos[:, 3:6]
    return out.reshape(-1)


def from_padded(flat: np.ndarray) -> np.ndarray:
    records = flat.reshape(-1, PADDED_FIELDS)
    return np.concatenate([records[:, 0:3], records[:, 4:7]], axis=1)


def particles_reference(aos: np.ndarray, dt) -> np.ndarray:
    """NumPy: the records after one step (positions += velocities * dt, in float32)."""
    out = np.array(aos, dtype=np.float32, copy=True)
    out[:, 0:3] += out[:, 3:6] * np.float32(dt)
    return out


def _particle_records(aos, name="aos"):
    if not isinstance(aos, np.ndarray):
        raise InputError(f"{name} must be a NumPy array of (n, 6) records, got {type(aos).__name__}")
    require_array(aos, name, dtype=np.float32, ndim=2)
    if aos.shape[1] != PARTICLE_FIELDS:
        raise InputError(f"{name} must have shape (n, 6) for x, y, z, vx, vy, vz; got {tuple(aos.shape)}")
    return np.ascontiguousarray(aos)


LAYOUTS = ("aos", "soa", "aosoa", "padded")


def update_particles(aos, dt, layout: str = "soa", variant: str | None = None):
    """One step ``x += v * dt`` on (n, 6) host records, through the given layout; returns the
    new (n, 6) records. ``layout``: 'aos', 'soa' (``variant`` picks a SoA kernel), 'aosoa',
    'padded'. For testing and teaching: the timed experiment keeps data in its layout."""
    aos = _particle_records(aos)
    require_number(dt, "dt")
    require_choice(layout, "layout", LAYOUTS)
    if variant is not None:
        if layout != "soa":
            raise InputError(f"variant picks a SoA kernel: it needs layout='soa', got layout={layout!r}")
        require_choice(variant, "SoA variant", SOA_KERNELS)
    n = aos.shape[0]
    if n == 0:  # no particles: nothing to launch
        return aos.copy()
    if layout == "aos":
        d = cuda.to_device(aos)
        particles_aos_launch(d, dt)
        return d.copy_to_host()
    if layout == "soa":
        variant = variant or "particles_soa"
        arrays = [cuda.to_device(np.ascontiguousarray(aos[:, f])) for f in range(PARTICLE_FIELDS)]
        particles_soa_launch(variant, arrays, dt)
        return np.stack([a.copy_to_host() for a in arrays], axis=1)
    if layout == "aosoa":
        d = cuda.to_device(to_aosoa(aos))
        particles_aosoa_launch(d, n, dt)
        return from_aosoa(d.copy_to_host(), n)
    d = cuda.to_device(to_padded(aos))  # padded
    particles_padded_launch(d, dt)
    return from_padded(d.copy_to_host())


# Layout changes on the device (the experiment builds every layout from the same random SoA data).


@cuda.jit
def _soa_to_aos_kernel(x, y, z, vx, vy, vz, aos):
    i, step, n = uint64(cuda.grid(1)), uint64(cuda.gridsize(1)), uint64(x.size)
    while i < n:
        aos[i, 0], aos[i, 1], aos[i, 2] = x[i], y[i], z[i]
        aos[i, 3], aos[i, 4], aos[i, 5] = vx[i], vy[i], vz[i]
        i += step


@cuda.jit
def _aos_aosoa_kernel(aos, blocks, to_blocks):
    i, step, n = uint64(cuda.grid(1)), uint64(cuda.gridsize(1)), uint64(aos.shape[0])
    while i < n:
        b, lane = i // _U32, i % _U32
        for f in range(6):
            if to_blocks:
                blocks[b, f, lane] = aos[i, f]
            else:
                aos[i, f] = blocks[b, f, lane]
        i += step


@cuda.jit
def _aos_padded_kernel(aos, flat, to_padded):
    i, step, n = uint64(cuda.grid(1)), uint64(cuda.gridsize(1)), uint64(aos.shape[0])
    while i < n:
        base = i * np.uint64(8)
        for f in range(3):
            if to_padded:
                flat[base + uint64(f)] = aos[i, f]
                flat[base + np.uint64(4) + uint64(f)] = aos[i, 3 + f]
            else:
                aos[i, f] = flat[base + uint64(f)]
                aos[i, 3 + f] = flat[base + np.uint64(4) + uint64(f)]
        if to_padded:
            flat[base + np.uint64(3)] = float32(0)
            flat[base + np.uint64(7)] = float32(0)
        i += step


def _grid(n: int) -> int:
    return grid_stride_blocks(max(1, n))


def soa_to_aos_launch(fields, aos) -> None:
    _soa_to_aos_kernel[_grid(aos.shape[0]), THREADS_PER_BLOCK](*fields, aos)


def aos_to_aosoa_launch(aos, blocks) -> None:
    _aos_aosoa_kernel[_grid(aos.shape[0]), THREADS_PER_BLOCK](aos, blocks, True)


def aosoa_to_aos_launch(blocks, aos) -> None:
    _aos_aosoa_kernel[_grid(aos.shape[0]), THREADS_PER_BLOCK](aos, blocks, False)


def aos_to_padded_launch(aos, flat) -> None:
    _aos_padded_kernel[_grid(aos.shape[0]), THREADS_PER_BLOCK](aos, flat, True)


def padded_to_aos_launch(flat, aos) -> None:
    _aos_padded_kernel[_grid(aos.shape[0]), THREADS_PER_BLOCK](aos, flat, False)


# ---------------------------------------------------------------------------------------------
# 5. Copies 4, 8 and 16 bytes wide per thread and access, one-shot and grid-stride.


@cuda.jit
def copy_w4(x, out):
    i = uint64(cuda.grid(1))
    if i < uint64(x.size):
        out[i] = x[i]


@cuda.jit
def copy_w4_grid_stride(x, out):
    i, step, n = uint64(cuda.grid(1)), uint64(cuda.gridsize(1)), uint64(x.size)
    while i < n:
        out[i] = x[i]
        i += step


@cuda.jit
def copy_w8(x, out):
    i = uint64(cuda.grid(1))
    n = uint64(x.size)
    pairs = n // _U2
    if i < pairs:
        a, b = load2(x, i)
        store2(out, i, a, b)
    elif i == pairs and _U2 * pairs < n:
        out[n - np.uint64(1)] = x[n - np.uint64(1)]


@cuda.jit
def copy_w8_grid_stride(x, out):
    start, step, n = uint64(cuda.grid(1)), uint64(cuda.gridsize(1)), uint64(x.size)
    pairs = n // _U2
    i = start
    while i < pairs:
        a, b = load2(x, i)
        store2(out, i, a, b)
        i += step
    if start == 0 and _U2 * pairs < n:
        out[n - np.uint64(1)] = x[n - np.uint64(1)]


@cuda.jit
def copy_w16(x, out):
    i = uint64(cuda.grid(1))
    n = uint64(x.size)
    groups = n // _U4
    if i < groups:
        a, b, c, d = load4(x, i)
        store4(out, i, a, b, c, d)
    else:
        j = _U3 * groups + i
        if j < n:
            out[j] = x[j]


@cuda.jit
def copy_w16_grid_stride(x, out):
    start, step, n = uint64(cuda.grid(1)), uint64(cuda.gridsize(1)), uint64(x.size)
    groups = n // _U4
    i = start
    while i < groups:
        a, b, c, d = load4(x, i)
        store4(out, i, a, b, c, d)
        i += step
    j = _U4 * groups + start
    if j < n:
        out[j] = x[j]


@cuda.jit
def copy_w16_grid_stride_x4(x, out):
    """Four 16-byte loads of four iterations issued before their four stores."""
    start, step, n = uint64(cuda.grid(1)), uint64(cuda.gridsize(1)), uint64(x.size)
    groups = n // _U4
    i = start
    while i + _U3 * step < groups:
        a0, a1, a2, a3 = load4(x, i)
        b0, b1, b2, b3 = load4(x, i + step)
        c0, c1, c2, c3 = load4(x, i + _U2 * step)
        d0, d1, d2, d3 = load4(x, i + _U3 * step)
        store4(out, i, a0, a1, a2, a3)
        store4(out, i + step, b0, b1, b2, b3)
        store4(out, i + _U2 * step, c0, c1, c2, c3)
        store4(out, i + _U3 * step, d0, d1, d2, d3)
        i += _U4 * step
    while i < groups:
        a0, a1, a2, a3 = load4(x, i)
        store4(out, i, a0, a1, a2, a3)
        i += step
    j = _U4 * groups + start
    if j < n:
        out[j] = x[j]


@cuda.jit
def copy_w16_block_chunks(x, out):
    """A persistent grid where each block copies one contiguous chunk, its threads striding by the
    block: at any moment the blocks work in as many places as there are blocks (DRAM locality)."""
    groups = uint64(x.size // 4)
    blocks = uint64(cuda.gridDim.x)
    chunk = (groups + blocks - np.uint64(1)) // blocks
    begin = uint64(cuda.blockIdx.x) * chunk
    end = min(begin + chunk, groups)
    i, step = begin + uint64(cuda.threadIdx.x), uint64(cuda.blockDim.x)
    while i < end:
        a, b, c, d = load4(x, i)
        store4(out, i, a, b, c, d)
        i += step
    j = _U4 * groups + uint64(cuda.threadIdx.x)
    if cuda.blockIdx.x == 0 and j < uint64(x.size):
        out[j] = x[j]


QUEUE_ITEMS = 4  # float4 per thread per chunk taken from the queue


@cuda.jit
def copy_w16_queue(x, out, counters):
    """A persistent grid that takes chunks from a queue (an atomic counter): blocks that run
    faster take more chunks, as a one-shot grid's block scheduler does. The last block to finish
    resets the counters for the next launch."""
    slot = cuda.shared.array(1, int64)
    t = cuda.threadIdx.x
    threads = uint64(cuda.blockDim.x)
    groups = uint64(x.size // 4)
    chunk = threads * _U4
    chunks = int64((groups + chunk - np.uint64(1)) // chunk)
    while True:
        if t == 0:
            slot[0] = cuda.atomic.add(counters, 0, 1)
        cuda.syncthreads()
        c = slot[0]
        cuda.syncthreads()
        if c >= chunks:
            break
        i0 = uint64(c) * chunk + uint64(t)
        i3 = i0 + _U3 * threads
        if i3 < groups:
            a0, a1, a2, a3 = load4(x, i0)
            b0, b1, b2, b3 = load4(x, i0 + threads)
            c0, c1, c2, c3 = load4(x, i0 + _U2 * threads)
            d0, d1, d2, d3 = load4(x, i3)
            store4(out, i0, a0, a1, a2, a3)
            store4(out, i0 + threads, b0, b1, b2, b3)
            store4(out, i0 + _U2 * threads, c0, c1, c2, c3)
            store4(out, i3, d0, d1, d2, d3)
        else:
            i = i0
            while i < groups:
                a0, a1, a2, a3 = load4(x, i)
                store4(out, i, a0, a1, a2, a3)
                i += threads
    j = _U4 * groups + uint64(t)
    if cuda.blockIdx.x == 0 and j < uint64(x.size):
        out[j] = x[j]
    if t == 0:
        done = cuda.atomic.add(counters, 1, 1)
        if done == cuda.gridDim.x - 1:
            counters[0] = 0
            counters[1] = 0


@cuda.jit
def copy_w16_thread_chunks(x, out, per_thread):
    """Thread t copies the ``per_thread`` adjacent float4s from ``t * per_thread``: in one request,
    lane k's 16 bytes are ``16 * per_thread`` bytes after lane k-1's (adjacent only for 1). The
    n % 4 last elements go to the first threads, one each."""
    t = uint64(cuda.grid(1))
    p = uint64(per_thread)
    groups = uint64(x.size) // _U4
    first = t * p
    for j in range(per_thread):
        g = first + uint64(j)
        if g < groups:
            a, b, c, d = load4(x, g)
            store4(out, g, a, b, c, d)
    tail = _U4 * groups + t
    if tail < uint64(x.size):
        out[tail] = x[tail]


def thread_chunks_threads(n: int, per_thread: int) -> int:
    """Threads copy_w16_thread_chunks needs: every float4 group covered, and the n % 4 tail."""
    return max(-(-(n // 4) // per_thread), n % 4, 1)


def copy_thread_chunks(x, per_thread: int = 1, block: int = THREADS_PER_BLOCK):
    """Copy a float32 vector with copy_w16_thread_chunks (host or device array in, same out)."""
    require_array(x, "x", dtype=np.float32, ndim=1)
    require_contiguous(x, "x")
    require_aligned(x, "x", 16)
    per_thread = require_int(per_thread, "per_thread", 1, 64)
    block = require_block(block)
    if x.shape[0] < 1:
        raise InputError("x is empty")
    d_x = to_device(x, "x")
    d_out = cuda.device_array(x.shape[0], np.float32)
    threads = thread_chunks_threads(x.shape[0], per_thread)
    copy_w16_thread_chunks[blocks_to_cover(threads, block), block](d_x, d_out, per_thread)
    return returned(d_out, not is_device_array(x))


WIDTH_VARIANTS = {  # name -> (kernel, bytes per access, grid-stride?)
    "copy_w4": (copy_w4, 4, False),
    "copy_w8": (copy_w8, 8, False),
    "copy_w16": (copy_w16, 16, False),
    "copy_w4_grid_stride": (copy_w4_grid_stride, 4, True),
    "copy_w8_grid_stride": (copy_w8_grid_stride, 8, True),
    "copy_w16_grid_stride": (copy_w16_grid_stride, 16, True),
    "copy_w16_grid_stride_x4": (copy_w16_grid_stride_x4, 16, True),
    "copy_w16_queue": (copy_w16_queue, 16, True),
    "copy_w16_block_chunks": (copy_w16_block_chunks, 16, True),
}

def width_launch(variant: str, x, out, block: int = THREADS_PER_BLOCK, waves: int = 1) -> None:
    """Launch a copy of WIDTH_VARIANTS on device arrays; grid-stride ones get ``waves`` x the
    blocks that fit on the device at once (``block`` threads each), but no more than needed."""
    kernel, width, grid_stride = WIDTH_VARIANTS[require_choice(variant, "copy", WIDTH_VARIANTS)]
    n = x.size
    threads = n // (width // 4) + n % (width // 4)
    if grid_stride:
        fit = resident_blocks() * THREADS_PER_BLOCK // block
        blocks = min(blocks_to_cover(threads, block), fit * waves)
    else:
        blocks = blocks_to_cover(threads, block)
    if variant.startswith("copy_w16_queue"):
        kernel[blocks, block](x, out, queue_counters())
    else:
        kernel[blocks, block](x, out)


def copy_width(x, variant: str = "copy_w16", block: int = THREADS_PER_BLOCK, waves: int = 1):
    """Copy a float32 vector with one of WIDTH_VARIANTS (host or device array in, same out)."""
    _vector(x)
    width = WIDTH_VARIANTS[require_choice(variant, "copy", WIDTH_VARIANTS)][1]
    if width > 4:
        require_aligned(x, "x", width)
    block = require_block(block)
    waves = require_int(waves, "waves", 1)
    d_x = to_device(x, "x")
    d_out = cuda.device_array(x.shape[0], np.float32)
    if x.shape[0]:  # an empty x: an empty copy, no launch
        width_launch(variant, d_x, d_out, block, waves)
    return returned(d_out, not is_device_array(x))


# ---------------------------------------------------------------------------------------------
# 6. add_vec4 of the notes, done right.


@cuda.jit
def add_vec4_kernel(x, y, out):
    """out = x + y: one float4 per thread over the whole groups of 4, then one thread per
    leftover element (the notes loop over the tail in one thread; one each needs no loop)."""
    i = uint64(cuda.grid(1))
    n = uint64(out.size)
    groups = n // _U4
    if i < groups:
        x0, x1, x2, x3 = load4(x, i)
        y0, y1, y2, y3 = load4(y, i)
        store4(out, i, x0 + y0, x1 + y1, x2 + y2, x3 + y3)
    else:
        j = _U3 * groups + i
        if j < n:
            out[j] = x[j] + y[j]


def add_vec4_launch(x, y, out, block: int = THREADS_PER_BLOCK) -> None:
    n = out.size
    add_vec4_kernel[blocks_to_cover(n // 4 + n % 4, block), block](x, y, out)


def add_vec4(x, y, block: int = THREADS_PER_BLOCK):
    """x + y for float32 vectors with 16-byte loads; any length (a scalar tail), refusing
    misaligned views.

    A view such as ``x[1:]`` starts 4 bytes past a 16-byte boundary: a 16-byte load there is
    illegal (CUDA_ERROR_MISALIGNED_ADDRESS), so the wrapper raises ``InputError`` and names the
    offset. It does not add a scalar head: that only helps when x, y and out are misaligned by
    the same amount, and a fresh ``out`` is aligned. Copy the view (``np.ascontiguousarray`` of
    a fresh array), or use the scalar kernel.
    """
    for name, v in (("x", x), ("y", y)):
        require_array(v, name, dtype=np.float32, ndim=1)
        require_contiguous(v, name)
        require_aligned(v, name, 16)
    require_same_shape(x=x, y=y)
    block = require_block(block)
    host = not is_device_array(x)
    d_x, d_y = to_device(x, "x"), to_device(y, "y")
    d_out = cuda.device_array(x.shape[0], np.float32)
    if x.shape[0]:
        add_vec4_launch(d_x, d_y, d_out, block)
    return returned(d_out, host)


# ---------------------------------------------------------------------------------------------
# Checking big outputs without copying them back: count the elements a kernel left poisoned.


@cuda.jit
def _count_nan_kernel(flat, count):
    i, step, n = uint64(cuda.grid(1)), uint64(cuda.gridsize(1)), uint64(flat.size)
    mine = 0
    while i < n:
        if flat[i] != flat[i]:
            mine += 1
        i += step
    if mine:
        cuda.atomic.add(count, 0, mine)


def count_nan(array) -> int:
    """NaN elements of a float32 device array (poisoned outputs a kernel never wrote)."""
    require_array(array, "array", dtype=np.float32)
    require_contiguous(array, "array")
    if array.size == 0:
        return 0
    count = cuda.to_device(np.zeros(1, np.int64))
    flat = array.reshape(array.size)
    _count_nan_kernel[grid_stride_blocks(flat.size), THREADS_PER_BLOCK](flat, count)
    return int(count.copy_to_host()[0])
