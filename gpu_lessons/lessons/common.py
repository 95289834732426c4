"""What every lesson's experiment shares: timed rows of the tidy table, progress, live metadata."""

from __future__ import annotations

import datetime as dt
import math
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from .. import bench
from ..device import device_info

GPU_LESSONS = "gpu_lessons"


def timed_row(lesson, variant, launch, *, size, bytes_moved, flops, provider=GPU_LESSONS,
              param=math.nan, input_sets=1, runs: int | None = None) -> dict:
    """Time ``launch(k)`` and return one row of the tidy table (``runs``: fewer for slow kernels)."""
    timing = bench.measure(launch, input_sets=input_sets, **({"runs": runs} if runs else {}))
    return {
        "lesson": lesson, "variant": variant, "provider": provider, "size": int(size),
        "param": float(param), "bytes": int(bytes_moved), "flops": int(flops), "runs": timing.runs,
        "median_ms": timing.median_ms, "min_ms": timing.min_ms, "max_ms": timing.max_ms,
        **bench.throughput(bytes_moved, flops, timing),
    }


def progress(items, description: str):
    """A progress bar for long sweeps (rich), falling back to the bare iterable."""
    try:
        from rich.progress import track
    except ImportError:  # pragma: no cover - rich is a dependency; stay usable without it
        return items
    return track(items, description=description, transient=True)


def observed_clocks() -> dict:
    """SM and memory clocks now (NVML), to record next to timings; empty when NVML is missing."""
    try:
        import pynvml

        pynvml.nvmlInit()
        handle = pynvml.nvmlDeviceGetHandleByIndex(0)
        return {
            "sm_clock_now_mhz": pynvml.nvmlDeviceGetClockInfo(handle, pynvml.NVML_CLOCK_SM),
            "memory_clock_now_mhz": pynvml.nvmlDeviceGetClockInfo(handle, pynvml.NVML_CLOCK_MEM),
            "driver_version": pynvml.nvmlSystemGetDriverVersion(),
            "power_limit_w": pynvml.nvmlDeviceGetPowerManagementLimit(handle) / 1000,
        }
    except Exception:  # noqa: BLE001 - NVML is optional; a recording without it is still valid
        return {}


def git_revision() -> str:
    """HEAD's commit ('+dirty' when tracked files differ); a lent GPU machine gets a copy of the
    tree without .git, so there the caller passes it in GPU_LESSONS_GIT_REVISION."""
    if os.environ.get("GPU_LESSONS_GIT_REVISION"):
        return os.environ["GPU_LESSONS_GIT_REVISION"]
    root = Path(__file__).resolve().parents[2]

    def git(*args: str) -> str:
        return subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True,
                              timeout=10, check=True).stdout.strip()

    try:
        dirty = git("status", "--porcelain", "--untracked-files=no")
        return git("rev-parse", "--short", "HEAD") + ("+dirty" if dirty else "")
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def measurement_meta(lesson: str, live: bool) -> dict:
    """Provenance of a measurement made now: device facts, versions, date, command, git, clocks."""
    facts = device_info().as_dict()
    meta = {"gpu": facts.pop("name"), **facts, "lesson": lesson,
            "date": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
            "command": " ".join(["gpu-lessons", *sys.argv[1:]]),
            "git_revision": git_revision(), **observed_clocks()}
    if live:
        meta["live"] = True
    facts = lesson_facts(lesson)
    if facts:
        meta["facts"] = facts
    return meta


def lesson_facts(lesson: str) -> dict:
    """What a lesson's last measure() learned beside its timings (kernel resources, SASS counts,
    device limits), from its optional ``recorded_facts()``: kept in the meta, for the simulator."""
    from . import EXPERIMENTS

    module = EXPERIMENTS.get(lesson)
    facts = getattr(module, "recorded_facts", None)
    return facts() if facts else {}


def check_row(name: str, passed: bool, detail: str) -> dict:
    return {"check": name, "passed": bool(passed), "detail": detail}


@dataclass(frozen=True)
class LessonData:
    """A lesson's table with where it came from: measured just now, or a recording under data/."""

    table: pd.DataFrame
    meta: dict
    provenance: str
    live: bool
    source: str


def load(module, live: bool | None = None, gpu: str | None = None) -> LessonData:
    """Measure live on a GPU (``live=None`` decides by mode), else read the reference recording."""
    from .. import SIMULATED, results

    if live is None:
        live = not SIMULATED
    if live:
        table = module.measure(show_progress=True)
        meta = measurement_meta(module.NAME, live=True)
        return LessonData(table, meta, results.provenance(meta), True, "measured just now")
    recording = results.read_recording(module.NAME, gpu=gpu)
    return LessonData(recording.table, recording.meta, results.provenance(recording.meta), False,
                      results.shown_path(recording.csv_path))
