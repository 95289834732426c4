"""A small code generator for the fast GEMM kernels (lesson 6, steps 7-12).

NVVM does not unroll a k-loop whose body holds 64 FMAs and 16-byte loads, and numba has no
``#pragma unroll``: so we write the unrolled body with Python. ``kernel_source(tile)`` returns the
source of one kernel, printed in the notebook; ``build(tile)`` compiles it. Every switch of
``Tile`` is one step of the lesson:

* ``vector``        16-byte global loads (``load4``; needs K and N multiples of 4, 16-byte aligned
                    rows) and 16-byte shared loads (``load4_shared``); A's tile is stored transposed
                    (k-major) so a thread's TM values of A are adjacent. Without it: coalesced 4-byte
                    loads, for any shape.
* ``unroll``        the k-loop of a tile written out BK times (else a rolled ``for kk``).
* ``lanes_m``       0: each thread owns a contiguous TM x TN block; else a warp is a lanes_m x
                    (32 / lanes_m) grid of threads whose 4-wide pieces are interleaved, so a warp's
                    16-byte shared reads hit consecutive addresses (no bank conflicts). lanes_m = 2
                    with 16 threads across is the plain conflict-free layout; 4 x 8 is warp tiling.
* ``interleave``    1: lane ``l`` of a warp is thread (l // lanes_n, l % lanes_n) of its grid. 2: lanes
                    are numbered in pairs along M (CUTLASS's ``RowMajorInterleaved<2>``): lanes
                    2j and 2j+1 share a column of B, lanes 4j+i and 4j+i+2 a row of A. A 16-byte
                    shared load whose lanes come in such equal pairs takes 2 wavefronts, not 4
                    (``lessons.gemm.lds128_wavefronts``): with both operands paired, an 8 x 16 micro-tile
                    needs 12 wavefronts per warp per k-step instead of 20.
* ``pad``           extra floats per row of the transposed A tile (the transposing stores stop
                    colliding in one bank).
* ``double_buffer`` two shared buffers: the next tile's global loads are issued before the current
                    tile's FMAs, and stored after them; one barrier per tile instead of two.
* ``group_m``       0: block (x, y) computes tile (y, x). Else blocks are renumbered so that each
                    group of ``group_m`` tile rows is swept column by column: blocks running at the
                    same time share panels of A and B in the L2 cache (as Triton's matmul tutorial).
* ``split_prefetch`` with double buffering: the next tile of A is loaded during the first half of
                    the k-steps and B's during the second, so half as many registers hold loads in flight.
* ``max_registers`` the register cap handed to the compiler (None: no cap); ``min_blocks`` asks
                    for launch bounds instead (``threads`` per block, at least this many blocks per SM).
* ``stages``        0: as above. 2 or more (lesson 7, with ``double_buffer=False``): tiles are copied
                    by ``cp.async`` straight into shared memory (A with 4-byte copies into its
                    transposed tile, as cuBLAS's SIMT kernel does; B with 16-byte copies), ``stages - 1``
                    tiles in flight during the FMAs, one barrier per tile; one dynamic shared buffer
                    (opted in past 48 KiB).

All indices are uint64 (the signed-index trap of step 6) and every constant is wrapped in ``U(...)``
so that no signed integer enters the arithmetic (uint64 + int64 is float64 in numba). Edges: loads
outside the matrix read zeros, stores are guarded, so any M, N, K works without padding (M or N = 0:
no launch; K = 0: zeros).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
from numba import cuda, float32, uint64

from .. import gates, ptx, vector
from ..checks import InputError, address_of
from . import generated
from .arrays import is_device_array, returned, to_device
from .gemm import check_gemm_operands
from .launch import allow_dynamic_shared


@dataclass(frozen=True)
class Tile:
    bm: int = 128
    bn: int = 128
    bk: int = 8
    tm: int = 8
    tn: int = 8
    vector: bool = True
    unroll: bool = True
    lanes_m: int = 2
    interleave: int = 1
    pad: int = 4
    double_buffer: bool = True
    max_registers: int | None = 128
    min_blocks: int | None = None
    group_m: int = 0
    split_prefetch: bool = False
    stages: int = 0

    @property
    def shared_floats(self) -> int:
        """Floats of shared memory: (bm + pad) x bk of A and bk x bn of B, per buffer."""
        buffers = self.stages or (2 if self.double_buffer else 1)
        return buffers * self.bk * (self.bm + self.pad + self.bn)

    @property
    def threads(self) -> int:
        return (self.bm // self.tm) * (self.bn // self.tn)

    def scalar(self) -> Tile:
        """The same tile with 4-byte global loads (for shapes whose rows are not 16-byte aligned)."""
        return replace(self, vector=False)

    def validate(self) -> None:
        if self.tm % 4 or self.tn % 4 or self.bm % self.tm or self.bn % self.tn:
            raise InputError(f"tm, tn must be multiples of 4 dividing bm, bn: {self}")
        if self.threads % 32 or self.threads > 1024:
            raise InputError(f"{self.threads} threads: need whole warps, at most 1024")
        if self.split_prefetch and not (self.double_buffer and self.unroll and self.bk % 2 == 0):
            raise InputError("split_prefetch needs double_buffer, unroll and an even bk")
        if self.pad % 4:
            raise InputError("pad must keep rows 16-byte aligned (a multiple of 4 floats)")
        if self.stages and (self.stages < 2 or self.double_buffer or self.split_prefetch or not self.unroll):
            raise InputError(f"stages={self.stages}: a cp.async pipeline of 2 or more stages, in place of "
                             "double_buffer and split_prefetch, with the k-loop unrolled")
        if self.stages and (self.bm * self.bk) % self.threads:
            raise InputError(f"{self}: the A tile's 4-byte copies do not spread evenly over the threads")
        if self.lanes_m:
            lanes_n = 32 // self.lanes_m
            if 32 % self.lanes_m or (self.bn // self.tn) % lanes_n or (self.bm // self.tm) % self.lanes_m:
                raise InputError(f"a {self.lanes_m} x {lanes_n} warp does not tile {self}")
        if self.interleave not in (1, 2) or (self.interleave == 2 and (not self.lanes_m or self.lanes_m % 2)):
            raise InputError(f"interleave must be 1, or 2 with an even lanes_m (lane pairs along M): {self}")
        width = 4 if self.vector else 1
        for floats in (self.bm * self.bk, self.bk * self.bn):
            pieces = floats // width
            if pieces % self.threads and self.threads % pieces:
                raise InputError(f"{self}: {pieces} loads of a tile do not spread evenly over the threads")


def _u(value: int) -> str:
    return f"U({value})"


def _offset(value: int) -> str:
    """A constant term of a sum, left out when it is zero."""
    return f"{_u(value)} + " if value else ""


def _sum(*terms: int | str) -> str:
    """A sum of terms with its integer terms folded into one constant (left out when zero), at the
    place of the first of them: ``_sum("cur * U(64)", 0, 2 * 132, "r0")`` is ``cur * U(64) + U(264) + r0``."""
    constant = sum(term for term in terms if isinstance(term, int))
    out, placed = [], False
    for term in terms:
        if isinstance(term, int):
            if not placed and constant:
                out.append(_u(constant))
            placed = True
        else:
            out.append(term)
    return " + ".join(out) or _u(0)


def _quarter(index: str) -> str:
    """``index // 4``, the float4 index of a float index (bracketed when it is a sum)."""
    return f"({index}) // {_u(4)}" if " " in index else f"{index} // {_u(4)}"


def _times(factor: int | str, scale: int) -> int | str:
    """``factor * scale`` as a constant when the factor is one, else as code."""
    return factor * scale if isinstance(factor, int) else f"{factor} * {_u(scale)}"


def _warp_lanes(t: Tile, emit, groups_m: int, groups_n: int) -> None:
    """The rows r{g} and columns c{h} of a thread whose warp is a lanes_m x lanes_n grid of lanes
    (interleaved in pairs along M when ``t.interleave`` is 2); a dimension of one warp is left out."""
    lanes_n = 32 // t.lanes_m
    warps_n = (t.bn // t.tn) // lanes_n
    warps_m = t.threads // 32 // warps_n
    emit(f"warp, lane = tid // {_u(32)}, tid % {_u(32)}")
    if warps_m > 1 and warps_n > 1:
        emit(f"wm, wn = warp // {_u(warps_n)}, warp % {_u(warps_n)}")
    elif warps_m > 1:
        emit("wm = warp  # the warps are stacked along M: one warp spans the tile's width")
    elif warps_n > 1:
        emit("wn = warp  # the warps sit side by side along N: one warp spans the tile's height")
    if t.interleave == 1:
        emit(f"lm, ln = lane // {_u(lanes_n)}, lane % {_u(lanes_n)}")
    else:
        pair = t.interleave
        emit("# lanes in pairs along M: lanes 2j, 2j+1 share a column of B; 4j+i, 4j+i+2 a row of A")
        emit(f"lm = lane // {_u(pair * lanes_n)} * {_u(pair)} + lane % {_u(pair)}")
        emit(f"ln = lane // {_u(pair)} % {_u(lanes_n)}")
    warp_m = f"wm * {_u(t.lanes_m * t.tm)} + " if warps_m > 1 else ""
    warp_n = f"wn * {_u(lanes_n * t.tn)} + " if warps_n > 1 else ""
    for g in range(groups_m):
        emit(f"r{g} = {warp_m}{_offset(g * t.lanes_m * 4)}lm * {_u(4)}")
    for h in range(groups_n):
        emit(f"c{h} = {warp_n}{_offset(h * lanes_n * 4)}ln * {_u(4)}")


def kernel_source(t: Tile, name: str = "gemm_generated") -> str:
    """The kernel's Python source, every loop over the micro-tile and over BK written out."""
    t.validate()
    lda, ldb = t.bm + t.pad, t.bn  # row lengths of the (k-major) shared tiles
    a_buf, b_buf = t.bk * lda, t.bk * ldb
    bufs = 2 if t.double_buffer else 1
    groups_m, groups_n = t.tm // 4, t.tn // 4
    lines: list[str] = []

    def emit(text: str, indent: int = 1) -> None:
        lines.append("    " * indent + text)

    lines.append(f"def {name}(a, b, c, m, n, k):")
    if t.stages:
        emit("smem = cuda.shared.array(0, float32)  # dynamic: per stage the A tile, then the B tile")
        emit(f"a_s = b_s = smem  # A k-major: [kk * {lda} + row]; B: [{a_buf} + kk * {ldb} + col]")
    else:
        emit(f"a_s = cuda.shared.array({bufs * a_buf}, float32)  # A tile, k-major: a_s[kk * {lda} + row]")
        emit(f"b_s = cuda.shared.array({bufs * b_buf}, float32)  # B tile: b_s[kk * {ldb} + col]")
    emit("tid = U(cuda.threadIdx.x)")
    if t.group_m:
        emit("# blocks renumbered: groups of tile rows swept column by column (L2 reuse)")
        emit("tiles_n = U(cuda.gridDim.x)")
        emit("pid = U(cuda.blockIdx.y) * tiles_n + U(cuda.blockIdx.x)")
        emit(f"first = pid // ({_u(t.group_m)} * tiles_n) * {_u(t.group_m)}")
        emit(f"rows = min(U(cuda.gridDim.y) - first, {_u(t.group_m)})")
        emit("m0 = (first + pid % rows) * " + _u(t.bm))
        emit(f"n0 = pid % ({_u(t.group_m)} * tiles_n) // rows * {_u(t.bn)}")
    else:
        emit(f"m0 = U(cuda.blockIdx.y) * {_u(t.bm)}")
        emit(f"n0 = U(cuda.blockIdx.x) * {_u(t.bn)}")
    rows = ", ".join(f"r{g}..r{g}+3" for g in range(groups_m))
    columns = ", ".join(f"c{h}..c{h}+3" for h in range(groups_n))
    emit(f"# this thread's outputs: rows {rows} and columns {columns} of the block tile")
    if t.lanes_m:
        _warp_lanes(t, emit, groups_m, groups_n)
    else:
        emit(f"ty, tx = tid // {_u(t.bn // t.tn)}, tid % {_u(t.bn // t.tn)}")
        for g in range(groups_m):
            emit(f"r{g} = ty * {_u(t.tm)}" + (f" + {_u(4 * g)}" if g else ""))
        for h in range(groups_n):
            emit(f"c{h} = tx * {_u(t.tn)}" + (f" + {_u(4 * h)}" if h else ""))
    for i in range(t.tm):
        emit(" = ".join(f"acc{i}_{j}" for j in range(t.tn)) + " = float32(0)")

    # Which tile elements this thread moves from global to shared memory (when a tile has fewer
    # pieces than there are threads, the first threads load one piece each and the others none).
    width = 4 if t.vector else 1
    pieces_a = max(1, t.bm * t.bk // (width * t.threads))
    pieces_b = max(1, t.bk * t.bn // (width * t.threads))
    only_a = "" if t.bm * t.bk >= width * t.threads else f"tid < {_u(t.bm * t.bk // width)} and "
    only_b = "" if t.bk * t.bn >= width * t.threads else f"tid < {_u(t.bk * t.bn // width)} and "
    def piece(p: int) -> str:
        return f"(tid + {_u(p * t.threads)})" if p else "tid"

    if t.vector:
        emit("# tile loads: float4 pieces; A's are stored transposed, B's as they are")
        for p in range(pieces_a):
            emit(f"ar{p} = {piece(p)} // {_u(t.bk // 4)}")
            emit(f"ak{p} = {piece(p)} % {_u(t.bk // 4)} * {_u(4)}")
        for p in range(pieces_b):
            emit(f"bk{p} = {piece(p)} // {_u(t.bn // 4)}")
            emit(f"bc{p} = {piece(p)} % {_u(t.bn // 4)} * {_u(4)}")
    else:
        emit("# tile loads: one float per piece, consecutive threads on consecutive addresses")
        for p in range(pieces_a):
            emit(f"ar{p} = {piece(p)} // {_u(t.bk)}")
            emit(f"ak{p} = {piece(p)} % {_u(t.bk)}")
        for p in range(pieces_b):
            emit(f"bk{p} = {piece(p)} // {_u(t.bn)}")
            emit(f"bc{p} = {piece(p)} % {_u(t.bn)}")

    def load_global(k0: int | str, indent: int, which: str = "ab") -> None:
        for p in range(pieces_a if "a" in which else 0):
            emit(f"if {only_a}m0 + ar{p} < m and {_sum(k0, f'ak{p}')} < k:", indent)
            if t.vector:
                index = f"({_sum(f'(m0 + ar{p}) * k', k0, f'ak{p}')}) // {_u(4)}"
                emit(f"xa{p}_0, xa{p}_1, xa{p}_2, xa{p}_3 = load4(a, {index})", indent + 1)
                emit("else:", indent)
                emit(f"xa{p}_0 = xa{p}_1 = xa{p}_2 = xa{p}_3 = float32(0)", indent + 1)
            else:
                emit(f"xa{p} = a[{_sum(f'(m0 + ar{p}) * k', k0, f'ak{p}')}]", indent + 1)
                emit("else:", indent)
                emit(f"xa{p} = float32(0)", indent + 1)
        for p in range(pieces_b if "b" in which else 0):
            row = f"({_sum(k0, f'bk{p}')})" if isinstance(k0, str) else f"bk{p}"
            emit(f"if {only_b}{_sum(k0, f'bk{p}')} < k and n0 + bc{p} < n:", indent)
            if t.vector:
                index = f"({row} * n + n0 + bc{p}) // {_u(4)}"
                emit(f"xb{p}_0, xb{p}_1, xb{p}_2, xb{p}_3 = load4(b, {index})", indent + 1)
                emit("else:", indent)
                emit(f"xb{p}_0 = xb{p}_1 = xb{p}_2 = xb{p}_3 = float32(0)", indent + 1)
            else:
                emit(f"xb{p} = b[{row} * n + n0 + bc{p}]", indent + 1)
                emit("else:", indent)
                emit(f"xb{p} = float32(0)", indent + 1)

    def store_shared(abase: int | str, bbase: int | str, indent: int, which: str = "ab") -> None:
        outer = indent
        if only_a and "a" in which:
            emit(f"if {only_a[:-5]}:", outer)
            indent = outer + 1
        for p in range(pieces_a if "a" in which else 0):
            if t.vector:
                for j in range(4):
                    column = f"(ak{p} + {_u(j)}) * {_u(lda)}" if j else f"ak{p} * {_u(lda)}"
                    emit(f"a_s[{_sum(abase, column, f'ar{p}')}] = xa{p}_{j}", indent)
            else:
                emit(f"a_s[{_sum(abase, f'ak{p} * {_u(lda)}', f'ar{p}')}] = xa{p}", indent)
        indent = outer
        if only_b and "b" in which:
            emit(f"if {only_b[:-5]}:", outer)
            indent = outer + 1
        for p in range(pieces_b if "b" in which else 0):
            if t.vector:
                emit(f"store4_shared(b_s, {_quarter(_sum(bbase, f'bk{p} * {_u(ldb)}', f'bc{p}'))}, "
                     f"xb{p}_0, xb{p}_1, xb{p}_2, xb{p}_3)", indent)
            else:
                emit(f"b_s[{_sum(bbase, f'bk{p} * {_u(ldb)}', f'bc{p}')}] = xb{p}", indent)

    def compute_step(abase: int | str, bbase: int | str, kk: int | str, indent: int) -> None:
        for g in range(groups_m):
            names = ", ".join(f"fa{4 * g + i}" for i in range(4))
            emit(f"{names} = load4_shared(a_s, {_quarter(_sum(abase, _times(kk, lda), f'r{g}'))})", indent)
        for h in range(groups_n):
            names = ", ".join(f"fb{4 * h + j}" for j in range(4))
            emit(f"{names} = load4_shared(b_s, {_quarter(_sum(bbase, _times(kk, ldb), f'c{h}'))})", indent)
        for i in range(t.tm):
            for j in range(t.tn):
                emit(f"acc{i}_{j} = cuda.fma(fa{i}, fb{j}, acc{i}_{j})", indent)

    def compute(abase: int | str, bbase: int | str, indent: int, steps: range | None = None) -> None:
        if t.unroll:
            for kk in steps or range(t.bk):
                compute_step(abase, bbase, kk, indent)
        else:
            emit(f"for kk in range({_u(t.bk)}):", indent)
            compute_step(abase, bbase, "kk", indent + 1)

    emit(f"tiles = (k + {_u(t.bk - 1)}) // {_u(t.bk)}")
    if t.stages:
        _async_pipeline(t, emit, compute, lda, ldb, pieces_b, only_b)
    elif t.double_buffer:
        emit("# prologue: tile 0 into buffer 0")
        load_global(0, 1)
        store_shared(0, 0, 1)
        emit("cuda.syncthreads()")
        emit("for tile in range(tiles):")
        emit(f"cur, nxt = tile % {_u(2)}, (tile + {_u(1)}) % {_u(2)}", 2)
        emit(f"k0 = (tile + {_u(1)}) * {_u(t.bk)}  # the next tile: its loads fly during the FMAs", 2)
        cur_a, cur_b = f"cur * {_u(a_buf)}", f"cur * {_u(b_buf)}"
        nxt_a, nxt_b = f"nxt * {_u(a_buf)}", f"nxt * {_u(b_buf)}"
        if t.split_prefetch:  # A's next tile during the first half of the k-steps, B's during the second
            half = t.bk // 2
            load_global("k0", 2, "a")
            compute(cur_a, cur_b, 2, range(half))
            store_shared(nxt_a, nxt_b, 2, "a")
            load_global("k0", 2, "b")
            compute(cur_a, cur_b, 2, range(half, t.bk))
            store_shared(nxt_a, nxt_b, 2, "b")
        else:
            load_global("k0", 2)
            compute(cur_a, cur_b, 2)
            store_shared(nxt_a, nxt_b, 2)
        emit("cuda.syncthreads()", 2)
    else:
        emit("for tile in range(tiles):")
        emit(f"k0 = tile * {_u(t.bk)}", 2)
        load_global("k0", 2)
        store_shared(0, 0, 2)
        emit("cuda.syncthreads()  # the tile is complete", 2)
        compute(0, 0, 2)
        emit("cuda.syncthreads()  # everyone is done with it", 2)

    emit("# write the micro-tile, guarded at the matrix edges")
    for g in range(groups_m):
        for i in range(4):
            row = 4 * g + i
            emit(f"row = {_sum('m0', f'r{g}', i)}")
            emit("if row < m:")
            for h in range(groups_n):
                accs = ", ".join(f"acc{row}_{4 * h + j}" for j in range(4))
                if t.vector:
                    emit(f"if n0 + c{h} < n:", 2)
                    emit(f"store4(c, (row * n + n0 + c{h}) // {_u(4)}, {accs})", 3)
                else:
                    for j in range(4):
                        emit(f"if n0 + c{h} + {_u(j)} < n:", 2)
                        emit(f"c[row * n + n0 + c{h} + {_u(j)}] = acc{row}_{4 * h + j}", 3)
    return "\n".join(lines) + "\n"


def _async_pipeline(t: Tile, emit, compute, lda: int, ldb: int, pieces_b: int, only_b: str) -> None:
    """The k-loop of a ``stages``-deep cp.async pipeline (lesson 7): copies land at the wait."""
    a_buf, stage = t.bk * lda, t.bk * (lda + ldb)
    pieces_a = t.bm * t.bk // t.threads
    emit("# A: 4-byte copies, consecutive threads along k of a row, stored transposed (k-major)")
    for p in range(pieces_a):
        piece = f"(tid + {_u(p * t.threads)})"
        emit(f"xr{p}, xk{p} = {piece} // {_u(t.bk)}, {piece} % {_u(t.bk)}")
    b_copy, b_width = ("cp_async16", 4) if t.vector else ("cp_async4", 1)

    def issue(k0: str, base: str, indent: int) -> None:
        for p in range(pieces_a):
            emit(f"ok = m0 + xr{p} < m and {k0} + xk{p} < k", indent)
            emit(f"cp_async4(a_s, {base} + xk{p} * {_u(lda)} + xr{p}, a, "
                 f"(m0 + xr{p}) * k + {k0} + xk{p} if ok else {_u(0)}, 4 if ok else 0)", indent)
        for p in range(pieces_b):
            guard = f"{only_b[:-5]} and " if only_b else ""
            emit(f"ok = {guard}{k0} + bk{p} < k and n0 + bc{p} < n", indent)
            if only_b:
                emit(f"if {only_b[:-5]}:", indent)
            emit(f"{b_copy}(b_s, {base} + {_u(a_buf)} + bk{p} * {_u(ldb)} + bc{p}, b, "
                 f"({k0} + bk{p}) * n + n0 + bc{p} if ok else {_u(0)}, {4 * b_width} if ok else 0)",
                 indent + (1 if only_b else 0))

    emit(f"# prologue: tiles 0 .. {t.stages - 2} in flight, one commit group each")
    for s in range(t.stages - 1):
        emit(f"if {_u(s)} < tiles:")
        issue(_u(s * t.bk), _u(s * stage), 2)
        emit("cp_async_commit_group()")
    emit("for tile in range(tiles):")
    emit(f"cp_async_wait_group({t.stages - 2})  # this thread's copies of `tile` have landed", 2)
    emit("cuda.syncthreads()  # everyone's have; and everyone is done with tile - 1's stage", 2)
    emit(f"ahead = tile + {_u(t.stages - 1)}", 2)
    emit("if ahead < tiles:", 2)
    issue(f"ahead * {_u(t.bk)}", f"ahead % {_u(t.stages)} * {_u(stage)}", 3)
    emit("cp_async_commit_group()  # an empty group at the end keeps the count right", 2)
    emit(f"cur = tile % {_u(t.stages)} * {_u(stage)}", 2)
    compute("cur", f"cur + {_u(a_buf)}", 2)


_BUILT: dict = {}
_SHARED_ALLOWED: set = set()


def python_kernel(t: Tile, name: str = "gemm_generated"):
    """The generated function, not yet compiled (the simulator runs it as it is)."""
    namespace = {"cuda": cuda, "float32": float32, "U": uint64, "load4": vector.load4,
                 "store4": vector.store4, "load4_shared": vector.load4_shared,
                 "store4_shared": vector.store4_shared, "cp_async4": ptx.cp_async4,
                 "cp_async16": ptx.cp_async16, "cp_async_commit_group": ptx.cp_async_commit_group,
                 "cp_async_wait_group": ptx.cp_async_wait_group}
    # linecache (or a file, see generated.py) lets inspect.getsource and the tracer read the code
    return generated.define(kernel_source(t, name), name, namespace, f"gemm_codegen {name} {t}")


def build(t: Tile):
    """The compiled kernel for a tile (cached: a big unrolled kernel takes seconds in NVVM)."""
    return generated.tile_kernel(t, python_kernel, _BUILT)


def vector_ok(a, b, c, k: int, n: int) -> bool:
    """16-byte loads need rows that start on 16-byte boundaries: K and N multiples of 4, aligned bases."""
    return k % 4 == 0 and n % 4 == 0 and all(address_of(x) % 16 == 0 for x in (a, b, c))


def launch(t: Tile, a, b, c) -> Tile:
    """C = A @ B on device arrays; picks the 4-byte-load twin when the shape forbids 16-byte loads.
    Returns the tile actually used (``t`` when C is empty: M or N = 0 needs no launch; K = 0 is a
    launch, which writes zeros)."""
    m, k = a.shape
    n = b.shape[1]
    if m == 0 or n == 0:
        return t
    used = t if (not t.vector or vector_ok(a, b, c, k, n)) else t.scalar()
    grid = (-(-n // t.bn), -(-m // t.bm))
    args = (a.reshape(a.size), b.reshape(b.size), c.reshape(c.size), np.uint64(m), np.uint64(n), np.uint64(k))
    shared_bytes = 4 * used.shared_floats if used.stages else 0  # dynamic (the pipeline's buffer)
    if shared_bytes > 48 * 1024 and used not in _SHARED_ALLOWED:
        allow_dynamic_shared(build(used), args, shared_bytes)
        _SHARED_ALLOWED.add(used)
    build(used)[grid, used.threads, 0, shared_bytes](*args)
    return used


def needs(t: Tile) -> gates.Needs:
    """What a tile needs of the GPU (``gpu_lessons.gates``): a cp.async pipeline (``stages``) needs
    sm_80; the shared memory is the tile's buffers."""
    shared = 4 * t.shared_floats
    return gates.Needs(cc=(8, 0), why="cp.async", shared_bytes=shared) if t.stages else \
        gates.Needs(shared_bytes=shared)


def gemm_generated(a, b, t: Tile = Tile()):
    """C = A @ B with a generated kernel (host or device arrays in, same kind out)."""
    if not isinstance(t, Tile):
        raise InputError(f"t must be a gemm_codegen.Tile, got {type(t).__name__}")
    t.validate()
    gates.require(repr(t), needs(t))
    m, n = check_gemm_operands(a, b)
    d_a, d_b = to_device(a, "a"), to_device(b, "b")
    d_c = cuda.device_array((m, n), np.float32)
    launch(t, d_a, d_b, d_c)
    return returned(d_c, not (is_device_array(a) and is_device_array(b)))
