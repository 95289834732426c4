"""Lesson 5's exercises: the notebook's skeletons fail their checks, the solutions pass, and plausible
wrong answers (at least two per check) fail."""

import math
import types

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


@cuda.jit(device=True)
def through_shared_memory(value):
    sums = cuda.shared.array(128, float32)  # right sums, but no shuffle: not the exercise
    t = cuda.threadIdx.x
    sums[t] = value
    cuda.syncthreads()
    first = t - t % 16
    total = float32(0)
    for j in range(16):
        total += sums[first + j]
    cuda.syncthreads()
    return total


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


block_level = k.block_reduce_sum  # the course's block level under another name


@cuda.jit
def aliased_block_helper(x, out):
    warp_sums = cuda.shared.array(32, float32)
    tid = cuda.threadIdx.x
    cuda.syncthreads()  # a barrier, so that the name is there
    i = cuda.blockIdx.x * cuda.blockDim.x * 2 + tid
    stride = cuda.blockDim.x * 2 * cuda.gridDim.x
    value = float32(0)
    while i < x.size:
        value += x[i]
        if i + cuda.blockDim.x < x.size:
            value += x[i + cuda.blockDim.x]
        i += stride
    value = block_level(value, warp_sums)  # the lesson's block level, not written
    if tid == 0:
        cuda.atomic.add(out, 0, value)


@cuda.jit(device=True)
def my_block_sum(value, warp_sums):
    return k.block_reduce_sum(value, warp_sums)  # a wrapper around the lesson's block level


@cuda.jit
def wrapped_block_helper(x, out):
    warp_sums = cuda.shared.array(32, float32)
    i = cuda.grid(1)
    value = x[i] if i < x.size else float32(0)
    value = my_block_sum(value, warp_sums)
    if cuda.threadIdx.x == 0:
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


@cuda.jit
def thread_zero_loops(x, out):
    tid = cuda.threadIdx.x
    cuda.syncthreads()
    if tid == 0:  # one thread adds its block's elements one by one: no shuffles, no tree
        value = float32(0)
        i = cuda.blockIdx.x * cuda.blockDim.x * 2
        while i < x.size:
            j = i
            while j < i + 2 * cuda.blockDim.x and j < x.size:
                value += x[j]
                j += 1
            i += cuda.blockDim.x * 2 * cuda.gridDim.x
        cuda.atomic.add(out, 0, value)


@cuda.jit
def first_thread_adds_warp_sums(x, out):
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
    if tid == 0:  # the block level as a serial loop of thread 0
        total = float32(0)
        for w in range((cuda.blockDim.x + 31) // 32):
            total += warp_sums[w]
        cuda.atomic.add(out, 0, total)


@cuda.jit
def barrier_before_writes(x, out):
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
    cuda.syncthreads()  # before the writes: the first warp may read an entry before it is written
    if tid % 32 == 0:
        warp_sums[tid // 32] = value
    value = warp_sums[tid] if tid < (cuda.blockDim.x + 31) // 32 else float32(0)
    if tid < 32:
        value = k.warp_reduce_sum(value)
        if tid == 0:
            cuda.atomic.add(out, 0, value)


@cuda.jit
def barrier_only_at_the_start(x, out):
    warp_sums = cuda.shared.array(32, float32)
    tid = cuda.threadIdx.x
    cuda.syncthreads()  # a barrier, but none between the levels
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
    value = warp_sums[tid] if tid < (cuda.blockDim.x + 31) // 32 else float32(0)
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


def _filled(x, blocks, threads):
    return min(blocks, -(-len(x) // threads))  # blocks holding an element; an empty one adds 0.0 (exact)


def _atomics(x, blocks, threads):
    return _filled(x, blocks, threads) - 1  # the atomics that can round: the first onto 0 is exact


def every_blocks_atomic(x, blocks, threads):  # an atomic of 0.0 counted as a rounding: a looser bound
    return _bound(x, _per_thread(x, blocks, threads) - 1 + int(math.log2(threads)) + blocks - 1)


def no_atomics(x, blocks, threads):
    return _bound(x, _per_thread(x, blocks, threads) - 1 + int(math.log2(threads)))  # forgets the atomics


def no_tree(x, blocks, threads):
    # forgets the block's tree
    return _bound(x, _per_thread(x, blocks, threads) - 1 + _atomics(x, blocks, threads))


def one_chain(x, blocks, threads):
    return _bound(x, len(x) - 1)  # the lesson's chain over all n elements


def one_tree(x, blocks, threads):
    return _bound(x, math.ceil(math.log2(max(len(x), 2))))  # the lesson's tree over all n elements


def atomics_as_tree(x, blocks, threads):
    depth = _per_thread(x, blocks, threads) - 1 + int(math.log2(threads))
    # the atomics taken for a tree over the blocks
    return _bound(x, depth + math.ceil(math.log2(_filled(x, blocks, threads))))


def floor_not_ceil(x, blocks, threads):
    per_thread = max(1, len(x) // (blocks * threads))  # the longest chain rounds up, not down
    return _bound(x, per_thread - 1 + int(math.log2(threads)) + _atomics(x, blocks, threads))


def abs_of_sum(x, blocks, threads):
    depth = _per_thread(x, blocks, threads) - 1 + int(math.log2(threads)) + _atomics(x, blocks, threads)
    du = depth * 2.0**-24
    return math.inf if du >= 1 else du / (1 - du) * abs(float(x.sum()))  # |sum x|, not sum |x|


def without_denominator(x, blocks, threads):
    depth = _per_thread(x, blocks, threads) - 1 + int(math.log2(threads)) + _atomics(x, blocks, threads)
    du = depth * 2.0**-24
    return math.inf if du >= 1 else du * float(abs(x).astype("float64").sum())  # d u, not d u / (1 - d u)


def float32_abs_sum(x, blocks, threads):
    depth = _per_thread(x, blocks, threads) - 1 + int(math.log2(threads)) + _atomics(x, blocks, threads)
    du = depth * 2.0**-24
    return math.inf if du >= 1 else du / (1 - du) * float(abs(x).sum())  # sum|x| in float32: still right


def _depth(x, blocks, threads):
    return _per_thread(x, blocks, threads) - 1 + int(math.log2(threads)) + _atomics(x, blocks, threads)


def depth_minus_one(x, blocks, threads):
    return _bound(x, _depth(x, blocks, threads) - 1)  # one rounding short (a tree level, say)


def depth_plus_one(x, blocks, threads):
    # chain's 0 + x
    return _bound(x, _per_thread(x, blocks, threads) + int(math.log2(threads)) + _atomics(x, blocks, threads))


def depth_plus_two(x, blocks, threads):  # both adds onto 0 counted
    depth = _per_thread(x, blocks, threads) + int(math.log2(threads)) + _atomics(x, blocks, threads) + 1
    return _bound(x, depth)


def calls_kernel_depth(x, blocks, threads):
    return _bound(x, ex.kernel_depth(len(x), blocks, threads))  # the check's own depth, not worked out


def calls_filled_blocks(x, blocks, threads):  # the check's public helper for the atomics, not worked out
    depth = _per_thread(x, blocks, threads) - 1 + int(math.log2(threads))
    return _bound(x, depth + ex.filled_blocks(len(x), blocks, threads) - 1)


def calls_solution_tolerance(x, blocks, threads):
    from gpu_lessons.exercises import reduce as exercises  # an import inside the function

    return exercises.solution_tolerance(x, blocks, threads)


aliased_solution_tolerance = ex.solution_tolerance  # `tolerance = exercises.solution_tolerance`


# ---------------------------------------------------------------- exercise 4: predict a time


def _fit(fits):
    return fits.loc["vec4_last_block"]


def datasheet_bandwidth(n, fits):
    return float(_fit(fits)["t0_us"]) + 4 * n / 4.8e6  # the H200's 4.8 TB/s datasheet figure


def copy_ceiling(n, fits):
    return float(_fit(fits)["t0_us"]) + 4 * n / (ex.lessons.roof()["bandwidth_gbps"] * 1e3)  # lesson 1's copy


def gib_for_gb(n, fits):
    fit = _fit(fits)
    return float(fit["t0_us"]) + 4 * n / (float(fit["bw_gbps"]) * 2**30 / 1e6)  # GiB/s read as GB/s


def no_launch_cost(n, fits):
    return 4 * n / (float(_fit(fits)["bw_gbps"]) * 1e3)  # bytes over bandwidth only


def cupy_fit(n, fits):
    fit = fits.loc["cupy.sum"]
    return float(fit["t0_us"]) + 4 * n / (float(fit["bw_gbps"]) * 1e3)  # another variant's fit


def measured_median(n, fits):
    rows = ex.lesson.sweep_rows(ex.lessons.load("reduce", live=False))
    rows = rows[rows["variant"] == "vec4_last_block"].set_index("size")
    return 1e3 * float(rows.loc[n, "median_ms"])  # a lookup of the recording, not a model


def grid_sweep_best(n, fits):
    return float(_fit(fits)["t0_us"]) + 4 * n / 4485e3  # vec4's best in section 7's grid sweep, 4,485 GB/s


def typed_constants(n, fits):
    return 6.13 + 4 * n / 4525e3  # section 8's printed t0 and BW typed in


def lesson_model_times(n, fits):
    table = fits.loc[["vec4_last_block"]].reset_index()
    return float(ex.lesson.model_times(table, [n])["value"].iloc[0])  # the lesson's own line, not written


def lesson_model_curves(n, fits):  # model_times' twin: the same line as GB/s, turned back into a time
    curve = ex.lesson.model_curves(fits.loc[["vec4_last_block"]].reset_index(), [n])
    return float(curve["x"].iloc[0] / curve["value"].iloc[0] / 1e3)


def calls_solution_predicted_time(n, fits):
    return ex.solution_predicted_time(n, fits)  # the reference solution, called


@cuda.jit(device=True)
def calls_solution_half_sums(value):
    return ex.solution_half_sums(value)  # the reference solution, called


calls_solution_reduce_sum = ex.solution_reduce_sum  # `reduce_sum = exercises.solution_reduce_sum`


def _same_code(solution):
    """The reference solution's code as a learner would write it: a new function (kernel) of the same code,
    not the course's object (which the checks refuse, as they refuse any call of a solution_*)."""
    function = getattr(solution, "py_func", solution)
    copy = types.FunctionType(function.__code__, function.__globals__, function.__name__,
                              function.__defaults__, function.__closure__)
    if function is solution:
        return copy
    return cuda.jit(device=True)(copy) if solution is ex.solution_half_sums else cuda.jit(copy)


# ------------------------------------------------- the reviewer's wrong answers (fixR5b)


@cuda.jit(device=True)
def shared_sum_with_idle_shuffles(value):
    sums = cuda.shared.array(128, float32)  # the sum through shared memory ...
    t = cuda.threadIdx.x
    sums[t] = value
    cuda.syncwarp()
    first = t - t % 16
    total = float32(0)
    for j in range(16):
        total += sums[first + j]
    for _ in range(4):  # ... and four shuffles whose values are thrown away
        cuda.shfl_xor_sync(0xFFFFFFFF, value, 1)
    return total


_SCRATCH = __import__("numpy").zeros(128, "float32")  # a global array, not shared memory


@cuda.jit(device=True)
def global_sum_with_idle_shuffles(value):
    t = cuda.threadIdx.x
    _SCRATCH[t] = value  # the sum through an array outside the kernel (one block: no other block clashes)
    cuda.syncthreads()
    first = t - t % 16
    total = float32(0)
    for j in range(16):
        total += _SCRATCH[first + j]
    for _ in range(4):
        cuda.shfl_xor_sync(0xFFFFFFFF, value, 1)
    return total


@cuda.jit(device=True)
def half_mask(value):
    offset = 8
    while offset > 0:
        value += cuda.shfl_xor_sync(0x0000FFFF, value, offset)  # lanes 16-31 call outside their mask
        offset //= 2
    return value


@cuda.jit
def sizes_written_in(x, out):
    warp_sums = cuda.shared.array(32, float32)
    tid = cuda.threadIdx.x
    i = cuda.blockIdx.x * 256 + tid  # 128 threads and 2 blocks written in: right only for the named launch
    value = float32(0)
    while i < x.size:
        value += x[i]
        if i + 128 < x.size:
            value += x[i + 128]
        i += 512
    value = k.warp_reduce_sum(value)
    if tid % 32 == 0:
        warp_sums[tid // 32] = value
    cuda.syncthreads()
    value = warp_sums[tid] if tid < 4 else float32(0)
    if tid < 32:
        value = k.warp_reduce_sum(value)
        if tid == 0:
            cuda.atomic.add(out, 0, value)


@cuda.jit
def zeroed_without_barrier(x, out):
    warp_sums = cuda.shared.array(32, float32)
    tid = cuda.threadIdx.x
    if tid < 32:
        warp_sums[tid] = float32(0)  # warp 0 zeroes every entry; no barrier before the other warps write
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
        value = k.warp_reduce_sum(warp_sums[tid])
        if tid == 0:
            cuda.atomic.add(out, 0, value)


@cuda.jit
def zeroed_with_barrier(x, out):
    warp_sums = cuda.shared.array(32, float32)
    tid = cuda.threadIdx.x
    if tid < 32:
        warp_sums[tid] = float32(0)
    cuda.syncthreads()  # the zeros are written before any warp stores its sum: right
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
        value = k.warp_reduce_sum(warp_sums[tid])
        if tid == 0:
            cuda.atomic.add(out, 0, value)


NOTEBOOK = "05_reduce.ipynb"
SOLUTIONS = [
    (ex.check_half_sums, _same_code(ex.solution_half_sums)),
    (ex.check_reduce_sum, _same_code(ex.solution_reduce_sum)),
    (ex.check_tolerance, _same_code(ex.solution_tolerance)),
    (ex.check_predicted_time, _same_code(ex.solution_predicted_time)),
]

@cuda.jit
def serial_thread0(x, out):  # the first warp shuffles a dummy 0; thread 0 adds the warp sums in a loop
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
        total = k.warp_reduce_sum(float32(0))  # shuffles made, nothing carried
        if tid == 0:
            for j in range((cuda.blockDim.x + 31) // 32):
                total += warp_sums[j]
            cuda.atomic.add(out, 0, total)


@cuda.jit
def one_load_loop(x, out):  # one element a step, stride blockDim.x * gridDim.x: the text allows it
    warp_sums = cuda.shared.array(32, float32)
    tid = cuda.threadIdx.x
    i = cuda.blockIdx.x * cuda.blockDim.x + tid
    stride = cuda.blockDim.x * cuda.gridDim.x
    value = float32(0)
    while i < x.size:
        value += x[i]
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


WRONG_ANSWERS = [
    (ex.check_half_sums, whole_warp),
    (ex.check_half_sums, shuffle_down_halves),
    (ex.check_half_sums, assigned_not_added),
    (ex.check_half_sums, through_shared_memory),
    (ex.check_half_sums, calls_solution_half_sums),
    (ex.check_half_sums, shared_sum_with_idle_shuffles),
    (ex.check_half_sums, global_sum_with_idle_shuffles),
    (ex.check_half_sums, half_mask),
    (ex.check_reduce_sum, early_exit),
    (ex.check_reduce_sum, no_grid_stride),
    (ex.check_reduce_sum, every_lane_adds),
    (ex.check_reduce_sum, calls_block_helper),
    (ex.check_reduce_sum, aliased_block_helper),
    (ex.check_reduce_sum, wrapped_block_helper),
    (ex.check_reduce_sum, atomic_per_warp),
    (ex.check_reduce_sum, no_barrier),
    (ex.check_reduce_sum, stride_without_2),
    (ex.check_reduce_sum, unguarded_read),
    (ex.check_reduce_sum, barrier_in_branch),
    (ex.check_reduce_sum, skips_last_warp),
    (ex.check_reduce_sum, thread_zero_loops),
    (ex.check_reduce_sum, first_thread_adds_warp_sums),
    (ex.check_reduce_sum, serial_thread0),
    (ex.check_reduce_sum, barrier_before_writes),
    (ex.check_reduce_sum, barrier_only_at_the_start),
    (ex.check_reduce_sum, calls_solution_reduce_sum),
    (ex.check_reduce_sum, sizes_written_in),
    (ex.check_reduce_sum, zeroed_without_barrier),
    (ex.check_tolerance, no_atomics),
    (ex.check_tolerance, no_tree),
    (ex.check_tolerance, one_chain),
    (ex.check_tolerance, one_tree),
    (ex.check_tolerance, floor_not_ceil),
    (ex.check_tolerance, atomics_as_tree),
    (ex.check_tolerance, abs_of_sum),
    (ex.check_tolerance, without_denominator),
    (ex.check_tolerance, depth_minus_one),
    (ex.check_tolerance, depth_plus_one),
    (ex.check_tolerance, depth_plus_two),
    (ex.check_tolerance, every_blocks_atomic),
    (ex.check_tolerance, calls_kernel_depth),
    (ex.check_tolerance, calls_filled_blocks),
    (ex.check_tolerance, calls_solution_tolerance),
    (ex.check_tolerance, aliased_solution_tolerance),
    (ex.check_predicted_time, datasheet_bandwidth),
    (ex.check_predicted_time, copy_ceiling),
    (ex.check_predicted_time, gib_for_gb),
    (ex.check_predicted_time, no_launch_cost),
    (ex.check_predicted_time, cupy_fit),
    (ex.check_predicted_time, measured_median),
    (ex.check_predicted_time, grid_sweep_best),
    (ex.check_predicted_time, typed_constants),
    (ex.check_predicted_time, lesson_model_times),
    (ex.check_predicted_time, lesson_model_curves),
    (ex.check_predicted_time, calls_solution_predicted_time),
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
    assert "0 warp shuffle(s)" in ex.check_half_sums(through_shared_memory).message


def test_a_wrong_reduce_sum_gets_a_true_hint():
    for answer in (calls_block_helper, aliased_block_helper, wrapped_block_helper):
        assert "block_reduce_sum" in ex.check_reduce_sum(answer).message
    assert "one per warp" in ex.check_reduce_sum(atomic_per_warp).message
    assert "only one lane" in ex.check_reduce_sum(every_lane_adds).message
    assert "barrier" in ex.check_reduce_sum(no_barrier).message
    assert "more than once" in ex.check_reduce_sum(stride_without_2).message
    assert "never added" in ex.check_reduce_sum(no_grid_stride).message
    assert "every warp's sum" in ex.check_reduce_sum(skips_last_warp).message
    assert "inside a branch that only some threads take" in ex.check_reduce_sum(barrier_in_branch).message
    if gpu_lessons.SIMULATED:  # on a GPU unwritten shared memory holds whatever was there
        assert "NaN" in ex.check_reduce_sum(unguarded_read).message
    assert "one after another" in ex.check_reduce_sum(thread_zero_loops).message
    assert "the first warp" in ex.check_reduce_sum(first_thread_adds_warp_sums).message
    for answer in (barrier_before_writes, barrier_only_at_the_start):  # a read before its write
        message = ex.check_reduce_sum(answer).message
        assert "after the writes" in message and "never added" not in message, message


def test_the_tolerance_without_its_denominator_fails_on_every_case_and_shows_its_digits():
    import numpy as np

    rng = np.random.default_rng()
    for n, blocks, threads in ex.ex3_cases(rng):
        x = rng.standard_normal(n).astype(np.float32)
        depth = ex.kernel_depth(n, blocks, threads)
        right = ex.k.gamma(depth) * float(np.abs(x.astype(np.float64)).sum())
        got = without_denominator(x, blocks, threads)
        assert math.isinf(right) or not ex._within(got, right), (n, blocks)
    message = ex.check_tolerance(without_denominator).message
    assert "denominator" in message and "bound is" not in message
    assert ex.check_tolerance(float32_abs_sum).passed


def test_a_wrong_tolerance_gets_a_true_hint():
    assert "atomics" not in ex.check_tolerance(no_tree).message
    assert "onto out[0]" in ex.check_tolerance(no_atomics).message
    assert "block's tree" in ex.check_tolerance(no_tree).message
    assert "one chain over all n" in ex.check_tolerance(one_chain).message
    assert "sum|x|" in ex.check_tolerance(abs_of_sum).message
    message = ex.check_tolerance(atomics_as_tree).message  # the first case: log2 n = its depth too
    assert "one after another" in message and "one tree over all n" not in message, message
    for answer in (lambda x, blocks, threads: math.inf, lambda x, blocks, threads: 0.0):
        message = ex.check_tolerance(answer).message  # d is the exercise's work: never printed
        assert "depth is" not in message and "d u =" not in message, message


def test_a_depth_off_by_one_or_two_fails_on_every_finite_case_and_gets_only_its_own_hint():
    import numpy as np

    rng = np.random.default_rng()
    for n, blocks, threads in ex.ex3_cases(rng):  # d and d + 1 differ by more than the tolerance everywhere
        x = rng.standard_normal(n).astype(np.float32)
        right = ex.solution_tolerance(x, blocks, threads)
        for answer in (depth_minus_one, depth_plus_one, depth_plus_two):
            assert math.isinf(right) or not ex._within(answer(x, blocks, threads), right), (n, blocks, answer)
    short = ex.check_tolerance(depth_minus_one).message  # the first case's chain is not 1 long: no mimicry
    assert "fewer roundings" in short and "own chain" not in short and "leaves out" not in short, short
    for answer in (depth_plus_one, depth_plus_two):
        message = ex.check_tolerance(answer).message
        assert "adding onto 0" in message and "leaves out" not in message, message
    for answer in (depth_minus_one, depth_plus_one, depth_plus_two):  # d is the exercise's work
        message = ex.check_tolerance(answer).message
        assert "depth is" not in message and "d u =" not in message, message


def test_a_hint_fires_only_for_the_slip_it_names_on_every_case():
    """A depth one short equals 'no chain' on a grid where each thread adds two elements (the old check's
    first case): the hint must hold on every case, not on the first that fails."""
    import numpy as np

    x = np.random.default_rng().standard_normal(2**20).astype(np.float32)
    case = (2**20, 2048, 256)  # 2 elements a thread: its chain is 1 add long
    answered = [(x, case, depth_minus_one(x, 2048, 256))]
    hint = ex._tolerance_hint(answered[0][2], x, *case, answered)
    assert "own chain" in hint  # on this one case alone the two cannot be told apart
    message = ex.check_tolerance(depth_minus_one).message
    assert "own chain" not in message, message
    assert "own chain" in ex.check_tolerance(_no_chain).message


def _no_chain(x, blocks, threads):
    # forgets each thread's grid-stride chain
    return _bound(x, int(math.log2(threads)) + _atomics(x, blocks, threads))


def test_the_lessons_own_kernel_answers_no_exercise():
    for kernel in (k.grid_stride, k.tree_first_add, k.warp_shuffle):  # `reduce_sum = kernels.grid_stride`
        message = ex.check_reduce_sum(kernel).message
        assert "lesson's own kernels" in message and "work it out" in message, message


def test_calling_a_solution_or_helper_answers_no_exercise():
    assert "solution_half_sums" in ex.check_half_sums(calls_solution_half_sums).message
    assert "solution_reduce_sum" in ex.check_reduce_sum(calls_solution_reduce_sum).message
    for answer in (calls_solution_tolerance, aliased_solution_tolerance):
        message = ex.check_tolerance(answer).message
        assert "solution_tolerance" in message and "work it out" in message, message
    assert "kernel_depth" in ex.check_tolerance(calls_kernel_depth).message
    message = ex.check_tolerance(calls_filled_blocks).message
    assert "filled_blocks" in message and "work it out" in message, message
    message = ex.check_predicted_time(calls_solution_predicted_time).message
    assert "solution_predicted_time" in message and "work it out" in message, message


def test_a_wrong_prediction_gets_a_true_hint():
    for answer in (datasheet_bandwidth, copy_ceiling, gib_for_gb, grid_sweep_best):
        assert "not the bandwidth fits gives" in ex.check_predicted_time(answer).message
    assert "fixed cost of 0 us" in ex.check_predicted_time(no_launch_cost).message
    assert "KeyError" in ex.check_predicted_time(measured_median).message
    assert "not typed in" in ex.check_predicted_time(typed_constants).message
    assert "model_times" in ex.check_predicted_time(lesson_model_times).message
    assert "model_curves" in ex.check_predicted_time(lesson_model_curves).message
    for answer in (typed_constants, datasheet_bandwidth, cupy_fit):  # no expected time printed
        assert "the measured median is" not in ex.check_predicted_time(answer).message


# ------------------------------------------------- the reviewer's findings (fixR5b)


def test_a_sum_that_does_not_come_through_the_shuffles_is_refused():
    message = ex.check_half_sums(shared_sum_with_idle_shuffles).message
    assert "shared array" in message and "shuffles alone" in message, message
    if gpu_lessons.SIMULATED:  # the closure's array is shared by the simulated threads only
        message = ex.check_half_sums(global_sum_with_idle_shuffles).message
        assert "delivers 0" in message and "does not come through your shuffles" in message, message


def test_a_mask_error_leaves_cuda_usable():
    result = ex.check_half_sums(half_mask)
    assert not result.passed and "mask" in result.message, result
    import numba.cuda

    assert globals()["cuda"] is numba.cuda or not gpu_lessons.SIMULATED
    assert ex.__dict__["cuda"] is numba.cuda and k.__dict__["cuda"] is numba.cuda

    @cuda.jit(device=True)  # the learner's next cell: `cuda` is the real module again
    def again(value):
        return value

    assert ex.check_half_sums(_same_code(ex.solution_half_sums)).passed


def test_sizes_written_in_fail_on_a_second_launch():
    message = ex.check_reduce_sum(sizes_written_in).message
    assert f"wrong with {ex.OTHER_BLOCKS} blocks of {ex.OTHER_BLOCK} threads" in message, message
    assert "written in" in message, message


def test_two_warps_writing_one_entry_without_a_barrier_is_a_race():
    if gpu_lessons.SIMULATED:
        message = ex.check_reduce_sum(zeroed_without_barrier).message
        assert "both write warp_sums[" in message and "different warps" in message, message
    assert ex.check_reduce_sum(zeroed_with_barrier).passed  # the same zeros behind a barrier: right


def test_only_the_filled_blocks_atomics_count():
    assert ex.kernel_depth(50_000, 2**25, 32) == 0 + 5 + 1563 - 1  # 1,563 blocks hold elements
    message = ex.check_tolerance(every_blocks_atomic).message
    assert "adds 0.0 to out[0], which is exact" in message, message
    assert "depth is" not in message and "d u =" not in message, message


def test_the_block_sum_must_come_through_the_first_warps_shuffles():
    message = ex.check_reduce_sum(serial_thread0).message
    assert "does not come through them" in message and "first warp" in message, message


def test_one_load_a_step_is_a_grid_stride_loop_too():
    assert ex.check_reduce_sum(one_load_loop).passed  # the text: two loads a step, or one


# ------------------------------------------------- the reviewer's findings (fixR5d)


@cuda.jit(device=True)
def gather_sixteen(value):  # right in every lane, with 16 shuffles where the butterfly needs 4
    lane = cuda.threadIdx.x % 32
    base = lane & 16
    total = value * 0
    for j in range(16):
        total += cuda.shfl_sync(0xFFFFFFFF, value, base + j)
    return total


@cuda.jit(device=True)
def two_butterflies_averaged(value):  # two 4-round butterflies (8, 4, 2, 1 and 1, 2, 4, 8), averaged
    offset = 8
    v = value
    while offset > 0:
        v += cuda.shfl_xor_sync(0xFFFFFFFF, v, offset)
        offset //= 2
    w = value
    offset = 1
    while offset < 16:
        w += cuda.shfl_xor_sync(0xFFFFFFFF, w, offset)
        offset *= 2
    return (v + w) * float32(0.5)


@cuda.jit
def block0_does_all(x, out):  # block 0 loops over the whole array, the others add 0
    warp_sums = cuda.shared.array(32, float32)
    tid = cuda.threadIdx.x
    i = tid
    value = float32(0)
    if cuda.blockIdx.x == 0:
        while i < x.size:
            value += x[i]
            i += cuda.blockDim.x
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
def every_block_reads_all(x, out):  # every block reads all of x; only block 0's atomic carries it
    warp_sums = cuda.shared.array(32, float32)
    tid = cuda.threadIdx.x
    i = tid
    value = float32(0)
    while i < x.size:
        value += x[i]
        i += cuda.blockDim.x
    value = k.warp_reduce_sum(value)
    if tid % 32 == 0:
        warp_sums[tid // 32] = value
    cuda.syncthreads()
    value = warp_sums[tid] if tid < (cuda.blockDim.x + 31) // 32 else float32(0)
    if tid < 32:
        value = k.warp_reduce_sum(value)
        if tid == 0:
            cuda.atomic.add(out, 0, value if cuda.blockIdx.x == 0 else float32(0))


@cuda.jit
def stride_one_block(x, out):  # starts at cuda.grid(1), steps by blockDim.x only: the blocks overlap
    warp_sums = cuda.shared.array(32, float32)
    tid = cuda.threadIdx.x
    i = cuda.grid(1)
    value = float32(0)
    while i < x.size:
        value += x[i]
        i += cuda.blockDim.x
    value = k.warp_reduce_sum(value)
    if tid % 32 == 0:
        warp_sums[tid // 32] = value
    cuda.syncthreads()
    value = warp_sums[tid] if tid < (cuda.blockDim.x + 31) // 32 else float32(0)
    if tid < 32:
        value = k.warp_reduce_sum(value)
        if tid == 0:
            cuda.atomic.add(out, 0, value)


def first_row(n, fits):  # the row by position: in the lesson's own table the first row is vec4
    fit = fits.iloc[0]
    return fit["t0_us"] + 4 * n / (fit["bw_gbps"] * 1e3)


def second_row(n, fits):  # the row by position: in the lesson's table vec4_last_block is row 1
    fit = fits.iloc[1]
    return fit["t0_us"] + 4 * n / (fit["bw_gbps"] * 1e3)


WRONG_ANSWERS_R5D = [
    (ex.check_half_sums, gather_sixteen),
    (ex.check_half_sums, two_butterflies_averaged),
    (ex.check_reduce_sum, block0_does_all),
    (ex.check_reduce_sum, every_block_reads_all),
    (ex.check_reduce_sum, stride_one_block),
    (ex.check_predicted_time, first_row),
    (ex.check_predicted_time, second_row),
]


def test_redundant_shuffles_are_refused():
    for answer in (gather_sixteen, two_butterflies_averaged):
        result = ex.check_half_sums(answer)
        assert not result.passed, result
        assert "redundant work" in result.message and "warp shuffles" in result.message, result
        assert "8, 4" not in result.message and "^ 8" not in result.message, result  # no offsets given


def test_each_element_is_read_once_by_blocks_that_share_the_work():
    message = ex.check_reduce_sum(block0_does_all).message
    assert "block 1 read no element of x" in message and "spread over the blocks" in message, message
    for answer in (every_block_reads_all, stride_one_block):
        result = ex.check_reduce_sum(answer)
        assert not result.passed, result
        assert "more than once" in result.message and "blocks 0, 1" in result.message, result


def test_the_sum_hint_is_true_for_the_one_element_a_step_form():
    import numpy as np

    hint = ex._sum_hint(stride_one_block, 700, np.float32(0))
    assert "more than once" in hint and "2 x blockDim.x" not in hint, hint
    assert ex.check_reduce_sum(one_load_loop).passed


def test_a_row_picked_by_position_fails():
    for answer in (first_row, second_row):
        result = ex.check_predicted_time(answer)
        assert not result.passed, result
        assert "by its name" in result.message and "not by position" in result.message, result


def test_the_fourth_reviewers_wrong_answers_fail():
    for check, answer in WRONG_ANSWERS_R5D:
        assert not check(answer).passed, answer


# ------------------------------------------------- the reviewer's findings (fixR5e)


@cuda.jit
def every_warp_redundant(x, out):  # every warp reloads warp_sums and redoes the block level; thread 0 adds
    warp_sums = cuda.shared.array(32, float32)
    tid = cuda.threadIdx.x
    i = cuda.grid(1)
    value = float32(0)
    while i < x.size:
        value += x[i]
        i += cuda.blockDim.x * cuda.gridDim.x
    value = k.warp_reduce_sum(value)
    if tid % 32 == 0:
        warp_sums[tid // 32] = value
    cuda.syncthreads()
    lane = tid % 32
    value = warp_sums[lane] if lane < (cuda.blockDim.x + 31) // 32 else float32(0)
    value = k.warp_reduce_sum(value)
    if tid == 0:
        cuda.atomic.add(out, 0, value)


@cuda.jit(device=True)
def down_then_broadcast(value):  # right: a shfl_down tree (8, 4, 2, 1), then lane 0 of each half broadcasts
    offset = 8
    while offset > 0:
        value += cuda.shfl_down_sync(0xFFFFFFFF, value, offset)
        offset //= 2
    return cuda.shfl_sync(0xFFFFFFFF, value, (cuda.threadIdx.x % 32) & 16)


@cuda.jit
def warp_sums_by_shared_atomic(x, out):  # warps add into warp_sums[0] atomically; one atomic on out a block
    warp_sums = cuda.shared.array(32, float32)
    tid = cuda.threadIdx.x
    if tid == 0:
        warp_sums[0] = 0
    cuda.syncthreads()
    i = cuda.grid(1)
    value = float32(0)
    while i < x.size:
        value += x[i]
        i += cuda.blockDim.x * cuda.gridDim.x
    value = k.warp_reduce_sum(value)
    if tid % 32 == 0:
        cuda.atomic.add(warp_sums, 0, value)
    cuda.syncthreads()
    if tid < 32:
        value = warp_sums[0] if tid == 0 else float32(0)
        value = k.warp_reduce_sum(value)
        if tid == 0:
            cuda.atomic.add(out, 0, value)


def test_every_warp_redoing_the_block_level_is_redundant_work():
    result = ex.check_reduce_sum(every_warp_redundant)
    assert not result.passed, result
    assert "redundant work" in result.message and "Only the first warp" in result.message, result


def test_one_broadcast_after_a_shuffle_down_tree_passes():
    assert ex.check_half_sums(down_then_broadcast).passed
    assert "redundant work" in ex.check_half_sums(two_butterflies_averaged).message  # 8 still fails


def test_shared_atomics_are_named_not_counted_as_atomics_on_out():
    result = ex.check_reduce_sum(warp_sums_by_shared_atomic)
    assert not result.passed, result
    assert "atomic adds on a shared array" in result.message, result
    assert "only one lane of each block" not in result.message, result
    assert "one per warp" in ex.check_reduce_sum(atomic_per_warp).message  # atomics on out still counted
