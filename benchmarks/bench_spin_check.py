"""Does bench.measure time the kernel, or Python's launch too? (run on a GPU)

    python benchmarks/bench_spin_check.py OUT

1. How long the spin kernel that precedes every timed launch really lasts: the old one
   (``cuda.nanosleep(200 us)``, which PTX only promises to last between 0 and 400 us) and the new
   one (waits on %globaltimer).
2. The same kernels timed three ways: old spin, new spin, and 20 launches back to back between two
   events (the GPU never waits for Python there), divided by 20.
Writes OUT/spin_check.json.
"""

import json
import sys
import time
from pathlib import Path

import cupy as cp
import numpy as np
from numba import cuda

import gpu_lessons  # noqa: F401
from gpu_lessons import bench
from gpu_lessons.kernels import gemm_codegen as cg
from gpu_lessons.kernels import littles_law as k

OUT = Path(sys.argv[1])
OUT.mkdir(parents=True, exist_ok=True)


@cuda.jit
def old_spin(ns):
    cuda.nanosleep(ns)


def spin_durations(kernel, runs=50):
    start, stop = cuda.event(), cuda.event()
    out = []
    for _ in range(runs):
        start.record()
        kernel[1, 1](bench.SPIN_NS)
        stop.record()
        stop.synchronize()
        out.append(cuda.event_elapsed_time(start, stop) * 1e3)
    return {"min_us": min(out), "median_us": float(np.median(out)), "max_us": max(out)}


def back_to_back(launch, runs=20, repeats=7):
    for _ in range(3):
        launch()
    cuda.synchronize()
    start, stop = cuda.event(), cuda.event()
    samples = []
    for _ in range(repeats):
        start.record()
        for _ in range(runs):
            launch()
        stop.record()
        stop.synchronize()
        samples.append(cuda.event_elapsed_time(start, stop) / runs)
    return float(np.median(samples))


def host_us(launch, runs=50):
    cuda.synchronize()
    t = time.perf_counter()
    for _ in range(runs):
        launch()
    elapsed = (time.perf_counter() - t) / runs * 1e6
    cuda.synchronize()
    return elapsed


result = {"spin": {"old nanosleep": spin_durations(old_spin), "new globaltimer": spin_durations(bench._spin)}}
print(result, flush=True)
rng = cp.random.default_rng(0)
a, b = (rng.standard_normal((2048, 2048), dtype=cp.float32) for _ in range(2))
c = cp.empty((2048, 2048), cp.float32)
da, db, dc = (cuda.as_cuda_array(v) for v in (a, b, c))
x = cuda.to_device(np.random.default_rng(1).standard_normal(2**28, dtype=np.float32))
out = cuda.device_array(2**28, np.float32)
cx, cout = cp.asarray(x), cp.asarray(out)
big, cap = cg.Tile(bn=256, tn=16, max_registers=None), cg.Tile()
launches = {
    "cublas 2048": lambda: cp.matmul(a, b, out=c),
    "gemm 128x256 8x16 2048": lambda: cg.launch(big, da, db, dc),
    "gemm register_cap 2048": lambda: cg.launch(cap, da, db, dc),
    "cupy copyto 1 GiB": lambda: cp.copyto(cout, cx),
    "copy w16 u32 b256 1 GiB": lambda: k.copy_ilp_launch(32, True, x, out, 256, 0),
    "copy w16 u8 b256 1 GiB": lambda: k.copy_ilp_launch(8, True, x, out, 256, 0),
}
new_spin = bench._spin
rows = {}
for name, launch in launches.items():
    row = {"host_launch_us": host_us(launch)}
    bench._spin = old_spin
    t = bench.measure(lambda _, f=launch: f(), runs=40)
    row["old_spin"] = [t.median_ms, t.min_ms, t.max_ms]
    bench._spin = new_spin
    t = bench.measure(lambda _, f=launch: f(), runs=40)
    row["new_spin"] = [t.median_ms, t.min_ms, t.max_ms]
    row["back_to_back_ms"] = back_to_back(launch)
    rows[name] = row
    print(f"{name:28s} host {row['host_launch_us']:6.1f} us | old {row['old_spin'][0]:.4f} "
          f"[{row['old_spin'][1]:.4f}, {row['old_spin'][2]:.4f}] | new {row['new_spin'][0]:.4f} "
          f"[{row['new_spin'][1]:.4f}, {row['new_spin'][2]:.4f}] | back-to-back {row['back_to_back_ms']:.4f}",
          flush=True)
result["timings_ms"] = rows
(OUT / "spin_check.json").write_text(json.dumps(result, indent=1))
