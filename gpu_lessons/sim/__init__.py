"""What gpu_lessons adds to numba-cuda's simulator, by patching classes at run time (never files).

- ``warp``: warp-level primitives (shuffles, votes, syncwarp, activemask) with CUDA semantics.
- ``trace``: per-instruction memory-traffic counters named after Nsight Compute metrics.
- ``fma``: a fused ``cuda.fma`` (the simulator's rounds twice), so results match the GPU's FFMA.
- ``ptx`` and ``wgmma``: the Python twins of ``gpu_lessons.ptx`` (cp.async, mma.sync, Hopper's wgmma
  with its matrix descriptors, fences and asynchrony), installed as plain functions, not patches.
- ``scheduler``: a block manager that waits for its threads instead of polling them (faster).
- ``target``: the device reports a target GPU's compute capability and limits
  (``GPU_LESSONS_DEVICE=t4``, ...), so the course runs as on that GPU.
"""


from contextlib import contextmanager


def install() -> None:
    """Install the simulator extras; safe to call more than once."""
    from . import fma, scheduler, target, warp  # numba's simulator modules load only when installed

    fma.install()
    scheduler.install()
    warp.install()
    target.install()


def uninstall() -> None:
    """Back to numba-cuda's simulator as shipped (what `tools/sim_overhead.py` compares with)."""
    from . import fma, scheduler, warp  # numba's simulator modules load only when extras are installed

    warp.uninstall()
    scheduler.uninstall()
    fma.uninstall()


@contextmanager
def extras_removed():
    uninstall()
    try:
        yield
    finally:
        install()
