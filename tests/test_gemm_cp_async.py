"""Lesson 6's generated SIMT GEMM with a cp.async pipeline (``gemm_codegen.Tile(stages=...)``, lesson
7) against float64 on awkward shapes and K = 1, and its contract (2 stages: lesson 7's ``check()``)."""

import numpy as np
import pytest

import gpu_lessons  # noqa: F401 - chooses the mode before numba.cuda

# isort: split
from gpu_lessons.checks import InputError
from gpu_lessons.kernels import gemm_codegen as codegen
from gpu_lessons.lessons.tensor_cores import share_of_bound

pytestmark = pytest.mark.needs_sm80  # every test here runs mma.sync or cp.async kernels

rng = np.random.default_rng()


def operands(m, k, n):
    return rng.standard_normal((m, k), dtype=np.float32), rng.standard_normal((k, n), dtype=np.float32)


def test_four_stage_simt_pipeline_matches_float64():
    tile = codegen.Tile(bm=32, bn=32, tm=4, tn=4, lanes_m=4, double_buffer=False, stages=4)
    for m, k, n in [(37, 13, 45), (33, 1, 36)]:  # 4-byte copies of B; K = 1 (one tile, three empty groups)
        a, b = operands(m, k, n)
        assert share_of_bound(codegen.gemm_generated(a, b, tile), a, b, "fp32") <= 1.0, (m, k, n)


def test_simt_pipeline_replaces_double_buffering():
    with pytest.raises(InputError, match="cp.async pipeline"):
        codegen.gemm_generated(*operands(4, 4, 4), codegen.Tile(stages=3))
    big = codegen.Tile(bn=256, tn=16, max_registers=None, double_buffer=False, stages=4)
    assert 4 * big.shared_floats == 4 * 8 * (128 + 4 + 256) * 4  # past 48 KiB: opted in at launch
