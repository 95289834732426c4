"""Probe for lesson 5: how many 16-byte loads in flight per thread, at which grid size.

    python benchmarks/reduce_probe.py OUT [seconds]

Generates vec4-style kernels with U float4 loads in flight per thread (U = 1, 2, 4, 8; the lesson's
kernel is U = 4), times them at 2^28 and 2^24 elements for a few grid sizes beside cupy.sum, and
writes OUT/reduce_probe.csv. Stops starting new measurements after `seconds`.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

import gpu_lessons  # noqa: F401 - picks the mode before numba.cuda
from gpu_lessons import bench
from gpu_lessons.device import device_info
from gpu_lessons.kernels import reduce as k

TEMPLATE = '''
@cuda.jit
def probe(x, out):
    warp_sums = cuda.shared.array(32, float32)
    n = uint64(x.size)
    groups = n // uint64(4)
    threads = uint64(cuda.gridsize(1))
    t = uint64(cuda.grid(1))
    last = threads * uint64({last})
    step = threads * uint64({u})
    a0 = a1 = a2 = a3 = float32(0)
    g = t
    while g + last < groups:
{loads}
{adds}
        g += step
    while g < groups:
        p0, p1, p2, p3 = load4(x, g)
        a0 += p0
        a1 += p1
        a2 += p2
        a3 += p3
        g += threads
    tail = groups * uint64(4) + t
    if tail < n:
        a0 += x[tail]
    value = block_reduce_sum((a0 + a1) + (a2 + a3), warp_sums)
    if cuda.threadIdx.x == 0:
        cuda.atomic.add(out, 0, value)
'''


def make(u: int):
    loads = "\n".join(f"        v{j}0, v{j}1, v{j}2, v{j}3 = load4(x, g + threads * uint64({j}))"
                      for j in range(u))
    adds = "\n".join(f"        a{c} += " + " + ".join(f"v{j}{c}" for j in range(u)) for c in range(4))
    source = TEMPLATE.format(last=u - 1, u=u, loads=loads, adds=adds)
    namespace = {"cuda": k.cuda, "float32": k.float32, "uint64": k.uint64, "load4": k.load4,
                 "block_reduce_sum": k.block_reduce_sum}
    exec(source, namespace)  # noqa: S102 - our own template
    return namespace["probe"]


def main(out: Path, seconds: float) -> int:
    from numba import cuda

    start = time.perf_counter()
    sms = device_info().sms
    host = np.random.default_rng(1).random(2**28, dtype=np.float32)
    x = cuda.to_device(host)
    exact = {n: float(np.sum(host[:n], dtype=np.float64)) for n in (2**24, 2**28)}
    result = cuda.device_array(1, np.float32)
    rows = []
    try:
        import cupy as cp
        from cupy._core import _accelerator

        _accelerator.set_reduction_accelerators(["cub"])
    except ImportError:
        cp = None
    for n in (2**28, 2**24):
        xs = x[:n]
        if cp is not None:
            cx = cp.asarray(xs)
            timing = bench.measure(lambda _, cx=cx: cp.sum(cx))
            rows.append({"kernel": "cupy.sum", "u": 0, "bps": 0, "n": n, "ms": timing.median_ms})
        for u in (1, 2, 4, 8):
            kernel = make(u)
            for bps in (1, 2, 4, 8, 16):
                if time.perf_counter() - start > seconds:
                    break
                blocks = min(sms * bps, max(1, -(-n // (k.BLOCK * 4 * u))))

                def launch(_, kernel=kernel, blocks=blocks, xs=xs):
                    k.zero(result)
                    kernel[blocks, k.BLOCK](xs, result)

                timing = bench.measure(launch)
                got = float(result.copy_to_host()[0])
                rows.append({"kernel": f"vec4 U={u}", "u": u, "bps": bps, "n": n, "ms": timing.median_ms,
                             "rel_error": abs(got - exact[n]) / exact[n]})
    table = pd.DataFrame(rows)
    table["gbps"] = 4 * table["n"] / (table["ms"] * 1e6)
    out.mkdir(parents=True, exist_ok=True)
    table.to_csv(out / "reduce_probe.csv", index=False)
    print(table.pivot_table(index=["n", "u"], columns="bps", values="gbps").round(0).to_string())
    print(table[table["kernel"] == "cupy.sum"].to_string())
    return 0


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1]), float(sys.argv[2]) if len(sys.argv) > 2 else 30.0))
