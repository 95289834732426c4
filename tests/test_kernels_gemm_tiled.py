"""The shared-memory tiled GEMM against NumPy, on a shape that is not a multiple of the 16x16 tile."""

import numpy as np
import pytest

from gpu_lessons.checks import InputError
from gpu_lessons.kernels.gemm_tiled import gemm_tiled

rng = np.random.default_rng()


def test_gemm_tiled_45x70x33():
    a = rng.standard_normal((45, 70), dtype=np.float32)
    b = rng.standard_normal((70, 33), dtype=np.float32)
    np.testing.assert_allclose(gemm_tiled(a, b), a @ b, rtol=1e-4, atol=1e-4)


def test_gemm_tiled_names_a_shape_mismatch():
    with pytest.raises(InputError, match="shape mismatch"):
        gemm_tiled(np.zeros((4, 5), np.float32), np.zeros((4, 5), np.float32))
