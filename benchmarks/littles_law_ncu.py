"""Nsight Compute's view of lesson 2's low-occupancy winners: theoretical and achieved occupancy, the
limiting resource, DRAM and FMA throughput (run on a GPU with ncu on the PATH).

    ncu --clock-control none --csv --page raw --metrics $(python benchmarks/littles_law_ncu.py metrics) \\
        python benchmarks/littles_law_ncu.py launch > OUT/ncu_littles_law.csv

``summarize RAW OUT`` keeps, of ncu's raw CSV, one row per (case, metric) of METRICS
(data/nvidia-h200/ncu_littles_law.csv; the lesson reads it with ``recorded_ncu``).

``launch`` runs each case once, on the lesson's launch shapes (a 256 MiB copy; FMA chains on one block
per SM). A third witness, beside the calculator and the driver, that the copy ran at 16 warps per SM.
"""

from __future__ import annotations

import sys

METRICS = [
    "launch__registers_per_thread", "launch__shared_mem_per_block_dynamic", "launch__block_size",
    "launch__grid_size", "launch__occupancy_limit_registers", "launch__occupancy_limit_shared_mem",
    "launch__occupancy_limit_warps", "launch__occupancy_limit_blocks",
    "sm__maximum_warps_per_active_cycle_pct", "sm__warps_active.avg.pct_of_peak_sustained_active",
    "sm__warps_active.avg.per_cycle_active", "dram__throughput.avg.pct_of_peak_sustained_elapsed",
    "dram__bytes.sum.per_second", "sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active",
    "smsp__inst_executed_pipe_fma.sum", "gpu__time_duration.sum",
    # why one FMA chain per thread stalls (warp state per issued instruction), and which FMA pipe ran it
    "smsp__issue_active.avg.pct_of_peak_sustained_active",
    "smsp__inst_executed_pipe_fmaheavy.sum", "smsp__inst_executed_pipe_fmalite.sum",
    "smsp__average_warps_issue_stalled_wait_per_issue_active.ratio",
    "smsp__average_warps_issue_stalled_math_pipe_throttle_per_issue_active.ratio",
    "smsp__average_warps_issue_stalled_dispatch_stall_per_issue_active.ratio",
    "smsp__average_warps_issue_stalled_not_selected_per_issue_active.ratio",
    "smsp__average_warps_issue_stalled_short_scoreboard_per_issue_active.ratio",
    "smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio",
    "smsp__average_warps_issue_stalled_lg_throttle_per_issue_active.ratio",
]

CASES = [("copy w16 u4", 256, 2), ("copy w16 u24", 256, 8)]  # (variant, block, blocks per SM)
FMA_CASES = [(8, 8), (1, 8), (1, 32), (2, 32)]  # (chains, warps per SM)


def launch() -> None:
    import numpy as np
    from numba import cuda

    from gpu_lessons import device_info, occupancy
    from gpu_lessons.kernels import littles_law as k
    from gpu_lessons.lessons import littles_law as lesson

    limits = occupancy.sm_limits()
    n = 2**26  # 256 MiB per buffer: 4x the L2, and quick to save and restore for ncu's replays
    x = cuda.to_device(np.random.default_rng(0).standard_normal(n, dtype=np.float32))
    out = cuda.device_array_like(x)
    for variant, block, per_sm in CASES:
        f = lesson.parse_variant(variant)
        vector = f["width"] == 16
        shared = 0 if block * per_sm >= 2048 else occupancy.shared_to_limit(block, per_sm, limits)
        k.allow_dynamic_shared(k.copy_ilp(f["unroll"], vector), (x, out), limits.shared_per_block_optin)
        k.copy_ilp_launch(f["unroll"], vector, x, out, block, shared)
    sms = device_info().sms
    for chains, warps in FMA_CASES:
        threads = 32 * min(warps, 32)
        blocks = sms * max(1, warps // 32)
        result = cuda.device_array(blocks * threads, np.float32)
        k.fma_chains_launch(chains, result, blocks, threads, lesson.FMA_TRIPS)
    cuda.synchronize()


def available(metrics: list[str]) -> list[str]:
    """The metrics this ncu knows (an unknown name would stop the whole run)."""
    import subprocess

    try:
        query = subprocess.run(["ncu", "--query-metrics"], capture_output=True, text=True, timeout=20)
        listing = query.stdout
    except (OSError, subprocess.SubprocessError):
        return metrics
    known = {line.split()[0] for line in listing.splitlines() if line.strip()}
    if len(known) < 50:  # the listing did not come: try them all
        return metrics
    return [m for m in metrics if m.split(".")[0] in known]


def case_names() -> list[str]:
    names = [f"{variant}, block {block}, {per_sm} blocks/SM" for variant, block, per_sm in CASES]
    return names + [f"fma c{chains}, {warps} warps/SM" for chains, warps in FMA_CASES]


def summarize(raw: str, out: str) -> None:
    import csv
    import io

    lines = [line for line in open(raw).read().splitlines() if line.startswith('"')]
    header, _units, *launches = list(csv.reader(io.StringIO("\n".join(lines))))
    names = case_names()
    if len(launches) != len(names):
        raise SystemExit(f"{len(launches)} profiled launches for {len(names)} cases")
    with open(out, "w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["case", "kernel", "metric", "value"])
        for name, launch in zip(names, launches, strict=True):
            kernel = launch[header.index("Kernel Name")].split("[")[0]
            for metric in METRICS:
                if metric in header:
                    writer.writerow([name, kernel, metric, launch[header.index(metric)].replace(",", "")])


if __name__ == "__main__":
    if sys.argv[1:2] == ["summarize"]:
        summarize(*sys.argv[2:4])
    elif sys.argv[1:] == ["metrics"]:
        print(",".join(available(METRICS)))
    elif sys.argv[1:] == ["launch"]:
        launch()
    else:
        sys.exit(__doc__)
