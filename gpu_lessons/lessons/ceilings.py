"""Measured ceilings: the best device-memory bandwidth and FP32 rate our numba kernels reach.

Every roofline in the course is drawn from these figures, never from a datasheet alone. In the
same run, what a user would compare with: CuPy's device-to-device copy and cuBLAS SGEMM (through
CuPy, TF32 off). The theoretical FP32 peak (SMs x 128 lanes x 2 FLOP x max SM clock) is kept in
the recording's metadata, as a reference line, not as a measurement.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from numba import cuda

from ..device import device_info
from ..kernels import roofline as k
from ..kernels.launch import blocks_per_sm
from ..kernels.util import poison
from ..scoreboard import Comparison
from .runner import Run, Section, check_row, cupy_or_none

NAME = "ceilings"
TITLE = "Measured ceilings: memory bandwidth and FP32 FMA rate"
NOTEBOOK = "01_roofline.ipynb"
SUMMARY = "copy and FMA kernels that define the roof; CuPy copy and cuBLAS SGEMM beside them"

COPY_ELEMENTS = 2**28  # 1 GiB per buffer: 2 GiB moved, 36x the H200's 60 MiB L2
FMA_TRIPS = 4000
SGEMM_N = 8192

BANDWIDTH_VARIANT = "copy_vec4"
COMPUTE_VARIANT = "fma_peak"

COMPARISONS = [
    Comparison(title="memory bandwidth (copy)", lesson=NAME, metric="gbps",
               ours=list(k.COPY_VARIANTS), reference="cupy copy"),
    Comparison(title="FP32 FMA rate vs theoretical peak", lesson=NAME, metric="gflops",
               ours=[COMPUTE_VARIANT], reference="theory:peak_fp32_gflops"),
    Comparison(title="FP32 FMA rate vs SGEMM", lesson=NAME, metric="gflops", ours=[COMPUTE_VARIANT],
               reference="cublas sgemm"),
]


def fma_peak_reference(threads: np.ndarray, trips: int) -> np.ndarray:
    """What fma_peak writes for the given thread indices (float32 FMA emulated in float64)."""
    a, b = np.float64(k.FMA_A), np.float64(k.FMA_B)
    chains = [(threads + c).astype(np.float32) for c in range(k.FMA_PEAK_CHAINS)]
    for _ in range(trips * k.FMA_PEAK_UNROLL):
        chains = [(x.astype(np.float64) * a + b).astype(np.float32) for x in chains]
    x = chains
    return ((x[0] + x[1]) + (x[2] + x[3])) + ((x[4] + x[5]) + (x[6] + x[7]))


# ----------------------------------------------------------------------------- experiment


def _copy_buffers(run: Run):
    """1 GiB of random floats and an output of the same size, shared by the copies."""
    x_host = run.rng.standard_normal(COPY_ELEMENTS, dtype=np.float32)
    return x_host, cuda.to_device(x_host), cuda.device_array(COPY_ELEMENTS, np.float32)


def _copies(run: Run) -> None:
    x_host, x, out = run.shared("copy", lambda: _copy_buffers(run))
    for variant in k.COPY_VARIANTS:
        poison(out)
        run.time(variant, lambda _, v=variant: k.copy_launch(v, x, out), size=COPY_ELEMENTS,
                 bytes_moved=8 * COPY_ELEMENTS, flops=0)
        if not np.array_equal(out.copy_to_host(), x_host):
            raise AssertionError(f"{variant} did not copy its input exactly")


def _cupy_copy(run: Run) -> None:
    cp = cupy_or_none()
    if cp is None:
        return
    _x_host, x, _out = run.shared("copy", lambda: _copy_buffers(run))
    src = cp.asarray(x)
    dst = cp.full_like(src, cp.nan)
    run.time("cupy copy", lambda _: cp.copyto(dst, src), provider="cupy", size=src.size,
             bytes_moved=8 * src.size, flops=0)
    if not bool(cp.array_equal(dst, src)):
        raise AssertionError("CuPy copy mismatch")


def _fma_peak(run: Run) -> None:
    blocks = device_info().sms * blocks_per_sm(k.THREADS_PER_BLOCK)  # one full wave on this GPU
    result = cuda.device_array(blocks * k.THREADS_PER_BLOCK, np.float32)
    poison(result)
    run.time(COMPUTE_VARIANT, lambda _: k.fma_peak_launch(result, blocks, FMA_TRIPS),
             size=blocks * k.THREADS_PER_BLOCK, bytes_moved=0, flops=k.fma_peak_flops(blocks, FMA_TRIPS))
    sample = run.rng.choice(result.size, 16, replace=False)
    if not np.array_equal(result.copy_to_host()[sample], fma_peak_reference(sample, FMA_TRIPS)):
        raise AssertionError("fma_peak results differ from the float32 FMA reference")


def _cublas_sgemm(run: Run) -> None:
    cp = cupy_or_none()
    if cp is None:
        return
    rng = cp.random.default_rng(7)
    a = rng.standard_normal((SGEMM_N, SGEMM_N), dtype=cp.float32)
    b = rng.standard_normal((SGEMM_N, SGEMM_N), dtype=cp.float32)
    c = cp.full((SGEMM_N, SGEMM_N), cp.nan, dtype=cp.float32)
    run.time("cublas sgemm", lambda _: cp.matmul(a, b, out=c), provider="cublas", size=SGEMM_N,
             bytes_moved=12 * SGEMM_N**2, flops=2 * SGEMM_N**3)
    probe = cp.asnumpy(a[:4].astype(cp.float64) @ b.astype(cp.float64))
    error = np.linalg.norm(cp.asnumpy(c[:4]) - probe) / np.linalg.norm(probe)
    if not error < 1e-5:  # TF32 would land near 3e-4: this also proves TF32 was off
        raise AssertionError(f"cuBLAS SGEMM relative error {error:.1e}: TF32 on, or wrong result")


SECTIONS = (
    Section("copies", _copies),
    Section("cupy copy", _cupy_copy),
    Section("fma peak", _fma_peak),
    Section("cublas sgemm", _cublas_sgemm),
)


# ------------------------------------------------------------------------------ the roof


def ceilings_from(table: pd.DataFrame) -> dict:
    """The roof: best bandwidth of our copy kernels, and our FMA kernel's rate."""
    ours = table[table["provider"] == "gpu_lessons"]
    copies = ours[ours["variant"].str.startswith("copy")]
    best_copy = copies.loc[copies["gbps"].idxmax()]
    fma = ours[ours["variant"] == COMPUTE_VARIANT].iloc[0]
    return {
        "bandwidth_gbps": float(best_copy["gbps"]), "bandwidth_variant": best_copy["variant"],
        "peak_gflops": float(fma["gflops"]), "peak_variant": COMPUTE_VARIANT,
    }


WHAT = {"copy_one_per_thread": "copy, one float per thread", "copy_grid_stride": "copy, grid-stride loop",
        "copy_vec4_grid_stride": "copy, float4, grid-stride loop", "copy_vec4": "copy, one float4 per thread",
        "cupy copy": "CuPy's device copy", COMPUTE_VARIANT: "8 FMA chains per thread, registers only",
        "cublas sgemm": "cuBLAS SGEMM 8192^3 (FP32)"}


def summary(table: pd.DataFrame) -> pd.DataFrame:
    """One line per kernel: what it does, its rate (GB/s for copies, GFLOP/s for arithmetic)."""
    rows = []
    for _, row in table.iterrows():
        copy = "copy" in row["variant"]
        rate, unit = (row["gbps"], "GB/s") if copy else (row["gflops"], "GFLOP/s")
        rows.append({"kernel": row["variant"], "what it does": WHAT.get(row["variant"], ""),
                     "rate": round(rate), "unit": unit})
    return pd.DataFrame(rows).set_index("kernel")


def figures(result, roof: dict) -> dict:
    """The ceilings are drawn in lesson 1's figures; this experiment has none of its own."""
    return {}


def check() -> pd.DataFrame:
    """The ceiling kernels against NumPy on small awkward sizes (both modes)."""
    rng = np.random.default_rng()
    rows = []
    for n in (1, 7, 1000, 1027):
        x = rng.standard_normal(n, dtype=np.float32)
        for variant in k.COPY_VARIANTS:
            same = np.array_equal(k.copy(x, variant), x)
            rows.append(check_row(f"{variant} n={n}", same, "bit-exact copy"))
    blocks, trips = 2, 1
    result = np.full(blocks * k.THREADS_PER_BLOCK, np.nan, np.float32)
    k.fma_peak_launch(result, blocks, trips)
    expected = fma_peak_reference(np.arange(result.size), trips)
    rows.append(check_row("fma_peak 2 blocks", np.array_equal(result, expected),
                          "matches float32 FMA chains emulated in NumPy"))
    return pd.DataFrame(rows)
