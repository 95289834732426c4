"""Timing on a GPU, done properly: CUDA events, warm-up, median of many runs, no launch gaps.

``measure(launch)`` times ``launch(k)`` (k = which input set, for rotation) and returns a ``Timing``.
Before every timed launch it queues a short spin kernel, so that while the GPU spins, Python queues
the start event, the launch and the stop event: the events then time the kernel, not Python's
launch overhead (~10-30 us per numba launch, several % of a 1 ms kernel). The spin waits on the GPU's
clock: ``cuda.nanosleep`` alone may end at once (benchmarks/bench_spin_check.py).

On the simulator nothing can be timed: ``measure`` raises ``TimingUnavailable`` and the lessons
show recorded measurements instead.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable
from dataclasses import dataclass

from . import SIMULATED

WARMUP_RUNS = 3
TIMED_RUNS = 25
SPIN_NS = 200_000  # longer than the Python work of one timed launch
L2_MULTIPLE = 4  # rotate inputs until one pass touches at least this many L2s


class TimingUnavailable(RuntimeError):
    """Raised on the simulator: its kernels run as Python threads, so a time would mean nothing."""


@dataclass(frozen=True)
class Timing:
    median_ms: float
    min_ms: float
    max_ms: float
    runs: int

    @property
    def spread(self) -> float:
        """(max - min) / median: differences between variants smaller than this are noise."""
        return (self.max_ms - self.min_ms) / self.median_ms


def input_sets_needed(bytes_per_set: int, l2_bytes: int, most: int = 64) -> int:
    """How many input sets to rotate through so that repeated runs do not time the L2 cache."""
    if bytes_per_set <= 0:
        raise ValueError(f"bytes_per_set must be positive, got {bytes_per_set}")
    return max(1, min(most, -(-L2_MULTIPLE * l2_bytes // bytes_per_set)))


def summarize(samples_ms: list[float]) -> Timing:
    if not samples_ms:
        raise ValueError("no timing samples")
    if min(samples_ms) <= 0:
        raise ValueError(f"non-positive time in samples: {min(samples_ms)}")
    return Timing(statistics.median(samples_ms), min(samples_ms), max(samples_ms), len(samples_ms))


def throughput(bytes_moved: int, flops: int, timing: Timing) -> dict:
    seconds = timing.median_ms / 1e3
    return {"gbps": bytes_moved / seconds / 1e9, "gflops": flops / seconds / 1e9}


if SIMULATED:

    def measure(launch: Callable[[int], None], input_sets: int = 1, **_) -> Timing:
        raise TimingUnavailable(
            "timings are unavailable on the numba-cuda simulator (kernels run as Python threads); "
            "the lessons show measurements recorded on a real GPU instead (see data/)"
        )

else:
    from llvmlite import ir
    from numba import cuda, uint64
    from numba.cuda import types
    from numba.cuda.extending import intrinsic

    @intrinsic
    def global_timer_ns(typingctx):
        """The GPU's nanosecond clock (PTX %globaltimer)."""

        def codegen(context, builder, signature, args):
            read = ir.InlineAsm(ir.FunctionType(ir.IntType(64), []), "mov.u64 $0, %globaltimer;", "=l",
                                side_effect=True)
            return builder.call(read, [])

        return types.uint64(), codegen

    @cuda.jit
    def _spin(ns):
        # One thread waits ns nanoseconds by the clock. nanosleep alone does not do: PTX promises
        # only a sleep between 0 and twice the request, and a short spin lets launch overhead
        # into the timing (seen on the H200: numba GEMM launches timed up to 0.1 ms slow).
        start = global_timer_ns()
        while global_timer_ns() - start < uint64(ns):
            cuda.nanosleep(1000)

    def measure(
        launch: Callable[[int], None],
        input_sets: int = 1,
        warmup: int = WARMUP_RUNS,
        runs: int = TIMED_RUNS,
    ) -> Timing:
        """Median of `runs` event-timed calls of ``launch(k)``, k cycling over the input sets.

        The warm-up visits every input set, so every output has been written once when the
        caller checks them all after timing.
        """
        for k in range(max(warmup, input_sets)):
            launch(k % input_sets)
        cuda.synchronize()
        start, stop = cuda.event(), cuda.event()
        samples = []
        for r in range(runs):
            _spin[1, 1](SPIN_NS)
            start.record()
            launch(r % input_sets)
            stop.record()
            stop.synchronize()
            samples.append(cuda.event_elapsed_time(start, stop))
        return summarize(samples)
