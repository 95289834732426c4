"""Lesson 2's exercises: each skeleton, exactly as the notebook has it, fails; each solution passes; the
plausible wrong answers fail."""

import dataclasses
import importlib.util
import itertools
import math
import re

import numpy as np
import pytest
from numba import cuda, float32
from test_exercises import exercise_tests

from gpu_lessons import lessons, occupancy
from gpu_lessons.exercises import littles_law as ex
from gpu_lessons.lessons import littles_law as lesson
from gpu_lessons.occupancy import occupancy as occupancy_function

NOTEBOOK = "02_littles_law_ilp.ipynb"
SOLUTIONS = [
    (ex.check_predict_bandwidth, ex.solution_predict_bandwidth),
    (ex.check_occupancy_by_hand, ex.solution_occupancy_by_hand),
    (ex.check_copy2_kernel, ex.solution_copy2_kernel),
    (ex.check_chains_for_peak, (ex.solution_chains_for_peak, ex.solution_chains_measured)),
]


def _law(gpu, warps, loads, width, lanes=32, writes=2, sms=None, cap=True, latency=None):
    load = warps * lanes * loads * width
    gbps = writes * load * (gpu.sms if sms is None else sms) / (latency or gpu.latency_ns[load])
    return min(gpu.ceiling_gbps, gbps) if cap else gbps


def _no_writes(gpu, warps, loads, width):  # a copy writes what it reads: x2 forgotten
    return _law(gpu, warps, loads, width, writes=1)


def _one_sm(gpu, warps, loads, width):  # bytes in flight per SM, the SM count forgotten
    return _law(gpu, warps, loads, width, sms=1)


def _no_ceiling(gpu, warps, loads, width):  # past the knee the ceiling limits: forgotten
    return _law(gpu, warps, loads, width, cap=False)


def _no_lanes(gpu, warps, loads, width):  # a warp's load counted once, not 32 lanes (a load not in the table)
    return _law(gpu, warps, loads, width, lanes=1)


def _lightest_latency(gpu, warps, loads, width):  # one latency for every load: the lightest's
    return _law(gpu, warps, loads, width, latency=gpu.latency_ns[min(gpu.latency_ns)])


def _one_load_per_thread(gpu, warps, loads, width):  # loads per thread forgotten: the latency at another load
    return _law(gpu, warps, 1, width)


def _gbps_between(result, warps, loads, width):  # review R12c: the old prompt's answer, the neighbours' GB/s
    points = lesson.memory_points(result)
    by = points[points["variant"].str.match(r"copy w\d+ u\d+$")].groupby("bytes_in_flight_per_sm")["gbps"]
    by = by.median()
    in_flight = warps * 32 * loads * width
    xs, ys = np.log(by.index.to_numpy(float)), np.log(by.to_numpy())
    return float(np.exp(np.interp(np.log(in_flight), xs, ys)))


def _latency_between(result, warps, loads, width):  # the old reference: the law at the neighbours' latency
    by = lesson.implied_latencies(result).groupby("bytes_in_flight_per_sm")["implied_latency_ns"].median()
    in_flight = warps * 32 * loads * width
    xs, ys = np.log(by.index.to_numpy(float)), np.log(by.to_numpy())
    latency = float(np.exp(np.interp(np.log(in_flight), xs, ys)))
    return min(lesson.copy_ceiling(result), 2 * in_flight * int(result.meta["sms"]) / latency)


H200 = lessons.load("littles_law")


def _h200_gbps(gpu, warps, loads, width):  # the H200's recording, interpolated at this load
    return _gbps_between(lessons.load("littles_law"), warps, loads, width)


def _global_recording(gpu, warps, loads, width):  # the same, loaded beforehand: no reader called
    return _gbps_between(H200, warps, loads, width)


def _default_recording(gpu, warps, loads, width, h200=H200):  # the same, as a default argument
    return _gbps_between(h200, warps, loads, width)


def _calls_the_solution(gpu, warps, loads, width):
    return ex.solution_predict_bandwidth(gpu, warps, loads, width)


@cuda.jit
def _copy2_store_between(x, out):  # two loads, but the first store comes before the second load
    step = cuda.blockDim.x
    i0 = cuda.blockIdx.x * 2 * step + cuda.threadIdx.x
    i1 = i0 + step
    if i0 < x.size:
        a = x[i0]
        out[i0] = a
    if i1 < x.size:
        b = x[i1]
        out[i1] = b


@cuda.jit
def _copy2_neighbours(x, out):  # elements i and i + 1 of the thread's pair: lanes overlap, half are missed
    i0 = (cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x) * 2
    if i0 + 1 < x.size:
        a = x[i0]
        b = x[i0 + 1]
        out[i0] = a
        out[i0 + 1] = b
    elif i0 < x.size:
        out[i0] = x[i0]


def _calculator(threads, registers, shared):  # the whole answer, one call (issue 26)
    o = occupancy.occupancy(threads, registers, shared, occupancy.recorded_limits(), opt_in=True)
    return o.blocks_per_sm, o.limiter


def _calculator_imported(threads, registers, shared, calculator=occupancy_function):  # bound before the check
    o = calculator(threads, registers, shared, occupancy.recorded_limits(), opt_in=True)
    return o.blocks_per_sm, o.limiter


def _calculator_reloaded(threads, registers, shared):  # a fresh copy of the calculator's module (review l12)
    spec = importlib.util.spec_from_file_location("gpu_lessons._occupancy_again", occupancy.__file__)
    again = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(again)
    o = again.occupancy(threads, registers, shared, again.recorded_limits(), opt_in=True)
    return o.blocks_per_sm, o.limiter


def _by_hand(threads, registers, shared, unit=256, reserved=1024, block_limit=32):
    warps = -(-threads // 32)
    per_warp = -(-registers * 32 // unit) * unit
    by = {"warps": 64 // warps, "threads": 2048 // threads, "blocks": block_limit,
          "registers": 4 * (16_384 // per_warp) // warps, "shared memory": 233_472 // (shared + reserved)}
    blocks = min(by.values())
    return blocks, next(name for name, n in by.items() if n == blocks)


def _rounded_to(unit):  # shared memory rounded up to `unit` bytes instead of 128 (review R12b: 1 KiB passed)
    def answer(threads, registers, shared):
        warps = -(-threads // 32)
        per_warp = -(-registers * 32 // 256) * 256
        allocated = -(-(shared + 1024) // unit) * unit
        by = {"warps": 64 // warps, "threads": 2048 // threads, "blocks": 32,
              "registers": 4 * (16_384 // per_warp) // warps, "shared memory": 233_472 // allocated}
        blocks = min(by.values())
        return blocks, next(name for name, n in by.items() if n == blocks)
    return answer


@cuda.jit
def _copy2_loads_twice(x, out):  # review R12b: each element loaded twice (4 loads, then 4 stores)
    step = cuda.blockDim.x
    i0 = cuda.blockIdx.x * 2 * step + cuda.threadIdx.x
    i1 = i0 + step
    if i1 < x.size:
        a = x[i0]
        b = x[i1]
        c = x[i0]
        d = x[i1]
        out[i0] = a
        out[i1] = b
        out[i0] = c
        out[i1] = d
    elif i0 < x.size:
        out[i0] = x[i0]


def _calls_the_occupancy_solution(threads, registers, shared):  # review R12: the reference answer, called
    return ex.solution_occupancy_by_hand(threads, registers, shared)


@cuda.jit
def _copy2_calls_the_solution(x, out):  # review R12: the reference kernel's body as a device function
    _solution_body(x, out)


_solution_body = cuda.jit(device=True)(ex._copy2)


def _model_calls_the_solution(latency, warps):
    return ex.solution_chains_for_peak(latency, warps)


def _measured_calls_the_solution(points, warps, share):
    return ex.solution_chains_measured(points, warps, share)


def _no_allocation_unit(threads, registers, shared):  # registers counted exactly, no per-warp rounding
    return _by_hand(threads, registers, shared, unit=1)


def _no_reservation(threads, registers, shared):  # shared memory without the 1 KiB per block
    return _by_hand(threads, registers, shared, reserved=1)


def _no_block_limit(threads, registers, shared):  # the 32-blocks-per-SM limit forgotten
    return _by_hand(threads, registers, shared, block_limit=10**6)


@cuda.jit
def _copy2_off_by_one(x, out):  # i1 <= x.size: reads one past the end when n mod 128 is in [64, 127]
    step = cuda.blockDim.x
    i0 = cuda.blockIdx.x * 2 * step + cuda.threadIdx.x
    i1 = i0 + step
    if i1 <= x.size:
        a = x[i0]
        b = x[i1]
        out[i0] = a
        out[i1] = b
    elif i0 < x.size:
        out[i0] = x[i0]


@cuda.jit
def _copy2_writes_nan(x, out):  # every output written, the second half of each block's share as NaN
    step = cuda.blockDim.x
    i0 = cuda.blockIdx.x * 2 * step + cuda.threadIdx.x
    i1 = i0 + step
    if i0 < x.size:
        out[i0] = x[i0]
    if i1 < x.size:
        out[i1] = math.nan


@cuda.jit
def _copy2_dependent_address(x, out):  # review l12: the second address computed from the first load's value
    step = cuda.blockDim.x
    i0 = cuda.blockIdx.x * 2 * step + cuda.threadIdx.x
    i1 = i0 + step
    if i0 < x.size:
        a = x[i0]
        j = i1 + (0 if a == a else 1)
        if j < x.size:
            b = x[j]
            out[j] = b
        out[i0] = a


def _predicted_column(points, warps, share):  # the model's share read instead of the measured one
    rows = points[(points["warps_per_sm"] == warps) & (points["predicted_fraction"] >= share)]
    return int(rows["chains"].min()) if len(rows) else None


def _any_residency(points, warps, share):  # the fewest chains that reached the share at any residency
    rows = points[points["fraction_of_peak"] >= share]
    return int(rows["chains"].min()) if len(rows) else None


@cuda.jit
def _copy2_clamped(x, out):  # review R12c: indices clamped to the last element, no branch
    step = cuda.blockDim.x
    i0 = min(cuda.blockIdx.x * 2 * step + cuda.threadIdx.x, x.size - 1)
    i1 = min(i0 + step, x.size - 1)
    a = x[i0]
    b = x[i1]
    out[i0] = a
    out[i1] = b


@cuda.jit
def _copy2_block_64_written_in(x, out):  # review R12c: the prompt's block size written into the indices
    i0 = cuda.blockIdx.x * 128 + cuda.threadIdx.x
    i1 = i0 + 64
    if i1 < x.size:
        a = x[i0]
        b = x[i1]
        out[i0] = a
        out[i1] = b
    elif i0 < x.size:
        out[i0] = x[i0]


WRONG_ANSWERS = [
    (ex.check_predict_bandwidth, _no_writes),
    (ex.check_predict_bandwidth, _one_sm),
    (ex.check_predict_bandwidth, _no_ceiling),
    (ex.check_predict_bandwidth, _no_lanes),
    (ex.check_predict_bandwidth, _lightest_latency),
    (ex.check_predict_bandwidth, _one_load_per_thread),
    (ex.check_predict_bandwidth, _gbps_between),  # review R12c: no GB/s to go between any more
    (ex.check_predict_bandwidth, _latency_between),
    (ex.check_predict_bandwidth, _h200_gbps),
    (ex.check_predict_bandwidth, _global_recording),
    (ex.check_predict_bandwidth, _default_recording),
    (ex.check_predict_bandwidth, _calls_the_solution),
    (ex.check_predict_bandwidth, lambda gpu, warps, loads, width: gpu.ceiling_gbps),  # the ceiling for all
    (ex.check_occupancy_by_hand, _calculator),
    (ex.check_occupancy_by_hand, _calculator_imported),
    (ex.check_occupancy_by_hand, _calculator_reloaded),
    (ex.check_occupancy_by_hand, _no_allocation_unit),
    (ex.check_occupancy_by_hand, _no_reservation),
    (ex.check_occupancy_by_hand, _no_block_limit),
    (ex.check_occupancy_by_hand, _by_hand),  # review R12: shared memory not rounded up to 128 bytes
    (ex.check_occupancy_by_hand, _calls_the_occupancy_solution),
    (ex.check_occupancy_by_hand, _rounded_to(1024)),
    (ex.check_occupancy_by_hand, _rounded_to(256)),
    (ex.check_occupancy_by_hand, lambda threads, registers, shared: (2048 // threads, "threads")),
    (ex.check_copy2_kernel, _copy2_store_between),
    (ex.check_copy2_kernel, _copy2_neighbours),
    (ex.check_copy2_kernel, _copy2_off_by_one),
    (ex.check_copy2_kernel, _copy2_dependent_address),
    (ex.check_copy2_kernel, _copy2_calls_the_solution),
    (ex.check_copy2_kernel, _copy2_loads_twice),
    (ex.check_copy2_kernel, _copy2_clamped),
    (ex.check_copy2_kernel, _copy2_block_64_written_in),
    # the model: one warp per scheduler assumed; the 4 schedulers forgotten
    (ex.check_chains_for_peak, (lambda latency, warps: math.ceil(latency), ex.solution_chains_measured)),
    (ex.check_chains_for_peak, (lambda latency, warps: math.ceil(latency / warps),
                                ex.solution_chains_measured)),
    # the measurement: the model's answer again; the model's column read; every residency at once
    (ex.check_chains_for_peak, (ex.solution_chains_for_peak,
                                lambda points, warps, share: ex.solution_chains_for_peak(4.1, warps))),
    (ex.check_chains_for_peak, (ex.solution_chains_for_peak, _predicted_column)),
    (ex.check_chains_for_peak, (ex.solution_chains_for_peak, _any_residency)),
    (ex.check_chains_for_peak, (_model_calls_the_solution, ex.solution_chains_measured)),
    (ex.check_chains_for_peak, (ex.solution_chains_for_peak, _measured_calls_the_solution)),
]

(test_notebook_has_one_cell_per_exercise, test_skeleton_fails, test_solution_passes,
 test_every_check_has_two_plausible_wrong_answers, test_wrong_answer_fails) = exercise_tests(
    NOTEBOOK, SOLUTIONS, WRONG_ANSWERS)


@cuda.jit
def _copy2_local_array(x, out):  # a right answer: the two elements loaded into a local array in a loop
    step = cuda.blockDim.x
    i0 = cuda.blockIdx.x * 2 * step + cuda.threadIdx.x
    v = cuda.local.array(2, float32)
    for k in range(2):
        if i0 + k * step < x.size:
            v[k] = x[i0 + k * step]
    for k in range(2):
        if i0 + k * step < x.size:
            out[i0 + k * step] = v[k]


def test_two_loads_from_one_source_line_count_as_two():
    result = ex.check_copy2_kernel(_copy2_local_array)
    assert result.passed, result
    assert "2 loads per thread" in result.message


def test_exercise_2_holds_the_h200s_limits_on_any_gpu(monkeypatch):
    """The prompt fixes the H200's limits: a GPU with less shared memory per SM changes nothing."""
    h200 = occupancy.recorded_limits()
    smaller = dataclasses.replace(h200, shared_per_sm=164 * 1024, shared_per_block_optin=163 * 1024)
    assert occupancy.occupancy(256, 32, 45 * 1024, smaller).blocks_per_sm == 3  # not the H200's 4
    monkeypatch.setattr(occupancy, "sm_limits", lambda: smaller)
    result = ex.check_occupancy_by_hand(ex.solution_occupancy_by_hand)
    assert result.passed, result


def test_exercise_2_switches_the_calculator_back_on():
    ex.check_occupancy_by_hand(_calculator)
    assert occupancy.occupancy(128, 33, 0, occupancy.recorded_limits()).blocks_per_sm == 12


def test_exercise_3_says_written_as_nan_not_never_written():
    result = ex.check_copy2_kernel(_copy2_writes_nan)
    assert not result.passed
    assert "never written" not in result.message, result.message


@pytest.mark.parametrize("answer, named", [
    (_h200_gbps, "lessons.load"), (_calls_the_solution, "solution_predict_bandwidth"),
    (_global_recording, "H200"), (_default_recording, "a default argument")])
def test_exercise_1_refuses_a_looked_up_answer(answer, named):
    """A function that reads a recording (a reader, or one loaded beforehand) or calls the reference
    solution is refused, with one message that names what it used, before it runs."""
    result = ex.check_predict_bandwidth(answer)
    assert not result.passed
    assert named in result.message and "not to look it up" in result.message, result.message
    assert "GB/s" not in result.message, result.message


def _draws(count=200):
    rng = np.random.default_rng(12)
    return [ex.MadeUpGPU.draw(rng) for _ in range(count)]


def test_exercise_1_gives_no_bandwidth_to_go_between():
    """Review R12c: the learner gets SMs, a ceiling and a latency per load, no GB/s of any copy; the old
    answers that went between the recording's loads (its GB/s, or the law at its latencies) cannot run
    (review R12d: the lesson's functions they call reach its model of the law, so they are refused first)."""
    gpu = ex.MadeUpGPU.draw(np.random.default_rng(0))
    assert {f.name for f in dataclasses.fields(gpu)} == {"sms", "ceiling_gbps", "latency_ns"}
    for answer in (_gbps_between, _latency_between):
        result = ex.check_predict_bandwidth(answer)
        assert not result.passed, result
        assert "raised" in result.message or "your function calls kernels." in result.message, result


def test_exercise_1_the_law_passes_and_every_slip_fails_on_every_draw():
    """The reference passes on every draw and each plausible slip fails on every one (judged directly),
    with a message that names the slip and not the answer."""
    slips = {_no_writes: "writes", _one_sm: "SMs", _no_ceiling: "ceiling", _lightest_latency: "",
             _one_load_per_thread: "", _no_lanes: "every lane"}
    for gpu in _draws():
        assert ex.judged(ex.solution_predict_bandwidth, gpu).passed, gpu
        answers = {shape: ex.little(gpu, *shape) for shape in ex.PREDICT_SHAPES}
        for answer, named in slips.items():
            try:
                result = ex.judged(answer, gpu)
            except KeyError as error:  # a load the table does not have: the check reports the error
                assert named in str(error), error
                continue
            assert not result.passed, (gpu, answer)
            assert named in result.message, result.message
            shown = [g for s, g in answers.items() if g < gpu.ceiling_gbps * 0.999]
            message = re.sub(r"you predict [\d,]+ GB/s", "", result.message)  # the learner's own number
            assert not any(f"{g:,.0f} GB/s" in message for g in shown), result.message


def test_exercise_1_shapes_sit_either_side_of_the_ceiling():
    """The 4 and 8 KiB shapes stay at least 20% under the ceiling and the 32 KiB one at least 25% over it,
    and a latency read one doubling off misses by more than the tolerance."""
    for gpu in _draws():
        light, middle, heavy = (ex.little(dataclasses.replace(gpu, ceiling_gbps=math.inf), *s)
                                for s in ex.PREDICT_SHAPES)
        assert max(light, middle) <= 0.8 * gpu.ceiling_gbps and heavy >= 1.25 * gpu.ceiling_gbps, gpu
        loads = sorted(gpu.latency_ns)
        assert all(gpu.latency_ns[b] / gpu.latency_ns[a] > 1 + 2 * ex.PREDICT_TOLERANCE
                   for a, b in itertools.pairwise(loads)), gpu


def test_exercise_3_counts_accesses_over_the_whole_launch():
    """Review R12c: clamped indices load and store the last element once per thread past the end (126
    times at n = 1027); a one-block trace did not see it."""
    result = ex.check_copy2_kernel(_copy2_clamped)
    assert not result.passed and "whole launch" in result.message and "clamped" in result.message, result


def test_exercise_3_launches_a_second_block_size():
    """Review R12c: the prompt's block size written into the indices passed when every launch had blocks
    of 64."""
    result = ex.check_copy2_kernel(_copy2_block_64_written_in)
    assert not result.passed and "blocks of 96" in result.message and "blockDim" in result.message, result


@pytest.mark.parametrize("check, answer", [
    (ex.check_occupancy_by_hand, _calls_the_occupancy_solution),
    (ex.check_copy2_kernel, _copy2_calls_the_solution),
    (ex.check_chains_for_peak, (_model_calls_the_solution, ex.solution_chains_measured)),
    (ex.check_chains_for_peak, (ex.solution_chains_for_peak, _measured_calls_the_solution))])
def test_exercises_2_to_4_refuse_a_call_to_the_reference_solution(check, answer):
    result = check(*answer) if isinstance(answer, tuple) else check(answer)
    assert not result.passed
    assert "the reference solution" in result.message and "exercises.solution_" in result.message, result


def test_exercise_2_holds_the_128_byte_allocation_unit():
    """Review R12: every shape the check used to try had whole KiB of shared memory, where rounding the
    allocation up to 128 bytes changes nothing; the named (32, 16, 22,276) needs it. The message names the
    shape, not the answer."""
    assert ex.solution_occupancy_by_hand(32, 16, 22_276) == (9, "shared memory")
    assert _by_hand(32, 16, 22_276) == (10, "shared memory")
    result = ex.check_occupancy_by_hand(_by_hand)
    assert not result.passed
    assert "22,276 bytes of shared" in result.message and "10 blocks per SM is not it" in result.message
    assert "9 blocks" not in result.message, result.message


@pytest.mark.parametrize("unit", [256, 512, 1024])
def test_exercise_2_holds_the_allocation_unit_on_every_run(unit):
    """Review R12b: rounding shared memory up to 1 KiB (or 256, 512 bytes) instead of 128 passed 91% of
    runs; the named (64, 16, 7,172) and (128, 16, 14,340), with shared memory the limit, fail it on every
    run. The message names the shape, not the answer."""
    assert ex.solution_occupancy_by_hand(64, 16, 7_172) == (28, "shared memory")
    assert ex.solution_occupancy_by_hand(128, 16, 14_340) == (15, "shared memory")
    assert _rounded_to(unit)(64, 16, 7_172)[0] < 28 and _rounded_to(unit)(128, 16, 14_340)[0] < 15
    for _ in range(3):
        result = ex.check_occupancy_by_hand(_rounded_to(unit))
        assert not result.passed
        assert "7,172 bytes of shared" in result.message and "28 blocks" not in result.message, result
    assert ex.check_occupancy_by_hand(_rounded_to(128)).passed


def test_exercise_3_refuses_redundant_loads():
    """Review R12b: loading each element twice (4 loads, then 4 stores) passed as "4 loads per thread"."""
    result = ex.check_copy2_kernel(_copy2_loads_twice)
    assert not result.passed and "more than once" in result.message, result


@pytest.mark.parametrize("answer, named", [
    (lambda gpu, w, l, b: ex.little(gpu, w, l, b), "exercises.little"),
    (ex.little, "exercises.little"),
    (lambda gpu, w, l, b: min(gpu.ceiling_gbps, float(lesson.k.littles_law_gbps(
        w * 32 * l * b, gpu.latency_ns[w * 32 * l * b], gpu.sms, gpu.ceiling_gbps))),
     "kernels.littles_law_gbps")])
def test_exercise_1_refuses_the_checks_and_the_lessons_model(answer, named):
    """Review R12d: the check's own model, exercises.little, passed (called, or handed in itself); so would
    the lesson's. Each is refused by name, with no bandwidth in the message."""
    result = ex.check_predict_bandwidth(answer)
    assert not result.passed and named in result.message and "GB/s" not in result.message, result


def _floor_warps(threads, registers, shared):  # review R12d: a block's warps as threads // 32, not up
    warps = threads // 32
    per_warp = -(-registers * 32 // 256) * 256
    by = {"warps": 64 // warps, "threads": 2048 // threads, "blocks": 32,
          "registers": 4 * (16_384 // per_warp) // warps,
          "shared memory": 233_472 // (-(-(shared + 1024) // 128) * 128)}
    blocks = min(by.values())
    return blocks, next(name for name, n in by.items() if n == blocks)


def test_exercise_2_holds_warps_rounded_up_on_every_run():
    """Review R12d: every shape had whole warps, so threads // 32 passed; the named (112, 87) and (338, 25)
    take 5 blocks by the calculator and 6 by the floor, and random shapes include any thread count."""
    limits = occupancy.recorded_limits()
    for shape in ((112, 87, 0), (338, 25, 0)):
        assert lesson.calculated_occupancy(*shape, limits, opt_in=True).blocks_per_sm == 5
        assert ex.solution_occupancy_by_hand(*shape)[0] == 5 and _floor_warps(*shape)[0] == 6
    shapes = ex.occupancy_shapes(np.random.default_rng(3))
    assert sum(t % 32 != 0 for t, _, _ in shapes[len(ex.OCCUPANCY_CASES):]) >= 10
    assert all(lesson.calculated_occupancy(*s, limits, opt_in=True).blocks_per_sm
               == ex.solution_occupancy_by_hand(*s)[0] for s in shapes)
    for _ in range(3):
        result = ex.check_occupancy_by_hand(_floor_warps)
        assert not result.passed and "112 threads, 87 registers" in result.message, result
        assert "5 blocks" not in result.message, result.message


def _model_through_the_lesson(latency, warps):  # review R12d: the lesson's model function, looped
    chains = 1
    while float(np.asarray(lesson.k.fma_model_fraction(warps, chains, latency))) < 1:
        chains += 1
    return chains


def _measured_own_recording(points, warps, share):  # its own recording, not the rows it is given
    rows = lesson.fma_points(lessons.load("littles_law", live=False))
    rows = rows[(rows["warps_per_sm"] == warps) & (rows["fraction_of_peak"] >= share)]
    return int(rows["chains"].min()) if len(rows) else None


def test_exercise_4_refuses_the_lessons_model_and_a_recording():
    """Review R12d: kernels.fma_model_fraction in a loop answered the model; a reader answered the rest."""
    result = ex.check_chains_for_peak(_model_through_the_lesson, ex.solution_chains_measured)
    assert not result.passed and "kernels.fma_model_fraction" in result.message, result
    result = ex.check_chains_for_peak(ex.solution_chains_for_peak, _measured_own_recording)
    assert not result.passed and "lessons.load" in result.message, result


def test_the_lessons_bytes_in_flight_count_may_be_used():  # review E: a correct answer was refused
    from gpu_lessons.kernels import littles_law as lesson_kernels

    def predict(gpu, warps_per_sm, loads_per_thread, bytes_per_load):
        in_flight = lesson_kernels.bytes_in_flight_per_sm(warps_per_sm, loads_per_thread, bytes_per_load)
        return min(gpu.ceiling_gbps, 2 * in_flight * gpu.sms / gpu.latency_ns[in_flight])

    assert ex.check_predict_bandwidth(predict).passed
