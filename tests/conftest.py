"""Tests run on numba-cuda's simulator unless GPU_LESSONS_MODE says otherwise (and the notebooks that
nbval executes inherit the choice)."""

import os

os.environ.setdefault("GPU_LESSONS_MODE", "sim")
