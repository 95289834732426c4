"""Kernels of lesson 5 (reduce): s = x[0] + x[1] + ... + x[n-1], float32, in teaching order.

1. ``atomic_per_element``    every thread atomically adds its element to one global result
2. ``tree_interleaved``      shared-memory tree, ``if tid % (2*s) == 0``: a divergent branch
3. ``tree_strided_index``    the same tree with ``index = 2*s*tid``: no divergence, bank conflicts
4. ``tree_sequential``       ``if tid < s: sdata[tid] += sdata[tid + s]``: neither
5. ``tree_first_add``        each thread adds two elements while loading: half the blocks
6. ``grid_stride``           a grid-stride loop accumulates in registers; one atomic per block
7. ``warp_shuffle``          the notes' ``reduce_sum``: shuffles inside each warp, then across warps
8. ``vec4``                  16-byte loads (``load4``), four of them in flight per thread
9. ``vec4_last_block``       deterministic: per-block partials, the last block to finish adds them
                             in a fixed order (one launch, same bits every run)
   ``vec4_two_pass``         deterministic too: the partials summed by a second one-block launch

Beside the steps, two experiments of the lesson have kernels here:

- ``vec4`` twins, to test whether partial waves of blocks slow ``vec4`` down (6 of its blocks fit an
  SM, so a grid of 8 per SM is 1 1/3 waves): ``vec4_lb8`` (launch_bounds (256, 8)), ``vec4_maxreg32``
  (a register cap), ``vec4_u2`` (two float4 in flight, not four), and ``vec4_smem4`` (``vec4`` itself,
  launched with dynamic shared memory that lets 4 blocks share an SM);
- trees without atomics, where the tree is the work: ``tiles_<kind>`` (each block reduces many
  256-element tiles through shared memory, then writes its partial) and ``repeat_<kind>`` (each
  block reduces the same tile ``reps`` times: no DRAM at all), for kind in ``TREE_KINDS``
  (``no_tree``: the same loads, stores and barriers without the tree's levels).

Kernels 1-8 accumulate into ``out[0]`` with float atomics, so ``out`` must be zeroed before each
launch: ``launch()`` does it, because a user calling the reduction pays for it too. Host wrappers
(``reduce_sum``) check their input, accept NumPy or device arrays, and return a float32. Indices
in the hot loops are unsigned (``uint64``): with signed ones numba emits negative-index
wraparound code on every access.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numba import cuda, float32, int32, uint64

from .. import SIMULATED
from ..checks import (
    InputError,
    require_aligned,
    require_array,
    require_choice,
    require_contiguous,
    require_int,
)
from ..device import WARP_SIZE
from ..occupancy import occupancy, shared_to_limit, sm_limits
from ..vector import load4
from .arrays import to_device
from .launch import allow_dynamic_shared, resident_blocks

BLOCK = 256  # threads per block for every kernel here (shared arrays need a literal size)
FULL_MASK = 0xFFFFFFFF
UNROLL = 4  # float4 loads in flight per thread in the vec4 kernels' main loop


def gpu_options(**options) -> dict:
    """``cuda.jit`` options only the GPU compiler knows (register caps, launch bounds): the
    simulator has no register allocator, and its ``jit`` takes no such options."""
    return {} if SIMULATED else options


# ------------------------------------------------------------------- 1. one atomic per element


@cuda.jit
def atomic_per_element(x, out):
    i = cuda.grid(1)
    if i < x.size:
        cuda.atomic.add(out, 0, x[i])  # n atomics on one address: the L2 serialises them


# --------------------------------------------------------------- 2-5. shared-memory trees


@cuda.jit
def tree_interleaved(x, out):
    """Harris's kernel 1: partial sums at distance s are added by threads with tid % 2s == 0."""
    sdata = cuda.shared.array(BLOCK, float32)
    tid = cuda.threadIdx.x
    i = cuda.grid(1)
    sdata[tid] = x[i] if i < x.size else float32(0)
    cuda.syncthreads()
    s = 1
    while s < BLOCK:
        if tid % (2 * s) == 0:  # active threads scattered over every warp: divergent
            sdata[tid] += sdata[tid + s]
        cuda.syncthreads()
        s *= 2
    if tid == 0:
        cuda.atomic.add(out, 0, sdata[0])


@cuda.jit
def tree_strided_index(x, out):
    """Harris's kernel 2: the first threads work (no divergence) on words 2*s*tid: bank conflicts."""
    sdata = cuda.shared.array(BLOCK, float32)
    tid = cuda.threadIdx.x
    i = cuda.grid(1)
    sdata[tid] = x[i] if i < x.size else float32(0)
    cuda.syncthreads()
    s = 1
    while s < BLOCK:
        index = 2 * s * tid
        if index < BLOCK:  # a warp's words 2s apart share banks: 2-, 4-, then 8-way conflicts
            # (s = 1, 2, then 4 to 16: with 256 threads no more than 8 lanes are active from s = 16 on)
            sdata[index] += sdata[index + s]
        cuda.syncthreads()
        s *= 2
    if tid == 0:
        cuda.atomic.add(out, 0, sdata[0])


@cuda.jit
def tree_sequential(x, out):
    """Harris's kernel 3: the first s threads add word tid + s: consecutive words, no conflict."""
    sdata = cuda.shared.array(BLOCK, float32)
    tid = cuda.threadIdx.x
    i = cuda.grid(1)
    sdata[tid] = x[i] if i < x.size else float32(0)
    cuda.syncthreads()
    s = BLOCK // 2
    while s > 0:
        if tid < s:
            sdata[tid] += sdata[tid + s]
        cuda.syncthreads()
        s //= 2
    if tid == 0:
        cuda.atomic.add(out, 0, sdata[0])


@cuda.jit
def tree_first_add(x, out):
    """Harris's kernel 4: a block covers 2 x BLOCK elements, the first add done while loading."""
    sdata = cuda.shared.array(BLOCK, float32)
    tid = cuda.threadIdx.x
    i = cuda.blockIdx.x * (2 * BLOCK) + tid
    value = float32(0)
    if i < x.size:
        value = x[i]
    if i + BLOCK < x.size:
        value += x[i + BLOCK]
    sdata[tid] = value
    cuda.syncthreads()
    s = BLOCK // 2
    while s > 0:
        if tid < s:
            sdata[tid] += sdata[tid + s]
        cuda.syncthreads()
        s //= 2
    if tid == 0:
        cuda.atomic.add(out, 0, sdata[0])


# ------------------------------------------------------ 6. grid-stride accumulation in registers


@cuda.jit
def grid_stride(x, out):
    """A fixed grid walks the array; each thread keeps its running sum in a register."""
    sdata = cuda.shared.array(BLOCK, float32)
    tid = cuda.threadIdx.x
    n = uint64(x.size)
    width = uint64(BLOCK)
    i = uint64(cuda.blockIdx.x) * uint64(2 * BLOCK) + uint64(tid)
    stride = uint64(2 * BLOCK) * uint64(cuda.gridDim.x)
    value = float32(0)
    while i < n:
        value += x[i]
        if i + width < n:
            value += x[i + width]
        i += stride
    sdata[tid] = value
    cuda.syncthreads()
    s = BLOCK // 2
    while s > 0:
        if tid < s:
            sdata[tid] += sdata[tid + s]
        cuda.syncthreads()
        s //= 2
    if tid == 0:
        cuda.atomic.add(out, 0, sdata[0])


# ------------------------------------------------------------------------- 7. warp shuffles


@cuda.jit(device=True)
def warp_reduce_sum(value):
    """The notes' warp_reduce_sum: after 16, 8, 4, 2, 1, lane 0 holds the warp's sum."""
    offset = 16
    while offset > 0:
        value += cuda.shfl_down_sync(FULL_MASK, value, offset)
        offset //= 2
    return value


@cuda.jit(device=True)
def block_reduce_sum(value, warp_sums):
    """Two levels: each warp's sum to shared memory, then the first warp sums those (thread 0)."""
    tid = cuda.threadIdx.x
    value = warp_reduce_sum(value)
    if tid % WARP_SIZE == 0:
        warp_sums[tid // WARP_SIZE] = value
    cuda.syncthreads()
    warp_count = (cuda.blockDim.x + WARP_SIZE - 1) // WARP_SIZE
    value = warp_sums[tid] if tid < warp_count else float32(0)
    if tid < WARP_SIZE:
        value = warp_reduce_sum(value)
    return value


@cuda.jit
def warp_shuffle(x, out):
    """The notes' reduce_sum: two elements per grid-stride step, shuffles at both levels."""
    warp_sums = cuda.shared.array(WARP_SIZE, float32)
    tid = cuda.threadIdx.x
    n = uint64(x.size)
    width = uint64(cuda.blockDim.x)
    i = uint64(cuda.blockIdx.x) * width * uint64(2) + uint64(tid)
    stride = width * uint64(2) * uint64(cuda.gridDim.x)
    value = float32(0)
    while i < n:
        value += x[i]
        if i + width < n:
            value += x[i + width]
        i += stride
    value = block_reduce_sum(value, warp_sums)
    if tid == 0:
        cuda.atomic.add(out, 0, value)


# ------------------------------------------------------------------ 8. 16-byte loads in flight


@cuda.jit(device=True)
def vec4_thread_sum(x):
    """This thread's share of x, with 16-byte loads issued four at a time before any add.

    Thread t reads float4 groups t, t + T, t + 2T... (T threads in the grid), so each warp-wide
    load4 covers 512 consecutive bytes. After the full rounds, at most three float4 are left for
    this thread: they are loaded together too (one memory round trip, not three), then the
    n % 4 elements after the last float4."""
    n = uint64(x.size)
    groups = n // uint64(4)
    threads = uint64(cuda.gridsize(1))
    t = uint64(cuda.grid(1))
    two, three = threads + threads, threads + threads + threads
    step = three + threads  # UNROLL x threads
    a0 = a1 = a2 = a3 = float32(0)
    g = t
    while g + three < groups:  # full rounds: 64 bytes in flight per thread
        p0, p1, p2, p3 = load4(x, g)
        q0, q1, q2, q3 = load4(x, g + threads)
        r0, r1, r2, r3 = load4(x, g + two)
        s0, s1, s2, s3 = load4(x, g + three)
        a0 += (p0 + q0) + (r0 + s0)
        a1 += (p1 + q1) + (r1 + s1)
        a2 += (p2 + q2) + (r2 + s2)
        a3 += (p3 + q3) + (r3 + s3)
        g += step
    p0 = p1 = p2 = p3 = q0 = q1 = q2 = q3 = r0 = r1 = r2 = r3 = float32(0)
    if g < groups:  # the last, partial round: up to three float4, all in flight at once
        p0, p1, p2, p3 = load4(x, g)
    if g + threads < groups:
        q0, q1, q2, q3 = load4(x, g + threads)
    if g + two < groups:
        r0, r1, r2, r3 = load4(x, g + two)
    a0 += (p0 + q0) + r0
    a1 += (p1 + q1) + r1
    a2 += (p2 + q2) + r2
    a3 += (p3 + q3) + r3
    tail = groups * uint64(4) + t  # the n % 4 elements after the last float4
    if tail < n:
        a0 += x[tail]
    return (a0 + a1) + (a2 + a3)


@cuda.jit
def vec4(x, out):
    warp_sums = cuda.shared.array(WARP_SIZE, float32)
    value = block_reduce_sum(vec4_thread_sum(x), warp_sums)
    if cuda.threadIdx.x == 0:
        cuda.atomic.add(out, 0, value)


# -------------------------------------------------------------------- 9. deterministic variants


@cuda.jit(device=True)
def fixed_order_sum(partials, count):
    """Sum partials[0:count] in an order that depends only on count (one block). Each thread
    loads four partials at a time (one round trip per four, as in vec4_thread_sum)."""
    warp_sums = cuda.shared.array(WARP_SIZE, float32)
    width = cuda.blockDim.x
    b = cuda.threadIdx.x
    value = float32(0)
    while b + 3 * width < count:
        v0, v1, v2, v3 = partials[b], partials[b + width], partials[b + 2 * width], partials[b + 3 * width]
        value += (v0 + v1) + (v2 + v3)
        b += 4 * width
    v0 = v1 = v2 = float32(0)
    if b < count:
        v0 = partials[b]
    if b + width < count:
        v1 = partials[b + width]
    if b + 2 * width < count:
        v2 = partials[b + 2 * width]
    value += (v0 + v1) + v2
    return block_reduce_sum(value, warp_sums)


@cuda.jit
def vec4_last_block(x, partials, counter, out):
    """Each block writes its partial sum; the last block to finish (an atomic ticket) adds them.

    The fences order the partial's store before the ticket (writer) and the ticket before the
    loads of the partials (last block). The last block resets the counter for the next launch.
    """
    warp_sums = cuda.shared.array(WARP_SIZE, float32)
    is_last = cuda.shared.array(1, int32)
    tid = cuda.threadIdx.x
    value = block_reduce_sum(vec4_thread_sum(x), warp_sums)
    if cuda.gridDim.x == 1:  # one block (a small input): its sum is the result, no ticket needed
        if tid == 0:
            out[0] = value
        return
    if tid == 0:
        partials[cuda.blockIdx.x] = value
        cuda.threadfence()
        ticket = cuda.atomic.add(counter, 0, 1)
        is_last[0] = 1 if ticket == cuda.gridDim.x - 1 else 0
    cuda.syncthreads()
    if is_last[0] == 1:
        cuda.threadfence()
        total = fixed_order_sum(partials, cuda.gridDim.x)
        if tid == 0:
            out[0] = total
            counter[0] = 0


@cuda.jit
def vec4_partials(x, partials):
    warp_sums = cuda.shared.array(WARP_SIZE, float32)
    value = block_reduce_sum(vec4_thread_sum(x), warp_sums)
    if cuda.threadIdx.x == 0:
        partials[cuda.blockIdx.x] = value


@cuda.jit
def sum_partials(partials, count, out):
    total = fixed_order_sum(partials, count)
    if cuda.threadIdx.x == 0:
        out[0] = total


# ------------------------------------------------- vec4 twins: do partial waves of blocks cost time?
#
# vec4 needs 38 registers, so 6 blocks of 256 share an SM; at 8 blocks per SM the grid is 1 1/3
# waves of blocks. Each twin changes one thing: how many registers (so how many resident blocks),
# or how many loads a thread has in flight, or (vec4_smem4) only how many blocks may share an SM.
# (On the H200, at 8 blocks per SM vec4 is within 1.5% of the twins that fit 8 per SM, for which that
# grid is one whole wave; vec4_smem4, 4 per SM, loses 13% at 1 1/4 waves: a partial wave's tail
# matters when few blocks share an SM.)


@cuda.jit(**gpu_options(launch_bounds=(BLOCK, 8)))
def vec4_lb8(x, out):
    """vec4 compiled with launch_bounds (256, 8): the compiler must fit 8 blocks per SM (<= 32 registers)."""
    warp_sums = cuda.shared.array(WARP_SIZE, float32)
    value = block_reduce_sum(vec4_thread_sum(x), warp_sums)
    if cuda.threadIdx.x == 0:
        cuda.atomic.add(out, 0, value)


@cuda.jit(**gpu_options(max_registers=32))
def vec4_maxreg32(x, out):
    """vec4 compiled with a cap of 32 registers per thread (numba's max_registers)."""
    warp_sums = cuda.shared.array(WARP_SIZE, float32)
    value = block_reduce_sum(vec4_thread_sum(x), warp_sums)
    if cuda.threadIdx.x == 0:
        cuda.atomic.add(out, 0, value)


@cuda.jit(device=True)
def vec4_thread_sum_u2(x):
    """vec4_thread_sum with two float4 loads in flight per thread instead of four."""
    n = uint64(x.size)
    groups = n // uint64(4)
    threads = uint64(cuda.gridsize(1))
    t = uint64(cuda.grid(1))
    step = threads + threads
    a0 = a1 = a2 = a3 = float32(0)
    g = t
    while g + threads < groups:  # full rounds: 32 bytes in flight per thread
        p0, p1, p2, p3 = load4(x, g)
        q0, q1, q2, q3 = load4(x, g + threads)
        a0 += p0 + q0
        a1 += p1 + q1
        a2 += p2 + q2
        a3 += p3 + q3
        g += step
    if g < groups:  # at most one float4 is left for this thread
        p0, p1, p2, p3 = load4(x, g)
        a0 += p0
        a1 += p1
        a2 += p2
        a3 += p3
    tail = groups * uint64(4) + t  # the n % 4 elements after the last float4
    if tail < n:
        a0 += x[tail]
    return (a0 + a1) + (a2 + a3)


@cuda.jit
def vec4_u2(x, out):
    warp_sums = cuda.shared.array(WARP_SIZE, float32)
    value = block_reduce_sum(vec4_thread_sum_u2(x), warp_sums)
    if cuda.threadIdx.x == 0:
        cuda.atomic.add(out, 0, value)


SMEM_CAP_BLOCKS = 4  # vec4_smem4: dynamic shared memory that lets only this many blocks share an SM
VEC4_STATIC_SHARED = 4 * WARP_SIZE  # vec4's warp_sums (the recorded kernels.vec4.shared_bytes)


def capped_dynamic_shared(blocks_per_sm: int = SMEM_CAP_BLOCKS, static_bytes: int = VEC4_STATIC_SHARED,
                          limits=None) -> int:
    """Dynamic shared bytes per block that let exactly ``blocks_per_sm`` blocks of 256 (with
    ``static_bytes`` of static shared memory each) share an SM, by the occupancy calculator."""
    limits = limits or sm_limits()
    dynamic = shared_to_limit(BLOCK, blocks_per_sm, limits) - static_bytes
    granted = occupancy(BLOCK, 0, static_bytes + dynamic, limits, opt_in=True).blocks_per_sm  # it opts in
    if granted != blocks_per_sm:
        raise InputError(f"{dynamic} bytes of dynamic shared memory give {granted} blocks per SM, "
                         f"not {blocks_per_sm}")
    return dynamic


# ------------------------------------------------------ trees without atomics: the tree is the work
#
# The tree kernels of steps 2-4 end in one float atomic per block: at 2^28 elements, 2^20 atomics
# on one address take most of their 2 ms, so their trees look alike. Here the same three trees
# (the same loops, as device functions) run where nothing else hides them.


@cuda.jit(device=True)
def interleaved_levels(sdata, tid):
    """tree_interleaved's levels: sdata[0] ends with the sum of sdata[0:BLOCK]."""
    s = 1
    while s < BLOCK:
        if tid % (2 * s) == 0:
            sdata[tid] += sdata[tid + s]
        cuda.syncthreads()
        s *= 2


@cuda.jit(device=True)
def strided_index_levels(sdata, tid):
    """tree_strided_index's levels."""
    s = 1
    while s < BLOCK:
        index = 2 * s * tid
        if index < BLOCK:
            sdata[index] += sdata[index + s]
        cuda.syncthreads()
        s *= 2


@cuda.jit(device=True)
def sequential_levels(sdata, tid):
    """tree_sequential's levels."""
    s = BLOCK // 2
    while s > 0:
        if tid < s:
            sdata[tid] += sdata[tid + s]
        cuda.syncthreads()
        s //= 2


TREE_LEVELS = {"interleaved": interleaved_levels, "strided_index": strided_index_levels,
               "sequential": sequential_levels}
TREE_KINDS = ("no_tree", *TREE_LEVELS)  # no_tree: the same frame (store, barrier, load), no levels


def _named(function, name: str):
    """A kernel made in a factory gets its own name (in SASS, ncu and errors)."""
    function.__name__ = function.__qualname__ = name
    return cuda.jit(function)


def _tiles_kernel(levels, name: str):
    def tiles(x, partials):
        """Each block reduces tiles blockIdx.x, blockIdx.x + gridDim.x, ... of BLOCK elements, each
        through shared memory and the tree; thread 0 keeps the running sum; one partial per block."""
        sdata = cuda.shared.array(BLOCK, float32)
        tid = cuda.threadIdx.x
        n = uint64(x.size)
        count = (n + uint64(BLOCK - 1)) // uint64(BLOCK)
        tile = uint64(cuda.blockIdx.x)
        total = float32(0)
        while tile < count:
            i = tile * uint64(BLOCK) + uint64(tid)
            sdata[tid] = x[i] if i < n else float32(0)
            cuda.syncthreads()
            levels(sdata, tid)  # ends with a barrier: sdata[0] holds the tile's sum
            if tid == 0:
                total += sdata[0]
            tile += uint64(cuda.gridDim.x)
        if tid == 0:
            partials[cuda.blockIdx.x] = total

    return _named(tiles, name)


@cuda.jit
def tiles_no_tree(x, partials):
    """The tiles' frame without the tree: each thread adds its own word back from shared memory;
    one block reduction (shuffles) at the very end."""
    sdata = cuda.shared.array(BLOCK, float32)
    warp_sums = cuda.shared.array(WARP_SIZE, float32)
    tid = cuda.threadIdx.x
    n = uint64(x.size)
    count = (n + uint64(BLOCK - 1)) // uint64(BLOCK)
    tile = uint64(cuda.blockIdx.x)
    total = float32(0)
    while tile < count:
        i = tile * uint64(BLOCK) + uint64(tid)
        sdata[tid] = x[i] if i < n else float32(0)
        cuda.syncthreads()
        total += sdata[tid]
        tile += uint64(cuda.gridDim.x)
    total = block_reduce_sum(total, warp_sums)
    if tid == 0:
        partials[cuda.blockIdx.x] = total


def _repeat_kernel(levels, name: str):
    def repeat(x, partials, reps):
        """Block b reduces its tile x[256 b : 256 b + 256] ``reps`` times with the tree (no DRAM in
        the loop); partials[b] = reps x the tile's sum, added up by thread 0."""
        sdata = cuda.shared.array(BLOCK, float32)
        tid = cuda.threadIdx.x
        i = cuda.blockIdx.x * BLOCK + tid
        value = x[i] if i < x.size else float32(0)
        total = float32(0)
        for _ in range(reps):
            sdata[tid] = value
            cuda.syncthreads()
            levels(sdata, tid)
            if tid == 0:
                total += sdata[0]
        if tid == 0:
            partials[cuda.blockIdx.x] = total

    return _named(repeat, name)


@cuda.jit
def repeat_no_tree(x, partials, reps):
    """The repeat frame without the tree: store, barrier, each thread loads its own word back."""
    sdata = cuda.shared.array(BLOCK, float32)
    warp_sums = cuda.shared.array(WARP_SIZE, float32)
    tid = cuda.threadIdx.x
    i = cuda.blockIdx.x * BLOCK + tid
    value = x[i] if i < x.size else float32(0)
    total = float32(0)
    for _ in range(reps):
        sdata[tid] = value
        cuda.syncthreads()
        total += sdata[tid]
    total = block_reduce_sum(total, warp_sums)
    if tid == 0:
        partials[cuda.blockIdx.x] = total


TILES = {"no_tree": tiles_no_tree,
         **{kind: _tiles_kernel(levels, f"tiles_{kind}") for kind, levels in TREE_LEVELS.items()}}
REPEATS = {"no_tree": repeat_no_tree,
           **{kind: _repeat_kernel(levels, f"repeat_{kind}") for kind, levels in TREE_LEVELS.items()}}


def tree_kind(kind: str) -> str:
    if kind not in TREE_KINDS:
        raise InputError(f"unknown tree kind {kind!r}; choose one of: {', '.join(TREE_KINDS)}")
    return kind


def tiles_launch(kind: str, x, partials, out, blocks: int) -> None:
    """sum(x) into out[0] in two launches: ``tiles_<kind>`` writes one partial per block, then
    ``sum_partials`` adds them in a fixed order (no atomics anywhere)."""
    TILES[tree_kind(kind)][blocks, BLOCK](x, partials)
    sum_partials[1, BLOCK](partials, np.int32(blocks), out)


def repeat_launch(kind: str, x, partials, reps: int) -> None:
    """One block per BLOCK elements of x; partials[b] = reps x sum of block b's tile."""
    REPEATS[tree_kind(kind)][-(-x.size // BLOCK), BLOCK](x, partials, np.int32(reps))


def tiles_sum(x, kind: str, blocks: int = 2) -> np.float32:
    """Host wrapper of tiles_launch (checks, NumPy or device input): sum(x) as a float32."""
    require_array(x, "x", dtype=np.float32, ndim=1)
    require_contiguous(x, "x")
    blocks = require_int(blocks, "blocks", 1, 2**31 - 1)
    partials = cuda.device_array(blocks, np.float32)
    out = cuda.device_array(1, np.float32)
    tiles_launch(kind, to_device(x, "x"), partials, out, blocks)
    return np.float32(out.copy_to_host()[0])


def repeat_partials(x, kind: str, reps: int) -> np.ndarray:
    """Host wrapper of repeat_launch: each block's reps x tile sum (a float32 array)."""
    require_array(x, "x", dtype=np.float32, ndim=1)
    require_contiguous(x, "x")
    reps = require_int(reps, "reps", 0, 2**31 - 1)
    if x.shape[0] == 0:
        raise InputError("x must hold at least one element (one block per 256)")
    partials = cuda.device_array(-(-x.shape[0] // BLOCK), np.float32)
    repeat_launch(kind, to_device(x, "x"), partials, reps)
    return partials.copy_to_host()


# ---------------------------------------------------------------------- variants and launches


@dataclass(frozen=True)
class Variant:
    name: str
    step: str  # what changed, for the table
    grid_stride: bool  # a fixed grid walks the array (the grid size is a parameter)
    atomic: bool  # accumulates into out[0] with float atomics: zeroed first, bits may vary
    vector: bool  # 16-byte loads: the input must be 16-byte aligned
    elements_per_thread: int = 1  # without grid stride: elements one thread covers


VARIANTS = [
    Variant("atomic_per_element", "one global atomic per element", False, True, False),
    Variant("tree_interleaved", "shared tree, tid % 2s (divergent)", False, True, False),
    Variant("tree_strided_index", "shared tree, index 2*s*tid (bank conflicts)", False, True, False),
    Variant("tree_sequential", "shared tree, sequential addressing", False, True, False),
    Variant("tree_first_add", "first add during load", False, True, False, 2),
    Variant("grid_stride", "grid-stride sums in registers, 1 atomic/block", True, True, False),
    Variant("warp_shuffle", "warp shuffles at both levels", True, True, False),
    Variant("vec4", "16-byte loads, 4 in flight per thread", True, True, True),
    Variant("vec4_last_block", "deterministic: last block sums the partials", True, False, True),
    Variant("vec4_two_pass", "deterministic: second launch sums the partials", True, False, True),
]
BY_NAME = {v.name: v for v in VARIANTS}
PROGRESSION = [v.name for v in VARIANTS[:8]]  # the teaching steps; then the deterministic ones
DETERMINISTIC = ["vec4_last_block", "vec4_two_pass"]
KERNELS = {
    "atomic_per_element": atomic_per_element, "tree_interleaved": tree_interleaved,
    "tree_strided_index": tree_strided_index, "tree_sequential": tree_sequential,
    "tree_first_add": tree_first_add, "grid_stride": grid_stride, "warp_shuffle": warp_shuffle,
    "vec4": vec4, "vec4_last_block": vec4_last_block, "vec4_two_pass": vec4_partials,
}
# vec4's twins (the waves experiment): not teaching steps, each with one change from vec4.
TWINS = [
    Variant("vec4_lb8", "vec4, launch_bounds (256, 8): <= 32 registers, 8 blocks/SM", True, True, True),
    Variant("vec4_maxreg32", "vec4, max_registers=32", True, True, True),
    Variant("vec4_u2", "vec4 with 2 float4 loads in flight per thread, not 4", True, True, True),
    Variant("vec4_smem4", "vec4 itself; dynamic shared memory lets only 4 blocks share an SM",
            True, True, True),
]
TWIN_KERNELS = {"vec4_lb8": vec4_lb8, "vec4_maxreg32": vec4_maxreg32, "vec4_u2": vec4_u2, "vec4_smem4": vec4}
RESIDENCY_CAP = {"vec4_smem4": SMEM_CAP_BLOCKS}  # blocks per SM the launch's dynamic shared memory allows
_ALL = {**BY_NAME, **{v.name: v for v in TWINS}}


def variant(name: str) -> Variant:
    return _ALL[require_choice(name, "reduce variant", _ALL)]


def kernel_of(name: str):
    """The kernel a variant launches (for the two-pass one, its first pass)."""
    variant(name)
    return KERNELS[name] if name in KERNELS else TWIN_KERNELS[name]


def dynamic_shared(name: str) -> int:
    """Dynamic shared bytes per block the variant's launch asks for (0 but for vec4_smem4)."""
    cap = RESIDENCY_CAP.get(variant(name).name)
    return 0 if cap is None else capped_dynamic_shared(cap)


def elements_per_block_step(name: str) -> int:
    """Elements a block consumes per grid-stride step (or in all, without grid stride)."""
    v = variant(name)
    if v.vector:
        return BLOCK * 4 * UNROLL
    if v.grid_stride:
        return 2 * BLOCK
    return BLOCK * v.elements_per_thread


def blocks_for(name: str, n: int, blocks: int | None = None) -> int:
    """The grid: one thread per element(s) without grid stride; with it, `blocks` (default: the
    resident blocks that fill the device) but no more than the array needs."""
    needed = max(1, -(-n // elements_per_block_step(name)))
    if not variant(name).grid_stride:
        return needed
    return min(needed, blocks or resident_blocks())


class Workspace:
    """What one variant needs besides x: the result, and for the deterministic ones the
    per-block partials and the last block's counter (allocated once, reused by every launch)."""

    def __init__(self, name: str, max_blocks: int):
        self.variant = variant(name)
        self.out = cuda.device_array(1, np.float32)
        self.partials = cuda.device_array(max(1, max_blocks), np.float32)
        self.counter = cuda.to_device(np.zeros(1, np.int32))
        self.dynamic_shared = dynamic_shared(name)
        if self.dynamic_shared:  # past 48 KiB per block the kernel must opt in, once
            allow_dynamic_shared(kernel_of(name), (cuda.device_array(4, np.float32), self.out),
                                 self.dynamic_shared)


def zero(out) -> None:
    """out[0] = 0 before an atomic reduction (a memset on a GPU: what any caller must pay)."""
    if isinstance(out, np.ndarray):
        out[...] = 0
    elif hasattr(out, "_ary"):  # a simulator device array
        out._ary[...] = 0
    else:
        # cuMemsetD8Async on the default stream: queued behind the last kernel, host not blocked
        cuda.cudadrv.driver.device_memset(out, 0, out.nbytes, stream=cuda.default_stream())


def launch(name: str, x, work: Workspace, blocks: int | None = None) -> None:
    """One reduction of device array x into work.out[0] (zeroing it first for atomic kernels)."""
    v = work.variant
    grid = blocks_for(name, x.size, blocks)
    if grid > work.partials.size and not v.atomic:
        raise InputError(f"{grid} blocks need {grid} partials; the workspace has {work.partials.size}")
    kernel = kernel_of(name)
    if v.atomic:
        zero(work.out)
        kernel[grid, BLOCK, 0, work.dynamic_shared](x, work.out)
    elif name == "vec4_last_block":
        kernel[grid, BLOCK](x, work.partials, work.counter, work.out)
    else:
        kernel[grid, BLOCK](x, work.partials)
        sum_partials[1, BLOCK](work.partials, np.int32(grid), work.out)


def reduce_sum(x, name: str = "vec4_last_block", blocks: int | None = None) -> np.float32:
    """Sum a 1-D float32 array (NumPy or device) with one of the kernels; returns a float32.

    Length 0 gives 0.0, as numpy.sum does; NaN and inf propagate as in NumPy.
    """
    v = variant(name)
    require_array(x, "x", dtype=np.float32, ndim=1)
    require_contiguous(x, "x")
    if v.vector:
        require_aligned(x, "x", 16)
    if blocks is not None:
        require_int(blocks, "blocks", 1, 2**31 - 1)
    device_x = to_device(x, "x")
    work = Workspace(name, blocks_for(name, x.shape[0], blocks))
    launch(name, device_x, work, blocks)
    return np.float32(work.out.copy_to_host()[0])


# ------------------------------------------------------------------------- floating point


UNIT_ROUNDOFF = 2.0**-24  # float32: round to nearest, 24-bit significand


def _lane_depth(groups: int, unroll: int, tail: bool) -> int:
    """Roundings in one lane of vec4_thread_sum (unroll 4) or vec4_thread_sum_u2 (unroll 2), or of
    fixed_order_sum (unroll 4, no tail), for the thread that sees ``groups`` loads: a full round adds
    its loads pairwise (log2 unroll roundings) and then onto the lane's sum, which starts at 0 (the
    first round's add is exact); the partial round and the tail add onto it once each."""
    full, rest = divmod(groups, unroll)
    inner = int(math.log2(unroll))
    if full:
        return inner + (full - 1) + (rest > 0) + tail
    partial = max(rest - 1, 0) if unroll == 4 else 0  # (p + q) + r: one rounding per partner
    return partial + (tail and rest > 0)


def _merge_depth(name: str, n: int, grid: int) -> int:
    """The merge of the block sums: float atomics onto out[0] = 0 (a chain over the blocks that hold
    elements; the first lands on 0, exact), or fixed_order_sum over the partials (nothing with 1)."""
    v = variant(name)
    if v.atomic:
        if v.vector:  # block b's first float4 is group b * BLOCK (the n % 4 tail is block 0's)
            held = -(-(n // 4) // BLOCK)
        else:
            held = -(-n // (2 * BLOCK if v.grid_stride else elements_per_block_step(name)))
        filled = min(grid, max(1, held))  # a block past the end adds 0.0: exact
        return filled - 1
    if grid == 1:
        return 0
    return _lane_depth(-(-grid // BLOCK), 4, False) + math.ceil(math.log2(min(grid, BLOCK)))


def addition_depth(name: str, n: int, blocks: int | None = None) -> int:
    """The most roundings any element's contribution can go through in this variant's order of
    additions (the depth of its addition tree), counting only additions that can round: not an add
    onto 0 (a register or out[0] that starts at 0) and not an empty block's atomic (it adds 0.0).
    Per-thread chain + a full block's tree (log2 BLOCK levels) + the merge of the blocks."""
    if n <= 1:
        return 0
    grid = blocks_for(name, n, blocks)
    log_block = int(math.log2(BLOCK))
    if name == "atomic_per_element":
        return n - 1  # one chain through every element, onto out[0] = 0, in whatever order they land
    v = variant(name)
    if not v.grid_stride:
        chain = v.elements_per_thread - 1  # tree_first_add's add during the load
    elif v.vector:
        groups = -(-(n // 4) // (grid * BLOCK))  # float4 groups thread 0 loads (it also takes a tail)
        unroll = 2 if name == "vec4_u2" else UNROLL
        chain = _lane_depth(groups, unroll, n % 4 > 0) + 2  # then (a0 + a1) + (a2 + a3)
    else:
        chain = -(-n // (grid * BLOCK)) - 1  # elements one thread adds, the first onto 0
    return chain + log_block + _merge_depth(name, n, grid)


def error_bound(x: np.ndarray, name: str, blocks: int | None = None) -> float:
    """Worst-case |float32 sum - exact sum| for this variant: gamma_d * sum|x| (Higham, 4.3),
    d = addition_depth, gamma_d = d u / (1 - d u). Tests use it as their tolerance."""
    return gamma(addition_depth(name, int(np.size(x)), blocks)) * float(
        np.sum(np.abs(np.asarray(x, dtype=np.float64))))


def gamma(depth: int) -> float:
    """gamma_d = d u / (1 - d u); infinite once d u >= 1 (2^24 additions in a chain): from there
    on a float32 chain can lose everything (a running sum of 2^24 stops growing when each new
    element is below 1)."""
    du = depth * UNIT_ROUNDOFF
    return du / (1 - du) if du < 1 else math.inf



def tiles_depth(n: int, blocks: int) -> int:
    """Addition depth of tiles_launch: the tile's tree (or, no_tree, the block reduction), thread 0's
    running sum over the block's tiles, and sum_partials' fixed-order merge of the partials."""
    log_block = int(math.log2(BLOCK))
    tiles_per_block = -(-max(n, 1) // (BLOCK * blocks))
    merge = 0 if blocks == 1 else (_lane_depth(-(-blocks // BLOCK), 4, False)
                                   + math.ceil(math.log2(min(blocks, BLOCK))))
    return log_block + (tiles_per_block - 1) + merge  # thread 0's running sum starts at 0


def repeat_depth(reps: int) -> int:
    """Addition depth of one repeat_launch partial: the tree, then reps tree sums added in a chain."""
    return int(math.log2(BLOCK)) + reps - 1  # thread 0's running sum starts at 0
