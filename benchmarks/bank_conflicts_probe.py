"""Probe, on a GPU: the 8192x8192 transposes with other block shapes, beside cupy.copyto.

    GPU_LESSONS_MODE=gpu python benchmarks/bank_conflicts_probe.py

Prints GB/s and the fraction of cupy.copyto for each; for choosing the lesson's launch shapes.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("GPU_LESSONS_MODE", "gpu")

import cupy as cp  # noqa: E402
from numba import cuda  # noqa: E402

from gpu_lessons import bench  # noqa: E402
from gpu_lessons.kernels import bank_conflicts as k  # noqa: E402

N = 8192


def main() -> None:
    a_cp = cp.random.default_rng(1).random((N, N), dtype=cp.float32)
    out_cp = cp.empty((N, N), cp.float32)
    a, out = cuda.as_cuda_array(a_cp), cuda.as_cuda_array(out_cp)
    moved = 8 * N * N
    results = {}
    copied = cp.empty_like(a_cp)
    results["cupy copyto"] = bench.measure(lambda _: cp.copyto(copied, a_cp))
    expected = cp.ascontiguousarray(a_cp.T)
    for rows in (4, 8, 16, 32):  # the textbook loop: more rows of threads, fewer elements each
        out_cp.fill(cp.nan)
        results[f"tile32_padded_loop (32,{rows})"] = bench.measure(
            lambda _, r=rows: k.transpose_padded_loop_kernel[k.tiled_transpose_grid((N, N)), (32, r)](a, out))
        assert bool(cp.array_equal(out_cp, expected)), rows
    for name in k.TRANSPOSES:
        out_cp.fill(cp.nan)
        launch = k.transpose_launcher(name, a, out)
        results[name] = bench.measure(lambda _, go=launch: go())
        assert bool(cp.array_equal(out_cp, expected)), name
    base = moved / results["cupy copyto"].median_ms / 1e6
    for name, timing in results.items():
        gbps = moved / timing.median_ms / 1e6
        print(f"{name:<28} {timing.median_ms:8.4f} ms {gbps:8.0f} GB/s {gbps / base:6.3f} of copyto "
              f"(spread {timing.spread:.2f})")


if __name__ == "__main__":
    main()
