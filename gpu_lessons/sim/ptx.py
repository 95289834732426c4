"""The simulator's side of ``gpu_lessons.ptx``: asynchronous copies and TF32 tensor-core MMA.

Installed at run time, like the warp primitives (``warp``): nothing of numba-cuda is patched here,
except while a ``cp_async_log()`` is open (below).
The kernel calls the functions below (``gpu_lessons.ptx`` hands them out in simulator mode, and as
the tracer's Python twins of the compiled intrinsics in GPU mode).

cp.async
--------
``cp_async4/8/16(dst, dst_index, src, src_index, src_bytes)`` copies ``src_bytes`` bytes (0 up to
the copy size) from the global array ``src`` at element ``src_index`` to the shared array ``dst`` at
element ``dst_index``, and fills the rest of the copy with zero bytes (PTX's ``src-size``: the edge
guard of a tile load). The source is read at issue; the bytes land in shared memory only when the
issuing thread's ``cp_async_wait_group`` / ``cp_async_wait_all`` says its group is complete, as
PTX promises no earlier. A kernel that reads the shared array before it waits (or before the
barrier that follows everyone's wait) sees what was there before, like the race it is on a GPU.
Groups: ``cp_async_commit_group()`` closes the copies issued since the last commit into a group;
``cp_async_wait_group(n)`` lands every group but the ``n`` most recent; ``cp_async_wait_all()``
commits and lands everything. Copies never committed are not waited for (PTX: the same).
The traffic tracer counts each copy where it is issued, as one global read of ``src_bytes`` (none
when 0) and one shared write of the whole copy (Nsight Compute files these under its ``ldgsts``
metrics rather than plain loads and stores). ``cp_async_log()`` records, for the launches run inside
it, every copy issued and every copy landed (so a check can tell a cp.async tile from plain stores).
While one is open, the simulator's ``syncthreads`` (and a ``syncwarp`` that every thread of a
one-warp block joins, as good a barrier there) and the tracer's shared arrays also note each
barrier a thread passes and each shared element it reads or stores to, so that ``CpAsyncLog.race()`` can tell,
whatever order the simulator's threads happened to run in, whether a read (or a plain store) and a
copy to the same bytes by another thread are ordered by a barrier, and whether a thread stores into
bytes its own copy still has in flight (reads and stores are seen only under ``sim.trace``).

mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32
--------------------------------------------------
``mma_tf32(a0, a1, a2, a3, b0, b1, c0, c1, c2, c3) -> (d0, d1, d2, d3)`` is a warp collective: the
32 lanes of a full warp each bring their fragment registers, and each gets its part of
D = A (16x8) B (8x8) + C (16x8). Fragment layout (PTX ISA, "Matrix Fragments for mma.m16n8k8" with
.tf32), with ``g = lane >> 2`` (groupID) and ``t = lane % 4`` (threadID_in_group):

    a0 = A[g, t]    a1 = A[g+8, t]    a2 = A[g, t+4]    a3 = A[g+8, t+4]
    b0 = B[t, g]    b1 = B[t+4, g]
    c0 = C[g, 2t]   c1 = C[g, 2t+1]   c2 = C[g+8, 2t]   c3 = C[g+8, 2t+1]   (D likewise)

The arithmetic is ``HOPPER_TF32`` (``MmaModel``), fitted to outputs recorded on an H200
(``data/nvidia-h200/checks/ptx_primitives.npz``, cases in ``ptx_cases``):

* The fragment layout above: exact (integer cases, any summation order, all 4,096 outputs equal).
* Operands that were not rounded first (``cvt_rna_tf32``) are cut: the tensor cores ignore their 13
  low bits (truncation toward zero). Rounding them to nearest instead misses the H200 by up to
  2^-9 of the result's scale; truncation, by at most 2^-23 (next point).
* The sum: the 8 exact products and C added at once, each cut to 26 bits below the largest term's
  leading bit, the total rounded toward zero to float32. No model of this family (1, 2, 4 or 8
  products per step, 22 to 29 bits, toward zero or to nearest, C aligned with the products or
  after them) reproduces every bit: this one is bit-identical on 76 % (sums that cancel) to 95 %
  of random outputs and within 2^-23 (|A||B| + |C|) of the H200 on every element recorded, which
  is what ``tests/test_sim_ptx.py`` holds it to. It is a fit to outputs, not NVIDIA's description
  of the hardware: the sum is not plain FP32 arithmetic (no order of float32 additions matches).
"""

from __future__ import annotations

import itertools
import os
import sys
from collections import deque
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

import numpy as np

from . import recorder, scheduler, warp

__all__ = [
    "HOPPER_TF32", "MmaModel", "a_fragment", "b_fragment", "c_fragment", "cp_async4", "cp_async8",
    "CpAsyncLog", "cp_async16", "cp_async_commit_group", "cp_async_log", "cp_async_wait_all",
    "cp_async_wait_group", "cvt_rna_tf32",
    "mma_m16n8k8", "mma_outputs", "mma_tf32", "mmas_completed", "tf32_rna", "tf32_truncate",
]

MMA_KIND = "mma_sync"
TF32_DROPPED_BITS = 13  # float32 keeps 23 fraction bits, TF32 10
_LOW_MASK = np.uint32((1 << TF32_DROPPED_BITS) - 1)

# --- Fragment layout ------------------------------------------------------------------------------


def a_fragment(lane: int) -> list[tuple[int, int]]:
    """(row, column) of A that a0, a1, a2, a3 of ``lane`` hold."""
    g, t = lane >> 2, lane & 3
    return [(g, t), (g + 8, t), (g, t + 4), (g + 8, t + 4)]


def b_fragment(lane: int) -> list[tuple[int, int]]:
    """(row, column) of B that b0, b1 of ``lane`` hold."""
    g, t = lane >> 2, lane & 3
    return [(t, g), (t + 4, g)]


def c_fragment(lane: int) -> list[tuple[int, int]]:
    """(row, column) of C (and D) that c0..c3 (d0..d3) of ``lane`` hold."""
    g, t = lane >> 2, lane & 3
    return [(g, 2 * t), (g, 2 * t + 1), (g + 8, 2 * t), (g + 8, 2 * t + 1)]


# --- TF32 -----------------------------------------------------------------------------------------


def _bits(x) -> np.ndarray:
    return np.asarray(x, dtype=np.float32).view(np.uint32)


def tf32_truncate(x) -> np.ndarray:
    """The float32 values with their 13 low fraction bits cleared (what TF32 keeps, rounded toward 0)."""
    return (_bits(x) & ~_LOW_MASK).view(np.float32)


def tf32_rna(x) -> np.ndarray:
    """PTX ``cvt.rna.tf32.f32``: to 10 fraction bits, to nearest, ties away from zero (the 13 low
    bits cleared). Infinities and NaN have their 13 low bits cleared, as the H200 does (so a NaN
    whose payload lives in those bits becomes an infinity: recorded, case ``cvt_rna_tf32``)."""
    bits = _bits(x)
    finite = (bits & np.uint32(0x7F800000)) != np.uint32(0x7F800000)
    half = np.where(finite, np.uint32(1 << (TF32_DROPPED_BITS - 1)), np.uint32(0))
    return ((bits + half) & ~_LOW_MASK).astype(np.uint32).view(np.float32)


# --- The MMA's arithmetic ------------------------------------------------------------------------


@dataclass(frozen=True)
class MmaModel:
    """How a tensor core adds up D = A B + C, one output element at a time.

    ``conversion``: how a float32 operand becomes TF32 ("truncate": its low 13 bits are ignored;
    "rna": rounded to nearest). ``block``: how many products (in k order) one fused step adds
    together with the running sum. ``fraction_bits``: in a step, every term is cut (toward zero)
    to a multiple of 2^(e - fraction_bits), e the exponent of the step's largest term, and the
    cut terms are added exactly. ``rounding``: the step's sum to float32, "rz" (toward zero) or "rne".
    """

    conversion: str = "truncate"
    block: int = 4
    fraction_bits: int = 24
    rounding: str = "rz"

    def convert(self, x) -> np.ndarray:
        return tf32_truncate(x) if self.conversion == "truncate" else tf32_rna(x)


HOPPER_TF32 = MmaModel(conversion="truncate", block=8, fraction_bits=26, rounding="rz")
MODEL_TOLERANCE = 2.0**-23  # measured: |simulator - H200| <= this x (|A||B| + |C|), per element


def _to_float32(values: np.ndarray, rounding: str) -> np.ndarray:
    """Exact float64 values to float32, to nearest even or toward zero."""
    nearest = values.astype(np.float32)
    if rounding == "rne":
        return nearest
    away = np.abs(nearest.astype(np.float64)) > np.abs(values)
    return np.where(away, np.nextafter(nearest, np.float32(0)), nearest).astype(np.float32)


def fused_step(running: np.ndarray, products: np.ndarray, model: MmaModel) -> np.ndarray:
    """One fused step: ``running`` (n,) float32 plus the exact ``products`` (n, block) float64."""
    terms = np.concatenate([running.astype(np.float64)[:, None], products], axis=1)
    finite = np.isfinite(terms).all(axis=1)
    magnitude = np.abs(np.where(np.isfinite(terms), terms, 0.0))
    _, exponent = np.frexp(magnitude)  # x = m 2^e, 0.5 <= m < 1: the leading bit is 2^(e-1)
    lead = np.where(magnitude > 0, exponent - 1, -10_000).max(axis=1)
    quantum = np.ldexp(1.0, (lead - model.fraction_bits).clip(-1074, None))[:, None]
    cut = np.trunc(np.where(np.isfinite(terms), terms, 0.0) / quantum) * quantum
    exact_sum = np.where(finite, cut.sum(axis=1), terms.sum(axis=1))
    return _to_float32(exact_sum, model.rounding)


def _mma(a: np.ndarray, b: np.ndarray, c: np.ndarray, model: MmaModel) -> np.ndarray:
    """D = A B + C for (T, R, 8) A, (T, 8, 8) B and (T, R, 8) C, row by row as the tensor core."""
    a = model.convert(a).astype(np.float64)
    b = model.convert(b).astype(np.float64)
    running = c.reshape(-1).copy()
    # products[tile, i, j, k] = A[i, k] B[k, j], exact (11 x 11 significant bits)
    products = (a[:, :, None, :] * np.swapaxes(b, 1, 2)[:, None, :, :]).reshape(-1, 8)
    for first in range(0, 8, model.block):
        running = fused_step(running, products[:, first:first + model.block], model)
    return running.reshape(c.shape)


def mma_m16n8k8(a, b, c, model: MmaModel = HOPPER_TF32) -> np.ndarray:
    """D = A B + C for m16n8k8 TF32 MMAs, as the H200's tensor cores compute it: float32 (16, 8),
    or (T, 16, 8) for T independent products given (T, 16, 8), (T, 8, 8), (T, 16, 8)."""
    a = np.asarray(a, np.float32)
    batch = a.shape[:-2]
    d = _mma(a.reshape(-1, 16, 8), np.asarray(b, np.float32).reshape(-1, 8, 8),
             np.asarray(c, np.float32).reshape(-1, 16, 8), model)
    return d.reshape(*batch, 16, 8)


ROWS_AT_ONCE = 4  # NumPy lets go of the GIL on arrays of 500+ elements; inside a simulated kernel
# that hands the CPU to the block's other threads for a whole switch interval (5 ms) each time


_MMAS = [0]  # warp-level MMAs completed by simulated kernels
_MMA_OUTPUTS: deque = deque(maxlen=64)  # the D (16x8 float32) of the latest MMAs, oldest first


def mmas_completed() -> int:
    """How many warp-level ``mma_tf32`` the simulator has completed so far (a check's before/after)."""
    return _MMAS[0]


def mma_outputs(count: int) -> list[np.ndarray]:
    """The D (16x8 float32, copies) of the ``count`` latest simulated MMAs, oldest first (up to 64):
    what the tensor core returned to the lanes, so that a check can tell it reached memory."""
    if not 0 <= count <= _MMA_OUTPUTS.maxlen:
        raise ValueError(f"mma_outputs: 0..{_MMA_OUTPUTS.maxlen} MMAs are kept, asked for {count}")
    return [d.copy() for d in list(_MMA_OUTPUTS)[len(_MMA_OUTPUTS) - count:]] if count else []


def _complete_mma(arrivals) -> None:
    _MMAS[0] += 1
    a = np.empty((16, 8), np.float32)
    b = np.empty((8, 8), np.float32)
    c = np.empty((16, 8), np.float32)
    for arrival in arrivals:
        values = arrival.payload
        for (row, col), value in zip(a_fragment(arrival.lane), values[0:4], strict=True):
            a[row, col] = value
        for (row, col), value in zip(b_fragment(arrival.lane), values[4:6], strict=True):
            b[row, col] = value
        for (row, col), value in zip(c_fragment(arrival.lane), values[6:10], strict=True):
            c[row, col] = value
    step = ROWS_AT_ONCE
    d = np.concatenate([_mma(a[None, r:r + step], b[None], c[None, r:r + step], HOPPER_TF32)[0]
                        for r in range(0, 16, step)])
    _MMA_OUTPUTS.append(d.copy())
    for arrival in arrivals:
        arrival.result = tuple(d[row, col] for row, col in c_fragment(arrival.lane))


def mma_tf32(a0, a1, a2, a3, b0, b1, c0, c1, c2, c3):
    """``mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32``: every lane of a full warp calls it
    with its fragments (see the module doc) and gets (d0, d1, d2, d3) as float32."""
    thread, block = warp._current_lane("mma_tf32")
    warp_index = thread.thread_id // warp.WARP_SIZE
    if block.lanes_in_warp(warp_index) != warp.WARP_SIZE:
        raise warp.WarpMaskError(
            f"{block.describe(thread)}: mma_tf32 needs all 32 lanes of a warp (mma.sync.aligned), "
            f"but this block of {block.thread_count} threads leaves warp {warp_index} "
            f"{block.lanes_in_warp(warp_index)} lanes")
    payload = tuple(np.float32(v) for v in (a0, a1, a2, a3, b0, b1, c0, c1, c2, c3))
    return warp._collective(MMA_KIND, warp.FULL_MASK, payload, sys._getframe(1)).result


def cvt_rna_tf32(x):
    """``cvt.rna.tf32.f32``: x rounded to TF32 (nearest, ties away from zero), as a float32."""
    return tf32_rna(np.float32(x))[()]


# --- cp.async -------------------------------------------------------------------------------------

_STATE = "_gpu_lessons_cp_async"  # on each simulated thread: [uncommitted copies, committed groups]


@dataclass
class CpAsyncLog:
    """The simulated cp.async copies of the launches run inside ``cp_async_log()``: ``issued`` holds
    (thread id, dst byte offset, copy size, src_bytes) per copy as issued; ``landed`` holds (dst array
    address, dst byte offset, copy size) per copy as a wait landed it in shared memory; ``waits`` holds
    (thread id, groups still in flight after it, copies still in flight after it, copies in flight
    before it) per wait (a group committed with no copy in it counts as a group, not as a copy).
    ``events`` holds, in each thread's order, (kind, thread id, barriers it had passed, its event number,
    byte address, size, copy id) for kind "issue", "land" (at the issuing thread's wait) and "read" (a
    shared element, under the tracer) and "write" (a store to a shared element, under the tracer)."""

    issued: list = field(default_factory=list)
    landed: list = field(default_factory=list)
    waits: list = field(default_factory=list)
    events: list = field(default_factory=list)
    barriers: dict = field(default_factory=dict)  # thread id -> barriers passed
    counts: dict = field(default_factory=dict)  # thread id -> events noted

    def landed_bytes(self) -> set[int]:
        """The byte offsets (in their shared arrays) that landed copies wrote."""
        return {offset + i for _, offset, size in self.landed for i in range(size)}

    def note(self, kind: str, thread: int, address: int, size: int, copy: int = -1) -> None:
        number = self.counts.get(thread, 0)
        self.counts[thread] = number + 1
        self.events.append((kind, thread, self.barriers.get(thread, 0), number, address, size, copy))

    def race(self) -> tuple[int, int, str] | None:
        """(reading or storing thread, copying thread, what) of the first read of (or plain store to)
        bytes that a cp.async copy writes with no barrier between them, or None. A read or store by
        another thread is ordered with a copy only if a barrier separates it from the copy's issue
        (before) or from the wait that landed it (after); the copying thread's own read or store is a
        race if it comes between the two."""
        copies: dict[int, list] = {}
        by_word: dict[int, list[int]] = {}
        for kind, thread, barriers, number, address, size, copy in self.events:
            if kind == "issue":
                copies[copy] = [thread, barriers, number, float("inf"), float("inf")]
                for word in range(address, address + size, 4):
                    by_word.setdefault(word, []).append(copy)
            elif kind == "land":
                copies[copy][3:] = [barriers, number]
        for kind, thread, barriers, number, address, _size, _ in self.events:
            if kind not in ("read", "write"):
                continue
            for copy in by_word.get(address - address % 4, ()):
                owner, issued_at, issue_number, landed_at, land_number = copies[copy]
                if owner == thread:
                    if issue_number < number < land_number:
                        if kind == "read":
                            return thread, owner, "reads its own copy before its wait landed it"
                        return thread, owner, ("stores into bytes its own copy is still writing, before "
                                               "the wait that lands it")
                elif issued_at <= barriers <= landed_at:
                    landed = "" if landed_at != float("inf") else " (no wait landed that copy)"
                    return thread, owner, f"no barrier between the {kind} and the copy{landed}"
        return None


_LOGS: list[CpAsyncLog] = []  # the open cp_async_log() blocks (nested blocks each see every copy)
_COPY_IDS = itertools.count()
_HOOKED: dict = {}  # what the open logs patched: name -> the original


def _current_id() -> int:
    return scheduler.current_thread().thread_id


def _hook() -> None:
    """Note barriers (the simulator's syncthreads) and shared reads (the tracer's arrays) in the logs."""
    from numba.cuda.simulator.kernel import BlockThread

    sync, getitem = BlockThread.syncthreads, recorder.TracedSharedArray.__getitem__
    setitem = recorder.TracedSharedArray.__setitem__
    _HOOKED.update(sync=sync, getitem=getitem, setitem=setitem)

    def syncthreads(self):
        sync(self)
        for log in _LOGS:
            log.barriers[self.thread_id] = log.barriers.get(self.thread_id, 0) + 1

    def note(kind, array, idx):
        if isinstance(idx, (int, np.integer)) and array._ary.ndim == 1 and _LOGS:
            size = array._ary.itemsize
            address = array._ary.__array_interface__["data"][0] + (int(idx) % len(array._ary)) * size
            thread = _current_id()
            for log in _LOGS:
                log.note(kind, thread, address, size)

    def read(self, idx):
        value = getitem(self, idx)
        note("read", self, idx)
        return value

    def write(self, idx, value):
        setitem(self, idx, value)
        note("write", self, idx)

    def complete_syncwarp(arrivals):
        _HOOKED["syncwarp"](arrivals)
        block = getattr(arrivals[0].thread._manager, warp._BLOCK_ATTR)
        if len(arrivals) == block.thread_count:  # every thread of a one-warp block: a barrier
            for log in _LOGS:
                for arrival in arrivals:
                    thread = arrival.thread.thread_id
                    log.barriers[thread] = log.barriers.get(thread, 0) + 1

    _HOOKED["syncwarp"] = warp._COMPLETERS[warp.SYNCWARP]
    BlockThread.syncthreads = syncthreads
    recorder.TracedSharedArray.__getitem__ = read
    recorder.TracedSharedArray.__setitem__ = write
    warp._COMPLETERS[warp.SYNCWARP] = complete_syncwarp


def _unhook() -> None:
    from numba.cuda.simulator.kernel import BlockThread

    BlockThread.syncthreads = _HOOKED.pop("sync")
    recorder.TracedSharedArray.__getitem__ = _HOOKED.pop("getitem")
    recorder.TracedSharedArray.__setitem__ = _HOOKED.pop("setitem")
    warp._COMPLETERS[warp.SYNCWARP] = _HOOKED.pop("syncwarp")


@contextmanager
def cp_async_log() -> Iterator[CpAsyncLog]:
    """Record every cp.async copy issued and landed by simulated kernels while the block runs (on a
    GPU: by kernels run through ``gpu_lessons.sim.trace``, whose Python twins are these functions),
    and the barriers and shared reads that order them (see the module doc)."""
    log = CpAsyncLog()
    if not _LOGS:
        _hook()
    _LOGS.append(log)
    try:
        yield log
    finally:
        _LOGS.remove(log)
        if not _LOGS:
            _unhook()


def _raw(array) -> np.ndarray:
    inner = getattr(array, "_item", array)
    return getattr(inner, "_ary", inner)


def _thread_state(name: str) -> list:
    thread = scheduler.current_thread()
    if getattr(thread, "thread_id", None) is None or not hasattr(thread, "_manager"):
        raise RuntimeError(f"{name}() can only be called inside a kernel on the simulator")
    state = thread.__dict__.get(_STATE)
    if state is None:
        state = thread.__dict__[_STATE] = [[], deque()]
    return state


def _copy(size: int, dst, dst_index, src, src_index, src_bytes) -> None:
    name = f"cp_async{size}"
    src_bytes = int(src_bytes)
    if not 0 <= src_bytes <= size:
        raise ValueError(f"{name}: src_bytes must be 0..{size}, got {src_bytes}")
    dst_raw, src_raw = _raw(dst), _raw(src)
    for label, raw, index in (("dst", dst_raw, dst_index), ("src", src_raw, src_index)):
        if raw.ndim != 1 or raw.dtype.itemsize != 4:
            raise TypeError(f"{name}: {label} must be a 1-D array of 4-byte elements, got "
                            f"{raw.dtype} with shape {raw.shape}")
        offset = int(index) * 4
        if offset % size:
            raise ValueError(f"{name}: {label} element {int(index)} is not {size}-byte aligned "
                             f"(the index must be a multiple of {size // 4})")
    dst_offset, src_offset = int(dst_index) * 4, int(src_index) * 4
    if not 0 <= dst_offset <= dst_raw.nbytes - size:
        raise IndexError(f"{name}: dst elements {int(dst_index)}.. are outside the shared array")
    data = np.zeros(size, np.uint8)
    if src_bytes:
        if not 0 <= src_offset <= src_raw.nbytes - src_bytes:
            raise IndexError(f"{name}: src elements {int(src_index)}.. are outside the array")
        data[:src_bytes] = src_raw.view(np.uint8)[src_offset:src_offset + src_bytes]
    if recorder.active() is not None:  # counted where issued: a global read and a shared write
        from . import trace

        if src_bytes:
            trace.note_vector_access(src, int(src_index), -(-src_bytes // 4), False)
        trace.note_vector_access(dst, int(dst_index), size // 4, True)
    state = _thread_state(name)
    thread, copy = _current_id(), next(_COPY_IDS)
    for log in _LOGS:
        log.issued.append((thread, dst_offset, size, src_bytes))
        log.note("issue", thread, dst_raw.__array_interface__["data"][0] + dst_offset, size, copy)
    state[0].append((dst_raw, dst_offset, data, copy))


def cp_async4(dst, dst_index, src, src_index, src_bytes):
    """``cp.async.ca.shared.global`` of 4 bytes (``src_bytes`` of them read, the rest zero)."""
    _copy(4, dst, dst_index, src, src_index, src_bytes)


def cp_async8(dst, dst_index, src, src_index, src_bytes):
    """``cp.async.ca.shared.global`` of 8 bytes; both indices even."""
    _copy(8, dst, dst_index, src, src_index, src_bytes)


def cp_async16(dst, dst_index, src, src_index, src_bytes):
    """``cp.async.cg.shared.global`` of 16 bytes (bypassing L1); both indices multiples of 4."""
    _copy(16, dst, dst_index, src, src_index, src_bytes)


def cp_async_commit_group():
    """``cp.async.commit_group``: the copies issued since the last commit become one group."""
    state = _thread_state("cp_async_commit_group")
    state[1].append(state[0])
    state[0] = []


def cp_async_wait_group(n):
    """``cp.async.wait_group n``: every committed group but the ``n`` most recent has landed."""
    groups = _thread_state("cp_async_wait_group")[1]
    n = int(n)
    if n < 0:
        raise ValueError(f"cp_async_wait_group: n must be >= 0, got {n}")
    thread = _current_id() if _LOGS else -1
    before = sum(len(group) for group in groups)
    while len(groups) > n:
        for dst_raw, offset, data, copy in groups.popleft():
            dst_raw.view(np.uint8)[offset:offset + data.size] = data
            address = dst_raw.__array_interface__["data"][0]
            for log in _LOGS:
                log.landed.append((address, offset, data.size))
                log.note("land", thread, address + offset, data.size, copy)
    copies = sum(len(group) for group in groups)
    for log in _LOGS:
        log.waits.append((thread, len(groups), copies, before))


def cp_async_wait_all():
    """``cp.async.wait_all``: commit, then wait for every group."""
    cp_async_commit_group()
    cp_async_wait_group(0)


warp._COMPLETERS[MMA_KIND] = _complete_mma
recorder.exclude_from_counts(os.path.abspath(__file__))
