"""Lesson 6: FP32 GEMM, from naive to near cuBLAS, in Numba (the notes' "GEMM 的分块与数据复用").

The experiment, one section per matrix shape: every step of ``kernels.gemm_steps`` (one change
each) and a small visible search over tile shapes (the warp-tiled 8x16 tile among them), timed
against cuBLAS SGEMM (CuPy ``a @ b``, TF32 off) in the same run. Every result is checked against a
float64 reference: the error must stay within what FP32 accumulation over K allows,
|C - C64| <= K u (|A||B|), u = 2^-24. The run keeps each kernel's registers, shared and local memory
and SASS (``run.kernel``), and ``ncu_cases()`` are the launches ``record --ncu`` profiles at 2048^3.

The readers below are pure functions of a ``LessonResult`` (its table, its evidence, its meta) or of
a tile: the counter reasoning the lesson quotes (the FP32 rate from FFMA counts, instructions per
step, shared wavefronts per warp per k-step, sectors per request), waves and occupancy per tile, the
search as a shape x tile table. Sizes are keyed by M*N*K in the table's ``size`` column.
"""

from __future__ import annotations

import difflib
import math
import re
import time
from dataclasses import dataclass, replace

import numpy as np
import pandas as pd
from numba import cuda

from .. import SIMULATED, ncu
from ..bench import input_sets_needed
from ..device import device_info
from ..kernels import gemm as naive_kernels
from ..kernels import gemm_codegen as codegen
from ..kernels import gemm_register as register
from ..kernels import gemm_steps as steps
from ..kernels import gemm_tiled as tiled
from ..kernels.util import poison
from ..occupancy import limits_of, occupancy
from ..plots import gemm as gemm_plots
from ..plots import with_alt
from ..results import Evidence, LessonResult, ProbeData, RecordingError
from ..scoreboard import Comparison
from ..sim.trace import trace
from .runner import Run, Section, check_row, cupy_or_none

NAME = "gemm"
TITLE = "GEMM: tiling and data reuse, from naive to near cuBLAS"
NOTEBOOK = "06_gemm_tiling.ipynb"
SUMMARY = "FP32 GEMM one change at a time: coalescing, shared and register tiles, 16-byte loads, unsigned " \
          "indices, unrolling, pipelining, 8x16 micro-tiles; a visible tile search; cuBLAS in the same run"

UNIT_ROUNDOFF = 2.0**-24  # float32
CUBLAS = "cublas sgemm"

SHAPES: dict[str, tuple[int, int, int]] = {  # name: (M, N, K)
    "128^3": (128, 128, 128),
    "1024^3": (1024, 1024, 1024),
    "2048^3": (2048, 2048, 2048),
    "4096^3": (4096, 4096, 4096),
    "8192^3": (8192, 8192, 8192),
    "4095x4097x1023": (4095, 4097, 1023),
    "16384x64x4096": (16384, 64, 4096),
}
AWKWARD = "4095x4097x1023"
# The slow early steps are left out of the big shapes, so that a recording stays near four minutes.
SLOW_STEPS = ("naive_uncoalesced", "naive", "shared_tiled")
MID_STEPS = ("register_1d", "register_2d", "register_2d_uint64")
SLOW_SHAPES = ("128^3", "1024^3", "2048^3")
MID_SHAPES = (*SLOW_SHAPES, AWKWARD, "4096^3")


def lanes_label(tile: codegen.Tile) -> str:
    """How a tile lays out a warp's lanes: '2x16', '4x8 paired', or 'contiguous' (no warp grid)."""
    if not tile.lanes_m:
        return "contiguous"
    return f"{tile.lanes_m}x{32 // tile.lanes_m}" + (" paired" if tile.interleave == 2 else "")


def tile_name(tile: codegen.Tile) -> str:
    name = f"tile {tile.bm}x{tile.bn}x{tile.bk} {tile.tm}x{tile.tn}"
    if tile.pad != 4:  # 4: the conflict-free layout's padding (step 9 on)
        name += f" pad {tile.pad}"
    if tile.interleave != 1:  # (the recorded names of unpaired tiles do not say their lanes)
        name += f" warp {lanes_label(tile)}"
    if not tile.double_buffer:
        name += " single-buffered"
    if tile.group_m:
        name += f" grouped {tile.group_m}"
    return name


# Autotuning in plain sight: tile shapes tried beside steps 11 and 12 (every one is the same
# generated kernel with other constants). The table shows each candidate's GFLOP/s.
TUNE_TILES = [
    # step 12's tile 16 deep: half the barriers per K; pad 0 so that two buffers fit the 48 KiB of
    # static shared memory (pad 4 would need 49,664 bytes); 255 registers on the H200, no spills
    steps.SEARCH_TILE_8X16,
    # the same tile warp-tiled (issue 18): 4 x 8 lanes in pairs along M, 12 shared wavefronts per
    # warp per k-step instead of 20 (shared_wavefronts_per_k_step)
    steps.WARP_TILE_8X16,
    codegen.Tile(bk=16),
    codegen.Tile(group_m=8),
    codegen.Tile(bn=64, tn=4),
    codegen.Tile(bm=64, bn=64, tm=4, tn=4),
    codegen.Tile(bm=32, bn=32, tm=4, tn=4, lanes_m=4),  # 64 threads: for small matrices
]
TUNE_SHAPES = ("128^3", "1024^3", "2048^3", "4096^3", "8192^3", "16384x64x4096")
TUNE = {tile_name(t): t for t in TUNE_TILES}
SEARCH_VARIANT = tile_name(steps.SEARCH_TILE_8X16)  # "tile 128x256x16 8x16 pad 0"
WARP_VARIANT = tile_name(steps.WARP_TILE_8X16)  # "tile 128x256x16 8x16 pad 0 warp 4x8 paired"
SHORT_NAMES = {SEARCH_VARIANT: "8x16, 16 deep", WARP_VARIANT: "8x16, 16 deep, warp-tiled", CUBLAS: "cuBLAS"}


def size_of(shape: str) -> int:
    m, n, k = SHAPES[shape]
    return m * n * k


SHAPE_OF_SIZE = {size_of(name): name for name in SHAPES}


def _comparison(shape: str) -> Comparison:
    """Our best kernel at one shape (any step or tile candidate) against cuBLAS, same run."""
    return Comparison(title=f"FP32 GEMM {shape} (best Numba kernel)", lesson=NAME, metric="gflops",
                      reference=CUBLAS, size=size_of(shape))


COMPARISONS = [_comparison(s) for s in ("4096^3", "2048^3", AWKWARD, "8192^3", "16384x64x4096", "1024^3",
                                         "128^3")]

# At the awkward shape a 16-byte kernel runs its 4-byte twin (rows of A and B are not 16-byte
# aligned): each twin is one more big compile, so only steps 11 and 12 run there (the search's
# candidates, whose 16-deep twins would take ~40 s of NVVM each, do not).
FINAL_STEPS = ("register_cap", "big_tile")
FAST_SHAPES = ("128^3", "1024^3", "2048^3", "4096^3", "16384x64x4096")
# The order the shape sections run in: the ones the targets name first, the longest last.
MEASURE_ORDER = ("4096^3", "2048^3", AWKWARD, "128^3", "16384x64x4096", "1024^3", "8192^3")


def shapes_for(name: str) -> tuple[str, ...]:
    """The shapes a step or tile candidate is timed at."""
    if name in SLOW_STEPS:
        return SLOW_SHAPES
    if name in MID_STEPS:
        return MID_SHAPES
    if name in TUNE:  # small tiles are for small or skinny matrices: not at 8192^3
        return tuple(s for s in TUNE_SHAPES if TUNE[name].bm >= 128 or s != "8192^3")
    if name in FINAL_STEPS:
        return tuple(SHAPES)
    return FAST_SHAPES


def variants_at(shape: str) -> list[str]:
    """Our kernels timed at a shape, in teaching order (the steps, then the search's candidates)."""
    return [name for name in (*steps.BY_NAME, *TUNE) if shape in shapes_for(name)]


def tile_of(variant: str) -> codegen.Tile:
    """The generated tile behind a variant name (a generated step or a tile candidate)."""
    if variant in TUNE:
        return TUNE[variant]
    tile = steps.step(variant).tile
    if tile is None:
        raise KeyError(f"{variant!r} is a hand-written step, not a generated tile")
    return tile


def _generated_tile(variant: str) -> codegen.Tile | None:
    return TUNE[variant] if variant in TUNE else steps.step(variant).tile


def compiled_kernels() -> list[str]:
    """The kernels a recording compiles (the evidence's names: a 4-byte twin is '<name> (4-byte
    loads)'): every step and candidate once, and a 4-byte twin where a step runs at the awkward
    shape. A 16-deep 8x16 tile takes ~40 s of NVVM, an 8-deep 8x16 ~15 s, the others seconds."""
    names = []
    for name in (*steps.BY_NAME, *TUNE):
        names.append(name)
        if _generated_tile(name) is not None and AWKWARD in shapes_for(name):
            names.append(f"{name} (4-byte loads)")
    return names


def source_excerpt(source: str, fmas: int = 8) -> str:
    """A generated kernel's source with its unrolled compute shortened for reading: the first k-step
    keeps its shared loads and its first ``fmas`` FMAs; every other line of the unrolled k-steps is
    replaced by one comment saying how many lines it stands for. Everything else is verbatim."""
    out: list[str] = []
    run: list[str] = []  # consecutive compute lines (shared loads of fa/fb, FMAs)
    first_step_done = False

    def flush():
        nonlocal first_step_done
        if not run:
            return
        indent = run[0][: len(run[0]) - len(run[0].lstrip())]
        kept = 0
        if not first_step_done:
            starts = [i for i, line in enumerate(run) if line.lstrip().startswith("fa0,")]
            end = starts[1] if len(starts) > 1 else len(run)
            step_lines = run[:end]
            loads = [line for line in step_lines if "cuda.fma" not in line]
            ffma = [line for line in step_lines if "cuda.fma" in line]
            out.extend(loads + ffma[:fmas])
            if len(ffma) > fmas:
                out.append(f"{indent}# ... {len(ffma) - fmas} more FMAs of this k-step")
            kept, first_step_done = end, True
        if len(run) > kept:
            out.append(f"{indent}# ... {len(run) - kept} more lines: the next k-steps, written out the "
                       "same way (each k-step's shared offsets one row further on)")
        run.clear()

    for line in source.splitlines():
        body = line.lstrip()
        if "cuda.fma(" in body or (body.startswith(("fa", "fb")) and "load4_shared" in body):
            run.append(line)
        else:
            flush()
            out.append(line)
    flush()
    return "\n".join(out) + "\n"


# ------------------------------------------------------------------ counting, for the narrative


def naive_intensity(k: int) -> float:
    """One thread per output, no reuse: K FMAs (2K FLOP) for 2K floats read and one written."""
    return 2 * k / (8 * k + 4)


def cta_intensity(bm: int, bn: int) -> float:
    """The notes' CTA tile intensity: 2 B_M B_N B_K / 4 (B_M B_K + B_K B_N) = B_M B_N / 2 (B_M + B_N)."""
    return bm * bn / (2 * (bm + bn))


def ideal_intensity(m: int, n: int, k: int) -> float:
    """Every input read once and C written once: 2MNK / 4(MK + KN + MN)."""
    return 2 * m * n * k / (4 * (m * k + k * n + m * n))


def step_intensity(name: str, k: int = 4096) -> float:
    if name in TUNE:
        return cta_intensity(TUNE[name].bm, TUNE[name].bn)
    step = steps.step(name)
    return naive_intensity(k) if step.cta is None else cta_intensity(*step.cta)


def fp32_error_bound(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Elementwise bound on a float32 dot product's error over K terms: K u (|A| |B|)."""
    return a.shape[1] * UNIT_ROUNDOFF * (np.abs(a.astype(np.float64)) @ np.abs(b.astype(np.float64)))


def error_report(c: np.ndarray, a: np.ndarray, b: np.ndarray) -> dict:
    """Relative (Frobenius) error against float64, and the worst element's share of the bound."""
    reference = a.astype(np.float64) @ b.astype(np.float64)
    diff = np.abs(c.astype(np.float64) - reference)
    bound = fp32_error_bound(a, b)
    norm = np.linalg.norm(reference)
    return {"relative_error": float(np.linalg.norm(diff) / norm) if norm else float(np.linalg.norm(diff)),
            "worst_share_of_bound": float(np.max(diff / np.where(bound > 0, bound, np.inf), initial=0.0)),
            "finite": bool(np.isfinite(c).all())}


def naive_sectors_per_request(lanes_along_rows: bool) -> dict:
    """32-byte sectors per global load request of the naive kernel, per operand, for a warp of 32
    lanes on row-major float32 matrices (K and N large). Lanes along the rows of C: each lane reads
    its own row of A (32 sectors) and all read one element of B (1 sector). Along the columns: one
    element of A (1) and 32 neighbouring floats of B (128 bytes: 4). One load of each per FMA, so a
    request costs their mean: 16.5 and 2.5 (ncu's sectors / requests)."""
    a, b = (32, 1) if lanes_along_rows else (1, 32 * 4 // 32)
    return {"a": a, "b": b, "mean": (a + b) / 2}


# ------------------------------------------------------ shared wavefronts: lanes, pairs, banks

LDS128_LANES_PER_PHASE = 8  # 8 lanes x 16 bytes: 128 bytes, one wavefront's worth
SHARED_BANKS = 32


def lds128_wavefronts(addresses) -> tuple[int, int]:
    """(wavefronts, ideal) of one warp's 16-byte shared load, from its 32 lanes' byte addresses.

    The pipe returns 128 bytes a wavefront, so the 512 bytes of a 16-byte load take 4 wavefronts:
    quarter-warps (lanes 0-7, 8-15, ...) one after another. When every lane reads what its
    neighbour reads (lanes l and l^1 equal for all l, or lanes l and l^2), half the lanes carry all
    the data and half-warps take 2 (NVIDIA's rule for Volta on; it reproduces the H200's counts:
    20 per warp per k-step for step 12, 12 for step 11 and cuBLAS, 20 with 8 conflicts for step 8).
    Within a phase the busiest bank decides: as many wavefronts as it has distinct words. The
    simulator's traffic counter applies the same rule (``sim.memory_model``).
    """
    address = np.asarray(addresses, dtype=np.int64)
    if address.shape != (32,):
        raise ValueError(f"a warp's request has 32 lane addresses, got {address.shape}")
    lane = np.arange(32)
    paired = any(bool(np.all(address == address[lane ^ partner])) for partner in (1, 2))
    per_phase = 2 * LDS128_LANES_PER_PHASE if paired else LDS128_LANES_PER_PHASE
    wavefronts = phases = 0
    for start in range(0, 32, per_phase):
        words = np.unique((address[start:start + per_phase, None] // 4 + np.arange(4)).ravel())
        wavefronts += int(np.bincount(words % SHARED_BANKS).max())
        phases += 1
    return wavefronts, phases


def lane_coordinates(tile: codegen.Tile, tid: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(first row, first column) of each thread's 4-wide pieces in the block tile, for its first
    group along M and along N (what the generator writes as r0 and c0)."""
    if not tile.lanes_m:
        across = tile.bn // tile.tn
        return tid // across * tile.tm, tid % across * tile.tn
    lanes_n = 32 // tile.lanes_m
    warps_n = (tile.bn // tile.tn) // lanes_n
    warp, lane = tid // 32, tid % 32
    pair = tile.interleave
    lm = lane // (pair * lanes_n) * pair + lane % pair
    ln = lane // pair % lanes_n
    return (warp // warps_n * tile.lanes_m * tile.tm + lm * 4,
            warp % warps_n * lanes_n * tile.tn + ln * 4)


def shared_load_addresses(tile: codegen.Tile, warp: int = 0, kk: int = 0) -> dict:
    """Byte addresses (32 lanes) of each 16-byte shared load of one k-step of a warp, keyed
    ('a', g) and ('b', h): A's tile is k-major with rows of bm + pad floats, B's of bn floats."""
    tid = warp * 32 + np.arange(32)
    rows, columns = lane_coordinates(tile, tid)
    lda, ldb = tile.bm + tile.pad, tile.bn
    step_m = tile.lanes_m * 4 if tile.lanes_m else 4
    step_n = (32 // tile.lanes_m) * 4 if tile.lanes_m else 4
    loads = {("a", g): 4 * (kk * lda + rows + g * step_m) for g in range(tile.tm // 4)}
    loads.update({("b", h): 4 * (kk * ldb + columns + h * step_n) for h in range(tile.tn // 4)})
    return loads


def shared_wavefronts_per_k_step(tile: codegen.Tile) -> dict:
    """Shared-memory wavefronts one warp needs per k-step (its TM/4 + TN/4 16-byte loads), averaged
    over the block's warps: total, of A and of B, the ideal (one per phase) and the bank conflicts.
    The layout is noted in MODELLED_LAYOUTS (a record only: exercise 5 now refuses a call of this model)."""
    MODELLED_LAYOUTS.add(warp_layout(tile))
    warps = tile.threads // 32
    totals = {"a": 0, "b": 0, "ideal": 0}
    for warp in range(warps):
        for (operand, _), addresses in shared_load_addresses(tile, warp).items():
            wavefronts, ideal = lds128_wavefronts(addresses)
            totals[operand] += wavefronts
            totals["ideal"] += ideal
    a, b, ideal = (totals[key] / warps for key in ("a", "b", "ideal"))
    return {"wavefronts": a + b, "a": a, "b": b, "loads": (tile.tm + tile.tn) // 4, "ideal": ideal,
            "bank_conflicts": a + b - ideal}


LANE_LAYOUTS = {  # lanes_m, interleave: the ways a warp of 8x16 micro-tiles can be laid out
    "2x16 (step 12)": (2, 1), "2x16 paired": (2, 2), "4x8": (4, 1), "4x8 paired": (4, 2),
    "8x4": (8, 1), "8x4 paired": (8, 2),
}


def lane_layouts(tile: codegen.Tile = steps.SEARCH_TILE_8X16) -> pd.DataFrame:
    """Each lane layout of a tile's warps: the warp's outputs and its shared wavefronts per k-step.
    The count depends on the lane order, not the warp's shape: pairs of lanes that read the same
    16 bytes halve a load's wavefronts, and only a paired layout pairs both operands."""
    rows = []
    for label, (lanes_m, pair) in LANE_LAYOUTS.items():
        laid = replace(tile, lanes_m=lanes_m, interleave=pair)
        laid.validate()
        counts = shared_wavefronts_per_k_step(laid)
        rows.append({"layout": label, "warp tile": f"{lanes_m * tile.tm}x{32 // lanes_m * tile.tn}",
                     "wavefronts per k-step": counts["wavefronts"], "of A": counts["a"],
                     "of B": counts["b"], "LDS.128 per k-step": counts["loads"]})
    return pd.DataFrame(rows).set_index("layout")


TRACED_LAYOUTS: set = set()  # the warp layouts traced_shared_wavefronts has counted in this session
MODELLED_LAYOUTS: set = set()  # the warp layouts shared_wavefronts_per_k_step has counted in this session


def warp_layout(tile: codegen.Tile) -> tuple:
    """What sets a warp's shared loads: its micro-tile, its lanes' layout and the padding."""
    return tile.tm, tile.tn, tile.lanes_m, tile.interleave, tile.pad


def traced_shared_wavefronts(tile: codegen.Tile, k_tiles: int = 1) -> dict:
    """One block of a tile run by the simulator's tracer over ``k_tiles`` k-tiles: per warp and
    k-step, the shared-load wavefronts of the lane addresses it recorded, counted by the pair rule
    (``lds128_wavefronts``) and by the tracer's own model (quarter-warps, no pairs). Slow for the
    big tiles (a 256-thread block runs as Python threads): tens of seconds."""
    return _count_shared_wavefronts(tile, k_tiles)


def _count_shared_wavefronts(tile: codegen.Tile, k_tiles: int = 1, noted: bool = True) -> dict:
    """``traced_shared_wavefronts``; ``noted=False`` for an exercise's check: the layout is not noted."""
    if noted:
        TRACED_LAYOUTS.add(warp_layout(tile))
    m, n, k = tile.bm, tile.bn, tile.bk * k_tiles
    a, b = np.ones((m, k), np.float32), np.ones((k, n), np.float32)
    c = np.zeros((m, n), np.float32)
    counts = trace(codegen.build(tile), (1, 1), tile.threads, a.reshape(-1), b.reshape(-1),
                   c.reshape(-1), np.uint64(m), np.uint64(n), np.uint64(k))
    sites = counts.sites[(counts.sites["space"] == "shared") & (counts.sites["op"] == "ld")]
    loads = counts.accesses.merge(sites[["site", "root", "store"]], on=["site", "root", "store"])
    pairs = 0
    for _, request in loads.groupby(["site", "root", "warp", "k"]):
        addresses = request.sort_values("lane")["address"].to_numpy()
        pairs += lds128_wavefronts(addresses)[0]
    per = (tile.threads // 32) * k
    shared = counts.by_array
    tracer = shared[(shared["space"] == "shared") & (shared["op"] == "ld")]["wavefronts"].sum()
    return {"pair rule": pairs / per, "tracer": float(tracer) / per}


# --------------------------------------------- pictures of the model: owners, banks, pipelining


def output_owners(tile: codegen.Tile) -> dict:
    """Which thread computes each output of a block tile, as the generator writes it (``r{g}``,
    ``c{h}``): arrays of shape (bm, bn) of the thread, its warp and its lane."""
    thread = np.full((tile.bm, tile.bn), -1, dtype=np.int64)
    tid = np.arange(tile.threads)
    rows, columns = lane_coordinates(tile, tid)
    step_m = tile.lanes_m * 4 if tile.lanes_m else 4
    step_n = (32 // tile.lanes_m) * 4 if tile.lanes_m else 4
    for g in range(tile.tm // 4):
        for h in range(tile.tn // 4):
            for i in range(4):
                for j in range(4):
                    thread[rows + g * step_m + i, columns + h * step_n + j] = tid
    return {"thread": thread, "warp": thread // 32, "lane": thread % 32}


def lds128_bank_map(addresses) -> pd.DataFrame:
    """One warp's 16-byte shared load, word by word: the phase that serves each lane (quarter-warps,
    or half-warps when lanes read in pairs: ``lds128_wavefronts``), the 4-byte words it reads, their
    bank, and how many distinct words its phase asks of that bank (each one more is a conflict)."""
    address = np.asarray(addresses, dtype=np.int64)
    lane = np.arange(32)
    paired = any(bool(np.all(address == address[lane ^ partner])) for partner in (1, 2))
    per_phase = 2 * LDS128_LANES_PER_PHASE if paired else LDS128_LANES_PER_PHASE
    rows = [{"phase": lane_id // per_phase, "lane": lane_id, "word": int(address[lane_id] // 4 + j),
             "bank": int((address[lane_id] // 4 + j) % SHARED_BANKS)}
            for lane_id in range(32) for j in range(4)]
    words = pd.DataFrame(rows)
    distinct = words.groupby(["phase", "bank"])["word"].nunique().rename("words_in_bank")
    return words.merge(distinct.reset_index(), on=["phase", "bank"])


def pipeline_timeline(tiles: int = 4, load: float = 0.8, store: float = 0.15, compute: float = 1.0,
                      double_buffer: bool = False) -> pd.DataFrame:
    """A schematic of one block's k-loop in time (unit: one k-tile's FMAs): the global loads of each
    tile, its stores to shared memory and its FMAs. One buffer: load, store, barrier, FMAs, barrier,
    in turn. Two: tile t+1's loads are issued before tile t's FMAs and stored after them."""
    rows = []
    if not double_buffer:
        t = 0.0
        for tile in range(tiles):
            rows += [("global loads", tile, t, t + load),
                     ("stores to shared", tile, t + load, t + load + store),
                     ("FMAs", tile, t + load + store, t + load + store + compute)]
            t += load + store + compute
    else:
        rows += [("global loads", 0, 0.0, load), ("stores to shared", 0, load, load + store)]
        t = load + store
        for tile in range(tiles):
            rows.append(("FMAs", tile, t, t + compute))
            end = t + compute
            if tile + 1 < tiles:
                rows.append(("global loads", tile + 1, t, t + load))
                end = max(end, t + load)
                rows.append(("stores to shared", tile + 1, end, end + store))
                end += store
            t = end
    return pd.DataFrame(rows, columns=["work", "tile", "start", "end"])


def source_diff(before: codegen.Tile, after: codegen.Tile, name: str = "kernel", fmas: int = 4,
                longest: int | None = None) -> str:
    """What the generator writes differently for two tiles: a diff of their sources (each shortened
    by ``source_excerpt``), runs of changed lines that differ only in their numbers folded into the
    first and a count ('... 3 more like it'); with ``longest``, a run of more added (or removed)
    lines than that keeps its first ``longest - 2`` and its last, and counts the rest."""
    old, new = (source_excerpt(codegen.kernel_source(t, name), fmas).splitlines() for t in (before, after))
    lines = [line for line in difflib.unified_diff(old, new, lineterm="", n=0)
             if not line.startswith(("---", "+++"))]
    out: list[str] = []
    run_shape, run_count = None, 0

    def close():
        if run_count:
            body = out[-1][1:]
            out.append(f"{out[-1][0]}{body[: len(body) - len(body.lstrip())]}# ... {run_count} more like it")

    for line in lines:
        shape = (line[0], re.sub(r"\d+", "#", line[1:]))
        if line.startswith("@@"):
            close()
            run_shape, run_count = None, 0
            out.append("@@")
            continue
        if shape == run_shape:
            run_count += 1
            continue
        close()
        run_shape, run_count = shape, 0
        out.append(line)
    close()
    out = out[1:] if out and out[0] == "@@" else out
    if longest:  # a hunk that only adds (or only removes) lines, cut to its first lines and its last
        hunks, cut = [[]], []
        for line in out:
            if line == "@@":
                hunks.append([])
            else:
                hunks[-1].append(line)
        for number, hunk in enumerate(hunks):
            if len(hunk) > longest and len({line[0] for line in hunk}) == 1:
                body = hunk[0][1:]
                indent = body[: len(body) - len(body.lstrip())]
                more = f"{hunk[0][0]}{indent}# ... {len(hunk) - longest + 1} more lines"
                hunk = [*hunk[: longest - 2], more, hunk[-1]]
            cut += (["@@"] if number else []) + hunk
        out = cut
    return "\n".join(out) + "\n"


TILE_SWITCHES = ("vector", "unroll", "lanes_m", "interleave", "pad", "double_buffer", "max_registers", "bm",
                 "bn", "bk", "tm", "tn")


def tile_switches(names=None) -> pd.DataFrame:
    """The generated steps (and the search's 8x16 tiles) as the ``Tile`` switches they set, one row
    each, and which switches changed from the row before."""
    names = names or [s.name for s in steps.STEPS if s.tile is not None] + [SEARCH_VARIANT, WARP_VARIANT]
    numbers = {s.name: i + 1 for i, s in enumerate(steps.STEPS)}
    rows, previous = [], None
    for name in names:
        tile = tile_of(name)
        values = {field: getattr(tile, field) for field in TILE_SWITCHES}
        values["max_registers"] = values["max_registers"] or "none"
        changed = [f for f in TILE_SWITCHES if previous is not None and values[f] != previous[f]]
        label = f"{numbers[name]}. {name}" if name in numbers else SHORT_NAMES.get(name, name)
        rows.append({"kernel": label, **values, "changed": ", ".join(changed) if previous else "(first)"})
        previous = values
    return pd.DataFrame(rows).set_index("kernel")


# ----------------------------------------------------------------------------- experiment


@dataclass
class _Operands:
    """One shape's inputs: input sets on the device, set 0's rows sampled for the float64 check."""

    shape: str
    a: list
    b: list
    c: list
    rows: np.ndarray  # the sampled rows of C
    reference: np.ndarray  # float64 C at those rows
    bound: np.ndarray  # K u |A||B| at those rows

    @property
    def sets(self) -> int:
        return len(self.a)


def _operands(run: Run, shape: str, sample_rows: int = 16) -> _Operands:
    """Random A and B (``run.rng``), enough sets to rotate past the L2, and set 0's reference rows."""
    m, n, k = SHAPES[shape]
    sets = input_sets_needed(4 * (m * k + k * n + m * n), int(device_info().l2_mib * 2**20), most=16)
    a_sets, b_sets = [], []
    for index in range(sets):
        a = run.rng.standard_normal((m, k), dtype=np.float32)
        b = run.rng.standard_normal((k, n), dtype=np.float32)
        a_sets.append(cuda.to_device(a))
        b_sets.append(cuda.to_device(b))
        if index == 0:
            rows = np.sort(run.rng.choice(m, min(m, sample_rows), replace=False))
            reference, bound = _reference_rows(a, b, rows)
    c_sets = [cuda.device_array((m, n), np.float32) for _ in range(sets)]
    return _Operands(shape, a_sets, b_sets, c_sets, rows, reference, bound)


def _reference_rows(a: np.ndarray, b: np.ndarray, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """float64 A @ B at the given rows, and the FP32 bound K u |A||B| there."""
    a64, b64 = a[rows].astype(np.float64), b.astype(np.float64)
    return a64 @ b64, a.shape[1] * UNIT_ROUNDOFF * (np.abs(a64) @ np.abs(b64))


def _rows_error(c_rows: np.ndarray, reference: np.ndarray, bound: np.ndarray) -> dict:
    diff = np.abs(c_rows.astype(np.float64) - reference)
    norm = np.linalg.norm(reference)
    return {"relative_error": float(np.linalg.norm(diff) / norm) if norm else float(np.linalg.norm(diff)),
            "worst_share_of_bound": float(np.max(diff / np.where(bound > 0, bound, np.inf), initial=0.0))}


def _checked(name: str, ops: _Operands) -> dict:
    """Every output of every set written (no NaN poison left), and set 0's sampled rows within the
    FP32 bound of float64 (cuBLAS also within 1e-5 relative: TF32 would land near 3e-4)."""
    unwritten = [i for i, c in enumerate(ops.c) if not np.isfinite(c.copy_to_host()).all()]
    if unwritten:
        raise AssertionError(f"{name} at {ops.shape} left outputs unwritten (NaN poison in sets {unwritten})")
    c_rows = np.stack([ops.c[0][int(r)].copy_to_host() for r in ops.rows])
    error = _rows_error(c_rows, ops.reference, ops.bound)
    if not error["worst_share_of_bound"] <= 1.0:
        raise AssertionError(f"{name} at {ops.shape}: error {error['worst_share_of_bound']:.2f}x the FP32 "
                             "bound K*u*|A||B|")
    if name == CUBLAS and not error["relative_error"] < 1e-5:
        raise AssertionError(f"cuBLAS SGEMM relative error {error['relative_error']:.1e}: TF32 on, or wrong")
    return {"variant": name, "shape": ops.shape, **error}


def _launcher(name: str):
    """(a, b, c) on device arrays -> the kernel's launch (a generated one returns the tile it ran)."""
    if name in TUNE:
        tile = TUNE[name]
        return lambda a, b, c: codegen.launch(tile, a, b, c)
    return steps.step(name).launch


def kernel_key(name: str, a, b, c) -> str:
    """The evidence's name for the kernel a variant runs on these operands: '<name> (4-byte loads)'
    for a generated kernel's 4-byte twin (rows that are not 16-byte aligned)."""
    tile = _generated_tile(name)
    if tile is None or not tile.vector:
        return name
    m, k = a.shape
    return name if codegen.vector_ok(a, b, c, k, b.shape[1]) else f"{name} (4-byte loads)"


MEMORY_OPS = r"\b(LDG|STG|LDS|STS|LDL|STL|BAR)\b"
SASS_PATTERNS = {  # which SASS lines a recording keeps as an excerpt (the rest: counts and summary)
    "register_2d": r"^(SEL|ISETP|BRA|LDS)", "register_2d_uint64": r"^(SEL|ISETP|BRA|LDS)",
    "vector_loads": MEMORY_OPS, "unrolled": MEMORY_OPS, "register_cap": MEMORY_OPS, "big_tile": MEMORY_OPS,
    SEARCH_VARIANT: MEMORY_OPS, WARP_VARIANT: MEMORY_OPS,
}


def _record_kernel(run: Run, name: str, key: str, a, b, c) -> None:
    """Registers, shared and local memory and SASS of the kernel a variant just ran (once)."""
    if key in run.kernels:
        return
    tile = _generated_tile(name)
    if tile is None:
        run.kernel(key, steps.step(name).kernel, (a, b, c), SASS_PATTERNS.get(name))
        return
    used = tile if key == name else tile.scalar()
    m, k = a.shape
    args = (a.reshape(a.size), b.reshape(b.size), c.reshape(c.size), np.uint64(m), np.uint64(b.shape[1]),
            np.uint64(k))
    run.kernel(key, codegen.build(used), args, SASS_PATTERNS.get(name))


def _time_cublas(run: Run, ops: _Operands, common: dict) -> None:
    cp = cupy_or_none()
    if cp is None:
        return
    a, b, c = ([cp.asarray(x) for x in xs] for xs in (ops.a, ops.b, ops.c))
    for x in ops.c:
        poison(x)
    run.time(CUBLAS, lambda s: cp.matmul(a[s], b[s], out=c[s]), provider="cublas", **common)
    cp.cuda.runtime.deviceSynchronize()
    run.facts.setdefault("errors", []).append(_checked(CUBLAS, ops))


def _measure_shape(run: Run, shape: str) -> None:
    """cuBLAS, then every step and candidate timed at this shape: outputs poisoned before, every
    output and sampled rows against float64 after. A failing kernel does not stop the others: the
    section raises at the end, naming every failure."""
    started = time.perf_counter()
    m, n, k = SHAPES[shape]
    ops = _operands(run, shape)
    common = dict(size=m * n * k, bytes_moved=4 * (m * k + k * n + m * n), flops=2 * m * n * k,
                  input_sets=ops.sets)
    failures = []
    try:
        _time_cublas(run, ops, common)
    except Exception as error:  # noqa: BLE001 - the kernels are still worth measuring
        failures.append(f"{CUBLAS}: {type(error).__name__}: {error}")
    for name in variants_at(shape):
        try:
            launch = _launcher(name)
            for x in ops.c:
                poison(x)
            run.time(name, lambda s, f=launch: f(ops.a[s], ops.b[s], ops.c[s]), **common)
            run.facts.setdefault("errors", []).append(_checked(name, ops))
            _record_kernel(run, name, kernel_key(name, ops.a[0], ops.b[0], ops.c[0]), ops.a[0], ops.b[0],
                           ops.c[0])
        except Exception as error:  # noqa: BLE001 - one kernel's failure must not hide the others
            failures.append(f"{name}: {type(error).__name__}: {error}")
    run.facts.setdefault("section_seconds", {})[shape] = round(time.perf_counter() - started, 1)
    if failures:
        raise AssertionError(f"{len(failures)} failure(s) at {shape}: " + "; ".join(failures))


def _shape_section(shape: str) -> Section:
    return Section(shape, lambda run: _measure_shape(run, shape))


SECTIONS = tuple(_shape_section(shape) for shape in MEASURE_ORDER)


# ------------------------------------------------------------------------- Nsight Compute

NCU_SHAPE = (2048, 2048, 2048)
# Every kernel the lesson quotes counters of, in teaching order, then cuBLAS (what CuPy's matmul
# launches: ncu names it by its CUTLASS kernel, e.g. cutlass_80_simt_sgemm_256x128_8x4_nn_align1).
NCU_STEPS = ("naive_uncoalesced", "naive", "shared_tiled", "register_1d", "unrolled", "register_cap",
             "big_tile")
NCU_CASES = (*NCU_STEPS, SEARCH_VARIANT, WARP_VARIANT, CUBLAS)
CUBLAS_KERNEL = "sgemm"  # a substring of cuBLAS's kernel name
SEED_NCU = 1
NCU_METRICS = (
    "gpu__time_duration.sum",
    "sm__throughput.avg.pct_of_peak_sustained_elapsed",
    "dram__throughput.avg.pct_of_peak_sustained_elapsed",
    "smsp__issue_active.avg.pct_of_peak_sustained_active",
    "sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active",
    "sm__warps_active.avg.pct_of_peak_sustained_active",
    "smsp__inst_executed.sum",
    "smsp__sass_thread_inst_executed_op_ffma_pred_on.sum",
    "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum",
    "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum",
    "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum",
    "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum",
    "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum",
    "l1tex__t_sectors_pipe_lsu_mem_local_op_ld.sum",
    "smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio",
    "smsp__average_warps_issue_stalled_mio_throttle_per_issue_active.ratio",
    "smsp__average_warps_issue_stalled_short_scoreboard_per_issue_active.ratio",
    "smsp__average_warps_issue_stalled_barrier_per_issue_active.ratio",
    "smsp__average_warps_issue_stalled_not_selected_per_issue_active.ratio",
    "smsp__average_warps_issue_stalled_math_pipe_throttle_per_issue_active.ratio",
    "smsp__average_warps_issue_stalled_wait_per_issue_active.ratio",
)
NCU_SHORT = {  # short names for the metrics the lesson quotes
    "time_ns": "gpu__time_duration.sum",
    "instructions": "smsp__inst_executed.sum",
    "thread_ffma": "smsp__sass_thread_inst_executed_op_ffma_pred_on.sum",
    "issue_active": "smsp__issue_active.avg.pct_of_peak_sustained_active",
    "warps_active": "sm__warps_active.avg.pct_of_peak_sustained_active",
    "requests": "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum",
    "sectors": "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum",
    "shared_wavefronts": "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum",
    "conflicts_ld": "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum",
    "conflicts_st": "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum",
    "long_scoreboard": "smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio",
    "mio_throttle": "smsp__average_warps_issue_stalled_mio_throttle_per_issue_active.ratio",
    "barrier": "smsp__average_warps_issue_stalled_barrier_per_issue_active.ratio",
}


def ncu_kernel_name(case: str) -> str:
    """What must appear in the name ncu reports for a case's kernel (its Python function's name)."""
    if case == CUBLAS:
        return CUBLAS_KERNEL
    if _generated_tile(case) is not None:
        return "gemm_generated"
    return steps.step(case).kernel.py_func.__name__


def ncu_cases(shape: tuple[int, int, int] = NCU_SHAPE) -> list[ncu.Case]:
    """One launch per case at ``shape`` (2048^3), each checked against float64 on sampled rows.
    Nothing here launches a kernel but the cases: inputs are copied from the host (outputs start as
    NaN, copied too), and the checks run on the host."""
    m, n, k = shape
    rng = np.random.default_rng(SEED_NCU)
    a = rng.standard_normal((m, k), dtype=np.float32)
    b = rng.standard_normal((k, n), dtype=np.float32)
    rows = np.sort(rng.choice(m, min(m, 16), replace=False))
    reference, bound = _reference_rows(a, b, rows)
    da, db = cuda.to_device(a), cuda.to_device(b)
    nan = np.full((m, n), np.nan, np.float32)

    def check(c) -> bool:
        return _rows_error(c.copy_to_host()[rows], reference, bound)["worst_share_of_bound"] <= 1.0

    cases = []
    for case in NCU_CASES[:-1]:
        dc, launch = cuda.to_device(nan), _launcher(case)
        cases.append(ncu.Case(case, ncu_kernel_name(case), lambda f=launch, c=dc: f(da, db, c),
                              check=lambda c=dc: check(c)))
    cp = cupy_or_none()
    if cp is not None:
        dc = cuda.to_device(nan)
        ca, cb, cc = cp.asarray(da), cp.asarray(db), cp.asarray(dc)
        cases.append(ncu.Case(CUBLAS, CUBLAS_KERNEL, lambda: cp.matmul(ca, cb, out=cc),
                              check=lambda c=dc: check(c)))
    return cases



# ------------------------------------------------------------------------- reading the table


def with_shapes(table: pd.DataFrame) -> pd.DataFrame:
    """The table with its shape's name, and each row's fraction of cuBLAS at the same shape."""
    out = table.copy()
    out["shape"] = out["size"].map(SHAPE_OF_SIZE)
    reference = out[out["variant"] == CUBLAS].set_index("size")["gflops"]
    out["of_cublas"] = out["gflops"] / out["size"].map(reference)
    return out


def progression(table: pd.DataFrame, search: bool = False) -> pd.DataFrame:
    """Steps (rows, teaching order) by shape (columns): fraction of cuBLAS in the same run; with
    ``search``, the search's 8x16 tile 16 deep (``SEARCH_VARIANT``) as a last row."""
    t = with_shapes(table)
    order = [s.name for s in steps.STEPS] + ([SEARCH_VARIANT] if search else [])
    t = t[t["variant"].isin(order)]
    wide = t.pivot_table(index="variant", columns="shape", values="of_cublas")
    return wide.reindex(index=order, columns=[s for s in SHAPES if s in wide.columns])


def progression_labels(index) -> list[str]:
    """Row labels for the progression chart: 'n. step' for a step, 'search: tile' for a candidate."""
    numbers = {s.name: i + 1 for i, s in enumerate(steps.STEPS)}
    return [f"{numbers[v]}. {v}" if v in numbers else f"search: {v.removeprefix('tile ')}" for v in index]


def gflops_table(table: pd.DataFrame) -> pd.DataFrame:
    t = with_shapes(table)
    order = [CUBLAS] + [s.name for s in steps.STEPS] + list(TUNE)
    wide = t.pivot_table(index="variant", columns="shape", values="gflops")
    return wide.reindex(index=[v for v in order if v in wide.index],
                        columns=[s for s in SHAPES if s in wide.columns])


SEARCH_STEPS = {"register_cap": 11, "big_tile": 12}  # the steps whose tiles are points of the search


def search_label(variant: str) -> str:
    """A search row's name: the tile, and the step number where the tile is a step."""
    if variant in SEARCH_STEPS:
        return f"{tile_name(steps.step(variant).tile)} (step {SEARCH_STEPS[variant]})"
    return variant


def search_table(table: pd.DataFrame) -> pd.DataFrame:
    """The visible search in long form, one row per (tile, shape) timed: the tile's label, its
    block tile, micro-tile and lanes, GFLOP/s and fraction of cuBLAS (for a shape x tile heatmap)."""
    t = with_shapes(table)
    t = t[t["variant"].isin([*SEARCH_STEPS, *TUNE])]
    rows = []
    for _, row in t.iterrows():
        tile = tile_of(row["variant"])
        rows.append({"tile": search_label(row["variant"]), "shape": row["shape"],
                     "block tile": f"{tile.bm}x{tile.bn}x{tile.bk}", "per thread": f"{tile.tm}x{tile.tn}",
                     "lanes": lanes_label(tile),
                     "gflops": float(row["gflops"]), "of_cublas": float(row["of_cublas"])})
    return pd.DataFrame(rows, columns=["tile", "shape", "block tile", "per thread", "lanes", "gflops",
                                       "of_cublas"])


def autotune_table(table: pd.DataFrame, values: str = "gflops") -> pd.DataFrame:
    """The visible search: steps 11 and 12's tiles and every candidate (rows) by shape (columns),
    GFLOP/s or ``values="of_cublas"``. Only steps 11 and 12 run at the awkward shape."""
    long = search_table(table)
    wide = long.pivot_table(index="tile", columns="shape", values=values)
    order = [search_label(v) for v in (*SEARCH_STEPS, *TUNE)]
    columns = [s for s in (*TUNE_SHAPES, AWKWARD) if s in wide.columns]
    return wide.reindex(index=[label for label in order if label in wide.index], columns=columns)


def search_winners(table: pd.DataFrame) -> pd.DataFrame:
    """The search's winner at each shape it ran at (measured rows, not a fixed choice), its
    fraction of cuBLAS, and the runner-up's."""
    fractions = autotune_table(table, "of_cublas")
    rows = []
    for shape in fractions.columns:
        ranked = fractions[shape].dropna().sort_values(ascending=False)
        rows.append({"shape": shape, "winner": ranked.index[0], "of_cublas": float(ranked.iloc[0]),
                     "runner-up": ranked.index[1] if len(ranked) > 1 else None,
                     "runner-up of_cublas": float(ranked.iloc[1]) if len(ranked) > 1 else None})
    return pd.DataFrame(rows).set_index("shape")


def warp_tiling(table: pd.DataFrame, shapes=("2048^3", "4096^3", "8192^3")) -> pd.DataFrame:
    """Issue 18's question, from the run's rows: the warp-tiled 8x16 tile beside the same tile with
    step 12's lanes, step 12 and cuBLAS (GFLOP/s), and the warp tile's ratio to its sibling."""
    gflops = gflops_table(table)
    names = {"cuBLAS": CUBLAS, "step 12 (128x256x8, lanes 2x16)": "big_tile",
             "128x256x16, lanes 2x16": SEARCH_VARIANT, "128x256x16, warp 4x8 paired": WARP_VARIANT}
    present = [s for s in shapes if s in gflops.columns]
    out = pd.DataFrame({label: gflops.loc[variant, present] if variant in gflops.index else np.nan
                        for label, variant in names.items()}).T
    warp, sibling = out.loc["128x256x16, warp 4x8 paired"], out.loc["128x256x16, lanes 2x16"]
    out.loc["warp tile / lanes 2x16"] = warp / sibling
    return out


def best_per_shape(table: pd.DataFrame) -> pd.DataFrame:
    """For each shape: our best kernel (any step or tile candidate) and its fraction of cuBLAS."""
    t = with_shapes(table)
    ours = t[t["provider"] == "gpu_lessons"]
    best = ours.loc[ours.groupby("shape")["gflops"].idxmax()]
    out = best[["shape", "variant", "gflops", "of_cublas"]].set_index("shape")
    out["cublas_gflops"] = t[t["variant"] == CUBLAS].set_index("shape")["gflops"]
    return out.reindex([s for s in SHAPES if s in out.index])


TARGETS = {"4096^3": 0.85, "2048^3": 0.75, AWKWARD: 0.70}  # issue 11: fraction of cuBLAS, same run


def targets(table: pd.DataFrame) -> pd.DataFrame:
    """The lesson's targets against the recording: our best kernel's fraction of cuBLAS per shape."""
    best = best_per_shape(table)
    rows = [{"shape": shape, "target": target, "best kernel": best.loc[shape, "variant"],
             "fraction of cuBLAS": float(best.loc[shape, "of_cublas"]),
             "met": bool(best.loc[shape, "of_cublas"] >= target)}
            for shape, target in TARGETS.items() if shape in best.index]
    return pd.DataFrame(rows).set_index("shape")


# The block tile of cuBLAS's kernel at the square shapes: CUTLASS's SIMT SGEMM, 256 x 128 (its name in
# the ncu recording: cutlass_80_simt_sgemm_256x128_8x4_nn_align1).
CUBLAS_CTA = (256, 128)


def cta_label(cta: tuple[int, int] | None) -> str:
    return "no shared tile" if cta is None else f"block tile {cta[0]}x{cta[1]}"


def roofline_points(table: pd.DataFrame, shape: str = "2048^3") -> pd.DataFrame:
    """Every step, the search's 16-deep 8x16 tile and cuBLAS at one shape (2048^3: where every step
    ran), each at the intensity the notes count for its block tile (B_M B_N / 2(B_M + B_N); the naive
    kernels 2K / (8K + 4)): counted, not measured. ``label`` is the step's number ('S' for the search
    tile), ``name`` the variant, ``kind`` the block tile (the colour)."""
    t = with_shapes(table)
    t = t[t["shape"] == shape]
    k = SHAPES[shape][2]
    points = []
    for number, step in enumerate(steps.STEPS, start=1):
        row = t[t["variant"] == step.name]
        if not row.empty:
            points.append({"label": str(number), "name": step.name, "intensity": step_intensity(step.name, k),
                           "gflops": float(row["gflops"].iloc[0]), "kind": cta_label(step.cta)})
    for label, name, cta in (("S", SEARCH_VARIANT, (TUNE[SEARCH_VARIANT].bm, TUNE[SEARCH_VARIANT].bn)),
                             ("cuBLAS", CUBLAS, CUBLAS_CTA)):
        row = t[t["variant"] == name]
        if not row.empty:
            points.append({"label": label, "name": name, "intensity": cta_intensity(*cta),
                           "gflops": float(row["gflops"].iloc[0]),
                           "kind": "cuBLAS, block tile 256x128" if name == CUBLAS else
                           f"S: the search's {cta[0]}x{cta[1]} tile, 16 deep"})
    return pd.DataFrame(points, columns=["label", "name", "intensity", "gflops", "kind"])


# ---------------------------------------------------------------- the evidence: resources, SASS


def threads_per_block(kernel: str) -> int:
    """Threads per block of a step, a tile candidate or a probe variant (by the evidence's names)."""
    name = kernel.split(" (")[0]
    if name in TUNE:
        return TUNE[name].threads
    if name in steps.BY_NAME:
        step = steps.step(name)
        if step.tile is not None:
            return step.tile.threads
        if name in register.KERNELS:
            return register.KERNELS[name][1]["threads"]
        if name == "shared_tiled":
            return tiled.BLOCK[0] * tiled.BLOCK[1]
        return naive_kernels.NAIVE_BLOCK[0] * naive_kernels.NAIVE_BLOCK[1]
    return 256  # the probe's variants of the 128x128 tile (warp_tile, launch_bounds)


def resources_table(result: LessonResult) -> pd.DataFrame:
    """Per recorded kernel: registers, shared and local memory (spills), occupancy (lesson 2's
    calculator on the recorded registers and shared memory), its SASS hot loop, and its source."""
    rows = []
    for name, info in result.evidence.kernels.items():
        summary = info.get("sass", {}).get("summary", {})
        memory = summary.get("loop_memory", {})
        threads = threads_per_block(name)
        occ = occupancy(threads, info["registers"], info["shared_bytes"], limits_of(result))
        rows.append({
            "kernel": name, "threads": threads, "registers": info["registers"],
            "shared_bytes": info["shared_bytes"], "local_bytes": info["local_bytes"],
            "blocks/SM": occ.blocks_per_sm, "warps/SM": occ.warps_per_sm, "limited by": occ.limiter,
            "hot_loop_ffma_share": summary.get("loop_ffma_share"),
            "hot_loop_instructions": summary.get("loop_instructions"),
            "LDS.128": memory.get("LDS.128", 0), "LDS": memory.get("LDS", 0),
            "LDG.E.128": summary.get("memory", {}).get("LDG.E.128", 0),
            "spill_ops (LDL/STL)": summary.get("spill_ops"),
            "source": info.get("source", "run"),
        })
    return pd.DataFrame(rows).set_index("kernel")


def waves(result: LessonResult, names=None, shapes=("2048^3", "4096^3", "8192^3", AWKWARD)) -> pd.DataFrame:
    """Per tile of the search (steps 11 and 12 and the candidates; ``names=None``: those the evidence
    has resources of) and shape it was timed at: blocks, resident blocks per SM (lesson 2's
    calculator on the recorded registers and shared memory of the twin that runs there) and waves
    per grid; ``filled``: the share of SM slots the waves keep busy (the last wave's idle slots are
    lost time when blocks take equal time). The SM count is the recording's."""
    sms = int(result.meta["sms"])
    if names is None:
        names = [name for name in (*SEARCH_STEPS, *TUNE) if name in result.evidence.kernels]
    rows = []
    for name in names:
        tile = tile_of(name)
        for shape in (s for s in shapes if s in shapes_for(name)):
            m, n, k = SHAPES[shape]
            vector = k % 4 == 0 and n % 4 == 0
            kernel = result.evidence.kernel(name if vector or not tile.vector else f"{name} (4-byte loads)")
            per_sm = occupancy(tile.threads, kernel["registers"], kernel["shared_bytes"],
                               limits_of(result)).blocks_per_sm
            blocks = -(-n // tile.bn) * -(-m // tile.bm)
            w = blocks / (per_sm * sms)
            rows.append({"kernel": name, "shape": shape, "loads": "16-byte" if vector else "4-byte",
                         "blocks": blocks, "blocks/SM": per_sm, "waves": w, "filled": w / math.ceil(w)})
    columns = ["kernel", "shape", "loads", "blocks", "blocks/SM", "waves", "filled"]
    return pd.DataFrame(rows, columns=columns).set_index(["kernel", "shape"])


def per_k_step(tiles: dict) -> pd.DataFrame:
    """Counted from the tiles (what the generator writes): per thread and k-step, the FMAs and the
    16-byte shared loads that feed them, and the shared wavefronts a warp needs for them (the pair
    rule); per block and k-tile, the FMAs between two barriers."""
    rows = []
    for label, t in tiles.items():
        loads = (t.tm + t.tn) // 4
        rows.append({"tile": label, "block tile": f"{t.bm}x{t.bn}x{t.bk}", "per thread": f"{t.tm}x{t.tn}",
                     "threads": t.threads, "FFMA per k-step": t.tm * t.tn, "LDS.128 per k-step": loads,
                     "FFMA per LDS.128": t.tm * t.tn / loads,
                     "shared wavefronts per warp per k-step": shared_wavefronts_per_k_step(t)["wavefronts"],
                     "FFMA per thread per k-tile": t.bk * t.tm * t.tn,
                     "I_CTA (FLOP/byte)": cta_intensity(t.bm, t.bn)})
    return pd.DataFrame(rows).set_index("tile")


# ------------------------------------------------------ the evidence: Nsight Compute counters


def _ncu(evidence: Evidence, case: str, short: str):
    return evidence.ncu_value(case, NCU_SHORT[short])


def fp32_rate_gflops(evidence: Evidence, case: str) -> float:
    """The FP32 rate a profiled launch reached: 2 FLOP per thread-level FFMA over its duration.
    (Not ``sm__pipe_fma_cycles_active``: on Hopper that pipe also runs IMAD.)"""
    return 2 * _ncu(evidence, case, "thread_ffma") / _ncu(evidence, case, "time_ns")


def fp32_share_of_peak(evidence: Evidence, case: str, peak_gflops: float) -> float:
    """The FP32 rate from the FFMA count as a share of the FP32 peak (SMs x 128 x 2 x clock)."""
    return fp32_rate_gflops(evidence, case) / peak_gflops


def ncu_shape(evidence: Evidence, case: str) -> tuple[int, int, int]:
    """The (M, N, K) a case was profiled at: its source's, where the source says, else NCU_SHAPE."""
    source = evidence.ncu_case(case)["source"]
    shape = evidence.sources.get(source, {}).get("shape")
    return tuple(int(v) for v in shape) if shape else NCU_SHAPE


CUTLASS_TILE = re.compile(r"_(\d+)x(\d+)_\d+x\d+_")
CUTLASS_SIMT_WARPS = 8  # cutlass_80_simt_sgemm_256x128_*: 4 x 2 warps of 64 x 64 (CUTLASS's SIMT tiles)


def launch_warps(case: str, shape: tuple[int, int, int], kernel_name: str = "") -> int:
    """Warps a case's launch runs at (M, N, K): from the lesson's launch shapes, or for cuBLAS from
    the CUTLASS tile in its kernel name (the counters of an ncu run record grid and block instead)."""
    m, n, _ = shape
    if case == CUBLAS:
        found = CUTLASS_TILE.search(kernel_name)
        if not found:
            raise RecordingError(f"ncu.{case}: no grid and block recorded, and no CUTLASS tile in its "
                                 f"kernel name {kernel_name[:80]!r}")
        tile_m, tile_n = int(found.group(1)), int(found.group(2))
        return -(-m // tile_m) * -(-n // tile_n) * CUTLASS_SIMT_WARPS
    tile = _generated_tile(case)
    if tile is not None:
        return -(-m // tile.bm) * -(-n // tile.bn) * tile.threads // 32
    if case in register.KERNELS:
        t = register.KERNELS[case][1]
        return -(-m // t["bm"]) * -(-n // t["bn"]) * t["threads"] // 32
    block = tiled.BLOCK if case == "shared_tiled" else naive_kernels.NAIVE_BLOCK
    return -(-m // block[1]) * -(-n // block[0]) * block[0] * block[1] // 32


def ncu_warps(evidence: Evidence, case: str) -> int:
    """Warps of a profiled launch: grid x block as ncu recorded them, else ``launch_warps``."""
    entry = evidence.ncu_case(case)
    if "grid" in entry and "block" in entry:
        return math.prod(entry["grid"]) * -(-math.prod(entry["block"]) // 32)
    return launch_warps(case, ncu_shape(evidence, case), entry["kernel"])


def shared_wavefronts_per_warp_k_step(evidence: Evidence, case: str) -> float:
    """ncu's shared-load wavefronts per warp per k-step (one k of the K loop): 20 for step 12 and
    12.1 for cuBLAS at 2048^3, where the pair rule counts 20 and 12 (shared_wavefronts_per_k_step)."""
    k_steps = ncu_shape(evidence, case)[2]
    return _ncu(evidence, case, "shared_wavefronts") / (ncu_warps(evidence, case) * k_steps)


def sectors_per_request(evidence: Evidence, case: str) -> float:
    """ncu's 32-byte sectors per global load request (16.5 for naive_uncoalesced: the mean of A's
    32 and B's 1, naive_sectors_per_request)."""
    return _ncu(evidence, case, "sectors") / _ncu(evidence, case, "requests")


def counter_table(result: LessonResult) -> pd.DataFrame:
    """Per profiled case, in teaching order: what the lesson reasons with, derived from the counters
    (instructions, the FP32 rate from FFMAs and its share of the peak, issue slots, shared wavefronts
    per warp per k-step, sectors per request) and the ncu run each came from."""
    evidence, peak = result.evidence, float(result.meta["peak_fp32_gflops"])
    order = [c for c in NCU_CASES if c in evidence.ncu] + [c for c in evidence.ncu if c not in NCU_CASES]
    rows = []
    for case in order:
        rows.append({
            "case": case, "time (us)": _ncu(evidence, case, "time_ns") / 1e3,
            "instructions (M)": _ncu(evidence, case, "instructions") / 1e6,
            "FFMA share of instructions": _ncu(evidence, case, "thread_ffma") / 32
            / _ncu(evidence, case, "instructions"),
            "FP32 GFLOP/s (FFMA)": fp32_rate_gflops(evidence, case),
            "of FP32 peak": fp32_share_of_peak(evidence, case, peak),
            "issue active %": _ncu(evidence, case, "issue_active"),
            "warps active %": _ncu(evidence, case, "warps_active"),
            "shared wavefronts per warp per k-step": shared_wavefronts_per_warp_k_step(evidence, case),
            "sectors per request": sectors_per_request(evidence, case),
            "source": evidence.ncu_case(case)["source"],
        })
    return pd.DataFrame(rows).set_index("case")


def issue_bound(result: LessonResult, before: str = "naive", after: str = "shared_tiled",
                shape: str = "2048^3") -> dict:
    """Instructions executed (ncu) before and after a step, against the step's speed-up in the run's
    table: naive -> shared_tiled cuts instructions 9,677 M -> 1,657 M (5.84x) and runs 5.80x faster,
    so the naive kernel was bound by issuing instructions, not by memory."""
    evidence = result.evidence
    t = with_shapes(result.table)

    def median_ms(name):
        rows = t[(t["variant"] == name) & (t["shape"] == shape)]
        if rows.empty:
            raise RecordingError(f"{result.source}: no row of {name!r} at {shape}")
        return float(rows["median_ms"].iloc[0])

    instructions = {name: _ncu(evidence, name, "instructions") for name in (before, after)}
    return {"instructions_before": instructions[before], "instructions_after": instructions[after],
            "instruction_ratio": instructions[before] / instructions[after],
            "speedup": median_ms(before) / median_ms(after),
            "ncu_time_ratio": _ncu(evidence, before, "time_ns") / _ncu(evidence, after, "time_ns")}


def wavefront_table(result: LessonResult | None = None) -> pd.DataFrame:
    """Shared wavefronts per warp per k-step: the pair rule's count for each generated kernel the
    lesson profiles, beside ncu's where the result has it (cuBLAS: ncu only); ``ffma``: the FMAs a
    thread does per k-step (cuBLAS: 256 x 128 outputs over 256 threads)."""
    numbers = {s.name: i + 1 for i, s in enumerate(steps.STEPS)}
    rows = []
    for case in (*NCU_CASES,):
        tile = _generated_tile(case) if case != CUBLAS else None
        if tile is None and case != CUBLAS:
            continue
        measured = np.nan
        if result is not None and case in result.evidence.ncu:
            measured = shared_wavefronts_per_warp_k_step(result.evidence, case)
        label = f"{numbers[case]}. {case}" if case in numbers else SHORT_NAMES.get(case, case)
        rows.append({"kernel": case, "label": label,
                     "lanes": "cuBLAS" if tile is None else lanes_label(tile),
                     "ffma": CUBLAS_CTA[0] * CUBLAS_CTA[1] // 256 if tile is None else tile.tm * tile.tn,
                     "model": shared_wavefronts_per_k_step(tile)["wavefronts"] if tile else np.nan,
                     "ncu": measured})
    return pd.DataFrame(rows).set_index("kernel")


STALL_REASONS = {  # ncu's reasons a warp could not issue, in the order the lesson discusses them
    "long scoreboard (global memory)": "long_scoreboard",
    "short scoreboard (shared memory)": "short_scoreboard",
    "MIO throttle (shared-memory queue)": "mio_throttle",
    "barrier": "barrier",
    "wait (fixed latency)": "wait",
    "math pipe throttle": "math_pipe_throttle",
    "not selected (another warp issued)": "not_selected",
}


def stall_table(result: LessonResult, cases=("register_cap", "big_tile", CUBLAS)) -> pd.DataFrame:
    """Warps stalled per issued instruction, by reason (ncu's ``smsp__average_warps_issue_stalled_*
    _per_issue_active``), reasons as rows and cases as columns; and issue slots busy (%)."""
    evidence = result.evidence
    rows = {}
    for label, short in STALL_REASONS.items():
        metric = f"smsp__average_warps_issue_stalled_{short}_per_issue_active.ratio"
        rows[label] = {case: evidence.ncu_value(case, metric) for case in cases}
    table = pd.DataFrame(rows).T
    table.loc["issue slots busy (%)"] = [_ncu(evidence, case, "issue_active") for case in cases]
    return table[list(cases)]


_LDS = re.compile(r"/\*([0-9a-f]+)\*/\s+LDS\.128\s+R\d+,\s*\[(R\d+)(?:\+0x([0-9a-f]+))?\]")


def lds_schedule(result: LessonResult, name: str) -> pd.DataFrame:
    """The 16-byte shared loads in a kernel's recorded SASS excerpt (its first memory instructions),
    decoded with the tile: position (instructions after the first LDS.128), operand, k-step and group.
    A base register is A's when all its offsets are A's (k-step x row of bm + pad floats + group x
    the lanes' span along M), else B's."""
    tile = tile_of(name)
    lines = result.evidence.kernel(name).get("sass", {}).get("lines", [])
    found = [(int(m.group(1), 16), m.group(2), int(m.group(3) or "0", 16))
             for m in map(_LDS.search, lines) if m]
    if not found:
        return pd.DataFrame(columns=["instruction", "operand", "k_step", "group"])
    strides = {"a": (4 * (tile.bm + tile.pad), 4 * (tile.lanes_m * 4 if tile.lanes_m else 4), tile.tm // 4),
               "b": (4 * tile.bn, 4 * ((32 // tile.lanes_m) * 4 if tile.lanes_m else 4), tile.tn // 4)}

    def fits(offsets, operand):
        row, step, groups = strides[operand]
        return all(offset % row % step == 0 and offset % row // step < groups for offset in offsets)

    offsets = {}
    for _, base, offset in found:
        offsets.setdefault(base, []).append(offset)
    operand_of = {}
    for base, seen in offsets.items():
        operand_of[base] = "a" if fits(seen, "a") and not fits(seen, "b") else "b"
    first = found[0][0]
    rows = []
    for address, base, offset in found:
        row, step, _ = strides[operand_of[base]]
        rows.append({"instruction": (address - first) // 16, "operand": operand_of[base].upper(),
                     "k_step": offset // row, "group": offset % row // step})
    return pd.DataFrame(rows)


# --------------------------------------------------------------- the checklist, with evidence


def _fmt(value, spec: str = ".0f", suffix: str = "") -> str:
    return f"{value:{spec}}{suffix}"


def _observation(step: str, previous: str, result: LessonResult) -> str:
    """What the previous step's counters, resources or SASS showed (recorded on the GPU)."""
    evidence = result.evidence
    kernel = evidence.kernel(previous)
    summary = kernel.get("sass", {}).get("summary", {})
    memory = summary.get("loop_memory", {})
    share = _fmt(summary.get("loop_ffma_share", float("nan")), ".0%")

    def ncu_(short, spec=".1f", suffix=""):
        return _fmt(_ncu(evidence, previous, short), spec, suffix)

    def fp32(case):
        return _fmt(fp32_share_of_peak(evidence, case, float(result.meta["peak_fp32_gflops"])), ".1%")

    if step == "naive":
        per = sectors_per_request(evidence, previous)
        model = naive_sectors_per_request(lanes_along_rows=True)
        return (f"ncu: {per:.1f} sectors per global load request, the mean of A's {model['a']} (neighbouring "
                f"lanes read neighbouring rows, K floats apart) and B's {model['b']} (one element for all)")
    if step == "shared_tiled":
        per_ffma = _ncu(evidence, previous, "instructions") / (_ncu(evidence, previous, "thread_ffma") / 32)
        return (f"ncu: {per_ffma:.0f} instructions per FFMA, issue slots {ncu_('issue_active', '.0f', '%')} "
                f"busy, FFMAs at {fp32(previous)} of the FP32 peak: most instructions are not FFMAs (address "
                "arithmetic, loads, the loop), and DRAM is not what it waits on")
    if step == "register_1d":
        loads = memory.get("LDS", 0) + memory.get("LDS.128", 0)
        return (f"SASS hot loop: {loads} shared loads for {summary.get('loop_ffma', 0)} FFMA ({share} "
                f"FFMA); ncu: {ncu_('mio_throttle')} warps stalled on the shared-memory queue per issue")
    if step == "register_2d":
        return (f"ncu: issue slots {ncu_('issue_active', '.0f', '%')} busy but FFMAs at {fp32(previous)} of "
                f"the FP32 peak: the SM issues other instructions, not FMAs; hot loop {share} FFMA")
    if step == "register_2d_uint64":
        top = dict(summary.get("top", []))
        return (f"SASS: {summary.get('instructions', 'n/a')} instructions, {top.get('SEL', 0)} SEL, "
                f"{top.get('BRA', 0)} BRA (negative-index wraparound); hot loop {share} FFMA")
    if step == "vector_loads":
        return (f"SASS: {summary.get('memory', {}).get('LDG.E', 0)} 4-byte global loads per tile, no "
                f"LDG.E.128; {memory.get('LDS', 0)} scalar LDS in the hot loop")
    if step == "unrolled":
        per_loop = summary.get("loop_ffma", 0) // 64  # 64 FMAs (8 x 8) per k-step
        return (f"SASS: NVVM unrolled the rolled k-loop {per_loop} times: a loop of "
                f"{summary.get('loop_instructions')} instructions holding {per_loop} of a tile's 8 k-steps "
                f"({share} FFMA), with its counter, compare and branch every {per_loop} k-steps")
    if step == "conflict_free":
        return (f"ncu: {ncu_('conflicts_ld', ',.0f')} shared-load and {ncu_('conflicts_st', ',.0f')} "
                f"shared-store bank conflicts, {shared_wavefronts_per_warp_k_step(evidence, previous):.0f} "
                "wavefronts per warp per k-step")
    if step == "double_buffer":
        return (f"SASS: {memory.get('BAR.SYNC.DEFER_BLOCKING', 0)} barriers per tile, each after the "
                "tile's loads: every warp waits for global memory, then again before the next load")
    if step == "register_cap":
        return (f"resources: {kernel['registers']} registers per thread x 256 threads: one "
                "block per SM (65,536 registers), 8 warps to hide latency")
    if step == "big_tile":
        tile = steps.step(previous).tile
        k_steps = summary.get("loop_ffma", 0) // (tile.tm * tile.tn)
        per_step = memory.get("LDS.128", 0) / k_steps if k_steps else float("nan")
        return (f"SASS: each k-step {tile.tm * tile.tn} FFMA per {per_step:.0f} LDS.128, hot loop {share} "
                f"FFMA; ncu: FFMAs at {fp32(previous)} of the FP32 peak with issue slots "
                f"{ncu_('issue_active', '.0f', '%')} busy: more FMAs per load and per loop, not more warps")
    return ""


def _resources_note(step: str, result: LessonResult) -> str:
    """What the resource report and the SASS say of a step's own kernel (for the steps whose point
    is registers and occupancy): appended to the checklist's "what moved"."""
    if step not in ("register_cap", "big_tile"):
        return ""
    kernel = result.evidence.kernel(step)
    tile = steps.step(step).tile
    occ = occupancy(tile.threads, kernel["registers"], kernel["shared_bytes"], limits_of(result))
    summary = kernel.get("sass", {}).get("summary", {})
    return (f"; {kernel['registers']} registers, {summary.get('spill_ops', 'n/a')} spill ops, "
            f"{occ.blocks_per_sm} block(s) = {occ.warps_per_sm} warps/SM, hot loop "
            f"{_fmt(summary.get('loop_ffma_share', float('nan')), '.0%')} FFMA")


def checklist(result: LessonResult, spin_check: ProbeData | None = None) -> pd.DataFrame:
    """The notes' checklist applied: per step, what the previous step showed (a counter, the
    resource report or SASS, recorded on the GPU), the change, and what moved (same run); with the
    retired spin-check probe (``results.read_probe("bench_spin_check")``), the timing harness last."""
    t = with_shapes(result.table)
    rows, previous = [], None
    for step in steps.STEPS:
        shape = "4096^3" if "4096^3" in shapes_for(step.name) else "2048^3"
        if previous is not None and shape not in shapes_for(previous.name):
            shape = "2048^3"

        def gflops(name, shape=shape):
            hit = t[(t["variant"] == name) & (t["shape"] == shape)]
            return float(hit["gflops"].iloc[0]) if len(hit) else float("nan")

        now = gflops(step.name)
        moved = f"{now:,.0f} GFLOP/s ({shape})"
        before = float("nan")
        if previous is not None:
            before = gflops(previous.name)
            moved = f"{before:,.0f} -> " + moved + _resources_note(step.name, result)
        seen = _observation(step.name, previous.name, result) if previous is not None else "baseline"
        rows.append({"step": step.name, "observation (previous step, on the GPU)": seen,
                     "change": step.change, "what moved": moved, "speed-up": now / before})
        previous = step
    if spin_check is not None:
        rows.append(harness_row(spin_check))
    return pd.DataFrame(rows).set_index("step")


def harness_row(spin_check: ProbeData) -> dict:
    """The checklist's last row: the 2048^3 spread was the timing harness, not the kernels."""
    check, meta = spin_check.data, spin_check.meta
    timings = check["timings_ms"]
    ours, ref = timings["gemm register_cap 2048"], timings["cublas 2048"]

    def spread(t):  # [median, min, max] -> (max - min) / median
        return (t[2] - t[1]) / t[0]

    def span(t):
        return f"{t[0]:.3f} ms [{t[1]:.3f}, {t[2]:.3f}]"

    return {"step": "timing harness",
            "observation (previous step, on the GPU)":
                f"2048^3 medians of our kernels spread {spread(ours['old_spin']):.0%} run to run, "
                f"cuBLAS's {spread(ref['old_spin']):.0%}; 20 launches back to back: "
                f"{ours['back_to_back_ms']:.3f} ms each",
            "change": "the spin before each timed launch waits on %globaltimer (nanosleep may sleep 0..2x "
                      "the request, and numba's launch then leaked into the events)",
            "what moved": f"register_cap at 2048^3: {span(ours['old_spin'])} -> {span(ours['new_spin'])} "
                          f"(median [min, max], {meta['command']}, git {meta['git_revision']})",
            "speed-up": ours["old_spin"][0] / ours["new_spin"][0]}


def probe_fractions(probe: ProbeData, variants=None, shapes=None) -> pd.DataFrame:
    """A retired GEMM probe's rows (``results.read_probe("gemm_probe")``): each variant's fraction of
    cuBLAS in that run, variants by shape (the probe's names: warp_tile, launch_bounds, ...)."""
    table = probe.data
    if variants is not None:
        table = table[table["variant"].isin(list(variants))]
    if shapes is not None:
        table = table[table["shape"].astype(str).isin([str(s) for s in shapes])]
    return table.pivot_table(index="variant", columns="shape", values="of_cublas", sort=False)


def errors_table(result: LessonResult) -> pd.DataFrame:
    """The run's errors against float64 (facts.errors): the worst element's share of the FP32
    bound, variants by shape."""
    errors = pd.DataFrame(result.evidence.fact("errors"))
    return errors.pivot_table(index="variant", columns="shape", values="worst_share_of_bound", sort=False)


# -------------------------------------------------------------------------------- figures


def progression_figure(result: LessonResult, shapes=("2048^3", "4096^3")):
    """Each step, and the search's 16-deep 8x16 tile, as a share of cuBLAS at two shapes."""
    fractions = progression(result.table, search=True)
    figure = gemm_plots.gemm_progression(fractions, shapes=list(shapes), provenance=result.provenance,
                                         labels=progression_labels(fractions.index))
    shown = [s for s in shapes if s in fractions.columns]
    def at(v, s):
        value = fractions.loc[v, s]
        return f"{value:.0%} at {s}" if pd.notna(value) else f"not timed at {s}"

    ends = "; ".join(f"{label}: " + ", ".join(at(v, s) for s in shown)
                     for v, label in zip(fractions.index, progression_labels(fractions.index), strict=True))
    return with_alt(figure, f"Horizontal bars in teaching order, each kernel's GFLOP/s as a share of cuBLAS "
                    f"SGEMM measured in the same run: {ends}.")


def roofline_figure(result: LessonResult, roof: dict, shape: str = "2048^3"):
    """Every step, the search's tile and cuBLAS on the measured roof, at counted intensity."""
    return gemm_plots.steps_roofline(roof["bandwidth_gbps"], roof["peak_gflops"],
                                     roofline_points(result.table, shape), provenance=result.provenance)


NOISY_SPREAD = 1.1  # a shape whose generated kernels' median run exceeds their fastest by more is noisy


def timing_spread(table: pd.DataFrame) -> pd.DataFrame:
    """Per shape, the run-to-run spread of cuBLAS, of the hand-written steps 1-6 and of the generated
    kernels (steps 7 on and the search's tiles): the largest median/min and max/min over the group's
    variants. The generated kernels at the small shapes (0.1-0.3 ms a run) spread far more than cuBLAS."""
    t = with_shapes(table)
    hand = [s.name for s in steps.STEPS[:6]]
    group = np.where(t["variant"] == CUBLAS, "cuBLAS", np.where(t["variant"].isin(hand), "steps 1-6",
                                                                "generated (steps 7-12, search)"))
    t = t.assign(group=group, median_over_min=t["median_ms"] / t["min_ms"],
                 max_over_min=t["max_ms"] / t["min_ms"])
    out = t.groupby(["shape", "group"])[["median_over_min", "max_over_min"]].max().unstack("group")
    return out.reindex([s for s in SHAPES if s in out.index])


def noisy_shapes(table: pd.DataFrame) -> list[str]:
    """Shapes where a generated kernel's median run is over ``NOISY_SPREAD`` times its fastest."""
    spread = timing_spread(table)[("median_over_min", "generated (steps 7-12, search)")]
    return [shape for shape, value in spread.items() if value > NOISY_SPREAD]


def shape_label(shape: str) -> str:
    """A shape's name as the text prints it: 1024^3 -> 1024³."""
    return shape.replace("^3", "\u00b3")


def search_figure(result: LessonResult, drop=("128^3",)):
    """The search as a heatmap; ``drop``: shapes left out (128^3: every kernel there takes less than a
    launch, and runs spread several times over). Columns of noisy shapes are starred."""
    fractions = autotune_table(result.table, "of_cublas").drop(columns=list(drop), errors="ignore")
    noisy = noisy_shapes(result.table)
    spread = timing_spread(result.table)[("median_over_min", "generated (steps 7-12, search)")]
    labels = [f"{shape_label(s)} *" if s in noisy else shape_label(s) for s in fractions.columns]
    starred = [s for s in fractions.columns if s in noisy]
    note = "; ".join(f"{shape_label(s)}: {spread[s]:.2f}x" for s in starred)
    left_out = [s for s in drop if s in autotune_table(result.table, "of_cublas").columns]
    xlabel = "matrix shape (M x N x K); framed: each shape's best median" + (
        f"\n* noisy: a kernel's median over {NOISY_SPREAD}x its fastest run ({note})" if starred else "") + (
        "\nleft out: " + ", ".join(f"{shape_label(s)} (a kernel's median {spread[s]:.2f}x its fastest run)"
                                    for s in left_out) if left_out else "")
    figure = gemm_plots.search_heatmap(fractions, provenance=result.provenance, column_labels=labels,
                                       xlabel=xlabel)
    best = "; ".join(f"{shape_label(shape)}: {fractions[shape].idxmax()} ({fractions[shape].max():.0%})"
                     for shape in fractions.columns if fractions[shape].notna().any())
    blank = int(fractions.isna().sum().sum())
    return with_alt(figure, f"Heatmap of the tile search: {len(fractions)} tiles as rows, "
                    f"{len(fractions.columns)} matrix shapes as columns, each cell the tile's share of "
                    f"cuBLAS at that shape ({blank} cells not timed); the best median per shape is framed: "
                    f"{best}. Noisy shapes (starred, a kernel's median over {NOISY_SPREAD} times its "
                    f"fastest run): {note or 'none'}.")


def wavefront_figure(result: LessonResult | None = None):
    counts = wavefront_table(result)
    figure = gemm_plots.wavefronts(counts, provenance=result.provenance if result is not None else None)
    described = "; ".join(f"{row['label']}: model {row['model']:.0f}" if pd.notna(row["model"]) else
                          f"{row['label']}: ncu {row['ncu']:.1f}" for _, row in counts.iterrows())
    return with_alt(figure, "Bars of shared-memory wavefronts per warp per k-step, the pair rule's count "
                    f"beside Nsight Compute's where it was profiled: {described}.")


STALL_LABELS = {"register_cap": "step 11", "big_tile": "step 12", CUBLAS: "cuBLAS"}


def stall_figure(result: LessonResult, cases=("register_cap", "big_tile", CUBLAS)):
    table = stall_table(result, cases)
    figure = gemm_plots.stall_reasons(table, labels=STALL_LABELS, provenance=result.provenance)
    busy = ", ".join(f"{STALL_LABELS.get(c, c)} {table.loc['issue slots busy (%)', c]:.0f}%" for c in cases)
    kernels = ", ".join(STALL_LABELS.get(c, c) for c in cases)
    return with_alt(figure, "Horizontal bars: warps stalled per issued instruction by reason, for "
                    f"{kernels} at 2048^3; issue slots busy: {busy}.")


def hierarchy_figure(tile: codegen.Tile = steps.BIG_TILE):
    owners = output_owners(tile)
    figure = gemm_plots.tiling_hierarchy(owners, tile)
    return with_alt(figure, f"Three panels. A {tile.bm} x {tile.bn} block tile of C with the {tile.bm}-row "
                    f"panel of A and the {tile.bn}-column panel of B it reads, one {tile.bk}-deep k-tile of "
                    f"each in shared memory; the block tile split into {tile.threads // 32} warps; warp 0's "
                    f"outputs by lane, lane 0's {tile.tm} x {tile.tn} outputs as {tile.tm * tile.tn // 16} "
                    "pieces of 4 x 4.")


BANK_LAYOUTS = {"step 8: each thread 8 adjacent columns": steps.UNROLLED_TILE,
                "step 9: 4-wide pieces, interleaved": steps.CONFLICT_FREE_TILE}


def bank_figure(layouts: dict = BANK_LAYOUTS, operand: str = "b"):
    maps = {label: lds128_bank_map(shared_load_addresses(tile)[(operand, 0)])
            for label, tile in layouts.items()}
    figure = gemm_plots.bank_map(maps)
    totals = "; ".join(f"{label}: {int(m.groupby('phase')['words_in_bank'].max().sum())} wavefronts"
                       for label, m in maps.items())
    return with_alt(figure, "Grids of phases by the 32 shared-memory banks for warp 0's first 16-byte load "
                    "of the B tile, each cell naming the lanes whose words fall in that bank, conflicts in "
                    f"red: {totals}.")


PAIRING_LAYOUTS = {"step 12: lanes 2 x 16": steps.SEARCH_TILE_8X16,
                   "warp 4 x 8, lanes in pairs": replace(steps.SEARCH_TILE_8X16, lanes_m=4, interleave=2)}


def lane_grid(tile: codegen.Tile) -> pd.DataFrame:
    """Warp 0's lanes on its grid of micro-tiles: lane, row (its pieces of A) and col (its pieces of B)."""
    lane = np.arange(32)
    r0, c0 = lane_coordinates(tile, lane)
    rows = {v: i for i, v in enumerate(sorted(set(r0.tolist())))}
    cols = {v: i for i, v in enumerate(sorted(set(c0.tolist())))}
    return pd.DataFrame({"lane": lane, "row": [rows[v] for v in r0.tolist()],
                         "col": [cols[v] for v in c0.tolist()]})


def pairing_figure(layouts: dict = PAIRING_LAYOUTS):
    grids = {label: lane_grid(tile) for label, tile in layouts.items()}
    figure = gemm_plots.lane_grid(grids)
    shapes = "; ".join(f"{label}: {int(g['row'].max()) + 1} x {int(g['col'].max()) + 1}"
                       for label, g in grids.items())
    return with_alt(figure, "Grids of warp 0's 32 lanes on its micro-tiles, each cell naming its lane, "
                    f"coloured by quarter-warp ({shapes} cells): with lanes in pairs, two lanes of each "
                    "quarter-warp share a column (the same pieces of B) and lanes share rows (pieces of A).")


def pipeline_figure(tiles: int = 4):
    timelines = {"one buffer": pipeline_timeline(tiles),
                 "two buffers": pipeline_timeline(tiles, double_buffer=True)}
    figure = gemm_plots.pipeline_timelines(timelines)
    ends = "; ".join(f"{label}: {t['end'].max():.2f}" for label, t in timelines.items())
    return with_alt(figure, f"Two timelines of {tiles} k-tiles of one block, bars for global loads, stores "
                    "to shared memory and FMAs: with two buffers the next tile's loads overlap the FMAs. End "
                    f"times in units of one k-tile's FMAs: {ends}.")


def figures(result: LessonResult, roof: dict) -> dict:
    """Each step as a share of cuBLAS, the steps on the measured roof, the tile search as a heatmap,
    shared wavefronts per warp per k-step (the pair rule beside ncu) and, where the result has its
    counters, the stall reasons of steps 11 and 12 beside cuBLAS."""
    out = {"progression": progression_figure(result), "roofline": roofline_figure(result, roof),
           "search": search_figure(result), "wavefronts": wavefront_figure(result)}
    if all(case in result.evidence.ncu for case in STALL_LABELS):
        out["stalls"] = stall_figure(result)
    return out


# -------------------------------------------------------------------------------- checks

CHECK_SHAPES = [(37, 45, 13), (36, 44, 12), (33, 70, 1)]  # (M, N, K): 4-byte path, 16-byte path, K = 1
VECTOR_SHAPE = (36, 44, 12)


def check_shapes_for(name: str, simulated: bool) -> list[tuple[int, int, int]]:
    """Where check() runs a kernel. The steps: every path on the simulator; on a GPU each 16-byte
    kernel's 4-byte twin is a second big compile, so there only where a section runs it. The
    search's candidates: the 16-byte path (their twins never run), in either mode."""
    generated = _generated_tile(name) is not None
    if name in TUNE:
        return [VECTOR_SHAPE]
    if simulated or not generated or AWKWARD in shapes_for(name):
        return CHECK_SHAPES
    return [VECTOR_SHAPE]


def check(shapes=None, names=None) -> pd.DataFrame:
    """Every step and tile candidate against a float64 reference on shapes that are no multiple of
    any tile, K = 1 included; the error must stay within the FP32 bound K u |A||B|. ``shapes``
    (M, N, K) replaces ``check_shapes_for``; the search's candidates still run only where their
    16-byte loads do (K and N multiples of 4: their 4-byte twins are never timed)."""
    rng = np.random.default_rng()
    rows = []
    names = names or [*steps.BY_NAME, *TUNE]
    for m, n, k in shapes or CHECK_SHAPES:
        a = rng.standard_normal((m, k), dtype=np.float32)
        b = rng.standard_normal((k, n), dtype=np.float32)
        for name in names:
            if shapes is None and (m, n, k) not in check_shapes_for(name, SIMULATED):
                continue
            if name in TUNE and (k % 4 or n % 4):
                continue
            c = codegen.gemm_generated(a, b, TUNE[name]) if name in TUNE else steps.matmul(a, b, name)
            report = error_report(c, a, b)
            ok = report["finite"] and report["worst_share_of_bound"] <= 1.0
            rows.append(check_row(f"{name} {m}x{k} @ {k}x{n}", ok,
                                  f"relative error {report['relative_error']:.1e}, worst element "
                                  f"{report['worst_share_of_bound']:.3f} of the FP32 bound"))
    return pd.DataFrame(rows)
