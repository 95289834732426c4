"""Lesson 7 on the GPU: every tensor-core and cp.async kernel checked, timed against cuBLAS, recorded.

    python benchmarks/tensor_cores_gpu.py OUT [--record-primitives] [--quick]

In one process (after compile workers): each kernel is checked against float64 (awkward shapes,
K = 1), then timed with ``gpu_lessons.bench.measure`` (CUDA events, warm-up, median of 25, inputs
rotated past 4 L2s, outputs poisoned and checked after timing) beside cuBLAS SGEMM (CuPy, TF32 off)
at 2048^3, 4096^3, 8192^3 and 4095x4097x1023; cuBLAS TF32 (``CUPY_TF32=1`` must be set before CuPy
is imported) runs in a subprocess on the same inputs (same generator seed). Errors against float64
(relative Frobenius norm on 16 sampled rows) for ours, cuBLAS FP32 and cuBLAS TF32; the mma.sync
ceiling at several warps per SM; registers, shared memory and SASS instruction counts per kernel.

Writes OUT/tensor_cores.csv, OUT/tensor_cores.json (provenance, errors, ceiling, kernels) and, with
--record-primitives, OUT/ptx_primitives.npz + .json (benchmarks/record_ptx_primitives.py).

Big unrolled kernels take a minute each in numba's front end: worker processes build them in
parallel first (GPU_LESSONS_GENERATED_DIR: generated source in files, numba's disk cache), and the
timing process loads them from the cache.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import subprocess
import sys
import tempfile
import time
import traceback
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
GENERATED = os.path.join(tempfile.gettempdir(), "gpu_lessons_generated")
os.environ.setdefault("GPU_LESSONS_GENERATED_DIR", GENERATED)  # before gpu_lessons is imported

SHAPES = {"2048^3": (2048, 2048, 2048), "4096^3": (4096, 4096, 4096), "8192^3": (8192, 8192, 8192),
          "4095x4097x1023": (4095, 4097, 1023)}
AWKWARD = "4095x4097x1023"
SEED = 2026
SAMPLE_ROWS = 16


def variants():
    """name -> (kind, tile or None, shapes): every kernel this run builds, checks and times."""
    from gpu_lessons.kernels import gemm_codegen as cg
    from gpu_lessons.kernels import gemm_steps as steps
    from gpu_lessons.kernels import tensor_cores as tc

    warp = tc.WARP_TILE
    out = {
        "mma_global": ("tc_global", None, ("2048^3", "4096^3", AWKWARD)),
        "mma_shared": ("tc", tc.SHARED_TILE, ("2048^3", "4096^3", AWKWARD)),
        "mma_async": ("tc", tc.ASYNC_TILE, ("2048^3", "4096^3", AWKWARD)),
        "warp_tile": ("tc", warp, tuple(SHAPES)),
        "warp_tile 4 stages": ("tc", tc.TcTile(stages=4), ("2048^3", "4096^3", "8192^3")),
        "warp_tile cap128": ("tc", tc.TcTile(max_registers=128), ("2048^3", "4096^3", "8192^3")),
        "warp_tile grouped 8": ("tc", tc.TcTile(group_m=8), ("4096^3", "8192^3")),
        "warp_tile unrounded": ("tc", tc.TcTile(round_inputs=False), ("4096^3",)),
        "warp_tile bk16 4 stages": ("tc", tc.TcTile(bk=16, stages=4), ("2048^3", "4096^3", "8192^3")),
        "warp_tile 64x64 (4 warps)": ("tc", tc.TcTile(wn=64, stages=3), ("2048^3", "4096^3", "8192^3")),
        "warp_tile_64x64": ("tc", tc.WARP_TILE_64X64, ("2048^3", "4096^3", "8192^3")),
        "simt big_tile (lesson 6)": ("simt", steps.BIG_TILE, ("2048^3", "4096^3")),
    }
    for stages in (2, 3, 4):
        tile = cg.Tile(bn=256, tn=16, max_registers=None, double_buffer=False, stages=stages)
        out[f"simt cp.async {stages} stages"] = ("simt", tile, ("2048^3", "4096^3"))
    return out


def _build_specs(names):
    """(kind, tile, vector) of every compiled kernel the variants need (4-byte twins at AWKWARD)."""
    specs = []
    for name, (kind, tile, shapes) in variants().items():
        if name not in names or tile is None:
            continue
        specs.append((kind, tile))
        if AWKWARD in shapes:
            specs.append((kind, tile.scalar()))
    return specs


def _compile(kind, tile):
    """Build one generated kernel and compile it for the launch's argument types."""
    import numpy as np
    from numba import cuda, typeof

    from gpu_lessons.kernels import gemm_codegen, tc_codegen

    module = tc_codegen if kind == "tc" else gemm_codegen
    kernel = module.build(tile)
    x = cuda.device_array(8, np.float32)
    args = (x, x, x, np.uint64(1), np.uint64(1), np.uint64(1))
    kernel.compile(tuple(typeof(a) for a in args))
    return kernel


def compile_worker(indices: list[int], names: list[str]) -> int:
    specs = _build_specs(names)
    for i in indices:
        start = time.time()
        _compile(*specs[i])
        print(f"  compiled {specs[i][0]} {specs[i][1]} in {time.time() - start:.0f} s", flush=True)
    return 0


def compile_in_parallel(names: list[str], workers: int) -> float:
    start = time.time()
    count = len(_build_specs(names))
    order = list(range(count))
    procs = []
    for w in range(min(workers, count)):
        mine = order[w::workers]
        command = [sys.executable, __file__, "--compile-worker", ",".join(map(str, mine)),
                   "--names", json.dumps(names)]
        procs.append(subprocess.Popen(command, cwd=REPO))
    for p in procs:
        p.wait()
    return time.time() - start


# ------------------------------------------------------------------------------ measuring


def _relative_error(a, b, c, rows):
    """||C - A B|| / ||A B|| on the sampled rows, against float64."""
    import cupy as cp

    reference = a[rows].astype(cp.float64) @ b.astype(cp.float64)
    return float(cp.linalg.norm(c[rows].astype(cp.float64) - reference) / cp.linalg.norm(reference))


def _inputs(shape: str):
    import cupy as cp

    from gpu_lessons.bench import input_sets_needed
    from gpu_lessons.device import device_info

    m, n, k = SHAPES[shape]
    sets = input_sets_needed(4 * (m * k + k * n + m * n), int(device_info().l2_mib * 2**20), most=16)
    generator = cp.random.default_rng(SEED)
    a = [generator.standard_normal((m, k), dtype=cp.float32) for _ in range(sets)]
    b = [generator.standard_normal((k, n), dtype=cp.float32) for _ in range(sets)]
    rows = cp.asarray(sorted(__import__("numpy").random.default_rng(0).choice(m, SAMPLE_ROWS, replace=False)))
    return a, b, rows


def cublas_tf32_child(out_path: str, shapes: list[str]) -> int:
    """Runs with CUPY_TF32=1 (set before CuPy was imported): cuBLAS TF32 timings and errors."""
    import cupy as cp

    from gpu_lessons.bench import measure

    assert os.environ.get("CUPY_TF32") == "1"
    results = {}
    for shape in shapes:
        m, n, k = SHAPES[shape]
        a, b, rows = _inputs(shape)
        c = [cp.empty((m, n), cp.float32) for _ in a]
        timing = measure(lambda s, a=a, b=b, c=c: cp.matmul(a[s], b[s], out=c[s]), input_sets=len(a))
        results[shape] = {"median_ms": timing.median_ms, "min_ms": timing.min_ms, "max_ms": timing.max_ms,
                          "runs": timing.runs, "tflops": 2 * m * n * k / timing.median_ms / 1e9,
                          "relative_error": _relative_error(a[0], b[0], c[0], rows)}
        print(f"  cuBLAS TF32 {shape}: {results[shape]['tflops']:.1f} TFLOP/s, "
              f"error {results[shape]['relative_error']:.2e}", flush=True)
    Path(out_path).write_text(json.dumps(results))
    return 0


ALIGNED_CHECKS = ((36, 20, 44), (132, 96, 260), (4, 0, 8), (200, 1000, 136))  # K, N multiples of 4
UNALIGNED_CHECKS = ((37, 13, 45), (33, 1, 70), (5, 0, 7))  # the 4-byte twins


def check_small_shapes(launchers: dict, with_twins: set) -> dict:
    """Every kernel against float64 on shapes no tile divides, K = 1 and K = 0 (on the GPU); the
    4-byte twins only where they were compiled (``with_twins``)."""
    import cupy as cp
    from numba import cuda

    results = {}
    generator = cp.random.default_rng(7)
    for name, launch in launchers.items():
        worst = 0.0
        checks = ALIGNED_CHECKS + (UNALIGNED_CHECKS if name in with_twins else ())
        for m, k, n in checks:
            a = generator.standard_normal((m, k), dtype=cp.float32)
            b = generator.standard_normal((k, n), dtype=cp.float32)
            c = cp.full((m, n), cp.nan, cp.float32)
            launch(cuda.as_cuda_array(a), cuda.as_cuda_array(b), cuda.as_cuda_array(c))
            reference = a.astype(cp.float64) @ b.astype(cp.float64)
            scale = max(float(cp.abs(reference).max()), 1e-30) if k else 1.0  # K = 0: C must be 0
            error = float(cp.abs(c - reference).max()) / scale
            if not bool(cp.isfinite(c).all()) or error > 1e-2:
                raise AssertionError(f"{name} wrong at {m}x{k}x{n}: error {error}")
            worst = max(worst, error)
        results[name] = worst
    return results


def observed_clocks() -> dict:
    """SM and memory clocks now (NVML), next to the timings; empty when NVML is missing."""
    try:
        import pynvml

        pynvml.nvmlInit()
        handle = pynvml.nvmlDeviceGetHandleByIndex(0)
        return {"sm_clock_now_mhz": pynvml.nvmlDeviceGetClockInfo(handle, pynvml.NVML_CLOCK_SM),
                "memory_clock_now_mhz": pynvml.nvmlDeviceGetClockInfo(handle, pynvml.NVML_CLOCK_MEM),
                "driver_version": pynvml.nvmlSystemGetDriverVersion()}
    except Exception:  # noqa: BLE001 - optional
        return {}


def kernel_facts(kernel) -> dict:
    """Registers, shared and local memory, and SASS instruction counts of a compiled kernel."""
    import re

    facts = {}
    for sig in list(kernel.overloads):
        overload = kernel.overloads[sig]
        facts["registers"] = int(overload.regs_per_thread)
        facts["local_bytes"] = int(overload.local_mem_per_thread)
        facts["static_shared_bytes"] = int(overload.shared_mem_per_block)
        try:
            sass = kernel.inspect_sass(sig)
            ops = {}
            for op in re.findall(r"\*/\s+(?:@!?U?P\w+\s+)?([A-Z][A-Z0-9_.]+)", sass):
                if re.match(r"(HMMA|LDS|LDG|LDGSTS|STS|STG|LDL|STL|BAR|DEPBAR|FFMA)", op):
                    ops[op] = ops.get(op, 0) + 1
            facts["sass_counts"] = ops
        except Exception as error:  # noqa: BLE001 - nvdisasm missing: the counts are optional
            facts["sass_error"] = str(error)
    return facts


NCU_SHAPE = "2048^3"
NCU_VARIANTS = ["cublas sgemm", "simt big_tile (lesson 6)", "simt cp.async 2 stages",
                "simt cp.async 3 stages", "simt cp.async 4 stages", "warp_tile", "warp_tile cap128",
                "warp_tile 64x64 (4 warps)"]
NCU_METRICS = [
    "gpu__time_duration.sum",
    "smsp__issue_active.avg.pct_of_peak_sustained_active",
    "smsp__inst_executed.sum",
    "sm__warps_active.avg.pct_of_peak_sustained_active",
    "sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active",
    "sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active",
    "l1tex__data_pipe_lsu_wavefronts_mem_shared.sum",
    "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum",
    "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum",
    "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum",
    "smsp__average_warps_issue_stalled_barrier_per_issue_active.ratio",
    "smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio",
    "smsp__average_warps_issue_stalled_short_scoreboard_per_issue_active.ratio",
    "smsp__average_warps_issue_stalled_mio_throttle_per_issue_active.ratio",
    "smsp__average_warps_issue_stalled_math_pipe_throttle_per_issue_active.ratio",
    "smsp__average_warps_issue_stalled_not_selected_per_issue_active.ratio",
    "smsp__average_warps_issue_stalled_wait_per_issue_active.ratio",
    "smsp__average_warps_issue_stalled_dispatch_stall_per_issue_active.ratio",
    "launch__registers_per_thread",
]


def ncu_launch(names: list[str]) -> int:
    """Under ncu: each variant launched once at NCU_SHAPE (kernels compiled before, not profiled)."""
    import cupy as cp
    from numba import cuda

    all_variants = variants()
    m, n, k = SHAPES[NCU_SHAPE]
    generator = cp.random.default_rng(SEED)
    a = generator.standard_normal((m, k), dtype=cp.float32)
    b = generator.standard_normal((k, n), dtype=cp.float32)
    c = cp.empty((m, n), cp.float32)
    for name in names:
        if name == "cublas sgemm":
            cp.matmul(a, b, out=c)
            continue
        kind, tile, _ = all_variants[name]
        _compile(kind, tile)
        from gpu_lessons.kernels import gemm_codegen, tc_codegen

        module = tc_codegen if kind == "tc" else gemm_codegen
        module.launch(tile, cuda.as_cuda_array(a), cuda.as_cuda_array(b), cuda.as_cuda_array(c))
    cp.cuda.runtime.deviceSynchronize()
    return 0


def run_ncu(out: Path, names: list[str], workers: int) -> int:
    """Nsight Compute counters of the SIMT pipeline depths, lesson 6's kernel, cuBLAS and the TF32
    warp tiles at NCU_SHAPE: OUT/tensor_cores_ncu.csv (raw) and a table on stdout."""
    import csv
    import io

    out.mkdir(parents=True, exist_ok=True)
    compile_in_parallel([n for n in names if n != "cublas sgemm"], workers)
    command = ["ncu", "--clock-control", "none", "--csv", "--metrics", ",".join(NCU_METRICS), "-k",
               "regex:gemm|sgemm|cutlass", sys.executable, __file__, "--ncu-launch", json.dumps(names)]
    result = subprocess.run(command, capture_output=True, text=True, cwd=REPO)
    (out / "tensor_cores_ncu.csv").write_text(result.stdout)
    if result.returncode:
        print(result.stdout[-3000:], result.stderr[-3000:])
        return result.returncode
    lines = [line for line in result.stdout.splitlines() if line.startswith('"')]
    table: dict = {}
    for row in csv.DictReader(io.StringIO("\n".join(lines))):
        kernel = f"{row['ID']} {row['Kernel Name'][:40]}"
        table.setdefault(kernel, {})[row["Metric Name"]] = row["Metric Value"]
    order = list(table)
    print("kernels profiled in launch order:", ", ".join(names))
    for metric in NCU_METRICS:
        print(f"{metric[:60]:60s}", " ".join(f"{table[k].get(metric, '-')[:10]:>10s}" for k in order))
    return 0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path, nargs="?")
    parser.add_argument("--record-primitives", action="store_true")
    parser.add_argument("--quick", action="store_true", help="4096^3 only (a smoke run)")
    parser.add_argument("--only", default="", help="comma-separated variant names")
    parser.add_argument("--workers", type=int, default=12)
    parser.add_argument("--compile-worker", default=None)
    parser.add_argument("--names", default=None)
    parser.add_argument("--tf32-child", default=None)
    parser.add_argument("--ncu", action="store_true", help="Nsight Compute counters at NCU_SHAPE instead")
    parser.add_argument("--ncu-launch", default=None, help="(internal) launch these variants once each")
    parser.add_argument("--shapes", default=None)
    args = parser.parse_args(argv)

    if args.compile_worker is not None:
        import gpu_lessons  # noqa: F401

        return compile_worker([int(i) for i in args.compile_worker.split(",") if i], json.loads(args.names))
    if args.tf32_child is not None:
        import gpu_lessons  # noqa: F401

        return cublas_tf32_child(args.tf32_child, json.loads(args.shapes))
    if args.ncu_launch is not None:
        import gpu_lessons  # noqa: F401

        return ncu_launch(json.loads(args.ncu_launch))
    if args.ncu:
        return run_ncu(args.out, [n for n in NCU_VARIANTS if not args.only or n in args.only.split(",")],
                       args.workers)

    started = time.time()
    out = args.out
    out.mkdir(parents=True, exist_ok=True)
    import gpu_lessons

    if gpu_lessons.SIMULATED:
        print("No GPU: this benchmark times kernels on a GPU.", file=sys.stderr)
        return 2
    all_variants = variants()
    names = [n for n in all_variants if not args.only or n in args.only.split(",")]
    shapes = ["4096^3"] if args.quick else list(SHAPES)
    print(f"compiling {len(_build_specs(names))} generated kernels in {args.workers} workers ...", flush=True)
    compile_seconds = compile_in_parallel(names, args.workers)
    print(f"compiled in {compile_seconds:.0f} s", flush=True)

    import cupy as cp
    import numpy as np
    from numba import cuda

    from gpu_lessons.bench import measure
    from gpu_lessons.device import device_info
    from gpu_lessons.kernels import gemm_codegen, tc_codegen
    from gpu_lessons.kernels import tensor_cores as tc
    from gpu_lessons.kernels.util import poison

    report = {"meta": {
        "what": "benchmarks/tensor_cores_gpu.py: lesson 7's kernels checked against float64 and timed beside "
                "cuBLAS SGEMM (CuPy, TF32 off) and cuBLAS TF32 (CUPY_TF32=1, subprocess), same inputs",
        "device": device_info().as_dict(), "clocks": observed_clocks(),
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "git_revision": os.environ.get("GPU_LESSONS_GIT_REVISION", "unknown"),
        "command": " ".join(["python", *sys.argv]), "cupy": cp.__version__,
        "compile_seconds_parallel": round(compile_seconds, 1)}, "errors": {}, "failures": {}}
    out_json = out / "tensor_cores.json"

    def save():
        out_json.write_text(json.dumps(report, indent=1, default=str) + "\n")

    if args.record_primitives:
        sys.path.insert(0, str(REPO / "benchmarks"))
        import record_ptx_primitives

        try:
            record_ptx_primitives.main(["--out", str(out)])
        except Exception:  # noqa: BLE001
            report["failures"]["record primitives"] = traceback.format_exc()
            print(report["failures"]["record primitives"], flush=True)

    def launcher(name):
        kind, tile, _ = all_variants[name]
        if kind == "tc_global":
            return tc.mma_global_launch
        module = tc_codegen if kind == "tc" else gemm_codegen
        return lambda a, b, c, t=tile, mod=module: mod.launch(t, a, b, c)

    launchers = {name: launcher(name) for name in names}
    load_start = time.time()
    try:
        twins = {name for name in names if AWKWARD in all_variants[name][2]}
        report["small_shape_errors"] = check_small_shapes(launchers, twins)
    except Exception:  # noqa: BLE001 - record and go on: the timings of the others still count
        report["failures"]["small shapes"] = traceback.format_exc()
        print(report["failures"]["small shapes"], flush=True)
    report["meta"]["load_and_check_seconds"] = round(time.time() - load_start, 1)
    print(f"loaded and checked in {time.time() - load_start:.0f} s", flush=True)
    save()

    # cuBLAS TF32 in a child process: CUPY_TF32 is read when CuPy is imported
    tf32_file = out / "cublas_tf32.json"
    child = subprocess.Popen([sys.executable, __file__, "--tf32-child", str(tf32_file), "--shapes",
                              json.dumps(shapes)], env={**os.environ, "CUPY_TF32": "1"}, cwd=REPO)
    child.wait()
    tf32 = json.loads(tf32_file.read_text()) if tf32_file.exists() else {}
    report["cublas_tf32"] = tf32

    rows = []
    for shape in shapes:
        m, n, k = SHAPES[shape]
        flops = 2 * m * n * k
        a, b, sample = _inputs(shape)
        c = [cp.empty((m, n), cp.float32) for _ in a]
        timing = measure(lambda s, a=a, b=b, c=c: cp.matmul(a[s], b[s], out=c[s]), input_sets=len(a))
        fp32 = flops / timing.median_ms / 1e9
        error = _relative_error(a[0], b[0], c[0], sample)
        assert error < 1e-5, f"cuBLAS SGEMM error {error}: TF32 on?"
        rows.append({"variant": "cublas sgemm", "shape": shape, "median_ms": timing.median_ms,
                     "min_ms": timing.min_ms, "max_ms": timing.max_ms, "tflops": fp32,
                     "relative_error": error})
        if shape in tf32:
            rows.append({"variant": "cublas tf32", "shape": shape, **{key: tf32[shape][key] for key in (
                "median_ms", "min_ms", "max_ms", "tflops", "relative_error")}})
        da, db, dc = ([cuda.as_cuda_array(x) for x in xs] for xs in (a, b, c))
        for name in names:
            if shape not in all_variants[name][2]:
                continue
            try:
                for x in dc:
                    poison(x)
                launch = launchers[name]
                timing = measure(lambda s, f=launch, x=da, y=db, z=dc: f(x[s], y[s], z[s]), input_sets=len(a))
                if not all(bool(cp.isfinite(x).all()) for x in c):
                    raise AssertionError(f"{name} at {shape} left outputs unwritten (NaN poison remains)")
                error = _relative_error(a[0], b[0], c[0], sample)
                tflops = flops / timing.median_ms / 1e9
                rows.append({"variant": name, "shape": shape, "median_ms": timing.median_ms,
                             "min_ms": timing.min_ms, "max_ms": timing.max_ms, "tflops": tflops,
                             "relative_error": error})
                print(f"  {shape} {name}: {tflops:.1f} TFLOP/s ({tflops / fp32:.2f}x SGEMM), "
                      f"error {error:.2e}", flush=True)
            except Exception:  # noqa: BLE001
                report["failures"][f"{name} {shape}"] = traceback.format_exc()
                print(report["failures"][f"{name} {shape}"], flush=True)
        a = b = c = da = db = dc = None  # free this shape's buffers before the next
        cp.get_default_memory_pool().free_all_blocks()
        report["rows"] = rows
        save()

    # the ceiling: independent MMA chains on registers, several warps per SM
    sms = device_info().sms
    peak = []
    for warps_per_sm, chains in ((4, 8), (8, 8), (16, 8), (32, 8), (64, 8), (8, 4), (8, 16)):
        warps_per_block = min(warps_per_sm, 16)
        blocks = sms * warps_per_sm // warps_per_block
        iterations = max(200, 2_000_000 // (warps_per_sm * chains))
        out_peak = cuda.device_array(blocks * warps_per_block * 32, np.float32)
        launch = tc.peak_kernel(chains)[blocks, 32 * warps_per_block]
        count = np.int64(iterations)
        timing = measure(lambda s, f=launch, o=out_peak, i=count: f(o, i))
        tflops = tc.peak_flops(blocks, warps_per_block, iterations, chains) / timing.median_ms / 1e9
        peak.append({"warps_per_sm": warps_per_sm, "chains": chains, "median_ms": timing.median_ms,
                     "tflops": tflops})
        print(f"  mma.sync ceiling {warps_per_sm} warps/SM x {chains} chains: {tflops:.1f} TFLOP/s",
              flush=True)
    report["mma_peak"] = peak

    kernels = {}
    for name in names:
        kind, tile, _ = all_variants[name]
        try:
            if kind == "tc_global":
                kernels[name] = kernel_facts(tc.mma_global)
            else:
                module = tc_codegen if kind == "tc" else gemm_codegen
                kernels[name] = {"tile": repr(tile), **kernel_facts(module.build(tile))}
        except Exception as error:  # noqa: BLE001
            kernels[name] = {"error": str(error)}
    report["kernels"] = kernels
    report["meta"]["total_seconds"] = round(time.time() - started, 1)
    save()

    import pandas as pd

    table = pd.DataFrame(rows)
    table.to_csv(out / "tensor_cores.csv", index=False)
    wide = table.pivot_table(index="variant", columns="shape", values="tflops")
    print(wide.round(1).to_string())
    print(f"total {time.time() - started:.0f} s; failures: {list(report['failures'])}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
