"""Where generated kernel source lives: in memory (the default), or in files numba can cache.

A generated kernel is compiled from source text. By default ``define`` execs it under a made-up
file name registered with ``linecache`` (``inspect.getsource`` and the traffic tracer read it from
there). Big unrolled kernels take a minute of numba's front end each; with
``GPU_LESSONS_GENERATED_DIR`` set, the source is written to a file in that folder (named after a
hash of its text, written once) and ``jit`` compiles with ``cache=True``: processes that build the
same kernels (a benchmark's compile workers, then its timing process) share numba's disk cache.
"""

from __future__ import annotations

import hashlib
import linecache
import os
from pathlib import Path

from numba import cuda

DIRECTORY_VARIABLE = "GPU_LESSONS_GENERATED_DIR"


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
