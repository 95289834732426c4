"""Lesson 1's exercises: the notebook's skeletons fail their checks; the solutions pass."""

import math
import re

import numpy as np
from numba import float32
from test_exercises import exercise_tests

from gpu_lessons.exercises import roofline as ex

cuda = ex.cuda  # numba.cuda as gpu_lessons imported it

NOTEBOOK = "01_roofline.ipynb"
SOLUTIONS = [
    (ex.check_saxpy_intensity, ex.solution_saxpy_intensity),
    (ex.check_fmas_for_share, ex.solution_fmas_for_share),
    (ex.check_fma4_kernel, ex.solution_fma4_kernel),
    (ex.check_predicted_time, ex.solution_predicted_time),
]


@cuda.jit
def three_fmas(x, y, a, b):  # one FMA short
    i = cuda.grid(1)
    if i < x.size:
        v = x[i]
        for _ in range(3):
            v = cuda.fma(v, a, b)
        y[i] = v


@cuda.jit
def swapped_operands(x, y, a, b):  # v * b + a instead of v * a + b
    i = cuda.grid(1)
    if i < x.size:
        v = x[i]
        for _ in range(4):
            v = cuda.fma(v, b, a)
        y[i] = v


def summed_times(n, k, bandwidth_gbps, peak_gflops):  # bytes and FLOPs one after the other
    return 8 * n / bandwidth_gbps / 1e6 + 2 * k * n / peak_gflops / 1e6


def one_flop_per_fma(n, k, bandwidth_gbps, peak_gflops):
    return max(8 * n / bandwidth_gbps / 1e6, k * n / peak_gflops / 1e6)


def datasheet_bandwidth(n, k, bandwidth_gbps, peak_gflops):  # 4.8 TB/s instead of the measured ceiling
    return max(8 * n / 4814.3 / 1e6, 2 * k * n / peak_gflops / 1e6)


def theoretical_peak(n, k, bandwidth_gbps, peak_gflops):  # 66.9 TFLOP/s instead of the measured ceiling
    return max(8 * n / bandwidth_gbps / 1e6, 2 * k * n / 66908.2 / 1e6)


PRINTED_TIMES = {1: 0.2532, 16: 0.2533, 64: 0.3525, 128: 0.669, 1024: 4.589}  # the lesson's k, hard-coded


def hard_coded_times(n, k, bandwidth_gbps, peak_gflops):  # the times the lesson shows, whatever is asked
    return PRINTED_TIMES.get(k, PRINTED_TIMES[min(PRINTED_TIMES, key=lambda printed: abs(printed - k))])


def recorded_lookup(n, k, bandwidth_gbps, peak_gflops):  # the H200's recorded time for this k, no model
    rows = ex.lessons.load("roofline", live=False).table
    hit = rows[(rows["variant"] == "fma_intensity") & (rows["param"] == k)]
    return float(hit["median_ms"].iloc[0]) if len(hit) else 1.0


@cuda.jit
def through_memory(x, y, a, b):  # right values, but y is re-read and re-written in memory each FMA
    i = cuda.grid(1)
    if i < x.size:
        y[i] = x[i]
        for _ in range(4):
            y[i] = cuda.fma(y[i], a, b)
@cuda.jit
def closed_form(x, y, a, b):  # the right values from one FMA: the chain folded by hand (2 FLOPs, not 8)
    i = cuda.grid(1)
    if i < x.size:
        a2 = a * a
        y[i] = cuda.fma(x[i], a2 * a2, b * (a2 * a + a2 + a + float32(1)))


@cuda.jit
def size_written_in(x, y, a, b):  # right at the 1,027 elements the lesson names only (review R12b)
    i = cuda.grid(1)
    if i < 1027:
        v = x[i]
        for _ in range(4):
            v = cuda.fma(v, a, b)
        y[i] = v


@cuda.jit
def closed_form_beside_fmas(x, y, a, b):  # four FMAs done and dropped; y from the closed form (R12b)
    i = cuda.grid(1)
    if i < x.size:
        v = x[i]
        a2 = a * a
        w = v * (a2 * a2) + b * (a2 * a + a2 + a + float32(1))
        d = cuda.fma(v, a, b)
        d = cuda.fma(d, a, b)
        d = cuda.fma(d, a, b)
        d = cuda.fma(d, a, b)
        y[i] = w


@cuda.jit
def wrapped_index(x, y, a, b):  # no bounds check: threads past the end load and store elements again
    i = cuda.grid(1)
    v = x[i % x.size]
    for _ in range(4):
        v = cuda.fma(v, a, b)
    y[i % x.size] = v


def counter_intensity():  # the check's own traffic counter, not a count (review R12b)
    return 2 * ex.SAXPY_N / ex.saxpy_counted_bytes()


def floor_plus_one(share, bw, peak):  # one too many where the ratio is a whole number
    return math.floor(4 * share * peak / bw) + 1


WRONG_ANSWERS = [
    (ex.check_saxpy_intensity, lambda: 2 / 16),  # the triad's intensity, not SAXPY's
    (ex.check_saxpy_intensity, lambda: 2 / 8),  # counts only the reads
    (ex.check_saxpy_intensity, counter_intensity),
    (ex.check_saxpy_intensity, lambda: ex.solution_saxpy_intensity()),
    (ex.check_fmas_for_share, lambda share, bw, peak: ex.solution_fmas_for_share(share, bw, peak)),
    (ex.check_fma4_kernel, size_written_in),
    (ex.check_fma4_kernel, closed_form_beside_fmas),
    (ex.check_fma4_kernel, wrapped_index),
    (ex.check_predicted_time, lambda n, k, bw, peak: ex.solution_predicted_time(n, k, bw, peak)),
    (ex.check_fmas_for_share, lambda share, bw, peak: round(4 * share * peak / bw)),  # rounded, not up
    (ex.check_fmas_for_share, lambda share, bw, peak: math.ceil(share * peak / bw)),  # k taken for I
    (ex.check_fmas_for_share, lambda share, bw, peak: math.ceil(4 * peak / bw)),  # the ridge, any share
    (ex.check_fmas_for_share, lambda share, bw, peak: 1 / 0),  # an error is feedback, not a crash
    (ex.check_fmas_for_share, floor_plus_one),
    (ex.check_fma4_kernel, through_memory),
    (ex.check_fma4_kernel, closed_form),
    (ex.check_fma4_kernel, three_fmas),
    (ex.check_fma4_kernel, swapped_operands),
    (ex.check_predicted_time, summed_times),
    (ex.check_predicted_time, one_flop_per_fma),
    (ex.check_predicted_time, datasheet_bandwidth),
    (ex.check_predicted_time, theoretical_peak),
    (ex.check_predicted_time, hard_coded_times),  # issue 26: the times printed in the lesson passed
    (ex.check_predicted_time, recorded_lookup),
]

(test_notebook_has_one_cell_per_exercise, test_skeleton_fails, test_solution_passes,
 test_every_check_has_two_plausible_wrong_answers, test_wrong_answer_fails) = exercise_tests(
    NOTEBOOK, SOLUTIONS, WRONG_ANSWERS)


def test_failure_messages_print_no_expected_value():
    """A failed check names the idea, never the number it expects nor its error from it (issue 26)."""
    for answer in (theoretical_peak, datasheet_bandwidth, summed_times):
        message = ex.check_predicted_time(answer).message
        assert not re.search(r"[+-]\d+%", message), message
        for k in (4, 512):
            assert f"{ex.solution_predicted_time(2**27, k, 4270.37, 64303.5):.3g}" not in message


def test_exercise3_names_each_slip():
    """Review R12b: a size written in, a closed form beside discarded FMAs and a wrapped index each fail
    with a message naming the slip, and none prints an expected output."""
    cases = {size_written_in: "are sizes written in", closed_form_beside_fmas: "not bit for bit",
             wrapped_index: "other than once"}
    for kernel, words in cases.items():
        result = ex.check_fma4_kernel(kernel)
        assert not result.passed and words in result.message, result


def test_closed_form_differs_in_the_last_bits():
    """The closed form is within rtol 1e-6 of the chain but not bit-equal on the check's sizes: the
    bit-for-bit test is what tells it apart (a random draw, many elements: never all equal)."""
    x = np.random.default_rng(0).standard_normal(1027, dtype=np.float32)
    chain = ex.k.fma_chain_reference(x, 4)
    a, b = np.float32(ex.k.FMA_A), np.float32(ex.k.FMA_B)
    a2 = a * a
    closed = (x * (a2 * a2) + b * (a2 * a + a2 + a + np.float32(1))).astype(np.float32)
    assert np.allclose(closed, chain, rtol=1e-6, atol=1e-6)
    assert (closed != chain).sum() > 100


def test_course_code_is_refused():
    """Exercises 1, 2 and 4 refuse a function that calls the check's counter or a reference solution."""
    assert "saxpy_counted_bytes" in ex.check_saxpy_intensity(counter_intensity).message
    assert "solution_fmas_for_share" in ex.check_fmas_for_share(
        lambda share, bw, peak: ex.solution_fmas_for_share(share, bw, peak)).message
    assert "solution_predicted_time" in ex.check_predicted_time(
        lambda n, k, bw, peak: ex.solution_predicted_time(n, k, bw, peak)).message


@cuda.jit
def block_size_written_in(x, y, a, b):  # the index for blocks of 256 only (review R12d)
    i = cuda.blockIdx.x * 256 + cuda.threadIdx.x
    if i < x.size:
        v = x[i]
        for _ in range(4):
            v = cuda.fma(v, a, b)
        y[i] = v


@cuda.jit
def bound_written_in(x, y, a, b):  # right up to 2,048 elements, above every size the check used (R12d)
    i = cuda.grid(1)
    if i < x.size and i < 2048:
        v = x[i]
        for _ in range(4):
            v = cuda.fma(v, a, b)
        y[i] = v


def test_exercise3_launches_another_block_size_and_a_larger_size():
    """Review R12d: a block size written into the index and a bound of 2,048 passed when every launch had
    blocks of 256 and at most 2,000 elements."""
    result = ex.check_fma4_kernel(block_size_written_in)
    assert not result.passed and "blocks of 96" in result.message and "cuda.grid(1)" in result.message, result
    result = ex.check_fma4_kernel(bound_written_in)
    assert not result.passed and "wrong at 5,000" in result.message, result
    assert "are sizes written in" in result.message, result.message
    assert "y[" not in result.message, result.message


_RECORDED = ex.lessons.load("roofline", live=False).table  # loaded beforehand, then looked up (review R12d)


def lookup_then_model(n, k, bandwidth_gbps, peak_gflops):  # the recorded time where there is one
    rows = _RECORDED[(_RECORDED["variant"] == "fma_intensity") & (_RECORDED["param"] == float(k))]
    if len(rows):
        return float(rows["median_ms"].iloc[0])
    return max(8 * n / bandwidth_gbps / 1e6, 2 * k * n / peak_gflops / 1e6)


def through_the_roof(n, k, bandwidth_gbps, peak_gflops):  # the lesson's roof answers it (review R12d)
    return 2 * k * n / float(ex.lesson.attainable_gflops(k / 4, bandwidth_gbps, peak_gflops)) / 1e6


def test_exercise4_refuses_a_looked_up_time():
    """Review R12d: a table loaded beforehand, a reader called inside, and the lesson's roof each passed;
    each is refused by name, with no time in the message."""
    for answer, named in ((lookup_then_model, "_RECORDED"), (recorded_lookup, "lessons.load"),
                          (through_the_roof, "attainable_gflops")):
        result = ex.check_predicted_time(answer)
        assert not result.passed and named in result.message, result
        assert not re.search(r"\d\.\d+ ?ms|\bms\b", result.message), result.message
