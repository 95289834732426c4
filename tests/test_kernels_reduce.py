"""Lesson 5's kernels against a float64 NumPy sum, within each variant's derived error bound.

``lesson.check()`` runs every kernel on awkward sizes (not a multiple of the block; for the grid-stride
kernels long enough that one block runs its main loop and every tail; length 0); here besides: length
1, NaN and inf, many partials, bad inputs, the bounds themselves. The simulator runs one Python
thread per CUDA thread, so each test launches as few blocks of 256 as it can.
"""

import numpy as np
import pytest

import gpu_lessons
from gpu_lessons.checks import InputError
from gpu_lessons.kernels import reduce as k

NAMES = list(k.BY_NAME)
TWINS = [v.name for v in k.TWINS]


def awkward_size(name):
    """Past one block's worth and not a multiple of anything (grid stride: one block, 5003
    elements = a full vec4 round of 4096, a partial round, and a scalar tail of 3)."""
    return 5003 if k.variant(name).grid_stride else 300


def check_sum(x, name, blocks=None):
    got = k.reduce_sum(x, name, blocks=blocks)
    assert isinstance(got, np.float32)
    exact = float(np.sum(x, dtype=np.float64))
    bound = k.error_bound(x, name, blocks)
    assert abs(float(got) - exact) <= bound, (name, x.size, got, exact, bound)


# lesson.check() (every kernel against NumPy on awkward sizes) runs, and must pass, in
# notebooks/deep_dives/05_reduce.ipynb: nbval runs it there, once for CI.


@pytest.mark.parametrize("name", ["atomic_per_element", "vec4", "vec4_last_block"])
def test_length_one_is_exact(name):
    value = np.random.default_rng().standard_normal(1, dtype=np.float32)
    assert k.reduce_sum(value, name) == value[0]  # one element: no rounding at all


@pytest.mark.filterwarnings("ignore:invalid value encountered:RuntimeWarning")
@pytest.mark.parametrize("name", ["tree_interleaved", "vec4_last_block"])
def test_nan_and_inf_as_numpy(name):
    rng = np.random.default_rng()
    for specials in ([np.nan], [np.inf, -np.inf]):
        x = rng.standard_normal(70, dtype=np.float32)
        x[rng.choice(70, len(specials), replace=False)] = specials
        expected = np.sum(x)
        got = k.reduce_sum(x, name, blocks=1 if k.BY_NAME[name].grid_stride else None)
        assert (np.isnan(got) and np.isnan(expected)) or got == expected, (specials, got, expected)


def test_fixed_order_sum_of_many_partials():
    """The deterministic kernels' second stage on as many partials as a full GPU grid gives
    (1056 = 132 SMs x 8 blocks) and more: four loads per thread per round, then up to three more."""
    rng = np.random.default_rng()
    for count in (1056, 1500):
        partials = rng.standard_normal(count + 5, dtype=np.float32)  # past count: never read
        partials[count:] = np.nan
        out = np.full(1, np.nan, np.float32)
        k.sum_partials[1, k.BLOCK](partials, np.int32(count), out)
        exact = float(np.sum(partials[:count], dtype=np.float64))
        depth = -(-count // k.BLOCK) + 2 + 8
        assert abs(float(out[0]) - exact) <= k.gamma(depth) * np.sum(np.abs(partials[:count])), count


def test_the_shared_memory_cap_admits_exactly_four_blocks():
    dynamic = k.capped_dynamic_shared(4)
    assert dynamic > 48 * 1024  # so the launch must opt in (Workspace does)
    assert k.Workspace("vec4_smem4", 1).dynamic_shared == dynamic
    assert k.Workspace("vec4", 1).dynamic_shared == 0


def test_bad_inputs_are_refused_clearly():
    x = np.ones(64, np.float32)
    with pytest.raises(InputError, match="dtype float32"):
        k.reduce_sum(x.astype(np.float64))
    with pytest.raises(InputError, match="1-D"):
        k.reduce_sum(x.reshape(8, 8))
    with pytest.raises(InputError, match="C-contiguous"):
        k.reduce_sum(x[::2], "tree_sequential")
    with pytest.raises(InputError, match="misaligned"):
        k.reduce_sum(np.ones(65, np.float32)[1:], "vec4_u2")
    with pytest.raises(InputError, match="unknown reduce variant 'fastest'; choose from: atomic_per_element"):
        k.reduce_sum(x, "fastest")
    with pytest.raises(InputError, match="blocks"):
        k.reduce_sum(x, "vec4", blocks=0)
    with pytest.raises(InputError, match="unknown tree kind"):
        k.tiles_sum(x, "butterfly")
    with pytest.raises(InputError, match="at least one element"):
        k.repeat_partials(x[:0], "sequential", 1)


def test_a_strided_device_view_is_refused_by_every_variant():
    from numba import cuda

    view = cuda.to_device(np.ones(64, np.float32))[::2]
    for name in NAMES:
        with pytest.raises(InputError, match="x must be C-contiguous"):
            k.reduce_sum(view, name)


def test_error_bound_grows_with_depth():
    x = np.random.default_rng().random(10_000, dtype=np.float32)
    # Only additions that can round: not an add onto 0 (a register or out[0] starting at 0), not an
    # empty block's atomic (it adds 0.0).
    assert k.addition_depth("atomic_per_element", x.size) == x.size - 1  # one chain, the first onto 0
    blocks = -(-x.size // k.BLOCK)
    assert k.addition_depth("tree_sequential", x.size) == 0 + 8 + blocks - 1  # tree, atomics
    assert k.addition_depth("tree_first_add", x.size) == 1 + 8 + -(-x.size // 512) - 1
    assert k.addition_depth("grid_stride", 2**28, 1056) == 993 - 1 + 8 + 1056 - 1
    assert k.addition_depth("grid_stride", 2**20, 4096) == 2 - 1 + 8 + 2048 - 1  # 2,048 it needs
    assert k.error_bound(x, "atomic_per_element") > 100 * k.error_bound(x, "tree_sequential")
    assert k.addition_depth("vec4", 1) == 0 and k.error_bound(x[:1], "vec4") == 0
    # vec4 at 2^28 on 1,056 blocks: thread 0 loads 249 float4 (62 full rounds of 4, one left over): a
    # round's 2 roundings, 61 more rounds, the partial round, (a0 + a1) + (a2 + a3); tree; 1,055 atomics
    assert k.addition_depth("vec4", 2**28, 1056) == 2 + 61 + 1 + 2 + 8 + 1055
    assert k.addition_depth("vec4_u2", 2**28, 1056) == 1 + 123 + 1 + 2 + 8 + 1055  # 124 rounds of 2
    assert k.addition_depth("vec4_last_block", 2**28, 1056) == 66 + 8 + (2 + 1 + 8)  # 5 partials each
    assert k.tiles_depth(x.size, 2) == 8 + 19 + (0 + 1)  # tree, 20 tiles per block onto 0, the merge
    assert k.gamma(2**24) == np.inf and np.isfinite(k.gamma(2**24 - 1))


def test_sequential_float32_exceeds_the_tree_bound():
    """The bounds are not vacuous: adding 2^20 uniforms one by one in float32 (NumPy's cumsum)
    lands outside the bound of the tree-shaped kernels, though inside the sequential bound."""
    x = np.random.default_rng(3).random(2**20, dtype=np.float32)
    exact = float(np.sum(x, dtype=np.float64))
    sequential = float(np.cumsum(x, dtype=np.float32)[-1])
    assert abs(sequential - exact) > k.error_bound(x, "vec4_last_block", blocks=1056)
    assert abs(sequential - exact) <= k.error_bound(x, "atomic_per_element")


@pytest.mark.skipif(gpu_lessons.SIMULATED, reason="repeated runs race only on a GPU")
def test_deterministic_variants_give_the_same_bits_every_run_on_a_gpu():
    from numba import cuda

    x = cuda.to_device(np.random.default_rng().random(2**22 + 3, dtype=np.float32))
    for name in k.DETERMINISTIC:
        work = k.Workspace(name, 4096)
        results = set()
        for _ in range(10):
            k.launch(name, x, work)
            results.add(work.out.copy_to_host()[0].tobytes())
        assert len(results) == 1, name


@pytest.mark.skipif(gpu_lessons.SIMULATED, reason="a size that needs a GPU")
@pytest.mark.parametrize("name", NAMES + TWINS)
def test_large_sums_on_a_gpu(name):
    x = np.random.default_rng().standard_normal(2**22 + 12, dtype=np.float32)
    check_sum(x, name)


@pytest.mark.skipif(gpu_lessons.SIMULATED, reason="register counts come from the GPU compiler")
def test_the_twins_fit_eight_blocks_per_sm_on_a_gpu():
    from gpu_lessons.occupancy import kernel_resources

    x, out = np.zeros(4096, np.float32), np.zeros(1, np.float32)
    for name in ("vec4_lb8", "vec4_maxreg32"):
        assert kernel_resources(k.kernel_of(name), x, out).registers_per_thread <= 32, name
