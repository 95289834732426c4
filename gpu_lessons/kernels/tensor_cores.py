"""Lesson 7's kernels: TF32 tensor cores (``mma.sync``) and asynchronous copies (``cp.async``), in
teaching order, behind checked host wrappers.

a. ``mma_demo(a, b, c)``: one warp, one ``mma.sync.m16n8k8``: D = A B + C for a 16x8x8 tile, each
   lane loading exactly the fragment elements the PTX ISA assigns it (the layout picture).
b. The TF32 GEMM progression, ``matmul(a, b, step)`` (``STEPS``, one change each):
   ``mma_global``   one warp per 16x8 tile of C, fragments read straight from global memory;
   ``mma_shared``   a block's tiles of A and B staged in shared memory (plain loads, two barriers);
   ``mma_async``    the same tiles copied by ``cp.async``, ``stages - 1`` tiles in flight;
   ``warp_tile``    a 64x32 tile of C per warp: 16 MMAs per k-step from 6 fragment loads, 128x128
                    block tiles, 3 stages;
   ``warp_tile_64x64``  4 warps of 64x64 in the same block tile: 32 MMAs per k-step from 8 loads.
c. ``round_tf32(x, out)``: every element rounded to TF32 (``cvt.rna``) once, before a GEMM whose
   kernel then skips the conversion (``TcTile(round_inputs=False)``): rounded accuracy, one pass.
d. ``mma_peak``: the ceiling, independent MMA chains on registers only (``measure_peak`` on a GPU).

Lesson 6's FP32 SIMT kernel with a cp.async pipeline is ``gemm_codegen.Tile(stages=...)``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from numba import cuda, float32, uint64

from .. import gates, ptx
from ..checks import InputError, require_array, require_int
from . import generated, tc_codegen
from .arrays import is_device_array, returned, to_device
from .gemm import check_gemm_operands

TcTile = tc_codegen.TcTile
U = uint64

# What the kernels need of the GPU (gpu_lessons.gates): mma.sync with TF32 operands and cp.async are
# PTX instructions of sm_80 on; ptxas refuses them for older targets.
SM80 = (8, 0)
MMA = "mma.sync .tf32"
MMA_NEEDS = gates.Needs(cc=SM80, why=MMA)


def tile_needs(tile: TcTile) -> gates.Needs:
    """A generated TF32 tile's needs: sm_80, and its dynamic shared memory (all of its stages)."""
    return gates.Needs(cc=SM80, why=f"{MMA}, cp.async" if tile.stages > 1 else MMA,
                       shared_bytes=tile.shared_bytes)


# --- a. one warp, one MMA -------------------------------------------------------------------------


@cuda.jit
def mma_demo_kernel(a, b, c, d):
    """One warp: D = A B + C (A 16x8, B 8x8, C and D 16x8), A and B rounded to TF32 first."""
    lane = cuda.threadIdx.x
    g, t = lane // 4, lane % 4  # groupID, threadID_in_group
    a0 = ptx.cvt_rna_tf32(a[g, t])
    a1 = ptx.cvt_rna_tf32(a[g + 8, t])
    a2 = ptx.cvt_rna_tf32(a[g, t + 4])
    a3 = ptx.cvt_rna_tf32(a[g + 8, t + 4])
    b0 = ptx.cvt_rna_tf32(b[t, g])
    b1 = ptx.cvt_rna_tf32(b[t + 4, g])
    d0, d1, d2, d3 = ptx.mma_tf32(a0, a1, a2, a3, b0, b1,
                                  c[g, 2 * t], c[g, 2 * t + 1], c[g + 8, 2 * t], c[g + 8, 2 * t + 1])
    d[g, 2 * t] = d0
    d[g, 2 * t + 1] = d1
    d[g + 8, 2 * t] = d2
    d[g + 8, 2 * t + 1] = d3


def mma_demo(a, b, c=None):
    """D = A B + C with one mma.sync (A 16x8, B 8x8, C 16x8 float32; C defaults to zeros)."""
    gates.require("mma_demo", MMA_NEEDS)
    require_array(a, "a", dtype=np.float32, ndim=2)
    require_array(b, "b", dtype=np.float32, ndim=2)
    c = np.zeros((16, 8), np.float32) if c is None else c
    require_array(c, "c", dtype=np.float32, ndim=2)
    for name, x, shape in (("a", a, (16, 8)), ("b", b, (8, 8)), ("c", c, (16, 8))):
        if tuple(x.shape) != shape:
            raise InputError(f"{name} must be {shape[0]}x{shape[1]} for one m16n8k8 MMA, "
                             f"got {tuple(x.shape)}")
    d = cuda.device_array((16, 8), np.float32)
    mma_demo_kernel[1, 32](to_device(np.ascontiguousarray(a), "a"), to_device(np.ascontiguousarray(b), "b"),
                           to_device(np.ascontiguousarray(c), "c"), d)
    return d.copy_to_host()


def fragment_owners() -> dict[str, np.ndarray]:
    """Which lane holds each element of A (16x8), B (8x8) and C (16x8), and as which register:
    arrays of strings like 'T5 a2', for the layout picture."""
    from ..sim.ptx import a_fragment, b_fragment, c_fragment

    owners = {"A": np.empty((16, 8), object), "B": np.empty((8, 8), object), "C": np.empty((16, 8), object)}
    for lane in range(32):
        for name, coords, register in (("A", a_fragment(lane), "a"), ("B", b_fragment(lane), "b"),
                                       ("C", c_fragment(lane), "c")):
            for q, (row, col) in enumerate(coords):
                owners[name][row, col] = f"T{lane} {register}{q}"
    return owners


def slab_k_order() -> list[tuple[int, int, int, int]]:
    """How the generated kernels feed a 16-deep slab of A (and B) to two MMAs: (k in the slab, k-step,
    lane's t, the MMA's column of A = row of B) for every k, from ``tc_codegen.slab_k`` (the generator's
    own rule): lane (g, t) loads A[row][4t .. 4t+3] with one 16-byte load and feeds two k-steps."""
    order = []
    for t in range(4):
        for step in (0, 1):
            for upper in (False, True):
                order.append((tc_codegen.slab_k(t, step, upper), step, t, t + 4 * upper))
    return sorted(order)


# --- b. the TF32 GEMM progression -----------------------------------------------------------------

GLOBAL_WARPS_M, GLOBAL_WARPS_N = 2, 2  # a block of 4 warps covers 32 x 16 of C


@cuda.jit
def mma_global(a, b, c, m, n, k):
    """One warp per 16x8 tile of C; every fragment element read from global memory, 4 bytes each."""
    warp, lane = U(cuda.threadIdx.x) // U(32), U(cuda.threadIdx.x) % U(32)
    g, t = lane // U(4), lane % U(4)
    row = (U(cuda.blockIdx.y) * U(GLOBAL_WARPS_M) + warp // U(GLOBAL_WARPS_N)) * U(16) + g
    col = (U(cuda.blockIdx.x) * U(GLOBAL_WARPS_N) + warp % U(GLOBAL_WARPS_N)) * U(8)
    d0 = d1 = d2 = d3 = float32(0)
    for step in range((k + U(7)) // U(8)):
        k0 = step * U(8) + t
        k1 = k0 + U(4)
        a0 = a[row * k + k0] if row < m and k0 < k else float32(0)
        a1 = a[(row + U(8)) * k + k0] if row + U(8) < m and k0 < k else float32(0)
        a2 = a[row * k + k1] if row < m and k1 < k else float32(0)
        a3 = a[(row + U(8)) * k + k1] if row + U(8) < m and k1 < k else float32(0)
        b0 = b[k0 * n + col + g] if k0 < k and col + g < n else float32(0)
        b1 = b[k1 * n + col + g] if k1 < k and col + g < n else float32(0)
        d0, d1, d2, d3 = ptx.mma_tf32(ptx.cvt_rna_tf32(a0), ptx.cvt_rna_tf32(a1), ptx.cvt_rna_tf32(a2),
                                      ptx.cvt_rna_tf32(a3), ptx.cvt_rna_tf32(b0), ptx.cvt_rna_tf32(b1),
                                      d0, d1, d2, d3)
    col += U(2) * t  # d0, d1 at row g, columns 2t, 2t+1; d2, d3 eight rows down
    if row < m and col < n:
        c[row * n + col] = d0
    if row < m and col + U(1) < n:
        c[row * n + col + U(1)] = d1
    if row + U(8) < m and col < n:
        c[(row + U(8)) * n + col] = d2
    if row + U(8) < m and col + U(1) < n:
        c[(row + U(8)) * n + col + U(1)] = d3


def mma_global_launch(a, b, c) -> None:
    m, k = a.shape
    n = b.shape[1]
    grid = (-(-n // (8 * GLOBAL_WARPS_N)), -(-m // (16 * GLOBAL_WARPS_M)))
    mma_global[grid, 32 * GLOBAL_WARPS_M * GLOBAL_WARPS_N](a.reshape(a.size), b.reshape(b.size),
                                                           c.reshape(c.size), U(m), U(n), U(k))


@dataclass(frozen=True)
class Step:
    name: str
    title: str
    change: str
    launch: Callable  # (a, b, c) on device arrays, C = A @ B
    tile: TcTile | None = None


def _generated(name: str, title: str, change: str, tile: TcTile) -> Step:
    return Step(name, title, change, lambda a, b, c, t=tile: tc_codegen.launch(t, a, b, c), tile)


SHARED_TILE = TcTile(bm=32, bn=32, bk=32, wm=16, wn=8, stages=1)  # 8 warps, one MMA each per k-step
ASYNC_TILE = TcTile(bm=32, bn=32, bk=32, wm=16, wn=8, stages=3)
WARP_TILE = TcTile(bm=128, bn=128, bk=32, wm=64, wn=32, stages=3)  # 8 warps, 16 MMAs each per k-step
# 4 warps of 64x64, 32 MMAs each per k-step from 8 fragment loads, 254 registers: the fastest
# measured (data/nvidia-h200/probes/tensor_cores.csv: "warp_tile 64x64 (4 warps)", 2.2x cuBLAS SGEMM)
WARP_TILE_64X64 = TcTile(bm=128, bn=128, bk=32, wm=64, wn=64, stages=3)

STEPS: list[Step] = [
    Step("mma_global", "one MMA per warp, from global memory",
         "16x8 of C per warp; each lane loads its fragments (4-byte loads)", mma_global_launch),
    _generated("mma_shared", "shared-memory tiles", "32x32x32 tiles of A and B staged in shared memory",
               SHARED_TILE),
    _generated("mma_async", "cp.async pipeline", "the tiles copied by cp.async, 2 tiles in flight",
               ASYNC_TILE),
    _generated("warp_tile", "warp tiles 64x32", "128x128 blocks; 16 MMAs per warp per k-step reuse "
               "fragments from registers", WARP_TILE),
    _generated("warp_tile_64x64", "warp tiles 64x64", "4 warps of 64x64: 32 MMAs per warp per k-step",
               WARP_TILE_64X64),
]
BY_NAME = {s.name: s for s in STEPS}


def step(name: str) -> Step:
    if name not in BY_NAME:
        raise InputError(f"unknown tensor-core step {name!r}; choose from: {', '.join(BY_NAME)}")
    return BY_NAME[name]


def matmul(a, b, name: str = "warp_tile"):
    """C = A @ B (float32 in and out, TF32 products) with one step's kernel: host arrays in, host
    array out (device in, device out)."""
    chosen = step(name)
    gates.require(name, MMA_NEEDS if chosen.tile is None else tile_needs(chosen.tile))
    m, n = check_gemm_operands(a, b)
    d_c = cuda.device_array((m, n), np.float32)
    if m and n:  # an empty C needs no launch (K = 0 is a launch: C is all zeros)
        chosen.launch(to_device(a, "a"), to_device(b, "b"), d_c)
    return returned(d_c, not (is_device_array(a) and is_device_array(b)))


def gemm_tile(a, b, tile: TcTile):
    """C = A @ B with any generated tile (host or device arrays in, same kind out)."""
    tile.validate()
    gates.require(repr(tile), tile_needs(tile))
    m, n = check_gemm_operands(a, b)
    d_c = cuda.device_array((m, n), np.float32)
    if m and n:
        tc_codegen.launch(tile, to_device(a, "a"), to_device(b, "b"), d_c)
    return returned(d_c, not (is_device_array(a) and is_device_array(b)))


# --- c. rounding once, beforehand ----------------------------------------------------------------

ROUND_BLOCK = 256


@cuda.jit
def round_tf32_kernel(x, out):
    """out = x rounded to nearest TF32 (``cvt.rna``), element by element; x and out 1-D."""
    i = cuda.grid(1)
    if i < x.size:
        out[i] = ptx.cvt_rna_tf32(x[i])


def round_tf32(x, out=None):
    """x rounded to TF32 once (a contiguous float32 array, host or device; same kind out). With a
    GEMM kernel that skips ``cvt.rna`` this gives the rounded result without converting every
    fragment on every load."""
    require_array(x, "x", dtype=np.float32)
    d_x = to_device(x, "x")
    d_out = cuda.device_array(d_x.shape, np.float32) if out is None else out
    if d_x.size:
        flat_x, flat_out = d_x.reshape(d_x.size), d_out.reshape(d_out.size)
        round_tf32_kernel[-(-d_x.size // ROUND_BLOCK), ROUND_BLOCK](flat_x, flat_out)
    return returned(d_out, not is_device_array(x))


# --- d. the ceiling -------------------------------------------------------------------------------

FLOP_PER_MMA = 2 * 16 * 8 * 8
_PEAK: dict = {}


def peak_source(chains: int) -> str:
    """A kernel of ``chains`` independent MMA chains per warp on registers, ``iterations`` times."""
    lines = ["def mma_peak(out, iterations):",
             "    lane = cuda.threadIdx.x % 32",
             "    x = float32(1) + float32(lane) * float32(2 ** -7)",
             "    y = float32(1) - float32(lane) * float32(2 ** -8)"]
    for q in range(chains):
        lines.append(f"    d{q}_0 = d{q}_1 = d{q}_2 = d{q}_3 = float32({q})")
    lines.append("    for _ in range(iterations):")
    for q in range(chains):
        accs = ", ".join(f"d{q}_{r}" for r in range(4))
        lines.append(f"        {accs} = mma_tf32(x, y, x, y, y, x, {accs})")
    total = " + ".join(f"d{q}_{r}" for q in range(chains) for r in range(4))
    lines.append(f"    out[cuda.grid(1)] = {total}")
    return "\n".join(lines) + "\n"


def peak_kernel(chains: int = 8):
    if chains not in _PEAK:
        namespace = {"cuda": cuda, "float32": float32, "mma_tf32": ptx.mma_tf32}
        function = generated.define(peak_source(chains), "mma_peak", namespace, f"mma_peak {chains} chains")
        _PEAK[chains] = generated.jit(function)
    return _PEAK[chains]


def run_peak(blocks: int, warps_per_block: int, iterations: int, chains: int = 8):
    """Launch the ceiling kernel once; returns the device output (one sum per thread)."""
    require_int(blocks, "blocks", 1)
    require_int(warps_per_block, "warps_per_block", 1, 32)
    require_int(iterations, "iterations", 0)
    gates.require("mma_peak", MMA_NEEDS)
    out = cuda.device_array(blocks * warps_per_block * 32, np.float32)
    peak_kernel(chains)[blocks, 32 * warps_per_block](out, np.int64(iterations))
    return out


def peak_flops(blocks: int, warps_per_block: int, iterations: int, chains: int = 8) -> int:
    return blocks * warps_per_block * iterations * chains * FLOP_PER_MMA
