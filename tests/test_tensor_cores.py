"""Lesson 7's kernels against float64: the one-warp MMA, the TF32 GEMM generator's switches (on awkward
shapes, K = 1 and K = 0) and bad input. ``lessons.tensor_cores.check()`` (tests/test_lesson_tensor_cores.py)
covers mma_global, plain and 2-stage tiles and lesson 6's SIMT kernel with a cp.async pipeline.

On the simulator a block is a Python thread per CUDA thread, so the generator is checked with one- and
two-warp tiles (the same source as the 4- and 8-warp tiles of ``STEPS``, other constants); the lesson's
own tiles are checked on awkward shapes on a GPU, before every recording (``check()``).
"""

import numpy as np
import pytest

import gpu_lessons  # noqa: F401 - chooses the mode before numba.cuda

# isort: split
from gpu_lessons.checks import InputError
from gpu_lessons.kernels import generated
from gpu_lessons.kernels import tensor_cores as tc
from gpu_lessons.sim.ptx import tf32_rna

pytestmark = pytest.mark.needs_sm80  # every test here runs mma.sync or cp.async kernels

rng = np.random.default_rng()
TF32_UNIT = 2.0**-11  # unit roundoff of TF32's 10 fraction bits (round to nearest)


def operands(m, k, n):
    return rng.standard_normal((m, k), dtype=np.float32), rng.standard_normal((k, n), dtype=np.float32)


def assert_tf32_close(c, a, b, rounded=True):
    """|C - A B| within the TF32 bound: 2 u |A||B| for the operand rounding, plus float32 sums."""
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    unit = TF32_UNIT if rounded else 2 * TF32_UNIT
    bound = (2 * unit + a.shape[1] * 2.0**-23) * (np.abs(a64) @ np.abs(b64))
    assert c.shape == (a.shape[0], b.shape[1]) and np.isfinite(c).all()
    assert np.all(np.abs(c - a64 @ b64) <= bound + 1e-30), np.max(np.abs(c - a64 @ b64) / (bound + 1e-30))


def test_one_warp_mma_demo_rounds_to_tf32_and_adds_c():
    a, b = operands(16, 8, 8)
    c = rng.standard_normal((16, 8)).astype(np.float32)
    d = tc.mma_demo(a, b, c)
    exact = tf32_rna(a).astype(np.float64) @ tf32_rna(b).astype(np.float64) + c
    assert np.all(np.abs(d - exact) <= 2.0**-21 * (np.abs(tf32_rna(a)) @ np.abs(tf32_rna(b)) + np.abs(c)))
    owners = tc.fragment_owners()
    assert owners["A"][9, 5] == "T5 a3" and owners["B"][5, 2] == "T9 b1" and owners["C"][8, 7] == "T3 c3"


SMALL = {  # the switches check() does not cover: 3 stages over 2 warps, 32-deep tiles of 2x2 MMAs per
    # warp (two slabs, several fragments each way), no cvt.rna with blocks in groups
    "async 3, two warps, bk 32, 2x2 MMAs": tc.TcTile(bm=32, bn=32, bk=32, wm=32, wn=16, stages=3),
    "unrounded, grouped": tc.TcTile(bm=16, bn=32, bk=16, wm=16, wn=32, stages=2, round_inputs=False,
                                    group_m=2),
}


SHAPES = {  # 4-byte twin and K = 0; 16-byte path and K = 1
    "async 3, two warps, bk 32, 2x2 MMAs": [(37, 45, 45), (5, 0, 8)],
    "unrounded, grouped": [(36, 20, 44), (33, 1, 36)],
}


@pytest.mark.parametrize("name", SMALL)
def test_generated_tiles_match_float64(name):
    tile = SMALL[name]
    for m, k, n in SHAPES[name]:
        a, b = operands(m, k, n)
        c = tc.gemm_tile(a, b, tile)
        if k == 0:
            np.testing.assert_array_equal(c, np.zeros((m, n), np.float32))
        else:
            assert_tf32_close(c, a, b, rounded=tile.round_inputs)


def test_empty_matrices_need_no_launch():
    assert tc.matmul(*operands(0, 3, 4), "warp_tile").shape == (0, 4)
    assert tc.matmul(*operands(3, 5, 0), "warp_tile_64x64").shape == (3, 0)


def test_steps_are_in_teaching_order_and_named():
    assert [s.name for s in tc.STEPS] == ["mma_global", "mma_shared", "mma_async", "warp_tile",
                                          "warp_tile_64x64"]
    shared, cp_async = tc.step("mma_shared").tile, tc.step("mma_async").tile
    assert (shared.stages, cp_async.stages) == (1, 3) and shared.bm == cp_async.bm  # one change
    with pytest.raises(InputError, match="unknown tensor-core step"):
        tc.step("wgmma")


@pytest.mark.parametrize("a, b, message", [
    (np.zeros((4, 5), np.float64), np.zeros((5, 4), np.float32), "dtype float32"),
    (np.zeros((4, 5), np.float32), np.zeros((4, 5), np.float32), "shape mismatch"),
    (np.zeros((5, 4), np.float32).T, np.zeros((5, 4), np.float32), "C-contiguous"),
])
def test_bad_operands_get_a_clear_error(a, b, message):
    with pytest.raises(InputError, match=message):
        tc.matmul(a, b)


@pytest.mark.parametrize("tile, message", [
    (tc.TcTile(wm=24), "multiples of 16x8"),
    (tc.TcTile(bn=48, wn=16), "bn of 32"),
    (tc.TcTile(stages=9), "stages"),
    (tc.TcTile(bm=256, bn=256, wm=16, wn=32), "1024"),
])
def test_bad_tiles_are_refused(tile, message):
    with pytest.raises(InputError, match=message):
        tc.gemm_tile(*operands(4, 4, 4), tile)


def test_mma_demo_refuses_other_shapes():
    with pytest.raises(InputError, match="16x8"):
        tc.mma_demo(np.zeros((8, 8), np.float32), np.zeros((8, 8), np.float32))


def test_generated_source_pipelines_and_stays_unsigned():
    source = tc.tc_codegen.kernel_source(tc.WARP_TILE)
    assert source.count("mma_tf32(") == 2 * 2 * 4 * 4  # 2 slabs x 2 k-steps x 4x4 MMAs
    assert "cp_async_wait_group(1)" in source and source.count("cp_async_commit_group()") == 3
    assert "int(" not in source and "range(tiles)" in source


def test_peak_kernel_counts_its_flops():
    source = tc.peak_source(4)
    assert source.count("mma_tf32(") == 4
    assert tc.peak_flops(blocks=2, warps_per_block=4, iterations=10, chains=8) == 2 * 4 * 10 * 8 * 2048


def test_generated_source_in_files_is_written_once(tmp_path, monkeypatch):
    monkeypatch.setenv(generated.DIRECTORY_VARIABLE, str(tmp_path))
    first = generated.define("def f(x):\n    return x + 1\n", "f", {}, "test f")
    second = generated.define("def f(x):\n    return x + 1\n", "f", {}, "test f")
    files = list(tmp_path.glob("f_*.py"))
    assert len(files) == 1 and first(1) == second(1) == 2
    assert first.__code__.co_filename == str(files[0])
