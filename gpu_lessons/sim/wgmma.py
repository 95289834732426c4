"""The simulator's side of Hopper's warpgroup MMA (``wgmma``, sm_90a) in ``gpu_lessons.ptx``.

A warpgroup is four consecutive warps of a block (threads 128 g .. 128 g + 127). Its 128 threads
issue ``wgmma.mma_async`` together: the tensor cores read A (64x8) and B (8xN) from shared memory,
where two 64-bit *matrix descriptors* say how the matrices are laid out, and add their product to
accumulators that stay in the threads' registers, asynchronously: the thread goes on while the MMA
runs, and may read its accumulators only after ``wgmma.wait_group``.

The kernel API (handed out by ``gpu_lessons.ptx`` on the simulator; the Python twins of the
compiled intrinsics on a GPU):

``shared_address(array, index)``
    The byte address, in the block's shared-memory window, of ``array[index]`` (PTX
    ``cvta.to.shared``). Here a block's shared arrays sit one after another from byte
    ``FIRST_SHARED_ADDRESS``, each on a 16-byte boundary, in the order ``shared_address`` first
    meets them; numba on a GPU aligns them only to their element size. A kernel that needs a
    1024-byte boundary (128-byte swizzle) allocates some spare room and starts at the first such
    address it finds, on both.
``matrix_descriptor(address, leading_bytes, stride_bytes, swizzle)``
    The 64-bit descriptor (``descriptor_bits``; decoded by ``decode_descriptor``).
``wgmma_fence()``, ``fence_proxy_async()``, ``wgmma_commit_group()``, ``wgmma_wait_group(n, acc)``
``wgmma_m64n{N}k8_tf32(desc_a, desc_b, acc, scale_d)``, ``wgmma_zero_accumulators(N)``

The matrix descriptor (PTX ISA, "Matrix Descriptor Format" of the warpgroup-level MMA)
------------------------------------------------------------------------------------
bits 0-13 start address >> 4; bits 16-29 leading-dimension byte offset >> 4; bits 32-45
stride-dimension byte offset >> 4; bits 49-51 base offset; bits 62-63 swizzle (0 none, 1 128-byte,
2 64-byte, 3 32-byte). TF32 operands must be K-major (PTX allows no transpose for .tf32): A is
64 rows of K, B is N rows of K (B transposed). A *core matrix* is 8 rows of 16 bytes (4 TF32).
Where element (row r, k) of an operand is read (``operand_addresses``), k < 8:

* no swizzle: ``start + (r // 8) * stride + (r % 8) * 16 + (k // 4) * leading + (k % 4) * 4``.
  The core matrix is 128 contiguous bytes; ``leading`` steps to the next core matrix along K,
  ``stride`` to the next 8 rows.
* swizzle of W = 128, 64 or 32 bytes: ``start + (r // 8) * stride + (r % 8) * W + k * 4``, then the
  16-byte chunk bits of that address (4 to 6) are XORed with the row bits above the W-byte row
  (7 to 9, as many as W / 16 chunks need): ``address ^ ((address >> 7) % (W / 16)) << 4``. The
  swizzle is a function of the address, so the pattern repeats every 8 W bytes and the matrix's
  8-row groups must start on such a boundary (base offset 0: a nonzero base offset is refused
  here). The leading byte offset is not used (K = 8 TF32 = 32 bytes fits in one swizzled row);
  to step along K inside a swizzled row, add k * 4 bytes to the start address.

The accumulator layout (PTX ISA, "Register Fragment" of wgmma .m64nNk8, f32 D)
------------------------------------------------------------------------------
Warp w of the warpgroup (its warp index in the block modulo 4) holds rows 16 w .. 16 w + 15 of D
(64xN), laid out as mma.m16n8's C within each 8-column block j: with g = lane >> 2, t = lane % 4,
``acc[4j] = D[16w+g, 8j+2t]``, ``acc[4j+1] = D[16w+g, 8j+2t+1]``, ``acc[4j+2] = D[16w+g+8, 8j+2t]``,
``acc[4j+3] = D[16w+g+8, 8j+2t+1]``: N / 2 floats per thread (``accumulator_layout``).

Arithmetic: A and B cut to TF32 and D = A B + (scale_d ? C : 0) summed by ``ptx.HOPPER_TF32``, the
model fitted to the H200's mma.sync (``gpu_lessons.sim.ptx``); how close it is to the H200's
wgmma is held by ``tests/test_sim_wgmma.py`` against ``data/nvidia-h200/checks/wgmma_primitives``.

What the simulator enforces (each an error naming the rule: a GPU would give wrong numbers or hang)
--------------------------------------------------------------------------------------------------
* The warpgroup: all 128 threads must reach ``wgmma_m64n{N}k8_tf32`` with the same descriptors,
  ``scale_d`` and N (``WarpgroupError``); a thread that exits or waits at ``cuda.syncthreads()``
  meanwhile is a ``WarpDeadlockError``.
* ``wgmma_fence()`` before the first wgmma after the kernel starts and after every
  ``wgmma_wait_group`` (PTX asks for it between other accesses of the accumulator registers and
  wgmma; the simulator asks for it where CUTLASS puts it, before each batch).
* The async proxy: the tensor cores read shared memory through the *async proxy*, which does not
  see ordinary stores until ``fence_proxy_async()`` (``fence.proxy.async.shared::cta``) orders them.
  Model: each ``fence_proxy_async()`` takes a snapshot of the launch's shared memory, the async
  proxy's view; a wgmma whose bytes differ from the latest snapshot (stored after every fence, or
  never fenced) raises ``AsyncProxyError``. A thread that fences before another thread's last store
  is not caught when a later fence by any thread covers that store (the snapshot is per block).
* Asynchrony: a wgmma returns ``PendingAccumulators``, a tuple that raises ``AccumulatorsNotReady``
  when read (indexing, unpacking); it may only be passed to more wgmmas (chained accumulation, as on
  the GPU) and to ``wgmma_wait_group``. ``wgmma_commit_group()`` closes the wgmmas issued since the
  last commit into a group; ``wgmma_wait_group(n, acc)`` completes every group but the ``n`` most
  recent and returns ``acc`` readable if its wgmma is complete (still pending otherwise). The
  shared bytes a wgmma read are checked again when its group completes: a kernel that overwrites
  them first (waited on the wrong group, then refilled the stage) gets an ``AsyncProxyError``.
  The error was chosen over poisoned values: it names the line and the rule.

The tracer: inside ``wgmma_log()`` (and ``trace()``, which opens one: ``MemoryTrace.wgmma``) each
warpgroup instruction is logged with its N and the shared-memory bytes it read (A and B), one row
per issue. These bytes go through the tensor cores' path, not the load/store unit, so they are not
added to the LSU metrics of ``by_instruction``.
"""

from __future__ import annotations

import os
import sys
import threading
from collections import deque
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

import numpy as np

from . import recorder, scheduler, warp
from .ptx import HOPPER_TF32, _mma
from .wgmma_layout import (  # noqa: F401 - the layouts, re-exported
    ACCUMULATOR_ROWS,
    SWIZZLE_32B,
    SWIZZLE_64B,
    SWIZZLE_128B,
    SWIZZLE_BYTES,
    SWIZZLE_NONE,
    WARPGROUP,
    WGMMA_N,
    Descriptor,
    K,
    accumulator_layout,
    decode_descriptor,
    descriptor_bits,
    operand_addresses,
)

__all__ = [
    "ACCUMULATOR_ROWS", "AccumulatorsNotReady", "AsyncProxyError", "WgmmaFenceError", "FIRST_SHARED_ADDRESS",
    "PendingAccumulators", "SWIZZLE_BYTES", "WGMMA_N", "WarpgroupError", "WgmmaLog",
    "accumulator_layout", "decode_descriptor", "descriptor_bits", "fence_proxy_async",
    "matrix_descriptor", "operand_addresses", "shared_address", "wgmma_commit_group", "wgmma_fence",
    "wgmma_log", "wgmma_tf32", "wgmma_wait_group", "wgmma_zero_accumulators",
]

FIRST_SHARED_ADDRESS = 1024  # where the simulator puts a block's first shared array


class WarpgroupError(ValueError):
    """A wgmma's warpgroup rule is broken (partial warpgroup, threads disagree on operands...)."""


class AsyncProxyError(RuntimeError):
    """A wgmma reads shared memory the async proxy cannot see yet, or that changed under it."""


class WgmmaFenceError(RuntimeError):
    """A wgmma without ``wgmma_fence()`` before its batch."""


class AccumulatorsNotReady(RuntimeError):
    """Accumulators read (or used out of order) before ``wgmma_wait_group`` completed their wgmma."""


_LAYOUTS = {n: accumulator_layout(n) for n in WGMMA_N}


# --- Shared memory as the tensor cores see it -----------------------------------------------------

_LAUNCH_STATE = "_gpu_lessons_wgmma"  # on the launch's FakeCUDAShared


def _memory_key(array: np.ndarray) -> int:
    """Arrays that share memory (a shared array and its views, dynamic shared memory's aliases)
    are one allocation: known by the address of their first byte."""
    return recorder.root_of(array).__array_interface__["data"][0]


@dataclass
class _SharedWindow:
    """The launch's shared arrays placed at addresses, and the async proxy's view of them."""

    lock: threading.Lock = field(default_factory=threading.Lock)
    placed: list = field(default_factory=list)  # (base address, key, root bytes, name)
    next_address: int = FIRST_SHARED_ADDRESS
    fenced: dict = field(default_factory=dict)  # key -> bytes at the last fence_proxy_async

    def place(self, root: np.ndarray, name: str) -> int:
        key = _memory_key(root)
        with self.lock:
            for base, placed_key, _, _ in self.placed:
                if placed_key == key:
                    return base
            base = self.next_address
            self.placed.append((base, key, root.reshape(-1).view(np.uint8), name))
            self.next_address = -(-(base + root.nbytes) // 16) * 16
            return base

    def locate(self, addresses: np.ndarray, what: str):
        """For each address: (index into placed, byte offset); an error for one outside them all."""
        which = np.full(addresses.shape, -1)
        offset = np.zeros(addresses.shape, np.int64)
        for i, (base, _, data, _) in enumerate(self.placed):
            inside = (addresses >= base) & (addresses + 4 <= base + data.size)
            which[inside] = i
            offset[inside] = addresses[inside] - base
        if (which < 0).any():
            bad = int(addresses[which < 0].flat[0])
            arrays = ", ".join(f"{name} at 0x{base:x}-0x{base + data.size:x}"
                               for base, _, data, name in self.placed) or "none yet"
            raise IndexError(f"{what} reads shared byte 0x{bad:x}, outside every shared array this "
                             f"launch passed to shared_address ({arrays}): check the descriptor's "
                             "start address and byte offsets")
        return which, offset

    def read(self, addresses: np.ndarray, what: str, fenced: bool = False) -> np.ndarray | None:
        """The 4-byte words at ``addresses`` (as uint32), live or as the last proxy fence saw them
        (None where no fence saw the array)."""
        which, offset = self.locate(addresses, what)
        words = np.zeros(addresses.shape, np.uint32)
        for i, (_, key, data, _) in enumerate(self.placed):
            here = which == i
            if not here.any():
                continue
            source = self.fenced.get(key) if fenced else data
            if source is None or source.size != data.size:
                return None
            picked = offset[here][:, None] + np.arange(4)
            words[here] = source[picked].reshape(-1).copy().view(np.uint32)
        return words

    def snapshot(self, roots) -> None:
        with self.lock:
            for root in roots:
                self.fenced[_memory_key(root)] = root.reshape(-1).view(np.uint8).copy()


def _launch_shared():
    from numba.cuda.simulator.kernel import _get_kernel_context  # inside a simulated launch only

    launch = _get_kernel_context()
    if launch is None:
        raise RuntimeError("the wgmma primitives can only be called inside a kernel on the simulator")
    shared = launch._shared
    window = shared.__dict__.get(_LAUNCH_STATE)
    if window is None:
        window = shared.__dict__.setdefault(_LAUNCH_STATE, _SharedWindow())
    return shared, window


def _root(array) -> np.ndarray:
    raw = getattr(array, "_ary", array)
    raw = getattr(raw, "_item", raw)
    raw = getattr(raw, "_ary", raw)
    if not isinstance(raw, np.ndarray):
        raise TypeError(f"shared_address needs a cuda.shared.array, got {type(array).__name__}")
    return raw


def shared_address(array, index):
    """PTX ``cvta.to.shared``: the byte address of ``array[index]`` in the block's shared window."""
    raw = _root(array)
    if raw.ndim != 1:
        raise TypeError(f"shared_address needs a 1-D shared array, got shape {raw.shape}")
    root = recorder.root_of(raw)
    _, window = _launch_shared()
    frame = sys._getframe(1)
    base = window.place(root, f"{os.path.basename(frame.f_code.co_filename)}:{frame.f_lineno}")
    view_offset = raw.__array_interface__["data"][0] - root.__array_interface__["data"][0]
    index = int(index)
    if not 0 <= index < raw.size:
        raise IndexError(f"shared_address: index {index} is outside the array of {raw.size} elements")
    return np.uint32(base + view_offset + index * raw.itemsize)


matrix_descriptor = descriptor_bits  # the kernel API's name for it


def fence_proxy_async():
    """``fence.proxy.async.shared::cta``: the async proxy (the tensor cores' reads) now sees this
    block's shared memory as it is (the model: a snapshot, see the module doc)."""
    shared, window = _launch_shared()
    roots = [recorder.root_of(_root(a)) for a in list(shared._allocations.values())]
    if shared._dynshared_size:
        roots.append(shared._dynshared)
    window.snapshot(roots)


# --- Per-thread asynchrony ------------------------------------------------------------------------

_THREAD_STATE = "_gpu_lessons_wgmma_thread"


@dataclass
class _ThreadState:
    fenced: bool = False  # a wgmma_fence since the start or the last wait_group
    open: list = field(default_factory=list)  # wgmmas issued since the last commit
    groups: deque = field(default_factory=deque)  # committed groups, oldest first


def _thread_state(name: str) -> _ThreadState:
    thread = scheduler.current_thread()
    if getattr(thread, "thread_id", None) is None or not hasattr(thread, "_manager"):
        raise RuntimeError(f"{name}() can only be called inside a kernel on the simulator")
    state = thread.__dict__.get(_THREAD_STATE)
    if state is None:
        state = thread.__dict__[_THREAD_STATE] = _ThreadState()
    return state


class _Issue:
    """One warpgroup wgmma: what it read, to check again when its group completes."""

    __slots__ = ("window", "addresses", "words", "what", "checked")

    def __init__(self, window, addresses, words, what):
        self.window, self.addresses, self.words, self.what = window, addresses, words, what
        self.checked = False

    def check_unchanged(self) -> None:
        if self.checked:
            return
        self.checked = True
        now = self.window.read(self.addresses, self.what)
        if not np.array_equal(now, self.words):
            changed = int(self.addresses[now != self.words].flat[0])
            raise AsyncProxyError(
                f"{self.what}: shared byte 0x{changed:x} that this wgmma reads changed before "
                "wgmma_wait_group completed it. The tensor cores read shared memory while the MMA "
                "runs: wait for the group that reads a stage (wgmma_wait_group with the right n) "
                "before refilling it.")


class PendingAccumulators(tuple):
    """A wgmma's accumulators before ``wgmma_wait_group`` completes it: reading them is an error."""

    def __new__(cls, values, issue, site):
        self = super().__new__(cls, values)
        self._values = tuple(values)
        self._issue = issue
        self._site = site
        self._done = False
        return self

    def _refuse(self, *_):
        raise AccumulatorsNotReady(
            f"accumulators of the wgmma at {self._site} read before wgmma_wait_group completed it: "
            "on a GPU the tensor cores are still writing these registers (undefined values). "
            "wgmma_commit_group(), then acc = wgmma_wait_group(0, acc), then read.")

    __getitem__ = _refuse
    __iter__ = _refuse

    def __repr__(self):
        return f"PendingAccumulators({len(self._values)} floats, wgmma at {self._site})"


def _values_of(acc, n: int, name: str) -> tuple:
    values = acc._values if isinstance(acc, PendingAccumulators) else tuple(acc)
    if len(values) != n // 2:
        raise WarpgroupError(f"{name}: acc must hold N / 2 = {n // 2} floats per thread, got {len(values)}")
    return values


def wgmma_fence():
    """``wgmma.fence.sync.aligned``: earlier accesses of the accumulators are ordered before the
    wgmmas that follow (the simulator asks for it before each batch of wgmmas)."""
    _thread_state("wgmma_fence").fenced = True


def wgmma_commit_group():
    """``wgmma.commit_group.sync.aligned``: the wgmmas issued since the last commit form a group."""
    state = _thread_state("wgmma_commit_group")
    state.groups.append(state.open)
    state.open = []


def wgmma_wait_group(n, acc):
    """``wgmma.wait_group.sync.aligned n``: every committed group but the ``n`` most recent
    completes; returns ``acc``, readable if its wgmma completed (pending otherwise)."""
    state = _thread_state("wgmma_wait_group")
    n = int(n)
    if not 0 <= n <= 7:
        raise ValueError(f"wgmma_wait_group: n must be 0..7 (a PTX immediate), got {n}")
    while len(state.groups) > n:
        for pending in state.groups.popleft():
            pending._issue.check_unchanged()
            pending._done = True
    state.fenced = False
    if isinstance(acc, PendingAccumulators) and acc._done:
        return acc._values
    return acc


def wgmma_zero_accumulators(n):
    """N / 2 float32 zeros: the accumulators of an m64nNk8 wgmma, before the first one."""
    n = int(n)
    if n not in WGMMA_N:
        raise ValueError(f"wgmma_zero_accumulators: N must be one of {WGMMA_N}, got {n}")
    return (np.float32(0),) * (n // 2)


# --- The warpgroup collective ---------------------------------------------------------------------

_BLOCK_STATE = "_gpu_lessons_wgmma_gatherings"


class _Gathering:
    """The threads of one warpgroup arriving at one wgmma."""

    def __init__(self):
        self.payloads: dict[int, tuple] = {}
        self.results: dict[int, tuple] = {}
        self.issue = None
        self.error: BaseException | None = None
        self.done = False


@dataclass
class WgmmaLog:
    """Every wgmma issued inside ``wgmma_log()``: one row per warpgroup instruction."""

    rows: list = field(default_factory=list)  # dicts: block, warpgroup, n, a_bytes, b_bytes, flops

    def frame(self):
        import pandas as pd

        return pd.DataFrame(self.rows, columns=["block", "warpgroup", "n", "a_bytes", "b_bytes",
                                                "flops", "where"])


_LOGS: list[WgmmaLog] = []


@contextmanager
def wgmma_log() -> Iterator[WgmmaLog]:
    """Log every wgmma of the simulated launches run inside the block."""
    log = WgmmaLog()
    _LOGS.append(log)
    try:
        yield log
    finally:
        _LOGS.remove(log)


def _complete(name: str, n: int, payloads: dict, window, where: str, block_index, group: int):
    first = payloads[0]
    for local, payload in payloads.items():
        if payload[:3] != first[:3]:
            labels = ("desc_a", "desc_b", "scale_d")
            differs = next(label for label, x, y in zip(labels, payload, first, strict=False) if x != y)
            raise WarpgroupError(f"{name} at {where}: thread {local} of the warpgroup passes another "
                                 f"{differs} than thread 0; all 128 must pass the same")
    desc_a, desc_b, scale_d = first[:3]
    what = f"{name} at {where}"
    a_addr = operand_addresses(desc_a, ACCUMULATOR_ROWS)
    b_addr = operand_addresses(desc_b, n)
    addresses = np.concatenate([a_addr.reshape(-1), b_addr.reshape(-1)])
    words = window.read(addresses, what)
    seen = window.read(addresses, what, fenced=True)
    if seen is None or not np.array_equal(seen, words):
        bad = addresses[0] if seen is None else int(addresses[seen != words].flat[0])
        raise AsyncProxyError(
            f"{what} reads shared byte 0x{int(bad):x}, stored after the last fence_proxy_async() "
            "(or none came): the tensor cores read shared memory through the async proxy, which "
            "sees ordinary stores only after fence.proxy.async.shared::cta. Store, "
            "fence_proxy_async(), cuda.syncthreads(), then wgmma.")
    a = words[:a_addr.size].view(np.float32).reshape(ACCUMULATOR_ROWS, K)
    b = words[a_addr.size:].view(np.float32).reshape(n, K).T
    rows, cols = _LAYOUTS[n]
    c = np.zeros((ACCUMULATOR_ROWS, n), np.float32)
    if scale_d:
        values = np.array([payloads[t][3] for t in range(WARPGROUP)], np.float32)
        c[rows, cols] = values
    d = _mma(a[None], b[None], c[None], HOPPER_TF32)[0]
    issue = _Issue(window, addresses, words, what)
    results = {t: tuple(d[rows[t], cols[t]]) for t in range(WARPGROUP)}
    for log in _LOGS:
        log.rows.append({"block": block_index, "warpgroup": group, "n": n, "a_bytes": a_addr.size * 4,
                         "b_bytes": b_addr.size * 4, "flops": 2 * ACCUMULATOR_ROWS * n * K,
                         "where": where})
    return results, issue




def _missing_stopped(block, first_thread: int, gathering, epoch: int) -> str | None:
    """Why the warpgroup can never gather: a missing thread exited, or waits in a syncthreads() the
    gathered threads have not reached (it has entered more barriers than ``epoch``, the waiting
    thread's count: the barrier needs the threads waiting here). A thread in syncthreads that has
    entered no more barriers than the waiting one is being let out of one they passed: it will come
    (as warp.py's lane states read it; a poll count was not enough on a loaded machine)."""
    for local in range(WARPGROUP):
        if local in gathering.payloads:
            continue
        thread = block.threads.get(first_thread + local)
        if thread is None:
            continue
        if thread._warp_exited:
            return f"thread {first_thread + local} has exited"
        if thread._warp_in_barrier and thread._warp_barriers > epoch:
            return f"thread {first_thread + local} waits in cuda.syncthreads()"
    return None


def wgmma_tf32(n: int, desc_a, desc_b, acc, scale_d):
    """``wgmma.mma_async.sync.aligned.m64n{n}k8.f32.tf32.tf32``: the warpgroup's 128 threads each
    pass the same descriptors and ``scale_d`` and their own N/2 accumulators; each gets its part of
    D = A B + (scale_d ? C : 0), pending until ``wgmma_wait_group``."""
    name = f"wgmma_m64n{n}k8_tf32"
    thread, block = warp._current_lane(name)
    state = _thread_state(name)
    frame = sys._getframe(2)
    where = f"{os.path.basename(frame.f_code.co_filename)}:{frame.f_lineno}"
    group, local = divmod(thread.thread_id, WARPGROUP)
    if block.thread_count < (group + 1) * WARPGROUP:
        raise WarpgroupError(
            f"{block.describe(thread)}: {name} needs all 128 threads of a warpgroup (4 warps), but "
            f"this block of {block.thread_count} threads leaves warpgroup {group} "
            f"{block.thread_count - group * WARPGROUP}")
    if not state.fenced:
        raise WgmmaFenceError(
            f"{name} at {where} without wgmma_fence() before it: PTX asks for wgmma.fence before "
            "the first wgmma and after the accumulators were touched by other instructions "
            "(wgmma_fence(), the wgmmas, wgmma_commit_group(), wgmma_wait_group(...)).")
    values = _values_of(acc, n, name)
    if isinstance(acc, PendingAccumulators) and not acc._done and acc._issue is None:
        raise AccumulatorsNotReady(f"{name}: accumulators of an unknown wgmma")
    _, window = _launch_shared()
    payload = (int(desc_a), int(desc_b), bool(scale_d), values)
    gatherings = block.__dict__.setdefault(_BLOCK_STATE, {})
    cond = block.__dict__.setdefault(_BLOCK_STATE + "_cond", threading.Condition(block.lock))
    with block.lock:
        gathering = gatherings.get(group)
        if gathering is None:
            gathering = gatherings[group] = _Gathering()
        gathering.payloads[local] = payload
        if len(gathering.payloads) == WARPGROUP:
            del gatherings[group]
            try:
                gathering.results, gathering.issue = _complete(
                    name, n, gathering.payloads, window, where, tuple(thread.blockIdx), group)
            except Exception as error:  # noqa: BLE001 - every thread of the warpgroup raises it
                gathering.error = error
            gathering.done = True
            cond.notify_all()
        while not gathering.done:
            if thread.abort:
                raise RuntimeError(f"abort flag set while waiting in {name}")
            cond.wait(warp.POLL_SECONDS)
            if gathering.done:
                break
            crash = block.crash()
            stopped = _missing_stopped(block, group * WARPGROUP, gathering, thread._warp_barriers)
            if crash is not None or stopped is not None:
                gathering.error = crash or warp.WarpDeadlockError(
                    f"{block.describe(thread)}: {name} at {where} waits for the 128 threads of "
                    f"warpgroup {group}, but {stopped}: every thread of the warpgroup must reach it")
                gathering.done = True
                gatherings.pop(group, None)
                cond.notify_all()
    if gathering.error is not None:
        raise warp._like_exception(gathering.error)
    pending = PendingAccumulators(gathering.results[local], gathering.issue, where)
    state.open.append(pending)
    return pending


def _wgmma_n(n: int):
    def wgmma(desc_a, desc_b, acc, scale_d):
        return wgmma_tf32(n, desc_a, desc_b, acc, scale_d)

    wgmma.__name__ = wgmma.__qualname__ = f"wgmma_m64n{n}k8_tf32"
    wgmma.__doc__ = f"``wgmma.mma_async.sync.aligned.m64n{n}k8.f32.tf32.tf32`` (see ``wgmma_tf32``)."
    return wgmma


WGMMA_TF32 = {n: _wgmma_n(n) for n in WGMMA_N}  # N -> the kernel API function
globals().update({f.__name__: f for f in WGMMA_TF32.values()})
__all__ += [f.__name__ for f in WGMMA_TF32.values()]

recorder.exclude_from_counts(os.path.abspath(__file__))
