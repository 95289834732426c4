"""Lesson 2: Little's Law. Bytes in flight = bandwidth x latency; FMAs in flight = rate x latency.

The experiment (``SECTIONS``): the latencies (a dependent pointer chase through DRAM, L2 and L1; a
dependent FMA chain), then a copy swept over the three ways to put bytes in flight (resident warps
per SM, loads per thread, bytes per load); the registers that unrolling costs, where occupancy drops
and where spills start, and ``max_registers``; a persistent grid-stride copy; at 16 warps/SM, a
persistent warp queue that keeps loads in flight across chunks (``copy_queue``); CuPy's copy; FMA
chains per thread against resident warps. Every launch shape's residency is asked of the occupancy
calculator and of the driver (``facts.occupancy``); every kernel's registers, local memory and SASS
are kept (``kernels.<variant>``); the SM limits too (``facts.sm_limits``). ``ncu_cases()``: the
Nsight Compute view of the low-occupancy winners (resident and eligible warps, stall reasons).

The analysis below is a set of pure functions of a ``LessonResult`` (live, or the recording).
"""

from __future__ import annotations

import re
import sys

import numpy as np
import pandas as pd
from numba import cuda, typeof

from .. import ncu
from .. import occupancy as occ
from ..device import device_info
from ..kernels import littles_law as k
from ..kernels.util import poison, queue_counters
from ..plots import littles_law as plots
from ..results import LessonResult, ProbeData, RecordingError, read_result
from ..scoreboard import Comparison
from .runner import Run, Section, check_row, cupy_or_none

NAME = "littles_law"
TITLE = "Little's Law, latency hiding, ILP and occupancy"
NOTEBOOK = "02_littles_law_ilp.ipynb"
SUMMARY = ("latencies measured, bytes and FMAs in flight swept, an occupancy calculator checked "
           "against the driver")

COPY_ELEMENTS = 2**28  # float32: 1 GiB per buffer, 2 GiB moved, 17x the H200's 60 MiB L2
WIDTHS = (4, 8, 16)  # bytes per access: float32, float64, float4
UNROLLS = (1, 2, 4, 8)  # independent loads per thread before the first store
# (block, blocks per SM) -> resident warps; beyond the first block, dynamic shared memory caps residency
RESIDENCY = ((64, 1), (128, 1), (256, 1), (256, 2), (256, 4), (256, 8))
PRESSURE_UNROLLS = (12, 16, 20, 24, 28, 32, 64)  # 16-byte loads: 48 to 256 registers of data per thread
MAX_REGISTERS = ((16, 32), (32, 64), (32, 128), (64, 128))  # (unroll, cap)
PERSISTENT_UNROLLS = (1, 4)
PERSISTENT_BLOCKS_PER_SM = (1, 2, 4, 8)
# The pipelined warp queue at 16 warps/SM: (unroll, chunks per claim, register cap). u16 holds two
# chunks in ~146 registers: capped at 128 it fits 2 blocks of 256 per SM (and spills); uncapped,
# registers allow 1 block (8 warps/SM).
QUEUE_SHAPES = ((8, 1, None), (8, 2, None), (8, 4, None), (12, 1, None), (12, 4, None),
                (16, 1, 128), (16, 4, 128), (16, 1, None))
QUEUE_BLOCK, QUEUE_BLOCKS_PER_SM = 256, 2  # grid = 2 blocks per SM, residency capped at 2
TARGET_OF_COPYTO = 0.97  # issue 7: a copy at <= 16 warps/SM within 3% of cupy.copyto

FMA_CHAINS = (1, 2, 3, 4, 6, 8, 12)
FMA_WARPS = (1, 2, 4, 8, 16, 32)
FMA_TRIPS = 2000
FMA_LATENCY_TRIPS = 20000  # one warp, one chain: 320,000 dependent FMAs

# Pointer chases: (level, buffer elements (uint32), nodes, steps timed); footprint = nodes lines
CHASES = (
    ("DRAM", 2**28, 2**20, 2000),  # 1 Mi random lines of a 1 GiB buffer: each step a new line
    ("L2", 2**24, 2**17, 4000),  # 16 MiB of lines: in the H200's 60 MiB L2, far past the L1
    ("L1", 2**16, 2**8, 20000),  # 32 KiB of lines: in the L1
)
CHASE_LINE_BYTES = 128
L2_CHASE_SHARE = 3  # the L2 chase's lines fill at most a third of the L2 (the rest: other data, hashing)


def chases(l2_bytes: int | None = None) -> tuple:
    """``CHASES`` for a GPU with ``l2_bytes`` of L2 (default: this device's): the L2 chase's footprint
    is the largest power of two of lines up to 16 MiB that fills at most a third of the L2 (16 MiB
    on the H200's 60 MiB and an L4's 48 MiB; 8 MiB on an A100's 40 MiB; 1 MiB on a T4's 4 MiB), so
    that it measures the L2, not DRAM; its buffer stays 4x the footprint."""
    out = []
    for level, elements, nodes, steps in CHASES:
        if level == "L2":
            if l2_bytes is None:
                l2_bytes = int(device_info().l2_mib * 2**20)
            while nodes > 2**8 and nodes * CHASE_LINE_BYTES * L2_CHASE_SHARE > l2_bytes:
                nodes //= 2
                elements //= 2
        out.append((level, elements, nodes, steps))
    return tuple(out)
LEVELS = ("DRAM", "L2", "L1", "FMA")

FLUSH_ELEMENTS = 2**27  # 512 MiB written between building the DRAM chain and timing it

# 16 warps: 25% of the 64 an sm_80/sm_90 SM holds (33% of sm_86/sm_89's 48, 50% of sm_75's 32)
LOW_OCCUPANCY_WARPS = 16
FMA_LOW_WARPS = 8  # 12.5%
MEMORY_SASS = r"^(LDG|STG|LDL|STL)"  # the SASS lines a recording keeps of each kernel: its memory accesses


def copy_variant(width: int, unroll: int, max_registers: int | None = None) -> str:
    return f"copy w{width} u{unroll}" + (f" maxreg{max_registers}" if max_registers else "")


def queue_variant(unroll: int, per_claim: int, max_registers: int | None = None) -> str:
    return f"copy_queue w16 u{unroll} r{per_claim}" + (f" maxreg{max_registers}" if max_registers else "")


def parse_variant(variant: str) -> dict:
    """'copy w16 u4' -> {'kind': 'copy', 'width': 16, 'unroll': 4}; 'fma c8' -> chains 8;
    'copy_queue w16 u16 r2' -> chunks_per_claim 2."""
    kind, *fields = variant.split()
    facts = {"kind": kind}
    names = {"w": "width", "u": "unroll", "c": "chains", "r": "chunks_per_claim", "maxreg": "max_registers"}
    for text in fields:
        key, value = re.fullmatch(r"([a-z]+)(\d+)", text).groups()
        facts[names.get(key, key)] = int(value)
    return facts


def describe_copy(variant: str, short: bool = False) -> str:
    """A copy's variant name in words: 'copy w16 u32' -> 'one-shot, 32 float4 per thread';
    'copy_queue w16 u16 r2 maxreg128' -> 'warp queue, 16 float4 per lane, 2 chunks per claim, capped at
    128 registers' (short: 'warp queue, 16 float4/lane, 2 chunks/claim, <= 128 registers')."""
    f = parse_variant(variant)
    kind = COPY_KINDS.get(f["kind"], f["kind"])
    unit = {4: "float", 8: "double", 16: "float4"}.get(f.get("width"), f"{f.get('width')}-byte load")
    per = "lane" if f["kind"] == "copy_queue" else "thread"
    words = f"{kind}, {f['unroll']} {unit}{'/' if short else ' per '}{per}"
    if f.get("chunks_per_claim", 1) > 1:
        words += f", {f['chunks_per_claim']} chunks{'/' if short else ' per '}claim"
    if f.get("max_registers"):
        words += f", {'<=' if short else 'capped at'} {f['max_registers']} registers"
    return words


COPY_VARIANTS = [copy_variant(w, u) for w in WIDTHS for u in UNROLLS]
PRESSURE_VARIANTS = [copy_variant(16, u) for u in PRESSURE_UNROLLS]  # residency set by their registers
CAPPED_VARIANTS = [copy_variant(16, u, cap) for u, cap in MAX_REGISTERS]
PERSISTENT_VARIANTS = [f"copy_persistent w16 u{u}" for u in PERSISTENT_UNROLLS]
QUEUE_VARIANTS = [queue_variant(*shape) for shape in QUEUE_SHAPES]
FMA_VARIANTS = [f"fma c{c}" for c in FMA_CHAINS]

COMPARISONS = [
    Comparison(title="copy at 16 warps/SM (25% occupancy) vs CuPy copy", lesson=NAME, metric="gbps",
               ours=COPY_VARIANTS + PRESSURE_VARIANTS + QUEUE_VARIANTS, reference="cupy copy",
               param=float(LOW_OCCUPANCY_WARPS)),
    Comparison(title="copy at 8 warps/SM (12.5% occupancy) vs CuPy copy", lesson=NAME, metric="gbps",
               ours=COPY_VARIANTS + PRESSURE_VARIANTS + QUEUE_VARIANTS, reference="cupy copy",
               param=8.0),
    Comparison(title="FMA chains at 8 warps/SM (12.5% occupancy) vs FP32 peak", lesson=NAME,
               metric="gflops", ours=FMA_VARIANTS, reference="theory:peak_fp32_gflops",
               param=float(FMA_LOW_WARPS)),
    Comparison(title="persistent grid-stride copy (open question) vs CuPy copy", lesson=NAME,
               metric="gbps", ours=PERSISTENT_VARIANTS, reference="cupy copy"),
]


# --------------------------------------------------------------------- occupancy: one helper


def calculated_occupancy(block: int, registers: int, shared_bytes: int, limits: occ.SMLimits,
                         opt_in: bool = False) -> occ.Occupancy:
    """The occupancy calculator for one launch shape: the one place this lesson asks it.

    ``shared_bytes``: static + dynamic per block. ``opt_in``: the kernel raised its dynamic shared
    memory limit past a plain kernel's 48 KiB (``kernels.launch.allow_dynamic_shared``), as the
    copies whose residency shared memory caps do; without it a block over 48 KiB does not launch.
    """
    return occ.occupancy(block, registers, shared_bytes, limits, opt_in=opt_in)


def launch_shape(limits: occ.SMLimits, block: int, blocks_per_sm: int, registers: int,
                 static_shared: int = 0, cap: bool = True) -> tuple[int, bool, occ.Occupancy]:
    """How the lesson launches a kernel for a residency target: (dynamic shared bytes per block,
    whether the kernel must opt in past 48 KiB, the calculator's answer).

    cap: dynamic shared memory limits residency to ``blocks_per_sm`` (else the grid does, or the
    registers); a target that fills the SM's threads needs none."""
    full = blocks_per_sm * block >= limits.max_threads_per_sm
    shared = 0 if full or not cap else occ.shared_to_limit(block, blocks_per_sm, limits)
    opt_in = static_shared + shared > limits.shared_per_block
    return shared, opt_in, calculated_occupancy(block, registers, static_shared + shared, limits, opt_in)


# ----------------------------------------------------------------------------- experiment


def _limits(run: Run) -> occ.SMLimits:
    """This GPU's SM limits, kept in the run's facts (the simulator's calculator reads them back)."""
    def read():
        limits = occ.sm_limits()
        run.facts["sm_limits"] = limits.as_dict()
        return limits

    return run.shared("sm_limits", read)


def _signature(args: tuple) -> tuple:
    return tuple(typeof(a) for a in args)


def _residency(run: Run, name: str, kernel, args: tuple, block: int, blocks_per_sm: int,
               cap: bool = True) -> tuple[int, occ.Occupancy]:
    """Launch shape for a residency target (dynamic shared bytes, the calculator's Occupancy),
    checked with the driver; the kernel's resources and SASS are recorded once, as ``name``."""
    limits = _limits(run)
    resources = run.kernels.get(name) or run.kernel(name, kernel, args, MEMORY_SASS)
    shared, opt_in, calc = launch_shape(limits, block, blocks_per_sm, resources["registers"],
                                        resources["shared_bytes"], cap)
    if opt_in:
        k.allow_dynamic_shared(kernel, args, limits.shared_per_block_optin - resources["shared_bytes"])
    driver = occ.driver_blocks_per_sm(kernel, block, shared, signature=_signature(args))
    run.facts.setdefault("occupancy", []).append(
        {"kernel": name, "block": block, "dynamic_shared": shared, "registers": resources["registers"],
         "calculator": calc.blocks_per_sm, "driver": driver, "limiter": calc.limiter})
    disagrees = driver != calc.blocks_per_sm
    run.facts["occupancy_disagreements"] = run.facts.get("occupancy_disagreements", 0) + int(disagrees)
    if disagrees:
        print(f"occupancy: calculator {calc.blocks_per_sm} vs driver {driver} blocks/SM for {name}, "
              f"block {block}, shared {shared}", file=sys.stderr)
    return shared, calc


def _copy_buffers(run: Run):
    """1 GiB of random floats and an output of the same size, shared by every copy section."""
    x = cuda.to_device(run.rng.standard_normal(COPY_ELEMENTS, dtype=np.float32))
    return x, cuda.device_array_like(x)


def _check_copy(x, out, what: str) -> None:
    cp = cupy_or_none()
    if cp is not None:
        equal = bool(cp.array_equal(cp.asarray(out), cp.asarray(x)))
    else:
        equal = np.array_equal(out.copy_to_host(), x.copy_to_host())
    if not equal:
        raise AssertionError(f"{what} did not copy its input exactly")


def _time_copy(run: Run, variant: str, launch, x, out, warps_per_sm: float) -> None:
    """Poison the output, time the copy (param: resident warps per SM), check every element."""
    poison(out)
    run.time(variant, launch, size=COPY_ELEMENTS, param=warps_per_sm, bytes_moved=8 * COPY_ELEMENTS, flops=0)
    _check_copy(x, out, f"{variant} at {warps_per_sm:g} warps/SM")


def _latency(run: Run) -> None:
    """Pointer chases through DRAM, L2 and L1, and one dependent FMA chain: S and 2S steps each."""
    flush = cuda.device_array(FLUSH_ELEMENTS, np.float32)
    for seed, (level, elements, nodes, steps) in enumerate(chases()):
        chain, start = k.build_chain(elements, nodes, seed=seed, device=True)
        state = k.chase_state(start)
        if level == "DRAM":  # the scatter that wrote the chain left its lines in the L2: evict them
            poison(flush)
        else:  # warm pass: the whole chain once, into the cache it should hit
            k.chase_launch(chain, state, nodes)
        for count in (steps, 2 * steps):
            def launch(_, c=count, chain=chain, state=state):
                k.chase_launch(chain, state, c)

            run.time(f"chase {level}", launch, size=count, param=nodes * k.LINE_BYTES, bytes_moved=0, flops=0)
        cuda.synchronize()
        ended = int(state.copy_to_host()[0])
        if ended not in set(k.chain_nodes(elements, nodes, seed=seed).tolist()):
            raise AssertionError(f"chase {level} ended at {ended}, which is not a node of its chain")
        if level == "L1":
            run.kernel("pointer_chase", k.pointer_chase, (chain, state, np.int64(1)), MEMORY_SASS)
        del chain
    del flush
    out = cuda.device_array(32, np.float32)
    for trips in (FMA_LATENCY_TRIPS, 2 * FMA_LATENCY_TRIPS):
        run.time("chase FMA", lambda _, t=trips: k.fma_chains_launch(1, out, 1, 32, t),
                 size=trips * k.FMA_UNROLL, bytes_moved=0, flops=0)


def _copies(run: Run) -> None:
    """Copies of 4-, 8- and 16-byte accesses, 1-8 loads per thread, at 2 to 64 resident warps per SM."""
    x, out = run.shared("copy", lambda: _copy_buffers(run))
    for width in WIDTHS:
        xs, outs = (x, out) if width != 8 else (x.view(np.float64), out.view(np.float64))
        vector = width == 16
        seen = set()
        for unroll in UNROLLS:
            kernel, variant = k.copy_ilp(unroll, vector), copy_variant(width, unroll)
            for block, per_sm in RESIDENCY:
                shared, calc = _residency(run, variant, kernel, (xs, outs), block, per_sm)
                if (variant, calc.warps_per_sm) in seen:
                    continue  # registers capped two targets at the same residency
                seen.add((variant, calc.warps_per_sm))

                def launch(_, u=unroll, v=vector, b=block, s=shared, xs=xs, outs=outs):
                    k.copy_ilp_launch(u, v, xs, outs, b, s)

                _time_copy(run, variant, launch, xs, outs, calc.warps_per_sm)


def _pressure(run: Run) -> None:
    """16-byte copies unrolled 12-64 (their registers set the residency), and capped with max_registers."""
    x, out = run.shared("copy", lambda: _copy_buffers(run))
    for unroll, cap in [(u, None) for u in PRESSURE_UNROLLS] + list(MAX_REGISTERS):
        kernel, variant = k.copy_ilp(unroll, True, cap), copy_variant(16, unroll, cap)
        _shared, calc = _residency(run, variant, kernel, (x, out), k.COPY_BLOCK, 8)
        def launch(_, u=unroll, c=cap):
            k.copy_ilp_launch(u, True, x, out, max_registers=c)

        _time_copy(run, variant, launch, x, out, calc.warps_per_sm)


def _persistent(run: Run) -> None:
    """A grid-stride float4 copy on 1, 2, 4 and 8 blocks of 256 per SM (the grid sets the residency)."""
    x, out = run.shared("copy", lambda: _copy_buffers(run))
    sms = device_info().sms
    for unroll in PERSISTENT_UNROLLS:
        kernel, variant = k.copy_persistent(unroll), f"copy_persistent w16 u{unroll}"
        for per_sm in PERSISTENT_BLOCKS_PER_SM:
            _shared, calc = _residency(run, variant, kernel, (x, out), k.COPY_BLOCK, per_sm, cap=False)
            warps = min(calc.warps_per_sm, per_sm * k.COPY_BLOCK // 32)  # the grid is the limit here
            def launch(_, u=unroll, b=per_sm * sms):
                k.copy_persistent_launch(u, x, out, b)

            _time_copy(run, variant, launch, x, out, warps)


def _queue(run: Run) -> None:
    """The pipelined warp queue, 2 blocks of 256 per SM (16 warps/SM unless registers allow fewer)."""
    x, out = run.shared("copy", lambda: _copy_buffers(run))
    sms = device_info().sms
    for unroll, per_claim, cap in QUEUE_SHAPES:
        kernel, variant = k.copy_queue(unroll, per_claim, cap), queue_variant(unroll, per_claim, cap)
        shared, calc = _residency(run, variant, kernel, (x, out, queue_counters(np.uint64)), QUEUE_BLOCK,
                                  QUEUE_BLOCKS_PER_SM)

        def launch(_, u=unroll, r=per_claim, c=cap, s=shared):
            k.copy_queue_launch(u, x, out, QUEUE_BLOCKS_PER_SM * sms, QUEUE_BLOCK, s, r, c)

        _time_copy(run, variant, launch, x, out, calc.warps_per_sm)


def _cupy_copy(run: Run) -> None:
    """cupy.copyto on the same 1 GiB: what a user would pick instead (no CuPy: no row)."""
    cp = cupy_or_none()
    if cp is None:
        return
    x, _out = run.shared("copy", lambda: _copy_buffers(run))
    src = cp.asarray(x)
    dst = cp.full_like(src, cp.nan)
    run.time("cupy copy", lambda _: cp.copyto(dst, src), provider="cupy", size=COPY_ELEMENTS,
             bytes_moved=8 * COPY_ELEMENTS, flops=0)
    if not bool(cp.array_equal(dst, src)):
        raise AssertionError("CuPy copy mismatch")


def _fma(run: Run) -> None:
    """FMA chains per thread (1-12) x resident warps per SM (1-32), one block per SM."""
    sms = device_info().sms
    for chains in FMA_CHAINS:
        kernel, variant = k.fma_chains(chains), f"fma c{chains}"
        for warps in FMA_WARPS:
            threads = 32 * warps
            out = cuda.device_array(sms * threads, np.float32)
            args = (out, np.int64(1), k.FMA_A, k.FMA_B)
            _residency(run, variant, kernel, args, threads, 1, cap=False)
            trips = FMA_TRIPS * (4 if warps < 8 else 1)
            poison(out)
            def launch(_, c=chains, t=threads, n=trips, out=out):
                k.fma_chains_launch(c, out, sms, t, n)

            run.time(variant, launch, size=sms * threads, param=warps, bytes_moved=0,
                     flops=k.fma_chains_flops(chains, sms, threads, trips))
            if np.isnan(out.copy_to_host()).any():
                raise AssertionError(f"{variant} at {warps} warps left outputs unwritten")
            # The arithmetic, on a short run (the reference is NumPy, step by step)
            poison(out)
            k.fma_chains_launch(chains, out, sms, threads, 1)
            sample = np.arange(0, out.size, max(1, out.size // 7))
            if not np.array_equal(out.copy_to_host()[sample], k.fma_chains_reference(sample, chains, 1)):
                raise AssertionError(f"{variant} at {warps} warps differs from the float32 FMA reference")


SECTIONS = (
    Section("latency", _latency),
    Section("copies", _copies),
    Section("register pressure", _pressure),
    Section("persistent copies", _persistent),
    Section("warp queue", _queue),
    Section("cupy copy", _cupy_copy),
    Section("fma chains", _fma),
)


# ------------------------------------------------------------------------ Nsight Compute

NCU_METRICS = (
    "launch__registers_per_thread", "launch__shared_mem_per_block_dynamic", "launch__block_size",
    "launch__grid_size", "launch__occupancy_limit_registers", "launch__occupancy_limit_shared_mem",
    "launch__occupancy_limit_warps", "launch__occupancy_limit_blocks",
    "sm__maximum_warps_per_active_cycle_pct", "sm__warps_active.avg.pct_of_peak_sustained_active",
    "sm__warps_active.avg.per_cycle_active", "dram__throughput.avg.pct_of_peak_sustained_elapsed",
    "dram__bytes.sum.per_second", "sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active",
    "smsp__inst_executed_pipe_fma.sum", "gpu__time_duration.sum",
    # why one FMA chain per thread stalls (warp state per issued instruction), and which FMA pipe ran it
    "smsp__issue_active.avg.pct_of_peak_sustained_active",
    "smsp__inst_executed_pipe_fmaheavy.sum", "smsp__inst_executed_pipe_fmalite.sum",
    "smsp__average_warps_issue_stalled_wait_per_issue_active.ratio",
    "smsp__average_warps_issue_stalled_math_pipe_throttle_per_issue_active.ratio",
    "smsp__average_warps_issue_stalled_dispatch_stall_per_issue_active.ratio",
    "smsp__average_warps_issue_stalled_not_selected_per_issue_active.ratio",
    "smsp__average_warps_issue_stalled_short_scoreboard_per_issue_active.ratio",
    "smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio",
    "smsp__average_warps_issue_stalled_lg_throttle_per_issue_active.ratio",
    # resident and eligible warps per scheduler, measured (the recording of bce5c2d derives eligible)
    "smsp__warps_active.avg.per_cycle_active", "smsp__warps_eligible.avg.per_cycle_active",
)
NCU_ELEMENTS = 2**26  # 256 MiB per buffer: 4x the L2, and quick for ncu to save and restore per replay
NCU_COPIES = (("copy w16 u4", 256, 2), ("copy w16 u24", 256, 8))  # (variant, block, blocks per SM)
NCU_FMAS = ((8, 8), (1, 8), (1, 32), (2, 32))  # (chains, warps per SM)


def ncu_case_name(variant: str, block: int, blocks_per_sm: int) -> str:
    return f"{variant}, block {block}, {blocks_per_sm} blocks/SM"


def fma_case_name(chains: int, warps: int) -> str:
    return f"fma c{chains}, {warps} warps/SM"


def ncu_cases(elements: int = NCU_ELEMENTS, trips: int = FMA_TRIPS, sms: int | None = None) -> list[ncu.Case]:
    """The low-occupancy winners, one launch each, on the lesson's launch shapes: the 16-byte copy at
    16 warps/SM by shared memory (u4) and by registers (u24); FMA chains on one block per SM.

    Buffers are made on the first launch (making the cases costs nothing) by copies from the host,
    which ncu does not profile; outputs start as NaN and each case checks its result afterwards.
    The defaults are the recording's; smaller ones run the same cases on the simulator."""
    sms = sms or device_info().sms
    limits = occ.sm_limits()
    made: dict = {}

    def copy_buffers():
        if "x" not in made:
            x_host = np.random.default_rng(0).standard_normal(elements, dtype=np.float32)
            made["x_host"], made["x"] = x_host, cuda.to_device(x_host)
            made["out"] = cuda.to_device(np.full(elements, np.nan, np.float32))
        return made["x"], made["out"]

    cases = []
    for variant, block, per_sm in NCU_COPIES:
        unroll = parse_variant(variant)["unroll"]
        kernel = k.copy_ilp(unroll, True)

        def launch(kernel=kernel, unroll=unroll, block=block, per_sm=per_sm):
            x, out = copy_buffers()
            out.copy_to_device(np.full(elements, np.nan, np.float32))
            shared, opt_in, _ = launch_shape(limits, block, per_sm, 0)
            if opt_in:
                k.allow_dynamic_shared(kernel, (x, out), limits.shared_per_block_optin)
            k.copy_ilp_launch(unroll, True, x, out, block, shared)

        cases.append(ncu.Case(ncu_case_name(variant, block, per_sm), kernel.__name__, launch,
                              check=lambda: np.array_equal(made["out"].copy_to_host(), made["x_host"])))
    for chains, warps in NCU_FMAS:
        threads, blocks = 32 * min(warps, 32), sms * max(1, warps // 32)
        result = {}

        def launch(chains=chains, threads=threads, blocks=blocks, result=result):
            result["out"] = cuda.to_device(np.full(blocks * threads, np.nan, np.float32))
            k.fma_chains_launch(chains, result["out"], blocks, threads, trips)

        cases.append(ncu.Case(fma_case_name(chains, warps), k.fma_chains(chains).__name__, launch,
                              check=lambda result=result: not np.isnan(result["out"].copy_to_host()).any()))
    return cases


# ------------------------------------------------------------------------------- analysis


def sm_clock_mhz(meta: dict) -> float:
    """The SM clock the timings ran at: observed during the run (NVML) when recorded, else the max."""
    return float(meta.get("sm_clock_now_mhz") or meta["sm_clock_mhz"])


def sm_limits(result: LessonResult) -> occ.SMLimits:
    """The SM limits of the GPU the result was measured on (``facts.sm_limits``)."""
    return occ.SMLimits.from_dict(result.evidence.fact("sm_limits"),
                                  source=f"{result.meta.get('gpu', 'the GPU')} ({result.evidence.origin})")


def latencies(result: LessonResult) -> pd.DataFrame:
    """Latency per level: the time of 2S steps minus the time of S steps, over S (no launch cost);
    in ns and in cycles of the SM clock of the run."""
    table, rows = result.table, []
    mhz = sm_clock_mhz(result.meta)
    for level in LEVELS:
        chase = table[table["variant"] == f"chase {level}"].sort_values("size")
        if len(chase) < 2:
            continue
        short, long = chase.iloc[0], chase.iloc[-1]
        ns = (long["median_ms"] - short["median_ms"]) * 1e6 / (long["size"] - short["size"])
        rows.append({"level": level, "latency_ns": ns, "latency_cycles": ns * mhz / 1e3,
                     "footprint": short["param"], "steps": int(long["size"] - short["size"])})
    if not rows:
        raise RecordingError(f"{result.source}: no pointer chase rows (variants 'chase DRAM' ...)")
    return pd.DataFrame(rows)


def latency(result: LessonResult, level: str, unit: str = "ns") -> float:
    """One level's latency (DRAM, L2, L1, FMA) in ns or cycles; a missing level names the recording."""
    levels = latencies(result).set_index("level")
    if level not in levels.index:
        raise RecordingError(f"{result.source}: no 'chase {level}' rows (levels: {', '.join(levels.index)})")
    return float(levels.loc[level, "latency_ns" if unit == "ns" else "latency_cycles"])


def copy_ceiling(result: LessonResult) -> float:
    """The measured bandwidth ceiling: the best copy of this run, ours or CuPy's."""
    table = result.table
    copies = table[table["variant"].str.startswith(("copy", "cupy copy"))]
    if copies.empty:
        raise RecordingError(f"{result.source}: no copy rows")
    return float(copies["gbps"].max())


def cupy_copy_gbps(result: LessonResult) -> float:
    rows = result.table.loc[result.table["variant"] == "cupy copy", "gbps"]
    if rows.empty:
        raise RecordingError(f"{result.source}: no 'cupy copy' row (a run without CuPy)")
    return float(rows.iloc[0])


def memory_points(result: LessonResult) -> pd.DataFrame:
    """Every one-shot copy as a point: bytes in flight per SM, measured GB/s, Little's Law's GB/s.

    error = measured / predicted - 1; implied_latency_ns = the latency at which Little's Law would
    give the measured bandwidth (it grows as the memory system fills: queues). attrs: latency_ns (the
    DRAM chase), ceiling_gbps, sms, light_load_latency_ns (the median implied latency of the copies
    far below the knee)."""
    table = result.table
    lat, ceiling, sms = latency(result, "DRAM"), copy_ceiling(result), int(result.meta["sms"])
    rows = []
    for _, row in table[table["variant"].str.startswith("copy ")].iterrows():
        f = parse_variant(row["variant"])
        inflight = k.bytes_in_flight_per_sm(row["param"], f["unroll"], f["width"])
        rows.append({"variant": row["variant"], "width": f["width"], "unroll": f["unroll"],
                     "max_registers": f.get("max_registers"), "warps_per_sm": row["param"],
                     "bytes_in_flight_per_sm": inflight, "gbps": row["gbps"]})
    if not rows:
        raise RecordingError(f"{result.source}: no one-shot copy rows ('copy w4 u1' ...)")
    points = pd.DataFrame(rows)
    points["predicted_gbps"] = k.littles_law_gbps(points["bytes_in_flight_per_sm"], lat, sms, ceiling)
    points["error"] = points["gbps"] / points["predicted_gbps"] - 1
    points["implied_latency_ns"] = 2 * points["bytes_in_flight_per_sm"] * sms / points["gbps"]
    light = points["predicted_gbps"] < ceiling / 4  # far below the knee: the memory system idles
    points.attrs.update(latency_ns=lat, ceiling_gbps=ceiling, sms=sms,
                        light_load_latency_ns=float(points.loc[light, "implied_latency_ns"].median()))
    return points.sort_values("bytes_in_flight_per_sm").reset_index(drop=True)


def sweep_points(result: LessonResult) -> pd.DataFrame:
    """memory_points of the main sweep: unroll 1-8, no register cap (the Little's Law chart).
    attrs: those of memory_points, knee_bytes_per_sm (what the ceiling needs at the light-load latency)
    and below_knee_fit (below_knee_fit of these points)."""
    points = memory_points(result)
    keep = points["max_registers"].isna() & points["unroll"].isin(UNROLLS)
    sweep = points[keep].reset_index(drop=True)
    sweep.attrs.update(points.attrs)
    sweep.attrs["knee_bytes_per_sm"] = bytes_needed_per_sm(
        sweep.attrs["ceiling_gbps"], sweep.attrs["light_load_latency_ns"], sweep.attrs["sms"])
    sweep.attrs["below_knee_fit"] = below_knee_fit(sweep)
    return sweep


def below_knee_fit(points: pd.DataFrame) -> dict:
    """A line through the copies below the knee (bytes in flight per SM <= attrs knee_bytes_per_sm) on
    log-log axes: log GB/s = intercept + slope x log bytes. Little's Law at one fixed latency has slope 1;
    a slope under 1 means the latency grows with the load. Also: copies, from_bytes, to_bytes, and
    ratio_by_bytes (median measured / predicted at the chase latency per bytes in flight)."""
    below = points[points["bytes_in_flight_per_sm"] <= points.attrs["knee_bytes_per_sm"]]
    if len(below) < 2:
        raise RecordingError("fewer than two copies below the knee: no line to fit")
    slope, intercept = np.polyfit(np.log(below["bytes_in_flight_per_sm"]), np.log(below["gbps"]), 1)
    ratios = (below["gbps"] / below["predicted_gbps"]).groupby(below["bytes_in_flight_per_sm"]).median()
    return {"slope": float(slope), "intercept": float(intercept), "copies": len(below),
            "from_bytes": float(below["bytes_in_flight_per_sm"].min()),
            "to_bytes": float(below["bytes_in_flight_per_sm"].max()), "ratio_by_bytes": ratios.to_dict()}


COPY_KINDS = {"copy": "one-shot", "copy_persistent": "grid-stride", "copy_queue": "warp queue"}


def low_occupancy_copies(result: LessonResult, warps: int = LOW_OCCUPANCY_WARPS) -> pd.DataFrame:
    """Every 16-byte copy of the run at <= ``warps`` resident warps per SM against CuPy's copy of
    the same run, best first: kind (one-shot, grid-stride, warp queue), unroll, chunks per claim,
    register cap, warps per SM, GB/s, of_copyto and whether it reaches TARGET_OF_COPYTO.
    Empty when the table has no CuPy copy (a run without CuPy)."""
    table = result.table
    columns = ["variant", "kind", "unroll", "chunks_per_claim", "max_registers", "warps_per_sm", "gbps",
               "of_copyto", "meets_target"]
    cupy = table.loc[table["variant"] == "cupy copy", "gbps"]
    rows = []
    for _, row in table.iterrows():
        if row["variant"].split()[0] not in COPY_KINDS:  # chases, FMAs, CuPy
            continue
        f = parse_variant(row["variant"])
        if f.get("width") != 16 or not row["param"] <= warps:
            continue
        rows.append({"variant": row["variant"], "kind": COPY_KINDS[f["kind"]], "unroll": f["unroll"],
                     "chunks_per_claim": f.get("chunks_per_claim"), "max_registers": f.get("max_registers"),
                     "warps_per_sm": int(row["param"]), "gbps": row["gbps"]})
    if cupy.empty or not rows:
        return pd.DataFrame(columns=columns)
    frame = pd.DataFrame(rows).astype({"chunks_per_claim": "Int64", "max_registers": "Int64"})
    frame["of_copyto"] = frame["gbps"] / float(cupy.iloc[0])
    frame["meets_target"] = frame["of_copyto"] >= TARGET_OF_COPYTO
    return frame[columns].sort_values("of_copyto", ascending=False).reset_index(drop=True)


def best_low_occupancy(result: LessonResult, warps: int = LOW_OCCUPANCY_WARPS) -> pd.DataFrame:
    """The best copy of each kind at <= ``warps`` warps per SM (rows of low_occupancy_copies)."""
    copies = low_occupancy_copies(result, warps)
    return copies.groupby("kind", sort=False).head(1).reset_index(drop=True)


def bytes_needed_per_sm(gbps: float, latency_ns: float, sms: int) -> float:
    """Little's Law turned around: the read bytes each SM must keep in flight for a copy to move
    ``gbps`` (reads + writes; half of it reads) at a latency of ``latency_ns``."""
    return gbps / 2 * latency_ns / sms  # GB/s x ns = bytes


def implied_latencies(result: LessonResult) -> pd.DataFrame:
    """The sweep's copies (sweep_points) as load against latency: load = GB/s / ceiling, and
    past_knee where the bytes in flight exceed what the ceiling needs at the light-load latency
    (bytes_needed_per_sm). Past the knee the implied latency is not a memory latency: the count of
    bytes in flight is what the kernel's threads ask for, and what the memory cannot take yet waits
    in the SM. attrs: those of memory_points, and knee_bytes_per_sm."""
    points = sweep_points(result)
    attrs = points.attrs
    knee = attrs["knee_bytes_per_sm"]
    points = points.assign(load=points["gbps"] / attrs["ceiling_gbps"],
                           past_knee=points["bytes_in_flight_per_sm"] > knee)
    points.attrs.update(attrs, knee_bytes_per_sm=knee)
    return points


def occupancy_rule(result: LessonResult, simple: str = "copy w4 u1", kinds=tuple(COPY_KINDS)) -> pd.DataFrame:
    """Copies against resident warps per SM, as a share of cupy.copyto: at each residency the run
    has, the best copy of any kind (one-shot, grid-stride, warp queue; any width) and ``simple`` (one
    4-byte load per thread); ``kinds`` (keys of COPY_KINDS) limits the best copy to those kinds, e.g.
    ("copy",) for the one-shot ``copy_ilp`` copies alone. Columns: warps_per_sm, occupancy (of the SM's
    warp slots), best_variant, best_gbps, best_of_copyto, simple_gbps, simple_of_copyto (NaN where the
    run has no such row).
    attrs: copyto_gbps, max_warps_per_sm, simple, kinds."""
    table, copyto = result.table, cupy_copy_gbps(result)
    most = sm_limits(result).max_warps_per_sm
    copies = table[table["variant"].str.split().str[0].isin(kinds)]
    rows = []
    for warps, group in copies.groupby("param"):
        best = group.loc[group["gbps"].idxmax()]
        mine = group.loc[group["variant"] == simple, "gbps"]
        simple_gbps = float(mine.iloc[0]) if len(mine) else np.nan
        rows.append({"warps_per_sm": int(warps), "occupancy": warps / most, "best_variant": best["variant"],
                     "best_gbps": float(best["gbps"]), "best_of_copyto": float(best["gbps"]) / copyto,
                     "simple_gbps": simple_gbps, "simple_of_copyto": simple_gbps / copyto})
    if not rows:
        raise RecordingError(f"{result.source}: no copy rows")
    frame = pd.DataFrame(rows).sort_values("warps_per_sm").reset_index(drop=True)
    frame.attrs.update(copyto_gbps=copyto, max_warps_per_sm=most, simple=simple, kinds=tuple(kinds))
    return frame


def ilp_timeline(loads_in_flight: int, elements: int = 4, latency_ns: float = 341.0,
                 issue_ns: float = 2.0) -> pd.DataFrame:
    """The lesson's model of one thread copying ``elements`` elements with ``loads_in_flight``
    independent loads at a time (a concept picture, no GPU): a group's loads issue ``issue_ns`` apart;
    each one's data is ready ``latency_ns`` after it issued; the group's stores issue one per
    ``issue_ns`` after its last load is ready, and the next group's loads follow the stores.
    Rows: element, group, issue_ns, ready_ns, store_ns. attrs: done_ns (the last store), loads_in_flight,
    average_in_flight (Little's Law's 'in flight': the loads' waiting time summed, over done_ns)."""
    if loads_in_flight < 1 or elements < 1:
        raise ValueError("loads_in_flight and elements must be at least 1")
    rows, start = [], 0.0
    for group, first in enumerate(range(0, elements, loads_in_flight)):
        members = range(first, min(elements, first + loads_in_flight))
        issued = [start + issue_ns * j for j, _ in enumerate(members)]
        ready = [t + latency_ns for t in issued]
        stores = [ready[-1] + issue_ns * (j + 1) for j, _ in enumerate(members)]
        rows += [{"element": e, "group": group, "issue_ns": i, "ready_ns": r, "store_ns": st}
                 for e, i, r, st in zip(members, issued, ready, stores, strict=True)]
        start = stores[-1] + issue_ns
    timeline = pd.DataFrame(rows)
    done = float(timeline["store_ns"].max())
    waiting = float((timeline["ready_ns"] - timeline["issue_ns"]).sum())
    timeline.attrs.update(done_ns=done, loads_in_flight=loads_in_flight, average_in_flight=waiting / done,
                          label=f"1 warp x {loads_in_flight} load{'s' if loads_in_flight > 1 else ''} "
                                "at a time",
                          row="load")
    return timeline


def sweep_report(result: LessonResult) -> str:
    """Section 3's numbers, one line each: three copies against the ceiling, the levers at 1 and 8 KiB per
    SM, the light copies' latency, the simplest copy at 64 warps at that latency, and the fit below the knee
    (the readers are ``sweep_points`` and ``bytes_needed_per_sm``; the deep dive tabulates every copy)."""
    sweep = sweep_points(result)
    ceiling, sms = copy_ceiling(result), int(result.meta["sms"])
    dram_ns = latency(result, "DRAM")

    def copy_at(variant, warps):
        return sweep[(sweep["variant"] == variant) & (sweep["warps_per_sm"] == warps)].iloc[0]

    lines = []
    for variant, warps in (("copy w4 u1", 64), ("copy w16 u1", 16), ("copy w16 u4", 16)):
        row = copy_at(variant, warps)
        kib = row["bytes_in_flight_per_sm"] / 1024
        lines.append(f"{variant:11s} at {warps:2d} warps/SM: {kib:4.0f} KiB per SM, "
                     f"{row['gbps']:5,.0f} GB/s = {row['gbps'] / ceiling:.3f} of the ceiling")
    at1k = sweep[sweep["bytes_in_flight_per_sm"] == 1024]
    spread = at1k["gbps"].max() / at1k["gbps"].min()
    lines.append(f"at 1 KiB per SM, {len(at1k)} copies: the fastest is {spread:.3f}x the slowest")
    at8k = sweep[sweep["bytes_in_flight_per_sm"] == 8192].sort_values("gbps")
    slow, fast = at8k.iloc[0], at8k.iloc[-1]
    lines.append(f"at 8 KiB per SM: {fast['variant']} at {fast['warps_per_sm']:.0f} warps "
                 f"{fast['gbps']:,.0f} GB/s, "
                 f"{slow['variant']} at {slow['warps_per_sm']:.0f} warps {slow['gbps']:,.0f} GB/s: "
                 f"{fast['gbps'] / slow['gbps']:.2f}x")
    light = sweep[sweep["predicted_gbps"] < ceiling / 4]
    light_ns, fit = sweep.attrs["light_load_latency_ns"], sweep.attrs["below_knee_fit"]
    lines.append(f"far below the knee ({len(light)} copies): measured / predicted "
                 f"{(light['gbps'] / light['predicted_gbps']).median():.2f} (median); they imply "
                 f"{light_ns:.0f} ns, "
                 f"{light_ns / dram_ns:.2f}x the chase, where the ceiling needs "
                 f"{sweep.attrs['knee_bytes_per_sm'] / 1024:.1f} KiB per SM")
    below = sweep[sweep["bytes_in_flight_per_sm"] <= sweep.attrs["knee_bytes_per_sm"]]
    at_light = np.minimum(ceiling, 2 * below["bytes_in_flight_per_sm"] * sms / light_ns)
    simple = copy_at("copy w4 u1", 64)
    simple_at_light = 2 * simple["bytes_in_flight_per_sm"] * sms / light_ns
    implied_ns = simple["implied_latency_ns"]
    lines.append(f"copy w4 u1 at 64 warps/SM at {light_ns:.0f} ns: {simple_at_light:,.0f} GB/s predicted "
                 f"({simple_at_light / ceiling:.3f} of the ceiling), {simple['gbps']:,.0f} measured "
                 f"({simple['gbps'] / ceiling:.3f}); it implies {implied_ns:.0f} ns, where the ceiling needs "
                 f"{bytes_needed_per_sm(ceiling, implied_ns, sms) / 1024:.1f} KiB per SM")
    ratio = below["gbps"] / below["predicted_gbps"]
    error = below["gbps"] / at_light - 1
    lines.append(f"below the knee ({fit['copies']} copies): fitted slope {fit['slope']:.2f}; measured / "
                 f"predicted at the chase's latency {ratio.min():.2f} to {ratio.max():.2f}; at "
                 f"{light_ns:.0f} ns, error {error.min():+.0%} to {error.max():+.0%}")
    return "\n".join(lines)


def warps_timeline(warps: int, latency_ns: float = 341.0, issue_ns: float = 2.0) -> pd.DataFrame:
    """The same model for ``warps`` warps of one load each on one scheduler (a concept picture): the
    scheduler issues one instruction per ``issue_ns``, so warp w's load issues w x ``issue_ns`` after the
    first; each store follows its own load's data. Rows as ``ilp_timeline``'s (element = the warp)."""
    if warps < 1:
        raise ValueError("warps must be at least 1")
    issued = [issue_ns * w for w in range(warps)]
    ready = [t + latency_ns for t in issued]
    timeline = pd.DataFrame({"element": range(warps), "group": 0, "issue_ns": issued, "ready_ns": ready,
                             "store_ns": [r + issue_ns for r in ready]})
    done = float(timeline["store_ns"].max())
    timeline.attrs.update(done_ns=done, loads_in_flight=warps, average_in_flight=warps * latency_ns / done,
                          label=f"{warps} warps x 1 load", row="warp")
    return timeline


def loads_in_flight(timeline: pd.DataFrame, times) -> np.ndarray:
    """How many of a timeline's loads are in flight (issued, data not yet ready) at each time."""
    t = np.asarray(times, dtype=float)[:, None]
    issued = timeline["issue_ns"].to_numpy()[None, :]
    ready = timeline["ready_ns"].to_numpy()[None, :]
    return ((issued <= t) & (t < ready)).sum(axis=1)


def claim_costs(rows: pd.DataFrame, ceiling_gbps: float, fit: pd.DataFrame | None = None) -> pd.DataFrame:
    """Warp-queue copies as the chip's time per chunk, beside a two-term model of it.

    rows: variant, unroll, chunks_per_claim (default 1), gbps (a probe's or the lesson's queue rows).
    ns_per_chunk = chunk bytes (read and written) / GB/s: the time the whole chip takes per chunk.
    The model: ns = ns_claim / chunks_per_claim + ns_float4 x unroll, one claim from the single
    counter shared by the chunks it covers, plus the chunk's data; fitted by least squares on ``fit``
    (default: rows). predicted_gbps = chunk bytes / model ns, capped by the ceiling;
    error = measured / predicted - 1.
    """
    def with_times(frame):
        frame = frame.copy()
        if "chunks_per_claim" not in frame:
            frame["chunks_per_claim"] = 1
        frame["chunks_per_claim"] = frame["chunks_per_claim"].fillna(1).astype(int)
        frame["chunk_bytes"] = 2 * 32 * 16 * frame["unroll"].astype(int)
        frame["ns_per_chunk"] = frame["chunk_bytes"] / frame["gbps"]  # bytes / (GB/s) = ns
        return frame

    rows, basis = with_times(rows), with_times(rows if fit is None else fit)
    design = np.column_stack([1 / basis["chunks_per_claim"], basis["unroll"]])
    (ns_claim, ns_float4), *_ = np.linalg.lstsq(design, basis["ns_per_chunk"].to_numpy(), rcond=None)
    rows["model_ns"] = ns_claim / rows["chunks_per_claim"] + ns_float4 * rows["unroll"]
    rows["predicted_gbps"] = np.minimum(ceiling_gbps, rows["chunk_bytes"] / rows["model_ns"])
    rows["error"] = rows["gbps"] / rows["predicted_gbps"] - 1
    rows.attrs.update(ns_claim=float(ns_claim), ns_float4=float(ns_float4), ceiling_gbps=ceiling_gbps)
    return rows.reset_index(drop=True)


COPY_PROBE = "littles_law_copy_probe"  # data/<gpu>/probes/: the retired benchmarks/littles_law_copy_probe.py


def probe_queue_rows(probe: ProbeData) -> pd.DataFrame:
    """The copy probe's warp-queue copies at 16 warps/SM in blocks of 256 (one claim per chunk)."""
    data = probe.data
    queues = data["variant"].str.startswith("queue")
    asked = data[queues & (data["block"] == 256) & (data["warps_per_sm"] == 16)]
    if asked.empty:
        raise RecordingError(f"{probe.source}: no warp-queue rows at 16 warps/SM in blocks of 256")
    return asked.reset_index(drop=True)


def probe_copyto_gbps(probe: ProbeData) -> float:
    """The probe's cupy.copyto (the mean of its runs at the start and the end)."""
    copyto = probe.data.loc[probe.data["variant"].str.startswith("cupy"), "gbps"]
    if copyto.empty:
        raise RecordingError(f"{probe.source}: no cupy rows")
    return float(copyto.mean())


def probe_claim_costs(probe: ProbeData) -> pd.DataFrame:
    """The probe's warp-queue copies held to the claim model, fitted on the queues of < 16 float4
    per lane (results.read_probe(COPY_PROBE)); capped by the probe's cupy.copyto."""
    asked = probe_queue_rows(probe)
    return claim_costs(asked, probe_copyto_gbps(probe), fit=asked[asked["unroll"] < 16])


def queue_claim_costs(result: LessonResult, probe: ProbeData) -> pd.DataFrame:
    """The lesson's warp-queue rows held to the claim model the probe fitted (capped by this run's
    cupy.copyto): does a model fitted on one run predict another?"""
    copies = low_occupancy_copies(result)
    queue = copies[copies["kind"] == "warp queue"]
    if queue.empty:
        raise RecordingError(f"{result.source}: no warp-queue rows beside a cupy copy")
    asked = probe_queue_rows(probe)
    return claim_costs(queue, cupy_copy_gbps(result), fit=asked[asked["unroll"] < 16])


def fma_points(result: LessonResult) -> pd.DataFrame:
    """FMA chains x resident warps: share of the theoretical peak, and the 4-scheduler model's
    (Little's Law per scheduler: latency x 1 FMA per cycle in flight), at the run's SM clock."""
    table, meta = result.table, result.meta
    cycles = latency(result, "FMA", unit="cycles")
    peak = float(meta["peak_fp32_gflops"])
    at_run_clock = sm_clock_mhz(meta) / float(meta["sm_clock_mhz"])  # the peak is at the max clock
    rows = table[table["variant"].str.startswith("fma ")].copy()
    if rows.empty:
        raise RecordingError(f"{result.source}: no FMA chain rows ('fma c1' ...)")
    rows["chains"] = [parse_variant(v)["chains"] for v in rows["variant"]]
    rows["warps_per_sm"] = rows["param"].astype(int)
    rows["fraction_of_peak"] = rows["gflops"] / peak
    model = k.fma_model_fraction(rows["warps_per_sm"], rows["chains"], cycles)
    rows["predicted_fraction"] = model * at_run_clock
    rows["error"] = rows["fraction_of_peak"] / rows["predicted_fraction"] - 1
    out = rows[["variant", "chains", "warps_per_sm", "gflops", "fraction_of_peak", "predicted_fraction",
                "error"]]
    out.attrs.update(latency_cycles=cycles)
    return out.reset_index(drop=True)


# ------------------------------------------------------------ kernels, SASS, occupancy

SASS_OPS = ("LDG.E.128", "LDG.E.64", "LDG.E", "STG.E.128", "STG.E.64", "STG.E", "LDL", "STL", "FFMA")


def sass_widths(counts: dict) -> dict:
    """A kernel's SASS opcode counts folded into what the lesson shows: global loads and stores by
    width (LDG.E.128 is not an LDG.E), local loads and stores (spills), FFMA.

    Takes ``kernels.<name>.sass.counts`` as any recording keeps them: the whole opcode mix of a
    ``gpu-lessons record`` run (``LDG.E.128.CONSTANT``, ``STL.64``, ``IMAD.WIDE``, ...), or the folded
    counts of the recording migrated from before (folding them again changes nothing)."""
    folded = dict.fromkeys(SASS_OPS, 0)
    for opcode, count in counts.items():
        base = opcode.split(".")[0]
        if base in ("LDL", "STL", "FFMA"):
            folded[base] += count
        elif base in ("LDG", "STG"):
            width = ".128" if ".128" in opcode else ".64" if ".64" in opcode else ""
            folded[f"{base}.E{width}"] += count
    return folded


def kernel_resources_table(result: LessonResult) -> pd.DataFrame:
    """Every kernel's registers, shared and local memory as the GPU compiler reported them, with its
    SASS instruction counts by width (``sass_widths``; columns only where some kernel has one)."""
    rows, resources = [], ("registers", "shared_bytes", "local_bytes")
    for name, entry in result.evidence.kernels.items():
        row = {"kernel": name, **{key: entry.get(key) for key in resources}}
        row.update(sass_widths(entry.get("sass", {}).get("counts", {})))
        rows.append(row)
    if not rows:
        raise RecordingError(f"{result.evidence.origin}: no kernels recorded")
    frame = pd.DataFrame(rows)
    empty = [op for op in SASS_OPS if not frame[op].any()]
    return frame.drop(columns=empty)


def recorded_resources(gpu: str | None = None) -> pd.DataFrame:
    """kernel_resources_table of a GPU's recording of this lesson (gpu=None: the reference GPU)."""
    return kernel_resources_table(read_result(NAME, gpu=gpu))


def sass_lines(result: LessonResult, kernel: str) -> list[str]:
    """The memory instructions of a kernel's SASS, as recorded (``kernels.<kernel>.sass.lines``)."""
    lines = result.evidence.kernel(kernel).get("sass", {}).get("lines")
    if not lines:
        raise RecordingError(f"{result.evidence.origin}: kernels.{kernel}.sass.lines is missing")
    return lines


def register_pressure(result: LessonResult) -> pd.DataFrame:
    """Registers, local memory, spills in SASS (LDL/STL), the calculator's residency in blocks of 256
    and GB/s (at the most warps the run gave it) of the 16-byte one-shot copies, by unroll then register
    cap (uncapped first). attrs: ceiling_gbps (the best copy of the run), copyto_gbps (CuPy's; None
    without it)."""
    limits, table = sm_limits(result), result.table
    rows = []
    for variant, entry in result.evidence.kernels.items():
        if not variant.startswith("copy w16"):
            continue
        f = parse_variant(variant)
        measured = table[table["variant"] == variant]
        most_warps = measured.loc[measured["param"].idxmax()] if len(measured) else None
        o = calculated_occupancy(k.COPY_BLOCK, entry["registers"], entry["shared_bytes"], limits)
        spills = sass_widths(entry.get("sass", {}).get("counts", {}))
        rows.append({"variant": variant, "unroll": f["unroll"], "max_registers": f.get("max_registers"),
                     "registers": entry["registers"], "local_bytes": entry["local_bytes"],
                     "LDL": spills["LDL"], "STL": spills["STL"], "warps_per_sm": o.warps_per_sm,
                     "limiter": o.limiter, "gbps": None if most_warps is None else float(most_warps["gbps"])})
    if not rows:
        raise RecordingError(f"{result.evidence.origin}: no 16-byte copy kernels ('copy w16 u1' ...)")
    frame = pd.DataFrame(rows).astype({"max_registers": "Int64", "gbps": float})
    frame = frame.sort_values(["unroll", "max_registers"], na_position="first").reset_index(drop=True)
    copyto = result.table.loc[result.table["variant"] == "cupy copy", "gbps"]
    frame.attrs.update(ceiling_gbps=copy_ceiling(result),
                       copyto_gbps=float(copyto.iloc[0]) if len(copyto) else None)
    return frame


def occupancy_comparison(result: LessonResult) -> pd.DataFrame:
    """Every launch shape of the run, the calculator's blocks per SM beside the driver's
    (``facts.occupancy``): kernel, block, dynamic shared bytes, registers, both answers, the
    calculator's limiter, resident warps per SM by each, and whether they agree."""
    frame = pd.DataFrame(result.evidence.fact("occupancy"))
    warps_per_block = -(-frame["block"] // 32)
    frame["warps_calculator"] = frame["calculator"] * warps_per_block
    frame["warps_driver"] = frame["driver"] * warps_per_block
    frame["agree"] = frame["calculator"] == frame["driver"]
    frame.attrs["disagreements"] = int(result.evidence.fact("occupancy_disagreements"))
    return frame


def occupancy_staircase(result: LessonResult, block: int = k.COPY_BLOCK,
                        registers=range(1, 256)) -> pd.DataFrame:
    """Resident blocks and warps per SM against registers per thread for one block size, from the
    occupancy calculator on the result's SM limits (no GPU): registers, blocks_per_sm, warps_per_sm,
    fraction, limiter; a block that no longer fits has 0."""
    limits = sm_limits(result)
    rows = []
    for count in registers:
        o = calculated_occupancy(block, count, 0, limits)
        rows.append({"registers": count, "blocks_per_sm": o.blocks_per_sm, "warps_per_sm": o.warps_per_sm,
                     "fraction": o.fraction, "limiter": o.limiter})
    steps = pd.DataFrame(rows)
    steps.attrs.update(block=block, limits=limits)
    return steps


def staircase_kernels(result: LessonResult, prefix: str = "copy w16 u") -> pd.DataFrame:
    """The lesson's uncapped kernels whose name starts with ``prefix``, placed on the staircase: name,
    registers, local bytes, resident warps per SM in blocks of 256 (the calculator's)."""
    limits = sm_limits(result)
    rows = [{"kernel": name, "registers": entry["registers"], "local_bytes": entry["local_bytes"],
             "warps_per_sm": calculated_occupancy(k.COPY_BLOCK, entry["registers"], entry["shared_bytes"],
                                                  limits).warps_per_sm}
            for name, entry in result.evidence.kernels.items()
            if name.startswith(prefix) and "maxreg" not in name]
    return pd.DataFrame(rows, columns=["kernel", "registers", "local_bytes", "warps_per_sm"]) \
        .sort_values("registers").reset_index(drop=True)


def residency_shapes(result: LessonResult, registers: int = 32) -> pd.DataFrame:
    """How the copies' residency targets are launched (RESIDENCY): block, the dynamic shared bytes
    that cap the blocks per SM, whether the kernel must opt in, and the calculator's answer for a
    kernel of ``registers`` registers per thread."""
    limits = sm_limits(result)
    rows = []
    for block, per_sm in RESIDENCY:
        shared, opt_in, o = launch_shape(limits, block, per_sm, registers)
        rows.append({"block": block, "blocks_asked": per_sm, "dynamic_shared": shared, "opt_in": opt_in,
                     "blocks_per_sm": o.blocks_per_sm, "warps_per_sm": o.warps_per_sm, "limiter": o.limiter})
    return pd.DataFrame(rows)


# ------------------------------------------------------------------- Nsight Compute's view

STALL_PREFIX, STALL_SUFFIX = "smsp__average_warps_issue_stalled_", "_per_issue_active.ratio"
RESIDENT = "sm__warps_active.avg.per_cycle_active"
ISSUE_ACTIVE = "smsp__issue_active.avg.pct_of_peak_sustained_active"
ELIGIBLE = "smsp__warps_eligible.avg.per_cycle_active"


def ncu_counters(result: LessonResult) -> pd.DataFrame:
    """Nsight Compute's counters of the lesson's cases: one row per metric, one column per case."""
    counters = result.evidence.ncu_table()
    if counters.empty:
        raise RecordingError(f"{result.evidence.origin}: no ncu counters (gpu-lessons record {NAME} --ncu)")
    return counters.pivot(index="metric", columns="case", values="value")


NCU_LIMITS = {"registers": "launch__occupancy_limit_registers",
              "shared memory": "launch__occupancy_limit_shared_mem",
              "warps": "launch__occupancy_limit_warps", "blocks": "launch__occupancy_limit_blocks"}


def ncu_residency(result: LessonResult, case: str) -> dict:
    """The residency Nsight Compute reports for a profiled case: blocks per SM (the least of its
    occupancy limits, or of the grid's blocks per SM when the grid is smaller), warps per SM, and what
    limits it ('registers', 'shared memory', 'warps', 'blocks' or 'grid'). The case's name says how
    many blocks the launch asked for; this is what it got."""
    value = result.evidence.ncu_value
    by = {name: value(case, metric) for name, metric in NCU_LIMITS.items()}
    limiter = min(by, key=by.get)
    grid = value(case, "launch__grid_size") / int(result.meta["sms"])
    blocks = by[limiter]
    if grid < blocks:
        blocks, limiter = grid, "grid"
    warps = blocks * -(-value(case, "launch__block_size") // 32)
    return {"blocks_per_sm": blocks, "warps_per_sm": warps, "limiter": limiter}


def ncu_case_label(result: LessonResult, case: str) -> str:
    """A profiled case in words, with the residency it got: 'copy, 24 float4 per thread: 16 warps/SM
    (registers)'; 'FMA, 8 chains per thread: 8 warps/SM'."""
    kernel_variant = case.split(",")[0]
    got = ncu_residency(result, case)
    f = parse_variant(kernel_variant)
    if f["kind"] == "fma":
        what = f"FMA, {f['chains']} chain{'s' if f['chains'] > 1 else ''} per thread"
    else:
        what = describe_copy(kernel_variant).replace("one-shot", "copy")
    limit = "" if got["limiter"] == "grid" else f" ({got['limiter']})"
    return f"{what}: {got['warps_per_sm']:g} warps/SM{limit}"


def warp_states(result: LessonResult) -> pd.DataFrame:
    """Per profiled case, what one warp scheduler's resident warps were doing, in warps per cycle.

    label: the case in words with the residency it got (ncu_case_label); theoretical_warps_per_sm and
    limiter: ncu_residency. resident_warps_per_sm: warps actually active per cycle (achieved occupancy).
    resident_per_scheduler: the SM's active warps per cycle / 4 schedulers. issuing: the share of
    cycles the scheduler issued (one warp each). eligible_per_scheduler: warps ready to issue,
    issuing x (1 + not_selected): a cycle that issues has the selected warp plus those eligible but
    not selected (ncu's stall ratios count warps per issuing cycle; a cycle without an eligible warp
    issues nothing). eligible_measured: smsp__warps_eligible.avg.per_cycle_active where recorded.
    stalled_<reason>: warps waiting for that reason per cycle (ratio x issuing); long_scoreboard is
    a wait for memory (an LDG's data), wait a fixed-latency dependency (the FMA before). top_stall:
    the largest; accounted: issuing + every stall counted, against resident (the reasons not
    recorded are the rest)."""
    rows = []
    for case in result.evidence.ncu:
        metrics = result.evidence.ncu_case(case)["metrics"]
        issuing = result.evidence.ncu_value(case, ISSUE_ACTIVE) / 100
        stalls = {name.removeprefix(STALL_PREFIX).removesuffix(STALL_SUFFIX): value * issuing
                  for name, value in metrics.items() if name.startswith(STALL_PREFIX)}
        resident = result.evidence.ncu_value(case, RESIDENT) / 4
        got = ncu_residency(result, case)
        row = {"case": case, "label": ncu_case_label(result, case),
               "kernel": result.evidence.ncu_case(case)["kernel"],
               "theoretical_warps_per_sm": got["warps_per_sm"], "limiter": got["limiter"],
               "resident_warps_per_sm": 4 * resident, "resident_per_scheduler": resident, "issuing": issuing,
               "eligible_per_scheduler": issuing + stalls.get("not_selected", 0.0),
               "eligible_measured": metrics.get(ELIGIBLE, np.nan)}
        row.update({f"stalled_{reason}": value for reason, value in stalls.items()})
        waiting = {reason: value for reason, value in stalls.items() if reason != "not_selected"}
        row["top_stall"] = max(waiting, key=waiting.get) if waiting else ""
        row["accounted"] = (issuing + sum(stalls.values())) / resident
        rows.append(row)
    if not rows:
        raise RecordingError(f"{result.evidence.origin}: no ncu counters (gpu-lessons record {NAME} --ncu)")
    return pd.DataFrame(rows)


# -------------------------------------------------------------------------------- figures


def figures(result: LessonResult, roof: dict) -> dict:
    """The lesson's figures from a result (live or recorded), each with its alt text. ``roof`` is not
    used: the lesson's ceiling is the best copy of its own run. Figures whose evidence the result lacks
    are left out."""
    provenance = result.provenance
    dram = latency(result, "DRAM")
    figs = {
        "ilp_timeline": plots.ilp_timeline(
            [ilp_timeline(1, latency_ns=dram), warps_timeline(4, latency_ns=dram),
             ilp_timeline(4, latency_ns=dram)],
            provenance=f"the lesson's model, at the DRAM latency of {provenance}"),
        "littles_law_memory": plots.littles_law_memory(sweep_points(result), provenance=provenance),
        "implied_latency": plots.implied_latency(implied_latencies(result), provenance=provenance,
                                                 highlight=("copy w4 u1", 64)),
        "littles_law_fma": plots.littles_law_fma(fma_points(result), provenance=provenance),
    }
    if result.evidence.kernels and "sm_limits" in result.facts:
        figs["occupancy_staircase"] = plots.occupancy_staircase(
            occupancy_staircase(result), staircase_kernels(result),
            provenance=f"occupancy calculator, SM limits of {provenance}")
        figs["register_pressure"] = plots.register_pressure(register_pressure(result), provenance=provenance)
    if result.evidence.ncu:
        figs["warp_states"] = plots.warp_states(warp_states(result), provenance=ncu_provenance(result))
    if "sm_limits" in result.facts and not result.table[result.table["variant"] == "cupy copy"].empty:
        figs["occupancy_rule"] = plots.occupancy_rule(occupancy_rule(result), describe=describe_copy,
                                                      provenance=provenance)
    copies = low_occupancy_copies(result)
    if len(copies):  # judged on this table's rows (ours and CuPy's of the same run)
        shown = copies[copies["of_copyto"] >= 0.75]
        shown = shown.assign(label=[describe_copy(v, short=True) for v in shown["variant"]])
        figs["low_occupancy_copies"] = plots.low_occupancy_copies(
            shown, provenance=provenance,
            title=f"Copies at {LOW_OCCUPANCY_WARPS} warps/SM or fewer, as a share of cupy.copyto")
    return figs


def ncu_provenance(result: LessonResult) -> str:
    """The caption of a figure drawn from the result's Nsight Compute counters: the GPU and the date of
    each ncu run (the revision and command are in the evidence's ``sources``)."""
    described = []
    for source in sorted({entry["source"] for entry in result.evidence.ncu.values()}):
        info = result.evidence.source(source, result.meta)
        described.append(f"{info.get('gpu', 'GPU')}, recorded {str(info.get('date', '?'))[:10]}")
    return "Nsight Compute on " + "; ".join(described)


# -------------------------------------------------------------------------------- checks


def check() -> pd.DataFrame:
    """Every kernel of the lesson against NumPy on awkward sizes; the chase visits every node once."""
    rng = np.random.default_rng()
    rows = []
    for n in (1, 7, 1027, 2053):
        x = rng.standard_normal(n, dtype=np.float32)
        for unroll in (1, 4):  # n = 1027 and 2053 are not multiples of 4 (nor of the block)
            for vector in (False, True):
                got = k.copy(x, unroll, vector, block=64)
                rows.append(check_row(f"copy {'vec4' if vector else 'scalar'} u{unroll} n={n}",
                                      np.array_equal(got, x), "bit-exact copy, 64-thread blocks"))
        x64 = x.astype(np.float64)
        rows.append(check_row(f"copy float64 u4 n={n}", np.array_equal(k.copy(x64, 4, block=64), x64),
                              "8-byte accesses"))
        rows.append(check_row(f"copy_persistent u4 n={n}",
                              np.array_equal(k.copy_persistent_host(x, 4, blocks=2, block=64), x),
                              "grid-stride, 2 blocks of 64"))
        for per_claim in (1, 3):  # n = 2053: 4 chunks of 32 lanes x 4 float4, then 4 float4 and 1 float
            rows.append(check_row(f"copy_queue u4 r{per_claim} n={n}",
                                  np.array_equal(k.copy_queue_host(x, 4, per_claim, blocks=2, block=64), x),
                                  "pipelined warp queue, 2 blocks of 64"))
    for chains in (1, 3, 8):
        got = k.fma_chains_host(chains, 2, 48, 1)
        rows.append(check_row(f"fma_chains c{chains}", np.array_equal(got, k.fma_chains_reference(
            np.arange(96), chains, 1)), "float32 FMA chains emulated in NumPy, 2 blocks of 48"))
    chain, start = k.build_chain(4096, 100, seed=1)
    visited, j = [], start
    for _ in range(100):
        j = k.chase(chain, j, 1)
        visited.append(j)
    nodes = set(k.chain_nodes(4096, 100, seed=1).tolist())
    rows.append(check_row("pointer_chase 100 nodes", sorted(visited) == sorted(nodes) and j == start,
                          "one step per launch: every node once, then back to the start"))
    return pd.DataFrame(rows)
