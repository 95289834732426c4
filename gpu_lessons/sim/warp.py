"""Warp-level primitives for numba-cuda's simulator, with the hardware's semantics.

numba-cuda 0.30.4's simulator runs each CUDA thread as a Python thread (``BlockThread``), one block
at a time (``BlockManager``), and injects a ``FakeCUDAModule`` as ``cuda`` into the kernel's globals.
That module lacks the warp-level primitives; ``install()`` adds them by patching the simulator's
classes at run time, so kernels (the package's, or a learner's in a notebook cell) call
``cuda.shfl_down_sync(mask, v, 16)`` exactly as on a GPU:

    shfl_sync, shfl_up_sync, shfl_down_sync, shfl_xor_sync,
    ballot_sync, all_sync, any_sync, eq_sync, syncwarp, activemask

Model
-----
* Warps: thread ``x + bx*(y + by*z)`` of a block is lane ``% 32`` of warp ``// 32``; the last warp
  of a block whose size is not a multiple of 32 is partial.
* Collectives (all but ``activemask``): a lane waits until every lane named in its mask has arrived
  at a collective of the same kind with the same mask (call sites may differ, as for
  ``__syncwarp``); then they all get their results at once. Shuffle sources follow PTX
  ``shfl.sync`` bit for bit (``shfl_source_lane``; numba-cuda has no ``width`` argument, so the
  kernel API uses width 32). Reading a source lane that is valid but not in the mask is undefined
  on a GPU: here it gives NaN (floats) or ``POISON_INT32``/``POISON_INT64`` (ints) and one
  ``UndefinedShuffleWarning`` per launch. Results keep the caller's type. ``ballot_sync`` returns
  the GPU's signed int32, ``all_sync``/``any_sync``/``eq_sync`` a bool, ``activemask`` a uint32,
  as numba-cuda types them.
* ``activemask`` is a rendezvous: it answers once every live lane of the warp is parked (at a warp
  collective, in ``cuda.syncthreads()``, or exited); the answer is the set of lanes waiting at that
  same ``activemask`` call (same line, same call stack). When lanes wait at several ``activemask``
  calls, the one earliest in the source is answered first, as a SIMT warp runs a branch or a loop
  body before the code after it. So a loop that lanes 0-15 run 3 times and lanes 16-31 once gives
  0xffffffff, then 0x0000ffff twice, and 0xffffffff again after the loop, as on the hardware.
* No hang: a collective that can never complete (a lane it needs has exited, is blocked in
  ``cuda.syncthreads()``, or waits at another collective that can never complete) raises
  ``WarpDeadlockError`` naming the kernel, block, warp, and where each lane is. Progress is
  event-driven (arrivals, thread exits and barrier entries wake the warp); a short poll
  (``POLL_SECONDS``) is a fallback that also notices a launch that failed elsewhere. A lane's own
  exception is reported as itself, not as a deadlock of the lanes waiting for it.
* ``install()`` also mends the simulator's ``cuda.popc``, which miscounts negative values such as
  a ballot that includes lane 31.

Limits
------
* Stricter than PTX: PTX lets a mask name lanes that exited or do not exist (their values are
  undefined). Here a mask must name only existing lanes (``WarpMaskError``), and waiting for a lane
  that exited is a ``WarpDeadlockError``: such code reads undefined values on a GPU.
* ``activemask`` models the reconvergence of structured code, not Volta's independent thread
  scheduling: it never answers early, so code where one lane spins on memory that another lane
  writes after its ``activemask`` hangs here as it may on older GPUs; code that jumps backwards
  over an ``activemask`` in unusual ways may get a different grouping than the compiler produces.
* Shuffling mixed types between lanes (possible in Python, not after numba's typing) converts the
  source value to the caller's type by value.
* The simulator's model stays: one Python thread per CUDA thread (``sim.scheduler`` reuses them
  and stops the block manager's busy polling). Kernels that do not use these primitives pay one
  dictionary insert per thread (made by the block manager, not the thread) and a counter per
  ``syncthreads()``; an exit is seen through ``Thread.is_alive()``.
"""

from __future__ import annotations

import os
import sys
import threading
import warnings
from math import prod

import numpy as np

from ..device import WARP_SIZE
from . import scheduler

__all__ = [
    "FULL_MASK",
    "POISON_INT32",
    "POISON_INT64",
    "SHFL_MODES",
    "UndefinedShuffleWarning",
    "WARP_SIZE",
    "WarpDeadlockError",
    "WarpMaskError",
    "install",
    "shfl_c_operand",
    "shfl_source_lane",
]

FULL_MASK = 0xFFFFFFFF
SHFL_MODES = ("idx", "up", "down", "bfly")  # PTX shfl.sync modes
SHFL_WIDTHS = (1, 2, 4, 8, 16, 32)
POISON_INT32 = np.array(0xDEADBEEF, dtype=np.uint32).view(np.int32)[()]
POISON_INT64 = np.array(0xDEADBEEFDEADBEEF, dtype=np.uint64).view(np.int64)[()]
POLL_SECONDS = 0.05

SHUFFLE_KINDS = {
    "shfl_sync": "idx",
    "shfl_up_sync": "up",
    "shfl_down_sync": "down",
    "shfl_xor_sync": "bfly",
}
VOTE_KINDS = ("ballot_sync", "all_sync", "any_sync", "eq_sync")
SYNCWARP = "syncwarp"
ACTIVEMASK = "activemask"

_BLOCK_ATTR = "_gpu_lessons_warps"  # per-block state, on each BlockManager
_PATCH_MARK = "_gpu_lessons_warp_patch"
_WARNED_ATTR = "_gpu_lessons_warned_undefined"  # per launch, on the FakeCUDAModule
_SHUFFLE_TYPES = (int, float, np.int32, np.int64, np.float32, np.float64)
_PREDICATE_TYPES = (int, np.integer, bool, np.bool_)


class WarpDeadlockError(RuntimeError):
    """A warp collective can never complete (on a GPU: a hang or undefined values)."""


class WarpMaskError(ValueError):
    """A warp collective's mask is invalid for the calling lane or the block."""


class UndefinedShuffleWarning(UserWarning):
    """A shuffle read a lane outside its mask: the value is undefined on a GPU."""


# --- The PTX shfl.sync rule ---------------------------------------------------------------------


def shfl_c_operand(mode: str, width: int = WARP_SIZE) -> int:
    """PTX shfl.sync's ``c`` operand as CUDA C's ``__shfl_*_sync(..., width)`` builds it.

    Bits 8-12 hold the segment mask ``32 - width``; bits 0-4 the clamp lane, 31 except for ``up``,
    which clamps at the segment start. At width 32 this is numba-cuda's 0x1F (0 for ``up``).
    """
    if mode not in SHFL_MODES:
        raise ValueError(f"shuffle mode {mode!r} is not one of {SHFL_MODES}")
    if width not in SHFL_WIDTHS:
        raise ValueError(f"shuffle width {width} is not a power of two from 1 to 32")
    segment = (WARP_SIZE - width) << 8
    return segment if mode == "up" else segment | 0x1F


def shfl_source_lane(mode: str, lane: int, b: int, width: int = WARP_SIZE) -> tuple[int, bool]:
    """The lane whose value ``lane`` receives from PTX ``shfl.sync.<mode>``, and whether it is valid.

    ``b`` is the source lane (idx), delta (up, down) or lane mask (bfly); only its low 5 bits count.
    An invalid source means the lane keeps its own value, so ``(lane, False)`` is returned.
    """
    c = shfl_c_operand(mode, width)
    bval = int(b) & 0x1F
    cval = c & 0x1F
    segmask = (c >> 8) & 0x1F
    max_lane = (lane & segmask) | (cval & ~segmask)
    min_lane = lane & segmask
    if mode == "up":
        source = lane - bval
        valid = source >= max_lane
    elif mode == "down":
        source = lane + bval
        valid = source <= max_lane
    elif mode == "bfly":
        source = lane ^ bval
        valid = source <= max_lane
    else:
        source = min_lane | (bval & ~segmask)
        valid = source <= max_lane
    return (source, True) if valid else (lane, False)


# --- Values and masks ---------------------------------------------------------------------------


def _lanes_text(lanes) -> str:
    """'lane 5' or 'lanes 0-15, 18': runs of consecutive lanes."""
    lanes = sorted(lanes)
    runs: list[list[int]] = []
    for lane in lanes:
        if runs and lane == runs[-1][1] + 1:
            runs[-1][1] = lane
        else:
            runs.append([lane, lane])
    text = ", ".join(str(a) if a == b else f"{a}-{b}" for a, b in runs)
    return ("lane " if len(lanes) == 1 else "lanes ") + text


def _mask_lanes(mask: int) -> list[int]:
    return [lane for lane in range(WARP_SIZE) if mask >> lane & 1]


def _check_integer(kind: str, name: str, value) -> None:
    if not isinstance(value, (int, np.integer)):
        raise TypeError(f"cuda.{kind}: {name} must be an integer, got {value!r}")


def _check_shuffle_value(kind: str, value) -> None:
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, _SHUFFLE_TYPES):
        raise TypeError(
            f"cuda.{kind}: cannot shuffle {value!r} of type {type(value).__name__}; like numba-cuda "
            "on a GPU, shuffles take 32- and 64-bit ints and floats (int32, int64, float32, float64)"
        )


def _check_predicate(kind: str, predicate) -> None:
    if not isinstance(predicate, _PREDICATE_TYPES):
        raise TypeError(
            f"cuda.{kind}: the predicate must be an integer or boolean, as numba-cuda requires, "
            f"got {predicate!r} of type {type(predicate).__name__}"
        )


def _like(own, value):
    """``value`` with the type of the caller's ``own`` value (shuffles keep the caller's type)."""
    kind = type(own)
    return value if type(value) is kind else kind(value)


def _undefined_like(own):
    """What an undefined shuffle source gives here: NaN, or a fixed poison integer."""
    if isinstance(own, (float, np.floating)):
        return type(own)("nan")
    return type(own)(POISON_INT32 if isinstance(own, np.int32) else POISON_INT64)


def _int32(bits: int) -> np.int32:
    """The signed int32 a GPU register holding these 32 bits reads as."""
    return np.array(bits, dtype=np.uint32).view(np.int32)[()]


# --- Per-block state ----------------------------------------------------------------------------

_RUNNING, _PARKED, _EXITED, _IN_BARRIER = "running", "parked", "exited", "in syncthreads"


class _Arrival:
    """One lane waiting at a warp collective, and then its result."""

    __slots__ = ("thread", "lane", "kind", "mask", "payload", "frame", "site", "done", "result",
                 "error", "crash", "undefined_source")

    def __init__(self, thread, lane, kind, mask, payload, frame, site=None):
        self.thread = thread
        self.lane = lane
        self.kind = kind
        self.mask = mask
        self.payload = payload
        self.frame = frame  # the kernel frame that called, for messages
        self.site = site  # activemask only: its call site, to group and order
        self.done = False
        self.result = None
        self.error = None
        self.crash = None  # another lane's exception: this lane raises it too (the launch fails)
        self.undefined_source = None

    @property
    def key(self):
        """Lanes with equal keys complete together."""
        return (self.kind, self.site if self.kind == ACTIVEMASK else self.mask)

    def where(self) -> str:
        frame = self.frame
        return f"{os.path.basename(frame.f_code.co_filename)}:{frame.f_lineno}" if frame else "?"


class _BlockWarps:
    """The warps of one simulated block: who runs, who waits where. One lock for the block."""

    def __init__(self, kernel, block_dim):
        self.kernel_name = getattr(kernel, "__name__", repr(kernel))
        self.kernel_code = getattr(kernel, "__code__", None)
        self.thread_count = prod(block_dim)
        self.lock = threading.Lock()
        self.threads = {}  # linear thread index -> BlockThread, filled as threads are created
        self.warps: dict[int, _Warp] = {}  # created at a warp's first collective

    def has_crashed(self) -> bool:
        """A thread raised: the launch is failing anyway, and its error, not a deadlock, is news."""
        return self.crash() is not None

    def crash(self) -> BaseException | None:
        """The exception of a thread that raised, if one has (numba keeps it as (exception, tb))."""
        for thread in list(self.threads.values()):
            if thread.exception is not None:
                return thread.exception[0]
        return None

    def lanes_in_warp(self, warp_index: int) -> int:
        return min(WARP_SIZE, self.thread_count - warp_index * WARP_SIZE)

    def warp(self, warp_index: int) -> _Warp:
        warp = self.warps.get(warp_index)
        if warp is None:
            warp = self.warps[warp_index] = _Warp(self, warp_index)
        return warp

    def describe(self, thread) -> str:
        block = tuple(thread.blockIdx)
        return f"kernel '{self.kernel_name}', block {block}, warp {thread.thread_id // WARP_SIZE}"

    def lane_stopped(self, thread) -> None:
        """A thread exited or entered syncthreads: lanes waiting on it may now be deadlocked."""
        warp = self.warps.get(thread.thread_id // WARP_SIZE)
        if warp is not None:
            with self.lock:
                warp.may_have_stopped_lanes = True
                warp.settle()


class _Warp:
    """Lanes of one warp parked at collectives. All methods run under the block's lock."""

    def __init__(self, block: _BlockWarps, index: int):
        self.block = block
        self.index = index
        self.first_thread = index * WARP_SIZE
        self.lane_count = block.lanes_in_warp(index)
        self.cond = threading.Condition(block.lock)
        self.parked: dict[int, _Arrival] = {}  # lane -> its arrival
        self.groups: dict[tuple, list[_Arrival]] = {}  # arrival key -> arrivals
        # False only while no lane can be exited or stuck in syncthreads: a full look found none
        # and no thread of this warp exited or entered a barrier since.
        self.may_have_stopped_lanes = True

    def park(self, arrival: _Arrival) -> None:
        self.parked[arrival.lane] = arrival
        self.groups.setdefault(arrival.key, []).append(arrival)
        if not self._settle_arrival(arrival):
            self.settle()

    def _settle_arrival(self, arrival: _Arrival) -> bool:
        """The common cases of one arrival, without looking at every lane; False if unsure."""
        arrivals = self.groups[arrival.key]
        if arrival.kind != ACTIVEMASK and len(arrivals) == bin(arrival.mask).count("1"):
            _COMPLETERS[arrival.kind](arrivals)
            self._release(arrivals)  # lanes set running cannot deadlock or stall anyone
            return True
        # A lone incomplete group whose missing lanes all run: nothing to do but wait.
        return arrival.kind != ACTIVEMASK and len(self.groups) == 1 and (
            not self.may_have_stopped_lanes)

    def settle(self) -> None:
        """Complete what can complete, answer activemask, fail what never can."""
        for key, arrivals in list(self.groups.items()):
            kind, mask = key
            if kind != ACTIVEMASK and len(arrivals) == bin(mask).count("1"):
                _COMPLETERS[kind](arrivals)
                self._release(arrivals)
        if not self.parked:
            return
        states = self._lane_states()
        self.may_have_stopped_lanes = _EXITED in states or _IN_BARRIER in states
        if _RUNNING not in states and any(key[0] == ACTIVEMASK for key in self.groups):
            self._answer_activemask()
            if not self.parked:
                return
            states = self._lane_states()
        crash = self.block.crash()
        if crash is None:
            self._fail_dead_groups(states)
        else:
            self._fail_all(crash)

    def _fail_all(self, crash: BaseException) -> None:
        """A lane raised: every lane parked here raises the same error. numba's BlockManager aborts
        the launch when it sees a thread's exception, but it can miss one (a thread that dies
        between its checks), and then lanes waiting for the dead lane would wait forever."""
        for arrivals in list(self.groups.values()):
            for arrival in arrivals:
                arrival.crash = crash
            self._release(arrivals)

    def _release(self, arrivals) -> None:
        for arrival in arrivals:
            arrival.done = True
            del self.parked[arrival.lane]
        del self.groups[arrivals[0].key]
        self.cond.notify_all()

    def _lane_states(self) -> list[str]:
        """Each lane's state; needs a parked lane. Lanes outside syncthreads have all passed the
        same barriers. A lane in syncthreads that has entered more barriers than a parked lane is
        blocked at one the parked lane has not reached: stuck. One that has entered no more is
        being let out of a barrier: running."""
        epoch = next(iter(self.parked.values())).thread._warp_barriers
        states = []
        for lane in range(self.lane_count):
            thread = self.block.threads.get(self.first_thread + lane)
            if lane in self.parked:
                states.append(_PARKED)
            elif thread is None:  # not started yet
                states.append(_RUNNING)
            elif thread._warp_exited:
                states.append(_EXITED)
            elif thread._warp_in_barrier and thread._warp_barriers > epoch:
                states.append(_IN_BARRIER)
            else:
                states.append(_RUNNING)
        return states

    def _answer_activemask(self) -> None:
        first_site = min(site for kind, site in self.groups if kind == ACTIVEMASK)
        answered = self.groups[(ACTIVEMASK, first_site)]
        active = np.uint32(sum(1 << a.lane for a in answered))
        for arrival in answered:
            arrival.result = active
        self._release(answered)

    def _fail_dead_groups(self, states: list[str]) -> None:
        groups = {k: v for k, v in self.groups.items() if k[0] != ACTIVEMASK}
        if not groups:
            return
        missing = {key: [lane for lane in _mask_lanes(key[1]) if not self._parked_at(lane, key)]
                   for key in groups}
        # Least fixed point: a group can still complete if each lane it lacks is running, waits at
        # activemask (always answered eventually), or waits at a group that can still complete.
        alive: set[tuple] = set()
        grew = True
        while grew:
            grew = False
            for key, lanes in missing.items():
                if key not in alive and all(self._may_arrive(lane, states, alive) for lane in lanes):
                    alive.add(key)
                    grew = True
        dead = [key for key in groups if key not in alive]
        messages = {key: self._deadlock_message(key, groups[key], missing[key], states, alive)
                    for key in dead}  # all before releasing any: messages name other groups
        for key in dead:
            for arrival in groups[key]:
                arrival.error = messages[key]
            self._release(groups[key])

    def _parked_at(self, lane: int, key) -> bool:
        arrival = self.parked.get(lane)
        return arrival is not None and arrival.key == key

    def _may_arrive(self, lane: int, states: list[str], alive: set) -> bool:
        if states[lane] == _RUNNING:
            return True
        if states[lane] == _PARKED:
            key = self.parked[lane].key
            return key[0] == ACTIVEMASK or key in alive
        return False  # exited, or blocked in syncthreads that this warp's lanes cannot reach

    def _deadlock_message(self, key, arrivals, missing, states, alive) -> str:
        kind, mask = key
        first = arrivals[0]
        waiting = [a.lane for a in arrivals]
        lines = [
            f"warp deadlock in {self.block.describe(first.thread)}:",
            f"  {_lanes_text(waiting)} {_verb(waiting, 'waits', 'wait')} at "
            f"{kind}(mask=0x{mask:08x}) ({first.where()}), but",
        ]
        by_place: dict[tuple[str, str], list[int]] = {}
        for lane in missing:
            by_place.setdefault(self._whereabouts(lane, states, alive), []).append(lane)
        for (singular, plural), lanes in by_place.items():
            lines.append(f"  {_lanes_text(lanes)} {_verb(lanes, singular, plural)}")
        lines.append(
            "On a GPU this hangs or reads undefined values: every lane named in the mask must "
            f"reach a {kind} with the same mask."
        )
        return "\n".join(lines)

    def _whereabouts(self, lane: int, states: list[str], alive: set) -> tuple[str, str]:
        """Where a missing lane is: the phrase for one lane and for several."""
        state = states[lane]
        if state == _EXITED:
            return "has exited", "have exited"
        if state == _IN_BARRIER:
            place = "in cuda.syncthreads(), which needs the waiting lanes too"
            return f"waits {place}", f"wait {place}"
        if state == _RUNNING:
            return "is still running", "are still running"
        other = self.parked[lane]
        call = f"{other.kind}(mask=0x{other.mask:08x})" if other.mask is not None else "activemask()"
        place = f"at {call} ({other.where()})"
        if other.kind != ACTIVEMASK and other.key not in alive:
            place += ", which cannot complete either"
        return f"waits {place}", f"wait {place}"


def _verb(lanes, singular: str, plural: str) -> str:
    return singular if len(lanes) == 1 else plural


# --- Completing a collective --------------------------------------------------------------------


def _complete_shuffle(arrivals) -> None:
    mode = SHUFFLE_KINDS[arrivals[0].kind]
    mask = arrivals[0].mask
    values = {a.lane: a.payload[0] for a in arrivals}
    for arrival in arrivals:
        own, b = arrival.payload
        source, valid = shfl_source_lane(mode, arrival.lane, b)
        if not valid:
            arrival.result = own
        elif mask >> source & 1:
            arrival.result = _like(own, values[source])
        else:
            arrival.result = _undefined_like(own)
            arrival.undefined_source = source


def _complete_vote(arrivals) -> None:
    kind, mask = arrivals[0].kind, arrivals[0].mask
    ballot = sum(1 << a.lane for a in arrivals if a.payload)
    if kind == "ballot_sync":
        result = _int32(ballot)
    elif kind == "all_sync":
        result = ballot == mask
    elif kind == "any_sync":
        result = ballot != 0
    else:
        result = ballot in (0, mask)
    for arrival in arrivals:
        arrival.result = result


def _complete_syncwarp(arrivals) -> None:
    for arrival in arrivals:
        arrival.result = None


_COMPLETERS = {
    **dict.fromkeys(SHUFFLE_KINDS, _complete_shuffle),
    **dict.fromkeys(VOTE_KINDS, _complete_vote),
    SYNCWARP: _complete_syncwarp,
}


# --- The calling lane's side --------------------------------------------------------------------


def _current_lane(kind: str):
    thread = scheduler.current_thread()
    block = getattr(getattr(thread, "_manager", None), _BLOCK_ATTR, None)
    if block is None:
        raise RuntimeError(f"cuda.{kind}() can only be called inside a kernel on the simulator")
    if thread.abort:
        raise RuntimeError(f"abort flag set on {kind} call")
    return thread, block


def _checked_mask(kind: str, mask, block: _BlockWarps, thread) -> int:
    _check_integer(kind, "the mask", mask)
    mask = int(mask) & FULL_MASK  # numba-cuda truncates the mask to 32 bits
    warp_index, lane = divmod(thread.thread_id, WARP_SIZE)
    if not mask >> lane & 1:
        raise WarpMaskError(
            f"{block.describe(thread)}: lane {lane} called cuda.{kind} with mask 0x{mask:08x}, "
            "which does not include it; the calling lane must be in its mask"
        )
    lane_count = block.lanes_in_warp(warp_index)
    absent = [lane for lane in _mask_lanes(mask) if lane >= lane_count]
    if absent:
        existing = (1 << lane_count) - 1
        raise WarpMaskError(
            f"{block.describe(thread)}: cuda.{kind} mask 0x{mask:08x} names {_lanes_text(absent)}, "
            f"which do not exist: the block has {block.thread_count} threads, so warp {warp_index} "
            f"has lanes 0-{lane_count - 1} only (mask 0x{existing:08x})"
        )
    return mask


def _collective(kind: str, mask, payload, frame) -> _Arrival:
    """Park the calling lane at a collective until it completes (or can never complete)."""
    thread, block = _current_lane(kind)
    lane = thread.thread_id % WARP_SIZE
    if kind == ACTIVEMASK:
        arrival = _Arrival(thread, lane, kind, None, None, frame, _call_site(frame, block))
    else:
        mask = _checked_mask(kind, mask, block, thread)
        arrival = _Arrival(thread, lane, kind, mask, payload, frame)
    with block.lock:
        warp = block.warp(thread.thread_id // WARP_SIZE)
        warp.park(arrival)
        while not arrival.done:
            if thread.abort:  # another thread failed and the launch is being torn down
                raise RuntimeError(f"abort flag set while waiting in {kind}")
            warp.cond.wait(POLL_SECONDS)
            if not arrival.done:
                warp.settle()
    if arrival.crash is not None:
        raise _like_exception(arrival.crash)
    if arrival.error is not None:
        raise WarpDeadlockError(arrival.error)
    return arrival


def _like_exception(error: BaseException) -> BaseException:
    """A new exception of the same type and message (each lane raises its own)."""
    try:
        return type(error)(*error.args)
    except Exception:  # noqa: BLE001 - an exception type with an unusual constructor
        return RuntimeError(str(error))


def _call_site(frame, block: _BlockWarps) -> tuple:
    """Where an activemask call is, outermost (kernel) frame first, comparable in source order."""
    site = []
    while frame is not None:
        site.append((frame.f_lineno, frame.f_lasti))
        if frame.f_code is block.kernel_code:
            break
        frame = frame.f_back
    return tuple(reversed(site))


_warn_lock = threading.Lock()


def _warn_undefined_once(arrival: _Arrival) -> None:
    from numba.cuda.simulator.kernel import _get_kernel_context  # inside a simulated launch only

    launch = _get_kernel_context()
    with _warn_lock:
        if getattr(launch, _WARNED_ATTR, False):
            return
        if launch is not None:
            setattr(launch, _WARNED_ATTR, True)
    block = getattr(arrival.thread._manager, _BLOCK_ATTR)
    warnings.warn(
        f"{block.describe(arrival.thread)}: lane {arrival.lane} read lane "
        f"{arrival.undefined_source} with cuda.{arrival.kind}(mask=0x{arrival.mask:08x}), but lane "
        f"{arrival.undefined_source} is not in the mask: the value is undefined on a GPU "
        "(the simulator gives NaN or a poison integer). Warned once per launch.",
        UndefinedShuffleWarning,
        stacklevel=4,  # _warn_undefined_once, _shuffle, cuda.shfl_*_sync, the kernel
    )


def _shuffle(kind: str, mask, value, b):
    _check_shuffle_value(kind, value)
    _check_integer(kind, "the lane argument", b)
    arrival = _collective(kind, mask, (value, int(b)), sys._getframe(2))
    if arrival.undefined_source is not None:
        _warn_undefined_once(arrival)
    return arrival.result


def _vote(kind: str, mask, predicate):
    _check_predicate(kind, predicate)
    return _collective(kind, mask, bool(predicate), sys._getframe(2)).result


# --- The kernel API (installed on FakeCUDAModule as static methods) -----------------------------


def shfl_sync(mask, value, src_lane):
    """The value of ``src_lane`` (its low 5 bits) among the lanes in ``mask``."""
    return _shuffle("shfl_sync", mask, value, src_lane)


def shfl_up_sync(mask, value, delta):
    """The value of lane ``laneid - delta``, or the caller's own below lane 0."""
    return _shuffle("shfl_up_sync", mask, value, delta)


def shfl_down_sync(mask, value, delta):
    """The value of lane ``laneid + delta``, or the caller's own past lane 31."""
    return _shuffle("shfl_down_sync", mask, value, delta)


def shfl_xor_sync(mask, value, lane_mask):
    """The value of lane ``laneid ^ lane_mask``."""
    return _shuffle("shfl_xor_sync", mask, value, lane_mask)


def ballot_sync(mask, predicate):
    """Bit mask (int32, as on a GPU) of the lanes in ``mask`` whose predicate is non-zero."""
    return _vote("ballot_sync", mask, predicate)


def all_sync(mask, predicate):
    """True when the predicate is non-zero on every lane in ``mask``."""
    return _vote("all_sync", mask, predicate)


def any_sync(mask, predicate):
    """True when the predicate is non-zero on some lane in ``mask``."""
    return _vote("any_sync", mask, predicate)


def eq_sync(mask, predicate):
    """True when the predicate is zero on all lanes in ``mask`` or non-zero on all of them."""
    return _vote("eq_sync", mask, predicate)


def syncwarp(mask=FULL_MASK):
    """Wait until every lane in ``mask`` reaches a ``syncwarp`` with the same mask."""
    _collective(SYNCWARP, mask, None, sys._getframe(1))


def activemask():
    """The lanes of the warp executing this call together (uint32); see the module docstring."""
    return _collective(ACTIVEMASK, None, None, sys._getframe(1)).result


KERNEL_API = {
    fn.__name__: fn
    for fn in (shfl_sync, shfl_up_sync, shfl_down_sync, shfl_xor_sync, ballot_sync, all_sync,
               any_sync, eq_sync, syncwarp, activemask)
}


# --- Patching the simulator ---------------------------------------------------------------------


def _patched_popc(self, val):
    """Population count of the value's two's-complement bits (the simulator's bin() miscounts
    negatives, such as a ballot that includes lane 31)."""
    if val < 0:
        width = val.dtype.itemsize * 8 if isinstance(val, np.integer) else 64
        val = int(val) & ((1 << width) - 1)
    return bin(val).count("1")


def _patch(cls, name: str, make_wrapper) -> None:
    """Replace ``cls.name`` with ``make_wrapper(original)``, once."""
    original = getattr(cls, name)
    if getattr(original, _PATCH_MARK, False):
        return
    wrapper = make_wrapper(original)
    wrapper.__wrapped__ = original
    setattr(wrapper, _PATCH_MARK, True)
    setattr(cls, name, wrapper)


def _wrap_manager_init(original):
    def __init__(self, *args, **kwargs):
        original(self, *args, **kwargs)
        setattr(self, _BLOCK_ATTR, _BlockWarps(self._f, self._block_dim))

    return __init__


def _wrap_thread_init(original):
    def __init__(self, f, manager, *args, **kwargs):
        original(self, f, manager, *args, **kwargs)
        block = manager.__dict__.get(_BLOCK_ATTR)
        if block is not None:  # registered here, in the manager's thread, not in the lane's
            block.threads[self.thread_id] = self

    return __init__


def _thread_exited(thread) -> bool:
    """Started and finished. A waiting lane notices an exit at its next poll (POLL_SECONDS)."""
    return scheduler.exited(thread)


def _wrap_syncthreads(original):
    def syncthreads(self):
        self._warp_barriers += 1
        self._warp_in_barrier = True
        try:
            block = self._manager.__dict__.get(_BLOCK_ATTR)
            if block is not None and block.warps:
                block.lane_stopped(self)
            original(self)
        finally:
            self._warp_in_barrier = False

    return syncthreads


_MISSING = object()
_SAVED: dict = {}  # (class, attribute) -> what install() replaced, for uninstall()


def _save(cls, name: str) -> None:
    _SAVED.setdefault((cls, name), cls.__dict__.get(name, _MISSING))


def install() -> None:
    """Add the warp-level primitives to numba-cuda's simulator; safe to call more than once."""
    # numba's simulator internals, patched only when the extras are installed
    from numba.cuda.simulator.kernel import BlockManager, BlockThread
    from numba.cuda.simulator.kernelapi import FakeCUDAModule

    for cls, names in ((BlockThread, ("_warp_exited", "_warp_barriers", "_warp_in_barrier", "__init__",
                                      "syncthreads")),
                       (BlockManager, ("__init__",)),
                       (FakeCUDAModule, (*KERNEL_API, "popc"))):
        for name in names:
            _save(cls, name)
    # Class-level defaults: what a thread that never exited or synced reads.
    BlockThread._warp_exited = property(_thread_exited)
    BlockThread._warp_barriers = 0
    BlockThread._warp_in_barrier = False
    _patch(BlockManager, "__init__", _wrap_manager_init)
    _patch(BlockThread, "__init__", _wrap_thread_init)
    _patch(BlockThread, "syncthreads", _wrap_syncthreads)
    for name, fn in KERNEL_API.items():
        setattr(FakeCUDAModule, name, staticmethod(fn))
    FakeCUDAModule.popc = _patched_popc


def uninstall() -> None:
    """Put the simulator back as numba-cuda ships it (for measuring what the shims cost)."""
    for (cls, name), original in _SAVED.items():
        if original is _MISSING:
            if name in cls.__dict__:
                delattr(cls, name)
        else:
            setattr(cls, name, original)
    _SAVED.clear()
