"""Every GEMM entry point at the awkward sizes: M, N or K = 0 (as NumPy: an empty C, or zeros for
K = 0; an empty C is no launch), 1 x 1 x 1, and shapes that are no multiple of any tile; unknown
names and strided operands refused in one line. Awkward shapes for every step against float64 are
in test_gemm.py; here, each entry point (host wrappers and the launch functions) at the edges."""

import numpy as np
import pytest
from kernel_launches import refuse_empty_launches  # noqa: F401 - an autouse fixture

import gpu_lessons
from gpu_lessons.checks import InputError

# isort: split
from numba import cuda

from gpu_lessons.kernels import gemm as naive
from gpu_lessons.kernels import gemm_codegen as codegen
from gpu_lessons.kernels import gemm_register as register
from gpu_lessons.kernels import gemm_steps as steps
from gpu_lessons.kernels import gemm_tiled as tiled

rng = np.random.default_rng()
STEP_NAMES = [s.name for s in steps.STEPS]
# lesson 6's tile search: the best tile of the large squares and the best of 1024^3
BIG_TILE = codegen.Tile(bn=256, tn=16, bk=16, max_registers=None, pad=0)  # tile 128x256x16 8x16
SMALL_TILE = codegen.Tile(bm=64, bn=64, tm=4, tn=4)  # tile 64x64x8 4x4
TILES = {"128x256x16 8x16": BIG_TILE, "64x64x8 4x4": SMALL_TILE}
EMPTY = [(0, 3, 5), (4, 3, 0), (0, 0, 0), (0, 6, 0)]  # (M, K, N) with an empty C
NVVM = ("on a GPU each generated tile is seconds to a minute of NVVM per twin; there test_gemm.py "
        "checks every step against float64 at K = 1 and awkward shapes, and the simulator runs the same "
        "generated source here")


def operands(m, k, n):
    return rng.standard_normal((m, k), dtype=np.float32), rng.standard_normal((k, n), dtype=np.float32)


def host_entry_points():
    """name -> f(a, b): every host wrapper, every step and variant."""
    points = {"gemm.gemm": naive.gemm, "gemm_tiled": tiled.gemm_tiled}
    points.update({f"gemm_register {v}": (lambda a, b, v=v: register.gemm_register(a, b, v))
                   for v in register.KERNELS})
    points.update({f"gemm_generated {name}": (lambda a, b, t=t: codegen.gemm_generated(a, b, t))
                   for name, t in TILES.items()})
    points.update({f"matmul {name}": (lambda a, b, s=name: steps.matmul(a, b, s)) for name in STEP_NAMES})
    return points


def launch_functions():
    """name -> launch(a, b, c) on device arrays."""
    points = {"gemm_naive_launch": naive.gemm_naive_launch,
              "gemm_naive_uncoalesced_launch": naive.gemm_naive_uncoalesced_launch,
              "gemm_tiled_launch": tiled.gemm_tiled_launch}
    points.update({f"register.launch {v}": (lambda a, b, c, v=v: register.launch(v, a, b, c))
                   for v in register.KERNELS})
    points.update({f"codegen.launch {name}": (lambda a, b, c, t=t: codegen.launch(t, a, b, c))
                   for name, t in TILES.items()})
    points.update({f"step {s.name}": s.launch for s in steps.STEPS})
    return points


HOST = host_entry_points()
LAUNCH = launch_functions()


@pytest.mark.parametrize("m, k, n", EMPTY)
@pytest.mark.parametrize("name", list(HOST))
def test_an_empty_c_is_returned_without_a_launch(name, m, k, n):
    a, b = operands(m, k, n)
    c = HOST[name](a, b)
    assert isinstance(c, np.ndarray) and c.dtype == np.float32 and c.shape == (m, n)


@pytest.mark.parametrize("m, k, n", EMPTY)
@pytest.mark.parametrize("name", list(LAUNCH))
def test_launch_functions_leave_an_empty_c_alone(name, m, k, n):
    a, b = operands(m, k, n)
    c = cuda.device_array((m, n), np.float32)
    LAUNCH[name](cuda.to_device(a), cuda.to_device(b), c)
    assert c.copy_to_host().shape == (m, n)


# One entry point per distinct kernel (matmul's other steps launch these same kernels and tiles)
DISTINCT = ["gemm.gemm", "matmul naive_uncoalesced", "gemm_tiled",
            *(f"gemm_register {v}" for v in register.KERNELS), *(f"gemm_generated {name}" for name in TILES)]


def cases(names):
    """The entry points, the generated tiles on the simulator only (NVVM)."""
    return [pytest.param(n, marks=pytest.mark.simulator_only(NVVM)) if n.startswith("gemm_generated") else n
            for n in names]


@pytest.mark.parametrize("name", cases(DISTINCT))
def test_k_zero_gives_zeros(name):
    a, b = operands(5, 0, 6)
    c = HOST[name](a, b)
    np.testing.assert_array_equal(c, np.zeros((5, 6), np.float32))


def close_to_float64(got, a, b):
    exact = a.astype(np.float64) @ b.astype(np.float64)
    bound = 2 * a.shape[1] * 2.0**-24 * (np.abs(a).astype(np.float64) @ np.abs(b).astype(np.float64))
    assert got.shape == exact.shape and np.all(np.abs(got - exact) <= bound)


# the generated tiles at M = N = 1 or K = 1: test_gemm.py (33x1x70 and awkward shapes, seconds each here)
@pytest.mark.parametrize("name", [n for n in DISTINCT if not n.startswith("gemm_generated")])
def test_one_by_one_by_one(name):
    a, b = operands(1, 1, 1)
    close_to_float64(HOST[name](a, b), a, b)


def test_device_operands_give_a_device_c_even_when_empty():
    a, b = operands(0, 4, 3)
    c = steps.matmul(cuda.to_device(a), cuda.to_device(b), "register_cap")
    assert hasattr(c, "copy_to_host") and c.shape == (0, 3)


@pytest.mark.parametrize("call, message", [
    (lambda: steps.matmul(*operands(2, 2, 2), "nope"), "unknown GEMM step 'nope'; choose from: naive_unco"),
    (lambda: steps.matmul(*operands(0, 2, 2), "nope"), "unknown GEMM step 'nope'"),  # even with nothing to do
    (lambda: steps.step(3), "unknown GEMM step 3"),
    (lambda: register.gemm_register(*operands(2, 2, 2), "nope"), "unknown register-tiled GEMM 'nope'; cho"),
    (lambda: register.launch("nope", None, None, None), "unknown register-tiled GEMM 'nope'"),
    (lambda: codegen.gemm_generated(*operands(2, 2, 2), "128x128"), "t must be a gemm_codegen.Tile, got str"),
    (lambda: codegen.gemm_generated(*operands(2, 2, 2), codegen.Tile(tm=6)), "multiples of 4"),
    (lambda: naive.gemm(*operands(4, 6, 3)[::-1]), "shape mismatch"),
    (lambda: tiled.gemm_tiled(np.zeros((4, 6), np.float32)[:, ::2], np.zeros((3, 3), np.float32)),
     "contiguous"),
    (lambda: register.gemm_register(np.zeros((3, 4)), np.zeros((4, 2), np.float32)), "dtype float32"),
    (lambda: codegen.gemm_generated(np.zeros((2, 3, 4), np.float32), np.zeros((4, 2), np.float32)), "2-D"),
    (lambda: steps.matmul([[1.0]], np.zeros((1, 1), np.float32)), "must be an array, got list"),
])
def test_bad_input_gets_one_clear_line(call, message):
    with pytest.raises(InputError, match=message) as error:
        call()
    assert "\n" not in str(error.value)


@pytest.mark.skipif(not gpu_lessons.SIMULATED, reason="checks the simulator's own launch guard; on a GPU "
                    "numba-cuda refuses the launch itself")
def test_the_launch_guard_would_catch_a_launch_of_no_blocks():
    with pytest.raises(ValueError, match="must be >= 1"):
        naive.gemm_naive[(0, 1), naive.NAIVE_BLOCK]
