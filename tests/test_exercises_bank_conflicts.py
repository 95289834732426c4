"""Lesson 4's exercises: each skeleton, exactly as the notebook has it, fails; each solution passes;
plausible wrong answers are caught."""

import math

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


@cuda.jit
def _padded_by_two(a, out):  # rows of 34 words: word 34 tx + c is bank (2 tx + c) % 32, 2-way conflicts
    tile = cuda.shared.array((32, 34), numba.float32)
    tx, ty = cuda.threadIdx.x, cuda.threadIdx.y
    rows, cols = a.shape
    col, row = cuda.blockIdx.x * 32 + tx, cuda.blockIdx.y * 32 + ty
    for step in range(0, 32, cuda.blockDim.y):
        if row + step < rows and col < cols:
            tile[ty + step, tx] = a[row + step, col]
    cuda.syncthreads()
    out_col, out_row = cuda.blockIdx.y * 32 + tx, cuda.blockIdx.x * 32 + ty
    for step in range(0, 32, cuda.blockDim.y):
        if out_row + step < cols and out_col < rows:
            out[out_row + step, out_col] = tile[tx, ty + step]


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


WRONG_ANSWERS = [
    (ex.check_wavefronts, lambda s: math.gcd(s, 32)),  # forgets the broadcast: stride 0 is 1, not 32
    (ex.check_wavefronts, lambda s: min(max(s, 1), 32)),  # "stride s is an s-way conflict": 33 is 1
    (ex.check_wavefronts, lambda s: 32 // math.gcd(s, 32) if s else 1),  # the banks used, not wavefronts
    (ex.check_conflict_free_transpose, _padded_by_two),
    (ex.check_conflict_free_transpose, _swizzled_on_store_only),
    (ex.check_conflict_free_transpose, k.transpose_tiled_kernel),  # the unpadded tile: 32-way conflicts
    (ex.check_float64_padding, lambda: 2),  # 2 doubles per row: rows 4 banks apart, 2-way conflicts
    (ex.check_float64_padding, lambda: 0),  # no padding: every row starts in bank 0
    (ex.check_float64_padding, lambda: 0.5),  # one word, as for float32: not a whole float64
]

(test_notebook_has_one_cell_per_exercise, test_skeleton_fails, test_solution_passes,
 test_every_check_has_two_plausible_wrong_answers, test_wrong_answer_fails) = exercise_tests(
    NOTEBOOK, SOLUTIONS, WRONG_ANSWERS)


def test_the_lessons_own_conflict_free_tiles_pass_and_the_plain_tile_fails_naming_its_conflicts():
    assert ex.check_conflict_free_transpose(k.transpose_swizzled_kernel).passed
    assert ex.check_conflict_free_transpose(k.transpose_padded_kernel).passed
    result = ex.check_conflict_free_transpose(k.transpose_tiled_kernel)
    assert not result.passed and "bank conflicts" in result.message


def test_a_kernel_without_shared_memory_or_an_error_is_feedback():
    assert "shared memory" in ex.check_conflict_free_transpose(k.transpose_naive_kernel).message
    assert not ex.check_wavefronts(lambda s: 1 / 0).passed
