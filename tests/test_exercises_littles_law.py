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

from gpu_lessons import lessons, occupancy, results
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


def _littles_law(result, warps, loads, width, latency_ns, writes=2, lanes=32, ceiling=None):
    read = warps * lanes * loads * width * int(result.meta["sms"]) / latency_ns
    return min(ceiling or lesson.copy_ceiling(result), writes * read)


def _light(result):  # the latency the lightest copies imply (section 3)
    return lesson.sweep_points(result).attrs["light_load_latency_ns"]


def _under_load(result, warps, loads, width):  # the latency between the loads either side (section 4)
    implied = lesson.implied_latencies(result)
    by_load = implied.groupby("bytes_in_flight_per_sm")["implied_latency_ns"].median()
    load = warps * 32 * loads * width
    return float(np.interp(load, by_load.index.to_numpy(float), by_load.to_numpy(float)))


def _at_load(result, load, column):  # the median of `column` over the copies of result at `load`
    implied = lesson.implied_latencies(result)
    return implied.loc[implied["bytes_in_flight_per_sm"] == load, column].median()


def _neighbour(result, warps, loads, width, side):  # the nearest load result has, below or above
    loads_had = lesson.implied_latencies(result)["bytes_in_flight_per_sm"].unique()
    mine = warps * 32 * loads * width
    return loads_had[loads_had < mine].max() if side == "below" else loads_had[loads_had > mine].min()


def _same_load_gbps(result, warps, loads, width):  # review R12b: the median GB/s of copies at this load
    return _at_load(result, warps * 32 * loads * width, "gbps")


def _same_load_latency(result, warps, loads, width):  # the old reference: the latency at this very load
    return _littles_law(result, warps, loads, width,
                        _at_load(result, warps * 32 * loads * width, "implied_latency_ns"))


def _nearest_gbps_below(result, warps, loads, width):  # the GB/s of the nearest lighter load, as it is
    return _at_load(result, _neighbour(result, warps, loads, width, "below"), "gbps")


def _nearest_gbps_above(result, warps, loads, width):  # the GB/s of the nearest heavier load, as it is
    return _at_load(result, _neighbour(result, warps, loads, width, "above"), "gbps")


def _nearest_latency_below(result, warps, loads, width):  # the nearest lighter load's latency, not between
    latency = _at_load(result, _neighbour(result, warps, loads, width, "below"), "implied_latency_ns")
    return _littles_law(result, warps, loads, width, latency)


def _nearest_latency_above(result, warps, loads, width):  # the nearest heavier load's latency
    latency = _at_load(result, _neighbour(result, warps, loads, width, "above"), "implied_latency_ns")
    return _littles_law(result, warps, loads, width, latency)


def _chase_latency(result, warps, loads, width):  # one load alone: the latency the lesson measured first
    return _littles_law(result, warps, loads, width, lesson.latency(result, "DRAM"))


def _light_latency(result, warps, loads, width):  # the light copies' 586 ns at any load (the old reference)
    return _littles_law(result, warps, loads, width, _light(result))


def _cycles_as_ns(result, warps, loads, width):  # the chase's 676 cycles read as nanoseconds
    return _littles_law(result, warps, loads, width, lesson.latency(result, "DRAM", unit="cycles"))


def _below_knee(result):  # one latency under load for both copies: what copies at 4 KiB per SM see
    return _under_load(result, 2, 8, 8)


def _datasheet_cap(result, warps, loads, width):  # that latency, capped at the datasheet's 4,814 GB/s
    return _littles_law(result, warps, loads, width, _below_knee(result), ceiling=4814.3)


def _light_datasheet_cap(result, warps, loads, width):  # issue 26's exploit: 586 ns and the datasheet cap
    return _littles_law(result, warps, loads, width, _light(result), ceiling=4814.3)


def _own_row(result, warps, loads, width):  # the copy's own implied latency, read from the recording
    implied = lesson.implied_latencies(result)
    own = implied[(implied["warps_per_sm"] == warps) & (implied["width"] == width)
                  & (implied["unroll"] == loads)]
    return _littles_law(result, warps, loads, width, own["implied_latency_ns"].iloc[0])


def _own_gbps(result, warps, loads, width):  # the copy's measured GB/s, read from the recording
    points = lesson.memory_points(result)
    own = points[(points["warps_per_sm"] == warps) & (points["width"] == width) & (points["unroll"] == loads)]
    return float(own["gbps"].iloc[0])


def _latency_under_load(result, warps, loads, width):  # the most a copy below the knee saw (section 4)
    implied = lesson.implied_latencies(result)
    most = implied.loc[~implied["past_knee"], "implied_latency_ns"].max()
    return _littles_law(result, warps, loads, width, most)


def _no_ceiling(result, warps, loads, width):  # that latency, but the ceiling forgotten
    return 2 * warps * 32 * loads * width * int(result.meta["sms"]) / _below_knee(result)


def _no_writes(result, warps, loads, width):  # a copy writes what it reads: x2 forgotten
    return _littles_law(result, warps, loads, width, _under_load(result, warps, loads, width), writes=1)


def _no_lanes(result, warps, loads, width):  # a warp's load counted once, not 32 lanes
    return _littles_law(result, warps, loads, width, _under_load(result, warps, loads, width), lanes=1)


def _named_latency(result, warps, loads, width):  # copy w4 u1 at 64 warps/SM's latency (783 ns on the H200)
    implied = lesson.implied_latencies(result)
    named = implied[(implied["variant"] == "copy w4 u1") & (implied["warps_per_sm"] == 64)]
    return _littles_law(result, warps, loads, width, float(named["implied_latency_ns"].iloc[0]))


def _h200_number(result, warps, loads, width):  # 783 ns, the H200's number, on whatever GPU is asked about
    return _littles_law(result, warps, loads, width, 783.4)


def _held_out_gbps(result, warps, loads, width):  # the H200's own measurement, read from the full recording
    full = lesson.memory_points(ex.read_result(lesson.NAME))
    own = full[(full["warps_per_sm"] == warps) & (full["width"] == width) & (full["unroll"] == loads)]
    return float(own["gbps"].iloc[0])


def _held_out_latency(result, warps, loads, width):  # the H200's own implied latency, with result's SMs
    full = lesson.implied_latencies(ex.read_result(lesson.NAME))
    own = full[(full["warps_per_sm"] == warps) & (full["width"] == width) & (full["unroll"] == loads)]
    return _littles_law(result, warps, loads, width, float(own["implied_latency_ns"].iloc[0]))


def _h200_row(warps, loads, width):  # the H200's measurement of the copy asked about
    points = lesson.memory_points(lessons.load("littles_law", live=False))
    own = points[(points["warps_per_sm"] == warps) & (points["width"] == width) & (points["unroll"] == loads)]
    return float(own["gbps"].iloc[0])


def _rescaled_row(result, warps, loads, width):  # review R12: the H200's row x SM ratio / chase-latency ratio
    h200 = lessons.load("littles_law", live=False)
    sms = int(result.meta["sms"]) / int(h200.meta["sms"])
    chase = lesson.latency(result, "DRAM") / lesson.latency(h200, "DRAM")
    return _h200_row(warps, loads, width) * sms / chase


def _rescaled_by_reader(result, warps, loads, width):  # the same, through results.read_result
    h200 = results.read_result("littles_law")
    own = lesson.memory_points(h200)
    own = own[(own["warps_per_sm"] == warps) & (own["width"] == width) & (own["unroll"] == loads)]
    return float(own["gbps"].iloc[0]) * int(result.meta["sms"]) / int(h200.meta["sms"])


def _calls_the_solution(result, warps, loads, width):
    return ex.solution_predict_bandwidth(result, warps, loads, width)


H200 = ex.read_result(lesson.NAME)  # a recording loaded beforehand, as a notebook cell could


def _global_recording(result, warps, loads, width):  # the H200's row from a global: no reader called
    points = lesson.memory_points(H200)
    own = points[(points["warps_per_sm"] == warps) & (points["width"] == width) & (points["unroll"] == loads)]
    return float(own["gbps"].iloc[0]) * int(result.meta["sms"]) / int(H200.meta["sms"])


def _default_recording(result, warps, loads, width, h200=H200):  # the same, as a default argument
    return _global_recording(result, warps, loads, width) if h200 is not None else None


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


WRONG_ANSWERS = [
    (ex.check_predict_bandwidth, _chase_latency),
    (ex.check_predict_bandwidth, _light_latency),
    (ex.check_predict_bandwidth, _cycles_as_ns),
    (ex.check_predict_bandwidth, _datasheet_cap),
    (ex.check_predict_bandwidth, _light_datasheet_cap),
    (ex.check_predict_bandwidth, _own_row),
    (ex.check_predict_bandwidth, _own_gbps),
    (ex.check_predict_bandwidth, _latency_under_load),
    (ex.check_predict_bandwidth, _no_ceiling),
    (ex.check_predict_bandwidth, _no_writes),
    (ex.check_predict_bandwidth, _no_lanes),
    (ex.check_predict_bandwidth, _held_out_gbps),  # review l12: the held-out rows read from the recording
    (ex.check_predict_bandwidth, _held_out_latency),
    (ex.check_predict_bandwidth, _rescaled_row),  # review R12: refused (lessons.load)
    (ex.check_predict_bandwidth, _rescaled_by_reader),
    (ex.check_predict_bandwidth, _calls_the_solution),
    (ex.check_predict_bandwidth, _global_recording),
    (ex.check_predict_bandwidth, _default_recording),
    (ex.check_predict_bandwidth, _h200_number),
    (ex.check_predict_bandwidth, _same_load_gbps),  # review R12b: a lookup, no law
    (ex.check_predict_bandwidth, _same_load_latency),
    (ex.check_predict_bandwidth, _nearest_gbps_below),
    (ex.check_predict_bandwidth, _nearest_gbps_above),
    (ex.check_predict_bandwidth, _nearest_latency_below),
    (ex.check_predict_bandwidth, _nearest_latency_above),
    (ex.check_predict_bandwidth, lambda result, warps, loads, width: 923.0),  # one number for every shape
    # the ceiling for every shape
    (ex.check_predict_bandwidth, lambda result, warps, loads, width: lesson.copy_ceiling(result)),
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


@pytest.mark.parametrize("corner", [0, -1])
def test_exercise_1_messages_print_no_measurement(monkeypatch, corner):
    """Values copied from a failure message must not pass: no message names a measured GB/s of the copies
    asked about, the H200's or the made-up GPU's (issue 26). The draw is pinned (two corners), so that a
    random prediction cannot match a measurement by chance and make the test flaky."""
    gpu = CORNERS[corner]
    monkeypatch.setattr(ex.MadeUpGPU, "draw", classmethod(lambda cls, rng: gpu))
    made_up = ex.made_up_gpu(H200, gpu)
    shown = [ex.recorded_shape(data, variant, warps)["gbps"] for variant, warps in ex.PREDICT_SHAPES
             for data in (H200, made_up)]
    # the copy past the knee runs at the made-up GPU's ceiling, which `result` gives (copy_ceiling) and a
    # message may name
    shown = [gbps for gbps in shown if abs(gbps - lesson.copy_ceiling(made_up)) > 0.5]
    assert len(shown) == 3
    for answer in (_chase_latency, _light_latency, _cycles_as_ns, _datasheet_cap, _no_writes):
        message = ex.check_predict_bandwidth(answer).message
        assert str(gpu) in message
        message = re.sub(r"you predict [\d,]+ GB/s \(a latency of [\d,]+ ns\)", "", message)  # its own
        for gbps in shown:
            assert f"{gbps:,.0f}" not in message and f"{gbps:.0f}" not in message, message


def test_exercise_1_the_lessons_latency_under_load_passes():
    """The lesson says: plan with the latency under load; the one it names (its ringed 8 KiB copy's), read
    from the GPU asked about, passes (issue 26)."""
    assert ex.check_predict_bandwidth(_named_latency).passed


@pytest.mark.parametrize("answer, named", [
    (_rescaled_row, "lessons.load"), (_held_out_gbps, "results.read_result"),
    (_rescaled_by_reader, "results.read_result"), (_calls_the_solution, "solution_predict_bandwidth"),
    (_global_recording, "H200"), (_default_recording, "a default argument")])
def test_exercise_1_refuses_a_looked_up_answer(answer, named):
    """Review R12: a function that reads a recording (a reader, or one loaded beforehand) or calls the
    reference solution is refused, with one message that names what it used, before it runs."""
    result = ex.check_predict_bandwidth(answer)
    assert not result.passed
    assert named in result.message and "not to look it up" in result.message, result.message
    assert "GB/s" not in result.message, result.message


def test_exercise_1_does_not_refuse_the_lessons_readers_of_result():
    """The functions the prompt names (latency, sweep_points, implied_latencies, copy_ceiling), reached
    through the `lessons` package as a notebook's globals have it, are not recording readers."""

    def answer(result, warps, loads, width):
        ll = lessons.littles_law
        implied = ll.implied_latencies(result)
        by_load = implied.groupby("bytes_in_flight_per_sm")["implied_latency_ns"].median()
        in_flight = warps * 32 * loads * width
        latency = np.interp(in_flight, by_load.index, by_load) + 0 * ll.latency(result, "DRAM")
        return min(ll.copy_ceiling(result), 2 * in_flight * int(result.meta["sms"]) / latency)

    assert ex.refusal(answer) is None
    assert ex.check_predict_bandwidth(answer).passed


CORNERS = [ex.MadeUpGPU(sms, idle, below, below / easing, cut)
           for sms, idle, below, easing, cut in itertools.product(
               (ex.MADE_UP_SMS[0], ex.MADE_UP_SMS[1] - 1), ex.MADE_UP_IDLE, ex.MADE_UP_BELOW,
               ex.MADE_UP_EASING, ex.MADE_UP_CUT)]


def _draws(count=40):
    rng = np.random.default_rng(12)
    return CORNERS + [ex.MadeUpGPU.draw(rng) for _ in range(count)]


def _ratio(gpu, by):  # the H200's held-out row x the SM ratio / one ratio of the made-up GPU's to the H200's
    def answer(result, warps, loads, width):
        return _h200_row(warps, loads, width) * int(result.meta["sms"]) / int(H200.meta["sms"]) / by(result)
    return answer


UNIFORM_RESCALINGS = {
    "the chase's latency": lambda r: lesson.latency(r, "DRAM") / lesson.latency(H200, "DRAM"),
    "the light copies' latency": lambda r: (lesson.sweep_points(r).attrs["light_load_latency_ns"]
                                            / lesson.sweep_points(H200).attrs["light_load_latency_ns"]),
    "the ceiling": lambda r: (lesson.copy_ceiling(H200) / lesson.copy_ceiling(r)
                              * int(r.meta["sms"]) / int(H200.meta["sms"])),
    "the datasheet": lambda r: (float(H200.meta["datasheet_bandwidth_gbps"])
                                / float(r.meta["datasheet_bandwidth_gbps"])
                                * int(r.meta["sms"]) / int(H200.meta["sms"])),
    "nothing (SMs only)": lambda r: 1.0,
}


@pytest.mark.parametrize("by", UNIFORM_RESCALINGS)
def test_exercise_1_a_uniform_rescaling_of_the_h200s_row_fails(by):
    """Review R12 (b): the made-up GPU differs from the H200 by different factors at different loads, so
    the H200's recorded row rescaled by the SM ratio and any one ratio is not the answer, on every corner of
    the draw and on random draws (judged directly, as if the refusal had been got round)."""
    for gpu in _draws():
        answer = _ratio(gpu, UNIFORM_RESCALINGS[by])
        result = ex.judged(answer, ex.made_up_gpu(H200, gpu), gpu)
        assert not result.passed, (gpu, result)


def test_exercise_1_the_model_passes_on_every_draw():
    """The reference solution and the lesson's named latency under load pass on every corner of the draw,
    and every plausible wrong answer fails on every one."""
    wrong = [a for c, a in WRONG_ANSWERS if c is ex.check_predict_bandwidth and ex.refusal(a) is None]
    for gpu in _draws():
        data = ex.made_up_gpu(H200, gpu)
        for right in (ex.solution_predict_bandwidth, _named_latency):
            assert ex.judged(right, data, gpu).passed, (gpu, right)
        for answer in wrong:
            try:
                assert not ex.judged(answer, data, gpu).passed, (gpu, answer)
            except IndexError:  # the held-out row read from result: not there
                pass


def test_exercise_1_the_made_up_gpu_keeps_the_lessons_shape():
    """The 8 KiB copies stay below the made-up GPU's knee and the 16 KiB ones past it, as on the H200."""
    for gpu in CORNERS:
        knee = lesson.implied_latencies(ex.made_up_gpu(H200, gpu)).attrs["knee_bytes_per_sm"]
        assert 8192 < knee < 16384, (gpu, knee)


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


def test_exercise_1_no_copy_at_the_asked_loads_is_given():
    """Review R12b: the learner's `result` has no one-shot copy at 4 KiB or 32 KiB per SM (the two loads
    asked about), so neither a GB/s nor a latency at the asked load can be looked up; the lesson's other
    loads are all there."""
    given = ex.without_shapes(H200)
    loads = set(lesson.implied_latencies(given)["bytes_in_flight_per_sm"])
    assert not loads & {4096.0, 32768.0}
    assert {2048.0, 8192.0, 16384.0, 65536.0} <= loads
    assert lesson.copy_ceiling(ex.without_shapes(ex.made_up_gpu(H200, CORNERS[0]))) == pytest.approx(
        lesson.copy_ceiling(ex.made_up_gpu(H200, CORNERS[0])))
    for answer in (_same_load_gbps, _same_load_latency):
        result = ex.check_predict_bandwidth(answer)
        assert not result.passed and "no copy" in result.message and "this load" in result.message, result
