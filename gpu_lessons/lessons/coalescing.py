"""Lesson 3: coalescing. A warp's request is served in 32-byte sectors; layout and access width
decide how many it needs and how many bytes move for the ones a kernel uses.

The experiment (``SECTIONS``, in this order on a GPU):

    particles        ``x += v * dt`` in AoS, SoA (five versions), AoSoA and padded records, beside CuPy
    access widths    copies 4, 8 and 16 bytes wide, one-shot and grid-stride, L2-resident to 17x the L2
    grid-stride gap  the one-wave grid-stride float4 copy in the shapes that look for its 8% gap
    offsets          ``out[i] = x[i + offset]``, offsets 0..32, one 4-byte load per thread
    strides          ``out[i] = x[i * stride]``, strides 1..256, one 4-byte load per thread
    offsets x4       the same with four loads in flight per thread: DRAM-bound at offset 0
    strides x4       the same with four loads in flight per thread: DRAM-bound at stride 1
    2-D walks        a row-major 8192 x 8192 matrix copied with warps along rows or down columns

Beside the timings, the models and their error per point: sectors per request (the tracer, and
Nsight Compute where recorded) and the bytes DRAM moves (64-byte granules; Nsight Compute's
``dram__bytes_read.sum`` where recorded). Readers take the ``LessonResult`` (``lessons.load``).
"""

from __future__ import annotations

import functools
import statistics
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
from numba import cuda

from .. import bench, ncu, plots
from ..device import fitting_elements
from ..kernels import coalescing as k
from ..kernels import roofline as roofline_kernels
from ..kernels.launch import THREADS_PER_BLOCK
from ..kernels.util import poison, queue_counters
from ..results import LessonResult, RecordingError
from ..scoreboard import Comparison
from ..sim import trace
from .runner import Run, Section, check_row, cupy_or_none

NAME = "coalescing"
TITLE = "Coalescing, 32-byte sectors, AoS vs SoA, 16-byte access"
NOTEBOOK = "03_coalescing_aos_soa.ipynb"
SUMMARY = "sectors per request traced and timed: offsets, strides, 2-D walks, particle layouts, access width"

SEED = 2026  # the device-side random fill (kernels.coalescing.fill_random): values recomputable on the host
OFFSETS = tuple(range(33))  # elements: 0..32 floats = 0..128 bytes
OFFSET_N = 2**26  # 256 MiB read + 256 MiB written
STRIDES = (1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 128, 256)  # 8 = a sector, 32 = a line
STRIDE_INPUT = 2**30  # 4 GiB of input floats: a strided read never comes back to a sector
STRIDE_MAX_OUT = 2**26
SWEEP_PASSES = 3  # forward, backward, forward: a slow drift of the GPU's speed averages out
WIDTH_SIZES = tuple(2**p for p in (20, 22, 24, 26, 28))  # 4 MiB (L2-resident) .. 1 GiB (17x L2) per buffer
WIDTH_VARIANTS = ("copy_w4", "copy_w8", "copy_w16", "copy_w4_grid_stride", "copy_w8_grid_stride",
                  "copy_w16_grid_stride", "copy_w16_grid_stride_x4", "copy_w16_queue")
PERSISTENT_16 = ("copy_w16_grid_stride", "copy_w16_grid_stride_x4")  # one wave of resident blocks
# The grid-stride copy's gap, timed at the largest size only: more waves of blocks (param = waves of
# resident blocks), one wave taking chunks from a queue with 1024-thread blocks, and blocks that
# each copy one contiguous chunk (DRAM locality).
GAP_WAVES = (2, 4, 8, 16, 32, 64, 128)
GRID_STRIDE_WAVES = "copy_w16_grid_stride waves"
QUEUE_1024 = "copy_w16_queue 1024"
BLOCK_CHUNKS = "copy_w16_block_chunks"
SIGNED_GRID_STRIDE = "copy_vec4_grid_stride (lesson 1, signed index)"
GRID_STRIDE_1024 = "copy_w16_grid_stride 1024 threads"
GAP_SHAPES = (GRID_STRIDE_WAVES, QUEUE_1024, BLOCK_CHUNKS, SIGNED_GRID_STRIDE, GRID_STRIDE_1024)
BALANCED_WAVES = 64  # the scoreboard's many-waves grid-stride copy: each thread still loops about 4 times
PARTICLES = 2**25  # 1.2 GB moved per update (36 bytes a particle): 20x the L2
DT = np.float32(0.01)
CUPY_COPY = "cupy copy"
CUPY_ELEMENTWISE = "cupy ElementwiseKernel (SoA)"
CUPY_EXPRESSIONS = "cupy expressions (SoA)"
CUPY_AOS = "cupy expression (AoS)"
SOA_VARIANTS = tuple(k.PARTICLE_SOA_VARIANTS)
LAYOUT_VARIANTS = ("particles_aos", *SOA_VARIANTS, "particles_aosoa", "particles_padded_vec4")
SOA_REFERENCE = "particles_soa"  # what AoS and the padded records are measured against
MATRIX_N = 8192  # rows = cols: 256 MiB read + 256 MiB written, 8.5x the L2
MATRIX_LDS = (8192, 8224)  # leading dimensions: the row length, and one padded by 128 bytes
MATRIX_WALKS = tuple(k.MATRIX_WALKS)

# The four sweeps: variant -> (kind, four loads in flight per thread?)
SWEEPS = {"offset_copy": ("offset", False), "strided_copy": ("stride", False),
          "offset_copy_x4": ("offset", True), "strided_copy_x4": ("stride", True)}
SECTOR_BYTES = 32
DRAM_GRANULE = 64  # bytes DRAM moves per access on the H200, as its counters show (dram_granularity)
USEFUL_BYTES_PER_ELEMENT = 8  # a copy reads 4 bytes and writes 4 per element

COMPARISONS = [
    Comparison(title="particle update, SoA, vs fused ElementwiseKernel", lesson=NAME, metric="gbps",
               ours=SOA_VARIANTS, reference=CUPY_ELEMENTWISE),
    Comparison(title="particle update, SoA, vs CuPy expressions", lesson=NAME, metric="gbps",
               ours=SOA_VARIANTS, reference=CUPY_EXPRESSIONS),
    Comparison(title="particle update, AoS / SoA", lesson=NAME, metric="gbps", ours=["particles_aos"],
               reference="particles_soa"),
    Comparison(title="grid-stride float4 copy, one wave of blocks, vs cupy copy", lesson=NAME,
               metric="gbps", ours=PERSISTENT_16, reference=CUPY_COPY),
    Comparison(title="grid-stride float4 copy, one wave, chunks from a queue, vs cupy copy", lesson=NAME,
               metric="gbps", ours=["copy_w16_queue", QUEUE_1024], reference=CUPY_COPY),
    Comparison(title=f"grid-stride float4 copy, {BALANCED_WAVES} waves of blocks, vs cupy copy", lesson=NAME,
               metric="gbps", ours=[GRID_STRIDE_WAVES], reference=CUPY_COPY, param=BALANCED_WAVES),
    Comparison(title="best copy vs cupy copy", lesson=NAME, metric="gbps",
               ours=[*WIDTH_VARIANTS, *GAP_SHAPES], reference=CUPY_COPY),
]


@dataclass(frozen=True)
class Plan:
    """The experiment's sizes and points: the GPU's by default. A run reads its plan through
    ``run.shared("plan", Plan)``, so a test can run a section at toy sizes on the simulator."""

    # floats of the one random input every section reads from: 4 GiB, or less where this GPU's free
    # memory is short (device.fitting_elements: 2 GiB on a 6 GiB GPU)
    big: int = field(default_factory=lambda: fitting_elements(STRIDE_INPUT, 4))
    offset_n: int = OFFSET_N
    offsets: tuple = OFFSETS
    strides: tuple = STRIDES
    stride_max_out: int = STRIDE_MAX_OUT
    passes: int = SWEEP_PASSES
    width_sizes: tuple = WIDTH_SIZES
    gap_waves: tuple = GAP_WAVES
    particles: int = PARTICLES
    matrix: int = MATRIX_N
    matrix_lds: tuple = MATRIX_LDS

    def stride_outputs(self, stride: int) -> int:
        return min(self.stride_max_out, self.big // stride)


def stride_outputs(stride: int) -> int:
    """Elements a stride point copies in the recorded Nsight Compute cases (a 4 GiB input)."""
    return Plan(big=STRIDE_INPUT).stride_outputs(stride)


# ---------------------------------------------------------------------------------- the tracer


def _trace_sweep(variant: str, param: int, warps: int):
    kind, x4 = SWEEPS[variant]
    n = 32 * warps * (k.SWEEP_UNROLL if x4 else 1)
    n_in = n + param if kind == "offset" else (n - 1) * param + 1
    x = np.random.default_rng(1).standard_normal(n_in, dtype=np.float32)
    out = np.zeros(n, np.float32)
    kernel = {"offset_copy": k.offset_copy_kernel, "strided_copy": k.strided_copy_kernel,
              "offset_copy_x4": k.offset_copy_x4_kernel, "strided_copy_x4": k.strided_copy_x4_kernel}[variant]
    return trace.trace(kernel, 1, 32 * warps, x, out, param)


def traced_offset(offset: int, warps: int = 2, x4: bool = False):
    """The tracer's record of offset_copy_kernel (or the x4 one) on one block of ``warps`` warps."""
    return _trace_sweep("offset_copy_x4" if x4 else "offset_copy", offset, warps)


def traced_stride(stride: int, warps: int = 2, x4: bool = False):
    return _trace_sweep("strided_copy_x4" if x4 else "strided_copy", stride, warps)


@functools.cache  # a pure function of its arguments: each point is traced once per process
def _sweep_point(variant: str, param: int) -> tuple[float, float]:
    counts = _trace_sweep(variant, param, warps=1)
    return counts.sectors_per_request("ld"), counts.sectors_per_request("st")


def sweep_sectors(kind: str, values, x4: bool = False) -> pd.DataFrame:
    """Sectors per request of the load and the store, from the tracer (every warp of these copies
    touches the same pattern), and the ideal: 4 + 4 per warp."""
    variant = {"offset": "offset_copy", "stride": "strided_copy"}[kind] + ("_x4" if x4 else "")
    rows = []
    for value in values:
        ld, st = _sweep_point(variant, int(value))
        rows.append({"param": int(value), "ld_sectors": ld, "st_sectors": st})
    table = pd.DataFrame(rows, columns=["param", "ld_sectors", "st_sectors"])
    table["sectors"] = table["ld_sectors"] + table["st_sectors"]
    table["ideal_sectors"] = 8.0
    return table


def traced_aos_field(fields: int = 6, field: int = 3, warps: int = 2):
    """The tracer's record of aos_field_kernel reading one field of (n, fields) records."""
    records = np.random.default_rng(1).standard_normal((32 * warps, fields), dtype=np.float32)
    return trace.trace(k.aos_field_kernel, 1, 32 * warps, records, np.zeros(32 * warps, np.float32), field)


def warp_requests() -> list[tuple[str, str, pd.DataFrame]]:
    """(name, title, request) for the pictures of one warp's load: aligned, offset, strided, AoS."""
    return [
        ("request_aligned", "aligned copy: ld x[i + 0]", traced_offset(0).request(array="x")),
        ("request_offset_1", "offset 1: ld x[i + 1]", traced_offset(1).request(array="x")),
        ("request_stride_2", "stride 2: ld x[i * 2]", traced_stride(2).request(array="x")),
        ("request_stride_32", "stride 32: ld x[i * 32]", traced_stride(32).request(array="x")),
        ("request_aos_field", "AoS field read: ld aos[i, 3] of (n, 6) records",
         traced_aos_field().request(array="aos")),
    ]


# 2-D: a warp along a row or down a column of a row-major matrix (leading dimension ld)

MATRIX_TRACE_LD = 40  # a row of 32 used floats and 8 of padding: ld is the stride down a column


def traced_matrix(walk: str, ld: int = MATRIX_TRACE_LD):
    """The tracer's record of one matrix walk, on a matrix just big enough for full warps: 4 rows
    of 32 columns (row walk) or 32 rows of 8 columns, a sector each (column walk), leading
    dimension ``ld``."""
    rows, cols = (4, 32) if walk == "matrix_row_walk" else (32, 8)
    if ld < cols:
        raise ValueError(f"ld must be at least the {cols} columns used, got {ld}")
    a = np.random.default_rng(2).standard_normal((rows, ld), dtype=np.float32)
    out = np.zeros((rows, ld), np.float32)
    grid = (1, rows) if walk == "matrix_row_walk" else (1, cols)
    return trace.trace(k.MATRIX_WALKS[walk], grid, 32, a, out, np.uint64(rows), np.uint64(cols))


def matrix_requests(ld: int = MATRIX_TRACE_LD) -> list[tuple[str, str, pd.DataFrame]]:
    """(name, title, request): one warp's load along a row, and down a column (32 lines)."""
    return [
        ("request_matrix_row", f"row walk: ld a[r, c], lanes along a row (ld = {ld})",
         traced_matrix("matrix_row_walk", ld).request(array="a", op="ld")),
        ("request_matrix_column", f"column walk: ld a[r, c], lanes down a column ({4 * ld} bytes apart)",
         traced_matrix("matrix_column_walk", ld).request(array="a", op="ld")),
    ]


def _distinct(accesses: pd.DataFrame, granule: int) -> int:
    """Granules of ``granule`` bytes touched at least once (what DRAM moves when nothing is re-fetched)."""
    first = accesses["address"] // granule
    last = (accesses["address"] + accesses["bytes"] - 1) // granule
    touched = {(root, g) for root, a, b in zip(accesses["root"], first, last, strict=True)
               for g in range(int(a), int(b) + 1)}
    return len(touched)


def matrix_sectors(ld: int = MATRIX_TRACE_LD) -> pd.DataFrame:
    """Per walk, from the tracer: sectors per request (the L1 view) and the distinct 32-byte sectors
    the whole walk touches per useful byte (the DRAM view when caches catch every reuse)."""
    rows = []
    for walk in MATRIX_WALKS:
        counts = traced_matrix(walk, ld)
        accesses = counts.accesses
        useful = int(accesses["bytes"].sum())
        rows.append({"variant": walk, "ld": ld,
                     "ld_sectors": counts.sectors_per_request("ld"),
                     "st_sectors": counts.sectors_per_request("st"),
                     "distinct_bytes_per_useful": SECTOR_BYTES * (
                         _distinct(accesses[accesses["store"] == 0], SECTOR_BYTES)
                         + _distinct(accesses[accesses["store"] == 1], SECTOR_BYTES)) / useful})
    table = pd.DataFrame(rows)
    table["sectors"] = table["ld_sectors"] + table["st_sectors"]
    return table


# float4: coalesced only when adjacent lanes take adjacent 16-byte chunks

FLOAT4_SPREADS = (1, 2, 4)


def traced_float4(per_thread: int, warps: int = 1):
    """copy_w16_thread_chunks with ``per_thread`` adjacent float4s per thread, one block."""
    n = 4 * 32 * warps * per_thread
    x = np.random.default_rng(3).standard_normal(n, dtype=np.float32)
    return trace.trace(k.copy_w16_thread_chunks, 1, 32 * warps, x, np.zeros(n, np.float32), per_thread)


def float4_adjacency(spreads=FLOAT4_SPREADS) -> pd.DataFrame:
    """The float4 condition, traced: lanes ``16 * per_thread`` bytes apart. Sectors per request of
    the 16-byte load (ideal 16: 32 lanes x 16 bytes), the share of the moved bytes a request uses,
    and the distinct sectors the whole copy touches per useful byte (reuse hides it from DRAM)."""
    rows = []
    for per_thread in spreads:
        counts = traced_float4(per_thread)
        request = counts.request(array="x", op="ld")
        loads = counts.accesses[counts.accesses["store"] == 0]
        rows.append({"per_thread": per_thread, "lane_spacing_bytes": 16 * per_thread,
                     "ld_sectors": counts.sectors_per_request("ld"),
                     "ideal_sectors": request.attrs["ideal_sectors"],
                     "used_share": request.attrs["useful_bytes"] / request.attrs["moved_bytes"],
                     "distinct_bytes_per_useful": SECTOR_BYTES * _distinct(loads, SECTOR_BYTES)
                     / int(loads["bytes"].sum())})
    return pd.DataFrame(rows)


def float4_requests(spreads=(1, 2)) -> list[tuple[str, str, pd.DataFrame]]:
    """(name, title, request): one warp's 16-byte load with adjacent chunks, and spread out."""
    out = []
    for per_thread in spreads:
        name = "request_float4_adjacent" if per_thread == 1 else f"request_float4_spread_{per_thread}"
        title = (f"float4, adjacent lanes {16 * per_thread} bytes apart"
                 + (" (adjacent chunks)" if per_thread == 1 else f" ({per_thread} float4 per thread)"))
        out.append((name, title, traced_float4(per_thread).request(array="x", op="ld")))
    return out


LAYOUT_PARTICLES = 128  # four warps (one full warp of float4 threads), small for the simulator


def _traced_layouts(n: int = LAYOUT_PARTICLES) -> dict:
    """The tracer's record of one update in each layout, on the same n random particles."""
    records = np.random.default_rng(5).standard_normal((n, k.PARTICLE_FIELDS), dtype=np.float32)
    fields = [np.ascontiguousarray(records[:, f]) for f in range(k.PARTICLE_FIELDS)]
    block = min(n, 256)
    grid = -(-n // block)
    return {
        "particles_aos": trace.trace(k.particles_aos_kernel, grid, block, records.copy(), DT),
        "particles_soa": trace.trace(k.particles_soa_kernel, grid, block, *fields, DT),
        "particles_soa_vec4": trace.trace(k.particles_soa_vec4_kernel, 1, n // 4 + n % 4, *fields, DT),
        "particles_aosoa": trace.trace(k.particles_aosoa_kernel, grid, block, k.to_aosoa(records),
                                       np.uint64(n), DT),
        "particles_padded_vec4": trace.trace(k.particles_padded_vec4_kernel, grid, block,
                                             k.to_padded(records), DT),
    }


def layout_sectors(n: int = LAYOUT_PARTICLES) -> pd.DataFrame:
    """Per layout, from the tracer: memory instructions and sectors per request (the L1 view),
    and the bytes per particle that must cross DRAM (distinct sectors loaded + stored x 32 / n)."""
    return _layout_sectors(n).copy()


@functools.cache  # traced once per process: the figures and tables read it several times
def _layout_sectors(n: int) -> pd.DataFrame:
    rows = []
    for variant, counts in _traced_layouts(n).items():
        totals = counts.totals
        accesses = counts.accesses
        loads, stores = accesses[accesses["store"] == 0], accesses[accesses["store"] == 1]
        rows.append({
            "variant": variant,
            "requests_per_warp": (totals["l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum"]
                                  + totals["l1tex__t_requests_pipe_lsu_mem_global_op_st.sum"]) / (n / 32),
            "ld_sectors_per_request": round(counts.sectors_per_request("ld"), 2),
            "st_sectors_per_request": round(counts.sectors_per_request("st"), 2),
            "useful_bytes": k.PARTICLE_USEFUL_BYTES,
            "dram_bytes": SECTOR_BYTES * (_distinct(loads, SECTOR_BYTES)
                                          + _distinct(stores, SECTOR_BYTES)) / n,
        })
    return pd.DataFrame(rows)


# ------------------------------------------------------------------------ models against the data


def copy_ceiling(table: pd.DataFrame) -> tuple[float, str]:
    """The same run's best copy (ours or CuPy's) at the largest size: the model's ceiling."""
    copies = table[table["variant"].isin([*WIDTH_VARIANTS, CUPY_COPY])]
    copies = copies[copies["size"] == copies["size"].max()]
    best = copies.loc[copies["gbps"].idxmax()]
    return float(best["gbps"]), str(best["variant"])


def _sweep_variant(kind_or_variant: str) -> str:
    aliases = {"offset": "offset_copy", "stride": "strided_copy"}
    variant = aliases.get(kind_or_variant, kind_or_variant)
    if variant not in SWEEPS:
        raise ValueError(f"unknown sweep {kind_or_variant!r}; choose one of {', '.join(SWEEPS)}")
    return variant


def sweep_ceiling(table: pd.DataFrame, sweep: str) -> float:
    """A sweep's own ideal point (offset 0 / stride 1): what the same kernel does aligned and contiguous.
    ``sweep``: a variant of ``SWEEPS``, or 'offset' / 'stride' for the one-load-per-thread copies."""
    variant = _sweep_variant(sweep)
    ideal = 0 if SWEEPS[variant][0] == "offset" else 1
    rows = table[(table["variant"] == variant) & np.isclose(table["param"], ideal)]
    if rows.empty:
        raise RecordingError(f"no {variant} row at its ideal point ({SWEEPS[variant][0]} {ideal})")
    return float(rows["gbps"].iloc[0])


def dram_bytes_per_element(kind: str, param, granule: int = DRAM_GRANULE):
    """Bytes DRAM moves per copied element if it moves whole ``granule``-byte chunks (long arrays):
    the read of x (strides: min(4 x stride, granule); offsets: 4) and the contiguous write (4)."""
    param = np.asarray(param, dtype=float)
    read = np.minimum(4 * param, granule) if kind == "stride" else np.full_like(param, 4.0)
    return read + 4


def _ncu_case_param(case: str, variant: str) -> int | None:
    prefix = f"{variant} "
    if not case.startswith(prefix):
        return None
    tail = case[len(prefix):]
    return int(tail) if tail.isdigit() else None


def _ncu_sweep_elements(variant: str, param: int) -> int:
    kind, _ = SWEEPS[variant]
    return NCU_ELEMENTS if kind == "offset" else stride_outputs(param)


def recorded_ncu_sectors(result: LessonResult, sweep: str) -> pd.DataFrame:
    """What Nsight Compute counted for a sweep's recorded points (``ncu`` cases '<variant> <param>'):
    load and store sectors per request, and DRAM bytes read and written per copied element."""
    variant = _sweep_variant(sweep)
    rows = []
    evidence = result.evidence
    for case in evidence.ncu:
        param = _ncu_case_param(case, variant)
        if param is None:
            continue
        value = functools.partial(evidence.ncu_value, case)
        elements = _ncu_sweep_elements(variant, param)
        rows.append({
            "param": param,
            "ncu_ld_sectors": value("l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum")
            / value("l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum"),
            "ncu_st_sectors": value("l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum")
            / value("l1tex__t_requests_pipe_lsu_mem_global_op_st.sum"),
            "ncu_dram_read_per_element": value("dram__bytes_read.sum") / elements,
            "ncu_dram_write_per_element": value("dram__bytes_write.sum") / elements,
            "ncu_dram_pct_of_peak": value("dram__throughput.avg.pct_of_peak_sustained_elapsed"),
        })
    columns = ["param", "ncu_ld_sectors", "ncu_st_sectors", "ncu_dram_read_per_element",
               "ncu_dram_write_per_element", "ncu_dram_pct_of_peak"]
    table = pd.DataFrame(rows, columns=columns).astype({c: "float64" for c in columns[1:]})
    return table.astype({"param": "int64"}).sort_values("param", ignore_index=True)


def _sibling(variant: str) -> str:
    """The other copy of the same access pattern: offset_copy <-> offset_copy_x4, and so on."""
    return variant[:-3] if variant.endswith("_x4") else f"{variant}_x4"


def recorded_dram_bytes(result: LessonResult, sweep: str) -> pd.DataFrame:
    """DRAM bytes per copied element that Nsight Compute measured for each point of a sweep's access
    pattern (columns param, ncu_dram_bytes, ncu_dram_case). The bytes depend on the addresses, not
    on how many loads a thread keeps in flight: where the sweep's own copy was not profiled at a
    point, the other copy of the same pattern (one or four loads per thread) is used, and named."""
    variant = _sweep_variant(sweep)
    frames = []
    for source in (variant, _sibling(variant)):
        counted = recorded_ncu_sectors(result, source)
        frames.append(pd.DataFrame({
            "param": counted["param"],
            "ncu_dram_bytes": counted["ncu_dram_read_per_element"] + counted["ncu_dram_write_per_element"],
            "ncu_dram_case": [f"{source} {p}" for p in counted["param"]]}))
    table = pd.concat(frames, ignore_index=True).drop_duplicates("param", keep="first")
    return table.astype({"param": "int64"}).sort_values("param", ignore_index=True)


def sweep_model(result: LessonResult, sweep: str, ceiling_gbps: float | None = None,
                dram_ceiling_gbps: float | None = None) -> pd.DataFrame:
    """A sweep's measured useful bandwidth beside two models, with each model's error per point
    (measured / model - 1):

    * sectors: ``ceiling x ideal sectors / actual sectors`` (8 per warp ideal: 4 loaded, 4 stored;
      sectors per request from the tracer at every point, Nsight Compute's beside them where recorded);
    * DRAM bytes: ``min(ceiling, DRAM ceiling x useful bytes / DRAM bytes)``, DRAM bytes per element
      from 64-byte granules (``dram_bytes_per_element``) at every point;
    * the same DRAM model from the bytes Nsight Compute measured for the same access pattern
      (``recorded_dram_bytes``; NaN where no copy of the pattern was profiled):
      ``ceiling x measured bytes at the ideal point / measured bytes``.

    The ceiling defaults to the sweep's own ideal point (``sweep_ceiling``), and so does the DRAM
    ceiling: at that point DRAM moves exactly the useful bytes. ``sweep``: a variant of ``SWEEPS``.
    Per element, the sector model's bytes are ``sectors`` (load + store sectors per warp x 32 bytes
    / 32 elements) and the DRAM model's are ``dram_bytes``.
    """
    variant = _sweep_variant(sweep)
    kind, x4 = SWEEPS[variant]
    table = result.table
    measured = table[table["variant"] == variant][["param", "size", "gbps"]].copy()
    if measured.empty:
        raise RecordingError(f"{result.source}: no rows of variant {variant!r}")
    ceiling = sweep_ceiling(table, variant) if ceiling_gbps is None else ceiling_gbps
    dram_ceiling = ceiling if dram_ceiling_gbps is None else dram_ceiling_gbps
    measured["param"] = measured["param"].astype(int)
    sectors = sweep_sectors(kind, measured["param"], x4=x4)
    merged = (measured.merge(sectors, on="param")
              .merge(recorded_ncu_sectors(result, variant), on="param", how="left")
              .merge(recorded_dram_bytes(result, variant), on="param", how="left"))
    merged["model_gbps"] = ceiling * merged["ideal_sectors"] / merged["sectors"]
    merged["error"] = merged["gbps"] / merged["model_gbps"] - 1
    merged["dram_bytes"] = dram_bytes_per_element(kind, merged["param"])
    merged["dram_model_gbps"] = np.minimum(ceiling, dram_ceiling * USEFUL_BYTES_PER_ELEMENT
                                           / merged["dram_bytes"])
    merged["dram_model_error"] = merged["gbps"] / merged["dram_model_gbps"] - 1
    ideal = 0 if kind == "offset" else 1
    at_ideal = merged.loc[merged["param"] == ideal, "ncu_dram_bytes"]
    ideal_bytes = float(at_ideal.iloc[0]) if len(at_ideal) else np.nan
    merged["ncu_dram_model_gbps"] = np.minimum(ceiling, dram_ceiling * ideal_bytes / merged["ncu_dram_bytes"])
    merged["ncu_dram_model_error"] = merged["gbps"] / merged["ncu_dram_model_gbps"] - 1
    merged.insert(0, "variant", variant)
    return merged.sort_values("param", ignore_index=True)


def dram_granularity(result: LessonResult) -> pd.DataFrame:
    """For every recorded stride point (either copy): the DRAM bytes read per copied element as
    Nsight Compute measured them, beside what moving 32-byte sectors and 64-byte granules predicts.
    From a stride of 16 floats (64 bytes) on, DRAM reads 64 bytes for each 4-byte element."""
    rows = []
    for variant in ("strided_copy", "strided_copy_x4"):
        counted = recorded_ncu_sectors(result, variant)
        for param, measured in zip(counted["param"], counted["ncu_dram_read_per_element"], strict=True):
            rows.append({"variant": variant, "stride": int(param), "stride_bytes": 4 * int(param),
                         "ncu_read_per_element": measured,
                         "sector_model": float(min(4 * param, SECTOR_BYTES)),
                         "granule_model": float(min(4 * param, DRAM_GRANULE))})
    table = pd.DataFrame(rows, columns=["variant", "stride", "stride_bytes", "ncu_read_per_element",
                                        "sector_model", "granule_model"])
    table["sector_model_error"] = table["ncu_read_per_element"] / table["sector_model"] - 1
    table["granule_model_error"] = table["ncu_read_per_element"] / table["granule_model"] - 1
    return table


NCU_PARTICLE_CASES = {  # variant -> the ncu case that profiled it
    **{v: v for v in ("particles_soa", "particles_aos", "particles_aosoa", "particles_padded_vec4",
                      "particles_soa_naive", "particles_soa_vec4")},
    CUPY_ELEMENTWISE: "cupy ElementwiseKernel"}


def particle_summary(result: LessonResult) -> pd.DataFrame:
    """The particle rows: useful GB/s, the bytes per particle DRAM moves (tracer; Nsight Compute where
    recorded), moved GB/s, each against the fused ElementwiseKernel and the best SoA kernel, and the
    bytes model against SoA: if time were DRAM bytes, a layout would run at SoA's bytes / its bytes of
    SoA's speed (AoS 36/48 = 0.75, padded 36/64 = 0.56); ``bytes_model_error`` = measured / model - 1."""
    table = result.table
    rows = table[table["variant"].isin([*LAYOUT_VARIANTS, CUPY_ELEMENTWISE, CUPY_EXPRESSIONS, CUPY_AOS])]
    rows = rows[["variant", "provider", "size", "median_ms", "gbps"]].reset_index(drop=True)
    moved = layout_sectors().set_index("variant")["dram_bytes"].to_dict()
    for soa in SOA_VARIANTS:
        moved.setdefault(soa, moved["particles_soa"])
    moved.update({CUPY_ELEMENTWISE: moved["particles_soa"], CUPY_EXPRESSIONS: moved["particles_soa"],
                  CUPY_AOS: moved["particles_aos"]})
    rows["dram_bytes_per_particle"] = rows["variant"].map(moved)
    counted = {}
    for variant, case in NCU_PARTICLE_CASES.items():
        if case in result.evidence.ncu:
            value = functools.partial(result.evidence.ncu_value, case)
            moved_bytes = value("dram__bytes_read.sum") + value("dram__bytes_write.sum")
            counted[variant] = moved_bytes / NCU_PARTICLES
    rows["ncu_dram_bytes_per_particle"] = rows["variant"].map(counted)
    rows["moved_gbps"] = rows["gbps"] * rows["dram_bytes_per_particle"] / k.PARTICLE_USEFUL_BYTES
    by = rows.set_index("variant")["gbps"]
    if CUPY_ELEMENTWISE in by:
        rows["vs_elementwise"] = rows["gbps"] / by[CUPY_ELEMENTWISE]
    best_soa = by[[v for v in SOA_VARIANTS if v in by]].max()
    rows["vs_best_soa"] = rows["gbps"] / best_soa
    if SOA_REFERENCE in by:
        rows["vs_soa"] = rows["gbps"] / by[SOA_REFERENCE]
        rows["bytes_model_vs_soa"] = moved[SOA_REFERENCE] / rows["dram_bytes_per_particle"]
        rows["bytes_model_error"] = rows["vs_soa"] / rows["bytes_model_vs_soa"] - 1
    return rows


def copy_summary(result: LessonResult) -> pd.DataFrame:
    """Every copy at the largest size, against CuPy's copy of the same run."""
    table = result.table
    copies = table[table["variant"].isin([*WIDTH_VARIANTS, *GAP_SHAPES, CUPY_COPY])]
    copies = copies[copies["size"] == copies["size"].max()]
    rows = copies[["variant", "provider", "size", "param", "median_ms", "gbps"]].reset_index(drop=True)
    reference = copies.set_index("variant")["gbps"].get(CUPY_COPY)
    if reference is not None:
        rows["vs_cupy_copy"] = rows["gbps"] / reference
    return rows.sort_values("gbps", ascending=False, ignore_index=True).round(3)


def width_summary(result: LessonResult) -> pd.DataFrame:
    """The access-width copies at every size: GB/s, bytes per access, whether grid-stride, and the
    ratio to CuPy's copy of the same size in the same run."""
    table = result.table
    rows = table[table["variant"].isin([*WIDTH_VARIANTS, CUPY_COPY])]
    rows = rows[["variant", "provider", "size", "bytes", "median_ms", "gbps"]].reset_index(drop=True)
    rows["access_bytes"] = rows["variant"].map({v: k.WIDTH_VARIANTS[v][1] for v in WIDTH_VARIANTS})
    rows["grid_stride"] = rows["variant"].map({v: k.WIDTH_VARIANTS[v][2] for v in WIDTH_VARIANTS})
    reference = rows[rows["variant"] == CUPY_COPY].set_index("size")["gbps"]
    rows["vs_cupy_copy"] = rows["gbps"] / rows["size"].map(reference)
    return rows.sort_values(["size", "variant"], ignore_index=True).round(3)


def matrix_summary(result: LessonResult) -> pd.DataFrame:
    """The 2-D walks per leading dimension: useful GB/s and the column walk against the row walk,
    beside the sector model (row sectors / column sectors, from the tracer) and the DRAM model
    (distinct bytes touched: the same for both walks), each with its error; and, where Nsight Compute
    recorded the case, L1 sectors per request, L2 and DRAM bytes per useful byte."""
    table = result.table
    walks = table[table["variant"].isin(MATRIX_WALKS)]
    if walks.empty:
        raise RecordingError(f"{result.source}: no 2-D walks recorded (variants {', '.join(MATRIX_WALKS)}); "
                             "they appear with the next `gpu-lessons record coalescing`")
    traced = matrix_sectors().set_index("variant")
    rows = []
    for (variant, ld), row in walks.set_index(["variant", "param"]).iterrows():
        ld = int(ld)
        rows_walk = walks[(walks["variant"] == "matrix_row_walk") & np.isclose(walks["param"], ld)]
        row_gbps = float(rows_walk["gbps"].iloc[0]) if len(rows_walk) else np.nan
        mine, row_walk = traced.loc[variant], traced.loc["matrix_row_walk"]
        entry = {"variant": variant, "ld": ld, "size": int(row["size"]), "gbps": float(row["gbps"]),
                 "vs_row_walk": float(row["gbps"]) / row_gbps,
                 "ld_sectors": mine["ld_sectors"], "st_sectors": mine["st_sectors"],
                 "sector_model_vs_row": row_walk["sectors"] / mine["sectors"],
                 "dram_model_vs_row": (row_walk["distinct_bytes_per_useful"]
                                       / mine["distinct_bytes_per_useful"])}
        case = f"{variant} {ld}"
        if case in result.evidence.ncu:
            value = functools.partial(result.evidence.ncu_value, case)
            useful = USEFUL_BYTES_PER_ELEMENT * int(row["size"])
            entry["ncu_ld_sectors"] = (value("l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum")
                                       / value("l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum"))
            l2_sectors = (value("lts__t_sectors_srcunit_tex_op_read.sum")
                          + value("lts__t_sectors_srcunit_tex_op_write.sum"))
            entry["ncu_l2_bytes_per_useful"] = SECTOR_BYTES * l2_sectors / useful
            entry["ncu_dram_bytes_per_useful"] = (value("dram__bytes_read.sum")
                                                  + value("dram__bytes_write.sum")) / useful
        rows.append(entry)
    out = pd.DataFrame(rows)
    out["sector_model_error"] = out["vs_row_walk"] / out["sector_model_vs_row"] - 1
    out["dram_model_error"] = out["vs_row_walk"] / out["dram_model_vs_row"] - 1
    return out.sort_values(["ld", "variant"], ascending=[True, False], ignore_index=True)


# ------------------------------------------------------------------ recorded counters and SASS

COUNTER_COLUMNS = {  # Nsight Compute metric -> short column name, for the tables the notebook shows
    "gpu__time_duration.sum": "time_us",
    "dram__bytes_read.sum": "dram_read",
    "dram__bytes_write.sum": "dram_write",
    "lts__t_sectors_srcunit_tex_op_read.sum": "l2_read_sectors",
    "lts__t_sectors_srcunit_tex_op_write.sum": "l2_write_sectors",
    "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum": "l1_ld_sectors",
    "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum": "l1_ld_requests",
    "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum": "l1_st_sectors",
    "l1tex__t_requests_pipe_lsu_mem_global_op_st.sum": "l1_st_requests",
    "dram__throughput.avg.pct_of_peak_sustained_elapsed": "dram_pct_of_peak",
    "sm__warps_active.avg.pct_of_peak_sustained_active": "warps_active_pct",
    "sm__cycles_active.min": "sm_cycles_min",
    "sm__cycles_active.avg": "sm_cycles_avg",
    "sm__cycles_active.max": "sm_cycles_max",
    "smsp__inst_executed.sum": "instructions",
    "launch__registers_per_thread": "registers",
    "launch__grid_size": "grid",
    "launch__block_size": "block",
}
# Units ncu may print (recordings keep base units: bytes, nanoseconds); times are shown in microseconds.
UNIT_SCALE = {"byte": 1, "Kbyte": 1e3, "Mbyte": 1e6, "Gbyte": 1e9, "ns": 1, "nsecond": 1, "us": 1e3,
              "usecond": 1e3, "ms": 1e6, "msecond": 1e6}


def recorded_counters(result: LessonResult, raw: bool = False) -> pd.DataFrame:
    """The Nsight Compute counters of the lesson's recording: one row per case, the metrics of
    ``COUNTER_COLUMNS`` under short names (``raw``: every metric, long format, as recorded).
    DRAM bytes are in bytes, times in microseconds."""
    evidence = result.evidence
    if raw:
        return evidence.ncu_table()
    if not evidence.ncu:
        raise RecordingError(f"{evidence.origin}: no Nsight Compute counters (ncu) recorded")
    rows = {}
    for case, entry in evidence.ncu.items():
        units = entry.get("units", {})
        values = {}
        for metric, short in COUNTER_COLUMNS.items():
            if metric in entry["metrics"]:
                value = entry["metrics"][metric] * UNIT_SCALE.get(units.get(metric, ""), 1)
                values[short] = value / 1e3 if short == "time_us" else value
        rows[case] = values
    wide = pd.DataFrame.from_dict(rows, orient="index")
    wide.index.name = "case"
    return wide[[c for c in COUNTER_COLUMNS.values() if c in wide.columns]]


def recorded_counters_source(result: LessonResult) -> str:
    """Where the recorded counters come from: the GPU, the command, and each ncu run's revision and date."""
    evidence = result.evidence
    used: dict[str, int] = {}
    for entry in evidence.ncu.values():
        used[entry["source"]] = used.get(entry["source"], 0) + 1
    if not used:
        raise RecordingError(f"{evidence.origin}: no Nsight Compute counters (ncu) recorded")
    parts, first = [], evidence.source(next(iter(used)), result.meta)
    for name, count in used.items():
        source = evidence.source(name, result.meta)
        date = str(source.get("date", "?"))[:10]
        parts.append(f"{count} launches at {source.get('git_revision', '?')} on {date}")
    command = str(first.get("command", "ncu")).split(" --metrics")[0]
    gpu = first.get("gpu", result.meta.get("gpu"))
    return f"Nsight Compute counters, {gpu} ({command}): {'; '.join(parts)}"


def recorded_sass(result: LessonResult, kernel: str, grep: str | None = None) -> str:
    """The recorded SASS of one of this lesson's kernels (``kernels.<name>.sass.lines``), with its
    register count; ``grep`` keeps only the lines containing that text (e.g. 'LDG', 'G.E')."""
    entry = result.evidence.kernel(kernel)
    lines = entry.get("sass", {}).get("lines")
    if not lines:
        raise RecordingError(f"{result.evidence.origin}: kernels.{kernel}.sass.lines is missing")
    kept = [" ".join(line.split()) for line in lines if grep is None or grep in line]
    return f"// {kernel}: {entry.get('registers', '?')} registers per thread\n" + "\n".join(kept)


def recorded_sass_meta(result: LessonResult, kernel: str) -> dict:
    """The provenance of a kernel's recorded SASS: the run it came from (date, revision, command)."""
    entry = result.evidence.kernel(kernel)
    return result.evidence.source(entry.get("source", "run"), result.meta)


def waves_table(result: LessonResult) -> pd.DataFrame:
    """The 16-byte grid-stride copy against the waves of resident blocks its grid holds (1 = the
    grid fits on the GPU once), beside CuPy's copy and, where Nsight Compute recorded that shape,
    how far apart the SMs finished (sm__cycles_active max / min)."""
    table = result.table
    n = table.loc[table["variant"] == "copy_w16_grid_stride", "size"].max()
    at_size = table[table["size"] == n]
    one = at_size[at_size["variant"] == "copy_w16_grid_stride"].assign(param=1.0)
    rows = pd.concat([one, at_size[at_size["variant"] == GRID_STRIDE_WAVES]])
    out = pd.DataFrame({"waves": rows["param"].astype(int).to_numpy(), "gbps": rows["gbps"].to_numpy()})
    reference = at_size.set_index("variant")["gbps"].get(CUPY_COPY)
    if reference is not None:
        out["vs_cupy_copy"] = out["gbps"] / reference
    spread = _sm_spread(result)
    out["sm_max_over_min"] = [spread.get(f"copy_w16_grid_stride w{w}", np.nan) for w in out["waves"]]
    return out.sort_values("waves", ignore_index=True).round(3)


def _sm_spread(result: LessonResult) -> dict:
    """Per ncu case: how much longer the busiest SM was active than the least busy one."""
    spread = {}
    for case in result.evidence.ncu:
        value = functools.partial(result.evidence.ncu_value, case)
        try:
            spread[case] = value("sm__cycles_active.max") / value("sm__cycles_active.min")
        except RecordingError:
            continue
    return spread


GAP_TESTS = (  # (hypothesis, what was timed, the variant, its param, the ncu case with its counters)
    ("one wave of blocks (the gap)", "copy_w16_grid_stride, 256 threads", "copy_w16_grid_stride", 16,
     "copy_w16_grid_stride w1"),
    ("signed index code in the loop", "lesson 1's copy_vec4_grid_stride (signed, more registers)",
     SIGNED_GRID_STRIDE, None, "roofline copy_vec4_grid_stride"),
    ("too few bytes in flight (Little's Law)", "4 loads of 4 iterations before their stores",
     "copy_w16_grid_stride_x4", 16, "copy_w16_grid_stride_x4"),
    ("block size", "1024 threads per block", GRID_STRIDE_1024, None, "copy_w16_grid_stride b1024"),
    ("DRAM locality", "each block copies one contiguous chunk", BLOCK_CHUNKS, None, "copy_w16_block_chunks"),
    ("work split evenly over unequal SMs", "4 waves of blocks", GRID_STRIDE_WAVES, 4,
     "copy_w16_grid_stride w4"),
    ("", "16 waves of blocks", GRID_STRIDE_WAVES, 16, "copy_w16_grid_stride w16"),
    ("", "64 waves of blocks", GRID_STRIDE_WAVES, 64, "copy_w16_grid_stride w64"),
    ("", "one wave, chunks from a queue (1024 threads)", QUEUE_1024, None, "copy_w16_queue b1024"),
    ("(the one-shot copy)", "one float4 per thread, 250 waves", "copy_w16", 16, "copy_w16"),
)


def gap_hypotheses(result: LessonResult) -> pd.DataFrame:
    """Each hypothesis for the one-wave grid-stride copy's gap with its test: bandwidth against
    CuPy's copy (this recording, 1 GiB) and how far apart the 132 SMs finished (ncu, 256 MiB)."""
    table = result.table
    at_size = table[table["size"] == table.loc[table["variant"] == CUPY_COPY, "size"].max()]
    reference = float(at_size.loc[at_size["variant"] == CUPY_COPY, "gbps"].iloc[0])
    spread = _sm_spread(result)
    rows = []
    for hypothesis, test, variant, param, case in GAP_TESTS:
        match = at_size[at_size["variant"] == variant]
        if param is not None:
            match = match[np.isclose(match["param"], param)]
        rows.append({"hypothesis": hypothesis, "test": test,
                     "vs_cupy_copy": float(match["gbps"].iloc[0]) / reference if len(match) else np.nan,
                     "sm_max_over_min": spread.get(case, np.nan)})
    return pd.DataFrame(rows).round(3)


# ----------------------------------------------------------------------------- the experiment

MEMORY_SASS = r"^(LDG|STG|LDS|STS|LDL|STL|BAR|ATOM|RED)"  # the memory instructions, in program order
ALL_SASS = r"."  # every instruction (the first 40: a short kernel's whole loop)


def _plan(run: Run) -> Plan:
    return run.shared("plan", Plan)


def _big(run: Run):
    """The one random input (4 GiB on the GPU): fill_random(SEED), so any element is known on the host."""
    def make():
        big = cuda.device_array(_plan(run).big, np.float32)
        k.fill_random(big, SEED)
        return big

    return run.shared("big", make)


def _check_copy(out, source_index, what: str) -> None:
    """out[j] == big[source_index(j)] at both ends; nothing left poisoned."""
    left = k.count_nan(out)
    if left:
        raise AssertionError(f"{what}: {left} outputs never written")
    flat = out.reshape(out.size)
    n = flat.size
    ends = min(n, 4096)
    for start in (0, n - ends):
        got = flat[start:start + ends].copy_to_host()
        want = k.random_values(source_index(np.arange(start, start + ends, dtype=np.uint64)), SEED)
        if not np.array_equal(got, want):
            raise AssertionError(f"{what}: wrong values in [{start}, {start + ends})")


def _time_swept(run: Run, variant: str, points, launch_for, size_for, check_for) -> None:
    """Time ``launch_for(p)`` for every point in ``passes`` passes of alternating direction; a
    point's row has the median of its passes' medians (min and max over all runs)."""
    timed: dict[int, list[dict]] = {p: [] for p in points}
    for number in range(_plan(run).passes):
        for point in points if number % 2 == 0 else points[::-1]:
            launch, out = launch_for(point)
            poison(out)
            n = size_for(point)
            scratch = Run(run.lesson)  # run.time's row, kept aside until every pass is in
            timed[point].append(scratch.time(variant, launch, size=n, param=point,
                                             bytes_moved=USEFUL_BYTES_PER_ELEMENT * n, flops=0))
            check_for(point, out)
    for point in points:
        passes = timed[point]
        timing = bench.Timing(statistics.median(r["median_ms"] for r in passes),
                              min(r["min_ms"] for r in passes), max(r["max_ms"] for r in passes),
                              sum(r["runs"] for r in passes))
        row = {**passes[0], "runs": timing.runs, "median_ms": timing.median_ms, "min_ms": timing.min_ms,
               "max_ms": timing.max_ms, **bench.throughput(passes[0]["bytes"], 0, timing)}
        run.rows.append(row)


def _offset_sweep(run: Run, variant: str) -> None:
    plan, big = _plan(run), _big(run)
    x4 = SWEEPS[variant][1]
    out = cuda.device_array(plan.offset_n, np.float32)

    def launch_for(offset):
        return (lambda _: k.offset_copy_launch(big, out, offset, x4)), out

    def check_for(offset, out):
        _check_copy(out, lambda j: j + np.uint64(offset), f"{variant} offset={offset}")

    _time_swept(run, variant, list(plan.offsets), launch_for, lambda _: plan.offset_n, check_for)
    kernel = k.offset_copy_x4_kernel if x4 else k.offset_copy_kernel
    run.kernel(kernel.__name__, kernel, (big, out, 0), MEMORY_SASS)
    run.facts[variant] = {"elements": plan.offset_n, "offsets": list(plan.offsets), "passes": plan.passes,
                          "elements_per_thread": k.SWEEP_UNROLL if x4 else 1}


def _stride_sweep(run: Run, variant: str) -> None:
    plan, big = _plan(run), _big(run)
    x4 = SWEEPS[variant][1]
    outs = {s: cuda.device_array(plan.stride_outputs(s), np.float32) for s in plan.strides}

    def launch_for(stride):
        out = outs[stride]
        return (lambda _: k.strided_copy_launch(big, out, stride, x4)), out

    def check_for(stride, out):
        _check_copy(out, lambda j: j * np.uint64(stride), f"{variant} stride={stride}")

    _time_swept(run, variant, list(plan.strides), launch_for, plan.stride_outputs, check_for)
    kernel = k.strided_copy_x4_kernel if x4 else k.strided_copy_kernel
    run.kernel(kernel.__name__, kernel, (big, outs[plan.strides[0]], 1), MEMORY_SASS)
    run.facts[variant] = {"input_elements": plan.big, "outputs": {str(s): plan.stride_outputs(s)
                                                                   for s in plan.strides},
                          "passes": plan.passes, "elements_per_thread": k.SWEEP_UNROLL if x4 else 1}


def _offsets(run: Run) -> None:
    """out[i] = x[i + offset], one 4-byte load per thread (latency-bound: ~54% DRAM-busy at offset 0)."""
    _offset_sweep(run, "offset_copy")


def _strides(run: Run) -> None:
    _stride_sweep(run, "strided_copy")


def _offsets_x4(run: Run) -> None:
    """The offset sweep with four loads in flight per thread: DRAM-bound at offset 0."""
    _offset_sweep(run, "offset_copy_x4")


def _strides_x4(run: Run) -> None:
    _stride_sweep(run, "strided_copy_x4")


def _widths(run: Run) -> None:
    """Copies 4, 8 and 16 bytes wide, one-shot and grid-stride, from L2-resident to 17x the L2."""
    plan, big = _plan(run), _big(run)
    cp = cupy_or_none()
    for n in plan.width_sizes:
        x = big[:n]
        out = cuda.device_array(n, np.float32)
        for variant in WIDTH_VARIANTS:
            poison(out)
            run.time(variant, lambda _, v=variant, x=x, out=out: k.width_launch(v, x, out), size=n,
                     param=k.WIDTH_VARIANTS[variant][1], bytes_moved=USEFUL_BYTES_PER_ELEMENT * n, flops=0)
            _check_copy(out, lambda j: j, f"{variant} n={n}")
        if cp is not None:
            src, dst = cp.asarray(x), cp.asarray(out)
            poison(out)
            run.time(CUPY_COPY, lambda _, s=src, d=dst: cp.copyto(d, s), provider="cupy", size=n,
                     bytes_moved=USEFUL_BYTES_PER_ELEMENT * n, flops=0)
            _check_copy(out, lambda j: j, f"cupy copy n={n}")
    for variant in WIDTH_VARIANTS:
        extra = (queue_counters(),) if variant == "copy_w16_queue" else ()
        pattern = ALL_SASS if variant.startswith("copy_w16") else MEMORY_SASS
        run.kernel(variant, k.WIDTH_VARIANTS[variant][0], (x, out, *extra), pattern)
    run.kernel("add_vec4", k.add_vec4_kernel, (x, x, out), MEMORY_SASS)
    run.facts["access_widths"] = {"sizes": list(plan.width_sizes), "threads_per_block": THREADS_PER_BLOCK}


def _gap(run: Run) -> None:
    """The 16-byte grid-stride copy at the largest size in the shapes that look for its gap."""
    plan, big = _plan(run), _big(run)
    n = plan.width_sizes[-1]
    x, out = big[:n], cuda.device_array(n, np.float32)
    shapes = [(GRID_STRIDE_WAVES, "copy_w16_grid_stride", THREADS_PER_BLOCK, w, w) for w in plan.gap_waves]
    shapes += [(QUEUE_1024, "copy_w16_queue", 1024, 1, np.nan),
               (BLOCK_CHUNKS, BLOCK_CHUNKS, THREADS_PER_BLOCK, 1, np.nan),
               (GRID_STRIDE_1024, "copy_w16_grid_stride", 1024, 1, np.nan),
               (SIGNED_GRID_STRIDE, SIGNED_GRID_STRIDE, THREADS_PER_BLOCK, 1, np.nan)]
    for name, kernel, block, waves, param in shapes:
        poison(out)

        def launch(_, v=kernel, b=block, w=waves):
            if v == SIGNED_GRID_STRIDE:
                roofline_kernels.copy_launch("copy_vec4_grid_stride", x, out)
            else:
                k.width_launch(v, x, out, b, w)

        run.time(name, launch, size=n, param=param, bytes_moved=USEFUL_BYTES_PER_ELEMENT * n, flops=0)
        _check_copy(out, lambda j: j, f"{name} ({param})")
    run.kernel(BLOCK_CHUNKS, k.copy_w16_block_chunks, (x, out), ALL_SASS)
    run.kernel("roofline_copy_vec4_grid_stride", roofline_kernels.copy_vec4_grid_stride, (x, out), ALL_SASS)
    run.kernel("roofline_copy_vec4", roofline_kernels.copy_vec4, (x, out), ALL_SASS)
    run.facts["grid_stride_gap"] = {"elements": n, "waves": list(plan.gap_waves)}


def _particles(run: Run) -> None:
    """SoA variants, AoS, AoSoA and padded records, and CuPy on the same SoA and AoS data.
    Checked once against NumPy on both ends of the arrays, then timed (updates run in place)."""
    plan, big = _plan(run), _big(run)
    n = plan.particles
    useful = k.PARTICLE_USEFUL_BYTES * n
    fields = [big[f * n:(f + 1) * n] for f in range(k.PARTICLE_FIELDS)]  # hash values: random
    start = cuda.device_array((n, k.PARTICLE_FIELDS), np.float32)
    soa = [cuda.device_array(n, np.float32) for _ in range(k.PARTICLE_FIELDS)]
    e = min(4096, n // 2)  # particles checked at each end
    ends = np.r_[0:e, n - e:n].astype(np.uint64)
    host_start = np.stack([k.random_values(ends + np.uint64(f * n), SEED) for f in range(k.PARTICLE_FIELDS)],
                          axis=1)
    expected = k.particles_reference(host_start, DT)

    def reset_soa():
        for a, f in zip(soa, fields, strict=True):
            a.copy_to_device(f)

    def check(records, what):  # records: (n, 6) device array or 6 device arrays
        if isinstance(records, list):
            got = np.stack([np.concatenate([a[:e].copy_to_host(), a[n - e:].copy_to_host()])
                            for a in records], axis=1)
        else:
            got = np.concatenate([records[:e].copy_to_host(), records[n - e:].copy_to_host()])
        if not np.allclose(got, expected, rtol=1e-6, atol=1e-6):
            raise AssertionError(f"{what} differs from NumPy")

    timed = {"size": n, "bytes_moved": useful, "flops": 6 * n}
    for variant in SOA_VARIANTS:
        reset_soa()
        k.particles_soa_launch(variant, soa, DT)
        check(soa, variant)
        run.time(variant, lambda _, v=variant: k.particles_soa_launch(v, soa, DT), **timed)
        run.kernel(variant, k.SOA_KERNELS[variant], (*soa, DT), MEMORY_SASS)
    k.soa_to_aos_launch(fields, start)
    aos = cuda.device_array_like(start)
    aos.copy_to_device(start)
    k.particles_aos_launch(aos, DT)
    check(aos, "particles_aos")
    run.time("particles_aos", lambda _: k.particles_aos_launch(aos, DT), **timed)
    run.kernel("particles_aos", k.particles_aos_kernel, (aos, DT), MEMORY_SASS)
    blocks = cuda.device_array((k.aosoa_blocks(n), k.PARTICLE_FIELDS, k.AOSOA_WIDTH), np.float32)
    k.aos_to_aosoa_launch(start, blocks)
    k.particles_aosoa_launch(blocks, n, DT)
    k.aosoa_to_aos_launch(blocks, aos)
    check(aos, "particles_aosoa")
    run.time("particles_aosoa", lambda _: k.particles_aosoa_launch(blocks, n, DT), **timed)
    run.kernel("particles_aosoa", k.particles_aosoa_kernel, (blocks, np.uint64(n), DT), MEMORY_SASS)
    padded = cuda.device_array(n * k.PADDED_FIELDS, np.float32)
    k.aos_to_padded_launch(start, padded)
    k.particles_padded_launch(padded, DT)
    k.padded_to_aos_launch(padded, aos)
    check(aos, "particles_padded_vec4")
    run.time("particles_padded_vec4", lambda _: k.particles_padded_launch(padded, DT), **timed)
    run.kernel("particles_padded_vec4", k.particles_padded_vec4_kernel, (padded, DT), MEMORY_SASS)
    run.facts["particles"] = {"particles": n, "useful_bytes_per_particle": k.PARTICLE_USEFUL_BYTES}
    cp = cupy_or_none()
    if cp is not None:
        _cupy_particles(run, cp, soa, reset_soa, start, aos, check, timed)


def elementwise_update(cp):
    """The fused kernel a CuPy user writes for the update, on the six SoA arrays."""
    return cp.ElementwiseKernel("float32 vx, float32 vy, float32 vz, float32 dt",
                                "float32 x, float32 y, float32 z",
                                "x += vx * dt; y += vy * dt; z += vz * dt", "particles_elementwise")


def _cupy_particles(run: Run, cp, soa, reset_soa, start, aos, check, timed: dict) -> None:
    x, y, z, vx, vy, vz = (cp.asarray(a) for a in soa)
    kernel = elementwise_update(cp)

    def fused(_):
        kernel(vx, vy, vz, DT, x, y, z)

    def expressions(_):  # what a CuPy user writes first: three kernels and three temporaries
        x[...] += vx * DT
        y[...] += vy * DT
        z[...] += vz * DT

    for name, launch in ((CUPY_ELEMENTWISE, fused), (CUPY_EXPRESSIONS, expressions)):
        reset_soa()
        launch(0)
        check(soa, name)
        run.time(name, launch, provider="cupy", **timed)
    records = cp.asarray(aos)
    records[...] = cp.asarray(start)

    def aos_expression(_):
        records[:, 0:3] += records[:, 3:6] * DT

    aos_expression(0)
    check(aos, CUPY_AOS)
    run.time(CUPY_AOS, aos_expression, provider="cupy", **timed)


def _matrix_walks(run: Run) -> None:
    """A row-major matrix (rows = cols = 8192 floats, leading dimension ld) copied by warps walking
    along rows or down columns; the input is a view of the random buffer, a[r, c] = big[r * ld + c]."""
    plan, big = _plan(run), _big(run)
    rows = cols = plan.matrix
    out = cuda.device_array((rows, cols), np.float32)
    for ld in plan.matrix_lds:
        a = big[:rows * ld].reshape(rows, ld)
        for walk in MATRIX_WALKS:
            poison(out)
            run.time(walk, lambda _, w=walk, a=a: k.matrix_walk_launch(w, a, out, cols), size=rows * cols,
                     param=ld, bytes_moved=USEFUL_BYTES_PER_ELEMENT * rows * cols, flops=0)
            _check_copy(out, lambda j, ld=ld: (j // np.uint64(cols)) * np.uint64(ld) + j % np.uint64(cols),
                        f"{walk} ld={ld}")
    for walk in MATRIX_WALKS:
        run.kernel(walk, k.MATRIX_WALKS[walk], (a, out, np.uint64(rows), np.uint64(cols)), MEMORY_SASS)
    run.facts["matrix_walks"] = {"rows": rows, "cols": cols, "lds": list(plan.matrix_lds),
                                 "threads_per_block": THREADS_PER_BLOCK}


SECTIONS = (
    Section("particles", _particles),
    Section("access widths", _widths),
    Section("grid-stride gap", _gap),
    Section("offsets", _offsets),
    Section("strides", _strides),
    Section("offsets x4", _offsets_x4),
    Section("strides x4", _strides_x4),
    Section("2-D walks", _matrix_walks),
)


# ---------------------------------------------------------------------------- Nsight Compute

NCU_METRICS = (
    "gpu__time_duration.sum", "dram__bytes_read.sum", "dram__bytes_write.sum",
    "dram__throughput.avg.pct_of_peak_sustained_elapsed",
    "lts__t_sectors_srcunit_tex_op_read.sum", "lts__t_sectors_srcunit_tex_op_write.sum",
    "lts__t_sector_hit_rate.pct",
    "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum", "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum",
    "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum", "l1tex__t_requests_pipe_lsu_mem_global_op_st.sum",
    "sm__cycles_active.min", "sm__cycles_active.avg", "sm__cycles_active.max",
    "sm__warps_active.avg.pct_of_peak_sustained_active", "smsp__inst_executed.sum",
    "smsp__issue_active.avg.per_cycle_active",
    "launch__registers_per_thread", "launch__grid_size", "launch__block_size",
    "launch__waves_per_multiprocessor",
    # why warps waited (the gap's deep dive: the queue's barriers, the x4 copy's full load queue); the
    # other stall reasons of the first recordings cost ncu passes and no reader uses them
    *(f"smsp__average_warps_issue_stalled_{reason}_per_issue_active.ratio" for reason in (
        "barrier", "drain", "lg_throttle", "long_scoreboard", "wait")),
)
NCU_ELEMENTS = 2**26  # copies under ncu: 256 MiB per buffer (the offset and stride sweeps' own size)
NCU_PARTICLES = 2**24
NCU_OFFSETS = {"offset_copy": (0, 1, 8, 16), "offset_copy_x4": (0, 1, 2, 4, 8, 16, 32)}
NCU_STRIDES = {"strided_copy": (1, 2, 4, 8, 16, 32, 64, 128, 256),
               "strided_copy_x4": (1, 2, 4, 8, 12, 16, 24, 32, 64, 256)}


@dataclass(frozen=True)
class NcuPlan:
    """The sizes of the profiled launches (the GPU's by default; a test runs toy ones)."""

    big: int = STRIDE_INPUT
    elements: int = NCU_ELEMENTS
    particles: int = NCU_PARTICLES
    matrix: int = MATRIX_N
    matrix_lds: tuple = MATRIX_LDS


def _host_random_fill(array, seed: int, chunk: int = 2**24) -> None:
    """Random floats into a device array by host copies only (under ncu every kernel launch is
    profiled, so the cases' inputs are made without one): one random chunk, copied over and over."""
    flat = array.reshape(array.size)
    block = np.random.default_rng(seed).standard_normal(min(chunk, flat.size), dtype=np.float32)
    for begin in range(0, flat.size, block.size):
        end = min(begin + block.size, flat.size)
        flat[begin:end].copy_to_device(block[:end - begin])


def ncu_cases(plan: NcuPlan | None = None) -> list[ncu.Case]:
    """One launch per case, named as the recording's ``ncu`` block names them. Inputs are made by
    host copies (no kernel runs but the cases' own). Counters do not depend on the values."""
    plan = plan or NcuPlan()
    big = cuda.device_array(plan.big, np.float32)
    _host_random_fill(big, SEED)
    n = plan.elements
    x, out = big[:n], cuda.device_array(max(n, plan.matrix**2), np.float32)
    o = out[:n]
    cases = []

    def case(name, kernel, launch):
        cases.append(ncu.Case(name, kernel, launch))

    case("copy_w4", "copy_w4", lambda: k.width_launch("copy_w4", x, o))
    case("copy_w16", "copy_w16", lambda: k.width_launch("copy_w16", x, o))
    case("roofline copy_vec4", "copy_vec4", lambda: roofline_kernels.copy_launch("copy_vec4", x, o))
    case("roofline copy_vec4_grid_stride", "copy_vec4_grid_stride",
         lambda: roofline_kernels.copy_launch("copy_vec4_grid_stride", x, o))
    for name in ("copy_w16_grid_stride", "copy_w16_grid_stride_x4", "copy_w16_queue", BLOCK_CHUNKS):
        case(name, name, lambda v=name: k.width_launch(v, x, o))
    for waves in (1, 4, 16, 64):
        case(f"copy_w16_grid_stride w{waves}", "copy_w16_grid_stride",
             lambda w=waves: k.width_launch("copy_w16_grid_stride", x, o, THREADS_PER_BLOCK, w))
    case("copy_w16_grid_stride b1024", "copy_w16_grid_stride",
         lambda: k.width_launch("copy_w16_grid_stride", x, o, 1024))
    case("copy_w16_queue b1024", "copy_w16_queue", lambda: k.width_launch("copy_w16_queue", x, o, 1024))
    for variant, offsets in NCU_OFFSETS.items():
        x4 = SWEEPS[variant][1]
        kernel = "offset_copy_x4_kernel" if x4 else "offset_copy_kernel"
        for offset in offsets:
            case(f"{variant} {offset}", kernel,
                 lambda off=offset, x4=x4: k.offset_copy_launch(big, o, off, x4))
    for variant, strides in NCU_STRIDES.items():
        x4 = SWEEPS[variant][1]
        kernel = "strided_copy_x4_kernel" if x4 else "strided_copy_kernel"
        for stride in strides:
            m = min(n, plan.big // stride)
            case(f"{variant} {stride}", kernel,
                 lambda s=stride, m=m, x4=x4: k.strided_copy_launch(big, out[:m], s, x4))
    rows = cols = plan.matrix
    for ld in plan.matrix_lds:
        a = big[:rows * ld].reshape(rows, ld)
        b = out[:rows * cols].reshape(rows, cols)
        for walk in MATRIX_WALKS:
            case(f"{walk} {ld}", walk, lambda w=walk, a=a, b=b: k.matrix_walk_launch(w, a, b, cols))
    cases += _ncu_particle_cases(plan)
    return cases


def _ncu_particle_cases(plan: NcuPlan) -> list[ncu.Case]:
    n = plan.particles
    records = np.random.default_rng(SEED).standard_normal((n, k.PARTICLE_FIELDS), dtype=np.float32)
    soa = [cuda.to_device(np.ascontiguousarray(records[:, f])) for f in range(k.PARTICLE_FIELDS)]
    aos = cuda.to_device(records)
    blocks = cuda.to_device(k.to_aosoa(records))
    padded = cuda.to_device(k.to_padded(records))
    cases = [ncu.Case(variant, f"{variant}_kernel", lambda v=variant: k.particles_soa_launch(v, soa, DT))
             for variant in ("particles_soa_naive", "particles_soa", "particles_soa_vec4")]
    cases += [ncu.Case("particles_aos", "particles_aos_kernel", lambda: k.particles_aos_launch(aos, DT)),
              ncu.Case("particles_aosoa", "particles_aosoa_kernel",
                       lambda: k.particles_aosoa_launch(blocks, n, DT)),
              ncu.Case("particles_padded_vec4", "particles_padded_vec4_kernel",
                       lambda: k.particles_padded_launch(padded, DT))]
    cp = cupy_or_none()
    if cp is not None:
        kernel = elementwise_update(cp)
        x, y, z, vx, vy, vz = (cp.asarray(a) for a in soa)
        cases.append(ncu.Case("cupy ElementwiseKernel", "particles_elementwise",
                              lambda: kernel(vx, vy, vz, DT, x, y, z)))
    return cases


# ---------------------------------------------------------------------------------- figures


def _sweep_alt(model: pd.DataFrame, variant: str) -> str:
    kind, x4 = SWEEPS[variant]
    worst = model.loc[model["error"].abs().idxmax()]
    worst_dram = model.loc[model["dram_model_error"].abs().idxmax()]
    loads = "four loads in flight per thread" if x4 else "one 4-byte load per thread"
    return (f"Useful bandwidth of a copy with {'a start offset' if kind == 'offset' else 'a stride'} "
            f"({loads}) from {model['param'].min()} to {model['param'].max()} elements, from "
            f"{model['gbps'].min():,.0f} to {model['gbps'].max():,.0f} GB/s, beside two models: sectors per "
            f"warp (largest error {worst['error']:+.1%} at {int(worst['param'])}) and DRAM bytes in 64-byte "
            f"granules (largest error {worst_dram['dram_model_error']:+.1%} at {int(worst_dram['param'])}); "
            "below, each model's error per point and the bytes per element each one charges.")


def _request_alt(title: str, request: pd.DataFrame) -> str:
    attrs = request.attrs
    return (f"One warp's request, {title}: the 32 lanes, the bytes each reads, and the 32-byte sectors and "
            f"128-byte lines they fall in: {attrs['sectors']} sectors (ideal {attrs['ideal_sectors']}), "
            f"{attrs['useful_bytes']} useful of {attrs['moved_bytes']} bytes moved.")


SWEEP_FIGURES = {"offset_copy": "offset_sweep", "strided_copy": "stride_sweep",
                 "offset_copy_x4": "offset_sweep_x4", "strided_copy_x4": "stride_sweep_x4"}


def sweep_figure(result: LessonResult, sweep: str):
    """One sweep beside its two models (``sweep_model``), with alt text."""
    variant = _sweep_variant(sweep)
    kind, x4 = SWEEPS[variant]
    model = sweep_model(result, variant)
    ideal = "offset 0" if kind == "offset" else "stride 1"
    return plots.with_alt(
        plots.coalescing.sectors_sweep(model, kind, sweep_ceiling(result.table, variant),
                                       ceiling_label=f"ceiling: this copy at {ideal}",
                                       provenance=result.provenance,
                                       loads_per_thread=k.SWEEP_UNROLL if x4 else 1),
        _sweep_alt(model, variant))


def _requests() -> dict:
    return {name: (title, request) for name, title, request in
            [*warp_requests(), *matrix_requests(), *float4_requests()]}


def _panels(names: tuple, lead: str = ""):
    def draw(result: LessonResult):
        requests = _requests()
        chosen = [requests[name] for name in names]
        return plots.with_alt(plots.coalescing.request_panels(chosen),
                              lead + " ".join(_request_alt(title, request) for title, request in chosen))
    return draw


def _matrix_picture(result: LessonResult):
    requests = _requests()
    walks = [("row walk", requests["request_matrix_row"][1]),
             ("column walk", requests["request_matrix_column"][1])]
    return plots.with_alt(
        plots.coalescing.matrix_walk_picture(walks, MATRIX_TRACE_LD),
        f"A row-major matrix with leading dimension {MATRIX_TRACE_LD} drawn cell by cell. A warp walking "
        f"along a row loads 32 adjacent floats: {walks[0][1].attrs['sectors']} sectors. A warp walking down "
        f"a column loads one float from each of 32 rows, {4 * MATRIX_TRACE_LD} bytes apart: "
        f"{walks[1][1].attrs['sectors']} sectors.")


def _sweep(variant: str):
    def draw(result: LessonResult):
        return sweep_figure(result, variant) if (result.table["variant"] == variant).any() else None
    return draw


def _dram_granularity(result: LessonResult):
    granularity = dram_granularity(result)
    if granularity.empty:
        return None
    big = granularity[granularity["stride"] >= 16]["ncu_read_per_element"]
    return plots.with_alt(
        plots.coalescing.dram_granularity(granularity, provenance=result.provenance),
        "DRAM bytes read per copied 4-byte element against the stride, measured by Nsight Compute, "
        "beside two predictions: whole 32-byte sectors and whole 64-byte granules. From a stride of 16 "
        f"elements (64 bytes) on, the measurement is {_span(big, '.1f')} bytes: the 64-byte granule, "
        "not the 32-byte sector.")


def _span(values: pd.Series, spec: str) -> str:
    """'64.0' when the values round alike, else '68.0 to 68.1'."""
    low, high = format(values.min(), spec), format(values.max(), spec)
    return low if low == high else f"{low} to {high}"


def _access_width(result: LessonResult):
    widths = width_summary(result)
    at_largest = widths[widths["size"] == widths["size"].max()].set_index("variant")["vs_cupy_copy"]
    l2_bytes = float(result.meta.get("l2_mib", 0)) * 2**20 or None
    return plots.with_alt(
        plots.coalescing.access_widths(widths, l2_bytes=l2_bytes, provenance=result.provenance),
        "Copy bandwidth against the size of each buffer (log scale) for 4-, 8- and 16-byte accesses, one "
        "per thread and in a grid-stride loop, beside CuPy's copy, with the size marked at which the two "
        "buffers fill the L2. At the largest size, "
        + "; ".join(f"{v}: {at_largest[v]:.3f} of CuPy's copy" for v in ("copy_w4", "copy_w8", "copy_w16")
                    if v in at_largest) + ".")


def _particles(result: LessonResult):
    particles = particle_summary(result)
    by = particles.set_index("variant")
    return plots.with_alt(
        plots.coalescing.particle_layouts(particles, provenance=result.provenance),
        "Useful bandwidth of the particle update per layout and CuPy version, with the bytes model's "
        "prediction marked for AoS, AoSoA and padded records: "
        + "; ".join(f"{v} {by.loc[v, 'vs_soa']:.3f} of SoA against a model of "
                    f"{by.loc[v, 'bytes_model_vs_soa']:.4g}"
                    for v in ("particles_aos", "particles_aosoa", "particles_padded_vec4") if v in by.index)
        + ".")


def _copies(result: LessonResult):
    table = result.table
    ceiling, ceiling_variant = copy_ceiling(table)
    big = table[table["variant"].isin([*WIDTH_VARIANTS, *GAP_SHAPES, CUPY_COPY])].copy()
    big = big[big["size"] == big["size"].max()]
    waves = big[big["variant"] == GRID_STRIDE_WAVES]
    if len(waves):  # one bar for the waves: the best count, named in its label
        best = waves.loc[waves["gbps"].idxmax()]
        big = big.drop(waves.index[waves.index != best.name])
        big.loc[best.name, "variant"] = f"copy_w16_grid_stride, {best['param']:g} waves of blocks"
    big["param"] = np.nan  # the width is in the name (w4, w8, w16: bytes per access)
    return plots.with_alt(
        plots.charts.percent_of_ceiling(big, ceiling, ceiling_label=f"same-run best copy ({ceiling_variant})",
                                        provenance=result.provenance,
                                        title="Copies at 1 GiB per buffer\n"
                                        "(w4, w8, w16: 4, 8, 16 bytes per access)"),
        "Every copy at 1 GiB per buffer as a share of the same run's best copy: access widths of 4, 8 and 16 "
        "bytes (w4, w8, w16), grid-stride shapes (the best count of waves of blocks, a queue, block chunks) "
        "and CuPy's copy.")


def _waves(result: LessonResult):
    table = result.table
    waves = waves_table(result)
    reference = table[(table["variant"] == CUPY_COPY) & (table["size"] == table["size"].max())]["gbps"]
    reference_gbps = float(reference.iloc[0]) if len(reference) else None
    return plots.with_alt(
        plots.coalescing.waves(waves, reference_gbps, result.provenance),
        "The one-wave grid-stride float4 copy against the waves of blocks in its grid: "
        + ", ".join(f"{int(w)} wave{'s' if w > 1 else ''} {g:,.0f} GB/s"
                    for w, g in zip(waves["waves"], waves["gbps"], strict=True))
        + "; below, how much longer the busiest SM worked than the least busy one, where recorded.")


def _matrix_walks(result: LessonResult):
    if not result.table["variant"].isin(MATRIX_WALKS).any():
        return None
    summary = matrix_summary(result)
    columns = summary[summary["variant"] == "matrix_column_walk"]
    return plots.with_alt(
        plots.coalescing.matrix_walks(summary, provenance=result.provenance),
        "Useful bandwidth of a matrix copy with warps walking along rows and down columns, per leading "
        "dimension: the column walk runs at " + _ratios_per_ld(columns) + ", beside what the sector model "
        "(0.125) and the DRAM-bytes model (1.0) predict for the column walk.")


def _ratios_per_ld(columns: pd.DataFrame) -> str:
    """'0.156 of the row walk at both leading dimensions' where the rounded ratios agree, else one per
    leading dimension."""
    ratios = [f"{v:.3f}" for v in columns["vs_row_walk"]]
    if len(set(ratios)) == 1:
        where = "both leading dimensions" if len(ratios) == 2 else "every leading dimension"
        return f"{ratios[0]} of the row walk at {where}"
    return "; ".join(f"{r} of the row walk at ld = {int(ld)}"
                     for r, ld in zip(ratios, columns["ld"], strict=True))


def _sector_sharing(result: LessonResult):
    """Two neighbouring warps of the offset-1 copy (traced) and what L1, L2 and DRAM moved (ncu)."""
    counters = recorded_counters(result)
    aligned, shifted = counters.loc["offset_copy 0"], counters.loc["offset_copy 1"]
    levels = pd.Series({name: shifted[column] / aligned[column] for name, column in (
        ("L1 load sectors", "l1_ld_sectors"), ("L2 read sectors", "l2_read_sectors"),
        ("DRAM bytes read", "dram_read"))})
    traced = traced_offset(1)
    requests = [traced.request(array="x", warp=w) for w in (0, 1)]
    return plots.memory_pictures.sector_sharing(requests, levels, provenance=result.provenance)


def _granule(result: LessonResult):
    """What one lane costs DRAM 32 and 64 bytes apart, with the bytes Nsight Compute measured."""
    table = dram_granularity(result)
    measured = table[table["variant"] == "strided_copy"].set_index("stride")["ncu_read_per_element"].to_dict()
    return plots.memory_pictures.granule([8, 16, 32], measured, provenance=result.provenance)


def _single(name: str):
    def draw(result: LessonResult):
        title, request = _requests()[name]
        return plots.with_alt(plots.charts.global_sectors(request, title=title), _request_alt(title, request))
    return draw


FIGURES = {  # name -> builder(result): a Figure with alt text, or None where the result lacks the data
    **{name: _single(name) for name in ("request_aligned", "request_offset_1", "request_stride_2",
                                        "request_stride_32", "request_aos_field", "request_matrix_row",
                                        "request_matrix_column", "request_float4_adjacent",
                                        "request_float4_spread_2")},
    "requests_offset": _panels(("request_aligned", "request_offset_1")),
    "requests_float4": _panels(("request_float4_adjacent", "request_float4_spread_2"),
                               "Two warps' 16-byte loads: "),
    "matrix_picture": _matrix_picture,
    **{name: _sweep(variant) for variant, name in SWEEP_FIGURES.items()},
    "dram_granularity": _dram_granularity,
    "access_width": _access_width,
    "particles": _particles,
    "copies": _copies,
    "waves": _waves,
    "matrix_walks": _matrix_walks,
    "sector_sharing": _sector_sharing,
    "granule": _granule,
}


CONCEPT_FIGURES = ("request_aligned", "request_offset_1", "request_stride_2", "request_stride_32",
                   "request_aos_field", "request_matrix_row", "request_matrix_column",
                   "request_float4_adjacent", "request_float4_spread_2", "requests_offset", "requests_float4",
                   "matrix_picture")


def figure(name: str, result: LessonResult | None = None):
    """One of the lesson's figures (``FIGURES``), with its alt text. The concept pictures
    (``CONCEPT_FIGURES``: traced warp requests, the matrix walk) need no result; the others are drawn
    from ``result`` (``lessons.load``)."""
    if name not in FIGURES:
        raise ValueError(f"unknown figure {name!r}; choose one of {', '.join(FIGURES)}")
    if result is None and name not in CONCEPT_FIGURES:
        raise ValueError(f"the figure {name!r} is drawn from measurements: pass the result (lessons.load)")
    drawn = FIGURES[name](result)
    if drawn is None:
        raise RecordingError(f"{result.source}: the figure {name!r} needs an experiment this result lacks")
    return drawn


def figures(result: LessonResult, roof: dict) -> dict:
    """The lesson's figures from a result; those of experiments the result lacks are left out
    (a recording made before the 2-D walks or the x4 sweeps draws without them)."""
    drawn = {name: build(result) for name, build in FIGURES.items()}
    return {name: fig for name, fig in drawn.items() if fig is not None}


# -------------------------------------------------------------------------------- checks


def check() -> pd.DataFrame:
    """Every kernel of the lesson against NumPy on awkward sizes, and misaligned views refused."""
    rng = np.random.default_rng()
    rows = []
    for n in (3, 259):  # a tail of 3 past the float4 groups, and a part-full second block
        records = rng.standard_normal((n, 6), dtype=np.float32)
        expected = k.particles_reference(records, DT)
        for layout in ("aos", "aosoa", "padded"):
            got = k.update_particles(records, DT, layout)
            rows.append(check_row(f"particles {layout} n={n}", np.allclose(got, expected, atol=1e-6),
                                  "x += v*dt against NumPy"))
        for variant in SOA_VARIANTS:
            got = k.update_particles(records, DT, "soa", variant)
            rows.append(check_row(f"{variant} n={n}", np.allclose(got, expected, atol=1e-6),
                                  "x += v*dt against NumPy"))
        x, y = rng.standard_normal(n, dtype=np.float32), rng.standard_normal(n, dtype=np.float32)
        for variant in (*WIDTH_VARIANTS, BLOCK_CHUNKS):
            rows.append(check_row(f"{variant} n={n}", np.array_equal(k.copy_width(x, variant), x),
                                  "bit-exact copy"))
        rows.append(check_row(f"add_vec4 n={n}", np.array_equal(k.add_vec4(x, y), x + y),
                              "16-byte body and scalar tail against NumPy"))
        for per_thread in (1, 3):
            rows.append(check_row(f"copy_w16_thread_chunks x{per_thread} n={n}",
                                  np.array_equal(k.copy_thread_chunks(x, per_thread), x), "bit-exact copy"))
    x = rng.standard_normal(260, dtype=np.float32)
    try:
        k.add_vec4(x[1:], x[1:])
        refused = False
    except k.InputError:
        refused = True
    rows.append(check_row("add_vec4 misaligned view", refused, "x[1:] refused with InputError"))
    x = rng.standard_normal(1300, dtype=np.float32)  # the x4 copies: a last block that is part full
    for x4 in (False, True):
        name = "_x4" if x4 else ""
        rows.append(check_row(f"offset_copy{name} offset=3",
                              np.array_equal(k.offset_copy(x, 3, x4=x4), x[3:]), "against NumPy"))
        rows.append(check_row(f"strided_copy{name} stride=7",
                              np.array_equal(k.strided_copy(x, 7, x4=x4), x[::7]), "against NumPy"))
    a = rng.standard_normal((7, 12), dtype=np.float32)  # leading dimension 12, 9 columns used
    for walk in MATRIX_WALKS:
        rows.append(check_row(f"{walk} 7x9, ld 12", np.array_equal(k.matrix_walk(a, 9, walk), a[:, :9]),
                              "against NumPy"))
    return pd.DataFrame(rows)
