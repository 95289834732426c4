"""Round-1 probe for lesson 3 (coalescing): every variant checked and timed, SASS, registers,
and (``ncu`` mode, run under Nsight Compute) one launch of each kernel the counters explain.

    python benchmarks/probe_coalescing.py time OUT     # checks, timings -> OUT/probe.csv, SASS
    ncu ... python benchmarks/probe_coalescing.py ncu   # one launch each, for the counters
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import cupy as cp
import numpy as np
import pandas as pd
from numba import cuda, uint64

from gpu_lessons import bench
from gpu_lessons.kernels import coalescing as c
from gpu_lessons.kernels import roofline as r
from gpu_lessons.kernels.launch import blocks_to_cover, resident_blocks
from gpu_lessons.kernels.util import poison

SEED = 7
BIG = 2**30  # floats in the big input (4 GiB): strided reads never repeat a sector
N = 2**26  # offset sweep and ncu copies
COPY_N = 2**28  # 1 GiB per buffer: the copy comparison
PARTICLES = 2**25
DT = np.float32(0.01)
ROWS = []


@cuda.jit
def offset_copy_unsigned(x, out, offset):
    i = uint64(cuda.grid(1))
    if i < uint64(out.shape[0]):
        out[i] = x[i + offset]


@cuda.jit
def strided_copy_unsigned(x, out, stride):
    i = uint64(cuda.grid(1))
    if i < uint64(out.shape[0]):
        out[i] = x[i * stride]


def row(group, variant, launch, useful_bytes, param=np.nan, size=0, runs=25):
    t = bench.measure(launch, runs=runs)
    ROWS.append({"group": group, "variant": variant, "param": param, "size": size,
                 "median_ms": t.median_ms, "min_ms": t.min_ms, "max_ms": t.max_ms,
                 "gbps": useful_bytes / t.median_ms / 1e6})
    print(f"{group:10s} {variant:34s} {param!s:>6} {size:>11} {ROWS[-1]['gbps']:9.1f} GB/s "
          f"spread {t.spread:.3f}", flush=True)


def check_sample(out, expected_index, what):
    """out[k] == x_big[expected_index(k)] on a sample and at both ends; nothing left poisoned."""
    d = cp.asarray(out)
    if bool(cp.isnan(d).any()):
        raise AssertionError(f"{what}: outputs left poisoned")
    n = d.size
    sample = np.unique(np.concatenate([np.random.default_rng().integers(0, n, 4096), np.arange(min(n, 64)),
                                       np.arange(max(0, n - 64), n)]))
    got = cp.asnumpy(d[cp.asarray(sample)])
    want = c.random_values(expected_index(sample), SEED)
    if not np.array_equal(got, want):
        raise AssertionError(f"{what}: wrong values")


def copies(big):
    cupy_src = cp.asarray(big)[:COPY_N]
    x = cuda.as_cuda_array(cupy_src)
    out = cuda.device_array(COPY_N, np.float32)
    cout = cp.asarray(out)
    useful = 8 * COPY_N
    row("copy", "cupy copyto", lambda _: cp.copyto(cout, cupy_src), useful, size=COPY_N)
    row("copy", "roofline copy_vec4", lambda _: r.copy_launch("copy_vec4", x, out), useful, size=COPY_N)
    row("copy", "roofline copy_vec4_grid_stride", lambda _: r.copy_launch("copy_vec4_grid_stride", x, out),
        useful, size=COPY_N)
    for variant in c.WIDTH_VARIANTS:
        poison(out)
        row("copy", variant, lambda _, v=variant: c.width_launch(v, x, out), useful, size=COPY_N)
        check_sample(out, lambda k: k, variant)
    for variant in ("copy_w16_grid_stride", "copy_w16_grid_stride_x4", "copy_w16_queue"):
        for block in (256, 512, 1024):
            for waves in (1, 2, 4):
                if (block, waves) == (256, 1):
                    continue
                row("copy", f"{variant} b{block} w{waves}",
                    lambda _, v=variant, b=block, w=waves: c.width_launch(v, x, out, b, w), useful,
                    size=COPY_N, param=block * 10 + waves)
    for per_sm in (1, 2, 4, 16, 32):
        blocks = resident_blocks() // 8 * per_sm
        row("copy", f"copy_w16_grid_stride {per_sm}/SM",
            lambda _, b=blocks: c.copy_w16_grid_stride[b, 256](x, out), useful, size=COPY_N, param=per_sm)


def widths(big):
    for p in (20, 22, 24, 26, 28):
        n = 2**p
        src = cp.asarray(big)[:n]
        x = cuda.as_cuda_array(src)
        out = cuda.device_array(n, np.float32)
        cout = cp.asarray(out)
        row("width", "cupy copyto", lambda _: cp.copyto(cout, src), 8 * n, size=n)
        for variant in ("copy_w4", "copy_w8", "copy_w16", "copy_w4_grid_stride", "copy_w8_grid_stride",
                        "copy_w16_grid_stride", "copy_w16_grid_stride_x4"):
            poison(out)
            row("width", variant, lambda _, v=variant: c.width_launch(v, x, out), 8 * n, size=n)
            check_sample(out, lambda k: k, f"{variant} n={n}")


def offsets(big):
    x = cuda.as_cuda_array(cp.asarray(big)[: N + 64])
    out = cuda.device_array(N, np.float32)
    for offset in range(33):
        poison(out)
        row("offset", "offset_copy", lambda _, o=offset: c.offset_copy_kernel[blocks_to_cover(N), 256](x, out, o),
            8 * N, param=offset, size=N)
        check_sample(out, lambda k, o=offset: k + o, f"offset {offset}")
        if offset in (0, 1, 8):
            row("offset", "offset_copy_unsigned",
                lambda _, o=offset: offset_copy_unsigned[blocks_to_cover(N), 256](x, out, np.uint64(o)),
                8 * N, param=offset, size=N)


STRIDES = (1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 128)


def strides(big):
    x = cuda.as_cuda_array(cp.asarray(big))
    for stride in STRIDES:
        n = min(2**26, BIG // stride)
        out = cuda.device_array(n, np.float32)
        poison(out)
        row("stride", "strided_copy", lambda _, s=stride: c.strided_copy_kernel[blocks_to_cover(n), 256](x, out, s),
            8 * n, param=stride, size=n)
        check_sample(out, lambda k, s=stride: k * s, f"stride {stride}")
        if stride in (1, 2, 32):
            row("stride", "strided_copy_unsigned",
                lambda _, s=stride: strided_copy_unsigned[blocks_to_cover(n), 256](x, out, np.uint64(s)),
                8 * n, param=stride, size=n)


EK = None


def particle_kernels():
    global EK
    if EK is None:
        EK = cp.ElementwiseKernel("float32 vx, float32 vy, float32 vz, float32 dt",
                                  "float32 x, float32 y, float32 z",
                                  "x += vx * dt; y += vy * dt; z += vz * dt", "particles_elementwise")
    return EK


def particles():
    """All checks on the device (CuPy): the host would take seconds per check at this size."""
    n = PARTICLES
    useful = c.PARTICLE_USEFUL_BYTES * n
    soa = [cp.empty(n, cp.float32) for _ in range(6)]
    for f, a in enumerate(soa):
        c.fill_random(cuda.as_cuda_array(a), SEED + f)
    backup = [a.copy() for a in soa]
    ref = cp.stack([backup[f] + backup[f + 3] * DT for f in range(3)] + backup[3:], axis=1)
    arrays = [cuda.as_cuda_array(a) for a in soa]

    def restore():
        for a, b in zip(soa, backup, strict=True):
            a[...] = b

    def check(result, what):
        if not bool(cp.allclose(result, ref, rtol=1e-6, atol=1e-6)):
            raise AssertionError(f"{what} differs from the reference")

    for variant in c.PARTICLE_SOA_VARIANTS:
        restore()
        c.particles_soa_launch(variant, arrays, DT)
        check(cp.stack(soa, axis=1), variant)
        row("particles", variant, lambda _, v=variant: c.particles_soa_launch(v, arrays, DT), useful, size=n)
    ek = particle_kernels()
    restore()
    ek(soa[3], soa[4], soa[5], DT, soa[0], soa[1], soa[2])
    check(cp.stack(soa, axis=1), "elementwise")
    row("particles", "cupy ElementwiseKernel", lambda _: ek(soa[3], soa[4], soa[5], DT, soa[0], soa[1], soa[2]),
        useful, size=n)

    def expressions(_):
        soa[0][...] += soa[3] * DT
        soa[1][...] += soa[4] * DT
        soa[2][...] += soa[5] * DT

    restore()
    expressions(0)
    check(cp.stack(soa, axis=1), "cupy expressions")
    row("particles", "cupy expressions (SoA)", expressions, useful, size=n)
    start = cp.stack(backup, axis=1)
    aos = start.copy()
    d = cuda.as_cuda_array(aos)
    c.particles_aos_launch(d, DT)
    check(aos, "aos")
    row("particles", "particles_aos", lambda _: c.particles_aos_launch(d, DT), useful, size=n)
    aos[...] = start

    def aos_expression(_):
        aos[:, 0:3] += aos[:, 3:6] * DT

    aos_expression(0)
    check(aos, "cupy aos")
    row("particles", "cupy expression (AoS)", aos_expression, useful, size=n)
    nb = c.aosoa_blocks(n)
    blocks = cp.zeros((nb * 32, 6), cp.float32)
    blocks[:n] = start
    blocks = cp.ascontiguousarray(blocks.reshape(nb, 32, 6).transpose(0, 2, 1))
    db = cuda.as_cuda_array(blocks)
    c.particles_aosoa_launch(db, n, DT)
    check(blocks.transpose(0, 2, 1).reshape(-1, 6)[:n], "aosoa")
    row("particles", "particles_aosoa", lambda _: c.particles_aosoa_launch(db, n, DT), useful, size=n)
    padded = cp.zeros((n, 8), cp.float32)
    padded[:, 0:3], padded[:, 4:7] = start[:, 0:3], start[:, 3:6]
    padded = padded.reshape(-1)
    dp = cuda.as_cuda_array(padded)
    c.particles_padded_launch(dp, DT)
    rec = padded.reshape(n, 8)
    check(cp.concatenate([rec[:, 0:3], rec[:, 4:7]], axis=1), "padded")
    row("particles", "particles_padded_vec4", lambda _: c.particles_padded_launch(dp, DT), useful, size=n)


def sass(out_dir: Path):
    kernels = {
        "roofline_copy_vec4_grid_stride": r.copy_vec4_grid_stride, "roofline_copy_vec4": r.copy_vec4,
        **{name: k for name, (k, _, _) in c.WIDTH_VARIANTS.items()},
        "offset_copy_kernel": c.offset_copy_kernel, "offset_copy_unsigned": offset_copy_unsigned,
        "strided_copy_kernel": c.strided_copy_kernel,
        **{v: c._SOA_KERNELS[v] for v in c.PARTICLE_SOA_VARIANTS},
        "particles_aos": c.particles_aos_kernel, "particles_aosoa": c.particles_aosoa_kernel,
        "particles_padded_vec4": c.particles_padded_vec4_kernel, "add_vec4": c.add_vec4_kernel,
    }
    folder = out_dir / "sass"
    folder.mkdir(parents=True, exist_ok=True)
    resources = []
    for name, k in kernels.items():
        try:
            for sig, text in k.inspect_sass().items():
                (folder / f"{name}.sass").write_text(f"// {sig}\n{text}")
            regs = k.get_regs_per_thread()
            regs = list(regs.values())[0] if isinstance(regs, dict) else regs
            resources.append({"kernel": name, "registers": regs})
        except Exception as error:  # noqa: BLE001
            resources.append({"kernel": name, "registers": f"error: {error}"})
    pd.DataFrame(resources).to_csv(out_dir / "resources.csv", index=False)


def checks():
    rng = np.random.default_rng()
    for n in (1, 3, 4, 5, 1000, 1027, 4099):
        a = rng.standard_normal((n, 6), dtype=np.float32)
        ref = c.particles_reference(a, DT)
        for layout in ("aos", "aosoa", "padded"):
            assert np.allclose(c.update_particles(a, DT, layout), ref, atol=1e-6), (layout, n)
        for v in c.PARTICLE_SOA_VARIANTS:
            assert np.allclose(c.update_particles(a, DT, "soa", v), ref, atol=1e-6), (v, n)
        x, y = rng.standard_normal(n, dtype=np.float32), rng.standard_normal(n, dtype=np.float32)
        for v in c.WIDTH_VARIANTS:
            for block in (256, 1024):
                assert np.array_equal(c.copy_width(x, v, block), x), (v, n, block)
        assert np.array_equal(c.add_vec4(x, y), x + y), n
    try:
        c.add_vec4(x[1:], y[1:])
    except c.InputError as error:
        print("misaligned view refused:", error)
    print("checks passed", flush=True)


def ncu_launches():
    n = N
    big = cp.empty(BIG, cp.float32)
    c.fill_random(cuda.as_cuda_array(big), SEED)
    x = cuda.as_cuda_array(big[:n])
    out = cuda.device_array(n, np.float32)
    cout = cp.asarray(out)
    cuda.synchronize()
    cuda.profile_start()  # ncu runs with --profile-from-start off: only these launches are profiled
    names = []
    def mark(name):
        cuda.synchronize()
        names.append(name)
    cp.copyto(cout, big[:n]); mark("cupy copyto")
    r.copy_launch("copy_vec4", x, out); mark("roofline copy_vec4")
    r.copy_launch("copy_vec4_grid_stride", x, out); mark("roofline copy_vec4_grid_stride")
    for v in ("copy_w4", "copy_w16", "copy_w16_grid_stride", "copy_w16_grid_stride_x4", "copy_w16_queue",
              "copy_w16_block_chunks"):
        c.width_launch(v, x, out); mark(v)
    c.width_launch("copy_w16_grid_stride", x, out, 1024, 1); mark("copy_w16_grid_stride b1024")
    xo = cuda.as_cuda_array(big[: n + 64])
    for offset in (0, 1, 8):
        c.offset_copy_kernel[blocks_to_cover(n), 256](xo, out, offset); mark(f"offset_copy {offset}")
    xb = cuda.as_cuda_array(big)
    for stride in (1, 2, 8, 32, 64, 128):
        m = min(2**26, BIG // stride)
        o = cuda.device_array(m, np.float32)
        c.strided_copy_kernel[blocks_to_cover(m), 256](xb, o, stride); mark(f"strided_copy {stride}")
    cuda.profile_stop()
    del big, xb, xo, x, out, cout
    p = 2**24
    soa = [cp.empty(p, cp.float32) for _ in range(6)]
    for f, a in enumerate(soa):
        c.fill_random(cuda.as_cuda_array(a), SEED + f)
    arrays = [cuda.as_cuda_array(a) for a in soa]
    aos = cp.stack(soa, axis=1)
    cuda.synchronize()
    cuda.profile_start()
    for v in ("particles_soa_naive", "particles_soa", "particles_soa_vec4"):
        c.particles_soa_launch(v, arrays, DT); mark(v)
    particle_kernels()(soa[3], soa[4], soa[5], DT, soa[0], soa[1], soa[2]); mark("cupy ElementwiseKernel")
    c.particles_aos_launch(cuda.as_cuda_array(aos), DT); mark("particles_aos")
    cuda.profile_stop()
    print("NCU_ORDER", "|".join(names))


def unsigned_compare(big):
    """Signed (the lesson's sweep kernels) against unsigned indices, at a few offsets and strides."""
    x = cuda.as_cuda_array(cp.asarray(big))
    out = cuda.device_array(N, np.float32)
    for offset in (0, 1, 8):
        row("unsigned", "offset_copy", lambda _, o=offset: c.offset_copy_kernel[blocks_to_cover(N), 256](x, out, o),
            8 * N, param=offset, size=N)
        row("unsigned", "offset_copy_unsigned",
            lambda _, o=offset: offset_copy_unsigned[blocks_to_cover(N), 256](x, out, np.uint64(o)),
            8 * N, param=offset, size=N)
    for stride in (1, 2, 32):
        n = min(2**26, BIG // stride)
        o = cuda.device_array(n, np.float32)
        row("unsigned", "strided_copy", lambda _, s=stride: c.strided_copy_kernel[blocks_to_cover(n), 256](x, o, s),
            8 * n, param=stride, size=n)
        row("unsigned", "strided_copy_unsigned",
            lambda _, s=stride: strided_copy_unsigned[blocks_to_cover(n), 256](x, o, np.uint64(s)),
            8 * n, param=stride, size=n)


def record(out_dir: Path):
    """The lesson's own measure(), written as a recording (what `gpu-lessons record` does)."""
    from gpu_lessons import results
    from gpu_lessons.lessons import coalescing as lesson
    from gpu_lessons.lessons.common import measurement_meta

    table = lesson.measure(show_progress=False)
    meta = measurement_meta(lesson.NAME, live=False)
    print("recorded:", results.write_recording(table, meta, lesson.NAME, root=out_dir / "data"), flush=True)
    print(table[["variant", "provider", "size", "param", "median_ms", "gbps"]].to_string(), flush=True)


def main():
    mode = sys.argv[1]
    if mode == "ncu":
        ncu_launches()
        return
    from gpu_lessons.lessons import coalescing as lesson

    out_dir = Path(sys.argv[2])
    out_dir.mkdir(parents=True, exist_ok=True)
    t0 = time.time()
    result = lesson.check()
    print(f"lesson.check(): {int(result['passed'].sum())}/{len(result)} passed in {time.time() - t0:.1f} s",
          flush=True)
    print(result[~result["passed"]].to_string())
    big = cp.empty(BIG, cp.float32)
    c.fill_random(cuda.as_cuda_array(big), SEED)
    steps = [("copies", lambda: copies(big)), ("sass", lambda: sass(out_dir)), ("record", lambda: record(out_dir)),
             ("unsigned", lambda: unsigned_compare(big)), ("sass again", lambda: sass(out_dir))]
    for name, step in steps:
        t = time.time()
        try:
            step()
        except Exception as error:  # noqa: BLE001 - keep the other steps
            import traceback

            traceback.print_exc()
            print(f"STEP {name} FAILED: {error}")
        print(f"-- {name}: {time.time() - t:.1f} s", flush=True)
        pd.DataFrame(ROWS).to_csv(out_dir / "probe.csv", index=False)
    print(f"-- total {time.time() - t0:.1f} s")


if __name__ == "__main__":
    main()
