"""Which copy reaches CuPy's copy at 16 warps per SM or fewer? (lesson 2's low-occupancy target)

    python benchmarks/littles_law_copy_probe.py OUT

One-shot copies of lesson 2 (``copy_ilp``) at several block sizes, persistent copies whose warps take
chunks from a queue and load the next chunk before storing the current one (software pipelining:
loads in flight between chunks too), and streaming cache hints. Every variant is checked after
timing; CuPy's copy is timed at the start and the end. Writes OUT/copy_probe.csv.
"""

import sys
from pathlib import Path

import cupy as cp
import numpy as np
import pandas as pd
from numba import cuda

import gpu_lessons  # noqa: F401
from gpu_lessons import bench
from gpu_lessons import occupancy as occ
from gpu_lessons.kernels import coalescing as co
from gpu_lessons.kernels import littles_law as k
from gpu_lessons.kernels.util import poison

OUT = Path(sys.argv[1])
OUT.mkdir(parents=True, exist_ok=True)
N = 2**28
SMS = cuda.get_current_device().MULTIPROCESSOR_COUNT
LIMITS = occ.sm_limits()


def queue_source(name: str, unroll: int) -> str:
    lines = [f"def {name}(x, out, counters):",
             "    lane = uint64(cuda.threadIdx.x) & uint64(31)",
             "    groups = uint64(x.size) // uint64(4)",
             f"    span = uint64({32 * unroll})",
             "    chunks = groups // span",
             "    got = int64(0)",
             "    if lane == uint64(0):",
             "        got = int64(cuda.atomic.add(counters, 0, uint64(1)))",
             "    c = uint64(cuda.shfl_sync(0xffffffff, got, 0))",
             "    base = c * span + lane"]
    lines += ["    if c < chunks:"]
    lines += [f"        a{j}, b{j}, c{j}, d{j} = load4(x, int64(base + uint64({32 * j})))"
              for j in range(unroll)]
    lines += ["    else:"]
    lines += [f"        a{j} = b{j} = c{j} = d{j} = float32(0)" for j in range(unroll)]
    lines += ["    while c < chunks:",
              "        got = int64(0)",
              "        if lane == uint64(0):",
              "            got = int64(cuda.atomic.add(counters, 0, uint64(1)))",
              "        nxt = uint64(cuda.shfl_sync(0xffffffff, got, 0))",
              "        nbase = nxt * span + lane",
              "        if nxt < chunks:"]
    lines += [f"            e{j}, f{j}, g{j}, h{j} = load4(x, int64(nbase + uint64({32 * j})))"
              for j in range(unroll)]
    lines += ["        else:"]
    lines += [f"            e{j} = f{j} = g{j} = h{j} = float32(0)" for j in range(unroll)]
    lines += [f"        store4(out, int64(base + uint64({32 * j})), a{j}, b{j}, c{j}, d{j})"
              for j in range(unroll)]
    lines += [f"        a{j}, b{j}, c{j}, d{j} = e{j}, f{j}, g{j}, h{j}" for j in range(unroll)]
    lines += ["        c, base = nxt, nbase",
              "    if c == chunks:  # this warp drew the first chunk past the end: it copies the rest",
              "        i = chunks * span + lane",
              "        while i < groups:",
              "            p, q, r, s = load4(x, int64(i))",
              "            store4(out, int64(i), p, q, r, s)",
              "            i += uint64(32)",
              "        t = uint64(4) * groups + lane",
              "        if t < uint64(x.size):",
              "            out[t] = x[t]",
              "    if lane == uint64(0):",
              "        done = cuda.atomic.add(counters, 1, uint64(1))",
              "        warps = uint64(cuda.gridDim.x) * uint64(cuda.blockDim.x) // uint64(32)",
              "        if done == warps - uint64(1):",
              "            counters[0] = uint64(0)",
              "            counters[1] = uint64(0)"]
    return "\n".join(lines) + "\n"


def main() -> None:
    rng = np.random.default_rng(2)
    x = cuda.to_device(rng.standard_normal(N, dtype=np.float32))
    out = cuda.device_array(N, np.float32)
    cx, cout = cp.asarray(x), cp.asarray(out)
    counters = cuda.to_device(np.zeros(2, np.uint64))
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
            timed(f"oneshot b{block} u{unroll}", lambda u=unroll, b=block, s=shared: k.copy_ilp_launch(
                u, True, x, out, b, s), per_sm * block // 32, block=block, unroll=unroll)
    # warp queue, software-pipelined
    for unroll in (2, 4, 8, 16):
        name = f"copy_queue_u{unroll}"
        kernel = k._compile(name, queue_source(name, unroll))
        for block, per_sm in ((128, 4), (256, 2), (512, 1), (64, 8), (256, 1), (128, 2)):
            shared = occ.shared_to_limit(block, per_sm, LIMITS)
            if shared > 48 * 1024:
                k.allow_dynamic_shared(kernel, (x, out, counters), LIMITS.shared_per_block_optin)
            timed(f"queue u{unroll} b{block}x{per_sm}", lambda kk=kernel, b=block, p=per_sm, s=shared:
                  kk[SMS * p, b, 0, s](x, out, counters), per_sm * block // 32, block=block, unroll=unroll)
    # lesson 3's block queue at 16 warps per SM
    for block, per_sm in ((256, 2), (512, 1), (128, 4)):
        shared = occ.shared_to_limit(block, per_sm, LIMITS)
        timed(f"block queue b{block}x{per_sm}", lambda b=block, p=per_sm, s=shared:
              co.copy_w16_queue[SMS * p, b, 0, s](x, out, co.queue_counters()), per_sm * block // 32)
    timed("cupy copy (end)", lambda: cp.copyto(cout, cx), 0)
    df = pd.DataFrame(rows)
    ref = df[df.variant.str.startswith("cupy")]["median_ms"].mean()
    df["of_copyto"] = ref / df["median_ms"]
    df.to_csv(OUT / "copy_probe.csv", index=False)
    print(df.sort_values("of_copyto", ascending=False).head(25).to_string())


main()
