"""Exploration: which float4 copy shape reaches CuPy's copy on this GPU (device probe)."""
import re
import numpy as np
from gpu_lessons import bench, device_info
from gpu_lessons.vector import load4, store4
from gpu_lessons.kernels import roofline as r
from numba import cuda
import cupy as cp

info = device_info()
n = 2**28
rng = np.random.default_rng(0)
x = cuda.to_device(rng.standard_normal(n, dtype=np.float32))
out = cuda.device_array(n, np.float32)

@cuda.jit
def copy_vec4_x2(x, out):
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

@cuda.jit
def copy_vec4_x4(x, out):
    start, step = cuda.grid(1), cuda.gridsize(1)
    groups = x.size // 4
    i = start
    while i + 3 * step < groups:
        a0, a1, a2, a3 = load4(x, i)
        b0, b1, b2, b3 = load4(x, i + step)
        c0, c1, c2, c3 = load4(x, i + 2 * step)
        d0, d1, d2, d3 = load4(x, i + 3 * step)
        store4(out, i, a0, a1, a2, a3)
        store4(out, i + step, b0, b1, b2, b3)
        store4(out, i + 2 * step, c0, c1, c2, c3)
        store4(out, i + 3 * step, d0, d1, d2, d3)
        i += 4 * step
    while i < groups:
        a0, a1, a2, a3 = load4(x, i)
        store4(out, i, a0, a1, a2, a3)
        i += step

@cuda.jit
def copy_vec4_once(x, out):
    i = cuda.grid(1)
    if i < x.size // 4:
        a0, a1, a2, a3 = load4(x, i)
        store4(out, i, a0, a1, a2, a3)

cx = cp.asarray(x); cout = cp.empty_like(cx)
def t(name, launch):
    tm = bench.measure(launch, runs=30)
    gb = 8 * n / tm.median_ms / 1e6
    print(f"{name:34s} {tm.median_ms:8.4f} ms {gb:8.1f} GB/s spread {tm.spread:.3f}", flush=True)
    return gb
ref = t("cupy", lambda k: cp.copyto(cout, cx))
g = n // 4
res = {}
res["once 256"] = t("vec4 one per thread 256", lambda k: copy_vec4_once[-(-g // 256), 256](x, out))
res["once 512"] = t("vec4 one per thread 512", lambda k: copy_vec4_once[-(-g // 512), 512](x, out))
for kern, nm in ((r.copy_vec4, "x1"), (copy_vec4_x2, "x2"), (copy_vec4_x4, "x4")):
    for tpb in (256, 512, 1024):
        for bps in (1, 2, 4, 8, 16, 32):
            if tpb * bps > 2048 * 4: continue
            blocks = info.sms * bps
            res[f"{nm} {tpb} {bps}"] = t(f"{nm} tpb={tpb} blocks/SM={bps}", lambda k: kern[blocks, tpb](x, out))
ref2 = t("cupy again", lambda k: cp.copyto(cout, cx))
best = max(res, key=res.get)
print("BEST", best, res[best], "ratio", res[best] / max(ref, ref2))
for kern in (r.copy_vec4, copy_vec4_x2):
    sass = list(kern.inspect_sass().values())[0]
    print({op: len(re.findall(re.escape(op), sass)) for op in ("LDG.E.128", "STG.E.128", "LDG.E.64", "LDG.E", "STG.E")})
r.fma_peak_launch(cuda.device_array(132 * 256, np.float32), 132, 10)
sass = list(r.fma_peak.inspect_sass().values())[0]
print("fma_peak", {op: len(re.findall(op, sass)) for op in ("FFMA", "FMUL", "FADD", "BRA", "LDL")})
peak = info.peak_fp32_gflops
for bps, tpb in ((8, 256), (16, 128), (4, 256), (2, 512), (1, 1024), (12, 256)):
    blocks = info.sms * bps
    o = cuda.device_array(blocks * 256, np.float32)
    tm = bench.measure(lambda k: r.fma_peak[blocks, tpb](o, np.int32(4000), r.FMA_A, r.FMA_B), runs=15)
    fl = 2 * blocks * tpb * 4000 * 16 * 8
    print(f"fma_peak {bps}x{tpb}: {fl / tm.median_ms / 1e9:.0f} GFLOP/s = {fl / tm.median_ms / 1e9 / peak * 100:.1f}% of {peak:.0f}", flush=True)
