"""Lesson 1: the roofline. P <= min(P_peak, BW x I); the ridge point I* = P_peak / BW.

The experiment: copy kernels across sizes (bandwidth against size, the L2 visible at small sizes),
the notes' triad ``c = a * b + c`` (I = 0.125), a kernel family whose intensity is a parameter
(k FMAs per element: I = k / 4) swept across the ridge point, and naive GEMM against cuBLAS.
"""

from __future__ import annotations

import functools

import numpy as np
import pandas as pd
from numba import cuda

from .. import ncu
from ..bench import input_sets_needed
from ..device import device_info
from ..kernels import gemm as g
from ..kernels import roofline as k
from ..kernels.util import poison
from ..plots import charts
from ..plots import roofline as roofline_plots
from ..results import LessonResult
from ..scoreboard import Comparison
from ..sim.trace import trace
from .runner import Run, Section, check_row, cupy_or_none

NAME = "roofline"
TITLE = "Roofline and arithmetic intensity"
NOTEBOOK = "01_roofline.ipynb"
SUMMARY = "measured ceilings, arithmetic intensity counted for real kernels, points on the roof"

BANDWIDTH_SIZES = [2**p for p in range(14, 29, 2)]  # 64 KiB .. 1 GiB per buffer
TRIAD_ELEMENTS = 2**26  # 3 buffers of 256 MiB
INTENSITY_ELEMENTS = 2**27  # 512 MiB in, 512 MiB out
INTENSITY_KS = [2**p for p in range(11)]  # 1 .. 1024 FMAs per element: I = 0.25 .. 256
GEMM_N = 4096

COMPARISONS = [
    Comparison(title="triad c = a*b + c", lesson=NAME, metric="gbps", ours=["triad"],
               reference="cupy c += a * b"),
    Comparison(title="GEMM (naive kernel)", lesson=NAME, metric="gflops", ours=["gemm_naive"],
               reference="cublas sgemm"),
]


# ------------------------------------------------------------------ counting, for the narrative


def triad_intensity() -> float:
    """c[i] = a[i] * b[i] + c[i]: one FMA (2 FLOP) per 3 reads + 1 write of 4 bytes."""
    return 2 / (4 + 4 + 4 + 4)


def naive_gemm_intensity(k_dim: int) -> float:
    """One thread per output, no cache: K FMAs, 2K floats read, one written."""
    return 2 * k_dim / (8 * k_dim + 4)


def ideal_gemm_intensity(m: int, n: int, k_dim: int) -> float:
    """Every input read once and the output written once: 2MNK / 4(MK + KN + MN)."""
    return 2 * m * n * k_dim / (4 * (m * k_dim + k_dim * n + m * n))


def fma_family_intensity(fmas_per_element: int) -> float:
    return 2 * fmas_per_element / 8


def attainable_gflops(intensity, bandwidth_gbps: float, peak_gflops: float):
    """The roof: min(P_peak, BW x I), in GFLOP/s (works on scalars and arrays)."""
    return np.minimum(peak_gflops, bandwidth_gbps * np.asarray(intensity, dtype=float))


def ridge_point(bandwidth_gbps: float, peak_gflops: float) -> float:
    return peak_gflops / bandwidth_gbps


# ----------------------------------------------------------------------------- experiment


def _random(run: Run, n: int) -> np.ndarray:
    return run.rng.standard_normal(n, dtype=np.float32)


def _bandwidth(run: Run) -> None:
    """Every copy kernel (and CuPy's copy) from 64 KiB to 1 GiB per buffer: the L2 shows at small sizes."""
    for n in BANDWIDTH_SIZES:
        _copies_at(run, n)


def _copies_at(run: Run, n: int) -> None:
    sets = input_sets_needed(8 * n, int(device_info().l2_mib * 2**20))
    xs = [cuda.to_device(_random(run, n)) for _ in range(sets)]
    outs = [cuda.device_array(n, np.float32) for _ in range(sets)]
    for variant in k.COPY_VARIANTS:
        for out in outs:
            poison(out)
        run.time(variant, lambda s, v=variant: k.copy_launch(v, xs[s], outs[s]), size=n, bytes_moved=8 * n,
                 flops=0, input_sets=sets)
        if not all(np.array_equal(o.copy_to_host(), x.copy_to_host()) for o, x in zip(outs, xs, strict=True)):
            raise AssertionError(f"{variant} at n={n} did not copy exactly")
    cp = cupy_or_none()
    if cp is None:
        return
    src = [cp.asarray(x) for x in xs]
    dst = [cp.full_like(x, cp.nan) for x in src]
    run.time("cupy copy", lambda s: cp.copyto(dst[s], src[s]), provider="cupy", size=n, bytes_moved=8 * n,
             flops=0, input_sets=sets)
    if not all(bool(cp.array_equal(d, x)) for d, x in zip(dst, src, strict=True)):
        raise AssertionError("CuPy copy mismatch")


def _triad(run: Run) -> None:
    """The notes' triad c = a*b + c: ours in one kernel, CuPy's as a user writes it (two kernels)."""
    n = TRIAD_ELEMENTS
    a_host, b_host, c_host = _random(run, n), _random(run, n), _random(run, n)
    a, b, c = cuda.to_device(a_host), cuda.to_device(b_host), cuda.to_device(c_host)
    # Each timed run updates c in place (c += a*b): run once, check, then time from a fresh c.
    k.triad_launch(a, b, c)
    if not np.allclose(c.copy_to_host(), a_host * b_host + c_host, rtol=1e-6, atol=1e-6):
        raise AssertionError("triad result differs from NumPy")
    run.time("triad", lambda _: k.triad_launch(a, b, c), size=n, bytes_moved=16 * n, flops=2 * n)
    cp = cupy_or_none()
    if cp is None:
        return
    ca, cb, cc = cp.asarray(a_host), cp.asarray(b_host), cp.asarray(c_host)

    def cupy_triad(_):
        cc[...] += ca * cb  # what a CuPy user writes: two kernels and a temporary

    run.time("cupy c += a * b", cupy_triad, provider="cupy", size=n, bytes_moved=16 * n, flops=2 * n)


def _intensity(run: Run) -> None:
    """k FMAs per element read and written: I = k / 4 FLOP per byte, swept across the ridge point."""
    n = INTENSITY_ELEMENTS
    x = cuda.to_device(_random(run, n))
    y = cuda.device_array(n, np.float32)
    for fmas in INTENSITY_KS:
        poison(y)
        run.time("fma_intensity", lambda _, f=fmas: k.fma_intensity_launch(f, x, y), size=n, param=fmas,
                 bytes_moved=8 * n, flops=2 * fmas * n)
        sample = run.rng.choice(n, 4096, replace=False)
        got = y.copy_to_host()
        if np.isnan(got).any():
            raise AssertionError(f"fma_intensity k={fmas} left poisoned outputs")
        expected = k.fma_chain_reference(x.copy_to_host()[sample], fmas)
        if not np.allclose(got[sample], expected, rtol=1e-6, atol=1e-6):
            raise AssertionError(f"fma_intensity k={fmas} differs from the FMA reference")


def _gemm(run: Run) -> None:
    """The naive GEMM (one thread per output) against cuBLAS SGEMM at 4096^3."""
    n = GEMM_N
    a_host = run.rng.standard_normal((n, n), dtype=np.float32)
    b_host = run.rng.standard_normal((n, n), dtype=np.float32)
    a, b = cuda.to_device(a_host), cuda.to_device(b_host)
    c = cuda.device_array((n, n), np.float32)
    poison(c)
    run.time("gemm_naive", lambda _: g.gemm_naive_launch(a, b, c), size=n, bytes_moved=12 * n * n,
             flops=g.gemm_flops(n, n, n))
    reference = a_host[:8].astype(np.float64) @ b_host.astype(np.float64)
    error = np.linalg.norm(c.copy_to_host()[:8] - reference) / np.linalg.norm(reference)
    if not error < 1e-5:
        raise AssertionError(f"gemm_naive relative error {error:.1e}")
    cp = cupy_or_none()
    if cp is None:
        return
    ca, cb = cp.asarray(a_host), cp.asarray(b_host)
    cc = cp.empty((n, n), cp.float32)
    run.time("cublas sgemm", lambda _: cp.matmul(ca, cb, out=cc), provider="cublas", size=n,
             bytes_moved=12 * n * n, flops=g.gemm_flops(n, n, n))


SECTIONS = (
    Section("bandwidth", _bandwidth),
    Section("triad", _triad),
    Section("intensity", _intensity),
    Section("gemm", _gemm),
)


# ------------------------------------------------------------------- roofline points


def roofline_points(table: pd.DataFrame) -> pd.DataFrame:
    """Each measured kernel as a point: intensity as counted in the notes, measured GFLOP/s."""
    points = []
    for _, row in table.iterrows():
        variant = row["variant"]
        if variant == "triad":
            intensity, kind = triad_intensity(), "triad"
        elif variant == "fma_intensity":
            intensity, kind = fma_family_intensity(int(row["param"])), "k FMAs per element"
        elif variant == "gemm_naive":
            intensity, kind = naive_gemm_intensity(int(row["size"])), "GEMM (naive count)"
        elif variant == "cublas sgemm":
            n = int(row["size"])
            intensity, kind = ideal_gemm_intensity(n, n, n), "GEMM (ideal reuse)"
        else:
            continue
        label = f"k={int(row['param'])}" if variant == "fma_intensity" else variant
        points.append({"label": label, "intensity": intensity, "gflops": row["gflops"], "kind": kind})
    return pd.DataFrame(points)


BUDGET_KERNELS = [("triad", None), ("fma_intensity", 1), ("fma_intensity", 16), ("fma_intensity", 32),
                  ("fma_intensity", 64),
                  ("fma_intensity", 128), ("fma_intensity", 1024), ("gemm_naive", None)]


def time_budget(table: pd.DataFrame, roof: dict, kernels=BUDGET_KERNELS) -> pd.DataFrame:
    """The roofline as times: per kernel, bytes / bandwidth and FLOPs / peak (the model's time is the
    longer of the two) beside the measured time; error = measured / model - 1. Bytes are the notes'
    count (every array element crossing DRAM once per access)."""
    rows = []
    for variant, param in kernels:
        hit = table[(table["variant"] == variant) & (table["param"].isna() if param is None
                                                     else table["param"] == param)]
        if hit.empty:
            continue
        row = hit.iloc[-1]
        n = int(row["size"])
        flops = float(row["flops"])
        counted_bytes = float(row["bytes"]) if variant != "gemm_naive" else 4 * (2 * n**3 + n**2)
        memory_ms = counted_bytes / roof["bandwidth_gbps"] / 1e6
        compute_ms = flops / roof["peak_gflops"] / 1e6
        model_ms = max(memory_ms, compute_ms)
        label = f"{variant} k={int(param)}" if param is not None else variant
        rows.append({"kernel": label, "intensity": flops / counted_bytes, "memory_ms": memory_ms,
                     "compute_ms": compute_ms, "model_ms": model_ms, "measured_ms": float(row["median_ms"]),
                     "error": float(row["median_ms"]) / model_ms - 1})
    return pd.DataFrame(rows)


def naive_gemm_bytes_per_fma(table: pd.DataFrame, clocks_gbps: float, traced_n: int = 32) -> pd.DataFrame:
    """Bytes per FMA of the naive GEMM at four levels: the notes' count (two floats per FMA), the
    32-byte sectors its loads ask the L1 for (the simulator's traffic counter on a traced_n^3 GEMM:
    a warp's 32 lanes share A's element and read 32 neighbours of B), the most DRAM can have moved
    in the measured time at ``clocks_gbps`` (the bandwidth the memory clocks give: no copy's rate is
    an upper bound on DRAM), and the ideal (each input read once)."""
    row = table[table["variant"] == "gemm_naive"].iloc[-1]
    n, seconds = int(row["size"]), float(row["median_ms"]) / 1e3
    rng = np.random.default_rng(0)
    a = rng.standard_normal((traced_n, traced_n), dtype=np.float32)
    b = rng.standard_normal((traced_n, traced_n), dtype=np.float32)
    grid = (-(-traced_n // g.NAIVE_BLOCK[0]), -(-traced_n // g.NAIVE_BLOCK[1]))
    counts = trace(g.gemm_naive, grid, g.NAIVE_BLOCK, a, b, np.zeros((traced_n, traced_n), np.float32))
    sectors = counts.totals["l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum"]
    return pd.DataFrame([
        {"level": "the count: 2 floats per FMA", "bytes_per_fma": 8.0, "kind": "model"},
        {"level": "L1 requests (traced sectors)", "bytes_per_fma": 32 * sectors / traced_n**3,
         "kind": "traced"},
        {"level": "DRAM at most (time x the clocks' bandwidth)",
         "bytes_per_fma": clocks_gbps * 1e9 * seconds / n**3, "kind": "measured"},
        {"level": "ideal: each input once", "bytes_per_fma": 4 * 3 * n**2 / n**3, "kind": "model"},
    ])


L1_SECTORS = ("l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum",
              "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum")
L2_SECTORS = ("lts__t_sectors_srcunit_tex_op_read.sum", "lts__t_sectors_srcunit_tex_op_write.sum")
DRAM_BYTES = ("dram__bytes_read.sum", "dram__bytes_write.sum")


def traffic_levels(result: LessonResult, traced_n: int = 32) -> pd.DataFrame:
    """Bytes per unit of work (the triad: per element; naive GEMM: per FMA) at each level, for the two
    kernels Nsight Compute profiled: the notes' count, the simulator's L1 count (sectors the loads and
    stores ask for), and ncu's bytes asked of the L1 (sectors x 32), asked of the L2 by the L1 (sectors
    x 32) and moved by DRAM (read + write). Read and write bytes are also given apart."""
    evidence = result.evidence
    rows = []
    for case, kernel, count in ((NCU_TRIAD, "triad", 16.0), (NCU_GEMM, "gemm_naive", 8.0)):
        value = functools.partial(evidence.ncu_value, case)
        if kernel == "triad":
            units = TRIAD_ELEMENTS
            traced = _traced_triad_bytes_per_element()
        else:
            units = GEMM_N**3
            traced = _traced_gemm_bytes_per_fma(traced_n)
        levels = [("the count", count, None, None), ("L1, simulator", traced, None, None)]
        for level, (read, write), scale in (("L1, ncu", L1_SECTORS, 32), ("L2, ncu", L2_SECTORS, 32),
                                            ("DRAM, ncu", DRAM_BYTES, 1)):
            r, w = scale * value(read) / units, scale * value(write) / units
            levels.append((level, r + w, r, w))
        for level, total, read, write in levels:
            rows.append({"kernel": kernel, "level": level, "bytes": total, "read": read, "write": write,
                         "per": "element" if kernel == "triad" else "FMA"})
    return pd.DataFrame(rows)


def ncu_provenance(result: LessonResult) -> str:
    """The caption line for the counters: 'Nsight Compute on <GPU>, recorded <date>' (details: deep dive)."""
    source = result.evidence.source(result.evidence.ncu_case(NCU_TRIAD)["source"], result.meta)
    gpu, date = source.get("gpu") or result.meta["gpu"], str(source.get("date", "?"))[:10]
    return f"Nsight Compute on {gpu}, recorded {date}"


def _traced_triad_bytes_per_element(n: int = 1024) -> float:
    rng = np.random.default_rng(0)
    a, b, c = (rng.standard_normal(n, dtype=np.float32) for _ in range(3))
    counts = trace(k.triad, -(-n // k.THREADS_PER_BLOCK), k.THREADS_PER_BLOCK, a, b, c)
    return 32 * sum(counts.totals[m] for m in L1_SECTORS) / n


def _traced_gemm_bytes_per_fma(n: int) -> float:
    rng = np.random.default_rng(0)
    a, b = (rng.standard_normal((n, n), dtype=np.float32) for _ in range(2))
    grid = (-(-n // g.NAIVE_BLOCK[0]), -(-n // g.NAIVE_BLOCK[1]))
    counts = trace(g.gemm_naive, grid, g.NAIVE_BLOCK, a, b, np.zeros((n, n), np.float32))
    return 32 * counts.totals[L1_SECTORS[0]] / n**3  # the loads: the n^2 stores are 1/n of a float per FMA


def figures(result: LessonResult, roof: dict) -> dict:
    """Bandwidth against size beside the measured ceiling, and the roofline with the lesson's kernels."""
    table, provenance = result.table, result.provenance
    copies = table[table["variant"].str.contains("copy")]
    figs = {
        "bandwidth_vs_size": charts.bandwidth_vs_size(
            copies, ceiling_gbps=roof["bandwidth_gbps"],
            ceiling_label=f"measured ceiling ({roof['bandwidth_variant']})", provenance=provenance),
        "roofline": charts.roofline(roof["bandwidth_gbps"], roof["peak_gflops"],
                                    points=roofline_points(table), provenance=provenance),
    }
    if NCU_TRIAD in result.evidence.ncu and NCU_GEMM in result.evidence.ncu:
        figs["memory_levels"] = roofline_plots.memory_levels(traffic_levels(result),
                                                             provenance=ncu_provenance(result))
    return figs


# ---------------------------------------------------------------------------- Nsight Compute

NCU_METRICS = (
    "gpu__time_duration.sum",
    # bytes at three levels: what the loads and stores ask the L1 for, what the L1 asks the L2 for, and
    # what crosses DRAM (section 6: the triad's count holds at all three; naive GEMM's does not)
    "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum",
    "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum", "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum",
    "lts__t_sectors_srcunit_tex_op_read.sum", "lts__t_sectors_srcunit_tex_op_write.sum",
    "dram__bytes_read.sum", "dram__bytes_write.sum",
    "l1tex__t_sector_hit_rate.pct", "lts__t_sector_hit_rate.pct",
)
NCU_TRIAD = "triad"
NCU_GEMM = "gemm_naive 4096"


def ncu_cases(triad_elements: int = TRIAD_ELEMENTS, gemm_n: int = GEMM_N) -> list[ncu.Case]:
    """The triad and the naive GEMM at the recording's sizes, one launch each, for the bytes at L1, L2
    and DRAM. Inputs are copied from the host (ncu profiles no kernel but the cases'); each case
    checks its result. Smaller sizes run the same cases on the simulator."""
    rng = np.random.default_rng(0)
    made: dict = {}

    def triad_launch():
        made["triad"] = [rng.standard_normal(triad_elements, dtype=np.float32) for _ in range(3)]
        made["triad_dev"] = [cuda.to_device(v) for v in made["triad"]]
        k.triad_launch(*made["triad_dev"])

    def triad_right():
        a, b, c = made["triad"]
        return np.allclose(made["triad_dev"][2].copy_to_host(), a * b + c, rtol=1e-6, atol=1e-6)

    def gemm_launch():
        made["gemm"] = [rng.standard_normal((gemm_n, gemm_n), dtype=np.float32) for _ in range(2)]
        a, b = (cuda.to_device(v) for v in made["gemm"])
        made["c"] = cuda.to_device(np.full((gemm_n, gemm_n), np.nan, np.float32))
        g.gemm_naive_launch(a, b, made["c"])

    def gemm_right():
        a, b = made["gemm"]
        rows = min(8, gemm_n)
        reference = a[:rows].astype(np.float64) @ b.astype(np.float64)
        got = made["c"].copy_to_host()
        error = np.linalg.norm(got[:rows] - reference) / np.linalg.norm(reference)
        return not np.isnan(got).any() and error < 1e-5

    return [ncu.Case(NCU_TRIAD, "triad", triad_launch, check=triad_right),
            ncu.Case(NCU_GEMM, "gemm_naive", gemm_launch, check=gemm_right)]


# -------------------------------------------------------------------------------- checks


def check() -> pd.DataFrame:
    """Every kernel of the lesson against NumPy, on random inputs of awkward sizes."""
    rng = np.random.default_rng()
    rows = []
    for n in (1000, 1027):
        a, b, c = (rng.standard_normal(n, dtype=np.float32) for _ in range(3))
        got = k.triad_host(a, b, c)
        rows.append(check_row(f"triad n={n}", np.allclose(got, a * b + c, rtol=1e-6, atol=1e-6),
                              "c = a*b + c against NumPy"))
        for fmas in (1, 3, 8):
            got = k.fma_intensity_host(a, fmas)
            rows.append(check_row(f"fma_intensity k={fmas} n={n}",
                                  np.allclose(got, k.fma_chain_reference(a, fmas), rtol=1e-6, atol=1e-6),
                                  "k chained float32 FMAs against NumPy"))
    a = rng.standard_normal((45, 33), dtype=np.float32)
    b = rng.standard_normal((33, 70), dtype=np.float32)
    got = g.gemm(a, b)
    rows.append(check_row("gemm_naive 45x33 @ 33x70", np.allclose(got, a @ b, rtol=1e-4, atol=1e-4),
                          "against NumPy matmul"))
    return pd.DataFrame(rows)
