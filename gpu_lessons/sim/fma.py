"""A fused multiply-add for the simulator, whose own ``cuda.fma`` rounds twice (a*b, then +c)."""

import threading
from contextlib import contextmanager

import numpy as np

_calls: list | None = None  # [count] while counted() is on
_lock = threading.Lock()


def fused_fma(_module, a, b, c):
    """One rounding, like the GPU's FFMA, for float32 (and narrower) operands.

    The product of two float32 values is exact in float64, so float64 arithmetic then one rounding
    to float32 is the fused result (up to a double-rounding tie, vanishingly rare). float64
    operands keep the simulator's unfused a*b + c: NumPy has no exact float64 FMA.
    """
    if _calls is not None:
        with _lock:
            _calls[0] += 1
    dtype = np.result_type(a, b, c)
    if dtype.itemsize <= 4 and dtype.kind == "f":
        return dtype.type(np.float64(a) * np.float64(b) + np.float64(c))
    return a * b + c


@contextmanager
def counted():
    """Count the fused ``cuda.fma`` calls the simulator makes inside the block: yields a list whose
    one item is the count so far (an exercise checks that the FMAs are done, not folded away)."""
    global _calls
    _calls = [0]
    try:
        yield _calls
    finally:
        _calls = None


_unfused = None


def install() -> None:
    global _unfused
    from numba.cuda.simulator.kernelapi import FakeCUDAModule  # the simulator, only when patched

    if FakeCUDAModule.fma is not fused_fma:
        _unfused = FakeCUDAModule.fma
    FakeCUDAModule.fma = fused_fma


def uninstall() -> None:
    from numba.cuda.simulator.kernelapi import FakeCUDAModule  # the simulator, only when patched

    if _unfused is not None:
        FakeCUDAModule.fma = _unfused
