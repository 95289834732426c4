"""What gpu_lessons adds to numba-cuda's simulator, by patching classes at run time (never files).

- ``warp``: warp-level primitives (shuffles, votes, syncwarp, activemask) with CUDA semantics.
- ``trace``: per-instruction memory-traffic counters named after Nsight Compute metrics.
- ``fma``: a fused ``cuda.fma`` (the simulator's rounds twice), so results match the GPU's FFMA.
"""


from contextlib import contextmanager


def install() -> None:
    """Install the simulator extras; safe to call more than once."""
    from . import fma, warp  # numba's simulator modules load only when extras are installed

    fma.install()
    warp.install()


def uninstall() -> None:
    """Back to numba-cuda's simulator as shipped (what `tools/sim_overhead.py` compares with)."""
    from . import fma, warp  # numba's simulator modules load only when extras are installed

    warp.uninstall()
    fma.uninstall()


@contextmanager
def extras_removed():
    uninstall()
    try:
        yield
    finally:
        install()
