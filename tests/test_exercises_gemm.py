"""Lesson 6's exercises: each skeleton, exactly as the notebook has it, fails its check; each
reference solution passes; plausible wrong answers are caught (at least two per check)."""

import types

import numba
import numpy as np
from test_exercises import exercise_tests

import gpu_lessons  # noqa: F401 - chooses the mode before numba.cuda

# isort: split
from numba import cuda

from gpu_lessons.exercises import gemm as ex
from gpu_lessons.vector import load4_shared

NOTEBOOK = "06_gemm_tiling.ipynb"


def _same_code(solution):
    """The reference solution's code as a learner would write it: a new function (kernel) of the same code,
    not the course's object (which the checks refuse, as they refuse any call of a solution_*)."""
    function = getattr(solution, "py_func", solution)
    copy = types.FunctionType(function.__code__, function.__globals__, function.__name__,
                              function.__defaults__, function.__closure__)
    return copy if function is solution else cuda.jit(copy)


SOLUTIONS = [
    (ex.check_tiled_kernel, _same_code(ex.solution_tiled_kernel)),
    (ex.check_micro_tile_kernel, _same_code(ex.solution_micro_tile_kernel)),
    (ex.check_global_sectors, _same_code(ex.solution_global_sectors)),
    (ex.check_conflict_free_pieces, _same_code(ex.solution_conflict_free_pieces)),
    (ex.check_warp_tile_wavefronts, _same_code(ex.solution_warp_tile_wavefronts)),
]

TILE = 16


@cuda.jit
def tiles_swapped(a, b, c):
    """The tiles' indices swapped: a_tile[k, tx] * b_tile[ty, k] (transposed products)."""
    a_tile = cuda.shared.array((16, 16), numba.float32)
    b_tile = cuda.shared.array((16, 16), numba.float32)
    tx, ty = cuda.threadIdx.x, cuda.threadIdx.y
    row, col = cuda.blockIdx.y * TILE + ty, cuda.blockIdx.x * TILE + tx
    m, depth = a.shape
    n = b.shape[1]
    acc = numba.float32(0.0)
    for start in range(0, depth, TILE):
        a_tile[ty, tx] = a[row, start + tx] if row < m and start + tx < depth else 0.0
        b_tile[ty, tx] = b[start + ty, col] if start + ty < depth and col < n else 0.0
        cuda.syncthreads()
        for k in range(TILE):
            acc += a_tile[k, tx] * b_tile[ty, k]
        cuda.syncthreads()
    if row < m and col < n:
        c[row, col] = acc


@cuda.jit
def last_product_only(a, b, c):
    """acc = ... instead of acc += ...: each tile's loop keeps its last product."""
    a_tile = cuda.shared.array((16, 16), numba.float32)
    b_tile = cuda.shared.array((16, 16), numba.float32)
    tx, ty = cuda.threadIdx.x, cuda.threadIdx.y
    row, col = cuda.blockIdx.y * TILE + ty, cuda.blockIdx.x * TILE + tx
    m, depth = a.shape
    n = b.shape[1]
    acc = numba.float32(0.0)
    for start in range(0, depth, TILE):
        a_tile[ty, tx] = a[row, start + tx] if row < m and start + tx < depth else 0.0
        b_tile[ty, tx] = b[start + ty, col] if start + ty < depth and col < n else 0.0
        cuda.syncthreads()
        for k in range(TILE):
            acc = a_tile[ty, k] * b_tile[k, tx]
        cuda.syncthreads()
    if row < m and col < n:
        c[row, col] = acc


@cuda.jit
def global_memory_instead(a, b, c):
    """Right answer, no reuse: the loop reads A and B from global memory, not the tiles."""
    a_tile = cuda.shared.array((16, 16), numba.float32)
    b_tile = cuda.shared.array((16, 16), numba.float32)
    tx, ty = cuda.threadIdx.x, cuda.threadIdx.y
    row, col = cuda.blockIdx.y * TILE + ty, cuda.blockIdx.x * TILE + tx
    m, depth = a.shape
    n = b.shape[1]
    acc = numba.float32(0.0)
    for start in range(0, depth, TILE):
        a_tile[ty, tx] = a[row, start + tx] if row < m and start + tx < depth else 0.0
        b_tile[ty, tx] = b[start + ty, col] if start + ty < depth and col < n else 0.0
        cuda.syncthreads()
        if row < m and col < n:
            for k in range(start, min(start + TILE, depth)):
                acc += a[row, k] * b[k, col]
        cuda.syncthreads()
    if row < m and col < n:
        c[row, col] = acc


@cuda.jit
def four_dot_products(a, b, c):
    """Right answer, no reuse: each of the four outputs reads its own row and column."""
    m, depth = a.shape
    n = b.shape[1]
    row = 2 * (cuda.blockIdx.y * cuda.blockDim.y + cuda.threadIdx.y)
    col = 2 * (cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x)
    for i in range(2):
        for j in range(2):
            if row + i < m and col + j < n:
                acc = np.float32(0)
                for k in range(depth):
                    acc = cuda.fma(a[row + i, k], b[k, col + j], acc)
                c[row + i, col + j] = acc


@cuda.jit
def no_edge_guard(a, b, c):
    """Reuse right, but the last partial micro-tile is dropped."""
    m, depth = a.shape
    n = b.shape[1]
    row = 2 * (cuda.blockIdx.y * cuda.blockDim.y + cuda.threadIdx.y)
    col = 2 * (cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x)
    if row + 1 < m and col + 1 < n:
        acc00 = acc01 = acc10 = acc11 = np.float32(0)
        for k in range(depth):
            a0, a1, b0, b1 = a[row, k], a[row + 1, k], b[k, col], b[k, col + 1]
            acc00 = cuda.fma(a0, b0, acc00)
            acc01 = cuda.fma(a0, b1, acc01)
            acc10 = cuda.fma(a1, b0, acc10)
            acc11 = cuda.fma(a1, b1, acc11)
        c[row, col], c[row, col + 1], c[row + 1, col], c[row + 1, col + 1] = acc00, acc01, acc10, acc11


def ideal_sectors(m, n, k, bm, bn):
    """Every input read once: the notes' ideal traffic, not what block tiles load."""
    return (m * k + k * n) * 4 / 32


def bytes_not_sectors(m, n, k, bm, bn):
    """Right count of bytes, but not divided into 32-byte sectors."""
    return -(-m // bm) * -(-n // bn) * (bm + bn) * k * 4


def sectors_with_c(m, n, k, bm, bn):
    """The loads, plus C's stores counted as loads."""
    return -(-m // bm) * -(-n // bn) * (bm + bn) * k * 4 / 32 + m * n * 4 / 32


def product_not_sum(m, n, k, bm, bn):
    """Each block reads bm x bn floats per k (its outputs), not bm + bn."""
    return -(-m // bm) * -(-n // bn) * bm * bn * k * 4 / 32


@cuda.jit
def contiguous_pieces(out):
    """Step 8's layout: lane l reads columns 8l..8l+7; lanes l and l+4 share banks (2-way conflicts)."""
    row = cuda.shared.array(256, numba.float32)
    lane = cuda.threadIdx.x
    for i in range(lane, 256, 32):
        row[i] = i
    cuda.syncthreads()
    c0, c1 = 8 * lane, 8 * lane + 4
    x0, x1, x2, x3 = load4_shared(row, c0 // 4)
    y0, y1, y2, y3 = load4_shared(row, c1 // 4)
    out[lane, 0], out[lane, 1], out[lane, 2], out[lane, 3] = x0, x1, x2, x3
    out[lane, 4], out[lane, 5], out[lane, 6], out[lane, 7] = y0, y1, y2, y3


@cuda.jit
def overlapping_pieces(out):
    """Conflict-free loads, but the second piece is the neighbour's first: columns read twice."""
    row = cuda.shared.array(256, numba.float32)
    lane = cuda.threadIdx.x
    for i in range(lane, 256, 32):
        row[i] = i
    cuda.syncthreads()
    c0, c1 = 4 * lane, 4 * lane + 4
    x0, x1, x2, x3 = load4_shared(row, c0 // 4)
    y0, y1, y2, y3 = load4_shared(row, c1 // 4)
    out[lane, 0], out[lane, 1], out[lane, 2], out[lane, 3] = x0, x1, x2, x3
    out[lane, 4], out[lane, 5], out[lane, 6], out[lane, 7] = y0, y1, y2, y3


@cuda.jit
def half_row_pieces(out):
    """Conflict-free loads 64 floats apart (step 9's offset for a 128-wide tile): 192-255 never read."""
    row = cuda.shared.array(256, numba.float32)
    lane = cuda.threadIdx.x
    for i in range(lane, 256, 32):
        row[i] = i
    cuda.syncthreads()
    c0, c1 = 4 * lane, 4 * lane + 64
    x0, x1, x2, x3 = load4_shared(row, c0 // 4)
    y0, y1, y2, y3 = load4_shared(row, c1 // 4)
    out[lane, 0], out[lane, 1], out[lane, 2], out[lane, 3] = x0, x1, x2, x3
    out[lane, 4], out[lane, 5], out[lane, 6], out[lane, 7] = y0, y1, y2, y3


def _tiled_with_loop(loop):
    """Exercise 1's kernel with ``loop(a_tile, b_tile, tx, ty)`` as the missing inner loop."""

    @cuda.jit
    def kernel(a, b, c):
        a_tile = cuda.shared.array((16, 16), numba.float32)
        b_tile = cuda.shared.array((16, 16), numba.float32)
        tx, ty = cuda.threadIdx.x, cuda.threadIdx.y
        row, col = cuda.blockIdx.y * TILE + ty, cuda.blockIdx.x * TILE + tx
        m, depth = a.shape
        n = b.shape[1]
        acc = numba.float32(0.0)
        for start in range(0, depth, TILE):
            a_tile[ty, tx] = a[row, start + tx] if row < m and start + tx < depth else 0.0
            b_tile[ty, tx] = b[start + ty, col] if start + ty < depth and col < n else 0.0
            cuda.syncthreads()
            acc += loop(a_tile, b_tile, tx, ty)
            cuda.syncthreads()
        if row < m and col < n:
            c[row, col] = acc

    return kernel


@cuda.jit(device=True)
def _one_short(a_tile, b_tile, tx, ty):
    total = numba.float32(0.0)
    for k in range(TILE - 1):
        total += a_tile[ty, k] * b_tile[k, tx]
    return total


@cuda.jit(device=True)
def _from_one(a_tile, b_tile, tx, ty):
    total = numba.float32(0.0)
    for k in range(1, TILE):
        total += a_tile[ty, k] * b_tile[k, tx]
    return total


@cuda.jit(device=True)
def _transposed(a_tile, b_tile, tx, ty):
    total = numba.float32(0.0)
    for k in range(TILE):
        total += a_tile[tx, k] * b_tile[k, ty]
    return total


@cuda.jit(device=True)
def _summed_twice(a_tile, b_tile, tx, ty):
    total = numba.float32(0.0)
    for k in range(TILE):
        total += a_tile[ty, k] * b_tile[k, tx]
        total += a_tile[ty, k] * b_tile[k, tx]
    return total


@cuda.jit(device=True)
def _b_tile_transposed(a_tile, b_tile, tx, ty):
    total = numba.float32(0.0)
    for k in range(TILE):
        total += a_tile[ty, k] * b_tile[tx, k]
    return total


@cuda.jit(device=True)
def _half_the_tile(a_tile, b_tile, tx, ty):
    total = numba.float32(0.0)
    for k in range(TILE // 2):
        total += a_tile[ty, k] * b_tile[k, tx]
    return total


@cuda.jit
def tile_loop_tail_short(a, b, c):
    """range(min(TILE, depth - start) - 1): the last k of every tile missing, the 5-deep tail's included."""
    a_tile = cuda.shared.array((16, 16), numba.float32)
    b_tile = cuda.shared.array((16, 16), numba.float32)
    tx, ty = cuda.threadIdx.x, cuda.threadIdx.y
    row, col = cuda.blockIdx.y * TILE + ty, cuda.blockIdx.x * TILE + tx
    m, depth = a.shape
    n = b.shape[1]
    acc = numba.float32(0.0)
    for start in range(0, depth, TILE):
        a_tile[ty, tx] = a[row, start + tx] if row < m and start + tx < depth else 0.0
        b_tile[ty, tx] = b[start + ty, col] if start + ty < depth and col < n else 0.0
        cuda.syncthreads()
        for k in range(min(TILE, depth - start) - 1):
            acc += a_tile[ty, k] * b_tile[k, tx]
        cuda.syncthreads()
    if row < m and col < n:
        c[row, col] = acc


tile_loop_summed_twice = _tiled_with_loop(_summed_twice)  # every product added twice: C = 2 A @ B
tile_b_transposed = _tiled_with_loop(_b_tile_transposed)  # b_tile[tx, k]: each 16 x 16 tile of B transposed
tile_loop_half = _tiled_with_loop(_half_the_tile)  # range(TILE // 2): places 8-15 of each tile missing
tile_loop_one_short = _tiled_with_loop(_one_short)  # range(TILE - 1): each tile's last k missing
tile_loop_from_one = _tiled_with_loop(_from_one)  # range(1, TILE): each tile's first k missing
tile_indices_transposed = _tiled_with_loop(_transposed)  # tx and ty swapped: C transposed per tile


@cuda.jit
def micro_loop_one_short(a, b, c):
    """range(depth - 1): the last k-step missing."""
    m, depth = a.shape
    n = b.shape[1]
    row = 2 * (cuda.blockIdx.y * cuda.blockDim.y + cuda.threadIdx.y)
    col = 2 * (cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x)
    if row >= m or col >= n:
        return
    has_row1, has_col1 = row + 1 < m, col + 1 < n
    acc00 = acc01 = acc10 = acc11 = np.float32(0)
    for k in range(depth - 1):
        a0 = a[row, k]
        a1 = a[row + 1, k] if has_row1 else np.float32(0)
        b0 = b[k, col]
        b1 = b[k, col + 1] if has_col1 else np.float32(0)
        acc00 = cuda.fma(a0, b0, acc00)
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


@cuda.jit
def micro_no_block_index(a, b, c):
    """blockIdx forgotten: every block computes the first block's 32 x 32 outputs."""
    m, depth = a.shape
    n = b.shape[1]
    row = 2 * cuda.threadIdx.y
    col = 2 * cuda.threadIdx.x
    if row >= m or col >= n:
        return
    has_row1, has_col1 = row + 1 < m, col + 1 < n
    acc00 = acc01 = acc10 = acc11 = np.float32(0)
    for k in range(depth):
        a0 = a[row, k]
        a1 = a[row + 1, k] if has_row1 else np.float32(0)
        b0 = b[k, col]
        b1 = b[k, col + 1] if has_col1 else np.float32(0)
        acc00 = cuda.fma(a0, b0, acc00)
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


@cuda.jit
def micro_no_store_11(a, b, c):
    """The store of c[row + 1, col + 1] forgotten."""
    m, depth = a.shape
    n = b.shape[1]
    row = 2 * (cuda.blockIdx.y * cuda.blockDim.y + cuda.threadIdx.y)
    col = 2 * (cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x)
    if row >= m or col >= n:
        return
    has_row1, has_col1 = row + 1 < m, col + 1 < n
    acc00 = acc01 = acc10 = np.float32(0)
    for k in range(depth):
        a0 = a[row, k]
        a1 = a[row + 1, k] if has_row1 else np.float32(0)
        b0 = b[k, col]
        b1 = b[k, col + 1] if has_col1 else np.float32(0)
        acc00 = cuda.fma(a0, b0, acc00)
        acc01 = cuda.fma(a0, b1, acc01)
        acc10 = cuda.fma(a1, b0, acc10)
    c[row, col] = acc00
    if has_col1:
        c[row, col + 1] = acc01
    if has_row1:
        c[row + 1, col] = acc10


@cuda.jit
def micro_acc01_acc10_swapped(a, b, c):
    """acc01 stored where acc10 belongs and back: C transposed within each 2 x 2."""
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
        acc00 = cuda.fma(a0, b0, acc00)
        acc01 = cuda.fma(a0, b1, acc01)
        acc10 = cuda.fma(a1, b0, acc10)
        acc11 = cuda.fma(a1, b1, acc11)
    c[row, col] = acc00
    if has_col1:
        c[row, col + 1] = acc10
    if has_row1:
        c[row + 1, col] = acc01
        if has_col1:
            c[row + 1, col + 1] = acc11


def whole_panels_at_the_edges(m, n, k, bm, bn):
    """Every block, the partial ones too, counted with whole panels: the loads past the edge counted."""
    return -(-m // bm) * -(-n // bn) * (bm + bn) * k * 4 / 32


def k_rounded_to_k_tiles(m, n, k, bm, bn):
    """K rounded up to whole 8-deep k-tiles: the partial k-tile read whole (0.1% off at K = 1023)."""
    padded = -(-k // 8) * 8
    return (-(-n // bn) * m * padded + -(-m // bm) * n * padded) * 4 / 32


def test_the_sector_count_is_what_the_kernels_load(capsys):
    """The reviewer's two answers: K rounded up passed (0.1% off at 1023), in-bounds panels failed."""
    message = ex.check_global_sectors(k_rounded_to_k_tiles).message
    assert "rounds K up to whole k-tiles" in message and "900x700x100" in message, message
    message = ex.check_global_sectors(whole_panels_at_the_edges).message
    assert "counts whole panels for the blocks at the edges" in message, message
    assert "bm and bn paired" not in message  # a square tile: no swap to blame
    for answer in (k_rounded_to_k_tiles, whole_panels_at_the_edges, floor_blocks):
        message = ex.check_global_sectors(answer).message
        assert str(round(ex.solution_global_sectors(900, 700, 100, 128, 64))) not in message
        assert str(ex.solution_global_sectors(4095, 4097, 1023, 128, 128)) not in message
    for m, n, k, bm, bn in ((900, 700, 100, 128, 64), (4095, 4097, 1023, 128, 128)):
        assert abs(k_rounded_to_k_tiles(m, n, k, bm, bn) / ex.solution_global_sectors(m, n, k, bm, bn) - 1) \
            > (ex.SECTOR_TOLERANCE if k == 100 else 0)


def floor_blocks(m, n, k, bm, bn):
    """Blocks counted with floor division: right only where the tiles divide the matrix."""
    return (m // bm) * (n // bn) * (bm + bn) * k * 4 / 32


def whole_sectors_per_row_of_a(m, n, k, bm, bn):
    """Each row of A's panel rounded up to whole sectors: 13 for K = 100, not 12.5 (the reviewer's)."""
    return -(-n // bn) * m * -(-k * 4 // 32) + -(-m // bm) * n * k * 4 / 32


def test_a_per_row_ceil_gets_its_own_hint_not_the_swap(capsys):
    """At 900x700x100 the per-row ceil is 0.03% from the swapped count: the swap hint needs the swap."""
    m, n, k, bm, bn = 900, 700, 100, 128, 64
    assert abs(whole_sectors_per_row_of_a(m, n, k, bm, bn) / tile_sides_swapped(m, n, k, bm, bn) - 1) \
        < ex.SECTOR_TOLERANCE
    result = ex.check_global_sectors(whole_sectors_per_row_of_a)
    assert not result.passed and "900x700x100" in result.message, result
    assert "rounds each row of A up to whole sectors" in result.message, result.message
    assert "paired with its own dimension" not in result.message
    assert str(round(ex.solution_global_sectors(m, n, k, bm, bn))) not in result.message
    swapped = ex.check_global_sectors(tile_sides_swapped).message
    assert "paired with its own dimension" in swapped and "rounds each row" not in swapped, swapped


def tile_sides_swapped(m, n, k, bm, bn):
    """bm paired with N and bn with M: right wherever the tile is square or the matrix is."""
    return (-(-n // bm) * m * k + -(-m // bn) * n * k) * 4 / 32


@cuda.jit
def hard_coded_pieces(out):
    """Step 8's c0, c1, but the values written from the column numbers: the shared row never read."""
    row = cuda.shared.array(256, numba.float32)
    lane = cuda.threadIdx.x
    for i in range(lane, 256, 32):
        row[i] = i
    cuda.syncthreads()
    c0, c1 = 8 * lane, 8 * lane + 4
    out[lane, 0], out[lane, 1], out[lane, 2], out[lane, 3] = c0, c0 + 1, c0 + 2, c0 + 3
    out[lane, 4], out[lane, 5], out[lane, 6], out[lane, 7] = c1, c1 + 1, c1 + 2, c1 + 3


@cuda.jit
def scalar_pieces(out):
    """Every column once and no conflict, but one float at a time: 8 loads, not two 16-byte ones."""
    row = cuda.shared.array(256, numba.float32)
    lane = cuda.threadIdx.x
    for i in range(lane, 256, 32):
        row[i] = i
    cuda.syncthreads()
    for j in range(8):
        out[lane, j] = row[32 * j + lane]


def fractional_blocks(m, n, k, bm, bn):
    """M/BM x N/BN blocks as fractions: the partial edge blocks counted in part."""
    return m * n * k * (bm + bn) / (bm * bn) * 4 / 32


def _tile_products(kind: str):
    """Exercise 1's kernel with a slip in the products: 'assigned' (acc = a * b) or 'both_transposed'."""

    @cuda.jit
    def kernel(a, b, c):
        a_tile = cuda.shared.array((16, 16), numba.float32)
        b_tile = cuda.shared.array((16, 16), numba.float32)
        tx, ty = cuda.threadIdx.x, cuda.threadIdx.y
        row, col = cuda.blockIdx.y * TILE + ty, cuda.blockIdx.x * TILE + tx
        m, depth = a.shape
        n = b.shape[1]
        acc = numba.float32(0.0)
        for start in range(0, depth, TILE):
            a_tile[ty, tx] = a[row, start + tx] if row < m and start + tx < depth else 0.0
            b_tile[ty, tx] = b[start + ty, col] if start + ty < depth and col < n else 0.0
            cuda.syncthreads()
            for kk in range(TILE):
                if kind == "assigned":
                    acc = a_tile[ty, kk] * b_tile[kk, tx]  # replaces instead of adding
                else:
                    acc = cuda.fma(a_tile[kk, ty], b_tile[tx, kk], acc)  # both tiles' indices swapped
            cuda.syncthreads()
        if row < m and col < n:
            c[row, col] = acc

    return kernel


tile_product_assigned = _tile_products("assigned")
tile_both_transposed = _tile_products("both_transposed")


def _tiled_variant(first_barrier: bool, second_barrier: bool, whole_tiles_only: bool):
    """Exercise 1's solution with a barrier left out, or with the last, partial k-tile dropped."""

    @cuda.jit
    def kernel(a, b, c):
        a_tile = cuda.shared.array((16, 16), numba.float32)
        b_tile = cuda.shared.array((16, 16), numba.float32)
        tx, ty = cuda.threadIdx.x, cuda.threadIdx.y
        row, col = cuda.blockIdx.y * TILE + ty, cuda.blockIdx.x * TILE + tx
        m, depth = a.shape
        n = b.shape[1]
        acc = numba.float32(0.0)
        end = depth // TILE * TILE if whole_tiles_only else depth
        for start in range(0, end, TILE):
            a_tile[ty, tx] = a[row, start + tx] if row < m and start + tx < depth else 0.0
            b_tile[ty, tx] = b[start + ty, col] if start + ty < depth and col < n else 0.0
            if first_barrier:
                cuda.syncthreads()
            for k in range(TILE):
                acc += a_tile[ty, k] * b_tile[k, tx]
            if second_barrier:
                cuda.syncthreads()
        if row < m and col < n:
            c[row, col] = acc

    return kernel


no_barrier_after_loads = _tiled_variant(False, True, False)
no_barrier_after_products = _tiled_variant(True, False, False)
last_tile_dropped = _tiled_variant(True, True, True)  # range(0, depth // TILE * TILE, TILE)


@cuda.jit
def last_tile_bound_remainder(a, b, c):
    """The last tile's loop bound taken as depth % TILE: right at K = 21, 0 (the tile lost) at K = 32."""
    a_tile = cuda.shared.array((16, 16), numba.float32)
    b_tile = cuda.shared.array((16, 16), numba.float32)
    tx, ty = cuda.threadIdx.x, cuda.threadIdx.y
    row, col = cuda.blockIdx.y * TILE + ty, cuda.blockIdx.x * TILE + tx
    m, depth = a.shape
    n = b.shape[1]
    acc = numba.float32(0.0)
    for start in range(0, depth, TILE):
        a_tile[ty, tx] = a[row, start + tx] if row < m and start + tx < depth else 0.0
        b_tile[ty, tx] = b[start + ty, col] if start + ty < depth and col < n else 0.0
        cuda.syncthreads()
        stop = TILE if start + TILE < depth else depth % TILE
        for kk in range(stop):
            acc += a_tile[ty, kk] * b_tile[kk, tx]
        cuda.syncthreads()
    if row < m and col < n:
        c[row, col] = acc


def test_the_last_tile_hint_is_true_of_a_whole_last_tile(capsys):
    message = ex.check_tiled_kernel(last_tile_bound_remainder).message
    assert "at 33x64 @ 64x12" in message and "k = 48-63, the whole last k-tile" in message, message
    assert "64 is a multiple of 16" in message and "no multiple" not in message, message


def _micro_with_a1(offset_row: int, offset_k: int):
    """Exercise 2's solution with a1 read at a[row + offset_row, k + offset_k] (a wrong stride of A)."""

    @cuda.jit
    def kernel(a, b, c):
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
            a1 = a[row + offset_row, k + offset_k] if has_row1 and k + offset_k < depth else np.float32(0)
            b0 = b[k, col]
            b1 = b[k, col + 1] if has_col1 else np.float32(0)
            acc00 = cuda.fma(a0, b0, acc00)
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

    return kernel


@cuda.jit
def tiled_sizes_written_in(a, b, c):  # exercise 1's loop right, but for the 20x21 @ 21x17 the prose names
    a_tile = cuda.shared.array((16, 16), numba.float32)
    b_tile = cuda.shared.array((16, 16), numba.float32)
    tx, ty = cuda.threadIdx.x, cuda.threadIdx.y
    row, col = cuda.blockIdx.y * TILE + ty, cuda.blockIdx.x * TILE + tx
    m, depth, n = 20, 21, 17
    acc = numba.float32(0.0)
    for start in range(0, depth, TILE):
        a_tile[ty, tx] = a[row, start + tx] if row < m and start + tx < depth else 0.0
        b_tile[ty, tx] = b[start + ty, col] if start + ty < depth and col < n else 0.0
        cuda.syncthreads()
        for k in range(TILE):
            acc += a_tile[ty, k] * b_tile[k, tx]
        cuda.syncthreads()
    if row < m and col < n:
        c[row, col] = acc


def global_sectors_floor_plus_one(m, n, k, bm, bn):  # one block more per side whenever either is partial
    blocks_m, blocks_n = (m // bm + 1, n // bn + 1) if m % bm or n % bn else (m // bm, n // bn)
    return (blocks_n * m * k + blocks_m * n * k) * 4 / 32


def test_one_more_block_per_side_fails_where_only_one_side_is_partial(capsys):
    assert not ex.check_global_sectors(global_sectors_floor_plus_one).passed


def test_sizes_written_into_the_tiled_kernel_fail_on_the_second_shape(capsys):
    message = ex.check_tiled_kernel(tiled_sizes_written_in).message
    assert "are sizes written in?" in message, message


a1_same_row = _micro_with_a1(0, 0)  # a[row, k]: A's row stride forgotten
a1_next_k = _micro_with_a1(0, 1)  # a[row, k + 1]: the next float in memory, not the next row


def test_races_wrong_stride_and_dropped_tile_get_their_hints(capsys):
    for kernel in (no_barrier_after_loads, no_barrier_after_products):
        message = ex.check_tiled_kernel(kernel).message
        assert "a race on" in message and "keep both cuda.syncthreads()" in message, message
    assert "barrier after the products" in ex.check_tiled_kernel(no_barrier_after_products).message
    assert "barrier after the products" not in ex.check_tiled_kernel(no_barrier_after_loads).message
    assert "the whole last k-tile (5 deep" in ex.check_tiled_kernel(last_tile_dropped).message
    for kernel in (a1_same_row, a1_next_k):
        message = ex.check_micro_tile_kernel(kernel).message
        assert "every wrong output is in an odd row" in message and "a1" in message, message


def test_no_message_prints_an_expected_value_or_the_formula(capsys):
    assert "expected" not in ex.check_tiled_kernel(tile_loop_one_short).message
    for answer in (ideal_sectors, bytes_not_sectors, product_not_sum, sectors_with_c):
        message = ex.check_global_sectors(answer).message
        assert "counted" not in message and "ceil" not in message and "panel of B, 4 bytes" not in message
    assert "that looks like bytes" in ex.check_global_sectors(bytes_not_sectors).message
    for answer in (quarter_warps_always, half_warps_always, pairs_by_interleave, guessed_eight):
        message = ex.check_warp_tile_wavefronts(answer).message
        assert "too many" not in message and "too few" not in message
        assert "expected" not in message and "counter sees 4" not in message


def test_hints_name_the_pattern(capsys):
    """The failure hints say which outputs are wrong and how, for the classic slips."""
    hints = {tile_loop_one_short: "k mod 16 = 15", tile_loop_from_one: "k mod 16 = 0",
             tile_indices_transposed: "transposed within each 16 x 16 tile"}
    for kernel, words in hints.items():
        assert words in ex.check_tiled_kernel(kernel).message
    assert "the last k-step" in ex.check_micro_tile_kernel(micro_loop_one_short).message
    assert "2 x 2 outputs" in ex.check_micro_tile_kernel(micro_acc01_acc10_swapped).message
    assert "partial" in ex.check_global_sectors(floor_blocks).message
    assert "its own dimension" in ex.check_global_sectors(tile_sides_swapped).message
    for kernel in (hard_coded_pieces, scalar_pieces):
        assert "16-byte load" in ex.check_conflict_free_pieces(kernel).message


def test_hints_name_the_slip(capsys):
    """Reviewed slips get a hint that names them, not "every output is wrong"."""
    hints = {tile_loop_summed_twice: "exactly 2 times A @ B",
             tile_loop_tail_short: "k = 15, 20: the last k of each 16-deep tile",
             tile_b_transposed: "each 16 x 16 tile of B transposed",
             tile_loop_half: "k = 8-15: places 8-15 of each 16-deep tile, half of its k",
             tile_product_assigned: "or each replaced the one before",
             tile_both_transposed: "a_tile and b_tile are each indexed [column, row]"}
    for kernel, words in hints.items():
        assert words in ex.check_tiled_kernel(kernel).message
    micro = {micro_no_block_index: "nothing outside C[0:32, 0:32] (the first block's outputs)",
             micro_no_store_11: "C[row + 1, col + 1] never written (every output in an odd row and an odd",
             no_edge_guard: "row 36 and column 34 never written (the last",
             }
    for kernel, words in micro.items():
        assert words in ex.check_micro_tile_kernel(kernel).message
    skeleton = ex.check_micro_tile_kernel(micro_skeleton).message
    assert "C[row, col + 1], C[row + 1, col], C[row + 1, col + 1] never written" in skeleton
    assert "an odd row or an odd column" in skeleton


@cuda.jit
def micro_skeleton(a, b, c):
    """The notebook's skeleton, only C[row, col] stored."""
    m, depth = a.shape
    n = b.shape[1]
    row = 2 * (cuda.blockIdx.y * cuda.blockDim.y + cuda.threadIdx.y)
    col = 2 * (cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x)
    if row >= m or col >= n:
        return
    acc00 = np.float32(0)
    for k in range(depth):
        acc00 = cuda.fma(a[row, k], b[k, col], acc00)
    c[row, col] = acc00


def quarter_warps_always(tm, tn, lanes_m, interleave):
    """Every 16-byte load in quarter-warps: the pairs forgotten (step 11's 12 for the named layout)."""
    return (tm + tn) // 4 * 4


def half_warps_always(tm, tn, lanes_m, interleave):
    """Every 16-byte load in half-warps: right for the named layout, wrong where lanes do not pair."""
    return (tm + tn) // 4 * 2


def pairs_by_interleave(tm, tn, lanes_m, interleave):
    """A always paired, B paired only with interleave 2: right for 2 x 16, 4 x 8 and 8 x 4 warps."""
    return tm // 4 * 2 + tn // 4 * (2 if interleave == 2 else 4)


def pairs_through_l_xor_4(tm, tn, lanes_m, interleave):
    """Half-warps when every lane reads what lane l ^ 1, l ^ 2 or l ^ 4 reads (the reviewer's): l ^ 4 pairs
    lanes of different half-warps, so it serves nothing together; wrong only for 8 x 4 lanes unpaired."""
    lane = np.arange(32)
    lanes_n = 32 // lanes_m
    rows = lane // (interleave * lanes_n) * interleave + lane % interleave
    columns = lane // interleave % lanes_n

    def per_load(group):
        return 2 if any(np.all(group == group[lane ^ partner]) for partner in (1, 2, 4)) else 4

    return tm // 4 * per_load(rows) + tn // 4 * per_load(columns)


def test_pairs_through_l_xor_4_fail_on_every_run(capsys):
    """It agreed with the counter on every fixed layout and failed ~27% of runs; now a fixed layout
    catches it, with a hint that names the pairs the rule allows, not the count."""
    fixed = [layout for layout in ex.FIXED_LAYOUTS
             if pairs_through_l_xor_4(*layout) != ex._traced_wavefronts(layout)]
    assert fixed == [(4, 4, 8, 1)] and ex._traced_wavefronts((4, 4, 8, 1)) == 6
    for _ in range(3):
        result = ex.check_warp_tile_wavefronts(pairs_through_l_xor_4)
        assert not result.passed and "lanes_m=8, interleave=1" in result.message, result
        assert "only when each lane reads the same 16 bytes as lane l ^ 1" in result.message, result.message
        assert "said 4" in result.message and " 6" not in result.message, result.message


def guessed_eight(tm, tn, lanes_m, interleave):
    """The named layout's number, returned for every layout."""
    return 8


def model_looked_up(tm, tn, lanes_m, interleave):
    """The lesson's pair-rule model, called on the layout."""
    return ex.lesson.shared_wavefronts_per_k_step(ex.warp_tile(tm, tn, lanes_m, interleave))["wavefronts"]


def tracer_looked_up(tm, tn, lanes_m, interleave):
    """The lesson's traffic counter (the private one, as the reviewer called it)."""
    from dataclasses import replace

    tile = replace(ex.PAIRED_8X8_WARP, tm=tm, tn=tn, lanes_m=lanes_m, interleave=interleave,
                   bm=lanes_m * tm, bn=32 // lanes_m * tn)
    return ex.lesson._count_shared_wavefronts(tile, noted=False)["tracer"]


def check_cache_unwrapped(tm, tn, lanes_m, interleave):
    """The check's own cached counter, unwrapped."""
    return ex._traced_wavefronts.__wrapped__((tm, tn, lanes_m, interleave))


def lane_rule_called(tm, tn, lanes_m, interleave):
    """The lesson's rule for one load, fed the lesson's own addresses."""
    from gpu_lessons.lessons import gemm as lesson

    tile = ex.warp_tile(tm, tn, lanes_m, interleave)
    return sum(lesson.lds128_wavefronts(a)[0] for a in lesson.shared_load_addresses(tile).values())


LAYOUT_TABLE = {(8, 16, 2, 1): 20, (8, 16, 2, 2): 12, (8, 16, 4, 1): 16, (8, 16, 4, 2): 12, (8, 8, 4, 2): 8}


def table_looked_up(tm, tn, lanes_m, interleave):
    """Numbers copied from the lesson's layout table (and the named layout), 12 for anything else."""
    return LAYOUT_TABLE.get((tm, tn, lanes_m, interleave), 12)


def test_the_warp_tile_prediction_is_no_guess_and_no_lookup(capsys):
    for number in (12, 16, 20, 4, 6, 8):  # the reviewer's guesses, in order: a number is no answer now
        result = ex.check_warp_tile_wavefronts(number)
        assert not result.passed and "write a function" in result.message, result
    for looked_up in (model_looked_up, tracer_looked_up, check_cache_unwrapped, lane_rule_called):
        result = ex.check_warp_tile_wavefronts(looked_up)
        assert not result.passed and "work it out" in result.message and "course helper" in result.message, \
            result
    result = ex.check_warp_tile_wavefronts(table_looked_up)
    assert not result.passed and "not what the traffic counter sees" in result.message, result


def test_the_warp_tile_hints_name_the_slip(capsys):
    hints = {quarter_warps_always: "4 wavefronts for every load",
             half_warps_always: "2 wavefronts for every load",
             pairs_by_interleave: "lanes l and l ^ 2 read the same piece of B"}
    for answer, words in hints.items():
        message = ex.check_warp_tile_wavefronts(answer).message
        assert words in message, message
    assert "the layout the text names" in ex.check_warp_tile_wavefronts(quarter_warps_always).message


def test_the_warp_tile_reference_matches_the_counter_on_every_layout_the_check_can_draw():
    wrong = [layout for layout in ex.LAYOUT_CHOICES
             if ex.solution_warp_tile_wavefronts(*layout) != ex._traced_wavefronts(layout)]
    assert not wrong and set(ex.FIXED_LAYOUTS) <= set(ex.LAYOUT_CHOICES)


@cuda.jit
def micro_sizes_written_in(a, b, c):
    m, depth, n = 37, 9, 35  # the shape the exercise's prose names, typed in
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
        acc00 = cuda.fma(a0, b0, acc00)
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


@cuda.jit
def micro_odd_edge_only(a, b, c):
    m, depth = a.shape
    n = b.shape[1]
    row = 2 * (cuda.blockIdx.y * cuda.blockDim.y + cuda.threadIdx.y)
    col = 2 * (cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x)
    if row >= m or col >= n:
        return
    has_row1, has_col1 = row < m - 2, col < n - 2  # 'the last pair is partial': true of 37 and 35 only
    acc00 = acc01 = acc10 = acc11 = np.float32(0)
    for k in range(depth):
        a0 = a[row, k]
        a1 = a[row + 1, k] if has_row1 else np.float32(0)
        b0 = b[k, col]
        b1 = b[k, col + 1] if has_col1 else np.float32(0)
        acc00 = cuda.fma(a0, b0, acc00)
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


aliased_tiled_solution = ex.solution_tiled_kernel  # `tiled_gemm = tiled.gemm_tiled_kernel`
aliased_micro_solution = ex.solution_micro_tile_kernel  # `micro_tile = exercises.solution_micro_tile_kernel`
aliased_pieces_solution = ex.solution_conflict_free_pieces


def calls_sector_solution(m, n, k, bm, bn):
    from gpu_lessons.exercises import gemm as exercises  # an import inside the function

    return exercises.solution_global_sectors(m, n, k, bm, bn)


def test_calling_a_solution_answers_no_exercise():
    for check, answer, called in ((ex.check_tiled_kernel, aliased_tiled_solution, "solution_tiled_kernel"),
                                  (ex.check_micro_tile_kernel, aliased_micro_solution,
                                   "solution_micro_tile_kernel"),
                                  (ex.check_global_sectors, calls_sector_solution, "solution_global_sectors"),
                                  (ex.check_conflict_free_pieces, aliased_pieces_solution,
                                   "solution_conflict_free_pieces")):
        result = check(answer)
        assert not result.passed and "work it out" in result.message, result
        assert called in result.message, result
    result = ex.check_warp_tile_wavefronts(ex.solution_warp_tile_wavefronts)
    assert not result.passed and "solution_warp_tile_wavefronts" in result.message, result
    result = ex.check_warp_tile_wavefronts(calls_wavefront_solution)
    assert not result.passed and "solution_warp_tile_wavefronts" in result.message, result


def calls_wavefront_solution(tm, tn, lanes_m, interleave):
    return ex.solution_warp_tile_wavefronts(tm, tn, lanes_m, interleave) + 0  # the reviewer's "+ 0"


def test_a_micro_tile_written_for_the_named_shape_fails_on_the_other():
    for kernel in (micro_sizes_written_in, micro_odd_edge_only):
        message = ex.check_micro_tile_kernel(kernel).message
        assert "at 20x24 @ 24x66" in message and "sizes written in" in message, message


# ----------------------------------------------------------------------------- the fourth review (fixR6d)
@cuda.jit
def tile_loop_run_twice(a, b, c):
    """Right answer, redundant work: the tile's loop run twice, each product halved (2x shared reads)."""
    a_tile = cuda.shared.array((16, 16), numba.float32)
    b_tile = cuda.shared.array((16, 16), numba.float32)
    tx, ty = cuda.threadIdx.x, cuda.threadIdx.y
    row, col = cuda.blockIdx.y * TILE + ty, cuda.blockIdx.x * TILE + tx
    m, depth = a.shape
    n = b.shape[1]
    acc = numba.float32(0.0)
    for start in range(0, depth, TILE):
        a_tile[ty, tx] = a[row, start + tx] if row < m and start + tx < depth else 0.0
        b_tile[ty, tx] = b[start + ty, col] if start + ty < depth and col < n else 0.0
        cuda.syncthreads()
        for _ in range(2):
            for k in range(TILE):
                acc += numba.float32(0.5) * a_tile[ty, k] * b_tile[k, tx]
        cuda.syncthreads()
    if row < m and col < n:
        c[row, col] = acc


@cuda.jit
def micro_reload_every_other_k(a, b, c):
    """Right answer, a0 read again on every other k: 4.45 global loads per k per thread, not 3.89."""
    m, depth = a.shape
    n = b.shape[1]
    row = 2 * (cuda.blockIdx.y * cuda.blockDim.y + cuda.threadIdx.y)
    col = 2 * (cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x)
    if row >= m or col >= n:
        return
    h1, w1 = row + 1 < m, col + 1 < n
    acc00 = acc01 = acc10 = acc11 = np.float32(0)
    for k in range(depth):
        a0 = a[row, k]
        b0 = b[k, col]
        a1 = a[row + 1, k] if h1 else np.float32(0)
        b1 = b[k, col + 1] if w1 else np.float32(0)
        acc00 = cuda.fma(a0, b0, acc00)
        if k % 2 == 0:
            a0 = a[row, k]
        acc01 = cuda.fma(a0, b1, acc01)
        acc10 = cuda.fma(a1, b0, acc10)
        acc11 = cuda.fma(a1, b1, acc11)
    c[row, col] = acc00
    if w1:
        c[row, col + 1] = acc01
    if h1:
        c[row + 1, col] = acc10
        if w1:
            c[row + 1, col + 1] = acc11


def one_more_block_per_side(m, n, k, bm, bn):
    """n // bn + 1 blocks always: 1/128 too many at 16x16 tiles, 0.39% from the loads plus C."""
    return ((n // bn + 1) * m * k + (m // bm + 1) * n * k) * 4 / 32


@cuda.jit
def c1_one_past_a_piece(out):
    """c1 = 128 + 4 * lane + 1: not a piece's first column (c1 // 4 floors it to the right piece)."""
    row = cuda.shared.array(256, numba.float32)
    lane = cuda.threadIdx.x
    for i in range(lane, 256, 32):
        row[i] = i
    cuda.syncthreads()
    c0 = 4 * lane
    c1 = 128 + 4 * lane + 1
    x0, x1, x2, x3 = load4_shared(row, c0 // 4)
    y0, y1, y2, y3 = load4_shared(row, c1 // 4)
    out[lane, 0], out[lane, 1], out[lane, 2], out[lane, 3] = x0, x1, x2, x3
    out[lane, 4], out[lane, 5], out[lane, 6], out[lane, 7] = y0, y1, y2, y3


def test_the_tile_loop_run_twice_fails_on_its_shared_loads(capsys):
    result = ex.check_tiled_kernel(tile_loop_run_twice)
    assert not result.passed and "128.0 shared loads per thread" in result.message, result.message
    assert "run more than once" in result.message


def test_a_redundant_global_reload_fails(capsys):
    result = ex.check_micro_tile_kernel(micro_reload_every_other_k)
    assert not result.passed and "global loads per k per thread" in result.message, result.message
    assert "4.45 global loads per k per thread, more than 4.1" in result.message, result.message


def test_the_counts_c_hint_needs_the_loads_plus_c_exactly(capsys):
    result = ex.check_global_sectors(one_more_block_per_side)
    assert not result.passed and "counts C" not in result.message, result.message
    assert "counts C too" in ex.check_global_sectors(sectors_with_c).message
    assert str(ex.solution_global_sectors(2048, 2048, 2048, 16, 16)) not in result.message


def test_a_piece_must_start_at_a_multiple_of_4(capsys):
    for _ in range(2):  # the same message every run, whichever lane the simulator ran first
        result = ex.check_conflict_free_pieces(c1_one_past_a_piece)
        assert not result.passed, result.message
        assert result.message.endswith("c1 is 129, not a multiple of 4: a piece starts at a multiple of 4 "
                                       "floats (c1 names its first column; load4_shared(row, c1 // 4) rounds "
                                       "it down, so the load reads other columns than the ones you named)")



WRONG_ANSWERS = [
    (ex.check_tiled_kernel, aliased_tiled_solution),
    (ex.check_micro_tile_kernel, micro_sizes_written_in),
    (ex.check_micro_tile_kernel, micro_odd_edge_only),
    (ex.check_micro_tile_kernel, aliased_micro_solution),
    (ex.check_global_sectors, calls_sector_solution),
    (ex.check_conflict_free_pieces, aliased_pieces_solution),
    (ex.check_warp_tile_wavefronts, ex.solution_warp_tile_wavefronts),  # the reference, read
    (ex.check_tiled_kernel, tiles_swapped),
    (ex.check_tiled_kernel, last_product_only),
    (ex.check_tiled_kernel, global_memory_instead),
    (ex.check_tiled_kernel, tile_loop_one_short),
    (ex.check_tiled_kernel, tile_loop_from_one),
    (ex.check_tiled_kernel, tile_indices_transposed),
    (ex.check_tiled_kernel, tile_loop_summed_twice),
    (ex.check_tiled_kernel, tile_loop_tail_short),
    (ex.check_tiled_kernel, tile_b_transposed),
    (ex.check_tiled_kernel, tile_loop_half),
    (ex.check_tiled_kernel, no_barrier_after_loads),
    (ex.check_tiled_kernel, no_barrier_after_products),
    (ex.check_tiled_kernel, last_tile_dropped),
    (ex.check_tiled_kernel, tile_product_assigned),
    (ex.check_tiled_kernel, tile_both_transposed),
    (ex.check_micro_tile_kernel, a1_same_row),
    (ex.check_micro_tile_kernel, a1_next_k),
    (ex.check_micro_tile_kernel, four_dot_products),
    (ex.check_micro_tile_kernel, no_edge_guard),
    (ex.check_micro_tile_kernel, micro_loop_one_short),
    (ex.check_micro_tile_kernel, micro_acc01_acc10_swapped),
    (ex.check_micro_tile_kernel, micro_no_block_index),
    (ex.check_micro_tile_kernel, micro_no_store_11),
    (ex.check_global_sectors, ideal_sectors),
    (ex.check_global_sectors, bytes_not_sectors),
    (ex.check_global_sectors, sectors_with_c),
    (ex.check_global_sectors, product_not_sum),
    (ex.check_global_sectors, floor_blocks),
    (ex.check_global_sectors, fractional_blocks),
    (ex.check_global_sectors, tile_sides_swapped),
    (ex.check_global_sectors, whole_sectors_per_row_of_a),
    (ex.check_conflict_free_pieces, hard_coded_pieces),
    (ex.check_conflict_free_pieces, scalar_pieces),
    (ex.check_conflict_free_pieces, contiguous_pieces),
    (ex.check_conflict_free_pieces, overlapping_pieces),
    (ex.check_conflict_free_pieces, half_row_pieces),
    (ex.check_warp_tile_wavefronts, quarter_warps_always),
    (ex.check_warp_tile_wavefronts, half_warps_always),
    (ex.check_warp_tile_wavefronts, pairs_by_interleave),
    (ex.check_warp_tile_wavefronts, guessed_eight),
    (ex.check_warp_tile_wavefronts, pairs_through_l_xor_4),
    (ex.check_warp_tile_wavefronts, table_looked_up),
    (ex.check_warp_tile_wavefronts, model_looked_up),
    (ex.check_warp_tile_wavefronts, calls_wavefront_solution),
    (ex.check_warp_tile_wavefronts, 8),  # the named layout's number, typed in
    (ex.check_global_sectors, whole_panels_at_the_edges),
    (ex.check_global_sectors, k_rounded_to_k_tiles),
    (ex.check_tiled_kernel, last_tile_bound_remainder),
    (ex.check_tiled_kernel, tile_loop_run_twice),
    (ex.check_micro_tile_kernel, micro_reload_every_other_k),
    (ex.check_global_sectors, one_more_block_per_side),
    (ex.check_conflict_free_pieces, c1_one_past_a_piece),
]

(test_notebook_has_one_cell_per_exercise, test_skeleton_fails, test_solution_passes,
 test_every_check_has_two_plausible_wrong_answers, test_wrong_answer_fails) = exercise_tests(
    NOTEBOOK, SOLUTIONS, WRONG_ANSWERS)


# ----------------------------------------------------------------------------- the fifth review (fixR6e)
@cuda.jit
def tiled_first_two_tiles_only(a, b, c):
    """The reviewer's 1I: right for K <= 32 (the named shape's 2 k-tiles), every later k-tile dropped."""
    a_tile = cuda.shared.array((16, 16), numba.float32)
    b_tile = cuda.shared.array((16, 16), numba.float32)
    tx, ty = cuda.threadIdx.x, cuda.threadIdx.y
    row, col = cuda.blockIdx.y * TILE + ty, cuda.blockIdx.x * TILE + tx
    m, depth = a.shape
    n = b.shape[1]
    acc = numba.float32(0.0)
    for start in range(0, depth, TILE):
        a_tile[ty, tx] = a[row, start + tx] if row < m and start + tx < depth else 0.0
        b_tile[ty, tx] = b[start + ty, col] if start + ty < depth and col < n else 0.0
        cuda.syncthreads()
        if start < 32:
            for k in range(TILE):
                acc += a_tile[ty, k] * b_tile[k, tx]
        cuda.syncthreads()
    if row < m and col < n:
        c[row, col] = acc


@cuda.jit
def micro_k_capped_at_16(a, b, c):
    """The reviewer's 2J: the solution with its k loop capped at 16 (right at K = 9)."""
    m, depth = a.shape
    n = b.shape[1]
    row = 2 * (cuda.blockIdx.y * cuda.blockDim.y + cuda.threadIdx.y)
    col = 2 * (cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x)
    if row >= m or col >= n:
        return
    h1, w1 = row + 1 < m, col + 1 < n
    acc00 = acc01 = acc10 = acc11 = np.float32(0)
    for k in range(min(depth, 16)):
        a0 = a[row, k]
        a1 = a[row + 1, k] if h1 else np.float32(0)
        b0 = b[k, col]
        b1 = b[k, col + 1] if w1 else np.float32(0)
        acc00 = cuda.fma(a0, b0, acc00)
        acc01 = cuda.fma(a0, b1, acc01)
        acc10 = cuda.fma(a1, b0, acc10)
        acc11 = cuda.fma(a1, b1, acc11)
    c[row, col] = acc00
    if w1:
        c[row, col + 1] = acc01
    if h1:
        c[row + 1, col] = acc10
        if w1:
            c[row + 1, col + 1] = acc11


def test_a_tiled_loop_that_stops_after_two_tiles_fails(capsys):
    result = ex.check_tiled_kernel(tiled_first_two_tiles_only)
    assert not result.passed, result.message
    assert "at 33x64 @ 64x12" in result.message and "every k from 32 on" in result.message, result.message


def test_a_micro_tile_with_k_capped_at_16_fails(capsys):
    result = ex.check_micro_tile_kernel(micro_k_capped_at_16)
    assert not result.passed, result.message
    assert "at 20x24 @ 24x66" in result.message and "every k from 16 on" in result.message, result.message
