"""Lesson 6's progression: every GEMM kernel in teaching order, one step each, behind one checked
host wrapper ``matmul(a, b, step)``.

Each step is motivated by what the previous step's counters or SASS showed (the lesson's checklist
table); most change one thing, steps 4, 5, 7, 9 and 12 several (the lesson says which). Steps 7-12 are
written by ``gemm_codegen`` from a ``Tile`` (step 12: the micro-tile's width, which no longer fits the
register cap).

Warp tiling is not a step. The probe (data/nvidia-h200/probes/gemm_probe.csv) timed it on step 11's
8x8 tile (``WARP_TILE``) with the timer of that day and saw no gain; the lesson re-measures it on the
search's 16-deep 8x16 tile (``WARP_TILE_8X16``: lanes 4 x 8, in pairs along M, so that every 16-byte
shared load is served in 2 wavefronts instead of 4) as a candidate of its tile search.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from numba import cuda

from ..checks import require_choice
from . import gemm as naive
from . import gemm_codegen as codegen
from . import gemm_register as register
from . import gemm_tiled as tiled
from .arrays import is_device_array, returned, to_device
from .gemm import check_gemm_operands

Tile = codegen.Tile

# The generated steps: each tile is the previous one with one switch changed.
VECTOR_TILE = Tile(unroll=False, lanes_m=0, pad=0, double_buffer=False, max_registers=None)
UNROLLED_TILE = Tile(lanes_m=0, pad=0, double_buffer=False, max_registers=None)
CONFLICT_FREE_TILE = Tile(double_buffer=False, max_registers=None)
DOUBLE_BUFFER_TILE = Tile(max_registers=None)
REGISTER_CAP_TILE = Tile()
# 128x256 block, 8x16 outputs per thread (as CUTLASS's SIMT SGEMM): 235 registers on the H200, so
# no cap and one block of 8 warps per SM; 128 FMAs per 6 LDS.128 per k-step instead of 64 per 4.
BIG_TILE = Tile(bn=256, tn=16, max_registers=None)
WARP_TILE = Tile(lanes_m=4)  # warp tiling of the 8x8 tile: timed by the probe (probes/gemm_probe.csv)
# The search's 128x256x16 tile (8x16 per thread, pad 0: two buffers in exactly 48 KiB) ...
SEARCH_TILE_8X16 = Tile(bn=256, tn=16, bk=16, max_registers=None, pad=0)
# ... and the same tile warp-tiled: each warp 32 x 128 outputs as 4 x 8 lanes, numbered in pairs along M
# (lanes 2j, 2j+1 share B's columns; 4j+i, 4j+i+2 A's rows): 12 shared wavefronts per warp per k-step
# where the 2 x 16 lanes of step 12 need 20 (lessons.gemm.shared_wavefronts_per_k_step).
WARP_TILE_8X16 = Tile(bn=256, tn=16, bk=16, max_registers=None, pad=0, lanes_m=4, interleave=2)


@dataclass(frozen=True)
class Step:
    name: str
    title: str
    change: str  # what this step changes, in a few words
    launch: Callable  # (a, b, c) on device arrays, C = A @ B
    tile: Tile | None = None  # generated steps: the tile the generator writes
    kernel: object = None  # hand-written steps: the dispatcher (its registers, SASS...)
    # CTA tile (bm, bn) for the notes' intensity B_M B_N / 2(B_M + B_N); None: no shared tile
    cta: tuple[int, int] | None = None

    def dispatchers(self, vector: bool = True):
        """The compiled kernel(s) this step runs (generated steps: the 16-byte or 4-byte twin)."""
        if self.tile is not None:
            return codegen.build(self.tile if vector else self.tile.scalar())
        return self.kernel


def _generated(name, title, change, tile):
    return Step(name, title, change, lambda a, b, c, t=tile: codegen.launch(t, a, b, c), tile=tile,
                cta=(tile.bm, tile.bn))


def _register(name, title, change, cta):
    kernel = register.KERNELS[name][0]
    return Step(name, title, change, lambda a, b, c: register.launch(name, a, b, c), kernel=kernel,
                cta=cta)


STEPS: list[Step] = [
    Step("naive_uncoalesced", "naive, lanes along rows", "one thread per output; threadIdx.x -> row",
         naive.gemm_naive_uncoalesced_launch, kernel=naive.gemm_naive_uncoalesced),
    Step("naive", "naive, coalesced", "threadIdx.x -> column: a warp reads 32 neighbours of B",
         naive.gemm_naive_launch, kernel=naive.gemm_naive),
    Step("shared_tiled", "shared-memory tiles 16x16", "each global element reused 16x from shared memory",
         tiled.gemm_tiled_launch, kernel=tiled.gemm_tiled_kernel, cta=(16, 16)),
    _register("register_1d", "1-D register tile", "64x64 block tile, 8 outputs per thread", (64, 64)),
    _register("register_2d", "2-D register tile", "128x128 block tile, 8x8 outputs per thread", (128, 128)),
    _register("register_2d_uint64", "unsigned indices", "same kernel, uint64 indices: no wraparound code",
              (128, 128)),
    _generated("vector_loads", "16-byte loads, A tile transposed",
               "load4 / load4_shared: LDG.E.128, LDS.128", VECTOR_TILE),
    _generated("unrolled", "k-loop unrolled (generated)", "the generator writes the 8 k-steps out",
               UNROLLED_TILE),
    _generated("conflict_free", "bank-conflict-free layout",
               "interleaved 4-wide pieces; padded A tile", CONFLICT_FREE_TILE),
    _generated("double_buffer", "double buffering", "next tile's loads fly during the FMAs",
               DOUBLE_BUFFER_TILE),
    _generated("register_cap", "register cap 128", "max_registers=128: two blocks per SM",
               REGISTER_CAP_TILE),
    _generated("big_tile", "bigger micro-tile 8x16", "128x256 block, 8x16 per thread, no cap: 1 block "
               "(8 warps) per SM", BIG_TILE),
]
BY_NAME = {step.name: step for step in STEPS}


def step(name: str) -> Step:
    """A step by name; ``InputError`` naming the steps for any other name."""
    return BY_NAME[require_choice(name, "GEMM step", BY_NAME)]


def matmul(a, b, name: str = "register_cap"):
    """C = A @ B with one step's kernel: host arrays in, host array out (device in, device out).
    M or N = 0: an empty C, no launch; K = 0: a C of zeros."""
    chosen = step(name)
    m, n = check_gemm_operands(a, b)
    d_c = cuda.device_array((m, n), np.float32)
    if m and n:  # an empty C needs no launch (K = 0 is a launch: C is all zeros)
        chosen.launch(to_device(a, "a"), to_device(b, "b"), d_c)
    return returned(d_c, not (is_device_array(a) and is_device_array(b)))
