"""Lesson 4: shared-memory bank conflicts, padding and swizzling; the transpose as the case study.

The experiment: a microbenchmark reading shared memory at word strides 1..33 and a broadcast (time
per warp request against the wavefronts it needs), then the transpose, step by step (our copy as
the ceiling; naive; 32x32 tile; padded 32x33; XOR-swizzled; 64x64 tiles with 16-byte accesses,
unswizzled and swizzled), at several shapes including non-square and non-multiple-of-32 ones,
beside ``cupy.copyto`` and what a CuPy user writes, ``cupy.ascontiguousarray(a.T)``.
"""

from __future__ import annotations

import math
import sys

import numpy as np
import pandas as pd

from ..kernels import bank_conflicts as k
from ..occupancy import occupancy
from ..scoreboard import Comparison
from .common import check_row, progress, timed_row

NAME = "bank_conflicts"
TITLE = "Shared-memory bank conflicts, padding and swizzling"
NOTEBOOK = "04_bank_conflicts_padding.ipynb"
SUMMARY = "cost of a conflict per wavefront; the transpose: 32x32, padded, swizzled, 64x64 float4 tiles"

# Microbenchmark: strides in words; 0 is a broadcast (every lane reads the same word).
READ_STRIDES = [0, 1, 2, 4, 8, 16, 32, 33]
READ_BLOCK = 256
READ_BLOCKS_PER_SM = 8  # 8 x 16 KiB of shared memory, 64 warps: a full SM
READ_REPS = 256  # trips of 16 loads per thread: ~0.13 ms at 1 wavefront per request, ~4 ms at 32

SQUARE = (8192, 8192)  # the scoreboard's matrix: 256 MiB in, 256 MiB out
SHAPES = [SQUARE, (16384, 2048), (5000, 7000), (4099, 8191)]  # non-square; not multiples of 32; odd
TRANSPOSE_VARIANTS = list(k.TRANSPOSES)
COPY = "copy"  # our float4 copy of the same bytes: the ceiling a transpose can reach
CUPY_COPY = "cupy copyto"
CUPY_TRANSPOSE = "cupy ascontiguousarray(a.T)"

COMPARISONS = [
    Comparison(title="transpose 8192x8192 vs device copy", lesson=NAME, metric="gbps",
               ours=TRANSPOSE_VARIANTS, reference=CUPY_COPY, size=SQUARE[0] * SQUARE[1], param=SQUARE[0]),
    Comparison(title="transpose 8192x8192 vs cupy a.T copy", lesson=NAME, metric="gbps",
               ours=TRANSPOSE_VARIANTS, reference=CUPY_TRANSPOSE, size=SQUARE[0] * SQUARE[1],
               param=SQUARE[0]),
]


# ------------------------------------------------------------------ counting, for the narrative


def conflict_degree(stride: int) -> int:
    """Wavefronts of one 32-lane request of 4-byte words at word ``stride`` (0: a broadcast)."""
    return 1 if stride == 0 else math.gcd(stride, 32)


def traced_read_requests(strides=READ_STRIDES) -> pd.DataFrame:
    """The tracer's wavefronts and conflicts per request of the microbenchmark's loads, per stride."""
    from ..sim.trace import trace

    rows = []
    for stride in strides:
        out = np.zeros(32, np.float32)
        counts = trace(k.shared_read_kernel, 1, 32, out, stride, 1)
        request = counts.request(source="buffer[slot + u32(32 * j)]", array="buffer", op="ld")
        rows.append({"stride": stride, "wavefronts": request.attrs["wavefronts"],
                     "bank_conflicts": request.attrs["bank_conflicts"],
                     "distinct_banks": int(request["bank"].nunique()),
                     "distinct_words": int(request["word"].nunique())})
    return pd.DataFrame(rows)


TRACE_SHAPE = (64, 128)  # two 64x64 tiles, eight 32x32 tiles: a few seconds on the simulator


def traced_transposes(shape=TRACE_SHAPE, variants=None) -> pd.DataFrame:
    """Per transpose: shared requests, wavefronts and bank conflicts (ld and st), from the tracer."""
    from ..sim.trace import trace

    rng = np.random.default_rng(4)
    a = rng.standard_normal(shape, dtype=np.float32)
    rows = []
    for variant in variants or TRANSPOSE_VARIANTS:
        out = np.zeros(shape[::-1], np.float32)
        counts = _trace_transpose(trace, variant, a, out)
        if not np.array_equal(out, a.T):
            raise AssertionError(f"{variant}: traced run did not transpose")
        t = counts.totals
        row = {"variant": variant}
        for op in ("ld", "st"):
            row[f"shared_{op}_requests"] = t[f"smsp__inst_executed_op_shared_{op}.sum"]
            row[f"shared_{op}_wavefronts"] = t[f"l1tex__data_pipe_lsu_wavefronts_mem_shared_op_{op}.sum"]
            row[f"shared_{op}_conflicts"] = t[f"l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_{op}.sum"]
        row["global_sectors"] = (t["l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum"]
                                 + t["l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum"])
        row["ideal_sectors"] = 2 * a.nbytes // 32
        rows.append(row)
    return pd.DataFrame(rows)


def _trace_transpose(trace, variant, a, out):
    kernel, grid, block, args = _launch_config(variant, a, out)
    return trace(kernel, grid, block, *args)


def _launch_config(variant, a, out):
    """(kernel, grid, block, args) of one transpose of host arrays, as the lesson launches it."""
    rows, cols = a.shape
    if variant == "naive":
        return (k.transpose_naive_kernel, k.transpose_grid(a.shape, k.TRANSPOSE_BLOCK), k.TRANSPOSE_BLOCK,
                (a, out))
    if variant in k.TILE32_KERNELS:
        return k.TILE32_KERNELS[variant], k.tiled_transpose_grid(a.shape), k.TRANSPOSE_BLOCK, (a, out)
    vector = int(rows % 4 == 0 and cols % 4 == 0)
    return (k.TILE64_KERNELS[variant], k.tile64_grid(a.shape), (k.TILE64_THREADS,),
            (a.reshape(-1), out.reshape(-1), rows, cols, vector))


# Launches profiled by Nsight Compute on the GPU (benchmarks/bank_conflicts_gpu.py) and traced by
# the tests: the same kernels, grids and inputs, so the two sets of counts must agree exactly.
NCU_SHAPES = [TRACE_SHAPE, (45, 70)]


def ncu_cases() -> list[dict]:
    """name, kernel, grid, block, args (host arrays; the last array is the output)."""
    rng = np.random.default_rng(0)
    cases = []
    for stride in READ_STRIDES:
        expected = k.shared_read_reference(np.arange(READ_BLOCK) % 32, stride, 1)
        cases.append({"name": f"shared_read/stride={stride}", "kernel": k.shared_read_kernel, "grid": (1,),
                      "block": (READ_BLOCK,), "args": (np.zeros(READ_BLOCK, np.float32), stride, 1),
                      "expected": expected})
    for stride in (1, 2):
        x = rng.standard_normal(32)
        cases.append({"name": f"shared_stride64/stride={stride}", "kernel": k.shared_stride64_kernel,
                      "grid": (1,), "block": (32,), "args": (x, np.zeros(32), stride), "expected": x})
    for shape in NCU_SHAPES:
        rows, cols = shape
        a = rng.standard_normal(shape, dtype=np.float32)
        out = np.zeros((cols, rows), np.float32)
        for variant in TRANSPOSE_VARIANTS:
            kernel, grid, block, args = _launch_config(variant, a, out)
            cases.append({"name": f"{variant}/{rows}x{cols}", "kernel": kernel, "grid": tuple(grid),
                          "block": tuple(block), "args": args, "expected": a.T})
    return cases


# ----------------------------------------------------------------------------- experiment


def measure(show_progress: bool = True) -> pd.DataFrame:
    """Run the microbenchmark and the transposes on the GPU; returns the tidy table (checked)."""
    from ..results import make_table

    rows = _read_rows()
    shapes = progress(SHAPES, NAME) if show_progress else SHAPES
    for shape in shapes:
        rows.extend(_transpose_rows(shape))
    return make_table(rows)


def _read_rows() -> list[dict]:
    from numba import cuda

    from ..device import device_info
    from ..kernels.util import poison

    blocks = device_info().sms * READ_BLOCKS_PER_SM
    threads = blocks * READ_BLOCK
    requests = threads // 32 * READ_REPS * k.READ_UNROLL
    out = cuda.device_array(threads, np.float32)
    lanes = np.arange(threads) % 32
    rows = []
    for stride in READ_STRIDES:
        poison(out)
        rows.append(timed_row(NAME, "shared_read", lambda _, s=stride: k.shared_read_launch(
            out, s, READ_REPS, blocks, READ_BLOCK), size=requests, param=stride,
            bytes_moved=128 * requests, flops=0))
        if not np.array_equal(out.copy_to_host(), k.shared_read_reference(lanes, stride, READ_REPS)):
            raise AssertionError(f"shared_read stride {stride}: sums differ from NumPy")
    return rows


def _transpose_rows(shape) -> list[dict]:
    from numba import cuda

    from ..kernels import roofline
    from ..kernels.util import poison

    rows_n, cols_n = shape
    n = rows_n * cols_n
    a, same = _matrix(shape, seed=2026 + n)
    out = cuda.device_array((cols_n, rows_n), np.float32)
    common = {"size": n, "param": rows_n, "bytes_moved": 8 * n, "flops": 0}
    table = []

    poison(out)
    flat_a, flat_out = a.reshape(n), out.reshape(n)
    table.append(timed_row(NAME, COPY, lambda _: roofline.copy_launch("copy_vec4", flat_a, flat_out),
                           **common))
    if not same(flat_out.reshape(rows_n, cols_n), transposed=False):
        raise AssertionError(f"copy {shape} did not copy exactly")
    for variant in TRANSPOSE_VARIANTS:
        poison(out)
        launch = k.transpose_launcher(variant, a, out)
        table.append(timed_row(NAME, variant, lambda _, go=launch: go(), **common))
        if not same(out):
            raise AssertionError(f"{variant} {shape}: result differs from a.T")
    table.extend(_cupy_rows(a, same, common))
    return table


def _matrix(shape, seed: int):
    """A random device matrix (never zeros) and ``same(out, transposed=True)``: out == a.T (or a).

    With CuPy the data is made and compared on the device (seconds saved per shape at these
    sizes); the reference transpose is checked against the host copy at 4096 random positions.
    """
    from numba import cuda

    try:
        import cupy as cp
    except ImportError:
        a_host = np.random.default_rng(seed).random(shape, dtype=np.float32) - np.float32(0.5)
        expected = np.ascontiguousarray(a_host.T)

        def same_host(out, transposed=True):
            return np.array_equal(out.copy_to_host(), expected if transposed else a_host)

        return cuda.to_device(a_host), same_host
    a_cp = cp.random.default_rng(seed).random(shape, dtype=cp.float32) - cp.float32(0.5)
    expected = cp.ascontiguousarray(a_cp.T)
    rng = np.random.default_rng(seed)
    i, j = rng.integers(0, shape[0], 4096), rng.integers(0, shape[1], 4096)
    if not np.array_equal(cp.asnumpy(expected[j, i]), cp.asnumpy(a_cp)[i, j]):
        raise AssertionError("the reference transpose is wrong")

    def same(out, transposed=True):
        return bool(cp.array_equal(cp.asarray(out), expected if transposed else a_cp))

    return cuda.as_cuda_array(a_cp), same


def _cupy_rows(a, same, common) -> list[dict]:
    try:
        import cupy as cp
    except ImportError:
        return []
    a = cp.asarray(a)
    copied = cp.full_like(a, cp.nan)
    rows = [timed_row(NAME, CUPY_COPY, lambda _: cp.copyto(copied, a), provider="cupy", **common)]
    if not same(copied, transposed=False):
        raise AssertionError("cupy.copyto mismatch")
    result = {}

    def user_transpose(_):
        result["out"] = cp.ascontiguousarray(a.T)  # what a CuPy user writes (allocates its output)

    rows.append(timed_row(NAME, CUPY_TRANSPOSE, user_transpose, provider="cupy", **common))
    if not same(result["out"]):
        raise AssertionError("cupy.ascontiguousarray(a.T) mismatch")
    return rows


# ------------------------------------------------------------------------------ tables


def read_cost(table: pd.DataFrame, sms: int, sm_clock_mhz: float | None = None) -> pd.DataFrame:
    """The microbenchmark per stride: ns (and SM clocks) per warp request per SM, beside wavefronts."""
    reads = table[table["variant"] == "shared_read"].sort_values("param")
    cost = pd.DataFrame({"stride": reads["param"].astype(int).to_numpy()})
    cost["access"] = ["broadcast" if s == 0 else f"stride {s}" for s in cost["stride"]]
    cost["wavefronts"] = [conflict_degree(s) for s in cost["stride"]]
    cost["ns_per_request"] = (reads["median_ms"].to_numpy() * 1e6 * sms / reads["size"].to_numpy())
    if sm_clock_mhz:
        cost["clocks_per_request"] = cost["ns_per_request"] * sm_clock_mhz / 1e3
    base = cost.loc[cost["stride"] == 1, "ns_per_request"]
    if len(base):
        cost["vs_stride_1"] = cost["ns_per_request"] / float(base.iloc[0])
    return cost


def transpose_summary(table: pd.DataFrame) -> pd.DataFrame:
    """Per shape and variant: GB/s and the fraction of our copy and of cupy.copyto, same run."""
    picked = table[table["variant"] != "shared_read"].copy()
    picked["shape"] = [f"{int(p)}x{int(s // p)}"
                       for s, p in zip(picked["size"], picked["param"], strict=True)]
    out = []
    for shape, rows in picked.groupby("shape", sort=False):
        by = rows.set_index("variant")["gbps"]
        for variant, gbps in by.items():
            out.append({"shape": shape, "variant": variant, "gbps": gbps,
                        "of_copy": gbps / by.get(COPY, np.nan),
                        "of_cupy_copy": gbps / by.get(CUPY_COPY, np.nan),
                        "vs_cupy_transpose": gbps / by.get(CUPY_TRANSPOSE, np.nan)})
    return pd.DataFrame(out)


def figures(table: pd.DataFrame, ceilings: dict, provenance: str) -> dict:
    from .. import plots

    square = table[(table["size"] == SQUARE[0] * SQUARE[1]) & (table["param"] == SQUARE[0])]
    figs = {}
    reference = square[square["variant"] == CUPY_COPY]
    if len(reference):
        figs["transpose_8192"] = plots.percent_of_ceiling(
            square, ceiling=float(reference["gbps"].iloc[0]), metric="gbps",
            ceiling_label="cupy.copyto, same run", provenance=provenance,
            title="Transpose 8192x8192 float32: share of cupy.copyto")
        summary = transpose_summary(table)
        figs["transpose_shapes"] = plots.grouped_fractions(
            summary[summary["variant"] != CUPY_COPY], provenance=provenance,
            title="Transposes at four shapes: share of cupy.copyto, same run")
    reads = table[table["variant"] == "shared_read"]
    if len(reads):
        cost = read_cost(table, _sms(provenance))
        figs["read_cost"] = plots.time_vs_wavefronts(cost, provenance=provenance)
    return figs


def _sms(provenance: str) -> int:
    """SMs of the recorded GPU, from its provenance line ('..., 132 SMs, ...'); the H200's otherwise."""
    import re

    match = re.search(r"(\d+) SMs", provenance or "")
    return int(match.group(1)) if match else 132



# ------------------------------------------------- recorded on the GPU: ncu counters, resources, SASS

GPU_EXTRAS = "bank_conflicts_gpu.json"  # written by benchmarks/bank_conflicts_gpu.py record


def gpu_extras(gpu: str | None = None, root=None) -> dict:
    """The recorded ncu counters, resources and SASS summaries, with a ``provenance`` line."""
    import json

    from .. import results

    folder = results.data_root(root) / (gpu or results.DEFAULT_GPU)
    path = folder / GPU_EXTRAS
    if not path.exists():
        raise results.MissingRecordingError(f"{results.shown_path(path)}: not recorded (run "
                                            "benchmarks/bank_conflicts_gpu.py record on a GPU)")
    payload = json.loads(path.read_text())
    info = payload["provenance"]
    meta = {**info["device"], "gpu": info["device"].get("name"), "date": info["date_utc"]}
    payload["provenance_line"] = f"{results.provenance(meta)}, {info.get('ncu', 'ncu')}"
    return payload


def ncu_table(extras: dict, cases: str | None = None) -> pd.DataFrame:
    """Recorded ncu counters, one row per case (optionally those whose name starts with ``cases``)."""
    rows = pd.DataFrame(extras["ncu"])
    if cases:
        rows = rows[rows["case"].str.startswith(cases)]
    table = rows.pivot_table(index="case", columns="metric", values="value", aggfunc="first", sort=False)
    short = {m: m.replace("l1tex__data_pipe_lsu_", "").replace("l1tex__data_", "").replace("l1tex__t_", "")
             .replace("smsp__inst_executed_op_", "inst_").replace("_pipe_lsu", "").replace(".sum", "")
             for m in table.columns}
    return table.rename(columns=short).reset_index()


OCCUPANCY_LIMITS = {"launch__occupancy_limit_shared_mem": "shared memory",
                    "launch__occupancy_limit_registers": "registers",
                    "launch__occupancy_limit_warps": "warps", "launch__occupancy_limit_blocks": "blocks"}


def occupancy_table(extras: dict, shape=TRACE_SHAPE) -> pd.DataFrame:
    """Per kernel, Nsight Compute's launch report: shared memory per block (as declared, and with
    the driver's reserve), registers, and the blocks per SM each resource allows; the least binds."""
    rows = pd.DataFrame(extras["ncu"])
    at_shape = rows["case"].str.endswith(f"/{shape[0]}x{shape[1]}")
    picked = rows[at_shape | (rows["case"] == "shared_read/stride=1")]
    wide = picked.pivot_table(index="case", columns="metric", values="value", aggfunc="first", sort=False)
    wide = wide.dropna(subset=[*OCCUPANCY_LIMITS, "launch__shared_mem_per_block_static"])  # ncu without it
    table = pd.DataFrame({
        "case": wide.index,
        "shared_bytes": wide["launch__shared_mem_per_block_static"].astype(int).to_numpy(),
        "shared_bytes_with_reserve": wide["launch__shared_mem_per_block"].astype(int).to_numpy(),
        "registers": wide["launch__registers_per_thread"].astype(int).to_numpy(),
    })
    limits = wide[list(OCCUPANCY_LIMITS)].astype(int)
    for metric, name in OCCUPANCY_LIMITS.items():
        table[f"blocks_by_{name.replace(' ', '_')}"] = limits[metric].to_numpy()
    table["resident_blocks"] = limits.min(axis=1).to_numpy()
    table["bound_by"] = [", ".join(OCCUPANCY_LIMITS[m] for m in limits.columns if row[m] == row.min())
                         for _, row in limits.iterrows()]
    table["occupancy_pct"] = wide["sm__maximum_warps_per_active_cycle_pct"].to_numpy()
    # Lesson 2's calculator on the same resources, beside what ncu reported for the launch
    threads = wide["launch__block_size"].astype(int).to_numpy()
    answers = [occupancy(int(t), int(r), int(b)) for t, r, b in
               zip(threads, table["registers"], table["shared_bytes"], strict=True)]
    table["calculator_blocks"] = [a.blocks_per_sm for a in answers]
    table["calculator_limiter"] = [a.limiter for a in answers]
    return table.reset_index(drop=True)


def padding_cost(threads: int = 256, registers: int = 32) -> pd.DataFrame:
    """Lesson 2's calculator on float32 tiles and the same tiles padded by one word per row: shared
    memory per block and blocks per SM. The 64x224 tile (56 KiB: dynamic shared memory, opted in) sits
    exactly on a boundary: its padding words cost a whole block per SM."""
    rows = []
    for tile_rows, tile_cols in [(32, 32), (64, 64), (64, 128), (64, 224)]:
        for padded in (False, True):
            width = tile_cols + padded
            shared = 4 * tile_rows * width
            answer = occupancy(threads, registers, shared, opt_in=True)  # past 48 KiB: opted in
            rows.append({"tile": f"{tile_rows}x{width}", "padded": padded, "shared_bytes": shared,
                         "blocks_per_sm": answer.blocks_per_sm, "occupancy": round(answer.fraction, 3),
                         "limiter": answer.limiter})
    return pd.DataFrame(rows)


def sass_lines(extras: dict, kernel: str, first: int = 12, start: str | None = None) -> str:
    """A kernel's recorded SASS memory instructions, one per line: ``first`` of them, from the
    first that contains ``start`` (e.g. "LDG.E.128") when given."""
    lines = extras.get("sass", {}).get(kernel, {}).get("lines", [])
    if start is not None:
        lines = lines[next((i for i, line in enumerate(lines) if start in line), len(lines)):]
    return "\n".join(lines[:first]) if lines else f"(no SASS recorded for {kernel})"


def resources_table(extras: dict) -> pd.DataFrame:
    """Per kernel: registers, static shared memory, local memory (recorded) and the memory opcodes."""
    rows = []
    for function, res in extras["resources"].items():
        opcodes = extras.get("sass", {}).get(function, {}).get("opcodes", {})
        rows.append({"kernel": function, **res,
                     "sass_memory_opcodes": ", ".join(f"{op} x{n}" for op, n in opcodes.items())})
    return pd.DataFrame(rows)


# -------------------------------------------------------------------------------- checks

CHECK_SHAPES = [(45, 70), (33, 20)]  # not multiples of 32, one wider than tall, one taller
TILE64_SHAPES = [(68, 100), (45, 70)]  # whole float4 rows, partial tiles; then the scalar path


def check() -> pd.DataFrame:
    """Every kernel of the lesson against NumPy, on random inputs of awkward sizes."""
    rng = np.random.default_rng()
    rows = []
    for variant, transpose in k.TRANSPOSES.items():
        shapes = TILE64_SHAPES if variant.startswith("tile64") else CHECK_SHAPES
        for shape in shapes:
            a = rng.standard_normal(shape, dtype=np.float32)
            rows.append(check_row(f"{variant} {shape[0]}x{shape[1]}", np.array_equal(transpose(a), a.T),
                                  "bit-exact against a.T"))
    x = rng.standard_normal(300, dtype=np.float32)
    for stride in (1, 33):
        rows.append(check_row(f"shared_stride {stride}", np.array_equal(k.shared_stride(x, stride), x),
                              "round trip through shared memory"))
    x64 = rng.standard_normal(200)
    rows.append(check_row("shared_stride64 2", np.array_equal(k.shared_stride64(x64, 2), x64),
                          "float64 round trip"))
    for stride in (0, 2, 33):
        got = k.shared_read(stride, reps=2, blocks=1, block=64)
        expected = k.shared_read_reference(np.arange(64) % 32, stride, 2)
        rows.append(check_row(f"shared_read stride {stride}", np.array_equal(got, expected),
                              "sums of the words read, against NumPy"))
    return pd.DataFrame(rows)


def load(live: bool | None = None, gpu: str | None = None):
    """This lesson's table: measured now on a GPU, else the reference recording (see common.load)."""
    from . import common

    return common.load(sys.modules[__name__], live=live, gpu=gpu)
