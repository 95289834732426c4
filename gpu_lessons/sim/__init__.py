"""What gpu_lessons adds to numba-cuda's simulator, by patching classes at run time (never files).

- ``warp``: warp-level primitives (shuffles, votes, syncwarp, activemask) with CUDA semantics.
- ``trace``: per-instruction memory-traffic counters named after Nsight Compute metrics.
"""


def install() -> None:
    """Install the simulator extras; safe to call more than once."""
    from . import warp

    warp.install()
