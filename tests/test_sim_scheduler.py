"""The simulator's block scheduler (gpu_lessons.sim.scheduler): same results and errors as
numba-cuda's own, with threads reused, no busy polling and no garbage left by a launch."""

import gc
import multiprocessing
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
try:
    import gpu_lessons
except ModuleNotFoundError:  # a checkout without `pip install -e .`
    sys.path.insert(0, str(ROOT))
    import gpu_lessons

if not gpu_lessons.SIMULATED:
    pytest.skip("the scheduler runs simulated launches (on a GPU, trace() uses it: test_sim_trace)",
                allow_module_level=True)

from numba import cuda  # noqa: E402

from gpu_lessons import sim  # noqa: E402
from gpu_lessons.sim import scheduler  # noqa: E402


@cuda.jit
def reverse_in_shared(x, out, rounds):
    """Each round, every thread writes its slot and reads its mirror's: wrong without a barrier."""
    tile = cuda.shared.array(1024, np.float32)
    t = cuda.threadIdx.x
    n = cuda.blockDim.x
    i = cuda.blockIdx.x * n + t
    value = x[i]
    for _ in range(rounds):
        tile[t] = value
        cuda.syncthreads()
        value = tile[n - 1 - t]
        cuda.syncthreads()
    out[i] = value


@cuda.jit
def raise_in_one_thread(out, bad):
    t = cuda.threadIdx.x
    if t == bad:
        out[10_000] = 1.0  # out of bounds: IndexError in the simulator
    cuda.syncthreads()
    out[t] = t


def expected_reverse(x, block, rounds):
    blocks = x.reshape(-1, block)
    return (blocks[:, ::-1] if rounds % 2 else blocks).reshape(-1)


@pytest.mark.parametrize("block, rounds", [(1, 1), (33, 3), (256, 2), (1024, 1)])
def test_barriers_hold_for_any_block_size(block, rounds):
    x = np.random.default_rng(block).standard_normal(3 * block).astype(np.float32)
    out = np.full_like(x, np.nan)
    reverse_in_shared[3, block](x, out, rounds)
    np.testing.assert_array_equal(out, expected_reverse(x, block, rounds))


@pytest.mark.parametrize("bad", [0, 63])
def test_a_thread_that_raises_ends_the_launch_with_its_error(bad):
    start = time.perf_counter()
    with pytest.raises(IndexError, match=f"tid=\\[{bad}, 0, 0\\]"):
        raise_in_one_thread[1, 64](np.zeros(64, np.float32), bad)
    assert time.perf_counter() - start < 5
    assert gc.isenabled()
    x = np.arange(64, dtype=np.float32)  # the next launch runs normally
    out = np.zeros_like(x)
    reverse_in_shared[1, 64](x, out, 1)
    np.testing.assert_array_equal(out, x[::-1])


def test_threads_are_reused_across_blocks_and_launches():
    x = np.ones(8 * 128, np.float32)
    reverse_in_shared[8, 128](x, np.zeros_like(x), 1)
    threads = threading.active_count()
    for _ in range(3):
        reverse_in_shared[8, 128](x, np.zeros_like(x), 1)
    assert threading.active_count() == threads


def test_a_launch_leaves_no_garbage_and_the_collector_on():
    x = np.ones(4 * 64, np.float32)
    reverse_in_shared[4, 64](x, np.zeros_like(x), 2)
    gc.collect()
    gc.disable()
    try:
        reverse_in_shared[4, 64](x, np.zeros_like(x), 2)
        assert gc.collect() == 0
    finally:
        gc.enable()
    reverse_in_shared[4, 64](x, np.zeros_like(x), 2)
    assert gc.isenabled()


def _launch_in_child(queue):
    x = np.arange(32, dtype=np.float32)
    out = np.zeros_like(x)
    reverse_in_shared[1, 32](x, out, 1)
    queue.put(out.tolist())


@pytest.mark.skipif(sys.platform != "linux", reason="fork is the start method that copies the pool")
def test_a_forked_child_starts_its_own_threads():
    reverse_in_shared[1, 32](np.ones(32, np.float32), np.zeros(32, np.float32), 1)  # the parent's pool
    context = multiprocessing.get_context("fork")
    queue = context.Queue()
    child = context.Process(target=_launch_in_child, args=(queue,))
    child.start()
    result = queue.get(timeout=60)
    child.join(60)
    assert result == list(range(31, -1, -1))


def test_uninstall_gives_numba_back_and_install_is_idempotent():
    from numba.cuda.simulator.kernel import BlockManager, BlockThread, FakeCUDAKernel

    assert BlockManager.run is scheduler._manager_run
    with sim.extras_removed():
        assert BlockManager.run.__module__ == "numba.cuda.simulator.kernel"
        assert FakeCUDAKernel.__call__.__module__ == "numba.cuda.simulator.kernel"
        assert "start" not in vars(BlockThread) and not hasattr(BlockManager, "_thread_finished")
        x = np.arange(64, dtype=np.float32)
        out = np.zeros_like(x)
        reverse_in_shared[1, 64](x, out, 1)  # numba's own scheduler, same answer
        np.testing.assert_array_equal(out, x[::-1])
    scheduler.install()
    assert BlockManager.run is scheduler._manager_run


def _launch_or_hang(seconds: float = 20) -> np.ndarray | None:
    """The barrier kernel's output, or None if the launch did not end in ``seconds``."""
    x = np.arange(64, dtype=np.float32)
    out = np.zeros_like(x)
    launch = threading.Thread(target=reverse_in_shared[1, 64], args=(x, out, 1), daemon=True)
    launch.start()
    launch.join(seconds)
    return None if launch.is_alive() else out


def test_any_syncthreads_reports_to_the_scheduler_whatever_the_install_order():
    """GPU mode installs the extras at the first trace(), possibly inside a wrapper of syncthreads
    (exercise 5.2's barrier counter); restoring numba's own syncthreads after that must not leave
    the scheduler waiting for reports that never come."""
    from numba.cuda.simulator.kernel import BlockThread

    with sim.extras_removed():
        numba_syncthreads = BlockThread.syncthreads
        BlockThread.syncthreads = lambda self: numba_syncthreads(self)  # a wrapper, as a check makes
        scheduler.install()
        BlockThread.syncthreads = numba_syncthreads  # the wrapper's owner restores what it saw
        out = _launch_or_hang()
        scheduler.uninstall()
    assert out is not None, "the launch hung"
    np.testing.assert_array_equal(out, np.arange(64, dtype=np.float32)[::-1])


def test_no_private_threading_state():
    """Python 3.13 changed threading's private attributes (``Thread._is_stopped`` went): the simulator's
    extras use none, so any Python from 3.11 on runs them (CI runs these tests on 3.11 and 3.13)."""
    import re

    private = re.compile(r"threading\._[a-z]|\._(started|is_stopped|tstate_lock|handle|ident)\b|\b_active\b")
    for path in sorted((ROOT / "gpu_lessons" / "sim").glob("*.py")):
        found = private.search(path.read_text(encoding="utf-8"))
        assert not found, f"{path.name} uses threading's private {found.group(0)!r}"
