"""Exercises of lesson 3 (coalescing): their checks and reference solutions.

1. Predict the sectors per request of the gather's load (its index an expression of the thread
   index, its groups of lanes straddling sector boundaries, so that counting 128-byte lines or one
   sector per group gives a wrong number); the check verifies the kernel still computes the gather,
   traces the lesson's gather and compares the prediction with what the tracer counts (a prediction
   that calls the tracer, or ``traced_load_sectors``, is refused).
2. Convert a kernel and its data from an array of structures to a structure of arrays: the
   learner's ``to_soa`` lays the records out field by field, unchanged, their kernel reads that
   layout; the check runs both against NumPy and traces the kernel on all 1,000 particles: every
   request carries its warp's lanes (one particle a thread, so a loop in one thread fails), touches
   no more sectors than its floats fill, and the kernel reads vx and vy, each by its own thread only
   (a re-read by that thread is allowed), and no other field (so a speed computed on the host, or x
   and y read too, fail).
3. A float4 wrapper done right: the kernel's scalar tail, and the host function's refusal of an
   input that does not start on a 16-byte boundary (x[1:], x[2:], x[3:] refused, x[4:] accepted). The
   learner's own launch is traced (at lengths with and without a tail): the kernel itself must write
   every output, given x and a as they are, so a tail (or the whole scale, or x scaled first) computed
   by NumPy on the host fails.
4. Predict a number from the lesson's DRAM-bytes model: the four-loads-in-flight strided copy's
   bandwidth at strides 2, 12 and 24, checked against the H200's recording (within 6%), then at strides
   the recording does not hold (5, 10, 14, 20: two of them between 8 and 16, where the span rule
   matters) with a made-up ceiling (values read off the figure, or a granule rule wrong from 9 to 15, fail).

Every check refuses a function that calls a reference solution (``solution_*``); 1 and 4 also the
course's counters (the tracer, ``memory_model.global_sectors``, the lesson's DRAM-bytes model), however
imported. Exercise 3 also counts the kernel's stores: each output is written by exactly one thread, and
each leftover element by a thread of its own.
"""

from __future__ import annotations

import inspect
import sys

import numpy as np
from numba import cuda

from .. import lessons
from ..lessons import coalescing as lesson
from ..sim import memory_model, trace
from ..vector import load4, store4
from . import guarded, report
from .refuse import refused

WARPS = 2  # traced launches: one block of two full warps


def _trace(kernel, *args, threads: int = 32 * WARPS):
    return trace.trace(kernel, max(1, -(-threads // 128)), min(threads, 128), *args)


# ----------------------------------------------------------------------------- exercise 1


@cuda.jit
def gather(x, out):
    """The kernel of exercise 1 (the notebook has a copy to edit)."""
    i = cuda.grid(1)
    if i < out.size:
        out[i] = x[(i % 8) * 10 + i // 8]


def traced_load_sectors(kernel, n_out: int = 32 * WARPS, n_in: int = 4096) -> float:
    """Sectors per request of the loads of ``x`` in ``kernel(x, out)`` over two full warps."""
    x = np.random.default_rng().standard_normal(n_in, dtype=np.float32)
    out = np.zeros(n_out, np.float32)
    counts = _trace(kernel, x, out, threads=n_out)
    loads = counts.by_array
    loads = loads[(loads["array"] == "x") & (loads["op"] == "ld")]
    if loads.empty:
        raise ValueError("the kernel never loads x")
    return float(loads["sectors"].sum() / loads["instructions"].sum())


def computes_gather(kernel, n_out: int = 1000) -> bool:
    """Whether ``kernel(x, out)`` computes out[i] = x[(i % 8) * 10 + i // 8], as the lesson's gather."""
    i = np.arange(n_out)
    x = np.random.default_rng().standard_normal(n_out + 256, dtype=np.float32)
    out = np.full(n_out, np.nan, np.float32)
    kernel[-(-n_out // 128), 128](x, out)
    return bool(np.array_equal(out, x[(i % 8) * 10 + i // 8]))


def _this_module():
    return sys.modules[__name__]


_TRACER = ((trace.trace, "the tracer"), (trace.simulate, "the tracer's simulate"))
_SECTOR_COUNTERS = ((traced_load_sectors, "exercises.traced_load_sectors"), *_TRACER,
                    (memory_model.global_sectors, "the course's memory_model.global_sectors"))


def check_sector_prediction(kernel, prediction) -> object:
    """``prediction()`` returns the sectors per request of the gather's load of x (float32, x
    starting on a 128-byte line, full warps). ``kernel`` must still compute the gather (checked
    against NumPy); the count is the tracer's, on the lesson's own ``gather``."""
    name = "exercise 1 (predict the sectors)"

    def attempt():
        refusal = refused(name, (prediction,), _this_module(), _SECTOR_COUNTERS,
                          "the exercise is to predict the count yourself, from the addresses")
        if refusal:
            return refusal
        value = prediction()
        if value is None:
            return report(name, False, "return a number: the sectors one warp's load of x touches")
        if not computes_gather(kernel):
            return report(name, False, "the kernel no longer computes the gather out[i] = x[(i % 8) * 10 + "
                          "i // 8]; leave it as given and predict the sectors of its load")
        counted = traced_load_sectors(gather)
        if not np.isclose(float(value), counted):
            return report(name, False, f"you predicted {float(value):g} sectors per request; draw the 32 "
                          "addresses (lane, element, byte) and count the distinct 32-byte sectors they fall "
                          "in: a group of lanes can straddle a sector boundary, and a 128-byte line holds "
                          "four sectors")
        return report(name, True, f"{counted:g} sectors per request, as the tracer counts: "
                      f"{128 / (32 * counted):.0%} of the bytes moved are used")

    return guarded(name, attempt)


def solution_sector_prediction() -> int:
    # lane i reads element 10 (i % 8) + i // 8: 8 groups of 4 consecutive floats (16 bytes), group g at
    # bytes 40 g to 40 g + 15. Groups 3 (bytes 120-135) and 7 (280-295) straddle a sector boundary:
    # sectors 0, 1, 2, 3 and 4, 5, 6, 7, 8 and 9 -> 10 sectors, in 3 lines (bytes 0-319)
    return 10


# ----------------------------------------------------------------------------- exercise 2


SPEED_N = 1000  # not a multiple of the block
SECOND_N = 1333  # a second size, so that a size written into the code fails
SPEED_FIELDS = 4  # x, y, vx, vy


@cuda.jit
def speed_aos(records, out):
    """The kernel to convert in exercise 2: |v| of particles stored as records (x, y, vx, vy)."""
    i = cuda.grid(1)
    if i < out.size:
        vx, vy = records[i, 2], records[i, 3]
        out[i] = (vx * vx + vy * vy) ** 0.5


def check_soa_conversion(to_soa, kernel) -> object:
    """``to_soa(records)``: (n, 4) records (x, y, vx, vy) -> a (4, n) float32 structure of arrays;
    ``kernel(soa, out)``: out[i] = sqrt(vx[i]^2 + vy[i]^2) read from it. Checked against NumPy on
    1,000 and 1,333 particles, and traced on the 1,000: one particle a thread, full-warp requests of the
    fewest sectors, vx and vy read (each by one thread: a thread may read its own value twice) and nothing
    else."""
    name = "exercise 2 (AoS to SoA)"

    def attempt():
        refusal = refused(name, (to_soa, kernel), _this_module(),
                          why="the exercise is to write the conversion and the kernel yourself")
        if refusal:
            return refusal
        rng = np.random.default_rng()
        records = rng.standard_normal((SPEED_N, SPEED_FIELDS), dtype=np.float32)
        soa = to_soa(records.copy())
        if not isinstance(soa, np.ndarray) or soa.shape != (SPEED_FIELDS, SPEED_N) or soa.dtype != np.float32:
            got = f"{type(soa).__name__} {getattr(soa, 'shape', '')} {getattr(soa, 'dtype', '')}".strip()
            return report(name, False, f"to_soa returned {got}; return a float32 array of shape (4, n): "
                          "row f holds field f of every particle")
        if not np.array_equal(soa, records.T):
            return report(name, False, "to_soa changes the data: row f of soa must hold field f of the "
                          "records (x, y, vx, vy), as they are; the kernel computes the speed")
        out = np.full(SPEED_N, np.nan, np.float32)
        kernel[-(-SPEED_N // 256), 256](soa, out)
        expected = np.sqrt(records[:, 2] ** 2 + records[:, 3] ** 2)
        if np.isnan(out).any():
            return report(name, False, f"{int(np.isnan(out).sum())} of {SPEED_N} outputs never written")
        if not np.allclose(out, expected, rtol=1e-5, atol=1e-6):
            worst = int(np.argmax(np.abs(out - expected)))
            wrong = int((~np.isclose(out, expected, rtol=1e-5, atol=1e-6)).sum())
            return report(name, False, f"{wrong} of {SPEED_N} speeds wrong (the worst at particle {worst}): "
                          "row f of soa must hold field f of the records (x, y, vx, vy), and the speed uses "
                          "vx and vy")
        counts = _trace(kernel, to_soa(records.copy()), np.zeros(SPEED_N, np.float32), threads=SPEED_N)
        soa_name = next(iter(inspect.signature(kernel.py_func).parameters))
        failure = _soa_trace_failure(counts, soa_name)
        if failure:
            return report(name, False, failure)
        other = rng.standard_normal((SECOND_N, SPEED_FIELDS), dtype=np.float32)
        soa2 = to_soa(other.copy())
        out2 = np.full(SECOND_N, np.nan, np.float32)
        if isinstance(soa2, np.ndarray) and soa2.shape == (SPEED_FIELDS, SECOND_N):
            kernel[-(-SECOND_N // 256), 256](soa2, out2)
        if not np.allclose(out2, np.sqrt(other[:, 2] ** 2 + other[:, 3] ** 2), rtol=1e-5, atol=1e-6):
            return report(name, False, f"right on {SPEED_N} particles but not on {SECOND_N}: are sizes "
                          "written in? Take n from the arrays (records.shape, out.size)")
        return report(name, True, f"right on {SPEED_N} particles, one particle a thread, and the loads move "
                      "only the sectors vx and vy fill")

    return guarded(name, attempt)


def _requests(accesses):
    """One row per request (a warp's execution of one access site): its lanes and its distinct sectors."""
    return accesses.assign(sector=accesses["address"] // 32).groupby(["site", "warp", "k"]).agg(
        lanes=("lane", "nunique"), sectors=("sector", "nunique")).reset_index()


def _soa_trace_failure(counts, soa_name: str) -> str | None:
    """Exercise 2's trace on all SPEED_N particles: None, or what is wrong. Every request of soa and out
    must carry all the lanes its warp has particles for and touch no more sectors than that many
    consecutive floats (a row of SPEED_N floats ends on a sector boundary: 4,000 bytes), the kernel must
    read vx and vy and no other row, and each velocity once, by its own thread."""
    sites = counts.sites
    chosen = sites[(sites["array"] == soa_name) | (sites["op"] == "st")]["site"]
    accesses = counts.accesses[counts.accesses["site"].isin(chosen)]
    requests = _requests(accesses)
    full = np.minimum(32, SPEED_N - 32 * requests["warp"].to_numpy())
    short = np.flatnonzero(requests["lanes"].to_numpy() < full)
    if len(short):
        worst = requests.iloc[short[0]]
        lanes, of_its = int(worst["lanes"]), int(full[short[0]])
        return (f"a request of warp {int(worst['warp'])} carries {lanes} of its {of_its} lanes: the work is "
                "not spread over the threads. Each thread computes the speed of its own "
                "particle, so that one warp's load carries 32 particles")
    fewest = -(-4 * requests["lanes"].to_numpy() // 32)
    extra = np.flatnonzero(requests["sectors"].to_numpy() > fewest)
    if len(extra):
        worst = requests.iloc[extra[np.argmax(requests["sectors"].to_numpy()[extra])]]
        site = sites.set_index("site").loc[int(worst["site"])]
        return (f"{site['op']} {site['array']} at {site['location']} needs {int(worst['sectors'])} sectors "
                "per request; the ideal is 4. Lane i must read element i of a row that is contiguous in "
                "memory (a transposed view keeps the records' layout: its bytes are still x, y, vx, vy, x, "
                "...)")
    rows = _elements(counts, soa_name, "ld") // SPEED_N
    if not {2, 3} <= set(rows.tolist()):
        return ("the kernel does not read both vx and vy from soa (rows 2 and 3): it must compute each speed "
                "from the velocities itself")
    if set(rows.tolist()) - {2, 3}:
        return ("the kernel also reads row 0 or 1 of soa (x or y), which the speed does not use: those bytes "
                "are moved for nothing; read only vx and vy")
    loads = accesses[accesses["store"] == 0]
    # distinct (element, thread) pairs: a thread that reads its own value again adds no DRAM traffic
    pairs = np.unique(np.stack([loads["address"].to_numpy() // 4,
                                loads["warp"].to_numpy() * 32 + loads["lane"].to_numpy()]), axis=1)
    element, thread = pairs
    once = len(np.unique(element)) == len(element)
    own = len(np.unique(element // SPEED_N * (1 << 30) + thread)) == len(element)
    if not (once and own):
        return ("some velocity is read by more than one thread, or one thread reads several particles' "
                "velocities: each particle's vx and vy must be read by its own thread")
    return None


def solution_to_soa(records):
    return np.ascontiguousarray(records.T)  # a copy, field after field


@cuda.jit
def solution_speed_soa(soa, out):
    i = cuda.grid(1)
    if i < out.size:
        vx, vy = soa[2, i], soa[3, i]
        out[i] = (vx * vx + vy * vy) ** 0.5


# ----------------------------------------------------------------------------- exercise 3

SCALE = np.float32(3.0)


def vec4_threads(n: int) -> int:
    """Threads launched for n elements: one per group of 4, one per leftover element."""
    return n // 4 + n % 4


def aligned_floats(n: int, rng=None) -> np.ndarray:
    """n random float32 starting on a 16-byte boundary (a view into a slightly larger buffer)."""
    rng = rng or np.random.default_rng()
    buffer = rng.standard_normal(n + 4, dtype=np.float32)
    skip = (-buffer.ctypes.data % 16) // 4
    return buffer[skip:skip + n]


TRACED_LENGTHS = (1, 6, 263)  # 263 = 65 groups of 4 + a tail of 3; none of them printed by the lesson


def _host_copy(value):
    """A NumPy copy of an array argument (host or device), any other argument as it is."""
    if hasattr(value, "copy_to_host"):
        return value.copy_to_host()
    return np.array(value) if isinstance(value, np.ndarray) else value


class _TracedLaunches:
    """While active, every launch of one kernel (however the host function names it) runs under the
    tracer; ``runs`` keeps (trace, the arguments as they were right after the launch, as they were
    given)."""

    def __init__(self, kernel):
        self.kernel, self.runs, self.configs, self._inside = kernel, [], [], False

    def __enter__(self):
        kind = type(self.kernel)
        original = kind.__getitem__
        this = self

        def getitem(kernel, config):
            if kernel is not this.kernel or this._inside:
                return original(kernel, config)
            return lambda *args: this._launch(config, args)

        self._restore = lambda: setattr(kind, "__getitem__", original)
        kind.__getitem__ = getitem
        return self

    def __exit__(self, *exc):
        self._restore()

    def _launch(self, config, args):
        given = [_host_copy(a) for a in args]
        self._inside = True
        try:
            counts = trace.trace(self.kernel, config[0], config[1], *args)
        finally:
            self._inside = False
        self.runs.append((counts, [_host_copy(a) for a in args], given))
        self.configs.append(config)


def _elements(counts, array: str, op: str = "st") -> np.ndarray:
    """The 4-byte elements of ``array`` the traced launch stored to (``op`` "st") or loaded ("ld"), by
    any instruction."""
    sites = counts.sites[(counts.sites["array"] == array) & (counts.sites["op"] == op)]["site"]
    accesses = counts.accesses[counts.accesses["site"].isin(sites)]
    firsts = [np.arange(a, a + b, 4) for a, b in zip(accesses["address"], accesses["bytes"], strict=True)]
    return np.unique(np.concatenate(firsts)) // 4 if firsts else np.empty(0, int)


def _store_counts(counts, array: str, n: int) -> np.ndarray:
    """How many times the traced launch stored to each of the first n 4-byte elements of ``array``
    (a 16-byte store counts once for each of its four elements)."""
    sites = counts.sites[(counts.sites["array"] == array) & (counts.sites["op"] == "st")]["site"]
    accesses = counts.accesses[counts.accesses["site"].isin(sites)]
    firsts = [np.arange(a, a + b, 4) for a, b in zip(accesses["address"], accesses["bytes"], strict=True)]
    elements = np.concatenate(firsts) // 4 if firsts else np.empty(0, int)
    return np.bincount(elements, minlength=n)[:n]


def _launch_shape(config) -> tuple[int, int]:
    """(blocks, threads a block) of a launch configuration ``(grid, block, ...)``."""
    return int(np.prod(config[0])), int(np.prod(config[1]))


def _tail_writers(counts, array: str, n: int, block_threads: int = 32) -> np.ndarray:
    """The thread (its index in the grid, ``cuda.grid(1)`` for a 1-D launch) that stored each of the last
    n % 4 elements of ``array``; the tracer numbers warps block by block."""
    sites = counts.sites[(counts.sites["array"] == array) & (counts.sites["op"] == "st")]["site"]
    accesses = counts.accesses[counts.accesses["site"].isin(sites)]
    tail = accesses[accesses["address"] >= 4 * (n - n % 4)]
    warps_a_block = -(-block_threads // 32)
    block, warp = np.divmod(tail["warp"].to_numpy(), warps_a_block)
    return block * block_threads + warp * 32 + tail["lane"].to_numpy()


def _traced_lengths(scale_vec4, kernel, rng):
    """Run the learner's scale_vec4 at TRACED_LENGTHS with its launches traced: None, or a failure text."""
    names = list(inspect.signature(kernel.py_func).parameters)
    with _TracedLaunches(kernel) as launches:
        for n in TRACED_LENGTHS:
            launches.runs.clear()
            x = aligned_floats(n, rng)
            try:
                out = scale_vec4(x, SCALE)
            except ValueError as error:
                return (f"n={n}: an x of {n} elements starting on a 16-byte boundary was refused ({error}); "
                        "every length must work (the kernel's tail handles the last n % 4 elements): refuse "
                        "only a start that is not on a 16-byte boundary")
            if not launches.runs:
                return ("scale_vec4 did not launch the kernel you passed to the check: the scaling must run "
                        "on the GPU, in scale_vec4_kernel")
            counts, args, given = launches.runs[-1]
            blocks, block_threads = _launch_shape(launches.configs[-1])
            if blocks * block_threads - vec4_threads(n) >= block_threads:
                return (f"n={n}: scale_vec4 launched {blocks * block_threads} threads, a whole block or more "
                        "of them with nothing to do: launch one thread per group of 4 and one per leftover "
                        "element, rounded up to whole blocks")
            if not any(isinstance(v, np.ndarray) and np.array_equal(v, x) for v in given) or not any(
                    np.ndim(v) == 0 and not isinstance(v, np.ndarray) and float(v) == SCALE for v in given):
                return (f"n={n}: the kernel was not given x and a as they are: the scaling is the kernel's "
                        "work, not the host's (launch it on x itself, with a)")
            stored = [name for name in dict.fromkeys(counts.sites["array"]) if name in names
                      and len(_elements(counts, name))]
            written = len(_elements(counts, stored[0])) if stored else 0
            if written < n and out is not None and np.array_equal(np.asarray(out), SCALE * x):
                return (f"n={n}: the kernel wrote {written} of the {n} outputs; the rest must come from the "
                        "kernel too, not from the host: the threads past the last group of 4 each handle one "
                        "leftover element")
            if written < n:
                return (f"n={n}: the kernel wrote {written} of the {n} outputs: some leftover element has no "
                        "thread. The threads past the last group of 4 each handle one leftover element: "
                        "which thread is the first past the groups, and which element is the first left "
                        "over?")
            stores = _store_counts(counts, stored[0], n)
            tail = stores[n - n % 4:]
            if (tail > 1).any():
                return (f"n={n}: leftover element {n - n % 4 + int(np.argmax(tail > 1))} was written "
                        f"{int(tail.max())} times: each leftover element must be written by exactly one "
                        "thread (which one, of the threads past the last group of 4?)")
            writers = _tail_writers(counts, stored[0], n, block_threads)
            if len(np.unique(writers)) < len(writers):
                return (f"n={n}: one thread wrote several of the {n % 4} leftover elements: each thread past "
                        "the last group of 4 handles one leftover element, its own")
            if (writers < n // 4).any():
                return (f"n={n}: a leftover element was written by a thread that also has a group of 4: the "
                        "leftovers belong to the threads past the last group (the first of them is the "
                        "thread whose index is the number of groups)")
            if (stores > 1).any():
                return (f"n={n}: element {int(np.argmax(stores > 1))} was written {int(stores.max())} times: "
                        "each output must be written by exactly one thread")
            wrong = np.flatnonzero(args[names.index(stored[0])] != SCALE * x)
            if len(wrong):
                return (f"n={n}: the kernel's output is wrong at element {', '.join(map(str, wrong[:4]))}"
                        ": is every leftover element read from x at its own index and scaled by a?")
            if out is None or np.shape(out) != (n,) or not np.array_equal(np.asarray(out), SCALE * x):
                return f"n={n}: scale_vec4 must return the n values its kernel wrote"
    return None


def _narrow_group_loads(counts, array: str, groups: int) -> int | None:
    """None if every traced load of ``array`` below element 4 * groups (the groups of 4) is 16 bytes wide
    and there is at least one; else the width in bytes of a narrower one (0: no load there at all)."""
    sites = counts.sites[(counts.sites["array"] == array) & (counts.sites["op"] == "ld")]["site"]
    accesses = counts.accesses[counts.accesses["site"].isin(sites)]
    grouped = accesses[accesses["address"] < 16 * groups]
    if grouped.empty:
        return 0
    narrow = grouped[grouped["bytes"] != 16]
    return int(narrow["bytes"].iloc[0]) if len(narrow) else None


def check_scale_vec4(scale_vec4, kernel) -> object:
    """``scale_vec4(x, a)``: a * x for a float32 NumPy vector with 16-byte loads, any length (the
    kernel's scalar tail), refusing with ValueError an x that does not start on a 16-byte boundary;
    ``kernel``: the kernel it launches. Its launches are traced: the kernel must write every output
    (no tail, nor the whole scale, on the host) and load x 16 bytes at a time."""
    name = "exercise 3 (float4: tail and alignment)"

    def attempt():
        refusal = refused(name, (scale_vec4, kernel), _this_module(),
                          why="the exercise is to write the tail and the alignment check yourself")
        if refusal:
            return refusal
        rng = np.random.default_rng()
        failure = _traced_lengths(scale_vec4, kernel, rng)
        if failure:
            return report(name, False, failure)
        base = aligned_floats(1028, rng)
        for skip in (1, 2, 3):  # 4, 8 and 12 bytes past a 16-byte boundary
            try:
                scale_vec4(base[skip:], SCALE)
            except ValueError:
                continue
            except Exception as error:  # noqa: BLE001 - the learner's code: any other error is feedback
                return report(name, False, f"x[{skip}:] raised {type(error).__name__}; refuse it with a "
                              "ValueError that says why")
            return report(name, False, f"x[{skip}:] starts {4 * skip} bytes past a 16-byte boundary and was "
                          "accepted; the exercise asks scale_vec4 to refuse such an x with one clear "
                          "ValueError (x.ctypes.data is x's address; NumPy usually, not always, starts an "
                          "array on a 16-byte boundary)")
        try:
            out = scale_vec4(base[4:], SCALE)
        except ValueError as error:
            return report(name, False, f"x[4:] was refused ({error}), but it starts 16 bytes in, on a "
                          "16-byte boundary: refuse only an address that is not a multiple of 16")
        if not np.array_equal(np.asarray(out), SCALE * base[4:]):
            return report(name, False, "x[4:] (aligned) gave wrong values")
        counts = _trace(kernel, rng.standard_normal(259, dtype=np.float32), np.zeros(259, np.float32), SCALE,
                        threads=vec4_threads(259))
        x_name = next(iter(inspect.signature(kernel.py_func).parameters))
        narrow = _narrow_group_loads(counts, x_name, 259 // 4)
        if narrow == 0:
            return report(name, False, "the kernel's body does not load x 16 bytes at a time (use load4)")
        if narrow is not None:
            return report(name, False, f"a thread with a group of 4 loads {x_name} {narrow} bytes at a time: "
                          "every group thread must load its group of 4 with one 16-byte load (load4), not "
                          "only some of them")
        lengths = ", ".join(map(str, TRACED_LENGTHS))
        return report(name, True, f"the kernel wrote every output at n = {lengths}; x[1:], x[2:] and "
                      "x[3:] refused, x[4:] accepted")

    return guarded(name, attempt)


@cuda.jit
def solution_scale_vec4_kernel(x, out, a):
    i = cuda.grid(1)
    groups = x.size // 4
    if i < groups:
        v0, v1, v2, v3 = load4(x, i)
        store4(out, i, a * v0, a * v1, a * v2, a * v3)
    else:
        j = 4 * groups + (i - groups)
        if j < x.size:
            out[j] = a * x[j]


def solution_scale_vec4(x, a):
    if x.ctypes.data % 16:
        raise ValueError(f"x starts {x.ctypes.data % 16} bytes past a 16-byte boundary")
    out = np.empty_like(x)
    threads = vec4_threads(x.size)
    solution_scale_vec4_kernel[max(1, -(-threads // 256)), 256](x, out, np.float32(a))
    return out


# ----------------------------------------------------------------------------- exercise 4

PREDICT_STRIDES = (2, 12, 24)  # 12: between 32 and 64 bytes apart, where neighbours share part of a granule
PREDICT_TOLERANCE = 0.06  # the model's largest error from stride 2 to 24 is 5.97% (stride 8); 5.37% at 12
PREDICT_SWEEP = "strided_copy_x4"
UNRECORDED_STRIDES = (5, 10, 14, 20)  # strides the recording (and the lesson's figure) does not hold; 10
# and 14 fall between 8 and 16, where a granule is shared by some lanes: a model that jumps to 64 bytes (or
# stays at 32) anywhere in there fails
MODEL_TOLERANCE = 0.01  # on a made-up ceiling, the model itself: a near-equivalent model is exact


def recorded_stride_gbps(result=None) -> tuple[float, dict]:
    """The x4 strided copy's ceiling (stride 1) and its useful GB/s at the predicted strides, from
    ``result`` (default: the reference recording)."""
    result = result or lessons.load(lesson.NAME, live=False)
    rows = result.table[result.table["variant"] == PREDICT_SWEEP].set_index("param")["gbps"]
    return float(rows.loc[1.0]), {s: float(rows.loc[float(s)]) for s in PREDICT_STRIDES}


_DRAM_MODELS = ((lesson.dram_bytes_per_element, "the lesson's dram_bytes_per_element"),
                (lesson.sweep_model, "the lesson's sweep_model"), *_TRACER)


def check_stride_prediction(predicted_gbps) -> object:
    """``predicted_gbps(stride, ceiling_gbps)``: the useful GB/s of the four-loads-in-flight strided
    copy at ``stride`` (elements of 4 bytes), given its measured stride-1 bandwidth; held to the
    H200's recording at strides 2, 12 and 24 within 6%, then to the DRAM-bytes model at strides the
    recording does not hold with a made-up ceiling (so that values read off the figure cannot answer)."""
    name = "exercise 4 (predict a bandwidth)"

    def attempt():
        refusal = refused(name, (predicted_gbps,), _this_module(), _DRAM_MODELS,
                          "the exercise is to compute the bandwidth yourself, from the bytes DRAM moves")
        if refusal:
            return refusal
        ceiling, measured = recorded_stride_gbps()
        for stride in PREDICT_STRIDES:
            got = predicted_gbps(stride, ceiling)
            if got is None:
                return report(name, False, "return a bandwidth in GB/s")
            error = measured[stride] / float(got) - 1
            if abs(error) > PREDICT_TOLERANCE:
                return report(name, False, f"you predict {float(got):,.0f} GB/s at stride {stride}: more "
                              f"than {PREDICT_TOLERANCE:.0%} from what the H200 measured. {_BYTES_HINT}")
        made_up = float(np.random.default_rng().uniform(1500, 3500))
        for stride in UNRECORDED_STRIDES:
            got = predicted_gbps(stride, made_up)
            model = solution_stride_prediction(stride, made_up)
            if got is None or abs(float(got) / model - 1) > MODEL_TOLERANCE:
                return report(name, False, f"a made-up ceiling of {made_up:,.0f} GB/s at stride {stride} "
                              "(not recorded): your function does not follow the DRAM-bytes model. Compute "
                              "the bandwidth from stride and ceiling_gbps, not from the figure. "
                              + _BYTES_HINT)
        return report(name, True, ", ".join(f"stride {s}: the H200 measured {measured[s]:,.0f} GB/s"
                                            for s in PREDICT_STRIDES) + f", within {PREDICT_TOLERANCE:.0%} "
                      "of your DRAM-bytes model")

    return guarded(name, attempt)


_BYTES_HINT = ("Count the bytes DRAM moves per copied element, read and write, against the bytes it moves "
               "per element at stride 1 (the granule DRAM reads, and which elements share one)")


def solution_stride_prediction(stride, ceiling_gbps):
    read = min(4 * stride, 64)  # DRAM reads whole 64-byte granules
    return ceiling_gbps * 8 / (read + 4)
