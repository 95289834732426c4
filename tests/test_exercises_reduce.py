"""Lesson 5's exercises: the notebook's skeletons fail their checks, the solutions pass, and plausible
wrong answers (at least two per check) fail."""

import math

from test_exercises import exercise_tests

import gpu_lessons
from gpu_lessons.exercises import reduce as ex
from gpu_lessons.kernels import reduce as k

cuda = ex.cuda  # numba.cuda as gpu_lessons imported it (the mode is chosen before the import)
float32 = ex.float32


# ----------------------------------------------------------- exercise 1: half_sums


@cuda.jit(device=True)
def whole_warp(value):
    offset = 16  # the full butterfly: every lane holds the warp's sum, not its half's
    while offset > 0:
        value += cuda.shfl_xor_sync(0xFFFFFFFF, value, offset)
        offset //= 2
    return value


@cuda.jit(device=True)
def shuffle_down_halves(value):
    offset = 8  # the lesson's shfl_down from 8: only lanes 0 and 16 end with their half's sum
    while offset > 0:
        value += cuda.shfl_down_sync(0xFFFFFFFF, value, offset)
        offset //= 2
    return value


@cuda.jit(device=True)
def assigned_not_added(value):
    offset = 8
    while offset > 0:
        value = cuda.shfl_xor_sync(0xFFFFFFFF, value, offset)  # replaces instead of adding
        offset //= 2
    return value


# ------------------------------------------------------------------ exercise 2: reduce_sum


@cuda.jit
def early_exit(x, out):
    i = cuda.grid(1)
    if i >= x.size:
        return  # lanes past the end leave: the shuffles of their warp can never complete
    value = k.warp_reduce_sum(x[i])
    if cuda.threadIdx.x % 32 == 0:
        cuda.atomic.add(out, 0, value)


@cuda.jit
def no_grid_stride(x, out):
    warp_sums = cuda.shared.array(32, float32)
    tid = cuda.threadIdx.x
    i = cuda.blockIdx.x * cuda.blockDim.x * 2 + tid
    value = float32(0)
    if i < x.size:  # one step only: elements past 2 x blocks x threads are never read
        value += x[i]
        if i + cuda.blockDim.x < x.size:
            value += x[i + cuda.blockDim.x]
    value = k.warp_reduce_sum(value)
    if tid % 32 == 0:
        warp_sums[tid // 32] = value
    cuda.syncthreads()
    value = warp_sums[tid] if tid < (cuda.blockDim.x + 31) // 32 else float32(0)
    if tid < 32:
        value = k.warp_reduce_sum(value)
        if tid == 0:
            cuda.atomic.add(out, 0, value)


@cuda.jit
def every_lane_adds(x, out):
    warp_sums = cuda.shared.array(32, float32)
    tid = cuda.threadIdx.x
    i = cuda.blockIdx.x * cuda.blockDim.x * 2 + tid
    stride = cuda.blockDim.x * 2 * cuda.gridDim.x
    value = float32(0)
    while i < x.size:
        value += x[i]
        if i + cuda.blockDim.x < x.size:
            value += x[i + cuda.blockDim.x]
        i += stride
    value = k.warp_reduce_sum(value)
    if tid % 32 == 0:
        warp_sums[tid // 32] = value
    cuda.syncthreads()
    value = warp_sums[tid] if tid < (cuda.blockDim.x + 31) // 32 else float32(0)
    if tid < 32:
        value = k.warp_reduce_sum(value)
        cuda.atomic.add(out, 0, value)  # every lane of warp 0, not only lane 0 (which holds the sum)


@cuda.jit
def calls_block_helper(x, out):
    tid = cuda.threadIdx.x
    i = cuda.grid(1)
    value = float32(0)
    while i < x.size:
        value += x[i]
        i += cuda.gridDim.x * cuda.blockDim.x
    value = k.block_reduce_sum(value)  # the lesson's block level, not written
    if tid == 0:
        cuda.atomic.add(out, 0, value)


@cuda.jit
def atomic_per_warp(x, out):
    tid = cuda.threadIdx.x
    i = cuda.blockIdx.x * cuda.blockDim.x * 2 + tid
    stride = cuda.blockDim.x * 2 * cuda.gridDim.x
    value = float32(0)
    while i < x.size:
        value += x[i]
        if i + cuda.blockDim.x < x.size:
            value += x[i + cuda.blockDim.x]
        i += stride
    value = k.warp_reduce_sum(value)
    cuda.syncthreads()
    if tid % 32 == 0:
        cuda.atomic.add(out, 0, value)  # one atomic per warp: no second level


@cuda.jit
def no_barrier(x, out):
    warp_sums = cuda.shared.array(32, float32)
    tid = cuda.threadIdx.x
    i = cuda.blockIdx.x * cuda.blockDim.x * 2 + tid
    stride = cuda.blockDim.x * 2 * cuda.gridDim.x
    value = float32(0)
    while i < x.size:
        value += x[i]
        if i + cuda.blockDim.x < x.size:
            value += x[i + cuda.blockDim.x]
        i += stride
    value = k.warp_reduce_sum(value)
    if tid % 32 == 0:
        warp_sums[tid // 32] = value
    # no cuda.syncthreads(): warp 0 may read the other warps' entries before they are written
    value = warp_sums[tid] if tid < (cuda.blockDim.x + 31) // 32 else float32(0)
    if tid < 32:
        value = k.warp_reduce_sum(value)
        if tid == 0:
            cuda.atomic.add(out, 0, value)


@cuda.jit
def stride_without_2(x, out):
    warp_sums = cuda.shared.array(32, float32)
    tid = cuda.threadIdx.x
    i = cuda.blockIdx.x * cuda.blockDim.x * 2 + tid
    stride = cuda.blockDim.x * cuda.gridDim.x  # two elements a step, but the grid moves by one block width
    value = float32(0)
    while i < x.size:
        value += x[i]
        if i + cuda.blockDim.x < x.size:
            value += x[i + cuda.blockDim.x]
        i += stride
    value = k.warp_reduce_sum(value)
    if tid % 32 == 0:
        warp_sums[tid // 32] = value
    cuda.syncthreads()
    value = warp_sums[tid] if tid < (cuda.blockDim.x + 31) // 32 else float32(0)
    if tid < 32:
        value = k.warp_reduce_sum(value)
        if tid == 0:
            cuda.atomic.add(out, 0, value)


@cuda.jit
def unguarded_read(x, out):
    warp_sums = cuda.shared.array(32, float32)
    tid = cuda.threadIdx.x
    i = cuda.blockIdx.x * cuda.blockDim.x * 2 + tid
    stride = cuda.blockDim.x * 2 * cuda.gridDim.x
    value = float32(0)
    while i < x.size:
        value += x[i]
        if i + cuda.blockDim.x < x.size:
            value += x[i + cuda.blockDim.x]
        i += stride
    value = k.warp_reduce_sum(value)
    if tid % 32 == 0:
        warp_sums[tid // 32] = value
    cuda.syncthreads()
    if tid < 32:
        value = k.warp_reduce_sum(warp_sums[tid])  # entries 4..31 were never written (4 warps)
        if tid == 0:
            cuda.atomic.add(out, 0, value)


@cuda.jit
def barrier_in_branch(x, out):
    warp_sums = cuda.shared.array(32, float32)
    tid = cuda.threadIdx.x
    i = cuda.blockIdx.x * cuda.blockDim.x * 2 + tid
    stride = cuda.blockDim.x * 2 * cuda.gridDim.x
    value = float32(0)
    while i < x.size:
        value += x[i]
        if i + cuda.blockDim.x < x.size:
            value += x[i + cuda.blockDim.x]
        i += stride
    value = k.warp_reduce_sum(value)
    if tid % 32 == 0:
        warp_sums[tid // 32] = value
    if tid < 32:
        cuda.syncthreads()  # a barrier only the first warp reaches: undefined behaviour
        value = warp_sums[tid] if tid < (cuda.blockDim.x + 31) // 32 else float32(0)
        value = k.warp_reduce_sum(value)
        if tid == 0:
            cuda.atomic.add(out, 0, value)


@cuda.jit
def skips_last_warp(x, out):
    warp_sums = cuda.shared.array(32, float32)
    tid = cuda.threadIdx.x
    i = cuda.blockIdx.x * cuda.blockDim.x * 2 + tid
    stride = cuda.blockDim.x * 2 * cuda.gridDim.x
    value = float32(0)
    while i < x.size:
        value += x[i]
        if i + cuda.blockDim.x < x.size:
            value += x[i + cuda.blockDim.x]
        i += stride
    value = k.warp_reduce_sum(value)
    if tid % 32 == 0:
        warp_sums[tid // 32] = value
    cuda.syncthreads()
    value = warp_sums[tid] if tid < cuda.blockDim.x // 32 - 1 else float32(0)  # one warp sum short
    if tid < 32:
        value = k.warp_reduce_sum(value)
        if tid == 0:
            cuda.atomic.add(out, 0, value)


# ----------------------------------------------------------------- exercise 3: a tolerance


def _bound(x, depth):
    du = depth * 2.0**-24
    return math.inf if du >= 1 else du / (1 - du) * float(abs(x).astype("float64").sum())


def _per_thread(x, blocks, threads):
    return max(1, -(-len(x) // (blocks * threads)))


def no_atomics(x, blocks, threads):
    return _bound(x, _per_thread(x, blocks, threads) - 1 + int(math.log2(threads)))  # forgets the atomics


def no_tree(x, blocks, threads):
    return _bound(x, _per_thread(x, blocks, threads) - 1 + blocks - 1)  # forgets the block's tree


def one_chain(x, blocks, threads):
    return _bound(x, len(x) - 1)  # the lesson's chain over all n elements


def one_tree(x, blocks, threads):
    return _bound(x, math.ceil(math.log2(max(len(x), 2))))  # the lesson's tree over all n elements


def floor_not_ceil(x, blocks, threads):
    per_thread = max(1, len(x) // (blocks * threads))  # the longest chain rounds up, not down
    return _bound(x, per_thread - 1 + int(math.log2(threads)) + blocks - 1)


def abs_of_sum(x, blocks, threads):
    depth = _per_thread(x, blocks, threads) - 1 + int(math.log2(threads)) + blocks - 1
    du = depth * 2.0**-24
    return math.inf if du >= 1 else du / (1 - du) * abs(float(x.sum()))  # |sum x|, not sum |x|


# ---------------------------------------------------------------- exercise 4: predict a time


def _fit():
    fit = ex.lesson.launch_model(ex.lessons.load("reduce", live=False), ["vec4_last_block"])
    return fit.set_index("variant").loc["vec4_last_block"]


def datasheet_bandwidth(n):
    return float(_fit()["t0_us"]) + 4 * n / 4.8e6  # the H200's 4.8 TB/s datasheet figure


def copy_ceiling(n):
    return float(_fit()["t0_us"]) + 4 * n / (ex.lessons.roof()["bandwidth_gbps"] * 1e3)  # lesson 1's copy


def gib_for_gb(n):
    fit = _fit()
    return float(fit["t0_us"]) + 4 * n / (float(fit["bw_gbps"]) * 2**30 / 1e6)  # GiB/s read as GB/s


def no_launch_cost(n):
    return 4 * n / (float(_fit()["bw_gbps"]) * 1e3)  # bytes over bandwidth only


def cupy_fit(n):
    fit = ex.lesson.launch_model(ex.lessons.load("reduce", live=False), ["cupy.sum"]).iloc[0]
    return float(fit["t0_us"]) + 4 * n / (float(fit["bw_gbps"]) * 1e3)  # another variant's fit


def measured_median(n):
    rows = ex.lesson.sweep_rows(ex.lessons.load("reduce", live=False))
    rows = rows[rows["variant"] == "vec4_last_block"].set_index("size")
    return 1e3 * float(rows.loc[n, "median_ms"])  # a lookup of the recording, not a model


def grid_sweep_best(n):
    return float(_fit()["t0_us"]) + 4 * n / 4485e3  # vec4's best in section 7's grid sweep, 4,485 GB/s


NOTEBOOK = "05_reduce.ipynb"
SOLUTIONS = [
    (ex.check_half_sums, ex.solution_half_sums),
    (ex.check_reduce_sum, ex.solution_reduce_sum),
    (ex.check_tolerance, ex.solution_tolerance),
    (ex.check_predicted_time, ex.solution_predicted_time),
]
WRONG_ANSWERS = [
    (ex.check_half_sums, whole_warp),
    (ex.check_half_sums, shuffle_down_halves),
    (ex.check_half_sums, assigned_not_added),
    (ex.check_reduce_sum, early_exit),
    (ex.check_reduce_sum, no_grid_stride),
    (ex.check_reduce_sum, every_lane_adds),
    (ex.check_reduce_sum, calls_block_helper),
    (ex.check_reduce_sum, atomic_per_warp),
    (ex.check_reduce_sum, no_barrier),
    (ex.check_reduce_sum, stride_without_2),
    (ex.check_reduce_sum, unguarded_read),
    (ex.check_reduce_sum, barrier_in_branch),
    (ex.check_reduce_sum, skips_last_warp),
    (ex.check_tolerance, no_atomics),
    (ex.check_tolerance, no_tree),
    (ex.check_tolerance, one_chain),
    (ex.check_tolerance, one_tree),
    (ex.check_tolerance, floor_not_ceil),
    (ex.check_tolerance, abs_of_sum),
    (ex.check_predicted_time, datasheet_bandwidth),
    (ex.check_predicted_time, copy_ceiling),
    (ex.check_predicted_time, gib_for_gb),
    (ex.check_predicted_time, no_launch_cost),
    (ex.check_predicted_time, cupy_fit),
    (ex.check_predicted_time, measured_median),
    (ex.check_predicted_time, grid_sweep_best),
]

(test_notebook_has_one_cell_per_exercise, test_skeleton_fails, test_solution_passes,
 test_every_check_has_two_plausible_wrong_answers, test_wrong_answer_fails) = exercise_tests(
    NOTEBOOK, SOLUTIONS, WRONG_ANSWERS)


def test_an_early_exit_deadlocks_on_the_simulator():
    result = ex.check_reduce_sum(early_exit)
    assert not result.passed
    if gpu_lessons.SIMULATED:  # on a GPU the early return does not hang: it only gives a wrong sum
        assert "Deadlock" in result.message, result


def test_a_wrong_half_sum_gets_a_true_hint():
    assert "whole warp's sum" in ex.check_half_sums(whole_warp).message
    assert "first lane of each half" in ex.check_half_sums(shuffle_down_halves).message
    assert "first lane of each half" not in ex.check_half_sums(assigned_not_added).message


def test_a_wrong_reduce_sum_gets_a_true_hint():
    assert "block_reduce_sum" in ex.check_reduce_sum(calls_block_helper).message
    assert "one per warp" in ex.check_reduce_sum(atomic_per_warp).message
    assert "only one lane" in ex.check_reduce_sum(every_lane_adds).message
    assert "barrier" in ex.check_reduce_sum(no_barrier).message
    assert "more than once" in ex.check_reduce_sum(stride_without_2).message
    assert "never added" in ex.check_reduce_sum(no_grid_stride).message
    assert "every warp's sum" in ex.check_reduce_sum(skips_last_warp).message
    assert "inside a branch that only some threads take" in ex.check_reduce_sum(barrier_in_branch).message
    if gpu_lessons.SIMULATED:  # on a GPU unwritten shared memory holds whatever was there
        assert "NaN" in ex.check_reduce_sum(unguarded_read).message


def test_a_wrong_tolerance_gets_a_true_hint():
    assert "atomics" not in ex.check_tolerance(no_tree).message
    assert "onto out[0]" in ex.check_tolerance(no_atomics).message
    assert "block's tree" in ex.check_tolerance(no_tree).message
    assert "one chain over all n" in ex.check_tolerance(one_chain).message
    assert "sum|x|" in ex.check_tolerance(abs_of_sum).message


def test_a_wrong_prediction_gets_a_true_hint():
    for answer in (datasheet_bandwidth, copy_ceiling, gib_for_gb, grid_sweep_best):
        assert "which bandwidth" in ex.check_predicted_time(answer).message
    assert "fixed cost of" in ex.check_predicted_time(no_launch_cost).message
    assert "too short" in ex.check_predicted_time(no_launch_cost).message
    assert "KeyError" in ex.check_predicted_time(measured_median).message
