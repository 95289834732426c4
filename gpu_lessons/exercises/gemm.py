"""Exercises of lesson 6 (GEMM): their checks and reference solutions.

1. The shared-tiled kernel's missing loop: the tiles are loaded and synchronised; multiply them.
   Checked against a float64 reference on a shape that is no multiple of the 16x16 tile, and with
   the traffic counter for the reuse: two global loads per thread per tile, not two per k.
2. A 2x2 register micro-tile (the notes' T_M = T_N = 2): each thread computes four outputs and reads
   two values of A and two of B per k. Checked for correctness at the edges, and with the traffic
   counter for the reuse: 4 global loads per k per thread, not 8.
3. Predict a number: the 32-byte sectors a block-tiled GEMM loads from global memory, as a function
   of the shape and the block tile; checked against Nsight Compute's counts recorded on the H200 for
   five kernels (16x16 to cuBLAS's 256x128) within 0.5%.
4. A conflict-free lane mapping: each lane of a warp reads two 4-wide pieces of one 256-float row of
   shared memory with 16-byte loads; every column read once and, by the traffic counter, no bank
   conflict.
5. Predict the shared wavefronts one warp needs per k-step, as a function of its micro-tile and lane
   layout (step 11's 8x8 micro-tile laid out 4 x 8 in pairs named, others drawn at random); checked with
   the traffic counter on one-warp tiles.
"""

from __future__ import annotations

import sys
from functools import cache

import numpy as np
from numba import cuda

from ..kernels import gemm_codegen as codegen
from ..kernels import gemm_tiled as tiled
from ..lessons import gemm as lesson
from ..lessons.gemm import error_report
from ..mode import choose_mode
from ..results import read_result
from ..sim import trace
from ..vector import load4_shared
from . import guarded, races, report
from .reach import answers, reaches

# ----------------------------------------------------------------------------- every exercise


def _calls_an_answer(function, helpers=()) -> str | None:
    """A refusal if the learner's function can call one of the given course helpers or any reference
    solution of this lesson (``solution_*``, its own exercise's included: an alias of it is no answer),
    else None."""
    module = sys.modules[__name__]
    solutions = {name: getattr(module, name) for name in dir(module) if name.startswith("solution_")}
    for helper in (*helpers, *answers(module)):
        if reaches(function, helper):
            called = getattr(helper, "py_func", helper)
            place = f"{called.__module__.removeprefix('gpu_lessons.')}.{called.__name__}"
            named = [name for name, s in solutions.items() if s is helper]
            if named:  # exercise 1's is the lesson's gemm_tiled_kernel: named as the solution it is here
                also = f" (here {place})" if called.__name__ != named[0] else ""
                return (f"your code calls exercises.{named[0]}, a reference solution{also}: the exercise is "
                        "to work it out yourself, not to call the course's own answer")
            return (f"your code calls {place}, a course helper: the exercise is to work it out yourself, not "
                    "to call the course's own answer")
    return None

# ----------------------------------------------------------------------------- exercise 1

TILED_SHAPE = (20, 21, 17)  # M, K, N: no multiple of 16; 2 x 2 blocks, 2 tiles along K
# A second shape the prose does not name (K a whole number of tiles, 4 of them, 3 blocks along M): sizes
# written into the kernel, guards that assume the last tile is partial, or a loop that stops after the
# 2 k-tiles of TILED_SHAPE fail here
TILED_SECOND_SHAPE = (33, 64, 12)


def _random_operands(m, k, n):
    rng = np.random.default_rng()
    return rng.standard_normal((m, k), dtype=np.float32), rng.standard_normal((k, n), dtype=np.float32)


def _close(c, alternative, a, b) -> bool:
    """Whether C equals another product within the FP32 bound of A @ B (written outputs only)."""
    written = ~np.isnan(c)
    bound = lesson.fp32_error_bound(a, b) + 1e-6
    return bool(np.all(np.abs(c - alternative)[written] <= 4 * bound[written]))


def _blockwise_transposed(reference, size: int) -> np.ndarray:
    """The reference with each size x size block of C transposed in place (padded with zeros: rows and
    columns past the edge of a block hold what a zero-padded tile would give)."""
    m, n = reference.shape
    side_m, side_n = -(-m // size) * size, -(-n // size) * size
    padded = np.zeros((side_m, side_n))
    padded[:m, :n] = reference
    blocks = padded.reshape(side_m // size, size, side_n // size, size)
    return blocks.transpose(0, 3, 2, 1).reshape(side_m, side_n)[:m, :n]


def _both_tiles_transposed(a, b, size: int) -> np.ndarray:
    """What a tiled kernel computes that reads a_tile[k, ty] and b_tile[tx, k] (zero-padded tiles)."""
    (m, depth), n = a.shape, b.shape[1]
    side_m, side_k, side_n = (-(-x // size) * size for x in (m, depth, n))
    pa, pb = np.zeros((side_m, side_k)), np.zeros((side_k, side_n))
    pa[:m, :depth], pb[:depth, :n] = a, b
    a4 = pa.reshape(side_m // size, size, side_k // size, size)  # [i, row, s, column]
    b4 = pb.reshape(side_k // size, size, side_n // size, size)  # [s, row, j, column]
    c4 = np.einsum("sxjk,iksy->iyjx", b4, a4)  # C[i, ty, j, tx]: over s, k, b4[s, tx, j, k] a4[i, k, s, ty]
    return c4.reshape(side_m, side_n)[:m, :n]


def _k_description(missing: list[int], depth: int, tile: int | None) -> str:
    ks = ", ".join(str(k) for k in missing)
    if tile and len(missing) > 1 and missing == _last_tile(depth, tile):
        if depth % tile == 0:
            return (f"k = {_spans(missing)}, the whole last k-tile ({len(missing)} deep: {depth} is a "
                    f"multiple of {tile}, so the last tile is a whole one and its loop runs {tile} k, not "
                    f"{depth} % {tile} = 0)")
        return (f"k = {_spans(missing)}, the whole last k-tile ({len(missing)} deep: {depth} is no multiple "
                f"of {tile}, and the partial tile counts too)")
    if len(missing) > 1 and missing == list(range(missing[0], depth)):
        return (f"k = {_spans(missing)}: every k from {missing[0]} on (does the loop over k stop at "
                f"{missing[0]}, short of K = {depth}?)")
    if tile and len(missing) > 1 and missing == _last_of_each_tile(depth, tile):
        tail = depth - (depth - 1) // tile * tile
        return f"k = {ks}: the last k of each {tile}-deep tile (the last tile is {tail} deep)"
    if tile and all(k % tile == tile - 1 for k in missing):
        return f"k = {ks} (k mod {tile} = {tile - 1}: a tile's last k)"
    if tile and all(k % tile == 0 for k in missing):
        return f"k = {ks} (k mod {tile} = 0: a tile's first k)"
    if missing == [depth - 1]:
        return f"k = {ks}: the last k-step"
    if missing == [0]:
        return f"k = {ks}: the first k-step"
    if tile and len(missing) > 1:
        places = sorted({k % tile for k in missing})
        share = "half" if len(places) == tile // 2 else f"{len(places)} of {tile}"
        return f"k = {_spans(missing)}: places {_spans(places)} of each {tile}-deep tile, {share} of its k"
    return f"k = {ks}"


def _last_tile(depth: int, tile: int) -> list[int]:
    return list(range((depth - 1) // tile * tile, depth))


def _last_of_each_tile(depth: int, tile: int) -> list[int]:
    return [min(start + tile, depth) - 1 for start in range(0, depth, tile)]


def _missing_k_candidates(depth: int, tile: int | None) -> list[list[int]]:
    """Sets of k whose products a slip in the loop's range leaves out."""
    candidates = [[k] for k in range(depth)]
    if tile:
        candidates += [list(range(r, depth, tile)) for r in range(tile)]
        candidates.append(_last_of_each_tile(depth, tile))
        candidates.append(_last_tile(depth, tile))
        # a run of places within every tile: range(8), range(8, 16), range(1, 15), ...
        candidates += [[k for k in range(depth) if not lo <= k % tile < hi]
                       for lo in range(tile) for hi in range(lo + 1, tile + 1) if hi - lo < tile - 1]
    # a loop that stops short of K (a bound written in, min(depth, 16), a cap on the k-tiles)
    candidates += [list(range(start, depth)) for start in range(1, depth - 1)]
    seen, out = set(), []
    for missing in candidates:
        if missing and len(missing) < depth and tuple(missing) not in seen:
            seen.add(tuple(missing))
            out.append(missing)
    return out


def _pattern(c, a, b, tile: int, k_tile: int | None) -> str:
    """What is wrong with C, as a fact about C (true whatever code produced it)."""
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    depth = a.shape[1]
    reference = a64 @ b64
    for times in range(2, 2 * depth + 1):
        if _close(c, times * reference, a, b):
            return (f"C is exactly {times} times A @ B, as if each product were summed {times} times: "
                    "count how often each a * b reaches c")
    for missing in _missing_k_candidates(depth, k_tile):
        kept = np.ones(depth, bool)
        kept[missing] = False
        if _close(c, a64[:, kept] @ b64[kept], a, b):
            return (f"C equals A @ B without the products of {_k_description(missing, depth, k_tile)}: "
                    "check the range of your loop over k")
    if _close(c, _blockwise_transposed(reference, tile), a, b):
        where = "each thread's 2 x 2 outputs" if tile == 2 else f"each {tile} x {tile} tile"
        return (f"C is transposed within {where}: C[i, j] holds the value that belongs at C[j, i] of the "
                "block; rows and columns (ty/tx, or 0/1 of the accumulators) are swapped somewhere")
    if k_tile and _close(c, _both_tiles_transposed(a64, b64, k_tile), a, b):
        return ("C equals what both tiles give read with their two indices in the wrong order: a_tile "
                "and b_tile are each indexed [column, row] in the products")
    if k_tile:
        for operand, product in (("B", a64 @ _blockwise_transposed(b64, k_tile)),
                                 ("A", _blockwise_transposed(a64, k_tile) @ b64)):
            if _close(c, product, a, b):
                return (f"C equals A @ B with each {k_tile} x {k_tile} tile of {operand} transposed: "
                        f"{operand.lower()}_tile is read with its two indices in the wrong order")
    wrong = np.abs(c - reference) > lesson.fp32_error_bound(a, b)
    rows, cols = np.flatnonzero(wrong.any(axis=1)), np.flatnonzero(wrong.any(axis=0))
    parity = _parity(rows, wrong.shape[0], "row") or _parity(cols, wrong.shape[1], "column")
    if parity and tile == 2:
        return parity
    if not c.any():
        return ("every output is 0: as if no product were added to acc, or each replaced the one before "
                "(the last ones, past the edge of A and B, are 0)")
    if wrong.all():
        return "every output is wrong: work one output by hand, the sum over k of A[row, k] * B[k, col]"
    return (f"{int(wrong.sum())} of {c.size} outputs are wrong, in rows {rows.min()}-{rows.max()} and "
            f"columns {cols.min()}-{cols.max()} ({len(rows)} rows, {len(cols)} columns)")


def _parity(found, size: int, word: str) -> str | None:
    """A hint when the wrong outputs fill exactly the odd (or the even) rows or columns."""
    for name, start, operand, second in (("odd", 1, "A", "a1"), ("even", 0, "A", "a0")):
        if list(found) == list(range(start, size, 2)):
            if word == "column":
                operand, second = "B", "b1" if start else "b0"
            place = "+ 1" if start else "+ 0"
            return (f"every wrong output is in an {name} {word} ({word} {place} of each thread's 2 x 2), all "
                    f"of those {word}s wrong: check how {second} is read from {operand} (its index, its "
                    "stride)")
    return None


def _spans(indices) -> str:
    """0, 1, 2, 5 -> '0-2, 5'."""
    runs, indices = [], list(indices)
    for i in indices:
        if runs and i == runs[-1][1] + 1:
            runs[-1][1] = i
        else:
            runs.append([i, i])
    return ", ".join(f"{lo}" if lo == hi else f"{lo}-{hi}" for lo, hi in runs)


def _unwritten(c, tile: int, block: int) -> str:
    """Which outputs were never written, as a pattern (true whatever code produced it)."""
    nan = np.isnan(c)
    m, n = c.shape
    count = f"{int(nan.sum())} of {c.size} outputs never written"
    written = ~nan
    if not written.any():
        return f"{count}: none at all; store the results in c"
    rows, cols = np.flatnonzero(written.any(axis=1)), np.flatnonzero(written.any(axis=0))
    parts = []
    top, left = rows.max() + 1, cols.max() + 1
    inner = nan
    whole_blocks = all(end == size or end % block == 0 for end, size in ((top, m), (left, n)))
    if (top < m or left < n) and whole_blocks and rows.min() == 0 and cols.min() == 0:
        first = " (the first block's outputs)" if top <= block and left <= block else ""
        parts.append(f"nothing outside C[0:{top}, 0:{left}]{first} is written: each block must find "
                     f"its own {block} x {block} outputs")
        inner = nan[:top, :left]
    if tile == 2 and inner.any():
        places = {(i, j): inner[i::2, j::2] for i in range(2) for j in range(2) if inner[i::2, j::2].size}
        missing = [p for p, v in places.items() if v.all()]
        if missing and all(not v.any() for p, v in places.items() if p not in missing):
            names = ", ".join(f"C[row{' + 1' if i else ''}, col{' + 1' if j else ''}]" for i, j in missing)
            parity = {(0, 0): "an even row and an even column", (0, 1): "an even row and an odd column",
                      (1, 0): "an odd row and an even column", (1, 1): "an odd row and an odd column"}
            where = ("an odd row or an odd column" if sorted(missing) == [(0, 1), (1, 0), (1, 1)]
                     else "; ".join(parity[p] for p in missing))
            parts.append(f"of each thread's 2 x 2 outputs, {names} never written (every output in {where})")
            inner = np.zeros_like(inner)
    if inner.any():
        empty_rows, empty_cols = np.flatnonzero(inner.all(axis=1)), np.flatnonzero(inner.all(axis=0))
        rest = np.delete(np.delete(inner, empty_rows, axis=0), empty_cols, axis=1)
        if not rest.any():
            said = [f"{word}{'s' if len(found) > 1 else ''} {_spans(found)}"
                    for word, found in (("row", empty_rows), ("column", empty_cols)) if len(found)]
            at_edge = all(not len(found) or found.max() == size - 1
                          for found, size in ((empty_rows, inner.shape[0]), (empty_cols, inner.shape[1])))
            parts.append(f"{' and '.join(said)} never written" + (" (the last: check your guards at the edge)"
                                                                  if at_edge else ""))
        else:
            nan_rows, nan_cols = np.flatnonzero(inner.any(axis=1)), np.flatnonzero(inner.any(axis=0))
            parts.append(f"the unwritten ones lie in rows {_spans(nan_rows)} and columns {_spans(nan_cols)}")
    return f"{count}: " + "; ".join(parts)


def _verdict(name, c, a, b, tile: int = 16, k_tile: int | None = None, block: int = 16, where: str = ""):
    """None when C is right, else the 'not yet' Result saying what is wrong (``where``: the shape, said
    first, where the check runs more than one)."""
    if np.isnan(c).any():
        return report(name, False, where + _unwritten(c, tile, block))
    errors = error_report(c, a, b)
    if errors["worst_share_of_bound"] > 1.0:
        reference = a.astype(np.float64) @ b
        worst = np.unravel_index(int(np.argmax(np.abs(c - reference))), c.shape)
        return report(name, False, f"{where}C[{worst[0]}, {worst[1]}] = {c[worst]:.5f} is wrong. "
                      f"{_pattern(c, a, b, tile, k_tile)}")
    return None


def _loads_per_thread(kernel, grid, block, a, b, c) -> tuple[float, float]:
    """Global and shared loads each launched thread executed (the traffic counter, on the simulator)."""
    counts = trace.trace(kernel, grid, block, a, b, c)
    loads = counts.by_array
    threads = int(np.prod(grid)) * int(np.prod(block))
    return tuple(float(loads[(loads["space"] == space) & (loads["op"] == "ld")]["threads"].sum()) / threads
                 for space in ("global", "shared"))


# Shared loads a thread may issue per tile: the reference's one of a_tile and one of b_tile per k (2 x 16),
# and a little slack; the tile loop run twice (its products halved) reads twice that
SHARED_LOADS_SLACK = 1.1


def _tile_race(logs: list) -> str | None:
    """A message for the first tile entry one thread writes and another reads with no barrier between."""
    for name, log in logs:
        race = races.first_race(log)
        if race:
            index, reader, writer, overwritten = race
            entry = ", ".join(map(str, index)) if isinstance(index, tuple) else index
            which = ("the next tile's load can overwrite it while another thread still multiplies: the "
                     "barrier after the products" if overwritten else
                     "the multiply can start before every thread has loaded its element: the barrier after "
                     "the loads")
            return (f"a race on {name}[{entry}]: {races.describe(writer, 2)} writes it and "
                    f"{races.describe(reader, 2)} reads it with no barrier between them ({which}). On a GPU "
                    "such a kernel is right or wrong by luck; keep both cuda.syncthreads()")
    return None


def check_tiled_kernel(kernel) -> object:
    """``kernel(a, b, c)``: C = A @ B with 16x16 shared tiles, launched on 16x16 blocks."""
    name = "exercise 1 (the shared-tiled kernel's loop)"

    def attempt():
        refused = _calls_an_answer(kernel)
        if refused:
            return report(name, False, refused)
        m, k, n = TILED_SHAPE
        a, b = _random_operands(m, k, n)
        c = np.full((m, n), np.nan, np.float32)
        grid = tiled.gemm_tiled_grid(m, n)
        logs: list = []
        on_gpu = choose_mode() == "gpu"
        with races.counted_barriers() as barriers, races.watched_shared(barriers, logs):
            if on_gpu:  # races show only among the simulator's threads: watch a simulated launch first
                trace.simulate(kernel, grid, tiled.BLOCK, a, b, c.copy())
            else:
                kernel[grid, tiled.BLOCK](a, b, c)
        race = _tile_race(logs)
        if race:
            return report(name, False, race)
        if on_gpu:
            kernel[grid, tiled.BLOCK](a, b, c)
        wrong = _verdict(name, c, a, b, tiled.TILE, tiled.TILE)
        if wrong is not None:
            return wrong
        m2, k2, n2 = TILED_SECOND_SHAPE
        a2, b2 = _random_operands(m2, k2, n2)
        c2 = np.full((m2, n2), np.nan, np.float32)
        where = f"at {m2}x{k2} @ {k2}x{n2} (right at {m}x{k} @ {k}x{n}: are sizes written in?): "
        try:
            kernel[tiled.gemm_tiled_grid(m2, n2), tiled.BLOCK](a2, b2, c2)
        except Exception as error:  # noqa: BLE001 - learner code: feedback that names the shape
            return report(name, False, f"{where}your code raised {type(error).__name__}: {error}")
        wrong = _verdict(name, c2, a2, b2, tiled.TILE, tiled.TILE, where=where)
        if wrong is not None:
            return wrong
        tiles = -(-k // tiled.TILE)
        per_thread, shared_per_thread = _loads_per_thread(kernel, grid, tiled.BLOCK, a, b, c)
        if per_thread > 2 * tiles:  # one element of A and one of B per thread and tile
            return report(name, False, f"right answer, but {per_thread:.1f} global loads per thread for "
                          f"{tiles} tiles: multiply a_tile and b_tile, which the block has already loaded")
        if shared_per_thread > SHARED_LOADS_SLACK * 2 * tiled.TILE * tiles:
            return report(name, False, f"right answer, but {shared_per_thread:.1f} shared loads per thread "
                          f"for {tiles} tiles of {tiled.TILE} k: each product needs one value of a_tile and "
                          "one of b_tile; is a tile's products loop run more than once (or a value read "
                          "twice)?")
        return report(name, True, f"{m}x{k} @ {k}x{n} and {m2}x{k2} @ {k2}x{n2} match float64 within the "
                      "FP32 bound, with "
                      f"{per_thread:.1f} global loads per thread: every element of A and B loaded into "
                      f"shared memory is used {tiled.TILE} times")

    return guarded(name, attempt)


solution_tiled_kernel = tiled.gemm_tiled_kernel

# ----------------------------------------------------------------------------- exercise 2

MICRO_BLOCK = (16, 16)  # threads; each computes 2x2 outputs, so a block covers 32x32 of C
MICRO_SHAPE = (37, 9, 35)  # M, K, N: odd, so the last row and column of micro-tiles are partial
# A second shape the prose does not name, every dimension another (M and N even: the last micro-tiles
# whole; 3 blocks along N; K = 24, longer than 9 and than 16): a kernel with the first shape's sizes
# written in, guards that take the last micro-tile to be partial, or a k loop capped at 16 fails here.
MICRO_SHAPES = (MICRO_SHAPE, (20, 24, 66))
# Global loads per k per thread at MICRO_SHAPE: the reference's 3.89 (interior threads 2 of A + 2 of B, edge
# threads fewer), 4.0 with the edge loads clamped instead of skipped, and a little slack; one reload of a0
# every other k (4.45) or eight loads (7.6) exceed it
MICRO_LOADS_PER_K = 4.1


def micro_grid(m: int, n: int) -> tuple[int, int]:
    return -(-n // (2 * MICRO_BLOCK[0])), -(-m // (2 * MICRO_BLOCK[1]))


def _loads_per_thread_per_k(kernel, a, b, c) -> float:
    m, k = a.shape
    n = b.shape[1]
    counts = trace.trace(kernel, micro_grid(m, n), MICRO_BLOCK, a, b, c)
    loads = counts.by_array
    loads = loads[(loads["space"] == "global") & (loads["op"] == "ld")]
    threads = -(-m // 2) * -(-n // 2)  # threads that own at least one output
    return float(loads["threads"].sum()) / (threads * k)


def check_micro_tile_kernel(kernel) -> object:
    """``kernel(a, b, c)``: thread (tx, ty) computes C[2ty:2ty+2, 2tx:2tx+2] of its block's 32x32."""
    name = "exercise 2 (a 2x2 register micro-tile)"

    def attempt():
        refused = _calls_an_answer(kernel)
        if refused:
            return report(name, False, refused)
        for m, k, n in MICRO_SHAPES:
            a, b = _random_operands(m, k, n)
            c = np.full((m, n), np.nan, np.float32)
            where = "" if (m, k, n) == MICRO_SHAPE else f"at {m}x{k} @ {k}x{n} (right at {MICRO_SHAPE[0]}x" \
                f"{MICRO_SHAPE[1]} @ {MICRO_SHAPE[1]}x{MICRO_SHAPE[2]}: are sizes written in?): "
            try:
                kernel[micro_grid(m, n), MICRO_BLOCK](a, b, c)
            except Exception as error:  # noqa: BLE001 - learner code: feedback that names the shape
                if not where:
                    raise
                return report(name, False, f"{where}your code raised {type(error).__name__}: {error}")
            wrong = _verdict(name, c, a, b, 2, block=2 * MICRO_BLOCK[0], where=where)
            if wrong is not None:
                return wrong
        m, k, n = MICRO_SHAPE
        a, b = _random_operands(m, k, n)
        c = np.full((m, n), np.nan, np.float32)
        per_k = _loads_per_thread_per_k(kernel, a, b, c)
        if per_k > MICRO_LOADS_PER_K:
            return report(name, False, f"right answer, but {per_k:.2f} global loads per k per thread, "
                          f"more than {MICRO_LOADS_PER_K}: "
                          "read a0, a1, b0, b1 once each and reuse them in the four FMAs")
        return report(name, True, f"correct at the edges of {len(MICRO_SHAPES)} shapes, and {per_k:.2f} "
                      "loads per k per thread feed 4 "
                      "FMAs (one output per thread would need 2 loads per FMA)")

    return guarded(name, attempt)


@cuda.jit
def solution_micro_tile_kernel(a, b, c):
    m, depth = a.shape
    n = b.shape[1]
    row = 2 * (cuda.blockIdx.y * cuda.blockDim.y + cuda.threadIdx.y)
    col = 2 * (cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x)
    if row >= m or col >= n:
        return
    has_row1, has_col1 = row + 1 < m, col + 1 < n
    acc00 = acc01 = acc10 = acc11 = np.float32(0)
    for k in range(depth):
        a0 = a[row, k]
        a1 = a[row + 1, k] if has_row1 else np.float32(0)
        b0 = b[k, col]
        b1 = b[k, col + 1] if has_col1 else np.float32(0)
        acc00 = cuda.fma(a0, b0, acc00)  # two loads of A and two of B feed four FMAs
        acc01 = cuda.fma(a0, b1, acc01)
        acc10 = cuda.fma(a1, b0, acc10)
        acc11 = cuda.fma(a1, b1, acc11)
    c[row, col] = acc00
    if has_col1:
        c[row, col + 1] = acc01
    if has_row1:
        c[row + 1, col] = acc10
        if has_col1:
            c[row + 1, col + 1] = acc11


# ----------------------------------------------------------------------------- exercise 3

SECTOR_CASES = {"shared_tiled": (16, 16), "register_1d": (64, 64), "register_cap": (128, 128),
                "big_tile": (128, 256), lesson.CUBLAS: lesson.CUBLAS_CTA}
SECTOR_TOLERANCE = 0.005


def recorded_sectors(result=None) -> dict:
    """Per case: (M, N, K) it was profiled at, its block tile, and ncu's global load sectors."""
    result = result or read_result(lesson.NAME)
    out = {}
    for case, cta in SECTOR_CASES.items():
        sectors = result.evidence.ncu_value(case, lesson.NCU_SHORT["sectors"])
        out[case] = (lesson.ncu_shape(result.evidence, case), cta, float(sectors))
    return out


# Shapes the tiles do not divide (the lesson's awkward shape; step 11's tile, then a tile taller than
# wide, where bm and bn swapped give another count; then a short K that is no multiple of a k-tile, where
# K rounded up to whole k-tiles misses by 4%; then M a whole number of tiles and N not, where a count
# that adds one block per side whenever either side is partial misses by 4%): no profile there, so
# the model's own count is the reference. The kernels skip every load past the edge (rows >= M,
# columns >= N, k >= K: zeros, no load), so the partial blocks count only what they load.
UNEVEN_CASES = (((4095, 4097, 1023), (128, 128)), ((4095, 4097, 1023), (128, 64)),
                ((900, 700, 100), (128, 64)), ((1024, 1000, 96), (128, 64)))


def check_global_sectors(predict) -> object:
    """``predict(m, n, k, bm, bn)``: bytes of global loads / 32 (sectors' worth of bytes) of a GEMM with
    bm x bn block tiles (each block loads its panels of A and B once, nothing past the matrix edges),
    against the H200's Nsight Compute counts, and on shapes the tiles do not divide against the model's
    own count."""
    name = "exercise 3 (global sectors of a block-tiled GEMM)"

    def wrong(got, expected) -> bool:
        return got is None or not np.isfinite(float(got)) or abs(float(got) / expected - 1) > SECTOR_TOLERANCE

    def attempt():
        refused = _calls_an_answer(predict)
        if refused:
            return report(name, False, refused)
        lines = []
        for case, ((m, n, k), (bm, bn), measured) in recorded_sectors().items():
            got = predict(m, n, k, bm, bn)
            if wrong(got, measured):
                return report(name, False, f"{case} ({bm}x{bn} tiles, {m}x{n}x{k}): you said {got}, not "
                              f"within {SECTOR_TOLERANCE:.1%} of Nsight Compute's count; "
                              f"{_sector_hint(got, m, n, k, bm, bn)}")
            lines.append(f"{case} {measured / 1e6:.1f} M")
        for (m, n, k), (bm, bn) in UNEVEN_CASES:
            got, expected = predict(m, n, k, bm, bn), solution_global_sectors(m, n, k, bm, bn)
            if not wrong(got, expected):
                continue
            where = (f"right for the five profiled kernels (every tile divides 2048), but at {m}x{n}x{k} "
                     f"with {bm}x{bn} tiles you said {got}: ")
            swapped_blocks = -(-m // bn) * -(-n // bm) * (bm + bn) * k * 4 / 32  # whole panels, sides swapped
            exact = [solution_global_sectors(m, n, k, bn, bm), swapped_blocks]  # the swap exactly, only then
            if bm != bn and np.isclose(float(got), exact, rtol=1e-9, atol=0).any():
                return report(name, False, where + f"a block tile of {bm}x{bn} covers {bm} rows of C (along "
                              f"M) and {bn} columns (along N); is each of bm and bn paired with its own "
                              "dimension?")
            return report(name, False, where + _uneven_hint(got, m, n, k, bm, bn))
        return report(name, True, "within 0.5% of Nsight Compute for every kernel (" + ", ".join(lines) +
                      "), and right where the tiles do not divide the matrix: the block tile, not the "
                      "micro-tile or the load width, sets the global traffic")

    return guarded(name, attempt)


def _uneven_hint(got, m, n, k, bm, bn) -> str:
    """What a count that is wrong only where the tiles do not divide resembles, never the count."""
    whole_blocks = -(-m // bm) * -(-n // bn)
    near = {
        "that counts whole panels for the blocks at the edges: the kernel skips every load past the edge "
        "(rows of A past M, columns of B past N), so an edge block loads only the rows and columns that "
        "exist": whole_blocks * (bm + bn) * k * 4 / 32,
        "that rounds K up to whole k-tiles: the kernel skips the loads past K too, so the last, partial "
        "k-tile loads only what exists": solution_global_sectors(m, n, -(-k // 8) * 8, bm, bn),
        "that counts only the whole blocks: the partial blocks at the edges are launched too, and load "
        "what exists of their panels": (m // bm) * (n // bn) * (bm + bn) * k * 4 / 32,
        "that rounds each row of A up to whole sectors: the hardware does move whole sectors, but this "
        "model counts bytes / 32 (sectors' worth of bytes), not the sectors each row touches":
        -(-n // bn) * m * -(-k * 4 // 32) + -(-m // bm) * n * k * 4 / 32,
    }
    for hint, candidate in near.items():
        if np.isfinite(float(got)) and np.isclose(float(got), candidate, rtol=SECTOR_TOLERANCE):
            return hint
    return (f"{m}/{bm} and {n}/{bn} are not whole numbers. Count the blocks along M and along N (the partial "
            "ones are launched too), then what each loads: only the rows, columns and k that exist")


def _sector_hint(got, m, n, k, bm, bn) -> str:
    """What a wrong count resembles (each hint true of the answer that gets it), never the count."""
    try:
        value = float(got)
    except (TypeError, ValueError):
        return "return a number of sectors"
    blocks = -(-m // bm) * -(-n // bn)
    right = solution_global_sectors(m, n, k, bm, bn)
    near = {
        "that is every element of A and B read once; with block tiles, how many blocks read each row of A, "
        "each column of B?": (m * k + k * n) * 4 / 32,
        "that looks like bytes: a sector is 32 of them": right * 32,
        "that grows with the tile's area: per k, a block reads a column of its A panel and a row of its B "
        "panel, not one value per output": blocks * bm * bn * k * 4 / 32,
    }
    # C is only 1 / (K / bm + K / bn) of the loads (0.39% at 16x16 tiles, within the tolerance of other
    # slips, such as one block too many per side): this hint only for the loads plus C exactly
    if np.isclose(value, right + m * n * 4 / 32, rtol=1e-9, atol=0):
        return "that counts C too: the question is the loads"
    for hint, candidate in near.items():
        if np.isclose(value, candidate, rtol=SECTOR_TOLERANCE):
            return hint
    return ("count what one block loads over the whole K (its panels of A and B), then how many blocks "
            "the grid has")


def solution_global_sectors(m, n, k, bm, bn):
    # each column of blocks loads all of A (M x K), each row of blocks all of B (K x N): the blocks at
    # the edges load only the rows and columns that exist
    blocks_m, blocks_n = -(-m // bm), -(-n // bn)
    return (blocks_n * m * k + blocks_m * n * k) * 4 / 32


# ----------------------------------------------------------------------------- exercise 4

ROW_FLOATS = 256  # one k-row of the 8x16 tile's B tile


def _pieces_trace(kernel):
    """The outputs, the loads' bank conflicts, wavefronts and instructions, and each simulated lane's
    c0 and c1 as its kernel returns (the skeleton's names; None where the kernel has no such local)."""
    out = np.full((32, 8), np.nan, np.float32)
    kernel[1, 32](out)
    code = getattr(getattr(kernel, "py_func", kernel), "__code__", None)
    starts, noted = [], trace.note_vector_access

    def note(*args, **kwargs):  # each simulated 16-byte access: read c0 and c1 in the kernel's frame
        frame = sys._getframe(1)
        while frame is not None and frame.f_code is not code:
            frame = frame.f_back
        if frame is not None:
            starts.append((frame.f_locals.get("c0"), frame.f_locals.get("c1")))
        return noted(*args, **kwargs)

    trace.note_vector_access = note  # the simulated load4_shared calls it through the module
    try:
        counts = trace.trace(kernel, 1, 32, np.full((32, 8), np.nan, np.float32))
    finally:
        trace.note_vector_access = noted
    shared = counts.by_array
    loads = shared[(shared["space"] == "shared") & (shared["op"] == "ld")]
    return (out, int(loads["bank_conflicts"].sum()), int(loads["wavefronts"].sum()),
            int(loads["instructions"].sum()), starts)


def _unaligned_start(starts) -> str | None:
    """A message for a c0 or c1 that is no multiple of 4 (c // 4 floors it: the load reads elsewhere)."""
    for index, which in enumerate(("c0", "c1")):
        odd = sorted(int(pair[index]) for pair in starts
                     if isinstance(pair[index], (int, np.integer)) and pair[index] % 4)
        if odd:  # the smallest: the same message whichever lane the simulator ran first
            return (f"a lane's {which} is {odd[0]}, not a multiple of 4: a piece starts at a multiple of 4 "
                    f"floats ({which} names its first column; load4_shared(row, {which} // 4) rounds it "
                    "down, so the load reads other columns than the ones you named)")
    return None


PIECE_LOADS = 2  # per warp: each lane's two pieces, one 16-byte load each
LEAST_WAVEFRONTS = 8  # 2 loads of 512 bytes, 128 bytes a wavefront


def check_conflict_free_pieces(kernel) -> object:
    """``kernel(out)``, one warp: each lane reads two 4-wide pieces of a 256-float shared row with
    16-byte loads into out[lane, 0:4] and out[lane, 4:8]; every column once, no bank conflict."""
    name = "exercise 4 (a conflict-free lane mapping)"

    def attempt():
        refused = _calls_an_answer(kernel)
        if refused:
            return report(name, False, refused)
        out, conflicts, wavefronts, loads, starts = _pieces_trace(kernel)
        if np.isnan(out).any():
            return report(name, False, "some outputs were never written: every lane stores its two pieces")
        unaligned = _unaligned_start(starts)
        if unaligned:
            return report(name, False, unaligned)
        columns = out.astype(np.int64).ravel()
        if sorted(columns) != list(range(ROW_FLOATS)):
            missing = sorted(set(range(ROW_FLOATS)) - set(columns))
            return report(name, False, f"{ROW_FLOATS - len(set(columns))} columns never read (first: "
                          f"{missing[:4]}) and others read twice: the 32 lanes' 64 pieces must tile the row")
        if conflicts:
            return report(name, False, f"every column read once, but {conflicts} bank conflicts "
                          f"({wavefronts} wavefronts for 2 loads; 8 is the least): 8 lanes are served "
                          "together, so in each load the pieces of lanes 0-7 (and of 8-15, ...) must fall "
                          "in 8 different groups of 4 banks, as 32 consecutive floats do")
        if loads != PIECE_LOADS or wavefronts != LEAST_WAVEFRONTS:
            return report(name, False, f"every column in place, but the warp read the shared row with "
                          f"{loads} load instruction(s) in {wavefronts} wavefronts: the values must come "
                          "from the row, each lane's two pieces one 16-byte load each")
        return report(name, True, f"every column read once in {wavefronts} wavefronts, no bank conflict: "
                      "in each load, lanes 0-7 (and 8-15, ...) read pieces in 8 different groups of 4 banks")

    return guarded(name, attempt)


@cuda.jit
def solution_conflict_free_pieces(out):
    row = cuda.shared.array(256, np.float32)
    lane = cuda.threadIdx.x
    for i in range(lane, 256, 32):
        row[i] = i
    cuda.syncthreads()
    c0 = 4 * lane  # lanes side by side: lanes 0-7 read floats 0-31, one per bank
    c1 = 128 + 4 * lane
    x0, x1, x2, x3 = load4_shared(row, c0 // 4)
    y0, y1, y2, y3 = load4_shared(row, c1 // 4)
    out[lane, 0], out[lane, 1], out[lane, 2], out[lane, 3] = x0, x1, x2, x3
    out[lane, 4], out[lane, 5], out[lane, 6], out[lane, 7] = y0, y1, y2, y3


# ----------------------------------------------------------------------------- exercise 5

# Step 11's 8x8 micro-tile, one warp laid out as 4 x 8 lanes in pairs along M: a block of one warp
# (32 x 64 outputs) has the same lanes, and so the same shared loads, as each warp of a 128x128 block.
PAIRED_8X8_WARP = codegen.Tile(bm=32, bn=64, bk=4, tm=8, tn=8, lanes_m=4, interleave=2, pad=0,
                               max_registers=None)

# The layouts the check counts: the one the text names, then five it does not (each catches a slip: B
# paired through lane l ^ 2, A unpaired and B broadcast, A broadcast, step 12's 2 x 16, and 8 x 4 lanes,
# where lanes l and l ^ 4 share B's piece: no half-warp, 4 wavefronts, not 2), then random ones.
NAMED_LAYOUT = (8, 8, 4, 2)  # tm, tn, lanes_m, interleave
FIXED_LAYOUTS = (NAMED_LAYOUT, (4, 8, 16, 1), (8, 4, 32, 1), (4, 16, 1, 1), (8, 16, 2, 1), (4, 4, 8, 1))
LAYOUT_CHOICES = [(tm, tn, lanes_m, pair) for tm in (4, 8, 16) for tn in (4, 8, 16)
                  for lanes_m in (1, 2, 4, 8, 16, 32) for pair in ((1, 2) if 1 < lanes_m < 32 else (1,))]
RANDOM_LAYOUTS = 3


def warp_tile(tm: int, tn: int, lanes_m: int, interleave: int) -> codegen.Tile:
    """A block of one warp with the given micro-tile and lane layout (A unpadded)."""
    return codegen.Tile(bm=lanes_m * tm, bn=32 // lanes_m * tn, bk=4, tm=tm, tn=tn, lanes_m=lanes_m,
                        interleave=interleave, pad=0, max_registers=None)


@cache
def _traced_wavefronts(layout: tuple) -> float:
    """The traffic counter's wavefronts per warp per k-step for one layout (one run per layout)."""
    return lesson._count_shared_wavefronts(warp_tile(*layout), noted=False)["tracer"]


def _layout_words(layout: tuple) -> str:
    tm, tn, lanes_m, pair = layout
    return (f"tm={tm}, tn={tn}, lanes_m={lanes_m}, interleave={pair} ({lanes_m} x {32 // lanes_m} lanes"
            f"{', in pairs' if pair == 2 else ''})")


def _per_load(tm, tn, a_wavefronts, b_wavefronts):
    return tm // 4 * a_wavefronts + tn // 4 * b_wavefronts


def _wavefront_hint(value, layout: tuple) -> str:
    """What a wrong count resembles (each hint true of the answer that gets it), never the count."""
    tm, tn, lanes_m, pair = layout
    loads = (tm + tn) // 4
    if value == 4 * loads:
        return ("that is 4 wavefronts for every load: when each lane reads the same 16 bytes as lane l ^ 1 "
                "(or each as lane l ^ 2), half-warps are served together")
    if value == 2 * loads:
        return ("that is 2 wavefronts for every load: a load is served by half-warps only when each lane "
                "reads the same 16 bytes as lane l ^ 1 (or each as lane l ^ 2); work out A's and B's pieces "
                "apart")
    if value == loads:
        return "that is one wavefront a load: a wavefront serves 128 bytes, and a load moves 512"
    if pair == 1 and value == _per_load(tm, tn, 2, 4):
        return ("that pairs A and not B: here lanes l and l ^ 2 read the same piece of B, or A's pieces "
                "are not shared; apply the rule to each operand from the lane's row and column group")
    return ("count, for A and for B apart, the 16-byte loads per k-step (tm / 4 and tn / 4) and whether "
            "lanes l and l ^ 1, or l and l ^ 2, read the same piece (row group for A, column group for B)")


def _wavefront_helpers() -> tuple:
    """The lesson's counters and its wavefront model: calling any of them is the check, not a prediction."""
    return (lesson.lds128_wavefronts, lesson.lane_coordinates, lesson.shared_load_addresses,
            lesson.shared_wavefronts_per_k_step, lesson.lane_layouts, lesson.per_k_step,
            lesson.traced_shared_wavefronts, lesson._count_shared_wavefronts, lesson.lane_grid,
            lesson.output_owners, trace.trace, codegen.build, warp_tile, _traced_wavefronts)


def check_warp_tile_wavefronts(predict) -> object:
    """``predict(tm, tn, lanes_m, interleave)``: shared wavefronts one warp needs per k-step for a warp
    tile laid out that way, checked by running the generated kernel for one warp on the simulator with
    the traffic counter, on the named layout, five others and a few drawn at random."""
    name = "exercise 5 (wavefronts of a warp tile)"

    def attempt():
        if predict is None or not callable(predict):
            return report(name, False, "not answered yet: write a function warp_wavefronts(tm, tn, lanes_m, "
                          "interleave) that returns a number")
        refused = _calls_an_answer(predict, _wavefront_helpers())
        if refused:
            return report(name, False, refused)
        rng = np.random.default_rng()
        drawn = [LAYOUT_CHOICES[i] for i in rng.choice(len(LAYOUT_CHOICES), RANDOM_LAYOUTS, replace=False)]
        layouts = list(FIXED_LAYOUTS) + [x for x in drawn if x not in FIXED_LAYOUTS]
        for layout in layouts:
            got = predict(*layout)
            try:
                value = float(got)
            except (TypeError, ValueError):
                return report(name, False, f"for {_layout_words(layout)} your function returned {got!r}: "
                              "return a number of wavefronts")
            if value != _traced_wavefronts(layout):
                named = "the layout the text names, " if layout == NAMED_LAYOUT else ""
                return report(name, False, f"for {named}{_layout_words(layout)} you said {got}: not what "
                              f"the traffic counter sees; {_wavefront_hint(value, layout)}")
        return report(name, True, f"right for {len(layouts)} layouts, {len(layouts) - 1} of them ones the "
                      "text does not name: a 16-byte load takes 2 wavefronts when lanes in pairs read the "
                      "same 16 bytes, else 4; with lanes in pairs, 4 x 8 reads both operands by half-warps")

    return guarded(name, attempt)


def solution_warp_tile_wavefronts(tm, tn, lanes_m, interleave):
    lanes_n = 32 // lanes_m
    lane = np.arange(32)
    row_group = lane // (interleave * lanes_n) * interleave + lane % interleave  # what A's address follows
    column_group = lane // interleave % lanes_n  # what B's address follows

    def per_load(group):  # half-warps when every lane reads what lane l ^ 1 (or every lane what l ^ 2) reads
        return 2 if any(np.all(group == group[lane ^ partner]) for partner in (1, 2)) else 4

    return tm // 4 * per_load(row_group) + tn // 4 * per_load(column_group)
