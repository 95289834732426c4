"""Shared-memory kernels against NumPy: strides, and transposes of shapes that are not multiples of 32,
empty and 1 x 1; every transpose refuses a strided view in the same one line."""

import numpy as np
import pytest
from kernel_launches import refuse_empty_launches  # noqa: F401 - an autouse fixture

from gpu_lessons.checks import InputError
from gpu_lessons.kernels import bank_conflicts as k

rng = np.random.default_rng()

def random(*shape):
    return rng.standard_normal(shape, dtype=np.float32)


@pytest.mark.parametrize("stride", [1, 2, 32, 33])
def test_shared_stride_round_trip(stride):
    x = random(300)  # two blocks, the second one partial
    assert np.array_equal(k.shared_stride(x, stride), x)


def test_shared_stride_with_a_1024_thread_block():
    x = random(1000)
    assert np.array_equal(k.shared_stride(x, 8, block=1024), x)


@pytest.mark.parametrize("rows", [4, 32])
def test_the_loop_tile_takes_any_block_of_32_by_rows(rows):
    a = random(33, 20)
    assert np.array_equal(k.transpose_padded_loop(a, block=(32, rows)), a.T)


def test_transpose_keeps_device_arrays_on_the_device():
    from numba import cuda  # after gpu_lessons chose the mode

    a = random(7, 40)
    out = k.transpose_padded(cuda.to_device(a))
    assert np.array_equal(out.copy_to_host(), a.T)


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda: k.shared_stride(np.zeros(10, np.float32), 33, block=512), "shared words"),
        (lambda: k.shared_stride(np.zeros(10, np.float32), 0), ">= 1"),
        (lambda: k.shared_stride(np.zeros(10, np.int32), 1), "dtype float32"),
        (lambda: k.transpose_naive(np.zeros(10, np.float32)), "2-D"),
        (lambda: k.transpose_naive(np.zeros((3, 3), np.float32), block=(64, 32)), "at most 1024"),
        (lambda: k.transpose_tiled(np.zeros((3, 3), np.float32), block=(16, 8)), r"must be \(32, 8\)"),
        (lambda: k.transpose_padded(np.zeros((3, 3), np.float32), block=(32, 32)), "unrolled"),
        (lambda: k.transpose_padded_loop(np.zeros((3, 3), np.float32), block=(32, 5)), "dividing 32"),
        (lambda: k.transpose_tiled(np.zeros((3, 3), np.float32), block=8), "two integers"),
    ],
)
def test_bad_inputs_are_named(call, message):
    with pytest.raises(InputError, match=message):
        call()


# ---------------------------------------------------------------- lesson 4: every transpose, awkward shapes
# (lessons.bank_conflicts.check() runs each on 45x70 and 33x20, the 16-byte ones on 68x100 and 45x70)

ALL = list({**k.TRANSPOSES, **k.EXPERIMENT_TRANSPOSES}.items())
AWKWARD = [(1, 1), (1, 40), (40, 1)]  # one row, one column: not multiples of 32 (or 64, or 4)
WHOLE_FLOAT4_ROWS = [(4, 132), (132, 8)]  # 16-byte path in whole tiles, scalar at the edges
VECTOR_TRANSPOSES = [k.transpose_tile64, k.transpose_tile64_swizzled, k.transpose_tile32_vec4,
                     k.transpose_tile32_vec4_swizzled]


@pytest.mark.parametrize("shape", AWKWARD)
@pytest.mark.parametrize("name, transpose", ALL)
def test_every_transpose_on_awkward_shapes(name, transpose, shape):
    a = random(*shape)
    assert np.array_equal(transpose(a), a.T), name


@pytest.mark.parametrize("shape", WHOLE_FLOAT4_ROWS)
@pytest.mark.parametrize("transpose", VECTOR_TRANSPOSES)
def test_16_byte_transposes_with_float4_rows_and_partial_tiles(transpose, shape):
    a = random(*shape)
    assert np.array_equal(transpose(a), a.T)


@pytest.mark.parametrize("transpose", [k.transpose_tile64, k.transpose_tile64_swizzled])
def test_tile64_mixes_whole_float4_tiles_and_scalar_edges(transpose):
    a = random(64, 68)  # one whole 64x64 tile (16-byte path), one edge tile (scalar)
    assert np.array_equal(transpose(a), a.T)


@pytest.mark.parametrize("transpose", [k.transpose_tile64_swizzled, k.transpose_tile32_vec4_swizzled])
def test_16_byte_transposes_take_the_scalar_path_on_a_misaligned_view(transpose):
    from numba import cuda

    rows, cols = 64, 64
    flat = cuda.to_device(random(rows * cols + 1))
    view = flat[1:].reshape(rows, cols)  # contiguous, 4 bytes past a 16-byte boundary
    assert k._vector_ok(view, cuda.device_array((cols, rows), np.float32)) == 0
    out = transpose(view)
    assert np.array_equal(out.copy_to_host(), view.copy_to_host().T)


@pytest.mark.parametrize("transpose", [k.transpose_padded_grid_stride, k.transpose_padded_prefetch])
@pytest.mark.parametrize("blocks", [1, 3, 100])
def test_grid_stride_transposes_with_any_grid(transpose, blocks):
    a = random(33, 40)  # 2 x 2 tiles: one block walks all four, three share them, or one a tile
    assert np.array_equal(transpose(a, blocks), a.T)
    assert k.grid_stride_tile_blocks(a.shape, blocks) == min(blocks, 4)


def test_experiment_launcher_launches_each_new_transpose_on_device_arrays():
    from numba import cuda

    a = random(32, 36)  # a whole tile (the 16-byte path) and an edge tile
    d_a = cuda.to_device(a)
    for variant in k.EXPERIMENT_TRANSPOSES:
        out = cuda.device_array((36, 32), np.float32)
        k.experiment_launcher(variant, d_a, out, blocks=2)()
        assert np.array_equal(out.copy_to_host(), a.T), variant


def test_the_new_wrappers_refuse_strided_views_and_bad_grids():
    strided = random(40, 40)[:, ::2]
    for transpose in k.EXPERIMENT_TRANSPOSES.values():
        with pytest.raises(InputError, match="C-contiguous"):
            transpose(strided)
    with pytest.raises(InputError, match=">= 1"):
        k.transpose_padded_grid_stride(random(4, 4), blocks=0)
    with pytest.raises(ValueError, match="unknown transpose"):
        k.experiment_launcher("tile16", None, None)


def test_tile64_refuses_a_non_contiguous_matrix():
    with pytest.raises(InputError, match="C-contiguous"):
        k.transpose_tile64(random(40, 40)[:, ::2])


@pytest.mark.parametrize("stride", [0, 1, 2, 32, 33, k.MAX_READ_STRIDE])
def test_shared_read_sums_what_it_read(stride):
    got = k.shared_read(stride, reps=3, blocks=2, block=64)
    assert np.array_equal(got, k.shared_read_reference(np.arange(128) % 32, stride, 3))


@pytest.mark.parametrize("stride", [1, 2, 33])
def test_shared_stride64_round_trip(stride):
    x = rng.standard_normal(200)
    assert np.array_equal(k.shared_stride64(x, stride), x)


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda: k.shared_read(k.MAX_READ_STRIDE + 1), f"<= {k.MAX_READ_STRIDE}"),
        (lambda: k.shared_read(-1), ">= 0"),
        (lambda: k.shared_read(1, reps=0), ">= 1"),
        (lambda: k.shared_read(1, block=48), "multiple of 32"),
        (lambda: k.shared_stride64(np.zeros(10, np.float32), 1), "dtype float64"),
        (lambda: k.shared_stride64(np.zeros(10), 34, block=128), "float64 slots"),
        (lambda: k.transpose_tile64_swizzled(np.zeros((4, 4), np.float64)), "dtype float32"),
        (lambda: k.transpose_swizzled(np.zeros((3, 3), np.float32), block=(32, 6)), r"\(32, 8\)"),
        (lambda: k.transpose_launch("tile16", None, None), "unknown transpose 'tile16'; choose from: naive"),
        (lambda: k.shared_read(1, blocks=2**31), "blocks must be <= 2147483647"),
    ],
)
def test_lesson4_bad_inputs_are_named(call, message):
    with pytest.raises(InputError, match=message):
        call()


# ------------------------------------------------------------------ the same inputs for every transpose

EMPTY = [(0, 5), (5, 0), (0, 0)]
STRIDE_KERNELS = [(k.shared_stride, np.float32), (k.shared_stride64, np.float64)]


@pytest.mark.parametrize("shape", EMPTY)
@pytest.mark.parametrize("name, transpose", ALL)
def test_every_transpose_of_an_empty_matrix_is_empty(name, transpose, shape):
    a = random(*shape)
    out = transpose(a)
    assert isinstance(out, np.ndarray) and out.shape == a.T.shape and out.dtype == np.float32, name


@pytest.mark.parametrize("name, transpose", ALL)
def test_every_transpose_of_an_empty_device_matrix_stays_on_the_device(name, transpose):
    from numba import cuda

    out = transpose(cuda.to_device(random(0, 7)))
    assert hasattr(out, "copy_to_host") and out.shape == (7, 0), name


@pytest.mark.parametrize("name, view", [("columns", lambda a: a[:, ::2]), ("transposed", lambda a: a.T),
                                        ("rows", lambda a: a[::2])])
@pytest.mark.parametrize("transpose_name, transpose", ALL)
def test_every_transpose_refuses_a_strided_view_in_one_line(transpose_name, transpose, name, view):
    a = view(random(40, 40))
    message = r"a must be C-contiguous, got a strided view of shape \(\d+, \d+\)"
    with pytest.raises(InputError, match=message) as error:
        transpose(a)
    assert "\n" not in str(error.value), transpose_name


@pytest.mark.parametrize("name, transpose", ALL)
def test_every_transpose_refuses_a_strided_device_view(name, transpose):
    from numba import cuda

    with pytest.raises(InputError, match="C-contiguous"):
        transpose(cuda.to_device(random(20, 20))[:, ::2])


@pytest.mark.parametrize("variant", list(k.TRANSPOSES))
def test_the_launchers_do_nothing_on_an_empty_matrix(variant):
    from numba import cuda

    k.transpose_launch(variant, cuda.device_array((0, 9), np.float32), cuda.device_array((9, 0), np.float32))


@pytest.mark.parametrize("shared_stride, dtype", STRIDE_KERNELS)
@pytest.mark.parametrize("n", [0, 1, 129])  # 129: two blocks of 128, the second with one thread
def test_shared_stride_round_trips_at_lengths_0_1_and_past_a_block(shared_stride, dtype, n):
    x = rng.standard_normal(n).astype(dtype)
    assert np.array_equal(shared_stride(x, 3, block=128), x)


@pytest.mark.parametrize("shared_stride, dtype", STRIDE_KERNELS)
def test_shared_stride_refuses_a_strided_view(shared_stride, dtype):
    with pytest.raises(InputError, match="x must be C-contiguous"):
        shared_stride(np.zeros(20, dtype)[::2], 1)
