"""Register tiling (lesson 6, steps 4-6): each thread computes several outputs and keeps them in
registers, so one value read from shared memory feeds several FMAs.

Both kernels are built by a factory taking the index type: ``numba.int64`` (what plain Python ints
become) or ``numba.uint64``. With a signed index numba emits negative-index wraparound code on
every array access (``x[-1]`` is the last element); with an unsigned one it cannot be negative, the
code disappears and the compiler can merge neighbouring loads. Same source, different SASS.

Edges: tiles that hang over the matrix load zeros and the stores are guarded, so any shape works.
"""

from __future__ import annotations

import numpy as np
from numba import cuda, float32, int64, uint64

from ..checks import require_choice
from .arrays import is_device_array, returned, to_device
from .gemm import check_gemm_operands

# 1-D register tiling: a 64x64 block tile, 8 k-columns per step, 8 outputs (a column strip) per
# thread, 512 threads. 2-D: a 128x128 tile, 8x8 outputs per thread, 256 threads.
TILE_1D = dict(bm=64, bn=64, bk=8, tm=8, threads=512)
TILE_2D = dict(bm=128, bn=128, bk=8, tm=8, tn=8, threads=256)


def make_register_1d(index=int64):
    bm, bn, bk, tm = (index(TILE_1D[x]) for x in ("bm", "bn", "bk", "tm"))
    zero = index(0)

    @cuda.jit
    def gemm_register_1d(a, b, c):
        a_s = cuda.shared.array((64, 8), float32)  # (bm, bk)
        b_s = cuda.shared.array((8, 64), float32)  # (bk, bn)
        m, depth, n = index(a.shape[0]), index(a.shape[1]), index(b.shape[1])
        tid = index(cuda.threadIdx.x)
        row0 = index(cuda.blockIdx.y) * bm
        col0 = index(cuda.blockIdx.x) * bn
        col = tid % bn  # this thread's column in the tile
        strip = (tid // bn) * tm  # and the first of its tm rows
        a_row, a_k = tid // bk, tid % bk  # the element of each tile this thread loads
        b_k, b_col = tid // bn, tid % bn
        acc = cuda.local.array(8, float32)
        for i in range(tm):
            acc[i] = 0.0
        for k0 in range(zero, depth, bk):
            ok = row0 + a_row < m and k0 + a_k < depth
            a_s[a_row, a_k] = a[row0 + a_row, k0 + a_k] if ok else float32(0)
            ok = k0 + b_k < depth and col0 + b_col < n
            b_s[b_k, b_col] = b[k0 + b_k, col0 + b_col] if ok else float32(0)
            cuda.syncthreads()
            for k in range(bk):
                b_value = b_s[k, col]  # one shared read feeds tm FMAs
                for i in range(tm):
                    acc[i] = cuda.fma(a_s[strip + i, k], b_value, acc[i])
            cuda.syncthreads()
        for i in range(tm):
            if row0 + strip + i < m and col0 + col < n:
                c[row0 + strip + i, col0 + col] = acc[i]

    return gemm_register_1d


def make_register_2d(index=int64):
    bm, bn, bk, tm, tn = (index(TILE_2D[x]) for x in ("bm", "bn", "bk", "tm", "tn"))
    threads, zero = index(TILE_2D["threads"]), index(0)
    per_thread_a = index(128 * 8 // 256)  # tile elements each thread loads: bm*bk/threads
    per_thread_b = index(8 * 128 // 256)

    @cuda.jit
    def gemm_register_2d(a, b, c):
        a_s = cuda.shared.array((128, 8), float32)  # (bm, bk)
        b_s = cuda.shared.array((8, 128), float32)  # (bk, bn)
        m, depth, n = index(a.shape[0]), index(a.shape[1]), index(b.shape[1])
        tid = index(cuda.threadIdx.x)
        row0 = index(cuda.blockIdx.y) * bm
        col0 = index(cuda.blockIdx.x) * bn
        trow = (tid // (bn // tn)) * tm  # this thread's tm x tn micro-tile in the block tile
        tcol = (tid % (bn // tn)) * tn
        acc = cuda.local.array((8, 8), float32)
        a_frag = cuda.local.array(8, float32)
        b_frag = cuda.local.array(8, float32)
        for i in range(tm):
            for j in range(tn):
                acc[i, j] = 0.0
        for k0 in range(zero, depth, bk):
            for p in range(per_thread_a):
                e = tid + p * threads
                r, k = e // bk, e % bk
                ok = row0 + r < m and k0 + k < depth
                a_s[r, k] = a[row0 + r, k0 + k] if ok else float32(0)
            for p in range(per_thread_b):
                e = tid + p * threads
                k, col = e // bn, e % bn
                ok = k0 + k < depth and col0 + col < n
                b_s[k, col] = b[k0 + k, col0 + col] if ok else float32(0)
            cuda.syncthreads()
            for k in range(bk):
                for i in range(tm):
                    a_frag[i] = a_s[trow + i, k]
                for j in range(tn):
                    b_frag[j] = b_s[k, tcol + j]
                for i in range(tm):  # tm + tn shared reads feed tm * tn FMAs
                    for j in range(tn):
                        acc[i, j] = cuda.fma(a_frag[i], b_frag[j], acc[i, j])
            cuda.syncthreads()
        for i in range(tm):
            for j in range(tn):
                if row0 + trow + i < m and col0 + tcol + j < n:
                    c[row0 + trow + i, col0 + tcol + j] = acc[i, j]

    return gemm_register_2d


gemm_register_1d = make_register_1d(int64)
gemm_register_2d = make_register_2d(int64)
gemm_register_2d_unsigned = make_register_2d(uint64)

KERNELS = {"register_1d": (gemm_register_1d, TILE_1D),
           "register_2d": (gemm_register_2d, TILE_2D),
           "register_2d_uint64": (gemm_register_2d_unsigned, TILE_2D)}


def grid_for(m: int, n: int, tile: dict) -> tuple[int, int]:
    return -(-n // tile["bn"]), -(-m // tile["bm"])


def launch(variant: str, a, b, c) -> None:
    kernel, tile = KERNELS[require_choice(variant, "register-tiled GEMM", KERNELS)]
    if c.size:  # an empty C (M or N = 0) needs no launch; K = 0 is one: C is all zeros
        kernel[grid_for(c.shape[0], c.shape[1], tile), tile["threads"]](a, b, c)


def gemm_register(a, b, variant: str = "register_2d_uint64"):
    """C = A @ B with one of the register-tiled kernels (host or device arrays in, same kind out)."""
    require_choice(variant, "register-tiled GEMM", KERNELS)
    m, n = check_gemm_operands(a, b)
    d_c = cuda.device_array((m, n), np.float32)
    launch(variant, to_device(a, "a"), to_device(b, "b"), d_c)
    return returned(d_c, not (is_device_array(a) and is_device_array(b)))
