"""Lesson 4's exercises: each skeleton, exactly as the notebook has it, fails; each solution passes;
typical wrong answers are caught."""

from test_exercises import exercise_tests

from gpu_lessons.exercises import bank_conflicts as ex
from gpu_lessons.exercises.bank_conflicts import cuda, numba  # numba after gpu_lessons chose the mode
from gpu_lessons.kernels import bank_conflicts as k

NOTEBOOK = "04_bank_conflicts_padding.ipynb"
SOLUTIONS = [
    (ex.check_wavefronts, ex.solution_wavefronts),
    (ex.check_conflict_free_transpose, ex.solution_conflict_free_transpose),
    (ex.check_float64_padding, ex.solution_float64_padding),
]


test_notebook_has_one_cell_per_exercise, test_skeleton_fails, test_solution_passes = exercise_tests(
    NOTEBOOK, SOLUTIONS)


def test_the_lessons_own_conflict_free_tiles_pass_and_the_plain_tile_fails():
    assert ex.check_conflict_free_transpose(k.transpose_swizzled_kernel).passed
    assert ex.check_conflict_free_transpose(k.transpose_padded_kernel).passed
    result = ex.check_conflict_free_transpose(k.transpose_tiled_kernel)
    assert not result.passed and "bank conflicts" in result.message


@cuda.jit
def _padded_but_wrong(a, out):  # conflict-free, but transposes nothing
    tile = cuda.shared.array((32, 33), numba.float32)
    tile[cuda.threadIdx.y, cuda.threadIdx.x] = 1.0
    cuda.syncthreads()
    row, col = cuda.grid(2)
    if row < out.shape[0] and col < out.shape[1]:
        out[row, col] = tile[cuda.threadIdx.x, cuda.threadIdx.y]


def test_wrong_answers_are_caught():
    assert not ex.check_wavefronts(lambda s: 32 // max(1, s)).passed  # stride 33 is not 0-way
    assert not ex.check_wavefronts(lambda s: 1 / 0).passed  # an error is feedback
    assert not ex.check_conflict_free_transpose(_padded_but_wrong).passed
    assert not ex.check_conflict_free_transpose(k.transpose_naive_kernel).passed  # no shared memory
    assert not ex.check_float64_padding(lambda: 2).passed  # 2-way conflicts
    assert not ex.check_float64_padding(lambda: 0.5).passed
