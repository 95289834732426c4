"""GPU probe for lesson 3 (coalescing): the lesson's checks and recording, the grid-stride copy's
launch shapes, SASS of new kernels, and (``ncu`` mode, run under Nsight Compute) one launch of each
kernel whose counters the notebook shows.

    python benchmarks/probe_coalescing.py time OUT      # checks, recording, shapes -> OUT/probe.csv
    ncu ... python benchmarks/probe_coalescing.py ncu    # one launch each (NCU_ORDER names them)

Round 1 (2026-12-01, 71dfd8f) found the grid-stride float4 copy's gap: with one wave of resident
blocks every SM gets the same share, SMs finish up to 20% apart (sm__cycles_active min vs max)
and the kernel waits for the slowest. This round times the fixes: more waves, a queue of chunks.
"""

from __future__ import annotations

import sys
import time
import traceback
from pathlib import Path

import numpy as np
import pandas as pd
from numba import cuda

from gpu_lessons import bench
from gpu_lessons.kernels import coalescing as c
from gpu_lessons.kernels.launch import blocks_to_cover
from gpu_lessons.kernels.util import poison

SEED = 7
BIG = 2**30  # floats: 4 GiB, so strided reads never come back to a sector
N = 2**26  # ncu launches (as in round 1)
COPY_N = 2**28  # 1 GiB per buffer
DT = np.float32(0.01)
ROWS: list[dict] = []


def row(group, variant, launch, useful_bytes, param=np.nan, size=0):
    timing = bench.measure(launch)
    ROWS.append({"group": group, "variant": variant, "param": param, "size": size,
                 "median_ms": timing.median_ms, "min_ms": timing.min_ms, "max_ms": timing.max_ms,
                 "gbps": useful_bytes / timing.median_ms / 1e6})
    print(f"{group:8s} {variant:28s} {param!s:>6} {ROWS[-1]['gbps']:9.1f} GB/s spread {timing.spread:.3f}",
          flush=True)


def check_copy(out, what):
    left = c.count_nan(out)
    ends = [out[:4096].copy_to_host(), out[out.size - 4096:].copy_to_host()]
    want = [c.random_values(np.arange(4096), SEED),
            c.random_values(np.arange(out.size - 4096, out.size), SEED)]
    if left or not all(np.array_equal(g, w) for g, w in zip(ends, want, strict=True)):
        raise AssertionError(f"{what}: wrong copy ({left} unwritten)")


def shapes(big):
    """The 16-byte grid-stride copy over waves x block sizes; the queues; the one-shot; CuPy."""
    import cupy as cp

    x, out = big[:COPY_N], cuda.device_array(COPY_N, np.float32)
    useful = 8 * COPY_N
    src, dst = cp.asarray(x), cp.asarray(out)
    row("shape", "cupy copyto", lambda _: cp.copyto(dst, src), useful, size=COPY_N)
    for block in (256, 1024):
        row("shape", "copy_w16", lambda _, b=block: c.width_launch("copy_w16", x, out, b), useful,
            param=block, size=COPY_N)
    for block in (256, 512, 1024):
        for waves in (1, 2, 4, 8, 16, 32, 64, 128):
            poison(out)
            row("shape", f"grid_stride b{block}", lambda _, b=block, w=waves: c.width_launch(
                "copy_w16_grid_stride", x, out, b, w), useful, param=waves, size=COPY_N)
            check_copy(out, f"grid stride b{block} w{waves}")
        for queue in ("copy_w16_queue", "copy_w16_queue2"):
            poison(out)
            row("shape", f"{queue} b{block}", lambda _, q=queue, b=block: c.width_launch(q, x, out, b),
                useful, param=block, size=COPY_N)
            check_copy(out, f"{queue} b{block}")


def offsets_again(big):
    """Offsets 0 and 32 need the same 4 sectors and 1 line per request, yet round 1 timed 32 (and 8,
    16, 24) ~7% slower than 0: time them again, interleaved, to tell order effects from the offset."""
    out = cuda.device_array(N, np.float32)
    for offset in (32, 0, 8, 1, 32, 0, 64, 96, 128, 0):
        row("offset", "offset_copy", lambda _, o=offset: c.offset_copy_kernel[blocks_to_cover(N), 256](
            big, out, o), 8 * N, param=offset, size=N)


def record(out_dir: Path):
    """The lesson's own measure(), written as a recording (what `gpu-lessons record` does)."""
    from gpu_lessons import results
    from gpu_lessons.lessons import coalescing as lesson
    from gpu_lessons.lessons.common import measurement_meta

    table = lesson.measure(show_progress=False)
    meta = measurement_meta(lesson.NAME, live=False)
    print("recorded:", results.write_recording(table, meta, lesson.NAME, root=out_dir / "data"), flush=True)
    print(table[["variant", "provider", "size", "param", "median_ms", "gbps"]].to_string(), flush=True)


def sass(out_dir: Path, kernels: dict):
    folder = out_dir / "sass"
    folder.mkdir(parents=True, exist_ok=True)
    resources = []
    for name, kernel in kernels.items():
        for signature, text in kernel.inspect_sass().items():
            (folder / f"{name}.sass").write_text(f"// {signature}\n{text}")
        registers = kernel.get_regs_per_thread()
        resources.append({"kernel": name, "registers": list(registers.values())[0]
                          if isinstance(registers, dict) else registers})
    pd.DataFrame(resources).to_csv(out_dir / "resources.csv", index=False)


def ncu_launches():
    """One launch of each case, profiled between profile_start and profile_stop."""
    big = cuda.device_array(BIG, np.float32)
    c.fill_random(big, SEED)
    x, out = big[:N], cuda.device_array(N, np.float32)
    names = []

    def mark(name):
        cuda.synchronize()
        names.append(name)

    cuda.synchronize()
    cuda.profile_start()
    c.width_launch("copy_w16", x, out)
    mark("copy_w16")
    for waves in (1, 4, 16, 64):
        c.width_launch("copy_w16_grid_stride", x, out, 256, waves)
        mark(f"copy_w16_grid_stride w{waves}")
    for block in (256, 1024):
        c.width_launch("copy_w16_queue2", x, out, block)
        mark(f"copy_w16_queue2 b{block}")
    c.width_launch("copy_w16_queue", x, out, 1024)
    mark("copy_w16_queue b1024")
    c.offset_copy_kernel[blocks_to_cover(N), 256](big, out, 16)
    mark("offset_copy 16")
    for stride in (4, 16, 256):
        m = min(2**26, BIG // stride)
        o = cuda.device_array(m, np.float32)
        c.strided_copy_kernel[blocks_to_cover(m), 256](big, o, stride)
        mark(f"strided_copy {stride}")
    cuda.profile_stop()
    n = 2**24
    records = cuda.device_array((n, 6), np.float32)
    c.soa_to_aos_launch([big[f * n:(f + 1) * n] for f in range(6)], records)
    blocks = cuda.device_array((c.aosoa_blocks(n), 6, 32), np.float32)
    c.aos_to_aosoa_launch(records, blocks)
    padded = cuda.device_array(8 * n, np.float32)
    c.aos_to_padded_launch(records, padded)
    cuda.synchronize()
    cuda.profile_start()
    c.particles_aosoa_launch(blocks, n, DT)
    mark("particles_aosoa")
    c.particles_padded_launch(padded, DT)
    mark("particles_padded_vec4")
    cuda.profile_stop()
    print("NCU_ORDER", "|".join(names))


def main():
    if sys.argv[1] == "ncu":
        ncu_launches()
        return
    from gpu_lessons.lessons import coalescing as lesson

    out_dir = Path(sys.argv[2])
    out_dir.mkdir(parents=True, exist_ok=True)
    t0 = time.time()
    result = lesson.check()
    print(f"lesson.check(): {int(result['passed'].sum())}/{len(result)} passed in {time.time() - t0:.1f} s")
    print(result[~result["passed"]].to_string(), flush=True)
    big = cuda.device_array(BIG, np.float32)
    c.fill_random(big, SEED)
    steps = [("record", lambda: record(out_dir)), ("shapes", lambda: shapes(big)),
             ("offsets", lambda: offsets_again(big)),
             ("sass", lambda: sass(out_dir, {"copy_w16_queue2": c.copy_w16_queue2}))]
    for name, step in steps:
        t = time.time()
        try:
            step()
        except Exception as error:  # noqa: BLE001 - keep the other steps
            traceback.print_exc()
            print(f"STEP {name} FAILED: {error}")
        print(f"-- {name}: {time.time() - t:.1f} s", flush=True)
        pd.DataFrame(ROWS).to_csv(out_dir / "probe.csv", index=False)
    print(f"-- total {time.time() - t0:.1f} s")


if __name__ == "__main__":
    main()
