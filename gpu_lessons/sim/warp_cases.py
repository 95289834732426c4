"""Fixed warp-primitive kernels and inputs, to compare the simulator with a GPU bit for bit.

Each ``WarpCase`` is a kernel, a launch configuration and deterministic inputs (a NumPy generator
seeded from ``SEED`` and the case's name). Every case uses only behaviour the hardware defines: no
shuffle reads a lane outside its mask, masks name only lanes that exist, and no collective waits
for a lane that exited. ``run_cases()`` launches them all, on whichever device ``gpu_lessons``
picked, and returns each case's output array; ``benchmarks/record_warp_primitives.py`` saves a GPU's,
and ``tests/test_sim_warp.py`` compares the simulator's with it.
"""

from __future__ import annotations

import hashlib
import zlib
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from numba import cuda

from .warp import SHFL_MODES, WARP_SIZE, shfl_source_lane

SEED = 2024_06_01
FULL = 0xFFFFFFFF
OUTPUT_SENTINEL = -7  # what output elements no lane writes keep (as the output's dtype)


# --- Kernels --------------------------------------------------------------------------------------


@cuda.jit(device=True)
def _thread_in_block():
    """Linear thread index in the block: x + bx*(y + by*z), as the hardware numbers lanes."""
    return cuda.threadIdx.x + cuda.blockDim.x * (cuda.threadIdx.y + cuda.blockDim.y * cuda.threadIdx.z)


@cuda.jit(device=True)
def _threads_per_block():
    return cuda.blockDim.x * cuda.blockDim.y * cuda.blockDim.z


@cuda.jit
def lane_ids(out):
    t = _thread_in_block()
    g = cuda.blockIdx.x * _threads_per_block() + t
    out[0, g] = cuda.laneid
    out[1, g] = t


@cuda.jit
def masked_shuffles(values, b, warp_masks, out):
    """All four shuffles by the lanes of each warp's mask; b holds each lane's b operand per mode."""
    t = _thread_in_block()
    g = cuda.blockIdx.x * _threads_per_block() + t
    lane = t % 32
    m = warp_masks[cuda.blockIdx.x, t // 32]
    if (m >> lane) & 1:
        v = values[g]
        out[0, g] = cuda.shfl_sync(m, v, b[0, g])
        out[1, g] = cuda.shfl_up_sync(m, v, b[1, g])
        out[2, g] = cuda.shfl_down_sync(m, v, b[2, g])
        out[3, g] = cuda.shfl_xor_sync(m, v, b[3, g])


@cuda.jit
def warp_sum_down(values, out):
    """The classic reduction: after it, lane 0 holds the warp's sum; every lane's partial is kept."""
    g = cuda.grid(1)
    v = values[g]
    for delta in (16, 8, 4, 2, 1):
        v += cuda.shfl_down_sync(FULL, v, delta)
    out[g] = v


@cuda.jit
def warp_allreduce_xor(values, out):
    """Butterfly reduction: every lane ends with the warp's sum, added in its own order."""
    g = cuda.grid(1)
    v = values[g]
    for lane_mask in (1, 2, 4, 8, 16):
        v += cuda.shfl_xor_sync(FULL, v, lane_mask)
    out[g] = v


@cuda.jit
def warp_scan_up(values, out):
    """Inclusive prefix sum with shfl_up_sync (Hillis-Steele)."""
    g = cuda.grid(1)
    lane = cuda.threadIdx.x % 32
    v = values[g]
    for delta in (1, 2, 4, 8, 16):
        n = cuda.shfl_up_sync(FULL, v, delta)
        if lane >= delta:
            v += n
    out[g] = v


@cuda.jit
def broadcast_idx(values, sources, out):
    """shfl_sync from a per-warp source lane (one of the warp's existing lanes)."""
    t = _thread_in_block()
    g = cuda.blockIdx.x * _threads_per_block() + t
    lanes = min(32, _threads_per_block() - (t // 32) * 32)
    m = FULL if lanes == 32 else (1 << lanes) - 1
    out[g] = cuda.shfl_sync(m, values[g], sources[cuda.blockIdx.x, t // 32])


@cuda.jit
def votes(predicates, warp_masks, out):
    t = _thread_in_block()
    g = cuda.blockIdx.x * _threads_per_block() + t
    lane = t % 32
    m = warp_masks[cuda.blockIdx.x, t // 32]
    if (m >> lane) & 1:
        p = predicates[g]
        out[0, g] = cuda.ballot_sync(m, p)
        out[1, g] = cuda.all_sync(m, p)
        out[2, g] = cuda.any_sync(m, p)
        out[3, g] = cuda.eq_sync(m, p)
        out[4, g] = cuda.ballot_sync(m, p > 3)  # a boolean predicate
        out[5, g] = cuda.all_sync(m, p != 0)


@cuda.jit
def syncwarp_exchange(values, partners, warp_masks, out):
    """Lanes trade values through shared memory, ordered by syncwarp(mask) alone."""
    buffer = cuda.shared.array(128, np.float64)
    t = _thread_in_block()
    g = cuda.blockIdx.x * _threads_per_block() + t
    lane = t % 32
    base = (t // 32) * 32
    m = warp_masks[cuda.blockIdx.x, t // 32]
    if (m >> lane) & 1:
        buffer[t] = values[g]
        cuda.syncwarp(m)
        got = buffer[base + partners[0, g]]
        cuda.syncwarp(m)
        buffer[t] = got * 3.0
        cuda.syncwarp(m)
        out[g] = buffer[base + partners[1, g]]


@cuda.jit
def syncwarp_default(values, out):
    buffer = cuda.shared.array(64, np.int64)
    t = cuda.threadIdx.x
    buffer[t] = values[cuda.grid(1)]
    cuda.syncwarp()
    out[cuda.grid(1)] = buffer[t ^ 5]


@cuda.jit
def activemask_divergent_loop(out):
    """Lanes 0-15 loop 3 times, the others once: 0xffffffff, 0x0000ffff twice, then reconverged."""
    t = _thread_in_block()
    g = cuda.blockIdx.x * _threads_per_block() + t
    trips = 3 if t % 32 < 16 else 1
    for trip in range(trips):
        out[trip, g] = cuda.activemask()
    out[3, g] = cuda.activemask()


@cuda.jit
def activemask_branches(out):
    """Three branches, each storing something of its own first, then activemask; then converged."""
    t = _thread_in_block()
    g = cuda.blockIdx.x * _threads_per_block() + t
    lane = t % 32
    if lane % 3 == 0:
        out[0, g] = lane * 7
        out[1, g] = cuda.activemask()
    elif lane < 20:
        out[0, g] = -lane
        out[2, g] = cuda.activemask()
    else:
        out[0, g] = lane + 1000
        out[3, g] = cuda.activemask()
    out[4, g] = cuda.activemask()


@cuda.jit
def activemask_after_exit(keep, out):
    """Lanes at or past keep[warp] return; activemask excludes exited lanes."""
    t = _thread_in_block()
    g = cuda.blockIdx.x * _threads_per_block() + t
    if t % 32 >= keep[cuda.blockIdx.x, t // 32]:
        return
    out[0, g] = cuda.activemask()
    out[1, g] = cuda.ballot_sync(cuda.activemask(), t % 2)


@cuda.jit
def activemask_before_barrier(out):
    """Lanes below 16 ask while the others already wait in syncthreads."""
    t = _thread_in_block()
    g = cuda.blockIdx.x * _threads_per_block() + t
    if t % 32 < 16:
        out[0, g] = cuda.activemask()
    cuda.syncthreads()
    out[1, g] = cuda.activemask()


# --- Inputs ---------------------------------------------------------------------------------------


def _block_size(block) -> int:
    return int(np.prod(block))


def _warps_per_block(block) -> int:
    return -(-_block_size(block) // WARP_SIZE)


def _lanes_in_warp(block, warp: int) -> int:
    return min(WARP_SIZE, _block_size(block) - warp * WARP_SIZE)


def _values(rng: np.random.Generator, dtype, count: int) -> np.ndarray:
    """Random values over the type's range, with signed zeros, infinities and a subnormal."""
    dtype = np.dtype(dtype)
    if dtype.kind == "i":
        info = np.iinfo(dtype)
        return rng.integers(info.min, info.max, count, dtype=dtype, endpoint=True)
    # Powers of two, not of ten: ldexp is exact, so the inputs (and the recording's fingerprints)
    # are the same bits on every CPU (NumPy's vectorised pow differs in the last bit between CPUs).
    values = np.ldexp(rng.standard_normal(count), rng.integers(-100, 100, count)).astype(dtype)
    specials = [-0.0, np.inf, -np.inf, np.finfo(dtype).smallest_subnormal]
    values[rng.choice(count, len(specials), replace=False)] = specials
    return values


def _warp_masks(rng: np.random.Generator, grid: int, block, full: bool) -> np.ndarray:
    """One mask per (block, warp), naming only existing lanes; `full` names all of them."""
    masks = np.zeros((grid, _warps_per_block(block)), dtype=np.int64)
    for index in np.ndindex(masks.shape):
        existing = (1 << _lanes_in_warp(block, index[1])) - 1
        choice = (sum(index) + int(rng.integers(4))) % 4
        if full or choice == 0:
            mask = existing
        elif choice == 1:  # one lane alone
            mask = 1 << int(rng.integers(_lanes_in_warp(block, index[1])))
        else:  # a random subset, dense or sparse
            mask = int(rng.integers(1, 1 << 32)) & existing
            if choice == 3:
                mask &= int(rng.integers(1, 1 << 32))
        masks[index] = mask or existing
    return masks


def _defined_operands(rng: np.random.Generator, warp_masks: np.ndarray, block) -> np.ndarray:
    """Per mode and thread, a b operand in -8..40 whose source lane is in the mask (or invalid)."""
    grid, threads = warp_masks.shape[0], _block_size(block)
    operands = np.zeros((len(SHFL_MODES), grid * threads), dtype=np.int32)
    for g in range(grid * threads):
        lane, warp = (g % threads) % WARP_SIZE, (g % threads) // WARP_SIZE
        mask = int(warp_masks[g // threads, warp])
        if not mask >> lane & 1:
            continue
        for row, mode in enumerate(SHFL_MODES):
            defined = [b for b in range(-8, 41) if _source_defined(mode, lane, b, mask)]
            operands[row, g] = rng.choice(defined)
    return operands


def _source_defined(mode: str, lane: int, b: int, mask: int) -> bool:
    source, valid = shfl_source_lane(mode, lane, b)
    return not valid or bool(mask >> source & 1)


def _output(shape, dtype) -> np.ndarray:
    return np.full(shape, np.int64(OUTPUT_SENTINEL).astype(dtype), dtype=dtype)


# --- Cases ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class WarpCase:
    """A kernel, its launch configuration, and a function making its arguments (output last)."""

    name: str
    kernel: Callable
    grid: int
    block: int | tuple[int, ...]
    make_args: Callable[[np.random.Generator, int, int | tuple[int, ...]], tuple]

    def args(self) -> tuple:
        rng = np.random.default_rng([SEED, zlib.crc32(self.name.encode())])
        return self.make_args(rng, self.grid, self.block)

    def run(self) -> np.ndarray:
        args = self.args()
        self.kernel[self.grid, self.block](*args)
        return args[-1]

    def fingerprint(self) -> str:
        """Hash of the launch configuration and input bytes: a recording is stale if it changed."""
        digest = hashlib.sha256(f"{self.name} {self.grid} {self.block}".encode())
        for arg in self.args():
            digest.update(f"{arg.dtype.str}{arg.shape}".encode())
            digest.update(np.ascontiguousarray(arg).tobytes())
        return digest.hexdigest()[:16]


def _shuffle_args(dtype, full: bool):
    def make(rng, grid, block):
        n = grid * _block_size(block)
        masks = _warp_masks(rng, grid, block, full)
        return _values(rng, dtype, n), _defined_operands(rng, masks, block), masks, _output(
            (len(SHFL_MODES), n), dtype)

    return make


def _sum_args(dtype, low: int, high: int):
    def make(rng, grid, block):
        n = grid * _block_size(block)
        if np.dtype(dtype).kind == "i":
            values = rng.integers(low, high, n, dtype=dtype)
        else:
            values = rng.uniform(low, high, n).astype(dtype)
        return values, _output(n, dtype)

    return make


def _broadcast_args(rng, grid, block):
    n = grid * _block_size(block)
    sources = np.array([[rng.integers(_lanes_in_warp(block, w)) for w in range(_warps_per_block(block))]
                        for _ in range(grid)], dtype=np.int32)
    return _values(rng, np.float64, n), sources, _output(n, np.float64)


def _vote_args(rng, grid, block):
    n = grid * _block_size(block)
    predicates = rng.choice(np.array([0, 1, 5, -3, 2**31 - 1], dtype=np.int32), n)
    warps = grid * _warps_per_block(block)
    for w in range(0, warps, 3):  # some warps all true, some all false: all_sync/eq_sync vary
        start, stop = w * WARP_SIZE, min(n, (w + 1) * WARP_SIZE)
        predicates[start:stop] = 7 if w % 2 else 0
    masks = _warp_masks(rng, grid, block, full=False)
    return predicates, masks, _output((6, n), np.int32)


def _syncwarp_args(rng, grid, block):
    n = grid * _block_size(block)
    masks = _warp_masks(rng, grid, block, full=False)
    partners = np.zeros((2, n), dtype=np.int32)
    for g in range(n):
        t = g % _block_size(block)
        lanes = _lanes_of(int(masks[g // _block_size(block), t // WARP_SIZE]))
        partners[:, g] = rng.choice(lanes, 2)
    return _values(rng, np.float64, n), partners, masks, _output(n, np.float64)


def _lanes_of(mask: int) -> list[int]:
    return [lane for lane in range(WARP_SIZE) if mask >> lane & 1]


def _keep_args(rng, grid, block):
    keep = rng.integers(1, WARP_SIZE + 1, (grid, _warps_per_block(block))).astype(np.int32)
    return keep, _output((2, grid * _block_size(block)), np.int64)


def _out_only(rows: int, dtype):
    def make(rng, grid, block):
        return (_output((rows, grid * _block_size(block)), dtype),)

    return make


CASES: tuple[WarpCase, ...] = (
    WarpCase("laneid_2d", lane_ids, 2, (7, 9), _out_only(2, np.int32)),
    WarpCase("laneid_3d", lane_ids, 1, (3, 5, 4), _out_only(2, np.int32)),
    *(WarpCase(f"shfl_full_{np.dtype(t).name}", masked_shuffles, 2, 64, _shuffle_args(t, True))
      for t in (np.int32, np.int64, np.float32, np.float64)),
    *(WarpCase(f"shfl_masked_{np.dtype(t).name}", masked_shuffles, 2, 70, _shuffle_args(t, False))
      for t in (np.int32, np.int64, np.float32, np.float64)),
    WarpCase("shfl_masked_2d_float32", masked_shuffles, 2, (7, 9), _shuffle_args(np.float32, False)),
    WarpCase("shfl_full_2d_int64", masked_shuffles, 1, (7, 9), _shuffle_args(np.int64, True)),
    WarpCase("broadcast_idx_float64", broadcast_idx, 2, 48, _broadcast_args),
    WarpCase("warp_sum_down_float32", warp_sum_down, 2, 64, _sum_args(np.float32, -1, 1)),
    WarpCase("warp_allreduce_xor_float64", warp_allreduce_xor, 1, 64, _sum_args(np.float64, -1, 1)),
    WarpCase("warp_scan_up_int32", warp_scan_up, 1, 64, _sum_args(np.int32, -1000, 1000)),
    WarpCase("votes_70", votes, 2, 70, _vote_args),
    WarpCase("votes_2d", votes, 1, (7, 9), _vote_args),
    WarpCase("syncwarp_exchange_70", syncwarp_exchange, 2, 70, _syncwarp_args),
    WarpCase("syncwarp_default", syncwarp_default, 1, 64, _sum_args(np.int64, -(2**40), 2**40)),
    WarpCase("activemask_divergent_loop", activemask_divergent_loop, 1, 48,
             _out_only(4, np.uint32)),
    WarpCase("activemask_branches", activemask_branches, 1, (7, 9), _out_only(5, np.int64)),
    WarpCase("activemask_after_exit", activemask_after_exit, 2, 64, _keep_args),
    WarpCase("activemask_before_barrier", activemask_before_barrier, 1, 70,
             _out_only(2, np.uint32)),
)


def fingerprints() -> dict[str, str]:
    return {case.name: case.fingerprint() for case in CASES}


def run_cases(names=None) -> dict[str, np.ndarray]:
    """Launch every case (or those named) on the current device; each case's output by name."""
    chosen = [case for case in CASES if names is None or case.name in names]
    return {case.name: case.run() for case in chosen}
