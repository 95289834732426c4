"""Which copy reaches CuPy's copy at 16 warps per SM or fewer? (lesson 2's low-occupancy target)

    python benchmarks/littles_law_copy_probe.py OUT

One-shot copies of lesson 2 (``copy_ilp``) at several block sizes, persistent copies whose warps take
chunks from a queue and load the next chunk before storing the current one (software pipelining:
loads in flight between chunks too), and lesson 3's block queue. Every variant is checked after
timing; CuPy's copy is timed at the start and the end; ``warps_per_sm`` is the driver's residency.
Writes OUT/copy_probe.csv. (The committed data/nvidia-h200/probes/littles_law_copy_probe.csv was
made at c22ffab, when the probe wrote its own queue kernel and labelled rows with the residency it
asked for: its u16 queue rows ran at 8 warps/SM, see notebook 02.)
"""

import sys
from pathlib import Path

import cupy as cp
import numpy as np
import pandas as pd
from numba import cuda, typeof

import gpu_lessons  # noqa: F401
from gpu_lessons import bench
from gpu_lessons import occupancy as occ
from gpu_lessons.kernels import coalescing as co
from gpu_lessons.kernels import littles_law as k
from gpu_lessons.kernels.util import poison, queue_counters

OUT = Path(sys.argv[1])
OUT.mkdir(parents=True, exist_ok=True)
N = 2**28
SMS = cuda.get_current_device().MULTIPROCESSOR_COUNT
LIMITS = occ.sm_limits()


def driver_warps(kernel, args, block, shared):
    """Warps per SM the driver gives this launch shape (not the residency asked for)."""
    signature = tuple(typeof(a) for a in args)
    kernel.compile(signature)  # the driver is asked about compiled code
    return occ.driver_blocks_per_sm(kernel, block, shared, signature=signature) * block // 32


def main() -> None:
    rng = np.random.default_rng(2)
    x = cuda.to_device(rng.standard_normal(N, dtype=np.float32))
    out = cuda.device_array(N, np.float32)
    cx, cout = cp.asarray(x), cp.asarray(out)
    counters = queue_counters(np.uint64)  # the launcher's own pair (only typed here)
    rows = []

    def timed(variant, launch, warps, **extra):
        poison(out)
        try:
            t = bench.measure(lambda _: launch(), runs=40)
        except Exception as error:  # noqa: BLE001 - e.g. too many registers for the block
            print(f"{variant}: {error!r}"[:200], flush=True)
            return
        ok = bool(cp.array_equal(cout, cx))
        rows.append({"variant": variant, "warps_per_sm": warps, "median_ms": t.median_ms, "min_ms": t.min_ms,
                     "max_ms": t.max_ms, "gbps": 8 * N / t.median_ms / 1e6, "correct": ok, **extra})
        print(f"{variant:40s} w{warps:<3} {8 * N / t.median_ms / 1e6:7.0f} GB/s ok={ok}", flush=True)

    timed("cupy copy (start)", lambda: cp.copyto(cout, cx), 0)
    # one-shot copies, 16 warps per SM, several block sizes (residency capped with shared memory)
    for block in (64, 128, 256, 512):
        per_sm = 512 // block
        for unroll in (8, 16, 32):
            kernel = k.copy_ilp(unroll, True)
            full = per_sm * block >= LIMITS.max_threads_per_sm
            shared = 0 if full else occ.shared_to_limit(block, per_sm, LIMITS)
            if shared > 48 * 1024:
                k.allow_dynamic_shared(kernel, (x, out), LIMITS.shared_per_block_optin)
            warps = driver_warps(kernel, (x, out), block, shared)
            timed(f"oneshot b{block} u{unroll}", lambda u=unroll, b=block, s=shared: k.copy_ilp_launch(
                u, True, x, out, b, s), warps, block=block, unroll=unroll)
    # the lesson's warp queue (gpu_lessons.kernels.littles_law.copy_queue), one claim per chunk
    for unroll in (2, 4, 8, 16):
        kernel = k.copy_queue(unroll)
        for block, per_sm in ((128, 4), (256, 2), (512, 1), (64, 8), (256, 1), (128, 2)):
            shared = occ.shared_to_limit(block, per_sm, LIMITS)
            if shared > 48 * 1024:
                k.allow_dynamic_shared(kernel, (x, out, counters), LIMITS.shared_per_block_optin)
            timed(f"queue u{unroll} b{block}x{per_sm}", lambda u=unroll, b=block, p=per_sm, s=shared:
                  k.copy_queue_launch(u, x, out, SMS * p, b, s),
                  driver_warps(kernel, (x, out, counters), block, shared), block=block, unroll=unroll)
    # lesson 3's block queue at 16 warps per SM
    args = (x, out, co.queue_counters())
    for block, per_sm in ((256, 2), (512, 1), (128, 4)):
        shared = occ.shared_to_limit(block, per_sm, LIMITS)
        k.allow_dynamic_shared(co.copy_w16_queue, args, LIMITS.shared_per_block_optin)
        timed(f"block queue b{block}x{per_sm}", lambda b=block, p=per_sm, s=shared:
              co.copy_w16_queue[SMS * p, b, 0, s](*args),
              driver_warps(co.copy_w16_queue, args, block, shared))
    timed("cupy copy (end)", lambda: cp.copyto(cout, cx), 0)
    df = pd.DataFrame(rows)
    ref = df[df.variant.str.startswith("cupy")]["median_ms"].mean()
    df["of_copyto"] = ref / df["median_ms"]
    df.to_csv(OUT / "copy_probe.csv", index=False)
    print(df.sort_values("of_copyto", ascending=False).head(25).to_string())


main()
