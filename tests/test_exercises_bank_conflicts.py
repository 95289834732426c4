"""Lesson 4's exercises: each skeleton, exactly as the notebook has it, fails; each solution passes;
plausible wrong answers are caught."""

import math

import numpy as np
import pytest
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
    """A learner's pipe time with a fixed count of wavefronts a tile whatever the rows (or no division
    by SMs): ``wavefronts`` a number, or a function of the row length in words."""
    def predict(row_words, sms, tiles, intercept_ns, ns_per_wavefront):
        count = wavefronts(row_words) if callable(wavefronts) else wavefronts
        per = tiles / sms if per_sm else tiles
        return per * (requests * intercept_ns + count * ns_per_wavefront) / 1e3
    return predict


def cell_21_copied(row_words, sms, tiles, intercept_ns, ns_per_wavefront):
    """Cell 21's code with one edit: "a column costs 32" for the unpadded tile, 1 otherwise."""
    wavefronts = 32 + 32 * (32 if row_words == 32 else 1)
    return tiles / sms * (64 * intercept_ns + wavefronts * ns_per_wavefront) / 1e3


def course_pipe(row_words, sms, tiles, intercept_ns, ns_per_wavefront):
    """The course's own model answers for the learner (review l34, C6)."""
    return ex.model_pipe_us(row_words, sms, tiles, intercept_ns, ns_per_wavefront)


def pipe_from_the_solution(row_words, sms, tiles, intercept_ns, ns_per_wavefront):
    """A reference solution called (review R34, 1)."""
    return ex.solution_tile32_pipe(row_words, sms, tiles, intercept_ns, ns_per_wavefront)


def pipe_traced_inside(row_words, sms, tiles, intercept_ns, ns_per_wavefront):
    """The column read's wavefronts from the tracer, imported inside the function (review R34, 1)."""
    import numpy as np

    from gpu_lessons.sim.trace import trace as count

    counts = count(k.transpose_tiled_kernel, (1, 1), (32, 8), np.zeros((32, 32), np.float32),
                   np.zeros((32, 32), np.float32))
    wavefronts = counts.by_instruction["wavefronts"].sum()
    return tiles / sms * (64 * intercept_ns + wavefronts * ns_per_wavefront) / 1e3


def pipe_from_the_lesson_inside(row_words, sms, tiles, intercept_ns, ns_per_wavefront):
    """Section 1's conflict_degree, imported inside the function."""
    from gpu_lessons.lessons import bank_conflicts

    wavefronts = 32 + 32 * bank_conflicts.conflict_degree(row_words)
    return tiles / sms * (64 * intercept_ns + wavefronts * ns_per_wavefront) / 1e3


def column_from_the_helper(padding):
    """The exercise module's own counter (review R34, 2)."""
    return ex.column_read_wavefronts(padding)[0]


def column_from_the_solution(padding):
    """A reference solution called (review R34, 2)."""
    return ex.solution_float64_column(padding)


def column_traced_inside(padding):
    """A float64 column read traced, the tracer imported inside the function (review R34, 2)."""
    import numpy as np

    import gpu_lessons.sim.trace as tracer

    counts = tracer.trace(_read_float64_column, 1, 32, np.zeros((32, 32 + padding)), np.zeros(32))
    return int(counts.by_instruction["wavefronts"].max())


def column_from_the_lesson_inside(padding):
    """Section 1's gcd rule, from the lesson's conflict_degree imported inside the function."""
    from gpu_lessons.lessons.bank_conflicts import conflict_degree

    return conflict_degree(2 * (32 + padding))


@cuda.jit
def _read_float64_column(a, out):
    tile = cuda.shared.array((32, 40), numba.float64)
    r = cuda.threadIdx.x
    tile[r, 0] = a[r, 0]
    cuda.syncthreads()
    out[r] = tile[r, 0]


@cuda.jit
def _relay_through_rows(a, out):  # review l34, C1: the transpose in an uncoalesced global read, no swizzle
    tile = cuda.shared.array((32, 32), numba.float32)
    tx, ty = cuda.threadIdx.x, cuda.threadIdx.y
    rows, cols = a.shape
    row = cuda.blockIdx.y * 32 + tx
    for step in range(0, 32, cuda.blockDim.y):
        col = cuda.blockIdx.x * 32 + ty + step
        if row < rows and col < cols:
            tile[ty + step, tx] = a[row, col]
    cuda.syncthreads()
    for step in range(0, 32, cuda.blockDim.y):
        r = (ty + step + 1) % 32  # another thread's row: every element changes threads
        out_row, out_col = cuda.blockIdx.x * 32 + r, cuda.blockIdx.y * 32 + tx
        if out_row < cols and out_col < rows:
            out[out_row, out_col] = tile[r, tx]


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
def _naive_plus_dummy_read(a, out):  # the naive transpose, and one shared read nobody needs
    tile = cuda.shared.array((32, 32), numba.float32)
    tx, ty = cuda.threadIdx.x, cuda.threadIdx.y
    rows, cols = a.shape
    col, row = cuda.blockIdx.x * 32 + tx, cuda.blockIdx.y * 32 + ty
    if tx == 0 and ty == 0:
        tile[0, 0] = 0.0
    cuda.syncthreads()
    dummy = tile[0, 0]  # a broadcast: no conflict
    for step in range(0, 32, cuda.blockDim.y):
        if row + step < rows and col < cols:
            out[col, row + step] = a[row + step, col] + dummy * 0.0


@cuda.jit
def _tile_round_trip_in_one_thread(a, out):  # stores and reads back its own element: no exchange
    tile = cuda.shared.array((32, 32), numba.float32)
    tx, ty = cuda.threadIdx.x, cuda.threadIdx.y
    rows, cols = a.shape
    col, row = cuda.blockIdx.x * 32 + tx, cuda.blockIdx.y * 32 + ty
    for step in range(0, 32, cuda.blockDim.y):
        if row + step < rows and col < cols:
            tile[ty + step, tx] = a[row + step, col]
    cuda.syncthreads()
    for step in range(0, 32, cuda.blockDim.y):
        if row + step < rows and col < cols:
            out[col, row + step] = tile[ty + step, tx]


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


@cuda.jit
def _every_warp_loads_the_whole_tile(a, out):  # review R34c, 6: right result, conflict-free, 8x the loads
    tile = cuda.shared.array((32, 32), numba.float32)
    tx = cuda.threadIdx.x
    ty = cuda.threadIdx.y
    rows, cols = a.shape
    col = cuda.blockIdx.x * 32 + tx
    for r in range(32):
        if cuda.blockIdx.y * 32 + r < rows and col < cols:
            tile[r, tx ^ r] = a[cuda.blockIdx.y * 32 + r, col]
    cuda.syncthreads()
    out_col = cuda.blockIdx.y * 32 + tx
    out_row = cuda.blockIdx.x * 32 + ty
    for step in range(0, 32, cuda.blockDim.y):
        if out_row + step < cols and out_col < rows:
            out[out_row + step, out_col] = tile[tx, (ty + step) ^ tx]


def _table_of_checked_rows(default):
    """The fixed rows' wavefronts looked up, ``default`` for any other row (review R34c, 7)."""
    table = {32: 32, 33: 1, 40: 8, 44: 4, 48: 16, 64: 32}
    return pipe_with(lambda w: 32 + 32 * table.get(w, default))


def _table_of_checked_paddings(padding):
    """The fixed paddings' answers looked up (as the old check's cases were), nothing computed."""
    return {0: 32, 1: 2, 2: 4, 3: 2, 4: 8, 6: 4, 8: 16, 12: 8, 16: 32}[padding]


WRONG_ANSWERS = [
    (ex.check_tile32_pipe, pipe_with(32 + 32)),  # no conflicts counted: the padded tile's 64
    (ex.check_tile32_pipe, pipe_with(32 * 32)),  # the column reads only, the stores forgotten (-3%)
    (ex.check_tile32_pipe, pipe_with(32 * 31 + 32)),  # bank conflicts (31 a read) taken for wavefronts
    (ex.check_tile32_pipe, pipe_with(32 * 32, requests=32)),  # the stores forgotten entirely
    (ex.check_tile32_pipe, pipe_with(32 * 32 + 32 * 32)),  # the row stores taken as conflicting too
    (ex.check_tile32_pipe, pipe_with(32 * 32 + 32, per_sm=False)),  # every tile on one SM
    (ex.check_tile32_pipe, pipe_with(32 * 32 + 32)),  # "a column costs 32" whatever the rows
    (ex.check_tile32_pipe, cell_21_copied),  # right for tile32 and the padded tile only
    (ex.check_tile32_pipe, pipe_with(lambda w: 32 + 32 * (w % 32 or 32))),  # row_words % 32: wrong at 44
    (ex.check_tile32_pipe, pipe_with(lambda w: 32 + 32 * (32 // (w % 32 or 1)))),  # 32 / offset, not gcd
    (ex.check_tile32_pipe, pipe_with(lambda w: 32 + 32 * math.gcd(w, 64))),  # 64 banks: wrong at rows of 64
    (ex.check_tile32_pipe, course_pipe),  # review l34, C6
    (ex.check_tile32_pipe, pipe_from_the_solution),  # review R34, 1
    (ex.check_tile32_pipe, pipe_traced_inside),  # review R34, 1
    (ex.check_tile32_pipe, pipe_from_the_lesson_inside),
    (ex.check_swizzled_tile, _swizzled_on_store_only),
    (ex.check_swizzled_tile, _swizzled_by_thread_row),  # padded, unpadded, no barrier: below, with messages
    (ex.check_swizzled_tile, _naive_plus_dummy_read),  # a global transpose beside a tile: issue 26
    (ex.check_swizzled_tile, _tile_round_trip_in_one_thread),  # through the tile, but each thread its own
    (ex.check_swizzled_tile, _relay_through_rows),  # review l34, C1: conflict-free, a's load uncoalesced
    (ex.check_float64_column, lambda p: 32 if p == 0 else 2),  # the float32 rule: any padding fixes it
    (ex.check_float64_column, lambda p: 32 if p == 0 else 1),  # ... and one wavefront, as for float32
    (ex.check_float64_column, lambda p: 16 if p == 0 else 1),  # one half-warp's wavefronts only
    (ex.check_float64_column, lambda p: 32 // (p or 1) if p else 32),  # conflicts shrink with padding
    (ex.check_float64_column, lambda p: math.gcd(2 * (32 + p), 32) // 2),  # one half-warp, right otherwise
    (ex.check_float64_column, column_from_the_helper),  # review R34, 2
    (ex.check_float64_column, column_from_the_solution),  # review R34, 2
    (ex.check_float64_column, column_traced_inside),  # review R34, 2
    (ex.check_float64_column, column_from_the_lesson_inside),
    (ex.check_float64_column, lambda p: 2 * math.gcd(p, 8) if p else 32),  # review R34b, 13: wrong at 16
    (ex.check_float64_column, _table_of_checked_paddings),  # review R34b, 13: a lookup table
    (ex.check_float64_column, lambda p: 2 * math.gcd(p, 32) if p else 32),  # review R34c, 8: wrong at 32
    (ex.check_tile32_pipe, _table_of_checked_rows(1)),  # review R34c, 7
    (ex.check_swizzled_tile, _every_warp_loads_the_whole_tile),  # review R34c, 6
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
    for kernel, says in ((_naive_plus_dummy_read, "never went through the tile"),
                         (_tile_round_trip_in_one_thread, "never went through the tile")):
        result = ex.check_swizzled_tile(kernel)
        assert not result.passed and says in result.message
    assert not ex.check_tile32_pipe(lambda *args: 1 / 0).passed
    result = ex.check_float64_column(lambda p: 32 if p == 0 else 2)
    assert not result.passed and "with 2 float64 of padding a row you give 2" in result.message
    assert not ex.check_float64_column(lambda: (32, 1)).passed  # the old answer's shape: one clear line


def test_the_course_helpers_and_an_uncoalesced_relay_are_named():  # review l34, C1 and C6
    assert "calls the course's model_pipe_us" in ex.check_tile32_pipe(course_pipe).message
    message = ex.check_swizzled_tile(_relay_through_rows).message
    assert "global load of a touches" in message and "not coalesced" in message
    # the word-stride gcd of section 1 gives the half-warp count of a column read at every padding
    assert ex.check_float64_column(lambda p: math.gcd(2 * (32 + p), 32)).passed


def test_no_failure_message_prints_the_expected_value():
    recorded = ex.recorded_pipe("tile32")
    for wrong in (pipe_with(32 + 32), pipe_with(32 * 32 + 32)):  # fails at rows of 32, then of 33
        message = ex.check_tile32_pipe(wrong).message
        assert f"{recorded['pipe_us']:,.1f}" not in message
        assert f"{ex.model_pipe_us(33, **ex.OTHER_GPU):,.1f}" not in message
    message = ex.check_float64_column(lambda p: 32 if p == 0 else 2).message
    assert "4 wavefronts" not in message and " 4" not in message.split("you give")[1].split("wavefronts")[1]


def test_the_float64_paddings_need_the_half_warp_model():
    assert [ex.column_read_wavefronts(p)[0] for p in (0, 1, 2, 4)] == [32, 2, 4, 8]
    assert {2, 4} <= set(ex.CHECKED_PADDINGS)  # where "pad by one" and "any padding" go wrong


def test_the_pipe_prediction_is_held_to_the_recorded_counts():
    recorded = ex.recorded_pipe("tile32")
    solution = ex.solution_tile32_pipe(32, recorded["sms"], recorded["tiles"], recorded["intercept_ns"],
                                       recorded["ns_per_wavefront"])
    assert recorded["pipe_us"] == solution
    for rows in (*ex.OTHER_ROWS, 32, 33, 34, 64):  # the solution's gcd is the bank model's count
        model = ex.model_pipe_us(rows, **ex.OTHER_GPU)
        assert ex.solution_tile32_pipe(rows, **ex.OTHER_GPU) == pytest.approx(model)
    assert 250 < recorded["pipe_us"] < 280 and recorded["measured_us"] > recorded["pipe_us"]


def test_near_equivalent_pipe_models_pass_and_missed_terms_fail_clearly():
    recorded = ex.recorded_pipe("tile32")
    args = (32, recorded["sms"], recorded["tiles"], recorded["intercept_ns"], recorded["ns_per_wavefront"])

    def whole_tiles(rows, sms, tiles, intercept_ns, ns_per_wavefront):  # the busiest SM's whole tiles
        wavefronts = 32 + 32 * math.gcd(rows, 32)
        return -(-tiles // sms) * (64 * intercept_ns + wavefronts * ns_per_wavefront) / 1e3

    for near in (whole_tiles,):
        assert ex.check_tile32_pipe(near).passed, near.__name__
    for wrong in (pipe_with(32 * 32), pipe_with(32 * 31 + 32)):  # 3% off: three times the tolerance
        assert abs(wrong(*args) / recorded["pipe_us"] - 1) > 2.5 * ex.PIPE_TOLERANCE
    assert "overlap" not in ex.check_tile32_pipe(ex.solution_tile32_pipe).message


def test_reference_solutions_helpers_and_inner_imports_are_refused():  # review R34, 1 and 2
    for check, answer, says in (
            (ex.check_tile32_pipe, pipe_from_the_solution, "calls exercises.solution_tile32_pipe"),
            (ex.check_tile32_pipe, pipe_traced_inside, "calls the tracer"),
            (ex.check_tile32_pipe, pipe_from_the_lesson_inside, "conflict_degree"),
            (ex.check_float64_column, column_from_the_helper, "calls exercises.column_read_wavefronts"),
            (ex.check_float64_column, column_from_the_solution, "calls exercises.solution_float64_column"),
            (ex.check_float64_column, column_traced_inside, "calls the tracer"),
            (ex.check_float64_column, column_from_the_lesson_inside, "conflict_degree")):
        result = check(answer)
        assert not result.passed and says in result.message and "yourself" in result.message, result
    assert "handed in exercises.solution_float64_column" not in ex.check_float64_column(
        ex.solution_float64_column).message  # the reference itself, handed in whole, passes


def test_the_pipe_hint_names_the_idea_not_the_formula():  # review R34, 4
    for wrong in (pipe_with(32 * 32 + 32), pipe_with(32 + 32), cell_21_copied):
        message = ex.check_tile32_pipe(wrong).message
        assert "share a bank" in message and "distinct words" in message, message
        for formula in ("tiles / SMs", "x intercept", "x ns per wavefront", "gcd", "32 / ", "t x row_words"):
            assert formula not in message, (formula, message)


def test_a_whole_warp_count_agrees_with_the_half_warp_model_for_a_column_read():  # review R34, 7
    """Why exercise 3 cannot hold a learner to the half-warp model: lanes r and r + 16 read words
    64 r + 2 r p and 64 (r + 16) + 2 (r + 16) p, the same bank pair, so the busiest bank of the whole
    warp holds exactly twice the words of either half-warp's, at every padding (the simulator's count)."""
    lanes = np.arange(32)
    for padding in range(0, 130):
        words = lanes * (32 + padding) * 2
        touched = np.unique(np.concatenate([words, words + 1]))  # each float64: two words, two banks
        whole_warp = int(np.bincount(touched % 32, minlength=32).max())
        assert whole_warp == ex.column_read_wavefronts(padding)[0], padding


def test_renamed_parameters_pass():  # review R34b, 12: the check calls the prediction positionally
    def renamed(row_words, n_sms, n_tiles, t_request, t_wavefront):
        return n_tiles / n_sms * (64 * t_request + (32 + 32 * math.gcd(row_words, 32)) * t_wavefront) / 1e3

    assert ex.check_tile32_pipe(renamed).passed



def test_a_table_and_a_gcd_with_8_fail():  # review R34b, 13
    assert 16 in ex.CHECKED_PADDINGS and ex.column_read_wavefronts(16)[0] == 32  # as bad as none
    result = ex.check_float64_column(lambda p: 2 * math.gcd(p, 8) if p else 32)
    assert not result.passed and "with 16 float64 of padding a row you give 16" in result.message
    assert "32 wavefronts" not in result.message and "gives 32" not in result.message
    for _ in range(3):  # the two drawn paddings differ run to run; a table fails every time
        result = ex.check_float64_column(_table_of_checked_paddings)
        assert not result.passed and "for any padding" in result.message and "KeyError" in result.message
    assert ex.check_float64_column(lambda p: 2 * math.gcd(p, 16)).passed  # a learner's own rule


def test_every_warp_moving_the_whole_tile_fails():  # review R34c, 6
    result = ex.check_swizzled_tile(_every_warp_loads_the_whole_tile)
    assert not result.passed and "loads of a took 8.0 times the warp requests a tile needs" in result.message
    reference = ex.reference_global_requests()
    assert str(reference["ld"]) not in result.message and str(reference["st"]) not in result.message


def test_a_table_of_the_checked_rows_fails_every_run():  # review R34c, 7
    pool = [r for r in range(34, 127, 2) if r % 32 and r not in ex.OTHER_ROWS]
    assert all(math.gcd(r, 32) not in (1, 32) for r in pool) and 64 in ex.OTHER_ROWS
    for _ in range(3):  # the drawn rows differ run to run; a table fails, whatever its default
        assert set(ex.drawn_rows()) <= set(pool) and len(ex.drawn_rows()) == ex.DRAWN_ROWS
        for default in (1, 32):
            result = ex.check_tile32_pipe(_table_of_checked_rows(default))
            assert not result.passed and "on another GPU's numbers" in result.message, result
        assert ex.check_tile32_pipe(ex.solution_tile32_pipe).passed


def test_a_gcd_with_32_fails_at_a_padding_of_32():  # review R34c, 8
    assert {32, 48} <= set(ex.CHECKED_PADDINGS) and ex.column_read_wavefronts(32)[0] == 32
    result = ex.check_float64_column(lambda p: 2 * math.gcd(p, 32) if p else 32)
    assert not result.passed and "with 32 float64 of padding a row you give 64" in result.message


def test_every_padding_to_64_is_checked():  # review R34d, 9: two random paddings passed a table wrong at one
    def wrong_at(bad):
        def answer(padding):  # the learner's own formula, off at one padding
            return 2 * math.gcd(padding, 16) + (2 if padding == bad else 0)
        return answer
    for bad in (36, 5, 40, 64):
        result = ex.check_float64_column(wrong_at(bad))
        assert not result.passed and f"with {bad} float64 of padding" in result.message, result
        assert f"{ex.column_read_wavefronts(bad)[0]} wavefronts" not in result.message
    assert ex.check_float64_column(lambda padding: 2 * math.gcd(padding, 16)).passed


@cuda.jit
def swizzled_tile_clamped_edges(a, out):
    """Right output, but the edge tiles' loads clamp the index instead of skipping: extra requests."""
    tile = cuda.shared.array((32, 32), numba.float32)
    tx, ty = cuda.threadIdx.x, cuda.threadIdx.y
    rows, cols = a.shape
    col, row = cuda.blockIdx.x * 32 + tx, cuda.blockIdx.y * 32 + ty
    for step in range(0, 32, cuda.blockDim.y):
        tile[ty + step, tx ^ (ty + step)] = a[min(row + step, rows - 1), min(col, cols - 1)]
    cuda.syncthreads()
    out_col, out_row = cuda.blockIdx.y * 32 + tx, cuda.blockIdx.x * 32 + ty
    for step in range(0, 32, cuda.blockDim.y):
        if out_row + step < cols and out_col < rows:
            out[out_row + step, out_col] = tile[tx, (ty + step) ^ tx]


def test_clamped_edge_loads_are_named():  # review R34d, 10
    result = ex.check_swizzled_tile(swizzled_tile_clamped_edges)
    assert not result.passed and "clamping the index" in result.message, result


@cuda.jit
def swizzled_tile_for_45_by_70_only(a, out):
    """Right on the checked 45x70 matrix only: its guards have 45, 70 and 8 rows a pass written in
    (review R34e, 3)."""
    tile = cuda.shared.array((32, 32), numba.float32)
    tx, ty = cuda.threadIdx.x, cuda.threadIdx.y
    col, row = cuda.blockIdx.x * 32 + tx, cuda.blockIdx.y * 32 + ty
    for step in range(0, 32, 8):
        if row + step < 45 and col < 70:
            tile[ty + step, tx ^ (ty + step)] = a[row + step, col]
    cuda.syncthreads()
    out_col, out_row = cuda.blockIdx.y * 32 + tx, cuda.blockIdx.x * 32 + ty
    for step in range(0, 32, 8):
        if out_row + step < 70 and out_col < 45:
            out[out_row + step, out_col] = tile[tx, (ty + step) ^ tx]


def test_a_shape_written_in_fails():  # review R34e, 3
    assert ex.EXERCISE_SHAPE == (45, 70) and ex.SECOND_SHAPE != ex.EXERCISE_SHAPE
    result = ex.check_swizzled_tile(swizzled_tile_for_45_by_70_only)
    assert not result.passed and "are sizes written in?" in result.message, result
    assert "a.shape" in result.message
