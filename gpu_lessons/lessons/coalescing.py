"""Lesson 3: coalescing. A warp's request is served in 32-byte sectors; layout and access width
decide how many it needs and how many bytes move for the ones a kernel uses.

The experiment: one warp's request drawn from the tracer; a copy with a start offset of 0..32
elements and one with a stride of 1..256 elements, timed beside their sectors per request and the
model "useful bandwidth = ceiling x ideal sectors / actual sectors"; a particle update
``x += v * dt`` in AoS, SoA, AoSoA and padded-record layouts beside CuPy; copies 4, 8 and 16 bytes
wide, one-shot and grid-stride, from L2-resident sizes to 16x the L2.
"""

from __future__ import annotations

import sys

import numpy as np
import pandas as pd

from ..kernels import coalescing as k
from ..scoreboard import Comparison
from .common import check_row, progress, timed_row

NAME = "coalescing"
TITLE = "Coalescing, 32-byte sectors, AoS vs SoA, 16-byte access"
NOTEBOOK = "03_coalescing_aos_soa.ipynb"
SUMMARY = "sectors per request traced and timed: offsets, strides, particle layouts, access width"

SEED = 2026
OFFSETS = list(range(33))  # elements: 0..32 floats = 0..128 bytes
OFFSET_N = 2**26  # 256 MiB read + 256 MiB written
STRIDES = [1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 128, 256]  # 8 = a sector, 32 = a line
STRIDE_INPUT = 2**30  # 4 GiB of input floats: a strided read never comes back to a sector
STRIDE_MAX_OUT = 2**26
WIDTH_SIZES = [2**p for p in (20, 22, 24, 26, 28)]  # 4 MiB (L2-resident) .. 1 GiB (17x L2) per buffer
WIDTH_VARIANTS = ["copy_w4", "copy_w8", "copy_w16", "copy_w4_grid_stride", "copy_w8_grid_stride",
                  "copy_w16_grid_stride", "copy_w16_grid_stride_x4", "copy_w16_queue"]
PERSISTENT_16 = ["copy_w16_grid_stride", "copy_w16_grid_stride_x4"]  # one wave of resident blocks
# The grid-stride copy's gap, timed at the largest size only: more waves of blocks (param = waves of
# resident blocks), one wave taking chunks from a queue with 1024-thread blocks, and blocks that
# each copy one contiguous chunk (DRAM locality).
GAP_WAVES = [2, 4, 8, 16, 32, 64, 128]
GRID_STRIDE_WAVES = "copy_w16_grid_stride waves"
QUEUE_1024 = "copy_w16_queue 1024"
BLOCK_CHUNKS = "copy_w16_block_chunks"
SIGNED_GRID_STRIDE = "copy_vec4_grid_stride (lesson 1, signed index)"
GRID_STRIDE_1024 = "copy_w16_grid_stride 1024 threads"
GAP_SHAPES = [GRID_STRIDE_WAVES, QUEUE_1024, BLOCK_CHUNKS, SIGNED_GRID_STRIDE, GRID_STRIDE_1024]
BALANCED_WAVES = 64  # the scoreboard's many-waves grid-stride copy: each thread still loops about 4 times
PARTICLES = 2**25  # 1.2 GB moved per update (36 bytes a particle): 20x the L2
DT = np.float32(0.01)
CUPY_COPY = "cupy copy"
CUPY_ELEMENTWISE = "cupy ElementwiseKernel (SoA)"
CUPY_EXPRESSIONS = "cupy expressions (SoA)"
CUPY_AOS = "cupy expression (AoS)"
SOA_VARIANTS = list(k.PARTICLE_SOA_VARIANTS)
LAYOUT_VARIANTS = ["particles_aos", *SOA_VARIANTS, "particles_aosoa", "particles_padded_vec4"]

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


# ---------------------------------------------------------------------------------- counting


def _trace_copy(kernel, n_in: int, n_out: int, parameter: int, warps: int):
    from ..sim import trace

    x = np.random.default_rng(1).standard_normal(n_in, dtype=np.float32)
    out = np.zeros(n_out, np.float32)
    return trace.trace(kernel, 1, 32 * warps, x, out, parameter)


def traced_offset(offset: int, warps: int = 2):
    """The tracer's record of offset_copy_kernel (one block of ``warps`` warps) at ``offset``."""
    n = 32 * warps
    return _trace_copy(k.offset_copy_kernel, n + offset, n, offset, warps)


def traced_stride(stride: int, warps: int = 2):
    n = 32 * warps
    return _trace_copy(k.strided_copy_kernel, (n - 1) * stride + 1, n, stride, warps)


def sweep_sectors(kind: str, values) -> pd.DataFrame:
    """Sectors per request of the load and the store, from the tracer (every warp of these copies
    touches the same pattern, so two warps are enough), and the ideal: 4 + 4 per warp."""
    traced = traced_offset if kind == "offset" else traced_stride
    rows = []
    for value in values:
        counts = traced(int(value))
        rows.append({"param": int(value), "ld_sectors": counts.sectors_per_request("ld"),
                     "st_sectors": counts.sectors_per_request("st")})
    table = pd.DataFrame(rows)
    table["sectors"] = table["ld_sectors"] + table["st_sectors"]
    table["ideal_sectors"] = 8.0
    return table


def recorded_ncu_sectors(kind: str, gpu: str | None = None) -> pd.DataFrame:
    """Load sectors per request that Nsight Compute counted on a GPU (data/<gpu>/ncu_counters.csv)
    for the offset or stride cases it recorded; empty when there is no such recording."""
    from ..results import DEFAULT_GPU, data_root

    path = data_root() / (gpu or DEFAULT_GPU) / "ncu_counters.csv"
    if not path.exists():
        return pd.DataFrame(columns=["param", "ncu_ld_sectors", "ncu_st_sectors"])
    raw = pd.read_csv(path)
    case = "offset_copy/offset=" if kind == "offset" else "strided_copy/stride="
    raw = raw[raw["case"].str.startswith(case) & ~raw["case"].str.contains("/n=")]
    wide = raw.pivot_table(index="case", columns="metric", values="value", aggfunc="first")
    out = pd.DataFrame({"param": [int(c.split("=")[1]) for c in wide.index]})
    for op in ("ld", "st"):
        sectors = wide[f"l1tex__t_sectors_pipe_lsu_mem_global_op_{op}.sum"].to_numpy()
        requests = wide[f"l1tex__t_requests_pipe_lsu_mem_global_op_{op}.sum"].to_numpy()
        out[f"ncu_{op}_sectors"] = sectors / requests
    return out.sort_values("param", ignore_index=True)


def sweep_ceiling(table: pd.DataFrame, kind: str) -> float:
    """The sweep's own ideal point (offset 0 / stride 1): the measured ceiling of 4-byte copies."""
    variant, ideal = ("offset_copy", 0) if kind == "offset" else ("strided_copy", 1)
    rows = table[(table["variant"] == variant) & np.isclose(table["param"], ideal)]
    return float(rows["gbps"].iloc[0])


def model_table(table: pd.DataFrame, kind: str, ceiling_gbps: float | None = None) -> pd.DataFrame:
    """Measured useful bandwidth beside the model ceiling x ideal / actual sectors, with the
    model's error per point (measured / model - 1), sectors from the tracer and from ncu.
    The ceiling defaults to the sweep's own ideal point (``sweep_ceiling``)."""
    variant = "offset_copy" if kind == "offset" else "strided_copy"
    ceiling = sweep_ceiling(table, kind) if ceiling_gbps is None else ceiling_gbps
    measured = table[table["variant"] == variant][["param", "size", "gbps"]].copy()
    measured["param"] = measured["param"].astype(int)
    sectors = sweep_sectors(kind, measured["param"])
    merged = measured.merge(sectors, on="param").merge(recorded_ncu_sectors(kind), on="param", how="left")
    merged["model_gbps"] = ceiling * merged["ideal_sectors"] / merged["sectors"]
    merged["error"] = merged["gbps"] / merged["model_gbps"] - 1
    return merged.sort_values("param", ignore_index=True)


def dram_model(table: pd.DataFrame, counters: pd.DataFrame, dram_ceiling_gbps: float) -> pd.DataFrame:
    """The stride sweep against the bytes DRAM actually moved (Nsight Compute, same sizes):
    DRAM-bound bandwidth = DRAM ceiling x useful bytes / DRAM bytes; the kernel can go no faster
    than its own ideal point either, so the model is the smaller of the two."""
    model = model_table(table, "stride")
    cases = {int(c.split()[-1]): c for c in counters.index if c.startswith("strided_copy ")}
    model = model[model["param"].isin(cases)].copy()
    dram = counters.loc[[cases[s] for s in model["param"]]]
    model["dram_bytes"] = (dram["dram_read"] + dram["dram_write"]).to_numpy()
    model["dram_per_useful"] = model["dram_bytes"] / (8 * model["size"])
    model["dram_model_gbps"] = np.minimum(sweep_ceiling(table, "stride"),
                                          dram_ceiling_gbps / model["dram_per_useful"])
    model["dram_model_error"] = model["gbps"] / model["dram_model_gbps"] - 1
    return model[["param", "size", "ld_sectors", "gbps", "model_gbps", "error", "dram_per_useful",
                  "dram_model_gbps", "dram_model_error"]].reset_index(drop=True)


def traced_aos_field(fields: int = 6, field: int = 3, warps: int = 2):
    """The tracer's record of aos_field_kernel reading one field of (n, fields) records."""
    from ..sim import trace

    records = np.random.default_rng(1).standard_normal((32 * warps, fields), dtype=np.float32)
    return trace.trace(k.aos_field_kernel, 1, 32 * warps, records, np.zeros(32 * warps, np.float32), field)


def warp_requests() -> list[tuple[str, str, pd.DataFrame]]:
    """(name, title, request) for the five pictures of section 1: warp 0's load of the input."""
    return [
        ("request_aligned", "aligned copy: ld x[i + 0]", traced_offset(0).request(array="x")),
        ("request_offset_1", "offset 1: ld x[i + 1]", traced_offset(1).request(array="x")),
        ("request_stride_2", "stride 2: ld x[i * 2]", traced_stride(2).request(array="x")),
        ("request_stride_32", "stride 32: ld x[i * 32]", traced_stride(32).request(array="x")),
        ("request_aos_field", "AoS field read: ld aos[i, 3] of (n, 6) records",
         traced_aos_field().request(array="aos")),
    ]


def copy_ceiling(table: pd.DataFrame) -> tuple[float, str]:
    """The same run's best copy (ours or CuPy's) at the largest size: the model's ceiling."""
    copies = table[table["variant"].isin([*WIDTH_VARIANTS, CUPY_COPY])]
    copies = copies[copies["size"] == copies["size"].max()]
    best = copies.loc[copies["gbps"].idxmax()]
    return float(best["gbps"]), str(best["variant"])


LAYOUT_PARTICLES = 128  # four warps (one full warp of float4 threads), small for the simulator


def _traced_layouts(n: int = LAYOUT_PARTICLES) -> dict:
    """The tracer's record of one update in each layout, on the same n random particles."""
    from ..sim import trace

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


def _distinct_sectors(accesses: pd.DataFrame) -> int:
    """Sectors touched at least once (what DRAM must move when nothing is re-fetched)."""
    first = accesses["address"] // 32
    last = (accesses["address"] + accesses["bytes"] - 1) // 32
    sectors = {(root, s) for root, a, b in zip(accesses["root"], first, last, strict=True)
               for s in range(int(a), int(b) + 1)}
    return len(sectors)


def layout_sectors(n: int = LAYOUT_PARTICLES) -> pd.DataFrame:
    """Per layout, from the tracer: memory instructions and sectors per request (the L1 view),
    and the bytes per particle that must cross DRAM (distinct sectors loaded + stored x 32 / n)."""
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
            "dram_bytes": 32 * (_distinct_sectors(loads) + _distinct_sectors(stores)) / n,
        })
    return pd.DataFrame(rows)


def particle_summary(table: pd.DataFrame) -> pd.DataFrame:
    """The particle rows: useful GB/s, the bytes per particle DRAM moves (tracer), moved GB/s, and
    each against the fused ElementwiseKernel and against the best SoA kernel."""
    rows = table[table["variant"].isin([*LAYOUT_VARIANTS, CUPY_ELEMENTWISE, CUPY_EXPRESSIONS, CUPY_AOS])]
    rows = rows[["variant", "provider", "size", "median_ms", "gbps"]].reset_index(drop=True)
    moved = layout_sectors().set_index("variant")["dram_bytes"].to_dict()
    for soa in SOA_VARIANTS:
        moved.setdefault(soa, moved["particles_soa"])
    moved.update({CUPY_ELEMENTWISE: moved["particles_soa"], CUPY_EXPRESSIONS: moved["particles_soa"],
                  CUPY_AOS: moved["particles_aos"]})
    rows["dram_bytes_per_particle"] = rows["variant"].map(moved)
    rows["moved_gbps"] = rows["gbps"] * rows["dram_bytes_per_particle"] / k.PARTICLE_USEFUL_BYTES
    by = rows.set_index("variant")["gbps"]
    if CUPY_ELEMENTWISE in by:
        rows["vs_elementwise"] = rows["gbps"] / by[CUPY_ELEMENTWISE]
    best_soa = by[[v for v in SOA_VARIANTS if v in by]].max()
    rows["vs_best_soa"] = rows["gbps"] / best_soa
    return rows.round(3)


def copy_summary(table: pd.DataFrame) -> pd.DataFrame:
    """Every copy at the largest size, against CuPy's copy of the same run."""
    copies = table[table["variant"].isin([*WIDTH_VARIANTS, *GAP_SHAPES, CUPY_COPY])]
    copies = copies[copies["size"] == copies["size"].max()]
    rows = copies[["variant", "provider", "size", "param", "median_ms", "gbps"]].reset_index(drop=True)
    reference = copies.set_index("variant")["gbps"].get(CUPY_COPY)
    if reference is not None:
        rows["vs_cupy_copy"] = rows["gbps"] / reference
    return rows.sort_values("gbps", ascending=False, ignore_index=True).round(3)


def waves_table(table: pd.DataFrame, counters: pd.DataFrame | None = None) -> pd.DataFrame:
    """The 16-byte grid-stride copy against the waves of resident blocks its grid holds (1 = the
    grid fits on the GPU once), beside CuPy's copy and, where Nsight Compute recorded that shape,
    how far apart the SMs finished (sm__cycles_active max / min)."""
    n = WIDTH_SIZES[-1]
    at_size = table[table["size"] == n]
    one = at_size[at_size["variant"] == "copy_w16_grid_stride"].assign(param=1.0)
    rows = pd.concat([one, at_size[at_size["variant"] == GRID_STRIDE_WAVES]])
    out = pd.DataFrame({"waves": rows["param"].astype(int).to_numpy(), "gbps": rows["gbps"].to_numpy()})
    reference = at_size.set_index("variant")["gbps"].get(CUPY_COPY)
    if reference is not None:
        out["vs_cupy_copy"] = out["gbps"] / reference
    if counters is not None:
        spread = (counters["sm_cycles_max"] / counters["sm_cycles_min"]).to_dict()
        out["sm_max_over_min"] = [spread.get(f"copy_w16_grid_stride w{w}") for w in out["waves"]]
    return out.sort_values("waves", ignore_index=True).round(3)


GAP_TESTS = [  # (hypothesis, what was timed, the variant, its param, the ncu case with its counters)
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
]


def gap_hypotheses(table: pd.DataFrame, counters: pd.DataFrame) -> pd.DataFrame:
    """Each hypothesis for the grid-stride copy's gap with its test: bandwidth against CuPy's copy
    (this recording, 1 GiB) and how far apart the 132 SMs finished (ncu, 256 MiB, where recorded)."""
    at_size = table[table["size"] == WIDTH_SIZES[-1]]
    reference = float(at_size.loc[at_size["variant"] == CUPY_COPY, "gbps"].iloc[0])
    rows = []
    for hypothesis, test, variant, param, case in GAP_TESTS:
        match = at_size[at_size["variant"] == variant]
        if param is not None:
            match = match[np.isclose(match["param"], param)]
        spread = (counters.loc[case, "sm_cycles_max"] / counters.loc[case, "sm_cycles_min"]
                  if case in counters.index else np.nan)
        rows.append({"hypothesis": hypothesis, "test": test,
                     "vs_cupy_copy": float(match["gbps"].iloc[0]) / reference if len(match) else np.nan,
                     "sm_max_over_min": spread})
    return pd.DataFrame(rows).round(3)


# ------------------------------------------------------------------- recorded counters and SASS

COUNTER_COLUMNS = {  # Nsight Compute metric -> short column name, for the tables the notebook shows
    "gpu__time_duration.sum": "time_us",
    "dram__bytes_read.sum": "dram_read",
    "dram__bytes_write.sum": "dram_write",
    "lts__t_sectors_srcunit_tex_op_read.sum": "l2_read_sectors",
    "lts__t_sectors_srcunit_tex_op_write.sum": "l2_write_sectors",
    "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum": "l1_ld_sectors",
    "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum": "l1_ld_requests",
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


def _data_file(name: str, gpu: str | None):
    from ..results import DEFAULT_GPU, data_root

    return data_root() / (gpu or DEFAULT_GPU) / name


def recorded_counters(gpu: str | None = None, raw: bool = False) -> pd.DataFrame:
    """Nsight Compute counters recorded for this lesson's launches (data/<gpu>/coalescing_ncu.csv):
    one row per launch, the metrics of ``COUNTER_COLUMNS`` under short names (``raw``: every metric,
    one row per metric). DRAM bytes are in bytes, times in microseconds."""
    table = pd.read_csv(_data_file("coalescing_ncu.csv", gpu))
    if raw:
        return table
    scale = {"byte": 1, "Kbyte": 1e3, "Mbyte": 1e6, "Gbyte": 1e9, "ns": 1e-3, "nsecond": 1e-3, "us": 1,
             "usecond": 1, "ms": 1e3, "msecond": 1e3}
    table = table[table["metric"].isin(COUNTER_COLUMNS)].copy()
    table["value"] = table["value"] * table["unit"].map(scale).fillna(1)
    wide = table.pivot_table(index="case", columns="metric", values="value", aggfunc="first", sort=False)
    wide = wide.rename(columns=COUNTER_COLUMNS)
    return wide[[c for c in COUNTER_COLUMNS.values() if c in wide.columns]]


def recorded_counters_source(gpu: str | None = None) -> str:
    """Where the recorded counters come from: the GPU, the command, and each job's revision and date."""
    import json

    meta = json.loads(_data_file("coalescing_ncu.json", gpu).read_text())
    jobs = "; ".join(f"{len(s['cases'])} launches at {s['git_revision']} on {s['date'][:10]}"
                     for s in meta["sources"])
    return f"Nsight Compute counters, {meta['gpu']} ({meta['command'].split(' --metrics')[0]}): {jobs}"


def recorded_sass(kernel: str, gpu: str | None = None, grep: str | None = None) -> str:
    """The recorded SASS of one of this lesson's kernels (data/<gpu>/coalescing_sass.json), with
    its register count; ``grep`` keeps only the lines containing that text (e.g. 'LDG')."""
    import json

    recorded = json.loads(_data_file("coalescing_sass.json", gpu).read_text())
    entry = recorded["kernels"][kernel]
    lines = [line for line in entry["sass"].splitlines() if grep is None or grep in line]
    return f"// {kernel}: {entry['registers']} registers per thread\n" + "\n".join(lines)


def recorded_sass_meta(gpu: str | None = None) -> dict:
    import json

    return json.loads(_data_file("coalescing_sass.json", gpu).read_text())["meta"]


# ----------------------------------------------------------------------------- experiment


def measure(show_progress: bool = True) -> pd.DataFrame:
    """Every sweep on the GPU; returns the tidy table (outputs checked after each timing)."""
    from numba import cuda

    from .. import SIMULATED, bench
    from ..results import make_table

    if SIMULATED:  # before allocating 4 GiB: the simulator's arrays live in host memory
        raise bench.TimingUnavailable("the coalescing sweeps time kernels: they need a GPU "
                                      "(the notebook shows the recording instead)")
    big = cuda.device_array(STRIDE_INPUT, np.float32)
    k.fill_random(big, SEED)
    steps = {"particles": _particle_rows, "widths": _width_rows, "gap": _gap_rows, "offsets": _offset_rows,
             "strides": _stride_rows}
    rows: list[dict] = []
    for step in progress(list(steps), NAME) if show_progress else steps:
        rows.extend(steps[step](big))
    return make_table(rows)


def _check_copy(out, source_index, what: str) -> None:
    """out[j] == input[source_index(j)] at both ends and on a sample; nothing left poisoned."""
    left = k.count_nan(out)
    if left:
        raise AssertionError(f"{what}: {left} outputs never written")
    n = out.size
    ends = min(n, 4096)
    for start in (0, n - ends):
        got = out[start:start + ends].copy_to_host()
        want = k.random_values(source_index(np.arange(start, start + ends, dtype=np.uint64)), SEED)
        if not np.array_equal(got, want):
            raise AssertionError(f"{what}: wrong values in [{start}, {start + ends})")


SWEEP_PASSES = 3  # forward, backward, forward: a slow drift of the GPU's speed averages out


def _swept_rows(variant: str, points: list[int], launch_for, size_for, check_for) -> list[dict]:
    """Time ``launch_for(p)`` for every point in SWEEP_PASSES passes of alternating direction; a
    point's row has the median of its passes' medians (min and max over all runs)."""
    import statistics

    from .. import bench
    from ..kernels.util import poison

    timings: dict[int, list] = {p: [] for p in points}
    for number in range(SWEEP_PASSES):
        for point in points if number % 2 == 0 else points[::-1]:
            launch, out = launch_for(point)
            poison(out)
            timings[point].append(bench.measure(launch))
            check_for(point, out)
    rows = []
    for point in points:
        runs = timings[point]
        timing = bench.Timing(statistics.median(t.median_ms for t in runs), min(t.min_ms for t in runs),
                              max(t.max_ms for t in runs), sum(t.runs for t in runs))
        n = size_for(point)
        rows.append({"lesson": NAME, "variant": variant, "provider": "gpu_lessons", "size": n,
                     "param": float(point), "bytes": 8 * n, "flops": 0, "runs": timing.runs,
                     "median_ms": timing.median_ms, "min_ms": timing.min_ms, "max_ms": timing.max_ms,
                     **bench.throughput(8 * n, 0, timing)})
    return rows


def _offset_rows(big):
    from numba import cuda

    from ..kernels.launch import blocks_to_cover

    out = cuda.device_array(OFFSET_N, np.float32)

    def launch_for(offset):
        def launch(_):
            k.offset_copy_kernel[blocks_to_cover(OFFSET_N), k.THREADS_PER_BLOCK](big, out, offset)

        return launch, out

    def check_for(offset, out):
        _check_copy(out, lambda j: j + np.uint64(offset), f"offset_copy offset={offset}")

    return _swept_rows("offset_copy", OFFSETS, launch_for, lambda _: OFFSET_N, check_for)


def stride_outputs(stride: int) -> int:
    return min(STRIDE_MAX_OUT, STRIDE_INPUT // stride)


def _stride_rows(big):
    from numba import cuda

    from ..kernels.launch import blocks_to_cover

    outs = {s: cuda.device_array(stride_outputs(s), np.float32) for s in STRIDES}

    def launch_for(stride):
        out = outs[stride]

        def launch(_):
            k.strided_copy_kernel[blocks_to_cover(out.size), k.THREADS_PER_BLOCK](big, out, stride)

        return launch, out

    def check_for(stride, out):
        _check_copy(out, lambda j: j * np.uint64(stride), f"strided_copy stride={stride}")

    return _swept_rows("strided_copy", STRIDES, launch_for, stride_outputs, check_for)


def _width_rows(big):
    from numba import cuda

    from ..kernels.util import poison

    rows = []
    cp = _cupy()
    for n in WIDTH_SIZES:
        x = big[:n]
        out = cuda.device_array(n, np.float32)
        for variant in WIDTH_VARIANTS:
            poison(out)
            def launch(_, v=variant, x=x, out=out):
                k.width_launch(v, x, out)

            rows.append(timed_row(NAME, variant, launch, size=n, param=k.WIDTH_VARIANTS[variant][1],
                                  bytes_moved=8 * n, flops=0))
            _check_copy(out, lambda j: j, f"{variant} n={n}")
        if cp is not None:
            src, dst = cp.asarray(x), cp.asarray(out)
            poison(out)
            rows.append(timed_row(NAME, CUPY_COPY, lambda _, s=src, d=dst: cp.copyto(d, s), provider="cupy",
                                  size=n, bytes_moved=8 * n, flops=0))
            _check_copy(out, lambda j: j, f"cupy copy n={n}")
    return rows


def _gap_rows(big):
    """The 16-byte grid-stride copy at the largest size in the shapes that look for its gap."""
    from numba import cuda

    from ..kernels import roofline as roofline_kernels
    from ..kernels.util import poison

    n = WIDTH_SIZES[-1]
    x, out = big[:n], cuda.device_array(n, np.float32)
    shapes = [(GRID_STRIDE_WAVES, "copy_w16_grid_stride", k.THREADS_PER_BLOCK, w, w) for w in GAP_WAVES]
    shapes += [(QUEUE_1024, "copy_w16_queue", 1024, 1, np.nan),
               (BLOCK_CHUNKS, BLOCK_CHUNKS, k.THREADS_PER_BLOCK, 1, np.nan),
               (GRID_STRIDE_1024, "copy_w16_grid_stride", 1024, 1, np.nan),
               (SIGNED_GRID_STRIDE, SIGNED_GRID_STRIDE, k.THREADS_PER_BLOCK, 1, np.nan)]
    rows = []
    for name, kernel, block, waves, param in shapes:
        poison(out)
        def launch(_, v=kernel, b=block, w=waves):
            if v == SIGNED_GRID_STRIDE:
                roofline_kernels.copy_launch("copy_vec4_grid_stride", x, out)
            else:
                k.width_launch(v, x, out, b, w)

        rows.append(timed_row(NAME, name, launch, size=n, param=param, bytes_moved=8 * n, flops=0))
        _check_copy(out, lambda j: j, f"{name} ({param})")
    return rows


def _cupy():
    try:
        import cupy
    except ImportError:
        return None
    return cupy


def _particle_rows(big):
    """SoA variants, AoS, AoSoA and padded records, and CuPy on the same SoA and AoS data.
    Checked once against NumPy on both ends of the arrays, then timed (updates run in place)."""
    from numba import cuda

    n = PARTICLES
    useful = k.PARTICLE_USEFUL_BYTES * n
    fields = [big[f * n:(f + 1) * n] for f in range(k.PARTICLE_FIELDS)]  # hash values: random
    start = cuda.device_array((n, k.PARTICLE_FIELDS), np.float32)
    soa = [cuda.device_array(n, np.float32) for _ in range(k.PARTICLE_FIELDS)]
    e = min(4096, n // 2)  # particles checked at each end
    ends = np.r_[0:e, n - e:n].astype(np.uint64)
    host_start = np.stack([k.random_values(ends + np.uint64(f * n), SEED) for f in range(6)], axis=1)
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

    rows = []
    for variant in SOA_VARIANTS:
        reset_soa()
        k.particles_soa_launch(variant, soa, DT)
        check(soa, variant)
        rows.append(timed_row(NAME, variant, lambda _, v=variant: k.particles_soa_launch(v, soa, DT),
                              size=n, bytes_moved=useful, flops=6 * n))
    k.soa_to_aos_launch(fields, start)
    aos = cuda.device_array_like(start)
    aos.copy_to_device(start)
    k.particles_aos_launch(aos, DT)
    check(aos, "particles_aos")
    rows.append(timed_row(NAME, "particles_aos", lambda _: k.particles_aos_launch(aos, DT), size=n,
                          bytes_moved=useful, flops=6 * n))
    blocks = cuda.device_array((k.aosoa_blocks(n), k.PARTICLE_FIELDS, k.AOSOA_WIDTH), np.float32)
    k.aos_to_aosoa_launch(start, blocks)
    k.particles_aosoa_launch(blocks, n, DT)
    k.aosoa_to_aos_launch(blocks, aos)
    check(aos, "particles_aosoa")
    rows.append(timed_row(NAME, "particles_aosoa", lambda _: k.particles_aosoa_launch(blocks, n, DT), size=n,
                          bytes_moved=useful, flops=6 * n))
    padded = cuda.device_array(n * k.PADDED_FIELDS, np.float32)
    k.aos_to_padded_launch(start, padded)
    k.particles_padded_launch(padded, DT)
    k.padded_to_aos_launch(padded, aos)
    check(aos, "particles_padded_vec4")
    rows.append(timed_row(NAME, "particles_padded_vec4", lambda _: k.particles_padded_launch(padded, DT),
                          size=n, bytes_moved=useful, flops=6 * n))
    cp = _cupy()
    if cp is not None:
        rows.extend(_cupy_particle_rows(cp, soa, reset_soa, start, aos, check, n, useful))
    return rows


def elementwise_update(cp):
    """The fused kernel a CuPy user writes for the update, on the six SoA arrays."""
    return cp.ElementwiseKernel("float32 vx, float32 vy, float32 vz, float32 dt",
                                "float32 x, float32 y, float32 z",
                                "x += vx * dt; y += vy * dt; z += vz * dt", "particles_elementwise")


def _cupy_particle_rows(cp, soa, reset_soa, start, aos, check, n, useful):
    x, y, z, vx, vy, vz = (cp.asarray(a) for a in soa)
    kernel = elementwise_update(cp)

    def fused(_):
        kernel(vx, vy, vz, DT, x, y, z)

    def expressions(_):  # what a CuPy user writes first: three kernels and three temporaries
        x[...] += vx * DT
        y[...] += vy * DT
        z[...] += vz * DT

    rows = []
    for name, launch in ((CUPY_ELEMENTWISE, fused), (CUPY_EXPRESSIONS, expressions)):
        reset_soa()
        launch(0)
        check(soa, name)
        rows.append(timed_row(NAME, name, launch, provider="cupy", size=n, bytes_moved=useful, flops=6 * n))
    records = cp.asarray(aos)
    records[...] = cp.asarray(start)

    def aos_expression(_):
        records[:, 0:3] += records[:, 3:6] * DT

    aos_expression(0)
    check(aos, CUPY_AOS)
    rows.append(timed_row(NAME, CUPY_AOS, aos_expression, provider="cupy", size=n, bytes_moved=useful,
                          flops=6 * n))
    return rows


# ------------------------------------------------------------------------------- figures


def figures(table: pd.DataFrame, ceilings: dict, provenance: str) -> dict:
    from .. import plots

    ceiling, ceiling_variant = copy_ceiling(table)
    label = f"same-run ceiling ({ceiling_variant})"
    figs = {name: plots.global_sectors(request, title=title) for name, title, request in warp_requests()}
    for kind in ("offset", "stride"):
        own = sweep_ceiling(table, kind)
        figs[f"{kind}_sweep"] = plots.sectors_sweep(model_table(table, kind), kind, own,
                                                    ceiling_label=f"{kind} sweep's ideal point",
                                                    provenance=provenance)
    widths = table[table["variant"].isin([*WIDTH_VARIANTS[:6], CUPY_COPY])]
    figs["access_width"] = plots.bandwidth_vs_size(widths, ceiling_gbps=ceiling, ceiling_label=label,
                                                   provenance=provenance,
                                                   title="Copy bandwidth by access width, L2 to 17x L2")
    layouts = table[table["variant"].isin([*LAYOUT_VARIANTS, CUPY_ELEMENTWISE, CUPY_EXPRESSIONS, CUPY_AOS])]
    figs["particles"] = plots.percent_of_ceiling(layouts, ceiling, ceiling_label=label, provenance=provenance,
                                                 title="Particle update x += v*dt, useful GB/s")
    big = table[table["variant"].isin([*WIDTH_VARIANTS, *GAP_SHAPES, CUPY_COPY])]
    figs["copies"] = plots.percent_of_ceiling(big, ceiling, ceiling_label=label, provenance=provenance,
                                              title="Copies at 1 GiB per buffer")
    return figs


# -------------------------------------------------------------------------------- checks


def check() -> pd.DataFrame:
    """Every kernel of the lesson against NumPy on awkward sizes, and misaligned views refused."""
    rng = np.random.default_rng()
    rows = []
    for n in (3, 1027):
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
        for variant in WIDTH_VARIANTS:
            rows.append(check_row(f"{variant} n={n}", np.array_equal(k.copy_width(x, variant), x),
                                  "bit-exact copy"))
        rows.append(check_row(f"add_vec4 n={n}", np.array_equal(k.add_vec4(x, y), x + y),
                              "16-byte body and scalar tail against NumPy"))
    x = rng.standard_normal(1028, dtype=np.float32)
    try:
        k.add_vec4(x[1:], x[1:])
        refused = False
    except k.InputError:
        refused = True
    rows.append(check_row("add_vec4 misaligned view", refused, "x[1:] refused with InputError"))
    x = rng.standard_normal(300, dtype=np.float32)
    rows.append(check_row("offset_copy offset=3", np.array_equal(k.offset_copy(x, 3), x[3:]),
                          "against NumPy"))
    rows.append(check_row("strided_copy stride=7", np.array_equal(k.strided_copy(x, 7), x[::7]),
                          "against NumPy"))
    return pd.DataFrame(rows)


def load(live: bool | None = None, gpu: str | None = None):
    """This lesson's table: measured now on a GPU, else the reference recording (see common.load)."""
    from . import common

    return common.load(sys.modules[__name__], live=live, gpu=gpu)
