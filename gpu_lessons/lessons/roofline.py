"""Lesson 1: the roofline. P <= min(P_peak, BW x I); the ridge point I* = P_peak / BW.

The experiment: copy kernels across sizes (bandwidth against size, the L2 visible at small sizes),
the notes' triad ``c = a * b + c`` (I = 0.125), a kernel family whose intensity is a parameter
(k FMAs per element: I = k / 4) swept across the ridge point, and naive GEMM against cuBLAS.
"""

from __future__ import annotations

import sys

import numpy as np
import pandas as pd

from ..kernels import gemm as g
from ..kernels import roofline as k
from ..scoreboard import Comparison
from .common import check_row, progress, timed_row

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


def measure(show_progress: bool = True) -> pd.DataFrame:
    """Run the whole sweep on the GPU; returns the tidy table (checked: see each step)."""
    from numba import cuda

    from ..bench import input_sets_needed
    from ..device import device_info
    from ..kernels.util import poison
    from ..results import make_table

    rng = np.random.default_rng(2026)
    l2_bytes = int(device_info().l2_mib * 2**20)
    rows = []

    def random(n):
        return rng.standard_normal(n, dtype=np.float32)

    steps = [("bandwidth", n) for n in BANDWIDTH_SIZES] + [("triad", TRIAD_ELEMENTS)]
    steps += [("intensity", kk) for kk in INTENSITY_KS] + [("gemm", GEMM_N)]
    x_big = cuda.to_device(random(INTENSITY_ELEMENTS))
    y_big = cuda.device_array(INTENSITY_ELEMENTS, np.float32)
    for step, value in progress(steps, NAME) if show_progress else steps:
        if step == "bandwidth":
            n = value
            sets = input_sets_needed(8 * n, l2_bytes)
            xs = [cuda.to_device(random(n)) for _ in range(sets)]
            outs = [cuda.device_array(n, np.float32) for _ in range(sets)]
            for variant in k.COPY_VARIANTS:
                for out in outs:
                    poison(out)
                def launch(s, v=variant, xs=xs, outs=outs):
                    k.copy_launch(v, xs[s], outs[s])

                rows.append(timed_row(NAME, variant, launch, size=n, bytes_moved=8 * n, flops=0,
                                      input_sets=sets))
                pairs = zip(outs, xs, strict=True)
                if not all(np.array_equal(o.copy_to_host(), xi.copy_to_host()) for o, xi in pairs):
                    raise AssertionError(f"{variant} at n={n} did not copy exactly")
            rows.extend(_cupy_copy(xs, n, sets))
        elif step == "triad":
            rows.extend(_triad_rows(random, value))
        elif step == "intensity":
            poison(y_big)
            def launch_fma(_, kk=value):
                k.fma_intensity_launch(kk, x_big, y_big)

            rows.append(timed_row(NAME, "fma_intensity", launch_fma, size=INTENSITY_ELEMENTS, param=value,
                                  bytes_moved=8 * INTENSITY_ELEMENTS, flops=2 * value * INTENSITY_ELEMENTS))
            _check_fma_sample(rng, x_big, y_big, value)
        else:
            rows.extend(_gemm_rows(rng, value))
    return make_table(rows)


def _cupy_copy(xs, n, sets):
    try:
        import cupy as cp
    except ImportError:
        return []
    src = [cp.asarray(x) for x in xs]
    dst = [cp.full_like(s, cp.nan) for s in src]
    row = timed_row(NAME, "cupy copy", lambda s: cp.copyto(dst[s], src[s]), provider="cupy",
                    size=n, bytes_moved=8 * n, flops=0, input_sets=sets)
    if not all(bool(cp.array_equal(d, s)) for d, s in zip(dst, src, strict=True)):
        raise AssertionError("CuPy copy mismatch")
    return [row]


def _triad_rows(random, n):
    from numba import cuda

    a_host, b_host, c_host = random(n), random(n), random(n)
    a, b = cuda.to_device(a_host), cuda.to_device(b_host)
    c = cuda.to_device(c_host)
    # Each timed run updates c in place (c += a*b): run once, check, then time from a fresh c.
    k.triad_launch(a, b, c)
    if not np.allclose(c.copy_to_host(), a_host * b_host + c_host, rtol=1e-6, atol=1e-6):
        raise AssertionError("triad result differs from NumPy")
    rows = [timed_row(NAME, "triad", lambda _: k.triad_launch(a, b, c), size=n,
                      bytes_moved=16 * n, flops=2 * n)]
    try:
        import cupy as cp
    except ImportError:
        return rows
    ca, cb, cc = cp.asarray(a_host), cp.asarray(b_host), cp.asarray(c_host)

    def cupy_triad(_):
        cc[...] += ca * cb  # what a CuPy user writes: two kernels and a temporary

    rows.append(timed_row(NAME, "cupy c += a * b", cupy_triad, provider="cupy", size=n,
                          bytes_moved=16 * n, flops=2 * n))
    return rows


def _check_fma_sample(rng, x, y, fmas):
    sample = rng.choice(x.size, 4096, replace=False)
    got = y.copy_to_host()
    if np.isnan(got).any():
        raise AssertionError(f"fma_intensity k={fmas} left poisoned outputs")
    expected = k.fma_chain_reference(x.copy_to_host()[sample], fmas)
    if not np.allclose(got[sample], expected, rtol=1e-6, atol=1e-6):
        raise AssertionError(f"fma_intensity k={fmas} differs from the FMA reference")


def _gemm_rows(rng, n):
    from numba import cuda

    from ..kernels.util import poison

    a_host = rng.standard_normal((n, n), dtype=np.float32)
    b_host = rng.standard_normal((n, n), dtype=np.float32)
    a, b = cuda.to_device(a_host), cuda.to_device(b_host)
    c = cuda.device_array((n, n), np.float32)
    poison(c)
    rows = [timed_row(NAME, "gemm_naive", lambda _: g.gemm_naive_launch(a, b, c), size=n,
                      bytes_moved=12 * n * n, flops=g.gemm_flops(n, n, n))]
    reference = a_host[:8].astype(np.float64) @ b_host.astype(np.float64)
    error = np.linalg.norm(c.copy_to_host()[:8] - reference) / np.linalg.norm(reference)
    if not error < 1e-5:
        raise AssertionError(f"gemm_naive relative error {error:.1e}")
    try:
        import cupy as cp
    except ImportError:
        return rows
    ca, cb = cp.asarray(a_host), cp.asarray(b_host)
    cc = cp.empty((n, n), cp.float32)
    rows.append(timed_row(NAME, "cublas sgemm", lambda _: cp.matmul(ca, cb, out=cc), provider="cublas",
                          size=n, bytes_moved=12 * n * n, flops=g.gemm_flops(n, n, n)))
    return rows


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


def figures(table: pd.DataFrame, ceilings: dict, provenance: str, datasheet: dict | None = None) -> dict:
    from .. import plots

    copies = table[table["variant"].str.contains("copy")]
    return {
        "bandwidth_vs_size": plots.bandwidth_vs_size(
            copies, ceiling_gbps=ceilings["bandwidth_gbps"],
            ceiling_label=f"measured ceiling ({ceilings['bandwidth_variant']})", provenance=provenance),
        "roofline": plots.roofline(ceilings["bandwidth_gbps"], ceilings["peak_gflops"],
                                   points=roofline_points(table), datasheet=datasheet,
                                   provenance=provenance),
    }


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


def load(live: bool | None = None, gpu: str | None = None):
    """This lesson's table: measured now on a GPU, else the reference recording (see common.load)."""
    from . import common

    return common.load(sys.modules[__name__], live=live, gpu=gpu)
