"""Where generated kernel source lives: in memory (the default), or in files numba can cache.

A generated kernel is compiled from source text. By default ``define`` execs it under a made-up
file name registered with ``linecache`` (``inspect.getsource`` and the traffic tracer read it from
there). Big unrolled kernels take a minute of numba's front end each; with
``GPU_LESSONS_GENERATED_DIR`` set, the source is written to a file in that folder (named after a
hash of its text, written once) and ``jit`` compiles with ``cache=True``: processes that build the
same kernels (a lesson's compile workers, then its timing process) share numba's disk cache.
``compile_in_parallel`` runs those workers: a lesson with many big kernels (lesson 7) compiles them in
several processes at once, then loads them from the cache.
"""

from __future__ import annotations

import hashlib
import linecache
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from numba import cuda

from .. import SIMULATED

DIRECTORY_VARIABLE = "GPU_LESSONS_GENERATED_DIR"
DEFAULT_DIRECTORY = Path(tempfile.gettempdir()) / "gpu_lessons_generated"
REPOSITORY = Path(__file__).resolve().parents[2]
# A worker: import the module, call the function with its share of the job indices, exit with its status.
_WORKER = ("import sys, importlib; sys.exit(getattr(importlib.import_module(sys.argv[1]), sys.argv[2])"
           "([int(i) for i in sys.argv[3].split(',') if i]))")


def directory() -> Path | None:
    value = os.environ.get(DIRECTORY_VARIABLE)
    return Path(value) if value else None


def define(source: str, name: str, namespace: dict, label: str):
    """Exec ``source`` (which defines function ``name``) in ``namespace``; returns the function."""
    source = f"# {label}\n{source}"  # the label names the compile options: a file (a cache entry) each
    folder = directory()
    if folder is None:
        filename = f"<{label}>"
        linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    else:
        folder.mkdir(parents=True, exist_ok=True)
        digest = hashlib.sha256(source.encode()).hexdigest()[:16]
        path = folder / f"{name}_{digest}.py"
        if not path.exists():  # written once: numba's cache keys on the file's time stamp
            temporary = path.with_suffix(f".{os.getpid()}.tmp")
            temporary.write_text(source)
            os.replace(temporary, path)
        filename = str(path)
    exec(compile(source, filename, "exec"), namespace)  # noqa: S102 - our own source
    return namespace[name]


def jit(function, **options):
    """``cuda.jit(**options)(function)``, with numba's disk cache when the source is in a file."""
    if directory() is not None and not function.__code__.co_filename.startswith("<"):
        options["cache"] = True
    return cuda.jit(**options)(function)


def tile_kernel(tile, make_source, cache: dict):
    """The compiled kernel of a generated tile, once per tile (a big unrolled kernel takes seconds in
    NVVM): ``make_source(tile)`` gives the Python kernel; the tile's register cap and minimum
    blocks per SM become numba's ``max_registers`` and ``launch_bounds`` on a GPU."""
    if tile not in cache:
        options = {}
        if tile.max_registers and not SIMULATED:
            options["max_registers"] = tile.max_registers
        if tile.min_blocks and not SIMULATED:
            options["launch_bounds"] = (tile.threads, tile.min_blocks)
        cache[tile] = jit(make_source(tile), **options)
    return cache[tile]


def compile_in_parallel(module: str, function: str, jobs: int, workers: int | None = None) -> float:
    """Compile generated kernels in worker processes so that this one loads them from numba's cache.

    Worker w runs ``module.function(indices)`` (``import module``; jobs w, w + workers, ...): it must
    build and compile those kernels and return 0. The generated source goes to files first
    (``DIRECTORY_VARIABLE`` is set to ``DEFAULT_DIRECTORY`` here when unset, and the workers inherit
    it), so the caller's own ``jit`` of the same source finds the compiled code on disk. Returns the
    seconds taken; a worker that fails is reported on stderr and its kernels are compiled later, in
    this process, when they are first used.
    """
    if directory() is None:
        os.environ[DIRECTORY_VARIABLE] = str(DEFAULT_DIRECTORY)
    if jobs <= 0:
        return 0.0
    workers = max(1, min(jobs, workers or max(1, (os.cpu_count() or 2) - 1)))
    start = time.perf_counter()
    processes = [subprocess.Popen([sys.executable, "-c", _WORKER, module, function,
                                   ",".join(str(i) for i in range(w, jobs, workers))], cwd=REPOSITORY)
                 for w in range(workers)]
    failed = [w for w, process in enumerate(processes) if process.wait() != 0]
    if failed:
        print(f"compile_in_parallel: worker(s) {failed} of {module}.{function} failed; their kernels "
              "compile in this process when first used", file=sys.stderr)
    return time.perf_counter() - start
