"""The wgmma TF32 ceiling on this GPU: operands in shared memory, accumulators in registers, no
global traffic (sm_90a only).

    python benchmarks/wgmma_ceiling.py --out data/nvidia-h200/probes

Each block is one warpgroup (128 threads) that loops: ``wgmma_fence()``, P chained
``wgmma_m64nNk8_tf32`` on the same A (64x8) and B (8xN) in shared memory, ``wgmma_commit_group()``,
``wgmma_wait_group(0)``. The grid holds W warpgroups per SM (132 SMs x W blocks). Prints TFLOP/s
(2 * 64 * N * 8 FLOP per wgmma; median of 25 event-timed launches) for N = 64, 128, 256, P = 4, 8,
W = 1 to 4, and writes DIR/wgmma_ceiling.json (with the device's description and the command).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from datetime import datetime, timezone
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import gpu_lessons  # noqa: E402
from gpu_lessons import ptx  # noqa: E402

WORK_PER_SM = 1 << 16  # wgmmas per SM per launch (about 2 ms at N = 128)
SHARED_FLOATS = (64 * 8 + 256 * 8) + 4  # A, the largest B, and room to align to 16 bytes


def ceiling_kernel(n: int, per_commit: int):
    from numba import cuda, float32

    wgmma = ptx.WGMMA_TF32[n]
    half = n // 2

    @cuda.jit
    def wgmma_loop(reps, out):
        s = cuda.shared.array(SHARED_FLOATS, float32)
        t = cuda.threadIdx.x
        for i in range(t, SHARED_FLOATS, cuda.blockDim.x):
            s[i] = float32((i * 7) % 13) * float32(0.125) - float32(0.75)
        ptx.fence_proxy_async()
        cuda.syncthreads()
        start = (ptx.shared_address(s, 0) + 15) // 16 * 16
        desc_a = ptx.matrix_descriptor(start, 128, 256, ptx.SWIZZLE_NONE)
        desc_b = ptx.matrix_descriptor(start + 2048, 128, 256, ptx.SWIZZLE_NONE)
        acc = ptx.wgmma_zero_accumulators(n)
        for _ in range(reps):
            ptx.wgmma_fence()
            for _j in range(per_commit):
                acc = wgmma(desc_a, desc_b, acc, 1)
            ptx.wgmma_commit_group()
            acc = ptx.wgmma_wait_group(0, acc)
        total = float32(0)
        for i in range(half):
            total += acc[i]
        out[cuda.blockIdx.x * cuda.blockDim.x + t] = total

    return wgmma_loop


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, help="folder for wgmma_ceiling.json")
    args = parser.parse_args(argv)
    if gpu_lessons.SIMULATED:
        print("No GPU: the wgmma ceiling is measured on an sm_90a GPU.", file=sys.stderr)
        return 2
    from numba import cuda

    from gpu_lessons import bench

    info = gpu_lessons.device_info()
    sms = cuda.get_current_device().MULTIPROCESSOR_COUNT
    rows = []
    for n in (64, 128, 256):
        for per_commit in (4, 8):
            kernel = ceiling_kernel(n, per_commit)
            for per_sm in (1, 2, 3, 4):
                blocks = sms * per_sm
                reps = WORK_PER_SM // (per_commit * per_sm)
                out = cuda.device_array(blocks * 128, np.float32)
                try:
                    timing = bench.measure(lambda _k, kernel=kernel, blocks=blocks, reps=reps, out=out:
                                           kernel[blocks, 128](reps, out))
                except Exception as error:  # noqa: BLE001 - e.g. too many registers for W blocks/SM
                    print(f"N={n} P={per_commit} W={per_sm}: {type(error).__name__}: {error}".splitlines()[0])
                    continue
                flops = 2 * 64 * n * 8 * per_commit * reps * blocks
                tflops = flops / (timing.median_ms * 1e-3) / 1e12
                registers = kernel.get_regs_per_thread() if hasattr(kernel, "get_regs_per_thread") else None
                finite = bool(np.isfinite(out.copy_to_host()).all())
                rows.append({"n": n, "per_commit": per_commit, "warpgroups_per_sm": per_sm, "blocks": blocks,
                             "reps": reps, "flops": flops, "median_ms": timing.median_ms,
                             "min_ms": timing.min_ms, "max_ms": timing.max_ms, "tflops": tflops,
                             "registers": registers, "finite": finite})
                print(f"m64n{n}k8 x{per_commit} per commit, {per_sm} warpgroups/SM: {tflops:7.1f} TFLOP/s "
                      f"({timing.median_ms:.3f} ms, regs {registers})", flush=True)
    best = max(rows, key=lambda r: r["tflops"]) if rows else None
    if best:
        print(f"best: {best['tflops']:.1f} TFLOP/s (m64n{best['n']}k8, {best['per_commit']} per commit, "
              f"{best['warpgroups_per_sm']} warpgroups/SM)")
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        facts = {"what": "wgmma.mma_async m64nNk8 TF32 throughput, operands in shared memory, no global "
                         "traffic (benchmarks/wgmma_ceiling.py)",
                 "recorded_utc": datetime.now(timezone.utc).isoformat(timespec="seconds"),
                 "device": info.as_dict(),
                 "git_revision": os.environ.get("GPU_LESSONS_GIT_REVISION", "unknown"),
                 "command": " ".join(["python", *sys.argv]), "rows": rows}
        (args.out / "wgmma_ceiling.json").write_text(json.dumps(facts, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
