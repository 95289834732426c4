"""The course notes' divergence rule on a real two-path warp (lesson 5).

The notes' example: ``if (threadIdx.x % 2 == 0) { A } else { B }``: half of each warp takes path A,
half path B, so the warp runs both paths one after the other ("2x instruction issue"). The pair here
gives both paths the same, measurable cost (``CHAINS`` independent FMA chains of ``reps`` steps each,
different constants so that the compiler cannot merge them) and differs only in where the branch splits:

- ``two_paths_divergent``: by lane parity (``threadIdx.x % 2``): every warp runs A and B;
- ``two_paths_uniform``: by warp parity (``(threadIdx.x // 32) % 2``): each warp runs one path.

Both do the same work per thread (2 x CHAINS x reps FLOP) and write one float per thread (so that
nothing is dead code). The rule predicts the divergent kernel takes twice the uniform one's time.
"""

from __future__ import annotations

import numpy as np
from numba import cuda, float32

from ..checks import InputError, require_array
from ..device import WARP_SIZE

BLOCK = 256
CHAINS = 4  # independent FMA chains per thread: enough to keep the FMA pipe busy at full occupancy
KERNELS = ("two_paths_divergent", "two_paths_uniform")
# Path A: x <- 0.75 x + 0.25; path B: x <- 0.5 x + 0.5 (both stay in [0, 1]: no overflow, no denormals)
A_MUL, A_ADD, B_MUL, B_ADD = 0.75, 0.25, 0.5, 0.5


@cuda.jit(device=True, inline=True)
def _path_a(seed, reps):
    x0 = seed
    x1 = seed * float32(0.5)
    x2 = seed * float32(0.25)
    x3 = seed * float32(0.125)
    for _ in range(reps):
        x0 = cuda.fma(x0, float32(A_MUL), float32(A_ADD))
        x1 = cuda.fma(x1, float32(A_MUL), float32(A_ADD))
        x2 = cuda.fma(x2, float32(A_MUL), float32(A_ADD))
        x3 = cuda.fma(x3, float32(A_MUL), float32(A_ADD))
    return x0 + x1 + x2 + x3


@cuda.jit(device=True, inline=True)
def _path_b(seed, reps):
    x0 = seed
    x1 = seed * float32(0.5)
    x2 = seed * float32(0.25)
    x3 = seed * float32(0.125)
    for _ in range(reps):
        x0 = cuda.fma(x0, float32(B_MUL), float32(B_ADD))
        x1 = cuda.fma(x1, float32(B_MUL), float32(B_ADD))
        x2 = cuda.fma(x2, float32(B_MUL), float32(B_ADD))
        x3 = cuda.fma(x3, float32(B_MUL), float32(B_ADD))
    return x0 + x1 + x2 + x3


@cuda.jit
def two_paths_divergent(seeds, out, reps):
    """Even lanes take path A, odd lanes path B: the notes' ``threadIdx.x % 2`` branch."""
    i = cuda.grid(1)
    if i < out.size:
        if cuda.threadIdx.x % 2 == 0:
            out[i] = _path_a(seeds[i], reps)
        else:
            out[i] = _path_b(seeds[i], reps)


@cuda.jit
def two_paths_uniform(seeds, out, reps):
    """Even warps take path A, odd warps path B: the same work per thread, no warp divided."""
    i = cuda.grid(1)
    if i < out.size:
        if (cuda.threadIdx.x // 32) % 2 == 0:
            out[i] = _path_a(seeds[i], reps)
        else:
            out[i] = _path_b(seeds[i], reps)


BY_NAME = {"two_paths_divergent": two_paths_divergent, "two_paths_uniform": two_paths_uniform}


def takes_path_a(name: str, threads: int) -> np.ndarray:
    """Which threads (of a launch in blocks of BLOCK) take path A in kernel ``name``."""
    lane_in_block = np.arange(threads) % BLOCK
    if name == "two_paths_divergent":
        return lane_in_block % 2 == 0
    if name == "two_paths_uniform":
        return (lane_in_block // WARP_SIZE) % 2 == 0
    raise ValueError(f"unknown kernel {name!r}: choose from {', '.join(KERNELS)}")


def expected(name: str, seeds: np.ndarray, reps: int) -> np.ndarray:
    """What each thread writes, in float64 (the fixed point of each path is 1; the chains approach it)."""
    seeds = np.asarray(seeds, np.float64)
    starts = np.stack([seeds, seeds * 0.5, seeds * 0.25, seeds * 0.125])
    a = takes_path_a(name, seeds.size)
    mul = np.where(a, A_MUL, B_MUL)
    # x_r = 1 + (x_0 - 1) m^r for x <- m x + (1 - m)
    return (1 + (starts - 1) * mul**reps).sum(axis=0)


def launch(name: str, seeds, out, reps: int) -> None:
    """One launch of kernel ``name`` over len(out) threads (a multiple of BLOCK)."""
    if name not in BY_NAME:
        raise ValueError(f"unknown kernel {name!r}: choose from {', '.join(KERNELS)}")
    require_array(out, "out", np.float32, 1)
    require_array(seeds, "seeds", np.float32, 1)
    if out.size == 0 or out.size % BLOCK or seeds.size < out.size:
        raise InputError(f"out must hold a positive multiple of {BLOCK} floats ({out.size} given) and seeds "
                         f"at least as many ({seeds.size} given)")
    BY_NAME[name][out.size // BLOCK, BLOCK](seeds, out, np.int32(reps))


def flops(threads: int, reps: int) -> int:
    """FLOP of one launch: every thread runs CHAINS chains of reps FMAs (2 FLOP each)."""
    return 2 * CHAINS * reps * threads
