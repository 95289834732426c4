"""First look on a GPU: SASS of the ceiling kernels and their speed against CuPy (device probe)."""

import json
import os
import re
import subprocess
import sys

import numpy as np

import gpu_lessons
from gpu_lessons import bench
from gpu_lessons.kernels import roofline as r

from numba import cuda
import cupy as cp

out_dir = sys.argv[1] if len(sys.argv) > 1 else "."
print(gpu_lessons.describe())
info = gpu_lessons.device_info()
report = {"device": info.as_dict()}

try:
    import pynvml
    pynvml.nvmlInit()
    h = pynvml.nvmlDeviceGetHandleByIndex(0)
    report["nvml"] = {
        "sm_clock_now": pynvml.nvmlDeviceGetClockInfo(h, pynvml.NVML_CLOCK_SM),
        "sm_clock_max": pynvml.nvmlDeviceGetMaxClockInfo(h, pynvml.NVML_CLOCK_SM),
        "mem_clock_max": pynvml.nvmlDeviceGetMaxClockInfo(h, pynvml.NVML_CLOCK_MEM),
        "driver": pynvml.nvmlSystemGetDriverVersion(),
    }
except Exception as e:  # noqa
    report["nvml"] = repr(e)
print(report["nvml"])

rng = np.random.default_rng(0)
n = 2**28  # 1 GiB of float32
x = cuda.to_device(rng.standard_normal(n, dtype=np.float32))
out = cuda.device_array(n, np.float32)

def sass_summary(kernel, sig_args):
    kernel(*sig_args) if False else None
    sass = list(kernel.inspect_sass().values())[0] if hasattr(kernel, "inspect_sass") else ""
    ops = {}
    for op in ("LDG.E.128", "STG.E.128", "LDG.E.64", "LDG.E ", "STG.E ", "FFMA", "FMUL", "FADD", "BRA", "LDL", "STL"):
        ops[op.strip()] = len(re.findall(re.escape(op), sass))
    return ops

rows = []
def timeit(name, launch, nbytes, flops, sets=1):
    t = bench.measure(launch, input_sets=sets)
    thr = bench.throughput(nbytes, flops, t)
    rows.append((name, t.median_ms, t.spread, thr["gbps"], thr["gflops"]))
    print(f"{name:32s} {t.median_ms:9.4f} ms  spread {t.spread:5.3f}  {thr['gbps']:8.1f} GB/s  {thr['gflops']:9.1f} GFLOP/s", flush=True)

for v in r.COPY_VARIANTS:
    timeit(v, lambda k, v=v: r.copy_launch(v, x, out), 8 * n, 0)
    assert np.array_equal(out.copy_to_host()[:1000], x.copy_to_host()[:1000])
cx = cp.asarray(x); cout = cp.empty_like(cx)
timeit("cupy copyto", lambda k: cp.copyto(cout, cx), 8 * n, 0)
timeit("copy_vec4 again", lambda k: r.copy_launch("copy_vec4", x, out), 8 * n, 0)
timeit("cupy copyto again", lambda k: cp.copyto(cout, cx), 8 * n, 0)

report["sass"] = {
    "copy_vec4": sass_summary(r.copy_vec4, None),
    "copy_grid_stride": sass_summary(r.copy_grid_stride, None),
    "fma_peak": sass_summary(r.fma_peak, None),
}
for k in (1, 4, 16, 64, 256):
    f = r.fma_intensity(k)
    r.fma_intensity_launch(k, x, out)
    report["sass"][f"fma_intensity_{k}"] = sass_summary(f, None)
print(json.dumps(report["sass"], indent=1))

peak = info.peak_fp32_gflops
for blocks_per_sm, trips in ((8, 2000), (16, 2000), (4, 4000)):
    blocks = info.sms * blocks_per_sm
    o = cuda.device_array(blocks * 256, np.float32)
    timeit(f"fma_peak {blocks_per_sm}/SM", lambda k: r.fma_peak_launch(o, blocks, trips), 0, r.fma_peak_flops(blocks, trips))
    print(f"   {rows[-1][4] / peak * 100:.1f}% of {peak:.0f}")
try:
    report["nvml"]["sm_clock_after_fma"] = pynvml.nvmlDeviceGetClockInfo(h, pynvml.NVML_CLOCK_SM)
except Exception:
    pass

for k in (1, 2, 4, 8, 16, 32, 64, 128, 256, 512):
    timeit(f"fma_intensity k={k}", lambda kk, k=k: r.fma_intensity_launch(k, x, out), 8 * n, 2 * k * n)
a = cuda.to_device(rng.standard_normal(n // 2, dtype=np.float32))
b = cuda.to_device(rng.standard_normal(n // 2, dtype=np.float32))
c = cuda.to_device(rng.standard_normal(n // 2, dtype=np.float32))
timeit("triad", lambda k: r.triad_launch(a, b, c), 16 * (n // 2), 2 * (n // 2))
for N in (4096, 8192):
    A = cp.asarray(rng.standard_normal((N, N), dtype=np.float32)); B = cp.asarray(rng.standard_normal((N, N), dtype=np.float32))
    timeit(f"cupy sgemm {N}", lambda k: cp.matmul(A, B), 12 * N * N, 2 * N**3)
report["rows"] = rows
print(report.get("nvml"))
try:
    print(subprocess.run(["ncu", "--version"], capture_output=True, text=True).stdout)
except Exception as e:
    print("ncu:", e)
json.dump(report, open(os.path.join(out_dir, "probe.json"), "w"), indent=1, default=str)
