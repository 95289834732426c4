"""The layouts of Hopper's wgmma, as plain functions: the 64-bit shared-memory matrix descriptor,
where an operand's elements are read from, and which accumulator each thread holds.

The rules are written out in ``gpu_lessons.sim.wgmma``'s doc (PTX ISA, "Matrix Descriptor Format"
and the wgmma .m64nNk8 register fragments); the simulator's wgmma reads shared memory through
``operand_addresses``, kernels build descriptors with ``descriptor_bits`` (compiled inline on a GPU),
and a lesson can draw both from host code.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..device import WARP_SIZE

__all__ = ["ACCUMULATOR_ROWS", "Descriptor", "K", "SWIZZLE_128B", "SWIZZLE_32B", "SWIZZLE_64B",
           "SWIZZLE_BYTES", "SWIZZLE_NONE", "WARPGROUP", "WGMMA_N", "accumulator_layout",
           "decode_descriptor", "descriptor_bits", "operand_addresses"]

WARPGROUP = 4 * WARP_SIZE
ACCUMULATOR_ROWS = 64  # M of every wgmma
K = 8  # TF32 K per wgmma
WGMMA_N = (8, 16, 32, 64, 128, 256)  # the N gpu_lessons.ptx generates (PTX allows 8..256 step 8)
SWIZZLE_NONE, SWIZZLE_128B, SWIZZLE_64B, SWIZZLE_32B = 0, 1, 2, 3
SWIZZLE_BYTES = {SWIZZLE_128B: 128, SWIZZLE_64B: 64, SWIZZLE_32B: 32}
_FIELD = 0x3FFF  # the 14-bit address and offset fields, in units of 16 bytes


# --- The descriptor -------------------------------------------------------------------------------


def descriptor_bits(address, leading_bytes, stride_bytes, swizzle):
    """The 64-bit shared-memory matrix descriptor of a wgmma operand (PTX ISA, "Matrix Descriptor
    Format"): bits 0-13 ``address >> 4`` (the operand's first byte in the shared window, 16-byte
    aligned), 16-29 ``leading_bytes >> 4`` (the next core matrix along K; unused when swizzled),
    32-45 ``stride_bytes >> 4`` (the next 8 rows), 49-51 base offset 0, 62-63 ``swizzle`` (0 none,
    1 128-byte, 2 64-byte, 3 32-byte). Plain integer arithmetic: numba compiles this same function
    for kernels (``gpu_lessons.ptx.matrix_descriptor``), and host code calls it to draw the bits."""
    start = (int(address) & 0x3FFFF) >> 4
    leading = (int(leading_bytes) >> 4) & 0x3FFF
    stride = (int(stride_bytes) >> 4) & 0x3FFF
    low = start | (leading << 16)
    high = stride | ((int(swizzle) & 3) << 30)
    return (high << 32) | low  # a Python int here; an int64 of the same bits in a kernel


@dataclass(frozen=True)
class Descriptor:
    start: int  # bytes
    leading: int  # bytes
    stride: int  # bytes
    base_offset: int
    swizzle: int


def decode_descriptor(bits) -> Descriptor:
    """The fields of a descriptor, in bytes (the inverse of ``descriptor_bits``)."""
    bits = int(bits) & 0xFFFFFFFFFFFFFFFF
    return Descriptor(start=(bits & _FIELD) << 4, leading=((bits >> 16) & _FIELD) << 4,
                      stride=((bits >> 32) & _FIELD) << 4, base_offset=(bits >> 49) & 7,
                      swizzle=bits >> 62)


def operand_addresses(descriptor, rows: int) -> np.ndarray:
    """(rows, 8) byte addresses in the shared window from which a K-major TF32 operand of ``rows``
    rows (64 for A, N for B) is read, element (r, k) at [r, k]: see the module doc."""
    d = descriptor if isinstance(descriptor, Descriptor) else decode_descriptor(descriptor)
    if d.base_offset:
        raise ValueError(f"matrix descriptor with base offset {d.base_offset}: not modelled by the "
                         "simulator (start every swizzled 8-row group on its pattern boundary)")
    r = np.arange(rows, dtype=np.int64)[:, None]
    k = np.arange(K, dtype=np.int64)[None, :]
    if d.swizzle == SWIZZLE_NONE:
        return d.start + (r // 8) * d.stride + (r % 8) * 16 + (k // 4) * d.leading + (k % 4) * 4
    width = SWIZZLE_BYTES[d.swizzle]
    address = d.start + (r // 8) * d.stride + (r % 8) * width + k * 4
    return address ^ (((address >> 7) % (width // 16)) << 4)


def accumulator_layout(n: int) -> tuple[np.ndarray, np.ndarray]:
    """(rows, cols), each (128, n // 2): thread t of the warpgroup holds D[rows[t, i], cols[t, i]]
    in its accumulator i (see the module doc)."""
    thread = np.arange(WARPGROUP)[:, None]
    i = np.arange(n // 2)[None, :]
    w, lane = thread // WARP_SIZE, thread % WARP_SIZE
    g, t = lane >> 2, lane & 3
    j, slot = i // 4, i % 4
    rows = 16 * w + g + 8 * (slot >> 1)
    cols = 8 * j + 2 * t + (slot & 1)
    shape = (WARPGROUP, n // 2)
    return np.broadcast_to(rows, shape).copy(), np.broadcast_to(cols, shape).copy()
