"""One runner for every lesson's experiment: its declared sections, timed on a GPU, into one result.

A lesson declares ``SECTIONS``, each a ``Section(name, measure)`` whose ``measure(run)`` adds to the
``Run`` it is given: timed rows (``run.time``), facts the run learns (``run.facts``), kernel resources
and SASS (``run.kernel``). ``measure`` runs the sections in order with a progress bar; a section that
raises is reported in one line and the rest go on; with ``partial=`` the table so far is saved after
each section. The outcome is one ``LessonResult``: what notebooks, the CLI and the scoreboard use,
live or read back from ``data/`` (``load``).
"""

from __future__ import annotations

import math
import os
import sys
import traceback
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from types import ModuleType

import numpy as np
import pandas as pd
from numba import typeof
from rich.progress import track

from .. import SIMULATED, bench, gates, occupancy, sass
from ..provenance import measurement_meta
from ..results import (
    OURS,
    Evidence,
    LessonResult,
    RecordingError,
    SectionFailure,
    make_table,
    read_result,
    shown_path,
    to_json,
)

SEED = 2026  # every lesson's inputs: the same random data on every run


@dataclass(frozen=True)
class Section:
    """A part of a lesson's experiment: a name for progress and errors, and what it measures."""

    name: str
    measure: Callable[[Run], None]


class Run:
    """What the sections of one run share and add to: rows, facts, kernels, and shared inputs."""

    def __init__(self, lesson: str, seed: int = SEED):
        self.lesson = lesson
        self.rng = np.random.default_rng(seed)
        self.rows: list[dict] = []
        self.facts: dict = {}
        self.kernels: dict = {}
        self._shared: dict = {}

    def time(self, variant: str, launch: Callable[[int], None], *, size: int, bytes_moved: int, flops: int,
             provider: str = OURS, param: float = math.nan, input_sets: int = 1,
             runs: int | None = None) -> dict:
        """Time ``launch(k)`` (k: which input set) and add its row to the table; returns the row."""
        timing = bench.measure(launch, input_sets=input_sets, **({"runs": runs} if runs else {}))
        row = {
            "lesson": self.lesson, "variant": variant, "provider": provider, "size": int(size),
            "param": float(param), "bytes": int(bytes_moved), "flops": int(flops), "runs": timing.runs,
            "median_ms": timing.median_ms, "min_ms": timing.min_ms, "max_ms": timing.max_ms,
            **bench.throughput(bytes_moved, flops, timing),
        }
        self.rows.append(row)
        return row

    def kernel(self, name: str, kernel, args: tuple, sass_pattern: str | None = None) -> dict:
        """Record a compiled kernel's registers, shared and local memory and SASS (as ``name``)."""
        resources = occupancy.kernel_resources(kernel, *args)
        entry = {"registers": resources.registers_per_thread,
                 "shared_bytes": resources.shared_bytes_per_block,
                 "local_bytes": resources.local_bytes_per_thread}
        try:
            text = kernel.inspect_sass(tuple(typeof(a) for a in args))
        except Exception as error:  # noqa: BLE001 - no nvdisasm: resources are still worth keeping
            self.facts.setdefault("sass_unavailable", f"{type(error).__name__}: {error}")
        else:
            entry["sass"] = sass.evidence(text, sass_pattern)
        self.kernels[name] = entry
        return entry

    def leave_out(self, name: str, why: str) -> None:
        """Record a part this GPU cannot run (``facts["left_out"]``: name -> why); the run goes on."""
        self.facts.setdefault("left_out", {})[name] = why

    def shared(self, key: str, make: Callable[[], object]):
        """An object several sections use (a device buffer, say), made once on first use."""
        if key not in self._shared:
            self._shared[key] = make()
        return self._shared[key]


# ---------------------------------------------------------------------------------------------
# Measuring


def measure(lesson: ModuleType, sections: list[str] | None = None, show_progress: bool = True,
            partial: str | os.PathLike | None = None) -> LessonResult:
    """Run a lesson's sections (all, or those named) on the GPU; one result, failures included."""
    chosen = _chosen_sections(lesson, sections)
    gates.say(lesson.NAME, left_out(lesson), once=True)
    run = Run(lesson.NAME)
    failures = []
    for section in _progress(chosen, lesson.NAME) if show_progress else chosen:
        try:
            section.measure(run)
        except Exception as error:  # noqa: BLE001 - one section's failure must not lose the others
            failures.append(SectionFailure(section.name, f"{type(error).__name__}: {error}"))
            print(f"{lesson.NAME}: section '{section.name}' failed: {failures[-1].error}", file=sys.stderr)
            if os.environ.get("GPU_LESSONS_TRACEBACK"):
                traceback.print_exc()
        if partial is not None:
            _save_partial(run, Path(partial))
    if not run.rows:
        failed = "; ".join(f"{f.section}: {f.error}" for f in failures) or "no section timed anything"
        raise RecordingError(f"{lesson.NAME}: the run measured nothing ({failed})")
    return LessonResult(lesson=lesson.NAME, table=make_table(run.rows), meta=measurement_meta(lesson.NAME),
                        evidence=Evidence(facts=run.facts, kernels=run.kernels), live=True,
                        failures=tuple(failures))


def left_out(lesson: ModuleType) -> dict[str, str]:
    """What of a lesson this GPU cannot run, {name: why} (a lesson without ``left_out``: nothing)."""
    ask = getattr(lesson, "left_out", None)
    return ask() if ask is not None else {}


def _chosen_sections(lesson: ModuleType, names: list[str] | None) -> list[Section]:
    if not names:
        return list(lesson.SECTIONS)
    known = {section.name: section for section in lesson.SECTIONS}
    unknown = [name for name in names if name not in known]
    if unknown:
        raise RecordingError(f"{lesson.NAME}: unknown section(s) {', '.join(map(repr, unknown))}; "
                             f"choose from: {', '.join(known)}")
    return [known[name] for name in names]


def _progress(items, description: str):
    return track(items, description=description, transient=True)


def _save_partial(run: Run, folder: Path) -> None:
    """What the run has so far, for a run that is cut short: rows.csv and facts.json."""
    folder.mkdir(parents=True, exist_ok=True)
    pd.DataFrame(run.rows).to_csv(folder / f"{run.lesson}.rows.csv", index=False)
    (folder / f"{run.lesson}.facts.json").write_text(to_json({"facts": run.facts, "kernels": run.kernels}))


# ---------------------------------------------------------------------------------------------
# Loading: live, or the recording


def load(lesson: ModuleType, live: bool | None = None, gpu: str | None = None, root=None,
         show_progress: bool = True) -> LessonResult:
    """The lesson's result: measured now on a GPU (``live=None`` decides by mode), else recorded."""
    if live is None:
        live = not SIMULATED
    if live:
        return measure(lesson, show_progress=show_progress)
    return read_result(lesson.NAME, gpu=gpu, root=root)


def recorded(result: LessonResult) -> LessonResult:
    """A live result as a recording stores it (no 'live' flag)."""
    meta = {key: value for key, value in result.meta.items() if key != "live"}
    return replace(result, meta=meta, live=False, source=shown_path(result.source))


SECTION_META_KEYS = ("date", "command", "git_revision", "driver", "cuda_runtime", "numba", "numba_cuda",
                     "python", "sm_clock_mhz", "memory_clock_mhz")


def merged(earlier: LessonResult, new: LessonResult, sections: list[str]) -> LessonResult:
    """A recording with some sections measured again (``gpu-lessons record L --section S --merge``):
    the earlier recording's rows of the variants ``new`` timed are replaced by ``new``'s rows, its
    facts and kernels updated with ``new``'s; its meta (date, command, revision: the provenance of
    every other row) stays, and ``meta["sections"][S]`` records where and when each merged section
    was measured (``section_meta``). The same GPU only."""
    if new.meta["slug"] != earlier.meta["slug"]:
        raise RecordingError(f"{earlier.source}: recorded on {earlier.meta['slug']}, cannot merge a section "
                             f"measured on {new.meta['slug']}")
    timed = set(new.table["variant"])
    kept = earlier.table[~earlier.table["variant"].isin(timed)]
    table = make_table(pd.concat([kept, new.table], ignore_index=True).to_dict("records"))
    own = {key: new.meta[key] for key in SECTION_META_KEYS if key in new.meta}
    meta = {**earlier.meta, "sections": {**earlier.meta.get("sections", {}),
                                         **{name: {**own, "variants": sorted(timed)} for name in sections}}}
    evidence = replace(earlier.evidence, facts={**earlier.evidence.facts, **new.evidence.facts},
                       kernels={**earlier.evidence.kernels, **new.evidence.kernels})
    return replace(earlier, table=table, meta=meta, evidence=evidence)


def section_meta(result: LessonResult, section: str) -> dict:
    """The meta of a section merged into a recording later (its date, command, versions, clocks), or
    the recording's own meta when the section was measured with the rest."""
    return {**result.meta, **result.meta.get("sections", {}).get(section, {})}


def cupy_or_none():
    """CuPy, for the library a user would pick instead; None without it (the cu12/cu13 extras bring
    it). Imported on first use: a run without CuPy simply has no reference rows."""
    try:
        import cupy
    except ImportError:
        return None
    return cupy


def check_row(name: str, passed: bool, detail: str) -> dict:
    """One row of a lesson's ``check()`` table."""
    return {"check": name, "passed": bool(passed), "detail": detail}
