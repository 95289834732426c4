"""Lesson 6's kernels against float64 on shapes that are no multiple of any tile: the hand-written
steps, the generated steps 7-10, and the code generator's switches on small tiles (one warp, so the
simulator runs them in a fraction of a second); steps 11 and 12 and the warp-tiled tile are in
tests/test_gemm.py. Each kernel runs once, on a small shape that reaches the most of its code:
several blocks where the block is small, partial k-tiles and edges in M and N for all. (The
simulator runs one Python thread per CUDA thread: a 256-thread generated kernel takes seconds.)"""

import numpy as np
import pytest

import gpu_lessons  # noqa: F401 - chooses the mode before numba.cuda

# isort: split
from gpu_lessons.checks import InputError
from gpu_lessons.kernels import gemm_codegen as codegen
from gpu_lessons.kernels import gemm_steps as steps
from gpu_lessons.kernels.gemm_tiled import gemm_tiled
from gpu_lessons.lessons.gemm import error_report

rng = np.random.default_rng()


def operands(m, k, n):
    return rng.standard_normal((m, k), dtype=np.float32), rng.standard_normal((k, n), dtype=np.float32)


def assert_within_fp32_bound(c, a, b, what):
    report = error_report(c, a, b)
    assert report["finite"] and report["worst_share_of_bound"] <= 1.0, (what, a.shape, b.shape, report)


HAND_WRITTEN = {  # (M, K, N): several blocks where the block is small, partial tiles, edges in M and N;
    # the register tiles' 256 and 512 threads cost seconds a k-tile: one k-tile, two for the last step
    "naive_uncoalesced": (33, 5, 17), "naive": (9, 5, 33), "shared_tiled": (20, 21, 17),
    "register_1d": (37, 5, 45), "register_2d": (37, 5, 45), "register_2d_uint64": (37, 13, 45),
}


@pytest.mark.parametrize("name", HAND_WRITTEN)
def test_hand_written_step_at_an_awkward_shape(name):
    a, b = operands(*HAND_WRITTEN[name])
    assert_within_fp32_bound(steps.matmul(a, b, name), a, b, name)


@pytest.mark.parametrize("name, k", [("vector_loads", 4), ("unrolled", 4), ("conflict_free", 4),
                                     ("double_buffer", 12)])
def test_generated_step_on_the_16_byte_path(name, k):
    # 36 x K @ K x 44: 16-byte loads, a partial k-tile; K = 12 gives a double buffer two tiles to swap
    a, b = operands(36, k, 44)
    assert_within_fp32_bound(steps.matmul(a, b, name), a, b, name)


# One warp per tile (bm/tm x bn/tn = 32 threads), every switch of the generator in some tile:
SMALL_TILES = {
    "4x8 paired, 16 deep, pad 0, split prefetch": codegen.Tile(
        bm=16, bn=64, bk=16, tm=4, tn=8, lanes_m=4, interleave=2, pad=0, split_prefetch=True,
        max_registers=None),
    "contiguous, rolled, single-buffered": codegen.Tile(
        bm=32, bn=32, tm=4, tn=8, lanes_m=0, pad=0, unroll=False, double_buffer=False, max_registers=None),
    "2x16, grouped blocks": codegen.Tile(bm=16, bn=64, tm=8, tn=4, group_m=2, max_registers=None),
}


@pytest.mark.parametrize("label", SMALL_TILES)
@pytest.mark.parametrize("m, k, n", [(20, 13, 70), (20, 20, 68), (3, 1, 5)])
def test_generator_switches_on_one_warp_tiles(label, m, k, n):
    # 2 x 2 blocks on the 4-byte twin (K = 13) and on the 16-byte path (K = 20: 2 or 3 k-tiles), K = 1
    tile = SMALL_TILES[label]
    assert tile.threads == 32
    a, b = operands(m, k, n)
    assert_within_fp32_bound(codegen.gemm_generated(a, b, tile), a, b, label)


def test_gemm_tiled_against_numpy():
    a, b = operands(20, 5, 17)
    np.testing.assert_allclose(gemm_tiled(a, b), a @ b, rtol=1e-5, atol=1e-5)


def test_gemm_tiled_names_a_shape_mismatch():
    with pytest.raises(InputError, match="shape mismatch"):
        gemm_tiled(np.zeros((4, 5), np.float32), np.zeros((4, 5), np.float32))
