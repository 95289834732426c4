"""Lesson 4's exercises: each skeleton, exactly as the notebook has it, fails; each solution passes;
plausible wrong answers are caught."""

from test_exercises import exercise_tests

from gpu_lessons.exercises import bank_conflicts as ex
from gpu_lessons.exercises.bank_conflicts import cuda, numba  # numba after gpu_lessons chose the mode
from gpu_lessons.kernels import bank_conflicts as k

NOTEBOOK = "04_bank_conflicts_padding.ipynb"
SOLUTIONS = [
    (ex.check_tile32_pipe, ex.solution_tile32_pipe),
    (ex.check_swizzled_tile, ex.solution_swizzled_tile),
    (ex.check_float64_column, ex.solution_float64_column),
]


def pipe_with(wavefronts, requests=64, per_sm=True):
    """A learner's tile32 pipe time with a wrong count of wavefronts a tile (or no division by SMs)."""
    def predict(sms, tiles, intercept_ns, ns_per_wavefront):
        per = tiles / sms if per_sm else tiles
        return per * (requests * intercept_ns + wavefronts * ns_per_wavefront) / 1e3
    return predict


@cuda.jit
def _swizzled_on_store_only(a, out):  # swizzles the store, forgets the read: wrong result
    tile = cuda.shared.array((32, 32), numba.float32)
    tx, ty = cuda.threadIdx.x, cuda.threadIdx.y
    rows, cols = a.shape
    col, row = cuda.blockIdx.x * 32 + tx, cuda.blockIdx.y * 32 + ty
    for step in range(0, 32, cuda.blockDim.y):
        if row + step < rows and col < cols:
            tile[ty + step, tx ^ (ty + step)] = a[row + step, col]
    cuda.syncthreads()
    out_col, out_row = cuda.blockIdx.y * 32 + tx, cuda.blockIdx.x * 32 + ty
    for step in range(0, 32, cuda.blockDim.y):
        if out_row + step < cols and out_col < rows:
            out[out_row + step, out_col] = tile[tx, ty + step]


@cuda.jit
def _swizzled_by_thread_row(a, out):  # XORs with r % 8 (ty), not the row r: a column gets 8 banks
    tile = cuda.shared.array((32, 32), numba.float32)
    tx, ty = cuda.threadIdx.x, cuda.threadIdx.y
    rows, cols = a.shape
    col, row = cuda.blockIdx.x * 32 + tx, cuda.blockIdx.y * 32 + ty
    for step in range(0, 32, cuda.blockDim.y):
        if row + step < rows and col < cols:
            tile[ty + step, tx ^ ty] = a[row + step, col]
    cuda.syncthreads()
    out_col, out_row = cuda.blockIdx.y * 32 + tx, cuda.blockIdx.x * 32 + ty
    for step in range(0, 32, cuda.blockDim.y):
        if out_row + step < cols and out_col < rows:
            out[out_row + step, out_col] = tile[tx, (ty + step) ^ (tx % 8)]


@cuda.jit
def _swizzled_without_barrier(a, out):  # the right placement, no cuda.syncthreads(): a race
    tile = cuda.shared.array((32, 32), numba.float32)
    tx, ty = cuda.threadIdx.x, cuda.threadIdx.y
    rows, cols = a.shape
    col, row = cuda.blockIdx.x * 32 + tx, cuda.blockIdx.y * 32 + ty
    for step in range(0, 32, cuda.blockDim.y):
        if row + step < rows and col < cols:
            tile[ty + step, tx ^ (ty + step)] = a[row + step, col]
    out_col, out_row = cuda.blockIdx.y * 32 + tx, cuda.blockIdx.x * 32 + ty
    for step in range(0, 32, cuda.blockDim.y):
        if out_row + step < cols and out_col < rows:
            out[out_row + step, out_col] = tile[tx, (ty + step) ^ tx]


@cuda.jit
def _skewed(a, out):  # a rotation instead of an XOR: also a conflict-free swizzle, no padding
    tile = cuda.shared.array((32, 32), numba.float32)
    tx, ty = cuda.threadIdx.x, cuda.threadIdx.y
    rows, cols = a.shape
    col, row = cuda.blockIdx.x * 32 + tx, cuda.blockIdx.y * 32 + ty
    for step in range(0, 32, cuda.blockDim.y):
        if row + step < rows and col < cols:
            tile[ty + step, (tx + ty + step) % 32] = a[row + step, col]
    cuda.syncthreads()
    out_col, out_row = cuda.blockIdx.y * 32 + tx, cuda.blockIdx.x * 32 + ty
    for step in range(0, 32, cuda.blockDim.y):
        if out_row + step < cols and out_col < rows:
            out[out_row + step, out_col] = tile[tx, (ty + step + tx) % 32]


WRONG_ANSWERS = [
    (ex.check_tile32_pipe, pipe_with(32 + 32)),  # no conflicts counted: the padded tile's 64
    (ex.check_tile32_pipe, pipe_with(32 * 32)),  # the column reads only, the stores forgotten (-3%)
    (ex.check_tile32_pipe, pipe_with(32 * 31 + 32)),  # bank conflicts (31 a read) taken for wavefronts
    (ex.check_tile32_pipe, pipe_with(32 * 32, requests=32)),  # the stores forgotten entirely
    (ex.check_tile32_pipe, pipe_with(32 * 32 + 32 * 32)),  # the row stores taken as conflicting too
    (ex.check_tile32_pipe, pipe_with(32 * 32 + 32, per_sm=False)),  # every tile on one SM
    (ex.check_swizzled_tile, _swizzled_on_store_only),
    (ex.check_swizzled_tile, _swizzled_by_thread_row),  # padded, unpadded, no barrier: below, with messages
    (ex.check_float64_column, lambda: (16, 1)),  # one half-warp's wavefronts only
    (ex.check_float64_column, lambda: (64, 1)),  # a wavefront per word
    (ex.check_float64_column, lambda: (32, 2)),  # 2 doubles a row: rows 4 banks apart, 2-way conflicts
    (ex.check_float64_column, lambda: (32, 0.5)),  # one word, as for float32: not a whole float64
    (ex.check_float64_column, lambda: (32, 3)),  # conflict-free, but 3 doubles where 1 does
]

(test_notebook_has_one_cell_per_exercise, test_skeleton_fails, test_solution_passes,
 test_every_check_has_two_plausible_wrong_answers, test_wrong_answer_fails) = exercise_tests(
    NOTEBOOK, SOLUTIONS, WRONG_ANSWERS)


def test_another_conflict_free_tile_without_padding_passes():
    assert ex.check_swizzled_tile(_skewed).passed  # any permutation that spreads a column over the banks


def test_the_failures_say_what_is_wrong():  # each kernel traced once: the simulator is slow
    for kernel, says in ((k.transpose_padded_kernel, "that is padding"),  # conflict-free, but 32x33
                         (k.transpose_tiled_kernel, "load and 0 store bank conflicts"),  # 32-way conflicts
                         (k.transpose_naive_kernel, "reads no shared memory"),
                         (_swizzled_without_barrier, "a barrier between them")):  # the race, named
        result = ex.check_swizzled_tile(kernel)
        assert not result.passed and says in result.message
    assert not ex.check_tile32_pipe(lambda *args: 1 / 0).passed
    result = ex.check_float64_column(lambda: (32, 3))
    assert not result.passed and "less shared memory" in result.message


def test_the_pipe_prediction_is_held_to_the_recorded_counts():
    recorded = ex.recorded_pipe("tile32")
    solution = ex.solution_tile32_pipe(recorded["sms"], recorded["tiles"], recorded["intercept_ns"],
                                       recorded["ns_per_wavefront"])
    assert recorded["pipe_us"] == solution
    assert 250 < recorded["pipe_us"] < 280 and recorded["measured_us"] > recorded["pipe_us"]


def test_near_equivalent_pipe_models_pass_and_missed_terms_fail_clearly():
    recorded = ex.recorded_pipe("tile32")
    args = (recorded["sms"], recorded["tiles"], recorded["intercept_ns"], recorded["ns_per_wavefront"])

    def no_intercept(sms, tiles, intercept_ns, ns_per_wavefront):  # the fit's intercept left out
        return tiles / sms * (32 + 32 * 32) * ns_per_wavefront / 1e3

    def rounded_rate(sms, tiles, intercept_ns, ns_per_wavefront):  # 1 / 1.98 ns, a wavefront a clock
        return tiles / sms * (32 + 32 * 32) / 1.98 / 1e3

    def whole_tiles(sms, tiles, intercept_ns, ns_per_wavefront):  # the busiest SM's whole tiles
        return -(-tiles // sms) * (64 * intercept_ns + (32 + 32 * 32) * ns_per_wavefront) / 1e3

    for near in (no_intercept, rounded_rate, whole_tiles):
        assert ex.check_tile32_pipe(near).passed, near.__name__
    for wrong in (pipe_with(32 * 32), pipe_with(32 * 31 + 32)):  # 3% off: three times the tolerance
        assert abs(wrong(*args) / recorded["pipe_us"] - 1) > 2.5 * ex.PIPE_TOLERANCE
    assert "overlap" not in ex.check_tile32_pipe(ex.solution_tile32_pipe).message
