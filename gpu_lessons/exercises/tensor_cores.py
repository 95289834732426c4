"""Exercises of lesson 7 (tensor cores and cp.async): their checks and reference solutions.

1. The accumulator's layout: which lane holds C[row][col] of an m16n8k8 MMA, in which register;
   checked on all 128 elements against the PTX layout the simulator (and the H200) use.
2. A tile through shared memory with cp.async: copy, commit, wait, barrier; checked by running the
   kernel (one warp) against NumPy, and by the simulator's cp.async log: the tile must arrive by
   cp.async copies that landed (plain stores do not count). On a GPU the log comes from the same
   kernel run through the traffic tracer, and the compiled kernel is checked against NumPy too.
3. A warp tile's work per 16-deep slab of shared memory: MMAs, 16-byte loads of A, 4-byte loads of B;
   checked against the generated kernels' source for several tiles.
4. Predict a number: a kernel's duration from its warp instructions, its issue slots' use and the SMs
   that hold a block; checked against Nsight Compute's durations of lesson 6's kernel, its cp.async
   pipelines and cuBLAS SGEMM at 2048^3 in the H200 recording (within 3%), and on one made-up kernel.
"""

from __future__ import annotations

import re

import numpy as np
from numba import cuda, float32

from .. import SIMULATED, gates, lessons, ptx
from ..kernels import tc_codegen
from ..lessons import tensor_cores as lesson
from ..sim.ptx import c_fragment, cp_async_log
from ..sim.trace import trace
from . import guarded, report

# ----------------------------------------------------------------------------- exercise 1


def check_c_owner(c_owner) -> object:
    """``c_owner(row, col)`` returns (lane, register): who holds C[row][col] (register 0..3 = c0..c3)."""
    name = "exercise 1 (who holds C[row][col])"

    def attempt():
        truth = {
            cell: (lane, register) for lane in range(32) for register, cell in enumerate(c_fragment(lane))
        }
        for (row, col), expected in sorted(truth.items()):
            got = c_owner(row, col)
            if got is None or tuple(int(v) for v in got) != expected:
                return report(
                    name,
                    False,
                    f"C[{row}][{col}]: you say {got}, it is lane {expected[0]}, register "
                    f"c{expected[1]}. Hint: lane (g, t) with g = lane // 4, t = lane % 4 holds "
                    "C[g][2t], C[g][2t+1], C[g+8][2t], C[g+8][2t+1] in c0..c3",
                )
        return report(name, True, "all 128 elements of C: 4 per lane, rows g and g+8, columns 2t and 2t+1")

    return guarded(name, attempt)


def solution_c_owner(row, col):
    g, t = row % 8, col // 2
    return 4 * g + t, 2 * (row // 8) + col % 2


# ----------------------------------------------------------------------------- exercise 2

TILE_FLOATS = 128  # one warp, 16 bytes a lane


def _run_tile_kernel(kernel, x: np.ndarray) -> np.ndarray:
    y = np.full(TILE_FLOATS, np.nan, np.float32)
    d_y = cuda.to_device(y)
    kernel[1, 32](cuda.to_device(x), d_y)
    return d_y.copy_to_host()


def check_cp_async_tile(kernel) -> object:
    """``kernel(x, y)``, one block of 32 threads: y[i] = x[127 - i], x staged in shared memory by cp.async."""
    name = "exercise 2 (a tile through shared memory with cp.async)"

    def attempt():
        x = np.random.default_rng().standard_normal(TILE_FLOATS, dtype=np.float32)
        cannot = "" if SIMULATED else gates.missing(gates.Needs(cc=(8, 0), why="cp.async"))
        with cp_async_log() as log:  # what the simulated cp.async copies did
            if SIMULATED:
                y = _run_tile_kernel(kernel, x)
            else:  # the same kernel on the simulator, through the tracer, for the log
                y = np.full(TILE_FLOATS, np.nan, np.float32)
                trace(kernel, 1, 32, x, y)
        if cannot:  # a GPU before sm_80 cannot run it: the simulator's run is the check
            print(f"{name}: the kernel {cannot}: checked on the simulator only")
        elif not SIMULATED:
            y = _run_tile_kernel(kernel, x)  # the compiled kernel, on the GPU
        expected = x[::-1]
        wrong = np.flatnonzero(~(y == expected))
        if len(wrong):
            i = int(wrong[0])
            seen = (
                "NaN: the tile's poison, no copy had landed there"
                if np.isnan(y[i])
                else "0: a copy that read fewer bytes than it wrote (the rest is zero-filled)"
                if y[i] == 0
                else f"{y[i]:.4f}"
            )
            return report(
                name,
                False,
                f"{len(wrong)} of {TILE_FLOATS} outputs wrong; y[{i}] is {seen}, expected "
                f"{expected[i]:.4f}. Hint: each lane copies 16 bytes (4 floats, src_bytes 16); the copy "
                "lands only after commit and wait_group(0), and a barrier makes every lane's copy "
                "visible to the others",
            )
        missing = set(range(4 * TILE_FLOATS)) - log.landed_bytes()
        if missing:
            how = "no cp.async was issued" if not log.issued else f"{len(log.issued)} cp.async issued"
            return report(
                name,
                False,
                f"the outputs are right, but {len(missing)} of the tile's {4 * TILE_FLOATS} bytes did not "
                f"arrive by a cp.async that landed ({how}): they were stored by plain writes. Hint: the "
                "exercise is the asynchronous copy: ptx.cp_async16(tile, 4 * t, x, 4 * t, 16), then commit "
                "and wait, with no store of your own into the tile",
            )
        landed = f"{len(log.issued)} cp.async copies landed the tile's {4 * TILE_FLOATS} bytes"
        return report(name, True, f"{landed}, each lane's read by another lane")

    return guarded(name, attempt)


@cuda.jit
def solution_cp_async_tile(x, y):
    tile = cuda.shared.array(128, float32)
    t = cuda.threadIdx.x
    for q in range(4):
        tile[4 * t + q] = float32(np.nan)
    cuda.syncthreads()
    ptx.cp_async16(tile, 4 * t, x, 4 * t, 16)
    ptx.cp_async_commit_group()
    ptx.cp_async_wait_group(0)
    cuda.syncthreads()
    for q in range(4):
        y[4 * t + q] = tile[127 - 4 * t - q]


# ----------------------------------------------------------------------------- exercise 3

SLAB_TILES = ((64, 32), (64, 64), (32, 32), (16, 8), (32, 16))  # (wm, wn): the lesson's and others


def generated_per_slab(wm: int, wn: int) -> tuple[int, int, int]:
    """Counted in the generated source of a tile with this warp tile and one 16-deep slab: MMAs, 16-byte
    shared loads (of A) and 4-byte shared loads (of B), per warp."""
    slabs = 2  # a 32-deep tile (two slabs): its copies spread evenly over the block's threads
    tile = tc_codegen.TcTile(bm=wm, bn=max(32, wn), bk=16 * slabs, wm=wm, wn=wn, stages=2)
    source = tc_codegen.kernel_source(tile)
    loop = source[source.index("for tile in range(tiles):") : source.index("# write the accumulators")]
    b_loads = len(re.findall(r"smem\[sb \+ cb", loop))
    return loop.count("mma_tf32(") // slabs, loop.count("load4_shared(") // slabs, b_loads // slabs


def check_per_slab(per_slab) -> object:
    """``per_slab(wm, wn)`` returns (MMAs, 16-byte A loads, 4-byte B loads) of one warp per 16-deep slab."""
    name = "exercise 3 (a warp tile's work per slab)"

    def attempt():
        for wm, wn in SLAB_TILES:
            got = per_slab(wm, wn)
            expected = generated_per_slab(wm, wn)
            if got is None or tuple(int(v) for v in got) != expected:
                return report(
                    name,
                    False,
                    f"warp tile {wm}x{wn}: you say {got}, the generated kernel does "
                    f"{expected[0]} MMAs, {expected[1]} 16-byte loads of A and {expected[2]} 4-byte "
                    "loads of B per slab. Hint: a slab is 16 deep, two k-steps of 8; a lane's one "
                    "16-byte load of A covers 4 k (rows g and g+8: two loads per 16 rows)",
                )
        wm, wn = 64, 64
        mmas, a, b = generated_per_slab(wm, wn)
        return report(
            name,
            True,
            f"e.g. 64x64: {mmas} MMAs from {a + b} shared loads "
            f"({mmas / (a + b):.2f} MMAs per load; 64x32: "
            f"{generated_per_slab(64, 32)[0] / sum(generated_per_slab(64, 32)[1:]):.2f})",
        )

    return guarded(name, attempt)


def solution_per_slab(wm, wn):
    m_tiles, n_tiles = wm // 16, wn // 8
    return 2 * m_tiles * n_tiles, 2 * m_tiles, 4 * n_tiles


# ----------------------------------------------------------------------------- exercise 4

PREDICT_TOLERANCE = 0.03
MADE_UP = {"instructions": 250_000_000, "issue_active_pct": 62.5, "busy_sms": 66}  # in no recording


def check_issue_time(predicted_us) -> object:
    """``predicted_us(instructions, issue_active_pct, busy_sms)``: a kernel's duration in microseconds,
    held to Nsight Compute's durations at 2048^3 in the H200 recording (within 3%) and to the model on a
    made-up kernel."""
    name = "exercise 4 (predict a kernel's time from its issue slots)"
    hint = ("Hint: every SM that holds a block has 4 schedulers, each issuing at most one warp instruction "
            "per cycle, at 1.98 GHz; issue_active_pct is the percentage of those cycles that issue one; "
            "1 us = 1,000 ns")

    def attempt():
        result = lessons.load(lesson.NAME, live=False)
        truth = lesson.issue_time_model(result)
        clock = float(result.meta["sm_clock_mhz"])
        cases = [(kernel, row.instructions, row.issue_active, int(row.busy_sms), row.measured_us)
                 for kernel, row in truth.iterrows()]
        made_up = lesson.issue_time(MADE_UP["instructions"], MADE_UP["issue_active_pct"], MADE_UP["busy_sms"],
                                    clock)
        cases.append(("a made-up kernel", MADE_UP["instructions"], MADE_UP["issue_active_pct"],
                      MADE_UP["busy_sms"], made_up))
        for kernel, instructions, issue, busy, expected in cases:
            got = predicted_us(instructions, issue, busy)
            if got is None or not np.isfinite(float(got)):
                return report(name, False, f"{kernel}: return microseconds, got {got}. {hint}")
            error = float(got) / expected - 1
            if abs(error) > PREDICT_TOLERANCE:
                given = "the model gives" if kernel.startswith("a made-up") else "measured"
                return report(
                    name,
                    False,
                    f"{kernel} ({instructions / 1e6:.1f} M warp instructions, issue slots {issue}% busy, "
                    f"{busy} SMs): you predict {float(got):.1f} us, {error:+.1%} from the "
                    f"{expected:.1f} us {given} (allowed: within {PREDICT_TOLERANCE:.0%}). {hint}",
                )
        worst = truth["error"].abs().max()
        return report(
            name,
            True,
            f"within {PREDICT_TOLERANCE:.0%} of all {len(truth)} measured kernels (the model's worst: "
            f"{worst:.1%}): at one block per SM, time is instructions over the issue slots used",
        )

    return guarded(name, attempt)


def solution_issue_time(instructions, issue_active_pct, busy_sms):
    schedulers, clock_hz = 4, 1.98e9
    cycles = instructions / (schedulers * busy_sms * issue_active_pct / 100)
    return cycles / clock_hz * 1e6
