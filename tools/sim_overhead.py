"""What gpu_lessons' simulator shims and the memory tracer cost (run it on the simulator).

    python tools/sim_overhead.py [--repeats N]

Each workload runs plainly and under ``trace``, first on numba-cuda's simulator as shipped (the
extras removed), then with gpu_lessons' shims installed; the summary gives both against the
simulator as shipped (aims: shims faster than shipped, thanks to ``sim.scheduler``; tracer under
2x the shims). On the 2-core CI machine, best of 3: gemm_tiled 64x64x64 0.37x, a 65,536-float
copy 0.39x of the shipped simulator's time.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass

os.environ.setdefault("GPU_LESSONS_MODE", "sim")
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import numpy as np  # noqa: E402

import gpu_lessons  # noqa: E402,F401  (picks the mode before numba.cuda is imported)
from gpu_lessons.kernels import coalescing, gemm_tiled  # noqa: E402
from gpu_lessons.sim import extras_removed  # noqa: E402
from gpu_lessons.sim.trace import trace  # noqa: E402


@dataclass
class Workload:
    name: str
    kernel: object
    grid: tuple
    block: tuple
    make_args: Callable[[], tuple]


def _gemm_args(size: int = 64):
    rng = np.random.default_rng(0)
    a = rng.standard_normal((size, size), dtype=np.float32)
    b = rng.standard_normal((size, size), dtype=np.float32)
    return a, b, np.zeros((size, size), np.float32)


def _copy_args(n: int = 65_536):
    return np.arange(n, dtype=np.float32), np.zeros(n, np.float32), 0


WORKLOADS = [
    Workload("gemm_tiled 64x64x64", gemm_tiled.gemm_tiled_kernel, gemm_tiled.gemm_tiled_grid(64, 64),
             gemm_tiled.BLOCK, _gemm_args),
    Workload("copy 65,536 floats", coalescing.offset_copy_kernel, (256,), (256,), _copy_args),
]


@dataclass
class Mode:
    name: str
    context: Callable[[], contextlib.AbstractContextManager]


MODES = [Mode("numba-cuda as shipped", extras_removed),
         Mode("with gpu_lessons shims", contextlib.nullcontext)]


def plain(work: Workload) -> float:
    args = work.make_args()
    start = time.perf_counter()
    work.kernel[work.grid, work.block](*args)
    return time.perf_counter() - start


def traced(work: Workload) -> float:
    args = work.make_args()
    start = time.perf_counter()
    trace(work.kernel, work.grid, work.block, *args)
    return time.perf_counter() - start


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3, help="best of N runs of each (default 3)")
    options = parser.parse_args(argv)
    # Modes and workloads interleave within each repeat, so drifts in machine load hit all alike.
    samples: dict[tuple[str, str], tuple[list, list]] = {}
    for _ in range(options.repeats):
        for mode in MODES:
            with mode.context():
                for work in WORKLOADS:
                    plains, traces = samples.setdefault((mode.name, work.name), ([], []))
                    plains.append(plain(work))
                    traces.append(traced(work))
    print(f"{'mode':<24} {'workload':<22} {'plain s':>8} {'traced s':>9} {'ratio':>6}")
    best = {key: (min(p), min(t)) for key, (p, t) in samples.items()}
    for (mode_name, work_name), (base, with_trace) in best.items():
        ratio = with_trace / base
        print(f"{mode_name:<24} {work_name:<22} {base:8.2f} {with_trace:9.2f} {ratio:6.2f}")
    shipped, shimmed = MODES[0].name, MODES[1].name
    print(f"\nbest of {options.repeats}, against numba-cuda's simulator as shipped:")
    for work in WORKLOADS:
        plain_s = best[shipped, work.name][0]
        shims_s, traced_s = best[shimmed, work.name]
        print(f"  {work.name:<22} shims {shims_s / plain_s:5.2f}x   "
              f"tracer (with shims) {traced_s / plain_s:5.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
