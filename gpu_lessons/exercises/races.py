"""Shared-memory races in a learner's kernel, found on the simulator whatever order it ran threads in.

Each thread's barrier count (``counted_barriers``) is its epoch: accesses of two threads of a block in
the same epoch have no ``cuda.syncthreads()`` between them. ``watched_shared`` makes the float shared
arrays of a launch start as NaN (a GPU leaves them undefined) and note every scalar write and read
with the thread and its epoch; ``first_race`` finds an entry that one thread writes and another
reads in the same epoch: a read that may see the value before or after the write. ``first_write_race``
finds an entry that threads of two different warps both write in the same epoch: which value stays
depends on which warp runs first (warps are not ordered without a barrier).
"""

from __future__ import annotations

import sys
import threading
from contextlib import contextmanager

import numpy as np
from numba.cuda.simulator.kernelapi import FakeCUDAShared
from numba.np import numpy_support

from ..sim import scheduler


@contextmanager
def counted_barriers():
    """Count, per simulated thread, the ``cuda.syncthreads()`` it reaches in one launch: (block index,
    thread index) -> barriers. A thread that reaches none is missing."""
    from numba.cuda.simulator.kernel import BlockThread

    from ..sim import install

    install()  # in GPU mode trace() installs the extras later: the wrapper restored must be theirs
    counts: dict = {}
    lock = threading.Lock()
    original = BlockThread.syncthreads

    def syncthreads(self):
        key = (tuple(self.blockIdx), tuple(self.threadIdx))
        with lock:
            counts[key] = counts.get(key, 0) + 1
        return original(self)

    BlockThread.syncthreads = syncthreads
    try:
        yield counts
    finally:
        BlockThread.syncthreads = original


def _thread_key() -> tuple:
    thread = scheduler.current_thread()
    return (tuple(getattr(thread, "blockIdx", (0, 0, 0))), tuple(getattr(thread, "threadIdx", (0, 0, 0))))


def _scalar_index(index):
    """An int, or a tuple of ints (a[i, j]); None for slices and arrays (not noted)."""
    if isinstance(index, int | np.integer):
        return int(index)
    if isinstance(index, tuple) and all(isinstance(i, int | np.integer) for i in index):
        return tuple(int(i) for i in index)
    return None


class _Log(list):
    """An array's accesses, plus each noted thread's warp in its block (thread key -> warp index)."""

    def __init__(self, *args):
        super().__init__(*args)
        self.warps: dict = {}


def _warp_index(thread) -> int | None:
    """The calling simulated thread's warp in its block (linear thread id // 32), or None if unknown."""
    linear = getattr(thread, "thread_id", None)
    return None if linear is None else int(linear) // 32


class Watched(np.ndarray):
    """A simulated shared array that notes each scalar write and read: (op, index, thread, epoch)."""

    def __array_finalize__(self, obj):
        self.log = getattr(obj, "log", None)
        self.barriers = getattr(obj, "barriers", None)
        self.name = getattr(obj, "name", "shared")

    def _note(self, op, index):
        index = _scalar_index(index)
        if self.log is None or index is None:
            return
        key = _thread_key()
        self.log.append((op, index, key, self.barriers.get(key, 0)))
        warps = getattr(self.log, "warps", None)
        if warps is not None and key not in warps:
            warps[key] = _warp_index(scheduler.current_thread())

    def __setitem__(self, index, value):
        super().__setitem__(index, value)
        self._note("w", index)

    def __getitem__(self, index):
        self._note("r", index)
        return super().__getitem__(index)


_LOCK = threading.Lock()


def _variable_name(frame) -> str:
    """The name a ``cuda.shared.array`` line assigns (``a_tile = cuda.shared.array(...)``), if any."""
    import linecache

    line = linecache.getline(frame.f_code.co_filename, frame.f_lineno)
    left = line.split("=", 1)[0].strip() if "=" in line else ""
    return left if left.isidentifier() else "shared"


@contextmanager
def watched_shared(barriers: dict | None = None, logs: list | None = None):
    """On the simulator, new float shared arrays start as NaN, so that a read of an entry no thread
    wrote shows in the result. With ``barriers`` (``counted_barriers``' counts) and ``logs`` (a list),
    each float array also notes its accesses (``Watched``): (name, log) is appended to ``logs``.
    (The simulator runs a launch's blocks one after another on the same arrays.)"""
    original = FakeCUDAShared.array

    def array(self, shape, dtype, alignment=None):
        if shape == 0 or alignment is not None:
            return original(self, shape, dtype, alignment)
        caller = sys._getframe(1)
        key = (caller.f_code.co_filename, caller.f_lineno)
        plain = isinstance(dtype, (np.dtype, type))
        np_dtype = np.dtype(dtype if plain else numpy_support.as_dtype(dtype))
        with _LOCK:
            res = self._allocations.get(key)
            if res is None:
                res = np.empty(shape, np_dtype)
                if np_dtype.kind == "f":
                    res.fill(np.nan)
                    if logs is not None:
                        res = res.view(Watched)
                        res.log, res.barriers, res.name = _Log(), barriers, _variable_name(caller)
                        logs.append((res.name, res.log))
                self._allocations[key] = res
        return res

    FakeCUDAShared.array = array
    try:
        yield
    finally:
        FakeCUDAShared.array = original


def first_race(log: list):
    """The first (read, write) pair of one block's threads on one entry in the same epoch, as
    (index, reader, writer, overwritten), or None. ``overwritten``: the reader itself writes this array
    later in the same epoch (in program order), so the write that races with its read is the next
    round's: the barrier missing is the one after the reads (else, the one after the writes)."""
    writes: dict = {}
    last_write: dict = {}  # (thread, epoch) -> position of its last write to this array
    for position, (op, index, thread, epoch) in enumerate(log):
        if op == "w":
            writes.setdefault((index, thread[0], epoch), []).append(thread)
            last_write[(thread, epoch)] = position
    for position, (op, index, thread, epoch) in enumerate(log):
        if op != "r":
            continue
        for writer in writes.get((index, thread[0], epoch), ()):
            if writer != thread:
                overwritten = last_write.get((thread, epoch), -1) > position
                return index, thread, writer, overwritten
    return None


def first_write_race(log: list):
    """The first entry that threads of two different warps of one block write in the same epoch (no
    barrier between the writes), as (index, first writer, second writer), or None. Lanes of one warp
    are left alone (a warp's lanes writing one word together is how warp-synchronous code stores)."""
    warps = getattr(log, "warps", {})
    first: dict = {}  # (index, block, epoch) -> the first writer
    for op, index, thread, epoch in log:
        if op != "w":
            continue
        key = (index, thread[0], epoch)
        writer = first.setdefault(key, thread)
        if writer != thread and warps.get(writer) is not None and warps.get(writer) != warps.get(thread):
            return index, writer, thread
    return None


def describe(thread, dims: int = 1) -> str:
    """'thread 3 of block 0'; with dims=2, 'thread (3, 1) of block (0, 1)' (x, y)."""
    block, tid = thread
    if dims == 1:
        return f"thread {tid[0]} of block {block[0]}"
    return f"thread ({tid[0]}, {tid[1]}) of block ({block[0]}, {block[1]})"
