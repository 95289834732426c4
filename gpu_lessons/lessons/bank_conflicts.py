"""Lesson 4: shared-memory bank conflicts, padding and swizzling; the transpose as the case study.

The experiment (``SECTIONS``): a microbenchmark reading shared memory at word strides 1..33 and a
broadcast (time per warp request against the wavefronts it needs: 1 SM clock per wavefront), then
the transpose, step by step (our copy as the ceiling; naive; 32x32 tile; padded 32x33; XOR-swizzled;
64x64 tiles with 16-byte accesses, unswizzled and swizzled), at several shapes including non-square
and non-multiple-of-32 ones, beside ``cupy.copyto`` and what a CuPy user writes,
``cupy.ascontiguousarray(a.T)``.

Then two experiments that test the lesson's own explanation (issue 17), at 8192x8192:

- *What else does a tile cost?* The microbenchmark's cost (1 clock per wavefront) applied to the
  transposes (``transpose_cost_model``) predicts the shared pipe's time per variant; for the padded
  tile it is a few per cent of a copy, yet the tile runs at 0.55 of one. Three controlled kernels keep
  the padded tile's wavefronts per byte and change what a tile costs besides them: two tiles a block,
  a resident grid walking the tiles, and that walk with the next tile's loads in flight.
- *Which of the three changes from 32x32 to 64x64 float4 tiles pays?* Intermediate kernels take the
  tile size, the 16-byte accesses and the swizzle one at a time (``VARIANT_DESIGN`` says what each
  changes).

What a run learns besides timings goes in its evidence: the tracer's wavefronts per tile of every
transpose, the stride -> wavefronts relation, each kernel's resources and SASS, the grid-stride grids;
``gpu-lessons record bank_conflicts --ncu`` adds Nsight Compute's counts (``ncu_cases``).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import numpy as np
import pandas as pd
from numba import cuda, typeof

from .. import ncu
from ..device import device_info
from ..kernels import bank_conflicts as k
from ..kernels import roofline
from ..kernels.launch import blocks_per_sm
from ..kernels.util import poison
from ..occupancy import driver_blocks_per_sm, limits_of, occupancy
from ..plots import bank_conflicts as pictures
from ..plots import charts
from ..results import LessonResult, RecordingError
from ..scoreboard import Comparison
from ..sim.trace import trace
from .runner import Run, Section, check_row, cupy_or_none

NAME = "bank_conflicts"
TITLE = "Shared-memory bank conflicts, padding and swizzling"
NOTEBOOK = "04_bank_conflicts_padding.ipynb"
SUMMARY = "cost of a conflict per wavefront; the transpose: 32x32, padded, swizzled, 64x64 float4 tiles"

# Microbenchmark: strides in words; 0 is a broadcast (every lane reads the same word).
READ_STRIDES = [0, 1, 2, 4, 8, 16, 32, 33]
READ_BLOCK = 256
# Blocks per SM: as many as fill one SM with READ_BLOCK threads (8 x 16 KiB, 64 warps on sm_80/sm_90;
# 6 on sm_86/sm_89, 4 on sm_75: kernels.launch.blocks_per_sm)
READ_REPS = 256  # trips of 16 loads per thread: ~0.13 ms at 1 wavefront per request, ~4 ms at 32

SQUARE = (8192, 8192)  # the scoreboard's matrix: 256 MiB in, 256 MiB out
SHAPES = [SQUARE, (16384, 2048), (5000, 7000), (4099, 8191)]  # non-square; not multiples of 32; odd
TRANSPOSE_VARIANTS = list(k.TRANSPOSES)  # the teaching steps: the scoreboard's rows
CONTROL_VARIANTS = list(k.CONTROL_TRANSPOSES)  # what else a padded tile costs (8192x8192 only)
STEP_VARIANTS = list(k.STEP_TRANSPOSES)  # 32x32 -> 64x64 float4, one change at a time (8192x8192 only)
EXPERIMENT_VARIANTS = CONTROL_VARIANTS + STEP_VARIANTS
ALL_TRANSPOSES = TRANSPOSE_VARIANTS + EXPERIMENT_VARIANTS
COPY = "copy"  # our float4 copy of the same bytes: the ceiling a transpose can reach
CUPY_COPY = "cupy copyto"
CUPY_TRANSPOSE = "cupy ascontiguousarray(a.T)"
MEMORY_SASS = r"\b(LDG|STG|LDS|STS|LDL|STL|BAR)\b"  # the SASS lines a recording keeps per kernel
VECTOR_SASS = r"\.128$|^BAR"  # for 16-byte kernels: their vector path (40 memory lines would miss it)

COMPARISONS = [
    Comparison(title="transpose 8192x8192 vs device copy", lesson=NAME, metric="gbps",
               ours=TRANSPOSE_VARIANTS, reference=CUPY_COPY, size=SQUARE[0] * SQUARE[1], param=SQUARE[0]),
    Comparison(title="transpose 8192x8192 vs cupy a.T copy", lesson=NAME, metric="gbps",
               ours=TRANSPOSE_VARIANTS, reference=CUPY_TRANSPOSE, size=SQUARE[0] * SQUARE[1],
               param=SQUARE[0]),
]


@dataclass(frozen=True)
class Design:
    """What one transpose does per thread and per tile (from its code, not measured)."""

    variant: str
    tile: int  # tile edge in elements (0: no tile)
    elements_per_thread: int  # per tile
    access_bytes: int  # global load/store width per thread
    in_flight_bytes: int  # global loads a thread has issued before it first waits
    layout: str  # the shared tile, in tile_words' names
    tiles_per_block: str  # "1", "2" or "grid-stride"
    barriers_per_tile: float
    changes: str  # against the variant it is compared with


VARIANT_DESIGN = (
    Design("naive", 0, 1, 4, 4, "none", "1", 0, "no shared memory: writes 32 sectors apart"),
    Design("tile32", 32, 4, 4, 16, "unpadded", "1", 1, "a 32x32 tile: 32-way conflicts on column reads"),
    Design("tile32_padded_loop", 32, 4, 4, 4, "padded", "1", 1,
           "the padded tile as the textbook loop: one load in flight a thread"),
    Design("tile32_padded", 32, 4, 4, 16, "padded", "1", 1, "rows of 33 words: no conflicts"),
    Design("tile32_swizzled", 32, 4, 4, 16, "xor", "1", 1, "column c ^ r: no conflicts, no padding"),
    Design("tile64_vec4", 64, 16, 16, 64, "float4", "1", 1,
           "64x64, 16-byte accesses: 8-way conflicts on column reads"),
    Design("tile64_vec4_swizzled", 64, 16, 16, 64, "float4_xor", "1", 1,
           "float4 group g of row r at g ^ (r // 4 % 8): no conflicts"),
    Design("tile32_padded_2tiles", 32, 8, 4, 32, "padded", "2", 0.5,
           "tile32_padded, two tiles a block: half the launches and barriers, twice the loads in flight"),
    Design("tile32_padded_grid_stride", 32, 4, 4, 16, "padded", "grid-stride", 2,
           "tile32_padded on a resident grid: no launches after the first wave, a second barrier a tile"),
    Design("tile32_padded_prefetch", 32, 4, 4, 16, "padded", "grid-stride", 2,
           "the grid-stride walk with the next tile's loads in flight across this tile's barriers"),
    Design("tile64_swizzled", 64, 16, 4, 64, "xor", "1", 1,
           "tile32_swizzled at 64x64: 4x the elements and loads in flight a thread, 4-byte accesses; "
           "16 values in registers (ptxas offline: 40 a thread, 6 blocks per SM; in_flight() reads the "
           "recorded ones)"),
    Design("tile32_vec4", 32, 4, 16, 16, "float4", "1", 1,
           "a 32x32 tile with one 16-byte load and store a thread: 8-way conflicts"),
    Design("tile32_vec4_swizzled", 32, 4, 16, 16, "float4_xor", "1", 1,
           "tile32_vec4 with float4 groups swizzled: tile64_vec4_swizzled at 32x32"),
)


def variant_design() -> pd.DataFrame:
    """One row per transpose: tile, work and bytes in flight a thread, layout, what it changes."""
    return pd.DataFrame([asdict(d) for d in VARIANT_DESIGN])


def _design(variant: str) -> Design:
    for design in VARIANT_DESIGN:
        if design.variant == variant:
            return design
    raise KeyError(f"no design for transpose {variant!r}")


VARIANT_KERNELS = {"naive": k.transpose_naive_kernel, **k.TILE32_KERNELS, **k.TILE64_KERNELS,
                   **k.EXPERIMENT_KERNELS}


def kernel_name(variant: str) -> str:
    """The Python function name of a transpose's kernel (the name its recorded evidence uses)."""
    return VARIANT_KERNELS[variant].py_func.__name__


# ------------------------------------------------------------------ counting, for the narrative


def conflict_degree(stride: int) -> int:
    """Wavefronts of one 32-lane request of 4-byte words at word ``stride`` (0: a broadcast)."""
    return 1 if stride == 0 else math.gcd(stride, 32)


def traced_read_requests(strides=READ_STRIDES) -> pd.DataFrame:
    """The tracer's wavefronts and conflicts per request of the microbenchmark's loads, per stride."""
    rows = []
    for stride in strides:
        out = np.zeros(32, np.float32)
        counts = trace(k.shared_read_kernel, 1, 32, out, stride, 1)
        request = counts.request(source="buffer[slot + u32(32 * j)]", array="buffer", op="ld")
        rows.append({"stride": int(stride), "wavefronts": int(request.attrs["wavefronts"]),
                     "bank_conflicts": int(request.attrs["bank_conflicts"]),
                     "distinct_banks": int(request["bank"].nunique()),
                     "distinct_words": int(request["word"].nunique())})
    return pd.DataFrame(rows)


TRACE_SHAPE = (64, 128)  # two 64x64 tiles, eight 32x32 tiles: a few seconds on the simulator
TRAFFIC_SHAPE = (64, 64)  # one 64x64 tile, four 32x32 ones: the per-tile counts a run records
TRACE_GRID_STRIDE_BLOCKS = 3  # grid-stride kernels under the tracer and ncu: blocks do several tiles


def traced_transposes(shape=TRACE_SHAPE, variants=None) -> pd.DataFrame:
    """Per transpose: shared requests, wavefronts and bank conflicts (ld and st), global sectors, from
    the tracer; and per tile (``tile``: its edge, ``tiles``: whole tiles of ``shape``)."""
    a = np.random.default_rng(4).standard_normal(shape, dtype=np.float32)
    rows = [traffic_counts(variant, trace_transpose(variant, a).totals, a.nbytes)
            for variant in variants or TRANSPOSE_VARIANTS]
    return with_per_tile(pd.DataFrame(rows), shape)


def trace_transpose(variant: str, a: np.ndarray):
    """The tracer's ``MemoryTrace`` of one transpose of host matrix ``a``, launched as the lesson
    launches it (the result checked against a.T)."""
    out = np.zeros(a.shape[::-1], np.float32)
    kernel, grid, block, args = _launch_config(variant, a, out)
    counts = trace(kernel, grid, block, *args)
    if not np.array_equal(out, a.T):
        raise AssertionError(f"{variant}: traced run did not transpose")
    return counts


def traffic_counts(variant: str, totals: dict, matrix_bytes: int) -> dict:
    """A row of ``traced_transposes`` from the tracer's totals (or ncu's metrics) of one launch."""
    row = {"variant": variant}
    for op in ("ld", "st"):
        row[f"shared_{op}_requests"] = int(totals[f"smsp__inst_executed_op_shared_{op}.sum"])
        wavefronts = f"l1tex__data_pipe_lsu_wavefronts_mem_shared_op_{op}.sum"
        row[f"shared_{op}_wavefronts"] = int(totals[wavefronts])
        conflicts = f"l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_{op}.sum"
        row[f"shared_{op}_conflicts"] = int(totals[conflicts])
    row["global_sectors"] = int(totals["l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum"]
                                + totals["l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum"])
    row["ideal_sectors"] = 2 * matrix_bytes // 32
    return row


def with_per_tile(traffic: pd.DataFrame, shape) -> pd.DataFrame:
    """Add tile, tiles and per-tile shared requests and wavefronts (ld + st) to counts of ``shape``."""
    traffic = traffic.copy()
    traffic["tile"] = [_design(v).tile for v in traffic["variant"]]
    traffic["tiles"] = [k.tile_count(shape, t) if t else 0 for t in traffic["tile"]]
    tiles = traffic["tiles"].where(traffic["tiles"] > 0)
    for counted in ("requests", "wavefronts"):
        both = traffic[f"shared_ld_{counted}"] + traffic[f"shared_st_{counted}"]
        traffic[f"{counted}_per_tile"] = both / tiles
    return traffic


def _launch_config(variant, a, out):
    """(kernel, grid, block, args) of one transpose of host arrays, as the lesson launches it."""
    rows, cols = a.shape
    if variant == "naive":
        return (k.transpose_naive_kernel, k.transpose_grid(a.shape, k.TRANSPOSE_BLOCK), k.TRANSPOSE_BLOCK,
                (a, out))
    if variant in k.TILE32_KERNELS:
        return k.TILE32_KERNELS[variant], k.tiled_transpose_grid(a.shape), k.TRANSPOSE_BLOCK, (a, out)
    vector = int(rows % 4 == 0 and cols % 4 == 0)
    if variant in k.TILE64_KERNELS:
        return (k.TILE64_KERNELS[variant], k.tile64_grid(a.shape), (k.TILE64_THREADS,),
                (a.reshape(-1), out.reshape(-1), rows, cols, vector))
    if variant in k.TILE32_VEC4_KERNELS:
        return (k.TILE32_VEC4_KERNELS[variant], k.tiled_transpose_grid(a.shape), (k.TILE32_VEC4_THREADS,),
                (a.reshape(-1), out.reshape(-1), rows, cols, vector))
    kernel = k.EXPERIMENT_KERNELS[variant]
    if variant in k.GRID_STRIDE_VARIANTS:
        grid = (k.grid_stride_tile_blocks(a.shape, TRACE_GRID_STRIDE_BLOCKS),)
    elif variant == "tile32_padded_2tiles":
        grid = k.two_tiles_grid(a.shape)
    else:
        grid = k.tile64_grid(a.shape)
    return kernel, tuple(grid), k.TRANSPOSE_BLOCK, (a, out)


# ------------------------------------------------------------------ a tile coloured by bank

BANKS = 32
LAYOUTS = ("unpadded", "padded", "xor", "float4", "float4_xor")
LAYOUT_VARIANT = {"unpadded": "tile32", "padded": "tile32_padded", "xor": "tile32_swizzled",
                  "float4": "tile32_vec4", "float4_xor": "tile32_vec4_swizzled"}  # a 32x32 tile of each
LAYOUT_TITLES = {"unpadded": "unpadded 32x32", "padded": "padded 32x33", "xor": "XOR-swizzled: column c ^ r",
                 "float4": "float4 groups, unswizzled",
                 "float4_xor": "float4 groups XOR-swizzled: group g ^ (r // 4 % 8)"}


def tile_words(layout: str, rows: int = 32, cols: int = 32) -> np.ndarray:
    """The shared-memory word (4 bytes) where element (r, c) of a tile lives, as the lesson's kernels
    place it: ``unpadded`` and ``float4`` r * cols + c; ``padded`` r * (cols + 1) + c; ``xor`` column
    c ^ (r % 32); ``float4_xor`` float4 group c // 4 moved to (c // 4) ^ (r // 4 % 8)."""
    if layout not in LAYOUTS:
        raise ValueError(f"unknown layout {layout!r}; choose one of: {', '.join(LAYOUTS)}")
    r, c = np.meshgrid(np.arange(rows), np.arange(cols), indexing="ij")
    if layout == "padded":
        return r * (cols + 1) + c
    if layout == "xor":
        return r * cols + (c ^ (r & 31))
    if layout == "float4_xor":
        return r * cols + (c ^ (r & 28))
    return r * cols + c


def tile_banks(layout: str, rows: int = 32, cols: int = 32) -> np.ndarray:
    """The bank (word % 32) of every element of a tile: what a picture of the layout colours."""
    return tile_words(layout, rows, cols) % BANKS


def warp_read_elements(layout: str) -> tuple[np.ndarray, np.ndarray]:
    """(rows, columns) of the 32 tile elements one warp reads in its first shared load of the
    transpose: a column (rows 0..31 of column 0) for the word layouts; for the float4 layouts, as the
    16-byte kernels read, rows 0, 4, .., 28 of columns 0..3 (lane = 8 column + row group)."""
    if layout in ("float4", "float4_xor"):
        lanes = np.arange(32)
        return 4 * (lanes % 8), lanes // 8
    return np.arange(32), np.zeros(32, int)


def request_wavefronts(words) -> int:
    """Wavefronts of one warp's request of 4-byte words: the most distinct words in any one bank."""
    words = np.unique(np.asarray(words))
    return int(np.bincount(words % BANKS, minlength=BANKS).max())


def bank_layouts(layouts=("unpadded", "padded", "xor", "float4_xor")) -> list[dict]:
    """Per layout, what the tile picture needs: title, banks, the warp's read and its wavefronts."""
    panels = []
    for layout in layouts:
        rows, cols = warp_read_elements(layout)
        words = tile_words(layout)[rows, cols]
        panels.append({"layout": layout, "title": LAYOUT_TITLES[layout], "variant": LAYOUT_VARIANT[layout],
                       "banks": tile_banks(layout), "read_rows": rows, "read_cols": cols,
                       "wavefronts": request_wavefronts(words)})
    return panels


# ----------------------------------------------------------------------------- experiment


def _shared_reads(run: Run) -> None:
    """The microbenchmark: time per warp request at strides 0..33, every SM full of blocks."""
    blocks = device_info().sms * blocks_per_sm(READ_BLOCK)
    threads = blocks * READ_BLOCK
    requests = threads // 32 * READ_REPS * k.READ_UNROLL
    out = cuda.device_array(threads, np.float32)
    lanes = np.arange(threads) % 32
    run.kernel("shared_read_kernel", k.shared_read_kernel, (out, 1, READ_REPS), sass_pattern=MEMORY_SASS)
    for stride in READ_STRIDES:
        poison(out)
        run.time("shared_read",
                 lambda _, s=stride: k.shared_read_launch(out, s, READ_REPS, blocks, READ_BLOCK),
                 size=requests, param=stride, bytes_moved=128 * requests, flops=0)
        if not np.array_equal(out.copy_to_host(), k.shared_read_reference(lanes, stride, READ_REPS)):
            raise AssertionError(f"shared_read stride {stride}: sums differ from NumPy")
    run.facts["stride_wavefronts"] = traced_read_requests(READ_STRIDES).to_dict("records")
    x = cuda.to_device(np.arange(32.0))
    run.kernel("shared_stride64_kernel", k.shared_stride64_kernel, (x, cuda.device_array(32), 1),
               sass_pattern=MEMORY_SASS)


def _matrix(run: Run, shape):
    """A random device matrix (never zeros) and ``same(out, transposed=True)``: out == a.T (or a).

    With CuPy the data is made and compared on the device (seconds saved per shape at these
    sizes); the reference transpose is checked against the host copy at 4096 random positions.
    """
    seed = int(run.rng.integers(2**31))
    cp = cupy_or_none()
    if cp is None:
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


def _transposes_at(shape):
    """The section timing our copy, every teaching transpose and CuPy's two at one shape."""

    def measure(run: Run) -> None:
        a, same = _shared_matrix(run, shape)
        rows_n, cols_n = shape
        n = rows_n * cols_n
        out = cuda.device_array((cols_n, rows_n), np.float32)
        common = {"size": n, "param": rows_n, "bytes_moved": 8 * n, "flops": 0}
        poison(out)
        flat_a, flat_out = a.reshape(n), out.reshape(n)
        run.time(COPY, lambda _: roofline.copy_launch("copy_vec4", flat_a, flat_out), **common)
        if not same(flat_out.reshape(rows_n, cols_n), transposed=False):
            raise AssertionError(f"copy {shape} did not copy exactly")
        for variant in TRANSPOSE_VARIANTS:
            if shape == SQUARE:
                kernel, args = _kernel_and_args(variant, a, out)
                run.kernel(kernel_name(variant), kernel, args, sass_pattern=_sass_pattern(variant))
            poison(out)
            launch = k.transpose_launcher(variant, a, out)
            run.time(variant, lambda _, go=launch: go(), **common)
            if not same(out):
                raise AssertionError(f"{variant} {shape}: result differs from a.T")
        _cupy_rows(run, a, same, common)

    return measure


def _shared_matrix(run: Run, shape):
    """The square matrix is shared with the 8192x8192 experiments; other shapes are made afresh."""
    if shape == SQUARE:
        return run.shared(f"matrix {shape[0]}x{shape[1]}", lambda: _matrix(run, shape))
    return _matrix(run, shape)


def _cupy_rows(run: Run, a, same, common) -> None:
    cp = cupy_or_none()
    if cp is None:
        return
    a = cp.asarray(a)
    copied = cp.full_like(a, cp.nan)
    run.time(CUPY_COPY, lambda _: cp.copyto(copied, a), provider="cupy", **common)
    if not same(copied, transposed=False):
        raise AssertionError("cupy.copyto mismatch")
    result = {}

    def user_transpose(_):
        result["out"] = cp.ascontiguousarray(a.T)  # what a CuPy user writes (allocates its output)

    run.time(CUPY_TRANSPOSE, user_transpose, provider="cupy", **common)
    if not same(result["out"]):
        raise AssertionError("cupy.ascontiguousarray(a.T) mismatch")


def _sass_pattern(variant: str) -> str:
    """SASS lines a recording keeps: the memory instructions; for the 16-byte kernels only their
    vector path (the 16-byte instructions and the barrier), which the 40 kept lines would miss."""
    return VECTOR_SASS if "vec4" in variant else MEMORY_SASS


def _kernel_and_args(variant, a, out):
    """A transpose's kernel and the arguments it is launched with, on 2-D device arrays a and out."""
    rows, cols = a.shape
    if variant in k.TILE64_KERNELS or variant in k.TILE32_VEC4_KERNELS:
        kernel = {**k.TILE64_KERNELS, **k.TILE32_VEC4_KERNELS}[variant]
        return kernel, (a.reshape(rows * cols), out.reshape(rows * cols), rows, cols, k._vector_ok(a, out))
    return VARIANT_KERNELS[variant], (a, out)


def _experiments(variants):
    """The section timing new transposes at 8192x8192, on the same matrix as the teaching steps."""

    def measure(run: Run) -> None:
        a, same = _shared_matrix(run, SQUARE)
        rows_n, cols_n = SQUARE
        n = rows_n * cols_n
        out = cuda.device_array((cols_n, rows_n), np.float32)
        common = {"size": n, "param": rows_n, "bytes_moved": 8 * n, "flops": 0}
        for variant in variants:
            kernel, args = _kernel_and_args(variant, a, out)
            run.kernel(kernel_name(variant), kernel, args, sass_pattern=_sass_pattern(variant))
            blocks = None
            if variant in k.GRID_STRIDE_VARIANTS:  # a resident grid: what the driver lets one SM hold
                per_sm = driver_blocks_per_sm(kernel, k.TRANSPOSE_BLOCK[0] * k.TRANSPOSE_BLOCK[1],
                                              signature=tuple(typeof(x) for x in args))
                blocks = device_info().sms * per_sm
                run.facts.setdefault("grid_stride_grids", {})[variant] = {
                    "blocks_per_sm": per_sm, "blocks": blocks, "tiles": k.tile_count(SQUARE)}
            poison(out)
            launch = k.experiment_launcher(variant, a, out, blocks)
            run.time(variant, lambda _, go=launch: go(), **common)
            if not same(out):
                raise AssertionError(f"{variant} {SQUARE}: result differs from a.T")

    return measure


def _traffic(run: Run) -> None:
    """The tracer's shared-memory requests and wavefronts of every transpose, per tile."""
    traffic = traced_transposes(TRAFFIC_SHAPE, [v for v in ALL_TRANSPOSES if _design(v).tile])
    traffic = traffic[traffic["tile"] > 0]
    run.facts["transpose_traffic"] = {"shape": list(TRAFFIC_SHAPE),
                                      "rows": traffic.drop(columns=["tile", "tiles"]).to_dict("records")}


SECTIONS = (
    Section("shared reads", _shared_reads),
    *(Section(f"transposes {r}x{c}", _transposes_at((r, c))) for r, c in SHAPES),
    Section("padded tile controls 8192x8192", _experiments(CONTROL_VARIANTS)),
    Section("32x32 to 64x64 steps 8192x8192", _experiments(STEP_VARIANTS)),
    Section("traced wavefronts per tile", _traffic),
)


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


def sm_clock_mhz(result: LessonResult) -> float:
    """The SM clock of the run: NVML's reading at the time when recorded, else the maximum."""
    return float(result.meta.get("sm_clock_now_mhz") or result.meta["sm_clock_mhz"])


def result_read_cost(result: LessonResult) -> pd.DataFrame:
    """``read_cost`` of a result, with its GPU's SMs and clock."""
    return read_cost(result.rows("shared_read"), int(result.meta["sms"]), sm_clock_mhz(result))


def wavefront_cost(result: LessonResult) -> dict:
    """The fit time per request = a + b x wavefronts: a and b in ns and in SM clocks, and its errors."""
    cost = result_read_cost(result)
    intercept, slope = pictures.wavefront_fit(cost)
    model = intercept + slope * cost["wavefronts"]
    error = (cost["ns_per_request"] / model - 1).abs()
    clock = sm_clock_mhz(result)
    return {"intercept_ns": intercept, "ns_per_wavefront": slope, "sm_clock_mhz": clock,
            "clocks_per_wavefront": slope * clock / 1e3, "intercept_clocks": intercept * clock / 1e3,
            "max_error": float(error.max()), "max_error_at": cost.loc[error.idxmax(), "access"],
            "median_error": float(error.median())}


def transpose_summary(table: pd.DataFrame, variants=None) -> pd.DataFrame:
    """Per shape and variant: GB/s and the fraction of our copy and of cupy.copyto, same run
    (``variants``: ours to keep, beside the copy and CuPy's rows; default every row)."""
    picked = table[table["variant"] != "shared_read"].copy()
    if variants is not None:
        keep = set(variants) | {COPY, CUPY_COPY, CUPY_TRANSPOSE}
        picked = picked[picked["variant"].isin(keep)]
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


def _square_rows(table: pd.DataFrame) -> pd.DataFrame:
    return table[(table["size"] == SQUARE[0] * SQUARE[1]) & (table["param"] == SQUARE[0])]


# ------------------------------------------------------------- the cost model of a transpose


def recorded_traffic(result: LessonResult) -> pd.DataFrame:
    """Shared requests and wavefronts per tile of each transpose: the run's own tracer counts
    (facts.transpose_traffic) when it recorded them, else Nsight Compute's counts of the same launches
    (ncu cases <variant>/64x128; the tests hold the tracer to them)."""
    if "transpose_traffic" in result.facts:
        fact = result.evidence.fact("transpose_traffic")
        return with_per_tile(pd.DataFrame(fact["rows"]), tuple(fact["shape"]))
    rows = []
    suffix = f"/{TRACE_SHAPE[0]}x{TRACE_SHAPE[1]}"
    for case in result.evidence.ncu:
        variant = case.removesuffix(suffix)
        if not case.endswith(suffix) or variant not in ALL_TRANSPOSES or not _design(variant).tile:
            continue
        row = {"variant": variant}
        for op in ("ld", "st"):
            wavefronts = f"l1tex__data_pipe_lsu_wavefronts_mem_shared_op_{op}.sum"
            for counted, metric in (("requests", f"smsp__inst_executed_op_shared_{op}.sum"),
                                    ("wavefronts", wavefronts)):
                row[f"shared_{op}_{counted}"] = result.evidence.ncu_value(case, metric)
        rows.append(row)
    if not rows:
        raise RecordingError(f"{result.evidence.origin}: neither facts.transpose_traffic nor ncu cases "
                             f"<variant>{suffix} are recorded")
    return with_per_tile(pd.DataFrame(rows), TRACE_SHAPE)


def transpose_cost_model(table: pd.DataFrame, traffic: pd.DataFrame, sms: int, intercept_ns: float,
                         ns_per_wavefront: float, shape=SQUARE) -> pd.DataFrame:
    """The microbenchmark's cost applied to the transposes measured at ``shape``.

    Each SM's shared-memory pipe serves its share of the tiles, one request costing ``intercept_ns +
    ns_per_wavefront x wavefronts`` (the fit of ``wavefront_cost``): ``pipe_us``. Our copy of the same
    bytes in the same run is the DRAM floor, ``copy_us``. If the two overlap perfectly a transpose takes
    ``max(pipe, copy)``; if not at all, their sum. ``error`` = measured / max - 1: what the shared pipe
    and DRAM together do not explain (``unexplained_us``).
    """
    rows_n, cols_n = shape
    at = table[(table["size"] == rows_n * cols_n) & (table["param"] == rows_n)].set_index("variant")
    if COPY not in at.index:
        raise RecordingError(f"no '{COPY}' row at {rows_n}x{cols_n}: the cost model needs the same-run copy")
    copy_us = float(at.loc[COPY, "median_ms"]) * 1e3
    out = []
    for row in traffic.itertuples(index=False):
        if row.variant not in at.index or not row.tile:
            continue
        tiles = k.tile_count(shape, int(row.tile))
        per_sm = tiles / sms
        ns_per_tile = row.requests_per_tile * intercept_ns + row.wavefronts_per_tile * ns_per_wavefront
        pipe_us = per_sm * ns_per_tile / 1e3
        measured = float(at.loc[row.variant, "median_ms"]) * 1e3
        bound = max(pipe_us, copy_us)
        out.append({"variant": row.variant, "tile": int(row.tile), "tiles_per_sm": per_sm,
                    "requests_per_tile": row.requests_per_tile,
                    "wavefronts_per_tile": row.wavefronts_per_tile,
                    "pipe_us": pipe_us, "copy_us": copy_us, "predicted_us": bound,
                    "no_overlap_us": pipe_us + copy_us, "measured_us": measured,
                    "error": measured / bound - 1, "unexplained_us": measured - bound})
    return pd.DataFrame(out)


def cost_model(result: LessonResult, traffic: pd.DataFrame | None = None, shape=SQUARE) -> pd.DataFrame:
    """``transpose_cost_model`` of a result: its fit, its SMs, its traffic (or the one given, e.g.
    ``traced_transposes()`` on the simulator)."""
    fit = wavefront_cost(result)
    traffic = recorded_traffic(result) if traffic is None else traffic
    return transpose_cost_model(result.table, traffic, int(result.meta["sms"]), fit["intercept_ns"],
                                fit["ns_per_wavefront"], shape)


def in_flight(result: LessonResult, shape=SQUARE, variants=None) -> pd.DataFrame:
    """Little's law on each transpose at ``shape``: the loads the resident threads could have in
    flight (blocks per SM from the recorded registers and shared memory, by lesson 2's calculator,
    x threads x bytes in flight a thread), the read bandwidth measured, and the latency the two imply
    (``implied_latency_us`` = in flight / bandwidth: if every thread always had its loads out). A
    block slot's time per tile (``us_per_tile_per_slot``) is the same figure seen from the tiles."""
    rows_n, cols_n = shape
    at = result.table[(result.table["size"] == rows_n * cols_n) & (result.table["param"] == rows_n)]
    at = at.set_index("variant")
    sms = int(result.meta["sms"])
    out = []
    for variant in variants or ALL_TRANSPOSES:
        design = _design(variant)
        if variant not in at.index or not design.tile or kernel_name(variant) not in result.evidence.kernels:
            continue
        resources = result.evidence.kernel(kernel_name(variant))
        threads = 256
        blocks = occupancy(threads, resources["registers"], resources["shared_bytes"],
                           limits_of(result)).blocks_per_sm
        seconds = float(at.loc[variant, "median_ms"]) / 1e3
        read_bytes_per_s = float(at.loc[variant, "bytes"]) / 2 / seconds
        in_flight_bytes = sms * blocks * threads * design.in_flight_bytes
        tiles = k.tile_count(shape, design.tile)
        out.append({"variant": variant, "registers": resources["registers"],
                    "shared_bytes": resources["shared_bytes"], "blocks_per_sm": blocks,
                    "in_flight_bytes_per_thread": design.in_flight_bytes,
                    "in_flight_mb": in_flight_bytes / 1e6,
                    "read_tb_per_s": read_bytes_per_s / 1e12,
                    "implied_latency_us": in_flight_bytes / read_bytes_per_s * 1e6,
                    "us_per_tile_per_slot": seconds * 1e6 * sms * blocks / tiles})
    return pd.DataFrame(out)


def step_effects(table: pd.DataFrame, shape=SQUARE) -> pd.DataFrame:
    """The 32x32 -> 64x64 float4 step taken one change at a time: each pair of variants that differ in
    one thing (tile size, access width, swizzle), their times and the ratio (after / before)."""
    rows_n, cols_n = shape
    at = table[(table["size"] == rows_n * cols_n) & (table["param"] == rows_n)].set_index("variant")
    pairs = [
        ("tile size, 4-byte accesses", "tile32_swizzled", "tile64_swizzled"),
        ("tile size, 16-byte accesses", "tile32_vec4_swizzled", "tile64_vec4_swizzled"),
        ("16-byte accesses, 32x32", "tile32_swizzled", "tile32_vec4_swizzled"),
        ("16-byte accesses, 64x64", "tile64_swizzled", "tile64_vec4_swizzled"),
        ("float4 swizzle, 32x32", "tile32_vec4", "tile32_vec4_swizzled"),
        ("float4 swizzle, 64x64", "tile64_vec4", "tile64_vec4_swizzled"),
        ("all three at once", "tile32_swizzled", "tile64_vec4_swizzled"),
    ]
    out = []
    for change, before, after in pairs:
        if before in at.index and after in at.index:
            t0, t1 = float(at.loc[before, "median_ms"]) * 1e3, float(at.loc[after, "median_ms"]) * 1e3
            out.append({"change": change, "before": before, "after": after, "before_us": t0, "after_us": t1,
                        "speedup": t0 / t1})
    return pd.DataFrame(out)


# ------------------------------------------------ the third bill: issuing the instructions

ISSUE_PER_CLOCK = 4  # warp instructions an SM issues per clock: 4 schedulers, one each (lesson 2)
THREADS_PER_BLOCK = 256  # every tiled transpose: (32, 8) blocks, or 256 threads of 16-byte kernels
# How the compiler's instruction count (static SASS, recorded) relates to what a whole tile executes.
STRAIGHT_LINE = ("tile32", "tile32_padded", "tile32_swizzled", "tile32_padded_2tiles", "tile64_swizzled")
WITH_SCALAR_PATH = ("tile32_vec4", "tile32_vec4_swizzled", "tile64_vec4", "tile64_vec4_swizzled")
ISSUE_COUNTED = {
    **dict.fromkeys(STRAIGHT_LINE, "no loop: each instruction at most once per warp"),
    **dict.fromkeys(WITH_SCALAR_PATH, "includes the scalar path whole tiles skip: an upper bound"),
}


def issue_time(result: LessonResult, shape=SQUARE, variants=None) -> pd.DataFrame:
    """The time an SM needs just to issue a transpose's instructions at ``shape``, from the compiler's
    instruction count (the recorded SASS of the kernel, each instruction counted once): blocks per SM x
    warps a block x instructions / (4 per SM clock). Only for kernels without loops (``ISSUE_COUNTED``):
    a loop's instructions run once a trip, which a static count does not see."""
    sms, clock = int(result.meta["sms"]), sm_clock_mhz(result)
    out = []
    for variant in variants or list(ISSUE_COUNTED):
        if variant not in ISSUE_COUNTED or kernel_name(variant) not in result.evidence.kernels:
            continue
        design = _design(variant)
        sass = result.evidence.kernel(kernel_name(variant)).get("sass", {}).get("summary", {})
        if "instructions" not in sass:
            raise RecordingError(f"{result.evidence.origin}: kernels.{kernel_name(variant)}.sass.summary."
                                 "instructions is missing")
        tiles_per_block = 2 if design.tiles_per_block == "2" else 1
        blocks = k.tile_count(shape, design.tile) / tiles_per_block
        warps = THREADS_PER_BLOCK // 32
        cycles = blocks / sms * warps * sass["instructions"] / ISSUE_PER_CLOCK
        out.append({"variant": variant, "instructions": int(sass["instructions"]),
                    "elements_per_thread": design.elements_per_thread,
                    "instructions_per_element": sass["instructions"] / design.elements_per_thread,
                    "blocks_per_sm": blocks / sms, "issue_us": cycles / clock,
                    "counted": ISSUE_COUNTED[variant]})
    return pd.DataFrame(out)


def three_bills(result: LessonResult, variants=None, shape=SQUARE) -> pd.DataFrame:
    """``cost_model`` with the third bill: per transpose the shared pipe (``pipe_us``), DRAM (the copy,
    ``copy_us``) and issuing its instructions (``issue_us``, where ``issue_time`` has it). The model is
    the longest (``predicted_us``, ``bill`` names it); ``error`` = measured / model - 1."""
    model = cost_model(result, shape=shape)
    issue = issue_time(result, shape)
    issue["issue_upper_bound"] = issue["variant"].isin(WITH_SCALAR_PATH)
    model = model.merge(issue[["variant", "instructions", "instructions_per_element", "issue_us",
                               "issue_upper_bound"]], on="variant", how="left")
    bills = model[["pipe_us", "copy_us", "issue_us"]].rename(
        columns={"pipe_us": "shared pipe", "copy_us": "DRAM", "issue_us": "issue"})
    model["predicted_us"] = bills.max(axis=1)
    model["bill"] = bills.idxmax(axis=1)
    model["error"] = model["measured_us"] / model["predicted_us"] - 1
    model["unexplained_us"] = model["measured_us"] - model["predicted_us"]
    if variants is not None:
        model = model.set_index("variant").loc[[v for v in variants if v in set(model["variant"])]]
        model = model.reset_index()
    return model


def float4_padded_read() -> pd.DataFrame:
    """The first column read (a warp's 4-byte loads of rows 0, 4, .., 28, columns 0..3) of the 32x32
    float4 tile, traced on the simulator: unswizzled, rows padded by a whole float4 (36 words, still
    16-byte aligned), and swizzled. Columns layout, wavefronts (of that request)."""
    a = np.arange(32 * 32, dtype=np.float32).reshape(32, 32)
    rows = []
    for layout, kernel in (("unswizzled", k.transpose_tile32_vec4_kernel),
                           ("padded by a float4 (rows of 36 words)",
                            k.transpose_tile32_vec4_float4_padded_kernel),
                           ("swizzled", k.transpose_tile32_vec4_swizzled_kernel)):
        out = np.zeros((32, 32), np.float32)
        counts = trace(kernel, (1, 1), (k.TILE32_VEC4_THREADS,), a.reshape(-1), out.reshape(-1), 32, 32, 1)
        if not np.array_equal(out, a.T):
            raise AssertionError(f"{layout}: traced run did not transpose")
        request = counts.request(source="tile[word(r, c)]", op="ld")
        rows.append({"layout": layout, "wavefronts": int(request.attrs["wavefronts"])})
    return pd.DataFrame(rows)


def thread_elements(variant: str = "tile32_padded") -> pd.DataFrame:
    """Which elements of a 32x32 tile each thread of a (32, 8) block loads from ``a`` and stores to
    ``out``, traced on the simulator: columns tx, ty, array ('a' or 'out'), k (its n-th access), row, col."""
    a = np.arange(32 * 32, dtype=np.float32).reshape(32, 32)
    counts = trace_transpose(variant, a)
    sites = counts.sites[counts.sites["array"].isin(["a", "out"]) & (counts.sites["space"] == "global")]
    accesses = counts.accesses.merge(sites[["site", "root", "store", "array"]], on=["site", "root", "store"])
    accesses = accesses.sort_values(["warp", "lane", "site", "k"])
    thread = accesses["warp"] * 32 + accesses["lane"]
    element = accesses["address"] // 4
    table = pd.DataFrame({"tx": thread % 32, "ty": thread // 32, "array": accesses["array"],
                          "row": element // 32, "col": element % 32})
    table["k"] = table.groupby(["tx", "ty", "array"]).cumcount()
    return table.reset_index(drop=True)


def half_warp_picture():
    """One warp's 8-byte shared load (lane l reads float64 l), traced: two phases of 16 lanes."""
    x = np.arange(32, dtype=np.float64)
    counts = trace(k.shared_stride64_kernel, 1, 32, x, np.zeros(32), 1)
    request = counts.request(array="buffer", op="ld")
    return pictures.shared_memory_banks(request, title="8-byte loads: lanes 0-15, then lanes 16-31",
                                        provenance="traced on the simulator")


# ------------------------------------------------------------------------------ figures

LESSON_VARIANTS = ["naive", "tile32", "tile32_padded", "tile32_swizzled", "tile64_vec4",
                   "tile64_vec4_swizzled"]
CONTROLS_FIGURE = ["tile32_padded_loop", "tile32_padded", *CONTROL_VARIANTS]
BILLS_FIGURE = ["tile32", "tile32_padded", "tile32_swizzled", "tile32_padded_2tiles", "tile64_swizzled",
                "tile32_vec4", "tile32_vec4_swizzled", "tile64_vec4", "tile64_vec4_swizzled"]


def figures(result: LessonResult, roof: dict) -> dict:
    """The lesson's figures from a result (those it has data for), and the bank pictures of tiles."""
    table, provenance = result.table, result.provenance
    square = _square_rows(table)
    figs = {}
    reference = square[square["variant"] == CUPY_COPY]
    if len(reference):
        ceiling = float(reference["gbps"].iloc[0])
        teaching = square[square["variant"].isin([*LESSON_VARIANTS, COPY, CUPY_COPY, CUPY_TRANSPOSE])]
        figs["transpose_8192"] = charts.percent_of_ceiling(
            teaching, ceiling=ceiling, metric="gbps", ceiling_label="cupy.copyto, same run",
            provenance=provenance, title="Transpose 8192x8192 float32: share of cupy.copyto")
        figs["transpose_shapes"] = pictures.shape_grid(
            transpose_summary(table, TRANSPOSE_VARIANTS), [*TRANSPOSE_VARIANTS, CUPY_TRANSPOSE],
            provenance=provenance)
        if square["variant"].isin(CONTROL_VARIANTS).any():
            rows = square[square["variant"].isin([*CONTROLS_FIGURE, COPY, CUPY_COPY])]
            figs["padded_tile_controls"] = charts.percent_of_ceiling(
                rows, ceiling=ceiling, metric="gbps", ceiling_label="cupy.copyto, same run",
                provenance=provenance, title="What else a padded 32x32 tile costs: share of cupy.copyto")
        if square["variant"].isin(STEP_VARIANTS).any():
            summary = transpose_summary(table)
            at = summary[summary["shape"] == f"{SQUARE[0]}x{SQUARE[1]}"]
            figs["tile_steps"] = pictures.tile_steps(at, provenance=provenance)
    if (table["variant"] == "shared_read").any():
        figs["read_cost"] = pictures.time_vs_wavefronts(result_read_cost(result), provenance=provenance,
                                                        sm_clock_mhz=sm_clock_mhz(result))
        try:
            model = three_bills(result, BILLS_FIGURE)
        except RecordingError:
            model = pd.DataFrame()
        if len(model):
            figs["cost_model"] = pictures.cost_model_bars(model, provenance=provenance,
                                                          unlabelled=("tile32",))  # exercise 1
    figs["tile_banks"] = pictures.tile_bank_maps(bank_layouts(("unpadded", "padded", "xor")), columns=3)
    figs["float4_banks"] = pictures.tile_bank_maps(
        bank_layouts(("float4", "float4_xor")), columns=2, panel_width=5.0,
        title="float4 groups: rows stored with 16-byte stores, read by column")
    return figs


# ------------------------------------------------- recorded on the GPU: ncu counters, resources, SASS

SHARED_COUNTERS = (
    *(f"smsp__inst_executed_op_shared_{op}.sum" for op in ("ld", "st")),
    *(f"l1tex__data_pipe_lsu_wavefronts_mem_shared_op_{op}.sum" for op in ("ld", "st")),
    *(f"l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_{op}.sum" for op in ("ld", "st")),
    *(f"smsp__inst_executed_op_global_{op}.sum" for op in ("ld", "st")),
    *(f"l1tex__t_sectors_pipe_lsu_mem_global_op_{op}.sum" for op in ("ld", "st")),
)
OCCUPANCY_LIMITS = {"launch__occupancy_limit_shared_mem": "shared memory",
                    "launch__occupancy_limit_registers": "registers",
                    "launch__occupancy_limit_warps": "warps", "launch__occupancy_limit_blocks": "blocks"}
LAUNCH_METRICS = (*OCCUPANCY_LIMITS, "launch__shared_mem_per_block_static", "launch__shared_mem_per_block",
                  "launch__registers_per_thread", "launch__block_size",
                  "sm__maximum_warps_per_active_cycle_pct")
NCU_METRICS = (*SHARED_COUNTERS, *LAUNCH_METRICS)

# Launches profiled by Nsight Compute on the GPU and traced by the tests: the same kernels, grids and
# inputs, so the two sets of counts must agree exactly. Every transpose at TRACE_SHAPE (whole tiles:
# the counts per tile the cost model reads); the teaching steps also at 45x70 (partial tiles).
NCU_SHAPES = [TRACE_SHAPE, (45, 70)]


def ncu_launches() -> list[dict]:
    """name, kernel, grid, block, args (host arrays; the last array is the output), expected."""
    rng = np.random.default_rng(0)
    launches = []
    for stride in READ_STRIDES:
        expected = k.shared_read_reference(np.arange(READ_BLOCK) % 32, stride, 1)
        launches.append({"name": f"shared_read/stride={stride}", "kernel": k.shared_read_kernel, "grid": (1,),
                         "block": (READ_BLOCK,), "args": (np.zeros(READ_BLOCK, np.float32), stride, 1),
                         "expected": expected})
    for stride in (1, 2):
        x = rng.standard_normal(32)
        launches.append({"name": f"shared_stride64/stride={stride}", "kernel": k.shared_stride64_kernel,
                         "grid": (1,), "block": (32,), "args": (x, np.zeros(32), stride), "expected": x})
    for shape in NCU_SHAPES:
        rows, cols = shape
        a = rng.standard_normal(shape, dtype=np.float32)
        for variant in ALL_TRANSPOSES if shape == TRACE_SHAPE else TRANSPOSE_VARIANTS:
            out = np.zeros((cols, rows), np.float32)
            kernel, grid, block, args = _launch_config(variant, a, out)
            launches.append({"name": f"{variant}/{rows}x{cols}", "kernel": kernel, "grid": tuple(grid),
                             "block": tuple(block), "args": args, "expected": a.T})
    return launches


def ncu_cases() -> list[ncu.Case]:
    """Every launch of ``ncu_launches`` as an ncu case (inputs on the device, checked afterwards)."""
    cases = []
    for launch in ncu_launches():
        args = [cuda.to_device(a) if isinstance(a, np.ndarray) else a for a in launch["args"]]
        output = [a for a in args if hasattr(a, "copy_to_host")][-1]
        expected = np.asarray(launch["expected"]).reshape(-1)
        # configured at launch time: the simulator's kernel[grid, block] configures the kernel itself
        cases.append(ncu.Case(
            name=launch["name"], kernel=launch["kernel"].py_func.__name__,
            launch=lambda kernel=launch["kernel"], grid=launch["grid"], block=launch["block"], args=args:
            kernel[grid, block](*args),
            check=lambda out=output, want=expected: np.array_equal(out.copy_to_host().reshape(-1), want)))
    return cases


def ncu_table(result: LessonResult, cases: str | None = None) -> pd.DataFrame:
    """Recorded ncu counters, one row per case (optionally those whose name starts with ``cases``)."""
    rows = result.evidence.ncu_table()
    if rows.empty:
        raise RecordingError(f"{result.evidence.origin}: no ncu counters recorded")
    if cases:
        rows = rows[rows["case"].str.startswith(cases)]
    table = rows.pivot_table(index="case", columns="metric", values="value", aggfunc="first", sort=False)
    short = {m: m.replace("l1tex__data_pipe_lsu_", "").replace("l1tex__data_", "").replace("l1tex__t_", "")
             .replace("smsp__inst_executed_op_", "inst_").replace("_pipe_lsu", "").replace(".sum", "")
             for m in table.columns}
    return table.rename(columns=short).reset_index()


def occupancy_table(result: LessonResult, shape=TRACE_SHAPE) -> pd.DataFrame:
    """Per kernel, Nsight Compute's launch report: shared memory per block (as declared, and with
    the driver's reserve), registers, and the blocks per SM each resource allows; the least binds."""
    rows = result.evidence.ncu_table()
    at_shape = rows["case"].str.endswith(f"/{shape[0]}x{shape[1]}")
    picked = rows[at_shape | (rows["case"] == "shared_read/stride=1")]
    wide = picked.pivot_table(index="case", columns="metric", values="value", aggfunc="first", sort=False)
    needed = [*OCCUPANCY_LIMITS, "launch__shared_mem_per_block_static"]
    missing = [m for m in needed if m not in wide.columns]
    if missing:
        raise RecordingError(f"{result.evidence.origin}: ncu cases lack {', '.join(missing)}")
    wide = wide.dropna(subset=needed)
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
    limits = limits_of(result)
    answers = [occupancy(int(t), int(r), int(b), limits) for t, r, b in
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


_ADDRESS = "*/"


def sass_lines(result: LessonResult, kernel: str, first: int = 12, start: str | None = None) -> str:
    """A kernel's recorded SASS memory instructions, one per line (without addresses): ``first`` of
    them, from the first that contains ``start`` (e.g. "LDG.E.128") when given."""
    sass = result.evidence.kernel(kernel).get("sass", {})
    lines = [line.split(_ADDRESS, 1)[-1].strip() for line in sass.get("lines", [])]
    if not lines:
        raise RecordingError(f"{result.evidence.origin}: kernels.{kernel}.sass.lines is missing")
    if start is not None:
        lines = lines[next((i for i, line in enumerate(lines) if start in line), len(lines)):]
    return "\n".join(lines[:first])


MEMORY_OPCODES = ("LDG", "STG", "LDS", "STS", "LDL", "STL", "LD.", "ST.", "BAR")


def resources_table(result: LessonResult) -> pd.DataFrame:
    """Per kernel: registers, static shared memory, local memory (recorded) and the memory opcodes."""
    rows = []
    for name, entry in result.evidence.kernels.items():
        counts = entry.get("sass", {}).get("counts", {})
        memory = {op: n for op, n in counts.items() if op.startswith(MEMORY_OPCODES)}
        rows.append({"kernel": name, "registers": entry.get("registers"),
                     "shared_bytes": entry.get("shared_bytes"), "local_bytes": entry.get("local_bytes"),
                     "sass_memory_opcodes": ", ".join(f"{op} x{n}" for op, n in memory.items())})
    return pd.DataFrame(rows)


# -------------------------------------------------------------------------------- checks

CHECK_SHAPES = [(45, 70), (33, 20)]  # not multiples of 32, one wider than tall, one taller
VECTOR_SHAPES = [(68, 100), (45, 70)]  # whole float4 rows, partial tiles; then the scalar path


def check(shapes=None, vector_shapes=None) -> pd.DataFrame:
    """Every kernel of the lesson against NumPy, on random inputs of awkward sizes (``CHECK_SHAPES``,
    ``VECTOR_SHAPES`` for the 16-byte kernels, unless other shapes are given)."""
    rng = np.random.default_rng()
    rows = []
    shapes, vector_shapes = shapes or CHECK_SHAPES, vector_shapes or VECTOR_SHAPES
    for variant, transpose in {**k.TRANSPOSES, **k.EXPERIMENT_TRANSPOSES}.items():
        for shape in vector_shapes if "vec4" in variant else shapes:
            a = rng.standard_normal(shape, dtype=np.float32)
            rows.append(check_row(f"{variant} {shape[0]}x{shape[1]}", np.array_equal(transpose(a), a.T),
                                  "bit-exact against a.T"))
    a = rng.standard_normal(shapes[0], dtype=np.float32)
    tiles = k.tile_count(a.shape)
    for variant, transpose in ((v, k.CONTROL_TRANSPOSES[v]) for v in k.GRID_STRIDE_VARIANTS):
        rows.append(check_row(f"{variant} {a.shape[0]}x{a.shape[1]}, 2 blocks for {tiles} tiles",
                              np.array_equal(transpose(a, 2), a.T),
                              "bit-exact against a.T: the blocks walk the tiles"))
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
