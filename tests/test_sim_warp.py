"""Warp-level primitives on numba-cuda's simulator (gpu_lessons.sim.warp), checked against NumPy.

Expected values come straight from the PTX ISA's shfl.sync pseudocode and the CUDA C Programming
Guide's descriptions, written here independently of the implementation.
"""

import json
import sys
import time
import warnings
import zlib
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
try:
    import gpu_lessons
except ModuleNotFoundError:  # a checkout without `pip install -e .`
    sys.path.insert(0, str(ROOT))
    import gpu_lessons

if not gpu_lessons.SIMULATED:
    pytest.skip("these test the simulator's own warp primitives (on a GPU the hardware runs them; "
                "test_simulator_matches_gpu_bit_for_bit compares the two through a recording)",
                allow_module_level=True)

from numba import cuda  # noqa: E402

from gpu_lessons.sim import warp  # noqa: E402
from gpu_lessons.sim.warp import (  # noqa: E402
    POISON_INT32,
    POISON_INT64,
    UndefinedShuffleWarning,
    WarpDeadlockError,
    WarpMaskError,
    shfl_c_operand,
    shfl_source_lane,
)
from gpu_lessons.sim.warp_cases import masked_shuffles  # noqa: E402

FULL = 0xFFFFFFFF
MODES = ("idx", "up", "down", "bfly")
NUMBA_C = {"idx": 0x1F, "up": 0, "down": 0x1F, "bfly": 0x1F}  # numba-cuda's intrinsics.py
RECORDING = ROOT / "data" / "nvidia-h200" / "checks" / "warp_primitives.npz"
SENTINEL = -7


# --- Independent references ---------------------------------------------------------------------


def ptx_sources(mode, lane, b, c):
    """PTX ISA shfl.sync pseudocode, vectorized: (source lane, valid) for each lane."""
    lane = np.asarray(lane, dtype=np.int64)
    bval = np.asarray(b, dtype=np.int64) & 0x1F
    cval = c & 0x1F
    segmask = (c >> 8) & 0x1F
    max_lane = (lane & segmask) | (cval & ~segmask)
    min_lane = lane & segmask
    if mode == "up":
        j = lane - bval
        pval = j >= max_lane
    elif mode == "down":
        j = lane + bval
        pval = j <= max_lane
    elif mode == "bfly":
        j = lane ^ bval
        pval = j <= max_lane
    else:
        j = min_lane | (bval & ~segmask)
        pval = j <= max_lane
    return np.where(pval, j, lane), pval


def cuda_c_source(mode, lane, b, width):
    """The lane __shfl_*_sync(..., width) reads, per the CUDA C Programming Guide.

    PTX uses only the low 5 bits of b, so a delta or lane mask of 32..40 acts as b % 32.
    """
    start = lane - lane % width  # the segment's first lane
    if mode == "idx":  # srcLane modulo width, within the caller's segment
        return start + b % width
    delta = b % 32
    if mode == "up":  # lanes below delta within the segment keep their own value
        return lane - delta if lane % width >= delta else lane
    if mode == "down":  # lanes whose source is past the segment's end keep their own value
        return lane + delta if lane % width + delta < width else lane
    target = lane ^ delta  # bfly: earlier segments may be read, later ones not
    return target if target // width <= lane // width else lane


def linear_indices(block):
    """Linear thread index x + bx*(y + by*z) for each thread, in np.ndindex(block) order."""
    dims = tuple(block) + (1,) * (3 - len(block))
    return [x + dims[0] * (y + dims[1] * z) for x, y, z in np.ndindex(*dims)]


def block_size(block):
    return int(np.prod(block))


def random_masks(rng, grid, block, style):
    """(grid, warps) masks naming only existing lanes: 'full' (all of them) or 'random'."""
    threads = block_size(block)
    warps = -(-threads // 32)
    masks = np.zeros((grid, warps), dtype=np.int64)
    for blk in range(grid):
        for w in range(warps):
            existing = (1 << min(32, threads - 32 * w)) - 1
            mask = existing if style == "full" else int(rng.integers(1, 1 << 32)) & existing
            masks[blk, w] = mask or existing
    return masks


def expected_shuffles(values, b, masks, block):
    """What each participating thread gets from each of the four shuffles (numba's c operands)."""
    threads = block_size(block)
    expected = np.full((4, values.size), SENTINEL, dtype=values.dtype)
    undefined = 0
    for g in range(values.size):
        blk, t = divmod(g, threads)
        lane, base = t % 32, blk * threads + (t - t % 32)
        mask = int(masks[blk, t // 32])
        if not mask >> lane & 1:
            continue
        for row, mode in enumerate(MODES):
            source, valid = ptx_sources(mode, lane, b[row, g], NUMBA_C[mode])
            if not valid:
                expected[row, g] = values[g]
            elif mask >> int(source) & 1:
                expected[row, g] = values[base + int(source)]
            else:
                undefined += 1
                expected[row, g] = np.nan if values.dtype.kind == "f" else (
                    POISON_INT32 if values.dtype == np.int32 else POISON_INT64)
    return expected, undefined


def random_values(rng, dtype, count):
    if np.dtype(dtype).kind == "i":
        info = np.iinfo(dtype)
        return rng.integers(info.min, info.max, count, dtype=dtype, endpoint=True)
    return (rng.standard_normal(count) * 1e6).astype(dtype)


# --- Kernels, as a learner would write them -----------------------------------------------------


@cuda.jit
def vote_kernel(predicates, masks, out):
    t = cuda.threadIdx.x + cuda.blockDim.x * (cuda.threadIdx.y + cuda.blockDim.y * cuda.threadIdx.z)
    g = cuda.blockIdx.x * cuda.blockDim.x * cuda.blockDim.y * cuda.blockDim.z + t
    m = masks[cuda.blockIdx.x, t // 32]
    if (m >> (t % 32)) & 1:
        p = predicates[g]
        out[0, g] = cuda.ballot_sync(m, p)
        out[1, g] = cuda.all_sync(m, p)
        out[2, g] = cuda.any_sync(m, p)
        out[3, g] = cuda.eq_sync(m, p)
        out[4, g] = cuda.ballot_sync(m, p > 0)


@cuda.jit
def lane_kernel(out):
    t = cuda.threadIdx.x + cuda.blockDim.x * (cuda.threadIdx.y + cuda.blockDim.y * cuda.threadIdx.z)
    out[t] = cuda.laneid


# --- The pure shuffle rule ----------------------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("width", [1, 2, 4, 8, 16, 32])
def test_shfl_source_lane_matches_cuda_c(mode, width):
    for lane in range(32):
        for b in range(41):
            source, valid = shfl_source_lane(mode, lane, b, width)
            assert source == cuda_c_source(mode, lane, b, width), (mode, width, lane, b)
            ptx_source, ptx_valid = ptx_sources(mode, lane, b, shfl_c_operand(mode, width))
            assert (source, valid) == (int(ptx_source), bool(ptx_valid))


def test_shfl_c_operand_matches_numba_cuda_at_width_32():
    assert {mode: shfl_c_operand(mode) for mode in MODES} == NUMBA_C
    assert shfl_c_operand("down", 8) == (24 << 8) | 0x1F
    assert shfl_c_operand("up", 8) == 24 << 8
    with pytest.raises(ValueError, match="power of two"):
        shfl_source_lane("idx", 0, 0, width=3)


def test_shfl_source_lane_uses_low_five_bits_of_b():
    assert shfl_source_lane("down", 3, 33) == (4, True)
    assert shfl_source_lane("up", 3, -1) == (3, False)  # -1 & 31 == 31
    assert shfl_source_lane("idx", 9, 37) == (5, True)


# --- Lanes ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("block", [(7, 9), (3, 5, 4), (70,)])
def test_laneid_is_linear_index_mod_32(block):
    out = np.full(block_size(block), -1, dtype=np.int32)
    lane_kernel[1, block](out)
    np.testing.assert_array_equal(out, np.arange(block_size(block)) % 32)
    assert sorted(linear_indices(block)) == list(range(block_size(block)))


# --- Shuffles ------------------------------------------------------------------------------------

SHUFFLE_CONFIGS = [  # (block, dtype, mask style, b range)
    ((64,), np.int32, "full", (0, 41)),
    ((48,), np.float64, "full", (0, 41)),  # a partial last warp: its full mask is 0x0000ffff
    ((70,), np.int64, "random", (-8, 41)),
    ((7, 9), np.float32, "random", (0, 41)),
    ((7, 9), np.int32, "full", (0, 41)),
    ((64,), np.float64, "random", (0, 41)),
]


@pytest.mark.parametrize("block, dtype, style, b_range", SHUFFLE_CONFIGS,
                         ids=[f"{c[0]}-{np.dtype(c[1]).name}-{c[2]}" for c in SHUFFLE_CONFIGS])
def test_shuffles_match_ptx(block, dtype, style, b_range):
    rng = np.random.default_rng(zlib.crc32(repr((block, style)).encode()))
    grid = 2
    n = grid * block_size(block)
    values = random_values(rng, dtype, n)
    b = rng.integers(*b_range, size=(4, n)).astype(np.int32)
    masks = random_masks(rng, grid, block, style)
    expected, undefined = expected_shuffles(values, b, masks, block)
    out = np.full((4, n), SENTINEL, dtype=dtype)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", UndefinedShuffleWarning)
        masked_shuffles[grid, block](values, b, masks, out)
    np.testing.assert_array_equal(out, expected)
    undefined_warnings = [w for w in caught if issubclass(w.category, UndefinedShuffleWarning)]
    assert len(undefined_warnings) == (1 if undefined else 0)


SEEN = {}


@cuda.jit
def typed_shuffle_kernel(out):
    t = cuda.threadIdx.x
    for value in (np.int32(t), np.int64(-t), np.float32(t + 0.5), np.float64(t - 0.25), t, t * 1.5):
        SEEN[t, type(value)] = cuda.shfl_xor_sync(0xFFFFFFFF, value, 1)
    out[t] = 1


def test_shuffles_keep_the_callers_type():
    SEEN.clear()
    typed_shuffle_kernel[1, 32](np.zeros(32, np.int32))
    for (t, kind), result in SEEN.items():
        assert type(result) is kind
        partner = t ^ 1
        expected = {np.int32: partner, np.int64: -partner, np.float32: partner + 0.5,
                    np.float64: partner - 0.25, int: partner, float: partner * 1.5}[kind]
        assert result == expected


@cuda.jit
def shuffle_value_kernel(values, out):
    t = cuda.threadIdx.x
    out[t] = cuda.shfl_down_sync(0xFFFFFFFF, values[t], 1)


@pytest.mark.parametrize("dtype", [np.uint32, np.float16, np.bool_])
def test_shuffle_rejects_types_numba_cannot_shuffle(dtype):
    with pytest.raises(TypeError, match="32- and 64-bit ints and floats"):
        shuffle_value_kernel[1, 32](np.ones(32, dtype), np.zeros(32, dtype))


# --- Votes ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("block, style", [((64,), "full"), ((70,), "random"), ((7, 9), "random")])
def test_votes_match_definition(block, style):
    rng = np.random.default_rng(block_size(block))
    grid = 2
    n = grid * block_size(block)
    predicates = rng.choice(np.array([0, 1, -3, 2**31 - 1], dtype=np.int32), n)
    predicates[: min(32, n)] = 5  # one warp all true: all_sync and eq_sync true, lane 31 set
    masks = random_masks(rng, grid, block, style)
    out = np.full((5, n), SENTINEL, dtype=np.int64)
    vote_kernel[grid, block](predicates, masks, out)

    threads = block_size(block)
    expected = np.full((5, n), SENTINEL, dtype=np.int64)
    for g in range(n):
        blk, t = divmod(g, threads)
        mask = int(masks[blk, t // 32])
        if not mask >> (t % 32) & 1:
            continue
        base = blk * threads + t - t % 32
        lanes = [lane for lane in range(32) if mask >> lane & 1]
        votes = [predicates[base + lane] != 0 for lane in lanes]
        ballot = sum(1 << lane for lane, vote in zip(lanes, votes, strict=True) if vote)
        positive = sum(1 << lane for lane in lanes if predicates[base + lane] > 0)
        as_int32 = lambda bits: bits - (1 << 32) if bits >= 1 << 31 else bits  # noqa: E731
        expected[:, g] = [as_int32(ballot), all(votes), any(votes), len(set(votes)) == 1,
                          as_int32(positive)]
    np.testing.assert_array_equal(out, expected)
    if style == "full":
        assert out[0, 0] == -1  # all 32 lanes: the GPU's int32 0xffffffff


VOTE_RESULTS = {}


@cuda.jit
def vote_types_kernel(out):
    t = cuda.threadIdx.x
    VOTE_RESULTS[t] = (cuda.ballot_sync(0xFFFFFFFF, t >= 0), cuda.all_sync(0xFFFFFFFF, t),
                       cuda.any_sync(0xFFFFFFFF, t), cuda.eq_sync(0xFFFFFFFF, True),
                       cuda.popc(cuda.ballot_sync(0xFFFFFFFF, 1)))
    out[t] = 1


def test_vote_result_types_match_numba():
    VOTE_RESULTS.clear()
    vote_types_kernel[1, 32](np.zeros(32, np.int32))
    ballot, all_, any_, eq, popc = VOTE_RESULTS[7]
    assert type(ballot) is np.int32 and ballot == -1
    assert (all_, any_, eq) == (False, True, True)
    assert all(type(v) is bool for v in (all_, any_, eq))
    assert popc == 32  # popc of a negative int32 ballot counts its 32 bits


@cuda.jit
def float_predicate_kernel(out):
    out[cuda.threadIdx.x] = cuda.ballot_sync(0xFFFFFFFF, 0.5)


def test_vote_rejects_float_predicate():
    with pytest.raises(TypeError, match="integer or boolean"):
        float_predicate_kernel[1, 32](np.zeros(32, np.int32))


# --- syncwarp ------------------------------------------------------------------------------------


@cuda.jit
def syncwarp_kernel(values, partners, masks, out):
    buffer = cuda.shared.array(96, np.float32)
    t = cuda.threadIdx.x
    m = masks[0, t // 32]
    if (m >> (t % 32)) & 1:
        buffer[t] = values[t]
        cuda.syncwarp(m)
        out[t] = buffer[(t // 32) * 32 + partners[t]]


def test_syncwarp_orders_shared_memory_within_mask():
    rng = np.random.default_rng(3)
    block = (70,)
    values = rng.standard_normal(70).astype(np.float32)
    masks = random_masks(rng, 1, block, "random")
    partners = np.zeros(70, dtype=np.int32)
    expected = np.full(70, SENTINEL, dtype=np.float32)
    for t in range(70):
        mask = int(masks[0, t // 32])
        lanes = [lane for lane in range(32) if mask >> lane & 1]
        partners[t] = rng.choice(lanes)
        if mask >> (t % 32) & 1:
            expected[t] = values[(t // 32) * 32 + partners[t]]
    out = np.full(70, SENTINEL, dtype=np.float32)
    syncwarp_kernel[1, block](values, partners, masks, out)
    np.testing.assert_array_equal(out, expected)


@cuda.jit
def syncwarp_default_kernel(out):
    buffer = cuda.shared.array(64, np.int32)
    t = cuda.threadIdx.x
    buffer[t] = t * 3
    result = cuda.syncwarp()
    out[t] = buffer[t ^ 31] + (0 if result is None else 1000)


def test_syncwarp_default_mask_returns_none():
    out = np.zeros(64, np.int32)
    syncwarp_default_kernel[1, 64](out)
    np.testing.assert_array_equal(out, (np.arange(64) ^ 31) * 3)


# --- activemask ----------------------------------------------------------------------------------


@cuda.jit
def divergent_loop_kernel(out):
    t = cuda.threadIdx.x
    trips = 3 if t % 32 < 16 else 1
    for trip in range(trips):
        out[trip, t] = cuda.activemask()
    out[3, t] = cuda.activemask()


def test_activemask_divergent_loop_matches_simt():
    out = np.zeros((4, 48), np.uint32)  # warp 1 is partial: lanes 0-15 only
    divergent_loop_kernel[1, 48](out)
    assert out[:, 0].tolist() == [FULL, 0xFFFF, 0xFFFF, FULL]
    assert out[:, 20].tolist() == [FULL, 0, 0, FULL]
    assert out[:, 32].tolist() == [0xFFFF] * 4
    assert out.dtype == np.uint32


@cuda.jit
def branches_kernel(out):
    lane = cuda.laneid
    if lane % 3 == 0:
        out[0, cuda.threadIdx.x] = cuda.activemask()
    else:
        out[1, cuda.threadIdx.x] = cuda.activemask()
    out[2, cuda.threadIdx.x] = cuda.activemask()


def test_activemask_branches_are_separate():
    out = np.zeros((3, 32), np.uint32)
    branches_kernel[1, 32](out)
    thirds = sum(1 << lane for lane in range(0, 32, 3))
    assert set(out[0, ::3]) == {thirds}
    assert set(np.delete(out[1], np.arange(0, 32, 3))) == {FULL ^ thirds}
    assert set(out[2]) == {FULL}


@cuda.jit
def exit_and_barrier_kernel(out):
    t = cuda.threadIdx.x
    if t % 32 >= 20:
        return
    if t % 32 < 8:
        out[0, t] = cuda.activemask()
    cuda.syncthreads()
    out[1, t] = cuda.activemask()


def test_activemask_ignores_exited_lanes_and_lanes_in_syncthreads():
    out = np.zeros((2, 64), np.uint32)
    exit_and_barrier_kernel[1, 64](out)
    assert set(out[0, [0, 7, 32, 39]]) == {0xFF}
    assert set(out[1, [0, 19, 32, 51]]) == {0xFFFFF}


# --- Errors instead of hangs ---------------------------------------------------------------------


@cuda.jit
def early_exit_kernel(values, out):
    t = cuda.threadIdx.x
    if cuda.blockIdx.x == 1 and t == 37:
        return
    out[t] = cuda.shfl_down_sync(0xFFFFFFFF, values[t], 1)


def test_lane_exit_while_others_shuffle_raises_quickly():
    start = time.perf_counter()
    with pytest.raises(WarpDeadlockError) as caught:
        early_exit_kernel[2, 64](np.ones(64, np.float32), np.zeros(64, np.float32))
    assert time.perf_counter() - start < 5
    message = str(caught.value)
    assert "kernel 'early_exit_kernel', block (1, 0, 0), warp 1" in message
    assert "lane 5 has exited" in message
    assert "shfl_down_sync(mask=0xffffffff)" in message


@cuda.jit
def barrier_kernel(values, out):
    t = cuda.threadIdx.x
    if t == 3:
        cuda.syncthreads()
    out[t] = cuda.shfl_xor_sync(0xFFFFFFFF, values[t], 1)
    if t != 3:
        cuda.syncthreads()


def test_lane_in_syncthreads_while_others_shuffle_raises():
    start = time.perf_counter()
    with pytest.raises(WarpDeadlockError) as caught:
        barrier_kernel[1, 32](np.ones(32, np.float32), np.zeros(32, np.float32))
    assert time.perf_counter() - start < 5
    message = str(caught.value)
    assert "kernel 'barrier_kernel', block (0, 0, 0), warp 0" in message
    assert "lane 3 waits in cuda.syncthreads()" in message


@cuda.jit
def barrier_in_branch_kernel(values, out):
    """A tree with its barrier inside the branch, finished by shuffles (lesson 5's trap): lanes 0-15
    of warp 0 wait in syncthreads for lanes 16-31, which wait at the shuffle for them."""
    t = cuda.threadIdx.x
    s = 32
    while s >= 16:
        if t < s:
            cuda.syncthreads()
        s //= 2
    if t < 32:
        out[t] = cuda.shfl_down_sync(0xFFFFFFFF, values[t], 1)


def test_a_barrier_inside_a_branch_raises_every_time():
    """Whichever lanes the deadlock is found with, the others raise too: none waits forever for a
    lane that already raised (numba's BlockManager can miss a thread's exception)."""
    for _ in range(8):
        start = time.perf_counter()
        with pytest.raises(WarpDeadlockError, match="waits? in cuda.syncthreads()"):
            barrier_in_branch_kernel[1, 64](np.ones(64, np.float32), np.zeros(64, np.float32))
        assert time.perf_counter() - start < 5


@cuda.jit
def mismatched_kernel(out):
    t = cuda.threadIdx.x
    if t == 0:
        out[t] = cuda.ballot_sync(0xFFFFFFFF, 1)
    else:
        out[t] = cuda.any_sync(0xFFFFFFFF, 1)


def test_lanes_at_different_collectives_raise():
    with pytest.raises(WarpDeadlockError, match="cannot complete either"):
        mismatched_kernel[1, 32](np.zeros(32, np.int32))


@cuda.jit
def full_mask_kernel(out):
    out[cuda.threadIdx.x] = cuda.ballot_sync(0xFFFFFFFF, 1)


def test_mask_naming_missing_lanes_raises():
    with pytest.raises(WarpMaskError) as caught:
        full_mask_kernel[1, 48](np.zeros(48, np.int32))
    message = str(caught.value)
    assert "kernel 'full_mask_kernel', block (0, 0, 0), warp 1" in message
    assert "lanes 16-31, which do not exist" in message
    assert "mask 0x0000ffff" in message


@cuda.jit
def outside_mask_kernel(out):
    t = cuda.threadIdx.x
    out[t] = cuda.shfl_sync(0x0000FFFF, t, 0)  # lanes 16-31 are not in the mask


def test_caller_outside_its_mask_raises():
    with pytest.raises(WarpMaskError, match="which does not include it"):
        outside_mask_kernel[1, 32](np.zeros(32, np.int64))


@cuda.jit
def undefined_source_kernel(values, out):
    t = cuda.threadIdx.x
    if t < 16:  # lane 15 reads lane 16, outside the mask
        out[t] = cuda.shfl_down_sync(0x0000FFFF, values[t], 1)


def test_undefined_source_warns_once_per_launch():
    values = np.arange(64, dtype=np.float32)
    for _ in range(2):
        out = np.zeros(64, np.float32)
        with pytest.warns(UndefinedShuffleWarning) as record:
            undefined_source_kernel[2, 32](values, out)
        undefined = [w for w in record if issubclass(w.category, UndefinedShuffleWarning)]
        assert len(undefined) == 1
        assert "lane 15 read lane 16" in str(undefined[0].message)
        assert "undefined on a GPU" in str(undefined[0].message)
        assert np.isnan(out[15]) and out[14] == 15


@cuda.jit
def failing_lane_kernel(values, out):
    t = cuda.threadIdx.x
    if t == 9:
        out[t] = values[t + 1000]  # out of bounds: this lane raises and exits
    out[t] = cuda.shfl_down_sync(0xFFFFFFFF, values[t], 1)


def test_a_lanes_own_error_is_reported_not_a_deadlock():
    with pytest.raises(IndexError):
        failing_lane_kernel[1, 32](np.ones(32, np.float32), np.zeros(32, np.float32))


def test_simulator_recovers_after_a_failed_launch():
    with pytest.raises(WarpDeadlockError):
        early_exit_kernel[2, 64](np.ones(64, np.float32), np.zeros(64, np.float32))
    out = np.zeros(32, np.int32)
    lane_kernel[1, 32](out)
    np.testing.assert_array_equal(out, np.arange(32))


def test_outside_a_kernel_raises():
    with pytest.raises(RuntimeError, match="inside a kernel"):
        warp.shfl_sync(FULL, 1.0, 0)


def test_install_is_idempotent():
    from numba.cuda.simulator.kernel import BlockThread

    syncthreads = BlockThread.syncthreads
    warp.install()
    gpu_lessons.sim.install()
    assert BlockThread.syncthreads is syncthreads
    assert not hasattr(syncthreads.__wrapped__, "__wrapped__")
    out = np.zeros(32, np.int32)
    lane_kernel[1, 32](out)
    assert out[31] == 31


# --- The simulator against a GPU recording -------------------------------------------------------


@pytest.fixture(scope="module")
def simulated_cases():
    from gpu_lessons.sim.warp_cases import run_cases

    with warnings.catch_warnings():
        warnings.simplefilter("error", UndefinedShuffleWarning)  # the cases are all defined
        return run_cases()


def test_cases_run_on_the_simulator_with_defined_behaviour_only(simulated_cases):
    from gpu_lessons.sim.warp_cases import CASES

    assert list(simulated_cases) == [case.name for case in CASES]
    loop = simulated_cases["activemask_divergent_loop"]
    assert loop[:, 0].tolist() == [FULL, 0xFFFF, 0xFFFF, FULL]
    sums = simulated_cases["warp_sum_down_float32"]
    assert sums[0] == sums[0]  # a number, not NaN


def as_bits(array):
    return array.view(np.dtype(f"u{array.dtype.itemsize}"))


@pytest.mark.skipif(not RECORDING.exists(), reason=(
    f"no GPU recording at {RECORDING.relative_to(ROOT)}: run "
    "`python benchmarks/record_warp_primitives.py --out data/nvidia-h200/checks` on an H200 and commit it"))
def test_simulator_matches_gpu_bit_for_bit(simulated_cases):
    from gpu_lessons.sim.warp_cases import fingerprints

    facts_path = RECORDING.with_suffix(".json")
    if facts_path.exists():
        recorded = json.loads(facts_path.read_text()).get("fingerprints", {})
        stale = [name for name, fp in fingerprints().items() if recorded.get(name) != fp]
        assert not stale, f"cases changed since the GPU recording, re-record: {stale}"
    with np.load(RECORDING) as gpu:
        assert sorted(gpu.files) == sorted(simulated_cases)
        for name in gpu.files:
            expected, got = gpu[name], simulated_cases[name]
            assert (got.dtype, got.shape) == (expected.dtype, expected.shape), name
            differ = np.flatnonzero(as_bits(got) != as_bits(expected))
            assert differ.size == 0, (
                f"{name}: {differ.size} elements differ from the GPU, first at flat index "
                f"{differ[0]}: simulator {got.flat[differ[0]]!r}, GPU {expected.flat[differ[0]]!r}")


def test_uninstall_restores_the_shipped_simulator_and_install_brings_it_back():
    from numba.cuda.simulator.kernel import BlockManager, BlockThread
    from numba.cuda.simulator.kernelapi import FakeCUDAModule

    from gpu_lessons import sim

    assert hasattr(BlockThread.syncthreads, "__wrapped__")
    with sim.extras_removed():
        assert not hasattr(FakeCUDAModule, "shfl_down_sync")
        assert not hasattr(BlockThread.syncthreads, "__wrapped__")
        assert not hasattr(BlockThread.__init__, "__wrapped__")
        assert not hasattr(BlockManager.__init__, "__wrapped__")
        assert not isinstance(vars(BlockThread).get("_warp_exited"), property)
    assert hasattr(FakeCUDAModule, "shfl_down_sync") and hasattr(BlockThread.syncthreads, "__wrapped__")
