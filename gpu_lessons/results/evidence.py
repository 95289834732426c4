"""What a lesson's run learned besides its timings, in one layout for every lesson.

``data/<gpu>/<lesson>.evidence.json`` holds four blocks:

    facts     what the run itself learned (errors against a reference, occupancy the driver granted,
              a floating-point experiment, SM limits): a JSON object whose keys the lesson chooses
    kernels   per compiled kernel: registers, shared and local memory (bytes), and its SASS
              ({"counts": {opcode: n}, "summary": {...}, "lines": [...]}); every part optional,
              but not all
    ncu       per profiled case: the kernel, its launch shape and Nsight Compute's metrics
    sources   the runs other than the recording's own that some entry came from (an ncu run, an
              earlier recording): date, git revision, command, tool version

Every entry of ``kernels`` and ``ncu`` names its source ("run" is the recording's own run, whose
provenance is the ``.meta.json``). Reading checks the whole layout: an error names the file and the
field, e.g. ``data/nvidia-h200/gemm.evidence.json: kernels.big_tile.registers must be ...``.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field

import pandas as pd

from .table import RecordingError

FORMAT = 1
RUN = "run"  # the source id of the recording's own run
KERNEL_RESOURCES = ("registers", "shared_bytes", "local_bytes")
KERNEL_KEYS = (*KERNEL_RESOURCES, "sass", "source")
SASS_KEYS = ("counts", "summary", "lines")
NCU_KEYS = ("kernel", "metrics", "source", "grid", "block", "units")
TOP_KEYS = ("format", "lesson", "facts", "kernels", "ncu", "sources")


@dataclass(frozen=True, eq=False)
class Evidence:
    """facts, kernels, ncu and sources of one lesson's recording (or of a run just made)."""

    facts: dict = field(default_factory=dict)
    kernels: dict = field(default_factory=dict)
    ncu: dict = field(default_factory=dict)
    sources: dict = field(default_factory=dict)
    origin: str = "this run"  # where it was read from: named in every error

    def __bool__(self) -> bool:
        return bool(self.facts or self.kernels or self.ncu)

    def fact(self, key: str):
        """One fact of the run; a missing one is a RecordingError naming the file and the key."""
        if key not in self.facts:
            known = ", ".join(self.facts) or "none"
            raise RecordingError(f"{self.origin}: facts.{key} is missing (facts: {known})")
        return self.facts[key]

    def kernel(self, name: str) -> dict:
        if name not in self.kernels:
            known = ", ".join(self.kernels) or "none"
            raise RecordingError(f"{self.origin}: kernels.{name} is missing (kernels: {known})")
        return self.kernels[name]

    def ncu_case(self, case: str) -> dict:
        if case not in self.ncu:
            known = ", ".join(self.ncu) or "none"
            raise RecordingError(f"{self.origin}: ncu.{case} is missing (cases: {known})")
        return self.ncu[case]

    def ncu_value(self, case: str, metric: str) -> float | int:
        metrics = self.ncu_case(case)["metrics"]
        if metric not in metrics:
            raise RecordingError(f"{self.origin}: ncu.{case}.metrics has no {metric}")
        return metrics[metric]

    def ncu_table(self) -> pd.DataFrame:
        """The counters in long format: case, kernel, metric, value, source."""
        rows = [{"case": case, "kernel": entry["kernel"], "metric": metric, "value": value,
                 "source": entry["source"]}
                for case, entry in self.ncu.items() for metric, value in entry["metrics"].items()]
        return pd.DataFrame(rows, columns=["case", "kernel", "metric", "value", "source"])

    def source(self, name: str, meta: dict | None = None) -> dict:
        """The provenance of a source id: the recording's meta for "run", else its sources entry."""
        if name == RUN:
            return meta or {}
        if name not in self.sources:
            raise RecordingError(f"{self.origin}: sources.{name} is missing")
        return self.sources[name]

    def as_json(self, lesson: str) -> dict:
        return {"format": FORMAT, "lesson": lesson, "facts": self.facts, "kernels": self.kernels,
                "ncu": self.ncu, "sources": self.sources}


def evidence_from_json(data, origin: str, lesson: str) -> Evidence:
    """Check a parsed evidence file against the layout above; the error names file and field."""
    where = _Where(origin)
    where.require(isinstance(data, dict), "", "must hold a JSON object")
    unknown = [key for key in data if key not in TOP_KEYS]
    where.require(not unknown, "", f"unknown keys {unknown} (expected: {', '.join(TOP_KEYS)})")
    where.require(data.get("format") == FORMAT, "format", f"must be {FORMAT}, got {data.get('format')!r}")
    where.require(data.get("lesson") == lesson, "lesson",
                  f"is {data.get('lesson')!r}, but the file is for lesson {lesson!r}")
    blocks = {name: data.get(name, {}) for name in ("facts", "kernels", "ncu", "sources")}
    for name, block in blocks.items():
        where.require(isinstance(block, dict), name, "must be a JSON object")
    sources = blocks["sources"]
    for name, entry in sources.items():
        where.require(isinstance(entry, dict), f"sources.{name}", "must be a JSON object")
        where.require(name != RUN, f"sources.{name}", f"'{RUN}' is the recording's own run (its meta)")
    for name, entry in blocks["kernels"].items():
        _check_kernel(where, f"kernels.{name}", entry, sources)
    for case, entry in blocks["ncu"].items():
        _check_ncu_case(where, f"ncu.{case}", entry, sources)
    return Evidence(facts=blocks["facts"], kernels=blocks["kernels"], ncu=blocks["ncu"], sources=sources,
                    origin=origin)


def check_evidence(evidence: Evidence, lesson: str) -> None:
    """The same checks on an Evidence built in memory (before it is written)."""
    evidence_from_json(json.loads(json.dumps(evidence.as_json(lesson))), evidence.origin, lesson)


class _Where:
    def __init__(self, origin: str):
        self.origin = origin

    def require(self, ok: bool, place: str, problem: str) -> None:
        if not ok:
            raise RecordingError(f"{self.origin}: {place + ' ' if place else ''}{problem}")


def _is_count(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _is_number(value) -> bool:
    return (isinstance(value, int | float) and not isinstance(value, bool)
            and math.isfinite(value))


def _check_source(where: _Where, place: str, entry: dict, sources: dict) -> None:
    source = entry.get("source", RUN)
    where.require(isinstance(source, str), f"{place}.source", "must be a source id (text)")
    where.require(source == RUN or source in sources, f"{place}.source",
                  f"names {source!r}, which is not in sources ({', '.join(sources) or 'none'})")


def _check_kernel(where: _Where, place: str, entry, sources: dict) -> None:
    where.require(isinstance(entry, dict), place, "must be a JSON object")
    unknown = [key for key in entry if key not in KERNEL_KEYS]
    where.require(not unknown, place, f"has unknown keys {unknown} (expected: {', '.join(KERNEL_KEYS)})")
    where.require(any(key in entry for key in (*KERNEL_RESOURCES, "sass")), place,
                  f"holds neither resources ({', '.join(KERNEL_RESOURCES)}) nor sass")
    for key in KERNEL_RESOURCES:
        if key in entry:
            where.require(_is_count(entry[key]), f"{place}.{key}",
                          f"must be a whole number >= 0, got {entry[key]!r}")
    _check_source(where, place, entry, sources)
    sass = entry.get("sass", {})
    where.require(isinstance(sass, dict), f"{place}.sass", "must be a JSON object")
    unknown = [key for key in sass if key not in SASS_KEYS]
    where.require(not unknown, f"{place}.sass",
                  f"has unknown keys {unknown} (expected: {', '.join(SASS_KEYS)})")
    counts = sass.get("counts", {})
    where.require(isinstance(counts, dict) and all(_is_count(v) for v in counts.values()),
                  f"{place}.sass.counts", "must map opcodes to whole numbers >= 0")
    where.require(isinstance(sass.get("summary", {}), dict), f"{place}.sass.summary", "must be a JSON object")
    lines = sass.get("lines", [])
    where.require(isinstance(lines, list) and all(isinstance(line, str) for line in lines),
                  f"{place}.sass.lines", "must be a list of text lines")


def _check_ncu_case(where: _Where, place: str, entry, sources: dict) -> None:
    where.require(isinstance(entry, dict), place, "must be a JSON object")
    unknown = [key for key in entry if key not in NCU_KEYS]
    where.require(not unknown, place, f"has unknown keys {unknown} (expected: {', '.join(NCU_KEYS)})")
    where.require(isinstance(entry.get("kernel"), str) and entry["kernel"], f"{place}.kernel",
                  "must name the profiled kernel")
    where.require("source" in entry, f"{place}.source", "is missing (ncu counters come from an ncu run)")
    _check_source(where, place, entry, sources)
    metrics = entry.get("metrics")
    where.require(isinstance(metrics, dict) and metrics, f"{place}.metrics",
                  "must map metric names to numbers")
    for metric, value in metrics.items():
        where.require(_is_number(value), f"{place}.metrics.{metric}",
                      f"must be a finite number, got {value!r}")
    for key in ("grid", "block"):
        if key in entry:
            where.require(isinstance(entry[key], list) and all(_is_count(v) for v in entry[key]),
                          f"{place}.{key}", "must be a list of whole numbers, e.g. [256, 1, 1]")
    units = entry.get("units", {})
    where.require(isinstance(units, dict) and all(isinstance(u, str) for u in units.values()),
                  f"{place}.units", "must map metric names to unit names")
