"""A block scheduler for numba-cuda's simulator: threads that wait instead of a manager that polls.

numba-cuda 0.30.4 runs a block as one Python thread per CUDA thread. Three costs dominate a
simulated launch, and this module removes most of each, with the same semantics:

* ``BlockManager.run`` loops over all the block's threads without pause until they finish, looking
  for threads parked in ``cuda.syncthreads()``, and so holds the GIL much of the time the threads
  need. Here a thread parking in ``syncthreads()`` or finishing counts itself under a lock, and the
  manager wakes only when every live thread is parked (it releases them all), when the last one
  finishes, or when one has raised (it aborts the launch, as numba does).
* Starting an OS thread costs about 140 us on the CI machine, more than a simple kernel's body, and
  numba starts one per CUDA thread. A pool (``_Pool``) keeps them: a worker runs one simulated
  thread after another, as that thread: ``current_thread()`` here, which the simulator's kernel API
  calls where it calls ``threading.current_thread()`` (to look up ``threadIdx``), returns the
  ``BlockThread`` meanwhile. No private state of ``threading`` is read or set (Python 3.13 changed
  it), so any Python from 3.11 on runs it.
* A block allocates a few thousand objects that live until it ends; they set off full collections
  of the whole heap again and again. The cyclic garbage collector pauses during a block, and the
  threads' links to their manager are cut when it ends, so reference counting frees the block.

Measured on the 2-core CI machine (``tools/sim_overhead.py``): a tiled 64x64x64 GEMM and a
65,536-float copy take 0.37x and 0.39x of the shipped simulator's time; the test suite 248 s
instead of 403 s.
"""

from __future__ import annotations

import collections
import gc
import os
import threading
import time

import numpy as np

_SAVED: dict = {}  # (class, attribute) -> numba's own, for uninstall()


class _Running(threading.local):
    thread = None  # in a pool worker: the BlockThread it runs now


_running = _Running()


def current_thread() -> threading.Thread:
    """``threading.current_thread()``, except in a pool worker running a simulated CUDA thread:
    that ``BlockThread``. numba's kernel API reads it (``cuda.threadIdx``, ``syncthreads()``):
    ``install()`` points the simulator's ``threading`` at a view with this function."""
    thread = _running.thread
    return thread if thread is not None else threading.current_thread()


class _KernelThreading:
    """The ``threading`` module as numba's kernel API (``simulator.kernelapi``) sees it: the same
    module, but ``current_thread()`` is the simulated CUDA thread a pool worker runs."""

    current_thread = staticmethod(current_thread)

    def __getattr__(self, name):
        return getattr(threading, name)


class _Pool:
    """OS threads kept for the simulated CUDA threads; there is always a worker for each thread
    submitted and not finished, since a block's threads must all run at once (barriers).

    Few wake-ups: a worker that finishes a thread takes the next waiting one itself, and an idle
    worker is woken only through one signal (``wake``, a lock released at most once until a worker
    takes it), passed on while threads wait. A queue that wakes one worker per thread costs a
    switch of OS threads per simulated thread on Python 3.13 (its ``queue.SimpleQueue`` hands
    each item to a waiting thread): 16 us per thread there against 0.8 us here."""

    def __init__(self):
        self.tasks = collections.deque()
        self.lock = threading.Lock()  # guards tasks, signalled, workers, unfinished
        self.wake = threading.Lock()  # held while no wake-up is pending; released to wake a worker
        self.wake.acquire()
        self.signalled = False
        self.workers = 0
        self.unfinished = 0  # waiting or running; there is always a worker for each

    def _signal(self) -> None:
        """Under ``lock``: while threads wait, one wake-up is pending."""
        if self.tasks and not self.signalled:
            self.signalled = True
            self.wake.release()

    def submit(self, task) -> None:
        with self.lock:
            self.unfinished += 1
            if self.unfinished > self.workers:  # a block's threads must all run at once
                self.workers += 1
                threading.Thread(target=self._work, name="gpu-lessons-sim", daemon=True).start()
            self.tasks.append(task)
            self._signal()

    def _work(self) -> None:
        running = _running
        while True:
            self.wake.acquire()
            with self.lock:
                self.signalled = False
                task = self.tasks.popleft() if self.tasks else None
                self._signal()  # more waiting: the next idle worker wakes too
            while task is not None:
                running.thread = task
                task._pool_running = True
                try:
                    task.run()
                except BaseException:  # noqa: B036  numba's run keeps an Exception; nothing may end a worker
                    pass
                running.thread = None
                task._pool_running = False
                with self.lock:
                    self.unfinished -= 1
                    done, task = task, (self.tasks.popleft() if self.tasks else None)
                    self._signal()
                done._pool_done.set()  # after the count: a joined thread's worker is free


_pool = _Pool()
os.register_at_fork(after_in_child=lambda: globals().update(_pool=_Pool()))  # a child has no workers


def _thread_start(self) -> None:
    self._pool_done = threading.Event()
    self._pool_running = False
    _pool.submit(self)


def _thread_is_alive(self) -> bool:
    return self.__dict__.get("_pool_running", False)


def _thread_join(self, timeout=None) -> None:
    self._pool_done.wait(timeout)


def exited(thread) -> bool:
    """Whether a simulated CUDA thread has started and finished, run by the pool or (the extras
    removed) as numba's own OS thread."""
    done = thread.__dict__.get("_pool_done")
    if done is not None:
        return done.is_set()
    return thread.ident is not None and not thread.is_alive()


def _thread_run(self) -> None:
    """numba's ``BlockThread.run`` (the kernel, its exception stored), then tell the manager."""
    try:
        _SAVED[("BlockThread", "run")](self)
    finally:
        self._manager._thread_finished(failed=self.exception is not None)


def _blocked(self) -> bool:
    return self.__dict__.get("_sched_blocked", False)


def _set_blocked(self, blocked: bool) -> None:
    """numba's ``syncthreads()`` sets ``syncthreads_blocked`` before it waits: a property, so any
    ``syncthreads`` (numba's, or a wrapper around it, installed in any order) reports the thread
    parked. The manager clears it when it lets the thread go."""
    if not blocked:
        self.__dict__["_sched_blocked"] = False
        return
    manager = self._manager
    with manager._sched_lock:
        self.__dict__["_sched_blocked"] = True
        manager._sched_parked += 1
        if manager._sched_parked == manager._sched_live:
            manager._sched_wake.set()


def _thread_finished(self, failed: bool) -> None:
    """On the manager: a thread finished (or raised); wake the manager if it can act."""
    with self._sched_lock:
        self._sched_live -= 1
        self._sched_failed |= failed
        if self._sched_failed or self._sched_parked == self._sched_live:
            self._sched_wake.set()


def _launch(self, *args):
    """numba's ``FakeCUDAKernel.__call__`` (a launch, or a device function's call inside one) with
    the cyclic garbage collector paused: a launch allocates thousands of objects that live until
    their block ends, which set off full collections of the whole heap (measured: 40% of a
    simple copy's time). The threads' links to their manager are cut when a block ends, so
    reference counting frees it."""
    if not gc.isenabled():  # inside a launch already
        return _SAVED[("FakeCUDAKernel", "__call__")](self, *args)
    gc.disable()
    try:
        return _SAVED[("FakeCUDAKernel", "__call__")](self, *args)
    finally:
        gc.enable()


def _manager_run(self, grid_point, *args) -> None:
    """Run a block: start its threads, release each barrier once all live threads are parked."""
    from numba.cuda.simulator.kernel import BlockThread

    self._sched_lock = threading.Lock()
    self._sched_wake = threading.Event()
    self._sched_parked = 0
    self._sched_failed = False
    points = list(np.ndindex(*self._block_dim))
    self._sched_live = len(points)

    def target():
        self._f(*args)

    threads = []
    for block_point in points:
        thread = BlockThread(target, self, grid_point, block_point, self._debug)
        threads.append(thread)
        thread.start()
    while True:
        self._sched_wake.wait()
        with self._sched_lock:
            self._sched_wake.clear()  # under the lock: a thread's report is never lost
            failed, live = self._sched_failed, self._sched_live
            release = not failed and live > 0 and self._sched_parked == live
            if release:
                self._sched_parked = 0
        if failed:
            _abort(threads)
        if live == 0:
            break
        if release:
            for thread in threads:
                if thread.syncthreads_blocked:
                    thread.syncthreads_blocked = False
                    thread.syncthreads_event.set()
    for thread in threads:
        thread.join()
        if thread.exception:
            raise thread.exception[0].with_traceback(thread.exception[1])
    for thread in threads:  # no cycle through the manager: the block's objects go when it ends
        thread._manager = None


ABORT_JOIN_SECONDS = 10.0  # lanes waiting in a shuffle see the abort flag within warp.POLL_SECONDS


def _abort(threads) -> None:
    """As numba does: flag every thread, let the parked ones go (they raise), raise the first error.
    Then wait (up to ABORT_JOIN_SECONDS) for the threads to leave: each holds numba's
    ``swapped_cuda_module``, and only the last one out puts the real ``numba.cuda`` back in the
    learner's globals. Raising before they leave left ``cuda`` bound to a ``FakeCUDAModule``, so the
    learner's next ``@cuda.jit`` failed with AttributeError."""
    failed = next(thread for thread in threads if thread.exception)
    for thread in threads:
        thread.abort = True
        thread.syncthreads_blocked = False
        thread.syncthreads_event.set()
    deadline = time.monotonic() + ABORT_JOIN_SECONDS
    for thread in threads:
        thread.join(max(0.0, deadline - time.monotonic()))
    raise failed.exception[0].with_traceback(failed.exception[1])


_PATCHES = {  # (class or module, attribute) -> its replacement here
    ("kernelapi", "threading"): _KernelThreading(),
    ("BlockThread", "start"): _thread_start,
    ("BlockThread", "is_alive"): _thread_is_alive,
    ("BlockThread", "join"): _thread_join,
    ("BlockThread", "run"): _thread_run,
    ("BlockThread", "syncthreads_blocked"): property(_blocked, _set_blocked),
    ("BlockManager", "run"): _manager_run,
    ("BlockManager", "_thread_finished"): _thread_finished,
    ("FakeCUDAKernel", "__call__"): _launch,
}


def _classes() -> dict:
    from numba.cuda.simulator import kernel, kernelapi  # the simulator, only when patched

    classes = {name: getattr(kernel, name) for name in ("BlockThread", "BlockManager", "FakeCUDAKernel")}
    return {**classes, "kernelapi": kernelapi}


def install() -> None:
    """Replace numba's polling manager; safe to call more than once."""
    if _SAVED:
        return
    classes = _classes()
    for (cls, name), replacement in _PATCHES.items():
        _SAVED[cls, name] = getattr(classes[cls], name, None)  # inherited ones too: run() calls them
        setattr(classes[cls], name, replacement)


def uninstall() -> None:
    """Back to numba's own manager."""
    classes = _classes()
    for (cls, name), original in _SAVED.items():
        if name in vars(classes[cls]):
            delattr(classes[cls], name)
        if original is not None and getattr(classes[cls], name, None) is not original:
            setattr(classes[cls], name, original)  # numba's class defined it itself
    _SAVED.clear()
