"""Which float4 copy shape reaches CuPy's copy? (run on a GPU; the answer chose ``copy_vec4``)

    python benchmarks/probe_copy.py

On the H200 (2026-11-29): one float4 per thread 4,259 GB/s, CuPy copy 4,228 GB/s; every
grid-stride shape (1, 2 or 4 float4 in flight per iteration; 256-1024 threads; 1-32 blocks per SM)
between 1,910 and 4,002 GB/s.
"""

import cupy as cp
import numpy as np
from numba import cuda

from gpu_lessons import bench, device_info
from gpu_lessons.kernels import roofline as r
from gpu_lessons.vector import load4, store4

N = 2**28  # 1 GiB per buffer


@cuda.jit
def copy_vec4_x2(x, out):
    """Grid-stride, two float4 loads in flight before the stores."""
    start, step = cuda.grid(1), cuda.gridsize(1)
    groups = x.size // 4
    i = start
    while i + step < groups:
        a0, a1, a2, a3 = load4(x, i)
        b0, b1, b2, b3 = load4(x, i + step)
        store4(out, i, a0, a1, a2, a3)
        store4(out, i + step, b0, b1, b2, b3)
        i += 2 * step
    if i < groups:
        a0, a1, a2, a3 = load4(x, i)
        store4(out, i, a0, a1, a2, a3)


def gbps(launch) -> float:
    return 8 * N / bench.measure(launch, runs=30).median_ms / 1e6


def main() -> None:
    sms = device_info().sms
    x = cuda.to_device(np.random.default_rng(0).standard_normal(N, dtype=np.float32))
    out = cuda.device_array(N, np.float32)
    cx, cout = cp.asarray(x), cp.empty(N, cp.float32)
    results = {"cupy copy": gbps(lambda _: cp.copyto(cout, cx)),
               "copy_vec4 (one float4 per thread)": gbps(lambda _: r.copy_launch("copy_vec4", x, out))}
    for kernel in (r.copy_vec4_grid_stride, copy_vec4_x2):
        for threads in (256, 512, 1024):
            for per_sm in (1, 2, 4, 8, 16, 32):
                if threads * per_sm <= 8192:
                    def launch(_, k=kernel, b=sms * per_sm, t=threads):
                        k[b, t](x, out)

                    results[f"{kernel.__name__} {threads} threads, {per_sm}/SM"] = gbps(launch)
    for name, value in sorted(results.items(), key=lambda item: -item[1]):
        print(f"{value:8.1f} GB/s  {value / results['cupy copy']:6.1%} of CuPy  {name}")


if __name__ == "__main__":
    main()
