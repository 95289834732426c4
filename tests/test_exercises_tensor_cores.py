"""Lesson 7's exercises: the notebook's skeletons fail their checks, the solutions pass, and plausible
wrong answers fail (among them lookups in the course's layout table and generated source, which the
array inputs of exercises 1 and 3 turn away, one call of a course function for exercise 4, and the
cp.async races of exercises 2 and 5, found by the order of barriers, copies and reads)."""

import math

import numpy as np
import pytest
from test_exercises import exercise_tests

from gpu_lessons import ptx
from gpu_lessons.exercises import tensor_cores as ex
from gpu_lessons.kernels import tensor_cores as tc
from gpu_lessons.lessons import tensor_cores as lesson
from gpu_lessons.sim.ptx import c_fragment

cuda, float32 = ex.cuda, ex.float32  # numba.cuda as gpu_lessons imported it

NOTEBOOK = "07_tensor_cores.ipynb"
SOLUTIONS = [
    (ex.check_c_owner, ex.solution_c_owner),
    (ex.check_cp_async_tile, ex.solution_cp_async_tile),
    (ex.check_per_slab, ex.solution_per_slab),
    (ex.check_issue_time, ex.solution_issue_time),
    (ex.check_pipeline, ex.solution_pipeline),
    (ex.check_mma_rounded, ex.solution_mma_rounded),
]


@cuda.jit
def four_bytes_read(x, y):  # src_bytes 4: the copy writes 16 bytes, 12 of them zeros
    tile = cuda.shared.array(128, float32)
    t = cuda.threadIdx.x
    for q in range(4):
        tile[4 * t + q] = math.nan
    cuda.syncthreads()
    ptx.cp_async16(tile, 4 * t, x, 4 * t, 4)
    ptx.cp_async_commit_group()
    ptx.cp_async_wait_group(0)
    cuda.syncthreads()
    for q in range(4):
        y[4 * t + q] = tile[127 - 4 * t - q]


@cuda.jit
def one_float_per_lane(x, y):  # cp_async4: one float of the lane's four
    tile = cuda.shared.array(128, float32)
    t = cuda.threadIdx.x
    for q in range(4):
        tile[4 * t + q] = math.nan
    cuda.syncthreads()
    ptx.cp_async4(tile, 4 * t, x, 4 * t, 4)
    ptx.cp_async_commit_group()
    ptx.cp_async_wait_group(0)
    cuda.syncthreads()
    for q in range(4):
        y[4 * t + q] = tile[127 - 4 * t - q]


@cuda.jit
def never_waits(x, y):  # committed, never waited for: on a GPU a race, on the simulator nothing lands
    tile = cuda.shared.array(128, float32)
    t = cuda.threadIdx.x
    for q in range(4):
        tile[4 * t + q] = math.nan
    cuda.syncthreads()
    ptx.cp_async16(tile, 4 * t, x, 4 * t, 16)
    ptx.cp_async_commit_group()
    cuda.syncthreads()
    for q in range(4):
        y[4 * t + q] = tile[127 - 4 * t - q]


@cuda.jit
def waits_for_all_but_one(x, y):  # wait_group(1) with one group committed: lets it stay in flight
    tile = cuda.shared.array(128, float32)
    t = cuda.threadIdx.x
    for q in range(4):
        tile[4 * t + q] = math.nan
    cuda.syncthreads()
    ptx.cp_async16(tile, 4 * t, x, 4 * t, 16)
    ptx.cp_async_commit_group()
    ptx.cp_async_wait_group(1)
    cuda.syncthreads()
    for q in range(4):
        y[4 * t + q] = tile[127 - 4 * t - q]


@cuda.jit
def plain_stores(x, y):  # the right outputs without cp.async: ordinary loads and stores, then a barrier
    tile = cuda.shared.array(128, float32)
    t = cuda.threadIdx.x
    for q in range(4):
        tile[4 * t + q] = math.nan
    cuda.syncthreads()
    for q in range(4):
        tile[4 * t + q] = x[4 * t + q]
    cuda.syncthreads()
    for q in range(4):
        y[4 * t + q] = tile[127 - 4 * t - q]


@cuda.jit
def half_by_cp_async(x, y):  # lanes 0..15 copy with cp.async, lanes 16..31 store: half the tile is plain
    tile = cuda.shared.array(128, float32)
    t = cuda.threadIdx.x
    for q in range(4):
        tile[4 * t + q] = math.nan
    cuda.syncthreads()
    if t < 16:
        ptx.cp_async16(tile, 4 * t, x, 4 * t, 16)
    else:
        for q in range(4):
            tile[4 * t + q] = x[4 * t + q]
    ptx.cp_async_commit_group()
    ptx.cp_async_wait_group(0)
    cuda.syncthreads()
    for q in range(4):
        y[4 * t + q] = tile[127 - 4 * t - q]


@cuda.jit
def reads_before_the_wait(x, y):  # the reads come before wait_group: nothing has landed yet
    tile = cuda.shared.array(128, float32)
    t = cuda.threadIdx.x
    for q in range(4):
        tile[4 * t + q] = math.nan
    cuda.syncthreads()
    ptx.cp_async16(tile, 4 * t, x, 4 * t, 16)
    ptx.cp_async_commit_group()
    cuda.syncthreads()
    for q in range(4):
        y[4 * t + q] = tile[127 - 4 * t - q]
    ptx.cp_async_wait_group(0)


@cuda.jit
def barrier_before_the_wait(x, y):  # the barrier first: another lane's copy may not have landed
    tile = cuda.shared.array(128, float32)
    t = cuda.threadIdx.x
    for q in range(4):
        tile[4 * t + q] = math.nan
    cuda.syncthreads()
    ptx.cp_async16(tile, 4 * t, x, 4 * t, 16)
    ptx.cp_async_commit_group()
    cuda.syncthreads()
    ptx.cp_async_wait_group(0)
    for q in range(4):
        y[4 * t + q] = tile[127 - 4 * t - q]


@cuda.jit
def no_barrier(x, y):  # each lane waits for its own copy, then reads another lane's
    tile = cuda.shared.array(128, float32)
    t = cuda.threadIdx.x
    for q in range(4):
        tile[4 * t + q] = math.nan
    cuda.syncthreads()
    ptx.cp_async16(tile, 4 * t, x, 4 * t, 16)
    ptx.cp_async_commit_group()
    ptx.cp_async_wait_group(0)
    for q in range(4):
        y[4 * t + q] = tile[127 - 4 * t - q]


@cuda.jit
def reads_x_not_the_tile(x, y):  # the copies land, but each output is read straight from x
    tile = cuda.shared.array(128, float32)
    t = cuda.threadIdx.x
    ptx.cp_async16(tile, 4 * t, x, 4 * t, 16)
    ptx.cp_async_commit_group()
    ptx.cp_async_wait_group(0)
    for q in range(4):
        y[4 * t + q] = x[127 - 4 * t - q]


@cuda.jit
def lane_0_copies_all(x, y):  # one lane issues all 32 copies
    tile = cuda.shared.array(128, float32)
    t = cuda.threadIdx.x
    for q in range(4):
        tile[4 * t + q] = math.nan
    cuda.syncthreads()
    if t == 0:
        for s in range(32):
            ptx.cp_async16(tile, 4 * s, x, 4 * s, 16)
    ptx.cp_async_commit_group()
    ptx.cp_async_wait_group(0)
    cuda.syncthreads()
    for q in range(4):
        y[4 * t + q] = tile[127 - 4 * t - q]


@cuda.jit
def synced_by_syncwarp(x, y):  # right: one warp is the whole block, so __syncwarp orders its lanes
    tile = cuda.shared.array(128, float32)
    t = cuda.threadIdx.x
    for q in range(4):
        tile[4 * t + q] = math.nan
    cuda.syncwarp()
    ptx.cp_async16(tile, 4 * t, x, 4 * t, 16)
    ptx.cp_async_commit_group()
    ptx.cp_async_wait_group(0)
    cuda.syncwarp()
    for q in range(4):
        y[4 * t + q] = tile[127 - 4 * t - q]


@cuda.jit
def syncwarp_before_the_wait(x, y):  # the syncwarp before the wait: another lane's copy may not have landed
    tile = cuda.shared.array(128, float32)
    t = cuda.threadIdx.x
    for q in range(4):
        tile[4 * t + q] = math.nan
    cuda.syncwarp()
    ptx.cp_async16(tile, 4 * t, x, 4 * t, 16)
    ptx.cp_async_commit_group()
    cuda.syncwarp()
    ptx.cp_async_wait_group(0)
    for q in range(4):
        y[4 * t + q] = tile[127 - 4 * t - q]


@cuda.jit
def half_warp_syncwarp(x, y):  # each half of the warp syncs alone, then reads the other half's copies
    tile = cuda.shared.array(128, float32)
    t = cuda.threadIdx.x
    for q in range(4):
        tile[4 * t + q] = math.nan
    cuda.syncthreads()
    ptx.cp_async16(tile, 4 * t, x, 4 * t, 16)
    ptx.cp_async_commit_group()
    ptx.cp_async_wait_group(0)
    cuda.syncwarp(0x0000FFFF if t < 16 else 0xFFFF0000)
    for q in range(4):
        y[4 * t + q] = tile[127 - 4 * t - q]


def _pipeline_after_issue(wait: int, wait_at_top: bool):
    """Exercise 5's kernel with the barrier after the next copy's issue and commit (the wait there too,
    or at the top): the copy into the stage read last iteration is ordered after no one's reads."""

    @cuda.jit
    def kernel(x, y, tiles):
        smem = cuda.shared.array(3 * 128, float32)
        t = cuda.threadIdx.x
        for q in range(12):
            smem[12 * t + q] = math.nan
        cuda.syncthreads()
        for s in range(2):
            if s < tiles:
                ptx.cp_async16(smem, 128 * s + 4 * t, x, 128 * s + 4 * t, 16)
            ptx.cp_async_commit_group()
        for tile in range(tiles):
            if wait_at_top:
                ptx.cp_async_wait_group(wait)
            ahead = tile + 2
            if ahead < tiles:
                ptx.cp_async16(smem, 128 * (ahead % 3) + 4 * t, x, 128 * ahead + 4 * t, 16)
            ptx.cp_async_commit_group()
            if not wait_at_top:
                ptx.cp_async_wait_group(wait)
            cuda.syncthreads()
            base = 128 * (tile % 3)
            for q in range(4):
                y[128 * tile + 4 * t + q] = smem[base + 127 - 4 * t - q]

    return kernel


@cuda.jit
def mma_by_simt(a, bt, d):  # the rounded product, each lane's four outputs by float32 loops: no MMA
    lane = cuda.threadIdx.x
    g, t = lane // 4, lane % 4
    for r, c in ((g, 2 * t), (g, 2 * t + 1), (g + 8, 2 * t), (g + 8, 2 * t + 1)):
        s = float32(0)
        for k in range(8):
            s += ptx.cvt_rna_tf32(a[r, k]) * ptx.cvt_rna_tf32(bt[c, k])
        d[r, c] = s


@cuda.jit
def pipeline_waits_all_after_tile_0(x, y, tiles):  # the reviewer's: wait_group(1) at tile 0, then 0
    smem = cuda.shared.array(3 * 128, float32)
    t = cuda.threadIdx.x
    for q in range(12):
        smem[12 * t + q] = math.nan
    cuda.syncthreads()
    for s in range(2):
        if s < tiles:
            ptx.cp_async16(smem, 128 * s + 4 * t, x, 128 * s + 4 * t, 16)
        ptx.cp_async_commit_group()
    for tile in range(tiles):
        if tile == 0:
            ptx.cp_async_wait_group(1)
        else:
            ptx.cp_async_wait_group(0)
        cuda.syncthreads()
        ahead = tile + 2
        if ahead < tiles:
            ptx.cp_async16(smem, 128 * (ahead % 3) + 4 * t, x, 128 * ahead + 4 * t, 16)
        ptx.cp_async_commit_group()
        base = 128 * (tile % 3)
        for q in range(4):
            y[128 * tile + 4 * t + q] = smem[base + 127 - 4 * t - q]


@cuda.jit
def pipeline_waits_all_at_the_end(x, y, tiles):  # overlaps until the last two tiles, then waits for all
    smem = cuda.shared.array(3 * 128, float32)
    t = cuda.threadIdx.x
    for q in range(12):
        smem[12 * t + q] = math.nan
    cuda.syncthreads()
    for s in range(2):
        if s < tiles:
            ptx.cp_async16(smem, 128 * s + 4 * t, x, 128 * s + 4 * t, 16)
        ptx.cp_async_commit_group()
    for tile in range(tiles):
        if tile + 2 < tiles:
            ptx.cp_async_wait_group(1)
        else:
            ptx.cp_async_wait_group(0)
        cuda.syncthreads()
        ahead = tile + 2
        if ahead < tiles:
            ptx.cp_async16(smem, 128 * (ahead % 3) + 4 * t, x, 128 * ahead + 4 * t, 16)
        ptx.cp_async_commit_group()
        base = 128 * (tile % 3)
        for q in range(4):
            y[128 * tile + 4 * t + q] = smem[base + 127 - 4 * t - q]


@cuda.jit
def token_mma_then_fma(a, bt, d):  # the reviewer's: an MMA of zeros, the rounded product by FMA loops
    lane = cuda.threadIdx.x
    g, t = lane // 4, lane % 4
    zero = float32(0)
    d0, d1, d2, d3 = ptx.mma_tf32(zero, zero, zero, zero, zero, zero, zero, zero, zero, zero)
    for r, c in ((g, 2 * t), (g, 2 * t + 1), (g + 8, 2 * t), (g + 8, 2 * t + 1)):
        s = float32(0)
        for k in range(8):
            s += ptx.cvt_rna_tf32(a[r, k]) * ptx.cvt_rna_tf32(bt[c, k])
        d[r, c] = s


@cuda.jit
def right_mma_then_fma(a, bt, d):  # the right MMA, its outputs dropped for the same product by FMA loops
    lane = cuda.threadIdx.x
    g, t = lane // 4, lane % 4
    a0, a1 = ptx.cvt_rna_tf32(a[g, t]), ptx.cvt_rna_tf32(a[g + 8, t])
    a2, a3 = ptx.cvt_rna_tf32(a[g, t + 4]), ptx.cvt_rna_tf32(a[g + 8, t + 4])
    b0, b1 = ptx.cvt_rna_tf32(bt[g, t]), ptx.cvt_rna_tf32(bt[g, t + 4])
    zero = float32(0)
    d0, d1, d2, d3 = ptx.mma_tf32(a0, a1, a2, a3, b0, b1, zero, zero, zero, zero)
    for r, c in ((g, 2 * t), (g, 2 * t + 1), (g + 8, 2 * t), (g + 8, 2 * t + 1)):
        s = float32(0)
        for k in range(8):
            s += ptx.cvt_rna_tf32(a[r, k]) * ptx.cvt_rna_tf32(bt[c, k])
        d[r, c] = s


@cuda.jit
def pipeline_drained_after_the_loop(x, y, tiles):  # right: the solution, then a wait for all after the loop
    smem = cuda.shared.array(3 * 128, float32)
    t = cuda.threadIdx.x
    for q in range(12):
        smem[12 * t + q] = math.nan
    cuda.syncthreads()
    for s in range(2):
        if s < tiles:
            ptx.cp_async16(smem, 128 * s + 4 * t, x, 128 * s + 4 * t, 16)
        ptx.cp_async_commit_group()
    for tile in range(tiles):
        ptx.cp_async_wait_group(1)
        cuda.syncthreads()
        ahead = tile + 2
        if ahead < tiles:
            ptx.cp_async16(smem, 128 * (ahead % 3) + 4 * t, x, 128 * ahead + 4 * t, 16)
        ptx.cp_async_commit_group()
        base = 128 * (tile % 3)
        for q in range(4):
            y[128 * tile + 4 * t + q] = smem[base + 127 - 4 * t - q]
    ptx.cp_async_wait_all()


def _pipeline(wait: int, barrier: bool, barrier_first: bool = False):
    """Exercise 5's kernel with this wait_group count and barrier placement."""

    @cuda.jit
    def kernel(x, y, tiles):
        smem = cuda.shared.array(3 * 128, float32)
        t = cuda.threadIdx.x
        for q in range(12):
            smem[12 * t + q] = math.nan
        cuda.syncthreads()
        for s in range(2):
            if s < tiles:
                ptx.cp_async16(smem, 128 * s + 4 * t, x, 128 * s + 4 * t, 16)
            ptx.cp_async_commit_group()
        for tile in range(tiles):
            if barrier_first:
                cuda.syncthreads()
            ptx.cp_async_wait_group(wait)
            if barrier:
                cuda.syncthreads()
            ahead = tile + 2
            if ahead < tiles:
                ptx.cp_async16(smem, 128 * (ahead % 3) + 4 * t, x, 128 * ahead + 4 * t, 16)
            ptx.cp_async_commit_group()
            base = 128 * (tile % 3)
            for q in range(4):
                y[128 * tile + 4 * t + q] = smem[base + 127 - 4 * t - q]

    return kernel


def _mma(round_a: bool, round_b: bool, transposed_read: bool, swap_a: bool = False):
    """Exercise 6's kernel: operands rounded or not; B read from bt as the layout says, or as if bt were B;
    a1 and a2 swapped or not."""

    @cuda.jit
    def kernel(a, bt, d):
        lane = cuda.threadIdx.x
        g, t = lane // 4, lane % 4
        a0, a1, a2, a3 = a[g, t], a[g + 8, t], a[g, t + 4], a[g + 8, t + 4]
        if swap_a:
            a1, a2 = a2, a1
        if transposed_read:
            b0, b1 = bt[g, t], bt[g, t + 4]
        else:
            b0, b1 = bt[t, g], bt[t + 4, g]
        if round_a:
            a0, a1 = ptx.cvt_rna_tf32(a0), ptx.cvt_rna_tf32(a1)
            a2, a3 = ptx.cvt_rna_tf32(a2), ptx.cvt_rna_tf32(a3)
        if round_b:
            b0, b1 = ptx.cvt_rna_tf32(b0), ptx.cvt_rna_tf32(b1)
        zero = float32(0)
        d0, d1, d2, d3 = ptx.mma_tf32(a0, a1, a2, a3, b0, b1, zero, zero, zero, zero)
        d[g, 2 * t] = d0
        d[g, 2 * t + 1] = d1
        d[g + 8, 2 * t] = d2
        d[g + 8, 2 * t + 1] = d3

    return kernel


def _owner_from_the_picture(row, col):
    """One call of the course's fragment_owners() (the layout picture's labels): right inside one MMA tile."""
    lane, register = tc.fragment_owners()["C"][row % 16, col % 8].split()
    return int(lane[1:]), 0, 0, int(register[1:])


def _owner_looked_up(row, col):
    """The picture's labels for the layout, the tiling right: a lookup in the course's table."""
    lane, register = tc.fragment_owners()["C"][row % 16, col % 8].split()
    return int(lane[1:]), row // 16, col // 8, int(register[1:])


def _owner_from_c_fragment(row, col):
    """The simulator's layout searched, the tiling right."""
    for lane in range(32):
        for q, cell in enumerate(c_fragment(lane)):
            if cell == (row % 16, col % 8):
                return lane, row // 16, col // 8, q
    return None


def _per_slab_counted_like_cell_34(wm, wn):
    """Section 6's counting of the generated source, generalised to any warp tile."""
    tile = tc.TcTile(bm=wm, bn=math.lcm(32, wn), wm=wm, wn=wn, round_inputs=False)
    source = [line.strip() for line in tc.tc_codegen.kernel_source(tile).splitlines()]
    slabs = tile.bk // 16
    a = [line for line in source if line.startswith("x") and "load4_shared" in line]
    b = [line for line in source if line.startswith("y") and "smem[" in line]
    mmas = [line for line in source if line.startswith("acc") and "mma_tf32" in line]
    return len(mmas) // slabs, len(a) // slabs, len(b) // slabs


_FRAGMENT_TABLE = None  # filled on first use, as a learner's notebook cell would


def _owner_from_fragment_owners(row, col):
    """fragment_owners()'s labels made an array and indexed with the rows and columns: a lookup that
    works on arrays, the tiling right."""
    labels = tc.fragment_owners()["C"]
    lanes = np.vectorize(lambda label: int(label.split()[0][1:]))(labels)
    registers = np.vectorize(lambda label: int(label.split()[1][1:]))(labels)
    return lanes[row % 16, col % 8], row // 16, col // 8, registers[row % 16, col % 8]


def _owner_from_c_fragment_table(row, col):
    """The simulator's c_fragment made a table, indexed with arrays, the tiling right."""
    lanes, registers = np.zeros((16, 8), np.int64), np.zeros((16, 8), np.int64)
    for lane in range(32):
        for q, (r, c) in enumerate(c_fragment(lane)):
            lanes[r, c], registers[r, c] = lane, q
    return lanes[row % 16, col % 8], row // 16, col // 8, registers[row % 16, col % 8]


def _owner_from_the_check(row, col):
    """The check's own answer, vectorised."""
    return np.vectorize(ex._accumulator_owner)(row, col)


def _owner_from_the_solution(row, col):
    """The reference solution, imported inside the function."""
    from gpu_lessons.exercises.tensor_cores import solution_c_owner

    return solution_c_owner(row, col)


def _per_slab_from_the_check(wm, wn):
    """The check's own count, vectorised."""
    return np.vectorize(ex._counted_per_slab)(wm, wn)


def _per_slab_counted_in_the_source(wm, wn):
    """Section 6's counting of the generated source, vectorised over the tiles."""
    return np.vectorize(_per_slab_counted_like_cell_34)(wm, wn)


def _inner(row, col):  # (lane, q) inside one 16x8 MMA tile, the layout right
    r, c = row % 16, col % 8
    return 4 * (r % 8) + c // 2, 2 * (r // 8) + c % 2


def _issue_time_of_the_lesson(base_us, n0, p0, n1, p1):
    """One call of the lesson's issue_time at the H200's 128 busy SMs and 1,980 MHz (ignores the base)."""
    return lesson.issue_time(n1, p1, 128, 1980.0)


REFUSED_LOOKUPS = [  # (check, answer, what the refusal names): right answers that look it up
    (ex.check_c_owner, _owner_from_fragment_owners, "tc.fragment_owners()"),
    (ex.check_c_owner, _owner_from_c_fragment_table, "c_fragment"),
    (ex.check_c_owner, _owner_from_the_check, "exercises._accumulator_owner"),
    (ex.check_c_owner, _owner_from_the_solution, "the reference solution solution_c_owner"),
    (ex.check_per_slab, _per_slab_from_the_check, "exercises._counted_per_slab"),
    (ex.check_per_slab, _per_slab_counted_in_the_source, "kernel_source"),
    (ex.check_per_slab, lambda wm, wn: ex.solution_per_slab(wm, wn),
     "the reference solution solution_per_slab"),
]

WRONG_ANSWERS = [
    *[(check, answer) for check, answer, _ in REFUSED_LOOKUPS],
    (ex.check_c_owner, _owner_from_the_picture),
    (ex.check_c_owner, _owner_looked_up),
    (ex.check_c_owner, _owner_from_c_fragment),
    (ex.check_c_owner, lambda row, col: (_inner(row, col)[0], row // 8, col // 8, _inner(row, col)[1])),
    (ex.check_c_owner, lambda row, col: (_inner(row, col)[0], col // 8, row // 16, _inner(row, col)[1])),
    (ex.check_c_owner, lambda row, col: (row % 8 + 8 * (col % 8 // 2), row // 16, col // 8,
                                         _inner(row, col)[1])),  # g, t swapped
    (ex.check_c_owner, lambda row, col: (_inner(row, col)[0], row // 16, col // 8,
                                         2 * (col % 2) + row % 16 // 8)),  # c1 <-> c2
    (ex.check_cp_async_tile, four_bytes_read),
    (ex.check_cp_async_tile, one_float_per_lane),
    (ex.check_cp_async_tile, plain_stores),
    (ex.check_cp_async_tile, half_by_cp_async),
    (ex.check_cp_async_tile, never_waits),
    (ex.check_cp_async_tile, waits_for_all_but_one),
    (ex.check_cp_async_tile, reads_before_the_wait),
    (ex.check_cp_async_tile, barrier_before_the_wait),
    (ex.check_cp_async_tile, no_barrier),
    (ex.check_cp_async_tile, reads_x_not_the_tile),
    (ex.check_cp_async_tile, lane_0_copies_all),
    (ex.check_cp_async_tile, syncwarp_before_the_wait),
    (ex.check_cp_async_tile, half_warp_syncwarp),
    (ex.check_per_slab, _per_slab_counted_like_cell_34),
    (ex.check_per_slab, lambda wm, wn: ((wm // 16) * (wn // 8), 2 * (wm // 16), 4 * (wn // 8))),  # one k-step
    (ex.check_per_slab, lambda wm, wn: (2 * (wm // 16) * (wn // 8), wm // 16, 4 * (wn // 8))),  # no g+8
    (ex.check_per_slab, lambda wm, wn: (2 * (wm // 16) * (wn // 8), 2 * (wm // 16), wn // 8)),  # B 16-byte
    (ex.check_issue_time, _issue_time_of_the_lesson),
    (ex.check_issue_time, lambda b, n0, p0, n1, p1: b * n1 / n0),  # instructions only
    (ex.check_issue_time, lambda b, n0, p0, n1, p1: b * p0 / p1),  # issue rate only
    (ex.check_issue_time, lambda b, n0, p0, n1, p1: b * n1 / n0 * p1 / p0),  # issue ratio upside down
    (ex.check_issue_time, lambda b, n0, p0, n1, p1: b),  # the change costs nothing
    # the measured durations looked up by instruction count, else the base's
    (ex.check_issue_time, lambda b, n0, p0, n1, p1: {313575424: 414.208, 318033920: 442.912,
                                                     313875456: 438.72, 301505536: 344.064}.get(n1, b)),
    (ex.check_pipeline, _pipeline(wait=2, barrier=True)),  # waits for nothing: the tile has not landed
    (ex.check_pipeline, _pipeline(wait=1, barrier=False)),  # no barrier in the loop
    (ex.check_pipeline, _pipeline(wait=1, barrier=False, barrier_first=True)),  # the barrier before the wait
    (ex.check_pipeline, _pipeline(wait=0, barrier=True)),  # right, but nothing stays in flight
    (ex.check_pipeline, pipeline_waits_all_after_tile_0),
    (ex.check_pipeline, pipeline_waits_all_at_the_end),
    (ex.check_pipeline, _pipeline_after_issue(wait=1, wait_at_top=True)),  # write-after-read races
    (ex.check_pipeline, _pipeline_after_issue(wait=1, wait_at_top=False)),
    (ex.check_pipeline, _pipeline_after_issue(wait=2, wait_at_top=False)),
    (ex.check_mma_rounded, _mma(round_a=False, round_b=False, transposed_read=True)),  # cut
    (ex.check_mma_rounded, _mma(round_a=True, round_b=False, transposed_read=True)),  # B cut
    (ex.check_mma_rounded, _mma(round_a=True, round_b=True, transposed_read=False)),  # bt read as B
    (ex.check_mma_rounded, _mma(round_a=True, round_b=True, transposed_read=True, swap_a=True)),  # a1, a2
    (ex.check_mma_rounded, mma_by_simt),  # the rounded product without the tensor cores
    (ex.check_mma_rounded, token_mma_then_fma),
    (ex.check_mma_rounded, right_mma_then_fma),
    (ex.check_mma_rounded, tc.mma_demo_kernel),  # the lesson's kernel: four arguments, B not transposed
]

(test_notebook_has_one_cell_per_exercise, test_skeleton_fails, test_solution_passes,
 test_every_check_has_two_plausible_wrong_answers, test_wrong_answer_fails) = exercise_tests(
    NOTEBOOK, SOLUTIONS, WRONG_ANSWERS)


@pytest.mark.parametrize("check, answer, what", REFUSED_LOOKUPS)
def test_lookup_is_refused_and_named(check, answer, what):
    """Each lookup gives the right numbers (on the check's own inputs); the check refuses it, names what
    it called, says the exercise is to work it out, and prints no answer."""
    if check is ex.check_c_owner:
        rows, cols = np.divmod(np.arange(64 * 64), 64)
        assert all(np.array_equal(mine, right) for mine, right in
                   zip(answer(rows, cols), ex.solution_c_owner(rows, cols), strict=True))
    else:
        wms, wns = (np.array(v) for v in zip(*ex.SLAB_TILES, strict=True))
        assert all(np.array_equal(mine, right) for mine, right in
                   zip(answer(wms, wns), ex.solution_per_slab(wms, wns), strict=True))
    result = check(answer)
    assert not result.passed
    assert what in result.message and "work it out yourself" in result.message, result.message
    assert "you say" not in result.message  # refused before any element is compared


def test_pipeline_that_stops_overlapping_is_named():
    """wait_group(1) at tile 0, wait_group(0) after: right outputs, but the check names the idle wait."""
    result = ex.check_pipeline(pipeline_waits_all_after_tile_0)
    assert not result.passed
    assert "left none of its copies in flight" in result.message, result.message
    assert "wait 2 of" in result.message, result.message


def test_pipeline_solution_keeps_a_copy_in_flight_at_every_wait_but_the_last():
    for kernel in (ex.solution_pipeline, pipeline_waits_all_after_tile_0):
        x = np.arange(128 * 5, dtype=np.float32)
        with ex.cp_async_log() as log:
            ex.trace(kernel, 1, 32, x, np.zeros_like(x), np.int64(5))
        assert (ex._idle_waits(log, 5) is None) == (kernel is ex.solution_pipeline)


def test_mma_outputs_must_reach_memory():
    """A token MMA (or a right one, dropped) beside the product by FMA loops: refused, the slip named."""
    for kernel in (token_mma_then_fma, right_mma_then_fma):
        result = ex.check_mma_rounded(kernel)
        assert not result.passed
        assert "what the MMA returned" in result.message, result.message


def test_pipeline_drained_after_the_loop_passes():
    """A wait for everything after the loop has nothing left to land: it is not an idle wait."""
    result = ex.check_pipeline(pipeline_drained_after_the_loop)
    assert result.passed, result


def test_syncwarp_orders_a_one_warp_tile():
    """A one-warp block: cuda.syncwarp() is its barrier, so the tile through shared memory passes."""
    result = ex.check_cp_async_tile(synced_by_syncwarp)
    assert result.passed, result
    result = ex.check_cp_async_tile(syncwarp_before_the_wait)
    assert not result.passed and "no barrier between the read and the copy" in result.message, result


# ----------------------------------------------------------------------------- review R7b


def _issue_time_ratio_of_the_lesson(base_us, n0, p0, n1, p1):
    """The lesson's issue_time, called twice and divided: the right ratio, computed by the course."""
    return base_us * lesson.issue_time(n1, p1, 128, 1980.0) / lesson.issue_time(n0, p0, 128, 1980.0)


@pytest.mark.parametrize("answer, what", [
    (lambda *a: ex.solution_issue_time(*a), "the reference solution solution_issue_time"),
    (_issue_time_ratio_of_the_lesson, "lesson.issue_time"),
])
def test_issue_time_lookup_is_refused_and_named(answer, what):
    """Exercise 4: a call of the reference solution or of the lesson's issue_time gives the right numbers
    but is refused, named, before any case is compared."""
    assert abs(answer(100.0, 2e8, 60.0, 2.2e8, 50.0) / ex.solution_issue_time(100.0, 2e8, 60.0, 2.2e8, 50.0)
               - 1) < 1e-9
    result = ex.check_issue_time(answer)
    assert not result.passed
    assert what in result.message and "work it out yourself" in result.message, result.message
    assert "you compute" not in result.message


@cuda.jit
def poison_after_issue(x, y):  # a lane's own store into the 16 bytes its cp.async is still copying
    tile = cuda.shared.array(128, float32)
    t = cuda.threadIdx.x
    ptx.cp_async16(tile, 4 * t, x, 4 * t, 16)
    ptx.cp_async_commit_group()
    for q in range(4):
        tile[4 * t + q] = math.nan
    ptx.cp_async_wait_group(0)
    cuda.syncthreads()
    for q in range(4):
        y[4 * t + q] = tile[127 - 4 * t - q]


@cuda.jit
def poison_into_a_neighbours_copy(x, y):  # a store into another lane's copy in flight, no barrier between
    tile = cuda.shared.array(128, float32)
    t = cuda.threadIdx.x
    ptx.cp_async16(tile, 4 * t, x, 4 * t, 16)
    ptx.cp_async_commit_group()
    tile[4 * ((t + 1) % 32)] = math.nan
    ptx.cp_async_wait_group(0)
    cuda.syncthreads()
    for q in range(4):
        y[4 * t + q] = tile[127 - 4 * t - q]


def test_store_into_a_copy_in_flight_is_a_race():
    """Exercise 2: the outputs come out right on the simulator (the copy lands at the wait, over the
    poison), but a store into bytes a cp.async has in flight is a race on a GPU: the check names it."""
    result = ex.check_cp_async_tile(poison_after_issue)
    assert not result.passed
    assert "stores into bytes its own copy is still writing" in result.message, result.message
    result = ex.check_cp_async_tile(poison_into_a_neighbours_copy)
    assert not result.passed
    assert "stores to bytes that lane" in result.message, result.message
    assert "no barrier between the write and the copy" in result.message, result.message


def test_poison_before_the_copy_is_not_a_race():
    """The skeleton's poison, stored before the barrier that precedes the copies, is ordered with them."""
    assert ex.check_cp_async_tile(ex.solution_cp_async_tile).passed
    assert ex.check_pipeline(ex.solution_pipeline).passed


_SLAB_TABLE = {tile: ex.solution_per_slab(*tile) for tile in ex.SLAB_TILES}


def _per_slab_from_a_table(wm, wn):
    """The five listed tiles' answers written in."""
    rows = [_SLAB_TABLE[(int(a), int(b))] for a, b in zip(np.ravel(wm), np.ravel(wn), strict=True)]
    return tuple(np.array(v) for v in zip(*rows, strict=True))


def _per_slab_right_on_the_five(wm, wn):
    """Right on the five listed tiles, wrong on others (B counted per 16 columns past wn = 56)."""
    b = np.where(np.isin(wn, [8, 16, 24, 40, 56]), 4 * (wn // 8), 2 * (wn // 8))
    return 2 * (wm // 16) * (wn // 8), 2 * (wm // 16), b


def test_per_slab_table_of_the_listed_tiles_fails_on_a_hidden_tile(monkeypatch):
    """Exercise 3: a table of the five listed tiles, or a count right only on them, fails on the tile drawn
    at random, in the same words every run (no tile named)."""
    messages = {ex.check_per_slab(_per_slab_from_a_table).message for _ in range(3)}
    assert len(messages) == 1, messages
    message = messages.pop()
    assert "not listed in the text" in message and "KeyError" in message, message
    monkeypatch.setattr(ex, "SLAB_FAMILY", ((32, 32),))
    result = ex.check_per_slab(_per_slab_right_on_the_five)
    assert not result.passed
    assert "not listed in the text" in result.message, result.message
    assert "4-byte loads of B" in result.message, result.message
    assert "32x32" not in result.message
    assert ex.check_per_slab(ex.solution_per_slab).passed


def test_slab_family_is_counted_by_the_solution():
    """Every tile the check may draw is counted by the generator as the reference solution says."""
    for wm, wn in ex.SLAB_FAMILY[::7]:
        assert ex._counted_per_slab(wm, wn) == tuple(int(v) for v in ex.solution_per_slab(wm, wn))


@cuda.jit(device=True)
def _barrier_unless_3_or_4(tiles):
    if tiles != 3 and tiles != 4:
        cuda.syncthreads()


@cuda.jit
def pipeline_sized_for_the_listed_counts(x, y, tiles):  # the barrier skipped when tiles is 3 or 4
    smem = cuda.shared.array(3 * 128, float32)
    t = cuda.threadIdx.x
    for q in range(12):
        smem[12 * t + q] = math.nan
    cuda.syncthreads()
    for s in range(2):
        if s < tiles:
            ptx.cp_async16(smem, 128 * s + 4 * t, x, 128 * s + 4 * t, 16)
        ptx.cp_async_commit_group()
    for tile in range(tiles):
        ptx.cp_async_wait_group(1)
        _barrier_unless_3_or_4(tiles)
        ahead = tile + 2
        if ahead < tiles:
            ptx.cp_async16(smem, 128 * (ahead % 3) + 4 * t, x, 128 * ahead + 4 * t, 16)
        ptx.cp_async_commit_group()
        base = 128 * (tile % 3)
        for q in range(4):
            y[128 * tile + 4 * t + q] = smem[base + 127 - 4 * t - q]


def test_pipeline_sized_for_the_listed_counts_fails_on_the_drawn_count(monkeypatch):
    """Exercise 5: a loop right only at the listed tile counts fails at the count drawn at random (here
    made 3), in words that do not depend on the draw."""
    monkeypatch.setattr(ex, "PIPELINE_RANDOM_TILES", (3,))
    result = ex.check_pipeline(pipeline_sized_for_the_listed_counts)
    assert not result.passed
    assert "drawn at random" in result.message and "races a copy" in result.message, result.message
    assert "3 tile(s)" not in result.message
    assert ex.check_pipeline(ex.solution_pipeline).passed
    assert set(ex.PIPELINE_RANDOM_TILES).isdisjoint(ex.PIPELINE_TILES) is True


# ----------------------------------------------------------------------------- review R7c


def _c_owner_by_getattr(row, col):  # the reviewer's: a name built at run time, invisible to reach
    return getattr(ex, "solution_" + "c_owner")(row, col)


def _c_owner_by_importlib(row, col):
    import importlib

    return importlib.import_module("gpu_lessons.exercises." + "tensor_cores").solution_c_owner(row, col)


_OWNER_VECTORIZED = {}  # filled on first use: np.vectorize of the check's own answer, held in a table


def _c_owner_by_vectorized_helper(row, col):
    owner = _OWNER_VECTORIZED.setdefault("f", np.vectorize(getattr(ex, "_accumulator" + "_owner")))
    return owner(row, col)


def _c_owner_hiding_the_refusal(row, col):  # the call raises; the learner's code swallows it
    try:
        return getattr(ex, "solution_" + "c_owner")(row, col)
    except Exception:  # noqa: BLE001 - the point of the test
        return 0, 0, 0, 0


def _per_slab_by_getattr(wm, wn):
    return getattr(ex, "solution_" + "per_slab")(wm, wn)


def _per_slab_by_counting_helper(wm, wn):
    count = np.vectorize(getattr(ex, "_counted" + "_per_slab"))
    return count(wm, wn)


def _issue_time_by_getattr(*args):
    return getattr(ex, "solution_issue_" + "time")(*args)


def _issue_time_through_globals(base_us, n0, p0, n1, p1):  # lesson.issue_time held under another name
    identity = globals()["_IDENTITY"]
    return base_us * identity(n1, p1, 1, 1) / identity(n0, p0, 1, 1)


_IDENTITY = lesson.issue_time


@pytest.mark.parametrize("check, answer, what", [
    (ex.check_c_owner, _c_owner_by_getattr, "the reference solution solution_c_owner"),
    (ex.check_c_owner, _c_owner_by_importlib, "the reference solution solution_c_owner"),
    (ex.check_c_owner, _c_owner_by_vectorized_helper, "exercises._accumulator_owner"),
    (ex.check_c_owner, _c_owner_hiding_the_refusal, "the reference solution solution_c_owner"),
    (ex.check_per_slab, _per_slab_by_getattr, "the reference solution solution_per_slab"),
    (ex.check_per_slab, _per_slab_by_counting_helper, "exercises._counted_per_slab"),
    (ex.check_issue_time, _issue_time_by_getattr, "the reference solution solution_issue_time"),
    (ex.check_issue_time, _issue_time_through_globals, "lesson.issue_time"),
])
def test_indirect_call_is_refused_while_the_check_runs(check, answer, what):
    """A call the static check cannot see (getattr with a built name, importlib, np.vectorize of a helper,
    a helper under another global name) is refused when the check runs the function, named, with no
    element compared; the helpers work again afterwards, and the solution still passes."""
    result = check(answer)
    assert not result.passed
    assert what in result.message and "work it out yourself" in result.message, result.message
    assert "while it ran" in result.message or "when the check ran it" in result.message, result.message
    assert "you say" not in result.message and "you compute" not in result.message, result.message
    assert ex._accumulator_owner(17, 9) == ex.solution_c_owner(17, 9)
    assert ex._counted_per_slab(64, 64) == ex.solution_per_slab(64, 64)
    assert lesson.issue_time(1e8, 50.0, 1, 1) > 0 and c_fragment(5)
    assert not ex._REFUSING
    solution = {ex.check_c_owner: ex.solution_c_owner, ex.check_per_slab: ex.solution_per_slab,
                ex.check_issue_time: ex.solution_issue_time}[check]
    assert check(solution).passed


@cuda.jit
def pipeline_wait_chosen_by_tile_count(x, y, tiles):  # the reviewer's: right up to 8 tiles, races above
    smem = cuda.shared.array(3 * 128, float32)
    t = cuda.threadIdx.x
    for q in range(12):
        smem[12 * t + q] = math.nan
    cuda.syncthreads()
    for s in range(2):
        if s < tiles:
            ptx.cp_async16(smem, 128 * s + 4 * t, x, 128 * s + 4 * t, 16)
        ptx.cp_async_commit_group()
    for tile in range(tiles):
        ptx.cp_async_wait_group(1 if tiles <= 8 else 2)
        cuda.syncthreads()
        ahead = tile + 2
        if ahead < tiles:
            ptx.cp_async16(smem, 128 * (ahead % 3) + 4 * t, x, 128 * ahead + 4 * t, 16)
        ptx.cp_async_commit_group()
        base = 128 * (tile % 3)
        for q in range(4):
            y[128 * tile + 4 * t + q] = smem[base + 127 - 4 * t - q]


def test_pipeline_wait_chosen_by_tile_count_fails_at_9_tiles():
    """Exercise 5: 9 tiles are among the fixed counts, so a wait right only up to 8 tiles fails there."""
    assert 9 in ex.PIPELINE_TILES
    result = ex.check_pipeline(pipeline_wait_chosen_by_tile_count)
    assert not result.passed
    assert result.message.startswith("9 tile(s)"), result.message
    assert "reads bytes that lane" in result.message, result.message
    assert "cp_async_wait_group(" not in result.message and "wait_group(1)" not in result.message


@cuda.jit
def pipeline_drains_after_tile_8(x, y, tiles):  # the reviewer's: waits for everything from tile 8 on
    smem = cuda.shared.array(3 * 128, float32)
    t = cuda.threadIdx.x
    for q in range(12):
        smem[12 * t + q] = math.nan
    cuda.syncthreads()
    for s in range(2):
        if s < tiles:
            ptx.cp_async16(smem, 128 * s + 4 * t, x, 128 * s + 4 * t, 16)
        ptx.cp_async_commit_group()
    for tile in range(tiles):
        if tile < 8:
            ptx.cp_async_wait_group(1)
        else:
            ptx.cp_async_wait_group(0)
        cuda.syncthreads()
        ahead = tile + 2
        if ahead < tiles:
            ptx.cp_async16(smem, 128 * (ahead % 3) + 4 * t, x, 128 * ahead + 4 * t, 16)
        ptx.cp_async_commit_group()
        base = 128 * (tile % 3)
        for q in range(4):
            y[128 * tile + 4 * t + q] = smem[base + 127 - 4 * t - q]


def test_pipeline_that_stops_overlapping_after_tile_8_fails_at_12_tiles():
    result = ex.check_pipeline(pipeline_drains_after_tile_8)
    assert not result.passed and result.message.startswith("12 tile(s)"), result.message


def test_no_output_before_the_exercises_prints_exercise_5s_wait():
    """Section 5 prints the generated loop at another depth than exercise 5's (4 stages against 3), so
    exercise 5's two lines do not stand in an earlier cell."""
    import json
    from pathlib import Path

    cells = json.loads((Path(__file__).parents[1] / "notebooks" / NOTEBOOK).read_text())["cells"]
    first_exercise = next(i for i, c in enumerate(cells) if "exercise" in c["metadata"].get("tags", []))
    shown = "".join("".join(o.get("text", "")) for c in cells[:first_exercise] for o in c.get("outputs", []))
    shown += "".join("".join(c["source"]) for c in cells[:first_exercise])
    assert "cp_async_wait_group(2)" in shown  # section 5's loop, 4 stages
    assert "cp_async_wait_group(1)" not in shown and "ahead = tile + u2" not in shown


@cuda.jit
def copies_one_float4_off(x, y):  # the reviewer's: the destination shifted by one float4
    tile = cuda.shared.array(128, float32)
    t = cuda.threadIdx.x
    for q in range(4):
        tile[4 * t + q] = math.nan
    cuda.syncthreads()
    if t < 31:
        ptx.cp_async16(tile, 4 * t + 4, x, 4 * t, 16)
    ptx.cp_async_commit_group()
    ptx.cp_async_wait_group(0)
    cuda.syncthreads()
    for q in range(4):
        y[4 * t + q] = tile[127 - 4 * t - q]


def test_shifted_destination_is_named():
    result = ex.check_cp_async_tile(copies_one_float4_off)
    assert not result.passed
    assert "lane 0's cp.async wrote tile[4 .. 7]" in result.message and "destination" in result.message
    assert "Hint (section 5)" not in result.message, result.message


@cuda.jit
def mma_stores_d1_d2_swapped(a, bt, d):  # the reviewer's: the right MMA, d1 and d2 in each other's place
    lane = cuda.threadIdx.x
    g, t = lane // 4, lane % 4
    a0, a1 = ptx.cvt_rna_tf32(a[g, t]), ptx.cvt_rna_tf32(a[g + 8, t])
    a2, a3 = ptx.cvt_rna_tf32(a[g, t + 4]), ptx.cvt_rna_tf32(a[g + 8, t + 4])
    b0, b1 = ptx.cvt_rna_tf32(bt[g, t]), ptx.cvt_rna_tf32(bt[g, t + 4])
    zero = float32(0)
    d0, d1, d2, d3 = ptx.mma_tf32(a0, a1, a2, a3, b0, b1, zero, zero, zero, zero)
    d[g, 2 * t] = d0
    d[g, 2 * t + 1] = d2
    d[g + 8, 2 * t] = d1
    d[g + 8, 2 * t + 1] = d3


def test_swapped_stores_are_named():
    result = ex.check_mma_rounded(mma_stores_d1_d2_swapped)
    assert not result.passed
    assert "not each in its place" in result.message and "stores d0..d3" in result.message, result.message
    assert "fragments" not in result.message
