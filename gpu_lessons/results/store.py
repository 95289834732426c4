"""Recordings under ``data/``: one lesson's whole result on one GPU, written and read as one object.

``data/<gpu-slug>/`` holds, per lesson, the files ``gpu-lessons record <lesson>`` writes:

    <lesson>.csv            the tidy table (``results.table``)
    <lesson>.meta.json      provenance: the GPU, clocks, driver, numba-cuda, date, command, revision
    <lesson>.evidence.json  facts, kernel resources and SASS, ncu counters (``results.evidence``)

``read_result`` checks all three and returns one ``LessonResult``; ``write_result`` checks before it
writes. A bad file raises ``RecordingError`` with one line naming the file and the problem.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field, replace
from datetime import datetime
from io import StringIO
from pathlib import Path

import numpy as np
import pandas as pd

from .. import course
from .evidence import Evidence, check_evidence, evidence_from_json
from .table import MissingRecordingError, RecordingError, check_lesson_column, checked_table

REQUIRED_META_KEYS = (
    "gpu", "slug", "compute_capability", "sms", "sm_clock_mhz", "memory_clock_mhz", "driver",
    "cuda_runtime", "numba", "numba_cuda", "python", "date", "command", "git_revision", "lesson",
)
NUMERIC_META_KEYS = ("sms", "sm_clock_mhz", "memory_clock_mhz")

DATA_VARIABLE = "GPU_LESSONS_DATA"
REPOSITORY_ROOT = course.CHECKOUT  # the source checkout, when gpu_lessons runs from one
DEFAULT_DATA_ROOT = course.data_folder()  # the checkout's data/, else the installed package's copy
DEFAULT_GPU = "nvidia-h200"
META_SUFFIX = ".meta.json"
EVIDENCE_SUFFIX = ".evidence.json"
NAME_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]*")  # safe as a file or folder name


@dataclass(frozen=True)
class SectionFailure:
    """A section of a live run that raised: the rest of the run went on without it."""

    section: str
    error: str


@dataclass(frozen=True, eq=False)
class LessonResult:
    """Everything one run of a lesson's experiment produced, live or read back from ``data/``."""

    lesson: str
    table: pd.DataFrame
    meta: dict
    evidence: Evidence = field(default_factory=Evidence)
    live: bool = False
    source: str = "measured just now"  # or the recording's CSV, as shown to learners
    failures: tuple[SectionFailure, ...] = ()

    @property
    def gpu(self) -> str:
        return self.meta["slug"]

    @property
    def facts(self) -> dict:
        return self.evidence.facts

    @property
    def provenance(self) -> str:
        return provenance(self.meta)

    def rows(self, variant: str) -> pd.DataFrame:
        """The rows of one variant (a RecordingError naming the recording when there are none)."""
        rows = self.table[self.table["variant"] == variant]
        if rows.empty:
            raise RecordingError(f"{self.source}: no rows of variant {variant!r}")
        return rows

    def with_evidence(self, **blocks) -> LessonResult:
        return replace(self, evidence=replace(self.evidence, **blocks))


# ---------------------------------------------------------------------------------------------
# Where recordings live


def data_root(root: str | os.PathLike | None = None) -> Path:
    """The data folder: `root` if given, else $GPU_LESSONS_DATA, else the course's data/ (the
    checkout's when gpu_lessons runs from one, else the copy installed with the package)."""
    if root is not None:
        return Path(root)
    from_environment = os.environ.get(DATA_VARIABLE, "").strip()
    return Path(from_environment).expanduser() if from_environment else DEFAULT_DATA_ROOT


def shown_path(path: str | os.PathLike) -> str:
    """A path for messages: relative to the checkout when inside it (data/...), else as is."""
    if not course.in_checkout():
        return str(path)
    try:
        return Path(path).resolve().relative_to(REPOSITORY_ROOT).as_posix()
    except ValueError:
        return str(path)


def recording_paths(root: str | os.PathLike, gpu: str, lesson: str) -> tuple[Path, Path, Path]:
    """(table, meta, evidence) paths of one lesson's recording on one GPU."""
    folder = Path(root) / gpu
    return folder / f"{lesson}.csv", folder / f"{lesson}{META_SUFFIX}", folder / f"{lesson}{EVIDENCE_SUFFIX}"


def _recorded_gpus(root: Path) -> list[str]:
    return sorted(p.name for p in root.iterdir() if p.is_dir() and not p.name.startswith("."))


def recorded_gpus(root: str | os.PathLike | None = None) -> list[str]:
    """The GPU folders under the data folder (empty when there is none)."""
    root = data_root(root)
    return _recorded_gpus(root) if root.is_dir() else []


def _recorded_lessons(folder: Path) -> list[str]:
    """Lessons with a recording (or half of one) in a GPU folder: a meta file or a table."""
    stems = {p.name.removesuffix(META_SUFFIX) for p in folder.glob(f"*{META_SUFFIX}")}
    stems |= {p.stem for p in folder.glob("*.csv")}
    return sorted(stems)


def _choose_gpu(root: Path, lesson: str) -> str:
    """The reference GPU for a lesson: nvidia-h200 if it has it, else the only GPU that has it."""
    having = [gpu for gpu in _recorded_gpus(root) if lesson in _recorded_lessons(root / gpu)]
    if DEFAULT_GPU in having:
        return DEFAULT_GPU
    if len(having) == 1:
        return having[0]
    if not having:
        recorded = ", ".join(_recorded_gpus(root)) or "none"
        raise MissingRecordingError(
            f"{shown_path(root)}: no GPU has a recording of lesson '{lesson}' (GPUs: {recorded})"
        )
    raise RecordingError(
        f"{shown_path(root)}: lesson '{lesson}' is recorded on several GPUs and none is "
        f"{DEFAULT_GPU}; choose one with gpu=: {', '.join(having)}"
    )


# ---------------------------------------------------------------------------------------------
# Reading


def read_result(lesson: str, gpu: str | None = None, root: str | os.PathLike | None = None) -> LessonResult:
    """Load and check one lesson's recording (gpu: a folder name; None = the reference GPU)."""
    root = data_root(root)
    if not root.is_dir():
        raise MissingRecordingError(
            f"{shown_path(root)}: the data folder does not exist (set {DATA_VARIABLE}, or pass --data)"
        )
    gpu = gpu or _choose_gpu(root, lesson)
    folder = root / gpu
    if not folder.is_dir():
        recorded = ", ".join(_recorded_gpus(root)) or "none"
        raise MissingRecordingError(
            f"{shown_path(folder)}: no recordings for GPU '{gpu}' (recorded GPUs: {recorded})"
        )
    csv_path, meta_path, evidence_path = recording_paths(root, gpu, lesson)
    if not csv_path.exists() and not meta_path.exists():
        recorded = ", ".join(_recorded_lessons(folder)) or "none"
        raise MissingRecordingError(
            f"{shown_path(csv_path)}: no recording of lesson '{lesson}' on this GPU "
            f"(recorded lessons: {recorded})"
        )
    for path in (csv_path, meta_path):
        if not path.exists():
            raise RecordingError(f"{shown_path(path)}: file is missing (half a recording)")
    meta = _read_meta(meta_path, gpu, lesson)
    table = _read_table(csv_path, lesson)
    evidence = _read_evidence(evidence_path, lesson) if evidence_path.exists() else Evidence(
        origin=shown_path(evidence_path))
    return LessonResult(lesson=lesson, table=table, meta=meta, evidence=evidence, live=False,
                        source=shown_path(csv_path))


def _read_text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise RecordingError(f"{shown_path(path)}: not UTF-8 text") from None
    except OSError as error:
        raise RecordingError(f"{shown_path(path)}: cannot be read ({error.strerror})") from None


def _read_json(path: Path):
    try:
        return json.loads(_read_text(path))
    except json.JSONDecodeError as error:
        raise RecordingError(
            f"{shown_path(path)}: not valid JSON ({error.msg} at line {error.lineno} column {error.colno})"
        ) from None


def _read_table(path: Path, lesson: str) -> pd.DataFrame:
    source = shown_path(path)
    text = _read_text(path)
    if not text.strip():
        raise RecordingError(f"{source}: file is empty")
    try:
        # As text: the checks then see exactly what was written, and report it.
        raw = pd.read_csv(StringIO(text), dtype=str, keep_default_na=False, skipinitialspace=True)
    except (pd.errors.ParserError, pd.errors.EmptyDataError, ValueError) as error:
        first_line = str(error).strip().splitlines()[0] if str(error).strip() else "parse error"
        raise RecordingError(f"{source}: not a readable CSV ({first_line})") from None
    raw.columns = [str(name).strip() for name in raw.columns]
    table = checked_table(raw, source, lambda i: f"line {i + 2}")  # line 1 is the header
    check_lesson_column(table, lesson, source, lambda i: f"line {i + 2}")
    return table


def _read_meta(path: Path, gpu: str, lesson: str) -> dict:
    source = shown_path(path)
    meta = _read_json(path)
    check_meta(meta, source)
    if meta["slug"] != gpu:
        raise RecordingError(f"{source}: slug is '{meta['slug']}', but the folder is '{gpu}'")
    if meta["lesson"] != lesson:
        raise RecordingError(f"{source}: lesson is '{meta['lesson']}', but the file is for '{lesson}'")
    return meta


def _read_evidence(path: Path, lesson: str) -> Evidence:
    return evidence_from_json(_read_json(path), shown_path(path), lesson)


def check_meta(meta, source: str) -> None:
    if not isinstance(meta, dict):
        raise RecordingError(f"{source}: must hold a JSON object, got {type(meta).__name__}")
    missing = [key for key in REQUIRED_META_KEYS if key not in meta]
    if missing:
        noun = "key" if len(missing) == 1 else "keys"
        raise RecordingError(f"{source}: meta {noun} missing: {', '.join(missing)}")
    for key in NUMERIC_META_KEYS:
        value = meta[key]
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise RecordingError(f"{source}: meta '{key}' must be a number, got {value!r}")
    for key in ("slug", "lesson"):
        if not isinstance(meta[key], str) or not NAME_PATTERN.fullmatch(meta[key]):
            raise RecordingError(
                f"{source}: meta '{key}' must be a simple name (letters, digits, - and _), got {meta[key]!r}"
            )
    try:
        datetime.fromisoformat(str(meta["date"]).replace("Z", "+00:00"))
    except ValueError:
        raise RecordingError(f"{source}: meta 'date' is not an ISO date: {meta['date']!r}") from None


# ---------------------------------------------------------------------------------------------
# Writing


def _json_value(value):
    """JSON for what meta dicts hold besides plain values: NumPy scalars and arrays, dates, paths."""
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, Path):
        return str(value)
    raise TypeError(f"{type(value).__name__} is not JSON serializable")


def to_json(value) -> str:
    """JSON text as recordings store it (NumPy values converted; a failure is a RecordingError)."""
    try:
        return json.dumps(value, indent=1, ensure_ascii=False, default=_json_value, allow_nan=False) + "\n"
    except (TypeError, ValueError) as error:
        raise RecordingError(f"cannot be written as JSON ({error})") from None


def write_result(result: LessonResult, root: str | os.PathLike | None = None) -> list[Path]:
    """Check the table, meta and evidence, then write the recording; returns the paths written.

    The evidence file is written only when the result has evidence; an older one is removed, so a
    recording never mixes files of two runs without saying so (sources do that).
    """
    lesson = result.lesson
    if not NAME_PATTERN.fullmatch(str(lesson)):
        raise RecordingError(f"lesson name {lesson!r} is not a simple name (letters, digits, - and _)")
    meta = {**result.meta}
    meta.setdefault("lesson", lesson)
    meta.pop("live", None)  # a recording is read back as recorded, not live
    slug = meta.get("slug") or "<no slug>"
    csv_path, meta_path, evidence_path = recording_paths(data_root(root), str(slug), lesson)
    check_meta(meta, f"{shown_path(meta_path)}: not written")
    if meta["lesson"] != lesson:
        raise RecordingError(f"{shown_path(meta_path)}: not written: meta lesson is '{meta['lesson']}', "
                             f"not '{lesson}'")
    source = f"{shown_path(csv_path)}: not written"
    if not isinstance(result.table, pd.DataFrame):
        raise RecordingError(f"{source}: expected a pandas DataFrame, got {type(result.table).__name__}")
    table = checked_table(result.table.reset_index(drop=True), source, lambda i: f"row {i}")
    check_lesson_column(table, lesson, source, lambda i: f"row {i}")
    evidence = replace(result.evidence, origin=f"{shown_path(evidence_path)}: not written")
    check_evidence(evidence, lesson)
    texts = {meta_path: _dumped(meta, meta_path)}
    if evidence:
        texts[evidence_path] = _dumped(evidence.as_json(lesson), evidence_path)

    csv_path.parent.mkdir(parents=True, exist_ok=True)
    table.to_csv(csv_path, index=False, lineterminator="\n")
    for path, text in texts.items():
        path.write_text(text, encoding="utf-8")
    if not evidence:
        evidence_path.unlink(missing_ok=True)
    return [csv_path, *texts]


def write_evidence(result: LessonResult, root: str | os.PathLike | None = None) -> Path:
    """Write only the evidence file of a recording whose table and meta are already on disk (an ncu
    run added to a recording: ``gpu-lessons record LESSON --ncu-only``); returns the path written."""
    lesson = result.lesson
    csv_path, meta_path, evidence_path = recording_paths(data_root(root), result.gpu, lesson)
    evidence = replace(result.evidence, origin=f"{shown_path(evidence_path)}: not written")
    check_evidence(evidence, lesson)
    text = _dumped(evidence.as_json(lesson), evidence_path)
    evidence_path.parent.mkdir(parents=True, exist_ok=True)
    evidence_path.write_text(text, encoding="utf-8")
    return evidence_path


def _dumped(value, path: Path) -> str:
    try:
        return to_json(value)
    except RecordingError as error:
        raise RecordingError(f"{shown_path(path)}: not written: {error}") from None


@dataclass(frozen=True, eq=False)
class ProbeData:
    """A retired probe's recording (data/<gpu>/probes/<name>.csv, or .json) with its provenance."""

    data: pd.DataFrame | dict  # a table (.csv) or what the probe wrote as JSON
    meta: dict
    source: str


def read_probe(name: str, gpu: str | None = None, root: str | os.PathLike | None = None) -> ProbeData:
    """A retired probe's recording (``gpu_lessons.makers`` says which probe made it and what it
    answered); a missing or unreadable file is one RecordingError naming it."""
    folder = data_root(root) / (gpu or DEFAULT_GPU) / "probes"
    meta_path = folder / f"{name}{META_SUFFIX}"
    found = [path for path in (folder / f"{name}.csv", folder / f"{name}.json") if path.exists()]
    if not found or not meta_path.exists():
        missing = meta_path if found else folder / f"{name}.csv"
        raise MissingRecordingError(f"{shown_path(missing)}: no such probe recording")
    path = found[0]
    if path.suffix == ".csv":
        try:
            data = pd.read_csv(StringIO(_read_text(path)))
        except (pd.errors.ParserError, pd.errors.EmptyDataError) as error:
            raise RecordingError(f"{shown_path(path)}: not a readable CSV ({error})") from None
    else:
        data = _read_json(path)
    meta = _read_json(meta_path)
    if not isinstance(meta, dict) or "command" not in meta:
        raise RecordingError(f"{shown_path(meta_path)}: must be a JSON object naming the probe's command")
    return ProbeData(data=data, meta=meta, source=shown_path(path))


def list_recordings(root: str | os.PathLike | None = None) -> pd.DataFrame:
    """One row per recording: gpu, lesson, date, rows, and `problem` (empty when it reads well)."""
    root = data_root(root)
    rows = []
    for gpu in _recorded_gpus(root) if root.is_dir() else []:
        for lesson in _recorded_lessons(root / gpu):
            try:
                result = read_result(lesson, gpu, root)
            except RecordingError as error:
                rows.append({"gpu": gpu, "lesson": lesson, "date": "", "rows": None, "problem": str(error)})
            else:
                rows.append({"gpu": gpu, "lesson": lesson, "date": str(result.meta["date"]),
                             "rows": len(result.table), "problem": ""})
    listing = pd.DataFrame(rows, columns=["gpu", "lesson", "date", "rows", "problem"])
    listing["rows"] = listing["rows"].astype("Int64")
    return listing


# ---------------------------------------------------------------------------------------------
# Provenance


def _device_phrase(meta: dict) -> str:
    """'NVIDIA H200 (CC 9.0, 132 SMs, SM clock <= 1980 MHz)'; facts the meta lacks are left out."""
    name = meta.get("gpu") or meta.get("name") or "unknown device"
    facts = []
    capability = str(meta.get("compute_capability") or "")
    if capability and capability != "0.0":  # 0.0: the simulator
        facts.append(f"CC {capability}")
    if meta.get("sms"):
        facts.append(f"{meta['sms']} SMs")
    if meta.get("sm_clock_mhz"):
        facts.append(f"SM clock <= {float(meta['sm_clock_mhz']):.0f} MHz")
    return f"{name} ({', '.join(facts)})" if facts else str(name)


def provenance(meta: dict) -> str:
    """One line for a figure caption: the device, the driver and numba-cuda, and when."""
    parts = [_device_phrase(meta)]
    if str(meta.get("driver") or "none") != "none":
        parts.append(f"driver CUDA {meta['driver']}")
    if meta.get("numba_cuda"):
        parts.append(f"numba-cuda {meta['numba_cuda']}")
    if meta.get("live"):
        return "measured live on " + ", ".join(parts)
    if meta.get("date"):
        parts.append(f"recorded {str(meta['date'])[:10]}")
    return ", ".join(parts)
