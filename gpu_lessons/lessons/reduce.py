"""Lesson 5: reduce. s = sum(x) from one global atomic per element to the bandwidth limit.

The experiment (all float32, input uniform in [0, 1), read once: bytes = 4 n), as sections:

- ``progression``: every kernel of ``kernels.reduce`` in teaching order at 2^28 elements (grid-stride
  kernels at 8 blocks per SM), with each kernel's registers, shared memory and SASS;
- ``grid``: the scalar grid-stride kernels at 1 .. 32 blocks per SM;
- ``vec4 waves``: do partial waves of blocks slow ``vec4`` down (an earlier recording dipped at 8
  blocks per SM)? ``vec4``, ``vec4_last_block`` and vec4's twins (launch bounds, register cap, 2 loads
  in flight, residency capped by shared memory) on a finer grid, with the resident blocks per SM the
  driver grants each (facts ``waves``);
- ``sizes`` and ``references``: the fast kernels, cupy.sum (CUB) and numba's cuda.reduce, 2^10 .. 2^28;
- ``trees without atomics``: the three shared-memory trees where the tree is the work (tiles through
  shared memory with per-block partials; the same tile reduced ``TREE_REPS`` times), beside the same
  frame without a tree (facts ``trees``);
- ``floating point``: each variant's error against a float64 sum and how many different bit patterns
  20 identical runs give, with the grid it ran with; the deterministic variants at several grids
  (facts ``float``, ``float_grid``, ``float_grids``).

Readers below are pure functions of a ``LessonResult`` (or of traces, or of lane indices).
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
from numba import cuda, typeof

from ..bench import input_sets_needed
from ..device import WARP_SIZE, device_info
from ..kernels import divergence as dv
from ..kernels import reduce as k
from ..kernels.launch import blocks_per_sm
from ..kernels.util import poison
from ..ncu import Case
from ..occupancy import driver_blocks_per_sm, occupancy, recorded_limits, sm_limits
from ..plots import reduce as figs
from ..results import LessonResult, RecordingError
from ..results.store import provenance
from ..scoreboard import Comparison
from ..sim import trace
from .runner import Run, Section, check_row, cupy_or_none, section_meta

NAME = "reduce"
TITLE = "Reduce: from one atomic per element to the bandwidth limit"
NOTEBOOK = "05_reduce.ipynb"
SUMMARY = "atomics, shared trees, divergence and bank conflicts, shuffles, float4; deterministic sums"

BIG = 2**28  # 1 GiB of float32: 17x the H200's 60 MiB L2
MID = 2**24  # 64 MiB: where a single launch beats CUB's two
SIZES = [2**p for p in range(10, 29)]
SWEEP_VARIANTS = ["warp_shuffle", "vec4", "vec4_last_block", "vec4_two_pass"]
GRID_VARIANTS = ["grid_stride", "warp_shuffle", "vec4", "vec4_last_block"]  # the grid figure
BLOCKS_PER_SM = [1, 2, 3, 4, 6, 8, 16, 32]
# The progression's grid: blocks of 256 threads that fill one SM of the GPU (default_blocks_per_sm: 8 on
# sm_80/sm_90, 6 on sm_86/sm_89, 4 on sm_75); 8 in the H200's recording, which predates the fact
DEFAULT_BLOCKS_PER_SM = 8
SLOW_RUNS = 3  # the one-atomic-per-element kernel takes ~0.5 s at 2^28
CUPY = "cupy.sum"
NUMBA_REDUCE = "numba cuda.reduce"
BEST = ["vec4", "vec4_last_block", "vec4_two_pass"]

# The waves experiment: vec4 (38 registers: 6 blocks per SM) against twins with 8 or 4 per SM.
WAVE_VARIANTS = ["vec4", "vec4_last_block", *(v.name for v in k.TWINS)]
WAVE_BLOCKS_PER_SM = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 12, 14, 16, 18, 20, 24, 28, 32]

# Trees without atomics: tiles streamed from DRAM, and one tile reduced TREE_REPS times.
TREE_REPS = 1024
TREE_BLOCKS_PER_SM = [1, 8]

# The notes' divergence rule on a real two-path warp (kernels.divergence): one launch of a full GPU.
DIVERGENCE_REPS = [1024, 4096]
DIVERGENCE_BLOCKS_PER_SM = 8

FLOAT_SIZES = [MID, BIG]
FLOAT_RUNS = 20  # repeated runs per variant in the bits experiment
FLOAT_GRID_BLOCKS_PER_SM = [1, 2, 4, 8, 16]  # the deterministic variants at other grids
FLOAT_GRID_RUNS = 5

COMPARISONS = [
    Comparison(title="sum of 2^28 float32", lesson=NAME, metric="gbps", ours=BEST, reference=CUPY,
               size=BIG),
    Comparison(title="sum of 2^24 float32 (single pass vs CUB's two)", lesson=NAME, metric="gbps",
               ours=BEST, reference=CUPY, size=MID),
    Comparison(title="deterministic sum of 2^28 float32", lesson=NAME, metric="gbps",
               ours=k.DETERMINISTIC, reference=CUPY, size=BIG),
]

# SASS: the markers the resources table counts, and the excerpt each kernel keeps.
SASS_MARKERS = {"LDG.E.128": "16-byte global loads", "LDG.E": "4-byte global loads",
                "SHFL.DOWN": "shuffles", "REDG.E.ADD.F32": "float atomic adds (no result)",
                "ATOMG": "atomics with a result", "BAR.SYNC": "barriers", "LDS": "shared loads",
                "STS": "shared stores", "MEMBAR": "memory fences"}
EXCERPT = r"^(LDG|STG|LDS|STS|SHFL|RED|ATOM|BAR|MEMBAR)"
EXCERPTS = {"atomic_per_element": r"^(LDG|RED|ATOM)", "warp_shuffle": r"^(LDG|SHFL|RED|BAR)",
            "vec4": r"^(LDG|SHFL|RED|BAR)", "vec4_last_block": r"^(LDG|STG|ATOM|BAR|MEMBAR)"}


# ----------------------------------------------------------------------------- experiment


def _input(run: Run):
    """2^28 uniform [0, 1) floats (host and device), shared by every section: random, never zero,
    and its sum grows like n / 2, so the last bits of a float32 sum show the order of additions."""
    host = run.rng.random(BIG, dtype=np.float32)
    return host, cuda.to_device(host)


def _exact(run: Run, host: np.ndarray, start: int, n: int) -> float:
    """float64 sum of host[start:start + n] (all >= 0, so also sum|x|), once per run."""
    sums = run.shared("exact sums", dict)
    if (start, n) not in sums:
        sums[(start, n)] = float(np.sum(host[start:start + n], dtype=np.float64))
    return sums[(start, n)]


def _bound(name: str, n: int, abs_sum: float, blocks: int) -> float:
    """Our kernels: their own depth. A library: a generous 2 log2(n) (a tree of some shape)."""
    if name in (CUPY, NUMBA_REDUCE):
        return k.gamma(2 * max(1, int(math.log2(max(n, 2))))) * abs_sum
    return k.gamma(k.addition_depth(name, n, blocks)) * abs_sum


def _require_close(what: str, got: float, exact: float, bound: float) -> None:
    if not abs(float(got) - exact) <= bound:
        raise AssertionError(f"{what}: {float(got)!r} against the float64 sum {exact!r} (bound {bound:.3g})")


def _workspace(run: Run, name: str) -> k.Workspace:
    sms = device_info().sms
    most = sms * max(max(BLOCKS_PER_SM), max(WAVE_BLOCKS_PER_SM), max(FLOAT_GRID_BLOCKS_PER_SM))
    return run.shared(f"workspace {name}", lambda: k.Workspace(name, most))


def default_blocks_per_sm(result: LessonResult | None = None) -> int:
    """The progression's grid in blocks of 256 per SM: for a run on this GPU, as many as fill one SM
    (``kernels.launch.blocks_per_sm``), kept in the run's facts; for a result, the one it ran with."""
    if result is None:
        return blocks_per_sm(k.BLOCK)
    return int(result.evidence.facts.get("default_blocks_per_sm", DEFAULT_BLOCKS_PER_SM))


def _default(run: Run) -> int:
    """This run's progression grid (blocks per SM), decided once and kept in its facts."""
    return run.shared("default_blocks_per_sm",
                      lambda: run.facts.setdefault("default_blocks_per_sm", default_blocks_per_sm()))


def _time_variant(run: Run, name: str, n: int, blocks_per_sm: int | None = None) -> dict:
    """Time one variant at n elements (rotating through enough slices of x to defeat the L2),
    then check the result of the last timed run against the float64 sum of the slice it read;
    ``blocks_per_sm``: the grid of a grid-stride kernel (default: the run's, ``_default``)."""
    blocks_per_sm = blocks_per_sm or _default(run)
    host, x = run.shared("input", lambda: _input(run))
    info = device_info()
    sets = min(input_sets_needed(4 * n, int(info.l2_mib * 2**20)), BIG // n)  # (an H200 never needs the min)
    xs = [x[s * n:(s + 1) * n] for s in range(sets)]  # offsets keep 16-byte alignment
    work = _workspace(run, name)
    blocks = info.sms * blocks_per_sm
    grid_stride = k.variant(name).grid_stride
    poison(work.out)
    row = run.time(name, lambda s: k.launch(name, xs[s], work, blocks), size=n, bytes_moved=4 * n, flops=n,
                   param=float(blocks_per_sm) if grid_stride else math.nan, input_sets=sets,
                   runs=SLOW_RUNS if name == "atomic_per_element" and n > MID else None)
    last = (row["runs"] - 1) % sets
    exact = _exact(run, host, last * n, n)
    _require_close(f"{name} n={n} at {blocks_per_sm} blocks/SM", work.out.copy_to_host()[0], exact,
                   _bound(name, n, exact, blocks))
    return row


def _kernel_evidence(run: Run, name: str, n: int = BIG) -> None:
    """Registers, shared and local memory and SASS of the kernel(s) a variant launches."""
    _host, x = run.shared("input", lambda: _input(run))
    work = _workspace(run, name)
    x = x[:n]
    pattern = EXCERPTS.get(name, EXCERPT)
    if name == "vec4_last_block":
        run.kernel(name, k.vec4_last_block, (x, work.partials, work.counter, work.out), pattern)
    elif name == "vec4_two_pass":
        run.kernel(name, k.vec4_partials, (x, work.partials), pattern)
        run.kernel("sum_partials", k.sum_partials, (work.partials, np.int32(1), work.out), EXCERPT)
    else:
        run.kernel(name, k.kernel_of(name), (x, work.out), pattern)


def _progression(run: Run) -> None:
    """Every step at 2^28 in teaching order (grid-stride kernels at the run's default grid)."""
    for name in k.BY_NAME:
        _time_variant(run, name, BIG)
        _kernel_evidence(run, name)


def _grid(run: Run) -> None:
    """The scalar grid-stride kernels at 1 .. 32 blocks per SM (the default: in the progression)."""
    for name in ("grid_stride", "warp_shuffle"):
        for bps in BLOCKS_PER_SM:
            if bps != _default(run):
                _time_variant(run, name, BIG, bps)


def _residency(name: str, x, work: k.Workspace) -> dict:
    """Resident blocks of 256 per SM for a variant's launch shape: the driver's and the calculator's."""
    kernel = k.kernel_of(name)
    args = (x, work.partials, work.counter, work.out) if name == "vec4_last_block" else (x, work.out)
    signature = tuple(typeof(a) for a in args)
    kernel.compile(signature)
    overload = kernel.overloads[signature]
    registers, static = int(overload.regs_per_thread), int(overload.shared_mem_per_block)
    dynamic = work.dynamic_shared
    return {"kernel": kernel.__name__, "registers": registers, "static_shared_bytes": static,
            "dynamic_shared_bytes": dynamic, "threads_per_block": k.BLOCK,
            "resident_per_sm_driver": driver_blocks_per_sm(kernel, k.BLOCK, dynamic, signature=signature),
            "resident_per_sm_calculator": occupancy(k.BLOCK, registers, static + dynamic,
                                                    opt_in=dynamic > 0).blocks_per_sm}  # opted in if dynamic


def _waves(run: Run) -> None:
    """vec4 and its twins at 2^28 over a fine grid: do partial waves of blocks cost bandwidth?"""
    _host, x = run.shared("input", lambda: _input(run))
    sms = device_info().sms
    variants = {}
    for name in WAVE_VARIANTS:
        for bps in WAVE_BLOCKS_PER_SM:
            if not (name in k.BY_NAME and bps == _default(run)):  # those: in the progression
                _time_variant(run, name, BIG, bps)
        variants[name] = _residency(name, x, _workspace(run, name))
        if name not in k.BY_NAME and name not in k.RESIDENCY_CAP:  # vec4_smem4 is vec4's own binary
            run.kernel(name, k.kernel_of(name), (x, _workspace(run, name).out), EXCERPTS["vec4"])
    run.facts["waves"] = {"sms": sms, "size": BIG, "blocks_per_sm": WAVE_BLOCKS_PER_SM, "variants": variants}


def _sizes(run: Run) -> None:
    """The fast kernels from 2^10 to 2^27 elements (2^28: in the progression)."""
    for n in SIZES[:-1]:
        for name in SWEEP_VARIANTS:
            _time_variant(run, name, n)


def _use_cub(cp) -> list | str:
    """cupy.sum through CUB's DeviceReduce (CuPy's CUPY_ACCELERATORS; set explicitly). Returns the
    accelerators now in use, or what went wrong (a CuPy without the switch keeps its default)."""
    try:
        from cupy._core import _accelerator  # CuPy internals: optional, checked below
    except ImportError as error:
        return f"{type(error).__name__}: {error}"
    try:
        _accelerator.set_reduction_accelerators(["cub"])
        return list(_accelerator.get_reduction_accelerators())
    except AttributeError as error:
        return f"{type(error).__name__}: {error}"


def _references(run: Run) -> None:
    """cupy.sum (CUB) and numba-cuda's cuda.reduce on the same slices, 2^10 .. 2^28."""
    host, x = run.shared("input", lambda: _input(run))
    l2 = int(device_info().l2_mib * 2**20)
    cp = cupy_or_none()
    if cp is not None:
        run.facts["cupy_reduction_accelerators"] = _use_cub(cp)
    sum_reduce = cuda.reduce(lambda a, b: a + b)
    result = cuda.device_array(1, np.float32)
    for n in SIZES:
        sets = min(input_sets_needed(4 * n, l2), BIG // n)
        xs = [x[s * n:(s + 1) * n] for s in range(sets)]
        if cp is not None:
            cxs = [cp.asarray(v) for v in xs]
            out = {}

            def cupy_sum(s, cxs=cxs, out=out):
                out["value"] = cp.sum(cxs[s])

            row = run.time(CUPY, cupy_sum, provider="cupy", size=n, bytes_moved=4 * n, flops=n,
                           input_sets=sets)
            exact = _exact(run, host, ((row["runs"] - 1) % sets) * n, n)
            _require_close(f"{CUPY} n={n}", float(out["value"]), exact, _bound(CUPY, n, exact, 0))

        def numba_reduce(s, xs=xs):
            sum_reduce(xs[s], res=result)

        poison(result)
        row = run.time(NUMBA_REDUCE, numba_reduce, size=n, bytes_moved=4 * n, flops=n, input_sets=sets,
                       runs=SLOW_RUNS if n == BIG else None)
        exact = _exact(run, host, ((row["runs"] - 1) % sets) * n, n)
        _require_close(f"{NUMBA_REDUCE} n={n}", result.copy_to_host()[0], exact,
                       _bound(NUMBA_REDUCE, n, exact, 0))


def _trees(run: Run) -> None:
    """The trees where the tree is the work: tiles from DRAM with per-block partials (no atomic),
    and one tile reduced TREE_REPS times (no DRAM), each beside the same frame without a tree."""
    host, x = run.shared("input", lambda: _input(run))
    sms = device_info().sms
    partials = cuda.device_array(sms * max(TREE_BLOCKS_PER_SM), np.float32)
    out = cuda.device_array(1, np.float32)
    exact = _exact(run, host, 0, BIG)
    for bps in TREE_BLOCKS_PER_SM:
        blocks = sms * bps
        for kind in k.TREE_KINDS:
            poison(out)
            def tiles(_, kind=kind, blocks=blocks):
                k.tiles_launch(kind, x, partials, out, blocks)

            run.time(f"tiles_{kind}", tiles, size=BIG, param=float(bps), bytes_moved=4 * BIG, flops=BIG)
            bound = k.gamma(k.tiles_depth(BIG, blocks)) * exact
            _require_close(f"tiles_{kind} at {bps} blocks/SM", out.copy_to_host()[0], exact, bound)
        n = blocks * k.BLOCK
        tile_sums = host[:n].reshape(blocks, k.BLOCK).sum(axis=1, dtype=np.float64) * TREE_REPS
        bounds = k.gamma(k.repeat_depth(TREE_REPS)) * tile_sums  # x >= 0: sum|x| = sum x
        for kind in k.TREE_KINDS:
            poison(partials)
            adds = (k.BLOCK if kind == "no_tree" else k.BLOCK - 1) * TREE_REPS * blocks
            def repeat(_, kind=kind, part=x[:n]):
                k.repeat_launch(kind, part, partials, TREE_REPS)

            run.time(f"repeat_{kind}", repeat, size=n, param=float(bps), bytes_moved=4 * n, flops=adds)
            got = partials.copy_to_host()[:blocks].astype(np.float64)
            wrong = np.flatnonzero(~(np.abs(got - tile_sums) <= bounds))
            if wrong.size:
                b = int(wrong[0])
                raise AssertionError(f"repeat_{kind}: block {b} gave {got[b]!r}, expected {tile_sums[b]!r} "
                                     f"({wrong.size} blocks wrong)")
    for kind in k.TREE_KINDS:
        run.kernel(f"tiles_{kind}", k.TILES[kind], (x, partials), EXCERPT)
        run.kernel(f"repeat_{kind}", k.REPEATS[kind], (x, partials, np.int32(TREE_REPS)), EXCERPT)
    run.facts["trees"] = {"reps": TREE_REPS, "tile": k.BLOCK, "sms": sms, "blocks_per_sm": TREE_BLOCKS_PER_SM,
                          "tiles_size": BIG}


def _float_row(name: str, provider: str, values: list, exact: float, n: int, depth: int | None,
               blocks: int | None) -> dict:
    """One row of facts.float: error against the float64 sum and the bound, bits seen."""
    values = np.asarray(values, np.float32)
    errors = np.abs(values.astype(np.float64) - exact)
    bound = k.gamma(depth) * exact if depth else math.nan  # x >= 0: sum|x| = sum x
    return {"variant": name, "provider": provider, "size": n, "runs": len(values),
            "distinct_results": len(set(values.view(np.uint32).tolist())),
            "first": float(values[0]), "min": float(values.min()), "max": float(values.max()), "exact": exact,
            "max_error": float(errors.max()), "relative_error": float(errors.max() / exact),
            "error_bound": bound if math.isfinite(bound) else None,  # None: no bound, or not derived
            "depth": depth, "blocks": blocks}


def _floating_point(run: Run) -> None:
    """Each variant FLOAT_RUNS times on the same input: error and distinct bit patterns; the grid it
    ran with. Then the deterministic variants at other grids: one value per grid, not one in all."""
    host, x = run.shared("input", lambda: _input(run))
    sms = device_info().sms
    rows = []
    for n in FLOAT_SIZES:
        exact = _exact(run, host, 0, n)
        for name in k.BY_NAME:
            work = _workspace(run, name)
            blocks = k.blocks_for(name, n, sms * _default(run))
            values = []
            for _ in range(SLOW_RUNS if name == "atomic_per_element" and n > MID else FLOAT_RUNS):
                k.launch(name, x[:n], work, blocks)
                values.append(work.out.copy_to_host()[0])
            depth = k.addition_depth(name, n, blocks)
            rows.append(_float_row(name, "gpu_lessons", values, exact, n, depth, blocks))
            _require_close(f"{name} n={n} (floating point)", max(values, key=lambda v: abs(v - exact)), exact,
                           k.gamma(depth) * exact)
        cp = cupy_or_none()
        if cp is not None:
            _use_cub(cp)
            cx = cp.asarray(x[:n])
            values = [float(cp.sum(cx)) for _ in range(FLOAT_RUNS)]
            rows.append(_float_row(CUPY, "cupy", values, exact, n, None, None))
        sum_reduce = cuda.reduce(lambda a, b: a + b)
        values = [sum_reduce(x[:n]) for _ in range(SLOW_RUNS)]
        rows.append(_float_row(NUMBA_REDUCE, "gpu_lessons", values, exact, n, None, None))
        for order, value in host_orders(host[:n]).items():
            depth = n - 1 if order.startswith("sequential") else None  # one chain through every element
            rows.append(_float_row(order, "numpy", [value], exact, n, depth, None))
    grids = []
    for name in k.DETERMINISTIC:
        work = _workspace(run, name)
        for bps in FLOAT_GRID_BLOCKS_PER_SM:
            blocks = k.blocks_for(name, BIG, sms * bps)
            values = []
            for _ in range(FLOAT_GRID_RUNS):
                k.launch(name, x, work, blocks)
                values.append(work.out.copy_to_host()[0])
            bits = np.asarray(values, np.float32).view(np.uint32)
            grids.append({"variant": name, "size": BIG, "blocks_per_sm": bps, "blocks": blocks,
                          "runs": FLOAT_GRID_RUNS, "distinct_results": len(set(bits.tolist())),
                          "value": float(values[0]), "bits": f"{int(bits[0]):08x}"})
    run.facts["float"] = rows
    run.facts["float_grid"] = {"sms": sms, "blocks_per_sm": _default(run),
                               "blocks": sms * _default(run), "runs": FLOAT_RUNS}
    run.facts["float_grids"] = grids


def _divergence(run: Run) -> None:
    """The notes' ``threadIdx.x % 2`` if/else: two paths of equal cost split by lane parity (every
    warp runs both) against the same split by warp parity (each warp runs one), at 8 blocks per SM."""
    sms = device_info().sms
    threads = sms * DIVERGENCE_BLOCKS_PER_SM * dv.BLOCK
    seeds_host = run.rng.random(threads, dtype=np.float32)
    seeds = cuda.to_device(seeds_host)
    out = cuda.device_array(threads, np.float32)
    for reps in DIVERGENCE_REPS:
        for name in dv.KERNELS:
            poison(out)
            run.time(name, lambda _, name=name, reps=reps: dv.launch(name, seeds, out, reps), size=threads,
                     param=float(reps), bytes_moved=8 * threads, flops=dv.flops(threads, reps))
            got, want = out.copy_to_host().astype(np.float64), dv.expected(name, seeds_host, reps)
            wrong = np.flatnonzero(~(np.abs(got - want) <= 1e-5 * np.abs(want) + 1e-6))
            if wrong.size:
                t = int(wrong[0])
                raise AssertionError(f"{name} reps={reps}: thread {t} gave {got[t]!r}, expected {want[t]!r} "
                                     f"({wrong.size} threads wrong)")
    for name in dv.KERNELS:
        run.kernel(name, dv.BY_NAME[name], (seeds, out, np.int32(DIVERGENCE_REPS[0])),
                   r"^(FFMA|BSSY|BSYNC|BRA|WARPSYNC|ISETP|LOP3)")
    run.facts["divergence"] = {"threads": threads, "block": dv.BLOCK, "chains": dv.CHAINS,
                               "blocks_per_sm": DIVERGENCE_BLOCKS_PER_SM, "reps": DIVERGENCE_REPS}


SECTIONS = (
    Section("progression", _progression),
    Section("grid", _grid),
    Section("vec4 waves", _waves),
    Section("sizes", _sizes),
    Section("references", _references),
    Section("trees without atomics", _trees),
    Section("floating point", _floating_point),
    Section("divergence", _divergence),
)


def host_orders(x) -> dict:
    """The same float32 numbers added in other orders on the host: one by one (sequential, what
    a single thread's loop does) and NumPy's pairwise float32 sum."""
    x = np.asarray(x, np.float32)
    return {
        "sequential float32 (cumsum)": float(np.cumsum(x, dtype=np.float32)[-1]) if x.size else 0.0,
        "numpy pairwise float32": float(np.sum(x, dtype=np.float32)),
    }


# ------------------------------------------------------------------------------ Nsight Compute

NCU_METRICS = (
    "smsp__inst_executed.sum", "smsp__thread_inst_executed.sum",
    "smsp__inst_executed_op_shared_ld.sum", "smsp__inst_executed_op_shared_st.sum",
    "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum",
    "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum",
    "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum",
    "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum",
)
NCU_TREES = ("tree_interleaved", "tree_strided_index", "tree_sequential")
NCU_REPS = (8, 16)  # repeat kernels on one block: the difference is 8 trees' worth of instructions


def ncu_cases() -> list[Case]:
    """One block of 256 through each taught tree (its counts beside the tracer's), and the repeat
    kernels on one block at 8 and 16 repetitions (instructions executed per tree, by difference)."""
    x_host = np.random.default_rng(0).random(k.BLOCK, dtype=np.float32)
    x = cuda.to_device(x_host)
    exact = float(np.sum(x_host, dtype=np.float64))
    cases = []
    for name in NCU_TREES:
        out = cuda.to_device(np.zeros(1, np.float32))  # zero once: the case is exactly one launch
        cases.append(Case(f"{name}/one block", name,
                          lambda name=name, out=out: k.KERNELS[name][1, k.BLOCK](x, out),
                          lambda out=out: bool(abs(out.copy_to_host()[0] - exact) <= 1e-4 * exact)))
    for kind in k.TREE_KINDS:
        for reps in NCU_REPS:
            partials = cuda.device_array(1, np.float32)
            cases.append(Case(f"repeat_{kind}/reps={reps}", f"repeat_{kind}",
                              lambda kind=kind, reps=reps, p=partials: k.repeat_launch(kind, x, p, reps),
                              lambda reps=reps, p=partials: bool(
                                  abs(p.copy_to_host()[0] - reps * exact) <= 1e-4 * reps * exact)))
    return cases


def _ncu_case(result: LessonResult, case: str) -> dict:
    metrics = result.evidence.ncu_case(case)["metrics"]
    return {name: metrics[name] for name in NCU_METRICS if name in metrics}


def ncu_tree_counts(result: LessonResult) -> pd.DataFrame:
    """Nsight Compute's counts for one block of 256 through each taught tree: warp instructions, lanes
    per instruction (thread instructions / warp instructions), shared loads and stores with their
    wavefronts and bank conflicts (the tracer and tree_model_counts say the same for the add)."""
    rows = []
    for name in NCU_TREES:
        m = _ncu_case(result, f"{name}/one block")
        warp = m["smsp__inst_executed.sum"]
        rows.append({"kernel": name, "warp_instructions": warp,
                     "lanes_per_instruction": m["smsp__thread_inst_executed.sum"] / warp,
                     "shared_loads": m["smsp__inst_executed_op_shared_ld.sum"],
                     "shared_load_wavefronts": m["l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum"],
                     "shared_load_conflicts": m["l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum"],
                     "shared_stores": m["smsp__inst_executed_op_shared_st.sum"],
                     "shared_store_wavefronts": m["l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum"],
                     "shared_store_conflicts": m["l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum"]})
    return pd.DataFrame(rows).set_index("kernel")


def ncu_per_tree(result: LessonResult) -> pd.DataFrame:
    """What one more repetition of each repeat kernel costs in executed instructions (Nsight Compute,
    one block: the 16-repetition case minus the 8-repetition one, over 8): warp instructions (the
    executed paths the divergence model sums), thread instructions, lanes per warp instruction, and
    shared wavefronts per tree; 'tree' columns subtract the frame without a tree."""
    low, high = NCU_REPS
    rows = []
    for kind in k.TREE_KINDS:
        a, b = _ncu_case(result, f"repeat_{kind}/reps={low}"), _ncu_case(result, f"repeat_{kind}/reps={high}")

        def per_rep(metric, a=a, b=b):
            return (b[metric] - a[metric]) / (high - low)

        wavefronts = sum(per_rep(f"l1tex__data_pipe_lsu_wavefronts_mem_shared_op_{op}.sum")
                         for op in ("ld", "st"))
        rows.append({"kind": kind, "warp_instructions": per_rep("smsp__inst_executed.sum"),
                     "thread_instructions": per_rep("smsp__thread_inst_executed.sum"),
                     "shared_wavefronts": wavefronts})
    frame = pd.DataFrame(rows).set_index("kind")
    frame["lanes_per_instruction"] = frame["thread_instructions"] / frame["warp_instructions"]
    for column in ("warp_instructions", "shared_wavefronts"):
        frame[f"tree_{column}"] = frame[column] - frame.loc["no_tree", column]
    return frame


# -------------------------------------------------------------------------------- checks


EMPTY_CHECKED = ("atomic_per_element", "tree_first_add", "vec4_last_block", "vec4_two_pass")  # each path


def check() -> pd.DataFrame:
    """Every kernel against a float64 NumPy sum, within its derived error bound (both modes): a length
    that is not a multiple of the block (grid-stride kernels and vec4's twins: one block, 2003 elements
    = a full float4 round, a partial one and a scalar tail), and length 0 through each kind of launch
    (one thread per element, two per thread, the last block's merge, the second pass); the trees
    without atomics on 2 blocks (3 tiles, the last partial) and 2 tiles reduced twice (one partial)."""
    rng = np.random.default_rng()
    rows = []
    for v in [*k.VARIANTS, *k.TWINS]:
        blocks = 1 if v.grid_stride else None
        awkward = 2003 if v.grid_stride else 300
        for n in (0, awkward) if v.name in EMPTY_CHECKED else (awkward,):
            x = rng.standard_normal(n, dtype=np.float32)
            exact = float(np.sum(x, dtype=np.float64))
            got = k.reduce_sum(x, v.name, blocks=blocks)
            bound = k.error_bound(x, v.name, blocks)
            rows.append(check_row(f"{v.name} n={n}", abs(float(got) - exact) <= bound,
                                  f"|{float(got):.7g} - {exact:.7g}| <= {bound:.2g} (derived bound)"))
    x = rng.standard_normal(600, dtype=np.float32)  # 3 tiles: block 0 takes tiles 0 and 2 (partial)
    exact, abs_sum = float(np.sum(x, dtype=np.float64)), float(np.sum(np.abs(x), dtype=np.float64))
    for kind in k.TREE_KINDS:
        got = k.tiles_sum(x, kind, blocks=2)
        bound = k.gamma(k.tiles_depth(x.size, 2)) * abs_sum
        rows.append(check_row(f"tiles_{kind} n={x.size}, 2 blocks", abs(float(got) - exact) <= bound,
                              f"|{float(got):.7g} - {exact:.7g}| <= {bound:.2g}"))
    part, reps = x[:300], 2
    tiles = [part[:k.BLOCK], part[k.BLOCK:]]
    expected = np.array([reps * np.sum(t, dtype=np.float64) for t in tiles])
    bounds = np.array([k.gamma(k.repeat_depth(reps)) * reps * np.sum(np.abs(t), dtype=np.float64)
                       for t in tiles])
    for kind in k.TREE_KINDS:
        got = k.repeat_partials(part, kind, reps).astype(np.float64)
        rows.append(check_row(f"repeat_{kind} 2 tiles x {reps}",
                              bool(np.all(np.abs(got - expected) <= bounds)),
                              f"each block's partial = {reps} x its tile's sum, within the derived bound"))
    seeds = rng.random(2 * dv.BLOCK, dtype=np.float32)
    out = cuda.device_array(seeds.size, np.float32)
    for name in dv.KERNELS:  # the two-path pair: every thread's chains, on both paths
        dv.launch(name, cuda.to_device(seeds), out, 3)
        error = float(np.max(np.abs(out.copy_to_host() - dv.expected(name, seeds, 3))))
        rows.append(check_row(f"{name} 512 threads x 3 steps", error <= 1e-5, f"largest error {error:.2g}"))
    return pd.DataFrame(rows)


# --------------------------------------------------------------------------- the recorded run

MODEL_SMALLEST = 2**20  # elements (4 MiB): the launch model is fitted from here up


def _default_grid(table: pd.DataFrame, result: LessonResult) -> pd.DataFrame:
    return table[table["param"].isna() | (table["param"] == default_blocks_per_sm(result))]


def progression_rows(result: LessonResult) -> pd.DataFrame:
    """Every teaching step, deterministic variant and reference at 2^28 (grid-stride at the result's
    default grid: 8 blocks/SM on the H200)."""
    table = result.table
    names = [*k.BY_NAME, CUPY, NUMBA_REDUCE]
    return _default_grid(table[(table["size"] == BIG) & table["variant"].isin(names)], result)


def progression_table(result: LessonResult, roof: dict) -> pd.DataFrame:
    """The teaching steps at 2^28: time, GB/s, share of the measured ceiling, speed-up over the step
    before."""
    rows = progression_rows(result).set_index("variant")
    rows = rows.reindex([name for name in k.BY_NAME if name in rows.index])
    out = pd.DataFrame({
        "step": [k.BY_NAME[n].step for n in rows.index],
        "median_ms": rows["median_ms"], "gbps": rows["gbps"],
        "of_ceiling": rows["gbps"] / roof["bandwidth_gbps"],
    })
    out["speedup"] = out["median_ms"].shift(1) / out["median_ms"]
    return out


def atomic_model(result: LessonResult) -> pd.DataFrame:
    """Steps 1-5 all end in float atomics on out[0]: one per element, then one per block. The L2
    performs atomics on one address one after another, so step 1 measures the time of one; the
    model t = atomics x that time is then checked against steps 2-5 (the rest is the error)."""
    rows = progression_rows(result).set_index("variant")
    per_atomic_ms = rows.loc["atomic_per_element", "median_ms"] / BIG
    out = []
    for name in k.PROGRESSION[:5]:
        atomics = BIG if name == "atomic_per_element" else k.blocks_for(name, BIG)
        measured = rows.loc[name, "median_ms"]
        out.append({"variant": name, "atomics": atomics, "model_ms": atomics * per_atomic_ms,
                    "measured_ms": measured, "model / measured": atomics * per_atomic_ms / measured})
    frame = pd.DataFrame(out).set_index("variant")
    frame.attrs["ns_per_atomic"] = per_atomic_ms * 1e6
    return frame


def sweep_rows(result: LessonResult) -> pd.DataFrame:
    """The size sweep: the fast kernels (the default grid), cupy.sum and cuda.reduce, 2^10 .. 2^28."""
    table = result.table
    return _default_grid(table[table["variant"].isin(SWEEP_VARIANTS + [CUPY, NUMBA_REDUCE])], result)


def launch_model(result: LessonResult, variants: list[str] | None = None,
                 smallest: int = MODEL_SMALLEST) -> pd.DataFrame:
    """Fit t(n) = t0 + 4n / BW per variant (least squares on the size sweep, relative errors):
    t0 is what a call costs beyond moving bytes (launches, the last block's tail). Returns
    variant, t0_us, bw_gbps and the largest |model - measured| / measured over the sweep.
    ``variants``: by default the fast kernels and cupy.sum (when the run had CuPy)."""
    table = sweep_rows(result)
    rows = []
    for name in variants or [v for v in [*SWEEP_VARIANTS, CUPY] if v in set(table["variant"])]:
        part = table[(table["variant"] == name) & (table["size"] >= smallest)]
        if len(part) < 3:
            raise RecordingError(f"{result.source}: {name} has {len(part)} sizes >= {smallest} (3 needed)")
        t = part["median_ms"].to_numpy() * 1e-3
        design = np.stack([np.ones_like(t), part["bytes"].to_numpy(dtype=float)], axis=1) / t[:, None]
        (t0, per_byte), *_ = np.linalg.lstsq(design, np.ones_like(t), rcond=None)
        model = t0 + per_byte * part["bytes"].to_numpy(dtype=float)
        rows.append({"variant": name, "t0_us": t0 * 1e6, "bw_gbps": 1e-9 / per_byte,
                     "max_model_error": float(np.max(np.abs(model - t) / t))})
    return pd.DataFrame(rows)


def model_curves(fits: pd.DataFrame, sizes) -> pd.DataFrame:
    """The fitted t(n) as GB/s at each size, for drawing beside the measurements."""
    rows = []
    for fit in fits.itertuples():
        for n in sizes:
            seconds = fit.t0_us * 1e-6 + 4 * n / (fit.bw_gbps * 1e9)
            rows.append({"variant": fit.variant, "x": 4 * n, "value": 4 * n / seconds / 1e9})
    return pd.DataFrame(rows)


def model_times(fits: pd.DataFrame, sizes) -> pd.DataFrame:
    """The fitted t(n) in microseconds at each size (x: bytes read), for drawing beside the times."""
    rows = [{"variant": fit.variant, "x": 4 * n, "value": fit.t0_us + 4 * n / (fit.bw_gbps * 1e3)}
            for fit in fits.itertuples() for n in sizes]
    return pd.DataFrame(rows)


def versus(result: LessonResult, reference: str = CUPY, variants=None) -> pd.DataFrame:
    """GB/s of each variant over the reference's at each size of the sweep (rows: sizes)."""
    wide = sweep_rows(result).pivot_table(index="size", columns="variant", values="gbps")
    if reference not in wide:
        raise RecordingError(f"{result.source}: no rows of {reference!r} in the size sweep")
    return wide[[v for v in variants or BEST if v in wide]].div(wide[reference], axis=0)


def ratio_range(result: LessonResult, variant: str, smallest: int, largest: int,
                reference: str = CUPY) -> tuple[float, float]:
    """(lowest, highest) ratio of a variant to the reference over sizes smallest..largest: e.g.
    on the H200, vec4 is 1.19-1.23 times as fast as CUB from 2^13 to 2^20, vec4_last_block 1.02-1.07 times."""
    ratios = versus(result, reference, [variant])[variant]
    ratios = ratios[(ratios.index >= smallest) & (ratios.index <= largest)].dropna()
    if ratios.empty:
        raise RecordingError(f"{result.source}: no sizes of {variant} between {smallest} and {largest}")
    return float(ratios.min()), float(ratios.max())


def grid_rows(result: LessonResult) -> pd.DataFrame:
    """The grid sweep at 2^28: the grid-stride kernels at 1 .. 32 blocks per SM."""
    table = result.table
    return table[table["variant"].isin(GRID_VARIANTS) & (table["size"] == BIG)
                 & table["param"].isin(BLOCKS_PER_SM)]


BYTES_IN_FLIGHT_PER_THREAD = {"grid_stride": 8, "warp_shuffle": 8, "vec4": 64, "vec4_last_block": 64}


def in_flight(result: LessonResult) -> pd.DataFrame:
    """The grid sweep with the bytes each SM has requested and not yet received (loads issued
    before the first use: 2 floats per thread for the scalar kernels, 4 float4 for vec4), counted over
    the blocks an SM holds at once: the requested blocks per SM, at most as many as fit
    (``resident_per_sm``, the occupancy of the recorded registers and shared memory: vec4's 38
    registers allow 6), and the latency Little's law implies: bytes in flight on the chip / bandwidth."""
    rows = grid_rows(result).copy()
    per_thread = rows["variant"].map(BYTES_IN_FLIGHT_PER_THREAD)
    try:  # a GPU with no recorded SM limits (and no live device) has no occupancy to read
        resources = resources_table(result) if result.evidence.kernels else pd.DataFrame()
    except RecordingError:
        resources = pd.DataFrame()
    fits = rows["variant"].map(resources.get("blocks_per_sm", pd.Series(dtype=float)))
    fits = fits.fillna(rows["param"])  # resources unknown: count every requested block
    rows["resident_per_sm"] = np.minimum(rows["param"], fits).astype(int)
    rows["bytes_in_flight_per_sm"] = rows["resident_per_sm"] * k.BLOCK * per_thread
    chip_bytes = rows["bytes_in_flight_per_sm"] * result.meta["sms"]
    rows["implied_latency_ns"] = chip_bytes / (rows["gbps"] * 1e9) * 1e9
    columns = ["variant", "param", "resident_per_sm", "gbps", "bytes_in_flight_per_sm", "implied_latency_ns"]
    return rows[columns]


def waves_table(result: LessonResult) -> pd.DataFrame:
    """vec4 and its twins at 2^28 against blocks per SM, with the resident blocks per SM the driver
    granted each launch shape and the waves of blocks the grid makes (blocks / (resident x SMs)).
    ``last_wave_fill``: the share of the SMs' slots the last wave fills (1 = whole waves only);
    ``of_best``: GB/s over the variant's best on the grid."""
    facts = result.evidence.fact("waves")
    sms = facts["sms"]
    table = result.table
    rows = table[table["variant"].isin(WAVE_VARIANTS) & (table["size"] == facts["size"])
                 & table["param"].isin(facts["blocks_per_sm"])].copy()
    missing = sorted(set(rows["variant"]) - set(facts["variants"]))
    if missing:
        raise RecordingError(f"{result.evidence.origin}: facts.waves.variants lacks {', '.join(missing)}")
    granted = {name: v["resident_per_sm_driver"] for name, v in facts["variants"].items()}
    resident = rows["variant"].map(granted)
    rows["blocks_per_sm"] = rows["param"].astype(int)
    rows["blocks"] = rows["blocks_per_sm"] * sms
    rows["resident_per_sm"] = resident.astype(int)
    rows["registers"] = rows["variant"].map({name: v["registers"] for name, v in facts["variants"].items()})
    rows["waves"] = rows["blocks"] / (rows["resident_per_sm"] * sms)
    fraction = rows["waves"] - np.floor(rows["waves"])
    rows["last_wave_fill"] = np.where(np.isclose(fraction, 0), 1.0, fraction)
    rows["of_best"] = rows["gbps"] / rows.groupby("variant")["gbps"].transform("max")
    columns = ["variant", "blocks_per_sm", "blocks", "registers", "resident_per_sm", "waves",
               "last_wave_fill", "median_ms", "gbps", "of_best"]
    rows["_order"] = rows["variant"].map({name: i for i, name in enumerate(WAVE_VARIANTS)})
    return rows.sort_values(["_order", "blocks_per_sm"])[columns].reset_index(drop=True)


# ---------------------------------------------------------------- floating point, read back


def _bound_status(row) -> str:
    depth = row.get("depth")
    if pd.isna(depth) or not depth:  # a library's order (or NumPy's pairwise blocks) is not modelled here
        return "not derived (order unknown)"
    if int(depth) * k.UNIT_ROUNDOFF >= 1:
        return "none (d u >= 1)"  # gamma_d is infinite
    if k.gamma(int(depth)) >= 1:
        return "none (gamma_d >= 1)"  # finite, but sum|x| or more: it says nothing
    return "derived"


def float_table(result: LessonResult) -> pd.DataFrame:
    """The floating-point experiment, one row per variant and size: runs, distinct bit patterns,
    relative error, the addition depth and derived bound, and error / bound. ``bound`` says which:
    'derived' (error_over_bound is a number), 'none (d u >= 1)' (the chain is 2^24 adds or longer:
    gamma_d is infinite, no bound at all), 'none (gamma_d >= 1)' (2^23 adds or longer, 2^24 - 1
    included: a finite bound of sum|x| or more, which says nothing) or 'not derived' (a library, or NumPy:
    order unknown here).
    ``blocks``: the grid each kernel ran with; a recording that did not keep it (before the grid was
    recorded) gets the grid its launches used, 8 blocks per SM on the recording's SM count."""
    frame = pd.DataFrame(result.evidence.fact("float"))
    if "blocks" not in frame:
        frame["blocks"] = None
    sms = result.meta["sms"]
    recorded = frame["blocks"].notna()
    frame["blocks_source"] = np.where(recorded, "recorded", "")
    ours = (frame["provider"] == "gpu_lessons") & frame["variant"].isin(list(k.BY_NAME))
    fill = ours & ~recorded
    launched = zip(frame.loc[fill, "variant"], frame.loc[fill, "size"], strict=True)
    frame.loc[fill, "blocks"] = [k.blocks_for(v, int(n), sms * DEFAULT_BLOCKS_PER_SM) for v, n in launched]
    frame.loc[fill, "blocks_source"] = f"8 blocks/SM x {sms} SMs (as launched)"
    frame["blocks"] = frame["blocks"].astype("Int64")
    # The depth and bound of our kernels from today's addition_depth (additions that can round only),
    # not the recording's (which may have counted adds onto 0); x >= 0, so sum|x| = the exact sum.
    frame["depth"] = frame["depth"].astype(object)
    mine = frame.loc[ours]
    frame.loc[ours, "depth"] = [k.addition_depth(v, int(n), int(b)) for v, n, b in
                                zip(mine["variant"], mine["size"], mine["blocks"], strict=True)]
    frame["error_bound"] = pd.to_numeric(frame["error_bound"], errors="coerce")
    exact = frame["exact"] if "exact" in frame else frame["max_error"] / frame["relative_error"]
    frame.loc[ours, "error_bound"] = [k.gamma(int(d)) * e for d, e in
                                      zip(frame.loc[ours, "depth"], exact[ours], strict=True)]
    frame["bound"] = frame.apply(_bound_status, axis=1)
    frame.loc[frame["bound"] == "none (d u >= 1)", "error_bound"] = math.inf
    derived = frame["bound"] == "derived"
    frame["error_over_bound"] = np.where(derived, frame["max_error"] / frame["error_bound"], np.nan)
    bounded = frame["bound"] != "not derived (order unknown)"
    frame["relative_bound"] = [k.gamma(int(d)) if ok else math.nan for d, ok in zip(frame["depth"], bounded,
                                                                                  strict=True)]
    columns = ["size", "variant", "provider", "runs", "distinct_results", "relative_error", "max_error",
               "depth", "error_bound", "relative_bound", "bound", "error_over_bound", "blocks",
               "blocks_source"]
    return frame[columns]


def float_grids(result: LessonResult) -> pd.DataFrame:
    """The deterministic variants at several grids: one bit pattern per grid ('same bits every run'
    holds for the same grid, so for the same SM count), a different value from grid to grid."""
    return pd.DataFrame(result.evidence.fact("float_grids"))


def float_grid(result: LessonResult) -> dict:
    """The grid the floating-point experiment ran with: SMs, blocks per SM, blocks, runs."""
    return dict(result.evidence.fact("float_grid"))


# ------------------------------------------------------------------ resources and SASS


def marker_count(counts: dict, marker: str) -> int:
    """Instructions of one marker in a kernel's SASS opcode counts: an opcode counts when it is the
    marker or extends it ('REDG.E.ADD.F32.FTZ.RN.STRONG.GPU' for REDG.E.ADD.F32); 'LDG.E' counts
    4-byte loads only (not LDG.E.64 / LDG.E.128). Recordings that kept marker counts read the same."""
    total = 0
    for opcode, n in counts.items():
        if opcode == marker or opcode.startswith(marker + "."):
            if marker == "LDG.E" and opcode.startswith(("LDG.E.64", "LDG.E.128")):
                continue
            total += n
    return total


def resources_table(result: LessonResult, limits=None) -> pd.DataFrame:
    """Per compiled kernel: registers, shared and local memory, resident blocks of 256 per SM (the
    occupancy calculator on ``limits``: by default this GPU's for a live result, else the SM limits
    recorded for the result's GPU) and the SASS markers (16-byte loads, shuffles, atomics, fences)."""
    limits = limits or (sm_limits() if result.live else recorded_limits(result.gpu))
    rows = []
    for name, entry in result.evidence.kernels.items():
        row = {"kernel": name, "registers": entry.get("registers"), "shared_bytes": entry.get("shared_bytes"),
               "local_bytes": entry.get("local_bytes")}
        if row["registers"] is not None and row["shared_bytes"] is not None:
            fit = occupancy(k.BLOCK, row["registers"], row["shared_bytes"], limits)
            row["blocks_per_sm"] = fit.blocks_per_sm
        counts = entry.get("sass", {}).get("counts")
        for marker in SASS_MARKERS:
            row[marker] = marker_count(counts, marker) if counts is not None else None
        rows.append(row)
    return pd.DataFrame(rows).set_index("kernel")


def sass_excerpt(result: LessonResult, kernel: str) -> list[str]:
    """The SASS lines a recording kept for a kernel (loads, shuffles, atomics, barriers...)."""
    lines = result.evidence.kernel(kernel).get("sass", {}).get("lines")
    if not lines:
        raise RecordingError(f"{result.evidence.origin}: kernels.{kernel}.sass.lines is missing")
    return list(lines)


# ------------------------------------------------- the trees: traced, modelled, and timed


TREES = ["tree_interleaved", "tree_strided_index", "tree_sequential"]
TREE_OF_KIND = {"interleaved": "tree_interleaved", "strided_index": "tree_strided_index",
                "sequential": "tree_sequential"}
BANKS = 32


def tree_traces(seed: int = 0) -> dict:
    """Each taught shared-memory tree traced on one block of 256 random floats (the simulator's
    counter; works in either mode)."""
    x = np.random.default_rng(seed).random(k.BLOCK, dtype=np.float32)
    traces = {}
    for name in TREES:
        out = np.zeros(1, np.float32)
        traces[name] = trace.trace(k.KERNELS[name], 1, k.BLOCK, x, out)
        if not np.isclose(out[0], np.sum(x, dtype=np.float64), rtol=1e-5):
            raise AssertionError(f"{name} summed {out[0]}, not {np.sum(x)}")
    return traces


def traced_add(memory_trace) -> pd.DataFrame:
    """The rows of a traced tree's add ``sdata[dst] += sdata[src]``: the one source line with two
    shared loads and a shared store (load dst, load src, store dst)."""
    table = memory_trace.by_instruction
    shared = table[table["space"] == "shared"]
    for _, rows in shared.groupby("location", sort=False):
        if sorted(rows["op"]) == ["ld", "ld", "st"]:
            return rows
    raise ValueError(f"{memory_trace.kernel}: no line with two shared loads and a shared store")


def tree_counts(traces: dict) -> pd.DataFrame:
    """The tree's add ``sdata[dst] += sdata[src]`` per traced kernel: warp instructions of its path,
    active lanes per instruction (32 = no divergence), wavefronts and bank conflicts of its first load
    (each of its three accesses has the same), and the wavefronts of all three (tree_model_counts gives
    the same from the indices alone)."""
    rows = []
    for name, counts in traces.items():
        add = traced_add(counts)
        first = add.iloc[0]
        rows.append({"kernel": name, "source": first["source"],
                     "warp instructions": int(first["instructions"]),
                     "lanes per instruction": round(first["threads"] / first["instructions"], 1),
                     "wavefronts": int(first["wavefronts"]), "bank conflicts": int(first["bank_conflicts"]),
                     "wavefronts, 3 accesses": int(add["wavefronts"].sum())})
    return pd.DataFrame(rows).set_index("kernel")


def tree_schedule(kind: str, block: int = k.BLOCK) -> pd.DataFrame:
    """What each level of a tree does, one row per active thread: level, stride s, thread, warp,
    lane, the word it adds into (dst) and the word it reads (src), and their banks. A pure function
    of thread indices (the kernels' own conditions), for pictures and counts."""
    k.tree_kind(kind)
    if kind == "no_tree":
        raise ValueError("no_tree has no levels")
    rows = []
    strides = [block >> (level + 1) for level in range(int(math.log2(block)))] if kind == "sequential" else \
        [1 << level for level in range(int(math.log2(block)))]
    for level, s in enumerate(strides):
        for tid in range(block):
            if kind == "interleaved":
                active, dst = tid % (2 * s) == 0, tid
            elif kind == "strided_index":
                active, dst = 2 * s * tid < block, 2 * s * tid
            else:
                active, dst = tid < s, tid
            if active:
                rows.append({"level": level, "s": s, "thread": tid, "warp": tid // WARP_SIZE,
                             "lane": tid % WARP_SIZE, "dst": dst, "src": dst + s, "dst_bank": dst % BANKS,
                             "src_bank": (dst + s) % BANKS})
    return pd.DataFrame(rows)


def _wavefronts(words) -> int:
    """Wavefronts of one warp's 4-byte shared access: the most distinct words any bank is asked for."""
    per_bank: dict = {}
    for word in set(words):
        per_bank.setdefault(word % BANKS, set()).add(word)
    return max(len(v) for v in per_bank.values())


def tree_model_counts(kind: str, block: int = k.BLOCK) -> dict:
    """Counts of a tree's add ``sdata[dst] += sdata[src]`` from its schedule: warp instructions of the
    add's path (a warp executes the path when any lane is active: the divergence model counts these),
    active lanes, wavefronts of each access (load dst, load src, store dst: one per distinct word a
    bank must serve), the worst conflict (the most words one bank serves in one instruction) and the
    wavefronts on the tree's critical path: each level ends at a barrier, which waits for the slowest
    warp, so per level and access the most wavefronts any warp needs, summed (24 / 111 / 24)."""
    schedule = tree_schedule(kind, block)
    instructions = lanes = worst = 0
    wavefronts = {"load dst": 0, "load src": 0, "store dst": 0}
    slowest: dict = {}  # (level, access) -> the most wavefronts any warp's instruction needs
    for (level, _warp), group in schedule.groupby(["level", "warp"]):
        instructions += 1
        lanes += len(group)
        for access, column in (("load dst", "dst"), ("load src", "src"), ("store dst", "dst")):
            fronts = _wavefronts(group[column].tolist())
            wavefronts[access] += fronts
            worst = max(worst, fronts)
            slowest[(level, access)] = max(slowest.get((level, access), 0), fronts)
    return {"kind": kind, "levels": int(schedule["level"].nunique()), "warp_instructions": instructions,
            "active_lanes": lanes, "lanes_per_instruction": lanes / instructions,
            "wavefronts_load_dst": wavefronts["load dst"], "wavefronts_load_src": wavefronts["load src"],
            "wavefronts_store": wavefronts["store dst"], "wavefronts": sum(wavefronts.values()),
            "worst_conflict_ways": worst, "critical_path_wavefronts": sum(slowest.values())}


def tree_model_table(block: int = k.BLOCK) -> pd.DataFrame:
    """tree_model_counts for the three trees (with 256 threads: 47 / 12 / 12 warp instructions of the
    add; wavefronts per access 47 / 47 / 12; the worst bank conflict is 8-way, in strided_index)."""
    return pd.DataFrame([tree_model_counts(kind, block) for kind in TREE_OF_KIND]).set_index("kind")


def tree_costs(result: LessonResult) -> pd.DataFrame:
    """The trees without atomics, timed: per setting ('tiles': streamed from DRAM with per-block
    partials; 'repeat': one tile reduced facts.trees.reps times), blocks per SM and kind: SM time per
    tree (ns and SM cycles at the recorded clock), and the extra over the same frame without a tree."""
    facts = result.evidence.fact("trees")
    sms, reps, tile = facts["sms"], facts["reps"], facts["tile"]
    clock_ghz = result.meta["sm_clock_mhz"] / 1e3
    table = result.table
    rows = []
    for setting in ("tiles", "repeat"):
        for kind in k.TREE_KINDS:
            for _, row in table[table["variant"] == f"{setting}_{kind}"].iterrows():
                blocks = int(row["param"]) * sms
                trees = -(-int(row["size"]) // tile) if setting == "tiles" else reps * blocks
                ns = row["median_ms"] * 1e6 / (trees / sms)
                rows.append({"setting": setting, "blocks_per_sm": int(row["param"]), "kind": kind,
                             "median_ms": row["median_ms"], "trees": trees, "ns_per_tree_per_sm": ns,
                             "cycles_per_tree_per_sm": ns * clock_ghz})
    if not rows:
        raise RecordingError(f"{result.source}: no rows of the trees without atomics (tiles_*, repeat_*)")
    frame = pd.DataFrame(rows)
    base = frame[frame["kind"] == "no_tree"].set_index(["setting", "blocks_per_sm"])["cycles_per_tree_per_sm"]
    keys = pd.MultiIndex.from_frame(frame[["setting", "blocks_per_sm"]])
    frame["extra_cycles"] = frame["cycles_per_tree_per_sm"].to_numpy() - base.reindex(keys).to_numpy()
    return frame


CYCLES_PER_WAVEFRONT = 1.0  # a shared-memory wavefront takes one SM cycle (lesson 4 measured it)


def divergence_model(result: LessonResult, counts: pd.DataFrame | None = None) -> pd.DataFrame:
    """The measured cost of each tree (SM cycles per tree over the frame without one) against three
    models calibrated on tree_sequential (no divergence, no conflict) in the same setting:

    - paths: 分歧开销 ≈ 所有已执行路径的开销之和, a divergent warp pays for every path any lane
      takes, so the tree costs in proportion to the warp instructions of its add path counted from
      the source (47 / 12 / 12);
    - wavefronts: the tree costs in proportion to its shared-memory wavefronts (141 / 141 / 36);
    - critical path: the tree costs sequential's cycles plus one SM cycle per wavefront its critical
      path has beyond sequential's (each level waits at a barrier for its slowest warp: 24 / 111 / 24).

    ``counts``: tree_model_table() by default (the tracer agrees with it: tests hold them equal)."""
    counts = tree_model_table() if counts is None else counts
    costs = tree_costs(result)
    trees = costs[costs["kind"] != "no_tree"].copy()
    trees["warp_instructions"] = trees["kind"].map(counts["warp_instructions"])
    trees["wavefronts"] = trees["kind"].map(counts["wavefronts"])
    sequential = trees[trees["kind"] == "sequential"].set_index(["setting", "blocks_per_sm"])
    keys = pd.MultiIndex.from_frame(trees[["setting", "blocks_per_sm"]])
    base_cost = sequential["extra_cycles"].reindex(keys).to_numpy()
    for model, column in (("paths", "warp_instructions"), ("wavefronts", "wavefronts")):
        predicted = base_cost * trees[column].to_numpy() / sequential[column].reindex(keys).to_numpy()
        trees[f"{model}_model_cycles"] = predicted
        trees[f"measured / {model}_model"] = trees["extra_cycles"].to_numpy() / predicted
    trees["critical_path_wavefronts"] = trees["kind"].map(counts["critical_path_wavefronts"])
    beyond = trees["critical_path_wavefronts"] - counts.loc["sequential", "critical_path_wavefronts"]
    trees["critical_path_model_cycles"] = base_cost + CYCLES_PER_WAVEFRONT * beyond.to_numpy()
    trees["measured / critical_path_model"] = trees["extra_cycles"] / trees["critical_path_model_cycles"]
    trees["over_sequential"] = trees["extra_cycles"].to_numpy() - base_cost
    return trees.reset_index(drop=True)


def two_paths(result: LessonResult) -> pd.DataFrame:
    """The notes' two-path warp (section ``divergence``): per chain length (reps), the time of the
    pair split by lane parity (every warp runs both paths) and by warp parity (each warp runs one),
    their ratio (the notes' rule predicts 2: the sum of both paths), and the FP32 rate of each."""
    table = result.table
    rows = table[table["variant"].isin(dv.KERNELS)]
    if rows.empty:
        raise RecordingError(f"{result.source}: no rows of the two-path warp ({', '.join(dv.KERNELS)}): "
                             "a recording made before its section")
    wide = rows.pivot_table(index="param", columns="variant", values=["median_ms", "gflops"])
    out = pd.DataFrame({"divergent_ms": wide[("median_ms", "two_paths_divergent")],
                        "uniform_ms": wide[("median_ms", "two_paths_uniform")],
                        "uniform_gflops": wide[("gflops", "two_paths_uniform")]})
    out["divergent / uniform"] = out["divergent_ms"] / out["uniform_ms"]
    out.index = out.index.astype(int).rename("reps")
    return out


def section_provenance(result: LessonResult, section: str) -> str:
    """The caption line of a section merged into the recording later (its own device, versions, date)."""
    return provenance(section_meta(result, section))


# -------------------------------------------------- warp shuffles: pure functions of lane indices

SHUFFLE_OFFSETS = (16, 8, 4, 2, 1)


def shuffle_steps(kind: str = "down", offsets=SHUFFLE_OFFSETS, width: int = WARP_SIZE) -> pd.DataFrame:
    """Which lane each lane reads at each step of a warp reduction: ``down`` (shfl_down_sync: lane +
    offset; past the warp's end a lane gets its own value back) or ``xor`` (shfl_xor_sync: lane ^
    offset, a butterfly). One row per (step, lane): offset, source, in_range."""
    if kind not in ("down", "xor"):
        raise ValueError(f"kind must be 'down' or 'xor', got {kind!r}")
    rows = []
    for step, offset in enumerate(offsets):
        for lane in range(width):
            source = lane + offset if kind == "down" else lane ^ offset
            in_range = source < width
            rows.append({"step": step, "offset": offset, "lane": lane,
                         "source": source if in_range else lane, "in_range": in_range})
    return pd.DataFrame(rows)


def lane_contributions(kind: str = "down", offsets=SHUFFLE_OFFSETS, width: int = WARP_SIZE) -> np.ndarray:
    """After each step of ``value += shfl(value, ...)``: how many times each lane's original value is
    in each lane's sum (steps x lanes x original lanes). Down: lane 0 ends with every value once, the
    others with partial sums (past the end, a lane adds its own value again); xor: every lane ends
    with the whole sum."""
    steps = shuffle_steps(kind, offsets, width)
    held = np.eye(width, dtype=np.int64)
    out = []
    for _, step in steps.groupby("step", sort=True):
        source = step.sort_values("lane")["source"].to_numpy()
        held = held + held[source]
        out.append(held.copy())
    return np.stack(out)


def adds_per_read(bandwidth_gbps: float, fp32_gflops: float) -> float:
    """Float adds the SMs can do per float32 the memory delivers: (FLOP/s / 2, an FMA counting 2)
    over (bytes/s / 4). On the H200: about 31 with the theoretical FP32 peak, 30 with the measured
    FMA ceiling: both sides in the same unit (floats), not FLOP/s against GB/s."""
    return (fp32_gflops / 2) / (bandwidth_gbps / 4)


# ------------------------------------------------------------------------------- figures


FLOAT_FIGURE_VARIANTS = ["atomic_per_element", "tree_sequential", "grid_stride", "vec4", "vec4_last_block",
                         "vec4_two_pass", CUPY]  # NumPy's reference sums: in the deep dive's table


def figures(result: LessonResult, roof: dict) -> dict:
    """The lesson's measured figures (those whose data the result holds: the waves and trees figures
    need a recording made with those sections) and three concept pictures drawn from the kernels."""
    ceiling, label = roof["bandwidth_gbps"], "measured bandwidth ceiling"
    provenance = result.provenance
    sweep = sweep_rows(result)
    fits = launch_model(result)
    steps = progression_rows(result)
    reference = CUPY if CUPY in set(sweep["variant"]) else "vec4_two_pass"  # a GPU without CuPy
    out = {
        "progression": figs.steps_in_order(
            steps[steps["variant"].isin([*k.PROGRESSION, CUPY, NUMBA_REDUCE])], k.PROGRESSION, ceiling,
            ceiling_label=label, provenance=provenance, title="Sum of 2^28 float32, step by step"),
        "size": figs.size_sweep(
            sweep[sweep["variant"] != NUMBA_REDUCE],
            model_times(fits[fits["variant"].isin(["vec4_last_block", reference])], SIZES),
            versus(result, reference, [v for v in BEST if v != reference]), reference, provenance=provenance,
            fitted_from=4 * MODEL_SMALLEST,
            errors=fits.set_index("variant")["max_model_error"].to_dict()),
        "grid": figs.metric_vs(
            grid_rows(result), "param", xlabel="Blocks per SM (256 threads each)", ceiling=ceiling,
            ceiling_label="copy ceiling", provenance=provenance,
            title="Grid-stride kernels: grid size, 2^28"),
        "floating_point": figs.float_errors(float_table(result), provenance=provenance,
                                            variants=FLOAT_FIGURE_VARIANTS),
        "reduction_tree": figs.reduction_tree({kind: tree_schedule(kind, block=8) for kind in TREE_OF_KIND}),
        "tree_activity": figs.tree_activity({kind: tree_schedule(kind) for kind in TREE_OF_KIND}),
        "shuffle_butterflies": figs.shuffle_butterflies({kind: shuffle_steps(kind)
                                                         for kind in ("down", "xor")}),
    }
    if "waves" in result.facts:
        out["vec4_waves"] = figs.waves(waves_table(result), ceiling=ceiling, provenance=provenance)
    if "trees" in result.facts:
        model = divergence_model(result)  # the lesson's claim: the tiles setting (repeat: deep dive)
        out["trees_without_atomics"] = figs.tree_costs(model[model["setting"] == "tiles"],
                                                       provenance=provenance)
    return out
