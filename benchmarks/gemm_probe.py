"""Probe for lesson 6 on the GPU: check, time and inspect the GEMM candidates in one run.

python benchmarks/gemm_probe.py OUT [DEADLINE_S]
  -> OUT/summary.csv (every timing, error, fraction of cuBLAS), OUT/resources.json (registers,
     shared, local memory, SASS summary per kernel), OUT/sass/<kernel>.sass.gz
Work is done in order of importance and stops starting new kernels past the deadline.
"""
import gzip
import json
import sys
import time
from pathlib import Path

import cupy as cp
import numpy as np
import pandas as pd
from numba import cuda

import gpu_lessons  # noqa: F401  (chooses the mode before numba.cuda)
from gpu_lessons import bench
from gpu_lessons import sass as sass_tools
from gpu_lessons.kernels import gemm as g
from gpu_lessons.kernels import gemm_codegen as cg
from gpu_lessons.kernels import gemm_register as gr
from gpu_lessons.kernels import gemm_tiled as gt
from gpu_lessons.kernels.util import poison

OUT = Path(sys.argv[1])
DEADLINE = float(sys.argv[2]) if len(sys.argv) > 2 else 100.0
(OUT / "sass").mkdir(parents=True, exist_ok=True)
T0 = time.time()
rng = np.random.default_rng(6)
UNIT = 2.0 ** -24

T = cg.Tile
GEN = {
    "vec_rolled": T(unroll=False, lanes_m=0, pad=0, double_buffer=False, max_registers=None),
    "vec_unrolled": T(lanes_m=0, pad=0, double_buffer=False, max_registers=None),
    "conflict_free": T(double_buffer=False, max_registers=None),
    "double_buffer": T(max_registers=None),
    "register_cap": T(),
    "launch_bounds": T(max_registers=None, min_blocks=2),
    "warp_tile": T(lanes_m=4),
    "scalar_cap_single": T(double_buffer=False).scalar(),
    "scalar_cap_db": T().scalar(),
    "scalar_nocap_db": T(max_registers=None).scalar(),
    "tune_128x128x16": T(bk=16),
    "tune_128x64x8_8x4": T(bn=64, tn=4),
    "tune_64x64x8_4x4": T(bm=64, bn=64, tm=4, tn=4),
    "tune_64x128x8_4x8": T(bm=64, tm=4),
    "tune_128x128x16_warp": T(bk=16, lanes_m=4),
    "grouped_8": T(group_m=8),
    "tune_32x32x8_4x4": T(bm=32, bn=32, tm=4, tn=4, lanes_m=4),
}
SLOW = ["naive_uncoalesced", "naive", "tiled16"]
MID = ["register_1d", "register_2d", "register_2d_uint64"]
# what each kernel is timed at (cuBLAS at all of them first)
PLAN = [(n, ["2048", "1024"]) for n in SLOW] + [(n, ["4096", "2048", "awkward"]) for n in MID]
PLAN += [(n, ["4096", "2048"]) for n in ("vec_rolled", "vec_unrolled", "conflict_free", "double_buffer")]
PLAN += [("register_cap", ["4096", "2048", "8192", "tall", "128", "1024"]),
         ("grouped_8", ["4096", "2048", "8192"]),
         ("scalar_cap_single", ["awkward", "4096"]), ("scalar_cap_db", ["awkward", "4096"]),
         ("launch_bounds", ["4096", "2048"]), ("warp_tile", ["4096", "2048", "8192"]),
         ("scalar_nocap_db", ["awkward"])]
PLAN += [(n, ["4096", "2048", "tall", "128"]) for n in GEN if n.startswith("tune")]
PLAN = [(n, ["128", "1024", "tall"]) if n == "tune_32x32x8_4x4" else (n, s) for n, s in PLAN]

# Round 4 (issue 11): bigger micro-tiles (8 x 16: 128 outputs a thread, one block of 8 warps per
# SM, as CUTLASS's SIMT SGEMM), 16-deep k-tiles with the grouped order, launch bounds.
GEN.update({
    "big_128x256_8x16": T(bn=256, tn=16, max_registers=None),
    "big_128x256_8x16_g8": T(bn=256, tn=16, max_registers=None, group_m=8),
    "big_256x128_16x8": T(bm=256, tm=16, max_registers=None),
    "big_128x256_8x16_split": T(bn=256, tn=16, max_registers=None, split_prefetch=True),
    "big_128x256_8x16_w4": T(bn=256, tn=16, lanes_m=4, max_registers=None),
    "tune_128x128x16_g8": T(bk=16, group_m=8),
    "tune_128x128x16_lb2": T(bk=16, max_registers=None, min_blocks=2),
    "tune_128x128x16_split_g8": T(bk=16, split_prefetch=True, group_m=8),
})
GEN.update({
    "big_128x256_8x16_p0": T(bn=256, tn=16, max_registers=None, pad=0),
    "big_128x256x16_8x16_p0": T(bn=256, tn=16, bk=16, max_registers=None, pad=0),
})
if len(sys.argv) > 3 and sys.argv[3] == "round5":
    PLAN = [(n, ["4096", "2048"])
            for n in ("big_128x256_8x16", "big_128x256_8x16_p0", "big_128x256x16_8x16_p0")]
if len(sys.argv) > 3 and sys.argv[3] == "round4":
    PLAN = [("register_cap", ["4096", "2048"]), ("grouped_8", ["4096", "2048"])]
    PLAN += [(n, ["4096", "2048", "1024"]) for n in GEN if n.startswith(("big", "tune_128x128x16_"))]
    PLAN += [(n, ["8192", "awkward"])
             for n in ("big_128x256_8x16", "big_128x256_8x16_g8", "tune_128x128x16_g8")]

SHAPES = {"4096": (4096, 4096, 4096), "2048": (2048, 2048, 2048), "awkward": (4095, 4097, 1023),
          "8192": (8192, 8192, 8192), "tall": (16384, 64, 4096), "128": (128, 128, 128),
          "1024": (1024, 1024, 1024)}


def launcher(name):
    if name == "naive_uncoalesced":
        return g.gemm_naive_uncoalesced_launch, g.gemm_naive_uncoalesced
    if name == "naive":
        return g.gemm_naive_launch, g.gemm_naive
    if name == "tiled16":
        def tiled(a, b, c):
            gt.gemm_tiled_kernel[gt.gemm_tiled_grid(c.shape[0], c.shape[1]), gt.BLOCK](a, b, c)
        return tiled, gt.gemm_tiled_kernel
    if name in MID:
        return (lambda a, b, c: gr.launch(name, a, b, c)), gr.KERNELS[name][0]
    tile = GEN[name]
    return (lambda a, b, c: cg.launch(tile, a, b, c)), None


def one(value):
    return next(iter(value.values())) if isinstance(value, dict) else value


def inspect(kernel, name):
    info = {}
    for attr in ("get_regs_per_thread", "get_shared_mem_per_block", "get_local_mem_per_thread"):
        try:
            info[attr[4:]] = int(one(getattr(kernel, attr)()))
        except Exception as e:  # noqa: BLE001
            info[attr[4:]] = repr(e)
    try:
        text = one(kernel.inspect_sass())
        with gzip.open(OUT / "sass" / f"{name}.sass.gz", "wt") as f:
            f.write(text)
        info["sass"] = sass_tools.summary(text)
    except Exception as e:  # noqa: BLE001
        info["sass_error"] = repr(e)
    return info


def errors(c, a, b, rows):
    """Relative Frobenius error on sampled rows against float64, and the worst element's error as
    a fraction of the FP32 accumulation bound K * u * (|A||B|)_ij."""
    a64, b64 = a[rows].astype(cp.float64), b.astype(cp.float64)
    ref = a64 @ b64
    got = c[rows].astype(cp.float64)
    err = float(cp.linalg.norm(got - ref) / cp.linalg.norm(ref))
    bound = a.shape[1] * UNIT * (cp.abs(a64) @ cp.abs(b64))
    return err, float(cp.max(cp.abs(got - ref) / bound))


data = {}
device_rng = cp.random.default_rng(6)
for s, (m, n, k) in SHAPES.items():
    data[s] = (device_rng.standard_normal((m, k), dtype=cp.float32),
               device_rng.standard_normal((k, n), dtype=cp.float32), cp.empty((m, n), cp.float32))
rows, resources = [], {}


def time_one(name, launch, s, runs):
    a, b, c = data[s]
    (m, k), n = a.shape, b.shape[1]
    da, db, dc = cuda.as_cuda_array(a), cuda.as_cuda_array(b), cuda.as_cuda_array(c)
    poison(dc)
    t = bench.measure(lambda _: launch(da, db, dc), warmup=2 if runs < 10 else 3, runs=runs)
    written = bool(cp.isfinite(c).all())
    err, ratio = errors(c, a, b, cp.asarray(rng.choice(m, min(m, 16), replace=False)))
    gf = 2 * m * n * k / (t.median_ms / 1e3) / 1e9
    rows.append({"variant": name, "shape": s, "m": m, "n": n, "k": k, "median_ms": t.median_ms,
                 "min_ms": t.min_ms, "max_ms": t.max_ms, "gflops": gf, "rel_err": err,
                 "bound_fraction": ratio, "all_written": written})
    print(f"{name:22s} {s:8s} {t.median_ms:9.3f} ms {gf:9.0f} GF/s err {err:.1e} of-bound {ratio:.3f} "
          f"written={written}", flush=True)


def small_checks(name, launch, vector_only):
    """Edges: shapes that are no multiple of any tile (and K = 1), against float64 on the host."""
    shapes = [(132, 260, 44), (4, 8, 4)] if vector_only else [(37, 45, 13), (33, 70, 1), (130, 201, 67)]
    worst = 0.0
    for m, n, k in shapes:
        a = rng.standard_normal((m, k), dtype=np.float32)
        b = rng.standard_normal((k, n), dtype=np.float32)
        dc = cuda.device_array((m, n), np.float32)
        poison(dc)
        launch(cuda.to_device(a), cuda.to_device(b), dc)
        ref = a.astype(np.float64) @ b
        got = dc.copy_to_host()
        frac = float(np.max(np.abs(got - ref) / (k * UNIT * (np.abs(a) @ np.abs(b)) + 1e-30)))
        worst = max(worst, frac if np.isfinite(got).all() else np.inf)
    print(f"  {name}: small shapes {shapes}: worst error / bound = {worst:.3f}", flush=True)
    return worst


def save():
    df = pd.DataFrame(rows)
    cub = df[df.variant == "cublas"].set_index("shape")["gflops"]
    df["of_cublas"] = df["gflops"] / df["shape"].map(cub)
    df.to_csv(OUT / "summary.csv", index=False)
    (OUT / "resources.json").write_text(json.dumps(resources, indent=1))
    return df


for s in SHAPES:
    a, b, c = data[s]
    time_one("cublas", lambda da, db, dc, a=a, b=b, c=c: cp.matmul(a, b, out=c), s, 25)
print(f"cuBLAS done {time.time() - T0:.0f}s", flush=True)

for name, shapes in PLAN:
    if time.time() - T0 > DEADLINE:
        print(f"deadline: skipping {name}", flush=True)
        continue
    t1 = time.time()
    launch, kernel = launcher(name)
    for s in shapes:
        time_one(name, launch, s, 3 if name in SLOW else (60 if s in ("2048", "1024") else 25))
    vector_only = name in GEN and GEN[name].vector and "awkward" not in shapes
    small = small_checks(name, launch, vector_only)
    if kernel is None:
        kernel = cg.build(GEN[name])
    info = {"seconds": round(time.time() - t1, 1), "small_worst_of_bound": small, **inspect(kernel, name)}
    if name in GEN and GEN[name].vector and "awkward" in shapes:
        info["scalar_twin"] = inspect(cg.build(GEN[name].scalar()), name + "_scalar")
    resources[name] = info
    brief = {k: v for k, v in info.get("sass", {}).items() if k not in ("top",)}
    print(f"  {name}: {info['seconds']}s regs={info.get('regs_per_thread')} "
          f"shared={info.get('shared_mem_per_block')} local={info.get('local_mem_per_thread')} "
          f"{json.dumps(brief)}",
          flush=True)
    print(f"  elapsed {time.time() - T0:.0f}s", flush=True)
    save()

df = save()
print(df.pivot_table(index="variant", columns="shape", values="of_cublas", sort=False).round(3).to_string())
print(df.pivot_table(index="variant", columns="shape", values="gflops", sort=False).round(0).to_string())
print(f"total {time.time() - T0:.0f}s")
