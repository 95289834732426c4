"""Lesson 6's generated SIMT GEMM with a cp.async pipeline (``gemm_codegen.Tile(stages=...)``,
lesson 7) against float64 on awkward shapes and K = 1, and its contract."""

import numpy as np
import pytest

import gpu_lessons  # noqa: F401 - chooses the mode before numba.cuda

# isort: split
from gpu_lessons.checks import InputError
from gpu_lessons.kernels import gemm_codegen as codegen
from gpu_lessons.lessons.gemm import error_report

rng = np.random.default_rng()


def operands(m, k, n):
    return rng.standard_normal((m, k), dtype=np.float32), rng.standard_normal((k, n), dtype=np.float32)


@pytest.mark.parametrize("stages", [2, 4])
def test_simt_cp_async_pipeline_matches_float64(stages):
    tile = codegen.Tile(bm=32, bn=32, tm=4, tn=4, lanes_m=4, double_buffer=False, stages=stages)
    for m, k, n in [(37, 13, 45), (36, 20, 44), (33, 1, 70)]:
        a, b = operands(m, k, n)
        report = error_report(codegen.gemm_generated(a, b, tile), a, b)
        assert report["finite"] and report["worst_share_of_bound"] <= 1.0, (stages, (m, k, n), report)


def test_simt_pipeline_replaces_double_buffering():
    with pytest.raises(InputError, match="cp.async pipeline"):
        codegen.gemm_generated(*operands(4, 4, 4), codegen.Tile(stages=3))
    big = codegen.Tile(bn=256, tn=16, max_registers=None, double_buffer=False, stages=4)
    assert 4 * big.shared_floats == 4 * 8 * (128 + 4 + 256) * 4  # past 48 KiB: opted in at launch
