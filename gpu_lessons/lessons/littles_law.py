"""Lesson 2: Little's Law. Bytes in flight = bandwidth x latency; FMAs in flight = rate x latency.

The experiment: the latencies (a dependent pointer chase through DRAM, L2 and L1; a dependent FMA
chain), then a copy swept over the three ways to put bytes in flight (resident warps per SM, loads
per thread, bytes per load) with the bandwidth Little's Law predicts from the measured latency and
ceiling; FMA chains per thread against resident warps, with the 4-scheduler model; the registers
that unrolling costs, where occupancy drops and where spills start, and ``max_registers``; at 16
warps/SM, a persistent warp queue that keeps loads in flight across chunks (``copy_queue``).
Resources, SASS counts and the SM limits are kept in the recording (``recorded_facts``).
"""

from __future__ import annotations

import re
import sys

import numpy as np
import pandas as pd

from .. import occupancy as occ
from ..kernels import littles_law as k
from ..scoreboard import Comparison
from .common import check_row, progress, timed_row

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
    ("L2", 2**24, 2**17, 4000),  # 16 MiB of lines: in the 60 MiB L2, far past the L1
    ("L1", 2**16, 2**8, 20000),  # 32 KiB of lines: in the L1
)

FLUSH_ELEMENTS = 2**27  # 512 MiB written between building the DRAM chain and timing it

LOW_OCCUPANCY_WARPS = 16  # 25% of 64
FMA_LOW_WARPS = 8  # 12.5%


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


COPY_VARIANTS = [copy_variant(w, u) for w in WIDTHS for u in UNROLLS]
PRESSURE_VARIANTS = [copy_variant(16, u) for u in PRESSURE_UNROLLS]  # residency set by their registers
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

_FACTS: dict = {}  # what measure() learned beside timings: kept in the recording's meta


def recorded_facts() -> dict:
    """Kernel resources, SASS counts, occupancy (calculator and driver), SM limits: for the meta."""
    return dict(_FACTS)


# ---------------------------------------------------------------------------- GPU: resources

SASS_OPS = ("LDG.E.128", "LDG.E.64", "LDG.E", "STG.E.128", "STG.E.64", "STG.E", "LDL", "STL", "FFMA")


def sass_counts(sass: str) -> dict:
    """How many of each interesting instruction the SASS holds (LDG.E.128 is not an LDG.E)."""
    counts = dict.fromkeys(SASS_OPS, 0)
    for line in sass.splitlines():
        match = re.search(r"\b(LDG|STG|LDL|STL|FFMA)(\.[A-Z0-9.]+)?\b", line)
        if not match:
            continue
        op, suffix = match.group(1), match.group(2) or ""
        if op in ("LDL", "STL", "FFMA"):
            counts[op] += 1
            continue
        width = ".128" if ".128" in suffix else ".64" if ".64" in suffix else ""
        counts[f"{op}.E{width}"] += 1
    return counts


def sass_excerpt(sass: str, pattern: str = r"LDG|STG|LDL|STL", most: int = 24) -> str:
    lines = [line.strip() for line in sass.splitlines() if re.search(pattern, line)]
    return "\n".join(lines[:most])


def _resources(kernel, args, key: str, sass: bool) -> dict:
    res = occ.kernel_resources(kernel, *args).as_dict()
    if sass:
        try:
            text = kernel.inspect_sass(tuple(_typeof(a) for a in args))
            res["sass"] = sass_counts(text)
            _FACTS.setdefault("sass_excerpts", {})[key] = sass_excerpt(text)
        except Exception as error:  # noqa: BLE001 - nvdisasm may be missing; resources still count
            res["sass_error"] = f"{type(error).__name__}: {error}"
    _FACTS.setdefault("kernels", {})[key] = res
    return res


def _typeof(value):
    from numba import typeof

    return typeof(value)


def _residency(kernel, args, key, block, blocks_per_sm, limits, sass=False, cap=True):
    """Launch shape for a residency target: (dynamic shared bytes, Occupancy), checked with the driver.

    cap: limit residency to blocks_per_sm with dynamic shared memory (else the grid limits it)."""
    res = _FACTS.get("kernels", {}).get(key) or _resources(kernel, args, key, sass)
    full = blocks_per_sm * block >= limits.max_threads_per_sm
    shared = 0 if full or not cap else occ.shared_to_limit(block, blocks_per_sm, limits)
    opt_in = shared > limits.shared_per_block - res["shared_bytes_per_block"]
    if opt_in:
        k.allow_dynamic_shared(kernel, args, limits.shared_per_block_optin - res["shared_bytes_per_block"])
    calc = occ.occupancy(block, res["registers_per_thread"], res["shared_bytes_per_block"] + shared, limits,
                         opt_in=opt_in)
    driver = occ.driver_blocks_per_sm(kernel, block, shared, signature=tuple(_typeof(a) for a in args))
    _FACTS.setdefault("occupancy", []).append(
        {"kernel": key, "block": block, "dynamic_shared": shared, "registers": res["registers_per_thread"],
         "calculator": calc.blocks_per_sm, "driver": driver, "limiter": calc.limiter})
    if driver != calc.blocks_per_sm:
        print(f"occupancy: calculator {calc.blocks_per_sm} vs driver {driver} blocks/SM for {key}, "
              f"block {block}, shared {shared}", file=sys.stderr)
    return shared, calc


# ----------------------------------------------------------------------------- experiment


def measure(show_progress: bool = True) -> pd.DataFrame:
    """Latencies, the copy and FMA sweeps, register pressure; returns the tidy table (checked)."""
    from numba import cuda

    from ..device import device_info
    from ..results import make_table

    _FACTS.clear()
    limits = occ.sm_limits()
    _FACTS["sm_limits"] = limits.as_dict()
    sms = device_info().sms
    rng = np.random.default_rng(2026)
    rows: list[dict] = []
    steps = ["latency", "copies", "pressure", "persistent", "queue", "cupy", "fma"]
    x_host = rng.standard_normal(COPY_ELEMENTS, dtype=np.float32)
    x = cuda.to_device(x_host)
    out = cuda.device_array_like(x)
    for step in progress(steps, NAME) if show_progress else steps:
        if step == "latency":
            rows += _latency_rows()
        elif step == "copies":
            rows += _copy_rows(x, out, limits)
        elif step == "pressure":
            rows += _pressure_rows(x, out, limits)
        elif step == "persistent":
            rows += _persistent_rows(x, out, limits, sms)
        elif step == "queue":
            rows += _queue_rows(x, out, limits, sms)
        elif step == "cupy":
            rows += _cupy_rows(x)
        else:
            rows += _fma_rows(limits, sms)
    compared = _FACTS.get("occupancy", [])
    _FACTS["occupancy_disagreements"] = sum(r["calculator"] != r["driver"] for r in compared)
    return make_table(rows)


def _latency_rows() -> list[dict]:
    from numba import cuda

    from ..kernels.util import poison

    rows = []
    flush = cuda.device_array(FLUSH_ELEMENTS, np.float32)
    for level, elements, nodes, steps in CHASES:
        chain, start = k.build_chain(elements, nodes, seed=len(rows), device=True)
        state = k.chase_state(start)
        if level == "DRAM":  # the scatter that wrote the chain left its lines in the L2: evict them
            poison(flush)
        else:  # warm pass: the whole chain once, into the cache it should hit
            k.chase_launch(chain, state, nodes)
        for count in (steps, 2 * steps):
            def launch(_, c=count, chain=chain, state=state):
                k.chase_launch(chain, state, c)

            rows.append(timed_row(NAME, f"chase {level}", launch,
                                  size=count, param=nodes * k.LINE_BYTES, bytes_moved=0, flops=0))
        cuda.synchronize()
        if level == "L1":
            _resources(k.pointer_chase, (chain, state, np.int64(1)), "pointer_chase", sass=True)
        del chain
    del flush
    out = cuda.device_array(32, np.float32)
    for trips in (FMA_LATENCY_TRIPS, 2 * FMA_LATENCY_TRIPS):
        rows.append(timed_row(NAME, "chase FMA", lambda _, t=trips: k.fma_chains_launch(1, out, 1, 32, t),
                              size=trips * k.FMA_UNROLL, param=np.nan, bytes_moved=0, flops=0))
    return rows


def _check_copy(x, out, what: str) -> None:
    try:
        import cupy as cp

        equal = bool(cp.array_equal(cp.asarray(out), cp.asarray(x)))
    except ImportError:
        equal = np.array_equal(out.copy_to_host(), x.copy_to_host())
    if not equal:
        raise AssertionError(f"{what} did not copy its input exactly")


def _copy_row(variant, launch, x, out, param):
    from ..kernels.util import poison

    poison(out)
    row = timed_row(NAME, variant, launch, size=COPY_ELEMENTS, param=param, bytes_moved=8 * COPY_ELEMENTS,
                    flops=0)
    _check_copy(x, out, variant)
    return row


def _copy_rows(x, out, limits) -> list[dict]:
    rows, seen = [], set()
    for width in WIDTHS:
        xs, outs = (x, out) if width != 8 else (x.view(np.float64), out.view(np.float64))
        vector = width == 16
        for unroll in UNROLLS:
            kernel, variant = k.copy_ilp(unroll, vector), copy_variant(width, unroll)
            for block, per_sm in RESIDENCY:
                shared, calc = _residency(kernel, (xs, outs), variant, block, per_sm, limits,
                                          sass=(block, per_sm) == RESIDENCY[0])
                if (variant, calc.warps_per_sm) in seen:
                    continue  # registers capped two targets at the same residency
                seen.add((variant, calc.warps_per_sm))

                def launch(_, u=unroll, v=vector, b=block, s=shared, xs=xs, outs=outs):
                    k.copy_ilp_launch(u, v, xs, outs, b, s)

                rows.append(_copy_row(variant, launch, xs, outs, calc.warps_per_sm))
    return rows


def _pressure_rows(x, out, limits) -> list[dict]:
    rows = []
    shapes = [(u, None) for u in PRESSURE_UNROLLS] + list(MAX_REGISTERS)
    for unroll, cap in shapes:
        kernel, variant = k.copy_ilp(unroll, True, cap), copy_variant(16, unroll, cap)
        _shared, calc = _residency(kernel, (x, out), variant, k.COPY_BLOCK, 8, limits, sass=True)
        rows.append(_copy_row(variant, lambda _, u=unroll, c=cap: k.copy_ilp_launch(u, True, x, out,
                                                                                   max_registers=c),
                              x, out, calc.warps_per_sm))
    return rows


def _persistent_rows(x, out, limits, sms) -> list[dict]:
    rows = []
    for unroll in PERSISTENT_UNROLLS:
        kernel, variant = k.copy_persistent(unroll), f"copy_persistent w16 u{unroll}"
        for per_sm in PERSISTENT_BLOCKS_PER_SM:
            _shared, calc = _residency(kernel, (x, out), variant, k.COPY_BLOCK, per_sm, limits,
                                       sass=per_sm == 1, cap=False)
            warps = min(calc.warps_per_sm, per_sm * k.COPY_BLOCK // 32)  # the grid is the limit here
            rows.append(_copy_row(variant, lambda _, u=unroll, b=per_sm * sms: k.copy_persistent_launch(
                u, x, out, b), x, out, warps))
    return rows


def _queue_rows(x, out, limits, sms) -> list[dict]:
    """The pipelined warp queue, 2 blocks of 256 per SM (16 warps/SM unless registers allow fewer)."""
    from ..kernels.util import queue_counters

    rows = []
    for unroll, per_claim, cap in QUEUE_SHAPES:
        kernel, variant = k.copy_queue(unroll, per_claim, cap), queue_variant(unroll, per_claim, cap)
        shared, calc = _residency(kernel, (x, out, queue_counters(np.uint64)), variant, QUEUE_BLOCK,
                                  QUEUE_BLOCKS_PER_SM, limits, sass=True)

        def launch(_, u=unroll, r=per_claim, c=cap, s=shared):
            k.copy_queue_launch(u, x, out, QUEUE_BLOCKS_PER_SM * sms, QUEUE_BLOCK, s, r, c)

        rows.append(_copy_row(variant, launch, x, out, calc.warps_per_sm))
    return rows


def _cupy_rows(x) -> list[dict]:
    try:
        import cupy as cp
    except ImportError:
        return []
    src = cp.asarray(x)
    dst = cp.full_like(src, cp.nan)
    row = timed_row(NAME, "cupy copy", lambda _: cp.copyto(dst, src), provider="cupy", size=COPY_ELEMENTS,
                    bytes_moved=8 * COPY_ELEMENTS, flops=0)
    if not bool(cp.array_equal(dst, src)):
        raise AssertionError("CuPy copy mismatch")
    return [row]


def _fma_rows(limits, sms) -> list[dict]:
    from numba import cuda

    from ..kernels.util import poison

    rows = []
    for chains in FMA_CHAINS:
        kernel, variant = k.fma_chains(chains), f"fma c{chains}"
        for warps in FMA_WARPS:
            threads = 32 * warps
            out = cuda.device_array(sms * threads, np.float32)
            poison(out)
            args = (out, np.int64(1), k.FMA_A, k.FMA_B)
            _shared, calc = _residency(kernel, args, variant, threads, 1, limits,
                                       sass=warps == FMA_WARPS[0], cap=False)
            trips = FMA_TRIPS * (4 if warps < 8 else 1)
            def launch(_, c=chains, t=threads, n=trips, out=out):
                k.fma_chains_launch(c, out, sms, t, n)

            rows.append(timed_row(NAME, variant, launch, size=sms * threads, param=warps,
                bytes_moved=0, flops=k.fma_chains_flops(chains, sms, threads, trips)))
            if np.isnan(out.copy_to_host()).any():
                raise AssertionError(f"{variant} at {warps} warps left outputs unwritten")
            # The arithmetic, on a short run (the reference is NumPy, step by step)
            poison(out)
            k.fma_chains_launch(chains, out, sms, threads, 1)
            sample = np.arange(0, out.size, max(1, out.size // 7))
            if not np.array_equal(out.copy_to_host()[sample], k.fma_chains_reference(sample, chains, 1)):
                raise AssertionError(f"{variant} at {warps} warps differs from the float32 FMA reference")
    return rows


# ------------------------------------------------------------------------------- analysis


def sm_clock_mhz(meta: dict) -> float:
    """The SM clock the timings ran at: observed during the run (NVML) when recorded, else the max."""
    return float(meta.get("sm_clock_now_mhz") or meta["sm_clock_mhz"])


def latencies(table: pd.DataFrame, meta: dict) -> pd.DataFrame:
    """Latency per level: the time of 2S steps minus the time of S steps, over S (no launch cost)."""
    rows = []
    mhz = sm_clock_mhz(meta)
    for level in ("DRAM", "L2", "L1", "FMA"):
        chase = table[table["variant"] == f"chase {level}"].sort_values("size")
        if len(chase) < 2:
            continue
        short, long = chase.iloc[0], chase.iloc[-1]
        ns = (long["median_ms"] - short["median_ms"]) * 1e6 / (long["size"] - short["size"])
        rows.append({"level": level, "latency_ns": ns, "latency_cycles": ns * mhz / 1e3,
                     "footprint": short["param"], "steps": int(long["size"] - short["size"])})
    return pd.DataFrame(rows)


def copy_ceiling(table: pd.DataFrame) -> float:
    """The measured bandwidth ceiling: the best copy of this run, ours or CuPy's."""
    copies = table[table["variant"].str.startswith(("copy", "cupy copy"))]
    return float(copies["gbps"].max())


def memory_points(table: pd.DataFrame, meta: dict) -> pd.DataFrame:
    """Every one-shot copy as a point: bytes in flight per SM, measured GB/s, Little's Law's GB/s.

    error = measured / predicted - 1; implied_latency_ns = the latency at which Little's Law would
    give the measured bandwidth (it grows as the memory system fills: queues).
    """
    lat = latencies(table, meta).set_index("level")["latency_ns"]["DRAM"]
    ceiling, sms = copy_ceiling(table), int(meta["sms"])
    rows = []
    for _, row in table[table["variant"].str.startswith("copy ")].iterrows():
        f = parse_variant(row["variant"])
        inflight = k.bytes_in_flight_per_sm(row["param"], f["unroll"], f["width"])
        rows.append({"variant": row["variant"], "width": f["width"], "unroll": f["unroll"],
                     "max_registers": f.get("max_registers"), "warps_per_sm": row["param"],
                     "bytes_in_flight_per_sm": inflight, "gbps": row["gbps"]})
    points = pd.DataFrame(rows)
    points["predicted_gbps"] = k.littles_law_gbps(points["bytes_in_flight_per_sm"], lat, sms, ceiling)
    points["error"] = points["gbps"] / points["predicted_gbps"] - 1
    points["implied_latency_ns"] = 2 * points["bytes_in_flight_per_sm"] * sms / points["gbps"]
    light = points["predicted_gbps"] < ceiling / 4  # far below the knee: the memory system idles
    points.attrs.update(latency_ns=lat, ceiling_gbps=ceiling, sms=sms,
                        light_load_latency_ns=float(points.loc[light, "implied_latency_ns"].median()))
    return points.sort_values("bytes_in_flight_per_sm").reset_index(drop=True)


def sweep_points(table: pd.DataFrame, meta: dict) -> pd.DataFrame:
    """memory_points of the main sweep: unroll 1-8, no register cap (the Little's Law chart)."""
    points = memory_points(table, meta)
    keep = points["max_registers"].isna() & points["unroll"].isin(UNROLLS)
    sweep = points[keep].reset_index(drop=True)
    sweep.attrs.update(points.attrs)
    return sweep


COPY_KINDS = {"copy": "one-shot", "copy_persistent": "grid-stride", "copy_queue": "warp queue"}


def low_occupancy_copies(table: pd.DataFrame, warps: int = LOW_OCCUPANCY_WARPS) -> pd.DataFrame:
    """Every 16-byte copy of the run at <= ``warps`` resident warps per SM against CuPy's copy of
    the same run, best first: kind (one-shot, grid-stride, warp queue), unroll, chunks per claim,
    register cap, warps per SM, GB/s, of_copyto and whether it reaches TARGET_OF_COPYTO.
    Empty when the table has no CuPy copy (a run without CuPy)."""
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


def best_low_occupancy(table: pd.DataFrame, warps: int = LOW_OCCUPANCY_WARPS) -> pd.DataFrame:
    """The best copy of each kind at <= ``warps`` warps per SM (rows of low_occupancy_copies)."""
    copies = low_occupancy_copies(table, warps)
    return copies.groupby("kind", sort=False).head(1).reset_index(drop=True)


PROBE_FILE = "probes/littles_law_copy_probe.csv"  # data/<gpu>/: benchmarks/littles_law_copy_probe.py


def recorded_copy_probe(gpu: str | None = None) -> tuple[pd.DataFrame, dict]:
    """The copy probe of issue 7 (table, meta): one-shot and warp-queue copies at 16 warps/SM."""
    import json

    from .. import results

    path = results.data_root() / (gpu or results.DEFAULT_GPU) / PROBE_FILE
    meta_path = path.with_suffix(".meta.json")
    if not path.exists() or not meta_path.exists():
        raise results.MissingRecordingError(f"{results.shown_path(path)}: no copy probe recorded")
    return pd.read_csv(path), json.loads(meta_path.read_text())


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


def fma_points(table: pd.DataFrame, meta: dict) -> pd.DataFrame:
    """FMA chains x resident warps: share of the theoretical peak, and the 4-scheduler model's."""
    latency = latencies(table, meta).set_index("level")["latency_cycles"]["FMA"]
    peak = float(meta["peak_fp32_gflops"]) * sm_clock_mhz(meta) / float(meta["sm_clock_mhz"])
    rows = table[table["variant"].str.startswith("fma ")].copy()
    rows["chains"] = [parse_variant(v)["chains"] for v in rows["variant"]]
    rows["warps_per_sm"] = rows["param"].astype(int)
    rows["fraction_of_peak"] = rows["gflops"] / float(meta["peak_fp32_gflops"])
    rows["predicted_fraction"] = k.fma_model_fraction(rows["warps_per_sm"], rows["chains"], latency) \
        * peak / float(meta["peak_fp32_gflops"])
    rows["error"] = rows["fraction_of_peak"] / rows["predicted_fraction"] - 1
    out = rows[["variant", "chains", "warps_per_sm", "gflops", "fraction_of_peak", "predicted_fraction",
                "error"]]
    out.attrs.update(latency_cycles=latency)
    return out.reset_index(drop=True)


def register_pressure(table: pd.DataFrame, meta: dict) -> pd.DataFrame:
    """Registers, local memory, spills in SASS, occupancy and GB/s of the 16-byte copies by unroll."""
    kernels = meta.get("facts", {}).get("kernels", {})
    limits = occ.SMLimits.from_dict(meta["facts"]["sm_limits"])
    rows = []
    for variant, res in kernels.items():
        if not variant.startswith("copy w16"):
            continue
        f = parse_variant(variant)
        measured = table[(table["variant"] == variant)]
        full = measured.loc[measured["param"].idxmax()] if len(measured) else None
        o = occ.occupancy(k.COPY_BLOCK, res["registers_per_thread"], res["shared_bytes_per_block"], limits)
        sass = res.get("sass", {})
        rows.append({"variant": variant, "unroll": f["unroll"], "max_registers": f.get("max_registers"),
                     "registers": res["registers_per_thread"], "local_bytes": res["local_bytes_per_thread"],
                     "LDL": sass.get("LDL"), "STL": sass.get("STL"), "warps_per_sm": o.warps_per_sm,
                     "limiter": o.limiter, "gbps": None if full is None else float(full["gbps"])})
    frame = pd.DataFrame(rows).sort_values(["unroll", "max_registers"], na_position="first")
    return frame.reset_index(drop=True)


def kernel_resources_table(meta: dict) -> pd.DataFrame:
    """Every kernel's registers, shared and local memory as the GPU compiler reported them, with
    its SASS instruction counts (from a recording's meta, or a live run's)."""
    kernels = meta.get("facts", {}).get("kernels", {})
    rows = []
    for name, res in kernels.items():
        row = {"kernel": name, **{key: v for key, v in res.items() if key not in ("sass", "name")}}
        row.update({op: count for op, count in res.get("sass", {}).items() if count})
        rows.append(row)
    return pd.DataFrame(rows).fillna(0)


NCU_FILE = "ncu_littles_law.csv"  # data/<gpu>/: benchmarks/littles_law_ncu.py summarize


def recorded_ncu(gpu: str | None = None) -> pd.DataFrame:
    """Nsight Compute's counters for the lesson's winners (recorded): one column per case."""
    from .. import results

    path = results.data_root() / (gpu or results.DEFAULT_GPU) / NCU_FILE
    if not path.exists():
        raise results.MissingRecordingError(f"{results.shown_path(path)}: no Nsight Compute recording")
    table = pd.read_csv(path)
    return table.pivot(index="metric", columns="case", values="value")


def recorded_resources(gpu: str | None = None) -> pd.DataFrame:
    """kernel_resources_table of the reference recording."""
    from .. import results

    return kernel_resources_table(results.read_recording(NAME, gpu=gpu).meta)


# -------------------------------------------------------------------------------- figures


def figures(table: pd.DataFrame, ceilings: dict, provenance: str, meta: dict | None = None) -> dict:
    from .. import plots

    meta = meta or _meta_for(table)
    figs = {}
    if meta is None:
        return figs
    figs["littles_law_memory"] = plots.littles_law_memory(sweep_points(table, meta), provenance=provenance)
    figs["littles_law_fma"] = plots.littles_law_fma(fma_points(table, meta), provenance=provenance)
    if meta.get("facts", {}).get("kernels"):
        figs["register_pressure"] = plots.register_pressure(register_pressure(table, meta),
                                                            provenance=provenance)
    copies = low_occupancy_copies(table)
    if len(copies):  # the target, judged on this table's rows (ours and CuPy's of the same run)
        figs["low_occupancy_copies"] = plots.low_occupancy_copies(
            copies[copies["of_copyto"] >= 0.75], TARGET_OF_COPYTO, provenance=provenance,
            title=f"Copies at <= {LOW_OCCUPANCY_WARPS} warps/SM (within 25%) vs cupy.copyto")
    return figs


def _meta_for(table: pd.DataFrame) -> dict | None:
    """The meta to analyse a table with: this run's facts when measured just now, else the recording's."""
    from .. import SIMULATED, results
    from .common import measurement_meta

    if not SIMULATED and _FACTS:
        return measurement_meta(NAME, live=True)
    try:
        return results.read_recording(NAME).meta
    except results.RecordingError:
        return None


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


def load(live: bool | None = None, gpu: str | None = None):
    """This lesson's table: measured now on a GPU, else the reference recording (see common.load)."""
    from . import common

    return common.load(sys.modules[__name__], live=live, gpu=gpu)
