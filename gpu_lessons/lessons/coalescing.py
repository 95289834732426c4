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
GRID_STRIDE_16 = ["copy_w16_grid_stride", "copy_w16_grid_stride_x4", "copy_w16_queue"]
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
               reference="particles_soa_vec4"),
    Comparison(title="grid-stride float4 copy vs cupy copy", lesson=NAME, metric="gbps", ours=GRID_STRIDE_16,
               reference=CUPY_COPY),
    Comparison(title="best copy vs cupy copy", lesson=NAME, metric="gbps", ours=WIDTH_VARIANTS,
               reference=CUPY_COPY),
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


def model_table(table: pd.DataFrame, kind: str, ceiling_gbps: float) -> pd.DataFrame:
    """Measured useful bandwidth beside the model ceiling x ideal / actual sectors, with the
    model's error per point (measured / model - 1), sectors from the tracer and from ncu."""
    variant = "offset_copy" if kind == "offset" else "strided_copy"
    measured = table[table["variant"] == variant][["param", "size", "gbps"]].copy()
    measured["param"] = measured["param"].astype(int)
    sectors = sweep_sectors(kind, measured["param"])
    merged = measured.merge(sectors, on="param").merge(recorded_ncu_sectors(kind), on="param", how="left")
    merged["model_gbps"] = ceiling_gbps * merged["ideal_sectors"] / merged["sectors"]
    merged["error"] = merged["gbps"] / merged["model_gbps"] - 1
    return merged.sort_values("param", ignore_index=True)


def copy_ceiling(table: pd.DataFrame) -> tuple[float, str]:
    """The same run's best copy (ours or CuPy's) at the largest size: the model's ceiling."""
    copies = table[table["variant"].isin([*WIDTH_VARIANTS, CUPY_COPY])]
    copies = copies[copies["size"] == copies["size"].max()]
    best = copies.loc[copies["gbps"].idxmax()]
    return float(best["gbps"]), str(best["variant"])


def particle_bytes_moved() -> pd.DataFrame:
    """Bytes per particle each layout reads and writes in whole 32-byte sectors (the DRAM view),
    and the sectors per request its loads see in L1 (the tracer, one warp of particles)."""
    rows = []
    for layout, read, written in (("particles_aos", 24, 24), ("particles_soa", 24, 12),
                                  ("particles_aosoa", 24, 12), ("particles_padded_vec4", 32, 16)):
        rows.append({"variant": layout, "useful_bytes": k.PARTICLE_USEFUL_BYTES,
                     "moved_bytes": read + written})
    return pd.DataFrame(rows)


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
    steps = ["particles", "widths", "offsets", "strides"]
    rows: list[dict] = []
    for step in progress(steps, NAME) if show_progress else steps:
        rows.extend({"particles": _particle_rows, "widths": _width_rows, "offsets": _offset_rows,
                     "strides": _stride_rows}[step](big))
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


def _offset_rows(big):
    from numba import cuda

    from ..kernels.launch import blocks_to_cover
    from ..kernels.util import poison

    out = cuda.device_array(OFFSET_N, np.float32)
    rows = []
    for offset in OFFSETS:
        poison(out)
        def launch(_, o=offset):
            k.offset_copy_kernel[blocks_to_cover(OFFSET_N), k.THREADS_PER_BLOCK](big, out, o)

        rows.append(timed_row(NAME, "offset_copy", launch, size=OFFSET_N, param=offset,
                              bytes_moved=8 * OFFSET_N, flops=0))
        _check_copy(out, lambda j, o=offset: j + np.uint64(o), f"offset_copy offset={offset}")
    return rows


def stride_outputs(stride: int) -> int:
    return min(STRIDE_MAX_OUT, STRIDE_INPUT // stride)


def _stride_rows(big):
    from numba import cuda

    from ..kernels.launch import blocks_to_cover
    from ..kernels.util import poison

    rows = []
    for stride in STRIDES:
        n = stride_outputs(stride)
        out = cuda.device_array(n, np.float32)
        poison(out)
        def launch(_, s=stride, n=n, out=out):
            k.strided_copy_kernel[blocks_to_cover(n), k.THREADS_PER_BLOCK](big, out, s)

        rows.append(timed_row(NAME, "strided_copy", launch, size=n, param=stride, bytes_moved=8 * n, flops=0))
        _check_copy(out, lambda j, s=stride: j * np.uint64(s), f"strided_copy stride={stride}")
    return rows


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
    figs = {}
    for kind in ("offset", "stride"):
        model = model_table(table, kind, ceiling)
        figs[f"{kind}_sweep"] = plots.sectors_sweep(model, kind, ceiling, ceiling_label=label,
                                                    provenance=provenance)
    widths = table[table["variant"].isin([*WIDTH_VARIANTS[:6], CUPY_COPY])]
    figs["access_width"] = plots.bandwidth_vs_size(widths, ceiling_gbps=ceiling, ceiling_label=label,
                                                   provenance=provenance,
                                                   title="Copy bandwidth by access width, L2-resident to 17x L2")
    layouts = table[table["variant"].isin([*LAYOUT_VARIANTS, CUPY_ELEMENTWISE, CUPY_EXPRESSIONS, CUPY_AOS])]
    figs["particles"] = plots.percent_of_ceiling(layouts, ceiling, ceiling_label=label, provenance=provenance,
                                                 title="Particle update x += v*dt, useful GB/s")
    big = table[table["variant"].isin([*WIDTH_VARIANTS, CUPY_COPY])]
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
    rows.append(check_row("offset_copy offset=3", np.array_equal(k.offset_copy(x, 3), x[3:]), "against NumPy"))
    rows.append(check_row("strided_copy stride=7", np.array_equal(k.strided_copy(x, 7), x[::7]),
                          "against NumPy"))
    return pd.DataFrame(rows)


def load(live: bool | None = None, gpu: str | None = None):
    """This lesson's table: measured now on a GPU, else the reference recording (see common.load)."""
    from . import common

    return common.load(sys.modules[__name__], live=live, gpu=gpu)
