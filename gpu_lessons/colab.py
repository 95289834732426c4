"""Google Colab: where the course lives, the notebooks' first cell, and what it prints there.

Colab ships a T4 (sm_75) runtime with a CUDA 12 driver, Python 3.13 and numba-cuda 0.22.2; the
course is not installed. Every notebook's first code cell (written by ``tools/colab_cell.py`` from
``cell_source()``) installs it there with the ``cu12`` extra, straight from the repository: the
package cannot be imported to do it before it is installed, so the cell carries its own pip line.
Everywhere else the cell installs nothing and prints nothing.

``REPOSITORY`` is the one place the repository's address is written (``pyproject.toml``'s
``[project.urls]`` and the README's Colab links are held to it by tests/test_colab.py).
"""

from __future__ import annotations

import importlib.metadata
import sys

REPOSITORY = "https://github.com/lcpu-club/gpu-lessons"  # assumed: not checkable here (no remote)
BRANCH = "main"  # the branch Colab links open
EXTRA = "cu12"  # Colab's driver is CUDA 12.x
COLAB = "https://colab.research.google.com/github/"


def in_colab() -> bool:
    """Running in a Google Colab kernel (its ``google.colab`` module is loaded at start)."""
    return "google.colab" in sys.modules


def requirement() -> str:
    """What the notebooks' first cell asks pip for in Colab."""
    return f"gpu-lessons[{EXTRA}] @ git+{REPOSITORY}"


def notebook_url(path: str) -> str:
    """The 'Open in Colab' address of a notebook, ``path`` relative to the repository's root."""
    return f"{COLAB}{REPOSITORY.removeprefix('https://github.com/')}/blob/{BRANCH}/{path}"


def cell_source() -> str:
    """Every notebook's first code cell: in Colab, install the course, then say what runs live."""
    return "\n".join([
        "# Google Colab only: install the course (about a minute), then show the GPU and what runs live.",
        "# Anywhere else this cell does nothing.",
        "import importlib.util, subprocess, sys",
        'if "google.colab" in sys.modules and importlib.util.find_spec("gpu_lessons") is None:',
        f'    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "{requirement()}"], check=True)',
        "    importlib.invalidate_caches()",
        "import gpu_lessons.colab",
        "gpu_lessons.colab.setup()",
    ])


def live_parts() -> list[str]:
    """What runs live here, one line each (the hook: a lesson that this GPU cannot run adds a line
    saying what it leaves out and why)."""
    import gpu_lessons

    if gpu_lessons.SIMULATED:
        return ["Live: nothing. No GPU in this runtime (Colab: Runtime > Change runtime type > T4 GPU); "
                "every kernel runs on the simulator, and timings are the H200 recordings."]
    return ["Live: every lesson's kernels are compiled for this GPU, checked and timed on it."]


def _stale_modules() -> list[str]:
    """Packages pip replaced after this kernel had imported them: a restart loads the new ones."""
    stale = []
    for name in ("numpy", "numba"):
        module = sys.modules.get(name)
        if module is not None and module.__version__ != importlib.metadata.version(name):
            stale.append(f"{name} {module.__version__} -> {importlib.metadata.version(name)}")
    return stale


def setup() -> None:
    """The first cell's report: in Colab, the GPU and what runs live; elsewhere nothing."""
    if not in_colab():
        return
    stale = _stale_modules()
    if stale:
        print(f"pip upgraded packages this session had loaded ({', '.join(stale)}): "
              "Runtime > Restart session, then run this cell again.")
        return
    import gpu_lessons

    print(f"gpu-lessons {gpu_lessons.__version__} installed (from {REPOSITORY}).")
    print(gpu_lessons.describe())
    for line in live_parts():
        print(line)
