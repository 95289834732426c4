"""Provenance of a measurement made now: the device, the software, the date, the command, the revision."""

from __future__ import annotations

import datetime as dt
import os
import subprocess
import sys
from pathlib import Path

from .device import device_info

REPOSITORY = Path(__file__).resolve().parents[1]


def observed_clocks() -> dict:
    """SM and memory clocks now (NVML), to record next to timings; empty when NVML is missing."""
    try:
        import pynvml
    except ImportError:  # NVML comes with the cu12/cu13 extras; a recording without it is still valid
        return {}
    try:
        pynvml.nvmlInit()
        handle = pynvml.nvmlDeviceGetHandleByIndex(0)
        return {
            "sm_clock_now_mhz": pynvml.nvmlDeviceGetClockInfo(handle, pynvml.NVML_CLOCK_SM),
            "memory_clock_now_mhz": pynvml.nvmlDeviceGetClockInfo(handle, pynvml.NVML_CLOCK_MEM),
            "driver_version": pynvml.nvmlSystemGetDriverVersion(),
            "power_limit_w": pynvml.nvmlDeviceGetPowerManagementLimit(handle) / 1000,
        }
    except pynvml.NVMLError:
        return {}


def git_revision() -> str:
    """HEAD's commit ('+dirty' when tracked files differ); a lent GPU machine gets a copy of the
    tree without .git, so there the caller passes it in GPU_LESSONS_GIT_REVISION."""
    if os.environ.get("GPU_LESSONS_GIT_REVISION"):
        return os.environ["GPU_LESSONS_GIT_REVISION"]
    def git(*args: str) -> str:
        return subprocess.run(["git", "-C", str(REPOSITORY), *args], capture_output=True, text=True,
                              timeout=10, check=True).stdout.strip()

    try:
        dirty = git("status", "--porcelain", "--untracked-files=no")
        return git("rev-parse", "--short", "HEAD") + ("+dirty" if dirty else "")
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def measurement_meta(lesson: str, live: bool = True) -> dict:
    """Provenance of a measurement made now: device facts, versions, date, command, git, clocks."""
    facts = device_info().as_dict()
    meta = {"gpu": facts.pop("name"), **facts, "lesson": lesson,
            "date": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
            "command": " ".join(["gpu-lessons", *sys.argv[1:]]),
            "git_revision": git_revision(), **observed_clocks()}
    if live:
        meta["live"] = True
    return meta
