"""Lesson 5: reduce. s = sum(x) from one global atomic per element to the bandwidth limit.

The experiment (all float32, input read once: bytes = 4 n):
- the progression at 2^28 elements, every kernel of ``kernels.reduce`` in teaching order;
- a size sweep 2^10 .. 2^28 for the fast kernels, cupy.sum (CUB) and numba-cuda's cuda.reduce;
- a grid sweep (blocks per SM) for the grid-stride kernels at 2^28;
- floating point (``float_experiment``): each variant's error against a float64 sum, and how many
  different bit patterns repeated runs give (float atomics land in a different order each run).
"""

from __future__ import annotations

import math
import sys
from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..kernels import reduce as k
from ..scoreboard import Comparison
from .common import check_row, progress, timed_row

NAME = "reduce"
TITLE = "Reduce: from one atomic per element to the bandwidth limit"
NOTEBOOK = "05_reduce.ipynb"
SUMMARY = "atomics, shared trees, divergence and bank conflicts, shuffles, float4; deterministic sums"

BIG = 2**28  # 1 GiB of float32: 17x the H200's 60 MiB L2
MID = 2**24  # 64 MiB: where a single launch beats CUB's two
SIZES = [2**p for p in range(10, 29)]
SWEEP_VARIANTS = ["warp_shuffle", "vec4", "vec4_last_block", "vec4_two_pass"]
GRID_VARIANTS = ["grid_stride", "warp_shuffle", "vec4", "vec4_last_block"]
BLOCKS_PER_SM = [1, 2, 3, 4, 6, 8, 16, 32]
DEFAULT_BLOCKS_PER_SM = 8  # 8 x 256 threads = 2048: a full SM
SLOW_RUNS = 3  # the one-atomic-per-element kernel may take ~0.1-1 s at 2^28
CUPY = "cupy.sum"
NUMBA_REDUCE = "numba cuda.reduce"
FLOAT_RUNS = 20  # repeated runs per variant in the bits experiment
BEST = ["vec4", "vec4_last_block", "vec4_two_pass"]

COMPARISONS = [
    Comparison(title="sum of 2^28 float32", lesson=NAME, metric="gbps", ours=BEST, reference=CUPY,
               size=BIG),
    Comparison(title="sum of 2^24 float32 (single pass vs CUB's two)", lesson=NAME, metric="gbps",
               ours=BEST, reference=CUPY, size=MID),
    Comparison(title="deterministic sum of 2^28 float32", lesson=NAME, metric="gbps",
               ours=k.DETERMINISTIC, reference=CUPY, size=BIG),
]


# ----------------------------------------------------------------------------- experiment


def _input(n, rng):
    """Uniform [0, 1) float32: random, never zero-filled, and its sum grows like n / 2, so the
    last bits of a float32 sum are visibly affected by the order of additions."""
    return rng.random(n, dtype=np.float32)


def _slices(x, n, sets):
    """`sets` disjoint length-n views of x (offsets keep 16-byte alignment), for rotation."""
    return [x[s * n:(s + 1) * n] for s in range(sets)]


def measure(show_progress: bool = True, rows: list | None = None) -> pd.DataFrame:
    """Progression, size sweep, grid sweep and references on the GPU (every result checked).

    ``rows``: a list to append each row to as it is measured (a job can save a partial sweep)."""
    from numba import cuda

    from ..bench import input_sets_needed
    from ..device import device_info
    from ..results import make_table

    rng = np.random.default_rng(2026)
    info = device_info()
    l2_bytes = int(info.l2_mib * 2**20)
    host = _input(BIG, rng)
    x = cuda.to_device(host)
    max_blocks = info.sms * max(BLOCKS_PER_SM)
    works = {name: k.Workspace(name, max_blocks) for name in k.BY_NAME}
    rows = [] if rows is None else rows
    seen = set()

    def run(name, n, bps=DEFAULT_BLOCKS_PER_SM):
        v = k.variant(name)
        param = float(bps) if v.grid_stride else math.nan
        key = (name, n, param)
        if key in seen:
            return
        seen.add(key)
        sets = input_sets_needed(4 * n, l2_bytes)
        xs = _slices(x, n, sets)
        work = works[name]
        blocks = info.sms * bps

        def launch(s):
            k.launch(name, xs[s], work, blocks)

        cuda.to_device(np.full(1, np.nan, np.float32), to=work.out)  # poison
        runs = SLOW_RUNS if name == "atomic_per_element" and n > MID else None
        row = timed_row(NAME, name, launch, size=n, bytes_moved=4 * n, flops=n, param=param,
                        input_sets=sets, runs=runs)
        rows.append(row)
        _check(name, work.out.copy_to_host()[0], _last_slice(host, n, sets, row), n, blocks)

    steps = [("progression", name, BIG, DEFAULT_BLOCKS_PER_SM) for name in k.BY_NAME]
    steps += [("grid", name, BIG, bps) for name in GRID_VARIANTS for bps in BLOCKS_PER_SM]
    steps += [("sizes", name, n, DEFAULT_BLOCKS_PER_SM) for n in SIZES for name in SWEEP_VARIANTS]
    for _, name, n, bps in progress(steps, NAME) if show_progress else steps:
        run(name, n, bps)
    try:
        rows.extend(_references(x, host, l2_bytes))
    except Exception as error:  # noqa: BLE001 - a probing run keeps the kernels' rows
        if STRICT:
            raise
        FAILED_CHECKS.append(f"references: {type(error).__name__}: {error}")
    return make_table(rows)


_EXACT: dict = {}  # (id of the host input, n, slot) -> (float64 sum, sum |x|): 1 GiB sums take time


def _last_slice(host, n, sets, row):
    """The slice the last timed run read (runs cycle over the sets): its float64 sum and sum|x|."""
    s = (row["runs"] - 1) % sets
    key = (id(host), n, s)
    if key not in _EXACT:
        part = host[s * n:(s + 1) * n]
        _EXACT[key] = float(np.sum(part, dtype=np.float64)), float(np.sum(np.abs(part), dtype=np.float64))
    return _EXACT[key]


STRICT = True  # a failed check stops measure(); a probing job may set False and read FAILED_CHECKS
FAILED_CHECKS: list = []


def _check(name, got, exact, n, blocks):
    reference, abs_sum = exact
    bound = _bound(name, n, abs_sum, blocks)
    if not abs(float(got) - reference) <= bound:
        message = f"{name} n={n}: {got!r} against the float64 sum {reference!r} (error bound {bound:.3g})"
        if STRICT:
            raise AssertionError(message)
        FAILED_CHECKS.append(message)


def _bound(name, n, abs_sum, blocks):
    """Our kernels: their own depth. A library: a generous 2 log2(n) (a tree of some shape)."""
    d = k.addition_depth(name, n, blocks) if name in k.BY_NAME else 2 * max(1, int(math.log2(max(n, 2))))
    return k.gamma(d) * abs_sum


def _references(x, host, l2_bytes):
    """cupy.sum (CUB) and numba-cuda's cuda.reduce, on the same inputs and sizes."""
    from numba import cuda

    from ..bench import input_sets_needed

    rows = []
    sum_reduce = cuda.reduce(lambda a, b: a + b)
    result = cuda.device_array(1, np.float32)
    try:
        import cupy as cp
    except ImportError:
        cp = None
    if cp is not None:
        _use_cub(cp)
    for n in SIZES:
        sets = input_sets_needed(4 * n, l2_bytes)
        xs = _slices(x, n, sets)
        if cp is not None:
            cxs = [cp.asarray(v) for v in xs]
            out = {}

            def cupy_sum(s, cxs=cxs, out=out):
                out["value"] = cp.sum(cxs[s])

            row = timed_row(NAME, CUPY, cupy_sum, provider="cupy", size=n, bytes_moved=4 * n,
                            flops=n, input_sets=sets)
            rows.append(row)
            _check(CUPY, float(out["value"]), _last_slice(host, n, sets, row), n, 0)

        def numba_reduce(s, xs=xs):
            sum_reduce(xs[s], res=result)

        cuda.to_device(np.full(1, np.nan, np.float32), to=result)
        row = timed_row(NAME, NUMBA_REDUCE, numba_reduce, provider="gpu_lessons", size=n,
                        bytes_moved=4 * n, flops=n, input_sets=sets, runs=SLOW_RUNS if n == BIG else None)
        rows.append(row)
        _check(NUMBA_REDUCE, result.copy_to_host()[0], _last_slice(host, n, sets, row), n, 0)
    return rows


def _use_cub(cp):
    """cupy.sum through CUB's DeviceReduce (CuPy's CUPY_ACCELERATORS; we set it explicitly)."""
    try:
        from cupy._core import _accelerator

        _accelerator.set_reduction_accelerators(["cub"])
    except (ImportError, AttributeError) as error:  # a CuPy without that switch: its default
        FAILED_CHECKS.append(f"could not select CUB for cupy.sum: {error}")


# -------------------------------------------------------------------------- floating point


def float_experiment(n: int = BIG, runs: int = FLOAT_RUNS, x_host=None) -> pd.DataFrame:
    """Each variant `runs` times on the same input: error against the float64 sum, in units of
    the error bound and relative to sum|x|, and how many distinct float32 bit patterns came out."""
    from numba import cuda

    from ..device import device_info

    rng = np.random.default_rng(7)
    host = _input(n, rng) if x_host is None else x_host
    x = cuda.to_device(host)
    exact = float(np.sum(host, dtype=np.float64))
    abs_sum = float(np.sum(np.abs(host), dtype=np.float64))
    sms = device_info().sms
    rows = []

    def record(name, values, provider, depth):
        bits = np.asarray(values, np.float32).view(np.uint32)
        errors = np.abs(np.asarray(values, np.float64) - exact)
        bound = k.gamma(depth) * abs_sum if depth else math.nan
        rows.append({"variant": name, "provider": provider, "size": n, "runs": len(values),
                     "distinct_results": len(set(bits.tolist())),
                     "first": float(values[0]), "min": float(np.min(values)), "max": float(np.max(values)),
                     "exact": exact, "max_error": float(errors.max()),
                     "relative_error": float(errors.max() / abs_sum),
                     "error_bound": bound, "depth": depth})

    for name in k.BY_NAME:
        work = k.Workspace(name, sms * DEFAULT_BLOCKS_PER_SM)
        values = []
        for _ in range(runs if name != "atomic_per_element" or n <= MID else SLOW_RUNS):
            k.launch(name, x, work, sms * DEFAULT_BLOCKS_PER_SM)
            values.append(work.out.copy_to_host()[0])
        record(name, values, "gpu_lessons", k.addition_depth(name, n, sms * DEFAULT_BLOCKS_PER_SM))
    try:
        import cupy as cp
    except ImportError:
        cp = None
    if cp is not None:
        _use_cub(cp)
        cx = cp.asarray(x)
        record(CUPY, [float(cp.sum(cx)) for _ in range(runs)], "cupy", 0)
    sum_reduce = cuda.reduce(lambda a, b: a + b)
    record(NUMBA_REDUCE, [sum_reduce(x) for _ in range(min(runs, SLOW_RUNS))], "gpu_lessons", 0)
    for order, value in host_orders(host).items():
        record(order, [value], "numpy", 0)
    return pd.DataFrame(rows)


def host_orders(x) -> dict:
    """The same float32 numbers added in other orders on the host: one by one (sequential, what
    a single thread's loop does), NumPy's pairwise float32 sum, and float64."""
    x = np.asarray(x, np.float32)
    return {
        "sequential float32 (cumsum)": float(np.cumsum(x, dtype=np.float32)[-1]) if x.size else 0.0,
        "numpy pairwise float32": float(np.sum(x, dtype=np.float32)),
    }


# -------------------------------------------------------------------- resources and SASS


SASS_MARKERS = {"LDG.E.128": "16-byte global loads", "LDG.E ": "4-byte global loads",
                "SHFL.DOWN": "shuffles", "REDG.E.ADD.F32": "float atomic adds (no result)",
                "ATOMG": "atomics with a result", "BAR.SYNC": "barriers", "LDS": "shared loads",
                "STS": "shared stores", "MEMBAR": "memory fences"}
SASS_EXCERPT_KERNELS = ["atomic_per_element", "warp_shuffle", "vec4", "vec4_last_block"]
EXCERPT_OPS = ("LDG", "FADD", "SHFL", "RED", "ATOM", "BAR", "MEMBAR", "BRA")


def _compiled_kernels() -> dict:
    return {**k.KERNELS, "sum_partials": k.sum_partials}


def _sass_lines(sass: str) -> list[str]:
    """The instruction text of each SASS line ('LDG.E.128 R4, desc[UR6][R2.64] ;')."""
    lines = []
    for line in sass.splitlines():
        if "*/" in line and line.strip().startswith("/*"):
            text = line.split("*/", 1)[1].strip().rstrip("/").strip()
            if text and not text.startswith("/*"):
                lines.append(text)
    return lines


def resources() -> pd.DataFrame:
    """Registers, shared memory and SASS instruction counts of every compiled kernel (GPU only)."""
    rows = []
    for name, kernel in _compiled_kernels().items():
        lines = _sass_lines("\n".join(kernel.inspect_sass().values()))
        row = {"kernel": name, "registers": _one(kernel.get_regs_per_thread()),
               "shared_bytes": _one(kernel.get_shared_mem_per_block()),
               "local_bytes": _one(kernel.get_local_mem_per_thread())}
        for marker in SASS_MARKERS:
            row[marker.strip()] = sum(1 for line in lines if (line + " ").startswith(marker)
                                      or f" {marker}" in f" {line} ")
        rows.append(row)
    return pd.DataFrame(rows)


def sass_excerpts() -> dict:
    """Loads, adds, shuffles, atomics and branches of a few kernels, in program order (GPU only)."""
    excerpts = {}
    for name in SASS_EXCERPT_KERNELS:
        lines = _sass_lines("\n".join(_compiled_kernels()[name].inspect_sass().values()))
        excerpts[name] = [line for line in lines if any(op in line.split(" ")[0] for op in EXCERPT_OPS)
                          or (line.startswith("@") and any(op in line for op in EXCERPT_OPS))]
    return excerpts


def _one(value):
    if isinstance(value, dict):
        return next(iter(value.values())) if value else None
    return value


# --------------------------------------------------------- extras: floating point, resources

EXTRAS = "reduce_extras.json"


def measure_extras(x_host=None) -> dict:
    """On the GPU: the floating-point experiment at 2^24 and 2^28 elements, resources, SASS."""
    host = _input(BIG, np.random.default_rng(7)) if x_host is None else x_host
    floats = pd.concat([float_experiment(n, x_host=host[:n]) for n in (MID, BIG)], ignore_index=True)
    return {"float": floats.to_dict(orient="records"), "resources": resources().to_dict(orient="records"),
            "sass": sass_excerpts()}


def record_extras(root=None, extras: dict | None = None) -> str:
    """Write data/<gpu>/reduce_extras.json (the extras and the provenance) and return its path."""
    import json

    from ..results import data_root
    from .common import measurement_meta

    meta = measurement_meta(NAME, live=False)
    extras = measure_extras() if extras is None else extras
    path = data_root(root) / meta["slug"] / EXTRAS
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"meta": meta, **extras}, indent=1, default=float) + "\n")
    return str(path)


@dataclass(frozen=True)
class Extras:
    float: pd.DataFrame
    resources: pd.DataFrame
    sass: dict
    provenance: str
    source: str


def load_extras(live: bool | None = None, gpu: str | None = None) -> Extras:
    """Measured now on a GPU (``live=None`` decides by mode), else the recorded extras."""
    import json

    from .. import SIMULATED, results

    if live is None:
        live = not SIMULATED
    if live:
        from .common import measurement_meta

        extras = measure_extras()
        meta = measurement_meta(NAME, live=True)
        return Extras(pd.DataFrame(extras["float"]), pd.DataFrame(extras["resources"]), extras["sass"],
                      results.provenance(meta), "measured just now")
    path = results.data_root() / (gpu or results.DEFAULT_GPU) / EXTRAS
    if not path.exists():
        raise results.MissingRecordingError(f"{results.shown_path(path)}: no recorded extras")
    data = json.loads(path.read_text())
    return Extras(pd.DataFrame(data["float"]), pd.DataFrame(data["resources"]), data["sass"],
                  results.provenance(data["meta"]), results.shown_path(path))


# -------------------------------------------------------------------------------- checks


def check() -> pd.DataFrame:
    """Every kernel against a float64 NumPy sum, within its derived error bound (both modes):
    length 0, and a length that is not a multiple of the block (grid-stride kernels: one block,
    5003 elements = a full float4 round, a partial one and a scalar tail)."""
    rng = np.random.default_rng()
    rows = []
    for v in k.VARIANTS:
        blocks = 1 if v.grid_stride else None
        for n in (0, 5003 if v.grid_stride else 300):
            x = rng.standard_normal(n, dtype=np.float32)
            exact = float(np.sum(x, dtype=np.float64))
            got = k.reduce_sum(x, v.name, blocks=blocks)
            bound = k.error_bound(x, v.name, blocks)
            rows.append(check_row(f"{v.name} n={n}", abs(float(got) - exact) <= bound,
                                  f"|{float(got):.7g} - {exact:.7g}| <= {bound:.2g} (derived bound)"))
    return pd.DataFrame(rows)


# ----------------------------------------------------------------- the tracer's story (simulator)

TREES = ["tree_interleaved", "tree_strided_index", "tree_sequential"]


def tree_traces(seed: int = 0) -> dict:
    """Each shared-memory tree traced on one block of 256 random floats (simulator)."""
    from ..sim import trace

    x = np.random.default_rng(seed).random(k.BLOCK, dtype=np.float32)
    traces = {}
    for name in TREES:
        out = np.zeros(1, np.float32)
        traces[name] = trace.trace(k.KERNELS[name], 1, k.BLOCK, x, out)
        if not np.isclose(out[0], np.sum(x, dtype=np.float64), rtol=1e-5):
            raise AssertionError(f"{name} summed {out[0]}, not {np.sum(x)}")
    return traces


def tree_counts(traces: dict) -> pd.DataFrame:
    """The tree's add ``sdata[a] += sdata[b]``: its first load, per kernel: warp instructions,
    active lanes per instruction (32 = no divergence), wavefronts and bank conflicts."""
    rows = []
    for name, counts in traces.items():
        table = counts.by_instruction
        add = table[(table["space"] == "shared") & (table["op"] == "ld")].iloc[0]
        rows.append({"kernel": name, "source": add["source"], "warp instructions": int(add["instructions"]),
                     "lanes per instruction": round(add["threads"] / add["instructions"], 1),
                     "wavefronts": int(add["wavefronts"]), "bank conflicts": int(add["bank_conflicts"])})
    return pd.DataFrame(rows).set_index("kernel")


# --------------------------------------------------------------------------- models and views


MODEL_SMALLEST = 2**20  # below ~1 MiB, CUB switches to one single-tile launch: another regime


def launch_model(table: pd.DataFrame, variants: list[str], smallest: int = MODEL_SMALLEST) -> pd.DataFrame:
    """Fit t(n) = t0 + 4n / BW per variant (least squares on the size sweep, relative errors):
    t0 is what a call costs beyond moving bytes (launches, the last block's tail). Returns
    variant, t0_us, bw_gbps and the largest |model - measured| / measured over the sweep."""
    rows = []
    for name in variants:
        part = table[(table["variant"] == name) & (table["size"] >= smallest)
                     & (table["param"].isna() | (table["param"] == DEFAULT_BLOCKS_PER_SM))]
        if len(part) < 3:
            continue
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


def atomic_model(table: pd.DataFrame) -> pd.DataFrame:
    """Steps 1-5 all end in float atomics on out[0]: one per element, then one per block. The L2
    performs atomics on one address one after another, so step 1 measures the time of one; the
    model t = atomics x that time is then checked against steps 2-5 (the rest is the error)."""
    rows = progression_rows(table).set_index("variant")
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


BYTES_IN_FLIGHT_PER_THREAD = {"grid_stride": 8, "warp_shuffle": 8, "vec4": 64, "vec4_last_block": 64}


def in_flight(table: pd.DataFrame, sms: int) -> pd.DataFrame:
    """The grid sweep with the bytes each SM has requested and not yet received (loads issued
    before the first use: 2 floats per thread for the scalar kernels, 4 float4 for vec4), and the
    latency Little's law implies: bytes in flight on the chip / bandwidth."""
    rows = grid_rows(table).copy()
    per_thread = rows["variant"].map(BYTES_IN_FLIGHT_PER_THREAD)
    rows["bytes_in_flight_per_sm"] = rows["param"] * k.BLOCK * per_thread
    rows["implied_latency_ns"] = rows["bytes_in_flight_per_sm"] * sms / (rows["gbps"] * 1e9) * 1e9
    return rows[["variant", "param", "gbps", "bytes_in_flight_per_sm", "implied_latency_ns"]]


def versus(table: pd.DataFrame, reference: str = CUPY, variants=None) -> pd.DataFrame:
    """GB/s of each variant over the reference's at each size of the sweep."""
    variants = variants or BEST
    wide = _default_grid(table).pivot_table(index="size", columns="variant", values="gbps")
    return wide[[v for v in variants if v in wide]].div(wide[reference], axis=0)


def _default_grid(table: pd.DataFrame) -> pd.DataFrame:
    return table[table["param"].isna() | (table["param"] == DEFAULT_BLOCKS_PER_SM)]


def progression_rows(table: pd.DataFrame) -> pd.DataFrame:
    """Every variant and reference at 2^28 (grid-stride kernels at 8 blocks per SM)."""
    return _default_grid(table[table["size"] == BIG])


def sweep_rows(table: pd.DataFrame) -> pd.DataFrame:
    return _default_grid(table[table["variant"].isin(SWEEP_VARIANTS + [CUPY, NUMBA_REDUCE])])


def grid_rows(table: pd.DataFrame) -> pd.DataFrame:
    return table[table["variant"].isin(GRID_VARIANTS) & (table["size"] == BIG) & table["param"].notna()]


def figures(table: pd.DataFrame, ceilings: dict, provenance: str) -> dict:
    from .. import plots

    ceiling, label = ceilings["bandwidth_gbps"], "measured bandwidth ceiling"
    sweep = sweep_rows(table)
    fits = launch_model(table, SWEEP_VARIANTS + [CUPY], smallest=MODEL_SMALLEST)
    return {
        "progression": plots.steps_in_order(
            progression_rows(table), list(k.BY_NAME), ceiling, ceiling_label=label,
            provenance=provenance, title="Sum of 2^28 float32, step by step"),
        "bandwidth_vs_size": plots.metric_vs(
            sweep.assign(x=sweep["bytes"]), "bytes", xlabel="Bytes read per call", ceiling=ceiling,
            ceiling_label=label, provenance=provenance, title="Reduce: bandwidth against size",
            models=model_curves(fits[fits["variant"].isin(["vec4_last_block", CUPY])], SIZES)),
        "time_vs_size": plots.metric_vs(
            sweep, "bytes", metric="median_us", xlabel="Bytes read per call", log_y=True,
            provenance=provenance, title="Reduce: time per call against size"),
        "grid": plots.metric_vs(
            grid_rows(table), "param", xlabel="Blocks per SM (256 threads each)", ceiling=ceiling,
            ceiling_label=label, provenance=provenance, title="Grid-stride kernels: grid size, 2^28"),
    }


def progression_table(table: pd.DataFrame, ceilings: dict) -> pd.DataFrame:
    """The teaching steps at 2^28: time, GB/s, share of the ceiling, speed-up over the step before."""
    rows = progression_rows(table).set_index("variant")
    rows = rows.reindex([name for name in k.BY_NAME if name in rows.index])
    out = pd.DataFrame({
        "step": [k.BY_NAME[n].step for n in rows.index],
        "median_ms": rows["median_ms"], "gbps": rows["gbps"],
        "of_ceiling": rows["gbps"] / ceilings["bandwidth_gbps"],
    })
    out["speedup"] = out["median_ms"].shift(1) / out["median_ms"]
    return out


def load(live: bool | None = None, gpu: str | None = None):
    """This lesson's table: measured now on a GPU, else the reference recording (see common.load)."""
    from . import common

    return common.load(sys.modules[__name__], live=live, gpu=gpu)
