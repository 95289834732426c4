"""Lesson 5's kernels against a float64 NumPy sum, within each variant's derived error bound.

Sizes: smaller than one block, not a multiple of the block, and for the grid-stride kernels long
enough that one block runs its main loop and every tail; lengths 0 and 1; NaN and inf.
"""

import numpy as np
import pytest

import gpu_lessons
from gpu_lessons.checks import InputError
from gpu_lessons.kernels import reduce as k
from gpu_lessons.sim import trace

NAMES = list(k.BY_NAME)


def awkward_size(name):
    """Past one block's worth and not a multiple of anything (grid stride: one block, 5003
    elements = a full vec4 round of 4096, a partial round, and a scalar tail of 3)."""
    return 5003 if k.BY_NAME[name].grid_stride else 300


def check_sum(x, name, blocks=None):
    got = k.reduce_sum(x, name, blocks=blocks)
    assert isinstance(got, np.float32)
    exact = float(np.sum(x, dtype=np.float64))
    bound = k.error_bound(x, name, blocks)
    assert abs(float(got) - exact) <= bound, (name, x.size, got, exact, bound)


@pytest.mark.parametrize("name", NAMES)
def test_random_sums(name):
    rng = np.random.default_rng()
    blocks = 1 if k.BY_NAME[name].grid_stride else None
    for n in (100, awkward_size(name)):  # smaller than one block; not a multiple of it
        check_sum(rng.standard_normal(n, dtype=np.float32), name, blocks)


@pytest.mark.parametrize("name", NAMES)
def test_lengths_zero_and_one(name):
    assert k.reduce_sum(np.zeros(0, np.float32), name) == np.float32(0)  # numpy.sum([]) == 0.0
    value = np.random.default_rng().standard_normal(1, dtype=np.float32)
    assert k.reduce_sum(value, name) == value[0]  # one element: no rounding at all


@pytest.mark.filterwarnings("ignore:invalid value encountered:RuntimeWarning")
@pytest.mark.parametrize("name", ["atomic_per_element", "tree_interleaved", "vec4", "vec4_last_block"])
def test_nan_and_inf_as_numpy(name):
    rng = np.random.default_rng()
    for specials in ([np.nan], [np.inf], [-np.inf, 1.0], [np.inf, -np.inf]):
        x = rng.standard_normal(70, dtype=np.float32)
        x[rng.choice(70, len(specials), replace=False)] = specials
        expected = np.sum(x)
        got = k.reduce_sum(x, name, blocks=1 if k.BY_NAME[name].grid_stride else None)
        assert (np.isnan(got) and np.isnan(expected)) or got == expected, (specials, got, expected)


def test_fixed_order_sum_of_many_partials():
    """The deterministic kernels' second stage on as many partials as a full GPU grid gives
    (1056 = 132 SMs x 8 blocks): four loads per thread per round, then up to three more."""
    rng = np.random.default_rng()
    for count in (1, 700, 1056, 1500):
        partials = rng.standard_normal(count + 5, dtype=np.float32)  # past count: never read
        partials[count:] = np.nan
        out = np.full(1, np.nan, np.float32)
        k.sum_partials[1, k.BLOCK](partials, np.int32(count), out)
        exact = float(np.sum(partials[:count], dtype=np.float64))
        depth = -(-count // k.BLOCK) + 2 + 8
        assert abs(float(out[0]) - exact) <= k.gamma(depth) * np.sum(np.abs(partials[:count])), count


def test_bad_inputs_are_refused_clearly():
    x = np.ones(64, np.float32)
    with pytest.raises(InputError, match="dtype float32"):
        k.reduce_sum(x.astype(np.float64))
    with pytest.raises(InputError, match="1-D"):
        k.reduce_sum(x.reshape(8, 8))
    with pytest.raises(InputError, match="C-contiguous"):
        k.reduce_sum(x[::2], "tree_sequential")
    with pytest.raises(InputError, match="misaligned"):
        k.reduce_sum(np.ones(65, np.float32)[1:], "vec4")
    with pytest.raises(InputError, match="unknown reduce variant 'fastest'; choose from: atomic_per_element"):
        k.reduce_sum(x, "fastest")
    with pytest.raises(InputError, match="blocks"):
        k.reduce_sum(x, "vec4", blocks=0)


def test_a_strided_device_view_is_refused_by_every_variant():
    from numba import cuda

    view = cuda.to_device(np.ones(64, np.float32))[::2]
    for name in NAMES:
        with pytest.raises(InputError, match="x must be C-contiguous"):
            k.reduce_sum(view, name)


def test_error_bound_grows_with_depth():
    x = np.random.default_rng().random(10_000, dtype=np.float32)
    assert k.addition_depth("atomic_per_element", x.size) == x.size  # one long chain
    blocks = -(-x.size // k.BLOCK)
    assert k.addition_depth("tree_sequential", x.size) == 1 + 8 + blocks  # load, tree, atomics
    assert k.error_bound(x, "atomic_per_element") > 100 * k.error_bound(x, "tree_sequential")
    assert k.addition_depth("vec4", 1) == 0 and k.error_bound(x[:1], "vec4") == 0


def test_sequential_float32_exceeds_the_tree_bound():
    """The bounds are not vacuous: adding 2^20 uniforms one by one in float32 (NumPy's cumsum)
    lands outside the bound of the tree-shaped kernels, though inside the sequential bound."""
    x = np.random.default_rng(3).random(2**20, dtype=np.float32)
    exact = float(np.sum(x, dtype=np.float64))
    sequential = float(np.cumsum(x, dtype=np.float32)[-1])
    assert abs(sequential - exact) > k.error_bound(x, "vec4_last_block", blocks=1056)
    assert abs(sequential - exact) <= k.error_bound(x, "atomic_per_element")


def tree_counts(name):
    x = np.random.default_rng(0).random(k.BLOCK, dtype=np.float32)
    out = np.zeros(1, np.float32)
    counts = trace.trace(k.KERNELS[name], 1, k.BLOCK, x, out)
    assert np.isclose(out[0], np.sum(x, dtype=np.float64), rtol=1e-5)
    adds = counts.by_instruction
    return adds[(adds["space"] == "shared") & (adds["op"] == "ld")].iloc[0]  # sdata[...] += ...


def test_tracer_tells_the_divergence_and_bank_conflict_story():
    """One block of 256: the tree's 8 levels touch 255 adds in every version. Interleaved: each
    level keeps all 8 warps busy until s >= 32 (8*5 + 4 + 2 + 1 = 47 warp instructions, few
    lanes each) but lanes 2s apart hit distinct banks; strided index: 4+4+4+4+2+1+1+1... = 12
    packed instructions, but lanes 2s words apart share banks; sequential: 12 and no conflict."""
    interleaved, strided, sequential = (tree_counts(n) for n in
                                        ("tree_interleaved", "tree_strided_index", "tree_sequential"))
    assert interleaved["threads"] == strided["threads"] == sequential["threads"] == 255
    assert interleaved["instructions"] == 47 and interleaved["bank_conflicts"] == 0
    assert strided["instructions"] == 12 and strided["bank_conflicts"] > 0
    assert strided["wavefronts"] > 3 * strided["instructions"]
    assert sequential["instructions"] == 12 and sequential["bank_conflicts"] == 0
    assert sequential["wavefronts"] == 12


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
@pytest.mark.parametrize("name", NAMES)
def test_large_sums_on_a_gpu(name):
    x = np.random.default_rng().standard_normal(2**22 + 12, dtype=np.float32)
    check_sum(x, name)
