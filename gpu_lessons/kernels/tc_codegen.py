"""A code generator for the TF32 tensor-core GEMM kernels (lesson 7), in the style of ``gemm_codegen``.

``kernel_source(tile)`` writes one kernel as Python source, every loop over fragments and k-steps
unrolled (NVVM does not unroll such bodies); ``build(tile)`` compiles it. A ``TcTile`` says:

* ``bm x bn``  the block's tile of C, ``bk`` the depth of one shared-memory tile of A and B (a
  multiple of 16: fragments are read 16 k at a time).
* ``wm x wn``  each warp's tile of C: (wm/16) x (wn/8) ``mma.sync.m16n8k8`` per k-step of 8, whose
  A fragments are reused wn/8 times and B fragments wm/16 times from registers.
* ``stages``   1: plain loads (global -> registers -> shared), a barrier, the MMAs, a barrier.
  2 or more: ``cp.async`` copies straight into shared memory, ``stages - 1`` tiles in flight
  while the MMAs run on the oldest (one barrier per tile).
* ``vector``   16-byte copies (rows of A and B must start on 16-byte boundaries: K and N multiples
  of 4); else 4-byte copies, for any shape.
* ``round_inputs``  A and B fragments go through ``cvt.rna.tf32`` (round to nearest) rather than
  letting the tensor cores cut their 13 low bits.
* ``group_m``  0: block (x, y) computes tile (y, x); else groups of ``group_m`` tile rows are swept
  column by column, so blocks running together share panels of A and B in L2.
* ``max_registers`` / ``min_blocks``  a register cap, or launch bounds (threads, min blocks per SM).

Shared memory, one dynamic buffer of ``stages`` x (A tile + B tile) floats:

* A is kept as in global memory, row-major, in slabs of 16 k: ``A[slab][m][16]``. Lane (g, t) of an
  MMA reads rows g and g+8 at k = 4t..4t+3 with one 16-byte load each (a quarter-warp's 8 lanes
  touch 8 different 16-byte bank groups: no conflict). Those 4 k's feed two k-steps: fragment
  column t takes physical k 4t+2s, column t+4 takes 4t+2s+1 in step s (``slab_k``). Any order of k
  is right as long as B uses the same one.
* B is row-major ``B[k][n]``, each row's columns XOR-swizzled by ``((k >> 2) & 3) << 3``: lane
  (g, t) reads column n0+g of rows 4t..4t+3, and the swizzle spreads the four t's over four banks
  groups of 8 (no conflict); a 16-byte run of columns stays contiguous, so cp.async can write it.

All indices are uint64 (``U(...)``), as in lesson 6. Edges: copies past the matrix read nothing
and fill zeros (``src_bytes`` 0), stores are guarded: any M, N, K >= 0 works without padding.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

import numpy as np
from numba import cuda, float32, uint64

from .. import ptx, vector
from ..checks import InputError
from . import generated
from .gemm_codegen import vector_ok  # the same 16-byte condition on A, B and C
from .launch import allow_dynamic_shared

STATIC_SHARED_LIMIT = 48 * 1024  # bytes a block gets without opting in


@dataclass(frozen=True)
class TcTile:
    bm: int = 128
    bn: int = 128
    bk: int = 32
    wm: int = 64
    wn: int = 32
    stages: int = 3
    vector: bool = True
    round_inputs: bool = True
    group_m: int = 0
    max_registers: int | None = None
    min_blocks: int | None = None

    @property
    def warps(self) -> int:
        return (self.bm // self.wm) * (self.bn // self.wn)

    @property
    def threads(self) -> int:
        return 32 * self.warps

    @property
    def stage_floats(self) -> int:
        return self.bm * self.bk + self.bk * self.bn

    @property
    def shared_bytes(self) -> int:
        return 4 * self.stages * self.stage_floats

    def scalar(self) -> TcTile:
        """The same tile with 4-byte copies (for shapes whose rows are not 16-byte aligned)."""
        return replace(self, vector=False)

    def validate(self) -> None:
        if self.wm % 16 or self.wn % 8 or self.bm % self.wm or self.bn % self.wn:
            raise InputError(f"warp tile {self.wm}x{self.wn} must be multiples of 16x8 dividing the "
                             f"block tile {self.bm}x{self.bn}")
        if self.bk % 16 or self.bn % 32:
            raise InputError(f"bk must be a multiple of 16 and bn of 32 (the B swizzle): {self}")
        if not 1 <= self.stages <= 8:
            raise InputError(f"stages must be 1..8, got {self.stages}")
        if self.threads > 1024:
            raise InputError(f"{self.threads} threads per block: at most 1024")
        width = 4 if self.vector else 1
        for floats in (self.bm * self.bk, self.bk * self.bn):
            if (floats // width) % self.threads:
                raise InputError(f"{self}: {floats // width} copies of a tile do not spread evenly "
                                 f"over {self.threads} threads")


def slab_k(t: int, step: int, upper: bool) -> int:
    """The k (0..15, inside a 16-deep slab) that lane (g, t) feeds to k-step ``step`` (0 or 1) of the
    slab as the MMA's column t of A and row t of B (a0/b0: ``upper`` False) or column t+4 and row t+4
    (a2/b1: ``upper`` True). One 16-byte load of A[row][4t .. 4t+3] holds all four: 4t + 2 step + upper.
    An MMA sums over its 8 k's, so their order is free as long as A and B use the same one."""
    return 4 * t + 2 * step + int(upper)


def _u(value: int) -> str:
    """An unsigned constant by name (``u16`` is ``np.uint64(16)``, a global of the generated code):
    a frozen global costs numba's front end nothing, where each ``U(16)`` call is one more call to
    type, and the front end, not NVVM, is what makes big unrolled kernels slow to compile."""
    return f"u{value}"


def kernel_source(t: TcTile, name: str = "tc_gemm_generated") -> str:
    """The kernel's Python source: every loop over fragments, k-steps and copies written out."""
    t.validate()
    lines: list[str] = []

    def emit(text: str, indent: int = 1) -> None:
        lines.append("    " * indent + text)

    width = 4 if t.vector else 1
    a_floats, stage = t.bm * t.bk, t.stage_floats
    copies_a = t.bm * t.bk // (width * t.threads)
    copies_b = t.bk * t.bn // (width * t.threads)
    m_tiles, n_tiles = t.wm // 16, t.wn // 8

    lines.append(f"def {name}(a, b, c, m, n, k):")
    emit("smem = cuda.shared.array(0, float32)  # stages x (A tile, then B tile), dynamic")
    emit("tid = U(cuda.threadIdx.x)")
    if t.group_m:
        emit("# blocks renumbered: groups of tile rows swept column by column (L2 reuse)")
        emit("tiles_n = U(cuda.gridDim.x)")
        emit("pid = U(cuda.blockIdx.y) * tiles_n + U(cuda.blockIdx.x)")
        emit(f"first = pid // ({_u(t.group_m)} * tiles_n) * {_u(t.group_m)}")
        emit(f"rows = min(U(cuda.gridDim.y) - first, {_u(t.group_m)})")
        emit(f"m0 = (first + pid % rows) * {_u(t.bm)}")
        emit(f"n0 = pid % ({_u(t.group_m)} * tiles_n) // rows * {_u(t.bn)}")
    else:
        emit(f"m0 = U(cuda.blockIdx.y) * {_u(t.bm)}")
        emit(f"n0 = U(cuda.blockIdx.x) * {_u(t.bn)}")
    emit(f"warp, lane = tid // {_u(32)}, tid % {_u(32)}")
    emit(f"g, t = lane // {_u(4)}, lane % {_u(4)}  # groupID, threadID_in_group")
    emit(f"wr = warp // {_u(t.bn // t.wn)} * {_u(t.wm)}  # the warp's tile: rows wr.., columns wc..")
    emit(f"wc = warp % {_u(t.bn // t.wn)} * {_u(t.wn)}")
    emit("# A fragments: rows wr + 16i + g (+8) at k = 4t..4t+3 of each 16-k slab")
    for i in range(m_tiles):
        emit(f"ra{i} = (wr + {_u(16 * i)} + g) * {_u(16)} + t * {_u(4)}")
    emit("# B fragments: column wc + 8j + g, swizzled by the row group t, rows 4t..4t+3 of each slab")
    for j in range(n_tiles):
        emit(f"cb{j} = (t * {_u(4)}) * {_u(t.bn)} + ((wc + {_u(8 * j)} + g) ^ (t * {_u(8)}))")
    for i in range(m_tiles):
        for j in range(n_tiles):
            emit(" = ".join(f"acc{i}_{j}_{q}" for q in range(4)) + " = float32(0)")

    # Which pieces of the tiles this thread copies.
    emit("# copies: A in 16-k slabs (row-major inside), B row-major with its swizzle")
    for p in range(copies_a):
        piece = f"(tid + {_u(p * t.threads)})"
        if t.vector:
            emit(f"am{p}, ak{p} = {piece} // {_u(t.bk // 4)}, {piece} % {_u(t.bk // 4)} * {_u(4)}")
        else:
            emit(f"am{p}, ak{p} = {piece} // {_u(t.bk)}, {piece} % {_u(t.bk)}")
        emit(f"as{p} = ak{p} // {_u(16)} * {_u(t.bm * 16)} + am{p} * {_u(16)} + ak{p} % {_u(16)}")
    for p in range(copies_b):
        piece = f"(tid + {_u(p * t.threads)})"
        if t.vector:
            emit(f"bk{p}, bn{p} = {piece} // {_u(t.bn // 4)}, {piece} % {_u(t.bn // 4)} * {_u(4)}")
        else:
            emit(f"bk{p}, bn{p} = {piece} // {_u(t.bn)}, {piece} % {_u(t.bn)}")
        swizzle = f"(bk{p} // {_u(4)}) % {_u(4)} * {_u(8)}"
        emit(f"bs{p} = {_u(a_floats)} + bk{p} * {_u(t.bn)} + (bn{p} ^ ({swizzle}))")

    def issue_async(k0: str, base: str, indent: int) -> None:
        """cp.async this thread's pieces of the tile at k0 into the stage starting at ``base``.

        The 4-byte twin issues 4 times as many copies, each without a branch: ``ok`` is 1 or 0 and
        multiplies the source index and the byte count (a piece past the matrix copies 0 bytes from
        element 0: zeros). Written with ``and`` and ``x if ok else y``, each copy is several basic
        blocks, and the twin of a 128x128 tile with 4 warps (64 copies a stage) had so many in a row
        that numba's control-flow pass, a recursive depth-first search, ran out of Python's stack
        (``RecursionError``)."""
        if not t.vector:
            for p in range(copies_a):
                emit(f"ok = U(m0 + am{p} < m) & U({k0} + ak{p} < k)", indent)
                emit(f"cp_async4(smem, {base} + as{p}, a, ((m0 + am{p}) * k + {k0} + ak{p}) * ok, "
                     f"{_u(4)} * ok)", indent)
            for p in range(copies_b):
                emit(f"ok = U({k0} + bk{p} < k) & U(n0 + bn{p} < n)", indent)
                emit(f"cp_async4(smem, {base} + bs{p}, b, (({k0} + bk{p}) * n + n0 + bn{p}) * ok, "
                     f"{_u(4)} * ok)", indent)
            return
        for p in range(copies_a):
            emit(f"ok = m0 + am{p} < m and {k0} + ak{p} < k", indent)
            emit(f"cp_async16(smem, {base} + as{p}, a, (m0 + am{p}) * k + {k0} + ak{p} if ok else {_u(0)}, "
                 f"16 if ok else 0)", indent)
        for p in range(copies_b):
            emit(f"ok = {k0} + bk{p} < k and n0 + bn{p} < n", indent)
            emit(f"cp_async16(smem, {base} + bs{p}, b, ({k0} + bk{p}) * n + n0 + bn{p} if ok else {_u(0)}, "
                 f"16 if ok else 0)", indent)

    def load_and_store(k0: str, indent: int) -> None:
        """Plain loads into registers, then stores into shared memory (stage 0)."""
        pieces = [("a", p, f"m0 + am{p}", f"{k0} + ak{p}", "m", "k") for p in range(copies_a)]
        pieces += [("b", p, f"{k0} + bk{p}", f"n0 + bn{p}", "k", "n") for p in range(copies_b)]
        for source, p, row, col, rows, cols in pieces:
            valid = f"{row} < {rows} and {col} < {cols}"
            index = f"({row}) * {cols} + {col}"
            if t.vector:
                emit(f"if {valid}:", indent)
                emit(f"x0, x1, x2, x3 = load4({source}, ({index}) // {_u(4)})", indent + 1)
                emit("else:", indent)
                emit("x0 = x1 = x2 = x3 = float32(0)", indent + 1)
                emit(f"store4_shared(smem, {source}s{p} // {_u(4)}, x0, x1, x2, x3)", indent)
            else:
                emit(f"smem[{source}s{p}] = {source}[{index}] if {valid} else float32(0)", indent)

    def rounded(expression: str) -> str:
        return f"cvt_rna_tf32({expression})" if t.round_inputs else expression

    def compute(base: str, indent: int) -> None:
        """The MMAs of one shared tile: per 16-k slab, load fragments, then two k-steps."""
        emit(f"sa = {base}", indent)
        emit(f"sb = {base} + {_u(a_floats)}", indent)
        for slab in range(t.bk // 16):
            for i in range(m_tiles):
                for half in (0, 1):  # rows g and g + 8
                    names = ", ".join(f"x{i}_{half}_{q}" for q in range(4))
                    row = f"ra{i} + {_u(half * 8 * 16 + slab * t.bm * 16)}"
                    emit(f"{names} = load4_shared(smem, (sa + {row}) // {_u(4)})", indent)
                    if t.round_inputs:
                        for q in range(4):
                            emit(f"x{i}_{half}_{q} = {rounded(f'x{i}_{half}_{q}')}", indent)
            for j in range(n_tiles):
                for q in range(4):
                    emit(f"y{j}_{q} = {rounded(f'smem[sb + cb{j} + {_u((16 * slab + q) * t.bn)}]')}", indent)
            for step in (0, 1):
                low, high = slab_k(0, step, False), slab_k(0, step, True)  # element of the lane's 4 k's
                for i in range(m_tiles):
                    a0, a1 = f"x{i}_0_{low}", f"x{i}_1_{low}"
                    a2, a3 = f"x{i}_0_{high}", f"x{i}_1_{high}"
                    for j in range(n_tiles):
                        b0, b1 = f"y{j}_{low}", f"y{j}_{high}"
                        accs = ", ".join(f"acc{i}_{j}_{q}" for q in range(4))
                        emit(f"{accs} = mma_tf32({a0}, {a1}, {a2}, {a3}, {b0}, {b1}, {accs})", indent)

    emit(f"tiles = (k + {_u(t.bk - 1)}) // {_u(t.bk)}")
    if t.stages == 1:
        emit("for tile in range(tiles):")
        load_and_store(f"tile * {_u(t.bk)}", 2)
        emit("cuda.syncthreads()  # the tile is complete", 2)
        compute(_u(0), 2)
        emit("cuda.syncthreads()  # everyone is done with it", 2)
    else:
        emit(f"# prologue: tiles 0 .. {t.stages - 2} in flight, one commit group each")
        for s in range(t.stages - 1):
            emit(f"if {_u(s)} < tiles:")
            issue_async(_u(s * t.bk), _u(s * stage), 2)
            emit("cp_async_commit_group()")
        emit("for tile in range(tiles):")
        emit(f"cp_async_wait_group({t.stages - 2})  # this thread's copies of `tile` have landed", 2)
        emit("cuda.syncthreads()  # everyone's have; and everyone is done with tile - 1's stage", 2)
        emit(f"ahead = tile + {_u(t.stages - 1)}", 2)
        emit("if ahead < tiles:", 2)
        issue_async(f"ahead * {_u(t.bk)}", f"ahead % {_u(t.stages)} * {_u(stage)}", 3)
        emit("cp_async_commit_group()  # an empty group at the end keeps the count right", 2)
        compute(f"tile % {_u(t.stages)} * {_u(stage)}", 2)

    emit("# write the accumulators: c0, c1 at row g, columns 2t, 2t+1; c2, c3 at row g+8")
    for i in range(m_tiles):
        for half in (0, 1):
            emit(f"row = m0 + wr + {_u(16 * i + 8 * half)} + g")
            emit("if row < m:")
            for j in range(n_tiles):
                col = f"n0 + wc + {_u(8 * j)} + t * {_u(2)}"
                first, second = f"acc{i}_{j}_{2 * half}", f"acc{i}_{j}_{2 * half + 1}"
                emit(f"col = {col}", 2)
                if t.vector:  # N is a multiple of 4: col < n means col + 1 < n
                    emit("if col < n:", 2)
                    emit(f"store2(c, (row * n + col) // {_u(2)}, {first}, {second})", 3)
                else:
                    emit("if col < n:", 2)
                    emit(f"c[row * n + col] = {first}", 3)
                    emit(f"if col + {_u(1)} < n:", 2)
                    emit(f"c[row * n + col + {_u(1)}] = {second}", 3)
    return "\n".join(lines) + "\n"


def python_kernel(t: TcTile, name: str = "tc_gemm_generated"):
    """The generated function, not yet compiled (the simulator runs it as it is)."""
    source = kernel_source(t, name)
    constants = {f"u{value}": np.uint64(value) for value in map(int, re.findall(r"\bu(\d+)\b", source))}
    namespace = {**constants, "cuda": cuda, "float32": float32, "U": uint64, "load4": vector.load4,
                 "store2": vector.store2, "load4_shared": vector.load4_shared,
                 "store4_shared": vector.store4_shared, "cp_async4": ptx.cp_async4,
                 "cp_async16": ptx.cp_async16, "cp_async_commit_group": ptx.cp_async_commit_group,
                 "cp_async_wait_group": ptx.cp_async_wait_group, "mma_tf32": ptx.mma_tf32,
                 "cvt_rna_tf32": ptx.cvt_rna_tf32}
    return generated.define(source, name, namespace, f"tc_codegen {name} {t}")


_BUILT: dict = {}
_SHARED_ALLOWED: set = set()


def build(t: TcTile):
    """The compiled kernel for a tile (cached: a big unrolled kernel takes seconds in NVVM)."""
    return generated.tile_kernel(t, python_kernel, _BUILT)


def launch(t: TcTile, a, b, c) -> TcTile:
    """C = A @ B on device arrays (C-contiguous float32); the 4-byte twin when the shape needs it.
    Returns the tile actually used."""
    m, k = a.shape
    n = b.shape[1]
    used = t if (not t.vector or vector_ok(a, b, c, k, n)) else t.scalar()
    kernel = build(used)
    args = (a.reshape(a.size), b.reshape(b.size), c.reshape(c.size), np.uint64(m), np.uint64(n), np.uint64(k))
    if used.shared_bytes > STATIC_SHARED_LIMIT and used not in _SHARED_ALLOWED:
        allow_dynamic_shared(kernel, args, used.shared_bytes)
        _SHARED_ALLOWED.add(used)
    grid = (-(-n // t.bn), -(-m // t.bm))
    kernel[grid, used.threads, 0, used.shared_bytes](*args)
    return used
